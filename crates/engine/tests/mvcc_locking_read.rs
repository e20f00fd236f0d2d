//! `SELECT ... FOR UPDATE` (`Transaction::get_for_update`) on every design: the lock
//! conflicts with writers and other locking reads (a deadlock between two of them is
//! detected), plain reads ignore it, a read-modify-write through it loses no update, and
//! each design does what its engine does: postgres WAL-logs the lock as Heap/LOCK and
//! fails at repeatable read on a row changed since the snapshot (heapam.c
//! `heap_lock_tuple`); innodb logs nothing and returns the newest committed version
//! (row0sel.cc `row_search_mvcc` with LOCK_X).

mod common;
use common::*;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::VersionStorage;
use mvcclab_engine::error::TxnError;
use mvcclab_engine::mvcc::Isolation;
use mvcclab_engine::Error;
use std::sync::Arc;

const START: i64 = 1000;

fn setup(db: &Database) -> TableId {
    let t = db.create_table(accounts_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..10 {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::BigInt(START),
                Value::Text(format!("owner{id}")),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    t
}

fn balance(row: &[Value]) -> i64 {
    match row[1] {
        Value::BigInt(b) => b,
        ref v => panic!("balance {v:?}"),
    }
}

fn wal_records(db: &Database, name: &str) -> u64 {
    db.wal_record_types().get(name).map_or(0, |c| c.records)
}

#[test]
fn a_locked_row_is_read_freely_and_only_postgres_logs_the_lock() {
    for design in designs() {
        let undo = design.version_storage == VersionStorage::UndoDelta;
        let db = open_db(design.clone(), 64);
        let t = setup(&db);
        let locks_before = wal_records(&db, "Heap/LOCK");
        let mut locker = db.begin();
        let row = locker.get_for_update(t, &[Value::Integer(4)]).unwrap();
        assert_eq!(balance(&row.unwrap()), START, "{}", design.name);
        assert!(locker
            .get_for_update(t, &[Value::Integer(99)])
            .unwrap()
            .is_none());
        // A second lock of the same row by its holder changes nothing.
        assert!(locker
            .get_for_update(t, &[Value::Integer(4)])
            .unwrap()
            .is_some());
        let logged = wal_records(&db, "Heap/LOCK") - locks_before;
        assert_eq!(
            logged,
            u64::from(!undo),
            "{}: Heap/LOCK records",
            design.name
        );
        // A plain read does not wait for the lock.
        let mut reader = db.begin();
        assert_eq!(
            balance(&reader.get(t, &[Value::Integer(4)]).unwrap().unwrap()),
            START
        );
        reader.commit().unwrap();
        // The holder may update the row it locked.
        assert!(locker
            .update(t, &[Value::Integer(4)], &[Assign::Add(1, 1)])
            .unwrap());
        locker.commit().unwrap();
        let mut tx = db.begin();
        assert_eq!(
            balance(&tx.get(t, &[Value::Integer(4)]).unwrap().unwrap()),
            START + 1
        );
    }
}

/// Two transactions each lock one row, then ask for the other's: only a lock that
/// conflicts can close the cycle, so exactly one of them is the deadlock victim.
#[test]
fn two_locking_reads_in_a_cycle_are_a_deadlock() {
    for design in designs() {
        let db = Arc::new(open_db(design.clone(), 64));
        let t = setup(&db);
        let msg = lock_cycle(&db, (1, 2), move |tx, k| {
            tx.get_for_update(t, &[Value::Integer(k)]).map(|_| ())
        });
        assert!(msg.contains("deadlock detected"), "{}: {msg}", design.name);
    }
}

/// The read-modify-write of sysbench-tpcc's new-order (`SELECT d_next_o_id ... FOR
/// UPDATE`, then `UPDATE ... SET d_next_o_id = <read value + 1>`) from four threads: every
/// increment counts, at read committed and at repeatable read (postgres: retried after
/// its serialization failures).
#[test]
fn read_modify_write_through_a_locking_read_loses_no_update() {
    for design in designs() {
        for iso in [Isolation::ReadCommitted, Isolation::RepeatableRead] {
            let db = Arc::new(open_db(design.clone(), 64));
            let t = setup(&db);
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let db = db.clone();
                    std::thread::spawn(move || {
                        let mut done = 0;
                        while done < 40 {
                            let mut tx = db.begin_with(iso);
                            let r = tx.get_for_update(t, &[Value::Integer(7)]).and_then(|row| {
                                let b = balance(&row.expect("row 7"));
                                tx.update(
                                    t,
                                    &[Value::Integer(7)],
                                    &[Assign::Set(1, Value::BigInt(b + 1))],
                                )
                            });
                            match r {
                                Ok(true) => {
                                    tx.commit().unwrap();
                                    done += 1;
                                }
                                Ok(false) => panic!("row 7 vanished"),
                                Err(Error::Txn(TxnError::SerializationFailure(_))) => {}
                                Err(e) => panic!("{e}"),
                            }
                        }
                    })
                })
                .collect();
            for th in threads {
                th.join().unwrap();
            }
            let mut tx = db.begin();
            assert_eq!(
                balance(&tx.get(t, &[Value::Integer(7)]).unwrap().unwrap()),
                START + 160,
                "{} at {iso:?}: every increment counted",
                design.name
            );
        }
    }
}

/// A repeatable-read transaction locks a row changed since its snapshot: PostgreSQL
/// fails ("could not serialize access due to concurrent update"), InnoDB's locking read
/// returns the newest committed version.
#[test]
fn repeatable_read_locking_read_of_a_concurrently_changed_row() {
    for design in designs() {
        let undo = design.version_storage == VersionStorage::UndoDelta;
        let db = open_db(design.clone(), 64);
        let t = setup(&db);
        let mut rr = db.begin_with(Isolation::RepeatableRead);
        assert_eq!(
            balance(&rr.get(t, &[Value::Integer(1)]).unwrap().unwrap()),
            START
        );
        let mut w = db.begin();
        w.update(t, &[Value::Integer(1)], &[Assign::Set(1, Value::BigInt(5))])
            .unwrap();
        w.commit().unwrap();
        let r = rr.get_for_update(t, &[Value::Integer(1)]);
        if undo {
            assert_eq!(
                balance(&r.unwrap().unwrap()),
                5,
                "the newest committed version"
            );
            // ... while the plain read still sees the snapshot's.
            assert_eq!(
                balance(&rr.get(t, &[Value::Integer(1)]).unwrap().unwrap()),
                START
            );
        } else {
            let e = r.unwrap_err();
            assert!(
                matches!(e, Error::Txn(TxnError::SerializationFailure(_))),
                "{}: {e}",
                design.name
            );
        }
    }
}
