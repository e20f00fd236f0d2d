//! One path from the flags to the engine's configuration: the buffer pool's frames for
//! every command ([`buffer_pool_frames`]: `--buffer-pool` for a design, `--buffer-pool`
//! on the bare storage of `storage-bench`, crashtest's `--frames`), and a design with the
//! memory and device flags as a database configuration ([`database_config`],
//! [`open_database`]).

use super::args::DeviceArgs;
use crate::error::engine_error;
use crate::result::DeviceInfo;
use anyhow::{bail, Context, Result};
use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{Device, ThrottleConfig};
use mvcclab_engine::page::PageSize;
use mvcclab_engine::storage::{Backing, StorageConfig, TornPageProtection};
use std::sync::Arc;

/// How a command gives the buffer pool's size.
#[derive(Clone, Copy, Debug)]
pub enum PoolSize<'a> {
    /// `--buffer-pool` bytes for a design (`run`, `compare`, the experiments): the
    /// design's own rule, [`DesignConfig::buffer_pool_frames`] (InnoDB's 8 MiB extents
    /// with their block descriptors; at least 16 frames).
    Design(&'a DesignConfig, u64),
    /// `--buffer-pool` bytes on the storage foundation alone (`storage-bench`): whole
    /// pages of the page size, at least 2.
    Pages(PageSize, u64),
    /// A count of frames (crashtest's `--frames`), at least 16.
    Frames(usize),
}

/// The buffer pool frames of `size`.
///
/// Errors: `--buffer-pool` holds fewer than 2 pages on the bare storage (the message
/// names the flag and the smallest size).
pub fn buffer_pool_frames(size: PoolSize<'_>) -> Result<usize> {
    match size {
        PoolSize::Design(design, bytes) => Ok(design.buffer_pool_frames(bytes)),
        PoolSize::Pages(page_size, bytes) => {
            let page_bytes = page_size.bytes() as u64;
            let frames = (bytes / page_bytes) as usize;
            if frames < 2 {
                bail!(
                    "--buffer-pool {} B holds fewer than 2 pages of {} B; give at least {} B",
                    bytes,
                    page_bytes,
                    2 * page_bytes
                );
            }
            Ok(frames)
        }
        PoolSize::Frames(n) => Ok(n.max(16)),
    }
}

/// The database configuration of `design` with the memory and device flags `c` and the
/// device bandwidth `bandwidth`, and the report's device section. The data directory of a
/// design is `DIR/<design name>` under `--data-dir DIR` (not cleared here).
///
/// Errors: none for a design (see [`buffer_pool_frames`]).
pub fn database_config(
    design: &DesignConfig,
    c: &DeviceArgs,
    bandwidth: Option<f64>,
) -> Result<(DatabaseConfig, DeviceInfo)> {
    let mut cfg = DatabaseConfig::new(design.clone());
    let page = design.page_size.bytes() as u64;
    cfg.storage.buffer_pool.frames = buffer_pool_frames(PoolSize::Design(design, c.buffer_pool))?;
    cfg.storage.os_cache.size_bytes = if design.os_page_cache { c.os_cache } else { 0 };
    cfg.storage.nvme.compression = c.compression;
    cfg.storage.nvme.rotational = c.rotational;
    cfg.storage.nvme.throttle = ThrottleConfig {
        read_mib_s: bandwidth,
        write_mib_s: bandwidth,
        latency_us: c.latency_us,
        queue_depth: None,
    };
    if c.checkpoints_as_managed_postgresql {
        use mvcclab_servers::managed::{PG_CHECKPOINT_TIMEOUT_S, PG_MAX_WAL_SIZE_BYTES};
        let cp = &mut cfg.storage.checkpoint;
        cp.interval_ms = Some(PG_CHECKPOINT_TIMEOUT_S * 1000);
        if design.torn_page_protection == TornPageProtection::FullPageWrites {
            cp.wal_bytes = Some(PG_MAX_WAL_SIZE_BYTES);
        }
    }
    if c.no_background {
        let quiet = StorageConfig::without_background(cfg.storage.buffer_pool.frames);
        cfg.storage.buffer_pool.page_cleaner.enabled = false;
        cfg.storage.checkpoint = quiet.checkpoint;
        cfg.storage.wal_writer_interval_ms = None;
    }
    let mut data_dir = None;
    if let Some(dir) = &c.data_dir {
        let d = dir.join(&design.name);
        data_dir = Some(d.display().to_string());
        cfg.storage.backing = Backing::Directory {
            path: d,
            direct: false,
        };
    }
    let device = DeviceInfo {
        page_size_bytes: page,
        buffer_pool_bytes: cfg.storage.buffer_pool.frames as u64 * page,
        os_cache_bytes: cfg.storage.os_cache.size_bytes,
        bandwidth_mib_s: bandwidth,
        latency_us: c.latency_us,
        compression: c.compression,
        rotational: c.rotational,
        data_dir,
        fuse_daemon_cpu_s: None,
        utilisation: None,
        utilisation_under_90pct: None,
    };
    Ok((cfg, device))
}

/// The database for one run: the design with the run's memory and device settings
/// ([`database_config`]), its data directory cleared first. Returns the open database
/// and its storage settings as JSON (for the report).
///
/// Errors: a data directory that cannot be cleared; the engine refusing the settings
/// ([`crate::UsageError`]) or failing to open (see [`engine_error`]).
pub fn open_database(
    design: &DesignConfig,
    c: &DeviceArgs,
    bandwidth: Option<f64>,
) -> Result<(Arc<Database>, serde_json::Value, DeviceInfo)> {
    open_database_on(design, c, bandwidth, None)
}

/// [`open_database`] on `device` instead of the backing of `--data-dir` (or memory) when
/// given: a [`mvcclab_engine::device::CowDevice`] over a saved load (bench/loaded.rs),
/// whose database opens as after a clean shutdown. The report's `data_dir` is then empty.
///
/// Errors: as [`open_database`].
pub fn open_database_on(
    design: &DesignConfig,
    c: &DeviceArgs,
    bandwidth: Option<f64>,
    device: Option<Arc<dyn Device>>,
) -> Result<(Arc<Database>, serde_json::Value, DeviceInfo)> {
    let (mut cfg, mut info) = database_config(design, c, bandwidth)?;
    // The report's storage settings name the memory backing: a copy-on-write device is
    // one, holding a saved load.
    let storage_json = serde_json::to_value(&cfg.storage)?;
    if let Some(d) = device {
        cfg.storage.backing = Backing::shared(d);
        info.data_dir = None;
    }
    let device = info;
    if let Backing::Directory { path: d, .. } = &cfg.storage.backing {
        if d.exists() {
            std::fs::remove_dir_all(d).with_context(|| format!("clearing {}", d.display()))?;
        }
    }
    let db = Database::open(cfg).map_err(engine_error)?;
    Ok((Arc::new(db), storage_json, device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use mvcclab_engine::storage::CheckpointConfig;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        device: DeviceArgs,
    }

    fn checkpoints(preset: &str, as_managed: bool) -> CheckpointConfig {
        let mut device = Flags::parse_from(["t"]).device;
        device.checkpoints_as_managed_postgresql = as_managed;
        let design = crate::design_arg::resolve_design(preset, &[]).unwrap();
        database_config(&design, &device, None)
            .unwrap()
            .0
            .storage
            .checkpoint
    }

    /// Issue 24 c: the postgres preset beside a managed PostgreSQL takes its
    /// checkpoint_timeout (1 day) and max_wal_size (100 GB); innodb loses the timed
    /// checkpoint InnoDB does not have and keeps its WAL-volume one; by default both keep
    /// PostgreSQL's 5 min and 1 GiB.
    #[test]
    fn presets_beside_servers_take_the_managed_checkpoint_schedule() {
        let default = CheckpointConfig::default();
        assert_eq!(checkpoints("postgres", false), default);
        assert_eq!(checkpoints("innodb", false), default);
        assert_eq!(
            checkpoints("postgres", true),
            CheckpointConfig {
                interval_ms: Some(86_400_000),
                wal_bytes: Some(100 << 30),
            }
        );
        assert_eq!(
            checkpoints("innodb", true),
            CheckpointConfig {
                interval_ms: Some(86_400_000),
                wal_bytes: default.wal_bytes,
            }
        );
    }
}
