//! The emulated OS page cache under the buffer pool: PostgreSQL's double buffering.

mod common;
use common::*;
use mvcclab_engine::device::OsCacheConfig;
use mvcclab_engine::page::PageId;
use mvcclab_engine::stats::{enter, Cause};
use mvcclab_engine::Storage;

fn run(os_cache_bytes: u64) -> (u64, u64, u64) {
    let s = Storage::open(mvcclab_engine::StorageConfig {
        os_cache: OsCacheConfig {
            size_bytes: os_cache_bytes,
            dirty_background_pct: 10,
            // Exact block counts of the rules below, without readahead's extra blocks.
            max_readahead_blocks: 0,
            ..Default::default()
        },
        ..quiet_config(8)
    })
    .unwrap();
    let rel = s.store().create_relation().unwrap();
    let ids: Vec<PageId> = (0..32u8)
        .map(|v| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, v);
            g.page_id()
        })
        .collect();
    s.checkpoint().unwrap();
    let before = s.snapshot();
    {
        let _g = enter(Cause::PointSelect);
        for _ in 0..3 {
            for (v, &id) in ids.iter().enumerate() {
                assert_eq!(value(s.pool().fetch_read(id).unwrap().data()), v as u8);
            }
        }
    }
    let d = s
        .snapshot()
        .delta(&before)
        .counters
        .cause(Cause::PointSelect);
    (d.buffer_misses, d.read_blocks_4k, d.os_cache_hit_blocks_4k)
}

#[test]
fn pool_misses_are_served_by_the_os_cache_without_device_reads() {
    let (misses, device_blocks, _) = run(0);
    assert!(
        misses >= 32 * 3 - 8,
        "an 8-frame pool cycling 32 pages misses: {misses}"
    );
    assert_eq!(
        device_blocks,
        2 * misses,
        "direct I/O: every miss reads 2 blocks"
    );
    let (misses_c, device_blocks_c, hits_c) = run(1 << 20);
    assert_eq!(misses_c, misses, "the pool behaves the same");
    assert_eq!(
        device_blocks_c, 0,
        "the 1 MiB OS cache holds all 32 pages written through it"
    );
    assert_eq!(hits_c, 2 * misses_c);
}

#[test]
fn os_cache_writes_reach_the_device_at_the_checkpoint_fsync() {
    let s = Storage::open(mvcclab_engine::StorageConfig {
        os_cache: OsCacheConfig {
            size_bytes: 4 << 20,
            dirty_background_pct: 50,
            ..Default::default()
        },
        ..quiet_config(64)
    })
    .unwrap();
    let rel = s.store().create_relation().unwrap();
    for v in 0..16u8 {
        let _g = enter(Cause::Insert);
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    let _ = s.pool().clean_round(&Default::default());
    s.checkpoint().unwrap();
    let snap = s.snapshot();
    let cp = snap.counters.cause(Cause::Checkpointer);
    assert_eq!(cp.buffer_pages_written, 16);
    assert!(cp.write_blocks_4k >= 32, "{cp:?}");
    assert_eq!(
        snap.os_cache.unwrap().dirty_blocks_4k,
        0,
        "the checkpoint's fsyncs drained the cache"
    );
}
