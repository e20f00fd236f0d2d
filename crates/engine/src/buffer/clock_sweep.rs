//! PostgreSQL's clock sweep (src/backend/storage/buffer/freelist.c, REL_15).
//!
//! Every frame has a usage count, 0 to `BM_MAX_USAGE_COUNT` (5). A pin of a resident page
//! raises it by one (bufmgr.c `PinBuffer`); loading a page sets it to 1. To find a victim,
//! the hand advances over the frames (`StrategyGetBuffer` / `ClockSweepTick`): an unpinned
//! frame with usage 0 is the victim; an unpinned frame with usage > 0 is decremented and
//! passed; after a full pass over the frames in which nothing was decremented or chosen
//! (every frame pinned), the search fails ("no unpinned buffers available").
//!
//! # Locking
//! None: usage counts and the hand are atomics, as in PostgreSQL (which keeps the usage
//! count in the buffer's atomic state word).

use super::replacer::SweepPosition;
use super::replacer::{FrameId, Replacer, Touch};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Highest usage count (buf_internals.h `BM_MAX_USAGE_COUNT`).
pub const BM_MAX_USAGE_COUNT: u8 = 5;

/// The clock-sweep policy over `n` frames.
pub struct ClockSweep {
    usage: Box<[AtomicU8]>,
    /// Ticks of the hand since the start: the next victim is `hand % frames`, the complete
    /// passes `hand / frames` (freelist.c `nextVictimBuffer`, `completePasses`).
    hand: AtomicUsize,
    /// Buffer allocations since the background writer last asked (`numBufferAllocs`).
    allocs: AtomicU64,
}

impl ClockSweep {
    /// A policy for `frames` frames, all usage counts 0.
    pub fn new(frames: usize) -> Self {
        ClockSweep {
            usage: (0..frames).map(|_| AtomicU8::new(0)).collect(),
            hand: AtomicUsize::new(0),
            allocs: AtomicU64::new(0),
        }
    }

    /// Usage count of a frame (for tests and reports).
    pub fn usage_count(&self, frame: FrameId) -> u8 {
        self.usage[frame].load(Ordering::Relaxed)
    }

    fn tick(&self) -> FrameId {
        self.hand.fetch_add(1, Ordering::Relaxed) % self.usage.len()
    }
}

impl Replacer for ClockSweep {
    fn loaded(&self, frame: FrameId) {
        self.usage[frame].store(1, Ordering::Relaxed);
    }

    fn accessed(&self, frame: FrameId) -> Touch {
        let _ = self.usage[frame].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
            (u < BM_MAX_USAGE_COUNT).then_some(u + 1)
        });
        Touch::Unchanged
    }

    fn accessed_by_strategy(&self, frame: FrameId) -> Touch {
        let _ = self.usage[frame].compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
        Touch::Unchanged
    }

    fn usage(&self, frame: FrameId) -> u8 {
        self.usage_count(frame)
    }

    fn removed(&self, frame: FrameId) {
        self.usage[frame].store(0, Ordering::Relaxed);
    }

    fn victim(&self, evictable: &dyn Fn(FrameId) -> bool) -> Option<FrameId> {
        let n = self.usage.len();
        let mut trycounter = n;
        loop {
            let f = self.tick();
            if evictable(f) {
                let u = self.usage[f].load(Ordering::Relaxed);
                if u == 0 {
                    return Some(f);
                }
                self.usage[f].store(u - 1, Ordering::Relaxed);
                trycounter = n;
            } else {
                trycounter -= 1;
                if trycounter == 0 {
                    return None;
                }
            }
        }
    }

    fn note_alloc(&self) {
        self.allocs.fetch_add(1, Ordering::Relaxed);
    }

    fn strategy_sync_start(&self) -> Option<SweepPosition> {
        let hand = self.hand.load(Ordering::Relaxed);
        let n = self.usage.len();
        Some(SweepPosition {
            next_victim: hand % n,
            complete_passes: (hand / n) as u64,
            recent_alloc: self.allocs.swap(0, Ordering::Relaxed),
        })
    }

    fn next_victims(&self, n: usize) -> Vec<FrameId> {
        // PostgreSQL's bgwriter (BgBufferSync) scans ahead of the hand for buffers that are
        // unpinned with usage_count 0: the ones the sweep will reuse next.
        let len = self.usage.len();
        let start = self.hand.load(Ordering::Relaxed);
        (0..len)
            .map(|i| (start + i) % len)
            .filter(|&f| self.usage[f].load(Ordering::Relaxed) == 0)
            .take(n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_frames_survive_a_sweep_cold_ones_go() {
        let c = ClockSweep::new(4);
        for f in 0..4 {
            c.loaded(f);
        }
        for _ in 0..3 {
            c.accessed(2);
        }
        // First pass decrements all to 0 except frame 2 (4 → 3); frame 0 is then chosen.
        assert_eq!(c.victim(&|_| true), Some(0));
        assert_eq!(c.usage_count(2), 3);
        c.removed(0);
        assert_eq!(c.victim(&|_| true), Some(1));
    }

    #[test]
    fn usage_is_capped_and_all_pinned_fails() {
        let c = ClockSweep::new(3);
        for _ in 0..20 {
            c.accessed(1);
        }
        assert_eq!(c.usage_count(1), BM_MAX_USAGE_COUNT);
        assert_eq!(c.victim(&|_| false), None);
        // Only frame 1 unpinned: found after its usage count is swept down to 0.
        assert_eq!(c.victim(&|f| f == 1), Some(1));
    }
}
