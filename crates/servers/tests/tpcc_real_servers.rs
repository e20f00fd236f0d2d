//! TPC-C (sysbench-tpcc's statements) on real PostgreSQL 15 and MariaDB 10.11 through the
//! same driver as the presets (issue 30): a small database (2 warehouses, 2 table sets,
//! 200 items, 60 customers per district) loaded with `--fillfactor 75`, checks 1–4 passing
//! before and after 400 transactions of the mix from 3 threads, the fill factor where each
//! server keeps it, and a broken database failing the check.
//!
//! Each server is a managed one (127.0.0.1, a free port, its own folder, stopped by its
//! pid when the target is dropped, also when an assertion fails). Needs PostgreSQL 15 and
//! MariaDB installed (README Set-up).

use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::{open, RealServer, ServerKind, ServerOptions};
use mvcclab_workload::driver::{run, RunControl, RunOptions};
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};

fn opts() -> SysbenchOptions {
    SysbenchOptions {
        tables: 2,
        scale: 2,
        tpcc_items: 200,
        tpcc_customers: 60,
        ..Default::default()
    }
}

fn server(kind: ServerKind) -> Box<dyn RealServer> {
    open(
        kind,
        &ServerOptions {
            url: None,
            managed: ManagedOptions {
                buffer_pool_bytes: 32 << 20,
                ..Default::default()
            },
            fillfactor: Some(75),
        },
    )
    .unwrap_or_else(|e| panic!("starting {} (README Set-up): {e}", kind.name()))
}

/// Loads, checks, runs the mix, checks again; returns the failed checks after breaking
/// nothing (must be empty).
fn load_run_check(s: &dyn RealServer) {
    let name = s.kind().name();
    let o = opts();
    s.as_target()
        .prepare(WorkloadKind::Tpcc, &o, 1)
        .unwrap_or_else(|e| panic!("{name}: prepare: {e}"));
    let before = s.tpcc_check(&o).unwrap();
    assert_eq!(
        before.len(),
        2 * 2 * 4,
        "{name}: 4 checks × 2 warehouses × 2 sets"
    );
    assert!(
        before.iter().all(|c| c.problems.is_empty()),
        "{name}: {before:?}"
    );
    let r = run(
        s.as_target(),
        WorkloadKind::Tpcc,
        &o,
        &RunOptions {
            threads: 3,
            time_s: 0.0,
            events: 400,
            rand_seed: 9,
            rate_tps: 0.0,
            ignore_errors: Default::default(),
        },
        &RunControl::default(),
    )
    .unwrap();
    // Ignored errors restart their event; the script's rollbacks end theirs as done.
    assert_eq!(r.transactions, 400, "{name}: {r:?}");
    for k in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        assert!(
            r.ops_by_kind.get(k).copied().unwrap_or(0) > 0,
            "{name}: no {k}: {r:?}"
        );
    }
    // Errors: the 1 % of new-orders that roll back, and lock conflicts between threads
    // (deadlocks, serialization failures at repeatable read on PostgreSQL).
    assert!(r.errors <= 150, "{name}: {r:?}");
    let after = s.tpcc_check(&o).unwrap();
    let failed: Vec<_> = after.iter().filter(|c| !c.problems.is_empty()).collect();
    assert!(failed.is_empty(), "{name}: {failed:?}");
}

#[test]
fn tpcc_on_real_postgresql_passes_checks_1_to_4_with_fillfactor_75() {
    let s = server(ServerKind::PostgreSql);
    load_run_check(&*s);
    let port = s.managed().expect("managed").port();
    let mut c = postgres::Client::connect(
        &format!("host=127.0.0.1 port={port} user=postgres dbname=sbtest"),
        postgres::NoTls,
    )
    .unwrap();
    // Every table and index of the load carries fillfactor=75: 18 tables, 18 primary
    // keys (history has none: 16) and 12 secondary indexes.
    let n: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace \
             AND relkind IN ('r', 'i') AND reloptions @> ARRAY['fillfactor=75']",
            &[],
        )
        .unwrap()
        .get(0);
    let all: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace \
             AND relkind IN ('r', 'i')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!((n, all), (18 + 16 + 12, 18 + 16 + 12));
    // Break check 1 (w_ytd) of set 1, warehouse 2: the check must see it.
    c.batch_execute("UPDATE warehouse1 SET w_ytd = w_ytd + 0.01 WHERE w_id = 2")
        .unwrap();
    drop(c);
    let failed: Vec<_> = s
        .tpcc_check(&opts())
        .unwrap()
        .into_iter()
        .filter(|c| !c.problems.is_empty())
        .map(|c| (c.check, c.table, c.w_id))
        .collect();
    assert_eq!(failed, vec![(1, 1, 2)]);
}

#[test]
fn tpcc_on_real_mariadb_passes_checks_1_to_4_with_innodb_fill_factor_75() {
    let s = server(ServerKind::MariaDb);
    load_run_check(&*s);
    assert_eq!(
        s.info()
            .settings
            .get("innodb_fill_factor")
            .map(String::as_str),
        Some("75")
    );
}
