//! What every `mvcclab experiment` shares: the common flags and the designs they name
//! (the experiments' phases go through the run layer's `bench::experiment_phase`). Used
//! by `experiments.rs` and `experiment_sysver.rs`, so that neither imports the other.

use crate::bench::{
    parse_report_interval, parse_shard, resolve_spec, DeviceArgs, RunSpec, ServerArgs, Shard,
};
use crate::design_arg::resolve_design;
use crate::export::OutputArgs;
use anyhow::Result;
use clap::Args;
use mvcclab_engine::design::DesignConfig;

/// Flags every experiment takes.
#[derive(Args, Debug, Clone)]
pub struct ExperimentCommon {
    /// Designs, comma-separated: presets, design files (FILE.toml), or real servers
    /// (`real:postgresql`, `real:mariadb`, `real:myrocks`: update_hot_set,
    /// version_chain and system_versioning), each
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
