//! `mvcclab fidelity --scales`: the scale grid's rendering from a saved report (`--from`,
//! no server needed) and the usage error for a scale it does not know.

use serde_json::{json, Value};
use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

/// A run of the sample report as `design` at `table_size` rows with WAL bytes `wal`.
fn run(design: &str, table_size: u64, wal: u64) -> Value {
    let mut r: Value =
        serde_json::from_str(include_str!("data/run_report.json")).expect("sample report");
    r["design"]["name"] = json!(design);
    r["workload"]["options"]["table_size"] = json!(table_size);
    r["io"]["total"]["wal_bytes"] = json!(wal);
    r
}

fn scale(name: &str, table_size: u64) -> Value {
    json!({
        "name": name, "tables": 1, "table_size": table_size, "threads": 1,
        "memory": [{"preset": "postgres", "buffer_pool_bytes": 8388608, "os_cache_bytes": 0}],
        "bound_os_cache": false
    })
}

/// `mvcclab fidelity --from` a saved `report` (written to a temporary fidelity.json) in
/// `format`; asserts that it succeeded and returns its standard output.
fn from_saved(report: &Value, format: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fidelity.json");
    std::fs::write(&file, serde_json::to_string(report).unwrap()).unwrap();
    let out = mvcclab(&[
        "fidelity",
        "--from",
        file.to_str().unwrap(),
        "--format",
        format,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two scales (the sample run at 500 and 1,000 rows): one table per scale, and a grid with
/// one column per scale whose cells are each scale's own ratio.
#[test]
fn the_scale_grid_has_one_column_per_scale() {
    let report = json!({
        "rows": [],
        "commands": [],
        "report": {
            "schema_version": 1, "mvcclab_version": "test", "command": "fidelity",
            "runs": [
                run("postgres", 500, 200_000), run("real:postgresql", 500, 100_000),
                run("postgres", 1000, 100_000), run("real:postgresql", 1000, 100_000),
            ]
        },
        "scales": [scale("base", 500), scale("sweep", 1000)]
    });
    let md = from_saved(&report, "md");
    assert!(md.contains("## Scale base: 1 × 500 rows"), "{md}");
    assert!(md.contains("## Scale sweep: 1 × 1000 rows"), "{md}");
    let grid = md.split("## Scale grid").nth(1).expect("a grid section");
    let header = grid
        .lines()
        .find(|l| l.starts_with("| "))
        .expect("a header");
    assert_eq!(header, "| workload · pair · figure | base | sweep |");
    let wal = grid
        .lines()
        .find(|l| l.contains("WAL/redo bytes / txn"))
        .expect("a WAL row");
    assert_eq!(wal.matches(" | ").count(), 2, "{wal}");
    assert!(wal.ends_with("| 2.00 ! | 1.00 |"), "{wal}");
    // The table view carries the same grid.
    let text = from_saved(&report, "table");
    assert!(text.contains("scale grid"), "{text}");
}

#[test]
fn an_unknown_scale_exits_2_naming_the_valid_ones() {
    let out = mvcclab(&["fidelity", "--scales", "base,huge", "--quiet"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'huge'"), "{err}");
    assert!(err.contains("base, 1m, 4m, sweep"), "{err}");
}

/// Three pairs of one workload (`--repeats 3`, re-rendered with `--from`): each figure is
/// one row with the median of the pairs' ratios and their range, flagged by the median.
#[test]
fn repeated_pairs_give_the_median_ratio_and_its_range() {
    // Preset WAL bytes 100,000, 130,000 and 120,000 against the server's 100,000 each
    // time: one pair alone would be flagged (1.30), the median (1.20) is not.
    let mut runs = Vec::new();
    for w in [100_000, 130_000, 120_000] {
        runs.push(run("postgres", 500, w));
        runs.push(run("real:postgresql", 500, 100_000));
    }
    let report = json!({
        "rows": [],
        "commands": [],
        "report": {
            "schema_version": 1, "mvcclab_version": "test", "command": "fidelity",
            "runs": runs
        },
        "scales": [scale("base", 500)]
    });
    let md = from_saved(&report, "md");
    assert!(md.contains("sums up 3 pairs of runs"), "{md}");
    let wal: Vec<&str> = md
        .lines()
        .filter(|l| l.contains("WAL/redo bytes / txn"))
        .collect();
    assert_eq!(wal.len(), 1, "one row per figure: {md}");
    assert!(wal[0].ends_with("| 1.20 [1.00–1.30] |"), "{}", wal[0]);
    // The JSON keeps the count and the range.
    let v: Value = serde_json::from_str(&from_saved(&report, "json")).expect("json");
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "WAL/redo bytes / txn")
        .expect("the WAL row");
    assert_eq!(row["repeats"], 3);
    assert_eq!(
        (row["ratio_min"].as_f64(), row["ratio_max"].as_f64()),
        (Some(1.0), Some(1.3))
    );
    assert_eq!(row["outside"], false);
}

#[test]
fn zero_repeats_exit_2() {
    let out = mvcclab(&["fidelity", "--repeats", "0", "--quiet"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--repeats"), "{err}");
}
