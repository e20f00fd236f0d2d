//! The time-series view: `timeseries.csv` of the report directory, one row per sample of
//! every run (`runs[].results.timeseries[]`) or of every experiment phase
//! (`runs[].phases[].timeseries[]`), as BenchBase writes `samples.csv` beside its summary.
//! Columns: the run, then every scalar field of a sample (`phase`, `start_s`,
//! `interval_s`, `transactions`, ... `wal_bytes`), then one column per cause with blocks
//! (`read_blocks_4k.<cause>`, `write_blocks_4k.<cause>`), per real-server counter
//! (`server.<name>`) and per device file class and process (`device.<key>.read_blocks_4k`,
//! ...), each only when some sample has it; an absent value is empty.

use crate::result::{ExperimentReport, Report, Sample};
use anyhow::Result;
use mvcclab_engine::stats::Cause;
use std::collections::BTreeSet;

/// The scalar columns of a sample, in order, with their values.
fn scalars(s: &Sample) -> [(&'static str, String); 15] {
    [
        ("phase", s.phase.clone()),
        ("start_s", format!("{:.3}", s.start_s)),
        ("interval_s", format!("{:.3}", s.interval_s)),
        ("transactions", s.transactions.to_string()),
        ("statements", s.statements.to_string()),
        ("tps", format!("{:.1}", s.tps)),
        ("latency_p50_ms", format!("{:.3}", s.latency_p50_ms)),
        ("latency_p95_ms", format!("{:.3}", s.latency_p95_ms)),
        ("latency_p99_ms", format!("{:.3}", s.latency_p99_ms)),
        ("read_blocks_4k", s.read_blocks_4k.to_string()),
        ("write_blocks_4k", s.write_blocks_4k.to_string()),
        ("read_mib_s", format!("{:.3}", s.read_mib_s)),
        ("write_mib_s", format!("{:.3}", s.write_mib_s)),
        ("buffer_misses", s.buffer_misses.to_string()),
        ("wal_bytes", s.wal_bytes.to_string()),
    ]
}

/// CSV of `series`: (run label, its samples), the first column named `run_column`.
fn series_csv(run_column: &str, series: &[(String, &[Sample])]) -> Result<String> {
    let samples = || series.iter().flat_map(|(_, s)| s.iter());
    let causes: BTreeSet<Cause> = samples()
        .flat_map(|s| s.blocks_by_cause.keys().copied())
        .collect();
    let server: BTreeSet<&String> = samples().flat_map(|s| s.server_counters.keys()).collect();
    let device: BTreeSet<&String> = samples().flat_map(|s| s.device_blocks.keys()).collect();
    let mut header: Vec<String> = vec![run_column.to_string()];
    header.extend(
        scalars(&Sample::default())
            .iter()
            .map(|(k, _)| k.to_string()),
    );
    for c in &causes {
        header.push(format!("read_blocks_4k.{c}"));
        header.push(format!("write_blocks_4k.{c}"));
    }
    header.extend(server.iter().map(|k| format!("server.{k}")));
    for k in &device {
        header.push(format!("device.{k}.read_blocks_4k"));
        header.push(format!("device.{k}.write_blocks_4k"));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header)?;
    for (run, ss) in series {
        for s in ss.iter() {
            let mut row: Vec<String> = vec![run.clone()];
            row.extend(scalars(s).into_iter().map(|(_, v)| v));
            for c in &causes {
                let b = s.blocks_by_cause.get(c).copied().unwrap_or_default();
                row.push(b.read_blocks_4k.to_string());
                row.push(b.write_blocks_4k.to_string());
            }
            for k in &server {
                row.push(
                    s.server_counters
                        .get(*k)
                        .map_or(String::new(), f64::to_string),
                );
            }
            for k in &device {
                let b = s.device_blocks.get(*k).copied().unwrap_or_default();
                row.push(b.read_blocks_4k.to_string());
                row.push(b.write_blocks_4k.to_string());
            }
            w.write_record(&row)?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// `timeseries.csv` of a run/compare report: one row per run and sample, the run named
/// by its label (design, with the bandwidth when set).
///
/// Errors: none in practice (writing to memory).
pub fn timeseries_csv(report: &Report) -> Result<String> {
    let series: Vec<(String, &[Sample])> = report
        .runs
        .iter()
        .map(|r| (super::run_label(r), r.results.timeseries.as_slice()))
        .collect();
    series_csv("run", &series)
}

/// `timeseries.csv` of an experiment: one row per design, phase and sample.
///
/// Errors: none in practice (writing to memory).
pub fn experiment_timeseries_csv(r: &ExperimentReport) -> Result<String> {
    let series: Vec<(String, &[Sample])> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.phases
                .iter()
                .map(|p| (run.design.name.clone(), p.timeseries.as_slice()))
        })
        .collect();
    series_csv("design", &series)
}

/// The points of a series: (end of the interval in s, 4 KiB blocks read + written per
/// second), `pick` choosing the blocks of a sample.
pub(super) fn blocks_per_second(
    samples: &[Sample],
    pick: &dyn Fn(&Sample) -> u64,
) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter(|s| s.interval_s > 0.0)
        .map(|s| (s.start_s + s.interval_s, pick(s) as f64 / s.interval_s))
        .collect()
}

/// Blocks read + written of `cause` in a sample.
pub(super) fn cause_blocks(s: &Sample, cause: Cause) -> u64 {
    s.blocks_by_cause
        .get(&cause)
        .map_or(0, |b| b.read_blocks_4k + b.write_blocks_4k)
}
