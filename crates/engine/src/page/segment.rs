//! A relation's free space as extents of an InnoDB file segment: which block a new page
//! takes ([`FreeSpace::take_near`], MariaDB 10.11 fsp0fsp.cc `fseg_alloc_free_page_low`)
//! and the extent lists that choice reads (`FSEG_NOT_FULL`; `fseg_mark_page_used`,
//! `fseg_free_page_low`).
//!
//! A relation here is one segment (InnoDB gives each index a leaf and a non-leaf segment,
//! and a file-per-table tablespace holds the clustered index and its secondary indexes, so
//! their extents interleave in one file; here each index is its own file). An extent is
//! `extent_pages` consecutive blocks (`FSP_EXTENT_SIZE`: 1 MiB of pages up to 16 KiB
//! pages, 64 pages above). An extent with a used page belongs to the segment; one whose
//! pages are all free is the space's again (fsp0fsp.cc `fseg_free_page_low` →
//! `fsp_free_extent`). A relation whose every segment stays under half an extent (the undo
//! relation: InnoDB's system tablespace, holding one-page undo segments) takes its pages
//! as fragment pages from the space's fragment extents ([`FreeSpace::take_fragment`],
//! `fsp_alloc_free_page`). Not modelled: the 32 fragment pages a B-tree segment takes one
//! at a time before its first extent (a fragment page there is the lowest free block), and the
//! `FSEG_FREE` list of extents a segment holds with no page used (an extent is taken when
//! a page of it is).
//!
//! # Invariants
//! 1. `blocks` holds freed blocks below the relation's `n_blocks`; blocks from `n_blocks`
//!    to `reserved_end` are free and were never used; every other block below `n_blocks`
//!    is used.
//! 2. `reserved_end` is a multiple of the extent size and at least `n_blocks`;
//!    `ext_used[x]` counts the used blocks of extent `x`, for every extent below
//!    `reserved_end`.
//! 3. `not_full` holds each extent with a used and a free block once, in the order it
//!    became so (`flst_add_last` onto `FSEG_NOT_FULL`).
//! 4. `free_extents` holds each extent below `reserved_end` with no used block once, in
//!    the order it became so (the space's `FSP_FREE` list: `fsp_free_extent` appends an
//!    emptied extent, `fsp_fill_free_list` the extents a growth adds, in ascending order).
//!
//! # Locking and crash safety
//! Owned by the relation's free-space mutex in [`super::store`]; in memory only, rebuilt
//! at open from the block count (every block used, the free list empty), as the store's
//! free list is.

use std::collections::{BTreeSet, VecDeque};

/// Extents a tablespace adds to its free list at a time when the list is empty (fsp0fsp.h
/// `FSP_FREE_ADD`).
const FSP_FREE_ADD: u32 = 4;

/// Free blocks and extent bookkeeping of one relation. See the module doc.
#[derive(Debug)]
pub(super) struct FreeSpace {
    /// Freed blocks below `n_blocks`, reused lowest first by [`FreeSpace::take_lowest`].
    pub(super) blocks: BTreeSet<u32>,
    extent_pages: u32,
    reserved_end: u32,
    ext_used: Vec<u32>,
    not_full: VecDeque<u32>,
    free_extents: VecDeque<u32>,
}

impl FreeSpace {
    /// The free space of a relation of `n_blocks` blocks, all used, in extents of
    /// `extent_pages` blocks.
    pub(super) fn new(n_blocks: u32, extent_pages: u32) -> Self {
        let e = extent_pages.max(1);
        let mut s = FreeSpace {
            blocks: BTreeSet::new(),
            extent_pages: e,
            reserved_end: 0,
            ext_used: Vec::new(),
            not_full: VecDeque::new(),
            free_extents: VecDeque::new(),
        };
        for b in 0..n_blocks {
            s.mark_used(b);
        }
        s
    }

    fn grow_to(&mut self, block: u32) {
        while block >= self.reserved_end {
            self.free_extents
                .push_back(self.reserved_end / self.extent_pages);
            self.reserved_end += self.extent_pages;
            self.ext_used.push(0);
        }
    }

    fn mark_used(&mut self, b: u32) {
        self.grow_to(b);
        let x = (b / self.extent_pages) as usize;
        let was = self.ext_used[x];
        self.ext_used[x] += 1;
        if was == 0 {
            // fseg_mark_page_used: an extent taking its first page leaves the space's free
            // list and goes onto NOT_FULL.
            self.free_extents.retain(|&e| e != x as u32);
            self.not_full.push_back(x as u32);
        }
        if self.ext_used[x] == self.extent_pages {
            // ... and onto FULL when its last free page is taken.
            self.not_full.retain(|&e| e != x as u32);
        }
    }

    fn mark_free(&mut self, b: u32) {
        let x = (b / self.extent_pages) as usize;
        let was = self.ext_used[x];
        self.ext_used[x] -= 1;
        if was == self.extent_pages && was > 1 {
            // fseg_free_page_low: a full extent moves to NOT_FULL (flst_add_last).
            self.not_full.push_back(x as u32);
        }
        if self.ext_used[x] == 0 {
            // ... and an extent left with no used page goes back to the space, at the end
            // of its free list (fsp_free_extent: flst_add_last onto FSP_FREE).
            self.not_full.retain(|&e| e != x as u32);
            self.free_extents.push_back(x as u32);
        }
    }

    /// Used blocks of a relation of `n` blocks (invariant 1).
    fn used(&self, n: u32) -> u32 {
        n - self.blocks.len() as u32
    }

    /// Extents that belong to the segment: those with a used block.
    fn owned(&self) -> u32 {
        self.ext_used.iter().filter(|&&u| u > 0).count() as u32
    }

    /// Whether block `b` is free, for a relation of `n` blocks.
    pub(super) fn is_free(&self, b: u32, n: u32) -> bool {
        if b < n {
            self.blocks.contains(&b)
        } else {
            b < self.reserved_end
        }
    }

    /// The first free block of extent `x` at or after offset `from` within it, wrapping
    /// round (fsp0fsp.cc `xdes_find_free`).
    fn find_free(&self, x: u32, from: u32, n: u32) -> Option<u32> {
        let e = self.extent_pages;
        let base = x * e;
        (from..e)
            .chain(0..from)
            .map(|i| base + i)
            .find(|&b| self.is_free(b, n))
    }

    /// Marks `b` used in a relation of `*n` blocks, growing `*n` past it (blocks skipped
    /// over join the free list).
    fn take(&mut self, b: u32, n: &mut u32) -> u32 {
        if b < *n {
            self.blocks.remove(&b);
        } else {
            self.blocks.extend(*n..b);
            *n = b + 1;
        }
        self.mark_used(b);
        b
    }

    /// Takes the lowest freed block, else block `*n` (a new block at the end).
    pub(super) fn take_lowest(&mut self, n: &mut u32) -> u32 {
        let b = self.blocks.first().copied().unwrap_or(*n);
        self.take(b, n)
    }

    /// Returns used block `b` to the free list.
    pub(super) fn free(&mut self, b: u32) {
        self.blocks.insert(b);
        self.mark_free(b);
    }

    /// Records that redo extended the relation from `old_n` to `new_n` blocks: the blocks
    /// between are used (their pages are in the WAL).
    pub(super) fn extended(&mut self, old_n: u32, new_n: u32) {
        for b in old_n..new_n {
            self.mark_used(b);
        }
    }

    /// The block a new page of the segment takes, near `hint`, in a relation of `*n`
    /// blocks (grown as needed), following fsp0fsp.cc `fseg_alloc_free_page_low` for a page
    /// split upward (`FSP_UP`; btr0btr.cc `btr_page_split_and_insert` passes the split
    /// page's number + 1):
    /// 1. when the hint's extent belongs to the segment, the hint if it is free, else the
    ///    extent's first free block from the hint on, wrapping round;
    /// 2. when fewer than an eighth of the segment's reserved blocks (and fewer than four
    ///    extents' worth) are free and half an extent is used, a new extent: the hint's own
    ///    if it is the space's (all free), else the first on the space's free list (the
    ///    extent emptied longest ago; four new extents past the end when it is empty);
    ///    its first block (or the hint);
    /// 3. else, with a free reserved block, the first free block of the first extent on
    ///    `FSEG_NOT_FULL`;
    /// 4. else a new extent's first block.
    ///
    /// A segment with fewer than half an extent of used blocks takes fragment pages
    /// (`fsp_alloc_free_page`): here the lowest free block, as [`FreeSpace::take_lowest`].
    pub(super) fn take_near(&mut self, hint: u32, n: &mut u32) -> u32 {
        let e = self.extent_pages;
        let used = self.used(*n);
        if used < e / 2 {
            // A segment below half an extent holds fragment pages only, no extent of its
            // own: `fsp_alloc_free_page` (here the lowest free block).
            return self.take_lowest(n);
        }
        let hx = hint / e;
        let in_reserved = hint < self.reserved_end;
        if in_reserved && self.ext_used[hx as usize] > 0 {
            if self.is_free(hint, *n) {
                return self.take(hint, n);
            }
            if self.ext_used[hx as usize] < e {
                if let Some(b) = self.find_free(hx, hint % e, *n) {
                    return self.take(b, n);
                }
            }
        }
        let reserved = self.owned() * e;
        let unused = reserved - used;
        // Half an extent is used (the fragment stage returned above).
        if unused < reserved / 8 && unused < 4 * e {
            let (x, hints_own) = self.alloc_free_extent(hint);
            let b = if hints_own { hint } else { x * e };
            self.grow_to(b);
            return self.take(b, n);
        }
        if unused > 0 {
            // An extent on NOT_FULL has a free block (invariant 3); were it not so, a new
            // extent serves.
            if let Some(b) = self.first_free_on_not_full(*n) {
                return self.take(b, n);
            }
        }
        self.take_new_extent(n)
    }

    /// The block a fragment page takes, following fsp0fsp.cc `fsp_alloc_free_page`, which
    /// serves every page of a segment with fewer than half an extent used (an undo log
    /// segment's pages: trx0undo.cc `trx_undo_seg_create` → `fseg_create` with hint 0,
    /// `trx_undo_add_page` with the segment's last page + 1), in a relation of `*n` blocks
    /// (grown as needed). The relation is the tablespace; its extents with a used and a
    /// free block are the space's `FSP_FREE_FRAG` list (`not_full`, in the order they
    /// joined it: `flst_add_last` when a free extent is taken for fragments and when a
    /// full one has a page freed, `fsp_free_page`), its full ones `FSP_FULL_FRAG`, its
    /// empty ones `FSP_FREE`:
    /// 1. when the hint's extent is on `FSP_FREE_FRAG`, its first free block from the
    ///    hint on, wrapping round (`xdes_find_free(descr, hint % FSP_EXTENT_SIZE)`);
    /// 2. else the first free block of the first extent on `FSP_FREE_FRAG` (the hint
    ///    reset to 0);
    /// 3. else a free extent joins `FSP_FREE_FRAG` (`fsp_alloc_free_extent`: the hint's
    ///    own when it has no used block, else the first on the space's free list, which
    ///    is the one emptied longest ago, the list filled four extents at a time past the
    ///    end when empty) and the block at the hint's offset in it is taken.
    ///
    /// So freed pages are taken again extent by extent in list order, not lowest first:
    /// a page freed in an extent further down the list stays free (and, in the buffer
    /// pool, resident as a freed page until eviction) while the first extent has room, and
    /// extents emptied together (one-page undo segments freed by one history truncation)
    /// are taken again only after the extents emptied before them.
    pub(super) fn take_fragment(&mut self, hint: u32, n: &mut u32) -> u32 {
        let e = self.extent_pages;
        let hx = hint / e;
        if hint < self.reserved_end {
            let used = self.ext_used[hx as usize];
            if used > 0 && used < e {
                if let Some(b) = self.find_free(hx, hint % e, *n) {
                    return self.take(b, n);
                }
            }
        }
        if let Some(b) = self.first_free_on_not_full(*n) {
            return self.take(b, n);
        }
        let b = self.alloc_free_extent(hint).0 * e + hint % e;
        self.grow_to(b);
        self.take(b, n)
    }

    /// The first free block of the first extent on `not_full` (`FSEG_NOT_FULL` for a
    /// segment, `FSP_FREE_FRAG` for fragment pages), in a relation of `n` blocks.
    fn first_free_on_not_full(&self, n: u32) -> Option<u32> {
        self.not_full.front().and_then(|&x| self.find_free(x, 0, n))
    }

    /// The extent fsp0fsp.cc `fsp_alloc_free_extent` takes for `hint`: the hint's own when
    /// it is reserved and has no used block, else [`FreeSpace::first_free_extent`]; and
    /// whether it is the hint's own.
    fn alloc_free_extent(&mut self, hint: u32) -> (u32, bool) {
        let hx = hint / self.extent_pages;
        if hint < self.reserved_end && self.ext_used[hx as usize] == 0 {
            (hx, true)
        } else {
            (self.first_free_extent(), false)
        }
    }

    /// The extent `fsp_alloc_free_extent` takes when the hint's own is not free: the
    /// first on the space's free list (`FSP_FREE`, invariant 4: the extent emptied
    /// longest ago). An empty list is filled first with the next [`FSP_FREE_ADD`] extents
    /// past the reserved end, in ascending order (fsp0fsp.cc `fsp_fill_free_list`), so an
    /// extent emptied later waits behind them.
    fn first_free_extent(&mut self) -> u32 {
        if self.free_extents.is_empty() {
            self.grow_to(self.reserved_end + FSP_FREE_ADD * self.extent_pages - 1);
        }
        self.free_extents[0]
    }

    /// The first block of a new extent for the segment ([`FreeSpace::first_free_extent`]).
    fn take_new_extent(&mut self, n: &mut u32) -> u32 {
        let b = self.first_free_extent() * self.extent_pages;
        self.grow_to(b);
        self.take(b, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `k` blocks near `hint` and returns them.
    fn near(s: &mut FreeSpace, n: &mut u32, hint: u32, k: usize) -> Vec<u32> {
        (0..k).map(|_| s.take_near(hint, n)).collect()
    }

    #[test]
    fn a_split_takes_the_free_page_after_it_then_the_first_free_of_its_extent() {
        // Two extents of 8 blocks, all used; then blocks 3, 5, 12 and 13 are freed (4 of
        // 16 reserved blocks free: not short of free pages).
        let mut n = 16;
        let mut s = FreeSpace::new(n, 8);
        for b in [3, 5, 12, 13] {
            s.free(b);
        }
        // Case 1: the hint itself.
        assert_eq!(s.take_near(5, &mut n), 5);
        // Case 1: not free, so the extent's first free block from the hint on, wrapping.
        assert_eq!(s.take_near(6, &mut n), 3, "wraps round to block 3");
        // Extent 0 is full now, and 2 of 16 blocks are free (an eighth): case 3, the first
        // extent on NOT_FULL (extent 1, which became not full when block 12 was freed).
        assert_eq!(s.take_near(2, &mut n), 12);
        assert_eq!(n, 16);
        // 1 of 16 free, under an eighth: a new extent, not block 13.
        assert_eq!(s.take_near(2, &mut n), 16);
    }

    #[test]
    fn a_segment_short_of_free_pages_takes_a_new_extent_and_not_the_lowest_free_block() {
        // 4 extents of 8, 32 blocks used, one freed: 1 of 32 reserved blocks free, under
        // an eighth, so a split whose extent is full takes a new extent's first block.
        let mut n = 32;
        let mut s = FreeSpace::new(n, 8);
        s.free(9);
        assert_eq!(s.take_near(25, &mut n), 32, "a new extent, not block 9");
        assert_eq!(n, 33);
        // The next split in the new extent takes the page after it (case 1).
        assert_eq!(s.take_near(33, &mut n), 33);
        // With 7 of 40 free (an eighth is 5) and the hint's extent full, the segment takes
        // the first free block of the first NOT_FULL extent: extent 1 (not full before
        // extent 4 took its first block).
        assert_eq!(s.take_near(2, &mut n), 9);
        // Blocks skipped over by a new extent are free and taken later.
        let taken = near(&mut s, &mut n, 34, 6);
        assert_eq!(taken, vec![34, 35, 36, 37, 38, 39]);
        assert_eq!(n, 40);
    }

    #[test]
    fn an_extent_emptied_goes_back_to_the_space_and_is_taken_as_a_new_extent() {
        let mut n = 24;
        let mut s = FreeSpace::new(n, 8);
        for b in 8..16 {
            s.free(b);
        }
        assert_eq!(s.owned(), 2, "extent 1 is the space's again");
        assert!(!s.not_full.contains(&1));
        // 16 used of 16 reserved: no free reserved block, so a new extent; the lowest
        // all-free extent is extent 1.
        assert_eq!(s.take_near(20, &mut n), 8);
        assert_eq!(s.owned(), 3);
        assert_eq!(n, 24);
    }

    #[test]
    fn fragment_pages_come_from_the_first_free_frag_extent_not_the_lowest_free_block() {
        // Three extents of 8, all used; free 2 (extent 0), then 12 and 13 (extent 1):
        // extent 0 joined FREE_FRAG first.
        let mut n = 24;
        let mut s = FreeSpace::new(n, 8);
        for b in [2, 12, 13] {
            s.free(b);
        }
        // Case 1: the hint's extent is a fragment extent: from the hint on, wrapping.
        assert_eq!(s.take_fragment(14, &mut n), 12, "wraps round in extent 1");
        // Case 2: the hint's extent (2) is full: the first FREE_FRAG extent, hint reset.
        assert_eq!(s.take_fragment(20, &mut n), 2);
        // Extent 0 is full again and left the list; a page freed in extent 2 puts it at
        // the list's end, behind extent 1, so block 13 goes first though 17 is freed later
        // and 13 is higher.
        s.free(17);
        assert_eq!(s.not_full, VecDeque::from([1, 2]));
        assert_eq!(s.take_fragment(0, &mut n), 13);
        assert_eq!(s.take_fragment(0, &mut n), 17);
        // Case 3: no fragment extent and an empty free list: the space adds four extents
        // to its free list (fsp_fill_free_list) and takes the first, at the hint's offset;
        // the blocks it skips are free and the extent is on FREE_FRAG.
        assert_eq!(s.take_fragment(3, &mut n), 27);
        assert_eq!(n, 28);
        assert_eq!(s.free_extents, VecDeque::from([4, 5, 6]));
        assert_eq!(s.take_fragment(0, &mut n), 24);
        assert_eq!(s.not_full, VecDeque::from([3]));
        // Extents emptied go to the end of the free list in the order they emptied, and
        // the list is taken from its head: extent 3 emptied before extent 1, both behind
        // the three added before; the blocks of extent 1 are taken again only after
        // those of four other extents.
        for b in [24, 27] {
            s.free(b);
        }
        for b in 8..16 {
            s.free(b);
        }
        assert_eq!((s.ext_used[1], s.ext_used[3]), (0, 0));
        assert!(s.not_full.is_empty());
        assert_eq!(s.free_extents, VecDeque::from([4, 5, 6, 3, 1]));
        assert_eq!(s.take_fragment(0, &mut n), 32, "the head of the free list");
        assert_eq!(s.free_extents, VecDeque::from([5, 6, 3, 1]));
        assert_eq!(s.take_fragment(0, &mut n), 33, "then its next free block");
        assert_eq!(n, 34);
    }

    #[test]
    fn lowest_first_and_free_keep_the_counts() {
        let mut n = 0;
        let mut s = FreeSpace::new(n, 64);
        for want in 0..10 {
            assert_eq!(s.take_lowest(&mut n), want);
        }
        s.free(4);
        s.free(2);
        assert_eq!(s.take_lowest(&mut n), 2);
        assert_eq!((s.used(n), s.owned(), n), (9, 1, 10));
        assert_eq!(s.not_full, VecDeque::from([0]));
    }
}
