//! The storage foundation assembled: device → OS cache → page store → WAL → buffer pool,
//! with the checkpointer, page cleaner and WAL writer threads, and one snapshot of every
//! counter.
//!
//! # Checkpoints (PostgreSQL xlog.c `CreateCheckPoint`, checkpointer.c)
//! 1. Move the WAL's redo pointer to the current insert position (from here on, the first
//!    change of every page carries a full-page image when full-page writes are on).
//! 2. Write every dirty page of the pool (`BufferPool::flush_all`, page order).
//! 3. Sync every relation file written since the last checkpoint (the pending-fsync queue).
//! 4. Insert the checkpoint record (main data: the redo LSN) and flush the WAL.
//! 5. Write and sync the control file (checkpoint LSN, redo LSN).
//! 6. Remove WAL segments wholly below the redo pointer.
//!
//! A checkpoint starts when `checkpoint.interval_ms` has passed since the last one
//! (checkpoint_timeout: counted `checkpoints_timed`), when the WAL since the redo pointer
//! passes `checkpoint.wal_bytes` (max_wal_size: `checkpoints_requested`), or on a call of
//! [`Storage::checkpoint`] (`checkpoints_requested`). PostgreSQL spreads step 2 over
//! checkpoint_completion_target; mvcclab writes at full speed (documented difference).
//!
//! # Invariants
//! 1. One checkpoint at a time (a mutex).
//! 2. When the control file names a checkpoint, every page change before its redo LSN is
//!    on the device and synced.
//!
//! # Locking
//! Checkpoint mutex → (pool and WAL locks, in their own orders). Background threads hold
//! `Arc`s of the components, never of `Storage`, and stop when it is dropped.
//!
//! # Crash safety
//! Storage opens without replaying anything; `Database::open` runs crash recovery on it
//! (`crate::recovery`) before starting the background threads
//! ([`Storage::open_for_recovery`], [`Storage::start_background`]). A checkpoint's control
//! file names its redo pointer only after every page dirty before that pointer is written
//! and synced (writes in flight by evictors and the page cleaner included,
//! `BufferPool::wait_for_writes_in_flight`) and the engine's own state is durable
//! ([`CheckpointHook`]). `Storage::close` ends with a checkpoint, so a cleanly closed
//! database replays only that checkpoint's record.

use crate::buffer::{BufferPool, BufferPoolConfig, Doublewrite, PoolState};
use crate::device::{
    CompressionTotals, Device, FileDevice, MemDevice, Nvme, NvmeConfig, OsCacheConfig, Vfs,
};
use crate::error::{Error, Result};
use crate::page::{PageSize, PageStore};
use crate::stats::{enter, Cause, Counters, Metric, Stats};
use crate::stop::StopSignal;
use crate::wal::{
    catalog_info, rmgr, xlog_info, ControlFile, Lsn, RecordBuilder, Wal, WalConfig, FIRST_LSN,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the device's bytes live.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backing {
    /// In memory (lost at exit).
    #[default]
    Memory,
    /// Files in a directory.
    Directory {
        /// The directory.
        path: PathBuf,
        /// Open with O_DIRECT.
        direct: bool,
    },
    /// A device the caller made and keeps a handle on: a [`crate::device::CrashDevice`]
    /// that a crash test cuts the power of between a drop and a reopen, say. Each
    /// `Storage::open` puts a new accounting layer and OS cache over the same device.
    /// Serializes as `{"shared": null}` and cannot be deserialized (a configuration file
    /// cannot name a live device).
    #[serde(skip_deserializing)]
    Shared(SharedDevice),
}

impl Backing {
    /// A [`Backing::Shared`] over `device`.
    pub fn shared(device: Arc<dyn Device>) -> Backing {
        Backing::Shared(SharedDevice(device))
    }
}

/// A device shared between the storage and its caller (see [`Backing::Shared`]). Two are
/// equal when they are the same device.
#[derive(Clone)]
pub struct SharedDevice(pub Arc<dyn Device>);

impl std::fmt::Debug for SharedDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedDevice(..)")
    }
}

impl PartialEq for SharedDevice {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Serialize for SharedDevice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// How torn pages are guarded against: the `torn-page protection` switch of the design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TornPageProtection {
    /// Full-page images in the WAL (PostgreSQL full_page_writes = on).
    FullPageWrites,
    /// The doublewrite buffer (InnoDB innodb_doublewrite = ON).
    Doublewrite,
    /// Neither: torn pages are detected by checksum only.
    None,
}

impl std::str::FromStr for TornPageProtection {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "full_page_writes" | "fpw" => Ok(Self::FullPageWrites),
            "doublewrite" => Ok(Self::Doublewrite),
            "none" => Ok(Self::None),
            _ => Err(format!("unknown torn-page protection '{s}'; expected full_page_writes, doublewrite or none")),
        }
    }
}

/// When checkpoints start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// Interval in ms (PostgreSQL checkpoint_timeout, 300 s); `None` = never by time.
    pub interval_ms: Option<u64>,
    /// WAL bytes since the redo pointer that request one (PostgreSQL max_wal_size, 1 GiB);
    /// `None` = never by volume.
    pub wal_bytes: Option<u64>,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            interval_ms: Some(300_000),
            wal_bytes: Some(1 << 30),
        }
    }
}

/// Everything the storage foundation can be set to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageConfig {
    /// Page size.
    pub page_size: PageSize,
    /// Where bytes live.
    pub backing: Backing,
    /// The virtual NVMe device.
    pub nvme: NvmeConfig,
    /// The emulated OS page cache (size 0 = direct I/O).
    pub os_cache: OsCacheConfig,
    /// The buffer pool.
    pub buffer_pool: BufferPoolConfig,
    /// The WAL (its `full_page_writes` is set from `torn_page_protection`).
    pub wal: WalConfig,
    /// Full-page writes, doublewrite, or none.
    pub torn_page_protection: TornPageProtection,
    /// Pages per doublewrite batch (InnoDB: 64).
    pub doublewrite_batch_pages: usize,
    /// When checkpoints start.
    pub checkpoint: CheckpointConfig,
    /// Background WAL writer interval in ms (PostgreSQL wal_writer_delay, 200); `None` = no
    /// WAL writer thread.
    pub wal_writer_interval_ms: Option<u64>,
    /// Write a zero page when a relation grows (PostgreSQL 15 `smgrextend`).
    pub zero_fill_on_extend: bool,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            page_size: PageSize::K8,
            backing: Backing::Memory,
            nvme: NvmeConfig::default(),
            os_cache: OsCacheConfig::default(),
            buffer_pool: BufferPoolConfig::default(),
            wal: WalConfig::default(),
            torn_page_protection: TornPageProtection::FullPageWrites,
            doublewrite_batch_pages: 64,
            checkpoint: CheckpointConfig::default(),
            wal_writer_interval_ms: Some(200),
            zero_fill_on_extend: false,
        }
    }
}

impl StorageConfig {
    /// The defaults with `frames` buffer frames and no background threads (no page
    /// cleaner, WAL writer or timed/volume checkpoints): the caller drives cleaning and
    /// checkpoints, so counts do not depend on timing. For tests and benchmarks.
    pub fn without_background(frames: usize) -> Self {
        let mut cfg = StorageConfig::default();
        cfg.buffer_pool.frames = frames;
        cfg.buffer_pool.page_cleaner.enabled = false;
        cfg.checkpoint = CheckpointConfig {
            interval_ms: None,
            wal_bytes: None,
        };
        cfg.wal_writer_interval_ms = None;
        cfg
    }
}

/// State of the WAL in a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalState {
    /// Next insert position.
    pub insert_lsn: u64,
    /// Durable up to here.
    pub durable_lsn: u64,
    /// Redo pointer of the last checkpoint.
    pub redo_lsn: u64,
}

/// State of the emulated OS page cache in a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OsCacheState {
    /// 4 KiB blocks held.
    pub cached_blocks_4k: usize,
    /// Dirty 4 KiB blocks held.
    pub dirty_blocks_4k: usize,
}

/// One snapshot of the storage: every count per cause (device, OS cache, buffer pool, WAL,
/// doublewrite, checkpoints), beside the current state (compression, pool, WAL, OS cache).
/// Serializes to JSON as one object; [`StorageSnapshot::delta`] gives a phase's counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageSnapshot {
    /// Counts per cause since open (or, after `delta`, over the phase).
    pub counters: Counters,
    /// Logical and physical bytes held by the device (state, not a count).
    pub compression: CompressionTotals,
    /// Buffer pool occupancy (state).
    pub buffer_pool: PoolState,
    /// WAL positions (state).
    pub wal: WalState,
    /// OS cache occupancy (state; absent without an OS cache).
    pub os_cache: Option<OsCacheState>,
}

impl StorageSnapshot {
    /// Counts between `earlier` and `self`; the state fields are `self`'s.
    pub fn delta(&self, earlier: &StorageSnapshot) -> StorageSnapshot {
        StorageSnapshot {
            counters: self.counters.delta(&earlier.counters),
            ..self.clone()
        }
    }
}

/// What an engine keeps outside the buffer pool and must make durable at each checkpoint
/// (PostgreSQL's `CheckPointGuts`: the clog's SLRU pages, `CheckPointCLOG`).
pub trait CheckpointHook: Send + Sync {
    /// Called by every checkpoint after the pool's pages are written and synced and
    /// before the checkpoint record: writes and syncs the engine's own files (cause
    /// `checkpointer`). Everything the engine had made final before the checkpoint's redo
    /// pointer must be durable when it returns. Returns bytes for the checkpoint record to
    /// carry (PostgreSQL's `CheckPoint.nextXid`), which recovery hands back
    /// (`recovery::Redone::checkpoint_engine_state`).
    ///
    /// Errors: device errors (the checkpoint fails and the control file is not updated).
    fn checkpoint(&self) -> Result<Vec<u8>>;
}

/// The catalog as last logged: its version and bytes (see [`Storage::log_catalog`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogBlob {
    /// Version: 0 before the first DDL, then one more at each logged change.
    pub version: u64,
    /// The catalog's bytes (the engine's encoding; empty at version 0).
    pub bytes: Vec<u8>,
}

impl CatalogBlob {
    /// `version` (u64 LE) then the bytes: the payload of a CATALOG record and the tail of a
    /// CHECKPOINT record.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = self.version.to_le_bytes().to_vec();
        v.extend_from_slice(&self.bytes);
        v
    }

    /// The inverse of [`CatalogBlob::encode`]; `None` when shorter than 8 bytes.
    pub fn decode(bytes: &[u8]) -> Option<CatalogBlob> {
        let version = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        Some(CatalogBlob {
            version,
            bytes: bytes[8..].to_vec(),
        })
    }
}

/// Main data of a CHECKPOINT record: the redo LSN (u64 LE), the engine's state
/// ([`CheckpointHook::checkpoint`]: u32 LE length, then the bytes), then the catalog
/// ([`CatalogBlob::encode`]).
pub fn checkpoint_main_data(redo: Lsn, engine_state: &[u8], catalog: &CatalogBlob) -> Vec<u8> {
    let mut main = redo.0.to_le_bytes().to_vec();
    main.extend_from_slice(&(engine_state.len() as u32).to_le_bytes());
    main.extend_from_slice(engine_state);
    main.extend_from_slice(&catalog.encode());
    main
}

/// The parts of a CHECKPOINT record's main data ([`checkpoint_main_data`]): redo LSN,
/// engine state, catalog; `None` when it is too short for them.
pub fn parse_checkpoint_main_data(main: &[u8]) -> Option<(Lsn, Vec<u8>, CatalogBlob)> {
    let redo = u64::from_le_bytes(main.get(..8)?.try_into().ok()?);
    let n = u32::from_le_bytes(main.get(8..12)?.try_into().ok()?) as usize;
    let state = main.get(12..12usize.checked_add(n)?)?.to_vec();
    let catalog = CatalogBlob::decode(&main[12 + n..])?;
    Some((Lsn(redo), state, catalog))
}

/// Runs checkpoints; shared by `Storage` and the checkpointer thread.
struct Checkpointer {
    pool: Arc<BufferPool>,
    wal: Arc<Wal>,
    vfs: Arc<Vfs>,
    stats: Arc<Stats>,
    page_size: PageSize,
    lock: Mutex<Instant>,
    /// The catalog as last logged; its mutex also orders CATALOG records (version order is
    /// LSN order).
    catalog: Mutex<CatalogBlob>,
    hook: Mutex<Option<std::sync::Weak<dyn CheckpointHook>>>,
}

impl Checkpointer {
    fn run(&self, timed: bool) -> Result<Lsn> {
        self.run_as(timed, xlog_info::CHECKPOINT)
    }

    /// A checkpoint whose record carries `info` ([`xlog_info::CHECKPOINT`], or
    /// [`xlog_info::CHECKPOINT_SHUTDOWN`] at a clean close).
    fn run_as(&self, timed: bool, info: u8) -> Result<Lsn> {
        let _cause = enter(Cause::Checkpointer);
        let mut last = self.lock.lock();
        self.stats.add(
            if timed {
                Metric::checkpoints_timed
            } else {
                Metric::checkpoints_requested
            },
            1,
        );
        let redo = self.wal.begin_checkpoint();
        self.pool.flush_all()?;
        self.pool.wait_for_writes_in_flight();
        let rels = self.pool.take_unsynced_relations();
        if let Err(e) = self.pool.store().sync_relations(rels.iter().copied()) {
            // Still owed: a later checkpoint must not take them for synced.
            self.pool.return_unsynced_relations(rels);
            return Err(e.into());
        }
        let hook = self.hook.lock().as_ref().and_then(|w| w.upgrade());
        let engine_state = match hook {
            Some(h) => h.checkpoint()?,
            None => Vec::new(),
        };
        let main = checkpoint_main_data(redo, &engine_state, &self.catalog.lock());
        let rec = RecordBuilder::new(rmgr::XLOG, info).main_data(&main);
        let start = self.wal.insert_lsn();
        let end = self.wal.insert(&rec, &mut [])?;
        self.wal.flush(end)?;
        ControlFile {
            page_size_bytes: self.page_size.bytes() as u32,
            wal_block_bytes: self.wal.config().block_bytes as u32,
            segment_bytes: self.wal.config().segment_bytes,
            checkpoint_lsn: start.0,
            redo_lsn: redo.0,
            wal_format: self.wal.config().record_format,
        }
        .write(&self.vfs)?;
        self.wal.remove_segments_before(redo)?;
        *last = Instant::now();
        Ok(redo)
    }

    fn last_started(&self) -> Instant {
        *self.lock.lock()
    }
}

/// An open storage instance. Dropping it stops the background threads without a final
/// checkpoint (as a crash would leave the device, minus the OS cache's dirty blocks, which
/// live on in memory); call [`Storage::close`] for a clean shutdown.
pub struct Storage {
    cfg: StorageConfig,
    stats: Arc<Stats>,
    vfs: Arc<Vfs>,
    store: Arc<PageStore>,
    wal: Arc<Wal>,
    pool: Arc<BufferPool>,
    checkpointer: Arc<Checkpointer>,
    shutdown: Arc<StopSignal>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    background_error: Arc<Mutex<Option<String>>>,
    started: std::sync::atomic::AtomicBool,
}

impl Storage {
    /// Opens (or creates) storage with `cfg` and starts its background threads.
    ///
    /// Errors: [`Error::InvalidConfig`] naming the setting; [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the
    /// control file does not match `cfg` (page size, WAL block or segment size, WAL record
    /// format); device errors.
    pub fn open(cfg: StorageConfig) -> Result<Storage> {
        let storage = Storage::open_for_recovery(cfg)?;
        // No redo here: free what the WAL read to find its end.
        drop(storage.wal.take_records_read_at_open());
        storage.start_background();
        Ok(storage)
    }

    /// Opens (or creates) storage with `cfg` without starting its background threads, so
    /// that crash recovery can replay the WAL before any checkpoint or page cleaning runs
    /// (PostgreSQL's startup process runs redo before the checkpointer may checkpoint);
    /// [`Storage::start_background`] starts them.
    ///
    /// Errors: as [`Storage::open`].
    pub fn open_for_recovery(cfg: StorageConfig) -> Result<Storage> {
        let mut cfg = cfg;
        cfg.wal.full_page_writes = cfg.torn_page_protection == TornPageProtection::FullPageWrites;
        let stats = Arc::new(Stats::new());
        let backing: Box<dyn Device> = match &cfg.backing {
            Backing::Memory => Box::new(MemDevice::new()),
            Backing::Directory { path, direct } => Box::new(FileDevice::open(path, *direct)?),
            Backing::Shared(SharedDevice(device)) => Box::new(device.clone()),
        };
        let nvme = Nvme::new(backing, &cfg.nvme, stats.clone())?;
        let vfs = Arc::new(Vfs::new(nvme, &cfg.os_cache));
        let control = ControlFile::read(&vfs)?;
        if let Some(c) = &control {
            let want = (
                cfg.page_size.bytes() as u32,
                cfg.wal.block_bytes as u32,
                cfg.wal.segment_bytes,
            );
            let have = (c.page_size_bytes, c.wal_block_bytes, c.segment_bytes);
            if c.wal_format != cfg.wal.record_format {
                return Err(Error::corrupted(format!(
                        "control file: the WAL is in the {} record format; configuration asks for {} (a WAL is read with the format it was written with)",
                        c.wal_format, cfg.wal.record_format
                    )));
            }
            if want != have {
                return Err(Error::corrupted(format!(
                        "control file: database has page size {} B, WAL block {} B, segment {} B; configuration asks for {} B, {} B, {} B",
                        have.0, have.1, have.2, want.0, want.1, want.2
                    )));
            }
        }
        let redo = control.map_or(FIRST_LSN, |c| c.redo_lsn);
        let store = Arc::new(PageStore::open(
            vfs.clone(),
            cfg.page_size,
            cfg.zero_fill_on_extend,
        )?);
        let wal = {
            // Reading the WAL from the redo pointer is recovery's (its records are handed
            // to `recovery::redo`).
            let _c = crate::stats::enter(crate::stats::Cause::Recovery);
            Arc::new(Wal::open(
                vfs.clone(),
                cfg.wal.clone(),
                stats.clone(),
                redo,
            )?)
        };
        let dblwr = match cfg.torn_page_protection {
            TornPageProtection::Doublewrite => Some(Doublewrite::new(
                vfs.clone(),
                stats.clone(),
                cfg.doublewrite_batch_pages,
            )?),
            _ => None,
        };
        let pool = Arc::new(BufferPool::new(
            cfg.buffer_pool.clone(),
            store.clone(),
            wal.clone(),
            dblwr,
            stats.clone(),
        )?);
        let checkpointer = Arc::new(Checkpointer {
            pool: pool.clone(),
            wal: wal.clone(),
            vfs: vfs.clone(),
            stats: stats.clone(),
            page_size: cfg.page_size,
            lock: Mutex::new(Instant::now()),
            catalog: Mutex::new(CatalogBlob::default()),
            hook: Mutex::new(None),
        });
        let storage = Storage {
            cfg,
            stats,
            vfs,
            store,
            wal,
            pool,
            checkpointer,
            shutdown: Arc::new(StopSignal::default()),
            threads: Mutex::new(Vec::new()),
            background_error: Arc::new(Mutex::new(None)),
            started: std::sync::atomic::AtomicBool::new(false),
        };
        Ok(storage)
    }

    /// Starts the background threads (page cleaner, WAL writer, checkpointer) as
    /// configured; a no-op after the first call.
    pub fn start_background(&self) {
        if !self.started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.start_threads();
        }
    }

    /// Registers the engine's checkpoint work ([`CheckpointHook`]); held weakly, so the
    /// engine's lifetime is its own.
    pub fn set_checkpoint_hook(&self, hook: std::sync::Weak<dyn CheckpointHook>) {
        *self.checkpointer.hook.lock() = Some(hook);
    }

    /// Logs the whole catalog, as `make` encodes it, as a new version: a CATALOG record
    /// (main data [`CatalogBlob::encode`]) flushed at once, as DDL commits synchronously;
    /// every later checkpoint record carries it too, so recovery finds the newest version
    /// from the checkpoint on (`crate::recovery`). `make` runs under the catalog mutex, so
    /// of two DDLs the one logged later also encoded the later catalog. Returns the new
    /// version.
    ///
    /// Errors: WAL errors (the version is then not taken).
    pub fn log_catalog(&self, make: impl FnOnce() -> Vec<u8>) -> Result<u64> {
        let mut cat = self.checkpointer.catalog.lock();
        let next = CatalogBlob {
            version: cat.version + 1,
            bytes: make(),
        };
        let rec =
            RecordBuilder::new(rmgr::CATALOG, catalog_info::SNAPSHOT).main_data(&next.encode());
        let lsn = self.wal.insert(&rec, &mut [])?;
        self.wal.flush(lsn)?;
        *cat = next;
        Ok(cat.version)
    }

    /// Sets the catalog recovery found (its version and bytes), so checkpoints carry it on.
    pub fn set_recovered_catalog(&self, blob: CatalogBlob) {
        *self.checkpointer.catalog.lock() = blob;
    }

    /// The catalog as last logged or recovered.
    pub fn catalog(&self) -> CatalogBlob {
        self.checkpointer.catalog.lock().clone()
    }

    fn spawn(
        &self,
        name: &str,
        cause: Cause,
        period: Duration,
        round: impl FnMut() -> Result<()> + Send + 'static,
    ) {
        let shutdown = self.shutdown.clone();
        self.spawn_with(name, cause, period, move |d| shutdown.sleep(d), round);
    }

    /// A background thread that calls `sleep(period)` (true: stop) between rounds.
    fn spawn_with(
        &self,
        name: &str,
        cause: Cause,
        period: Duration,
        sleep: impl Fn(Duration) -> bool + Send + 'static,
        mut round: impl FnMut() -> Result<()> + Send + 'static,
    ) {
        let errors = self.background_error.clone();
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let _c = enter(cause);
                while !sleep(period) {
                    if let Err(e) = round() {
                        *errors.lock() = Some(format!("{}: {e}", cause.name()));
                        return;
                    }
                }
            })
            .expect("spawn background thread");
        self.threads.lock().push(h);
    }

    fn start_threads(&self) {
        let pc = self.cfg.buffer_pool.page_cleaner.clone();
        if pc.enabled {
            // The page cleaner sleeps on the pool's bell, which a foreground thread rings
            // when the free-page target needs it (InnoDB) and shutdown rings to stop it.
            let (pool, bell) = (self.pool.clone(), self.pool.clone());
            let shutdown = self.shutdown.clone();
            self.spawn_with(
                "page_cleaner",
                Cause::PageCleaner,
                Duration::from_millis(pc.interval_ms.max(1)),
                move |d| {
                    bell.page_cleaner_sleep(d);
                    shutdown.is_raised()
                },
                move || Ok(pool.clean_round(&pc).map(|_| ())?),
            );
        }
        if let Some(ms) = self.cfg.wal_writer_interval_ms {
            let wal = self.wal.clone();
            self.spawn(
                "wal_writer",
                Cause::WalWriter,
                Duration::from_millis(ms.max(1)),
                move || Ok(wal.flush_all()?),
            );
        }
        let cp = self.cfg.checkpoint.clone();
        if cp.interval_ms.is_some() || cp.wal_bytes.is_some() {
            let ck = self.checkpointer.clone();
            let wal = self.wal.clone();
            let poll = Duration::from_millis(cp.interval_ms.unwrap_or(u64::MAX).clamp(1, 20));
            self.spawn("checkpointer", Cause::Checkpointer, poll, move || {
                let by_time = cp
                    .interval_ms
                    .is_some_and(|ms| ck.last_started().elapsed() >= Duration::from_millis(ms));
                let by_wal = cp
                    .wal_bytes
                    .is_some_and(|b| wal.insert_lsn().0 - wal.redo_lsn().0 >= b);
                if by_time || by_wal {
                    ck.run(by_time && !by_wal)?;
                }
                Ok(())
            });
        }
    }

    /// Settings in force (with `wal.full_page_writes` derived from the torn-page switch).
    pub fn config(&self) -> &StorageConfig {
        &self.cfg
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The WAL.
    pub fn wal(&self) -> &Arc<Wal> {
        &self.wal
    }

    /// The page store.
    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    /// The file layer (device and OS cache).
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.vfs
    }

    /// The live counters.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Runs a checkpoint now (counted `checkpoints_requested`, cause `checkpointer`) and
    /// returns its redo LSN.
    ///
    /// Errors: WAL and device errors.
    pub fn checkpoint(&self) -> Result<Lsn> {
        self.checkpointer.run(false)
    }

    /// The error that stopped a background thread, if any (the thread stops; the storage
    /// keeps serving foreground calls, which will meet the same failure).
    pub fn background_error(&self) -> Option<String> {
        self.background_error.lock().clone()
    }

    /// Every counter per cause, with the current state of device, pool, WAL and OS cache.
    pub fn snapshot(&self) -> StorageSnapshot {
        StorageSnapshot {
            counters: self.stats.snapshot(),
            compression: self.vfs.compression_totals(),
            buffer_pool: self.pool.state(),
            wal: WalState {
                insert_lsn: self.wal.insert_lsn().0,
                durable_lsn: self.wal.durable_lsn().0,
                redo_lsn: self.wal.redo_lsn().0,
            },
            os_cache: self.vfs.os_cache().map(|c| OsCacheState {
                cached_blocks_4k: c.cached_blocks(),
                dirty_blocks_4k: c.dirty_blocks(),
            }),
        }
    }

    /// Stops the background threads (checkpointer, WAL writer, page cleaner) and waits for
    /// them to end; a no-op when none runs. Once it returns, no thread of this storage
    /// touches the device again (they are not restarted). The owner of an engine calls
    /// it when dropping: a background thread can hold the engine alive for a moment (the
    /// checkpointer holds its [`CheckpointHook`] during a checkpoint), and with it this
    /// storage, so dropping the last visible handle is not enough to stop them (a crash
    /// test reopens the device at once, and a thread of the dead instance would write
    /// into the new one).
    pub fn stop_background(&self) {
        self.shutdown.raise();
        self.pool.wake_page_cleaner();
        for h in self.threads.lock().drain(..) {
            let _ = h.join();
        }
    }

    /// Stops the background threads and ends with a checkpoint (PostgreSQL's shutdown
    /// checkpoint), so a reopen finds every change.
    ///
    /// Errors: those of the checkpoint.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    /// What [`Storage::close`] does, through a shared reference: stops the background
    /// threads and runs the shutdown checkpoint. For an owner that must keep the engine
    /// (and so its [`CheckpointHook`]) alive until that checkpoint is done. The storage
    /// stays usable, without background threads.
    ///
    /// Errors: those of the checkpoint.
    pub fn shutdown(&self) -> Result<()> {
        self.shutdown_marked(true)
    }

    /// [`Storage::shutdown`], its checkpoint record marked a shutdown checkpoint
    /// ([`xlog_info::CHECKPOINT_SHUTDOWN`]: the next open skips the B+tree walk for
    /// incomplete splits) when `clean`, or an ordinary one (the next open walks them, as
    /// after a crash) when an error left a split incomplete in the running engine.
    ///
    /// Errors: those of the checkpoint.
    pub fn shutdown_marked(&self, clean: bool) -> Result<()> {
        self.stop_background();
        let info = if clean {
            xlog_info::CHECKPOINT_SHUTDOWN
        } else {
            xlog_info::CHECKPOINT
        };
        self.checkpointer.run_as(false, info).map(|_| ())
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.stop_background();
    }
}
