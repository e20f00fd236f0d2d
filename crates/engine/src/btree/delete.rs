//! Deleting one entry, and merging a leaf it leaves too empty: the delete in its leaf
//! (InnoDB btr0cur.cc `btr_cur_optimistic_delete`; PostgreSQL's nbtree removes entries only
//! in VACUUM and before a split), then, below
//! [`super::BTreeConfig::merge_threshold_pct`], the merge with a sibling under the same
//! parent (btr0btr.cc `btr_compress`, reached through `btr_cur_compress_if_useful`) and
//! the emptied page returned to the relation's free list (`btr_page_free`). nbtree never
//! merges.

use super::dedup;
use super::node::{self, Node, NodeHeader, NO_BLOCK};
use super::search::Target;
use super::tree::BTree;
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, WritePageGuard};
use crate::error::{Error, Result};
use crate::wal::{rmgr, RecordBuilder};
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// How often `BTree::free_merged` tries to take a freed page that a reader pins.
const FREE_RESIDENT_TRIES: usize = 100;

/// Which of the two leaves of a merge is freed (`BTree::merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Victim {
    /// The right one: it moves into its left sibling (MERGE).
    Right,
    /// The left one: it moves into its right sibling (MERGE_RIGHT).
    Left,
}

impl BTree {
    /// Removes the entry with `key`; `Ok(false)` when there is none. Without a merge
    /// threshold a leaf may become empty and stays in the tree (PostgreSQL deletes empty
    /// pages in VACUUM, never merges; mvcclab does neither). With one
    /// ([`BTreeConfig::merge_threshold_pct`], InnoDB), a leaf left below it tries to merge
    /// with a sibling afterwards (see `compress`), as InnoDB's optimistic delete gives way
    /// to the pessimistic one when `btr_cur_can_delete_without_compress` says no.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page on the path; pool and WAL errors.
    ///
    /// [`BTreeConfig::merge_threshold_pct`]: super::BTreeConfig::merge_threshold_pct
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.delete_where(key, |_| true)
    }

    /// [`BTree::delete`] of the entry with `key` only when `pred` holds for its value,
    /// tested under the leaf's exclusive latch, in the one descent that deletes it, as
    /// InnoDB's purge checks the secondary record it found before it deletes it on the
    /// same cursor (row0purge.cc `row_purge_remove_sec_if_poss_leaf`: one
    /// `row_search_index_entry`, then `btr_cur_optimistic_delete`). `Ok(false)` when there
    /// is no such entry or `pred` says no. In a deduplicating tree `pred` sees an empty
    /// value for a TID inside a posting entry (it has none of its own).
    ///
    /// Errors: as [`BTree::delete`].
    pub fn delete_where(&self, key: &[u8], pred: impl FnOnce(&[u8]) -> bool) -> Result<bool> {
        let mut g = self.descend_write(&Target::Lower(Bound::Included(key)))?;
        let id = g.page_id();
        let (i, posting) = {
            let n = self.node(g.data(), id, Some(0))?;
            let Some((i, j)) = self.locate_tid(&n, key)? else {
                return Ok(false);
            };
            let (k, v) = n.entry(i)?;
            let in_posting = self.cfg.deduplicate && dedup::is_posting(k, v);
            if !pred(if in_posting { &[] } else { v }) {
                return Ok(false);
            }
            let posting = if in_posting {
                dedup::without(k, v, |x| x == j)
            } else {
                None
            };
            (i, posting)
        };
        if let Some(e) = posting {
            // One TID out of a posting entry: the entry rewritten (nbtpage.c
            // `_bt_delitems_vacuum`'s updated items), logged as UPDATE_VALUE.
            node::replace_at(g.data_mut(), id, i, &e.key, &e.value)?;
            let rec = RecordBuilder::new(rmgr::BTREE, info::UPDATE_VALUE).block(
                id,
                false,
                &bwal::encode_slot_entry(i, &e.key, &e.value),
            );
            log_change(self.pool.wal(), &rec, &mut [&mut g])?;
            return Ok(true);
        }
        let space = self.node(g.data(), id, Some(0))?.entry_space(i)?;
        node::remove_at(g.data_mut(), id, i)?;
        self.note_leaf_delete(id.block, space);
        let rec = RecordBuilder::new(rmgr::BTREE, info::DELETE).block(
            id,
            false,
            &bwal::encode_delete(i, key),
        );
        log_change(self.pool.wal(), &rec, &mut [&mut g])?;
        let compress = {
            let n = self.node(g.data(), id, Some(0))?;
            self.below_merge_threshold(&n) && (n.left() != NO_BLOCK || n.right() != NO_BLOCK)
        };
        drop(g);
        if compress {
            self.compress(key)?;
        }
        Ok(true)
    }

    /// Whether leaf `n` holds fewer entry bytes than the merge threshold
    /// ([`BTreeConfig::merge_threshold_pct`] of the page size), as InnoDB's
    /// `btr_cur_compress_recommendation` compares `page_get_data_size` (records with their
    /// headers, not the page directory) with `BTR_CUR_PAGE_COMPRESS_LIMIT`
    /// (`srv_page_size × merge_threshold / 100`). False without a threshold.
    ///
    /// [`BTreeConfig::merge_threshold_pct`]: super::BTreeConfig::merge_threshold_pct
    fn below_merge_threshold(&self, n: &Node<'_>) -> bool {
        let Some(pct) = self.cfg.merge_threshold_pct else {
            return false;
        };
        // With innodb_compact, a slot and the 2-byte header are InnoDB's 4 header bytes
        // besides the info bits (`Geometry::innodb_compact`): the used bytes are
        // `page_get_data_size`.
        let data = if self.geo.innodb_compact {
            n.used_bytes()
        } else {
            n.used_bytes() - n.len() * self.geo.slot_bytes as usize
        };
        let page = self.pool.store().page_size().bytes();
        data < page * pct as usize / 100
    }

    /// Tries to merge the leaf holding `key` with a sibling (InnoDB btr0btr.cc
    /// `btr_compress`, reached from `btr_cur_pessimistic_delete` through
    /// `btr_cur_compress_if_useful`). The pessimistic descent latches the parent
    /// exclusively, then the leaf's left sibling under the same parent, the leaf and its
    /// right sibling, in key order (InnoDB's `btr_cur_latch_leaves` latches left, self,
    /// right for BTR_MODIFY_TREE). A left sibling under another parent precedes the parent
    /// in the lock order: it is only try-latched, without waiting, and never merged with.
    /// Still below the threshold under the latches, the leaf counts a merge attempt; it
    /// moves into its left sibling when all its entries fit there (with
    /// [`BTreeConfig::innodb_compact`](super::BTreeConfig::innodb_compact), together with
    /// the page directory InnoDB reserves for all of them: `btr_can_merge_with_page`'s
    /// `page_get_max_insert_size_after_reorganize`; MERGE), else into its right sibling
    /// (same parent) when they fit there (`is_left` false; MERGE_RIGHT): the right page
    /// survives, its low fence lowered to the leaf's, and the leaf's left neighbour is
    /// linked to it, so that neighbour's latch is needed; when the try-latch of a left
    /// neighbour under another parent failed, there is no merge (InnoDB, which holds the
    /// index latch in SX for the whole change, waits for it). Either way the leaf itself
    /// is freed ([`node::FLAG_FREED`]) to the relation's free list. Merges stop at the
    /// leaves: an internal page that falls below the threshold stays (InnoDB compresses the
    /// father level too, and lifts a lone child into the root), and a sibling under another
    /// parent is never merged with (InnoDB merges across fathers).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page on the path or sibling links that
    /// disagree with the parent's downlinks; pool and WAL errors.
    /// Called only for a leaf with a sibling, so the tree has a level above the leaves
    /// (heights never shrink).
    fn compress(&self, key: &[u8]) -> Result<()> {
        let (wp, mut parent) = self.descend_pessimistic(key, 1)?;
        // The parent only loses a downlink: nothing above it changes.
        drop(wp);
        // btr0cur.cc `btr_cur_pessimistic_delete` → `fsp_reserve_free_extents`.
        self.fsp_extents_reserved()?;
        let pid = parent.page_id();
        let (i, left_block, block, right_in_parent) = {
            let n = self.node(parent.data(), pid, Some(1))?;
            let i = n.child_index(key, true)?;
            let left = if i > 0 { Some(n.child(i - 1)?) } else { None };
            let right = if i + 1 < n.len() {
                Some(n.child(i + 1)?)
            } else {
                None
            };
            (i, left, n.child(i)?, right)
        };
        let mut left = match left_block {
            Some(b) => Some(self.fetch_write(b, pid, "downlink")?),
            None => None,
        };
        let mut leaf = self.fetch_write(block, pid, "downlink")?;
        let lid = leaf.page_id();
        let (lh, below, leaf_n, leaf_used) = {
            let n = self.node(leaf.data(), lid, Some(0))?;
            let below = self.below_merge_threshold(&n);
            (n.header(), below, n.len(), n.used_bytes())
        };
        // A left sibling under another parent precedes the parent in the lock order: it
        // is only try-latched (see the doc above).
        let mut other_left = if left.is_none() && lh.left != NO_BLOCK {
            let other = self.linked(lh.left, lid, "left link")?;
            self.pool.try_fetch_write(other)?
        } else {
            None
        };
        if left_block.is_some_and(|b| b != lh.left)
            || right_in_parent.is_some_and(|b| b != lh.right)
        {
            return Err(Error::corrupted(format!(
                "B+tree {lid}: sibling links {} / {} disagree with the downlinks of {pid}",
                lh.left, lh.right
            )));
        }
        let mut right = match lh.right {
            NO_BLOCK => None,
            b => Some(self.fetch_write(b, lid, "right link")?),
        };
        if !below || (left.is_none() && right.is_none()) {
            return Ok(());
        }
        self.ops.merge_attempts.fetch_add(1, Ordering::Relaxed);
        if let Some(l) = left.as_mut() {
            let ln = self.node(l.data(), l.page_id(), Some(0))?;
            if self.page_fits(ln.len() + leaf_n, ln.used_bytes() + leaf_used) {
                self.merge(&mut parent, i, l, &mut leaf, right.as_mut(), Victim::Right)?;
                drop((parent, left, right));
                return self.free_merged(leaf);
            }
        }
        // Only a right sibling under the same parent is merged with.
        let (Some(_), Some(mut r)) = (right_in_parent, right) else {
            return Ok(());
        };
        let fits = {
            let rn = self.node(r.data(), r.page_id(), Some(0))?;
            self.page_fits(rn.len() + leaf_n, rn.used_bytes() + leaf_used)
        };
        // The leaf's left neighbour gets a new right link: without its latch (a left
        // sibling under another parent that another thread holds) there is no merge.
        let prev = left.as_mut().or(other_left.as_mut());
        if !fits || (lh.left != NO_BLOCK && prev.is_none()) {
            return Ok(());
        }
        self.merge(&mut parent, i, &mut r, &mut leaf, prev, Victim::Left)?;
        drop((parent, left, other_left, r));
        self.free_merged(leaf)
    }

    /// Moves every entry of `victim` into `survivor`, its sibling under `parent`, removes
    /// one downlink, links `survivor` to the victim's outer neighbour `outer` and back, and
    /// marks the victim freed: one record (InnoDB `btr_compress`: `page_copy_rec_list_end`
    /// / `_start` into the merge page, `btr_level_list_remove`, the node pointer's update
    /// and delete, `btr_page_free`).
    /// - [`Victim::Right`]: `victim` is the right sibling, at downlink `slot`, and its
    ///   entries go after the survivor's; `outer` is the victim's right sibling; the
    ///   victim's downlink is removed (MERGE).
    /// - [`Victim::Left`]: `victim` is the left sibling, at downlink `slot`, and its
    ///   entries go before the survivor's; `outer` is the victim's left sibling; downlink
    ///   `slot` keeps its separator and names the survivor, whose own downlink
    ///   (`slot + 1`) is removed (`btr_node_ptr_set_child_page_no`; MERGE_RIGHT). The
    ///   survivor's low fence moves down to the victim's.
    ///
    /// The survivor's garbage and free space decide its reorganization
    /// (`BTree::note_leaf_merge`).
    fn merge<'a>(
        &'a self,
        parent: &mut WritePageGuard<'a>,
        slot: usize,
        survivor: &mut WritePageGuard<'a>,
        victim: &mut WritePageGuard<'a>,
        outer: Option<&mut WritePageGuard<'a>>,
        side: Victim,
    ) -> Result<()> {
        let (sid, vid, pid) = (survivor.page_id(), victim.page_id(), parent.page_id());
        // The survivor is rebuilt in place from its own entries and the victim's: its entries
        // are read from a copy of the page, both pages' as slices (no copy per entry).
        let before = survivor.data().to_vec();
        let sn = self.node(&before, sid, Some(0))?;
        let vn = self.node(victim.data(), vid, Some(0))?;
        // The survivor's free space for the victim's entries (InnoDB's
        // `page_get_max_insert_size(merge_page, n_recs)`).
        let (sh, survivor_free) = (sn.header(), sn.free_bytes_for(vn.len()));
        let (vh, moved_bytes) = (vn.header(), vn.used_bytes());
        let (survivor_slot, victim_slot) = match side {
            Victim::Right => (slot - 1, slot),
            Victim::Left => (slot + 1, slot),
        };
        {
            let pn = self.node(parent.data(), pid, Some(1))?;
            if pn.child(victim_slot)? != vid.block || pn.child(survivor_slot)? != sid.block {
                return Err(Error::corrupted(format!(
                    "B+tree {pid}: downlinks {victim_slot} and {survivor_slot} do not name {vid} and {sid}"
                )));
            }
        }
        let own = sn.entry_slices()?;
        let moved = vn.entry_slices()?;
        // The victim's outer link becomes the survivor's on that side.
        let (all, new_sh, code, link): (Vec<_>, _, _, _) = match side {
            Victim::Right => (
                own.iter().chain(&moved).copied().collect(),
                NodeHeader {
                    right: vh.right,
                    ..sh
                },
                info::MERGE,
                vh.right,
            ),
            Victim::Left => (
                moved.iter().chain(&own).copied().collect(),
                NodeHeader {
                    left: vh.left,
                    ..sh
                },
                info::MERGE_RIGHT,
                vh.left,
            ),
        };
        let data = bwal::encode_merge(link, &moved);
        node::build(survivor.data_mut(), sid, self.geo, new_sh, &all)?;
        let none: [(&[u8], &[u8]); 0] = [];
        node::build(
            victim.data_mut(),
            vid,
            self.geo,
            bwal::freed_header(),
            &none,
        )?;
        let garbage = self.leaf_garbage(sid.block);
        self.note_leaf_merge(sid.block, vid.block, survivor_free, garbage, moved_bytes);
        let mut parent_data = (slot as u16).to_le_bytes().to_vec();
        match side {
            Victim::Right => node::remove_at(parent.data_mut(), pid, slot)?,
            Victim::Left => {
                node::set_child(parent.data_mut(), pid, slot, sid.block)?;
                node::remove_at(parent.data_mut(), pid, slot + 1)?;
                parent_data.extend_from_slice(&sid.block.to_le_bytes());
            }
        }
        let mut rec = RecordBuilder::new(rmgr::BTREE, code)
            .block(sid, false, &data)
            .block(vid, true, &[])
            .block(pid, false, &parent_data);
        let mut guards: Vec<&mut WritePageGuard<'a>> = vec![survivor, victim, parent];
        if let Some(o) = outer {
            let oid = o.page_id();
            if oid.block != link {
                return Err(Error::corrupted(format!(
                    "B+tree {vid}: its sibling link names {link}, not {oid}"
                )));
            }
            match side {
                Victim::Right => node::set_left(o.data_mut(), oid, sid.block)?,
                Victim::Left => node::set_right(o.data_mut(), oid, sid.block)?,
            }
            rec = rec.block(oid, false, &sid.block.to_le_bytes());
            guards.push(o);
        } else if link != NO_BLOCK {
            return Err(Error::corrupted(format!(
                "B+tree {vid}: its sibling {link} was not latched for the merge"
            )));
        }
        let rec = rec.main_data(&bwal::encode_geometry(self.geo));
        log_change(self.pool.wal(), &rec, &mut guards)?;
        self.ops.merges.fetch_add(1, Ordering::Relaxed);
        // `btr_compress` → `ibuf_update_free_bits_if_full` on the page merged into.
        self.fsp_leaf_free_bits(Some((guards[0].data(), sid)))
    }

    /// Returns a page a merge emptied to the relation's free list, for a later split's
    /// [`BufferPool::new_page`]. The page stays in the pool, marked freed and no longer
    /// dirty ([`BufferPool::free_resident`]), so it is never written: InnoDB's
    /// `btr_page_free` → fsp0fsp.cc `fseg_free_page` → buf0buf.cc `buf_page_free` marks
    /// the block FREED, and the page cleaner releases a FREED block without writing it
    /// (buf0flu.cc `buf_page_t::flush` → `buf_pool_t::release_freed_page`, from both the
    /// LRU and the flush-list batch). Recovery needs no image of it: nothing reaches a
    /// freed page until a split takes it again, and the split's record rebuilds it whole
    /// (a will-init block); the records before the MERGE (itself will-init for this page)
    /// apply on top of whatever image the page last had on the device, which is the page
    /// as of its last write, or, with the doublewrite area, are skipped (`recovery::redo`,
    /// MariaDB log0recv.cc `page_recv_t::will_not_read`). Only with the doublewrite area:
    /// a checkpoint running during the merge skips the page once it is no longer dirty,
    /// so its image on the device can be older than the checkpoint's redo pointer, and
    /// the records between them are gone; without the skip, redo would apply the later
    /// ones to that image. So under another torn-page protection, and for a page a reader
    /// still pins after a short wait, the page keeps its dirty flag and is written once,
    /// as every freed leaf was until 2026-11-27: one extra pool write per merge (0.23
    /// merges per transaction of innodb oltp_update_index at `sweep`; docs/fidelity.md).
    ///
    /// [`BufferPool::new_page`]: crate::buffer::BufferPool::new_page
    /// [`BufferPool::free_resident`]: crate::buffer::BufferPool::free_resident
    fn free_merged(&self, g: WritePageGuard<'_>) -> Result<()> {
        let id = g.page_id();
        drop(g);
        if self.pool.has_doublewrite() {
            for _ in 0..FREE_RESIDENT_TRIES {
                if self.pool.free_resident(id) {
                    break;
                }
                std::thread::yield_now();
            }
        }
        self.pool.store().free_page(id)?;
        // fsp0fsp.cc `fseg_free_page`: the extent descriptor and the segment inode.
        self.fsp_page_allocated_or_freed()
    }
}
