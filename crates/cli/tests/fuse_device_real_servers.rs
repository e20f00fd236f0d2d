//! Real PostgreSQL 15 and MariaDB 10.11 on mvcclab's FUSE device (issue 23, "Done when"):
//! `mvcclab run --target … --bandwidth 20` runs oltp_update_non_index for a few seconds,
//! and the report shows (a) the device's writes held to 20 MiB/s (+5 %) in every whole
//! second of the measured phase, (b) the WAL-class files written at least as many bytes
//! as the server's own WAL counter says, in as many write calls (within 10 %) as the
//! server counts, and (c) no mount is left under the test's folder, also when the test
//! fails (a guard detaches any it finds, then fails).
//!
//! The packages (postgresql-15, mariadb-server, fuse3) come from `.ci/run` and the README.

use mvcclab::result::{Report, RunReport};
mod common;

use common::{mvcclab_ok, NoMountLeft};
use std::path::Path;
use std::process::Command;

fn run_on_device(target: &str, extra: &[&str], dir: &Path) -> RunReport {
    let mut args = vec![
        "run",
        "--target",
        target,
        "--workload",
        "oltp_update_non_index",
        "--bandwidth",
        "20",
        "--table-size",
        "10000",
        "--threads",
        "4",
        "--time",
        "4",
        "--warmup",
        "1",
        "--format",
        "json",
        "--quiet",
        "--server-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut report: Report = serde_json::from_slice(&mvcclab_ok(&args)).expect("report JSON");
    report.runs.remove(0)
}

fn counter(r: &RunReport, name: &str) -> f64 {
    *r.server
        .as_ref()
        .unwrap()
        .counters
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

/// (a): every whole second of the measured phase wrote at most 20 × 1.05 MiB.
fn assert_throttled(r: &RunReport) {
    assert!(r.io.per_second.len() >= 3, "{:?}", r.io.per_second);
    for (i, s) in r.io.per_second.iter().enumerate() {
        let mib = s.write_bytes as f64 / 1048576.0;
        assert!(mib <= 21.0, "second {i}: {mib:.2} MiB written at 20 MiB/s");
    }
    assert!(
        r.io.total.write_bytes > 0 && r.io.total.device_wait_us > 0,
        "{:?}",
        r.io.total
    );
    assert_eq!(r.device.bandwidth_mib_s, Some(20.0));
}

#[test]
fn postgresql_on_the_device_is_throttled_and_its_wal_counted_by_file() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = run_on_device("postgresql", &["--compression", "zstd"], tmp.path());
    assert!(r.results.transactions > 0);
    assert_throttled(&r);
    let wal = r.io.by_file_class.get("pg_wal").expect("pg_wal class");
    let (wal_bytes, wal_write) = (
        counter(&r, "pg_stat_wal.wal_bytes"),
        counter(&r, "pg_stat_wal.wal_write"),
    );
    assert!(
        wal.io.write_bytes as f64 >= wal_bytes,
        "{} < {wal_bytes}",
        wal.io.write_bytes
    );
    let calls = wal.write_calls as f64;
    assert!(
        (calls - wal_write).abs() <= 0.1 * wal_write,
        "pg_wal write calls {calls}, wal_write {wal_write}"
    );
    assert!(r
        .io
        .by_file_class
        .keys()
        .any(|k| k == "heap sbtest1" || k == "index sbtest1_pkey" || k == "pg_wal"));
    assert!(
        r.io.by_process.contains_key("backend"),
        "{:?}",
        r.io.by_process.keys()
    );
    // The time series gives the device's blocks by file class and by process per interval,
    // adding up over the phase to no more than the phase's own (a sample ends at its
    // reading; writes after the last reading are the phase's alone).
    let series = &r.results.timeseries;
    assert!(!series.is_empty());
    let sum = |key: &str| -> u64 {
        series
            .iter()
            .filter_map(|s| s.device_blocks.get(key))
            .map(|b| b.write_blocks_4k)
            .sum()
    };
    assert!(
        sum("file pg_wal") > 0,
        "{:?}",
        series[0].device_blocks.keys()
    );
    assert!(sum("file pg_wal") <= wal.io.write_blocks_4k);
    assert!(
        sum("process backend") > 0,
        "{:?}",
        series[0].device_blocks.keys()
    );
    // Done when, second check: logical and physical bytes of the server's files.
    assert!(r.space.device_logical_bytes > 0);
    assert!(
        r.space.device_physical_bytes > 0
            && r.space.device_physical_bytes < r.space.device_logical_bytes
    );
}

#[test]
fn mariadb_on_the_device_is_throttled_and_its_redo_log_counted_by_file() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = run_on_device("mariadb", &[], tmp.path());
    assert!(r.results.transactions > 0);
    assert_throttled(&r);
    let redo =
        r.io.by_file_class
            .get("ib_logfile0")
            .expect("ib_logfile0 class");
    let lsn = counter(&r, "global_status.Innodb_lsn_current");
    assert!(
        redo.io.write_bytes as f64 >= lsn,
        "{} < {lsn}",
        redo.io.write_bytes
    );
    // Measured (docs/storage.md): ib_logfile0 gets about 1.2 write calls per
    // Innodb_log_writes, and its fsyncs match Innodb_log_writes within 1 %. mariadbd makes
    // one pwrite64 per fdatasync; the redo log is buffered on the mount, and FUSE's buffered
    // write path splits a write that starts in a page not in the page cache at the page's
    // end (fs/fuse/file.c fuse_fill_write_pages), which 18 % of the redo writes cross. So the
    // count checked within 10 % is the redo log's syncs, and its write calls lie between one
    // and two per write.
    let writes = counter(&r, "global_status.Innodb_log_writes");
    let syncs = redo.io.syncs as f64;
    assert!(
        (syncs - writes).abs() <= 0.1 * writes,
        "ib_logfile0 syncs {syncs}, Innodb_log_writes {writes}"
    );
    let calls = redo.write_calls as f64;
    assert!(
        calls >= 0.9 * writes && calls <= 2.0 * writes,
        "ib_logfile0 write calls {calls}, Innodb_log_writes {writes}"
    );
    assert!(
        r.io.by_file_class.contains_key("sbtest1.ibd")
            || r.io.by_file_class.keys().any(|k| k.starts_with("ibdata1 ")),
        "{:?}",
        r.io.by_file_class.keys().collect::<Vec<_>>()
    );
    // File-system mode splits the system tablespace's reads and writes by part; `ibdata1`
    // whole keeps its syncs alone (a sync has no offset).
    let split: Vec<&String> =
        r.io.by_file_class
            .keys()
            .filter(|k| k.starts_with("ibdata1 "))
            .collect();
    assert!(!split.is_empty(), "{:?}", r.io.by_file_class.keys());
    if let Some(whole) = r.io.by_file_class.get("ibdata1") {
        assert_eq!(
            (whole.io.write_bytes, whole.io.read_bytes),
            (0, 0),
            "{split:?}"
        );
    }
}

/// Block-device mode: the same run with ext4 over a loop device over the mount's image;
/// the WAL's blocks are found by their extents, the file system's own writes (journal,
/// inodes) are `fs_metadata`, and the loop device is gone afterwards with the mount.
#[test]
fn postgresql_in_block_device_mode_gives_blocks_to_files_by_extent() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = run_on_device("postgresql", &["--fuse-mode", "block-device"], tmp.path());
    assert!(r.results.transactions > 0);
    assert_throttled(&r);
    let wal = r.io.by_file_class.get("pg_wal").expect("pg_wal class");
    let wal_bytes = counter(&r, "pg_stat_wal.wal_bytes");
    assert!(
        wal.io.write_bytes as f64 >= wal_bytes,
        "{} < {wal_bytes}",
        wal.io.write_bytes
    );
    assert!(
        r.io.by_file_class.contains_key("fs_metadata"),
        "{:?}",
        r.io.by_file_class.keys()
    );
    let device_io = &r.server.as_ref().unwrap().device_io;
    assert!(
        device_io.contains("block-device mode") && device_io.contains("rotational 0"),
        "{device_io}"
    );
    // The readahead limit an NVMe SSD presents, not the loop driver's 2,560 KiB.
    assert!(device_io.contains("read_ahead_kb 128)"), "{device_io}");
    let image = tmp.path().to_string_lossy().to_string();
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(!loops.contains(&image), "loop device left: {loops}");
}

/// Load once (issue 26): `compare --bandwidth a,b` on both real servers in block-device
/// mode loads each once, saves its data directory, and starts each bandwidth's server from
/// a copy of it: one load per server in the report and on stderr, both runs with the
/// loaded rows, no saved directory or mount left.
#[test]
fn real_servers_load_once_and_every_bandwidth_starts_from_the_saved_data_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let out = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args([
            "compare",
            "--designs",
            "real:postgresql,real:mariadb",
            "--fuse-mode",
            "block-device",
            "--bandwidth",
            "100,200",
            "--table-size",
            "3000",
            "--threads",
            "2",
            "--time",
            "1",
            "--warmup",
            "0",
            "--format",
            "json",
            "--server-dir",
            tmp.path().to_str().unwrap(),
        ])
        .output()
        .expect("run mvcclab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for d in ["real:postgresql", "real:mariadb"] {
        let n = err
            .lines()
            .filter(|l| l.starts_with(&format!("{d}: loading")))
            .count();
        assert_eq!(n, 1, "{d} loaded {n} times:\n{err}");
    }
    let report: Report = serde_json::from_slice(&out.stdout).expect("report JSON");
    let loads: Vec<(&str, u32)> = report
        .loads
        .iter()
        .map(|l| (l.design.as_str(), l.runs))
        .collect();
    assert_eq!(loads, [("real:postgresql", 2), ("real:mariadb", 2)]);
    assert!(report.loads.iter().all(|l| l.saved_bytes > 0));
    for r in &report.runs {
        // Two threads on 3,000 rows may meet in a deadlock or in the DELETE/INSERT of one
        // id (duplicate key, as under sysbench): a few errors, not a failed restore.
        assert!(
            r.results.transactions > 0 && r.results.errors < r.results.transactions,
            "{}: {:?}",
            r.design.name,
            r.results.error_samples
        );
        // The restored tables hold the load's rows (state counter at the end).
        let live = match r.design.name.as_str() {
            "real:postgresql" => counter(r, "pg_stat_user_tables.n_live_tup"),
            _ => r.space.table_pages as f64,
        };
        assert!(live > 0.0, "{}: {live}", r.design.name);
        let cpu = r.cpu_seconds.as_ref().expect("cpu_seconds");
        // mariadbd is one process whose /proc stat sums all its threads, so a second of
        // work always shows. PostgreSQL's backends exit when the run's sessions close, and
        // a backend not yet reaped by the postmaster when the phase's last reading is taken
        // is in neither its own nor the postmaster's cumulative fields: on a quiet machine a
        // 1-second phase may then show no server CPU (a known gap, docs/results.md).
        if r.design.name == "real:mariadb" {
            assert!(!cpu.server_s.is_empty(), "{cpu:?}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
