//! The time series of a run (`results.timeseries[]`, `--report-interval`), its views
//! (`timeseries.csv`, `blocks_per_second.svg`) and the run metadata of a report.

use mvcclab::result::{Report, RunReport};
use std::collections::BTreeMap;
use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

fn ok(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The samples of `r` add up to its totals: transactions, statements, blocks by cause,
/// buffer misses and WAL bytes.
fn check_sums(r: &RunReport) {
    let ts = &r.results.timeseries;
    let name = &r.design.name;
    let sum = |f: &dyn Fn(&mvcclab::result::Sample) -> u64| ts.iter().map(f).sum::<u64>();
    // Exact, not within one interval: the last sample ends at the driver's final count.
    assert_eq!(sum(&|s| s.transactions), r.results.transactions, "{name}");
    assert_eq!(sum(&|s| s.statements), r.results.queries, "{name}");
    assert_eq!(
        sum(&|s| s.read_blocks_4k),
        r.io.total.read_blocks_4k,
        "{name}"
    );
    assert_eq!(
        sum(&|s| s.write_blocks_4k),
        r.io.total.write_blocks_4k,
        "{name}"
    );
    assert_eq!(sum(&|s| s.buffer_misses), r.engine.buffer_misses, "{name}");
    assert_eq!(sum(&|s| s.wal_bytes), r.engine.wal_bytes, "{name}");
    let mut by_cause = BTreeMap::new();
    for s in ts {
        for (c, b) in &s.blocks_by_cause {
            let e: &mut (u64, u64) = by_cause.entry(*c).or_default();
            e.0 += b.read_blocks_4k;
            e.1 += b.write_blocks_4k;
        }
    }
    let totals: BTreeMap<_, _> =
        r.io.by_cause
            .iter()
            .filter(|(_, c)| c.read_blocks_4k + c.write_blocks_4k > 0)
            .map(|(k, c)| (*k, (c.read_blocks_4k, c.write_blocks_4k)))
            .collect();
    assert_eq!(by_cause, totals, "{name}: blocks by cause");
    // A design with undo: its B-tree counters per interval add up to the phase's.
    if r.design.version_storage == mvcclab_engine::design::VersionStorage::UndoDelta {
        let u = &r.engine.undo;
        let want = [
            u.index_page_splits,
            u.index_page_merge_attempts,
            u.index_page_merge_successful,
            u.index_page_reorg_attempts,
        ];
        for (key, want) in mvcclab::result::ENGINE_BTREE_COUNTERS.iter().zip(want) {
            let got: f64 = ts
                .iter()
                .map(|s| s.server_counters.get(*key).copied().unwrap_or(f64::NAN))
                .sum();
            assert_eq!(got, want as f64, "{name}: {key}");
        }
        assert!(u.index_page_splits > 0, "{name}: no split to count");
    }
    // Back to back from 0, each in the measured phase.
    let mut at = 0.0;
    for s in ts {
        assert_eq!(s.phase, "measure");
        assert!(
            (s.start_s - at).abs() < 1e-9,
            "{name}: {} after {at}",
            s.start_s
        );
        assert!(s.interval_s > 0.0);
        at = s.start_s + s.interval_s;
    }
}

#[test]
fn a_five_second_run_has_a_sample_per_second_that_adds_up_to_its_totals() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    // A table larger than the pool, so that pages are read and written every second.
    ok(mvcclab(&[
        "compare",
        "--designs",
        "postgres,innodb",
        "--table-size",
        "20000",
        "--buffer-pool",
        "1MiB",
        "--os-cache",
        "0",
        "--threads",
        "2",
        "--time",
        "5",
        "--warmup",
        "0",
        "--report-interval",
        "1",
        "--quiet",
        "--report",
        rep.to_str().unwrap(),
    ]));
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(rep.join("report.json")).unwrap()).unwrap();
    assert_eq!(report.runs.len(), 2);
    for r in &report.runs {
        let ts = &r.results.timeseries;
        assert!(ts.len() >= 4, "{}: {} samples", r.design.name, ts.len());
        assert_eq!(r.driver.report_interval_s, 1.0);
        assert!(r.io.total.read_blocks_4k > 0 && r.io.total.write_blocks_4k > 0);
        check_sums(r);
        // Every sample but the last lasts about one interval (the sampler reads at its
        // ticks; a late wake-up only moves the boundary, never loses a count).
        assert!(ts.iter().any(|s| s.read_blocks_4k > 0));
    }
    // timeseries.csv: a row per run and sample, the same figures.
    let mut csv = csv::Reader::from_path(rep.join("timeseries.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| h == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let (run, txns) = (col("run"), col("transactions"));
    col("latency_p99_ms");
    col("read_mib_s");
    col("write_blocks_4k.commit");
    let rows: Vec<csv::StringRecord> = csv.records().map(|r| r.unwrap()).collect();
    let samples: usize = report.runs.iter().map(|r| r.results.timeseries.len()).sum();
    assert_eq!(rows.len(), samples);
    for r in &report.runs {
        let sum: u64 = rows
            .iter()
            .filter(|row| &row[run] == r.design.name.as_str())
            .map(|row| row[txns].parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, r.results.transactions);
    }
    // blocks_per_second.svg: one line per design; stacked by cause on request.
    let shapes = |path: &std::path::Path, tag: &str| -> usize {
        let text = std::fs::read_to_string(path).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap();
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants()
            .filter(|n| n.tag_name().name() == tag)
            .count()
    };
    let lines = shapes(&rep.join("blocks_per_second.svg"), "polyline");
    assert!(lines >= 2, "{lines} lines");
    let again = dir.path().join("again");
    ok(mvcclab(&[
        "report",
        rep.join("report.json").to_str().unwrap(),
        "--report",
        again.to_str().unwrap(),
        "--stack-by-cause",
    ]));
    assert!(shapes(&again.join("blocks_per_second.svg"), "polygon") >= 2 * 2);
    assert_eq!(
        std::fs::read(rep.join("timeseries.csv")).unwrap(),
        std::fs::read(again.join("timeseries.csv")).unwrap()
    );
    // The run metadata.
    let m = report.metadata.as_ref().expect("metadata");
    assert!(m.host.cores >= 1);
    assert!(m.command_line.iter().any(|a| a == "--report-interval"));
    assert!(
        m.started_at.ends_with('Z') && m.started_at.len() == 20,
        "{}",
        m.started_at
    );
    assert!(!m.git_commit.is_empty());
}

#[test]
fn report_interval_zero_writes_no_series_and_a_negative_one_exits_2() {
    let small = [
        "run",
        "--table-size",
        "500",
        "--events",
        "40",
        "--time",
        "0",
        "--warmup",
        "0",
        "--quiet",
        "--format",
        "json",
    ];
    let out = ok(mvcclab(&[&small[..], &["--report-interval", "0"]].concat()));
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.runs[0].results.timeseries.is_empty());
    // An events-bound run shorter than an interval has one sample: the whole phase.
    let out = ok(mvcclab(&small));
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let r = &report.runs[0];
    assert!(!r.results.timeseries.is_empty());
    check_sums(r);
    let out = mvcclab(&[&small[..], &["--report-interval=-1"]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("report interval"));
}
