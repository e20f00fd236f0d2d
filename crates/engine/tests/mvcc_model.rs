//! Model-based: random single-threaded operation sequences against a BTreeMap reference;
//! the database agrees inside every transaction and after every commit and abort (one body,
//! run for each design).

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, TableId, Transaction};
use mvcclab_engine::error::TxnError;
use mvcclab_engine::Error;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Clone, Debug)]
enum Op {
    Get(i32),
    Insert(i32, i64),
    Update(i32, i64),
    Add(i32, i64),
    Delete(i32),
    Scan(i32, i32, bool, usize),
    ByOwner(i32),
    Commit,
    Abort,
    Vacuum,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..40i32;
    prop_oneof![
        3 => k.clone().prop_map(Op::Get),
        4 => (k.clone(), 0..1000i64).prop_map(|(a, b)| Op::Insert(a, b)),
        4 => (k.clone(), 0..1000i64).prop_map(|(a, b)| Op::Update(a, b)),
        2 => (k.clone(), -5..5i64).prop_map(|(a, b)| Op::Add(a, b)),
        2 => k.clone().prop_map(Op::Delete),
        2 => (k.clone(), k.clone(), any::<bool>(), 1..20usize).prop_map(|(a, b, f, l)| Op::Scan(a, b, f, l)),
        1 => (0..5i32).prop_map(Op::ByOwner),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Vacuum),
    ]
}

fn row(k: i32, v: i64) -> Vec<Value> {
    vec![
        Value::Integer(k),
        Value::BigInt(v),
        Value::Text(format!("owner{}", k % 5)),
    ]
}

fn as_map(rows: &[Vec<Value>]) -> Vec<(i32, i64)> {
    rows.iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::Integer(k), Value::BigInt(v)) => (*k, *v),
            other => panic!("row shape {other:?}"),
        })
        .collect()
}

fn check_all(db: &Database, t: TableId, model: &BTreeMap<i32, i64>) {
    let mut tx = db.begin();
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
        as_map(&rows),
        model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
    );
    for k in 0..40 {
        let got = tx
            .get(t, &[Value::Integer(k)])
            .unwrap()
            .map(|r| as_map(&[r])[0].1);
        assert_eq!(got, model.get(&k).copied(), "key {k}");
    }
    tx.commit().unwrap();
}

fn run(db: &Database, ops: Vec<Op>) {
    let t = db.create_table(accounts_def()).unwrap();
    let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
    let mut view = committed.clone();
    let mut tx: Option<Transaction> = None;
    for op in ops {
        if matches!(op, Op::Vacuum) {
            if tx.is_none() {
                db.gc(t).unwrap();
                check_all(db, t, &committed);
            }
            continue;
        }
        let x = tx.get_or_insert_with(|| db.begin());
        match op {
            Op::Get(k) => {
                let got = x
                    .get(t, &[Value::Integer(k)])
                    .unwrap()
                    .map(|r| as_map(&[r])[0].1);
                assert_eq!(got, view.get(&k).copied());
            }
            Op::Insert(k, v) => match x.insert(t, row(k, v)) {
                Ok(()) => {
                    assert!(
                        !view.contains_key(&k),
                        "insert of an existing key {k} succeeded"
                    );
                    view.insert(k, v);
                }
                Err(Error::Txn(TxnError::DuplicateKey { .. })) => {
                    assert!(view.contains_key(&k));
                    tx = None; // aborted
                    view = committed.clone();
                    check_all(db, t, &committed);
                }
                Err(e) => panic!("{e}"),
            },
            Op::Update(k, v) => {
                let done = x
                    .update(t, &[Value::Integer(k)], &[Assign::Set(1, Value::BigInt(v))])
                    .unwrap();
                assert_eq!(done, view.contains_key(&k));
                if done {
                    view.insert(k, v);
                }
            }
            Op::Add(k, d) => {
                let done = x
                    .update(t, &[Value::Integer(k)], &[Assign::Add(1, d)])
                    .unwrap();
                assert_eq!(done, view.contains_key(&k));
                if let Some(v) = view.get_mut(&k) {
                    *v += d;
                }
            }
            Op::Delete(k) => {
                let done = x.delete(t, &[Value::Integer(k)]).unwrap();
                assert_eq!(done, view.remove(&k).is_some());
            }
            Op::Scan(a, b, fwd, limit) => {
                let (lo, hi) = (a.min(b), a.max(b));
                let dir = if fwd {
                    ScanDirection::Forward
                } else {
                    ScanDirection::Backward
                };
                let rows = x
                    .scan(
                        t,
                        Bound::Included(&[Value::Integer(lo)]),
                        Bound::Excluded(&[Value::Integer(hi)]),
                        dir,
                        limit,
                    )
                    .unwrap();
                let mut want: Vec<(i32, i64)> = view.range(lo..hi).map(|(k, v)| (*k, *v)).collect();
                if !fwd {
                    want.reverse();
                }
                want.truncate(limit);
                assert_eq!(as_map(&rows), want);
            }
            Op::ByOwner(o) => {
                let mut got = as_map(
                    &x.get_by_index(t, 0, &[Value::Text(format!("owner{o}"))])
                        .unwrap(),
                );
                got.sort_unstable();
                let want: Vec<(i32, i64)> = view
                    .iter()
                    .filter(|(k, _)| *k % 5 == o)
                    .map(|(k, v)| (*k, *v))
                    .collect();
                assert_eq!(got, want);
            }
            Op::Commit => {
                tx.take().unwrap().commit().unwrap();
                committed = view.clone();
                check_all(db, t, &committed);
            }
            Op::Abort => {
                tx.take().unwrap().abort().unwrap();
                view = committed.clone();
                check_all(db, t, &committed);
            }
            Op::Vacuum => unreachable!(),
        }
    }
    if let Some(x) = tx {
        x.commit().unwrap();
        committed = view;
    }
    db.storage().checkpoint().unwrap();
    check_all(db, t, &committed);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn database_agrees_with_a_btreemap(ops in proptest::collection::vec(op(), 1..150)) {
        for design in designs() {
            // A small pool: evictions and re-reads happen.
            let db = open_db(design, 24);
            run(&db, ops.clone());
        }
    }
}
