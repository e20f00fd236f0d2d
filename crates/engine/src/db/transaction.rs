//! A transaction of the engine API: any error of an operation aborts it (as PostgreSQL puts
//! a transaction in the failed state, and mvcclab then rolls it back), after which every
//! call returns [`TxnError::TransactionClosed`](crate::error::TxnError::TransactionClosed); dropping an open transaction aborts it.

use super::engine::EngineTxn;
use super::versioning::SystemTime;
use crate::access::{Assign, TableId};
use crate::btree::ScanDirection;
use crate::catalog::{Projection, Row, Value};
use crate::error::TxnError;
use crate::error::{Error, Result};
use std::ops::Bound;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxnState {
    Open,
    Committed,
    Aborted,
}

/// A transaction. Operations take `&mut self`; the first error aborts it.
pub struct Transaction {
    inner: Box<dyn EngineTxn>,
    state: TxnState,
}

impl Transaction {
    /// An open transaction over the engine's.
    pub(super) fn new(inner: Box<dyn EngineTxn>) -> Self {
        Transaction {
            inner,
            state: TxnState::Open,
        }
    }

    fn run<T>(&mut self, f: impl FnOnce(&mut dyn EngineTxn) -> Result<T>) -> Result<T> {
        match self.state {
            TxnState::Open => {}
            TxnState::Committed => {
                return Err(Error::Txn(TxnError::TransactionClosed("committed")))
            }
            TxnState::Aborted => return Err(Error::Txn(TxnError::TransactionClosed("aborted"))),
        }
        let r = f(self.inner.as_mut());
        if r.is_err() {
            self.state = TxnState::Aborted;
            let _ = self.inner.abort();
        }
        r
    }

    /// The row with primary key `pk`, if visible.
    ///
    /// Errors: [`Error::InvalidValue`] for a key of the wrong shape; [`Error::Catalog`]
    /// (also for a table without a primary key, which `get`, `update`, `delete` and a
    /// bounded `scan` refuse); storage errors. Any error aborts the transaction.
    pub fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.run(|x| x.get(t, pk))
    }

    /// Rows whose secondary index `index` (position in the table's `indexes`) key is `key`,
    /// or starts with `key` when it gives fewer values than the index has columns (a
    /// leading-column lookup), in index order.
    ///
    /// Errors: as [`Transaction::get`].
    pub fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.run(|x| x.get_by_index(t, index, key))
    }

    /// Rows with primary key in `lo..hi`, forward or backward, at most `limit`. On a table
    /// without a primary key only `(Unbounded, Unbounded)`: every visible row in storage
    /// order (postgres: heap block and line pointer; innodb: hidden `DB_ROW_ID`), see
    /// [`crate::access::TableRead::scan`].
    ///
    /// Errors: as [`Transaction::get`].
    pub fn scan(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
        self.run(|x| x.scan(t, lo, hi, dir, limit))
    }

    /// [`Transaction::scan`] decoding only the columns `cols` (column numbers of table
    /// `t`): each row has the table's width, the other columns [`Value::Null`] (see
    /// [`Transaction::seq_scan_columns`]). The same pages are read as by
    /// [`Transaction::scan`].
    ///
    /// Errors: [`Error::InvalidValue`] for a column past the table's width; as
    /// [`Transaction::scan`].
    pub fn scan_columns(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        cols: &[usize],
    ) -> Result<Vec<Row>> {
        let proj = Projection::columns(cols);
        self.run(|x| x.scan_columns(t, lo, hi, dir, limit, &proj))
    }

    /// A sequential scan: every visible row of table `t` in storage order (postgres: heap
    /// block and line pointer, through the bulk-read ring on a table larger than a quarter
    /// of the pool; innodb: the clustered index in primary-key order), handed to `f` until
    /// it returns false; rows are not collected. See
    /// [`crate::access::TableRead::seq_scan_each`].
    ///
    /// Errors: what `f` returns; as [`Transaction::get`].
    pub fn seq_scan(&mut self, t: TableId, f: &mut dyn FnMut(Row) -> Result<bool>) -> Result<()> {
        self.run(|x| x.seq_scan(t, &Projection::all(), f))
    }

    /// [`Transaction::seq_scan`] decoding only the columns `cols` (column numbers of table
    /// `t`; empty for none, as `count(*)` needs): each row has the table's width, the other
    /// columns [`Value::Null`] (PostgreSQL's `slot_deform_heap_tuple` up to the last
    /// attribute the plan references; InnoDB's `row_sel_store_mysql_rec` over the
    /// template of the statement's columns; see [`Projection`]). The same pages are read
    /// as by [`Transaction::seq_scan`].
    ///
    /// Errors: [`Error::InvalidValue`] for a column past the table's width; as
    /// [`Transaction::seq_scan`].
    pub fn seq_scan_columns(
        &mut self,
        t: TableId,
        cols: &[usize],
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let proj = Projection::columns(cols);
        self.run(|x| x.seq_scan(t, &proj, f))
    }

    /// Inserts `row`.
    ///
    /// Errors: [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey), [`Error::InvalidValue`], [`TxnError::Deadlock`](crate::error::TxnError::Deadlock), as
    /// [`Transaction::get`].
    pub fn insert(&mut self, t: TableId, row: Row) -> Result<()> {
        self.run(|x| x.insert(t, row))
    }

    /// Applies `set` to the row with primary key `pk` (on the newest version, after any
    /// wait); false when there is no such row.
    ///
    /// Errors: [`TxnError::SerializationFailure`](crate::error::TxnError::SerializationFailure) (repeatable read), [`TxnError::Deadlock`](crate::error::TxnError::Deadlock),
    /// [`TxnError::DuplicateKey`](crate::error::TxnError::DuplicateKey), as [`Transaction::get`].
    pub fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        self.run(|x| x.update(t, pk, set))
    }

    /// `SELECT ... FOR UPDATE` of the row with primary key `pk`: the row, locked until the
    /// transaction ends (writers and other locking reads of it wait; plain reads do not),
    /// `None` when there is none. postgres: the newest version (read committed; at
    /// repeatable read one the snapshot sees, or a serialization failure), locked in its
    /// xmax and WAL-logged (heapam.c `heap_lock_tuple`); innodb: the newest committed
    /// version whatever the read view, with a record X lock of the lock system, nothing
    /// logged (row0sel.cc `row_search_mvcc`). See [`crate::access::TableWrite::lock_row`].
    ///
    /// Errors: as [`Transaction::update`]; [`Error::Catalog`] on a system-versioned table.
    pub fn get_for_update(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.run(|x| x.get_for_update(t, pk))
    }

    /// Deletes the row with primary key `pk`; false when there is none.
    ///
    /// Errors: as [`Transaction::update`].
    pub fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        self.run(|x| x.delete(t, pk))
    }

    /// Rows of a system-versioned table with declared primary key `pk` (without `row_end`)
    /// that `SELECT ... FOR SYSTEM_TIME when` sees, oldest first; each row ends with its
    /// `row_start` and `row_end` ([`crate::db::versioning`]).
    ///
    /// Errors: [`Error::Catalog`] for a table that is not system-versioned; as
    /// [`Transaction::get`].
    pub fn get_system_time(
        &mut self,
        t: TableId,
        pk: &[Value],
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        self.run(|x| x.get_system_time(t, pk, when))
    }

    /// Rows of a system-versioned table whose secondary index `index` key is `key`, `FOR
    /// SYSTEM_TIME when`.
    ///
    /// Errors: as [`Transaction::get_system_time`]; [`Error::InvalidConfig`] for a read
    /// other than the current rows through a unique index (not built yet).
    pub fn get_by_index_system_time(
        &mut self,
        t: TableId,
        index: usize,
        key: &[Value],
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        self.run(|x| x.get_by_index_system_time(t, index, key, when))
    }

    /// Rows of a system-versioned table with declared primary key in `lo..hi`, `FOR
    /// SYSTEM_TIME when`, in `dir` order of (key, `row_end`), at most `limit`.
    ///
    /// Errors: as [`Transaction::get_system_time`].
    #[allow(clippy::too_many_arguments)]
    pub fn scan_system_time(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        self.run(|x| x.scan_system_time(t, lo, hi, dir, limit, when))
    }

    /// `DELETE HISTORY FROM t BEFORE SYSTEM_TIME before`: removes the history rows whose
    /// `row_end` is before `before` (µs since 2000-01-01); returns how many.
    ///
    /// Errors: as [`Transaction::get_system_time`]; [`Error::Catalog`] for a table without
    /// a primary key; as [`Transaction::delete`].
    pub fn delete_history(&mut self, t: TableId, before: i64) -> Result<u64> {
        self.run(|x| x.delete_history(t, before))
    }

    /// [`super::Database::drop_partition`]'s work in this transaction.
    pub(crate) fn drop_history_partition(&mut self, t: TableId, partition: &str) -> Result<u64> {
        self.run(|x| x.drop_history_partition(t, partition))
    }

    /// Commits (the commit record is durable when this returns).
    ///
    /// Errors: [`TxnError::TransactionClosed`](crate::error::TxnError::TransactionClosed) when already ended; WAL errors.
    pub fn commit(mut self) -> Result<()> {
        self.run(|x| x.commit())?;
        self.state = TxnState::Committed;
        Ok(())
    }

    /// Rolls back.
    ///
    /// Errors: [`TxnError::TransactionClosed`](crate::error::TxnError::TransactionClosed) when already ended.
    pub fn abort(mut self) -> Result<()> {
        self.run(|x| x.abort())?;
        self.state = TxnState::Aborted;
        Ok(())
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.state == TxnState::Open {
            let _ = self.inner.abort();
        }
    }
}
