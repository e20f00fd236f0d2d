//! `mvcclab experiment bandwidth_sweep`: seed 000's Figure 1 (sysbench oltp_read_write,
//! TPS and 4 KiB pages per second against the device's bandwidth, PostgreSQL against
//! MariaDB on NVMeVirt) as one command, on the presets and on the real engines on
//! mvcclab's throttled device, each design loaded once and restored before every
//! bandwidth (bench/loaded.rs). Issue 26; every choice and its source is in
//! docs/experiments.md, "bandwidth_sweep".
//!
//! The seed's procedure, scaled to one machine (`--size small`), or at its own sizes
//! (`--size seed`, for a machine like the seed's):
//! - data to database memory as in the seed: 10 tables × 25M rows ≈ 60 GiB over 16 GiB;
//! - memory split as the tuning tools the seed used give it: PostgreSQL (PGTune)
//!   `shared_buffers` = 25 % of the memory, the rest as the OS page cache (bounded for the
//!   real server with a memory cgroup, `--bound-os-cache`); MariaDB (MySQLTuner, MariaDB KB
//!   "InnoDB Buffer Pool") `innodb_buffer_pool_size` = 75 %, O_DIRECT, no OS cache;
//! - threads as the seed's one per database core (12 threads on 12 cores);
//! - a bandwidth grid spanning the seed's 660/125 ≈ 5.3, a warm-up, a measured phase;
//! - the real servers in block-device mode (ext4 on a loop device over the FUSE device,
//!   rotational 0, as NVMeVirt presents itself), the OS page cache dropped before each
//!   warm-up (root).
//!
//! Outputs (`--report DIR`): the run report's files (report.json with `loads`,
//! tps_vs_bandwidth.svg, blocks_per_second.svg, timeseries.csv, ...), and
//! `bandwidth_sweep.md` (the tables below), `bandwidth_sweep.csv` (one row per design and
//! bandwidth) and `pages_per_second_top.svg` (Fig. 1b: 4 KiB pages per second over the
//! measured phase at the highest bandwidth).

use crate::bench::{
    check_common, parse_bandwidth, parse_report_interval, resolve_spec, run_specs_with_loads,
    CommonArgs, RunSpec,
};
use crate::export::{plot_blocks_per_second, write_report, OutputArgs};
use crate::progress::{install_ctrl_c, status};
use crate::result::{Report, RunReport};
use crate::units::parse_size_bytes;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::{Args, Parser};
use mvcclab_servers::ServerKind;
use mvcclab_workload::driver::RunControl;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Flags of `bandwidth_sweep`.
#[derive(Args, Debug)]
pub struct BandwidthSweepArgs {
    /// Designs, comma-separated: presets, design files, real:postgresql, real:mariadb.
    #[arg(
        long,
        default_value = "postgres,innodb,real:postgresql,real:mariadb",
        value_delimiter = ','
    )]
    pub designs: Vec<String>,
    /// small: the seed's procedure scaled to this machine (about 30 minutes with the real
    /// engines); seed: the seed's own sizes (10 × 25M rows, 16 GiB, 12 threads; hours,
    /// and a machine like the seed's). The flags below override single values.
    #[arg(long, default_value = "small", value_parser = ["small", "seed"])]
    pub size: String,
    /// Tables (sysbench --tables).
    #[arg(long)]
    pub tables: Option<u32>,
    /// Rows per table (sysbench --table-size).
    #[arg(long)]
    pub table_size: Option<u32>,
    /// The database's memory, split per engine (module doc).
    #[arg(long, value_parser = parse_size_bytes)]
    pub memory: Option<u64>,
    /// Client threads.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Seconds of warm-up after each restore.
    #[arg(long)]
    pub warmup: Option<f64>,
    /// Seconds measured per point.
    #[arg(long)]
    pub time: Option<f64>,
    /// The bandwidth grid in MiB/s, comma-separated (default: the size's).
    #[arg(long, value_delimiter = ',', value_parser = parse_bandwidth)]
    pub bandwidth: Vec<f64>,
    /// Change a switch of every preset: SWITCH=VALUE.
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Seed of the random numbers.
    #[arg(long, default_value_t = 1)]
    pub rand_seed: u64,
    /// Seconds per sample of each run's time series.
    #[arg(long, default_value_t = 1.0, value_parser = parse_report_interval)]
    pub report_interval: f64,
    /// How a real server sits on mvcclab's device (see `mvcclab run --help`).
    #[arg(long, value_name = "MODE", default_value = "block-device", value_parser = ["file-system", "block-device"])]
    pub fuse_mode: String,
    /// Folder for the managed servers' folders and the saved loads (default: the temp
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub server_dir: Option<PathBuf>,
    /// Keep the OS page cache before each warm-up (default: the page cache of each real
    /// server's files is dropped, when running as root).
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Report format and destination.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// The settings a `--size` stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSize {
    /// Tables.
    pub tables: u32,
    /// Rows per table.
    pub table_size: u32,
    /// The database's memory in bytes.
    pub memory_bytes: u64,
    /// Client threads.
    pub threads: u32,
    /// Warm-up seconds.
    pub warmup_s: f64,
    /// Measured seconds.
    pub time_s: f64,
    /// Bandwidths in MiB/s.
    pub bandwidths_mib_s: Vec<f64>,
}

impl SweepSize {
    /// The sizes of `--size` (docs/experiments.md, "bandwidth_sweep", says where each
    /// value comes from).
    ///
    /// Errors: [`UsageError`] for an unknown name.
    pub fn of(name: &str) -> Result<SweepSize> {
        match name {
            // Seed 000 §2.1–2.2: 10 tables of 25M rows (≈ 60 GiB), 16 GiB and 12 cores for
            // the database, 12 threads, 30 minutes (the first 5 reported); NVMeVirt from
            // 125 MiB/s to its 660 MiB/s maximum.
            "seed" => Ok(SweepSize {
                tables: 10,
                table_size: 25_000_000,
                memory_bytes: 16 << 30,
                threads: 12,
                warmup_s: 60.0,
                time_s: 300.0,
                bandwidths_mib_s: vec![125.0, 250.0, 500.0, 660.0],
            }),
            // About the seed's 3.75 : 1 data to memory (4 × 250,000 rows ≈ 260 MiB as
            // PostgreSQL heap and indexes, over 64 MiB), one thread per core of this
            // 2-core machine, and a grid of 64× (wider than the seed's 5.3×, which any
            // two points 2–3 steps apart span) from 1 MiB/s, where a probe run found every
            // preset at ≥ 89 % of the limit, to 64 MiB/s, where none used more than 27 %
            // and the real servers 6 % (docs/experiments.md, "bandwidth_sweep", how the
            // grid was found). 5 points × 4 designs × 40 s plus the loads and restarts
            // take about 30 minutes on a quiet machine.
            "small" => Ok(SweepSize {
                tables: 4,
                table_size: 250_000,
                memory_bytes: 64 << 20,
                threads: 2,
                warmup_s: 10.0,
                time_s: 30.0,
                bandwidths_mib_s: vec![1.0, 3.0, 8.0, 24.0, 64.0],
            }),
            other => Err(UsageError(format!("--size '{other}': small or seed")).into()),
        }
    }
}

/// The engine family a design's memory split follows: PostgreSQL's (buffer pool + OS
/// cache) or InnoDB's (buffer pool, O_DIRECT).
fn uses_os_cache(spec: &RunSpec) -> bool {
    match spec {
        RunSpec::Embedded(d) => d.os_page_cache,
        RunSpec::Real(k) => *k == ServerKind::PostgreSql,
    }
}

/// (buffer pool, OS cache) bytes of `memory` for a design: PGTune's 25 % shared_buffers
/// and the rest as page cache; InnoDB's 75 % buffer pool and no OS cache.
pub fn memory_split(os_cache: bool, memory: u64) -> (u64, u64) {
    if os_cache {
        (memory / 4, memory - memory / 4)
    } else {
        (memory / 4 * 3, 0)
    }
}

/// The flags of every run at their defaults (clap's), for the sweep to fill in.
#[derive(Parser)]
struct DefaultRunFlags {
    #[command(flatten)]
    c: CommonArgs,
}

/// A run's device utilisation: the busier direction's bytes over what the limit allows in
/// the measured time (the report's own figure for a real server on the device).
fn utilisation(r: &RunReport) -> Option<f64> {
    if let Some(u) = r.device.utilisation {
        return Some(u);
    }
    let bw = r.device.bandwidth_mib_s?;
    let s = r.results.elapsed_s;
    (s > 0.0)
        .then(|| r.io.total.read_bytes.max(r.io.total.write_bytes) as f64 / (bw * 1048576.0 * s))
}

/// 4 KiB pages read + written per second of the measured phase.
fn pages_per_s(r: &RunReport) -> f64 {
    (r.io.total.read_blocks_4k + r.io.total.write_blocks_4k) as f64 / r.results.elapsed_s.max(1e-9)
}

fn blocks_per_txn(r: &RunReport, read: bool) -> f64 {
    let t = &r.io.total;
    (if read {
        t.read_blocks_4k
    } else {
        t.write_blocks_4k
    }) as f64
        / r.results.transactions.max(1) as f64
}

/// The grid as (designs in order, bandwidths ascending, run index by (design, bandwidth)).
type Grid = (Vec<String>, Vec<f64>, BTreeMap<(String, u64), usize>);

fn grid(runs: &[RunReport]) -> Grid {
    let mut designs: Vec<String> = Vec::new();
    let mut bws: Vec<f64> = Vec::new();
    let mut at = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        if !designs.contains(&r.design.name) {
            designs.push(r.design.name.clone());
        }
        let b = r.device.bandwidth_mib_s.unwrap_or(0.0);
        if !bws.contains(&b) {
            bws.push(b);
        }
        at.insert((r.design.name.clone(), b.to_bits()), i);
    }
    bws.sort_by(f64::total_cmp);
    (designs, bws, at)
}

/// A Markdown table: header cells, then rows.
fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

/// `a / b` as text, `-` when either is missing or b is 0.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// The sweep's Markdown summary: setup, loads, TPS against bandwidth (Fig. 1a), device
/// utilisation (flagged under 90 %), pages per second, CPU per process, blocks per
/// transaction by cause (presets) and by file class (real servers), and the ratio tables.
pub fn summary(report: &Report, setup: &str) -> String {
    let runs = &report.runs;
    let (designs, bws, at) = grid(runs);
    let run = |d: &str, b: f64| at.get(&(d.to_string(), b.to_bits())).map(|&i| &runs[i]);
    let mut out = String::from("# experiment bandwidth_sweep (seed 000, Fig. 1)\n\n");
    out += setup;
    out += "\n\n## Loads (once per design, reused at every bandwidth)\n\n";
    let loads: Vec<Vec<String>> = report
        .loads
        .iter()
        .map(|l| {
            vec![
                l.design.clone(),
                format!("{:.1}", l.duration_s),
                format!("{:.0}", l.saved_bytes as f64 / 1048576.0),
                l.runs.to_string(),
            ]
        })
        .collect();
    out += &table(
        &["design", "load s", "kept MiB", "runs from it"].map(String::from),
        &loads,
    );
    let mut head = vec!["bandwidth MiB/s".to_string()];
    head.extend(designs.iter().cloned());
    let per_bw = |f: &dyn Fn(&RunReport) -> String| -> Vec<Vec<String>> {
        bws.iter()
            .map(|&b| {
                let mut row = vec![format!("{b}")];
                row.extend(
                    designs
                        .iter()
                        .map(|d| run(d, b).map(f).unwrap_or_else(|| "-".into())),
                );
                row
            })
            .collect()
    };
    out += "\n## TPS against bandwidth (Fig. 1a)\n\n";
    out += &table(&head, &per_bw(&|r| format!("{:.1}", r.results.tps)));
    out += "\n## Device utilisation against the limit (busier direction; `*` under 90 %: the device did not bound it)\n\n";
    out += &table(
        &head,
        &per_bw(&|r| match utilisation(r) {
            Some(u) => format!("{:.0} %{}", 100.0 * u, if u < 0.9 { " *" } else { "" }),
            None => "-".into(),
        }),
    );
    out += "\n## 4 KiB pages per second, read + written (mean of the measured phase; Fig. 1b over time: pages_per_second_top.svg)\n\n";
    out += &table(&head, &per_bw(&|r| format!("{:.0}", pages_per_s(r))));
    out += "\n## 4 KiB blocks per transaction, read / written\n\n";
    out += &table(
        &head,
        &per_bw(&|r| {
            format!(
                "{:.2} / {:.2}",
                blocks_per_txn(r, true),
                blocks_per_txn(r, false)
            )
        }),
    );
    out += "\n## CPU per process (cores busy: CPU seconds over the measured seconds)\n\n";
    let mut rows = Vec::new();
    for d in &designs {
        for &b in &bws {
            let Some(r) = run(d, b) else { continue };
            let Some(c) = &r.cpu_seconds else { continue };
            let e = c.elapsed_s.max(1e-9);
            let server: Vec<String> = c
                .server_s
                .iter()
                .map(|(k, s)| format!("{k} {:.2}", s / e))
                .collect();
            rows.push(vec![
                d.clone(),
                format!("{b}"),
                format!("{:.2}", c.mvcclab_s / e),
                c.fuse_daemon_s
                    .map_or("-".into(), |s| format!("{:.2}", s / e)),
                if server.is_empty() {
                    "-".into()
                } else {
                    server.join(", ")
                },
            ]);
        }
    }
    out += &table(
        &[
            "design",
            "bandwidth MiB/s",
            "mvcclab (driver; preset engine; FUSE daemon)",
            "of it FUSE daemon",
            "server processes",
        ]
        .map(String::from),
        &rows,
    );
    out += "\n## 4 KiB blocks per transaction by cause, read / written (presets: the engine's causes; real servers: the device's file classes)\n\n";
    for &b in &bws {
        let _ = write!(out, "\n### {b} MiB/s\n\n");
        let mut keys: Vec<String> = Vec::new();
        let mut cells: BTreeMap<(String, String), String> = BTreeMap::new();
        for d in &designs {
            let Some(r) = run(d, b) else { continue };
            let txns = r.results.transactions.max(1) as f64;
            let mut put = |k: String, rd: u64, wr: u64| {
                if rd + wr == 0 {
                    return;
                }
                if !keys.contains(&k) {
                    keys.push(k.clone());
                }
                cells.insert(
                    (k, d.clone()),
                    format!("{:.2} / {:.2}", rd as f64 / txns, wr as f64 / txns),
                );
            };
            if r.io.by_file_class.is_empty() {
                for (c, x) in &r.io.by_cause {
                    put(c.to_string(), x.read_blocks_4k, x.write_blocks_4k);
                }
            } else {
                for (c, x) in &r.io.by_file_class {
                    put(
                        format!("file: {c}"),
                        x.io.read_blocks_4k,
                        x.io.write_blocks_4k,
                    );
                }
            }
        }
        keys.sort();
        let mut h = vec!["cause".to_string()];
        h.extend(designs.iter().cloned());
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|k| {
                let mut row = vec![k.clone()];
                row.extend(designs.iter().map(|d| {
                    cells
                        .get(&(k.clone(), d.clone()))
                        .cloned()
                        .unwrap_or_else(|| "-".into())
                }));
                row
            })
            .collect();
        out += &table(&h, &rows);
    }
    out += "\n## Ratios per bandwidth\n\n";
    let tps = |d: &str, b: f64| run(d, b).map(|r| r.results.tps);
    let pps = |d: &str, b: f64| run(d, b).map(pages_per_s);
    let bpt = |d: &str, b: f64, read: bool| run(d, b).map(|r| blocks_per_txn(r, read));
    let rows: Vec<Vec<String>> = bws
        .iter()
        .map(|&b| {
            vec![
                format!("{b}"),
                ratio(tps("innodb", b), tps("postgres", b)),
                ratio(tps("real:mariadb", b), tps("real:postgresql", b)),
                ratio(pps("postgres", b), pps("innodb", b)),
                ratio(pps("real:postgresql", b), pps("real:mariadb", b)),
            ]
        })
        .collect();
    out += &table(
        &[
            "bandwidth MiB/s",
            "TPS innodb/postgres",
            "TPS real:mariadb/real:postgresql",
            "pages/s postgres/innodb",
            "pages/s real:postgresql/real:mariadb",
        ]
        .map(String::from),
        &rows,
    );
    out += "\n## Presets against the real engines per bandwidth (preset / real)\n\n";
    let rows: Vec<Vec<String>> = bws
        .iter()
        .map(|&b| {
            let mut row = vec![format!("{b}")];
            for (p, r) in [("postgres", "real:postgresql"), ("innodb", "real:mariadb")] {
                row.push(ratio(tps(p, b), tps(r, b)));
                row.push(ratio(bpt(p, b, true), bpt(r, b, true)));
                row.push(ratio(bpt(p, b, false), bpt(r, b, false)));
            }
            row
        })
        .collect();
    out += &table(
        &[
            "bandwidth MiB/s",
            "postgres TPS",
            "postgres read blocks/txn",
            "postgres write blocks/txn",
            "innodb TPS",
            "innodb read blocks/txn",
            "innodb write blocks/txn",
        ]
        .map(String::from),
        &rows,
    );
    out
}

/// One row per run: design, bandwidth and the figures of the summary.
pub fn sweep_csv(report: &Report) -> String {
    let mut s = String::from(
        "design,bandwidth_mib_s,tps,pages_per_s,read_blocks_per_txn,write_blocks_per_txn,utilisation,utilisation_under_90pct,mvcclab_cpu_s,fuse_daemon_cpu_s,server_cpu_s,elapsed_s\n",
    );
    for r in &report.runs {
        let u = utilisation(r);
        let cpu = r.cpu_seconds.clone().unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{:.2},{:.1},{:.3},{:.3},{},{},{:.2},{},{:.2},{:.2}",
            r.design.name,
            r.device.bandwidth_mib_s.unwrap_or(0.0),
            r.results.tps,
            pages_per_s(r),
            blocks_per_txn(r, true),
            blocks_per_txn(r, false),
            u.map_or(String::new(), |u| format!("{u:.3}")),
            u.map_or(String::new(), |u| (u < 0.9).to_string()),
            cpu.mvcclab_s,
            cpu.fuse_daemon_s
                .map_or(String::new(), |x| format!("{x:.2}")),
            cpu.server_s.values().sum::<f64>(),
            r.results.elapsed_s,
        );
    }
    s
}

/// `mvcclab experiment bandwidth_sweep`.
///
/// Errors: bad flags ([`UsageError`]); a design or server failing to load or run.
pub fn run(a: BandwidthSweepArgs) -> Result<()> {
    let size = SweepSize::of(&a.size)?;
    let mut base = DefaultRunFlags::try_parse_from(["bandwidth_sweep"])
        .map_err(|e| anyhow::anyhow!("default run flags: {e}"))?
        .c;
    base.workload = "oltp_read_write".into();
    base.set = a.set.clone();
    base.tables = a.tables.unwrap_or(size.tables);
    base.table_size = a.table_size.unwrap_or(size.table_size);
    base.threads = a.threads.unwrap_or(size.threads);
    base.warmup = a.warmup.unwrap_or(size.warmup_s);
    base.time = a.time.unwrap_or(size.time_s);
    base.rand_seed = a.rand_seed;
    base.report_interval = a.report_interval;
    base.device.bandwidth = if a.bandwidth.is_empty() {
        size.bandwidths_mib_s.clone()
    } else {
        a.bandwidth.clone()
    };
    base.server.fuse_mode = a.fuse_mode.clone();
    base.server.server_dir = a.server_dir.clone();
    base.server.bound_os_cache = true;
    base.server.drop_caches = !a.no_drop_caches && mvcclab_servers::managed::is_root();
    base.out = a.out.clone();
    base.out.report = None;
    let memory = a.memory.unwrap_or(size.memory_bytes);
    if memory < 4 << 20 {
        return Err(UsageError("--memory must be at least 4MiB".into()).into());
    }
    let specs: Vec<RunSpec> = a
        .designs
        .iter()
        .map(|d| resolve_spec(d, &a.set))
        .collect::<Result<_>>()?;
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let mut runs = Vec::new();
    let mut loads = Vec::new();
    let mut lines = vec![format!(
        "sysbench oltp_read_write, {} tables × {} rows, {} threads, {} s warm-up and {} s \
         measured per point, bandwidths {:?} MiB/s, database memory {} MiB (--size {}); \
         real servers in {} mode, OS page cache {} before each warm-up.",
        base.tables,
        base.table_size,
        base.threads,
        base.warmup,
        base.time,
        base.device.bandwidth,
        memory >> 20,
        a.size,
        base.server.fuse_mode,
        if base.server.drop_caches {
            "dropped"
        } else {
            "not dropped"
        }
    )];
    for spec in specs {
        let mut c = base.clone();
        let (pool, os_cache) = memory_split(uses_os_cache(&spec), memory);
        c.device.buffer_pool = pool;
        c.device.os_cache = os_cache;
        lines.push(format!(
            "- {}: buffer pool {} MiB, OS cache {} MiB",
            spec.name(),
            pool >> 20,
            os_cache >> 20
        ));
        let specs = [spec];
        check_common(&c, &specs)?;
        let (r, l) = run_specs_with_loads(&specs, &c, &ctl)?;
        runs.extend(r);
        loads.extend(l);
        if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            status(a.out.quiet, "Ctrl-C: skipping the remaining designs");
            break;
        }
    }
    let mut report = Report::new("experiment bandwidth_sweep", runs);
    report.loads = loads;
    let text = summary(&report, &lines.join("\n"));
    if let Some(dir) = &a.out.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
        };
        write("bandwidth_sweep.md", &text)?;
        write("bandwidth_sweep.csv", &sweep_csv(&report))?;
        let (_, bws, _) = grid(&report.runs);
        if let Some(top) = bws.last() {
            let mut at_top = report.clone();
            at_top
                .runs
                .retain(|r| r.device.bandwidth_mib_s.unwrap_or(0.0) == *top);
            if at_top.runs.iter().any(|r| !r.results.timeseries.is_empty()) {
                plot_blocks_per_second(&at_top, &dir.join("pages_per_second_top.svg"), false)?;
            }
        }
    }
    if !a.out.quiet {
        eprint!("{text}");
    }
    write_report(&report, &a.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_splits_as_the_tuning_tools_and_sizes_span_the_seeds_ratio() {
        assert_eq!(memory_split(true, 64 << 20), (16 << 20, 48 << 20));
        assert_eq!(memory_split(false, 64 << 20), (48 << 20, 0));
        for name in ["small", "seed"] {
            let s = SweepSize::of(name).unwrap();
            let (lo, hi) = (s.bandwidths_mib_s[0], *s.bandwidths_mib_s.last().unwrap());
            assert!(hi / lo >= 660.0 / 125.0 - 0.01, "{name}: {lo}..{hi}");
        }
        assert!(SweepSize::of("huge").is_err());
    }
}
