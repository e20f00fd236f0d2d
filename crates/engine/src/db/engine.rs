//! The engine traits the database calls ([`Engine`], [`EngineTxn`]), and the engine and its
//! transaction written once over a [`TableAccessMethod`]: table lookup,
//! the statement's snapshot and xid (`TxnCore`), the cause each operation's I/O is counted
//! under, the end-of-transaction change counts (pgstat's `AtEOXact_PgStat`), and the
//! catalog a DDL logs. Everything a design does differently is the access method's.
//!
//! # Locking
//! None of its own: a statement holds no lock of the engine's while the access method runs.

use super::history_partitions::{
    dropped_partitions_def, history_relation_names, interval_partition_end_unix_s, partition_names,
    vers_set_hist_part, vers_set_hist_part_by_interval, PartitionCounts, DROPPED_PARTITIONS,
};
use super::versioning::{
    system_time_now_us, transaction_registry_def, versioned_def, Period, SystemTime, Versioned,
    TRANSACTION_REGISTRY,
};
use crate::access::TableStats;
use crate::access::{
    Assign, CatalogSnapshot, Catalogued, EngineCounters, GcReport, Statement, TableAccessMethod,
    TableId, TableRead, TableRelations, TableWrite, TxnCore, XactEnd,
};
use crate::btree::ScanDirection;
use crate::catalog::{Projection, Row, TableDef, Value, PG_EPOCH_UNIX_SECS, USECS_PER_SEC};
use crate::design::HistoryStorage;
use crate::error::Result;
use crate::mvcc::Isolation;
use crate::stats::{enter, Cause};
use std::ops::Bound;
use std::sync::Arc;

/// A design's transaction. Implemented by each engine; used through [`super::Transaction`].
pub trait EngineTxn: Send {
    /// Row by primary key.
    fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>>;
    /// Rows by secondary index key.
    fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>>;
    /// Rows by primary-key range.
    fn scan(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
        self.scan_columns(t, lo, hi, dir, limit, &Projection::all())
    }
    /// Rows by primary-key range with only the columns `proj` needs decoded
    /// ([`crate::access::TableRead::scan_columns`]).
    fn scan_columns(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>>;
    /// Every visible row in storage order, handed to `f` until it returns false, with the
    /// columns `proj` needs decoded, counted under [`Cause::SeqScan`]
    /// ([`crate::access::TableRead::seq_scan_columns`]).
    fn seq_scan(
        &mut self,
        t: TableId,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()>;
    /// Inserts a row.
    fn insert(&mut self, t: TableId, row: Row) -> Result<()>;
    /// Updates columns of the row with a primary key; false if none.
    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool>;
    /// Deletes the row with a primary key; false if none.
    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool>;
    /// `SELECT ... FOR UPDATE` by primary key: the row, locked until the end of the
    /// transaction ([`crate::access::TableWrite::lock_row`]); `None` if none.
    fn get_for_update(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>>;
    /// Rows of a system-versioned table by declared primary key, `FOR SYSTEM_TIME when`.
    fn get_system_time(&mut self, t: TableId, pk: &[Value], when: SystemTime) -> Result<Vec<Row>>;
    /// Rows of a system-versioned table by secondary index key, `FOR SYSTEM_TIME when`.
    fn get_by_index_system_time(
        &mut self,
        t: TableId,
        index: usize,
        key: &[Value],
        when: SystemTime,
    ) -> Result<Vec<Row>>;
    /// Rows of a system-versioned table by declared primary-key range, `FOR SYSTEM_TIME
    /// when`.
    #[allow(clippy::too_many_arguments)]
    fn scan_system_time(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        when: SystemTime,
    ) -> Result<Vec<Row>>;
    /// `DELETE HISTORY FROM t BEFORE SYSTEM_TIME before`; returns the rows removed.
    fn delete_history(&mut self, t: TableId, before: i64) -> Result<u64>;
    /// `ALTER TABLE t DROP PARTITION partition` of a history partition
    /// ([`super::history_partitions`]): its rows deleted and the drop recorded in
    /// `dropped_partitions` (which must exist); returns the rows removed.
    fn drop_history_partition(&mut self, t: TableId, partition: &str) -> Result<u64>;
    /// Commits.
    fn commit(&mut self) -> Result<()>;
    /// Rolls back.
    fn abort(&mut self) -> Result<()>;
}

/// A design: tables, transactions, garbage collection.
pub trait Engine: Send + Sync {
    /// Creates a table (and its indexes); returns its id.
    fn create_table(&self, def: TableDef) -> Result<TableId>;
    /// Marks a new table's secondary indexes deferred: not maintained until
    /// [`Engine::build_secondary_indexes`].
    fn defer_secondary_indexes(&self, t: TableId) -> Result<()>;
    /// Builds a table's deferred secondary indexes by sorting; returns the entries built.
    fn build_secondary_indexes(&self, t: TableId) -> Result<u64>;
    /// The id of a table by name.
    fn table_id(&self, name: &str) -> Result<TableId>;
    /// The definition of a table.
    fn table_def(&self, t: TableId) -> Result<TableDef>;
    /// Begins a transaction.
    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn>;
    /// Runs garbage collection on a table now.
    fn gc(&self, t: TableId) -> Result<GcReport>;
    /// ANALYZE of a table now ([`TableAccessMethod::analyze`]; only heap tables have one).
    fn analyze(&self, t: TableId) -> Result<crate::access::AnalyzeReport>;
    /// The table's own counters; the block figures (`heap_blks_*`, `idx_blks_*`) are left
    /// 0 for [`super::Database::table_stats`] to fill from the buffer pool.
    fn table_counters(&self, t: TableId) -> Result<TableStats>;
    /// The relation files of a table.
    fn relations(&self, t: TableId) -> Result<TableRelations>;
    /// Every version of a row, newest first: (transaction id, deleted, row). Empty for
    /// designs that do not chain versions from the newest (postgres: use the heap tools).
    fn row_versions(&self, t: TableId, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>>;
    /// Design-wide counters (undo, purge, history list).
    fn engine_counters(&self) -> EngineCounters;
    /// Stops background work (autovacuum, purge threads).
    fn shutdown(&self);
    /// The catalog to log (`layout` is filled in by the database).
    fn catalog(&self) -> CatalogSnapshot;
    /// Checks a table's indexes against the table: (entries checked, problems).
    fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)>;
    /// Finishes the B+tree splits a crash interrupted, in every tree of every table
    /// ([`crate::btree::BTree::finish_incomplete_splits`]); returns how many. Recovery
    /// calls it after redo, before the tables are used.
    fn finish_incomplete_splits(&self) -> Result<u64>;
    /// True when an error left a B+tree split incomplete in the running engine
    /// ([`crate::btree::BTree::left_incomplete_split`]).
    fn incomplete_split_left(&self) -> bool;
    /// Creates `transaction_registry` when tables are versioned by transaction id and it
    /// does not exist yet; true when it was created (the catalog must then be logged).
    fn ensure_transaction_registry(&self) -> Result<bool>;
    /// Moves the transaction id sequence past `commit_id`, the largest commit id found in
    /// `transaction_registry` at open ([`crate::mvcc::TransactionManager::advance_next_xid_past`]).
    fn advance_past_commit_id(&self, commit_id: crate::mvcc::Xid);
    /// Creates `dropped_partitions` ([`super::history_partitions::DROPPED_PARTITIONS`])
    /// when it does not exist yet; true when it was created (the catalog must then be
    /// logged).
    fn ensure_dropped_partitions(&self) -> Result<bool>;
}

/// A design: its access method behind the [`Engine`] trait. Dropping it stops the access
/// method's background threads.
pub struct DesignEngine<A: TableAccessMethod> {
    am: Arc<A>,
    /// Tables are created system-versioned (design switch `system_versioning`), with their
    /// history where `history_storage` says; `None`: plain tables.
    versioning: Option<HistoryStorage>,
    /// Versioned by transaction id (`system_versioning=trx_id`).
    by_trx_id: bool,
    /// History partitions of each table (`history_partitions`) and their LIMIT
    /// (`history_partition_limit`).
    parts: Partitioning,
}

/// A table's history partitions ([`super::history_partitions`]): how many, their LIMIT
/// in rows (0: none), and their row counts and dropped set shared by every transaction.
#[derive(Clone)]
struct Partitioning {
    count: u16,
    limit: u64,
    /// INTERVAL in seconds (0: none) and its STARTS in seconds since 1970.
    interval_s: u64,
    starts_unix_s: i64,
    counts: Arc<PartitionCounts>,
}

impl<A: TableAccessMethod> DesignEngine<A> {
    /// The engine over `am` (whose background threads are already started).
    pub fn new(am: Arc<A>) -> Self {
        DesignEngine {
            am,
            versioning: None,
            by_trx_id: false,
            parts: Partitioning {
                count: 1,
                limit: 0,
                interval_s: 0,
                starts_unix_s: 0,
                counts: Arc::default(),
            },
        }
    }

    /// The engine with `count` history partitions per table rotated by `limit` rows (0:
    /// no LIMIT) when history is kept in partitions (design switches `history_partitions`,
    /// `history_partition_limit`; [`super::history_partitions`]).
    pub fn with_history_partitions(mut self, count: u16, limit: u64) -> Self {
        self.parts.count = count.max(1);
        self.parts.limit = limit;
        self
    }

    /// The engine with its history partitions rotated by an INTERVAL of `interval_s`
    /// seconds from `starts_unix_s` (seconds since 1970; design switches
    /// `history_partition_interval_s`, `history_partition_starts_unix_s`); 0: no INTERVAL.
    pub fn with_history_interval(mut self, interval_s: u64, starts_unix_s: i64) -> Self {
        self.parts.interval_s = interval_s;
        self.parts.starts_unix_s = starts_unix_s;
        self
    }

    /// The engine with every table created system-versioned ([`super::versioning`]), its
    /// history kept as `history` says (`None`: plain tables), its period in transaction ids
    /// when `by_trx_id`.
    pub fn with_system_versioning(
        mut self,
        history: Option<HistoryStorage>,
        by_trx_id: bool,
    ) -> Self {
        self.versioning = history;
        self.by_trx_id = by_trx_id && history.is_some();
        self
    }

    /// The access method (for tests and tools).
    pub fn access_method(&self) -> &A {
        &self.am
    }

    /// The transaction manager (for tests and tools).
    pub fn transactions(&self) -> &crate::mvcc::TransactionManager {
        self.am.transactions()
    }

    fn table(&self, t: TableId) -> Result<Arc<A::Table>> {
        self.am.tables().get(t)
    }

    /// Creates system table `def` unless a table of its name exists; true when created.
    fn create_missing(&self, def: TableDef) -> Result<bool> {
        if self.am.tables().id_of(&def.name).is_ok() {
            return Ok(false);
        }
        self.am
            .tables()
            .create(def, |id, def| self.am.create_table(id, def))?;
        Ok(true)
    }
}

impl<A: TableAccessMethod> Engine for DesignEngine<A> {
    fn create_table(&self, def: TableDef) -> Result<TableId> {
        let Some(hs) = self.versioning else {
            return self
                .am
                .tables()
                .create(def, |id, def| self.am.create_table(id, def));
        };
        // The periods extension leaves the table's keys as declared; MariaDB appends
        // row_end to each unique one.
        let periods = hs == HistoryStorage::HistoryTable;
        let def = versioned_def(def, self.by_trx_id, !periods)?;
        let names = history_relation_names(hs, self.parts.count, &def.name);
        for (i, name) in names.into_iter().enumerate() {
            // A history partition: the same columns and keys, a relation of its own
            // (MariaDB ha_partition's history partitions). The history table: the same
            // columns, no key and no index (the periods extension's
            // `periods.add_system_versioning`: `CREATE TABLE t_history (LIKE t)`, which
            // copies columns and NOT NULL only, and the notice "be sure to index it
            // properly").
            let mut hist = def.clone();
            hist.name = name;
            if periods {
                hist.primary_key.clear();
                hist.indexes.clear();
                hist.foreign_keys.clear();
            }
            for ix in &mut hist.indexes {
                ix.name = if i == 0 {
                    format!("{}_h", ix.name)
                } else {
                    format!("{}_h{i}", ix.name)
                };
            }
            self.am
                .tables()
                .create(hist, |id, def| self.am.create_table(id, def))?;
        }
        self.am
            .tables()
            .create(def, |id, def| self.am.create_table(id, def))
    }

    fn defer_secondary_indexes(&self, t: TableId) -> Result<()> {
        self.am.tables().defer_secondary_indexes(t)
    }

    fn build_secondary_indexes(&self, t: TableId) -> Result<u64> {
        self.am.build_secondary_indexes(&*self.table(t)?)
    }

    fn table_id(&self, name: &str) -> Result<TableId> {
        self.am.tables().id_of(name)
    }

    fn table_def(&self, t: TableId) -> Result<TableDef> {
        Ok(self.table(t)?.def().clone())
    }

    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn> {
        Box::new(DesignTxn {
            core: TxnCore::begin(self.am.transactions(), iso),
            am: self.am.clone(),
            state: A::TxnState::default(),
            cid: 0,
            versioning: self.versioning,
            parts: self.parts.clone(),
            trt_begin_us: None,
            partitions_touched: false,
            // BEGIN's time: xact.c `StartTransaction` sets xactStartTimestamp from the
            // first statement's start, which is BEGIN's in a transaction block.
            xact_start_us: (self.versioning == Some(HistoryStorage::HistoryTable))
                .then(system_time_now_us),
        })
    }

    fn gc(&self, t: TableId) -> Result<GcReport> {
        self.am.gc(&*self.table(t)?)
    }

    fn analyze(&self, t: TableId) -> Result<crate::access::AnalyzeReport> {
        self.am.analyze(&*self.table(t)?)
    }

    fn table_counters(&self, t: TableId) -> Result<TableStats> {
        Ok(self.table(t)?.counters().snapshot())
    }

    fn relations(&self, t: TableId) -> Result<TableRelations> {
        self.am.tables().relations(t)
    }

    fn row_versions(&self, t: TableId, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        self.am.row_versions(&*self.table(t)?, pk)
    }

    fn engine_counters(&self) -> EngineCounters {
        self.am.engine_counters()
    }

    fn shutdown(&self) {
        self.am.shutdown();
    }

    fn catalog(&self) -> CatalogSnapshot {
        CatalogSnapshot {
            layout: String::new(),
            tables: self.am.tables().catalog_tables(),
            undo_relation: self.am.undo_relation(),
            undo_file_space: self.am.undo_file_space(),
        }
    }

    fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)> {
        self.am.check_indexes(&*self.table(t)?)
    }

    fn finish_incomplete_splits(&self) -> Result<u64> {
        self.am.tables().finish_incomplete_splits()
    }

    fn incomplete_split_left(&self) -> bool {
        self.am.tables().incomplete_split_left()
    }

    fn ensure_dropped_partitions(&self) -> Result<bool> {
        self.create_missing(dropped_partitions_def())
    }

    fn ensure_transaction_registry(&self) -> Result<bool> {
        if !self.by_trx_id {
            return Ok(false);
        }
        self.create_missing(transaction_registry_def())
    }

    fn advance_past_commit_id(&self, commit_id: crate::mvcc::Xid) {
        self.am.transactions().advance_next_xid_past(commit_id);
    }
}

impl<A: TableAccessMethod> Drop for DesignEngine<A> {
    fn drop(&mut self) {
        self.am.shutdown();
    }
}

/// A transaction of a [`DesignEngine`].
struct DesignTxn<A: TableAccessMethod> {
    am: Arc<A>,
    core: TxnCore,
    state: A::TxnState,
    /// Command ids handed out (PostgreSQL's `currentCommandId`).
    cid: u32,
    /// Tables are system-versioned ([`super::versioning`]), with history where it says.
    versioning: Option<HistoryStorage>,
    /// The engine's history partitions.
    parts: Partitioning,
    /// A statement wrote history into a partition, deleted history or dropped a
    /// partition: a rollback makes the partitions' row counts unknown, and any end the
    /// dropped set.
    partitions_touched: bool,
    /// Set at the first change of a table versioned by transaction id (the begin_timestamp
    /// of its transaction_registry row): the commit then writes that row.
    trt_begin_us: Option<i64>,
    /// The transaction's start in µs since 2000-01-01, the row_start / row_end its
    /// statements write when history is kept in a history table (the periods extension
    /// stamps rows with `transaction_timestamp()`, periods.c `TRANSACTION_TSTZ` =
    /// `GetCurrentTransactionStartTimestamp()`); `None` otherwise.
    xact_start_us: Option<i64>,
}

/// The relations that hold table `def`'s history under `hs`, in partition order, with
/// their ids: dropped history partitions ([`DROPPED_PARTITIONS`], read with statement
/// `st` when the engine does not know them yet) and relations missing from the catalog
/// are left out.
///
/// Errors: the catalog's and the access method's.
#[allow(clippy::type_complexity)]
fn history_relations<A: TableAccessMethod>(
    am: &A,
    parts: &Partitioning,
    hs: HistoryStorage,
    def: &TableDef,
    st: &Statement<'_>,
) -> Result<(Vec<Arc<A::Table>>, Vec<TableId>)> {
    let names = history_relation_names(hs, parts.count, &def.name);
    let mut rels = Vec::with_capacity(names.len());
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        let Ok(id) = am.tables().id_of(&name) else {
            continue;
        };
        if parts.count > 1
            && parts.counts.is_dropped(&name, || {
                let mut set = std::collections::HashSet::new();
                if let Ok(d) = am.tables().id_of(DROPPED_PARTITIONS) {
                    am.tables().get(d)?.seq_scan_each(st, &mut |r| {
                        if let Value::Text(s) = &r[0] {
                            set.insert(s.to_string());
                        }
                        Ok(true)
                    })?;
                }
                Ok(set)
            })?
        {
            continue;
        }
        rels.push(am.tables().get(id)?);
        ids.push(id);
    }
    Ok((rels, ids))
}

/// The rows of relation `rel` that statement `st` sees (a history partition's count when
/// the engine does not know it; InnoDB's `stat_n_rows`).
///
/// Errors: the access method's.
fn count_rows<T: TableRead>(rel: &T, st: &Statement<'_>) -> Result<u64> {
    let mut n = 0u64;
    rel.seq_scan_each(st, &mut |_| {
        n += 1;
        Ok(true)
    })?;
    Ok(n)
}

/// The error of a `FOR SYSTEM_TIME` read or `DELETE HISTORY` on a plain table (MariaDB
/// ER_VERS_NOT_VERSIONED, "Table `t` is not system-versioned").
fn not_versioned<T: Catalogued>(tb: &T) -> crate::error::Error {
    crate::error::Error::Catalog(format!(
        "table {} is not system-versioned (design switch system_versioning=off)",
        tb.def().name
    ))
}

impl<A: TableAccessMethod> DesignTxn<A> {
    /// Runs one statement under `cause` with the statement's snapshot or read view
    /// (`TxnCore::statement`: per statement at read committed, per transaction at repeatable
    /// read), assigning an xid first when it `writes`, and the next command id.
    fn stmt<T>(
        &mut self,
        cause: Cause,
        t: TableId,
        writes: bool,
        f: impl FnOnce(&A::Table, &Statement<'_>, &mut A::TxnState) -> Result<T>,
    ) -> Result<T> {
        self.core.check_open()?;
        let _c = enter(cause);
        let am: &A = &self.am;
        let table = am.tables().get(t)?;
        let tm = am.transactions();
        let (xid, snapshot) = self.core.statement(tm, writes);
        self.cid += 1;
        let st = Statement {
            tm,
            xid,
            snapshot: &snapshot,
            cid: self.cid,
            isolation: self.core.isolation(),
        };
        let r = f(&table, &st, &mut self.state);
        self.core.end_statement(tm);
        r
    }

    /// [`DesignTxn::stmt`] with the table's system-versioning view: `Some` when the engine
    /// versions tables and the table has a period, with its separate history relation
    /// (`history_storage` partition or history_table) when there is one.
    fn vstmt<T>(
        &mut self,
        cause: Cause,
        t: TableId,
        writes: bool,
        f: impl FnOnce(
            &A::Table,
            Option<&Versioned<'_, A::Table>>,
            &Statement<'_>,
            &mut A::TxnState,
        ) -> Result<T>,
    ) -> Result<T> {
        let vs = self.versioning;
        let xact_start = self.xact_start_us;
        let am = self.am.clone();
        let parts = self.parts.clone();
        let mut trx_versioned = false;
        let mut wrote_partition = false;
        let r = self.stmt(cause, t, writes, |tb, st, state| {
            let (Some(hs), Some(period)) = (vs, Period::of(tb.def())) else {
                return f(tb, None, st, state);
            };
            trx_versioned = period.by_trx_id();
            let registry = if trx_versioned {
                Some(am.tables().get(am.tables().id_of(TRANSACTION_REGISTRY)?)?)
            } else {
                None
            };
            let (history, ids) = history_relations(&*am, &parts, hs, tb.def(), st)?;
            // The statement's time: its rows' row_start / row_end, and its start for
            // INTERVAL (MariaDB's thd->query_start()); the transaction's start with a
            // history table (periods' transaction_timestamp()).
            let now = match (hs, xact_start) {
                (HistoryStorage::HistoryTable, Some(t)) => t,
                _ => system_time_now_us(),
            };
            // The working history partition, by LIMIT or by INTERVAL, for a statement
            // that may write history (partition_info::vers_set_hist_part).
            let mut hist_part = 0;
            if writes && hs == HistoryStorage::Partition && parts.limit > 0 && ids.len() > 1 {
                let mut records = Vec::with_capacity(ids.len());
                for (h, &id) in history.iter().zip(&ids) {
                    records.push(parts.counts.rows(id, || count_rows(&**h, st))?);
                }
                hist_part = vers_set_hist_part(&records, parts.limit);
            } else if writes && hs == HistoryStorage::Partition && parts.interval_s > 0 {
                let (names, _) = partition_names(parts.count);
                let table = &tb.def().name;
                let ends: Vec<i64> = history
                    .iter()
                    .map(|h| {
                        let k = names
                            .iter()
                            .position(|p| h.def().name == format!("{table}#{p}"))
                            .unwrap_or(0);
                        interval_partition_end_unix_s(parts.starts_unix_s, parts.interval_s, k)
                    })
                    .collect();
                let start_unix_s = now.div_euclid(USECS_PER_SEC) + PG_EPOCH_UNIX_SECS;
                hist_part = vers_set_hist_part_by_interval(&ends, start_unix_s);
            }
            let refs: Vec<&A::Table> = history.iter().map(|h| &**h).collect();
            let mut v = Versioned::new(tb, refs, hist_part, registry.as_deref(), period, st, now);
            v.periods = hs == HistoryStorage::HistoryTable;
            let r = f(tb, Some(&v), st, state);
            let n = v.hist_written.get();
            if hs == HistoryStorage::Partition && n > 0 {
                parts.counts.add(ids[hist_part], n);
                wrote_partition = true;
            }
            r
        });
        self.partitions_touched |= wrote_partition;
        if r.is_ok() && writes && trx_versioned && self.trt_begin_us.is_none() {
            self.trt_begin_us = Some(system_time_now_us());
        }
        r
    }

    /// The commit's `mysql.transaction_registry` row, in the committing transaction: its id,
    /// a commit id and commit timestamp, begin timestamp and isolation level (sql/handler.cc
    /// `TR_table::update`, which MariaDB runs from `ha_commit_trans` for a transaction that
    /// changed a table versioned by transaction id). The commit id is a fresh value of the
    /// transaction id sequence, as MariaDB 10.11 takes it just before writing the row
    /// (storage/innobase/handler/ha_innodb.cc `innodb_prepare_commit_versioned`:
    /// `trx_sys.get_new_trx_id()`): larger than the transaction's own id and than every id
    /// handed out before, smaller than every id handed out after, so commit ids order as
    /// commits take them. InnoDB then takes one more id for the serialisation number
    /// `trx->no` (trx0trx.cc `trx_serialise`); the innodb preset numbers `trx->no` on a
    /// counter of its own, so on MariaDB the next transaction's id is the commit id + 2
    /// and here + 1. The commit timestamp is read after the id, as `TR_table::update`
    /// sets it (`thd->set_time()`).
    fn write_transaction_registry(&mut self, begin_us: i64) -> Result<()> {
        let am = self.am.clone();
        let reg = am.tables().id_of(TRANSACTION_REGISTRY)?;
        let iso = i8::from(self.core.isolation() != Isolation::ReadCommitted);
        self.stmt(Cause::Commit, reg, true, |tb, st, state| {
            let commit_id = am.transactions().new_trx_id();
            let commit = system_time_now_us();
            tb.insert(
                st,
                state,
                vec![
                    Value::BigInt(st.xid as i64),
                    Value::BigInt(commit_id as i64),
                    Value::Timestamp(begin_us),
                    Value::Timestamp(commit),
                    Value::TinyInt(iso),
                ],
            )
        })
    }

    /// Ends the transaction under cause `commit` or `abort`: the access method's commit or
    /// rollback, then each changed table's end-of-transaction counts.
    fn end(&mut self, commit: bool) -> Result<()> {
        if self.core.is_ended() {
            return Ok(());
        }
        if let (true, Some(begin)) = (commit, self.trt_begin_us.take()) {
            if let Err(e) = self.write_transaction_registry(begin) {
                let _ = self.end(false);
                return Err(e);
            }
        }
        let _c = enter(if commit { Cause::Commit } else { Cause::Abort });
        let XactEnd {
            result,
            committed,
            changes,
        } = self.am.end_xact(&mut self.core, &mut self.state, commit);
        if std::mem::take(&mut self.partitions_touched) {
            if !committed {
                self.parts.counts.forget_counts();
            }
            self.parts.counts.forget_dropped();
        }
        for (t, (ins, upd, del)) in changes {
            if let Ok(table) = self.am.tables().get(t) {
                table.counters().end_of_xact(committed, ins, upd, del);
            }
        }
        result
    }
}

impl<A: TableAccessMethod> EngineTxn for DesignTxn<A> {
    fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.vstmt(Cause::PointSelect, t, false, |tb, v, st, _| match v {
            Some(v) => Ok(v.get(pk, SystemTime::Current)?.pop()),
            None => tb.get(st, pk),
        })
    }

    fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.vstmt(Cause::PointSelect, t, false, |tb, v, st, _| match v {
            Some(v) => v.get_by_index(index, key, SystemTime::Current),
            None => tb.get_by_index(st, index, key),
        })
    }

    fn scan_columns(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        proj: &Projection,
    ) -> Result<Vec<Row>> {
        self.vstmt(Cause::RangeScan, t, false, |tb, v, st, _| {
            proj.check_width(&tb.def().name, tb.def().columns.len())?;
            match v {
                Some(v) => {
                    let mut rows = v.scan(lo, hi, dir, limit, SystemTime::Current)?;
                    rows.iter_mut().for_each(|r| proj.mask(r));
                    Ok(rows)
                }
                None => tb.scan_columns(st, lo, hi, dir, limit, proj),
            }
        })
    }

    fn seq_scan(
        &mut self,
        t: TableId,
        proj: &Projection,
        f: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.vstmt(Cause::SeqScan, t, false, |tb, v, st, _| {
            proj.check_width(&tb.def().name, tb.def().columns.len())?;
            match v {
                Some(v) => {
                    let rows = v.scan(
                        Bound::Unbounded,
                        Bound::Unbounded,
                        ScanDirection::Forward,
                        usize::MAX,
                        SystemTime::Current,
                    )?;
                    for mut r in rows {
                        proj.mask(&mut r);
                        if !f(r)? {
                            break;
                        }
                    }
                    Ok(())
                }
                None => tb.seq_scan_columns(st, proj, f),
            }
        })
    }

    fn insert(&mut self, t: TableId, row: Row) -> Result<()> {
        self.vstmt(Cause::Insert, t, true, |tb, v, st, state| match v {
            Some(v) => v.insert(state, row, v.now_us),
            None => tb.insert(st, state, row),
        })?;
        self.core.count(t, 1, 0, 0);
        Ok(())
    }

    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        let done = self.vstmt(Cause::Update, t, true, |tb, v, st, state| match v {
            Some(v) => v.update(state, pk, set, v.now_us),
            None => tb.update(st, state, pk, set),
        })?;
        if done {
            self.core.count(t, 0, 1, 0);
        }
        Ok(done)
    }

    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        let done = self.vstmt(Cause::Delete, t, true, |tb, v, st, state| match v {
            Some(v) => v.delete(state, pk, v.now_us),
            None => tb.delete(st, state, pk),
        })?;
        if done {
            self.core.count(t, 0, 0, 1);
        }
        Ok(done)
    }

    fn get_for_update(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        // A locking read takes an xid (PostgreSQL: the lock is the xid in xmax; InnoDB:
        // row0sel.cc starts a locking read's transaction read-write).
        self.vstmt(Cause::PointSelect, t, true, |tb, v, st, state| match v {
            Some(_) => Err(crate::error::Error::Catalog(format!(
                "table {}: SELECT ... FOR UPDATE on a system-versioned table is not modelled",
                tb.def().name
            ))),
            None => tb.lock_row(st, state, pk),
        })
    }

    fn get_system_time(&mut self, t: TableId, pk: &[Value], when: SystemTime) -> Result<Vec<Row>> {
        self.vstmt(Cause::PointSelect, t, false, |tb, v, _, _| {
            v.ok_or_else(|| not_versioned(tb))?.get(pk, when)
        })
    }

    fn get_by_index_system_time(
        &mut self,
        t: TableId,
        index: usize,
        key: &[Value],
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        self.vstmt(Cause::PointSelect, t, false, |tb, v, _, _| {
            v.ok_or_else(|| not_versioned(tb))?
                .get_by_index(index, key, when)
        })
    }

    fn scan_system_time(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        self.vstmt(Cause::RangeScan, t, false, |tb, v, _, _| {
            v.ok_or_else(|| not_versioned(tb))?
                .scan(lo, hi, dir, limit, when)
        })
    }

    fn delete_history(&mut self, t: TableId, before: i64) -> Result<u64> {
        let n = self.vstmt(Cause::Delete, t, true, |tb, v, _, state| {
            v.ok_or_else(|| not_versioned(tb))?
                .delete_history(state, before)
        })?;
        self.core.count(t, 0, 0, n);
        self.parts.counts.forget_counts();
        self.partitions_touched = true;
        Ok(n)
    }

    fn drop_history_partition(&mut self, t: TableId, partition: &str) -> Result<u64> {
        use crate::error::Error;
        let am = self.am.clone();
        let parts = self.parts.clone();
        let partitioned = self.versioning == Some(HistoryStorage::Partition);
        let dropped_id = am.tables().id_of(DROPPED_PARTITIONS)?;
        let n = self.stmt(Cause::Ddl, t, true, |tb, st, state| {
            let def = tb.def();
            if !partitioned || Period::of(def).is_none() {
                // MariaDB ER_PARTITION_MGMT_ON_NONPARTITIONED.
                return Err(Error::Catalog(format!(
                    "table {}: DROP PARTITION needs a table partitioned BY SYSTEM_TIME \
                     (system_versioning with history_storage=partition)",
                    def.name
                )));
            }
            let (hist, cur) = partition_names(parts.count);
            let wrong_parts = || {
                // ER_VERS_WRONG_PARTS (sql/sql_partition.cc prep_alter_part_table).
                Error::Catalog(format!(
                    "table {}: cannot drop partition {partition}: wrong partitions for `{}`: \
                     must have at least one HISTORY and exactly one last CURRENT",
                    def.name, def.name
                ))
            };
            if partition == cur {
                return Err(wrong_parts());
            }
            let not_there = || {
                // ER_DROP_PARTITION_NON_EXISTENT.
                Error::Catalog(format!(
                    "table {}: error in list of partitions to DROP: no history partition \
                     {partition} (partitions: {}, current {cur})",
                    def.name,
                    hist.join(", ")
                ))
            };
            if !hist.iter().any(|h| h == partition) {
                return Err(not_there());
            }
            let rel_name = format!("{}#{partition}", def.name);
            let (live, ids) = history_relations(&*am, &parts, HistoryStorage::Partition, def, st)?;
            let Some(pos) = live.iter().position(|h| h.def().name == rel_name) else {
                return Err(not_there());
            };
            if live.len() == 1 {
                return Err(wrong_parts());
            }
            if parts.interval_s > 0 && pos > 0 {
                // ER_VERS_DROP_PARTITION_INTERVAL (sql/sql_partition.cc
                // prep_alter_part_table: a dropped partition must come before every kept one).
                return Err(Error::Catalog(format!(
                    "table {}: cannot drop partition {partition}: can only drop the oldest \
                     history partitions when rotating by INTERVAL",
                    def.name
                )));
            }
            let rel = &live[pos];
            let _ = ids;
            // The partition's rows, then the record of the drop, in this transaction.
            let pk = &rel.def().primary_key;
            let mut keys = Vec::new();
            rel.seq_scan_each(st, &mut |r| {
                keys.push(pk.iter().map(|&c| r[c].clone()).collect::<Vec<Value>>());
                Ok(true)
            })?;
            let mut n = 0;
            for k in keys {
                if rel.delete(st, state, &k)? {
                    n += 1;
                }
            }
            am.tables()
                .get(dropped_id)?
                .insert(st, state, vec![Value::text(&rel_name)])?;
            Ok(n)
        })?;
        self.parts.counts.forget_counts();
        self.partitions_touched = true;
        Ok(n)
    }

    fn commit(&mut self) -> Result<()> {
        self.end(true)
    }

    fn abort(&mut self) -> Result<()> {
        self.end(false)
    }
}

impl<A: TableAccessMethod> Drop for DesignTxn<A> {
    fn drop(&mut self) {
        let _ = self.end(false);
    }
}
