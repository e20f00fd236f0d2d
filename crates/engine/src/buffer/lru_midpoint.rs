//! InnoDB's LRU list with midpoint insertion (storage/innobase/buf/buf0lru.cc, MariaDB 10.11;
//! manual: "Making the Buffer Pool Scan Resistant").
//!
//! The list runs from the young head to the old tail. Its last `old_pct` percent (3/8 by
//! default) is the old sublist; `lru_old` points at its first element. A page read into the
//! pool enters at the midpoint, the head of the old sublist (`buf_LRU_add_block(old=true)`),
//! so a scan that touches each page once pushes out only old pages; a page created in the
//! pool without a read (a new undo or index page) enters at the young head instead
//! (buf0buf.cc `buf_page_create_low`: `buf_LRU_add_block(bpage, false)`, then
//! `set_accessed`). Victims come from the tail (`buf_LRU_scan_and_free_block`).
//!
//! **Making a page young** (buf0buf.h `buf_page_make_young_if_needed` →
//! `buf_page_peek_if_too_old`), on each access:
//! - nothing moves until the first eviction (`buf_pool.freed_page_clock == 0`: warm-up or
//!   an in-memory workload);
//! - a page in the old sublist, with `old_blocks_time_ms` > 0, moves to the head when
//!   accessed at least `old_blocks_time_ms` after its first access (the read that loaded
//!   it);
//! - any other page (young, or old with `old_blocks_time_ms` = 0) moves to the head only
//!   when it is no longer "young" by the eviction clock (`buf_page_peek_if_young`): the
//!   pool's `freed_page_clock` counts pages removed from the list
//!   (`buf_LRU_block_remove_hashed`), each page carries the clock's value from when it was
//!   last put at the head (`buf_LRU_add_block_low`, 0 for a page that entered at the
//!   midpoint: `buf_page_t::init`), and it moves when the clock has since advanced by
//!   `frames × (1024 − old_ratio) / 4096` (about 16 % of the pool at the default ratio,
//!   378/1024). The test is in evictions, not in list positions: when hot pages are put at
//!   the head much faster than pages are evicted, as in an update workload whose
//!   rollback-segment headers and undo pages fill half of a small pool, a hot page drifts
//!   down to the tail between two moves, and the page cleaner's LRU batch writes it there
//!   (measured against MariaDB 10.11 in docs/fidelity.md).
//!
//! While the list is shorter than `old_min_len` (BUF_LRU_OLD_MIN_LEN) there is no old
//! sublist and pages enter at the head. The old sublist is kept at its share by
//! `buf_LRU_old_adjust_len`: after each change `lru_old` moves one step at a time.
//! InnoDB moves it only while the sublist is more than BUF_LRU_OLD_TOLERANCE (20) pages
//! off its share; modelled that way, the preset counted four times MariaDB's
//! `buffer_pages_made_not_young` under oltp_read_write at 64 MiB (76 against 18 per
//! transaction; docs/fidelity.md, lru34), so the exact share stays until what else keeps
//! MariaDB's boundary moving is known.
//!
//! # Locking
//! One mutex over the list (InnoDB's `buf_pool.mutex`). A hit that moves nothing does not
//! take it: the old flag, the page's clock stamp and the pool's clock are atomics read
//! without the mutex (InnoDB reads them unlatched too; a stale value costs at most one
//! move too many or too few).

use super::replacer::{FrameId, Replacer, Touch};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const NIL: usize = usize::MAX;

#[derive(Clone, Copy)]
struct Node {
    prev: usize,
    next: usize,
    in_list: bool,
    old: bool,
}

struct List {
    nodes: Vec<Node>,
    head: usize,
    tail: usize,
    len: usize,
    /// First node of the old sublist (NIL when there is none).
    lru_old: usize,
    old_len: usize,
    /// Each node's `freed_page_clock` stamp (see the module doc), shared with the policy's
    /// lock-free hit path.
    stamp: Arc<[AtomicU64]>,
    /// The pool's eviction clock (`buf_pool.freed_page_clock`).
    clock: Arc<AtomicU64>,
    /// Lock-free copy of each node's `old` flag, read on hits without the mutex (a hint: a
    /// stale value costs at most one extra lock acquisition).
    hint_old: Arc<[AtomicBool]>,
    /// Each node's move count: raised whenever it is unlinked (made young, removed), read
    /// without the mutex by the page cleaner's LRU batch ([`Replacer::position_token`]).
    moves: Arc<[AtomicU64]>,
}

/// The LRU-with-midpoint policy. See the module doc.
pub struct LruMidpoint {
    list: Mutex<List>,
    old_pct: usize,
    old_blocks_time_us: u64,
    old_min_len: usize,
    /// Evictions a young page may see before an access moves it to the head again.
    young_evictions: u64,
    first_access_us: Box<[AtomicU64]>,
    is_old: Arc<[AtomicBool]>,
    moves: Arc<[AtomicU64]>,
    stamp: Arc<[AtomicU64]>,
    clock: Arc<AtomicU64>,
    epoch: Instant,
}

impl List {
    fn set_old(&mut self, f: usize, old: bool) {
        self.nodes[f].old = old;
        self.hint_old[f].store(old, Ordering::Relaxed);
    }

    fn unlink(&mut self, f: usize) {
        self.moves[f].fetch_add(1, Ordering::Relaxed);
        let n = self.nodes[f];
        if n.prev != NIL {
            self.nodes[n.prev].next = n.next;
        } else {
            self.head = n.next;
        }
        if n.next != NIL {
            self.nodes[n.next].prev = n.prev;
        } else {
            self.tail = n.prev;
        }
        if self.lru_old == f {
            self.lru_old = n.next;
        }
        if n.old {
            self.old_len -= 1;
        }
        self.nodes[f] = Node {
            prev: NIL,
            next: NIL,
            in_list: false,
            old: false,
        };
        self.hint_old[f].store(false, Ordering::Relaxed);
        self.len -= 1;
    }

    fn push_head(&mut self, f: usize) {
        self.nodes[f] = Node {
            prev: NIL,
            next: self.head,
            in_list: true,
            old: false,
        };
        self.hint_old[f].store(false, Ordering::Relaxed);
        if self.head != NIL {
            self.nodes[self.head].prev = f;
        } else {
            self.tail = f;
        }
        self.head = f;
        self.len += 1;
        self.stamp[f].store(self.clock.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Inserts `f` just after `lru_old`, into the old sublist (buf0lru.cc
    /// `buf_LRU_add_block_low` with old = true: `UT_LIST_INSERT_AFTER(LRU, LRU_old, bpage)`).
    fn insert_at_midpoint(&mut self, f: usize) {
        let at = self.lru_old;
        let next = self.nodes[at].next;
        self.nodes[f] = Node {
            prev: at,
            next,
            in_list: true,
            old: true,
        };
        self.hint_old[f].store(true, Ordering::Relaxed);
        self.stamp[f].store(0, Ordering::Relaxed);
        self.nodes[at].next = f;
        if next != NIL {
            self.nodes[next].prev = f;
        } else {
            self.tail = f;
        }
        self.old_len += 1;
        self.len += 1;
    }

    /// buf_LRU_old_adjust_len: moves the boundary until the old sublist holds its share.
    fn adjust_old(&mut self, old_pct: usize, min_len: usize) {
        if self.len < min_len {
            // No old sublist: every node is young.
            let mut f = self.lru_old;
            while f != NIL {
                self.set_old(f, false);
                f = self.nodes[f].next;
            }
            self.lru_old = NIL;
            self.old_len = 0;
            return;
        }
        if self.lru_old == NIL {
            self.lru_old = self.tail;
            self.set_old(self.tail, true);
            self.old_len = 1;
        }
        let target = self.len * old_pct / 100;
        while self.old_len < target {
            let p = self.nodes[self.lru_old].prev;
            if p == NIL {
                break;
            }
            self.set_old(p, true);
            self.lru_old = p;
            self.old_len += 1;
        }
        while self.old_len > target.max(1) {
            let f = self.lru_old;
            self.set_old(f, false);
            self.lru_old = self.nodes[f].next;
            self.old_len -= 1;
        }
    }
}

impl LruMidpoint {
    /// A policy for `frames` frames with InnoDB's settings (see [`super::ReplacerConfig`]).
    pub fn new(frames: usize, old_pct: u8, old_blocks_time_ms: u64, old_min_len: usize) -> Self {
        let is_old: Arc<[AtomicBool]> = (0..frames).map(|_| AtomicBool::new(false)).collect();
        let stamp: Arc<[AtomicU64]> = (0..frames).map(|_| AtomicU64::new(0)).collect();
        let clock = Arc::new(AtomicU64::new(0));
        let moves: Arc<[AtomicU64]> = (0..frames).map(|_| AtomicU64::new(0)).collect();
        let old_pct = (old_pct as usize).clamp(5, 95);
        // buf0lru.cc `buf_LRU_old_ratio_update`: the share in 1/1024ths; buf0buf.h
        // `buf_page_peek_if_young`: curr_size × (DIV − ratio) / (DIV × 4).
        let old_ratio = (old_pct * 1024 / 100) as u64;
        let young_evictions = frames as u64 * (1024 - old_ratio) / (1024 * 4);
        LruMidpoint {
            list: Mutex::new(List {
                nodes: vec![
                    Node {
                        prev: NIL,
                        next: NIL,
                        in_list: false,
                        old: false
                    };
                    frames
                ],
                head: NIL,
                tail: NIL,
                len: 0,
                lru_old: NIL,
                old_len: 0,
                stamp: stamp.clone(),
                clock: clock.clone(),
                hint_old: is_old.clone(),
                moves: moves.clone(),
            }),
            old_pct,
            old_blocks_time_us: old_blocks_time_ms * 1000,
            old_min_len: old_min_len.max(1),
            young_evictions,
            first_access_us: (0..frames).map(|_| AtomicU64::new(0)).collect(),
            is_old,
            moves,
            stamp,
            clock,
            epoch: Instant::now(),
        }
    }

    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// Frames from young head to old tail, with their old flag (for tests and reports).
    pub fn order(&self) -> Vec<(FrameId, bool)> {
        let l = self.list.lock();
        let mut out = Vec::with_capacity(l.len);
        let mut f = l.head;
        while f != NIL {
            out.push((f, l.nodes[f].old));
            f = l.nodes[f].next;
        }
        out
    }
}

impl Replacer for LruMidpoint {
    fn loaded(&self, frame: FrameId) {
        let mut l = self.list.lock();
        if l.nodes[frame].in_list {
            l.unlink(frame);
        }
        if l.lru_old != NIL && l.len >= self.old_min_len {
            l.insert_at_midpoint(frame);
        } else {
            l.push_head(frame);
        }
        l.adjust_old(self.old_pct, self.old_min_len);
        // The read that loaded the page is its first access (buf_page_get_low →
        // `set_accessed`): old_blocks_time runs from here.
        self.first_access_us[frame].store(self.now_us(), Ordering::Relaxed);
    }

    fn created(&self, frame: FrameId) {
        let mut l = self.list.lock();
        if l.nodes[frame].in_list {
            l.unlink(frame);
        }
        l.push_head(frame);
        l.adjust_old(self.old_pct, self.old_min_len);
        self.first_access_us[frame].store(self.now_us(), Ordering::Relaxed);
    }

    /// buf0buf.cc `buf_page_create_low`: a block still in the page hash (a freed page
    /// allocated again) is reinitialized in place (`set_reinit`), neither moved in the LRU
    /// list nor given a new access time; only a page not in the pool is added at the head.
    fn reinitialized(&self, _frame: FrameId) -> Touch {
        Touch::Unchanged
    }

    fn accessed(&self, frame: FrameId) -> Touch {
        // buf_page_peek_if_too_old.
        let clock = self.clock.load(Ordering::Relaxed);
        if clock == 0 {
            return Touch::Unchanged;
        }
        if self.old_blocks_time_us > 0 && self.is_old[frame].load(Ordering::Relaxed) {
            // An old page is made young only when accessed at least old_blocks_time after
            // its first access.
            let first = self.first_access_us[frame].load(Ordering::Relaxed);
            if self.now_us().saturating_sub(first) < self.old_blocks_time_us {
                // `buf_pool.stat.n_pages_not_made_young++`.
                return Touch::MadeNotYoung;
            }
        } else if clock < self.stamp[frame].load(Ordering::Relaxed) + self.young_evictions {
            // buf_page_peek_if_young: fewer evictions than the threshold since it was last
            // put at the head.
            return Touch::Unchanged;
        }
        let mut l = self.list.lock();
        if !l.nodes[frame].in_list {
            return Touch::Unchanged;
        }
        let was_old = l.nodes[frame].old;
        l.unlink(frame);
        l.push_head(frame);
        l.adjust_old(self.old_pct, self.old_min_len);
        // buf0lru.cc `buf_page_make_young`: `if (bpage->old)
        // buf_pool.stat.n_pages_made_young++`.
        if was_old {
            Touch::MadeYoung
        } else {
            Touch::MovedToHead
        }
    }

    fn is_old(&self, frame: FrameId) -> bool {
        self.is_old[frame].load(Ordering::Relaxed)
    }

    fn removed(&self, frame: FrameId) {
        let mut l = self.list.lock();
        if l.nodes[frame].in_list {
            // buf_LRU_block_remove_hashed: `buf_pool.freed_page_clock += 1`.
            self.clock.fetch_add(1, Ordering::Relaxed);
            l.unlink(frame);
            l.adjust_old(self.old_pct, self.old_min_len);
        }
    }

    fn victim(&self, evictable: &dyn Fn(FrameId) -> bool) -> Option<FrameId> {
        let l = self.list.lock();
        let mut f = l.tail;
        while f != NIL {
            if evictable(f) {
                return Some(f);
            }
            f = l.nodes[f].prev;
        }
        None
    }

    /// The frame's move count: it changes when the frame leaves its place (made young,
    /// evicted), as InnoDB's LRU batch, which walks the live list through
    /// `buf_pool.lru_hp` (buf0flu.cc `buf_flush_LRU_list_batch`), no longer meets a page
    /// made young meanwhile (buf0lru.cc `buf_LRU_remove_block` moves the hazard pointer
    /// off it).
    fn position_token(&self, frame: FrameId) -> u64 {
        self.moves[frame].load(Ordering::Relaxed)
    }

    fn next_victims(&self, n: usize) -> Vec<FrameId> {
        let l = self.list.lock();
        let mut out = Vec::with_capacity(n);
        let mut f = l.tail;
        while f != NIL && out.len() < n {
            out.push(f);
            f = l.nodes[f].prev;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Advances the eviction clock by `n`: loads `spare` (a frame the test does not use)
    /// and removes it, `n` times.
    fn evict_spare(r: &LruMidpoint, spare: FrameId, n: usize) {
        for _ in 0..n {
            r.loaded(spare);
            r.removed(spare);
        }
    }

    #[test]
    fn new_pages_enter_at_the_midpoint_and_old_share_is_three_eighths() {
        let r = LruMidpoint::new(64, 37, 0, 8);
        for f in 0..16 {
            r.loaded(f);
        }
        let order = r.order();
        assert_eq!(order.len(), 16);
        let old = order.iter().filter(|(_, o)| *o).count();
        assert_eq!(old, 16 * 37 / 100);
        // The most recent load sits at the midpoint, among the first two old pages, not at
        // the list head.
        let first_old = order.iter().position(|(_, o)| *o).unwrap();
        let at = order.iter().position(|(f, _)| *f == 15).unwrap();
        assert!(order[at].1, "a new page is old");
        assert!(at == first_old || at == first_old + 1, "{order:?}");
        assert_ne!(order[0].0, 15);
    }

    /// A page created without a read enters at the young head (buf_page_create_low), a
    /// page read enters at the midpoint.
    #[test]
    fn a_created_page_enters_young_at_the_head() {
        let r = LruMidpoint::new(64, 37, 0, 8);
        for f in 0..16 {
            r.loaded(f);
        }
        r.created(16);
        let order = r.order();
        assert_eq!(order[0], (16, false), "{order:?}");
        r.loaded(17);
        let order = r.order();
        assert_eq!(
            order[0],
            (16, false),
            "a read does not go to the head: {order:?}"
        );
        let at = order.iter().position(|(f, _)| *f == 17).unwrap();
        assert!(order[at].1, "a read page is old: {order:?}");
        assert_eq!(order.iter().filter(|(_, o)| *o).count(), 18 * 37 / 100);
    }

    #[test]
    fn a_scan_evicts_only_old_pages_and_spares_the_hot_set() {
        let r = LruMidpoint::new(200, 37, 0, 8);
        // Hot set 0..20 and cold pages 20..40 read once; then the hot set is used again,
        // which makes it young.
        for f in 0..40 {
            r.loaded(f);
        }
        // Enough evictions that a re-access of a page loaded at the midpoint moves it.
        evict_spare(&r, 199, r.young_evictions as usize);
        for f in 0..20 {
            r.accessed(f);
        }
        // A scan of 100 pages read once.
        for f in 40..140 {
            r.loaded(f);
        }
        // The next 60 victims never include a hot page.
        let victims = r.next_victims(60);
        assert!(
            victims.iter().all(|&f| f >= 20),
            "{victims:?}\n{:?}",
            r.order()
        );
    }

    #[test]
    fn old_blocks_time_delays_promotion() {
        let fast = LruMidpoint::new(64, 37, 0, 4);
        for f in 0..10 {
            fast.loaded(f);
        }
        evict_spare(&fast, 63, fast.young_evictions as usize);
        let old_frame = fast.order().iter().find(|(_, o)| *o).unwrap().0;
        assert_eq!(fast.accessed(old_frame), Touch::MadeYoung);
        assert_eq!(
            fast.order()[0],
            (old_frame, false),
            "old_blocks_time 0: a re-access after enough evictions makes young"
        );
        let r = LruMidpoint::new(64, 37, 60_000, 4);
        for f in 0..10 {
            r.loaded(f);
        }
        evict_spare(&r, 63, r.young_evictions as usize);
        let before = r.order();
        let old_frame = before.iter().find(|(_, o)| *o).unwrap().0;
        assert_eq!(r.accessed(old_frame), Touch::MadeNotYoung);
        assert_eq!(r.accessed(old_frame), Touch::MadeNotYoung);
        let after = r.order();
        assert!(
            after.iter().find(|(f, _)| *f == old_frame).unwrap().1,
            "still old within old_blocks_time"
        );
    }

    /// The position token changes when a frame moves or leaves, not when an access leaves
    /// it in place, so the page cleaner's LRU batch can pass over a page made young after
    /// it listed the victims.
    #[test]
    fn the_position_token_changes_when_a_frame_moves_or_leaves() {
        let r = LruMidpoint::new(64, 37, 0, 4);
        for f in 0..10 {
            r.loaded(f);
        }
        let tail = r.next_victims(1)[0];
        let t0 = r.position_token(tail);
        assert_eq!(
            r.accessed(tail),
            Touch::Unchanged,
            "before the first eviction"
        );
        assert_eq!(r.position_token(tail), t0);
        evict_spare(&r, 63, r.young_evictions as usize);
        assert_eq!(r.accessed(tail), Touch::MadeYoung);
        let t1 = r.position_token(tail);
        assert_ne!(t1, t0, "made young: moved");
        r.removed(tail);
        assert_ne!(r.position_token(tail), t1, "evicted: left");
    }

    #[test]
    fn victim_skips_pinned_tail_frames_and_removal_unlinks() {
        let r = LruMidpoint::new(8, 37, 0, 4);
        for f in 0..6 {
            r.loaded(f);
        }
        let tail = r.next_victims(1)[0];
        let v = r.victim(&|f| f != tail).unwrap();
        assert_ne!(v, tail);
        r.removed(v);
        assert_eq!(r.order().len(), 5);
        assert!(r.order().iter().all(|(f, _)| *f != v));
        assert_eq!(r.victim(&|_| false), None);
    }

    /// Nothing moves before the first eviction (buf_page_peek_if_too_old: freed_page_clock
    /// 0), and a young page moves to the head only after `young_evictions` evictions since it
    /// was last put there, however many pages were put at the head meanwhile
    /// (buf_page_peek_if_young counts evictions, not positions).
    #[test]
    fn a_young_page_moves_after_a_share_of_the_pool_is_evicted_not_after_a_share_of_the_list() {
        // 1,000 frames, no old sublist (the list stays below old_min_len).
        let r = LruMidpoint::new(1000, 37, 1000, 2000);
        assert_eq!(r.young_evictions, 1000 * (1024 - 378) / 4096);
        for f in 0..400 {
            r.created(f);
        }
        // Page 0 is now at the tail. Warm-up: no eviction yet, so an access moves nothing.
        assert_eq!(r.accessed(0), Touch::Unchanged);
        assert_eq!(r.next_victims(1), vec![0]);
        // After enough evictions, an access moves page 0 to the head and stamps it.
        evict_spare(&r, 999, r.young_evictions as usize + 1);
        assert_eq!(
            r.accessed(0),
            Touch::MovedToHead,
            "a young page's move is not counted as made young"
        );
        assert_eq!(r.order()[0], (0, false));
        // Every other page is then put at the head (none has been moved since its creation),
        // without an eviction: page 0 is pushed down to the tail, and an access leaves it
        // there, too young by the eviction clock.
        for f in 1..400 {
            r.accessed(f);
        }
        assert_eq!(r.order()[0], (399, false));
        assert_eq!(
            r.accessed(0),
            Touch::Unchanged,
            "too young by the eviction clock"
        );
        assert_eq!(r.next_victims(1), vec![0], "{:?}", &r.order()[..3]);
        // Once the clock has advanced by young_evictions, the next access moves it.
        evict_spare(&r, 999, r.young_evictions as usize);
        r.accessed(0);
        assert_eq!(r.order()[0], (0, false));
        assert_ne!(r.next_victims(1), vec![0]);
    }
}
