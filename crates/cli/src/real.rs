//! A workload on a real server (`real:postgresql`, `real:mariadb`, `run --target`): the same
//! load, warm-up and measured phase as an embedded run, through the same driver, with the
//! server's own counters read around the measured phase and put into the same report.
//!
//! Order of a run: start (or connect to) the server; load the tables as sysbench's
//! `prepare` does; settle (PostgreSQL `VACUUM ANALYZE` then `CHECKPOINT`; InnoDB flushed to
//! zero dirty pages and purge caught up); drop the OS page cache with `--drop-caches`;
//! warm up; snapshot the counters; run; snapshot again; stop the server (managed ones) by
//! its process id, also on error and Ctrl-C (its value is dropped on every path).

use crate::design_arg::resolve_design;
use crate::progress::status;
use crate::result::{per, DeviceInfo, Io, RunReport, Space, WorkloadInfo};
use crate::run::{
    blocks_per_txn_by_cause, driver_info, engine_report, measure, sysbench_options, warm_up,
    CommonArgs,
};
use crate::UsageError;
use anyhow::{Context, Result};
use mvcclab_engine::device::{Compression, CompressionTotals};
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::schema::figures;
use mvcclab_servers::{delta, ServerKind, ServerOptions};
use mvcclab_workload::driver::RunControl;
use mvcclab_workload::sysbench::WorkloadKind;
use std::collections::BTreeMap;

/// Runs the workload of `c` on a `kind` server and returns its report.
///
/// Errors: bad options ([`UsageError`]); the server failing to start, load or report
/// (the message names the server and the statement).
pub fn run_server(kind: ServerKind, c: &CommonArgs, ctl: &RunControl) -> Result<RunReport> {
    let wkind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    if c.tables == 0 || c.table_size == 0 {
        return Err(UsageError("--tables and --table-size must be at least 1".into()).into());
    }
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
    let opts = sysbench_options(c);
    status(
        c.out.quiet,
        &format!("{label}: loading {} × {} rows ...", c.tables, c.table_size),
    );
    server
        .as_target()
        .prepare(wkind, &opts, c.rand_seed)
        .map_err(|e| anyhow::anyhow!("{label}: prepare: {e}"))?;
    server
        .settle(c.server.drop_caches)
        .with_context(|| format!("{label}: checkpoint before the run"))?;
    warm_up(server.as_target(), wkind, &opts, c, &label, ctl)?;
    let before = server
        .snapshot()
        .with_context(|| format!("{label}: counters"))?;
    let results = measure(server.as_target(), wkind, &opts, c, &label, ctl)?;
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
        results,
        io,
        engine,
        server: Some(info),
    })
}
