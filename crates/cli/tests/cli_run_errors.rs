//! Errors in a run as sysbench handles them (workload driver.rs): the errors its drivers
//! ignore end an attempt, are counted by kind and the event restarts; any other stops the
//! run with exit code 1 and a message naming the SQL error, unless `--ignore-errors` names
//! it. The fault comes from the hidden `--inject-error-every-ops` (workload fault.rs: every
//! N-th table operation goes to the missing table sbtest0).

use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

const SMALL: &[&str] = &[
    "--table-size",
    "500",
    "--events",
    "60",
    "--time",
    "0",
    "--warmup",
    "0",
    "--threads",
    "2",
    "--quiet",
];

fn with_small(args: &[&str]) -> Vec<String> {
    args.iter().chain(SMALL).map(|s| s.to_string()).collect()
}

#[test]
fn an_error_sysbench_does_not_ignore_stops_the_run_with_exit_1_and_names_it() {
    for (design, code, statement) in [
        (
            "postgres",
            "SQLSTATE 42P01",
            "statement: SELECT c FROM sbtest0 WHERE id=$1",
        ),
        (
            "innodb",
            "MariaDB error 1146",
            "statement: SELECT c FROM sbtest0 WHERE id=?",
        ),
    ] {
        let args = with_small(&[
            "run",
            "--design",
            design,
            "--workload",
            "oltp_point_select",
            "--inject-error-every-ops",
            "7",
            "--format",
            "json",
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = mvcclab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{design}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{design}: no report after a fatal error"
        );
        for part in [
            "does not ignore",
            code,
            "(other)",
            "table sbtest0 does not exist",
            statement,
            "--ignore-errors",
        ] {
            assert!(err.contains(part), "{design}: {part:?} missing in {err}");
        }
    }
}

#[test]
fn ignore_errors_names_the_code_and_the_run_counts_it_by_kind() {
    for (design, code) in [
        ("postgres", "42P01"),
        ("innodb", "1146"),
        ("postgres", "all"),
    ] {
        let args = with_small(&[
            "run",
            "--design",
            design,
            "--workload",
            "oltp_point_select",
            "--inject-error-every-ops",
            "7",
            "--ignore-errors",
            code,
            "--format",
            "json",
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = mvcclab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{design} {code}: {err}");
        assert!(err.is_empty(), "--quiet: {err}");
        let report: mvcclab::result::Report = serde_json::from_slice(&out.stdout).unwrap();
        let r = &report.runs[0].results;
        // Every event completes (an ignored error restarts it); 2 threads × 60 events
        // of one point select each: a fault on every 7th.
        assert_eq!(r.transactions, 60, "{design} {code}: {r:?}");
        assert!(r.errors >= 60 / 7, "{design} {code}: {r:?}");
        assert_eq!(r.errors_by_kind.get("other"), Some(&r.errors), "{r:?}");
        assert_eq!(r.retryable_errors, 0);
        assert_eq!(report.runs[0].driver.ignore_errors.to_string(), code);
    }
}

#[test]
fn a_bad_ignore_errors_code_is_a_usage_error() {
    let out = mvcclab(
        &with_small(&["run", "--ignore-errors", "23505,dup"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("\"dup\" is neither a SQLSTATE"), "{err}");
}

/// The postgres preset's oltp_read_write: two threads' delete and insert of one id give
/// unique violations (SQLSTATE 23505), which sysbench's pgsql driver ignores: counted by
/// kind, the run passes and `--quiet` prints nothing.
#[test]
fn unique_violations_of_the_postgres_preset_are_counted_by_kind_and_the_run_passes() {
    let args = [
        "run",
        "--design",
        "postgres",
        "--workload",
        "oltp_read_write",
        "--table-size",
        "20",
        "--events",
        "400",
        "--time",
        "0",
        "--warmup",
        "0",
        "--threads",
        "4",
        "--quiet",
        "--format",
        "json",
    ];
    let out = mvcclab(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.is_empty(), "--quiet: {err}");
    let report: mvcclab::result::Report = serde_json::from_slice(&out.stdout).unwrap();
    let r = &report.runs[0].results;
    assert_eq!(r.transactions, 400, "{r:?}");
    assert!(
        r.errors_by_kind
            .get("unique_violation")
            .copied()
            .unwrap_or(0)
            > 0,
        "20 rows, 4 threads: unique violations expected: {r:?}"
    );
    assert_eq!(r.errors, r.errors_by_kind.values().sum::<u64>(), "{r:?}");
    assert!(
        r.errors_by_kind.keys().all(
            |k| ["unique_violation", "deadlock", "serialization_failure"].contains(&k.as_str())
        ),
        "only errors sysbench's pgsql driver ignores: {r:?}"
    );
}
