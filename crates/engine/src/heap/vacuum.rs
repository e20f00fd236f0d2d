//! Lazy vacuum (PostgreSQL src/backend/access/heap/vacuumlazy.c, REL_15
//! `lazy_scan_heap`, `lazy_vacuum_all_indexes`, `lazy_vacuum_heap_rel`).
//!
//! 1. Scan: every heap page not skippable by the visibility map (runs of at least
//!    `SKIP_PAGES_THRESHOLD` = 32 all-visible pages are skipped) is pruned under a cleanup
//!    lock and its LP_DEAD line pointers collected; pages whose tuples are all visible to
//!    everyone get their all-visible bit (XLOG_HEAP2_VISIBLE).
//! 2. Index pass: each index deletes the entries whose TID was collected (`btbulkdelete`).
//! 3. Heap pass: the collected line pointers become LP_UNUSED (XLOG_HEAP2_VACUUM), the line
//!    pointer array is truncated, and the free space map is updated.
//!
//! When the collected TIDs exceed `max_dead_tids` (maintenance_work_mem / 6 bytes), passes
//! 2 and 3 run before the scan continues.

use super::page::{self as hp, LpState};
use super::table::HeapTable;
use super::tuple::{HeaderRead, Tid};
use super::visibility::{satisfies_vacuum, VacuumStatus};
use super::wal::info;
use crate::access::VacuumReport;
use crate::buffer::log_change;
use crate::buffer::strategy::{with_ring, RingKind};
use crate::buffer::vacuum_cost;
use crate::error::Result;
use crate::mvcc::TransactionManager;
use crate::page::{flags, set_flags, PageId};
use crate::wal::{rmgr, RecordBuilder};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;

/// Runs of all-visible pages at least this long are skipped (vacuumlazy.c).
pub const SKIP_PAGES_THRESHOLD: u32 = 32;

/// Vacuum and autovacuum settings (postgresql.conf names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VacuumConfig {
    /// Run the autovacuum worker.
    pub autovacuum: bool,
    /// autovacuum_naptime in ms (PostgreSQL: 60 s).
    pub naptime_ms: u64,
    /// autovacuum_vacuum_threshold (50).
    pub threshold: u64,
    /// autovacuum_vacuum_scale_factor (0.2).
    pub scale_factor: f64,
    /// autovacuum_vacuum_insert_threshold (1000; PostgreSQL 13+).
    pub insert_threshold: u64,
    /// autovacuum_vacuum_insert_scale_factor (0.2).
    pub insert_scale_factor: f64,
    /// autovacuum_analyze_threshold (50).
    #[serde(default = "default_analyze_threshold")]
    pub analyze_threshold: u64,
    /// autovacuum_analyze_scale_factor (0.1).
    #[serde(default = "default_analyze_scale_factor")]
    pub analyze_scale_factor: f64,
    /// Dead TIDs held before an index pass (maintenance_work_mem 64 MiB / 6 bytes).
    pub max_dead_tids: usize,
    /// Cost-based delay of the autovacuum worker's VACUUM and ANALYZE
    /// ([`crate::buffer::vacuum_cost`]; manual ones run without it, as with
    /// `vacuum_cost_delay` 0).
    #[serde(default)]
    pub cost: crate::buffer::vacuum_cost::VacuumCost,
}

impl Default for VacuumConfig {
    fn default() -> Self {
        VacuumConfig {
            autovacuum: true,
            naptime_ms: 60_000,
            threshold: 50,
            scale_factor: 0.2,
            insert_threshold: 1000,
            insert_scale_factor: 0.2,
            analyze_threshold: default_analyze_threshold(),
            analyze_scale_factor: default_analyze_scale_factor(),
            max_dead_tids: (64 << 20) / 6,
            cost: Default::default(),
        }
    }
}

fn default_analyze_threshold() -> u64 {
    50
}

fn default_analyze_scale_factor() -> f64 {
    0.1
}

impl VacuumConfig {
    /// autovacuum.c `relation_needs_vacanalyze`: dead tuples above threshold + scale factor ×
    /// live tuples, or inserts since the last vacuum above the insert threshold. PostgreSQL
    /// multiplies by pg_class.reltuples (as of the last vacuum or analyze); mvcclab by the
    /// current n_live_tup estimate (documented difference).
    pub fn needs_vacuum(&self, live: u64, dead: u64, ins_since: u64) -> bool {
        let vac = self.threshold as f64 + self.scale_factor * live as f64;
        let ins = self.insert_threshold as f64 + self.insert_scale_factor * live as f64;
        dead as f64 > vac || ins_since as f64 > ins
    }

    /// autovacuum.c `relation_needs_vacanalyze`'s analyze rule: rows changed since the last
    /// analyze above threshold + scale factor × live tuples (PostgreSQL: × reltuples).
    pub fn needs_analyze(&self, live: u64, mod_since: u64) -> bool {
        mod_since as f64 > self.analyze_threshold as f64 + self.analyze_scale_factor * live as f64
    }
}

impl HeapTable {
    /// VACUUM of this table. Counted to the caller's cause (enter `vacuum` first). Its page
    /// reads, heap and indexes, go through a VACUUM ring (vacuum.c `vacuum` gets
    /// `GetAccessStrategy(BAS_VACUUM)`; [`crate::buffer::strategy`]), so a vacuum does not
    /// evict the working set, and writes the dirty pages it cycles through itself.
    ///
    /// Errors: storage errors.
    pub fn vacuum(&self, tm: &TransactionManager, cfg: &VacuumConfig) -> Result<VacuumReport> {
        let page_bytes = self.pool().store().page_size().bytes();
        with_ring(RingKind::Vacuum, page_bytes, || {
            self.vacuum_in_ring(tm, cfg)
        })
    }

    fn vacuum_in_ring(&self, tm: &TransactionManager, cfg: &VacuumConfig) -> Result<VacuumReport> {
        let mut rep = VacuumReport::default();
        let n_blocks = self.pool().store().n_blocks(self.heap_rel)?;
        let mut dead: Vec<Tid> = Vec::new();
        let mut block = 0;
        while block < n_blocks {
            // Skip long runs of all-visible pages.
            let mut run = 0;
            while block + run < n_blocks && self.vm.is_all_visible(block + run) {
                run += 1;
            }
            if run >= SKIP_PAGES_THRESHOLD {
                rep.pages_skipped += run as u64;
                block += run;
                continue;
            }
            // vacuumlazy.c `lazy_scan_heap`: a delay point per block, before its read.
            vacuum_cost::delay_point();
            self.vacuum_scan_page(tm, block, &mut dead, &mut rep)?;
            block += 1;
            if dead.len() >= cfg.max_dead_tids {
                self.vacuum_dead_items(&mut dead, &mut rep)?;
            }
        }
        if !dead.is_empty() {
            self.vacuum_dead_items(&mut dead, &mut rep)?;
        }
        self.counters
            .n_live_tup
            .store(rep.live_tuples as i64, Ordering::Relaxed);
        self.counters.n_dead_tup.store(0, Ordering::Relaxed);
        self.counters.n_ins_since_vacuum.store(0, Ordering::Relaxed);
        Ok(rep)
    }

    fn vacuum_scan_page(
        &self,
        tm: &TransactionManager,
        block: u32,
        dead: &mut Vec<Tid>,
        rep: &mut VacuumReport,
    ) -> Result<()> {
        let id = PageId::new(self.heap_rel, block);
        // LockBufferForCleanup: wait until ours is the only pin.
        let mut g = loop {
            let g = self.pool().fetch_write(id)?;
            if g.pin_count() == 1 {
                break g;
            }
            drop(g);
            std::thread::yield_now();
        };
        rep.pages_scanned += 1;
        if hp::max_offset(g.data()) == 0 {
            self.fsm.record(block, hp::heap_free_space(g.data()));
            return Ok(());
        }
        let oldest = tm.oldest_xmin();
        rep.tuples_pruned += self.prune_locked(&mut g, tm, oldest)?;
        let mut all_visible = true;
        let mut page_dead = 0;
        for off in 1..=hp::max_offset(g.data()) {
            let lp = hp::item_id(g.data(), off, id)?;
            match lp.state {
                LpState::Dead => {
                    dead.push(Tid { block, offset: off });
                    page_dead += 1;
                }
                LpState::Normal => {
                    let t = hp::tuple(g.data(), lp);
                    let (st, _) = satisfies_vacuum(t, oldest, tm);
                    match st {
                        VacuumStatus::Live => {
                            rep.live_tuples += 1;
                            // All-visible needs the inserter older than every snapshot.
                            if t.xmin() >= oldest {
                                all_visible = false;
                            }
                        }
                        VacuumStatus::DeleteInProgress | VacuumStatus::InsertInProgress => {
                            all_visible = false;
                            if st == VacuumStatus::DeleteInProgress {
                                rep.live_tuples += 1;
                            }
                        }
                        _ => all_visible = false,
                    }
                }
                _ => {}
            }
        }
        if all_visible && page_dead == 0 && flags(g.data()) & hp::PD_ALL_VISIBLE == 0 {
            let f = flags(g.data()) | hp::PD_ALL_VISIBLE;
            set_flags(g.data_mut(), f);
            let rec = RecordBuilder::new(rmgr::HEAP, info::VISIBLE)
                .block(id, false, &[])
                .main_data(&oldest.to_le_bytes());
            log_change(self.wal(), &rec, &mut [&mut g])?;
            self.vm.set(block);
            rep.pages_set_all_visible += 1;
        }
        if page_dead == 0 {
            self.fsm.record(block, hp::heap_free_space(g.data()));
        }
        Ok(())
    }

    /// Passes 2 and 3 over the collected dead TIDs (sorted by construction).
    fn vacuum_dead_items(&self, dead: &mut Vec<Tid>, rep: &mut VacuumReport) -> Result<()> {
        dead.sort_unstable();
        dead.dedup();
        rep.index_passes += 1;
        let is_dead = |key: &[u8]| -> bool {
            key.len() >= 6
                && Tid::from_bytes(&key[key.len() - 6..])
                    .is_some_and(|t| dead.binary_search(&t).is_ok())
        };
        for idx in self.pk.iter().chain(&self.indexes) {
            rep.index_entries_removed += idx.bulk_delete(&mut |k, _| is_dead(k))?;
        }
        let mut i = 0;
        while i < dead.len() {
            let block = dead[i].block;
            let mut offs = Vec::new();
            while i < dead.len() && dead[i].block == block {
                offs.push(dead[i].offset);
                i += 1;
            }
            let id = PageId::new(self.heap_rel, block);
            // vacuumlazy.c `lazy_vacuum_heap_rel`: a delay point per block.
            vacuum_cost::delay_point();
            let mut g = self.pool().fetch_write(id)?;
            let mut freed = Vec::new();
            for &off in &offs {
                if hp::item_id(g.data(), off, id)?.state == LpState::Dead {
                    hp::set_item_id(g.data_mut(), off, hp::ItemId::UNUSED);
                    freed.push(off);
                }
            }
            if freed.is_empty() {
                continue;
            }
            hp::truncate_line_pointers(g.data_mut());
            hp::repair_fragmentation(g.data_mut());
            let data: Vec<u8> = freed.iter().flat_map(|o| o.to_le_bytes()).collect();
            let rec = RecordBuilder::new(rmgr::HEAP, info::VACUUM).block(id, false, &data);
            log_change(self.wal(), &rec, &mut [&mut g])?;
            rep.dead_items_removed += freed.len() as u64;
            self.fsm.record(block, hp::heap_free_space(g.data()));
        }
        dead.clear();
        Ok(())
    }
}
