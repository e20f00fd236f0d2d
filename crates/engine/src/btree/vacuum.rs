//! Vacuum's pass over the index (PostgreSQL nbtree.c `btbulkdelete` → `btvacuumscan` →
//! `btvacuumpage`, with `btreevacuumposting` for posting entries): every leaf visited once,
//! left to right, the entries a callback names dead removed, one VACUUM record per changed
//! leaf (nbtxlog.c `btree_xlog_vacuum`).

use super::dedup;
use super::node::{self, Entry, NO_BLOCK};
use super::search::Target;
use super::tree::{BTree, Hops};
use super::wal::{self as bwal, info};
use crate::buffer::log_change;
use crate::error::Result;
use crate::wal::{rmgr, RecordBuilder};
use std::ops::Bound;

impl BTree {
    /// Vacuum's index pass (PostgreSQL nbtree.c `btbulkdelete` → `btvacuumscan`): visits
    /// every leaf once, left to right along the sibling links under exclusive latches
    /// (coupled), removes the entries for which `dead(key, value)` is true and logs one
    /// VACUUM record per changed leaf. `dead` runs under the leaf's exclusive latch and
    /// must not use this tree (PostgreSQL's callback is a lookup in the dead-TID store).
    /// Returns the number of entries removed. Counts go to the calling thread's cause
    /// (`vacuum` when the caller entered it).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page or a sibling cycle; pool and WAL
    /// errors (the leaves before the failing one keep their removals).
    ///
    /// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted): Error::Storage(StorageError::Corrupted)
    pub fn bulk_delete(&self, dead: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
        let mut g = self.descend_write(&Target::Lower(Bound::Unbounded))?;
        let mut removed = 0u64;
        let mut hops = Hops::new(self)?;
        loop {
            let id = g.page_id();
            let (hdr, gone) = {
                let n = self.node(g.data(), id, Some(0))?;
                let mut gone = Vec::new();
                for i in 0..n.len() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate && dedup::is_posting(k, v) {
                        // btreevacuumposting: the callback per TID; a posting entry with
                        // some dead TIDs is rewritten without them.
                        let d: Vec<bool> =
                            dedup::expand(k, v).iter().map(|t| dead(t, &[])).collect();
                        let n_dead = d.iter().filter(|&&x| x).count();
                        if n_dead == d.len() {
                            gone.push((i, None, n_dead));
                        } else if n_dead > 0 {
                            gone.push((i, dedup::without(k, v, |j| d[j]), n_dead));
                        }
                    } else if dead(k, v) {
                        gone.push((i, None, 1));
                    }
                }
                (n.header(), gone)
            };
            if !gone.is_empty() {
                let slots: Vec<usize> =
                    gone.iter().filter(|g| g.1.is_none()).map(|g| g.0).collect();
                let updated: Vec<(usize, Entry)> = gone
                    .iter()
                    .filter_map(|g| g.1.clone().map(|e| (g.0, e)))
                    .collect();
                let keep = {
                    let n = self.node(g.data(), id, Some(0))?;
                    bwal::vacuumed_entries(n.entries()?, &slots, &updated)
                };
                // One compaction for the page (bufpage.c `PageIndexMultiDelete`).
                node::build(g.data_mut(), id, self.geo, hdr, &node::pairs(&keep))?;
                let rec = RecordBuilder::new(rmgr::BTREE, info::VACUUM).block(
                    id,
                    false,
                    &bwal::encode_removed_slots(&slots, &updated),
                );
                log_change(self.pool.wal(), &rec, &mut [&mut g])?;
                removed += gone.iter().map(|g| g.2 as u64).sum::<u64>();
            }
            if hdr.right == NO_BLOCK {
                return Ok(removed);
            }
            let r = self.fetch_write(hdr.right, id, "right link")?;
            hops.step(id)?;
            g = r;
        }
    }
}
