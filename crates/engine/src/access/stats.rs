//! A table's statistics counters: the live, atomic ones the heap updates as it works, and
//! a plain copy of them at one moment (PostgreSQL REL_15 pgstat_relation.c, the views
//! pg_stat_user_tables and pg_statio_user_tables).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Live counters of one table (pg_stat_user_tables, pg_statio_user_tables).
#[derive(Default)]
pub struct TableCounters {
    /// Rows inserted.
    pub n_tup_ins: AtomicU64,
    /// Rows updated (HOT included).
    pub n_tup_upd: AtomicU64,
    /// Rows updated by HOT.
    pub n_tup_hot_upd: AtomicU64,
    /// Rows deleted.
    pub n_tup_del: AtomicU64,
    /// Estimated live rows (changed at commit/abort, as pgstat does).
    pub n_live_tup: AtomicI64,
    /// Estimated dead rows (changed at commit/abort, by pruning and by vacuum).
    pub n_dead_tup: AtomicI64,
    /// Rows inserted since the last vacuum (n_ins_since_vacuum).
    pub n_ins_since_vacuum: AtomicI64,
    /// Rows inserted, updated or deleted by committed transactions since the last analyze
    /// (n_mod_since_analyze).
    pub n_mod_since_analyze: AtomicI64,
    /// Manual vacuums.
    pub vacuum_count: AtomicU64,
    /// Vacuums by autovacuum.
    pub autovacuum_count: AtomicU64,
    /// Manual analyzes.
    pub analyze_count: AtomicU64,
    /// Analyzes by autovacuum.
    pub autoanalyze_count: AtomicU64,
    /// Index entries inserted (all indexes).
    pub index_entries_inserted: AtomicU64,
    /// Tuple versions examined by reads (chain members checked for visibility).
    pub versions_traversed: AtomicU64,
    /// Pages pruned on access.
    pub pages_pruned: AtomicU64,
    /// Hint-bit settings that dirtied a page without WAL.
    pub hint_bit_writes: AtomicU64,
    /// Index entries marked dead by scans (nbtutils.c `_bt_killitems`).
    pub index_items_killed: AtomicU64,
    /// Index entries removed by simple deletion before a split (`_bt_simpledel_pass`).
    pub index_simple_deleted: AtomicU64,
    /// Index entries removed by bottom-up deletion (`_bt_bottomupdel_pass`).
    pub index_bottom_up_deleted: AtomicU64,
    /// Bottom-up deletion passes run.
    pub index_bottom_up_passes: AtomicU64,
    /// Deduplication passes run (nbtdedup.c `_bt_dedup_pass`).
    pub index_dedup_passes: AtomicU64,
}

impl TableCounters {
    pub(crate) fn sub_dead(&self, n: u64) {
        let _ = self
            .n_dead_tup
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| {
                Some((d - n as i64).max(0))
            });
    }

    /// pgstat's end-of-transaction accounting (pgstat_relation.c `AtEOXact_PgStat_Relations`).
    pub fn end_of_xact(&self, committed: bool, ins: u64, upd: u64, del: u64) {
        if committed {
            self.n_live_tup
                .fetch_add(ins as i64 - del as i64, Ordering::Relaxed);
            self.n_dead_tup
                .fetch_add((upd + del) as i64, Ordering::Relaxed);
            self.n_ins_since_vacuum
                .fetch_add(ins as i64, Ordering::Relaxed);
            // Insert, update and delete each count as one change; an abort counts none.
            self.n_mod_since_analyze
                .fetch_add((ins + upd + del) as i64, Ordering::Relaxed);
        } else {
            self.n_dead_tup
                .fetch_add((ins + upd) as i64, Ordering::Relaxed);
        }
    }

    /// A plain snapshot of the table's own counters (block figures are zero here;
    /// `Database::table_stats` adds them from the buffer pool).
    pub fn snapshot(&self) -> TableStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TableStats {
            n_tup_ins: l(&self.n_tup_ins),
            n_tup_upd: l(&self.n_tup_upd),
            n_tup_hot_upd: l(&self.n_tup_hot_upd),
            n_tup_del: l(&self.n_tup_del),
            n_live_tup: self.n_live_tup.load(Ordering::Relaxed).max(0) as u64,
            n_dead_tup: self.n_dead_tup.load(Ordering::Relaxed).max(0) as u64,
            vacuum_count: l(&self.vacuum_count),
            autovacuum_count: l(&self.autovacuum_count),
            n_mod_since_analyze: self.n_mod_since_analyze.load(Ordering::Relaxed).max(0) as u64,
            analyze_count: l(&self.analyze_count),
            autoanalyze_count: l(&self.autoanalyze_count),
            heap_blks_hit: 0,
            heap_blks_read: 0,
            idx_blks_hit: 0,
            idx_blks_read: 0,
            heap_blks_written: 0,
            idx_blks_written: 0,
            index_entries_inserted: l(&self.index_entries_inserted),
            versions_traversed: l(&self.versions_traversed),
            pages_pruned: l(&self.pages_pruned),
            hint_bit_writes: l(&self.hint_bit_writes),
            index_items_killed: l(&self.index_items_killed),
            index_simple_deleted: l(&self.index_simple_deleted),
            index_bottom_up_deleted: l(&self.index_bottom_up_deleted),
            index_bottom_up_passes: l(&self.index_bottom_up_passes),
            index_dedup_passes: l(&self.index_dedup_passes),
        }
    }
}

/// A table's counters at one moment (pg_stat_user_tables / pg_statio_user_tables names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    /// Rows inserted.
    pub n_tup_ins: u64,
    /// Rows updated (HOT included).
    pub n_tup_upd: u64,
    /// Rows updated by HOT.
    pub n_tup_hot_upd: u64,
    /// Rows deleted.
    pub n_tup_del: u64,
    /// Estimated live rows.
    pub n_live_tup: u64,
    /// Estimated dead rows.
    pub n_dead_tup: u64,
    /// Manual vacuums.
    pub vacuum_count: u64,
    /// Autovacuums.
    pub autovacuum_count: u64,
    /// Rows changed since the last analyze (a state value, not a count).
    #[serde(default)]
    pub n_mod_since_analyze: u64,
    /// Manual analyzes.
    #[serde(default)]
    pub analyze_count: u64,
    /// Analyzes by autovacuum.
    #[serde(default)]
    pub autoanalyze_count: u64,
    /// Heap page buffer hits.
    pub heap_blks_hit: u64,
    /// Heap pages read.
    pub heap_blks_read: u64,
    /// Index page buffer hits, all the table's indexes (pg_statio_user_tables.idx_blks_hit).
    pub idx_blks_hit: u64,
    /// Index pages read.
    pub idx_blks_read: u64,
    /// Heap (or clustered-index) pages written from the buffer pool to their home
    /// location, in pages of the design's page size (`RelIo::blks_written` of the table's
    /// relation; no counterpart in pg_statio_user_tables or InnoDB, so a real server's
    /// report lists it under `not_measured`).
    #[serde(default)]
    pub heap_blks_written: u64,
    /// Index pages written from the buffer pool, all the table's other indexes, as
    /// `heap_blks_written`.
    #[serde(default)]
    pub idx_blks_written: u64,
    /// Index entries inserted.
    pub index_entries_inserted: u64,
    /// Tuple versions examined by reads.
    pub versions_traversed: u64,
    /// Pages pruned on access.
    pub pages_pruned: u64,
    /// Hint-bit writes.
    pub hint_bit_writes: u64,
    /// Index entries marked dead by scans (LP_DEAD, `_bt_killitems`).
    #[serde(default)]
    pub index_items_killed: u64,
    /// Index entries removed by simple deletion before a split.
    #[serde(default)]
    pub index_simple_deleted: u64,
    /// Index entries removed by bottom-up deletion.
    #[serde(default)]
    pub index_bottom_up_deleted: u64,
    /// Bottom-up deletion passes.
    #[serde(default)]
    pub index_bottom_up_passes: u64,
    /// Deduplication passes (full leaves whose equal keys were merged into posting lists
    /// before a split).
    #[serde(default)]
    pub index_dedup_passes: u64,
}
