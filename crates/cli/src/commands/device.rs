//! `mvcclab device mount DIR`: the virtual NVMe device as a FUSE file system for hand use
//! (any program's files on the presets' device model). It stays mounted until Ctrl-C or
//! SIGTERM, then prints what was counted (JSON on stdout) and unmounts.

use crate::bench::parse_bandwidth;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mvcclab_devfs::{DevMount, DeviceConfig, MountError};
use mvcclab_engine::device::Compression;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `mvcclab device ...`
#[derive(Args, Debug)]
pub struct DeviceArgs {
    #[command(subcommand)]
    command: DeviceCommand,
}

#[derive(Subcommand, Debug)]
enum DeviceCommand {
    /// Mount the device at DIR (FUSE, as root; needs /dev/fuse and fusermount3 from
    /// Debian's fuse3). Every read, write and fsync goes through the presets' device model:
    /// throttle, latency, transparent compression, counting in 4 KiB blocks and requests.
    /// Ctrl-C prints the counts (total, per file, per process, per second; JSON) and
    /// unmounts. A stale mount at DIR from a killed run is detached first.
    Mount(MountArgs),
}

/// Flags of `device mount`.
#[derive(Args, Debug)]
pub struct MountArgs {
    /// Mount point (created if absent).
    dir: PathBuf,
    /// Device bandwidth in MiB/s, read and write (unset = unthrottled).
    #[arg(long, value_parser = parse_bandwidth)]
    bandwidth: Option<f64>,
    /// Device latency per request in µs.
    #[arg(long)]
    latency_us: Option<u64>,
    /// Transparent compression of the device: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<Compression>())]
    compression: Compression,
    /// Keep the files' bytes in this directory instead of memory (its `f????????` files
    /// are the device's; the directory tree itself lives in memory and ends with the mount).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// A mount error as the CLI reports it: a machine without FUSE, fusermount3 or the right
/// to mount is a set-up problem (exit 2, with what to install or run); others exit 1.
pub fn mount_error(e: MountError) -> anyhow::Error {
    if e.is_setup() {
        UsageError(e.to_string()).into()
    } else {
        anyhow::Error::new(e)
    }
}

/// Runs `mvcclab device`.
///
/// Errors: [`UsageError`] for a machine that cannot mount (exit 2); mount and unmount
/// failures (exit 1).
pub fn run(a: DeviceArgs) -> Result<()> {
    match a.command {
        DeviceCommand::Mount(m) => mount(m),
    }
}

fn mount(a: MountArgs) -> Result<()> {
    let mut cfg = DeviceConfig::new(a.bandwidth, a.latency_us, a.compression);
    cfg.data_dir = a.data_dir;
    cfg.throttle_from_mount = true;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing a signal handler")?;
    }
    let dev = DevMount::mount(&a.dir, &cfg).map_err(mount_error)?;
    eprintln!(
        "mvcclab device mounted at {} (bandwidth {}, latency {}, compression {}); Ctrl-C unmounts",
        dev.dir().display(),
        a.bandwidth
            .map_or("unthrottled".into(), |b| format!("{b} MiB/s")),
        a.latency_us.map_or("none".into(), |l| format!("{l} µs")),
        a.compression
    );
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let counts = dev.counts();
    dev.unmount().map_err(mount_error)?;
    println!("{}", serde_json::to_string_pretty(&counts)?);
    Ok(())
}
