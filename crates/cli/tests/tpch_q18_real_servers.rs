//! `mvcclab experiment tpch_q18` with `real:postgresql` and `real:mariadb` (issue 28):
//! both servers' files are on mvcclab's FUSE device and throttled. At SF 0.01 with Q18's
//! quantity 250, a warm run and then a cold one at 20 MiB/s: the cold run (server
//! restarted, OS page cache dropped) reads the tables' files from the device and waits
//! for its throttle; MariaDB's tmpdir is on the device; no mount is left behind.
//!
//! Needs postgresql-15, mariadb-server and fuse3 (README Set-up) and root.

mod common;

use common::{mvcclab_ok, NoMountLeft};
use serde_json::Value;

#[test]
fn tpch_q18_runs_the_real_servers_on_the_throttled_device() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let out = mvcclab_ok(&[
        "experiment",
        "tpch_q18",
        "--designs",
        "real:postgresql,real:mariadb",
        "--scale-factor",
        "0.01",
        "--q18-quantity",
        "250",
        "--bandwidth",
        "20",
        "--caches",
        "warm,cold",
        "--server-dir",
        tmp.path().to_str().unwrap(),
    ]);
    let r: Value = serde_json::from_slice(&out).expect("report JSON");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for (design, table_file) in [
        ("real:postgresql", "heap lineitem"),
        ("real:mariadb", "lineitem.ibd"),
    ] {
        for run in runs.iter().filter(|x| x["design"] == design) {
            let cache = run["cache"].as_str().unwrap();
            assert_eq!(run["bandwidth_mib_s"], 20.0, "{design} {cache}");
            assert_eq!(run["rows_returned"], 67, "{design} {cache}");
            assert!(!run["timed_out"].as_bool().unwrap());
            let tmpdir = run["server_settings"]["tmpdir"].as_str().unwrap_or("");
            if design == "real:mariadb" {
                assert!(tmpdir.ends_with("/device/tmp"), "{design}: tmpdir {tmpdir}");
            }
        }
        let cold = runs
            .iter()
            .find(|x| x["design"] == design && x["cache"] == "cold")
            .unwrap();
        // Restarted, with the OS page cache dropped: the table is read from the device,
        // and the throttle made those reads wait.
        let reads = &cold["read_blocks_4k_by_cause"];
        assert!(
            reads[table_file].as_u64().unwrap_or(0) > 100,
            "{design}: cold reads {reads}"
        );
        assert!(
            cold["device_wait_us"].as_u64().unwrap() > 0,
            "{design}: no request waited for the throttle"
        );
        assert!(
            cold["engine_read_blocks_4k"].as_u64().unwrap() > 0,
            "{design}"
        );
    }
}
