//! PostgreSQL's background writer LRU scan (src/backend/storage/buffer/bufmgr.c
//! `BgBufferSync`, REL_15), for a pool whose replacer is the clock sweep.
//!
//! Each round (every `bgwriter_delay`, 200 ms) the writer learns from the clock sweep where
//! its hand is and how many buffers were allocated since the last round (freelist.c
//! `StrategySyncStart`), keeps a fast-attack, slow-decline average of the allocations
//! (`smoothed_alloc`, 16 samples) and of the buffers the sweep passes per allocation
//! (`smoothed_density`), and scans forward from where its previous round stopped
//! (`next_to_clean`, kept ahead of the hand; reset to the hand when the hand overtook it)
//! until it has found `smoothed_alloc × bgwriter_lru_multiplier` reusable buffers (unpinned,
//! usage count 0) — counting those it estimates are already clean between the hand and its
//! scan point — or lapped the hand, or written `bgwriter_lru_maxpages` (100). A reusable
//! dirty buffer is written (`SyncOneBuffer` with `skip_recently_used`); a buffer in use is
//! passed over. So the writer writes ahead of the sweep as many pages as the next round's
//! allocations are expected to need, no fixed number.
//!
//! Not modelled: hibernation (a round that found nothing to do lets the writer sleep 50
//! delays until an allocation wakes it), the writeback hints (`bgwriter_flush_after`) and
//! the standby snapshot the background writer logs every 15 s.
//!
//! # Locking
//! The state belongs to the page cleaner thread (a mutex in the pool, taken once per
//! round); the scan reads usage counts and pins without locks, as `SyncOneBuffer` reads
//! the buffer header, and pins a frame under its partition lock before writing it.

use super::replacer::{FrameId, SweepPosition};

/// `scan_whole_pool_milliseconds` of `BgBufferSync`: with no allocations, the writer still
/// scans the whole pool once in two minutes.
const SCAN_WHOLE_POOL_MS: f32 = 120_000.0;
/// `smoothing_samples` of `BgBufferSync`.
const SMOOTHING_SAMPLES: f32 = 16.0;

/// What the scan found at one frame (`SyncOneBuffer`'s result bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncState {
    /// Unpinned with usage count 0: the sweep can reuse it (BUF_REUSABLE).
    pub reusable: bool,
    /// The writer writes it (BUF_WRITTEN).
    pub written: bool,
}

/// The background writer's state between rounds (the static variables of `BgBufferSync`).
#[derive(Clone, Debug)]
pub struct BgWriterState {
    /// `prev_strategy_buf_id`, `prev_strategy_passes`; `None` until the first round
    /// (`saved_info_valid`).
    prev: Option<(usize, u64)>,
    next_to_clean: usize,
    next_passes: u64,
    smoothed_alloc: f32,
    smoothed_density: f32,
}

impl Default for BgWriterState {
    fn default() -> Self {
        BgWriterState {
            prev: None,
            next_to_clean: 0,
            next_passes: 0,
            smoothed_alloc: 0.0,
            smoothed_density: 10.0,
        }
    }
}

/// One round's outcome, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RoundOutcome {
    /// Frames scanned.
    pub scanned: usize,
    /// Frames written (`buf_written_clean`).
    pub written: usize,
    /// The round stopped at `bgwriter_lru_maxpages` (`maxwritten_clean`).
    pub hit_max_pages: bool,
    /// Reusable buffers the round aimed for (`upcoming_alloc_est`).
    pub upcoming_alloc_est: usize,
}

impl BgWriterState {
    /// One round over a pool of `n_buffers` frames with the sweep at `pos`, for a writer
    /// that sleeps `delay_ms` between rounds, aiming at `multiplier` × the smoothed
    /// allocations and writing at most `max_pages`; `sync_one(frame)` inspects a frame
    /// and, when it is reusable and dirty, takes it for writing (`SyncOneBuffer`).
    pub fn round(
        &mut self,
        n_buffers: usize,
        pos: SweepPosition,
        delay_ms: u64,
        multiplier: f64,
        max_pages: usize,
        mut sync_one: impl FnMut(FrameId) -> SyncState,
    ) -> RoundOutcome {
        let n = n_buffers as i64;
        let (strategy_buf_id, strategy_passes) = (pos.next_victim as i64, pos.complete_passes);
        let mut out = RoundOutcome::default();
        if max_pages == 0 || n == 0 {
            self.prev = None;
            return out;
        }
        let (strategy_delta, bufs_to_lap) = match self.prev {
            Some((prev_id, prev_passes)) => {
                let passes_delta = strategy_passes.wrapping_sub(prev_passes) as i64;
                let delta = strategy_buf_id - prev_id as i64 + passes_delta * n;
                let ahead = self.next_passes.wrapping_sub(strategy_passes) as i64;
                let lap = if ahead > 0 {
                    // One pass ahead of the hand.
                    strategy_buf_id - self.next_to_clean as i64
                } else if ahead == 0 && self.next_to_clean as i64 >= strategy_buf_id {
                    // Same pass, at or ahead of the hand.
                    n - (self.next_to_clean as i64 - strategy_buf_id)
                } else {
                    // Behind: start again at the hand.
                    self.next_to_clean = pos.next_victim;
                    self.next_passes = strategy_passes;
                    n
                };
                (delta, lap)
            }
            None => {
                self.next_to_clean = pos.next_victim;
                self.next_passes = strategy_passes;
                (0, n)
            }
        };
        self.prev = Some((pos.next_victim, strategy_passes));
        let recent_alloc = pos.recent_alloc as f32;
        if strategy_delta > 0 && pos.recent_alloc > 0 {
            let scans_per_alloc = strategy_delta as f32 / recent_alloc;
            self.smoothed_density += (scans_per_alloc - self.smoothed_density) / SMOOTHING_SAMPLES;
        }
        let bufs_ahead = n - bufs_to_lap;
        let reusable_buffers_est = (bufs_ahead as f32 / self.smoothed_density) as i64;
        if self.smoothed_alloc <= recent_alloc {
            self.smoothed_alloc = recent_alloc;
        } else {
            self.smoothed_alloc += (recent_alloc - self.smoothed_alloc) / SMOOTHING_SAMPLES;
        }
        let mut upcoming_alloc_est = (self.smoothed_alloc as f64 * multiplier) as i64;
        if upcoming_alloc_est == 0 {
            self.smoothed_alloc = 0.0;
        }
        let min_scan_buffers = (n as f32 / (SCAN_WHOLE_POOL_MS / delay_ms.max(1) as f32)) as i64;
        if upcoming_alloc_est < min_scan_buffers + reusable_buffers_est {
            upcoming_alloc_est = min_scan_buffers + reusable_buffers_est;
        }
        out.upcoming_alloc_est = upcoming_alloc_est.max(0) as usize;
        let mut num_to_scan = bufs_to_lap;
        let mut reusable_buffers = reusable_buffers_est;
        while num_to_scan > 0 && reusable_buffers < upcoming_alloc_est {
            let s = sync_one(self.next_to_clean);
            self.next_to_clean += 1;
            if self.next_to_clean >= n_buffers {
                self.next_to_clean = 0;
                self.next_passes = self.next_passes.wrapping_add(1);
            }
            num_to_scan -= 1;
            out.scanned += 1;
            if s.written {
                reusable_buffers += 1;
                out.written += 1;
                if out.written >= max_pages {
                    out.hit_max_pages = true;
                    break;
                }
            } else if s.reusable {
                reusable_buffers += 1;
            }
        }
        // The scan counts as an allocation scan for the density estimate.
        let new_strategy_delta = bufs_to_lap - num_to_scan;
        let new_recent_alloc = reusable_buffers - reusable_buffers_est;
        if new_strategy_delta > 0 && new_recent_alloc > 0 {
            let scans_per_alloc = new_strategy_delta as f32 / new_recent_alloc as f32;
            self.smoothed_density += (scans_per_alloc - self.smoothed_density) / SMOOTHING_SAMPLES;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(next_victim: usize, complete_passes: u64, recent_alloc: u64) -> SweepPosition {
        SweepPosition {
            next_victim,
            complete_passes,
            recent_alloc,
        }
    }

    /// Every frame reusable and dirty: a round writes as many as the allocations times
    /// the multiplier, up to the maximum.
    #[test]
    fn a_round_writes_for_twice_the_recent_allocations_up_to_the_maximum() {
        let mut s = BgWriterState::default();
        let all_dirty = |_| SyncState {
            reusable: true,
            written: true,
        };
        // First round: no saved position, 30 allocations → aim at 60.
        let r = s.round(1024, pos(0, 0, 30), 200, 2.0, 100, all_dirty);
        assert_eq!((r.written, r.upcoming_alloc_est), (60, 60));
        // 80 allocations later the hand is at 80, the writer at 60: behind, so it starts
        // at the hand and aims at 160, stopped by the maximum of 100 writes.
        let mut seen = Vec::new();
        let r = s.round(1024, pos(80, 0, 80), 200, 2.0, 100, |f| {
            seen.push(f);
            all_dirty(f)
        });
        assert_eq!(r.written, 100);
        assert!(r.hit_max_pages);
        assert_eq!(seen.first(), Some(&80));
    }

    /// A writer ahead of the hand continues where it stopped and counts the reusable
    /// buffers it estimates lie between the hand and its scan point.
    #[test]
    fn a_writer_ahead_of_the_hand_continues_from_where_it_stopped() {
        let mut s = BgWriterState::default();
        let clean = |_| SyncState {
            reusable: true,
            written: false,
        };
        s.round(1000, pos(0, 0, 50), 200, 2.0, 100, clean);
        // The writer scanned 0..100; the hand moved to 10 with 10 allocations.
        let mut first = None;
        let r = s.round(1000, pos(10, 0, 10), 200, 2.0, 100, |f| {
            first.get_or_insert(f);
            clean(f)
        });
        assert_eq!(first, Some(100), "{r:?}");
        // Nothing allocated for a long time: the aim decays to the two-minute scan of the
        // pool (1000 / 600 frames per round) plus what is already ahead.
        let mut last = r;
        for _ in 0..200 {
            last = s.round(1000, pos(10, 0, 0), 200, 2.0, 100, clean);
        }
        assert!(last.scanned <= 2, "{last:?}");
    }

    /// Buffers in use are passed over, not written, and do not count as reusable.
    #[test]
    fn buffers_in_use_are_passed_over() {
        let mut s = BgWriterState::default();
        let r = s.round(100, pos(0, 0, 5), 200, 2.0, 100, |f| SyncState {
            reusable: f % 2 == 0,
            written: f % 4 == 0,
        });
        // Ten reusable buffers needed, every other frame reusable: frames 0..19 scanned.
        assert_eq!((r.scanned, r.written), (19, 5));
        // With no maximum the writer is off and forgets its position.
        let r = s.round(100, pos(50, 0, 5), 200, 2.0, 0, |_| unreachable!());
        assert_eq!(r.scanned, 0);
        assert!(s.prev.is_none());
    }
}
