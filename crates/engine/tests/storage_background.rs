//! Background threads: the checkpointer (by WAL volume), the page cleaner and the WAL
//! writer run on their own and count to their own causes; compression totals.

mod common;
use common::*;
use mvcclab_engine::buffer::PageCleanerConfig;
use mvcclab_engine::device::{Compression, NvmeConfig};
use mvcclab_engine::stats::{enter, Cause};
use mvcclab_engine::storage::CheckpointConfig;
use mvcclab_engine::Storage;
use std::time::{Duration, Instant};

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn background_components_run_and_count_to_their_causes() {
    let mut cfg = quiet_config(32);
    cfg.checkpoint = CheckpointConfig {
        interval_ms: None,
        wal_bytes: Some(16 << 10),
    };
    cfg.buffer_pool.page_cleaner = PageCleanerConfig {
        enabled: true,
        interval_ms: 5,
        lru_scan_pages: 32,
        lru_multiplier: 2.0,
        max_dirty_pct: Some(10),
        free_target: None,
        ..Default::default()
    };
    cfg.wal_writer_interval_ms = Some(5);
    let s = Storage::open(cfg).unwrap();
    let rel = s.store().create_relation().unwrap();
    {
        let _g = enter(Cause::Insert);
        for v in 0..300u32 {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, v as u8);
        }
    }
    wait_for("a checkpoint requested by WAL volume", || {
        s.snapshot()
            .counters
            .cause(Cause::Checkpointer)
            .checkpoints_requested
            > 0
    });
    wait_for("the page cleaner", || {
        s.snapshot()
            .counters
            .cause(Cause::PageCleaner)
            .buffer_pages_written
            > 0
    });
    {
        let _g = enter(Cause::Update);
        let mut g = s
            .pool()
            .fetch_write(mvcclab_engine::page::PageId::new(rel, 299))
            .unwrap();
        put(&s, &mut g, 1);
    }
    wait_for("the WAL writer", || {
        s.snapshot().counters.cause(Cause::WalWriter).wal_syncs > 0
    });
    assert!(s.background_error().is_none());
    let c = s.snapshot().counters;
    assert_eq!(c.cause(Cause::Checkpointer).checkpoints_timed, 0);
    assert_eq!(
        c.cause(Cause::Update).wal_syncs,
        0,
        "the update itself did not flush"
    );
}

#[test]
fn compression_totals_follow_page_contents() {
    let mut cfg = quiet_config(16);
    cfg.nvme = NvmeConfig {
        compression: Compression::Zstd { level: 3 },
        ..Default::default()
    };
    let s = Storage::open(cfg).unwrap();
    let rel = s.store().create_relation().unwrap();
    for v in 0..32u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    s.checkpoint().unwrap();
    let t = s.snapshot().compression;
    // 32 pages of 8 KiB plus WAL and control file, mostly zeros: highly compressible.
    assert!(t.logical_bytes >= 32 * 8192, "{t:?}");
    assert!(t.ratio > 10.0, "{t:?}");
    let c = s.snapshot().counters.total();
    assert!(
        c.write_physical_bytes > 0 && c.write_physical_bytes * 10 < c.write_bytes,
        "{c:?}"
    );
}
