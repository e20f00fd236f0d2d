//! The buffer pool: a fixed number of frames caching pages, with pins kept apart from
//! content locks, two replacement policies, dirty tracking, the WAL-before-data rule, the
//! doublewrite write path and a background writer / page cleaner, which for InnoDB keeps a
//! free-page target ([`FreeTarget`], innodb_lru_scan_depth: MariaDB 10.11 buf0flu.cc
//! `buf_flush_page_cleaner`, `buf_flush_LRU_list_batch`).
//!
//! Follows PostgreSQL src/backend/storage/buffer/README (REL_15) for pins and locks, and
//! bufmgr.c `BufferAlloc` / `FlushBuffer` for eviction; the replacers are PostgreSQL's
//! clock sweep ([`ClockSweep`], freelist.c) and InnoDB's LRU with midpoint insertion
//! ([`LruMidpoint`], buf0lru.cc).
//!
//! # Access rules (after PostgreSQL's buffer README)
//! 1. Page bytes are touched only through a [`ReadPageGuard`] (pin + shared content lock)
//!    or a [`WritePageGuard`] (pin + exclusive content lock). A pin alone keeps the frame
//!    from being evicted; the content lock keeps the bytes from changing under a reader.
//! 2. Changing a page needs the exclusive lock; `WritePageGuard::data_mut` marks it dirty.
//!    A WAL-logged change follows the recipe in `wal` and goes through [`log_change`].
//! 3. Writing a page out needs only a pin and the shared lock: the writer marks the frame
//!    as being written (PostgreSQL BM_IO_IN_PROGRESS), copies the page, clears the dirty
//!    flag under that lock, writes the copy, then clears the mark; a change made after the
//!    copy sets the dirty flag again, so the page is written again later. A frame already
//!    being written is passed over (it stays dirty): two copies of one page are never in
//!    flight at once, so an older copy cannot land after a newer one.
//! 4. WAL-before-data: before a copy is written, the WAL is flushed up to the copy's page
//!    LSN (bufmgr.c `FlushBuffer` → `XLogFlush`).
//! 5. With the doublewrite buffer on, copies reach their home location only after their
//!    doublewrite copies are synced ([`Doublewrite`]).
//! 6. A checkpoint's flush ([`BufferPool::flush_all`]) writes every dirty page and waits for
//!    the copies other threads (an evictor, the page cleaner) are still writing, writing
//!    their pages again if they changed meanwhile (`SyncOneBuffer` → `FlushBuffer` waits in
//!    `StartBufferIO`): once it returns, every change made before it started is on the
//!    device, as the checkpoint's redo pointer assumes.
//!
//! # Invariants
//! 1. A frame maps at most one page, and a page at most one frame (the page table is the
//!    authority; a frame's own page field is a hint checked under the partition lock).
//! 2. A pin count is raised only under the page's partition lock (or by claiming an
//!    unpinned, unmapped frame 0 → 1); so an evictor that sees 0 pins under that lock
//!    owns the frame.
//! 3. A frame is evicted only when it is unpinned by others and clean at the final check
//!    under the partition lock.
//! 4. With a free-page target, the page cleaner's LRU batch only evicts clean frames (a dirty
//!    one is written and stays); it runs when the LRU list is longer than
//!    [`BUF_LRU_MIN_LEN`] and fewer than half the target are free, and stops at the target.
//!    Without a target (PostgreSQL) the page cleaner never evicts.
//! 5. A thread reading through a ring ([`strategy::with_ring`], VACUUM's `BAS_VACUUM`) takes
//!    its misses' frames from the ring first and raises a hit page's usage count only to 1;
//!    a ring frame is reused by the same eviction path as a victim (written first when
//!    dirty).
//! 6. A thread running autovacuum's work with the cost-based delay
//!    ([`vacuum_cost::with_cost_delay`]) is charged for each hit, miss and clean page it
//!    makes dirty, and sleeps at its delay points, never while it holds a page latch.
//!
//! # Locking
//! Lock order: page-table partition → frame content lock; never two partitions at once;
//! the replacer's own lock (LRU), the free-list lock and the page cleaner's bell are leaves
//! (a foreground thread rings the bell after releasing the free list). No partition lock
//! is held across I/O. A thread may hold content locks of several pages only when it follows a
//! consistent order (the B+tree's, later).
//!
//! # Crash safety
//! The pool holds no durable state. What reaches the device is whole page copies with
//! checksums, after the WAL covering them is durable; a torn write is repaired from a
//! full-page image in the WAL or from the doublewrite area by recovery (`crate::recovery`).
//! Changes made without WAL (hint bits, index kill bits) go through [`mark_dirty_hint`],
//! which logs a full-page image at a page's first change since the checkpoint when
//! full-page writes are on, so that a torn write of such a page is repairable too.

pub mod bgwriter;
mod clock_sweep;
mod doublewrite;
mod guard;
mod lru_midpoint;
mod pool;
pub mod read_ahead;
mod replacer;
pub mod strategy;
pub mod vacuum_cost;

pub use clock_sweep::{ClockSweep, BM_MAX_USAGE_COUNT};
pub use doublewrite::Doublewrite;
pub use guard::{PageFix, ReadPageGuard, WritePageGuard};
pub use lru_midpoint::LruMidpoint;
pub use pool::{
    release_held, BufferCacheEntry, BufferPool, BufferPoolConfig, DescentPins, FlushNeighbors,
    FreeTarget, PageCleanerConfig, PageTypeIo, PoolState, RelIo, BUF_LRU_MIN_LEN,
    BUF_LRU_OLD_MIN_LEN, LRU_FLUSH_MAX_PAGES,
};
pub use replacer::{FrameId, Replacer, ReplacerConfig, Touch};

use crate::page::StorageResult;
use crate::wal::{Lsn, RecordBuilder, Wal};

/// Inserts WAL record `rec` for the pages held by `guards` (block `i` of the record is
/// `guards[i]`), stamps the record's end LSN into every page, marks them dirty and notes
/// the oldest unflushed change of each frame. Step 3 of the WAL coding recipe.
///
/// Panics if the guards do not match the registered blocks in number and order (a caller
/// bug, not an input error). Errors: as [`Wal::insert`].
pub fn log_change(
    wal: &Wal,
    rec: &RecordBuilder,
    guards: &mut [&mut WritePageGuard<'_>],
) -> StorageResult<Lsn> {
    assert!(
        rec.pages().eq(guards.iter().map(|g| g.page_id())),
        "log_change: guards must match the record's registered blocks"
    );
    let lsn = {
        let mut pages: Vec<&mut [u8]> = guards.iter_mut().map(|g| g.data_mut()).collect();
        wal.insert(rec, &mut pages)?
    };
    for (g, (_, will_init, _)) in guards.iter().zip(&rec.blocks) {
        g.note_logged(lsn);
        if *will_init {
            g.note_reinit();
        }
    }
    Ok(lsn)
}

/// Finishes a change made to `guard`'s page without WAL (hint bits, index kill bits):
/// logs a full-page image when it is the page's first change since the checkpoint and
/// full-page writes are on ([`Wal::insert_hint_image`]; bufmgr.c `MarkBufferDirtyHint`
/// with checksums on). The page is already dirty (`data_mut`).
///
/// Errors: as [`Wal::insert`].
pub fn mark_dirty_hint(wal: &Wal, guard: &mut WritePageGuard<'_>) -> StorageResult<()> {
    let id = guard.page_id();
    if let Some(lsn) = wal.insert_hint_image(id, guard.data_mut())? {
        guard.note_logged(lsn);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
