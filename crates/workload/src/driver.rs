//! The driver: runs a workload's events against a [`Target`] from N threads, by event count
//! or for a time, and measures transactions, queries, errors and latencies per operation
//! kind (hdrhistogram), the way sysbench reports them.
//!
//! Threads take their events from their own generator, seeded from `--rand-seed` and the
//! thread number, so the stream of operations is deterministic for a seed and thread count
//! (what happens when threads race for rows is not).
//!
//! # Errors, as sysbench handles them
//! An operation that fails with an error the target's sysbench driver ignores ([`IgnoreErrors`]:
//! PostgreSQL's deadlock, serialization failure and unique violation, drv_pgsql.c
//! `pgsql_check_status`; MariaDB's 1213, 1020 and 1205, drv_mysql.c `check_error`) ends its
//! attempt: the transaction is rolled back, the error counted by kind, and the event restarted
//! with fresh random values, as sysbench.sql.lua `check_error` throws RESTART_EVENT and
//! sysbench.lua `thread_run` calls `event()` again until it succeeds (the event is counted once,
//! its latency includes the failed attempts). Any other error stops the run: every thread ends
//! its event and [`run`] returns an error naming the code, message and statement, as sysbench
//! exits when a fatal SQL error propagates out of `thread_run`. A script's own rollback
//! ([`ErrorKind::ScriptRollback`], sysbench-tpcc's 1 % of new-orders) is counted as an error and
//! the event completes, as tpcc_run.lua does.

use crate::sysbench::{Generator, Op, SysbenchOptions, WorkloadKind};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What kind of failure ended an operation, in the field's terms; the report counts
/// failed events by it ([`RunResult::errors_by_kind`], keyed by [`ErrorKind::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The transaction was chosen as a deadlock's victim (PostgreSQL SQLSTATE 40P01
    /// deadlock_detected; MariaDB ER_LOCK_DEADLOCK 1213).
    Deadlock,
    /// A lock was not granted in time (MariaDB ER_LOCK_WAIT_TIMEOUT 1205,
    /// `innodb_lock_wait_timeout`; PostgreSQL SQLSTATE 55P03 lock_not_available).
    LockWaitTimeout,
    /// A concurrent change made the transaction's snapshot unusable (PostgreSQL SQLSTATE
    /// 40001 serialization_failure; MariaDB ER_CHECKREAD 1020 "Record has changed since
    /// last read", `innodb_snapshot_isolation`).
    SerializationFailure,
    /// A unique index or primary key already holds the key (PostgreSQL SQLSTATE 23505
    /// unique_violation; MariaDB ER_DUP_ENTRY 1062).
    UniqueViolation,
    /// The workload script rolled its own transaction back on purpose: sysbench-tpcc's
    /// new-order with an unused item (tpcc_run.lua `new_order`: "rs.nrows == 0", which
    /// counts an error, sends ROLLBACK and returns, so the event still completes).
    ScriptRollback,
    /// Anything else: a missing table, a lost connection, a storage failure, a row the
    /// script needs that is not there.
    Other,
}

impl ErrorKind {
    /// The kind's name in reports (`deadlock`, `lock_wait_timeout`,
    /// `serialization_failure`, `unique_violation`, `script_rollback`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Deadlock => "deadlock",
            ErrorKind::LockWaitTimeout => "lock_wait_timeout",
            ErrorKind::SerializationFailure => "serialization_failure",
            ErrorKind::UniqueViolation => "unique_violation",
            ErrorKind::ScriptRollback => "script_rollback",
            ErrorKind::Other => "other",
        }
    }

    /// The kind of a PostgreSQL error by its SQLSTATE (src/backend/utils/errcodes.txt).
    pub fn from_sqlstate(sqlstate: &str) -> ErrorKind {
        match sqlstate {
            "40P01" => ErrorKind::Deadlock,
            "55P03" => ErrorKind::LockWaitTimeout,
            "40001" => ErrorKind::SerializationFailure,
            "23505" => ErrorKind::UniqueViolation,
            _ => ErrorKind::Other,
        }
    }

    /// The kind of a MariaDB error by its number (include/mysqld_error.h).
    pub fn from_mariadb(errno: u16) -> ErrorKind {
        match errno {
            1213 => ErrorKind::Deadlock,
            1205 => ErrorKind::LockWaitTimeout,
            1020 => ErrorKind::SerializationFailure,
            // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME.
            1062 | 1586 => ErrorKind::UniqueViolation,
            _ => ErrorKind::Other,
        }
    }
}

/// The code a server (or the engine, in the dialect of the engine its design models)
/// gives an error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A PostgreSQL SQLSTATE, five characters (`23505`).
    SqlState(String),
    /// A MariaDB error number (`1062`).
    MariaDb(u16),
}

impl ErrorCode {
    /// A code as the user writes it in `--ignore-errors`: five digits or capital letters
    /// are a SQLSTATE (`40P01`, `23505`), a number of up to four digits a MariaDB error
    /// number (`1062`); `None` for anything else.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        let s = s.trim();
        if s.len() == 5
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
        {
            return Some(ErrorCode::SqlState(s.to_string()));
        }
        if (1..=4).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().ok().map(ErrorCode::MariaDb);
        }
        None
    }

    /// Whether sysbench 1.0's driver for this code's server ignores it by default:
    /// drv_pgsql.c `pgsql_check_status` rolls back and returns DB_ERROR_IGNORABLE for
    /// SQLSTATEs 40P01, 23505 and 40001 (a fixed list); drv_mysql.c `check_error` ignores
    /// the numbers in `--mysql-ignore-errors`, default "1213,1020,1205".
    pub fn sysbench_ignores(&self) -> bool {
        match self {
            ErrorCode::SqlState(s) => matches!(s.as_str(), "40P01" | "23505" | "40001"),
            ErrorCode::MariaDb(n) => matches!(n, 1213 | 1020 | 1205),
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorCode::SqlState(s) => write!(f, "SQLSTATE {s}"),
            ErrorCode::MariaDb(n) => write!(f, "MariaDB error {n}"),
        }
    }
}

/// An error of one operation, as a target reports it.
#[derive(Debug, Clone)]
pub struct OpError {
    /// Text of the error (the server's or the engine's message).
    pub message: String,
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// The server's code for it; `None` for a failure without one (a lost connection, the
    /// driver's or the script's own checks, a storage failure of the engine).
    pub code: Option<ErrorCode>,
    /// The statement that failed, when the target knows its text.
    pub statement: Option<String>,
}

impl OpError {
    /// An error with a code; its kind follows from the code.
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> OpError {
        let kind = match &code {
            ErrorCode::SqlState(s) => ErrorKind::from_sqlstate(s),
            ErrorCode::MariaDb(n) => ErrorKind::from_mariadb(*n),
        };
        OpError {
            message: message.into(),
            kind,
            code: Some(code),
            statement: None,
        }
    }

    /// An error without a code, of kind [`ErrorKind::Other`] (a lost connection, a row the
    /// script needs that is missing).
    pub fn other(message: impl Into<String>) -> OpError {
        OpError {
            message: message.into(),
            kind: ErrorKind::Other,
            code: None,
            statement: None,
        }
    }

    /// The same error, naming `statement` as the one that failed (kept when one is named
    /// already).
    pub fn with_statement(mut self, statement: impl Into<String>) -> OpError {
        if self.statement.is_none() {
            self.statement = Some(statement.into());
        }
        self
    }

    /// A deadlock, serialization failure or lock wait timeout: what a client retries from
    /// the transaction's start (counted in [`RunResult::retryable_errors`]).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Deadlock | ErrorKind::LockWaitTimeout | ErrorKind::SerializationFailure
        )
    }
}

impl std::fmt::Display for OpError {
    /// `<code> (<kind>): <message>; statement: <text>`, the parts that are known.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(c) = &self.code {
            write!(f, "{c} ")?;
        }
        write!(f, "({}): {}", self.kind.name(), self.message)?;
        if let Some(s) = &self.statement {
            write!(
                f,
                "; statement: {}",
                s.split_whitespace().collect::<Vec<_>>().join(" ")
            )?;
        }
        Ok(())
    }
}

/// Which errors end an event and let the run go on (`--ignore-errors`); any other error
/// stops the run, as sysbench stops at an error its driver does not ignore (sb_lua.c: the
/// Lua error of a DB_ERROR_FATAL query propagates out of sysbench.lua `thread_run` and the
/// run fails). In reports it is the flag's text (`default`, `all`, `1062,23505`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum IgnoreErrors {
    /// sysbench's defaults ([`ErrorCode::sysbench_ignores`]).
    #[default]
    Default,
    /// Every error (sysbench's `--mysql-ignore-errors=all`).
    All,
    /// These codes beside sysbench's defaults.
    Codes(Vec<ErrorCode>),
}

impl std::fmt::Display for IgnoreErrors {
    /// The flag's text: `default`, `all`, or the codes separated by commas.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IgnoreErrors::Default => f.write_str("default"),
            IgnoreErrors::All => f.write_str("all"),
            IgnoreErrors::Codes(codes) => {
                let texts: Vec<String> = codes
                    .iter()
                    .map(|c| match c {
                        ErrorCode::SqlState(s) => s.clone(),
                        ErrorCode::MariaDb(n) => n.to_string(),
                    })
                    .collect();
                f.write_str(&texts.join(","))
            }
        }
    }
}

impl From<IgnoreErrors> for String {
    fn from(v: IgnoreErrors) -> String {
        v.to_string()
    }
}

impl TryFrom<String> for IgnoreErrors {
    type Error = String;
    fn try_from(s: String) -> Result<IgnoreErrors, String> {
        IgnoreErrors::parse(&s)
    }
}

impl IgnoreErrors {
    /// Parses `--ignore-errors`: `all`, `default`, or a comma-separated list of codes
    /// ([`ErrorCode::parse`]) ignored beside the defaults.
    ///
    /// Errors: a part that is not a code, named in the message.
    pub fn parse(s: &str) -> Result<IgnoreErrors, String> {
        match s.trim() {
            "all" => return Ok(IgnoreErrors::All),
            "default" => return Ok(IgnoreErrors::Default),
            _ => {}
        }
        s.split(',')
            .map(|p| {
                ErrorCode::parse(p).ok_or_else(|| {
                    format!(
                        "--ignore-errors: {p:?} is neither a SQLSTATE (5 characters, e.g. \
                         23505) nor a MariaDB error number (e.g. 1062); give codes \
                         separated by commas, `all` or `default`"
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(IgnoreErrors::Codes)
    }

    /// Whether `e` ends its event and lets the run go on. A [`ErrorKind::ScriptRollback`]
    /// always does (the script's own rollback, not an SQL error).
    pub fn ignores(&self, e: &OpError) -> bool {
        if e.kind == ErrorKind::ScriptRollback {
            return true;
        }
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Default => e.code.as_ref().is_some_and(ErrorCode::sysbench_ignores),
            IgnoreErrors::Codes(codes) => e
                .code
                .as_ref()
                .is_some_and(|c| c.sysbench_ignores() || codes.contains(c)),
        }
    }
}

/// Where a workload runs: the embedded engine, or a real server (crate mvcclab-servers).
pub trait Target: Send + Sync {
    /// Creates the sbtest tables and loads `opts.prepare_rows(kind)` rows into each
    /// (sysbench `prepare` of the workload `kind`).
    ///
    /// Errors: the target's, as text.
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<(), String>;
    /// A connection for one thread.
    ///
    /// Errors: the target's (a server refusing the connection), as text.
    fn session(&self) -> Result<Box<dyn Session + '_>, String>;
}

/// One thread's connection.
pub trait Session: Send {
    /// Executes one operation.
    ///
    /// Errors: [`OpError`]; after one, the session's transaction is rolled back.
    fn execute(&mut self, op: &Op) -> Result<(), OpError>;
    /// Rolls back an open transaction, if any (after an error in an event).
    fn rollback(&mut self);
}

/// How long and how wide to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// --threads.
    pub threads: u32,
    /// --time in seconds (0 = no limit).
    pub time_s: f64,
    /// --events (0 = no limit). At least one of time and events must be set.
    pub events: u64,
    /// --rand-seed.
    pub rand_seed: u64,
    /// --rate: average events per second over all threads, 0 = as fast as the threads go.
    /// Events are scheduled with exponential gaps (a Poisson arrival process, as sysbench's
    /// event generator), seeded from `rand_seed`; a thread takes the next scheduled event
    /// and waits for its time. When the threads fall behind, events run late, back to
    /// back, and their latency counts from their scheduled time, as sysbench counts
    /// queueing time in rate mode.
    #[serde(default)]
    pub rate_tps: f64,
    /// --ignore-errors: which errors end an event and let the run go on; any other stops
    /// the run. Reports from before it read as sysbench's defaults.
    #[serde(default)]
    pub ignore_errors: IgnoreErrors,
}

/// The event schedule of a `--rate` run (see [`RunOptions::rate_tps`]).
struct Schedule {
    start: Instant,
    rate_tps: f64,
    /// (seconds from `start` of the next event, generator state).
    next: std::sync::Mutex<(f64, u64)>,
}

impl Schedule {
    fn new(start: Instant, rate_tps: f64, seed: u64) -> Self {
        Schedule {
            start,
            rate_tps,
            next: std::sync::Mutex::new((0.0, seed ^ 0x9E37_79B9_7F4A_7C15 | 1)),
        }
    }

    /// The time of the next event; the schedule moves on by an exponential gap of mean
    /// 1 / rate.
    fn take(&self) -> Instant {
        let mut g = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let at = g.0;
        // xorshift64*, then a uniform in (0, 1] for the inverse CDF.
        let mut x = g.1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        g.1 = x;
        let u = ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        g.0 += -u.ln() / self.rate_tps;
        self.start + Duration::from_secs_f64(at)
    }
}

/// Latency percentiles of one kind, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Minimum (ms).
    pub min_ms: f64,
    /// Mean (ms).
    pub avg_ms: f64,
    /// Median (ms).
    pub p50_ms: f64,
    /// 95th percentile (ms, sysbench's default --percentile).
    pub p95_ms: f64,
    /// 99th percentile (ms).
    pub p99_ms: f64,
    /// Maximum (ms).
    pub max_ms: f64,
}

/// What a run did (sysbench's "SQL statistics" and "Latency").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Events completed (sysbench "transactions").
    pub transactions: u64,
    /// Statements executed, BEGIN/COMMIT excluded.
    pub queries: u64,
    /// Read statements.
    pub reads: u64,
    /// Write statements.
    pub writes: u64,
    /// BEGIN and COMMIT.
    pub other: u64,
    /// Attempts of events ended by an ignored error (sysbench's "ignored errors"; each
    /// failed attempt of a restarted event counts), TPC-C's script rollbacks included.
    pub errors: u64,
    /// Of which deadlocks, serialization failures or lock wait timeouts.
    pub retryable_errors: u64,
    /// `errors` by [`ErrorKind::name`] (`unique_violation`, `deadlock`, ...); empty in
    /// reports from before error kinds.
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Operations per kind (point_select, index_update, ...).
    pub ops_by_kind: BTreeMap<String, u64>,
    /// Wall time of the run in seconds.
    pub elapsed_s: f64,
    /// Events per second.
    pub tps: f64,
    /// Queries per second.
    pub qps: f64,
    /// Latency per operation kind, and "event" for whole events.
    pub latency: BTreeMap<String, Latency>,
    /// First error messages seen (at most 5), to say what went wrong.
    pub error_samples: Vec<String>,
    /// The run was stopped early (Ctrl-C): the figures cover `elapsed_s` only.
    #[serde(default)]
    pub interrupted: bool,
}

/// Shared between the driver and its caller while a run is under way: the caller sets
/// `stop` (Ctrl-C) and reads `completed` (events finished so far) and `statements` to show
/// live TPS and sample a time series; [`RunControl::take_interval_latency`] gives the
/// latencies of the events completed since its last call.
///
/// Reading these does not change the run: the counters are only read, and the interval
/// histogram is a second histogram beside each thread's own (the run's result is built
/// from those alone).
#[derive(Debug, Default)]
pub struct RunControl {
    /// Set to end the run early; each thread finishes its current event and returns.
    /// Shared by `Arc` so a signal handler can hold it.
    pub stop: Arc<AtomicBool>,
    /// Events completed so far in the current run (reset by [`run`] at its start); at the
    /// end of a run it equals [`RunResult::transactions`].
    pub completed: AtomicU64,
    /// Statements executed so far in the current run, BEGIN/COMMIT excluded (reset by
    /// [`run`] at its start; added at the end of each event, failed ones included); at the
    /// end of a run it equals [`RunResult::queries`].
    pub statements: AtomicU64,
    /// Latencies (µs) of the events completed since the last
    /// [`RunControl::take_interval_latency`], one histogram per driver thread (each
    /// locked by its own thread per event and by the reader once per interval, so the
    /// threads never wait for each other); replaced by [`run`] at its start.
    interval_latency: Mutex<Vec<Arc<Mutex<Histogram<u64>>>>>,
}

impl RunControl {
    /// Latency percentiles of the events completed since the last call (or since the run
    /// started), emptying the interval histograms; all zero when none completed.
    pub fn take_interval_latency(&self) -> Latency {
        let slots = self
            .interval_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut acc: Option<Histogram<u64>> = None;
        for slot in slots.iter() {
            let mut h = slot.lock().unwrap_or_else(|e| e.into_inner());
            if h.is_empty() {
                continue;
            }
            match acc.as_mut() {
                Some(a) => {
                    let _ = a.add(&*h);
                }
                None => acc = Some(h.clone()),
            }
            h.reset();
        }
        acc.map_or_else(Latency::default, |h| latency(&h))
    }

    /// A new interval histogram for one driver thread, read by
    /// [`RunControl::take_interval_latency`] until the next run.
    fn interval_slot(&self) -> Arc<Mutex<Histogram<u64>>> {
        let slot = Arc::new(Mutex::new(Histogram::new(3).expect("histogram")));
        self.interval_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot.clone());
        slot
    }
}

fn latency(h: &Histogram<u64>) -> Latency {
    let ms = |us: u64| us as f64 / 1000.0;
    Latency {
        count: h.len(),
        min_ms: ms(h.min()),
        avg_ms: h.mean() / 1000.0,
        p50_ms: ms(h.value_at_quantile(0.5)),
        p95_ms: ms(h.value_at_quantile(0.95)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        max_ms: ms(h.max()),
    }
}

fn is_read(op: &Op) -> bool {
    matches!(
        op,
        Op::PointSelect { .. }
            | Op::SimpleRange { .. }
            | Op::SumRange { .. }
            | Op::OrderRange { .. }
            | Op::DistinctRange { .. }
            | Op::RandomPoints { .. }
            | Op::RandomRanges { .. }
    ) || matches!(op, Op::Tpcc(t) if t.is_read_only())
}

struct ThreadResult {
    r: RunResult,
    hist: BTreeMap<String, Histogram<u64>>,
}

/// Runs `kind` against `target` until `run.events` events or `run.time_s` seconds, or until
/// `ctl.stop` is set (Ctrl-C; the result then says `interrupted`). Returns the measured
/// result; `ctl.completed` counts finished events while it runs.
///
/// Errors: a message naming the bad option (no limit given, zero threads); the target's
/// error opening a session; the first error `run.ignore_errors` does not ignore, with its
/// code, kind, message and statement (the run's figures are then dropped, as sysbench
/// reports none after a fatal error).
pub fn run(
    target: &dyn Target,
    kind: WorkloadKind,
    opts: &SysbenchOptions,
    run: &RunOptions,
    ctl: &RunControl,
) -> Result<RunResult, String> {
    let stop = &*ctl.stop;
    ctl.completed.store(0, Ordering::Relaxed);
    ctl.statements.store(0, Ordering::Relaxed);
    ctl.interval_latency
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    if run.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if run.events == 0 && run.time_s <= 0.0 {
        return Err("give --time or --events (both are 0)".into());
    }
    if !(run.rate_tps >= 0.0 && run.rate_tps.is_finite()) {
        return Err(format!(
            "--rate must be 0 (no limit) or a positive number of events per second, got {}",
            run.rate_tps
        ));
    }
    let deadline = (run.time_s > 0.0).then(|| Instant::now() + Duration::from_secs_f64(run.time_s));
    let events_left = AtomicU64::new(if run.events == 0 {
        u64::MAX
    } else {
        run.events
    });
    // Every thread's connection is open before the clock starts, as sysbench connects in
    // thread_init() before its timer.
    // Set by the first thread whose event ends in an error `run.ignore_errors` does not
    // ignore; every thread stops at the end of its event.
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let aborted = AtomicBool::new(false);
    let sessions = (0..run.threads)
        .map(|_| target.session())
        .collect::<Result<Vec<_>, String>>()?;
    let start = Instant::now();
    let schedule = (run.rate_tps > 0.0).then(|| Schedule::new(start, run.rate_tps, run.rand_seed));
    let schedule = schedule.as_ref();
    let results: Vec<ThreadResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .into_iter()
            .zip(0..run.threads)
            .map(|(mut session, t)| {
                let events_left = &events_left;
                let (fatal, aborted) = (&fatal, &aborted);
                let interval = ctl.interval_slot();
                scope.spawn(move || {
                    let mut gen = Generator::new(kind, opts.clone(), run.rand_seed, t, run.threads);
                    let mut out = ThreadResult {
                        r: RunResult::default(),
                        hist: BTreeMap::new(),
                    };
                    loop {
                        if stop.load(Ordering::Relaxed)
                            || aborted.load(Ordering::Relaxed)
                            || deadline.is_some_and(|d| Instant::now() >= d)
                        {
                            break;
                        }
                        if events_left
                            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                            .is_err()
                        {
                            break;
                        }
                        let ev_start = match schedule {
                            Some(sch) => {
                                let at = sch.take();
                                if deadline.is_some_and(|d| at >= d) {
                                    break;
                                }
                                while Instant::now() < at && !stop.load(Ordering::Relaxed) {
                                    let left = at.saturating_duration_since(Instant::now());
                                    std::thread::sleep(left.min(Duration::from_millis(50)));
                                }
                                if stop.load(Ordering::Relaxed) {
                                    break;
                                }
                                at
                            }
                            None => Instant::now(),
                        };
                        let queries_before = out.r.queries;
                        // sysbench.lua `thread_run`: `repeat pcall(event) until success`,
                        // each attempt with the script's fresh random values.
                        let completed = loop {
                            let ev = gen.next_event();
                            let Err(e) = attempt(&mut *session, &ev, &mut out) else {
                                break true;
                            };
                            session.rollback();
                            if !run.ignore_errors.ignores(&e) {
                                let mut f = fatal.lock().unwrap_or_else(|p| p.into_inner());
                                if f.is_none() {
                                    *f = Some(format!(
                                        "the run stopped at an error that sysbench's driver \
                                         does not ignore: {e}; pass --ignore-errors with its \
                                         code (or `all`) to count such errors and go on"
                                    ));
                                }
                                aborted.store(true, Ordering::Relaxed);
                                break false;
                            }
                            out.r.errors += 1;
                            *out.r
                                .errors_by_kind
                                .entry(e.kind.name().into())
                                .or_default() += 1;
                            if e.is_retryable() {
                                out.r.retryable_errors += 1;
                            }
                            if out.r.error_samples.len() < 5 {
                                out.r.error_samples.push(e.to_string());
                            }
                            if e.kind == ErrorKind::ScriptRollback {
                                break true;
                            }
                            if stop.load(Ordering::Relaxed)
                                || aborted.load(Ordering::Relaxed)
                                || deadline.is_some_and(|d| Instant::now() >= d)
                            {
                                break false;
                            }
                        };
                        ctl.statements
                            .fetch_add(out.r.queries - queries_before, Ordering::Relaxed);
                        if completed {
                            out.r.transactions += 1;
                            let us = (ev_start.elapsed().as_micros() as u64).max(1);
                            let h = out
                                .hist
                                .entry("event".into())
                                .or_insert_with(|| Histogram::new(3).expect("histogram"));
                            let _ = h.record(us);
                            let _ = interval
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .record(us);
                            ctl.completed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    session.rollback();
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("driver thread panicked"))
            .collect()
    });
    let elapsed_s = start.elapsed().as_secs_f64();
    if let Some(message) = fatal.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(message);
    }
    let mut total = RunResult {
        elapsed_s,
        ..Default::default()
    };
    let mut hist: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for t in results {
        total.transactions += t.r.transactions;
        total.queries += t.r.queries;
        total.reads += t.r.reads;
        total.writes += t.r.writes;
        total.other += t.r.other;
        total.errors += t.r.errors;
        total.retryable_errors += t.r.retryable_errors;
        for (k, n) in t.r.errors_by_kind {
            *total.errors_by_kind.entry(k).or_default() += n;
        }
        for (k, n) in t.r.ops_by_kind {
            *total.ops_by_kind.entry(k).or_default() += n;
        }
        for e in t.r.error_samples {
            if total.error_samples.len() < 5 {
                total.error_samples.push(e);
            }
        }
        for (k, h) in t.hist {
            match hist.get_mut(&k) {
                Some(acc) => {
                    let _ = acc.add(&h);
                }
                None => {
                    hist.insert(k, h);
                }
            }
        }
    }
    total.interrupted = stop.load(Ordering::Relaxed);
    total.tps = total.transactions as f64 / elapsed_s.max(1e-9);
    total.qps = total.queries as f64 / elapsed_s.max(1e-9);
    total.latency = hist.iter().map(|(k, h)| (k.clone(), latency(h))).collect();
    Ok(total)
}

/// Runs the operations of one attempt of an event on `session`, counting each that
/// succeeds in `out` (by kind, query class, latency); stops at the first error.
fn attempt(session: &mut dyn Session, ev: &[Op], out: &mut ThreadResult) -> Result<(), OpError> {
    for op in ev {
        let op_start = Instant::now();
        session.execute(op).map_err(|e| OpError {
            message: format!("{}: {}", op.kind(), e.message),
            ..e
        })?;
        let us = op_start.elapsed().as_micros() as u64;
        let h = out
            .hist
            .entry(op.kind().to_string())
            .or_insert_with(|| Histogram::new(3).expect("histogram"));
        let _ = h.record(us.max(1));
        *out.r.ops_by_kind.entry(op.kind().to_string()).or_default() += 1;
        if op.is_query() {
            out.r.queries += 1;
            if is_read(op) {
                out.r.reads += 1;
            } else {
                out.r.writes += 1;
            }
        } else {
            out.r.other += 1;
        }
    }
    Ok(())
}
