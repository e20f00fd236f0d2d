//! The driver runs sysbench workloads on the embedded engine for both presets.

use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::stats::Cause;
use mvcclab_workload::driver::{run, RunControl, RunOptions, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn target(design: DesignConfig) -> Embedded {
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.buffer_pool.frames = 512;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.vacuum.naptime_ms = 200;
    Embedded::new(Arc::new(Database::open(cfg).unwrap()))
}

#[test]
fn oltp_read_write_runs_on_both_presets_with_the_scripts_mix() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let t = target(design);
        let opts = SysbenchOptions {
            table_size: 2000,
            ..Default::default()
        };
        t.prepare(WorkloadKind::OltpReadWrite, &opts, 1).unwrap();
        let before = t.database().storage().snapshot();
        let r = run(
            &t,
            WorkloadKind::OltpReadWrite,
            &opts,
            &RunOptions {
                threads: 2,
                time_s: 0.0,
                events: 300,
                rand_seed: 5,
                rate_tps: 0.0,
                ignore_errors: Default::default(),
            },
            &RunControl::default(),
        )
        .unwrap();
        let d = t.database().storage().snapshot().delta(&before).counters;
        // An ignored error restarts its event (sysbench.lua `thread_run`): every event
        // completes.
        assert_eq!(r.transactions, 300, "{name}: {r:?}");
        assert!(
            r.errors <= 20,
            "{name}: few errors expected: {:?}",
            r.error_samples
        );
        assert_eq!(
            r.errors,
            r.errors_by_kind.values().sum::<u64>(),
            "{name}: {r:?}"
        );
        // 18 queries per transaction: 10 point, 4 ranges, 2 updates, 1 delete, 1 insert.
        let ps = r.ops_by_kind["point_select"];
        assert!(
            ps >= 10 * r.transactions && ps <= 10 * (r.transactions + r.errors),
            "{name}: {ps}"
        );
        for k in [
            "simple_range",
            "sum_range",
            "order_range",
            "distinct_range",
            "index_update",
            "non_index_update",
            "delete",
            "insert",
        ] {
            let n = r.ops_by_kind[k];
            assert!(
                n >= r.transactions && n <= r.transactions + r.errors,
                "{name}: {k} {n}"
            );
        }
        assert_eq!(r.ops_by_kind["commit"], r.transactions, "{name}");
        assert_eq!(r.queries, r.reads + r.writes);
        assert!(r.latency.contains_key("event") && r.latency["point_select"].count > 0);
        assert!(
            d.cause(Cause::Commit).wal_syncs > 0,
            "{name}: commits flush the WAL"
        );
        assert!(
            d.cause(Cause::Update).wal_records > 0 && d.cause(Cause::Insert).wal_records > 0,
            "{name}"
        );
        assert!(d.cause(Cause::PointSelect).buffer_hits > 0, "{name}");
    }
}

#[test]
fn single_thread_runs_are_deterministic_for_a_seed() {
    let opts = SysbenchOptions {
        table_size: 1000,
        ..Default::default()
    };
    let once = || {
        let t = target(DesignConfig::postgres());
        t.prepare(WorkloadKind::OltpReadWrite, &opts, 9).unwrap();
        let r = run(
            &t,
            WorkloadKind::OltpReadWrite,
            &opts,
            &RunOptions {
                threads: 1,
                time_s: 0.0,
                events: 100,
                rand_seed: 3,
                rate_tps: 0.0,
                ignore_errors: Default::default(),
            },
            &RunControl::default(),
        )
        .unwrap();
        let s = t.database().table_stats(0).unwrap();
        (
            r.ops_by_kind,
            r.transactions,
            s.n_tup_upd,
            s.n_tup_hot_upd,
            s.n_tup_ins,
        )
    };
    assert_eq!(once(), once());
}

#[test]
fn every_workload_runs() {
    for (kind, name) in WorkloadKind::ALL {
        let t = target(DesignConfig::innodb());
        let opts = SysbenchOptions {
            table_size: 500,
            ..Default::default()
        };
        t.prepare(*kind, &opts, 1).unwrap();
        let r = run(
            &t,
            *kind,
            &opts,
            &RunOptions {
                threads: 2,
                time_s: 0.0,
                events: 40,
                rand_seed: 1,
                rate_tps: 0.0,
                ignore_errors: Default::default(),
            },
            &RunControl::default(),
        )
        .unwrap();
        assert_eq!(r.transactions, 40, "{name}: {r:?}");
        assert!(r.queries > 0, "{name}");
    }
}

#[test]
fn bad_run_options_are_refused() {
    let t = target(DesignConfig::postgres());
    let e = run(
        &t,
        WorkloadKind::OltpPointSelect,
        &SysbenchOptions::default(),
        &RunOptions {
            threads: 1,
            time_s: 0.0,
            events: 0,
            rand_seed: 1,
            rate_tps: 0.0,
            ignore_errors: Default::default(),
        },
        &RunControl::default(),
    )
    .unwrap_err();
    assert!(e.contains("--time") && e.contains("--events"), "{e}");
}

#[test]
fn a_stop_request_ends_a_timed_run_early_and_marks_it_interrupted() {
    let t = target(DesignConfig::innodb());
    let opts = SysbenchOptions {
        table_size: 500,
        ..Default::default()
    };
    t.prepare(WorkloadKind::OltpReadWrite, &opts, 1).unwrap();
    let ctl = RunControl::default();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| {
            run(
                &t,
                WorkloadKind::OltpPointSelect,
                &opts,
                &RunOptions {
                    threads: 2,
                    time_s: 600.0,
                    events: 0,
                    rand_seed: 3,
                    rate_tps: 0.0,
                    ignore_errors: Default::default(),
                },
                &ctl,
            )
        });
        // Wait for progress to show, then stop as the Ctrl-C handler does.
        while ctl.completed.load(Ordering::Relaxed) < 50 {
            std::thread::yield_now();
        }
        ctl.stop.store(true, Ordering::Relaxed);
        h.join().unwrap().unwrap()
    });
    assert!(r.interrupted);
    assert!(r.elapsed_s < 600.0);
    assert_eq!(r.transactions, ctl.completed.load(Ordering::Relaxed));
    assert!(r.transactions >= 50);
}

/// What a time series reads while a run goes on: the counts end equal to the run's, and
/// the interval latencies hold each completed event once.
#[test]
fn the_run_control_counts_what_the_result_reports_and_hands_out_latencies_once() {
    let t = target(DesignConfig::postgres());
    let opts = SysbenchOptions {
        table_size: 500,
        ..Default::default()
    };
    t.prepare(WorkloadKind::OltpReadWrite, &opts, 1).unwrap();
    let ctl = RunControl::default();
    let run_opts = RunOptions {
        threads: 2,
        time_s: 0.0,
        events: 120,
        rand_seed: 9,
        rate_tps: 0.0,
        ignore_errors: Default::default(),
    };
    let r = run(&t, WorkloadKind::OltpReadWrite, &opts, &run_opts, &ctl).unwrap();
    assert_eq!(ctl.completed.load(Ordering::Relaxed), r.transactions);
    assert_eq!(ctl.statements.load(Ordering::Relaxed), r.queries);
    let first = ctl.take_interval_latency();
    assert_eq!(first.count, r.transactions);
    assert!(first.p50_ms > 0.0 && first.p50_ms <= first.p99_ms);
    assert_eq!(ctl.take_interval_latency().count, 0);
    // The next run starts from zero.
    let again = run(&t, WorkloadKind::OltpPointSelect, &opts, &run_opts, &ctl).unwrap();
    assert_eq!(ctl.statements.load(Ordering::Relaxed), again.queries);
    assert_eq!(ctl.take_interval_latency().count, again.transactions);
}

#[test]
fn rate_schedules_events_instead_of_running_flat_out() {
    let t = target(DesignConfig::postgres());
    let opts = SysbenchOptions {
        table_size: 1000,
        ..Default::default()
    };
    t.prepare(WorkloadKind::OltpPointSelect, &opts, 1).unwrap();
    let go = |rate_tps: f64, events: u64| {
        run(
            &t,
            WorkloadKind::OltpPointSelect,
            &opts,
            &RunOptions {
                threads: 2,
                time_s: 0.0,
                events,
                rand_seed: 3,
                rate_tps,
                ignore_errors: Default::default(),
            },
            &RunControl::default(),
        )
    };
    // 200 events at 400 per second: exponential gaps of mean 2.5 ms sum to 0.5 s (standard
    // deviation 0.035 s); the threads cannot run ahead of the schedule.
    let r = go(400.0, 200).unwrap();
    assert_eq!(r.transactions, 200);
    assert!(r.elapsed_s > 0.35, "{} s", r.elapsed_s);
    assert!(r.tps < 400.0 / 0.7, "{} tps", r.tps);
    // A time-bounded run at a rate stops at its time with about rate × time events.
    let r = run(
        &t,
        WorkloadKind::OltpPointSelect,
        &opts,
        &RunOptions {
            threads: 2,
            time_s: 1.0,
            events: 0,
            rand_seed: 3,
            rate_tps: 300.0,
            ignore_errors: Default::default(),
        },
        &RunControl::default(),
    )
    .unwrap();
    assert!(
        (200..=400).contains(&r.transactions),
        "{} events in 1 s at 300/s",
        r.transactions
    );
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let e = go(bad, 10).unwrap_err();
        assert!(e.contains("--rate"), "{e}");
    }
}

/// The load settles as the real servers' do: vacuumed (or purged), and the heap analyzed
/// too (PostgreSQL's `VACUUM ANALYZE`), so no autovacuum or autoanalyze trigger is left
/// from the load to fire inside the measured phase.
#[test]
fn prepare_leaves_no_autovacuum_trigger_behind() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let heap = design.name == "postgres";
        let t = target(design);
        let opts = SysbenchOptions {
            table_size: 2000,
            ..Default::default()
        };
        t.prepare(WorkloadKind::OltpReadOnly, &opts, 1).unwrap();
        let db = t.database();
        let s = db.table_stats(db.table_id("sbtest1").unwrap()).unwrap();
        assert_eq!((s.n_dead_tup, s.n_live_tup), (0, 2000));
        if heap {
            assert_eq!((s.analyze_count, s.n_mod_since_analyze), (1, 0), "{s:?}");
        } else {
            assert_eq!(s.analyze_count, 0, "no ANALYZE for the clustered layout");
        }
    }
}
