//! TPC-H on both presets beside real PostgreSQL 15 and MariaDB 10.11 (issue 28, "Done
//! when"): at SF 0.01 with Q18's quantity lowered so that it returns at least 20 rows,
//! each preset returns exactly the rows of each real engine; Q6 likewise, and Q1 those of
//! the engine it models (the engines print averages differently). Each real
//! engine's plan for Q18 must keep the shape of the EXPLAIN JSON checked in under
//! `crates/workload/plans/`, which is also the shape the preset executes.
//!
//! The servers are managed ones (127.0.0.1, a free port, a scratch folder), stopped by
//! their pid when the test ends or fails. They need PostgreSQL 15 and MariaDB installed
//! (README Set-up).
//!
//! `MVCCLAB_WRITE_PLANS=1 cargo test -p mvcclab-servers --test tpch_real_engines --
//! --ignored write_plans` rewrites the checked-in plans from the servers
//! (`MVCCLAB_PLANS_SF=0.1`: those of SF 0.1).

use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::tpch::TpchServer;
use mvcclab_servers::ServerKind;
use mvcclab_workload::tpch::QueryParams;
use mvcclab_workload::tpch_embedded::{self, TpchEngine};
use mvcclab_workload::tpch_plans::{checked_in, shape_of_mariadb, shape_of_postgresql};
use std::time::Duration;

const SF: f64 = 0.01;
/// Q18's quantity at SF 0.01: 300 returns no row there; 250 returns at least 20.
const Q18_QUANTITY: u32 = 250;

fn params() -> QueryParams {
    QueryParams {
        scale_factor: SF,
        q18_quantity: Some(Q18_QUANTITY),
    }
}

fn server(kind: ServerKind) -> TpchServer {
    let mut s = TpchServer::start(kind, &ManagedOptions::default())
        .unwrap_or_else(|e| panic!("starting {kind:?}: {e}"));
    s.load(SF)
        .unwrap_or_else(|e| panic!("loading {kind:?}: {e}"));
    s
}

fn preset(design: DesignConfig) -> (Database, tpch_embedded::TpchTables) {
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.buffer_pool.frames = 2048;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    let db = Database::open(cfg).unwrap();
    let t = tpch_embedded::load(&db, SF).unwrap();
    (db, t)
}

fn shape(kind: ServerKind, json: &serde_json::Value) -> Vec<String> {
    match kind {
        ServerKind::PostgreSql => shape_of_postgresql(json),
        ServerKind::MariaDb | ServerKind::MyRocks => shape_of_mariadb(json),
    }
    .unwrap()
}

fn engine(kind: ServerKind) -> TpchEngine {
    match kind {
        ServerKind::PostgreSql => TpchEngine::PostgreSql,
        ServerKind::MariaDb | ServerKind::MyRocks => TpchEngine::MariaDb,
    }
}

#[test]
fn q18_q6_and_q1_on_both_presets_return_the_rows_of_the_real_engines() {
    let mut pg = server(ServerKind::PostgreSql);
    let mut my = server(ServerKind::MariaDb);
    let p = params();
    let timeout = Duration::from_secs(300);
    for n in [18, 6, 1] {
        let a = pg.run_query(n, &p, timeout).unwrap();
        let b = my.run_query(n, &p, timeout).unwrap();
        assert!(!a.timed_out && !b.timed_out, "Q{n} timed out");
        if n == 18 {
            assert!(a.rows.len() >= 20, "Q18 returned {} rows", a.rows.len());
        }
        // Q1's averages are printed differently by the two engines (PostgreSQL: numeric
        // division's 16 significant digits; MariaDB: the scale + div_precision_increment),
        // so each preset is held against its own engine there; Q6 and Q18 against both.
        if n != 1 {
            assert_eq!(a.rows, b.rows, "Q{n}: the two real engines differ");
        }
        for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
            let name = design.name.clone();
            let (db, t) = preset(design);
            let r = tpch_embedded::run_query(&db, &t, n, &p).unwrap();
            if n != 1 || name == "postgres" {
                assert_eq!(r.rows, a.rows, "Q{n} on {name} against PostgreSQL");
            }
            if n != 1 || name == "innodb" {
                assert_eq!(r.rows, b.rows, "Q{n} on {name} against MariaDB");
            }
            db.close().unwrap();
        }
    }
    // The plan each real engine chooses keeps the checked-in shape, which the presets run.
    plans_keep_their_checked_in_shapes(&mut pg, &mut my, &p);
    pg.stop().unwrap();
    my.stop().unwrap();
}

/// Each real engine's plan of Q1, Q6 and Q18 at `p.scale_factor` has the shape of the
/// EXPLAIN JSON checked in for that scale factor, and the presets follow it.
fn plans_keep_their_checked_in_shapes(pg: &mut TpchServer, my: &mut TpchServer, p: &QueryParams) {
    let sf = p.scale_factor;
    for (kind, s) in [(ServerKind::PostgreSql, pg), (ServerKind::MariaDb, my)] {
        for n in [1, 6, 18] {
            let now = shape(kind, &s.explain_json(n, p).unwrap());
            let file: serde_json::Value =
                serde_json::from_str(checked_in(engine(kind), n, sf).unwrap()).unwrap();
            assert_eq!(
                now,
                shape(kind, &file),
                "{kind:?}: Q{n}'s plan at SF {sf} changed shape from the checked-in one"
            );
            let preset = tpch_embedded::preset_plan_shape(engine(kind), n, sf).unwrap();
            assert_eq!(
                now, preset,
                "{kind:?}: the preset does not follow Q{n} at SF {sf}"
            );
        }
    }
}

/// At SF 0.1, where both engines plan Q18 otherwise than at SF 0.01: their plans keep the
/// checked-in shapes, and each preset, following its engine's SF 0.1 plan, returns the
/// rows both return with the validation quantity 300. Ignored: the loads take minutes;
/// run with `cargo test --release -p mvcclab-servers --test tpch_real_engines --
/// --ignored sf_0_1`.
#[test]
#[ignore = "loads SF 0.1 into both servers and both presets"]
fn sf_0_1_plans_keep_their_shapes_and_the_presets_return_the_servers_q18_rows() {
    let sf = 0.1;
    let p = QueryParams {
        scale_factor: sf,
        q18_quantity: None,
    };
    let mut pg = TpchServer::start(ServerKind::PostgreSql, &ManagedOptions::default()).unwrap();
    pg.load(sf).unwrap();
    let mut my = TpchServer::start(ServerKind::MariaDb, &ManagedOptions::default()).unwrap();
    my.load(sf).unwrap();
    plans_keep_their_checked_in_shapes(&mut pg, &mut my, &p);
    let timeout = Duration::from_secs(600);
    let a = pg.run_query(18, &p, timeout).unwrap();
    let b = my.run_query(18, &p, timeout).unwrap();
    assert!(!a.timed_out && !b.timed_out);
    assert!(!a.rows.is_empty());
    assert_eq!(a.rows, b.rows, "Q18 at SF 0.1: the two real engines differ");
    pg.stop().unwrap();
    my.stop().unwrap();
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let mut cfg = DatabaseConfig::new(design);
        cfg.storage.buffer_pool.frames = 2048;
        cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
        let db = Database::open(cfg).unwrap();
        let t = tpch_embedded::load(&db, sf).unwrap();
        let r = tpch_embedded::run_query(&db, &t, 18, &p).unwrap();
        assert_eq!(r.rows, a.rows, "Q18 at SF 0.1 on {name}");
        db.close().unwrap();
    }
}

#[test]
fn all_22_queries_run_on_both_real_engines_and_a_timeout_is_reported() {
    let p = params();
    for kind in [ServerKind::PostgreSql, ServerKind::MariaDb] {
        let mut s = server(kind);
        for n in 1..=22 {
            let r = s
                .run_query(n, &p, Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("{kind:?} Q{n}: {e}"));
            assert!(!r.timed_out, "{kind:?} Q{n} timed out at SF 0.01");
        }
        // A 1 ms statement timeout stops Q9 (joins of six tables) and is reported.
        let r = s.run_query(9, &p, Duration::from_millis(1)).unwrap();
        assert!(r.timed_out, "{kind:?}: Q9 finished within 1 ms");
        assert!(r.rows.is_empty());
        s.stop().unwrap();
    }
}

/// Writes each real engine's EXPLAIN JSON of Q1, Q6 and Q18 at `MVCCLAB_PLANS_SF` (default
/// SF 0.01) into crates/workload/plans/, with 8 MiB pools (the experiments' default).
/// `MVCCLAB_PLANS_KINDS` (`postgresql,mariadb` by default) picks the servers.
/// `MVCCLAB_PLANS_LOAD_POOL_MIB` loads MariaDB with a larger buffer pool (an SF 1 load with
/// 8 MiB took more than 45 minutes here), then shrinks it to 8 MiB online (`SET GLOBAL
/// innodb_buffer_pool_size`, dynamic in MariaDB 10.11, buf0buf.cc `buf_pool_t::resize`)
/// before the EXPLAINs, and prints the shapes explained with both sizes.
#[test]
#[ignore = "writes crates/workload/plans/ from the real servers; set MVCCLAB_WRITE_PLANS=1"]
fn write_plans() {
    if std::env::var("MVCCLAB_WRITE_PLANS").as_deref() != Ok("1") {
        return;
    }
    let sf: f64 = std::env::var("MVCCLAB_PLANS_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SF);
    let p = QueryParams {
        scale_factor: sf,
        q18_quantity: if sf == SF { Some(Q18_QUANTITY) } else { None },
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workload/plans");
    let kinds = std::env::var("MVCCLAB_PLANS_KINDS").unwrap_or("postgresql,mariadb".into());
    let load_pool_mib: Option<u64> = std::env::var("MVCCLAB_PLANS_LOAD_POOL_MIB").ok().map(|v| {
        v.parse()
            .expect("MVCCLAB_PLANS_LOAD_POOL_MIB: MiB, a number")
    });
    for kind in [ServerKind::PostgreSql, ServerKind::MariaDb] {
        if !kinds.split(',').any(|k| k == kind.name()) {
            continue;
        }
        let default_pool = ManagedOptions::default().buffer_pool_bytes;
        let mut o = ManagedOptions::default();
        let big_pool = load_pool_mib.filter(|_| kind == ServerKind::MariaDb);
        if let Some(mib) = big_pool {
            o.buffer_pool_bytes = mib << 20;
            // The pool shrinks by whole chunks (128 MiB by default): 1 MiB chunks let it
            // reach 8 MiB.
            o.extra_settings
                .push(("innodb_buffer_pool_chunk_size".into(), "1048576".into()));
        }
        let mut s = TpchServer::start(kind, &o).unwrap();
        let t0 = std::time::Instant::now();
        s.load(sf).unwrap();
        println!(
            "{} SF {sf} loaded in {:.0} s",
            kind.name(),
            t0.elapsed().as_secs_f64()
        );
        if big_pool.is_some() {
            for n in [1, 6, 18] {
                let j = s.explain_json(n, &p).unwrap();
                println!("Q{n} with the load's pool:\n{}", shape(kind, &j).join("\n"));
            }
            s.query_text(&format!(
                "SET GLOBAL innodb_buffer_pool_size = {default_pool}"
            ))
            .unwrap();
            let mut size = 0u64;
            for _ in 0..120 {
                let (rows, _) = s.query_text("SELECT @@innodb_buffer_pool_size").unwrap();
                size = rows[0][0].parse().unwrap();
                if size == default_pool {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            println!("innodb_buffer_pool_size now {size} bytes");
        }
        for n in [1, 6, 18] {
            let j = s.explain_json(n, &p).unwrap();
            let path = dir.join(format!("{}-q{n}-sf{sf}.json", kind.name()));
            std::fs::write(&path, serde_json::to_string_pretty(&j).unwrap() + "\n").unwrap();
            println!("{}:\n{}", path.display(), shape(kind, &j).join("\n"));
        }
        s.stop().unwrap();
    }
}

/// docs/benchmarks.md "Sequential scan": `SELECT count(*) FROM lineitem` on real
/// PostgreSQL (`max_parallel_workers_per_gather` = 0, as in every TPC-H run here) beside a
/// sequential scan counting the same rows on each preset (`Transaction::seq_scan_columns`
/// with no column, as count(*) deforms none: the heap through the bulk-read ring / the
/// clustered index leaf by leaf), warm, on an
/// unthrottled in-memory device (presets) and the machine's storage (the server), with
/// 128 MiB pools so that the table fits. A recorded figure, not a test: it prints the
/// median of five runs and asserts only the counts. Run with `cargo test --release -p
/// mvcclab-servers --test tpch_real_engines -- --ignored --nocapture
/// seq_scan_figure` (`MVCCLAB_SCAN_SF`, default 0.1).
#[test]
#[ignore = "a recorded figure (docs/benchmarks.md), release build"]
fn seq_scan_figure() {
    let sf: f64 = std::env::var("MVCCLAB_SCAN_SF")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.1);
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let mut pg = TpchServer::start(
        ServerKind::PostgreSql,
        &ManagedOptions {
            buffer_pool_bytes: 128 << 20,
            ..Default::default()
        },
    )
    .unwrap();
    pg.load(sf).unwrap();
    let sql = "SELECT count(*) FROM lineitem";
    let (rows, _) = pg.query_text(sql).unwrap();
    let n: u64 = rows[0][0].parse().unwrap();
    let us = median((0..5).map(|_| pg.query_text(sql).unwrap().1).collect());
    println!(
        "real:postgresql SF {sf}: {n} rows in {us} µs: {:.0} rows/s",
        n as f64 * 1e6 / us as f64
    );
    pg.stop().unwrap();
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let page = design.page_size.bytes();
        let mut cfg = DatabaseConfig::new(design);
        cfg.storage.buffer_pool.frames = (128 << 20) / page;
        let db = Database::open(cfg).unwrap();
        let t = tpch_embedded::load(&db, sf).unwrap();
        let lineitem = t.id(mvcclab_workload::tpch::TpchTable::LineItem);
        let count = || {
            let mut tx = db.begin();
            let mut k = 0u64;
            let t0 = std::time::Instant::now();
            // count(*) references no column: none is decoded (Projection, no columns).
            tx.seq_scan_columns(lineitem, &[], &mut |_| {
                k += 1;
                Ok(true)
            })
            .unwrap();
            let us = t0.elapsed().as_micros() as u64;
            tx.commit().unwrap();
            (k, us)
        };
        assert_eq!(count().0, n, "{name}");
        let us = median((0..5).map(|_| count().1).collect());
        println!(
            "{name} SF {sf}: {n} rows in {us} µs: {:.0} rows/s",
            n as f64 * 1e6 / us as f64
        );
        db.close().unwrap();
    }
}
