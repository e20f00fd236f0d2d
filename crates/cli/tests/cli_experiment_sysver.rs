//! `mvcclab experiment system_versioning`, small: the phases of each iteration, the
//! history rows' cost in versions examined by range selects, and the refusals.

use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

/// `experiment system_versioning` small (300 rows, 2 iterations, 40 selects, innodb, the
/// big pool only) with `extra` flags; its JSON report.
fn small_run(extra: &[&str]) -> mvcclab::result::ExperimentReport {
    let mut a = vec![
        "experiment",
        "system_versioning",
        "--rows",
        "300",
        "--iterations",
        "2",
        "--selects",
        "40",
        "--designs",
        "innodb",
        "--no-small-pool",
        "--report-interval",
        "0",
        "--quiet",
        "--format",
        "json",
    ];
    a.extend_from_slice(extra);
    let out = mvcclab(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn versioned_range_selects_step_over_history_and_partitions_keep_it_apart() {
    let r = small_run(&["--variants", "plain,timestamp,trx_id,partition"]);
    assert_eq!(r.experiment, "system_versioning");
    let names: Vec<&str> = r.runs.iter().map(|x| x.design.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "innodb/plain/big_pool",
            "innodb/timestamp/big_pool",
            "innodb/trx_id/big_pool",
            "innodb/partition/big_pool"
        ]
    );
    let versions = |run: usize, phase: &str| -> f64 {
        r.runs[run]
            .phases
            .iter()
            .find(|p| p.name == phase)
            .unwrap_or_else(|| panic!("{phase}"))
            .versions_traversed_per_op
    };
    for run in &r.runs {
        assert_eq!(run.phases.len(), 2 * 10, "{}", run.design.name);
        let del = run
            .phases
            .iter()
            .find(|p| p.name == "i2_delete_all")
            .unwrap();
        assert_eq!(
            del.ops, 300,
            "{}: every current row deleted",
            run.design.name
        );
    }
    // In the second iteration a range of 100 current ids passes its history rows too in the
    // unpartitioned versioned tables, not in the plain or partitioned one.
    let plain = versions(0, "i2_range_select_first");
    assert!(versions(1, "i2_range_select_first") > 1.5 * plain);
    assert!(versions(2, "i2_range_select_first") > 1.5 * plain);
    assert!(versions(3, "i2_range_select_first") < 1.1 * plain);
}

#[test]
fn bad_sizes_and_variants_are_usage_errors() {
    for args in [
        &["--variants", "bitemporal"][..],
        &["--size", "huge"][..],
        &["--rows", "5"][..],
        &["--history-partitions", "3", "--partition-limit", "0"][..],
        &["--history-partitions", "0"][..],
    ] {
        let mut a = vec![
            "experiment",
            "system_versioning",
            "--designs",
            "innodb",
            "--quiet",
        ];
        a.extend_from_slice(args);
        let out = mvcclab(&a);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `--history-partitions 3`: the partition variant runs with three history partitions
/// rotated by LIMIT (the design's switches say so), and its range selects still pass no
/// history rows.
#[test]
fn several_history_partitions_are_a_flag() {
    let r = small_run(&[
        "--variants",
        "plain,partition",
        "--history-partitions",
        "3",
        "--partition-limit",
        "200",
    ]);
    let names: Vec<&str> = r.runs.iter().map(|x| x.design.name.as_str()).collect();
    assert_eq!(
        names,
        ["innodb/plain/big_pool", "innodb/partition3/big_pool"]
    );
    let d = &r.runs[1].design;
    assert_eq!((d.history_partitions, d.history_partition_limit), (3, 200));
    let versions = |run: usize| -> f64 {
        r.runs[run]
            .phases
            .iter()
            .find(|p| p.name == "i2_range_select_second")
            .unwrap()
            .versions_traversed_per_op
    };
    assert!(versions(1) < 1.1 * versions(0));
}
