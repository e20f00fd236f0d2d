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

use super::args::{driver_info, CommonArgs, DeviceArgs, ServerArgs};
use super::figures::{blocks_per_txn_by_cause, engine_report, read_events, server_buffer_cache};
use super::series::CounterReading;
use super::spec::fuse_device_of;
use super::subject::Subject;
use crate::design_arg::resolve_design;
use crate::progress::status;
use crate::result::{
    per, BlocksRw, CpuRates, CpuReport, DeviceInfo, Io, PerOpIo, PhaseReport, PhaseServer, Results,
    RunReport, ServerInfo, Space, WorkloadInfo,
};
use anyhow::{Context, Result};
use mvcclab_devfs::{check_fuse, BlockMap, DeviceConfig, DeviceCounts, FileIo, SecondIo};
use mvcclab_engine::catalog::{ColumnType, TableDef, Value};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{Compression, CompressionTotals};
use mvcclab_engine::stats::{CauseCounts, Counters};
use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::schema::{figures, SchemaFigures};
use mvcclab_servers::{delta, RealServer, ServerKind, ServerOptions, Snapshot};
use mvcclab_workload::driver::{RunResult, Target};
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A real server started (or connected to) for one run.
pub struct ServerRun {
    kind: ServerKind,
    server: Box<dyn RealServer>,
    label: String,
    /// The device's bandwidth in MiB/s when on the FUSE device.
    bandwidth: Option<f64>,
    /// The memory and device flags it was started with.
    device_args: DeviceArgs,
    /// Its page cache is bounded by a memory cgroup to `--os-cache` (PostgreSQL with
    /// `--bound-os-cache`).
    bound_os_cache: bool,
    /// With `bound_os_cache`: the cgroup's page cache as read (marks, readings and phase
    /// ends), its largest and last value, and the server's own memory and the limit set at
    /// the last mark ([`ManagedServer::bound_page_cache`]); bytes.
    page_cache: std::sync::Mutex<PageCacheSeen>,
    /// The fillfactor it was given (`--fillfactor`).
    fillfactor: Option<u8>,
    /// The space at the end of the load, taken by [`Subject::settle`].
    after_load: OnceLock<Space>,
}

/// What a bounded server's memory cgroup showed during the run, bytes (the report's
/// `server.device_io` line).
#[derive(Clone, Copy, Debug, Default)]
struct PageCacheSeen {
    /// The largest page cache (`active_file + inactive_file`) read after the first bound.
    max_file_bytes: u64,
    /// The page cache at the last read.
    last_file_bytes: u64,
    /// The server's own memory (usage − page cache) when the limit was last set.
    own_bytes: u64,
    /// The limit last set.
    limit_bytes: u64,
    /// Bounds set (one per measured phase, and one after the load when the run settles).
    bounds: u64,
    /// The page cache read just before the first bound (the load's, which ran with no
    /// limit).
    before_first_bound_file_bytes: u64,
    /// The largest shared memory mapped but not yet touched at a bound, counted as own
    /// memory (`CgroupMemory::untouched_shared_bytes`, servers/managed.rs): until the
    /// server touches it, the page cache may exceed `--os-cache` by up to this much.
    untouched_shared_max_bytes: u64,
}

/// How a server starts beyond its flags ([`ServerRun::open_with`]).
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// Start from this saved data directory ([`ServerRun::save_loaded`]).
    pub restore_from: Option<PathBuf>,
    /// Heap and index fillfactor (`--fillfactor`; `innodb_fill_factor` for MariaDB).
    pub fillfactor: Option<u8>,
}

/// A phase's figures on a real server, from a [`ServerMark`] to a snapshot: the server's
/// counters in the schema's terms with the device fields from the FUSE device, the
/// device's counts by file class and process and per second.
struct Measured {
    /// The snapshot at the end.
    after: Snapshot,
    counters: Snapshot,
    /// The names in `counters` that are state values.
    state_counters: Vec<String>,
    f: SchemaFigures,
    device: Option<DeviceCounts>,
    by_file_class: BTreeMap<String, FileIo>,
    by_process: BTreeMap<String, FileIo>,
    per_second: Vec<SecondIo>,
}

/// A mark before the measured phase: the server's counters and, on the FUSE device, the
/// device's.
pub struct ServerMark {
    counters: Snapshot,
    device: Option<DeviceCounts>,
    blocks: Option<BlockMap>,
    /// File-system mode: the class of each file on the device at the mark (for the time
    /// series' `device_blocks`; named once, as PostgreSQL's take a catalog query).
    classes: BTreeMap<String, String>,
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
    /// the FUSE device ([`fuse_device_of`]) with `bandwidth` MiB/s per direction.
    ///
    /// Errors: a machine that cannot mount the FUSE device ([`crate::UsageError`], exit 2,
    /// naming what to install); the server failing to start or accept the connection (the
    /// message names the server).
    pub fn open(kind: ServerKind, c: &CommonArgs, bandwidth: Option<f64>) -> Result<Self> {
        Self::open_restored(kind, c, bandwidth, None)
    }

    /// [`ServerRun::open`], a managed server starting from the data directory saved in
    /// `restore_from` ([`ServerRun::save_loaded`]) when given, with no `initdb` or
    /// `mariadb-install-db` and no new `sbtest` database.
    ///
    /// Errors: as [`ServerRun::open`]; the copy of the saved directory failing.
    pub fn open_restored(
        kind: ServerKind,
        c: &CommonArgs,
        bandwidth: Option<f64>,
        restore_from: Option<PathBuf>,
    ) -> Result<Self> {
        Self::open_with(
            kind,
            &c.server,
            &c.device,
            fuse_device_of(&c.server, &c.device),
            c.out.quiet,
            bandwidth,
            StartOptions {
                restore_from,
                fillfactor: c.fillfactor,
            },
        )
    }

    /// [`ServerRun::open`] from the server and device flags alone, on the FUSE device when
    /// `on_device` (a named experiment puts every managed server there, as the presets
    /// always run on mvcclab's device), with `start`'s saved data directory and fillfactor.
    ///
    /// Errors: as [`ServerRun::open_restored`].
    pub fn open_with(
        kind: ServerKind,
        server_args: &ServerArgs,
        device_args: &DeviceArgs,
        on_device: bool,
        quiet: bool,
        bandwidth: Option<f64>,
        start: StartOptions,
    ) -> Result<Self> {
        let label = kind.design_name();
        let bound_os_cache = server_args.bound_os_cache && kind == ServerKind::PostgreSql;
        let url = server_args
            .urls
            .iter()
            .find(|u| ServerKind::of_url(u) == Some(kind))
            .cloned();
        status(
            quiet,
            &format!(
                "{label}: {} ...",
                match &url {
                    Some(u) => format!("connecting to {u}"),
                    None => format!("starting {} on 127.0.0.1", kind.package()),
                }
            ),
        );
        let device = if on_device && url.is_none() {
            check_fuse().map_err(crate::commands::device::mount_error)?;
            let mut d =
                DeviceConfig::new(bandwidth, device_args.latency_us, device_args.compression);
            d.data_dir = device_args.data_dir.as_ref().map(|p| p.join(kind.name()));
            Some(d)
        } else {
            None
        };
        let server = mvcclab_servers::open(
            kind,
            &ServerOptions {
                url,
                managed: ManagedOptions {
                    buffer_pool_bytes: device_args.buffer_pool,
                    base_dir: server_args.server_dir.clone(),
                    exact_device_io: server_args.exact_device_io,
                    block_device: server_args.fuse_mode == "block-device",
                    rotational: device_args.rotational,
                    device,
                    restore_from: start.restore_from,
                    // No limit while the load runs (it is not measured; under a
                    // page cache of --os-cache a million rows with six random-UUID
                    // indexes loaded at ~250 rows/s); `bound_page_cache` sets one after
                    // the load (settle) and at each measured phase's start (mark).
                    memory_limit_bytes: bound_os_cache.then_some(u64::MAX),
                    ..Default::default()
                },
                fillfactor: start.fillfactor,
            },
        )
        .with_context(|| label.clone())?;
        Ok(ServerRun {
            kind,
            server,
            label,
            bandwidth,
            device_args: device_args.clone(),
            bound_os_cache,
            page_cache: Default::default(),
            fillfactor: start.fillfactor,
            after_load: OnceLock::new(),
        })
    }

    /// The figures from `before` to a snapshot taken now (the server's counters, the
    /// device's by file class, by process and per second).
    fn measured(&self, before: &ServerMark) -> Result<Measured> {
        let (server, label) = (&self.server, &self.label);
        self.note_page_cache();
        let after = server
            .snapshot()
            .with_context(|| format!("{label}: counters"))?;
        let device = match (&before.device, server.device()) {
            (Some(b), Some(d)) => Some(d.counts().since(b)),
            _ => None,
        };
        let mut counters = delta(&**server, &before.counters, &after);
        if let Some(d) = device.as_ref().filter(|d| !d.innodb_pages.is_empty()) {
            let names = server
                .innodb_indexes()
                .with_context(|| format!("{label}: naming InnoDB's indexes"))?;
            innodb_page_counters(&d.innodb_pages, &names, &mut counters);
        }
        let state_counters = counters
            .keys()
            .filter(|k| server.is_state(k))
            .cloned()
            .collect();
        let mut f = figures(self.kind, &counters);
        fill_innodb_page_figures(&mut f, &counters);
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
            let by_file = match (loopdev, &before.blocks, server.device()) {
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
        Ok(Measured {
            after,
            counters,
            state_counters,
            f,
            device,
            by_file_class,
            by_process,
            per_second,
        })
    }

    /// The report's server section without counters, with how the FUSE device measured
    /// it when the server is on it (and, given `device`, the seconds measured and the
    /// daemon's CPU seconds).
    fn server_info(&self, device: Option<&DeviceCounts>) -> ServerInfo {
        let server = &self.server;
        let mut info = server.info();
        if let Some(m) = server.device() {
            let mode = match server.managed().and_then(|s| s.loop_device()) {
                Some(l) => format!(
                    "block-device mode: ext4 on {} (direct I/O, rotational {}, read_ahead_kb \
                     {}) over the mount's device.img; journal and metadata included, blocks \
                     given to files by their extents, the rest fs_metadata",
                    l.device().display(),
                    l.rotational()
                        .map_or("?".into(), |r| u8::from(r).to_string()),
                    l.read_ahead_kb().map_or("?".into(), |k| k.to_string())
                ),
                None => "file-system mode: the server's files are files of the device; no \
                         file-system journal or metadata I/O"
                    .to_string(),
            };
            info.device_io = format!(
                "exact: mvcclab's FUSE device at {} ({mode}), write-through \
                 (no writeback_cache; mount readahead {} KiB, max_ratio {} %), bytes {}{}",
                m.dir().display(),
                m.bdi().map_or("?".into(), |b| b.0.to_string()),
                m.bdi().map_or("?".into(), |b| b.1.to_string()),
                m.config()
                    .data_dir
                    .as_ref()
                    .map_or("in memory".into(), |p| format!("in {}", p.display())),
                device.map_or(String::new(), |d| format!(
                    "; {:.1} s measured, daemon CPU {:.2} s",
                    d.at_s, d.daemon_cpu_s
                ))
            );
        }
        if let Some(m) = server.managed().and_then(|m| m.cgroup_memory()) {
            let seen = self.note_page_cache();
            info.device_io.push_str(&format!(
                "; memory cgroup (v1): page cache bounded to --os-cache {} bytes, no limit \
                 during the load, the limit set after it and at each measured phase's start \
                 ({} times) to the server's own memory then \
                 (usage - active_file - inactive_file; last {} bytes) + --os-cache (last \
                 limit {} bytes); page cache (active_file + inactive_file) at most {} bytes \
                 in the phases' readings, {} at the end; shared memory {} bytes, rss {} bytes \
                 at the end; limit hit {} times",
                self.device_args.os_cache,
                seen.bounds,
                seen.own_bytes,
                seen.limit_bytes,
                seen.max_file_bytes,
                m.file_bytes,
                m.shmem_bytes,
                m.rss_bytes,
                m.failcnt
            ));
            for (k, v) in [
                (
                    "page_cache_before_first_bound_bytes",
                    seen.before_first_bound_file_bytes,
                ),
                ("page_cache_max_bytes", seen.max_file_bytes),
                ("own_bytes", seen.own_bytes),
                (
                    "untouched_shared_max_bytes",
                    seen.untouched_shared_max_bytes,
                ),
                ("phase_limit_bytes", seen.limit_bytes),
            ] {
                info.settings
                    .insert(format!("memory_cgroup_{k}"), v.to_string());
            }
            // The limit it started (and loaded) with.
            if let Some((k, v)) = self.server.managed().and_then(|m| {
                m.settings
                    .iter()
                    .find(|(k, _)| k == "memory_cgroup_limit_bytes")
            }) {
                info.settings.insert(k.clone(), v.clone());
            }
        }
        info
    }

    /// Reads the bounded server's page cache into `page_cache` (after the first bound:
    /// the load's cache before it is not the measured phases'); what was seen so far.
    fn note_page_cache(&self) -> PageCacheSeen {
        let mut seen = self.page_cache.lock().unwrap_or_else(|e| e.into_inner());
        if self.bound_os_cache && seen.bounds > 0 {
            if let Some(m) = self.server.managed().and_then(|m| m.cgroup_memory()) {
                seen.max_file_bytes = seen.max_file_bytes.max(m.file_bytes);
                seen.last_file_bytes = m.file_bytes;
            }
        }
        *seen
    }

    /// With `--bound-os-cache`: sets the memory cgroup's limit so that the page cache
    /// left beside the server's own memory now is `--os-cache`
    /// ([`ManagedServer::bound_page_cache`]), as the preset's emulated OS cache is.
    ///
    /// Errors: the cgroup's files unreadable or the limit refused.
    fn bound_page_cache(&self) -> Result<()> {
        if !self.bound_os_cache {
            return Ok(());
        }
        let Some(m) = self.server.managed() else {
            return Ok(());
        };
        let label = &self.label;
        if let Some((mem, limit)) = m
            .bound_page_cache(self.device_args.os_cache)
            .with_context(|| format!("{label}: bounding the page cache to --os-cache"))?
        {
            let mut seen = self.page_cache.lock().unwrap_or_else(|e| e.into_inner());
            if seen.bounds == 0 {
                seen.before_first_bound_file_bytes = mem.file_bytes;
            }
            seen.own_bytes = mem.own_bytes();
            seen.untouched_shared_max_bytes = seen
                .untouched_shared_max_bytes
                .max(mem.untouched_shared_bytes);
            seen.limit_bytes = limit;
            seen.bounds += 1;
        }
        self.note_page_cache();
        Ok(())
    }

    /// The report's device section (`device`: the device's counts of the measured phase,
    /// when on the FUSE device).
    fn device_info(&self, device: Option<&DeviceCounts>) -> DeviceInfo {
        let on_device = self.server.device().is_some();
        let a = &self.device_args;
        let bandwidth = self.bandwidth;
        let utilisation = match (device, bandwidth) {
            (Some(d), Some(bw)) if d.at_s > 0.0 => {
                let busiest = d.total.io.write_bytes.max(d.total.io.read_bytes) as f64;
                Some(busiest / (bw * 1048576.0 * d.at_s))
            }
            _ => None,
        };
        DeviceInfo {
            page_size_bytes: self.kind.page_size_bytes(),
            buffer_pool_bytes: a.buffer_pool,
            os_cache_bytes: if self.bound_os_cache { a.os_cache } else { 0 },
            bandwidth_mib_s: if on_device { bandwidth } else { None },
            latency_us: if on_device { a.latency_us } else { None },
            compression: if on_device {
                a.compression
            } else {
                Compression::None
            },
            rotational: on_device && a.rotational,
            data_dir: if on_device {
                a.data_dir
                    .as_ref()
                    .map(|p| p.join(self.kind.name()).display().to_string())
            } else {
                None
            },
            fuse_daemon_cpu_s: device.map(|d| d.daemon_cpu_s),
            utilisation,
            utilisation_under_90pct: utilisation.map(|u| u < 0.9),
        }
    }

    /// Sets PostgreSQL's `autovacuum` for the whole server, as seed 000's step 1 does:
    /// `ALTER SYSTEM SET autovacuum`, then `pg_reload_conf()` (the setting takes a reload,
    /// not a restart; PostgreSQL 15 manual, "Automatic Vacuuming"). Off stops the launcher
    /// from starting workers, except against wraparound; pruning on access
    /// (pruneheap.c `heap_page_prune_opt`) and a manual VACUUM go on. A no-op on other
    /// servers.
    ///
    /// Errors: the server's (not a superuser on a `--url` server).
    pub fn set_autovacuum(&self, on: bool) -> Result<()> {
        if self.kind != ServerKind::PostgreSql {
            return Ok(());
        }
        let label = &self.label;
        let v = if on { "on" } else { "off" };
        for q in [
            format!("ALTER SYSTEM SET autovacuum = {v}"),
            "SELECT pg_reload_conf()".to_string(),
        ] {
            self.server
                .execute_sql(&q)
                .with_context(|| format!("{label}: autovacuum {v}"))?;
        }
        // The postmaster passes the reload on to the launcher at once; give it a moment
        // before the first phase (its first worker would come a naptime later anyway).
        std::thread::sleep(std::time::Duration::from_millis(200));
        Ok(())
    }

    /// The space now: pages from the server's `space.*` state counters in `counters`
    /// (a snapshot, or a delta, which keeps state values), the device's `compression`
    /// totals, and, on the FUSE device, its bytes by file kind
    /// (`mvcclab_servers::file_class::space_by_kind`).
    fn space_of(&self, counters: &Snapshot, compression: CompressionTotals) -> Space {
        let pages = |k: &str| counters.get(k).copied().unwrap_or(0.0) as u64;
        let page = self.kind.page_size_bytes();
        let mut space = Space::new(
            (pages("space.table_pages"), pages("space.index_pages")),
            0,
            page,
            compression,
        );
        for (k, v) in counters {
            if let Some(t) = k.strip_prefix("space.table_pages.") {
                space.pages_by_table.entry(t.to_string()).or_default().0 = *v as u64;
            } else if let Some(t) = k.strip_prefix("space.index_pages.") {
                space.pages_by_table.entry(t.to_string()).or_default().1 = *v as u64;
            }
        }
        if let Some(m) = self.server.device() {
            space.by_file_kind =
                mvcclab_servers::file_class::space_by_kind(&m.compression_by_path());
        }
        space
    }

    /// Runs one SQL statement on the server's admin connection, outside any transaction
    /// block (an experiment's own DDL and single statements); returns the rows it changed.
    ///
    /// Errors: the server's, naming the server and the statement.
    pub fn execute_sql(&self, sql: &str) -> Result<u64> {
        self.server
            .execute_sql(sql)
            .with_context(|| format!("{}: {sql}", self.label))
    }

    /// The engine behind this run.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The data directory of the server mvcclab started (`None` with `--url`).
    pub fn data_dir(&self) -> Option<&Path> {
        self.server.managed().map(|m| m.data_dir())
    }

    /// The server's counters (and the FUSE device's) now.
    fn mark_now(&self) -> Result<ServerMark> {
        let label = &self.label;
        self.bound_page_cache()?;
        let counters = self
            .server
            .snapshot()
            .with_context(|| format!("{label}: counters"))?;
        let device = self.server.device().map(|d| d.counts());
        let block_mode = self
            .server
            .managed()
            .and_then(|m| m.loop_device())
            .is_some();
        let classes = match &device {
            Some(d) if !block_mode => {
                let paths: Vec<&str> = d.by_file.keys().map(String::as_str).collect();
                self.server
                    .file_classes(&paths)
                    .with_context(|| format!("{label}: naming the files on the device"))?
            }
            _ => BTreeMap::new(),
        };
        Ok(ServerMark {
            counters,
            device,
            blocks: self.server.device().map(|d| d.block_map()),
            classes,
        })
    }

    /// The preset that models the server, named `real:NAME`. MyRocks has no preset yet:
    /// its `design` is the innodb preset's switches (MariaDB's SQL layer and defaults;
    /// nothing of the LSM tree), a placeholder the report says is one.
    fn design(&self) -> Result<DesignConfig> {
        let mut design = resolve_design(self.kind.preset().unwrap_or("innodb"), &[])?;
        design.name = self.label.clone();
        if let Some(f) = self.fillfactor {
            // What the server was given (ServerOptions::fillfactor), in the preset's terms.
            if self.kind == ServerKind::PostgreSql {
                design.fillfactor = f;
            }
            design.index_fillfactor = f;
        }
        Ok(design)
    }
}

/// `v` as an SQL literal, for the values the experiments' own tables hold.
///
/// Errors: another kind of value.
fn sql_literal(v: &Value) -> Result<String> {
    match v {
        Value::Integer(i) => Ok(i.to_string()),
        Value::BigInt(i) => Ok(i.to_string()),
        Value::Text(s) => Ok(format!("'{}'", s.replace('\'', "''"))),
        Value::Null => Ok("NULL".into()),
        other => anyhow::bail!("value {other:?} is not supported on a real server here"),
    }
}

/// The SQL type of column type `t` (both dialects), for the types the experiments' own
/// tables use.
///
/// Errors: another type.
fn sql_type(t: &ColumnType) -> Result<String> {
    match t {
        ColumnType::Integer => Ok("INTEGER".into()),
        ColumnType::BigInt => Ok("BIGINT".into()),
        ColumnType::Varchar(n) => Ok(format!("VARCHAR({n})")),
        ColumnType::Char(n) => Ok(format!("CHAR({n})")),
        other => anyhow::bail!("column type {other:?} is not supported on a real server here"),
    }
}

/// `CREATE TABLE` and `CREATE INDEX` statements of `def` (`engine`: MariaDB's `ENGINE=`
/// clause, or none).
///
/// Errors: a column type [`sql_type`] refuses.
fn create_statements(def: &TableDef, engine: Option<&str>) -> Result<Vec<String>> {
    let cols: Vec<String> = def
        .columns
        .iter()
        .map(|c| {
            Ok(format!(
                "{} {}{}",
                c.name,
                sql_type(&c.ty)?,
                if c.nullable { "" } else { " NOT NULL" }
            ))
        })
        .collect::<Result<_>>()?;
    let pk: Vec<&str> = def
        .primary_key
        .iter()
        .map(|&i| def.columns[i].name.as_str())
        .collect();
    let mut out = vec![format!(
        "CREATE TABLE {} ({}, PRIMARY KEY ({})){}",
        def.name,
        cols.join(", "),
        pk.join(", "),
        engine.map_or(String::new(), |e| format!(" ENGINE={e}"))
    )];
    for ix in &def.indexes {
        let cols: Vec<&str> = ix
            .columns
            .iter()
            .map(|&i| def.columns[i].name.as_str())
            .collect();
        out.push(format!(
            "CREATE {}INDEX {} ON {} ({})",
            if ix.unique { "UNIQUE " } else { "" },
            ix.name,
            def.name,
            cols.join(", ")
        ));
    }
    Ok(out)
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

impl ServerRun {
    /// Stops the loaded and settled server (its shutdown checkpoint) and copies its data
    /// directory to `to` for [`ServerRun::open_restored`]; then stops it for good
    /// (unmounting its devices).
    ///
    /// Errors: a server given by `--url` (mvcclab cannot restart it); the stop or the copy
    /// failing.
    pub fn save_loaded(mut self, to: &Path) -> Result<()> {
        let label = self.label.clone();
        let m = self.server.managed_mut().ok_or_else(|| {
            anyhow::anyhow!("{label}: a server given by --url cannot be saved and restored")
        })?;
        m.save_data(to)
            .with_context(|| format!("{label}: saving the loaded data directory"))?;
        m.stop().with_context(|| format!("{label}: stopping"))?;
        Ok(())
    }
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

    fn server_pid(&self) -> Option<u32> {
        self.server.managed().and_then(|m| m.pid())
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
        // The loaded tables' space after the checkpoint: the run's `space.after_load`.
        let counters = self
            .server
            .snapshot()
            .with_context(|| format!("{label}: counters after the load"))?;
        let compression = self
            .server
            .device()
            .map(|d| d.counts().compression)
            .unwrap_or_default();
        let _ = self.after_load.set(self.space_of(&counters, compression));
        // The load ran with no page-cache limit; the warm-up runs with the bound, as the
        // preset's warm-up runs with its OS cache (the mark sets it again before the
        // measured phase).
        self.bound_page_cache()?;
        // Setup ran unthrottled; the device is throttled from the warm-up on.
        if let Some(d) = self.server.device() {
            d.set_throttling(true);
        }
        Ok(())
    }

    fn mark_tables(&self, _tables: &[String]) -> Result<ServerMark> {
        // The server's counters are summed over sysbench's tables and the experiments'
        // own (servers/src/postgresql.rs `TABLES`).
        self.mark_now()
    }

    fn mark(&self, _c: &CommonArgs) -> Result<ServerMark> {
        self.mark_now()
    }

    /// The server's counters now ([`RealServer::sample`], no waiting), since `before`,
    /// mapped to causes as the report maps them; on the FUSE device its device fields are
    /// the device's, and `device_blocks` its 4 KiB blocks by `file CLASS` (file-system mode;
    /// classes named at the mark, a file made since by its path alone) and by
    /// `process KIND` — two views of the same blocks, as the device counts files and
    /// processes apart (series.rs).
    fn reading(&self, before: &ServerMark) -> Result<CounterReading> {
        let label = &self.label;
        let now = self
            .server
            .sample()
            .with_context(|| format!("{label}: counters"))?;
        self.note_page_cache();
        let counters = delta(&*self.server, &before.counters, &now);
        let mut f = figures(self.kind, &counters);
        let mut device_blocks: BTreeMap<String, BlocksRw> = BTreeMap::new();
        if let (Some(b), Some(d)) = (&before.device, self.server.device()) {
            let phase = d.counts().since(b);
            f.total = with_device_fields(f.total, &phase.total.io);
            let mut add = |key: String, io: &FileIo| {
                let e = device_blocks.entry(key).or_default();
                e.read_blocks_4k += io.io.read_blocks_4k;
                e.write_blocks_4k += io.io.write_blocks_4k;
            };
            if !before.classes.is_empty() {
                // Files made since the mark (a new WAL segment), named in one call.
                let new: Vec<&str> = phase
                    .by_file
                    .keys()
                    .filter(|p| !before.classes.contains_key(*p))
                    .map(String::as_str)
                    .collect();
                let named_now = if new.is_empty() {
                    BTreeMap::new()
                } else {
                    self.server.file_classes(&new).unwrap_or_default()
                };
                for (path, io) in &phase.by_file {
                    let class = before
                        .classes
                        .get(path)
                        .or_else(|| named_now.get(path))
                        .map_or("other", String::as_str);
                    add(format!("file {class}"), io);
                }
            }
            for (kind, io) in &phase.by_process {
                add(format!("process {kind}"), io);
            }
        }
        Ok(CounterReading {
            total: f.total,
            counters: Counters {
                by_cause: f.by_cause,
            },
            server: counters,
            device_blocks,
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
        let label = &self.label;
        let m = self.measured(&before)?;
        let (f, device) = (m.f, m.device);
        let txns = results.transactions;
        let io = Io {
            per_txn: per(&f.total, txns),
            total: f.total,
            per_txn_by_cause: blocks_per_txn_by_cause(&f.by_cause, txns),
            by_cause: f.by_cause.clone(),
            per_op: BTreeMap::new(),
            by_file_class: m.by_file_class,
            by_process: m.by_process,
            per_second: m.per_second,
        };
        let wal_by_record = self
            .server
            .wal_by_record(&before.counters, &m.after)
            .with_context(|| format!("{label}: WAL record statistics"))?;
        let mut engine = engine_report(
            &io.total,
            f.tables,
            f.undo,
            read_events(wkind, &results),
            wal_by_record,
        );
        let mut info = self.server_info(device.as_ref());
        info.state_counters = m.state_counters;
        info.counters = m.counters;
        engine.buffer_cache = server_buffer_cache(&info.counters);
        info.not_measured = f.not_measured.clone();
        let compression_totals = device.as_ref().map(|d| d.compression).unwrap_or_default();
        let device_info = self.device_info(device.as_ref());
        let design = self.design()?;
        let storage_config = serde_json::to_value(&info.settings)?;
        let target = self.kind.name().to_string();
        let cpu = cpu_report(self.kind, &*self.server, &info.counters, &results);
        let mut space = self.space_of(&info.counters, compression_totals);
        space.after_load = self.after_load.get().cloned().map(Box::new);
        drop(self);
        Ok(RunReport {
            target,
            design,
            workload: WorkloadInfo {
                name: wkind.name().into(),
                options: opts,
            },
            driver: driver_info(c),
            device: device_info,
            storage_config,
            space,
            results: Results::new(results),
            io,
            engine,
            server: Some(info),
            cpu,
            cpu_seconds: None,
            metadata: None,
        })
    }

    fn describe(&self) -> (DesignConfig, DeviceInfo, Option<ServerInfo>) {
        let design = self.design().unwrap_or_else(|_| {
            let mut d = DesignConfig::postgres();
            d.name = self.label.clone();
            d
        });
        (design, self.device_info(None), Some(self.server_info(None)))
    }

    fn load_table(&self, def: &TableDef, rows: &mut dyn Iterator<Item = Vec<Value>>) -> Result<()> {
        let label = &self.label;
        let exec = |q: &str| {
            self.server
                .execute_sql(q)
                .with_context(|| format!("{label}: loading {}", def.name))
        };
        let engine = match self.kind {
            ServerKind::PostgreSql => None,
            ServerKind::MariaDb => Some("InnoDB"),
            ServerKind::MyRocks => Some("ROCKSDB"),
        };
        exec(&format!("DROP TABLE IF EXISTS {}", def.name))?;
        for q in create_statements(def, engine)? {
            exec(&q)?;
        }
        // One multi-row INSERT per 1,000 rows, each its own transaction (as the embedded
        // load commits every 1,000 rows).
        let mut batch: Vec<String> = Vec::new();
        let flush = |batch: &mut Vec<String>| -> Result<()> {
            if !batch.is_empty() {
                exec(&format!(
                    "INSERT INTO {} VALUES {}",
                    def.name,
                    batch.join(", ")
                ))?;
                batch.clear();
            }
            Ok(())
        };
        for row in rows {
            let vals: Vec<String> = row.iter().map(sql_literal).collect::<Result<_>>()?;
            batch.push(format!("({})", vals.join(", ")));
            if batch.len() == 1000 {
                flush(&mut batch)?;
            }
        }
        flush(&mut batch)?;
        // As sysbench's load on this server (servers/src/postgresql.rs `prepare`):
        // statistics, and for PostgreSQL the visibility map set and no insert-triggered
        // autovacuum left for the first measured phase.
        match self.kind {
            ServerKind::PostgreSql => {
                exec("SELECT pg_stat_force_next_flush()")?;
                exec(&format!("VACUUM ANALYZE {}", def.name))?;
            }
            ServerKind::MariaDb | ServerKind::MyRocks => {
                exec(&format!("ANALYZE TABLE {}", def.name))?;
            }
        }
        self.end_phase()
    }

    fn update_by_key(&self, def: &TableDef, id: i32, col: usize, v: &Value) -> Result<bool> {
        let pk = def
            .primary_key
            .first()
            .map(|&i| def.columns[i].name.as_str())
            .context("a table without a primary key")?;
        let q = format!(
            "UPDATE {} SET {} = {} WHERE {pk} = {id}",
            def.name,
            def.columns[col].name,
            sql_literal(v)?
        );
        let n = self
            .server
            .execute_sql(&q)
            .with_context(|| self.label.clone())?;
        Ok(n > 0)
    }

    fn end_phase(&self) -> Result<()> {
        let label = &self.label;
        self.server
            .settle(false)
            .with_context(|| format!("{label}: checkpoint closing the phase"))?;
        // Setup ran unthrottled; the device is throttled from the first phase on.
        if let Some(d) = self.server.device() {
            d.set_throttling(true);
        }
        Ok(())
    }

    fn collect_garbage(&self, table: &str) -> Result<()> {
        let label = &self.label;
        self.server
            .collect_garbage(table)
            .with_context(|| format!("{label}: garbage collection of {table}"))
    }

    fn phase_report(
        &self,
        before: ServerMark,
        name: &str,
        ops: u64,
        elapsed_s: f64,
    ) -> Result<PhaseReport> {
        let Measured {
            counters,
            state_counters,
            f,
            by_file_class,
            by_process,
            ..
        } = self.measured(&before)?;
        Ok(PhaseReport {
            name: name.to_string(),
            ops,
            elapsed_s,
            per_op: PerOpIo::of(&f.total, ops),
            per_op_by_cause: f
                .by_cause
                .iter()
                .map(|(c, cc)| (*c, PerOpIo::of(cc, ops)))
                .collect(),
            versions_traversed_per_op: 0.0,
            total: f.total,
            by_cause: f.by_cause,
            tables: f.tables,
            undo: f.undo,
            pages: f.pages,
            timeseries: Vec::new(),
            server: Some(PhaseServer {
                counters,
                state_counters,
                not_measured: {
                    let mut n = f.not_measured;
                    n.push("versions_traversed_per_op".into());
                    n
                },
                by_file_class,
                by_process,
            }),
        })
    }
}

/// The device's InnoDB page counts of a phase (`mvcclab_devfs::DeviceCounts::innodb_pages`)
/// as server counters: `innodb_pages.<table/index>.<field>` for each index `names` knows
/// (an unknown id as `index ID`, a page that is not an index page as `type TYPE`), and
/// their sums by class, `innodb_pages.<class>.<field>` (`table`, `index`, `system`);
/// fields `pages_read`, `pages_written`, `leaf_pages_read`, `leaf_pages_written`.
fn innodb_page_counters(
    pages: &BTreeMap<String, mvcclab_devfs::PageIo>,
    names: &BTreeMap<u64, (String, &'static str)>,
    counters: &mut Snapshot,
) {
    for (key, io) in pages {
        let (name, class) = key
            .strip_prefix("index ")
            .and_then(|id| id.parse::<u64>().ok())
            .and_then(|id| names.get(&id))
            .map_or((key.clone(), "system"), |(n, c)| (n.clone(), *c));
        for (field, v) in [
            ("pages_read", io.pages_read),
            ("pages_written", io.pages_written),
            ("leaf_pages_read", io.leaf_pages_read),
            ("leaf_pages_written", io.leaf_pages_written),
        ] {
            *counters
                .entry(format!("innodb_pages.{name}.{field}"))
                .or_default() += v as f64;
            *counters
                .entry(format!("innodb_pages.{class}.{field}"))
                .or_default() += v as f64;
        }
    }
}

/// A MariaDB server's per-table page reads and writes from the device's counts
/// ([`innodb_page_counters`]): the workload tables' clustered indexes as
/// `heap_blks_read` / `heap_blks_written`, their other indexes as `idx_blks_read` /
/// `idx_blks_written`, in pages, which are then measured; nothing without those counts.
fn fill_innodb_page_figures(f: &mut SchemaFigures, counters: &Snapshot) {
    // innodb_page_counters writes every field of a class together.
    if !counters.contains_key("innodb_pages.table.pages_read") {
        return;
    }
    let v = |k: &str| counters.get(k).copied().unwrap_or(0.0).max(0.0).round() as u64;
    f.tables.heap_blks_read = v("innodb_pages.table.pages_read");
    f.tables.heap_blks_written = v("innodb_pages.table.pages_written");
    f.tables.idx_blks_read = v("innodb_pages.index.pages_read");
    f.tables.idx_blks_written = v("innodb_pages.index.pages_written");
    let filled = [
        "engine.tables.heap_blks_read",
        "engine.tables.heap_blks_written",
        "engine.tables.idx_blks_read",
        "engine.tables.idx_blks_written",
    ];
    f.not_measured.retain(|n| !filled.contains(&n.as_str()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use mvcclab_devfs::BlockIo;

    #[test]
    fn innodb_page_counts_name_indexes_and_fill_the_table_figures() {
        let io = |r, w| mvcclab_devfs::PageIo {
            pages_read: r,
            pages_written: w,
            leaf_pages_read: r,
            leaf_pages_written: w,
        };
        let pages: BTreeMap<String, mvcclab_devfs::PageIo> = [
            ("index 23".to_string(), io(600, 110)),
            ("index 24".to_string(), io(50, 60)),
            ("index 99".to_string(), io(1, 0)),
            ("type 3".to_string(), io(0, 7)),
        ]
        .into_iter()
        .collect();
        let names: BTreeMap<u64, (String, &'static str)> = [
            (23, ("sbtest/sbtest1/PRIMARY".to_string(), "table")),
            (24, ("sbtest/sbtest1/k_1".to_string(), "index")),
        ]
        .into_iter()
        .collect();
        let mut counters = Snapshot::new();
        innodb_page_counters(&pages, &names, &mut counters);
        assert_eq!(
            counters["innodb_pages.sbtest/sbtest1/k_1.pages_written"],
            60.0
        );
        assert_eq!(counters["innodb_pages.index 99.pages_read"], 1.0);
        assert_eq!(counters["innodb_pages.system.pages_written"], 7.0);
        assert_eq!(counters["innodb_pages.system.pages_read"], 1.0);
        let mut f = SchemaFigures {
            not_measured: vec![
                "engine.tables.heap_blks_read".into(),
                "engine.tables.idx_blks_written".into(),
                "engine.tables.heap_blks_hit".into(),
            ],
            ..Default::default()
        };
        fill_innodb_page_figures(&mut f, &counters);
        assert_eq!(
            (
                f.tables.heap_blks_read,
                f.tables.heap_blks_written,
                f.tables.idx_blks_read,
                f.tables.idx_blks_written
            ),
            (600, 110, 50, 60)
        );
        assert_eq!(
            f.not_measured,
            vec!["engine.tables.heap_blks_hit".to_string()]
        );
        let mut without = SchemaFigures::default();
        fill_innodb_page_figures(&mut without, &Snapshot::new());
        assert_eq!(
            without.tables.heap_blks_written, 0,
            "no device counts, nothing filled"
        );
    }

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
