//! `--shard I/N` and `mvcclab report --merge`: a sharded grid joins into the report of the
//! unsharded run, reruns skip finished points, and every bad input of `--merge` exits 2
//! naming the problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn mvcclab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The four-point grid: two presets × two bandwidths, one thread, bounded by events, on
/// tiny tables, without the storage's timed background work (page cleaner, WAL writer,
/// timed checkpoints) and without autovacuum and purge: with them, whether purge runs
/// within a 40-event phase or which process writes a WAL block depends on the moment
/// (purge ran in 2 of 8 runs of innodb here, adding ~900 buffer hits), and two runs'
/// spread does not bound a third. On-access pruning, HOT and the undo log still work.
const GRID: &[&str] = &[
    "compare",
    "--quiet",
    "--no-background",
    "--set",
    "garbage_collection=off",
    "--designs",
    "postgres,innodb",
    "--bandwidth",
    "2000,4000",
    "--threads",
    "1",
    "--events",
    "40",
    "--time",
    "0",
    "--warmup",
    "0",
    "--table-size",
    "200",
];

fn grid(extra: &[&str]) -> Output {
    let mut a = GRID.to_vec();
    a.extend_from_slice(extra);
    mvcclab(&a)
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The counts of a run: every number under `results` (but times, rates and latencies),
/// `io`, `engine` and `space` (but times in µs or ms), by dotted path.
fn counts(run: &serde_json::Value) -> BTreeMap<String, f64> {
    fn walk(prefix: String, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    walk(format!("{prefix}.{k}"), x, out);
                }
            }
            // Times (device waits in µs, ...) are not counts.
            serde_json::Value::Number(_) if prefix.ends_with("_us") || prefix.ends_with("_ms") => {}
            serde_json::Value::Number(n) => {
                out.insert(prefix, n.as_f64().unwrap());
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for section in ["io", "engine", "space"] {
        walk(section.to_string(), &run[section], &mut out);
    }
    for (k, x) in run["results"].as_object().unwrap() {
        let timed = [
            "elapsed_s",
            "tps",
            "qps",
            "latency",
            "timeseries",
            "error_samples",
        ];
        if !timed.contains(&k.as_str()) {
            walk(format!("results.{k}"), x, &mut out);
        }
    }
    out
}

/// The counts that do not depend on timing: the driver's transactions and statements.
fn deterministic(path: &str) -> bool {
    [
        "results.transactions",
        "results.queries",
        "results.reads",
        "results.writes",
        "results.other",
        "results.errors",
    ]
    .contains(&path)
        || path.starts_with("results.ops_by_kind.")
}

fn point_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn a_sharded_grid_merges_into_the_unsharded_report() {
    // The unsharded run twice: counts of background work vary with wall time, and the
    // two runs give their spread.
    let base: Vec<serde_json::Value> = (0..2)
        .map(|_| json(&ok(grid(&["--format", "json"]))))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let (d0, d1) = (tmp.path().join("shard0"), tmp.path().join("shard1"));
    ok(grid(&["--shard", "0/2", "--report", s(&d0)]));
    ok(grid(&["--shard", "1/2", "--report", s(&d1)]));
    assert_eq!(point_files(&d0).len(), 2);
    assert_eq!(point_files(&d1).len(), 2);
    // A rerun skips the points whose files are there: the files stay as they were.
    let before: Vec<Vec<u8>> = point_files(&d0)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let rerun = ok(grid(&["--shard", "0/2", "--report", s(&d0)]));
    assert!(rerun.stdout.is_empty());
    let after: Vec<Vec<u8>> = point_files(&d0)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert_eq!(before, after);

    let out_dir = tmp.path().join("merged");
    let merged = json(&ok(mvcclab(&[
        "report",
        "--merge",
        s(&d1),
        s(&d0),
        "--report",
        s(&out_dir),
        "--format",
        "json",
    ])));
    assert!(out_dir.join("report.json").exists());
    assert!(out_dir.join("tps_vs_bandwidth.svg").exists());
    assert_eq!(merged["command"], "compare");
    let runs = merged["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for (i, run) in runs.iter().enumerate() {
        let b = &base[0]["runs"][i];
        for field in ["design", "workload", "driver", "device", "storage_config"] {
            assert_eq!(run[field], b[field], "run {i}: {field}");
        }
        // Each run keeps the metadata of the shard that ran it.
        let cmd = run["metadata"]["command_line"].as_array().unwrap();
        assert!(cmd.iter().any(|a| a == "--shard"), "{cmd:?}");
        let (lo, hi) = (counts(b), counts(&base[1]["runs"][i]));
        let got = counts(run);
        // A cause or metric absent from a run counted 0 there.
        let mut paths: Vec<&String> = got.keys().chain(lo.keys()).chain(hi.keys()).collect();
        paths.sort();
        paths.dedup();
        assert!(paths.len() > 50, "{paths:?}");
        let at = |m: &BTreeMap<String, f64>, p: &String| m.get(p).copied().unwrap_or(0.0);
        for path in paths {
            let (m, a, c) = (at(&got, path), at(&lo, path), at(&hi, path));
            if deterministic(path) {
                assert_eq!(m, a, "run {i}: {path}");
                assert_eq!(m, c, "run {i}: {path}");
            } else {
                assert!(
                    a.min(c) <= m && m <= a.max(c),
                    "run {i}: {path} = {m}, unsharded {a} and {c}"
                );
            }
        }
    }
    assert_eq!(
        runs.iter()
            .map(|r| (
                r["design"]["name"].clone(),
                r["device"]["bandwidth_mib_s"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            ("postgres", 2000.0),
            ("innodb", 2000.0),
            ("postgres", 4000.0),
            ("innodb", 4000.0)
        ]
        .iter()
        .map(|(d, b)| (serde_json::json!(d), serde_json::json!(b)))
        .collect::<Vec<_>>()
    );
}

/// A tiny two-point grid (one design × two bandwidths) in two shards, made once for the
/// bad-input tests; each test copies what it needs.
fn points() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static P: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    P.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        for (shard, dir) in [("0/2", &a), ("1/2", &b)] {
            ok(tiny(&["--shard", shard, "--report", s(dir)]));
        }
        (tmp, a, b)
    })
}

fn tiny(extra: &[&str]) -> Output {
    let mut a = vec![
        "run",
        "--quiet",
        "--bandwidth",
        "2000,4000",
        "--threads",
        "1",
        "--events",
        "5",
        "--time",
        "0",
        "--warmup",
        "0",
        "--table-size",
        "50",
        "--report-interval",
        "0",
    ];
    a.extend_from_slice(extra);
    mvcclab(&a)
}

/// Copies the point files of `dirs` into fresh directories under `into`.
fn copy(dirs: &[&Path], into: &Path) -> Vec<PathBuf> {
    dirs.iter()
        .enumerate()
        .map(|(i, d)| {
            let to = into.join(format!("copy{i}"));
            std::fs::create_dir_all(&to).unwrap();
            for f in point_files(d) {
                std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
            }
            to
        })
        .collect()
}

/// Runs `report --merge` on `dirs`, expects exit 2 and returns standard error.
fn merge_fails(dirs: &[PathBuf]) -> String {
    let mut a = vec!["report", "--merge"];
    a.extend(dirs.iter().map(|d| s(d)));
    let out = mvcclab(&a);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Rewrites the JSON of the one point file in `dir` with `f`.
fn edit_point(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let files = point_files(dir);
    assert_eq!(files.len(), 1);
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&files[0], serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn merging_both_tiny_shards_works() {
    let (_, a, b) = points();
    let out = ok(mvcclab(&[
        "report",
        "--merge",
        s(a),
        s(b),
        "--format",
        "json",
    ]));
    assert_eq!(json(&out)["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn merge_refuses_a_missing_point() {
    let (_, a, _) = points();
    let err = merge_fails(std::slice::from_ref(a));
    assert!(
        err.contains("missing 1 of the grid's 2 points: 1 ("),
        "{err}"
    );
    assert!(err.contains("4000 MiB/s"), "{err}");
}

#[test]
fn merge_refuses_a_duplicate_point() {
    let (_, a, b) = points();
    let err = merge_fails(&[a.clone(), b.clone(), a.clone()]);
    assert!(err.contains("duplicate point 0 ("), "{err}");
}

#[test]
fn merge_refuses_points_of_other_parameters() {
    let (_, a, _) = points();
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    // The same grid with another seed: a point of a different sweep.
    ok(tiny(&[
        "--rand-seed",
        "2",
        "--shard",
        "1/2",
        "--report",
        s(&other),
    ]));
    let err = merge_fails(&[a.clone(), other]);
    assert!(err.contains("points from different parameters"), "{err}");
    assert!(err.contains("driver"), "{err}");
}

#[test]
fn merge_refuses_points_of_other_mvcclab_versions() {
    let (_, a, b) = points();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = copy(&[a.as_path(), b.as_path()], tmp.path());
    edit_point(&dirs[1], |v| v["git_commit"] = "0123456789ab".into());
    let err = merge_fails(&dirs);
    assert!(
        err.contains("points from different mvcclab versions"),
        "{err}"
    );
    assert!(err.contains("0123456789ab"), "{err}");
    edit_point(&dirs[1], |v| v["mvcclab_version"] = "0.0.1".into());
    let err = merge_fails(&dirs);
    assert!(err.contains("0.0.1"), "{err}");
}

#[test]
fn merge_refuses_empty_missing_and_broken_directories() {
    let (_, a, _) = points();
    let tmp = tempfile::tempdir().unwrap();
    let err = merge_fails(&[tmp.path().to_path_buf()]);
    assert!(err.contains("no point-*.json files"), "{err}");
    let err = merge_fails(&[tmp.path().join("nowhere")]);
    assert!(err.contains("nowhere"), "{err}");
    let dirs = copy(&[a.as_path()], tmp.path());
    edit_point(&dirs[0], |v| *v = serde_json::json!({ "not": "a point" }));
    let err = merge_fails(&dirs);
    assert!(err.contains("is not an mvcclab point report"), "{err}");
    let out = mvcclab(&["run", "--shard", "2/2"]);
    assert_eq!(out.status.code(), Some(2));
    let out = mvcclab(&["run", "--shard", "0/2", "--events", "1", "--time", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--report"));
}

/// A run of an experiment as design, bandwidth and (phase, statements) in order.
type RunShape = (String, String, Vec<(String, u64)>);

#[test]
fn an_experiments_variants_and_bandwidths_shard_and_merge_into_its_local_report() {
    // version_chain: 2 bandwidths × 2 designs × 2 variants (seed, autovacuum_on) = 8
    // points (innodb has no autovacuum: its autovacuum_on points hold no run).
    let exp = |extra: &[&str]| {
        let mut a = vec![
            "experiment",
            "version_chain",
            "--quiet",
            "--bandwidth",
            "2000,4000",
            "--table-size",
            "100",
            "--updates",
            "60",
            "--selects",
            "20",
            "--report-interval",
            "0",
        ];
        a.extend_from_slice(extra);
        ok(mvcclab(&a))
    };
    let local = json(&exp(&["--format", "json"]));
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("s{i}"))).collect();
    for (i, d) in dirs.iter().enumerate() {
        exp(&["--shard", &format!("{i}/3"), "--report", s(d)]);
    }
    let n: usize = dirs.iter().map(|d| point_files(d).len()).sum();
    assert_eq!(n, 8);
    let mut a = vec!["report", "--merge"];
    a.extend(dirs.iter().map(|d| s(d)));
    a.extend(["--format", "json"]);
    let merged = json(&ok(mvcclab(&a)));
    assert_eq!(merged["experiment"], "version_chain");
    assert_eq!(merged["parameters"], local["parameters"]);
    let shape = |r: &serde_json::Value| -> Vec<RunShape> {
        r["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| {
                (
                    run["design"]["name"].as_str().unwrap().to_string(),
                    run["device"]["bandwidth_mib_s"].to_string(),
                    run["phases"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| {
                            (
                                p["name"].as_str().unwrap().into(),
                                p["ops"].as_u64().unwrap(),
                            )
                        })
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&merged), shape(&local));
    assert_eq!(shape(&local).len(), 4);
    assert_eq!(shape(&local)[0].2.len(), 5);
    // Each run keeps the metadata of both points (variants) that made it.
    assert_eq!(merged["runs"][0]["metadata"].as_array().unwrap().len(), 2);
}
