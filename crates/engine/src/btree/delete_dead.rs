//! Entries whose heap tuples are dead to every transaction: marked on their leaf after a
//! scan found them so (kill bits, PostgreSQL nbtutils.c `_bt_killitems`), and removed from
//! a full leaf before it splits, the table deciding which go ([`super::cleanup`];
//! nbtinsert.c `_bt_delete_or_dedup_one_page` → `_bt_simpledel_pass`, nbtdedup.c
//! `_bt_bottomupdel_pass`, nbtpage.c `_bt_delitems_delete_check` / `_bt_delitems_delete`).

use super::cleanup::{CleanupOutcome, DeleteCandidate, DeleteOp, IndexDeleteTuples, InsertCleanup};
use super::dedup::{self, TID_BYTES};
use super::node::{self, Entry, Node};
use super::search::LeafRef;
use super::tree::BTree;
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, WritePageGuard};
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::wal::{rmgr, RecordBuilder};

impl BTree {
    /// Marks the entries with `keys` in `leaf` dead ([`node::SLOT_FLAG_DEAD`]), as a
    /// hint without WAL (PostgreSQL nbtutils.c `_bt_killitems` → `MarkBufferDirtyHint`; with
    /// full-page writes, a full-page image at the leaf's first change since the checkpoint,
    /// [`crate::buffer::mark_dirty_hint`]), after a scan found every tuple they point at dead to everyone. Keys no longer in
    /// that leaf (a split or vacuum moved or removed them) are skipped; so is the whole
    /// leaf when its page LSN is no longer the one the scan saw (`_bt_killitems` gives up
    /// on a page that changed: with vacuum and a recycled heap TID, an entry with the same
    /// key may now point at a live tuple) or its latch cannot be had at once. Returns the
    /// entries newly marked.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page; pool errors.
    pub fn kill_items(&self, leaf: LeafRef, keys: &[Vec<u8>]) -> Result<usize> {
        if keys.is_empty() || self.geo.slot_bytes < 3 {
            return Ok(0);
        }
        let Some(mut g) = self
            .pool
            .try_fetch_write(PageId::new(self.rel, leaf.block))?
        else {
            return Ok(0);
        };
        if g.page_lsn() != leaf.lsn {
            // The leaf changed since the scan read it: vacuum may have removed an entry
            // and an insert added one with the same key for a recycled heap TID, now live
            // (`_bt_killitems` gives up when the page LSN moved).
            return Ok(0);
        }
        let id = g.page_id();
        let slots: Vec<usize> = {
            let Ok(n) = Node::parse(g.data(), id) else {
                return Ok(0);
            };
            if n.level() != 0 {
                return Ok(0);
            }
            // Per slot, the TIDs named; a posting entry is marked only when every one of
            // its TIDs was (`_bt_killitems` checks each TID of a posting list).
            let mut named: std::collections::BTreeMap<usize, std::collections::BTreeSet<usize>> =
                Default::default();
            for k in keys {
                if let Some((i, j)) = self.locate_tid(&n, k)? {
                    named.entry(i).or_default().insert(j);
                }
            }
            let mut v = Vec::with_capacity(named.len());
            for (i, tids) in named {
                let (k, val) = n.entry(i)?;
                let all = if self.cfg.deduplicate && dedup::is_posting(k, val) {
                    tids.len() == dedup::n_tids(val)
                } else {
                    true
                };
                if all && !n.is_dead(i) {
                    v.push(i);
                }
            }
            v
        };
        let mut marked = 0;
        for i in slots {
            if node::set_dead(g.data_mut(), id, i)? {
                marked += 1;
            }
        }
        if marked > 0 {
            crate::buffer::mark_dirty_hint(self.pool.wal(), &mut g)?;
        }
        Ok(marked)
    }

    /// The deletion candidates of leaf `n` for which `pick(key, known_dead)` holds, one per
    /// TID (a posting entry offers each of its TIDs as `K ‖ tid`; PostgreSQL's
    /// `_bt_simpledel_pass` / `_bt_bottomupdel_pass` do the same with `TM_IndexDelete`
    /// entries pointing into posting lists), `promising` as `promising(slot)` says.
    fn candidates(
        &self,
        n: &Node<'_>,
        pick: &dyn Fn(&[u8], bool) -> bool,
        promising: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<DeleteCandidate>> {
        let mut out = Vec::new();
        for i in 0..n.len() {
            let (k, v) = n.entry(i)?;
            let known_dead = n.is_dead(i);
            if self.cfg.deduplicate && dedup::is_posting(k, v) {
                for tk in dedup::expand(k, v) {
                    if pick(&tk, known_dead) {
                        out.push(DeleteCandidate {
                            slot: i,
                            key: tk,
                            known_dead,
                            promising: true,
                            space_bytes: TID_BYTES,
                        });
                    }
                }
            } else if pick(k, known_dead) {
                out.push(DeleteCandidate {
                    slot: i,
                    key: k.to_vec(),
                    known_dead,
                    promising: promising(i),
                    space_bytes: n.entry_space(i)?,
                });
            }
        }
        Ok(out)
    }

    /// Frees room in the full leaf `g` for an entry needing `need` bytes: simple deletion
    /// of entries marked dead, then bottom-up deletion for an unchanged key (the
    /// `btree::cleanup` module doc). Returns whether the entry now fits.
    pub(super) fn delete_before_split(
        &self,
        g: &mut WritePageGuard<'_>,
        need: usize,
        cleanup: &InsertCleanup<'_>,
        out: &mut CleanupOutcome,
    ) -> Result<bool> {
        let id = g.page_id();
        let table = cleanup.table;
        // 1. Simple deletion (_bt_simpledel_pass): the marked entries, plus the others that
        // point at the same heap blocks (_bt_deadblocks), checked for free.
        let simple = {
            let n = self.node(g.data(), id, Some(0))?;
            let dead = n.dead_slots();
            if dead.is_empty() {
                None
            } else {
                let mut blocks = Vec::new();
                for &i in &dead {
                    let (k, v) = n.entry(i)?;
                    let keys = if self.cfg.deduplicate && dedup::is_posting(k, v) {
                        dedup::expand(k, v)
                    } else {
                        vec![k.to_vec()]
                    };
                    for k in keys {
                        if let Some(b) = table.heap_block(&k) {
                            blocks.push(b);
                        }
                    }
                }
                blocks.sort_unstable();
                blocks.dedup();
                let pick = |key: &[u8], known_dead: bool| {
                    known_dead
                        || table
                            .heap_block(key)
                            .is_some_and(|b| blocks.binary_search(&b).is_ok())
                };
                Some(DeleteOp {
                    bottom_up: false,
                    free_target_bytes: need,
                    candidates: self.candidates(&n, &pick, &|_| false)?,
                })
            }
        };
        if let Some(op) = simple {
            out.simple_deleted += self.delete_deletable(g, table, &op)?;
            if self.node(g.data(), id, Some(0))?.free_bytes() >= need {
                return Ok(true);
            }
        }
        if !cleanup.index_unchanged {
            return Ok(false);
        }
        // 2. Bottom-up deletion (_bt_bottomupdel_pass): every entry a candidate, those in a
        // group of equal keys (before the TID) promising; every TID of a posting entry is.
        let op = {
            let n = self.node(g.data(), id, Some(0))?;
            let suffix = table.tid_suffix_bytes();
            let prefix_len = |k: &[u8]| k.len().saturating_sub(suffix);
            let same = |a: &[u8], b: &[u8]| a[..prefix_len(a)] == b[..prefix_len(b)];
            let keys: Vec<&[u8]> = (0..n.len()).map(|i| n.key(i)).collect::<Result<_>>()?;
            let promising = |i: usize| {
                let k = keys[i];
                (i > 0 && same(keys[i - 1], k)) || (i + 1 < keys.len() && same(keys[i + 1], k))
            };
            let candidates = self.candidates(&n, &|_, _| true, &promising)?;
            if !candidates.iter().any(|c| c.promising) {
                return Ok(false);
            }
            DeleteOp {
                bottom_up: true,
                free_target_bytes: need.max(self.pool.store().page_size().bytes() / 16),
                candidates,
            }
        };
        out.bottom_up_passes += 1;
        out.bottom_up_deleted += self.delete_deletable(g, table, &op)?;
        Ok(self.node(g.data(), id, Some(0))?.free_bytes() >= need)
    }

    /// Asks the table about `op`'s candidates and removes the deletable ones from leaf
    /// `g` in one DELETE_DEAD record (nbtpage.c `_bt_delitems_delete`): an entry goes when
    /// all its TIDs are deletable, a posting entry with only some is rewritten without them
    /// (`updatable`, `_bt_update_posting`). Returns how many TIDs went.
    fn delete_deletable(
        &self,
        g: &mut WritePageGuard<'_>,
        table: &dyn IndexDeleteTuples,
        op: &DeleteOp,
    ) -> Result<u64> {
        let id = g.page_id();
        let verdict = table.index_delete_tuples(op)?;
        if verdict.deletable.len() != op.candidates.len() {
            return Err(Error::corrupted(format!(
                "{id}: the table answered {} verdicts for {} deletion candidates",
                verdict.deletable.len(),
                op.candidates.len()
            )));
        }
        // Per slot, the deletable keys.
        let mut per_slot: std::collections::BTreeMap<usize, Vec<&[u8]>> = Default::default();
        for (c, _) in op
            .candidates
            .iter()
            .zip(&verdict.deletable)
            .filter(|(_, &d)| d)
        {
            per_slot.entry(c.slot).or_default().push(&c.key);
        }
        let mut slots = Vec::new();
        let mut updates: Vec<(usize, Entry)> = Vec::new();
        let mut gone = 0u64;
        {
            let n = self.node(g.data(), id, Some(0))?;
            for (&i, keys) in &per_slot {
                let (k, v) = n.entry(i)?;
                if self.cfg.deduplicate && dedup::is_posting(k, v) {
                    let all = dedup::expand(k, v);
                    let dead: Vec<bool> =
                        all.iter().map(|t| keys.contains(&t.as_slice())).collect();
                    gone += dead.iter().filter(|&&d| d).count() as u64;
                    match dedup::without(k, v, |j| dead[j]) {
                        None => slots.push(i),
                        Some(e) => updates.push((i, e)),
                    }
                } else {
                    gone += 1;
                    slots.push(i);
                }
            }
        }
        if slots.is_empty() && updates.is_empty() {
            return Ok(0);
        }
        for (i, e) in &updates {
            node::replace_at(g.data_mut(), id, *i, &e.key, &e.value)?;
        }
        node::remove_slots(g.data_mut(), id, &slots)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::DELETE_DEAD)
            .block(id, false, &bwal::encode_removed_slots(&slots, &updates))
            .main_data(&verdict.latest_removed_xid.to_le_bytes());
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(gone)
    }
}
