//! Tests of descents and scans (`search.rs`): scans over empty leaves in both directions,
//! and descents from the cached root.

use super::*;

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
