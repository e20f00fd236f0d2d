//! The result schema of `mvcclab run` and `mvcclab compare` (version [`SCHEMA_VERSION`],
//! documented field by field in docs/results.md), and the report of the named experiments
//! (docs/results.md, "Experiments", same schema version) and of `mvcclab fidelity`
//! (`fidelity.json`, docs/fidelity.md): one serde struct per section, as
//! hyperfine's `src/benchmark/benchmark_result.rs` holds one result struct for every
//! export. Its views (JSON, CSV, Markdown, the terminal table, SVG plots) are in
//! `export/`.
//!
//! Invariants: every number carries its unit in its name (`_blocks_4k`, `_bytes`, `_ms`,
//! `_us`, `_s`) or is a count or a ratio; per-transaction figures divide by
//! `results.transactions` (events completed in the measured phase, at least 1); the JSON
//! written by [`Report`] deserializes back into an equal [`Report`].

use crate::metadata::RunMetadata;
use mvcclab_devfs::{FileIo, SecondIo};
use mvcclab_engine::db::EngineCounters;
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{Compression, CompressionTotals};
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{Cause, CauseCounts};
use mvcclab_engine::wal::RecordTypeCounts;
pub use mvcclab_servers::ServerInfo;
use mvcclab_workload::cpu::CpuUse;
use mvcclab_workload::driver::{IgnoreErrors, RunResult};
use mvcclab_workload::sysbench::SysbenchOptions;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the result schema; bumped when a field changes meaning or is removed.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole report: one entry in `runs` per design (and per bandwidth with several).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Version of mvcclab that wrote it.
    pub mvcclab_version: String,
    /// `run` or `compare`.
    pub command: String,
    /// Where, when and how the report was made (absent in reports written before it
    /// existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RunMetadata>,
    /// The runs, in the order they ran.
    pub runs: Vec<RunReport>,
    /// Each design's one load when its tables were loaded once and reused by every run
    /// (`compare --bandwidth` with several values, `experiment bandwidth_sweep`; issue 26);
    /// empty when every run loaded its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadReport>,
}

/// A design's tables loaded once and reused by several runs (bench/loaded.rs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// The design's name as the runs show it (`postgres`, `real:mariadb`).
    pub design: String,
    /// Seconds from the start of the load to the saved copy: load, settle (checkpoint),
    /// clean shutdown and the copy.
    pub duration_s: f64,
    /// How the loaded state is kept and restored before each run.
    pub method: String,
    /// Bytes kept: the copy-on-write image's chunks, or the saved data directory.
    pub saved_bytes: u64,
    /// Runs that started from it.
    pub runs: u32,
}

impl Report {
    /// A report of `runs` made by `command`, with this process's [`RunMetadata`].
    pub fn new(command: &str, runs: Vec<RunReport>) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            mvcclab_version: env!("CARGO_PKG_VERSION").to_string(),
            command: command.to_string(),
            metadata: Some(RunMetadata::of_this_process()),
            runs,
            loads: Vec::new(),
        }
    }
}

/// CPU time of a run's measured phase by process: where the time went when the device
/// was not the limit (issue 26; docs/results.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCpu {
    /// mvcclab's own process: the driver's client threads, and for a preset the engine
    /// with its background threads; for a real server on mvcclab's device also the FUSE
    /// daemon's threads (given apart in `fuse_daemon_s`). Seconds, user + system.
    pub mvcclab_s: f64,
    /// The FUSE daemon's threads (a real server on mvcclab's device), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuse_daemon_s: Option<f64>,
    /// A managed real server's process tree, user + system seconds, by process kind
    /// (`postmaster`, `backend`, `checkpointer`, … for PostgreSQL; `server` for MariaDB;
    /// `exited` for children already gone); empty for a preset.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_s: BTreeMap<String, f64>,
    /// Seconds of the measured phase (wall clock), to read the above as cores busy.
    pub elapsed_s: f64,
}

/// One design on one workload with one device setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Where the workload ran: `embedded` (mvcclab's engine), `postgresql` or `mariadb`.
    pub target: String,
    /// Every switch value of the design (see `mvcclab designs`). For a real server, the
    /// preset that models it (postgres, innodb) renamed `real:NAME`.
    pub design: DesignConfig,
    /// The workload and its options.
    pub workload: WorkloadInfo,
    /// How long and how wide the driver ran.
    pub driver: DriverInfo,
    /// Memory and device settings.
    pub device: DeviceInfo,
    /// Every storage setting of the run (buffer pool, WAL, checkpoints, device), as the
    /// engine's `StorageConfig` serializes it: enough to rebuild the run exactly.
    pub storage_config: serde_json::Value,
    /// Transactions, queries, errors and latency percentiles per operation kind, and the
    /// measured phase's time series.
    pub results: Results,
    /// I/O of the measured phase.
    pub io: Io,
    /// Engine counters of the measured phase (state counters such as dead tuples and
    /// history list length are values at its end).
    pub engine: EngineReport,
    /// Space at the end of the run, and at the end of the load (`after_load`).
    pub space: Space,
    /// The real server of a `real:` run (absent for the embedded engine): version,
    /// settings, page-cache and device-I/O state, its own counters by their own names, and
    /// the report fields it cannot fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
    /// CPU seconds of the measured phase by process, for every target ([`RunCpu`];
    /// absent in reports written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_seconds: Option<RunCpu>,
    /// CPU use of a managed real server's processes in the measured phase (absent for the
    /// embedded engine and for a `--url` server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuReport>,
    /// Where, when and how this run was made, when that was another process than the
    /// report's: each point's own metadata in a report joined by `mvcclab report --merge`
    /// (absent in a local run, whose runs share the report's `metadata`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RunMetadata>,
}

/// CPU figures as rates: per transaction or per second, so fractional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuRates {
    /// User CPU time, µs.
    pub user_us: f64,
    /// System CPU time, µs.
    pub system_us: f64,
    /// User + system (perf's task-clock), µs.
    pub task_clock_us: f64,
    /// Voluntary context switches.
    pub voluntary_ctxt_switches: f64,
    /// Involuntary context switches.
    pub involuntary_ctxt_switches: f64,
    /// Minor page faults.
    pub minor_faults: f64,
    /// Major page faults.
    pub major_faults: f64,
}

impl CpuRates {
    /// `u / n` field by field (0 when `n` is 0).
    pub fn of(u: &CpuUse, n: f64) -> CpuRates {
        let d = |x: u64| if n > 0.0 { x as f64 / n } else { 0.0 };
        CpuRates {
            user_us: d(u.user_us),
            system_us: d(u.system_us),
            task_clock_us: d(u.task_clock_us()),
            voluntary_ctxt_switches: d(u.voluntary_ctxt_switches),
            involuntary_ctxt_switches: d(u.involuntary_ctxt_switches),
            minor_faults: d(u.minor_faults),
            major_faults: d(u.major_faults),
        }
    }
}

/// The `cpu` section of a run: a managed server's CPU use over the measured phase, read
/// from /proc (the root process, its live children, and its exited children through the
/// root's cumulative fields `cutime`, `cstime`, `cminflt`, `cmajflt`;
/// crates/servers/src/cpu.rs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// Whose CPU it is and how it was read.
    pub source: String,
    /// The phase's use (after − before).
    pub total: CpuUse,
    /// `total` per transaction.
    pub per_txn: CpuRates,
    /// `total` per second of the measured phase.
    pub per_second: CpuRates,
    /// CPUs kept busy on average: task-clock / the phase's wall time.
    pub cpus_utilised: f64,
    /// By process kind: PostgreSQL `postmaster`, `checkpointer`, `background_writer`,
    /// `walwriter`, `autovacuum_launcher`, `backend` (live ones), `exited` (children that
    /// exited: the run's own backends, which have left when the phase's counters are read,
    /// and autovacuum workers); MariaDB `server` (mariadbd, one process).
    pub by_kind: BTreeMap<String, CpuUse>,
    /// True when context switches of exited processes or threads are not in the figures
    /// (the kernel keeps no cumulative child field for them).
    pub ctxt_switches_of_exited_missing: bool,
}

impl RunReport {
    /// Whether the report field at dotted `path` was measured: always for the embedded
    /// engine; for a real server unless the path (or a parent of it) is in
    /// `server.not_measured`.
    pub fn measured(&self, path: &str) -> bool {
        self.server.as_ref().is_none_or(|s| {
            !s.not_measured
                .iter()
                .any(|n| path == n || path.starts_with(&format!("{n}.")))
        })
    }
}

/// What the driver measured ([`RunResult`], its fields flattened into this object), the
/// measured phase's time series and the warm-up's counts. Reads as a [`RunResult`]
/// (`Deref`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The driver's figures for the whole measured phase.
    #[serde(flatten)]
    pub run: RunResult,
    /// One sample per `--report-interval` of the measured phase, in order (empty with
    /// `--report-interval 0`). Counts are differences of cumulative counters read at the
    /// interval's ends, so they add up to the phase's totals (see [`Sample`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<Sample>,
    /// What the unmeasured warm-up ran (absent with `--warmup 0`, after a Ctrl-C before
    /// it, and in reports from before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<WarmupResult>,
}

impl Results {
    /// `run` without a time series or a warm-up.
    pub fn new(run: RunResult) -> Results {
        Results {
            run,
            timeseries: Vec::new(),
            warmup: None,
        }
    }
}

/// The warm-up's counts, from the driver's [`RunResult`] of that phase: how many
/// transactions ran before the measured phase, and in how long. `mvcclab fidelity` paces
/// a preset's warm-up at its real server's `tps` (`--warmup-rate`), so that both sides
/// start their measured phase after the same number of transactions since the
/// checkpoint (docs/fidelity.md, "Warm-ups of the same length").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WarmupResult {
    /// Events (transactions) completed in the warm-up.
    pub transactions: u64,
    /// Statements executed in the warm-up, BEGIN/COMMIT excluded.
    pub queries: u64,
    /// Ignored errors in the warm-up (as [`RunResult::errors`]).
    pub errors: u64,
    /// Wall time of the warm-up in seconds, from its sessions open to its last event.
    pub elapsed_s: f64,
    /// `transactions / elapsed_s`: events per second.
    pub tps: f64,
    /// The warm-up was stopped early (Ctrl-C).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl WarmupResult {
    /// The counts of the warm-up's driver run `r`.
    pub fn of(r: &RunResult) -> WarmupResult {
        WarmupResult {
            transactions: r.transactions,
            queries: r.queries,
            errors: r.errors,
            elapsed_s: r.elapsed_s,
            tps: r.tps,
            interrupted: r.interrupted,
        }
    }
}

impl std::ops::Deref for Results {
    type Target = RunResult;
    fn deref(&self) -> &RunResult {
        &self.run
    }
}

impl std::ops::DerefMut for Results {
    fn deref_mut(&mut self) -> &mut RunResult {
        &mut self.run
    }
}

/// 4 KiB blocks read and written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BlocksRw {
    /// 4 KiB blocks read.
    pub read_blocks_4k: u64,
    /// 4 KiB blocks written.
    pub write_blocks_4k: u64,
}

/// The embedded engine's history list length among a [`Sample`]'s `server_counters`, for a
/// design with undo: a state value (its value at the interval's end), the preset's side of
/// a real InnoDB's `innodb_metrics.trx_rseg_history_len`, so that the two are compared
/// sample for sample (an exact peak is not comparable with samples).
pub const ENGINE_HISTORY_LIST_LENGTH: &str = "engine.history_list_length";

/// The embedded engine's free frames among a [`Sample`]'s `server_counters`, for a design
/// with undo: a state value (the free list's length at the interval's end), the preset's
/// side of a real InnoDB's `global_status.Innodb_buffer_pool_pages_free`, which its page
/// cleaner keeps near `innodb_lru_scan_depth`.
pub const ENGINE_BUFFER_POOL_PAGES_FREE: &str = "engine.buffer_pool_pages_free";

/// Whether a `server_counters` entry of the embedded engine is a state value (taken at
/// the interval's end, not differenced).
pub fn is_engine_state(name: &str) -> bool {
    name == ENGINE_HISTORY_LIST_LENGTH || name == ENGINE_BUFFER_POOL_PAGES_FREE
}

/// The embedded engine's B-tree counters among a [`Sample`]'s `server_counters`, for a
/// design with undo: counts over the interval, the preset's side of a real InnoDB's
/// `innodb_metrics` of the same names (`index_page_splits`, ...), so that the two are
/// compared sample for sample (a merge happens in a purge burst, a split after it).
/// Over a phase they add up to `engine.undo`'s fields of the same names.
pub const ENGINE_BTREE_COUNTERS: [&str; 4] = [
    "engine.index_page_splits",
    "engine.index_page_merge_attempts",
    "engine.index_page_merge_successful",
    "engine.index_page_reorg_attempts",
];

/// The embedded engine's entries of a [`Sample`]'s `server_counters` from its counters
/// `e` (counts since a mark, state values at its end; `EngineCounters::delta`): for a
/// design with undo, [`ENGINE_HISTORY_LIST_LENGTH`], [`ENGINE_BUFFER_POOL_PAGES_FREE`] and
/// [`ENGINE_BTREE_COUNTERS`]; none otherwise.
pub fn engine_series_counters(
    design: &DesignConfig,
    e: &EngineCounters,
) -> mvcclab_servers::Snapshot {
    let mut out = mvcclab_servers::Snapshot::new();
    if design.version_storage != mvcclab_engine::design::VersionStorage::UndoDelta {
        return out;
    }
    out.insert(
        ENGINE_HISTORY_LIST_LENGTH.to_string(),
        e.history_list_length as f64,
    );
    out.insert(
        ENGINE_BUFFER_POOL_PAGES_FREE.to_string(),
        e.buffer_pool_pages_free as f64,
    );
    let ops = [
        e.index_page_splits,
        e.index_page_merge_attempts,
        e.index_page_merge_successful,
        e.index_page_reorg_attempts,
    ];
    for (name, n) in ENGINE_BTREE_COUNTERS.iter().zip(ops) {
        out.insert(name.to_string(), n as f64);
    }
    out
}

/// One interval of a phase's time series (`--report-interval`, default 1 s): what
/// happened between two readings of the cumulative counters. The counts of a phase's
/// samples add up exactly to the phase's totals (`results.transactions`,
/// `results.queries`, `io.by_cause`, `engine.buffer_misses`, `engine.wal_bytes`), since the
/// last sample ends at the reading the totals are taken from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The phase (`measure` for run/compare; the phase name in an experiment).
    pub phase: String,
    /// Start of the interval, in seconds from the start of the phase.
    pub start_s: f64,
    /// Length of the interval in seconds (the last one is usually shorter).
    pub interval_s: f64,
    /// Events (transactions) completed in the interval.
    pub transactions: u64,
    /// Statements executed in the interval, BEGIN/COMMIT excluded.
    pub statements: u64,
    /// `transactions / interval_s`.
    pub tps: f64,
    /// Median latency of the events completed in the interval (ms; 0 when none).
    pub latency_p50_ms: f64,
    /// 95th percentile of the same (ms).
    pub latency_p95_ms: f64,
    /// 99th percentile of the same (ms).
    pub latency_p99_ms: f64,
    /// 4 KiB blocks read from the device, all causes.
    pub read_blocks_4k: u64,
    /// 4 KiB blocks written to the device, all causes.
    pub write_blocks_4k: u64,
    /// The blocks by cause (causes with none are absent).
    pub blocks_by_cause: BTreeMap<Cause, BlocksRw>,
    /// Bytes read from the device per second, in MiB/s.
    pub read_mib_s: f64,
    /// Bytes written to the device per second, in MiB/s.
    pub write_mib_s: f64,
    /// Page requests that had to read the page.
    pub buffer_misses: u64,
    /// WAL / redo bytes inserted.
    pub wal_bytes: u64,
    /// A real server's counters over the interval, by their own names (as
    /// `server.counters`): counts are differences, state values the value at the
    /// interval's end. For the embedded engine only [`ENGINE_HISTORY_LIST_LENGTH`] and
    /// [`ENGINE_BTREE_COUNTERS`] (a design with undo).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_counters: BTreeMap<String, f64>,
    /// 4 KiB blocks on mvcclab's device under a real server, keyed `FILE_CLASS/PROCESS`.
    /// Empty until the real servers run on mvcclab's device (issue 23); see
    /// `bench::series::Reading::device_blocks`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub device_blocks: BTreeMap<String, BlocksRw>,
}

impl Sample {
    /// The history list length at the interval's end under either side's name
    /// ([`ENGINE_HISTORY_LIST_LENGTH`], `innodb_metrics.trx_rseg_history_len`); `None` in a
    /// sample without one (a design without undo, PostgreSQL).
    pub fn history_list_length(&self) -> Option<f64> {
        self.server_counters
            .get(ENGINE_HISTORY_LIST_LENGTH)
            .or_else(|| {
                self.server_counters
                    .get("innodb_metrics.trx_rseg_history_len")
            })
            .copied()
    }
}

/// The workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// sysbench script name (`oltp_read_write`, ...).
    pub name: String,
    /// Its options, named as sysbench names them.
    pub options: SysbenchOptions,
}

/// The driver's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriverInfo {
    /// --threads.
    pub threads: u32,
    /// --time: measured seconds (0 = bounded by events).
    pub time_s: f64,
    /// --events (0 = bounded by time).
    pub events: u64,
    /// --warmup: unmeasured seconds after the load and a checkpoint.
    pub warmup_s: f64,
    /// --rand-seed.
    pub rand_seed: u64,
    /// --rate: scheduled events per second (0 = unlimited).
    #[serde(default)]
    pub rate_tps: f64,
    /// --warmup-rate: scheduled events per second of the warm-up (0 = unlimited); absent
    /// when not given, the warm-up then ran at `rate_tps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_rate_tps: Option<f64>,
    /// --report-interval: seconds per sample of `results.timeseries` (0 = none).
    #[serde(default)]
    pub report_interval_s: f64,
    /// --ignore-errors: `default` (sysbench's drivers' lists), `all`, or the codes ignored
    /// beside the defaults; reports from before it read as `default`.
    #[serde(default)]
    pub ignore_errors: IgnoreErrors,
}

/// Memory and device settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Page size of the design in bytes.
    pub page_size_bytes: u64,
    /// Buffer pool size in bytes (frames × page size).
    pub buffer_pool_bytes: u64,
    /// Emulated OS page cache in bytes (0 for designs that bypass it, O_DIRECT).
    pub os_cache_bytes: u64,
    /// Device bandwidth, read and write, in MiB/s (null = unthrottled).
    pub bandwidth_mib_s: Option<f64>,
    /// Added latency per device request in µs (null = none).
    pub latency_us: Option<u64>,
    /// Transparent compression of the device.
    pub compression: Compression,
    /// The device was presented as rotational (`--rotational`; absent = false, an NVMe SSD).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rotational: bool,
    /// Directory of the database files (null = in memory).
    pub data_dir: Option<String>,
    /// A real server on the FUSE device: CPU seconds the device's request threads used in
    /// the measured phase (they share the cores with the server and the clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuse_daemon_cpu_s: Option<f64>,
    /// A real server on the FUSE device with `--bandwidth`: the busier direction's share of
    /// the bandwidth, `bytes / (bandwidth × seconds)` over the measured phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilisation: Option<f64>,
    /// True when `utilisation` stayed under 0.9: the server (or the CPU it shares with the
    /// daemon) was the bottleneck, not the configured bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilisation_under_90pct: Option<bool>,
}

/// Foreground 4 KiB blocks and requests per operation of one kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerOp {
    /// Operations of the kind in the measured phase.
    pub ops: u64,
    /// 4 KiB blocks read per operation.
    pub read_blocks_4k: f64,
    /// 4 KiB blocks written per operation.
    pub write_blocks_4k: f64,
    /// Device requests (read + write) per operation.
    pub requests: f64,
}

/// Device I/O and WAL per operation, from one cause's (or all causes') counts: the
/// per-statement figures of `storage-bench` and of the named experiments.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerOpIo {
    /// 4 KiB blocks read per operation.
    pub read_blocks_4k: f64,
    /// 4 KiB blocks written per operation.
    pub write_blocks_4k: f64,
    /// Device read requests per operation.
    pub read_requests: f64,
    /// Device write requests per operation.
    pub write_requests: f64,
    /// WAL / redo bytes per operation.
    pub wal_bytes: f64,
    /// Full-page images per operation.
    pub wal_fpi: f64,
    /// Pages written to the doublewrite area per operation.
    pub doublewrite_pages: f64,
}

impl PerOpIo {
    /// `c` divided by `ops` (at least 1).
    pub fn of(c: &CauseCounts, ops: u64) -> PerOpIo {
        let n = ops.max(1) as f64;
        PerOpIo {
            read_blocks_4k: c.read_blocks_4k as f64 / n,
            write_blocks_4k: c.write_blocks_4k as f64 / n,
            read_requests: c.read_requests as f64 / n,
            write_requests: c.write_requests as f64 / n,
            wal_bytes: c.wal_bytes as f64 / n,
            wal_fpi: c.wal_fpi as f64 / n,
            doublewrite_pages: c.doublewrite_pages as f64 / n,
        }
    }
}

/// Per-transaction blocks of one cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BlocksPerTxn {
    /// 4 KiB blocks read per transaction.
    pub read_blocks_4k: f64,
    /// 4 KiB blocks written per transaction.
    pub write_blocks_4k: f64,
    /// Device requests (read + write) per transaction.
    pub requests: f64,
}

/// I/O of the measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Io {
    /// Every metric summed over all causes.
    pub total: CauseCounts,
    /// Every metric per cause (causes with no counts are absent).
    pub by_cause: BTreeMap<Cause, CauseCounts>,
    /// Every metric of `total` divided by the transactions.
    pub per_txn: BTreeMap<String, f64>,
    /// Blocks and requests per transaction, per cause (the stacked-bar plot).
    pub per_txn_by_cause: BTreeMap<Cause, BlocksPerTxn>,
    /// Foreground blocks per operation, keyed by the operation's cause (`point_select`,
    /// `range_scan`, `update` (index and non-index together), `insert`, `delete`,
    /// `commit`).
    pub per_op: BTreeMap<String, PerOp>,
    /// A real server on the FUSE device (`--bandwidth`, `--latency-us`, `--compression` or
    /// `--fuse-device` with a real target): the device's metrics per class of the server's
    /// files (PostgreSQL `heap NAME`, `index NAME`, `pg_wal`, `pg_xact`, `temp`, `catalog`,
    /// `other`; MariaDB each `.ibd`, `ibdata1`, `ib_logfile0`, `undo`, `temp`, `other`;
    /// MyRocks besides `sst`, `rocksdb_wal`, `MANIFEST`, `rocksdb_other`),
    /// each with its FUSE `read_calls` and `write_calls`. Absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_file_class: BTreeMap<String, FileIo>,
    /// The same per kind of process that made the requests (PostgreSQL `backend`,
    /// `checkpointer`, `background writer`, `walwriter`, `autovacuum worker`, ...; other
    /// servers by thread name). Absent without the FUSE device.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_process: BTreeMap<String, FileIo>,
    /// Bytes read and written in each whole second of the measured phase, on the FUSE
    /// device. Absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_second: Vec<SecondIo>,
}

/// Engine counters of the measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineReport {
    /// Page requests served by the buffer pool.
    pub buffer_hits: u64,
    /// Page requests that read the page.
    pub buffer_misses: u64,
    /// `buffer_hits / (buffer_hits + buffer_misses)` (1 when there were none).
    pub buffer_hit_ratio: f64,
    /// Reads served by the emulated OS page cache.
    pub os_cache_hits: u64,
    /// WAL / redo bytes inserted.
    pub wal_bytes: u64,
    /// Full-page images in the WAL.
    pub wal_fpi: u64,
    /// Pages written to the doublewrite area.
    pub doublewrite_pages: u64,
    /// Updates that were heap-only (HOT).
    pub hot_updates: u64,
    /// Updates that were not HOT (every update of a design without HOT).
    pub non_hot_updates: u64,
    /// Index entries inserted (by inserts and by non-HOT / key-changing updates).
    pub index_entries_inserted: u64,
    /// Row versions examined by reads.
    pub versions_traversed: u64,
    /// `versions_traversed` per read statement.
    pub versions_traversed_per_read: f64,
    /// Dead tuples (or delete-marked records) at the end of the run.
    pub dead_tuples: u64,
    /// Vacuums (manual and auto) run during the measured phase.
    pub vacuum_runs: u64,
    /// Pages pruned on access (heap designs).
    pub pages_pruned: u64,
    /// Undo records purge processed.
    pub purge_records: u64,
    /// History list length at the end.
    pub history_list_length: u64,
    /// Highest history list length seen since the database opened.
    pub history_list_length_peak: u64,
    /// Every table counter (pg_stat_user_tables names), summed over the workload's tables;
    /// `n_live_tup` and `n_dead_tup` are values at the end, the rest measured-phase deltas.
    pub tables: TableStats,
    /// Undo and purge counters (zero for designs without an undo log); counts are
    /// measured-phase deltas, `undo_pages_in_use` and the history list values at the end.
    pub undo: EngineCounters,
    /// WAL records of the measured phase by record type, in pg_waldump's `Rmgr/RECORD`
    /// names (`mvcclab_engine::recovery::record_type_name`): records, bytes without
    /// full-page images, full-page image bytes. For PostgreSQL read with `pg_waldump
    /// --stats=record` over the phase (managed servers only); empty where not measured.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub wal_by_record: BTreeMap<String, RecordTypeCounts>,
    /// The buffer pool at the end of the measured phase as contrib/pg_buffercache shows
    /// it: frames by usage count and dirty flag (`usage_<N>_dirty`, `usage_<N>_clean`;
    /// N is the clock sweep's usage count, 0 under a policy without one) and frames
    /// holding no page (`unused`). An embedded run's whole pool; a PostgreSQL server's
    /// shared buffers read with pg_buffercache (catalogs included); empty where not read
    /// (MariaDB, a server without the extension).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub buffer_cache: BTreeMap<String, u64>,
}

/// Space at the end of the run, and at the end of the load (`after_load`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Space {
    /// Heap pages, or clustered-index pages.
    pub table_pages: u64,
    /// Pages of the other indexes.
    pub index_pages: u64,
    /// Undo pages in use.
    pub undo_pages: u64,
    /// `(table_pages + index_pages + undo_pages) × page size` in bytes.
    pub logical_bytes: u64,
    /// Bytes held on the device as 4 KiB blocks (every file, WAL included); only
    /// computed with device compression on (0 otherwise).
    pub device_logical_bytes: u64,
    /// Those blocks after transparent compression (0 without compression).
    pub device_physical_bytes: u64,
    /// `device_logical_bytes / device_physical_bytes` (1 without compression).
    pub compression_ratio: f64,
    /// With device compression on: the bytes held split by what the files hold, `data`
    /// (relation files / tablespaces), `wal` (WAL segments / redo log) and `other`
    /// (control file, commit log, doublewrite, ...), each logical and physical with its
    /// ratio. The embedded engine: the device's own accounting by file id; a real server:
    /// its data directory's files compressed 4 KiB block by block with the same codec at
    /// the end of the run (crates/servers/src/file_class.rs `compressed_space`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_file_kind: BTreeMap<String, CompressionTotals>,
    /// Pages per table at the end, by table name: `[table pages, index pages]` as
    /// `table_pages` and `index_pages` count them (a real PostgreSQL server:
    /// `pg_relation_size` and `pg_indexes_size` ÷ 8192 of each workload table; absent for
    /// MariaDB).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pages_by_table: BTreeMap<String, (u64, u64)>,
    /// The same figures at the end of the load, after the settle step (a checkpoint; a
    /// real server's VACUUM ANALYZE and CHECKPOINT) and before the warm-up: the space a
    /// freshly loaded database takes, as seed 001 reports it (its own `after_load` is
    /// always absent). Absent where the run did not load and settle (an experiment's
    /// phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_load: Option<Box<Space>>,
}

impl Space {
    /// Space from page counts and the device's compression totals.
    pub fn new(pages: (u64, u64), undo_pages: u64, page_bytes: u64, c: CompressionTotals) -> Space {
        Space {
            table_pages: pages.0,
            index_pages: pages.1,
            undo_pages,
            logical_bytes: (pages.0 + pages.1 + undo_pages) * page_bytes,
            device_logical_bytes: c.logical_bytes,
            device_physical_bytes: c.physical_bytes,
            compression_ratio: if c.physical_bytes == 0 { 1.0 } else { c.ratio },
            by_file_kind: BTreeMap::new(),
            pages_by_table: BTreeMap::new(),
            after_load: None,
        }
    }
}

/// Every metric of `c` divided by `n`, keyed by metric name.
pub fn per(c: &CauseCounts, n: u64) -> BTreeMap<String, f64> {
    let v = serde_json::to_value(c).expect("counts serialize");
    let n = n.max(1) as f64;
    v.as_object()
        .expect("counts are an object")
        .iter()
        .map(|(k, x)| (k.clone(), x.as_f64().unwrap_or(0.0) / n))
        .collect()
}

/// One measured phase of a named experiment (`mvcclab experiment`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Phase name (`first_update`, `select_before_gc`, `full_gc`, ...).
    pub name: String,
    /// Statements the phase ran (0 for `full_gc`).
    pub ops: u64,
    /// Wall time in seconds, the closing wait and checkpoint included.
    pub elapsed_s: f64,
    /// Every metric summed over all causes.
    pub total: CauseCounts,
    /// Every metric per cause.
    pub by_cause: BTreeMap<Cause, CauseCounts>,
    /// `total` per statement (all causes: foreground and the background work it caused).
    pub per_op: PerOpIo,
    /// Per statement, by cause.
    pub per_op_by_cause: BTreeMap<Cause, PerOpIo>,
    /// Row versions examined by reads, per statement.
    pub versions_traversed_per_op: f64,
    /// Table counters of the phase (pg_stat_user_tables names).
    pub tables: TableStats,
    /// Undo and purge counters of the phase.
    pub undo: EngineCounters,
    /// Pages at the end: (table or clustered index, secondary indexes).
    pub pages: (u64, u64),
    /// One sample per `--report-interval` of the phase, each named with the phase (empty
    /// with `--report-interval 0`); the counts add up to the phase's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeseries: Vec<Sample>,
    /// A real server's phase: its own counters and the device's counts by file class and
    /// process (absent for a design).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<PhaseServer>,
}

/// What a real server's phase of an experiment adds to the figures its counters fill.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseServer {
    /// The server's own counters over the phase under its own names (`pg_stat_wal.
    /// wal_bytes`, `global_status.Innodb_pages_written`, ...): counts `after − before`,
    /// the names in `state_counters` their value at the end.
    pub counters: BTreeMap<String, f64>,
    /// Names in `counters` that are state values.
    pub state_counters: Vec<String>,
    /// Fields of the phase (dotted, as `io.total.buffer_evictions`) the server's counters
    /// cannot fill: they are 0 and are not measurements.
    pub not_measured: Vec<String>,
    /// The device's counts of the phase per class of the server's files (as a run's
    /// `io.by_file_class`); empty off the FUSE device.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_file_class: BTreeMap<String, FileIo>,
    /// The same per kind of process (as a run's `io.by_process`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_process: BTreeMap<String, FileIo>,
}

/// One design's phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRun {
    /// Every switch of the design (for `version_chain`, the design of the first variant
    /// that ran: with `seed`, vacuum designs have `autovacuum` off; `update_autovacuum_on`
    /// ran with it on, the `gc_off_what_if` phases with `garbage_collection = off`).
    pub design: DesignConfig,
    /// Memory and device settings.
    pub device: DeviceInfo,
    /// The phases in the order they ran.
    pub phases: Vec<PhaseReport>,
    /// The metadata of each process that ran phases of this run, in phase order, when
    /// that was another process than the report's (`mvcclab report --merge`; absent in a
    /// local run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<RunMetadata>,
    /// A real server's section (version, settings, how the device was measured), without
    /// counters (those are per phase); absent for a design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
}

/// An experiment's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// Result schema version (shared with `run`/`compare`).
    pub schema_version: u32,
    /// Version of mvcclab that wrote it.
    pub mvcclab_version: String,
    /// `update_hot_set` or `version_chain`.
    pub experiment: String,
    /// Where, when and how the report was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RunMetadata>,
    /// The experiment's parameters (rows, updates, ...; flag names with `_`).
    pub parameters: serde_json::Value,
    /// True when Ctrl-C cut the experiment short.
    pub interrupted: bool,
    /// One entry per design.
    pub runs: Vec<ExperimentRun>,
    /// Preset / real ratios of every figure both sides have, per phase the two ran under
    /// the same name (`workload` holds the phase), for each preset run with the real
    /// server it models in the same report (as `mvcclab fidelity` computes them); empty
    /// without such a pair.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ratios: Vec<FidelityRow>,
}

/// One figure of one pair on one workload (`mvcclab fidelity`, docs/fidelity.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FidelityRow {
    /// sysbench workload.
    pub workload: String,
    /// The preset (`postgres`, `innodb`).
    pub preset: String,
    /// The real target (`real:postgresql`, `real:mariadb`).
    pub real: String,
    /// The figure, with its unit (`pool reads, 4 KiB blocks / txn`, ...).
    pub metric: String,
    /// The preset's value.
    pub preset_value: f64,
    /// The real server's value.
    pub real_value: f64,
    /// `preset_value / real_value`; null when the real value is 0.
    pub ratio: Option<f64>,
    /// Both values are 0, or (per-transaction figures) both below [`NOISE_FLOOR`]
    /// ([`NOISE_FLOOR_BYTES`] for bytes).
    pub equal_zero: bool,
    /// The ratio lies outside 0.8–1.25 (or one side is 0 and the other not).
    pub outside: bool,
    /// The scale of `mvcclab fidelity --scales` the pair ran at (`base`, `1m`, `4m`,
    /// `sweep`); absent in experiments' ratios and in reports from before the scale grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    /// How many pairs of runs the row sums up (`mvcclab fidelity --repeats`; 1 in reports
    /// from before it). With more than one, `preset_value` and `real_value` are the
    /// medians of each side's values and `ratio` the median of the pairs' ratios
    /// ([`FidelityRow::summarize`]).
    #[serde(default = "one_pair")]
    pub repeats: u32,
    /// The smallest and the largest of the pairs' ratios (the ratio itself with one pair;
    /// null when no pair has one).
    #[serde(default)]
    pub ratio_min: Option<f64>,
    /// See `ratio_min`.
    #[serde(default)]
    pub ratio_max: Option<f64>,
}

/// `FidelityRow::repeats` of a report from before `--repeats`.
fn one_pair() -> u32 {
    1
}

/// The median of `v` (the mean of the middle two for an even count); `None` when empty.
fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Per-transaction counts (blocks, pages, images) below this on both sides count as equal
/// (zero) for a ratio's flag ([`FidelityRow::of`]).
pub const NOISE_FLOOR: f64 = 0.05;

/// The same for per-transaction byte figures (WAL/redo bytes).
pub const NOISE_FLOOR_BYTES: f64 = 16.0;

impl FidelityRow {
    /// One figure `metric` of `preset` (value `a`) against `real` (value `b`) on `workload`
    /// (a sysbench workload, or an experiment's phase): the ratio `a / b`, flagged outside
    /// 0.8–1.25. Figures per transaction or statement (`metric` ending in `/ txn` or
    /// `/ stmt`) below [`NOISE_FLOOR`] on both sides ([`NOISE_FLOOR_BYTES`] for bytes), as a
    /// hint-bit write every thousand read-only transactions, count as equal.
    pub fn of(
        workload: &str,
        preset: &str,
        real: &str,
        metric: &str,
        a: f64,
        b: f64,
    ) -> FidelityRow {
        let ratio = (b != 0.0).then(|| a / b);
        let per = metric.ends_with("/ txn") || metric.ends_with("/ stmt");
        let floor = match (per, metric.contains("bytes")) {
            (true, true) => NOISE_FLOOR_BYTES,
            (true, false) => NOISE_FLOOR,
            (false, _) => 0.0,
        };
        let equal_zero = (a == 0.0 && b == 0.0) || (a.abs() < floor && b.abs() < floor);
        let outside = !equal_zero && ratio.is_none_or(|x| !(0.8..=1.25).contains(&x));
        FidelityRow {
            workload: workload.to_string(),
            preset: preset.to_string(),
            real: real.to_string(),
            metric: metric.to_string(),
            preset_value: a,
            real_value: b,
            ratio,
            equal_zero,
            outside,
            scale: None,
            repeats: 1,
            ratio_min: ratio,
            ratio_max: ratio,
        }
    }

    /// One row for the rows of one figure over several pairs of runs (same scale,
    /// workload, preset, real target and metric; at least one): each side's median value,
    /// the median of the pairs' ratios (of those that have one) with their range, equal
    /// when every pair is, and flagged as [`FidelityRow::of`] flags the median ratio
    /// (or when no pair has a ratio). The first row gives the names; `None` for no rows.
    pub fn summarize(pairs: &[FidelityRow]) -> Option<FidelityRow> {
        let first = pairs.first()?;
        if pairs.len() == 1 {
            return Some(first.clone());
        }
        let mut preset: Vec<f64> = pairs.iter().map(|r| r.preset_value).collect();
        let mut real: Vec<f64> = pairs.iter().map(|r| r.real_value).collect();
        let mut ratios: Vec<f64> = pairs.iter().filter_map(|r| r.ratio).collect();
        let equal_zero = pairs.iter().all(|r| r.equal_zero);
        let ratio = median(&mut ratios);
        let outside = !equal_zero && ratio.is_none_or(|x| !(0.8..=1.25).contains(&x));
        Some(FidelityRow {
            preset_value: median(&mut preset).unwrap_or(0.0),
            real_value: median(&mut real).unwrap_or(0.0),
            ratio,
            equal_zero,
            outside,
            repeats: pairs.iter().map(|r| r.repeats).sum(),
            ratio_min: ratios.first().copied(),
            ratio_max: ratios.last().copied(),
            ..first.clone()
        })
    }

    /// `rows` with the rows of each figure (same scale, workload, preset, real target and
    /// metric) summed up in one ([`FidelityRow::summarize`]), in the order the figures
    /// first appear; rows of a single pair are returned as they are.
    pub fn summarize_repeats(rows: &[FidelityRow]) -> Vec<FidelityRow> {
        let key = |r: &FidelityRow| {
            (
                r.scale.clone(),
                r.workload.clone(),
                r.preset.clone(),
                r.real.clone(),
                r.metric.clone(),
            )
        };
        let mut groups: Vec<(_, Vec<FidelityRow>)> = Vec::new();
        for r in rows {
            let k = key(r);
            match groups.iter_mut().find(|(g, _)| *g == k) {
                Some((_, v)) => v.push(r.clone()),
                None => groups.push((k, vec![r.clone()])),
            }
        }
        groups
            .iter()
            .filter_map(|(_, v)| Self::summarize(v))
            .collect()
    }
}

/// The figures an experiment's ratio table compares, per statement of a phase (totals for
/// a phase without statements): (name, value of a phase with its page size in bytes,
/// applies to this preset).
type PhaseMetric = (
    &'static str,
    fn(&PhaseReport, u64) -> Option<f64>,
    fn(&str) -> bool,
);

/// `v` per statement of `p` (the total when it ran none).
fn per_stmt(p: &PhaseReport, v: u64) -> f64 {
    v as f64 / p.ops.max(1) as f64
}

/// Whether the report field `field` of `p` is a measurement (a real server lists the
/// fields its counters cannot fill).
fn measured(p: &PhaseReport, field: &str) -> bool {
    p.server
        .as_ref()
        .is_none_or(|s| !s.not_measured.iter().any(|n| n == field))
}

const PHASE_METRICS: &[PhaseMetric] = &[
    (
        "device reads, 4 KiB blocks / stmt",
        |p, _| measured(p, "io.total.read_blocks_4k").then(|| per_stmt(p, p.total.read_blocks_4k)),
        |_| true,
    ),
    (
        "device writes, 4 KiB blocks / stmt",
        |p, _| {
            measured(p, "io.total.write_blocks_4k").then(|| per_stmt(p, p.total.write_blocks_4k))
        },
        |_| true,
    ),
    (
        "device read requests / stmt",
        |p, _| measured(p, "io.total.read_requests").then(|| per_stmt(p, p.total.read_requests)),
        |_| true,
    ),
    (
        "device write requests / stmt",
        |p, _| measured(p, "io.total.write_requests").then(|| per_stmt(p, p.total.write_requests)),
        |_| true,
    ),
    (
        "pool reads, 4 KiB blocks / stmt",
        |p, page| Some(per_stmt(p, p.total.buffer_misses) * page as f64 / 4096.0),
        |_| true,
    ),
    (
        "pool writes, 4 KiB blocks / stmt",
        |p, page| Some(per_stmt(p, p.total.buffer_pages_written) * page as f64 / 4096.0),
        |_| true,
    ),
    (
        "WAL/redo bytes / stmt",
        |p, _| Some(per_stmt(p, p.total.wal_bytes)),
        |_| true,
    ),
    (
        "full-page images / stmt",
        |p, _| Some(per_stmt(p, p.total.wal_fpi)),
        |d| d == "postgres",
    ),
    (
        "HOT share of updates",
        |p, _| {
            (p.tables.n_tup_upd > 0)
                .then(|| p.tables.n_tup_hot_upd as f64 / p.tables.n_tup_upd as f64)
        },
        |d| d == "postgres",
    ),
    (
        "doublewrite pages / stmt",
        |p, _| Some(per_stmt(p, p.total.doublewrite_pages)),
        |d| d == "innodb",
    ),
    (
        "table pages at end",
        |p, _| Some(p.pages.0 as f64),
        |_| true,
    ),
    (
        "index pages at end",
        |p, _| Some(p.pages.1 as f64),
        |_| true,
    ),
];

/// The preset / real ratios of `runs`: every preset run beside the real server it models
/// at the same bandwidth, phase by phase where both ran a phase of that name.
pub fn experiment_ratios(runs: &[ExperimentRun]) -> Vec<FidelityRow> {
    let mut out = Vec::new();
    for preset in runs {
        // A run of one of an experiment's variants is named `PRESET/VARIANT...`
        // (system_versioning: `innodb/timestamp/big_pool`); its real counterpart
        // `real:NAME/VARIANT...`.
        let (base, suffix) = match preset.design.name.split_once('/') {
            Some((b, s)) => (b, Some(s)),
            None => (preset.design.name.as_str(), None),
        };
        let Some(kind) = mvcclab_servers::ServerKind::of_preset(base) else {
            continue;
        };
        let real_name = match suffix {
            Some(s) => format!("{}/{s}", kind.design_name()),
            None => kind.design_name(),
        };
        let Some(real) = runs.iter().find(|r| {
            r.design.name == real_name && r.device.bandwidth_mib_s == preset.device.bandwidth_mib_s
        }) else {
            continue;
        };
        for p in &preset.phases {
            let Some(q) = real.phases.iter().find(|q| q.name == p.name) else {
                continue;
            };
            for (metric, value, applies) in PHASE_METRICS {
                if !applies(base) {
                    continue;
                }
                let (Some(a), Some(b)) = (
                    value(p, preset.device.page_size_bytes),
                    value(q, real.device.page_size_bytes),
                ) else {
                    continue;
                };
                out.push(FidelityRow::of(
                    &p.name,
                    &preset.design.name,
                    &real.design.name,
                    metric,
                    a,
                    b,
                ));
            }
        }
    }
    out
}

/// What `mvcclab fidelity` reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FidelityReport {
    /// The ratios.
    pub rows: Vec<FidelityRow>,
    /// One command per workload and pair that reproduces its two runs.
    pub commands: Vec<String>,
    /// Every run in the result schema (docs/results.md).
    pub report: Report,
    /// The scales of `--scales` in the order they ran; absent in reports from before the
    /// scale grid (one scale, the flags').
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scales: Vec<FidelityScale>,
}

/// One scale of `mvcclab fidelity --scales`: the size, threads and memory both sides of
/// every pair ran with (docs/fidelity.md, "Scale grid").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FidelityScale {
    /// `base`, `1m`, `4m` or `sweep`.
    pub name: String,
    /// sysbench tables.
    pub tables: u32,
    /// Rows per table.
    pub table_size: u32,
    /// Client threads.
    pub threads: u32,
    /// Buffer pool and OS page cache per preset; its real server gets the same
    /// (`shared_buffers`, `innodb_buffer_pool_size`; the OS cache bounds real PostgreSQL's
    /// page cache only with `bound_os_cache`).
    pub memory: Vec<ScaleMemory>,
    /// Real PostgreSQL's page cache bounded by a memory cgroup (`--bound-os-cache`).
    pub bound_os_cache: bool,
}

/// A preset's memory at one [`FidelityScale`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScaleMemory {
    /// The preset (`postgres`, `innodb`).
    pub preset: String,
    /// Buffer pool in bytes.
    pub buffer_pool_bytes: u64,
    /// Emulated OS page cache in bytes (used by designs that have one: postgres).
    pub os_cache_bytes: u64,
}

impl FidelityScale {
    /// (buffer pool, OS cache) bytes of `preset` at this scale; (0, 0) for a preset the
    /// scale does not list.
    pub fn memory_of(&self, preset: &str) -> (u64, u64) {
        self.memory
            .iter()
            .find(|m| m.preset == preset)
            .map_or((0, 0), |m| (m.buffer_pool_bytes, m.os_cache_bytes))
    }

    /// The scale as one line: rows, threads and each preset's memory.
    pub fn shape(&self) -> String {
        let mib = |b: u64| crate::units::format_size_bytes(b);
        let memory: Vec<String> = self
            .memory
            .iter()
            .map(|m| {
                if m.preset == "postgres" {
                    format!(
                        "{}: pool {} + OS cache {}",
                        m.preset,
                        mib(m.buffer_pool_bytes),
                        mib(m.os_cache_bytes)
                    )
                } else {
                    format!("{}: pool {}", m.preset, mib(m.buffer_pool_bytes))
                }
            })
            .collect();
        format!(
            "{} × {} rows, {} threads; {}{}",
            self.tables,
            self.table_size,
            self.threads,
            memory.join(", "),
            if self.bound_os_cache {
                "; real PostgreSQL's page cache bounded"
            } else {
                ""
            }
        )
    }
}

/// The grid a point belongs to: what every point of one sweep shares (`--shard`,
/// docs/experiments.md "Sweeps across machines").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridInfo {
    /// The command that defines the grid: `run`, `compare`, `experiment update_hot_set`,
    /// `experiment version_chain`.
    pub command: String,
    /// Every parameter the points share (workload, driver, device, designs, bandwidths,
    /// ...; not the output flags, `--shard` or `--data-dir`), as a JSON object.
    pub parameters: serde_json::Value,
    /// The points in their stable order, each as `NAME design[/variant][ @ B MiB/s]`.
    pub points: Vec<String>,
}

/// One point of a grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointInfo {
    /// Its place in the grid's order, from 0.
    pub index: usize,
    /// Its stable name: the first 12 hex digits of the SHA-256 of the grid's parameters
    /// and its own (design, variant, bandwidth).
    pub name: String,
    /// The design (or `real:NAME`).
    pub design: String,
    /// The experiment's variant (`seed`, `autovacuum_on`, `gc_off_what_if` for `version_chain`; empty where the
    /// command has none).
    pub variant: String,
    /// Device bandwidth in MiB/s (null = unthrottled).
    pub bandwidth_mib_s: Option<f64>,
}

/// One grid point's report, as `--shard I/N` writes it into `--report DIR`
/// (`point-INDEX-NAME.json`) and `mvcclab report --merge` reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointReport {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Version of mvcclab that wrote it.
    pub mvcclab_version: String,
    /// The git commit mvcclab was built from (as `metadata.git_commit`).
    pub git_commit: String,
    /// The grid.
    pub grid: GridInfo,
    /// The point.
    pub point: PointInfo,
    /// `run`/`compare`: a report holding this point's one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// An experiment: its report holding this point's one run (the variant's phases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<ExperimentReport>,
}
