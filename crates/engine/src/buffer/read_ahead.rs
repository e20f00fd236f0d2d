//! InnoDB's linear read-ahead (MariaDB 10.11 storage/innobase/buf/buf0rea.cc
//! `buf_read_ahead_linear`; MariaDB KB "InnoDB Buffer Pool", `innodb_read_ahead_threshold`).
//!
//! A tablespace is read ahead a whole area at a time: `buf_read_ahead_area` is 64 pages
//! (one extent of 16 KiB pages, 1 MiB). When a page at the border of an area is accessed
//! for the first time — its last page when the area is read in ascending order, its first
//! when descending — InnoDB looks at every page of the area: a page not in the pool, not
//! yet accessed, or accessed out of order counts as a failure, and when more than
//! `64 − innodb_read_ahead_threshold` (default 56: 8) pages fail, nothing is read.
//! Otherwise the neighbouring area in that direction is read in, every page of it not yet
//! in the pool, without being marked accessed (buf_read_page_low with
//! `BUF_READ_ANY_PAGE`, put at the LRU list's midpoint).
//!
//! Simplifications, each named: the neighbouring area is the next one by page number
//! (InnoDB follows the border page's `FIL_PAGE_NEXT`/`FIL_PAGE_PREV`, which for a
//! tablespace filled in key order is the same area); a page's access time is the order of
//! its first access since it was last read into the pool (InnoDB's `access_time`); the pages are read one request each (InnoDB issues them as asynchronous reads
//! that the I/O layer may merge), counted under the cause `read_ahead`.

use crate::device::FileId;
use crate::page::PageId;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Settings of linear read-ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearReadAheadConfig {
    /// Pages per read-ahead area (`buf_read_ahead_area`: 64, one extent of 16 KiB pages).
    pub area_pages: u32,
    /// Pages of an area that must have been accessed in order
    /// (`innodb_read_ahead_threshold`, default 56, 0..=64; 0 turns read-ahead off).
    pub threshold: u32,
}

impl LinearReadAheadConfig {
    /// MariaDB's defaults: 64-page areas, threshold 56.
    pub fn innodb_default() -> Self {
        LinearReadAheadConfig {
            area_pages: 64,
            threshold: 56,
        }
    }
}

/// The pool's read-ahead state: the order of each page's first access, per area.
pub(super) struct LinearReadAhead {
    cfg: LinearReadAheadConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tick: u64,
    /// (relation, area number) → first-access order of each page of the area (0: none).
    areas: HashMap<(FileId, u32), Vec<u64>>,
}

impl LinearReadAhead {
    /// The state for `cfg`; `None` when read-ahead is off.
    pub(super) fn new(cfg: LinearReadAheadConfig) -> Option<Self> {
        (cfg.threshold > 0 && cfg.area_pages > 1).then(|| LinearReadAhead {
            cfg,
            state: Mutex::new(State::default()),
        })
    }

    /// Records an access of `id` and decides: the first block of the area to read ahead,
    /// when `id` is accessed for the first time since it was read in (`loaded`: this access
    /// read it from storage, which clears its access time as InnoDB's `access_time` starts
    /// at 0 for a page read in), is a border page of its area, and the area was accessed in
    /// order (see the module doc). `resident` says whether a page is in the pool now.
    pub(super) fn on_access(
        &self,
        id: PageId,
        loaded: bool,
        resident: impl Fn(PageId) -> bool,
    ) -> Option<u32> {
        let a = self.cfg.area_pages;
        let (area, off) = (id.block / a, (id.block % a) as usize);
        let mut st = self.state.lock();
        st.tick += 1;
        let tick = st.tick;
        let slots = st
            .areas
            .entry((id.rel, area))
            .or_insert_with(|| vec![0; a as usize]);
        if loaded {
            slots[off] = 0;
        }
        if slots[off] != 0 {
            return None;
        }
        slots[off] = tick;
        let descending = off == 0;
        if !descending && off != a as usize - 1 {
            return None;
        }
        let order = slots.clone();
        drop(st);
        let max_fail = (a - self.cfg.threshold.min(a)) as usize;
        let mut fails = 0usize;
        let mut prev = 0u64;
        for (i, &t) in order.iter().enumerate() {
            let page = PageId {
                rel: id.rel,
                block: area * a + i as u32,
            };
            let in_order = prev == 0 || (if descending { t < prev } else { t > prev });
            if t == 0 || !resident(page) || !in_order {
                fails += 1;
                if fails > max_fail {
                    return None;
                }
                continue;
            }
            prev = t;
        }
        if descending {
            area.checked_sub(1).map(|n| n * a)
        } else {
            Some((area + 1) * a)
        }
    }

    /// Records that `id` was read into the pool by read-ahead, not accessed: its access
    /// time is unset again, as InnoDB's is for every page it reads in (buf0buf.cc
    /// `buf_page_init_for_read` → `buf_page_t::init`: `access_time = 0`), so that its
    /// first access counts as one (and a border page's can trigger the next area) even if
    /// the page was accessed before it was last evicted.
    pub(super) fn read_in(&self, id: PageId) {
        let a = self.cfg.area_pages;
        let mut st = self.state.lock();
        if let Some(slots) = st.areas.get_mut(&(id.rel, id.block / a)) {
            slots[(id.block % a) as usize] = 0;
        }
    }

    #[cfg(test)]
    fn on_access_t(&self, id: PageId, resident: impl Fn(PageId) -> bool) -> Option<u32> {
        self.on_access(id, false, resident)
    }

    /// Pages per area.
    pub(super) fn area_pages(&self) -> u32 {
        self.cfg.area_pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pid(block: u32) -> PageId {
        PageId { rel: 7, block }
    }

    /// A second scan of a table whose pages were accessed by a first one and evicted:
    /// the area read ahead by the second scan must trigger read-ahead of the next area at
    /// its border page again (its pages' access times were unset by the read), else every
    /// other area is read page by page (seen in TPC-H Q18 at SF 0.1, two scans of
    /// lineitem: half of the second scan's pages read without read-ahead).
    #[test]
    fn pages_read_ahead_count_as_unaccessed_so_a_second_scan_reads_ahead_too() {
        let ra = LinearReadAhead::new(LinearReadAheadConfig::innodb_default()).unwrap();
        for b in 0..128 {
            ra.on_access(pid(b), true, |_| true);
        }
        // Second scan: area 0 read by the scan itself, area 1 by read-ahead.
        for b in 0..63 {
            assert_eq!(ra.on_access(pid(b), true, |_| true), None);
        }
        assert_eq!(ra.on_access(pid(63), true, |_| true), Some(64));
        for b in 64..128 {
            ra.read_in(pid(b));
        }
        for b in 64..127 {
            assert_eq!(ra.on_access(pid(b), false, |_| true), None);
        }
        assert_eq!(ra.on_access(pid(127), false, |_| true), Some(128));
    }

    #[test]
    fn an_area_read_in_order_triggers_at_its_last_page_and_not_out_of_order() {
        let ra = LinearReadAhead::new(LinearReadAheadConfig::innodb_default()).unwrap();
        for b in 0..63 {
            assert_eq!(ra.on_access_t(pid(b), |_| true), None);
        }
        assert_eq!(ra.on_access_t(pid(63), |_| true), Some(64));
        // A second access of the border page does not trigger again.
        assert_eq!(ra.on_access_t(pid(63), |_| true), None);
        // 9 pages of the next area never accessed: more than 64 − 56 fail.
        for b in 64..(128 - 10) {
            ra.on_access_t(pid(b), |_| true);
        }
        assert_eq!(ra.on_access_t(pid(127), |_| true), None);
        // Random order within an area fails too.
        let ra = LinearReadAhead::new(LinearReadAheadConfig::innodb_default()).unwrap();
        for b in (0..63).rev() {
            ra.on_access_t(pid(b + 128), |_| true);
        }
        assert_eq!(ra.on_access_t(pid(191), |_| true), None);
        // Threshold 0 is off.
        assert!(LinearReadAhead::new(LinearReadAheadConfig {
            area_pages: 64,
            threshold: 0
        })
        .is_none());
    }
}
