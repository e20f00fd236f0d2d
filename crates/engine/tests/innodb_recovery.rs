//! InnoDB crash recovery (`ClusteredAm::open`): databases on a crash-simulation device
//! are "crashed" (the database dropped with whatever is open, then a power cut keeps a
//! random subset of the writes not yet synced) and reopened; committed work must survive,
//! uncommitted work must be rolled back through the undo log, the history list must be
//! rebuilt for purge, and secondary indexes must agree with the clustered index.

mod common;
use common::*;
use mvcclab_engine::catalog::{Column, ColumnType, Row, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::CrashDevice;
use mvcclab_engine::error::TxnError;
use mvcclab_engine::page::PageId;
use mvcclab_engine::recovery::pages_failing_checksum;
use mvcclab_engine::storage::Backing;
use mvcclab_engine::Error;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

fn config(dev: &Arc<CrashDevice>, purge_threads: usize) -> DatabaseConfig {
    let mut cfg = common::quiet_db_config(DesignConfig::innodb(), 512);
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(16 << 20);
    cfg.storage.backing = Backing::shared(dev.clone());
    cfg.purge.threads = purge_threads;
    cfg
}

fn open(dev: &Arc<CrashDevice>, purge_threads: usize) -> Database {
    Database::open(config(dev, purge_threads)).expect("open database")
}

/// The crash: the database goes away without a checkpoint (open transactions were
/// forgotten by the caller), then the power is cut.
fn crash(db: Database, dev: &CrashDevice, seed: u64) {
    drop(db);
    dev.power_cut(seed);
}

fn account(id: i32, balance: i64, owner: &str) -> Row {
    vec![
        Value::Integer(id),
        Value::BigInt(balance),
        Value::Text(owner.into()),
    ]
}

fn counters_def() -> TableDef {
    TableDef {
        name: "counters".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("n", ColumnType::BigInt),
        ],
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    }
}

/// Creates `accounts` in `db` with ids 0..1500 (balance 100, owners `owner-NNNNN` of 97),
/// committed.
fn load_accounts(db: &Database) -> TableId {
    let t = db.create_table(accounts_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..1500 {
        tx.insert(t, account(id, 100, &format!("owner-{:05}", id % 97)))
            .unwrap();
    }
    tx.commit().unwrap();
    t
}

/// Cuts the power inside the `after_writes`-th relation write of a flush of every dirty
/// page of `db` (the flush fails).
fn cut_in_flush(db: &Database, dev: &CrashDevice, after_writes: u64, seed: u64) {
    dev.arm_power_cut(after_writes, seed, true);
    assert!(
        db.storage().pool().flush_all().is_err(),
        "seed {seed}: the power went"
    );
    assert!(dev.take_fired().is_some());
}

/// Drops `db` after a cut, turns the power on and reopens (recovery): the reopened
/// database and the pages the cut tore. Asserts that recovery left no page failing its
/// checksum.
fn power_on_and_reopen(
    db: Database,
    dev: &Arc<CrashDevice>,
    seed: u64,
) -> (Database, BTreeSet<PageId>) {
    let page_bytes = DesignConfig::innodb().page_size.bytes();
    drop(db);
    dev.power_on();
    let torn = pages_failing_checksum(&**dev, page_bytes).unwrap();
    let db = open(dev, 0);
    assert!(
        pages_failing_checksum(&**dev, page_bytes)
            .unwrap()
            .is_empty(),
        "seed {seed}: torn pages left after recovery"
    );
    (db, torn)
}

/// Every row of `t` by its integer primary key, checking that the secondary index on
/// column 2 (accounts' owner) finds every row under its key.
fn rows(db: &Database, t: TableId, with_index: bool) -> BTreeMap<i32, Row> {
    let mut tx = db.begin();
    let all = tx
        .scan(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            mvcclab_engine::btree::ScanDirection::Forward,
            usize::MAX,
        )
        .unwrap();
    let mut out = BTreeMap::new();
    for r in all {
        let Value::Integer(id) = r[0] else {
            panic!("{r:?}")
        };
        if with_index {
            let by_ix = tx.get_by_index(t, 0, &[r[2].clone()]).unwrap();
            assert!(
                by_ix.contains(&r),
                "secondary lookup of {:?} misses row {r:?} (found {by_ix:?})",
                r[2]
            );
            for x in &by_ix {
                assert_eq!(x[2], r[2], "secondary lookup returned another key");
            }
        }
        assert_eq!(tx.get(t, &[Value::Integer(id)]).unwrap(), Some(r.clone()));
        out.insert(id, r);
    }
    tx.commit().unwrap();
    out
}

fn balance(r: &Row) -> i64 {
    match r[1] {
        Value::BigInt(b) => b,
        ref v => panic!("{v:?}"),
    }
}

#[test]
fn committed_changes_survive_and_an_open_transaction_is_rolled_back() {
    for seed in [1u64, 2, 3] {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 1);
        let t = db.create_table(accounts_def()).unwrap();
        let mut tx = db.begin();
        for id in 0..60 {
            tx.insert(t, account(id, 100, &format!("o{}", id % 5)))
                .unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        tx.update(
            t,
            &[Value::Integer(1)],
            &[
                Assign::Set(1, Value::BigInt(7)),
                Assign::Set(2, Value::Text("x".into())),
            ],
        )
        .unwrap();
        assert!(tx.delete(t, &[Value::Integer(2)]).unwrap());
        tx.insert(t, account(100, 5, "new")).unwrap();
        tx.commit().unwrap();
        let mut expected = rows(&db, t, true);

        // The open transaction: changes of every kind, enough of them for multi-page
        // insert and update undo, flushed to the device by a checkpoint, then more.
        let mut open_tx = db.begin();
        open_tx
            .update(
                t,
                &[Value::Integer(3)],
                &[
                    Assign::Set(1, Value::BigInt(999)),
                    Assign::Set(2, Value::Text("y".into())),
                ],
            )
            .unwrap();
        assert!(open_tx.delete(t, &[Value::Integer(4)]).unwrap());
        // Re-insert over the committed delete of row 2 (update undo of a delete-marked row).
        open_tx.insert(t, account(2, 1, "re")).unwrap();
        for id in 1000..1400 {
            open_tx
                .insert(t, account(id, 1, &format!("u{}", id % 7)))
                .unwrap();
        }
        for id in 10..50 {
            open_tx
                .update(t, &[Value::Integer(id)], &[Assign::Add(1, 1)])
                .unwrap();
        }
        db.storage().checkpoint().unwrap();
        open_tx
            .update(
                t,
                &[Value::Integer(5)],
                &[Assign::Set(2, Value::Text("z".into()))],
            )
            .unwrap();
        open_tx
            .update(t, &[Value::Integer(1000)], &[Assign::Add(1, 5)])
            .unwrap();
        db.storage().wal().flush_all().unwrap();
        std::mem::forget(open_tx);
        crash(db, &dev, seed);

        let db = open(&dev, 1);
        let rep = db.recovery_report().clone();
        assert_eq!(rep.transactions_rolled_back, 1, "{rep:?}");
        assert!(rep.undo_records_rolled_back >= 400, "{rep:?}");
        let t = db.table_id("accounts").unwrap();
        let got = rows(&db, t, true);
        assert_eq!(got, expected, "seed {seed}");
        let mut tx = db.begin();
        for key in ["y", "z", "re", "u1"] {
            assert!(
                tx.get_by_index(t, 0, &[Value::Text(key.into())])
                    .unwrap()
                    .is_empty(),
                "{key}"
            );
        }
        tx.commit().unwrap();
        // The database goes on: new transactions, purge, a clean close and reopen.
        let mut tx = db.begin();
        tx.insert(t, account(2000, 3, "after")).unwrap();
        tx.update(t, &[Value::Integer(3)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
        db.gc(t).unwrap();
        assert_eq!(db.engine_counters().history_list_length, 0);
        expected.insert(2000, account(2000, 3, "after"));
        expected.get_mut(&3).unwrap()[1] = Value::BigInt(101);
        assert_eq!(rows(&db, t, true), expected);
        db.close().unwrap();
        let db = open(&dev, 1);
        assert_eq!(db.recovery_report().transactions_rolled_back, 0);
        assert_eq!(rows(&db, t, true), expected);
    }
}

/// The undo log's commit record is the commit (no XACT commit record, as in InnoDB): a
/// commit that returned survives a power cut right after it, and one that did not reach
/// its undo commit is rolled back.
#[test]
fn the_undo_commit_is_the_commit_and_is_durable_when_commit_returns() {
    for seed in [11u64, 12, 13, 14] {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        let t = db.create_table(counters_def()).unwrap();
        let mut tx = db.begin();
        tx.insert(t, vec![Value::Integer(1), Value::BigInt(0)])
            .unwrap();
        tx.commit().unwrap();
        db.storage().checkpoint().unwrap();
        for n in 1..=5 {
            let mut tx = db.begin();
            tx.update(t, &[Value::Integer(1)], &[Assign::Set(1, Value::BigInt(n))])
                .unwrap();
            tx.commit().unwrap();
        }
        let mut open_tx = db.begin();
        open_tx
            .update(
                t,
                &[Value::Integer(1)],
                &[Assign::Set(1, Value::BigInt(99))],
            )
            .unwrap();
        let types = db.wal_record_types();
        assert!(!types.contains_key("Transaction/COMMIT"), "{types:?}");
        assert!(types["Undo/WRITE"].records >= 6, "{types:?}");
        std::mem::forget(open_tx);
        crash(db, &dev, seed);
        let db = open(&dev, 0);
        let t = db.table_id("counters").unwrap();
        let mut tx = db.begin();
        let row = tx.get(t, &[Value::Integer(1)]).unwrap().unwrap();
        tx.commit().unwrap();
        assert_eq!(row[1], Value::BigInt(5), "seed {seed}");
    }
}

/// An in-place update of one column logs only the bytes that changed (PATCH_VALUE: the
/// system columns' changed tail and the column's changed bytes, as MariaDB's
/// `btr_cur_upd_rec_sys` and `btr_cur_upd_rec_in_place`), not the 200-byte column between
/// them; and redo of those records after a power cut gives back every committed value.
#[test]
fn an_in_place_update_logs_its_changed_bytes_and_redo_applies_them() {
    let def = TableDef {
        name: "wide".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("pad", ColumnType::Char(200)),
            Column::not_null("n", ColumnType::BigInt),
        ],
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    };
    let pad = "p".repeat(200);
    for seed in [21u64, 22, 23] {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        let t = db.create_table(def.clone()).unwrap();
        let mut tx = db.begin();
        for id in 1..=3 {
            tx.insert(
                t,
                vec![
                    Value::Integer(id),
                    Value::Text(pad.clone()),
                    Value::BigInt(0),
                ],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        db.storage().checkpoint().unwrap();
        let before = db.wal_record_types();
        let patches_before = before.get("Btree/PATCH_VALUE").map_or(0, |c| c.records);
        for n in 1..=20 {
            let mut tx = db.begin();
            tx.update(
                t,
                &[Value::Integer(1 + n % 3)],
                &[Assign::Set(2, Value::BigInt(n as i64))],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let types = db.wal_record_types();
        assert!(!types.contains_key("Btree/UPDATE_VALUE"), "{types:?}");
        let patch = &types["Btree/PATCH_VALUE"];
        let records = patch.records - patches_before;
        assert_eq!(records, 20, "one per update: {types:?}");
        let bytes = patch.record_bytes
            - before
                .get("Btree/PATCH_VALUE")
                .map_or(0, |c| c.record_bytes);
        assert!(
            bytes / records < 60,
            "{} bytes per PATCH_VALUE: the unchanged 200-byte pad was logged",
            bytes / records
        );
        crash(db, &dev, seed);
        let db = open(&dev, 0);
        let t = db.table_id("wide").unwrap();
        let mut tx = db.begin();
        for (id, n) in [(1, 18i64), (2, 19), (3, 20)] {
            let row = tx.get(t, &[Value::Integer(id)]).unwrap().unwrap();
            assert_eq!(row[2], Value::BigInt(n), "seed {seed}, id {id}");
            assert_eq!(row[1], Value::Text(pad.clone()), "seed {seed}, id {id}");
        }
        tx.commit().unwrap();
    }
}

#[test]
fn the_history_list_is_rebuilt_and_purged_after_a_crash() {
    let dev = Arc::new(CrashDevice::new());
    // No purge threads: the history waits for `gc`.
    let db = open(&dev, 0);
    let t = db.create_table(accounts_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..200 {
        tx.insert(t, account(id, 100, &format!("o{}", id % 3)))
            .unwrap();
    }
    tx.commit().unwrap();
    // Committed deletes (several transactions, several rollback segments) and updates
    // that move rows between secondary keys.
    for k in 0..10 {
        let mut tx = db.begin();
        for id in (k * 10)..(k * 10 + 8) {
            assert!(tx.delete(t, &[Value::Integer(id)]).unwrap());
        }
        tx.update(
            t,
            &[Value::Integer(150 + k)],
            &[Assign::Set(2, Value::Text("moved".into()))],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    // A big one: a multi-page update log.
    let mut tx = db.begin();
    for id in 100..140 {
        assert!(tx.delete(t, &[Value::Integer(id)]).unwrap());
    }
    tx.commit().unwrap();
    let before = db.engine_counters().history_list_length;
    assert_eq!(before, 11);
    let expected = rows(&db, t, true);
    crash(db, &dev, 7);

    let db = open(&dev, 0);
    let t = db.table_id("accounts").unwrap();
    assert_eq!(
        db.engine_counters().history_list_length,
        before,
        "every committed log is back in the history"
    );
    assert_eq!(rows(&db, t, true), expected);
    // Delete-marked rows are still there until purge.
    assert!(!db.row_versions(t, &[Value::Integer(0)]).unwrap().is_empty());
    let pages_before = db.engine_counters().undo_pages_in_use;
    db.gc(t).unwrap();
    let c = db.engine_counters();
    assert_eq!(c.history_list_length, 0);
    assert_eq!(c.purged_logs, before);
    assert!(c.purge_removed >= 120, "{c:?}");
    assert!(
        c.undo_pages_in_use < pages_before,
        "truncation freed the purged segments: {c:?}"
    );
    for id in (0..100).filter(|i| i % 10 < 8).chain(100..140) {
        assert!(
            db.row_versions(t, &[Value::Integer(id)])
                .unwrap()
                .is_empty(),
            "row {id} was purged"
        );
    }
    // The stale secondary entries of the moved rows are gone: only the new key finds them.
    assert_eq!(rows(&db, t, true), expected);
    let mut tx = db.begin();
    assert_eq!(
        tx.get_by_index(t, 0, &[Value::Text("moved".into())])
            .unwrap()
            .len(),
        10
    );
    tx.commit().unwrap();
    // And again after a crash right after the purge, its WAL flushed: nothing comes back
    // (without the flush, the truncation may be lost and the logs purged again).
    db.storage().wal().flush_all().unwrap();
    crash(db, &dev, 8);
    let db = open(&dev, 0);
    assert_eq!(db.engine_counters().history_list_length, 0);
    assert_eq!(rows(&db, t, true), expected);
}

struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ACCOUNTS: i32 = 16;
const COUNTERS: i32 = 4;

/// One worker: `n` transactions, each a transfer between two accounts and an increment of
/// one counter; acknowledged increments are counted in `acked`.
fn worker(db: &Database, a: TableId, c: TableId, seed: u64, n: usize, acked: &Mutex<Vec<i64>>) {
    let mut rng = SplitMix(seed);
    for _ in 0..n {
        let from = rng.below(ACCOUNTS as u64) as i32;
        let to = rng.below(ACCOUNTS as u64) as i32;
        let amt = rng.below(50) as i64;
        let k = rng.below(COUNTERS as u64) as i32;
        let mut tx = db.begin();
        let r = (|| -> mvcclab_engine::Result<()> {
            tx.update(a, &[Value::Integer(from)], &[Assign::Add(1, -amt)])?;
            tx.update(a, &[Value::Integer(to)], &[Assign::Add(1, amt)])?;
            tx.update(c, &[Value::Integer(k)], &[Assign::Add(1, 1)])?;
            Ok(())
        })();
        match r {
            Ok(()) => {
                if tx.commit().is_ok() {
                    acked.lock().unwrap()[k as usize] += 1;
                }
            }
            Err(Error::Txn(TxnError::Deadlock(..))) => drop(tx),
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn random_crashes_in_a_concurrent_workload_keep_every_acknowledged_commit_and_nothing_else() {
    for seed in 0..20u64 {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 1);
        let a = db.create_table(accounts_def()).unwrap();
        let c = db.create_table(counters_def()).unwrap();
        let mut tx = db.begin();
        for id in 0..ACCOUNTS {
            tx.insert(a, account(id, 100, &format!("o{}", id % 3)))
                .unwrap();
        }
        for id in 0..COUNTERS {
            tx.insert(c, vec![Value::Integer(id), Value::BigInt(0)])
                .unwrap();
        }
        tx.commit().unwrap();
        let acked = Mutex::new(vec![0i64; COUNTERS as usize]);
        let mut rng = SplitMix(seed * 1000 + 17);
        let rounds = 1 + rng.below(3);
        for round in 0..rounds {
            let n1 = 5 + rng.below(40) as usize;
            let n2 = 5 + rng.below(40) as usize;
            std::thread::scope(|s| {
                s.spawn(|| worker(&db, a, c, seed * 31 + round * 7 + 1, n1, &acked));
                s.spawn(|| worker(&db, a, c, seed * 31 + round * 7 + 2, n2, &acked));
            });
            if rng.below(2) == 0 {
                db.storage().checkpoint().unwrap();
            }
        }
        // In flight at the crash: a transaction that breaks the sum, increments every
        // counter and inserts rows; sometimes its changes reach the device.
        let mut open_tx = db.begin();
        let victim = rng.below(ACCOUNTS as u64) as i32;
        open_tx
            .update(a, &[Value::Integer(victim)], &[Assign::Add(1, 1000)])
            .unwrap();
        open_tx
            .update(
                a,
                &[Value::Integer((victim + 1) % ACCOUNTS)],
                &[Assign::Set(2, Value::Text("inflight".into()))],
            )
            .unwrap();
        for k in 0..COUNTERS {
            open_tx
                .update(c, &[Value::Integer(k)], &[Assign::Add(1, 1)])
                .unwrap();
        }
        for id in 0..rng.below(200) as i32 {
            open_tx
                .insert(a, account(10_000 + id, 0, "marker"))
                .unwrap();
        }
        let durable = rng.below(3);
        match durable {
            0 => {
                db.storage().checkpoint().unwrap();
            }
            1 => db.storage().wal().flush_all().unwrap(),
            _ => {}
        }
        std::mem::forget(open_tx);
        let acked = acked.into_inner().unwrap();
        crash(db, &dev, seed);

        let db = open(&dev, 1);
        // Its undo reached the device when the WAL was flushed: it is rolled back.
        let rolled_back = db.recovery_report().transactions_rolled_back;
        if durable < 2 {
            assert_eq!(rolled_back, 1, "seed {seed}: the transaction in flight");
        } else {
            assert!(rolled_back <= 1, "seed {seed}");
        }
        let a = db.table_id("accounts").unwrap();
        let c = db.table_id("counters").unwrap();
        let accounts = rows(&db, a, true);
        assert_eq!(accounts.len(), ACCOUNTS as usize, "seed {seed}");
        let sum: i64 = accounts.values().map(balance).sum();
        assert_eq!(sum, 100 * ACCOUNTS as i64, "seed {seed}: {accounts:?}");
        assert!(accounts
            .values()
            .all(|r| r[2] != Value::Text("inflight".into())));
        let counters: Vec<i64> = rows(&db, c, false).values().map(balance).collect();
        assert_eq!(
            counters,
            acked,
            "seed {seed}: every acknowledged increment, nothing else ({:?})",
            db.recovery_report()
        );
        // Work goes on after recovery, and purge empties the history.
        worker(
            &db,
            a,
            c,
            seed + 99,
            10,
            &Mutex::new(vec![0; COUNTERS as usize]),
        );
        db.gc(a).unwrap();
        assert_eq!(db.engine_counters().history_list_length, 0, "seed {seed}");
        let sum: i64 = rows(&db, a, true).values().map(balance).sum();
        assert_eq!(sum, 100 * ACCOUNTS as i64, "seed {seed}");
    }
}

#[test]
fn a_clean_close_and_reopen_keeps_everything() {
    let dev = Arc::new(CrashDevice::new());
    let db = open(&dev, 0);
    let t = db.create_table(accounts_def()).unwrap();
    let c = db.create_table(counters_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..300 {
        tx.insert(t, account(id, id as i64, &format!("o{}", id % 11)))
            .unwrap();
    }
    tx.insert(c, vec![Value::Integer(0), Value::BigInt(5)])
        .unwrap();
    tx.commit().unwrap();
    let mut tx = db.begin();
    for id in 0..50 {
        tx.update(
            t,
            &[Value::Integer(id)],
            &[Assign::Set(2, Value::Text("p".into()))],
        )
        .unwrap();
    }
    for id in 50..80 {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    let mut aborted = db.begin();
    aborted.insert(t, account(999, 0, "no")).unwrap();
    aborted.abort().unwrap();
    let expected = rows(&db, t, true);
    let next_before = {
        let mut tx = db.begin();
        tx.insert(t, account(5000, 1, "probe")).unwrap();
        tx.abort().unwrap();
        db.row_versions(t, &[Value::Integer(0)]).unwrap()[0].0
    };
    db.close().unwrap();
    dev.power_cut(3);
    let db = open(&dev, 0);
    let rep = db.recovery_report();
    assert_eq!(rep.transactions_rolled_back, 0, "{rep:?}");
    assert_eq!(db.table_id("counters").unwrap(), c);
    assert_eq!(rows(&db, t, true), expected);
    // New transactions get ids above every id on a row.
    let mut tx = db.begin();
    tx.update(t, &[Value::Integer(0)], &[Assign::Add(1, 1)])
        .unwrap();
    tx.commit().unwrap();
    let v = db.row_versions(t, &[Value::Integer(0)]).unwrap();
    assert!(v[0].0 > next_before, "{v:?}");
    let mut tx = db.begin();
    assert_eq!(
        tx.get(t, &[Value::Integer(0)])
            .unwrap()
            .map(|r| r[1].clone()),
        Some(Value::BigInt(1))
    );
    tx.commit().unwrap();
    db.gc(t).unwrap();
    db.close().unwrap();
    let db = open(&dev, 2);
    let mut expected = expected;
    expected.get_mut(&0).unwrap()[1] = Value::BigInt(1);
    assert_eq!(rows(&db, t, true), expected);
    assert_eq!(db.engine_counters().history_list_length, 0);
}

/// The power goes inside a home page write of a flush (after the batch's doublewrite copy
/// was synced): the page torn there is found by its checksum at open and restored from its
/// doublewrite copy (buf0dblwr.cc `buf_dblwr_t::recover`) before redo, and every committed
/// change is there.
#[test]
fn a_home_write_torn_by_the_power_cut_is_restored_from_the_doublewrite_area() {
    let mut torn_total = 0;
    for seed in 0..6u64 {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        let t = load_accounts(&db);
        db.storage().checkpoint().unwrap();
        let mut tx = db.begin();
        for id in 0..1500 {
            tx.update(t, &[Value::Integer(id)], &[Assign::Add(1, 1)])
                .unwrap();
        }
        tx.commit().unwrap();
        // The cut fires inside the (seed % 3 + 1)-th home page write of the flush.
        cut_in_flush(&db, &dev, seed % 3 + 1, seed);
        let (db, torn) = power_on_and_reopen(db, &dev, seed);
        torn_total += torn.len();
        let report = db.recovery_report().clone();
        assert_eq!(
            report.doublewrite_pages_restored,
            torn.len() as u64,
            "seed {seed}: torn {torn:?}, {report:?}"
        );
        let all = rows(&db, t, true);
        assert_eq!(all.len(), 1500);
        for (id, r) in &all {
            assert_eq!(balance(r), 101, "seed {seed}: account {id}");
        }
    }
    // The write in flight is torn in most cuts (a random prefix of its 32 sectors), though
    // a torn undo page whose new records all lie in the sectors that made it is whole.
    assert!(torn_total > 0, "no torn page over 6 cuts");
}

/// A page (re)initialized since its last write goes home without the doublewrite area
/// (MariaDB's REINIT pages, buf0flu.cc `buf_page_t::flush`), and a power cut that tears it
/// is repaired by redo, which rebuilds it from its init record without reading it
/// (log0recv.cc `page_recv_t::will_not_read`): every page of a table created after the
/// checkpoint is such a page.
#[test]
fn a_torn_page_initialized_since_its_last_write_is_rebuilt_by_redo() {
    let (mut torn_total, mut rebuilt_total) = (0, 0);
    for seed in 0..6u64 {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        db.storage().checkpoint().unwrap();
        let t = load_accounts(&db);
        let dblwr_before = db.storage().snapshot().counters.total().doublewrite_pages;
        cut_in_flush(&db, &dev, seed * 2 + 1, seed);
        let dblwr = db.storage().snapshot().counters.total().doublewrite_pages - dblwr_before;
        // Only pages that existed at the checkpoint go through the area: the rollback
        // segment's header, and the undo relation's file-space header and inode pages
        // (`btree::file_space`; the table's are initialized after it).
        assert!(
            dblwr <= 4,
            "seed {seed}: {dblwr} pages through the doublewrite area"
        );
        let (db, torn) = power_on_and_reopen(db, &dev, seed);
        torn_total += torn.len();
        let report = db.recovery_report().clone();
        // Only a page that went through the area can be restored from it (the undo
        // relation's file-space pages, when the cut tore one of them).
        assert!(
            report.doublewrite_pages_restored <= dblwr,
            "seed {seed}: {dblwr} through the area, {report:?}"
        );
        rebuilt_total += report.blocks_skipped;
        let all = rows(&db, t, true);
        assert_eq!(all.len(), 1500, "seed {seed}");
        for (id, r) in &all {
            assert_eq!(balance(r), 100, "seed {seed}: account {id}");
        }
    }
    assert!(torn_total > 0, "no torn page over 6 cuts");
    assert!(rebuilt_total > 0, "no record skipped for a later init");
}

/// A page changed after the checkpoint, then freed by a merge and initialized again by a
/// split that reuses it, is written without the doublewrite area; when that write is torn,
/// redo must not read it for the changes before its new init (log0recv.cc
/// `page_recv_t::will_not_read`): those are skipped and the page rebuilt from the init.
#[test]
fn redo_skips_a_reinitialized_page_s_earlier_records() {
    let mut torn_total = 0;
    for seed in 0..4u64 {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        let t = counters_merged_after_a_checkpoint(&db);
        insert_reusing_freed_leaves(&db, t);
        cut_in_flush(&db, &dev, seed * 6 + 1, seed);
        let (db, torn) = power_on_and_reopen(db, &dev, seed);
        torn_total += torn.len();
        assert_kept_and_reinserted(&db, t, seed);
    }
    assert!(torn_total > 0, "no torn page over 4 cuts");
}

/// `counters` with ids 0..12,000, checkpointed; then ids below 11,000 deleted and purged:
/// leaves changed after the checkpoint merge and are freed.
fn counters_merged_after_a_checkpoint(db: &Database) -> TableId {
    let t = db.create_table(counters_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..12_000 {
        tx.insert(t, vec![Value::Integer(id), Value::BigInt(0)])
            .unwrap();
    }
    tx.commit().unwrap();
    db.storage().checkpoint().unwrap();
    let mut tx = db.begin();
    for id in 0..11_000 {
        assert!(tx.delete(t, &[Value::Integer(id)]).unwrap());
    }
    tx.commit().unwrap();
    db.gc(t).unwrap();
    t
}

/// New keys 20,000..31,000: they split the last leaf again, reusing freed blocks.
fn insert_reusing_freed_leaves(db: &Database, t: TableId) {
    let mut tx = db.begin();
    for id in 20_000..31_000 {
        tx.insert(t, vec![Value::Integer(id), Value::BigInt(1)])
            .unwrap();
    }
    tx.commit().unwrap();
}

fn assert_kept_and_reinserted(db: &Database, t: TableId, seed: u64) {
    let ids: Vec<i32> = rows(db, t, false).into_keys().collect();
    let want: Vec<i32> = (11_000..12_000).chain(20_000..31_000).collect();
    assert_eq!(ids, want, "seed {seed}");
}

/// Leaves a merge freed are never written (buf0flu.cc `buf_page_t::flush` releases a
/// FREED block), so a checkpoint after the merge leaves their device images older than its
/// redo pointer: live-looking leaves no downlink names. Recovery from that checkpoint must
/// neither need nor be misled by them, before and after splits reuse the freed blocks.
#[test]
fn leaves_freed_and_never_written_before_a_checkpoint_are_not_needed_by_recovery() {
    for seed in 0..3u64 {
        let dev = Arc::new(CrashDevice::new());
        let db = open(&dev, 0);
        let t = counters_merged_after_a_checkpoint(&db);
        let merges = db.engine_counters().index_page_merge_successful;
        assert!(merges > 10, "seed {seed}: {merges} merges");
        db.storage().checkpoint().unwrap();
        crash(db, &dev, seed);
        let db = open(&dev, 0);
        let ids: Vec<i32> = rows(&db, t, false).into_keys().collect();
        assert_eq!(ids, (11_000..12_000).collect::<Vec<_>>(), "seed {seed}");
        insert_reusing_freed_leaves(&db, t);
        crash(db, &dev, seed + 100);
        let db = open(&dev, 0);
        assert_kept_and_reinserted(&db, t, seed);
    }
}
