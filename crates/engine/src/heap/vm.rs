//! Visibility map (PostgreSQL src/backend/access/heap/visibilitymap.c): one all-visible bit
//! per heap page, set by vacuum when every tuple on the page is visible to everyone and
//! cleared by any change to the page (together with the page's PD_ALL_VISIBLE flag).
//! Vacuum skips runs of all-visible pages.
//!
//! mvcclab keeps the bits in memory; the VM fork's own I/O (one page per 32,000 heap pages at
//! 8 KiB) is not counted (documented difference). PostgreSQL's all-frozen bit has no use
//! without xid wraparound, which mvcclab does not model.

use parking_lot::RwLock;

/// The visibility map of one heap relation.
#[derive(Default)]
pub struct VisibilityMap {
    bits: RwLock<Vec<u64>>,
}

impl VisibilityMap {
    /// An empty map (no page all-visible).
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether page `block` is marked all-visible.
    pub fn is_all_visible(&self, block: u32) -> bool {
        let b = block as usize;
        self.bits
            .read()
            .get(b / 64)
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
    }

    /// visibilitymap_set.
    pub fn set(&self, block: u32) {
        let b = block as usize;
        let mut bits = self.bits.write();
        if bits.len() <= b / 64 {
            bits.resize(b / 64 + 1, 0);
        }
        bits[b / 64] |= 1 << (b % 64);
    }

    /// visibilitymap_clear; returns whether the bit was set.
    pub fn clear(&self, block: u32) -> bool {
        let b = block as usize;
        if !self.is_all_visible(block) {
            return false;
        }
        let mut bits = self.bits.write();
        let was = bits[b / 64] & (1 << (b % 64)) != 0;
        bits[b / 64] &= !(1 << (b % 64));
        was
    }

    /// Number of all-visible pages.
    pub fn count(&self) -> u64 {
        self.bits.read().iter().map(|w| w.count_ones() as u64).sum()
    }
}
