//! Index maintenance on the heap's side: adding a row's entries to every index with the
//! unique checks (PostgreSQL REL_15 executor/execIndexing.c `ExecInsertIndexTuples`,
//! `index_unchanged_by_update`; nbtinsert.c `_bt_doinsert` and `_bt_check_unique`'s heap
//! side under SnapshotDirty), batched index scans that mark entries dead when their HOT
//! chain is dead to everyone (nbtutils.c `_bt_killitems`; the horizon of procarray.c
//! `GlobalVisTestFor`), the heap side of index deletion before a leaf splits (heapam.c
//! `heap_index_delete_tuples`, `bottomup_sort_and_shrink`), the sorted build of deferred
//! secondary indexes (nbtsort.c `btbuild` over heapam_handler.c
//! `heapam_index_build_range_scan`), and the amcheck-style check of every index
//! (contrib/amcheck `bt_index_check`).
//!
//! Index keys are the encoded key followed by the 6-byte TID of the heap tuple.

use super::page::{self as hp, LpState};
use super::table::{Ctx, HeapTable, UNIQUE_STRIPES};
use super::tuple::{HeaderRead, Tid};
use super::visibility::{satisfies_dirty, satisfies_vacuum, DirtyStatus, VacuumStatus};
use crate::btree::{
    BTree, DeleteOp, DeleteVerdict, IndexDeleteTuples, InsertCleanup, LeafRef, ScanDirection,
};
use crate::catalog::{key_of, Projection, Row};
use crate::device::FileId;
use crate::error::TxnError;
use crate::error::{Error, Result};
use crate::mvcc::{TransactionManager, Xid};
use std::ops::Bound;
use std::sync::atomic::Ordering;

/// Internal page fill of a sorted index build (nbtree.h BTREE_NONLEAF_FILLFACTOR).
const BUILD_INTERNAL_FILL_PCT: u8 = 70;
/// Index entries a batched scan collects before it reads their heap pages.
const SCAN_BATCH: usize = 256;

/// The removal horizon of one statement's index scan, computed when first needed
/// (procarray.c `GlobalVisTestFor`: PostgreSQL also computes it lazily and once).
pub(super) struct Horizon<'a> {
    tm: &'a TransactionManager,
    xmin: std::cell::Cell<Option<Xid>>,
}

impl<'a> Horizon<'a> {
    pub(super) fn new(tm: &'a TransactionManager) -> Self {
        Horizon {
            tm,
            xmin: std::cell::Cell::new(None),
        }
    }
    pub(super) fn get(&self) -> Xid {
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

/// The TID at the end of index key `key` of relation `rel`.
fn tid_of_key(key: &[u8], rel: FileId) -> Result<Tid> {
    key.len()
        .checked_sub(6)
        .and_then(|s| Tid::from_bytes(&key[s..]))
        .ok_or_else(|| {
            Error::corrupted(format!(
                "index entry of relation {rel} is shorter than a tid"
            ))
        })
}

/// `key` followed by `tid`: an index entry's key.
fn with_tid(mut key: Vec<u8>, tid: Tid) -> Vec<u8> {
    key.extend_from_slice(&tid.to_bytes());
    key
}

/// The greatest key with prefix `prefix`: the prefix followed by the largest TID.
pub(super) fn upper_of(prefix: &[u8]) -> Vec<u8> {
    let mut k = prefix.to_vec();
    k.extend_from_slice(&[0xFF; 6]);
    k
}

impl HeapTable {
    /// Builds the deferred secondary indexes from the heap, as CREATE INDEX does
    /// (nbtsort.c `btbuild`: a heap scan through `heapam_index_build_range_scan`, a sort,
    /// then `_bt_load` filling leaves to the index fillfactor (90 by default) and internal
    /// pages to 70):
    /// every HOT chain root is indexed once with the key of its newest member not dead to
    /// everyone (`heap_get_root_tuples`). Then the indexes are maintained again. Returns
    /// the entries built. Nothing happens when no index is deferred.
    ///
    /// Meant for the end of a load with no concurrent writers on the table (CREATE INDEX
    /// takes a ShareLock that blocks them).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged heap page; storage errors.
    pub fn build_secondary_indexes(&self, tm: &TransactionManager) -> Result<u64> {
        if !self.secondary_deferred.load(Ordering::Acquire) {
            return Ok(0);
        }
        let horizon = Horizon::new(tm);
        let mut per_index: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); self.indexes.len()];
        // Only the indexed columns are deformed (index.c `FormIndexDatum` →
        // `slot_getattr` of each index attribute).
        let proj = Projection::columns(&self.def.indexed_columns());
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
                let row = self.decode_projected(t, &proj)?;
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
                    return Err(Error::Txn(TxnError::DuplicateKey {
                        index: self.def.indexes[ix].name.clone(),
                        key: format!("{:?}", prefix(&w[0].0)),
                    }));
                }
            }
            // nbtsort.c `_bt_load` deduplicates unless the index is unique.
            // Leaves to the index's fillfactor (nbtsort.c `_bt_load`,
            // `BTGetTargetPageFreeSpace`; BTREE_DEFAULT_FILLFACTOR 90), the design's
            // `index_fillfactor`, which the tree's rightmost fill carries.
            let leaf_fill = self.indexes[ix].config().rightmost_fill_pct;
            self.indexes[ix].bulk_load_with(
                &entries,
                leaf_fill,
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
        let names = self
            .pk
            .iter()
            .map(|_| "primary key")
            .chain(self.def.indexes.iter().map(|i| i.name.as_str()));
        let trees = self.pk.iter().chain(self.indexes.iter());
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

    /// Whether every member of a HOT chain is dead to everyone (heapam.c
    /// `heap_hot_search_buffer`'s `all_dead`, each member `HeapTupleIsSurelyDead`): an
    /// empty chain (dead or unused root) is.
    pub(super) fn all_dead(members: &[(Tid, Vec<u8>)], horizon: &Horizon<'_>) -> bool {
        members
            .iter()
            .all(|(_, t)| satisfies_vacuum(t, horizon.get(), horizon.tm).0 == VacuumStatus::Dead)
    }

    /// Visits the live index entries of `index` between `lo` and `hi` in batches (the
    /// index leaf latch is never held while heap pages are read; entries marked dead are
    /// skipped), calling `f(tid)` for each until it returns `(false, _)`. Entries for which
    /// `f` returns `(_, true)` (their chain is dead to everyone) are marked dead in their
    /// leaf after the batch (nbtutils.c `_bt_killitems`, called as the scan leaves a page).
    pub(super) fn index_entries(
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

    /// Adds `row`'s entries (pointing at `tid`) to the primary key and every secondary
    /// index; unique indexes are checked under a stripe lock on the key so that two
    /// inserters of one key are serialized (nbtinsert.c `_bt_doinsert` holds the leaf lock
    /// for the same reason). `old_row` is the version a non-HOT update replaces: an index
    /// whose key it shares gets the executor's `indexUnchanged` hint
    /// (execIndexing.c `index_unchanged_by_update`), which allows bottom-up deletion.
    pub(super) fn insert_index_entries(
        &self,
        ctx: &Ctx<'_>,
        row: &Row,
        tid: Tid,
        old_row: Option<&Row>,
    ) -> Result<()> {
        let unchanged =
            |cols: &[usize]| old_row.is_some_and(|o| cols.iter().all(|&c| o[c] == row[c]));
        // A table without a primary key has no primary-key index, and no uniqueness to check.
        if let Some(pk) = &self.pk {
            let k = key_of(&self.def, &self.def.primary_key, row)?;
            let pk_unchanged = unchanged(&self.def.primary_key);
            self.insert_unique(ctx, pk, &self.def.name, k, tid, pk_unchanged)?;
        }
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
            // nbtinsert.c `_bt_doinsert` descends once: `_bt_check_unique` and the insertion
            // work on the leaf `_bt_search` pinned. Here the check's scan and the insertion
            // descend separately; the insertion's pins of the pages the check pinned are
            // those same pins (one usage-count raise and one hit per page, as bufmgr.c
            // `PinBuffer` and `ReadBuffer_common` count them for the single descent).
            let (checked, pins) = self.pool.record_descent(index.rel(), || {
                self.check_unique(ctx, index, &key, tid, &mut uniquedup)
            });
            match checked? {
                None => {
                    // nbtinsert.c `_bt_delete_or_dedup_one_page`: bottom-up deletion also
                    // runs when the unique check met a duplicate (`uniquedup`).
                    let bottom_up = index_unchanged || uniquedup;
                    // ... and deduplication only then (`checkingunique && !uniquedup`).
                    self.pool.repeat_descent(pins, || {
                        self.index_insert(ctx, index, &with_tid(key, tid), bottom_up, uniquedup)
                    })?;
                    drop(guard);
                    if self.is_pk(index) {
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
                    let index_name = if self.is_pk(index) {
                        format!("{name}_pkey")
                    } else {
                        name.to_string()
                    };
                    return Err(Error::Txn(TxnError::DuplicateKey {
                        index: index_name,
                        key: format!("({key_text})"),
                    }));
                }
            }
        }
    }

    fn key_types(&self, index: &BTree) -> Result<Vec<crate::catalog::KeyColumn>> {
        let cols: &[usize] = if self.is_pk(index) {
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
