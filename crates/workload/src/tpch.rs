//! TPC-H (specification 3.0.1): the eight tables with their keys, their rows as the
//! `tpchgen` crate generates them (row for row what TPC's `dbgen` writes), and the 22
//! queries with the specification's validation parameters (§2.4.n.4 "Validation") in
//! PostgreSQL's and MariaDB's dialects.
//!
//! * [`table_defs`]: the schema of §1.4 with its primary keys and declared foreign keys;
//!   [`TpchIndexes`] says which secondary indexes an engine has: PostgreSQL indexes only
//!   what a constraint needs (the primary keys), InnoDB also gives every foreign key an
//!   index whose leading columns are the referencing ones, creating one when no existing
//!   index starts with them (dict0dict.cc `dict_foreign_find_index`; MariaDB KB "Foreign
//!   Keys": "an index is automatically created on the referencing columns").
//! * [`rows`]: one table's rows at a scale factor, as engine [`Row`]s.
//! * [`query_sql`]: query `n`'s text for a dialect, the template's `:k` parameters
//!   replaced.
//!
//! Scale: SF 1 is 6,001,215 lineitem rows (about 1 GiB of `dbgen` text); the row counts
//! scale linearly except nation (25) and region (5).

use crate::sql::Dialect;
use mvcclab_engine::catalog::{
    Column, ColumnType, Decimal, ForeignKeyDef, IndexDef, Row, TableDef, Value, PG_EPOCH_UNIX_DAYS,
};

/// The eight TPC-H tables, in load order (referenced tables first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TpchTable {
    /// REGION: 5 rows.
    Region,
    /// NATION: 25 rows.
    Nation,
    /// PART: 200,000 × SF.
    Part,
    /// SUPPLIER: 10,000 × SF.
    Supplier,
    /// PARTSUPP: 800,000 × SF.
    PartSupp,
    /// CUSTOMER: 150,000 × SF.
    Customer,
    /// ORDERS: 1,500,000 × SF.
    Orders,
    /// LINEITEM: about 6,000,000 × SF (1 to 7 per order).
    LineItem,
}

impl TpchTable {
    /// Every table, in load order.
    pub const ALL: [TpchTable; 8] = [
        TpchTable::Region,
        TpchTable::Nation,
        TpchTable::Part,
        TpchTable::Supplier,
        TpchTable::PartSupp,
        TpchTable::Customer,
        TpchTable::Orders,
        TpchTable::LineItem,
    ];

    /// The table's SQL name (lower case, as in the queries).
    pub fn name(self) -> &'static str {
        match self {
            TpchTable::Region => "region",
            TpchTable::Nation => "nation",
            TpchTable::Part => "part",
            TpchTable::Supplier => "supplier",
            TpchTable::PartSupp => "partsupp",
            TpchTable::Customer => "customer",
            TpchTable::Orders => "orders",
            TpchTable::LineItem => "lineitem",
        }
    }
}

/// Which secondary indexes the tables get (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpchIndexes {
    /// Primary keys only: PostgreSQL creates an index for a PRIMARY KEY constraint and
    /// none for a FOREIGN KEY (PostgreSQL 15 manual, 5.4.5 "Foreign Keys").
    PrimaryKeysOnly,
    /// Primary keys and an index per foreign key not already led by its columns: InnoDB.
    ForeignKeyIndexes,
}

/// The real engine a preset's plans follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpchEngine {
    /// PostgreSQL 15.
    PostgreSql,
    /// MariaDB 10.11 (InnoDB).
    MariaDb,
}

impl TpchEngine {
    /// The secondary indexes the engine gives the schema.
    pub fn indexes(self) -> TpchIndexes {
        match self {
            TpchEngine::PostgreSql => TpchIndexes::PrimaryKeysOnly,
            TpchEngine::MariaDb => TpchIndexes::ForeignKeyIndexes,
        }
    }
}

/// The largest scale factor whose keys fit the schema's INTEGER columns (o_orderkey runs
/// to 6,000,000 × SF).
pub const MAX_SCALE_FACTOR: f64 = 300.0;

/// The smallest scale factor whose rows keep their keys unique: below it dbgen's
/// PARTSUPP formula (TPC-H §4.2.3, `ps_suppkey` from `ps_partkey` and the supplier count)
/// repeats (ps_partkey, ps_suppkey) pairs, which no engine can load under its primary key
/// (SF 0.002 gives (101, 2) twice).
pub const MIN_SCALE_FACTOR: f64 = 0.01;

/// Checks a scale factor: from [`MIN_SCALE_FACTOR`] to [`MAX_SCALE_FACTOR`].
///
/// Errors: a message naming the value.
pub fn check_scale_factor(sf: f64) -> Result<(), String> {
    if !(sf.is_finite() && (MIN_SCALE_FACTOR..=MAX_SCALE_FACTOR).contains(&sf)) {
        return Err(format!(
            "--scale-factor {sf}: must be from {MIN_SCALE_FACTOR} to {MAX_SCALE_FACTOR}"
        ));
    }
    Ok(())
}

fn col(name: &str, ty: ColumnType) -> Column {
    Column::not_null(name, ty)
}

fn dec() -> ColumnType {
    ColumnType::Decimal {
        precision: 15,
        scale: 2,
    }
}

fn def(name: &str, columns: Vec<Column>, pk: &[&str]) -> TableDef {
    let pos = |c: &str| columns.iter().position(|x| x.name == c).expect("column");
    TableDef {
        name: name.into(),
        primary_key: pk.iter().map(|c| pos(c)).collect(),
        columns,
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
    }
}

/// Declares a foreign key and, with [`TpchIndexes::ForeignKeyIndexes`], gives it an index
/// unless the primary key or an index already starts with its columns (InnoDB's rule).
fn fk(t: &mut TableDef, cols: &[&str], refd: &str, ref_cols: &[&str], ix: TpchIndexes) {
    let columns: Vec<usize> = cols
        .iter()
        .map(|c| t.columns.iter().position(|x| x.name == *c).expect("column"))
        .collect();
    let name = format!("{}_{}_fkey", t.name, cols.join("_"));
    let led_by = |key: &[usize]| key.len() >= columns.len() && key[..columns.len()] == columns;
    if ix == TpchIndexes::ForeignKeyIndexes
        && !led_by(&t.primary_key)
        && !t.indexes.iter().any(|i| led_by(&i.columns))
    {
        t.indexes.push(IndexDef {
            name: name.clone(),
            columns: columns.clone(),
            unique: false,
        });
    }
    t.foreign_keys.push(ForeignKeyDef {
        name,
        columns,
        referenced_table: refd.into(),
        referenced_columns: ref_cols.iter().map(|c| c.to_string()).collect(),
    });
}

/// The eight tables in [`TpchTable::ALL`] order (TPC-H §1.4.1, column types of §1.3.1:
/// identifiers INTEGER, decimals DECIMAL(15,2), fixed text CHAR, variable text VARCHAR,
/// dates DATE), primary keys of §1.4.2.2 and foreign keys of §1.4.2.3, with the secondary
/// indexes `ix` says.
pub fn table_defs(ix: TpchIndexes) -> Vec<TableDef> {
    use ColumnType::*;
    let region = def(
        "region",
        vec![
            col("r_regionkey", Integer),
            col("r_name", Char(25)),
            col("r_comment", Varchar(152)),
        ],
        &["r_regionkey"],
    );
    let mut nation = def(
        "nation",
        vec![
            col("n_nationkey", Integer),
            col("n_name", Char(25)),
            col("n_regionkey", Integer),
            col("n_comment", Varchar(152)),
        ],
        &["n_nationkey"],
    );
    fk(
        &mut nation,
        &["n_regionkey"],
        "region",
        &["r_regionkey"],
        ix,
    );
    let part = def(
        "part",
        vec![
            col("p_partkey", Integer),
            col("p_name", Varchar(55)),
            col("p_mfgr", Char(25)),
            col("p_brand", Char(10)),
            col("p_type", Varchar(25)),
            col("p_size", Integer),
            col("p_container", Char(10)),
            col("p_retailprice", dec()),
            col("p_comment", Varchar(23)),
        ],
        &["p_partkey"],
    );
    let mut supplier = def(
        "supplier",
        vec![
            col("s_suppkey", Integer),
            col("s_name", Char(25)),
            col("s_address", Varchar(40)),
            col("s_nationkey", Integer),
            col("s_phone", Char(15)),
            col("s_acctbal", dec()),
            col("s_comment", Varchar(101)),
        ],
        &["s_suppkey"],
    );
    fk(
        &mut supplier,
        &["s_nationkey"],
        "nation",
        &["n_nationkey"],
        ix,
    );
    let mut partsupp = def(
        "partsupp",
        vec![
            col("ps_partkey", Integer),
            col("ps_suppkey", Integer),
            col("ps_availqty", Integer),
            col("ps_supplycost", dec()),
            col("ps_comment", Varchar(199)),
        ],
        &["ps_partkey", "ps_suppkey"],
    );
    fk(&mut partsupp, &["ps_partkey"], "part", &["p_partkey"], ix);
    fk(
        &mut partsupp,
        &["ps_suppkey"],
        "supplier",
        &["s_suppkey"],
        ix,
    );
    let mut customer = def(
        "customer",
        vec![
            col("c_custkey", Integer),
            col("c_name", Varchar(25)),
            col("c_address", Varchar(40)),
            col("c_nationkey", Integer),
            col("c_phone", Char(15)),
            col("c_acctbal", dec()),
            col("c_mktsegment", Char(10)),
            col("c_comment", Varchar(117)),
        ],
        &["c_custkey"],
    );
    fk(
        &mut customer,
        &["c_nationkey"],
        "nation",
        &["n_nationkey"],
        ix,
    );
    let mut orders = def(
        "orders",
        vec![
            col("o_orderkey", Integer),
            col("o_custkey", Integer),
            col("o_orderstatus", Char(1)),
            col("o_totalprice", dec()),
            col("o_orderdate", Date),
            col("o_orderpriority", Char(15)),
            col("o_clerk", Char(15)),
            col("o_shippriority", Integer),
            col("o_comment", Varchar(79)),
        ],
        &["o_orderkey"],
    );
    fk(&mut orders, &["o_custkey"], "customer", &["c_custkey"], ix);
    let mut lineitem = def(
        "lineitem",
        vec![
            col("l_orderkey", Integer),
            col("l_partkey", Integer),
            col("l_suppkey", Integer),
            col("l_linenumber", Integer),
            col("l_quantity", dec()),
            col("l_extendedprice", dec()),
            col("l_discount", dec()),
            col("l_tax", dec()),
            col("l_returnflag", Char(1)),
            col("l_linestatus", Char(1)),
            col("l_shipdate", Date),
            col("l_commitdate", Date),
            col("l_receiptdate", Date),
            col("l_shipinstruct", Char(25)),
            col("l_shipmode", Char(10)),
            col("l_comment", Varchar(44)),
        ],
        &["l_orderkey", "l_linenumber"],
    );
    fk(
        &mut lineitem,
        &["l_orderkey"],
        "orders",
        &["o_orderkey"],
        ix,
    );
    fk(
        &mut lineitem,
        &["l_partkey", "l_suppkey"],
        "partsupp",
        &["ps_partkey", "ps_suppkey"],
        ix,
    );
    vec![
        region, nation, part, supplier, partsupp, customer, orders, lineitem,
    ]
}

/// A key as the schema's INTEGER.
fn int(v: i64) -> Value {
    Value::Integer(v as i32)
}

/// A `tpchgen` decimal (hundredths) as DECIMAL(15,2).
fn money(d: tpchgen::decimal::TPCHDecimal) -> Value {
    Value::Decimal(Decimal::from_units(d.into_inner() as i128, 2))
}

fn date(d: tpchgen::dates::TPCHDate) -> Value {
    Value::Date(d.to_unix_epoch() - PG_EPOCH_UNIX_DAYS as i32)
}

/// A value as the engines print it in a result and read it in a load file: text as is,
/// dates `YYYY-MM-DD`, numbers in decimal, NULL as `NULL`.
pub fn plain_text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        Value::Date(d) => mvcclab_engine::catalog::format_date(*d),
        other => other.to_string(),
    }
}

fn text(s: impl ToString) -> Value {
    Value::Text(s.to_string())
}

/// Visits every row of `table` at scale factor `sf`, in `dbgen`'s order, until `f`
/// returns an error (which is returned).
///
/// Errors: what `f` returns.
pub fn rows<E>(
    table: TpchTable,
    sf: f64,
    f: &mut dyn FnMut(Row) -> Result<(), E>,
) -> Result<(), E> {
    use tpchgen::generators::*;
    match table {
        TpchTable::Region => {
            for r in RegionGenerator::new(sf, 1, 1).iter() {
                f(vec![int(r.r_regionkey), text(r.r_name), text(r.r_comment)])?;
            }
        }
        TpchTable::Nation => {
            for n in NationGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(n.n_nationkey),
                    text(n.n_name),
                    int(n.n_regionkey),
                    text(n.n_comment),
                ])?;
            }
        }
        TpchTable::Part => {
            for p in PartGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(p.p_partkey),
                    text(&p.p_name),
                    text(p.p_mfgr),
                    text(p.p_brand),
                    text(p.p_type),
                    Value::Integer(p.p_size),
                    text(p.p_container),
                    money(p.p_retailprice),
                    text(p.p_comment),
                ])?;
            }
        }
        TpchTable::Supplier => {
            for s in SupplierGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(s.s_suppkey),
                    text(s.s_name),
                    text(&s.s_address),
                    int(s.s_nationkey),
                    text(&s.s_phone),
                    money(s.s_acctbal),
                    text(&s.s_comment),
                ])?;
            }
        }
        TpchTable::PartSupp => {
            for ps in PartSuppGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(ps.ps_partkey),
                    int(ps.ps_suppkey),
                    Value::Integer(ps.ps_availqty),
                    money(ps.ps_supplycost),
                    text(ps.ps_comment),
                ])?;
            }
        }
        TpchTable::Customer => {
            for c in CustomerGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(c.c_custkey),
                    text(c.c_name),
                    text(&c.c_address),
                    int(c.c_nationkey),
                    text(&c.c_phone),
                    money(c.c_acctbal),
                    text(c.c_mktsegment),
                    text(c.c_comment),
                ])?;
            }
        }
        TpchTable::Orders => {
            for o in OrderGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(o.o_orderkey),
                    int(o.o_custkey),
                    text(o.o_orderstatus),
                    money(o.o_totalprice),
                    date(o.o_orderdate),
                    text(o.o_orderpriority),
                    text(o.o_clerk),
                    Value::Integer(o.o_shippriority),
                    text(o.o_comment),
                ])?;
            }
        }
        TpchTable::LineItem => {
            for l in LineItemGenerator::new(sf, 1, 1).iter() {
                f(vec![
                    int(l.l_orderkey),
                    int(l.l_partkey),
                    int(l.l_suppkey),
                    Value::Integer(l.l_linenumber),
                    Value::Decimal(Decimal::from_units(l.l_quantity as i128 * 100, 2)),
                    money(l.l_extendedprice),
                    money(l.l_discount),
                    money(l.l_tax),
                    text(l.l_returnflag),
                    text(l.l_linestatus),
                    date(l.l_shipdate),
                    date(l.l_commitdate),
                    date(l.l_receiptdate),
                    text(l.l_shipinstruct),
                    text(l.l_shipmode),
                    text(l.l_comment),
                ])?;
            }
        }
    }
    Ok(())
}

/// The specification's validation parameters (§2.4.n.4), in the template's `:1`, `:2`,
/// ... order. Q11's FRACTION is 0.0001 / SF (§2.4.11.3).
fn validation_params(n: u32, sf: f64) -> Vec<String> {
    let v: &[&str] = match n {
        1 => &["90"],
        2 => &["15", "BRASS", "EUROPE"],
        3 => &["BUILDING", "1995-03-15"],
        4 => &["1993-07-01"],
        5 => &["ASIA", "1994-01-01"],
        6 => &["1994-01-01", "0.06", "24"],
        7 => &["FRANCE", "GERMANY"],
        8 => &["BRAZIL", "AMERICA", "ECONOMY ANODIZED STEEL"],
        9 => &["green"],
        10 => &["1993-10-01"],
        11 => return vec!["GERMANY".into(), format!("{}", 0.0001 / sf)],
        12 => &["MAIL", "SHIP", "1994-01-01"],
        13 => &["special", "requests"],
        14 => &["1995-09-01"],
        15 => &["1996-01-01"],
        16 => &[
            "Brand#45",
            "MEDIUM POLISHED",
            "49",
            "14",
            "23",
            "45",
            "19",
            "3",
            "36",
            "9",
        ],
        17 => &["Brand#23", "MED BOX"],
        18 => &["300"],
        19 => &["Brand#12", "Brand#23", "Brand#34", "1", "10", "20"],
        20 => &["forest", "1994-01-01", "CANADA"],
        21 => &["SAUDI ARABIA"],
        22 => &["13", "31", "23", "29", "30", "18", "17"],
        _ => &[],
    };
    v.iter().map(|s| s.to_string()).collect()
}

/// The row limit qgen appends (`:n`), per §2.4.n.1 (Q2 100, Q3 10, Q10 20, Q18 100, Q21
/// 100); none for the others.
fn row_limit(n: u32) -> Option<u32> {
    match n {
        2 | 18 | 21 => Some(100),
        3 => Some(10),
        10 => Some(20),
        _ => None,
    }
}

/// What a query run takes beyond its number: the scale factor (for Q11's fraction) and an
/// override of Q18's quantity (the "Done when" test lowers it so that a small database
/// returns rows).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueryParams {
    /// Scale factor of the loaded data.
    pub scale_factor: f64,
    /// Q18's `sum(l_quantity) > quantity`; `None`: the validation value 300.
    pub q18_quantity: Option<u32>,
}

/// Query `n` (1..=22) for `dialect`, as the statements to send in order: the template
/// from `tpchgen`'s `q_and_a` with the validation parameters (or `p`'s overrides)
/// substituted, qgen's row limit appended, and the dialect adapted: `interval 'n' day (3)`
/// loses its precision (PostgreSQL allows a precision only on SECOND; MariaDB has none),
/// Q13's derived-column list `as c_orders (c_custkey, c_count)` becomes column aliases on
/// MariaDB (10.11 has no derived-column lists), and Q15's view is three statements (create,
/// query, drop) with the stream number `:s` as 0.
///
/// Errors: a query number outside 1..=22.
pub fn query_sql(n: u32, dialect: Dialect, p: &QueryParams) -> Result<Vec<String>, String> {
    let template = tpchgen::q_and_a::queries::query(n as i32)
        .ok_or_else(|| format!("--query {n}: TPC-H has queries 1 to 22"))?;
    let mut params = validation_params(n, p.scale_factor);
    if let (18, Some(q)) = (n, p.q18_quantity) {
        params = vec![q.to_string()];
    }
    let mut sql = template.replace(":s", "0");
    // Highest first, so that :10 is not read as :1 followed by 0.
    for (i, v) in params.iter().enumerate().rev() {
        sql = sql.replace(&format!(":{}", i + 1), v);
    }
    sql = sql.replace("day (3)", "day");
    if n == 13 && dialect == Dialect::MySql {
        sql = sql
            .replace(
                "c_custkey,\n\t\t\tcount(o_orderkey)",
                "c_custkey as c_custkey,\n\t\t\tcount(o_orderkey) as c_count",
            )
            .replace("as c_orders (c_custkey, c_count)", "as c_orders");
    }
    let mut stmts: Vec<String> = sql
        .split(';')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(limit) = row_limit(n) {
        if let Some(q) = stmts.iter_mut().find(|s| s.starts_with("select")) {
            q.push_str(&format!("\nlimit {limit}"));
        }
    }
    Ok(stmts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_validates_and_innodb_indexes_follow_the_foreign_keys() {
        let pg = table_defs(TpchIndexes::PrimaryKeysOnly);
        let inno = table_defs(TpchIndexes::ForeignKeyIndexes);
        for d in pg.iter().chain(&inno) {
            d.validate().unwrap_or_else(|e| panic!("{}: {e}", d.name));
        }
        assert!(pg.iter().all(|d| d.indexes.is_empty()));
        let names: Vec<String> = inno
            .iter()
            .flat_map(|d| d.indexes.iter().map(|i| i.name.clone()))
            .collect();
        // ps_partkey and l_orderkey lead a primary key: no index of their own.
        assert_eq!(
            names,
            [
                "nation_n_regionkey_fkey",
                "supplier_s_nationkey_fkey",
                "partsupp_ps_suppkey_fkey",
                "customer_c_nationkey_fkey",
                "orders_o_custkey_fkey",
                "lineitem_l_partkey_l_suppkey_fkey",
            ]
        );
    }

    #[test]
    fn rows_match_dbgen_at_sf_001() {
        let mut n = 0;
        let mut first = None;
        rows::<()>(TpchTable::LineItem, 0.01, &mut |r| {
            if first.is_none() {
                first = Some(r);
            }
            n += 1;
            Ok(())
        })
        .unwrap();
        // dbgen -s 0.01: lineitem.tbl has 60,175 lines; the first is
        // 1|1552|93|1|17|24710.35|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|...
        assert_eq!(n, 60_175);
        let r = first.unwrap();
        assert_eq!(r[0], Value::Integer(1));
        assert_eq!(r[1], Value::Integer(1552));
        assert_eq!(r[2], Value::Integer(93));
        assert_eq!(r[4].to_string(), "17.00");
        assert_eq!(r[5].to_string(), "24710.35");
        assert_eq!(plain_text(&r[10]), "1996-03-13");
    }

    #[test]
    fn queries_have_every_parameter_substituted_in_both_dialects() {
        let p = QueryParams {
            scale_factor: 1.0,
            q18_quantity: None,
        };
        for n in 1..=22 {
            for d in [Dialect::PostgreSql, Dialect::MySql] {
                let s = query_sql(n, d, &p).unwrap();
                for q in &s {
                    assert!(!q.contains(':'), "Q{n} {d:?} keeps a parameter: {q}");
                }
                assert_eq!(s.len(), if n == 15 { 3 } else { 1 }, "Q{n}");
            }
        }
        let q18 = query_sql(18, Dialect::PostgreSql, &p).unwrap();
        assert!(q18[0].contains("sum(l_quantity) > 300"));
        assert!(q18[0].ends_with("limit 100"));
        let q13 = query_sql(13, Dialect::MySql, &p).unwrap();
        assert!(!q13[0].contains("(c_custkey, c_count)"), "{}", q13[0]);
        assert!(query_sql(23, Dialect::PostgreSql, &p).is_err());
    }
}
