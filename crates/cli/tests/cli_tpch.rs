//! `mvcclab run --workload tpch` and `experiment tpch_q18` from the command line: bad TPC-H
//! flags exit 2 naming the flag; a small Q6 on a preset reports its rows, plan and blocks
//! by cause.

use std::process::Command;

/// The binary's output for `args` (a run of `mvcclab`).
fn out_of(args: &[&str]) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_mvcclab");
    Command::new(bin).args(args).output().unwrap()
}

#[test]
fn bad_tpch_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (vec!["--query", "23"], "--query 23"),
        (vec!["--scale-factor", "0"], "--scale-factor 0"),
        (vec!["--scale-factor", "0.002"], "--scale-factor 0.002"),
        (vec!["--query-timeout", "0"], "--query-timeout 0"),
    ] {
        let mut a = vec!["run", "--workload", "tpch"];
        a.extend(args.iter());
        let out = out_of(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(flag), "{a:?}: {err}");
    }
    let out = out_of(&["experiment", "tpch_q18", "--caches", "tepid"]);
    assert_eq!(out.status.code(), Some(2));
    // The presets run Q1, Q6 and Q18 only.
    let out = out_of(&[
        "run",
        "--workload",
        "tpch",
        "--query",
        "9",
        "--scale-factor",
        "0.01",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the presets run Q1, Q6 and Q18"));
}

#[test]
fn q6_on_a_preset_reports_rows_plan_and_blocks_by_cause() {
    let out = out_of(&[
        "run",
        "--workload",
        "tpch",
        "--design",
        "innodb",
        "--query",
        "6",
        "--scale-factor",
        "0.01",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows_returned"], 1);
    assert_eq!(v["plan"][1], "  table lineitem ALL");
    let by_cause = v["read_blocks_4k_by_cause"].as_object().unwrap();
    assert!(by_cause.contains_key("seq_scan"), "{v}");
}
