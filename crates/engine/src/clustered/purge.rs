//! The history list and purge: the purge settings, the committed update undo logs in commit
//! order as purge takes them ([`History`]), a purge batch's logs ([`History::take_batch`],
//! [`History::purged`]) and history truncation after each batch
//! ([`UndoSpace::truncate_history`]), which frees the undo segments of the purged logs
//! (MariaDB 10.11 storage/innobase/trx/trx0purge.cc `trx_purge_add_undo_to_history`,
//! `purge_sys_t::choose_next_log`, `trx_purge`, `trx_purge_attach_undo_recs`,
//! `trx_purge_truncate_history` → `purge_sys_t::iterator::free_history_rseg`; srv0srv.cc for
//! the settings and the coordinator). What purge does to the rows:
//! `ClusteredTable::purge_record` (row0purge.cc); who runs the batches: `ClusteredAm`'s purge
//! coordinator (am.rs).

use super::rseg::{self, FilAddr, FIL_NULL};
use super::undo_log::{LogRef, UndoSpace};
use super::undo_page::LOG_HIST_NEXT;
use super::undo_rec::RollPtr;
use super::undo_wal::{put, WriteLog};
use crate::error::Result;
use crate::mvcc::{TrxId, Xid};
use crate::page::PageId;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

/// Purge settings (MariaDB system variables).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurgeConfig {
    /// innodb_purge_threads (MariaDB 10.11 default 4): the purge tasks one batch may use.
    /// The coordinator hands each table of the batch to one task and runs the first itself,
    /// with `min(tables, threads) − 1` workers beside it (trx0purge.cc `trx_purge`), so a
    /// batch of one table's history is purged by the coordinator alone ([`purge_tasks`]).
    /// 0: no purge coordinator; only `gc` purges (MariaDB's minimum is 1).
    pub threads: usize,
    /// How often, in ms, the idle purge coordinator looks whether the master task's tick is
    /// due (a polling step of the model; MariaDB's timer wakes it).
    pub interval_ms: u64,
    /// How often, in ms, purge is woken to run: MariaDB's master task wakes the purge
    /// coordinator once a second (srv0srv.cc `srv_master_callback` →
    /// `purge_sys_t::wake_if_not_active`, its only caller besides start-up and the end of
    /// FLUSH TABLES FOR EXPORT), which then runs batches until one handles no undo page
    /// (`purge_coordinator_state::do_purge`), so the history list grows for a second and is
    /// purged in a burst (measured on MariaDB 10.11.19 under oltp_update_non_index at 6,000
    /// TPS: `trx_rseg_history_len` rises from about 100 to 5,900 and falls back within
    /// 40 ms, once a second; docs/fidelity.md). 0: the coordinator runs whenever the
    /// history is not empty.
    #[serde(default = "default_wake_interval_ms")]
    pub wake_interval_ms: u64,
    /// Distinct undo pages a purge batch takes before it is run and the history truncated
    /// (innodb_purge_batch_size, MariaDB 10.11 default 127: trx0purge.cc
    /// `trx_purge_attach_undo_recs` stops when `purge_sys.n_pages_handled()`, the undo pages
    /// the batch has fixed, reaches it). Logs that share a page (a cached undo segment
    /// reused by later transactions) count it once.
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

/// The purge tasks that run a batch touching `n_tables` tables with `threads` purge threads:
/// the coordinator and `min(n_tables, threads) − 1` workers (trx0purge.cc `trx_purge`: "we
/// only submit at most n_tasks-1 worker task"; `trx_purge_attach_undo_recs` gives each
/// table of the batch its own purge node). 0 for an empty batch.
pub fn purge_tasks(n_tables: usize, threads: usize) -> usize {
    n_tables.min(threads.max(1))
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
/// sees the logs of all rollback segments in commit order. `length` is MariaDB's history
/// length (`trx_sys.history_size()`, the sum of the rollback segments' `history_size`,
/// INNODB_METRICS `trx_rseg_history_len`): a log counts from its commit
/// (`trx_purge_add_undo_to_history`) until history truncation removes it from its
/// rollback segment's list (`free_history_rseg`), which follows each purge batch and
/// waits while the segment is in use or holds a transaction not yet purged.
#[derive(Default)]
pub struct History {
    list: Mutex<VecDeque<HistoryEntry>>,
    /// Undo logs on the rollback segments' history lists: committed and not yet removed
    /// by history truncation.
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
    /// it committed). It stays in `length` until history truncation removes it.
    pub fn pop_purgeable(&self, horizon: Xid) -> Option<HistoryEntry> {
        let mut l = self.list.lock();
        if l.front().is_some_and(|e| e.trx_id < TrxId::from(horizon)) {
            return l.pop_front();
        }
        None
    }

    /// The transaction of the oldest log not yet taken by purge (the purge head,
    /// `purge_sys.head`), if any.
    pub fn oldest_trx_id(&self) -> Option<TrxId> {
        self.list.lock().front().map(|e| e.trx_id)
    }

    /// The next purge batch (trx0purge.cc `trx_purge_attach_undo_recs`): the oldest logs
    /// older than `horizon`, in commit order, until their records and headers lie on
    /// `batch_pages` distinct undo pages (`purge_sys.n_pages_handled()`) or none is left.
    /// Returns the logs and the distinct undo pages they touch (0 when none was taken: the
    /// coordinator's run ends, `do_purge`).
    pub fn take_batch(&self, horizon: Xid, batch_pages: usize) -> (Vec<HistoryEntry>, u64) {
        let mut pages = HashSet::new();
        let mut batch = Vec::new();
        while pages.len() < batch_pages.max(1) {
            let Some(e) = self.pop_purgeable(horizon) else {
                break;
            };
            pages.insert(e.log.page);
            pages.extend(e.records.iter().map(|rp| rp.page_no));
            batch.push(e);
        }
        (batch, pages.len() as u64)
    }

    /// Purge has processed every record of `e`'s log: history truncation may remove it
    /// ([`UndoSpace::purged`]).
    pub fn purged(&self, e: &HistoryEntry, undo: &UndoSpace) {
        undo.purged(e.log);
        self.purged_logs.fetch_add(1, Ordering::Relaxed);
    }

    /// History truncation removed `logs` logs from the rollback segments' lists
    /// (`free_history_rseg`: `rseg.history_size--`).
    pub fn truncated(&self, logs: u64) {
        let _ = self
            .length
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(logs))
            });
    }
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
    /// newest transaction is older than `horizon`, purge's view (`purge_sys.sees(rseg.needs_purge)`),
    /// removes it from the list (flst_remove: the header and the newer neighbour's node) and,
    /// when it is the last log on its segment's first page, frees the segment (a cached one
    /// leaves the cache and frees its slot; a to-purge one leaves the history size).
    ///
    /// Starvation (MDEV-33213, MariaDB/server pull request #2994, in 10.11.19): a segment
    /// that some transaction always holds, or always has used since the view, would keep
    /// its history for as long as the load lasts. So when a purged log of the segment in
    /// turn (`purge_sys.skipped_rseg`) must wait and this truncation removed none of its
    /// logs, the segment is taken out of assignment (`rseg.set_skip_allocation()`; new
    /// transactions take the next one); once a later truncation removes some of its logs,
    /// it is given back and the next segment is in turn (`purge_sys_t::rseg_enable`). A
    /// design with one rollback segment never skips it. Returns the logs removed.
    ///
    /// Errors: storage errors.
    pub fn truncate_history(&self, horizon: Xid) -> Result<u64> {
        self.counters.truncations.fetch_add(1, Ordering::Relaxed);
        let mut removed = 0;
        for (r, rs) in self.rsegs.iter().enumerate() {
            let mut st = rs.state.lock();
            let mut h = self.pool.fetch_write(self.rseg_header(r as u8))?;
            // Whether this truncation removed a log here, and whether the segment was out
            // of assignment when it did (`freed`, `rseg_ref & SKIP` in free_history_rseg).
            let (mut freed, mut was_skipped) = (false, false);
            while let Some(oldest) = st.history.back() {
                let at = oldest.at;
                let mut g = self
                    .pool
                    .fetch_write_fixed(PageId::new(self.rel, at.page))?;
                if !oldest.purged {
                    break;
                }
                let skipped = rs.skip.load(Ordering::SeqCst);
                if rs.refs.load(Ordering::SeqCst) > 0 || st.max_trx_id >= TrxId::from(horizon) {
                    if !skipped
                        && !freed
                        && self.rsegs.len() > 1
                        && self.skipped_rseg.load(Ordering::Relaxed) as usize == r
                    {
                        rs.skip.store(true, Ordering::SeqCst);
                        self.counters.rseg_skips.fetch_add(1, Ordering::Relaxed);
                    }
                    break;
                }
                was_skipped = skipped;
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
                freed = true;
                if !to_free.is_empty() {
                    self.free_segment_pages(&to_free)?;
                }
            }
            if freed && was_skipped {
                self.rseg_enable(r);
            }
        }
        self.counters
            .logs_truncated
            .fetch_add(removed, Ordering::Relaxed);
        Ok(removed)
    }

    /// History truncation removed logs of rollback segment `r`, which it had taken out of
    /// assignment: when `r` is the segment in turn, it is given back to new transactions and
    /// the next segment is in turn (trx0purge.cc `purge_sys_t::rseg_enable`).
    fn rseg_enable(&self, r: usize) {
        if self.skipped_rseg.load(Ordering::Relaxed) as usize == r {
            self.rsegs[r].skip.store(false, Ordering::SeqCst);
            self.skipped_rseg
                .store(((r + 1) % self.rsegs.len()) as u32, Ordering::Relaxed);
        }
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

    /// A rollback segment whose purged logs truncation cannot remove (here a running
    /// transaction holds it) while it removes none of them is taken out of assignment when
    /// it is the segment in turn, so that no new transaction keeps it busy; once its holder
    /// has ended and a truncation removes its logs, it is given back and the next segment
    /// is in turn (trx0purge.cc `free_history_rseg` → `rseg.set_skip_allocation()`,
    /// `purge_sys_t::rseg_enable`; trx0trx.cc `trx_assign_rseg_low` skips it, MDEV-33213).
    #[test]
    fn a_segment_truncation_cannot_reach_is_skipped_by_new_transactions_until_it_can() {
        let (_s, u) = space(256, 4);
        let logs: Vec<LogRef> = (10..14).map(|trx| commit(&u, trx, 1, 0, 10).1).collect();
        for l in &logs {
            u.purged(*l);
        }
        // The 5th transaction takes rseg 0 and keeps running.
        let mut running = TrxUndo::default();
        u.append(&mut running, false, 14, &rec(10)).unwrap();
        assert_eq!(running.rseg, Some(0));
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 3, "rsegs 1..3");
        assert_eq!(u.counters.rseg_skips.load(Ordering::Relaxed), 1);
        // New transactions go round the other three segments.
        let taken: Vec<u8> = (0..6)
            .map(|i| {
                let mut t = TrxUndo::default();
                u.append(&mut t, false, 15 + i, &rec(10)).unwrap();
                let r = t.rseg.unwrap();
                u.finish_insert(&mut t).unwrap();
                let (log, _) = u.finish_update(&mut t).unwrap().unwrap();
                u.release(&mut t);
                u.purged(log);
                r
            })
            .collect();
        assert_eq!(taken, [1, 2, 3, 1, 2, 3]);
        // Truncation waits for the holder, and does not skip rseg 0 a second time.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 6);
        assert_eq!(u.rseg_info(0).history_len, 1);
        u.finish_insert(&mut running).unwrap();
        assert!(u.finish_update(&mut running).unwrap().is_some());
        u.release(&mut running);
        // Its first log goes (the running one's is not purged yet): rseg 0 is back.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        assert_eq!(u.skipped_rseg.load(Ordering::Relaxed), 1);
        let mut t = TrxUndo::default();
        u.append(&mut t, false, 30, &rec(10)).unwrap();
        assert_eq!(t.rseg, Some(0), "rseg 0 is assigned again in its turn");
        assert_eq!(u.counters.rseg_skips.load(Ordering::Relaxed), 1);
    }

    /// With one rollback segment, truncation never takes it out of assignment.
    #[test]
    fn the_only_rollback_segment_is_never_skipped() {
        let (_s, u) = space(256, 1);
        let (_, l) = commit(&u, 10, 1, 0, 10);
        u.purged(l);
        let mut running = TrxUndo::default();
        u.append(&mut running, false, 11, &rec(10)).unwrap();
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 0);
        assert_eq!(u.counters.rseg_skips.load(Ordering::Relaxed), 0);
        let mut t = TrxUndo::default();
        u.append(&mut t, false, 12, &rec(10)).unwrap();
        assert_eq!(t.rseg, Some(0));
    }

    #[test]
    fn a_batch_counts_distinct_undo_pages_and_tasks_follow_its_tables() {
        let h = History::default();
        let entry = |trx_id: u64, page: u32| HistoryEntry {
            trx_id,
            records: vec![RollPtr::new(false, 0, page, 100)],
            log: LogRef {
                rseg: 0,
                page,
                offset: 60,
                seq: trx_id,
            },
        };
        // Ten logs on page 7, then logs on pages 8, 9, 10, 11.
        for i in 0..10 {
            h.push(entry(10 + i, 7));
        }
        for (i, page) in (8..12).enumerate() {
            h.push(entry(20 + i as u64, page));
        }
        // Not past the purge view: nothing.
        assert_eq!(h.take_batch(10, 3).1, 0);
        let (batch, pages) = h.take_batch(Xid::MAX, 3);
        assert_eq!(
            (batch.len(), pages),
            (12, 3),
            "page 7's ten logs, then 8 and 9"
        );
        let (batch, pages) = h.take_batch(Xid::MAX, 3);
        assert_eq!((batch.len(), pages), (2, 2));
        assert_eq!(h.take_batch(Xid::MAX, 3).1, 0);
        assert_eq!(h.length.load(Ordering::Relaxed), 14, "until truncation");
        h.truncated(14);
        assert_eq!(h.length.load(Ordering::Relaxed), 0);
        // One table: the coordinator alone; more tables: up to innodb_purge_threads tasks.
        assert_eq!([0, 1, 3, 10].map(|n| purge_tasks(n, 4)), [0, 1, 3, 4]);
        assert_eq!(purge_tasks(5, 1), 1);
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

    /// Small transactions whose history is purged and truncated between rounds: each
    /// round's truncation frees every rollback segment's cached undo segment (its newest
    /// log is purged, trx0purge.cc `free_history_rseg`, `TRX_UNDO_CACHED`), and the next
    /// round creates a new one on the block just freed. The undo space allocates a page
    /// per segment each round, but the pool finds the freed page still resident and
    /// reuses its frame, so it creates (`buffer_pages_created`, MariaDB
    /// `Innodb_pages_created`: buf0buf.cc `buf_page_create_low` counts only a page not
    /// in the pool) only the first round's pages: O(rollback segments), not O(rounds).
    #[test]
    fn freed_undo_pages_allocated_again_are_not_created_again_in_the_pool() {
        let (s, u) = space(256, 4);
        let before = s.snapshot();
        let mut trx = 100;
        for _ in 0..50 {
            let mut logs = Vec::new();
            for _ in 0..8 {
                logs.push(commit(&u, trx, 1, 0, 10).1);
                trx += 1;
            }
            for l in logs {
                u.purged(l);
            }
            assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 8);
        }
        let allocated = u.counters.pages_allocated.load(Ordering::Relaxed);
        assert!(allocated >= 50 * 4, "{allocated} undo pages allocated");
        let d = s.snapshot().delta(&before).counters.total();
        assert!(
            d.buffer_pages_created <= 2 * 4,
            "{} pages created for {allocated} allocated",
            d.buffer_pages_created
        );
        assert_eq!(d.buffer_misses, 0);
    }
}
