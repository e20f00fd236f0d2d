//! Helpers the system-versioning comparisons with real servers share: the `accounts`
//! table, the steps (statements in the SQL both MariaDB and PostgreSQL accept) and the
//! preset's side. Each test crate that declares `mod common;` uses a part of it.
#![allow(dead_code)]

use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{Row, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, SystemTime, TableId};
use mvcclab_engine::design::DesignConfig;
use std::ops::Bound;

/// (id, balance, owner, code): the declared columns both sides return.
pub type R = (i32, i64, String, i32);

/// The `accounts` table (the engine's `testkit::versioned_accounts_def`).
pub fn def() -> TableDef {
    mvcclab_engine::testkit::versioned_accounts_def()
}

pub fn of_row(r: &Row) -> R {
    match (&r[0], &r[1], &r[2], &r[3]) {
        (Value::Integer(a), Value::BigInt(b), Value::Text(c), Value::Integer(d)) => {
            (*a, *b, c.clone(), *d)
        }
        other => panic!("row of another shape: {other:?}"),
    }
}

/// One step: statements as (sql for MariaDB, the same on the engine).
pub enum Op {
    Insert(i32, i64, &'static str, i32),
    AddBalance(i32, i64),
    SetOwner(i32, &'static str),
    Delete(i32),
}

pub fn steps() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        (1..=5)
            .map(|i| {
                Insert(
                    i,
                    100 * i as i64,
                    if i % 2 == 0 { "even" } else { "odd" },
                    i,
                )
            })
            .collect(),
        vec![AddBalance(2, 10), SetOwner(3, "even")],
        vec![Delete(4), AddBalance(2, 1)],
        vec![Insert(4, 44, "odd", 4)],
    ]
}

impl Op {
    /// The statement in SQL that MariaDB and PostgreSQL both accept.
    pub fn sql(&self) -> String {
        match self {
            Op::Insert(i, b, o, c) => {
                format!(
                    "INSERT INTO accounts (id, balance, owner, code) VALUES ({i}, {b}, '{o}', {c})"
                )
            }
            Op::AddBalance(i, d) => {
                format!("UPDATE accounts SET balance = balance + {d} WHERE id = {i}")
            }
            Op::SetOwner(i, o) => format!("UPDATE accounts SET owner = '{o}' WHERE id = {i}"),
            Op::Delete(i) => format!("DELETE FROM accounts WHERE id = {i}"),
        }
    }
}

pub struct Emb {
    pub db: Database,
    pub t: TableId,
}

impl Emb {
    /// A quiet database of design `d` with the `accounts` table.
    pub fn open(d: DesignConfig) -> Emb {
        let mut cfg = DatabaseConfig::new(d);
        cfg.storage = mvcclab_engine::storage::StorageConfig::without_background(256);
        let db = Database::open(cfg).unwrap();
        let t = db.create_table(def()).unwrap();
        Emb { db, t }
    }

    pub fn step(&mut self, ops: &[Op]) {
        let t = self.t;
        let mut tx = self.db.begin();
        for op in ops {
            match op {
                Op::Insert(i, b, o, c) => tx
                    .insert(
                        t,
                        vec![
                            Value::Integer(*i),
                            Value::BigInt(*b),
                            Value::text(*o),
                            Value::Integer(*c),
                        ],
                    )
                    .unwrap(),
                Op::AddBalance(i, d) => assert!(tx
                    .update(t, &[Value::Integer(*i)], &[Assign::Add(1, *d)])
                    .unwrap()),
                Op::SetOwner(i, o) => assert!(tx
                    .update(t, &[Value::Integer(*i)], &[Assign::Set(2, Value::text(*o))])
                    .unwrap()),
                Op::Delete(i) => assert!(tx.delete(t, &[Value::Integer(*i)]).unwrap()),
            }
        }
        tx.commit().unwrap();
    }

    pub fn scan(&self, when: SystemTime) -> Vec<R> {
        let mut tx = self.db.begin();
        let rows = tx
            .scan_system_time(
                self.t,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                usize::MAX,
                when,
            )
            .unwrap();
        tx.commit().unwrap();
        rows.iter().map(of_row).collect()
    }

    pub fn by_id(&self, id: i32, when: SystemTime) -> Vec<R> {
        let mut tx = self.db.begin();
        let rows = tx
            .get_system_time(self.t, &[Value::Integer(id)], when)
            .unwrap();
        tx.commit().unwrap();
        rows.iter().map(of_row).collect()
    }

    pub fn by_owner(&self, owner: &str, when: SystemTime) -> Vec<R> {
        let mut tx = self.db.begin();
        let rows = tx
            .get_by_index_system_time(self.t, 0, &[Value::text(owner)], when)
            .unwrap();
        tx.commit().unwrap();
        let mut v: Vec<R> = rows.iter().map(of_row).collect();
        v.sort();
        v
    }
}

impl Emb {
    /// Every row of the preset's relation `name` (a history partition `accounts#p`, the
    /// history table `accounts_history`) read `FOR SYSTEM_TIME ALL`, in key order.
    pub fn relation_rows(&self, name: &str) -> Vec<R> {
        let h = self.db.table_id(name).unwrap();
        let mut tx = self.db.begin();
        let rows = tx
            .scan_system_time(
                h,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                usize::MAX,
                SystemTime::All,
            )
            .unwrap();
        tx.commit().unwrap();
        rows.iter().map(of_row).collect()
    }
}
