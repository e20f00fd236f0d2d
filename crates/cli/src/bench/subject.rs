//! One path for every run: prepare → settle → warm-up → measure → report, the same for an
//! embedded design (`EmbeddedRun`, embedded.rs) and a real server (`ServerRun`,
//! server.rs), each behind the [`Subject`] trait, as sysbench runs
//! `prepare`, then `run` with a warm-up (`--warmup-time`), against any driver. The
//! measured phase is sampled once per `--report-interval` into `results.timeseries`
//! (series.rs).
//!
//! The named experiments (`mvcclab experiment`) take the same subjects through their own
//! phases ([`experiment_phase`]): the subject's tables marked, the phase's statements run
//! (the driver on [`Subject::target`], or [`Subject::update_by_key`]), the phase closed
//! by [`Subject::end_phase`] (purge caught up, a checkpoint), and its figures read by
//! [`Subject::phase_report`] — the same path for a design and a real server.

use super::args::{sysbench_options, CommonArgs};
use super::series::{close, sampled, CounterReading, Reading};
use crate::error::driver_error;
use crate::progress::{status, with_progress, LiveRates};
use crate::result::{
    engine_series_counters, DeviceInfo, PhaseReport, RunCpu, RunReport, ServerInfo, WarmupResult,
};
use anyhow::Result;
use mvcclab_engine::catalog::{TableDef, Value};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::stats::Counters;
use mvcclab_servers::cpu::{
    children_of, process_cpu, tree_cpu, wait_children_reaped, CpuUse, TreeCpu,
};
use mvcclab_workload::driver::{run as drive, RunControl, RunOptions, RunResult, Target};
use mvcclab_workload::fault::FaultTarget;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::sync::atomic::Ordering;

/// What a run measures, opened and ready to load: an embedded design or a real server.
/// `Sync`: the time series' sampler reads its counters from a thread of its own while the
/// driver runs.
pub trait Subject: Sync {
    /// The counters at the start of the measured phase.
    type Mark: Sync;
    /// The name its status lines, progress bars and errors show.
    fn label(&self) -> &str;
    /// The driver's target.
    fn target(&self) -> &dyn Target;
    /// The process id of the managed server it runs on, for its CPU time (`None` for a
    /// preset or a `--url` server).
    fn server_pid(&self) -> Option<u32> {
        None
    }
    /// Loads the tables as sysbench's `prepare` does.
    ///
    /// Errors: the target's, naming the step.
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<()>;
    /// Brings the loaded tables to a settled state before the warm-up (a checkpoint; for
    /// a server also its vacuum or purge, and the dropped OS cache with `--drop-caches`).
    ///
    /// Errors: the engine's or the server's.
    fn settle(&self, c: &CommonArgs) -> Result<()>;
    /// The counters at the start of the measured phase.
    ///
    /// Errors: the engine's or the server's.
    fn mark(&self, c: &CommonArgs) -> Result<Self::Mark>;
    /// The counters at the start of an experiment's phase on the tables named `tables`
    /// (a server sums its counters over sysbench's and the experiments' tables whatever
    /// is named).
    ///
    /// Errors: an unknown table; the engine's or the server's.
    fn mark_tables(&self, tables: &[String]) -> Result<Self::Mark>;
    /// The counters now, cumulative since `mark`, for the time series; reads only.
    ///
    /// Errors: the engine's or the server's, reading the counters.
    fn reading(&self, mark: &Self::Mark) -> Result<CounterReading>;
    /// The report of the run: the counters since `mark` with the driver's `results`.
    ///
    /// Errors: the engine's or the server's, reading the counters.
    fn report(
        self,
        mark: Self::Mark,
        kind: WorkloadKind,
        opts: SysbenchOptions,
        c: &CommonArgs,
        results: RunResult,
    ) -> Result<RunReport>;

    /// The design (a real server: the preset that models it, named `real:NAME`), the
    /// memory and device settings, and a real server's section without counters, for an
    /// experiment's run.
    fn describe(&self) -> (DesignConfig, DeviceInfo, Option<ServerInfo>);
    /// Creates table `def` (its primary key and secondary indexes) and inserts `rows` in
    /// transactions of at most 1,000 rows, unmeasured (an experiment's load).
    ///
    /// Errors: the engine's or the server's, naming the step.
    fn load_table(&self, def: &TableDef, rows: &mut dyn Iterator<Item = Vec<Value>>) -> Result<()>;
    /// One autocommit `UPDATE` of column `col` of `def` to `v` in the row whose (integer,
    /// single-column) primary key is `id`; whether the row was there.
    ///
    /// Errors: the engine's or the server's.
    fn update_by_key(&self, def: &TableDef, id: i32, col: usize, v: &Value) -> Result<bool>;
    /// Closes an experiment's phase so that the pages it dirtied are written, and
    /// counted, in it: purge caught up to an empty history list (designs and servers with
    /// purge), then a checkpoint (a server: its settle step, without dropping caches).
    ///
    /// Errors: the engine's or the server's (purge not catching up).
    fn end_phase(&self) -> Result<()>;
    /// A manual garbage collection of table `table`: VACUUM (heap designs, PostgreSQL),
    /// purge to the end of the history list (InnoDB).
    ///
    /// Errors: the engine's or the server's.
    fn collect_garbage(&self, table: &str) -> Result<()>;
    /// The figures of an experiment's phase named `name` since `mark`, which ran `ops`
    /// statements in `elapsed_s` seconds (no time series: [`experiment_phase`] adds it).
    ///
    /// Errors: the engine's or the server's, reading the counters.
    fn phase_report(
        &self,
        mark: Self::Mark,
        name: &str,
        ops: u64,
        elapsed_s: f64,
    ) -> Result<PhaseReport>;
}

/// Runs `f` as an experiment's measured phase named `name` on `s`: counts from before `f`
/// to after the [`Subject::end_phase`] that closes it, sampled every `interval_s` seconds
/// into the phase's time series (series.rs; the samples add up to the phase's counts).
/// `f` returns the statements it ran and counts its events in `ctl` (`completed`,
/// `statements`).
///
/// Errors: `f`'s; the subject's, marking, closing or reading the phase.
pub fn experiment_phase<S: Subject>(
    s: &S,
    tables: &[String],
    name: &str,
    interval_s: f64,
    ctl: &RunControl,
    f: impl FnOnce() -> Result<u64>,
) -> Result<PhaseReport> {
    let mark = s.mark_tables(tables)?;
    let read = || s.reading(&mark).ok();
    let (ops, readings, elapsed_s) = sampled(interval_s, None, ctl, None, &read, || {
        let ops = f()?;
        s.end_phase()?;
        anyhow::Ok(ops)
    });
    let ops = ops?;
    let latency = ctl.take_interval_latency();
    let tail = (interval_s > 0.0).then(|| s.reading(&mark).unwrap_or_default());
    let mut report = s.phase_report(mark, name, ops, elapsed_s)?;
    if let Some(mut tail) = tail {
        tail.total = report.total;
        tail.counters = Counters {
            by_cause: report.by_cause.clone(),
        };
        let (server, state) = report
            .server
            .as_ref()
            .map(|p| (p.counters.clone(), p.state_counters.clone()))
            .unwrap_or_default();
        if report.server.is_some() {
            tail.server = server;
        }
        let last = Reading {
            at_s: elapsed_s,
            transactions: ctl.completed.load(Ordering::Relaxed),
            statements: ctl.statements.load(Ordering::Relaxed),
            latency,
            counters: tail,
        };
        report.timeseries = close(name, readings, last, &|k: &str| {
            state.iter().any(|n| n == k)
        });
    }
    Ok(report)
}

/// The path of every run on an opened subject: load, settle, warm up, mark, measure,
/// report.
///
/// Errors: bad options ([`crate::UsageError`]); the engine or the server failing to load,
/// settle or report.
pub fn run_subject<S: Subject>(
    s: S,
    kind: WorkloadKind,
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<RunReport> {
    let opts = sysbench_options(c);
    let what = if kind == WorkloadKind::Tpcc {
        format!(
            "{} TPC-C table set(s) of {} warehouse(s)",
            c.tables, c.scale
        )
    } else {
        format!("{} × {} rows", c.tables, c.table_size)
    };
    status(c.out.quiet, &format!("{}: loading {what} ...", s.label()));
    s.prepare(kind, &opts, c.rand_seed)?;
    run_loaded(s, kind, c, ctl)
}

/// [`run_subject`] on a subject whose tables are loaded already (a saved load restored,
/// bench/loaded.rs): settle, warm up, mark, measure, report.
///
/// Errors: as [`run_subject`].
pub fn run_loaded<S: Subject>(
    s: S,
    kind: WorkloadKind,
    c: &CommonArgs,
    ctl: &RunControl,
) -> Result<RunReport> {
    let opts = sysbench_options(c);
    s.settle(c)?;
    let warmup = warm_up(s.target(), kind, &opts, c, s.label(), ctl)?;
    let mark = s.mark(c)?;
    let cpu_before = CpuNow::take(s.server_pid());
    let live = LiveRates::default();
    let read = || s.reading(&mark).ok();
    let (results, readings, end_s) = sampled(
        c.report_interval,
        (c.time > 0.0).then_some(c.time),
        ctl,
        Some(&live),
        &read,
        || measure(s.target(), kind, &opts, c, s.label(), ctl, Some(&live)),
    );
    let results = results?;
    // The phase's sessions have closed: wait for their backends to be reaped, so that
    // their CPU is in the postmaster's cumulative child fields at the last reading.
    if let Some(pid) = s.server_pid() {
        wait_children_reaped(pid, &cpu_before.children, std::time::Duration::from_secs(5));
    }
    let cpu = CpuNow::take(s.server_pid()).since(&cpu_before, end_s);
    // The last reading: the driver's final counts and the counters the report's totals
    // come from (series.rs, invariant 2); `reading` only for what the report does not
    // keep (a server's blocks on mvcclab's device), so a failed read costs only that.
    let latency = ctl.take_interval_latency();
    let tail = (c.report_interval > 0.0).then(|| s.reading(&mark).unwrap_or_default());
    let mut report = s.report(mark, kind, opts, c, results)?;
    report.results.warmup = warmup.as_ref().map(WarmupResult::of);
    report.cpu_seconds = Some(RunCpu {
        fuse_daemon_s: report.device.fuse_daemon_cpu_s,
        ..cpu
    });
    if let Some(mut tail) = tail {
        tail.total = report.io.total;
        tail.counters = Counters {
            by_cause: report.io.by_cause.clone(),
        };
        let (server, state) = report
            .server
            .as_ref()
            .map(|i| (i.counters.clone(), i.state_counters.clone()))
            .unwrap_or_default();
        tail.server = if report.server.is_some() {
            server
        } else {
            // The report's totals, so that the samples add up to them exactly.
            engine_series_counters(&report.design, &report.engine.undo)
        };
        let last = Reading {
            at_s: end_s,
            transactions: report.results.transactions,
            statements: report.results.queries,
            latency,
            counters: tail,
        };
        report.results.timeseries = close("measure", readings, last, &|k: &str| {
            state.iter().any(|n| n == k)
        });
    }
    Ok(report)
}

/// CPU use of mvcclab's own process and of a managed server's process tree at one
/// moment (servers/src/cpu.rs, from /proc).
struct CpuNow {
    own: CpuUse,
    server: Option<TreeCpu>,
    /// The server's direct children at the reading (PostgreSQL's auxiliary processes and
    /// the sessions open then).
    children: std::collections::BTreeSet<u32>,
}

impl CpuNow {
    fn take(server_pid: Option<u32>) -> CpuNow {
        CpuNow {
            own: process_cpu(std::process::id()).unwrap_or_default(),
            server: server_pid.and_then(|p| tree_cpu(p).ok()),
            children: server_pid.map(children_of).unwrap_or_default(),
        }
    }

    /// The CPU seconds from `before` to this reading, over `elapsed_s` of wall clock.
    fn since(&self, before: &CpuNow, elapsed_s: f64) -> RunCpu {
        let secs = |u: &CpuUse| u.task_clock_us() as f64 / 1e6;
        let server_s = match (&self.server, &before.server) {
            (Some(a), Some(b)) => a
                .minus(b)
                .by_kind
                .iter()
                .map(|(k, u)| (k.clone(), secs(u)))
                .filter(|(_, v)| *v > 0.0)
                .collect(),
            _ => Default::default(),
        };
        RunCpu {
            mvcclab_s: secs(&self.own.minus(&before.own)),
            fuse_daemon_s: None,
            server_s,
            elapsed_s,
        }
    }
}

/// The driver's options of the warm-up: `c.warmup` seconds of `c.threads` threads at
/// `--warmup-rate` when given, else at `--rate` (sysbench has one rate for its
/// `--warmup-time` and its run; `fidelity` paces a preset's warm-up at its server's
/// warm-up TPS and its measured phase at the server's measured TPS).
pub fn warmup_options(c: &CommonArgs) -> RunOptions {
    RunOptions {
        threads: c.threads,
        time_s: c.warmup,
        events: 0,
        rand_seed: c.rand_seed ^ 0xA5A5,
        rate_tps: c.warmup_rate.unwrap_or(c.rate),
        ignore_errors: c.ignore_errors.clone(),
    }
}

/// The unmeasured warm-up of `c.warmup` seconds (skipped after a Ctrl-C), on any target,
/// with [`warmup_options`]; the driver's figures of it (`None` when skipped).
///
/// Errors: the driver's: bad options ([`crate::UsageError`]), a session that cannot open, an
/// error that `--ignore-errors` does not ignore (exit 1, see [`driver_error`]).
pub fn warm_up(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    c: &CommonArgs,
    label: &str,
    ctl: &RunControl,
) -> Result<Option<RunResult>> {
    if c.warmup > 0.0 && !ctl.stop.load(Ordering::Relaxed) {
        let warm = warmup_options(c);
        let r = drive_shown(
            target,
            kind,
            opts,
            &warm,
            c,
            &format!("{label} warm-up"),
            ctl,
            None,
        )
        .map_err(|e| driver_error(&warm, format!("{label}: warm-up: {e}")))?;
        return Ok(Some(r));
    }
    Ok(None)
}

/// The measured phase (`--time` / `--events`) on any target, under a progress bar that
/// shows `live`'s rates when given; with `--inject-error-every-ops` the target is wrapped
/// in a `FaultTarget` (tests).
///
/// Errors: the driver's (as [`warm_up`]).
pub fn measure(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    c: &CommonArgs,
    label: &str,
    ctl: &RunControl,
    live: Option<&LiveRates>,
) -> Result<RunResult> {
    let run_opts = RunOptions {
        threads: c.threads,
        time_s: c.time,
        events: c.events,
        rand_seed: c.rand_seed,
        rate_tps: c.rate,
        ignore_errors: c.ignore_errors.clone(),
    };
    let faulty = FaultTarget {
        inner: target,
        every_ops: c.inject_error_every_ops,
    };
    let target: &dyn Target = if c.inject_error_every_ops > 0 {
        &faulty
    } else {
        target
    };
    drive_shown(target, kind, opts, &run_opts, c, label, ctl, live)
        .map_err(|e| driver_error(&run_opts, format!("{label}: {e}")))
}

/// One driver run of `run` on `target` under a progress bar named `label` (hidden with
/// `--quiet` or off a terminal), showing `live`'s rates when given.
///
/// Errors: the driver's, as text.
#[allow(clippy::too_many_arguments)]
fn drive_shown(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    run: &RunOptions,
    c: &CommonArgs,
    label: &str,
    ctl: &RunControl,
    live: Option<&LiveRates>,
) -> std::result::Result<RunResult, String> {
    with_progress(
        label,
        run.time_s,
        run.events,
        ctl,
        c.out.quiet,
        live,
        || drive(target, kind, opts, run, ctl),
    )
}
