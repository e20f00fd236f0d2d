//! A concurrent B+tree in buffer-pool pages, shared by both MVCC designs.
//!
//! - PostgreSQL-style indexes: key = encoded index key followed by the 6-byte heap TID, so
//!   duplicates of an index key are distinct entries (nbtree uses the heap TID as a
//!   tiebreaker since PostgreSQL 12, nbtree/README "Notes about duplicates"); value empty.
//! - InnoDB-style clustered index: key = encoded primary key, value = the whole record (up
//!   to a quarter of a page); its secondary indexes: key = index key + primary key, value
//!   empty.
//!
//! Keys compare as unsigned bytes (memcmp order) and are unique. Follows PostgreSQL's
//! nbtree (src/backend/access/nbtree/README, nbtinsert.c `_bt_split` / `_bt_newroot`,
//! nbtsplitloc.c `_bt_findsplitloc`, nbtutils.c `_bt_truncate`, nbtree.c `btbulkdelete`,
//! nbtxlog.h records, REL_15) for page layout, splits and WAL, and InnoDB (btr0cur.cc
//! `btr_cur_optimistic_insert` / `btr_cur_pessimistic_insert`, btr0btr.cc
//! `btr_page_split_and_insert`, `btr_page_get_split_rec_to_right`) for the
//! optimistic-then-pessimistic insert. Unlike nbtree's Lehman–Yao design (no latch coupling,
//! high keys, move-right), concurrency here is classic latch coupling ("crabbing", Bayer and
//! Schkolnick 1977), which needs neither high keys nor move-right. Without a merge
//! threshold (PostgreSQL: nbtree never merges) empty leaves stay; with one
//! ([`BTreeConfig::merge_threshold_pct`], InnoDB btr0btr.cc `btr_compress`) a leaf left
//! below it by a delete merges with a sibling under the same parent: into the left one,
//! else into the right one, the leaf's page freed either way.
//!
//! The files follow PostgreSQL's nbtree file map (src/backend/access/nbtree/), each
//! operation's file an `impl BTree` block:
//! - `tree.rs`: [`BTree`], [`BTreeConfig`], [`BTreeOps`], [`BTreeStats`], create and open,
//!   the meta page and cached root, and the helpers the others share (nbtpage.c);
//! - `search.rs`: the root latch, the descents (shared, leaf exclusive, pessimistic),
//!   `get` and the scans in both directions (nbtsearch.c `_bt_search`, `_bt_first` /
//!   `_bt_next`);
//! - `insert.rs`: insert, update, splits, the parent insertion and a new root
//!   (nbtinsert.c `_bt_doinsert`, `_bt_split`, `_bt_insert_parent`, `_bt_newroot`;
//!   nbtsplitloc.c for the split point);
//! - `delete_dead.rs`: kill bits and the deletion of dead entries before a split
//!   (nbtutils.c `_bt_killitems`; nbtinsert.c `_bt_delete_or_dedup_one_page`, nbtpage.c
//!   `_bt_delitems_delete_check`);
//! - `delete.rs`: delete and the merge below the threshold (InnoDB btr0btr.cc
//!   `btr_compress`: nbtree never merges);
//! - `file_space.rs`: the file-space pages of an InnoDB tablespace (`FSP_HDR`,
//!   `IBUF_BITMAP`, `INODE`) that splits, merges and their extent reservations touch
//!   (fsp0fsp.cc; nbtree has none);
//! - `garbage.rs`: InnoDB's `PAGE_GARBAGE` of the leaves and the split it causes
//!   (btr0cur.cc `btr_cur_optimistic_insert`; nbtree has none);
//! - `vacuum.rs`: bulk delete (nbtree.c `btbulkdelete` → `btvacuumscan`);
//! - `build.rs`: the sorted build (nbtsort.c);
//! - `recovery.rs`: finishing incomplete splits (nbtinsert.c `_bt_finish_split`);
//! - `verify.rs`: statistics and the structural check (contrib/amcheck verify_nbtree.c).
//!
//! Page layouts (byte tables) are in [`node`]; WAL records, their block data and redo in
//! [`wal`] (nbtxlog.c); posting entries in [`dedup`] (nbtdedup.c); what a full leaf asks of
//! its table in [`cleanup`].
//!
//! Differences from PostgreSQL worth knowing: the fillfactor split applies when the
//! rightmost leaf splits because of an insert at its end (PostgreSQL applies it to any
//! split of the rightmost leaf, and BTREE_NONLEAF_FILLFACTOR 70 to rightmost internal
//! pages; here internal splits halve the bytes); the split point ignores how well the
//! separator truncates; pages carry no high key (PostgreSQL's `P_HIKEY` item).
//!
//! # Invariants
//! 1. Block 0 is the meta page; it names the root and the height (root level + 1). Every
//!    other page reachable from the root is a node whose level is its parent's minus one;
//!    leaves are level 0.
//! 2. Within a page, keys strictly ascend in slot order. An internal page's first key is
//!    empty and means minus infinity; child `i` holds exactly the keys `k` with
//!    `key(i) <= k < key(i + 1)` (bounds inherited from the parent at the ends). So every
//!    page has a *low fence*, which only a merge into the right sibling changes (splits
//!    keep the left page's low fence, the new right page takes `[separator, old high)`; a
//!    merge into the left sibling grows the left page's range to the freed page's high
//!    bound; a merge into the right sibling lowers the right page's low fence to the freed
//!    page's), and no page changes level while it is in the tree. A page a merge freed ([`node::FLAG_FREED`]) is named
//!    by no downlink or sibling link; the relation's free list gives it to a later split,
//!    which rebuilds it whole.
//! 3. The entry area `[upper, special)` holds exactly the live entries, packed; the hole
//!    `lower..upper` is free space (zeros), left out of full-page images.
//! 4. Each level's pages are linked left to right (`right_sibling`) and back
//!    (`left_sibling`) in key order, ending in u32::MAX; splits insert the new page right
//!    of the old one.
//! 5. Every entry takes at most a quarter of a page's usable bytes (key + value at most
//!    [`BTree::max_entry_bytes`]), so any overfull page splits into two that fit, and an
//!    internal page with a quarter page free (*safe*) can take any separator.
//! 6. Outside an operation that holds the latches, no page has INCOMPLETE_SPLIT set: a
//!    split's downlink is inserted before those latches are released (unless an error
//!    or a crash interrupts the cascade; see Crash safety).
//! 7. In a deduplicating tree ([`BTreeConfig::deduplicate`], [`dedup`]) a leaf entry with a
//!    non-empty value is a posting entry `K ‖ tid_min → tid_2 … tid_max`: its TIDs ascend
//!    strictly and `K ‖ tid_max` is below the next entry's key (and the page's high
//!    bound), so the per-TID keys of a leaf ascend like its entries' keys, and a
//!    separator above a leaf's last *TID* bounds it (splits truncate against
//!    `K ‖ tid_max`, PostgreSQL `_bt_truncate` on a posting tuple's max heap TID). A
//!    posting entry moves whole in a split and is at most [`dedup::max_posting_bytes`].
//!    Everything outside the tree is per TID: insert, delete, get, scans, kill bits, bulk
//!    delete and deletion candidates name `K ‖ tid` (nbtree/README "Notes about
//!    deduplication").
//!
//! # Locking
//! Page latches are the pool's content locks ([`crate::buffer::ReadPageGuard`] /
//! [`crate::buffer::WritePageGuard`]).
//! 1. Lookups and scans descend with shared latches from the root, latching the child
//!    before releasing the parent. The root comes from the tree's cached copy of the meta
//!    page's root and height (PostgreSQL's `rd_amcache`, nbtpage.c `_bt_getroot`; InnoDB
//!    keeps the root page number in the dictionary), checked once latched: a node at the
//!    root level with no sibling on either side covers every key. When the check fails (a
//!    root split gave it a right sibling) or nothing is cached, the descent latches the
//!    meta page shared first, which keeps the root from changing until the root is
//!    latched, and refreshes the cache. A root split updates the cache under the meta
//!    page's and the old root's exclusive latches; a bulk load clears it for the build.
//!    (One `BTree` per relation per database keeps one cache.)
//! 2. Inserts, updates and deletes first descend the same way but latch the leaf
//!    exclusively; if the change fits, it is done there (the optimistic path).
//! 3. Otherwise the insert starts again pessimistically: exclusive latches from the meta
//!    page down; whenever a child is safe (invariant 5), every latch above it is released
//!    (the meta page included: root changes need it). The leaf splits, each split inserts
//!    its separator into the still-latched parent, up to a new root (meta still latched).
//! 4. Forward scans and bulk delete move right by latching the right sibling before
//!    releasing the current leaf. Backward scans never latch right to left: they
//!    re-descend from the root for the keys below the last leaf's low fence.
//! 5. A scan's callback runs with no latch held (the leaf's matching entries are copied
//!    first; the scan resumes after the last key delivered). No latch is held while waiting
//!    on anything but another page latch (callbacks, row locks, commits); the one callback
//!    run under a latch is bulk delete's `dead` predicate, which must not block (as
//!    PostgreSQL's `btvacuumpage` calls its callback under the page's cleanup lock).
//!
//! 6. A full leaf's deletion pass ([`cleanup`]) runs under the leaf's exclusive latch and
//!    calls the table, which reads heap pages (shared latches, one at a time) as
//!    PostgreSQL's `_bt_delete_or_dedup_one_page` holds the leaf while
//!    `heap_index_delete_tuples` reads the heap. Safe because no heap code takes an index
//!    latch while it holds a heap page latch (heap/index.rs inserts index entries after
//!    releasing the heap page). Kill bits ([`BTree::kill_items`]) take the leaf's
//!    exclusive latch only if it is free at once, with no other latch held.
//! 7. [`BTree::bulk_load`] holds the meta page exclusively for the whole build, so no
//!    other operation can enter the tree; it latches at most two new pages besides.
//! 8. A merge ([`BTree::delete`] below the threshold) descends pessimistically to the
//!    leaf's parent (exclusive, ancestors released: the parent only loses a downlink),
//!    then latches exclusively, in key order, the left sibling under the same parent, the
//!    leaf, and its right sibling; a left sibling under another parent precedes the parent
//!    in the lock order, so it is only try-latched after the leaf (never merged with; a
//!    merge into the right sibling, which relinks it, does not happen without it). Every
//!    wait is for a page later in the order than every page the thread holds, the
//!    try-latched one included. A scan moving right never reaches a freed page: it
//!    latches the right sibling before releasing its leaf, and a merge holds the freed
//!    leaf, the survivor and the neighbour whose link it changes. A forward scan that released its
//!    leaf to run its callback resumes from the root after the last key delivered when
//!    merges are on (its leaf may have been freed, even reused, meanwhile; InnoDB's
//!    `btr_pcur_t::restore_position`), and from its leaf's block otherwise.
//!
//! Lock order: the meta page first; then pages ordered by (low fence ascending, level
//! descending). Every latch taken while others are held is later in this order: a child
//! after its parent (its low fence is at or above the parent's, its level lower), a right
//! sibling after its left, the new right page of a split after the left, and, when an
//! internal page splits, its right sibling after the child whose split it completes
//! (still latched: its whole range lies left of that sibling's low fence, as in
//! PostgreSQL's `_bt_split`). The one change of a low fence leaves the order of the pages
//! in the tree as it was: a merge into the right sibling R lowers R's low fence from the
//! separator `s` to the freed leaf L's low fence `f`, and the only page in the tree
//! between (`f`, 0) and (`s`, 0) was L (no page of a higher level has its low fence in
//! `(f, s]`: `s` is a separator inside their common parent, so no page above the leaves
//! starts there), which the merge held and freed. So the order of the pages in the tree
//! is fixed and no cycle of waits can form. A page just allocated for a split or a new root
//! is outside the order: no other thread can reach it before it is linked in, so latching
//! it never waits (the pool's eviction only try-locks a victim).
//!
//! # Crash safety
//! Every change follows the WAL recipe (`wal` module doc) through
//! [`crate::buffer::log_change`] with an [`crate::wal::rmgr::BTREE`] record while the
//! changed pages are exclusively latched, so WAL order is the order of changes to each
//! page. A split's new right page and a new root are logged whole with `will_init` (no
//! full-page image); a split's left page is logged as its difference from what it held
//! before ([`wal::encode_split_left`]), so redo rebuilds it from the page as the previous
//! record left it, or from its full-page image when the split is its first change after a
//! checkpoint; other records carry the slot and entry bytes. A split cascade is one record per level,
//! as in PostgreSQL: a crash between them leaves the left page of the lower split with
//! INCOMPLETE_SPLIT set and its right page reachable only through the right link; redo
//! ([`wal::redo_block`]) replays what was logged, and recovery then calls
//! [`BTree::finish_incomplete_splits`] before the tree is used (only after a crash: a
//! clean close writes a shutdown checkpoint, after which there is none to finish, unless
//! an error stopped a cascade, [`BTree::left_incomplete_split`], and the close then
//! writes an ordinary checkpoint instead): it walks every level from
//! the root's down, left to right along the right links, and inserts each missing
//! downlink with the records a split's parent insertion writes (INSERT_UPPER, or SPLIT of
//! a full parent, or NEWROOT when the root split), clearing the flag in the same record,
//! so a crash while finishing leaves a state it finishes in turn (PostgreSQL finishes such
//! splits lazily in `_bt_finish_split`; mvcclab readers do not move right, so they must be
//! finished first). An I/O error or an exhausted pool in the middle of a cascade leaves
//! the same state in the running tree; [`BTree::verify`] reports it. Entries marked dead
//! ([`node::SLOT_FLAG_DEAD`]) are hints: not logged, possibly lost at a crash or rebuilt
//! away by a split, which costs a later scan a heap visit and never correctness. Deletion
//! before a split is one DELETE_DEAD record naming the slots (and the posting entries
//! rewritten without some TIDs). A deduplication pass is one DEDUP record naming the
//! merged slot intervals, an insert inside a posting list one INSERT_POST record; their
//! redo runs the same functions as the change ([`dedup::apply_pass`],
//! [`dedup::swap_insert`]), so it leaves the same bytes. A sorted build logs every
//! page whole (BUILD), the last record also naming the new root in the meta page: a crash
//! before it leaves the meta page pointing at the old empty root, and the built pages
//! unreachable. A merge is one MERGE record naming the surviving leaf (the entries
//! appended, its new right link), the freed leaf (will_init: rebuilt empty and flagged
//! freed), the parent (the downlink removed) and the freed leaf's right sibling (its new
//! left link), or one MERGE_RIGHT record naming the surviving right sibling (the entries
//! put first, its new left link), the freed leaf, the parent (the freed leaf's downlink
//! pointed at the survivor, the survivor's own removed) and the freed leaf's left
//! sibling (its new right link), so a crash leaves the merge whole or absent. Freed pages are listed in
//! memory only: after a crash they stay unused (they leak, as freed undo pages do).

mod build;
pub mod cleanup;
pub mod dedup;
mod delete;
mod delete_dead;
pub mod file_space;
mod garbage;
mod insert;
pub mod node;
mod recovery;
mod search;
mod tree;
mod vacuum;
mod verify;
pub mod wal;

pub use cleanup::{
    CleanupOutcome, DeleteCandidate, DeleteOp, DeleteVerdict, IndexDeleteTuples, InsertCleanup,
};
pub use file_space::FileSpace;
pub use search::{LeafRef, LeafVisitor, ScanDirection};
pub use tree::{BTree, BTreeConfig, BTreeOps, BTreeStats};
pub use wal::info;

#[cfg(test)]
mod tests;
