//! Tests of what each operation logs and of redo (`wal.rs`): the records per operation, and
//! redo from a WAL in the compact (mtr) format.

use super::*;

#[test]
fn wal_records_per_operation() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), innodb_no_merge()).unwrap();
    let infos = |from: Lsn| -> Vec<u8> {
        s.wal().flush_all().unwrap();
        let (recs, _) = s.wal().read_from(from).unwrap();
        recs.iter()
            .filter(|r| r.rmgr == rmgr::BTREE)
            .map(|r| r.info)
            .collect()
    };
    let mut i = 0u32;
    let mut from = s.wal().insert_lsn();
    t.insert(&k(i), &[1u8; 500]).unwrap();
    assert_eq!(infos(from), vec![info::INSERT_LEAF]);
    // Fill the root leaf until it splits: SPLIT then NEWROOT.
    loop {
        i += 1;
        from = s.wal().insert_lsn();
        t.insert(&k(i), &[1u8; 500]).unwrap();
        if t.stats().unwrap().height == 2 {
            break;
        }
    }
    assert_eq!(infos(from), vec![info::SPLIT, info::NEWROOT]);
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(from).unwrap();
    let split = &recs[0];
    assert_eq!(split.blocks.len(), 2, "no old right sibling, no child");
    assert_eq!(
        split.blocks.iter().map(|b| b.will_init).collect::<Vec<_>>(),
        vec![false, true],
        "the left page is rebuilt from its contents, the new right page logged whole"
    );
    let newroot = &recs[1];
    assert_eq!(newroot.blocks.len(), 3);
    assert_eq!(
        newroot
            .blocks
            .iter()
            .map(|b| b.will_init)
            .collect::<Vec<_>>(),
        vec![true, false, true],
        "root, left child (flag cleared), meta"
    );
    // The split record carries the right half whole and, for the left page, only how
    // many of its entries stay: ascending inserts put the new item on the right.
    let left = wal::decode_split_left(&split.blocks[0].data, split.lsn).unwrap();
    let (rh, right) = wal::decode_node(&split.blocks[1].data, split.lsn).unwrap();
    assert!(left.mid.is_empty() && left.tail == 0, "{left:?}");
    assert_eq!(left.head + right.len(), i as usize + 1);
    assert_eq!(left.header.right, split.blocks[1].page.block);
    assert_eq!(rh.left, split.blocks[0].page.block);
    // A split of the leftmost leaf (inserts below everything) now inserts a downlink.
    let mut j = 0u32;
    loop {
        from = s.wal().insert_lsn();
        let before = t.stats().unwrap().leaf_pages;
        let mut key = b"a".to_vec();
        key.extend_from_slice(&j.to_be_bytes());
        t.insert(&key, &[2u8; 500]).unwrap();
        j += 1;
        if t.stats().unwrap().leaf_pages > before {
            break;
        }
    }
    assert_eq!(infos(from), vec![info::SPLIT, info::INSERT_UPPER]);
    let (recs, _) = s.wal().read_from(from).unwrap();
    assert_eq!(
        recs[0].blocks.len(),
        3,
        "left, right and the old right sibling"
    );
    from = s.wal().insert_lsn();
    assert!(t.update_value(&k(0), &[3u8; 10]).unwrap());
    assert!(t.delete(&k(1)).unwrap());
    assert_eq!(infos(from), vec![info::UPDATE_VALUE, info::DELETE]);
    // A same-size update logs only the bytes that changed (MariaDB's MAYBE_NOP memcpy);
    // an unchanged value logs nothing.
    assert_eq!(t.get(&k(2)).unwrap(), Some(vec![1u8; 500]));
    let mut v = vec![1u8; 500];
    v[100] = 7;
    v[103] = 8;
    from = s.wal().insert_lsn();
    assert!(t.update_value(&k(2), &v).unwrap());
    assert!(t.update_value(&k(2), &v).unwrap());
    assert_eq!(infos(from), vec![info::PATCH_VALUE]);
    let (recs, _) = s.wal().read_from(from).unwrap();
    let patch = recs.iter().find(|r| r.rmgr == rmgr::BTREE).unwrap();
    assert_eq!(
        patch.blocks[0].data.len(),
        4 + 4 + 4,
        "slot, one span (2 equal bytes between the changes cost less than a second span's \
         header): offset, length and bytes 100..104"
    );
    assert_eq!(t.get(&k(2)).unwrap(), Some(v.clone()));
    // Changes far apart (a record's system columns and its last column, say) are two spans,
    // not the whole value between them (MariaDB's one WRITE per changed field).
    v[10] = 9;
    v[11] = 9;
    v[499] = 5;
    from = s.wal().insert_lsn();
    assert!(t.update_value(&k(2), &v).unwrap());
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(from).unwrap();
    let patch = recs.iter().find(|r| r.rmgr == rmgr::BTREE).unwrap();
    assert_eq!(patch.info, info::PATCH_VALUE);
    assert_eq!(
        patch.blocks[0].data.len(),
        4 + (4 + 2) + (4 + 1),
        "slot, n, then spans 10..12 and 499..500"
    );
    assert_eq!(t.get(&k(2)).unwrap(), Some(v));
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

/// The same B+tree redo works from a WAL in the compact (mtr) record format: splits,
/// updates, deletes and full-page images after a checkpoint all read back and replay.
#[test]
fn redo_rebuilds_the_tree_from_an_mtr_wal() {
    let mut cfg = StorageConfig::without_background(64);
    cfg.wal.record_format = crate::wal::WalFormat::Mtr;
    let s = Storage::open(cfg).unwrap();
    let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
    for i in 0..800u32 {
        t.insert(&k(i * 7 % 800), &[i as u8; 40]).unwrap();
    }
    s.checkpoint().unwrap();
    for i in (0..800u32).step_by(3) {
        assert!(t.update_value(&k(i), &[1u8; 20]).unwrap());
    }
    for i in (0..800u32).step_by(5) {
        t.delete(&k(i)).unwrap();
    }
    t.verify().unwrap();
    let c = s.snapshot().counters.total();
    assert!(c.wal_fpi > 0, "images after the checkpoint");
    s.wal().flush_all().unwrap();
    let (recs, end) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    assert_eq!(recs.len() as u64, c.wal_records);
    assert_eq!(end, s.wal().insert_lsn());
    assert_eq!(
        end.0 - FIRST_LSN,
        c.wal_bytes,
        "LSNs are byte positions, no padding"
    );
    assert_redo_rebuilds(&s, &t);
}
