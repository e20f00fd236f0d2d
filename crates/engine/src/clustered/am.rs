//! The clustered table access method (MariaDB's `ha_innobase` handler over InnoDB): clustered
//! tables ([`ClusteredTable`]), the transaction's undo logs in a rollback segment, InnoDB's
//! end of transaction (the undo log's commit is the commit; trx0trx.cc `trx_t::commit_low`,
//! rollback through the undo records, trx0roll.cc), the history list, the purge coordinator
//! and its batches with history truncation after each, in a task of its own (srv0srv.cc
//! `srv_master_callback`, `purge_truncation_task`,
//! `purge_coordinator_state::do_purge`; trx0purge.cc `trx_purge`), and undo recovery at
//! open. The `innodb` preset's engine is
//! [`crate::db::DesignEngine`] over it.
//!
//! # Purge scheduling (MariaDB 10.11 srv0srv.cc, trx0purge.cc)
//! 1. The master task's tick (`srv_master_callback`, once a second) wakes the purge
//!    coordinator when it is not running and the history is not empty
//!    (`purge_sys_t::wake_if_not_active`); nothing else wakes it while the server runs (a
//!    commit does not). Here the coordinator thread looks every `interval_ms` whether the
//!    tick is due ([`ClusteredAm::purge_due`]).
//! 2. A run (`purge_coordinator_state::do_purge`) runs batches until one handles no undo
//!    page. After every batch, an empty one included, the history is truncated by a task of
//!    its own (`purge_truncation_task`, a task group of one), which the coordinator submits
//!    and does not wait for: the next batch starts at once. Only when the history is empty
//!    does the coordinator wait for that task and truncate in its own thread. So a batch
//!    that finds the history caught up follows the previous one by the batch's own cost,
//!    few commits arrive in between, and the run ends soon after it catches up (measured
//!    on MariaDB 10.11: `purge_invoked` stops within 0.1 s of the backlog's end; issue 26).
//! 3. A batch (`trx_purge`) takes the logs every read view has passed, in commit order,
//!    until they span `batch_pages` distinct undo pages (innodb_purge_batch_size, at most
//!    three quarters of the pool's frames), reads their records in the coordinator
//!    (`trx_purge_attach_undo_recs`), keeping each undo page it reads fixed (pinned, not
//!    latched) until the batch's records are purged (`purge_sys_t::get_page`, released by
//!    `purge_sys_t::batch_cleanup`), so in a small pool up to 127 frames at the LRU
//!    list's old end cannot be evicted meanwhile, gives each table's
//!    records to one task, and runs the tasks on the coordinator and up to
//!    `threads − 1` workers (innodb_purge_threads): one table, one thread.
//! 4. A log leaves the history length when truncation removes it from its rollback
//!    segment's list, not when it is purged (`trx_sys.history_size()`).
//! 5. Truncation removes a rollback segment's purged logs when no transaction holds the
//!    segment and purge's view, cloned as the next batch clones it, sees its newest
//!    transaction (`free_history_rseg`). When it can remove none of the purged logs of the one segment
//!    in turn (`purge_sys.skipped_rseg`), that segment is given to no new transaction until
//!    a later truncation has removed some, then the next segment is in turn (MDEV-33213,
//!    `rseg.set_skip_allocation()`, `purge_sys_t::rseg_enable`), so the history shrinks
//!    under a write load that never pauses ([`UndoSpace::truncate_history`]).
//!
//! # Locking
//! The purge coordinator and truncation threads hold a `Weak` reference and upgrade it per
//! look. The coordinator mutex (MariaDB's `purge_coordinator_task_group(1)`: one run at a
//! time, and `gc` waits for a run in progress) is outermost, then the truncation mutex
//! (`purge_truncation_task_group(1)`: one truncation at a time, whichever thread runs it),
//! then the `clustered` module doc's row stripe → rollback segment → page order. The
//! truncation task's state mutex is taken last: only the stop signal's mutex is taken while
//! it is held.
//!
//! # Crash safety
//! Truncation writes its rollback segment header and log header changes to the WAL like
//! any page change; whichever thread runs it, undo recovery rebuilds the history lists
//! from the rollback segment headers at open.

use super::row_id::DICT_HDR_FIRST_ID;
use super::{
    purge_tasks, ClusteredTable, History, HistoryEntry, PurgeConfig, RowIdSequence, TrxUndo,
    UndoRecord, UndoSpace,
};
use crate::access::{
    AmOpen, AmShared, EngineCounters, GcReport, Recovering, TableAccessMethod, TableId, TxnCore,
    XactEnd,
};
use crate::btree::{BTree, BTreeConfig, FileSpace};
use crate::catalog::{Row, TableDef, Value};
use crate::design::{DesignConfig, GarbageCollection};
use crate::error::{Error, Result};
use crate::mvcc::{xid_of_trx_id, TransactionManager, TrxId, Xid};
use crate::stats::{enter, Cause};
use crate::stop::StopSignal;
use crate::storage::{CheckpointHook, Storage};
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Held by a purge run or [`TableAccessMethod::gc`] while they run batches and truncate
    /// (MariaDB's purge coordinator task, a task group of one).
    coordinator: Mutex<()>,
    /// A purge run is under way: woken by the master tick, it lasts until a batch handles
    /// no undo page (MariaDB's `purge_state.m_running`).
    purge_running: AtomicBool,
    /// When the master task next wakes purge (`srv_master_callback`, every
    /// `wake_interval_ms`).
    next_wake: Mutex<Instant>,
    purge: PurgeConfig,
    stop: Arc<StopSignal>,
    /// The purge coordinator and truncation threads (joined at shutdown).
    purge_threads: Mutex<Vec<JoinHandle<()>>>,
    /// One history truncation at a time (MariaDB's `purge_truncation_task_group(1)`).
    truncation: Mutex<()>,
    /// The truncation task the coordinator submits after each batch (shared with the
    /// truncation thread).
    truncation_task: Arc<TruncationTask>,
}

/// MariaDB's `purge_truncation_task` (srv0srv.cc: a waitable task in a task group of one,
/// whose callback `purge_truncation_callback` frees the history up to `purge_sys.head`):
/// submitted after each purge batch, run by the truncation thread, waited for before the
/// coordinator truncates in its own thread. A submission while it runs runs it once more.
#[derive(Default)]
struct TruncationTask {
    state: Mutex<TruncationState>,
    /// Signalled on a submission and at the end of a run.
    changed: Condvar,
}

/// See [`TruncationTask`].
#[derive(Default)]
struct TruncationState {
    /// Submitted and not yet started.
    pending: bool,
    /// A run is under way.
    running: bool,
    /// Whether a truncation thread runs submissions (else [`ClusteredAm::submit_truncation`]
    /// truncates in the caller's thread).
    has_thread: bool,
    /// The first error of a run, handed to the coordinator's next look.
    error: Option<Error>,
}

impl ClusteredAm {
    /// Truncates the rollback segments' history lists after a purge batch (srv0srv.cc
    /// `purge_coordinator_state::do_purge` → `trx_purge_truncate_history`) and takes the
    /// logs it removed off the history length. A log goes when purge has processed it
    /// (below `purge_sys.head`); its rollback segment's whole history waits while a
    /// transaction holds the segment or purge's view does not see the segment's newest
    /// transaction (trx0purge.cc `free_history_rseg`: `purge_sys.sees(rseg.needs_purge)`,
    /// which reads `purge_sys.view`).
    ///
    /// Which view: MariaDB submits the truncation as `purge_truncation_task` and starts the
    /// next batch at once, and that batch begins by cloning the oldest read view into
    /// `purge_sys.view` (`trx_purge` → `clone_oldest_view`), which the truncation then
    /// reads. So the view here is the oldest read view cloned now, as the next batch
    /// clones it. It is never lowered to
    /// the purge head: MariaDB clamps only `end_view`, the view MVCC readers check undo
    /// pages against (`purge_sys_t::batch_cleanup`, `view_guard`).
    ///
    /// Until 2026-11-27 the preset compared with the last batch's view lowered to the
    /// oldest log not yet purged, so while purge ran full batches back to back (its head
    /// behind the view) every rollback segment had taken a newer transaction than the head
    /// and nothing was truncated: the history list grew by the commit rate (issue 26,
    /// oltp_update_index at `1m` and `4m`). Runs under the truncation mutex, from the
    /// truncation thread or from the coordinator.
    ///
    /// Errors: storage errors.
    fn truncate_history(&self) -> Result<()> {
        let _t = self.truncation.lock();
        let view = self.shared.tm.oldest_xmin();
        let removed = self.undo.truncate_history(view)?;
        self.history.truncated(removed);
        Ok(())
    }

    /// Submits the truncation task after a purge batch (srv0srv.cc `do_purge`:
    /// `srv_thread_pool->submit_task(&purge_truncation_task)`) and returns without waiting;
    /// with no truncation thread (purge threads 0) it truncates here.
    ///
    /// Errors: storage errors of this truncation when it ran here, or of an earlier one
    /// the truncation thread ran.
    fn submit_truncation(&self) -> Result<()> {
        let mut st = self.truncation_task.state.lock();
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        if !st.has_thread {
            drop(st);
            return self.truncate_history();
        }
        st.pending = true;
        self.truncation_task.changed.notify_all();
        Ok(())
    }

    /// Waits until no truncation is submitted or running (srv0srv.cc
    /// `purge_truncation_task.wait()`, before the coordinator truncates in its own thread).
    ///
    /// Errors: a storage error of a truncation the truncation thread ran.
    fn wait_truncation(&self) -> Result<()> {
        let mut st = self.truncation_task.state.lock();
        while st.has_thread && (st.pending || st.running) && !self.stop.is_raised() {
            self.truncation_task.changed.wait_for(
                &mut st,
                Duration::from_millis(self.purge.interval_ms.max(1)),
            );
        }
        st.error.take().map_or(Ok(()), Err)
    }

    /// The truncation thread's loop: waits for a submission ([`Self::submit_truncation`]),
    /// runs it ([`Self::truncate_history`], cause `purge`), and keeps the first error for the
    /// coordinator; ends when the access method is dropped or stopped. It holds the access
    /// method only while a truncation runs.
    fn truncation_thread(
        weak: Weak<ClusteredAm>,
        task: Arc<TruncationTask>,
        stop: Arc<StopSignal>,
        nap: Duration,
    ) {
        let _c = enter(Cause::Purge);
        let mut st = task.state.lock();
        loop {
            if !st.pending && !stop.is_raised() {
                task.changed.wait_for(&mut st, nap);
            }
            if stop.is_raised() {
                st.pending = false;
                task.changed.notify_all();
                return;
            }
            if !st.pending {
                continue;
            }
            let Some(am) = weak.upgrade() else {
                return;
            };
            st.pending = false;
            st.running = true;
            drop(st);
            let r = am.truncate_history();
            drop(am);
            st = task.state.lock();
            st.running = false;
            if let Err(e) = r {
                st.error.get_or_insert(e);
            }
            task.changed.notify_all();
        }
    }

    /// Whether the purge coordinator should run now: always with `wake_interval_ms` 0 when
    /// there is history; otherwise while a run is under way, and a run starts at the master
    /// task's tick when there is history (srv0srv.cc `srv_master_callback` →
    /// `purge_sys_t::wake_if_not_active`: `!purge_state.m_running &&
    /// trx_sys.history_exists()`).
    fn purge_due(&self) -> bool {
        let has_history = || self.history.length.load(Ordering::Relaxed) > 0;
        let every_ms = self.purge.wake_interval_ms;
        if self.purge_running.load(Ordering::Acquire) {
            return true;
        }
        if every_ms == 0 {
            return has_history();
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
        if !has_history() {
            return false;
        }
        self.purge_running.store(true, Ordering::Release);
        true
    }

    /// A purge run (srv0srv.cc `purge_coordinator_state::do_purge`): with no history, wait
    /// for the truncation task, truncate here and done; otherwise batches
    /// ([`Self::trx_purge`]), each followed by a submission of the truncation task
    /// ([`Self::submit_truncation`], not waited for; when the batch left no history, the
    /// wait and a truncation here instead), until a batch handles no undo page or the access
    /// method stops.
    ///
    /// Errors: storage errors, of the batches or of a truncation.
    fn do_purge(&self) -> Result<()> {
        let _c = enter(Cause::Purge);
        let _g = self.coordinator.lock();
        let no_history = || self.history.length.load(Ordering::Relaxed) == 0;
        // srv0srv.cc's `no_history:` label: wait for the task, truncate here, end the run.
        let truncate_last = || {
            self.wait_truncation()?;
            self.truncate_history()
        };
        let r = (|| loop {
            if no_history() {
                return truncate_last();
            }
            let pages = self.trx_purge()?;
            if no_history() {
                return truncate_last();
            }
            self.submit_truncation()?;
            if pages == 0 || self.stop.is_raised() {
                return Ok(());
            }
        })();
        self.purge_running.store(false, Ordering::Release);
        r
    }

    /// One purge batch (trx0purge.cc `trx_purge`): the purge view is the oldest read view
    /// (`clone_oldest_view`); the batch's logs ([`History::take_batch`], up to `batch_pages`
    /// undo pages) have their records read here, in commit order, as the coordinator does
    /// (`trx_purge_attach_undo_recs`), and grouped by table; the coordinator purges the
    /// first table and up to `threads − 1` workers the others ([`purge_tasks`]), each
    /// table's records in order. Then the logs are marked purged for truncation. Returns the
    /// undo pages the batch handled (`MONITOR_PURGE_N_PAGE_HANDLED`); counts the batch
    /// (`MONITOR_PURGE_INVOKED`), an empty one too.
    ///
    /// Errors: storage errors (the first one of any task).
    fn trx_purge(&self) -> Result<u64> {
        let horizon = self.shared.tm.oldest_xmin();
        // trx0purge.cc `trx_purge_attach_undo_recs` also ends a batch when its fixed undo
        // pages reach three quarters of the pool (`buf_pool.usable_size() * 3 / 4`).
        let limit = self
            .purge
            .batch_pages
            .min(self.undo.pool.n_frames() * 3 / 4);
        let (batch, pages) = self.history.take_batch(horizon, limit);
        self.undo
            .counters
            .purge_batches
            .fetch_add(1, Ordering::Relaxed);
        let mut by_table: BTreeMap<u32, Vec<(UndoRecord, TrxId)>> = BTreeMap::new();
        let mut first_err = None;
        // Every undo page the batch reads stays fixed until its records are purged
        // (`purge_sys_t::get_page`, released by `purge_sys_t::batch_cleanup`).
        let mut fixed = HashMap::new();
        'read: for e in &batch {
            for rp in &e.records {
                match self.undo.read_for_purge_fixing(*rp, &mut fixed) {
                    Ok(u) => by_table.entry(u.table).or_default().push((u, e.trx_id)),
                    Err(err) => {
                        first_err = Some(err);
                        break 'read;
                    }
                }
            }
        }
        if let Some(err) = first_err {
            return Err(err);
        }
        let work: Vec<Vec<(UndoRecord, TrxId)>> = by_table.into_values().collect();
        let tasks = purge_tasks(work.len(), self.purge.threads);
        let queue = Mutex::new(work.into_iter());
        let run_tasks = || -> Result<()> {
            while let Some(records) = { queue.lock().next() } {
                for (u, trx_id) in &records {
                    self.purge_undo_record(u, *trx_id)?;
                }
            }
            Ok(())
        };
        let result = std::thread::scope(|s| {
            let workers: Vec<_> = (1..tasks)
                .map(|_| {
                    s.spawn(|| {
                        let _c = enter(Cause::Purge);
                        run_tasks()
                    })
                })
                .collect();
            let mine = run_tasks();
            workers
                .into_iter()
                .map(|w| w.join().expect("purge worker panicked"))
                .fold(mine, |acc, r| acc.and(r))
        });
        // `batch_cleanup`: "Release the undo pages."
        drop(fixed);
        result?;
        for e in &batch {
            self.history.purged(e, &self.undo);
        }
        Ok(pages)
    }

    /// Purges one undo record of transaction `trx_id` in its table (row0purge.cc
    /// `row_purge`); a record of a dropped table is skipped. Errors: storage errors.
    fn purge_undo_record(&self, u: &UndoRecord, trx_id: TrxId) -> Result<()> {
        let Ok(t) = self.shared.tables.get(u.table) else {
            return Ok(());
        };
        let removed = t.purge_record(u, trx_id, &self.shared.tm)?;
        // The old version this undo record kept is gone: one dead tuple fewer
        // (n_dead_tup counted it at the update's or delete's commit).
        t.counters.sub_dead(1);
        self.history
            .purge_removed
            .fetch_add(removed, Ordering::Relaxed);
        self.history.purge_records.fetch_add(1, Ordering::Relaxed);
        Ok(())
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
            coordinator: Mutex::new(()),
            truncation: Mutex::new(()),
            truncation_task: Arc::default(),
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

    /// Starts `inner`'s purge coordinator (none when garbage collection is off or
    /// `purge.threads` is 0, where only [`TableAccessMethod::gc`] purges): a thread
    /// that looks every `interval_ms` whether the master task's tick wakes purge and then
    /// runs it ([`Self::do_purge`]), and the truncation thread that runs the truncations
    /// it submits ([`Self::truncation_thread`]); the batches' workers are started per batch.
    fn start(inner: Arc<ClusteredAm>) -> Arc<ClusteredAm> {
        let stop = inner.stop.clone();
        let mut threads = Vec::new();
        if inner.design.garbage_collection != GarbageCollection::Off && inner.purge.threads > 0 {
            let weak: Weak<ClusteredAm> = Arc::downgrade(&inner);
            let nap = Duration::from_millis(inner.purge.interval_ms.max(1));
            inner.truncation_task.state.lock().has_thread = true;
            let (w, t, s) = (weak.clone(), inner.truncation_task.clone(), stop.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("purge_truncation".into())
                    .spawn(move || Self::truncation_thread(w, t, s, nap))
                    .expect("spawn purge truncation"),
            );
            threads.push(
                std::thread::Builder::new()
                    .name("purge_coordinator".into())
                    .spawn(move || loop {
                        match weak.upgrade() {
                            Some(inner) if inner.purge_due() => {
                                if let Err(e) = inner.do_purge() {
                                    eprintln!("purge coordinator stopped: {e}");
                                    return;
                                }
                            }
                            Some(_) => {}
                            None => return,
                        }
                        if stop.sleep(nap) {
                            return;
                        }
                    })
                    .expect("spawn purge coordinator"),
            );
        }
        *inner.purge_threads.lock() = threads;
        inner
    }

    /// The access method on `open.storage`, with its purge coordinator (`purge.threads` > 0) unless
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
            let mut undo = UndoSpace::create(
                storage.pool().clone(),
                storage.wal().clone(),
                design.rollback_segments,
            )?;
            // The system tablespace's header and inode pages, which undo segments'
            // page allocations change (fsp0fsp.cc `fseg_create`, `fseg_alloc_free_page`,
            // `fseg_free_page`).
            undo.file_space = Some(Arc::new(FileSpace::create(storage.pool().clone())?));
            let undo = Arc::new(undo);
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
        let (mut undo, found) = UndoSpace::open(
            storage.pool().clone(),
            storage.wal().clone(),
            rel,
            design.rollback_segments,
        )?;
        if let Some(fs) = catalog.undo_file_space {
            undo.file_space = Some(Arc::new(FileSpace::open(storage.pool().clone(), fs)?));
        }
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
                let (cfg, sec) = innodb_btrees(&inner.design);
                let clustered = BTree::open(pool.clone(), t.relations.table, cfg)?;
                let indexes = t
                    .relations
                    .indexes
                    .iter()
                    .map(|&rel| BTree::open(pool.clone(), rel, sec.clone()))
                    .collect::<Result<Vec<_>>>()?;
                let file_space = match t.relations.file_space {
                    Some(rel) => Some(Arc::new(FileSpace::open(pool.clone(), rel)?)),
                    None => None,
                };
                let table = inner.table_over(id, def, clustered, indexes, file_space);
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

/// The B-tree configurations of a clustered table, for creating its trees and for opening
/// them at recovery: (clustered index, secondary indexes). Both have InnoDB's accounting
/// with the design's merge threshold; the clustered index also takes the fillfactor
/// switch as the fill ascending inserts leave in a leaf (InnoDB 15/16).
fn innodb_btrees(design: &DesignConfig) -> (BTreeConfig, BTreeConfig) {
    let sec = BTreeConfig {
        merge_threshold_pct: design.merge_threshold_pct(),
        ..BTreeConfig::innodb()
    };
    let clustered = BTreeConfig {
        rightmost_fill_pct: design.fillfactor,
        ..sec.clone()
    };
    (clustered, sec)
}

impl ClusteredAm {
    /// Table `id` over its clustered and secondary trees, created or opened, with the
    /// design's switches (`purge_resets_trx_id`, the index fill factor); the trees touch
    /// `file_space`, the pages of the table's tablespace header, when it has them.
    fn table_over(
        &self,
        id: TableId,
        def: TableDef,
        mut clustered: BTree,
        mut indexes: Vec<BTree>,
        file_space: Option<Arc<FileSpace>>,
    ) -> ClusteredTable {
        if let Some(fs) = file_space {
            clustered.set_file_space(fs.clone(), false);
            for ix in &mut indexes {
                ix.set_file_space(fs.clone(), true);
            }
        }
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
        table
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
        let (cfg, sec) = innodb_btrees(&self.design);
        let clustered = BTree::create(pool.clone(), cfg)?;
        let indexes = def
            .indexes
            .iter()
            .map(|_| BTree::create(pool.clone(), sec.clone()))
            .collect::<Result<Vec<_>>>()?;
        // MariaDB's file-per-table tablespace's header, bitmap and inode pages
        // (fsp0fsp.cc `fsp_header_init`), a relation of their own here.
        let file_space = Arc::new(FileSpace::create(pool.clone())?);
        Ok(self.table_over(id, def, clustered, indexes, Some(file_space)))
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
    /// database-wide. Waits for a background run in progress, then runs batches until one
    /// handles no undo page, truncating after each, so that every purged log is off its
    /// history list on return unless its rollback segment is in use.
    fn gc(&self, _table: &ClusteredTable) -> Result<GcReport> {
        let _c = enter(Cause::Purge);
        let _g = self.coordinator.lock();
        self.wait_truncation()?;
        while self.trx_purge()? > 0 {
            self.truncate_history()?;
        }
        self.truncate_history()?;
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
        // The tablespaces' file-space pages, by their page types (`btree::file_space`).
        let (fsp_read, fsp_written) = crate::btree::file_space::PAGE_TYPES
            .iter()
            .map(|&t| pool.page_type_io(t))
            .fold((0, 0), |(r, w), io| {
                (r + io.pages_read, w + io.pages_written)
            });
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
            file_space_pages_read: fsp_read,
            file_space_pages_written: fsp_written,
            index_page_splits: ops.index_page_splits,
            index_page_splits_at_insert_point: ops.index_page_splits_at_insert_point,
            index_page_merge_attempts: ops.index_page_merge_attempts,
            index_page_merge_successful: ops.index_page_merge_successful,
            index_page_reorg_attempts: ops.index_page_reorg_attempts,
            buffer_pool_pages_free: pool.free_frames() as u64,
        }
    }

    fn check_indexes(&self, table: &ClusteredTable) -> Result<(u64, Vec<String>)> {
        table.check_indexes()
    }

    fn undo_relation(&self) -> Option<crate::device::FileId> {
        Some(self.undo.rel())
    }

    fn undo_file_space(&self) -> Option<crate::device::FileId> {
        self.undo.file_space.as_ref().map(|f| f.rel())
    }

    fn shutdown(&self) {
        self.stop.raise();
        self.truncation_task.changed.notify_all();
        for h in self.purge_threads.lock().drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::undo_log::tests::rec;
    use super::*;
    use crate::storage::StorageConfig;

    /// An access method with four rollback segments and purge batches of one undo page,
    /// after `n` committed transactions ([`commit_one`]).
    fn am_with_four_rsegs(n: usize) -> Arc<ClusteredAm> {
        am_with_four_rsegs_and(n, 0)
    }

    /// [`am_with_four_rsegs`] with `threads` purge threads: with one or more, the
    /// coordinator and truncation threads run, but the master tick is an hour away, so the
    /// coordinator runs only when a test calls [`ClusteredAm::do_purge`].
    fn am_with_four_rsegs_and(n: usize, threads: usize) -> Arc<ClusteredAm> {
        let storage = Arc::new(Storage::open(StorageConfig::without_background(256)).unwrap());
        let design = DesignConfig {
            rollback_segments: 4,
            ..DesignConfig::innodb()
        };
        let purge = PurgeConfig {
            threads,
            batch_pages: 1,
            wake_interval_ms: 3_600_000,
            ..PurgeConfig::default()
        };
        let open = AmOpen {
            storage,
            design,
            recovering: None,
        };
        let am = ClusteredAm::open(open, purge).unwrap();
        for _ in 0..n {
            commit_one(&am);
        }
        am
    }

    /// One committed transaction writing one update undo record.
    fn commit_one(am: &ClusteredAm) {
        let tm = &am.shared.tm;
        let p = tm.begin();
        let trx_id = TrxId::from(tm.assign_xid(p));
        let mut t = TrxUndo::default();
        am.undo.append(&mut t, false, trx_id, &rec(10)).unwrap();
        am.finish_undo(trx_id, &mut t).unwrap();
        am.undo.release(&mut t);
        tm.end(p, true);
    }

    /// The coordinator submits the truncation after a batch and goes on without waiting for
    /// it (srv0srv.cc `do_purge`: `submit_task(&purge_truncation_task)`): with the
    /// truncation held up (its mutex held here), a batch and its submission still return,
    /// the purged log stays in the history length, and once the truncation thread gets the
    /// mutex it removes the log. With no purge threads the submission truncates at once.
    #[test]
    fn the_coordinator_submits_truncation_and_does_not_wait_for_it() {
        let am = am_with_four_rsegs_and(8, 1);
        let length = || am.history.length.load(Ordering::Relaxed);
        let held = am.truncation.lock();
        assert_eq!(am.trx_purge().unwrap(), 1);
        am.submit_truncation().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(length(), 8, "the truncation waits for its mutex");
        assert!(
            am.truncation_task.state.lock().running,
            "the truncation thread took the submission"
        );
        drop(held);
        am.wait_truncation().unwrap();
        assert_eq!(
            length(),
            7,
            "the purged log truncated by the truncation thread"
        );
        am.shutdown();

        let inline = am_with_four_rsegs(8);
        assert_eq!(inline.trx_purge().unwrap(), 1);
        inline.submit_truncation().unwrap();
        assert_eq!(inline.history.length.load(Ordering::Relaxed), 7);
        inline.shutdown();
    }

    /// A purge run purges every log, batch after batch, and ends at the first batch that
    /// finds none (srv0srv.cc `do_purge`); the truncations it submitted, the last one
    /// after that empty batch, then leave no log in the history length.
    #[test]
    fn a_purge_run_purges_every_log_and_its_truncations_remove_them() {
        let am = am_with_four_rsegs_and(8, 1);
        am.do_purge().unwrap();
        assert_eq!(am.history.purged_logs.load(Ordering::Relaxed), 8);
        assert!(!am.purge_running.load(Ordering::Relaxed));
        am.wait_truncation().unwrap();
        assert_eq!(am.history.length.load(Ordering::Relaxed), 0);
        let st = am.truncation_task.state.lock();
        assert!(!st.pending && !st.running && st.error.is_none());
        drop(st);
        am.shutdown();
    }

    /// Eight committed single-update transactions over four rollback segments, two logs on
    /// each segment's cached undo page, and purge in batches of one undo page, so a batch
    /// leaves purgeable logs behind it (as MariaDB's back-to-back batches under
    /// oltp_update_index do). Truncation after each batch removes the purged log, because
    /// the batch's view sees its segment's newest transaction (trx0purge.cc
    /// `free_history_rseg`: `purge_sys.sees(rseg.needs_purge)`). Comparing with the view
    /// lowered to the oldest log not yet purged instead removed nothing until a batch found
    /// nothing to purge: every segment had taken a transaction after that log (issue 26).
    #[test]
    fn truncation_between_full_batches_removes_purged_logs_the_view_has_passed() {
        let am = am_with_four_rsegs(8);
        let length = || am.history.length.load(Ordering::Relaxed);
        assert_eq!(length(), 8);
        for batch in 1..=4u64 {
            assert_eq!(am.trx_purge().unwrap(), 1, "batch {batch}: one undo page");
            am.truncate_history().unwrap();
            assert_eq!(
                (am.history.purged_logs.load(Ordering::Relaxed), length()),
                (batch, 8 - batch),
                "batch {batch}: its log purged and truncated"
            );
        }
        // The first log of each segment is gone; the second keeps the cached page.
        assert_eq!(am.undo.counters.pages_freed.load(Ordering::Relaxed), 0);
        while am.trx_purge().unwrap() > 0 {
            am.truncate_history().unwrap();
        }
        am.truncate_history().unwrap();
        assert_eq!(length(), 0);
        am.shutdown();
    }

    /// The truncation after a batch reads the view the next batch clones at its start
    /// (srv0srv.cc `do_purge` submits `purge_truncation_task` and runs the next
    /// `trx_purge`, whose `clone_oldest_view` refreshes `purge_sys.view`): a transaction
    /// that committed on a rollback segment after the batch began does not keep that
    /// segment's purged logs in the history.
    #[test]
    fn truncation_reads_a_view_cloned_after_the_batch() {
        let am = am_with_four_rsegs(4);
        assert_eq!(am.trx_purge().unwrap(), 1);
        // The 5th transaction takes rollback segment 0, whose first log was just purged,
        // and commits before the truncation.
        commit_one(&am);
        am.truncate_history().unwrap();
        assert_eq!(
            am.history.length.load(Ordering::Relaxed),
            4,
            "rseg 0's purged log removed"
        );
        am.shutdown();
    }
}
