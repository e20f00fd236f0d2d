//! The time series of a measured phase (`results.timeseries[]`, an experiment phase's
//! `timeseries[]`): a sampler thread reads the cumulative counters once per
//! `--report-interval` (sysbench's flag name; default 1 s) while the phase runs, and each
//! [`Sample`] is the difference of two readings, as sysbench's `--report-interval` lines
//! and BenchBase's `samples.csv` report each interval.
//!
//! # Invariants
//! 1. Sampling does not change what is measured: the sampler only reads counters (the
//!    engine's [`Counters`], the driver's [`RunControl`] counts, a server's statistics
//!    views); it resets none. The one thing it takes is the driver's interval latency
//!    histogram, kept beside the run's own.
//! 2. Every reading is cumulative since the phase's mark, and the last one is the reading
//!    the phase's totals come from ([`close`] is given it), so the samples' counts add up
//!    exactly to the totals: transactions, statements, blocks by cause, buffer misses,
//!    WAL bytes.
//! 3. Counts only grow between readings (counters only grow, readings are taken in
//!    order), so no sample is negative.
//!
//! # mvcclab's device under real servers (issue 23)
//! [`CounterReading::device_blocks`] carries 4 KiB blocks on mvcclab's FUSE device,
//! cumulative since the mark, keyed `file CLASS` (`file pg_wal`, `file heap sbtest1`,
//! `file ibdata1 doublewrite`; file-system mode) and `process KIND` (`process
//! checkpointer`, `process backend`, `process mariadbd`): two views of the same blocks, as
//! the device counts files and processes apart. `ServerRun::reading` (server.rs) fills it
//! from the device's counters and [`close`] turns it into each sample's `device_blocks`.

use crate::progress::LiveRates;
use crate::result::{is_engine_state, BlocksRw, Sample};
use mvcclab_engine::stats::{CauseCounts, Counters};
use mvcclab_servers::Snapshot;
use mvcclab_workload::driver::{Latency, RunControl};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a subject's counters say at one moment, cumulative since the phase's mark.
#[derive(Clone, Debug, Default)]
pub struct CounterReading {
    /// Every count since the mark, all causes together (`io.total`'s kind of figure).
    pub total: CauseCounts,
    /// The counts by cause since the mark: for the embedded engine they add up to
    /// `total`; a real server attributes only some of its counts (`io.by_cause`).
    pub counters: Counters,
    /// A real server's own counters: counts since the mark, state values as they are now;
    /// for the embedded engine (a design with undo) the state values
    /// [`crate::result::ENGINE_HISTORY_LIST_LENGTH`] and
    /// [`crate::result::ENGINE_BUFFER_POOL_PAGES_FREE`] and the counts
    /// [`crate::result::ENGINE_BTREE_COUNTERS`], likewise since the mark.
    pub server: Snapshot,
    /// 4 KiB blocks on mvcclab's device by `file CLASS` and by `process KIND` since the
    /// mark (a real server on the FUSE device; see the module doc), empty otherwise.
    pub device_blocks: BTreeMap<String, BlocksRw>,
}

/// One reading of a phase: the driver's counts and the subject's counters, cumulative
/// since the phase's start, at `at_s` seconds into it.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// Seconds since the phase started.
    pub at_s: f64,
    /// Events completed since the start.
    pub transactions: u64,
    /// Statements executed since the start.
    pub statements: u64,
    /// Latency of the events completed since the previous reading.
    pub latency: Latency,
    /// The subject's counters.
    pub counters: CounterReading,
}

/// Runs `f` (the phase) while a sampler thread takes a [`Reading`] every `interval_s`
/// seconds with `read`, publishing each interval's rates to `live`. With `interval_s` 0
/// it takes none. `end_s`, when the phase's length is known (`--time`), lets the sampler
/// skip a tick closer than a quarter interval to the end, so that the last sample is not
/// a sliver. `ctl`'s counts are zeroed first (a phase counts from 0).
///
/// Returns `f`'s value, the readings in order and the seconds `f` took. A reading that
/// `read` cannot make (`None`: a server that did not answer) is left out; the next
/// sample then spans both intervals.
pub fn sampled<T>(
    interval_s: f64,
    end_s: Option<f64>,
    ctl: &RunControl,
    live: Option<&LiveRates>,
    read: &(dyn Fn() -> Option<CounterReading> + Sync),
    f: impl FnOnce() -> T,
) -> (T, Vec<Reading>, f64) {
    ctl.completed.store(0, Ordering::Relaxed);
    ctl.statements.store(0, Ordering::Relaxed);
    ctl.take_interval_latency();
    let start = Instant::now();
    if interval_s <= 0.0 {
        let out = f();
        return (out, Vec::new(), start.elapsed().as_secs_f64());
    }
    let done = AtomicBool::new(false);
    let (out, readings, elapsed) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut readings: Vec<Reading> = Vec::new();
            let mut tick = 1u64;
            loop {
                let at = interval_s * tick as f64;
                tick += 1;
                if end_s.is_some_and(|e| at > e - interval_s / 4.0) {
                    break;
                }
                let due = start + Duration::from_secs_f64(at);
                while Instant::now() < due && !done.load(Ordering::Relaxed) {
                    let left = due.saturating_duration_since(Instant::now());
                    std::thread::sleep(left.min(Duration::from_millis(20)));
                }
                if done.load(Ordering::Relaxed) {
                    break;
                }
                let transactions = ctl.completed.load(Ordering::Relaxed);
                let statements = ctl.statements.load(Ordering::Relaxed);
                let latency = ctl.take_interval_latency();
                let Some(counters) = read() else { continue };
                let r = Reading {
                    at_s: start.elapsed().as_secs_f64(),
                    transactions,
                    statements,
                    latency,
                    counters,
                };
                if let Some(live) = live {
                    let prev = readings.last().cloned().unwrap_or_default();
                    let s = sample("", &prev, &r, &|_| false);
                    live.publish(s.tps, s.read_mib_s, s.write_mib_s);
                }
                readings.push(r);
            }
            readings
        });
        let out = f();
        let elapsed = start.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        let readings = sampler.join().expect("sampler thread panicked");
        (out, readings, elapsed)
    });
    (out, readings, elapsed)
}

/// The samples of a phase named `phase` from its sampler `readings` and the `last`
/// reading, the one its totals are taken from (so the samples add up to them). A real
/// server's counters named by `is_state` are state values (the value at each interval's
/// end); the last sample keeps only the server counters the sampler read (all of them
/// when it read none).
pub fn close(
    phase: &str,
    readings: Vec<Reading>,
    mut last: Reading,
    is_state: &dyn Fn(&str) -> bool,
) -> Vec<Sample> {
    if let Some(r) = readings.last() {
        let seen = &r.counters.server;
        last.counters.server.retain(|k, _| seen.contains_key(k));
    }
    let mut prev = Reading::default();
    let mut out = Vec::with_capacity(readings.len() + 1);
    for r in readings.into_iter().chain(std::iter::once(last)) {
        out.push(sample(phase, &prev, &r, is_state));
        prev = r;
    }
    out
}

/// The sample between readings `prev` and `cur`.
fn sample(phase: &str, prev: &Reading, cur: &Reading, is_state: &dyn Fn(&str) -> bool) -> Sample {
    const MIB: f64 = 1024.0 * 1024.0;
    let interval_s = (cur.at_s - prev.at_s).max(0.0);
    let per_s = |n: f64| {
        if interval_s > 0.0 {
            n / interval_s
        } else {
            0.0
        }
    };
    let d = cur.counters.counters.delta(&prev.counters.counters);
    let total = cur.counters.total.minus(&prev.counters.total);
    let blocks_by_cause = d
        .by_cause
        .iter()
        .filter(|(_, c)| c.read_blocks_4k + c.write_blocks_4k > 0)
        .map(|(cause, c)| {
            (
                *cause,
                BlocksRw {
                    read_blocks_4k: c.read_blocks_4k,
                    write_blocks_4k: c.write_blocks_4k,
                },
            )
        })
        .collect();
    let server_counters = cur
        .counters
        .server
        .iter()
        .map(|(k, v)| {
            let before = prev.counters.server.get(k).copied().unwrap_or(0.0);
            let state = is_state(k) || is_engine_state(k);
            (k.clone(), if state { *v } else { v - before })
        })
        .collect();
    let device_blocks = cur
        .counters
        .device_blocks
        .iter()
        .map(|(k, v)| {
            let b = prev
                .counters
                .device_blocks
                .get(k)
                .copied()
                .unwrap_or_default();
            let d = BlocksRw {
                read_blocks_4k: v.read_blocks_4k.saturating_sub(b.read_blocks_4k),
                write_blocks_4k: v.write_blocks_4k.saturating_sub(b.write_blocks_4k),
            };
            (k.clone(), d)
        })
        .filter(|(_, d)| d.read_blocks_4k + d.write_blocks_4k > 0)
        .collect();
    let transactions = cur.transactions.saturating_sub(prev.transactions);
    Sample {
        phase: phase.to_string(),
        start_s: prev.at_s,
        interval_s,
        transactions,
        statements: cur.statements.saturating_sub(prev.statements),
        tps: per_s(transactions as f64),
        latency_p50_ms: cur.latency.p50_ms,
        latency_p95_ms: cur.latency.p95_ms,
        latency_p99_ms: cur.latency.p99_ms,
        read_blocks_4k: total.read_blocks_4k,
        write_blocks_4k: total.write_blocks_4k,
        blocks_by_cause,
        read_mib_s: per_s(total.read_bytes as f64 / MIB),
        write_mib_s: per_s(total.write_bytes as f64 / MIB),
        buffer_misses: total.buffer_misses,
        wal_bytes: total.wal_bytes,
        server_counters,
        device_blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mvcclab_engine::stats::Cause;

    fn reading(at_s: f64, txns: u64, reads: u64, writes: u64) -> Reading {
        let mut counters = Counters::default();
        counters.by_cause.insert(
            Cause::PointSelect,
            CauseCounts {
                read_blocks_4k: reads,
                read_bytes: reads * 4096,
                ..Default::default()
            },
        );
        counters.by_cause.insert(
            Cause::Checkpointer,
            CauseCounts {
                write_blocks_4k: writes,
                write_bytes: writes * 4096,
                ..Default::default()
            },
        );
        Reading {
            at_s,
            transactions: txns,
            statements: 3 * txns,
            latency: Latency::default(),
            counters: CounterReading {
                total: counters.total(),
                counters,
                server: [("n_tup_upd".to_string(), txns as f64)].into(),
                device_blocks: BTreeMap::new(),
            },
        }
    }

    #[test]
    fn samples_are_differences_that_add_up_to_the_last_reading() {
        let readings = vec![reading(1.0, 10, 5, 0), reading(2.0, 25, 5, 256)];
        let s = close("measure", readings, reading(2.5, 30, 9, 300), &|_| false);
        assert_eq!(s.len(), 3);
        assert_eq!(
            s.iter().map(|x| x.transactions).collect::<Vec<_>>(),
            [10, 15, 5]
        );
        assert_eq!(s.iter().map(|x| x.statements).sum::<u64>(), 90);
        assert_eq!(s.iter().map(|x| x.read_blocks_4k).sum::<u64>(), 9);
        assert_eq!(s.iter().map(|x| x.write_blocks_4k).sum::<u64>(), 300);
        assert_eq!(
            s[1].blocks_by_cause[&Cause::Checkpointer].write_blocks_4k,
            256
        );
        assert!(!s[1].blocks_by_cause.contains_key(&Cause::PointSelect));
        assert_eq!(s[1].write_mib_s, 1.0);
        assert_eq!((s[2].start_s, s[2].interval_s, s[2].tps), (2.0, 0.5, 10.0));
        assert_eq!(s[2].server_counters["n_tup_upd"], 5.0);
        assert!(s.iter().all(|x| x.phase == "measure"));
    }

    #[test]
    fn state_counters_keep_their_value_and_unsampled_ones_are_dropped() {
        let mut last = reading(2.0, 20, 0, 0);
        last.counters
            .server
            .insert("only_in_the_report".into(), 7.0);
        let s = close("p", vec![reading(1.0, 10, 0, 0)], last, &|k| {
            k == "n_tup_upd"
        });
        assert_eq!(s[1].server_counters["n_tup_upd"], 20.0);
        assert!(!s[1].server_counters.contains_key("only_in_the_report"));
    }

    #[test]
    fn sampling_a_phase_takes_one_reading_per_interval_and_none_at_interval_zero() {
        let ctl = RunControl::default();
        let read = || Some(CounterReading::default());
        let (v, readings, elapsed) = sampled(0.05, None, &ctl, None, &read, || {
            std::thread::sleep(Duration::from_millis(230));
            7
        });
        assert_eq!(v, 7);
        assert!(elapsed >= 0.23);
        // One reading per tick (k × 0.05 s) that fell inside the phase, never before its
        // tick: the count is bounded by the phase's measured length, not by the 0.23 s
        // asked for (a loaded machine stretches the sleep, and may miss ticks). One more
        // tick may fire between the phase's end being timed and the sampler being told.
        let ticks_inside = (elapsed / 0.05).floor() as usize + 1;
        assert!(
            readings.len() <= ticks_inside,
            "{} > {ticks_inside}",
            readings.len()
        );
        for (k, r) in readings.iter().enumerate() {
            assert!(
                r.at_s >= 0.05 * (k + 1) as f64,
                "reading {k} at {} s",
                r.at_s
            );
        }
        assert!(readings.windows(2).all(|w| w[0].at_s < w[1].at_s));
        let (_, none, _) = sampled(0.0, None, &ctl, None, &read, || ());
        assert!(none.is_empty());
    }
}
