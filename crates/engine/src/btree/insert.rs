//! Inserts and value updates (PostgreSQL nbtinsert.c `_bt_doinsert`, `_bt_findinsertloc`,
//! `_bt_insertonpg`; InnoDB btr0cur.cc `btr_cur_optimistic_insert` /
//! `btr_cur_pessimistic_insert`, `btr_cur_upd_rec_in_place`): where a key goes in a leaf;
//! the optimistic change in one exclusively latched leaf, after the deletion and
//! deduplication passes that may make room (nbtinsert.c `_bt_delete_or_dedup_one_page`,
//! nbtdedup.c `_bt_dedup_pass`); and the pessimistic one with splits (nbtinsert.c
//! `_bt_split`, at the point nbtsplitloc.c `_bt_findsplitloc` / `_bt_strategy` choose), the
//! downlink inserted into the parent, clearing the child's INCOMPLETE_SPLIT as
//! `_bt_insertonpg` does (`_bt_insert_parent`), and a new root (`_bt_newroot`).

use super::cleanup::{CleanupOutcome, InsertCleanup};
use super::dedup::{self, TID_BYTES};
use super::node::{self, Entry, Meta, Node, NodeHeader, FLAG_INCOMPLETE_SPLIT, NO_BLOCK};
use super::search::{Target, WritePath};
use super::tree::{truncated_separator, BTree};
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, WritePageGuard};
use crate::error::TxnError;
use crate::error::{Error, Result};
use crate::wal::{rmgr, RecordBuilder};
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// Where an insert goes in a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The key is there already (in a posting entry too).
    Dup,
    /// A new entry before slot `i`.
    Before(usize),
    /// The key's TID falls inside the range of the posting entry at this slot: swapped in
    /// ([`dedup::swap_insert`]).
    Posting(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Insert,
    Replace,
}

/// Fill of the left page when a leaf of one key value splits at its end (PostgreSQL
/// nbtree.h BTREE_SINGLEVAL_FILLFACTOR).
const SINGLEVAL_FILL_PCT: u8 = 96;

/// Where a split divides a page ([`BTree::split_point`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SplitRule {
    /// Half the bytes each side (nbtsplitloc.c `_bt_findsplitloc`'s default; InnoDB
    /// `page_get_middle_rec`).
    Middle,
    /// The left page keeps this percent of the usable bytes: `rightmost_fill_pct` for an
    /// insert at the end of the rightmost leaf (nbtsplitloc.c's fillfactor split; InnoDB's
    /// 15/16 on sequential inserts), [`SINGLEVAL_FILL_PCT`] for a leaf of one key value.
    Fill(u8),
    /// The first entry going right is this index of the combined entries: InnoDB's split
    /// at the insert point ([`BTree::sequential_split_at`]).
    At(usize),
}

impl BTree {
    /// Inserts (key, value) as a new entry. In a deduplicating tree the value must be empty
    /// and the key end in a TID; a key whose TID falls inside a posting entry's range is
    /// swapped into it ([`dedup::swap_insert`]), and a full leaf runs the deduplication
    /// pass before it splits.
    ///
    /// Errors: [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey) when the exact key is present (in a posting entry
    /// too); [`Error::InvalidValue`] for a value or a short key in a deduplicating tree;
    /// [`Error::TooLarge`] when key + value exceed [`BTree::max_entry_bytes`] (a quarter of
    /// the usable page); [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page on the path; pool and WAL
    /// errors.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_size(key, value)?;
        match self.modify_optimistic(key, value, Mode::Insert, None)? {
            Some(_) => Ok(()),
            None => self
                .modify_pessimistic(key, value, Mode::Insert)
                .map(|_| ()),
        }
    }

    /// Inserts like [`BTree::insert`], but a leaf without room for the entry first deletes
    /// the entries `cleanup.table` finds dead (simple deletion of entries marked dead, then,
    /// for an update that left the key unchanged, bottom-up deletion; `btree::cleanup`)
    /// then, in a deduplicating tree, runs the deduplication pass (unless
    /// `cleanup.deduplicate` is false), and splits only when that did not free enough
    /// (PostgreSQL 14+ nbtinsert.c `_bt_findinsertloc` → `_bt_delete_or_dedup_one_page`).
    /// Returns what was deleted and the passes run.
    ///
    /// Errors: as [`BTree::insert`], and the table's errors reading the heap.
    pub fn insert_cleaning(
        &self,
        key: &[u8],
        value: &[u8],
        cleanup: &InsertCleanup<'_>,
    ) -> Result<CleanupOutcome> {
        self.check_size(key, value)?;
        let mut out = CleanupOutcome::default();
        if self
            .modify_optimistic(key, value, Mode::Insert, Some((cleanup, &mut out)))?
            .is_none()
        {
            self.modify_pessimistic(key, value, Mode::Insert)?;
        }
        Ok(out)
    }

    /// Replaces the value stored under `key`: in place (one UPDATE_VALUE record) when the
    /// new entry fits the leaf, else by splitting the leaf with the new entry in the old
    /// one's place (the pessimistic insert path), so that no reader ever finds the key
    /// missing. Returns `Ok(false)`, changing nothing, when the key is absent.
    ///
    /// Errors: as [`BTree::insert`], without `DuplicateKey`.
    pub fn update_value(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.check_size(key, value)?;
        match self.modify_optimistic(key, value, Mode::Replace, None)? {
            Some(found) => Ok(found),
            None => self.modify_pessimistic(key, value, Mode::Replace),
        }
    }

    fn duplicate(&self, key: &[u8]) -> Error {
        Error::Txn(TxnError::DuplicateKey {
            index: format!("btree {}", self.rel),
            key: render_key(key),
        })
    }

    /// Where an insert of `key` goes in leaf `n`.
    fn place(&self, n: &Node<'_>, key: &[u8]) -> Result<Place> {
        if self.locate_tid(n, key)?.is_some() {
            return Ok(Place::Dup);
        }
        let i = n.lower_bound(key)?;
        if self.cfg.deduplicate && i > 0 && key.len() >= TID_BYTES {
            let (k, v) = n.entry(i - 1)?;
            if dedup::is_posting(k, v)
                && k.len() == key.len()
                && dedup::prefix(k) == dedup::prefix(key)
                && key < dedup::max_key(k, v).as_slice()
            {
                return Ok(Place::Posting(i - 1));
            }
        }
        Ok(Place::Before(i))
    }

    /// True when a deduplicating tree's leaf `entries` and the new `key` all hold one key
    /// value `K` and the page has posting entries (nbtsplitloc.c `_bt_strategy`'s
    /// SPLIT_SINGLE_VALUE test, on the page's first and last keys).
    fn single_value(&self, entries: &[(&[u8], &[u8])], key: &[u8]) -> bool {
        self.new_postings
            && key.len() >= TID_BYTES
            && entries.iter().any(|(_, v)| !v.is_empty())
            && [entries.first(), entries.last()].iter().all(|e| {
                e.is_some_and(|(k, _)| {
                    k.len() == key.len() && dedup::prefix(k) == dedup::prefix(key)
                })
            })
    }

    /// The largest key an entry stands for: `K ‖ tid_max` for a posting entry of a leaf,
    /// else its key (what a separator must stay above).
    fn max_key_of(&self, (key, value): (&[u8], &[u8])) -> Vec<u8> {
        if self.cfg.deduplicate {
            dedup::max_key(key, value)
        } else {
            key.to_vec()
        }
    }

    /// Inserts `key` (empty value in a deduplicating tree) at `place` in leaf `g`, which
    /// has room: INSERT_LEAF, or INSERT_POST for a posting list swap.
    fn apply_insert(
        &self,
        g: &mut WritePageGuard<'_>,
        place: Place,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        match place {
            Place::Dup => Err(self.duplicate(key)),
            Place::Before(i) => {
                let id = g.page_id();
                let garbage = self.leaf_garbage(id.block) > 0;
                let free_before = if garbage {
                    self.node(g.data(), id, Some(0))?.free_bytes()
                } else {
                    0
                };
                self.apply_leaf_change(g, Mode::Insert, i, key, value)?;
                if garbage {
                    let need = self.geo.space(key.len(), value.len());
                    self.note_leaf_insert(id.block, free_before, need);
                }
                Ok(())
            }
            Place::Posting(s) => {
                let id = g.page_id();
                let tid = &key[key.len() - TID_BYTES..];
                dedup::swap_insert(g.data_mut(), id, s, tid)?;
                let rec = RecordBuilder::new(rmgr::BTREE, info::INSERT_POST).block(
                    id,
                    false,
                    &bwal::encode_insert_post(s, tid),
                );
                log_change(self.pool.wal(), &rec, &mut [g])?;
                Ok(())
            }
        }
    }

    /// The deduplication pass over full leaf `g` (PostgreSQL nbtdedup.c `_bt_dedup_pass`):
    /// merges runs of equal keys into posting entries, one DEDUP record naming the
    /// intervals (XLOG_BTREE_DEDUP). Returns whether it merged anything.
    fn dedup_pass(&self, g: &mut WritePageGuard<'_>) -> Result<bool> {
        let id = g.page_id();
        let (intervals, saved) = {
            let n = self.node(g.data(), id, Some(0))?;
            dedup::plan_pass(&n, self.max_posting)?
        };
        if intervals.is_empty() || saved == 0 {
            return Ok(false);
        }
        dedup::apply_pass(g.data_mut(), id, &intervals)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::DEDUP).block(
            id,
            false,
            &bwal::encode_intervals(&intervals),
        );
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(true)
    }

    /// Inserts into leaf `g` when the entry fits, after freeing room if it must: simple
    /// and bottom-up deletion (with `cleanup`), then the deduplication pass (a
    /// deduplicating tree, unless `cleanup` forbids it), in the order of PostgreSQL 14+
    /// nbtinsert.c `_bt_delete_or_dedup_one_page`. `None`: the leaf must split.
    fn insert_in_leaf(
        &self,
        g: &mut WritePageGuard<'_>,
        key: &[u8],
        value: &[u8],
        cleanup: Option<(&InsertCleanup<'_>, &mut CleanupOutcome)>,
    ) -> Result<Option<bool>> {
        let id = g.page_id();
        let need = self.geo.space(key.len(), value.len());
        let fits_now = |t: &Self, g: &WritePageGuard<'_>| -> Result<(Place, bool)> {
            let n = t.node(g.data(), id, Some(0))?;
            Ok((t.place(&n, key)?, t.leaf_insert_fits(&n, id.block, need)))
        };
        let (place, fits) = fits_now(self, g)?;
        if place == Place::Dup {
            return Err(self.duplicate(key));
        }
        if fits {
            self.apply_insert(g, place, key, value)?;
            return Ok(Some(true));
        }
        let mut deduplicate = self.new_postings;
        let mut out = None;
        if let Some((c, o)) = cleanup {
            deduplicate &= c.deduplicate;
            if self.delete_before_split(g, need, c, o)? {
                let (place, _) = fits_now(self, g)?;
                self.apply_insert(g, place, key, value)?;
                return Ok(Some(true));
            }
            out = Some(o);
        }
        if deduplicate && self.dedup_pass(g)? {
            if let Some(o) = out {
                o.dedup_passes += 1;
            }
            let (place, fits) = fits_now(self, g)?;
            if fits {
                self.apply_insert(g, place, key, value)?;
                return Ok(Some(true));
            }
        }
        Ok(None)
    }

    fn apply_leaf_change(
        &self,
        g: &mut WritePageGuard<'_>,
        mode: Mode,
        slot: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let id = g.page_id();
        if mode == Mode::Replace {
            // An entry that keeps its size is patched in place and only the bytes that
            // changed are logged, as MariaDB logs an in-place update: btr0cur.cc
            // `btr_cur_upd_rec_sys` writes DB_TRX_ID and DB_ROLL_PTR with one
            // `mtr_t::memcpy<MAYBE_NOP>`, `btr_cur_upd_rec_in_place` each updated field with
            // another, and mtr0log.h `mtr_t::memcpy` skips the leading bytes that did not
            // change. One PATCH_VALUE carries every run of changed bytes, so `status=status+1`
            // logs the system columns' changed tail and the column's last byte, not the six
            // unchanged columns between them. Nothing changed, nothing logged.
            let spans = {
                let n = self.node(g.data(), id, Some(0))?;
                let (k, old) = n.entry(slot)?;
                (k == key && old.len() == value.len()).then(|| changed_spans(old, value))
            };
            if let Some(spans) = spans {
                if spans.is_empty() {
                    return Ok(());
                }
                for &(a, b) in &spans {
                    node::patch_value(g.data_mut(), id, slot, a, &value[a..b])?;
                }
                let rec = RecordBuilder::new(rmgr::BTREE, info::PATCH_VALUE).block(
                    id,
                    false,
                    &bwal::encode_patch(slot, value, &spans),
                );
                log_change(self.pool.wal(), &rec, &mut [g])?;
                return Ok(());
            }
        }
        let code = match mode {
            Mode::Insert => {
                node::insert_at(g.data_mut(), id, slot, key, value)?;
                info::INSERT_LEAF
            }
            Mode::Replace => {
                node::replace_at(g.data_mut(), id, slot, key, value)?;
                info::UPDATE_VALUE
            }
        };
        let rec = RecordBuilder::new(rmgr::BTREE, code).block(
            id,
            false,
            &bwal::encode_slot_entry(slot, key, value),
        );
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(())
    }

    /// The leaf change when it fits without a split: `Some(found)`; `None` to go
    /// pessimistic. (InnoDB `btr_cur_optimistic_insert`; PostgreSQL `_bt_doinsert` with
    /// its fast path.)
    fn modify_optimistic(
        &self,
        key: &[u8],
        value: &[u8],
        mode: Mode,
        cleanup: Option<(&InsertCleanup<'_>, &mut CleanupOutcome)>,
    ) -> Result<Option<bool>> {
        let mut g = self.descend_write(&Target::Lower(Bound::Included(key)))?;
        if mode == Mode::Insert {
            return self.insert_in_leaf(&mut g, key, value, cleanup);
        }
        let (pos, free, old_space) = {
            let n = self.node(g.data(), g.page_id(), Some(0))?;
            let pos = n.search(key)?;
            let old = match pos {
                Ok(i) => n.entry_space(i)?,
                Err(_) => 0,
            };
            (pos, n.free_bytes(), old)
        };
        let need = self.geo.space(key.len(), value.len());
        match (mode, pos) {
            (Mode::Insert, Ok(_)) => Err(self.duplicate(key)),
            (Mode::Replace, Err(_)) => Ok(Some(false)),
            (Mode::Insert, Err(i)) | (Mode::Replace, Ok(i)) if free + old_space >= need => {
                self.apply_leaf_change(&mut g, mode, i, key, value)?;
                Ok(Some(true))
            }
            _ => Ok(None),
        }
    }

    /// The change with splits (InnoDB `btr_cur_pessimistic_insert`; the latch crabbing of
    /// Bayer and Schkolnick): exclusive latches from the meta page down, ancestors released
    /// as soon as a child is safe (room for one more separator); the leaf splits, and each
    /// split inserts its separator into the parent still latched, up to a new root.
    fn modify_pessimistic(&self, key: &[u8], value: &[u8], mode: Mode) -> Result<bool> {
        let (wp, mut g) = self.descend_pessimistic(key, 0)?;
        if self.cfg.split_fixes_left_sibling {
            // btr0cur.cc `btr_cur_t::search_leaf`, BTR_MODIFY_TREE: "x-latch also siblings
            // from left to right"; the left one through `btr_latch_prev` (a page fix).
            let left = self.node(g.data(), g.page_id(), Some(0))?.header().left;
            if left != NO_BLOCK {
                self.fix_linked(left, g.page_id(), "left link")?;
            }
        }
        // btr0cur.cc `btr_cur_pessimistic_insert` / `_update` → `fsp_reserve_free_extents`.
        self.fsp_extents_reserved()?;
        let (place, n_entries, hdr, fits) = {
            let n = self.node(g.data(), g.page_id(), Some(0))?;
            let (place, old) = match mode {
                Mode::Insert => (self.place(&n, key)?, 0),
                Mode::Replace => match n.search(key)? {
                    Ok(i) => (Place::Before(i), n.entry_space(i)?),
                    Err(_) => return Ok(false),
                },
            };
            let need = self.geo.space(key.len(), value.len());
            let fits = match mode {
                Mode::Insert => self.leaf_insert_fits(&n, g.page_id().block, need),
                Mode::Replace => n.free_bytes() + old >= need,
            };
            (place, n.len(), n.header(), fits)
        };
        if place == Place::Dup {
            return Err(self.duplicate(key));
        }
        if fits {
            // Another thread made room meanwhile: no split, no ancestors needed.
            drop(wp);
            match (mode, place) {
                (Mode::Replace, Place::Before(i)) => {
                    self.apply_leaf_change(&mut g, mode, i, key, value)?
                }
                _ => self.apply_insert(&mut g, place, key, value)?,
            }
            return Ok(true);
        }
        // The page's entries are read from a copy of it, as slices (no copy per entry): the
        // split rebuilds the page.
        let page_copy = g.data().to_vec();
        let mut combined = self
            .node(&page_copy, g.page_id(), Some(0))?
            .entry_slices()?;
        let new = (key, value);
        let swap: Entry;
        let plain: Entry;
        let mut rule = SplitRule::Middle;
        match (mode, place) {
            (Mode::Insert, Place::Before(slot)) => {
                if hdr.right == NO_BLOCK && slot == n_entries {
                    rule = SplitRule::Fill(self.cfg.rightmost_fill_pct);
                } else if slot == n_entries && self.single_value(&combined, key) {
                    // nbtsplitloc.c's single value strategy: a leaf holding one key value
                    // (posting entries and the new TID at its end) splits leaving the
                    // left page BTREE_SINGLEVAL_FILLFACTOR full, since later TIDs of
                    // that value go right.
                    rule = SplitRule::Fill(SINGLEVAL_FILL_PCT);
                } else {
                    let before = self.node(&page_copy, g.page_id(), Some(0))?;
                    if let Some(m) = self.sequential_split_at(&before, slot) {
                        rule = SplitRule::At(m);
                    }
                }
                combined.insert(slot, new);
            }
            (Mode::Replace, Place::Before(slot)) => combined[slot] = new,
            (_, Place::Posting(s)) => {
                let tid = &key[key.len() - TID_BYTES..];
                (swap, plain) = dedup::swapped(g.page_id(), combined[s].0, combined[s].1, tid)?;
                combined[s] = (&swap.key, &swap.value);
                combined.insert(s + 1, (&plain.key, &plain.value));
            }
            (_, Place::Dup) => return Err(self.duplicate(key)),
        }
        let held: Vec<u32> = wp.path.iter().map(|(p, _)| p.page_id().block).collect();
        let (sep, right) = self.split(&mut g, &page_copy, combined, rule, None, &held)?;
        if let Err(e) = self.insert_into_parent(wp, g, sep, right, 0) {
            // The SPLIT record is logged and the cascade stopped: a page below keeps
            // INCOMPLETE_SPLIT until recovery finishes it (see `left_incomplete_split`).
            self.split_left_incomplete.store(true, Ordering::Release);
            return Err(e);
        }
        Ok(true)
    }

    /// Inserts the downlink (`sep` → `right`) of the split of `g` (at `child_level`,
    /// flagged INCOMPLETE_SPLIT) into its parent, the last page of `wp.path`, clearing the
    /// flag of `g` in the same INSERT_UPPER record; a parent without room splits in turn
    /// (its SPLIT record clears the flag) and the cascade goes on up, ending in a new root
    /// when the path runs out (the meta page is then still latched). PostgreSQL
    /// nbtinsert.c `_bt_insert_parent` (with `_bt_newroot` for the root).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page or a split that reaches the root
    /// without the meta page latched; pool and WAL errors (the cascade stops there, pages
    /// below keep INCOMPLETE_SPLIT).
    pub(super) fn insert_into_parent<'a>(
        &'a self,
        wp: WritePath<'a>,
        mut g: WritePageGuard<'a>,
        mut sep: Vec<u8>,
        mut right: u32,
        mut child_level: u16,
    ) -> Result<()> {
        let WritePath {
            meta,
            mut meta_g,
            mut path,
        } = wp;
        loop {
            match path.pop() {
                Some((mut pg, i)) => {
                    let pid = pg.page_id();
                    let down = right.to_le_bytes();
                    let fits = self
                        .node(pg.data(), pid, Some(child_level + 1))?
                        .free_bytes()
                        >= self.geo.space(sep.len(), down.len());
                    if fits {
                        node::insert_at(pg.data_mut(), pid, i + 1, &sep, &down)?;
                        self.clear_incomplete(&mut g)?;
                        let rec = RecordBuilder::new(rmgr::BTREE, info::INSERT_UPPER)
                            .block(pid, false, &bwal::encode_slot_entry(i + 1, &sep, &down))
                            .block(g.page_id(), false, &[]);
                        log_change(self.pool.wal(), &rec, &mut [&mut pg, &mut g])?;
                        return Ok(());
                    }
                    let page_copy = pg.data().to_vec();
                    let parent = self.node(&page_copy, pid, None)?;
                    let rule = self
                        .sequential_split_at(&parent, i + 1)
                        .map_or(SplitRule::Middle, SplitRule::At);
                    let mut combined = parent.entry_slices()?;
                    combined.insert(i + 1, (&sep, &down));
                    let mut held: Vec<u32> = path.iter().map(|(p, _)| p.page_id().block).collect();
                    held.push(g.page_id().block);
                    let (s, r) =
                        self.split(&mut pg, &page_copy, combined, rule, Some(&mut g), &held)?;
                    g = pg;
                    sep = s;
                    right = r;
                    child_level += 1;
                }
                None => {
                    let Some(mut mg) = meta_g.take() else {
                        return Err(Error::corrupted(format!(
                            "B+tree {}: a split reached the root without the meta page latched",
                            g.page_id()
                        )));
                    };
                    self.new_root(&mut mg, &mut g, child_level + 1, meta, &sep, right)?;
                    return Ok(());
                }
            }
        }
    }

    fn clear_incomplete(&self, g: &mut WritePageGuard<'_>) -> Result<()> {
        let id = g.page_id();
        let flags = Node::parse(g.data(), id)?.flags();
        node::set_flags(g.data_mut(), id, flags & !FLAG_INCOMPLETE_SPLIT)
    }

    /// InnoDB's split at the insert point (btr0btr.cc `btr_page_split_and_insert`): for an
    /// insert at entry `slot` of `node` (the page before the insert), the index into the
    /// combined entries (the new one at `slot`) of the first entry that goes right, when
    /// [`BTreeConfig::sequential_split`] is on and the insert lands next to the page's last
    /// insert ([`Node::is_last_insert`]). Right after it
    /// (`btr_page_get_split_rec_to_right`): the split record is the second entry after
    /// the insert point, or, with fewer than two, the new entry goes right with the
    /// entries after it. Right before it (`btr_page_get_split_rec_to_left`): the split
    /// record is the insert point, moved on by one when it is the infimum or the first
    /// entry, and the new entry goes with the entries from the split record on, or left
    /// when it sorts below the split record. `None`: no such insert.
    ///
    /// [`BTreeConfig::sequential_split`]: super::BTreeConfig::sequential_split
    fn sequential_split_at(&self, node: &Node<'_>, slot: usize) -> Option<usize> {
        if !self.cfg.sequential_split {
            return None;
        }
        let n = node.len();
        if slot >= 1 && node.is_last_insert(slot - 1) {
            return Some(if slot + 1 < n { slot + 2 } else { slot });
        }
        if slot < n && node.is_last_insert(slot) {
            return Some(match slot {
                0 => 1,
                1 => 2,
                s => s - 1,
            });
        }
        None
    }

    /// Index `m` of the first entry of `combined` that goes right, by `rule`: the index of
    /// [`SplitRule::At`] when both halves fit (else as `Middle`); otherwise among the points
    /// that leave both halves fitting, the one whose left half is closest to the target,
    /// which is the percent of the usable bytes of [`SplitRule::Fill`], else half the
    /// bytes (`_bt_findsplitloc`'s default: equalize free space).
    fn split_point(
        &self,
        combined: &[(&[u8], &[u8])],
        leaf: bool,
        rule: SplitRule,
    ) -> Result<usize> {
        let sizes: Vec<usize> = combined
            .iter()
            .map(|(k, v)| self.geo.space(k.len(), v.len()))
            .collect();
        let total: usize = sizes.iter().sum();
        // The right page's bytes when the split puts entry `m` first on the right and the
        // left page holds `left` bytes, if both pages fit. An internal page's first entry
        // on the right keeps only its downlink.
        let fitting_right = |m: usize, left: usize| {
            let first_right = if leaf {
                sizes[m]
            } else {
                self.geo.space(0, combined[m].1.len())
            };
            let right = total - left - sizes[m] + first_right;
            (self.page_fits(m, left) && self.page_fits(combined.len() - m, right)).then_some(right)
        };
        let fill = match rule {
            SplitRule::Middle => None,
            SplitRule::Fill(pct) => Some(pct),
            SplitRule::At(m) => {
                if (1..combined.len()).contains(&m)
                    && fitting_right(m, sizes[..m].iter().sum()).is_some()
                {
                    self.ops
                        .splits_at_insert_point
                        .fetch_add(1, Ordering::Relaxed);
                    return Ok(m);
                }
                None
            }
        };
        let target = self.usable * fill.unwrap_or(50) as usize / 100;
        let mut best: Option<((u8, usize), usize)> = None;
        let mut left = 0;
        for m in 1..combined.len() {
            left += sizes[m - 1];
            let Some(right) = fitting_right(m, left) else {
                continue;
            };
            let score = if fill.is_some() {
                if left <= target {
                    (0, target - left)
                } else {
                    (1, left - target)
                }
            } else {
                (0, left.abs_diff(right))
            };
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, m));
            }
        }
        best.map(|(_, m)| m).ok_or_else(|| {
            Error::corrupted(format!(
                "B+tree: no split point fits {} entries of {total} bytes in two pages",
                combined.len()
            ))
        })
    }

    /// Splits the page held by `g` (its contents `page_before`: the caller's copy, taken
    /// under the latch it still holds) whose contents would be `combined`: the
    /// left part stays (flagged INCOMPLETE_SPLIT until its parent has the downlink), the
    /// rest moves to a new right page, the old right sibling's left link is updated, and
    /// `child` (the page whose split this completes, one level down) loses its flag; one
    /// SPLIT record. `held` are the other pages the caller has latched (a corrupted right
    /// link to one of them is an error, not a self-deadlock). Returns the separator for the parent and the new page's block
    /// (PostgreSQL nbtinsert.c `_bt_split`; InnoDB `btr_page_split_and_insert`). The split
    /// point is [`BTree::split_point`]'s for `rule`.
    fn split<'a>(
        &'a self,
        g: &mut WritePageGuard<'a>,
        page_before: &[u8],
        mut combined: Vec<(&[u8], &[u8])>,
        rule: SplitRule,
        child: Option<&mut WritePageGuard<'a>>,
        held: &[u32],
    ) -> Result<(Vec<u8>, u32)> {
        let lid = g.page_id();
        let before_node = self.node(page_before, lid, None)?;
        let (hdr, used_before) = (before_node.header(), before_node.used_bytes());
        let leaf = hdr.level == 0;
        let m = self.split_point(&combined, leaf, rule)?;
        let sep = if !leaf {
            // The separator moves up; the right page's first entry means minus infinity.
            std::mem::take(&mut combined[m].0).to_vec()
        } else if self.cfg.suffix_truncation {
            // Above the left half's largest key: a posting entry's last TID, not its key.
            truncated_separator(&self.max_key_of(combined[m - 1]), combined[m].0)
        } else {
            combined[m].0.to_vec()
        };
        let right_entries = combined.split_off(m);
        let mut old_right = match hdr.right {
            NO_BLOCK => None,
            b if held.contains(&b) => {
                return Err(Error::corrupted(format!(
                    "B+tree {lid}: right link to block {b}, a page on the path"
                )))
            }
            b => {
                let o = self.fetch_write(b, lid, "right link")?;
                self.node(o.data(), o.page_id(), Some(hdr.level))?;
                Some(o)
            }
        };
        let mut r = if self.cfg.extent_allocation {
            // btr0btr.cc `btr_page_split_and_insert`: `hint_page_no = page_no + 1`, FSP_UP.
            self.pool.new_page_near(self.rel, lid.block + 1)?
        } else {
            self.pool.new_page(self.rel)?
        };
        let rid = r.page_id();
        self.fsp_page_allocated_or_freed()?;
        let left_h = NodeHeader {
            flags: hdr.flags | FLAG_INCOMPLETE_SPLIT,
            right: rid.block,
            ..hdr
        };
        let right_h = NodeHeader {
            level: hdr.level,
            flags: 0,
            left: lid.block,
            right: hdr.right,
        };
        let (lp, rp) = (combined, right_entries);
        let before = before_node.entry_slices()?;
        let left_data = bwal::encode_split_left(left_h, &before, &lp);
        node::build(r.data_mut(), rid, self.geo, right_h, &rp)?;
        node::build(g.data_mut(), lid, self.geo, left_h, &lp)?;
        if leaf {
            let n = self.node(g.data(), lid, Some(0))?;
            let garbage = self.leaf_garbage(lid.block);
            let (used_after, free_after) = (n.used_bytes(), n.free_bytes());
            self.note_leaf_split(
                lid.block,
                used_before,
                garbage,
                used_after,
                free_after,
                rid.block,
            );
        }
        let mut which = 0;
        let mut rec = RecordBuilder::new(rmgr::BTREE, info::SPLIT)
            .block(lid, false, &left_data)
            .block(rid, true, &bwal::encode_node(right_h, &rp));
        if let Some(o) = old_right.as_mut() {
            let oid = o.page_id();
            node::set_left(o.data_mut(), oid, rid.block)?;
            rec = rec.block(oid, false, &rid.block.to_le_bytes());
            which |= bwal::SPLIT_HAS_OLD_RIGHT;
        }
        let mut child = child;
        if let Some(c) = child.as_deref_mut() {
            self.clear_incomplete(c)?;
            rec = rec.block(c.page_id(), false, &[]);
            which |= bwal::SPLIT_HAS_CHILD;
        }
        let rec = rec.main_data(&bwal::encode_split_main(self.geo, which, &sep));
        let mut guards: Vec<&mut WritePageGuard<'a>> = vec![g, &mut r];
        if let Some(o) = old_right.as_mut() {
            guards.push(o);
        }
        if let Some(c) = child {
            guards.push(c);
        }
        log_change(self.pool.wal(), &rec, &mut guards)?;
        self.ops.splits.fetch_add(1, Ordering::Relaxed);
        if leaf {
            // btr0btr.cc `btr_page_split_and_insert` → `ibuf_update_free_bits_for_two_pages_low`.
            self.fsp_leaf_free_bits(None)?;
        }
        Ok((sep, rid.block))
    }

    /// A new root above the split old root `left` (PostgreSQL nbtinsert.c `_bt_newroot`):
    /// entries (minus infinity → left, `sep` → `right`); the meta page names it and the
    /// height grows by one; one NEWROOT record.
    fn new_root<'a>(
        &'a self,
        mg: &mut WritePageGuard<'a>,
        left: &mut WritePageGuard<'a>,
        level: u16,
        meta: Meta,
        sep: &[u8],
        right: u32,
    ) -> Result<()> {
        let mut root = self.pool.new_page(self.rel)?;
        let rid = root.page_id();
        self.fsp_page_allocated_or_freed()?;
        let h = NodeHeader {
            level,
            flags: 0,
            left: NO_BLOCK,
            right: NO_BLOCK,
        };
        let (dl, dr) = (left.page_id().block.to_le_bytes(), right.to_le_bytes());
        let entries: [(&[u8], &[u8]); 2] = [(&[], &dl), (sep, &dr)];
        node::build(root.data_mut(), rid, self.geo, h, &entries)?;
        self.clear_incomplete(left)?;
        let meta = Meta {
            root: rid.block,
            height: meta.height + 1,
            ..meta
        };
        meta.write(mg.data_mut());
        let rec = RecordBuilder::new(rmgr::BTREE, info::NEWROOT)
            .block(rid, true, &bwal::encode_node(h, &entries))
            .block(left.page_id(), false, &[])
            .block(mg.page_id(), true, &meta.encode())
            .main_data(&bwal::encode_geometry(self.geo));
        log_change(self.pool.wal(), &rec, &mut [&mut root, left, mg])?;
        // Under the meta page's and the old root's exclusive latches: a descent that
        // latches the old root after this sees its right sibling and rereads the meta page.
        self.cache_root(rid.block, meta.height);
        Ok(())
    }
}

/// Renders a key for an error message: text when printable, else hex; long keys cut.
fn render_key(k: &[u8]) -> String {
    const MAX: usize = 48;
    let cut = &k[..k.len().min(MAX)];
    let mut s = if cut.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(cut).into_owned()
    } else {
        cut.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    if k.len() > MAX {
        s.push_str(&format!("... ({} bytes)", k.len()));
    }
    s
}

/// The runs of bytes in which `old` and `new` (of equal length) differ, as ascending,
/// disjoint ranges `a..b`: the spans an in-place patch must write; empty when they are
/// equal. Two runs whose gap of equal bytes is no longer than a span's header in the
/// record (`at u16 | len u16`, [`bwal::PATCH_SPAN_HEADER_BYTES`]) are written as one, the
/// equal bytes between them costing no more than a second header. (MariaDB writes one
/// redo record per changed field, from its first changed byte: mtr0log.h
/// `mtr_t::memcpy<MAYBE_NOP>`; a run here ends at the last changed byte instead of at
/// the field's end.)
fn changed_spans(old: &[u8], new: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, _) in old.iter().zip(new).enumerate().filter(|(_, (x, y))| x != y) {
        match spans.last_mut() {
            Some((_, b)) if i - *b <= bwal::PATCH_SPAN_HEADER_BYTES => *b = i + 1,
            _ => spans.push((i, i + 1)),
        }
    }
    spans
}
