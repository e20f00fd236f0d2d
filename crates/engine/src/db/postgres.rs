//! The `postgres` engine: heap tables (crate::heap), PostgreSQL transactions (xids assigned
//! at the first change, snapshot per statement at read committed or per transaction at
//! repeatable read, commit record flushed at commit), vacuum and autovacuum.

use super::{Assign, Engine, EngineTxn, GcReport, TableId, TableRelations};
use crate::btree::{BTree, BTreeConfig, ScanDirection};
use crate::catalog::{Row, TableDef, Value};
use crate::design::DesignConfig;
use crate::error::{Error, Result};
use crate::heap::{Ctx, HeapTable, TableStats, VacuumConfig};
use crate::mvcc::{Isolation, ProcId, Snapshot, TransactionManager, INVALID_XID};
use crate::stats::{enter, Cause};
use crate::storage::Storage;
use crate::wal::{rmgr, RecordBuilder};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// `info` codes of [`rmgr::XACT`] records (xact.h).
pub mod xact_info {
    /// XLOG_XACT_COMMIT: main data = commit timestamp (µs, i64).
    pub const COMMIT: u8 = 0x00;
    /// XLOG_XACT_ABORT: main data = abort timestamp (µs, i64).
    pub const ABORT: u8 = 0x20;
}

struct Inner {
    storage: Arc<Storage>,
    tm: TransactionManager,
    design: DesignConfig,
    vacuum: VacuumConfig,
    tables: RwLock<Vec<Arc<HeapTable>>>,
}

impl Inner {
    fn table(&self, t: TableId) -> Result<Arc<HeapTable>> {
        self.tables
            .read()
            .get(t as usize)
            .cloned()
            .ok_or_else(|| Error::Catalog(format!("no table with id {t}")))
    }

    fn autovacuum_round(&self) -> Result<()> {
        let tables: Vec<_> = self.tables.read().clone();
        for t in tables {
            let s = t.counters.snapshot();
            let ins = t.counters.n_ins_since_vacuum.load(Ordering::Relaxed).max(0) as u64;
            if self.vacuum.needs_vacuum(s.n_live_tup, s.n_dead_tup, ins) {
                let _c = enter(Cause::Vacuum);
                t.vacuum(&self.tm, &self.vacuum)?;
                t.counters.autovacuum_count.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

struct Stop {
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The `postgres` design. See the module doc.
pub struct PostgresEngine {
    inner: Arc<Inner>,
    stop: Arc<Stop>,
    autovacuum: Mutex<Option<JoinHandle<()>>>,
}

impl PostgresEngine {
    /// The engine on `storage`, with autovacuum started when `vacuum.autovacuum`.
    pub fn new(storage: Arc<Storage>, design: DesignConfig, vacuum: VacuumConfig) -> Self {
        let inner = Arc::new(Inner {
            storage,
            tm: TransactionManager::new(),
            design,
            vacuum,
            tables: RwLock::new(Vec::new()),
        });
        let stop = Arc::new(Stop {
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let gc_on = inner.design.garbage_collection != crate::design::GarbageCollection::Off;
        let handle = (inner.vacuum.autovacuum && gc_on).then(|| {
            let weak: Weak<Inner> = Arc::downgrade(&inner);
            let stop = stop.clone();
            let nap = Duration::from_millis(inner.vacuum.naptime_ms.max(1));
            std::thread::Builder::new()
                .name("autovacuum".into())
                .spawn(move || loop {
                    {
                        let mut s = stop.stop.lock();
                        if !*s {
                            stop.wake.wait_for(&mut s, nap);
                        }
                        if *s {
                            return;
                        }
                    }
                    let Some(inner) = weak.upgrade() else { return };
                    if let Err(e) = inner.autovacuum_round() {
                        eprintln!("autovacuum stopped: {e}");
                        return;
                    }
                })
                .expect("spawn autovacuum")
        });
        PostgresEngine {
            inner,
            stop,
            autovacuum: Mutex::new(handle),
        }
    }

    /// The transaction manager (for tests and tools).
    pub fn transactions(&self) -> &TransactionManager {
        &self.inner.tm
    }
}

impl Engine for PostgresEngine {
    fn create_table(&self, def: TableDef) -> Result<TableId> {
        def.validate()?;
        let mut tables = self.inner.tables.write();
        if tables.iter().any(|t| t.def.name == def.name) {
            return Err(Error::Catalog(format!("table {} already exists", def.name)));
        }
        let pool = self.inner.storage.pool().clone();
        let heap_rel = pool.store().create_relation()?;
        let pk = BTree::create(pool.clone(), BTreeConfig::postgres())?;
        let indexes = def
            .indexes
            .iter()
            .map(|_| BTree::create(pool.clone(), BTreeConfig::postgres()))
            .collect::<Result<Vec<_>>>()?;
        let id = tables.len() as TableId;
        let mut table = HeapTable::new(
            id,
            def,
            heap_rel,
            pk,
            indexes,
            self.inner.design.fillfactor,
            self.inner.design.hot_updates,
            pool,
            self.inner.storage.wal().clone(),
        );
        table.prune_on_access =
            self.inner.design.garbage_collection != crate::design::GarbageCollection::Off;
        tables.push(Arc::new(table));
        Ok(id)
    }

    fn table_id(&self, name: &str) -> Result<TableId> {
        self.inner
            .tables
            .read()
            .iter()
            .find(|t| t.def.name == name)
            .map(|t| t.id)
            .ok_or_else(|| Error::Catalog(format!("no table named {name}")))
    }

    fn table_def(&self, t: TableId) -> Result<TableDef> {
        Ok(self.inner.table(t)?.def.clone())
    }

    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn> {
        let proc = self.inner.tm.begin();
        Box::new(PgTxn {
            inner: self.inner.clone(),
            proc,
            iso,
            xact_snapshot: None,
            cid: 0,
            changes: BTreeMap::new(),
            ended: false,
        })
    }

    fn gc(&self, t: TableId) -> Result<GcReport> {
        let table = self.inner.table(t)?;
        let _c = enter(Cause::Vacuum);
        let rep = table.vacuum(&self.inner.tm, &self.inner.vacuum)?;
        table.counters.vacuum_count.fetch_add(1, Ordering::Relaxed);
        Ok(GcReport { vacuum: Some(rep) })
    }

    fn table_stats(&self, t: TableId) -> Result<TableStats> {
        Ok(self.inner.table(t)?.stats())
    }

    fn table_pages(&self, t: TableId) -> Result<(u64, u64)> {
        let table = self.inner.table(t)?;
        let store = self.inner.storage.store();
        let heap = store.n_blocks(table.heap_rel)? as u64;
        let mut idx = store.n_blocks(table.pk.rel())? as u64;
        for i in &table.indexes {
            idx += store.n_blocks(i.rel())? as u64;
        }
        Ok((heap, idx))
    }

    fn relations(&self, t: TableId) -> Result<TableRelations> {
        let table = self.inner.table(t)?;
        Ok(TableRelations {
            table: table.heap_rel,
            primary_key: table.pk.rel(),
            indexes: table.indexes.iter().map(|i| i.rel()).collect(),
        })
    }

    fn shutdown(&self) {
        *self.stop.stop.lock() = true;
        self.stop.wake.notify_all();
        if let Some(h) = self.autovacuum.lock().take() {
            let _ = h.join();
        }
    }
}

impl Drop for PostgresEngine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct PgTxn {
    inner: Arc<Inner>,
    proc: ProcId,
    iso: Isolation,
    xact_snapshot: Option<Snapshot>,
    cid: u32,
    /// Per table: (inserted, updated, deleted) for pgstat at the end.
    changes: BTreeMap<TableId, (u64, u64, u64)>,
    ended: bool,
}

impl PgTxn {
    /// Runs one statement: under `cause`, with the statement's snapshot (a new one at read
    /// committed, the transaction's at repeatable read), assigning an xid first when `writes`.
    fn stmt<T>(
        &mut self,
        cause: Cause,
        t: TableId,
        writes: bool,
        f: impl FnOnce(&HeapTable, &Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        if self.ended {
            return Err(Error::TransactionClosed("ended"));
        }
        let _c = enter(cause);
        let table = self.inner.table(t)?;
        let tm = &self.inner.tm;
        let xid = if writes {
            tm.assign_xid(self.proc)
        } else {
            tm.xid_of(self.proc)
        };
        self.cid += 1;
        let snapshot = match self.iso {
            Isolation::RepeatableRead => self
                .xact_snapshot
                .get_or_insert_with(|| tm.snapshot(self.proc))
                .clone(),
            Isolation::ReadCommitted => tm.snapshot(self.proc),
        };
        let ctx = Ctx {
            tm,
            xid,
            snapshot: &snapshot,
            cid: self.cid,
            repeatable_read: self.iso == Isolation::RepeatableRead,
        };
        let r = f(&table, &ctx);
        if self.iso == Isolation::ReadCommitted {
            tm.release_snapshot(self.proc);
        }
        r
    }

    fn count(&mut self, t: TableId, ins: u64, upd: u64, del: u64) {
        let e = self.changes.entry(t).or_default();
        e.0 += ins;
        e.1 += upd;
        e.2 += del;
    }

    fn end(&mut self, committed: bool) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        let _c = enter(if committed {
            Cause::Commit
        } else {
            Cause::Abort
        });
        let xid = self.inner.tm.xid_of(self.proc);
        let mut result = Ok(());
        if xid != INVALID_XID {
            let now_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64);
            let rec = RecordBuilder::new(
                rmgr::XACT,
                if committed {
                    xact_info::COMMIT
                } else {
                    xact_info::ABORT
                },
            )
            .xid(xid)
            .main_data(&now_us.to_le_bytes());
            let wal = self.inner.storage.wal();
            result =
                wal.insert(&rec, &mut [])
                    .and_then(|lsn| if committed { wal.flush(lsn) } else { Ok(()) });
        }
        let committed = committed && result.is_ok();
        self.inner.tm.end(self.proc, committed);
        self.ended = true;
        for (t, (ins, upd, del)) in std::mem::take(&mut self.changes) {
            if let Ok(table) = self.inner.table(t) {
                table.counters.end_of_xact(committed, ins, upd, del);
            }
        }
        result
    }
}

impl EngineTxn for PgTxn {
    fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.stmt(Cause::PointSelect, t, false, |tb, ctx| tb.get(ctx, pk))
    }

    fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.stmt(Cause::PointSelect, t, false, |tb, ctx| {
            tb.get_by_index(ctx, index, key)
        })
    }

    fn scan(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
        self.stmt(Cause::RangeScan, t, false, |tb, ctx| {
            tb.scan(ctx, lo, hi, dir, limit)
        })
    }

    fn insert(&mut self, t: TableId, row: Row) -> Result<()> {
        self.stmt(Cause::Insert, t, true, |tb, ctx| tb.insert(ctx, row))?;
        self.count(t, 1, 0, 0);
        Ok(())
    }

    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        let done = self.stmt(Cause::Update, t, true, |tb, ctx| tb.update(ctx, pk, set))?;
        if done {
            self.count(t, 0, 1, 0);
        }
        Ok(done)
    }

    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        let done = self.stmt(Cause::Delete, t, true, |tb, ctx| tb.delete(ctx, pk))?;
        if done {
            self.count(t, 0, 0, 1);
        }
        Ok(done)
    }

    fn commit(&mut self) -> Result<()> {
        self.end(true)
    }

    fn abort(&mut self) -> Result<()> {
        self.end(false)
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        let _ = self.end(false);
    }
}
