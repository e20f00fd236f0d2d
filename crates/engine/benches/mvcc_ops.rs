//! Point lookups, updates and range scans through the engine API with a warm pool, for
//! each design.
//!
//! Run: `cargo bench -p mvcclab-engine --bench mvcc_ops`. Figures go to
//! docs/benchmarks.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{TableDef, Value};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::StorageConfig;
use std::ops::Bound;

const ROWS: i32 = 10_000;

fn setup(design: DesignConfig) -> (Database, TableId) {
    let mut cfg = DatabaseConfig::new(design);
    let quiet = StorageConfig::without_background(8192); // 64 MiB at 8 KiB: everything fits
    cfg.storage.buffer_pool.frames = quiet.buffer_pool.frames;
    cfg.storage.buffer_pool.page_cleaner = quiet.buffer_pool.page_cleaner;
    cfg.storage.checkpoint = quiet.checkpoint;
    cfg.storage.wal_writer_interval_ms = None;
    cfg.vacuum.autovacuum = false;
    let db = Database::open(cfg).unwrap();
    let def = TableDef::sbtest(1);
    let t = db.create_table(def).unwrap();
    let mut tx = db.begin();
    for id in 0..ROWS {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::Integer(id),
                Value::Text(format!("{id:0>119}")),
                Value::Text("p".into()),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    (db, t)
}

fn ops(c: &mut Criterion) {
    for design in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = design.name.clone();
        let (db, t) = setup(design);
        let mut g = c.benchmark_group(format!("mvcc_ops/{name}"));
        let mut x: u64 = 1;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % ROWS as u64) as i32
        };
        g.bench_function("point_select", |b| {
            b.iter(|| {
                let mut tx = db.begin();
                black_box(tx.get(t, &[Value::Integer(next())]).unwrap());
                tx.commit().unwrap();
            })
        });
        g.bench_function("update_non_index", |b| {
            b.iter(|| {
                let mut tx = db.begin();
                tx.update(
                    t,
                    &[Value::Integer(next())],
                    &[Assign::Set(2, Value::Text("x".repeat(119)))],
                )
                .unwrap();
                tx.commit().unwrap();
            })
        });
        g.bench_function("update_index", |b| {
            b.iter(|| {
                let mut tx = db.begin();
                tx.update(t, &[Value::Integer(next())], &[Assign::Add(1, 1)])
                    .unwrap();
                tx.commit().unwrap();
            })
        });
        // The update benches leave dead versions and index entries behind; measure scans on
        // a vacuumed table (mvcclab has no index kill bits to skip dead entries yet).
        db.gc(t).unwrap();
        g.bench_function("range_scan_100", |b| {
            b.iter(|| {
                let lo = next().min(ROWS - 101);
                let mut tx = db.begin();
                let rows = tx
                    .scan(
                        t,
                        Bound::Included(&[Value::Integer(lo)]),
                        Bound::Unbounded,
                        ScanDirection::Forward,
                        100,
                    )
                    .unwrap();
                assert_eq!(rows.len(), 100);
                tx.commit().unwrap();
            })
        });
        g.finish();
    }
}

criterion_group!(benches, ops);
criterion_main!(benches);
