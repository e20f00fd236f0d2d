//! `mvcclab run` and `mvcclab compare`: a sysbench workload on one or more designs, with
//! every 4 KiB block of I/O per transaction and per cause.

use crate::output::{emit, Format};
use crate::units::parse_size_bytes;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::db::{Database, DatabaseConfig, EngineCounters};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{Compression, ThrottleConfig};
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{CauseCounts, Counters};
use mvcclab_engine::storage::Backing;
use mvcclab_workload::driver::{run as drive, RunOptions, RunResult, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::rand::RandType;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
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
    /// Range SELECTs on or off.
    #[arg(long, default_value = "on", value_parser = parse_on_off)]
    pub range_selects: bool,
    /// Autocommit every statement (no BEGIN/COMMIT).
    #[arg(long, default_value = "off", value_parser = parse_on_off)]
    pub skip_trx: bool,
    /// Random distribution: uniform, gaussian, special, pareto.
    #[arg(long, default_value = "special", value_parser = |s: &str| s.parse::<RandType>())]
    pub rand_type: RandType,
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
    /// Buffer pool size.
    #[arg(long, default_value = "8MiB", value_parser = parse_size_bytes)]
    pub buffer_pool: u64,
    /// Emulated OS page cache for designs that have one (0 = off for every design).
    #[arg(long, default_value = "64MiB", value_parser = parse_size_bytes)]
    pub os_cache: u64,
    /// Device bandwidth in MiB/s, read and write (unset = unthrottled).
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// Device latency per request in µs.
    #[arg(long)]
    pub latency_us: Option<u64>,
    /// Transparent compression of the device: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<Compression>())]
    pub compression: Compression,
    /// Keep each design's database under this directory (default: in memory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the report here; `-` is standard output.
    #[arg(long, default_value = "-")]
    pub output: String,
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
    /// Design: a preset (postgres, innodb).
    #[arg(long, default_value = "postgres")]
    pub design: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags of `mvcclab compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Designs to compare, comma-separated.
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// I/O of a run, per transaction and per cause.
#[derive(Serialize)]
pub struct Io {
    /// Totals over all causes.
    pub total: CauseCounts,
    /// Every count per cause.
    pub by_cause: Counters,
    /// 4 KiB blocks read per transaction, all causes.
    pub read_blocks_4k_per_txn: f64,
    /// 4 KiB blocks written per transaction, all causes.
    pub write_blocks_4k_per_txn: f64,
    /// Device requests per transaction.
    pub requests_per_txn: f64,
    /// WAL / redo bytes per transaction.
    pub wal_bytes_per_txn: f64,
    /// Foreground 4 KiB blocks (read + written) per operation of each kind.
    pub fg_blocks_4k_per_op: BTreeMap<String, f64>,
}

/// One design's result (schema version 1; docs/results.md describes every field).
#[derive(Serialize)]
pub struct DesignResult {
    /// Result schema version.
    pub schema_version: u32,
    /// Target: `embedded`.
    pub target: String,
    /// Every switch value.
    pub design: DesignConfig,
    /// Workload name.
    pub workload: String,
    /// Workload options.
    pub workload_options: SysbenchOptions,
    /// Driver options.
    pub run: RunOptions,
    /// Device and memory settings.
    pub storage: serde_json::Value,
    /// Transactions, queries, errors, latencies.
    pub results: RunResult,
    /// I/O.
    pub io: Io,
    /// Per-table counters, summed over the sbtest tables.
    pub tables: TableStats,
    /// Design-wide counters (undo, purge, history list).
    pub engine: EngineCounters,
    /// Pages: (table or clustered index, other indexes), summed.
    pub pages: (u64, u64),
    /// Device space: logical and physical bytes (physical only with compression).
    pub compression: mvcclab_engine::device::CompressionTotals,
}

fn apply_set(design: &mut DesignConfig, set: &[String]) -> Result<()> {
    let mut v = serde_json::to_value(&*design)?;
    for s in set {
        let (k, val) = s
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--set '{s}': expected SWITCH=VALUE")))?;
        design
            .switch_value(k)
            .map_err(|e| UsageError(format!("--set {s}: {e}")))?;
        let parsed = match val {
            "on" => serde_json::Value::Bool(true),
            "off" => serde_json::Value::Bool(false),
            _ => val
                .parse::<u64>()
                .map(serde_json::Value::from)
                .unwrap_or_else(|_| serde_json::Value::String(val.to_string())),
        };
        v[k] = parsed;
    }
    *design = serde_json::from_value(v).map_err(|e| UsageError(format!("--set: {e}")))?;
    design.validate().map_err(|e| UsageError(e.to_string()))?;
    Ok(())
}

fn sysbench_options(c: &CommonArgs) -> SysbenchOptions {
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
        ..Default::default()
    };
    o.rand.rand_type = c.rand_type;
    o
}

/// Runs one design and returns its result.
pub fn run_design(design_name: &str, c: &CommonArgs) -> Result<DesignResult> {
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    let mut design = DesignConfig::preset(design_name).map_err(|e| UsageError(e.to_string()))?;
    apply_set(&mut design, &c.set)?;
    if c.tables == 0 || c.table_size == 0 {
        return Err(UsageError("--tables and --table-size must be at least 1".into()).into());
    }
    let mut cfg = DatabaseConfig::new(design.clone());
    let page = design.page_size.bytes() as u64;
    cfg.storage.buffer_pool.frames = (c.buffer_pool / page).max(16) as usize;
    cfg.storage.os_cache.size_bytes = if design.os_page_cache { c.os_cache } else { 0 };
    cfg.storage.nvme.compression = c.compression;
    cfg.storage.nvme.throttle = ThrottleConfig {
        read_mib_s: c.bandwidth,
        write_mib_s: c.bandwidth,
        latency_us: c.latency_us,
        queue_depth: None,
    };
    if let Some(dir) = &c.data_dir {
        let d = dir.join(&design.name);
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("clearing {}", d.display()))?;
        }
        cfg.storage.backing = Backing::Directory {
            path: d,
            direct: false,
        };
    }
    let storage_json = serde_json::to_value(&cfg.storage)?;
    let db = Arc::new(Database::open(cfg).map_err(|e| UsageError(e.to_string()))?);
    let target = Embedded::new(db.clone());
    let opts = sysbench_options(c);
    target
        .prepare(&opts, c.rand_seed)
        .map_err(|e| anyhow::anyhow!("prepare: {e}"))?;
    db.storage().checkpoint()?;
    let stop = AtomicBool::new(false);
    if c.warmup > 0.0 {
        drive(
            &target,
            kind,
            &opts,
            &RunOptions {
                threads: c.threads,
                time_s: c.warmup,
                events: 0,
                rand_seed: c.rand_seed ^ 0xA5A5,
            },
            &stop,
        )
        .map_err(UsageError)?;
    }
    let tables: Vec<_> = (1..=c.tables)
        .map(|n| db.table_id(&format!("sbtest{n}")))
        .collect::<Result<_, _>>()?;
    let stats_before: Vec<TableStats> = tables
        .iter()
        .map(|&t| db.table_stats(t))
        .collect::<Result<_, _>>()?;
    let before = db.storage().snapshot();
    let run_opts = RunOptions {
        threads: c.threads,
        time_s: c.time,
        events: c.events,
        rand_seed: c.rand_seed,
    };
    let results = drive(&target, kind, &opts, &run_opts, &stop).map_err(UsageError)?;
    let snap = db.storage().snapshot();
    let d = snap.delta(&before);
    let total = d.counters.total();
    let txns = results.transactions.max(1) as f64;
    let mut fg_per_op = BTreeMap::new();
    for (cause, cc) in &d.counters.by_cause {
        if !cause.is_background() {
            let ops: u64 = match cause.name() {
                "point_select" => results
                    .ops_by_kind
                    .get("point_select")
                    .copied()
                    .unwrap_or(0),
                "range_scan" => ["simple_range", "sum_range", "order_range", "distinct_range"]
                    .iter()
                    .map(|k| results.ops_by_kind.get(*k).copied().unwrap_or(0))
                    .sum(),
                "update" => ["index_update", "non_index_update"]
                    .iter()
                    .map(|k| results.ops_by_kind.get(*k).copied().unwrap_or(0))
                    .sum(),
                "insert" => results.ops_by_kind.get("insert").copied().unwrap_or(0),
                "delete" => results.ops_by_kind.get("delete").copied().unwrap_or(0),
                "commit" => results
                    .ops_by_kind
                    .get("commit")
                    .copied()
                    .unwrap_or(results.transactions),
                _ => 0,
            };
            if ops > 0 {
                fg_per_op.insert(
                    cause.name().to_string(),
                    (cc.read_blocks_4k + cc.write_blocks_4k) as f64 / ops as f64,
                );
            }
        }
    }
    let mut tstats = TableStats::default();
    let mut pages = (0, 0);
    for (i, &t) in tables.iter().enumerate() {
        let a = db.table_stats(t)?;
        let b = &stats_before[i];
        tstats.n_tup_ins += a.n_tup_ins - b.n_tup_ins;
        tstats.n_tup_upd += a.n_tup_upd - b.n_tup_upd;
        tstats.n_tup_hot_upd += a.n_tup_hot_upd - b.n_tup_hot_upd;
        tstats.n_tup_del += a.n_tup_del - b.n_tup_del;
        tstats.n_live_tup += a.n_live_tup;
        tstats.n_dead_tup += a.n_dead_tup;
        tstats.vacuum_count += a.vacuum_count - b.vacuum_count;
        tstats.autovacuum_count += a.autovacuum_count - b.autovacuum_count;
        tstats.heap_blks_hit += a.heap_blks_hit - b.heap_blks_hit;
        tstats.heap_blks_read += a.heap_blks_read - b.heap_blks_read;
        tstats.idx_blks_hit += a.idx_blks_hit - b.idx_blks_hit;
        tstats.idx_blks_read += a.idx_blks_read - b.idx_blks_read;
        tstats.index_entries_inserted += a.index_entries_inserted - b.index_entries_inserted;
        tstats.versions_traversed += a.versions_traversed - b.versions_traversed;
        tstats.pages_pruned += a.pages_pruned - b.pages_pruned;
        tstats.hint_bit_writes += a.hint_bit_writes - b.hint_bit_writes;
        let (p, i2) = db.table_pages(t)?;
        pages.0 += p;
        pages.1 += i2;
    }
    let io = Io {
        read_blocks_4k_per_txn: total.read_blocks_4k as f64 / txns,
        write_blocks_4k_per_txn: total.write_blocks_4k as f64 / txns,
        requests_per_txn: (total.read_requests + total.write_requests) as f64 / txns,
        wal_bytes_per_txn: total.wal_bytes as f64 / txns,
        fg_blocks_4k_per_op: fg_per_op,
        total,
        by_cause: d.counters,
    };
    let engine = db.engine_counters();
    Ok(DesignResult {
        schema_version: 1,
        target: "embedded".into(),
        design,
        workload: kind.name().into(),
        workload_options: opts,
        run: run_opts,
        storage: storage_json,
        results,
        io,
        tables: tstats,
        engine,
        pages,
        compression: snap.compression,
    })
}

fn table(results: &[DesignResult]) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: &str, f: &dyn Fn(&DesignResult) -> String| {
        rows.push((name.to_string(), results.iter().map(f).collect()))
    };
    add("transactions", &|r| r.results.transactions.to_string());
    add("tps", &|r| format!("{:.1}", r.results.tps));
    add("qps", &|r| format!("{:.1}", r.results.qps));
    add("errors", &|r| r.results.errors.to_string());
    add("event latency p95 (ms)", &|r| {
        r.results
            .latency
            .get("event")
            .map_or("-".into(), |l| format!("{:.3}", l.p95_ms))
    });
    add("4 KiB blocks read / txn", &|r| {
        format!("{:.2}", r.io.read_blocks_4k_per_txn)
    });
    add("4 KiB blocks written / txn", &|r| {
        format!("{:.2}", r.io.write_blocks_4k_per_txn)
    });
    add("device requests / txn", &|r| {
        format!("{:.2}", r.io.requests_per_txn)
    });
    add("WAL/redo bytes / txn", &|r| {
        format!("{:.0}", r.io.wal_bytes_per_txn)
    });
    add("full-page images / txn", &|r| {
        format!(
            "{:.3}",
            r.io.total.wal_fpi as f64 / r.results.transactions.max(1) as f64
        )
    });
    add("doublewrite pages / txn", &|r| {
        format!(
            "{:.3}",
            r.io.total.doublewrite_pages as f64 / r.results.transactions.max(1) as f64
        )
    });
    add("buffer hit ratio", &|r| {
        let t = &r.io.total;
        format!(
            "{:.4}",
            t.buffer_hits as f64 / (t.buffer_hits + t.buffer_misses).max(1) as f64
        )
    });
    add("HOT updates / updates", &|r| {
        format!("{}/{}", r.tables.n_tup_hot_upd, r.tables.n_tup_upd)
    });
    add("index entries inserted", &|r| {
        r.tables.index_entries_inserted.to_string()
    });
    add("versions traversed", &|r| {
        r.tables.versions_traversed.to_string()
    });
    add("history list length (peak)", &|r| {
        r.engine.history_list_length_peak.to_string()
    });
    add("pages (table, indexes)", &|r| {
        format!("{}, {}", r.pages.0, r.pages.1)
    });
    let mut causes: Vec<String> = results
        .iter()
        .flat_map(|r| r.io.by_cause.by_cause.keys().map(|c| c.name().to_string()))
        .collect();
    causes.sort();
    causes.dedup();
    for c in causes {
        add(&format!("blocks r/w / txn: {c}"), &|r| {
            let cc =
                r.io.by_cause
                    .by_cause
                    .iter()
                    .find(|(k, _)| k.name() == c)
                    .map(|(_, v)| *v)
                    .unwrap_or_default();
            let t = r.results.transactions.max(1) as f64;
            format!(
                "{:.2}/{:.2}",
                cc.read_blocks_4k as f64 / t,
                cc.write_blocks_4k as f64 / t
            )
        });
    }
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(10).max(6);
    let mut out = format!(
        "workload {} ({} rows × {} tables, {} threads, {:.0} s)\n\n{:<w0$}",
        results[0].workload,
        results[0].workload_options.table_size,
        results[0].workload_options.tables,
        results[0].run.threads,
        results[0].results.elapsed_s,
        "",
    );
    for r in results {
        out += &format!(" {:>18}", r.design.name);
    }
    out += "\n";
    for (name, vals) in rows {
        out += &format!("{name:<w0$}");
        for v in vals {
            out += &format!(" {v:>18}");
        }
        out += "\n";
    }
    out
}

/// `mvcclab run`.
pub fn run(a: RunArgs) -> Result<()> {
    let r = run_design(&a.design, &a.common)?;
    let text = match a.common.format {
        Format::Json => serde_json::to_string_pretty(&r)? + "\n",
        Format::Table => table(std::slice::from_ref(&r)),
    };
    emit(&text, &a.common.output)
}

/// `mvcclab compare`.
pub fn compare(a: CompareArgs) -> Result<()> {
    let mut results = Vec::new();
    for d in &a.designs {
        if a.common.format == Format::Table && a.common.output == "-" {
            eprintln!("running {} on {} ...", a.common.workload, d);
        }
        results.push(run_design(d, &a.common)?);
    }
    let text = match a.common.format {
        Format::Json => serde_json::to_string_pretty(&results)? + "\n",
        Format::Table => table(&results),
    };
    emit(&text, &a.common.output)
}
