//! Tests that damaged pages and WAL records give errors, never panics or hangs (every file's
//! checks; `verify.rs` among them).

use super::*;

#[test]
fn corrupted_pages_give_corrupted_errors() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
    for i in 0..500u32 {
        t.insert(&k(i), &[5u8; 100]).unwrap();
    }
    let ls = leaves(&s, &t);
    let (leaf, keys) = ls[2].clone();
    let key = keys[0].clone();
    let leaf_id = PageId::new(t.rel(), leaf);
    let meta_id = PageId::new(t.rel(), 0);
    let root = Meta::read(s.pool().fetch_read(meta_id).unwrap().data(), meta_id)
        .unwrap()
        .root;
    let root_id = PageId::new(t.rel(), root);
    let sp = 8192 - SPECIAL_BYTES;

    let corrupt = |id: PageId, f: &dyn Fn(&mut [u8]), check: &dyn Fn(&BTree) -> bool| {
        let saved = s.pool().fetch_read(id).unwrap().data().to_vec();
        f(s.pool().fetch_write(id).unwrap().data_mut());
        let ok = check(&t);
        s.pool()
            .fetch_write(id)
            .unwrap()
            .data_mut()
            .copy_from_slice(&saved);
        ok
    };
    let get = |t: &BTree| is_corrupted(t.get(&key));
    let scan = |t: &BTree| {
        is_corrupted(collect(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
        )) && is_corrupted(collect(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Backward,
        )) && is_corrupted(t.verify())
    };
    let fwd = |t: &BTree| {
        is_corrupted(collect(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
        )) && is_corrupted(t.verify())
    };
    let insert = |t: &BTree| {
        let near = [key.clone(), b"+".to_vec()].concat();
        is_corrupted(t.insert(&near, b"v"))
            && is_corrupted(t.update_value(&key, b"v"))
            && is_corrupted(t.delete(&key))
    };
    // The tree caches the root (PostgreSQL's rd_amcache), so a damaged meta page shows on
    // the next open, or in a tree that has not read it yet.
    let meta_check =
        |t: &BTree| is_corrupted(BTree::open(s.pool().clone(), t.rel(), t.config().clone()));
    let fresh_get = |t: &BTree| match BTree::open(s.pool().clone(), t.rel(), t.config().clone()) {
        Ok(fresh) => is_corrupted(fresh.get(&key)),
        Err(e) => is_corrupted(Err::<(), _>(e)),
    };
    let cases: Vec<Case<'_>> = vec![
        ("page type", leaf_id, Box::new(|p| p[26] = 0), &get),
        ("special offset", leaf_id, Box::new(|p| p[24] = 1), &get),
        (
            "hole lower > upper",
            leaf_id,
            Box::new(|p| {
                p[20] = 0xff;
                p[21] = 0x1f;
            }),
            &get,
        ),
        (
            "slot offset",
            leaf_id,
            Box::new(|p| {
                p[32] = 0xf0;
                p[33] = 0xff;
            }),
            &scan,
        ),
        (
            "key length",
            leaf_id,
            Box::new(move |p| {
                let off = u16::from_le_bytes([p[32], p[33]]) as usize;
                p[off] = 0xff;
                p[off + 1] = 0xff;
            }),
            &scan,
        ),
        (
            // The leaf's first and last slots swapped: its keys no longer ascend. A forward
            // scan that resumes from the root after its last key (merges on) must not loop.
            "keys out of order",
            leaf_id,
            Box::new(move |p| {
                let last = u16::from_le_bytes([p[20], p[21]]) as usize - p[sp + 14] as usize;
                let (first, end) = ([p[32], p[33]], [p[last], p[last + 1]]);
                p[32..34].copy_from_slice(&end);
                p[last..last + 2].copy_from_slice(&first);
            }),
            &fwd,
        ),
        ("level", leaf_id, Box::new(move |p| p[sp] = 1), &get),
        ("geometry", leaf_id, Box::new(move |p| p[sp + 13] = 3), &get),
        (
            "right link to itself",
            leaf_id,
            Box::new(move |p| {
                p[sp + 8..sp + 12].copy_from_slice(&leaf.to_le_bytes());
            }),
            &|t: &BTree| {
                is_corrupted(collect(
                    t,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    ScanDirection::Forward,
                )) && is_corrupted(t.bulk_delete(&mut |_, _| false))
            },
        ),
        (
            "right link to the meta page",
            leaf_id,
            Box::new(move |p| {
                p[sp + 8..sp + 12].copy_from_slice(&0u32.to_le_bytes());
            }),
            &fwd,
        ),
        (
            "changes to a page of another type",
            leaf_id,
            Box::new(|p| p[26] = 1),
            &insert,
        ),
        (
            "meta magic",
            meta_id,
            Box::new(|p| p[32] ^= 0xff),
            &meta_check,
        ),
        (
            "meta root",
            meta_id,
            Box::new(|p| p[40..44].copy_from_slice(&0u32.to_le_bytes())),
            &fresh_get,
        ),
    ];
    // Downlinks of the root: to the meta page, past the relation's end, to the root itself.
    let downlink_cases: Vec<u32> = vec![0, 999_999, root];
    for (what, id, f, check) in cases {
        assert!(corrupt(id, f.as_ref(), check), "{what}");
        t.verify()
            .unwrap_or_else(|e| panic!("after restoring {what}: {e}"));
    }
    for target in downlink_cases {
        // Every downlink of the root names `target` (the page rebuilt with them).
        let set_all = move |p: &mut [u8]| {
            let (geo, h, entries) = {
                let n = Node::parse(p, root_id).unwrap();
                let entries: Vec<(Vec<u8>, Vec<u8>)> = n
                    .entries()
                    .unwrap()
                    .into_iter()
                    .map(|e| (e.key, target.to_le_bytes().to_vec()))
                    .collect();
                (n.geometry(), n.header(), entries)
            };
            node::build(p, root_id, geo, h, &entries).unwrap();
        };
        let check = |t: &BTree| {
            is_corrupted(t.get(&key))
                && is_corrupted(t.insert(b"new", b"v"))
                && is_corrupted(t.delete(&key))
                && is_corrupted(t.stats())
        };
        assert!(corrupt(root_id, &set_all, &check), "downlink to {target}");
    }
    t.verify().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Node functions never panic on damaged bytes: any outcome is a value or an error.
    /// Both geometries: the postgres preset's fixed length pair and the innodb preset's
    /// 1- or 2-byte lengths (values up to 200 bytes take the 2-byte form).
    #[test]
    fn node_functions_never_panic_on_damaged_pages(
        entries in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..40), proptest::collection::vec(any::<u8>(), 0..200)), 0..30),
        level in 0u16..3,
        damage in proptest::collection::vec((0usize..8192, any::<u8>()), 1..12),
        probe in proptest::collection::vec(any::<u8>(), 0..20),
        innodb in any::<bool>(),
    ) {
        let id = PageId::new(16384, 7);
        let geo = if innodb {
            BTreeConfig::innodb().geometry()
        } else {
            BTreeConfig::postgres().geometry()
        };
        let mut sorted: BTreeMap<Vec<u8>, Vec<u8>> = entries.into_iter().collect();
        if level > 0 {
            sorted.insert(Vec::new(), 5u32.to_le_bytes().to_vec());
        }
        let list: Vec<(Vec<u8>, Vec<u8>)> = sorted.into_iter().collect();
        let mut p = vec![0u8; 8192];
        let h = NodeHeader { level, flags: 0, left: NO_BLOCK, right: NO_BLOCK };
        node::build(&mut p, id, geo, h, &list).unwrap();
        for (off, v) in damage {
            p[off] = v;
        }
        if let Ok(n) = Node::parse(&p, id) {
            let _ = n.entries();
            let _ = n.search(&probe);
            let _ = n.child_index(&probe, true);
            let _ = n.child(0);
            let _ = n.entry_space(n.len().saturating_sub(1));
        }
        let _ = node::insert_at(&mut p.clone(), id, 0, &probe, b"v");
        let _ = node::remove_at(&mut p.clone(), id, 0);
        let _ = node::replace_at(&mut p.clone(), id, 0, &probe, &probe);
        let _ = Meta::read(&p, id);
    }

    /// Redo never panics on damaged record data.
    #[test]
    fn redo_never_panics_on_damaged_records(
        info_code in prop_oneof![Just(0x00u8), Just(0x10), Just(0x20), Just(0x30), Just(0x70), Just(0xA0), Just(0xC0), Just(0xF0), any::<u8>()],
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..5),
        main in proptest::collection::vec(any::<u8>(), 0..16),
        which in 0usize..5,
    ) {
        let mut p = vec![0u8; 8192];
        let id = PageId::new(16384, 3);
        let h = NodeHeader { level: 0, flags: 0, left: NO_BLOCK, right: NO_BLOCK };
        node::build(&mut p, id, BTreeConfig::innodb().geometry(), h, &[(b"a".as_slice(), b"1".as_slice())]).unwrap();
        let rec = crate::wal::WalRecord {
            lsn: Lsn(8), end_lsn: Lsn(64), prev_lsn: Lsn(0), xid: 0, rmgr: rmgr::BTREE, info: info_code,
            blocks: blocks.into_iter().map(|data| crate::wal::BlockRef { page: id, will_init: false, image: None, data }).collect(),
            main_data: main,
        };
        let _ = wal::redo_block(&rec, which, &mut p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever bytes of whatever page are damaged, every operation returns (a value or an
    /// error) instead of panicking or hanging.
    #[test]
    fn operations_never_panic_on_a_damaged_tree(
        damage in proptest::collection::vec((any::<usize>(), 0usize..8192, any::<u8>()), 1..6),
        probe in any::<u32>(),
    ) {
        let s = storage(32);
        let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
        for i in 0..300u32 {
            t.insert(&k(i * 2), &[3u8; 150]).unwrap();
        }
        let n = s.store().n_blocks(t.rel()).unwrap();
        for (page, off, v) in damage {
            let id = PageId::new(t.rel(), (page % n as usize) as u32);
            s.pool().fetch_write(id).unwrap().data_mut()[off] = v;
        }
        let key = k(probe % 700);
        let _ = t.get(&key);
        let _ = collect(&t, Bound::Included(&key), Bound::Unbounded, ScanDirection::Forward);
        let _ = collect(&t, Bound::Unbounded, Bound::Included(&key), ScanDirection::Backward);
        let _ = t.insert(&k(probe % 700 * 2 + 1), &[1u8; 1000]);
        let _ = t.update_value(&key, &[2u8; 1500]);
        let _ = t.delete(&key);
        let _ = t.bulk_delete(&mut |k, _| k.ends_with(b"0"));
        let _ = t.stats();
        let _ = t.verify();
    }
}
