//! `mvcclab experiment system_versioning`: MariaDB's benchmark of system-versioned tables
//! (MDEV-15690, seed 003) on the embedded designs and beside a real MariaDB.
//!
//! Per variant — plain, versioned by timestamp, by transaction id, by timestamp with a
//! history partition (the design switches `system_versioning` and `history_storage`; trx id
//! with partitions is refused, MDEV-15951) — on an empty sbtest table (id PK, k indexed,
//! c CHAR(120), pad CHAR(60)), `--iterations` times: insert N rows (10 per transaction);
//! point selects, four kinds of range queries (sysbench's simple, sum, order and distinct
//! ranges of 100 ids, 8 per transaction) and selects by secondary key (`k IN (?)`, 10 per
//! transaction); N/2 updates of the non-indexed `c` and N/2 of the indexed `k` (10 per
//! transaction); the selects again; `DELETE FROM sbtest1` (every current row, one
//! statement; the phase's ops are the rows it deleted). One client thread (the seed ran
//! 32).
//!
//! Every step is a measured phase (`i{iteration}_{step}`) of the run layer
//! (`bench::experiment_phase`): the same statements, as sysbench's operations, go through
//! the subject's driver target to a design (`EmbeddedRun`) or to a managed real server on
//! mvcclab's FUSE device with the same device flags (`ServerRun`, `real:mariadb`); a
//! phase's figures are throughput, 4 KiB blocks by cause (a server: by file class), pages
//! and versions examined per statement (designs). The marked tables are the table, its
//! history partitions (`sbtest1#p_hist`, or `sbtest1#p0`..) and `transaction_registry`,
//! so history-partition pages count in the phases. On MariaDB the variants are the same table
//! `WITH SYSTEM VERSIONING` (sql/handler.cc `Vers_parse_info`): by timestamp (implicit
//! row_start/row_end), by transaction id (BIGINT UNSIGNED `GENERATED ALWAYS AS ROW
//! START/END`), and `PARTITION BY SYSTEM_TIME (PARTITION p_hist HISTORY, PARTITION p_cur
//! CURRENT)` — or, with `--history-partitions K`, `PARTITION BY SYSTEM_TIME LIMIT n
//! (PARTITION p0 HISTORY, ..., PARTITION pn CURRENT)` with K history partitions of
//! `--partition-limit` rows, the preset's switches `history_partitions` and
//! `history_partition_limit` alike (run `innodb/partitionK`). The variant `history_table`
//! (not in the default list) is the heap design's: the postgres preset with
//! `history_storage=history_table` beside `real:postgresql` with the periods extension 1.2
//! (`sbtest1` made system-versioned by `periods.add_system_time_period` and
//! `periods.add_system_versioning`: a `sbtest1_history` table without index, filled by the
//! extension's AFTER ROW trigger on UPDATE and DELETE); `real:postgresql` runs `plain` and
//! `history_table` only (PostgreSQL 15 has no system versioning of its own).
//!
//! Each variant runs with a big pool that holds everything — sized before the run from
//! the versions the run will have written ([`big_pool_bytes`]), and checked against the
//! data at the end (a status line says when it did not fit) — then, unless
//! `--no-small-pool`, with a small one: a quarter of the data the variant's tables held at
//! the end of the big run on the same side (the preset's relations' pages, the server's
//! `.ibd` files).

use crate::bench::{experiment_phase, EmbeddedRun, RunSpec, ServerRun, Subject};
use crate::progress::status;
use crate::result::{ExperimentRun, PhaseReport};
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::TableDef;
use mvcclab_engine::db::history_partitions::{history_relation_names, partition_names};
use mvcclab_engine::design::{
    DesignConfig, HistoryStorage, SystemVersioning, MAX_HISTORY_PARTITIONS,
};
use mvcclab_servers::ServerKind;
use mvcclab_workload::driver::{RunControl, Session};
use mvcclab_workload::sysbench::{Op, SysbenchOptions, WorkloadKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::experiment_common::ExperimentCommon;

/// Flags of `system_versioning`.
#[derive(Args, Debug)]
pub struct SystemVersioningArgs {
    /// Rows inserted per iteration (N); `--size seed` sets the seed's 8,000,000.
    #[arg(long, default_value_t = 200_000)]
    pub rows: u32,
    /// Iterations (I); `--size seed` sets the seed's 10.
    #[arg(long, default_value_t = 3)]
    pub iterations: u32,
    /// `seed`: the seed's size (8M rows, 10 iterations), overriding --rows and --iterations.
    #[arg(long)]
    pub size: Option<String>,
    /// Select statements per select phase (each kind; 10 per transaction, range queries 8).
    #[arg(long, default_value_t = 20_000)]
    pub selects: u32,
    /// Variants, comma-separated: plain, timestamp, trx_id, partition; and history_table
    /// (the postgres preset and real PostgreSQL with the periods extension; not a default).
    #[arg(
        long,
        default_value = "plain,timestamp,trx_id,partition",
        value_delimiter = ','
    )]
    pub variants: Vec<String>,
    /// Skip the second run with a small buffer pool.
    #[arg(long)]
    pub no_small_pool: bool,
    /// History partitions of the `partition` variant (design switch `history_partitions`;
    /// MariaDB `PARTITION BY SYSTEM_TIME LIMIT n (PARTITION p0 HISTORY, ..., PARTITION pn
    /// CURRENT)`), rotated by `--partition-limit`.
    #[arg(long, default_value_t = 1)]
    pub history_partitions: u16,
    /// The LIMIT in rows of each history partition of the `partition` variant (switch
    /// `history_partition_limit`); default with several partitions: --rows (an iteration
    /// writes 2 N history rows: its updates' and its DELETE's), with one: none.
    #[arg(long)]
    pub partition_limit: Option<u64>,
    /// Common flags (`--designs` defaults to both presets; `partition` runs on innodb only).
    #[command(flatten)]
    pub common: ExperimentCommon,
}

/// History partitions of the `partition` variant: how many, and their LIMIT in rows (0:
/// none), from `--history-partitions` and `--partition-limit` (default with several: the
/// rows per iteration).
pub fn partitioning(a: &SystemVersioningArgs, rows: u32) -> (u16, u64) {
    let parts = a.history_partitions;
    let limit = a
        .partition_limit
        .unwrap_or(if parts > 1 { rows as u64 } else { 0 });
    (parts, limit)
}

/// The design of `variant` on `base` (the `partition` variant with `parts` = (history
/// partitions, LIMIT rows)), or `None` when the variant does not exist for it.
///
/// Errors: [`UsageError`] for an unknown variant.
fn variant_design(
    base: &DesignConfig,
    variant: &str,
    parts: (u16, u64),
) -> Result<Option<DesignConfig>> {
    let mut d = base.clone();
    match variant {
        "plain" => {}
        "timestamp" => d.system_versioning = SystemVersioning::Timestamp,
        "trx_id" => d.system_versioning = SystemVersioning::TrxId,
        "partition" => {
            d.system_versioning = SystemVersioning::Timestamp;
            d.history_storage = HistoryStorage::Partition;
            (d.history_partitions, d.history_partition_limit) = parts;
        }
        "history_table" => {
            d.system_versioning = SystemVersioning::Timestamp;
            d.history_storage = HistoryStorage::HistoryTable;
        }
        other => {
            return Err(UsageError(format!(
                "unknown variant '{other}'; variants are plain, timestamp, trx_id, partition, \
                 history_table"
            ))
            .into())
        }
    }
    if d.validate().is_err() {
        return Ok(None);
    }
    d.name = if variant == "partition" && parts.0 > 1 {
        format!("{}/partition{}", base.name, parts.0)
    } else {
        format!("{}/{variant}", base.name)
    };
    Ok(Some(d))
}

/// sysbench's `c` (119 characters: eleven groups of 11 digits joined by '-') and `pad`
/// (59 digits) for one row (oltp_common.lua `get_c_value`, `get_pad_value`).
fn c_pad(rng: &mut SmallRng) -> (String, String) {
    let c: String = (0..11)
        .map(|_| format!("{:011}", rng.random_range(0..100_000_000_000u64)))
        .collect::<Vec<_>>()
        .join("-");
    (
        c[..119].to_string(),
        format!("{:059}", rng.random_range(0..u64::MAX)),
    )
}

/// What `system_versioning` needs of a subject beyond [`Subject`]: its table's DDL per
/// variant, the one-statement DELETE, and the size of what it holds.
trait SysverSubject: Subject {
    /// Creates the empty `sbtest1` of `variant` (`parts`: the `partition` variant's history
    /// partitions and LIMIT, [`partitioning`]) and makes it the driver target's table.
    ///
    /// Errors: the engine's or the server's, naming the statement.
    fn create_sbtest1(&self, variant: &str, parts: (u16, u64)) -> Result<()>;
    /// `DELETE FROM sbtest1`, one statement in one transaction; the rows it deleted.
    ///
    /// Errors: the engine's or the server's.
    fn delete_all(&self) -> Result<u64>;
    /// The tables a phase is counted on (the table, its history partition, the
    /// transaction registry, where they exist).
    fn phase_tables(&self) -> Vec<String>;
    /// The bytes the variant's tables hold now.
    ///
    /// Errors: the engine's; reading the server's data directory.
    fn data_bytes(&self) -> Result<u64>;
}

impl SysverSubject for EmbeddedRun {
    fn create_sbtest1(&self, _variant: &str, _parts: (u16, u64)) -> Result<()> {
        // The design's switches version the table (and make its history partition).
        self.load_table(&TableDef::sbtest(1), &mut std::iter::empty())?;
        self.attach(WorkloadKind::OltpInsert, &SysbenchOptions::default())
    }

    fn delete_all(&self) -> Result<u64> {
        // DELETE FROM sbtest1: every current row, in key order, in one transaction.
        let db = self.db();
        let t = db.table_id("sbtest1")?;
        let mut tx = db.begin();
        let rows = tx.scan(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
            usize::MAX,
        )?;
        let mut k = 0;
        for r in &rows {
            if tx.delete(t, &r[..1])? {
                k += 1;
            }
        }
        tx.commit()?;
        Ok(k)
    }

    fn phase_tables(&self) -> Vec<String> {
        // The table, its history partitions, the transaction registry.
        let db = self.db();
        let mut names = vec!["sbtest1".to_string()];
        names.extend(history_relation_names(
            db.design().history_storage,
            db.design().history_partitions,
            "sbtest1",
        ));
        names.push("transaction_registry".into());
        names.retain(|n| db.table_id(n).is_ok());
        names
    }

    fn data_bytes(&self) -> Result<u64> {
        let db = self.db();
        let mut pages = 0;
        for name in self.phase_tables() {
            let (h, i) = db.table_pages(db.table_id(&name)?)?;
            pages += h + i;
        }
        Ok(pages * db.design().page_size.bytes() as u64)
    }
}

/// MariaDB's DDL that turns the empty plain `sbtest1` into `variant` (MariaDB KB
/// "System-Versioned Tables": `ADD SYSTEM VERSIONING`; transaction-precise history with
/// BIGINT UNSIGNED `GENERATED ALWAYS AS ROW START/END` columns; `PARTITION BY SYSTEM_TIME`
/// with one history and one current partition, or with `parts.0` history partitions and
/// `LIMIT parts.1`, named as the preset names them).
fn mariadb_variant_ddl(variant: &str, parts: (u16, u64)) -> Vec<String> {
    match variant {
        "timestamp" => vec!["ALTER TABLE sbtest1 ADD SYSTEM VERSIONING".into()],
        "trx_id" => vec!["ALTER TABLE sbtest1 \
             ADD COLUMN row_start BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, \
             ADD COLUMN row_end BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE, \
             ADD PERIOD FOR SYSTEM_TIME(row_start, row_end), ADD SYSTEM VERSIONING"
            .into()],
        "partition" => {
            let (hist, cur) = partition_names(parts.0);
            let limit = if parts.1 > 0 {
                format!("LIMIT {} ", parts.1)
            } else {
                String::new()
            };
            let list: Vec<String> = hist
                .iter()
                .map(|p| format!("PARTITION {p} HISTORY"))
                .chain([format!("PARTITION {cur} CURRENT")])
                .collect();
            vec![
                "ALTER TABLE sbtest1 ADD SYSTEM VERSIONING".into(),
                format!(
                    "ALTER TABLE sbtest1 PARTITION BY SYSTEM_TIME {limit}({})",
                    list.join(", ")
                ),
            ]
        }
        _ => Vec::new(),
    }
}

/// PostgreSQL's DDL that turns the empty plain `sbtest1` into `variant`: for
/// `history_table`, the periods extension's SYSTEM_TIME period and system versioning
/// (periods--1.2.sql `add_system_time_period`: columns `system_time_start` and
/// `system_time_end`; `add_system_versioning`: `sbtest1_history` created `LIKE sbtest1`,
/// the view and the `sbtest1__as_of` functions). CASCADE creates btree_gist, which periods
/// requires. No other variant exists on PostgreSQL.
fn postgresql_variant_ddl(variant: &str) -> Vec<String> {
    match variant {
        "history_table" => vec![
            "CREATE EXTENSION IF NOT EXISTS periods CASCADE".into(),
            "SELECT periods.add_system_time_period('sbtest1')".into(),
            "SELECT periods.add_system_versioning('sbtest1')".into(),
        ],
        _ => Vec::new(),
    }
}

impl SysverSubject for ServerRun {
    fn create_sbtest1(&self, variant: &str, parts: (u16, u64)) -> Result<()> {
        self.load_table(&TableDef::sbtest(1), &mut std::iter::empty())?;
        let ddl = if self.kind() == ServerKind::PostgreSql {
            postgresql_variant_ddl(variant)
        } else {
            mariadb_variant_ddl(variant, parts)
        };
        for q in ddl {
            self.execute_sql(&q).with_context(|| {
                if q.contains("periods") {
                    "the periods extension (apt-get install -y postgresql-15-periods)".to_string()
                } else {
                    format!("variant {variant}")
                }
            })?;
        }
        Ok(())
    }

    fn delete_all(&self) -> Result<u64> {
        self.execute_sql("DELETE FROM sbtest1")
    }

    fn phase_tables(&self) -> Vec<String> {
        // A server's phase counts every table (ServerRun::mark_tables).
        vec!["sbtest1".into()]
    }

    fn data_bytes(&self) -> Result<u64> {
        if self.kind() == ServerKind::PostgreSql {
            // pg_total_relation_size of sbtest1 and sbtest1_history (if any), in 8 KiB
            // pages, read as the row count of a SELECT (the run layer's statement path
            // returns row counts, not values).
            let pages = self.execute_sql(
                "SELECT 1 FROM generate_series(1, (SELECT (pg_total_relation_size('sbtest1') \
                 + coalesce(pg_total_relation_size(to_regclass('sbtest1_history')), 0)) / 8192))",
            )?;
            return Ok(pages * 8192);
        }
        // The table's files (sbtest1.ibd, or sbtest1#P#p_hist.ibd and sbtest1#P#p_cur.ibd)
        // and mysql/transaction_registry.ibd.
        fn walk(dir: &Path, sum: &mut u64) -> std::io::Result<()> {
            for e in std::fs::read_dir(dir)? {
                let e = e?;
                let name = e.file_name().to_string_lossy().into_owned();
                let ft = e.file_type()?;
                if ft.is_dir() {
                    walk(&e.path(), sum)?;
                } else if name.ends_with(".ibd")
                    && (name.starts_with("sbtest1") || name == "transaction_registry.ibd")
                {
                    *sum += e.metadata()?.len();
                }
            }
            Ok(())
        }
        let Some(dir) = self.data_dir() else {
            return Ok(0);
        };
        let mut sum = 0;
        walk(dir, &mut sum).with_context(|| format!("reading {}", dir.display()))?;
        Ok(sum)
    }
}

/// Runs `n` statements `op(i)` through `sess`, `per_txn` per transaction; returns `n`
/// (fewer when stopped).
///
/// Errors: the first statement that fails (its transaction rolled back).
fn batched(
    sess: &mut dyn Session,
    n: u64,
    per_txn: u64,
    ctl: &RunControl,
    mut op: impl FnMut(u64) -> Op,
) -> Result<u64> {
    let mut done = 0;
    let exec = |sess: &mut dyn Session, op: &Op| -> Result<()> {
        sess.execute(op).map_err(|e| {
            sess.rollback();
            anyhow::anyhow!("{}: {e}", op.kind())
        })
    };
    while done < n && !ctl.stop.load(Ordering::Relaxed) {
        exec(sess, &Op::Begin)?;
        let end = (done + per_txn).min(n);
        for i in done..end {
            exec(sess, &op(i))?;
            ctl.statements.fetch_add(1, Ordering::Relaxed);
        }
        exec(sess, &Op::Commit)?;
        ctl.completed.fetch_add(1, Ordering::Relaxed);
        done = end;
    }
    Ok(done)
}

/// One run of `variant` on subject `s` (one pool): the table created, then the
/// iterations. Returns its phases and the bytes its tables held at the end.
///
/// Errors: the engine's or the server's.
fn one_run<S: SysverSubject>(
    s: &S,
    a: &SystemVersioningArgs,
    variant: &str,
    rows: u32,
    iterations: u32,
    ctl: &RunControl,
) -> Result<(Vec<PhaseReport>, u64)> {
    let c = &a.common;
    s.create_sbtest1(variant, partitioning(a, rows))?;
    s.end_phase()?;
    let tables = s.phase_tables();
    let target = s.target();
    let mut sess = target
        .session()
        .map_err(|e| anyhow::anyhow!("{}: a session: {e}", s.label()))?;
    let sess: &mut dyn Session = sess.as_mut();
    let mut rng = SmallRng::seed_from_u64(c.rand_seed);
    let n = rows as i32;
    let sel = a.selects as u64;
    let table = 1;
    let mut phases = Vec::new();
    let mut phase = |name: String, f: &mut dyn FnMut() -> Result<u64>| -> Result<()> {
        status(c.out.quiet, &format!("{} {name} ...", s.label()));
        phases.push(experiment_phase(
            s,
            &tables,
            &name,
            c.report_interval,
            ctl,
            f,
        )?);
        Ok(())
    };
    for it in 1..=iterations {
        let name = |st: &str| format!("i{it}_{st}");
        let mut r = SmallRng::seed_from_u64(c.rand_seed ^ it as u64);
        phase(name("insert"), &mut || {
            batched(sess, rows as u64, 10, ctl, |i| {
                let (c, pad) = c_pad(&mut rng);
                Op::Insert {
                    table,
                    id: Some(i as i32 + 1),
                    k: r.random_range(1..=n),
                    c,
                    pad,
                }
            })
        })?;
        for round in ["first", "second"] {
            if round == "second" {
                let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0xC ^ it as u64);
                phase(name("update_non_index"), &mut || {
                    batched(sess, rows as u64 / 2, 10, ctl, |_| {
                        let id = r.random_range(1..=n);
                        Op::NonIndexUpdate {
                            table,
                            id,
                            c: c_pad(&mut r).0,
                        }
                    })
                })?;
                let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0xD ^ it as u64);
                phase(name("update_index"), &mut || {
                    batched(sess, rows as u64 / 2, 10, ctl, |_| Op::IndexUpdate {
                        table,
                        id: r.random_range(1..=n),
                    })
                })?;
            }
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E1 ^ it as u64);
            phase(name(&format!("point_select_{round}")), &mut || {
                batched(sess, sel, 10, ctl, |_| Op::PointSelect {
                    table,
                    id: r.random_range(1..=n),
                })
            })?;
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E2 ^ it as u64);
            phase(name(&format!("range_select_{round}")), &mut || {
                // sysbench's simple, sum, order and distinct ranges of 100 ids in turn.
                batched(sess, sel, 8, ctl, |i| {
                    let lo = r.random_range(1..=n.saturating_sub(99).max(1));
                    let hi = lo + 99;
                    match i % 4 {
                        0 => Op::SimpleRange { table, lo, hi },
                        1 => Op::SumRange { table, lo, hi },
                        2 => Op::OrderRange { table, lo, hi },
                        _ => Op::DistinctRange { table, lo, hi },
                    }
                })
            })?;
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E3 ^ it as u64);
            phase(name(&format!("secondary_select_{round}")), &mut || {
                batched(sess, sel, 10, ctl, |_| Op::RandomPoints {
                    ks: vec![r.random_range(1..=n)],
                })
            })?;
        }
        // One statement; the phase's ops are the rows it deleted (per-row figures).
        phase(name("delete_all"), &mut || {
            let k = s.delete_all()?;
            ctl.statements.fetch_add(1, Ordering::Relaxed);
            ctl.completed.fetch_add(1, Ordering::Relaxed);
            Ok(k)
        })?;
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok((phases, s.data_bytes()?))
}

/// The big pool of a run: what the tables will hold at its end, estimated from the row
/// versions it writes — N rows per iteration for a plain table (each iteration deletes
/// the last); for a versioned one every version stays: per iteration N inserted, N
/// history rows from the updates, N ended by the DELETE — at 512 bytes a version (a
/// 230-byte sbtest record with row_start/row_end, pages about half full where history
/// rows land between current ones, and the secondary index), at least 64 MiB.
pub fn big_pool_bytes(variant: &str, rows: u32, iterations: u32) -> u64 {
    let versions = if variant == "plain" {
        rows as u64
    } else {
        2 * rows as u64 * iterations as u64 + rows as u64
    };
    (versions * 512).max(64 << 20)
}

/// Checks the flags of `system_versioning` and returns the rows and iterations it runs
/// (`--size seed`: the seed's 8,000,000 rows and 10 iterations).
///
/// Errors: [`UsageError`] for a bad `--size`, too few rows, no iteration or select, or an
/// unknown variant.
pub fn check_system_versioning(a: &SystemVersioningArgs) -> Result<(u32, u32)> {
    let (rows, iterations) = match a.size.as_deref() {
        None => (a.rows, a.iterations),
        Some("seed") => (8_000_000, 10),
        Some(other) => return Err(UsageError(format!("--size takes 'seed', got '{other}'")).into()),
    };
    if rows < 100 || iterations == 0 || a.selects == 0 {
        return Err(UsageError(
            "--rows must be at least 100, --iterations and --selects at least 1".into(),
        )
        .into());
    }
    let parts = partitioning(a, rows);
    if !(1..=MAX_HISTORY_PARTITIONS).contains(&parts.0) || (parts.0 > 1 && parts.1 == 0) {
        return Err(UsageError(format!(
            "--history-partitions must be 1..={MAX_HISTORY_PARTITIONS}, and more than 1 needs \
             a --partition-limit above 0 (the experiment rotates by LIMIT; rotation by INTERVAL \
             is the design switch history_partition_interval_s); got {} and {}",
            parts.0, parts.1
        ))
        .into());
    }
    for v in &a.variants {
        // Refuse an unknown variant before anything runs.
        variant_design(&DesignConfig::innodb(), v, parts)?;
    }
    Ok((rows, iterations))
}

/// One grid point of `system_versioning`: `spec` (a design, or a real server) with
/// variant `v` at device bandwidth `bandwidth` (MiB/s, `None` = unthrottled), with the big
/// pool and then, unless `--no-small-pool`, the small one: one run each, each on a fresh
/// database or a freshly started server. Empty when the variant does not exist for it (a
/// history partition on a heap design; a versioned variant other than history_table on
/// PostgreSQL; history_table on MariaDB; MyRocks).
///
/// Errors: bad flags ([`UsageError`]); engine or server errors.
pub fn system_versioning_point(
    a: &SystemVersioningArgs,
    spec: &RunSpec,
    v: &str,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<Vec<ExperimentRun>> {
    let c = &a.common;
    let (rows, iterations) = check_system_versioning(a)?;
    let skip = |what: &str| {
        status(
            c.out.quiet,
            &format!("{what}: variant {v} does not exist for it; skipped"),
        );
        Ok(Vec::new())
    };
    let base = match spec {
        RunSpec::Embedded(d) => d.clone(),
        RunSpec::Real(k) => {
            if *k == ServerKind::MyRocks
                || (*k == ServerKind::PostgreSql && v != "plain" && v != "history_table")
                || (*k != ServerKind::PostgreSql && v == "history_table")
            {
                return skip(&k.design_name());
            }
            let mut d = crate::design_arg::resolve_design(k.preset().unwrap_or("innodb"), &[])?;
            d.name = k.design_name();
            d
        }
    };
    let Some(d) = variant_design(&base, v, partitioning(a, rows))? else {
        return skip(&base.name);
    };
    let mut runs = Vec::new();
    let mut device_args = c.device.clone();
    device_args.buffer_pool = big_pool_bytes(v, rows, iterations);
    let mut small = false;
    loop {
        if ctl.stop.load(Ordering::Relaxed) {
            return Ok(runs);
        }
        let pool = device_args.buffer_pool;
        let ((phases, data_bytes), device, server) = match spec {
            RunSpec::Embedded(_) => {
                let s = EmbeddedRun::open_on(&d, &device_args, bandwidth, None)?;
                let r = one_run(&s, a, v, rows, iterations, ctl)?;
                let (_, device, server) = s.describe();
                (r, device, server)
            }
            RunSpec::Real(k) => {
                let s = ServerRun::open_with(
                    *k,
                    &c.server,
                    &device_args,
                    true,
                    c.out.quiet,
                    bandwidth,
                    Default::default(),
                )?;
                let r = one_run(&s, a, v, rows, iterations, ctl)?;
                let (_, device, server) = s.describe();
                (r, device, server)
            }
        };
        let pool_name = if small { "small_pool" } else { "big_pool" };
        status(
            c.out.quiet,
            &format!(
                "{}/{pool_name}: the tables hold {:.1} MiB at the end, the pool is {:.1} MiB{}",
                d.name,
                data_bytes as f64 / 1048576.0,
                pool as f64 / 1048576.0,
                if !small && data_bytes > pool {
                    " (the big pool did not hold everything)"
                } else {
                    ""
                }
            ),
        );
        let mut design = d.clone();
        design.name = format!("{}/{pool_name}", d.name);
        runs.push(ExperimentRun {
            design,
            device,
            phases,
            metadata: Vec::new(),
            server,
        });
        if small || a.no_small_pool {
            break;
        }
        small = true;
        // A managed MariaDB gets at least 6 MiB (servers/src/managed.rs); the report
        // says what it ran with.
        let least = match spec {
            RunSpec::Embedded(_) => 16 * d.page_size.bytes() as u64,
            RunSpec::Real(_) => 6 << 20,
        };
        device_args.buffer_pool = (data_bytes / 4).max(least);
    }
    Ok(runs)
}
