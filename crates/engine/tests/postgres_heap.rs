//! The postgres preset's heap: HOT and non-HOT updates, pruning, vacuum, fillfactor.

mod common;
use common::*;
use mvcclab_engine::btree::{BTree, BTreeConfig};
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::{DesignConfig, TableLayout};
use mvcclab_engine::heap::{raw, TableStats};
use mvcclab_engine::page::PageId;

fn entries(db: &Database, rel: u32) -> u64 {
    BTree::open(db.storage().pool().clone(), rel, BTreeConfig::postgres())
        .unwrap()
        .stats()
        .unwrap()
        .entries
}

fn index_entries(db: &Database, t: TableId) -> (u64, u64) {
    let r = db.relations(t).unwrap();
    let pk = r.primary_key.expect("a primary-key index");
    (entries(db, pk), entries(db, r.indexes[0]))
}

fn sb_row(id: i32, k: i32, tag: u64) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::Integer(k),
        Value::Text(format!("c-{tag:0>20}")),
        Value::Text("pad".into()),
    ]
}

fn load(db: &Database, name: &str, rows: i32) -> TableId {
    let t = db.create_table(sbtest_def(name)).unwrap();
    let mut tx = db.begin();
    for id in 0..rows {
        tx.insert(t, sb_row(id, id, 0)).unwrap();
    }
    tx.commit().unwrap();
    t
}

fn update(db: &Database, t: TableId, id: i32, set: &[Assign]) {
    let mut tx = db.begin();
    assert!(tx.update(t, &[Value::Integer(id)], set).unwrap());
    tx.commit().unwrap();
}

#[test]
fn non_indexed_update_with_room_is_hot_and_adds_no_index_entry() {
    let db = open_db(
        DesignConfig {
            fillfactor: 80,
            ..DesignConfig::postgres()
        },
        256,
    );
    let t = load(&db, "sbtest1", 100);
    let before = (db.table_stats(t).unwrap(), index_entries(&db, t));
    update(&db, t, 5, &[Assign::Set(2, Value::Text("changed".into()))]);
    let after = (db.table_stats(t).unwrap(), index_entries(&db, t));
    assert_eq!(after.0.n_tup_hot_upd, before.0.n_tup_hot_upd + 1);
    assert_eq!(
        after.0.index_entries_inserted,
        before.0.index_entries_inserted
    );
    assert_eq!(after.1, before.1, "no index entry added");
}

#[test]
fn indexed_update_adds_one_entry_to_every_index() {
    let db = open_db(
        DesignConfig {
            fillfactor: 80,
            ..DesignConfig::postgres()
        },
        256,
    );
    let t = load(&db, "sbtest1", 100);
    let (pk0, k0) = index_entries(&db, t);
    update(&db, t, 5, &[Assign::Add(1, 1)]); // k = k + 1: k is indexed
    let s = db.table_stats(t).unwrap();
    assert_eq!((s.n_tup_upd, s.n_tup_hot_upd), (1, 0));
    assert_eq!(
        index_entries(&db, t),
        (pk0 + 1, k0 + 1),
        "an entry in the primary key and in k_1"
    );
}

#[test]
fn update_on_a_full_page_is_not_hot_even_for_unindexed_columns() {
    let db = open_db(DesignConfig::postgres(), 256); // fillfactor 100: pages fill up
    let t = load(&db, "sbtest1", 200);
    assert!(db.table_pages(t).unwrap().0 >= 2);
    let (pk0, k0) = index_entries(&db, t);
    update(&db, t, 0, &[Assign::Set(2, Value::Text("x".into()))]); // row 0 lives on full page 0
    let s = db.table_stats(t).unwrap();
    assert_eq!(
        (s.n_tup_upd, s.n_tup_hot_upd),
        (1, 0),
        "no room on the page: not HOT"
    );
    assert_eq!(index_entries(&db, t), (pk0 + 1, k0 + 1));
}

#[test]
fn pruning_keeps_a_steady_update_of_the_same_rows_hot_and_the_heap_stops_growing() {
    let db = open_db(DesignConfig::postgres(), 512);
    let t = load(&db, "sbtest1", 2000);
    let mut x: u64 = 42;
    let mut round = |n: usize| {
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = ((x >> 33) % 2000) as i32;
            update(
                &db,
                t,
                id,
                &[Assign::Set(2, Value::Text(format!("c-{i:0>20}")))],
            );
        }
    };
    round(6000);
    let s1 = db.table_stats(t).unwrap();
    let pages1 = db.table_pages(t).unwrap().0;
    round(6000);
    let s2 = db.table_stats(t).unwrap();
    let pages2 = db.table_pages(t).unwrap().0;
    let hot_share =
        (s2.n_tup_hot_upd - s1.n_tup_hot_upd) as f64 / (s2.n_tup_upd - s1.n_tup_upd) as f64;
    assert!(hot_share > 0.95, "steady state HOT share {hot_share:.3}");
    assert!(s2.pages_pruned > 0);
    assert!(
        pages2 <= pages1 + pages1 / 50,
        "heap grew from {pages1} to {pages2} pages"
    );
}

#[test]
fn vacuum_removes_dead_tuples_and_their_index_entries_and_growth_stops() {
    let db = open_db(DesignConfig::postgres(), 512);
    let t = load(&db, "sbtest1", 1000);
    let mut pages = Vec::new();
    for round in 0..6 {
        // Non-HOT: k is indexed, so every update adds entries and leaves a dead version.
        for id in 0..1000 {
            update(
                &db,
                t,
                id,
                &[Assign::Set(1, Value::Integer(round * 10_000 + id))],
            );
        }
        let dead_before = db.table_stats(t).unwrap().n_dead_tup;
        assert!(dead_before > 0);
        let rep = db.gc(t).unwrap().vacuum.unwrap();
        assert!(rep.index_entries_removed > 0, "{rep:?}");
        assert_eq!(db.table_stats(t).unwrap().n_dead_tup, 0);
        assert_eq!(rep.live_tuples, 1000);
        assert_eq!(
            index_entries(&db, t),
            (1000, 1000),
            "one entry per live row in every index after vacuum"
        );
        pages.push(db.table_pages(t).unwrap().0);
    }
    assert!(
        pages[5] <= pages[2],
        "heap keeps growing despite vacuum: {pages:?}"
    );
    let mut tx = db.begin();
    let rows = tx
        .get_by_index(t, 0, &[Value::Integer(50_000 + 7)])
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], Value::Integer(7));
}

#[test]
fn fillfactor_75_leaves_a_quarter_of_each_page_free_after_a_load() {
    let db = open_db(
        DesignConfig {
            fillfactor: 75,
            ..DesignConfig::postgres()
        },
        512,
    );
    let t = load(&db, "sbtest1", 3000);
    let rel = db.relations(t).unwrap().table;
    let n = db.table_pages(t).unwrap().0 as u32;
    assert!(n > 5);
    for b in 0..n {
        let g = db.storage().pool().fetch_read(PageId::new(rel, b)).unwrap();
        let free = raw::heap_free_space(g.data());
        assert!(free >= 8192 / 4, "page {b} has only {free} bytes free");
        if b + 1 < n {
            assert!(
                free < 8192 / 4 + 300,
                "page {b} was left with {free} bytes: it should have taken another row"
            );
        }
    }
}

#[test]
fn hint_bits_are_set_by_the_first_reader_and_dirty_the_page() {
    let db = open_db(DesignConfig::postgres(), 256);
    let t = load(&db, "sbtest1", 100);
    db.storage().checkpoint().unwrap();
    assert_eq!(db.storage().pool().state().dirty_pages, 0);
    let mut tx = db.begin();
    for id in 0..100 {
        tx.get(t, &[Value::Integer(id)]).unwrap().unwrap();
    }
    tx.commit().unwrap();
    let s = db.table_stats(t).unwrap();
    assert_eq!(s.hint_bit_writes, 100, "each tuple's xmin hint set once");
    assert!(
        db.storage().pool().state().dirty_pages > 0,
        "hint bits dirty pages without WAL"
    );
}

#[test]
fn statio_counts_heap_and_index_blocks_hit_and_read() {
    let db = open_db(DesignConfig::postgres(), 256);
    let t = load(&db, "sbtest1", 500);
    let before = db.table_stats(t).unwrap();
    let mut tx = db.begin();
    for id in (0..500).step_by(7) {
        tx.get(t, &[Value::Integer(id)]).unwrap().unwrap();
    }
    tx.commit().unwrap();
    let after = db.table_stats(t).unwrap();
    let heap = (after.heap_blks_hit + after.heap_blks_read)
        - (before.heap_blks_hit + before.heap_blks_read);
    let idx =
        (after.idx_blks_hit + after.idx_blks_read) - (before.idx_blks_hit + before.idx_blks_read);
    assert!(heap >= 72, "one heap page per lookup at least: {heap}");
    assert!(
        idx >= 72 * 2,
        "a root and a leaf per lookup at least: {idx}"
    );
}

/// Which autovacuum rule a test exercises; [`autovacuum_db`] puts the others out of reach.
#[derive(PartialEq)]
enum Rule {
    DeadTuples,
    Analyze,
}

/// A postgres database whose autovacuum worker visits every 10 ms and applies only `rule`.
/// Fillfactor 50 keeps every page above the pruning trigger (free < max(50 % reserve,
/// BLCKSZ/10)), so on-access pruning does not lower n_dead_tup behind the test's back.
fn autovacuum_db(rule: Rule) -> Database {
    use mvcclab_engine::db::DatabaseConfig;
    let mut cfg = DatabaseConfig::new(DesignConfig {
        fillfactor: 50,
        ..DesignConfig::postgres()
    });
    cfg.storage = mvcclab_engine::StorageConfig::without_background(256);
    cfg.vacuum.autovacuum = true;
    cfg.vacuum.naptime_ms = 10;
    cfg.vacuum.insert_threshold = u64::MAX / 2;
    if rule != Rule::DeadTuples {
        cfg.vacuum.threshold = u64::MAX / 2;
    }
    if rule != Rule::Analyze {
        cfg.vacuum.analyze_threshold = u64::MAX / 2;
    }
    Database::open(cfg).unwrap()
}

/// Deletes the rows `ids` in one transaction.
fn delete_ids(db: &Database, t: TableId, ids: std::ops::Range<i32>) {
    let mut tx = db.begin();
    for id in ids {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
}

/// Waits (up to 20 s) until `done` holds for the table's counters.
fn wait_for_stats(db: &Database, t: TableId, done: impl Fn(&TableStats) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let s = db.table_stats(t).unwrap();
        if done(&s) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting: {s:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn autovacuum_fires_by_the_threshold_rule() {
    let db = autovacuum_db(Rule::DeadTuples);
    let t = load(&db, "sbtest1", 500);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        db.table_stats(t).unwrap().autovacuum_count,
        0,
        "0 dead tuples: below 50 + 0.2 × 500"
    );
    // 100 deleted: 100 dead ≤ 50 + 0.2 × 400 live = 130: no vacuum.
    delete_ids(&db, t, 0..100);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        db.table_stats(t).unwrap().autovacuum_count,
        0,
        "100 dead ≤ 130"
    );
    // 30 more: 130 dead > 50 + 0.2 × 370 = 124: vacuum.
    delete_ids(&db, t, 100..130);
    wait_for_stats(&db, t, |s| s.autovacuum_count > 0);
    let s = db.table_stats(t).unwrap();
    assert_eq!((s.n_dead_tup, s.n_live_tup), (0, 370));
    assert!(
        db.storage()
            .snapshot()
            .counters
            .cause(mvcclab_engine::stats::Cause::Vacuum)
            .buffer_hits
            > 0,
        "vacuum's work is counted to its cause"
    );
}

/// Regression (found by the mvcc_ops benchmark): long runs of HOT then non-HOT updates of
/// random rows without vacuum.
#[test]
fn long_mixed_update_runs_never_lose_track_of_free_space() {
    let db = open_db(DesignConfig::postgres(), 2048);
    let t = load(&db, "sbtest1", 3000);
    let mut x: u64 = 7;
    for phase in 0..2 {
        for i in 0..15_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = ((x >> 33) % 3000) as i32;
            let set = if phase == 0 {
                Assign::Set(2, Value::Text(format!("{i:0>119}")))
            } else {
                Assign::Add(1, 1)
            };
            let mut tx = db.begin();
            assert!(tx.update(t, &[Value::Integer(id)], &[set]).unwrap());
            tx.commit().unwrap();
        }
    }
    let mut tx = db.begin();
    assert_eq!(
        tx.scan(
            t,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            mvcclab_engine::btree::ScanDirection::Forward,
            usize::MAX
        )
        .unwrap()
        .len(),
        3000
    );
}

/// Regression: without vacuum, dead line pointers pile up on a page to
/// MaxHeapTuplesPerPage; a stale PD_HAS_FREE_LINES hint must not make the page look roomy.
#[test]
fn a_page_full_of_dead_line_pointers_sends_updates_elsewhere() {
    let db = open_db(DesignConfig::postgres(), 256);
    let t = load(&db, "sbtest1", 30); // one page
                                      // HOT updates leave unused line pointers after pruning; non-HOT ones leave dead roots.
    for i in 0..6000 {
        let set = if i % 3 == 0 {
            Assign::Add(1, 1)
        } else {
            Assign::Set(2, Value::Text(format!("{i}")))
        };
        let mut tx = db.begin();
        assert!(
            tx.update(t, &[Value::Integer(i % 30)], &[set]).unwrap(),
            "update {i}"
        );
        tx.commit().unwrap();
    }
    let mut tx = db.begin();
    // Row 0 is updated at i = 0, 30, 60, ...: all multiples of 3, so all increments.
    assert_eq!(
        tx.get(t, &[Value::Integer(0)]).unwrap().unwrap()[1],
        Value::Integer(200)
    );
}

#[test]
fn garbage_collection_off_keeps_every_version() {
    use mvcclab_engine::design::GarbageCollection;
    let db = open_db(
        DesignConfig {
            garbage_collection: GarbageCollection::Off,
            ..DesignConfig::postgres()
        },
        256,
    );
    let t = load(&db, "sbtest1", 30);
    for i in 0..300 {
        update(
            &db,
            t,
            i % 30,
            &[Assign::Set(2, Value::Text(format!("{i}")))],
        );
    }
    let s = db.table_stats(t).unwrap();
    assert_eq!(s.pages_pruned, 0);
    assert!(
        db.table_pages(t).unwrap().0 >= 8,
        "300 versions of ~220 bytes need 8+ pages"
    );
    // Reads walk the chains: more versions examined than rows returned.
    let before = db.table_stats(t).unwrap().versions_traversed;
    let mut tx = db.begin();
    for id in 0..30 {
        tx.get(t, &[Value::Integer(id)]).unwrap().unwrap();
    }
    let walked = db.table_stats(t).unwrap().versions_traversed - before;
    assert!(walked > 30, "{walked}");
}

#[test]
fn lookups_mark_index_entries_of_dead_versions_and_later_lookups_skip_them() {
    // Returns (versions a read of row 5 walks after 20 non-HOT updates, entries marked).
    let run = |design: DesignConfig| {
        let db = open_db(design, 256);
        let t = load(&db, "sbtest1", 100);
        // k is indexed: every update is non-HOT and adds a primary-key entry for id 5;
        // each update's own lookup (and unique check) walks the entries before it.
        for _ in 0..20 {
            update(&db, t, 5, &[Assign::Add(1, 1)]);
        }
        let before = db.table_stats(t).unwrap();
        let mut tx = db.begin();
        assert!(tx.get(t, &[Value::Integer(5)]).unwrap().is_some());
        tx.commit().unwrap();
        let after = db.table_stats(t).unwrap();
        (
            after.versions_traversed - before.versions_traversed,
            after.index_items_killed,
        )
    };
    let (walked, killed) = run(DesignConfig::postgres());
    assert!(killed >= 19, "{killed} entries marked");
    assert!(walked <= 2, "the read walked {walked} versions");
    let (walked_off, killed_off) = run(DesignConfig {
        garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
        ..DesignConfig::postgres()
    });
    assert_eq!(
        (walked_off, killed_off),
        (21, 0),
        "no marks without cleanup"
    );
}

#[test]
fn updates_that_keep_the_primary_key_delete_old_entries_bottom_up_instead_of_splitting() {
    let run = |design: DesignConfig| {
        let db = open_db(design, 512);
        let t = load(&db, "sbtest1", 300);
        for round in 0..30 {
            for id in 0..300 {
                update(
                    &db,
                    t,
                    id,
                    &[Assign::Set(1, Value::Integer(round * 1000 + id))],
                );
            }
        }
        let r = db.relations(t).unwrap();
        let pk = BTree::open(
            db.storage().pool().clone(),
            r.primary_key.expect("a primary-key index"),
            BTreeConfig::postgres(),
        )
        .unwrap()
        .verify()
        .unwrap();
        (pk, db.table_stats(t).unwrap())
    };
    let (on, stats) = run(DesignConfig::postgres());
    let (off, _) = run(DesignConfig {
        garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
        ..DesignConfig::postgres()
    });
    assert!(stats.index_bottom_up_passes > 0, "{stats:?}");
    assert!(
        stats.index_bottom_up_deleted + stats.index_simple_deleted > 5000,
        "{stats:?}"
    );
    assert_eq!(
        off.entries,
        300 * 31,
        "without cleanup every version keeps its entry"
    );
    assert!(
        on.leaf_pages * 4 < off.leaf_pages,
        "with deletion {} leaves, without {}",
        on.leaf_pages,
        off.leaf_pages
    );
}

/// The `k` index of a table with a low-cardinality `k`: leaf pages and posting entries.
fn k_index_stats(db: &Database, t: TableId) -> mvcclab_engine::btree::BTreeStats {
    let r = db.relations(t).unwrap();
    BTree::open(
        db.storage().pool().clone(),
        r.indexes[0],
        BTreeConfig::postgres(),
    )
    .unwrap()
    .verify()
    .unwrap()
}

#[test]
fn deduplication_shrinks_a_low_cardinality_index_and_queries_stay_right_through_vacuum() {
    let run = |dedup: bool| {
        let db = open_db(
            DesignConfig {
                btree_deduplication: dedup,
                ..DesignConfig::postgres()
            },
            1024,
        );
        let t = db.create_table(sbtest_def("sbtest1")).unwrap();
        // k = id % 8: 8 index keys, 6000 rows.
        let mut model: std::collections::BTreeMap<i32, i32> = Default::default();
        let mut tx = db.begin();
        for id in 0..6000 {
            tx.insert(t, sb_row(id, id % 8, 0)).unwrap();
            model.insert(id, id % 8);
        }
        tx.commit().unwrap();
        let loaded = k_index_stats(&db, t);
        // Updates that move rows between k values, deletes, vacuum; queries against the
        // model after each round.
        let mut x = 99u64;
        for round in 0..4 {
            let mut tx = db.begin();
            for _ in 0..800 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = (x % 6000) as i32;
                if !model.contains_key(&id) {
                    continue;
                }
                if x.is_multiple_of(5) {
                    assert!(tx.delete(t, &[Value::Integer(id)]).unwrap());
                    model.remove(&id);
                } else {
                    let k = ((x >> 8) % 8) as i32;
                    assert!(tx
                        .update(
                            t,
                            &[Value::Integer(id)],
                            &[Assign::Set(1, Value::Integer(k))]
                        )
                        .unwrap());
                    model.insert(id, k);
                }
            }
            tx.commit().unwrap();
            if round % 2 == 1 {
                db.gc(t).unwrap();
            }
            let mut tx = db.begin();
            for k in 0..8 {
                let got = common::ids_by_index(&mut tx, t, 0, &[Value::Integer(k)]);
                let want: Vec<i32> = model
                    .iter()
                    .filter(|(_, &mk)| mk == k)
                    .map(|(&id, _)| id)
                    .collect();
                assert_eq!(got, want, "k = {k}, round {round}, dedup {dedup}");
            }
            tx.commit().unwrap();
        }
        db.gc(t).unwrap();
        let after = k_index_stats(&db, t);
        assert_eq!(
            after.entries as usize,
            model.len(),
            "one entry per live row"
        );
        (loaded, after, db.table_stats(t).unwrap())
    };
    let (on, on_after, stats) = run(true);
    let (off, off_after, off_stats) = run(false);
    assert!(on.posting_entries > 0, "{on:?}");
    assert_eq!(off.posting_entries + off_after.posting_entries, 0);
    assert!(stats.index_dedup_passes > 0, "{stats:?}");
    assert_eq!(off_stats.index_dedup_passes, 0);
    assert!(
        on.leaf_pages * 5 < off.leaf_pages * 2,
        "after the load: with deduplication {} leaves, without {}",
        on.leaf_pages,
        off.leaf_pages
    );
    assert!(
        on_after.leaf_pages < off_after.leaf_pages,
        "after updates and vacuum: with {} leaves, without {}",
        on_after.leaf_pages,
        off_after.leaf_pages
    );
}

/// On-access pruning reports only the tuples it reclaimed to `n_dead_tup`: deleted rows
/// whose line pointers it leaves LP_DEAD stay counted until vacuum, dead HOT versions it
/// frees do not (pruneheap.c `heap_page_prune_opt`: `ndeleted - nnewlpdead`).
#[test]
fn pruning_leaves_lp_dead_tuples_counted_as_dead_until_vacuum() {
    let db = open_db(DesignConfig::postgres(), 512);
    let t = load(&db, "sbtest1", 2000);
    // Rows go to pages in id order: more than 20 per page puts ids 0..=10 on page 0.
    let pages = db.table_pages(t).unwrap().0;
    assert!(2000 / pages > 20, "{pages} pages");
    let on_page: Vec<i32> = (0..=10).collect();
    // Ten rows deleted: ten dead tuples on page 0, which is full.
    delete_ids(&db, t, on_page[1]..on_page[10] + 1);
    assert_eq!(db.table_stats(t).unwrap().n_dead_tup, 10);
    let pruned0 = db.table_stats(t).unwrap().pages_pruned;
    // Reading the page prunes it (free space below BLCKSZ/10, prunable): the ten deleted
    // rows' line pointers become LP_DEAD, and they stay dead tuples.
    let mut tx = db.begin();
    assert!(tx.get(t, &[Value::Integer(on_page[0])]).unwrap().is_some());
    tx.commit().unwrap();
    let s = db.table_stats(t).unwrap();
    assert_eq!(s.pages_pruned, pruned0 + 1, "{s:?}");
    assert_eq!(s.n_dead_tup, 10, "LP_DEAD items still need vacuum: {s:?}");
    db.gc(t).unwrap();
    assert_eq!(db.table_stats(t).unwrap().n_dead_tup, 0);
}

/// VACUUM reads the heap through a ring (vacuum.c, `BAS_VACUUM`): a vacuum of a table five
/// times the size of the pool leaves the pages a reader was using resident (through the
/// clock sweep alone, its misses would sweep them out).
#[test]
fn vacuum_reads_through_a_ring_and_keeps_the_working_set() {
    let db = open_db(DesignConfig::postgres(), 128);
    let t = load(&db, "sbtest1", 30_000);
    let pages = db.table_pages(t).unwrap().0;
    assert!(pages > 5 * 128, "{pages} heap pages");
    let reads = || {
        let s = db.table_stats(t).unwrap();
        s.heap_blks_read + s.idx_blks_read
    };
    let lookups = || {
        let mut tx = db.begin();
        for id in 0..50 {
            assert!(tx.get(t, &[Value::Integer(id)]).unwrap().is_some());
        }
        tx.commit().unwrap();
    };
    lookups();
    let warm = reads();
    lookups();
    assert_eq!(reads(), warm, "the lookups' pages are resident");
    db.gc(t).unwrap();
    let after_vacuum = reads();
    assert!(
        after_vacuum >= warm + pages - 128,
        "the vacuum read the heap"
    );
    lookups();
    assert_eq!(
        reads(),
        after_vacuum,
        "the vacuum left the lookups' pages resident"
    );
}

/// Autovacuum analyzes a table once the rows changed since its last analyze pass 50 + 0.1 ×
/// live tuples (autovacuum.c `relation_needs_vacanalyze`), and the analyze resets
/// `n_mod_since_analyze`.
#[test]
fn autoanalyze_fires_by_the_threshold_rule() {
    let db = autovacuum_db(Rule::Analyze);
    let t = load(&db, "sbtest1", 500);
    // The load's 500 inserts are changes: 500 > 50 + 0.1 × 500.
    wait_for_stats(&db, t, |s| s.autoanalyze_count >= 1);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let s = db.table_stats(t).unwrap();
    assert_eq!(
        (s.autoanalyze_count, s.n_mod_since_analyze),
        (1, 0),
        "{s:?}"
    );
    // 90 deletes: 90 ≤ 50 + 0.1 × 410 = 91, no analyze.
    delete_ids(&db, t, 0..90);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(db.table_stats(t).unwrap().autoanalyze_count, 1);
    // 10 more: 100 > 50 + 0.1 × 400 = 90: analyze.
    delete_ids(&db, t, 90..100);
    wait_for_stats(&db, t, |s| s.autoanalyze_count >= 2);
    let s = db.table_stats(t).unwrap();
    assert_eq!((s.n_mod_since_analyze, s.autovacuum_count), (0, 0), "{s:?}");
}

/// A manual ANALYZE reads every page of a heap smaller than its 30,000-block sample,
/// counts deleted rows as dead and live ones as live, and sets those estimates.
#[test]
fn analyze_reads_every_page_of_a_small_heap_and_counts_live_and_dead_rows() {
    let db = open_db(DesignConfig::postgres(), 256);
    let t = load(&db, "sbtest1", 1000);
    delete_ids(&db, t, 0..100);
    let pages = db.table_pages(t).unwrap().0;
    let touched = |s: &TableStats| s.heap_blks_hit + s.heap_blks_read;
    let before = db.table_stats(t).unwrap();
    let rep = db.analyze(t).unwrap();
    let after = db.table_stats(t).unwrap();
    assert_eq!(rep.pages_sampled, pages);
    assert_eq!((rep.live_rows, rep.dead_rows), (900, 100), "{rep:?}");
    assert_eq!((after.n_live_tup, after.n_dead_tup), (900, 100));
    assert_eq!(touched(&after) - touched(&before), pages);
    assert_eq!((after.analyze_count, after.n_mod_since_analyze), (1, 0));
    // The clustered layout has no ANALYZE here: an error that says so.
    let inno = open_db(DesignConfig::innodb(), 256);
    let ti = load(&inno, "sbtest1", 10);
    let e = inno.analyze(ti).unwrap_err().to_string();
    assert!(e.contains("heap tables only"), "{e}");
}

/// The WAL's record-type counts (pg_waldump `--stats=record`) add up to the WAL counters:
/// one `Transaction/COMMIT` per postgres commit (none for innodb, whose commit is the undo
/// log's commit record, as InnoDB writes no commit record), and record plus image bytes
/// equal to `wal_bytes`.
#[test]
fn wal_record_types_add_up_to_the_wal_counters() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let heap = design.table_layout == TableLayout::Heap;
        let db = open_db(design, 256);
        let t = load(&db, "sbtest1", 300);
        let types0 = db.wal_record_types();
        let wal0 = db.storage().snapshot().counters.total();
        for id in 0..40 {
            update(&db, t, id, &[Assign::Set(1, Value::Integer(id + 1000))]);
        }
        let wal = db.storage().snapshot().counters.total();
        let types = db.wal_record_types();
        let delta = |name: &str| {
            let b = types0.get(name).copied().unwrap_or_default();
            types.get(name).copied().unwrap_or_default().minus(&b)
        };
        if heap {
            assert_eq!(delta("Transaction/COMMIT").records, 40);
        } else {
            assert_eq!(delta("Transaction/COMMIT").records, 0);
            assert!(delta("Undo/WRITE").records >= 40, "{types:?}");
        }
        let (mut records, mut bytes) = (0, 0);
        for name in types.keys() {
            let d = delta(name);
            records += d.records;
            bytes += d.record_bytes + d.fpi_bytes;
        }
        assert_eq!(records, wal.wal_records - wal0.wal_records);
        assert_eq!(bytes, wal.wal_bytes - wal0.wal_bytes);
        assert!(types.keys().all(|n| !n.starts_with("rmgr")), "{types:?}");
    }
}
