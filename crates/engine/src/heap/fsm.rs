//! Free space map (PostgreSQL src/backend/storage/freespace/README, freespace.c): one byte
//! per heap page, the page's free space in steps of BLCKSZ / 256, and a search for a page
//! with at least a requested amount.
//!
//! PostgreSQL keeps the map in a fork of pages with a max-tree inside each; mvcclab keeps a
//! max segment tree in memory. Not counted: the FSM fork's own I/O (about one page per
//! 4,000 heap pages; documented difference). Like PostgreSQL's, the map is a hint: callers
//! check the page itself and correct the map when it was wrong
//! (`RecordAndGetPageWithFreeSpace`).

use parking_lot::Mutex;

/// The free space map of one heap relation.
pub struct FreeSpaceMap {
    step: usize,
    tree: Mutex<Vec<u8>>,
    len: Mutex<usize>,
}

const LEAVES: usize = 1 << 22; // heap pages addressable: 4 Mi pages (32 GiB at 8 KiB)

impl FreeSpaceMap {
    /// An empty map for pages of `page_bytes`.
    pub fn new(page_bytes: usize) -> Self {
        FreeSpaceMap {
            step: page_bytes / 256,
            tree: Mutex::new(vec![0; 2]),
            len: Mutex::new(0),
        }
    }

    /// Category of `bytes` free, rounded down (fsm_space_avail_to_cat).
    fn avail_cat(&self, bytes: usize) -> u8 {
        (bytes / self.step).min(255) as u8
    }

    /// Category needed for a request of `bytes`, rounded up (fsm_space_needed_to_cat).
    fn needed_cat(&self, bytes: usize) -> u8 {
        bytes.div_ceil(self.step).clamp(1, 255) as u8
    }

    /// RecordPageWithFreeSpace: page `block` has `free_bytes` free.
    pub fn record(&self, block: u32, free_bytes: usize) {
        let b = block as usize;
        if b >= LEAVES {
            return;
        }
        let mut tree = self.tree.lock();
        let mut len = self.len.lock();
        if b >= *len {
            *len = b + 1;
        }
        let cap = len.next_power_of_two();
        if tree.len() < 2 * cap {
            // Rebuild with more leaves.
            let old_cap = tree.len() / 2;
            let old_leaves: Vec<u8> = tree[old_cap..].to_vec();
            let mut t = vec![0u8; 2 * cap];
            t[cap..cap + old_leaves.len()].copy_from_slice(&old_leaves);
            for i in (1..cap).rev() {
                t[i] = t[2 * i].max(t[2 * i + 1]);
            }
            *tree = t;
        }
        let cap = tree.len() / 2;
        let mut i = cap + b;
        tree[i] = self.avail_cat(free_bytes);
        while i > 1 {
            i /= 2;
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
    }

    /// GetPageWithFreeSpace: the lowest page recorded with at least `needed_bytes` free
    /// (by category), if any.
    pub fn search(&self, needed_bytes: usize) -> Option<u32> {
        let want = self.needed_cat(needed_bytes);
        let tree = self.tree.lock();
        if tree.len() < 2 || tree[1] < want {
            return None;
        }
        let cap = tree.len() / 2;
        let mut i = 1;
        while i < cap {
            i = if tree[2 * i] >= want {
                2 * i
            } else {
                2 * i + 1
            };
        }
        Some((i - cap) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lowest_page_with_room() {
        let f = FreeSpaceMap::new(8192);
        assert_eq!(f.search(100), None);
        f.record(0, 50);
        f.record(5, 4000);
        f.record(9, 8000);
        assert_eq!(f.search(100), Some(5));
        assert_eq!(f.search(5000), Some(9));
        assert_eq!(f.search(8190), None);
        f.record(5, 0);
        assert_eq!(f.search(100), Some(9));
        f.record(2000, 3000);
        assert_eq!(f.search(3000), Some(9));
    }
}
