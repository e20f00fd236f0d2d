//! The named experiments on the real engines (issue 24): `update_hot_set` and
//! `version_chain` with `real:postgresql`, `real:mariadb` (and `update_hot_set` with
//! `real:myrocks`), and `system_versioning` with `real:mariadb` and with `real:postgresql`
//! and the periods extension (issue 29), beside the
//! presets, small,
//! each server on mvcclab's FUSE device. Checks that the report holds the real columns
//! (the same phases, the server's own counters and the device's counts by file class per
//! phase) and the preset / real ratios, and that no mount is left behind.
//!
//! The packages (postgresql-15, postgresql-15-periods, mariadb-server, mariadb-plugin-rocksdb, fuse3) come from
//! `.ci/run` and the README.

use mvcclab::result::ExperimentReport;
mod common;

use common::{mvcclab_ok, NoMountLeft};
use std::path::Path;

fn experiment(args: &[&str], dir: &Path) -> ExperimentReport {
    let mut a = vec!["experiment"];
    a.extend_from_slice(args);
    a.extend([
        "--report-interval",
        "0",
        "--quiet",
        "--format",
        "json",
        "--server-dir",
        dir.to_str().unwrap(),
    ]);
    serde_json::from_slice(&mvcclab_ok(&a)).expect("report JSON")
}

/// Every real run has its server section and, per phase, the server's counters and the
/// device's counts by file class; every preset has a ratio for each phase of its pair.
fn check_real_columns(r: &ExperimentReport, pairs: &[(&str, &str)], wal_class: &[&str]) {
    for (preset, real) in pairs {
        let p = r.runs.iter().find(|x| x.design.name == *preset).unwrap();
        let q = r.runs.iter().find(|x| x.design.name == *real).unwrap();
        assert!(p.server.is_none());
        assert!(q.server.as_ref().is_some_and(|s| !s.version.is_empty()));
        let names = |x: &mvcclab::result::ExperimentRun| -> Vec<String> {
            x.phases.iter().map(|ph| ph.name.clone()).collect()
        };
        assert_eq!(names(p), names(q), "{real}");
        for ph in &q.phases {
            let s = ph.server.as_ref().expect("the server's phase section");
            assert!(!s.counters.is_empty(), "{real} {}", ph.name);
            assert!(
                wal_class.iter().any(|c| s.by_file_class.contains_key(*c)),
                "{real} {}: {:?}",
                ph.name,
                s.by_file_class.keys()
            );
            if ph.ops > 0 {
                assert!(ph.total.write_blocks_4k > 0, "{real} {}", ph.name);
            }
            let rows: Vec<_> = r
                .ratios
                .iter()
                .filter(|x| x.workload == ph.name && x.preset == *preset && x.real == *real)
                .collect();
            assert!(
                rows.iter()
                    .any(|x| x.metric == "device writes, 4 KiB blocks / stmt"),
                "{real} {}: {rows:?}",
                ph.name
            );
        }
    }
}

#[test]
fn update_hot_set_and_version_chain_report_real_columns_and_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = experiment(
        &[
            "update_hot_set",
            "--designs",
            "postgres,real:postgresql,innodb,real:mariadb,real:myrocks",
            "--rows",
            "2000",
            "--updates",
            "200",
        ],
        tmp.path(),
    );
    assert_eq!(r.runs.len(), 5);
    check_real_columns(
        &r,
        &[("postgres", "real:postgresql"), ("innodb", "real:mariadb")],
        &["pg_wal", "ib_logfile0"],
    );
    for run in &r.runs {
        for ph in &run.phases {
            assert_eq!(ph.ops, 200, "{} {}", run.design.name, ph.name);
        }
    }
    // MyRocks: the RocksDB plugin loaded, the table in RocksDB (its WAL and SST files
    // written), its own counters; no preset, so no ratios.
    let m = r
        .runs
        .iter()
        .find(|x| x.design.name == "real:myrocks")
        .unwrap();
    let settings = &m.server.as_ref().unwrap().settings;
    assert_eq!(
        settings.get("default_storage_engine").map(String::as_str),
        Some("ROCKSDB")
    );
    assert!(settings.contains_key("rocksdb_use_direct_reads"));
    for ph in &m.phases {
        let s = ph.server.as_ref().unwrap();
        assert!(
            s.by_file_class.contains_key("rocksdb_wal"),
            "{:?}",
            s.by_file_class.keys()
        );
        assert!(s.counters["global_status.Rocksdb_wal_bytes"] > 0.0);
        assert_eq!(
            ph.total.wal_bytes as f64,
            s.counters["global_status.Rocksdb_wal_bytes"]
        );
    }
    assert!(r.ratios.iter().all(|x| x.real != "real:myrocks"));
    // version_chain as the seed ran it, on PostgreSQL: autovacuum off on the server too.
    let r = experiment(
        &[
            "version_chain",
            "--designs",
            "postgres,real:postgresql",
            "--table-size",
            "1000",
            "--updates",
            "500",
            "--selects",
            "200",
            "--variants",
            "seed",
            "--bound-os-cache",
            "--os-cache",
            "4MiB",
        ],
        tmp.path(),
    );
    check_real_columns(&r, &[("postgres", "real:postgresql")], &["pg_wal"]);
    let q = r
        .runs
        .iter()
        .find(|x| x.design.name == "real:postgresql")
        .unwrap();
    assert!(!q.design.autovacuum);
    assert_eq!(
        q.server.as_ref().unwrap().settings.get("autovacuum"),
        Some(&"off".to_string())
    );
    // --bound-os-cache: the page cache the load left is cut to --os-cache (4 MiB) at the
    // first phase's start and stays there (memory.stat's file lists, read at every mark,
    // reading and phase end; 1 MiB for the kernel's per-CPU charge batches), plus the
    // shared memory not yet touched at a bound, which the limit keeps for the server.
    let mem = |k: &str| -> u64 {
        q.server.as_ref().unwrap().settings[&format!("memory_cgroup_{k}")]
            .parse()
            .unwrap()
    };
    // The load ran with no limit (issue 24 a: the limit is the measured phases' only).
    assert_eq!(
        q.server.as_ref().unwrap().settings["memory_cgroup_limit_bytes"],
        "none until the first bound"
    );
    assert!(
        mem("page_cache_before_first_bound_bytes") > 5 << 20,
        "the load left only {} bytes of page cache: nothing to bound",
        mem("page_cache_before_first_bound_bytes")
    );
    assert!(mem("page_cache_max_bytes") > 0);
    assert!(
        mem("page_cache_max_bytes") <= (5 << 20) + mem("untouched_shared_max_bytes"),
        "page cache {} bytes under a 4 MiB bound ({} bytes of shared memory untouched)",
        mem("page_cache_max_bytes"),
        mem("untouched_shared_max_bytes")
    );
    assert_eq!(
        mem("phase_limit_bytes"),
        mem("own_bytes") + (4 << 20),
        "limit = the server's own memory + --os-cache"
    );
    let names: Vec<&str> = q.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "update_autovacuum_off",
            "select_before_vacuum",
            "vacuum",
            "select_after_vacuum"
        ]
    );
}

/// `system_versioning` small with `args` (designs, variants): 300 rows, one iteration, 20
/// selects, the big pool only; its report, whose runs must be `names` (preset, real).
fn small_sysver(args: &[&str], dir: &Path, names: [&str; 2]) -> ExperimentReport {
    let mut a = vec!["system_versioning"];
    a.extend_from_slice(args);
    a.extend([
        "--rows",
        "300",
        "--iterations",
        "1",
        "--selects",
        "20",
        "--no-small-pool",
    ]);
    let r = experiment(&a, dir);
    let got: Vec<&str> = r.runs.iter().map(|x| x.design.name.as_str()).collect();
    assert_eq!(got, names);
    r
}

/// `system_versioning` beside a real MariaDB (issue 29), small: the history-partition
/// variant with two history partitions of LIMIT 100 rows, one iteration, the big pool
/// only. Both sides ran the same phases; the server's phases count its own counters and
/// the device's blocks by file: the first history partition's file once updates move rows
/// there, the second's in the DELETE (the first holds 100 rows by then); the preset's
/// updates wrote one history row each; each phase has its preset / real ratios.
#[test]
fn system_versioning_reports_the_real_mariadb_column() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = small_sysver(
        &[
            "--designs",
            "innodb,real:mariadb",
            "--variants",
            "partition",
            "--history-partitions",
            "2",
            "--partition-limit",
            "100",
        ],
        tmp.path(),
        [
            "innodb/partition2/big_pool",
            "real:mariadb/partition2/big_pool",
        ],
    );
    let (p, q) = (&r.runs[0], &r.runs[1]);
    assert!(q.server.as_ref().is_some_and(|s| !s.version.is_empty()));
    let phase_names = |x: &mvcclab::result::ExperimentRun| -> Vec<String> {
        x.phases.iter().map(|ph| ph.name.clone()).collect()
    };
    assert_eq!(phase_names(p), phase_names(q));
    assert_eq!(p.phases.len(), 10);
    for ph in &q.phases {
        let s = ph.server.as_ref().expect("the server's phase section");
        assert!(!s.counters.is_empty(), "{}", ph.name);
        let hist_file = match ph.name.as_str() {
            "i1_update_non_index" => Some("sbtest1#P#p0.ibd"),
            "i1_delete_all" => Some("sbtest1#P#p1.ibd"),
            _ => None,
        };
        if let Some(f) = hist_file {
            assert!(
                s.by_file_class.contains_key(f),
                "{}: {:?}",
                ph.name,
                s.by_file_class.keys()
            );
        }
        assert!(
            r.ratios.iter().any(|x| x.workload == ph.name
                && x.preset == p.design.name
                && x.real == q.design.name),
            "{}",
            ph.name
        );
    }
    for ph in p
        .phases
        .iter()
        .filter(|ph| ph.name.starts_with("i1_update"))
    {
        assert_eq!(ph.ops, 150, "{}", ph.name);
        assert_eq!(ph.tables.n_tup_ins, 150, "{}: history rows", ph.name);
    }
}

/// `system_versioning`'s `history_table` variant beside a real PostgreSQL 15 with the
/// periods extension (the heap design's counterpart, issue 29), small: one iteration, the
/// big pool only. Both sides ran the same phases with the same statements, so the history
/// rows each update phase wrote — one per updated row, none for a second update of a row
/// in the same transaction (periods.c `write_history`: its start is the transaction's) —
/// are the same number on both: the preset's inserts in that phase against the server's
/// `pg_stat_user_tables.n_tup_ins`, which counts `sbtest1_history`; every current row goes
/// to the history table in the DELETE, whose pages the server's snapshot names.
#[test]
fn system_versioning_history_table_beside_real_postgresql_with_periods() {
    let tmp = tempfile::tempdir().unwrap();
    let _guard = NoMountLeft(tmp.path().to_path_buf());
    let r = small_sysver(
        &[
            "--designs",
            "postgres,real:postgresql",
            "--variants",
            "history_table",
        ],
        tmp.path(),
        [
            "postgres/history_table/big_pool",
            "real:postgresql/history_table/big_pool",
        ],
    );
    let (p, q) = (&r.runs[0], &r.runs[1]);
    assert_eq!(p.phases.len(), 10);
    for (pp, qp) in p.phases.iter().zip(&q.phases) {
        assert_eq!(pp.name, qp.name);
        assert!(
            r.ratios
                .iter()
                .any(|x| x.workload == pp.name && x.real == q.design.name),
            "{}",
            pp.name
        );
        let s = qp.server.as_ref().expect("the server's phase section");
        let real_ins = s.counters["pg_stat_user_tables.n_tup_ins"];
        match pp.name.as_str() {
            "i1_update_non_index" | "i1_update_index" => {
                assert_eq!(pp.ops, 150, "{}", pp.name);
                let hist = pp.tables.n_tup_ins;
                assert!(hist > 100 && hist <= 150, "{}: {hist}", pp.name);
                assert_eq!(hist as f64, real_ins, "{}: history rows", pp.name);
            }
            "i1_delete_all" => {
                assert_eq!(pp.ops, 300);
                assert_eq!(pp.tables.n_tup_ins, 300);
                assert_eq!(real_ins, 300.0);
                assert!(
                    s.counters
                        .get("space.table_pages.sbtest1_history")
                        .is_some_and(|&n| n > 0.0),
                    "{:?}",
                    s.counters.keys()
                );
            }
            _ => {}
        }
    }
}
