//! The `innodb` design's table access method: rows in the leaves of the primary-key
//! B+tree, updated in place with the old values of the changed columns in an undo log,
//! newest-to-oldest version chains through roll pointers, secondary indexes keyed by the
//! primary key with delete marks, and purge.
//!
//! Follows MariaDB 10.11 storage/innobase (row0ins.cc, row0upd.cc, row0vers.cc, row0sel.cc,
//! row0undo.cc, row0purge.cc, trx0undo.cc, trx0rec.cc, trx0purge.cc) and the manual's
//! "InnoDB Multi-Versioning" and "Purge Configuration" pages.
//!
//! # Rules
//! 1. Every clustered record carries DB_TRX_ID and DB_ROLL_PTR. An update writes an undo
//!    record holding the old values of the changed columns (and the ordering fields of every
//!    index whose key changes) and changes the record in place; a delete sets the delete
//!    mark, with an undo record.
//! 2. A record whose DB_TRX_ID is a running transaction is locked by it (implicit lock);
//!    writers wait for that transaction, with deadlock detection. UPDATE and DELETE work on
//!    the newest version whatever the read view (a locking read), so at repeatable read the
//!    lost-update behaviour is InnoDB's: no serialization failure, the newest value is used.
//! 3. A consistent read starts at the clustered record and applies undo records newest to
//!    oldest until DB_TRX_ID is visible to the read view (row_vers_build_for_consistent_read);
//!    an insert undo record means the row did not exist for the view.
//! 4. Secondary index entries hold the primary key and are never updated in place: a key
//!    change delete-marks the old entry and inserts the new one. Reads through a secondary
//!    index check the clustered record's visible version still carries the key.
//! 5. Insert undo is dropped at commit; update undo joins the history list in commit order
//!    and is purged once the transaction is older than every read view (the oldest-xmin
//!    horizon): purge removes delete-marked records and stale delete-marked secondary
//!    entries; history truncation after each purge batch then frees the undo segments.
//! 6. Undo lives in N rollback segments (`rollback_segments`, 128 in the preset): a
//!    read-write transaction takes the next one in turn and keeps it until it ends; each
//!    has a header page (slots, history list), its own segment caches and its own history
//!    list (see `undo` and `rseg`; trx0trx.cc `trx_assign_rseg_low`, trx0rseg.cc).
//!
//! # Locking
//! A row's read-check-modify sequence runs under a per-primary-key stripe mutex (InnoDB holds
//! the leaf page latch for it); waits for a lock holder happen with the stripe released.
//! Purge and rollback take the same stripe. B+tree and undo page latches are taken inside,
//! one at a time, except under a rollback segment's mutex: lock order row stripe → rollback
//! segment mutex → its header page → undo pages (see `undo`). The history list's mutex and
//! the truncation mutex (one truncating thread at a time) are leaves or outermost: purge
//! takes a log from the history, releases it, then purges; truncation takes no row stripe.
//!
//! # Crash safety
//! Every clustered, secondary, undo and rollback segment header page change is WAL-logged
//! (B+tree and UNDO records). At recovery the rollback segments' slots, caches and history
//! lists are rebuilt from their pages (`UndoSpace::open`) and the transactions whose undo
//! segments are still active are rolled back through their undo records
//! (`ClusteredAm::recover`).
//!
//! # Documented differences from InnoDB
//! - Redo of an in-place update logs the changed bytes (PATCH_VALUE) under mvcclab's larger
//!   WAL record headers (InnoDB's mini-transaction records take a few bytes).
//! - The purge horizon is the oldest xmin of all snapshots (InnoDB uses the oldest view's
//!   transaction number), which can keep a log a little longer.
//! - Secondary entries carry their delete mark in a 1-byte value (InnoDB: a header bit).
//! - No gap or next-key locks (phantoms at repeatable read are not prevented for writes),
//!   no explicit record locks for locking reads, no change buffer, no adaptive hash index.
//! - Updating a primary-key column is refused (InnoDB does delete-mark + insert).
//! - The rollback segments live in one undo relation (the system tablespace with
//!   innodb_undo_tablespaces=0); no undo tablespace truncation; creating and freeing undo
//!   segments touches no file segment inode or extent descriptor pages.
//! - Insert and update undo are separate segments, insert undo freed or cached at commit
//!   (MariaDB before 10.3); MariaDB 10.3+ keeps one log per transaction, purges insert undo
//!   too and resets DB_TRX_ID (row0purge.cc `row_purge_reset_trx_id`).

mod am;
mod check;
pub mod rseg;
mod table;
mod undo;
pub mod undo_wal;

pub use am::ClusteredAm;
pub use rseg::PAGE_TYPE_RSEG;
pub use table::{ClusteredTable, RowCtx};
pub use undo::{
    info_name as undo_info_name, record_on_page, roll_ptr, split_roll_ptr, LogRef, RecoveredUndo,
    RsegInfo, TrxUndo, UndoCounters, UndoRecord, UndoSegment, UndoSpace, UndoType, PAGE_TYPE_UNDO,
};

use crate::error::Result;
use crate::mvcc::Xid;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

/// Purge settings (MariaDB system variables).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurgeConfig {
    /// innodb_purge_threads (MariaDB 10.11 default 4).
    pub threads: usize,
    /// Sleep of an idle purge thread in ms.
    pub interval_ms: u64,
    /// How often, in ms, purge is woken to run: MariaDB's master task wakes the purge
    /// coordinator once a second (srv0srv.cc `srv_master_callback` →
    /// `purge_sys_t::wake_if_not_active`), which then runs batches until one finds nothing
    /// left to purge (`purge_coordinator_state::do_purge`), so the history list grows
    /// for a second and is purged in a burst (measured on MariaDB 10.11.19 under
    /// oltp_update_non_index at 6,000 TPS: `trx_rseg_history_len` rises from about 100 to
    /// 5,900 and falls back within 40 ms, once a second; docs/fidelity.md). 0: the purge
    /// threads purge whenever something is purgeable.
    #[serde(default = "default_wake_interval_ms")]
    pub wake_interval_ms: u64,
    /// Undo pages a purge batch handles before the history is truncated
    /// (innodb_purge_batch_size, MariaDB 10.11 default 127: srv0srv.cc
    /// `purge_coordinator_state::do_purge` truncates after each `trx_purge` batch, which
    /// ends at this many pages or when nothing more is purgeable).
    #[serde(default = "default_batch_pages")]
    pub batch_pages: usize,
}

fn default_batch_pages() -> usize {
    127
}

fn default_wake_interval_ms() -> u64 {
    1000
}

impl Default for PurgeConfig {
    fn default() -> Self {
        PurgeConfig {
            threads: 4,
            interval_ms: 10,
            wake_interval_ms: default_wake_interval_ms(),
            batch_pages: default_batch_pages(),
        }
    }
}

/// A committed transaction's update undo log in the history list.
#[derive(Debug)]
pub struct HistoryEntry {
    /// The transaction's id (DB_TRX_ID it wrote).
    pub trx_id: u64,
    /// Its update undo records, in order.
    pub records: Vec<u64>,
    /// The log: its rollback segment and header.
    pub log: LogRef,
}

/// The committed update undo logs in commit order, as purge takes them, and the purge
/// counters. Each log is also in its rollback segment's history list (`UndoSpace`); this
/// list stands for MariaDB's purge queue, which picks the rollback segment whose oldest log
/// has the smallest commit number (trx0purge.cc `purge_sys_t::choose_next_log`), so purge
/// sees the logs of all rollback segments in commit order. `length` stands for MariaDB's
/// history length (`trx_sys.history_size()`, the rollback segments' history lengths): it
/// counts a log from its commit until purge has finished with it. MariaDB counts it until
/// history truncation removes it, which follows each purge batch; a log taken by a purge
/// thread but not yet purged still counts in both, so a length of 0 means every committed
/// log has been purged.
#[derive(Default)]
pub struct History {
    list: Mutex<VecDeque<HistoryEntry>>,
    /// Undo logs committed and not yet purged: in the list, or taken by a purge thread and
    /// still being purged.
    pub length: AtomicU64,
    /// Highest length seen.
    pub peak: AtomicU64,
    /// Undo records purge processed.
    pub purge_records: AtomicU64,
    /// Rows and secondary entries purge removed.
    pub purge_removed: AtomicU64,
    /// Undo logs purged.
    pub purged_logs: AtomicU64,
}

impl History {
    /// Adds a committed transaction's log (trx_purge_add_undo_to_history).
    pub fn push(&self, e: HistoryEntry) {
        let mut l = self.list.lock();
        l.push_back(e);
        let n = self.length.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }

    /// Takes the oldest log if its transaction is older than `horizon` (every read view sees
    /// it committed). It stays in `length` until [`purge_entry`] has purged it.
    pub fn pop_purgeable(&self, horizon: Xid) -> Option<HistoryEntry> {
        let mut l = self.list.lock();
        if l.front().is_some_and(|e| (e.trx_id as Xid) < horizon) {
            return l.pop_front();
        }
        None
    }
}

/// Purges one history entry: reads each undo record (counted to the caller's cause, purge)
/// and lets `apply` (record, the entry's transaction id) remove what it made obsolete, then
/// marks the log purged, for history truncation ([`UndoSpace::truncate_history`]) to free.
///
/// Errors: storage errors.
pub fn purge_entry(
    e: HistoryEntry,
    undo: &UndoSpace,
    history: &History,
    apply: &dyn Fn(&UndoRecord, u64) -> Result<u64>,
) -> Result<()> {
    for rp in &e.records {
        let u = undo.read_for_purge(*rp)?;
        history
            .purge_removed
            .fetch_add(apply(&u, e.trx_id)?, Ordering::Relaxed);
        history.purge_records.fetch_add(1, Ordering::Relaxed);
    }
    undo.purged(e.log);
    history.purged_logs.fetch_add(1, Ordering::Relaxed);
    history.length.fetch_sub(1, Ordering::Relaxed);
    Ok(())
}
