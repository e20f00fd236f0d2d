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
    check_common, resolve_spec, run_specs_with, version_switches, CommonArgs, RunSpec,
};
use crate::export::{
    emit, fidelity_csv, fidelity_markdown, fidelity_table, to_json, write_report_dir, Format,
};
use crate::progress::{install_ctrl_c, status};
use crate::result::{FidelityReport, FidelityRow, Report, RunReport};
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
    /// Size, threads, memory and output flags, as for `compare`.
    #[command(flatten)]
    pub common: CommonArgs,
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

const METRICS: &[Metric] = &[
    ("tps", |r| Some(r.results.tps), |_| true),
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
    format!(
        "--workload {workload} --tables {} --table-size {} --threads {} --time {} --warmup {} \
         --buffer-pool {} --rand-seed {}",
        c.tables,
        c.table_size,
        c.threads,
        c.time,
        c.warmup,
        crate::units::format_size_bytes(c.device.buffer_pool),
        c.rand_seed
    )
}

fn reproduce(c: &CommonArgs, workload: &str, preset: &str, real: &str) -> String {
    format!(
        "mvcclab compare --designs {preset},{real} {}",
        run_flags(c, workload)
    )
}

/// The two commands of a rate-matched pair: the real server, then the preset at its TPS
/// with the switches `sets` ([`version_switches`]).
fn reproduce_at_rate(
    c: &CommonArgs,
    workload: &str,
    preset: &str,
    real: &str,
    rate: f64,
    sets: &[String],
) -> String {
    let common = run_flags(c, workload);
    let target = real.strip_prefix("real:").unwrap_or(real);
    let sets: String = sets.iter().map(|s| format!(" --set {s}")).collect();
    format!(
        "mvcclab run --target {target} {common}\n\
         mvcclab run --design {preset}{sets} {common} --rate {rate}   # --rate: the TPS the first run reached"
    )
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
            .flat_map(|p| compare_pair(&p[0].workload.name, &p[0], &p[1]))
            .collect();
        return output(&f, c);
    }
    let mut pairs = Vec::new();
    for p in &a.presets {
        let real = ServerKind::of_preset(p).ok_or_else(|| {
            UsageError(format!(
                "--presets '{p}': expected postgres or innodb (the presets that model a real engine)"
            ))
        })?;
        pairs.push((resolve_spec(p, &c.set)?, RunSpec::Real(real)));
    }
    for w in &a.workloads {
        let _: WorkloadKind = w.parse().map_err(UsageError)?;
    }
    let all: Vec<RunSpec> = pairs
        .iter()
        .flat_map(|(p, r)| [p.clone(), r.clone()])
        .collect();
    check_common(c, &all)?;
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let mut rows = Vec::new();
    let mut commands = Vec::new();
    let mut runs = Vec::new();
    'all: for w in &a.workloads {
        let mut cw = c.clone();
        cw.workload = w.clone();
        for (p, r) in &pairs {
            if ctl.stop.load(Ordering::Relaxed) {
                status(c.out.quiet, "Ctrl-C: skipping the remaining runs");
                break 'all;
            }
            if a.no_rate_match {
                let got = run_specs_with(&[p.clone(), r.clone()], &cw, &ctl)?;
                if got.len() == 2 {
                    rows.extend(compare_pair(w, &got[0], &got[1]));
                }
                commands.push(reproduce(&cw, w, &p.name(), &r.name()));
                runs.extend(got);
                continue;
            }
            // The real server first; the preset then at the server's rate.
            let mut got = run_specs_with(std::slice::from_ref(r), &cw, &ctl)?;
            let Some(real) = got.pop() else { break 'all };
            let mut cp = cw.clone();
            cp.rate = (real.results.tps * 100.0).round() / 100.0;
            let sets = version_switches(&real, &c.set);
            let p = if sets.is_empty() {
                p.clone()
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
                resolve_spec(&p.name(), &all)?
            };
            let mut mine = run_specs_with(std::slice::from_ref(&p), &cp, &ctl)?;
            let Some(preset) = mine.pop() else { break 'all };
            rows.extend(compare_pair(w, &preset, &real));
            commands.push(reproduce_at_rate(
                &cw,
                w,
                &p.name(),
                &r.name(),
                cp.rate,
                &sets,
            ));
            runs.extend([preset, real]);
        }
    }
    let f = FidelityReport {
        rows,
        commands,
        report: Report::new("fidelity", runs),
    };
    output(&f, c)
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
        };
        let md = fidelity_markdown(&f);
        assert!(
            md.starts_with("Servers: real:mariadb 10.11.19-MariaDB-0+deb12u1.\n"),
            "{md}"
        );
    }

    #[test]
    fn tiny_per_transaction_figures_count_as_equal() {
        // 1000 transactions in the sample: 0.01 and 0.03 WAL bytes per transaction.
        let r = row("WAL/redo bytes / txn", 0.01, 0.03);
        assert!(r.equal_zero && !r.outside, "{r:?}");
        assert_eq!(ratio_text(&r), "both ≈ 0");
    }
}
