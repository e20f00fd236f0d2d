//! Page guards: the only way to touch page bytes in the pool (BusTub `page_guard.h`).
//!
//! A guard holds a pin (the frame cannot be evicted) and the frame's content lock, shared
//! for [`ReadPageGuard`], exclusive for [`WritePageGuard`]. Dropping it releases the lock
//! first, then the pin (PostgreSQL `UnlockReleaseBuffer`).

use super::pool::{BufferPool, Frame};
use super::FrameId;
use crate::page::{page_lsn, Lsn, PageId};
use parking_lot::{RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::Ordering;

/// Shared access to a pinned page.
pub struct ReadPageGuard<'a> {
    pub(super) pool: &'a BufferPool,
    pub(super) frame: FrameId,
    pub(super) id: PageId,
    pub(super) hit: bool,
    pub(super) data: Option<RwLockReadGuard<'a, Box<[u8]>>>,
}

impl ReadPageGuard<'_> {
    /// True when the page was found in the pool (a buffer hit), false when it was read.
    pub fn was_hit(&self) -> bool {
        self.hit
    }
    /// The page's identity.
    pub fn page_id(&self) -> PageId {
        self.id
    }
    /// The page bytes (one page).
    pub fn data(&self) -> &[u8] {
        self.data.as_ref().expect("held until drop")
    }
    /// The page LSN.
    pub fn page_lsn(&self) -> Lsn {
        page_lsn(self.data())
    }
}

impl<'a> ReadPageGuard<'a> {
    /// A second pin of this guard's frame, without its content lock, that outlives the
    /// guard: the page stays in the pool (no eviction, no LRU batch takes it) until the
    /// [`PageFix`] drops, while writers can still latch it. InnoDB's buffer-fix
    /// (`buf_page_t::fix`) as purge keeps it on each undo page of a batch (trx0purge.cc
    /// `purge_sys_t::get_page` → `buf_pool_t::page_fix`, released by `batch_cleanup`).
    pub fn fix(&self) -> PageFix<'a> {
        self.pool.pin_again(self.frame);
        PageFix {
            pool: self.pool,
            frame: self.frame,
            id: self.id,
        }
    }
}

impl Drop for ReadPageGuard<'_> {
    fn drop(&mut self) {
        self.data.take();
        self.pool.unpin(self.frame);
    }
}

/// A pin of a page without its content lock ([`ReadPageGuard::fix`]): the page cannot be
/// evicted until this drops. Its bytes are reached through a guard taken again.
pub struct PageFix<'a> {
    pool: &'a BufferPool,
    frame: FrameId,
    id: PageId,
}

impl PageFix<'_> {
    /// The fixed page.
    pub fn page_id(&self) -> PageId {
        self.id
    }
}

impl Drop for PageFix<'_> {
    fn drop(&mut self) {
        self.pool.unpin(self.frame);
    }
}

/// Exclusive access to a pinned page. Mutable access marks the page dirty
/// (PostgreSQL `MarkBufferDirty`).
pub struct WritePageGuard<'a> {
    pub(super) pool: &'a BufferPool,
    pub(super) frame: FrameId,
    pub(super) id: PageId,
    pub(super) hit: bool,
    pub(super) data: Option<RwLockWriteGuard<'a, Box<[u8]>>>,
}

impl WritePageGuard<'_> {
    /// True when the page was found in the pool (a buffer hit), false when it was read or
    /// created.
    pub fn was_hit(&self) -> bool {
        self.hit
    }
    /// Pins on the frame, this guard's included: 1 means no one else holds the page
    /// (PostgreSQL's cleanup-lock condition, bufmgr.c `ConditionalLockBufferForCleanup`).
    pub fn pin_count(&self) -> u32 {
        self.frame_ref().pins.load(Ordering::Acquire)
    }
    /// The page's identity.
    pub fn page_id(&self) -> PageId {
        self.id
    }
    /// The page bytes (one page).
    pub fn data(&self) -> &[u8] {
        self.data.as_ref().expect("held until drop")
    }
    /// The page bytes for change; marks the page dirty.
    pub fn data_mut(&mut self) -> &mut [u8] {
        if !self.frame_ref().dirty.swap(true, Ordering::AcqRel) {
            // bufmgr.c `MarkBufferDirty`: dirtying a clean buffer costs vacuum 20.
            super::vacuum_cost::charge(super::vacuum_cost::Charge::Dirty);
        }
        self.data.as_mut().expect("held until drop")
    }
    /// The page LSN.
    pub fn page_lsn(&self) -> Lsn {
        page_lsn(self.data())
    }

    pub(super) fn frame_ref(&self) -> &Frame {
        self.pool.frame(self.frame)
    }

    /// Records that a WAL record ending at `lsn` changed this page: the frame's oldest
    /// unflushed change (`rec_lsn`, InnoDB's `oldest_modification`) is set if unset.
    /// Notes that a WAL record rebuilding the whole page (a `will_init` block) was logged
    /// for it: its next write may skip the doublewrite area (the frame's `reinit`).
    pub(crate) fn note_reinit(&self) {
        self.frame_ref().reinit.store(true, Ordering::Release);
    }

    pub(crate) fn note_logged(&self, lsn: Lsn) {
        let _ = self.frame_ref().rec_lsn.compare_exchange(
            0,
            lsn.0,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }
}

impl Drop for WritePageGuard<'_> {
    fn drop(&mut self) {
        self.data.take();
        self.pool.unpin(self.frame);
    }
}
