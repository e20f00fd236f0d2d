//! Reads of a heap table through its indexes: the heap side of an index scan, which
//! follows each entry's HOT chain to the version the snapshot sees (PostgreSQL REL_15
//! heapam_handler.c `heapam_index_fetch_tuple`, heapam.c `heap_hot_search_buffer`), hint
//! bits set on the way (heapam_visibility.c `SetHintBits`), and the point reads and range
//! scans built on them (`get`, `get_by_index`, `scan`); and the sequential scan of a table
//! without a primary key (heapam.c `heapgettup_pagemode`).

use super::index::{upper_of, Horizon};
use super::page::{self as hp, LpState};
use super::table::{Ctx, HeapTable};
use super::tuple::{self as ht, HeaderRead, Tid};
use super::visibility::satisfies_mvcc;
use crate::access::{Statement, TableRead};
use crate::btree::{BTree, ScanDirection};
use crate::buffer::strategy::{with_ring, RingKind};
use crate::buffer::{mark_dirty_hint, WritePageGuard};
use crate::catalog::{Projection, Row, Value};
use crate::error::{Error, Result};
use crate::mvcc::{TransactionManager, Xid, INVALID_XID};
use crate::page::PageId;
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// A tuple version: its TID and a copy of its bytes.
type Version = (Tid, Vec<u8>);

impl HeapTable {
    /// Sets hint bits learned while reading under a shared lock, if the exclusive lock can
    /// be had at once (PostgreSQL `SetHintBits` → `MarkBufferDirtyHint`: no WAL but, with
    /// full-page writes, a full-page image at the page's first change since the
    /// checkpoint, as PostgreSQL logs with data checksums on).
    pub(super) fn set_hints(
        &self,
        block: u32,
        off: u16,
        xmin: Xid,
        xmax: Xid,
        hints: u16,
    ) -> Result<()> {
        if hints == 0 {
            return Ok(());
        }
        let Some(mut g) = self.pool.try_fetch_write(self.page_id(block))? else {
            return Ok(());
        };
        self.apply_hints(&mut g, &[(off, xmin, xmax, hints)])
    }

    /// Sets hint bits on the page `g` holds exclusively, `(offset, xmin, xmax, hints)` per
    /// tuple: a tuple whose xmin or xmax changed since it was read is left alone. Marks the
    /// page dirty as a hint ([`mark_dirty_hint`]) only when a bit changed; counts
    /// `hint_bit_writes` per tuple changed.
    pub(super) fn apply_hints(
        &self,
        g: &mut WritePageGuard<'_>,
        sets: &[(u16, Xid, Xid, u16)],
    ) -> Result<()> {
        let id = g.page_id();
        let mut changed = 0;
        for &(off, xmin, xmax, hints) in sets {
            let Ok(lp) = hp::item_id(g.data(), off, id) else {
                continue;
            };
            if lp.state != LpState::Normal {
                continue;
            }
            let t = hp::tuple(g.data(), lp);
            if !ht::header_ok(t)
                || t.xmin() != xmin
                || t.xmax() != xmax
                || t.infomask() & hints == hints
            {
                continue;
            }
            let m = t.infomask() | hints;
            ht::set_infomask(hp::tuple_mut(g.data_mut(), lp), m);
            changed += 1;
        }
        if changed > 0 {
            mark_dirty_hint(&self.wal, g)?;
            self.counters
                .hint_bit_writes
                .fetch_add(changed, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The members of the HOT chain rooted at `root` (following a redirect), with copies of
    /// their tuples (heapam.c `heap_hot_search_buffer`'s walk). Prunes the page first when
    /// the trigger rule holds.
    pub(super) fn chain(&self, tm: &TransactionManager, root: Tid) -> Result<Vec<(Tid, Vec<u8>)>> {
        // One read of the page, as heapam_index_fetch_tuple does; the page is read again only
        // when it is to be pruned (heap_page_prune_opt on the same buffer).
        // The scan holds the page's buffer until its next fetch or the end of the
        // statement, so the update's or delete's pin of it is a nested pin (see
        // `BufferPool::fetch_read_held`).
        let mut g = self.pool.fetch_read_held(self.page_id(root.block))?;
        if self.wants_pruning(tm, g.data()) {
            drop(g);
            self.prune_if_cleanup_lock(tm, root.block)?;
            g = self.pool.fetch_read_held(self.page_id(root.block))?;
        }
        Self::chain_on_page(g.data(), g.page_id(), root)
    }

    /// The HOT chain rooted at `root` on its (latched) page `page`, copied; see
    /// [`HeapTable::chain`]. Empty when the root line pointer is dead, unused or past the
    /// end (heap_hot_search_buffer then reports `all_dead`).
    pub(super) fn chain_on_page(page: &[u8], id: PageId, root: Tid) -> Result<Vec<(Tid, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut off = root.offset;
        let mut prev_xmax = INVALID_XID;
        let mut at_start = true;
        while off != 0 && off <= hp::max_offset(page) {
            let lp = hp::item_id(page, off, id)?;
            match lp.state {
                LpState::Redirect if at_start => {
                    off = lp.off;
                    at_start = false;
                    continue;
                }
                LpState::Normal => {}
                _ => break,
            }
            let t = hp::tuple(page, lp);
            if !ht::header_ok(t) {
                return Err(Error::corrupted(format!(
                    "{id}: tuple {off} has a bad header"
                )));
            }
            if !at_start && !t.is_heap_only() {
                break;
            }
            if prev_xmax != INVALID_XID && t.xmin() != prev_xmax {
                break;
            }
            out.push((
                Tid {
                    block: root.block,
                    offset: off,
                },
                t.to_vec(),
            ));
            if !t.is_hot_updated() {
                break;
            }
            let next = t.ctid();
            if next.block != root.block || out.len() > hp::max_offset(page) as usize {
                break;
            }
            prev_xmax = t.xmax();
            off = next.offset;
            at_start = false;
        }
        Ok(out)
    }

    /// The version of the row whose chain starts at `root` that `ctx`'s snapshot sees, and
    /// whether the whole chain is dead to everyone (`all_dead`: the index entry may be
    /// killed).
    fn hot_search(
        &self,
        ctx: &Ctx<'_>,
        root: Tid,
        horizon: &Horizon<'_>,
    ) -> Result<(Option<Version>, bool)> {
        let mut members = self.chain(ctx.tm, root)?;
        for i in 0..members.len() {
            let (tid, t) = &members[i];
            self.counters
                .versions_traversed
                .fetch_add(1, Ordering::Relaxed);
            let (visible, hints) = satisfies_mvcc(t, ctx.snapshot, ctx.xid, ctx.tm);
            self.set_hints(tid.block, tid.offset, t.xmin(), t.xmax(), hints)?;
            if visible {
                return Ok((Some(members.swap_remove(i)), false));
            }
        }
        Ok((None, Self::all_dead(&members, horizon)))
    }

    /// A sequential scan (heapam.c `heapgettup_pagemode`): every block in order (reverse
    /// for `Backward`), each pruned first when the trigger rule holds (`heapgetpage` →
    /// `heap_page_prune_opt`), then every normal line pointer in offset order (reverse for
    /// `Backward`) whose tuple the snapshot sees (`HeapTupleSatisfiesVisibility`; heap-only
    /// tuples included: a sequential scan does not go through HOT chains), at most `limit`
    /// rows. Hint bits learned are set afterwards if the page's exclusive lock can be had
    /// at once.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged tuple; storage errors.
    pub fn seq_scan(
        &self,
        ctx: &Ctx<'_>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        if limit == 0 {
            return Ok(rows);
        }
        self.seq_scan_visit(ctx, dir, proj, &mut |r| {
            rows.push(r);
            Ok(rows.len() < limit)
        })?;
        Ok(rows)
    }

    /// The sequential scan of [`HeapTable::seq_scan`], each visible row handed to `f`
    /// until it returns false, one page's rows at a time (nothing else is kept), with only
    /// the columns `proj` needs decoded (the others [`Value::Null`]; execTuples.c
    /// `slot_deform_heap_tuple` up to the last attribute the plan needs). A table
    /// of more than a quarter of the pool's frames is read through the bulk-read ring
    /// (heapam.c `initscan`: `rs_nblocks > NBuffers / 4` → `GetAccessStrategy
    /// (BAS_BULKREAD)`, freelist.c, 256 KiB), so a large scan does not evict the working
    /// set.
    ///
    /// Errors: what `f` returns; as [`HeapTable::seq_scan`].
    pub fn seq_scan_visit(
        &self,
        ctx: &Ctx<'_>,
        dir: ScanDirection,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let n_blocks = self.pool.store().n_blocks(self.heap_rel)?;
        let frames = self.pool.config().frames;
        if n_blocks as usize > frames / 4 {
            let page_bytes = self.pool.store().page_size().bytes();
            with_ring(RingKind::BulkRead, page_bytes, || {
                self.seq_scan_blocks(ctx, n_blocks, dir, proj, f)
            })
        } else {
            self.seq_scan_blocks(ctx, n_blocks, dir, proj, f)
        }
    }

    /// The page loop of [`HeapTable::seq_scan_visit`]. The visible tuples of a page are
    /// decoded (as `proj` says) while its buffer is held, so no tuple is copied out;
    /// `f` runs after the page is released and its hint bits set, as `heapgetpage`
    /// collects a page's visible tuples before the scan returns them.
    fn seq_scan_blocks(
        &self,
        ctx: &Ctx<'_>,
        n_blocks: u32,
        dir: ScanDirection,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let mut blocks: Vec<u32> = (0..n_blocks).collect();
        if dir == ScanDirection::Backward {
            blocks.reverse();
        }
        for block in blocks {
            let mut g = self.pool.fetch_read_held(self.page_id(block))?;
            if self.wants_pruning(ctx.tm, g.data()) {
                drop(g);
                self.prune_if_cleanup_lock(ctx.tm, block)?;
                g = self.pool.fetch_read_held(self.page_id(block))?;
            }
            let (page, id) = (g.data(), g.page_id());
            let mut offsets: Vec<u16> = (1..=hp::max_offset(page)).collect();
            if dir == ScanDirection::Backward {
                offsets.reverse();
            }
            let (mut visible, mut hints) = (Vec::new(), Vec::new());
            for off in offsets {
                let lp = hp::item_id(page, off, id)?;
                if lp.state != LpState::Normal {
                    continue;
                }
                let t = hp::tuple(page, lp);
                if !ht::header_ok(t) {
                    return Err(Error::corrupted(format!(
                        "{id}: tuple {off} has a bad header"
                    )));
                }
                self.counters
                    .versions_traversed
                    .fetch_add(1, Ordering::Relaxed);
                let (vis, h) = satisfies_mvcc(t, ctx.snapshot, ctx.xid, ctx.tm);
                if h != 0 {
                    hints.push((off, t.xmin(), t.xmax(), h));
                }
                if vis {
                    visible.push(self.decode_projected(t, proj)?);
                }
            }
            drop(g);
            if !hints.is_empty() {
                if let Some(mut w) = self.pool.try_fetch_write(self.page_id(block))? {
                    self.apply_hints(&mut w, &hints)?;
                }
            }
            for row in visible {
                if !f(row)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    pub(super) fn fetch_by_key(
        &self,
        ctx: &Ctx<'_>,
        index: &BTree,
        prefix: &[u8],
        limit: usize,
    ) -> Result<Vec<(Tid, Vec<u8>)>> {
        let mut out = Vec::new();
        let horizon = Horizon::new(ctx.tm);
        self.index_entries(
            index,
            Bound::Included(prefix.to_vec()),
            Bound::Included(upper_of(prefix)),
            ScanDirection::Forward,
            &mut |tid| {
                let (found, all_dead) = self.hot_search(ctx, tid, &horizon)?;
                if let Some(v) = found {
                    out.push(v);
                }
                Ok((out.len() < limit, all_dead))
            },
        )?;
        Ok(out)
    }
}

/// The heap's reads (heapam_handler.c `heapam_index_fetch_tuple`, `heap_getnextslot`).
impl TableRead for HeapTable {
    /// The row with primary key `pk` visible to `ctx`.
    ///
    /// Errors: [`Error::InvalidValue`] for a key of the wrong shape; storage errors.
    fn get(&self, st: &Statement<'_>, pk: &[Value]) -> Result<Option<Row>> {
        let ctx = &Ctx::from(st);
        let key = self.pk_key(pk)?;
        match self
            .fetch_by_key(ctx, self.pk_index()?, &key, 1)?
            .into_iter()
            .next()
        {
            Some((_, t)) => Ok(Some(self.decode(&t)?)),
            None => Ok(None),
        }
    }

    /// Rows whose secondary index `ix` key equals `key`, visible to `ctx`.
    ///
    /// Errors: as [`HeapTable::get`]; [`Error::Catalog`] for an unknown index.
    fn get_by_index(&self, st: &Statement<'_>, ix: usize, key: &[Value]) -> Result<Vec<Row>> {
        let ctx = &Ctx::from(st);
        self.check_not_deferred("a secondary index read")?;
        let k = self.index_key(ix, key)?;
        let index = &self.indexes[ix];
        self.fetch_by_key(ctx, index, &k, usize::MAX)?
            .iter()
            .map(|(_, t)| self.decode(t))
            .collect()
    }

    /// Rows with primary key between `lo` and `hi` (values of all pk columns), in key order
    /// or reverse, at most `limit`. On a table without a primary key, with both bounds
    /// unbounded: a sequential scan ([`HeapTable::seq_scan`]), rows in storage order (block,
    /// then line pointer; reversed for `Backward`).
    ///
    /// Errors: as [`HeapTable::get`]; [`Error::Catalog`] for a bound on a table without a
    /// primary key.
    fn scan_columns(
        &self,
        st: &Statement<'_>,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>> {
        let ctx = &Ctx::from(st);
        if !self.def.has_primary_key() && matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded)) {
            return self.seq_scan(ctx, dir, limit, proj);
        }
        let lo = match lo {
            Bound::Included(v) => Bound::Included(self.pk_key(v)?),
            Bound::Excluded(v) => Bound::Excluded(upper_of(&self.pk_key(v)?)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match hi {
            Bound::Included(v) => Bound::Included(upper_of(&self.pk_key(v)?)),
            Bound::Excluded(v) => Bound::Excluded(self.pk_key(v)?),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut rows = Vec::new();
        if limit == 0 {
            return Ok(rows);
        }
        let horizon = Horizon::new(ctx.tm);
        self.index_entries(self.pk_index()?, lo, hi, dir, &mut |tid| {
            let (found, all_dead) = self.hot_search(ctx, tid, &horizon)?;
            if let Some((_, t)) = found {
                rows.push(self.decode_projected(&t, proj)?);
            }
            Ok((rows.len() < limit, all_dead))
        })?;
        Ok(rows)
    }

    fn seq_scan_columns(
        &self,
        st: &Statement<'_>,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.seq_scan_visit(&Ctx::from(st), ScanDirection::Forward, proj, f)
    }
}
