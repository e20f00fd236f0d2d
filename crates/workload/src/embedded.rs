//! The embedded target: a workload's operations executed by mvcclab's own engine through
//! its API (`mvcclab_engine::db`). Each operation runs under the engine's cause for it, so
//! its I/O is attributed per operation kind.

use crate::driver::{ErrorCode, OpError, Session, Target};
use crate::engine_error::{dialect_of, engine_error};
use crate::rand::SbRand;
use crate::sql::Dialect;
use crate::sysbench::{load_row, sbtest_def, Op, SysbenchOptions, WorkloadKind};
use crate::tpcc_embedded::TpccSet;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, TableId, Transaction};
use mvcclab_engine::stats::{enter, Cause};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

/// mvcclab's engine as a target.
pub struct Embedded {
    db: Arc<Database>,
    /// sbtest number − 1 → the table, filled by `prepare`; sessions share the list.
    tables: RwLock<Arc<Vec<SbTable>>>,
    /// TPC-C table sets (set number − 1), filled by a `tpcc` prepare.
    tpcc: RwLock<Arc<Vec<TpccSet>>>,
}

/// One sbtest table of the target.
struct SbTable {
    /// The engine's id of the table.
    id: TableId,
    /// The last AUTO_INCREMENT value given (InnoDB's `dict_table_t::autoinc` / a SERIAL's
    /// sequence): inserts without an id take the next.
    auto_increment: AtomicI64,
}

impl Embedded {
    /// A target on an open database.
    pub fn new(db: Arc<Database>) -> Self {
        Embedded {
            db,
            tables: RwLock::new(Arc::new(Vec::new())),
            tpcc: RwLock::new(Arc::new(Vec::new())),
        }
    }

    /// `tpcc_check.lua`'s checks 1–4 on the TPC-C tables `prepare` loaded
    /// ([`crate::tpcc_embedded::check`]); empty when no TPC-C table set was loaded.
    ///
    /// Errors: the engine's, as text.
    pub fn tpcc_check(&self) -> Result<Vec<crate::tpcc_embedded::CheckOutcome>, String> {
        let sets = self.tpcc.read().map(|t| t.clone()).unwrap_or_default();
        crate::tpcc_embedded::check(&self.db, &sets)
    }

    /// Takes the sbtest tables `prepare` loaded into this database before (a database
    /// reopened over a saved load, issue 26) as this target's, their AUTO_INCREMENT at the
    /// last loaded id, as a server restarted after the load has them.
    ///
    /// Errors: `tpcc` (its table sets are not reattached: load per run); a table missing
    /// from the database (the message names it).
    pub fn attach(&self, kind: WorkloadKind, opts: &SysbenchOptions) -> Result<(), String> {
        if kind == WorkloadKind::Tpcc {
            return Err("tpcc tables cannot be reattached: load them per run".into());
        }
        let rows = opts.prepare_rows(kind) as i64;
        let ids = (1..=opts.tables)
            .map(|n| {
                let id = self
                    .db
                    .table_id(&format!("sbtest{n}"))
                    .map_err(|e| format!("reattaching the loaded tables: {e}"))?;
                Ok(SbTable {
                    id,
                    auto_increment: AtomicI64::new(rows),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        *self
            .tables
            .write()
            .map_err(|_| "table map poisoned".to_string())? = Arc::new(ids);
        Ok(())
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }
}

impl Target for Embedded {
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<(), String> {
        let _c = enter(Cause::Load);
        if kind == WorkloadKind::Tpcc {
            let sets = crate::tpcc_embedded::load(&self.db, opts, seed)?;
            *self
                .tpcc
                .write()
                .map_err(|_| "table map poisoned".to_string())? = Arc::new(sets);
            return Ok(());
        }
        let rows = opts.prepare_rows(kind);
        let mut ids = Vec::new();
        for n in 1..=opts.tables {
            // sysbench creates the table with its primary key, loads it, then runs CREATE
            // INDEX k_N (oltp_common.lua `create_table`): the `k` index is built sorted.
            let t = self
                .db
                .create_table_for_load(sbtest_def(n))
                .map_err(|e| e.to_string())?;
            ids.push(SbTable {
                id: t,
                auto_increment: AtomicI64::new(rows as i64),
            });
            let mut rng = SbRand::new(seed, 0x10000 + n, opts.rand.clone());
            let mut tx = self.db.begin();
            for id in 1..=rows {
                let (id, k, c, pad) = load_row(&mut rng, opts, id);
                tx.insert(
                    t,
                    vec![
                        Value::Integer(id),
                        Value::Integer(k),
                        Value::Text(c),
                        Value::Text(pad),
                    ],
                )
                .map_err(|e| e.to_string())?;
                if id % 1000 == 0 {
                    tx.commit().map_err(|e| e.to_string())?;
                    tx = self.db.begin();
                }
            }
            tx.commit().map_err(|e| e.to_string())?;
            self.db
                .build_secondary_indexes(t)
                .map_err(|e| e.to_string())?;
            // As the real targets settle after their load (PostgreSQL VACUUM ANALYZE, InnoDB
            // purge caught up), so that both start the measured runs from the same state:
            // hint bits and the visibility map set, no garbage left from the load, and (heap
            // tables) no change left counting towards an autoanalyze.
            self.db.gc(t).map_err(|e| e.to_string())?;
            if self.db.design().table_layout == mvcclab_engine::design::TableLayout::Heap {
                self.db.analyze(t).map_err(|e| e.to_string())?;
            }
        }
        *self
            .tables
            .write()
            .map_err(|_| "table map poisoned".to_string())? = Arc::new(ids);
        Ok(())
    }

    fn session(&self) -> Result<Box<dyn Session + '_>, String> {
        let tables = self.tables.read().map(|t| t.clone()).unwrap_or_default();
        let tpcc = self.tpcc.read().map(|t| t.clone()).unwrap_or_default();
        Ok(Box::new(EmbeddedSession {
            dialect: dialect_of(&self.db),
            db: &self.db,
            tables,
            tpcc,
            tx: None,
        }))
    }
}

struct EmbeddedSession<'a> {
    /// The dialect of the engine the design models: the codes its errors get.
    dialect: Dialect,
    db: &'a Database,
    tables: Arc<Vec<SbTable>>,
    tpcc: Arc<Vec<TpccSet>>,
    tx: Option<Transaction>,
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Integer(x) => *x as i64,
        Value::BigInt(x) => *x,
        _ => 0,
    }
}

impl EmbeddedSession<'_> {
    fn sbtable(&self, n: u32) -> Result<&SbTable, OpError> {
        (n as usize)
            .checked_sub(1)
            .and_then(|i| self.tables.get(i))
            .ok_or_else(|| {
                // PostgreSQL's undefined_table, MariaDB's ER_NO_SUCH_TABLE.
                let code = match self.dialect {
                    Dialect::PostgreSql => ErrorCode::SqlState("42P01".into()),
                    Dialect::MySql => ErrorCode::MariaDb(1146),
                };
                OpError::coded(code, format!("table sbtest{n} does not exist"))
            })
    }

    fn table(&self, n: u32) -> Result<TableId, OpError> {
        Ok(self.sbtable(n)?.id)
    }

    /// Runs `f` in the open transaction, or in its own (autocommit) when none is open.
    fn with_tx(
        &mut self,
        f: impl FnOnce(&mut Transaction) -> mvcclab_engine::Result<()>,
    ) -> Result<(), OpError> {
        let d = self.dialect;
        match self.tx.as_mut() {
            Some(tx) => {
                let r = f(tx);
                if r.is_err() {
                    self.tx = None; // already rolled back by the engine
                }
                r.map_err(|e| engine_error(&e, d))
            }
            None => {
                let mut tx = self.db.begin();
                f(&mut tx).map_err(|e| engine_error(&e, d))?;
                tx.commit().map_err(|e| engine_error(&e, d))
            }
        }
    }

    fn range(
        &mut self,
        table: u32,
        lo: i32,
        hi: i32,
        then: impl FnOnce(Vec<Vec<Value>>),
    ) -> Result<(), OpError> {
        let t = self.table(table)?;
        self.with_tx(|tx| {
            let rows = tx.scan(
                t,
                Bound::Included(&[Value::Integer(lo)]),
                Bound::Included(&[Value::Integer(hi)]),
                ScanDirection::Forward,
                usize::MAX,
            )?;
            then(rows);
            Ok(())
        })
    }
}

impl Session for EmbeddedSession<'_> {
    /// Errors: the engine's in the design's dialect ([`engine_error`]), naming the SQL
    /// sysbench sends for `op` (sql.rs `statement`; none for TPC-C's transactions).
    fn execute(&mut self, op: &Op) -> Result<(), OpError> {
        let d = self.dialect;
        self.execute_op(op)
            .map_err(|e| crate::sql::name_statement(d, op, e))
    }

    fn rollback(&mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.abort();
        }
    }
}

impl EmbeddedSession<'_> {
    fn execute_op(&mut self, op: &Op) -> Result<(), OpError> {
        let d = self.dialect;
        match op {
            Op::Tpcc(txn) => crate::tpcc_embedded::execute(self.db, &self.tpcc, txn, d),
            Op::Begin => {
                self.tx = Some(self.db.begin());
                Ok(())
            }
            Op::Commit => match self.tx.take() {
                Some(tx) => tx.commit().map_err(|e| engine_error(&e, d)),
                None => Ok(()),
            },
            Op::PointSelect { table, id } => {
                let t = self.table(*table)?;
                self.with_tx(|tx| tx.get(t, &[Value::Integer(*id)]).map(|_| ()))
            }
            Op::SimpleRange { table, lo, hi } => {
                self.range(*table, *lo, *hi, |rows| drop(std::hint::black_box(rows)))
            }
            Op::SumRange { table, lo, hi } => self.range(*table, *lo, *hi, |rows| {
                std::hint::black_box(rows.iter().map(|r| int(&r[1])).sum::<i64>());
            }),
            Op::OrderRange { table, lo, hi } => self.range(*table, *lo, *hi, |rows| {
                let mut c: Vec<String> = rows.into_iter().map(|r| r[2].to_string()).collect();
                c.sort();
                std::hint::black_box(c);
            }),
            Op::DistinctRange { table, lo, hi } => self.range(*table, *lo, *hi, |rows| {
                let mut c: Vec<String> = rows.into_iter().map(|r| r[2].to_string()).collect();
                c.sort();
                c.dedup();
                std::hint::black_box(c);
            }),
            Op::IndexUpdate { table, id } => {
                let t = self.table(*table)?;
                self.with_tx(|tx| {
                    tx.update(t, &[Value::Integer(*id)], &[Assign::Add(1, 1)])
                        .map(|_| ())
                })
            }
            Op::NonIndexUpdate { table, id, c } => {
                let t = self.table(*table)?;
                self.with_tx(|tx| {
                    tx.update(
                        t,
                        &[Value::Integer(*id)],
                        &[Assign::Set(2, Value::Text(c.clone()))],
                    )
                    .map(|_| ())
                })
            }
            Op::Delete { table, id } => {
                let t = self.table(*table)?;
                self.with_tx(|tx| tx.delete(t, &[Value::Integer(*id)]).map(|_| ()))
            }
            Op::Insert {
                table,
                id,
                k,
                c,
                pad,
            } => {
                let sb = self.sbtable(*table)?;
                let t = sb.id;
                let id = match id {
                    Some(id) => *id,
                    // AUTO_INCREMENT: the next value; like InnoDB's default
                    // innodb_autoinc_lock_mode=2 (and a sequence), a value taken by a
                    // statement that fails is not given back.
                    None => {
                        let next = sb.auto_increment.fetch_add(1, Ordering::Relaxed) + 1;
                        i32::try_from(next).map_err(|_| {
                            OpError::other(format!(
                                "AUTO_INCREMENT of sbtest{table} passed INT's range"
                            ))
                        })?
                    }
                };
                let row = vec![
                    Value::Integer(id),
                    Value::Integer(*k),
                    Value::Text(c.clone()),
                    Value::Text(pad.clone()),
                ];
                self.with_tx(|tx| tx.insert(t, row))
            }
            Op::RandomPoints { ks } => {
                let t = self.table(1)?;
                self.with_tx(|tx| {
                    for k in ks {
                        std::hint::black_box(tx.get_by_index(t, 0, &[Value::Integer(*k)])?);
                    }
                    Ok(())
                })
            }
            Op::RandomRanges { ranges } => {
                // k BETWEEN a AND b on an integer column: the equality lookups of a..=b (the
                // engine API has no secondary-index range scan yet; same rows, same index pages).
                let t = self.table(1)?;
                self.with_tx(|tx| {
                    let mut n = 0usize;
                    for (a, b) in ranges {
                        for k in *a..=*b {
                            n += tx.get_by_index(t, 0, &[Value::Integer(k)])?.len();
                        }
                    }
                    std::hint::black_box(n);
                    Ok(())
                })
            }
        }
    }
}
