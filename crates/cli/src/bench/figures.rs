//! The I/O and engine sections of a run's report from the counters of its measured
//! phase, for an embedded design and a real server alike: blocks per transaction and per
//! cause, foreground blocks per operation (each driver operation kind under the cause
//! its I/O is counted under), and the engine figures (buffer hit ratio, HOT share,
//! versions traversed per read, ...).

use crate::result::{per, BlocksPerTxn, EngineReport, Io, PerOp};
use mvcclab_engine::buffer::BufferCacheEntry;
use mvcclab_engine::db::EngineCounters;
use mvcclab_engine::device::FileId;
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{Cause, CauseCounts, Counters};
use mvcclab_engine::wal::RecordTypeCounts;
use mvcclab_workload::driver::RunResult;
use std::collections::{BTreeMap, BTreeSet};

/// The operations behind each foreground cause, by the driver's operation kinds.
fn ops_of_cause(cause: Cause, ops_by_kind: &BTreeMap<String, u64>, txns: u64) -> u64 {
    let sum = |kinds: &[&str]| -> u64 {
        kinds
            .iter()
            .map(|k| ops_by_kind.get(*k).copied().unwrap_or(0))
            .sum()
    };
    match cause {
        // select_random_ranges runs its `k BETWEEN` ranges as index lookups (embedded.rs),
        // which the engine counts under point_select.
        Cause::PointSelect => sum(&["point_select", "random_points", "random_ranges"]),
        Cause::RangeScan => sum(&["simple_range", "sum_range", "order_range", "distinct_range"]),
        Cause::Update => sum(&["index_update", "non_index_update"]),
        Cause::Insert => sum(&["insert"]),
        Cause::Delete => sum(&["delete"]),
        Cause::Commit => ops_by_kind.get("commit").copied().unwrap_or(txns),
        _ => 0,
    }
}

/// 4 KiB blocks and requests per transaction of each cause in `by_cause`.
pub fn blocks_per_txn_by_cause(
    by_cause: &BTreeMap<Cause, CauseCounts>,
    txns: u64,
) -> BTreeMap<Cause, BlocksPerTxn> {
    let n = txns.max(1) as f64;
    by_cause
        .iter()
        .map(|(c, cc)| {
            (
                *c,
                BlocksPerTxn {
                    read_blocks_4k: cc.read_blocks_4k as f64 / n,
                    write_blocks_4k: cc.write_blocks_4k as f64 / n,
                    requests: (cc.read_requests + cc.write_requests) as f64 / n,
                },
            )
        })
        .collect()
}

/// The I/O section of a report from a phase's counters.
pub fn io_report(d: &Counters, ops_by_kind: &BTreeMap<String, u64>, txns: u64) -> Io {
    let total = d.total();
    let per_txn_by_cause = blocks_per_txn_by_cause(&d.by_cause, txns);
    let mut per_op = BTreeMap::new();
    for (cause, cc) in &d.by_cause {
        let ops = ops_of_cause(*cause, ops_by_kind, txns);
        if ops > 0 && !cause.is_background() {
            let k = ops as f64;
            per_op.insert(
                cause.name().to_string(),
                PerOp {
                    ops,
                    read_blocks_4k: cc.read_blocks_4k as f64 / k,
                    write_blocks_4k: cc.write_blocks_4k as f64 / k,
                    requests: (cc.read_requests + cc.write_requests) as f64 / k,
                },
            );
        }
    }
    Io {
        per_txn: per(&total, txns),
        total,
        by_cause: d.by_cause.clone(),
        per_txn_by_cause,
        per_op,
        by_file_class: BTreeMap::new(),
        by_process: BTreeMap::new(),
        per_second: Vec::new(),
    }
}

/// The denominator of `versions_traversed_per_read`: sysbench's read statements, or for
/// TPC-C, whose events are whole transactions that all read (the driver counts only
/// order-status and stock-level, 8.7 % of them, as reads), every transaction. Dividing
/// TPC-C's versions by its read-only transactions alone made the figure about 11.5 ×
/// too large (the ~1,035 "per read" of the first postgres tpcc run).
pub fn read_events(kind: mvcclab_workload::sysbench::WorkloadKind, r: &RunResult) -> u64 {
    if kind == mvcclab_workload::sysbench::WorkloadKind::Tpcc {
        r.transactions
    } else {
        r.reads
    }
}

/// The engine section of a report.
pub fn engine_report(
    total: &CauseCounts,
    tables: TableStats,
    undo: EngineCounters,
    reads: u64,
    wal_by_record: BTreeMap<String, RecordTypeCounts>,
) -> EngineReport {
    EngineReport {
        buffer_hits: total.buffer_hits,
        buffer_misses: total.buffer_misses,
        buffer_hit_ratio: if total.buffer_hits + total.buffer_misses == 0 {
            1.0
        } else {
            total.buffer_hits as f64 / (total.buffer_hits + total.buffer_misses) as f64
        },
        os_cache_hits: total.os_cache_read_hits,
        wal_bytes: total.wal_bytes,
        wal_fpi: total.wal_fpi,
        doublewrite_pages: total.doublewrite_pages,
        hot_updates: tables.n_tup_hot_upd,
        non_hot_updates: tables.n_tup_upd - tables.n_tup_hot_upd,
        index_entries_inserted: tables.index_entries_inserted,
        versions_traversed: tables.versions_traversed,
        versions_traversed_per_read: tables.versions_traversed as f64 / reads.max(1) as f64,
        dead_tuples: tables.n_dead_tup,
        vacuum_runs: tables.vacuum_count + tables.autovacuum_count,
        pages_pruned: tables.pages_pruned,
        purge_records: undo.purge_records,
        history_list_length: undo.history_list_length,
        history_list_length_peak: undo.history_list_length_peak,
        tables,
        undo,
        wal_by_record,
        buffer_cache: BTreeMap::new(),
    }
}

/// A pool's frames in [`EngineReport::buffer_cache`]'s terms: by usage count and dirty
/// flag, the frames holding no page, and by owner (`owner_<class>_pages`, `_dirty`,
/// `_old`, classes from `owner`; [`PoolOwners`]).
pub fn buffer_cache_histogram(
    frames: usize,
    entries: &[BufferCacheEntry],
    owner: impl Fn(&BufferCacheEntry) -> &'static str,
) -> BTreeMap<String, u64> {
    let mut h = BTreeMap::new();
    for e in entries {
        let state = if e.dirty { "dirty" } else { "clean" };
        *h.entry(format!("usage_{}_{state}", e.usage_count))
            .or_insert(0) += 1;
        let class = owner(e);
        for (what, counted) in [("pages", true), ("dirty", e.dirty), ("old", e.old)] {
            if counted {
                *h.entry(format!("owner_{class}_{what}")).or_insert(0) += 1;
            }
        }
    }
    h.insert("unused".into(), frames.saturating_sub(entries.len()) as u64);
    h
}

/// Whose page a frame holds, in the classes a preset's pool and MariaDB's
/// `information_schema.INNODB_BUFFER_PAGE` both give (the server's side:
/// crates/servers/src/mariadb.rs `read_buffer_page`): `table` (a workload table's heap or
/// clustered index), `index` (its other indexes), `undo` (undo log pages:
/// `PAGE_TYPE = 'UNDO_LOG'`), `freed` (a page freed while it stays resident: InnoDB's
/// FREED blocks, which that view shows as `PAGE_TYPE = 'UNKNOWN'`), `system` (anything
/// else: rollback segment headers, which MariaDB shows as `SYSTEM` pages, and MariaDB's
/// dictionary and file-space pages).
#[derive(Clone, Debug, Default)]
pub struct PoolOwners {
    /// Heap or clustered-index relations of the workload's tables.
    pub tables: BTreeSet<FileId>,
    /// Their index relations (a heap table's primary key included).
    pub indexes: BTreeSet<FileId>,
    /// The undo log's relation, if the design has one.
    pub undo: Option<FileId>,
}

impl PoolOwners {
    /// The class of `e`'s page.
    pub fn class(&self, e: &BufferCacheEntry) -> &'static str {
        let rel = e.page.rel;
        if e.freed {
            "freed"
        } else if self.tables.contains(&rel) {
            "table"
        } else if self.indexes.contains(&rel) {
            "index"
        } else if self.undo == Some(rel) && e.page_type == mvcclab_engine::clustered::PAGE_TYPE_UNDO
        {
            "undo"
        } else {
            "system"
        }
    }
}

/// The `pg_buffercache.*` state values of a PostgreSQL server's counters, or the
/// `innodb_buffer_page.*` ones of a MariaDB server's, in [`EngineReport::buffer_cache`]'s
/// terms; empty when the server has none.
pub fn server_buffer_cache(counters: &BTreeMap<String, f64>) -> BTreeMap<String, u64> {
    counters
        .iter()
        .filter_map(|(k, &v)| {
            let name = k
                .strip_prefix("pg_buffercache.")
                .or_else(|| k.strip_prefix("innodb_buffer_page."))?;
            Some((name.to_string(), v.max(0.0).round() as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mvcclab_engine::page::PageId;

    #[test]
    fn a_pool_and_a_server_give_the_same_buffer_cache_names() {
        let e = |frame, usage_count, dirty| BufferCacheEntry {
            frame,
            page: PageId::new(1, frame as u32),
            usage_count,
            dirty,
            pins: 0,
            old: false,
            page_type: 0,
            freed: false,
        };
        let h = buffer_cache_histogram(8, &[e(0, 0, true), e(1, 0, true), e(2, 3, false)], |_| {
            "table"
        });
        let want: BTreeMap<String, u64> = [
            ("usage_0_dirty", 2),
            ("usage_3_clean", 1),
            ("unused", 5),
            ("owner_table_pages", 3),
            ("owner_table_dirty", 2),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(h, want);
        let server: BTreeMap<String, f64> = [
            ("pg_buffercache.usage_0_dirty", 2.0),
            ("pg_buffercache.usage_3_clean", 1.0),
            ("pg_buffercache.unused", 5.0),
            ("pg_stat_bgwriter.buffers_clean", 9.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut want_server = want.clone();
        want_server.retain(|k, _| !k.starts_with("owner_"));
        assert_eq!(server_buffer_cache(&server), want_server);
        // MariaDB's census has the preset's owner names.
        let mariadb: BTreeMap<String, f64> = [
            ("innodb_buffer_page.owner_table_pages", 3.0),
            ("innodb_buffer_page.owner_table_dirty", 2.0),
            ("innodb_buffer_page.unused", 5.0),
            ("global_status.Innodb_buffer_pool_pages_free", 5.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut want_mariadb = want.clone();
        want_mariadb.retain(|k, _| !k.starts_with("usage_"));
        assert_eq!(server_buffer_cache(&mariadb), want_mariadb);
    }

    /// A frame's owner: freed before anything else, then its relation, and in the undo
    /// relation its page type (undo pages; the rollback segment headers are `system`).
    #[test]
    fn pool_owners_class_frames_as_innodb_buffer_page_does() {
        let o = PoolOwners {
            tables: [20].into(),
            indexes: [21].into(),
            undo: Some(30),
        };
        let e = |rel, page_type, freed| BufferCacheEntry {
            frame: 0,
            page: PageId::new(rel, 1),
            usage_count: 0,
            dirty: false,
            pins: 0,
            old: false,
            page_type,
            freed,
        };
        let undo = mvcclab_engine::clustered::PAGE_TYPE_UNDO;
        let rseg = mvcclab_engine::clustered::PAGE_TYPE_RSEG;
        assert_eq!(o.class(&e(20, 0, false)), "table");
        assert_eq!(o.class(&e(21, 0, false)), "index");
        assert_eq!(o.class(&e(21, 0, true)), "freed");
        assert_eq!(o.class(&e(30, undo, false)), "undo");
        assert_eq!(o.class(&e(30, undo, true)), "freed");
        assert_eq!(o.class(&e(30, rseg, false)), "system");
        assert_eq!(o.class(&e(99, 0, false)), "system");
    }
}
