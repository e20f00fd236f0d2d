//! The settings of a run as flags, shared by `run`, `compare`, `fidelity` and the
//! experiments: the workload (sysbench 1.0.20's option names, `oltp_common.lua`), the
//! driver (threads, time, events, warm-up, rate), memory and device, the real servers,
//! and the report's format and destination.

use crate::export::OutputArgs;
use crate::result::DriverInfo;
use crate::units::parse_size_bytes;
use clap::Args;
use mvcclab_engine::device::Compression;
use mvcclab_workload::driver::IgnoreErrors;
use mvcclab_workload::rand::RandType;
use mvcclab_workload::sysbench::SysbenchOptions;
use std::path::PathBuf;

/// Flags shared by `run` and `compare` (sysbench's names where sysbench has them).
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Workload: oltp_read_write, oltp_read_only, oltp_write_only, oltp_point_select,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete,
    /// select_random_points, select_random_ranges; tpcc (Percona-Lab/sysbench-tpcc:
    /// --tables table sets of nine tables, --scale warehouses each); tpch (`run` only: one
    /// TPC-H query, --query, --scale-factor, --query-timeout).
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
    /// tpcc: warehouses per table set (sysbench-tpcc --scale; its default is 100, about
    /// 10 GB per set on PostgreSQL).
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
    /// Fill factor in percent (10..=100) of every table and index: on heap designs
    /// (postgres) PostgreSQL's heap `fillfactor` and B-tree `fillfactor` (the switches
    /// fillfactor and index_fillfactor); on clustered designs (innodb) MariaDB's
    /// innodb_fill_factor (index_fillfactor), which only sets the fill of sorted index
    /// builds: not the same knob (docs/experiments.md). Unset: the designs' own values.
    #[arg(long)]
    pub fillfactor: Option<u8>,
    /// tpcc: declare the foreign keys (sysbench-tpcc --use_fk; mvcclab does not enforce
    /// them).
    #[arg(long, default_value = "on", value_parser = parse_on_off)]
    pub use_fk: bool,
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
    /// Average transaction rate of the warm-up in events per second, Poisson arrivals as
    /// `--rate`; 0 = as fast as the threads go; not given = the warm-up runs at `--rate`.
    /// `mvcclab fidelity` sets it to the real server's warm-up TPS for the preset, so that
    /// both sides' warm-ups run the same number of transactions (`results.warmup`).
    #[arg(long, value_name = "TPS", value_parser = parse_rate)]
    pub warmup_rate: Option<f64>,
    /// Errors that end an event (rolled back, counted by kind in `results.errors_by_kind`,
    /// the event restarted) instead of stopping the run: `default` (sysbench's drivers:
    /// PostgreSQL SQLSTATEs 40P01, 23505, 40001; MariaDB errors 1213, 1020, 1205), `all`
    /// (sysbench's --mysql-ignore-errors=all), or SQLSTATEs / MariaDB error numbers
    /// separated by commas, ignored beside the defaults. Any other error stops the run with
    /// exit code 1 and a message naming it.
    #[arg(long, default_value = "default", value_parser = IgnoreErrors::parse)]
    pub ignore_errors: IgnoreErrors,
    /// For tests (hidden): every N-th table operation of each session of the measured phase
    /// goes to the missing table sbtest0, an error no sysbench driver ignores (workload
    /// fault.rs `FaultTarget`); 0 = off.
    #[arg(long, hide = true, default_value_t = 0)]
    pub inject_error_every_ops: u64,
    /// Seconds per sample of the measured phase's time series (`results.timeseries`:
    /// transactions, latency, 4 KiB blocks by cause, MiB/s, ...) and of the progress
    /// line's rates, as sysbench's --report-interval; 0 = no time series.
    #[arg(long, default_value_t = 1.0, value_parser = parse_report_interval)]
    pub report_interval: f64,
    /// Memory and device.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Real servers (`real:postgresql`, `real:mariadb`, `real:myrocks`).
    #[command(flatten)]
    pub server: ServerArgs,
    /// Report format and destination.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// A bandwidth in MiB/s: a finite number above 0 (clap value parser).
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(b) if b.is_finite() && b > 0.0 => Ok(b),
        _ => Err(format!(
            "'{s}' is not a bandwidth in MiB/s (a number above 0)"
        )),
    }
}

/// A finite number, 0 or more; else the error "'s' is not `what`".
fn parse_non_negative(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not {what}")),
    }
}

/// A transaction rate (`--warmup-rate`): events per second, a finite number, 0 or more.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    parse_non_negative(
        s,
        "a transaction rate: events per second, 0 (no limit) or more",
    )
}

/// `--report-interval`: seconds, 0 or more.
pub fn parse_report_interval(s: &str) -> Result<f64, String> {
    parse_non_negative(
        s,
        "a report interval in seconds (0 = no time series, or a number above 0)",
    )
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
    /// comma-separated, make one run per design and bandwidth (TPS versus bandwidth), each
    /// design loaded once and every run started from that load (a preset's device
    /// reopened copy-on-write, a managed server's data directory copied back; not with
    /// --data-dir, --url or tpcc, which load per run).
    #[arg(long, value_delimiter = ',', value_parser = parse_bandwidth)]
    pub bandwidth: Vec<f64>,
    /// Device latency per request in µs.
    #[arg(long)]
    pub latency_us: Option<u64>,
    /// Transparent compression of the device: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<Compression>())]
    pub compression: Compression,
    /// Present the device as rotational (a hard disk's `queue/rotational` = 1) instead of
    /// an NVMe SSD. It changes no timing; engines read it: the innodb preset then flushes a
    /// page's dirty neighbours (design switch `flush_neighbors`), as MariaDB does only on
    /// rotational storage. For a real server it needs `--fuse-mode block-device` (the loop
    /// device is marked rotational), or no FUSE device and `--server-dir` (default: the
    /// temp directory) on a rotational disk: the server then sees that disk (a loop device
    /// of `--exact-device-io` takes its flag), whose flag its report records; otherwise a
    /// usage error.
    #[arg(long)]
    pub rotational: bool,
    /// Keep each design's database under this directory (default: in memory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Run the storage without its timed background work: no page cleaner, no WAL writer,
    /// no timed or WAL-volume checkpoints (the engine's `StorageConfig::without_background`;
    /// the design's vacuum or purge still run). Counts then depend far less on timing: for
    /// tests and comparisons of counts, not for figures about the real engines.
    #[arg(long)]
    pub no_background: bool,
    /// Give a postgres-style preset (full-page writes) the checkpoint schedule of a
    /// managed PostgreSQL: `checkpoint_timeout` 1 day and `max_wal_size` 100 GB
    /// (`mvcclab_servers::managed::PG_CHECKPOINT_TIMEOUT_S`, `PG_MAX_WAL_SIZE_BYTES`), so
    /// no timed checkpoint falls inside a phase on either side; other presets get no timed
    /// checkpoint (InnoDB has none: it checkpoints as its redo log fills, log0log.cc
    /// `log_checkpoint_margin`) and keep their WAL-volume trigger. Not a flag: set by
    /// `experiment update_hot_set` and `version_chain`, whose presets run beside real
    /// servers (issue 24: a paced 1,333 s phase had four timed checkpoints on the preset
    /// and none on the server).
    #[arg(skip)]
    pub checkpoints_as_managed_postgresql: bool,
}

impl DeviceArgs {
    /// The flags as a grid's shared parameters (bench/grid.rs): every one but
    /// `--data-dir`, which may differ from machine to machine.
    pub fn grid_parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "buffer_pool_bytes": self.buffer_pool,
            "os_cache_bytes": self.os_cache,
            "bandwidth_mib_s": self.bandwidth,
            "latency_us": self.latency_us,
            "compression": self.compression,
            "rotational": self.rotational,
            "no_background": self.no_background,
        })
    }
}

/// Flags of the real-server targets (`--target postgresql|mariadb`, `real:NAME` designs).
#[derive(Args, Debug, Clone)]
pub struct ServerArgs {
    /// Use this existing server instead of starting one (postgresql://user@host:port/db or
    /// mysql://user:password@host:port/db); repeat for both engines.
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// Drop the OS page cache after the load and checkpoint, before the warm-up: of a
    /// managed server's own files (posix_fadvise DONTNEED, other processes' cache kept), or
    /// the whole machine's for a `--url` server (root).
    #[arg(long)]
    pub drop_caches: bool,
    /// Put each managed server's files on a loop device of its own and report its exact
    /// device I/O from /sys/block (root). The older way of counting a real server's I/O,
    /// for machines without FUSE; not with the FUSE device.
    #[arg(long)]
    pub exact_device_io: bool,
    /// Put each managed server's data directory (WAL and redo log included) on mvcclab's
    /// virtual NVMe device, mounted through FUSE (root, /dev/fuse, fusermount3 from
    /// Debian's fuse3), unthrottled; --bandwidth, --latency-us and --compression imply it
    /// and shape that device. The load runs unthrottled; the throttle applies from the
    /// warm-up on. The report's io section then holds the device's counts, by file class
    /// and by process; --data-dir keeps the device's bytes in a directory instead of memory.
    #[arg(long)]
    pub fuse_device: bool,
    /// How a server sits on the FUSE device: file-system (its files are files of the
    /// mount: exact per-file counts, no file-system journal or metadata I/O) or
    /// block-device (as NVMeVirt: one image file on the mount, a loop device over it with
    /// direct I/O and rotational 0, ext4 on it, the server on ext4: journal and metadata
    /// included, blocks mapped to files by their extents, the rest as fs_metadata).
    #[arg(long, value_name = "MODE", default_value = "file-system", value_parser = ["file-system", "block-device"])]
    pub fuse_mode: String,
    /// Folder for managed servers' folders (default: the system's temp directory).
    #[arg(long, value_name = "DIR")]
    pub server_dir: Option<PathBuf>,
    /// Bound a managed PostgreSQL's page cache to --os-cache, as the preset's emulated OS
    /// cache, with a memory cgroup (v1, root): started with no limit (the load is not
    /// measured), then after the load and at the start of each measured phase the limit
    /// is set to the server's own memory measured then (usage - active_file -
    /// inactive_file: shared buffers, processes, kernel) + --os-cache (experiment
    /// bandwidth_sweep sets it). MariaDB (O_DIRECT) is not bounded.
    #[arg(long)]
    pub bound_os_cache: bool,
}

/// Memory a cgroup-bounded PostgreSQL gets at start-up beyond shared_buffers and the OS
/// cache, for its processes' private memory (an estimate, not a measurement): the
/// whole-run limit of `experiment tpch_q18`. `--bound-os-cache` runs start with no limit
/// and replace it by the measured memory (`ManagedServer::bound_page_cache`).
pub const SERVER_HEADROOM_BYTES: u64 = 96 << 20;

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
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
        scale: c.scale,
        use_fk: c.use_fk,
        ..Default::default()
    };
    o.rand.rand_type = c.rand_type;
    o.rand.rand_spec_iter = c.rand_spec_iter;
    o.rand.rand_spec_pct = c.rand_spec_pct;
    o.rand.rand_spec_res = c.rand_spec_res;
    o.rand.rand_pareto_h = c.rand_pareto_h;
    o
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
        warmup_rate_tps: c.warmup_rate,
        report_interval_s: c.report_interval,
        ignore_errors: c.ignore_errors.clone(),
    }
}
