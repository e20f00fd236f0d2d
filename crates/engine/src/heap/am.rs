//! The heap table access method (PostgreSQL heapam_handler.c `heapam_methods`): heap tables
//! ([`HeapTable`]), PostgreSQL's end of transaction (commit record flushed at commit, the
//! commit log and its share of each checkpoint, xact.c `RecordTransactionCommit`, clog.c
//! `CheckPointCLOG`), VACUUM and ANALYZE, and the autovacuum worker's rounds
//! (autovacuum.c `do_autovacuum`). The `postgres` preset's engine is
//! [`crate::db::DesignEngine`] over it.
//!
//! # Locking
//! The autovacuum thread holds a `Weak` reference and upgrades it once per round; a commit
//! holds the transaction manager's checkpoint delay (`delay_checkpoint`, PostgreSQL's
//! DELAY_CHKPT_START) from before its commit record until its clog update.

use super::{HeapTable, VacuumConfig};
use crate::access::AnalyzeReport;
use crate::access::{
    AmOpen, AmShared, EngineCounters, GcReport, Recovering, TableAccessMethod, TableId, TxnCore,
    XactEnd,
};
use crate::btree::{BTree, BTreeConfig};
use crate::buffer::vacuum_cost::with_cost_delay;
use crate::catalog::TableDef;
use crate::design::DesignConfig;
use crate::device::file_ids;
use crate::error::Result;
use crate::mvcc::TransactionManager;
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::{CheckpointHook, Storage};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// The heap access method of one database (see the module doc).
pub struct HeapAm {
    storage: Arc<Storage>,
    shared: AmShared<HeapTable>,
    design: DesignConfig,
    vacuum: VacuumConfig,
    stop: Arc<StopSignal>,
    autovacuum: Mutex<Option<JoinHandle<()>>>,
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
impl CheckpointHook for HeapAm {
    /// Writes the clog's changed pages; returns the next xid (u32 LE) for the checkpoint
    /// record (PostgreSQL `CheckPoint.nextXid`), read before the clog so that every xid
    /// the clog names is below it.
    fn checkpoint(&self) -> Result<Vec<u8>> {
        let next_xid = self.shared.tm.next_xid().to_le_bytes().to_vec();
        let Some((offset, bytes)) = self.shared.tm.clog_to_write() else {
            return Ok(next_xid);
        };
        let vfs = self.storage.vfs();
        let r = vfs
            .create(file_ids::CLOG)
            .and_then(|_| vfs.write_at(file_ids::CLOG, offset, &bytes))
            .and_then(|_| vfs.sync(file_ids::CLOG));
        if r.is_err() {
            self.shared.tm.clog_write_failed(offset);
        }
        r.map(|_| next_xid).map_err(crate::Error::from)
    }
}

/// The B-tree configuration of a heap index: nbtree's accounting, with the design's merge
/// threshold (0 in the `postgres` preset: nbtree never merges).
fn pg_btree(design: &DesignConfig) -> BTreeConfig {
    BTreeConfig {
        merge_threshold_pct: design.merge_threshold_pct(),
        // The index fillfactor reloption: the rightmost leaf's split point
        // (nbtsplitloc.c `_bt_findsplitloc`, `leaffillfactor`).
        rightmost_fill_pct: design.index_fill_pct(),
        ..BTreeConfig::postgres()
    }
}

/// When an autovacuum worker first visits the workload's database after the database
/// opens, `nap` being autovacuum_naptime. Then it visits once per naptime.
///
/// PostgreSQL's launcher spreads the databases of its list over the naptime, one every
/// naptime / n (autovacuum.c `rebuild_database_list`).
/// - A fresh cluster (`reopened` false) lists two databases at start (template1,
///   postgres), so the workload's database gets its first worker half a naptime in.
///   Measured on PostgreSQL 15: the first autoanalyze of a sysbench run came 28.1 and
///   28.6 s after server start, naptime 60 s (docs/postgres.md).
/// - A restarted cluster that holds the workload's database (`reopened`: a database opened
///   over its tables, as `--load-once` and a saved data directory restart it) lists three.
///   The workload's database came second, two thirds of a naptime in. Measured on
///   PostgreSQL 15.20, naptime 60 s, after a clean restart: template1 was visited at
///   20.3 s, and the workload's table vacuumed at 40.2 s and 40.9 s (docs/fidelity.md,
///   "Scale grid").
pub fn first_autovacuum_visit(nap: Duration, reopened: bool) -> Duration {
    if reopened {
        nap * 2 / 3
    } else {
        nap / 2
    }
}

impl HeapAm {
    /// The access method on `open.storage`, with autovacuum started when `vacuum.autovacuum`
    /// and the design's `autovacuum` switch are on (and garbage collection is on). A new database starts with no tables. A database that
    /// existed is opened on storage that [`crate::recovery::redo`] has replayed: the clog
    /// from its file and the commit and abort records redo found (xids that did neither are
    /// marked aborted, counted in `redone.report.transactions_aborted`), and the tables of
    /// `catalog` opened on their relations. Free space and visibility maps start empty
    /// (they are not WAL-logged here; vacuum rebuilds them, as PostgreSQL's FSM is
    /// self-correcting), and so do the table counters.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a B+tree whose meta page does not fit the
    /// design; device errors reading the clog.
    pub fn open(open: AmOpen<'_>, vacuum: VacuumConfig) -> Result<Arc<Self>> {
        let Some(Recovering { catalog, redone }) = open.recovering else {
            let tm = TransactionManager::new();
            return Ok(Self::with_tm(open.storage, open.design, vacuum, tm, false));
        };
        let (storage, design) = (open.storage, open.design);
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
        let am = Self::with_tm(storage, design, vacuum, tm, !catalog.tables.is_empty());
        for t in &catalog.tables {
            am.shared.tables.create(t.def.clone(), |id, def| {
                let pool = am.storage.pool().clone();
                let pk = match t.relations.primary_key {
                    Some(rel) => Some(
                        BTree::open(pool.clone(), rel, btree_cfg.clone())?
                            .with_deduplication(design_dedup),
                    ),
                    None => None,
                };
                let indexes = t
                    .relations
                    .indexes
                    .iter()
                    .map(|&rel| {
                        BTree::open(pool.clone(), rel, btree_cfg.clone())
                            .map(|t| t.with_deduplication(design_dedup))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let table = am.make_table(id, def, t.relations.table, pk, indexes);
                table
                    .secondary_deferred
                    .store(t.secondary_deferred, Ordering::Release);
                Ok(table)
            })?;
        }
        Ok(am)
    }

    /// The access method on `storage`; `reopened`: a database that already holds tables
    /// (its autovacuum worker's first visit comes later: [`first_autovacuum_visit`]).
    fn with_tm(
        storage: Arc<Storage>,
        design: DesignConfig,
        vacuum: VacuumConfig,
        tm: TransactionManager,
        reopened: bool,
    ) -> Arc<Self> {
        let am = Arc::new(HeapAm {
            storage,
            shared: AmShared::new(tm),
            design,
            vacuum,
            stop: Arc::new(StopSignal::default()),
            autovacuum: Mutex::new(None),
        });
        let hook: Weak<dyn CheckpointHook> = Arc::downgrade(&am) as Weak<dyn CheckpointHook>;
        am.storage.set_checkpoint_hook(hook);
        // The worker runs when both the storage settings and the design's `autovacuum`
        // switch say so, and not at all with garbage collection off. Switching it off
        // leaves pruning on access (`make_table`), as `autovacuum = off` in PostgreSQL
        // leaves pruneheap.c `heap_page_prune_opt` to every backend that reads a page.
        let gc_on = am.design.garbage_collection != crate::design::GarbageCollection::Off;
        let handle = (am.vacuum.autovacuum && am.design.autovacuum && gc_on).then(|| {
            let weak: Weak<HeapAm> = Arc::downgrade(&am);
            let stop = am.stop.clone();
            let nap = Duration::from_millis(am.vacuum.naptime_ms.max(1));
            std::thread::Builder::new()
                .name("autovacuum".into())
                .spawn(move || {
                    // The first visit (`first_autovacuum_visit`), then one per naptime.
                    let mut sleep = first_autovacuum_visit(nap, reopened);
                    loop {
                        if stop.sleep(sleep) {
                            return;
                        }
                        sleep = nap;
                        let Some(am) = weak.upgrade() else { return };
                        if let Err(e) = am.autovacuum_round(&stop) {
                            eprintln!("autovacuum stopped: {e}");
                            return;
                        }
                    }
                })
                .expect("spawn autovacuum")
        });
        *am.autovacuum.lock() = handle;
        am
    }

    fn make_table(
        &self,
        id: TableId,
        def: TableDef,
        heap_rel: crate::device::FileId,
        pk: Option<BTree>,
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
        for t in self.shared.tables.all() {
            // Shutting down: no further table (autovacuum.c `do_autovacuum` checks
            // `ShutdownRequestPending`/interrupts between relations; the postmaster's
            // SIGTERM ends a worker at its next CHECK_FOR_INTERRUPTS).
            if stop.is_raised() {
                break;
            }
            let s = t.counters.snapshot();
            let ins = t.counters.n_ins_since_vacuum.load(Ordering::Relaxed).max(0) as u64;
            let vacuum = self.vacuum.needs_vacuum(s.n_live_tup, s.n_dead_tup, ins);
            let analyze = self
                .vacuum
                .needs_analyze(s.n_live_tup, s.n_mod_since_analyze);
            let _c = enter(Cause::Vacuum);
            with_cost_delay(self.vacuum.cost, stop, || -> Result<()> {
                if vacuum {
                    t.vacuum(&self.shared.tm, &self.vacuum)?;
                    t.counters.autovacuum_count.fetch_add(1, Ordering::Relaxed);
                }
                if analyze {
                    t.analyze(&self.shared.tm)?;
                    t.counters.autoanalyze_count.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

impl TableAccessMethod for HeapAm {
    type Table = HeapTable;
    type TxnState = ();

    fn shared(&self) -> &AmShared<HeapTable> {
        &self.shared
    }

    fn create_table(&self, id: TableId, def: TableDef) -> Result<HeapTable> {
        let pool = self.storage.pool().clone();
        let heap_rel = pool.store().create_relation()?;
        let dedup = self.design.btree_deduplication;
        // A table without a primary key is a plain heap: no primary-key index at all.
        let pk = match def.has_primary_key() {
            true => {
                Some(BTree::create(pool.clone(), pg_btree(&self.design))?.with_deduplication(dedup))
            }
            false => None,
        };
        let indexes = def
            .indexes
            .iter()
            .map(|_| {
                BTree::create(pool.clone(), pg_btree(&self.design))
                    .map(|t| t.with_deduplication(dedup))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(self.make_table(id, def, heap_rel, pk, indexes))
    }

    fn build_secondary_indexes(&self, table: &HeapTable) -> Result<u64> {
        table.build_secondary_indexes(&self.shared.tm)
    }

    /// The commit record, flushed (synchronous commit), or the abort record, not flushed;
    /// then the clog and the proc array (`TxnCore::finish`), all under the checkpoint delay
    /// at commit.
    fn end_xact(&self, core: &mut TxnCore, _: &mut (), commit: bool) -> XactEnd {
        let tm = &self.shared.tm;
        let delay = commit.then(|| tm.delay_checkpoint());
        let result = core.log_end(tm, self.storage.wal(), commit);
        let committed = commit && result.is_ok();
        let changes = core.finish(tm, committed);
        drop(delay);
        XactEnd {
            result,
            committed,
            changes,
        }
    }

    /// A manual VACUUM (cause `vacuum`; no cost-based delay), counted in `vacuum_count`.
    fn gc(&self, table: &HeapTable) -> Result<GcReport> {
        let _c = enter(Cause::Vacuum);
        let rep = table.vacuum(&self.shared.tm, &self.vacuum)?;
        table.counters.vacuum_count.fetch_add(1, Ordering::Relaxed);
        Ok(GcReport { vacuum: Some(rep) })
    }

    /// A manual ANALYZE (cause `vacuum`), counted in `analyze_count`.
    fn analyze(&self, table: &HeapTable) -> Result<AnalyzeReport> {
        let _c = enter(Cause::Vacuum);
        let rep = table.analyze(&self.shared.tm)?;
        table.counters.analyze_count.fetch_add(1, Ordering::Relaxed);
        Ok(rep)
    }

    /// No undo log; the B-tree's splits (nbtree never merges).
    fn engine_counters(&self) -> EngineCounters {
        let ops = self.shared.tables.btree_ops();
        EngineCounters {
            index_page_splits: ops.index_page_splits,
            ..Default::default()
        }
    }

    fn check_indexes(&self, table: &HeapTable) -> Result<(u64, Vec<String>)> {
        table.check_indexes()
    }

    fn shutdown(&self) {
        self.stop.raise();
        if let Some(h) = self.autovacuum.lock().take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod first_visit_tests {
    use super::first_autovacuum_visit;
    use std::time::Duration;

    /// A fresh cluster's first visit half a naptime in, a reopened one's two thirds in
    /// (PostgreSQL 15, naptime 60 s: about 28 s and 40 s measured).
    #[test]
    fn a_reopened_database_is_first_visited_two_thirds_of_a_naptime_in() {
        let nap = Duration::from_secs(60);
        assert_eq!(first_autovacuum_visit(nap, false), Duration::from_secs(30));
        assert_eq!(first_autovacuum_visit(nap, true), Duration::from_secs(40));
    }
}
