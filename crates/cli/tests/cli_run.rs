//! `mvcclab run` / `compare` as a user runs them.

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
];

#[test]
fn run_writes_the_result_schema_as_json() {
    let mut args = vec![
        "run",
        "--design",
        "innodb",
        "--workload",
        "oltp_read_write",
        "--format",
        "json",
    ];
    args.extend_from_slice(SMALL);
    let out = mvcclab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["design"]["table_layout"], "clustered");
    assert_eq!(v["workload"], "oltp_read_write");
    let txns = v["results"]["transactions"].as_u64().unwrap();
    assert!(
        txns + v["results"]["errors"].as_u64().unwrap() == 60,
        "{}",
        v["results"]
    );
    assert!(
        v["io"]["by_cause"]["by_cause"]["commit"]["wal_syncs"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(v["io"]["wal_bytes_per_txn"].as_f64().unwrap() > 0.0);
    assert!(v["engine"]["undo_records_written"].as_u64().unwrap() > 0);
}

#[test]
fn compare_prints_both_designs_side_by_side() {
    let mut args = vec!["compare", "--workload", "oltp_update_non_index"];
    args.extend_from_slice(SMALL);
    let out = mvcclab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text.lines().find(|l| l.contains("postgres")).unwrap_or("");
    assert!(header.contains("innodb"), "{text}");
    assert!(
        text.contains("HOT updates / updates") && text.contains("4 KiB blocks written / txn"),
        "{text}"
    );
}

#[test]
fn set_changes_a_switch_and_bad_input_exits_2_naming_it() {
    let mut args = vec![
        "run",
        "--design",
        "postgres",
        "--set",
        "fillfactor=70",
        "--format",
        "json",
    ];
    args.extend_from_slice(SMALL);
    let out = mvcclab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["design"]["fillfactor"], 70);
    for (bad, what) in [
        (
            vec!["run", "--workload", "oltp_everything"],
            "oltp_everything",
        ),
        (vec!["run", "--set", "colour=blue"], "colour"),
        (
            vec![
                "run",
                "--set",
                "index_pointers=physical",
                "--design",
                "innodb",
            ],
            "index_pointers=physical",
        ),
        (vec!["run", "--design", "oracle"], "oracle"),
        (vec!["run", "--threads", "many"], "--threads"),
    ] {
        let out = mvcclab(&bad);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(what), "{bad:?}: {err}");
    }
}
