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
//! fields docs/results.md describes under "Experiments".

use crate::design_arg::resolve_design;
use crate::output::{emit, markdown_table, side_by_side, Format, OutputArgs};
use crate::progress::{install_ctrl_c, status, with_progress};
use crate::result::{DeviceInfo, PerOpIo, SCHEMA_VERSION};
use crate::run::{open_database, DeviceArgs, Mark, PhaseDelta};
use crate::UsageError;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, EngineCounters, TableId};
use mvcclab_engine::design::{DesignConfig, GarbageCollection};
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::{enter, Cause, CauseCounts};
use mvcclab_workload::driver::{run as drive, RunControl, RunOptions, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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
}

/// Flags every experiment takes.
#[derive(Args, Debug, Clone)]
pub struct ExperimentCommon {
    /// Designs, comma-separated: presets or design files (FILE.toml).
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Change a switch of every design: SWITCH=VALUE.
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Seed of the random numbers.
    #[arg(long, default_value_t = 1)]
    pub rand_seed: u64,
    /// Memory and device.
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Report format (csv: one row per design and phase) and destination.
    #[command(flatten)]
    pub out: OutputArgs,
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

/// One measured phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Phase name (`first_update`, `select_before_gc`, `full_gc`, ...).
    pub name: String,
    /// Statements the phase ran (0 for `full_gc`).
    pub ops: u64,
    /// Wall time in seconds, the closing wait and checkpoint included.
    pub elapsed_s: f64,
    /// Every metric summed over all causes.
    pub total: CauseCounts,
    /// Every metric per cause.
    pub by_cause: BTreeMap<Cause, CauseCounts>,
    /// `total` per statement (all causes: foreground and the background work it caused).
    pub per_op: PerOpIo,
    /// Per statement, by cause.
    pub per_op_by_cause: BTreeMap<Cause, PerOpIo>,
    /// Row versions examined by reads, per statement.
    pub versions_traversed_per_op: f64,
    /// Table counters of the phase (pg_stat_user_tables names).
    pub tables: TableStats,
    /// Undo and purge counters of the phase.
    pub undo: EngineCounters,
    /// Pages at the end: (table or clustered index, secondary indexes).
    pub pages: (u64, u64),
}

/// One design's phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRun {
    /// Every switch of the design (for `version_chain`, the GC-on design; the GC-off
    /// phases ran with `garbage_collection = off`).
    pub design: DesignConfig,
    /// Memory and device settings.
    pub device: DeviceInfo,
    /// The phases in the order they ran.
    pub phases: Vec<PhaseReport>,
}

/// An experiment's report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// Result schema version (shared with `run`/`compare`).
    pub schema_version: u32,
    /// Version of mvcclab that wrote it.
    pub mvcclab_version: String,
    /// `update_hot_set` or `version_chain`.
    pub experiment: String,
    /// The experiment's parameters (rows, updates, ...; flag names with `_`).
    pub parameters: serde_json::Value,
    /// True when Ctrl-C cut the experiment short.
    pub interrupted: bool,
    /// One entry per design.
    pub runs: Vec<ExperimentRun>,
}

/// Waits until purge has emptied the history list (designs with purge on), at most 120 s.
fn wait_for_purge(db: &Database) {
    if db.design().garbage_collection != GarbageCollection::Purge {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while db.engine_counters().history_list_length > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `f` as a measured phase on table `t`: counts from before `f` to after the purge
/// wait and checkpoint that close it. `f` returns the statements it ran.
fn phase(
    db: &Database,
    t: TableId,
    name: &str,
    f: impl FnOnce() -> Result<u64>,
) -> Result<PhaseReport> {
    let mark = Mark::take(db, &[t])?;
    let start = Instant::now();
    let ops = f()?;
    wait_for_purge(db);
    db.storage().checkpoint()?;
    let elapsed_s = start.elapsed().as_secs_f64();
    let PhaseDelta {
        storage: d,
        tables,
        engine: undo,
        pages,
        ..
    } = mark.since(db, &[t])?;
    let total = d.counters.total();
    Ok(PhaseReport {
        name: name.to_string(),
        ops,
        elapsed_s,
        per_op: PerOpIo::of(&total, ops),
        per_op_by_cause: d
            .counters
            .by_cause
            .iter()
            .map(|(c, cc)| (*c, PerOpIo::of(cc, ops)))
            .collect(),
        versions_traversed_per_op: tables.versions_traversed as f64 / ops.max(1) as f64,
        total,
        by_cause: d.counters.by_cause,
        tables,
        undo,
        pages,
    })
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
        ctl.completed.fetch_add(1, Ordering::Relaxed);
    }
    Ok(n)
}

fn designs_of(c: &ExperimentCommon) -> Result<Vec<DesignConfig>> {
    c.designs
        .iter()
        .map(|d| resolve_design(d, &c.set))
        .collect()
}

fn bandwidth_of(c: &ExperimentCommon) -> Result<Option<f64>> {
    match c.device.bandwidth.as_slice() {
        [] => Ok(None),
        [b] => Ok(Some(*b)),
        _ => Err(UsageError("experiments take one --bandwidth value".into()).into()),
    }
}

fn update_hot_set(a: &UpdateHotSetArgs, ctl: &RunControl) -> Result<Vec<ExperimentRun>> {
    let c = &a.common;
    if a.rows == 0 || a.updates == 0 || a.updates > a.rows {
        return Err(UsageError(format!(
            "--updates ({}) must be between 1 and --rows ({})",
            a.updates, a.rows
        ))
        .into());
    }
    let bandwidth = bandwidth_of(c)?;
    let mut runs = Vec::new();
    for design in designs_of(c)? {
        if ctl.stop.load(Ordering::Relaxed) {
            break;
        }
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
                || phase(&db, t, name, || update_pass(&db, t, &ids, pass, ctl)),
            )?);
        }
        runs.push(ExperimentRun {
            design,
            device,
            phases,
        });
    }
    Ok(runs)
}

fn version_chain(a: &VersionChainArgs, ctl: &RunControl) -> Result<Vec<ExperimentRun>> {
    let c = &a.common;
    if a.table_size == 0 || a.updates == 0 || a.selects == 0 {
        return Err(
            UsageError("--table-size, --updates and --selects must be at least 1".into()).into(),
        );
    }
    let bandwidth = bandwidth_of(c)?;
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
    let mut runs = Vec::new();
    for design in designs_of(c)? {
        let mut off = design.clone();
        off.garbage_collection = GarbageCollection::Off;
        let mut phases = Vec::new();
        let mut device = None;
        for (gc_on, d) in [(false, &off), (true, &design)] {
            if ctl.stop.load(Ordering::Relaxed) {
                break;
            }
            let (db, _, dev) = open_database(d, &c.device, bandwidth)?;
            device = Some(dev);
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
                let r = with_progress(label, 0.0, events, ctl, c.out.quiet, || {
                    drive(&target, kind, &opts, &run(events, seed), ctl)
                })
                .map_err(UsageError)?;
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
            phases.push(phase(&db, t, name, || {
                driven(
                    WorkloadKind::OltpUpdateNonIndex,
                    a.updates,
                    c.rand_seed,
                    &label,
                )
            })?);
            if gc_on {
                continue;
            }
            for name in ["select_before_gc", "full_gc", "select_after_gc"] {
                if ctl.stop.load(Ordering::Relaxed) {
                    break;
                }
                let label = format!("{} {name}", design.name);
                phases.push(phase(&db, t, name, || {
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
        if let Some(device) = device {
            runs.push(ExperimentRun {
                design,
                device,
                phases,
            });
        }
    }
    Ok(runs)
}

/// Causes with any block or request in some phase of some run.
fn causes(runs: &[ExperimentRun]) -> Vec<Cause> {
    let mut v: Vec<Cause> = runs
        .iter()
        .flat_map(|r| r.phases.iter())
        .flat_map(|p| {
            p.by_cause
                .iter()
                .filter(|(_, c)| c.read_requests + c.write_requests > 0)
                .map(|(k, _)| *k)
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The table view: one column per design × phase, per-statement figures by cause.
pub fn to_table(r: &ExperimentReport, markdown: bool) -> String {
    let cols: Vec<(String, &PhaseReport)> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.phases
                .iter()
                .map(move |p| (format!("{} {}", run.design.name, p.name), p))
        })
        .collect();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, f: &dyn Fn(&PhaseReport) -> String| {
        rows.push((name, cols.iter().map(|(_, p)| f(p)).collect()))
    };
    add("statements".into(), &|p| p.ops.to_string());
    add("elapsed (s)".into(), &|p| format!("{:.1}", p.elapsed_s));
    let per = |p: &PhaseReport, f: &dyn Fn(&PerOpIo) -> f64| {
        if p.ops == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", f(&p.per_op))
        }
    };
    add("read requests / stmt".into(), &|p| {
        per(p, &|x| x.read_requests)
    });
    add("write requests / stmt".into(), &|p| {
        per(p, &|x| x.write_requests)
    });
    add("4 KiB blocks read / stmt".into(), &|p| {
        per(p, &|x| x.read_blocks_4k)
    });
    add("4 KiB blocks written / stmt".into(), &|p| {
        per(p, &|x| x.write_blocks_4k)
    });
    add("WAL/redo bytes / stmt".into(), &|p| {
        per(p, &|x| x.wal_bytes)
    });
    let per_total = |p: &PhaseReport, v: u64| {
        if p.ops == 0 {
            format!("{v} (total)")
        } else {
            format!("{:.3}", v as f64 / p.ops as f64)
        }
    };
    add("buffer hits / stmt".into(), &|p| {
        per_total(p, p.total.buffer_hits)
    });
    add("buffer misses / stmt".into(), &|p| {
        per_total(p, p.total.buffer_misses)
    });
    add("OS-cache hits / stmt".into(), &|p| {
        per_total(p, p.total.os_cache_read_hits)
    });
    add("full-page images / stmt".into(), &|p| {
        per_total(p, p.total.wal_fpi)
    });
    add("versions traversed / stmt".into(), &|p| {
        format!("{:.2}", p.versions_traversed_per_op)
    });
    add("HOT updates / updates".into(), &|p| {
        format!("{}/{}", p.tables.n_tup_hot_upd, p.tables.n_tup_upd)
    });
    add("index entries inserted".into(), &|p| {
        p.tables.index_entries_inserted.to_string()
    });
    add("pages (table, indexes) at end".into(), &|p| {
        format!("{}, {}", p.pages.0, p.pages.1)
    });
    for cause in causes(&r.runs) {
        add(format!("requests r/w / stmt: {cause}"), &|p| {
            let x = p.per_op_by_cause.get(&cause).cloned().unwrap_or_default();
            if p.ops == 0 {
                let c = p.by_cause.get(&cause).copied().unwrap_or_default();
                format!("{}/{} (total)", c.read_requests, c.write_requests)
            } else {
                format!("{:.3}/{:.3}", x.read_requests, x.write_requests)
            }
        });
        add(format!("blocks r/w / stmt: {cause}"), &|p| {
            let x = p.per_op_by_cause.get(&cause).cloned().unwrap_or_default();
            if p.ops == 0 {
                let c = p.by_cause.get(&cause).copied().unwrap_or_default();
                format!("{}/{} (total)", c.read_blocks_4k, c.write_blocks_4k)
            } else {
                format!("{:.3}/{:.3}", x.read_blocks_4k, x.write_blocks_4k)
            }
        });
    }
    let title = format!(
        "experiment {} {}{}",
        r.experiment,
        r.parameters,
        if r.interrupted {
            " (INTERRUPTED by Ctrl-C)"
        } else {
            ""
        }
    );
    let labels: Vec<String> = cols.into_iter().map(|(l, _)| l).collect();
    if markdown {
        format!("# {title}\n\n{}", markdown_table("", &labels, &rows))
    } else {
        side_by_side(&title, &labels, &rows, 12)
    }
}

/// The CSV view: one row per design and phase, one column per JSON leaf of the phase.
fn to_csv(r: &ExperimentReport) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Option<Vec<String>> = None;
    for run in &r.runs {
        for p in &run.phases {
            let mut leaves = vec![("design".to_string(), run.design.name.clone())];
            crate::result::flatten("", &serde_json::to_value(p)?, &mut leaves);
            if header.is_none() {
                let h: Vec<String> = leaves.iter().map(|(k, _)| k.clone()).collect();
                w.write_record(&h)?;
                header = Some(h);
            }
            let m: BTreeMap<&str, &str> = leaves
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let h = header.as_ref().expect("header written");
            w.write_record(h.iter().map(|c| m.get(c.as_str()).copied().unwrap_or("")))?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// `mvcclab experiment NAME`.
///
/// Errors: bad flags ([`UsageError`]); an engine error while loading or running.
pub fn run(a: ExperimentArgs) -> Result<()> {
    let ctl = RunControl::default();
    let (name, params, common) = match &a.which {
        Experiment::UpdateHotSet(x) => (
            "update_hot_set",
            serde_json::json!({"rows": x.rows, "updates": x.updates, "rand_seed": x.common.rand_seed}),
            &x.common,
        ),
        Experiment::VersionChain(x) => (
            "version_chain",
            serde_json::json!({"table_size": x.table_size, "updates": x.updates,
                "selects": x.selects, "rand_type": x.rand_type.to_string(),
                "rand_seed": x.common.rand_seed}),
            &x.common,
        ),
    };
    designs_of(common)?;
    install_ctrl_c(&ctl.stop)?;
    let runs = match &a.which {
        Experiment::UpdateHotSet(x) => update_hot_set(x, &ctl)?,
        Experiment::VersionChain(x) => version_chain(x, &ctl)?,
    };
    let report = ExperimentReport {
        schema_version: SCHEMA_VERSION,
        mvcclab_version: env!("CARGO_PKG_VERSION").into(),
        experiment: name.into(),
        parameters: params,
        interrupted: ctl.stop.load(Ordering::Relaxed),
        runs,
    };
    let json = serde_json::to_string_pretty(&report)? + "\n";
    if let Some(dir) = &common.out.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("experiment.json"), &json)
            .with_context(|| format!("writing {}", dir.display()))?;
        std::fs::write(dir.join("experiment.csv"), to_csv(&report)?)
            .with_context(|| format!("writing {}", dir.display()))?;
        std::fs::write(dir.join("summary.md"), to_table(&report, true))
            .with_context(|| format!("writing {}", dir.display()))?;
        status(
            common.out.quiet,
            &format!(
                "report written to {}: experiment.json, experiment.csv, summary.md",
                dir.display()
            ),
        );
    }
    let text = match common.out.format {
        Format::Json => json,
        Format::Table => to_table(&report, false),
        Format::Md => to_table(&report, true),
        Format::Csv => to_csv(&report)?,
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
