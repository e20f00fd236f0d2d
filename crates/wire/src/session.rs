//! One client's session: its transaction block and the execution of plans on the engine.
//!
//! Transaction blocks follow PostgreSQL (xact.c): outside a block every statement is its
//! own transaction; BEGIN opens a block; the first error in a block aborts the engine's
//! transaction (the engine's [`Transaction`] does so itself) and puts the block in the
//! failed state, in which every statement but COMMIT/ROLLBACK gets 25P02; COMMIT of a
//! failed block rolls back and answers `ROLLBACK`.

use crate::catalog::{Catalog, SqlTable};
use crate::error::{engine_error, SqlError};
use crate::plan::{Access, Arg, Item, Plan, SelectPlan, SetOp};
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{ColumnType, Row, Value};
use mvcclab_engine::db::{Assign, Transaction};
use mvcclab_engine::mvcc::Isolation;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;

/// A bound parameter, decoded from its text or binary form.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// SQL NULL.
    Null,
    /// An integer (binary int2/int4/int8, or text the handler left as text).
    Int(i64),
    /// Text.
    Text(String),
}

/// What a statement returns.
#[derive(Debug)]
pub enum Outcome {
    /// Rows, with their column names and types, and the command tag (`SELECT n`).
    Rows {
        /// Column names.
        names: Vec<String>,
        /// Column types.
        types: Vec<ColumnType>,
        /// The rows.
        rows: Vec<Row>,
    },
    /// A command tag, with a row count for INSERT/UPDATE/DELETE.
    Done(String, Option<usize>),
    /// BEGIN done (the block is open).
    Began,
    /// The block ended with this tag (`COMMIT` or `ROLLBACK`).
    Ended(&'static str),
    /// COPY FROM STDIN begins: the number of columns it expects.
    CopyIn(usize),
}

/// A COPY FROM STDIN in progress.
struct CopyState {
    table: String,
    columns: Vec<usize>,
    /// Bytes of an incomplete last line.
    partial: Vec<u8>,
    rows: Vec<Row>,
    loaded: usize,
    error: Option<SqlError>,
}

/// Rows of a COPY committed per transaction, as mvcclab's own load does
/// (`mvcclab_workload::embedded`).
const COPY_BATCH_ROWS: usize = 1000;

/// A client's session.
pub struct Session {
    catalog: Arc<Catalog>,
    /// The open transaction block's transaction (None outside a block, or after a
    /// failure in it).
    tx: Option<Transaction>,
    /// Inside BEGIN … COMMIT.
    in_block: bool,
    /// The block failed (25P02 until its end).
    failed: bool,
    copy: Option<CopyState>,
}

fn now_pg_us() -> i64 {
    let unix_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    // PostgreSQL's epoch, 2000-01-01, is 946,684,800 s after the Unix epoch.
    unix_us - 946_684_800_000_000
}

/// Days since 2000-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 - 10_957
}

/// `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` as (days since 2000-01-01, microseconds of the day).
fn parse_datetime(s: &str) -> Option<(i64, i64)> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, ""));
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let mut us = 0;
    if !time.is_empty() {
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
        let (h, mi, sec) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0));
        let frac_us = if frac.is_empty() {
            0
        } else {
            let f: String = frac.chars().take(6).collect();
            f.parse::<i64>().ok()? * 10i64.pow(6 - f.len() as u32)
        };
        us = ((h * 60 + mi) * 60 + sec) * 1_000_000 + frac_us;
    }
    Some((days_from_civil(y, m, day), us))
}

/// An operand as a value of column type `ty`. Errors: 22P02 for text that is not a
/// value of the type, 22003 for an integer out of its range.
fn to_value(a: &Arg, params: &[Param], ty: ColumnType) -> Result<Value, SqlError> {
    let p;
    let a = match a {
        Arg::Param(i) => {
            p = match params.get(*i) {
                Some(Param::Null) => Arg::Null,
                Some(Param::Int(v)) => Arg::Int(*v),
                Some(Param::Text(s)) => Arg::Str(s.clone()),
                None => {
                    return Err(SqlError::new(
                        "08P01",
                        format!("there is no parameter ${}", i + 1),
                    ))
                }
            };
            &p
        }
        a => a,
    };
    let bad = |s: &str| {
        SqlError::new(
            "22P02",
            format!(
                "invalid input syntax for type {}: \"{s}\"",
                ty.postgres_sql()
            ),
        )
    };
    let range = || {
        SqlError::new(
            "22003",
            format!("value out of range for type {}", ty.postgres_sql()),
        )
    };
    let int = |v: i64| -> Result<Value, SqlError> {
        Ok(match ty {
            ColumnType::Integer => Value::Integer(i32::try_from(v).map_err(|_| range())?),
            ColumnType::BigInt => Value::BigInt(v),
            ColumnType::SmallInt => Value::SmallInt(i16::try_from(v).map_err(|_| range())?),
            ColumnType::TinyInt => Value::TinyInt(i8::try_from(v).map_err(|_| range())?),
            t if t.is_text() => Value::Text(v.to_string()),
            _ => return Err(bad(&v.to_string())),
        })
    };
    match a {
        Arg::Null => Ok(Value::Null),
        Arg::Int(v) => int(*v),
        Arg::Now => match ty {
            ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6 => {
                let us = now_pg_us();
                Ok(Value::Timestamp(if ty == ColumnType::Timestamp {
                    us - us.rem_euclid(1_000_000)
                } else {
                    us
                }))
            }
            _ => Err(bad("CURRENT_TIMESTAMP")),
        },
        Arg::Str(s) => match ty {
            t if t.is_text() => Ok(Value::Text(s.clone())),
            ColumnType::Integer
            | ColumnType::BigInt
            | ColumnType::SmallInt
            | ColumnType::TinyInt => int(s.trim().parse::<i64>().map_err(|_| bad(s))?),
            ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6 => {
                let (d, us) = parse_datetime(s).ok_or_else(|| bad(s))?;
                Ok(Value::Timestamp(d * 86_400_000_000 + us))
            }
            ColumnType::Date => {
                let (d, _) = parse_datetime(s).ok_or_else(|| bad(s))?;
                Ok(Value::Date(i32::try_from(d).map_err(|_| range())?))
            }
            _ => Err(SqlError::new(
                "0A000",
                format!(
                    "not supported by mvcclab serve: values of type {}",
                    ty.postgres_sql()
                ),
            )),
        },
        Arg::Param(_) => unreachable!("resolved above"),
    }
}

/// Orders two values of one column (NULLs last, as PostgreSQL's ascending default).
fn cmp_values(a: &Value, b: &Value) -> Ordering {
    use Value::*;
    let num = |v: &Value| match v {
        Integer(x) => Some(*x as i64),
        BigInt(x) => Some(*x),
        SmallInt(x) => Some(*x as i64),
        TinyInt(x) => Some(*x as i64),
        Timestamp(x) => Some(*x),
        Date(x) => Some(*x as i64),
        _ => None,
    };
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Null, _) => Ordering::Greater,
        (_, Null) => Ordering::Less,
        (Text(x), Text(y)) => x.cmp(y),
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => a.to_string().cmp(&b.to_string()),
        },
    }
}

impl Session {
    /// A session on the server's catalog.
    pub fn new(catalog: Arc<Catalog>) -> Self {
        Session {
            catalog,
            tx: None,
            in_block: false,
            failed: false,
            copy: None,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Whether a transaction block is open (failed or not).
    pub fn in_block(&self) -> bool {
        self.in_block
    }

    /// Fails an open block (a statement in it could not be planned): its transaction is
    /// rolled back and 25P02 answers until COMMIT or ROLLBACK.
    pub fn fail_block(&mut self) {
        if self.in_block {
            if let Some(tx) = self.tx.take() {
                let _ = tx.abort();
            }
            self.failed = true;
        }
    }

    /// Runs `plan` with `params`.
    ///
    /// Errors: the engine's (with their SQLSTATE), 25P02 in a failed block, and those of
    /// the plan's own checks.
    pub fn execute(&mut self, plan: &Plan, params: &[Param]) -> Result<Outcome, SqlError> {
        match plan {
            Plan::Begin(iso) => {
                if !self.in_block {
                    let db = self.catalog.database();
                    self.tx = Some(match iso {
                        Some(i) => db.begin_with(*i),
                        None => db.begin(),
                    });
                    self.in_block = true;
                    self.failed = false;
                }
                // In a block already: PostgreSQL warns and carries on.
                return Ok(Outcome::Began);
            }
            Plan::Commit => {
                let failed = self.failed;
                let tx = self.tx.take();
                self.in_block = false;
                self.failed = false;
                if failed {
                    return Ok(Outcome::Ended("ROLLBACK"));
                }
                if let Some(tx) = tx {
                    tx.commit().map_err(engine_error)?;
                }
                return Ok(Outcome::Ended("COMMIT"));
            }
            Plan::Rollback => {
                if let Some(tx) = self.tx.take() {
                    let _ = tx.abort();
                }
                self.in_block = false;
                self.failed = false;
                return Ok(Outcome::Ended("ROLLBACK"));
            }
            _ => {}
        }
        if self.failed {
            return Err(SqlError::new(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let r = self.execute_inner(plan, params);
        if r.is_err() && self.in_block {
            // The engine's transaction aborted itself at the error.
            self.failed = true;
            self.tx = None;
        }
        r
    }

    /// Runs `f` in the block's transaction, or in one of its own that commits after it.
    fn with_tx<T>(
        &mut self,
        iso: Option<Isolation>,
        f: impl FnOnce(&mut Transaction) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        if self.in_block {
            let tx = self
                .tx
                .as_mut()
                .ok_or_else(|| SqlError::new("25P02", "current transaction is aborted"))?;
            return f(tx);
        }
        let db = self.catalog.database();
        let mut tx = match iso {
            Some(i) => db.begin_with(i),
            None => db.begin(),
        };
        let v = f(&mut tx)?;
        tx.commit().map_err(engine_error)?;
        Ok(v)
    }

    fn execute_inner(&mut self, plan: &Plan, params: &[Param]) -> Result<Outcome, SqlError> {
        let cat = self.catalog.clone();
        match plan {
            Plan::Begin(_) | Plan::Commit | Plan::Rollback => unreachable!("handled above"),
            Plan::Set => Ok(Outcome::Done("SET".into(), None)),
            Plan::Show(name, value) => Ok(Outcome::Rows {
                names: vec![name.clone()],
                types: vec![ColumnType::Text],
                rows: vec![vec![Value::Text(value.clone())]],
            }),
            Plan::StatIo => Ok(stat_io(&cat)),
            Plan::StatCpu => {
                let c = crate::cpu::self_cpu()
                    .map_err(|e| SqlError::new("58000", format!("getrusage: {e}")))?;
                let names = [
                    "user_us",
                    "system_us",
                    "voluntary_ctxt_switches",
                    "involuntary_ctxt_switches",
                    "minor_faults",
                    "major_faults",
                ];
                let vals = [
                    c.user_us,
                    c.system_us,
                    c.voluntary_ctxt_switches,
                    c.involuntary_ctxt_switches,
                    c.minor_faults,
                    c.major_faults,
                ];
                Ok(Outcome::Rows {
                    names: names.iter().map(|s| s.to_string()).collect(),
                    types: vec![ColumnType::BigInt; names.len()],
                    rows: vec![vals.iter().map(|v| Value::BigInt(*v as i64)).collect()],
                })
            }
            Plan::Select(s) => {
                let t = cat.lookup(&s.table)?;
                let rows = self.with_tx(None, |tx| select(tx, &t, s, params))?;
                Ok(Outcome::Rows {
                    names: s.names.clone(),
                    types: s.types.clone(),
                    rows,
                })
            }
            Plan::Insert {
                table,
                columns,
                rows,
            } => {
                let t = cat.lookup(table)?;
                let mut built = Vec::with_capacity(rows.len());
                for r in rows {
                    built.push(build_row(&t, columns, |j, ty| to_value(&r[j], params, ty))?);
                }
                let n = built.len();
                self.with_tx(None, |tx| {
                    for row in built {
                        tx.insert(t.id, row).map_err(engine_error)?;
                    }
                    Ok(())
                })?;
                Ok(Outcome::Done("INSERT 0".into(), Some(n)))
            }
            Plan::Update { table, key, set } => {
                let t = cat.lookup(table)?;
                let pk = key_value(&t, key, params)?;
                let mut assigns = Vec::with_capacity(set.len());
                for (c, op) in set {
                    let ty = t.def.columns[*c].ty;
                    assigns.push(match op {
                        SetOp::Set(a) => Assign::Set(*c, to_value(a, params, ty)?),
                        SetOp::Add(a, neg) => {
                            let d = match to_value(a, params, ColumnType::BigInt)? {
                                Value::BigInt(d) => d,
                                _ => {
                                    return Err(SqlError::new(
                                        "22004",
                                        "null value in an increment",
                                    ))
                                }
                            };
                            Assign::Add(*c, if *neg { -d } else { d })
                        }
                    });
                }
                let done = self.with_tx(None, |tx| {
                    tx.update(t.id, &[pk], &assigns).map_err(engine_error)
                })?;
                Ok(Outcome::Done("UPDATE".into(), Some(done as usize)))
            }
            Plan::Delete { table, key } => {
                let t = cat.lookup(table)?;
                let pk = key_value(&t, key, params)?;
                let done = self.with_tx(None, |tx| tx.delete(t.id, &[pk]).map_err(engine_error))?;
                Ok(Outcome::Done("DELETE".into(), Some(done as usize)))
            }
            Plan::CreateTable {
                table,
                columns,
                primary_key,
                if_not_exists,
            } => {
                cat.create_table(table, columns.clone(), primary_key.clone(), *if_not_exists)?;
                Ok(Outcome::Done("CREATE TABLE".into(), None))
            }
            Plan::CreateIndex {
                name,
                table,
                columns,
                unique,
            } => {
                cat.create_index(name, table, columns, *unique)?;
                Ok(Outcome::Done("CREATE INDEX".into(), None))
            }
            Plan::DropTables { tables, if_exists } => {
                cat.drop_tables(tables, *if_exists)?;
                Ok(Outcome::Done("DROP TABLE".into(), None))
            }
            Plan::Truncate(tables) => {
                cat.truncate(tables)?;
                Ok(Outcome::Done("TRUNCATE TABLE".into(), None))
            }
            Plan::Vacuum {
                tables,
                vacuum,
                analyze,
            } => {
                let list = if tables.is_empty() {
                    cat.all()
                } else {
                    tables
                        .iter()
                        .map(|n| cat.lookup(n).map(|t| (n.clone(), t)))
                        .collect::<Result<_, _>>()?
                };
                let db = cat.database();
                let heap = db.design().table_layout == mvcclab_engine::design::TableLayout::Heap;
                for (_, t) in list {
                    if *vacuum {
                        db.gc(t.id).map_err(engine_error)?;
                    }
                    if *analyze && heap {
                        db.analyze(t.id).map_err(engine_error)?;
                    }
                }
                Ok(Outcome::Done(
                    if *vacuum { "VACUUM" } else { "ANALYZE" }.into(),
                    None,
                ))
            }
            Plan::AddPrimaryKey { table, columns } => {
                cat.add_primary_key(table, columns)?;
                Ok(Outcome::Done("ALTER TABLE".into(), None))
            }
            Plan::CopyIn { table, columns } => {
                cat.lookup(table)?;
                self.copy = Some(CopyState {
                    table: table.clone(),
                    columns: columns.clone(),
                    partial: Vec::new(),
                    rows: Vec::new(),
                    loaded: 0,
                    error: None,
                });
                Ok(Outcome::CopyIn(columns.len()))
            }
        }
    }

    /// Takes a CopyData message's bytes: complete lines become rows, loaded in batches.
    /// The first error is kept and reported at the end of the COPY.
    pub fn copy_data(&mut self, data: &[u8]) {
        let Some(mut c) = self.copy.take() else {
            return;
        };
        if c.error.is_none() {
            c.partial.extend_from_slice(data);
            let mut start = 0;
            while let Some(nl) = c.partial[start..].iter().position(|&b| b == b'\n') {
                let line = c.partial[start..start + nl].to_vec();
                start += nl + 1;
                if line == b"\\." {
                    continue;
                }
                match self.copy_row(&c, &line) {
                    Ok(row) => c.rows.push(row),
                    Err(e) => {
                        c.error = Some(e);
                        break;
                    }
                }
                if c.rows.len() >= COPY_BATCH_ROWS {
                    if let Err(e) = self.flush_copy(&mut c) {
                        c.error = Some(e);
                        break;
                    }
                }
            }
            c.partial.drain(..start.min(c.partial.len()));
        }
        self.copy = Some(c);
    }

    fn copy_row(&self, c: &CopyState, line: &[u8]) -> Result<Row, SqlError> {
        let text = std::str::from_utf8(line)
            .map_err(|_| SqlError::new("22021", "COPY data is not valid UTF-8"))?;
        let text = text.strip_suffix('\r').unwrap_or(text);
        let fields: Vec<&str> = text.split('\t').collect();
        if fields.len() != c.columns.len() {
            return Err(SqlError::new(
                "22P04",
                format!(
                    "COPY {}: a line has {} columns, {} expected",
                    c.table,
                    fields.len(),
                    c.columns.len()
                ),
            ));
        }
        let t = self.catalog.lookup(&c.table)?;
        build_row(&t, &c.columns, |j, ty| {
            let f = fields[j];
            if f == "\\N" {
                return Ok(Value::Null);
            }
            let unescaped = if f.contains('\\') {
                f.replace("\\t", "\t")
                    .replace("\\n", "\n")
                    .replace("\\\\", "\\")
            } else {
                f.to_string()
            };
            to_value(&Arg::Str(unescaped), &[], ty)
        })
    }

    fn flush_copy(&self, c: &mut CopyState) -> Result<(), SqlError> {
        if c.rows.is_empty() {
            return Ok(());
        }
        let t = self.catalog.lookup(&c.table)?;
        let mut tx = self.catalog.database().begin();
        for row in c.rows.drain(..) {
            tx.insert(t.id, row).map_err(engine_error)?;
            c.loaded += 1;
        }
        tx.commit().map_err(engine_error)
    }

    /// Ends the COPY: loads what is left; returns the rows loaded.
    ///
    /// Errors: the first error of the COPY (rows of batches before it stay loaded).
    pub fn copy_done(&mut self) -> Result<usize, SqlError> {
        let Some(mut c) = self.copy.take() else {
            return Err(SqlError::new("08P01", "no COPY in progress"));
        };
        if let Some(e) = c.error.take() {
            return Err(e);
        }
        if !c.partial.is_empty() && c.partial != b"\\." {
            let line = std::mem::take(&mut c.partial);
            let row = self.copy_row(&c, &line)?;
            c.rows.push(row);
        }
        self.flush_copy(&mut c)?;
        Ok(c.loaded)
    }

    /// Abandons a COPY (CopyFail).
    pub fn copy_fail(&mut self) {
        self.copy = None;
    }
}

/// A row of `t` with the given columns' values from `value(j, type)` (j = position in
/// `columns`), the others from their DEFAULT, their SERIAL sequence, or NULL.
fn build_row(
    t: &SqlTable,
    columns: &[usize],
    mut value: impl FnMut(usize, ColumnType) -> Result<Value, SqlError>,
) -> Result<Row, SqlError> {
    let n = t.def.columns.len();
    let mut row: Vec<Option<Value>> = vec![None; n];
    for (j, &c) in columns.iter().enumerate() {
        row[c] = Some(value(j, t.def.columns[c].ty)?);
    }
    row.into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Some(v) => Ok(v),
            None => {
                let spec = &t.columns[i];
                let ty = t.def.columns[i].ty;
                if spec.serial {
                    let next = t.sequence.fetch_add(1, AtomicOrdering::Relaxed) + 1;
                    to_value(&Arg::Int(next), &[], ty)
                } else if let Some(d) = &spec.default {
                    to_value(d, &[], ty)
                } else {
                    Ok(Value::Null)
                }
            }
        })
        .collect()
}

fn key_value(t: &SqlTable, a: &Arg, params: &[Param]) -> Result<Value, SqlError> {
    let c = *t
        .def
        .primary_key
        .first()
        .ok_or_else(|| SqlError::new("0A000", "a table without a primary key"))?;
    to_value(a, params, t.def.columns[c].ty)
}

fn select(
    tx: &mut Transaction,
    t: &SqlTable,
    s: &SelectPlan,
    params: &[Param],
) -> Result<Vec<Row>, SqlError> {
    let limit = match &s.limit {
        None => None,
        Some(a) => match to_value(a, params, ColumnType::BigInt)? {
            Value::BigInt(n) if n >= 0 => Some(n as usize),
            Value::Null => None,
            _ => return Err(SqlError::new("2201W", "LIMIT must not be negative")),
        },
    };
    let plain =
        s.order_by.is_none() && !s.distinct && s.items.iter().all(|i| matches!(i, Item::Column(_)));
    let scan_limit = if plain {
        limit.unwrap_or(usize::MAX)
    } else {
        usize::MAX
    };
    let mut rows = match &s.access {
        Access::All => tx
            .scan(
                t.id,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                scan_limit,
            )
            .map_err(engine_error)?,
        Access::PkEq(a) => {
            let k = key_value(t, a, params)?;
            tx.get(t.id, &[k])
                .map_err(engine_error)?
                .into_iter()
                .collect()
        }
        Access::PkBetween(a, b) => {
            let lo = key_value(t, a, params)?;
            let hi = key_value(t, b, params)?;
            tx.scan(
                t.id,
                Bound::Included(std::slice::from_ref(&lo)),
                Bound::Included(std::slice::from_ref(&hi)),
                ScanDirection::Forward,
                scan_limit,
            )
            .map_err(engine_error)?
        }
        Access::IndexEq(ix, a) => {
            let c = t.def.indexes[*ix].columns[0];
            let k = to_value(a, params, t.def.columns[c].ty)?;
            tx.get_by_index(t.id, *ix, &[k]).map_err(engine_error)?
        }
    };
    if !s.items.iter().all(|i| matches!(i, Item::Column(_))) {
        let out = s
            .items
            .iter()
            .map(|i| match i {
                Item::CountStar => Value::BigInt(rows.len() as i64),
                Item::Sum(c) => {
                    let vals: Vec<i64> = rows
                        .iter()
                        .filter_map(|r| match &r[*c] {
                            Value::Integer(x) => Some(*x as i64),
                            Value::SmallInt(x) => Some(*x as i64),
                            Value::TinyInt(x) => Some(*x as i64),
                            _ => None,
                        })
                        .collect();
                    if vals.is_empty() {
                        Value::Null
                    } else {
                        Value::BigInt(vals.iter().sum())
                    }
                }
                Item::Column(_) => Value::Null,
            })
            .collect();
        return Ok(vec![out]);
    }
    if let Some((c, desc)) = s.order_by {
        rows.sort_by(|a, b| {
            let o = cmp_values(&a[c], &b[c]);
            if desc {
                o.reverse()
            } else {
                o
            }
        });
    }
    let mut out: Vec<Row> = rows
        .into_iter()
        .map(|r| {
            s.items
                .iter()
                .map(|i| match i {
                    Item::Column(c) => r[*c].clone(),
                    _ => Value::Null,
                })
                .collect()
        })
        .collect();
    if s.distinct {
        let mut seen = std::collections::HashSet::new();
        out.retain(|r| seen.insert(r.clone()));
    }
    if let Some(l) = limit {
        out.truncate(l);
    }
    Ok(out)
}

/// `mvcclab_stat_io`: the device counters per cause since the server started, one row per
/// cause with any count.
fn stat_io(cat: &Catalog) -> Outcome {
    let snap = cat.database().storage().stats().snapshot();
    let mut rows = Vec::new();
    for cause in mvcclab_engine::stats::Cause::ALL {
        let c = snap.cause(*cause);
        if c.is_zero() {
            continue;
        }
        rows.push(vec![
            Value::Text(cause.name().into()),
            Value::BigInt(c.read_blocks_4k as i64),
            Value::BigInt(c.write_blocks_4k as i64),
            Value::BigInt(c.read_requests as i64),
            Value::BigInt(c.write_requests as i64),
            Value::BigInt(c.buffer_hits as i64),
            Value::BigInt(c.buffer_misses as i64),
            Value::BigInt(c.wal_bytes as i64),
        ]);
    }
    Outcome::Rows {
        names: [
            "cause",
            "blocks_read_4k",
            "blocks_written_4k",
            "read_requests",
            "write_requests",
            "buffer_hits",
            "buffer_misses",
            "wal_bytes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        types: vec![
            ColumnType::Text,
            ColumnType::BigInt,
            ColumnType::BigInt,
            ColumnType::BigInt,
            ColumnType::BigInt,
            ColumnType::BigInt,
            ColumnType::BigInt,
            ColumnType::BigInt,
        ],
        rows,
    }
}
