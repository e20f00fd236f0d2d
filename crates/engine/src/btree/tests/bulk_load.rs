//! Tests of the sorted bulk load (`build.rs`, nbtsort.c).

use super::*;

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
    shuffle(&mut order, 0x9E37_79B9_7F4A_7C15);
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
