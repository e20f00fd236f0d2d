//! `mvcclab experiment system_versioning`: MariaDB's benchmark of system-versioned tables
//! (MDEV-15690, seed 003) on the embedded designs.
//!
//! Per variant — plain, versioned by timestamp, by transaction id, by timestamp with a
//! history partition (the design switches `system_versioning` and `history_storage`; trx id
//! with partitions is refused, MDEV-15951) — on an empty sbtest table (id PK, k indexed,
//! c CHAR(120), pad CHAR(60)), `--iterations` times: insert N rows (10 per transaction);
//! point selects, four kinds of range queries (simple, sum, order, distinct: 100 ids each,
//! 8 per transaction) and selects by secondary key (10 per transaction); N/2 updates of the
//! non-indexed `c` and N/2 of the indexed `k` (10 per transaction); the selects again;
//! delete all current rows in one transaction. Each variant runs with the big pool
//! (`--buffer-pool`) and then, unless `--no-small-pool`, with a small one: a quarter of
//! the pages the variant's tables held at the end of the big run. Every step is a measured
//! phase (`i{iteration}_{step}`) with throughput, 4 KiB blocks by cause and versions
//! examined per statement.

use super::experiment_common::{phase, ExperimentCommon};
use crate::bench::open_database;
use crate::progress::status;
use crate::result::ExperimentRun;
use crate::UsageError;
use anyhow::Result;
use clap::Args;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::{DesignConfig, HistoryStorage, SystemVersioning};
use mvcclab_workload::driver::RunControl;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::atomic::Ordering;

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
    /// Variants, comma-separated: plain, timestamp, trx_id, partition.
    #[arg(
        long,
        default_value = "plain,timestamp,trx_id,partition",
        value_delimiter = ','
    )]
    pub variants: Vec<String>,
    /// Skip the second run with a small buffer pool.
    #[arg(long)]
    pub no_small_pool: bool,
    /// Common flags (`--designs` defaults to both presets; `partition` runs on innodb only).
    #[command(flatten)]
    pub common: ExperimentCommon,
}

/// The design of `variant` on `base`, or `None` when the variant does not exist for it.
///
/// Errors: [`UsageError`] for an unknown variant.
fn variant_design(base: &DesignConfig, variant: &str) -> Result<Option<DesignConfig>> {
    let mut d = base.clone();
    match variant {
        "plain" => {}
        "timestamp" => d.system_versioning = SystemVersioning::Timestamp,
        "trx_id" => d.system_versioning = SystemVersioning::TrxId,
        "partition" => {
            d.system_versioning = SystemVersioning::Timestamp;
            d.history_storage = HistoryStorage::Partition;
        }
        other => {
            return Err(UsageError(format!(
                "unknown variant '{other}'; variants are plain, timestamp, trx_id, partition"
            ))
            .into())
        }
    }
    if d.validate().is_err() {
        return Ok(None);
    }
    d.name = format!("{}/{variant}", base.name);
    Ok(Some(d))
}

fn row(id: i32, k: i32, rng: &mut SmallRng) -> Vec<Value> {
    let c: String = (0..11)
        .map(|_| format!("{:011}", rng.random_range(0..100_000_000_000u64)))
        .collect::<Vec<_>>()
        .join("-");
    vec![
        Value::Integer(id),
        Value::Integer(k),
        Value::Text(c[..119].to_string()),
        Value::Text(format!("{:059}", rng.random_range(0..u64::MAX))),
    ]
}

/// Runs `n` statements `op(tx, i)`, `per_txn` per transaction; returns `n`.
fn batched(
    db: &Database,
    n: u64,
    per_txn: u64,
    ctl: &RunControl,
    mut op: impl FnMut(&mut mvcclab_engine::db::Transaction, u64) -> Result<()>,
) -> Result<u64> {
    let mut done = 0;
    while done < n && !ctl.stop.load(Ordering::Relaxed) {
        let mut tx = db.begin();
        let end = (done + per_txn).min(n);
        for i in done..end {
            op(&mut tx, i)?;
            ctl.statements.fetch_add(1, Ordering::Relaxed);
        }
        tx.commit()?;
        ctl.completed.fetch_add(1, Ordering::Relaxed);
        done = end;
    }
    Ok(done)
}

/// One run: a variant with one pool. Returns its phases and the pages its relations held.
fn one_run(
    a: &SystemVersioningArgs,
    db: &Database,
    rows: u32,
    iterations: u32,
    ctl: &RunControl,
) -> Result<(Vec<crate::result::PhaseReport>, u64)> {
    let c = &a.common;
    let t: TableId = db.create_table(TableDef::sbtest(1))?;
    let mut rng = SmallRng::seed_from_u64(c.rand_seed);
    let n = rows as i32;
    let sel = a.selects as u64;
    let mut phases = Vec::new();
    let pk = |id: i32| [Value::Integer(id)];
    for it in 1..=iterations {
        let name = |s: &str| format!("i{it}_{s}");
        status(
            c.out.quiet,
            &format!("{}: iteration {it}", db.design().name),
        );
        let mut r = SmallRng::seed_from_u64(c.rand_seed ^ it as u64);
        phases.push(phase(
            db,
            t,
            &name("insert"),
            c.report_interval,
            ctl,
            || {
                batched(db, rows as u64, 10, ctl, |tx, i| {
                    let id = i as i32 + 1;
                    tx.insert(t, row(id, r.random_range(1..=n), &mut rng))?;
                    Ok(())
                })
            },
        )?);
        for round in ["first", "second"] {
            if round == "second" {
                let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0xC ^ it as u64);
                phases.push(phase(
                    db,
                    t,
                    &name("update_non_index"),
                    c.report_interval,
                    ctl,
                    || {
                        batched(db, rows as u64 / 2, 10, ctl, |tx, _| {
                            let id = r.random_range(1..=n);
                            let v = row(id, 0, &mut r)[2].clone();
                            tx.update(t, &pk(id), &[Assign::Set(2, v)])?;
                            Ok(())
                        })
                    },
                )?);
                let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0xD ^ it as u64);
                phases.push(phase(
                    db,
                    t,
                    &name("update_index"),
                    c.report_interval,
                    ctl,
                    || {
                        batched(db, rows as u64 / 2, 10, ctl, |tx, _| {
                            let id = r.random_range(1..=n);
                            tx.update(t, &pk(id), &[Assign::Add(1, 1)])?;
                            Ok(())
                        })
                    },
                )?);
            }
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E1 ^ it as u64);
            phases.push(phase(
                db,
                t,
                &name(&format!("point_select_{round}")),
                c.report_interval,
                ctl,
                || {
                    batched(db, sel, 10, ctl, |tx, _| {
                        tx.get(t, &pk(r.random_range(1..=n)))?;
                        Ok(())
                    })
                },
            )?);
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E2 ^ it as u64);
            phases.push(phase(
                db,
                t,
                &name(&format!("range_select_{round}")),
                c.report_interval,
                ctl,
                || {
                    // sysbench's simple, sum, order and distinct ranges: 100 ids each, in id order
                    // (the order and distinct kinds sort what the same range read returns).
                    batched(db, sel, 8, ctl, |tx, i| {
                        let lo = r.random_range(1..=n.saturating_sub(99).max(1));
                        let hi = lo + 99;
                        let dir = if i % 4 == 2 {
                            ScanDirection::Backward
                        } else {
                            ScanDirection::Forward
                        };
                        tx.scan(
                            t,
                            Bound::Included(&pk(lo)[..]),
                            Bound::Included(&pk(hi)[..]),
                            dir,
                            100,
                        )?;
                        Ok(())
                    })
                },
            )?);
            let mut r = SmallRng::seed_from_u64(c.rand_seed ^ 0x5E3 ^ it as u64);
            phases.push(phase(
                db,
                t,
                &name(&format!("secondary_select_{round}")),
                c.report_interval,
                ctl,
                || {
                    batched(db, sel, 10, ctl, |tx, _| {
                        tx.get_by_index(t, 0, &[Value::Integer(r.random_range(1..=n))])?;
                        Ok(())
                    })
                },
            )?);
        }
        phases.push(phase(
            db,
            t,
            &name("delete_all"),
            c.report_interval,
            ctl,
            || {
                // One statement: DELETE FROM sbtest1 (every current row, in key order).
                let mut tx = db.begin();
                let ids = tx.scan(
                    t,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    ScanDirection::Forward,
                    usize::MAX,
                )?;
                let mut k = 0;
                for r in &ids {
                    if tx.delete(t, &r[..1])? {
                        k += 1;
                    }
                }
                tx.commit()?;
                ctl.statements.fetch_add(1, Ordering::Relaxed);
                ctl.completed.fetch_add(1, Ordering::Relaxed);
                Ok(k)
            },
        )?);
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let mut pages = 0;
    for name in ["sbtest1", "sbtest1#p_hist", "transaction_registry"] {
        if let Ok(id) = db.table_id(name) {
            let (h, i) = db.table_pages(id)?;
            pages += h + i;
        }
    }
    Ok((phases, pages))
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
    for v in &a.variants {
        // Refuse an unknown variant before anything runs.
        variant_design(&DesignConfig::innodb(), v)?;
    }
    Ok((rows, iterations))
}

/// One grid point of `system_versioning`: design `base` with variant `v` at device
/// bandwidth `bandwidth` (MiB/s, `None` = unthrottled), with the big pool and then, unless
/// `--no-small-pool`, the small one: one run each. Empty when the variant does not exist
/// for the design (a history partition on a heap design).
///
/// Errors: bad flags ([`UsageError`]); engine errors.
pub fn system_versioning_point(
    a: &SystemVersioningArgs,
    base: DesignConfig,
    v: &str,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<Vec<ExperimentRun>> {
    let c = &a.common;
    let (rows, iterations) = check_system_versioning(a)?;
    let mut runs = Vec::new();
    let Some(d) = variant_design(&base, v)? else {
        status(
            c.out.quiet,
            &format!("{}: variant {v} does not exist for it; skipped", base.name),
        );
        return Ok(runs);
    };
    let mut device_args = c.device.clone();
    let mut small = false;
    loop {
        if ctl.stop.load(Ordering::Relaxed) {
            return Ok(runs);
        }
        let (db, _, device) = open_database(&d, &device_args, bandwidth)?;
        let (phases, pages) = one_run(a, &db, rows, iterations, ctl)?;
        let mut design = d.clone();
        design.name = format!(
            "{}/{}",
            d.name,
            if small { "small_pool" } else { "big_pool" }
        );
        runs.push(ExperimentRun {
            design,
            device,
            phases,
            metadata: Vec::new(),
            server: None,
        });
        if small || a.no_small_pool {
            break;
        }
        small = true;
        device_args.buffer_pool =
            (pages * d.page_size.bytes() as u64 / 4).max(16 * d.page_size.bytes() as u64);
    }
    Ok(runs)
}
