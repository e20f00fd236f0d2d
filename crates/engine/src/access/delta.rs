//! The counters of a phase: [`EngineCounters::delta`] and [`TableStats::delta`], beside
//! `StorageSnapshot::delta` (storage/), so that a caller measuring a phase (the CLI's run
//! layer, the named experiments) subtracts no counter field by field itself.
//!
//! Counts are `after − before`; state values (gauges) are taken from `after`, as
//! PostgreSQL's `pg_stat_user_tables` reports `n_live_tup` / `n_dead_tup` /
//! `n_mod_since_analyze` as current estimates (pgstat_relation.c) and InnoDB's
//! `trx_sys.rseg_history_len` is a length, not a count (trx0purge.cc).

use super::counters::EngineCounters;
use super::stats::TableStats;

impl EngineCounters {
    /// The counters of a phase from its start `before` to `self`: counts as
    /// `self − before`; the state values `undo_pages_in_use`, `history_list_length`,
    /// `history_list_length_peak` and `buffer_pool_pages_free` from `self`.
    pub fn delta(&self, before: &EngineCounters) -> EngineCounters {
        let (after, before) = (self, before);
        EngineCounters {
            undo_records_written: after.undo_records_written - before.undo_records_written,
            undo_pages_allocated: after.undo_pages_allocated - before.undo_pages_allocated,
            undo_pages_written: after.undo_pages_written - before.undo_pages_written,
            undo_pages_freed: after.undo_pages_freed - before.undo_pages_freed,
            undo_pages_in_use: after.undo_pages_in_use,
            undo_segments_reused: after.undo_segments_reused - before.undo_segments_reused,
            purge_records: after.purge_records - before.purge_records,
            purge_removed: after.purge_removed - before.purge_removed,
            purged_logs: after.purged_logs - before.purged_logs,
            purge_batches: after.purge_batches - before.purge_batches,
            history_list_length: after.history_list_length,
            history_list_length_peak: after.history_list_length_peak,
            buffer_pool_pages_free: after.buffer_pool_pages_free,
            undo_pages_read: after.undo_pages_read - before.undo_pages_read,
            rseg_pages_read: after.rseg_pages_read - before.rseg_pages_read,
            rseg_pages_written: after.rseg_pages_written - before.rseg_pages_written,
            file_space_pages_read: after.file_space_pages_read - before.file_space_pages_read,
            file_space_pages_written: after.file_space_pages_written
                - before.file_space_pages_written,
            index_page_splits: after.index_page_splits - before.index_page_splits,
            index_page_splits_at_insert_point: after.index_page_splits_at_insert_point
                - before.index_page_splits_at_insert_point,
            index_page_merge_attempts: after.index_page_merge_attempts
                - before.index_page_merge_attempts,
            index_page_merge_successful: after.index_page_merge_successful
                - before.index_page_merge_successful,
            index_page_reorg_attempts: after.index_page_reorg_attempts
                - before.index_page_reorg_attempts,
        }
    }
}

impl TableStats {
    /// One table's counters of a phase from its start `before` to `self`: counts as
    /// `self − before`; the state values `n_live_tup`, `n_dead_tup` and
    /// `n_mod_since_analyze` from `self`.
    pub fn delta(&self, before: &TableStats) -> TableStats {
        let mut t = TableStats::default();
        t.add_delta(self, before);
        t
    }

    /// [`TableStats::delta`] of each table summed: `after[i]` against `before[i]` (pairs
    /// beyond the shorter slice are left out).
    pub fn delta_sum(after: &[TableStats], before: &[TableStats]) -> TableStats {
        let mut t = TableStats::default();
        for (a, b) in after.iter().zip(before) {
            t.add_delta(a, b);
        }
        t
    }

    /// Adds `a`'s delta against `b` to `self`.
    fn add_delta(&mut self, a: &TableStats, b: &TableStats) {
        let t = self;
        t.n_tup_ins += a.n_tup_ins - b.n_tup_ins;
        t.n_tup_upd += a.n_tup_upd - b.n_tup_upd;
        t.n_tup_hot_upd += a.n_tup_hot_upd - b.n_tup_hot_upd;
        t.n_tup_del += a.n_tup_del - b.n_tup_del;
        t.n_live_tup += a.n_live_tup;
        t.n_dead_tup += a.n_dead_tup;
        t.vacuum_count += a.vacuum_count - b.vacuum_count;
        t.autovacuum_count += a.autovacuum_count - b.autovacuum_count;
        t.n_mod_since_analyze += a.n_mod_since_analyze;
        t.analyze_count += a.analyze_count - b.analyze_count;
        t.autoanalyze_count += a.autoanalyze_count - b.autoanalyze_count;
        t.heap_blks_hit += a.heap_blks_hit - b.heap_blks_hit;
        t.heap_blks_read += a.heap_blks_read - b.heap_blks_read;
        t.idx_blks_hit += a.idx_blks_hit - b.idx_blks_hit;
        t.idx_blks_read += a.idx_blks_read - b.idx_blks_read;
        t.heap_blks_written += a.heap_blks_written - b.heap_blks_written;
        t.idx_blks_written += a.idx_blks_written - b.idx_blks_written;
        t.index_entries_inserted += a.index_entries_inserted - b.index_entries_inserted;
        t.versions_traversed += a.versions_traversed - b.versions_traversed;
        t.pages_pruned += a.pages_pruned - b.pages_pruned;
        t.hint_bit_writes += a.hint_bit_writes - b.hint_bit_writes;
        t.index_items_killed += a.index_items_killed - b.index_items_killed;
        t.index_simple_deleted += a.index_simple_deleted - b.index_simple_deleted;
        t.index_bottom_up_deleted += a.index_bottom_up_deleted - b.index_bottom_up_deleted;
        t.index_bottom_up_passes += a.index_bottom_up_passes - b.index_bottom_up_passes;
        t.index_dedup_passes += a.index_dedup_passes - b.index_dedup_passes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_counts_are_subtracted_and_state_values_taken_after() {
        let before = EngineCounters {
            undo_records_written: 10,
            undo_pages_in_use: 7,
            history_list_length: 50,
            history_list_length_peak: 90,
            index_page_splits: 3,
            buffer_pool_pages_free: 700,
            ..Default::default()
        };
        let after = EngineCounters {
            undo_records_written: 25,
            undo_pages_in_use: 4,
            history_list_length: 20,
            history_list_length_peak: 95,
            index_page_splits: 5,
            buffer_pool_pages_free: 400,
            ..Default::default()
        };
        let d = after.delta(&before);
        assert_eq!(d.undo_records_written, 15);
        assert_eq!(d.index_page_splits, 2);
        assert_eq!(d.undo_pages_in_use, 4);
        assert_eq!(d.history_list_length, 20);
        assert_eq!(d.history_list_length_peak, 95);
        assert_eq!(d.buffer_pool_pages_free, 400);
    }

    #[test]
    fn table_counts_are_subtracted_and_summed_state_values_taken_after() {
        let before = TableStats {
            n_tup_upd: 5,
            n_live_tup: 100,
            n_dead_tup: 9,
            n_mod_since_analyze: 40,
            ..Default::default()
        };
        let after = TableStats {
            n_tup_upd: 8,
            n_live_tup: 101,
            n_dead_tup: 2,
            n_mod_since_analyze: 1,
            ..Default::default()
        };
        let d = after.delta(&before);
        assert_eq!((d.n_tup_upd, d.n_live_tup, d.n_dead_tup), (3, 101, 2));
        assert_eq!(d.n_mod_since_analyze, 1);
        let s = TableStats::delta_sum(&[after, after], &[before, before]);
        assert_eq!((s.n_tup_upd, s.n_live_tup, s.n_dead_tup), (6, 202, 4));
    }
}
