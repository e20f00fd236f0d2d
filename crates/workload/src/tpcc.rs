//! TPC-C as Percona-Lab/sysbench-tpcc runs it (`tpcc_common.lua`, `tpcc_run.lua`,
//! `tpcc.lua`, `tpcc_check.lua`, commit 585e2b8): the nine tables of each table set, the
//! loader's value generators, the five transactions with their inputs and mix, as data.
//! Nothing here executes a statement: the embedded target runs the transactions
//! ([`crate::tpcc_embedded`]).
//!
//! # Schema (`create_tables`)
//! Table set `n` (1..=`--tables`) is `warehouseN`, `districtN`, `customerN`, `historyN`
//! (no primary key, as with `--force_pk=0`, the default), `ordersN`, `new_ordersN`,
//! `order_lineN`, `stockN`, `itemN`, with the script's secondary indexes `idx_customerN
//! (c_w_id,c_d_id,c_last,c_first)`, `idx_ordersN (o_w_id,o_d_id,o_c_id,o_id)`,
//! `fkey_stock_2N (s_i_id)`, `fkey_order_line_2N (ol_supply_w_id,ol_i_id)`,
//! `fkey_history_1N (h_c_w_id,h_c_d_id,h_c_id)`, `fkey_history_2N (h_w_id,h_d_id)` and,
//! with `--use_fk=1` (the default), its ten foreign keys, declared (mvcclab does not
//! enforce them; the real servers would). The script's `tinyint_type` is `smallint` on
//! PostgreSQL and `tinyint` on MySQL: [`ColumnType::TinyInt`] is exactly that. Its
//! `datetime_type` is `timestamp` (PostgreSQL, `timestamp(6)`) and `datetime` (MySQL,
//! `DATETIME(0)`, 5 bytes): mvcclab uses [`ColumnType::DateTime6`] for both, 8 bytes in
//! either engine, so an innodb row with a date column is 3 bytes longer than MariaDB's.
//!
//! # Transactions (`tpcc.lua` `event()`)
//! `sysbench.rand.uniform(1, 23)`: 1–10 new-order, 11–20 payment, 21 order-status,
//! 22 delivery, 23 stock-level (43.5 / 43.5 / 4.3 / 4.3 / 4.3 %; `--enable_purge=no`, the
//! default, so no purge transaction). Their inputs are drawn here in the scripts' order;
//! the two quirks of `tpcc_run.lua` are kept, because they decide which rows are touched:
//! `other_ware` loops `until tmp == home_ware`, so every "remote" warehouse is the home
//! warehouse; and order-status reads the order lines of `ol_o_id = d_id` (its format
//! arguments are `w_id, d_id, d_id, o_id`). `NURand`'s constants C are drawn again on
//! every call (`init_rand = 0` is true in Lua), also kept.

use crate::rand::SbRand;
use mvcclab_engine::catalog::{Column, ColumnType, ForeignKeyDef, IndexDef, TableDef};
use serde::{Deserialize, Serialize};

/// `DIST_PER_WARE`: districts per warehouse.
pub const DIST_PER_WARE: u32 = 10;
/// `MAXITEMS`: rows of `item` and of `stock` per warehouse (sysbench-tpcc's default).
pub const MAXITEMS: u32 = 100_000;
/// `CUST_PER_DIST`: customers per district, and orders per district at the load.
pub const CUST_PER_DIST: u32 = 3_000;

/// The size of a TPC-C database: sysbench-tpcc's constants, changeable only to load a
/// small database in tests (the transactions then draw from the smaller ranges).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TpccSize {
    /// `--scale`: warehouses.
    pub warehouses: u32,
    /// `MAXITEMS` (100,000).
    pub items: u32,
    /// `CUST_PER_DIST` (3,000), also the orders per district at the load.
    pub customers_per_district: u32,
}

impl Default for TpccSize {
    fn default() -> Self {
        TpccSize {
            warehouses: 1,
            items: MAXITEMS,
            customers_per_district: CUST_PER_DIST,
        }
    }
}

impl TpccSize {
    /// The last order id the load gives a carrier (and order lines a delivery date):
    /// `o_id < 2101` in the script, 70 % of the orders; the others are new orders.
    pub fn last_delivered_order(&self) -> u32 {
        self.customers_per_district * 7 / 10
    }

    /// The largest `Lastname` number the transactions draw: 999 (the script's
    /// `NURand(255, 0, 999)`); with fewer than 1,000 customers per district (a test size)
    /// `customers − 1`, the names the load gave (customer `c ≤ 1000` is `Lastname(c − 1)`),
    /// so that a lookup by name finds a customer as it always does at full size.
    pub fn last_name_max(&self) -> u32 {
        999.min(self.customers_per_district - 1)
    }

    /// Checks the sizes.
    ///
    /// Errors: a message naming the value (no warehouse, item or customer; more than
    /// 32,767 warehouses, the `smallint` of `w_id`).
    pub fn validate(&self) -> Result<(), String> {
        if self.warehouses == 0 || self.warehouses > i16::MAX as u32 {
            return Err(format!(
                "--scale must be 1..=32767 warehouses (w_id is a smallint), got {}",
                self.warehouses
            ));
        }
        if self.items == 0 || self.customers_per_district < 10 {
            return Err(format!(
                "TPC-C needs at least 1 item and 10 customers per district, got {} and {}",
                self.items, self.customers_per_district
            ));
        }
        Ok(())
    }
}

/// The nine tables of a set, in the order [`table_defs`] returns them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpccTable {
    /// warehouseN.
    Warehouse = 0,
    /// districtN.
    District = 1,
    /// customerN.
    Customer = 2,
    /// historyN.
    History = 3,
    /// ordersN.
    Orders = 4,
    /// new_ordersN.
    NewOrders = 5,
    /// order_lineN.
    OrderLine = 6,
    /// stockN.
    Stock = 7,
    /// itemN.
    Item = 8,
}

fn col(name: &str, ty: ColumnType, not_null: bool) -> Column {
    if not_null {
        Column::not_null(name, ty)
    } else {
        Column::nullable(name, ty)
    }
}

fn dec(precision: u8, scale: u8) -> ColumnType {
    ColumnType::Decimal { precision, scale }
}

fn def(name: String, cols: Vec<Column>, pk: &[&str], indexes: &[(&str, &[&str])]) -> TableDef {
    let pos = |c: &str| cols.iter().position(|x| x.name == c).expect("column");
    TableDef {
        name: name.clone(),
        primary_key: pk.iter().map(|c| pos(c)).collect(),
        indexes: indexes
            .iter()
            .map(|(n, cs)| IndexDef {
                name: n.to_string(),
                columns: cs.iter().map(|c| pos(c)).collect(),
                unique: false,
            })
            .collect(),
        columns: cols,
        foreign_keys: Vec::new(),
    }
}

fn fk(t: &mut TableDef, name: String, cols: &[&str], refd: String, ref_cols: &[&str]) {
    let columns = cols
        .iter()
        .map(|c| t.columns.iter().position(|x| x.name == *c).expect("column"))
        .collect();
    t.foreign_keys.push(ForeignKeyDef {
        name,
        columns,
        referenced_table: refd,
        referenced_columns: ref_cols.iter().map(|c| c.to_string()).collect(),
    });
}

/// A foreign key of the script: (constraint name without `fkey_`/`_N`, table, columns,
/// referenced table, referenced columns).
type ForeignKeySpec = (
    &'static str,
    TpccTable,
    &'static [&'static str],
    TpccTable,
    &'static [&'static str],
);

/// The nine tables of set `n` (`create_tables`), in [`TpccTable`] order, with their
/// secondary indexes and, when `use_fk`, their declared foreign keys.
pub fn table_defs(n: u32, use_fk: bool) -> Vec<TableDef> {
    use ColumnType::*;
    let t = TinyInt;
    let w = def(
        format!("warehouse{n}"),
        vec![
            col("w_id", SmallInt, true),
            col("w_name", Varchar(10), false),
            col("w_street_1", Varchar(20), false),
            col("w_street_2", Varchar(20), false),
            col("w_city", Varchar(20), false),
            col("w_state", Char(2), false),
            col("w_zip", Char(9), false),
            col("w_tax", dec(4, 2), false),
            col("w_ytd", dec(12, 2), false),
        ],
        &["w_id"],
        &[],
    );
    let d = def(
        format!("district{n}"),
        vec![
            col("d_id", t, true),
            col("d_w_id", SmallInt, true),
            col("d_name", Varchar(10), false),
            col("d_street_1", Varchar(20), false),
            col("d_street_2", Varchar(20), false),
            col("d_city", Varchar(20), false),
            col("d_state", Char(2), false),
            col("d_zip", Char(9), false),
            col("d_tax", dec(4, 2), false),
            col("d_ytd", dec(12, 2), false),
            col("d_next_o_id", Integer, false),
        ],
        &["d_w_id", "d_id"],
        &[],
    );
    let c = def(
        format!("customer{n}"),
        vec![
            col("c_id", Integer, true),
            col("c_d_id", t, true),
            col("c_w_id", SmallInt, true),
            col("c_first", Varchar(16), false),
            col("c_middle", Char(2), false),
            col("c_last", Varchar(16), false),
            col("c_street_1", Varchar(20), false),
            col("c_street_2", Varchar(20), false),
            col("c_city", Varchar(20), false),
            col("c_state", Char(2), false),
            col("c_zip", Char(9), false),
            col("c_phone", Char(16), false),
            col("c_since", DateTime6, false),
            col("c_credit", Char(2), false),
            col("c_credit_lim", BigInt, false),
            col("c_discount", dec(4, 2), false),
            col("c_balance", dec(12, 2), false),
            col("c_ytd_payment", dec(12, 2), false),
            col("c_payment_cnt", SmallInt, false),
            col("c_delivery_cnt", SmallInt, false),
            col("c_data", Text, false),
        ],
        &["c_w_id", "c_d_id", "c_id"],
        &[(
            &format!("idx_customer{n}"),
            &["c_w_id", "c_d_id", "c_last", "c_first"],
        )],
    );
    let h = def(
        format!("history{n}"),
        vec![
            col("h_c_id", Integer, false),
            col("h_c_d_id", t, false),
            col("h_c_w_id", SmallInt, false),
            col("h_d_id", t, false),
            col("h_w_id", SmallInt, false),
            col("h_date", DateTime6, false),
            col("h_amount", dec(6, 2), false),
            col("h_data", Varchar(24), false),
        ],
        &[],
        &[
            (
                &format!("fkey_history_1{n}"),
                &["h_c_w_id", "h_c_d_id", "h_c_id"],
            ),
            (&format!("fkey_history_2{n}"), &["h_w_id", "h_d_id"]),
        ],
    );
    let o = def(
        format!("orders{n}"),
        vec![
            col("o_id", Integer, true),
            col("o_d_id", t, true),
            col("o_w_id", SmallInt, true),
            col("o_c_id", Integer, false),
            col("o_entry_d", DateTime6, false),
            col("o_carrier_id", t, false),
            col("o_ol_cnt", t, false),
            col("o_all_local", t, false),
        ],
        &["o_w_id", "o_d_id", "o_id"],
        &[(
            &format!("idx_orders{n}"),
            &["o_w_id", "o_d_id", "o_c_id", "o_id"],
        )],
    );
    let no = def(
        format!("new_orders{n}"),
        vec![
            col("no_o_id", Integer, true),
            col("no_d_id", t, true),
            col("no_w_id", SmallInt, true),
        ],
        &["no_w_id", "no_d_id", "no_o_id"],
        &[],
    );
    let ol = def(
        format!("order_line{n}"),
        vec![
            col("ol_o_id", Integer, true),
            col("ol_d_id", t, true),
            col("ol_w_id", SmallInt, true),
            col("ol_number", t, true),
            col("ol_i_id", Integer, false),
            col("ol_supply_w_id", SmallInt, false),
            col("ol_delivery_d", DateTime6, false),
            col("ol_quantity", t, false),
            col("ol_amount", dec(6, 2), false),
            col("ol_dist_info", Char(24), false),
        ],
        &["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"],
        &[(
            &format!("fkey_order_line_2{n}"),
            &["ol_supply_w_id", "ol_i_id"],
        )],
    );
    let mut s_cols = vec![
        col("s_i_id", Integer, true),
        col("s_w_id", SmallInt, true),
        col("s_quantity", SmallInt, false),
    ];
    for i in 1..=10 {
        s_cols.push(col(&format!("s_dist_{i:02}"), Char(24), false));
    }
    s_cols.extend([
        col("s_ytd", dec(8, 0), false),
        col("s_order_cnt", SmallInt, false),
        col("s_remote_cnt", SmallInt, false),
        col("s_data", Varchar(50), false),
    ]);
    let s = def(
        format!("stock{n}"),
        s_cols,
        &["s_w_id", "s_i_id"],
        &[(&format!("fkey_stock_2{n}"), &["s_i_id"])],
    );
    let i = def(
        format!("item{n}"),
        vec![
            col("i_id", Integer, true),
            col("i_im_id", Integer, false),
            col("i_name", Varchar(24), false),
            col("i_price", dec(5, 2), false),
            col("i_data", Varchar(50), false),
        ],
        &["i_id"],
        &[],
    );
    let mut v = vec![w, d, c, h, o, no, ol, s, i];
    if use_fk {
        use TpccTable::*;
        // (constraint, table, columns, referenced table, referenced columns), as
        // create_tables adds them with ALTER TABLE.
        let fks: [ForeignKeySpec; 10] = [
            (
                "new_orders_1",
                NewOrders,
                &["no_w_id", "no_d_id", "no_o_id"],
                Orders,
                &["o_w_id", "o_d_id", "o_id"],
            ),
            (
                "orders_1",
                Orders,
                &["o_w_id", "o_d_id", "o_c_id"],
                Customer,
                &["c_w_id", "c_d_id", "c_id"],
            ),
            (
                "customer_1",
                Customer,
                &["c_w_id", "c_d_id"],
                District,
                &["d_w_id", "d_id"],
            ),
            (
                "history_1",
                History,
                &["h_c_w_id", "h_c_d_id", "h_c_id"],
                Customer,
                &["c_w_id", "c_d_id", "c_id"],
            ),
            (
                "history_2",
                History,
                &["h_w_id", "h_d_id"],
                District,
                &["d_w_id", "d_id"],
            ),
            ("district_1", District, &["d_w_id"], Warehouse, &["w_id"]),
            (
                "order_line_1",
                OrderLine,
                &["ol_w_id", "ol_d_id", "ol_o_id"],
                Orders,
                &["o_w_id", "o_d_id", "o_id"],
            ),
            (
                "order_line_2",
                OrderLine,
                &["ol_supply_w_id", "ol_i_id"],
                Stock,
                &["s_w_id", "s_i_id"],
            ),
            ("stock_1", Stock, &["s_w_id"], Warehouse, &["w_id"]),
            ("stock_2", Stock, &["s_i_id"], Item, &["i_id"]),
        ];
        for (name, t, cols, r, rcols) in fks {
            let refd = v[r as usize].name.clone();
            fk(
                &mut v[t as usize],
                format!("fkey_{name}_{n}"),
                cols,
                refd,
                rcols,
            );
        }
    }
    v
}

/// `Lastname(num)`: three syllables of the TPC-C name table, 0 ≤ num ≤ 999.
pub fn last_name(num: u32) -> String {
    const N: [&str; 10] = [
        "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
    ];
    let num = num % 1000;
    format!(
        "{}{}{}",
        N[(num / 100) as usize],
        N[(num / 10 % 10) as usize],
        N[(num % 10) as usize]
    )
}

/// `NURand(A, x, y)`: `(((uniform(0, A) | uniform(x, y)) + C) % (y - x + 1)) + x`, with the
/// three constants C drawn first on every call (see the module doc).
pub fn nurand(rng: &mut SbRand, a: u32, x: u32, y: u32) -> u32 {
    let c255 = rng.uniform(0, 255);
    let c1023 = rng.uniform(0, 1023);
    let c8191 = rng.uniform(0, 8191);
    let c = match a {
        255 => c255,
        1023 => c1023,
        _ => c8191,
    };
    let i = rng.uniform(0, a);
    let j = rng.uniform(x, y);
    ((i | j) + c) % (y - x + 1) + x
}

/// `string.rep(sysbench.rand.string("@"), n)` with `n = uniform(lo, hi)`: one random letter
/// repeated (the loader's "better compression" values; the letter is drawn first, as Lua
/// evaluates the arguments left to right).
pub fn repeated_letter(rng: &mut SbRand, lo: u32, hi: u32) -> String {
    let letter = rng.string("@");
    let n = rng.uniform(lo, hi);
    letter.repeat(n as usize)
}

/// Lua's `%f`: six fraction digits.
pub fn lua_f(v: f64) -> String {
    format!("{v:.6}")
}

/// A `%f` value stored into DECIMAL(p, 2): both servers round it half away from zero to
/// two fraction digits; returned in hundredths.
pub fn round_cents(v: f64) -> i64 {
    let s = lua_f(v);
    let x: f64 = s.parse().unwrap_or(v);
    (x * 100.0).round() as i64
}

/// One new-order line's inputs: (item id, supplying warehouse, quantity); item id 0 is the
/// script's `-1`, the unused item of the 1 % rolled-back orders.
pub type OrderLineInput = (i32, u32, u32);

/// A transaction of the mix with its inputs, drawn as `tpcc_run.lua` draws them.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TpccTxn {
    /// `new_order()`.
    NewOrder {
        table: u32,
        w_id: u32,
        d_id: u32,
        c_id: u32,
        lines: Vec<OrderLineInput>,
        all_local: bool,
    },
    /// `payment()`; `by_name` is the last name when the customer is chosen by name (60 %).
    Payment {
        table: u32,
        w_id: u32,
        d_id: u32,
        c_id: u32,
        c_w_id: u32,
        c_d_id: u32,
        h_amount: u32,
        by_name: Option<String>,
    },
    /// `orderstatus()`.
    OrderStatus {
        table: u32,
        w_id: u32,
        d_id: u32,
        c_id: u32,
        by_name: Option<String>,
    },
    /// `delivery()`.
    Delivery {
        table: u32,
        w_id: u32,
        o_carrier_id: u32,
    },
    /// `stocklevel()`.
    StockLevel {
        table: u32,
        w_id: u32,
        d_id: u32,
        level: u32,
    },
}

impl TpccTxn {
    /// The transaction's name in reports (`new_order`, `payment`, `order_status`,
    /// `delivery`, `stock_level`).
    pub fn kind(&self) -> &'static str {
        match self {
            TpccTxn::NewOrder { .. } => "new_order",
            TpccTxn::Payment { .. } => "payment",
            TpccTxn::OrderStatus { .. } => "order_status",
            TpccTxn::Delivery { .. } => "delivery",
            TpccTxn::StockLevel { .. } => "stock_level",
        }
    }

    /// Whether it only reads.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            TpccTxn::OrderStatus { .. } | TpccTxn::StockLevel { .. }
        )
    }
}

/// `other_ware(home)`: the script's loop ends only when it draws `home`, so it returns
/// `home` after drawing until it does (none when there is one warehouse).
fn other_ware(rng: &mut SbRand, scale: u32, home: u32) -> u32 {
    if scale == 1 {
        return home;
    }
    loop {
        if rng.uniform(1, scale) == home {
            return home;
        }
    }
}

/// The next transaction of `tpcc.lua`'s `event()` for `tables` table sets of `size`.
pub fn next_txn(rng: &mut SbRand, tables: u32, size: &TpccSize) -> TpccTxn {
    let scale = size.warehouses;
    let cust = size.customers_per_district;
    let trx_type = rng.uniform(1, 23);
    let table = rng.uniform(1, tables);
    let w_id = rng.uniform(1, scale);
    match trx_type {
        1..=10 => {
            let d_id = rng.uniform(1, DIST_PER_WARE);
            let c_id = nurand(rng, 1023, 1, cust);
            let ol_cnt = rng.uniform(5, 15);
            let rbk = rng.uniform(1, 100);
            let mut all_local = true;
            let mut lines = Vec::with_capacity(ol_cnt as usize);
            for i in 1..=ol_cnt {
                let mut item = nurand(rng, 8191, 1, size.items) as i32;
                if i == ol_cnt - 1 && rbk == 1 {
                    item = 0;
                }
                let sup = if rng.uniform(1, 100) != 1 {
                    w_id
                } else {
                    all_local = false;
                    other_ware(rng, scale, w_id)
                };
                let qty = rng.uniform(1, 10);
                lines.push((item, sup, qty));
            }
            TpccTxn::NewOrder {
                table,
                w_id,
                d_id,
                c_id,
                lines,
                all_local,
            }
        }
        11..=20 => {
            let d_id = rng.uniform(1, DIST_PER_WARE);
            let c_id = nurand(rng, 1023, 1, cust);
            let h_amount = rng.uniform(1, 5000);
            let c_last = last_name(nurand(rng, 255, 0, size.last_name_max()));
            let by_name = rng.uniform(1, 100) <= 60;
            let (c_w_id, c_d_id) = if rng.uniform(1, 100) <= 85 {
                (w_id, d_id)
            } else {
                let w = other_ware(rng, scale, w_id);
                (w, rng.uniform(1, DIST_PER_WARE))
            };
            TpccTxn::Payment {
                table,
                w_id,
                d_id,
                c_id,
                c_w_id,
                c_d_id,
                h_amount,
                by_name: by_name.then_some(c_last),
            }
        }
        21 => {
            let d_id = rng.uniform(1, DIST_PER_WARE);
            let c_id = nurand(rng, 1023, 1, cust);
            let c_last = last_name(nurand(rng, 255, 0, size.last_name_max()));
            let by_name = rng.uniform(1, 100) <= 60;
            TpccTxn::OrderStatus {
                table,
                w_id,
                d_id,
                c_id,
                by_name: by_name.then_some(c_last),
            }
        }
        22 => TpccTxn::Delivery {
            table,
            w_id,
            o_carrier_id: rng.uniform(1, 10),
        },
        _ => {
            let d_id = rng.uniform(1, DIST_PER_WARE);
            let level = rng.uniform(10, 20);
            TpccTxn::StockLevel {
                table,
                w_id,
                d_id,
                level,
            }
        }
    }
}

/// Which row of the by-name result the scripts take (1-based): `namecnt`, made even when it
/// is odd and above 1, then `for i = 1, namecnt / 2 + 1` fetches rows (Lua's `/` divides
/// exactly; the loop runs `floor(namecnt / 2 + 1)` times). `None` when no customer has
/// the name (the scripts then fail on a nil row).
pub fn by_name_position(namecnt: usize) -> Option<usize> {
    if namecnt == 0 {
        return None;
    }
    let n = if namecnt > 1 && namecnt % 2 == 1 {
        namecnt + 1
    } else {
        namecnt
    };
    Some((n / 2 + 1).min(namecnt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::RandOptions;

    #[test]
    fn last_names_and_by_name_positions() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        assert_eq!(by_name_position(0), None);
        assert_eq!(by_name_position(1), Some(1));
        assert_eq!(by_name_position(2), Some(2));
        assert_eq!(by_name_position(3), Some(3));
        assert_eq!(by_name_position(4), Some(3));
    }

    #[test]
    fn mix_and_ranges_follow_the_script() {
        let size = TpccSize {
            warehouses: 3,
            items: 500,
            customers_per_district: 100,
        };
        let mut rng = SbRand::new(7, 1, RandOptions::default());
        let mut counts = std::collections::BTreeMap::new();
        let n = 23_000;
        for _ in 0..n {
            let t = next_txn(&mut rng, 2, &size);
            *counts.entry(t.kind()).or_insert(0u32) += 1;
            match t {
                TpccTxn::NewOrder {
                    table,
                    w_id,
                    d_id,
                    c_id,
                    lines,
                    ..
                } => {
                    assert!((1..=2).contains(&table));
                    assert!((1..=3).contains(&w_id) && (1..=10).contains(&d_id));
                    assert!((1..=100).contains(&c_id));
                    assert!((5..=15).contains(&lines.len()));
                    for (i, sup, q) in lines {
                        assert!((0..=500).contains(&i) && (1..=10).contains(&q));
                        assert_eq!(sup, w_id, "other_ware always returns the home warehouse");
                    }
                }
                TpccTxn::Payment {
                    c_w_id,
                    w_id,
                    h_amount,
                    ..
                } => {
                    assert_eq!(c_w_id, w_id);
                    assert!((1..=5000).contains(&h_amount));
                }
                _ => {}
            }
        }
        // 10/23, 10/23, 1/23 each: within 5 % of the expected counts for this seed.
        for (k, want) in [
            ("new_order", 10_000),
            ("payment", 10_000),
            ("order_status", 1_000),
            ("delivery", 1_000),
            ("stock_level", 1_000),
        ] {
            let got = counts[k];
            assert!(
                got.abs_diff(want) * 20 < want,
                "{k}: {got} of {n}, want ~{want}"
            );
        }
    }

    #[test]
    fn table_defs_validate_with_and_without_foreign_keys() {
        for fk in [true, false] {
            let defs = table_defs(3, fk);
            assert_eq!(defs.len(), 9);
            for d in &defs {
                d.validate().unwrap_or_else(|e| panic!("{}: {e}", d.name));
            }
            let n: usize = defs.iter().map(|d| d.foreign_keys.len()).sum();
            assert_eq!(n, if fk { 10 } else { 0 });
            assert!(defs[TpccTable::History as usize].primary_key.is_empty());
        }
    }
}
