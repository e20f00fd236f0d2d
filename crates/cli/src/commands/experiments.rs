//! `mvcclab experiment NAME`: the named experiments that studies of these engines run by
//! hand, measured phase by phase with every block attributed to its cause.
//!
//! - `update_hot_set`: a table of N rows (integer primary key, six VARCHAR(36) UUID
//!   columns each with a secondary index, an unindexed `status`); update `status` in K
//!   randomly chosen rows (one autocommit statement each), then the same K rows again.
//!   Reports device requests and 4 KiB blocks per update for each pass, by cause.
//! - `version_chain`: seed 000 §4 as it ran, variant `seed`: PostgreSQL's autovacuum off
//!   (step 1; the `autovacuum` switch, which leaves pruning on access as PostgreSQL does,
//!   pruneheap.c `heap_page_prune_opt`), an update-only phase (oltp_update_non_index,
//!   step 2), a select-only phase (oltp_point_select, step 3), a manual VACUUM (step 4),
//!   the select-only phase again (step 5); InnoDB "has no configuration that turns off the
//!   auto garbage collection", so designs with purge run steps 2–3 with purge on. Variant
//!   `autovacuum_on` (Fig. 7b): the update phase on a fresh database with autovacuum on
//!   (vacuum designs only). Variant `gc_off_what_if`: garbage collection off altogether
//!   (no pruning, no autovacuum, no purge) through the same four phases, then a full
//!   vacuum/purge — not the seed's experiment, a what-if. Reports blocks per SELECT in each
//!   select phase and per UPDATE in each update phase.
//!
//! Every phase ends by waiting for purge to empty the history list (when purge is on; it
//! works in the background in InnoDB too) and then a checkpoint, so the page writes a phase
//! causes are counted in that phase (under `checkpointer`, `doublewrite`, `purge`...), not
//! in the next. No timed checkpoint falls inside a phase: the presets take the managed
//! PostgreSQL's `checkpoint_timeout` of a day (`preset_device`), as the real servers
//! beside them have it. Loads are not measured. Output: a table, or JSON (`--format json`) whose
//! fields docs/results.md describes under "Experiments" (the schema's types are in
//! result.rs, the views in export/).

use super::experiment_common::specs_of;
pub use super::experiment_common::ExperimentCommon;
use crate::bench::{
    bandwidth_list, experiment_phase, run_shard, shard_dir, DeviceArgs, EmbeddedRun, Grid,
    PointResult, PointSpec, RunSpec, ServerRun, Subject,
};
use crate::design_arg::resolve_design;
use crate::error::driver_error;
use crate::export::{
    emit, experiment_csv, experiment_table, join_experiment_runs, to_json, write_experiment_dir,
    Format,
};
use crate::metadata::RunMetadata;
use crate::progress::{install_ctrl_c, status, with_progress};
use crate::result::{
    experiment_ratios, ExperimentReport, ExperimentRun, PointInfo, SCHEMA_VERSION,
};
use crate::UsageError;
use anyhow::Result;
use clap::{Args, Subcommand};
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::design::{DesignConfig, GarbageCollection};
use mvcclab_servers::managed::PG_CHECKPOINT_TIMEOUT_S;
use mvcclab_servers::ServerKind;
use mvcclab_workload::driver::{run as drive, RunControl, RunOptions};
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
    /// Version chains as seed 000 ran them: autovacuum off, updates, selects, VACUUM,
    /// selects; updates with autovacuum on; GC off altogether as a what-if.
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
    /// Seed 002: U users connecting over T seconds, each looping `SELECT * FROM sbtest1
    /// LIMIT 20`; CPU, context switches and page faults of real PostgreSQL (alone and
    /// behind PgBouncer), MariaDB (thread per connection, pool of threads) and `mvcclab
    /// serve` (`connection_storm.rs`).
    #[command(name = "connection_storm", alias = "connection-storm")]
    ConnectionStorm(Box<super::connection_storm::ConnectionStormArgs>),
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
    /// Statements per second in the update and select phases, as sysbench's --rate
    /// (Poisson arrivals; 0 = as fast as the target goes). The same rate on a preset and a
    /// real server makes the time-driven work per statement alike (purge woken once a
    /// second, the page cleaner's and autovacuum's rounds).
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Variants, comma-separated: seed (the seed's procedure: autovacuum off, pruning on;
    /// purge on for InnoDB), autovacuum_on (the update phase with autovacuum on; vacuum
    /// designs only), gc_off_what_if (garbage collection off altogether; presets only).
    #[arg(
        long,
        value_enum,
        default_value = "seed,autovacuum_on",
        value_delimiter = ','
    )]
    pub variants: Vec<ChainVariant>,
    /// Common flags.
    #[command(flatten)]
    pub common: ExperimentCommon,
}

/// A variant of `version_chain`: one fresh database each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ChainVariant {
    /// Seed 000 §4.1 as it ran: vacuum designs with the `autovacuum` switch off (pruning
    /// on access stays) through update, select, VACUUM, select; purge designs with purge
    /// on through update and select.
    Seed,
    /// Seed 000 §4.2's other PostgreSQL run: the update phase with autovacuum on (vacuum
    /// designs only).
    AutovacuumOn,
    /// Garbage collection off altogether (`garbage_collection = off`: no pruning, no
    /// autovacuum, no purge) through update, select, full vacuum/purge, select: the
    /// experiment before issue 24, kept as a what-if (no real engine can run it).
    GcOffWhatIf,
}

impl ChainVariant {
    /// The variant's name in grids and reports (`seed`, `autovacuum_on`, `gc_off_what_if`).
    pub fn name(self) -> &'static str {
        match self {
            ChainVariant::Seed => "seed",
            ChainVariant::AutovacuumOn => "autovacuum_on",
            ChainVariant::GcOffWhatIf => "gc_off_what_if",
        }
    }

    fn of_name(name: &str) -> Option<Self> {
        [Self::Seed, Self::AutovacuumOn, Self::GcOffWhatIf]
            .into_iter()
            .find(|v| v.name() == name)
    }

    /// The design `base` runs this variant as and the phases it runs (update, then the
    /// selects and GC between them), or `None` when the variant does not exist for `base`.
    pub fn plan(self, base: &DesignConfig) -> Option<(DesignConfig, Vec<ChainPhase>)> {
        use ChainPhase::*;
        let mut d = base.clone();
        let vacuum = base.garbage_collection == GarbageCollection::Vacuum;
        match self {
            ChainVariant::Seed if vacuum => {
                d.autovacuum = false;
                Some((d, vec![Update, Select(1), Gc, Select(2)]))
            }
            ChainVariant::Seed => Some((d, vec![Update, Select(1)])),
            ChainVariant::AutovacuumOn if vacuum => {
                d.autovacuum = true;
                Some((d, vec![Update]))
            }
            ChainVariant::AutovacuumOn => None,
            ChainVariant::GcOffWhatIf => {
                d.garbage_collection = GarbageCollection::Off;
                d.autovacuum = false;
                Some((d, vec![Update, Select(1), Gc, Select(2)]))
            }
        }
    }

    /// The name of phase `p` of this variant on a design whose garbage collection is `gc`
    /// (as run, before the variant's changes): `update_autovacuum_off`,
    /// `select_before_vacuum`, `vacuum`, `select_after_vacuum`; `update_purge_on`,
    /// `select_purge_on`; `update_autovacuum_on`; `update_gc_off`, `select_before_gc`,
    /// `full_gc`, `select_after_gc`.
    pub fn phase_name(self, gc: GarbageCollection, p: ChainPhase) -> &'static str {
        use ChainPhase::*;
        match (self, gc, p) {
            (ChainVariant::GcOffWhatIf, _, Update) => "update_gc_off",
            (ChainVariant::GcOffWhatIf, _, Select(1)) => "select_before_gc",
            (ChainVariant::GcOffWhatIf, _, Gc) => "full_gc",
            (ChainVariant::GcOffWhatIf, _, Select(_)) => "select_after_gc",
            (ChainVariant::AutovacuumOn, _, _) => "update_autovacuum_on",
            (ChainVariant::Seed, GarbageCollection::Vacuum, Update) => "update_autovacuum_off",
            (ChainVariant::Seed, GarbageCollection::Vacuum, Select(1)) => "select_before_vacuum",
            (ChainVariant::Seed, GarbageCollection::Vacuum, Gc) => "vacuum",
            (ChainVariant::Seed, GarbageCollection::Vacuum, Select(_)) => "select_after_vacuum",
            (ChainVariant::Seed, GarbageCollection::Purge, Update) => "update_purge_on",
            (ChainVariant::Seed, GarbageCollection::Purge, _) => "select_purge_on",
            (ChainVariant::Seed, _, Update) => "update",
            (ChainVariant::Seed, _, _) => "select",
        }
    }
}

/// One step of a `version_chain` variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainPhase {
    /// oltp_update_non_index, `--updates` events.
    Update,
    /// oltp_point_select, `--selects` events; the number tells the first select phase
    /// from the second (the same statements in both).
    Select(u8),
    /// A manual VACUUM of sbtest1 (vacuum designs) or a full purge.
    Gc,
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

/// The `update_hot_set` rows of seed `seed`: id 1..=`rows`, six random UUIDs, status 0.
fn hot_set_rows(rows: u32, seed: u64) -> impl Iterator<Item = Vec<Value>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (1..=rows as i32).map(move |id| {
        let mut row = vec![Value::Integer(id)];
        for _ in 0..6 {
            row.push(Value::Text(uuid_v4(&mut rng)));
        }
        row.push(Value::Integer(0));
        row
    })
}

/// One pass of `update_hot_set` on `s`: `status` set to `status` in each row of `ids`, one
/// autocommit statement each, in order.
fn update_pass<S: Subject>(
    s: &S,
    def: &TableDef,
    ids: &[i32],
    status: i32,
    ctl: &RunControl,
) -> Result<u64> {
    let mut n = 0;
    for &id in ids {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        if !s.update_by_key(def, id, 7, &Value::Integer(status))? {
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

/// One point of `update_hot_set`: `spec` at `bandwidth`, both passes.
fn hot_set_point(
    a: &UpdateHotSetArgs,
    spec: &RunSpec,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<ExperimentRun> {
    let c = &a.common;
    match spec {
        RunSpec::Embedded(d) => {
            let s = EmbeddedRun::open_on(d, &preset_device(c), bandwidth, None)?;
            hot_set_on(&s, a, d.clone(), ctl)
        }
        RunSpec::Real(k) => {
            let s = open_server(*k, c, bandwidth)?;
            let design = s.describe().0;
            hot_set_on(&s, a, design, ctl)
        }
    }
}

/// The memory and device flags a preset opens with here: `c.device` with the checkpoint
/// schedule of a managed PostgreSQL (`DeviceArgs::checkpoints_as_managed_postgresql`:
/// no timed checkpoint inside a phase), as the real servers beside it have.
fn preset_device(c: &ExperimentCommon) -> DeviceArgs {
    DeviceArgs {
        checkpoints_as_managed_postgresql: true,
        ..c.device.clone()
    }
}

/// A managed real server of `kind` for an experiment, on mvcclab's device (as the presets
/// always are) with the device flags of `c`, or the `--url` server given for it.
///
/// Errors: as [`ServerRun::open_with`].
fn open_server(
    kind: ServerKind,
    c: &ExperimentCommon,
    bandwidth: Option<f64>,
) -> Result<ServerRun> {
    ServerRun::open_with(
        kind,
        &c.server,
        &c.device,
        true,
        c.out.quiet,
        bandwidth,
        Default::default(),
    )
}

/// `update_hot_set` on an opened subject whose design (as reported) is `design`.
fn hot_set_on<S: Subject>(
    s: &S,
    a: &UpdateHotSetArgs,
    design: DesignConfig,
    ctl: &RunControl,
) -> Result<ExperimentRun> {
    let c = &a.common;
    status(
        c.out.quiet,
        &format!(
            "{}: loading {} rows with six UUID indexes ...",
            design.name, a.rows
        ),
    );
    let def = hot_set_def();
    s.load_table(&def, &mut hot_set_rows(a.rows, c.rand_seed))?;
    let ids = pick_ids(
        &mut SmallRng::seed_from_u64(c.rand_seed ^ 0x5EED),
        a.rows,
        a.updates,
    );
    let tables = [def.name.clone()];
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
                experiment_phase(s, &tables, name, c.report_interval, ctl, || {
                    update_pass(s, &def, &ids, pass, ctl)
                })
            },
        )?);
    }
    let (_, device, server) = s.describe();
    Ok(ExperimentRun {
        design,
        device,
        phases,
        metadata: Vec::new(),
        server,
    })
}

fn check_version_chain(a: &VersionChainArgs) -> Result<()> {
    if a.table_size == 0 || a.updates == 0 || a.selects == 0 {
        return Err(
            UsageError("--table-size, --updates and --selects must be at least 1".into()).into(),
        );
    }
    if !(a.rate >= 0.0 && a.rate.is_finite()) {
        return Err(UsageError(format!("--rate ({}) must be 0 or more", a.rate)).into());
    }
    Ok(())
}

/// One point of `version_chain`: `spec` at `bandwidth` through `variant`'s phases on a
/// fresh database (a fresh server), or no run when the variant does not exist for it (a
/// real server cannot run `gc_off_what_if`: PostgreSQL cannot stop pruning on access, nor
/// InnoDB its purge). The run's `design` is the one the variant ran (the seed's has
/// `autovacuum` off).
fn version_chain_point(
    a: &VersionChainArgs,
    spec: &RunSpec,
    variant: ChainVariant,
    bandwidth: Option<f64>,
    ctl: &RunControl,
) -> Result<Vec<ExperimentRun>> {
    let c = &a.common;
    let base = match spec {
        RunSpec::Embedded(d) => d.clone(),
        RunSpec::Real(k) => {
            if variant == ChainVariant::GcOffWhatIf {
                status(
                    c.out.quiet,
                    &format!(
                        "{}: gc_off_what_if is a what-if of the presets (no real engine can \
                         stop all its garbage collection); skipped",
                        k.design_name()
                    ),
                );
                return Ok(Vec::new());
            }
            // MyRocks has no preset: the innodb preset stands in (its compaction, like
            // purge, always runs; the phases are named as innodb's).
            let mut d = resolve_design(k.preset().unwrap_or("innodb"), &[])?;
            d.name = k.design_name();
            d
        }
    };
    let Some((d, steps)) = variant.plan(&base) else {
        return Ok(Vec::new());
    };
    let run = match spec {
        RunSpec::Embedded(_) => {
            let s = EmbeddedRun::open_on(&d, &preset_device(c), bandwidth, None)?;
            chain_on(&s, a, &base, d, variant, &steps, ctl)?
        }
        RunSpec::Real(k) => {
            let s = open_server(*k, c, bandwidth)?;
            if *k == ServerKind::PostgreSql {
                s.set_autovacuum(d.autovacuum)?;
            }
            chain_on(&s, a, &base, d, variant, &steps, ctl)?
        }
    };
    Ok(vec![run])
}

/// `version_chain`'s `variant` on an opened subject: sysbench's sbtest1 loaded, then
/// `steps`. `base` is the design as given (its garbage collection names the phases), `d`
/// the one the variant runs.
fn chain_on<S: Subject>(
    s: &S,
    a: &VersionChainArgs,
    base: &DesignConfig,
    d: DesignConfig,
    variant: ChainVariant,
    steps: &[ChainPhase],
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
        rate_tps: a.rate,
        // sysbench's defaults: the phase then refuses any error it counted (below).
        ignore_errors: Default::default(),
    };
    status(
        c.out.quiet,
        &format!(
            "{} ({}): loading {} rows ...",
            base.name,
            variant.name(),
            a.table_size
        ),
    );
    s.prepare(WorkloadKind::OltpUpdateNonIndex, &opts, c.rand_seed)?;
    s.end_phase()?;
    let driven = |kind: WorkloadKind, events: u64, seed: u64, label: &str| {
        let run_opts = run(events, seed);
        let r = with_progress(label, 0.0, events, ctl, c.out.quiet, None, || {
            drive(s.target(), kind, &opts, &run_opts, ctl)
        })
        .map_err(|e| driver_error(&run_opts, e))?;
        if r.errors > 0 {
            anyhow::bail!("{label}: {} errors: {:?}", r.errors, r.error_samples);
        }
        Ok(r.transactions)
    };
    let tables = ["sbtest1".to_string()];
    let mut phases = Vec::new();
    for &step in steps {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
        let name = variant.phase_name(base.garbage_collection, step);
        let label = format!("{} {name}", base.name);
        phases.push(experiment_phase(
            s,
            &tables,
            name,
            c.report_interval,
            ctl,
            || match step {
                ChainPhase::Update => driven(
                    WorkloadKind::OltpUpdateNonIndex,
                    a.updates,
                    c.rand_seed,
                    &label,
                ),
                ChainPhase::Gc => {
                    status(c.out.quiet, &format!("{label} ..."));
                    s.collect_garbage("sbtest1")?;
                    Ok(0)
                }
                // The same statements in both select phases.
                ChainPhase::Select(_) => driven(
                    WorkloadKind::OltpPointSelect,
                    a.selects,
                    c.rand_seed ^ 0x5E1,
                    &label,
                ),
            },
        )?);
    }
    let (_, device, server) = s.describe();
    Ok(ExperimentRun {
        design: DesignConfig {
            name: base.name.clone(),
            ..d
        },
        device,
        phases,
        metadata: Vec::new(),
        server,
    })
}

/// The grid of an experiment: bandwidth outermost, then design, then variant (bench/grid.rs),
/// with the designs and real servers resolved beside it. Its parameters are the
/// experiment's, the designs, `--set`, `--report-interval` and the device flags except
/// `--data-dir`.
fn experiment_grid(
    name: &str,
    params: &serde_json::Value,
    variants: &[&str],
    c: &ExperimentCommon,
    specs: Vec<RunSpec>,
) -> Result<(Grid, Vec<RunSpec>)> {
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
        for spec in &specs {
            for v in variants {
                points.push(PointSpec {
                    design: spec.name(),
                    design_config: match spec {
                        RunSpec::Embedded(design) => serde_json::to_value(design)?,
                        RunSpec::Real(k) => serde_json::Value::String(k.design_name()),
                    },
                    variant: v.to_string(),
                    bandwidth_mib_s: b,
                });
            }
        }
    }
    Ok((
        Grid::new(&format!("experiment {name}"), parameters, points),
        specs,
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
        Experiment::ConnectionStorm(x) => return super::connection_storm::run(*x),
        which => ExperimentArgs { which },
    };
    let ctl = RunControl::default();
    let sysver_variants: Vec<&str>;
    let chain_variants: Vec<&str>;
    let (name, params, common, variants): (_, _, _, &[&str]) = match &a.which {
        Experiment::UpdateHotSet(x) => {
            check_hot_set(x)?;
            (
                "update_hot_set",
                serde_json::json!({"rows": x.rows, "updates": x.updates, "rand_seed": x.common.rand_seed,
                    "preset_checkpoint_timeout_s": PG_CHECKPOINT_TIMEOUT_S}),
                &x.common,
                &[""],
            )
        }
        Experiment::VersionChain(x) => {
            check_version_chain(x)?;
            chain_variants = x.variants.iter().map(|v| v.name()).collect();
            (
                "version_chain",
                serde_json::json!({"table_size": x.table_size, "updates": x.updates,
                    "selects": x.selects, "rand_type": x.rand_type.to_string(),
                    "rate_tps": x.rate, "variants": chain_variants,
                    "rand_seed": x.common.rand_seed,
                    "preset_checkpoint_timeout_s": PG_CHECKPOINT_TIMEOUT_S}),
                &x.common,
                &chain_variants[..],
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
        | Experiment::TpchQ18(_)
        | Experiment::ConnectionStorm(_) => {
            unreachable!("handled above")
        }
    };
    let specs = specs_of(common)?;
    let (grid, specs) = experiment_grid(name, &params, variants, common, specs)?;
    let dir = common
        .shard
        .map(|_| shard_dir(&common.out.report))
        .transpose()?;
    install_ctrl_c(&ctl.stop)?;
    // One point's runs: one, or for system_versioning one per buffer pool (none when the
    // variant does not exist for the design).
    let run_point = |p: &PointInfo| -> Result<Vec<ExperimentRun>> {
        let per_design = variants.len();
        let spec = &specs[(p.index / per_design) % specs.len()];
        match &a.which {
            Experiment::UpdateHotSet(x) => {
                Ok(vec![hot_set_point(x, spec, p.bandwidth_mib_s, &ctl)?])
            }
            Experiment::VersionChain(x) => {
                let variant = ChainVariant::of_name(&p.variant).ok_or_else(|| {
                    UsageError(format!("unknown version_chain variant '{}'", p.variant))
                })?;
                version_chain_point(x, spec, variant, p.bandwidth_mib_s, &ctl)
            }
            Experiment::SystemVersioning(x) => super::experiment_sysver::system_versioning_point(
                x,
                spec,
                &p.variant,
                p.bandwidth_mib_s,
                &ctl,
            ),
            Experiment::FillfactorCompression(_)
            | Experiment::BandwidthSweep(_)
            | Experiment::TpchQ18(_)
            | Experiment::ConnectionStorm(_) => {
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
        ratios: experiment_ratios(&runs),
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
