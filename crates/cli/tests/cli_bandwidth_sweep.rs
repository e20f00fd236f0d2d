//! Load once per design (issue 26): `compare --bandwidth a,b` and `experiment
//! bandwidth_sweep` load each preset once and start every bandwidth from that load; the
//! sweep's report files on a tiny size.

use mvcclab::result::Report;
use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn compare_loads_each_preset_once_and_every_bandwidth_starts_from_the_load() {
    let out = mvcclab(&[
        "compare",
        "--designs",
        "postgres,innodb",
        "--bandwidth",
        "3000,1500,6000",
        "--table-size",
        "3000",
        "--events",
        "40",
        "--time",
        "0",
        "--warmup",
        "0",
        "--threads",
        "1",
        "--format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    for d in ["postgres", "innodb"] {
        let loading = err
            .lines()
            .filter(|l| l.starts_with(&format!("{d}: loading")))
            .count();
        assert_eq!(loading, 1, "{d} loaded {loading} times:\n{err}");
    }
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.runs.len(), 6);
    let loads: Vec<(&str, u32)> = report
        .loads
        .iter()
        .map(|l| (l.design.as_str(), l.runs))
        .collect();
    assert_eq!(loads, [("postgres", 3), ("innodb", 3)]);
    assert!(report.loads.iter().all(|l| l.duration_s > 0.0));
    // 3,000 rows of ~200 bytes: well over 100 pages kept per design.
    assert!(report.loads.iter().all(|l| l.saved_bytes > 100 * 8192));
    for r in &report.runs {
        assert_eq!(r.results.errors, 0, "{}", r.design.name);
        assert!(r.results.transactions >= 40);
        // Every point found the loaded table: its pages are the load's (3,000 rows), not
        // only the 40 transactions' few inserts.
        assert!(r.space.table_pages > 40, "{}: {:?}", r.design.name, r.space);
        assert!(r.cpu_seconds.as_ref().is_some_and(|c| c.mvcclab_s > 0.0));
    }
    for d in ["postgres", "innodb"] {
        let pages: Vec<u64> = report
            .runs
            .iter()
            .filter(|r| r.design.name == d)
            .map(|r| r.space.table_pages)
            .collect();
        let (lo, hi) = (pages.iter().min().unwrap(), pages.iter().max().unwrap());
        assert!(
            hi - lo <= 3,
            "{d}: each point starts from the same load: {pages:?}"
        );
    }
}

#[test]
fn bandwidth_sweep_on_a_tiny_size_writes_its_tables_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let rep = dir.path().join("rep");
    mvcclab(&[
        "experiment",
        "bandwidth_sweep",
        "--designs",
        "postgres,innodb",
        "--tables",
        "1",
        "--table-size",
        "2000",
        "--memory",
        "8MiB",
        "--threads",
        "1",
        "--warmup",
        "0",
        "--time",
        "1",
        "--bandwidth",
        "400,2000",
        "--quiet",
        "--format",
        "json",
        "--report",
        rep.to_str().unwrap(),
    ]);
    let report: Report =
        serde_json::from_str(&std::fs::read_to_string(rep.join("report.json")).unwrap()).unwrap();
    assert_eq!(report.command, "experiment bandwidth_sweep");
    assert_eq!(report.runs.len(), 4);
    assert_eq!(report.loads.len(), 2);
    // The memory split: PostgreSQL 25 % pool + 75 % OS cache, InnoDB 75 % pool.
    for r in &report.runs {
        let (pool, os) = (r.device.buffer_pool_bytes, r.device.os_cache_bytes);
        match r.design.name.as_str() {
            "postgres" => assert_eq!((pool, os), (2 << 20, 6 << 20)),
            "innodb" => assert!((5 << 20..=6 << 20).contains(&pool) && os == 0, "{pool}"),
            other => panic!("{other}"),
        }
    }
    let md = std::fs::read_to_string(rep.join("bandwidth_sweep.md")).unwrap();
    for section in [
        "## Loads",
        "## TPS against bandwidth (Fig. 1a)",
        "## Device utilisation",
        "## CPU per process",
        "## 4 KiB blocks per transaction by cause",
        "## Ratios per bandwidth",
    ] {
        assert!(md.contains(section), "missing {section}:\n{md}");
    }
    let csv = std::fs::read_to_string(rep.join("bandwidth_sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    for f in [
        "pages_per_second_top.svg",
        "tps_vs_bandwidth.svg",
        "timeseries.csv",
    ] {
        assert!(rep.join(f).exists(), "{f}");
    }
}
