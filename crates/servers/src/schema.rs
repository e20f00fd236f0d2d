//! A real server's counters put into the result schema's fields where the meaning is the
//! same as the embedded engine's (docs/results.md, "Real servers"); the engine's own names
//! stay beside them in the report's `server.counters`.
//!
//! | schema field | PostgreSQL 15 | MariaDB 10.11 |
//! |---|---|---|
//! | buffer_hits | pg_statio heap+idx `_blks_hit` | `Innodb_buffer_pool_read_requests − _reads` |
//! | buffer_misses | pg_statio heap+idx `_blks_read` | `Innodb_buffer_pool_reads` |
//! | buffer_pages_written | bgwriter `buffers_checkpoint + buffers_clean + buffers_backend` | `Innodb_pages_written` |
//! | wal_records | pg_stat_wal `wal_records` | – |
//! | wal_bytes | pg_stat_wal `wal_bytes` | `Innodb_lsn_current` advance |
//! | wal_fpi | pg_stat_wal `wal_fpi` | – (0: InnoDB has none) |
//! | wal_writes, wal_syncs | pg_stat_wal `wal_write`, `wal_sync` | `Innodb_log_writes`, `Innodb_os_log_fsyncs` |
//! | wal_written_bytes | – | `Innodb_os_log_written` |
//! | doublewrite_pages, _batches | 0 (none) | `Innodb_dblwr_pages_written`, `Innodb_dblwr_writes` |
//! | buffer_lru_batch_pages_written | – | INNODB_METRICS `buffer_LRU_batch_flush_total_pages` |
//! | buffer_flush_list_pages_written | – | INNODB_METRICS `buffer_flush_batch_total_pages` |
//! | buffer_lru_batches, _batch_scanned, _batch_evicted | – | INNODB_METRICS `buffer_LRU_batch_num_scan`, `buffer_LRU_batch_scanned`, `buffer_LRU_batch_evict_total_pages` |
//! | buffer_pages_made_young, _made_not_young | – | `Innodb_buffer_pool_pages_made_young`, `_made_not_young` |
//! | buffer_pages_created | – | `Innodb_pages_created` |
//! | checkpoints_timed, _requested | bgwriter `checkpoints_timed`, `checkpoints_req` | – |
//! | read/write requests, bytes, 4 KiB blocks, syncs | loop device (`--exact-device-io`) | loop device |
//! | n_tup_ins/upd/del | pg_stat_user_tables | `Handler_write/update/delete` |
//! | n_tup_hot_upd | pg_stat_user_tables | 0 (no HOT) |
//! | n_live_tup, n_dead_tup, n_mod_since_analyze, (auto)analyze_count | pg_stat_user_tables | – |
//! | purge_records | – | INNODB_METRICS `purge_del_mark_records + purge_upd_exist_or_extern_records` |
//! | purge_batches | – | INNODB_METRICS `purge_invoked` |
//! | history_list_length | – | INNODB_METRICS `trx_rseg_history_len` |
//! | undo_pages_read, _written | – | INNODB_METRICS `buffer_page_read_undo_log`, `buffer_page_written_undo_log` |
//! | rseg_pages_read, _written | – | INNODB_METRICS `buffer_page_read_system_page`, `buffer_page_written_system_page` (rollback segment headers and a few other system pages) |
//! | file_space_pages_read, _written | – | INNODB_METRICS `buffer_page_read_` and `buffer_page_written_` of `fsp_hdr`, `xdes`, `index_inode`, `ibuf_bitmap`, summed |
//!
//! `by_cause` holds only what a server's counters attribute: PostgreSQL's checkpointer
//! (`buffers_checkpoint`) and background writer (`buffers_clean`, as `page_cleaner`).

use crate::{ServerKind, Snapshot};
use mvcclab_engine::db::EngineCounters;
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{Cause, CauseCounts};
use std::collections::BTreeMap;

/// A measured phase of a real server in the schema's terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaFigures {
    /// Counts over the whole server.
    pub total: CauseCounts,
    /// The part the server attributes to a background component.
    pub by_cause: BTreeMap<Cause, CauseCounts>,
    /// Table counters, summed over the sbtest tables.
    pub tables: TableStats,
    /// Undo and purge counters (MariaDB).
    pub undo: EngineCounters,
    /// Pages now: (table or clustered index, other indexes).
    pub pages: (u64, u64),
    /// Report fields left 0 because the server does not count them.
    pub not_measured: Vec<String>,
}

/// Fields no real server fills: mvcclab's own instruments.
/// MariaDB's INNODB_METRICS names (after `buffer_page_read_` / `buffer_page_written_`) of
/// the file-space page types (srv0mon.cc `MONITOR_BUF_PAGE_READ`: `FSP_HDR`, `XDES`,
/// `INODE`, `IBUF_BITMAP`).
const FILE_SPACE_METRICS: [&str; 4] = ["fsp_hdr", "xdes", "index_inode", "ibuf_bitmap"];

const NEVER: &[&str] = &[
    "io.total.buffer_evictions",
    "io.total.pages_allocated",
    "io.total.device_wait_us",
    "io.total.os_cache_read_hits",
    "io.total.os_cache_hit_blocks_4k",
    "io.total.os_cache_miss_blocks_4k",
    "io.total.write_physical_bytes",
    "io.per_op",
    "engine.os_cache_hits",
    "engine.index_entries_inserted",
    "engine.versions_traversed",
    "engine.versions_traversed_per_read",
    "engine.pages_pruned",
    "engine.history_list_length_peak",
    "engine.tables.index_entries_inserted",
    "engine.tables.versions_traversed",
    "engine.tables.pages_pruned",
    "engine.tables.hint_bit_writes",
    "engine.tables.heap_blks_written",
    "engine.tables.idx_blks_written",
];

/// InnoDB's buffer pool fields (its page cleaner's batches, its LRU list, its created
/// pages), which only MariaDB's InnoDB counts.
const INNODB_POOL: &[&str] = &[
    "io.total.buffer_lru_batch_pages_written",
    "io.total.buffer_flush_list_pages_written",
    "io.total.buffer_pages_created",
    "io.total.buffer_lru_batches",
    "io.total.buffer_lru_batch_scanned",
    "io.total.buffer_lru_batch_evicted",
    "io.total.buffer_pages_made_young",
    "io.total.buffer_pages_made_not_young",
];

/// Device fields, filled only from a loop device.
const DEVICE: &[&str] = &[
    "io.total.read_requests",
    "io.total.read_blocks_4k",
    "io.total.read_bytes",
    "io.total.write_requests",
    "io.total.write_blocks_4k",
    "io.total.write_bytes",
    "io.total.syncs",
];

/// Rows written, updated and deleted as MariaDB's SQL layer counts them (`Handler_write`,
/// `_update`, `_delete`), for InnoDB and MyRocks alike: MariaDB 10.11 no longer has
/// Innodb_rows_*, and the handler counters include internal temporary tables, which
/// sysbench's statements do not use.
fn handler_rows(d: &Snapshot) -> TableStats {
    let h = |k: &str| u(d, &format!("global_status.Handler_{k}"));
    TableStats {
        n_tup_ins: h("write"),
        n_tup_upd: h("update"),
        n_tup_del: h("delete"),
        ..Default::default()
    }
}

fn u(d: &Snapshot, k: &str) -> u64 {
    d.get(k).copied().unwrap_or(0.0).max(0.0).round() as u64
}

/// `d` (a measured-phase delta of `kind`'s counters) in the schema's terms.
pub fn figures(kind: ServerKind, d: &Snapshot) -> SchemaFigures {
    let mut f = SchemaFigures::default();
    let mut not: Vec<&str> = NEVER.to_vec();
    let t = &mut f.total;
    if d.contains_key("device.read_ios") {
        t.read_requests = u(d, "device.read_ios");
        t.read_bytes = u(d, "device.read_sectors") * 512;
        t.read_blocks_4k = t.read_bytes.div_ceil(4096);
        t.write_requests = u(d, "device.write_ios");
        t.write_bytes = u(d, "device.write_sectors") * 512;
        t.write_blocks_4k = t.write_bytes.div_ceil(4096);
        t.syncs = u(d, "device.flush_ios");
    } else {
        not.extend_from_slice(DEVICE);
    }
    match kind {
        ServerKind::PostgreSql => {
            let s = |k: &str| u(d, &format!("pg_stat_user_tables.{k}"));
            let io = |k: &str| u(d, &format!("pg_statio_user_tables.{k}"));
            let bg = |k: &str| u(d, &format!("pg_stat_bgwriter.{k}"));
            let wal = |k: &str| u(d, &format!("pg_stat_wal.{k}"));
            t.buffer_hits = io("heap_blks_hit") + io("idx_blks_hit");
            t.buffer_misses = io("heap_blks_read") + io("idx_blks_read");
            t.buffer_pages_written =
                bg("buffers_checkpoint") + bg("buffers_clean") + bg("buffers_backend");
            t.wal_records = wal("wal_records");
            t.wal_bytes = wal("wal_bytes");
            t.wal_fpi = wal("wal_fpi");
            t.wal_writes = wal("wal_write");
            t.wal_syncs = wal("wal_sync");
            t.checkpoints_timed = bg("checkpoints_timed");
            t.checkpoints_requested = bg("checkpoints_req");
            f.by_cause.insert(
                Cause::Checkpointer,
                CauseCounts {
                    buffer_pages_written: bg("buffers_checkpoint"),
                    ..Default::default()
                },
            );
            f.by_cause.insert(
                Cause::PageCleaner,
                CauseCounts {
                    buffer_pages_written: bg("buffers_clean"),
                    ..Default::default()
                },
            );
            f.tables = TableStats {
                n_tup_ins: s("n_tup_ins"),
                n_tup_upd: s("n_tup_upd"),
                n_tup_hot_upd: s("n_tup_hot_upd"),
                n_tup_del: s("n_tup_del"),
                n_live_tup: s("n_live_tup"),
                n_dead_tup: s("n_dead_tup"),
                vacuum_count: s("vacuum_count"),
                autovacuum_count: s("autovacuum_count"),
                n_mod_since_analyze: s("n_mod_since_analyze"),
                analyze_count: s("analyze_count"),
                autoanalyze_count: s("autoanalyze_count"),
                heap_blks_hit: io("heap_blks_hit"),
                heap_blks_read: io("heap_blks_read"),
                idx_blks_hit: io("idx_blks_hit"),
                idx_blks_read: io("idx_blks_read"),
                ..Default::default()
            };
            not.extend_from_slice(&[
                "io.total.wal_fpi_bytes",
                "io.total.wal_written_bytes",
                "engine.purge_records",
                "engine.history_list_length",
                // PostgreSQL counts no B-tree splits (nbtree has no counter for them).
                "engine.undo.index_page_splits",
                "engine.undo.index_page_splits_at_insert_point",
                // PostgreSQL keeps no free-page target: its free list empties once the pool
                // has filled (freelist.c).
                "engine.undo.buffer_pool_pages_free",
            ]);
            not.extend_from_slice(INNODB_POOL);
        }
        ServerKind::MariaDb => {
            let g = |k: &str| u(d, &format!("global_status.Innodb_{k}"));
            let m = |k: &str| u(d, &format!("innodb_metrics.{k}"));
            let reads = g("buffer_pool_reads");
            t.buffer_misses = reads;
            t.buffer_hits = g("buffer_pool_read_requests").saturating_sub(reads);
            t.buffer_pages_written = g("pages_written");
            t.wal_bytes = g("lsn_current");
            t.wal_written_bytes = g("os_log_written");
            t.wal_writes = g("log_writes");
            t.wal_syncs = g("os_log_fsyncs");
            t.doublewrite_pages = g("dblwr_pages_written");
            t.doublewrite_batches = g("dblwr_writes");
            t.buffer_lru_batch_pages_written = m("buffer_LRU_batch_flush_total_pages");
            t.buffer_flush_list_pages_written = m("buffer_flush_batch_total_pages");
            t.buffer_lru_batches = m("buffer_LRU_batch_num_scan");
            t.buffer_lru_batch_scanned = m("buffer_LRU_batch_scanned");
            t.buffer_lru_batch_evicted = m("buffer_LRU_batch_evict_total_pages");
            t.buffer_pages_made_young = g("buffer_pool_pages_made_young");
            t.buffer_pages_made_not_young = g("buffer_pool_pages_made_not_young");
            t.buffer_pages_created = g("pages_created");
            f.tables = handler_rows(d);
            let purged = m("purge_del_mark_records") + m("purge_upd_exist_or_extern_records");
            f.undo = EngineCounters {
                purge_records: purged,
                purge_batches: m("purge_invoked"),
                history_list_length: m("trx_rseg_history_len"),
                undo_pages_read: m("buffer_page_read_undo_log"),
                undo_pages_written: m("buffer_page_written_undo_log"),
                // System pages: rollback segment headers, and the few TRX_SYS and
                // dictionary pages besides.
                rseg_pages_read: m("buffer_page_read_system_page"),
                rseg_pages_written: m("buffer_page_written_system_page"),
                file_space_pages_read: FILE_SPACE_METRICS
                    .iter()
                    .map(|k| m(&format!("buffer_page_read_{k}")))
                    .sum(),
                file_space_pages_written: FILE_SPACE_METRICS
                    .iter()
                    .map(|k| m(&format!("buffer_page_written_{k}")))
                    .sum(),
                index_page_splits: m("index_page_splits"),
                index_page_merge_attempts: m("index_page_merge_attempts"),
                index_page_merge_successful: m("index_page_merge_successful"),
                index_page_reorg_attempts: m("index_page_reorg_attempts"),
                buffer_pool_pages_free: g("buffer_pool_pages_free"),
                ..Default::default()
            };
            not.extend_from_slice(&[
                "io.total.wal_records",
                "io.total.wal_fpi_bytes",
                "io.total.checkpoints_timed",
                "io.total.checkpoints_requested",
                "engine.dead_tuples",
                "engine.vacuum_runs",
                "engine.tables.n_live_tup",
                "engine.tables.n_dead_tup",
                "engine.tables.n_mod_since_analyze",
                "engine.tables.analyze_count",
                "engine.tables.autoanalyze_count",
                "engine.tables.heap_blks_hit",
                "engine.tables.heap_blks_read",
                "engine.tables.idx_blks_hit",
                "engine.tables.idx_blks_read",
                "engine.undo.undo_records_written",
                "engine.undo.undo_pages_allocated",
                "engine.undo.undo_pages_freed",
                "engine.undo.undo_pages_in_use",
                "engine.undo.undo_segments_reused",
                "engine.undo.purge_removed",
                "engine.undo.purged_logs",
                "engine.undo.history_list_length_peak",
                // InnoDB counts splits, not which rule chose their split record.
                "engine.undo.index_page_splits_at_insert_point",
            ]);
        }
        ServerKind::MyRocks => {
            // MyRocks' own counters (`SHOW GLOBAL STATUS LIKE 'Rocksdb%'`; MariaDB KB
            // "MyRocks Status Variables"): the block cache is its buffer pool, the
            // RocksDB WAL its redo log; flushes of memtables and compactions write the
            // SST files. Pages written and doublewrite have no MyRocks meaning.
            let r = |k: &str| u(d, &format!("global_status.Rocksdb_{k}"));
            t.buffer_misses = r("block_cache_miss");
            t.buffer_hits = r("block_cache_hit");
            t.wal_bytes = r("wal_bytes");
            t.wal_syncs = r("wal_synced");
            t.wal_writes = r("write_wal");
            f.tables = handler_rows(d);
            not.extend_from_slice(&[
                "io.total.buffer_pages_written",
                "io.total.doublewrite_pages",
                "io.total.doublewrite_batches",
                "io.total.wal_records",
                "io.total.wal_fpi",
                "io.total.wal_fpi_bytes",
                "io.total.wal_written_bytes",
                "io.total.checkpoints_timed",
                "io.total.checkpoints_requested",
                "engine.purge_records",
                "engine.history_list_length",
                "engine.dead_tuples",
                "engine.vacuum_runs",
                "engine.tables",
                "engine.undo",
            ]);
            not.extend_from_slice(INNODB_POOL);
        }
    }
    f.pages = (u(d, "space.table_pages"), u(d, "space.index_pages"));
    f.not_measured = not.into_iter().map(String::from).collect();
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(kv: &[(&str, f64)]) -> Snapshot {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn postgresql_counters_fill_their_fields() {
        let f = figures(
            ServerKind::PostgreSql,
            &snap(&[
                ("pg_statio_user_tables.heap_blks_hit", 90.0),
                ("pg_statio_user_tables.idx_blks_hit", 10.0),
                ("pg_statio_user_tables.heap_blks_read", 3.0),
                ("pg_stat_bgwriter.buffers_checkpoint", 5.0),
                ("pg_stat_bgwriter.buffers_clean", 6.0),
                ("pg_stat_bgwriter.buffers_backend", 7.0),
                ("pg_stat_wal.wal_fpi", 4.0),
                ("pg_stat_user_tables.n_tup_hot_upd", 8.0),
                ("space.table_pages", 100.0),
            ]),
        );
        assert_eq!(f.total.buffer_hits, 100);
        assert_eq!(f.total.buffer_misses, 3);
        assert_eq!(f.total.buffer_pages_written, 18);
        assert_eq!(f.by_cause[&Cause::Checkpointer].buffer_pages_written, 5);
        assert_eq!(f.total.wal_fpi, 4);
        assert_eq!(f.tables.n_tup_hot_upd, 8);
        assert_eq!(f.pages, (100, 0));
        assert!(f
            .not_measured
            .iter()
            .any(|n| n == "io.total.read_blocks_4k"));
    }

    #[test]
    fn myrocks_counters_fill_the_cache_and_wal_fields() {
        let f = figures(
            ServerKind::MyRocks,
            &snap(&[
                ("global_status.Rocksdb_block_cache_miss", 4.0),
                ("global_status.Rocksdb_block_cache_hit", 40.0),
                ("global_status.Rocksdb_wal_bytes", 900.0),
                ("global_status.Rocksdb_wal_synced", 3.0),
                ("global_status.Handler_update", 2.0),
            ]),
        );
        assert_eq!((f.total.buffer_misses, f.total.buffer_hits), (4, 40));
        assert_eq!((f.total.wal_bytes, f.total.wal_syncs), (900, 3));
        assert_eq!(f.tables.n_tup_upd, 2);
        assert!(f
            .not_measured
            .iter()
            .any(|n| n == "io.total.doublewrite_pages"));
    }

    #[test]
    fn mariadb_counters_and_the_loop_device_fill_their_fields() {
        let f = figures(
            ServerKind::MariaDb,
            &snap(&[
                ("global_status.Innodb_buffer_pool_read_requests", 100.0),
                ("global_status.Innodb_buffer_pool_reads", 30.0),
                ("global_status.Innodb_dblwr_pages_written", 12.0),
                ("global_status.Innodb_lsn_current", 5000.0),
                ("innodb_metrics.purge_del_mark_records", 2.0),
                ("innodb_metrics.purge_upd_exist_or_extern_records", 3.0),
                ("innodb_metrics.purge_invoked", 11.0),
                ("innodb_metrics.buffer_page_written_system_page", 7.0),
                ("innodb_metrics.buffer_page_read_undo_log", 6.0),
                ("innodb_metrics.buffer_LRU_batch_num_scan", 39.0),
                ("innodb_metrics.buffer_LRU_batch_scanned", 29929.0),
                ("innodb_metrics.buffer_LRU_batch_evict_total_pages", 7837.0),
                ("global_status.Innodb_buffer_pool_pages_made_young", 26864.0),
                (
                    "global_status.Innodb_buffer_pool_pages_made_not_young",
                    27074.0,
                ),
                ("device.read_ios", 4.0),
                ("device.read_sectors", 64.0),
                ("device.write_ios", 1.0),
                ("device.write_sectors", 9.0),
            ]),
        );
        assert_eq!(f.total.buffer_hits, 70);
        assert_eq!(f.total.doublewrite_pages, 12);
        assert_eq!(f.total.wal_bytes, 5000);
        assert_eq!(f.undo.purge_records, 5);
        assert_eq!(f.undo.purge_batches, 11);
        assert_eq!((f.undo.rseg_pages_written, f.undo.undo_pages_read), (7, 6));
        assert_eq!(
            (
                f.total.buffer_lru_batches,
                f.total.buffer_lru_batch_scanned,
                f.total.buffer_lru_batch_evicted
            ),
            (39, 29929, 7837)
        );
        assert_eq!(
            (
                f.total.buffer_pages_made_young,
                f.total.buffer_pages_made_not_young
            ),
            (26864, 27074)
        );
        assert_eq!(f.total.read_blocks_4k, 8);
        assert_eq!(
            f.total.write_blocks_4k, 2,
            "4608 bytes touch two 4 KiB blocks"
        );
        assert!(!f
            .not_measured
            .iter()
            .any(|n| n == "io.total.read_blocks_4k"));
    }
}
