//! Real PostgreSQL 15 and MariaDB 10.11 through the same code path as the presets
//! (`mvcclab run --target`, `mvcclab compare --designs real:...`): each test starts its own
//! managed server (127.0.0.1, a free port, stopped by its pid), runs a short
//! oltp_read_write, and checks that the servers' own counters moved as the workload
//! implies.
//!
//! The packages are installed here if missing (as root, with apt-get), so the README's
//! test command works on a fresh machine; without root the test fails naming the command.

use mvcclab::result::{Report, RunReport};
use std::path::Path;
use std::process::Command;
use std::sync::Once;

static INSTALL: Once = Once::new();

fn ensure_servers_installed() {
    INSTALL.call_once(|| {
        let have = Path::new("/usr/lib/postgresql/15/bin/postgres").exists()
            && Path::new("/usr/sbin/mariadbd").exists();
        if have {
            return;
        }
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            root,
            "PostgreSQL 15 and MariaDB are not installed: run `apt-get install -y postgresql-15 mariadb-server` (README, Set-up)"
        );
        let ok = Command::new("sh")
            .args([
                "-c",
                "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 mariadb-server",
            ])
            .status()
            .expect("run apt-get");
        assert!(ok.success(), "apt-get install postgresql-15 mariadb-server failed");
    });
}

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

/// mvcclab with `args` and a short single-threaded run: `table_size` rows, `events`
/// events, no warm-up, managed servers under `dir`, no progress output.
fn short(args: &[&str], table_size: u32, events: u32, dir: &Path) -> std::process::Output {
    let (rows, events) = (table_size.to_string(), events.to_string());
    let mut all = args.to_vec();
    all.extend_from_slice(&[
        "--table-size",
        &rows,
        "--events",
        &events,
        "--time",
        "0",
        "--warmup",
        "0",
        "--threads",
        "1",
        "--server-dir",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    mvcclab(&all)
}

/// A short single-threaded `mvcclab run --target target` (`extra` added) over 2,000 rows
/// with servers under `dir`; returns its report run.
fn real_run_with(target: &str, extra: &[&str], events: u32, dir: &Path) -> RunReport {
    ensure_servers_installed();
    let mut args = vec!["run", "--target", target, "--format", "json"];
    args.extend_from_slice(extra);
    let out = short(&args, 2000, events, dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut report: Report = serde_json::from_slice(&out.stdout).expect("report JSON");
    assert_eq!(report.runs.len(), 1);
    report.runs.remove(0)
}

/// A short single-threaded oltp_read_write (150 events) on `target` with servers under
/// `dir`; returns its report run.
fn real_run(target: &str, dir: &Path) -> RunReport {
    real_run_with(target, &[], 150, dir)
}

/// The managed server was stopped and its folder removed: nothing is left under `dir`,
/// and no process runs with `dir` on its command line.
fn assert_server_gone(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(left.is_empty(), "server folder left behind: {left:?}");
    let needle = dir.to_str().unwrap();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(p.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            assert!(!cmd.contains(needle), "server still running: {cmd}");
        }
    }
}

fn ops(r: &RunReport, kinds: &[&str]) -> u64 {
    kinds
        .iter()
        .map(|k| r.results.ops_by_kind.get(*k).copied().unwrap_or(0))
        .sum()
}

fn counter(r: &RunReport, name: &str) -> f64 {
    *r.server
        .as_ref()
        .unwrap()
        .counters
        .get(name)
        .unwrap_or_else(|| panic!("counter {name} missing"))
}

/// The run's time series adds up to its totals, the server's counters (read each
/// interval under their own names, count `name` one of them) included.
fn check_series(r: &RunReport, name: &str) {
    let ts = &r.results.timeseries;
    assert!(!ts.is_empty());
    let sum = |f: &dyn Fn(&mvcclab::result::Sample) -> u64| ts.iter().map(f).sum::<u64>();
    assert_eq!(sum(&|s| s.transactions), r.results.transactions);
    assert_eq!(sum(&|s| s.statements), r.results.queries);
    assert_eq!(sum(&|s| s.wal_bytes), r.engine.wal_bytes);
    assert_eq!(sum(&|s| s.buffer_misses), r.engine.buffer_misses);
    let counted: f64 = ts.iter().filter_map(|s| s.server_counters.get(name)).sum();
    assert!(counted > 0.0, "{name}: {ts:?}");
    assert_eq!(counted, counter(r, name));
}

#[test]
fn postgresql_counters_match_the_statements_sent() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run("postgresql", dir.path());
    assert_server_gone(dir.path());
    assert_eq!(r.target, "postgresql");
    assert_eq!(r.design.name, "real:postgresql");
    let s = r.server.as_ref().unwrap();
    assert!(s.managed);
    assert!(s.version.starts_with("PostgreSQL 15"), "{}", s.version);
    assert_eq!(s.settings["checkpoint_timeout"], "1d");
    // Checksums on, as in the preset: hint-bit changes log full-page images on both sides.
    assert_eq!(s.settings["data_checksums"], "on");
    assert_eq!(r.results.transactions, 150);
    assert_eq!(r.results.errors, 0);
    // Every UPDATE, INSERT and DELETE sent is counted once by pg_stat_user_tables.
    let updates = ops(&r, &["index_update", "non_index_update"]);
    assert_eq!(updates, 300);
    assert_eq!(r.engine.tables.n_tup_upd, updates);
    assert_eq!(r.engine.tables.n_tup_ins, ops(&r, &["insert"]));
    assert_eq!(r.engine.tables.n_tup_del, ops(&r, &["delete"]));
    assert!(r.engine.hot_updates <= updates);
    assert!(counter(&r, "pg_stat_database.xact_commit") >= 150.0);
    // 14 reads per event; each reads at least one buffer.
    assert!(r.io.total.buffer_hits + r.io.total.buffer_misses >= 150 * 14);
    assert!(r.io.total.wal_records >= updates);
    assert!(r.io.total.wal_bytes > 0);
    // pg_waldump over the measured phase: one commit record per transaction at least, and
    // the record types' bytes close to pg_stat_wal's (which the checkpointer's and
    // autovacuum's records may add to after the phase's last LSN is read).
    let w = &r.engine.wal_by_record;
    assert!(w["Transaction/COMMIT"].records >= 150, "{w:?}");
    let recs = |n: &str| w.get(n).map_or(0, |c| c.records);
    assert!(
        recs("Heap/UPDATE") + recs("Heap/HOT_UPDATE") >= updates,
        "{w:?}"
    );
    let dumped: u64 = w.values().map(|c| c.record_bytes + c.fpi_bytes).sum();
    assert!(
        dumped > 0 && dumped <= r.io.total.wal_bytes + 4096,
        "{dumped} vs {}",
        r.io.total.wal_bytes
    );
    // No checkpoint fell inside the run (checkpoint_timeout=1d, max_wal_size=100GB).
    assert_eq!(
        r.io.total.checkpoints_timed + r.io.total.checkpoints_requested,
        0
    );
    assert!(!r.measured("io.total.read_blocks_4k"));
    assert!(r.measured("io.total.wal_fpi"));
    assert!(r.space.table_pages > 0 && r.space.index_pages > 0);
    assert_eq!(
        r.space.pages_by_table["sbtest1"],
        (r.space.table_pages, r.space.index_pages)
    );
    check_series(&r, "pg_stat_database.xact_commit");
    // CPU: the phase's 150 transactions ran in backends that have exited when the final
    // counters are read, so their CPU is the postmaster's cumulative child figures.
    let cpu = r.cpu.as_ref().expect("cpu section of a managed server");
    let exited = cpu.by_kind["exited"];
    assert!(exited.user_us + exited.system_us > 0, "{cpu:?}");
    assert!(exited.minor_faults > 0, "{cpu:?}");
    assert!(cpu.by_kind.contains_key("postmaster") && cpu.by_kind.contains_key("checkpointer"));
    assert!(cpu.total.task_clock_us() >= exited.task_clock_us());
    assert!(cpu.per_txn.task_clock_us > 0.0 && cpu.cpus_utilised > 0.0);
    assert!(cpu.ctxt_switches_of_exited_missing);
}

/// `--fillfactor` on a real PostgreSQL: sysbench's table and both its indexes carry the
/// storage parameter, and the report's design says it.
#[test]
fn postgresql_fillfactor_reaches_every_table_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run_with(
        "postgresql",
        &["--workload", "oltp_point_select", "--fillfactor", "60"],
        20,
        dir.path(),
    );
    assert_eq!((r.design.fillfactor, r.design.index_fillfactor), (60, 60));
    // At fill factor 60 the 2,000 rows take more heap pages than at 100 (about 1 / 0.6):
    // sysbench's rows are ~190 bytes, 39 to a full 8 KiB page, 23 at 60 %.
    assert!(r.space.table_pages >= 2000 / 24, "{:?}", r.space);
}

/// The load's last inserts reach the statistics before its VACUUM ANALYZE, so no autovacuum
/// or autoanalyze trigger is left to fire inside the measured phase: after a read-only
/// run, nothing counts as inserted since the vacuum or modified since the analyze (the
/// load's two batches of 1,000 rows did, before the flush was forced).
#[test]
fn postgresql_load_leaves_no_autovacuum_trigger_for_the_measured_phase() {
    let dir = tempfile::tempdir().unwrap();
    let r = &real_run_with(
        "postgresql",
        &["--workload", "oltp_point_select"],
        50,
        dir.path(),
    );
    assert_eq!(counter(r, "pg_stat_user_tables.n_ins_since_vacuum"), 0.0);
    assert_eq!(counter(r, "pg_stat_user_tables.n_mod_since_analyze"), 0.0);
    assert_eq!(counter(r, "pg_stat_user_tables.autovacuum_count"), 0.0);
}

#[test]
fn mariadb_counters_match_the_statements_sent() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run("mariadb", dir.path());
    assert_server_gone(dir.path());
    assert_eq!(r.target, "mariadb");
    let s = r.server.as_ref().unwrap();
    assert!(s.version.starts_with("10.11"), "{}", s.version);
    assert_eq!(s.settings["innodb_flush_method"], "O_DIRECT");
    assert_eq!(s.settings["innodb_doublewrite"], "ON");
    assert_eq!(r.results.transactions, 150);
    let updates = ops(&r, &["index_update", "non_index_update"]);
    assert_eq!(r.engine.tables.n_tup_upd, updates);
    assert_eq!(r.engine.tables.n_tup_ins, ops(&r, &["insert"]));
    assert_eq!(r.engine.tables.n_tup_del, ops(&r, &["delete"]));
    assert_eq!(counter(&r, "global_status.Com_commit"), 150.0);
    assert_eq!(counter(&r, "global_status.Com_update"), updates as f64);
    // Redo: every change is logged, and no full-page images exist in InnoDB.
    assert!(r.io.total.wal_bytes > 0);
    assert_eq!(r.io.total.wal_fpi, 0);
    assert!(r.io.total.buffer_hits > 150 * 14);
    assert!(!r.measured("engine.dead_tuples"));
    check_series(&r, "global_status.Com_commit");
    let cpu = r.cpu.as_ref().expect("cpu section of a managed server");
    assert!(cpu.by_kind["server"].task_clock_us() > 0, "{cpu:?}");
    assert_census_covers_the_pool(&r);
}

/// MariaDB's pool census (`engine.buffer_cache.owner_*`, crates/servers/src/mariadb.rs
/// `read_buffer_page`): every block of the pool in one class, the workload's pages
/// classed as its table and index, dirty and old within pages.
fn assert_census_covers_the_pool(r: &RunReport) {
    let bc = &r.engine.buffer_cache;
    let get = |k: &str| bc.get(k).copied().unwrap_or(0);
    let classes = ["table", "index", "undo", "freed", "system", "memory"];
    let resident: u64 = classes
        .iter()
        .map(|c| get(&format!("owner_{c}_pages")))
        .sum();
    let pool_pages = counter(r, "global_status.Innodb_buffer_pool_pages_total");
    // Block 0 may count as unused once more than it is (mariadb.rs).
    let counted = (resident + get("unused")) as f64;
    assert!(
        counted == pool_pages || counted == pool_pages + 1.0,
        "{counted} blocks counted, {pool_pages} in the pool: {bc:?}"
    );
    assert!(
        get("owner_table_pages") > 0 && get("owner_index_pages") > 0,
        "{bc:?}"
    );
    for c in classes {
        let pages = get(&format!("owner_{c}_pages"));
        assert!(get(&format!("owner_{c}_dirty")) <= pages, "{c}: {bc:?}");
        assert!(get(&format!("owner_{c}_old")) <= pages, "{c}: {bc:?}");
    }
}

/// A pool of more than 10,000 blocks: MariaDB's view emits its last batch of blocks at
/// the full batch size, zeroed rows past the pool's end, which the census must not count
/// as free blocks.
#[test]
fn mariadb_census_of_a_pool_above_ten_thousand_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let r = real_run_with("mariadb", &["--buffer-pool", "192MiB"], 20, dir.path());
    assert_server_gone(dir.path());
    assert!(counter(&r, "global_status.Innodb_buffer_pool_pages_total") > 10_000.0);
    assert_census_covers_the_pool(&r);
}

#[test]
fn compare_puts_presets_and_real_servers_side_by_side() {
    ensure_servers_installed();
    let dir = tempfile::tempdir().unwrap();
    let out = short(
        &[
            "compare",
            "--designs",
            "postgres,real:postgresql,innodb,real:mariadb",
            "--workload",
            "oltp_update_non_index",
        ],
        1000,
        100,
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.contains("real:postgresql"))
        .expect("a header line");
    for name in ["postgres", "real:postgresql", "innodb", "real:mariadb"] {
        assert!(header.contains(name), "{header}");
    }
    let updates = text
        .lines()
        .find(|l| l.starts_with("HOT updates / updates"))
        .expect("HOT row");
    // 100 events of one non-index update each, in all four columns.
    assert_eq!(updates.matches("/100").count(), 4, "{updates}");
    assert_server_gone(dir.path());
}

#[test]
fn bad_real_targets_are_usage_errors() {
    let out = mvcclab(&["compare", "--designs", "postgres,real:oracle"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("real:postgresql, real:mariadb or real:myrocks"));
    let out = mvcclab(&["run", "--target", "sqlite"]);
    assert_eq!(out.status.code(), Some(2));
    let out = mvcclab(&["run", "--target", "postgresql", "--url", "http://x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--url 'http://x'"));
    // The FUSE device takes servers mvcclab starts, and one way of counting at a time.
    let out = mvcclab(&[
        "compare",
        "--designs",
        "postgres,real:postgresql",
        "--bandwidth",
        "100",
        "--exact-device-io",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("choose one"));
    let out = mvcclab(&[
        "run",
        "--target",
        "postgresql",
        "--compression",
        "lz4",
        "--url",
        "postgresql://u@127.0.0.1:1/db",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("runs on its own storage"));
    // --rotational off the FUSE device: only when the servers' folder is on a rotational
    // disk, which tmpfs (no block device) is not; on the FUSE device only in block-device
    // mode.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = mvcclab(&[
        "compare",
        "--designs",
        "innodb,real:mariadb",
        "--rotational",
        "--server-dir",
        shm.path().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("storage without a rotational flag"), "{err}");
    let out = mvcclab(&[
        "compare",
        "--designs",
        "innodb,real:mariadb",
        "--rotational",
        "--fuse-device",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("only in --fuse-mode block-device"), "{err}");
}

/// `--exact-device-io`: as root, the server's files sit on a loop device of their own and
/// the report carries its device counts (every PostgreSQL commit flushes the WAL, so the
/// device sees at least one flush per transaction); without root, a clear error.
#[test]
fn exact_device_io_counts_the_servers_own_loop_device() {
    ensure_servers_installed();
    let dir = tempfile::tempdir().unwrap();
    let out = short(
        &[
            "run",
            "--target",
            "postgresql",
            "--exact-device-io",
            "--format",
            "json",
        ],
        1000,
        100,
        dir.path(),
    );
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"));
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let r = &report.runs[0];
    let s = r.server.as_ref().unwrap();
    assert!(
        s.device_io.starts_with("exact: /dev/loop"),
        "{}",
        s.device_io
    );
    assert!(r.measured("io.total.write_blocks_4k"));
    assert!(r.io.total.write_blocks_4k > 0);
    assert!(
        r.io.total.syncs >= r.results.transactions,
        "{} flushes",
        r.io.total.syncs
    );
    assert_server_gone(dir.path());
}

#[test]
fn fidelity_runs_the_preset_at_the_real_servers_rate() {
    ensure_servers_installed();
    let dir = tempfile::tempdir().unwrap();
    let out = mvcclab(&[
        "fidelity",
        "--workloads",
        "oltp_point_select",
        "--presets",
        "postgres",
        "--table-size",
        "1000",
        "--time",
        "2",
        "--warmup",
        "1",
        "--threads",
        "1",
        "--server-dir",
        dir.path().to_str().unwrap(),
        "--quiet",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fidelity JSON");
    let runs = f["report"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "preset, then real");
    let real_tps = runs[1]["results"]["tps"].as_f64().unwrap();
    let rate = runs[0]["driver"]["rate_tps"].as_f64().unwrap();
    assert!(real_tps > 0.0);
    assert!(
        (rate - real_tps).abs() < 0.01,
        "rate {rate} vs real {real_tps} tps"
    );
    assert_eq!(runs[1]["driver"]["rate_tps"].as_f64().unwrap(), 0.0);
    let preset_tps = runs[0]["results"]["tps"].as_f64().unwrap();
    assert!(
        preset_tps < 1.5 * real_tps,
        "the preset ran at {preset_tps} tps, the server at {real_tps}"
    );
    // The preset's warm-up is paced at the server's warm-up rate, which the server's
    // report records; the server's own warm-up ran unpaced.
    let real_warmup_tps = runs[1]["results"]["warmup"]["tps"].as_f64().unwrap();
    assert!(
        runs[1]["results"]["warmup"]["transactions"]
            .as_u64()
            .unwrap()
            > 0
    );
    let warmup_rate = runs[0]["driver"]["warmup_rate_tps"].as_f64().unwrap();
    assert!(
        (warmup_rate - real_warmup_tps).abs() < 0.01,
        "warm-up rate {warmup_rate} vs real {real_warmup_tps} tps"
    );
    assert!(runs[1]["driver"].get("warmup_rate_tps").is_none());
    let preset_warmup = runs[0]["results"]["warmup"]["transactions"]
        .as_u64()
        .unwrap();
    assert!(
        (preset_warmup as f64) < 1.5 * real_warmup_tps + 10.0,
        "the preset's warm-up ran {preset_warmup} transactions, the server's at {real_warmup_tps} tps"
    );
    let cmds = f["commands"].as_array().unwrap();
    assert!(cmds[0].as_str().unwrap().contains("--rate"), "{cmds:?}");
    assert!(
        cmds[0].as_str().unwrap().contains("--warmup-rate"),
        "{cmds:?}"
    );
    assert!(
        f["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["metric"] == "warm-up transactions"),
        "{}",
        f["rows"]
    );
    assert_server_gone(dir.path());
}
