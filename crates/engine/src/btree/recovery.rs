//! Finishing the splits a crash (or an error in the middle of a cascade) left incomplete,
//! as recovery must before the tree is used (PostgreSQL nbtinsert.c `_bt_finish_split`,
//! which PostgreSQL runs lazily after nbtxlog.c `btree_xlog_split` left the flag; here run
//! eagerly): the pages flagged INCOMPLETE_SPLIT found level by level, a separator chosen
//! from the two halves and the left page's fences, and the downlink inserted by the normal
//! parent insertion. Redo of single records is in [`super::wal`].

use super::dedup;
use super::node::{Meta, FLAG_INCOMPLETE_SPLIT, NO_BLOCK};
use super::tree::{truncated_separator, BTree, Hops};
use crate::error::{Error, Result};
use crate::page::PageId;

/// A page's key range `[low, high)` (`None` = unbounded).
type Fences = (Option<Vec<u8>>, Option<Vec<u8>>);

/// [`BTree::split_halves`]: the largest key under the left half, the first key of the
/// leftmost leaf under the right half, the smallest separator on the right half's
/// leftmost path.
type SplitHalves = (Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>);

impl BTree {
    /// Finishes every split that a crash (or an error in the middle of a cascade) left
    /// incomplete, as crash recovery must before the tree is used: for each page with
    /// INCOMPLETE_SPLIT, the missing downlink to its right sibling is inserted into the
    /// parent, clearing the flag in the same record (PostgreSQL nbtinsert.c
    /// `_bt_finish_split`, which PostgreSQL runs lazily from `_bt_getstackbuf` /
    /// `_bt_moveright`; mvcclab readers do not move right, so recovery runs it eagerly).
    /// The insertion is the normal one (`insert_into_parent`, PostgreSQL
    /// `_bt_insert_parent`): one INSERT_UPPER record, or a SPLIT of a full parent naming the
    /// child whose flag it clears and so on up, or a NEWROOT when the unfinished split is at
    /// the root level (the meta page still names the left page, the old root: PostgreSQL
    /// `_bt_newroot`). So a crash while finishing leaves a state this function finishes in
    /// turn. Returns the number of splits finished.
    ///
    /// How it finds them: each level is walked left to right along the right links from
    /// its leftmost page, from the root's level (the page the meta page names; a right
    /// sibling there is the unlinked half of a root split) down to the leaves; a page
    /// reached only through a right link is visited too. Levels go top down, so the parent
    /// level of each split being finished is already complete and the descent towards the
    /// separator finds the parent holding the left page's downlink (PostgreSQL gets the
    /// same guarantee by finishing an incomplete parent first, in `_bt_getstackbuf`).
    ///
    /// The separator: a leaf split's is recomputed from the two halves exactly as the
    /// split chose it (the right page's first key, suffix-truncated against the left page's
    /// last key when [`BTreeConfig::suffix_truncation`] is on). An internal split's moved up
    /// and is stored nowhere (no high keys; the right page's first key is minus infinity),
    /// so one is chosen that bounds the two subtrees the same way: from the largest key
    /// under the left page (its rightmost path, halves of unfinished splits below
    /// included) and the first key of the leftmost leaf under the right page; it lies in
    /// the left page's range and above every key under the left page and at most every key
    /// under the right one, so every lookup and scan finds what it found with the original.
    ///
    /// Runs single-threaded at recovery: it reads with shared latches one page at a time
    /// and changes the tree through the pessimistic descent's exclusive latches, but does
    /// not guard against concurrent changes between the two.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page or sibling chain, an incomplete split
    /// without a right sibling or whose right sibling does not link back, a flagged page at
    /// the root level that is not the root, a page no downlink reaches, or halves whose keys
    /// leave no separator between them; pool and WAL errors (the splits finished before stay
    /// finished; calling it again goes on).
    ///
    /// [`BTreeConfig::suffix_truncation`]: super::BTreeConfig::suffix_truncation
    pub fn finish_incomplete_splits(&self) -> Result<usize> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let mut finished = 0;
        self.walk_levels(
            &meta,
            |id, n, _| {
                let hdr = n.header();
                Ok((hdr.flags & FLAG_INCOMPLETE_SPLIT != 0).then_some((id.block, hdr.right)))
            },
            // Each level's splits are finished before the walk descends: finishing changes
            // only the flag of the page and pages above its level.
            |level, flagged| {
                for (block, right) in flagged {
                    self.finish_split(block, right, level)?;
                    finished += 1;
                }
                Ok(())
            },
        )?;
        Ok(finished)
    }

    /// Finishes the split of `left` (at `level`, flagged) whose right half is `right`:
    /// chooses the separator (see [`BTree::finish_incomplete_splits`]), descends to `left`
    /// pessimistically and inserts the downlink with [`BTree::insert_into_parent`].
    fn finish_split(&self, left: u32, right: u32, level: u16) -> Result<()> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let lid = PageId::new(self.rel, left);
        let corrupt = |what: String| Error::corrupted(format!("B+tree {lid}: {what}"));
        if right == NO_BLOCK {
            return Err(corrupt("INCOMPLETE_SPLIT without a right sibling".into()));
        }
        let (low, high) = self.fences_of(&meta, left, level)?;
        let (below, first_right, right_sep) = self.split_halves(left, right, level)?;
        // Everything the separator must stay above / at most / below.
        let lb = match (low, below) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let ub_sep = match (high, right_sep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sep = match (&first_right, &lb) {
            (Some(f), l) if self.cfg.suffix_truncation => {
                truncated_separator(l.as_deref().unwrap_or(&[]), f)
            }
            (Some(f), _) => f.clone(),
            // The right half's leftmost leaf is empty: just above everything on the left.
            (None, Some(l)) => {
                let mut s = l.clone();
                s.push(0);
                s
            }
            (None, None) => vec![0],
        };
        let fits = !sep.is_empty()
            && lb.as_ref().is_none_or(|l| *l < sep)
            && first_right.as_ref().is_none_or(|f| sep <= *f)
            && ub_sep.as_ref().is_none_or(|u| sep < *u);
        if !fits {
            return Err(corrupt(format!(
                "no separator fits between the halves of its incomplete split (right half {right})"
            )));
        }
        let (wp, g) = self.descend_pessimistic(&sep, level)?;
        let hdr = self.node(g.data(), g.page_id(), Some(level))?.header();
        if g.page_id().block != left || hdr.flags & FLAG_INCOMPLETE_SPLIT == 0 || hdr.right != right
        {
            return Err(corrupt(format!(
                "the descent for its incomplete split's separator reached {} (right {}, flags {:#x})",
                g.page_id(),
                hdr.right,
                hdr.flags
            )));
        }
        self.insert_into_parent(wp, g, sep, right, level)
    }

    /// The key range `[low, high)` that the downlink to `target` (at `level`) gives it
    /// (`None` = unbounded), found by walking the levels above it from the root (shared
    /// latches, one page at a time). A page at the root level must be the root.
    fn fences_of(&self, meta: &Meta, target: u32, level: u16) -> Result<Fences> {
        let root_level = Self::root_level(meta);
        let tid = PageId::new(self.rel, target);
        if level > root_level || (level == root_level && target != meta.root) {
            return Err(Error::corrupted(format!(
                    "B+tree {tid}: level {level} page with INCOMPLETE_SPLIT is not the root (block {}, level {root_level})",
                    meta.root
                )));
        }
        if level == root_level {
            return Ok((None, None));
        }
        let mut budget = self.n_blocks()? as u64;
        let mut stack: Vec<(u32, u16, PageId, Fences)> =
            vec![(meta.root, root_level, self.meta_id(), (None, None))];
        while let Some((block, lv, from, (low, high))) = stack.pop() {
            if budget == 0 {
                return Err(Error::corrupted(format!(
                    "B+tree {from}: more pages reachable than the relation has"
                )));
            }
            budget -= 1;
            let g = self.fetch_read(block, from, "downlink")?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            for i in 0..n.len() {
                let child = n.child(i)?;
                let c_low = if i == 0 {
                    low.clone()
                } else {
                    Some(n.key(i)?.to_vec())
                };
                let c_high = match i + 1 < n.len() {
                    true => Some(n.key(i + 1)?.to_vec()),
                    false => high.clone(),
                };
                if lv - 1 == level {
                    if child == target {
                        return Ok((c_low, c_high));
                    }
                } else {
                    stack.push((child, lv - 1, id, (c_low, c_high)));
                }
            }
        }
        Err(Error::corrupted(format!(
            "B+tree {tid}: no downlink reaches this level {level} page"
        )))
    }

    /// What the two halves of the split of `left` into `right` (at `level`) hold near
    /// their boundary: the largest key under `left` (its last key and those of the pages
    /// on its rightmost path down to the leaf, moving right past pages whose own split is
    /// unfinished: their right halves belong to the same subtree), the first key of the
    /// leftmost leaf under `right`, and the smallest separator on `right`'s leftmost path.
    fn split_halves(&self, left: u32, right: u32, level: u16) -> Result<SplitHalves> {
        let mut hops = Hops::new(self)?;
        let mut below: Option<Vec<u8>> = None;
        let (mut at, mut lv, mut from, mut chase) = (left, level, self.meta_id(), false);
        loop {
            let g = self.fetch_read(at, from, if chase { "right link" } else { "downlink" })?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            if lv < level && n.flags() & FLAG_INCOMPLETE_SPLIT != 0 && n.right() != NO_BLOCK {
                (at, from, chase) = (n.right(), id, true);
                hops.step(id)?;
                continue;
            }
            let keyed = if lv > 0 { 1 } else { 0 };
            if n.len() > keyed {
                let (k, v) = n.entry(n.len() - 1)?;
                // A leaf's largest key: a posting entry's last TID.
                let last = if lv == 0 && self.cfg.deduplicate {
                    dedup::max_key(k, v)
                } else {
                    k.to_vec()
                };
                if below.as_deref().is_none_or(|b| last.as_slice() > b) {
                    below = Some(last);
                }
            }
            if lv == 0 {
                break;
            }
            (at, from, chase) = (n.child(n.len() - 1)?, id, false);
            lv -= 1;
        }
        let (mut at, mut lv, mut from) = (right, level, PageId::new(self.rel, left));
        let mut right_sep: Option<Vec<u8>> = None;
        loop {
            let what = if lv == level {
                "right link"
            } else {
                "downlink"
            };
            let g = self.fetch_read(at, from, what)?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            if lv == level && n.left() != left {
                return Err(Error::corrupted(format!(
                        "B+tree {id}: right half of the incomplete split of block {left} links left to {}",
                        n.left()
                    )));
            }
            if lv == 0 {
                let first = (!n.is_empty()).then(|| n.key(0)).transpose()?;
                return Ok((below, first.map(<[u8]>::to_vec), right_sep));
            }
            if n.len() > 1 {
                let k = n.key(1)?;
                if right_sep.as_deref().is_none_or(|s| k < s) {
                    right_sep = Some(k.to_vec());
                }
            }
            (at, from) = (n.child(0)?, id);
            lv -= 1;
        }
    }
}
