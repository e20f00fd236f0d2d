//! Tests of inserts, splits and updates (`insert.rs`): leaf fill after ascending and random
//! inserts, suffix truncation of separators, the update that splits, and the split's left
//! page logged as its difference.

use super::*;

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
    use crate::btree::tree::truncated_separator as t;
    assert_eq!(t(b"abc", b"abd"), b"abd");
    assert_eq!(t(b"abc", b"abdzzz"), b"abd");
    assert_eq!(t(b"ab", b"abc"), b"abc");
    assert_eq!(t(b"", b"a"), b"a");
    assert_eq!(t(b"a\xff", b"b"), b"b");
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
        let data = wal::encode_split_left(h, &node::pairs(&before), &node::pairs(&left));
        let d = wal::decode_split_left(&data, Lsn(1)).unwrap();
        assert_eq!(d.header, h, "{what}");
        assert_eq!(d.mid.len(), mid, "{what}: {d:?}");
        let mut rebuilt = node::pairs(&before[..d.head]);
        rebuilt.extend(d.mid.iter().copied());
        rebuilt.extend(node::pairs(&before[d.from..d.from + d.tail]));
        assert_eq!(rebuilt, node::pairs(&left), "{what}");
    }
}

/// A run of inserts in one gap of a leaf, each next to the one before, ends the leaf's
/// next split at the insert point when `sequential_split` is on (InnoDB btr0btr.cc
/// `btr_page_get_split_rec_to_right` for an ascending run, `_to_left` for a descending
/// one). Returns the splits at the insert point the run made and the keys of the leaf
/// that holds its last insert.
fn split_after_a_run(descending: bool, sequential_split: bool) -> (u64, Vec<u8>, Vec<Vec<u8>>) {
    let s = storage(256);
    let cfg = BTreeConfig {
        merge_threshold_pct: None,
        sequential_split,
        ..BTreeConfig::innodb()
    };
    let t = BTree::create(s.pool().clone(), cfg).unwrap();
    // Keys 1,000 apart, inserted in a random order: leaves about two thirds full.
    let mut keys: Vec<u32> = (1..=3_000).map(|i| i * 1_000).collect();
    shuffle(&mut keys, 0x9E37_79B9_7F4A_7C15);
    for &key in &keys {
        t.insert(&k(key), &[1u8; 40]).unwrap();
    }
    // The run fills the gap above 1,500,000 until a split of its leaf took the rule; a
    // split before the run's second insert halves the leaf (the last insert was
    // elsewhere), so the run goes on past it. Without the rule: two splits.
    let before = t.ops();
    let mut last = Vec::new();
    for j in 1..1_000u32 {
        let key = if descending {
            1_501_000 - j
        } else {
            1_500_000 + j
        };
        last = k(key);
        t.insert(&last, &[2u8; 40]).unwrap();
        let ops = t.ops();
        let done = if sequential_split {
            ops.index_page_splits_at_insert_point > before.index_page_splits_at_insert_point
        } else {
            ops.index_page_splits >= before.index_page_splits + 2
        };
        if done {
            break;
        }
    }
    let ops = t.ops();
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
    let leaf = leaves(&s, &t)
        .into_iter()
        .map(|(_, keys)| keys)
        .find(|keys| keys.contains(&last))
        .unwrap();
    (
        ops.index_page_splits_at_insert_point - before.index_page_splits_at_insert_point,
        last,
        leaf,
    )
}

#[test]
fn innodb_splits_a_run_of_inserts_at_the_insert_point() {
    // Ascending: the left page keeps the entries up to the new one and the next.
    let (n, last, leaf) = split_after_a_run(false, true);
    assert_eq!(n, 1);
    assert!(
        leaf.len() >= 2 && leaf[leaf.len() - 2] == last || leaf == [last.clone()],
        "{} entries, the new one at {:?}",
        leaf.len(),
        leaf.iter().position(|key| *key == last)
    );
    // Descending: the page with the new entry starts at the entry before it.
    let (n, last, leaf) = split_after_a_run(true, true);
    assert_eq!(n, 1);
    assert_eq!(leaf.get(1), Some(&last), "{} entries", leaf.len());
    // Without the rule the same runs split their leaves in halves.
    for descending in [false, true] {
        let (n, last, leaf) = split_after_a_run(descending, false);
        assert_eq!(n, 0);
        let at = leaf.iter().position(|key| *key == last).unwrap();
        assert!(at >= 2 && at + 2 < leaf.len(), "{at} of {}", leaf.len());
    }
}

/// InnoDB's descent for a split fixes the leaf's left sibling (btr0cur.cc
/// `btr_cur_t::search_leaf`, BTR_MODIFY_TREE → `btr_latch_prev`): a left sibling that
/// left the pool is read back by the split of its neighbour, and by nothing else; a
/// tree without `split_fixes_left_sibling` (PostgreSQL's `_bt_split`) leaves it out.
#[test]
fn a_split_reads_the_left_sibling_only_when_innodb_fixes_it() {
    for fixes in [true, false] {
        let s = storage(256);
        let cfg = BTreeConfig {
            split_fixes_left_sibling: fixes,
            ..BTreeConfig::innodb()
        };
        let t = BTree::create(s.pool().clone(), cfg).unwrap();
        for i in 0..600u32 {
            t.insert(&k(i * 10), &[1u8; 100]).unwrap();
        }
        let ls = leaves(&s, &t);
        assert!(ls.len() >= 4, "{} leaves", ls.len());
        let (left, ref left_keys) = ls[1];
        let (leaf, ref leaf_keys) = ls[2];
        assert!(!left_keys.is_empty());
        let left_id = PageId::new(t.rel(), left);
        s.pool().flush_all().unwrap();
        assert!(s.pool().discard(left_id));
        // Keys between the leaf's own, until the leaf splits; each insert before the
        // split fits in the leaf and leaves the left sibling alone.
        let first = std::str::from_utf8(&leaf_keys[0][1..])
            .unwrap()
            .parse::<u32>()
            .unwrap();
        let splits = t.ops().index_page_splits;
        let mut n = 0;
        while t.ops().index_page_splits == splits {
            assert!(!s.pool().is_resident(left_id), "read before the split");
            t.insert(&k(first + 1 + n * 10), &[2u8; 100]).unwrap();
            n += 1;
            assert!(n < 200, "leaf {leaf} never split");
        }
        assert_eq!(
            s.pool().is_resident(left_id),
            fixes,
            "left sibling {left} of split leaf {leaf}"
        );
        t.verify().unwrap();
    }
}
