//! What a full leaf asks of its table before it splits: which of its entries point at heap
//! tuples dead to every transaction (PostgreSQL 14+ nbtinsert.c
//! `_bt_delete_or_dedup_one_page`, nbtinsert.c `_bt_simpledel_pass`, nbtdedup.c
//! `_bt_bottomupdel_pass`, through the table AM's `table_index_delete_tuples`, heapam.c
//! `heap_index_delete_tuples`; REL_15).
//!
//! The tree offers candidates, the table decides: an index knows keys, only the table can
//! tell whether the tuples a key points at are dead. Two passes, in PostgreSQL's order:
//! 1. *Simple deletion* when the leaf holds entries marked [`super::node::SLOT_FLAG_DEAD`]
//!    (set by earlier scans, `_bt_killitems`): the marked entries are deletable without a
//!    check; the other entries that point at the same heap blocks ride along, since the
//!    table reads those blocks anyway (`_bt_deadblocks`).
//! 2. *Bottom-up deletion* when the insert comes from an update that left this index's
//!    key unchanged (the executor's `indexUnchanged` hint, `index_unchanged_by_update`):
//!    every entry is a candidate, those in a group of equal keys (versions of one row)
//!    promising; the table visits a few heap blocks, most promising first, and stops as
//!    soon as enough space is freed or a block frees nothing.
//!
//! What is deleted is logged as one DELETE_DEAD record (PostgreSQL XLOG_BTREE_DELETE) and
//! the insert goes on in the same leaf if it now fits; else, in a deduplicating tree, the
//! deduplication pass runs (`btree::dedup`, nbtdedup.c `_bt_dedup_pass`), and the leaf
//! splits only if that did not free enough either.
//!
//! Candidates are per TID: a posting entry offers each of its TIDs (`K ‖ tid`, the entry's
//! slot). A posting entry whose TIDs are all deletable goes; one with some deletable TIDs
//! is rewritten without them, in the same DELETE_DEAD record (nbtpage.c
//! `_bt_delitems_delete` with `updatable` items, `_bt_update_posting`).

use crate::error::Result;

/// One leaf entry offered to the table (PostgreSQL `TM_IndexDelete` + `TM_IndexStatus`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteCandidate {
    /// Slot of the entry in the leaf.
    pub slot: usize,
    /// The entry's key (for a heap index: index key ‖ 6-byte TID).
    pub key: Vec<u8>,
    /// Marked dead by a scan ([`super::node::SLOT_FLAG_DEAD`]): deletable without a check
    /// (`knowndeletable`).
    pub known_dead: bool,
    /// Bottom-up: one of a group of equal keys, likely an old version (`promising`).
    pub promising: bool,
    /// Bytes of the leaf the entry takes (entry + slot), freed if it is deleted; for a TID
    /// of a posting entry, its 6 bytes.
    pub space_bytes: usize,
}

/// A deletion request (PostgreSQL `TM_IndexDeleteOp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteOp {
    /// Bottom-up pass (else simple deletion).
    pub bottom_up: bool,
    /// Bottom-up: bytes the pass aims to free (`bottomupfreespace`: the larger of a 16th
    /// of the page and the new entry).
    pub free_target_bytes: usize,
    /// The entries offered.
    pub candidates: Vec<DeleteCandidate>,
}

/// The table's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteVerdict {
    /// Per candidate, in order: delete it.
    pub deletable: Vec<bool>,
    /// Newest xid among the deleted entries' tuples (PostgreSQL's snapshot conflict
    /// horizon, logged for standbys); 0 when none is known.
    pub latest_removed_xid: u32,
}

/// The table side of index deletion (PostgreSQL `table_index_delete_tuples`).
pub trait IndexDeleteTuples {
    /// Heap block a key points at (`None` for a key without a TID).
    fn heap_block(&self, key: &[u8]) -> Option<u32>;
    /// Bytes at the end of every key that are the TID tiebreaker (keys equal before them
    /// are versions of one index key).
    fn tid_suffix_bytes(&self) -> usize;
    /// Decides which candidates are deletable. Called under the leaf's exclusive latch: it
    /// may read heap pages (never index pages of this tree) and must not wait for
    /// anything but page latches.
    ///
    /// Errors: storage errors reading the heap.
    fn index_delete_tuples(&self, op: &DeleteOp) -> Result<DeleteVerdict>;
}

/// What an insert into a heap index brings so that a full leaf can free space before it
/// splits ([`super::BTree::insert_cleaning`]).
pub struct InsertCleanup<'a> {
    /// The table that decides.
    pub table: &'a dyn IndexDeleteTuples,
    /// The insert comes from an update that did not change this index's key
    /// (PostgreSQL's `indexUnchanged` hint): bottom-up deletion may run.
    pub index_unchanged: bool,
    /// The deduplication pass may run (false for a unique index whose check met no
    /// duplicate: PostgreSQL's `checkingunique && !uniquedup` returns before
    /// `_bt_dedup_pass`, since a unique index only grows duplicates through versions).
    pub deduplicate: bool,
}

/// What a deletion pass removed from one leaf (for counters and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CleanupOutcome {
    /// Entries removed by simple deletion.
    pub simple_deleted: u64,
    /// Entries removed by bottom-up deletion.
    pub bottom_up_deleted: u64,
    /// Bottom-up passes run.
    pub bottom_up_passes: u64,
    /// Deduplication passes run (`btree::dedup`).
    pub dedup_passes: u64,
}
