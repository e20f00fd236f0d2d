//! The TPC-C load of Percona-Lab/sysbench-tpcc (`tpcc_common.lua` `create_tables`'s
//! item rows and `load_tables`), row by row with the script's value generators, written
//! to a [`TpccSink`]: the engine (`tpcc_embedded`) or a real server's multi-row INSERTs
//! (`tpcc_sql`). The generators decide compressibility (`c_data` is one random letter
//! repeated 300–500 times, "to provide a better compression"), so both targets load the
//! same values from the same seed.
//!
//! Differences from the script, none of which changes a stored value's shape: the
//! customer shuffle of `orders.o_c_id` draws from the load's generator instead of Lua's
//! `math.random`; `NOW()` is the load's start time, one value for every row; `new_orders`
//! rows are inserted as the rows of `INSERT INTO new_orders SELECT ... FROM orders WHERE
//! o_id > 2100`, in the orders' primary-key order.

use crate::rand::SbRand;
use crate::tpcc::{
    last_name, lua_f, nurand, repeated_letter, round_cents, TpccSize, TpccTable, DIST_PER_WARE,
};
use mvcclab_engine::catalog::{Decimal, Row, Value};

/// Where the load's rows go, in the order the script inserts them.
pub trait TpccSink {
    /// One row of `table` of the set being loaded, in [`crate::tpcc::table_defs`]'s column
    /// order.
    ///
    /// Errors: the target's, as text.
    fn insert(&mut self, table: TpccTable, row: Row) -> Result<(), String>;
    /// Writes what is buffered (the end of a bulk insert).
    ///
    /// Errors: the target's, as text.
    fn flush(&mut self) -> Result<(), String>;
}

/// The generator of set `n`'s items (one per set, so that every target loads the same
/// values from one seed).
pub fn items_rng(seed: u64, n: u32, o: &crate::rand::RandOptions) -> SbRand {
    SbRand::new(seed, 0x20000 + n, o.clone())
}

/// The generator of warehouse `w` of set `n`.
pub fn warehouse_rng(seed: u64, n: u32, w: u32, o: &crate::rand::RandOptions) -> SbRand {
    SbRand::new(seed, 0x30000 + n * 0x1000 + w, o.clone())
}

/// A DECIMAL(p, 2) value of `c` hundredths.
pub fn cents(c: i64) -> Value {
    Value::Decimal(Decimal::from_units(c as i128, 2))
}

/// A `smallint` value.
pub fn small(v: u32) -> Value {
    Value::SmallInt(v as i16)
}

/// A `tinyint` value (PostgreSQL `smallint`).
pub fn tiny(v: u32) -> Value {
    Value::TinyInt(v as i8)
}

/// An `int` value.
pub fn int(v: u32) -> Value {
    Value::Integer(v as i32)
}

/// `NOW()` in whole seconds.
pub fn now() -> Value {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Value::timestamp_from_unix_secs(secs)
}

/// The `item` table of one set (`create_tables`'s bulk insert): `items` rows.
///
/// Errors: the sink's.
pub fn load_items(sink: &mut dyn TpccSink, rng: &mut SbRand, items: u32) -> Result<(), String> {
    for j in 1..=items {
        let i_im_id = rng.uniform(1, 10000);
        let i_price = rng.uniform_double() * 100.0 + 1.0;
        // "i_name is not generated as prescribed by standard, but we want to provide a
        // better compression" (tpcc_common.lua).
        let i_name = format!("item-{i_im_id}-{}-{}", lua_f(i_price), rng.string("@@@@@"));
        let i_data = format!("data-{i_name}-{}", rng.string("@@@@@"));
        sink.insert(
            TpccTable::Item,
            vec![
                int(j),
                int(i_im_id),
                Value::text(truncate(&i_name, 24)),
                cents(round_cents(i_price)),
                Value::text(truncate(&i_data, 50)),
            ],
        )?;
    }
    sink.flush()
}

/// The first `n` characters of `s` (Lua's `sub(1, n)` on ASCII).
pub fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The address columns of a warehouse or district: name, street 1 and 2, city, state,
/// zip, and the tax in hundredths.
fn address(rng: &mut SbRand) -> (Vec<Value>, i64) {
    let v = vec![
        Value::text(rng.string("name-@@@@@")),
        Value::text(rng.string("street1-@@@@@@@@@@")),
        Value::text(rng.string("street2-@@@@@@@@@@")),
        Value::text(rng.string("city-@@@@@@@@@@")),
        Value::text(rng.string("@@")),
        Value::text(rng.string("zip-#####")),
    ];
    let tax = round_cents(rng.uniform_double() * 0.2);
    (v, tax)
}

/// Every row of warehouse `w` of one set (`load_tables`), table by table in the script's
/// order: warehouse, district, customer, history, orders, stock, new_orders, order_line.
///
/// Errors: the sink's.
pub fn load_warehouse(
    sink: &mut dyn TpccSink,
    rng: &mut SbRand,
    size: &TpccSize,
    w: u32,
) -> Result<(), String> {
    let (addr, tax) = address(rng);
    let mut row = vec![small(w)];
    row.extend(addr);
    row.extend([cents(tax), cents(300_000 * 100)]);
    sink.insert(TpccTable::Warehouse, row)?;
    let orders = size.customers_per_district;
    for d in 1..=DIST_PER_WARE {
        let (addr, tax) = address(rng);
        let mut row = vec![tiny(d), small(w)];
        row.extend(addr);
        row.extend([cents(tax), cents(30_000 * 100), int(orders + 1)]);
        sink.insert(TpccTable::District, row)?;
    }
    let since = now();
    for d in 1..=DIST_PER_WARE {
        for c in 1..=size.customers_per_district {
            let c_last = if c <= 1000 {
                last_name(c - 1)
            } else {
                last_name(nurand(rng, 255, 0, 999))
            };
            let first_len = rng.uniform(2, 10);
            let c_first = rng.string(&format!("first-{}", "@".repeat(first_len as usize)));
            let street1 = rng.string("street1-@@@@@@@@@@");
            let street2 = rng.string("street2-@@@@@@@@@@");
            let city = rng.string("city-@@@@@@@@@@");
            let state = rng.string("@@");
            let zip = rng.string("zip-#####");
            let phone = rng.string(&"#".repeat(16));
            let credit = if rng.uniform(1, 100) > 10 { "GC" } else { "BC" };
            let discount = round_cents(rng.uniform_double() * 0.5);
            let c_data = repeated_letter(rng, 300, 500);
            sink.insert(
                TpccTable::Customer,
                vec![
                    int(c),
                    tiny(d),
                    small(w),
                    Value::text(c_first),
                    Value::text("OE"),
                    Value::text(c_last),
                    Value::text(street1),
                    Value::text(street2),
                    Value::text(city),
                    Value::text(state),
                    Value::text(zip),
                    Value::text(phone),
                    since.clone(),
                    Value::text(credit),
                    Value::BigInt(50_000),
                    cents(discount),
                    cents(-10 * 100),
                    cents(10 * 100),
                    Value::SmallInt(1),
                    Value::SmallInt(0),
                    Value::text(c_data),
                ],
            )?;
        }
    }
    for d in 1..=DIST_PER_WARE {
        for c in 1..=size.customers_per_district {
            let h_data = repeated_letter(rng, 12, 24);
            sink.insert(
                TpccTable::History,
                vec![
                    int(c),
                    tiny(d),
                    small(w),
                    tiny(d),
                    small(w),
                    since.clone(),
                    cents(10 * 100),
                    Value::text(h_data),
                ],
            )?;
        }
    }
    // The customer of each order: a shuffle of 1..=orders (the script's Fisher-Yates with
    // Lua's math.random; here with the load's generator), the same for every district.
    let mut tab: Vec<u32> = (1..=orders).collect();
    for i in 0..tab.len() {
        let j = rng.uniform(i as u32, orders - 1) as usize;
        tab.swap(i, j);
    }
    let delivered = size.last_delivered_order();
    let mut ol_cnt = vec![vec![0u32; orders as usize]; DIST_PER_WARE as usize];
    for d in 1..=DIST_PER_WARE {
        for o in 1..=orders {
            let cnt = rng.uniform(5, 15);
            ol_cnt[d as usize - 1][o as usize - 1] = cnt;
            let carrier = if o <= delivered {
                tiny(rng.uniform(1, 10))
            } else {
                Value::Null
            };
            sink.insert(
                TpccTable::Orders,
                vec![
                    int(o),
                    tiny(d),
                    small(w),
                    int(tab[o as usize - 1]),
                    since.clone(),
                    carrier,
                    tiny(cnt),
                    tiny(1),
                ],
            )?;
        }
    }
    for i in 1..=size.items {
        let qty = rng.uniform(10, 100);
        let mut row = vec![int(i), small(w), small(qty)];
        for _ in 0..10 {
            row.push(Value::text(repeated_letter(rng, 24, 24)));
        }
        let s_data = repeated_letter(rng, 26, 50);
        row.extend([
            Value::Decimal(Decimal::from_i64(0)),
            Value::SmallInt(0),
            Value::SmallInt(0),
            Value::text(s_data),
        ]);
        sink.insert(TpccTable::Stock, row)?;
    }
    // INSERT INTO new_orders SELECT ... FROM orders WHERE o_id > 2100 AND o_w_id = w:
    // in the orders' primary-key order.
    for d in 1..=DIST_PER_WARE {
        for o in delivered + 1..=orders {
            sink.insert(TpccTable::NewOrders, vec![int(o), tiny(d), small(w)])?;
        }
    }
    for d in 1..=DIST_PER_WARE {
        for o in 1..=orders {
            for ol in 1..=ol_cnt[d as usize - 1][o as usize - 1] {
                let i_id = rng.uniform(1, size.items);
                let (date, amount) = if o <= delivered {
                    (since.clone(), 0)
                } else {
                    (Value::Null, round_cents(rng.uniform_double() * 9999.99))
                };
                let dist = repeated_letter(rng, 24, 24);
                sink.insert(
                    TpccTable::OrderLine,
                    vec![
                        int(o),
                        tiny(d),
                        small(w),
                        tiny(ol),
                        int(i_id),
                        small(w),
                        date,
                        tiny(5),
                        cents(amount),
                        Value::text(dist),
                    ],
                )?;
            }
        }
    }
    sink.flush()
}
