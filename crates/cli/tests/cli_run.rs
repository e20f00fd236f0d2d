//! `mvcclab run` / `compare` as a user runs them.

use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

/// Runs mvcclab with `args` and the SMALL run flags, and checks it succeeded.
fn small_run(args: &[&str]) -> std::process::Output {
    let mut all = args.to_vec();
    all.extend_from_slice(SMALL);
    let out = mvcclab(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
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
    let args = vec![
        "run",
        "--design",
        "innodb",
        "--workload",
        "oltp_read_write",
        "--format",
        "json",
    ];
    let out = small_run(&args);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["command"], "run");
    let v = &report["runs"][0];
    assert_eq!(v["design"]["table_layout"], "clustered");
    assert_eq!(v["workload"]["name"], "oltp_read_write");
    // Every event completes: an ignored error (a deadlock here, now and then) restarts
    // the event, as sysbench's `thread_run` does, and `errors` counts the failed attempts
    // by kind.
    let txns = v["results"]["transactions"].as_u64().unwrap();
    assert_eq!(txns, 60, "{}", v["results"]);
    let by_kind: u64 = v["results"]["errors_by_kind"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum());
    assert_eq!(
        by_kind,
        v["results"]["errors"].as_u64().unwrap(),
        "{}",
        v["results"]
    );
    assert!(v["io"]["by_cause"]["commit"]["wal_syncs"].as_u64().unwrap() > 0);
    assert!(v["io"]["per_txn"]["wal_bytes"].as_f64().unwrap() > 0.0);
    assert!(
        v["engine"]["undo"]["undo_records_written"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        v["io"]["per_op"]["point_select"]["ops"],
        v["results"]["ops_by_kind"]["point_select"]
    );
    assert!(
        v["results"]["ops_by_kind"]["point_select"]
            .as_u64()
            .unwrap()
            >= txns * 10
    );
}

#[test]
fn compare_prints_both_designs_side_by_side() {
    let args = vec!["compare", "--workload", "oltp_update_non_index"];
    let out = small_run(&args);
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
    let args = vec![
        "run",
        "--design",
        "postgres",
        "--set",
        "fillfactor=70",
        "--format",
        "json",
    ];
    let out = small_run(&args);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"][0]["design"]["fillfactor"], 70);
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
        (vec!["run", "--bandwidth", "fast"], "fast"),
        (vec!["compare", "--bandwidth", "100,0"], "'0'"),
        (vec!["run", "--format", "pdf"], "pdf"),
        (vec!["run", "--design", "/nonexistent/x.toml"], "x.toml"),
    ] {
        let out = mvcclab(&bad);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(what), "{bad:?}: {err}");
    }
}

#[test]
fn report_dir_holds_json_that_round_trips_csv_markdown_and_svg_plots() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    let args = vec![
        "compare",
        "--workload",
        "oltp_write_only",
        "--bandwidth",
        "2000,4000",
        "--quiet",
        "--report",
        rep.to_str().unwrap(),
    ];
    let out = small_run(&args);
    assert!(
        out.stderr.is_empty(),
        "--quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // JSON: the documented schema, and back to the same JSON.
    let text = std::fs::read_to_string(rep.join("report.json")).unwrap();
    let report: mvcclab::result::Report = serde_json::from_str(&text).unwrap();
    assert_eq!(report.schema_version, mvcclab::result::SCHEMA_VERSION);
    assert_eq!(report.runs.len(), 4, "2 designs × 2 bandwidths");
    let again = serde_json::to_value(&report).unwrap();
    assert_eq!(
        again,
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    );
    let designs: Vec<(String, Option<f64>)> = report
        .runs
        .iter()
        .map(|r| (r.design.name.clone(), r.device.bandwidth_mib_s))
        .collect();
    assert_eq!(
        designs,
        [
            ("postgres".into(), Some(2000.0)),
            ("innodb".into(), Some(2000.0)),
            ("postgres".into(), Some(4000.0)),
            ("innodb".into(), Some(4000.0)),
        ]
    );
    for r in &report.runs {
        let per_txn_write: f64 =
            r.io.per_txn_by_cause
                .values()
                .map(|b| b.write_blocks_4k)
                .sum();
        let txns = r.results.transactions.max(1) as f64;
        assert!((per_txn_write - r.io.total.write_blocks_4k as f64 / txns).abs() < 1e-6);
    }
    // CSV: a header and one row per run, with the same figures.
    let mut csv = csv::Reader::from_path(rep.join("report.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let tps_col = header.iter().position(|h| h == "results.tps").unwrap();
    let rows: Vec<csv::StringRecord> = csv.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 4);
    for (row, run) in rows.iter().zip(&report.runs) {
        assert_eq!(row.len(), header.len());
        let tps: f64 = row[tps_col].parse().unwrap();
        assert!((tps - run.results.tps).abs() < 1e-9 * tps.max(1.0));
    }
    // `mvcclab report` writes the same directory again from the JSON.
    let again_dir = dir.path().join("again");
    let out = mvcclab(&[
        "report",
        rep.join("report.json").to_str().unwrap(),
        "--report",
        again_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json_of = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("report.json")).unwrap()).unwrap()
    };
    assert!(json_of(&rep) == json_of(&again_dir), "report.json differs");
    for f in [
        "report.csv",
        "summary.md",
        "tps_vs_bandwidth.svg",
        "timeseries.csv",
        "blocks_per_second.svg",
    ] {
        let same = std::fs::read(rep.join(f)).unwrap() == std::fs::read(again_dir.join(f)).unwrap();
        assert!(same, "{f} differs");
    }
    let out = mvcclab(&[
        "report",
        rep.join("tps.svg").to_str().unwrap(),
        "--report",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an mvcclab report"));
    // Markdown and plots.
    let md = std::fs::read_to_string(rep.join("summary.md")).unwrap();
    assert!(
        md.contains("| tps |") && md.contains("blocks_per_txn.svg"),
        "{md}"
    );
    // The page cleaner's LRU batch row: "-" for postgres (no free-page target), the
    // innodb runs' per-batch figures when their page cleaner ran a batch.
    let lru_row = md
        .lines()
        .find(|l| l.starts_with("| LRU batch: pages looked at, written, evicted / batch |"))
        .unwrap_or_else(|| panic!("no LRU batch row: {md}"));
    let cells: Vec<&str> = lru_row.split('|').map(str::trim).collect();
    assert_eq!((cells[2], cells[4]), ("-", "-"), "postgres: {lru_row}");
    for (cell, run) in [(cells[3], &report.runs[1]), (cells[5], &report.runs[3])] {
        let batches = run.io.total.buffer_lru_batches;
        assert_eq!(cell == "-", batches == 0, "innodb: {lru_row}");
    }
    for svg in [
        "tps.svg",
        "blocks_per_txn.svg",
        "latency.svg",
        "tps_vs_bandwidth.svg",
    ] {
        let text = std::fs::read_to_string(rep.join(svg)).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{svg}: {e}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg", "{svg}");
        let n = doc
            .descendants()
            .filter(|n| ["rect", "circle", "polyline", "path"].contains(&n.tag_name().name()))
            .count();
        assert!(n > 4, "{svg} draws something ({n} shapes)");
    }
}

#[test]
fn csv_and_markdown_are_formats_of_the_same_result() {
    for (fmt, want) in [("csv", "results.tps"), ("md", "| tps |")] {
        let args = vec!["run", "--quiet", "--format", fmt];
        let out = small_run(&args);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(want), "{fmt}: {text}");
    }
}

#[test]
fn a_design_file_sets_switches_on_a_base_preset_and_bad_files_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("pg_no_hot.toml");
    std::fs::write(
        &good,
        "base = \"postgres\"\nhot_updates = \"off\"\nfillfactor = 90\n",
    )
    .unwrap();
    let args = vec![
        "run",
        "--quiet",
        "--workload",
        "oltp_update_non_index",
        "--format",
        "json",
        "--design",
        good.to_str().unwrap(),
    ];
    let out = small_run(&args);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    assert_eq!(run["design"]["name"], "pg_no_hot");
    assert_eq!(run["design"]["hot_updates"], false);
    assert_eq!(run["design"]["fillfactor"], 90);
    assert_eq!(run["design"]["table_layout"], "heap");
    assert!(run["engine"]["non_hot_updates"].as_u64().unwrap() > 0);
    assert_eq!(run["engine"]["hot_updates"], 0);
    for (name, text, what) in [
        ("broken.toml", "base = \"postgres\nhot", "broken.toml"),
        (
            "unknown.toml",
            "base = \"postgres\"\ncolour = \"blue\"",
            "colour",
        ),
        (
            "badvalue.toml",
            "base = \"innodb\"\ntable_layout = \"pile\"",
            "pile",
        ),
        ("nobase.toml", "hot_updates = true", "missing field"),
        ("oracle.toml", "base = \"oracle\"", "oracle"),
        (
            "clash.toml",
            "base = \"innodb\"\nindex_pointers = \"physical\"",
            "index_pointers",
        ),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = mvcclab(&["run", "--design", p.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(what) && err.contains(name), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn workloads_lists_every_workload_with_its_statements() {
    let out = mvcclab(&["workloads"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (_, name) in mvcclab_workload::sysbench::WorkloadKind::ALL {
        assert!(text.contains(&format!("| {name} |")), "{name}: {text}");
    }
    assert!(
        text.contains("| oltp_point_select | 1 × point_select |"),
        "{text}"
    );
}

#[test]
fn ctrl_c_stops_the_run_cleanly_skips_the_rest_and_still_writes_the_report() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args([
            "compare",
            "--table-size",
            "500",
            "--time",
            "120",
            "--warmup",
            "0",
            "--threads",
            "2",
            "--format",
            "json",
            "--report",
            rep.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(
        line.contains("postgres") && line.contains("loading"),
        "{line}"
    );
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    assert!(rest.contains("skipping the remaining runs"), "{rest}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "innodb never started");
    assert_eq!(runs[0]["results"]["interrupted"], true);
    assert!(runs[0]["results"]["elapsed_s"].as_f64().unwrap() < 60.0);
    assert!(rep.join("report.json").is_file() && rep.join("tps.svg").is_file());
}

#[test]
fn per_op_counts_each_statement_under_the_cause_its_io_is_counted_under() {
    let args = vec![
        "run",
        "--quiet",
        "--workload",
        "select_random_ranges",
        "--format",
        "json",
    ];
    let out = small_run(&args);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &v["runs"][0];
    // Its ranges run as index lookups: the engine counts them as point_select.
    assert_eq!(
        run["io"]["per_op"]["point_select"]["ops"],
        run["results"]["ops_by_kind"]["random_ranges"]
    );
    assert!(
        run["io"]["per_op"].get("range_scan").is_none(),
        "{}",
        run["io"]["per_op"]
    );
}

/// `run` of the postgres preset on oltp_point_select, the flags the warm-up tests share.
const POINT_SELECT: &[&str] = &[
    "run",
    "--design",
    "postgres",
    "--workload",
    "oltp_point_select",
];

/// `--warmup-rate` paces the warm-up alone, and the report records what the warm-up ran
/// (`results.warmup`). The measured phase runs unpaced (`--rate 0`, a fixed number of
/// events); the warm-up's 2 s at 10 events per second can complete at most the events
/// its Poisson schedule places before its deadline (about 20, fixed by the seed): a
/// warm-up at `--rate` (unpaced) completes thousands. A slow machine completes fewer,
/// never more, so the bound holds under any load.
#[test]
fn warmup_rate_paces_the_warm_up_and_the_report_records_it() {
    let out = mvcclab(
        &[
            POINT_SELECT,
            &[
                "--table-size",
                "500",
                "--threads",
                "2",
                "--events",
                "200",
                "--time",
                "0",
                "--warmup",
                "2",
                "--warmup-rate",
                "10",
                "--format",
                "json",
                "--quiet",
            ],
        ]
        .concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = &report["runs"][0];
    assert_eq!(v["driver"]["warmup_rate_tps"].as_f64(), Some(10.0));
    assert_eq!(v["driver"]["rate_tps"].as_f64(), Some(0.0));
    let w = &v["results"]["warmup"];
    let txns = w["transactions"].as_u64().expect("results.warmup recorded");
    assert!(
        (1..=45).contains(&txns),
        "warm-up ran {txns} transactions: {w}"
    );
    // The warm-up ends at its last event before the deadline: at most its 2 s.
    let elapsed_s = w["elapsed_s"].as_f64().unwrap();
    assert!(elapsed_s > 0.0 && elapsed_s < 2.5, "{w}");
    assert!(w["queries"].as_u64().unwrap() >= txns, "{w}");
    // The measured phase is not paced by the warm-up's rate.
    assert_eq!(v["results"]["transactions"].as_u64(), Some(200));
    // Without --warmup there is no warm-up to record.
    let out = small_run(&["run", "--design", "postgres", "--format", "json", "--quiet"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["runs"][0]["results"].get("warmup").is_none());
    assert!(report["runs"][0]["driver"].get("warmup_rate_tps").is_none());
}

/// A bad `--warmup-rate` is a usage error naming the flag (exit 2), before any load.
#[test]
fn a_bad_warmup_rate_exits_2_naming_it() {
    for bad in ["-5", "abc", "inf", "NaN"] {
        let flag = format!("--warmup-rate={bad}");
        let out = mvcclab(&[POINT_SELECT, &[flag.as_str()]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--warmup-rate"), "{bad}: {err}");
        assert!(err.contains("transaction rate"), "{bad}: {err}");
    }
}
