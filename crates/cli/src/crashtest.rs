//! `mvcclab crashtest`: power cuts at random moments under a workload with checkable
//! invariants, recovery after each, and the checks (issue 7).
//!
//! # The workload
//! Three tables on the design under test:
//! - `accounts(id INTEGER PRIMARY KEY, balance BIGINT, pad CHAR(100))`: bank accounts, each
//!   opened with [`INITIAL_BALANCE`];
//! - `transfers(id BIGINT PRIMARY KEY, src INTEGER, dst INTEGER, amount BIGINT)` with an
//!   index on `src`: one row per transfer, inserted by the transaction that moves the money;
//! - `counters(id INTEGER PRIMARY KEY, n BIGINT, pad CHAR(100))` with an index on `n`: each
//!   increment changes an indexed column (a non-HOT update in `postgres`, a secondary-index
//!   delete-mark and insert in `innodb`).
//!
//! Worker threads run transactions: a transfer (two balance updates and a transfers row) or
//! an increment of one counter; one in ten is rolled back on purpose after its changes. The
//! client keeps a ledger: what was acknowledged as committed, and what was in flight (a
//! commit that returned an error, or had not returned, when the power went: its outcome is
//! unknown, so either is accepted).
//!
//! # A cut
//! Half the cuts come after a random number of acknowledged commits, from outside; the
//! others fire inside a random device write ([`CrashDevice::arm_power_cut`]: that write
//! reaches the medium as a random prefix of its sectors, none to all), half of those among
//! home page writes only, so that cuts land in the middle of a batch of page writes.
//! The crash device's power is cut and held off ([`CrashDevice::power_cut_and_hold`]): unsynced writes are kept, dropped or torn at
//! random (seeded), every later write fails, the workers stop at their next error. The
//! database is dropped (the buffer pool, WAL buffer and in-memory state are lost), the
//! relation files are scanned for pages that fail their checksum (torn), power comes back
//! and the database is reopened, which runs recovery. Then the checks, and the next cut
//! continues the workload on the recovered database.
//!
//! # The checks
//! - **lost commits**: an acknowledged transfer whose row is missing, or a counter below
//!   its acknowledged increments;
//! - **invariant violations**: the sum of balances differs from the opening total; a
//!   balance differs from what the transfers rows present imply; a transfers row that was
//!   never committed (rolled back, or failed before its commit) is visible; a counter above
//!   its acknowledged plus in-flight increments; a row missing from an index, or an index
//!   entry that leads to no row version ([`Database::check_indexes`]); a page still torn
//!   after recovery; recovery failing.
//! - **torn pages repaired**: pages that failed their checksum on the device after the cut
//!   and verify after recovery (its end-of-recovery checkpoint writes the redone pages).
//!
//! The device's outcome at each cut is a function of the seed; the threads' interleaving
//! and the timed background work (checkpointer, page cleaner, autovacuum, purge) are not,
//! so a run replays the same cuts but not byte for byte the same workload.

use crate::design_arg::resolve_design;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{CrashConfig, CrashDevice, Device};
use mvcclab_engine::recovery::pages_failing_checksum;
use mvcclab_engine::storage::{Backing, CheckpointConfig};
use mvcclab_engine::Error as EngineError;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Balance each account opens with.
pub const INITIAL_BALANCE: i64 = 1_000;

/// Flags of `mvcclab crashtest`.
#[derive(Args, Clone, Debug)]
pub struct CrashtestArgs {
    /// Design: a preset (postgres, innodb) or a design file.
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Change a switch of the design (SWITCH=VALUE), e.g. torn_page_protection=none.
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Power cuts to make.
    #[arg(long, default_value_t = 20)]
    pub cuts: u32,
    /// Seed of the cut moments and of the device's choices at each cut.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Accounts (and counters) in the tables.
    #[arg(long, default_value_t = 500)]
    pub rows: u32,
    /// Most acknowledged commits between two cuts (each cut comes after a uniform number
    /// of commits in 1..=this).
    #[arg(long, default_value_t = 300)]
    pub max_commits_per_cut: u64,
    /// Buffer pool frames (small, so that pages are evicted and written between
    /// checkpoints).
    #[arg(long, default_value_t = 48)]
    pub frames: usize,
    /// Probability that an unsynced write reaches the medium at a cut.
    #[arg(long, default_value_t = 0.5)]
    pub survive_probability: f64,
    /// Probability that a surviving multi-sector write is torn.
    #[arg(long, default_value_t = 0.25)]
    pub tear_probability: f64,
    /// Print a line per cut.
    #[arg(long)]
    pub verbose: bool,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Instead of power cuts on the crash-simulation device: run the workload in a child
    /// `mvcclab` process on files in a temporary directory and kill it with SIGKILL this
    /// many times at random moments, recovering and checking after each (`--cuts` is then
    /// ignored).
    #[arg(long, value_name = "N")]
    pub kills: Option<u32>,
    /// Internal: be the child process of `--kills`, on the database in this directory.
    #[arg(long, hide = true, value_name = "DIR")]
    pub child_dir: Option<PathBuf>,
    /// Internal: first transfer id of the child (unique across its lives).
    #[arg(long, hide = true, default_value_t = 1)]
    pub id_base: u64,
}

impl Default for CrashtestArgs {
    fn default() -> Self {
        CrashtestArgs {
            design: "postgres".into(),
            set: Vec::new(),
            cuts: 20,
            seed: 1,
            threads: 2,
            rows: 500,
            max_commits_per_cut: 300,
            frames: 48,
            survive_probability: 0.5,
            tear_probability: 0.25,
            verbose: false,
            json: None,
            kills: None,
            child_dir: None,
            id_base: 1,
        }
    }
}

/// What a crash test found. Counts are over all cuts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CrashtestSummary {
    /// The design's name.
    pub design: String,
    /// The seed.
    pub seed: u64,
    /// Power cuts made.
    pub cuts: u32,
    /// Commits acknowledged to the client.
    pub commits_acknowledged: u64,
    /// Acknowledged commits not found after recovery.
    pub lost_commits: u64,
    /// Invariant violations (see the module doc).
    pub invariant_violations: u64,
    /// Relation pages that failed their checksum on the device after a cut.
    pub torn_pages_found: u64,
    /// Of those, pages that verified after recovery.
    pub torn_pages_repaired: u64,
    /// Unsynced writes the device dropped at the cuts.
    pub writes_dropped: u64,
    /// Unsynced writes the device tore at the cuts.
    pub writes_torn: u64,
    /// WAL records replayed by recovery.
    pub records_replayed: u64,
    /// Blocks restored from full-page images.
    pub full_page_images_restored: u64,
    /// Pages repaired from the doublewrite area.
    pub doublewrite_pages_restored: u64,
    /// Transactions recovery marked aborted (postgres) or rolled back (innodb).
    pub transactions_undone: u64,
    /// The first problems found (at most 20), each naming the cut.
    pub problems: Vec<String>,
}

impl CrashtestSummary {
    /// The summary line the issue asks for.
    pub fn line(&self) -> String {
        format!(
            "cuts: {}, lost_commits: {}, invariant_violations: {}, torn_pages_repaired: {}",
            self.cuts, self.lost_commits, self.invariant_violations, self.torn_pages_repaired
        )
    }

    fn add_recovery(&mut self, r: &mvcclab_engine::recovery::RecoveryReport) {
        self.records_replayed += r.records_replayed;
        self.full_page_images_restored += r.full_page_images_restored;
        self.doublewrite_pages_restored += r.doublewrite_pages_restored;
        self.transactions_undone += r.transactions_aborted + r.transactions_rolled_back;
    }

    fn problem(&mut self, cut: u32, what: String) {
        self.invariant_violations += 1;
        if self.problems.len() < 20 {
            self.problems.push(format!("cut {cut}: {what}"));
        }
    }
}

/// The three tables' ids.
#[derive(Clone, Copy)]
struct Tables {
    accounts: TableId,
    transfers: TableId,
    counters: TableId,
}

fn table_defs() -> [TableDef; 3] {
    let accounts = TableDef {
        name: "accounts".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("balance", ColumnType::BigInt),
            Column::not_null("pad", ColumnType::Char(100)),
        ],
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    };
    let transfers = TableDef {
        name: "transfers".into(),
        columns: vec![
            Column::not_null("id", ColumnType::BigInt),
            Column::not_null("src", ColumnType::Integer),
            Column::not_null("dst", ColumnType::Integer),
            Column::not_null("amount", ColumnType::BigInt),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "transfers_src".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    };
    let counters = TableDef {
        name: "counters".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("n", ColumnType::BigInt),
            Column::not_null("pad", ColumnType::Char(100)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "counters_n".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    };
    [accounts, transfers, counters]
}

/// A transfer: (src, dst, amount).
type Transfer = (i32, i32, i64);

/// What the client knows. Counters are indexed by row id − 1.
#[derive(Default)]
struct Ledger {
    /// Transfers acknowledged as committed (since the last check resolved the rest).
    acked: HashMap<i64, Transfer>,
    /// Transfers whose commit did not return success: outcome unknown.
    in_flight: HashMap<i64, Transfer>,
    /// Every transfer id present after the last check (committed for sure).
    present: HashMap<i64, Transfer>,
    counter_acked: Vec<i64>,
    counter_in_flight: Vec<i64>,
    commits: u64,
}

/// Where a worker records what it sends and what was acknowledged.
trait LedgerSink: Sync {
    /// A transfer's commit is about to be sent.
    fn transfer_in_flight(&self, id: i64, tr: Transfer);
    /// It was acknowledged.
    fn transfer_acked(&self, id: i64, tr: Transfer);
    /// An increment of counter `row` is about to be committed.
    fn counter_in_flight(&self, row: i32);
    /// It was acknowledged.
    fn counter_acked(&self, row: i32);
}

impl Ledger {
    fn new(rows: u32) -> Self {
        Ledger {
            counter_acked: vec![0; rows as usize],
            counter_in_flight: vec![0; rows as usize],
            ..Default::default()
        }
    }

    /// Applies one line of a child's ledger file ([`FileLedger`]); false for a line it
    /// does not understand (a line cut short by the kill).
    fn apply_line(&mut self, line: &str) -> bool {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
        let row = |l: &Ledger, r: Option<i64>| {
            r.filter(|&r| r >= 1 && r as usize <= l.counter_acked.len())
        };
        match (f.first().copied(), f.len()) {
            (Some("t"), 5) => match (num(1), num(2), num(3), num(4)) {
                (Some(id), Some(a), Some(b), Some(amt)) => {
                    self.in_flight.insert(id, (a as i32, b as i32, amt));
                    true
                }
                _ => false,
            },
            (Some("T"), 2) => {
                match num(1).and_then(|id| self.in_flight.remove(&id).map(|tr| (id, tr))) {
                    Some((id, tr)) => {
                        self.acked.insert(id, tr);
                        self.commits += 1;
                        true
                    }
                    None => false,
                }
            }
            (Some("c"), 2) => match row(self, num(1)) {
                Some(r) => {
                    self.counter_in_flight[r as usize - 1] += 1;
                    true
                }
                None => false,
            },
            (Some("C"), 2) => match row(self, num(1)) {
                Some(r) => {
                    self.counter_in_flight[r as usize - 1] -= 1;
                    self.counter_acked[r as usize - 1] += 1;
                    self.commits += 1;
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

impl LedgerSink for Mutex<Ledger> {
    fn transfer_in_flight(&self, id: i64, tr: Transfer) {
        self.lock().in_flight.insert(id, tr);
    }
    fn transfer_acked(&self, id: i64, tr: Transfer) {
        let mut l = self.lock();
        l.in_flight.remove(&id);
        l.acked.insert(id, tr);
        l.commits += 1;
    }
    fn counter_in_flight(&self, row: i32) {
        self.lock().counter_in_flight[row as usize - 1] += 1;
    }
    fn counter_acked(&self, row: i32) {
        let mut l = self.lock();
        l.counter_in_flight[row as usize - 1] -= 1;
        l.counter_acked[row as usize - 1] += 1;
        l.commits += 1;
    }
}

/// A child process's ledger: one line per event appended to a file, written before the
/// next step (the kernel keeps what a killed process wrote): `t ID SRC DST AMOUNT` and
/// `T ID` for a transfer in flight and acknowledged, `c ROW` and `C ROW` for an increment.
struct FileLedger(Mutex<std::fs::File>);

impl FileLedger {
    fn line(&self, l: String) {
        use std::io::Write;
        let _ = self.0.lock().write_all(l.as_bytes());
    }
}

impl LedgerSink for FileLedger {
    fn transfer_in_flight(&self, id: i64, (a, b, amt): Transfer) {
        self.line(format!("t {id} {a} {b} {amt}\n"));
    }
    fn transfer_acked(&self, id: i64, _: Transfer) {
        self.line(format!("T {id}\n"));
    }
    fn counter_in_flight(&self, row: i32) {
        self.line(format!("c {row}\n"));
    }
    fn counter_acked(&self, row: i32) {
        self.line(format!("C {row}\n"));
    }
}

/// The database configuration of a crash test on `dev`.
fn db_config(
    design: &DesignConfig,
    args: &CrashtestArgs,
    dev: &Arc<CrashDevice>,
) -> DatabaseConfig {
    let mut cfg = DatabaseConfig::new(design.clone());
    cfg.storage.backing = Backing::shared(dev.clone() as Arc<dyn Device>);
    cfg.storage.buffer_pool.frames = args.frames.max(16);
    // No OS cache: every write reaches the device's unsynced list, where a cut can tear it.
    cfg.storage.os_cache.size_bytes = 0;
    cfg.storage.checkpoint = CheckpointConfig {
        interval_ms: Some(100),
        wal_bytes: Some(256 << 10),
    };
    cfg.vacuum.naptime_ms = 50;
    cfg.vacuum.threshold = 20;
    cfg
}

/// `cfg` without autovacuum or purge threads, for the checks.
fn quiet(cfg: &DatabaseConfig) -> DatabaseConfig {
    let mut q = cfg.clone();
    q.vacuum.autovacuum = false;
    q.purge.threads = 0;
    q
}

fn is_power_off(e: &EngineError) -> bool {
    e.to_string().contains("power is off")
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
    let cfg = db_config(&design, args, &dev);
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

/// The tables of a database made by [`load`].
fn tables_of(db: &Database) -> mvcclab_engine::Result<Tables> {
    Ok(Tables {
        accounts: db.table_id("accounts")?,
        transfers: db.table_id("transfers")?,
        counters: db.table_id("counters")?,
    })
}

/// The configuration of a `--kills` database: files in `dir/db`, no emulated OS cache (the
/// kernel's page cache outlives a killed process, as it outlives a killed server).
fn file_config(
    design: &DesignConfig,
    args: &CrashtestArgs,
    dir: &std::path::Path,
) -> DatabaseConfig {
    let dev = Arc::new(CrashDevice::new());
    let mut cfg = db_config(design, args, &dev);
    cfg.storage.backing = Backing::Directory {
        path: dir.join("db"),
        direct: false,
    };
    cfg
}

/// The child of `--kills`: opens (recovering) or creates the database in `dir`, loads it
/// if new, prints `ready`, then runs the workload until killed, appending its ledger to
/// `dir/ledger.log`.
fn run_child(args: &CrashtestArgs, dir: &std::path::Path) -> Result<()> {
    use std::io::Write;
    let design = resolve_design(&args.design, &args.set)?;
    let db = Database::open(file_config(&design, args, dir)).context("opening the database")?;
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
        let db = match Database::open(quiet(&file_config(&design, args, dir.path()))) {
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

/// Creates and fills the tables (committed and checkpointed before the first cut).
fn load(db: &Database, rows: u32) -> Result<Tables> {
    let [a, t, c] = table_defs();
    let tables = Tables {
        accounts: db.create_table(a)?,
        transfers: db.create_table(t)?,
        counters: db.create_table(c)?,
    };
    let pad = Value::Text("x".repeat(100));
    for chunk in (1..=rows as i32).collect::<Vec<_>>().chunks(100) {
        let mut tx = db.begin();
        for &id in chunk {
            tx.insert(
                tables.accounts,
                vec![
                    Value::Integer(id),
                    Value::BigInt(INITIAL_BALANCE),
                    pad.clone(),
                ],
            )?;
            tx.insert(
                tables.counters,
                vec![Value::Integer(id), Value::BigInt(0), pad.clone()],
            )?;
        }
        tx.commit()?;
    }
    db.storage().checkpoint()?;
    Ok(tables)
}

/// One worker's loop until `stop` or the power goes.
#[allow(clippy::too_many_arguments)]
fn worker(
    db: &Database,
    t: Tables,
    rows: u32,
    seed: u64,
    ledger: &dyn LedgerSink,
    stop: &AtomicBool,
    done: &AtomicU64,
    next_transfer: &AtomicU64,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while !stop.load(Ordering::Acquire) {
        let mut tx = db.begin();
        let abort = rng.random_bool(0.1);
        let transfer = rng.random_bool(0.5);
        let (id, tr, ctr) = if transfer {
            let a = rng.random_range(1..=rows as i32);
            let mut b = rng.random_range(1..rows as i32);
            if b >= a {
                b += 1;
            }
            let amount = rng.random_range(1..=100i64);
            let id = next_transfer.fetch_add(1, Ordering::AcqRel) as i64;
            // Lock the lower id first, so two transfers do not deadlock.
            let (lo, hi) = if a < b { (a, -amount) } else { (b, amount) };
            let (hi_id, hi_delta) = if a < b { (b, amount) } else { (a, -amount) };
            let r = (|| -> mvcclab_engine::Result<()> {
                tx.update(t.accounts, &[Value::Integer(lo)], &[Assign::Add(1, hi)])?;
                tx.update(
                    t.accounts,
                    &[Value::Integer(hi_id)],
                    &[Assign::Add(1, hi_delta)],
                )?;
                tx.insert(
                    t.transfers,
                    vec![
                        Value::BigInt(id),
                        Value::Integer(a),
                        Value::Integer(b),
                        Value::BigInt(amount),
                    ],
                )
            })();
            if let Err(e) = r {
                if is_power_off(&e) {
                    return;
                }
                continue;
            }
            (id, Some((a, b, amount)), None)
        } else {
            let r = rng.random_range(1..=rows as i32);
            if let Err(e) = tx.update(t.counters, &[Value::Integer(r)], &[Assign::Add(1, 1)]) {
                if is_power_off(&e) {
                    return;
                }
                continue;
            }
            (0, None, Some(r))
        };
        if abort {
            let _ = tx.abort();
            continue;
        }
        if let Some(tr) = tr {
            ledger.transfer_in_flight(id, tr);
        }
        if let Some(r) = ctr {
            ledger.counter_in_flight(r);
        }
        match tx.commit() {
            Ok(()) => {
                if let Some(tr) = tr {
                    ledger.transfer_acked(id, tr);
                }
                if let Some(r) = ctr {
                    ledger.counter_acked(r);
                }
                done.fetch_add(1, Ordering::AcqRel);
            }
            Err(e) => {
                // Outcome unknown: stays in flight.
                if is_power_off(&e) {
                    return;
                }
            }
        }
    }
}

/// The checks of the module doc on a recovered database; resolves the ledger's in-flight
/// entries to what is there.
fn check(
    db: &Database,
    t: Tables,
    rows: u32,
    l: &mut Ledger,
    s: &mut CrashtestSummary,
    cut: u32,
) -> Result<()> {
    let mut tx = db.begin();
    // Transfers present.
    let all = tx.scan(
        t.transfers,
        Bound::Unbounded,
        Bound::Unbounded,
        mvcclab_engine::btree::ScanDirection::Forward,
        usize::MAX,
    )?;
    let mut present: HashMap<i64, Transfer> = HashMap::new();
    for r in &all {
        let (Value::BigInt(id), Value::Integer(a), Value::Integer(b), Value::BigInt(amt)) =
            (&r[0], &r[1], &r[2], &r[3])
        else {
            s.problem(cut, format!("transfers row of the wrong shape: {r:?}"));
            continue;
        };
        present.insert(*id, (*a, *b, *amt));
    }
    for (id, tr) in &l.acked {
        if present.get(id) != Some(tr) {
            s.lost_commits += 1;
            if s.problems.len() < 20 {
                // Tell a row the primary key misses from a row that is gone: look for it
                // through the index on src too.
                let via_src = tx
                    .get_by_index(t.transfers, 0, &[Value::Integer(tr.0)])?
                    .iter()
                    .any(|r| r[0] == Value::BigInt(*id));
                s.problems.push(format!(
                    "cut {cut}: acknowledged transfer {id} {tr:?} is missing ({})",
                    if via_src {
                        "yet found through index transfers_src: its primary-key entry is gone"
                    } else {
                        "not found through index transfers_src either"
                    }
                ));
            }
        }
    }
    for (id, tr) in &present {
        let known = l
            .acked
            .get(id)
            .or(l.in_flight.get(id))
            .or(l.present.get(id));
        if known != Some(tr) {
            s.problem(
                cut,
                format!("transfer {id} {tr:?} is visible but was never committed"),
            );
        }
    }
    // Balances follow from the transfers present.
    let mut expect: BTreeMap<i32, i64> = (1..=rows as i32).map(|i| (i, INITIAL_BALANCE)).collect();
    for (a, b, amt) in present.values() {
        *expect.entry(*a).or_default() -= amt;
        *expect.entry(*b).or_default() += amt;
    }
    let mut total = 0i64;
    for id in 1..=rows as i32 {
        match tx.get(t.accounts, &[Value::Integer(id)])? {
            Some(r) => {
                let bal = match r[1] {
                    Value::BigInt(v) => v,
                    _ => 0,
                };
                total += bal;
                if bal != expect[&id] {
                    s.problem(
                        cut,
                        format!(
                            "account {id}: balance {bal}, the transfers present imply {}",
                            expect[&id]
                        ),
                    );
                }
            }
            None => s.problem(cut, format!("account {id} is missing")),
        }
    }
    if total != INITIAL_BALANCE * rows as i64 {
        s.problem(
            cut,
            format!(
                "balances sum to {total}, not {}",
                INITIAL_BALANCE * rows as i64
            ),
        );
    }
    // Counters: acknowledged ≤ n ≤ acknowledged + in flight; each found through its index.
    for id in 1..=rows as i32 {
        let i = id as usize - 1;
        let Some(r) = tx.get(t.counters, &[Value::Integer(id)])? else {
            s.problem(cut, format!("counter {id} is missing"));
            continue;
        };
        let n = match r[1] {
            Value::BigInt(v) => v,
            _ => -1,
        };
        let (acked, maybe) = (l.counter_acked[i], l.counter_in_flight[i]);
        if n < acked {
            s.lost_commits += (acked - n) as u64;
            if s.problems.len() < 20 {
                s.problems.push(format!(
                    "cut {cut}: counter {id} is {n}, {acked} increments were acknowledged"
                ));
            }
        } else if n > acked + maybe {
            s.problem(
                cut,
                format!("counter {id} is {n}: only {acked} acknowledged and {maybe} in flight"),
            );
        }
        let via_index = tx.get_by_index(t.counters, 0, &[Value::BigInt(n)])?;
        if !via_index.iter().any(|row| row[0] == Value::Integer(id)) {
            s.problem(
                cut,
                format!("counter {id} (n = {n}) is not found through index counters_n"),
            );
        }
        // Resynchronized with what is there, so that a loss is counted once.
        l.counter_acked[i] = n;
        l.counter_in_flight[i] = 0;
    }
    // Every transfer found through its src index.
    let mut by_src: HashMap<i32, Vec<i64>> = HashMap::new();
    for (id, (a, _, _)) in &present {
        by_src.entry(*a).or_default().push(*id);
    }
    for (a, ids) in by_src {
        let found: BTreeSet<i64> = tx
            .get_by_index(t.transfers, 0, &[Value::Integer(a)])?
            .iter()
            .filter_map(|r| match r[0] {
                Value::BigInt(v) => Some(v),
                _ => None,
            })
            .collect();
        for id in ids {
            if !found.contains(&id) {
                s.problem(
                    cut,
                    format!("transfer {id} is not found through index transfers_src"),
                );
            }
        }
    }
    tx.commit()?;
    for (name, table) in [
        ("accounts", t.accounts),
        ("transfers", t.transfers),
        ("counters", t.counters),
    ] {
        let (_, problems) = db
            .check_indexes(table)
            .with_context(|| format!("checking the indexes of {name}"))?;
        for p in problems {
            s.problem(cut, p);
        }
    }
    l.present = present;
    l.acked.clear();
    l.in_flight.clear();
    Ok(())
}

/// `mvcclab crashtest`: runs, prints the summary line (and `--json`), and fails when a
/// commit was lost or an invariant broken.
///
/// Errors: as [`crashtest`]; writing the JSON; lost commits or violations (exit code 1).
pub fn run(args: CrashtestArgs) -> Result<()> {
    if let Some(dir) = &args.child_dir {
        return run_child(&args, dir);
    }
    let summary = match args.kills {
        Some(n) => kill_test(
            &args,
            &std::env::current_exe().context("finding the mvcclab binary")?,
            n,
        )?,
        None => crashtest(&args)?,
    };
    for p in &summary.problems {
        eprintln!("problem: {p}");
    }
    println!("{}", summary.line());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if summary.lost_commits > 0 || summary.invariant_violations > 0 {
        anyhow::bail!(
            "{} lost commits and {} invariant violations over {} cuts (seed {})",
            summary.lost_commits,
            summary.invariant_violations,
            summary.cuts,
            summary.seed
        );
    }
    Ok(())
}
