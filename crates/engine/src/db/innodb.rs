//! The `innodb` engine: clustered tables (crate::clustered), read views per transaction at
//! repeatable read (InnoDB's default) or per statement at read committed, a rollback segment
//! and undo segments per read-write transaction, the history list, purge threads and history
//! truncation after each purge batch.

use super::txn::TxnCore;
use super::{
    Assign, Engine, EngineCounters, EngineTxn, GcReport, TableId, TableList, TableRelations,
};
use crate::btree::{BTree, BTreeConfig, ScanDirection};
use crate::catalog::{Row, TableDef, Value};
use crate::clustered::{
    purge_entry, ClusteredTable, History, HistoryEntry, PurgeConfig, RowCtx, TrxUndo, UndoSpace,
};
use crate::design::{DesignConfig, GarbageCollection};
use crate::error::Result;
use crate::heap::TableStats;
use crate::mvcc::{Isolation, TransactionManager, Xid};
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::Storage;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

struct Inner {
    storage: Arc<Storage>,
    design: DesignConfig,
    tm: TransactionManager,
    tables: TableList<ClusteredTable>,
    undo: Arc<UndoSpace>,
    history: History,
    /// Held by the thread truncating the history (MariaDB's purge_truncation_task, a task
    /// group of one).
    truncating: Mutex<()>,
    /// A truncation was asked for while one ran: the running one repeats.
    truncate_again: AtomicBool,
    /// Undo pages purged since the last truncation (the purge batch so far).
    batch_pages: AtomicU64,
    /// History entries taken by a purge round and not yet purged (so that `gc` can wait
    /// for other purge threads' work in flight).
    in_flight: AtomicU64,
    /// A purge run is under way: woken by the master tick, it lasts until a round finds
    /// nothing purgeable (MariaDB's `purge_state.m_running`).
    purge_running: AtomicBool,
    /// When the master task next wakes purge (`srv_master_callback`, every
    /// `wake_interval_ms`).
    next_wake: Mutex<Instant>,
    purge: PurgeConfig,
}

impl Inner {
    fn table(&self, t: TableId) -> Result<Arc<ClusteredTable>> {
        self.tables.get(t)
    }

    /// Truncates the rollback segments' history lists (srv0srv.cc `purge_coordinator_state::
    /// do_purge` submits `purge_truncation_task` after each `trx_purge` batch): one thread at
    /// a time; a request made meanwhile makes the running thread go again.
    fn truncate_history(&self) -> Result<()> {
        let _c = enter(Cause::Purge);
        self.truncate_again.store(true, Ordering::Release);
        while self.truncate_again.load(Ordering::Acquire) {
            let Some(_g) = self.truncating.try_lock() else {
                break;
            };
            self.truncate_again.store(false, Ordering::Release);
            self.undo.truncate_history(self.tm.oldest_xmin())?;
        }
        Ok(())
    }

    /// Whether the purge threads should purge now: always with `wake_interval_ms` 0;
    /// otherwise while a run is under way, and a run starts at the master task's tick when
    /// there is history (srv0srv.cc `srv_master_callback` → `purge_sys_t::wake_if_not_active`:
    /// `!purge_state.m_running && trx_sys.history_exists()`).
    fn purge_due(&self) -> bool {
        let every_ms = self.purge.wake_interval_ms;
        if every_ms == 0 || self.purge_running.load(Ordering::Acquire) {
            return true;
        }
        let now = Instant::now();
        let mut next = self.next_wake.lock();
        if now < *next {
            return false;
        }
        let every = Duration::from_millis(every_ms);
        while *next <= now {
            *next += every;
        }
        drop(next);
        if self.history.length.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.purge_running.store(true, Ordering::Release);
        true
    }

    /// Purges up to `max_logs` history entries older than every read view; returns how many
    /// logs it purged. The purge threads' rounds together make MariaDB's purge batch: once
    /// they have handled `batch_pages` undo pages, or a round found nothing more to purge,
    /// the history is truncated (`do_purge`: `trx_purge`, then `purge_truncation_task`).
    fn purge_round(&self, max_logs: usize) -> Result<u64> {
        let _c = enter(Cause::Purge);
        let mut n = 0;
        let mut pages = 0;
        while n < max_logs as u64 {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            let Some(e) = self.history.pop_purgeable(self.tm.oldest_xmin()) else {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                break;
            };
            let _done = InFlight(&self.in_flight);
            pages += e
                .records
                .iter()
                .map(|rp| rp.page_no)
                .collect::<HashSet<u32>>()
                .len()
                .max(1) as u64;
            purge_entry(
                e,
                &self.undo,
                &self.history,
                &|u, trx| match self.table(u.table) {
                    Ok(t) => {
                        let r = t.purge_record(u, trx, &self.tm)?;
                        // The old version this undo record kept is gone: one dead tuple
                        // fewer (n_dead_tup counted it at the update's or delete's commit).
                        t.counters.sub_dead(1);
                        Ok(r)
                    }
                    Err(_) => Ok(0),
                },
            )?;
            n += 1;
        }
        if n < max_logs as u64 {
            // Nothing more is purgeable: the run ends (do_purge leaves its loop when a
            // batch handled no page), until the master task wakes purge again.
            self.purge_running.store(false, Ordering::Release);
        }
        if n > 0 {
            let batch = self.batch_pages.fetch_add(pages, Ordering::AcqRel) + pages;
            if batch >= self.purge.batch_pages as u64 || n < max_logs as u64 {
                self.batch_pages.store(0, Ordering::Release);
                self.undo
                    .counters
                    .purge_batches
                    .fetch_add(1, Ordering::Relaxed);
                self.truncate_history()?;
            }
        }
        Ok(n)
    }
}

impl Inner {
    fn new(
        storage: Arc<Storage>,
        design: DesignConfig,
        purge: PurgeConfig,
        tm: TransactionManager,
        undo: Arc<UndoSpace>,
    ) -> Arc<Inner> {
        Arc::new(Inner {
            storage,
            design,
            tm,
            tables: TableList::new(),
            undo,
            history: History::default(),
            truncating: Mutex::new(()),
            truncate_again: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            batch_pages: AtomicU64::new(0),
            purge_running: AtomicBool::new(false),
            next_wake: Mutex::new(Instant::now() + Duration::from_millis(purge.wake_interval_ms)),
            purge,
        })
    }

    /// Undoes every change of transaction `trx_id`, newest first (trx0roll.cc
    /// `trx_rollback_to_savepoint_low` → row0undo.cc `row_undo` for each record
    /// `trx_roll_pop_top_rec_of_trx` hands out): the abort path, and recovery's rollback of
    /// the transactions a crash left active. Goes on past a failing record and returns the
    /// first error; returns the records applied (a record whose row no longer carries the
    /// transaction's id is skipped, see [`ClusteredTable::rollback_record`]).
    fn rollback(&self, trx_id: u64, undo: &TrxUndo) -> (Result<()>, u64) {
        let mut result = Ok(());
        let mut applied = 0;
        for rp in undo.all.iter().rev() {
            let r = self.undo.read(*rp).and_then(|u| match self.table(u.table) {
                Ok(t) => t.rollback_record(&u, trx_id),
                Err(_) => Ok(false),
            });
            match r {
                Ok(true) => applied += 1,
                Ok(false) => {}
                Err(e) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        (result, applied)
    }

    /// The undo log's part of the end of transaction `trx_id`, committed or rolled back
    /// ([`UndoSpace::finish`], one WAL record): insert undo cached or freed, update undo
    /// into its rollback segment's history list and into purge's queue. Update undo joins
    /// the history after a commit and after a rollback alike (trx_commit_low →
    /// trx_purge_add_undo_to_history): a reader may still follow a roll pointer into it, so
    /// only purge, past every read view, may free its pages.
    ///
    /// Errors: storage errors.
    fn finish_undo(&self, trx_id: u64, undo: &mut TrxUndo) -> Result<()> {
        if let Some((log, records)) = self.undo.finish(undo)? {
            self.history.push(HistoryEntry {
                trx_id,
                records,
                log,
            });
        }
        Ok(())
    }
}

/// Counts a taken history entry as done when dropped (also on an error).
struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The `innodb` design. See the `clustered` module doc.
pub struct InnodbEngine {
    inner: Arc<Inner>,
    stop: Arc<StopSignal>,
    purge_threads: Mutex<Vec<JoinHandle<()>>>,
}

impl InnodbEngine {
    /// The engine on `storage`, with `purge.threads` purge threads unless garbage collection
    /// is off.
    ///
    /// Errors: storage errors creating the undo space.
    pub fn new(storage: Arc<Storage>, design: DesignConfig, purge: PurgeConfig) -> Result<Self> {
        let undo = Arc::new(UndoSpace::create(
            storage.pool().clone(),
            storage.wal().clone(),
            design.rollback_segments,
        )?);
        let inner = Inner::new(storage, design, purge, TransactionManager::new(), undo);
        Ok(Self::start(inner))
    }

    /// The engine on `inner`, with its purge threads started.
    fn start(inner: Arc<Inner>) -> Self {
        let stop = Arc::new(StopSignal::default());
        let mut threads = Vec::new();
        if inner.design.garbage_collection != GarbageCollection::Off {
            for i in 0..inner.purge.threads {
                let weak: Weak<Inner> = Arc::downgrade(&inner);
                let stop = stop.clone();
                let nap = Duration::from_millis(inner.purge.interval_ms.max(1));
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("purge_{i}"))
                        .spawn(move || loop {
                            let worked = match weak.upgrade() {
                                Some(inner) if !inner.purge_due() => false,
                                Some(inner) => match inner.purge_round(16) {
                                    Ok(n) => n > 0,
                                    Err(e) => {
                                        eprintln!("purge thread stopped: {e}");
                                        return;
                                    }
                                },
                                None => return,
                            };
                            let stopped = if worked {
                                stop.is_raised()
                            } else {
                                stop.sleep(nap)
                            };
                            if stopped {
                                return;
                            }
                        })
                        .expect("spawn purge thread"),
                );
            }
        }
        InnodbEngine {
            inner,
            stop,
            purge_threads: Mutex::new(threads),
        }
    }

    /// The engine on storage that [`crate::recovery::redo`] has replayed (every page as of
    /// the crash), with the tables of `catalog`: InnoDB's undo recovery (MariaDB 10.11
    /// srv0start.cc `srv_start` → `trx_lists_init_at_db_start`, then
    /// `trx_rollback_recovered`):
    /// 1. The rollback segments and their undo segments are rebuilt from their pages
    ///    ([`UndoSpace::open`]: trx0rseg.cc `trx_rseg_array_init` → `trx_rseg_mem_restore`,
    ///    trx0undo.cc `trx_undo_lists_init`): slots, caches, history lists and sizes.
    /// 2. Purge's queue is the history lists' logs in commit order, with their records'
    ///    roll pointers read from the undo pages (trx0purge.cc `purge_sys_t::create` and
    ///    `trx_purge_rseg_get_next_history_log` walk the same lists), so purge resumes
    ///    where the crash left it (logs purged but not yet truncated are purged again,
    ///    which finds nothing left to remove).
    /// 3. The transaction manager: the next trx id is above every id in an undo log header,
    ///    in TRX_RSEG_MAX_TRX_ID and in the replayed WAL (`trx_rseg_mem_restore` raises
    ///    `trx_sys.m_max_trx_id` the same way); every id below it is committed but those
    ///    rolled back here and those with an abort record
    ///    ([`TransactionManager::recovered_committed`]).
    /// 4. The tables are opened on their relations (`secondary_deferred` restored).
    /// 5. Every transaction with an undo segment still in state active is rolled back
    ///    through its undo records, newest first, with the abort path's code
    ///    (trx0roll.cc `trx_rollback_active` → `row_undo`), then its undo segments are
    ///    finished as an aborted transaction's are (`trx_rollback_finish` → `trx_commit`).
    ///    A segment is active exactly when its transaction's commit did not reach the undo
    ///    log: the commit changes the states of both of its segments in one WAL record
    ///    ([`UndoSpace::finish`], MariaDB's commit mini-transaction
    ///    `trx_write_serialisation_history`), which is the commit (there is no commit
    ///    record, as in InnoDB), and the commit returns once the WAL is durable past it.
    ///
    /// Differences from MariaDB: the rollback runs synchronously here, before the database
    /// opens (MariaDB rolls back in a background thread, `trx_rollback_all_recovered`, with
    /// the recovered transactions' rows locked meanwhile); the whole history's roll pointers
    /// are read at open (MariaDB reads one log at a time as purge goes); table counters
    /// start at zero.
    ///
    /// Errors: [`crate::Error::Corrupted`] for a catalog without the undo relation, undo
    /// pages that do not hold what their headers say, or a B+tree whose meta page does not
    /// fit the design; [`crate::Error::InvalidConfig`] for a rollback segment count the
    /// database was not made with; storage errors.
    pub fn recover(
        storage: Arc<Storage>,
        design: DesignConfig,
        purge: PurgeConfig,
        catalog: &crate::recovery::CatalogSnapshot,
        redone: &mut crate::recovery::Redone,
    ) -> Result<Self> {
        let _c = enter(Cause::Recovery);
        let rel = catalog
            .undo_relation
            .ok_or_else(|| crate::Error::Corrupted {
                what: "innodb catalog without the undo relation".into(),
            })?;
        let (undo, found) = UndoSpace::open(
            storage.pool().clone(),
            storage.wal().clone(),
            rel,
            design.rollback_segments,
        )?;
        let mut aborted: Vec<Xid> = redone
            .xact_ends
            .iter()
            .filter(|e| !e.1)
            .map(|e| e.0)
            .collect();
        let max = found.max_trx_id.max(redone.max_xid as u64);
        let next = Xid::try_from(max + 1).map_err(|_| crate::Error::Corrupted {
            what: format!("undo log names transaction id {max}, past the xid space"),
        })?;
        aborted.extend(found.active.iter().map(|(trx, _)| *trx as Xid));
        let tm = TransactionManager::recovered_committed(next, &aborted);
        let inner = Inner::new(storage, design, purge, tm, Arc::new(undo));
        for e in found.history {
            inner.history.push(e);
        }
        for t in &catalog.tables {
            inner.tables.create(t.def.clone(), |id, def| {
                let pool = inner.storage.pool().clone();
                let sec = innodb_btree(&inner.design);
                let cfg = BTreeConfig {
                    rightmost_fill_pct: inner.design.fillfactor,
                    ..sec.clone()
                };
                let clustered = BTree::open(pool.clone(), t.relations.table, cfg)?;
                let indexes = t
                    .relations
                    .indexes
                    .iter()
                    .map(|&rel| BTree::open(pool.clone(), rel, sec.clone()))
                    .collect::<Result<Vec<_>>>()?;
                let table = ClusteredTable::new(
                    id,
                    def,
                    clustered,
                    indexes,
                    inner.undo.clone(),
                    inner.design.purge_resets_trx_id,
                );
                table
                    .secondary_deferred
                    .store(t.secondary_deferred, Ordering::Release);
                Ok(table)
            })?;
        }
        // Splits a crash interrupted are finished before rollback searches the trees
        // (mvcclab readers do not move right; MariaDB's B-tree changes are atomic
        // mini-transactions and need no such step).
        redone.report.splits_finished += inner.tables.finish_incomplete_splits()?;
        for (trx, mut undo) in found.active {
            let (r, applied) = inner.rollback(trx, &undo);
            r?;
            redone.report.undo_records_rolled_back += applied;
            redone.report.transactions_rolled_back += 1;
            inner.finish_undo(trx, &mut undo)?;
            inner.undo.release(&mut undo);
        }
        Ok(Self::start(inner))
    }

    /// The transaction manager (for tests and tools).
    pub fn transactions(&self) -> &TransactionManager {
        &self.inner.tm
    }
}

/// The B-tree configuration of a secondary index (and, with the fillfactor switch, of the
/// clustered index): InnoDB's accounting with the design's merge threshold.
fn innodb_btree(design: &DesignConfig) -> BTreeConfig {
    BTreeConfig {
        merge_threshold_pct: design.merge_threshold_pct(),
        ..BTreeConfig::innodb()
    }
}

impl Engine for InnodbEngine {
    fn create_table(&self, def: TableDef) -> Result<TableId> {
        self.inner.tables.create(def, |id, def| {
            let pool = self.inner.storage.pool().clone();
            // The fillfactor switch is the fill ascending inserts leave in a leaf (InnoDB
            // 15/16).
            let sec = innodb_btree(&self.inner.design);
            let cfg = BTreeConfig {
                rightmost_fill_pct: self.inner.design.fillfactor,
                ..sec.clone()
            };
            let clustered = BTree::create(pool.clone(), cfg)?;
            let indexes = def
                .indexes
                .iter()
                .map(|_| BTree::create(pool.clone(), sec.clone()))
                .collect::<Result<Vec<_>>>()?;
            Ok(ClusteredTable::new(
                id,
                def,
                clustered,
                indexes,
                self.inner.undo.clone(),
                self.inner.design.purge_resets_trx_id,
            ))
        })
    }

    fn defer_secondary_indexes(&self, t: TableId) -> Result<()> {
        self.inner.tables.defer_secondary_indexes(t)
    }

    fn build_secondary_indexes(&self, t: TableId) -> Result<u64> {
        self.inner.tables.get(t)?.build_secondary_indexes()
    }

    fn table_id(&self, name: &str) -> Result<TableId> {
        self.inner.tables.id_of(name)
    }

    fn table_def(&self, t: TableId) -> Result<TableDef> {
        Ok(self.inner.table(t)?.def.clone())
    }

    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn> {
        Box::new(InnoTxn {
            core: TxnCore::begin(&self.inner.tm, iso),
            inner: self.inner.clone(),
            undo: TrxUndo::default(),
        })
    }

    fn gc(&self, _t: TableId) -> Result<GcReport> {
        // Purge everything purgeable, waiting for entries other purge threads took, then
        // truncate once more under the truncation lock (waiting for a truncation in
        // progress), so that every purged log is off its history list on return.
        loop {
            while self.inner.purge_round(usize::MAX)? > 0 {}
            if self.inner.in_flight.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let _c = enter(Cause::Purge);
        let _g = self.inner.truncating.lock();
        self.inner
            .undo
            .truncate_history(self.inner.tm.oldest_xmin())?;
        Ok(GcReport { vacuum: None })
    }

    fn table_counters(&self, t: TableId) -> Result<TableStats> {
        Ok(self.inner.table(t)?.counters.snapshot())
    }

    fn relations(&self, t: TableId) -> Result<TableRelations> {
        self.inner.tables.relations(t)
    }

    fn row_versions(&self, t: TableId, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        self.inner.table(t)?.versions(pk)
    }

    fn engine_counters(&self) -> EngineCounters {
        let u = &self.inner.undo.counters;
        let pool = self.inner.storage.pool();
        let h = &self.inner.history;
        let ops = self.inner.tables.btree_ops();
        EngineCounters {
            undo_records_written: u.records_written.load(Ordering::Relaxed),
            undo_pages_allocated: u.pages_allocated.load(Ordering::Relaxed),
            undo_pages_written: self
                .inner
                .storage
                .pool()
                .page_type_io(crate::clustered::PAGE_TYPE_UNDO)
                .pages_written,
            undo_pages_freed: u.pages_freed.load(Ordering::Relaxed),
            undo_pages_in_use: self.inner.undo.pages_in_use(),
            undo_segments_reused: u.segments_reused.load(Ordering::Relaxed),
            purge_records: h.purge_records.load(Ordering::Relaxed),
            purge_removed: h.purge_removed.load(Ordering::Relaxed),
            purged_logs: h.purged_logs.load(Ordering::Relaxed),
            purge_batches: u.purge_batches.load(Ordering::Relaxed),
            history_list_length: h.length.load(Ordering::Relaxed),
            history_list_length_peak: h.peak.load(Ordering::Relaxed),
            undo_pages_read: pool
                .page_type_io(crate::clustered::PAGE_TYPE_UNDO)
                .pages_read,
            rseg_pages_read: pool
                .page_type_io(crate::clustered::PAGE_TYPE_RSEG)
                .pages_read,
            rseg_pages_written: pool
                .page_type_io(crate::clustered::PAGE_TYPE_RSEG)
                .pages_written,
            index_page_splits: ops.index_page_splits,
            index_page_merge_attempts: ops.index_page_merge_attempts,
            index_page_merge_successful: ops.index_page_merge_successful,
        }
    }

    fn finish_incomplete_splits(&self) -> Result<u64> {
        self.inner.tables.finish_incomplete_splits()
    }

    fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)> {
        let table = self.inner.table(t)?;
        let def = &table.def;
        let (mut entries, mut problems) = (0, Vec::new());
        if let Err(e) = table.clustered.verify() {
            problems.push(format!("table {} clustered index: {e}", def.name));
        }
        for (ix, tree) in def.indexes.iter().zip(table.indexes.iter()) {
            if let Err(e) = tree.verify() {
                problems.push(format!("table {} index {}: {e}", def.name, ix.name));
                continue;
            }
            let types = def.key_columns(&ix.columns)?;
            let mut keys = Vec::new();
            tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                &mut |k, _| {
                    keys.push(k.to_vec());
                    Ok(true)
                },
            )?;
            for k in keys {
                entries += 1;
                // A secondary entry is the index key followed by the primary key
                // (row0row.cc `row_build_index_entry`): its clustered record must exist,
                // delete-marked or not (purge removes the secondary entry first).
                let found = match crate::catalog::decode_key_prefix(&types, &k) {
                    Ok((_, used)) => table.clustered.get(&k[used..])?.is_some(),
                    Err(_) => false,
                };
                if !found {
                    problems.push(format!(
                        "table {} index {}: entry {k:02x?} has no clustered record",
                        def.name, ix.name
                    ));
                }
            }
        }
        Ok((entries, problems))
    }

    fn catalog(&self) -> crate::recovery::CatalogSnapshot {
        crate::recovery::CatalogSnapshot {
            layout: String::new(),
            tables: self.inner.tables.catalog_tables(),
            undo_relation: Some(self.inner.undo.rel()),
        }
    }

    fn shutdown(&self) {
        self.stop.raise();
        for h in self.purge_threads.lock().drain(..) {
            let _ = h.join();
        }
    }
}

impl Drop for InnodbEngine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct InnoTxn {
    inner: Arc<Inner>,
    core: TxnCore,
    undo: TrxUndo,
}

impl InnoTxn {
    /// One statement under `cause`, with the statement's read view (TxnCore::statement: per
    /// statement at read committed; created at the first statement and kept at repeatable
    /// read, trx_assign_read_view).
    fn stmt<T>(
        &mut self,
        cause: Cause,
        t: TableId,
        writes: bool,
        f: impl FnOnce(&ClusteredTable, &RowCtx<'_>, &mut TrxUndo) -> Result<T>,
    ) -> Result<T> {
        self.core.check_open()?;
        let _c = enter(cause);
        let table = self.inner.table(t)?;
        let tm = &self.inner.tm;
        let (xid, view) = self.core.statement(tm, writes);
        let ctx = RowCtx {
            tm,
            xid,
            view: &view,
        };
        let r = f(&table, &ctx, &mut self.undo);
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
        let xid = self.core.xid(tm);
        let mut undo = std::mem::take(&mut self.undo);
        let mut result = Ok(());
        if !committed {
            // trx_rollback: undo every change, newest first.
            result = self.inner.rollback(xid as u64, &undo).0;
        }
        // The undo log's commit (one WAL record changing both segments' states, MariaDB's
        // commit mini-transaction, trx0trx.cc `trx_write_serialisation_history`) is the
        // commit: InnoDB writes no commit record. The commit flushes the WAL up to it
        // (`trx_t::commit_low` keeps the mini-transaction's end as `commit_lsn`,
        // `trx_commit_complete_for_mysql` → `trx_flush_log_if_needed`), and a log still
        // active at recovery belongs to a transaction that did not commit. An abort writes
        // mvcclab's XACT abort record, unflushed.
        let finished = self.inner.finish_undo(xid as u64, &mut undo);
        let committed = committed && result.is_ok() && finished.is_ok();
        let wal = self.inner.storage.wal();
        let logged = if committed {
            wal.flush(wal.insert_lsn())
        } else {
            self.core.log_end(tm, wal, false)
        };
        let committed = committed && logged.is_ok();
        // The rollback segment is released after its history was written
        // (trx_t::commit_in_memory → rseg->release()).
        self.inner.undo.release(&mut undo);
        for (t, (ins, upd, del)) in self.core.finish(tm, committed) {
            if let Ok(table) = self.inner.table(t) {
                table.counters.end_of_xact(committed, ins, upd, del);
            }
        }
        result.and(finished).and(logged)
    }
}

impl EngineTxn for InnoTxn {
    fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.stmt(Cause::PointSelect, t, false, |tb, ctx, _| tb.get(ctx, pk))
    }

    fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.stmt(Cause::PointSelect, t, false, |tb, ctx, _| {
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
        self.stmt(Cause::RangeScan, t, false, |tb, ctx, _| {
            tb.scan(ctx, lo, hi, dir, limit)
        })
    }

    fn insert(&mut self, t: TableId, row: Row) -> Result<()> {
        self.stmt(Cause::Insert, t, true, |tb, ctx, undo| {
            tb.insert(ctx, undo, row)
        })?;
        self.core.count(t, 1, 0, 0);
        Ok(())
    }

    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        let done = self.stmt(Cause::Update, t, true, |tb, ctx, undo| {
            tb.update(ctx, undo, pk, set)
        })?;
        if done {
            self.core.count(t, 0, 1, 0);
        }
        Ok(done)
    }

    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        let done = self.stmt(Cause::Delete, t, true, |tb, ctx, undo| {
            tb.delete(ctx, undo, pk)
        })?;
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

impl Drop for InnoTxn {
    fn drop(&mut self) {
        let _ = self.end(false);
    }
}
