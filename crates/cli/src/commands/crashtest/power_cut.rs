//! Power cuts on the crash-simulation device (see "A cut" in the module doc): the
//! workers run until the cut, the database is dropped, the device scanned for torn pages,
//! power restored, the database reopened (recovery), checked, and reopened as configured
//! for the next round.

use super::args::CrashtestArgs;
use super::check::check;
use super::ledger::{Ledger, LedgerSink};
use super::report::CrashtestSummary;
use super::workload::{load, worker};
use crate::bench::{buffer_pool_frames, PoolSize};
use crate::design_arg::resolve_design;
use anyhow::{Context, Result};
use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{CrashConfig, CrashDevice, Device};
use mvcclab_engine::recovery::pages_failing_checksum;
use mvcclab_engine::storage::{Backing, CheckpointConfig};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The database configuration of a crash test on `dev`.
pub(super) fn db_config(
    design: &DesignConfig,
    args: &CrashtestArgs,
    dev: &Arc<CrashDevice>,
) -> Result<DatabaseConfig> {
    let mut cfg = DatabaseConfig::new(design.clone());
    cfg.storage.backing = Backing::shared(dev.clone() as Arc<dyn Device>);
    cfg.storage.buffer_pool.frames = buffer_pool_frames(PoolSize::Frames(args.frames))?;
    // No OS cache: every write reaches the device's unsynced list, where a cut can tear it.
    cfg.storage.os_cache.size_bytes = 0;
    cfg.storage.checkpoint = CheckpointConfig {
        interval_ms: Some(100),
        wal_bytes: Some(256 << 10),
    };
    cfg.vacuum.naptime_ms = 50;
    cfg.vacuum.threshold = 20;
    Ok(cfg)
}

/// `cfg` without autovacuum or purge threads, for the checks.
pub(super) fn quiet(cfg: &DatabaseConfig) -> DatabaseConfig {
    let mut q = cfg.clone();
    q.vacuum.autovacuum = false;
    q.purge.threads = 0;
    q
}

/// Runs the crash test `args` describes and returns what it found.
///
/// Errors: a bad design or flag; the first open failing (before any cut).
pub fn crashtest(args: &CrashtestArgs) -> Result<CrashtestSummary> {
    let design = resolve_design(&args.design, &args.set)?;
    let dev = Arc::new(CrashDevice::with_config(CrashConfig {
        survive_probability: args.survive_probability,
        tear_probability: args.tear_probability,
    })?);
    let page_bytes = design.page_size.bytes();
    let cfg = db_config(&design, args, &dev)?;
    let mut summary = CrashtestSummary {
        design: design.name.clone(),
        seed: args.seed,
        ..Default::default()
    };
    let rows = args.rows.max(2);
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut db = Database::open(cfg.clone()).context("opening the database")?;
    let tables = load(&db, rows).context("loading the tables")?;
    let ledger = Mutex::new(Ledger::new(rows));
    let next_transfer = AtomicU64::new(1);
    for cut in 1..=args.cuts {
        let target = rng.random_range(1..=args.max_commits_per_cut.max(1));
        let cut_seed: u64 = rng.random();
        // Half the cuts land inside a random device write (possibly mid-batch), the
        // others between two operations, after `target` commits.
        // Of those, half among home page writes only.
        let in_write = rng.random_bool(0.5);
        let home_only = rng.random_bool(0.5);
        let armed_after = if home_only {
            rng.random_range(1..=args.max_commits_per_cut.max(1))
        } else {
            rng.random_range(1..=4 * args.max_commits_per_cut.max(1))
        };
        if in_write {
            dev.arm_power_cut(armed_after, cut_seed, home_only);
        }
        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let (report, fired) = std::thread::scope(|s| {
            for w in 0..args.threads.max(1) {
                let wseed =
                    args.seed ^ ((cut as u64) << 32) ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9);
                let (db, stop, done, next) = (&db, &stop, &done, &next_transfer);
                let ledger: &dyn LedgerSink = &ledger;
                s.spawn(move || worker(db, tables, rows, wseed, ledger, stop, done, next));
            }
            let t0 = std::time::Instant::now();
            while !dev.is_off()
                && (in_write || done.load(Ordering::Acquire) < target)
                && t0.elapsed().as_secs() < 30
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            dev.disarm();
            let manual = dev.power_cut_and_hold(cut_seed);
            stop.store(true, Ordering::Release);
            match dev.take_fired() {
                Some(r) => (r, true),
                None => (manual, false),
            }
        });
        summary.cuts = cut;
        summary.writes_dropped += report.writes_dropped;
        summary.writes_torn += report.writes_torn;
        drop(db);
        let torn = pages_failing_checksum(&*dev, page_bytes)
            .context("scanning the device for torn pages")?;
        summary.torn_pages_found += torn.len() as u64;
        dev.power_on();
        // Recover and check with no vacuum or purge running (the checks read indexes then
        // heap or clustered pages, which a concurrent vacuum or purge may change between
        // the two), then close and reopen as configured for the next round.
        db = match Database::open(quiet(&cfg)) {
            Ok(db) => db,
            Err(e) => {
                summary.problem(cut, format!("recovery failed (cut seed {cut_seed}): {e}"));
                break;
            }
        };
        let r = db.recovery_report().clone();
        summary.add_recovery(&r);
        let still = pages_failing_checksum(&*dev, page_bytes)
            .context("scanning the device for torn pages")?;
        for p in &still {
            summary.problem(
                cut,
                format!("page {p} still fails its checksum after recovery"),
            );
        }
        summary.torn_pages_repaired += torn.difference(&still).count() as u64;
        let before = summary.invariant_violations + summary.lost_commits;
        let mut l = ledger.lock();
        if let Err(e) = check(&db, tables, rows, &mut l, &mut summary, cut) {
            summary.problem(cut, format!("checking failed: {e}"));
        }
        summary.commits_acknowledged = l.commits;
        drop(l);
        let reopened = db.close().and_then(|_| Database::open(cfg.clone()));
        db = match reopened {
            Ok(db) => db,
            Err(e) => {
                summary.problem(cut, format!("reopening after the checks failed: {e}"));
                break;
            }
        };
        if args.verbose {
            eprintln!(
                "cut {cut} (seed {cut_seed}, {}): {} commits acknowledged, {} of {} unsynced writes dropped, {} torn, {} torn pages, recovery replayed {} records in {} µs ({} FPI, {} doublewrite, {} undone, {} splits finished){}",
                if fired { if home_only { "inside a home page write" } else { "inside a write" } } else { "between operations" },
                summary.commits_acknowledged,
                report.writes_dropped,
                report.pending_writes,
                report.writes_torn,
                torn.len(),
                r.records_replayed,
                r.duration_us,
                r.full_page_images_restored,
                r.doublewrite_pages_restored,
                r.transactions_aborted + r.transactions_rolled_back,
                r.splits_finished,
                if summary.invariant_violations + summary.lost_commits > before { " — PROBLEMS" } else { "" }
            );
        }
    }
    Ok(summary)
}
