//! A run on mvcclab's own engine: a design opened with the run's memory and device
//! settings, loaded, checkpointed, and measured between a [`Mark`] and the end of the
//! phase, with every 4 KiB block of I/O attributed to its cause.

use super::args::{driver_info, CommonArgs, DeviceArgs};
use super::config::open_database_on;
use super::figures::{buffer_cache_histogram, engine_report, io_report, read_events, PoolOwners};
use super::phase::{Mark, PhaseDelta};
use super::series::CounterReading;
use super::subject::Subject;
use crate::error::engine_error;
use crate::export::label;
use crate::result::{
    engine_series_counters, DeviceInfo, PerOpIo, PhaseReport, Results, RunReport, ServerInfo,
    Space, WorkloadInfo,
};
use anyhow::Result;
use mvcclab_engine::catalog::{TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::{DesignConfig, GarbageCollection};
use mvcclab_engine::device::Device;
use mvcclab_engine::stats::{enter, Cause};
use mvcclab_workload::driver::{RunResult, Target};
use mvcclab_workload::embedded::Embedded;
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A design opened for one run at one device bandwidth.
pub struct EmbeddedRun {
    design: DesignConfig,
    db: Arc<Database>,
    target: Embedded,
    storage_config: serde_json::Value,
    device: DeviceInfo,
    label: String,
    /// The space at the end of the load, taken by [`Subject::settle`].
    after_load: OnceLock<Space>,
}

impl EmbeddedRun {
    /// Opens `design` with the memory and device flags of `c` at `bandwidth`
    /// ([`open_database_on`] without a device of its own).
    ///
    /// Errors: as [`open_database_on`].
    pub fn open(design: &DesignConfig, c: &CommonArgs, bandwidth: Option<f64>) -> Result<Self> {
        Self::open_on(design, &c.device, bandwidth, None)
    }

    /// Opens `design` with the memory and device flags `d` at `bandwidth` (an
    /// experiment's run), on `device` when given (a load kept copy-on-write,
    /// bench/loaded.rs; [`open_database_on`]).
    ///
    /// Errors: as [`open_database_on`].
    pub fn open_on(
        design: &DesignConfig,
        d: &DeviceArgs,
        bandwidth: Option<f64>,
        device: Option<Arc<dyn Device>>,
    ) -> Result<Self> {
        let (db, storage_config, device) = open_database_on(design, d, bandwidth, device)?;
        let target = Embedded::new(db.clone());
        Ok(EmbeddedRun {
            design: design.clone(),
            db,
            target,
            storage_config,
            device,
            label: label(&design.name, bandwidth),
            after_load: OnceLock::new(),
        })
    }

    /// The opened database.
    pub fn db(&self) -> &Arc<Database> {
        &self.db
    }
}

/// The report of an experiment's phase named `name` on a design, which ran `ops`
/// statements in `elapsed_s` seconds and did `d` (no time series).
pub fn phase_report_of(name: &str, ops: u64, elapsed_s: f64, d: PhaseDelta) -> PhaseReport {
    let PhaseDelta {
        storage,
        tables,
        engine: undo,
        pages,
        ..
    } = d;
    let total = storage.counters.total();
    PhaseReport {
        name: name.to_string(),
        ops,
        elapsed_s,
        per_op: PerOpIo::of(&total, ops),
        per_op_by_cause: storage
            .counters
            .by_cause
            .iter()
            .map(|(c, cc)| (*c, PerOpIo::of(cc, ops)))
            .collect(),
        versions_traversed_per_op: tables.versions_traversed as f64 / ops.max(1) as f64,
        total,
        by_cause: storage.counters.by_cause,
        tables,
        undo,
        pages,
        timeseries: Vec::new(),
        server: None,
    }
}

/// Waits until purge has emptied the history list (designs with purge on), at most 120 s,
/// as the experiments close a phase (purge works in the background in InnoDB too).
pub fn wait_for_purge(db: &Database) {
    if db.design().garbage_collection != GarbageCollection::Purge {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while db.engine_counters().history_list_length > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl EmbeddedRun {
    /// Takes the sbtest tables already in the database (opened over a saved load) as the
    /// target's ([`Embedded::attach`]), in place of [`Subject::prepare`].
    ///
    /// Errors: tpcc, or a table missing.
    pub fn attach(&self, kind: WorkloadKind, opts: &SysbenchOptions) -> Result<()> {
        self.target
            .attach(kind, opts)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.label))
    }

    /// Closes the database cleanly (background work stopped, shutdown checkpoint), so that
    /// its device holds the whole loaded state.
    ///
    /// Errors: the shutdown checkpoint's; a database still shared (a bug).
    pub fn close(self) -> Result<()> {
        let EmbeddedRun { db, target, .. } = self;
        drop(target);
        let db = Arc::try_unwrap(db)
            .map_err(|_| anyhow::anyhow!("closing the loaded database: still in use"))?;
        db.close().map_err(engine_error)
    }
}

impl Subject for EmbeddedRun {
    /// The workload's tables and the counters at the start of the phase.
    type Mark = (Vec<TableId>, Mark);

    fn label(&self) -> &str {
        &self.label
    }

    fn target(&self) -> &dyn Target {
        &self.target
    }

    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<()> {
        self.target
            .prepare(kind, opts, seed)
            .map_err(|e| anyhow::anyhow!("prepare: {e}"))
    }

    fn settle(&self, c: &CommonArgs) -> Result<()> {
        self.db.storage().checkpoint()?;
        // The loaded tables' space after the checkpoint: the run's `space.after_load`.
        let (tables, mark) = self.mark(c)?;
        let d = mark.since(&self.db, &tables)?;
        let _ = self
            .after_load
            .set(space(&self.db, &d, self.device.page_size_bytes));
        Ok(())
    }

    fn mark_tables(&self, names: &[String]) -> Result<Self::Mark> {
        let tables: Vec<_> = names
            .iter()
            .map(|n| self.db.table_id(n))
            .collect::<Result<_, _>>()?;
        let mark = Mark::take(&self.db, &tables)?;
        Ok((tables, mark))
    }

    fn mark(&self, c: &CommonArgs) -> Result<Self::Mark> {
        let names: Vec<String> = if c.workload.trim_end_matches(".lua") == "tpcc" {
            (1..=c.tables)
                .flat_map(|n| {
                    mvcclab_workload::tpcc::table_defs(n, false)
                        .into_iter()
                        .map(|d| d.name)
                })
                .collect()
        } else {
            (1..=c.tables).map(|n| format!("sbtest{n}")).collect()
        };
        self.mark_tables(&names)
    }

    fn reading(&self, (_, mark): &Self::Mark) -> Result<CounterReading> {
        let counters = mark.io_since(&self.db);
        // Counts since the mark, as a real server's are (series.rs takes differences).
        let server = engine_series_counters(self.db.design(), &mark.engine_since(&self.db));
        Ok(CounterReading {
            total: counters.total(),
            counters,
            server,
            ..Default::default()
        })
    }

    fn report(
        self,
        (tables, mark): Self::Mark,
        kind: WorkloadKind,
        opts: SysbenchOptions,
        c: &CommonArgs,
        results: RunResult,
    ) -> Result<RunReport> {
        let db = &self.db;
        let d = mark.since(db, &tables)?;
        let mut space = space(db, &d, self.device.page_size_bytes);
        space.after_load = self.after_load.into_inner().map(Box::new);
        let io = io_report(
            &d.storage.counters,
            &results.ops_by_kind,
            results.transactions,
        );
        let mut engine = engine_report(
            &io.total,
            d.tables,
            d.engine,
            read_events(kind, &results),
            d.wal_by_record,
        );
        let pool = db.storage().pool();
        let owners = pool_owners(db, &tables)?;
        engine.buffer_cache =
            buffer_cache_histogram(pool.state().frames, &pool.buffer_cache(), |e| {
                owners.class(e)
            });
        let device = self.device;
        Ok(RunReport {
            target: "embedded".into(),
            design: self.design,
            workload: WorkloadInfo {
                name: kind.name().into(),
                options: opts,
            },
            driver: driver_info(c),
            device: device.clone(),
            storage_config: self.storage_config,
            space,
            results: Results::new(results),
            io,
            engine,
            server: None,
            cpu: None,
            cpu_seconds: None,
            metadata: None,
        })
    }

    fn describe(&self) -> (DesignConfig, DeviceInfo, Option<ServerInfo>) {
        (self.design.clone(), self.device.clone(), None)
    }

    fn load_table(&self, def: &TableDef, rows: &mut dyn Iterator<Item = Vec<Value>>) -> Result<()> {
        let _c = enter(Cause::Load);
        let db = &self.db;
        let t = db.create_table(def.clone())?;
        let mut tx = db.begin();
        let mut n = 0u64;
        for row in rows {
            tx.insert(t, row)?;
            n += 1;
            if n.is_multiple_of(1000) {
                tx.commit()?;
                tx = db.begin();
            }
        }
        tx.commit()?;
        db.storage().checkpoint()?;
        Ok(())
    }

    fn update_by_key(&self, def: &TableDef, id: i32, col: usize, v: &Value) -> Result<bool> {
        let t = self.db.table_id(&def.name)?;
        let mut tx = self.db.begin();
        let found = tx.update(t, &[Value::Integer(id)], &[Assign::Set(col, v.clone())])?;
        tx.commit()?;
        Ok(found)
    }

    fn end_phase(&self) -> Result<()> {
        wait_for_purge(&self.db);
        self.db.storage().checkpoint()?;
        Ok(())
    }

    fn collect_garbage(&self, table: &str) -> Result<()> {
        let t = self.db.table_id(table)?;
        self.db.gc(t)?;
        Ok(())
    }

    fn phase_report(
        &self,
        (tables, mark): Self::Mark,
        name: &str,
        ops: u64,
        elapsed_s: f64,
    ) -> Result<PhaseReport> {
        Ok(phase_report_of(
            name,
            ops,
            elapsed_s,
            mark.since(&self.db, &tables)?,
        ))
    }
}

/// The relations of `tables` and the undo log, to class a pool's frames by owner.
///
/// Errors: [`mvcclab_engine::Error::Catalog`] for a table that does not exist.
fn pool_owners(db: &Database, tables: &[TableId]) -> Result<PoolOwners> {
    let mut o = PoolOwners {
        undo: db.undo_relation(),
        ..Default::default()
    };
    for &t in tables {
        let r = db.relations(t)?;
        o.tables.insert(r.table);
        o.indexes.extend(r.index_relations());
    }
    Ok(o)
}

/// The space at the end, with the device's bytes split by file kind when it
/// compresses.
fn space(db: &Database, d: &super::phase::PhaseDelta, page: u64) -> Space {
    use mvcclab_engine::device::file_ids::{is_relation, is_wal};
    let mut s = Space::new(
        d.pages,
        d.engine.undo_pages_in_use,
        page,
        d.storage.compression,
    );
    s.pages_by_table = d.pages_by_table.clone();
    if d.storage.compression.logical_bytes > 0 {
        let vfs = db.storage().vfs();
        s.by_file_kind = [
            ("data", vfs.compression_totals_where(is_relation)),
            ("wal", vfs.compression_totals_where(is_wal)),
            (
                "other",
                vfs.compression_totals_where(|f| !is_relation(f) && !is_wal(f)),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    }
    s
}
