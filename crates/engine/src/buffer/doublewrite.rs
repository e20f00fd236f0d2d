//! The doublewrite buffer (InnoDB buf0dblwr.cc, MariaDB 10.11; manual "Doublewrite Buffer").
//!
//! Pages flushed from the pool are first written, as whole self-identifying pages, one
//! after another into the doublewrite area (file [`file_ids::DOUBLEWRITE`]) with one
//! sequential write per batch, and the area is synced; only then are the pages written to
//! their home locations, and the home files synced before the area is reused
//! (`buf_dblwr_t::flush_buffered_writes` → `write_completed` → `fil_flush_file_spaces`).
//! A batch holds at most `batch_pages` pages (InnoDB: one doublewrite block,
//! FSP_EXTENT_SIZE = 64 pages of 16 KiB); a larger flush is split into batches.
//!
//! # Invariants
//! 1. No home write of a page precedes the completed sync of the doublewrite copy of the
//!    same batch (the test `doublewrite_copy_is_synced_before_home_writes` checks the trace).
//! 2. The area is reused only after the previous batch's home writes were synced.
//!
//! # Locking
//! One mutex serializes batches (InnoDB keeps two blocks so one can fill while the other
//! flushes; with synchronous flushing one suffices).
//!
//! # Crash safety
//! At a crash, each page is intact either in the area (its checksum matches and names its
//! home) or at home: recovery (`crate::recovery::repair_from_doublewrite`) copies an intact
//! area page over a torn home page before redo.

use crate::device::{file_ids, Vfs};
use crate::page::StorageResult;
use crate::page::{finish_for_write, PageId};
use crate::stats::{enter, Cause, Metric, Stats};
use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The doublewrite area of one storage instance.
pub struct Doublewrite {
    vfs: Arc<Vfs>,
    stats: Arc<Stats>,
    batch_pages: usize,
    lock: Mutex<()>,
}

impl Doublewrite {
    /// The area on `vfs`, in batches of at most `batch_pages` pages.
    ///
    /// Errors: device errors creating the file.
    pub fn new(vfs: Arc<Vfs>, stats: Arc<Stats>, batch_pages: usize) -> StorageResult<Self> {
        vfs.create(file_ids::DOUBLEWRITE)?;
        Ok(Doublewrite {
            vfs,
            stats,
            batch_pages: batch_pages.max(1),
            lock: Mutex::new(()),
        })
    }

    /// Holds the area as a batch would (tests: a write kept in flight).
    #[cfg(test)]
    pub(super) fn hold(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.lock.lock()
    }

    /// Writes `pages` (private copies) through the area: per batch, the copies to the area
    /// (cause `doublewrite`), a sync of the area (cause `doublewrite`), then `home(page,
    /// copy)` for each (the caller's cause), then a sync of the home files touched.
    ///
    /// Errors: device errors; the first one stops the flush.
    pub fn write_through(
        &self,
        pages: &mut [(PageId, Vec<u8>)],
        mut home: impl FnMut(PageId, &mut [u8]) -> StorageResult<()>,
    ) -> StorageResult<()> {
        let _area = self.lock.lock();
        for batch in pages.chunks_mut(self.batch_pages) {
            let page_bytes = batch[0].1.len();
            let mut area = Vec::with_capacity(page_bytes * batch.len());
            for (id, copy) in batch.iter_mut() {
                finish_for_write(copy, *id);
                area.extend_from_slice(copy);
            }
            {
                let _g = enter(Cause::Doublewrite);
                self.vfs.write_at(file_ids::DOUBLEWRITE, 0, &area)?;
                self.vfs.sync(file_ids::DOUBLEWRITE)?;
                self.stats
                    .add(Metric::doublewrite_pages, batch.len() as u64);
                self.stats.add(Metric::doublewrite_batches, 1);
            }
            let mut rels = BTreeSet::new();
            for (id, copy) in batch.iter_mut() {
                home(*id, copy)?;
                rels.insert(id.rel);
            }
            for rel in rels {
                self.vfs.sync(rel)?;
            }
        }
        Ok(())
    }
}
