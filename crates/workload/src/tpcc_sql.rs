//! TPC-C on a real server as Percona-Lab/sysbench-tpcc sends it (commit 585e2b8): the
//! DDL of `tpcc_common.lua` `create_tables`, the load's multi-row INSERTs, the statements
//! of `tpcc_run.lua`'s five transactions, and the checks 1–4 of `tpcc_check.lua`, as SQL
//! text in the PostgreSQL or MySQL dialect, sent through any [`SqlConn`] (crate
//! mvcclab-servers gives one for each server).
//!
//! # Statements
//! sysbench-tpcc formats every value into the text and sends each statement as a plain
//! query (`con:query`, `con:query_row`); so does this module. The statements are the
//! script's, in its order, with its locking reads: new-order's `SELECT ... FROM district
//! ... FOR UPDATE` and `SELECT ... FROM stock ... FOR UPDATE`, payment's `SELECT ... FROM
//! customer ... FOR UPDATE` and delivery's `SELECT no_o_id ... ORDER BY no_o_id LIMIT 1 FOR
//! UPDATE`. (The presets have no locking read; `tpcc_embedded`'s module doc says what they
//! do instead.) The stock-level variant is the script's `case1`, one join with
//! `COUNT(DISTINCT s_i_id)`. The script's quirks are kept as [`crate::tpcc`] describes
//! them (order-status binds `d_id` as `ol_o_id`; every "remote" warehouse is the home one).
//!
//! Each connection runs at the script's default `--trx_level=RR` (`set_isolation_level`:
//! `SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ` on
//! PostgreSQL, `SET SESSION tx_isolation='REPEATABLE-READ'` on MariaDB 10.11, the variable
//! `SHOW VARIABLES LIKE 't%_isolation'` finds first) and sends `BEGIN` … `COMMIT` per
//! transaction. `tpcc.lua`'s `SET autocommit=0` is sent to MariaDB only (PostgreSQL has no
//! such setting; BEGIN opens the transaction either way).
//!
//! # Fill factor
//! With `fillfactor = Some(n)` (mvcclab's `--fillfactor`, not a sysbench-tpcc option) every
//! PostgreSQL table is created `WITH (fillfactor = n)` and every index, the primary keys
//! included, `WITH (fillfactor = n)` (PostgreSQL 15 manual, CREATE TABLE "Storage
//! Parameters", CREATE INDEX "Index Storage Parameters"). MariaDB has no per-table fill
//! factor: the server target sets the global `innodb_fill_factor` instead, which only
//! applies to sorted index builds (MariaDB KB "innodb_fill_factor").

use crate::driver::{ErrorKind, OpError};
use crate::sql::Dialect;
use crate::tpcc::{by_name_position, table_defs, TpccSize, TpccTable, TpccTxn, DIST_PER_WARE};
use crate::tpcc_embedded::CheckOutcome;
use crate::tpcc_load::{items_rng, load_items, load_warehouse, warehouse_rng, TpccSink};
use mvcclab_engine::catalog::{ColumnType, Row, TableDef, Value};

/// Rows of a result as text, `None` for NULL.
pub type TextRows = Vec<Vec<Option<String>>>;

/// A connection that sends one statement as a plain query and returns its rows as text.
pub trait SqlConn {
    /// Sends `sql` (one statement) and returns its rows (empty for statements without).
    ///
    /// Errors: the server's, as [`OpError`] with the server's code and `sql` as its
    /// statement.
    fn query(&mut self, sql: &str) -> Result<TextRows, OpError>;
}

/// A column type as the script declares it: `tinyint_type` is `smallint` on PostgreSQL
/// and `tinyint` on MySQL, `datetime_type` `timestamp` and `datetime`.
fn column_sql(d: Dialect, ty: ColumnType) -> String {
    match (d, ty) {
        (Dialect::PostgreSql, ColumnType::DateTime6) => "timestamp".into(),
        (Dialect::MySql, ColumnType::DateTime6) => "datetime".into(),
        (Dialect::PostgreSql, t) => t.postgres_sql(),
        (Dialect::MySql, t) => t.mariadb_sql(),
    }
}

fn with_fillfactor(d: Dialect, fillfactor: Option<u8>) -> String {
    match (d, fillfactor) {
        (Dialect::PostgreSql, Some(n)) => format!(" WITH (fillfactor = {n})"),
        _ => String::new(),
    }
}

fn names(def: &TableDef, cols: &[usize]) -> String {
    cols.iter()
        .map(|&c| def.columns[c].name.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// `CREATE TABLE` of one table of the script (`create_tables`), with its primary key.
pub fn create_table(d: Dialect, def: &TableDef, fillfactor: Option<u8>) -> String {
    let ff = with_fillfactor(d, fillfactor);
    let mut cols: Vec<String> = def
        .columns
        .iter()
        .map(|c| {
            format!(
                "{} {}{}",
                c.name,
                column_sql(d, c.ty),
                if c.nullable { "" } else { " not null" }
            )
        })
        .collect();
    if !def.primary_key.is_empty() {
        cols.push(format!(
            "PRIMARY KEY ({}){ff}",
            names(def, &def.primary_key)
        ));
    }
    let tail = match d {
        Dialect::PostgreSql => ff,
        Dialect::MySql => " /*! ENGINE = innodb */".into(),
    };
    format!(
        "CREATE TABLE IF NOT EXISTS {} ({}){tail}",
        def.name,
        cols.join(", ")
    )
}

/// The DDL of table set `n`: the nine `CREATE TABLE`s, the six `CREATE INDEX`es run after
/// the items are loaded, and (with `use_fk`) the ten `ALTER TABLE ... ADD CONSTRAINT ...
/// FOREIGN KEY`s.
pub fn ddl(d: Dialect, n: u32, use_fk: bool, fillfactor: Option<u8>) -> [Vec<String>; 3] {
    let defs = table_defs(n, use_fk);
    let ff = with_fillfactor(d, fillfactor);
    let tables = defs
        .iter()
        .map(|t| create_table(d, t, fillfactor))
        .collect();
    let mut indexes = Vec::new();
    let mut fks = Vec::new();
    for t in &defs {
        for i in &t.indexes {
            indexes.push(format!(
                "CREATE INDEX {} ON {} ({}){ff}",
                i.name,
                t.name,
                names(t, &i.columns)
            ));
        }
        for f in &t.foreign_keys {
            fks.push(format!(
                "ALTER TABLE {} ADD CONSTRAINT {} FOREIGN KEY({}) REFERENCES {}({})",
                t.name,
                f.name,
                names(t, &f.columns),
                f.referenced_table,
                f.referenced_columns.join(",")
            ));
        }
    }
    [tables, indexes, fks]
}

/// A value as an SQL literal of dialect `d` (MySQL's strings escape `\` too).
pub fn literal(d: Dialect, v: &Value) -> String {
    match (d, v) {
        (Dialect::MySql, Value::Text(s)) => {
            format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
        }
        _ => v.to_string(),
    }
}

/// Rows per multi-row INSERT of the load (sysbench's `bulk_insert_*` sends up to its
/// buffer size; the rows, not the statement size, decide what is stored).
const LOAD_BATCH_ROWS: usize = 500;

/// The load's rows as multi-row INSERTs of one table set.
struct SqlLoader<'a> {
    dialect: Dialect,
    defs: Vec<TableDef>,
    exec: &'a dyn Fn(&str) -> Result<(), String>,
    table: Option<TpccTable>,
    rows: Vec<String>,
}

impl TpccSink for SqlLoader<'_> {
    fn insert(&mut self, table: TpccTable, row: Row) -> Result<(), String> {
        if self.table != Some(table) || self.rows.len() >= LOAD_BATCH_ROWS {
            self.flush()?;
            self.table = Some(table);
        }
        let vals: Vec<String> = row.iter().map(|v| literal(self.dialect, v)).collect();
        self.rows.push(format!("({})", vals.join(",")));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        let Some(t) = self.table else {
            return Ok(());
        };
        if self.rows.is_empty() {
            return Ok(());
        }
        let def = &self.defs[t as usize];
        let cols: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            def.name,
            cols.join(", "),
            self.rows.join(",")
        );
        self.rows.clear();
        (self.exec)(&sql)
    }
}

/// The nine table names of set `n`, in the order `cleanup()` drops them.
fn drop_order(n: u32) -> Vec<String> {
    [
        "stock",
        "warehouse",
        "district",
        "customer",
        "history",
        "new_orders",
        "orders",
        "order_line",
        "item",
    ]
    .iter()
    .map(|t| format!("{t}{n}"))
    .collect()
}

/// sysbench-tpcc's `prepare` on a server: per table set, any old tables dropped, the
/// tables created, the items loaded, the indexes and foreign keys added (`create_tables`);
/// then per warehouse and set every table's rows (`load_tables`), the same rows from the
/// same seed as the embedded load. On MySQL the foreign-key checks are off for the
/// loading session, as `cmd_prepare` does (`SET FOREIGN_KEY_CHECKS=0`). `exec` sends one
/// statement.
///
/// Errors: a bad size; the first failing statement's error, as text.
pub fn load(
    d: Dialect,
    opts: &crate::sysbench::SysbenchOptions,
    seed: u64,
    fillfactor: Option<u8>,
    exec: &dyn Fn(&str) -> Result<(), String>,
) -> Result<(), String> {
    let size = opts.tpcc_size();
    size.validate()?;
    if d == Dialect::MySql {
        exec("SET FOREIGN_KEY_CHECKS=0")?;
    }
    for n in 1..=opts.tables {
        for t in drop_order(n) {
            exec(&match d {
                Dialect::PostgreSql => format!("DROP TABLE IF EXISTS {t} CASCADE"),
                Dialect::MySql => format!("DROP TABLE IF EXISTS {t}"),
            })?;
        }
        let [tables, indexes, fks] = ddl(d, n, opts.use_fk, fillfactor);
        for q in &tables {
            exec(q)?;
        }
        let mut sink = SqlLoader {
            dialect: d,
            defs: table_defs(n, false),
            exec,
            table: None,
            rows: Vec::new(),
        };
        load_items(&mut sink, &mut items_rng(seed, n, &opts.rand), size.items)?;
        for q in indexes.iter().chain(&fks) {
            exec(q)?;
        }
    }
    for w in 1..=size.warehouses {
        for n in 1..=opts.tables {
            let mut sink = SqlLoader {
                dialect: d,
                defs: table_defs(n, false),
                exec,
                table: None,
                rows: Vec::new(),
            };
            load_warehouse(
                &mut sink,
                &mut warehouse_rng(seed, n, w, &opts.rand),
                &size,
                w,
            )?;
        }
    }
    Ok(())
}

/// The statements each connection sends once before its first transaction
/// (`tpcc.lua` `thread_init`; see the module doc).
pub fn session_setup(d: Dialect) -> Vec<&'static str> {
    match d {
        Dialect::PostgreSql => {
            vec!["SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ"]
        }
        Dialect::MySql => vec![
            "SET SESSION tx_isolation='REPEATABLE-READ'",
            "SET autocommit=0",
        ],
    }
}

fn fail(message: String) -> OpError {
    OpError::other(message)
}

/// The first row of `sql` (the script's `con:query_row`).
fn row(c: &mut dyn SqlConn, sql: &str) -> Result<Vec<Option<String>>, OpError> {
    c.query(sql)?
        .into_iter()
        .next()
        .ok_or_else(|| fail(format!("no row: {}", one_line(sql))))
}

fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn num(v: &Option<String>) -> f64 {
    text(v).trim().parse().unwrap_or(0.0)
}

/// Runs one transaction of the mix as `tpcc_run.lua` sends it, from `BEGIN` to `COMMIT`.
///
/// Errors: the server's; the script's own failures: the 1 % of new-orders with an unused
/// item (rolled back, "item not found"), a by-name lookup that finds nobody. After an
/// error the transaction may still be open: the caller rolls it back.
pub fn execute(c: &mut dyn SqlConn, txn: &TpccTxn) -> Result<(), OpError> {
    c.query("BEGIN")?;
    match txn {
        TpccTxn::NewOrder {
            table,
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
        } => new_order(c, *table, *w_id, *d_id, *c_id, lines, *all_local)?,
        TpccTxn::Payment {
            table,
            w_id,
            d_id,
            c_id,
            c_w_id,
            c_d_id,
            h_amount,
            by_name,
        } => payment(
            c,
            *table,
            (*w_id, *d_id),
            (*c_w_id, *c_d_id, *c_id),
            *h_amount,
            by_name.as_deref(),
        )?,
        TpccTxn::OrderStatus {
            table,
            w_id,
            d_id,
            c_id,
            by_name,
        } => order_status(c, *table, *w_id, *d_id, *c_id, by_name.as_deref())?,
        TpccTxn::Delivery {
            table,
            w_id,
            o_carrier_id,
        } => delivery(c, *table, *w_id, *o_carrier_id)?,
        TpccTxn::StockLevel {
            table,
            w_id,
            d_id,
            level,
        } => {
            let next = num(&row(
                c,
                &format!("SELECT d_next_o_id FROM district{table} WHERE d_id = {d_id} AND d_w_id= {w_id}"),
            )?[0]) as i64;
            c.query(&format!(
                "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line{table}, stock{table} \
                 WHERE ol_w_id = {w_id} AND ol_d_id = {d_id} AND ol_o_id < {next} \
                 AND ol_o_id >= {} AND s_w_id= {w_id} AND s_i_id=ol_i_id AND s_quantity < {level}",
                next - 20
            ))?;
        }
    }
    c.query("COMMIT")?;
    Ok(())
}

fn new_order(
    c: &mut dyn SqlConn,
    t: u32,
    w: u32,
    d: u32,
    cid: u32,
    lines: &[crate::tpcc::OrderLineInput],
    all_local: bool,
) -> Result<(), OpError> {
    let r = row(
        c,
        &format!(
            "SELECT c_discount, c_last, c_credit, w_tax FROM customer{t}, warehouse{t} \
             WHERE w_id = {w} AND c_w_id = w_id AND c_d_id = {d} AND c_id = {cid}"
        ),
    )?;
    let (c_discount, w_tax) = (num(&r[0]), num(&r[3]));
    let r = row(
        c,
        &format!(
            "SELECT d_next_o_id, d_tax FROM district{t} WHERE d_w_id = {w} AND d_id = {d} FOR UPDATE"
        ),
    )?;
    let (o_id, d_tax) = (num(&r[0]) as i64, num(&r[1]));
    c.query(&format!(
        "UPDATE district{t} SET d_next_o_id = {} WHERE d_id = {d} AND d_w_id= {w}",
        o_id + 1
    ))?;
    c.query(&format!(
        "INSERT INTO orders{t} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) \
         VALUES ({o_id},{d},{w},{cid},NOW(),{},{})",
        lines.len(),
        u8::from(all_local)
    ))?;
    c.query(&format!(
        "INSERT INTO new_orders{t} (no_o_id, no_d_id, no_w_id) VALUES ({o_id},{d},{w})"
    ))?;
    for (n, &(i_id, sup, qty)) in lines.iter().enumerate() {
        // The script's unused item is -1; tpcc.rs draws it as 0: neither exists.
        let i_id = if i_id == 0 { -1 } else { i_id };
        let item = c.query(&format!(
            "SELECT i_price, i_name, i_data FROM item{t} WHERE i_id = {i_id}"
        ))?;
        let Some(item) = item.into_iter().next() else {
            return Err(OpError {
                kind: ErrorKind::ScriptRollback,
                ..fail("item not found (the script's 1 % rollback)".into())
            });
        };
        let s = row(
            c,
            &format!(
                "SELECT s_quantity, s_data, s_dist_{d:02} s_dist FROM stock{t} \
                 WHERE s_i_id = {i_id} AND s_w_id= {sup} FOR UPDATE"
            ),
        )?;
        let s_qty = num(&s[0]) as i64;
        let q = qty as i64;
        let new_qty = if s_qty > q { s_qty - q } else { s_qty - q + 91 };
        c.query(&format!(
            "UPDATE stock{t} SET s_quantity = {new_qty} WHERE s_i_id = {i_id} AND s_w_id= {sup}"
        ))?;
        // `%d` of a float in LuaJIT's string.format truncates it.
        let amount = (q as f64 * num(&item[0]) * (1.0 + w_tax + d_tax) * (1.0 - c_discount)) as i64;
        c.query(&format!(
            "INSERT INTO order_line{t} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
             ol_quantity, ol_amount, ol_dist_info) VALUES ({o_id},{d},{w},{},{i_id},{sup},{qty},{amount},'{}')",
            n + 1,
            text(&s[2]).replace('\'', "''")
        ))?;
    }
    Ok(())
}

/// The customer id chosen by last name: `SELECT count(c_id)`, then the rows `ORDER BY
/// c_first`, the one at [`by_name_position`].
fn by_name(
    c: &mut dyn SqlConn,
    t: u32,
    w: u32,
    d: u32,
    last: &str,
    cols: &str,
) -> Result<u32, OpError> {
    let where_ = format!("WHERE c_w_id = {w} AND c_d_id= {d} AND c_last='{last}'");
    let n = num(&row(
        c,
        &format!("SELECT count(c_id) namecnt FROM customer{t} {where_}"),
    )?[0]);
    let rows = c.query(&format!(
        "SELECT {cols} FROM customer{t} {where_} ORDER BY c_first"
    ))?;
    let pos = by_name_position((n as usize).min(rows.len()))
        .ok_or_else(|| fail(format!("no customer named {last} in district {w}/{d}")))?;
    let id = rows[pos - 1].last().cloned().flatten();
    Ok(num(&id) as u32)
}

fn payment(
    c: &mut dyn SqlConn,
    t: u32,
    (w, d): (u32, u32),
    (cw, cd, cid): (u32, u32, u32),
    h_amount: u32,
    last: Option<&str>,
) -> Result<(), OpError> {
    c.query(&format!(
        "UPDATE warehouse{t} SET w_ytd = w_ytd + {h_amount} WHERE w_id = {w}"
    ))?;
    let wh = row(
        c,
        &format!("SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse{t} WHERE w_id = {w}"),
    )?;
    c.query(&format!(
        "UPDATE district{t} SET d_ytd = d_ytd + {h_amount} WHERE d_w_id = {w} AND d_id= {d}"
    ))?;
    let di = row(
        c,
        &format!("SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district{t} WHERE d_w_id = {w} AND d_id = {d}"),
    )?;
    let cid = match last {
        Some(l) => by_name(c, t, cw, cd, l, "c_id")?,
        None => cid,
    };
    let key = format!("WHERE c_w_id = {cw} AND c_d_id= {cd} AND c_id={cid}");
    let cu = row(
        c,
        &format!(
            "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
             c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_since \
             FROM customer{t} {key} FOR UPDATE"
        ),
    )?;
    let balance = num(&cu[12]) - h_amount as f64;
    let ytd = num(&cu[13]) + h_amount as f64;
    if text(&cu[9]) == "BC" {
        let data = row(c, &format!("SELECT c_data FROM customer{t} {key}"))?;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|x| x.as_secs())
            .unwrap_or(0);
        let new_data: String = format!(
            "| {cid:4} {cd:2} {cw:4} {d:2} {w:4} ${:7.2} {secs:12} {:>24}",
            h_amount as f64,
            text(&data[0])
        )
        .chars()
        .take(500)
        .collect();
        c.query(&format!(
            "UPDATE customer{t} SET c_balance={balance:.6}, c_ytd_payment={ytd:.6}, c_data='{}' {key}",
            new_data.replace('\'', "''")
        ))?;
    } else {
        c.query(&format!(
            "UPDATE customer{t} SET c_balance={balance:.6}, c_ytd_payment={ytd:.6} {key}"
        ))?;
    }
    let h_data = format!("{:>10} {:>10}   ", text(&wh[5]), text(&di[5]));
    c.query(&format!(
        "INSERT INTO history{t} (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
         VALUES ({cd},{cw},{cid},{d},{w},NOW(),{h_amount},'{}')",
        h_data.replace('\'', "''")
    ))?;
    Ok(())
}

fn order_status(
    c: &mut dyn SqlConn,
    t: u32,
    w: u32,
    d: u32,
    cid: u32,
    last: Option<&str>,
) -> Result<(), OpError> {
    let cid = match last {
        Some(l) => by_name(c, t, w, d, l, "c_balance, c_first, c_middle, c_id")?,
        None => {
            row(
                c,
                &format!(
                    "SELECT c_balance, c_first, c_middle, c_last FROM customer{t} \
                     WHERE c_w_id = {w} AND c_d_id={d} AND c_id={cid}"
                ),
            )?;
            cid
        }
    };
    let o = row(
        c,
        &format!(
            "SELECT o_id, o_carrier_id, o_entry_d FROM orders{t} WHERE o_w_id = {w} \
             AND o_d_id = {d} AND o_c_id = {cid} ORDER BY o_id DESC"
        ),
    )?;
    let o_id = num(&o[0]) as i64;
    std::hint::black_box(o_id);
    // The script binds d_id as ol_o_id (crate::tpcc module doc).
    c.query(&format!(
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line{t} \
         WHERE ol_w_id = {w} AND ol_d_id = {d} AND ol_o_id = {d}"
    ))?;
    Ok(())
}

fn delivery(c: &mut dyn SqlConn, t: u32, w: u32, carrier: u32) -> Result<(), OpError> {
    for d in 1..=DIST_PER_WARE {
        let first = c.query(&format!(
            "SELECT no_o_id FROM new_orders{t} WHERE no_d_id = {d} AND no_w_id = {w} \
             ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE"
        ))?;
        let Some(no) = first.into_iter().next() else {
            continue;
        };
        let o = num(&no[0]) as i64;
        c.query(&format!(
            "DELETE FROM new_orders{t} WHERE no_o_id = {o} AND no_d_id = {d} AND no_w_id = {w}"
        ))?;
        let k = format!("WHERE o_id = {o} AND o_d_id = {d} AND o_w_id = {w}");
        let cid = num(&row(c, &format!("SELECT o_c_id FROM orders{t} {k}"))?[0]) as i64;
        c.query(&format!(
            "UPDATE orders{t} SET o_carrier_id = {carrier} {k}"
        ))?;
        let lk = format!("WHERE ol_o_id = {o} AND ol_d_id = {d} AND ol_w_id = {w}");
        c.query(&format!(
            "UPDATE order_line{t} SET ol_delivery_d = NOW() {lk}"
        ))?;
        let sum = num(&row(
            c,
            &format!("SELECT SUM(ol_amount) sm FROM order_line{t} {lk}"),
        )?[0]);
        c.query(&format!(
            "UPDATE customer{t} SET c_balance = c_balance + {sum:.6}, \
             c_delivery_cnt = c_delivery_cnt + 1 WHERE c_id = {cid} AND c_d_id = {d} AND c_w_id = {w}"
        ))?;
    }
    Ok(())
}

/// `tpcc_check.lua`'s checks 1–4 on every warehouse of every set, with the script's
/// queries (per warehouse: check 1 `sum(d_ytd) − max(w_ytd)` is 0; check 2 `d_next_o_id −
/// 1` = max(`o_id`) = max(`no_o_id`) per district; check 3 max − min + 1 of `no_o_id` =
/// their count; check 4 no district whose sum(`o_ol_cnt`) differs from its order lines).
///
/// Errors: the server's, as text.
pub fn check(
    c: &mut dyn SqlConn,
    tables: u32,
    size: &TpccSize,
) -> Result<Vec<CheckOutcome>, String> {
    let mut out = Vec::new();
    let q = |c: &mut dyn SqlConn, sql: String| c.query(&sql).map_err(|e| e.message);
    for t in 1..=tables {
        for w in 1..=size.warehouses {
            let mut p: [Vec<String>; 4] = Default::default();
            for r in q(
                c,
                format!(
                    "SELECT d_w_id,sum(d_ytd)-max(w_ytd) diff FROM district{t},warehouse{t} \
                 WHERE d_w_id=w_id AND w_id={w} group by d_w_id"
                ),
            )? {
                if num(&r[1]) != 0.0 {
                    p[0].push(format!("sum(d_ytd) - w_ytd = {}", text(&r[1])));
                }
            }
            for r in q(c, format!(
                "SELECT dis.d_id, d_next_o_id-1,mo,mno FROM district{t} dis, (SELECT o_d_id,max(o_id) mo \
                 FROM orders{t} WHERE o_w_id={w} GROUP BY o_d_id) q, (select no_d_id,max(no_o_id) mno \
                 from new_orders{t} where no_w_id={w} group by no_d_id) no where d_w_id={w} \
                 and q.o_d_id=dis.d_id and no.no_d_id=dis.d_id"
            ))? {
                if num(&r[1]) != num(&r[2]) || num(&r[1]) != num(&r[3]) {
                    p[1].push(format!(
                        "district {}: d_next_o_id-1 {}, max(o_id) {}, max(no_o_id) {}",
                        text(&r[0]),
                        text(&r[1]),
                        text(&r[2]),
                        text(&r[3])
                    ));
                }
            }
            for r in q(
                c,
                format!(
                    "select no_d_id,max(no_o_id)-min(no_o_id)+1,count(*) from new_orders{t} \
                 where no_w_id={w} group by no_d_id"
                ),
            )? {
                if num(&r[1]) != num(&r[2]) {
                    p[2].push(format!(
                        "district {}: max-min+1 {} but {} rows",
                        text(&r[0]),
                        text(&r[1]),
                        text(&r[2])
                    ));
                }
            }
            for r in q(c, format!(
                "SELECT count(*) FROM (SELECT o_d_id, SUM(o_ol_cnt) sm1, MAX(cn) as cn FROM orders{t},\
                 (SELECT ol_d_id, COUNT(*) cn FROM order_line{t} WHERE ol_w_id={w} GROUP BY ol_d_id) ol \
                 WHERE o_w_id={w} AND ol_d_id=o_d_id GROUP BY o_d_id) t1 WHERE sm1<>cn"
            ))? {
                if num(&r[0]) != 0.0 {
                    p[3].push(format!("{} districts with sum(o_ol_cnt) != order lines", text(&r[0])));
                }
            }
            for (i, problems) in p.into_iter().enumerate() {
                out.push(CheckOutcome {
                    check: i as u8 + 1,
                    table: t,
                    w_id: w,
                    problems,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_follows_the_script_in_both_dialects() {
        let [t, i, f] = ddl(Dialect::PostgreSql, 2, true, Some(75));
        assert_eq!(t.len(), 9);
        assert_eq!(i.len(), 6);
        assert_eq!(f.len(), 10);
        assert_eq!(
            t[0],
            "CREATE TABLE IF NOT EXISTS warehouse2 (w_id smallint not null, w_name varchar(10), \
             w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), \
             w_zip char(9), w_tax numeric(4,2), w_ytd numeric(12,2), \
             PRIMARY KEY (w_id) WITH (fillfactor = 75)) WITH (fillfactor = 75)"
        );
        assert!(t[3].starts_with("CREATE TABLE IF NOT EXISTS history2 (h_c_id integer,"));
        assert!(!t[3].contains("PRIMARY KEY"));
        assert!(t[2].contains("c_since timestamp,"), "{}", t[2]);
        assert_eq!(
            i[0],
            "CREATE INDEX idx_customer2 ON customer2 (c_w_id,c_d_id,c_last,c_first) WITH (fillfactor = 75)"
        );
        assert!(f.contains(
            &"ALTER TABLE stock2 ADD CONSTRAINT fkey_stock_2_2 FOREIGN KEY(s_i_id) REFERENCES item2(i_id)"
                .to_string()
        ));
        let [t, i, f] = ddl(Dialect::MySql, 1, false, Some(75));
        assert!(f.is_empty());
        assert!(t[1].contains("d_id TINYINT not null"), "{}", t[1]);
        assert!(t[2].contains("c_since datetime,"), "{}", t[2]);
        assert!(
            t[0].ends_with("PRIMARY KEY (w_id)) /*! ENGINE = innodb */"),
            "{}",
            t[0]
        );
        assert!(!i[0].contains("fillfactor"));
        assert_eq!(literal(Dialect::MySql, &Value::text("a\\'b")), "'a\\\\''b'");
        assert_eq!(
            literal(Dialect::PostgreSql, &Value::text("a\\'b")),
            "'a\\''b'"
        );
    }

    /// A connection that records statements and answers from a script of results.
    struct Fake {
        sent: Vec<String>,
        answer: fn(&str) -> TextRows,
    }

    impl SqlConn for Fake {
        fn query(&mut self, sql: &str) -> Result<TextRows, OpError> {
            self.sent.push(one_line(sql));
            Ok((self.answer)(sql))
        }
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn new_order_sends_the_scripts_statements_with_its_locking_reads() {
        let mut c = Fake {
            sent: Vec::new(),
            answer: |q| {
                if q.contains("c_discount") {
                    vec![vec![s("0.10"), s("BARBARBAR"), s("GC"), s("0.05")]]
                } else if q.contains("d_next_o_id, d_tax") {
                    vec![vec![s("3001"), s("0.10")]]
                } else if q.contains("i_price") {
                    vec![vec![s("10.00"), s("n"), s("d")]]
                } else if q.contains("s_quantity, s_data") {
                    vec![vec![s("12"), s("x"), s("DIST")]]
                } else {
                    vec![]
                }
            },
        };
        let txn = TpccTxn::NewOrder {
            table: 1,
            w_id: 1,
            d_id: 3,
            c_id: 7,
            lines: vec![(5, 1, 4), (9, 1, 20)],
            all_local: true,
        };
        execute(&mut c, &txn).unwrap();
        let sent = &c.sent;
        assert_eq!(sent.first().map(String::as_str), Some("BEGIN"));
        assert_eq!(sent.last().map(String::as_str), Some("COMMIT"));
        assert!(sent.contains(
            &"SELECT d_next_o_id, d_tax FROM district1 WHERE d_w_id = 1 AND d_id = 3 FOR UPDATE"
                .to_string()
        ));
        assert!(sent.contains(
            &"UPDATE district1 SET d_next_o_id = 3002 WHERE d_id = 3 AND d_w_id= 1".to_string()
        ));
        assert!(sent.contains(
            &"SELECT s_quantity, s_data, s_dist_03 s_dist FROM stock1 WHERE s_i_id = 5 AND s_w_id= 1 FOR UPDATE"
                .to_string()
        ));
        // 12 > 4: 8; 12 <= 20: 12 - 20 + 91 = 83.
        assert!(sent.contains(
            &"UPDATE stock1 SET s_quantity = 8 WHERE s_i_id = 5 AND s_w_id= 1".to_string()
        ));
        assert!(sent.contains(
            &"UPDATE stock1 SET s_quantity = 83 WHERE s_i_id = 9 AND s_w_id= 1".to_string()
        ));
        // 4 × 10.00 × 1.15 × 0.9 = 41.4, truncated.
        assert!(sent.iter().any(|q| q.starts_with("INSERT INTO order_line1")
            && q.ends_with("VALUES (3001,3,1,1,5,1,4,41,'DIST')")));
    }
}
