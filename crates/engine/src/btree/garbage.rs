//! InnoDB's `PAGE_GARBAGE` of a leaf and the one insert decision that depends on it
//! ([`super::BTreeConfig::page_garbage`]), MariaDB 10.11 storage/innobase.
//!
//! An InnoDB page keeps deleted records where they were: page0cur.cc `page_cur_delete_rec`
//! links a purged record into the page's free list (`PAGE_FREE`) and adds its size to
//! `PAGE_GARBAGE`; a split leaves the records it moved to the new page in the old page's
//! free list the same way (btr0btr.cc `btr_page_split_and_insert` →
//! page0page.cc `page_move_rec_list_end` → `page_delete_rec_list_end`). An insert takes
//! the free list's first record when it is large enough (page0cur.cc
//! `page_cur_insert_rec_low`), else space from the heap top; only a reorganization
//! (btr0btr.cc `btr_page_reorganize`) gives the garbage back as contiguous space.
//! btr0cur.cc `btr_cur_optimistic_insert` refuses an insert, which then splits the page,
//! when the page has garbage, its free space after a reorganization
//! (`page_get_max_insert_size_after_reorganize`) is under `BTR_CUR_PAGE_REORGANIZE_LIMIT`
//! (a 32nd of the page: 512 bytes at 16 KiB), it holds more than one record, and its
//! contiguous free space (`page_get_max_insert_size`) cannot take the record, although
//! the free list's first record could. So a leaf whose heap is used up and that has
//! garbage splits with up to 512 bytes still free.
//!
//! mvcclab's pages are always compact (a delete moves the entries together), so the
//! garbage is kept beside the pages, per leaf block, in memory: what InnoDB's page header
//! would hold, counted in the tree's entry space (entry and slot bytes,
//! [`super::node::Geometry::space`]). It is not logged: after a restart every page counts
//! as just reorganized. Internal pages are not tracked (their node pointers are deleted
//! only by merges and splits).

use super::node::Node;
use super::tree::BTree;
use std::sync::atomic::Ordering;

impl BTree {
    /// `BTR_CUR_PAGE_REORGANIZE_LIMIT` (btr0cur.h: `srv_page_size / 32`).
    fn reorganize_limit(&self) -> usize {
        self.pool.store().page_size().bytes() / 32
    }

    /// The garbage of leaf `block` (0 without [`super::BTreeConfig::page_garbage`]).
    pub(super) fn leaf_garbage(&self, block: u32) -> usize {
        if self.cfg.page_garbage {
            self.garbage.get(block)
        } else {
            0
        }
    }

    /// Whether an entry of `need` bytes of space goes into leaf `n` (block `block`)
    /// without a split: it fits, and, with [`super::BTreeConfig::page_garbage`],
    /// `btr_cur_optimistic_insert` would not refuse it (see the module doc).
    pub(super) fn leaf_insert_fits(&self, n: &Node<'_>, block: u32, need: usize) -> bool {
        let free = n.free_bytes();
        if free < need {
            return false;
        }
        let garbage = self.leaf_garbage(block).min(free);
        !(garbage > 0 && free < self.reorganize_limit() && n.len() > 1 && free - garbage < need)
    }

    /// Leaf `block`, with `free_before` bytes free, took an entry of `need` bytes: from the
    /// free list when the garbage holds one that large, from the heap when the contiguous
    /// space does, else after a reorganization (`page_cur_insert_rec_low`;
    /// `btr_cur_optimistic_insert`'s `btr_page_reorganize` when the insert did not fit).
    pub(super) fn note_leaf_insert(&self, block: u32, free_before: usize, need: usize) {
        let garbage = self.leaf_garbage(block);
        if garbage == 0 {
            return;
        }
        if garbage >= need {
            self.garbage.set(block, garbage - need);
        } else if free_before.saturating_sub(garbage) < need {
            self.garbage.set(block, 0);
            self.ops.reorgs.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Leaf `block` lost an entry of `space` bytes to its free list (`page_cur_delete_rec`).
    pub(super) fn note_leaf_delete(&self, block: u32, space: usize) {
        if self.cfg.page_garbage {
            let garbage = self.garbage.get(block);
            self.garbage.set(block, garbage + space);
        }
    }

    /// A leaf split: the left page `left` (entries of `left_used_before` bytes and
    /// `left_garbage_before` of garbage before; [`Node::used_bytes`]) keeps its heap, so
    /// what moved to the new right page `right` becomes its garbage, less what the new
    /// entry reused when it stayed on the left; the new page is compact
    /// (`page_move_rec_list_end`). The garbage is record bytes only: the page directory
    /// shrinks with the records (`page_delete_rec_list_end`), so it is never garbage.
    pub(super) fn note_leaf_split(
        &self,
        left: u32,
        left_used_before: usize,
        left_garbage_before: usize,
        left_used_after: usize,
        left_free_after: usize,
        right: u32,
    ) {
        if !self.cfg.page_garbage {
            return;
        }
        let heap_used = left_used_before + left_garbage_before;
        let garbage = heap_used
            .saturating_sub(left_used_after)
            .min(left_free_after);
        self.garbage.set(left, garbage);
        self.garbage.set(right, 0);
    }

    /// A leaf merge: InnoDB copies `moved` bytes of entries into its merge page, which
    /// had `target_free` bytes free and `target_garbage` of garbage, and reorganizes that
    /// page first when its contiguous free space cannot take them (btr0btr.cc
    /// `btr_can_merge_with_page` → `btr_page_reorganize_block`, counted in
    /// [`super::BTreeOps::index_page_reorg_attempts`]); otherwise the copied records take
    /// the page's free list first (`page_copy_rec_list_start` / `_end` insert one by one
    /// through `page_cur_insert_rec_low`). The merged page, `kept` here, has the garbage
    /// left; the freed page `freed` none. InnoDB's merge page is the left sibling, or the
    /// right sibling when the leaf moves into it (`btr_compress`), where mvcclab keeps the
    /// leaf and moves the right sibling's entries into it: the caller passes the right
    /// sibling's free space and garbage then, so the merged page's garbage and the
    /// reorganizations are InnoDB's.
    pub(super) fn note_leaf_merge(
        &self,
        kept: u32,
        freed: u32,
        target_free: usize,
        target_garbage: usize,
        moved: usize,
    ) {
        if !self.cfg.page_garbage {
            return;
        }
        let contiguous = target_free.saturating_sub(target_garbage);
        let left = if moved > contiguous {
            self.ops.reorgs.fetch_add(1, Ordering::Relaxed);
            0
        } else {
            target_garbage.saturating_sub(moved)
        };
        self.garbage.set(kept, left);
        self.garbage.set(freed, 0);
    }
}
