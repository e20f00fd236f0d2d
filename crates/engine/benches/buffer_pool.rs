//! Buffer-pool hit path and the cost of accounting.
//!
//! Run: `cargo bench -p mvcclab-engine --bench buffer_pool`. Figures go to
//! docs/benchmarks.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use mvcclab_engine::buffer::ReplacerConfig;
use mvcclab_engine::device::{Device, MemDevice, Nvme, NvmeConfig, Throttle, ThrottleConfig};
use mvcclab_engine::page::PageId;
use mvcclab_engine::stats::{Metric, Stats};
use mvcclab_engine::{Storage, StorageConfig};
use std::sync::Arc;

fn storage(replacer: ReplacerConfig) -> (Storage, Vec<PageId>) {
    let mut cfg = StorageConfig::without_background(1024);
    cfg.buffer_pool.replacer = replacer;
    let s = Storage::open(cfg).unwrap();
    let rel = s.store().create_relation().unwrap();
    let ids = (0..512)
        .map(|_| s.pool().new_page(rel).unwrap().page_id())
        .collect();
    (s, ids)
}

fn hit_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool_hit");
    for (name, replacer) in [
        ("clock_sweep", ReplacerConfig::ClockSweep),
        (
            "lru_midpoint",
            ReplacerConfig::LruMidpoint {
                old_pct: 37,
                old_blocks_time_ms: 0,
                old_min_len: 64,
            },
        ),
    ] {
        let (s, ids) = storage(replacer);
        let mut i = 0usize;
        g.bench_function(format!("fetch_read/{name}"), |b| {
            b.iter(|| {
                i = (i + 97) % ids.len();
                let guard = s.pool().fetch_read(ids[i]).unwrap();
                black_box(guard.data()[40]);
            })
        });
        g.bench_function(format!("fetch_write/{name}"), |b| {
            b.iter(|| {
                i = (i + 97) % ids.len();
                let mut guard = s.pool().fetch_write(ids[i]).unwrap();
                guard.data_mut()[40] ^= 1;
            })
        });
    }
    g.finish();
}

fn accounting(c: &mut Criterion) {
    let mut g = c.benchmark_group("accounting");
    let stats = Stats::new();
    g.bench_function("stats_add", |b| {
        b.iter(|| stats.add(black_box(Metric::read_blocks_4k), 2))
    });
    let raw = MemDevice::new();
    raw.create(1).unwrap();
    let nvme = Nvme::new(
        Box::new(MemDevice::new()),
        &NvmeConfig::default(),
        Arc::new(Stats::new()),
    )
    .unwrap();
    nvme.create(1).unwrap();
    let page = vec![7u8; 8192];
    g.bench_function("write_8k/raw_mem_device", |b| {
        b.iter(|| raw.write_at(1, 0, black_box(&page)).unwrap())
    });
    g.bench_function("write_8k/accounted_nvme", |b| {
        b.iter(|| nvme.write_at(1, 0, black_box(&page)).unwrap())
    });
    let lz4 = Nvme::new(
        Box::new(MemDevice::new()),
        &NvmeConfig {
            compression: mvcclab_engine::device::Compression::Lz4,
            ..Default::default()
        },
        Arc::new(Stats::new()),
    )
    .unwrap();
    lz4.create(1).unwrap();
    g.bench_function("write_8k/accounted_nvme_lz4_model", |b| {
        b.iter(|| lz4.write_at(1, 0, black_box(&page)).unwrap())
    });
    g.finish();
}

/// Service time of one request on a device with a fixed latency: how close the throttle's
/// wait comes to the latency it models (the figures in docs/benchmarks.md).
fn throttle(c: &mut Criterion) {
    let mut g = c.benchmark_group("throttle_serve");
    for latency_us in [20u64, 75, 200] {
        let t = Throttle::new(&ThrottleConfig {
            latency_us: Some(latency_us),
            ..Default::default()
        })
        .unwrap();
        g.bench_function(format!("latency_{latency_us}us"), |b| {
            b.iter(|| t.serve(false, 4096, 1))
        });
    }
    g.finish();
}

criterion_group!(benches, hit_path, accounting, throttle);
criterion_main!(benches);
