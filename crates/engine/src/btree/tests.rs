use super::node::{Meta, Node, NodeHeader, NO_BLOCK, SPECIAL_BYTES};
use super::*;
use crate::page::{set_page_lsn, PageId};
use crate::stats::{enter, Cause};
use crate::storage::{Storage, StorageConfig};
use crate::wal::{rmgr, Lsn, FIRST_LSN};
use crate::{Error, Result};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

/// PostgreSQL's accounting without deduplication: for the tests whose keys do not end in
/// heap TIDs or whose values are not empty.
fn pg_plain() -> BTreeConfig {
    BTreeConfig {
        deduplicate: false,
        ..BTreeConfig::postgres()
    }
}

/// InnoDB's accounting without page merges: for the tests of what a tree that keeps its
/// empty leaves logs and scans.
fn innodb_no_merge() -> BTreeConfig {
    BTreeConfig {
        merge_threshold_pct: None,
        ..BTreeConfig::innodb()
    }
}
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

type Kv = (Vec<u8>, Vec<u8>);
/// A corruption case: name, page, how to damage it, what must then report corruption.
type Case<'c> = (
    &'c str,
    PageId,
    Box<dyn Fn(&mut [u8])>,
    &'c dyn Fn(&BTree) -> bool,
);

/// A storage of 8 KiB pages with `frames` frames and no background threads.
fn storage(frames: usize) -> Storage {
    Storage::open(StorageConfig::without_background(frames)).unwrap()
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

fn collect(t: &BTree, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: ScanDirection) -> Result<Vec<Kv>> {
    let mut out = Vec::new();
    t.scan(lo, hi, dir, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })?;
    Ok(out)
}

fn all(t: &BTree) -> Vec<Kv> {
    collect(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
    )
    .unwrap()
}

/// Every entry a live scan (`scan_live`, entries marked dead skipped) returns, forward,
/// with the leaf it was read from.
fn live(t: &BTree) -> Vec<(LeafRef, Vec<u8>)> {
    let mut out = Vec::new();
    t.scan_live(
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        &mut |leaf, k, _| {
            out.push((leaf, k.to_vec()));
            Ok(true)
        },
    )
    .unwrap();
    out
}

fn is_corrupted<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::Corrupted { .. }))
}

/// Leaf blocks left to right with their keys, read around the tree's code.
fn leaves(s: &Storage, t: &BTree) -> Vec<(u32, Vec<Vec<u8>>)> {
    let pool = s.pool();
    let meta_id = PageId::new(t.rel(), 0);
    let meta = Meta::read(pool.fetch_read(meta_id).unwrap().data(), meta_id).unwrap();
    let mut b = meta.root;
    loop {
        let id = PageId::new(t.rel(), b);
        let g = pool.fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        if n.level() == 0 {
            break;
        }
        b = n.child(0).unwrap();
    }
    let mut out = Vec::new();
    while b != NO_BLOCK {
        let id = PageId::new(t.rel(), b);
        let g = pool.fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        out.push((b, n.entries().unwrap().into_iter().map(|e| e.key).collect()));
        b = n.right();
    }
    out
}

/// Redo of the B+tree records of `recs` that name relation `rel`, in order, onto `pages`
/// (by block; a block not there yet starts zeroed) with `wal::redo_block`, restoring
/// full-page images where attached.
fn redo_onto(
    pages: &mut HashMap<u32, Vec<u8>>,
    recs: &[crate::wal::WalRecord],
    rel: crate::device::FileId,
    page_bytes: usize,
) {
    for r in recs.iter().filter(|r| r.rmgr == rmgr::BTREE) {
        for (b, blk) in r.blocks.iter().enumerate() {
            if blk.page.rel != rel {
                continue;
            }
            let p = pages
                .entry(blk.page.block)
                .or_insert_with(|| vec![0u8; page_bytes]);
            match &blk.image {
                Some(img) => {
                    img.restore(p).unwrap();
                    set_page_lsn(p, r.end_lsn);
                }
                None => wal::redo_block(r, b, p)
                    .unwrap_or_else(|e| panic!("redo of {:#04x} block {b}: {e}", r.info)),
            }
        }
    }
}

/// Checks that every page of relation `rel` comes out of `pages` byte for byte as the pool
/// has it (page LSN included; checksum and identity, stamped only on write copies,
/// excepted).
fn assert_pages_match(s: &Storage, rel: crate::device::FileId, pages: &HashMap<u32, Vec<u8>>) {
    let n = s.store().n_blocks(rel).unwrap();
    assert_eq!(
        pages.len() as u32,
        n,
        "every page of the relation is logged"
    );
    for block in 0..n {
        let id = PageId::new(rel, block);
        let live = s.pool().fetch_read(id).unwrap();
        let redone = &pages[&block];
        assert!(
            live.data()[..8] == redone[..8] && live.data()[20..] == redone[20..],
            "{id} differs after redo"
        );
    }
}

/// Replays every B+tree record of `t` from the start of the WAL onto zeroed pages and
/// checks that every page of the relation comes out as the pool has it.
fn assert_redo_rebuilds(s: &Storage, t: &BTree) {
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let mut pages: HashMap<u32, Vec<u8>> = HashMap::new();
    redo_onto(&mut pages, &recs, t.rel(), s.store().page_size().bytes());
    assert_pages_match(s, t.rel(), &pages);
}

#[test]
fn basic_operations_and_reopen() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    assert_eq!(t.get(b"a").unwrap(), None);
    assert!(all(&t).is_empty());
    t.insert(b"b", b"2").unwrap();
    t.insert(b"a", b"1").unwrap();
    t.insert(b"", b"empty key").unwrap();
    let e = t.insert(b"a", b"again").unwrap_err();
    assert!(matches!(e, Error::DuplicateKey { .. }), "{e}");
    assert_eq!(t.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(t.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    assert!(t.update_value(b"a", b"one").unwrap());
    assert!(!t.update_value(b"zz", b"x").unwrap());
    assert!(t.delete(b"b").unwrap());
    assert!(!t.delete(b"b").unwrap());
    assert_eq!(
        all(&t),
        vec![
            (b"".to_vec(), b"empty key".to_vec()),
            (b"a".to_vec(), b"one".to_vec())
        ]
    );
    let st = t.verify().unwrap();
    assert_eq!(
        (st.height, st.leaf_pages, st.entries, st.pages),
        (1, 1, 2, 2)
    );
    let again = BTree::open(s.pool().clone(), t.rel(), pg_plain()).unwrap();
    assert_eq!(all(&again), all(&t));
    let e = BTree::open(s.pool().clone(), t.rel(), BTreeConfig::innodb())
        .expect_err("geometry differs");
    assert!(matches!(e, Error::InvalidConfig(_)), "{e}");
    let mut bad = pg_plain();
    bad.entry_align = 3;
    assert!(matches!(
        BTree::create(s.pool().clone(), bad),
        Err(Error::InvalidConfig(_))
    ));
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn entries_above_a_quarter_page_are_too_large() {
    let s = storage(64);
    for cfg in [pg_plain(), BTreeConfig::innodb()] {
        let t = BTree::create(s.pool().clone(), cfg).unwrap();
        let max = t.max_entry_bytes();
        // 8 KiB page: usable 8144, a quarter 2036 bytes including header, padding, slot.
        assert!((1900..=2036).contains(&max), "{max}");
        let e = t.insert(b"key", &vec![0u8; max - 2]).unwrap_err();
        assert!(
            matches!(e, Error::TooLarge { bytes, max_bytes, .. } if bytes == max + 1 && max_bytes == max),
            "{e}"
        );
        // Entries of the maximum size still split correctly, level after level.
        for i in 0..40u32 {
            let key = k(i);
            t.insert(&key, &vec![i as u8; max - key.len()]).unwrap();
        }
        assert!(t.update_value(&k(3), b"").is_ok());
        assert!(matches!(
            t.update_value(&k(3), &vec![0u8; max]),
            Err(Error::TooLarge { .. })
        ));
        let st = t.verify().unwrap();
        assert_eq!(st.entries, 40);
        assert!(st.height >= 2);
    }
}

#[test]
fn ascending_inserts_fill_leaves_to_rightmost_fill_pct() {
    // PostgreSQL-shaped entries: an 8-byte key plus a 6-byte heap TID, no value.
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    for i in 0..20_000u32 {
        let mut key = (i as u64).to_be_bytes().to_vec();
        key.extend_from_slice(&[0, 0, 0, 1, 0, 1]);
        t.insert(&key, b"").unwrap();
    }
    let st = t.verify().unwrap();
    let fill = st.avg_leaf_fill_pct();
    assert!(st.leaf_pages > 50, "{st:?}");
    assert!(
        (88.0..=90.5).contains(&fill),
        "postgres fill {fill:.1} % {st:?}"
    );

    // InnoDB: 94 % (15/16).
    let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
    for i in 0..5_000u32 {
        t.insert(&k(i), &[7u8; 100]).unwrap();
    }
    let st = t.verify().unwrap();
    let fill = st.avg_leaf_fill_pct();
    assert!(
        (92.0..=94.5).contains(&fill),
        "innodb fill {fill:.1} % {st:?}"
    );
}

#[test]
fn random_inserts_fill_leaves_about_two_thirds() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let _ = t.insert(&x.to_be_bytes(), b"");
    }
    let st = t.verify().unwrap();
    let fill = st.avg_leaf_fill_pct();
    // Half splits of random inserts settle near ln 2 (Yao 1978).
    assert!((55.0..=78.0).contains(&fill), "fill {fill:.1} % {st:?}");
}

#[test]
fn suffix_truncation_keeps_separators_short() {
    let s = storage(256);
    let pad = [b'x'; 200];
    let mut internal_bytes = Vec::new();
    for truncate in [true, false] {
        let cfg = BTreeConfig {
            suffix_truncation: truncate,
            ..pg_plain()
        };
        let t = BTree::create(s.pool().clone(), cfg).unwrap();
        for i in 0..3000u32 {
            let mut key = k(i);
            key.extend_from_slice(&pad);
            t.insert(&key, b"").unwrap();
        }
        let st = t.verify().unwrap();
        internal_bytes.push(st.internal_used_bytes);
        // Every separator of the root distinguishes within the 9-byte prefix.
        let root = Meta::read(
            s.pool().fetch_read(PageId::new(t.rel(), 0)).unwrap().data(),
            PageId::new(t.rel(), 0),
        )
        .unwrap()
        .root;
        let id = PageId::new(t.rel(), root);
        let g = s.pool().fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        assert!(n.level() >= 1);
        let longest = (1..n.len()).map(|i| n.key(i).unwrap().len()).max().unwrap();
        if truncate {
            assert!(longest <= 9, "{longest}");
        } else {
            assert_eq!(longest, 209);
        }
    }
    assert!(
        internal_bytes[0] * 5 < internal_bytes[1],
        "{internal_bytes:?}"
    );
}

#[test]
fn separator_is_the_shortest_distinguishing_prefix() {
    use super::tree::truncated_separator as t;
    assert_eq!(t(b"abc", b"abd"), b"abd");
    assert_eq!(t(b"abc", b"abdzzz"), b"abd");
    assert_eq!(t(b"ab", b"abc"), b"abc");
    assert_eq!(t(b"", b"a"), b"a");
    assert_eq!(t(b"a\xff", b"b"), b"b");
}

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
        6 + 4,
        "slot, offset, length and bytes 100..104"
    );
    assert_eq!(t.get(&k(2)).unwrap(), Some(v));
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn update_that_does_not_fit_splits_the_leaf_in_one_step() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
    for i in 0..60u32 {
        t.insert(&k(i), &[1u8; 100]).unwrap();
    }
    let before = t.verify().unwrap();
    assert_eq!(before.height, 1, "{before:?}");
    let from = s.wal().insert_lsn();
    let big = vec![9u8; 1500];
    assert!(t.update_value(&k(30), &big).unwrap());
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(from).unwrap();
    let infos: Vec<u8> = recs.iter().map(|r| r.info).collect();
    assert_eq!(
        infos,
        vec![info::SPLIT, info::NEWROOT],
        "no delete + insert pair"
    );
    assert_eq!(t.get(&k(30)).unwrap(), Some(big));
    let after = t.verify().unwrap();
    assert_eq!(after.entries, 60);
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn scans_skip_empty_leaves_in_both_directions() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), innodb_no_merge()).unwrap();
    for i in 0..600u32 {
        t.insert(&k(i), &[0u8; 200]).unwrap();
    }
    // Empty every leaf but the first and last.
    let ls = leaves(&s, &t);
    assert!(ls.len() > 4);
    let mut kept = Vec::new();
    for (j, (_, keys)) in ls.iter().enumerate() {
        for key in keys {
            if j == 0 || j == ls.len() - 1 {
                kept.push(key.clone());
            } else {
                assert!(t.delete(key).unwrap());
            }
        }
    }
    let fwd = keys_of(&t);
    assert_eq!(fwd, kept);
    let mut bwd: Vec<Vec<u8>> = keys_in(
        &t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Backward,
    );
    bwd.reverse();
    assert_eq!(bwd, kept);
    // A range inside the emptied middle is empty both ways.
    let (lo, hi) = (k(200), k(300));
    for dir in [ScanDirection::Forward, ScanDirection::Backward] {
        assert!(collect(&t, Bound::Included(&lo), Bound::Included(&hi), dir)
            .unwrap()
            .is_empty());
    }
    assert_eq!(t.verify().unwrap().leaf_pages as usize, ls.len());
}

/// A leaf's block and keys, as [`leaves`] lists them.
type LeafKeys = (u32, Vec<Vec<u8>>);

/// A tree of 600 ascending keys with 200-byte values (leaves 94 % full) and its leaves.
fn merge_fixture(s: &Storage, cfg: BTreeConfig) -> (BTree, Vec<LeafKeys>) {
    let t = BTree::create(s.pool().clone(), cfg).unwrap();
    for i in 0..600u32 {
        t.insert(&k(i), &[0u8; 200]).unwrap();
    }
    let ls = leaves(s, &t);
    assert!(ls.len() > 8, "{} leaves", ls.len());
    (t, ls)
}

#[test]
fn a_leaf_below_the_merge_threshold_moves_into_its_left_sibling_and_its_page_is_reused() {
    let s = storage(64);
    let (t, ls) = merge_fixture(&s, BTreeConfig::innodb());
    let before = t.verify().unwrap();
    // Empty the third leaf: once below half a page it merges into the second, which
    // (ascending inserts filled it to 94 %) has no room until it, too, is thinned out.
    let (second, third) = (&ls[1], &ls[2]);
    for key in &second.1[..second.1.len() / 2] {
        assert!(t.delete(key).unwrap());
    }
    assert_eq!(t.ops().index_page_merge_successful, 0);
    let from = s.wal().insert_lsn();
    let mut deleted = 0;
    while t.ops().index_page_merge_successful == 0 {
        assert!(t.delete(&third.1[deleted]).unwrap());
        deleted += 1;
    }
    assert!(deleted < third.1.len(), "merged before the leaf was empty");
    let ops = t.ops();
    assert!(ops.index_page_merge_attempts >= 1, "{ops:?}");
    assert_eq!(ops.index_page_merge_successful, 1);
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(from).unwrap();
    let merge = recs
        .iter()
        .find(|r| r.rmgr == rmgr::BTREE && r.info == info::MERGE)
        .expect("a MERGE record");
    let blocks: Vec<(u32, bool)> = merge
        .blocks
        .iter()
        .map(|b| (b.page.block, b.will_init))
        .collect();
    assert_eq!(
        blocks[..2],
        [(second.0, false), (third.0, true)],
        "the left sibling survives, the merged leaf is rebuilt as freed"
    );
    assert_eq!(
        blocks.len(),
        4,
        "survivor, freed leaf, parent, right neighbour"
    );
    assert_eq!(blocks[3].0, ls[3].0);
    let after = t.verify().unwrap();
    assert_eq!(after.leaf_pages, before.leaf_pages - 1);
    let now: Vec<u32> = leaves(&s, &t).iter().map(|(b, _)| *b).collect();
    assert!(!now.contains(&third.0) && now.contains(&second.0));
    // Every key not deleted is still found, in both directions.
    let mut want: Vec<Vec<u8>> = (0..600u32).map(k).collect();
    want.retain(|key| {
        !second.1[..second.1.len() / 2].contains(key) && !third.1[..deleted].contains(key)
    });
    assert_eq!(keys_of(&t), want);
    let mut bwd = keys_in(
        &t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Backward,
    );
    bwd.reverse();
    assert_eq!(bwd, want);
    for key in &want {
        assert!(t.get(key).unwrap().is_some());
    }
    assert_redo_rebuilds(&s, &t);
    // The freed page is the next split's new page: the relation does not grow.
    let blocks_before = s.store().n_blocks(t.rel()).unwrap();
    let mut i = 0u32;
    while t.ops().index_page_splits == ops.index_page_splits {
        t.insert(&format!("z{i:08}").into_bytes(), &[1u8; 200])
            .unwrap();
        i += 1;
    }
    assert_eq!(s.store().n_blocks(t.rel()).unwrap(), blocks_before);
    assert!(leaves(&s, &t).iter().any(|(b, _)| *b == third.0));
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn a_leaf_whose_left_sibling_is_full_takes_in_its_right_sibling() {
    let s = storage(64);
    let (t, ls) = merge_fixture(&s, BTreeConfig::innodb());
    // Leaf 2 falls below the threshold while leaf 1 is full and leaf 3 is a third full:
    // leaf 3 moves into leaf 2.
    for key in &ls[3].1[..ls[3].1.len() * 2 / 3] {
        assert!(t.delete(key).unwrap());
    }
    assert_eq!(t.ops().index_page_merge_successful, 0, "leaf 4 is full");
    let mut d = 0;
    while t.ops().index_page_merge_successful == 0 {
        assert!(t.delete(&ls[2].1[d]).unwrap());
        d += 1;
    }
    let now: Vec<u32> = leaves(&s, &t).iter().map(|(b, _)| *b).collect();
    assert!(
        now.contains(&ls[2].0) && !now.contains(&ls[3].0),
        "leaf 3 freed"
    );
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn without_a_merge_threshold_no_leaf_is_merged() {
    let s = storage(64);
    let (t, ls) = merge_fixture(&s, innodb_no_merge());
    for key in ls[2..6].iter().flat_map(|(_, keys)| keys) {
        assert!(t.delete(key).unwrap());
    }
    assert_eq!(t.ops().index_page_merge_attempts, 0);
    assert_eq!(t.verify().unwrap().leaf_pages as usize, ls.len());
    let pg = BTree::create(s.pool().clone(), BTreeConfig::postgres()).unwrap();
    assert_eq!(pg.config().merge_threshold_pct, None, "nbtree never merges");
    let mut bad = BTreeConfig::innodb();
    bad.merge_threshold_pct = Some(51);
    assert!(matches!(
        BTree::create(s.pool().clone(), bad),
        Err(Error::InvalidConfig(_))
    ));
}

#[test]
fn concurrent_deletes_merge_leaves_while_scans_and_lookups_see_every_kept_key() {
    let s = Arc::new(storage(96));
    let t = Arc::new(BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap());
    let n = 3000u32;
    for i in 0..n {
        t.insert(&k(i), &[5u8; 120]).unwrap();
    }
    // Every 16th key stays; two deleters remove the rest, interleaved, from both ends.
    let kept: Vec<Vec<u8>> = (0..n).filter(|i| i % 16 == 0).map(k).collect();
    let done = Arc::new(AtomicBool::new(false));
    let deleters: Vec<_> = (0..2u32)
        .map(|d| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut order: Vec<u32> = (0..n).filter(|i| i % 16 != 0 && i % 2 == d).collect();
                if d == 1 {
                    order.reverse();
                }
                for i in order {
                    assert!(t.delete(&k(i)).unwrap());
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (t, kept, done) = (t.clone(), kept.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !done.load(Ordering::Acquire) || rounds == 0 {
                    let dir = if r == 0 {
                        ScanDirection::Forward
                    } else {
                        ScanDirection::Backward
                    };
                    let mut got = keys_in(&t, Bound::Unbounded, Bound::Unbounded, dir);
                    if r == 1 {
                        got.reverse();
                    }
                    assert!(got.windows(2).all(|w| w[0] < w[1]), "scan order");
                    let mut it = got.iter();
                    for key in &kept {
                        assert!(it.any(|g| g == key), "kept key missing from a scan");
                    }
                    assert!(t.get(&kept[rounds % kept.len()]).unwrap().is_some());
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    for d in deleters {
        d.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(keys_of(&t), kept);
    let ops = t.ops();
    assert!(ops.index_page_merge_successful > 10, "{ops:?}");
    let st = t.verify().unwrap();
    assert!(st.leaf_pages < 20, "{st:?}");
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn bulk_delete_removes_exactly_the_dead_entries_with_one_record_per_leaf() {
    let s = storage(128);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..4000u32 {
        let mut key = k(i);
        key.extend_from_slice(&[0, 0, 0, 1, 0, (i % 200) as u8]);
        t.insert(&key, b"").unwrap();
        model.insert(key, Vec::new());
    }
    // Dead: every 5th key in the first quarter, so some leaves have none.
    let is_dead = |key: &[u8]| {
        let i: u32 = std::str::from_utf8(&key[1..9]).unwrap().parse().unwrap();
        i < 1000 && i % 5 == 0
    };
    let changed_leaves = leaves(&s, &t)
        .iter()
        .filter(|(_, keys)| keys.iter().any(|k| is_dead(k)))
        .count() as u64;
    let total_leaves = leaves(&s, &t).len() as u64;
    assert!(changed_leaves > 0 && changed_leaves < total_leaves);
    let before = s.snapshot();
    let mut calls = 0u64;
    let removed = {
        let _c = enter(Cause::Vacuum);
        t.bulk_delete(&mut |key, _| {
            calls += 1;
            is_dead(key)
        })
        .unwrap()
    };
    let d = s.snapshot().delta(&before).counters;
    assert_eq!(removed, 200);
    assert_eq!(calls, 4000, "every entry visited once");
    assert_eq!(d.cause(Cause::Vacuum).wal_records, changed_leaves);
    assert_eq!(d.cause(Cause::Other).wal_records, 0);
    model.retain(|k, _| !is_dead(k));
    let got: BTreeMap<Vec<u8>, Vec<u8>> = all(&t).into_iter().collect();
    assert_eq!(got, model);
    assert_eq!(t.bulk_delete(&mut |_, _| false).unwrap(), 0);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

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
        let set_all = move |p: &mut [u8]| {
            let n = Node::parse(p, root_id).unwrap();
            let offs: Vec<usize> = (0..n.len())
                .map(|i| u16::from_le_bytes([p[32 + 2 * i], p[33 + 2 * i]]) as usize)
                .collect();
            for off in offs {
                let klen = u16::from_le_bytes([p[off], p[off + 1]]) as usize;
                let at = off + 5 + klen;
                p[at..at + 4].copy_from_slice(&target.to_le_bytes());
            }
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
    #[test]
    fn node_functions_never_panic_on_damaged_pages(
        entries in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..40), proptest::collection::vec(any::<u8>(), 0..40)), 0..30),
        level in 0u16..3,
        damage in proptest::collection::vec((0usize..8192, any::<u8>()), 1..12),
        probe in proptest::collection::vec(any::<u8>(), 0..20),
    ) {
        let id = PageId::new(16384, 7);
        let geo = BTreeConfig::postgres().geometry();
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
            lsn: 8, end_lsn: 64, prev_lsn: 0, xid: 0, rmgr: rmgr::BTREE, info: info_code,
            blocks: blocks.into_iter().map(|data| crate::wal::BlockRef { page: id, will_init: false, image: None, data }).collect(),
            main_data: main,
        };
        let _ = wal::redo_block(&rec, which, &mut p);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, usize, u8),
    Update(usize, usize, u8),
    Delete(usize),
    Get(usize),
    Scan {
        lo: (u8, usize),
        hi: (u8, usize),
        backward: bool,
        limit: usize,
    },
    BulkDelete(usize),
    Checkpoint,
    /// Reads 16 pages of another relation, evicting every unpinned page of the tree.
    Flood,
}

/// Mostly large values (up to about a quarter page), so that 16 frames cannot hold the
/// tree and leaves split every few inserts.
fn value_len() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 0usize..16, 3 => 300usize..2000]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (any::<usize>(), value_len(), any::<u8>()).prop_map(|(k, l, b)| Op::Insert(k, l, b)),
        3 => (any::<usize>(), value_len(), any::<u8>()).prop_map(|(k, l, b)| Op::Update(k, l, b)),
        2 => any::<usize>().prop_map(Op::Delete),
        2 => any::<usize>().prop_map(Op::Get),
        3 => ((0u8..3, any::<usize>()), (0u8..3, any::<usize>()), any::<bool>(), 1usize..400)
            .prop_map(|(lo, hi, backward, limit)| Op::Scan { lo, hi, backward, limit }),
        1 => (4usize..12).prop_map(Op::BulkDelete),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Flood),
    ]
}

/// Short keys over a 3-letter alphabet (many share prefixes, "" included), some padded
/// long, a few very long with long common prefixes, so that even truncated separators are
/// long and internal pages split too.
fn key() -> impl Strategy<Value = Vec<u8>> {
    let padded = |pad: std::ops::Range<usize>| {
        (proptest::collection::vec(b'a'..b'd', 0..8), pad).prop_map(|(mut k, pad)| {
            k.extend(std::iter::repeat(b'z').take(pad));
            k
        })
    };
    prop_oneof![
        3 => proptest::collection::vec(b'a'..b'd', 0..10),
        3 => padded(0..300),
        4 => padded(300..1800),
    ]
}

fn bound(b: (u8, usize), keys: &[Vec<u8>]) -> Bound<&[u8]> {
    let key = keys[b.1 % keys.len()].as_slice();
    match b.0 {
        0 => Bound::Unbounded,
        1 => Bound::Included(key),
        _ => Bound::Excluded(key),
    }
}

fn in_range(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    (match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Model-based: with 16 frames (evictions) and entries up to a quarter page (splits
    /// every few inserts), every operation answers as a BTreeMap does, and after every
    /// operation a full scan equals the map. At the end the structure checks out, the WAL
    /// replays to the same pages, and a reopened tree sees the same entries.
    #[test]
    fn tree_agrees_with_a_btreemap(
        keys in proptest::collection::vec(key(), 50..400),
        ops in proptest::collection::vec(op(), 100..600),
        innodb in any::<bool>(),
    ) {
        let s = storage(16);
        let cfg = if innodb { BTreeConfig::innodb() } else { pg_plain() };
        let t = BTree::create(s.pool().clone(), cfg.clone()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let max = t.max_entry_bytes();
        let scratch = s.store().create_relation().unwrap();
        for _ in 0..16 {
            crate::testkit::fill_and_log(s.wal(), &mut s.pool().new_page(scratch).unwrap(), 1, true).unwrap();
        }
        let fit = |key: &[u8], len: usize| len.min(max - key.len());
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert(i, len, b) => {
                    let key = &keys[i % keys.len()];
                    let v = vec![b; fit(key, len)];
                    let r = t.insert(key, &v);
                    if model.contains_key(key) {
                        prop_assert!(matches!(r, Err(Error::DuplicateKey { .. })), "{:?}", r);
                    } else {
                        r.unwrap();
                        model.insert(key.clone(), v);
                    }
                }
                Op::Update(i, len, b) => {
                    let key = &keys[i % keys.len()];
                    let v = vec![b; fit(key, len)];
                    let present = model.contains_key(key);
                    prop_assert_eq!(t.update_value(key, &v).unwrap(), present);
                    if present {
                        model.insert(key.clone(), v);
                    }
                }
                Op::Delete(i) => {
                    let key = &keys[i % keys.len()];
                    prop_assert_eq!(t.delete(key).unwrap(), model.remove(key).is_some());
                }
                Op::Get(i) => {
                    let key = &keys[i % keys.len()];
                    let got = t.get(key).unwrap();
                    prop_assert_eq!(got.as_ref(), model.get(key));
                }
                Op::Scan { lo, hi, backward, limit } => {
                    let (lo, hi) = (bound(lo, &keys), bound(hi, &keys));
                    let mut want: Vec<Kv> = model
                        .iter()
                        .filter(|(k, _)| in_range(k, lo, hi))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if backward {
                        want.reverse();
                    }
                    want.truncate(limit);
                    let mut got = Vec::new();
                    let dir = if backward { ScanDirection::Backward } else { ScanDirection::Forward };
                    t.scan(lo, hi, dir, &mut |k, v| {
                        got.push((k.to_vec(), v.to_vec()));
                        Ok(got.len() < limit)
                    }).unwrap();
                    prop_assert_eq!(got, want);
                }
                Op::BulkDelete(m) => {
                    let dead = |k: &[u8], v: &[u8]| (k.len() + v.len()) % m == 0;
                    let before = model.len();
                    model.retain(|k, v| !dead(k, v));
                    let removed = t.bulk_delete(&mut |k, v| dead(k, v)).unwrap();
                    prop_assert_eq!(removed as usize, before - model.len());
                }
                Op::Checkpoint => {
                    s.checkpoint().unwrap();
                }
                Op::Flood => {
                    for b in 0..16 {
                        drop(s.pool().fetch_read(PageId::new(scratch, b)).unwrap());
                    }
                }
            }
            let got: Vec<Kv> = all(&t);
            let want: Vec<Kv> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(got, want, "after op {}", n);
            if n % 25 == 0 {
                t.verify().unwrap();
            }
        }
        let st = t.verify().unwrap();
        prop_assert_eq!(st.entries as usize, model.len());
        prop_assert_eq!(t.stats().unwrap(), st);
        assert_redo_rebuilds(&s, &t);
        let again = BTree::open(s.pool().clone(), t.rel(), cfg).unwrap();
        let want: Vec<Kv> = model.into_iter().collect();
        prop_assert_eq!(all(&again), want);
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

#[test]
fn concurrent_inserts_and_lookups_then_a_full_scan_returns_exactly_the_set() {
    let s = Arc::new(storage(256));
    let t = Arc::new(BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap());
    const THREADS: u32 = 4;
    const OWN: u32 = 1500;
    const SHARED: u32 = 400;
    // Long keys: few entries per internal page, so internal pages split too.
    let key_of = |n: u32| [k(n), vec![b'p'; 250]].concat();
    let shared_wins = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|th| {
            let (t, wins) = (t.clone(), shared_wins.clone());
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9u32.wrapping_mul(th + 1);
                for i in 0..OWN {
                    // Disjoint: interleaved key sets, each thread in its own order.
                    let key = key_of((i * 7919 + th * 13) % OWN * THREADS + th);
                    let value = key[..9].repeat(7);
                    t.insert(&key, &value).unwrap();
                    assert_eq!(t.get(&key).unwrap(), Some(value));
                    // Overlapping: every thread tries the same keys; exactly one wins each.
                    if i % 4 == 0 {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let shared = format!("s{:06}", x % SHARED).into_bytes();
                        match t.insert(&shared, b"shared") {
                            Ok(()) => {
                                wins.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::DuplicateKey { .. }) => {}
                            Err(e) => panic!("{e}"),
                        }
                        assert_eq!(t.get(&shared).unwrap().as_deref(), Some(&b"shared"[..]));
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let got = all(&t);
    let shared: Vec<&Kv> = got.iter().filter(|e| e.0[0] == b's').collect();
    assert_eq!(shared.len(), shared_wins.load(Ordering::Relaxed));
    let own: Vec<Vec<u8>> = got
        .iter()
        .filter(|e| e.0[0] == b'k')
        .map(|e| e.0.clone())
        .collect();
    let want: Vec<Vec<u8>> = (0..OWN * THREADS).map(key_of).collect();
    assert_eq!(own, want, "exactly the inserted set, in order");
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    let st = t.verify().unwrap();
    assert!(st.height >= 3, "splits at several levels happened: {st:?}");
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn concurrent_scans_see_every_old_key_in_order_while_inserts_split_pages() {
    let s = Arc::new(storage(256));
    let t = Arc::new(BTree::create(s.pool().clone(), pg_plain()).unwrap());
    const OLD: u32 = 4000;
    for i in 0..OLD {
        t.insert(&k(i * 2), &[1u8; 40]).unwrap();
    }
    let writing = Arc::new(AtomicBool::new(true));
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..OLD / 2 {
                    let odd = ((i * 4099 + w * 1009) % (OLD / 2)) * 2 + w;
                    t.insert(&k(odd * 2 + 1), &[2u8; 120]).unwrap();
                    if i % 10 == 0 {
                        // Values that grow force replace-splits under the scans too.
                        assert!(t.update_value(&k(odd * 2), &[3u8; 300]).unwrap());
                    }
                }
            })
        })
        .collect();
    let scanners: Vec<_> = (0..2)
        .map(|sc| {
            let (t, writing) = (t.clone(), writing.clone());
            std::thread::spawn(move || {
                let mut scans = 0;
                while writing.load(Ordering::Acquire) || scans < 4 {
                    let backward = (scans + sc) % 2 == 1;
                    let (lo, hi) = if scans % 3 == 2 {
                        (k(500), k(3000))
                    } else {
                        (Vec::new(), b"l".to_vec())
                    };
                    let dir = if backward {
                        ScanDirection::Backward
                    } else {
                        ScanDirection::Forward
                    };
                    let mut keys: Vec<Vec<u8>> = Vec::new();
                    t.scan(
                        Bound::Included(&lo),
                        Bound::Excluded(&hi),
                        dir,
                        &mut |k, _| {
                            keys.push(k.to_vec());
                            Ok(true)
                        },
                    )
                    .unwrap();
                    if backward {
                        keys.reverse();
                    }
                    assert!(
                        keys.windows(2).all(|w| w[0] < w[1]),
                        "scan {scans} ({dir:?}) out of order or repeated"
                    );
                    let old: Vec<Vec<u8>> = (0..OLD)
                        .map(|i| k(i * 2))
                        .filter(|key| *key >= lo && *key < hi)
                        .collect();
                    let seen_old: Vec<&Vec<u8>> = keys
                        .iter()
                        .filter(|key| {
                            let i: u32 = std::str::from_utf8(&key[1..]).unwrap().parse().unwrap();
                            i % 2 == 0
                        })
                        .collect();
                    assert_eq!(
                        seen_old.len(),
                        old.len(),
                        "scan {scans} ({dir:?}) missed old keys"
                    );
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    writing.store(false, Ordering::Release);
    for sc in scanners {
        assert!(sc.join().unwrap() >= 4);
    }
    let st = t.verify().unwrap();
    assert_eq!(st.entries, 2 * OLD as u64);
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn concurrent_mixed_operations_match_per_thread_models() {
    let s = Arc::new(storage(128));
    let t = Arc::new(BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap());
    let threads: Vec<_> = (0..4u8)
        .map(|th| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut model = BTreeMap::new();
                let mut x = 0x1234_5678u64 + th as u64;
                for _ in 0..1500 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = format!("{}-{:04}", (b'a' + th) as char, x % 400).into_bytes();
                    let v = vec![th; (x >> 20) as usize % 600];
                    match x % 10 {
                        0..=4 => {
                            let r = t.insert(&key, &v);
                            match model.entry(key) {
                                std::collections::btree_map::Entry::Occupied(_) => {
                                    assert!(matches!(r, Err(Error::DuplicateKey { .. })))
                                }
                                std::collections::btree_map::Entry::Vacant(e) => {
                                    r.unwrap();
                                    e.insert(v);
                                }
                            }
                        }
                        5..=6 => {
                            let present = model.contains_key(&key);
                            assert_eq!(t.update_value(&key, &v).unwrap(), present);
                            if present {
                                model.insert(key, v);
                            }
                        }
                        7..=8 => assert_eq!(t.delete(&key).unwrap(), model.remove(&key).is_some()),
                        _ => assert_eq!(t.get(&key).unwrap().as_ref(), model.get(&key)),
                    }
                }
                model
            })
        })
        .collect();
    let mut want = BTreeMap::new();
    for th in threads {
        want.extend(th.join().unwrap());
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> = all(&t).into_iter().collect();
    assert_eq!(got, want);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

/// A PostgreSQL-shaped key: 8-byte index key `v`, then a 6-byte heap TID (block, offset).
fn heap_key(v: u64, block: u32, off: u16) -> Vec<u8> {
    let mut key = v.to_be_bytes().to_vec();
    key.extend_from_slice(&block.to_be_bytes());
    key.extend_from_slice(&off.to_be_bytes());
    key
}

#[test]
fn bulk_load_packs_leaves_to_the_fill_target_and_the_tree_stays_usable() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let entries: Vec<Kv> = (0..50_000u64)
        .map(|i| (heap_key(i / 3, i as u32, 1), Vec::new()))
        .collect();
    t.bulk_load(&entries, 90, 70).unwrap();
    let st = t.verify().unwrap();
    assert_eq!(st.entries, 50_000);
    let fill = st.avg_leaf_fill_pct();
    assert!(
        (88.0..=90.5).contains(&fill),
        "leaf fill {fill:.1} % {st:?}"
    );
    assert!(st.height >= 2, "{st:?}");
    assert_eq!(all(&t), entries);
    // Lookups, scans and later inserts work on the built tree.
    assert_eq!(t.get(&entries[777].0).unwrap(), Some(Vec::new()));
    let extra = heap_key(7, 999_999, 2);
    t.insert(&extra, b"").unwrap();
    assert_eq!(t.get(&extra).unwrap(), Some(Vec::new()));
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
    // A second load into a tree that is no longer empty is refused.
    assert!(matches!(
        t.bulk_load(&entries[..1], 90, 70),
        Err(Error::InvalidValue(_))
    ));
    // Unsorted input is refused, and the tree is left empty.
    let u = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let unsorted = vec![(k(2), Vec::new()), (k(1), Vec::new())];
    assert!(matches!(
        u.bulk_load(&unsorted, 90, 70),
        Err(Error::InvalidValue(_))
    ));
    assert!(all(&u).is_empty());
    // A built tree is smaller than the same keys inserted in random order.
    let r = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut order: Vec<usize> = (0..entries.len()).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    for i in order {
        r.insert(&entries[i].0, b"").unwrap();
    }
    let rs = r.verify().unwrap();
    assert!(
        rs.leaf_pages as f64 > 1.25 * st.leaf_pages as f64,
        "random {} leaves, built {}",
        rs.leaf_pages,
        st.leaf_pages
    );
}

/// A table stand-in: the keys whose TID block is in `dead_blocks` (or whose TID offset is
/// in `dead_offsets`) point at tuples dead to everyone; counts the blocks it visits.
struct FakeHeap {
    dead_offsets: Vec<u16>,
    visits: std::sync::Mutex<Vec<u32>>,
}

impl IndexDeleteTuples for FakeHeap {
    fn heap_block(&self, key: &[u8]) -> Option<u32> {
        let n = key.len();
        Some(u32::from_be_bytes(key[n - 6..n - 2].try_into().unwrap()))
    }
    fn tid_suffix_bytes(&self) -> usize {
        6
    }
    fn index_delete_tuples(&self, op: &DeleteOp) -> Result<DeleteVerdict> {
        let mut blocks: Vec<u32> = op
            .candidates
            .iter()
            .filter_map(|c| self.heap_block(&c.key))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        self.visits.lock().unwrap().extend(blocks);
        Ok(DeleteVerdict {
            deletable: op
                .candidates
                .iter()
                .map(|c| {
                    let n = c.key.len();
                    let off = u16::from_be_bytes([c.key[n - 2], c.key[n - 1]]);
                    c.known_dead || self.dead_offsets.contains(&off)
                })
                .collect(),
            latest_removed_xid: 42,
        })
    }
}

#[test]
fn killed_entries_are_skipped_by_live_scans_and_deleted_before_a_split() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    // One leaf's worth of distinct keys, each on its own heap block, offset 1.
    let mut keys = Vec::new();
    for i in 0..1000u64 {
        let key = heap_key(i, i as u32, 1);
        t.insert(&key, b"").unwrap();
        keys.push(key);
    }
    let first_leaf = leaves(&s, &t)[0].clone();
    let victims: Vec<Vec<u8>> = first_leaf.1.iter().step_by(2).cloned().collect();
    let leaf = t.leaf_ref(first_leaf.0).unwrap();
    // A scan that read the leaf before it changed does not mark anything.
    let stale = LeafRef {
        lsn: leaf.lsn - 1,
        ..leaf
    };
    assert_eq!(
        t.kill_items(stale, &victims).unwrap(),
        0,
        "the leaf changed since"
    );
    assert_eq!(t.kill_items(leaf, &victims).unwrap(), victims.len());
    let leaf = t.leaf_ref(first_leaf.0).unwrap();
    assert_eq!(t.kill_items(leaf, &victims).unwrap(), 0, "already marked");
    // Keys not in that leaf are skipped.
    assert_eq!(t.kill_items(leaf, &[keys[999].clone()]).unwrap(), 0);
    // A plain scan still returns them (vacuum, checks); a live scan skips them.
    assert_eq!(all(&t).len(), 1000);
    let live = live(&t);
    assert_eq!(live.len(), 1000 - victims.len());
    assert!(live.iter().all(|(_, k)| !victims.contains(k)));
    assert!(live
        .iter()
        .filter(|(_, k)| first_leaf.1.contains(k))
        .all(|(leaf, _)| leaf.block == first_leaf.0));

    // Fill the first leaf until it would split: the insert deletes the marked entries
    // (plus the other entries on their heap blocks that the heap finds dead) instead.
    let heap = FakeHeap {
        dead_offsets: Vec::new(),
        visits: Default::default(),
    };
    let leaves_before = leaves(&s, &t).len();
    let wal_before = s.snapshot();
    let lo = u64::from_be_bytes(first_leaf.1[0][..8].try_into().unwrap());
    let mut outcome = CleanupOutcome::default();
    for j in 0..2000u32 {
        // Keys between the first leaf's first two keys: all land in the first leaf.
        let mut key = lo.to_be_bytes().to_vec();
        key.extend_from_slice(&(5_000_000 + j).to_be_bytes());
        key.extend_from_slice(&2u16.to_be_bytes());
        let o = t
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: false,
                    deduplicate: false,
                },
            )
            .unwrap();
        outcome.simple_deleted += o.simple_deleted;
        if outcome.simple_deleted > 0 {
            break;
        }
    }
    assert_eq!(outcome.simple_deleted, victims.len() as u64);
    assert_eq!(outcome.bottom_up_passes, 0, "the key was not unchanged");
    assert_eq!(leaves(&s, &t).len(), leaves_before, "no split");
    let visited = heap.visits.lock().unwrap().clone();
    assert!(!visited.is_empty());
    let d = s.snapshot().delta(&wal_before).counters;
    assert!(d.total().wal_records > 0);
    for v in &victims {
        assert_eq!(t.get(v).unwrap(), None, "deleted");
    }
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn bottom_up_deletion_removes_dead_versions_of_an_unchanged_key_instead_of_splitting() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    // Versions of a few index keys: key v, heap block b, offset 1 = dead old version,
    // offset 2 = live.
    let heap = FakeHeap {
        dead_offsets: vec![1],
        visits: Default::default(),
    };
    let mut inserted = 0u32;
    let mut out = CleanupOutcome::default();
    while out.bottom_up_passes == 0 {
        let v = (inserted % 4) as u64;
        let key = heap_key(v, inserted / 4, 1);
        let o = t
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: true,
                    deduplicate: false,
                },
            )
            .unwrap();
        out.bottom_up_passes += o.bottom_up_passes;
        out.bottom_up_deleted += o.bottom_up_deleted;
        inserted += 1;
        assert!(inserted < 10_000, "no bottom-up pass ran");
    }
    assert!(out.bottom_up_deleted > 0, "{out:?}");
    // At most BOTTOMUP_MAX_NBLOCKS-style limits are the table's business; the tree asked
    // once and removed what it was told.
    assert_eq!(
        leaves(&s, &t).len(),
        1,
        "the root leaf freed room instead of splitting"
    );
    // Without the hint the same full leaf splits.
    let u = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut i = 0u32;
    while leaves(&s, &u).len() == 1 {
        let key = heap_key((i % 4) as u64, i / 4, 1);
        let o = u
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: false,
                    deduplicate: false,
                },
            )
            .unwrap();
        assert_eq!(o.bottom_up_passes, 0);
        i += 1;
    }
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn postgres_leaf_entries_take_the_bytes_of_postgresql_index_tuples() {
    use crate::catalog::{pg_index_tuple_bytes, ColumnType, Value};
    let geo = BTreeConfig::postgres().geometry();
    // An int4 key (sysbench's id and k): the encoded key (4 bytes) plus the 6-byte heap
    // TID after the 4-byte length header: 16 bytes, PostgreSQL's 8 + 4 MAXALIGNed.
    let pg = pg_index_tuple_bytes(&[ColumnType::Integer], &[Value::Integer(7)]).unwrap();
    assert_eq!(geo.entry_bytes(4 + 6), pg);
    // Line pointer: 4 bytes, as ItemIdData.
    assert_eq!(geo.space(4 + 6), pg + 4);
    // The length header is 2 bytes more than t_info: an int8 key takes 24 bytes where
    // PostgreSQL needs 16 (documented in BTreeConfig::postgres).
    let pg8 = pg_index_tuple_bytes(&[ColumnType::BigInt], &[Value::BigInt(7)]).unwrap();
    assert_eq!((geo.entry_bytes(8 + 6), pg8), (24, 16));
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

// ---- Finishing incomplete splits at recovery (`BTree::finish_incomplete_splits`) ----

/// A long key whose distinguishing bytes come last, so that even suffix-truncated
/// separators are long and internal pages split after a few dozen leaves.
fn long_key(i: u32, pad: usize) -> Vec<u8> {
    let mut key = vec![b'x'; pad];
    key.extend_from_slice(format!("{i:08}").as_bytes());
    key
}

/// Inserts `keys` in order into a new tree (value: the key's index, 8 bytes); returns the
/// tree, its B+tree WAL records and, per record, how many inserts had begun when it was
/// written (the keys a crash right after it must keep: the split records of an insert
/// carry its key).
fn logged_inserts(
    s: &Storage,
    cfg: BTreeConfig,
    keys: &[Vec<u8>],
) -> (BTree, Vec<crate::wal::WalRecord>, Vec<usize>) {
    let t = BTree::create(s.pool().clone(), cfg).unwrap();
    let mut starts = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        starts.push(s.wal().insert_lsn().0);
        t.insert(key, &(i as u64).to_le_bytes()).unwrap();
    }
    t.verify().unwrap();
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let recs: Vec<_> = recs
        .into_iter()
        .filter(|r| r.rmgr == rmgr::BTREE && r.blocks.iter().any(|b| b.page.rel == t.rel()))
        .collect();
    let begun = recs
        .iter()
        .map(|r| starts.partition_point(|&l| l <= r.lsn))
        .collect();
    (t, recs, begun)
}

/// Blocks of the node pages in `pages` that carry INCOMPLETE_SPLIT.
fn flagged_blocks(rel: crate::device::FileId, pages: &HashMap<u32, Vec<u8>>) -> Vec<u32> {
    let mut out: Vec<u32> = pages
        .iter()
        .filter(|(&b, _)| b != 0)
        .filter(|(&b, p)| {
            Node::parse(p, PageId::new(rel, b)).unwrap().flags() & node::FLAG_INCOMPLETE_SPLIT != 0
        })
        .map(|(&b, _)| b)
        .collect();
    out.sort_unstable();
    out
}

/// Copies `pages` (blocks 0..n of a redone tree) into a new relation of `s`, as recovery
/// would find them on disk.
fn materialize(s: &Storage, pages: &HashMap<u32, Vec<u8>>) -> crate::device::FileId {
    let rel = s.store().create_relation().unwrap();
    for b in 0..pages.len() as u32 {
        let mut g = s.pool().new_page(rel).unwrap();
        assert_eq!(g.page_id().block, b, "redone blocks are 0..n");
        g.data_mut().copy_from_slice(&pages[&b]);
    }
    rel
}

/// Opens the redone pages `pages` of a tree whose relation was `rel` (as recovery would
/// after redo), checks that an unfinished split shows (verify fails, keys of its right
/// half are missing), finishes the splits, and checks the tree: verify passes, and every
/// key of `expected` (sorted) is found by lookup and by full scans in both directions,
/// exactly once. Then checks that redo of what finishing logged, on `pages`, gives the
/// pages finishing left; with `nested`, also a crash after each record of the finishing
/// but the last, finished in turn. Returns the number of splits finished.
fn finish_and_check(
    s: &Storage,
    cfg: &BTreeConfig,
    rel: crate::device::FileId,
    pages: &HashMap<u32, Vec<u8>>,
    expected: &[Vec<u8>],
    nested: bool,
) -> usize {
    let page_bytes = s.store().page_size().bytes();
    let flagged = flagged_blocks(rel, pages);
    let rel = materialize(s, pages);
    let t = BTree::open(s.pool().clone(), rel, cfg.clone()).unwrap();
    if !flagged.is_empty() {
        let e = t.verify().unwrap_err();
        assert!(e.to_string().contains("INCOMPLETE_SPLIT"), "{e}");
        let missing = expected
            .iter()
            .filter(|key| t.get(key).unwrap().is_none())
            .count();
        assert!(missing > 0, "an unfinished split hides its right half");
    }
    let from = s.wal().insert_lsn();
    let finished = t.finish_incomplete_splits().unwrap();
    assert_eq!(finished, flagged.len(), "flagged pages {flagged:?}");
    t.verify().unwrap();
    assert!(flagged_blocks(rel, &{
        let mut now = HashMap::new();
        for b in 0..s.store().n_blocks(rel).unwrap() {
            let g = s.pool().fetch_read(PageId::new(rel, b)).unwrap();
            now.insert(b, g.data().to_vec());
        }
        now
    })
    .is_empty());
    for key in expected {
        assert!(t.get(key).unwrap().is_some(), "key lost after finishing");
    }
    let forward = keys_of(&t);
    assert_eq!(forward, expected, "forward scan after finishing");
    let mut backward: Vec<Vec<u8>> = keys_in(
        &t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Backward,
    );
    backward.reverse();
    assert_eq!(backward, expected, "backward scan after finishing");
    // What finishing logged is enough: redo of it on the pages it started from.
    s.wal().flush_all().unwrap();
    let (logged, _) = s.wal().read_from(from).unwrap();
    let logged: Vec<_> = logged
        .into_iter()
        .filter(|r| r.rmgr == rmgr::BTREE && r.blocks.iter().any(|b| b.page.rel == rel))
        .collect();
    if flagged.is_empty() {
        assert!(logged.is_empty(), "nothing to finish, nothing logged");
    }
    let mut redone = pages.clone();
    redo_onto(&mut redone, &logged, rel, page_bytes);
    assert_pages_match(s, rel, &redone);
    if nested {
        // A crash while finishing: the records written so far, then recovery again.
        for cut in 1..logged.len() {
            let mut p = pages.clone();
            redo_onto(&mut p, &logged[..cut], rel, page_bytes);
            finish_and_check(s, cfg, rel, &p, expected, false);
        }
    }
    // The finished tree takes inserts as usual.
    let mut more = expected.to_vec();
    for i in 0..50u32 {
        let key = long_key(90_000_000 + i * 7, 3);
        t.insert(&key, b"after").unwrap();
        more.push(key);
    }
    more.sort();
    t.verify().unwrap();
    assert_eq!(keys_of(&t), more);
    finished
}

/// The keys a crash right after record `cut - 1` keeps, sorted.
fn kept(keys: &[Vec<u8>], begun: &[usize], cut: usize) -> Vec<Vec<u8>> {
    let n = if cut == 0 { 0 } else { begun[cut - 1] };
    let mut v = keys[..n].to_vec();
    v.sort();
    v
}

#[test]
fn recovery_finishes_splits_cut_between_the_records_of_a_cascade() {
    for cfg in [pg_plain(), BTreeConfig::innodb()] {
        let s = storage(4096);
        let n = 900u32;
        let keys: Vec<Vec<u8>> = (0..n).map(|i| long_key(i * 7919 % n, 590)).collect();
        let (t, recs, begun) = logged_inserts(&s, cfg.clone(), &keys);
        assert!(
            t.stats().unwrap().height >= 3,
            "root split above internal pages"
        );
        // Crash points inside a cascade: right after a SPLIT whose parent change is
        // missing, by the split's level and what the next record does.
        let mut cuts: BTreeMap<(&str, bool), Vec<usize>> = BTreeMap::new();
        for (r, rec) in recs.iter().enumerate() {
            if rec.info != info::SPLIT || r + 1 == recs.len() {
                continue;
            }
            let (h, _) = wal::decode_node(&rec.blocks[1].data, rec.lsn).unwrap();
            let next = match recs[r + 1].info {
                info::INSERT_UPPER => "parent insert",
                info::SPLIT => "parent split",
                info::NEWROOT => "new root",
                other => panic!("record {other:#04x} after a SPLIT"),
            };
            cuts.entry((next, h.level == 0)).or_default().push(r + 1);
        }
        for want in [
            ("parent insert", true),
            ("parent insert", false),
            ("parent split", true),
            ("new root", true),
            ("new root", false),
        ] {
            assert!(cuts.contains_key(&want), "{cfg:?}: no cut of kind {want:?}");
        }
        let page_bytes = s.store().page_size().bytes();
        for ((kind, leaf), at) in &cuts {
            // The first and the last of each kind.
            for &cut in [at[0], at[at.len() - 1]]
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
            {
                let mut pages = HashMap::new();
                redo_onto(&mut pages, &recs[..cut], t.rel(), page_bytes);
                let flagged = flagged_blocks(t.rel(), &pages);
                assert_eq!(flagged.len(), 1, "{kind} leaf {leaf}: one unfinished split");
                let level = Node::parse(&pages[&flagged[0]], PageId::new(t.rel(), flagged[0]))
                    .unwrap()
                    .level();
                assert_eq!(level == 0, *leaf);
                let expected = kept(&keys, &begun, cut);
                let finished = finish_and_check(&s, &cfg, t.rel(), &pages, &expected, true);
                assert_eq!(finished, 1, "{kind} leaf {leaf} cut {cut}");
            }
        }
    }
}

#[test]
fn finishing_a_complete_tree_changes_nothing() {
    let s = storage(512);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    assert_eq!(t.finish_incomplete_splits().unwrap(), 0, "a lone root leaf");
    for i in 0..600u32 {
        t.insert(&long_key(i * 31 % 600, 400), &[7u8; 8]).unwrap();
    }
    assert!(t.stats().unwrap().height >= 3);
    let snapshot = |t: &BTree| -> Vec<Vec<u8>> {
        (0..s.store().n_blocks(t.rel()).unwrap())
            .map(|b| {
                s.pool()
                    .fetch_read(PageId::new(t.rel(), b))
                    .unwrap()
                    .data()
                    .to_vec()
            })
            .collect()
    };
    let before = snapshot(&t);
    let lsn = s.wal().insert_lsn();
    assert_eq!(t.finish_incomplete_splits().unwrap(), 0);
    assert_eq!(s.wal().insert_lsn(), lsn, "nothing logged");
    let after = snapshot(&t);
    assert_eq!(before.len(), after.len(), "no page allocated");
    for (b, (x, y)) in before.iter().zip(&after).enumerate() {
        assert_eq!(
            crate::page::page_lsn(x),
            crate::page::page_lsn(y),
            "page LSN of block {b}"
        );
        assert!(x == y, "block {b} changed");
    }
    t.verify().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Random inserts, a crash after any record, redo, finishing: the tree verifies and
    /// holds exactly the keys the replayed records carry.
    #[test]
    fn recovery_at_any_record_finishes_to_a_valid_tree(
        raw in proptest::collection::vec(any::<u16>(), 40..400),
        innodb in any::<bool>(),
        pad in 200usize..700,
        cut_at in any::<prop::sample::Index>(),
        after_split in any::<bool>(),
    ) {
        let mut seen = std::collections::HashSet::new();
        let keys: Vec<Vec<u8>> = raw
            .into_iter()
            .filter(|v| seen.insert(*v))
            .map(|v| long_key(v as u32, pad))
            .collect();
        let cfg = if innodb { BTreeConfig::innodb() } else { pg_plain() };
        let s = storage(1024);
        let (t, recs, begun) = logged_inserts(&s, cfg.clone(), &keys);
        // Half the crashes right after a SPLIT record (inside a cascade), half anywhere.
        let splits: Vec<usize> = (0..recs.len()).filter(|&r| recs[r].info == info::SPLIT).collect();
        let cut = if after_split && !splits.is_empty() {
            1 + splits[cut_at.index(splits.len())]
        } else {
            1 + cut_at.index(recs.len())
        };
        let mut pages = HashMap::new();
        redo_onto(&mut pages, &recs[..cut], t.rel(), s.store().page_size().bytes());
        let expected = kept(&keys, &begun, cut);
        let finished = finish_and_check(&s, &cfg, t.rel(), &pages, &expected, false);
        prop_assert!(finished <= 1);
        if after_split && !splits.is_empty() {
            prop_assert_eq!(finished, 1);
        }
    }
}

/// Two unfinished splits at once, one level above the other (a state PostgreSQL meets
/// after crashes in two cascades; built here by leaving the INSERT_UPPER of an internal
/// split out of the redo and cutting the WAL after a later leaf split). With `under_right`
/// the leaf's parent is the unlinked right half of the internal split: the leaf's split can
/// only be finished once its parent is linked, so finishing must go top down. Without, the
/// leaf is the last child of the internal split's left half: the keys of the leaf's right
/// half belong under that left half, and the internal separator must stay above them.
fn two_level_case(cfg: &BTreeConfig, under_right: bool) {
    let s = storage(4096);
    let n = 4000u32;
    let keys: Vec<Vec<u8>> = (0..n).map(|i| long_key(i * 7919 % n, 590)).collect();
    let (t, recs, begun) = logged_inserts(&s, cfg.clone(), &keys);
    let page_bytes = s.store().page_size().bytes();
    let level_of =
        |r: &crate::wal::WalRecord| wal::decode_node(&r.blocks[1].data, r.lsn).unwrap().0.level;
    // An internal split (at `r`) whose INSERT_UPPER into G (at `r + 1`) is left out, then a
    // later leaf split (at `c`) whose INSERT_UPPER into the internal split's right (or
    // left) half is cut off, with no record in between touching G.
    for r in 0..recs.len() - 1 {
        let (split, up) = (&recs[r], &recs[r + 1]);
        if split.info != info::SPLIT || up.info != info::INSERT_UPPER || level_of(split) != 1 {
            continue;
        }
        let g = up.blocks[0].page.block;
        let (x_left, x_right) = (split.blocks[0].page.block, split.blocks[1].page.block);
        let parent = if under_right { x_right } else { x_left };
        for c in r + 2..recs.len() - 1 {
            if recs[c].blocks.iter().any(|b| b.page.block == g) {
                break;
            }
            let next = &recs[c + 1];
            if recs[c].info != info::SPLIT
                || level_of(&recs[c]) != 0
                || next.info != info::INSERT_UPPER
                || next.blocks[0].page.block != parent
            {
                continue;
            }
            let redone: Vec<_> = recs[..=c]
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != r + 1)
                .map(|(_, r)| r.clone())
                .collect();
            let mut pages = HashMap::new();
            redo_onto(&mut pages, &redone, t.rel(), page_bytes);
            let leaf = recs[c].blocks[0].page.block;
            if !under_right {
                let x = Node::parse(&pages[&x_left], PageId::new(t.rel(), x_left)).unwrap();
                if x.child(x.len() - 1).unwrap() != leaf {
                    continue;
                }
                // With suffix truncation, take a case where a separator chosen from the
                // leaf's left half alone (its last key against the first key under the
                // right half of the internal split) would not stay above the keys of the
                // leaf's right half.
                if cfg.suffix_truncation {
                    let node_at =
                        |b: u32| Node::parse(&pages[&b], PageId::new(t.rel(), b)).unwrap();
                    let mut b = x_right;
                    while node_at(b).level() > 0 {
                        b = node_at(b).child(0).unwrap();
                    }
                    let (p, q) = (node_at(leaf), node_at(recs[c].blocks[1].page.block));
                    let naive = super::tree::truncated_separator(
                        p.key(p.len() - 1).unwrap(),
                        node_at(b).key(0).unwrap(),
                    );
                    if q.key(q.len() - 1).unwrap() < naive.as_slice() {
                        continue;
                    }
                }
            }
            assert_eq!(flagged_blocks(t.rel(), &pages), {
                let mut v = vec![x_left, leaf];
                v.sort_unstable();
                v
            });
            let expected = kept(&keys, &begun, c + 1);
            assert_eq!(
                finish_and_check(&s, cfg, t.rel(), &pages, &expected, true),
                2
            );
            return;
        }
    }
    panic!("{cfg:?}: no two-level case (under_right {under_right}) in the workload");
}

#[test]
fn recovery_finishes_unfinished_splits_on_two_levels_parent_first() {
    for cfg in [pg_plain(), BTreeConfig::innodb()] {
        two_level_case(&cfg, true);
    }
}

#[test]
fn recovery_finishes_an_internal_split_whose_last_child_split_too() {
    for cfg in [pg_plain(), BTreeConfig::innodb()] {
        two_level_case(&cfg, false);
    }
}

// ---- Deduplication (posting lists; btree::dedup) ----

/// xorshift64: the tests' deterministic randomness.
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Every entry of the scan, forward.
/// The keys a scan of `t` delivers, in the order it delivers them.
fn keys_in(t: &BTree, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: ScanDirection) -> Vec<Vec<u8>> {
    collect(t, lo, hi, dir)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn keys_of(t: &BTree) -> Vec<Vec<u8>> {
    all(t).into_iter().map(|(k, _)| k).collect()
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
            Err(Error::DuplicateKey { .. })
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
        Err(Error::DuplicateKey { .. })
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
                        assert!(matches!(r, Err(Error::DuplicateKey { .. })));
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

/// A split's left page is logged as its difference from the page before the split: an
/// insert, a replacement or a removal on the left logs one entry or none, a left page that
/// only lost its upper part logs none, and anything else is logged whole and still
/// rebuilds exactly.
#[test]
fn split_left_logs_the_left_page_as_its_difference_from_the_page_before() {
    let e = |i: u32, v: u8| node::Entry {
        key: k(i),
        value: vec![v; 3],
    };
    let before: Vec<node::Entry> = (0..10).map(|i| e(i * 2, 0)).collect();
    let h = NodeHeader {
        level: 0,
        flags: node::FLAG_INCOMPLETE_SPLIT,
        left: 7,
        right: 9,
    };
    let with = |f: &dyn Fn(&mut Vec<node::Entry>)| {
        let mut l = before.clone();
        f(&mut l);
        l
    };
    let cases: Vec<(&str, Vec<node::Entry>, usize)> = vec![
        ("upper part moved right", before[..6].to_vec(), 0),
        (
            "insert on the left",
            with(&|l| {
                l.insert(3, e(5, 1));
                l.truncate(6);
            }),
            1,
        ),
        (
            "replacement on the left",
            with(&|l| {
                l[2] = e(4, 9);
                l.truncate(5);
            }),
            1,
        ),
        (
            "removal on the left",
            with(&|l| {
                l.remove(1);
                l.truncate(5);
            }),
            0,
        ),
        (
            "replacement and insert",
            with(&|l| {
                l[2] = e(4, 9);
                l.insert(3, e(5, 1));
                l.truncate(7);
            }),
            2,
        ),
        (
            "unrelated entries",
            (100..105).map(|i| e(i, 4)).collect(),
            5,
        ),
    ];
    for (what, left, mid) in cases {
        let data = wal::encode_split_left(h, &before, &node::pairs(&left));
        let d = wal::decode_split_left(&data, 1).unwrap();
        assert_eq!(d.header, h, "{what}");
        assert_eq!(d.mid.len(), mid, "{what}: {d:?}");
        let mut rebuilt = node::pairs(&before[..d.head]);
        rebuilt.extend(d.mid.iter().copied());
        rebuilt.extend(node::pairs(&before[d.from..d.from + d.tail]));
        assert_eq!(rebuilt, node::pairs(&left), "{what}");
    }
}

/// A descent starts at the cached root without the meta page (nbtpage.c `_bt_getroot`
/// with `rd_amcache`); a tree whose cached root has split since (here split by another
/// instance over the same relation) sees the root's new right sibling, reads the meta
/// page and still finds every key.
#[test]
fn descents_start_at_the_cached_root_and_notice_a_root_split() {
    let s = storage(256);
    let a = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    a.insert(&k(1), b"v").unwrap();
    assert_eq!(a.get(&k(1)).unwrap().as_deref(), Some(&b"v"[..]));
    let hits = || s.snapshot().counters.total().buffer_hits;
    let h0 = hits();
    assert!(a.get(&k(1)).unwrap().is_some());
    assert_eq!(hits() - h0, 1, "one page (the leaf root), no meta page");
    // Another instance over the same relation grows the tree past one level.
    let b = BTree::open(s.pool().clone(), a.rel(), pg_plain()).unwrap();
    let n = 3000;
    for i in 2..n {
        b.insert(&k(i), b"v").unwrap();
    }
    assert!(b.stats().unwrap().height >= 2);
    for i in 1..n {
        assert!(a.get(&k(i)).unwrap().is_some(), "key {i}");
    }
    let h1 = hits();
    assert!(a.get(&k(n - 1)).unwrap().is_some());
    assert_eq!(
        hits() - h1,
        u64::from(a.stats().unwrap().height),
        "a root-to-leaf path, no meta page"
    );
    a.verify().unwrap();
}

/// A postgres-preset leaf entry (key ‖ 6-byte heap TID, under the 4-byte length pair,
/// MAXALIGNed) takes the bytes PostgreSQL gives the index tuple
/// (`catalog::pg_index_tuple_bytes`) for NOT NULL keys: no tag byte in the key.
#[test]
fn postgres_leaf_entries_take_postgresql_index_tuple_bytes() {
    use crate::catalog::{encode_key, pg_index_tuple_bytes, ColumnType, KeyColumn, Value};
    let geo = BTreeConfig::postgres().geometry();
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    for (ty, v) in [
        (ColumnType::Integer, Value::Integer(7)),
        (ColumnType::BigInt, Value::BigInt(-7)),
        (ColumnType::Varchar(36), Value::text(uuid)),
    ] {
        let mut key = Vec::new();
        encode_key(
            &[KeyColumn::not_null(ty)],
            std::slice::from_ref(&v),
            &mut key,
        )
        .unwrap();
        let entry = geo.entry_bytes(key.len() + 6);
        let pg = pg_index_tuple_bytes(&[ty], &[v]).unwrap();
        match ty {
            // The length pair is 2 bytes more than t_info: an 8-byte key rounds one step
            // further (documented at BTreeConfig::postgres).
            ColumnType::BigInt => assert_eq!((entry, pg), (24, 16)),
            _ => assert_eq!(entry, pg, "{ty}"),
        }
    }
    // The UUID text: 8 + 1 + 36 → 48 in PostgreSQL; 4 + 38 + 6 → 48 here.
    assert_eq!(
        pg_index_tuple_bytes(&[ColumnType::Varchar(36)], &[Value::text(uuid)]).unwrap(),
        48
    );
}
