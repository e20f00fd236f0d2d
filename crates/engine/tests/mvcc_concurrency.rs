//! Concurrency behaviour every design must show (one body, run for each design): bank
//! transfers keep the total, no reader sees half a transaction, no lost update at read
//! committed, serialization failure at repeatable read, deadlocks detected.

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::error::TxnError;
use mvcclab_engine::mvcc::Isolation;
use mvcclab_engine::Error;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const ACCOUNTS: i32 = 50;
const START: i64 = 1000;

fn setup(db: &Database) -> TableId {
    let t = db.create_table(accounts_def()).unwrap();
    let mut tx = db.begin();
    for id in 0..ACCOUNTS {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::BigInt(START),
                Value::Text(format!("owner{}", id % 7)),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    t
}

fn total(db: &Database, t: TableId, iso: Isolation) -> i64 {
    let mut tx = db.begin_with(iso);
    let rows = tx
        .scan(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
            usize::MAX,
        )
        .unwrap();
    assert_eq!(
        rows.len(),
        ACCOUNTS as usize,
        "every account visible exactly once"
    );
    tx.commit().unwrap();
    rows.iter()
        .map(|r| match r[1] {
            Value::BigInt(b) => b,
            _ => panic!("balance type"),
        })
        .sum()
}

fn retryable(e: &Error) -> bool {
    matches!(
        e,
        Error::Txn(TxnError::SerializationFailure(_)) | Error::Txn(TxnError::Deadlock(_))
    )
}

#[test]
fn bank_transfers_keep_the_total_and_readers_never_see_half_a_transfer() {
    for design in designs() {
        for iso in [Isolation::ReadCommitted, Isolation::RepeatableRead] {
            let db = Arc::new(open_db(design.clone(), 64));
            let t = setup(&db);
            let stop = Arc::new(AtomicBool::new(false));
            let committed = Arc::new(AtomicU64::new(0));
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    let (db, stop, name) = (db.clone(), stop.clone(), design.name.clone());
                    std::thread::spawn(move || {
                        let mut n = 0;
                        while !stop.load(Ordering::Relaxed) || n < 3 {
                            // A repeatable-read snapshot must always add up.
                            assert_eq!(
                                total(&db, t, Isolation::RepeatableRead),
                                ACCOUNTS as i64 * START,
                                "{name}, writers at {iso:?}"
                            );
                            n += 1;
                        }
                    })
                })
                .collect();
            let writers: Vec<_> = (0..4u64)
                .map(|w| {
                    let (db, committed) = (db.clone(), committed.clone());
                    std::thread::spawn(move || {
                        let mut x = w * 7919 + 1;
                        for _ in 0..150 {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let a = ((x >> 33) % ACCOUNTS as u64) as i32;
                            let b = ((x >> 13) % ACCOUNTS as u64) as i32;
                            if a == b {
                                continue;
                            }
                            let amount = ((x >> 40) % 50) as i64;
                            let mut tx = db.begin_with(iso);
                            let r = tx
                                .update(t, &[Value::Integer(a)], &[Assign::Add(1, -amount)])
                                .and_then(|_| {
                                    tx.update(t, &[Value::Integer(b)], &[Assign::Add(1, amount)])
                                });
                            match r {
                                Ok(_) => {
                                    tx.commit().unwrap();
                                    committed.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) if retryable(&e) => {}
                                Err(e) => panic!("{e}"),
                            }
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            for r in readers {
                r.join().unwrap();
            }
            assert!(
                committed.load(Ordering::Relaxed) > 100,
                "{iso:?}: most transfers commit"
            );
            assert_eq!(
                total(&db, t, Isolation::ReadCommitted),
                ACCOUNTS as i64 * START,
                "{} {iso:?}",
                design.name
            );
        }
    }
}

#[test]
fn no_lost_update_at_read_committed() {
    for design in designs() {
        let db = Arc::new(open_db(design, 64));
        let t = setup(&db);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        let mut tx = db.begin_with(Isolation::ReadCommitted);
                        assert!(tx
                            .update(t, &[Value::Integer(7)], &[Assign::Add(1, 1)])
                            .unwrap());
                        tx.commit().unwrap();
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let mut tx = db.begin();
        let row = tx.get(t, &[Value::Integer(7)]).unwrap().unwrap();
        assert_eq!(
            row[1],
            Value::BigInt(START + 400),
            "every increment counted"
        );
    }
}

/// A repeatable-read transaction meets a row changed by a transaction its snapshot does not
/// see. PostgreSQL raises a serialization failure; InnoDB's UPDATE is a locking read of the
/// newest version, so the update applies to that version (InnoDB's lost-update behaviour).
#[test]
fn repeatable_read_update_of_a_concurrently_changed_row() {
    use mvcclab_engine::design::VersionStorage;
    for design in designs() {
        let undo = design.version_storage == VersionStorage::UndoDelta;
        let db = open_db(design, 64);
        let t = setup(&db);
        let mut t1 = db.begin_with(Isolation::RepeatableRead);
        assert_eq!(
            t1.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
            Value::BigInt(START)
        );
        let mut t2 = db.begin_with(Isolation::ReadCommitted);
        assert!(t2
            .update(t, &[Value::Integer(1)], &[Assign::Set(1, Value::BigInt(1))])
            .unwrap());
        t2.commit().unwrap();
        // t1's snapshot still sees the old balance ...
        assert_eq!(
            t1.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
            Value::BigInt(START)
        );
        let r = t1.update(t, &[Value::Integer(1)], &[Assign::Add(1, 5)]);
        if undo {
            assert!(r.unwrap(), "InnoDB updates the newest version");
            assert_eq!(
                t1.get(t, &[Value::Integer(1)]).unwrap().unwrap()[1],
                Value::BigInt(6),
                "1 + 5, seen as its own change"
            );
            t1.commit().unwrap();
        } else {
            let e = r.unwrap_err();
            assert!(
                matches!(e, Error::Txn(TxnError::SerializationFailure(_))),
                "{e}"
            );
            assert!(matches!(
                t1.get(t, &[Value::Integer(1)]),
                Err(Error::Txn(TxnError::TransactionClosed("aborted")))
            ));
        }
    }
}

#[test]
fn read_committed_sees_each_statements_newest_commits_repeatable_read_does_not() {
    for design in designs() {
        let db = open_db(design, 64);
        let t = setup(&db);
        let mut rc = db.begin_with(Isolation::ReadCommitted);
        let mut rr = db.begin_with(Isolation::RepeatableRead);
        assert_eq!(
            rc.get(t, &[Value::Integer(2)]).unwrap().unwrap()[1],
            Value::BigInt(START)
        );
        assert_eq!(
            rr.get(t, &[Value::Integer(2)]).unwrap().unwrap()[1],
            Value::BigInt(START)
        );
        let mut w = db.begin();
        w.update(t, &[Value::Integer(2)], &[Assign::Set(1, Value::BigInt(5))])
            .unwrap();
        w.insert(
            t,
            vec![
                Value::Integer(999),
                Value::BigInt(1),
                Value::Text("new".into()),
            ],
        )
        .unwrap();
        w.commit().unwrap();
        assert_eq!(
            rc.get(t, &[Value::Integer(2)]).unwrap().unwrap()[1],
            Value::BigInt(5)
        );
        assert!(rc.get(t, &[Value::Integer(999)]).unwrap().is_some());
        assert_eq!(
            rr.get(t, &[Value::Integer(2)]).unwrap().unwrap()[1],
            Value::BigInt(START)
        );
        assert!(rr.get(t, &[Value::Integer(999)]).unwrap().is_none());
        rc.commit().unwrap();
        rr.commit().unwrap();
    }
}

#[test]
fn a_writer_waits_for_the_row_holder_then_sees_its_outcome() {
    for design in designs() {
        let db = Arc::new(open_db(design, 64));
        let t = setup(&db);
        let mut holder = db.begin();
        holder
            .update(t, &[Value::Integer(3)], &[Assign::Set(1, Value::BigInt(1))])
            .unwrap();
        let waiter = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut tx = db.begin_with(Isolation::ReadCommitted);
                let r = tx
                    .update(t, &[Value::Integer(3)], &[Assign::Add(1, 10)])
                    .unwrap();
                tx.commit().unwrap();
                r
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "the second writer must wait for the first"
        );
        holder.abort().unwrap();
        assert!(waiter.join().unwrap());
        let mut tx = db.begin();
        assert_eq!(
            tx.get(t, &[Value::Integer(3)]).unwrap().unwrap()[1],
            Value::BigInt(START + 10),
            "built on the surviving version"
        );
    }
}

#[test]
fn deadlock_is_detected_and_one_victim_aborted() {
    for design in designs() {
        let db = Arc::new(open_db(design, 64));
        let t = setup(&db);
        let msg = lock_cycle(&db, (10, 11), move |tx, k| {
            tx.update(t, &[Value::Integer(k)], &[Assign::Add(1, 1)])
                .map(|_| ())
        });
        assert!(msg.contains("deadlock detected"), "{msg}");
    }
}

/// NULLs are distinct in a unique index (PostgreSQL nbtinsert.c `_bt_doinsert` skips the
/// check for a key with a NULL; InnoDB row0ins.cc `row_ins_scan_sec_index_for_duplicate`
/// likewise): two rows with a NULL email both go in, two with the same email do not, and
/// a NULL next to the same other column is no conflict either.
#[test]
fn a_unique_index_takes_any_number_of_nulls() {
    use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef};
    for design in designs() {
        let db = open_db(design, 64);
        let t = db
            .create_table(TableDef {
                name: "users".into(),
                columns: vec![
                    Column::not_null("id", ColumnType::Integer),
                    Column::not_null("org", ColumnType::Integer),
                    Column::nullable("email", ColumnType::Varchar(32)),
                ],
                primary_key: vec![0],
                indexes: vec![IndexDef {
                    name: "users_org_email".into(),
                    columns: vec![1, 2],
                    unique: true,
                }],
                foreign_keys: Vec::new(),
            })
            .unwrap();
        let row = |id: i32, email: Option<&str>| {
            vec![
                Value::Integer(id),
                Value::Integer(1),
                email.map_or(Value::Null, |e| Value::Text(e.into())),
            ]
        };
        let mut tx = db.begin();
        tx.insert(t, row(1, None)).unwrap();
        tx.insert(t, row(2, None)).unwrap();
        tx.insert(t, row(3, Some("a@x"))).unwrap();
        tx.commit().unwrap();
        let mut tx = db.begin();
        let e = tx.insert(t, row(4, Some("a@x"))).unwrap_err();
        assert!(
            matches!(e, Error::Txn(TxnError::DuplicateKey { .. })),
            "{e}"
        );
        let mut tx = db.begin();
        tx.insert(t, row(5, None)).unwrap();
        tx.commit().unwrap();
        let mut r = db.begin();
        for id in [1, 2, 3, 5] {
            assert!(r.get(t, &[Value::Integer(id)]).unwrap().is_some(), "{id}");
        }
    }
}

#[test]
fn unique_violation_names_the_key_and_aborts() {
    for design in designs() {
        let db = open_db(design, 64);
        let t = setup(&db);
        let mut tx = db.begin();
        let e = tx
            .insert(
                t,
                vec![Value::Integer(5), Value::BigInt(0), Value::Text("x".into())],
            )
            .unwrap_err();
        assert!(
            matches!(e, Error::Txn(TxnError::DuplicateKey { .. })),
            "{e}"
        );
        assert!(e.to_string().contains("(5)"), "{e}");
        // A key freed by a committed delete can be used again.
        let mut d = db.begin();
        assert!(d.delete(t, &[Value::Integer(5)]).unwrap());
        d.commit().unwrap();
        let mut tx = db.begin();
        tx.insert(
            t,
            vec![Value::Integer(5), Value::BigInt(0), Value::Text("x".into())],
        )
        .unwrap();
        tx.commit().unwrap();
        let mut r = db.begin();
        assert_eq!(
            r.get_by_index(t, 0, &[Value::Text("x".into())])
                .unwrap()
                .len(),
            1
        );
    }
}
