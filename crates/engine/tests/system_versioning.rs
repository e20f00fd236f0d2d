//! System-versioned tables (`system_versioning=timestamp`, history in the same index) in
//! both presets: `FOR SYSTEM_TIME AS OF t` returns the state committed at `t` after inserts,
//! updates and deletes, for point, range and secondary-index reads; `BETWEEN` and `ALL`; a
//! deleted key can be inserted again; a rolled-back change leaves no history; `DELETE
//! HISTORY BEFORE`; `AS OF TRANSACTION`; the history survives a crash; and the switches'
//! refusals.

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{ColumnType, Row, TableDef, Value};
use mvcclab_engine::db::versioning::{ROW_END_MAX_US, TRX_ID_MAX};
use mvcclab_engine::db::{
    system_time_now_us, Assign, Database, DatabaseConfig, SystemTime, TableId,
};
use mvcclab_engine::design::{DesignConfig, HistoryStorage, SystemVersioning};
use mvcclab_engine::device::CrashDevice;
use mvcclab_engine::Error;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

fn versioned(mut d: DesignConfig) -> DesignConfig {
    d.system_versioning = SystemVersioning::Timestamp;
    d
}

/// Every way a preset keeps history: the same index in both; a history partition (innodb,
/// MariaDB's PARTITION BY SYSTEM_TIME); a history table (postgres, the periods extension).
fn versioned_designs() -> Vec<DesignConfig> {
    let mut out = Vec::new();
    for (d, other) in [
        (DesignConfig::postgres(), HistoryStorage::HistoryTable),
        (DesignConfig::innodb(), HistoryStorage::Partition),
    ] {
        for hs in [HistoryStorage::SameIndex, other] {
            let mut v = versioned(d.clone());
            v.history_storage = hs;
            v.name = format!("{}/{hs:?}", d.name);
            out.push(v);
        }
        // By transaction id (not with partitions: MDEV-15951).
        let mut v = d.clone();
        v.system_versioning = SystemVersioning::TrxId;
        v.name = format!("{}/TrxId", d.name);
        out.push(v);
    }
    out
}

/// Every version of table `t`'s rows (`FOR SYSTEM_TIME ALL`), in key order.
fn all_versions(tx: &mut mvcclab_engine::db::Transaction, t: TableId) -> Vec<Row> {
    tx.scan_system_time(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        usize::MAX,
        SystemTime::All,
    )
    .unwrap()
}

/// Whether a row is current: row_end is the period's maximum.
fn is_current(r: &Row) -> bool {
    r[5] == Value::Timestamp(ROW_END_MAX_US) || r[5] == Value::BigInt(TRX_ID_MAX)
}

/// `accounts(id PK, balance, owner)` with a non-unique index on owner and a unique one on
/// `code`.
fn def() -> TableDef {
    mvcclab_engine::testkit::versioned_accounts_def()
}

fn row(id: i32, balance: i64, owner: &str, code: i32) -> Row {
    vec![
        Value::Integer(id),
        Value::BigInt(balance),
        Value::text(owner),
        Value::Integer(code),
    ]
}

/// The declared columns of a versioned row (without row_start, row_end).
fn strip(rows: Vec<Row>) -> Vec<Row> {
    rows.into_iter()
        .map(|mut r| {
            r.truncate(r.len() - 2);
            r
        })
        .collect()
}

type Model = BTreeMap<i32, Row>;

/// The steps: each one transaction, committed; returns the model after each and a time
/// taken after its commit (before the next step).
fn run_steps(db: &Database, t: TableId) -> Vec<(i64, Model)> {
    let mut m = Model::new();
    let mut out = vec![(system_time_now_us(), m.clone())];
    // 1: inserts.
    let mut tx = db.begin();
    for id in 1..=5 {
        let r = row(
            id,
            100 * id as i64,
            if id % 2 == 0 { "even" } else { "odd" },
            id,
        );
        tx.insert(t, r.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", db.design().name));
        m.insert(id, r);
    }
    tx.commit().unwrap();
    out.push((system_time_now_us(), m.clone()));
    // 2: updates of a non-indexed and of an indexed column.
    let mut tx = db.begin();
    assert!(tx
        .update(t, &[Value::Integer(2)], &[Assign::Add(1, 10)])
        .unwrap());
    m.get_mut(&2).unwrap()[1] = Value::BigInt(210);
    assert!(tx
        .update(
            t,
            &[Value::Integer(3)],
            &[Assign::Set(2, Value::text("even"))]
        )
        .unwrap());
    m.get_mut(&3).unwrap()[2] = Value::text("even");
    tx.commit().unwrap();
    out.push((system_time_now_us(), m.clone()));
    // 3: a delete, and a second update of row 2.
    let mut tx = db.begin();
    assert!(tx.delete(t, &[Value::Integer(4)]).unwrap());
    m.remove(&4);
    assert!(tx
        .update(t, &[Value::Integer(2)], &[Assign::Add(1, 1)])
        .unwrap());
    m.get_mut(&2).unwrap()[1] = Value::BigInt(211);
    tx.commit().unwrap();
    out.push((system_time_now_us(), m.clone()));
    // 4: the deleted key inserted again, with the unique code the old row had.
    let mut tx = db.begin();
    let r = row(4, 44, "odd", 4);
    tx.insert(t, r.clone()).unwrap();
    m.insert(4, r);
    tx.commit().unwrap();
    out.push((system_time_now_us(), m.clone()));
    out
}

fn check_as_of(db: &Database, t: TableId, steps: &[(i64, Model)], name: &str) {
    for (i, (at, m)) in steps.iter().enumerate() {
        let when = SystemTime::AsOf(*at);
        let mut tx = db.begin();
        let all = tx
            .scan_system_time(
                t,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                usize::MAX,
                when,
            )
            .unwrap();
        let want: Vec<Row> = m.values().cloned().collect();
        assert_eq!(strip(all), want, "{name}: full scan as of step {i}");
        for id in 0..=6 {
            let got = strip(tx.get_system_time(t, &[Value::Integer(id)], when).unwrap());
            let want: Vec<Row> = m.get(&id).cloned().into_iter().collect();
            assert_eq!(got, want, "{name}: id {id} as of step {i}");
        }
        let range = tx
            .scan_system_time(
                t,
                Bound::Included(&[Value::Integer(2)][..]),
                Bound::Excluded(&[Value::Integer(5)][..]),
                ScanDirection::Backward,
                2,
                when,
            )
            .unwrap();
        let want: Vec<Row> = m
            .range(2..5)
            .rev()
            .take(2)
            .map(|(_, r)| r.clone())
            .collect();
        assert_eq!(strip(range), want, "{name}: range as of step {i}");
        for owner in ["odd", "even"] {
            let mut got = strip(
                tx.get_by_index_system_time(t, 0, &[Value::text(owner)], when)
                    .unwrap(),
            );
            got.sort_by_key(|r| format!("{:?}", r[0]));
            let mut want: Vec<Row> = m
                .values()
                .filter(|r| r[2] == Value::text(owner))
                .cloned()
                .collect();
            want.sort_by_key(|r| format!("{:?}", r[0]));
            assert_eq!(got, want, "{name}: owner {owner} as of step {i}");
        }
        tx.commit().unwrap();
    }
}

#[test]
fn as_of_returns_the_state_committed_at_each_step() {
    for design in versioned_designs() {
        let name = design.name.clone();
        let storage = design.history_storage;
        let db = open_db(design, 256);
        let t = db.create_table(def()).unwrap();
        let d = db.table_def(t).unwrap();
        assert_eq!(d.columns.len(), 6, "{name}: row_start, row_end appended");
        // MariaDB appends row_end to every unique key; the periods extension (history
        // table) leaves the keys as declared.
        let by_periods = storage == HistoryStorage::HistoryTable;
        assert_eq!(
            d.primary_key,
            if by_periods { vec![0] } else { vec![0, 5] },
            "{name}: row_end in the primary key unless periods"
        );
        assert_eq!(
            d.indexes[1].columns,
            if by_periods { vec![3] } else { vec![3, 5] },
            "{name}: and in the unique index"
        );
        assert_eq!(
            d.indexes[0].columns,
            vec![2],
            "{name}: not in a non-unique one"
        );
        let steps = run_steps(&db, t);
        check_as_of(&db, t, &steps, &name);
        let trx = db.design().system_versioning == SystemVersioning::TrxId;
        if trx {
            // One registry row per committed transaction that changed the table.
            assert_eq!(registry(&db).len(), 4, "{name}");
            assert_eq!(d.columns[4].ty, ColumnType::BigInt, "{name}");
        } else {
            assert!(db.table_id("transaction_registry").is_err(), "{name}");
        }

        // Current reads see only the current rows, with row_end = max.
        let last = &steps.last().unwrap().1;
        let mut tx = db.begin();
        let cur = tx
            .scan(
                t,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                100,
            )
            .unwrap();
        assert!(cur.iter().all(is_current), "{name}");
        assert_eq!(
            strip(cur),
            last.values().cloned().collect::<Vec<_>>(),
            "{name}"
        );
        let r2 = tx.get(t, &[Value::Integer(2)]).unwrap().unwrap();
        assert_eq!(r2[1], Value::BigInt(211), "{name}");
        let by_code = strip(tx.get_by_index(t, 1, &[Value::Integer(4)]).unwrap());
        assert_eq!(by_code, vec![row(4, 44, "odd", 4)], "{name}");
        assert!(tx.get(t, &[Value::Integer(9)]).unwrap().is_none());
        // A current row's key is still unique.
        assert!(tx.insert(t, row(1, 0, "x", 99)).is_err(), "{name}");
        drop(tx);

        // ALL: 5 inserts + 3 updates' history rows + the reinserted row (the delete turned
        // the current row 4 into history).
        let mut tx = db.begin();
        let all = all_versions(&mut tx, t);
        assert_eq!(all.len(), 9, "{name}: {all:?}");
        // With a history partition or table, the history rows live there, not beside the
        // current rows.
        let hist_name = match storage {
            HistoryStorage::SameIndex => None,
            HistoryStorage::Partition => Some("accounts#p_hist"),
            HistoryStorage::HistoryTable => Some("accounts_history"),
        };
        if let Some(h) = hist_name {
            let h = db.table_id(h).unwrap();
            if by_periods {
                // CREATE TABLE accounts_history (LIKE accounts): no key, no index.
                let hd = db.table_def(h).unwrap();
                assert!(
                    hd.primary_key.is_empty() && hd.indexes.is_empty(),
                    "{name}: {hd:?}"
                );
                assert_eq!(hd.columns, d.columns, "{name}");
            }
            let hist = all_versions(&mut tx, h);
            assert_eq!(hist.len(), 4, "{name}");
            assert!(
                hist.iter()
                    .all(|r| r[5] != Value::Timestamp(ROW_END_MAX_US)),
                "{name}"
            );
        } else {
            assert!(
                db.table_id("accounts#p_hist").is_err() && db.table_id("accounts_history").is_err()
            );
        }
        // BETWEEN the first and the last step: row 2 in its three versions.
        let v2 = tx
            .get_system_time(
                t,
                &[Value::Integer(2)],
                SystemTime::Between(steps[1].0, steps[4].0),
            )
            .unwrap();
        let balances: Vec<Value> = v2.iter().map(|r| r[1].clone()).collect();
        assert_eq!(
            balances,
            vec![Value::BigInt(200), Value::BigInt(210), Value::BigInt(211)],
            "{name}: ordered by row_end"
        );
        // History periods chain: each history row of 2 ends where the next one starts.
        let periods: Vec<(Value, Value)> =
            v2.iter().map(|r| (r[4].clone(), r[5].clone())).collect();
        assert_eq!(periods[0].1, periods[1].0, "{name}");
        assert_eq!(periods[1].1, periods[2].0, "{name}");
        // AS OF before the first step: nothing.
        assert!(tx
            .get_system_time(t, &[Value::Integer(1)], SystemTime::AsOf(steps[0].0))
            .unwrap()
            .is_empty());
        tx.commit().unwrap();

        // A rolled-back update and delete leave no history.
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(1)], &[Assign::Add(1, 5)])
            .unwrap();
        tx.delete(t, &[Value::Integer(5)]).unwrap();
        tx.abort().unwrap();
        let mut tx = db.begin();
        let all2 = all_versions(&mut tx, t);
        assert_eq!(all2, all, "{name}");
        tx.commit().unwrap();
        if trx {
            assert_eq!(registry(&db).len(), 4, "{name}: none for a rollback");
        }

        if by_periods {
            // The periods extension has no DELETE HISTORY, and its history table no key.
            let mut tx = db.begin();
            let e = tx.delete_history(t, steps[2].0).unwrap_err().to_string();
            assert!(e.contains("history_table"), "{name}: {e}");
            drop(tx);
            db.gc(t).unwrap();
            let (_, problems) = db.check_indexes(t).unwrap();
            assert!(problems.is_empty(), "{name}: {problems:?}");
            continue;
        }
        // DELETE HISTORY BEFORE the last step removes the four history rows (two of row 2,
        // one each of rows 3 and 4: their row_end is before it), keeps the current ones, and AS OF the last step still
        // holds.
        let mut tx = db.begin();
        assert_eq!(
            tx.delete_history(t, steps[2].0).unwrap(),
            2,
            "{name}: ended in step 2"
        );
        assert_eq!(
            tx.delete_history(t, steps[4].0).unwrap(),
            2,
            "{name}: ended in step 3"
        );
        tx.commit().unwrap();
        let mut tx = db.begin();
        let all3 = all_versions(&mut tx, t);
        assert_eq!(all3.len(), 5, "{name}");
        tx.commit().unwrap();
        check_as_of(&db, t, &steps[4..], &name);
        db.gc(t).unwrap();
        let (_, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
}

/// The postgres preset with `history_storage=history_table` follows the periods
/// extension's triggers (periods.c `generated_always_as_row_start_end`, `write_history`),
/// where same_index follows MariaDB: every row a transaction writes gets the transaction's
/// start as row_start (`transaction_timestamp()`), not its statement's time; an UPDATE or
/// DELETE of a row the same transaction wrote leaves no history row (its row_start is the
/// transaction's start); and an UPDATE at read committed of a row written by a transaction
/// that started later fails with "invalid row version" (SQLSTATE 2201H).
#[test]
fn history_table_follows_the_periods_triggers() {
    for hs in [HistoryStorage::HistoryTable, HistoryStorage::SameIndex] {
        let mut design = versioned(DesignConfig::postgres());
        design.history_storage = hs;
        let periods = hs == HistoryStorage::HistoryTable;
        let db = open_db(design, 256);
        let t = db.create_table(def()).unwrap();
        // One transaction: two inserts in two statements, an update of each, a delete of
        // the second.
        let mut tx = db.begin();
        tx.insert(t, row(1, 100, "odd", 1)).unwrap();
        tx.insert(t, row(2, 200, "even", 2)).unwrap();
        assert!(tx
            .update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap());
        assert!(tx
            .update(t, &[Value::Integer(2)], &[Assign::Add(1, 1)])
            .unwrap());
        assert!(tx.delete(t, &[Value::Integer(2)]).unwrap());
        tx.commit().unwrap();
        let mut tx = db.begin();
        let all = all_versions(&mut tx, t);
        tx.commit().unwrap();
        if periods {
            // Nothing but the current row 1: the update and delete of rows this
            // transaction wrote wrote no history (row_start = transaction start).
            assert_eq!(strip(all.clone()), vec![row(1, 101, "odd", 1)], "{hs:?}");
        } else {
            // MariaDB: each statement its own time, so the update of row 1 wrote the
            // inserted version as history, and row 2's insert and update both did.
            assert_eq!(all.len(), 4, "{hs:?}: {all:?}");
        }

        // A later transaction of three statements: every row it writes has the same
        // row_start with periods, three different ones with MariaDB's statement times.
        let mut tx = db.begin();
        tx.insert(t, row(3, 300, "odd", 3)).unwrap();
        tx.insert(t, row(4, 400, "even", 4)).unwrap();
        assert!(tx
            .update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap());
        tx.commit().unwrap();
        let mut tx = db.begin();
        let mut starts: Vec<String> = [1, 3, 4]
            .iter()
            .map(|&id| {
                format!(
                    "{:?}",
                    tx.get(t, &[Value::Integer(id)]).unwrap().unwrap()[4]
                )
            })
            .collect();
        starts.dedup();
        tx.commit().unwrap();
        assert_eq!(
            starts.len(),
            if periods { 1 } else { 3 },
            "{hs:?}: {starts:?}"
        );

        // Read committed: a transaction that began first updates a row written by one
        // that began later and committed before the update.
        let mut early = db.begin();
        let mut late = db.begin();
        assert!(late
            .update(t, &[Value::Integer(3)], &[Assign::Add(1, 1)])
            .unwrap());
        late.commit().unwrap();
        let r = early.update(t, &[Value::Integer(3)], &[Assign::Add(1, 1)]);
        if periods {
            match r {
                Err(Error::Txn(e)) => assert_eq!(e.sqlstate(), "2201H", "{e}"),
                other => panic!("{hs:?}: expected invalid row version, got {other:?}"),
            }
        } else {
            assert!(r.unwrap(), "{hs:?}: MariaDB skips the history row instead");
            early.commit().unwrap();
        }
    }
}

/// `AS OF TRANSACTION n` on a table versioned by transaction id: what each step's
/// transaction saw as it committed (its own changes included) is the state after that
/// step; a transaction not in the registry, and a table versioned by timestamp, are
/// errors (MariaDB ER_VERS_NO_TRX_ID, ER_VERS_ENGINE_UNSUPPORTED).
#[test]
fn as_of_transaction_sees_what_the_transaction_saw() {
    for d in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let mut design = d.clone();
        design.system_versioning = SystemVersioning::TrxId;
        let name = design.name.clone();
        let db = open_db(design, 256);
        let t = db.create_table(def()).unwrap();
        let steps = run_steps(&db, t);
        // (transaction_id, commit_id) in commit order.
        let trx = registry(&db);
        let mut tx = db.begin();
        assert_eq!(trx.len(), 4, "{name}");
        for (i, (n, _)) in trx.iter().enumerate() {
            let rows = tx
                .scan_system_time(
                    t,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    ScanDirection::Forward,
                    100,
                    SystemTime::AsOfTransaction(*n),
                )
                .unwrap();
            assert_eq!(
                strip(rows),
                steps[i + 1].1.values().cloned().collect::<Vec<_>>(),
                "{name}: as of the transaction of step {}",
                i + 1
            );
        }
        let unknown = trx.iter().map(|x| x.0).max().unwrap() + 1_000;
        let e = tx
            .get_system_time(
                t,
                &[Value::Integer(1)],
                SystemTime::AsOfTransaction(unknown),
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidValue(_)), "{name}: {e}");
        // The first error aborted the transaction.
        assert!(tx.commit().is_err(), "{name}");
    }
    let db = open_db(versioned(DesignConfig::innodb()), 256);
    let t = db.create_table(def()).unwrap();
    run_steps(&db, t);
    let mut tx = db.begin();
    let e = tx
        .get_system_time(t, &[Value::Integer(1)], SystemTime::AsOfTransaction(1))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidConfig(_)), "{e}");
    assert!(tx.commit().is_err());
}

#[test]
fn period_columns_are_generated_always_and_plain_tables_refuse_system_time() {
    for design in designs() {
        let name = design.name.clone();
        let db = open_db(versioned(design.clone()), 64);
        let t = db.create_table(def()).unwrap();
        let mut tx = db.begin();
        let mut full = row(1, 1, "a", 1);
        full.push(Value::Timestamp(0));
        full.push(Value::Timestamp(ROW_END_MAX_US));
        let e = tx.insert(t, full).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidValue(m) if m.contains("GENERATED ALWAYS")),
            "{name}: {e}"
        );
        let mut tx = db.begin();
        tx.insert(t, row(1, 1, "a", 1)).unwrap();
        let e = tx
            .update(
                t,
                &[Value::Integer(1)],
                &[Assign::Set(5, Value::Timestamp(0))],
            )
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidValue(m) if m.contains("period column")),
            "{name}: {e}"
        );
        let mut bad = def();
        bad.name = "bad".into();
        bad.columns[1].name = "row_end".into();
        assert!(
            matches!(db.create_table(bad), Err(Error::Catalog(_))),
            "{name}"
        );

        let plain = open_db(design, 64);
        let t = plain.create_table(def()).unwrap();
        let mut tx = plain.begin();
        let e = tx
            .get_system_time(t, &[Value::Integer(1)], SystemTime::All)
            .unwrap_err();
        assert!(
            matches!(&e, Error::Catalog(m) if m.contains("not system-versioned")),
            "{name}: {e}"
        );
    }
}

#[test]
fn switches_that_cannot_combine_or_are_not_built_are_refused() {
    let d = DesignConfig {
        system_versioning: SystemVersioning::TrxId,
        history_storage: HistoryStorage::Partition,
        ..DesignConfig::innodb()
    };
    let e = Database::open(DatabaseConfig::new(d))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("MDEV-15951"), "{e}");
    let d = DesignConfig {
        system_versioning: SystemVersioning::Timestamp,
        history_storage: HistoryStorage::Partition,
        ..DesignConfig::postgres()
    };
    let e = Database::open(DatabaseConfig::new(d))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("history_storage=partition") && e.contains("table_layout=heap"),
        "{e}"
    );
}

/// The history survives a crash: after recovery every AS OF read returns what it returned
/// before, and a transaction open at the crash left neither its change nor a history row.
#[test]
fn history_survives_a_crash() {
    for design in versioned_designs() {
        let name = design.name.clone();
        let dev = Arc::new(CrashDevice::new());
        let db = Database::open(crash_db_config(design.clone(), &dev)).unwrap();
        let t = db.create_table(def()).unwrap();
        let steps = run_steps(&db, t);
        let mut open_tx = db.begin();
        open_tx
            .update(t, &[Value::Integer(1)], &[Assign::Add(1, 7)])
            .unwrap();
        open_tx.delete(t, &[Value::Integer(3)]).unwrap();
        db.storage().wal().flush_all().unwrap();
        std::mem::forget(open_tx);
        drop(db);
        dev.power_cut(11);
        let db = Database::open(crash_db_config(design, &dev)).unwrap();
        let t = db.table_id("accounts").unwrap();
        check_as_of(&db, t, &steps, &name);
        let mut tx = db.begin();
        let all = all_versions(&mut tx, t);
        assert_eq!(all.len(), 9, "{name}");
        tx.commit().unwrap();
        // And versioning goes on after recovery.
        let mut tx = db.begin();
        assert!(tx
            .update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap());
        tx.commit().unwrap();
        let mut tx = db.begin();
        let v1 = tx
            .get_system_time(t, &[Value::Integer(1)], SystemTime::All)
            .unwrap();
        assert_eq!(v1.len(), 2, "{name}");
        tx.commit().unwrap();
        db.gc(t).unwrap();
        let (_, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "{name}: {problems:?}");
    }
}

/// `transaction_registry` as (transaction_id, commit_id) rows in commit-id order.
fn registry(db: &Database) -> Vec<(i64, i64)> {
    mvcclab_engine::testkit::transaction_registry_rows(db).unwrap()
}

/// Each registry row's commit_id is a value of the transaction id sequence taken at its
/// commit, as MariaDB 10.11 takes it (ha_innodb.cc `innodb_prepare_commit_versioned`:
/// `trx_sys.get_new_trx_id()`): above the transaction's own id and below the id of every
/// transaction that began to write after that commit — also after a crash, when the next
/// id recovery finds would otherwise equal the last commit id.
#[test]
fn commit_ids_come_from_the_transaction_id_sequence_also_after_a_crash() {
    for d in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let mut design = d.clone();
        design.system_versioning = SystemVersioning::TrxId;
        let name = design.name.clone();
        let dev = Arc::new(CrashDevice::new());
        let db = Database::open(crash_db_config(design.clone(), &dev)).unwrap();
        let t = db.create_table(def()).unwrap();
        run_steps(&db, t);
        let before = registry(&db);
        assert_eq!(before.len(), 4, "{name}");
        for (i, &(trx, commit)) in before.iter().enumerate() {
            assert!(
                trx < commit,
                "{name}: row {i}: commit_id {commit} after trx {trx}"
            );
            if let Some(&(next, _)) = before.get(i + 1) {
                assert!(
                    commit < next,
                    "{name}: row {i}: commit_id {commit} before the next transaction {next}"
                );
            }
        }
        db.storage().wal().flush_all().unwrap();
        drop(db);
        dev.power_cut(5);
        let db = Database::open(crash_db_config(design, &dev)).unwrap();
        let t = db.table_id("accounts").unwrap();
        assert_eq!(registry(&db), before, "{name}: the registry survives");
        let mut tx = db.begin();
        assert!(tx
            .update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap());
        tx.commit().unwrap();
        let after = registry(&db);
        let (last_trx, last_commit) = *after.last().unwrap();
        let prev_commit = before.last().unwrap().1;
        assert!(
            prev_commit < last_trx && last_trx < last_commit,
            "{name}: after recovery {prev_commit} < {last_trx} < {last_commit}"
        );
    }
}

/// A current read by a secondary key on a table with history in the same index looks up
/// only the entries whose row_end is the maximum: the condition on row_end is tested on
/// the secondary entry (which ends with the primary key, row_end included) before the
/// clustered record is read, as MariaDB's index condition pushdown does (its EXPLAIN
/// shows `index_condition: row_end = TIMESTAMP'2038-01-19 03:14:07.999999'`). The
/// postgres preset's index entries hold TIDs: each one is fetched, as before.
#[test]
fn current_secondary_reads_push_row_end_down_to_the_index() {
    for (design, want) in [(DesignConfig::innodb(), 1), (DesignConfig::postgres(), 6)] {
        let name = design.name.clone();
        let db = open_db(versioned(design), 256);
        let t = db.create_table(def()).unwrap();
        let mut tx = db.begin();
        tx.insert(t, row(1, 0, "solo", 1)).unwrap();
        tx.commit().unwrap();
        for _ in 0..5 {
            let mut tx = db.begin();
            assert!(tx
                .update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
                .unwrap());
            tx.commit().unwrap();
        }
        db.gc(t).unwrap();
        let before = db.table_stats(t).unwrap().versions_traversed;
        let mut tx = db.begin();
        let got = strip(tx.get_by_index(t, 0, &[Value::text("solo")]).unwrap());
        tx.commit().unwrap();
        assert_eq!(got, vec![row(1, 5, "solo", 1)], "{name}");
        let examined = db.table_stats(t).unwrap().versions_traversed - before;
        assert_eq!(examined, want, "{name}: versions examined by the read");
        // AS OF the first state: the entries whose row_end is past it (all of them here).
        let mut tx = db.begin();
        let all = tx
            .get_by_index_system_time(t, 0, &[Value::text("solo")], SystemTime::All)
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(all.len(), 6, "{name}");
    }
}
