//! Load once per design (issue 26): a design's tables are loaded once and every run of a
//! sweep (one per bandwidth) starts from that loaded state, as seed 000's procedure and
//! any benchmark that restores a database snapshot between runs do, instead of loading
//! again per point.
//!
//! - A preset ([`RunSpec::Embedded`]): the load runs on an empty copy-on-write device
//!   ([`CowDevice`]), unthrottled; the database is then closed cleanly (shutdown
//!   checkpoint) and the device frozen into a [`DeviceImage`]. Each run opens a new
//!   [`CowDevice`] over the image (throttled at its bandwidth): the database opens as after
//!   a clean shutdown, with a cold buffer pool and OS cache, and its writes never reach the
//!   image.
//! - A real server ([`RunSpec::Real`]): the managed server is loaded and settled
//!   (PostgreSQL `VACUUM ANALYZE` per table and `CHECKPOINT`; MariaDB flushed to zero dirty
//!   pages, purge caught up), stopped (its shutdown checkpoint), and its data directory
//!   copied off the device (`cp -a --sparse=always`, into a folder of its own under
//!   `--server-dir` or the temp directory, removed at the end). Each run starts a new
//!   server — on a new FUSE device at its bandwidth with `--bandwidth` — whose data
//!   directory is copied back from that folder in place of `initdb` / `mariadb-install-db`;
//!   the server then settles (checkpoint; the OS page cache dropped with `--drop-caches`)
//!   and warms up before the measured phase. A new mount and a new server process mean
//!   no page of the device is in the kernel's page cache and the buffer pool is cold.
//!
//! Not for `--data-dir` (the preset's files are in a directory), `--url` (mvcclab cannot
//! restart a server it did not start) or `tpcc` (its table sets are not reattached): those
//! load per run, as before.
//!
//! # Invariants
//! 1. The saved state never changes after the load: each run writes to its own device.
//! 2. The load is not measured; its duration is reported once per design
//!    ([`LoadReport`]), with the number of runs that started from it.

use super::args::{sysbench_options, CommonArgs};
use super::embedded::EmbeddedRun;
use super::server::ServerRun;
use super::spec::RunSpec;
use super::subject::{run_loaded, Subject};
use crate::progress::status;
use crate::result::{LoadReport, RunReport};
use crate::UsageError;
use anyhow::{Context, Result};
use mvcclab_engine::device::{CowDevice, Device, DeviceImage};
use mvcclab_workload::driver::RunControl;
use mvcclab_workload::sysbench::WorkloadKind;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Where a loaded state is kept.
enum Saved {
    /// A preset's device after the load and a clean shutdown.
    Image(Arc<DeviceImage>),
    /// A real server's data directory (`DIR/data`) after the load, settle and shutdown.
    DataDir(tempfile::TempDir),
}

/// A design's tables loaded once, and the report of that load.
pub struct Loaded {
    spec: RunSpec,
    saved: Saved,
    /// The load's duration and what keeps it; `runs` counts the runs started from it.
    pub report: LoadReport,
}

/// Whether `spec`'s runs under the flags `c` can start from one load (module doc).
pub fn can_load_once(spec: &RunSpec, c: &CommonArgs) -> bool {
    if c.workload.trim_end_matches(".lua") == "tpcc" {
        return false;
    }
    match spec {
        RunSpec::Embedded(_) => c.device.data_dir.is_none(),
        RunSpec::Real(k) => !c
            .server
            .urls
            .iter()
            .any(|u| mvcclab_servers::ServerKind::of_url(u) == Some(*k)),
    }
}

/// Bytes a directory tree takes on its file system (allocated blocks, so holes count 0).
fn tree_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}

/// Loads `spec`'s tables once under the flags `c` (unthrottled) and keeps the loaded
/// state (module doc).
///
/// Errors: bad flags ([`UsageError`]: tpcc, `--data-dir`, a `--url` server); the engine
/// or the server failing to load, shut down or copy.
pub fn load_once(spec: &RunSpec, c: &CommonArgs) -> Result<Loaded> {
    if !can_load_once(spec, c) {
        return Err(UsageError(format!(
            "{}: its tables cannot be loaded once for several runs (tpcc, --data-dir or a \
             --url server load per run)",
            spec.name()
        ))
        .into());
    }
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    let opts = sysbench_options(c);
    let start = Instant::now();
    let name = spec.name();
    status(
        c.out.quiet,
        &format!(
            "{name}: loading {} × {} rows once, for every run that follows ...",
            c.tables, c.table_size
        ),
    );
    let (saved, method, saved_bytes) = match spec {
        RunSpec::Embedded(d) => {
            let device = Arc::new(CowDevice::new());
            let run =
                EmbeddedRun::open_on(d, &c.device, None, Some(device.clone() as Arc<dyn Device>))?;
            run.prepare(kind, &opts, c.rand_seed)?;
            run.close()?;
            let image = device.freeze();
            let bytes = image.stored_bytes();
            (
                Saved::Image(image),
                "the device after the load and a clean shutdown, frozen; each run opens a \
                 copy-on-write device over it (cold buffer pool and OS cache)"
                    .to_string(),
                bytes,
            )
        }
        RunSpec::Real(k) => {
            let run = ServerRun::open(*k, c, None)?;
            run.prepare(kind, &opts, c.rand_seed)?;
            run.settle(c)?;
            let base = c
                .server
                .server_dir
                .clone()
                .unwrap_or_else(std::env::temp_dir);
            std::fs::create_dir_all(&base)
                .with_context(|| format!("creating {}", base.display()))?;
            let dir = tempfile::Builder::new()
                .prefix(&format!("mvcclab-saved-{}-", k.name()))
                .tempdir_in(&base)
                .with_context(|| format!("creating a folder in {}", base.display()))?;
            run.save_loaded(&dir.path().join("data"))?;
            let bytes = tree_bytes(dir.path());
            (
                Saved::DataDir(dir),
                "the data directory after the load, settle and a clean shutdown, copied off \
                 the device (cp -a --sparse=always); each run starts a new server on a new \
                 device from a copy of it (cold buffer pool and page cache)"
                    .to_string(),
                bytes,
            )
        }
    };
    let duration_s = start.elapsed().as_secs_f64();
    status(
        c.out.quiet,
        &format!(
            "{name}: loaded once in {duration_s:.1} s ({:.0} MiB kept)",
            saved_bytes as f64 / 1048576.0
        ),
    );
    Ok(Loaded {
        spec: spec.clone(),
        saved,
        report: LoadReport {
            design: name,
            duration_s,
            method,
            saved_bytes,
            runs: 0,
        },
    })
}

/// One run of the loaded design at `bandwidth`: its saved state restored (module doc),
/// then settle, warm-up and the measured phase ([`run_loaded`]).
///
/// Errors: as [`run_loaded`]; the restore failing.
pub fn run_from_load(
    loaded: &mut Loaded,
    c: &CommonArgs,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<RunReport> {
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    loaded.report.runs += 1;
    match (&loaded.spec, &loaded.saved) {
        (RunSpec::Embedded(d), Saved::Image(image)) => {
            let device: Arc<dyn Device> = Arc::new(CowDevice::over(image));
            let run = EmbeddedRun::open_on(d, &c.device, bandwidth, Some(device))?;
            run.attach(kind, &sysbench_options(c))?;
            run_loaded(run, kind, c, ctl)
        }
        (RunSpec::Real(k), Saved::DataDir(dir)) => {
            let run = ServerRun::open_restored(*k, c, bandwidth, Some(dir.path().join("data")))?;
            run_loaded(run, kind, c, ctl)
        }
        _ => anyhow::bail!(
            "{}: the saved load is of another kind",
            loaded.report.design
        ),
    }
}
