//! The table access method trait: what a design implements so that the engine API
//! ([`crate::db`]) can be written once over it (PostgreSQL tableam.h `TableAmRoutine`, whose
//! callbacks `tuple_insert`, `tuple_update`, `tuple_delete`, `index_fetch_tuple`,
//! `scan_getnextslot`, `relation_vacuum` and `index_build_range_scan` the methods below
//! stand for; MariaDB's `handler` class, ha_innodb.cc `ha_innobase::write_row`,
//! `update_row`, `delete_row`, `index_read`, `general_fetch`).
//!
//! The heap ([`crate::heap::HeapAm`], the `postgres` preset) and the clustered table
//! ([`crate::clustered::ClusteredAm`], the `innodb` preset) implement it. Everything that
//! differs between designs lives behind it: the table's row format and version chain, the
//! transaction's design state (the innodb undo logs), the end of a transaction (commit
//! record and clog, or undo log commit and rollback), garbage collection (vacuum and
//! autovacuum, or purge threads), index maintenance and its check. What every design shares
//! — the statement's snapshot, the xid assigned at the first change, the per-table change
//! counts, the causes of I/O — is the engine's ([`crate::db`]'s `DesignEngine`).

use super::assign::Assign;
use super::counters::{AnalyzeReport, EngineCounters, GcReport};
use super::relations::TableId;
use super::tables::{AmShared, Catalogued, TableList};
use super::txn::{Changes, TxnCore};
use crate::btree::ScanDirection;
use crate::catalog::{Projection, Row, TableDef, Value};
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::mvcc::{Isolation, Snapshot, TransactionManager, Xid};
use std::collections::BTreeMap;
use std::ops::Bound;

/// One statement's context, as the engine hands it to the access method: the transaction's
/// xid (assigned before a writing statement; 0 for a read-only transaction), the statement's
/// snapshot or read view (per statement at read committed, per transaction at repeatable
/// read), and its command id (PostgreSQL `GetCurrentCommandId`, counted from 1 per
/// transaction; unused by the clustered table).
pub struct Statement<'a> {
    /// The transaction manager.
    pub tm: &'a TransactionManager,
    /// The transaction's xid (0 while it has none).
    pub xid: Xid,
    /// The statement's snapshot (read view).
    pub snapshot: &'a Snapshot,
    /// The statement's command id.
    pub cid: u32,
    /// The transaction's isolation level.
    pub isolation: Isolation,
}

/// How a transaction ended, as the access method's [`TableAccessMethod::end_xact`] reports
/// it: the error of its commit or rollback, if any, whether it committed, and its per-table
/// change counts (from [`TxnCore::finish`]) for pgstat's end-of-transaction accounting.
pub struct XactEnd {
    /// The first error of the commit or rollback.
    pub result: Result<()>,
    /// True when the transaction committed.
    pub committed: bool,
    /// Inserted, updated and deleted rows by table.
    pub changes: BTreeMap<TableId, Changes>,
}

/// A design table's reads, each with the statement's snapshot (tableam.h
/// `index_fetch_tuple` and `scan_getnextslot`; MariaDB `handler::index_read_map`,
/// `general_fetch`). Implemented by each design's table where its reads live.
///
/// A table without a primary key (`TableDef::primary_key` empty) is read only by an
/// unbounded [`TableRead::scan`] or [`TableRead::get_by_index`]; reads by primary key fail
/// with [`Error::Catalog`] naming the table (`TableDef::require_primary_key`). Rows never
/// include a design's hidden columns (InnoDB's `DB_ROW_ID`).
pub trait TableRead {
    /// The row with primary key `pk` visible to the statement.
    ///
    /// Errors: [`Error::InvalidValue`] for a key of the wrong shape; [`Error::Catalog`] for
    /// a table without a primary key; storage errors.
    fn get(&self, st: &Statement<'_>, pk: &[Value]) -> Result<Option<Row>>;
    /// Rows whose secondary index `index` key is `key`, visible to the statement.
    ///
    /// Errors: as [`TableRead::get`]; [`Error::Catalog`] while the secondary indexes are
    /// deferred.
    fn get_by_index(&self, st: &Statement<'_>, index: usize, key: &[Value]) -> Result<Vec<Row>>;
    /// [`TableRead::get_by_index`] with an index condition on the primary key: `icp` gets
    /// the values of the primary-key columns (positions `pk` in the row), and the rows whose
    /// key fails it are not returned. A design whose secondary entries carry the primary
    /// key tests it on the entry, before the row is fetched — the clustered one, as
    /// MariaDB's index condition pushdown does (row0sel.cc `row_search_mvcc` calls
    /// `row_search_idx_cond_check` on the secondary record before the clustered look-up).
    /// This default fetches every row and tests it afterwards (a heap index entry holds a
    /// TID, not the key).
    ///
    /// Errors: as [`TableRead::get_by_index`].
    fn get_by_index_icp(
        &self,
        st: &Statement<'_>,
        index: usize,
        key: &[Value],
        pk: &[usize],
        icp: &IndexCondition,
    ) -> Result<Vec<Row>> {
        Ok(retain_by_key(self.get_by_index(st, index, key)?, pk, icp))
    }
    /// Rows with primary key in `lo..hi`, in `dir` order, at most `limit`. On a table
    /// without a primary key both bounds must be unbounded, and the rows come in storage
    /// order, reversed for `Backward`: the heap's block then line-pointer order (a
    /// sequential scan, heapam.c `heapgettup_pagemode`; an updated row may move), the
    /// clustered index's `DB_ROW_ID` order (insertion order).
    ///
    /// Errors: as [`TableRead::get`] ([`Error::Catalog`] for a bound on a table without a
    /// primary key).
    fn scan(
        &self,
        st: &Statement<'_>,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
        self.scan_columns(st, lo, hi, dir, limit, &Projection::all())
    }
    /// [`TableRead::scan`] decoding only the columns `proj` needs (the others
    /// [`Value::Null`]; see [`TableRead::seq_scan_columns`]). The same pages are read.
    ///
    /// Errors: as [`TableRead::scan`].
    fn scan_columns(
        &self,
        st: &Statement<'_>,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>>;
    /// A full scan of the table in storage order, each row the statement sees handed to
    /// `f` until it returns false: the heap block by block and line pointer by line
    /// pointer (heapam.c `heapgettup_pagemode`, PostgreSQL's `Seq Scan`), through the
    /// bulk-read ring when the table is larger than a quarter of the pool (heapam.c
    /// `initscan`); the clustered index leaf by leaf in primary-key order (MariaDB's
    /// `type: ALL` full table scan, row0sel.cc `row_search_mvcc` from the first leaf).
    /// Rows are never materialised: memory stays bounded by a page (or a batch of
    /// records) however large the table.
    ///
    /// Errors: what `f` returns; storage errors.
    fn seq_scan_each(
        &self,
        st: &Statement<'_>,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.seq_scan_columns(st, &Projection::all(), f)
    }
    /// [`TableRead::seq_scan_each`] decoding only the columns `proj` needs: each row has
    /// the table's width, the columns not needed [`Value::Null`] (PostgreSQL's
    /// `slot_deform_heap_tuple` up to the last attribute the plan references; InnoDB's
    /// `row_sel_store_mysql_rec` over the prebuilt template; see [`Projection`]). The
    /// pages read, and their counts, are those of the whole-row scan.
    ///
    /// Errors: as [`TableRead::seq_scan_each`].
    fn seq_scan_columns(
        &self,
        st: &Statement<'_>,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()>;
}

/// A design table's writes, with their index maintenance (tableam.h `tuple_insert`,
/// `tuple_update`, `tuple_delete`; MariaDB `handler::write_row`, `update_row`,
/// `delete_row`). Implemented by each design's table where its writes live.
pub trait TableWrite {
    /// The design's own state of one transaction (the innodb undo logs; nothing for the
    /// heap).
    type TxnState: Default + Send + 'static;
    /// Inserts `row`, with its index entries. A table without a primary key takes the row
    /// with no uniqueness check of its own (a heap tuple; InnoDB's next `DB_ROW_ID`).
    ///
    /// Errors: [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey), [`Error::InvalidValue`], [`TxnError::Deadlock`](crate::error::TxnError::Deadlock);
    /// storage errors.
    fn insert(&self, st: &Statement<'_>, state: &mut Self::TxnState, row: Row) -> Result<()>;
    /// Applies `set` to the newest version of the row with primary key `pk`; false when
    /// there is none.
    ///
    /// Errors: [`TxnError::SerializationFailure`](crate::error::TxnError::SerializationFailure), [`TxnError::Deadlock`](crate::error::TxnError::Deadlock),
    /// [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey), as [`TableWrite::insert`]; [`Error::Catalog`] for a table
    /// without a primary key.
    fn update(
        &self,
        st: &Statement<'_>,
        state: &mut Self::TxnState,
        pk: &[Value],
        set: &[Assign],
    ) -> Result<bool>;
    /// Deletes the row with primary key `pk`; false when there is none.
    ///
    /// Errors: as [`TableWrite::update`].
    fn delete(&self, st: &Statement<'_>, state: &mut Self::TxnState, pk: &[Value]) -> Result<bool>;
    /// `SELECT ... FOR UPDATE` of the row with primary key `pk`: locks it exclusively
    /// until the transaction ends (writers and other locking reads wait; plain reads do
    /// not) and returns the version a locking read returns, `None` when there is no such
    /// row. PostgreSQL: `heap_lock_tuple` (the lock in the tuple's xmax, WAL-logged),
    /// the newest version at read committed; InnoDB: a record X lock in the lock system
    /// (lock0lock.cc `lock_clust_rec_read_check_and_lock`), nothing on the page, and the
    /// newest committed version whatever the read view (row0sel.cc `row_search_mvcc`).
    ///
    /// Errors: as [`TableWrite::update`].
    fn lock_row(
        &self,
        st: &Statement<'_>,
        state: &mut Self::TxnState,
        pk: &[Value],
    ) -> Result<Option<Row>>;
}

/// A design's tables, transactions and garbage collection (see the module doc). Every
/// method runs under the caller's cause ([`crate::stats::enter`]); the engine enters the
/// statement's cause before calling a row method.
pub trait TableAccessMethod: Send + Sync + 'static {
    /// A table of this design, with its row operations.
    type Table: Catalogued
        + TableRead
        + TableWrite<TxnState = Self::TxnState>
        + Send
        + Sync
        + 'static;
    /// The design's own state of one transaction (the innodb undo logs; nothing for the
    /// heap).
    type TxnState: Default + Send + 'static;

    /// The transaction manager and the design's tables.
    fn shared(&self) -> &AmShared<Self::Table>;
    /// The transaction manager.
    fn transactions(&self) -> &TransactionManager {
        &self.shared().tm
    }
    /// The design's tables.
    fn tables(&self) -> &TableList<Self::Table> {
        &self.shared().tables
    }
    /// Creates the relations of a new table `def` with id `id` and opens it.
    ///
    /// Errors: storage errors creating its relations.
    fn create_table(&self, id: TableId, def: TableDef) -> Result<Self::Table>;
    /// Builds the table's deferred secondary indexes by sorting; returns the entries built.
    ///
    /// Errors: storage errors.
    fn build_secondary_indexes(&self, table: &Self::Table) -> Result<u64>;
    /// Ends the transaction (`commit`: commits, else rolls back): the design's commit or
    /// rollback, then [`TxnCore::finish`] exactly once.
    fn end_xact(&self, core: &mut TxnCore, state: &mut Self::TxnState, commit: bool) -> XactEnd;
    /// Garbage collection of `table` now (vacuum; purge of the whole history).
    ///
    /// Errors: storage errors.
    fn gc(&self, table: &Self::Table) -> Result<GcReport>;
    /// ANALYZE of `table` now.
    ///
    /// Errors: [`Error::InvalidConfig`] for a design without one (the default).
    fn analyze(&self, _table: &Self::Table) -> Result<AnalyzeReport> {
        Err(Error::InvalidConfig(
            "ANALYZE is modelled for heap tables only (the postgres table layout)".into(),
        ))
    }
    /// Every version of a row, newest first: (transaction id, deleted, row). Empty (the
    /// default) for designs that do not chain versions from the newest.
    ///
    /// Errors: storage errors.
    fn row_versions(&self, _table: &Self::Table, _pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        Ok(Vec::new())
    }
    /// Design-wide counters (undo, purge, history list, B-tree splits and merges).
    fn engine_counters(&self) -> EngineCounters;
    /// Checks `table`'s indexes against it: (entries checked, one line per problem).
    ///
    /// Errors: storage errors.
    fn check_indexes(&self, table: &Self::Table) -> Result<(u64, Vec<String>)>;
    /// The design-wide undo relation the catalog records, if the design has one.
    fn undo_relation(&self) -> Option<FileId> {
        None
    }
    /// The relation of the undo log's file-space pages the catalog records, if any.
    fn undo_file_space(&self) -> Option<FileId> {
        None
    }
    /// Stops the design's background threads (autovacuum, purge), waiting for each.
    fn shutdown(&self);
}

/// An index condition on a row's primary-key values ([`TableRead::get_by_index_icp`]).
pub type IndexCondition = dyn Fn(&[Value]) -> bool;

/// The rows whose values at positions `pk` pass `icp` ([`TableRead::get_by_index_icp`]
/// tested after the fetch).
pub fn retain_by_key(mut rows: Vec<Row>, pk: &[usize], icp: &IndexCondition) -> Vec<Row> {
    rows.retain(|r| icp(&pk.iter().map(|&c| r[c].clone()).collect::<Vec<_>>()));
    rows
}
