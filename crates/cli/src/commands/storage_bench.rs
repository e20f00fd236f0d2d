//! `mvcclab storage-bench`: random page reads and WAL-logged page updates straight on the
//! storage foundation (no MVCC design yet), reporting every 4 KiB block and request per
//! operation and per cause. It shows what the buffer pool size, the OS page cache, the
//! torn-page protection, the replacer and the device settings cost before any design is
//! involved.

use crate::bench::{buffer_pool_frames, PoolSize};
use crate::export::{emit, BasicFormat};
use crate::result::PerOpIo;
use crate::units::parse_size_bytes;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mvcclab_engine::buffer::ReplacerConfig;
use mvcclab_engine::device::{Compression, OsCacheConfig, ThrottleConfig};
use mvcclab_engine::page::{PageId, PageSize};
use mvcclab_engine::stats::{enter, Cause, CauseCounts};
use mvcclab_engine::storage::{Backing, CheckpointConfig, StorageSnapshot, TornPageProtection};
use mvcclab_engine::testkit::fill_and_log;
use mvcclab_engine::{Storage, StorageConfig};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Instant;

/// Replacement policy names on the command line.
#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplacerArg {
    /// PostgreSQL's clock sweep.
    ClockSweep,
    /// InnoDB's LRU with midpoint insertion (innodb_old_blocks_pct 37, old_blocks_time 1000 ms).
    LruMidpoint,
}

/// Flags of `mvcclab storage-bench`.
#[derive(Args, Debug)]
pub struct StorageBenchArgs {
    /// Pages in the test relation.
    #[arg(long, default_value_t = 4096)]
    pub pages: u32,
    /// Operations in the measured phase (over all threads).
    #[arg(long, default_value_t = 20000)]
    pub ops: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Share of operations that are page reads (the rest are WAL-logged page updates), 0..=100.
    #[arg(long, default_value_t = 50)]
    pub read_pct: u8,
    /// Page size: 8k or 16k.
    #[arg(long, default_value = "8k", value_parser = |s: &str| s.parse::<PageSize>())]
    pub page_size: PageSize,
    /// Buffer pool size (e.g. 8MiB); rounded down to whole pages.
    #[arg(long, default_value = "8MiB", value_parser = parse_size_bytes)]
    pub buffer_pool: u64,
    /// Emulated OS page cache size (0 = direct I/O).
    #[arg(long, default_value = "0", value_parser = parse_size_bytes)]
    pub os_cache: u64,
    /// Buffer replacement policy.
    #[arg(long, value_enum, default_value_t = ReplacerArg::ClockSweep)]
    pub replacer: ReplacerArg,
    /// Torn-page protection: full_page_writes, doublewrite or none.
    #[arg(long, default_value = "full_page_writes", value_parser = |s: &str| s.parse::<TornPageProtection>())]
    pub torn_page: TornPageProtection,
    /// Device bandwidth in MiB/s, reads and writes (unset = unthrottled).
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// Device latency per request in µs (unset = none).
    #[arg(long)]
    pub latency_us: Option<u64>,
    /// Transparent compression of the device: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none", value_parser = |s: &str| s.parse::<Compression>())]
    pub compression: Compression,
    /// Largest device request in bytes; larger ones are split.
    #[arg(long, default_value = "16KiB", value_parser = parse_size_bytes)]
    pub iop_max: u64,
    /// Checkpoint interval in ms during the measured phase (unset = none inside the run).
    #[arg(long)]
    pub checkpoint_interval_ms: Option<u64>,
    /// Keep the database in this directory (default: in memory).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Run without the background page cleaner and WAL writer, so that no background
    /// write holds a buffer while the clock sweep looks for a victim: with one thread and a
    /// seed, the counts are then the same from run to run, whatever the machine's load.
    #[arg(long)]
    pub no_background: bool,
    /// Seed of the random page choices (the counts are deterministic for a seed, one thread
    /// and `--no-background`; with background work they vary with timing).
    #[arg(long, default_value_t = 1)]
    pub rand_seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = BasicFormat::Table)]
    pub format: BasicFormat,
    /// Write the report here; `-` is standard output.
    #[arg(long, default_value = "-", value_parser = crate::export::output_path)]
    pub output: String,
}

/// The report: settings, throughput, per-operation figures and every count per cause.
#[derive(Serialize)]
struct Report {
    settings: serde_json::Value,
    ops: u64,
    elapsed_s: f64,
    ops_per_s: f64,
    /// Totals over all causes divided by `ops` (background work included).
    per_op: PerOpIo,
    measured: StorageSnapshot,
}

fn config(a: &StorageBenchArgs) -> Result<StorageConfig> {
    let frames = buffer_pool_frames(PoolSize::Pages(a.page_size, a.buffer_pool))?;
    if a.read_pct > 100 {
        bail!("--read-pct must be 0..=100, got {}", a.read_pct);
    }
    if a.threads == 0 || a.pages == 0 {
        bail!("--threads and --pages must be at least 1");
    }
    let mut cfg = StorageConfig {
        page_size: a.page_size,
        torn_page_protection: a.torn_page,
        ..Default::default()
    };
    cfg.buffer_pool.frames = frames;
    cfg.buffer_pool.replacer = match a.replacer {
        ReplacerArg::ClockSweep => ReplacerConfig::ClockSweep,
        ReplacerArg::LruMidpoint => ReplacerConfig::lru_midpoint_default(),
    };
    cfg.os_cache = OsCacheConfig {
        size_bytes: a.os_cache,
        ..Default::default()
    };
    cfg.nvme.iop_max_bytes = usize::try_from(a.iop_max).context("--iop-max is too large")?;
    cfg.nvme.compression = a.compression;
    cfg.nvme.throttle = ThrottleConfig {
        read_mib_s: a.bandwidth,
        write_mib_s: a.bandwidth,
        latency_us: a.latency_us,
        queue_depth: None,
    };
    cfg.checkpoint = CheckpointConfig {
        interval_ms: a.checkpoint_interval_ms,
        wal_bytes: None,
    };
    if a.no_background {
        cfg.buffer_pool.page_cleaner.enabled = false;
        cfg.wal_writer_interval_ms = None;
    }
    if let Some(dir) = &a.data_dir {
        cfg.backing = Backing::Directory {
            path: dir.clone(),
            direct: false,
        };
    }
    Ok(cfg)
}

/// One page update: [`fill_and_log`] on a new or existing page.
fn update_page(s: &Storage, id: PageId, v: u8, new: bool) -> Result<()> {
    let mut g = if new {
        s.pool().new_page(id.rel)?
    } else {
        s.pool().fetch_write(id)?
    };
    fill_and_log(s.wal(), &mut g, v, new)?;
    Ok(())
}

/// Runs the benchmark and writes the report.
pub fn run(a: StorageBenchArgs) -> Result<()> {
    let cfg = config(&a)?;
    let settings = serde_json::to_value(&cfg)?;
    let s = Storage::open(cfg).context("opening the storage")?;
    let rel = s.store().create_relation()?;
    {
        let _g = enter(Cause::Load);
        for b in 0..a.pages {
            update_page(&s, PageId::new(rel, b), 0, true)?;
        }
    }
    s.checkpoint()?;
    let before = s.snapshot();
    let start = Instant::now();
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let s = &s;
                let a = &a;
                scope.spawn(move || -> Result<()> {
                    let mut rng =
                        rand::rngs::SmallRng::seed_from_u64(a.rand_seed.wrapping_add(t as u64));
                    let share =
                        a.ops / a.threads as u64 + u64::from((t as u64) < a.ops % a.threads as u64);
                    for _ in 0..share {
                        let id = PageId::new(rel, rng.random_range(0..a.pages));
                        if rng.random_range(0..100u8) < a.read_pct {
                            let _c = enter(Cause::PointSelect);
                            drop(s.pool().fetch_read(id)?);
                        } else {
                            let _c = enter(Cause::Update);
                            update_page(s, id, rng.random(), false)?;
                            s.wal().flush(s.wal().insert_lsn())?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a worker thread panicked"))??;
        }
        Ok(())
    })?;
    let elapsed_s = start.elapsed().as_secs_f64();
    let measured = s.snapshot().delta(&before);
    if let Some(e) = s.background_error() {
        bail!("a background component failed: {e}");
    }
    let report = Report {
        settings,
        ops: a.ops,
        elapsed_s,
        ops_per_s: a.ops as f64 / elapsed_s.max(1e-9),
        per_op: PerOpIo::of(&measured.counters.total(), a.ops),
        measured,
    };
    let text = match a.format {
        BasicFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        BasicFormat::Table => table(&report),
    };
    emit(&text, &a.output)
}

fn table(r: &Report) -> String {
    let mut out = format!(
        "ops: {}   elapsed: {:.3} s   throughput: {:.0} ops/s\nper op: {:.3} read blocks (4 KiB), {:.3} write blocks (4 KiB), {:.3} read requests, {:.3} write requests, {:.1} WAL bytes, {:.4} FPIs, {:.4} doublewrite pages\n\n",
        r.ops, r.elapsed_s, r.ops_per_s, r.per_op.read_blocks_4k, r.per_op.write_blocks_4k, r.per_op.read_requests,
        r.per_op.write_requests, r.per_op.wal_bytes, r.per_op.wal_fpi, r.per_op.doublewrite_pages
    );
    out += &format!(
        "{:<14} {:>12} {:>12} {:>10} {:>10} {:>7} {:>10} {:>10} {:>12} {:>8} {:>10} {:>12}\n",
        "cause",
        "rd_blk_4k",
        "wr_blk_4k",
        "rd_req",
        "wr_req",
        "syncs",
        "buf_hit",
        "buf_miss",
        "wal_bytes",
        "wal_fpi",
        "dblwr_pg",
        "dev_wait_us"
    );
    let mut rows: Vec<(String, CauseCounts)> = r
        .measured
        .counters
        .by_cause
        .iter()
        .map(|(c, v)| (c.name().to_string(), *v))
        .collect();
    rows.push(("total".into(), r.measured.counters.total()));
    for (name, c) in rows {
        out += &format!(
            "{:<14} {:>12} {:>12} {:>10} {:>10} {:>7} {:>10} {:>10} {:>12} {:>8} {:>10} {:>12}\n",
            name,
            c.read_blocks_4k,
            c.write_blocks_4k,
            c.read_requests,
            c.write_requests,
            c.syncs,
            c.buffer_hits,
            c.buffer_misses,
            c.wal_bytes,
            c.wal_fpi,
            c.doublewrite_pages,
            c.device_wait_us
        );
    }
    let t = r.measured.compression;
    if t.logical_bytes > 0 {
        out += &format!(
            "\ndevice holds {} logical bytes in {} physical bytes (ratio {:.2})\n",
            t.logical_bytes, t.physical_bytes, t.ratio
        );
    }
    out
}
