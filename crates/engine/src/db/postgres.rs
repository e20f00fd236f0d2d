//! The `postgres` engine: heap tables (crate::heap), PostgreSQL transactions (xids assigned
//! at the first change, snapshot per statement at read committed or per transaction at
//! repeatable read, commit record flushed at commit), vacuum and autovacuum.

use super::txn::TxnCore;
use super::{Assign, Engine, EngineTxn, GcReport, TableId, TableList, TableRelations};
use crate::btree::{BTree, BTreeConfig, ScanDirection};
use crate::catalog::{Row, TableDef, Value};
use crate::design::DesignConfig;
use crate::error::Result;
use crate::heap::{Ctx, HeapTable, TableStats, VacuumConfig};
use crate::mvcc::{Isolation, TransactionManager};
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::Storage;
use parking_lot::Mutex;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

struct Inner {
    storage: Arc<Storage>,
    tm: TransactionManager,
    design: DesignConfig,
    vacuum: VacuumConfig,
    tables: TableList<HeapTable>,
}

impl Inner {
    fn table(&self, t: TableId) -> Result<Arc<HeapTable>> {
        self.tables.get(t)
    }

    fn autovacuum_round(&self) -> Result<()> {
        for t in self.tables.all() {
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

/// The `postgres` design. See the module doc.
pub struct PostgresEngine {
    inner: Arc<Inner>,
    stop: Arc<StopSignal>,
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
            tables: TableList::new(),
        });
        let stop = Arc::new(StopSignal::default());
        let gc_on = inner.design.garbage_collection != crate::design::GarbageCollection::Off;
        let handle = (inner.vacuum.autovacuum && gc_on).then(|| {
            let weak: Weak<Inner> = Arc::downgrade(&inner);
            let stop = stop.clone();
            let nap = Duration::from_millis(inner.vacuum.naptime_ms.max(1));
            std::thread::Builder::new()
                .name("autovacuum".into())
                .spawn(move || loop {
                    if stop.sleep(nap) {
                        return;
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
        self.inner.tables.create(def, |id, def| {
            let pool = self.inner.storage.pool().clone();
            let heap_rel = pool.store().create_relation()?;
            let pk = BTree::create(pool.clone(), BTreeConfig::postgres())?;
            let indexes = def
                .indexes
                .iter()
                .map(|_| BTree::create(pool.clone(), BTreeConfig::postgres()))
                .collect::<Result<Vec<_>>>()?;
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
            Ok(table)
        })
    }

    fn defer_secondary_indexes(&self, t: TableId) -> Result<()> {
        self.inner
            .tables
            .get(t)?
            .secondary_deferred
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    fn build_secondary_indexes(&self, t: TableId) -> Result<u64> {
        self.inner
            .tables
            .get(t)?
            .build_secondary_indexes(&self.inner.tm)
    }

    fn table_id(&self, name: &str) -> Result<TableId> {
        self.inner.tables.id_of(name)
    }

    fn table_def(&self, t: TableId) -> Result<TableDef> {
        Ok(self.inner.table(t)?.def.clone())
    }

    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn> {
        Box::new(PgTxn {
            core: TxnCore::begin(&self.inner.tm, iso),
            inner: self.inner.clone(),
            cid: 0,
        })
    }

    fn gc(&self, t: TableId) -> Result<GcReport> {
        let table = self.inner.table(t)?;
        let _c = enter(Cause::Vacuum);
        let rep = table.vacuum(&self.inner.tm, &self.inner.vacuum)?;
        table.counters.vacuum_count.fetch_add(1, Ordering::Relaxed);
        Ok(GcReport { vacuum: Some(rep) })
    }

    fn table_counters(&self, t: TableId) -> Result<TableStats> {
        Ok(self.inner.table(t)?.counters.snapshot())
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
        self.stop.raise();
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
    core: TxnCore,
    cid: u32,
}

impl PgTxn {
    /// Runs one statement under `cause`, with the statement's snapshot (TxnCore::statement),
    /// assigning an xid first when it `writes`.
    fn stmt<T>(
        &mut self,
        cause: Cause,
        t: TableId,
        writes: bool,
        f: impl FnOnce(&HeapTable, &Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.core.check_open()?;
        let _c = enter(cause);
        let table = self.inner.table(t)?;
        let tm = &self.inner.tm;
        let (xid, snapshot) = self.core.statement(tm, writes);
        self.cid += 1;
        let ctx = Ctx {
            tm,
            xid,
            snapshot: &snapshot,
            cid: self.cid,
            repeatable_read: self.core.isolation() == Isolation::RepeatableRead,
        };
        let r = f(&table, &ctx);
        self.core.end_statement(tm);
        r
    }

    fn end(&mut self, committed: bool) -> Result<()> {
        if self.core.is_ended() {
            return Ok(());
        }
        let _c = enter(if committed {
            Cause::Commit
        } else {
            Cause::Abort
        });
        let tm = &self.inner.tm;
        let result = self.core.log_end(tm, self.inner.storage.wal(), committed);
        let committed = committed && result.is_ok();
        for (t, (ins, upd, del)) in self.core.finish(tm, committed) {
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
        self.core.count(t, 1, 0, 0);
        Ok(())
    }

    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        let done = self.stmt(Cause::Update, t, true, |tb, ctx| tb.update(ctx, pk, set))?;
        if done {
            self.core.count(t, 0, 1, 0);
        }
        Ok(done)
    }

    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        let done = self.stmt(Cause::Delete, t, true, |tb, ctx| tb.delete(ctx, pk))?;
        if done {
            self.core.count(t, 0, 0, 1);
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
