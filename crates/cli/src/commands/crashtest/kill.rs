//! `--kills N`: the workload in a child `mvcclab` process on files in a temporary
//! directory, killed with SIGKILL at random moments, recovered and checked after each
//! kill from the ledger the child appended to `ledger.log`.

use super::args::CrashtestArgs;
use super::check::check;
use super::ledger::{FileLedger, Ledger, LedgerSink};
use super::power_cut::{db_config, quiet};
use super::report::CrashtestSummary;
use super::workload::{load, tables_of, worker};
use crate::design_arg::resolve_design;
use anyhow::{Context, Result};
use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::CrashDevice;
use mvcclab_engine::storage::Backing;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

/// The configuration of a `--kills` database: files in `dir/db`, no emulated OS cache (the
/// kernel's page cache outlives a killed process, as it outlives a killed server).
pub(super) fn file_config(
    design: &DesignConfig,
    args: &CrashtestArgs,
    dir: &std::path::Path,
) -> Result<DatabaseConfig> {
    let dev = Arc::new(CrashDevice::new());
    let mut cfg = db_config(design, args, &dev)?;
    cfg.storage.backing = Backing::Directory {
        path: dir.join("db"),
        direct: false,
    };
    Ok(cfg)
}

/// The child of `--kills`: opens (recovering) or creates the database in `dir`, loads it
/// if new, prints `ready`, then runs the workload until killed, appending its ledger to
/// `dir/ledger.log`.
pub(super) fn run_child(args: &CrashtestArgs, dir: &std::path::Path) -> Result<()> {
    use std::io::Write;
    let design = resolve_design(&args.design, &args.set)?;
    let db = Database::open(file_config(&design, args, dir)?).context("opening the database")?;
    let rows = args.rows.max(2);
    let tables = match tables_of(&db) {
        Ok(t) => t,
        Err(_) => load(&db, rows).context("loading the tables")?,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("ledger.log"))
        .context("opening the ledger")?;
    let ledger = FileLedger(Mutex::new(file));
    println!("ready");
    std::io::stdout().flush()?;
    let (stop, done, next) = (
        AtomicBool::new(false),
        AtomicU64::new(0),
        AtomicU64::new(args.id_base),
    );
    std::thread::scope(|s| {
        for w in 0..args.threads.max(1) {
            let wseed = args.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9);
            let (db, stop, done, next) = (&db, &stop, &done, &next);
            let ledger: &dyn LedgerSink = &ledger;
            s.spawn(move || worker(db, tables, rows, wseed, ledger, stop, done, next));
        }
    });
    Ok(())
}

/// `--kills N`: the child process killed with SIGKILL `N` times (see
/// [`CrashtestArgs::kills`]), with the checks after each kill; `exe` is the `mvcclab`
/// binary to run as the child.
///
/// Errors: a bad design; the child failing to start or to become ready.
pub fn kill_test(
    args: &CrashtestArgs,
    exe: &std::path::Path,
    kills: u32,
) -> Result<CrashtestSummary> {
    use std::io::BufRead;
    let design = resolve_design(&args.design, &args.set)?;
    let dir = tempfile::tempdir().context("making a temporary directory")?;
    let rows = args.rows.max(2);
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut ledger = Ledger::new(rows);
    let mut summary = CrashtestSummary {
        design: design.name.clone(),
        seed: args.seed,
        ..Default::default()
    };
    for kill in 1..=kills {
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("crashtest")
            .arg("--design")
            .arg(&args.design)
            .args(args.set.iter().flat_map(|s| ["--set", s.as_str()]))
            .arg("--rows")
            .arg(rows.to_string())
            .arg("--threads")
            .arg(args.threads.to_string())
            .arg("--frames")
            .arg(args.frames.to_string())
            .arg("--seed")
            .arg((args.seed + kill as u64).to_string())
            .arg("--id-base")
            .arg(((kill as u64) << 32).to_string())
            .arg("--child-dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let pid = child.id();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        let ready = out.read_line(&mut line).is_ok() && line.trim() == "ready";
        if !ready {
            let _ = child.kill();
            let status = child.wait()?;
            summary.problem(
                kill,
                format!(
                    "child {pid} did not become ready ({status}): recovery in the child failed"
                ),
            );
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(rng.random_range(50..400)));
        child
            .kill()
            .with_context(|| format!("killing child {pid}"))?; // SIGKILL on Unix
        child.wait()?;
        summary.cuts = kill;
        let log = dir.path().join("ledger.log");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        for l in text.lines() {
            // The last line may be cut short by the kill; nothing else may be wrong.
            if !ledger.apply_line(l) && !text.ends_with(l) {
                summary.problem(kill, format!("ledger line not understood: {l:?}"));
            }
        }
        std::fs::write(&log, b"")?;
        let db = match Database::open(quiet(&file_config(&design, args, dir.path())?)) {
            Ok(db) => db,
            Err(e) => {
                summary.problem(kill, format!("recovery failed: {e}"));
                break;
            }
        };
        let r = db.recovery_report().clone();
        summary.add_recovery(&r);
        let tables = match tables_of(&db) {
            Ok(t) => t,
            Err(e) => {
                summary.problem(kill, format!("tables missing after recovery: {e}"));
                break;
            }
        };
        if let Err(e) = check(&db, tables, rows, &mut ledger, &mut summary, kill) {
            summary.problem(kill, format!("checking failed: {e}"));
        }
        summary.commits_acknowledged = ledger.commits;
        if args.verbose {
            eprintln!(
                "kill {kill} (child {pid}): {} commits acknowledged, recovery replayed {} records in {} µs ({} undone)",
                ledger.commits, r.records_replayed, r.duration_us, r.transactions_aborted + r.transactions_rolled_back
            );
        }
    }
    Ok(summary)
}
