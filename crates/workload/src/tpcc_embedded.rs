//! TPC-C on mvcclab's engine: the load of `tpcc_common.lua` (`create_tables`,
//! `load_tables`), the five transactions of `tpcc_run.lua` as engine calls, and the
//! consistency checks 1–4 of `tpcc_check.lua` (TPC-C §3.3.2.1–4).
//!
//! # Statements as engine calls
//! Each SQL statement of the script is one or a few engine calls on the same rows and
//! indexes: a point SELECT is `get` by primary key, `WHERE c_w_id = ? AND c_d_id = ? AND
//! c_last = ? ORDER BY c_first` a lookup by a leading part of `idx_customer`, `ORDER BY
//! o_id DESC` on `idx_orders` the last entry of its leading part `(w, d, c)`, a
//! `new_orders` or `order_line` range a primary-key range scan, `UPDATE ... SET x = x + v`
//! an `Assign::Add`/`AddDecimal`, and stock-level's join a nested loop over the order
//! lines with a `stock` lookup by primary key per distinct item.
//!
//! The script's locking reads (`SELECT ... FOR UPDATE`: district and stock in new-order,
//! customer in payment, the oldest new order in delivery) are `get_for_update`, which
//! locks the row until the end of the transaction as each real engine does (postgres:
//! `heap_lock_tuple`, the lock in xmax, WAL-logged; innodb: a record X lock, nothing
//! logged): so two new-orders of a district wait for each other at the district row
//! and never take the same order id, and two orders of one item never lose a stock
//! decrement. Delivery's `ORDER BY no_o_id LIMIT 1 FOR UPDATE` is the range scan's first
//! row, then `get_for_update` of it.

use crate::driver::{ErrorKind, OpError};
use crate::engine_error::engine_error;
use crate::sql::Dialect;
use crate::sysbench::SysbenchOptions;
use crate::tpcc::{by_name_position, table_defs, TpccTable, TpccTxn, DIST_PER_WARE};
use crate::tpcc_load::{
    cents, int, items_rng, load_items, load_warehouse, now, small, tiny, truncate, warehouse_rng,
    TpccSink,
};
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{Decimal, Row, Value};
use mvcclab_engine::db::{Assign, Database, TableId, Transaction};
use mvcclab_engine::mvcc::Isolation;
use mvcclab_engine::Error;
use std::ops::Bound;

/// The nine table ids of one table set, in [`TpccTable`] order.
#[derive(Clone, Debug)]
pub struct TpccSet(pub Vec<TableId>);

impl TpccSet {
    fn t(&self, t: TpccTable) -> TableId {
        self.0[t as usize]
    }
}

fn e(e: Error) -> String {
    e.to_string()
}

/// Creates the table sets and loads `opts.scale` warehouses into each, as sysbench-tpcc's
/// `prepare` does: per set, the tables, the 100,000 items, then the secondary indexes
/// (created before the warehouses are loaded, so the load maintains them row by row);
/// then per warehouse and set, every table's rows (`load_tables`). The random numbers
/// come from one generator per set (items) and per (set, warehouse).
///
/// Errors: the engine's, as text; a bad size.
pub fn load(db: &Database, opts: &SysbenchOptions, seed: u64) -> Result<Vec<TpccSet>, String> {
    let size = opts.tpcc_size();
    size.validate()?;
    let mut sets = Vec::new();
    for n in 1..=opts.tables {
        let mut ids = Vec::new();
        for d in table_defs(n, opts.use_fk) {
            ids.push(db.create_table(d).map_err(e)?);
        }
        let set = TpccSet(ids);
        let mut rng = items_rng(seed, n, &opts.rand);
        load_items(&mut Batch::new(db, &set), &mut rng, size.items)?;
        sets.push(set);
    }
    for w in 1..=size.warehouses {
        for (i, set) in sets.iter().enumerate() {
            let mut rng = warehouse_rng(seed, i as u32 + 1, w, &opts.rand);
            load_warehouse(&mut Batch::new(db, set), &mut rng, &size, w)?;
        }
    }
    for set in &sets {
        for &t in &set.0 {
            db.gc(t).map_err(e)?;
            if db.design().table_layout == mvcclab_engine::design::TableLayout::Heap {
                db.analyze(t).map_err(e)?;
            }
        }
    }
    Ok(sets)
}

/// Inserts the load's rows in transactions of 1,000 (sysbench's bulk inserts commit in
/// autocommit).
struct Batch<'a> {
    db: &'a Database,
    set: &'a TpccSet,
    tx: Option<Transaction>,
    n: u32,
}

impl<'a> Batch<'a> {
    fn new(db: &'a Database, set: &'a TpccSet) -> Self {
        Batch {
            db,
            set,
            tx: None,
            n: 0,
        }
    }
}

impl TpccSink for Batch<'_> {
    fn insert(&mut self, t: TpccTable, row: Row) -> Result<(), String> {
        let tx = self.tx.get_or_insert_with(|| self.db.begin());
        tx.insert(self.set.t(t), row).map_err(e)?;
        self.n += 1;
        if self.n.is_multiple_of(1000) {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), String> {
        if let Some(tx) = self.tx.take() {
            tx.commit().map_err(e)?;
        }
        Ok(())
    }
}

/// How a transaction failed, before it becomes an [`OpError`] in the design's dialect.
enum Fail {
    /// The engine's error ([`engine_error`] gives its code).
    Engine(Error),
    /// The script's own: its 1 % rollback, a row it needs that is missing.
    Script(OpError),
}

fn op(e: Error) -> Fail {
    Fail::Engine(e)
}

fn fail(msg: String) -> Fail {
    Fail::Script(OpError::other(msg))
}

fn as_i64(v: &Value) -> i64 {
    match v {
        Value::Integer(x) => *x as i64,
        Value::BigInt(x) => *x,
        Value::SmallInt(x) => *x as i64,
        Value::TinyInt(x) => *x as i64,
        _ => 0,
    }
}

fn as_cents(v: &Value) -> i128 {
    match v {
        Value::Decimal(d) => d.to_units(2).unwrap_or(0),
        _ => 0,
    }
}

fn as_text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

/// Runs one transaction of the mix in a transaction of its own at the script's default
/// `--trx_level=RR` (repeatable read).
///
/// Errors: the engine's, with the code of the engine dialect `d` names
/// ([`engine_error`]); the script's own: the 1 % of new-orders with an unused item
/// ([`ErrorKind::ScriptRollback`]: the script counts an error, rolls back and ends the event
/// as done), a missing row ([`ErrorKind::Other`]).
pub fn execute(db: &Database, sets: &[TpccSet], txn: &TpccTxn, d: Dialect) -> Result<(), OpError> {
    execute_in(db, sets, txn).map_err(|f| match f {
        Fail::Engine(e) => engine_error(&e, d),
        Fail::Script(e) => e,
    })
}

fn execute_in(db: &Database, sets: &[TpccSet], txn: &TpccTxn) -> Result<(), Fail> {
    let table = match txn {
        TpccTxn::NewOrder { table, .. }
        | TpccTxn::Payment { table, .. }
        | TpccTxn::OrderStatus { table, .. }
        | TpccTxn::Delivery { table, .. }
        | TpccTxn::StockLevel { table, .. } => *table,
    };
    let set = sets
        .get((table as usize).wrapping_sub(1))
        .ok_or_else(|| fail(format!("no TPC-C table set {table}")))?;
    let mut tx = db.begin_with(Isolation::RepeatableRead);
    let r = match txn {
        TpccTxn::NewOrder {
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
            ..
        } => new_order(&mut tx, set, *w_id, *d_id, *c_id, lines, *all_local),
        TpccTxn::Payment {
            w_id,
            d_id,
            c_id,
            c_w_id,
            c_d_id,
            h_amount,
            by_name,
            ..
        } => payment(
            &mut tx,
            set,
            (*w_id, *d_id),
            (*c_w_id, *c_d_id, *c_id),
            *h_amount,
            by_name.as_deref(),
        ),
        TpccTxn::OrderStatus {
            w_id,
            d_id,
            c_id,
            by_name,
            ..
        } => order_status(&mut tx, set, *w_id, *d_id, *c_id, by_name.as_deref()),
        TpccTxn::Delivery {
            w_id, o_carrier_id, ..
        } => delivery(&mut tx, set, *w_id, *o_carrier_id),
        TpccTxn::StockLevel {
            w_id, d_id, level, ..
        } => stock_level(&mut tx, set, *w_id, *d_id, *level),
    };
    match r {
        Ok(()) => tx.commit().map_err(op),
        Err(err) => {
            let _ = tx.abort();
            Err(err)
        }
    }
}

type R = Result<(), Fail>;

fn need(row: Option<Row>, what: &str) -> Result<Row, Fail> {
    row.ok_or_else(|| fail(format!("{what}: no such row")))
}

fn new_order(
    tx: &mut Transaction,
    set: &TpccSet,
    w: u32,
    d: u32,
    c: u32,
    lines: &[crate::tpcc::OrderLineInput],
    all_local: bool,
) -> R {
    // SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE ...
    let cust = need(
        tx.get(set.t(TpccTable::Customer), &[small(w), tiny(d), int(c)])
            .map_err(op)?,
        "customer",
    )?;
    let wh = need(
        tx.get(set.t(TpccTable::Warehouse), &[small(w)])
            .map_err(op)?,
        "warehouse",
    )?;
    // SELECT d_next_o_id, d_tax ... FOR UPDATE; UPDATE district SET d_next_o_id = ?
    let dk = [small(w), tiny(d)];
    let dist = need(
        tx.get_for_update(set.t(TpccTable::District), &dk)
            .map_err(op)?,
        "district",
    )?;
    let o_id = as_i64(&dist[10]);
    tx.update(
        set.t(TpccTable::District),
        &dk,
        &[Assign::Set(10, Value::Integer(o_id as i32 + 1))],
    )
    .map_err(op)?;
    let o_id_v = Value::Integer(o_id as i32);
    tx.insert(
        set.t(TpccTable::Orders),
        vec![
            o_id_v.clone(),
            tiny(d),
            small(w),
            int(c),
            now(),
            Value::Null,
            tiny(lines.len() as u32),
            tiny(all_local as u32),
        ],
    )
    .map_err(op)?;
    tx.insert(
        set.t(TpccTable::NewOrders),
        vec![o_id_v.clone(), tiny(d), small(w)],
    )
    .map_err(op)?;
    let w_tax = as_cents(&wh[7]) as f64 / 100.0;
    let d_tax = as_cents(&dist[8]) as f64 / 100.0;
    let c_discount = as_cents(&cust[15]) as f64 / 100.0;
    for (n, &(i_id, sup, qty)) in lines.iter().enumerate() {
        let item = tx
            .get(set.t(TpccTable::Item), &[Value::Integer(i_id)])
            .map_err(op)?;
        let Some(item) = item else {
            return Err(Fail::Script(OpError {
                kind: ErrorKind::ScriptRollback,
                ..OpError::other("item not found (the script's 1 % rollback)")
            }));
        };
        let sk = [small(sup), Value::Integer(i_id)];
        // SELECT s_quantity, s_data, s_dist_NN ... FOR UPDATE
        let stock = need(
            tx.get_for_update(set.t(TpccTable::Stock), &sk)
                .map_err(op)?,
            "stock",
        )?;
        let s_qty = as_i64(&stock[2]);
        let q = qty as i64;
        let new_qty = if s_qty > q { s_qty - q } else { s_qty - q + 91 };
        tx.update(
            set.t(TpccTable::Stock),
            &sk,
            &[Assign::Set(2, Value::SmallInt(new_qty as i16))],
        )
        .map_err(op)?;
        let i_price = as_cents(&item[3]) as f64 / 100.0;
        // `%d` of a float in LuaJIT's string.format truncates it.
        let amount = (q as f64 * i_price * (1.0 + w_tax + d_tax) * (1.0 - c_discount)) as i64;
        let dist_info = stock[2 + d as usize].clone();
        tx.insert(
            set.t(TpccTable::OrderLine),
            vec![
                o_id_v.clone(),
                tiny(d),
                small(w),
                tiny(n as u32 + 1),
                Value::Integer(i_id),
                small(sup),
                Value::Null,
                tiny(qty),
                cents(amount * 100),
                dist_info,
            ],
        )
        .map_err(op)?;
    }
    Ok(())
}

/// The customer id chosen by last name: the rows of `idx_customer`'s leading part
/// `(w, d, c_last)` in `c_first` order, the one at [`by_name_position`].
fn customer_by_name(
    tx: &mut Transaction,
    set: &TpccSet,
    w: u32,
    d: u32,
    last: &str,
) -> Result<Row, Fail> {
    // SELECT count(c_id) ... ; SELECT c_id ... ORDER BY c_first: the same index range twice.
    let key = [small(w), tiny(d), Value::text(last)];
    let n = tx
        .get_by_index(set.t(TpccTable::Customer), 0, &key)
        .map_err(op)?
        .len();
    let rows = tx
        .get_by_index(set.t(TpccTable::Customer), 0, &key)
        .map_err(op)?;
    let pos = by_name_position(n.min(rows.len()))
        .ok_or_else(|| fail(format!("no customer named {last} in district {w}/{d}")))?;
    Ok(rows[pos - 1].clone())
}

fn payment(
    tx: &mut Transaction,
    set: &TpccSet,
    (w, d): (u32, u32),
    (c_w, c_d, c_id): (u32, u32, u32),
    h_amount: u32,
    by_name: Option<&str>,
) -> R {
    let amount = Decimal::from_i64(h_amount as i64);
    tx.update(
        set.t(TpccTable::Warehouse),
        &[small(w)],
        &[Assign::AddDecimal(8, amount.clone())],
    )
    .map_err(op)?;
    let wh = need(
        tx.get(set.t(TpccTable::Warehouse), &[small(w)])
            .map_err(op)?,
        "warehouse",
    )?;
    let dk = [small(w), tiny(d)];
    tx.update(
        set.t(TpccTable::District),
        &dk,
        &[Assign::AddDecimal(9, amount.clone())],
    )
    .map_err(op)?;
    let dist = need(
        tx.get(set.t(TpccTable::District), &dk).map_err(op)?,
        "district",
    )?;
    let c_id = match by_name {
        Some(last) => as_i64(&customer_by_name(tx, set, c_w, c_d, last)?[0]) as u32,
        None => c_id,
    };
    let ck = [small(c_w), tiny(c_d), int(c_id)];
    // SELECT ... FROM customer ... FOR UPDATE
    let cust = need(
        tx.get_for_update(set.t(TpccTable::Customer), &ck)
            .map_err(op)?,
        "customer",
    )?;
    let neg = Decimal::from_i64(-(h_amount as i64));
    let mut set_list = vec![Assign::AddDecimal(16, neg), Assign::AddDecimal(17, amount)];
    if as_text(&cust[13]) == "BC" {
        // SELECT c_data ...; c_new_data = sub(format("| %4d %2d %4d %2d %4d $%7.2f %12s
        // %24s", ...), 1, 500)
        let again = need(
            tx.get(set.t(TpccTable::Customer), &ck).map_err(op)?,
            "customer",
        )?;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let new_data = format!(
            "| {c_id:4} {c_d:2} {c_w:4} {d:2} {w:4} ${:7.2} {secs:12} {:>24}",
            h_amount as f64,
            as_text(&again[20])
        );
        set_list.push(Assign::Set(20, Value::text(truncate(&new_data, 500))));
    }
    tx.update(set.t(TpccTable::Customer), &ck, &set_list)
        .map_err(op)?;
    let h_data = format!("{:>10} {:>10}   ", as_text(&wh[1]), as_text(&dist[2]));
    tx.insert(
        set.t(TpccTable::History),
        vec![
            int(c_id),
            tiny(c_d),
            small(c_w),
            tiny(d),
            small(w),
            now(),
            cents(h_amount as i64 * 100),
            Value::text(h_data),
        ],
    )
    .map_err(op)
}

fn order_status(
    tx: &mut Transaction,
    set: &TpccSet,
    w: u32,
    d: u32,
    c_id: u32,
    by_name: Option<&str>,
) -> R {
    let c_id = match by_name {
        Some(last) => as_i64(&customer_by_name(tx, set, w, d, last)?[0]) as u32,
        None => {
            need(
                tx.get(set.t(TpccTable::Customer), &[small(w), tiny(d), int(c_id)])
                    .map_err(op)?,
                "customer",
            )?;
            c_id
        }
    };
    // SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id, o_d_id, o_c_id
    // ORDER BY o_id DESC (idx_orders; the client reads the first row).
    let orders = tx
        .get_by_index(set.t(TpccTable::Orders), 0, &[small(w), tiny(d), int(c_id)])
        .map_err(op)?;
    if orders.is_empty() {
        return Err(fail(format!("customer {w}/{d}/{c_id} has no order")));
    }
    // The script's order-line query binds d_id as ol_o_id (see the module doc of tpcc).
    let o = d as i32;
    std::hint::black_box(order_lines(tx, set, w, d, o)?);
    Ok(())
}

/// The order lines of order `o` of district `(w, d)`: a primary-key range scan.
fn order_lines(
    tx: &mut Transaction,
    set: &TpccSet,
    w: u32,
    d: u32,
    o: i32,
) -> Result<Vec<Row>, Fail> {
    tx.scan(
        set.t(TpccTable::OrderLine),
        Bound::Included(&[
            small(w),
            tiny(d),
            Value::Integer(o),
            Value::TinyInt(i8::MIN),
        ]),
        Bound::Included(&[
            small(w),
            tiny(d),
            Value::Integer(o),
            Value::TinyInt(i8::MAX),
        ]),
        ScanDirection::Forward,
        usize::MAX,
    )
    .map_err(op)
}

fn delivery(tx: &mut Transaction, set: &TpccSet, w: u32, carrier: u32) -> R {
    for d in 1..=DIST_PER_WARE {
        // SELECT no_o_id FROM new_orders WHERE no_d_id, no_w_id ORDER BY no_o_id LIMIT 1
        // FOR UPDATE: the first row of the range, then locked
        let first = tx
            .scan(
                set.t(TpccTable::NewOrders),
                Bound::Included(&[small(w), tiny(d), Value::Integer(i32::MIN)]),
                Bound::Included(&[small(w), tiny(d), Value::Integer(i32::MAX)]),
                ScanDirection::Forward,
                1,
            )
            .map_err(op)?;
        let Some(no) = first.into_iter().next() else {
            continue;
        };
        let o = as_i64(&no[0]) as i32;
        let ok = [small(w), tiny(d), Value::Integer(o)];
        if tx
            .get_for_update(set.t(TpccTable::NewOrders), &ok)
            .map_err(op)?
            .is_none()
        {
            continue;
        }
        if !tx.delete(set.t(TpccTable::NewOrders), &ok).map_err(op)? {
            continue;
        }
        let order = need(tx.get(set.t(TpccTable::Orders), &ok).map_err(op)?, "order")?;
        let c_id = as_i64(&order[3]) as u32;
        tx.update(
            set.t(TpccTable::Orders),
            &ok,
            &[Assign::Set(5, tiny(carrier))],
        )
        .map_err(op)?;
        // UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_o_id, ol_d_id, ol_w_id
        let lines = order_lines(tx, set, w, d, o)?;
        let date = now();
        for l in &lines {
            tx.update(
                set.t(TpccTable::OrderLine),
                &[small(w), tiny(d), Value::Integer(o), l[3].clone()],
                &[Assign::Set(6, date.clone())],
            )
            .map_err(op)?;
        }
        // SELECT SUM(ol_amount) ...
        let sum: i128 = order_lines(tx, set, w, d, o)?
            .iter()
            .map(|l| as_cents(&l[8]))
            .sum();
        tx.update(
            set.t(TpccTable::Customer),
            &[small(w), tiny(d), int(c_id)],
            &[
                Assign::AddDecimal(16, Decimal::from_units(sum, 2)),
                Assign::Add(19, 1),
            ],
        )
        .map_err(op)?;
    }
    Ok(())
}

fn stock_level(tx: &mut Transaction, set: &TpccSet, w: u32, d: u32, level: u32) -> R {
    let dist = need(
        tx.get(set.t(TpccTable::District), &[small(w), tiny(d)])
            .map_err(op)?,
        "district",
    )?;
    let next = as_i64(&dist[10]) as i32;
    // COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_o_id in [next-20, next)
    // AND s_w_id = w AND s_i_id = ol_i_id AND s_quantity < level: a nested loop.
    let lines = tx
        .scan(
            set.t(TpccTable::OrderLine),
            Bound::Included(&[
                small(w),
                tiny(d),
                Value::Integer(next - 20),
                Value::TinyInt(i8::MIN),
            ]),
            Bound::Excluded(&[
                small(w),
                tiny(d),
                Value::Integer(next),
                Value::TinyInt(i8::MIN),
            ]),
            ScanDirection::Forward,
            usize::MAX,
        )
        .map_err(op)?;
    let mut low = std::collections::BTreeSet::new();
    for l in lines {
        let i = as_i64(&l[4]) as i32;
        if let Some(s) = tx
            .get(set.t(TpccTable::Stock), &[small(w), Value::Integer(i)])
            .map_err(op)?
        {
            if as_i64(&s[2]) < level as i64 {
                low.insert(i);
            }
        }
    }
    std::hint::black_box(low.len());
    Ok(())
}

/// The result of one consistency check for one warehouse of one table set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOutcome {
    /// `tpcc_check.lua`'s number (1–4).
    pub check: u8,
    /// Table set.
    pub table: u32,
    /// Warehouse.
    pub w_id: u32,
    /// The disagreements found, in words; empty when the check passes.
    pub problems: Vec<String>,
}

fn all_rows(tx: &mut Transaction, t: TableId) -> Result<Vec<Row>, String> {
    tx.scan(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        usize::MAX,
    )
    .map_err(e)
}

/// `tpcc_check.lua`'s checks 1–4 (TPC-C §3.3.2.1–4) on every warehouse of every set, read
/// in one repeatable-read transaction:
/// 1. `w_ytd` = sum of the warehouse's districts' `d_ytd`;
/// 2. per district with new orders, `d_next_o_id − 1` = max(`o_id`) = max(`no_o_id`);
/// 3. per district with new orders, max(`no_o_id`) − min(`no_o_id`) + 1 = their count;
/// 4. per district, sum(`o_ol_cnt`) = the number of its order lines.
///
/// Errors: the engine's, as text.
pub fn check(db: &Database, sets: &[TpccSet]) -> Result<Vec<CheckOutcome>, String> {
    use std::collections::BTreeMap;
    let mut out = Vec::new();
    let mut tx = db.begin_with(Isolation::RepeatableRead);
    for (i, set) in sets.iter().enumerate() {
        let table = i as u32 + 1;
        let wh = all_rows(&mut tx, set.t(TpccTable::Warehouse))?;
        let dists = all_rows(&mut tx, set.t(TpccTable::District))?;
        let orders = all_rows(&mut tx, set.t(TpccTable::Orders))?;
        let new_orders = all_rows(&mut tx, set.t(TpccTable::NewOrders))?;
        let lines = all_rows(&mut tx, set.t(TpccTable::OrderLine))?;
        // (w, d) → values
        let mut d_ytd: BTreeMap<i64, i128> = BTreeMap::new();
        let mut next: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for d in &dists {
            *d_ytd.entry(as_i64(&d[1])).or_default() += as_cents(&d[9]);
            next.insert((as_i64(&d[1]), as_i64(&d[0])), as_i64(&d[10]));
        }
        let mut max_o: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        let mut ol_sum: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for o in &orders {
            let k = (as_i64(&o[2]), as_i64(&o[1]));
            let m = max_o.entry(k).or_insert(i64::MIN);
            *m = (*m).max(as_i64(&o[0]));
            *ol_sum.entry(k).or_default() += as_i64(&o[6]);
        }
        let mut no: BTreeMap<(i64, i64), (i64, i64, i64)> = BTreeMap::new();
        for r in &new_orders {
            let k = (as_i64(&r[2]), as_i64(&r[1]));
            let v = as_i64(&r[0]);
            let e = no.entry(k).or_insert((i64::MAX, i64::MIN, 0));
            e.0 = e.0.min(v);
            e.1 = e.1.max(v);
            e.2 += 1;
        }
        let mut ol_cnt: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for l in &lines {
            *ol_cnt.entry((as_i64(&l[2]), as_i64(&l[1]))).or_default() += 1;
        }
        for w in &wh {
            let w_id = as_i64(&w[0]);
            let mut p = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
            let sum = d_ytd.get(&w_id).copied().unwrap_or(0);
            if sum != as_cents(&w[8]) {
                p[0].push(format!(
                    "sum(d_ytd) {} != w_ytd {}",
                    Decimal::from_units(sum, 2),
                    w[8]
                ));
            }
            for d in 1..=DIST_PER_WARE as i64 {
                let k = (w_id, d);
                if let Some(&(lo, hi, n)) = no.get(&k) {
                    let nx = next.get(&k).copied().unwrap_or(0) - 1;
                    let mo = max_o.get(&k).copied().unwrap_or(0);
                    if nx != mo || nx != hi {
                        p[1].push(format!(
                            "district {d}: d_next_o_id-1 {nx}, max(o_id) {mo}, max(no_o_id) {hi}"
                        ));
                    }
                    if hi - lo + 1 != n {
                        p[2].push(format!("district {d}: new orders {lo}..={hi} but {n} rows"));
                    }
                }
                let s = ol_sum.get(&k).copied().unwrap_or(0);
                let c = ol_cnt.get(&k).copied().unwrap_or(0);
                if s != c {
                    p[3].push(format!("district {d}: sum(o_ol_cnt) {s}, order lines {c}"));
                }
            }
            for (i, problems) in p.into_iter().enumerate() {
                out.push(CheckOutcome {
                    check: i as u8 + 1,
                    table,
                    w_id: w_id as u32,
                    problems,
                });
            }
        }
    }
    tx.commit().map_err(e)?;
    Ok(out)
}
