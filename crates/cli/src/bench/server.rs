//! A workload on a real server (`real:postgresql`, `real:mariadb`, `run --target`): the same
//! load, warm-up and measured phase as an embedded run, through the same driver, with the
//! server's own counters read around the measured phase and put into the same report.
//!
//! Order of a run: start (or connect to) the server; load the tables as sysbench's
//! `prepare` does; settle (PostgreSQL `VACUUM ANALYZE` then `CHECKPOINT`; InnoDB flushed to
//! zero dirty pages and purge caught up); drop the OS page cache with `--drop-caches`;
//! warm up; snapshot the counters; run; snapshot again; stop the server (managed ones) by
//! its process id, also on error and Ctrl-C (its value is dropped on every path).
//!
//! On the FUSE device (`--bandwidth`, `--latency-us`, `--compression`, `--fuse-device`;
//! [`fuse_device`]) the managed server's data directory is a directory of mvcclab's device
//! (crates/devfs): the load and the settle step run unthrottled, the throttle is turned on
//! before the warm-up, and the report's `io` section takes the device's counts of the
//! measured phase — the same device fields as a preset's, by file class and by process,
//! and per second — in place of the server's own estimates.

use super::args::{driver_info, CommonArgs};
use super::figures::{blocks_per_txn_by_cause, engine_report, read_events};
use super::series::CounterReading;
use super::spec::fuse_device;
use super::subject::Subject;
use crate::design_arg::resolve_design;
use crate::progress::status;
use crate::result::{
    per, CpuRates, CpuReport, DeviceInfo, Io, Results, RunReport, Space, WorkloadInfo,
};
use anyhow::{Context, Result};
use mvcclab_devfs::{check_fuse, BlockMap, DeviceConfig, DeviceCounts, FileIo};
use mvcclab_engine::device::Compression;
use mvcclab_engine::stats::{CauseCounts, Counters};
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
    /// The device's bandwidth in MiB/s when on the FUSE device.
    bandwidth: Option<f64>,
}

/// A mark before the measured phase: the server's counters and, on the FUSE device, the
/// device's.
pub struct ServerMark {
    counters: Snapshot,
    device: Option<DeviceCounts>,
    blocks: Option<BlockMap>,
}

/// Block-device mode: the image's block counts of the phase (`after − before`) given to
/// the files of the ext4 on it by their `extents` (path → (first 4 KiB block, blocks));
/// blocks no file holds (journal, inodes, bitmaps, directories, files removed since) and
/// the image's syncs go to `fs_metadata`. A request is counted to the file of its first
/// block, as one call (the loop driver's requests are not split at `iop_max_bytes` here).
fn attribute_blocks(
    before: &BlockMap,
    after: &BlockMap,
    extents: &BTreeMap<String, Vec<(u64, u64)>>,
    syncs: u64,
) -> BTreeMap<String, FileIo> {
    let mut owners: Vec<(u64, u64, &str)> = extents
        .iter()
        .flat_map(|(p, ext)| ext.iter().map(move |(b, n)| (*b, *n, p.as_str())))
        .collect();
    owners.sort_unstable();
    let owner = |b: u64| -> &str {
        let i = owners.partition_point(|(start, _, _)| *start <= b);
        match i.checked_sub(1).map(|i| owners[i]) {
            Some((start, n, p)) if b < start + n => p,
            _ => "fs_metadata",
        }
    };
    let mut out: BTreeMap<String, FileIo> = BTreeMap::new();
    for (b, a) in after {
        let e = before.get(b).copied().unwrap_or_default();
        let (r, w) = (
            a.read_blocks_4k - e.read_blocks_4k,
            a.write_blocks_4k - e.write_blocks_4k,
        );
        let (rc, wc) = (a.read_calls - e.read_calls, a.write_calls - e.write_calls);
        if r + w + rc + wc == 0 {
            continue;
        }
        let f = out.entry(owner(*b).to_string()).or_default();
        f.io.read_blocks_4k += r;
        f.io.read_bytes += a.read_bytes - e.read_bytes;
        f.io.read_requests += rc;
        f.read_calls += rc;
        f.io.write_blocks_4k += w;
        f.io.write_bytes += a.write_bytes - e.write_bytes;
        f.io.write_requests += wc;
        f.write_calls += wc;
    }
    out.entry("fs_metadata".into()).or_default().io.syncs += syncs;
    out
}

/// The device fields of `io.total` filled from the FUSE device's counts (the server's
/// own figures keep the rest).
fn with_device_fields(mut t: CauseCounts, d: &CauseCounts) -> CauseCounts {
    t.read_requests = d.read_requests;
    t.read_blocks_4k = d.read_blocks_4k;
    t.read_bytes = d.read_bytes;
    t.write_requests = d.write_requests;
    t.write_blocks_4k = d.write_blocks_4k;
    t.write_bytes = d.write_bytes;
    t.write_physical_bytes = d.write_physical_bytes;
    t.syncs = d.syncs;
    t.device_wait_us = d.device_wait_us;
    t
}

impl ServerRun {
    /// Starts a managed `kind` server, or connects to the `--url` given for its engine; on
    /// the FUSE device ([`fuse_device`]) with `bandwidth` MiB/s per direction.
    ///
    /// Errors: a machine that cannot mount the FUSE device ([`crate::UsageError`], exit 2,
    /// naming what to install); the server failing to start or accept the connection (the
    /// message names the server).
    pub fn open(kind: ServerKind, c: &CommonArgs, bandwidth: Option<f64>) -> Result<Self> {
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
        let device = if fuse_device(c) && url.is_none() {
            check_fuse().map_err(crate::commands::device::mount_error)?;
            let mut d = DeviceConfig::new(bandwidth, c.device.latency_us, c.device.compression);
            d.data_dir = c.device.data_dir.as_ref().map(|p| p.join(kind.name()));
            Some(d)
        } else {
            None
        };
        let server = mvcclab_servers::open(
            kind,
            &ServerOptions {
                url,
                managed: ManagedOptions {
                    buffer_pool_bytes: c.device.buffer_pool,
                    base_dir: c.server.server_dir.clone(),
                    exact_device_io: c.server.exact_device_io,
                    block_device: c.server.fuse_mode == "block-device",
                    device,
                    ..Default::default()
                },
                fillfactor: c.fillfactor,
            },
        )
        .with_context(|| label.clone())?;
        Ok(ServerRun {
            kind,
            server,
            label,
            bandwidth,
        })
    }
}

/// The `cpu` section from the phase's `cpu.*` counters (crates/servers/src/cpu.rs), or
/// `None` when the server's processes could not be read.
fn cpu_report(
    kind: ServerKind,
    server: &dyn RealServer,
    counters: &Snapshot,
    results: &RunResult,
) -> Option<CpuReport> {
    let (total, by_kind) = mvcclab_servers::cpu::from_counters(counters)?;
    let m = server.managed()?;
    let source = format!(
        "/proc of the managed {} (pid {}) and its descendants; exited children through the \
         root's cutime, cstime, cminflt, cmajflt; context switches of live threads only (no \
         cumulative field for exited ones). Only software perf events exist on this \
         machine: TLB misses cannot be measured here",
        kind.name(),
        m.pid().map_or("?".into(), |p| p.to_string())
    );
    let s = results.elapsed_s;
    Some(CpuReport {
        source,
        per_txn: CpuRates::of(&total, results.transactions as f64),
        per_second: CpuRates::of(&total, s),
        cpus_utilised: if s > 0.0 {
            total.task_clock_us() as f64 / (s * 1e6)
        } else {
            0.0
        },
        total,
        by_kind,
        ctxt_switches_of_exited_missing: true,
    })
}

impl Subject for ServerRun {
    /// The server's counters (and the FUSE device's) before the measured phase.
    type Mark = ServerMark;

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
            .with_context(|| format!("{label}: checkpoint before the run"))?;
        // Setup ran unthrottled; the device is throttled from the warm-up on.
        if let Some(d) = self.server.device() {
            d.set_throttling(true);
        }
        Ok(())
    }

    fn mark(&self, _c: &CommonArgs) -> Result<ServerMark> {
        let label = &self.label;
        let counters = self
            .server
            .snapshot()
            .with_context(|| format!("{label}: counters"))?;
        Ok(ServerMark {
            counters,
            device: self.server.device().map(|d| d.counts()),
            blocks: self.server.device().map(|d| d.block_map()),
        })
    }

    /// The server's counters now ([`RealServer::sample`], no waiting), since `before`,
    /// mapped to causes as the report maps them; on the FUSE device its device fields are
    /// the device's. `device_blocks` (by file class and process) stays empty: the device
    /// counts files and processes separately, and naming PostgreSQL's relation files takes
    /// a catalog query the sampler does not make (series.rs).
    fn reading(&self, before: &ServerMark) -> Result<CounterReading> {
        let label = &self.label;
        let now = self
            .server
            .sample()
            .with_context(|| format!("{label}: counters"))?;
        let counters = delta(&*self.server, &before.counters, &now);
        let mut f = figures(self.kind, &counters);
        if let (Some(b), Some(d)) = (&before.device, self.server.device()) {
            f.total = with_device_fields(f.total, &d.counts().since(b).total.io);
        }
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
        before: ServerMark,
        wkind: WorkloadKind,
        opts: SysbenchOptions,
        c: &CommonArgs,
        results: RunResult,
    ) -> Result<RunReport> {
        let ServerRun {
            kind,
            server,
            label,
            bandwidth,
        } = self;
        let after = server
            .snapshot()
            .with_context(|| format!("{label}: counters"))?;
        let device = match (&before.device, server.device()) {
            (Some(b), Some(d)) => Some(d.counts().since(b)),
            _ => None,
        };
        let before_blocks = before.blocks;
        let before = before.counters;
        let counters = delta(&*server, &before, &after);
        let mut f = figures(kind, &counters);
        let txns = results.transactions;
        let mut by_file_class = BTreeMap::new();
        let mut by_process = BTreeMap::new();
        let mut per_second = Vec::new();
        if let Some(d) = &device {
            f.total = with_device_fields(f.total, &d.total.io);
            let device_fields = [
                "read_requests",
                "read_blocks_4k",
                "read_bytes",
                "write_requests",
                "write_blocks_4k",
                "write_bytes",
                "syncs",
                "device_wait_us",
            ];
            f.not_measured
                .retain(|n| !device_fields.iter().any(|x| n == &format!("io.total.{x}")));
            let loopdev = server.managed().and_then(|m| m.loop_device());
            let by_file = match (loopdev, &before_blocks, server.device()) {
                (Some(l), Some(b), Some(m)) => {
                    let extents = l
                        .extents()
                        .with_context(|| format!("{label}: extents of the files on ext4"))?;
                    attribute_blocks(b, &m.block_map(), &extents, d.total.io.syncs)
                }
                _ => d.by_file.clone(),
            };
            let paths: Vec<&str> = by_file.keys().map(String::as_str).collect();
            let classes = server
                .file_classes(&paths)
                .with_context(|| format!("{label}: naming the files on the device"))?;
            by_file_class = mvcclab_servers::file_class::by_class(&by_file, |p| {
                if p == "fs_metadata" {
                    return p.to_string();
                }
                classes.get(p).cloned().unwrap_or_else(|| "other".into())
            });
            by_process = d.by_process.clone();
            per_second = d.per_second.clone();
        }
        let io = Io {
            per_txn: per(&f.total, txns),
            total: f.total,
            per_txn_by_cause: blocks_per_txn_by_cause(&f.by_cause, txns),
            by_cause: f.by_cause.clone(),
            per_op: BTreeMap::new(),
            by_file_class,
            by_process,
            per_second,
        };
        let wal_by_record = server
            .wal_by_record(&before, &after)
            .with_context(|| format!("{label}: WAL record statistics"))?;
        let engine = engine_report(
            &io.total,
            f.tables,
            f.undo,
            read_events(wkind, &results),
            wal_by_record,
        );
        let mut info = server.info();
        info.state_counters = counters
            .keys()
            .filter(|k| server.is_state(k))
            .cloned()
            .collect();
        info.counters = counters;
        info.not_measured = f.not_measured.clone();
        if let (Some(d), Some(m)) = (&device, server.device()) {
            let mode = match server.managed().and_then(|s| s.loop_device()) {
                Some(l) => format!(
                    "block-device mode: ext4 on {} (direct I/O, rotational {}) over the \
                     mount's device.img; journal and metadata included, blocks given to files \
                     by their extents, the rest fs_metadata",
                    l.device().display(),
                    l.rotational()
                        .map_or("?".into(), |r| u8::from(r).to_string())
                ),
                None => "file-system mode: the server's files are files of the device; no \
                         file-system journal or metadata I/O"
                    .to_string(),
            };
            info.device_io = format!(
                "exact: mvcclab's FUSE device at {} ({mode}), write-through \
                 (no writeback_cache; mount readahead {} KiB, max_ratio {} %), bytes {}; {:.1} s \
                 measured, daemon CPU {:.2} s",
                m.dir().display(),
                m.bdi().map_or("?".into(), |b| b.0.to_string()),
                m.bdi().map_or("?".into(), |b| b.1.to_string()),
                m.config()
                    .data_dir
                    .as_ref()
                    .map_or("in memory".into(), |p| format!("in {}", p.display())),
                d.at_s,
                d.daemon_cpu_s
            );
        }
        let on_device = device.is_some();
        let utilisation = match (&device, bandwidth) {
            (Some(d), Some(bw)) if d.at_s > 0.0 => {
                let busiest = d.total.io.write_bytes.max(d.total.io.read_bytes) as f64;
                Some(busiest / (bw * 1048576.0 * d.at_s))
            }
            _ => None,
        };
        let compression_totals = device.as_ref().map(|d| d.compression).unwrap_or_default();
        let page = kind.page_size_bytes();
        let mut design = resolve_design(kind.preset(), &[])?;
        design.name = label;
        if let Some(f) = c.fillfactor {
            // What the server was given (ServerOptions::fillfactor), in the preset's terms.
            if kind == ServerKind::PostgreSql {
                design.fillfactor = f;
            }
            design.index_fillfactor = f;
        }
        let storage_config = serde_json::to_value(&info.settings)?;
        let cpu = cpu_report(kind, &*server, &info.counters, &results);
        let mut space = Space::new(f.pages, 0, page, compression_totals);
        for (k, v) in &info.counters {
            if let Some(t) = k.strip_prefix("space.table_pages.") {
                space.pages_by_table.entry(t.to_string()).or_default().0 = *v as u64;
            } else if let Some(t) = k.strip_prefix("space.index_pages.") {
                space.pages_by_table.entry(t.to_string()).or_default().1 = *v as u64;
            }
        }
        if let Some(m) = server.device() {
            space.by_file_kind =
                mvcclab_servers::file_class::space_by_kind(&m.compression_by_path());
        }
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
                bandwidth_mib_s: if on_device { bandwidth } else { None },
                latency_us: if on_device { c.device.latency_us } else { None },
                compression: if on_device {
                    c.device.compression
                } else {
                    Compression::None
                },
                data_dir: if on_device {
                    c.device
                        .data_dir
                        .as_ref()
                        .map(|p| p.join(kind.name()).display().to_string())
                } else {
                    None
                },
                fuse_daemon_cpu_s: device.as_ref().map(|d| d.daemon_cpu_s),
                utilisation,
                utilisation_under_90pct: utilisation.map(|u| u < 0.9),
            },
            storage_config,
            space,
            results: Results::new(results),
            io,
            engine,
            server: Some(info),
            cpu,
            metadata: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mvcclab_devfs::BlockIo;

    #[test]
    fn blocks_go_to_the_file_whose_extent_holds_them_and_the_rest_to_fs_metadata() {
        let w = |bytes: u64, calls: u64| BlockIo {
            write_blocks_4k: 1,
            write_bytes: bytes,
            write_calls: calls,
            ..Default::default()
        };
        let before: BlockMap = [(10, w(4096, 1))].into_iter().collect();
        let after: BlockMap = [(10, w(8192, 2)), (11, w(512, 0)), (500, w(4096, 1))]
            .into_iter()
            .map(|(b, mut x)| {
                if b == 10 {
                    x.write_blocks_4k = 2;
                }
                (b, x)
            })
            .collect();
        let extents: BTreeMap<String, Vec<(u64, u64)>> =
            [("data/pg_wal/1".to_string(), vec![(8, 4)])]
                .into_iter()
                .collect();
        let by = attribute_blocks(&before, &after, &extents, 3);
        let wal = by["data/pg_wal/1"];
        assert_eq!(
            (wal.io.write_blocks_4k, wal.io.write_bytes, wal.write_calls),
            (2, 4608, 1)
        );
        let meta = by["fs_metadata"];
        assert_eq!(
            (meta.io.write_bytes, meta.write_calls, meta.io.syncs),
            (4096, 1, 3)
        );
    }
}
