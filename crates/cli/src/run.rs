//! `mvcclab run` and `mvcclab compare`: a sysbench workload on one or more designs, with
//! every 4 KiB block of I/O per transaction and per cause.

use crate::design_arg::resolve_design;
use crate::output::{emit, Format, OutputArgs};
use crate::progress::{install_ctrl_c, status, with_progress};
use crate::report::write_report_dir;
use crate::result::{
    label, per, to_csv, to_markdown, to_table, BlocksPerTxn, DeviceInfo, DriverInfo, EngineReport,
    Io, PerOp, Report, RunReport, Space, WorkloadInfo,
};
use crate::units::parse_size_bytes;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::db::{Database, DatabaseConfig, EngineCounters, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{Compression, ThrottleConfig};
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{Cause, CauseCounts, Counters};
use mvcclab_engine::storage::{Backing, StorageSnapshot};
use mvcclab_engine::wal::RecordTypeCounts;
use mvcclab_servers::ServerKind;
use mvcclab_workload::driver::{run as drive, RunControl, RunOptions, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::rand::RandType;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Flags shared by `run` and `compare` (sysbench's names where sysbench has them).
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Workload: oltp_read_write, oltp_read_only, oltp_write_only, oltp_point_select,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete,
    /// select_random_points, select_random_ranges.
    #[arg(long, default_value = "oltp_read_write")]
    pub workload: String,
    /// Change a switch of every design run: SWITCH=VALUE (see `mvcclab designs`).
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Number of tables.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value_t = 100_000)]
    pub table_size: u32,
    /// Range size of range SELECTs.
    #[arg(long, default_value_t = 100)]
    pub range_size: u32,
    /// Point SELECTs per transaction.
    #[arg(long, default_value_t = 10)]
    pub point_selects: u32,
    /// Simple range SELECTs per transaction.
    #[arg(long, default_value_t = 1)]
    pub simple_ranges: u32,
    /// SUM() range SELECTs per transaction.
    #[arg(long, default_value_t = 1)]
    pub sum_ranges: u32,
    /// ORDER BY range SELECTs per transaction.
    #[arg(long, default_value_t = 1)]
    pub order_ranges: u32,
    /// DISTINCT range SELECTs per transaction.
    #[arg(long, default_value_t = 1)]
    pub distinct_ranges: u32,
    /// Index UPDATEs per transaction.
    #[arg(long, default_value_t = 1)]
    pub index_updates: u32,
    /// Non-index UPDATEs per transaction.
    #[arg(long, default_value_t = 1)]
    pub non_index_updates: u32,
    /// DELETE/INSERT pairs per transaction.
    #[arg(long, default_value_t = 1)]
    pub delete_inserts: u32,
    /// oltp_insert: let the table assign ids (AUTO_INCREMENT / SERIAL); off, send unique
    /// random ids and prepare the tables empty.
    #[arg(long, default_value = "on", value_parser = parse_on_off)]
    pub auto_inc: bool,
    /// select_random_points: values of k per event.
    #[arg(long, default_value_t = 10)]
    pub random_points: u32,
    /// select_random_ranges: ranges of k per event.
    #[arg(long, default_value_t = 10)]
    pub number_of_ranges: u32,
    /// select_random_ranges: width of each range of k.
    #[arg(long, default_value_t = 5)]
    pub delta: u32,
    /// Range SELECTs on or off.
    #[arg(long, default_value = "on", value_parser = parse_on_off)]
    pub range_selects: bool,
    /// Autocommit every statement (no BEGIN/COMMIT).
    #[arg(long, default_value = "off", value_parser = parse_on_off)]
    pub skip_trx: bool,
    /// Random distribution: uniform, gaussian, special, pareto.
    #[arg(long, default_value = "special", value_parser = |s: &str| s.parse::<RandType>())]
    pub rand_type: RandType,
    /// special distribution: iterations (sysbench --rand-spec-iter).
    #[arg(long, default_value_t = 12)]
    pub rand_spec_iter: u32,
    /// special distribution: percent of values that are "special" (--rand-spec-pct).
    #[arg(long, default_value_t = 1)]
    pub rand_spec_pct: u32,
    /// special distribution: percent of hits on the special values (--rand-spec-res).
    #[arg(long, default_value_t = 75)]
    pub rand_spec_res: u32,
    /// pareto distribution: h (--rand-pareto-h).
    #[arg(long, default_value_t = 0.2)]
    pub rand_pareto_h: f64,
    /// Seed of the random numbers (deterministic for a seed and thread count).
    #[arg(long, default_value_t = 1)]
    pub rand_seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Measured time in seconds (0 = until --events).
    #[arg(long, default_value_t = 60.0)]
    pub time: f64,
    /// Events (transactions) to run (0 = until --time).
    #[arg(long, default_value_t = 0)]
    pub events: u64,
    /// Seconds of unmeasured warm-up after the load and checkpoint.
    #[arg(long, default_value_t = 10.0)]
    pub warmup: f64,
    /// Average transaction rate in events per second over all threads, Poisson arrivals
    /// (sysbench --rate); 0 = as fast as the threads go. Background work paced by time
    /// (page cleaner, checkpoints, autovacuum naps) then meets the same number of
    /// transactions per second on every target.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Memory and device.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Real servers (`real:postgresql`, `real:mariadb`).
    #[command(flatten)]
    pub server: ServerArgs,
    /// Report format and destination.
    #[command(flatten)]
    pub out: OutputArgs,
}

fn parse_bandwidth(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(b) if b.is_finite() && b > 0.0 => Ok(b),
        _ => Err(format!(
            "'{s}' is not a bandwidth in MiB/s (a number above 0)"
        )),
    }
}

/// Memory and device flags, shared by `run`, `compare` and the experiments.
#[derive(Args, Debug, Clone)]
pub struct DeviceArgs {
    /// Buffer pool size.
    #[arg(long, default_value = "8MiB", value_parser = parse_size_bytes)]
    pub buffer_pool: u64,
    /// Emulated OS page cache for designs that have one (0 = off for every design).
    #[arg(long, default_value = "64MiB", value_parser = parse_size_bytes)]
    pub os_cache: u64,
    /// Device bandwidth in MiB/s, read and write (unset = unthrottled). Several values,
    /// comma-separated, make one run per design and bandwidth (TPS versus bandwidth).
    #[arg(long, value_delimiter = ',', value_parser = parse_bandwidth)]
    pub bandwidth: Vec<f64>,
    /// Device latency per request in µs.
    #[arg(long)]
    pub latency_us: Option<u64>,
    /// Transparent compression of the device: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<Compression>())]
    pub compression: Compression,
    /// Keep each design's database under this directory (default: in memory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

/// Flags of the real-server targets (`--target postgresql|mariadb`, `real:NAME` designs).
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Use this existing server instead of starting one (postgresql://user@host:port/db or
    /// mysql://user:password@host:port/db); repeat for both engines.
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// Drop the OS page cache after the load and checkpoint, before the warm-up (root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Put each managed server's files on a loop device of its own and report its exact
    /// device I/O from /sys/block (root).
    #[arg(long)]
    pub exact_device_io: bool,
    /// Folder for managed servers' folders (default: the system's temp directory).
    #[arg(long, value_name = "DIR")]
    pub server_dir: Option<PathBuf>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

/// Flags of `mvcclab run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Design: a preset (postgres, innodb) or a design file (FILE.toml).
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Where to run: embedded (mvcclab's engine, with --design), postgresql or mariadb (a
    /// real server; --design is then ignored).
    #[arg(long, default_value = "embedded")]
    pub target: String,
    /// Workload, device and output flags.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags of `mvcclab compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Designs to compare, comma-separated: presets, design files (FILE.toml), or real
    /// servers (real:postgresql, real:mariadb).
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Workload, device and output flags.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The sysbench options of the flags.
pub fn sysbench_options(c: &CommonArgs) -> SysbenchOptions {
    let mut o = SysbenchOptions {
        tables: c.tables,
        table_size: c.table_size,
        range_size: c.range_size,
        point_selects: c.point_selects,
        simple_ranges: c.simple_ranges,
        sum_ranges: c.sum_ranges,
        order_ranges: c.order_ranges,
        distinct_ranges: c.distinct_ranges,
        index_updates: c.index_updates,
        non_index_updates: c.non_index_updates,
        delete_inserts: c.delete_inserts,
        range_selects: c.range_selects,
        skip_trx: c.skip_trx,
        auto_inc: c.auto_inc,
        random_points: c.random_points,
        number_of_ranges: c.number_of_ranges,
        delta: c.delta,
        ..Default::default()
    };
    o.rand.rand_type = c.rand_type;
    o.rand.rand_spec_iter = c.rand_spec_iter;
    o.rand.rand_spec_pct = c.rand_spec_pct;
    o.rand.rand_spec_res = c.rand_spec_res;
    o.rand.rand_pareto_h = c.rand_pareto_h;
    o
}

/// The database for one run: the design with the run's memory and device settings.
/// Returns the open database and its storage settings as JSON (for the report).
///
/// Errors: a data directory that cannot be cleared; the engine refusing the settings.
pub fn open_database(
    design: &DesignConfig,
    c: &DeviceArgs,
    bandwidth: Option<f64>,
) -> Result<(Arc<Database>, serde_json::Value, DeviceInfo)> {
    let mut cfg = DatabaseConfig::new(design.clone());
    let page = design.page_size.bytes() as u64;
    cfg.storage.buffer_pool.frames = design.buffer_pool_frames(c.buffer_pool);
    cfg.storage.os_cache.size_bytes = if design.os_page_cache { c.os_cache } else { 0 };
    cfg.storage.nvme.compression = c.compression;
    cfg.storage.nvme.throttle = ThrottleConfig {
        read_mib_s: bandwidth,
        write_mib_s: bandwidth,
        latency_us: c.latency_us,
        queue_depth: None,
    };
    let mut data_dir = None;
    if let Some(dir) = &c.data_dir {
        let d = dir.join(&design.name);
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("clearing {}", d.display()))?;
        }
        data_dir = Some(d.display().to_string());
        cfg.storage.backing = Backing::Directory {
            path: d,
            direct: false,
        };
    }
    let device = DeviceInfo {
        page_size_bytes: page,
        buffer_pool_bytes: cfg.storage.buffer_pool.frames as u64 * page,
        os_cache_bytes: cfg.storage.os_cache.size_bytes,
        bandwidth_mib_s: bandwidth,
        latency_us: c.latency_us,
        compression: c.compression,
        data_dir,
    };
    let storage_json = serde_json::to_value(&cfg.storage)?;
    let db = Database::open(cfg).map_err(|e| UsageError(e.to_string()))?;
    Ok((Arc::new(db), storage_json, device))
}

/// Table counters summed over `tables`: `after − before` for counts, `after` for the
/// state values `n_live_tup`, `n_dead_tup` and `n_mod_since_analyze`.
pub fn table_stats_delta(after: &[TableStats], before: &[TableStats]) -> TableStats {
    let mut t = TableStats::default();
    for (a, b) in after.iter().zip(before) {
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
    t
}

/// Engine counters of a phase: counts as `after − before`, state values from `after`.
pub fn engine_delta(after: EngineCounters, before: EngineCounters) -> EngineCounters {
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
        undo_pages_read: after.undo_pages_read - before.undo_pages_read,
        rseg_pages_read: after.rseg_pages_read - before.rseg_pages_read,
        rseg_pages_written: after.rseg_pages_written - before.rseg_pages_written,
        index_page_splits: after.index_page_splits - before.index_page_splits,
        index_page_merge_attempts: after.index_page_merge_attempts
            - before.index_page_merge_attempts,
        index_page_merge_successful: after.index_page_merge_successful
            - before.index_page_merge_successful,
    }
}

/// The start of a measured phase on some tables: their counters, the engine's and the
/// storage's. Used by `run`/`compare` and the named experiments alike.
pub struct Mark {
    tables: Vec<TableStats>,
    engine: EngineCounters,
    storage: StorageSnapshot,
    wal_types: BTreeMap<String, RecordTypeCounts>,
}

/// What a phase did, from a [`Mark`] to now.
pub struct PhaseDelta {
    /// Storage counters of the phase; its state fields (compression, pool) are the
    /// current ones.
    pub storage: StorageSnapshot,
    /// Table counters of the phase, summed over the tables (see [`table_stats_delta`]).
    pub tables: TableStats,
    /// Engine counters of the phase (see [`engine_delta`]).
    pub engine: EngineCounters,
    /// Pages of the tables now: (table or clustered index, other indexes), summed.
    pub pages: (u64, u64),
    /// WAL records of the phase by record type (types with records only).
    pub wal_by_record: BTreeMap<String, RecordTypeCounts>,
}

impl Mark {
    /// Marks the start of a phase on `tables`. Errors: [`mvcclab_engine::Error::Catalog`].
    pub fn take(db: &Database, tables: &[TableId]) -> Result<Mark> {
        Ok(Mark {
            tables: stats_of(db, tables)?,
            engine: db.engine_counters(),
            storage: db.storage().snapshot(),
            wal_types: db.wal_record_types(),
        })
    }

    /// What happened on `tables` (those of [`Mark::take`]) since the mark.
    /// Errors: [`mvcclab_engine::Error::Catalog`]; storage errors counting pages.
    pub fn since(&self, db: &Database, tables: &[TableId]) -> Result<PhaseDelta> {
        let mut pages = (0, 0);
        for &t in tables {
            let (p, i) = db.table_pages(t)?;
            pages.0 += p;
            pages.1 += i;
        }
        Ok(PhaseDelta {
            storage: db.storage().snapshot().delta(&self.storage),
            tables: table_stats_delta(&stats_of(db, tables)?, &self.tables),
            engine: engine_delta(db.engine_counters(), self.engine),
            pages,
            wal_by_record: db
                .wal_record_types()
                .into_iter()
                .map(|(n, c)| {
                    let d = c.minus(&self.wal_types.get(&n).copied().unwrap_or_default());
                    (n, d)
                })
                .filter(|(_, d)| d.records > 0)
                .collect(),
        })
    }
}

fn stats_of(db: &Database, tables: &[TableId]) -> Result<Vec<TableStats>> {
    Ok(tables
        .iter()
        .map(|&t| db.table_stats(t))
        .collect::<Result<_, _>>()?)
}

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
    }
}

/// The report's driver section: how long and how wide the flags ran the workload.
pub fn driver_info(c: &CommonArgs) -> DriverInfo {
    DriverInfo {
        threads: c.threads,
        time_s: c.time,
        events: c.events,
        warmup_s: c.warmup,
        rand_seed: c.rand_seed,
        rate_tps: c.rate,
    }
}

/// The unmeasured warm-up of `c.warmup` seconds (skipped after a Ctrl-C), on any target.
///
/// Errors: the driver's ([`UsageError`]: bad options, a session that cannot open).
pub fn warm_up(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    c: &CommonArgs,
    label: &str,
    ctl: &RunControl,
) -> Result<()> {
    if c.warmup > 0.0 && !ctl.stop.load(Ordering::Relaxed) {
        let warm = RunOptions {
            threads: c.threads,
            time_s: c.warmup,
            events: 0,
            rand_seed: c.rand_seed ^ 0xA5A5,
            rate_tps: c.rate,
        };
        with_progress(
            &format!("{label} warm-up"),
            c.warmup,
            0,
            ctl,
            c.out.quiet,
            || drive(target, kind, opts, &warm, ctl),
        )
        .map_err(|e| UsageError(format!("{label}: warm-up: {e}")))?;
    }
    Ok(())
}

/// The measured phase (`--time` / `--events`) on any target, under a progress bar.
///
/// Errors: the driver's ([`UsageError`]).
pub fn measure(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    c: &CommonArgs,
    label: &str,
    ctl: &RunControl,
) -> Result<mvcclab_workload::driver::RunResult> {
    let run_opts = RunOptions {
        threads: c.threads,
        time_s: c.time,
        events: c.events,
        rand_seed: c.rand_seed,
        rate_tps: c.rate,
    };
    Ok(
        with_progress(label, c.time, c.events, ctl, c.out.quiet, || {
            drive(target, kind, opts, &run_opts, ctl)
        })
        .map_err(|e| UsageError(format!("{label}: {e}")))?,
    )
}

/// Runs the workload of `c` on `design` with device bandwidth `bandwidth` and returns its
/// report. A Ctrl-C (`ctl.stop`) ends the warm-up or the measured phase early; the report
/// then says `interrupted`.
///
/// Errors: bad options ([`UsageError`]), or the engine failing to load the tables.
pub fn run_design(
    design: &DesignConfig,
    c: &CommonArgs,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<RunReport> {
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    if c.tables == 0 || c.table_size == 0 {
        return Err(UsageError("--tables and --table-size must be at least 1".into()).into());
    }
    let (db, storage_config, device) = open_database(design, &c.device, bandwidth)?;
    let target = Embedded::new(db.clone());
    let opts = sysbench_options(c);
    let label = label(&design.name, bandwidth);
    status(
        c.out.quiet,
        &format!("{label}: loading {} × {} rows ...", c.tables, c.table_size),
    );
    target
        .prepare(kind, &opts, c.rand_seed)
        .map_err(|e| anyhow::anyhow!("prepare: {e}"))?;
    db.storage().checkpoint()?;
    warm_up(&target, kind, &opts, c, &label, ctl)?;
    let tables: Vec<_> = (1..=c.tables)
        .map(|n| db.table_id(&format!("sbtest{n}")))
        .collect::<Result<_, _>>()?;
    let mark = Mark::take(&db, &tables)?;
    let results = measure(&target, kind, &opts, c, &label, ctl)?;
    let d = mark.since(&db, &tables)?;
    let io = io_report(
        &d.storage.counters,
        &results.ops_by_kind,
        results.transactions,
    );
    let engine = engine_report(
        &io.total,
        d.tables,
        d.engine,
        results.reads,
        d.wal_by_record,
    );
    Ok(RunReport {
        target: "embedded".into(),
        design: design.clone(),
        workload: WorkloadInfo {
            name: kind.name().into(),
            options: opts,
        },
        driver: driver_info(c),
        device: device.clone(),
        storage_config,
        space: Space::new(
            d.pages,
            d.engine.undo_pages_in_use,
            device.page_size_bytes,
            d.storage.compression,
        ),
        results,
        io,
        engine,
        server: None,
    })
}

/// One entry of `--designs`: an mvcclab design, or a real server.
#[derive(Clone, Debug)]
pub enum RunSpec {
    /// A preset or design file run on the embedded engine.
    Embedded(DesignConfig),
    /// `real:postgresql` or `real:mariadb`.
    Real(ServerKind),
}

impl RunSpec {
    /// The name a report shows for it.
    pub fn name(&self) -> String {
        match self {
            RunSpec::Embedded(d) => d.name.clone(),
            RunSpec::Real(k) => k.design_name(),
        }
    }
}

/// Parses a `--designs` entry: `real:postgresql`, `real:mariadb`, a preset or a design file
/// (with `--set` applied to the latter two).
///
/// Errors: [`UsageError`] naming the entry.
pub fn resolve_spec(arg: &str, set: &[String]) -> Result<RunSpec> {
    if let Some(name) = arg.strip_prefix("real:") {
        return ServerKind::parse(name).map(RunSpec::Real).ok_or_else(|| {
            UsageError(format!(
                "'{arg}': unknown real server '{name}' (real:postgresql or real:mariadb)"
            ))
            .into()
        });
    }
    resolve_design(arg, set).map(RunSpec::Embedded)
}

/// Checks the flags shared by every run before the first (long) one.
///
/// Errors: [`UsageError`] naming the flag.
pub fn check_common(c: &CommonArgs, specs: &[RunSpec]) -> Result<()> {
    let _: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    let bad = |m: &str| -> Result<()> { Err(UsageError(m.to_string()).into()) };
    if c.rand_spec_iter == 0 {
        bad("--rand-spec-iter must be at least 1")?;
    }
    if c.rand_spec_pct > 100 || c.rand_spec_res > 100 {
        bad("--rand-spec-pct and --rand-spec-res are percentages (0..=100)")?;
    }
    if !(c.rand_pareto_h > 0.0 && c.rand_pareto_h < 1.0) {
        bad("--rand-pareto-h must lie strictly between 0 and 1")?;
    }
    let mut names: Vec<String> = specs.iter().map(RunSpec::name).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return bad(&format!(
            "two designs are named '{}'; give design files distinct `name`s",
            w[0]
        ));
    }
    let real = specs.iter().any(|s| matches!(s, RunSpec::Real(_)));
    if real
        && (!c.device.bandwidth.is_empty()
            || c.device.latency_us.is_some()
            || c.device.compression != Compression::None)
    {
        bad(
            "--bandwidth, --latency-us and --compression shape mvcclab's emulated device; \
             real servers run on the machine's storage: leave them off when a real: target runs",
        )?;
    }
    for u in &c.server.urls {
        if ServerKind::of_url(u).is_none() {
            bad(&format!(
                "--url '{u}': expected postgresql://..., postgres://..., mysql://... or mariadb://..."
            ))?;
        }
    }
    Ok(())
}

/// Runs every design × bandwidth, stopping early on Ctrl-C, and returns the report.
///
/// Errors: bad flags ([`UsageError`]), a design or server failing.
pub fn run_specs(command: &str, specs: &[RunSpec], c: &CommonArgs) -> Result<Report> {
    check_common(c, specs)?;
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let runs = run_specs_with(specs, c, &ctl)?;
    // A preset beside a server version it models only with a switch (fidelity sets it).
    for note in crate::fidelity::version_notes(&runs) {
        status(c.out.quiet, &note);
    }
    Ok(Report::new(command, runs))
}

/// The runs of [`run_specs`] under a caller's Ctrl-C control (flags already checked).
///
/// Errors: a design or server failing.
pub fn run_specs_with(
    specs: &[RunSpec],
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<Vec<RunReport>> {
    let bandwidths: Vec<Option<f64>> = if c.device.bandwidth.is_empty() {
        vec![None]
    } else {
        c.device.bandwidth.iter().map(|&b| Some(b)).collect()
    };
    let mut runs = Vec::new();
    'all: for b in &bandwidths {
        for spec in specs {
            if ctl.stop.load(Ordering::Relaxed) {
                status(c.out.quiet, "Ctrl-C: skipping the remaining runs");
                break 'all;
            }
            runs.push(match spec {
                RunSpec::Embedded(d) => run_design(d, c, *b, ctl)?,
                RunSpec::Real(k) => crate::real::run_server(*k, c, ctl)?,
            });
        }
    }
    Ok(runs)
}

/// Writes `report` in the chosen format (and the report directory).
///
/// Errors: the output or the report directory cannot be written.
pub fn write_report(report: &Report, c: &CommonArgs) -> Result<()> {
    if let Some(dir) = &c.out.report {
        let files = write_report_dir(report, dir)?;
        status(
            c.out.quiet,
            &format!("report written to {}: {}", dir.display(), files.join(", ")),
        );
    }
    let text = match c.out.format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Table => to_table(report),
        Format::Csv => to_csv(report)?,
        Format::Md => to_markdown(report, &[]),
    };
    emit(&text, &c.out.output)
}

fn run_all(command: &str, designs: &[String], c: &CommonArgs) -> Result<()> {
    let specs: Vec<RunSpec> = designs
        .iter()
        .map(|d| resolve_spec(d, &c.set))
        .collect::<Result<_>>()?;
    let report = run_specs(command, &specs, c)?;
    write_report(&report, c)
}

/// `mvcclab run`.
pub fn run(a: RunArgs) -> Result<()> {
    let design = match a.target.as_str() {
        "embedded" => a.design.clone(),
        t => match ServerKind::parse(t) {
            Some(k) => k.design_name(),
            None => {
                return Err(UsageError(format!(
                    "--target '{t}': expected embedded, postgresql or mariadb"
                ))
                .into())
            }
        },
    };
    run_all("run", std::slice::from_ref(&design), &a.common)
}

/// `mvcclab compare`.
pub fn compare(a: CompareArgs) -> Result<()> {
    run_all("compare", &a.designs, &a.common)
}
