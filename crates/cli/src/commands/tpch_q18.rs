//! TPC-H from the command line: `mvcclab run --workload tpch --query N` (one query on a
//! preset or a real server) and `mvcclab experiment tpch_q18` (seed 000 §2.3: Q18's
//! duration and the 4 KiB pages it requests per second, per design, bandwidth and cache
//! state, with blocks by cause).
//!
//! A preset is loaded once, unthrottled, into a data directory (`--data-dir`, or a
//! temporary one), closed, and reopened for each run with the run's bandwidth: "cold"
//! is a fresh open (empty buffer pool and emulated OS page cache), "warm" runs the query
//! once unmeasured first. A real server is a managed one (mvcclab_servers::tpch), loaded
//! with COPY / LOAD DATA and ANALYZE; its reads are the engine's own counters
//! (PostgreSQL `pg_stat_database.blks_read` in 8 KiB pages; InnoDB
//! `Innodb_buffer_pool_reads` plus read-ahead in 16 KiB pages), converted to 4 KiB
//! blocks. Throttling a real server needs the FUSE device (not wired into this command
//! yet): its runs are unthrottled and say so.

use crate::bench::{database_config, CommonArgs, DeviceArgs, RunSpec};
use crate::error::engine_error;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::db::Database;
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::stats::Cause;
use mvcclab_engine::storage::Backing;
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::tpch::{TpchServer, PG_PARALLEL_WORKERS_PER_GATHER};
use mvcclab_servers::ServerKind;
use mvcclab_workload::tpch::{check_scale_factor, QueryParams};
use mvcclab_workload::tpch_embedded::{self, TpchTables};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// TPC-H flags of `mvcclab run --workload tpch` and `experiment tpch_q18`.
#[derive(Args, Debug, Clone)]
pub struct TpchArgs {
    /// tpch: the query (1..=22 on real servers; 1, 6 and 18 on the presets).
    #[arg(long, default_value_t = 18)]
    pub query: u32,
    /// tpch: the TPC-H scale factor (SF 1: 6,001,215 lineitem rows, about 1 GiB of text).
    #[arg(long, default_value_t = 0.1)]
    pub scale_factor: f64,
    /// tpch: statement timeout in seconds (PostgreSQL statement_timeout, MariaDB
    /// max_statement_time); a query stopped by it is reported as timed out. The presets
    /// run a query to its end.
    #[arg(long, default_value_t = 600.0)]
    pub query_timeout: f64,
    /// tpch: Q18's quantity instead of the validation value 300 (at SF 0.01, 250 returns
    /// rows; 300 returns none).
    #[arg(long)]
    pub q18_quantity: Option<u32>,
}

impl TpchArgs {
    /// Checks the flags.
    ///
    /// Errors: [`UsageError`] naming the flag.
    pub fn check(&self) -> Result<()> {
        check_scale_factor(self.scale_factor).map_err(UsageError)?;
        if !(1..=22).contains(&self.query) {
            return Err(
                UsageError(format!("--query {}: TPC-H has queries 1 to 22", self.query)).into(),
            );
        }
        if !(self.query_timeout.is_finite() && self.query_timeout > 0.0) {
            return Err(UsageError(format!(
                "--query-timeout {}: seconds above 0",
                self.query_timeout
            ))
            .into());
        }
        Ok(())
    }

    fn params(&self) -> QueryParams {
        QueryParams {
            scale_factor: self.scale_factor,
            q18_quantity: self.q18_quantity,
        }
    }
}

/// One TPC-H query run.
#[derive(Clone, Debug, Serialize)]
pub struct TpchRun {
    /// The design (`postgres`, `innodb`, …) or `real:postgresql` / `real:mariadb`.
    pub design: String,
    /// TPC-H scale factor.
    pub scale_factor: f64,
    /// Query number.
    pub query: u32,
    /// Device bandwidth in MiB/s (`None`: unthrottled).
    pub bandwidth_mib_s: Option<f64>,
    /// `cold` (fresh buffer pool and OS cache) or `warm` (the query ran once before).
    pub cache: String,
    /// Wall-clock duration of the query in µs (under the machine's load at the time).
    pub duration_us: u64,
    /// The statement timeout stopped it (real servers).
    pub timed_out: bool,
    /// Rows returned.
    pub rows_returned: usize,
    /// The plan followed (presets: the shape of the real engine's plan; servers: the
    /// shape of their own EXPLAIN).
    pub plan: Vec<String>,
    /// 4 KiB blocks read from the device during the query, by cause (presets), or the
    /// engine's own read counter converted to 4 KiB blocks under `engine_reads` (servers).
    pub read_blocks_4k_by_cause: BTreeMap<String, u64>,
    /// 4 KiB blocks written during the query, by cause (presets).
    pub write_blocks_4k_by_cause: BTreeMap<String, u64>,
    /// 4 KiB blocks read per second of the query, one value per `--report-interval`
    /// (default 1 s) of wall time, divided by the interval (presets).
    pub read_blocks_4k_per_s: Vec<f64>,
    /// Bytes the preset's hash, sort or temporary-table operators held past their memory
    /// limit (work_mem / tmp_memory_table_size), written to and read back from a temporary
    /// file (cause `temp`).
    pub temp_spill_bytes: u64,
    /// What the run's figures mean and leave out.
    pub notes: Vec<String>,
}

fn block_maps(
    delta: &mvcclab_engine::stats::Counters,
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let (mut r, mut w) = (BTreeMap::new(), BTreeMap::new());
    for &c in Cause::ALL {
        let cc = delta.cause(c);
        if cc.read_bytes > 0 {
            r.insert(c.name().to_string(), cc.read_bytes / 4096);
        }
        if cc.write_bytes > 0 {
            w.insert(c.name().to_string(), cc.write_bytes / 4096);
        }
    }
    (r, w)
}

/// A preset loaded once into a data directory, reopened per run.
pub struct LoadedPreset {
    design: DesignConfig,
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl LoadedPreset {
    /// Loads `design` at `sf` unthrottled into `DIR/<design>-tpch` under `data_dir` (or a
    /// temporary directory removed on drop), with the pool and OS cache of `dev`.
    ///
    /// Errors: the engine's; a directory that cannot be made.
    pub fn load(design: &DesignConfig, dev: &DeviceArgs, sf: f64) -> Result<LoadedPreset> {
        let (tmp, base) = match &dev.data_dir {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("mvcclab-tpch-")
                    .tempdir()
                    .context("creating a temporary data directory")?;
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        let dir = base.join(format!("{}-tpch", design.name));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        let db = open_at(design, dev, &dir, None)?;
        tpch_embedded::load(&db, sf)
            .map_err(|e| anyhow::anyhow!("{}: TPC-H load: {e}", design.name))?;
        db.close().map_err(engine_error)?;
        Ok(LoadedPreset {
            design: design.clone(),
            dir,
            _tmp: tmp,
        })
    }

    /// Runs query `t.query` once on a fresh open with `bandwidth`; `warm` runs it once
    /// unmeasured first. `interval_s` is the time series' step.
    ///
    /// Errors: the engine's; a query the presets do not run ([`UsageError`]).
    pub fn run(
        &self,
        dev: &DeviceArgs,
        t: &TpchArgs,
        bandwidth: Option<f64>,
        warm: bool,
        interval_s: f64,
    ) -> Result<TpchRun> {
        check_preset_query(t)?;
        let db = Arc::new(open_at(&self.design, dev, &self.dir, bandwidth)?);
        let tables = TpchTables::open(&db).map_err(anyhow::Error::msg)?;
        let p = t.params();
        if warm {
            tpch_embedded::run_query(&db, &tables, t.query, &p).map_err(anyhow::Error::msg)?;
        }
        let stats = db.storage().stats().clone();
        let before = stats.snapshot();
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (stats, stop) = (stats.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut series = Vec::new();
                let mut last = stats.snapshot().total().read_bytes;
                let step = Duration::from_secs_f64(interval_s);
                let mut next = Instant::now() + step;
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                    if Instant::now() >= next {
                        let now = stats.snapshot().total().read_bytes;
                        series.push((now - last) as f64 / 4096.0 / interval_s);
                        last = now;
                        next += step;
                    }
                }
                series
            })
        };
        let t0 = Instant::now();
        let r = tpch_embedded::run_query(&db, &tables, t.query, &p);
        let duration_us = t0.elapsed().as_micros() as u64;
        stop.store(true, Ordering::Relaxed);
        let series = sampler.join().unwrap_or_default();
        let r = r.map_err(anyhow::Error::msg)?;
        let delta = stats.snapshot().delta(&before);
        let (reads, writes) = block_maps(&delta);
        drop(tables);
        if let Ok(db) = Arc::try_unwrap(db) {
            db.close().map_err(engine_error)?;
        }
        Ok(TpchRun {
            design: self.design.name.clone(),
            scale_factor: t.scale_factor,
            query: t.query,
            bandwidth_mib_s: bandwidth,
            cache: if warm { "warm" } else { "cold" }.into(),
            duration_us,
            timed_out: false,
            rows_returned: r.rows.len(),
            plan: r.plan,
            read_blocks_4k_by_cause: reads,
            write_blocks_4k_by_cause: writes,
            read_blocks_4k_per_s: series,
            temp_spill_bytes: r.temp_spill_bytes,
            notes: vec![
                "plan: the real engine's at SF 0.01 (crates/workload/plans), executed over the preset's access paths".into(),
                "temp: spills written and read back after the operators finish (their blocks sit at the end of the series)".into(),
            ],
        })
    }
}

/// Refuses a query the presets do not run, before anything is loaded.
///
/// Errors: [`UsageError`] naming `--query`.
fn check_preset_query(t: &TpchArgs) -> Result<()> {
    if tpch_embedded::preset_plan_shape(tpch_embedded::TpchEngine::PostgreSql, t.query).is_none() {
        return Err(UsageError(format!(
            "--query {}: the presets run Q1, Q6 and Q18 (the real servers run all 22)",
            t.query
        ))
        .into());
    }
    Ok(())
}

fn open_at(
    design: &DesignConfig,
    dev: &DeviceArgs,
    dir: &Path,
    bandwidth: Option<f64>,
) -> Result<Database> {
    let (mut cfg, _) = database_config(design, dev, bandwidth)?;
    cfg.storage.backing = Backing::Directory {
        path: dir.to_path_buf(),
        direct: false,
    };
    Database::open(cfg).map_err(engine_error)
}

/// Runs query `t.query` on a managed real server loaded at `t.scale_factor`; `warm` runs
/// it once unmeasured first. Unthrottled (see the module doc).
///
/// Errors: the server's.
pub fn server_run(
    kind: ServerKind,
    buffer_pool_bytes: u64,
    server_dir: Option<PathBuf>,
    t: &TpchArgs,
    warm: bool,
) -> Result<TpchRun> {
    let mut s = TpchServer::start(
        kind,
        &ManagedOptions {
            buffer_pool_bytes,
            base_dir: server_dir,
            ..Default::default()
        },
    )?;
    s.load(t.scale_factor)?;
    let p = t.params();
    let timeout = Duration::from_secs_f64(t.query_timeout);
    if warm {
        s.run_query(t.query, &p, timeout)?;
    }
    let plan = match kind {
        ServerKind::PostgreSql => {
            mvcclab_workload::tpch_plans::shape_of_postgresql(&s.explain_json(t.query, &p)?)
        }
        ServerKind::MariaDb | ServerKind::MyRocks => {
            mvcclab_workload::tpch_plans::shape_of_mariadb(&s.explain_json(t.query, &p)?)
        }
    }
    .map_err(anyhow::Error::msg)?;
    let before = s.read_blocks_4k()?;
    let r = s.run_query(t.query, &p, timeout)?;
    let after = s.read_blocks_4k()?;
    s.stop()?;
    let mut notes = vec![
        "unthrottled: the FUSE device is not wired into tpch runs yet".to_string(),
        "reads: the engine's own counter (not device blocks)".to_string(),
    ];
    if kind == ServerKind::PostgreSql {
        notes.push(format!(
            "max_parallel_workers_per_gather = {PG_PARALLEL_WORKERS_PER_GATHER}"
        ));
    }
    Ok(TpchRun {
        design: format!("real:{}", kind.name()),
        scale_factor: t.scale_factor,
        query: t.query,
        bandwidth_mib_s: None,
        cache: if warm { "warm" } else { "cold" }.into(),
        duration_us: r.duration_us,
        timed_out: r.timed_out,
        rows_returned: r.rows.len(),
        plan,
        read_blocks_4k_by_cause: [("engine_reads".to_string(), after.saturating_sub(before))]
            .into_iter()
            .collect(),
        write_blocks_4k_by_cause: BTreeMap::new(),
        read_blocks_4k_per_s: Vec::new(),
        temp_spill_bytes: 0,
        notes,
    })
}

/// `mvcclab run --workload tpch`: query `t.query` on `design` (a preset name, or
/// `real:postgresql` / `real:mariadb`), cold, at the first `--bandwidth` (unthrottled
/// without one); the run as JSON on standard output or `--output`.
///
/// Errors: [`UsageError`] for bad flags; the engine's or server's.
pub fn run_query_command(design: &str, c: &CommonArgs, t: &TpchArgs) -> Result<()> {
    t.check()?;
    let interval = if c.report_interval > 0.0 {
        c.report_interval
    } else {
        1.0
    };
    let run = match crate::bench::resolve_spec(design, &c.set)? {
        RunSpec::Real(kind) => server_run(
            kind,
            c.device.buffer_pool,
            c.server.server_dir.clone(),
            t,
            false,
        )?,
        RunSpec::Embedded(d) => {
            check_preset_query(t)?;
            let loaded = LoadedPreset::load(&d, &c.device, t.scale_factor)?;
            loaded.run(
                &c.device,
                t,
                c.device.bandwidth.first().copied(),
                false,
                interval,
            )?
        }
    };
    let text = serde_json::to_string_pretty(&run)? + "\n";
    if c.out.output == "-" {
        print!("{text}");
    } else {
        std::fs::write(&c.out.output, text).with_context(|| format!("writing {}", c.out.output))?;
    }
    Ok(())
}

/// Flags of `mvcclab experiment tpch_q18`.
#[derive(Args, Debug)]
pub struct TpchQ18Args {
    /// Designs, comma-separated: presets, design files, real:postgresql, real:mariadb.
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Cache states, comma-separated: cold (fresh pool and OS cache), warm (the query ran
    /// once before).
    #[arg(long, default_value = "cold,warm", value_delimiter = ',')]
    pub caches: Vec<String>,
    /// Seconds per sample of the pages-per-second series.
    #[arg(long, default_value_t = 1.0)]
    pub report_interval: f64,
    /// Write the report (JSON) here; `-` is standard output.
    #[arg(long, default_value = "-")]
    pub output: String,
    /// Also write DIR/tpch_q18.json and DIR/summary.md.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Where managed servers keep their folders (default: the system's temp directory).
    #[arg(long)]
    pub server_dir: Option<PathBuf>,
    /// TPC-H flags.
    #[command(flatten)]
    pub tpch: TpchArgs,
    /// Memory and device flags (--bandwidth: one run per value).
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// The report of `experiment tpch_q18`.
#[derive(Clone, Debug, Serialize)]
pub struct TpchQ18Report {
    /// `tpch_q18`.
    pub experiment: String,
    /// The command line.
    pub command: String,
    /// One run per design × bandwidth × cache state.
    pub runs: Vec<TpchRun>,
}

/// The Markdown summary of a report: one row per run.
pub fn summary_md(r: &TpchQ18Report) -> String {
    let mut s = String::from(
        "| design | bandwidth MiB/s | cache | duration s | rows | read 4 KiB blocks | by cause | read blocks/s (mean) | temp spill MiB |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for x in &r.runs {
        let total: u64 = x.read_blocks_4k_by_cause.values().sum();
        let causes: Vec<String> = x
            .read_blocks_4k_by_cause
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let secs = x.duration_us as f64 / 1e6;
        s.push_str(&format!(
            "| {} | {} | {} | {:.3}{} | {} | {} | {} | {:.0} | {:.1} |\n",
            x.design,
            x.bandwidth_mib_s
                .map_or("unthrottled".to_string(), |b| format!("{b}")),
            x.cache,
            secs,
            if x.timed_out { " (timed out)" } else { "" },
            x.rows_returned,
            total,
            causes.join(", "),
            if secs > 0.0 { total as f64 / secs } else { 0.0 },
            x.temp_spill_bytes as f64 / (1 << 20) as f64,
        ));
    }
    s
}

/// `mvcclab experiment tpch_q18`: Q18 (or `--query`) per design, bandwidth and cache
/// state; a preset is loaded once per design and reopened per run; a real server is
/// started and loaded per cache state and runs unthrottled.
///
/// Errors: [`UsageError`] for bad flags; the engine's or server's.
pub fn run(a: TpchQ18Args) -> Result<()> {
    a.tpch.check()?;
    if !(a.report_interval.is_finite() && a.report_interval > 0.0) {
        return Err(UsageError(format!(
            "--report-interval {}: seconds above 0",
            a.report_interval
        ))
        .into());
    }
    for c in &a.caches {
        if c != "cold" && c != "warm" {
            return Err(UsageError(format!("--caches {c}: cold or warm")).into());
        }
    }
    let bandwidths: Vec<Option<f64>> = if a.device.bandwidth.is_empty() {
        vec![None]
    } else {
        a.device.bandwidth.iter().map(|b| Some(*b)).collect()
    };
    let mut runs = Vec::new();
    for d in &a.designs {
        match crate::bench::resolve_spec(d, &[])? {
            RunSpec::Embedded(design) => {
                check_preset_query(&a.tpch)?;
                eprintln!(
                    "tpch_q18: loading {} at SF {}",
                    design.name, a.tpch.scale_factor
                );
                let loaded = LoadedPreset::load(&design, &a.device, a.tpch.scale_factor)?;
                for &b in &bandwidths {
                    for c in &a.caches {
                        let r =
                            loaded.run(&a.device, &a.tpch, b, c == "warm", a.report_interval)?;
                        eprintln!(
                            "tpch_q18: {} {:?} MiB/s {c}: {:.3} s",
                            design.name,
                            b,
                            r.duration_us as f64 / 1e6
                        );
                        runs.push(r);
                    }
                }
            }
            RunSpec::Real(kind) => {
                for c in &a.caches {
                    let r = server_run(
                        kind,
                        a.device.buffer_pool,
                        a.server_dir.clone(),
                        &a.tpch,
                        c == "warm",
                    )?;
                    eprintln!(
                        "tpch_q18: real:{} {c}: {:.3} s",
                        kind.name(),
                        r.duration_us as f64 / 1e6
                    );
                    runs.push(r);
                }
            }
        }
    }
    let report = TpchQ18Report {
        experiment: "tpch_q18".into(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        runs,
    };
    let json = serde_json::to_string_pretty(&report)? + "\n";
    if a.output == "-" {
        print!("{json}");
    } else {
        std::fs::write(&a.output, &json).with_context(|| format!("writing {}", a.output))?;
    }
    if let Some(dir) = &a.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("tpch_q18.json"), &json)?;
        std::fs::write(dir.join("summary.md"), summary_md(&report))?;
    }
    Ok(())
}
