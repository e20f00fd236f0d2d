//! A heap table with its indexes: insert, fetch through HOT chains, HOT and non-HOT update,
//! delete, unique checks (PostgreSQL src/backend/access/heap/heapam.c and
//! heapam_handler.c, REL_15; nbtinsert.c `_bt_check_unique`).

use super::fsm::FreeSpaceMap;
use super::page::{self as hp, maxalign, LpState};
use super::prune::{apply_prune, plan_prune, set_prunable, should_prune};
use super::tuple::{self as ht, HeaderRead, Tid};
use super::visibility::{
    satisfies_dirty, satisfies_mvcc, satisfies_update, satisfies_vacuum, DirtyStatus, UpdateStatus,
    VacuumStatus,
};
use super::vm::VisibilityMap;
use super::{info, TableCounters};
use crate::access::Assign;
use crate::btree::{
    BTree, DeleteOp, DeleteVerdict, IndexDeleteTuples, InsertCleanup, LeafRef, ScanDirection,
};
use crate::buffer::{log_change, mark_dirty_hint, BufferPool, WritePageGuard};
use crate::catalog::{decode_heap, encode_heap, key_of, Row, TableDef, Value};
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::mvcc::{Snapshot, TransactionManager, Xid, INVALID_XID};
use crate::page::{flags, page_lsn, set_flags, PageId};
use crate::wal::{rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
use std::ops::Bound;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What a heap operation runs with: the transaction's identity and its current snapshot.
pub struct Ctx<'a> {
    /// The transaction manager.
    pub tm: &'a TransactionManager,
    /// The transaction's xid (0 while it has none: reads only).
    pub xid: Xid,
    /// Snapshot of the current statement (read committed) or transaction (repeatable read).
    pub snapshot: &'a Snapshot,
    /// Command id of the current statement.
    pub cid: u32,
    /// Repeatable read: a concurrent update is a serialization failure instead of being
    /// followed.
    pub repeatable_read: bool,
}

/// A tuple version: its TID and a copy of its bytes.
type Version = (Tid, Vec<u8>);

/// The removal horizon of one statement's index scan, computed when first needed
/// (procarray.c `GlobalVisTestFor`: PostgreSQL also computes it lazily and once).
struct Horizon<'a> {
    tm: &'a TransactionManager,
    xmin: std::cell::Cell<Option<Xid>>,
}

impl<'a> Horizon<'a> {
    fn new(tm: &'a TransactionManager) -> Self {
        Horizon {
            tm,
            xmin: std::cell::Cell::new(None),
        }
    }
    fn get(&self) -> Xid {
        match self.xmin.get() {
            Some(x) => x,
            None => {
                let x = self.tm.oldest_xmin();
                self.xmin.set(Some(x));
                x
            }
        }
    }
}

/// Outcome of one attempt to update or delete the tuple at a tid.
enum Attempt {
    Done,
    Wait(Xid),
    Updated,
    Gone,
}

const UNIQUE_STRIPES: usize = 256;
/// Leaf fill of a sorted index build: the btree default fillfactor (nbtree.h
/// BTREE_DEFAULT_FILLFACTOR).
const BUILD_LEAF_FILL_PCT: u8 = 90;
/// Internal page fill of a sorted index build (nbtree.h BTREE_NONLEAF_FILLFACTOR).
const BUILD_INTERNAL_FILL_PCT: u8 = 70;
const SCAN_BATCH: usize = 256;

/// A heap relation, its primary-key index and its secondary indexes. See the `heap` module
/// doc for the rules it follows.
pub struct HeapTable {
    /// Table id in the database.
    pub id: u32,
    /// Definition.
    pub def: TableDef,
    /// The heap relation file.
    pub heap_rel: FileId,
    /// Primary key index (unique): key = encoded pk ‖ tid.
    pub pk: BTree,
    /// Secondary indexes, in `def.indexes` order: key = encoded index key ‖ tid.
    pub indexes: Vec<BTree>,
    /// Free space map.
    pub fsm: FreeSpaceMap,
    /// Visibility map.
    pub vm: VisibilityMap,
    /// Fillfactor of inserts, 10..=100.
    pub fillfactor: u8,
    /// HOT updates enabled (the design switch).
    pub hot: bool,
    /// Prune pages on access, mark index entries dead from scans and delete them before a
    /// leaf splits (all off when the design's garbage collection is off, so that
    /// `version_chain`-style experiments see every version until a vacuum).
    pub prune_on_access: bool,
    /// pg_stat_user_tables-style counters.
    pub counters: TableCounters,
    /// The secondary indexes are not maintained: the table is being loaded and they will
    /// be built afterwards by sorting ([`HeapTable::build_secondary_indexes`]), as
    /// sysbench creates its `k` index with CREATE INDEX after the load. Updates, deletes
    /// and secondary-index reads are refused meanwhile.
    pub secondary_deferred: std::sync::atomic::AtomicBool,
    pool: Arc<BufferPool>,
    wal: Arc<Wal>,
    indexed_cols: Vec<usize>,
    target_block: AtomicU32,
    unique_stripes: Box<[Mutex<()>]>,
}

fn tid_of_key(key: &[u8], rel: FileId) -> Result<Tid> {
    key.len()
        .checked_sub(6)
        .and_then(|s| Tid::from_bytes(&key[s..]))
        .ok_or_else(|| Error::Corrupted {
            what: format!("index entry of relation {rel} is shorter than a tid"),
        })
}

fn with_tid(mut key: Vec<u8>, tid: Tid) -> Vec<u8> {
    key.extend_from_slice(&tid.to_bytes());
    key
}

fn upper_of(prefix: &[u8]) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&[0xFF; 6]);
    k
}

impl HeapTable {
    /// Builds a table on existing relations.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        def: TableDef,
        heap_rel: FileId,
        pk: BTree,
        indexes: Vec<BTree>,
        fillfactor: u8,
        hot: bool,
        pool: Arc<BufferPool>,
        wal: Arc<Wal>,
    ) -> Self {
        let page_bytes = pool.store().page_size().bytes();
        let indexed_cols = def.indexed_columns();
        HeapTable {
            id,
            def,
            heap_rel,
            pk,
            indexes,
            fsm: FreeSpaceMap::new(page_bytes),
            vm: VisibilityMap::new(),
            fillfactor,
            hot,
            prune_on_access: true,
            counters: TableCounters::default(),
            secondary_deferred: std::sync::atomic::AtomicBool::new(false),
            pool,
            wal,
            indexed_cols,
            target_block: AtomicU32::new(u32::MAX),
            unique_stripes: (0..UNIQUE_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Errors with [`Error::Catalog`] while the secondary indexes are deferred.
    fn check_not_deferred(&self, what: &str) -> Result<()> {
        crate::access::check_not_deferred(&self.secondary_deferred, &self.def.name, what)
    }

    /// Builds the deferred secondary indexes from the heap, as CREATE INDEX does
    /// (nbtsort.c `btbuild`: a heap scan through `heapam_index_build_range_scan`, a sort,
    /// then `_bt_load` filling leaves to the index fillfactor 90 and internal pages to 70):
    /// every HOT chain root is indexed once with the key of its newest member not dead to
    /// everyone (`heap_get_root_tuples`). Then the indexes are maintained again. Returns
    /// the entries built. Nothing happens when no index is deferred.
    ///
    /// Meant for the end of a load with no concurrent writers on the table (CREATE INDEX
    /// takes a ShareLock that blocks them).
    ///
    /// Errors: [`Error::Corrupted`] for a damaged heap page; storage errors.
    pub fn build_secondary_indexes(&self, tm: &TransactionManager) -> Result<u64> {
        if !self.secondary_deferred.load(Ordering::Acquire) {
            return Ok(0);
        }
        let horizon = Horizon::new(tm);
        let mut per_index: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); self.indexes.len()];
        let n_blocks = self.pool.store().n_blocks(self.heap_rel)?;
        for block in 0..n_blocks {
            let g = self.pool.fetch_read(self.page_id(block))?;
            let id = g.page_id();
            let page = g.data();
            for off in 1..=hp::max_offset(page) {
                let lp = hp::item_id(page, off, id)?;
                let root = match lp.state {
                    LpState::Redirect => true,
                    LpState::Normal => !hp::tuple(page, lp).is_heap_only(),
                    _ => false,
                };
                if !root {
                    continue;
                }
                let tid = Tid { block, offset: off };
                let chain = Self::chain_on_page(page, id, tid)?;
                let Some((_, t)) = chain
                    .iter()
                    .rev()
                    .find(|(_, t)| satisfies_vacuum(t, horizon.get(), tm).0 != VacuumStatus::Dead)
                else {
                    continue;
                };
                let row = self.decode(t)?;
                for (ix, idx) in self.def.indexes.iter().enumerate() {
                    per_index[ix].push((
                        with_tid(key_of(&self.def, &idx.columns, &row)?, tid),
                        Vec::new(),
                    ));
                }
            }
        }
        let mut built = 0;
        for (ix, mut entries) in per_index.into_iter().enumerate() {
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if self.def.indexes[ix].unique {
                let prefix = |k: &[u8]| k[..k.len() - 6].to_vec();
                if let Some(w) = entries
                    .windows(2)
                    .find(|w| prefix(&w[0].0) == prefix(&w[1].0))
                {
                    return Err(Error::DuplicateKey {
                        index: self.def.indexes[ix].name.clone(),
                        key: format!("{:?}", prefix(&w[0].0)),
                    });
                }
            }
            // nbtsort.c `_bt_load` deduplicates unless the index is unique.
            self.indexes[ix].bulk_load_with(
                &entries,
                BUILD_LEAF_FILL_PCT,
                BUILD_INTERNAL_FILL_PCT,
                !self.def.indexes[ix].unique,
            )?;
            built += entries.len() as u64;
        }
        self.counters
            .index_entries_inserted
            .fetch_add(built, Ordering::Relaxed);
        self.secondary_deferred.store(false, Ordering::Release);
        Ok(built)
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The WAL.
    pub fn wal(&self) -> &Arc<Wal> {
        &self.wal
    }

    fn page_id(&self, block: u32) -> PageId {
        PageId::new(self.heap_rel, block)
    }

    fn save_free_space(&self) -> usize {
        self.pool.store().page_size().bytes() * (100 - self.fillfactor as usize) / 100
    }

    /// Encoded primary key of `values` (the pk columns' values, in pk order).
    ///
    /// Errors: [`Error::InvalidValue`] for the wrong number or type of values.
    pub fn pk_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        self.def.key_from_values(&self.def.primary_key, values)
    }

    /// Encoded key of secondary index `ix` for `values`.
    ///
    /// Errors: [`Error::Catalog`] for an unknown index; as [`HeapTable::pk_key`].
    pub fn index_key(&self, ix: usize, values: &[Value]) -> Result<Vec<u8>> {
        let idx =
            self.def.indexes.get(ix).ok_or_else(|| {
                Error::Catalog(format!("table {} has no index #{ix}", self.def.name))
            })?;
        self.def.key_from_values(&idx.columns, values)
    }

    // ---------------------------------------------------------------------------------
    // Reading
    // ---------------------------------------------------------------------------------

    /// Conditions 1 and 2 of `heap_page_prune_opt` on a page the caller holds (cheap when
    /// the page has no prune hint: the oldest xmin is only computed otherwise).
    fn wants_pruning(&self, tm: &TransactionManager, page: &[u8]) -> bool {
        self.prune_on_access
            && crate::page::aux(page) != INVALID_XID
            && should_prune(page, tm.oldest_xmin(), self.fillfactor)
    }

    /// The rest of `heap_page_prune_opt`: takes the cleanup lock on `block` if it can be had
    /// without waiting (exclusive lock, no other pin), checks the trigger again, and prunes.
    fn prune_if_cleanup_lock(&self, tm: &TransactionManager, block: u32) -> Result<()> {
        // On the buffer the scan holds: no second read (`try_fetch_write_held`).
        let Some(mut g) = self.pool.try_fetch_write_held(self.page_id(block))? else {
            return Ok(());
        };
        if g.pin_count() != 1 {
            return Ok(()); // no cleanup lock: someone else holds a pin
        }
        let oldest = tm.oldest_xmin();
        if !should_prune(g.data(), oldest, self.fillfactor) {
            return Ok(());
        }
        self.prune_locked(&mut g, tm, oldest)?;
        Ok(())
    }

    /// Prunes a page held with a cleanup lock and WAL-logs it (XLOG_HEAP2_PRUNE).
    pub(crate) fn prune_locked(
        &self,
        g: &mut WritePageGuard<'_>,
        tm: &TransactionManager,
        oldest: Xid,
    ) -> Result<u64> {
        let id = g.page_id();
        let plan = plan_prune(g.data(), id, oldest, tm);
        if !plan.changes(g.data()) {
            // Nothing to change: the buffer is not dirtied (heap_page_prune).
            return Ok(0);
        }
        apply_prune(g.data_mut(), id, &plan);
        let res = plan.result;
        if !res.changed() {
            // Only hints changed (hint bits, pd_prune_xid, PD_PAGE_FULL): heap_page_prune
            // then calls MarkBufferDirtyHint, which logs a full-page image at the page's
            // first change since the checkpoint, so that a torn write of it is repairable.
            mark_dirty_hint(&self.wal, g)?;
        }
        if res.changed() {
            let rec = RecordBuilder::new(rmgr::HEAP, info::PRUNE)
                .block(id, false, &res.encode())
                .main_data(&oldest.to_le_bytes());
            log_change(&self.wal, &rec, &mut [g])?;
            // Tuples whose line pointer is now LP_DEAD still count as dead until vacuum
            // reclaims the pointer: only the rest is reported reclaimed (pruneheap.c
            // `heap_page_prune_opt`: `pgstat_update_heap_dead_tuples(ndeleted -
            // nnewlpdead)` when positive).
            self.counters
                .sub_dead(res.tuples_removed.saturating_sub(res.now_dead.len() as u64));
            self.counters.pages_pruned.fetch_add(1, Ordering::Relaxed);
        }
        Ok(res.tuples_removed)
    }

    /// Checks every index of the table (contrib/amcheck `bt_index_check` with
    /// `heapallindexed`'s other direction): each B+tree's structure ([`BTree::verify`]), and
    /// that every entry's TID names a line pointer in use in a heap block that exists (an
    /// entry may point at a dead or redirected line pointer, which vacuum reclaims only
    /// after removing the entries; never at an unused one). Returns the entries checked and
    /// one line per problem. Call it on a quiet table.
    ///
    /// Errors: pool and device errors reading pages.
    pub fn check_indexes(&self) -> Result<(u64, Vec<String>)> {
        let n_blocks = self.pool.store().n_blocks(self.heap_rel)?;
        let names =
            std::iter::once("primary key").chain(self.def.indexes.iter().map(|i| i.name.as_str()));
        let trees = std::iter::once(&self.pk).chain(self.indexes.iter());
        let (mut entries, mut problems) = (0, Vec::new());
        for (name, tree) in names.zip(trees) {
            if let Err(e) = tree.verify() {
                problems.push(format!("table {} index {name}: {e}", self.def.name));
                continue;
            }
            let mut tids = Vec::new();
            tree.scan(
                Bound::Unbounded,
                Bound::Unbounded,
                crate::btree::ScanDirection::Forward,
                &mut |k, _| {
                    tids.push(tid_of_key(k, tree.rel())?);
                    Ok(true)
                },
            )?;
            for tid in tids {
                entries += 1;
                let bad = if tid.block >= n_blocks {
                    Some("past the end of the heap".to_string())
                } else {
                    let g = self.pool.fetch_read(self.page_id(tid.block))?;
                    match hp::item_id(g.data(), tid.offset, g.page_id()) {
                        Ok(lp) if lp.state != LpState::Unused => None,
                        Ok(_) => Some("an unused line pointer".to_string()),
                        Err(e) => Some(e.to_string()),
                    }
                };
                if let Some(why) = bad {
                    problems.push(format!(
                        "table {} index {name}: entry points at ({}, {}): {why}",
                        self.def.name, tid.block, tid.offset
                    ));
                }
            }
        }
        Ok((entries, problems))
    }

    /// Sets hint bits learned while reading under a shared lock, if the exclusive lock can
    /// be had at once (PostgreSQL `SetHintBits` → `MarkBufferDirtyHint`: no WAL but, with
    /// full-page writes, a full-page image at the page's first change since the
    /// checkpoint, as PostgreSQL logs with data checksums on).
    fn set_hints(&self, block: u32, off: u16, xmin: Xid, xmax: Xid, hints: u16) -> Result<()> {
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
    fn chain(&self, tm: &TransactionManager, root: Tid) -> Result<Vec<(Tid, Vec<u8>)>> {
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
    fn chain_on_page(page: &[u8], id: PageId, root: Tid) -> Result<Vec<(Tid, Vec<u8>)>> {
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
                return Err(Error::Corrupted {
                    what: format!("{id}: tuple {off} has a bad header"),
                });
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

    /// Whether every member of a HOT chain is dead to everyone (heapam.c
    /// `heap_hot_search_buffer`'s `all_dead`, each member `HeapTupleIsSurelyDead`): an
    /// empty chain (dead or unused root) is.
    fn all_dead(members: &[(Tid, Vec<u8>)], horizon: &Horizon<'_>) -> bool {
        members
            .iter()
            .all(|(_, t)| satisfies_vacuum(t, horizon.get(), horizon.tm).0 == VacuumStatus::Dead)
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

    /// Visits the live index entries of `index` between `lo` and `hi` in batches (the
    /// index leaf latch is never held while heap pages are read; entries marked dead are
    /// skipped), calling `f(tid)` for each until it returns `(false, _)`. Entries for which
    /// `f` returns `(_, true)` (their chain is dead to everyone) are marked dead in their
    /// leaf after the batch (nbtutils.c `_bt_killitems`, called as the scan leaves a page).
    fn index_entries(
        &self,
        index: &BTree,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: ScanDirection,
        f: &mut dyn FnMut(Tid) -> Result<(bool, bool)>,
    ) -> Result<()> {
        let (mut lo, mut hi) = (lo, hi);
        loop {
            let mut batch: Vec<(LeafRef, Vec<u8>)> = Vec::with_capacity(SCAN_BATCH);
            index.scan_live(
                lo.as_ref().map(|v| v.as_slice()),
                hi.as_ref().map(|v| v.as_slice()),
                dir,
                &mut |leaf, k, _| {
                    batch.push((leaf, k.to_vec()));
                    Ok(batch.len() < SCAN_BATCH)
                },
            )?;
            let full = batch.len() == SCAN_BATCH;
            let mut killed: Vec<(LeafRef, Vec<u8>)> = Vec::new();
            let mut stop = false;
            for (leaf, k) in &batch {
                let (go_on, kill) = f(tid_of_key(k, index.rel())?)?;
                if kill {
                    killed.push((*leaf, k.clone()));
                }
                if !go_on {
                    stop = true;
                    break;
                }
            }
            self.kill_index_items(index, killed)?;
            if stop {
                return Ok(());
            }
            match (full, batch.last()) {
                (true, Some((_, last))) => match dir {
                    ScanDirection::Forward => lo = Bound::Excluded(last.clone()),
                    ScanDirection::Backward => hi = Bound::Excluded(last.clone()),
                },
                _ => return Ok(()),
            }
        }
    }

    /// Marks `killed` (leaf block, key) entries dead, one leaf at a time.
    fn kill_index_items(&self, index: &BTree, mut killed: Vec<(LeafRef, Vec<u8>)>) -> Result<()> {
        if !self.prune_on_access {
            return Ok(());
        }
        killed.sort();
        for group in killed.chunk_by(|a, b| a.0 == b.0) {
            let keys: Vec<Vec<u8>> = group.iter().map(|(_, k)| k.clone()).collect();
            let n = index.kill_items(group[0].0, &keys)?;
            self.counters
                .index_items_killed
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    fn decode(&self, t: &[u8]) -> Result<Row> {
        let (bitmap, data) = t.bitmap_and_data().ok_or_else(|| Error::Corrupted {
            what: format!("table {}: tuple header", self.def.name),
        })?;
        decode_heap(&self.def, bitmap, data)
    }

    fn fetch_by_key(
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

    /// The row with primary key `pk` visible to `ctx`.
    ///
    /// Errors: [`Error::InvalidValue`] for a key of the wrong shape; storage errors.
    pub fn get(&self, ctx: &Ctx<'_>, pk: &[Value]) -> Result<Option<Row>> {
        let key = self.pk_key(pk)?;
        match self
            .fetch_by_key(ctx, &self.pk, &key, 1)?
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
    pub fn get_by_index(&self, ctx: &Ctx<'_>, ix: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.check_not_deferred("a secondary index read")?;
        let k = self.index_key(ix, key)?;
        let index = &self.indexes[ix];
        self.fetch_by_key(ctx, index, &k, usize::MAX)?
            .iter()
            .map(|(_, t)| self.decode(t))
            .collect()
    }

    /// Rows with primary key between `lo` and `hi` (values of all pk columns), in key order
    /// or reverse, at most `limit`.
    ///
    /// Errors: as [`HeapTable::get`].
    pub fn scan(
        &self,
        ctx: &Ctx<'_>,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
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
        self.index_entries(&self.pk, lo, hi, dir, &mut |tid| {
            let (found, all_dead) = self.hot_search(ctx, tid, &horizon)?;
            if let Some((_, t)) = found {
                rows.push(self.decode(&t)?);
            }
            Ok((rows.len() < limit, all_dead))
        })?;
        Ok(rows)
    }

    // ---------------------------------------------------------------------------------
    // Writing
    // ---------------------------------------------------------------------------------

    /// Block data of an insert-style record: offnum u16, flags u8, then xl_heap_header
    /// (t_infomask2 u16, t_infomask u16, t_hoff u8) and the tuple from byte 23 on (null
    /// bitmap, padding, data), as heapam.c `heap_insert` logs it.
    fn insert_block_data(off: u16, t: &[u8]) -> Vec<u8> {
        let mut d = Vec::with_capacity(8 + t.len() - ht::HEADER_BYTES);
        d.extend_from_slice(&off.to_le_bytes());
        d.push(0);
        d.extend_from_slice(&t[18..23]);
        d.extend_from_slice(&t[ht::HEADER_BYTES..]);
        d
    }

    /// RelationGetBufferForTuple: a page of the heap with room for `len` bytes plus the
    /// fillfactor reserve, from the table's target block, the free space map, or a new page,
    /// never `avoid`; returned exclusively locked with whether it is new.
    fn page_for_tuple(&self, len: usize, avoid: Option<u32>) -> Result<(WritePageGuard<'_>, bool)> {
        let need = maxalign(len) + self.save_free_space();
        let mut cand = match self.target_block.load(Ordering::Relaxed) {
            u32::MAX => self.fsm.search(need),
            b => Some(b),
        };
        let mut tries = 0;
        while let Some(b) = cand {
            tries += 1;
            if Some(b) != avoid && b < self.pool.store().n_blocks(self.heap_rel)? {
                let g = self.pool.fetch_write(self.page_id(b))?;
                let free = hp::heap_free_space(g.data());
                if need <= free {
                    return Ok((g, false));
                }
                self.fsm.record(b, free);
            }
            if tries > 1000 {
                break;
            }
            cand = self.fsm.search(need);
            if cand == Some(b) {
                break; // the map still names the page we just found wanting (or must avoid)
            }
        }
        let mut g = self.pool.new_page(self.heap_rel)?;
        hp::init(g.data_mut());
        self.target_block
            .store(g.page_id().block, Ordering::Relaxed);
        Ok((g, true))
    }

    fn clear_all_visible(&self, g: &mut WritePageGuard<'_>) {
        if flags(g.data()) & hp::PD_ALL_VISIBLE != 0 {
            let f = flags(g.data()) & !hp::PD_ALL_VISIBLE;
            set_flags(g.data_mut(), f);
        }
        self.vm.clear(g.page_id().block);
    }

    /// heap_insert + ExecInsertIndexTuples: stores `row` as a new tuple by transaction
    /// `ctx.xid` and adds an entry to every index, checking unique indexes.
    ///
    /// Errors: [`Error::InvalidValue`] for a bad row; [`Error::DuplicateKey`];
    /// [`Error::Deadlock`] while waiting on a conflicting inserter; [`Error::TooLarge`] for a
    /// tuple larger than a page (no TOAST); storage errors.
    pub fn insert(&self, ctx: &Ctx<'_>, row: Row) -> Result<Tid> {
        let row = self.def.normalize_row(&row);
        self.def.check_row(&row)?;
        let tid = self.heap_insert(ctx, &row)?;
        self.counters.n_tup_ins.fetch_add(1, Ordering::Relaxed);
        self.insert_index_entries(ctx, &row, tid, None)?;
        Ok(tid)
    }

    fn heap_insert(&self, ctx: &Ctx<'_>, row: &Row) -> Result<Tid> {
        let enc = encode_heap(&self.def, row);
        let t = ht::build(
            ctx.xid,
            ctx.cid,
            self.def.columns.len() as u16,
            enc.null_bitmap.as_deref(),
            &enc.data,
            0,
        );
        let page_bytes = self.pool.store().page_size().bytes();
        let max = page_bytes - crate::page::PAGE_HEADER_BYTES - hp::ITEM_ID_BYTES;
        if maxalign(t.len()) > max {
            return Err(Error::TooLarge {
                what: "heap tuple",
                bytes: t.len(),
                max_bytes: max,
            });
        }
        let (mut g, new) = self.page_for_tuple(t.len(), None)?;
        let block = g.page_id().block;
        let off = hp::add_tuple(g.data_mut(), &t).ok_or_else(|| Error::Corrupted {
            what: format!("{}: no room for a tuple that fit", g.page_id()),
        })?;
        let tid = Tid { block, offset: off };
        let id = g.page_id();
        {
            let lp = hp::item_id(g.data(), off, id)?;
            ht::set_ctid(hp::tuple_mut(g.data_mut(), lp), tid);
        }
        self.clear_all_visible(&mut g);
        let stored = hp::tuple(g.data(), hp::item_id(g.data(), off, id)?).to_vec();
        let init = new && off == 1;
        let rec = RecordBuilder::new(
            rmgr::HEAP,
            info::INSERT | if init { info::INIT_PAGE } else { 0 },
        )
        .xid(ctx.xid)
        .block(id, init, &Self::insert_block_data(off, &stored));
        log_change(&self.wal, &rec, &mut [&mut g])?;
        self.target_block.store(block, Ordering::Relaxed);
        Ok(tid)
    }

    /// Adds `row`'s entries (pointing at `tid`) to the primary key and every secondary
    /// index; unique indexes are checked under a stripe lock on the key so that two
    /// inserters of one key are serialized (nbtinsert.c `_bt_doinsert` holds the leaf lock
    /// for the same reason). `old_row` is the version a non-HOT update replaces: an index
    /// whose key it shares gets the executor's `indexUnchanged` hint
    /// (execIndexing.c `index_unchanged_by_update`), which allows bottom-up deletion.
    fn insert_index_entries(
        &self,
        ctx: &Ctx<'_>,
        row: &Row,
        tid: Tid,
        old_row: Option<&Row>,
    ) -> Result<()> {
        let unchanged =
            |cols: &[usize]| old_row.is_some_and(|o| cols.iter().all(|&c| o[c] == row[c]));
        let k = key_of(&self.def, &self.def.primary_key, row)?;
        let pk_unchanged = unchanged(&self.def.primary_key);
        self.insert_unique(ctx, &self.pk, &self.def.name, k, tid, pk_unchanged)?;
        if self.secondary_deferred.load(Ordering::Acquire) {
            return Ok(());
        }
        for (ix, idx) in self.def.indexes.iter().enumerate() {
            let k = key_of(&self.def, &idx.columns, row)?;
            let index_unchanged = unchanged(&idx.columns);
            // nbtinsert.c `_bt_doinsert`: a key with a NULL column is not checked for
            // uniqueness (`itup_key->anynullkeys`; NULLs are distinct), and, the index
            // being unique, is not deduplicated either (`checkingunique`, no `uniquedup`).
            if idx.unique && !idx.key_has_null(row) {
                self.insert_unique(ctx, &self.indexes[ix], &idx.name, k, tid, index_unchanged)?;
            } else {
                self.index_insert(
                    ctx,
                    &self.indexes[ix],
                    &with_tid(k, tid),
                    index_unchanged,
                    !idx.unique,
                )?;
            }
            self.counters
                .index_entries_inserted
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// One index entry in, a full leaf first freeing what the heap finds dead
    /// (`BTree::insert_cleaning`), with the outcome counted.
    fn index_insert(
        &self,
        ctx: &Ctx<'_>,
        index: &BTree,
        key: &[u8],
        index_unchanged: bool,
        deduplicate: bool,
    ) -> Result<()> {
        if !self.prune_on_access {
            return index.insert(key, &[]);
        }
        let checker = IndexDeleteCheck {
            table: self,
            tm: ctx.tm,
        };
        let out = index.insert_cleaning(
            key,
            &[],
            &InsertCleanup {
                table: &checker,
                index_unchanged,
                deduplicate,
            },
        )?;
        let c = &self.counters;
        c.index_simple_deleted
            .fetch_add(out.simple_deleted, Ordering::Relaxed);
        c.index_bottom_up_deleted
            .fetch_add(out.bottom_up_deleted, Ordering::Relaxed);
        c.index_bottom_up_passes
            .fetch_add(out.bottom_up_passes, Ordering::Relaxed);
        c.index_dedup_passes
            .fetch_add(out.dedup_passes, Ordering::Relaxed);
        Ok(())
    }

    fn insert_unique(
        &self,
        ctx: &Ctx<'_>,
        index: &BTree,
        name: &str,
        key: Vec<u8>,
        tid: Tid,
        index_unchanged: bool,
    ) -> Result<()> {
        let stripe = &self.unique_stripes[(crc32c::crc32c(&key) as usize) % UNIQUE_STRIPES];
        loop {
            let guard = stripe.lock();
            let mut uniquedup = false;
            match self.check_unique(ctx, index, &key, tid, &mut uniquedup)? {
                None => {
                    // nbtinsert.c `_bt_delete_or_dedup_one_page`: bottom-up deletion also
                    // runs when the unique check met a duplicate (`uniquedup`).
                    let bottom_up = index_unchanged || uniquedup;
                    // ... and deduplication only then (`checkingunique && !uniquedup`).
                    self.index_insert(ctx, index, &with_tid(key, tid), bottom_up, uniquedup)?;
                    drop(guard);
                    if std::ptr::eq(index, &self.pk) {
                        self.counters
                            .index_entries_inserted
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                Some(Some(holder)) => {
                    drop(guard);
                    ctx.tm.wait_for(ctx.xid, holder)?;
                }
                Some(None) => {
                    let key_text = self
                        .key_types(index)
                        .and_then(|types| crate::catalog::decode_key(&types, &key))
                        .map(|v| {
                            v.iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .unwrap_or_else(|_| "?".into());
                    let index_name = if std::ptr::eq(index, &self.pk) {
                        format!("{name}_pkey")
                    } else {
                        name.to_string()
                    };
                    return Err(Error::DuplicateKey {
                        index: index_name,
                        key: format!("({key_text})"),
                    });
                }
            }
        }
    }

    fn key_types(&self, index: &BTree) -> Result<Vec<crate::catalog::KeyColumn>> {
        let cols: &[usize] = if std::ptr::eq(index, &self.pk) {
            &self.def.primary_key
        } else {
            let ix = self
                .indexes
                .iter()
                .position(|b| std::ptr::eq(b, index))
                .unwrap_or(0);
            &self.def.indexes[ix].columns
        };
        self.def.key_columns(cols)
    }

    /// `_bt_check_unique` with SnapshotDirty: `None` when no conflicting row exists,
    /// `Some(Some(xid))` when running transaction `xid` decides it (wait and retry),
    /// `Some(None)` for a live duplicate. Sets `uniquedup` when any other entry with the
    /// key was met (dead ones included), and marks dead the entries whose chains are dead
    /// to everyone.
    #[allow(clippy::option_option)]
    fn check_unique(
        &self,
        ctx: &Ctx<'_>,
        index: &BTree,
        key: &[u8],
        own_tid: Tid,
        uniquedup: &mut bool,
    ) -> Result<Option<Option<Xid>>> {
        let mut verdict = None;
        let horizon = Horizon::new(ctx.tm);
        self.index_entries(
            index,
            Bound::Included(key.to_vec()),
            Bound::Included(upper_of(key)),
            ScanDirection::Forward,
            &mut |root| {
                if root != own_tid {
                    *uniquedup = true;
                }
                let members = self.chain(ctx.tm, root)?;
                for (tid, t) in &members {
                    if *tid == own_tid {
                        continue;
                    }
                    let (st, hints) = satisfies_dirty(t, ctx.xid, ctx.tm);
                    self.set_hints(tid.block, tid.offset, t.xmin(), t.xmax(), hints)?;
                    match st {
                        DirtyStatus::Dead => {}
                        DirtyStatus::Live => {
                            verdict = Some(None);
                            return Ok((false, false));
                        }
                        DirtyStatus::InProgress(x) => {
                            verdict = Some(Some(x));
                            return Ok((false, false));
                        }
                    }
                }
                // _bt_check_unique marks the item LP_DEAD when heap_hot_search found the
                // whole chain dead to everyone.
                let own = members.iter().any(|(tid, _)| *tid == own_tid);
                Ok((true, !own && Self::all_dead(&members, &horizon)))
            },
        )?;
        Ok(verdict)
    }

    /// Follows `t_ctid` from `tid` to the newest version of the row (heapam.c
    /// `heap_get_latest_tid`, as EvalPlanQual does at read committed). `None` when the row
    /// was deleted.
    fn latest_version(&self, ctx: &Ctx<'_>, mut tid: Tid) -> Result<Option<Tid>> {
        for _ in 0..100_000 {
            let g = self.pool.fetch_read(self.page_id(tid.block))?;
            let id = g.page_id();
            let Ok(lp) = hp::item_id(g.data(), tid.offset, id) else {
                return Ok(None);
            };
            let lp = if lp.state == LpState::Redirect {
                hp::item_id(g.data(), lp.off, id)?
            } else {
                lp
            };
            if lp.state != LpState::Normal {
                return Ok(None);
            }
            let t = hp::tuple(g.data(), lp);
            let (st, _) = satisfies_update(t, ctx.xid, ctx.tm);
            match st {
                UpdateStatus::Updated => {
                    let next = t.ctid();
                    if next == tid {
                        return Ok(None); // deleted
                    }
                    tid = next;
                }
                UpdateStatus::Invisible => return Ok(None),
                _ => return Ok(Some(tid)),
            }
        }
        Err(Error::Corrupted {
            what: format!("table {}: update chain does not end", self.def.name),
        })
    }

    /// Updates the row with primary key `pk`, setting `set` columns (heapam.c `heap_update`
    /// with ExecUpdate's retry loop). Returns false when no visible row has that key.
    ///
    /// Errors: [`Error::SerializationFailure`] at repeatable read when the row was changed by
    /// a transaction the snapshot does not see; [`Error::Deadlock`]; [`Error::DuplicateKey`];
    /// [`Error::InvalidValue`]; storage errors.
    pub fn update(&self, ctx: &Ctx<'_>, pk: &[Value], set: &[Assign]) -> Result<bool> {
        self.modify(ctx, pk, Some(set))
    }

    /// Deletes the row with primary key `pk` (heapam.c `heap_delete`). Returns false when
    /// no visible row has that key.
    ///
    /// Errors: as [`HeapTable::update`].
    pub fn delete(&self, ctx: &Ctx<'_>, pk: &[Value]) -> Result<bool> {
        self.modify(ctx, pk, None)
    }

    fn modify(&self, ctx: &Ctx<'_>, pk: &[Value], set: Option<&[Assign]>) -> Result<bool> {
        self.check_not_deferred(if set.is_some() {
            "an update"
        } else {
            "a delete"
        })?;
        let key = self.pk_key(pk)?;
        let Some((mut tid, _)) = self
            .fetch_by_key(ctx, &self.pk, &key, 1)?
            .into_iter()
            .next()
        else {
            return Ok(false);
        };
        loop {
            let attempt = match set {
                Some(set) => self.try_update(ctx, tid, &key, set)?,
                None => self.try_delete(ctx, tid, &key)?,
            };
            match attempt {
                Attempt::Done => return Ok(true),
                Attempt::Gone => return Ok(false),
                Attempt::Wait(x) => ctx.tm.wait_for(ctx.xid, x)?,
                Attempt::Updated => {
                    if ctx.repeatable_read {
                        return Err(Error::SerializationFailure(format!(
                            "table {}, row {}: updated by a transaction this snapshot does not see",
                            self.def.name, tid
                        )));
                    }
                    match self.latest_version(ctx, tid)? {
                        Some(next) => tid = next,
                        None => return Ok(false),
                    }
                }
            }
        }
    }

    /// Locks the page of `tid`, checks the tuple may be changed, and returns the guard, the
    /// line pointer and the decoded row; or the attempt's outcome.
    fn lock_for_change(
        &self,
        ctx: &Ctx<'_>,
        tid: Tid,
        pk_key: &[u8],
    ) -> Result<std::result::Result<(WritePageGuard<'_>, hp::ItemId, Row), Attempt>> {
        let mut g = self.pool.fetch_write(self.page_id(tid.block))?;
        let id = g.page_id();
        let lp = hp::item_id(g.data(), tid.offset, id)?;
        if lp.state != LpState::Normal {
            return Ok(Err(Attempt::Updated));
        }
        let (st, hints) = satisfies_update(hp::tuple(g.data(), lp), ctx.xid, ctx.tm);
        if hints != 0 {
            let t = hp::tuple_mut(g.data_mut(), lp);
            let m = t.infomask() | hints;
            ht::set_infomask(t, m);
            mark_dirty_hint(&self.wal, &mut g)?;
        }
        match st {
            UpdateStatus::Ok => {}
            UpdateStatus::BeingModified(x) => return Ok(Err(Attempt::Wait(x))),
            UpdateStatus::Updated => return Ok(Err(Attempt::Updated)),
            UpdateStatus::SelfModified | UpdateStatus::Invisible => return Ok(Err(Attempt::Gone)),
        }
        let row = self.decode(hp::tuple(g.data(), lp))?;
        if key_of(&self.def, &self.def.primary_key, &row)? != pk_key {
            return Ok(Err(Attempt::Gone)); // EvalPlanQual: the newer version no longer matches
        }
        Ok(Ok((g, lp, row)))
    }

    /// Marks the old tuple as replaced or deleted by `xid` (also what redo does,
    /// `heap::wal`).
    pub(super) fn set_old_xmax(t: &mut [u8], xid: Xid, ctid: Tid, hot: bool, keys_updated: bool) {
        ht::set_xmax(t, xid);
        let m = t.infomask()
            & !(ht::HEAP_XMAX_INVALID | ht::HEAP_XMAX_COMMITTED | ht::HEAP_XMAX_LOCK_ONLY);
        ht::set_infomask(t, m);
        let mut m2 = t.infomask2() & !ht::HEAP_HOT_UPDATED;
        if hot {
            m2 |= ht::HEAP_HOT_UPDATED;
        }
        if keys_updated {
            m2 |= ht::HEAP_KEYS_UPDATED;
        }
        ht::set_infomask2(t, m2);
        ht::set_ctid(t, ctid);
    }

    fn try_delete(&self, ctx: &Ctx<'_>, tid: Tid, pk_key: &[u8]) -> Result<Attempt> {
        let (mut g, lp, _row) = match self.lock_for_change(ctx, tid, pk_key)? {
            Ok(v) => v,
            Err(a) => return Ok(a),
        };
        Self::set_old_xmax(hp::tuple_mut(g.data_mut(), lp), ctx.xid, tid, false, true);
        set_prunable(g.data_mut(), ctx.xid);
        self.clear_all_visible(&mut g);
        let mut main = Vec::with_capacity(8);
        main.extend_from_slice(&ctx.xid.to_le_bytes());
        main.extend_from_slice(&tid.offset.to_le_bytes());
        // infobits: the delete set HEAP_KEYS_UPDATED (heapam.c `compute_infobits`).
        main.extend_from_slice(&[super::wal::XLHL_KEYS_UPDATED, 0]);
        let rec = RecordBuilder::new(rmgr::HEAP, info::DELETE)
            .xid(ctx.xid)
            .block(g.page_id(), false, &[])
            .main_data(&main);
        log_change(&self.wal, &rec, &mut [&mut g])?;
        self.counters.n_tup_del.fetch_add(1, Ordering::Relaxed);
        Ok(Attempt::Done)
    }

    /// Same-page update record data with PostgreSQL's prefix/suffix compression
    /// (heapam.c `log_heap_update`: only when old and new share the page and the page needs
    /// no full-page image; each of prefix and suffix only if at least 3 bytes). Returns the
    /// data and the xl_heap_update flags saying which of prefix and suffix it carries.
    fn update_block_data(
        &self,
        old: &[u8],
        new: &[u8],
        same_page: bool,
        page_needs_image: bool,
    ) -> (Vec<u8>, u8) {
        let (mut prefix, mut suffix) = (0usize, 0usize);
        let (od, nd) = (
            &old[(old[22] as usize).min(old.len())..],
            &new[(new[22] as usize).min(new.len())..],
        );
        if same_page && !page_needs_image {
            prefix = od.iter().zip(nd).take_while(|(a, b)| a == b).count();
            if prefix < 3 {
                prefix = 0;
            }
            let max_suffix = od.len().min(nd.len()) - prefix;
            suffix = od
                .iter()
                .rev()
                .zip(nd.iter().rev())
                .take(max_suffix)
                .take_while(|(a, b)| a == b)
                .count();
            if suffix < 3 {
                suffix = 0;
            }
        }
        let mut d = Vec::new();
        if prefix > 0 {
            d.extend_from_slice(&(prefix as u16).to_le_bytes());
        }
        if suffix > 0 {
            d.extend_from_slice(&(suffix as u16).to_le_bytes());
        }
        d.extend_from_slice(&new[18..23]);
        let hoff = new[22] as usize;
        d.extend_from_slice(&new[ht::HEADER_BYTES..hoff.min(new.len())]);
        d.extend_from_slice(&nd[prefix..nd.len() - suffix]);
        let mut flags = 0;
        if prefix > 0 {
            flags |= super::wal::XLH_UPDATE_PREFIX_FROM_OLD;
        }
        if suffix > 0 {
            flags |= super::wal::XLH_UPDATE_SUFFIX_FROM_OLD;
        }
        (d, flags)
    }

    fn try_update(
        &self,
        ctx: &Ctx<'_>,
        tid: Tid,
        pk_key: &[u8],
        set: &[Assign],
    ) -> Result<Attempt> {
        // PostgreSQL 14+ builds the new row from the old one: ExecModifyTable fetches the
        // old version first (`table_tuple_fetch_row_version` → heapam.c `heap_fetch`), a
        // pin of the page the scan holds, counted as a buffer hit (nodeModifyTable.c).
        drop(self.pool.fetch_read(self.page_id(tid.block))?);
        let (mut g, lp, old_row) = match self.lock_for_change(ctx, tid, pk_key)? {
            Ok(v) => v,
            Err(a) => return Ok(a),
        };
        let mut new_row = old_row.clone();
        Assign::apply(set, &mut new_row)?;
        let new_row = self.def.normalize_row(&new_row);
        self.def.check_row(&new_row)?;
        // heapam.c HeapDetermineColumnsInfo: binary comparison of the indexed columns.
        let indexed_changed = self.indexed_cols.iter().any(|&c| old_row[c] != new_row[c]);
        let keys_updated = self
            .def
            .primary_key
            .iter()
            .any(|&c| old_row[c] != new_row[c]);
        let enc = encode_heap(&self.def, &new_row);
        let mut new_t = ht::build(
            ctx.xid,
            ctx.cid,
            self.def.columns.len() as u16,
            enc.null_bitmap.as_deref(),
            &enc.data,
            ht::HEAP_UPDATED,
        );
        let page_bytes = self.pool.store().page_size().bytes();
        let max = page_bytes - crate::page::PAGE_HEADER_BYTES - hp::ITEM_ID_BYTES;
        if maxalign(new_t.len()) > max {
            return Err(Error::TooLarge {
                what: "heap tuple",
                bytes: new_t.len(),
                max_bytes: max,
            });
        }
        let old_t = hp::tuple(g.data(), lp).to_vec();
        let id = g.page_id();
        let needs_image =
            self.wal.config().full_page_writes && page_lsn(g.data()) <= self.wal.redo_lsn().0;
        if maxalign(new_t.len()) <= hp::heap_free_space(g.data()) {
            // Same page: HOT if no indexed column changed (heapam.c: newbuf == buffer &&
            // !bms_overlap(modified_attrs, hot_attrs)).
            let hot = self.hot && !indexed_changed;
            if hot {
                let m2 = new_t.as_slice().infomask2() | ht::HEAP_ONLY_TUPLE;
                ht::set_infomask2(&mut new_t, m2);
            }
            let off = hp::add_tuple(g.data_mut(), &new_t).ok_or_else(|| Error::Corrupted {
                what: format!(
                    "{id}: no room for an update that fit ({} bytes; free {}, lower/upper {:?}, {} line pointers, flags {:#x})",
                    new_t.len(),
                    hp::heap_free_space(g.data()),
                    crate::page::hole(g.data()),
                    hp::max_offset(g.data()),
                    flags(g.data())
                ),
            })?;
            let new_tid = Tid {
                block: tid.block,
                offset: off,
            };
            let nlp = hp::item_id(g.data(), off, id)?;
            ht::set_ctid(hp::tuple_mut(g.data_mut(), nlp), new_tid);
            Self::set_old_xmax(
                hp::tuple_mut(g.data_mut(), lp),
                ctx.xid,
                new_tid,
                hot,
                keys_updated,
            );
            set_prunable(g.data_mut(), ctx.xid);
            self.clear_all_visible(&mut g);
            let stored = hp::tuple(g.data(), nlp).to_vec();
            let (data, flags) = self.update_block_data(&old_t, &stored, true, needs_image);
            let rec = RecordBuilder::new(
                rmgr::HEAP,
                if hot { info::HOT_UPDATE } else { info::UPDATE },
            )
            .xid(ctx.xid)
            .block(id, false, &data)
            .main_data(&Self::update_main_data(
                ctx.xid,
                tid.offset,
                keys_updated,
                flags,
                off,
            ));
            log_change(&self.wal, &rec, &mut [&mut g])?;
            drop(g);
            self.counters.n_tup_upd.fetch_add(1, Ordering::Relaxed);
            if hot {
                self.counters.n_tup_hot_upd.fetch_add(1, Ordering::Relaxed);
            } else {
                self.insert_index_entries(ctx, &new_row, new_tid, Some(&old_row))?;
            }
            return Ok(Attempt::Done);
        }
        // No room: mark the page full, lock the row with our xid (xmax, LOCK_ONLY, WAL-logged
        // as XLOG_HEAP_LOCK), release the page, find another page, and lock both in block order.
        let f = flags(g.data()) | hp::PD_PAGE_FULL;
        set_flags(g.data_mut(), f);
        {
            let t = hp::tuple_mut(g.data_mut(), lp);
            ht::set_xmax(t, ctx.xid);
            let m = (t.infomask() & !(ht::HEAP_XMAX_INVALID | ht::HEAP_XMAX_COMMITTED))
                | ht::HEAP_XMAX_LOCK_ONLY;
            ht::set_infomask(t, m);
        }
        let mut lock_main = ctx.xid.to_le_bytes().to_vec();
        lock_main.extend_from_slice(&tid.offset.to_le_bytes());
        let rec = RecordBuilder::new(rmgr::HEAP, info::LOCK)
            .xid(ctx.xid)
            .block(id, false, &[])
            .main_data(&lock_main);
        log_change(&self.wal, &rec, &mut [&mut g])?;
        drop(g);
        let (new_g, new_page) = self.page_for_tuple(new_t.len(), Some(tid.block))?;
        let nb = new_g.page_id().block;
        let (mut ng, mut og) = if nb > tid.block {
            drop(new_g);
            let og = self.pool.fetch_write(self.page_id(tid.block))?;
            let ng = self.pool.fetch_write(self.page_id(nb))?;
            (ng, og)
        } else {
            let og = self.pool.fetch_write(self.page_id(tid.block))?;
            (new_g, og)
        };
        let need = maxalign(new_t.len());
        if hp::heap_free_space(ng.data()) < need {
            // Someone filled it meanwhile: try again from the top (our row lock stays).
            drop(ng);
            drop(og);
            return self.try_update(ctx, tid, pk_key, set);
        }
        let off = hp::add_tuple(ng.data_mut(), &new_t).ok_or_else(|| Error::Corrupted {
            what: format!("{}: no room for an update that fit", ng.page_id()),
        })?;
        let new_tid = Tid {
            block: nb,
            offset: off,
        };
        let nid = ng.page_id();
        let nlp = hp::item_id(ng.data(), off, nid)?;
        ht::set_ctid(hp::tuple_mut(ng.data_mut(), nlp), new_tid);
        let olp = hp::item_id(og.data(), tid.offset, id)?;
        Self::set_old_xmax(
            hp::tuple_mut(og.data_mut(), olp),
            ctx.xid,
            new_tid,
            false,
            keys_updated,
        );
        set_prunable(og.data_mut(), ctx.xid);
        self.clear_all_visible(&mut ng);
        self.clear_all_visible(&mut og);
        let stored = hp::tuple(ng.data(), nlp).to_vec();
        let init = new_page && off == 1;
        let (data, flags) = self.update_block_data(&old_t, &stored, false, true);
        let rec = RecordBuilder::new(
            rmgr::HEAP,
            info::UPDATE | if init { info::INIT_PAGE } else { 0 },
        )
        .xid(ctx.xid)
        .block(nid, init, &data)
        .block(id, false, &[])
        .main_data(&Self::update_main_data(
            ctx.xid,
            tid.offset,
            keys_updated,
            flags,
            off,
        ));
        log_change(&self.wal, &rec, &mut [&mut ng, &mut og])?;
        drop(ng);
        drop(og);
        self.counters.n_tup_upd.fetch_add(1, Ordering::Relaxed);
        self.insert_index_entries(ctx, &new_row, new_tid, Some(&old_row))?;
        Ok(Attempt::Done)
    }

    /// xl_heap_update: old_xmax u32, old_offnum u16, old_infobits u8, flags u8, new_xmax u32,
    /// new_offnum u16 (14 bytes). old_infobits carries XLHL_KEYS_UPDATED when the update
    /// changed the key; flags the XLH_UPDATE_PREFIX/SUFFIX_FROM_OLD bits of the block data.
    fn update_main_data(
        xid: Xid,
        old_off: u16,
        keys_updated: bool,
        flags: u8,
        new_off: u16,
    ) -> Vec<u8> {
        let mut m = Vec::with_capacity(14);
        m.extend_from_slice(&xid.to_le_bytes());
        m.extend_from_slice(&old_off.to_le_bytes());
        let infobits = if keys_updated {
            super::wal::XLHL_KEYS_UPDATED
        } else {
            0
        };
        m.extend_from_slice(&[infobits, flags]);
        m.extend_from_slice(&0u32.to_le_bytes());
        m.extend_from_slice(&new_off.to_le_bytes());
        m
    }
}

/// Most heap blocks a bottom-up pass visits (heapam.c BOTTOMUP_MAX_NBLOCKS).
const BOTTOMUP_MAX_NBLOCKS: usize = 6;

/// The heap's side of index deletion for one insert (heapam.c `heap_index_delete_tuples`).
struct IndexDeleteCheck<'a> {
    table: &'a HeapTable,
    tm: &'a TransactionManager,
}

impl IndexDeleteTuples for IndexDeleteCheck<'_> {
    fn heap_block(&self, key: &[u8]) -> Option<u32> {
        tid_of_key(key, self.table.heap_rel).ok().map(|t| t.block)
    }

    fn tid_suffix_bytes(&self) -> usize {
        6
    }

    /// heapam.c `heap_index_delete_tuples`: candidates grouped by heap block, each block
    /// read once under a shared latch (no pruning), an entry deletable when it was known
    /// dead or its whole HOT chain is dead to everyone (`heap_hot_search_buffer`'s
    /// `all_dead`). Simple deletion visits every block named. Bottom-up deletion
    /// (`bottomup_sort_and_shrink`) visits at most [`BOTTOMUP_MAX_NBLOCKS`] blocks, those
    /// with the most promising entries first, and stops when the space freed reaches a
    /// target that halves with each block after the first, or when a block freed nothing.
    /// The conflict horizon is the newest xmax among the deleted chains' tuples
    /// (`HeapTupleHeaderAdvanceConflictHorizon`).
    fn index_delete_tuples(&self, op: &DeleteOp) -> Result<DeleteVerdict> {
        let mut deletable = vec![false; op.candidates.len()];
        let mut latest_removed_xid: Xid = 0;
        let tids: Vec<Option<Tid>> = op
            .candidates
            .iter()
            .map(|c| tid_of_key(&c.key, self.table.heap_rel).ok())
            .collect();
        // Block → candidate indexes.
        let mut blocks: Vec<(u32, Vec<usize>)> = Vec::new();
        {
            let mut by_block: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
            for (i, t) in tids.iter().enumerate() {
                if let Some(t) = t {
                    by_block.entry(t.block).or_default().push(i);
                }
            }
            blocks.extend(by_block);
        }
        if op.bottom_up {
            let promising =
                |v: &Vec<usize>| v.iter().filter(|&&i| op.candidates[i].promising).count();
            // bottomup_sort_and_shrink: most promising blocks first (PostgreSQL buckets the
            // counts by powers of two, then prefers more TIDs, then lower block numbers).
            blocks.sort_by(|a, b| {
                let (pa, pb) = (promising(&a.1), promising(&b.1));
                let bucket = |n: usize| usize::BITS - n.leading_zeros();
                bucket(pb)
                    .cmp(&bucket(pa))
                    .then(b.1.len().cmp(&a.1.len()))
                    .then(a.0.cmp(&b.0))
            });
            blocks.retain(|b| promising(&b.1) > 0);
            blocks.truncate(BOTTOMUP_MAX_NBLOCKS);
        }
        let horizon = Horizon::new(self.tm);
        let mut freed = 0usize;
        let mut target = op.free_target_bytes;
        for (n_visited, (block, members)) in blocks.iter().enumerate() {
            if op.bottom_up && n_visited > 0 {
                if freed >= target {
                    break;
                }
                target /= 2;
            }
            let freed_before = freed;
            let g = self.table.pool.fetch_read(self.table.page_id(*block))?;
            for &i in members {
                let c = &op.candidates[i];
                let Some(tid) = tids[i] else { continue };
                let chain = HeapTable::chain_on_page(g.data(), g.page_id(), tid)?;
                if !c.known_dead && !HeapTable::all_dead(&chain, &horizon) {
                    continue;
                }
                deletable[i] = true;
                freed += c.space_bytes;
                for (_, t) in &chain {
                    if t.xmax() > latest_removed_xid {
                        latest_removed_xid = t.xmax();
                    }
                }
            }
            drop(g);
            if op.bottom_up && freed == freed_before {
                break;
            }
        }
        Ok(DeleteVerdict {
            deletable,
            latest_removed_xid,
        })
    }
}
