//! The innodb preset: undo deltas, delete-marked secondary entries, purge and read views.

mod common;
use common::*;
use mvcclab_engine::btree::{BTree, BTreeConfig, ScanDirection};
use mvcclab_engine::buffer::FreeTarget;
use mvcclab_engine::catalog::{apply_delta, decode_compact_record, Value};
use mvcclab_engine::clustered::{
    rseg, RollPtr, UndoRecord, UndoType, PAGE_TYPE_RSEG, PAGE_TYPE_UNDO,
};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::mvcc::Isolation;
use mvcclab_engine::page::{page_type, PageId};
use mvcclab_engine::wal::{rmgr, Lsn};
use std::ops::Bound;

fn load(db: &Database, rows: i32) -> TableId {
    let t = db.create_table(sbtest_def("sbtest1")).unwrap();
    insert_rows(db, t, 0..rows);
    t
}

/// Inserts rows `ids` (id, k = id, c, pad) into sbtest table `t` in one transaction.
fn insert_rows(db: &Database, t: TableId, ids: std::ops::Range<i32>) {
    let mut tx = db.begin();
    for id in ids {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::Integer(id),
                Value::Text(format!("c{id}")),
                Value::Text("pad".into()),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// Undo records written to the WAL since `from` (UNDO APPEND records carry them), and the
/// relations every WAL record touched.
fn undo_since(db: &Database, from: Lsn) -> (Vec<UndoRecord>, Vec<u32>) {
    db.storage().wal().flush_all().unwrap();
    let (recs, _) = db.storage().wal().read_from(from).unwrap();
    let mut undo = Vec::new();
    let mut rels = Vec::new();
    for r in recs {
        for b in &r.blocks {
            rels.push(b.page.rel);
        }
        if r.rmgr == rmgr::UNDO && r.info == 0x10 {
            let data = &r.blocks[0].data[2..];
            if let Ok(u) = UndoRecord::decode(data) {
                if data.len() != 34 {
                    undo.push(u);
                }
            }
        }
    }
    (undo, rels)
}

fn secondary(db: &Database, t: TableId) -> BTree {
    BTree::open(
        db.storage().pool().clone(),
        db.relations(t).unwrap().indexes[0],
        BTreeConfig::innodb(),
    )
    .unwrap()
}

fn entries(b: &BTree) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    b.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(true)
        },
    )
    .unwrap();
    out
}

#[test]
fn non_indexed_update_writes_one_undo_record_of_the_changed_column_and_no_index_change() {
    let db = open_db(DesignConfig::innodb(), 256);
    let t = load(&db, 100);
    let sec_rel = db.relations(t).unwrap().indexes[0];
    let before = entries(&secondary(&db, t));
    let from = db.storage().wal().insert_lsn();
    let mut tx = db.begin();
    assert!(tx
        .update(
            t,
            &[Value::Integer(5)],
            &[Assign::Set(2, Value::Text("changed".into()))]
        )
        .unwrap());
    tx.commit().unwrap();
    let (undo, rels) = undo_since(&db, from);
    assert_eq!(undo.len(), 1, "{undo:?}");
    assert_eq!(undo[0].kind, UndoType::UpdateExisting);
    let def = db.table_def(t).unwrap();
    let mut row = vec![Value::Integer(0); 4];
    assert_eq!(
        apply_delta(&def, &mut row, &undo[0].delta).unwrap(),
        vec![2],
        "only column c"
    );
    assert!(
        matches!(&row[2], Value::Text(s) if s.starts_with("c5")),
        "{row:?}"
    );
    assert!(
        !rels.contains(&sec_rel),
        "the secondary index k_1 was not touched"
    );
    assert_eq!(entries(&secondary(&db, t)), before);
}

#[test]
fn indexed_update_delete_marks_one_secondary_entry_and_inserts_one() {
    let db = open_db(
        DesignConfig {
            garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
            ..DesignConfig::innodb()
        },
        256,
    );
    let t = load(&db, 100);
    let before = entries(&secondary(&db, t));
    let mut tx = db.begin();
    assert!(tx
        .update(t, &[Value::Integer(5)], &[Assign::Add(1, 1000)])
        .unwrap());
    tx.commit().unwrap();
    let after = entries(&secondary(&db, t));
    assert_eq!(after.len(), before.len() + 1, "one entry inserted");
    let marked: Vec<_> = after
        .iter()
        .filter(|(_, v)| v == &vec![mvcclab_engine::catalog::COMPACT_DELETED_FLAG])
        .collect();
    assert_eq!(marked.len(), 1, "one entry delete-marked");
    let mut r = db.begin();
    assert_eq!(
        r.get_by_index(t, 0, &[Value::Integer(1005)]).unwrap().len(),
        1
    );
    assert!(
        r.get_by_index(t, 0, &[Value::Integer(5)])
            .unwrap()
            .is_empty(),
        "the old key no longer finds the row"
    );
}

#[test]
fn a_long_reader_keeps_its_snapshot_while_purge_waits_then_history_empties() {
    let db = open_db(DesignConfig::innodb(), 256);
    let t = load(&db, 50);
    let mut reader = db.begin_with(Isolation::RepeatableRead);
    assert_eq!(
        reader.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
        Value::Integer(1)
    );
    for i in 0..200 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.update(
            t,
            &[Value::Integer(2 + i % 40)],
            &[Assign::Set(2, Value::Text(format!("v{i}")))],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    db.gc(t).unwrap();
    let c = db.engine_counters();
    assert!(
        c.history_list_length >= 200,
        "purge must wait for the reader: {c:?}"
    );
    // The reader still sees its snapshot, through 200 versions of undo.
    assert_eq!(
        reader.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
        Value::Integer(1)
    );
    reader.commit().unwrap();
    db.gc(t).unwrap();
    // The background purge coordinator may still be finishing a batch.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.engine_counters().purged_logs < 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            db.engine_counters()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let c = db.engine_counters();
    assert_eq!(c.history_list_length, 0, "{c:?}");
    assert!(c.history_list_length_peak >= 200);
    assert!(c.purge_records >= 400, "{c:?}");
    assert!(c.undo_pages_freed > 0, "{c:?}");
    let mut tx = db.begin();
    assert_eq!(
        tx.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
        Value::Integer(201)
    );
}

/// Background purge runs when the master task wakes it (MariaDB: once a second,
/// `srv_master_callback`), not whenever something is purgeable: between two wake-ups the
/// history list grows, and one run then purges all of it.
#[test]
fn background_purge_waits_for_the_master_tick_then_drains_the_history() {
    let updates = |db: &Database, t: TableId| {
        for i in 0..100 {
            let mut tx = db.begin();
            tx.update(
                t,
                &[Value::Integer(i % 50)],
                &[Assign::Set(2, Value::Text(format!("v{i}")))],
            )
            .unwrap();
            tx.commit().unwrap();
        }
    };
    let open = |wake_interval_ms: u64| {
        let mut cfg = quiet_db_config(DesignConfig::innodb(), 256);
        cfg.purge.threads = 2;
        cfg.purge.wake_interval_ms = wake_interval_ms;
        Database::open(cfg).unwrap()
    };
    // No tick within the test: nothing is purged in the background.
    let db = open(3_600_000);
    let t = load(&db, 50);
    updates(&db, t);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let c = db.engine_counters();
    assert_eq!(c.purged_logs, 0, "{c:?}");
    assert!(c.history_list_length >= 100, "{c:?}");
    drop(db);
    // A tick every 200 ms: a run purges the whole history.
    let db = open(200);
    let t = load(&db, 50);
    updates(&db, t);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.engine_counters().history_list_length > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            db.engine_counters()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(db.engine_counters().purged_logs >= 100);
}

/// The history length counts a log until history truncation removes it from its rollback
/// segment's list, not until purge has processed it (MariaDB `trx_sys.history_size()`,
/// decremented in trx0purge.cc `free_history_rseg`, which skips a rollback segment that a
/// running transaction holds: `rseg.is_referenced()`).
#[test]
fn a_purged_log_stays_in_the_history_length_until_truncation_removes_it() {
    let mut cfg = quiet_db_config(DesignConfig::innodb(), 256);
    cfg.design.rollback_segments = 1;
    cfg.purge.wake_interval_ms = 3_600_000; // only db.gc purges
    let db = Database::open(cfg).unwrap();
    let t = load(&db, 50);
    db.gc(t).unwrap();
    assert_eq!(db.engine_counters().history_list_length, 0);
    for i in 0..10 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(i)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
    }
    // A running transaction holds the only rollback segment: purge processes the ten logs,
    // truncation cannot remove them.
    let mut running = db.begin();
    running
        .update(t, &[Value::Integer(40)], &[Assign::Add(1, 1)])
        .unwrap();
    let before = db.engine_counters();
    db.gc(t).unwrap();
    let c = db.engine_counters();
    assert_eq!(c.purged_logs - before.purged_logs, 10, "{c:?}");
    assert_eq!(c.history_list_length, 10, "{c:?}");
    running.commit().unwrap();
    db.gc(t).unwrap();
    assert_eq!(db.engine_counters().history_list_length, 0);
}

/// A purge batch ends at innodb_purge_batch_size distinct undo pages, and a run goes on
/// batch after batch until one handles no page (trx0purge.cc `trx_purge_attach_undo_recs`,
/// srv0srv.cc `do_purge`): logs that share a cached undo page make one batch, so the master
/// tick's run purges 40 small logs of one rollback segment in one batch and an empty one.
#[test]
fn one_purge_batch_takes_every_log_on_the_undo_pages_it_handles() {
    let mut cfg = quiet_db_config(DesignConfig::innodb(), 256);
    cfg.design.rollback_segments = 1;
    cfg.purge.batch_pages = 3;
    cfg.purge.wake_interval_ms = 3_600_000; // only db.gc purges
    let db = Database::open(cfg).unwrap();
    let t = load(&db, 50);
    db.gc(t).unwrap();
    let before = db.engine_counters();
    for i in 0..40 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(i)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
    }
    let undo_pages = db.engine_counters().undo_pages_in_use;
    assert!(undo_pages < 3, "40 small logs fill {undo_pages} undo pages");
    db.gc(t).unwrap();
    let c = db.engine_counters();
    assert_eq!(c.purged_logs - before.purged_logs, 40, "{c:?}");
    assert_eq!(
        c.purge_batches - before.purge_batches,
        2,
        "one batch for the 40 logs, one that found nothing: {c:?}"
    );
}

/// Purge of an update that changed no indexed column does not look the row up
/// (row0purge.cc `row_purge_parse_undo_rec`: UPD_NODE_NO_ORD_CHANGE); purge of an update of
/// an indexed column does, to remove the stale secondary entry.
#[test]
fn purge_skips_the_clustered_lookup_when_no_indexed_column_changed() {
    let db = open_db(DesignConfig::innodb(), 256);
    let t = load(&db, 50);
    db.gc(t).unwrap();
    let rel = db.relations(t).unwrap().table;
    let accesses = || {
        let io = db.storage().pool().rel_io(rel);
        io.blks_hit + io.blks_read
    };
    for i in 0..20 {
        let mut tx = db.begin();
        tx.update(
            t,
            &[Value::Integer(i)],
            &[Assign::Set(2, Value::Text(format!("v{i}")))],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let before = accesses();
    db.gc(t).unwrap();
    let c = db.engine_counters();
    assert!(c.purge_records >= 20, "{c:?}");
    assert_eq!(accesses(), before, "purge of c updates read the table");
    for i in 0..20 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(i)], &[Assign::Add(1, 1000)])
            .unwrap();
        tx.commit().unwrap();
    }
    let before = accesses();
    db.gc(t).unwrap();
    assert!(
        accesses() >= before + 20,
        "purge of k updates looks rows up"
    );
}

#[test]
fn purge_removes_delete_marked_rows_and_stale_secondary_entries() {
    let db = open_db(DesignConfig::innodb(), 256);
    let t = load(&db, 100);
    let mut tx = db.begin();
    for id in 0..10 {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    for id in 10..20 {
        tx.update(t, &[Value::Integer(id)], &[Assign::Add(1, 1000)])
            .unwrap();
    }
    tx.commit().unwrap();
    assert_eq!(entries(&secondary(&db, t)).len(), 110);
    // 10 deleted rows + 10 old versions (fewer if background purge already ran).
    assert!(db.table_stats(t).unwrap().n_dead_tup <= 20);
    db.gc(t).unwrap();
    assert_eq!(
        db.table_stats(t).unwrap().n_dead_tup,
        0,
        "purge removed them all"
    );
    let sec = entries(&secondary(&db, t));
    assert_eq!(
        sec.len(),
        90,
        "deleted rows' and old keys' entries are gone"
    );
    assert!(
        sec.iter().all(|(_, v)| v == &vec![0u8]),
        "no delete-marked entry is left"
    );
    let clustered = BTree::open(
        db.storage().pool().clone(),
        db.relations(t).unwrap().table,
        BTreeConfig::innodb(),
    )
    .unwrap();
    assert_eq!(
        clustered.stats().unwrap().entries,
        90,
        "delete-marked records removed"
    );
    // A deleted key can be inserted again.
    let mut tx = db.begin();
    tx.insert(
        t,
        vec![
            Value::Integer(3),
            Value::Integer(3),
            Value::Text("again".into()),
            Value::Text("p".into()),
        ],
    )
    .unwrap();
    tx.commit().unwrap();
}

/// Purge removes an update's old secondary entry even when the row has been changed since
/// by a transaction that is still running: it walks the versions a read view may still see
/// (row0vers.cc `row_vers_old_has_index_entry`, from row0purge.cc `row_purge_poss_sec`),
/// here the running update's and the one before it, and none carries the old key. The
/// entry of the version before the running update stays until that update is purged.
#[test]
fn purge_removes_an_old_key_past_a_newer_update_still_running() {
    let mut cfg = quiet_db_config(DesignConfig::innodb(), 256);
    cfg.purge.wake_interval_ms = 3_600_000; // only db.gc purges
    let db = Database::open(cfg).unwrap();
    let t = load(&db, 50);
    db.gc(t).unwrap();
    let key_entries = |k: i32| {
        let marks: Vec<u8> = entries(&secondary(&db, t))
            .into_iter()
            .filter(|(key, _)| {
                mvcclab_engine::catalog::decode_key_prefix(
                    &db.table_def(t).unwrap().key_columns(&[1]).unwrap(),
                    key,
                )
                .map(|(v, _)| v == vec![Value::Integer(k)])
                .unwrap_or(false)
            })
            .map(|(_, v)| v[0])
            .collect();
        marks
    };
    let mut t1 = db.begin();
    t1.update(t, &[Value::Integer(5)], &[Assign::Add(1, 1000)])
        .unwrap();
    t1.commit().unwrap();
    let mut t2 = db.begin();
    t2.update(t, &[Value::Integer(5)], &[Assign::Add(1, 1000)])
        .unwrap();
    let deleted = mvcclab_engine::catalog::COMPACT_DELETED_FLAG;
    assert_eq!(key_entries(5), vec![deleted]);
    assert_eq!(key_entries(1005), vec![deleted]);
    assert_eq!(key_entries(2005), vec![0]);
    db.gc(t).unwrap();
    assert!(
        key_entries(5).is_empty(),
        "purge of the first update left k = 5 behind: no version a view may see carries \
         it, though the row's newest version is not yet visible to all: {:?}",
        db.engine_counters()
    );
    assert_eq!(
        key_entries(1005),
        vec![deleted],
        "k = 1005 is the version before the running update: it stays"
    );
    t2.commit().unwrap();
    db.gc(t).unwrap();
    assert!(key_entries(1005).is_empty());
    assert_eq!(key_entries(2005), vec![0]);
    assert_eq!(entries(&secondary(&db, t)).len(), 50, "one entry per row");
}

#[test]
fn reinsert_over_a_delete_marked_record_and_rollback_restore_versions() {
    let db = open_db(
        DesignConfig {
            garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
            ..DesignConfig::innodb()
        },
        256,
    );
    let t = load(&db, 10);
    let mut tx = db.begin();
    tx.delete(t, &[Value::Integer(4)]).unwrap();
    tx.commit().unwrap();
    let mut old_reader = db.begin_with(Isolation::RepeatableRead);
    assert!(old_reader.get(t, &[Value::Integer(4)]).unwrap().is_none());
    let mut tx = db.begin();
    tx.insert(
        t,
        vec![
            Value::Integer(4),
            Value::Integer(44),
            Value::Text("re".into()),
            Value::Text("p".into()),
        ],
    )
    .unwrap();
    tx.update(t, &[Value::Integer(5)], &[Assign::Add(1, 1)])
        .unwrap();
    tx.abort().unwrap();
    let mut r = db.begin();
    assert!(
        r.get(t, &[Value::Integer(4)]).unwrap().is_none(),
        "rolled back re-insert"
    );
    assert_eq!(
        r.get(t, &[Value::Integer(5)]).unwrap().unwrap()[1],
        Value::Integer(5),
        "rolled back update"
    );
    assert!(r
        .get_by_index(t, 0, &[Value::Integer(44)])
        .unwrap()
        .is_empty());
    let mut tx = db.begin();
    tx.insert(
        t,
        vec![
            Value::Integer(4),
            Value::Integer(44),
            Value::Text("re".into()),
            Value::Text("p".into()),
        ],
    )
    .unwrap();
    tx.commit().unwrap();
    assert!(
        old_reader.get(t, &[Value::Integer(4)]).unwrap().is_none(),
        "still absent for the older view"
    );
    let mut r = db.begin();
    assert_eq!(
        r.get(t, &[Value::Integer(4)]).unwrap().unwrap()[1],
        Value::Integer(44)
    );
    assert_eq!(
        r.get_by_index(t, 0, &[Value::Integer(44)]).unwrap().len(),
        1
    );
}

/// The page bytes a row takes in the innodb preset's leaves, against InnoDB's: the k_1
/// entry takes InnoDB's 13-byte record (1-byte key and value lengths and the 2-byte slot
/// standing for 4 of its 5 header bytes, the info byte as its value); the clustered entry
/// InnoDB's 208-byte record and 1 byte more, its value's length taking 2 bytes. Beside
/// them the page directory InnoDB reserves (half a byte a record) is counted per page.
#[test]
fn innodb_leaf_entries_take_innodbs_record_bytes() {
    let db = open_db(DesignConfig::innodb(), 1024);
    let t = load(&db, 50);
    let geo = BTreeConfig::innodb().geometry();
    let clustered = BTree::open(
        db.storage().pool().clone(),
        db.relations(t).unwrap().table,
        BTreeConfig::innodb(),
    )
    .unwrap();
    let rows = entries(&clustered);
    assert_eq!(rows.len(), 50);
    for (k, v) in &rows {
        // INTEGER NOT NULL: 4 key bytes, no tag.
        assert_eq!(k.len(), 4);
        // 208 bytes in InnoDB (5 header + 2 lengths + 4 + 6 + 7 + 4 + 120 + 60) less the
        // 4 page-layer header bytes and the id, which the key holds.
        assert_eq!(v.len(), 200);
        assert_eq!(geo.space(k.len(), v.len()), 208 + 1);
    }
    let sec = entries(&secondary(&db, t));
    assert_eq!(sec.len(), 50);
    for (k, v) in &sec {
        // k then id, 4 bytes each; the value is the info byte (delete mark).
        assert_eq!((k.len(), v.as_slice()), (8, &[0u8][..]));
        assert_eq!(geo.space(k.len(), v.len()), 13);
    }
}

#[test]
fn sequential_inserts_leave_clustered_leaves_15_16_full() {
    let db = open_db(DesignConfig::innodb(), 1024);
    let t = load(&db, 5000);
    let clustered = BTree::open(
        db.storage().pool().clone(),
        db.relations(t).unwrap().table,
        BTreeConfig::innodb(),
    )
    .unwrap();
    let fill = clustered.stats().unwrap().avg_leaf_fill_pct();
    assert!((90.0..=95.0).contains(&fill), "leaf fill {fill:.1} %");
}

#[test]
fn row_versions_walk_the_undo_chain_newest_first() {
    let db = open_db(
        DesignConfig {
            garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
            ..DesignConfig::innodb()
        },
        256,
    );
    let t = load(&db, 5);
    for _ in 0..3 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(2)], &[Assign::Add(1, 10)])
            .unwrap();
        tx.commit().unwrap();
    }
    let v = db.row_versions(t, &[Value::Integer(2)]).unwrap();
    let ks: Vec<Value> = v.iter().map(|(_, _, r)| r[1].clone()).collect();
    assert_eq!(
        ks,
        vec![
            Value::Integer(32),
            Value::Integer(22),
            Value::Integer(12),
            Value::Integer(2)
        ]
    );
    assert!(
        v.windows(2).all(|w| w[0].0 > w[1].0),
        "newest (highest trx id) first: {v:?}"
    );
}

/// The rollback segment id in the roll pointer of row `id`'s clustered record.
fn rseg_of_row(db: &Database, t: TableId, id: i32) -> u8 {
    let def = db.table_def(t).unwrap();
    let key = def
        .key_from_values(&def.primary_key, &[Value::Integer(id)])
        .unwrap();
    let clustered = BTree::open(
        db.storage().pool().clone(),
        db.relations(t).unwrap().table,
        BTreeConfig::innodb(),
    )
    .unwrap();
    let rec = clustered.get(&key).unwrap().unwrap();
    RollPtr::decode(decode_compact_record(&def, &key, &rec).unwrap().roll_ptr).rseg_id
}

#[test]
fn update_transactions_take_the_128_rollback_segments_in_turn_and_write_every_header() {
    let db = open_db(DesignConfig::innodb(), 1024);
    let t = load(&db, 200); // one transaction: rollback segment 0
    assert_eq!(rseg_of_row(&db, t, 7), 0);
    let pool = db.storage().pool();
    db.storage().checkpoint().unwrap();
    let before = pool.page_type_io(PAGE_TYPE_RSEG);
    let mut seen = Vec::new();
    for k in 0..130 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(k)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
        seen.push(rseg_of_row(&db, t, k));
    }
    let want: Vec<u8> = (0..130).map(|k| ((k + 1) % 128) as u8).collect();
    assert_eq!(seen, want, "round robin over 128");
    db.storage().checkpoint().unwrap();
    let after = pool.page_type_io(PAGE_TYPE_RSEG);
    // The report's engine counters carry the same figures.
    let ec = db.engine_counters();
    assert_eq!(
        (ec.rseg_pages_read, ec.rseg_pages_written),
        (after.pages_read, after.pages_written)
    );
    assert!(
        after.pages_written - before.pages_written >= 128,
        "every header page was changed and written: {before:?} -> {after:?}"
    );
    // Purge truncates every history list, on the header pages too.
    db.gc(t).unwrap();
    let undo = undo_relation(&db);
    for r in 0..128 {
        let g = pool.fetch_read(PageId::new(undo, r)).unwrap();
        assert_eq!(page_type(g.data()), PAGE_TYPE_RSEG);
        assert_eq!(rseg::history_len(g.data()), 0, "rseg {r}");
    }
    assert_eq!(db.engine_counters().history_list_length, 0);
    assert!(
        pool.page_type_io(PAGE_TYPE_UNDO).pages_written > 0,
        "undo log pages are counted apart from the headers"
    );
}

#[test]
fn one_rollback_segment_design_puts_every_transaction_in_rseg_0() {
    let db = open_db(
        DesignConfig {
            rollback_segments: 1,
            ..DesignConfig::innodb()
        },
        256,
    );
    let t = load(&db, 20);
    for k in 0..5 {
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(k)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(rseg_of_row(&db, t, k), 0);
    }
    let undo = undo_relation(&db);
    let g = db
        .storage()
        .pool()
        .fetch_read(PageId::new(undo, 1))
        .unwrap();
    assert_eq!(
        page_type(g.data()),
        PAGE_TYPE_UNDO,
        "one header page, then undo"
    );
}

/// A database of `design` with `frames` frames and its own page cleaner running.
fn open_with_page_cleaner(design: DesignConfig, frames: usize) -> Database {
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.buffer_pool.frames = frames;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.vacuum.autovacuum = false;
    Database::open(cfg).unwrap()
}

#[test]
fn the_innodb_page_cleaner_keeps_the_free_page_target_and_postgres_uses_every_frame() {
    let innodb = DatabaseConfig::new(DesignConfig::innodb());
    assert_eq!(
        innodb.storage.buffer_pool.page_cleaner.free_target,
        Some(FreeTarget::ScaledLruScanDepth)
    );
    let postgres = DatabaseConfig::new(DesignConfig::postgres());
    assert_eq!(postgres.storage.buffer_pool.page_cleaner.free_target, None);
    for (design, rows) in [
        (DesignConfig::innodb(), 40_000),
        (DesignConfig::postgres(), 40_000),
    ] {
        let name = design.name.clone();
        let db = open_with_page_cleaner(design, 512);
        load(&db, rows);
        let pool = db.storage().pool();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        if name == "innodb" {
            // 512 frames: target 100 (512 × 1536 / 8192 = 96, at least 100); foreground
            // threads wake the page cleaner below 50.
            assert_eq!(pool.free_target(), Some(100));
            while pool.free_frames() < 50 {
                assert!(std::time::Instant::now() < deadline, "{:?}", pool.state());
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert!(
                pool.state().resident_pages <= 512 - 50,
                "{:?}",
                pool.state()
            );
        } else {
            assert_eq!(pool.free_target(), None);
            assert_eq!(pool.free_frames(), 0, "{name}: every frame holds a page");
        }
    }
}

/// WAL bytes of 100 one-row update transactions (non-indexed column, then indexed column)
/// on a loaded table, and the WAL read back from the start. Purge is off, so that no
/// background record lands between the counts.
/// Returns the bytes of each batch, and the record count and header bytes (everything but
/// block data, images and main data) of the whole WAL.
fn update_wal_bytes(design: DesignConfig) -> (u64, u64, u64, u64) {
    let db = open_db(
        DesignConfig {
            garbage_collection: mvcclab_engine::design::GarbageCollection::Off,
            ..design
        },
        256,
    );
    let t = load(&db, 200);
    let wal_bytes = |db: &Database| db.storage().snapshot().counters.total().wal_bytes;
    let b0 = wal_bytes(&db);
    for i in 0..100 {
        let mut tx = db.begin();
        assert!(tx
            .update(
                t,
                &[Value::Integer(i)],
                &[Assign::Set(2, Value::Text(format!("u{i}")))]
            )
            .unwrap());
        tx.commit().unwrap();
    }
    let b1 = wal_bytes(&db);
    for i in 0..100 {
        let mut tx = db.begin();
        assert!(tx
            .update(
                t,
                &[Value::Integer(i)],
                &[Assign::Set(1, Value::Integer(i + 1000))]
            )
            .unwrap());
        tx.commit().unwrap();
    }
    let b2 = wal_bytes(&db);
    // Every record reads back in the configured format, contiguously to the insert position.
    let wal = db.storage().wal();
    wal.flush_all().unwrap();
    let (recs, end) = wal.read_from(Lsn(mvcclab_engine::wal::FIRST_LSN)).unwrap();
    let c = db.storage().snapshot().counters.total();
    assert_eq!(recs.len() as u64, c.wal_records);
    assert_eq!(end, wal.insert_lsn());
    assert!(recs.windows(2).all(|w| w[0].end_lsn == w[1].lsn));
    assert!(recs.iter().any(|r| r.rmgr == rmgr::UNDO));
    let payload: u64 = recs
        .iter()
        .map(|r| {
            r.main_data.len()
                + r.blocks
                    .iter()
                    .map(|b| b.data.len() + b.image.as_ref().map_or(0, |i| i.bytes.len()))
                    .sum::<usize>()
        })
        .sum::<usize>() as u64;
    (b1 - b0, b2 - b1, c.wal_records, c.wal_bytes - payload)
}

#[test]
fn the_compact_mtr_records_cut_innodb_redo_bytes_per_update_transaction() {
    use mvcclab_engine::wal::WalFormat;
    assert_eq!(DesignConfig::innodb().wal_record_format, WalFormat::Mtr);
    let (mtr_non_index, mtr_index, mtr_records, mtr_headers) =
        update_wal_bytes(DesignConfig::innodb());
    let (xlog_non_index, xlog_index, xlog_records, xlog_headers) = update_wal_bytes(DesignConfig {
        wal_record_format: WalFormat::Xlog,
        btree_deduplication: false,
        ..DesignConfig::innodb()
    });
    assert_eq!(
        mtr_records, xlog_records,
        "the same records, encoded differently"
    );
    eprintln!(
        "bytes per txn: non-index {} -> {}, index {} -> {}; header bytes per record {} -> {}",
        xlog_non_index / 100,
        mtr_non_index / 100,
        xlog_index / 100,
        mtr_index / 100,
        xlog_headers / xlog_records,
        mtr_headers / mtr_records
    );
    // Headers: PostgreSQL's (24 per record, 20 per block naming its relation, 2 of main
    // data header; about 43 on average here) against about 15.
    assert!(xlog_headers >= 24 * xlog_records);
    assert!(
        xlog_headers >= 2 * mtr_headers,
        "{xlog_headers} vs {mtr_headers}"
    );
    assert!(
        mtr_headers <= 18 * mtr_records,
        "{mtr_headers} for {mtr_records}"
    );
    // What is left is the records' own data (an undo record with its page bytes is about
    // 150 bytes of the ~400 of a non-indexed update), so the whole shrinks less.
    assert!(
        (mtr_non_index as f64) < 0.8 * xlog_non_index as f64,
        "non-index update: mtr {mtr_non_index} vs xlog {xlog_non_index}"
    );
    assert!(
        (mtr_index as f64) < 0.7 * xlog_index as f64,
        "index update: mtr {mtr_index} vs xlog {xlog_index}"
    );
}

/// With `purge_resets_trx_id` (MariaDB up to 10.11.14, `row_purge_reset_trx_id`), purging
/// an update sets the record's DB_TRX_ID to 0 and cuts its history, logging the change;
/// without it, purge leaves the record alone for an update that changed no indexed
/// column. Either way the rows read the same.
#[test]
fn purge_resets_the_trx_id_of_updated_records_only_with_the_switch() {
    for reset in [false, true] {
        let db = open_db(
            DesignConfig {
                purge_resets_trx_id: reset,
                ..DesignConfig::innodb()
            },
            256,
        );
        let t = load(&db, 20);
        let mut tx = db.begin();
        tx.update(
            t,
            &[Value::Integer(3)],
            &[Assign::Set(2, Value::Text("changed".into()))],
        )
        .unwrap();
        tx.commit().unwrap();
        let before = db.row_versions(t, &[Value::Integer(3)]).unwrap();
        assert_eq!(before.len(), 2, "the update and the row it changed");
        let updater = before[0].0;
        assert_ne!(updater, 0);
        let lsn0 = db.storage().wal().insert_lsn();
        db.gc(t).unwrap();
        let after = db.row_versions(t, &[Value::Integer(3)]).unwrap();
        assert_eq!(after[0].2, before[0].2, "the row reads the same");
        if reset {
            assert_eq!(after.len(), 1, "no history left: {after:?}");
            assert_eq!(after[0].0, 0);
            db.storage().wal().flush_all().unwrap();
            let logged = db
                .storage()
                .wal()
                .read_from(lsn0)
                .unwrap()
                .0
                .iter()
                .any(|r| r.rmgr == rmgr::BTREE);
            assert!(logged, "the reset is WAL-logged");
        } else {
            assert_eq!(after[0].0, updater, "{after:?}");
        }
        let mut tx = db.begin();
        let row = tx.get(t, &[Value::Integer(3)]).unwrap().unwrap();
        tx.commit().unwrap();
        assert_eq!(row, after[0].2);
        assert!(matches!(&row[2], Value::Text(c) if c.trim_end() == "changed"));
    }
}

/// MariaDB flushes neighbours only on rotational storage (buf0flu.cc
/// `space->is_rotational()`): the innodb preset's `flush_neighbors = contiguous` reaches the
/// page cleaner only when the device is configured rotational; postgres has none.
#[test]
fn flush_neighbors_reaches_the_page_cleaner_only_on_a_rotational_device() {
    use mvcclab_engine::buffer::FlushNeighbors;
    let effective = |design: DesignConfig, rotational: bool| {
        let mut cfg = DatabaseConfig::new(design);
        cfg.storage.nvme.rotational = rotational;
        // Whatever the storage settings say, the design and the device decide.
        cfg.storage.buffer_pool.page_cleaner.flush_neighbors = FlushNeighbors::Area;
        let db = Database::open(cfg).unwrap();
        db.storage()
            .config()
            .buffer_pool
            .page_cleaner
            .flush_neighbors
    };
    assert_eq!(
        DesignConfig::innodb().flush_neighbors,
        FlushNeighbors::Contiguous
    );
    assert_eq!(
        effective(DesignConfig::innodb(), false),
        FlushNeighbors::Off
    );
    assert_eq!(
        effective(DesignConfig::innodb(), true),
        FlushNeighbors::Contiguous
    );
    assert_eq!(
        effective(DesignConfig::postgres(), true),
        FlushNeighbors::Off
    );
}

/// The pool counts the pages it writes home per relation (`RelIo::blks_written`), and
/// `table_stats` gives them as `heap_blks_written` (the clustered index) and
/// `idx_blks_written` (`k_1`): a checkpoint after the load writes every dirty page of
/// both, within the pool's own count, and a second one with nothing dirty writes none.
#[test]
fn pages_written_home_are_counted_per_relation() {
    let db = open_db(DesignConfig::innodb(), 256);
    let t = load(&db, 2_000);
    db.gc(t).unwrap();
    let (table_pages, index_pages) = db.table_pages(t).unwrap();
    let pool_written = || {
        db.storage()
            .snapshot()
            .counters
            .total()
            .buffer_pages_written
    };
    let before = db.table_stats(t).unwrap();
    let pool_before = pool_written();
    db.storage().checkpoint().unwrap();
    let after = db.table_stats(t).unwrap();
    let heap = after.heap_blks_written - before.heap_blks_written;
    let idx = after.idx_blks_written - before.idx_blks_written;
    assert!(
        table_pages > 1 && index_pages > 1,
        "{table_pages} / {index_pages}"
    );
    assert!(
        heap > 0 && heap <= table_pages,
        "heap {heap} of {table_pages} pages"
    );
    assert!(
        idx > 0 && idx <= index_pages,
        "index {idx} of {index_pages} pages"
    );
    let pool = pool_written() - pool_before;
    assert!(
        heap + idx <= pool,
        "{heap} + {idx} within the pool's {pool}"
    );
    let rel = db.relations(t).unwrap().table;
    assert_eq!(
        db.storage().pool().rel_io(rel).blks_written,
        after.heap_blks_written
    );
    db.storage().checkpoint().unwrap();
    let again = db.table_stats(t).unwrap();
    assert_eq!(
        (again.heap_blks_written, again.idx_blks_written),
        (after.heap_blks_written, after.idx_blks_written),
        "nothing dirty, nothing written"
    );
}

/// An innodb table's trees touch its tablespace's file-space pages (`btree::file_space`):
/// every page a split or a new root allocates and every page a merge frees changes
/// `FSP_HDR` and `INODE` once (each page counts its changes in its `aux` word), the
/// secondary index's leaf splits and merges change `IBUF_BITMAP`; the relation is the
/// catalog's and is opened again after a restart.
#[test]
fn file_space_pages_follow_the_trees_allocations_and_frees() {
    let dev = std::sync::Arc::new(
        mvcclab_engine::device::CrashDevice::with_config(mvcclab_engine::device::CrashConfig {
            survive_probability: 0.0,
            ..Default::default()
        })
        .unwrap(),
    );
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    let t = load(&db, 3_000);
    let rels = db.relations(t).unwrap();
    let fs = rels
        .file_space
        .expect("an innodb table has file-space pages");
    assert!(fs != rels.table && !rels.indexes.contains(&fs), "{rels:?}");
    let mut tx = db.begin();
    for id in (0..3_000).filter(|id| id % 4 != 0) {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    db.gc(t).unwrap();
    let aux = |db: &Database, block: u32| {
        let g = db
            .storage()
            .pool()
            .fetch_read(PageId::new(fs, block))
            .unwrap();
        mvcclab_engine::page::aux(g.data()) as u64
    };
    let ec = db.engine_counters();
    let (splits, merges) = (ec.index_page_splits, ec.index_page_merge_successful);
    assert!(
        splits > 20 && merges > 20,
        "{splits} splits, {merges} merges"
    );
    let (hdr, bitmap, inode) = (aux(&db, 0), aux(&db, 1), aux(&db, 2));
    assert_eq!(hdr, inode, "FSP_HDR and INODE change together");
    // Each split allocates a page and each merge frees one; a new root allocates one
    // more (two trees of at most three levels here).
    assert!(
        (splits + merges..=splits + merges + 4).contains(&hdr),
        "{hdr} changes for {splits} splits and {merges} merges"
    );
    assert!(
        bitmap > 0 && bitmap < splits + merges,
        "{bitmap} bitmap changes: the secondary index's leaves only"
    );
    db.close().unwrap();
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    assert_eq!(db.relations(t).unwrap().file_space, Some(fs));
    assert_eq!(aux(&db, 0), hdr, "written at the close, read back");
    insert_rows(&db, t, 3_000..4_000);
    assert!(
        aux(&db, 0) > hdr,
        "the reopened trees touch the pages again"
    );
}
