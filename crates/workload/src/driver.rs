//! The driver: runs a workload's events against a [`Target`] from N threads, by event count
//! or for a time, and measures transactions, queries, errors and latencies per operation
//! kind (hdrhistogram), the way sysbench reports them.
//!
//! Threads take their events from their own generator, seeded from `--rand-seed` and the
//! thread number, so the stream of operations is deterministic for a seed and thread count
//! (what happens when threads race for rows is not). An operation that fails (deadlock,
//! serialization failure, duplicate key) ends its event: the transaction is rolled back, the
//! error counted, and the thread goes on with the next event, as sysbench does with its
//! ignored errors.

use crate::sysbench::{Generator, Op, SysbenchOptions, WorkloadKind};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An error of one operation, as a target reports it.
#[derive(Debug, Clone)]
pub struct OpError {
    /// Text of the error.
    pub message: String,
    /// A deadlock or serialization failure, which a client retries (sysbench ignores them).
    pub retryable: bool,
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
    /// Events ended by an error.
    pub errors: u64,
    /// Of which deadlocks or serialization failures.
    pub retryable_errors: u64,
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
/// Errors: a message naming the bad option (no limit given, zero threads), or the
/// target's error opening a session.
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
                let interval = ctl.interval_slot();
                scope.spawn(move || {
                    let mut gen = Generator::new(kind, opts.clone(), run.rand_seed, t, run.threads);
                    let mut out = ThreadResult {
                        r: RunResult::default(),
                        hist: BTreeMap::new(),
                    };
                    loop {
                        if stop.load(Ordering::Relaxed)
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
                        let ev = gen.next_event();
                        let mut failed = false;
                        let queries_before = out.r.queries;
                        for op in &ev {
                            let op_start = Instant::now();
                            match session.execute(op) {
                                Ok(()) => {
                                    let us = op_start.elapsed().as_micros() as u64;
                                    let h = out
                                        .hist
                                        .entry(op.kind().to_string())
                                        .or_insert_with(|| Histogram::new(3).expect("histogram"));
                                    let _ = h.record(us.max(1));
                                    *out.r.ops_by_kind.entry(op.kind().to_string()).or_default() +=
                                        1;
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
                                Err(e) => {
                                    session.rollback();
                                    out.r.errors += 1;
                                    if e.retryable {
                                        out.r.retryable_errors += 1;
                                    }
                                    if out.r.error_samples.len() < 5 {
                                        out.r.error_samples.push(format!(
                                            "{}: {}",
                                            op.kind(),
                                            e.message
                                        ));
                                    }
                                    failed = true;
                                    break;
                                }
                            }
                        }
                        ctl.statements
                            .fetch_add(out.r.queries - queries_before, Ordering::Relaxed);
                        if !failed {
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
