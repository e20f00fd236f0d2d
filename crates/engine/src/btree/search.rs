//! Lookups and scans (PostgreSQL nbtsearch.c: `_bt_search` for the descent, `_bt_first` /
//! `_bt_next` / `_bt_readpage` for scans, `_bt_binsrch_posting` for a TID inside a posting
//! entry): the root latched from the cached copy of the meta page (nbtpage.c
//! `_bt_getroot`), the three descents — shared latch coupling down to a leaf latched shared
//! or exclusive (InnoDB btr0cur.cc `btr_cur_search_to_nth_level` with BTR_SEARCH_LEAF /
//! BTR_MODIFY_LEAF), and the pessimistic one that latches exclusively from the meta page
//! down and keeps the unsafe ancestors (BTR_MODIFY_TREE) — then `get`, forward and
//! backward scans, and the [`LeafRef`] a scan names its leaves by for kill bits.

use super::dedup::{self, TID_BYTES};
use super::node::{Meta, Node, FLAG_FREED, NO_BLOCK};
use super::tree::{BTree, Hops};
use crate::buffer::{ReadPageGuard, WritePageGuard};
use crate::error::{Error, Result};
use crate::page::{Lsn, PageId};
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// What [`BTree::scan_live`] calls per entry: `(leaf block, key, value)`, returning
/// whether to go on.
pub type LeafVisitor<'f> = dyn FnMut(LeafRef, &[u8], &[u8]) -> Result<bool> + 'f;

/// The leaf an entry of a scan came from, as the scan saw it: its block and its page LSN
/// when the scan copied its entries (nbtree's `BTScanPosData.currPage` and `.lsn`), so
/// that [`BTree::kill_items`] can tell whether the leaf changed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeafRef {
    /// The leaf's block.
    pub block: u32,
    /// Its page LSN when the entries were read.
    pub lsn: Lsn,
}

/// Direction of [`BTree::scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScanDirection {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Backward,
}

/// Where a descent goes.
pub(super) enum Target<'k> {
    /// The leaf holding the first key at or after the bound.
    Lower(Bound<&'k [u8]>),
    /// The rightmost leaf that can hold keys below (or at) the bound.
    Upper(Bound<&'k [u8]>),
}

/// What [`BTree::descend_pessimistic`] keeps latched above the page it returns: the meta
/// page (while every page below it on the path is unsafe) and the ancestors, root first,
/// each with the index of the downlink followed.
pub(super) struct WritePath<'a> {
    pub(super) meta: Meta,
    pub(super) meta_g: Option<WritePageGuard<'a>>,
    pub(super) path: Vec<(WritePageGuard<'a>, usize)>,
}

/// The root page latched by [`BTree::latch_root`].
enum RootGuard<'a> {
    Read(ReadPageGuard<'a>),
    Write(WritePageGuard<'a>),
}

impl RootGuard<'_> {
    fn data(&self) -> &[u8] {
        match self {
            RootGuard::Read(g) => g.data(),
            RootGuard::Write(g) => g.data(),
        }
    }

    fn page_id(&self) -> PageId {
        match self {
            RootGuard::Read(g) => g.page_id(),
            RootGuard::Write(g) => g.page_id(),
        }
    }
}

impl BTree {
    /// The root latched for a descent and its level: shared, or exclusive when it is a leaf
    /// and `write_leaf`. From the cached root when it still is the root (nbtpage.c
    /// `_bt_getroot` with `rd_amcache`: the cached root is read and checked, and the meta
    /// page is read only when the check fails): the latched page must be a node at the
    /// cached height's root level with no sibling on either side, so it covers every key
    /// (a root that has split since has a right sibling). Otherwise from the meta page
    /// under its shared latch, released once the root is latched, which refreshes the
    /// cache.
    ///
    /// Errors: as [`BTree::read_meta`] and for a damaged root page.
    fn latch_root(&self, write_leaf: bool) -> Result<(RootGuard<'_>, u16)> {
        let latch = |root: u32, level: u16, what: &str| -> Result<RootGuard<'_>> {
            Ok(if write_leaf && level == 0 {
                RootGuard::Write(self.fetch_write(root, self.meta_id(), what)?)
            } else {
                RootGuard::Read(self.fetch_read(root, self.meta_id(), what)?)
            })
        };
        let c = self.root_cache.load(Ordering::Acquire);
        if c != 0 {
            let (root, height) = ((c >> 32) as u32, c as u32);
            let level = (height - 1) as u16;
            let g = latch(root, level, "cached root")?;
            let still_root = Node::parse(g.data(), g.page_id()).is_ok_and(|n| {
                let h = n.header();
                h.level == level
                    && h.left == NO_BLOCK
                    && h.right == NO_BLOCK
                    && h.flags & FLAG_FREED == 0
            });
            if still_root {
                return Ok((g, level));
            }
        }
        let (mg, meta) = self.read_meta()?;
        let level = Self::root_level(&meta);
        let g = latch(meta.root, level, "root")?;
        self.cache_root(meta.root, meta.height);
        drop(mg);
        Ok((g, level))
    }

    /// The leaf for `t` under a shared latch (latch coupling from the root down), and
    /// with `fence`, the leaf's low fence: the separator that bounds its keys from below
    /// (`None` = minus infinity).
    fn descend_read(
        &self,
        t: &Target<'_>,
        fence: bool,
    ) -> Result<(ReadPageGuard<'_>, Option<Vec<u8>>)> {
        let (root, mut level) = self.latch_root(false)?;
        let RootGuard::Read(mut g) = root else {
            unreachable!("latch_root(false) latches shared");
        };
        let mut low = None;
        while level > 0 {
            let child = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                let i = pick(&n, t)?;
                if fence && i > 0 {
                    low = Some(n.key(i)?.to_vec());
                }
                n.child(i)?
            };
            let c = self.fetch_read(child, g.page_id(), "downlink")?;
            g = c;
            level -= 1;
        }
        self.node(g.data(), g.page_id(), Some(0))?;
        Ok((g, low))
    }

    /// The leaf for `t` under an exclusive latch: shared latches down to the leaf's parent,
    /// coupled (InnoDB `btr_cur_optimistic_insert`'s BTR_MODIFY_LEAF descent).
    pub(super) fn descend_write(&self, t: &Target<'_>) -> Result<WritePageGuard<'_>> {
        let (root, mut level) = self.latch_root(true)?;
        let mut g = match root {
            RootGuard::Write(g) => {
                self.node(g.data(), g.page_id(), Some(0))?;
                return Ok(g);
            }
            RootGuard::Read(g) => g,
        };
        loop {
            let child = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                n.child(pick(&n, t)?)?
            };
            if level == 1 {
                let w = self.fetch_write(child, g.page_id(), "downlink")?;
                drop(g);
                self.node(w.data(), w.page_id(), Some(0))?;
                return Ok(w);
            }
            let c = self.fetch_read(child, g.page_id(), "downlink")?;
            g = c;
            level -= 1;
        }
    }

    /// The pessimistic descent towards `key` down to the page at `stop_level` (returned
    /// exclusively latched): exclusive latches from the meta page down, every latch above
    /// a safe page (room for one more separator, invariant 5) released, the meta page's
    /// included. The returned [`WritePath`] holds the ancestors still latched, each with
    /// the index of the downlink followed (PostgreSQL's `BTStack`, but latched).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page on the path, a downlink to an
    /// ancestor, or a tree lower than `stop_level`; pool errors.
    pub(super) fn descend_pessimistic(
        &self,
        key: &[u8],
        stop_level: u16,
    ) -> Result<(WritePath<'_>, WritePageGuard<'_>)> {
        let mg = self.pool.fetch_write(self.meta_id())?;
        let meta = Meta::read(mg.data(), mg.page_id())?;
        self.check_meta(&meta, mg.page_id())?;
        let mut level = Self::root_level(&meta);
        if level < stop_level {
            return Err(Error::corrupted(format!(
                "B+tree {}: root level {level} is below level {stop_level}",
                mg.page_id()
            )));
        }
        let mut meta_g = Some(mg);
        let mut path: Vec<(WritePageGuard<'_>, usize)> = Vec::new();
        let mut g = self.fetch_write(meta.root, self.meta_id(), "root")?;
        while level > stop_level {
            let (i, child, safe) = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                let i = n.child_index(key, true)?;
                (i, n.child(i)?, n.free_bytes() >= self.sep_reserve)
            };
            if safe {
                path.clear();
                meta_g = None;
            }
            if path.iter().any(|(p, _)| p.page_id().block == child) {
                return Err(Error::corrupted(format!(
                    "B+tree {}: downlink to an ancestor, block {child}",
                    g.page_id()
                )));
            }
            let c = self.fetch_write(child, g.page_id(), "downlink")?;
            path.push((g, i));
            g = c;
            level -= 1;
        }
        self.node(g.data(), g.page_id(), Some(stop_level))?;
        Ok((WritePath { meta, meta_g, path }, g))
    }

    /// The slot holding `key` in leaf `n` and the index of its TID there (0 for a plain
    /// entry; in a deduplicating tree the key may be inside a posting entry).
    pub(super) fn locate_tid(&self, n: &Node<'_>, key: &[u8]) -> Result<Option<(usize, usize)>> {
        let i = match n.search(key)? {
            Ok(i) => return Ok(Some((i, 0))),
            Err(i) => i,
        };
        if !self.cfg.deduplicate || i == 0 || key.len() < TID_BYTES {
            return Ok(None);
        }
        let (k, v) = n.entry(i - 1)?;
        if !dedup::is_posting(k, v)
            || k.len() != key.len()
            || dedup::prefix(k) != dedup::prefix(key)
        {
            return Ok(None);
        }
        let t = &key[key.len() - TID_BYTES..];
        Ok(dedup::tids(k, v).position(|x| x == t).map(|j| (i - 1, j)))
    }

    /// The per-TID keys a leaf entry of a deduplicating tree stands for, ascending (one
    /// for a plain entry).
    fn per_tid(&self, k: &[u8], v: &[u8]) -> Vec<Vec<u8>> {
        if dedup::is_posting(k, v) {
            dedup::expand(k, v)
        } else {
            vec![k.to_vec()]
        }
    }

    /// The value stored under `key`, if any.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page on the path; pool errors.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (g, _) = self.descend_read(&Target::Lower(Bound::Included(key)), false)?;
        let n = self.node(g.data(), g.page_id(), Some(0))?;
        match self.locate_tid(&n, key)? {
            // A deduplicating tree's values are empty (a posting entry's is its TIDs).
            Some(_) if self.cfg.deduplicate => Ok(Some(Vec::new())),
            Some((i, _)) => Ok(Some(n.entry(i)?.1.to_vec())),
            None => Ok(None),
        }
    }

    /// Visits the entries with `lo <= key <= hi` in key order (`Forward`) or reverse
    /// (`Backward`), calling `f(key, value)`; `f` returns `Ok(false)` to stop, and its
    /// error ends the scan and is returned.
    ///
    /// `f` runs with no latch held: the scan copies one leaf's matching entries under the
    /// leaf's shared latch, releases it, then calls `f` for them, so `f` may use this tree
    /// or wait on anything. Forward, the scan then latches the leaf again, latches its
    /// right sibling and only then releases the leaf (left-to-right coupling), and skips
    /// entries at or below the last key delivered (entries moved right by a split since).
    /// Backward scans never latch right to left: after a leaf, they descend again from the
    /// root for the keys below that leaf's low fence (the separator bounding it from below,
    /// at most the smallest key seen there). Not a snapshot: an entry inserted or deleted
    /// during the scan may or may not be seen, but every entry present throughout is seen
    /// exactly once, in order.
    ///
    /// Errors: `f`'s error; [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page (or a sibling cycle);
    /// pool errors.
    #[allow(clippy::type_complexity)] // the signature the callers were promised
    pub fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: ScanDirection,
        f: &mut dyn FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let f = &mut |_: LeafRef, k: &[u8], v: &[u8]| f(k, v);
        match dir {
            ScanDirection::Forward => self.scan_forward(lo, hi, false, f),
            ScanDirection::Backward => self.scan_backward(lo, hi, false, f),
        }
    }

    /// [`BTree::scan`] for an MVCC index scan: entries marked dead
    /// ([`node::SLOT_FLAG_DEAD`]) are skipped (PostgreSQL nbtsearch.c `_bt_readpage` with
    /// `ignore_killed_tuples`), and `f(leaf_block, key, value)` learns the leaf each entry
    /// came from, for [`BTree::kill_items`].
    ///
    /// Errors: as [`BTree::scan`].
    ///
    /// [`node::SLOT_FLAG_DEAD`]: super::node::SLOT_FLAG_DEAD
    pub fn scan_live(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: ScanDirection,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        match dir {
            ScanDirection::Forward => self.scan_forward(lo, hi, true, f),
            ScanDirection::Backward => self.scan_backward(lo, hi, true, f),
        }
    }

    /// Restores a cursor stored on the entry `key`, read from leaf `leaf`, as InnoDB's
    /// persistent cursor does at the start of each row fetch after the first (btr0pcur.cc
    /// `btr_pcur_t::restore_position`): when the leaf is still in the pool, only an access
    /// of the replacement policy, no hit counted ([`BufferPool::restore_access`]: the
    /// optimistic restore); otherwise a search from the root for `key`, counted as any
    /// descent (the pessimistic restore). Nothing is read from the page.
    ///
    /// Errors: as [`BTree::scan`], for the search.
    ///
    /// [`BufferPool::restore_access`]: crate::buffer::BufferPool::restore_access
    pub fn restore_position(&self, key: &[u8], leaf: u32) -> Result<()> {
        if self.pool.restore_access(PageId::new(self.rel, leaf)) {
            return Ok(());
        }
        self.descend_read(&Target::Lower(Bound::Included(key)), false)
            .map(|_| ())
    }

    #[allow(clippy::type_complexity)]
    fn scan_forward(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        skip_dead: bool,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        let (mut g, _) = self.descend_read(&Target::Lower(lo), false)?;
        let mut last: Option<Vec<u8>> = None;
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut hops = Hops::new(self)?;
        loop {
            let cur = g.page_id();
            let leaf = LeafRef {
                block: cur.block,
                lsn: g.page_lsn(),
            };
            let (done, right) = {
                let n = self.node(g.data(), cur, Some(0))?;
                let start = match (&last, lo) {
                    (Some(l), _) => n.upper_bound(l)?,
                    (None, Bound::Included(k)) => n.lower_bound(k)?,
                    (None, Bound::Excluded(k)) => n.upper_bound(k)?,
                    (None, Bound::Unbounded) => 0,
                };
                // A posting entry before `start` may hold TIDs past the bound: filtered per
                // TID below.
                let start = if self.cfg.deduplicate {
                    start.saturating_sub(1)
                } else {
                    start
                };
                let mut done = false;
                for i in start..n.len() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate {
                        let skip = |tk: &[u8]| {
                            last.as_ref().is_some_and(|l| tk <= l.as_slice()) || !above_lo(tk, lo)
                        };
                        let stop = |tk: &[u8]| !below_hi(tk, hi);
                        let dead = skip_dead && n.is_dead(i);
                        if push_per_tid(self.per_tid(k, v), dead, skip, stop, &mut batch) {
                            done = true;
                            break;
                        }
                        continue;
                    }
                    if !below_hi(k, hi) {
                        done = true;
                        break;
                    }
                    if skip_dead && n.is_dead(i) {
                        continue;
                    }
                    batch.push((k.to_vec(), v.to_vec()));
                }
                (done, n.right())
            };
            if batch.is_empty() {
                if done || right == NO_BLOCK {
                    return Ok(());
                }
                let r = self.fetch_read(right, cur, "right link")?;
                hops.step(cur)?;
                g = r;
                continue;
            }
            drop(g);
            for (k, v) in &batch {
                if !f(leaf, k, v)? {
                    return Ok(());
                }
            }
            let newest = batch.pop().map(|e| e.0);
            if let (Some(old), Some(new)) = (&last, &newest) {
                // Keys delivered ascend strictly, so a scan that resumes after its last key
                // always moves on; on a damaged page whose keys do not ascend it could not.
                if new <= old {
                    return Err(Error::corrupted(format!(
                        "B+tree page {cur}: keys out of order in a forward scan"
                    )));
                }
            }
            last = newest;
            batch.clear();
            if done {
                return Ok(());
            }
            if self.cfg.merge_threshold_pct.is_some() {
                // While no latch was held the leaf may have been merged away (freed, even
                // reused by a split elsewhere): find the position again from the root,
                // after the last key delivered (InnoDB restores its persistent cursor the
                // same way, btr0pcur.cc `btr_pcur_t::restore_position`).
                let Some(l) = last.as_deref() else {
                    return Ok(());
                };
                g = self
                    .descend_read(&Target::Lower(Bound::Excluded(l)), false)?
                    .0;
                continue;
            }
            let c = self.fetch_read(cur.block, self.meta_id(), "scan position")?;
            let right = self.node(c.data(), cur, Some(0))?.right();
            if right == NO_BLOCK {
                return Ok(());
            }
            let r = self.fetch_read(right, cur, "right link")?;
            hops.step(cur)?;
            drop(c);
            g = r;
        }
    }

    #[allow(clippy::type_complexity)]
    fn scan_backward(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        skip_dead: bool,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        let mut bound: Bound<Vec<u8>> = match hi {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut hops = Hops::new(self)?;
        loop {
            let (g, low) = self.descend_read(&Target::Upper(borrowed(&bound)), true)?;
            let at = g.page_id();
            let leaf = LeafRef {
                block: at.block,
                lsn: g.page_lsn(),
            };
            let done = {
                let n = self.node(g.data(), at, Some(0))?;
                let end = match &bound {
                    Bound::Unbounded => n.len(),
                    Bound::Included(k) => n.upper_bound(k)?,
                    Bound::Excluded(k) => n.lower_bound(k)?,
                };
                let mut done = false;
                for i in (0..end).rev() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate {
                        // Per TID, descending; a posting entry's last TIDs may pass the bound.
                        let skip = |tk: &[u8]| !below_hi(tk, borrowed(&bound));
                        let stop = |tk: &[u8]| !above_lo(tk, lo);
                        let dead = skip_dead && n.is_dead(i);
                        let tks = self.per_tid(k, v).into_iter().rev();
                        if push_per_tid(tks, dead, skip, stop, &mut batch) {
                            done = true;
                            break;
                        }
                        continue;
                    }
                    if !above_lo(k, lo) {
                        done = true;
                        break;
                    }
                    if skip_dead && n.is_dead(i) {
                        continue;
                    }
                    batch.push((k.to_vec(), v.to_vec()));
                }
                done
            };
            drop(g);
            for (k, v) in &batch {
                if !f(leaf, k, v)? {
                    return Ok(());
                }
            }
            batch.clear();
            let Some(low) = low else { return Ok(()) };
            if done {
                return Ok(());
            }
            if let Bound::Included(l) | Bound::Excluded(l) = lo {
                if low.as_slice() <= l {
                    return Ok(()); // every key below the fence is below `lo`
                }
            }
            bound = Bound::Excluded(low);
            hops.step(at)?;
        }
    }

    /// The leaf `block` as a scan would name it now ([`LeafRef`]: its current page LSN).
    ///
    /// Errors: pool errors.
    pub fn leaf_ref(&self, block: u32) -> Result<LeafRef> {
        let g = self.pool.fetch_read(PageId::new(self.rel, block))?;
        Ok(LeafRef {
            block,
            lsn: g.page_lsn(),
        })
    }
}

fn pick(n: &Node<'_>, t: &Target<'_>) -> Result<usize> {
    match *t {
        Target::Lower(Bound::Unbounded) => Ok(0),
        Target::Lower(Bound::Included(k) | Bound::Excluded(k)) => n.child_index(k, true),
        Target::Upper(Bound::Unbounded) => Ok(n.len() - 1),
        Target::Upper(Bound::Included(k)) => n.child_index(k, true),
        Target::Upper(Bound::Excluded(k)) => n.child_index(k, false),
    }
}

fn above_lo(k: &[u8], lo: Bound<&[u8]>) -> bool {
    match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }
}

fn below_hi(k: &[u8], hi: Bound<&[u8]>) -> bool {
    match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    }
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A scan's step over the per-TID keys `tks` of one leaf entry of a deduplicating tree, in
/// scan order: keys `skip` rejects are passed over, the others are pushed onto `batch`
/// (with an empty value) unless the entry is `dead`, until `stop` accepts one. Returns true
/// when it did: the scan has reached its bound.
fn push_per_tid(
    tks: impl IntoIterator<Item = Vec<u8>>,
    dead: bool,
    skip: impl Fn(&[u8]) -> bool,
    stop: impl Fn(&[u8]) -> bool,
    batch: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> bool {
    for tk in tks {
        if skip(&tk) {
            continue;
        }
        if stop(&tk) {
            return true;
        }
        if !dead {
            batch.push((tk, Vec::new()));
        }
    }
    false
}
