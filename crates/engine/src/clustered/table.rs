//! A clustered table: rows in the leaves of the primary-key B+tree, updated in place with
//! the old values in the undo log, secondary indexes keyed by (index key, primary key) with
//! delete marks (MariaDB 10.11 storage/innobase: row0ins.cc, row0upd.cc, row0vers.cc,
//! row0sel.cc, row0undo.cc, row0purge.cc; manual "InnoDB Multi-Versioning").
//!
//! A table without a primary key is clustered on the hidden 6-byte `DB_ROW_ID`
//! (GEN_CLUST_INDEX): each insert takes the next id of the design-wide
//! [`RowIdSequence`] (row0ins.cc `row_ins_alloc_row_id_step`), which is the clustered key
//! and the suffix of every secondary key; the undo records name the row by it. Everything
//! else works on key bytes and is the same; reads and writes by primary key are refused
//! ([`TableDef::require_primary_key`]).

use super::row_id::{row_id_of_key, RowIdSequence};
use super::undo_log::{TrxUndo, UndoSpace};
use super::undo_rec::{RollPtr, UndoRecord, UndoType};
use crate::access::TableCounters;
use crate::access::{Assign, Catalogued, Statement, TableRead, TableWrite};
use crate::btree::{BTree, ScanDirection};
use crate::catalog::{
    apply_delta, compact_delete_mark, decode_compact_record, decode_compact_record_projected,
    decode_key_prefix, encode_compact, encode_delta, key_of, set_compact_delete_mark,
    CompactRecord, Projection, Row, TableDef, Value,
};
use crate::error::TxnError;
use crate::error::{Error, Result};
use crate::mvcc::{xid_of_trx_id, Snapshot, TransactionManager, TrxId, Xid, XidStatus};
use parking_lot::{Mutex, MutexGuard};
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const ROW_STRIPES: usize = 1024;
const SCAN_BATCH: usize = 256;

/// The records a scan copies out of the tree per batch (up to [`SCAN_BATCH`]), their keys
/// and values in one buffer reused from batch to batch, so a scan allocates nothing per
/// record, each with the leaf it was read from (where a cursor stored on it is restored,
/// `FetchCalls`).
#[derive(Default)]
struct RecordBatch {
    bytes: Vec<u8>,
    /// Per record: where its key starts, where its value starts, where it ends, its leaf.
    spans: Vec<(usize, usize, usize, u32)>,
}

impl RecordBatch {
    /// Replaces the batch with the next records of `tree` in `lo..hi` in direction `dir`,
    /// up to [`SCAN_BATCH`]. The clustered tree has no entries marked dead: its live scan
    /// returns them all, each with its leaf. Returns whether the batch is full (more may
    /// follow its last key).
    ///
    /// Errors: as [`BTree::scan_live`].
    fn fill(
        &mut self,
        tree: &BTree,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: ScanDirection,
    ) -> Result<bool> {
        self.bytes.clear();
        self.spans.clear();
        tree.scan_live(lo, hi, dir, &mut |leaf, k, v| {
            let ks = self.bytes.len();
            self.bytes.extend_from_slice(k);
            let vs = self.bytes.len();
            self.bytes.extend_from_slice(v);
            self.spans.push((ks, vs, self.bytes.len(), leaf.block));
            Ok(self.spans.len() < SCAN_BATCH)
        })?;
        Ok(self.spans.len() == SCAN_BATCH)
    }

    /// The records in the order read, `(key, value, leaf)`.
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8], u32)> {
        self.spans
            .iter()
            .map(|&(k, v, e, leaf)| (&self.bytes[k..v], &self.bytes[v..e], leaf))
    }

    fn last_key(&self) -> Option<&[u8]> {
        self.spans.last().map(|&(k, v, _, _)| &self.bytes[k..v])
    }
}

/// Where MariaDB's handler calls into InnoDB during a plain range read, for the cursor
/// restores they cost. ha_innobase::index_next asks for one row per call
/// (ha_innodb.cc `general_fetch`, counting `n_rows_fetched`); row0sel.cc `row_search_mvcc`
/// restores the persistent cursor at the start of every call but the first
/// (`sel_restore_position_for_mysql`), then returns one row while fewer than
/// `MYSQL_FETCH_CACHE_THRESHOLD` (4) rows were fetched and afterwards fills its fetch
/// cache with up to `MYSQL_FETCH_CACHE_SIZE` (8) rows (only for a read without locks,
/// `select_lock_type == LOCK_NONE`), handing the cached rows out without touching a page;
/// a call after a cache that was not filled ends the range without a restore. So the
/// rows after which the next call restores are the 1st, 2nd, 3rd, 4th, 12th, 20th, …
/// Each restore is an access of the leaf the cursor was stored on
/// ([`crate::btree::BTree::restore_position`]): a page a range read brings in is accessed
/// several times within the statement, which matters to InnoDB's LRU list (a page that the
/// midpoint's move made young meanwhile goes to the head at the next access).
#[derive(Default)]
struct FetchCalls {
    /// Rows handed out so far.
    returned: usize,
    /// The row the next call restores to, when the call that returned it ended there
    /// (its key, the leaf it was read from).
    restore_at: Option<(Vec<u8>, u32)>,
}

impl FetchCalls {
    /// Whether the call that returns row `n` (1-based) ends after it.
    fn call_ends_at(n: usize) -> bool {
        n <= 4 || (n - 4).is_multiple_of(8)
    }

    /// The next row is about to be handed out (or the end of the range found): the call
    /// that fetches it first restores the cursor, `restore(key, leaf)`, if the previous
    /// call ended on a row.
    fn before_row(&mut self, restore: impl FnOnce(&[u8], u32) -> Result<()>) -> Result<()> {
        match self.restore_at.take() {
            Some((key, leaf)) => restore(&key, leaf),
            None => Ok(()),
        }
    }

    /// Row `key`, read from `leaf`, was handed out.
    fn returned(&mut self, key: &[u8], leaf: u32) {
        self.returned += 1;
        if Self::call_ends_at(self.returned) {
            self.restore_at = Some((key.to_vec(), leaf));
        }
    }
}

/// Secondary entry value: live. The value of a secondary entry is the info-bits byte of
/// InnoDB's record header (rem0rec.h `REC_INFO_DELETED_FLAG`), the one header byte the
/// B-tree's 2-byte entry header and 2-byte slot do not stand for
/// ([`crate::btree::BTreeConfig::innodb`]): a secondary entry takes 4 + key + 1 bytes,
/// InnoDB's record 5 + key.
const LIVE: &[u8] = &[0];
/// Secondary entry value: delete-marked (`REC_INFO_DELETED_FLAG` set).
const DELETE_MARKED: &[u8] = &[crate::catalog::COMPACT_DELETED_FLAG];

/// What a row operation runs with.
pub struct RowCtx<'a> {
    /// Transactions.
    pub tm: &'a TransactionManager,
    /// The transaction's id (0 for reads without one).
    pub xid: Xid,
    /// Read view of the statement or transaction.
    pub view: &'a Snapshot,
}

impl<'a> From<&'a Statement<'a>> for RowCtx<'a> {
    /// The clustered table's view of the engine's statement: its read view and
    /// transaction id.
    fn from(st: &'a Statement<'a>) -> Self {
        RowCtx {
            tm: st.tm,
            xid: st.xid,
            view: st.snapshot,
        }
    }
}

/// One attempt's outcome under the row lock stripe.
enum Attempt<T> {
    Done(T),
    Wait(Xid),
}

/// A clustered table with its secondary indexes. See the `clustered` module doc.
pub struct ClusteredTable {
    /// Table id.
    pub id: u32,
    /// Definition.
    pub def: TableDef,
    /// The clustered index: key = encoded primary key, value = COMPACT record.
    pub clustered: BTree,
    /// Secondary indexes: key = encoded index key ‖ encoded primary key, value = delete mark.
    pub indexes: Vec<BTree>,
    /// Counters (PostgreSQL names where the meaning is the same).
    pub counters: TableCounters,
    /// The secondary indexes are not maintained: the table is being loaded and they will be
    /// built afterwards by sorting ([`ClusteredTable::build_secondary_indexes`]), as
    /// sysbench creates its `k` index with CREATE INDEX after the load. Updates, deletes
    /// and secondary-index reads are refused meanwhile.
    pub secondary_deferred: std::sync::atomic::AtomicBool,
    /// Purge resets the DB_TRX_ID and DB_ROLL_PTR of an updated record (design switch
    /// `purge_resets_trx_id`; [`ClusteredTable::purge_record`]).
    purge_resets_trx_id: bool,
    /// `innodb_fill_factor` in percent (the design's `index_fillfactor`, 100 by default):
    /// the fill of secondary-index leaves a sorted build leaves
    /// ([`ClusteredTable::build_secondary_indexes`]).
    pub innodb_fill_factor: u8,
    undo: Arc<UndoSpace>,
    /// The design-wide `DB_ROW_ID` counter (used by a table without a primary key).
    row_ids: Arc<RowIdSequence>,
    stripes: Box<[Mutex<()>]>,
    /// Record X locks taken by locking reads (`SELECT ... FOR UPDATE`), by encoded primary
    /// key: the lock system's explicit locks (lock0lock.cc `lock_rec_lock`), which leave
    /// the page untouched. A lock lasts until its transaction ends (`lock_release` at
    /// commit or rollback): an entry whose transaction is no longer running is stale and
    /// counts for nothing ([`ClusteredTable::holder`]).
    x_locks: Mutex<HashMap<Vec<u8>, Xid>>,
}

/// Entries of `x_locks` above which taking a lock first drops the stale ones.
const X_LOCKS_PRUNE_AT: usize = 4096;

fn record_bad(def: &TableDef, what: &str) -> Error {
    Error::corrupted(format!("table {}: {what}", def.name))
}

impl ClusteredTable {
    /// A table on existing relations; with `purge_resets_trx_id`, purge resets an updated
    /// record's DB_TRX_ID (design switch `purge_resets_trx_id`); `row_ids` gives the
    /// `DB_ROW_ID` of each row inserted when the table has no primary key.
    pub fn new(
        id: u32,
        def: TableDef,
        clustered: BTree,
        indexes: Vec<BTree>,
        undo: Arc<UndoSpace>,
        purge_resets_trx_id: bool,
        row_ids: Arc<RowIdSequence>,
    ) -> Self {
        ClusteredTable {
            id,
            def,
            clustered,
            indexes,
            counters: TableCounters::default(),
            secondary_deferred: std::sync::atomic::AtomicBool::new(false),
            purge_resets_trx_id,
            innodb_fill_factor: 100,
            undo,
            row_ids,
            stripes: (0..ROW_STRIPES).map(|_| Mutex::new(())).collect(),
            x_locks: Mutex::new(HashMap::new()),
        }
    }

    /// Errors with [`Error::Catalog`] while the secondary indexes are deferred.
    fn check_not_deferred(&self, what: &str) -> Result<()> {
        crate::access::check_not_deferred(&self.secondary_deferred, &self.def.name, what)
    }

    /// Builds the deferred secondary indexes from the clustered index, as MariaDB's
    /// ALTER TABLE ADD INDEX does (row0merge.cc `row_merge_read_clustered_index`, a merge
    /// sort, then btr0bulk.cc `BtrBulk` inserting into pages filled to
    /// innodb_fill_factor ([`ClusteredTable::innodb_fill_factor`]), 100 by default: full
    /// secondary-index pages; `PageBulk::init`
    /// keeps 1/16 free only in a clustered index). Delete-marked records are left out.
    /// Then the indexes are maintained again. Returns the entries built; nothing happens
    /// when no index is deferred.
    ///
    /// Meant for the end of a load with no concurrent writers on the table.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged record; [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey) for a
    /// unique index with equal keys; storage errors.
    pub fn build_secondary_indexes(&self) -> Result<u64> {
        if !self.secondary_deferred.load(Ordering::Acquire) {
            return Ok(0);
        }
        let mut per_index: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); self.indexes.len()];
        let mut failed = None;
        // Only the indexed columns are converted (row0merge.cc
        // `row_merge_read_clustered_index` → `row_build_index_entry_low`, which copies the
        // index's fields out of the clustered record and nothing else).
        let proj = Projection::columns(&self.def.indexed_columns());
        self.clustered.scan(
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
            &mut |pk, rec| {
                let r = decode_compact_record_projected(&self.def, pk, rec, &proj)?;
                if r.delete_marked {
                    return Ok(true);
                }
                for (ix, entries) in per_index.iter_mut().enumerate() {
                    match self.sec_key(ix, &r.row, pk) {
                        Ok(k) => entries.push((k, LIVE.to_vec())),
                        Err(e) => {
                            failed = Some(e);
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            },
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        let mut built = 0;
        for (ix, mut entries) in per_index.into_iter().enumerate() {
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            // btr0bulk.cc `PageBulk::init`: `m_reserved_space = srv_page_size * (100 -
            // innobase_fill_factor) / 100` for a secondary index.
            self.indexes[ix].bulk_load(&entries, self.innodb_fill_factor, 100)?;
            built += entries.len() as u64;
        }
        self.counters
            .index_entries_inserted
            .fetch_add(built, Ordering::Relaxed);
        self.secondary_deferred.store(false, Ordering::Release);
        Ok(built)
    }

    fn stripe(&self, pk: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[crc32c::crc32c(pk) as usize % ROW_STRIPES].lock()
    }

    /// Encoded primary key of the pk values.
    ///
    /// Errors: [`Error::InvalidValue`] for the wrong number or type of values;
    /// [`Error::Catalog`] for a table without a primary key
    /// ([`TableDef::require_primary_key`]).
    pub fn pk_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        self.def.require_primary_key("a lookup by primary key")?;
        self.def.key_from_values(&self.def.primary_key, values)
    }

    fn sec_key(&self, ix: usize, row: &Row, pk: &[u8]) -> Result<Vec<u8>> {
        let mut k = key_of(&self.def, &self.def.indexes[ix].columns, row)?;
        k.extend_from_slice(pk);
        Ok(k)
    }

    /// row_vers_build_for_consistent_read: the version of the record `rec` visible to the
    /// view, following roll pointers newest to oldest; `None` when the row did not exist or
    /// was deleted for this view. `pk` is the record's key.
    fn visible_version(&self, ctx: &RowCtx<'_>, pk: &[u8], rec: &[u8]) -> Result<Option<Row>> {
        let mut v = decode_compact_record(&self.def, pk, rec)?;
        for _ in 0..1_000_000 {
            self.counters
                .versions_traversed
                .fetch_add(1, Ordering::Relaxed);
            let t = xid_of_trx_id(v.trx_id, "clustered record DB_TRX_ID")?;
            let own = ctx.xid != 0 && t == ctx.xid;
            if own || !ctx.view.xid_in_progress(t) {
                return Ok((!v.delete_marked).then_some(v.row));
            }
            if !self.previous_version(&mut v, |rp| self.undo.read(rp).map(Some))? {
                return Ok(None); // inserted by a transaction the view does not see
            }
        }
        Err(record_bad(&self.def, "undo chain does not end"))
    }

    /// [`ClusteredTable::visible_version`] decoding only the columns `proj` needs (the
    /// others [`Value::Null`]; row0sel.cc `row_sel_store_mysql_rec` over the prebuilt
    /// template). A record the view sees as it is (`lock_clust_rec_cons_read_sees`) is
    /// decoded as `proj` says; one that needs an older version is rebuilt whole from undo
    /// and masked. Counts `versions_traversed` as `visible_version` does.
    fn visible_version_projected(
        &self,
        ctx: &RowCtx<'_>,
        pk: &[u8],
        rec: &[u8],
        proj: &Projection,
    ) -> Result<Option<Row>> {
        if !proj.is_all() {
            let v = decode_compact_record_projected(&self.def, pk, rec, proj)?;
            let t = xid_of_trx_id(v.trx_id, "clustered record DB_TRX_ID")?;
            if (ctx.xid != 0 && t == ctx.xid) || !ctx.view.xid_in_progress(t) {
                self.counters
                    .versions_traversed
                    .fetch_add(1, Ordering::Relaxed);
                return Ok((!v.delete_marked).then_some(v.row));
            }
        }
        let mut row = self.visible_version(ctx, pk, rec)?;
        if let Some(r) = &mut row {
            proj.mask(r);
        }
        Ok(row)
    }

    /// trx_undo_prev_version_build: replaces version `v` of a record by the version before
    /// it, built from the undo record its roll pointer names, which `read` reads (`None`:
    /// the history is missing). Returns false, leaving `v` as it is, when there is no
    /// earlier version: `v` is the row's insert, or `read` found nothing.
    ///
    /// Errors: `read`'s errors; a delta that does not apply ([`StorageError::Corrupted`](crate::error::StorageError::Corrupted)).
    fn previous_version(
        &self,
        v: &mut CompactRecord,
        read: impl FnOnce(RollPtr) -> Result<Option<UndoRecord>>,
    ) -> Result<bool> {
        let rp = RollPtr::decode(v.roll_ptr);
        if rp.is_insert || v.roll_ptr == 0 {
            return Ok(false);
        }
        let Some(u) = read(rp)? else {
            return Ok(false);
        };
        apply_delta(&self.def, &mut v.row, &u.delta)?;
        v.delete_marked = u.kind == UndoType::UpdateDeleted;
        v.trx_id = u.old_trx_id;
        v.roll_ptr = u.old_roll_ptr.encode();
        Ok(true)
    }

    /// Runs `f` under the row's stripe lock, waiting (outside the lock) for a transaction
    /// that holds the row with an implicit lock (its id in DB_TRX_ID,
    /// lock0lock.cc `lock_rec_convert_impl_to_expl` + lock wait), with deadlock detection.
    fn with_row_lock<T>(
        &self,
        ctx: &RowCtx<'_>,
        pk: &[u8],
        mut f: impl FnMut() -> Result<Attempt<T>>,
    ) -> Result<T> {
        loop {
            let attempt = {
                let _g = self.stripe(pk);
                f()?
            };
            match attempt {
                Attempt::Done(v) => return Ok(v),
                Attempt::Wait(x) => ctx.tm.wait_for(ctx.xid, x)?,
            }
        }
    }

    /// The running transaction other than us that holds the record with primary key `pk`
    /// and DB_TRX_ID `trx`: its implicit lock holder (DB_TRX_ID, when still running; an id
    /// past the xid space names no running transaction), else the holder of its explicit
    /// X lock (a locking read, `x_locks`).
    fn holder(&self, ctx: &RowCtx<'_>, pk: &[u8], trx: TrxId) -> Option<Xid> {
        let running = |t: Xid| t != ctx.xid && ctx.tm.status(t) == XidStatus::InProgress;
        let implicit = Xid::try_from(trx).ok().filter(|&t| running(t));
        implicit.or_else(|| self.x_locks.lock().get(pk).copied().filter(|&t| running(t)))
    }

    /// Takes the explicit X lock of the record with primary key `pk` for `ctx.xid`
    /// (lock0lock.cc `lock_rec_lock`, LOCK_X | LOCK_REC_NOT_GAP), after [`Self::holder`]
    /// found no other holder; stale entries are dropped when the table grows large.
    fn lock_record(&self, ctx: &RowCtx<'_>, pk: &[u8]) {
        let mut locks = self.x_locks.lock();
        if locks.len() >= X_LOCKS_PRUNE_AT {
            locks.retain(|_, t| ctx.tm.status(*t) == XidStatus::InProgress);
        }
        locks.insert(pk.to_vec(), ctx.xid);
    }

    /// The record with primary key `pk` that an update, a delete or a locking read works
    /// on, read under the row's stripe lock: `Ok(Some(record))` when it exists, is not
    /// delete-marked and no other running transaction holds it; `Ok(None)` when there is
    /// no such row; `Err(x)` when transaction `x` holds it (wait for `x`).
    ///
    /// Errors: storage and decoding errors.
    fn record_to_change(
        &self,
        ctx: &RowCtx<'_>,
        pk: &[u8],
    ) -> Result<std::result::Result<Option<CompactRecord>, Xid>> {
        let Some(rec) = self.clustered.get(pk)? else {
            return Ok(Ok(None));
        };
        let r = decode_compact_record(&self.def, pk, &rec)?;
        if let Some(x) = self.holder(ctx, pk, r.trx_id) {
            return Ok(Err(x));
        }
        Ok(Ok((!r.delete_marked).then_some(r)))
    }

    fn render_pk(&self, pk: &[u8]) -> String {
        if !self.def.has_primary_key() {
            return row_id_of_key(pk).map_or("?".into(), |id| format!("DB_ROW_ID {id}"));
        }
        self.def
            .key_columns(&self.def.primary_key)
            .and_then(|types| crate::catalog::decode_key(&types, pk))
            .map(|v| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|_| "?".into())
    }

    /// A live (not delete-marked) entry with the same unique key for another row: the
    /// running transaction that holds it (wait), or a duplicate-key error.
    fn unique_conflict(
        &self,
        ctx: &RowCtx<'_>,
        ix: usize,
        row: &Row,
        pk: &[u8],
    ) -> Result<Option<Xid>> {
        // row0ins.cc `row_ins_scan_sec_index_for_duplicate`: a key with a NULL field cannot
        // conflict (NULL != NULL).
        if self.def.indexes[ix].key_has_null(row) {
            return Ok(None);
        }
        let key = key_of(&self.def, &self.def.indexes[ix].columns, row)?;
        let mut hi = key.clone();
        hi.push(0xFF);
        let mut others = Vec::new();
        self.indexes[ix].scan(
            Bound::Included(&key),
            Bound::Excluded(&hi),
            ScanDirection::Forward,
            &mut |k, v| {
                if v != DELETE_MARKED && &k[key.len()..] != pk {
                    others.push(k[key.len()..].to_vec());
                }
                Ok(true)
            },
        )?;
        for other in others {
            if let Some(rec) = self.clustered.get(&other)? {
                let r = decode_compact_record(&self.def, &other, &rec)?;
                if let Some(x) = self.holder(ctx, &other, r.trx_id) {
                    return Ok(Some(x));
                }
                if !r.delete_marked {
                    return Err(Error::Txn(TxnError::DuplicateKey {
                        index: self.def.indexes[ix].name.clone(),
                        key: format!("({})", self.render_pk(&other)),
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Rolls back one undo record of this table written by transaction `trx_id`
    /// (row0undo.cc: row_undo_ins / row_undo_mod), under the row's stripe lock. Returns
    /// false, changing nothing, when the row does not carry `trx_id` (row0undo.cc
    /// `row_undo_search_clust_to_pcur` checks DB_TRX_ID the same way): the change the
    /// record describes never reached the row (a crash between writing the undo record and
    /// changing the row) or was undone already (a crash during a rollback, whose records
    /// recovery applies again; the row may have been changed by a later transaction since).
    ///
    /// Errors: storage and decoding errors.
    pub fn rollback_record(&self, u: &UndoRecord, trx_id: TrxId) -> Result<bool> {
        let _g = self.stripe(&u.pk);
        let Some(rec) = self.clustered.get(&u.pk)? else {
            return Ok(false);
        };
        let cur = decode_compact_record(&self.def, &u.pk, &rec)?;
        if cur.trx_id != trx_id {
            return Ok(false);
        }
        match u.kind {
            UndoType::Insert => {
                for ix in 0..self.indexes.len() {
                    self.indexes[ix].delete(&self.sec_key(ix, &cur.row, &u.pk)?)?;
                }
                self.clustered.delete(&u.pk)?;
            }
            UndoType::UpdateExisting | UndoType::DeleteMark | UndoType::UpdateDeleted => {
                let mut old = cur.row.clone();
                apply_delta(&self.def, &mut old, &u.delta)?;
                let mut restored =
                    encode_compact(&self.def, &old, u.old_trx_id, u.old_roll_ptr.encode())?;
                let was_deleted = u.kind == UndoType::UpdateDeleted;
                set_compact_delete_mark(&mut restored, was_deleted)?;
                self.clustered.update_value(&u.pk, &restored)?;
                for ix in 0..self.indexes.len() {
                    let new = self.sec_key(ix, &cur.row, &u.pk)?;
                    let oldk = self.sec_key(ix, &old, &u.pk)?;
                    if new != oldk && !cur.delete_marked {
                        self.indexes[ix].delete(&new)?;
                    }
                    let mark = if was_deleted { DELETE_MARKED } else { LIVE };
                    if !self.indexes[ix].update_value(&oldk, mark)? {
                        self.indexes[ix].insert(&oldk, mark)?;
                    }
                }
            }
        }
        Ok(true)
    }

    /// Purges one update-undo record of a committed transaction older than every read view
    /// (row0purge.cc): a delete-marked record still carrying that delete is removed with its
    /// secondary entries; after an update, the old secondary entries that are still
    /// delete-marked and no longer the current key are removed, and with the design switch
    /// `purge_resets_trx_id` the record's history is then cut (`reset_trx_id`).
    /// Returns records removed. `tm` gives the purge horizon (the oldest xmin), read once
    /// the row's stripe is held.
    ///
    /// Errors: storage and decoding errors.
    pub fn purge_record(
        &self,
        u: &UndoRecord,
        trx_id: TrxId,
        tm: &TransactionManager,
    ) -> Result<u64> {
        let removed = self.purge_record_indexes(u, trx_id, tm)?;
        if u.kind == UndoType::UpdateExisting && self.purge_resets_trx_id {
            self.reset_trx_id(&u.pk, trx_id)?;
        }
        Ok(removed)
    }

    /// Puts the live entry `key` into secondary index `ix` as row0ins.cc
    /// `row_ins_sec_index_entry_low` does, with one search: the entry is inserted, or,
    /// when an equal entry is already there (delete-marked by an earlier change of the row
    /// that purge has not removed), that entry is un-delete-marked in place
    /// (`row_ins_sec_index_entry_by_modify`). The insert is tried first, the common case,
    /// so that a new entry costs one descent of the tree; an equal entry found costs a
    /// second (until 2026-11-27 every new entry took two: a lookup for an equal one,
    /// then the insert). Returns whether a new entry was inserted.
    ///
    /// Errors: storage errors.
    fn put_secondary_live(&self, ix: usize, key: &[u8]) -> Result<bool> {
        match self.indexes[ix].insert(key, LIVE) {
            Ok(()) => Ok(true),
            Err(Error::Txn(TxnError::DuplicateKey { .. })) => {
                self.indexes[ix].update_value(key, LIVE)?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// MariaDB 10.3 to 10.11.14 row0purge.cc `row_purge_reset_trx_id` (MDEV-12288, removed by
    /// MDEV-16168): once an update's undo record is purged, no read view can need the
    /// history of a clustered record whose latest change that update made, so its
    /// DB_TRX_ID is set to 0 and its DB_ROLL_PTR to "insert, no history", in place: the
    /// record's leaf is read (if evicted), dirtied, and 13 bytes are logged. Measured on
    /// MariaDB 10.11.14: purge logs about 19 redo bytes per updated row (2,000 rows updated
    /// in one transaction, `Innodb_lsn_current` across the purge). Nothing for a record
    /// changed since (another DB_TRX_ID) or delete-marked.
    ///
    /// Errors: storage and decoding errors.
    fn reset_trx_id(&self, pk: &[u8], trx_id: TrxId) -> Result<()> {
        let _g = self.stripe(pk);
        let Some(rec) = self.clustered.get(pk)? else {
            return Ok(());
        };
        let cur = decode_compact_record(&self.def, pk, &rec)?;
        if cur.delete_marked || cur.trx_id != trx_id {
            return Ok(());
        }
        let no_history = RollPtr::new(true, 0, 0, 0).encode();
        self.clustered
            .update_value(pk, &encode_compact(&self.def, &cur.row, 0, no_history)?)?;
        Ok(())
    }

    fn purge_record_indexes(
        &self,
        u: &UndoRecord,
        trx_id: TrxId,
        tm: &TransactionManager,
    ) -> Result<u64> {
        // An update's delta is decoded before the lookup, and once: row0purge.cc
        // `row_purge_parse_undo_rec` returns early for an update that changed no ordering
        // field (UPD_NODE_NO_ORD_CHANGE), without looking the clustered record up.
        let update_delta = match u.kind {
            UndoType::UpdateExisting => {
                let (values, changed) = self.decode_delta(&u.delta)?;
                if !self.changes_an_index_column(&changed) {
                    return Ok(0);
                }
                Some((values, changed))
            }
            _ => None,
        };
        let _g = self.stripe(&u.pk);
        let Some(rec) = self.clustered.get(&u.pk)? else {
            return Ok(0);
        };
        let cur = decode_compact_record(&self.def, &u.pk, &rec)?;
        let mut old = cur.row.clone();
        match update_delta {
            Some((values, changed)) => {
                for c in changed {
                    old[c] = values[c].clone();
                }
            }
            None => {
                apply_delta(&self.def, &mut old, &u.delta)?;
            }
        }
        match u.kind {
            UndoType::DeleteMark => {
                if !cur.delete_marked || cur.trx_id != trx_id {
                    return Ok(0); // re-inserted or changed since: not this delete's to purge
                }
                // One search per entry: found and still delete-marked, it goes
                // (row0purge.cc `row_purge_remove_sec_if_poss_leaf`).
                for ix in 0..self.indexes.len() {
                    let k = self.sec_key(ix, &cur.row, &u.pk)?;
                    self.indexes[ix].delete_where(&k, |v| v == DELETE_MARKED)?;
                }
                self.clustered.delete(&u.pk)?;
                Ok(1)
            }
            UndoType::UpdateExisting | UndoType::UpdateDeleted => {
                // row0purge.cc `row_purge_remove_sec_if_poss_leaf`: the old entry, if it is
                // still there and delete-marked, goes unless a version some read view may
                // still see carries it (`row_purge_poss_sec` → row0vers.cc
                // `row_vers_old_has_index_entry`), in one search of the index: MariaDB
                // finds the entry, asks `row_purge_poss_sec` with the leaf latched, and
                // deletes on the same cursor. Here the versions are read first (once, for
                // the first old key that differs from the current one) and the entry is
                // then deleted in one descent if it is still delete-marked
                // (`BTree::delete_where`), so no index latch is held while the clustered
                // index and the undo log are read. Until 2026-11-27 each entry took two
                // descents (a lookup, then the delete).
                let mut needed: Option<Vec<Row>> = None;
                let mut n = 0;
                for ix in 0..self.indexes.len() {
                    let k = self.sec_key(ix, &old, &u.pk)?;
                    if k == self.sec_key(ix, &cur.row, &u.pk)? && !cur.delete_marked {
                        // The current record carries the old key: its entry is live.
                        continue;
                    }
                    if needed.is_none() {
                        // Read under the stripe: a log this walk follows (a transaction at or
                        // past this horizon) cannot have been purged, and its record for this
                        // row cannot be purged, nor the log truncated, while the stripe is
                        // held.
                        let horizon = tm.oldest_xmin();
                        needed = Some(self.versions_a_view_may_see(&cur, horizon)?);
                    }
                    let mut carried = false;
                    for row in needed.iter().flatten() {
                        if self.sec_key(ix, row, &u.pk)? == k {
                            carried = true;
                            break;
                        }
                    }
                    if !carried && self.indexes[ix].delete_where(&k, |v| v == DELETE_MARKED)? {
                        n += 1;
                    }
                }
                Ok(n)
            }
            UndoType::Insert => Ok(0),
        }
    }

    /// The versions of a clustered record that a read view may still see, as purge asks
    /// before it removes a delete-marked secondary entry (row0vers.cc
    /// `row_vers_old_has_index_entry` with `also_curr`): the current version unless it is
    /// delete-marked, then each older one built from the undo log
    /// (`trx_undo_prev_version_build`) while the version it is built from was made by a
    /// transaction not older than `horizon` (the walk stops at a version every view sees:
    /// `trx_undo_get_undo_rec` finds the history of a change purge's view sees missing).
    /// Delete-marked versions are left out. The undo pages are read as purge reads them,
    /// fixed without being made young (trx0rec.cc `purge_sys_t::view_guard::get` →
    /// `buf_pool_t::page_fix`). The caller holds the row's stripe.
    ///
    /// Errors: storage and decoding errors. With `horizon` read under the row's stripe,
    /// every roll pointer followed is valid: it leads into the log of a transaction not
    /// older than the horizon, which purge has not taken, and whose record for this row
    /// it cannot purge (nor truncation free the log) until the stripe is released.
    fn versions_a_view_may_see(&self, cur: &CompactRecord, horizon: Xid) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        let mut v = cur.clone();
        loop {
            if !v.delete_marked {
                out.push(v.row.clone());
            }
            if v.trx_id < TrxId::from(horizon)
                || !self.previous_version(&mut v, |rp| self.undo.read_for_purge(rp).map(Some))?
            {
                return Ok(out);
            }
        }
    }

    /// An undo record's delta decoded: a row holding the delta's values in the columns it
    /// lists (NULL elsewhere), and those columns ([`apply_delta`] on a row of NULLs).
    ///
    /// Errors: a delta that does not decode ([`StorageError::Corrupted`](crate::error::StorageError::Corrupted)).
    fn decode_delta(&self, delta: &[u8]) -> Result<(Row, Vec<usize>)> {
        let mut values: Row = vec![Value::Null; self.def.columns.len()];
        let changed = apply_delta(&self.def, &mut values, delta)?;
        Ok((values, changed))
    }

    /// Whether `columns` (an update delta's) include a column of a secondary index: the
    /// delta carries the changed columns and, for an index whose key changed, all of its
    /// columns, so this is InnoDB's "the update changed an ordering field"
    /// (row0upd.cc `row_upd_changes_some_index_ord_field_binary`, the absence of
    /// UPD_NODE_NO_ORD_CHANGE in the undo record's cmpl_info).
    fn changes_an_index_column(&self, columns: &[usize]) -> bool {
        self.def
            .indexes
            .iter()
            .any(|ix| ix.columns.iter().any(|c| columns.contains(c)))
    }

    /// Every version of the row with primary key `pk`, newest first, following roll pointers
    /// to the end of the chain (or to an undo log purge already removed): (DB_TRX_ID, delete
    /// mark, row). For tools, tests and the `version_chain` experiment.
    ///
    /// Errors: storage and decoding errors.
    pub fn versions(&self, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        let key = self.pk_key(pk)?;
        let Some(rec) = self.clustered.get(&key)? else {
            return Ok(Vec::new());
        };
        let mut v = decode_compact_record(&self.def, &key, &rec)?;
        let mut out = Vec::new();
        loop {
            out.push((v.trx_id, v.delete_marked, v.row.clone()));
            // An undo log purge already removed ends the chain.
            if out.len() > 100_000
                || !self.previous_version(&mut v, |rp| Ok(self.undo.read(rp).ok()))?
            {
                return Ok(out);
            }
        }
    }

    /// Whether the record for `pk` is delete-marked (for tests).
    ///
    /// Errors: storage errors.
    pub fn is_delete_marked(&self, pk: &[u8]) -> Result<Option<bool>> {
        match self.clustered.get(pk)? {
            Some(rec) => Ok(Some(compact_delete_mark(&rec)?)),
            None => Ok(None),
        }
    }
    /// A consistent read through secondary index `ix` (the whole key `key` or a leading
    /// part of it), with `icp`, when given, tested on each entry's primary-key values
    /// before its clustered record is read (MariaDB's index condition pushdown:
    /// row0sel.cc `row_search_mvcc` runs `row_search_idx_cond_check` on the secondary
    /// record, and goes to the clustered index only for a record that passes).
    ///
    /// Errors: [`Error::Catalog`] for an unknown index or deferred secondary indexes;
    /// storage errors.
    fn get_by_index_where(
        &self,
        st: &Statement<'_>,
        ix: usize,
        key: &[Value],
        icp: Option<&crate::access::IndexCondition>,
    ) -> Result<Vec<Row>> {
        let ctx = &RowCtx::from(st);
        self.check_not_deferred("a secondary index read")?;
        let idx =
            self.def.indexes.get(ix).ok_or_else(|| {
                Error::Catalog(format!("table {} has no index #{ix}", self.def.name))
            })?;
        // The whole key or a leading part of it (row0sel.cc searches a secondary index with
        // a partial tuple, PAGE_CUR_GE, and stops at the first record that no longer
        // matches it).
        let prefix = self.def.key_prefix_from_values(&idx.columns, key)?;
        let cols = &idx.columns[..key.len()];
        let types = self.def.key_columns(&idx.columns)?;
        let pk_types = match icp {
            Some(_) => self.def.key_columns(&self.def.primary_key)?,
            None => Vec::new(),
        };
        let mut pks = Vec::new();
        let mut hi = prefix.clone();
        hi.push(0xFF);
        self.indexes[ix].scan(
            Bound::Included(&prefix),
            Bound::Excluded(&hi),
            ScanDirection::Forward,
            &mut |k, _| {
                // The primary key follows the whole secondary key.
                let (_, sec_len) = decode_key_prefix(&types, k)?;
                let pk = &k[sec_len..];
                if let Some(icp) = icp {
                    // Index condition pushdown: the entry's key columns tested before the
                    // clustered look-up (row_search_idx_cond_check); a failing entry
                    // costs no clustered read.
                    let (vals, _) = decode_key_prefix(&pk_types, pk)?;
                    if !icp(&vals) {
                        return Ok(true);
                    }
                }
                pks.push(pk.to_vec());
                Ok(true)
            },
        )?;
        let mut rows = Vec::new();
        for pk in pks {
            if let Some(rec) = self.clustered.get(&pk)? {
                if let Some(row) = self.visible_version(ctx, &pk, &rec)? {
                    if key_of(&self.def, cols, &row)? == prefix {
                        rows.push(row);
                    }
                }
            }
        }
        Ok(rows)
    }
}

/// The clustered table's reads (row0sel.cc `row_search_mvcc`).
impl TableRead for ClusteredTable {
    /// Consistent read by primary key.
    ///
    /// Errors: storage and decoding errors.
    fn get(&self, st: &Statement<'_>, pk: &[Value]) -> Result<Option<Row>> {
        let ctx = &RowCtx::from(st);
        let key = self.pk_key(pk)?;
        match self.clustered.get(&key)? {
            Some(rec) => self.visible_version(ctx, &key, &rec),
            None => Ok(None),
        }
    }

    /// Consistent read through secondary index `ix`: every entry with the key, delete-marked
    /// or not, leads to the clustered record, whose visible version must still carry the key
    /// (row0sel.cc `row_sel_sec_rec_is_for_clust_rec`).
    ///
    /// Errors: [`Error::Catalog`] for an unknown index; storage errors.
    fn get_by_index(&self, st: &Statement<'_>, ix: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.get_by_index_where(st, ix, key, None)
    }

    /// The index condition tested on each secondary entry's primary key before the
    /// clustered look-up (`ClusteredTable::get_by_index_where`).
    fn get_by_index_icp(
        &self,
        st: &Statement<'_>,
        ix: usize,
        key: &[Value],
        pk: &[usize],
        icp: &crate::access::IndexCondition,
    ) -> Result<Vec<Row>> {
        if pk != self.def.primary_key.as_slice() || pk.is_empty() {
            // Not this table's key (or DB_ROW_ID): test the rows afterwards.
            let rows = self.get_by_index(st, ix, key)?;
            return Ok(crate::access::retain_by_key(rows, pk, icp));
        }
        self.get_by_index_where(st, ix, key, Some(icp))
    }

    /// Consistent read of a primary-key range. On a table without a primary key only the
    /// unbounded range is allowed: every visible row in `DB_ROW_ID` order (the clustered
    /// index's order; reversed for `Backward`). The cursor is restored where MariaDB's
    /// handler calls restore it (`FetchCalls`: after the first four rows and every eighth
    /// after them, each an access of the leaf in the LRU list); no restore follows the
    /// `limit`-th row.
    ///
    /// Errors: storage errors; [`Error::Catalog`] for a bound on a table without a primary
    /// key.
    fn scan_columns(
        &self,
        st: &Statement<'_>,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>> {
        let ctx = &RowCtx::from(st);
        let conv = |b: Bound<&[Value]>| -> Result<Bound<Vec<u8>>> {
            Ok(match b {
                Bound::Included(v) => Bound::Included(self.pk_key(v)?),
                Bound::Excluded(v) => Bound::Excluded(self.pk_key(v)?),
                Bound::Unbounded => Bound::Unbounded,
            })
        };
        let (mut lo, mut hi) = (conv(lo)?, conv(hi)?);
        let mut rows = Vec::new();
        let mut batch = RecordBatch::default();
        let mut calls = FetchCalls::default();
        let restore = |k: &[u8], l| self.clustered.restore_position(k, l);
        while rows.len() < limit {
            let full = batch.fill(
                &self.clustered,
                lo.as_ref().map(|v| v.as_slice()),
                hi.as_ref().map(|v| v.as_slice()),
                dir,
            )?;
            for (pk, rec, leaf) in batch.iter() {
                if let Some(row) = self.visible_version_projected(ctx, pk, rec, proj)? {
                    calls.before_row(restore)?;
                    rows.push(row);
                    calls.returned(pk, leaf);
                    if rows.len() >= limit {
                        // The server asks for no further row.
                        return Ok(rows);
                    }
                }
            }
            match (full, batch.last_key()) {
                (true, Some(k)) => match dir {
                    ScanDirection::Forward => lo = Bound::Excluded(k.to_vec()),
                    ScanDirection::Backward => hi = Bound::Excluded(k.to_vec()),
                },
                _ => break,
            }
        }
        // The call that finds the range's end restores too, unless the last call's fetch
        // cache was not filled.
        calls.before_row(restore)?;
        Ok(rows)
    }

    /// A full scan of the clustered index in primary-key order (MariaDB's `type: ALL`:
    /// ha_innobase::rnd_next → row0sel.cc `row_search_mvcc` from the first leaf), each
    /// visible version handed to `f` until it returns false, records copied out of the
    /// tree a batch at a time so no page latch is held while `f` runs; only the columns
    /// `proj` needs are decoded (`ClusteredTable::visible_version_projected`). The
    /// handler's calls restore the cursor as a range read's do (`FetchCalls`).
    fn seq_scan_columns(
        &self,
        st: &Statement<'_>,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let ctx = &RowCtx::from(st);
        let mut lo: Bound<Vec<u8>> = Bound::Unbounded;
        let mut batch = RecordBatch::default();
        // rnd_next fetches as index_next does (ha_innodb.cc `general_fetch`): see
        // `FetchCalls`.
        let mut calls = FetchCalls::default();
        let restore = |k: &[u8], l| self.clustered.restore_position(k, l);
        loop {
            let full = batch.fill(
                &self.clustered,
                lo.as_ref().map(|v| v.as_slice()),
                Bound::Unbounded,
                ScanDirection::Forward,
            )?;
            for (pk, rec, leaf) in batch.iter() {
                if let Some(row) = self.visible_version_projected(ctx, pk, rec, proj)? {
                    calls.before_row(restore)?;
                    calls.returned(pk, leaf);
                    if !f(row)? {
                        return Ok(());
                    }
                }
            }
            match (full, batch.last_key()) {
                (true, Some(k)) => lo = Bound::Excluded(k.to_vec()),
                _ => return calls.before_row(restore),
            }
        }
    }
}

/// The clustered table's writes (row0ins.cc, row0upd.cc; ha_innodb.cc `write_row`,
/// `update_row`, `delete_row`).
impl TableWrite for ClusteredTable {
    type TxnState = TrxUndo;

    /// row_ins_clust_index_entry: inserts `row`, or re-inserts over a delete-marked record
    /// of the same key whose delete committed (row_ins_clust_index_entry_by_modify). A
    /// table without a primary key first takes the next `DB_ROW_ID`
    /// (row0ins.cc `row_ins_alloc_row_id_step`), its clustered key; the id is used up even
    /// when the insert then fails or is rolled back, as in InnoDB.
    ///
    /// Errors: [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey), [`Error::InvalidValue`], [`TxnError::Deadlock`](crate::error::TxnError::Deadlock),
    /// storage errors.
    fn insert(&self, st: &Statement<'_>, undo: &mut TrxUndo, row: Row) -> Result<()> {
        let ctx = &RowCtx::from(st);
        let row = self.def.normalize_row(&row);
        self.def.check_row(&row)?;
        let pk = match self.def.has_primary_key() {
            true => key_of(&self.def, &self.def.primary_key, &row)?,
            false => self.row_ids.next_row_id()?,
        };
        self.with_row_lock(ctx, &pk.clone(), || {
            let existing = self.clustered.get(&pk)?;
            let Some(rec) = existing else {
                for (ix, idx) in self.def.indexes.iter().enumerate() {
                    if idx.unique {
                        if let Some(x) = self.unique_conflict(ctx, ix, &row, &pk)? {
                            return Ok(Attempt::Wait(x));
                        }
                    }
                }
                let u = UndoRecord {
                    kind: UndoType::Insert,
                    table: self.id,
                    old_trx_id: 0,
                    old_roll_ptr: RollPtr::NULL,
                    pk: pk.clone(),
                    delta: Vec::new(),
                };
                let rp = self.undo.append(undo, true, TrxId::from(ctx.xid), &u)?;
                self.clustered.insert(
                    &pk,
                    &encode_compact(&self.def, &row, TrxId::from(ctx.xid), rp.encode())?,
                )?;
                if !self.secondary_deferred.load(Ordering::Acquire) {
                    for ix in 0..self.indexes.len() {
                        self.indexes[ix].insert(&self.sec_key(ix, &row, &pk)?, LIVE)?;
                        self.counters
                            .index_entries_inserted
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
                self.counters.n_tup_ins.fetch_add(1, Ordering::Relaxed);
                return Ok(Attempt::Done(()));
            };
            let r = decode_compact_record(&self.def, &pk, &rec)?;
            if let Some(x) = self.holder(ctx, &pk, r.trx_id) {
                return Ok(Attempt::Wait(x));
            }
            if !r.delete_marked {
                return Err(Error::Txn(TxnError::DuplicateKey {
                    index: "PRIMARY".into(),
                    key: format!("({})", self.render_pk(&pk)),
                }));
            }
            // Re-insert over the committed delete-marked record: an update with undo.
            let all: Vec<usize> = (0..self.def.columns.len()).collect();
            let u = UndoRecord {
                kind: UndoType::UpdateDeleted,
                table: self.id,
                old_trx_id: r.trx_id,
                old_roll_ptr: RollPtr::decode(r.roll_ptr),
                pk: pk.clone(),
                delta: encode_delta(&self.def, &r.row, &all),
            };
            let rp = self.undo.append(undo, false, TrxId::from(ctx.xid), &u)?;
            self.clustered.update_value(
                &pk,
                &encode_compact(&self.def, &row, TrxId::from(ctx.xid), rp.encode())?,
            )?;
            for ix in 0..self.indexes.len() {
                // The old entries stay delete-marked (purge removes them); the new key's entry
                // is un-delete-marked when it exists, else inserted.
                let new = self.sec_key(ix, &row, &pk)?;
                if self.put_secondary_live(ix, &new)? {
                    self.counters
                        .index_entries_inserted
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
            self.counters.n_tup_ins.fetch_add(1, Ordering::Relaxed);
            Ok(Attempt::Done(()))
        })
    }

    /// row_upd_clust_rec (in place) and row_upd_sec_index_entry: applies `set` to the latest
    /// version of the row (a locking read: InnoDB's UPDATE reads the newest committed
    /// version whatever the read view), writing the old values of the changed columns to
    /// the update undo. Returns false when there is no such row.
    ///
    /// Errors: [`Error::InvalidValue`] (including a change of the primary key, not built
    /// yet); [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey); [`TxnError::Deadlock`](crate::error::TxnError::Deadlock); storage errors.
    fn update(
        &self,
        st: &Statement<'_>,
        undo: &mut TrxUndo,
        pk_vals: &[Value],
        set: &[Assign],
    ) -> Result<bool> {
        let ctx = &RowCtx::from(st);
        self.check_not_deferred("an update")?;
        let pk = self.pk_key(pk_vals)?;
        self.with_row_lock(ctx, &pk.clone(), || {
            let r = match self.record_to_change(ctx, &pk)? {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(Attempt::Done(false)),
                Err(x) => return Ok(Attempt::Wait(x)),
            };
            let mut new_row = r.row.clone();
            Assign::apply(set, &mut new_row)?;
            let new_row = self.def.normalize_row(&new_row);
            self.def.check_row(&new_row)?;
            if key_of(&self.def, &self.def.primary_key, &new_row)? != pk {
                return Err(Error::InvalidValue(format!("table {}: updating the primary key is not supported by the clustered design yet", self.def.name)));
            }
            let changed: Vec<usize> = (0..new_row.len()).filter(|&c| r.row[c] != new_row[c]).collect();
            let changed_ix: Vec<usize> = (0..self.def.indexes.len())
                .filter(|&ix| self.def.indexes[ix].columns.iter().any(|c| changed.contains(c)))
                .collect();
            for &ix in &changed_ix {
                if self.def.indexes[ix].unique {
                    if let Some(x) = self.unique_conflict(ctx, ix, &new_row, &pk)? {
                        return Ok(Attempt::Wait(x));
                    }
                }
            }
            // Undo holds the changed columns, plus the ordering fields of every index whose
            // key changes (trx0rec.cc: needed by purge to find the old secondary entries).
            let mut undo_cols = changed.clone();
            for &ix in &changed_ix {
                undo_cols.extend(self.def.indexes[ix].columns.iter().copied());
            }
            undo_cols.sort_unstable();
            undo_cols.dedup();
            let u = UndoRecord {
                kind: UndoType::UpdateExisting,
                table: self.id,
                old_trx_id: r.trx_id,
                old_roll_ptr: RollPtr::decode(r.roll_ptr),
                pk: pk.clone(),
                delta: encode_delta(&self.def, &r.row, &undo_cols),
            };
            let rp = self.undo.append(undo, false, TrxId::from(ctx.xid), &u)?;
            self.clustered.update_value(&pk, &encode_compact(&self.def, &new_row, TrxId::from(ctx.xid), rp.encode())?)?;
            for &ix in &changed_ix {
                // Secondary entries are never updated in place: delete-mark the old one, insert
                // (or un-delete-mark) the new one.
                self.indexes[ix].update_value(&self.sec_key(ix, &r.row, &pk)?, DELETE_MARKED)?;
                let new = self.sec_key(ix, &new_row, &pk)?;
                if self.put_secondary_live(ix, &new)? {
                    self.counters.index_entries_inserted.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.counters.n_tup_upd.fetch_add(1, Ordering::Relaxed);
            Ok(Attempt::Done(true))
        })
    }

    /// row_upd_del_mark_clust_rec: delete-marks the latest version of the row and its
    /// secondary entries. Returns false when there is no such row.
    ///
    /// Errors: [`TxnError::Deadlock`](crate::error::TxnError::Deadlock); storage errors.
    fn delete(&self, st: &Statement<'_>, undo: &mut TrxUndo, pk_vals: &[Value]) -> Result<bool> {
        let ctx = &RowCtx::from(st);
        self.check_not_deferred("a delete")?;
        let pk = self.pk_key(pk_vals)?;
        self.with_row_lock(ctx, &pk.clone(), || {
            let r = match self.record_to_change(ctx, &pk)? {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(Attempt::Done(false)),
                Err(x) => return Ok(Attempt::Wait(x)),
            };
            let ord: Vec<usize> = {
                let mut v: Vec<usize> = self
                    .def
                    .indexes
                    .iter()
                    .flat_map(|i| i.columns.iter().copied())
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let u = UndoRecord {
                kind: UndoType::DeleteMark,
                table: self.id,
                old_trx_id: r.trx_id,
                old_roll_ptr: RollPtr::decode(r.roll_ptr),
                pk: pk.clone(),
                delta: encode_delta(&self.def, &r.row, &ord),
            };
            let rp = self.undo.append(undo, false, TrxId::from(ctx.xid), &u)?;
            let mut new_rec = encode_compact(&self.def, &r.row, TrxId::from(ctx.xid), rp.encode())?;
            set_compact_delete_mark(&mut new_rec, true)?;
            self.clustered.update_value(&pk, &new_rec)?;
            for ix in 0..self.indexes.len() {
                self.indexes[ix].update_value(&self.sec_key(ix, &r.row, &pk)?, DELETE_MARKED)?;
            }
            self.counters.n_tup_del.fetch_add(1, Ordering::Relaxed);
            Ok(Attempt::Done(true))
        })
    }

    /// `SELECT ... FOR UPDATE` by primary key (row0sel.cc `row_search_mvcc` with
    /// `select_lock_type` LOCK_X → lock0lock.cc `lock_clust_rec_read_check_and_lock`):
    /// waits for a running holder of the record (implicit or explicit), takes its explicit
    /// X lock (`x_locks`: nothing is written to the page, the undo log or the redo log)
    /// and returns the record's newest committed version, not the read view's (a
    /// locking read does not read through the undo chain). `None` when there is no such
    /// row or it is delete-marked.
    ///
    /// Errors: [`TxnError::Deadlock`](crate::error::TxnError::Deadlock); storage errors.
    fn lock_row(
        &self,
        st: &Statement<'_>,
        _: &mut TrxUndo,
        pk_vals: &[Value],
    ) -> Result<Option<Row>> {
        let ctx = &RowCtx::from(st);
        let pk = self.pk_key(pk_vals)?;
        self.with_row_lock(ctx, &pk.clone(), || {
            match self.record_to_change(ctx, &pk)? {
                Ok(Some(r)) => {
                    self.lock_record(ctx, &pk);
                    Ok(Attempt::Done(Some(r.row)))
                }
                Ok(None) => Ok(Attempt::Done(None)),
                Err(x) => Ok(Attempt::Wait(x)),
            }
        })
    }
}

/// The clustered table in the design's table list.
impl Catalogued for ClusteredTable {
    fn def(&self) -> &TableDef {
        &self.def
    }
    fn trees(&self) -> Vec<&BTree> {
        std::iter::once(&self.clustered)
            .chain(self.indexes.iter())
            .collect()
    }
    fn table_relation(&self) -> crate::device::FileId {
        self.clustered.rel()
    }
    fn counters(&self) -> &crate::access::TableCounters {
        &self.counters
    }
    fn secondary_deferred(&self) -> &std::sync::atomic::AtomicBool {
        &self.secondary_deferred
    }
}

#[cfg(test)]
mod tests {
    use super::FetchCalls;

    /// The rows after which MariaDB's next handler call restores the cursor, and so the
    /// restores of a range of `n` rows read to its end.
    fn restores(n: usize) -> Vec<usize> {
        let mut calls = FetchCalls::default();
        let mut at = Vec::new();
        for row in 1..=n {
            calls
                .before_row(|k, _| {
                    at.push(k[0] as usize);
                    Ok(())
                })
                .unwrap();
            calls.returned(&[row as u8], 0);
        }
        calls
            .before_row(|k, _| {
                at.push(k[0] as usize);
                Ok(())
            })
            .unwrap();
        at
    }

    /// row0sel.cc: one row per call for the first four (MYSQL_FETCH_CACHE_THRESHOLD), then
    /// up to eight per call (MYSQL_FETCH_CACHE_SIZE); a call after a cache that was not
    /// filled ends the range without a restore.
    #[test]
    fn a_range_read_restores_after_each_of_the_first_four_rows_then_every_eighth() {
        assert_eq!(restores(0), Vec::<usize>::new());
        assert_eq!(restores(1), vec![1]);
        assert_eq!(restores(4), vec![1, 2, 3, 4]);
        // Rows 5 to 10 come from one call whose cache was not filled: no restore after.
        assert_eq!(restores(10), vec![1, 2, 3, 4]);
        assert_eq!(restores(12), vec![1, 2, 3, 4, 12]);
        // sysbench's 100-row ranges: 16 restores besides the first call's search.
        let r = restores(100);
        assert_eq!(r.len(), 16);
        assert_eq!(&r[4..], &[12, 20, 28, 36, 44, 52, 60, 68, 76, 84, 92, 100]);
    }
}
