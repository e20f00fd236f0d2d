//! The history list and purge: the purge settings, the committed update undo logs in commit
//! order as purge takes them ([`History`]), purging one log ([`purge_entry`]) and history
//! truncation after a purge batch ([`UndoSpace::truncate_history`]), which frees the undo
//! segments of the purged logs (MariaDB 10.11 storage/innobase/trx/trx0purge.cc
//! `trx_purge_add_undo_to_history`, `purge_sys_t::choose_next_log`, `trx_purge`,
//! `trx_purge_truncate_history` → `purge_sys_t::iterator::free_history_rseg`; srv0srv.cc for
//! the settings). What purge does to the rows: `ClusteredTable::purge_record` (row0purge.cc).

use super::rseg::{self, FilAddr, FIL_NULL};
use super::undo_log::{LogRef, UndoSpace};
use super::undo_page::LOG_HIST_NEXT;
use super::undo_rec::{RollPtr, UndoRecord};
use super::undo_wal::{put, WriteLog};
use crate::error::Result;
use crate::mvcc::{TrxId, Xid};
use crate::page::PageId;
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
    pub trx_id: TrxId,
    /// Its update undo records, in order.
    pub records: Vec<RollPtr>,
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
        if l.front().is_some_and(|e| e.trx_id < TrxId::from(horizon)) {
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

impl UndoSpace {
    /// Purge has processed every record of `log`: history truncation may remove it.
    pub fn purged(&self, log: LogRef) {
        let at = FilAddr {
            page: log.page,
            offset: log.offset,
        };
        let mut st = self.rsegs[log.rseg as usize].state.lock();
        if let Some(l) = st.log_mut(log.seq).filter(|l| l.at == at) {
            l.purged = true;
        }
    }

    /// History truncation after a purge batch (trx0purge.cc `trx_purge_truncate_history` →
    /// `purge_sys_t::iterator::free_history` → `free_history_rseg` for every rollback
    /// segment): latches each rollback segment header, reads the oldest log's header page,
    /// and while that log is purged, the rollback segment is held by no transaction and its
    /// newest transaction is older than `horizon` (`purge_sys.sees(rseg.needs_purge)`),
    /// removes it from the list (flst_remove: the header and the newer neighbour's node) and,
    /// when it is the last log on its segment's first page, frees the segment (a cached one
    /// leaves the cache and frees its slot; a to-purge one leaves the history size). Returns
    /// the logs removed.
    ///
    /// Errors: storage errors.
    pub fn truncate_history(&self, horizon: Xid) -> Result<u64> {
        self.counters.truncations.fetch_add(1, Ordering::Relaxed);
        let mut removed = 0;
        for (r, rs) in self.rsegs.iter().enumerate() {
            let mut st = rs.state.lock();
            let mut h = self.pool.fetch_write(self.rseg_header(r as u8))?;
            while let Some(oldest) = st.history.back() {
                let at = oldest.at;
                let mut g = self
                    .pool
                    .fetch_write_fixed(PageId::new(self.rel, at.page))?;
                if !oldest.purged
                    || rs.refs.load(Ordering::Acquire) > 0
                    || st.max_trx_id >= TrxId::from(horizon)
                {
                    break;
                }
                let log = st.history.pop_back().expect("oldest exists");
                let newer = st.history.back().map(|l| l.at);
                let (mut wh, mut wg) = (WriteLog::default(), WriteLog::default());
                put(
                    &mut h,
                    &mut wh,
                    rseg::HISTORY_LEN,
                    &(st.history.len() as u32).to_le_bytes(),
                );
                put(
                    &mut h,
                    &mut wh,
                    rseg::HISTORY_LAST,
                    &newer.unwrap_or(FilAddr::NULL).encode(),
                );
                if newer.is_none() {
                    put(
                        &mut h,
                        &mut wh,
                        rseg::HISTORY_FIRST,
                        &FilAddr::NULL.encode(),
                    );
                }
                let mut to_free = Vec::new();
                if !log.has_next {
                    if log.cached {
                        st.update_cached.retain(|c| c.page != at.page);
                        put(
                            &mut h,
                            &mut wh,
                            rseg::slot_offset(log.slot),
                            &FIL_NULL.to_le_bytes(),
                        );
                        put(
                            &mut h,
                            &mut wh,
                            rseg::MAX_TRX_ID,
                            &st.max_trx_id.to_le_bytes(),
                        );
                        st.slots_used[log.slot as usize] = false;
                    } else {
                        st.history_size -= log.seg_pages.len() as u32;
                        put(
                            &mut h,
                            &mut wh,
                            rseg::HISTORY_SIZE,
                            &st.history_size.to_le_bytes(),
                        );
                    }
                    to_free = log.seg_pages;
                }
                match newer {
                    Some(nw) if nw.page == at.page => {
                        put(
                            &mut g,
                            &mut wg,
                            nw.offset as usize + LOG_HIST_NEXT,
                            &FilAddr::NULL.encode(),
                        );
                        self.log_writes(&mut [&mut h, &mut g], &[(false, wh), (false, wg)])?;
                    }
                    Some(nw) => {
                        let mut n = self
                            .pool
                            .fetch_write_fixed(PageId::new(self.rel, nw.page))?;
                        let mut wn = WriteLog::default();
                        put(
                            &mut n,
                            &mut wn,
                            nw.offset as usize + LOG_HIST_NEXT,
                            &FilAddr::NULL.encode(),
                        );
                        self.log_writes(&mut [&mut h, &mut n], &[(false, wh), (false, wn)])?;
                    }
                    None => self.log_writes(&mut [&mut h], &[(false, wh)])?,
                }
                drop(g);
                removed += 1;
                if !to_free.is_empty() {
                    self.free_segment_pages(&to_free)?;
                }
            }
        }
        self.counters
            .logs_truncated
            .fetch_add(removed, Ordering::Relaxed);
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::undo_log::tests::{commit, rec, space};
    use super::super::undo_log::TrxUndo;
    use super::*;

    #[test]
    fn truncation_frees_purged_logs_per_rollback_segment() {
        let (s, u) = space(256, 2);
        let (rp0, l0) = commit(&u, 10, 1, 0, 10);
        let (_, l1) = commit(&u, 11, 1, 0, 10);
        let (_, l2) = commit(&u, 12, 1, 0, 10);
        let (_, l3) = commit(&u, 13, 1, 0, 10);
        assert_eq!((l0.rseg, l1.rseg, l2.rseg, l3.rseg), (0, 1, 0, 1));
        assert_eq!(l2.page, l0.page, "the cached segment was reused");
        // Nothing purged: nothing truncated. Purged but not older than the horizon: neither.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 0);
        for l in [l0, l1] {
            u.purged(l);
        }
        assert_eq!(
            u.truncate_history(11).unwrap(),
            0,
            "rseg 0 and 1 hold newer trx"
        );
        // l0 and l1 go; their pages hold l2 and l3, so nothing is freed.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 2);
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 0);
        assert_eq!(u.rseg_info(0).history_len, 1);
        assert_eq!(u.rseg_info(1).history_len, 1);
        u.purged(l2);
        u.purged(l3);
        // A running transaction holds rseg 0 (the 5th in turn): only rseg 1 is truncated.
        let mut t = TrxUndo::default();
        u.append(&mut t, true, 14, &rec(10)).unwrap();
        assert_eq!(t.rseg, Some(0));
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        let r1 = u.rseg_info(1);
        assert_eq!(
            (r1.history_len, r1.update_cached.len(), r1.slots_used),
            (0, 0, 0),
            "rseg 1's cached segment was freed with its last log"
        );
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 1);
        assert_eq!(u.rseg_info(0).history_len, 1);
        u.finish_insert(&mut t).unwrap();
        assert!(u.finish_update(&mut t).unwrap().is_none());
        u.release(&mut t);
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        let r0 = u.rseg_info(0);
        assert_eq!((r0.history_len, r0.update_cached.len()), (0, 0));
        assert_eq!(
            r0.insert_cached.len(),
            1,
            "insert undo is not in the history"
        );
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 2);
        // The freed page stays in the pool until eviction reaches it (InnoDB's FREED
        // state), and its block is the relation's next allocation.
        let freed = PageId::new(u.rel(), rp0.page_no);
        assert!(s.pool().is_resident(freed));
        let blocks = [
            s.store().allocate_page(u.rel()).unwrap(),
            s.store().allocate_page(u.rel()).unwrap(),
        ];
        assert!(blocks.contains(&freed), "{blocks:?} {freed}");
        for r in 0..2 {
            let g = s.pool().fetch_read(u.rseg_header(r)).unwrap();
            assert_eq!(rseg::history_len(g.data()), 0);
            assert_eq!(FilAddr::read(g.data(), rseg::HISTORY_FIRST), FilAddr::NULL);
            assert_eq!(FilAddr::read(g.data(), rseg::HISTORY_LAST), FilAddr::NULL);
        }
    }

    #[test]
    fn a_segment_too_big_to_cache_waits_in_the_history_size_and_is_freed_whole() {
        let (s, u) = space(256, 1);
        let page_bytes = s.store().page_size().bytes();
        // Three records of 40 % of a page: the segment needs two pages.
        let (_, log) = commit(&u, 10, 3, 0, page_bytes * 2 / 5);
        let info = u.rseg_info(0);
        assert_eq!(info.history_size, 2);
        assert_eq!(
            info.slots_used, 0,
            "a to-purge segment gives its slot back at commit"
        );
        assert!(info.update_cached.is_empty());
        {
            let g = s.pool().fetch_read(u.rseg_header(0)).unwrap();
            assert_eq!(rseg::history_size(g.data()), 2);
            assert_eq!(rseg::slot(g.data(), 0), FIL_NULL);
        }
        u.purged(log);
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 2);
        assert_eq!(u.rseg_info(0).history_size, 0);
        assert_eq!(u.pages_in_use(), 0);
    }
}
