//! `mvcclab fidelity`: each preset set against the engine it models (postgres against
//! real PostgreSQL 15, innodb against real MariaDB 10.11) on sysbench's workloads, at the
//! same size, threads, seed and buffer pool, with the per-transaction ratio preset / real
//! of every figure both sides count.
//!
//! The figures compared are engine-level, where both sides count the same thing:
//! pages read into and written from the buffer pool (in 4 KiB blocks, so 8 KiB and 16 KiB
//! pages compare), WAL/redo bytes, full-page images, the HOT share of updates, doublewrite
//! pages and the buffer hit ratio; device-level 4 KiB blocks only when the real server ran
//! on its own loop device (`--exact-device-io`). A ratio outside 0.8–1.25 is flagged `!`;
//! docs/fidelity.md explains each flagged ratio of the measured table.

use crate::bench::{
    check_common, load_once, resolve_spec, run_from_load, run_specs_with, version_switches,
    CommonArgs, Loaded, RunSpec,
};
use crate::commands::bandwidth_sweep::{memory_split, SweepSize};
use crate::export::{
    emit, fidelity_csv, fidelity_markdown, fidelity_table, to_json, write_report_dir, Format,
};
use crate::progress::{install_ctrl_c, status};
use crate::result::{FidelityReport, FidelityRow, FidelityScale, Report, RunReport, ScaleMemory};
use crate::UsageError;
use anyhow::Result;
use clap::Args;
use mvcclab_servers::ServerKind;
use mvcclab_workload::driver::RunControl;
use mvcclab_workload::sysbench::WorkloadKind;
use std::sync::atomic::Ordering;

/// The workloads of the fidelity table (issue 6).
pub const DEFAULT_WORKLOADS: &str =
    "oltp_point_select,oltp_read_only,oltp_update_non_index,oltp_update_index,oltp_read_write";

/// Flags of `mvcclab fidelity`.
#[derive(Args, Debug)]
pub struct FidelityArgs {
    /// Workloads, comma-separated (`--workload` is not used here).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_WORKLOADS)]
    pub workloads: Vec<String>,
    /// Presets to check, comma-separated: postgres (against real:postgresql), innodb
    /// (against real:mariadb).
    #[arg(long, value_delimiter = ',', default_value = "postgres,innodb")]
    pub presets: Vec<String>,
    /// Re-render a saved `fidelity.json` (its runs' ratios recomputed) instead of running.
    #[arg(long, value_name = "FILE")]
    pub from: Option<std::path::PathBuf>,
    /// Run each preset as fast as it goes instead of at the transaction rate its real
    /// engine reached (by default the real server runs first and the preset follows with
    /// `--rate` set to the server's TPS, so that work paced by time, such as the page
    /// cleaner's once-a-second flushing or autovacuum's naps, meets the same number of
    /// transactions per second on both sides).
    #[arg(long)]
    pub no_rate_match: bool,
    /// Scales, comma-separated: `base` (the flags' own tables, rows, threads and memory;
    /// by default 1 × 100,000 rows, 4 threads, 8 MiB pools), `1m` (1 × 1,000,000 rows,
    /// 4 threads, 64 MiB pools), `4m` (4 × 1,000,000 rows, 4 threads, 256 MiB pools),
    /// `sweep` (`experiment bandwidth_sweep --size small`'s tables, rows, threads and
    /// memory split). Every scale but `base` bounds real PostgreSQL's page cache
    /// (`--bound-os-cache`) and, as root, drops the OS page cache before each warm-up
    /// (`--drop-caches`). With more than one, the report has a table per scale and the
    /// scale grid (docs/fidelity.md, "Scale grid").
    #[arg(long, value_delimiter = ',', default_value = "base")]
    pub scales: Vec<String>,
    /// Load each side's tables once per scale and start every workload's run from that
    /// load (a preset's device image, a real server's saved data directory; bench/loaded.rs)
    /// instead of loading before each run. The three OLTP write workloads share sysbench's
    /// schema, so their loads are the same.
    #[arg(long)]
    pub load_once: bool,
    /// Pairs of runs per workload and scale (at least 1). With more than one, each
    /// figure's row gives the median of each side's values and the median of the pairs'
    /// ratios with their range (`FidelityRow::summarize`), and the flag follows the
    /// median: one pair's ratio near 0.8 or 1.25 moves with the run (docs/fidelity.md,
    /// grid28). With `--load-once` every repeat starts from the same load.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// Size, threads, memory and output flags, as for `compare`.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The names `--scales` accepts.
pub const SCALES: &[&str] = &["base", "1m", "4m", "sweep"];

/// The scale `name` with the flags `c` (`base` takes tables, rows, threads, buffer pool
/// and OS cache from them; the others fix their own, `sweep` from
/// [`SweepSize`]`::of("small")` and [`memory_split`], so that it cannot drift from the
/// sweep's configuration).
///
/// Errors: [`UsageError`] for a name not in [`SCALES`].
pub fn scale(name: &str, c: &CommonArgs) -> Result<FidelityScale> {
    let same = |pool: u64, os_cache: u64| {
        ["postgres", "innodb"]
            .iter()
            .map(|p| ScaleMemory {
                preset: p.to_string(),
                buffer_pool_bytes: pool,
                os_cache_bytes: os_cache,
            })
            .collect()
    };
    let (tables, table_size, threads, memory, bound_os_cache) = match name {
        "base" => (
            c.tables,
            c.table_size,
            c.threads,
            same(c.device.buffer_pool, c.device.os_cache),
            c.server.bound_os_cache,
        ),
        "1m" => (1, 1_000_000, 4, same(64 << 20, 64 << 20), true),
        "4m" => (4, 1_000_000, 4, same(256 << 20, 256 << 20), true),
        "sweep" => {
            let size = SweepSize::of("small")?;
            let memory = [("postgres", true), ("innodb", false)]
                .iter()
                .map(|&(p, os)| {
                    let (pool, os_cache) = memory_split(os, size.memory_bytes);
                    ScaleMemory {
                        preset: p.to_string(),
                        buffer_pool_bytes: pool,
                        os_cache_bytes: os_cache,
                    }
                })
                .collect();
            (size.tables, size.table_size, size.threads, memory, true)
        }
        other => {
            return Err(UsageError(format!(
                "--scales '{other}': expected one of {}",
                SCALES.join(", ")
            ))
            .into())
        }
    };
    Ok(FidelityScale {
        name: name.to_string(),
        tables,
        table_size,
        threads,
        memory,
        bound_os_cache,
    })
}

/// The flags `c` at scale `s` for `preset` and its real server.
fn scale_flags(c: &CommonArgs, s: &FidelityScale, preset: &str) -> CommonArgs {
    let mut x = c.clone();
    x.tables = s.tables;
    x.table_size = s.table_size;
    x.threads = s.threads;
    (x.device.buffer_pool, x.device.os_cache) = s.memory_of(preset);
    x.server.bound_os_cache = s.bound_os_cache;
    // A bounded page cache means nothing if the restored or loaded files are still cached
    // outside the server's cgroup (the copy back of `--load-once` is made by mvcclab, so
    // its pages are charged to mvcclab's cgroup and the server reads them from memory:
    // 0 device reads at `sweep` before this, docs/fidelity.md "Scale grid"). Drop them
    // before each warm-up (the server's own files: `PageCacheScope`) when running as root,
    // as `experiment bandwidth_sweep` does; the bound itself needs root for its cgroup.
    x.server.drop_caches |= s.bound_os_cache && mvcclab_servers::managed::is_root();
    x
}

/// The scale of `scales` a run of `r`'s shape ran at (tables, rows and threads tell the
/// scales apart); `None` when none matches.
fn scale_of(scales: &[FidelityScale], r: &RunReport) -> Option<String> {
    scales
        .iter()
        .find(|s| {
            s.tables == r.workload.options.tables
                && s.table_size == r.workload.options.table_size
                && s.threads == r.driver.threads
        })
        .map(|s| s.name.clone())
}

pub use crate::result::{NOISE_FLOOR, NOISE_FLOOR_BYTES};

/// The figures compared: (name, value of a run, applies to this preset).
type Metric = (
    &'static str,
    fn(&RunReport) -> Option<f64>,
    fn(&str) -> bool,
);

fn per_txn(r: &RunReport, v: u64) -> f64 {
    v as f64 / r.results.transactions.max(1) as f64
}

fn blocks_4k(r: &RunReport, pages: u64) -> f64 {
    per_txn(r, pages) * r.device.page_size_bytes as f64 / 4096.0
}

/// `pages` of `engine.tables.<field>` in 4 KiB blocks per transaction, when the run
/// measured it: a preset always; a real server unless its report lists the field under
/// `not_measured`, and for the written pages only with the FUSE device's InnoDB page counts
/// in its counters (`innodb_pages.*`), since reports from before those fields existed do
/// not list them as not measured.
fn relation_pages(r: &RunReport, field: &str, pages: u64) -> Option<f64> {
    let from_device = |s: &mvcclab_servers::ServerInfo| {
        !field.ends_with("_written") || s.counters.keys().any(|k| k.starts_with("innodb_pages."))
    };
    let measured =
        r.measured(&format!("engine.tables.{field}")) && r.server.as_ref().is_none_or(from_device);
    measured.then(|| blocks_4k(r, pages))
}

/// `pages` of the tablespaces' file-space pages (`engine.undo.file_space_pages_*`) in 4 KiB
/// blocks per transaction, when the run counted them: a MariaDB server whose counters
/// hold innodb_metrics' `buffer_page_written_fsp_hdr`; a preset that moved any (reports
/// from before 2026-11-28 have none, and the field reads 0 there; a preset that moved
/// none in the phase leaves the row out too).
fn file_space_pages(r: &RunReport, pages: u64) -> Option<f64> {
    let counted = match &r.server {
        Some(s) => s
            .counters
            .contains_key("innodb_metrics.buffer_page_written_fsp_hdr"),
        None => r.engine.undo.file_space_pages_read + r.engine.undo.file_space_pages_written > 0,
    };
    counted.then(|| blocks_4k(r, pages))
}

/// Device writes in 4 KiB blocks per transaction without those of a file system: a real
/// server's less its `fs_metadata` class (block-device mode on the FUSE device; `None`
/// without it), a preset's all of them (it has no file system).
fn device_writes_less_fs_metadata(r: &RunReport) -> Option<f64> {
    if !r.measured("io.total.write_blocks_4k") {
        return None;
    }
    let fs = match &r.server {
        None => 0,
        Some(_) => r.io.by_file_class.get("fs_metadata")?.io.write_blocks_4k,
    };
    Some(per_txn(r, r.io.total.write_blocks_4k.saturating_sub(fs)))
}

const METRICS: &[Metric] = &[
    ("tps", |r| Some(r.results.tps), |_| true),
    (
        "warm-up transactions",
        |r| r.results.warmup.as_ref().map(|w| w.transactions as f64),
        |_| true,
    ),
    (
        "pool reads, 4 KiB blocks / txn",
        |r| Some(blocks_4k(r, r.io.total.buffer_misses)),
        |_| true,
    ),
    (
        "pool writes, 4 KiB blocks / txn",
        |r| Some(blocks_4k(r, r.io.total.buffer_pages_written)),
        |_| true,
    ),
    // The pool's reads and writes by relation: a preset's pool counts them, a MariaDB
    // server's come from the FUSE device's page images (`innodb_pages`), a PostgreSQL
    // server's reads from pg_statio_user_tables; a side that does not count one lists it
    // under `not_measured` and the row is left out (see `relation_pages`).
    (
        "table pages read, 4 KiB blocks / txn",
        |r| relation_pages(r, "heap_blks_read", r.engine.tables.heap_blks_read),
        |_| true,
    ),
    (
        "table pages written, 4 KiB blocks / txn",
        |r| relation_pages(r, "heap_blks_written", r.engine.tables.heap_blks_written),
        |_| true,
    ),
    (
        "index pages read, 4 KiB blocks / txn",
        |r| relation_pages(r, "idx_blks_read", r.engine.tables.idx_blks_read),
        |_| true,
    ),
    (
        "index pages written, 4 KiB blocks / txn",
        |r| relation_pages(r, "idx_blks_written", r.engine.tables.idx_blks_written),
        |_| true,
    ),
    (
        "file-space pages read, 4 KiB blocks / txn",
        |r| file_space_pages(r, r.engine.undo.file_space_pages_read),
        |p| p == "innodb",
    ),
    (
        "file-space pages written, 4 KiB blocks / txn",
        |r| file_space_pages(r, r.engine.undo.file_space_pages_written),
        |p| p == "innodb",
    ),
    (
        "device reads, 4 KiB blocks / txn",
        |r| {
            r.measured("io.total.read_blocks_4k")
                .then(|| per_txn(r, r.io.total.read_blocks_4k))
        },
        |_| true,
    ),
    (
        "device writes, 4 KiB blocks / txn",
        |r| {
            r.measured("io.total.write_blocks_4k")
                .then(|| per_txn(r, r.io.total.write_blocks_4k))
        },
        |_| true,
    ),
    // The device writes a real server's file system adds (`fs_metadata` of block-device
    // mode: the ext4 journal, inodes, bitmaps, directories) taken out: a preset writes its
    // device without a file system. Measured 2026-11-28 (docs/fidelity.md, restore33):
    // 1.1 to 2.9 blocks per transaction, a fifth of MariaDB's device writes in `1m`
    // oltp_read_write and `sweep` oltp_update_index.
    (
        "device writes less file-system metadata, 4 KiB blocks / txn",
        device_writes_less_fs_metadata,
        |_| true,
    ),
    (
        "WAL/redo bytes / txn",
        |r| Some(per_txn(r, r.io.total.wal_bytes)),
        |_| true,
    ),
    (
        "full-page images / txn",
        |r| Some(per_txn(r, r.io.total.wal_fpi)),
        |p| p == "postgres",
    ),
    (
        "HOT share of updates",
        |r| {
            let u = r.engine.hot_updates + r.engine.non_hot_updates;
            (u > 0).then(|| r.engine.hot_updates as f64 / u as f64)
        },
        |p| p == "postgres",
    ),
    (
        "doublewrite pages / txn",
        |r| Some(per_txn(r, r.io.total.doublewrite_pages)),
        |p| p == "innodb",
    ),
    (
        "buffer hit ratio",
        |r| Some(r.engine.buffer_hit_ratio),
        |_| true,
    ),
];

/// The rows comparing `preset` with `real` on one workload.
pub fn compare_pair(workload: &str, preset: &RunReport, real: &RunReport) -> Vec<FidelityRow> {
    let p = preset.design.name.as_str();
    METRICS
        .iter()
        .filter(|(_, _, applies)| applies(p))
        .filter_map(|(name, value, _)| {
            let (a, b) = (value(preset)?, value(real)?);
            Some(FidelityRow::of(workload, p, &real.design.name, name, a, b))
        })
        .collect()
}

/// The flags that fix a fidelity run's workload, size, threads, time, memory and seed.
fn run_flags(c: &CommonArgs, workload: &str) -> String {
    let mut s = format!(
        "--workload {workload} --tables {} --table-size {} --threads {} --time {} --warmup {} \
         --buffer-pool {} --os-cache {} --rand-seed {}",
        c.tables,
        c.table_size,
        c.threads,
        c.time,
        c.warmup,
        crate::units::format_size_bytes(c.device.buffer_pool),
        crate::units::format_size_bytes(c.device.os_cache),
        c.rand_seed
    );
    if c.server.bound_os_cache {
        s += " --bound-os-cache";
    }
    if c.server.drop_caches {
        s += " --drop-caches";
    }
    if c.server.fuse_device {
        s += &format!(" --fuse-device --fuse-mode {}", c.server.fuse_mode);
    }
    if c.server.exact_device_io {
        s += " --exact-device-io";
    }
    if let Some(dir) = &c.server.server_dir {
        s += &format!(" --server-dir {}", dir.display());
    }
    if c.device.rotational {
        s += " --rotational";
    }
    s
}

fn reproduce(c: &CommonArgs, workload: &str, preset: &str, real: &str) -> String {
    format!(
        "mvcclab compare --designs {preset},{real} {}",
        run_flags(c, workload)
    )
}

/// A rate as the flags give it: events per second rounded to 0.01.
fn rate_flag(tps: f64) -> f64 {
    (tps * 100.0).round() / 100.0
}

/// The preset's flags of a rate-matched pair: `c` with `--rate` at the TPS of the
/// server's measured phase and `--warmup-rate` at the TPS of its warm-up
/// (`results.warmup`). The server warms up unpaced from a cold start, more slowly than it
/// then runs (or faster, when its OS cache was warm); a preset whose warm-up ran at the
/// measured rate would start its phase after another number of transactions since the
/// checkpoint: other cold misses and first full-page images would fall into the phase
/// (docs/fidelity.md, "Warm-ups of the same length"). A server whose warm-up completed
/// no transaction (or that recorded none) leaves `--warmup-rate` unset: a rate of 0
/// would mean unpaced.
pub fn at_servers_rates(c: &CommonArgs, real: &RunReport) -> CommonArgs {
    let mut cp = c.clone();
    cp.rate = rate_flag(real.results.tps);
    cp.warmup_rate = real
        .results
        .warmup
        .as_ref()
        .filter(|w| w.transactions > 0 && w.tps > 0.0)
        .map(|w| rate_flag(w.tps).max(0.01));
    cp
}

/// The two commands of a rate-matched pair: the real server, then the preset under the
/// flags `cp` ([`at_servers_rates`]: its rates) with the switches `sets`
/// ([`version_switches`]).
fn reproduce_at_rate(
    c: &CommonArgs,
    workload: &str,
    preset: &str,
    real: &str,
    cp: &CommonArgs,
    sets: &[String],
) -> String {
    let common = run_flags(c, workload);
    let target = real.strip_prefix("real:").unwrap_or(real);
    let sets: String = sets.iter().map(|s| format!(" --set {s}")).collect();
    let rate = cp.rate;
    match cp.warmup_rate {
        Some(w) => format!(
            "mvcclab run --target {target} {common}\n\
             mvcclab run --design {preset}{sets} {common} --rate {rate} --warmup-rate {w}   \
             # --rate, --warmup-rate: the TPS the first run reached in its measured phase and its warm-up"
        ),
        None => format!(
            "mvcclab run --target {target} {common}\n\
             mvcclab run --design {preset}{sets} {common} --rate {rate}   # --rate: the TPS the first run reached"
        ),
    }
}

/// `mvcclab fidelity`.
///
/// Errors: bad flags ([`UsageError`]); a run failing.
pub fn run(a: FidelityArgs) -> Result<()> {
    let c = &a.common;
    if let Some(path) = &a.from {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("--from {}: {e}", path.display())))?;
        let mut f: FidelityReport = serde_json::from_str(&text).map_err(|e| {
            UsageError(format!(
                "--from {}: not a fidelity.json: {e}",
                path.display()
            ))
        })?;
        f.rows = f
            .report
            .runs
            .chunks(2)
            .filter(|p| p.len() == 2)
            .flat_map(|p| {
                let scale = scale_of(&f.scales, &p[0]);
                let mut rows = compare_pair(&p[0].workload.name, &p[0], &p[1]);
                for r in &mut rows {
                    r.scale.clone_from(&scale);
                }
                rows
            })
            .collect();
        f.rows = FidelityRow::summarize_repeats(&f.rows);
        return output(&f, c);
    }
    let mut scales: Vec<FidelityScale> = Vec::new();
    for n in &a.scales {
        let s = scale(n, c)?;
        if scales.iter().any(|x| x.name == s.name) {
            return Err(UsageError(format!("--scales: '{n}' is given twice")).into());
        }
        scales.push(s);
    }
    let mut pairs = Vec::new();
    for p in &a.presets {
        let real = ServerKind::of_preset(p).ok_or_else(|| {
            UsageError(format!(
                "--presets '{p}': expected postgres or innodb (the presets that model a real engine)"
            ))
        })?;
        pairs.push((p.clone(), resolve_spec(p, &c.set)?, RunSpec::Real(real)));
    }
    for w in &a.workloads {
        let _: WorkloadKind = w.parse().map_err(UsageError)?;
    }
    for s in &scales {
        for (name, p, r) in &pairs {
            check_common(&scale_flags(c, s, name), &[p.clone(), r.clone()])?;
        }
    }
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let mut rows = Vec::new();
    let mut commands = Vec::new();
    let mut runs = Vec::new();
    let mut load_reports = Vec::new();
    'all: for s in &scales {
        // Per pair: the real server's load and the preset's (`--load-once`), made at the
        // pair's first run of this scale.
        let mut loads: Vec<[Option<Loaded>; 2]> = pairs.iter().map(|_| [None, None]).collect();
        for (w, repeat) in a
            .workloads
            .iter()
            .flat_map(|w| (1..=a.repeats).map(move |i| (w, i)))
        {
            for ((name, p, r), [real_load, preset_load]) in pairs.iter().zip(loads.iter_mut()) {
                if ctl.stop.load(Ordering::Relaxed) {
                    status(c.out.quiet, "Ctrl-C: skipping the remaining runs");
                    break 'all;
                }
                let mut cw = scale_flags(c, s, name);
                cw.workload = w.clone();
                if scales.len() > 1 {
                    status(
                        c.out.quiet,
                        &format!("scale {}: {}, {w}", s.name, s.shape()),
                    );
                }
                if a.repeats > 1 {
                    status(
                        c.out.quiet,
                        &format!("{name} on {w}: pair {repeat} of {}", a.repeats),
                    );
                }
                let mut pair_rows = Vec::new();
                if a.no_rate_match {
                    let Some(real) = run_one(r, &cw, a.load_once.then_some(real_load), &ctl)?
                    else {
                        break 'all;
                    };
                    let Some(preset) = run_one(p, &cw, a.load_once.then_some(preset_load), &ctl)?
                    else {
                        break 'all;
                    };
                    pair_rows.extend(compare_pair(w, &preset, &real));
                    commands.push(reproduce(&cw, w, &p.name(), &r.name()));
                    runs.extend([preset, real]);
                } else {
                    // The real server first; the preset then at the server's rate.
                    let Some(real) = run_one(r, &cw, a.load_once.then_some(real_load), &ctl)?
                    else {
                        break 'all;
                    };
                    let cp = at_servers_rates(&cw, &real);
                    let sets = version_switches(&real, &c.set);
                    let (p, preset_load) = if sets.is_empty() {
                        (p.clone(), a.load_once.then_some(preset_load))
                    } else {
                        status(
                            c.out.quiet,
                            &format!(
                                "{}: --set {} to model {} (see `mvcclab designs`)",
                                p.name(),
                                sets.join(" --set "),
                                real.server.as_ref().map_or("", |s| s.version.as_str())
                            ),
                        );
                        let mut all = c.set.clone();
                        all.extend(sets.iter().cloned());
                        // Its load was of the preset without the switches: load per run.
                        (resolve_spec(&p.name(), &all)?, None)
                    };
                    let Some(preset) = run_one(&p, &cp, preset_load, &ctl)? else {
                        break 'all;
                    };
                    pair_rows.extend(compare_pair(w, &preset, &real));
                    commands.push(reproduce_at_rate(&cw, w, &p.name(), &r.name(), &cp, &sets));
                    runs.extend([preset, real]);
                }
                for row in &mut pair_rows {
                    row.scale = Some(s.name.clone());
                }
                rows.extend(pair_rows);
            }
        }
        load_reports.extend(loads.into_iter().flatten().flatten().map(|l| l.report));
    }
    let mut report = Report::new("fidelity", runs);
    report.loads = load_reports;
    let f = FidelityReport {
        rows: FidelityRow::summarize_repeats(&rows),
        commands,
        report,
        scales,
    };
    output(&f, c)
}

/// One run of `spec` under the flags `c`: from its saved load when `load` is given (made
/// here at the first run), else loading first ([`run_specs_with`]); `None` when Ctrl-C
/// stopped it before it ran.
///
/// Errors: the load, restore or run failing.
fn run_one(
    spec: &RunSpec,
    c: &CommonArgs,
    load: Option<&mut Option<Loaded>>,
    ctl: &RunControl,
) -> Result<Option<RunReport>> {
    let Some(slot) = load else {
        return Ok(run_specs_with(std::slice::from_ref(spec), c, ctl)?.pop());
    };
    let l = match slot {
        Some(l) => l,
        empty => empty.insert(load_once(spec, c)?),
    };
    let bandwidth = c.device.bandwidth.first().copied();
    Ok(Some(run_from_load(l, c, bandwidth, ctl)?))
}

/// Rows, tables, threads, measured time and buffer pool of the runs behind `f`: the first
/// run's, as it recorded them (so that `--from` shows the saved run's shape, not this
/// command's flags), else the flags `c`.
fn run_shape(f: &FidelityReport, c: &CommonArgs) -> String {
    let (rows, tables, threads, time_s, pool) = match f.report.runs.first() {
        Some(r) => (
            u64::from(r.workload.options.table_size),
            r.workload.options.tables,
            u64::from(r.driver.threads),
            r.driver.time_s,
            r.device.buffer_pool_bytes,
        ),
        None => (
            u64::from(c.table_size),
            c.tables,
            u64::from(c.threads),
            c.time,
            c.device.buffer_pool,
        ),
    };
    format!(
        "{rows} rows × {tables} tables, {threads} threads, {time_s} s, buffer pool {}",
        crate::units::format_size_bytes(pool)
    )
}

/// Writes `f` in the chosen format (and the report directory).
fn output(f: &FidelityReport, c: &CommonArgs) -> Result<()> {
    if let Some(dir) = &c.out.report {
        let mut files = write_report_dir(&f.report, dir, c.out.stack_by_cause)?;
        std::fs::write(dir.join("fidelity.md"), fidelity_markdown(f))?;
        std::fs::write(dir.join("fidelity.json"), to_json(f)?)?;
        files.extend(["fidelity.md".to_string(), "fidelity.json".to_string()]);
        status(
            c.out.quiet,
            &format!("report written to {}: {}", dir.display(), files.join(", ")),
        );
    }
    let text = match c.out.format {
        Format::Json => to_json(f)?,
        Format::Md => fidelity_markdown(f),
        Format::Csv => fidelity_csv(f)?,
        Format::Table => fidelity_table(f, &run_shape(f, c)),
    };
    emit(&text, &c.out.output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::{ratio_text, server_versions};

    fn row(metric: &str, a: f64, b: f64) -> FidelityRow {
        let mut p: RunReport = serde_json::from_str(SAMPLE).unwrap();
        let mut r = p.clone();
        p.design.name = "postgres".into();
        r.design.name = "real:postgresql".into();
        p.results.tps = a;
        r.results.tps = b;
        p.io.total.wal_bytes = (a * 1000.0) as u64;
        r.io.total.wal_bytes = (b * 1000.0) as u64;
        compare_pair("w", &p, &r)
            .into_iter()
            .find(|x| x.metric == metric)
            .unwrap()
    }

    const SAMPLE: &str = include_str!("../../tests/data/run_report.json");

    #[test]
    fn pages_by_relation_are_compared_only_where_the_real_server_counts_them() {
        let mut p: RunReport = serde_json::from_str(SAMPLE).unwrap();
        let mut r = p.clone();
        p.design.name = "innodb".into();
        r.design.name = "real:mariadb".into();
        let txns = p.results.transactions.max(1);
        p.engine.tables.idx_blks_written = txns;
        r.engine.tables.idx_blks_written = 2 * txns;
        let metric = "index pages written, 4 KiB blocks / txn";
        let mut info = mvcclab_servers::ServerInfo {
            not_measured: vec!["engine.tables.idx_blks_written".into()],
            ..Default::default()
        };
        r.server = Some(info.clone());
        assert!(
            !compare_pair("w", &p, &r).iter().any(|x| x.metric == metric),
            "MariaDB off the FUSE device does not count it"
        );
        info.not_measured.clear();
        r.server = Some(info.clone());
        assert!(
            !compare_pair("w", &p, &r).iter().any(|x| x.metric == metric),
            "a report without the device's page counts (older than them) did not measure it"
        );
        info.counters
            .insert("innodb_pages.index.pages_written".into(), 2.0 * txns as f64);
        r.server = Some(info);
        let row = compare_pair("w", &p, &r)
            .into_iter()
            .find(|x| x.metric == metric)
            .expect("both sides count it");
        assert!(row.ratio.is_some_and(|x| (x - 0.5).abs() < 1e-9), "{row:?}");
        assert!(row.outside, "{row:?}");
    }

    /// The real server's file-system writes (`fs_metadata`) are taken out of its device
    /// writes for the second device row; without that class the row is left out.
    #[test]
    fn device_writes_are_also_compared_without_the_file_systems_own() {
        let mut p: RunReport = serde_json::from_str(SAMPLE).unwrap();
        let mut r = p.clone();
        p.design.name = "innodb".into();
        r.design.name = "real:mariadb".into();
        p.server = None;
        r.server = Some(Default::default());
        let txns = p.results.transactions.max(1);
        r.results.transactions = txns;
        p.io.total.write_blocks_4k = 8 * txns;
        r.io.total.write_blocks_4k = 10 * txns;
        let metric = "device writes less file-system metadata, 4 KiB blocks / txn";
        assert!(
            !compare_pair("w", &p, &r).iter().any(|x| x.metric == metric),
            "no fs_metadata class: not measured"
        );
        let mut fs = mvcclab_devfs::FileIo::default();
        fs.io.write_blocks_4k = 2 * txns;
        r.io.by_file_class.insert("fs_metadata".into(), fs);
        let row = compare_pair("w", &p, &r)
            .into_iter()
            .find(|x| x.metric == metric)
            .expect("measured");
        assert!(row.ratio.is_some_and(|x| (x - 1.0).abs() < 1e-9), "{row:?}");
        let all = compare_pair("w", &p, &r)
            .into_iter()
            .find(|x| x.metric == "device writes, 4 KiB blocks / txn")
            .unwrap();
        assert!(all.ratio.is_some_and(|x| (x - 0.8).abs() < 1e-9), "{all:?}");
    }

    #[test]
    fn ratios_are_flagged_outside_0_8_to_1_25() {
        assert!(!row("tps", 100.0, 100.0).outside);
        assert!(!row("tps", 124.0, 100.0).outside);
        assert!(row("tps", 126.0, 100.0).outside);
        assert!(row("tps", 79.0, 100.0).outside);
        assert!(row("tps", 1.0, 0.0).outside, "one side 0");
        let z = row("tps", 0.0, 0.0);
        assert!(z.equal_zero && !z.outside && z.ratio.is_none());
    }

    #[test]
    fn repeated_pairs_sum_up_to_their_medians() {
        // An even count: the mean of the middle two, per side and for the ratio.
        let rows = [
            row("tps", 100.0, 100.0),
            row("tps", 140.0, 100.0),
            row("tps", 130.0, 100.0),
            row("tps", 90.0, 100.0),
        ];
        let m = FidelityRow::summarize(&rows).unwrap();
        assert_eq!((m.repeats, m.preset_value, m.real_value), (4, 115.0, 100.0));
        assert!((m.ratio.unwrap() - 1.15).abs() < 1e-9, "{m:?}");
        assert_eq!((m.ratio_min, m.ratio_max), (Some(0.9), Some(1.4)));
        assert!(
            !m.outside,
            "two of four pairs are outside, the median is not"
        );
        assert_eq!(ratio_text(&m), "1.15 [0.90–1.40]");
        // A pair whose server read 0 has no ratio: the others' median, and the flag.
        let m = FidelityRow::summarize(&[row("tps", 1.0, 0.0), row("tps", 130.0, 100.0)]).unwrap();
        assert_eq!(m.ratio, Some(1.3));
        assert!(m.outside);
        // Rows of other figures or scales stay apart; order is kept.
        let mut other = row("tps", 100.0, 100.0);
        other.scale = Some("1m".into());
        let all = [rows[0].clone(), other.clone(), rows[1].clone()];
        let s = FidelityRow::summarize_repeats(&all);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].repeats, s[1].repeats), (2, 1));
        assert_eq!(s[1], other);
        assert_eq!(FidelityRow::summarize(&[]), None);
    }

    #[test]
    fn the_markdown_names_each_real_server_and_its_version_once() {
        let mut real: RunReport = serde_json::from_str(SAMPLE).unwrap();
        real.design.name = "real:mariadb".into();
        real.server = Some(crate::result::ServerInfo {
            engine: "mariadb".into(),
            version: "10.11.19-MariaDB-0+deb12u1".into(),
            ..Default::default()
        });
        let mut preset: RunReport = serde_json::from_str(SAMPLE).unwrap();
        preset.design.name = "innodb".into();
        let report = Report {
            schema_version: crate::result::SCHEMA_VERSION,
            mvcclab_version: "test".into(),
            command: "fidelity".into(),
            metadata: None,
            runs: vec![real.clone(), preset, real],
            loads: Vec::new(),
        };
        assert_eq!(
            server_versions(&report),
            vec!["real:mariadb 10.11.19-MariaDB-0+deb12u1".to_string()]
        );
        let f = FidelityReport {
            rows: vec![row("tps", 1.0, 1.0)],
            commands: vec![],
            report,
            scales: vec![],
        };
        let md = fidelity_markdown(&f);
        assert!(
            md.starts_with("Servers: real:mariadb 10.11.19-MariaDB-0+deb12u1.\n"),
            "{md}"
        );
    }

    /// The reproduce lines carry how the servers' device I/O was counted and where they
    /// ran (without them a rotational grid's lines would run the servers unmeasured, or
    /// refuse --rotational on a temp directory off the rotational disk).
    #[test]
    fn run_flags_keep_the_exact_device_io_and_the_server_dir() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            common: CommonArgs,
        }
        let c = Flags::parse_from([
            "t",
            "--exact-device-io",
            "--server-dir",
            "/work/srv",
            "--rotational",
        ])
        .common;
        let s = run_flags(&c, "oltp_update_index");
        assert!(
            s.ends_with(" --exact-device-io --server-dir /work/srv --rotational"),
            "{s}"
        );
        let plain = run_flags(&Flags::parse_from(["t"]).common, "oltp_update_index");
        assert!(!plain.contains("--exact-device-io") && !plain.contains("--server-dir"));
    }

    /// The preset's flags of a rate-matched pair take the server's measured TPS as
    /// `--rate` and its warm-up TPS as `--warmup-rate`, and the reproduce line gives both;
    /// a server without a recorded warm-up leaves the warm-up at `--rate`.
    #[test]
    fn the_preset_warms_up_at_the_servers_warm_up_rate() {
        use clap::Parser;
        #[derive(Parser)]
        struct Flags {
            #[command(flatten)]
            common: CommonArgs,
        }
        let c = Flags::parse_from(["t", "--warmup", "10"]).common;
        let mut real: RunReport = serde_json::from_str(SAMPLE).unwrap();
        real.design.name = "real:postgresql".into();
        real.results.tps = 761.456;
        real.results.warmup = Some(crate::result::WarmupResult {
            transactions: 2_334,
            elapsed_s: 10.004,
            tps: 233.306_677,
            ..Default::default()
        });
        let line_of =
            |cp: &CommonArgs| reproduce_at_rate(&c, "w", "postgres", "real:postgresql", cp, &[]);
        let cp = at_servers_rates(&c, &real);
        assert_eq!(cp.rate, 761.46);
        assert_eq!(cp.warmup_rate, Some(233.31));
        let line = line_of(&cp);
        assert!(
            line.contains("--rate 761.46 --warmup-rate 233.31"),
            "{line}"
        );
        let opts = crate::bench::warmup_options(&cp);
        assert_eq!((opts.rate_tps, opts.time_s), (233.31, 10.0));
        // The rows compare the two warm-ups' transactions.
        let mut preset = real.clone();
        preset.design.name = "postgres".into();
        preset.results.warmup.as_mut().unwrap().transactions = 7_615;
        let row = compare_pair("w", &preset, &real)
            .into_iter()
            .find(|r| r.metric == "warm-up transactions")
            .expect("a warm-up row");
        assert!(row.outside, "{row:?}");
        // No warm-up recorded (or none completed): the warm-up runs at --rate.
        for w in [None, Some(crate::result::WarmupResult::default())] {
            real.results.warmup = w;
            let cp = at_servers_rates(&c, &real);
            assert_eq!(cp.warmup_rate, None);
            assert_eq!(crate::bench::warmup_options(&cp).rate_tps, 761.46);
            let line = line_of(&cp);
            assert!(!line.contains("--warmup-rate"), "{line}");
        }
    }

    #[test]
    fn tiny_per_transaction_figures_count_as_equal() {
        // 1000 transactions in the sample: 0.01 and 0.03 WAL bytes per transaction.
        let r = row("WAL/redo bytes / txn", 0.01, 0.03);
        assert!(r.equal_zero && !r.outside, "{r:?}");
        assert_eq!(ratio_text(&r), "both ≈ 0");
    }
}
