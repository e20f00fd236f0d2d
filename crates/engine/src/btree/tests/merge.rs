//! Tests of leaf merges below the merge threshold (`delete.rs`, InnoDB `btr_compress`).

use super::*;

/// A leaf's block and keys, as [`leaves`] lists them.
pub(super) type LeafKeys = (u32, Vec<Vec<u8>>);

/// A tree of 600 ascending keys with 200-byte values (leaves 94 % full) and its leaves.
pub(super) fn merge_fixture(s: &Storage, cfg: BTreeConfig) -> (BTree, Vec<LeafKeys>) {
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

/// The flags of page `block` of `t` as the device holds it (not the pool's copy).
fn flags_on_device(s: &Storage, t: &BTree, block: u32) -> u16 {
    let id = PageId::new(t.rel(), block);
    let mut buf = vec![0u8; s.store().page_size().bytes()];
    s.store().read_page(id, &mut buf).unwrap();
    Node::parse(&buf, id).unwrap().header().flags
}

/// With the doublewrite area (InnoDB), a leaf a merge freed is never written: the page
/// cleaner releases a FREED block without a write (buf0flu.cc `buf_page_t::flush` →
/// `buf_pool_t::release_freed_page`), so the device keeps its last image, a live leaf,
/// and a flush writes only the survivor, the parent and the right neighbour. Under
/// full-page writes the freed page is still written once (`BTree::free_merged`).
#[test]
fn a_freed_leaf_is_not_written_with_the_doublewrite_area() {
    use crate::storage::TornPageProtection;
    for dblwr in [true, false] {
        let mut cfg = StorageConfig::without_background(64);
        if dblwr {
            cfg.torn_page_protection = TornPageProtection::Doublewrite;
        }
        let s = Storage::open(cfg).unwrap();
        assert_eq!(s.pool().has_doublewrite(), dblwr);
        let (t, ls) = merge_fixture(&s, BTreeConfig::innodb());
        let (second, third) = (&ls[1], &ls[2]);
        for key in &second.1[..second.1.len() / 2] {
            assert!(t.delete(key).unwrap());
        }
        s.pool().flush_all().unwrap();
        let mut d = 0;
        while t.ops().index_page_merge_successful == 0 {
            assert!(t.delete(&third.1[d]).unwrap());
            d += 1;
        }
        let written = s.pool().flush_all().unwrap();
        let freed_on_device = flags_on_device(&s, &t, third.0) & node::FLAG_FREED != 0;
        if dblwr {
            assert!(!freed_on_device, "the freed leaf was written");
            assert_eq!(written, 3, "survivor, parent, right neighbour");
        } else {
            assert!(
                freed_on_device,
                "without the skip in redo it is written once"
            );
            assert_eq!(written, 4);
        }
        // The page is reused by the next split, and the tree and redo agree.
        let splits = t.ops().index_page_splits;
        let mut i = 0u32;
        while t.ops().index_page_splits == splits {
            t.insert(&format!("z{i:08}").into_bytes(), &[1u8; 200])
                .unwrap();
            i += 1;
        }
        assert!(leaves(&s, &t).iter().any(|(b, _)| *b == third.0));
        t.verify().unwrap();
        assert_redo_rebuilds(&s, &t);
    }
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
