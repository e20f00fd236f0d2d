//! Statements mapped onto the engine's typed operations by their shape: the SQL the real
//! clients send (sysbench's pgsql driver, pgbench's `-i` and TPC-B script, psql's simple
//! queries) is parsed with `sqlparser` (PostgreSQL dialect) and each statement is matched
//! against the shapes the engine API can run — a primary-key lookup, a primary-key range,
//! a full scan, an equality on a one-column secondary index, a single-row UPDATE or DELETE
//! by primary key, INSERT … VALUES — never a general executor. Anything else is refused
//! with SQLSTATE 0A000 (feature_not_supported) naming what is unsupported.
//!
//! A plan names its table by its SQL name and holds column positions; the executor
//! ([`crate::session`]) resolves the name against the server's catalog ([`crate::catalog`])
//! when it runs, so a plan prepared before a TRUNCATE (which gives the table a fresh
//! engine relation) still runs after it.

use crate::catalog::{Catalog, ColumnSpec};
use crate::error::SqlError;
pub use crate::operand::Arg;
use mvcclab_engine::catalog::ColumnType;
use mvcclab_engine::mvcc::Isolation;
use sqlparser::ast::{
    self, BinaryOperator, Expr, FromTable, SelectItem, SetExpr, Statement as Ast, TableFactor,
    UnaryOperator,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// The rows a statement reads, by the engine operation that finds them.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    /// Every row, in primary-key order (`Transaction::scan`, unbounded).
    All,
    /// The row with this primary key (`Transaction::get`).
    PkEq(Arg),
    /// Primary keys in `lo..=hi` (`Transaction::scan`), sysbench's `id BETWEEN ? AND ?`.
    PkBetween(Arg, Arg),
    /// Rows whose one-column secondary index `index` has this key
    /// (`Transaction::get_by_index`).
    IndexEq(usize, Arg),
}

/// One item of a SELECT list.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A column (position in the table).
    Column(usize),
    /// `SUM(column)` over the rows read (bigint for integer columns, as PostgreSQL's
    /// `int4_sum` / `int8_sum` give bigint / numeric).
    Sum(usize),
    /// `count(*)`.
    CountStar,
}

/// A SELECT of one table.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectPlan {
    /// The table's SQL name.
    pub table: String,
    /// How rows are found.
    pub access: Access,
    /// The SELECT list (a `*` expanded).
    pub items: Vec<Item>,
    /// Output column names.
    pub names: Vec<String>,
    /// Output column types.
    pub types: Vec<ColumnType>,
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    /// `ORDER BY column [DESC]`.
    pub order_by: Option<(usize, bool)>,
    /// `LIMIT n`.
    pub limit: Option<Arg>,
}

/// What a client sent, as the engine will run it.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// BEGIN / START TRANSACTION, with an isolation level when one was given.
    Begin(Option<Isolation>),
    /// COMMIT / END.
    Commit,
    /// ROLLBACK / ABORT.
    Rollback,
    /// SET of a session setting: accepted and ignored (tag `SET`), except
    /// `transaction_isolation`-like settings, which are refused.
    Set,
    /// SHOW of a setting: (name, value).
    Show(String, String),
    /// A SELECT.
    Select(SelectPlan),
    /// `SELECT * FROM mvcclab_stat_io`: the device counters per cause.
    StatIo,
    /// `SELECT * FROM mvcclab_stat_cpu`: the server process's CPU use
    /// ([`crate::cpu::self_cpu`]).
    StatCpu,
    /// INSERT … VALUES: table, column positions, rows of operands.
    Insert {
        /// Table name.
        table: String,
        /// Column position of each operand in a row.
        columns: Vec<usize>,
        /// The rows.
        rows: Vec<Vec<Arg>>,
    },
    /// UPDATE … SET … WHERE pk = x.
    Update {
        /// Table name.
        table: String,
        /// The primary key.
        key: Arg,
        /// Assignments: column, and `Ok(operand)` to set or `Err((operand, negate))` to
        /// add (`col = col + x` / `col = col - x`).
        set: Vec<(usize, SetOp)>,
    },
    /// DELETE … WHERE pk = x.
    Delete {
        /// Table name.
        table: String,
        /// The primary key.
        key: Arg,
    },
    /// CREATE TABLE.
    CreateTable {
        /// Table name.
        table: String,
        /// Columns.
        columns: Vec<ColumnSpec>,
        /// Primary key columns (positions); empty when none was declared.
        primary_key: Vec<usize>,
        /// IF NOT EXISTS.
        if_not_exists: bool,
    },
    /// CREATE INDEX name ON table (columns).
    CreateIndex {
        /// Index name.
        name: String,
        /// Table name.
        table: String,
        /// Column names.
        columns: Vec<String>,
        /// UNIQUE.
        unique: bool,
    },
    /// DROP TABLE [IF EXISTS] a, b, ….
    DropTables {
        /// Table names.
        tables: Vec<String>,
        /// IF EXISTS.
        if_exists: bool,
    },
    /// TRUNCATE a, b, ….
    Truncate(Vec<String>),
    /// `VACUUM [ANALYZE] [tables]` / `ANALYZE [tables]`: garbage collection and, for heap
    /// tables, ANALYZE.
    Vacuum {
        /// The tables (all when empty).
        tables: Vec<String>,
        /// Whether to vacuum (false for a bare ANALYZE).
        vacuum: bool,
        /// Whether to analyze.
        analyze: bool,
    },
    /// ALTER TABLE t ADD PRIMARY KEY (columns).
    AddPrimaryKey {
        /// Table name.
        table: String,
        /// Column names.
        columns: Vec<String>,
    },
    /// COPY t [(columns)] FROM STDIN (text format).
    CopyIn {
        /// Table name.
        table: String,
        /// Column positions, in the order of the data.
        columns: Vec<usize>,
    },
}

/// The right-hand side of one assignment of an UPDATE.
#[derive(Clone, Debug, PartialEq)]
pub enum SetOp {
    /// `col = x`.
    Set(Arg),
    /// `col = col + x` (negated for `col - x`).
    Add(Arg, bool),
}

impl Plan {
    /// The number of parameters (`$n`) the plan refers to.
    pub fn param_count(&self) -> usize {
        let mut n = 0;
        let mut see = |a: &Arg| {
            if let Arg::Param(i) = a {
                n = n.max(i + 1);
            }
        };
        match self {
            Plan::Select(s) => {
                match &s.access {
                    Access::PkEq(a) | Access::IndexEq(_, a) => see(a),
                    Access::PkBetween(a, b) => {
                        see(a);
                        see(b)
                    }
                    Access::All => {}
                }
                if let Some(l) = &s.limit {
                    see(l)
                }
            }
            Plan::Insert { rows, .. } => rows.iter().flatten().for_each(see),
            Plan::Update { key, set, .. } => {
                see(key);
                for (_, op) in set {
                    match op {
                        SetOp::Set(a) | SetOp::Add(a, _) => see(a),
                    }
                }
            }
            Plan::Delete { key, .. } => see(key),
            _ => {}
        }
        n
    }
}

fn unsupported(what: impl std::fmt::Display) -> SqlError {
    SqlError::new("0A000", format!("not supported by mvcclab serve: {what}"))
}

/// A statement parsed but not yet planned: planning resolves names in the catalog, which
/// an earlier statement of the same simple query may change (CREATE TABLE; INSERT …).
pub enum Parsed {
    /// Planned already (statements recognised before sqlparser).
    Ready(Plan),
    /// sqlparser's tree.
    Ast(Box<Ast>),
    /// COPY table [(columns)] FROM STDIN, parsed by hand (sqlparser does not take the
    /// `WITH (freeze on)` pgbench 15 sends).
    CopyFromStdin {
        /// Table name.
        table: String,
        /// Column names (empty: all).
        columns: Vec<String>,
    },
}

impl Parsed {
    /// The plan, with tables and columns resolved in `catalog`.
    ///
    /// Errors: 42P01 / 42703 for an unknown table / column; 0A000 naming a statement or
    /// clause outside the supported shapes.
    pub fn plan(&self, catalog: &Catalog) -> Result<Plan, SqlError> {
        match self {
            Parsed::Ready(p) => Ok(p.clone()),
            Parsed::Ast(a) => plan_statement(a, catalog),
            Parsed::CopyFromStdin { table, columns } => {
                let t = catalog.lookup(table)?;
                let columns = if columns.is_empty() {
                    (0..t.def.columns.len()).collect()
                } else {
                    columns
                        .iter()
                        .map(|c| t.column(c))
                        .collect::<Result<_, _>>()?
                };
                Ok(Plan::CopyIn {
                    table: table.clone(),
                    columns,
                })
            }
        }
    }
}

/// Parses `sql` (one or more statements).
///
/// Errors: 0A000 for what sqlparser cannot parse; 42601 for a malformed ALTER TABLE.
pub fn parse_sql(sql: &str) -> Result<Vec<Parsed>, SqlError> {
    let trimmed = sql.trim().trim_end_matches(';').trim();
    let lower = trimmed.to_ascii_lowercase();
    // Statements sqlparser's PostgreSQL dialect does not take in the form pgbench sends.
    if lower.starts_with("vacuum") || lower.starts_with("analyze") {
        return Ok(vec![Parsed::Ready(plan_vacuum(&lower))]);
    }
    if lower.starts_with("alter table") && lower.contains("add primary key") {
        return Ok(vec![Parsed::Ready(plan_add_primary_key(&lower)?)]);
    }
    if lower == "end" || lower == "end transaction" || lower == "end work" {
        return Ok(vec![Parsed::Ready(Plan::Commit)]);
    }
    if lower == "abort" {
        return Ok(vec![Parsed::Ready(Plan::Rollback)]);
    }
    if lower.starts_with("copy ") {
        return Ok(vec![parse_copy(&lower)?]);
    }
    let stmts = Parser::parse_sql(&PostgreSqlDialect {}, trimmed)
        // sqlparser does not know every statement PostgreSQL takes: what it cannot parse is
        // reported as unsupported, not as a syntax error.
        .map_err(|e| unsupported(format!("a statement sqlparser cannot parse ({e})")))?;
    Ok(stmts
        .into_iter()
        .map(|s| Parsed::Ast(Box::new(s)))
        .collect())
}

/// Parses and plans `sql` (one or more statements), resolving tables and columns in
/// `catalog` as it is now.
///
/// Errors: those of [`parse_sql`] and [`Parsed::plan`].
pub fn plan_sql(sql: &str, catalog: &Catalog) -> Result<Vec<Plan>, SqlError> {
    parse_sql(sql)?.iter().map(|p| p.plan(catalog)).collect()
}

/// `copy TABLE [(a, b)] from stdin [[with] (freeze [on|true], format text)]`.
fn parse_copy(lower: &str) -> Result<Parsed, SqlError> {
    let rest = lower["copy".len()..].trim();
    let (target, tail) = rest
        .split_once(" from ")
        .ok_or_else(|| unsupported("COPY … TO (only COPY … FROM STDIN)"))?;
    let tail = tail.trim();
    let options = tail
        .strip_prefix("stdin")
        .ok_or_else(|| unsupported(format!("COPY FROM {tail} (only FROM STDIN)")))?
        .trim();
    let options = options.strip_prefix("with").unwrap_or(options).trim();
    if !options.is_empty() {
        let inner = options
            .strip_prefix('(')
            .and_then(|o| o.strip_suffix(')'))
            .ok_or_else(|| unsupported(format!("COPY options {options}")))?;
        for o in inner.split(',') {
            let words: Vec<&str> = o.split_whitespace().collect();
            match words.as_slice() {
                ["freeze"] | ["freeze", "on" | "true" | "1"] => {}
                ["format", "text"] => {}
                _ => return Err(unsupported(format!("COPY option {}", o.trim()))),
            }
        }
    }
    let (table, columns) = match target.split_once('(') {
        Some((t, cols)) => (
            t.trim(),
            cols.trim_end_matches(')')
                .split(',')
                .map(|c| unquote(c.trim()))
                .collect(),
        ),
        None => (target.trim(), Vec::new()),
    };
    Ok(Parsed::CopyFromStdin {
        table: unquote(table.strip_prefix("public.").unwrap_or(table)),
        columns,
    })
}

fn plan_vacuum(lower: &str) -> Plan {
    let mut words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .collect();
    let vacuum = words.first() == Some(&"vacuum");
    words.remove(0);
    let mut analyze = !vacuum;
    let mut tables = Vec::new();
    for w in words {
        match w {
            "analyze" | "analyse" => analyze = true,
            "verbose" | "full" | "freeze" => {}
            t => tables.push(unquote(t)),
        }
    }
    Plan::Vacuum {
        tables,
        vacuum,
        analyze,
    }
}

fn plan_add_primary_key(lower: &str) -> Result<Plan, SqlError> {
    // alter table NAME add primary key (a, b)
    let rest = lower["alter table".len()..].trim();
    let (name, tail) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| SqlError::new("42601", "syntax error in ALTER TABLE"))?;
    let cols = tail
        .split_once('(')
        .and_then(|(_, c)| c.split_once(')'))
        .map(|(c, _)| c)
        .ok_or_else(|| SqlError::new("42601", "syntax error in ALTER TABLE ADD PRIMARY KEY"))?;
    Ok(Plan::AddPrimaryKey {
        table: unquote(name.trim_start_matches("only ").trim()),
        columns: cols.split(',').map(|c| unquote(c.trim())).collect(),
    })
}

/// An identifier as PostgreSQL folds it: quoted kept, unquoted lower-cased.
fn unquote(s: &str) -> String {
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_ascii_lowercase()
    }
}

fn object_name(n: &ast::ObjectName) -> String {
    let s = n.to_string();
    let s = s.strip_prefix("public.").unwrap_or(&s);
    unquote(s)
}

fn plan_statement(s: &Ast, catalog: &Catalog) -> Result<Plan, SqlError> {
    match s {
        Ast::StartTransaction { modes, .. } => {
            let mut iso = None;
            for m in modes {
                if let ast::TransactionMode::IsolationLevel(l) = m {
                    iso = Some(match l {
                        ast::TransactionIsolationLevel::ReadCommitted
                        | ast::TransactionIsolationLevel::ReadUncommitted => {
                            Isolation::ReadCommitted
                        }
                        ast::TransactionIsolationLevel::RepeatableRead => Isolation::RepeatableRead,
                        other => return Err(unsupported(format!("isolation level {other}"))),
                    });
                }
            }
            Ok(Plan::Begin(iso))
        }
        Ast::Commit { .. } => Ok(Plan::Commit),
        Ast::Rollback {
            savepoint: None, ..
        } => Ok(Plan::Rollback),
        Ast::Rollback { .. } => Err(unsupported("savepoints")),
        Ast::Set(_) => Ok(Plan::Set),
        Ast::ShowVariable { variable } => {
            let name = variable
                .iter()
                .map(|i| i.value.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(".");
            let value = catalog.setting(&name).ok_or_else(|| {
                SqlError::new(
                    "42704",
                    format!("unrecognized configuration parameter \"{name}\""),
                )
            })?;
            Ok(Plan::Show(name, value))
        }
        Ast::Query(q) => plan_query(q, catalog),
        Ast::Insert(ins) => plan_insert(ins, catalog),
        Ast::Update(u) => plan_update(u, catalog),
        Ast::Delete(d) => plan_delete(d, catalog),
        Ast::CreateTable(ct) => plan_create_table(ct),
        Ast::CreateIndex(ci) => Ok(Plan::CreateIndex {
            name: ci
                .name
                .as_ref()
                .map(object_name)
                .ok_or_else(|| unsupported("CREATE INDEX without a name"))?,
            table: object_name(&ci.table_name),
            columns: ci.columns.iter().map(|c| unquote(&c.to_string())).collect(),
            unique: ci.unique,
        }),
        Ast::Drop {
            object_type: ast::ObjectType::Table,
            if_exists,
            names,
            ..
        } => Ok(Plan::DropTables {
            tables: names.iter().map(object_name).collect(),
            if_exists: *if_exists,
        }),
        Ast::Truncate(t) => Ok(Plan::Truncate(
            t.table_names.iter().map(|t| object_name(&t.name)).collect(),
        )),
        Ast::Copy {
            source,
            to: false,
            target: ast::CopyTarget::Stdin,
            options,
            legacy_options,
            ..
        } => {
            for o in options {
                match o {
                    ast::CopyOption::Freeze(_) => {}
                    ast::CopyOption::Format(f) if f.value.eq_ignore_ascii_case("text") => {}
                    other => return Err(unsupported(format!("COPY option {other}"))),
                }
            }
            if !legacy_options.is_empty() {
                return Err(unsupported("COPY's pre-9.0 options"));
            }
            let ast::CopySource::Table {
                table_name,
                columns,
            } = source
            else {
                return Err(unsupported("COPY (query) FROM"));
            };
            let table = object_name(table_name);
            let t = catalog.lookup(&table)?;
            let columns = if columns.is_empty() {
                (0..t.def.columns.len()).collect()
            } else {
                columns
                    .iter()
                    .map(|c| t.column(&c.value.to_ascii_lowercase()))
                    .collect::<Result<_, _>>()?
            };
            Ok(Plan::CopyIn { table, columns })
        }
        other => {
            let text = other.to_string();
            let head: String = text
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            Err(unsupported(format!("statement \"{head}\"")))
        }
    }
}

fn arg(e: &Expr) -> Result<Arg, SqlError> {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Ok(n
                .parse::<i64>()
                .map(Arg::Int)
                .unwrap_or_else(|_| Arg::Str(n.clone()))),
            ast::Value::SingleQuotedString(s) | ast::Value::EscapedStringLiteral(s) => {
                Ok(Arg::Str(s.clone()))
            }
            ast::Value::Null => Ok(Arg::Null),
            ast::Value::Placeholder(p) => p
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n >= 1)
                .map(|n| Arg::Param(n - 1))
                .ok_or_else(|| unsupported(format!("placeholder {p}"))),
            other => Err(unsupported(format!("literal {other}"))),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match arg(expr)? {
            Arg::Int(i) => Ok(Arg::Int(-i)),
            Arg::Str(s) => Ok(Arg::Str(format!("-{s}"))),
            _ => Err(unsupported(format!("expression {e}"))),
        },
        Expr::Nested(inner) => arg(inner),
        Expr::Cast { expr, .. } => arg(expr),
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            match name.as_str() {
                "current_timestamp" | "now" | "localtimestamp" => Ok(Arg::Now),
                _ => Err(unsupported(format!("function {name}()"))),
            }
        }
        other => Err(unsupported(format!("expression {other}"))),
    }
}

fn column_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(unquote_ident(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(unquote_ident),
        Expr::Nested(inner) => column_ident(inner),
        _ => None,
    }
}

fn unquote_ident(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

fn single_table(from: &[ast::TableWithJoins]) -> Result<String, SqlError> {
    match from {
        [t] if t.joins.is_empty() => match &t.relation {
            TableFactor::Table { name, .. } => Ok(object_name(name)),
            other => Err(unsupported(format!("FROM {other}"))),
        },
        [] => Err(unsupported("SELECT without FROM")),
        _ => Err(unsupported("joins")),
    }
}

/// The access path a WHERE clause describes, on table `t`.
fn access(t: &crate::catalog::SqlTable, selection: Option<&Expr>) -> Result<Access, SqlError> {
    let Some(e) = selection else {
        return Ok(Access::All);
    };
    let pk = &t.def.primary_key;
    let is_pk = |c: &str| pk.len() == 1 && t.column(c).ok() == Some(pk[0]);
    match e {
        Expr::Nested(inner) => access(t, Some(inner)),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let (col, val) = match (column_ident(left), column_ident(right)) {
                (Some(c), None) => (c, arg(right)?),
                (None, Some(c)) => (c, arg(left)?),
                _ => return Err(unsupported(format!("WHERE {e}"))),
            };
            if is_pk(&col) {
                return Ok(Access::PkEq(val));
            }
            let c = t.column(&col)?;
            match t.def.indexes.iter().position(|ix| ix.columns == [c]) {
                Some(ix) => Ok(Access::IndexEq(ix, val)),
                None => Err(unsupported(format!(
                    "WHERE {e}: {col} is neither the primary key nor an indexed column"
                ))),
            }
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } => match column_ident(expr) {
            Some(c) if is_pk(&c) => Ok(Access::PkBetween(arg(low)?, arg(high)?)),
            _ => Err(unsupported(format!(
                "WHERE {e}: BETWEEN on other than a one-column primary key"
            ))),
        },
        other => Err(unsupported(format!("WHERE {other}"))),
    }
}

fn plan_query(q: &ast::Query, catalog: &Catalog) -> Result<Plan, SqlError> {
    if q.with.is_some() || q.fetch.is_some() || !q.locks.is_empty() {
        return Err(unsupported("WITH, FETCH or FOR UPDATE/SHARE"));
    }
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Err(unsupported(format!("query {}", q.body)));
    };
    let table = single_table(&sel.from)?;
    if table == "mvcclab_stat_io" {
        return Ok(Plan::StatIo);
    }
    if table == "mvcclab_stat_cpu" {
        return Ok(Plan::StatCpu);
    }
    let t = catalog.lookup(&table)?;
    if sel.having.is_some()
        || !matches!(&sel.group_by, ast::GroupByExpr::Expressions(v, _) if v.is_empty())
    {
        return Err(unsupported("GROUP BY / HAVING"));
    }
    let mut items = Vec::new();
    let mut names = Vec::new();
    let mut types = Vec::new();
    for it in &sel.projection {
        let (expr, alias) = match it {
            SelectItem::Wildcard(_) => {
                for (i, c) in t.def.columns.iter().enumerate() {
                    items.push(Item::Column(i));
                    names.push(c.name.clone());
                    types.push(c.ty);
                }
                continue;
            }
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(unquote_ident(alias))),
            other => return Err(unsupported(format!("SELECT item {other}"))),
        };
        if let Some(c) = column_ident(expr) {
            let i = t.column(&c)?;
            items.push(Item::Column(i));
            names.push(alias.unwrap_or(c));
            types.push(t.def.columns[i].ty);
            continue;
        }
        let text = expr.to_string().to_ascii_lowercase().replace(' ', "");
        let text = text.strip_prefix("pg_catalog.").unwrap_or(&text);
        if text == "count(*)" || text == "count(1)" {
            items.push(Item::CountStar);
            names.push(alias.unwrap_or_else(|| "count".into()));
            types.push(ColumnType::BigInt);
        } else if let Some(c) = text.strip_prefix("sum(").and_then(|r| r.strip_suffix(')')) {
            let i = t.column(&unquote(c))?;
            if !matches!(
                t.def.columns[i].ty,
                ColumnType::Integer | ColumnType::SmallInt | ColumnType::TinyInt
            ) {
                return Err(unsupported("SUM of other than an integer column"));
            }
            items.push(Item::Sum(i));
            names.push(alias.unwrap_or_else(|| "sum".into()));
            types.push(ColumnType::BigInt);
        } else {
            return Err(unsupported(format!("SELECT item {expr}")));
        }
    }
    let aggregates = items
        .iter()
        .filter(|i| !matches!(i, Item::Column(_)))
        .count();
    if aggregates > 0 && aggregates < items.len() {
        return Err(unsupported(
            "aggregates beside plain columns without GROUP BY",
        ));
    }
    let distinct = match &sel.distinct {
        None | Some(ast::Distinct::All) => false,
        Some(ast::Distinct::Distinct) => true,
        Some(other) => return Err(unsupported(format!("{other}"))),
    };
    let order_by = match &q.order_by {
        None => None,
        Some(ob) => match &ob.kind {
            ast::OrderByKind::Expressions(v) if v.len() == 1 => {
                let c = column_ident(&v[0].expr)
                    .ok_or_else(|| unsupported(format!("ORDER BY {}", v[0].expr)))?;
                Some((
                    t.column(&c)?,
                    matches!(v[0].options.sort, Some(ast::OrderBySort::Desc)),
                ))
            }
            _ => return Err(unsupported("ORDER BY of more than one column")),
        },
    };
    let limit = match &q.limit_clause {
        None => None,
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => limit.as_ref().map(arg).transpose()?,
        Some(other) => return Err(unsupported(format!("{other}"))),
    };
    Ok(Plan::Select(SelectPlan {
        table,
        access: access(&t, sel.selection.as_ref())?,
        items,
        names,
        types,
        distinct,
        order_by,
        limit,
    }))
}

fn plan_insert(ins: &ast::Insert, catalog: &Catalog) -> Result<Plan, SqlError> {
    if ins.on.is_some() || ins.returning.is_some() {
        return Err(unsupported("INSERT … ON CONFLICT / RETURNING"));
    }
    let ast::TableObject::TableName(name) = &ins.table else {
        return Err(unsupported("INSERT INTO a table function"));
    };
    let table = object_name(name);
    let t = catalog.lookup(&table)?;
    let columns: Vec<usize> = if ins.columns.is_empty() {
        (0..t.def.columns.len()).collect()
    } else {
        ins.columns
            .iter()
            .map(|c| t.column(&unquote(&c.to_string())))
            .collect::<Result<_, _>>()?
    };
    let Some(src) = &ins.source else {
        return Err(unsupported("INSERT without VALUES"));
    };
    let SetExpr::Values(values) = src.body.as_ref() else {
        return Err(unsupported("INSERT … SELECT"));
    };
    let mut rows = Vec::with_capacity(values.rows.len());
    for r in &values.rows {
        if r.len() != columns.len() {
            return Err(SqlError::new(
                "42601",
                format!(
                    "INSERT has {} expressions for {} target columns",
                    r.len(),
                    columns.len()
                ),
            ));
        }
        rows.push(r.iter().map(arg).collect::<Result<Vec<_>, _>>()?);
    }
    Ok(Plan::Insert {
        table,
        columns,
        rows,
    })
}

fn pk_key(t: &crate::catalog::SqlTable, selection: Option<&Expr>) -> Result<Arg, SqlError> {
    match access(t, selection)? {
        Access::PkEq(a) => Ok(a),
        _ => Err(unsupported(
            "UPDATE / DELETE other than of one row by its primary key (WHERE pk = value)",
        )),
    }
}

fn plan_update(u: &ast::Update, catalog: &Catalog) -> Result<Plan, SqlError> {
    if u.from.is_some() || u.returning.is_some() || !u.table.joins.is_empty() {
        return Err(unsupported("UPDATE … FROM / RETURNING"));
    }
    let table = single_table(std::slice::from_ref(&u.table))?;
    let t = catalog.lookup(&table)?;
    let key = pk_key(&t, u.selection.as_ref())?;
    let mut set = Vec::new();
    for a in &u.assignments {
        let target = unquote(&a.target.to_string());
        let c = t.column(&target)?;
        let op = match &a.value {
            Expr::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::Plus | BinaryOperator::Minus)
                    && column_ident(left).as_deref() == Some(target.as_str()) =>
            {
                SetOp::Add(arg(right)?, matches!(op, BinaryOperator::Minus))
            }
            v => SetOp::Set(arg(v)?),
        };
        set.push((c, op));
    }
    Ok(Plan::Update { table, key, set })
}

fn plan_delete(d: &ast::Delete, catalog: &Catalog) -> Result<Plan, SqlError> {
    if d.using.is_some() || d.returning.is_some() {
        return Err(unsupported("DELETE … USING / RETURNING"));
    }
    let from = match &d.from {
        FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
    };
    let table = single_table(from)?;
    let t = catalog.lookup(&table)?;
    let key = pk_key(&t, d.selection.as_ref())?;
    Ok(Plan::Delete { table, key })
}

/// A column type from its SQL spelling: (type, is SERIAL).
fn column_type(sql: &str) -> Result<(ColumnType, bool), SqlError> {
    let s = sql.to_ascii_lowercase().replace(' ', "");
    let n = |p: &str| {
        s.strip_prefix(p)
            .and_then(|r| r.strip_prefix('('))
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|r| r.parse::<u16>().ok())
    };
    Ok(match s.as_str() {
        "serial" | "serial4" => (ColumnType::Integer, true),
        "int" | "integer" | "int4" => (ColumnType::Integer, false),
        "bigint" | "int8" => (ColumnType::BigInt, false),
        "smallint" | "int2" => (ColumnType::SmallInt, false),
        "text" => (ColumnType::Text, false),
        "timestamp" | "timestamp(6)" | "timestampwithouttimezone" => (ColumnType::DateTime6, false),
        "date" => (ColumnType::Date, false),
        "char" | "character" => (ColumnType::Char(1), false),
        _ => {
            if let Some(k) = n("char").or_else(|| n("character")) {
                (ColumnType::Char(k), false)
            } else if let Some(k) = n("varchar").or_else(|| n("charactervarying")) {
                (ColumnType::Varchar(k), false)
            } else {
                return Err(unsupported(format!("column type {sql}")));
            }
        }
    })
}

/// CREATE TABLE. Storage parameters (`WITH (fillfactor=100)`, pgbench's) are accepted and
/// not applied: fillfactor is a switch of the design (`--set fillfactor=N`), not of a table.
fn plan_create_table(ct: &ast::CreateTable) -> Result<Plan, SqlError> {
    if ct.query.is_some() || ct.temporary {
        return Err(unsupported("CREATE TABLE AS / TEMPORARY tables"));
    }
    let table = object_name(&ct.name);
    let mut columns = Vec::new();
    let mut primary_key = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let (ty, serial) = column_type(&c.data_type.to_string())?;
        let mut spec = ColumnSpec {
            name: unquote_ident(&c.name),
            ty,
            not_null: serial,
            default: None,
            serial,
        };
        for o in &c.options {
            match &o.option {
                ast::ColumnOption::NotNull => spec.not_null = true,
                ast::ColumnOption::Null => spec.not_null = false,
                ast::ColumnOption::Default(e) => spec.default = Some(arg(e)?),
                ast::ColumnOption::PrimaryKey(_) => {
                    spec.not_null = true;
                    primary_key.push(i);
                }
                other => return Err(unsupported(format!("column option {other}"))),
            }
        }
        columns.push(spec);
    }
    for con in &ct.constraints {
        match con {
            ast::TableConstraint::PrimaryKey(pk) => {
                for col in &pk.columns {
                    let name = unquote(&col.to_string());
                    let i = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                        SqlError::new(
                            "42703",
                            format!("column \"{name}\" named in key does not exist"),
                        )
                    })?;
                    columns[i].not_null = true;
                    primary_key.push(i);
                }
            }
            other => return Err(unsupported(format!("table constraint {other}"))),
        }
    }
    Ok(Plan::CreateTable {
        table,
        columns,
        primary_key,
        if_not_exists: ct.if_not_exists,
    })
}
