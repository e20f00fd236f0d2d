//! `--report DIR`: the report directory. It holds the same [`Report`] four ways:
//!
//! | file | contents |
//! |---|---|
//! | `report.json` | the result schema (docs/results.md) |
//! | `report.csv` | one row per run, one column per JSON leaf |
//! | `summary.md` | the side-by-side summary, blocks per operation, latencies, plots |
//! | `tps.svg` | transactions per second per run |
//! | `blocks_per_txn.svg` | stacked bars: 4 KiB blocks (read + written) per transaction by cause |
//! | `latency.svg` | transaction latency p50 / p95 / p99 per run |
//! | `tps_vs_bandwidth.svg` | TPS versus device bandwidth, one line per design (only with several `--bandwidth` values) |
//! | `timeseries.csv` | one row per run and sample of the measured phase's time series (only when a run has one) |
//! | `blocks_per_second.svg` | 4 KiB blocks read + written per second over the measured phase, one line per run; stacked by cause with `--stack-by-cause` (only when a run has a time series) |
//!
//! The plots are drawn by the SVG view (`svg.rs`).

use super::csv::to_csv;
use super::markdown::to_markdown;
use super::svg::{
    bandwidths, plot_blocks, plot_blocks_per_second, plot_latency, plot_tps, plot_tps_vs_bandwidth,
};
use super::timeseries::timeseries_csv;
use crate::result::Report;
use anyhow::{Context, Result};
use std::path::Path;

/// Writes every file of the report into `dir` (created if missing) and returns their names;
/// `stack_by_cause` draws `blocks_per_second.svg` stacked by cause, one panel per run.
///
/// Errors: the directory or a file cannot be written (the message names the path), or a
/// plot cannot be drawn.
pub fn write_report_dir(report: &Report, dir: &Path, stack_by_cause: bool) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating --report {}", dir.display()))?;
    let mut plots: Vec<&str> = Vec::new();
    if !report.runs.is_empty() {
        plot_tps(report, &dir.join("tps.svg"))?;
        plots.push("tps.svg");
        plot_blocks(report, &dir.join("blocks_per_txn.svg"))?;
        plots.push("blocks_per_txn.svg");
        plot_latency(report, &dir.join("latency.svg"))?;
        plots.push("latency.svg");
        if bandwidths(report).len() > 1 {
            plot_tps_vs_bandwidth(report, &dir.join("tps_vs_bandwidth.svg"))?;
            plots.push("tps_vs_bandwidth.svg");
        }
    }
    let has_series = report.runs.iter().any(|r| !r.results.timeseries.is_empty());
    if has_series {
        plot_blocks_per_second(report, &dir.join("blocks_per_second.svg"), stack_by_cause)?;
        plots.push("blocks_per_second.svg");
    }
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    write("report.json", serde_json::to_string_pretty(report)? + "\n")?;
    write("report.csv", to_csv(report)?)?;
    write("summary.md", to_markdown(report, &plots))?;
    let mut files = vec![
        "report.json".into(),
        "report.csv".into(),
        "summary.md".into(),
    ];
    if has_series {
        write("timeseries.csv", timeseries_csv(report)?)?;
        files.push("timeseries.csv".into());
    }
    files.extend(plots.iter().map(|p| p.to_string()));
    Ok(files)
}
