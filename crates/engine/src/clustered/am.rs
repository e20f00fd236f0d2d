//! The clustered table access method (MariaDB's `ha_innobase` handler over InnoDB): clustered
//! tables ([`ClusteredTable`]), the transaction's undo logs in a rollback segment, InnoDB's
//! end of transaction (the undo log's commit is the commit; trx0trx.cc `trx_t::commit_low`,
//! rollback through the undo records, trx0roll.cc), the history list, purge threads and
//! history truncation after each purge batch (srv0srv.cc `purge_coordinator_state::do_purge`,
//! trx0purge.cc), and undo recovery at open. The `innodb` preset's engine is
//! [`crate::db::DesignEngine`] over it.
//!
//! # Locking
//! Purge threads hold a `Weak` reference and upgrade it per round. The truncation mutex
//! (one truncating thread at a time, MariaDB's `purge_truncation_task`) is outermost; see
//! the `clustered` module doc for the row stripe → rollback segment → page order.

use super::row_id::DICT_HDR_FIRST_ID;
use super::{
    purge_entry, ClusteredTable, History, HistoryEntry, PurgeConfig, RowIdSequence, TrxUndo,
    UndoSpace,
};
use crate::access::{
    AmOpen, AmShared, EngineCounters, GcReport, Recovering, TableAccessMethod, TableId, TxnCore,
    XactEnd,
};
use crate::btree::{BTree, BTreeConfig};
use crate::catalog::{Row, TableDef, Value};
use crate::design::{DesignConfig, GarbageCollection};
use crate::error::{Error, Result};
use crate::mvcc::{xid_of_trx_id, TransactionManager, TrxId, Xid};
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::{CheckpointHook, Storage};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The clustered access method of one database (see the module doc).
pub struct ClusteredAm {
    storage: Arc<Storage>,
    design: DesignConfig,
    shared: AmShared<ClusteredTable>,
    undo: Arc<UndoSpace>,
    /// The `DB_ROW_ID` counter of tables without a primary key (`dict_sys.row_id`).
    row_ids: Arc<RowIdSequence>,
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
    stop: Arc<StopSignal>,
    purge_threads: Mutex<Vec<JoinHandle<()>>>,
}

impl ClusteredAm {
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
            self.undo.truncate_history(self.shared.tm.oldest_xmin())?;
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
            let Some(e) = self.history.pop_purgeable(self.shared.tm.oldest_xmin()) else {
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
            purge_entry(e, &self.undo, &self.history, &|u, trx| match self
                .shared
                .tables
                .get(u.table)
            {
                Ok(t) => {
                    let r = t.purge_record(u, trx, &self.shared.tm)?;
                    // The old version this undo record kept is gone: one dead tuple
                    // fewer (n_dead_tup counted it at the update's or delete's commit).
                    t.counters.sub_dead(1);
                    Ok(r)
                }
                Err(_) => Ok(0),
            })?;
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

impl ClusteredAm {
    fn new_inner(
        storage: Arc<Storage>,
        design: DesignConfig,
        purge: PurgeConfig,
        tm: TransactionManager,
        undo: Arc<UndoSpace>,
        dict_hdr_row_id: u64,
    ) -> Arc<ClusteredAm> {
        let row_ids = Arc::new(RowIdSequence::recovered(
            storage.wal().clone(),
            dict_hdr_row_id,
        ));
        let am = Arc::new(ClusteredAm {
            storage,
            design,
            shared: AmShared::new(tm),
            undo,
            row_ids,
            history: History::default(),
            truncating: Mutex::new(()),
            truncate_again: AtomicBool::new(false),
            in_flight: AtomicU64::new(0),
            batch_pages: AtomicU64::new(0),
            purge_running: AtomicBool::new(false),
            next_wake: Mutex::new(Instant::now() + Duration::from_millis(purge.wake_interval_ms)),
            purge,
            stop: Arc::new(StopSignal::default()),
            purge_threads: Mutex::new(Vec::new()),
        });
        let hook: Weak<dyn CheckpointHook> = Arc::downgrade(&am) as Weak<dyn CheckpointHook>;
        am.storage.set_checkpoint_hook(hook);
        am
    }

    /// Undoes every change of transaction `trx_id`, newest first (trx0roll.cc
    /// `trx_rollback_to_savepoint_low` → row0undo.cc `row_undo` for each record
    /// `trx_roll_pop_top_rec_of_trx` hands out): the abort path, and recovery's rollback of
    /// the transactions a crash left active. Goes on past a failing record and returns the
    /// first error; returns the records applied (a record whose row no longer carries the
    /// transaction's id is skipped, see [`ClusteredTable::rollback_record`]).
    fn rollback(&self, trx_id: TrxId, undo: &TrxUndo) -> (Result<()>, u64) {
        let mut result = Ok(());
        let mut applied = 0;
        for rp in undo.all.iter().rev() {
            let r = self
                .undo
                .read(*rp)
                .and_then(|u| match self.shared.tables.get(u.table) {
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
    fn finish_undo(&self, trx_id: TrxId, undo: &mut TrxUndo) -> Result<()> {
        if let Some((log, records)) = self.undo.finish(undo)? {
            self.history.push(HistoryEntry {
                trx_id,
                records,
                log,
            });
        }
        Ok(())
    }

    /// Starts `inner`'s purge threads (none when garbage collection is off).
    fn start(inner: Arc<ClusteredAm>) -> Arc<ClusteredAm> {
        let stop = inner.stop.clone();
        let mut threads = Vec::new();
        if inner.design.garbage_collection != GarbageCollection::Off {
            for i in 0..inner.purge.threads {
                let weak: Weak<ClusteredAm> = Arc::downgrade(&inner);
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
        *inner.purge_threads.lock() = threads;
        inner
    }

    /// The access method on `open.storage`, with `purge.threads` purge threads unless
    /// garbage collection is off. A new database gets a new undo space (errors: storage
    /// errors creating it). A database that existed is opened as follows.
    ///
    /// On storage that [`crate::recovery::redo`] has replayed (every page as of
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
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a catalog without the undo relation, undo
    /// pages that do not hold what their headers say, or a B+tree whose meta page does not
    /// fit the design; [`crate::Error::InvalidConfig`] for a rollback segment count the
    /// database was not made with; storage errors.
    pub fn open(open: AmOpen<'_>, purge: PurgeConfig) -> Result<Arc<Self>> {
        let Some(Recovering { catalog, redone }) = open.recovering else {
            let (storage, design) = (open.storage, open.design);
            let undo = Arc::new(UndoSpace::create(
                storage.pool().clone(),
                storage.wal().clone(),
                design.rollback_segments,
            )?);
            let inner = Self::new_inner(
                storage,
                design,
                purge,
                TransactionManager::new(),
                undo,
                DICT_HDR_FIRST_ID,
            );
            return Ok(Self::start(inner));
        };
        let (storage, design) = (open.storage, open.design);
        let _c = enter(Cause::Recovery);
        let rel = catalog
            .undo_relation
            .ok_or_else(|| Error::corrupted("innodb catalog without the undo relation"))?;
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
        let max = found.max_trx_id.max(TrxId::from(redone.max_xid));
        let next = Xid::try_from(max + 1).map_err(|_| {
            Error::corrupted(format!(
                "undo log names transaction id {max}, past the xid space"
            ))
        })?;
        for (trx, _) in &found.active {
            aborted.push(xid_of_trx_id(*trx, "active undo log header")?);
        }
        let tm = TransactionManager::recovered_committed(next, &aborted);
        // dict0boot.cc `dict_boot`: the row id counter from the dictionary header, the last
        // value the checkpoint or a replayed write left there.
        let hdr = RowIdSequence::hdr_of_checkpoint_state(redone.checkpoint_engine_state.as_deref())
            .max(redone.dict_hdr_row_id);
        let inner = ClusteredAm::new_inner(storage, design, purge, tm, Arc::new(undo), hdr);
        for e in found.history {
            inner.history.push(e);
        }
        for t in &catalog.tables {
            inner.shared.tables.create(t.def.clone(), |id, def| {
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
                let mut table = ClusteredTable::new(
                    id,
                    def,
                    clustered,
                    indexes,
                    inner.undo.clone(),
                    inner.design.purge_resets_trx_id,
                    inner.row_ids.clone(),
                );
                table.innodb_fill_factor = inner.design.index_fill_pct();
                table
                    .secondary_deferred
                    .store(t.secondary_deferred, Ordering::Release);
                Ok(table)
            })?;
        }
        // Splits a crash interrupted are finished before rollback searches the trees
        // (mvcclab readers do not move right; MariaDB's B-tree changes are atomic
        // mini-transactions and need no such step).
        // Not after a clean shutdown, which leaves none (see `Database::open`).
        if !redone.clean_shutdown {
            redone.report.splits_finished += inner.shared.tables.finish_incomplete_splits()?;
        }
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
}

/// The `DB_ROW_ID` counter's dictionary header value rides on every checkpoint record
/// (MariaDB writes `DICT_HDR_ROW_ID` to a page of the system tablespace, which a checkpoint
/// makes durable); nothing else of the design lives outside the buffer pool.
impl CheckpointHook for ClusteredAm {
    fn checkpoint(&self) -> Result<Vec<u8>> {
        Ok(self.row_ids.checkpoint_state())
    }
}

/// Counts a taken history entry as done when dropped (also on an error).
struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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

impl TableAccessMethod for ClusteredAm {
    type Table = ClusteredTable;
    type TxnState = TrxUndo;

    fn shared(&self) -> &AmShared<ClusteredTable> {
        &self.shared
    }

    /// Errors: [`crate::Error::Catalog`] for a table without a primary key whose first
    /// unique index has only NOT NULL columns: MariaDB would make that index the clustered
    /// index (sql/table.cc `TABLE_SHARE::init_from_binary_frm_image` declares such a key
    /// the primary key; manual "Clustered and Secondary Indexes"), which is not modelled;
    /// storage errors creating the relations.
    fn create_table(&self, id: TableId, def: TableDef) -> Result<ClusteredTable> {
        if !def.has_primary_key() {
            if let Some(ix) = def
                .indexes
                .iter()
                .find(|ix| ix.unique && ix.columns.iter().all(|&c| !def.columns[c].nullable))
            {
                return Err(crate::Error::Catalog(format!(
                    "table \"{}\" has no primary key but a unique index \"{}\" over NOT NULL \
                     columns: InnoDB would cluster the table on that index, which the innodb \
                     design does not model; declare it the primary key",
                    def.name, ix.name
                )));
            }
        }
        let pool = self.storage.pool().clone();
        // The fillfactor switch is the fill ascending inserts leave in a leaf (InnoDB
        // 15/16).
        let sec = innodb_btree(&self.design);
        let cfg = BTreeConfig {
            rightmost_fill_pct: self.design.fillfactor,
            ..sec.clone()
        };
        let clustered = BTree::create(pool.clone(), cfg)?;
        let indexes = def
            .indexes
            .iter()
            .map(|_| BTree::create(pool.clone(), sec.clone()))
            .collect::<Result<Vec<_>>>()?;
        let mut table = ClusteredTable::new(
            id,
            def,
            clustered,
            indexes,
            self.undo.clone(),
            self.design.purge_resets_trx_id,
            self.row_ids.clone(),
        );
        table.innodb_fill_factor = self.design.index_fill_pct();
        Ok(table)
    }

    fn build_secondary_indexes(&self, table: &ClusteredTable) -> Result<u64> {
        table.build_secondary_indexes()
    }

    /// Rolls back through the undo records when not committing, then commits or finishes the
    /// undo logs, flushes the WAL at commit (or logs an abort record), releases the rollback
    /// segment, and leaves the proc array (`TxnCore::finish`).
    fn end_xact(&self, core: &mut TxnCore, state: &mut TrxUndo, commit: bool) -> XactEnd {
        let tm = &self.shared.tm;
        let xid = core.xid(tm);
        let mut undo = std::mem::take(state);
        let mut result = Ok(());
        if !commit {
            // trx_rollback: undo every change, newest first.
            result = self.rollback(TrxId::from(xid), &undo).0;
        }
        // The undo log's commit (one WAL record changing both segments' states, MariaDB's
        // commit mini-transaction, trx0trx.cc `trx_write_serialisation_history`) is the
        // commit: InnoDB writes no commit record. The commit flushes the WAL up to it
        // (`trx_t::commit_low` keeps the mini-transaction's end as `commit_lsn`,
        // `trx_commit_complete_for_mysql` → `trx_flush_log_if_needed`), and a log still
        // active at recovery belongs to a transaction that did not commit. An abort writes
        // mvcclab's XACT abort record, unflushed.
        let finished = self.finish_undo(TrxId::from(xid), &mut undo);
        let committed = commit && result.is_ok() && finished.is_ok();
        let wal = self.storage.wal();
        let logged = if committed {
            wal.flush(wal.insert_lsn()).map_err(Error::from)
        } else {
            core.log_end(tm, wal, false)
        };
        let committed = committed && logged.is_ok();
        // The rollback segment is released after its history was written
        // (trx_t::commit_in_memory → rseg->release()).
        self.undo.release(&mut undo);
        let changes = core.finish(tm, committed);
        XactEnd {
            result: result.and(finished).and(logged),
            committed,
            changes,
        }
    }

    /// Purges the whole history now (cause `purge`); the table is not looked at: purge is
    /// database-wide.
    fn gc(&self, _table: &ClusteredTable) -> Result<GcReport> {
        // Purge everything purgeable, waiting for entries other purge threads took, then
        // truncate once more under the truncation lock (waiting for a truncation in
        // progress), so that every purged log is off its history list on return.
        loop {
            while self.purge_round(usize::MAX)? > 0 {}
            if self.in_flight.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let _c = enter(Cause::Purge);
        let _g = self.truncating.lock();
        self.undo.truncate_history(self.shared.tm.oldest_xmin())?;
        Ok(GcReport { vacuum: None })
    }

    fn row_versions(&self, table: &ClusteredTable, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        table.versions(pk)
    }

    fn engine_counters(&self) -> EngineCounters {
        let u = &self.undo.counters;
        let pool = self.storage.pool();
        let h = &self.history;
        let ops = self.shared.tables.btree_ops();
        EngineCounters {
            undo_records_written: u.records_written.load(Ordering::Relaxed),
            undo_pages_allocated: u.pages_allocated.load(Ordering::Relaxed),
            undo_pages_written: pool
                .page_type_io(crate::clustered::PAGE_TYPE_UNDO)
                .pages_written,
            undo_pages_freed: u.pages_freed.load(Ordering::Relaxed),
            undo_pages_in_use: self.undo.pages_in_use(),
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

    fn check_indexes(&self, table: &ClusteredTable) -> Result<(u64, Vec<String>)> {
        table.check_indexes()
    }

    fn undo_relation(&self) -> Option<crate::device::FileId> {
        Some(self.undo.rel())
    }

    fn shutdown(&self) {
        self.stop.raise();
        for h in self.purge_threads.lock().drain(..) {
            let _ = h.join();
        }
    }
}
