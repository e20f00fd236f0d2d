//! `mvcclab experiment NAME`: the named experiments that studies of these engines run by
//! hand, measured phase by phase with every block attributed to its cause.
//!
//! - `update_hot_set`: a table of N rows (integer primary key, six VARCHAR(36) UUID
//!   columns each with a secondary index, an unindexed `status`); update `status` in K
//!   randomly chosen rows (one autocommit statement each), then the same K rows again.
//!   Reports device requests and 4 KiB blocks per update for each pass, by cause.
//! - `version_chain`: with garbage collection off, an update-only phase
//!   (oltp_update_non_index), a select-only phase (oltp_point_select), a full vacuum/purge,
//!   the select-only phase again; then the same update phase on a fresh database with
//!   garbage collection on. Reports blocks per SELECT in each select phase and per UPDATE
//!   with GC off and on.
//!
//! Every phase ends by waiting for purge to empty the history list (when purge is on; it
//! works in the background in InnoDB too) and then a checkpoint, so the page writes a phase
//! causes are counted in that phase (under `checkpointer`, `doublewrite`, `purge`...), not
//! in the next. Loads are not measured. Output: a table, or JSON (`--format json`) whose
//! fields docs/results.md describes under "Experiments" (the schema's types are in
//! result.rs, the views in export/).

pub use super::experiment_common::ExperimentCommon;
use super::experiment_common::{designs_of, phase};
use crate::bench::{
    bandwidth_list, open_database, run_shard, shard_dir, Grid, PointResult, PointSpec,
};
use crate::error::driver_error;
use crate::export::{
    emit, experiment_csv, experiment_table, join_experiment_runs, to_json, write_experiment_dir,
    Format,
};
use crate::metadata::RunMetadata;
use crate::progress::{install_ctrl_c, status, with_progress};
use crate::result::{ExperimentReport, ExperimentRun, PointInfo, SCHEMA_VERSION};
use crate::UsageError;
use anyhow::Result;
use clap::{Args, Subcommand};
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::{DesignConfig, GarbageCollection};
use mvcclab_engine::stats::{enter, Cause};
use mvcclab_workload::driver::{run as drive, RunControl, RunOptions, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// `mvcclab experiment`.
#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// Which experiment.
    #[command(subcommand)]
    pub which: Experiment,
}

/// The named experiments.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Update `status` in K random rows of an N-row table with six UUID indexes, twice.
    #[command(name = "update_hot_set", alias = "update-hot-set")]
    UpdateHotSet(UpdateHotSetArgs),
    /// Version chains: updates with GC off, selects, full GC, selects; updates with GC on.
    #[command(name = "version_chain", alias = "version-chain")]
    VersionChain(VersionChainArgs),
    /// Seed 001: TPC-C at fillfactor 100 and 75 on a normal and a compressing device.
    #[command(name = "fillfactor_compression", alias = "fillfactor-compression")]
    FillfactorCompression(Box<super::fillfactor_compression::FillfactorCompressionArgs>),
    /// MariaDB's benchmark of system-versioned tables (MDEV-15690, seed 003): plain / by
    /// timestamp / by trx id / partitioned, big and small pool (`experiment_sysver.rs`).
    #[command(name = "system_versioning", alias = "system-versioning")]
    SystemVersioning(Box<super::experiment_sysver::SystemVersioningArgs>),
    /// Seed 000 Fig. 1: sysbench oltp_read_write TPS and pages/s against device bandwidth,
    /// presets and real engines on the same throttled device, each loaded once
    /// (`bandwidth_sweep.rs`).
    #[command(name = "bandwidth_sweep", alias = "bandwidth-sweep")]
    BandwidthSweep(Box<super::bandwidth_sweep::BandwidthSweepArgs>),
    /// Seed 000 §2.3: TPC-H Q18's duration and 4 KiB pages read per second, per design,
    /// bandwidth and cache state, blocks by cause (`tpch_q18.rs`).
    #[command(name = "tpch_q18", alias = "tpch-q18")]
    TpchQ18(Box<super::tpch_q18::TpchQ18Args>),
}

/// Flags of `update_hot_set`.
#[derive(Args, Debug)]
pub struct UpdateHotSetArgs {
    /// Rows in the table (N).
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u32,
    /// Rows updated in each pass (K).
    #[arg(long, default_value_t = 10_000)]
    pub updates: u32,
    /// Common flags.
    #[command(flatten)]
    pub common: ExperimentCommon,
}

/// Flags of `version_chain`.
#[derive(Args, Debug)]
pub struct VersionChainArgs {
    /// Rows in sbtest1.
    #[arg(long, default_value_t = 100_000)]
    pub table_size: u32,
    /// UPDATEs in each update phase (oltp_update_non_index events).
    #[arg(long, default_value_t = 200_000)]
    pub updates: u64,
    /// SELECTs in each select phase (oltp_point_select events).
    #[arg(long, default_value_t = 20_000)]
    pub selects: u64,
    /// Random distribution of the rows updated and read (sysbench --rand-type).
    #[arg(long, default_value = "special", value_parser = |s: &str| s.parse::<mvcclab_workload::rand::RandType>())]
    pub rand_type: mvcclab_workload::rand::RandType,
    /// Common flags.
    #[command(flatten)]
    pub common: ExperimentCommon,
}

/// The `update_hot_set` table: id INTEGER PRIMARY KEY, u1..u6 VARCHAR(36) each with an
/// index `hot_set_uN`, status INTEGER unindexed.
pub fn hot_set_def() -> TableDef {
    let mut columns = vec![Column::not_null("id", ColumnType::Integer)];
    for i in 1..=6 {
        columns.push(Column::not_null(format!("u{i}"), ColumnType::Varchar(36)));
    }
    columns.push(Column::not_null("status", ColumnType::Integer));
    TableDef {
        name: "hot_set".into(),
        columns,
        primary_key: vec![0],
        indexes: (1..=6)
            .map(|i| IndexDef {
                name: format!("hot_set_u{i}"),
                columns: vec![i],
                unique: false,
            })
            .collect(),
        foreign_keys: Vec::new(),
    }
}

/// A random (version 4) UUID in its 36-character text form.
pub fn uuid_v4(rng: &mut SmallRng) -> String {
    let mut b: [u8; 16] = rng.random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// K distinct ids out of 1..=N in random order (a partial Fisher-Yates shuffle).
pub fn pick_ids(rng: &mut SmallRng, n: u32, k: u32) -> Vec<i32> {
    let mut chosen: BTreeMap<u32, u32> = BTreeMap::new();
    let mut out = Vec::with_capacity(k as usize);
    for i in 0..k.min(n) {
        let j = rng.random_range(i..n);
        let vj = *chosen.get(&j).unwrap_or(&j);
        let vi = *chosen.get(&i).unwrap_or(&i);
        chosen.insert(j, vi);
        out.push(vj as i32 + 1);
    }
    out
}

fn load_hot_set(db: &Database, rows: u32, seed: u64) -> Result<TableId> {
    let _c = enter(Cause::Load);
    let t = db.create_table(hot_set_def())?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut tx = db.begin();
    for id in 1..=rows as i32 {
        let mut row = vec![Value::Integer(id)];
        for _ in 0..6 {
            row.push(Value::Text(uuid_v4(&mut rng)));
        }
        row.push(Value::Integer(0));
        tx.insert(t, row)?;
        if id % 1000 == 0 {
            tx.commit()?;
            tx = db.begin();
        }
    }
    tx.commit()?;
    Ok(t)
}

fn update_pass(
    db: &Database,
    t: TableId,
    ids: &[i32],
    status: i32,
    ctl: &RunControl,
) -> Result<u64> {
    let mut n = 0;
    for &id in ids {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        let mut tx = db.begin();
        let found = tx.update(
            t,
            &[Value::Integer(id)],
            &[Assign::Set(7, Value::Integer(status))],
        )?;
        tx.commit()?;
        if !found {
            anyhow::bail!("update_hot_set: row {id} is missing");
        }
        n += 1;
        ctl.statements.fetch_add(1, Ordering::Relaxed);
        ctl.completed.fetch_add(1, Ordering::Relaxed);
    }
    Ok(n)
}

fn check_hot_set(a: &UpdateHotSetArgs) -> Result<()> {
    if a.rows == 0 || a.updates == 0 || a.updates > a.rows {
        return Err(UsageError(format!(
            "--updates ({}) must be between 1 and --rows ({})",
            a.updates, a.rows
        ))
        .into());
    }
    Ok(())
}

/// One point of `update_hot_set`: `design` at `bandwidth`, both passes.
fn hot_set_point(
    a: &UpdateHotSetArgs,
    design: DesignConfig,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<ExperimentRun> {
    let c = &a.common;
    let (db, _, device) = open_database(&design, &c.device, bandwidth)?;
    status(
        c.out.quiet,
        &format!(
            "{}: loading {} rows with six UUID indexes ...",
            design.name, a.rows
        ),
    );
    let t = load_hot_set(&db, a.rows, c.rand_seed)?;
    db.storage().checkpoint()?;
    let ids = pick_ids(
        &mut SmallRng::seed_from_u64(c.rand_seed ^ 0x5EED),
        a.rows,
        a.updates,
    );
    let mut phases = Vec::new();
    for (pass, name) in [(1, "first_update"), (2, "second_update")] {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        let label = format!("{} {name}", design.name);
        phases.push(with_progress(
            &label,
            0.0,
            a.updates as u64,
            ctl,
            c.out.quiet,
            None,
            || {
                phase(&db, t, name, c.report_interval, ctl, || {
                    update_pass(&db, t, &ids, pass, ctl)
                })
            },
        )?);
    }
    Ok(ExperimentRun {
        design,
        device,
        phases,
        metadata: Vec::new(),
    })
}

fn check_version_chain(a: &VersionChainArgs) -> Result<()> {
    if a.table_size == 0 || a.updates == 0 || a.selects == 0 {
        return Err(
            UsageError("--table-size, --updates and --selects must be at least 1".into()).into(),
        );
    }
    Ok(())
}

/// One point of `version_chain`: `design` at `bandwidth` with garbage collection off (the
/// update, select, full GC and select phases) or on (`gc_on`: the update phase), each on a
/// fresh database. The run's `design` is the GC-on design either way.
fn version_chain_point(
    a: &VersionChainArgs,
    design: DesignConfig,
    gc_on: bool,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<ExperimentRun> {
    let c = &a.common;
    let mut opts = SysbenchOptions {
        table_size: a.table_size,
        ..Default::default()
    };
    opts.rand.rand_type = a.rand_type;
    let run = |events: u64, seed: u64| RunOptions {
        threads: 1,
        time_s: 0.0,
        events,
        rand_seed: seed,
        rate_tps: 0.0,
    };
    let mut d = design.clone();
    if !gc_on {
        d.garbage_collection = GarbageCollection::Off;
    }
    let mut phases = Vec::new();
    let (db, _, device) = open_database(&d, &c.device, bandwidth)?;
    let target = Embedded::new(db.clone());
    status(
        c.out.quiet,
        &format!(
            "{} (garbage collection {}): loading {} rows ...",
            design.name,
            if gc_on { "on" } else { "off" },
            a.table_size
        ),
    );
    target
        .prepare(WorkloadKind::OltpUpdateNonIndex, &opts, c.rand_seed)
        .map_err(|e| anyhow::anyhow!("prepare: {e}"))?;
    db.storage().checkpoint()?;
    let t = db.table_id("sbtest1")?;
    let driven = |kind: WorkloadKind, events: u64, seed: u64, label: &str| {
        let run_opts = run(events, seed);
        let r = with_progress(label, 0.0, events, ctl, c.out.quiet, None, || {
            drive(&target, kind, &opts, &run_opts, ctl)
        })
        .map_err(|e| driver_error(&run_opts, e))?;
        if r.errors > 0 {
            anyhow::bail!("{label}: {} errors: {:?}", r.errors, r.error_samples);
        }
        Ok(r.transactions)
    };
    let name = if gc_on {
        "update_gc_on"
    } else {
        "update_gc_off"
    };
    let label = format!("{} {name}", design.name);
    phases.push(phase(&db, t, name, c.report_interval, ctl, || {
        driven(
            WorkloadKind::OltpUpdateNonIndex,
            a.updates,
            c.rand_seed,
            &label,
        )
    })?);
    if !gc_on {
        for name in ["select_before_gc", "full_gc", "select_after_gc"] {
            if ctl.stop.load(Ordering::Relaxed) {
                break;
            }
            let label = format!("{} {name}", design.name);
            phases.push(phase(&db, t, name, c.report_interval, ctl, || {
                if name == "full_gc" {
                    status(c.out.quiet, &format!("{label} ..."));
                    db.gc(t)?;
                    Ok(0)
                } else {
                    // The same statements in both select phases.
                    driven(
                        WorkloadKind::OltpPointSelect,
                        a.selects,
                        c.rand_seed ^ 0x5E1,
                        &label,
                    )
                }
            })?);
        }
    }
    Ok(ExperimentRun {
        design,
        device,
        phases,
        metadata: Vec::new(),
    })
}

/// The grid of an experiment: bandwidth outermost, then design, then variant (bench/grid.rs),
/// with the designs resolved beside it. Its parameters are the experiment's, the designs,
/// `--set`, `--report-interval` and the device flags except `--data-dir`.
fn experiment_grid(
    name: &str,
    params: &serde_json::Value,
    variants: &[&str],
    c: &ExperimentCommon,
) -> Result<(Grid, Vec<DesignConfig>)> {
    let designs = designs_of(c)?;
    let d = &c.device;
    let parameters = serde_json::json!({
        "experiment": params,
        "designs": c.designs,
        "set": c.set,
        "report_interval_s": c.report_interval,
        "device": d.grid_parameters(),
    });
    let mut points = Vec::new();
    for b in bandwidth_list(&d.bandwidth) {
        for design in &designs {
            for v in variants {
                points.push(PointSpec {
                    design: design.name.clone(),
                    design_config: serde_json::to_value(design)?,
                    variant: v.to_string(),
                    bandwidth_mib_s: b,
                });
            }
        }
    }
    Ok((
        Grid::new(&format!("experiment {name}"), parameters, points),
        designs,
    ))
}

/// `mvcclab experiment NAME`: every point of its grid, or with `--shard` the shard's
/// points into their own files.
///
/// Errors: bad flags ([`UsageError`]); an engine error while loading or running.
pub fn run(a: ExperimentArgs) -> Result<()> {
    let a = match a.which {
        Experiment::FillfactorCompression(x) => return super::fillfactor_compression::run(*x),
        Experiment::BandwidthSweep(x) => return super::bandwidth_sweep::run(*x),
        Experiment::TpchQ18(x) => return super::tpch_q18::run(*x),
        which => ExperimentArgs { which },
    };
    let ctl = RunControl::default();
    let sysver_variants: Vec<&str>;
    let (name, params, common, variants): (_, _, _, &[&str]) = match &a.which {
        Experiment::UpdateHotSet(x) => {
            check_hot_set(x)?;
            (
                "update_hot_set",
                serde_json::json!({"rows": x.rows, "updates": x.updates, "rand_seed": x.common.rand_seed}),
                &x.common,
                &[""],
            )
        }
        Experiment::VersionChain(x) => {
            check_version_chain(x)?;
            (
                "version_chain",
                serde_json::json!({"table_size": x.table_size, "updates": x.updates,
                    "selects": x.selects, "rand_type": x.rand_type.to_string(),
                    "rand_seed": x.common.rand_seed}),
                &x.common,
                &["gc_off", "gc_on"],
            )
        }
        Experiment::SystemVersioning(x) => {
            super::experiment_sysver::check_system_versioning(x)?;
            sysver_variants = x.variants.iter().map(String::as_str).collect();
            (
                "system_versioning",
                serde_json::json!({"rows": x.rows, "iterations": x.iterations, "size": x.size,
                    "selects": x.selects, "variants": x.variants,
                    "small_pool": !x.no_small_pool, "rand_seed": x.common.rand_seed}),
                &x.common,
                &sysver_variants[..],
            )
        }
        Experiment::FillfactorCompression(_)
        | Experiment::BandwidthSweep(_)
        | Experiment::TpchQ18(_) => {
            unreachable!("handled above")
        }
    };
    let (grid, designs) = experiment_grid(name, &params, variants, common)?;
    let dir = common
        .shard
        .map(|_| shard_dir(&common.out.report))
        .transpose()?;
    install_ctrl_c(&ctl.stop)?;
    // One point's runs: one, or for system_versioning one per buffer pool (none when the
    // variant does not exist for the design).
    let run_point = |p: &PointInfo| -> Result<Vec<ExperimentRun>> {
        let per_design = variants.len();
        let design = designs[(p.index / per_design) % designs.len()].clone();
        match &a.which {
            Experiment::UpdateHotSet(x) => {
                Ok(vec![hot_set_point(x, design, p.bandwidth_mib_s, &ctl)?])
            }
            Experiment::VersionChain(x) => Ok(vec![version_chain_point(
                x,
                design,
                p.variant == "gc_on",
                p.bandwidth_mib_s,
                &ctl,
            )?]),
            Experiment::SystemVersioning(x) => super::experiment_sysver::system_versioning_point(
                x,
                design,
                &p.variant,
                p.bandwidth_mib_s,
                &ctl,
            ),
            Experiment::FillfactorCompression(_)
            | Experiment::BandwidthSweep(_)
            | Experiment::TpchQ18(_) => {
                unreachable!("handled above")
            }
        }
    };
    let report = |runs: Vec<ExperimentRun>| ExperimentReport {
        schema_version: SCHEMA_VERSION,
        mvcclab_version: env!("CARGO_PKG_VERSION").into(),
        experiment: name.into(),
        metadata: Some(RunMetadata::of_this_process()),
        parameters: params.clone(),
        interrupted: ctl.stop.load(Ordering::Relaxed),
        runs,
    };
    if let (Some(shard), Some(dir)) = (common.shard, dir) {
        return run_shard(&grid, shard, dir, common.out.quiet, |p| {
            let runs = run_point(p)?;
            if ctl.stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            Ok(Some(PointResult::Experiment(report(runs))))
        });
    }
    let mut runs = Vec::new();
    for p in &grid.points {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        runs.extend(run_point(p)?);
    }
    let report = report(join_experiment_runs(runs));
    if let Some(dir) = &common.out.report {
        let files = write_experiment_dir(&report, dir)?;
        status(
            common.out.quiet,
            &format!("report written to {}: {}", dir.display(), files.join(", ")),
        );
    }
    let text = match common.out.format {
        Format::Json => to_json(&report)?,
        Format::Table => experiment_table(&report, false),
        Format::Md => experiment_table(&report, true),
        Format::Csv => experiment_csv(&report)?,
    };
    emit(&text, &common.out.output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_the_v4_text_form() {
        let mut rng = SmallRng::seed_from_u64(7);
        let a = uuid_v4(&mut rng);
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!("89ab".contains(&parts[3][..1]), "{a}");
        assert_ne!(a, uuid_v4(&mut rng));
        assert!(hot_set_def().validate().is_ok());
    }

    #[test]
    fn picked_ids_are_distinct_in_range_and_seeded() {
        let mut rng = SmallRng::seed_from_u64(3);
        let ids = pick_ids(&mut rng, 1000, 400);
        let set: std::collections::BTreeSet<i32> = ids.iter().copied().collect();
        assert_eq!(set.len(), 400);
        assert!(set.iter().all(|&i| (1..=1000).contains(&i)));
        assert_eq!(ids, pick_ids(&mut SmallRng::seed_from_u64(3), 1000, 400));
        let all = pick_ids(&mut rng, 50, 50);
        assert_eq!(
            all.iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            50
        );
    }
}
