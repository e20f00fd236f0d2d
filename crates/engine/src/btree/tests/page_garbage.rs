//! InnoDB's `PAGE_GARBAGE` (`btree::garbage`): the left half of a split keeps the moved
//! entries' space as garbage, inserts reuse it, and once less than a 32nd of the page is
//! free the next insert splits the leaf (btr0cur.cc `btr_cur_optimistic_insert`), where a
//! compact page would still take entries until it is full.

use super::merge::{merge_fixture, LeafKeys};
use super::*;

/// Inserts keys in descending order (each at slot 0 of the leftmost leaf, so that every
/// split halves the leaf) until the tree has split twice; returns the inserts it took and
/// the leftmost leaf's free bytes just before the second split.
fn inserts_until_second_split(page_garbage: bool) -> (u32, usize) {
    let s = storage(64);
    // Halving splits: InnoDB would split a descending run at its insert point
    // (`sequential_split`), leaving nothing to reuse on the left.
    let cfg = BTreeConfig {
        page_garbage,
        sequential_split: false,
        ..innodb_no_merge()
    };
    let t = BTree::create(s.pool().clone(), cfg).unwrap();
    let mut free_before = 0;
    for n in 0..100_000u32 {
        if t.ops().index_page_splits == 1 {
            free_before = leftmost_leaf_free(&s, &t);
        }
        t.insert(&k(1_000_000 - n), b"").unwrap();
        if t.ops().index_page_splits == 2 {
            return (n + 1, free_before);
        }
    }
    panic!("no second split");
}

/// Free bytes of the leftmost leaf, read around the tree's code.
fn leftmost_leaf_free(s: &Storage, t: &BTree) -> usize {
    let id = PageId::new(t.rel(), leaves(s, t)[0].0);
    let g = s.pool().fetch_read(id).unwrap();
    Node::parse(g.data(), id).unwrap().free_bytes()
}

#[test]
fn a_leaf_with_garbage_splits_under_the_reorganize_limit() {
    let (with, free_with) = inserts_until_second_split(true);
    let (without, free_without) = inserts_until_second_split(false);
    let s = storage(4);
    let limit = s.pool().store().page_size().bytes() / 32;
    let need = BTreeConfig::innodb().geometry().space(k(0).len(), 0);
    // Compact: the leaf splits when the entry no longer fits.
    assert!(free_without < need, "{free_without}");
    // With garbage: as soon as the free space is under the limit.
    assert!(
        free_with < limit && free_with + need >= limit,
        "{free_with} / {limit}"
    );
    assert_eq!(
        (without - with) as usize,
        (free_with - free_without) / need,
        "{with} against {without} inserts"
    );
}

/// `merge_fixture`'s leaves (8 KiB pages, 94 % full) with a merge threshold of 45 %: a
/// leaf crosses it at 17 entries, which fit into a page created by a split (19 entries
/// and the rest of the page contiguous). Splits halve the leaf: the tests insert ascending
/// runs, which InnoDB would split at the insert point (`sequential_split`).
fn merge_fixture_45(s: &Storage) -> (BTree, Vec<LeafKeys>) {
    let cfg = BTreeConfig {
        merge_threshold_pct: Some(45),
        sequential_split: false,
        ..BTreeConfig::innodb()
    };
    merge_fixture(s, cfg)
}

/// The keys of leaf `block`, read around the tree's code.
fn keys_of_leaf(s: &Storage, t: &BTree, block: u32) -> Vec<Vec<u8>> {
    leaves(s, t)
        .into_iter()
        .find(|(b, _)| *b == block)
        .map(|(_, keys)| keys)
        .unwrap_or_default()
}

/// A leaf merged into its left sibling, whose free space is the garbage of the entries
/// deleted from it: InnoDB reorganizes that page first (btr0btr.cc
/// `btr_can_merge_with_page`: the merged records exceed `page_get_max_insert_size`), one
/// `index_page_reorg_attempts`, and the merged page has no garbage left.
#[test]
fn a_merge_into_a_page_without_contiguous_room_reorganizes_it() {
    let s = storage(64);
    let (t, ls) = merge_fixture_45(&s);
    let (second, third) = (&ls[1], &ls[2]);
    for key in &second.1[..second.1.len() / 2] {
        assert!(t.delete(key).unwrap());
    }
    assert!(t.leaf_garbage(second.0) > 0);
    let mut d = 0;
    while t.ops().index_page_merge_successful == 0 {
        assert!(t.delete(&third.1[d]).unwrap());
        d += 1;
    }
    let ops = t.ops();
    assert_eq!(ops.index_page_reorg_attempts, 1, "{ops:?}");
    assert_eq!(t.leaf_garbage(second.0), 0);
    t.verify().unwrap();
}

/// InnoDB moves a leaf whose left sibling is full into its right sibling (btr0btr.cc
/// `btr_compress`), so the right sibling's free space decides the reorganization: here
/// the right half of a split, compact, has room for the leaf's entries and is not
/// reorganized, although the leaf itself (the split's left half, its free space the
/// moved half's garbage) could not have taken the right sibling's entries without one.
#[test]
fn a_merge_into_the_right_sibling_reorganizes_as_that_page_would() {
    let s = storage(64);
    let (t, ls) = merge_fixture_45(&s);
    let (x, first) = (ls[2].0, ls[2].1[0].clone());
    // Leaf 2 splits: the new right page holds half its entries, compact.
    let splits = t.ops().index_page_splits;
    let mut n = 0u32;
    while t.ops().index_page_splits == splits {
        let key = [first.as_slice(), format!("a{n:03}").as_bytes()].concat();
        t.insert(&key, &[2u8; 200]).unwrap();
        n += 1;
    }
    let order: Vec<u32> = leaves(&s, &t).iter().map(|(b, _)| *b).collect();
    let r = order[order.iter().position(|b| *b == x).unwrap() + 1];
    // The left half takes entries back to 30 (from its garbage), the right half is
    // thinned to 8 entries: neither can merge with the other.
    while keys_of_leaf(&s, &t, x).len() < 30 {
        let key = [first.as_slice(), format!("b{n:03}").as_bytes()].concat();
        t.insert(&key, &[3u8; 200]).unwrap();
        n += 1;
    }
    let right_keys = keys_of_leaf(&s, &t, r);
    for key in &right_keys[..right_keys.len() - 8] {
        assert!(t.delete(key).unwrap());
    }
    let before = t.ops();
    assert_eq!(before.index_page_merge_successful, 0, "{before:?}");
    assert!(t.leaf_garbage(x) > 0 && t.leaf_garbage(r) > 0);
    // Leaf `x` falls below the threshold: its left sibling is full, so it merges with `r`.
    let own = keys_of_leaf(&s, &t, x);
    let mut d = 0;
    while t.ops().index_page_merge_successful == 0 {
        assert!(t.delete(&own[d]).unwrap());
        d += 1;
    }
    let now: Vec<u32> = leaves(&s, &t).iter().map(|(b, _)| *b).collect();
    assert!(now.contains(&r) && !now.contains(&x), "{now:?}");
    let ops = t.ops();
    assert_eq!(
        ops.index_page_reorg_attempts, before.index_page_reorg_attempts,
        "the right sibling had contiguous room: {ops:?}"
    );
    // Its garbage took the first of the moved entries.
    assert_eq!(t.leaf_garbage(r), 0);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}
