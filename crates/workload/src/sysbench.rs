//! sysbench 1.0.20's OLTP workloads (/usr/share/sysbench/oltp_common.lua and one script per
//! workload) as streams of typed operations.
//!
//! Schema (oltp_common.lua `create_table`): `sbtestN(id INTEGER PRIMARY KEY, k INTEGER NOT
//! NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '')` with
//! the secondary index `k_N(k)`. Rows `id = 1..=table_size` (the ids `cmd_prepare` writes
//! explicitly), `k = sb_rand(1, table_size)` (the default distribution), `c` and `pad`
//! from the templates below. `oltp_insert` inserts with the next AUTO_INCREMENT / SERIAL id
//! (`--auto-inc=on`, the default), or with `sysbench.rand.unique() - 2^31` into tables that
//! prepare left empty (`--auto-inc=off`).
//!
//! Events (the scripts' `event()`): `oltp_read_write` = BEGIN, point selects, the four range
//! kinds, index updates, non-index updates, delete/insert pairs, COMMIT; `oltp_read_only`
//! and `oltp_write_only` are its halves; `oltp_point_select`, `oltp_update_index`,
//! `oltp_update_non_index`, `oltp_insert`, `oltp_delete` are one statement in autocommit;
//! `select_random_points` / `select_random_ranges` query `k` by IN lists / BETWEEN ranges
//! within a slice of the key space per thread.

use crate::rand::{RandOptions, SbRand};
use mvcclab_engine::catalog::TableDef;
use serde::{Deserialize, Serialize};

/// oltp_common.lua `c_value_template`: ten groups of 11 digits separated by '-' (119 chars).
pub const C_TEMPLATE: &str =
    "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// oltp_common.lua `pad_value_template`: five groups (59 chars).
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

/// The workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// oltp_point_select.lua.
    OltpPointSelect,
    /// oltp_read_only.lua.
    OltpReadOnly,
    /// oltp_read_write.lua.
    OltpReadWrite,
    /// oltp_write_only.lua.
    OltpWriteOnly,
    /// oltp_update_index.lua.
    OltpUpdateIndex,
    /// oltp_update_non_index.lua.
    OltpUpdateNonIndex,
    /// oltp_insert.lua.
    OltpInsert,
    /// oltp_delete.lua.
    OltpDelete,
    /// select_random_points.lua.
    SelectRandomPoints,
    /// select_random_ranges.lua.
    SelectRandomRanges,
    /// Percona-Lab/sysbench-tpcc's tpcc.lua (TPC-C; [`crate::tpcc`]).
    Tpcc,
}

impl WorkloadKind {
    /// Every workload, with its name.
    pub const ALL: &'static [(WorkloadKind, &'static str)] = &[
        (WorkloadKind::OltpPointSelect, "oltp_point_select"),
        (WorkloadKind::OltpReadOnly, "oltp_read_only"),
        (WorkloadKind::OltpReadWrite, "oltp_read_write"),
        (WorkloadKind::OltpWriteOnly, "oltp_write_only"),
        (WorkloadKind::OltpUpdateIndex, "oltp_update_index"),
        (WorkloadKind::OltpUpdateNonIndex, "oltp_update_non_index"),
        (WorkloadKind::OltpInsert, "oltp_insert"),
        (WorkloadKind::OltpDelete, "oltp_delete"),
        (WorkloadKind::SelectRandomPoints, "select_random_points"),
        (WorkloadKind::SelectRandomRanges, "select_random_ranges"),
        (WorkloadKind::Tpcc, "tpcc"),
    ];

    /// The sysbench script name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }
}

impl std::str::FromStr for WorkloadKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim_end_matches(".lua");
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| {
                format!(
                    "unknown workload '{s}'; expected one of {}",
                    Self::ALL
                        .iter()
                        .map(|(_, n)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// The scripts' options (sysbench names, 1.0.20 defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SysbenchOptions {
    /// --tables (1).
    pub tables: u32,
    /// --table-size (10000).
    pub table_size: u32,
    /// --range-size (100).
    pub range_size: u32,
    /// --point-selects (10).
    pub point_selects: u32,
    /// --simple-ranges (1).
    pub simple_ranges: u32,
    /// --sum-ranges (1).
    pub sum_ranges: u32,
    /// --order-ranges (1).
    pub order_ranges: u32,
    /// --distinct-ranges (1).
    pub distinct_ranges: u32,
    /// --index-updates (1).
    pub index_updates: u32,
    /// --non-index-updates (1).
    pub non_index_updates: u32,
    /// --delete-inserts (1).
    pub delete_inserts: u32,
    /// --range-selects (on).
    pub range_selects: bool,
    /// --skip-trx (off).
    pub skip_trx: bool,
    /// --auto-inc (on): `oltp_insert` lets the table assign ids; off, it sends
    /// `sysbench.rand.unique() - 2^31` and prepare creates the tables empty.
    #[serde(default = "yes")]
    pub auto_inc: bool,
    /// select_random_points --random-points (10).
    pub random_points: u32,
    /// select_random_ranges --number-of-ranges (10).
    pub number_of_ranges: u32,
    /// select_random_ranges --delta (5).
    pub delta: u32,
    /// Random number options.
    pub rand: RandOptions,
    /// tpcc `--scale`: warehouses (sysbench-tpcc's default is 100; mvcclab's 1).
    #[serde(default = "one")]
    pub scale: u32,
    /// tpcc `--use_fk` (1): declare the foreign keys (mvcclab does not enforce them).
    #[serde(default = "yes")]
    pub use_fk: bool,
    /// tpcc items per set and stock rows per warehouse (`MAXITEMS`, 100,000); smaller
    /// only to load small databases in tests.
    #[serde(default = "maxitems")]
    pub tpcc_items: u32,
    /// tpcc customers (and loaded orders) per district (`CUST_PER_DIST`, 3,000); smaller
    /// only in tests.
    #[serde(default = "cust_per_dist")]
    pub tpcc_customers: u32,
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

fn maxitems() -> u32 {
    crate::tpcc::MAXITEMS
}

fn cust_per_dist() -> u32 {
    crate::tpcc::CUST_PER_DIST
}

impl SysbenchOptions {
    /// The TPC-C database these options ask for (`scale`, `tpcc_items`,
    /// `tpcc_customers`).
    pub fn tpcc_size(&self) -> crate::tpcc::TpccSize {
        crate::tpcc::TpccSize {
            warehouses: self.scale,
            items: self.tpcc_items,
            customers_per_district: self.tpcc_customers,
        }
    }

    /// Rows per table that `prepare` loads for `kind`: `table_size`, except 0 for
    /// `oltp_insert` with `--auto-inc=off` (oltp_insert.lua's prepare command empties
    /// `table_size` so that prepared ids cannot collide with `rand.unique()` ones).
    pub fn prepare_rows(&self, kind: WorkloadKind) -> u32 {
        if kind == WorkloadKind::OltpInsert && !self.auto_inc {
            0
        } else {
            self.table_size
        }
    }
}

impl Default for SysbenchOptions {
    fn default() -> Self {
        SysbenchOptions {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
            auto_inc: true,
            random_points: 10,
            number_of_ranges: 10,
            delta: 5,
            rand: RandOptions::default(),
            scale: 1,
            use_fk: true,
            tpcc_items: crate::tpcc::MAXITEMS,
            tpcc_customers: crate::tpcc::CUST_PER_DIST,
        }
    }
}

/// One statement of a workload, with its parameters (the SQL sysbench sends is in each
/// variant's doc). Any target executes these: the embedded engine now, real servers later.
///
/// Fields are the statement's parameters: `table` is the sbtest number (1-based), `id`,
/// `lo`/`hi` (inclusive), `k`, `c`, `pad` the values bound to the placeholders, `ks` the IN
/// list, `ranges` the (low, high) BETWEEN pairs.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// BEGIN.
    Begin,
    /// COMMIT.
    Commit,
    /// `SELECT c FROM sbtestN WHERE id=?`.
    PointSelect { table: u32, id: i32 },
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ?`.
    SimpleRange { table: u32, lo: i32, hi: i32 },
    /// `SELECT SUM(k) FROM sbtestN WHERE id BETWEEN ? AND ?`.
    SumRange { table: u32, lo: i32, hi: i32 },
    /// `SELECT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`.
    OrderRange { table: u32, lo: i32, hi: i32 },
    /// `SELECT DISTINCT c FROM sbtestN WHERE id BETWEEN ? AND ? ORDER BY c`.
    DistinctRange { table: u32, lo: i32, hi: i32 },
    /// `UPDATE sbtestN SET k=k+1 WHERE id=?`.
    IndexUpdate { table: u32, id: i32 },
    /// `UPDATE sbtestN SET c=? WHERE id=?`.
    NonIndexUpdate { table: u32, id: i32, c: String },
    /// `DELETE FROM sbtestN WHERE id=?`.
    Delete { table: u32, id: i32 },
    /// `INSERT INTO sbtestN (id, k, c, pad) VALUES (?, ?, ?, ?)`; `id: None` leaves the id
    /// to the table's AUTO_INCREMENT / SERIAL (the next value after the largest given).
    Insert {
        table: u32,
        id: Option<i32>,
        k: i32,
        c: String,
        pad: String,
    },
    /// `SELECT id, k, c, pad FROM sbtest1 WHERE k IN (...)`.
    RandomPoints { ks: Vec<i32> },
    /// `SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR ...`.
    RandomRanges { ranges: Vec<(i32, i32)> },
    /// One TPC-C transaction of tpcc_run.lua, from BEGIN to COMMIT (its statements depend
    /// on what the earlier ones read, so the target runs them: [`crate::tpcc_embedded`]).
    Tpcc(crate::tpcc::TpccTxn),
}

impl Op {
    /// The operation kind name used in reports (sysbench's statement family).
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Begin => "begin",
            Op::Commit => "commit",
            Op::PointSelect { .. } => "point_select",
            Op::SimpleRange { .. } => "simple_range",
            Op::SumRange { .. } => "sum_range",
            Op::OrderRange { .. } => "order_range",
            Op::DistinctRange { .. } => "distinct_range",
            Op::IndexUpdate { .. } => "index_update",
            Op::NonIndexUpdate { .. } => "non_index_update",
            Op::Delete { .. } => "delete",
            Op::Insert { .. } => "insert",
            Op::RandomPoints { .. } => "random_points",
            Op::RandomRanges { .. } => "random_ranges",
            Op::Tpcc(t) => t.kind(),
        }
    }

    /// Whether it is a query sysbench counts (BEGIN/COMMIT count as "other").
    pub fn is_query(&self) -> bool {
        !matches!(self, Op::Begin | Op::Commit)
    }
}

/// `sbtest{n}` with its index `k_{n}` (defined with the catalog: `TableDef::sbtest`).
pub fn sbtest_def(n: u32) -> TableDef {
    TableDef::sbtest(n)
}

/// One row of the load (`cmd_prepare`): (id, k, c, pad).
pub fn load_row(rng: &mut SbRand, opts: &SysbenchOptions, id: u32) -> (i32, i32, String, String) {
    let c = rng.string(C_TEMPLATE);
    let pad = rng.string(PAD_TEMPLATE);
    let k = rng.default_dist(1, opts.table_size);
    (id as i32, k as i32, c, pad)
}

/// The operation generator of one thread.
pub struct Generator {
    kind: WorkloadKind,
    opts: SysbenchOptions,
    rng: SbRand,
    thread: u32,
    threads: u32,
    unique: u32,
}

impl Generator {
    /// Thread `thread` of `threads`, seeded from `seed`.
    pub fn new(
        kind: WorkloadKind,
        opts: SysbenchOptions,
        seed: u64,
        thread: u32,
        threads: u32,
    ) -> Self {
        let rng = SbRand::new(seed, thread + 1, opts.rand.clone());
        Generator {
            kind,
            opts,
            rng,
            thread,
            threads: threads.max(1),
            unique: thread.wrapping_mul(0x9E37_79B9),
        }
    }

    fn table(&mut self) -> u32 {
        self.rng.uniform(1, self.opts.tables)
    }

    fn id(&mut self) -> i32 {
        self.rng.default_dist(1, self.opts.table_size) as i32
    }

    fn ranges(&mut self, out: &mut Vec<Op>, n: u32, make: fn(u32, i32, i32) -> Op) {
        let t = self.table();
        for _ in 0..n {
            let id = self.id();
            out.push(make(t, id, id + self.opts.range_size as i32 - 1));
        }
    }

    fn reads(&mut self, out: &mut Vec<Op>) {
        let t = self.table();
        for _ in 0..self.opts.point_selects {
            let id = self.id();
            out.push(Op::PointSelect { table: t, id });
        }
        if self.opts.range_selects {
            self.ranges(out, self.opts.simple_ranges, |table, lo, hi| {
                Op::SimpleRange { table, lo, hi }
            });
            self.ranges(out, self.opts.sum_ranges, |table, lo, hi| Op::SumRange {
                table,
                lo,
                hi,
            });
            self.ranges(out, self.opts.order_ranges, |table, lo, hi| {
                Op::OrderRange { table, lo, hi }
            });
            self.ranges(out, self.opts.distinct_ranges, |table, lo, hi| {
                Op::DistinctRange { table, lo, hi }
            });
        }
    }

    fn index_updates(&mut self, out: &mut Vec<Op>) {
        let t = self.table();
        for _ in 0..self.opts.index_updates {
            let id = self.id();
            out.push(Op::IndexUpdate { table: t, id });
        }
    }

    fn non_index_updates(&mut self, out: &mut Vec<Op>) {
        let t = self.table();
        for _ in 0..self.opts.non_index_updates {
            let c = self.rng.string(C_TEMPLATE);
            let id = self.id();
            out.push(Op::NonIndexUpdate { table: t, id, c });
        }
    }

    fn delete_inserts(&mut self, out: &mut Vec<Op>) {
        let t = self.table();
        for _ in 0..self.opts.delete_inserts {
            let id = self.id();
            let k = self.id();
            let c = self.rng.string(C_TEMPLATE);
            let pad = self.rng.string(PAD_TEMPLATE);
            out.push(Op::Delete { table: t, id });
            out.push(Op::Insert {
                table: t,
                id: Some(id),
                k,
                c,
                pad,
            });
        }
    }

    fn writes(&mut self, out: &mut Vec<Op>) {
        self.index_updates(out);
        self.non_index_updates(out);
        self.delete_inserts(out);
    }

    fn slice(&mut self) -> (u32, u32) {
        let rlen = self.opts.table_size / self.threads;
        let rmin = rlen * (self.thread % self.threads);
        (rmin, rmin + rlen)
    }

    /// The next event's statements, in order (the script's `event()`).
    pub fn next_event(&mut self) -> Vec<Op> {
        let mut out = Vec::with_capacity(24);
        let trx = !self.opts.skip_trx;
        match self.kind {
            WorkloadKind::OltpReadWrite
            | WorkloadKind::OltpReadOnly
            | WorkloadKind::OltpWriteOnly => {
                if trx {
                    out.push(Op::Begin);
                }
                if self.kind != WorkloadKind::OltpWriteOnly {
                    self.reads(&mut out);
                }
                if self.kind != WorkloadKind::OltpReadOnly {
                    self.writes(&mut out);
                }
                if trx {
                    out.push(Op::Commit);
                }
            }
            WorkloadKind::OltpPointSelect => {
                // oltp_point_select.lua's prepare_statements() sets
                // sysbench.opt.point_selects=1: one point select per event, whatever
                // --point-selects says.
                let t = self.table();
                let id = self.id();
                out.push(Op::PointSelect { table: t, id });
            }
            WorkloadKind::OltpUpdateIndex => self.index_updates(&mut out),
            WorkloadKind::OltpUpdateNonIndex => self.non_index_updates(&mut out),
            WorkloadKind::OltpInsert => {
                let table = self.rng.uniform(1, self.opts.tables);
                let k = self.id();
                let c = self.rng.string(C_TEMPLATE);
                let pad = self.rng.string(PAD_TEMPLATE);
                // oltp_insert.lua event(): with --auto-inc the server assigns the id;
                // otherwise sysbench.rand.unique() - 2^31 (a permutation of u32 as SQL INT).
                let id = if self.opts.auto_inc {
                    None
                } else {
                    self.unique = self.unique.wrapping_add(1);
                    Some((crate::unique_permute(self.unique) as i64 - 2_147_483_648) as i32)
                };
                out.push(Op::Insert {
                    table,
                    id,
                    k,
                    c,
                    pad,
                });
            }
            WorkloadKind::OltpDelete => {
                let table = self.rng.uniform(1, self.opts.tables);
                let id = self.id();
                out.push(Op::Delete { table, id });
            }
            WorkloadKind::SelectRandomPoints => {
                let (lo, hi) = self.slice();
                let ks = (0..self.opts.random_points)
                    .map(|_| self.rng.default_dist(lo, hi) as i32)
                    .collect();
                out.push(Op::RandomPoints { ks });
            }
            WorkloadKind::Tpcc => {
                let size = self.opts.tpcc_size();
                out.push(Op::Tpcc(crate::tpcc::next_txn(
                    &mut self.rng,
                    self.opts.tables,
                    &size,
                )));
            }
            WorkloadKind::SelectRandomRanges => {
                let (lo, hi) = self.slice();
                let d = self.opts.delta as i32;
                let ranges = (0..self.opts.number_of_ranges)
                    .map(|_| {
                        let v = self.rng.default_dist(lo, hi) as i32;
                        (v, v + d)
                    })
                    .collect();
                out.push(Op::RandomRanges { ranges });
            }
        }
        out
    }
}
