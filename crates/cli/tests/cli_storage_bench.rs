//! The `mvcclab storage-bench` command, run as a user would.

use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

#[test]
fn json_report_has_per_cause_counts_and_is_deterministic() {
    let args = [
        "storage-bench",
        "--pages",
        "256",
        "--ops",
        "2000",
        "--buffer-pool",
        "512KiB",
        "--read-pct",
        "50",
        "--format",
        "json",
        "--rand-seed",
        "7",
        "--no-background",
    ];
    let out = mvcclab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ops"], 2000);
    let by_cause = &v["measured"]["counters"]["by_cause"];
    assert!(
        by_cause["point_select"]["buffer_misses"].as_u64().unwrap() > 0,
        "{by_cause}"
    );
    assert!(by_cause["update"]["wal_records"].as_u64().unwrap() > 0);
    assert!(v["per_op"]["read_blocks_4k"].as_f64().unwrap() > 0.0);
    // Same seed, same single thread, no background writes: the same counts.
    let again: serde_json::Value = serde_json::from_slice(&mvcclab(&args).stdout).unwrap();
    for cause in ["point_select", "update"] {
        for m in ["buffer_misses", "buffer_hits", "wal_records", "wal_fpi"] {
            assert_eq!(
                by_cause[cause][m], again["measured"]["counters"]["by_cause"][cause][m],
                "{cause}.{m}"
            );
        }
    }
}

#[test]
fn table_report_lists_causes_and_totals() {
    let out = mvcclab(&[
        "storage-bench",
        "--pages",
        "64",
        "--ops",
        "200",
        "--buffer-pool",
        "128KiB",
        "--torn-page",
        "doublewrite",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("point_select") && text.contains("total") && text.contains("ops/s"),
        "{text}"
    );
}

#[test]
fn bad_flags_fail_with_a_message_naming_them() {
    let out = mvcclab(&["storage-bench", "--buffer-pool", "12 parsecs"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("parsecs"));
    let out = mvcclab(&["storage-bench", "--buffer-pool", "4KiB"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--buffer-pool") && err.starts_with("Error:"),
        "{err}"
    );
    let out = mvcclab(&["storage-bench", "--torn-page", "paper"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("doublewrite"));
}

#[test]
fn designs_lists_every_switch_with_both_presets() {
    let out = mvcclab(&["designs"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().next().unwrap().contains("postgres") && text.contains("innodb"),
        "{text}"
    );
    for sw in [
        "page_size",
        "table_layout",
        "torn_page_protection",
        "default_isolation",
    ] {
        assert!(text.contains(sw), "{sw} missing:\n{text}");
    }
    assert!(
        text.contains("| table_layout |") && text.contains("| heap | clustered |"),
        "{text}"
    );
}
