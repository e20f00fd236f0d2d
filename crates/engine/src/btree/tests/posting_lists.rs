//! Tests of deduplication (posting lists; `dedup.rs`).

use super::*;
use crate::error::TxnError;

/// xorshift64: the tests' deterministic randomness.
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The leaf entries as stored: (key, value) per physical entry.
fn stored(s: &Storage, t: &BTree) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (b, _) in leaves(s, t) {
        let id = PageId::new(t.rel(), b);
        let g = s.pool().fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        out.extend(n.entries().unwrap().into_iter().map(|e| (e.key, e.value)));
    }
    out
}

/// The B+tree records of relation `rel` in the WAL with `info`, as block-0 data.
fn records_of(s: &Storage, rel: crate::device::FileId, code: u8) -> Vec<Vec<u8>> {
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    recs.iter()
        .filter(|r| r.rmgr == rmgr::BTREE && r.info == code && r.blocks[0].page.rel == rel)
        .map(|r| r.blocks[0].data.clone())
        .collect()
}

#[test]
fn dedup_many_duplicates_take_far_fewer_leaves_and_every_tid_is_found() {
    let s = storage(512);
    let d = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    let p = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    // 4 index keys, 6000 heap TIDs each, inserted in random order: posting list swaps
    // (TIDs inside a posting entry's range), dedup passes and splits of posting entries.
    let mut keys: Vec<Vec<u8>> = (0..24_000u32)
        .map(|i| heap_key((i % 4) as u64, i / 4, (i % 7) as u16 + 1))
        .collect();
    let mut x = 0x1234_5678_9abc_def1u64;
    for i in (1..keys.len()).rev() {
        keys.swap(i, (xorshift(&mut x) % (i as u64 + 1)) as usize);
    }
    for key in &keys {
        d.insert(key, b"").unwrap();
        p.insert(key, b"").unwrap();
    }
    let ds = d.verify().unwrap();
    let ps = p.verify().unwrap();
    assert_eq!(ds.entries, 24_000);
    assert_eq!(ps.entries, 24_000);
    assert!(ds.posting_entries > 0 && ds.posting_tids > 20_000, "{ds:?}");
    assert_eq!(ps.posting_entries, 0);
    assert!(
        ds.leaf_pages * 3 < ps.leaf_pages,
        "dedup {} leaves, plain {}",
        ds.leaf_pages,
        ps.leaf_pages
    );
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys_of(&d), sorted);
    let mut back = Vec::new();
    d.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Backward,
        &mut |k, v| {
            assert!(v.is_empty());
            back.push(k.to_vec());
            Ok(true)
        },
    )
    .unwrap();
    back.reverse();
    assert_eq!(back, sorted);
    // Bounds inside posting lists, both directions, inclusive and exclusive.
    for _ in 0..40 {
        let a = (xorshift(&mut x) % sorted.len() as u64) as usize;
        let b = (xorshift(&mut x) % sorted.len() as u64) as usize;
        let (a, b) = (a.min(b), a.max(b));
        let (lo, hi) = (sorted[a].as_slice(), sorted[b].as_slice());
        let fwd: Vec<Vec<u8>> = keys_in(
            &d,
            Bound::Excluded(lo),
            Bound::Included(hi),
            ScanDirection::Forward,
        );
        assert_eq!(fwd, sorted[a + 1..=b].to_vec());
        let mut bwd: Vec<Vec<u8>> = keys_in(
            &d,
            Bound::Included(lo),
            Bound::Excluded(hi),
            ScanDirection::Backward,
        );
        bwd.reverse();
        assert_eq!(bwd, sorted[a..b].to_vec());
    }
    for key in &keys {
        assert_eq!(d.get(key).unwrap(), Some(Vec::new()), "{key:?}");
        assert!(matches!(
            d.insert(key, b""),
            Err(Error::Txn(TxnError::DuplicateKey { .. }))
        ));
    }
    assert_eq!(d.get(&heap_key(1, 99_999, 1)).unwrap(), None);
    assert!(!records_of(&s, d.rel(), info::INSERT_POST).is_empty());
    assert!(!records_of(&s, d.rel(), info::DEDUP).is_empty());
    // Separators above posting entries: every leaf's keys lie inside its fences (verify)
    // and lookups of the first and last TIDs of each posting entry found them (above).
    assert_redo_rebuilds(&s, &d);
    // Non-empty values and short keys are refused by a deduplicating tree.
    assert!(matches!(
        d.insert(&heap_key(9, 1, 1), b"x"),
        Err(Error::InvalidValue(_))
    ));
    assert!(matches!(d.insert(b"abc", b""), Err(Error::InvalidValue(_))));
    // Off for new postings: the same inserts write exactly what the plain tree writes.
    let q = BTree::create(s.pool().clone(), BTreeConfig::postgres())
        .unwrap()
        .with_deduplication(false);
    for key in &keys[..3000] {
        q.insert(key, b"").unwrap();
    }
    assert_eq!(q.verify().unwrap().posting_entries, 0);
}

#[test]
fn dedup_insert_inside_a_posting_list_swaps_out_its_largest_tid() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    let e = |b: u32| (heap_key(5, b, 1), Vec::new());
    t.bulk_load(&[e(10), e(20), e(30)], 90, 70).unwrap();
    let st = stored(&s, &t);
    assert_eq!(st.len(), 1, "one posting entry: {st:?}");
    assert_eq!(st[0].0, heap_key(5, 10, 1));
    assert_eq!(st[0].1.len(), 12);
    t.insert(&heap_key(5, 15, 1), b"").unwrap();
    let st = stored(&s, &t);
    assert_eq!(st.len(), 2, "{st:?}");
    assert_eq!(st[0].0, heap_key(5, 10, 1));
    assert_eq!(st[0].1.len(), 12, "the posting entry keeps its size");
    assert_eq!(
        st[1],
        (heap_key(5, 30, 1), Vec::new()),
        "its last TID came out"
    );
    assert_eq!(
        keys_of(&t),
        vec![
            heap_key(5, 10, 1),
            heap_key(5, 15, 1),
            heap_key(5, 20, 1),
            heap_key(5, 30, 1)
        ]
    );
    assert!(matches!(
        t.insert(&heap_key(5, 20, 1), b""),
        Err(Error::Txn(TxnError::DuplicateKey { .. }))
    ));
    // Deleting TIDs of the posting list: the first (its key changes), then down to one.
    assert!(t.delete(&heap_key(5, 10, 1)).unwrap());
    assert_eq!(stored(&s, &t)[0].0, heap_key(5, 15, 1));
    assert!(t.delete(&heap_key(5, 20, 1)).unwrap());
    assert_eq!(
        stored(&s, &t)[0],
        (heap_key(5, 15, 1), Vec::new()),
        "plain again"
    );
    assert!(!t.delete(&heap_key(5, 20, 1)).unwrap());
    assert_eq!(keys_of(&t), vec![heap_key(5, 15, 1), heap_key(5, 30, 1)]);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn dedup_vacuum_removes_only_the_dead_tids_of_a_posting_list() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    let entries: Vec<Kv> = (0..20_000u32)
        .map(|i| (heap_key((i / 500) as u64, i, 1), Vec::new()))
        .collect();
    t.bulk_load(&entries, 90, 70).unwrap();
    let st = t.verify().unwrap();
    assert!(st.posting_entries > 0, "{st:?}");
    // Every third TID dead, and every TID of key 3 (whole posting entries go).
    let dead = |k: &[u8]| {
        let b = u32::from_be_bytes(k[8..12].try_into().unwrap());
        b % 3 == 0 || k[..8] == 3u64.to_be_bytes()
    };
    let mut asked = 0;
    let removed = t
        .bulk_delete(&mut |k, v| {
            assert!(v.is_empty(), "the callback sees one TID at a time");
            asked += 1;
            dead(k)
        })
        .unwrap();
    assert_eq!(asked, 20_000);
    let want: Vec<Vec<u8>> = entries
        .iter()
        .map(|e| e.0.clone())
        .filter(|k| !dead(k))
        .collect();
    assert_eq!(removed as usize, 20_000 - want.len());
    assert_eq!(keys_of(&t), want);
    let st = t.verify().unwrap();
    assert_eq!(st.entries as usize, want.len());
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn dedup_kill_bits_mark_a_posting_entry_only_when_all_its_tids_are_dead() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    let keys: Vec<Vec<u8>> = (1..=4u32).map(|b| heap_key(7, b, 1)).collect();
    let entries: Vec<Kv> = keys.iter().map(|k| (k.clone(), Vec::new())).collect();
    t.bulk_load(&entries, 90, 70).unwrap();
    assert_eq!(stored(&s, &t).len(), 1);
    let seen = live(&t);
    assert_eq!(seen.len(), 4);
    let leaf = seen[0].0;
    assert_eq!(
        t.kill_items(leaf, &keys[..3]).unwrap(),
        0,
        "one TID still live"
    );
    assert_eq!(t.kill_items(leaf, &keys).unwrap(), 1, "all four dead");
    assert_eq!(live(&t).len(), 0);
    assert_eq!(keys_of(&t).len(), 4, "plain scans still see them");
    // A live TID swapped into the marked posting entry clears its mark.
    let new = heap_key(7, 2, 5);
    t.insert(&new, b"").unwrap();
    let live: Vec<Vec<u8>> = live(&t).into_iter().map(|(_, k)| k).collect();
    assert!(live.contains(&new), "{live:?}");
    t.verify().unwrap();
}

#[test]
fn dedup_deletion_before_a_split_removes_dead_tids_from_posting_lists_and_keeps_live_ones() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    // Versions of 3 index keys; offset 1 = dead old version, offset 2 = live.
    let heap = FakeHeap {
        dead_offsets: vec![1],
        visits: Default::default(),
    };
    let mut model = std::collections::BTreeSet::new();
    let mut out = CleanupOutcome::default();
    let mut x = 77u64;
    for i in 0..30_000u32 {
        let off = 1 + (xorshift(&mut x) % 2) as u16;
        let key = heap_key((i % 3) as u64, i, off);
        let o = t
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: i % 2 == 0,
                    deduplicate: true,
                },
            )
            .unwrap();
        out.bottom_up_deleted += o.bottom_up_deleted;
        out.dedup_passes += o.dedup_passes;
        model.insert(key);
    }
    assert!(out.dedup_passes > 0 && out.bottom_up_deleted > 0, "{out:?}");
    let got: std::collections::BTreeSet<Vec<u8>> = keys_of(&t).into_iter().collect();
    // Nothing live was deleted; whatever is gone was dead (offset 1).
    for k in &model {
        let live = k[k.len() - 1] == 2;
        if live {
            assert!(got.contains(k), "live {k:?} deleted");
        }
    }
    assert!(got.is_subset(&model));
    assert!(got.len() < model.len());
    t.verify().unwrap();
    // Some DELETE_DEAD records rewrote posting entries (data past the slot list).
    let rewrote = records_of(&s, t.rel(), info::DELETE_DEAD)
        .iter()
        .filter(|d| d.len() > 2 + 2 * u16::from_le_bytes([d[0], d[1]]) as usize)
        .count();
    assert!(rewrote > 0);
    assert!(!records_of(&s, t.rel(), info::DEDUP).is_empty());
    assert_redo_rebuilds(&s, &t);
    // A unique index whose check met no duplicate does not deduplicate.
    let u = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    for i in 0..5000u32 {
        u.insert_cleaning(
            &heap_key((i % 3) as u64, i, 2),
            b"",
            &InsertCleanup {
                table: &heap,
                index_unchanged: false,
                deduplicate: false,
            },
        )
        .unwrap();
    }
    assert_eq!(u.verify().unwrap().posting_entries, 0);
}

#[test]
fn dedup_tree_agrees_with_a_model_under_random_operations_and_redo() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    let mut model = std::collections::BTreeSet::new();
    let mut x = 4242u64;
    for round in 0..30 {
        for _ in 0..1500 {
            let key = heap_key(xorshift(&mut x) % 5, (xorshift(&mut x) % 4000) as u32, 1);
            match xorshift(&mut x) % 10 {
                0..=6 => {
                    let r = t.insert(&key, b"");
                    if model.insert(key.clone()) {
                        r.unwrap();
                    } else {
                        assert!(matches!(r, Err(Error::Txn(TxnError::DuplicateKey { .. }))));
                    }
                }
                7 | 8 => assert_eq!(t.delete(&key).unwrap(), model.remove(&key)),
                _ => assert_eq!(t.get(&key).unwrap().is_some(), model.contains(&key)),
            }
        }
        if round % 5 == 4 {
            let m = (xorshift(&mut x) % 4 + 2) as u32;
            let dead = |k: &[u8]| u32::from_be_bytes(k[8..12].try_into().unwrap()) % m == 0;
            let removed = t.bulk_delete(&mut |k, _| dead(k)).unwrap();
            let before = model.len();
            model.retain(|k| !dead(k));
            assert_eq!(removed as usize, before - model.len());
        }
        assert_eq!(keys_of(&t), model.iter().cloned().collect::<Vec<_>>());
        assert_eq!(t.verify().unwrap().entries as usize, model.len());
    }
    assert!(t.stats().unwrap().posting_entries > 0);
    assert_redo_rebuilds(&s, &t);
}
