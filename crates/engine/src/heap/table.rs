//! A heap table with its indexes ([`HeapTable`]), what its operations run with ([`Ctx`]),
//! and its HOT and non-HOT update and its delete (PostgreSQL REL_15
//! src/backend/access/heap/heapam.c `heap_update`, `heap_delete`, the row lock an update
//! that moves the row takes through xmax, `heap_get_latest_tid`; ExecUpdate's retry
//! loop and EvalPlanQual in nodeModifyTable.c).
//!
//! The table's other methods live in files of their own: reads through HOT chains
//! (`fetch.rs`), insert (`insert.rs`), index maintenance (`index.rs`), pruning on access
//! (`prune_opt.rs`), vacuum (`vacuum.rs`) and analyze (`analyze.rs`).

use super::fsm::FreeSpaceMap;
use super::page::{self as hp, LpState};
use super::prune::set_prunable;
use super::tuple::{self as ht, maxalign, HeaderRead, Tid};
use super::visibility::{satisfies_update, UpdateStatus};
use super::vm::VisibilityMap;
use super::wal::{info, update_block_data, update_main_data, XLHL_KEYS_UPDATED};
use crate::access::TableCounters;
use crate::access::{Assign, Catalogued, Statement, TableWrite};
use crate::btree::BTree;
use crate::buffer::{log_change, mark_dirty_hint, BufferPool, WritePageGuard};
use crate::catalog::{
    decode_heap_projected, encode_heap, key_of, Projection, Row, TableDef, Value,
};
use crate::device::FileId;
use crate::error::TxnError;
use crate::error::{Error, Result};
use crate::mvcc::{Isolation, Snapshot, TransactionManager, Xid};
use crate::page::{flags, page_lsn, set_flags, PageId};
use crate::wal::{rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
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

impl<'a> From<&'a Statement<'a>> for Ctx<'a> {
    /// The heap's view of the engine's statement: its snapshot, xid and command id, and
    /// whether a concurrent update is a serialization failure (repeatable read).
    fn from(st: &'a Statement<'a>) -> Self {
        Ctx {
            tm: st.tm,
            xid: st.xid,
            snapshot: st.snapshot,
            cid: st.cid,
            repeatable_read: st.isolation == Isolation::RepeatableRead,
        }
    }
}

/// Outcome of one attempt to update, delete or lock the tuple at a tid.
enum Attempt {
    /// Done; the row as it was before the change (a lock: the locked row).
    Done(Row),
    Wait(Xid),
    Updated,
    Gone,
}

/// What [`HeapTable::modify`] does to the newest version of a row.
#[derive(Clone, Copy)]
enum Change<'a> {
    /// `heap_update` with this SET list.
    Update(&'a [Assign]),
    /// `heap_delete`.
    Delete,
    /// `heap_lock_tuple` in LockTupleExclusive mode (`SELECT ... FOR UPDATE`).
    Lock,
}

/// Stripes of the unique-check mutex (see `index.rs`, `insert_unique`).
pub(super) const UNIQUE_STRIPES: usize = 256;

/// A heap relation, its primary-key index and its secondary indexes. See the `heap` module
/// doc for the rules it follows.
pub struct HeapTable {
    /// Table id in the database.
    pub id: u32,
    /// Definition.
    pub def: TableDef,
    /// The heap relation file.
    pub heap_rel: FileId,
    /// Primary key index (unique): key = encoded pk ‖ tid. `None` for a table without a
    /// primary key: a plain heap, whose rows only a sequential scan or a secondary index
    /// finds.
    pub pk: Option<BTree>,
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
    /// `version_chain`'s GC-off what-if sees every version until a vacuum; on with the
    /// `autovacuum` switch off, as PostgreSQL prunes in pruneheap.c `heap_page_prune_opt`
    /// whatever `autovacuum` is set to).
    pub prune_on_access: bool,
    /// pg_stat_user_tables-style counters.
    pub counters: TableCounters,
    /// The secondary indexes are not maintained: the table is being loaded and they will
    /// be built afterwards by sorting ([`HeapTable::build_secondary_indexes`]), as
    /// sysbench creates its `k` index with CREATE INDEX after the load. Updates, deletes
    /// and secondary-index reads are refused meanwhile.
    pub secondary_deferred: std::sync::atomic::AtomicBool,
    pub(super) pool: Arc<BufferPool>,
    pub(super) wal: Arc<Wal>,
    indexed_cols: Vec<usize>,
    pub(super) target_block: AtomicU32,
    pub(super) unique_stripes: Box<[Mutex<()>]>,
}

impl HeapTable {
    /// Builds a table on existing relations.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        def: TableDef,
        heap_rel: FileId,
        pk: Option<BTree>,
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
    pub(super) fn check_not_deferred(&self, what: &str) -> Result<()> {
        crate::access::check_not_deferred(&self.secondary_deferred, &self.def.name, what)
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The WAL.
    pub fn wal(&self) -> &Arc<Wal> {
        &self.wal
    }

    pub(super) fn page_id(&self, block: u32) -> PageId {
        PageId::new(self.heap_rel, block)
    }

    pub(super) fn save_free_space(&self) -> usize {
        self.pool.store().page_size().bytes() * (100 - self.fillfactor as usize) / 100
    }

    /// Encoded primary key of `values` (the pk columns' values, in pk order).
    ///
    /// Errors: [`Error::InvalidValue`] for the wrong number or type of values;
    /// [`Error::Catalog`] for a table without a primary key
    /// ([`TableDef::require_primary_key`]).
    pub fn pk_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        self.def.require_primary_key("a lookup by primary key")?;
        self.def.key_from_values(&self.def.primary_key, values)
    }

    /// The primary-key index.
    ///
    /// Errors: [`Error::Catalog`] for a table without a primary key.
    pub(super) fn pk_index(&self) -> Result<&BTree> {
        self.def.require_primary_key("a lookup by primary key")?;
        self.pk.as_ref().ok_or_else(|| {
            Error::corrupted(format!(
                "table {}: primary-key index missing",
                self.def.name
            ))
        })
    }

    /// Whether `index` is the primary-key index.
    pub(super) fn is_pk(&self, index: &BTree) -> bool {
        self.pk.as_ref().is_some_and(|pk| std::ptr::eq(index, pk))
    }

    /// Encoded key of secondary index `ix` for `values`: the whole key, or a leading part
    /// of it (fewer values than index columns; [`TableDef::key_prefix_from_values`]).
    ///
    /// Errors: [`Error::Catalog`] for an unknown index; as [`HeapTable::pk_key`].
    pub fn index_key(&self, ix: usize, values: &[Value]) -> Result<Vec<u8>> {
        let idx =
            self.def.indexes.get(ix).ok_or_else(|| {
                Error::Catalog(format!("table {} has no index #{ix}", self.def.name))
            })?;
        self.def.key_prefix_from_values(&idx.columns, values)
    }

    pub(super) fn decode(&self, t: &[u8]) -> Result<Row> {
        self.decode_projected(t, &Projection::all())
    }

    /// [`HeapTable::decode`] of only the columns `proj` needs (the others
    /// [`crate::catalog::Value::Null`]; [`decode_heap_projected`]).
    pub(super) fn decode_projected(&self, t: &[u8], proj: &Projection) -> Result<Row> {
        let (bitmap, data) = t
            .bitmap_and_data()
            .ok_or_else(|| Error::corrupted(format!("table {}: tuple header", self.def.name)))?;
        decode_heap_projected(&self.def, bitmap, data, proj)
    }

    pub(super) fn clear_all_visible(&self, g: &mut WritePageGuard<'_>) {
        if flags(g.data()) & hp::PD_ALL_VISIBLE != 0 {
            let f = flags(g.data()) & !hp::PD_ALL_VISIBLE;
            set_flags(g.data_mut(), f);
        }
        self.vm.clear(g.page_id().block);
    }

    // ---------------------------------------------------------------------------------
    // Update and delete (heapam.c `heap_update`, `heap_delete`)
    // ---------------------------------------------------------------------------------
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
        Err(Error::corrupted(format!(
            "table {}: update chain does not end",
            self.def.name
        )))
    }

    /// Applies `change` to the newest version of the row with primary key `pk` the
    /// statement finds, with ExecUpdate's (ExecLockRows') retry loop: wait for a running
    /// changer, follow the update chain at read committed, fail at repeatable read.
    /// Returns the row as it was (`None`: no such row).
    fn modify(&self, ctx: &Ctx<'_>, pk: &[Value], change: Change<'_>) -> Result<Option<Row>> {
        self.check_not_deferred(match change {
            Change::Update(_) => "an update",
            Change::Delete => "a delete",
            Change::Lock => "a locking read",
        })?;
        let key = self.pk_key(pk)?;
        let Some((mut tid, _)) = self
            .fetch_by_key(ctx, self.pk_index()?, &key, 1)?
            .into_iter()
            .next()
        else {
            return Ok(None);
        };
        loop {
            let attempt = match change {
                Change::Update(set) => self.try_update(ctx, tid, &key, set)?,
                Change::Delete => self.try_delete(ctx, tid, &key)?,
                Change::Lock => self.try_lock(ctx, tid, &key)?,
            };
            match attempt {
                Attempt::Done(row) => return Ok(Some(row)),
                Attempt::Gone => return Ok(None),
                Attempt::Wait(x) => ctx.tm.wait_for(ctx.xid, x)?,
                Attempt::Updated => {
                    if ctx.repeatable_read {
                        return Err(Error::Txn(TxnError::SerializationFailure(format!(
                            "table {}, row {}: updated by a transaction this snapshot does not see",
                            self.def.name, tid
                        ))));
                    }
                    match self.latest_version(ctx, tid)? {
                        Some(next) => tid = next,
                        None => return Ok(None),
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

    fn try_delete(&self, ctx: &Ctx<'_>, tid: Tid, pk_key: &[u8]) -> Result<Attempt> {
        let (mut g, lp, row) = match self.lock_for_change(ctx, tid, pk_key)? {
            Ok(v) => v,
            Err(a) => return Ok(a),
        };
        ht::set_old_xmax(hp::tuple_mut(g.data_mut(), lp), ctx.xid, tid, false, true);
        set_prunable(g.data_mut(), ctx.xid);
        self.clear_all_visible(&mut g);
        let mut main = Vec::with_capacity(8);
        main.extend_from_slice(&ctx.xid.to_le_bytes());
        main.extend_from_slice(&tid.offset.to_le_bytes());
        // infobits: the delete set HEAP_KEYS_UPDATED (heapam.c `compute_infobits`).
        main.extend_from_slice(&[XLHL_KEYS_UPDATED, 0]);
        let rec = RecordBuilder::new(rmgr::HEAP, info::DELETE)
            .xid(ctx.xid)
            .block(g.page_id(), false, &[])
            .main_data(&main);
        log_change(&self.wal, &rec, &mut [&mut g])?;
        self.counters.n_tup_del.fetch_add(1, Ordering::Relaxed);
        Ok(Attempt::Done(row))
    }

    /// Sets the row lock of transaction `ctx.xid` on the tuple at `lp` of the page `g`
    /// (the tuple at `tid`): xmax = our xid with HEAP_XMAX_LOCK_ONLY, WAL-logged as
    /// XLOG_HEAP_LOCK (heapam.c `heap_lock_tuple`, and `heap_update` before it releases
    /// the page to put the new version elsewhere). Writers wait for a running locker
    /// (`satisfies_update`: BeingModified); readers ignore the lock.
    fn set_row_lock(
        &self,
        ctx: &Ctx<'_>,
        g: &mut WritePageGuard<'_>,
        lp: hp::ItemId,
        tid: Tid,
    ) -> Result<()> {
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
            .block(g.page_id(), false, &[])
            .main_data(&lock_main);
        log_change(&self.wal, &rec, &mut [g])?;
        Ok(())
    }

    /// `SELECT ... FOR UPDATE` on the tuple at `tid` (heapam.c `heap_lock_tuple`,
    /// LockTupleExclusive): the same checks as an update (`lock_for_change`), then the row
    /// lock in xmax ([`HeapTable::set_row_lock`]); nothing to do when this transaction
    /// holds the row already (`heap_lock_tuple`: "if we already hold the lock").
    fn try_lock(&self, ctx: &Ctx<'_>, tid: Tid, pk_key: &[u8]) -> Result<Attempt> {
        let (mut g, lp, row) = match self.lock_for_change(ctx, tid, pk_key)? {
            Ok(v) => v,
            Err(a) => return Ok(a),
        };
        let t = hp::tuple(g.data(), lp);
        if t.infomask() & ht::HEAP_XMAX_LOCK_ONLY != 0 && t.xmax() == ctx.xid {
            return Ok(Attempt::Done(row));
        }
        self.set_row_lock(ctx, &mut g, lp, tid)?;
        Ok(Attempt::Done(row))
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
            self.wal.config().full_page_writes && page_lsn(g.data()) <= self.wal.redo_lsn();
        if maxalign(new_t.len()) <= hp::heap_free_space(g.data()) {
            // Same page: HOT if no indexed column changed (heapam.c: newbuf == buffer &&
            // !bms_overlap(modified_attrs, hot_attrs)).
            let hot = self.hot && !indexed_changed;
            if hot {
                let m2 = new_t.as_slice().infomask2() | ht::HEAP_ONLY_TUPLE;
                ht::set_infomask2(&mut new_t, m2);
            }
            let off = hp::add_tuple(g.data_mut(), &new_t).ok_or_else(|| Error::corrupted(format!(
                    "{id}: no room for an update that fit ({} bytes; free {}, lower/upper {:?}, {} line pointers, flags {:#x})",
                    new_t.len(),
                    hp::heap_free_space(g.data()),
                    crate::page::hole(g.data()),
                    hp::max_offset(g.data()),
                    flags(g.data())
                )))?;
            let new_tid = Tid {
                block: tid.block,
                offset: off,
            };
            let nlp = hp::item_id(g.data(), off, id)?;
            ht::set_ctid(hp::tuple_mut(g.data_mut(), nlp), new_tid);
            ht::set_old_xmax(
                hp::tuple_mut(g.data_mut(), lp),
                ctx.xid,
                new_tid,
                hot,
                keys_updated,
            );
            set_prunable(g.data_mut(), ctx.xid);
            self.clear_all_visible(&mut g);
            let stored = hp::tuple(g.data(), nlp).to_vec();
            let (data, flags) = update_block_data(&old_t, &stored, true, needs_image);
            let rec = RecordBuilder::new(
                rmgr::HEAP,
                if hot { info::HOT_UPDATE } else { info::UPDATE },
            )
            .xid(ctx.xid)
            .block(id, false, &data)
            .main_data(&update_main_data(
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
            return Ok(Attempt::Done(old_row));
        }
        // No room: mark the page full, lock the row with our xid (xmax, LOCK_ONLY, WAL-logged
        // as XLOG_HEAP_LOCK), release the page, find another page, and lock both in block order.
        let f = flags(g.data()) | hp::PD_PAGE_FULL;
        set_flags(g.data_mut(), f);
        self.set_row_lock(ctx, &mut g, lp, tid)?;
        drop(g);
        let (new_g, new_page) = self.page_for_tuple(new_t.len(), Some(tid.block))?;
        let nb = new_g.page_id().block;
        let (mut ng, mut og) = if nb > tid.block {
            // hio.c `RelationGetBufferForTuple` keeps the new page pinned while it locks
            // the two in block order: the page is latched again here, not pinned again
            // (no second usage-count raise or hit).
            drop(new_g);
            let og = self.pool.fetch_write(self.page_id(tid.block))?;
            let ng = self.pool.fetch_write_relatch(self.page_id(nb))?;
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
        let off = hp::add_tuple(ng.data_mut(), &new_t).ok_or_else(|| {
            Error::corrupted(format!("{}: no room for an update that fit", ng.page_id()))
        })?;
        let new_tid = Tid {
            block: nb,
            offset: off,
        };
        let nid = ng.page_id();
        let nlp = hp::item_id(ng.data(), off, nid)?;
        ht::set_ctid(hp::tuple_mut(ng.data_mut(), nlp), new_tid);
        let olp = hp::item_id(og.data(), tid.offset, id)?;
        ht::set_old_xmax(
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
        let (data, flags) = update_block_data(&old_t, &stored, false, true);
        let rec = RecordBuilder::new(
            rmgr::HEAP,
            info::UPDATE | if init { info::INIT_PAGE } else { 0 },
        )
        .xid(ctx.xid)
        .block(nid, init, &data)
        .block(id, false, &[])
        .main_data(&update_main_data(
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
        Ok(Attempt::Done(old_row))
    }
}

/// The heap's writes (heapam_handler.c `heapam_tuple_insert`, `heapam_tuple_update`,
/// `heapam_tuple_delete`, with the executor's index maintenance).
impl TableWrite for HeapTable {
    type TxnState = ();

    /// heap_insert + ExecInsertIndexTuples: stores `row` as a new tuple by transaction
    /// `ctx.xid` and adds an entry to every index, checking unique indexes.
    ///
    /// Errors: [`Error::InvalidValue`] for a bad row; [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey);
    /// [`TxnError::Deadlock`](crate::error::TxnError::Deadlock) while waiting on a conflicting inserter; [`Error::TooLarge`] for a
    /// tuple larger than a page (no TOAST); storage errors.
    fn insert(&self, st: &Statement<'_>, _: &mut (), row: Row) -> Result<()> {
        let ctx = &Ctx::from(st);
        let row = self.def.normalize_row(&row);
        self.def.check_row(&row)?;
        let tid = self.heap_insert(ctx, &row)?;
        self.counters.n_tup_ins.fetch_add(1, Ordering::Relaxed);
        self.insert_index_entries(ctx, &row, tid, None)?;
        Ok(())
    }

    /// Updates the row with primary key `pk`, setting `set` columns (heapam.c `heap_update`
    /// with ExecUpdate's retry loop). Returns false when no visible row has that key.
    ///
    /// Errors: [`TxnError::SerializationFailure`](crate::error::TxnError::SerializationFailure) at repeatable read when the row was changed by
    /// a transaction the snapshot does not see; [`TxnError::Deadlock`](crate::error::TxnError::Deadlock); [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey);
    /// [`Error::InvalidValue`]; storage errors.
    fn update(&self, st: &Statement<'_>, _: &mut (), pk: &[Value], set: &[Assign]) -> Result<bool> {
        let ctx = &Ctx::from(st);
        Ok(self.modify(ctx, pk, Change::Update(set))?.is_some())
    }

    /// Deletes the row with primary key `pk` (heapam.c `heap_delete`). Returns false when
    /// no visible row has that key.
    ///
    /// Errors: as [`HeapTable::update`].
    fn delete(&self, st: &Statement<'_>, _: &mut (), pk: &[Value]) -> Result<bool> {
        let ctx = &Ctx::from(st);
        Ok(self.modify(ctx, pk, Change::Delete)?.is_some())
    }

    /// `SELECT ... FOR UPDATE` of the row with primary key `pk` (heapam.c
    /// `heap_lock_tuple` in LockTupleExclusive mode, called by nodeLockRows.c
    /// `ExecLockRows`): the newest version's xmax set to our xid with HEAP_XMAX_LOCK_ONLY
    /// and WAL-logged as XLOG_HEAP_LOCK (with a full-page image when it is the page's
    /// first change since the checkpoint), after waiting for a running updater or locker.
    /// Returns that version (at read committed the newest, EvalPlanQual), `None` when no
    /// visible row has that key.
    ///
    /// Errors: as [`HeapTable::update`] (at repeatable read, a row changed by a
    /// transaction the snapshot does not see is a serialization failure, as PostgreSQL's
    /// "could not serialize access due to concurrent update").
    fn lock_row(&self, st: &Statement<'_>, _: &mut (), pk: &[Value]) -> Result<Option<Row>> {
        let ctx = &Ctx::from(st);
        self.modify(ctx, pk, Change::Lock)
    }
}

/// The heap table in the design's table list.
impl Catalogued for HeapTable {
    fn def(&self) -> &TableDef {
        &self.def
    }

    fn trees(&self) -> Vec<&BTree> {
        self.pk.iter().chain(self.indexes.iter()).collect()
    }

    fn table_relation(&self) -> crate::device::FileId {
        self.heap_rel
    }

    fn counters(&self) -> &crate::access::TableCounters {
        &self.counters
    }

    fn secondary_deferred(&self) -> &std::sync::atomic::AtomicBool {
        &self.secondary_deferred
    }
}
