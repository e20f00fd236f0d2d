//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

use mvcclab_engine::buffer::WritePageGuard;
use mvcclab_engine::storage::StorageConfig;
use mvcclab_engine::testkit::{fill_and_log, filled_value};
use mvcclab_engine::wal::Lsn;
use mvcclab_engine::Storage;

/// A configuration with no background threads and `frames` frames.
pub fn quiet_config(frames: usize) -> StorageConfig {
    StorageConfig::without_background(frames)
}

/// Fills the page with `v` (outside its hole) and WAL-logs it.
pub fn put(s: &Storage, g: &mut WritePageGuard<'_>, v: u8) -> Lsn {
    fill_and_log(s.wal(), g, v, false).unwrap()
}

/// The byte `put` wrote.
pub fn value(p: &[u8]) -> u8 {
    filled_value(p)
}
