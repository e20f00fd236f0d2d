//! InnoDB's `PAGE_GARBAGE` (`btree::garbage`): the left half of a split keeps the moved
//! entries' space as garbage, inserts reuse it, and once less than a 32nd of the page is
//! free the next insert splits the leaf (btr0cur.cc `btr_cur_optimistic_insert`), where a
//! compact page would still take entries until it is full.

use super::*;

/// Inserts keys in descending order (each at slot 0 of the leftmost leaf, so that every
/// split halves the leaf) until the tree has split twice; returns the inserts it took and
/// the leftmost leaf's free bytes just before the second split.
fn inserts_until_second_split(page_garbage: bool) -> (u32, usize) {
    let s = storage(64);
    let cfg = BTreeConfig {
        page_garbage,
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
    let need = BTreeConfig::innodb().geometry().space(k(0).len());
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
