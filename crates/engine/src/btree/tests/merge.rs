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

/// The blocks of the one `code` record written since `from`, with their will-init flags.
fn merge_record_blocks(s: &Storage, from: crate::wal::Lsn, code: u8) -> Vec<(u32, bool)> {
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(from).unwrap();
    let merges: Vec<_> = recs
        .iter()
        .filter(|r| r.rmgr == rmgr::BTREE && (r.info == info::MERGE || r.info == info::MERGE_RIGHT))
        .collect();
    assert_eq!(merges.len(), 1, "one merge record");
    assert_eq!(merges[0].info, code);
    merges[0]
        .blocks
        .iter()
        .map(|b| (b.page.block, b.will_init))
        .collect()
}

/// The left and right links of page `block` of `t`.
fn links(s: &Storage, t: &BTree, block: u32) -> (u32, u32) {
    let id = PageId::new(t.rel(), block);
    let g = s.pool().fetch_read(id).unwrap();
    let h = Node::parse(g.data(), id).unwrap().header();
    (h.left, h.right)
}

/// Every key of `want` is found, in both scan directions and one by one.
fn assert_keys(t: &BTree, want: &[Vec<u8>]) {
    assert_eq!(keys_of(t), want);
    let mut bwd = keys_in(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Backward,
    );
    bwd.reverse();
    assert_eq!(bwd, want);
    for key in want {
        assert!(t.get(key).unwrap().is_some());
    }
}

/// InnoDB's `btr_compress` with `is_left` false: a leaf that does not fit into its left
/// sibling moves into its right one, which survives with the leaf's low fence; the leaf
/// is freed and its left neighbour linked to the survivor (MERGE_RIGHT).
#[test]
fn a_leaf_whose_left_sibling_is_full_moves_into_its_right_sibling() {
    let s = storage(64);
    let (t, ls) = merge_fixture(&s, BTreeConfig::innodb());
    // Leaf 2 falls below the threshold while leaf 1 is full and leaf 3 is a third full:
    // leaf 2 moves into leaf 3.
    let mut gone: Vec<Vec<u8>> = ls[3].1[..ls[3].1.len() * 2 / 3].to_vec();
    for key in &gone {
        assert!(t.delete(key).unwrap());
    }
    assert_eq!(t.ops().index_page_merge_successful, 0, "leaf 4 is full");
    let from = s.wal().insert_lsn();
    let mut d = 0;
    while t.ops().index_page_merge_successful == 0 {
        assert!(t.delete(&ls[2].1[d]).unwrap());
        d += 1;
    }
    gone.extend_from_slice(&ls[2].1[..d]);
    let root = root_of(&s, &t);
    assert_eq!(
        merge_record_blocks(&s, from, info::MERGE_RIGHT),
        [
            (ls[3].0, false),
            (ls[2].0, true),
            (root, false),
            (ls[1].0, false)
        ],
        "survivor (the right sibling), freed leaf, parent, the freed leaf's left neighbour"
    );
    let now: Vec<u32> = leaves(&s, &t).iter().map(|(b, _)| *b).collect();
    assert!(
        now.contains(&ls[3].0) && !now.contains(&ls[2].0),
        "leaf 2 freed, leaf 3 kept"
    );
    assert_eq!(links(&s, &t, ls[1].0).1, ls[3].0);
    assert_eq!(links(&s, &t, ls[3].0).0, ls[1].0);
    t.verify().unwrap();
    let mut want: Vec<Vec<u8>> = (0..600u32).map(k).collect();
    want.retain(|key| !gone.contains(key));
    assert_keys(&t, &want);
    assert_redo_rebuilds(&s, &t);
}

/// The root of a two-level tree (the parent of every leaf).
fn root_of(s: &Storage, t: &BTree) -> u32 {
    let meta_id = PageId::new(t.rel(), 0);
    let meta = Meta::read(s.pool().fetch_read(meta_id).unwrap().data(), meta_id).unwrap();
    assert_eq!(meta.height, 2, "the leaves share the root as parent");
    meta.root
}

/// The level-1 pages of `t`, left to right, each with its children.
fn parents(s: &Storage, t: &BTree) -> Vec<(u32, Vec<u32>)> {
    walk_level(s, t, 1, |n| {
        (0..n.len()).map(|i| n.child(i).unwrap()).collect()
    })
}

/// A parent's first leaf has its left neighbour under another parent, which precedes the
/// parent in the lock order: the merge into the right sibling relinks that neighbour only
/// when a try-latch gets it, and otherwise does not happen.
#[test]
fn a_first_child_moves_into_its_right_sibling_only_with_its_left_neighbour_latched() {
    let s = storage(96);
    let cfg = BTreeConfig {
        suffix_truncation: false,
        ..BTreeConfig::innodb()
    };
    let t = BTree::create(s.pool().clone(), cfg).unwrap();
    // 600-byte keys: a dozen per page, at both levels.
    let key = |i: u32| {
        let mut b = k(i);
        b.resize(600, b'.');
        b
    };
    let n = 400u32;
    for i in 0..n {
        t.insert(&key(i), &[]).unwrap();
    }
    let ps = parents(&s, &t);
    assert!(ps.len() >= 2, "{} level-1 pages", ps.len());
    let (p2, kids) = &ps[1];
    let (ll, l, r) = (*ps[0].1.last().unwrap(), kids[0], kids[1]);
    let ls = leaves(&s, &t);
    let keys_of_leaf = |b: u32| ls.iter().find(|(x, _)| *x == b).unwrap().1.clone();
    let (lk, rk) = (keys_of_leaf(l), keys_of_leaf(r));
    // Thin the right sibling so that the leaf will fit into it.
    let mut gone: Vec<Vec<u8>> = rk[..rk.len() / 2].to_vec();
    for key in &gone {
        assert!(t.delete(key).unwrap());
    }
    let ops = t.ops();
    // With the left neighbour held by a reader, the leaf falls below the threshold and
    // stays.
    let held = s.pool().fetch_read(PageId::new(t.rel(), ll)).unwrap();
    let mut d = 0;
    while t.ops().index_page_merge_attempts == ops.index_page_merge_attempts {
        assert!(t.delete(&lk[d]).unwrap());
        d += 1;
    }
    assert_eq!(
        t.ops().index_page_merge_successful,
        ops.index_page_merge_successful,
        "merged without the left neighbour's latch"
    );
    drop(held);
    // Released, the next delete merges the leaf into its right sibling.
    let from = s.wal().insert_lsn();
    assert!(t.delete(&lk[d]).unwrap());
    d += 1;
    gone.extend_from_slice(&lk[..d]);
    assert_eq!(
        t.ops().index_page_merge_successful,
        ops.index_page_merge_successful + 1
    );
    assert_eq!(
        merge_record_blocks(&s, from, info::MERGE_RIGHT),
        [(r, false), (l, true), (*p2, false), (ll, false)],
        "survivor, freed leaf, parent, the left neighbour under the other parent"
    );
    assert_eq!(links(&s, &t, ll).1, r);
    assert_eq!(links(&s, &t, r).0, ll);
    let after = parents(&s, &t);
    assert_eq!(
        after[1].1[0], r,
        "the parent's first downlink names the survivor"
    );
    assert_eq!(after[1].1.len(), kids.len() - 1);
    t.verify().unwrap();
    let mut want: Vec<Vec<u8>> = (0..n).map(key).collect();
    want.retain(|x| !gone.contains(x));
    assert_keys(&t, &want);
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
    // Both kinds ran among the scans: into the left sibling and into the right one.
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let count = |code| {
        recs.iter()
            .filter(|r| r.rmgr == rmgr::BTREE && r.info == code)
            .count()
    };
    let (left, right) = (count(info::MERGE), count(info::MERGE_RIGHT));
    assert!(left > 0 && right > 0, "{left} MERGE, {right} MERGE_RIGHT");
    assert_eq!((left + right) as u64, ops.index_page_merge_successful);
    let st = t.verify().unwrap();
    assert!(st.leaf_pages < 20, "{st:?}");
    assert_redo_rebuilds(&s, &t);
}

/// `delete_where` tests the value under the leaf latch and deletes in the same descent
/// (InnoDB purge's `row_purge_remove_sec_if_poss_leaf`): one root-to-leaf path of page
/// accesses, where a lookup and a delete take two.
#[test]
fn delete_where_deletes_only_a_matching_value_in_one_descent() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), innodb_no_merge()).unwrap();
    for i in 0..600u32 {
        t.insert(&k(i), if i % 2 == 0 { b"d" } else { b"l" })
            .unwrap();
    }
    let height = u64::from(t.stats().unwrap().height);
    assert!(height >= 2);
    let accesses = || {
        let c = s.snapshot().counters.total();
        c.buffer_hits + c.buffer_misses
    };
    let a0 = accesses();
    assert!(t.delete_where(&k(10), |v| v == b"d").unwrap());
    assert_eq!(accesses() - a0, height, "one descent");
    assert!(t.get(&k(10)).unwrap().is_none());
    // The value does not match: the entry stays.
    assert!(!t.delete_where(&k(11), |v| v == b"d").unwrap());
    assert_eq!(t.get(&k(11)).unwrap().as_deref(), Some(&b"l"[..]));
    // No such entry.
    assert!(!t.delete_where(&k(10), |_| true).unwrap());
    // A lookup, then a delete: two descents.
    let a1 = accesses();
    assert!(t.get(&k(12)).unwrap().is_some());
    assert!(t.delete(&k(12)).unwrap());
    assert_eq!(accesses() - a1, 2 * height);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}
