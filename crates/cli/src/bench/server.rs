//! A workload on a real server (`real:postgresql`, `real:mariadb`, `run --target`): the same
//! load, warm-up and measured phase as an embedded run, through the same driver, with the
//! server's own counters read around the measured phase and put into the same report.
//!
//! Order of a run: start (or connect to) the server; load the tables as sysbench's
//! `prepare` does; settle (PostgreSQL `VACUUM ANALYZE` then `CHECKPOINT`; InnoDB flushed to
//! zero dirty pages and purge caught up); drop the OS page cache with `--drop-caches`;
//! warm up; snapshot the counters; run; snapshot again; stop the server (managed ones) by
//! its process id, also on error and Ctrl-C (its value is dropped on every path).

use super::args::{driver_info, CommonArgs};
use super::figures::{blocks_per_txn_by_cause, engine_report};
use super::series::CounterReading;
use super::subject::Subject;
use crate::design_arg::resolve_design;
use crate::progress::status;
use crate::result::{per, DeviceInfo, Io, Results, RunReport, Space, WorkloadInfo};
use anyhow::{Context, Result};
use mvcclab_engine::device::{Compression, CompressionTotals};
use mvcclab_engine::stats::Counters;
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::schema::figures;
use mvcclab_servers::{delta, RealServer, ServerKind, ServerOptions, Snapshot};
use mvcclab_workload::driver::{RunResult, Target};
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::collections::BTreeMap;

/// A real server started (or connected to) for one run.
pub struct ServerRun {
    kind: ServerKind,
    server: Box<dyn RealServer>,
    label: String,
}

impl ServerRun {
    /// Starts a managed `kind` server, or connects to the `--url` given for its engine.
    ///
    /// Errors: the server failing to start or accept the connection (the message names
    /// the server).
    pub fn open(kind: ServerKind, c: &CommonArgs) -> Result<Self> {
        let label = kind.design_name();
        let url = c
            .server
            .urls
            .iter()
            .find(|u| ServerKind::of_url(u) == Some(kind))
            .cloned();
        status(
            c.out.quiet,
            &format!(
                "{label}: {} ...",
                match &url {
                    Some(u) => format!("connecting to {u}"),
                    None => format!("starting {} on 127.0.0.1", kind.package()),
                }
            ),
        );
        let server = mvcclab_servers::open(
            kind,
            &ServerOptions {
                url,
                managed: ManagedOptions {
                    buffer_pool_bytes: c.device.buffer_pool,
                    base_dir: c.server.server_dir.clone(),
                    exact_device_io: c.server.exact_device_io,
                    ..Default::default()
                },
            },
        )
        .with_context(|| label.clone())?;
        Ok(ServerRun {
            kind,
            server,
            label,
        })
    }
}

impl Subject for ServerRun {
    /// The server's counters before the measured phase.
    type Mark = Snapshot;

    fn label(&self) -> &str {
        &self.label
    }

    fn target(&self) -> &dyn Target {
        self.server.as_target()
    }

    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<()> {
        let label = &self.label;
        self.server
            .as_target()
            .prepare(kind, opts, seed)
            .map_err(|e| anyhow::anyhow!("{label}: prepare: {e}"))
    }

    fn settle(&self, c: &CommonArgs) -> Result<()> {
        let label = &self.label;
        self.server
            .settle(c.server.drop_caches)
            .with_context(|| format!("{label}: checkpoint before the run"))
    }

    fn mark(&self, _c: &CommonArgs) -> Result<Snapshot> {
        let label = &self.label;
        self.server
            .snapshot()
            .with_context(|| format!("{label}: counters"))
    }

    /// The server's counters now ([`RealServer::sample`], no waiting), since `before`,
    /// mapped to causes as the report maps them. `device_blocks` stays empty until the
    /// servers run on mvcclab's device (issue 23; series.rs).
    fn reading(&self, before: &Snapshot) -> Result<CounterReading> {
        let label = &self.label;
        let now = self
            .server
            .sample()
            .with_context(|| format!("{label}: counters"))?;
        let counters = delta(&*self.server, before, &now);
        let f = figures(self.kind, &counters);
        Ok(CounterReading {
            total: f.total,
            counters: Counters {
                by_cause: f.by_cause,
            },
            server: counters,
            device_blocks: BTreeMap::new(),
        })
    }

    fn report(
        self,
        before: Snapshot,
        wkind: WorkloadKind,
        opts: SysbenchOptions,
        c: &CommonArgs,
        results: RunResult,
    ) -> Result<RunReport> {
        let ServerRun {
            kind,
            server,
            label,
        } = self;
        let after = server
            .snapshot()
            .with_context(|| format!("{label}: counters"))?;
        let counters = delta(&*server, &before, &after);
        let f = figures(kind, &counters);
        let txns = results.transactions;
        let io = Io {
            per_txn: per(&f.total, txns),
            total: f.total,
            per_txn_by_cause: blocks_per_txn_by_cause(&f.by_cause, txns),
            by_cause: f.by_cause.clone(),
            per_op: BTreeMap::new(),
        };
        let wal_by_record = server
            .wal_by_record(&before, &after)
            .with_context(|| format!("{label}: WAL record statistics"))?;
        let engine = engine_report(&io.total, f.tables, f.undo, results.reads, wal_by_record);
        let mut info = server.info();
        info.state_counters = counters
            .keys()
            .filter(|k| server.is_state(k))
            .cloned()
            .collect();
        info.counters = counters;
        info.not_measured = f.not_measured.clone();
        let page = kind.page_size_bytes();
        let mut design = resolve_design(kind.preset(), &[])?;
        design.name = label;
        let storage_config = serde_json::to_value(&info.settings)?;
        drop(server);
        Ok(RunReport {
            target: kind.name().into(),
            design,
            workload: WorkloadInfo {
                name: wkind.name().into(),
                options: opts,
            },
            driver: driver_info(c),
            device: DeviceInfo {
                page_size_bytes: page,
                buffer_pool_bytes: c.device.buffer_pool,
                os_cache_bytes: 0,
                bandwidth_mib_s: None,
                latency_us: None,
                compression: Compression::None,
                data_dir: None,
            },
            storage_config,
            space: Space::new(f.pages, 0, page, CompressionTotals::default()),
            results: Results::new(results),
            io,
            engine,
            server: Some(info),
        })
    }
}
