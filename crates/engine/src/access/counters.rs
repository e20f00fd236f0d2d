//! What a table access method reports about itself: its design-wide counters, and what a
//! garbage collection run (vacuum.c / vacuumlazy.c `heap_vacuum_rel`'s counts) or an
//! ANALYZE (analyze.c `acquire_sample_rows`) did.

use serde::{Deserialize, Serialize};

/// Design-wide counters (innodb_metrics / SHOW ENGINE INNODB STATUS names in the docs);
/// the undo and purge ones are zero for designs without an undo log, the B-tree ones are
/// counted by both presets (postgres: splits only; nbtree never merges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineCounters {
    /// Undo records written (undo_rec_written... InnoDB counts them per log).
    pub undo_records_written: u64,
    /// Undo pages allocated.
    pub undo_pages_allocated: u64,
    /// Undo pages written from the buffer pool (innodb_metrics undo pages written, as
    /// page writes of the undo relation).
    pub undo_pages_written: u64,
    /// Undo pages freed by commit (insert undo) or purge.
    pub undo_pages_freed: u64,
    /// Undo pages held now.
    pub undo_pages_in_use: u64,
    /// Cached undo segments reused (TRX_UNDO_CACHED).
    pub undo_segments_reused: u64,
    /// Undo records purge processed (purge_undo_log_pages... innodb_metrics purge_upd_exist_or_extern_records + purge_del_mark_records).
    pub purge_records: u64,
    /// Records and secondary entries purge removed.
    pub purge_removed: u64,
    /// Undo logs purged.
    pub purged_logs: u64,
    /// Purge batches, each ended by a truncation of the history that visits every
    /// rollback segment header (MariaDB: innodb_metrics `purge_invoked`, one per
    /// `trx_purge` call, after which `purge_truncation_task` runs
    /// `trx_purge_truncate_history`, trx0purge.cc / srv0srv.cc). The preset counts its
    /// purge coordinator's batches the same way: each ends at `innodb_purge_batch_size`
    /// distinct undo pages or when nothing more is purgeable, the empty batch that ends a
    /// run included.
    /// Reports written before this field existed read as 0.
    #[serde(default)]
    pub purge_batches: u64,
    /// History list length now (trx_rseg_history_len).
    pub history_list_length: u64,
    /// Highest history list length seen.
    pub history_list_length_peak: u64,
    /// Undo log pages read into the buffer pool (innodb_metrics
    /// `buffer_page_read_undo_log`).
    #[serde(default)]
    pub undo_pages_read: u64,
    /// Rollback segment header pages read into the buffer pool (MariaDB counts them, with
    /// the other system pages, as `buffer_page_read_system_page`).
    #[serde(default)]
    pub rseg_pages_read: u64,
    /// Rollback segment header pages written from the buffer pool
    /// (`buffer_page_written_system_page`).
    #[serde(default)]
    pub rseg_pages_written: u64,
    /// File-space pages read into the buffer pool: the tablespace header with its extent
    /// descriptors, segment inodes and change-buffer bitmaps (innodb: `btree::file_space`;
    /// MariaDB's innodb_metrics `buffer_page_read_fsp_hdr`, `_xdes`, `_index_inode`,
    /// `_ibuf_bitmap`).
    #[serde(default)]
    pub file_space_pages_read: u64,
    /// File-space pages written from the buffer pool (`buffer_page_written_fsp_hdr`,
    /// `_xdes`, `_index_inode`, `_ibuf_bitmap`).
    #[serde(default)]
    pub file_space_pages_written: u64,
    /// B-tree page splits, every index and level (innodb_metrics `index_page_splits`).
    #[serde(default)]
    pub index_page_splits: u64,
    /// Of those, splits at the insert point next to the page's last insert (InnoDB's
    /// sequential-insert heuristic, `BTreeConfig::sequential_split`; MariaDB counts none).
    #[serde(default)]
    pub index_page_splits_at_insert_point: u64,
    /// Leaves that fell below the merge threshold and tried to merge with a sibling
    /// (`index_page_merge_attempts`; btr0btr.cc `btr_compress`).
    #[serde(default)]
    pub index_page_merge_attempts: u64,
    /// Of those, leaves merged (`index_page_merge_successful`).
    #[serde(default)]
    pub index_page_merge_successful: u64,
    /// Leaves InnoDB would have reorganized (`index_page_reorg_attempts`; btr0btr.cc
    /// `btr_page_reorganize_low`): an insert that fits only after its leaf's garbage is
    /// made contiguous, and a merge page without contiguous room for the merged entries
    /// (`BTreeOps::index_page_reorg_attempts`).
    #[serde(default)]
    pub index_page_reorg_attempts: u64,
    /// Frames on the buffer pool's free list at the reading, a state value
    /// (`Innodb_buffer_pool_pages_free`): what the page cleaner's free-page target
    /// (`innodb_lru_scan_depth`) keeps; the innodb design only.
    #[serde(default)]
    pub buffer_pool_pages_free: u64,
}

/// What garbage collection did (vacuum for `postgres`, purge for `innodb`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcReport {
    /// Vacuum's report (postgres design).
    pub vacuum: Option<VacuumReport>,
}

/// What one vacuum did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VacuumReport {
    /// Heap pages scanned.
    pub pages_scanned: u64,
    /// Heap pages skipped as all-visible.
    pub pages_skipped: u64,
    /// Tuples removed by pruning during the scan.
    pub tuples_pruned: u64,
    /// Line pointers reclaimed (LP_DEAD → LP_UNUSED).
    pub dead_items_removed: u64,
    /// Index entries deleted, all indexes.
    pub index_entries_removed: u64,
    /// Index passes run.
    pub index_passes: u64,
    /// Pages newly marked all-visible.
    pub pages_set_all_visible: u64,
    /// Live tuples counted (becomes n_live_tup).
    pub live_tuples: u64,
}

/// What one ANALYZE did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalyzeReport {
    /// Heap blocks read for the sample.
    pub pages_sampled: u64,
    /// Live rows seen in them.
    pub live_rows: u64,
    /// Dead rows seen in them (dead and recently-dead tuples, LP_DEAD line pointers).
    pub dead_rows: u64,
    /// Live rows estimated for the whole heap (the new `n_live_tup`).
    pub live_rows_estimate: u64,
    /// Dead rows estimated for the whole heap (the new `n_dead_tup`).
    pub dead_rows_estimate: u64,
}
