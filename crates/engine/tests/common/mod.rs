//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

use mvcclab_engine::buffer::{
    log_change, BufferPoolConfig, PageCleanerConfig, ReplacerConfig, WritePageGuard,
};
use mvcclab_engine::page::{set_hole, PAGE_HEADER_BYTES};
use mvcclab_engine::storage::{CheckpointConfig, StorageConfig};
use mvcclab_engine::wal::{rmgr, Lsn, RecordBuilder};
use mvcclab_engine::Storage;

/// A configuration with no background threads and `frames` frames.
pub fn quiet_config(frames: usize) -> StorageConfig {
    StorageConfig {
        buffer_pool: BufferPoolConfig {
            frames,
            replacer: ReplacerConfig::ClockSweep,
            page_cleaner: PageCleanerConfig {
                enabled: false,
                ..Default::default()
            },
        },
        checkpoint: CheckpointConfig {
            interval_ms: None,
            wal_bytes: None,
        },
        wal_writer_interval_ms: None,
        ..Default::default()
    }
}

/// Fills the page outside a 64..len-64 hole with `v` and WAL-logs it.
pub fn put(s: &Storage, g: &mut WritePageGuard<'_>, v: u8) -> Lsn {
    let p = g.data_mut();
    let n = p.len();
    p[PAGE_HEADER_BYTES..64].fill(v);
    p[n - 64..].fill(v);
    set_hole(p, 64, (n - 64) as u16);
    let rec = RecordBuilder::new(rmgr::TEST, 0).block(g.page_id(), false, &[v]);
    log_change(s.wal(), &rec, &mut [g]).unwrap()
}

/// The byte `put` wrote.
pub fn value(p: &[u8]) -> u8 {
    p[PAGE_HEADER_BYTES]
}
