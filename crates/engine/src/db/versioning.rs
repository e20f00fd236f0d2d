//! System-versioned tables (SQL:2011 `WITH SYSTEM VERSIONING`), as MariaDB 10.11 builds
//! them above the storage engine, written once over the table access method traits so that
//! both designs keep history in the table itself (`history_storage=same_index`) — and, for
//! the heap design, as PostgreSQL's periods extension keeps it in a history table
//! (`history_storage=history_table`, below).
//!
//! What is modelled, and from where:
//! - The table gets two columns, `row_start` and `row_end` TIMESTAMP(6) NOT NULL, after
//!   the declared ones (MariaDB's implicit system fields, sql/handler.cc
//!   `Vers_parse_info::fix_implicit`), and `row_end` is appended to the primary key and to
//!   every unique index (sql/handler.cc `Vers_parse_info::check_sys_fields` /
//!   `add_versioning_info`: "Adding ROW END to every unique key"), so that a key's current
//!   row (`row_end` = [`ROW_END_MAX_US`], '2038-01-19 03:14:07.999999') and its history
//!   rows never collide.
//! - INSERT stores `row_start` = the statement's time, `row_end` = max
//!   (sql/table.cc `TABLE::vers_update_fields`).
//! - UPDATE changes the current row in place with `row_start` = the statement's time, then
//!   writes the old row with `row_end` = the statement's time as a new history row — unless
//!   its `row_start` is not before that time (sql/sql_update.cc `mysql_update` →
//!   sql/sql_insert.cc `vers_insert_history_row`, whose `row_start >= row_end` check skips
//!   it).
//! - DELETE of a current row is an update of its `row_end` to the statement's time
//!   (sql/sql_delete.cc `TABLE::delete_row`: `vers_update_end` then `ha_update_row`);
//!   because `row_end` is in the primary key, InnoDB runs that update as delete-mark plus
//!   insert of the new clustered record (row0upd.cc `row_upd_clust_rec_by_insert`), which is
//!   what this module does through the traits (delete, then insert of the history row).
//!   DELETE of a history row removes it (the same function's `ha_delete_row` branch);
//!   `DELETE HISTORY BEFORE t` removes the history rows with `row_end < t` (sql/sql_select.cc
//!   `vers_setup_conds`, `SYSTEM_TIME_BEFORE`).
//! - Reads: a current read sees rows with `row_end` = max; `FOR SYSTEM_TIME AS OF t` rows
//!   with `row_start <= t < row_end`; `BETWEEN t1 AND t2` with `row_start <= t2` and
//!   `row_end > t1`; `FROM t1 TO t2` with `row_start < t2` and `row_end > t1`; `ALL` every
//!   row (sql/sql_select.cc `vers_setup_conds`). Every version the read passes is a version
//!   examined: range reads of the current rows step over the history rows between them,
//!   the cost seed 003 saw grow with history.
//!
//! Times are microseconds since 2000-01-01 (the unit of [`Value::Timestamp`]) from one
//! process-wide clock that never repeats a value ([`system_time_now_us`]): a statement
//! takes one time for all its rows, as MariaDB's `thd->query_start()`; like MariaDB's
//! timestamp versioning, that is the statement's time, not its transaction's commit time
//! (with `history_table`, the transaction's start, as the periods extension stamps rows).
//!
//! History elsewhere (`history_storage`): `partition` keeps history rows in a second relation
//! with the same columns and keys (MariaDB `PARTITION BY SYSTEM_TIME`: the current
//! partition and a history partition, each with its own indexes; ha_partition routes a row
//! by `row_end`). Then an UPDATE's history row and a DELETE's row go there, current reads
//! never see history, and reads `FOR SYSTEM_TIME` read both relations.
//!
//! `history_table` follows PostgreSQL's periods extension 1.2 instead of MariaDB
//! ([`Versioned`]'s `periods`; periods--1.2.sql `add_system_time_period`,
//! `add_system_versioning`; periods.c `generated_always_as_row_start_end`, `write_history`):
//! 1. Every row a transaction writes gets the transaction's start as its time
//!    (`transaction_timestamp()`, `GetCurrentTransactionStartTimestamp`), not the
//!    statement's; the engine takes it when the transaction begins.
//! 2. The keys stay as declared: `row_end` is not appended ([`versioned_def`] without
//!    `end_in_keys`), since the table holds only current rows.
//! 3. The history table `t_history` is created `LIKE t`: the columns, no primary key, no
//!    index. Reads `FOR SYSTEM_TIME` read it whole and filter (the `t_with_history` view's
//!    UNION ALL over an unindexed table), then merge with the table's rows in (key,
//!    `row_end`) order.
//! 4. UPDATE and DELETE write the old row with `row_end` = the transaction's start into
//!    `t_history` — unless its `row_start` is that start (a row this transaction wrote: no
//!    history row), and failing with "invalid row version" (SQLSTATE 2201H) when its
//!    `row_start` is later (a row of a transaction that began after this one, seen at read
//!    committed).
//! 5. There is no DELETE HISTORY (refused) and no versioning by transaction id (the
//!    design refuses `system_versioning=trx_id` with it).
//!
//! Versioning by transaction id (`system_versioning=trx_id`, MariaDB `VERS_TRX_ID`):
//! `row_start`/`row_end` are BIGINT transaction ids (the writer's xid; a current row's
//! `row_end` is [`TRX_ID_MAX`]), and every transaction that changed such a table writes its
//! row of `transaction_registry` ([`transaction_registry_def`]) as it commits. A read `FOR
//! SYSTEM_TIME AS OF TIMESTAMP t` finds the last commit at or before `t` there and sees the
//! rows whose inserting transaction committed by then and whose ending one did not
//! ([`Versioned`]'s `sees`), looking up each version's transactions in the registry.
//! `AS OF TRANSACTION n` sees what `n` saw as it committed, its own changes included.
//! Both judge by commit order. MariaDB judges by comparing ids of one sequence
//! (sql/table.cc `TR_table::query_sees`: transaction 1 sees transaction 0 when its id is
//! larger than 0's commit_id, both from `trx_sys.get_new_trx_id()`), and `AS OF TIMESTAMP
//! t` takes the *transaction id* of the last commit at or before `t`; the two agree for
//! transactions that did not overlap, and differ for overlapping ones (a transaction
//! that began before another committed does not see it there, though it committed
//! later). The commit_id is, as on MariaDB, a value of the transaction id sequence
//! taken at the commit (ha_innodb.cc `innodb_prepare_commit_versioned`; the engine's
//! `write_transaction_registry`), so that comparison could be made; `sees` still judges
//! by commit order (not built: `query_sees`'s rule for overlapping transactions).
//!
//! Several history partitions, their rotation by LIMIT and DROP PARTITION:
//! [`super::history_partitions`]. Not modelled yet: rotation by `INTERVAL`; `FOR SYSTEM_TIME` reads through a unique secondary index (refused, naming
//! it). An UPDATE or DELETE writes as its history row the version
//! its statement's snapshot read, which is the newest one unless a concurrent writer
//! changed the row meanwhile; begin_timestamp is taken at the transaction's first change
//! of a versioned table, not at its start.

use crate::access::{Assign, Statement, TableRead, TableWrite};
use crate::btree::ScanDirection;
use crate::catalog::{
    Column, ColumnType, Row, TableDef, Value, MARIADB_TIMESTAMP_MAX_UNIX_SECS,
    MARIADB_TIMESTAMP_MIN_UNIX_SECS, PG_EPOCH_UNIX_SECS, USECS_PER_SEC,
};
use crate::error::{Error, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};

/// Name of the period's start column (MariaDB's implicit `row_start`).
pub const ROW_START: &str = "row_start";
/// Name of the period's end column (MariaDB's implicit `row_end`).
pub const ROW_END: &str = "row_end";
/// `row_end` of a current row: '2038-01-19 03:14:07.999999' UTC, MariaDB 10.11's largest
/// TIMESTAMP(6) (`TIMESTAMP_MAX_VALUE` with `TIME_MAX_SECOND_PART`), in microseconds since
/// 2000-01-01.
pub const ROW_END_MAX_US: i64 =
    (MARIADB_TIMESTAMP_MAX_UNIX_SECS - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC + 999_999;
/// `row_end` of a current row of a table versioned by transaction id (MariaDB stores
/// `ULONGLONG_MAX` in a BIGINT UNSIGNED; mvcclab's BIGINT is signed, so its largest value).
pub const TRX_ID_MAX: i64 = i64::MAX;
/// The name of the transaction registry (MariaDB `mysql.transaction_registry`).
pub const TRANSACTION_REGISTRY: &str = "transaction_registry";

/// `mysql.transaction_registry` (MariaDB 10.11 scripts/mysql_system_tables.sql):
/// `transaction_id` BIGINT PRIMARY KEY, `commit_id` BIGINT UNIQUE, `begin_timestamp` and
/// `commit_timestamp` TIMESTAMP(6) (indexed, the latter with `transaction_id`),
/// `isolation_level` (an ENUM there; here TINYINT 0 read committed, 1 repeatable read).
pub fn transaction_registry_def() -> TableDef {
    use crate::catalog::IndexDef;
    TableDef {
        name: TRANSACTION_REGISTRY.into(),
        columns: vec![
            Column::not_null("transaction_id", ColumnType::BigInt),
            Column::not_null("commit_id", ColumnType::BigInt),
            Column::not_null("begin_timestamp", ColumnType::Timestamp6),
            Column::not_null("commit_timestamp", ColumnType::Timestamp6),
            Column::not_null("isolation_level", ColumnType::TinyInt),
        ],
        primary_key: vec![0],
        indexes: vec![
            IndexDef {
                name: "commit_id".into(),
                columns: vec![1],
                unique: true,
            },
            IndexDef {
                name: "begin_timestamp".into(),
                columns: vec![2],
                unique: false,
            },
            IndexDef {
                name: "commit_timestamp".into(),
                columns: vec![3, 0],
                unique: false,
            },
        ],
        foreign_keys: Vec::new(),
    }
}

/// The smallest TIMESTAMP(6), '1970-01-01 00:00:01' UTC (a key bound below every `row_end`).
const ROW_END_MIN_US: i64 = (MARIADB_TIMESTAMP_MIN_UNIX_SECS - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC;

/// Which rows of a system-versioned table a read sees (SQL:2011 `FOR SYSTEM_TIME`), with
/// times in microseconds since 2000-01-01.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemTime {
    /// The current rows (no `FOR SYSTEM_TIME` clause).
    Current,
    /// `AS OF t`: `row_start <= t < row_end`.
    AsOf(i64),
    /// `BETWEEN t1 AND t2`: `row_start <= t2` and `row_end > t1`.
    Between(i64, i64),
    /// `FROM t1 TO t2`: `row_start < t2` and `row_end > t1`.
    FromTo(i64, i64),
    /// `ALL`: every row, current and history.
    All,
    /// `AS OF TRANSACTION n` (a table versioned by transaction id only): the rows
    /// transaction `n` saw as it committed, its own changes included — those whose
    /// inserting transaction is `n` or committed before it, and whose ending one is
    /// neither (sql/sql_select.cc `vers_setup_conds`: `TRT_TRX_SEES_EQ(n, row_start)` and
    /// `TRT_TRX_SEES(row_end, n)`, sql/item_vers.cc).
    AsOfTransaction(i64),
}

impl SystemTime {
    /// Whether a row with period `[start, end)` of a table versioned by timestamp is seen
    /// (`AsOfTransaction`: never; it needs the transaction registry, `Versioned`'s `sees`).
    pub fn sees(self, start: i64, end: i64) -> bool {
        match self {
            SystemTime::AsOfTransaction(_) => false,
            SystemTime::Current => end == ROW_END_MAX_US,
            SystemTime::AsOf(t) => start <= t && end > t,
            SystemTime::Between(a, b) => start <= b && end > a,
            SystemTime::FromTo(a, b) => start < b && end > a,
            SystemTime::All => true,
        }
    }
}

static CLOCK_US: AtomicI64 = AtomicI64::new(0);

/// The next system time: the wall clock in microseconds since 2000-01-01, but always larger
/// than every value returned before in this process (so statements and the times a test
/// takes between them are strictly ordered, as MariaDB's statement times are in practice).
pub fn system_time_now_us() -> i64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
        - PG_EPOCH_UNIX_SECS * USECS_PER_SEC;
    let mut prev = CLOCK_US.load(Ordering::Relaxed);
    loop {
        let next = wall.max(prev + 1);
        match CLOCK_US.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

/// The definition of `def` made system-versioned: `row_start` and `row_end` NOT NULL
/// appended (TIMESTAMP(6), or BIGINT transaction ids for `trx_id`), and, when
/// `end_in_keys`, `row_end` appended to the primary key (if any) and to every unique index
/// (MariaDB's "Adding ROW END to every unique key"; history in the same index or a
/// partition). Without `end_in_keys` the keys stay the declared ones, as the periods
/// extension leaves them (`periods.add_system_time_period` only adds the two columns; its
/// history rows go to a table of their own, `history_storage=history_table`).
///
/// Errors: [`Error::Catalog`] when `def` already has a column named `row_start` or
/// `row_end` (MariaDB: "Duplicate column name").
pub fn versioned_def(mut def: TableDef, by_trx_id: bool, end_in_keys: bool) -> Result<TableDef> {
    let ty = if by_trx_id {
        ColumnType::BigInt
    } else {
        ColumnType::Timestamp6
    };
    for name in [ROW_START, ROW_END] {
        if def
            .columns
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(name))
        {
            return Err(Error::Catalog(format!(
                "table {}: column {name} is the system-versioning period's own column; \
                 rename the declared one",
                def.name
            )));
        }
    }
    let end = def.columns.len() + 1;
    def.columns.push(Column::not_null(ROW_START, ty));
    def.columns.push(Column::not_null(ROW_END, ty));
    if !end_in_keys {
        return Ok(def);
    }
    if !def.primary_key.is_empty() {
        def.primary_key.push(end);
    }
    for ix in def.indexes.iter_mut().filter(|ix| ix.unique) {
        ix.columns.push(end);
    }
    Ok(def)
}

/// The period of a system-versioned table's definition ([`versioned_def`]'s shape).
#[derive(Clone, Copy, Debug)]
pub struct Period {
    /// Position of `row_start`.
    start: usize,
    /// Position of `row_end`.
    end: usize,
    /// Versioned by transaction id (BIGINT columns) rather than by timestamp.
    trx: bool,
    /// `row_end` ends the primary key and every unique index ([`versioned_def`] with
    /// `end_in_keys`); false for a periods-style table whose keys are the declared ones.
    end_in_key: bool,
}

impl Period {
    /// The period of `def`, if it has [`versioned_def`]'s shape (the last two columns
    /// `row_start`, `row_end`, both TIMESTAMP(6) or both BIGINT); `row_end` is taken to be
    /// in the keys when it ends the primary key or a unique index.
    pub fn of(def: &TableDef) -> Option<Period> {
        let n = def.columns.len();
        if n < 3 {
            return None;
        }
        let (s, e) = (&def.columns[n - 2], &def.columns[n - 1]);
        (s.name == ROW_START
            && e.name == ROW_END
            && s.ty == e.ty
            && matches!(s.ty, ColumnType::Timestamp6 | ColumnType::BigInt))
        .then_some(Period {
            start: n - 2,
            end: n - 1,
            trx: s.ty == ColumnType::BigInt,
            end_in_key: def.primary_key.last() == Some(&(n - 1))
                || def
                    .indexes
                    .iter()
                    .any(|ix| ix.unique && ix.columns.last() == Some(&(n - 1))),
        })
    }

    /// Whether the period holds transaction ids.
    pub fn by_trx_id(&self) -> bool {
        self.trx
    }

    /// `row_end` of a current row.
    fn max(&self) -> i64 {
        if self.trx {
            TRX_ID_MAX
        } else {
            ROW_END_MAX_US
        }
    }

    /// A key bound below every `row_end`.
    fn min(&self) -> i64 {
        if self.trx {
            i64::MIN
        } else {
            ROW_END_MIN_US
        }
    }

    /// A period value.
    fn value(&self, v: i64) -> Value {
        if self.trx {
            Value::BigInt(v)
        } else {
            Value::Timestamp(v)
        }
    }

    fn times(&self, row: &Row) -> Result<(i64, i64)> {
        match (&row[self.start], &row[self.end]) {
            (Value::Timestamp(s), Value::Timestamp(e)) | (Value::BigInt(s), Value::BigInt(e)) => {
                Ok((*s, *e))
            }
            _ => Err(Error::corrupted("system-versioned row without its period")),
        }
    }

    /// Whether `row_end` ends the primary key and the unique indexes.
    pub fn end_in_key(&self) -> bool {
        self.end_in_key
    }

    fn user_pk<'a>(&self, def: &TableDef, pk: &'a [Value]) -> Result<&'a [Value]> {
        def.require_primary_key("a lookup by primary key")?;
        let declared = def.primary_key.len() - usize::from(self.end_in_key);
        if pk.len() != declared {
            return Err(Error::InvalidValue(format!(
                "table {}: primary key of {declared} columns given {} values (give the \
                 declared key; system versioning adds row_end itself)",
                def.name,
                pk.len()
            )));
        }
        Ok(pk)
    }

    /// The key of a row with declared key `pk` and `row_end` = `end`: `pk` itself when
    /// `row_end` is not in the keys.
    fn with_end(&self, pk: &[Value], end: i64) -> Vec<Value> {
        let mut k = pk.to_vec();
        if self.end_in_key {
            k.push(self.value(end));
        }
        k
    }
}

/// Where the system-versioned row operations run: a design's table, its separate history
/// relation if any, and the statement.
pub struct Versioned<'a, T> {
    /// The table (with the current rows, and the history rows when `history` is `None`).
    pub table: &'a T,
    /// The history partitions or the history table (`history_storage` partition or
    /// history_table; empty for same_index), in partition order, dropped partitions left
    /// out: history rows go to the working one (`hist_part`), current reads never look at
    /// them, reads `FOR SYSTEM_TIME` read them all with the table and merge in key order.
    pub history: Vec<&'a T>,
    /// The working history partition of this statement, an index into `history`
    /// ([`super::history_partitions::vers_set_hist_part`]).
    pub hist_part: usize,
    /// History rows this statement wrote into `history[hist_part]`.
    pub hist_written: std::cell::Cell<u64>,
    /// `mysql.transaction_registry`, for a table versioned by transaction id.
    pub registry: Option<&'a T>,
    /// Its period.
    pub period: Period,
    /// The statement.
    pub st: &'a Statement<'a>,
    /// Registry lookups of this statement (trx_id versioning).
    cache: RefCell<TrxCache>,
    /// The time in µs since 2000-01-01 the statement's rows get as row_start / row_end:
    /// the statement's own ([`system_time_now_us`], taken once, as MariaDB's
    /// `thd->query_start()`), or its transaction's start for a periods-style table
    /// (`periods`).
    pub now_us: i64,
    /// The periods extension's rules (`history_storage=history_table`; periods.c
    /// `write_history`): `now_us` is the transaction's start, and an UPDATE or DELETE of a
    /// row whose row_start is later than it fails with "invalid row version" instead of
    /// skipping the history row as MariaDB does.
    pub periods: bool,
}

/// What a statement looked up in the transaction registry: commit id and commit time by
/// transaction id, and the last commit id at or before a time.
#[derive(Default)]
struct TrxCache {
    commits: HashMap<i64, Option<(i64, i64)>>,
    commit_at: HashMap<(i64, bool), Option<i64>>,
}

impl<'a, T: TableRead + TableWrite + crate::access::Catalogued> Versioned<'a, T> {
    /// The view of `table` (with its `period`) for statement `st` at time `now_us`, its
    /// history relations (with the working one, `hist_part`) and the transaction registry
    /// when there are.
    pub fn new(
        table: &'a T,
        history: Vec<&'a T>,
        hist_part: usize,
        registry: Option<&'a T>,
        period: Period,
        st: &'a Statement<'a>,
        now_us: i64,
    ) -> Self {
        Versioned {
            now_us,
            periods: false,
            table,
            history,
            hist_part,
            hist_written: std::cell::Cell::new(0),
            registry,
            period,
            st,
            cache: RefCell::default(),
        }
    }

    fn def(&self) -> &TableDef {
        self.table.def()
    }

    /// The statement's period value: `now` (µs) for a timestamp period, the transaction's
    /// id for a trx_id period (InnoDB stores `trx->id` in row_start and in a history row's
    /// row_end; row0ins.cc / row0upd.cc with `vers_make_update`).
    fn stamp(&self, now: i64) -> i64 {
        if self.period.trx {
            self.st.xid as i64
        } else {
            now
        }
    }

    /// The registry row of transaction `trx`: (commit_id, commit_timestamp); `None` when
    /// it has not committed (as the statement sees the registry).
    fn commit_of(&self, trx: i64) -> Result<Option<(i64, i64)>> {
        if let Some(c) = self.cache.borrow().commits.get(&trx) {
            return Ok(*c);
        }
        let reg = self.registry()?;
        let c = match reg.get(self.st, &[Value::BigInt(trx)])? {
            Some(r) => match (&r[1], &r[3]) {
                (Value::BigInt(c), Value::Timestamp(t)) => Some((*c, *t)),
                _ => {
                    return Err(Error::corrupted(
                        "transaction_registry row of another shape",
                    ))
                }
            },
            None => None,
        };
        self.cache.borrow_mut().commits.insert(trx, c);
        Ok(c)
    }

    /// The largest commit_id whose commit_timestamp is at or before `t` (before `t` when
    /// `strict`): what `FOR SYSTEM_TIME AS OF TIMESTAMP t` means on a trx_id-versioned table
    /// (sql/handler.cc `TR_table::query`). Reads the whole registry (mvcclab's trait has no
    /// secondary-index range read; MariaDB uses its commit_timestamp index).
    fn commit_at(&self, t: i64, strict: bool) -> Result<Option<i64>> {
        if let Some(c) = self.cache.borrow().commit_at.get(&(t, strict)) {
            return Ok(*c);
        }
        let reg = self.registry()?;
        let mut best = None;
        for r in reg.scan(
            self.st,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
            usize::MAX,
        )? {
            if let (Value::BigInt(c), Value::Timestamp(ts)) = (&r[1], &r[3]) {
                if (*ts < t || (!strict && *ts == t)) && best.is_none_or(|b| *c > b) {
                    best = Some(*c);
                }
            }
        }
        self.cache.borrow_mut().commit_at.insert((t, strict), best);
        Ok(best)
    }

    fn registry(&self) -> Result<&'a T> {
        self.registry.ok_or_else(|| {
            Error::Catalog(format!(
                "table {} is versioned by transaction id but {TRANSACTION_REGISTRY} is missing",
                self.def().name
            ))
        })
    }

    /// Whether `FOR SYSTEM_TIME when` sees a row with period values `start`, `end`. For a
    /// trx_id period the times go through the registry: a row is seen as of commit C when
    /// its inserting transaction committed at or before C and its ending one did not
    /// (sql/sql_select.cc `vers_setup_conds` with `TRT_TRX_SEES`).
    fn sees(&self, when: SystemTime, start: i64, end: i64) -> Result<bool> {
        if !self.period.trx {
            if let SystemTime::AsOfTransaction(_) = when {
                // MariaDB: ER_VERS_ENGINE_UNSUPPORTED ("Transaction-precise system
                // versioned tables do not support AS OF TRANSACTION" for a timestamp period).
                return Err(Error::InvalidConfig(format!(
                    "table {}: FOR SYSTEM_TIME AS OF TRANSACTION needs a table versioned by \
                     transaction id (system_versioning=trx_id)",
                    self.def().name
                )));
            }
            return Ok(when.sees(start, end));
        }
        let (lo, hi) = match when {
            SystemTime::Current => return Ok(end == TRX_ID_MAX),
            SystemTime::All => return Ok(true),
            SystemTime::AsOf(t) => {
                let c = self.commit_at(t, false)?;
                (c, c)
            }
            SystemTime::Between(a, b) => (self.commit_at(a, false)?, self.commit_at(b, false)?),
            SystemTime::FromTo(a, b) => (self.commit_at(a, false)?, self.commit_at(b, true)?),
            SystemTime::AsOfTransaction(n) => {
                // Its own commit in commit order: a version started by `n` is seen, one
                // ended by `n` is not (the `accept_eq` of TRT_TRX_SEES_EQ / TRT_TRX_SEES).
                // A transaction not in the registry is an error, as MariaDB's
                // ER_VERS_NO_TRX_ID (sql/table.cc `TR_table::query`).
                let Some((c, _)) = self.commit_of(n)? else {
                    return Err(Error::InvalidValue(format!(
                        "FOR SYSTEM_TIME AS OF TRANSACTION {n}: transaction {n} is not in \
                         {TRANSACTION_REGISTRY}"
                    )));
                };
                (Some(c), Some(c))
            }
        };
        let Some(hi) = hi else { return Ok(false) };
        let started = matches!(self.commit_of(start)?, Some((c, _)) if c <= hi);
        let ended = end != TRX_ID_MAX
            && match (self.commit_of(end)?, lo) {
                (Some((c, _)), Some(lo)) => c <= lo,
                _ => false,
            };
        Ok(started && !ended)
    }

    /// Whether a history row's `row_end` is before `before` (µs): directly for a timestamp
    /// period, through the ending transaction's commit_timestamp for a trx_id one.
    fn ended_before(&self, end: i64, before: i64) -> Result<bool> {
        if !self.period.trx {
            return Ok(end < before);
        }
        Ok(matches!(self.commit_of(end)?, Some((_, t)) if t < before))
    }

    /// INSERT: the declared columns, with `row_start` = `now`, `row_end` = max.
    ///
    /// Errors: [`Error::InvalidValue`] for a row that is not the declared columns; as
    /// [`TableWrite::insert`] (a current row with the same key: duplicate key).
    pub fn insert(&self, state: &mut T::TxnState, mut row: Row, now: i64) -> Result<()> {
        if row.len() != self.period.start {
            return Err(Error::InvalidValue(format!(
                "table {}: a row of {} values for {} declared columns (row_start and row_end \
                 are GENERATED ALWAYS by system versioning)",
                self.def().name,
                row.len(),
                self.period.start
            )));
        }
        let now = self.stamp(now);
        row.push(self.period.value(now));
        row.push(self.period.value(self.period.max()));
        self.table.insert(self.st, state, row)
    }

    fn check_set(&self, set: &[Assign]) -> Result<()> {
        for a in set {
            let (Assign::Set(c, _) | Assign::Add(c, _) | Assign::AddDecimal(c, _)) = a;
            if *c >= self.period.start {
                return Err(Error::InvalidValue(format!(
                    "table {}: column #{c} is a system-versioning period column (GENERATED \
                     ALWAYS), which an UPDATE cannot set",
                    self.def().name
                )));
            }
        }
        Ok(())
    }

    /// UPDATE of the current row with declared key `pk`: the row changed in place with
    /// `row_start` = `now`, and the version read written back as a history row with
    /// `row_end` = `now` (`vers_insert_history_row`). False when there is no current row.
    ///
    /// Errors: [`Error::InvalidValue`] for a set of a period column or a key of the wrong
    /// shape; as [`TableWrite::update`] and [`TableWrite::insert`].
    pub fn update(
        &self,
        state: &mut T::TxnState,
        pk: &[Value],
        set: &[Assign],
        now: i64,
    ) -> Result<bool> {
        self.check_set(set)?;
        let key = self
            .period
            .with_end(self.period.user_pk(self.def(), pk)?, self.period.max());
        let Some(old) = self.table.get(self.st, &key)? else {
            return Ok(false);
        };
        let now = self.stamp(now);
        let mut set = set.to_vec();
        set.push(Assign::Set(self.period.start, self.period.value(now)));
        if !self.table.update(self.st, state, &key, &set)? {
            return Ok(false);
        }
        self.write_history(state, old, now)?;
        Ok(true)
    }

    /// DELETE of the current row with declared key `pk`: its `row_end` set to `now`, by
    /// delete plus insert of the history row as InnoDB runs an update of a primary-key
    /// column (`TABLE::delete_row`, `row_upd_clust_rec_by_insert`). False when there is no
    /// current row.
    ///
    /// Errors: as [`Versioned::update`].
    pub fn delete(&self, state: &mut T::TxnState, pk: &[Value], now: i64) -> Result<bool> {
        let key = self
            .period
            .with_end(self.period.user_pk(self.def(), pk)?, self.period.max());
        let Some(old) = self.table.get(self.st, &key)? else {
            return Ok(false);
        };
        if !self.table.delete(self.st, state, &key)? {
            return Ok(false);
        }
        let now = self.stamp(now);
        self.write_history(state, old, now)?;
        Ok(true)
    }

    /// `vers_insert_history_row`: `old` with `row_end` = `now` into the working history
    /// relation (the table itself for same_index), unless its `row_start` is not before
    /// `now`. With the periods extension's rules (`periods`; periods.c `write_history`):
    /// no history row when `row_start` = `now` (a row this transaction wrote: SQL:2016
    /// 15.13 GR 9)a)iii)2)), and an error when `row_start` is later (a row written by a
    /// transaction that started after this one and committed before this statement read
    /// it, possible at read committed: SQL:2016 15.13 GR 9)a)iii)1)).
    ///
    /// Errors: [`TxnError::InvalidRowVersion`](crate::mvcc::TxnError::InvalidRowVersion)
    /// in that case; as [`TableWrite::insert`].
    fn write_history(&self, state: &mut T::TxnState, mut old: Row, now: i64) -> Result<()> {
        let (start, _) = self.period.times(&old)?;
        if self.periods && start > now {
            return Err(Error::Txn(crate::mvcc::TxnError::InvalidRowVersion(
                format!(
                    "table {}: the row being updated or deleted was created after this \
                 transaction started",
                    self.def().name
                ),
            )));
        }
        if start < now {
            old[self.period.end] = self.period.value(now);
            match self.history.get(self.hist_part) {
                Some(h) => {
                    h.insert(self.st, state, old)?;
                    self.hist_written.set(self.hist_written.get() + 1);
                }
                None => self.table.insert(self.st, state, old)?,
            }
        }
        Ok(())
    }

    /// The relations a read `FOR SYSTEM_TIME when` looks at: the table, and the history
    /// relation unless `when` is the current rows.
    fn relations(&self, when: SystemTime) -> Vec<&'a T> {
        let mut v = vec![self.table];
        if when != SystemTime::Current {
            v.extend(self.history.iter().copied());
        }
        v
    }

    /// The rows with declared key `pk` that `when` sees (at most one for
    /// [`SystemTime::Current`] and [`SystemTime::AsOf`]), oldest first.
    ///
    /// Errors: as [`TableRead::get`].
    pub fn get(&self, pk: &[Value], when: SystemTime) -> Result<Vec<Row>> {
        let pk = self.period.user_pk(self.def(), pk)?;
        if when == SystemTime::Current {
            let key = self.period.with_end(pk, self.period.max());
            return Ok(self.table.get(self.st, &key)?.into_iter().collect());
        }
        self.scan(
            Bound::Included(pk),
            Bound::Included(pk),
            ScanDirection::Forward,
            usize::MAX,
            when,
        )
    }

    /// The rows whose secondary index `ix` key is `key` that `when` sees. On a unique index
    /// only [`SystemTime::Current`] (its key has `row_end` appended).
    ///
    /// Errors: [`Error::InvalidConfig`] for another read through a unique index; as
    /// [`TableRead::get_by_index`].
    pub fn get_by_index(&self, ix: usize, key: &[Value], when: SystemTime) -> Result<Vec<Row>> {
        let def = self.def();
        let unique = def.indexes.get(ix).is_some_and(|i| i.unique);
        if !self.period.end_in_key {
            // Keys as declared (periods): the table's index holds only current rows; a
            // history table without that index is read whole and filtered, as
            // PostgreSQL's plan over the `_with_history` view's UNION ALL does on a history
            // table created `LIKE` the table (no indexes).
            let cols = def
                .indexes
                .get(ix)
                .ok_or_else(|| Error::Catalog(format!("table {}: no index #{ix}", def.name)))?
                .columns
                .clone();
            let mut keep = Vec::new();
            for rel in self.relations(when) {
                let rows = if rel.def().indexes.len() > ix {
                    rel.get_by_index(self.st, ix, key)?
                } else {
                    self.seq_filter(rel, &|r: &Row| {
                        cols.iter().zip(key).all(|(&c, v)| &r[c] == v)
                    })?
                };
                for r in rows {
                    let (s, e) = self.period.times(&r)?;
                    if self.sees(when, s, e)? {
                        keep.push(r);
                    }
                }
            }
            return Ok(keep);
        }
        if unique {
            if when != SystemTime::Current {
                return Err(Error::InvalidConfig(format!(
                    "table {}: reads FOR SYSTEM_TIME through unique index #{ix} are not built \
                     yet (its key ends with row_end); read by primary key or a non-unique index",
                    def.name
                )));
            }
            let k = self.period.with_end(key, self.period.max());
            return self.table.get_by_index(self.st, ix, &k);
        }
        // The part of the FOR SYSTEM_TIME condition on row_end, which every secondary
        // entry carries (row_end is in the primary key): pushed down to the index, as
        // MariaDB's optimizer does (EXPLAIN shows `index_condition: row_end = TIMESTAMP
        // '2038-01-19 03:14:07.999999'` for a current read), so that history entries cost
        // no clustered look-up ([`TableRead::get_by_index_icp`]).
        let max = self.period.max();
        let trx = self.period.trx;
        let end_ok = move |end: i64| -> bool {
            match when {
                SystemTime::Current => end == max,
                SystemTime::AsOf(t) if !trx => end > t,
                SystemTime::Between(a, _) | SystemTime::FromTo(a, _) if !trx => end > a,
                _ => true,
            }
        };
        let period = self.period;
        let icp = move |pk: &[Value]| -> bool {
            match pk.last() {
                Some(v) => match (period.trx, v) {
                    (false, Value::Timestamp(e)) | (true, Value::BigInt(e)) => end_ok(*e),
                    _ => true,
                },
                None => true,
            }
        };
        let mut keep = Vec::new();
        for rel in self.relations(when) {
            for r in rel.get_by_index_icp(self.st, ix, key, &def.primary_key, &icp)? {
                let (s, e) = self.period.times(&r)?;
                if self.sees(when, s, e)? {
                    keep.push(r);
                }
            }
        }
        Ok(keep)
    }

    /// The rows with declared primary key in `lo..hi` that `when` sees, in `dir` order of
    /// (key, `row_end`), at most `limit`. Reads batches of `limit` versions and skips those
    /// `when` does not see; with a separate history relation, reads it too (unless `when`
    /// is the current rows) and merges.
    ///
    /// Errors: as [`TableRead::scan`].
    pub fn scan(
        &self,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        let rels = self.relations(when);
        if rels.len() == 1 {
            return self.scan_one(self.table, lo, hi, dir, limit, when);
        }
        let mut keyed = Vec::new();
        for rel in rels {
            for r in self.scan_one(rel, lo, hi, dir, limit, when)? {
                keyed.push((self.order_key(&r)?, r));
            }
        }
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        if dir == ScanDirection::Backward {
            keyed.reverse();
        }
        keyed.truncate(limit);
        Ok(keyed.into_iter().map(|(_, r)| r).collect())
    }

    /// [`Versioned::scan`] of one relation.
    #[allow(clippy::too_many_arguments)]
    fn scan_one(
        &self,
        rel: &T,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
        when: SystemTime,
    ) -> Result<Vec<Row>> {
        let def = self.def();
        let mut out = Vec::new();
        if !def.primary_key.is_empty() && rel.def().primary_key.is_empty() {
            // The periods extension's history table (`CREATE TABLE ... (LIKE t)`: no
            // primary key, no index): read whole, the rows in the bounds kept, then put in
            // (key, row_end) order in `dir`.
            let (lo_k, hi_k) = (self.bound_key(lo)?, self.bound_key(hi)?);
            let mut keyed = Vec::new();
            for r in self.seq_filter(rel, &|_| true)? {
                let k = self.order_key(&r)?;
                let above = match &lo_k {
                    Bound::Unbounded => true,
                    Bound::Included(b) => k.0 >= *b,
                    Bound::Excluded(b) => k.0 > *b,
                };
                let below = match &hi_k {
                    Bound::Unbounded => true,
                    Bound::Included(b) => k.0 <= *b,
                    Bound::Excluded(b) => k.0 < *b,
                };
                let (s, e) = self.period.times(&r)?;
                if above && below && self.sees(when, s, e)? {
                    keyed.push((k, r));
                }
            }
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            if dir == ScanDirection::Backward {
                keyed.reverse();
            }
            keyed.truncate(limit);
            return Ok(keyed.into_iter().map(|(_, r)| r).collect());
        }
        if def.primary_key.is_empty() {
            // Only the unbounded scan exists (TableRead::scan refuses bounds).
            for r in rel.scan(self.st, lo, hi, dir, usize::MAX)? {
                let (s, e) = self.period.times(&r)?;
                if self.sees(when, s, e)? {
                    out.push(r);
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            return Ok(out);
        }
        // A declared-key bound as a full-key bound: row_end sorts after the declared key,
        // so `>= k` starts at (k, min), `> k` after (k, max), `<= k` ends at (k, max),
        // `< k` before (k, min).
        let conv = |b: Bound<&[Value]>, low: bool| -> Result<Bound<Vec<Value>>> {
            let (k, included) = match b {
                Bound::Unbounded => return Ok(Bound::Unbounded),
                Bound::Included(k) => (k, true),
                Bound::Excluded(k) => (k, false),
            };
            let k = self.period.user_pk(def, k)?;
            let end = if low == included {
                self.period.min()
            } else {
                self.period.max()
            };
            let full = self.period.with_end(k, end);
            Ok(if included {
                Bound::Included(full)
            } else {
                Bound::Excluded(full)
            })
        };
        let (mut lo, mut hi) = (conv(lo, true)?, conv(hi, false)?);
        let batch = limit.clamp(1, 1024);
        while out.len() < limit {
            let rows = rel.scan(
                self.st,
                lo.as_ref().map(|v| v.as_slice()),
                hi.as_ref().map(|v| v.as_slice()),
                dir,
                batch,
            )?;
            let full = rows.len() == batch;
            let last = rows.last().map(|r| {
                def.primary_key
                    .iter()
                    .map(|&c| r[c].clone())
                    .collect::<Vec<_>>()
            });
            for r in rows {
                let (s, e) = self.period.times(&r)?;
                if self.sees(when, s, e)? {
                    out.push(r);
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
            }
            match (full, last) {
                (true, Some(k)) => match dir {
                    ScanDirection::Forward => lo = Bound::Excluded(k),
                    ScanDirection::Backward => hi = Bound::Excluded(k),
                },
                _ => break,
            }
        }
        Ok(out)
    }

    /// The declared primary key columns (the primary key without `row_end`).
    fn declared_pk(&self) -> &[usize] {
        let pk = &self.def().primary_key;
        &pk[..pk.len() - usize::from(self.period.end_in_key && !pk.is_empty())]
    }

    /// A row's place in (declared key, `row_end`) order: the declared key's
    /// order-preserving bytes (empty without a primary key) and `row_end`.
    fn order_key(&self, r: &Row) -> Result<(Vec<u8>, i64)> {
        let def = self.def();
        let cols = self.declared_pk();
        let k = if cols.is_empty() {
            Vec::new()
        } else {
            let vals: Vec<Value> = cols.iter().map(|&c| r[c].clone()).collect();
            def.key_from_values(cols, &vals)?
        };
        Ok((k, self.period.times(r)?.1))
    }

    /// A declared-key bound as order-preserving bytes.
    fn bound_key(&self, b: Bound<&[Value]>) -> Result<Bound<Vec<u8>>> {
        let def = self.def();
        Ok(match b {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(k) => Bound::Included(
                def.key_from_values(self.declared_pk(), self.period.user_pk(def, k)?)?,
            ),
            Bound::Excluded(k) => Bound::Excluded(
                def.key_from_values(self.declared_pk(), self.period.user_pk(def, k)?)?,
            ),
        })
    }

    /// The rows of `rel` for which `keep` holds, by a sequential scan (a relation without
    /// the primary key or index a read would use).
    fn seq_filter(&self, rel: &T, keep: &dyn Fn(&Row) -> bool) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        rel.seq_scan_each(self.st, &mut |r| {
            if keep(&r) {
                out.push(r);
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// DELETE HISTORY BEFORE SYSTEM_TIME `before`: removes the history rows with
    /// `row_end < before`; returns how many.
    ///
    /// Errors: [`Error::Catalog`] for a table without a primary key; as
    /// [`TableWrite::delete`].
    pub fn delete_history(&self, state: &mut T::TxnState, before: i64) -> Result<u64> {
        let def = self.def();
        def.require_primary_key("DELETE HISTORY")?;
        if self.history.iter().any(|h| h.def().primary_key.is_empty()) {
            // The periods extension has no DELETE HISTORY: its history table is a plain
            // table without a key, and the engine deletes rows by primary key.
            return Err(Error::Catalog(format!(
                "table {}: DELETE HISTORY is MariaDB's; the periods extension's history table \
                 (history_storage=history_table) has no primary key to delete its rows by",
                def.name
            )));
        }
        let rels = if self.history.is_empty() {
            vec![self.table]
        } else {
            self.history.clone()
        };
        let mut n = 0;
        for rel in rels {
            let rows = self.scan_one(
                rel,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                usize::MAX,
                SystemTime::All,
            )?;
            for r in rows {
                let (_, e) = self.period.times(&r)?;
                if e != self.period.max() && self.ended_before(e, before)? {
                    let key: Vec<Value> = def.primary_key.iter().map(|&c| r[c].clone()).collect();
                    if rel.delete(self.st, state, &key)? {
                        n += 1;
                    }
                }
            }
        }
        Ok(n)
    }
}
