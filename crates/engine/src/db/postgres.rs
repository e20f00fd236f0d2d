//! The `postgres` engine: heap tables (crate::heap), PostgreSQL transactions (xids assigned
//! at the first change, snapshot per statement at read committed or per transaction at
//! repeatable read, commit record flushed at commit), vacuum and autovacuum.

use super::txn::TxnCore;
use super::{
    Assign, Engine, EngineCounters, EngineTxn, GcReport, TableId, TableList, TableRelations,
};
use crate::btree::{BTree, BTreeConfig, ScanDirection};
use crate::buffer::vacuum_cost::with_cost_delay;
use crate::catalog::{Row, TableDef, Value};
use crate::design::DesignConfig;
use crate::device::file_ids;
use crate::error::Result;
use crate::heap::{Ctx, HeapTable, TableStats, VacuumConfig};
use crate::mvcc::{Isolation, TransactionManager};
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::{CheckpointHook, Storage};
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

/// The clog file's bytes (empty when there is none yet).
fn read_clog(storage: &Storage) -> Result<Vec<u8>> {
    let vfs = storage.vfs();
    let Ok(len) = vfs.len_bytes(file_ids::CLOG) else {
        return Ok(Vec::new());
    };
    let mut bytes = vec![0u8; len as usize];
    if len > 0 {
        vfs.read_at(file_ids::CLOG, 0, &mut bytes)?;
    }
    Ok(bytes)
}

/// The clog's share of a checkpoint (clog.c `CheckPointCLOG`): the pages changed since the
/// last one, written to [`file_ids::CLOG`] and synced.
impl CheckpointHook for Inner {
    /// Writes the clog's changed pages; returns the next xid (u32 LE) for the checkpoint
    /// record (PostgreSQL `CheckPoint.nextXid`), read before the clog so that every xid
    /// the clog names is below it.
    fn checkpoint(&self) -> Result<Vec<u8>> {
        let next_xid = self.tm.next_xid().to_le_bytes().to_vec();
        let Some((offset, bytes)) = self.tm.clog_to_write() else {
            return Ok(next_xid);
        };
        let vfs = self.storage.vfs();
        let r = vfs
            .create(file_ids::CLOG)
            .and_then(|_| vfs.write_at(file_ids::CLOG, offset, &bytes))
            .and_then(|_| vfs.sync(file_ids::CLOG));
        if r.is_err() {
            self.tm.clog_write_failed(offset);
        }
        r.map(|_| next_xid)
    }
}

impl Inner {
    fn table(&self, t: TableId) -> Result<Arc<HeapTable>> {
        self.tables.get(t)
    }

    fn make_table(
        &self,
        id: TableId,
        def: TableDef,
        heap_rel: crate::device::FileId,
        pk: BTree,
        indexes: Vec<BTree>,
    ) -> HeapTable {
        let mut table = HeapTable::new(
            id,
            def,
            heap_rel,
            pk,
            indexes,
            self.design.fillfactor,
            self.design.hot_updates,
            self.storage.pool().clone(),
            self.storage.wal().clone(),
        );
        table.prune_on_access =
            self.design.garbage_collection != crate::design::GarbageCollection::Off;
        table
    }

    /// One autovacuum worker's visit to the database (autovacuum.c `do_autovacuum`): each
    /// table is vacuumed, then analyzed, as `relation_needs_vacanalyze` decides from the
    /// counters at the start of its turn. Both run with the cost-based delay
    /// ([`crate::buffer::vacuum_cost`]), its balance reset per table (vacuum.c `vacuum`).
    fn autovacuum_round(&self, stop: &Arc<StopSignal>) -> Result<()> {
        for t in self.tables.all() {
            let s = t.counters.snapshot();
            let ins = t.counters.n_ins_since_vacuum.load(Ordering::Relaxed).max(0) as u64;
            let vacuum = self.vacuum.needs_vacuum(s.n_live_tup, s.n_dead_tup, ins);
            let analyze = self
                .vacuum
                .needs_analyze(s.n_live_tup, s.n_mod_since_analyze);
            let _c = enter(Cause::Vacuum);
            with_cost_delay(self.vacuum.cost, stop, || -> Result<()> {
                if vacuum {
                    t.vacuum(&self.tm, &self.vacuum)?;
                    t.counters.autovacuum_count.fetch_add(1, Ordering::Relaxed);
                }
                if analyze {
                    t.analyze(&self.tm)?;
                    t.counters.autoanalyze_count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })?;
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
        Self::with_tm(storage, design, vacuum, TransactionManager::new())
    }

    /// The engine on storage that [`crate::recovery::redo`] has replayed: the clog from its
    /// file and the commit and abort records redo found (xids that did neither are marked
    /// aborted, counted in `redone.report.transactions_aborted`), and the tables of
    /// `catalog` opened on their relations. Free space and visibility maps start empty
    /// (they are not WAL-logged here; vacuum rebuilds them, as PostgreSQL's FSM is
    /// self-correcting), and so do the table counters.
    ///
    /// Errors: [`crate::Error::Corrupted`] for a B+tree whose meta page does not fit the
    /// design; device errors reading the clog.
    pub fn recover(
        storage: Arc<Storage>,
        design: DesignConfig,
        vacuum: VacuumConfig,
        catalog: &crate::recovery::CatalogSnapshot,
        redone: &mut crate::recovery::Redone,
    ) -> Result<Self> {
        let clog = read_clog(&storage)?;
        // The next xid the last checkpoint saw: xids below it that neither committed nor
        // aborted are the crash's (`TransactionManager::recovered`).
        let ckpt_next = redone
            .checkpoint_engine_state
            .as_deref()
            .and_then(|b| b.get(..4))
            .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        let max_xid = redone.max_xid.max(ckpt_next.saturating_sub(1));
        let (tm, aborted) = TransactionManager::recovered(&clog, &redone.xact_ends, max_xid);
        redone.report.transactions_aborted = aborted;
        let design_dedup = design.btree_deduplication;
        let btree_cfg = pg_btree(&design);
        let engine = Self::with_tm(storage, design, vacuum, tm);
        for t in &catalog.tables {
            engine.inner.tables.create(t.def.clone(), |id, def| {
                let pool = engine.inner.storage.pool().clone();
                let pk = BTree::open(pool.clone(), t.relations.primary_key, btree_cfg.clone())?
                    .with_deduplication(design_dedup);
                let indexes = t
                    .relations
                    .indexes
                    .iter()
                    .map(|&rel| {
                        BTree::open(pool.clone(), rel, btree_cfg.clone())
                            .map(|t| t.with_deduplication(design_dedup))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let table = engine
                    .inner
                    .make_table(id, def, t.relations.table, pk, indexes);
                table
                    .secondary_deferred
                    .store(t.secondary_deferred, Ordering::Release);
                Ok(table)
            })?;
        }
        Ok(engine)
    }

    fn with_tm(
        storage: Arc<Storage>,
        design: DesignConfig,
        vacuum: VacuumConfig,
        tm: TransactionManager,
    ) -> Self {
        let inner = Arc::new(Inner {
            storage,
            tm,
            design,
            vacuum,
            tables: TableList::new(),
        });
        let hook: Weak<dyn CheckpointHook> = Arc::downgrade(&inner) as Weak<dyn CheckpointHook>;
        inner.storage.set_checkpoint_hook(hook);
        let stop = Arc::new(StopSignal::default());
        let gc_on = inner.design.garbage_collection != crate::design::GarbageCollection::Off;
        let handle = (inner.vacuum.autovacuum && gc_on).then(|| {
            let weak: Weak<Inner> = Arc::downgrade(&inner);
            let stop = stop.clone();
            let nap = Duration::from_millis(inner.vacuum.naptime_ms.max(1));
            std::thread::Builder::new()
                .name("autovacuum".into())
                .spawn(move || {
                    // The first visit comes half a naptime after start, then one per
                    // naptime: PostgreSQL's launcher spreads the databases in its list over
                    // the naptime (autovacuum.c `rebuild_database_list`), and a fresh
                    // cluster's list at start holds two (template1, postgres), so the
                    // workload's database gets its first worker half a naptime in (measured
                    // on PostgreSQL 15: the first autoanalyze of a sysbench run 28.1 and
                    // 28.6 s after server start, naptime 60 s; docs/postgres.md).
                    let mut sleep = nap / 2;
                    loop {
                        if stop.sleep(sleep) {
                            return;
                        }
                        sleep = nap;
                        let Some(inner) = weak.upgrade() else { return };
                        if let Err(e) = inner.autovacuum_round(&stop) {
                            eprintln!("autovacuum stopped: {e}");
                            return;
                        }
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

/// The B-tree configuration of a heap index: nbtree's accounting, with the design's merge
/// threshold (0 in the `postgres` preset: nbtree never merges).
fn pg_btree(design: &DesignConfig) -> BTreeConfig {
    BTreeConfig {
        merge_threshold_pct: design.merge_threshold_pct(),
        ..BTreeConfig::postgres()
    }
}

impl Engine for PostgresEngine {
    fn create_table(&self, def: TableDef) -> Result<TableId> {
        self.inner.tables.create(def, |id, def| {
            let pool = self.inner.storage.pool().clone();
            let heap_rel = pool.store().create_relation()?;
            let dedup = self.inner.design.btree_deduplication;
            let pk = BTree::create(pool.clone(), pg_btree(&self.inner.design))?
                .with_deduplication(dedup);
            let indexes = def
                .indexes
                .iter()
                .map(|_| {
                    BTree::create(pool.clone(), pg_btree(&self.inner.design))
                        .map(|t| t.with_deduplication(dedup))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(self.inner.make_table(id, def, heap_rel, pk, indexes))
        })
    }

    fn finish_incomplete_splits(&self) -> Result<u64> {
        self.inner.tables.finish_incomplete_splits()
    }

    fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)> {
        self.inner.table(t)?.check_indexes()
    }

    fn catalog(&self) -> crate::recovery::CatalogSnapshot {
        crate::recovery::CatalogSnapshot {
            layout: String::new(),
            tables: self.inner.tables.catalog_tables(),
            undo_relation: None,
        }
    }

    fn defer_secondary_indexes(&self, t: TableId) -> Result<()> {
        self.inner.tables.defer_secondary_indexes(t)
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

    fn analyze(&self, t: TableId) -> Result<crate::heap::AnalyzeReport> {
        let table = self.inner.table(t)?;
        let _c = enter(Cause::Vacuum);
        let rep = table.analyze(&self.inner.tm)?;
        table.counters.analyze_count.fetch_add(1, Ordering::Relaxed);
        Ok(rep)
    }

    fn engine_counters(&self) -> EngineCounters {
        // No undo log; the B-tree's splits (nbtree never merges).
        let ops = self.inner.tables.btree_ops();
        EngineCounters {
            index_page_splits: ops.index_page_splits,
            ..Default::default()
        }
    }

    fn table_counters(&self, t: TableId) -> Result<TableStats> {
        Ok(self.inner.table(t)?.counters.snapshot())
    }

    fn relations(&self, t: TableId) -> Result<TableRelations> {
        self.inner.tables.relations(t)
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
        let _delay = committed.then(|| tm.delay_checkpoint());
        let result = self.core.log_end(tm, self.inner.storage.wal(), committed);
        let committed = committed && result.is_ok();
        let changes = self.core.finish(tm, committed);
        drop(_delay);
        for (t, (ins, upd, del)) in changes {
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
