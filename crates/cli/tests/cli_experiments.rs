//! `mvcclab experiment update_hot_set` and `version_chain` on both presets, small.

use mvcclab_engine::design::GarbageCollection;
use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

fn json(args: &[&str]) -> mvcclab::result::ExperimentReport {
    let out = mvcclab(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn update_hot_set_reports_two_passes_per_design_by_cause() {
    let r = json(&[
        "experiment",
        "update_hot_set",
        "--rows",
        "3000",
        "--updates",
        "300",
        "--report-interval",
        "0.05",
        "--quiet",
        "--format",
        "json",
    ]);
    assert_eq!(r.experiment, "update_hot_set");
    assert!(r.metadata.is_some());
    assert_eq!(r.runs.len(), 2);
    for run in &r.runs {
        let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["first_update", "second_update"]);
        for p in &run.phases {
            assert_eq!(p.ops, 300);
            assert_eq!(p.tables.n_tup_upd, 300, "{} {}", run.design.name, p.name);
            // Each phase ends with a checkpoint: the updated pages reach the device in it.
            assert!(p.per_op.write_blocks_4k > 0.0);
            assert!(p
                .by_cause
                .contains_key(&mvcclab_engine::stats::Cause::Checkpointer));
            let sum: f64 = p.per_op_by_cause.values().map(|x| x.write_blocks_4k).sum();
            assert!((sum - p.per_op.write_blocks_4k).abs() < 1e-9);
            // The phase's time series, named with the phase, adds up to its counts.
            assert!(!p.timeseries.is_empty());
            assert!(p.timeseries.iter().all(|s| s.phase == p.name));
            assert_eq!(
                p.timeseries.iter().map(|s| s.transactions).sum::<u64>(),
                300
            );
            for (cause, c) in &p.by_cause {
                let (r, w) = p.timeseries.iter().fold((0, 0), |(r, w), s| {
                    let b = s.blocks_by_cause.get(cause).copied().unwrap_or_default();
                    (r + b.read_blocks_4k, w + b.write_blocks_4k)
                });
                assert_eq!((r, w), (c.read_blocks_4k, c.write_blocks_4k), "{cause}");
            }
        }
        match run.design.name.as_str() {
            // status is unindexed: InnoDB updates in place, no index entry changes.
            "innodb" => {
                assert!(run
                    .phases
                    .iter()
                    .all(|p| p.tables.index_entries_inserted == 0));
                assert!(run
                    .phases
                    .iter()
                    .all(|p| p.undo.undo_records_written >= 300));
            }
            // A non-HOT update inserts into all seven indexes (primary key + six).
            "postgres" => {
                let p = &run.phases[0];
                let non_hot = p.tables.n_tup_upd - p.tables.n_tup_hot_upd;
                assert_eq!(p.tables.index_entries_inserted, 7 * non_hot);
            }
            other => panic!("{other}"),
        }
    }
    let out = mvcclab(&[
        "experiment",
        "update_hot_set",
        "--rows",
        "10",
        "--updates",
        "11",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--updates"));
}

#[test]
fn version_chain_runs_the_seeds_procedure_autovacuum_off_pruning_on_and_purge_on() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("vc");
    let r = json(&[
        "experiment",
        "version_chain",
        "--table-size",
        "2000",
        "--updates",
        "6000",
        "--selects",
        "2000",
        "--variants",
        "seed,autovacuum_on,gc_off_what_if",
        "--quiet",
        "--format",
        "json",
        "--report",
        rep.to_str().unwrap(),
    ]);
    assert!(rep.join("experiment.json").is_file() && rep.join("summary.md").is_file());
    let csv = std::fs::read_to_string(rep.join("experiment.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + (4 + 1 + 4) + (2 + 4),
        "header + a row per design and phase"
    );
    assert_eq!(r.runs.len(), 2);
    for run in &r.runs {
        let names: Vec<&str> = run.phases.iter().map(|p| p.name.as_str()).collect();
        let ph = |n: &str| run.phases.iter().find(|p| p.name == n).unwrap();
        // The GC-off what-if: every version stays until the full vacuum / purge.
        assert_eq!(ph("update_gc_off").ops, 6000);
        assert_eq!(ph("select_before_gc").ops, 2000);
        let before = ph("select_before_gc").versions_traversed_per_op;
        let after = ph("select_after_gc").versions_traversed_per_op;
        match run.design.name.as_str() {
            "postgres" => {
                assert_eq!(
                    names,
                    [
                        "update_autovacuum_off",
                        "select_before_vacuum",
                        "vacuum",
                        "select_after_vacuum",
                        "update_autovacuum_on",
                        "update_gc_off",
                        "select_before_gc",
                        "full_gc",
                        "select_after_gc"
                    ]
                );
                // Step 1 of the seed: autovacuum off, garbage collection (pruning) on.
                assert!(!run.design.autovacuum);
                assert_eq!(run.design.garbage_collection, GarbageCollection::Vacuum);
                // PostgreSQL prunes on access with autovacuum off (heap_page_prune_opt).
                let upd = ph("update_autovacuum_off");
                assert_eq!(upd.ops, 6000);
                assert!(upd.tables.pages_pruned > 0, "{:?}", upd.tables);
                assert_eq!(upd.tables.autovacuum_count, 0);
                assert!(ph("vacuum").total.write_blocks_4k > 0);
                // With garbage collection off nothing is pruned and chains grow long.
                assert_eq!(ph("update_gc_off").tables.pages_pruned, 0);
                assert!(before > 3.0 * after, "{before} vs {after}");
                assert!((after - 1.0).abs() < 0.05, "{after}");
                assert!(ph("full_gc").total.write_blocks_4k > 0);
            }
            // InnoDB runs steps 2-3 with purge on ("no configuration that turns off the
            // auto garbage collection").
            "innodb" => {
                assert_eq!(
                    names,
                    [
                        "update_purge_on",
                        "select_purge_on",
                        "update_gc_off",
                        "select_before_gc",
                        "full_gc",
                        "select_after_gc"
                    ]
                );
                assert_eq!(run.design.garbage_collection, GarbageCollection::Purge);
                let upd = ph("update_purge_on");
                assert!(upd.undo.purge_records > 0, "{:?}", upd.undo);
                assert_eq!(upd.undo.history_list_length, 0);
                // In place: a new read view sees the record itself, before purge or after.
                assert!((before - 1.0).abs() < 0.05 && (after - 1.0).abs() < 0.05);
                assert!(ph("update_gc_off").undo.history_list_length > 0);
                assert_eq!(ph("update_gc_off").undo.purge_records, 0);
                assert_eq!(ph("full_gc").undo.history_list_length, 0);
                assert!(ph("full_gc").undo.purge_records > 0);
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn fillfactor_compression_refuses_bad_repeats_scale_and_bandwidth_before_running() {
    for (flag, value) in [("--repeats", "0"), ("--scale", "0"), ("--bandwidth", "0")] {
        let out = mvcclab(&[
            "experiment",
            "fillfactor_compression",
            "--designs",
            "postgres",
            flag,
            value,
            "--quiet",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}
