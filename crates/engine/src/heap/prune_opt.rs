//! Pruning one page of a heap table and WAL-logging it: the on-access trigger with its
//! cleanup lock (PostgreSQL REL_15 pruneheap.c `heap_page_prune_opt`) and the prune of a
//! page held with a cleanup lock, which vacuum calls too (`heap_page_prune` with
//! `log_heap_prune`). Deciding and applying the prune on the page's bytes is `prune.rs`.

use super::prune::{apply_prune, plan_prune, should_prune};
use super::table::HeapTable;
use super::wal::info;
use crate::buffer::{log_change, mark_dirty_hint, WritePageGuard};
use crate::error::Result;
use crate::mvcc::{TransactionManager, Xid, INVALID_XID};
use crate::wal::{rmgr, RecordBuilder};
use std::sync::atomic::Ordering;

impl HeapTable {
    /// Conditions 1 and 2 of `heap_page_prune_opt` on a page the caller holds (cheap when
    /// the page has no prune hint: the oldest xmin is only computed otherwise).
    pub(super) fn wants_pruning(&self, tm: &TransactionManager, page: &[u8]) -> bool {
        self.prune_on_access
            && crate::page::aux(page) != INVALID_XID
            && should_prune(page, tm.oldest_xmin(), self.fillfactor)
    }

    /// The rest of `heap_page_prune_opt`: takes the cleanup lock on `block` if it can be had
    /// without waiting (exclusive lock, no other pin), checks the trigger again, and prunes.
    pub(super) fn prune_if_cleanup_lock(&self, tm: &TransactionManager, block: u32) -> Result<()> {
        // On the buffer the scan holds: no second read (`try_fetch_write_held`).
        let Some(mut g) = self.pool.try_fetch_write_held(self.page_id(block))? else {
            return Ok(());
        };
        if g.pin_count() != 1 {
            return Ok(()); // no cleanup lock: someone else holds a pin
        }
        let oldest = tm.oldest_xmin();
        if !should_prune(g.data(), oldest, self.fillfactor) {
            return Ok(());
        }
        self.prune_locked(&mut g, tm, oldest)?;
        Ok(())
    }

    /// Prunes a page held with a cleanup lock and WAL-logs it (XLOG_HEAP2_PRUNE).
    pub(crate) fn prune_locked(
        &self,
        g: &mut WritePageGuard<'_>,
        tm: &TransactionManager,
        oldest: Xid,
    ) -> Result<u64> {
        let id = g.page_id();
        let plan = plan_prune(g.data(), id, oldest, tm);
        if !plan.changes(g.data()) {
            // Nothing to change: the buffer is not dirtied (heap_page_prune).
            return Ok(0);
        }
        apply_prune(g.data_mut(), id, &plan);
        let res = plan.result;
        if !res.changed() {
            // Only hints changed (hint bits, pd_prune_xid, PD_PAGE_FULL): heap_page_prune
            // then calls MarkBufferDirtyHint, which logs a full-page image at the page's
            // first change since the checkpoint, so that a torn write of it is repairable.
            mark_dirty_hint(&self.wal, g)?;
        }
        if res.changed() {
            let rec = RecordBuilder::new(rmgr::HEAP, info::PRUNE)
                .block(id, false, &res.encode())
                .main_data(&oldest.to_le_bytes());
            log_change(&self.wal, &rec, &mut [g])?;
            // Tuples whose line pointer is now LP_DEAD still count as dead until vacuum
            // reclaims the pointer: only the rest is reported reclaimed (pruneheap.c
            // `heap_page_prune_opt`: `pgstat_update_heap_dead_tuples(ndeleted -
            // nnewlpdead)` when positive).
            self.counters
                .sub_dead(res.tuples_removed.saturating_sub(res.now_dead.len() as u64));
            self.counters.pages_pruned.fetch_add(1, Ordering::Relaxed);
        }
        Ok(res.tuples_removed)
    }
}
