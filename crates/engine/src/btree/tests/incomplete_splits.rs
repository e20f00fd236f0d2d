//! Tests of finishing incomplete splits at recovery (`recovery.rs`,
//! `BTree::finish_incomplete_splits`).

use super::*;

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
        .map(|r| starts.partition_point(|&l| l <= r.lsn.0))
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
                    let naive = crate::btree::tree::truncated_separator(
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
