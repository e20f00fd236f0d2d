//! The replacement-policy interface of the buffer pool.

use serde::{Deserialize, Serialize};

/// Index of a frame in the buffer pool.
pub type FrameId = usize;

/// Which replacement policy a pool uses, with its settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "policy")]
pub enum ReplacerConfig {
    /// PostgreSQL's clock sweep (freelist.c `StrategyGetBuffer`).
    ClockSweep,
    /// InnoDB's LRU with midpoint insertion (buf0lru.cc).
    LruMidpoint {
        /// Share of the list kept as the old sublist, percent (innodb_old_blocks_pct, 37 =
        /// 3/8).
        old_pct: u8,
        /// A page in the old sublist moves to the young head only when accessed at least this
        /// long after its first access (innodb_old_blocks_time, 1000 ms).
        old_blocks_time_ms: u64,
        /// Below this list length there is no old sublist and pages enter at the head
        /// (BUF_LRU_OLD_MIN_LEN, 512).
        old_min_len: usize,
    },
}

impl ReplacerConfig {
    /// InnoDB's defaults for the LRU midpoint policy.
    pub fn lru_midpoint_default() -> Self {
        ReplacerConfig::LruMidpoint {
            old_pct: 37,
            old_blocks_time_ms: 1000,
            old_min_len: 512,
        }
    }

    /// The policy's report name: `clock_sweep` or `lru_midpoint`.
    pub fn name(&self) -> &'static str {
        match self {
            ReplacerConfig::ClockSweep => "clock_sweep",
            ReplacerConfig::LruMidpoint { .. } => "lru_midpoint",
        }
    }
}

/// What the clock sweep reports to the writer (freelist.c `StrategySyncStart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepPosition {
    /// The frame the hand takes next.
    pub next_victim: usize,
    /// Complete passes of the hand over the pool.
    pub complete_passes: u64,
    /// Buffer allocations since the previous call (the count is reset by the call).
    pub recent_alloc: u64,
}

/// What an access did to the replacement order ([`Replacer::accessed`]), for InnoDB's
/// young-making counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// Nothing counted: a policy without an LRU order (the clock sweep raises a usage
    /// count), the warm-up before the first eviction, or a young page put at the head too
    /// few evictions ago (buf0buf.h `buf_page_peek_if_young`, which InnoDB does not count).
    Unchanged,
    /// A page of the old sublist moved to the young head
    /// (`Innodb_buffer_pool_pages_made_young`, which counts only old pages: buf0lru.cc
    /// `buf_page_make_young`).
    MadeYoung,
    /// A page of the young sublist moved back to the head, which InnoDB does not count.
    MovedToHead,
    /// A page of the old sublist accessed within `old_blocks_time` of its first access,
    /// left where it is (`Innodb_buffer_pool_pages_made_not_young`).
    MadeNotYoung,
}

/// A replacement policy. The pool tells it about loads, hits and removals; it names
/// victims. Implementations are internally synchronized; calls come from many threads.
pub trait Replacer: Send + Sync {
    /// A page was just read into `frame`.
    fn loaded(&self, frame: FrameId);
    /// A new page was just created in `frame` without a read (a page allocated, or
    /// rebuilt whole). By default the same as [`Replacer::loaded`].
    fn created(&self, frame: FrameId) {
        self.loaded(frame);
    }
    /// A resident page in `frame` was pinned again (a buffer hit); returns what that did
    /// to the order.
    fn accessed(&self, frame: FrameId) -> Touch;
    /// The page resident in `frame` was initialized again without a read (a freed page
    /// allocated again, or a page redo rebuilds whole). By default an access
    /// ([`Replacer::accessed`]): PostgreSQL pins the buffer it finds (bufmgr.c
    /// `ReadBuffer_common` with `RBM_ZERO_AND_LOCK` → `BufferAlloc` → `PinBuffer`).
    fn reinitialized(&self, frame: FrameId) -> Touch {
        self.accessed(frame)
    }
    /// A resident page in `frame` was pinned by a reader with a ring
    /// ([`super::strategy`]). By default the same as [`Replacer::accessed`]; the clock
    /// sweep raises a usage count of 0 to 1 and leaves a higher one (bufmgr.c `PinBuffer`
    /// with a strategy).
    fn accessed_by_strategy(&self, frame: FrameId) -> Touch {
        self.accessed(frame)
    }
    /// How recently used `frame` is, for a ring's reuse test (usage count ≤ 1 in
    /// freelist.c `GetBufferFromRing`). By default 0: always reusable.
    fn usage(&self, _frame: FrameId) -> u8 {
        0
    }
    /// Whether `frame` is in the old sublist of an LRU list with midpoint insertion
    /// (`buf_page_t::old`, `INNODB_BUFFER_PAGE.IS_OLD`). By default false: a policy
    /// without one.
    fn is_old(&self, _frame: FrameId) -> bool {
        false
    }
    /// `frame` no longer holds a page.
    fn removed(&self, frame: FrameId);
    /// A frame to evict among those for which `evictable` is true (unpinned), or `None`
    /// when none is found after a full search.
    fn victim(&self, evictable: &dyn Fn(FrameId) -> bool) -> Option<FrameId>;
    /// Up to `n` frames in the order `victim` would consider them, without changing any
    /// state; for the page cleaner, which cleans what will be evicted next.
    fn next_victims(&self, n: usize) -> Vec<FrameId>;
    /// A token that changes whenever `frame` leaves its place in the victim order (moved
    /// or removed), so that a walk over [`Replacer::next_victims`]'s snapshot can skip a
    /// frame moved since. By default 0: a policy without an order to walk.
    fn position_token(&self, _frame: FrameId) -> u64 {
        0
    }
    /// A buffer allocation was requested (a frame for a page not resident, whether it then
    /// comes from the free list or from a victim), for the background writer's estimate of
    /// the allocation rate (freelist.c `StrategyGetBuffer` counts `numBufferAllocs` before
    /// it looks at the free list). By default nothing.
    fn note_alloc(&self) {}
    /// Where the hand is and the allocations since the previous call, which resets that
    /// count (freelist.c `StrategySyncStart`); `None` for a policy without a clock hand,
    /// the default.
    fn strategy_sync_start(&self) -> Option<SweepPosition> {
        None
    }
}
