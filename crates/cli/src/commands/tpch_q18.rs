//! TPC-H from the command line: `mvcclab run --workload tpch --query N` (one query on a
//! preset or a real server) and `mvcclab experiment tpch_q18` (seed 000 §2.3: Q18's
//! duration and the 4 KiB pages it requests per second, per design, bandwidth and cache
//! state, with blocks by cause).
//!
//! A preset is loaded once, unthrottled, into a data directory (`--data-dir`, or a
//! temporary one), closed, and reopened for each run with the run's bandwidth: "cold"
//! is a fresh open (empty buffer pool and emulated OS page cache), "warm" runs the query
//! once unmeasured first. Since a clean close writes a shutdown checkpoint, the reopen
//! reads no index page (only each tree's meta page). A real server is a managed one
//! (mvcclab_servers::tpch), loaded with COPY / LOAD DATA and ANALYZE; its engine reads
//! are its own counters
//! (PostgreSQL `pg_stat_database.blks_read` in 8 KiB pages; InnoDB
//! `Innodb_buffer_pool_reads` plus read-ahead in 16 KiB pages), converted to 4 KiB
//! blocks, beside what the device saw. A real server runs on mvcclab's FUSE device
//! (file-system mode), its temporary files too (PostgreSQL's base/pgsql_tmp is in the
//! data directory; MariaDB's tmpdir is set onto the device): it is loaded once
//! unthrottled and saved, and each bandwidth restores it onto a device throttled from
//! the start; "cold" restarts the server and drops the OS page cache (root), "warm" runs
//! the query once unmeasured first (or follows a run). Its reads and writes are the
//! device's, by file class.

use crate::bench::SERVER_HEADROOM_BYTES;
use crate::bench::{database_config, CommonArgs, DeviceArgs, RunSpec};
use crate::error::engine_error;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_devfs::{check_fuse, DeviceConfig};
use mvcclab_engine::db::Database;
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::stats::Cause;
use mvcclab_engine::storage::Backing;
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::tpch::{TpchServer, PG_PARALLEL_WORKERS_PER_GATHER};
use mvcclab_servers::ServerKind;
use mvcclab_workload::tpch::{check_scale_factor, QueryParams};
use mvcclab_workload::tpch_embedded::{self, TpchTables};
use mvcclab_workload::tpch_plans;
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
    /// 4 KiB blocks read from the device during the query, by cause (presets) or by file
    /// class (servers: `heap lineitem`, `lineitem.ibd`, `temp`, ...).
    pub read_blocks_4k_by_cause: BTreeMap<String, u64>,
    /// 4 KiB blocks written during the query, by cause (presets) or file class (servers).
    pub write_blocks_4k_by_cause: BTreeMap<String, u64>,
    /// 4 KiB blocks read per second of the query, one value per `--report-interval`
    /// (default 1 s) of wall time, divided by the interval (presets), or per second of
    /// the device (servers).
    pub read_blocks_4k_per_s: Vec<f64>,
    /// Microseconds requests waited for the device's throttle during the query (presets:
    /// every cause; servers: the FUSE device's).
    pub device_wait_us: u64,
    /// Real servers: the engine's own read counter over the query, in 4 KiB blocks
    /// (PostgreSQL `blks_read` × 2, OS page-cache hits included; InnoDB
    /// `Innodb_pages_read` × 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_read_blocks_4k: Option<u64>,
    /// Real servers: the settings given on the server's command line (shared_buffers,
    /// tmpdir ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub server_settings: BTreeMap<String, String>,
    /// Bytes the preset's hash, sort or temporary-table operators held past their memory
    /// limit (work_mem / tmp_memory_table_size), written to and read back from a temporary
    /// file (cause `temp`); servers: bytes written to temporary files on the device
    /// (PostgreSQL base/pgsql_tmp, MariaDB's tmpdir).
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
        let engine = tpch_embedded::engine_of(&db);
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
            device_wait_us: delta.total().device_wait_us,
            engine_read_blocks_4k: None,
            server_settings: BTreeMap::new(),
            notes: vec![
                format!(
                    "plan: the real engine's at SF {} (crates/workload/plans), executed over the preset's access paths",
                    tpch_plans::followed_scale_factor(engine, t.query, t.scale_factor)
                ),
                "temp: spills written and read back after the operators finish (their blocks sit at the end of the series)".into(),
            ],
        })
    }
}

/// Refuses a query the presets do not run, before anything is loaded.
///
/// Errors: [`UsageError`] naming `--query`.
fn check_preset_query(t: &TpchArgs) -> Result<()> {
    if tpch_embedded::preset_plan_shape(
        tpch_embedded::TpchEngine::PostgreSql,
        t.query,
        t.scale_factor,
    )
    .is_none()
    {
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

/// A real server loaded once at the scale factor on mvcclab's FUSE device (unthrottled;
/// COPY / LOAD DATA, ANALYZE), its data directory saved after a clean shutdown; each
/// bandwidth starts it again from the saved copy on a device with that bandwidth
/// (bandwidth_sweep's restore path: `bench/loaded.rs`).
pub struct LoadedServer {
    kind: ServerKind,
    /// The saved data directory (`data` inside).
    saved: tempfile::TempDir,
    /// The shape of the engine's own plan (EXPLAIN at load time, so that no run's cache
    /// holds what EXPLAIN read).
    plan: Vec<String>,
}

/// How the managed servers of a tpch run are started.
#[derive(Clone, Debug)]
pub struct ServerSetup {
    /// Where managed servers keep their folders (default: the system's temp directory).
    pub server_dir: Option<PathBuf>,
    /// Drop the OS page cache before each cold run (root).
    pub drop_caches: bool,
}

impl ServerSetup {
    /// The managed options of `kind` on a FUSE device with `bandwidth` (throttled once
    /// turned on), `dev`'s pool, latency and compression; PostgreSQL's memory bounded by
    /// a cgroup of pool + OS cache + [`SERVER_HEADROOM_BYTES`] when root, so that its
    /// kernel page cache is the preset's OS cache (as `--bound-os-cache`).
    fn options(
        &self,
        kind: ServerKind,
        dev: &DeviceArgs,
        bandwidth: Option<f64>,
        restore_from: Option<PathBuf>,
    ) -> ManagedOptions {
        let mut d = DeviceConfig::new(bandwidth, dev.latency_us, dev.compression);
        d.data_dir = dev.data_dir.as_ref().map(|p| p.join(kind.name()));
        ManagedOptions {
            buffer_pool_bytes: dev.buffer_pool,
            base_dir: self.server_dir.clone(),
            device: Some(d),
            restore_from,
            memory_limit_bytes: (kind == ServerKind::PostgreSql
                && mvcclab_servers::managed::is_root())
            .then_some(dev.buffer_pool + dev.os_cache + SERVER_HEADROOM_BYTES),
            ..Default::default()
        }
    }
}

impl LoadedServer {
    /// Starts `kind` on an unthrottled FUSE device, loads TPC-H at `t.scale_factor`, takes
    /// the plan of `t.query`, and saves the data directory (under `--server-dir`).
    ///
    /// Errors: a machine without FUSE ([`UsageError`] through `mount_error`); the
    /// server's.
    pub fn load(
        kind: ServerKind,
        dev: &DeviceArgs,
        setup: &ServerSetup,
        t: &TpchArgs,
    ) -> Result<LoadedServer> {
        check_fuse().map_err(crate::commands::device::mount_error)?;
        let base = setup.server_dir.clone().unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
        let saved = tempfile::Builder::new()
            .prefix(&format!("mvcclab-tpch-{}-saved-", kind.name()))
            .tempdir_in(&base)
            .with_context(|| format!("creating a folder in {}", base.display()))?;
        let mut s = TpchServer::start(kind, &setup.options(kind, dev, None, None))?;
        s.load(t.scale_factor)?;
        let json = s.explain_json(t.query, &t.params())?;
        let plan = match kind {
            ServerKind::PostgreSql => mvcclab_workload::tpch_plans::shape_of_postgresql(&json),
            ServerKind::MariaDb | ServerKind::MyRocks => {
                mvcclab_workload::tpch_plans::shape_of_mariadb(&json)
            }
        }
        .map_err(anyhow::Error::msg)?;
        s.save_data(&saved.path().join("data"))?;
        s.stop()?;
        Ok(LoadedServer { kind, saved, plan })
    }

    /// Runs query `t.query` once per cache state of `caches` (in order) on the server
    /// restored onto a device with `bandwidth`, throttled from its start on. `cold`: the
    /// server restarted (unless nothing ran since it started) and the OS page cache
    /// dropped (with `setup.drop_caches`); `warm`: the query ran once before (the run
    /// before it, or an unmeasured one). Reads and writes are the device's, by file class.
    ///
    /// Errors: the server's; a cache state other than cold or warm.
    pub fn runs(
        &self,
        dev: &DeviceArgs,
        setup: &ServerSetup,
        t: &TpchArgs,
        bandwidth: Option<f64>,
        caches: &[String],
    ) -> Result<Vec<TpchRun>> {
        let kind = self.kind;
        let mut s = TpchServer::start(
            kind,
            &setup.options(kind, dev, bandwidth, Some(self.saved.path().join("data"))),
        )?;
        let settings: BTreeMap<String, String> = s.managed().settings.iter().cloned().collect();
        let device = s
            .managed()
            .device()
            .context("the server is not on the FUSE device")?;
        device.set_throttling(true);
        let p = t.params();
        let timeout = Duration::from_secs_f64(t.query_timeout);
        let mut used = false;
        let mut runs = Vec::new();
        for c in caches {
            match c.as_str() {
                "cold" if used => s.restart(setup.drop_caches)?,
                "cold" if setup.drop_caches => s.drop_page_cache()?,
                "cold" => {}
                "warm" if !used => {
                    s.run_query(t.query, &p, timeout)?;
                }
                "warm" => {}
                other => return Err(UsageError(format!("--caches {other}: cold or warm")).into()),
            }
            // PostgreSQL's page cache from here on is the preset's OS cache, whatever its
            // processes hold (ManagedServer::bound_page_cache, as `--bound-os-cache` does
            // at a measured phase's start); the start-up limit left it more.
            let page_cache = match kind {
                ServerKind::PostgreSql => s.managed().bound_page_cache(dev.os_cache)?,
                _ => None,
            };
            let engine_before = s.read_blocks_4k()?;
            let before = device_counts(&s)?;
            let r = s.run_query(t.query, &p, timeout)?;
            let d = device_counts(&s)?.since(&before);
            let engine_reads = s.read_blocks_4k()?.saturating_sub(engine_before);
            used = true;
            let paths: Vec<&str> = d.by_file.keys().map(String::as_str).collect();
            let classes = s.file_classes(&paths)?;
            let by_class = mvcclab_servers::file_class::by_class(&d.by_file, |p| {
                classes.get(p).cloned().unwrap_or_else(|| "other".into())
            });
            let blocks = |f: fn(&mvcclab_devfs::FileIo) -> u64| -> BTreeMap<String, u64> {
                by_class
                    .iter()
                    .map(|(k, v)| (k.clone(), f(v) / 4096))
                    .filter(|(_, n)| *n > 0)
                    .collect()
            };
            let mut notes = vec![
                format!(
                    "files on mvcclab's FUSE device (file-system mode), throttled to {}; reads and writes are the device's, by file class",
                    bandwidth.map_or("no limit".to_string(), |b| format!("{b} MiB/s"))
                ),
                format!(
                    "cold: {}",
                    if setup.drop_caches {
                        "server restarted, the OS page cache of its files dropped"
                    } else {
                        "server restarted, OS page cache kept (not root or --no-drop-caches)"
                    }
                ),
                "read blocks per second: the device's, one value per second".into(),
            ];
            if kind == ServerKind::PostgreSql {
                notes.push(format!(
                    "max_parallel_workers_per_gather = {PG_PARALLEL_WORKERS_PER_GATHER}"
                ));
            }
            if let Some((m, limit)) = page_cache {
                notes.push(format!(
                    "page cache bounded to {} MiB at the query's start: memory cgroup limit {limit} bytes = own memory {} bytes + the OS cache",
                    dev.os_cache >> 20,
                    m.own_bytes()
                ));
            }
            runs.push(TpchRun {
                design: format!("real:{}", kind.name()),
                scale_factor: t.scale_factor,
                query: t.query,
                bandwidth_mib_s: bandwidth,
                cache: c.clone(),
                duration_us: r.duration_us,
                timed_out: r.timed_out,
                rows_returned: r.rows.len(),
                plan: self.plan.clone(),
                read_blocks_4k_by_cause: blocks(|f| f.io.read_bytes),
                write_blocks_4k_by_cause: blocks(|f| f.io.write_bytes),
                read_blocks_4k_per_s: d
                    .per_second
                    .iter()
                    .map(|x| x.read_bytes as f64 / 4096.0)
                    .collect(),
                device_wait_us: d.total.io.device_wait_us,
                engine_read_blocks_4k: Some(engine_reads),
                temp_spill_bytes: by_class.get("temp").map_or(0, |f| f.io.write_bytes),
                server_settings: settings.clone(),
                notes,
            });
        }
        s.stop()?;
        Ok(runs)
    }
}

/// The FUSE device's counts of a server on it, now.
fn device_counts(s: &TpchServer) -> Result<mvcclab_devfs::DeviceCounts> {
    Ok(s.managed()
        .device()
        .context("the server is not on the FUSE device")?
        .counts())
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
        RunSpec::Real(kind) => {
            let setup = ServerSetup {
                server_dir: c.server.server_dir.clone(),
                drop_caches: c.server.drop_caches,
            };
            let loaded = LoadedServer::load(kind, &c.device, &setup, t)?;
            let mut runs = loaded.runs(
                &c.device,
                &setup,
                t,
                c.device.bandwidth.first().copied(),
                &["cold".to_string()],
            )?;
            runs.remove(0)
        }
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
    #[arg(long, default_value = "-", value_parser = crate::export::output_path)]
    pub output: String,
    /// Also write DIR/tpch_q18.json and DIR/summary.md.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Where managed servers keep their folders and saved loads (default: the system's
    /// temp directory).
    #[arg(long)]
    pub server_dir: Option<PathBuf>,
    /// Keep the OS page cache before a real server's cold run (the page cache of its files
    /// is dropped by default when running as root).
    #[arg(long)]
    pub no_drop_caches: bool,
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
        "| design | bandwidth MiB/s | cache | duration s | rows | read 4 KiB blocks | by cause (presets) / file class (servers) | read blocks/s (mean) | device wait s | engine reads (4 KiB) | temp spill MiB |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
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
            "| {} | {} | {} | {:.3}{} | {} | {} | {} | {:.0} | {:.3} | {} | {:.1} |\n",
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
            x.device_wait_us as f64 / 1e6,
            x.engine_read_blocks_4k
                .map_or("—".to_string(), |n| n.to_string()),
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
                let setup = ServerSetup {
                    server_dir: a.server_dir.clone(),
                    drop_caches: !a.no_drop_caches && mvcclab_servers::managed::is_root(),
                };
                eprintln!(
                    "tpch_q18: loading real:{} at SF {}",
                    kind.name(),
                    a.tpch.scale_factor
                );
                let loaded = LoadedServer::load(kind, &a.device, &setup, &a.tpch)?;
                for &b in &bandwidths {
                    for r in loaded.runs(&a.device, &setup, &a.tpch, b, &a.caches)? {
                        eprintln!(
                            "tpch_q18: real:{} {:?} MiB/s {}: {:.3} s",
                            kind.name(),
                            b,
                            r.cache,
                            r.duration_us as f64 / 1e6
                        );
                        runs.push(r);
                    }
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
