//! What every `mvcclab experiment` shares: the common flags, the measured phase of a
//! database opened by hand (counts from before its statements to after the purge wait and
//! checkpoint that close it; `system_versioning` — `update_hot_set` and `version_chain`
//! take the run layer's subjects through `bench::experiment_phase` instead), and the
//! designs the flags name. Used by `experiments.rs` and `experiment_sysver.rs`, so that
//! neither imports the other.

use crate::bench::{
    close, parse_report_interval, parse_shard, phase_report_of, resolve_spec, sampled,
    wait_for_purge, CounterReading, DeviceArgs, Mark, Reading, RunSpec, ServerArgs, Shard,
};
use crate::design_arg::resolve_design;
use crate::export::OutputArgs;
use crate::result::PhaseReport;
use anyhow::Result;
use clap::Args;
use mvcclab_engine::db::{Database, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::stats::Counters;
use mvcclab_workload::driver::RunControl;
use std::sync::atomic::Ordering;

/// Flags every experiment takes.
#[derive(Args, Debug, Clone)]
pub struct ExperimentCommon {
    /// Designs, comma-separated: presets, design files (FILE.toml), or real servers
    /// (`real:postgresql`, `real:mariadb`, `real:myrocks`: update_hot_set and
    /// version_chain), each
    /// started on mvcclab's device (FUSE, root) with the same device flags.
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Change a switch of every design: SWITCH=VALUE.
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Seed of the random numbers.
    #[arg(long, default_value_t = 1)]
    pub rand_seed: u64,
    /// Seconds per sample of each phase's time series (`phases[].timeseries`), as
    /// sysbench's --report-interval; 0 = no time series.
    #[arg(long, default_value_t = 1.0, value_parser = parse_report_interval)]
    pub report_interval: f64,
    /// Run only grid points I, I+N, … (I from 0) of the designs × variants × bandwidths,
    /// each into its own file in --report DIR; points already there are skipped. Join the
    /// shards' directories with `mvcclab report --merge` (docs/experiments.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Memory and device (`--bandwidth` may list several values: one run per design and
    /// bandwidth).
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Real servers (`real:NAME` in --designs).
    #[command(flatten)]
    pub server: ServerArgs,
    /// Report format (csv: one row per design and phase) and destination.
    #[command(flatten)]
    pub out: OutputArgs,
}

/// Runs `f` as a measured phase on table `t`: counts from before `f` to after the purge
/// wait and checkpoint that close it, sampled every `interval_s` seconds into the phase's
/// time series (bench/series.rs; the samples add up to the phase's counts). `f` returns
/// the statements it ran and counts its events in `ctl` (`completed`, `statements`).
pub fn phase(
    db: &Database,
    t: TableId,
    name: &str,
    interval_s: f64,
    ctl: &RunControl,
    f: impl FnOnce() -> Result<u64>,
) -> Result<PhaseReport> {
    let mark = Mark::take(db, &[t])?;
    let read = || {
        let counters = mark.io_since(db);
        Some(CounterReading {
            total: counters.total(),
            counters,
            ..Default::default()
        })
    };
    let (ops, readings, elapsed_s) = sampled(interval_s, None, ctl, None, &read, || {
        let ops = f()?;
        wait_for_purge(db);
        db.storage().checkpoint()?;
        anyhow::Ok(ops)
    });
    let ops = ops?;
    let last = Reading {
        at_s: elapsed_s,
        transactions: ctl.completed.load(Ordering::Relaxed),
        statements: ctl.statements.load(Ordering::Relaxed),
        latency: ctl.take_interval_latency(),
        counters: CounterReading::default(),
    };
    let mut report = phase_report_of(name, ops, elapsed_s, mark.since(db, &[t])?);
    if interval_s > 0.0 {
        let mut last = last;
        last.counters.total = report.total;
        last.counters.counters = Counters {
            by_cause: report.by_cause.clone(),
        };
        report.timeseries = close(name, readings, last, &|_| false);
    }
    Ok(report)
}

/// The designs and real servers `--designs` names, with `--set` applied to the designs.
///
/// Errors: an unknown preset or real server, a bad design file or switch.
pub fn specs_of(c: &ExperimentCommon) -> Result<Vec<RunSpec>> {
    c.designs.iter().map(|d| resolve_spec(d, &c.set)).collect()
}

/// The designs `--designs` names, with `--set` applied.
///
/// Errors: an unknown preset, a bad design file or switch.
pub fn designs_of(c: &ExperimentCommon) -> Result<Vec<DesignConfig>> {
    c.designs
        .iter()
        .map(|d| resolve_design(d, &c.set))
        .collect()
}
