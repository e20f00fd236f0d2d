//! The driver's error kinds and its handling of errors as sysbench's (driver.rs, module
//! doc "Errors, as sysbench handles them"), against a scripted target.

use crate::driver::*;
use crate::sysbench::{Op, SysbenchOptions, WorkloadKind};
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn codes_map_to_kinds_as_the_servers_name_them() {
    for (state, kind) in [
        ("40P01", ErrorKind::Deadlock),
        ("55P03", ErrorKind::LockWaitTimeout),
        ("40001", ErrorKind::SerializationFailure),
        ("23505", ErrorKind::UniqueViolation),
        ("42P01", ErrorKind::Other),
        ("26000", ErrorKind::Other),
    ] {
        assert_eq!(ErrorKind::from_sqlstate(state), kind, "{state}");
    }
    for (errno, kind) in [
        (1213, ErrorKind::Deadlock),
        (1205, ErrorKind::LockWaitTimeout),
        (1020, ErrorKind::SerializationFailure),
        (1062, ErrorKind::UniqueViolation),
        (1586, ErrorKind::UniqueViolation),
        (1243, ErrorKind::Other),
        (1146, ErrorKind::Other),
    ] {
        assert_eq!(ErrorKind::from_mariadb(errno), kind, "{errno}");
    }
}

#[test]
fn sysbench_ignores_its_drivers_lists_and_nothing_else() {
    // drv_pgsql.c pgsql_check_status; drv_mysql.c --mysql-ignore-errors default.
    let ignored = |c: &str| ErrorCode::parse(c).unwrap().sysbench_ignores();
    for c in ["40P01", "23505", "40001", "1213", "1020", "1205"] {
        assert!(ignored(c), "{c}");
    }
    // MariaDB's duplicate key and stale prepared statement, PostgreSQL's lock timeout.
    for c in ["1062", "1243", "55P03", "42P01", "1146"] {
        assert!(!ignored(c), "{c}");
    }
}

#[test]
fn ignore_errors_parses_codes_all_and_default_and_refuses_the_rest() {
    assert_eq!(IgnoreErrors::parse("default"), Ok(IgnoreErrors::Default));
    assert_eq!(IgnoreErrors::parse("all"), Ok(IgnoreErrors::All));
    assert_eq!(
        IgnoreErrors::parse("1062, 23505"),
        Ok(IgnoreErrors::Codes(vec![
            ErrorCode::MariaDb(1062),
            ErrorCode::SqlState("23505".into())
        ]))
    );
    for bad in ["", "dup", "123456", "1062,", "2350a"] {
        let e = IgnoreErrors::parse(bad).unwrap_err();
        assert!(e.contains("--ignore-errors"), "{bad}: {e}");
    }
    // Reports keep the flag's text.
    let codes = IgnoreErrors::parse("1062,40P01").unwrap();
    let json = serde_json::to_string(&codes).unwrap();
    assert_eq!(json, "\"1062,40P01\"");
    assert_eq!(serde_json::from_str::<IgnoreErrors>(&json).unwrap(), codes);
}

#[test]
fn ignore_errors_adds_codes_to_the_defaults_and_script_rollbacks_always_pass() {
    let dup = OpError::coded(ErrorCode::MariaDb(1062), "Duplicate entry");
    let deadlock = OpError::coded(ErrorCode::MariaDb(1213), "Deadlock found");
    let lost = OpError::other("connection reset");
    let rollback = OpError {
        kind: ErrorKind::ScriptRollback,
        ..OpError::other("item not found")
    };
    let d = IgnoreErrors::Default;
    assert!(!d.ignores(&dup) && d.ignores(&deadlock) && !d.ignores(&lost));
    assert!(d.ignores(&rollback));
    let c = IgnoreErrors::parse("1062").unwrap();
    assert!(c.ignores(&dup) && c.ignores(&deadlock) && !c.ignores(&lost));
    assert!(IgnoreErrors::All.ignores(&lost));
}

#[test]
fn an_op_error_shows_its_code_kind_message_and_statement() {
    let e = OpError::coded(ErrorCode::SqlState("23505".into()), "duplicate key")
        .with_statement("INSERT INTO sbtest1\n  (id) VALUES ($1)");
    assert_eq!(
        e.to_string(),
        "SQLSTATE 23505 (unique_violation): duplicate key; statement: INSERT INTO sbtest1 (id) VALUES ($1)"
    );
    assert_eq!(OpError::other("gone").to_string(), "(other): gone");
}

#[test]
fn reports_from_before_error_kinds_still_read() {
    let old = r#"{"transactions":5,"queries":10,"reads":5,"writes":5,"other":2,"errors":1,
        "retryable_errors":1,"ops_by_kind":{},"elapsed_s":1.0,"tps":5.0,"qps":10.0,
        "latency":{},"error_samples":[]}"#;
    let r: RunResult = serde_json::from_str(old).unwrap();
    assert!(r.errors_by_kind.is_empty() && r.errors == 1);
    let old_run = r#"{"threads":1,"time_s":0.0,"events":1,"rand_seed":1}"#;
    let o: RunOptions = serde_json::from_str(old_run).unwrap();
    assert_eq!(o.ignore_errors, IgnoreErrors::Default);
}

/// A target whose sessions fail every `every`-th operation with `error`.
struct Scripted {
    every: u64,
    error: OpError,
    executed: AtomicU64,
}

struct ScriptedSession<'a>(&'a Scripted, u64);

impl Target for Scripted {
    fn prepare(&self, _: WorkloadKind, _: &SysbenchOptions, _: u64) -> Result<(), String> {
        Ok(())
    }
    fn session(&self) -> Result<Box<dyn Session + '_>, String> {
        Ok(Box::new(ScriptedSession(self, 0)))
    }
}

impl Session for ScriptedSession<'_> {
    fn execute(&mut self, _: &Op) -> Result<(), OpError> {
        self.1 += 1;
        self.0.executed.fetch_add(1, Ordering::Relaxed);
        if self.1.is_multiple_of(self.0.every) {
            return Err(self.0.error.clone());
        }
        Ok(())
    }
    fn rollback(&mut self) {}
}

fn run_scripted(error: OpError, ignore: IgnoreErrors) -> (Result<RunResult, String>, u64) {
    let t = Scripted {
        every: 5,
        error,
        executed: AtomicU64::new(0),
    };
    let r = run(
        &t,
        WorkloadKind::OltpPointSelect,
        &SysbenchOptions::default(),
        &RunOptions {
            threads: 1,
            time_s: 0.0,
            events: 40,
            rand_seed: 1,
            rate_tps: 0.0,
            ignore_errors: ignore,
        },
        &RunControl::default(),
    );
    (r, t.executed.load(Ordering::Relaxed))
}

#[test]
fn an_ignored_error_restarts_the_event_and_is_counted_by_kind() {
    let e = OpError::coded(ErrorCode::SqlState("40001".into()), "could not serialize");
    let (r, executed) = run_scripted(e, IgnoreErrors::Default);
    let r = r.unwrap();
    // oltp_point_select: one SELECT per event; every 5th attempt fails and is restarted.
    assert_eq!(r.transactions, 40, "{r:?}");
    assert_eq!(executed, 40 + r.errors);
    assert_eq!(r.errors, 9, "{r:?}");
    assert_eq!(r.errors_by_kind.get("serialization_failure"), Some(&9));
    assert_eq!(r.retryable_errors, 9);
    assert!(r.error_samples[0].starts_with("SQLSTATE 40001"), "{r:?}");
}

#[test]
fn an_error_not_ignored_stops_the_run_naming_it() {
    let e = OpError::coded(
        ErrorCode::MariaDb(1243),
        "Unknown prepared statement handler",
    )
    .with_statement("SELECT c FROM sbtest1 WHERE id=?");
    let (r, executed) = run_scripted(e.clone(), IgnoreErrors::Default);
    let msg = r.unwrap_err();
    assert_eq!(executed, 5, "the thread stopped at the first error");
    for part in [
        "does not ignore",
        "MariaDB error 1243 (other)",
        "point_select: Unknown prepared statement handler",
        "statement: SELECT c FROM sbtest1 WHERE id=?",
        "--ignore-errors",
    ] {
        assert!(msg.contains(part), "{part:?} in {msg}");
    }
    // Named in --ignore-errors: counted and the run goes on.
    let (r, _) = run_scripted(e, IgnoreErrors::parse("1243").unwrap());
    let r = r.unwrap();
    assert_eq!((r.transactions, r.errors), (40, 9), "{r:?}");
    assert_eq!(r.errors_by_kind.get("other"), Some(&9));
}

#[test]
fn a_script_rollback_ends_its_event_as_done() {
    let e = OpError {
        kind: ErrorKind::ScriptRollback,
        ..OpError::other("item not found")
    };
    let (r, executed) = run_scripted(e, IgnoreErrors::Default);
    let r = r.unwrap();
    assert_eq!(executed, 40, "not restarted");
    assert_eq!((r.transactions, r.errors), (40, 8), "{r:?}");
    assert_eq!(r.errors_by_kind.get("script_rollback"), Some(&8));
}
