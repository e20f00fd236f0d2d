//! TPC-C (sysbench-tpcc) on both presets: a small database (2 warehouses, 2 table sets,
//! 200 items, 60 customers per district) loaded, 600 transactions of the mix from 3
//! threads, then `tpcc_check.lua`'s consistency checks 1–4 pass; a check that is fed a
//! broken database fails. The script's `SELECT ... FOR UPDATE` reads lock rows: on the
//! postgres preset each is a Heap/LOCK WAL record, as in PostgreSQL.

use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_workload::driver::{run, RunControl, RunOptions, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::sync::Arc;

fn target(design: DesignConfig) -> Embedded {
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.buffer_pool.frames = 1024;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.vacuum.naptime_ms = 200;
    Embedded::new(Arc::new(Database::open(cfg).unwrap()))
}

fn opts() -> SysbenchOptions {
    SysbenchOptions {
        tables: 2,
        scale: 2,
        tpcc_items: 200,
        tpcc_customers: 60,
        ..Default::default()
    }
}

#[test]
fn tpcc_runs_the_mix_and_passes_checks_1_to_4_on_both_presets() {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let t = target(design);
        let o = opts();
        t.prepare(WorkloadKind::Tpcc, &o, 1).unwrap();
        let before = t.tpcc_check().unwrap();
        assert_eq!(
            before.len(),
            2 * 2 * 4,
            "{name}: 4 checks × 2 warehouses × 2 sets"
        );
        assert!(
            before.iter().all(|c| c.problems.is_empty()),
            "{name}: {before:?}"
        );
        let heap_locks = |t: &Embedded| {
            t.database()
                .wal_record_types()
                .get("Heap/LOCK")
                .map_or(0, |c| c.records)
        };
        let locks_before = heap_locks(&t);
        let r = run(
            &t,
            WorkloadKind::Tpcc,
            &o,
            &RunOptions {
                threads: 3,
                time_s: 0.0,
                events: 600,
                rand_seed: 9,
                rate_tps: 0.0,
                ignore_errors: Default::default(),
            },
            &RunControl::default(),
        )
        .unwrap();
        // Ignored errors restart their event (sysbench.lua `thread_run`); the script's
        // rollbacks end theirs as done (tpcc_run.lua `new_order`).
        assert_eq!(r.transactions, 600, "{name}: {r:?}");
        assert_eq!(
            r.errors,
            r.errors_by_kind.values().sum::<u64>(),
            "{name}: {r:?}"
        );
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
        // Errors: the 1 % of new-orders that roll back, and conflicts between threads.
        assert!(r.errors <= 200, "{name}: {:?}", r.error_samples);
        assert!(
            r.error_samples
                .iter()
                .all(|e| !e.contains("new_order: new_order")),
            "{name}: the operation's name once: {:?}",
            r.error_samples
        );
        if name == "postgres" {
            // heap_lock_tuple: district and ~10 stock rows per new-order, a customer per
            // payment, each a Heap/LOCK record.
            let new_orders = r.ops_by_kind.get("new_order").copied().unwrap_or(0);
            assert!(
                heap_locks(&t) - locks_before >= new_orders,
                "{name}: {} Heap/LOCK records for {new_orders} new-orders",
                heap_locks(&t) - locks_before
            );
        }
        let after = t.tpcc_check().unwrap();
        let failed: Vec<_> = after.iter().filter(|c| !c.problems.is_empty()).collect();
        assert!(failed.is_empty(), "{name}: {failed:?}");

        // Break check 1 and 4: the check must see it.
        let db = t.database();
        let w = db.table_id("warehouse1").unwrap();
        let orders = db.table_id("orders2").unwrap();
        let mut tx = db.begin();
        tx.update(
            w,
            &[Value::SmallInt(1)],
            &[Assign::AddDecimal(8, "0.01".parse().unwrap())],
        )
        .unwrap();
        tx.update(
            orders,
            &[Value::SmallInt(2), Value::TinyInt(3), Value::Integer(1)],
            &[Assign::Add(6, 1)],
        )
        .unwrap();
        tx.commit().unwrap();
        let broken = t.tpcc_check().unwrap();
        let failed: Vec<_> = broken
            .iter()
            .filter(|c| !c.problems.is_empty())
            .map(|c| (c.check, c.table, c.w_id))
            .collect();
        assert_eq!(failed, vec![(1, 1, 1), (4, 2, 2)], "{name}: {broken:?}");
    }
}
