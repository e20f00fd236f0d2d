//! Finishing incomplete B+tree splits on reopen, on both presets: only after a crash.
//!
//! A clean close writes a shutdown checkpoint (`xlog_info::CHECKPOINT_SHUTDOWN`, PostgreSQL
//! XLOG_CHECKPOINT_SHUTDOWN), and the reopen then reads no page of any tree looking for
//! INCOMPLETE_SPLIT (PostgreSQL runs no recovery after a clean shutdown, xlog.c
//! `StartupXLOG`), so a "cold" run starts with an empty buffer pool. After a crash whose
//! WAL ends between a split's SPLIT record and the record inserting its downlink, recovery
//! still finds the flagged page and finishes the split (nbtinsert.c `_bt_finish_split`).

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::db::{Database, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{file_ids, CrashConfig, CrashDevice, Device};
use mvcclab_engine::recovery::record_type_name;
use mvcclab_engine::wal::{Lsn, FIRST_LSN};
use std::ops::Bound;
use std::sync::Arc;

/// Rows per transaction and transactions: enough for the primary key's tree (and the
/// owner index) to split many times at both page sizes.
const ROWS_PER_TXN: i32 = 100;
const TXNS: i32 = 40;
/// B+trees of `accounts`: postgres its two indexes, innodb the clustered index and the
/// owner index.
const TREES: u64 = 2;

fn device() -> Arc<CrashDevice> {
    // Writes not synced are all lost at the cut: the relation files hold what the last
    // checkpoint wrote, and redo rebuilds the rest from the WAL.
    Arc::new(
        CrashDevice::with_config(CrashConfig {
            survive_probability: 0.0,
            ..CrashConfig::default()
        })
        .unwrap(),
    )
}

fn open(design: &DesignConfig, dev: &Arc<CrashDevice>) -> Database {
    let mut cfg = crash_db_config(design.clone(), dev);
    // Every page stays in the pool: no relation write between checkpoints.
    cfg.storage.buffer_pool.frames = 4096;
    Database::open(cfg).unwrap()
}

/// Loads `TXNS` transactions of `ROWS_PER_TXN` accounts each; returns the table and the
/// end LSN of each commit record, in order.
fn load(db: &Database) -> (TableId, Vec<(i32, u64)>) {
    let t = db.create_table(accounts_def()).unwrap();
    let mut commits = Vec::new();
    for x in 0..TXNS {
        let mut tx = db.begin();
        for i in 0..ROWS_PER_TXN {
            let id = x * ROWS_PER_TXN + i;
            tx.insert(t, account(id)).unwrap();
        }
        tx.commit().unwrap();
        commits.push((x, db.storage().wal().insert_lsn().0));
    }
    (t, commits)
}

fn account(id: i32) -> mvcclab_engine::catalog::Row {
    use mvcclab_engine::catalog::Value;
    vec![
        Value::Integer(id),
        Value::BigInt(100),
        Value::Text(format!("owner-{:05}", id % 97)),
    ]
}

fn all_rows(
    tx: &mut mvcclab_engine::db::Transaction,
    t: TableId,
) -> Vec<mvcclab_engine::catalog::Row> {
    tx.scan(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        usize::MAX,
    )
    .unwrap()
}

/// Pool reads and hits of every page of `t` (heap or clustered index, and its indexes)
/// since the database was opened.
fn tree_pages_touched(db: &Database, t: TableId) -> u64 {
    let s = db.table_stats(t).unwrap();
    s.heap_blks_read + s.heap_blks_hit + s.idx_blks_read + s.idx_blks_hit
}

#[test]
fn reopening_a_cleanly_closed_preset_reads_no_btree_page() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let dev = device();
        let db = open(&design, &dev);
        let (t, _) = load(&db);
        db.close().unwrap();
        let db = open(&design, &dev);
        assert_eq!(db.recovery_report().splits_finished, 0, "{}", design.name);
        // Opening a tree reads its meta page (PostgreSQL's first `_bt_getroot` does too);
        // nothing else: the primary key's tree and the owner index, one page each.
        assert_eq!(
            tree_pages_touched(&db, t),
            TREES,
            "{}: the reopen after a clean close walked the trees",
            design.name
        );
        // The database is whole: every row is there.
        let mut tx = db.begin();
        assert_eq!(
            all_rows(&mut tx, t).len(),
            (ROWS_PER_TXN * TXNS) as usize,
            "{}",
            design.name
        );
        // A write after the shutdown checkpoint, then a crash: the walk runs again (what
        // the clean reopen above skips).
        tx.insert(t, account(-1)).unwrap();
        tx.commit().unwrap();
        drop(db);
        dev.power_cut(1);
        let db = open(&design, &dev);
        assert!(
            tree_pages_touched(&db, t) > TREES,
            "{}: a reopen after a crash must look for incomplete splits",
            design.name
        );
        db.close().unwrap();
    }
}

#[test]
fn after_a_crash_between_split_and_downlink_the_split_is_finished() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let dev = device();
        let db = open(&design, &dev);
        let (t, commits) = load(&db);
        let wal = db.storage().wal().clone();
        wal.flush_all().unwrap();
        let (records, end) = wal.read_from(Lsn(FIRST_LSN)).unwrap();
        // The WAL is cut just after the last SPLIT of the load: the record that inserts its
        // downlink (or the parent's SPLIT) is lost, the left page keeps INCOMPLETE_SPLIT.
        let i = records
            .iter()
            .rposition(|r| record_type_name(r.rmgr, r.info) == "Btree/SPLIT")
            .expect("the load split a B+tree");
        let cut = records[i].end_lsn.0;
        assert!(cut < end.0);
        let seg_bytes = wal.config().segment_bytes;
        drop(wal);
        drop(db);
        dev.power_cut(7);
        let (seg, off) = (cut / seg_bytes, cut % seg_bytes);
        let file = file_ids::WAL_BASE + seg as mvcclab_engine::device::FileId;
        let len = dev.len_bytes(file).unwrap();
        dev.write_at(file, off, &vec![0u8; (len - off) as usize])
            .unwrap();
        dev.sync(file).unwrap();

        let db = open(&design, &dev);
        assert!(
            db.recovery_report().splits_finished >= 1,
            "{name}: the split cut from its downlink was not finished"
        );
        let (checked, problems) = db.check_indexes(t).unwrap();
        assert!(checked > 0);
        assert!(problems.is_empty(), "{name}: {problems:?}");
        // Every transaction committed before the cut is there, and none after it.
        let kept = commits.iter().filter(|(_, lsn)| *lsn <= cut).count() as i32;
        let mut tx = db.begin();
        let rows = all_rows(&mut tx, t);
        assert_eq!(rows.len(), (kept * ROWS_PER_TXN) as usize, "{name}");
        for id in [0, kept * ROWS_PER_TXN - 1] {
            assert!(
                tx.get(t, &[mvcclab_engine::catalog::Value::Integer(id)])
                    .unwrap()
                    .is_some(),
                "{name}: row {id}"
            );
        }
        tx.commit().unwrap();
        db.close().unwrap();
        // Finished and closed cleanly: the next open has nothing to finish.
        let db = open(&design, &dev);
        assert_eq!(db.recovery_report().splits_finished, 0, "{name}");
        db.close().unwrap();
    }
}
