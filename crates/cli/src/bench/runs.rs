//! One run of a spec on its subject ([`run_spec`]), and every spec × bandwidth of a
//! command, one after the other (each design loaded once for all its bandwidths where it
//! can be, loaded.rs), stopping early on Ctrl-C
//! (runs not yet started are skipped, the report says what ran); the same points as a
//! grid ([`spec_grid`]) for `--shard` ([`run_specs_sharded`]).

use super::args::{driver_info, sysbench_options, CommonArgs};
use super::embedded::EmbeddedRun;
use super::grid::{run_shard, shard_dir, Grid, PointResult, PointSpec, Shard};
use super::loaded::{can_load_once, load_once, run_from_load, Loaded};
use super::server::ServerRun;
use super::spec::{check_common, RunSpec};
use super::subject::run_subject;
use super::versions::version_notes;
use crate::progress::{install_ctrl_c, status};
use crate::result::{LoadReport, Report, RunReport};
use crate::UsageError;
use anyhow::Result;
use mvcclab_workload::driver::RunControl;
use mvcclab_workload::sysbench::WorkloadKind;
use std::sync::atomic::Ordering;

/// Runs every design × bandwidth, stopping early on Ctrl-C, and returns the report.
///
/// Errors: bad flags ([`UsageError`]), a design or server failing.
pub fn run_specs(command: &str, specs: &[RunSpec], c: &CommonArgs) -> Result<Report> {
    check_common(c, specs)?;
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let (runs, loads) = run_specs_with_loads(specs, c, &ctl)?;
    // A preset beside a server version it models only with a switch (fidelity sets it).
    for note in version_notes(&runs) {
        status(c.out.quiet, &note);
    }
    let mut report = Report::new(command, runs);
    report.loads = loads;
    Ok(report)
}

/// The runs of [`run_specs`] under a caller's Ctrl-C control (flags already checked).
///
/// Errors: a design or server failing.
pub fn run_specs_with(
    specs: &[RunSpec],
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<Vec<RunReport>> {
    Ok(run_specs_with_loads(specs, c, ctl)?.0)
}

/// [`run_specs_with`], and the report of each design's one load: with several
/// bandwidths, a design whose tables can be kept ([`can_load_once`]) is loaded once,
/// before its first run, and every run of it starts from that load (loaded.rs); the
/// others load per run.
///
/// Errors: as [`run_specs_with`]; a load or restore failing.
pub fn run_specs_with_loads(
    specs: &[RunSpec],
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<(Vec<RunReport>, Vec<LoadReport>)> {
    let once = c.device.bandwidth.len() > 1;
    let mut loaded: Vec<Option<Loaded>> = specs.iter().map(|_| None).collect();
    let mut runs = Vec::new();
    for (i, b) in grid_order(specs.len(), &c.device.bandwidth) {
        if ctl.stop.load(Ordering::Relaxed) {
            status(c.out.quiet, "Ctrl-C: skipping the remaining runs");
            break;
        }
        if once && can_load_once(&specs[i], c) {
            let l = match &mut loaded[i] {
                Some(l) => l,
                slot => slot.insert(load_once(&specs[i], c)?),
            };
            runs.push(run_from_load(l, c, b, ctl)?);
        } else {
            runs.push(run_spec(&specs[i], c, b, ctl)?);
        }
    }
    let loads = loaded.into_iter().flatten().map(|l| l.report).collect();
    Ok((runs, loads))
}

/// The bandwidths of `--bandwidth` (one `None`, unthrottled, when it is not given).
pub fn bandwidth_list(bandwidths: &[f64]) -> Vec<Option<f64>> {
    if bandwidths.is_empty() {
        vec![None]
    } else {
        bandwidths.iter().map(|&b| Some(b)).collect()
    }
}

/// The order of a command's runs: (spec index, bandwidth), bandwidth outermost.
fn grid_order(specs: usize, bandwidths: &[f64]) -> Vec<(usize, Option<f64>)> {
    bandwidth_list(bandwidths)
        .into_iter()
        .flat_map(|b| (0..specs).map(move |i| (i, b)))
        .collect()
}

/// The grid of `command` (`run`, `compare`) over `specs` (as the user named them in
/// `designs`) × the bandwidths of `c`, in the order [`run_specs`] runs them. Its
/// parameters are every flag of `c` except the output flags and `--data-dir`.
pub fn spec_grid(command: &str, designs: &[String], specs: &[RunSpec], c: &CommonArgs) -> Grid {
    let d = &c.device;
    let parameters = serde_json::json!({
        "designs": designs,
        "set": c.set,
        "workload": c.workload,
        "options": sysbench_options(c),
        "driver": driver_info(c),
        "device": d.grid_parameters(),
        "urls": c.server.urls,
        "drop_caches": c.server.drop_caches,
        "exact_device_io": c.server.exact_device_io,
    });
    let points = grid_order(specs.len(), &d.bandwidth)
        .into_iter()
        .map(|(i, b)| PointSpec {
            design: specs[i].name(),
            design_config: match &specs[i] {
                RunSpec::Embedded(design) => serde_json::to_value(design).unwrap_or_default(),
                RunSpec::Real(k) => serde_json::Value::String(k.design_name()),
            },
            variant: String::new(),
            bandwidth_mib_s: b,
        })
        .collect();
    Grid::new(command, parameters, points)
}

/// `--shard`: runs the points of `shard` of [`spec_grid`] that have no file in
/// `--report DIR` yet, each written into its own point file (bench/grid.rs).
///
/// Errors: bad flags or no `--report` ([`UsageError`]); a design or server failing.
pub fn run_specs_sharded(
    command: &str,
    designs: &[String],
    specs: &[RunSpec],
    c: &CommonArgs,
    shard: Shard,
) -> Result<()> {
    check_common(c, specs)?;
    let dir = shard_dir(&c.out.report)?;
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let grid = spec_grid(command, designs, specs, c);
    let once = c.device.bandwidth.len() > 1;
    run_shard(&grid, shard, dir, c.out.quiet, |p| {
        let i = p.index % specs.len();
        // As unsharded (run_specs_with_loads): a point of a bandwidth grid starts from a
        // saved load, here its own, so that both give the same starting state.
        let run = if once && can_load_once(&specs[i], c) {
            run_from_load(&mut load_once(&specs[i], c)?, c, p.bandwidth_mib_s, &ctl)?
        } else {
            run_spec(&specs[i], c, p.bandwidth_mib_s, &ctl)?
        };
        if ctl.stop.load(Ordering::Relaxed) || run.results.interrupted {
            return Ok(None);
        }
        for note in version_notes(std::slice::from_ref(&run)) {
            status(c.out.quiet, &note);
        }
        Ok(Some(PointResult::Run(Report::new(command, vec![run]))))
    })
}

/// Runs the workload of `c` on `spec` with device bandwidth `bandwidth` and returns its
/// report. A Ctrl-C (`ctl.stop`) ends the warm-up or the measured phase early; the report
/// then says `interrupted`.
///
/// Errors: bad options ([`UsageError`]); the engine or the server failing to open, load
/// or report (the message names the server and the statement).
pub fn run_spec(
    spec: &RunSpec,
    c: &CommonArgs,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<RunReport> {
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    if c.tables == 0 || c.table_size == 0 {
        return Err(UsageError("--tables and --table-size must be at least 1".into()).into());
    }
    match spec {
        RunSpec::Embedded(d) => run_subject(EmbeddedRun::open(d, c, bandwidth)?, kind, c, ctl),
        RunSpec::Real(k) => run_subject(ServerRun::open(*k, c, bandwidth)?, kind, c, ctl),
    }
}
