//! Buffer access strategies: a ring of frames a bulk reader reuses instead of the whole pool
//! (PostgreSQL src/backend/storage/buffer/freelist.c `BufferAccessStrategy`, REL_15, and
//! README "Buffer Ring Replacement Strategy").
//!
//! VACUUM (and ANALYZE in an autovacuum worker) reads every page of a table once. Through
//! the normal clock sweep those reads would evict the working set; PostgreSQL gives such a
//! reader a small ring instead (`GetAccessStrategy(BAS_VACUUM)`: 256 KiB of buffers). On a
//! miss the reader first tries the ring's next slot (`GetBufferFromRing`): its frame is
//! reused when unpinned and its usage count is at most 1 (nobody else has used the page
//! since); otherwise the frame comes from the normal allocation and takes that slot
//! (`AddBufferToRing`). A dirty ring frame is written before reuse, by the reader itself
//! (the WAL flushed first), which PostgreSQL counts in `buffers_backend`. A hit on a page
//! outside the ring raises its usage count only from 0 to 1 (bufmgr.c `PinBuffer` with a
//! strategy), so a vacuum does not make the pages it passes over look hot.
//!
//! The ring is the calling thread's: [`with_ring`] installs one for the duration of a
//! closure, and the pool's miss path consults it (`BufferPool::pin`). A ring belongs to
//! the pool it was first used with; another pool's misses ignore it.
//!
//! # Invariants
//! 1. A ring slot names a frame this thread's reads loaded; the frame may since hold
//!    another page (evicted and reused by anyone), which the reuse test sees: a frame is
//!    taken back only while mapped, unpinned and at usage ≤ 1, under its partition lock.
//! 2. Ring reuse never skips the write of a dirty page: it goes through the same write
//!    path as an eviction (WAL-before-data, doublewrite).

use super::replacer::FrameId;
use std::cell::RefCell;

/// Which ring a bulk operation uses (PostgreSQL `BufferAccessStrategyType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingKind {
    /// VACUUM and autovacuum's ANALYZE (`BAS_VACUUM`): 256 KiB of buffers.
    Vacuum,
    /// A sequential scan of a table larger than a quarter of the pool (`BAS_BULKREAD`,
    /// heapam.c `initscan`): 256 KiB of buffers. PostgreSQL's `StrategyRejectBuffer`
    /// also drops a dirty ring buffer whose reuse would need a WAL flush; this ring writes
    /// it like the vacuum ring does (a scan rarely dirties pages beyond hint bits).
    BulkRead,
}

impl RingKind {
    /// The ring's size in bytes (freelist.c `GetAccessStrategy`).
    pub fn bytes(self) -> usize {
        match self {
            RingKind::Vacuum | RingKind::BulkRead => 256 * 1024,
        }
    }
}

/// A thread's ring: the frames it cycles through and the slot it used last.
pub(super) struct Ring {
    /// The pool it belongs to (its address), set at its first use.
    pub(super) pool: usize,
    pub(super) slots: Vec<Option<FrameId>>,
    pub(super) current: usize,
}

thread_local! {
    static RING: RefCell<Option<(RingKind, Ring)>> = const { RefCell::new(None) };
}

/// Runs `f` with a ring of `kind` for this thread's buffer reads: misses reuse the ring's
/// frames (see the module doc). `page_bytes` sizes the ring (`kind.bytes() / page_bytes`
/// frames, at least 1). A ring already installed (a nested call) is kept as it is.
pub fn with_ring<T>(kind: RingKind, page_bytes: usize, f: impl FnOnce() -> T) -> T {
    let installed = RING.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_some() {
            return false;
        }
        let n = (kind.bytes() / page_bytes.max(1)).max(1);
        *r = Some((
            kind,
            Ring {
                pool: 0,
                slots: vec![None; n],
                current: n - 1,
            },
        ));
        true
    });
    struct Uninstall(bool);
    impl Drop for Uninstall {
        fn drop(&mut self) {
            if self.0 {
                RING.with(|r| *r.borrow_mut() = None);
            }
        }
    }
    let _u = Uninstall(installed);
    f()
}

/// Runs `f` on this thread's ring when one is installed and belongs to pool `pool` (the
/// first use claims it); `None` otherwise.
pub(super) fn with_active<T>(pool: usize, f: impl FnOnce(&mut Ring) -> T) -> Option<T> {
    RING.with(|r| {
        let mut r = r.borrow_mut();
        let (_, ring) = r.as_mut()?;
        if ring.pool == 0 {
            ring.pool = pool;
        }
        (ring.pool == pool).then(|| f(ring))
    })
}
