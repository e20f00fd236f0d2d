//! Errors in a run as sysbench handles them (workload driver.rs): the errors its drivers
//! ignore end an attempt, are counted by kind and the event restarts; any other stops the
//! run with exit code 1 and a message naming the SQL error, unless `--ignore-errors` names
//! it. The fault comes from the hidden `--inject-error-every-ops` (workload fault.rs: every
//! N-th table operation goes to the missing table sbtest0).

use mvcclab_workload::driver::RunResult;
use std::process::{Command, Output};

/// `mvcclab run --design <design> --workload <workload>` of `(threads, events)` over
/// `rows` rows, quiet, JSON on stdout, plus `extra`.
fn run(
    design: &str,
    workload: &str,
    rows: u32,
    (threads, events): (u32, u32),
    extra: &[&str],
) -> Output {
    let (rows, threads, events) = (rows.to_string(), threads.to_string(), events.to_string());
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(["run", "--design", design, "--workload", workload])
        .args(["--table-size", &rows, "--threads", &threads])
        .args(["--events", &events, "--time", "0", "--warmup", "0"])
        .args(["--quiet", "--format", "json"])
        .args(extra)
        .output()
        .expect("run mvcclab")
}

/// The results of a run that passed and, being `--quiet`, printed nothing on stderr.
fn passed(out: &Output, what: &str) -> (RunResult, String) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what}: {err}");
    assert!(err.is_empty(), "{what}: --quiet: {err}");
    let report: mvcclab::result::Report = serde_json::from_slice(&out.stdout).unwrap();
    let run = &report.runs[0];
    (
        run.results.run.clone(),
        run.driver.ignore_errors.to_string(),
    )
}

const FAULT: [&str; 2] = ["--inject-error-every-ops", "7"];

#[test]
fn an_error_sysbench_does_not_ignore_stops_the_run_with_exit_1_and_names_it() {
    for (design, code, placeholder) in [
        ("postgres", "SQLSTATE 42P01", "$1"),
        ("innodb", "MariaDB error 1146", "?"),
    ] {
        let out = run(design, "oltp_point_select", 500, (2, 60), &FAULT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{design}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{design}: no report after a fatal error"
        );
        let statement = format!("statement: SELECT c FROM sbtest0 WHERE id={placeholder}");
        for part in [
            "does not ignore",
            code,
            "(other)",
            "table sbtest0 does not exist",
            &statement,
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
        let what = format!("{design} --ignore-errors {code}");
        let out = run(
            design,
            "oltp_point_select",
            500,
            (2, 60),
            &[FAULT[0], FAULT[1], "--ignore-errors", code],
        );
        let (r, ignore) = passed(&out, &what);
        // Every event completes (an ignored error restarts it): one point select per
        // event, a fault on every 7th of a session's.
        assert_eq!(r.transactions, 60, "{what}: {r:?}");
        assert!(r.errors >= 60 / 7, "{what}: {r:?}");
        assert_eq!(r.errors_by_kind.get("other"), Some(&r.errors), "{r:?}");
        assert_eq!(r.retryable_errors, 0);
        assert_eq!(ignore, code);
    }
}

#[test]
fn a_bad_ignore_errors_code_is_a_usage_error() {
    let out = run(
        "postgres",
        "oltp_point_select",
        500,
        (2, 60),
        &["--ignore-errors", "23505,dup"],
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
    let out = run("postgres", "oltp_read_write", 20, (4, 400), &[]);
    let (r, _) = passed(&out, "postgres oltp_read_write");
    assert_eq!(r.transactions, 400, "{r:?}");
    let unique = r.errors_by_kind.get("unique_violation").copied();
    assert!(
        unique.unwrap_or(0) > 0,
        "20 rows, 4 threads: unique violations expected: {r:?}"
    );
    assert_eq!(r.errors, r.errors_by_kind.values().sum::<u64>(), "{r:?}");
    let ignored = ["unique_violation", "deadlock", "serialization_failure"];
    assert!(
        r.errors_by_kind
            .keys()
            .all(|k| ignored.contains(&k.as_str())),
        "only errors sysbench's pgsql driver ignores: {r:?}"
    );
}
