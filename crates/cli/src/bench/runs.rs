//! One run of a spec on its subject ([`run_spec`]), and every spec × bandwidth of a
//! command, one after the other, stopping early on Ctrl-C
//! (runs not yet started are skipped, the report says what ran).

use super::args::CommonArgs;
use super::embedded::EmbeddedRun;
use super::server::ServerRun;
use super::spec::{check_common, RunSpec};
use super::subject::run_subject;
use super::versions::version_notes;
use crate::progress::{install_ctrl_c, status};
use crate::result::{Report, RunReport};
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
    let runs = run_specs_with(specs, c, &ctl)?;
    // A preset beside a server version it models only with a switch (fidelity sets it).
    for note in version_notes(&runs) {
        status(c.out.quiet, &note);
    }
    Ok(Report::new(command, runs))
}

/// The runs of [`run_specs`] under a caller's Ctrl-C control (flags already checked).
///
/// Errors: a design or server failing.
pub fn run_specs_with(
    specs: &[RunSpec],
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<Vec<RunReport>> {
    let bandwidths: Vec<Option<f64>> = if c.device.bandwidth.is_empty() {
        vec![None]
    } else {
        c.device.bandwidth.iter().map(|&b| Some(b)).collect()
    };
    let mut runs = Vec::new();
    'all: for b in &bandwidths {
        for spec in specs {
            if ctl.stop.load(Ordering::Relaxed) {
                status(c.out.quiet, "Ctrl-C: skipping the remaining runs");
                break 'all;
            }
            runs.push(run_spec(spec, c, *b, ctl)?);
        }
    }
    Ok(runs)
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
