//! The buffer pool proper: frames, the partitioned page table, pin/load/evict, the write
//! path shared by eviction, the page cleaner and the checkpointer, and (InnoDB) the page
//! cleaner's free-page target.

use super::bgwriter::{BgWriterState, SyncState};
use super::doublewrite::Doublewrite;
use super::guard::{ReadPageGuard, WritePageGuard};
use super::replacer::{FrameId, Replacer, ReplacerConfig, Touch};
use super::strategy;
use super::{ClockSweep, LruMidpoint};
use crate::device::FileId;
use crate::page::{page_lsn, PageId, PageStore};
use crate::page::{StorageError, StorageResult};
use crate::stats::{Metric, Stats};
use crate::wal::{Lsn, Wal};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Page-table partitions (PostgreSQL NUM_BUFFER_PARTITIONS).
const PARTITIONS: usize = 128;
/// Relations whose page requests are counted per relation (ids FIRST_RELATION onwards).
const REL_IO_SLOTS: usize = 4096;

/// Page requests of one relation (pg_statio_user_tables / pg_statio_user_indexes:
/// `*_blks_hit`, `*_blks_read`) and its pages written from the pool (which neither
/// PostgreSQL nor InnoDB counts per relation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelIo {
    /// Requests served from the pool.
    pub blks_hit: u64,
    /// Requests that read the page.
    pub blks_read: u64,
    /// Pages written from the pool to their home location (a page written through the
    /// doublewrite area counts once), whatever wrote them: LRU batch, flush list,
    /// checkpoint or an evicting thread.
    pub blks_written: u64,
}
const NO_PAGE: u64 = u64::MAX;

fn pack(id: PageId) -> u64 {
    ((id.rel as u64) << 32) | id.block as u64
}
fn unpack(v: u64) -> Option<PageId> {
    (v != NO_PAGE).then(|| PageId::new((v >> 32) as u32, v as u32))
}

/// Pages read and written of one page type (innodb_metrics `buffer_page_read_*` and
/// `buffer_page_written_*`, buf0buf.cc `buf_page_monitor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageTypeIo {
    /// Pages of the type read into the pool.
    pub pages_read: u64,
    /// Pages of the type written from the pool to their home location.
    pub pages_written: u64,
}

/// LRU list length at or below which the page cleaner evicts nothing (buf0lru.h
/// BUF_LRU_MIN_LEN, as `buf_pool_t::need_LRU_eviction` uses it).
pub const BUF_LRU_MIN_LEN: usize = 256;

/// Most pages one LRU batch writes (the page cleaner passes innodb_io_capacity_max, default
/// 2000, to `buf_flush_LRU`).
pub const LRU_FLUSH_MAX_PAGES: usize = 2000;
/// Dirty pages the LRU batch pins before writing them (one doublewrite batch).
const LRU_FLUSH_BATCH_PAGES: usize = 64;

/// InnoDB's free-page target: the page cleaner keeps this many frames on the free list by
/// evicting clean pages from the LRU tail (innodb_lru_scan_depth; MariaDB 10.11 buf0flu.cc
/// `buf_flush_page_cleaner` runs `buf_flush_LRU` while `buf_pool_t::need_LRU_eviction()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreeTarget {
    /// A fixed number of free frames.
    Pages(usize),
    /// innodb_lru_scan_depth as mvcclab starts the real MariaDB (crates/servers/src/
    /// managed.rs): the default's share of the default pool, 1,536 of 8,192 pages, applied
    /// to this pool's frames, within 100..=1536 (the variable's minimum and default).
    ScaledLruScanDepth,
}

impl FreeTarget {
    /// The target in frames for a pool of `frames` frames.
    pub fn pages(self, frames: usize) -> usize {
        match self {
            FreeTarget::Pages(n) => n,
            FreeTarget::ScaledLruScanDepth => (frames * 1536 / 8192).clamp(100, 1536),
        }
    }
}

/// How a pin of a resident page counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A hit in the counters and an access of the replacement policy.
    Counted,
    /// Neither: the page is the buffer this thread's scan already holds.
    Uncounted,
    /// A hit in the counters, no access of the policy (buf_pool_t::page_fix).
    Fix,
}

thread_local! {
    /// The buffer this thread's current scan holds (pool identity, frame, page):
    /// [`BufferPool::fetch_read_held`], [`release_held`].
    static HELD: std::cell::Cell<Option<(usize, FrameId, PageId)>> =
        const { std::cell::Cell::new(None) };
}

/// What this thread's index descents do with their pins ([`BufferPool::record_descent`],
/// [`BufferPool::repeat_descent`]).
enum DescentMode {
    /// Pins of pages of `rel` in pool `pool` are noted in `pages`.
    Recording {
        pool: usize,
        rel: FileId,
        pages: Vec<PageId>,
    },
    /// The first pin of each page in `pages` (pool `pool`) is the same pin again.
    Repeating { pool: usize, pages: Vec<PageId> },
}

thread_local! {
    static DESCENT: std::cell::RefCell<Option<DescentMode>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's descent mode set to `mode`, then puts the outer mode back.
/// Returns `f`'s result and the mode as `f` left it (a recording holds its pages).
fn with_descent_mode<T>(mode: DescentMode, f: impl FnOnce() -> T) -> (T, Option<DescentMode>) {
    let outer = DESCENT.with(|d| d.borrow_mut().replace(mode));
    let r = f();
    let mode = DESCENT.with(|d| std::mem::replace(&mut *d.borrow_mut(), outer));
    (r, mode)
}

/// The pages of one relation a recorded descent pinned, in pin order
/// ([`BufferPool::record_descent`]); handed to [`BufferPool::repeat_descent`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescentPins {
    pool: usize,
    pages: Vec<PageId>,
}

impl DescentPins {
    /// The pages recorded, in pin order (a page pinned twice appears twice).
    pub fn pages(&self) -> &[PageId] {
        &self.pages
    }
}

/// The statement ended: this thread's scan no longer holds a buffer (nodeIndexscan.c
/// `ExecEndIndexScan` → `index_endscan` releases `xs_cbuf`), so its next pin of that page
/// raises the usage count again.
pub fn release_held() {
    HELD.with(|h| h.set(None));
}

/// LRU list length below which the page cleaner flushes no neighbours (buf0lru.h
/// BUF_LRU_OLD_MIN_LEN; buf0flu.cc `buf_do_flush_list_batch` and
/// `buf_flush_LRU_list_batch` set `neighbors` to 0 under it).
pub const BUF_LRU_OLD_MIN_LEN: usize = 512;

/// Whether the page cleaner writes a dirty page's dirty neighbours with it (MariaDB
/// `innodb_flush_neighbors`, buf0flu.cc `buf_flush_try_neighbors`). MariaDB does so only
/// when the tablespace's file is on rotational storage (`fil_space_t::is_rotational`), so
/// [`crate::db::DatabaseConfig`] turns it on only for a device configured as rotational
/// ([`crate::device::NvmeConfig::rotational`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushNeighbors {
    /// Only the page itself (`innodb_flush_neighbors=0`; any non-rotational device).
    #[default]
    Off,
    /// The run of contiguous dirty resident pages around it within its flush area
    /// (`innodb_flush_neighbors=1`, MariaDB's default).
    Contiguous,
    /// Every dirty resident page of its flush area (`innodb_flush_neighbors=2`).
    Area,
}

impl FlushNeighbors {
    fn is_off(&self) -> bool {
        *self == FlushNeighbors::Off
    }
}

/// Settings of the background writer / page cleaner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageCleanerConfig {
    /// Run the page cleaner thread.
    pub enabled: bool,
    /// Sleep between rounds in ms (PostgreSQL bgwriter_delay, 200; InnoDB page cleaner
    /// runs once a second).
    pub interval_ms: u64,
    /// With the clock sweep, the most pages a round writes (PostgreSQL
    /// bgwriter_lru_maxpages, 100; [`super::bgwriter`]); with another replacer and no
    /// free-page target, the frames examined per round at the eviction end.
    pub lru_scan_pages: usize,
    /// With the clock sweep, how many times the recent allocations a round aims to find
    /// reusable ahead of the hand (PostgreSQL bgwriter_lru_multiplier, 2.0).
    #[serde(default = "default_lru_multiplier")]
    pub lru_multiplier: f64,
    /// When set, dirty frames above this percent of the pool are flushed oldest change
    /// first (InnoDB innodb_max_dirty_pages_pct, 90); PostgreSQL has no such rule (None).
    pub max_dirty_pct: Option<u8>,
    /// InnoDB's free-page target (see [`FreeTarget`]); when set, it replaces the
    /// `lru_scan_pages` scan: a foreground thread that takes a free frame and leaves fewer
    /// than half the target wakes the page cleaner, which evicts clean pages from the LRU
    /// tail until the target is free, writing the dirty ones it meets. PostgreSQL's
    /// bgwriter has none (None).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_target: Option<FreeTarget>,
    /// Neighbour flushing of the page cleaner's LRU and flush-list batches
    /// ([`FlushNeighbors`]); off unless the design has it and the device is rotational.
    #[serde(default, skip_serializing_if = "FlushNeighbors::is_off")]
    pub flush_neighbors: FlushNeighbors,
}

impl Default for PageCleanerConfig {
    fn default() -> Self {
        PageCleanerConfig {
            enabled: true,
            interval_ms: 200,
            lru_scan_pages: 100,
            lru_multiplier: default_lru_multiplier(),
            max_dirty_pct: None,
            free_target: None,
            flush_neighbors: FlushNeighbors::Off,
        }
    }
}

fn default_lru_multiplier() -> f64 {
    2.0
}

/// Settings of the buffer pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferPoolConfig {
    /// Number of frames (pages the pool holds).
    pub frames: usize,
    /// Replacement policy.
    pub replacer: ReplacerConfig,
    /// Background writer / page cleaner.
    pub page_cleaner: PageCleanerConfig,
    /// InnoDB's linear read-ahead (`None`: off, PostgreSQL has none).
    #[serde(default)]
    pub linear_read_ahead: Option<super::read_ahead::LinearReadAheadConfig>,
}

impl Default for BufferPoolConfig {
    fn default() -> Self {
        BufferPoolConfig {
            frames: 1024,
            replacer: ReplacerConfig::ClockSweep,
            page_cleaner: PageCleanerConfig::default(),
            linear_read_ahead: None,
        }
    }
}

/// What the pool holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolState {
    /// Frames in the pool.
    pub frames: usize,
    /// Frames holding a page.
    pub resident_pages: usize,
    /// Frames holding a page changed since it was last written.
    pub dirty_pages: usize,
}

/// One frame of the pool as contrib/pg_buffercache's view shows a buffer: the page it
/// holds, its replacement figure (the clock sweep's usage count, 0 to
/// [`super::BM_MAX_USAGE_COUNT`]; 0 under a policy without one), whether it is dirty and
/// how many pins it has now; and as InnoDB's `information_schema.INNODB_BUFFER_PAGE`
/// shows a block: whether it is in the old sublist (`IS_OLD`), its page type, and whether
/// the page was freed while it stayed resident (a FREED block, which that view shows as
/// `PAGE_TYPE = 'UNKNOWN'`). Read without locks, as pg_buffercache reads each header on
/// its own: a busy pool may change while it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferCacheEntry {
    /// The frame.
    pub frame: FrameId,
    /// The page it holds.
    pub page: PageId,
    /// The replacer's usage figure (`pg_buffercache.usagecount`).
    pub usage_count: u8,
    /// Changed since it was last written (`isdirty`).
    pub dirty: bool,
    /// Pins held now (`pinning_backends`, counted per pin here).
    pub pins: u32,
    /// In the old sublist of InnoDB's LRU list (`INNODB_BUFFER_PAGE.IS_OLD`); false under
    /// a policy without one ([`super::replacer::Replacer::is_old`]).
    #[serde(default)]
    pub old: bool,
    /// The page's layout tag ([`crate::page::page_type`]), read from the frame.
    #[serde(default)]
    pub page_type: u8,
    /// The page's block is free in its relation while the frame still holds it: a page
    /// freed in place ([`BufferPool::free_resident`], InnoDB's FREED block state).
    #[serde(default)]
    pub freed: bool,
}

pub(super) struct Frame {
    page: AtomicU64,
    pub(super) pins: AtomicU32,
    pub(super) dirty: AtomicBool,
    /// A copy of the page is being written (PostgreSQL BM_IO_IN_PROGRESS): set before the
    /// dirty flag is cleared, cleared once the copy is on the device (or its write failed
    /// and the page is dirty again). One write per frame at a time.
    pub(super) writing: AtomicBool,
    valid: AtomicBool,
    pub(super) rec_lsn: AtomicU64,
    /// The page was (re)initialized by a WAL record that rebuilds it whole (a `will_init`
    /// block) since its last write: redo can recreate it without reading it, so its next
    /// write skips the doublewrite area (MariaDB's REINIT state: mtr0mtr.cc `mtr_t::init`
    /// → `buf_page_t::set_reinit` with the INIT_PAGE record; buf0flu.cc
    /// `buf_page_t::flush` writes a REINIT page directly, not through `buf_dblwr`).
    /// Set by [`super::log_change`], cleared by the write or when the page is dropped.
    pub(super) reinit: AtomicBool,
    data: RwLock<Box<[u8]>>,
}

/// A fixed set of frames caching pages of a [`PageStore`]. See the `buffer` module doc for
/// the rules.
pub struct BufferPool {
    frames: Box<[Frame]>,
    table: Box<[Mutex<HashMap<PageId, FrameId>>]>,
    free: Mutex<Vec<FrameId>>,
    replacer: Box<dyn Replacer>,
    store: Arc<PageStore>,
    wal: Arc<Wal>,
    dblwr: Option<Doublewrite>,
    stats: Arc<Stats>,
    unsynced_rels: Mutex<BTreeSet<FileId>>,
    /// Held shared by every page write from the moment it clears the pages' dirty flags
    /// until the write is done and its relations are registered for the next sync; a
    /// checkpoint takes it exclusively before it collects those relations
    /// ([`BufferPool::wait_for_writes_in_flight`]).
    writes_in_flight: parking_lot::RwLock<()>,
    rel_io: Box<[[AtomicU64; 3]]>,
    type_io: Box<[[AtomicU64; 2]]>,
    /// The free-page target in frames (InnoDB), from `cfg.page_cleaner.free_target`.
    free_target: Option<usize>,
    /// Wakes the page cleaner before its interval (buf_pool_t::page_cleaner_wakeup).
    cleaner_bell: Mutex<bool>,
    cleaner_wake: Condvar,
    /// The background writer's state between rounds (clock sweep only).
    bgwriter: Mutex<BgWriterState>,
    /// Linear read-ahead's state (InnoDB), from `cfg.linear_read_ahead`.
    linear_ra: Option<super::read_ahead::LinearReadAhead>,
    cfg: BufferPoolConfig,
}

impl BufferPool {
    /// A pool of `cfg.frames` frames over `store`, flushing `wal` before every page write,
    /// and writing through `dblwr` when given.
    ///
    /// Errors: [`StorageError::InvalidConfig`] for zero frames or out-of-range replacer settings.
    pub fn new(
        cfg: BufferPoolConfig,
        store: Arc<PageStore>,
        wal: Arc<Wal>,
        dblwr: Option<Doublewrite>,
        stats: Arc<Stats>,
    ) -> StorageResult<Self> {
        let n = cfg.frames;
        if n == 0 {
            return Err(StorageError::InvalidConfig(
                "buffer pool frames must be at least 1".into(),
            ));
        }
        let replacer: Box<dyn Replacer> = match &cfg.replacer {
            ReplacerConfig::ClockSweep => Box::new(ClockSweep::new(n)),
            ReplacerConfig::LruMidpoint {
                old_pct,
                old_blocks_time_ms,
                old_min_len,
            } => {
                if !(5..=95).contains(old_pct) {
                    return Err(StorageError::InvalidConfig(format!(
                        "lru_midpoint old_pct must be 5..=95 (innodb_old_blocks_pct), got {old_pct}"
                    )));
                }
                Box::new(LruMidpoint::new(
                    n,
                    *old_pct,
                    *old_blocks_time_ms,
                    *old_min_len,
                ))
            }
        };
        let page_bytes = store.page_size().bytes();
        let frames = (0..n)
            .map(|_| Frame {
                page: AtomicU64::new(NO_PAGE),
                pins: AtomicU32::new(0),
                dirty: AtomicBool::new(false),
                writing: AtomicBool::new(false),
                valid: AtomicBool::new(false),
                rec_lsn: AtomicU64::new(0),
                reinit: AtomicBool::new(false),
                data: RwLock::new(vec![0u8; page_bytes].into_boxed_slice()),
            })
            .collect();
        Ok(BufferPool {
            frames,
            table: (0..PARTITIONS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
            free: Mutex::new((0..n).rev().collect()),
            replacer,
            store,
            wal,
            dblwr,
            stats,
            unsynced_rels: Mutex::new(BTreeSet::new()),
            writes_in_flight: parking_lot::RwLock::new(()),
            rel_io: (0..REL_IO_SLOTS)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
            type_io: (0..256)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
            free_target: cfg.page_cleaner.free_target.map(|t| t.pages(n)),
            cleaner_bell: Mutex::new(false),
            cleaner_wake: Condvar::new(),
            bgwriter: Mutex::new(BgWriterState::default()),
            linear_ra: cfg
                .linear_read_ahead
                .and_then(super::read_ahead::LinearReadAhead::new),
            cfg,
        })
    }

    /// Settings.
    pub fn config(&self) -> &BufferPoolConfig {
        &self.cfg
    }

    /// The page store below.
    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    /// The WAL the pool flushes before writing pages.
    pub fn wal(&self) -> &Arc<Wal> {
        &self.wal
    }

    /// Whether page writes go through the doublewrite area (torn-page protection
    /// `doublewrite`); recovery then skips a page's records before a later record that
    /// rebuilds it whole (`recovery::redo`).
    pub fn has_doublewrite(&self) -> bool {
        self.dblwr.is_some()
    }

    fn count_rel(&self, rel: FileId, hit: bool) {
        if let Some(c) = self.rel_counters(rel) {
            c[usize::from(!hit)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One page of relation `rel` written home ([`RelIo::blks_written`]).
    fn count_rel_written(&self, rel: FileId) {
        if let Some(c) = self.rel_counters(rel) {
            c[2].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters of relation `rel` (hits, reads, writes), `None` beyond the first
    /// [`REL_IO_SLOTS`] relations.
    fn rel_counters(&self, rel: FileId) -> Option<&[AtomicU64; 3]> {
        self.rel_io
            .get(rel.wrapping_sub(crate::device::file_ids::FIRST_RELATION) as usize)
    }

    /// Page requests of relation `rel` since the pool opened (zero for relations beyond the
    /// first 4096, which are not counted per relation).
    pub fn rel_io(&self, rel: FileId) -> RelIo {
        self.rel_counters(rel).map_or(RelIo::default(), |c| RelIo {
            blks_hit: c[0].load(Ordering::Relaxed),
            blks_read: c[1].load(Ordering::Relaxed),
            blks_written: c[2].load(Ordering::Relaxed),
        })
    }

    /// Pages of type `page_type` (the common header's layout tag) read into and written from
    /// the pool since it opened.
    pub fn page_type_io(&self, page_type: u8) -> PageTypeIo {
        let c = &self.type_io[page_type as usize];
        PageTypeIo {
            pages_read: c[0].load(Ordering::Relaxed),
            pages_written: c[1].load(Ordering::Relaxed),
        }
    }

    /// The free-page target in frames, when the page cleaner keeps one.
    pub fn free_target(&self) -> Option<usize> {
        self.free_target
    }

    /// Frames in the pool (InnoDB `buf_pool.usable_size()`: the pages it can hold).
    pub fn n_frames(&self) -> usize {
        self.frames.len()
    }

    /// Frames on the free list now.
    pub fn free_frames(&self) -> usize {
        self.free.lock().len()
    }

    /// Sleeps up to `d`, or until [`BufferPool::wake_page_cleaner`] (the page cleaner's
    /// `my_cond_timedwait` on `buf_pool.do_flush_list`).
    pub fn page_cleaner_sleep(&self, d: Duration) {
        let mut rung = self.cleaner_bell.lock();
        if !*rung {
            self.cleaner_wake.wait_for(&mut rung, d);
        }
        *rung = false;
    }

    /// Wakes the page cleaner (buf_pool_t::page_cleaner_wakeup; also used at shutdown).
    pub fn wake_page_cleaner(&self) {
        *self.cleaner_bell.lock() = true;
        self.cleaner_wake.notify_all();
    }

    /// buf_pool_t::need_LRU_eviction: the LRU list is longer than BUF_LRU_MIN_LEN and fewer
    /// than half the free-page target are free.
    fn need_lru_eviction(&self, target: usize, free: usize) -> bool {
        self.frames.len() - free > BUF_LRU_MIN_LEN && free < target / 2
    }

    pub(super) fn frame(&self, f: FrameId) -> &Frame {
        &self.frames[f]
    }

    fn partition(&self, id: PageId) -> &Mutex<HashMap<PageId, FrameId>> {
        let h = pack(id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.table[(h >> 57) as usize % PARTITIONS]
    }

    /// Pins and share-locks page `id`, reading it on a miss.
    ///
    /// Errors: [`StorageError::BufferPoolExhausted`] when every frame is pinned; the page store's
    /// errors (no such page, checksum mismatch, device errors); write errors of evicting a
    /// dirty victim.
    pub fn fetch_read(&self, id: PageId) -> StorageResult<ReadPageGuard<'_>> {
        let (f, hit) = self.pin(id, false)?;
        Ok(self.read_guard(f, id, hit))
    }

    /// The share-locked guard of pinned frame `f` holding `id`.
    fn read_guard(&self, f: FrameId, id: PageId, hit: bool) -> ReadPageGuard<'_> {
        let data = Some(self.frames[f].data.read());
        ReadPageGuard {
            pool: self,
            frame: f,
            id,
            hit,
            data,
        }
    }

    /// Pins and share-locks page `id` as a scan's heap fetch, which keeps its buffer pinned
    /// until the next fetch or the end of the statement (heapam_handler.c
    /// `heapam_index_fetch_tuple` → bufmgr.c `ReleaseAndReadBuffer` into `xs_cbuf`): the
    /// page becomes this thread's held buffer, and this thread's later pins of it until
    /// [`release_held`] are nested pins, which do not raise its usage count (bufmgr.c
    /// `PinBuffer` raises it only for a backend's first pin of a buffer). When the page is
    /// already the held buffer, the fetch neither counts a hit nor touches the usage count
    /// (`ReleaseAndReadBuffer` returns the buffer it holds). The model keeps the mark, not
    /// the pin itself: the page may be evicted between two fetches (then it is read again).
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fetch_read_held(&self, id: PageId) -> StorageResult<ReadPageGuard<'_>> {
        let (f, hit) = self.pin_counted(id, false, self.held_access(id))?;
        HELD.with(|h| h.set(Some((self.id(), f, id))));
        Ok(self.read_guard(f, id, hit))
    }

    /// Pins and share-locks page `id` without an access of the replacement policy: a hit
    /// is counted but leaves the page where it is in the LRU list, as MariaDB's purge fixes
    /// the undo pages it reads (trx0purge.cc `purge_sys_t::get_page` →
    /// buf0buf.cc `buf_pool_t::page_fix`, which neither sets the access time nor calls
    /// `buf_page_make_young_if_needed`, unlike `buf_page_get_gen`). A miss reads the page
    /// in as [`BufferPool::fetch_read`] does (`buf_read_page`: at the midpoint).
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fetch_read_fixed(&self, id: PageId) -> StorageResult<ReadPageGuard<'_>> {
        let (f, hit) = self.pin_counted(id, false, Access::Fix)?;
        Ok(self.read_guard(f, id, hit))
    }

    /// Pins page `id` without a content lock and without an access of the replacement
    /// policy, reading it on a miss, and unpins it: the pool-side effect of InnoDB's
    /// `buf_pool_t::page_fix` for a page the caller fixes and latches but neither reads nor
    /// changes (btr0cur.cc `btr_latch_prev`: the left sibling of a leaf that a
    /// `BTR_MODIFY_TREE` search reaches). A hit is counted and leaves the page where it is
    /// in the LRU list; a miss reads it in as [`BufferPool::fetch_read`] does (at the
    /// midpoint). Taking no lock, it cannot wait on a latch the caller's order forbids.
    /// Returns whether it was a hit.
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fix_page(&self, id: PageId) -> StorageResult<bool> {
        let (f, hit) = self.pin_counted(id, false, Access::Fix)?;
        self.unpin(f);
        Ok(hit)
    }

    /// An access of the replacement policy to page `id` if it is resident, counting no hit
    /// and reading nothing: InnoDB's optimistic restore of a persistent cursor to the leaf
    /// it was stored on (btr0pcur.cc `btr_pcur_t::restore_position` →
    /// `btr_pcur_optimistic_latch_leaves` → buf0buf.cc `buf_page_optimistic_fix`,
    /// `buf_page_optimistic_get`, which calls `buf_page_make_young_if_needed` but not
    /// `buf_inc_get`, so `Innodb_buffer_pool_read_requests` does not count it). Returns
    /// false, changing nothing, when the page is not resident (InnoDB then restores by a
    /// search from the root, which the caller does).
    pub fn restore_access(&self, id: PageId) -> bool {
        let Some(f) = self.pin_mapped(id) else {
            return false;
        };
        let valid = self.frames[f].valid.load(Ordering::Acquire);
        if valid {
            self.count_touch(self.replacer.accessed(f));
        }
        self.unpin(f);
        valid
    }

    /// Pins the frame that page `id` is mapped to, if any, under its partition lock
    /// (invariant 2). The frame may still be loading (`valid` false).
    fn pin_mapped(&self, id: PageId) -> Option<FrameId> {
        let t = self.partition(id).lock();
        t.get(&id).map(|&f| {
            self.frames[f].pins.fetch_add(1, Ordering::AcqRel);
            f
        })
    }

    /// Counts what an access did to the page's place in the replacement order.
    fn count_touch(&self, touch: Touch) {
        match touch {
            Touch::Unchanged => {}
            Touch::MovedToHead => self.stats.add(Metric::buffer_pages_moved_to_head, 1),
            Touch::MadeYoung => self.stats.add(Metric::buffer_pages_made_young, 1),
            Touch::MadeNotYoung => self.stats.add(Metric::buffer_pages_made_not_young, 1),
        }
    }

    /// True when page `id` of this pool is this thread's held buffer.
    fn is_held(&self, id: PageId) -> bool {
        HELD.with(|h| matches!(h.get(), Some((p, _, i)) if p == self.id() && i == id))
    }

    /// How a pin of `id` by a caller working on its scan's held buffer counts: not at all
    /// when `id` is that buffer (`ReleaseAndReadBuffer` returns the buffer it holds), else
    /// as an access.
    fn held_access(&self, id: PageId) -> Access {
        if self.is_held(id) {
            Access::Uncounted
        } else {
            Access::Counted
        }
    }

    /// Pins and exclusively locks page `id`, reading it on a miss.
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fetch_write(&self, id: PageId) -> StorageResult<WritePageGuard<'_>> {
        self.pin_write(id, false)
    }

    /// Pins and exclusively locks page `id` without an access of the replacement policy:
    /// a hit is counted but leaves the page where it is in the LRU list. MariaDB 10.11's
    /// `buf_page_get_gen` does not make a page young; its callers do, with
    /// `buf_page_make_young_if_needed`, where they mean to (B-tree leaves, a transaction's
    /// undo pages, rollback segment headers), and the undo log pages that commit and
    /// history truncation change are not among them (trx0purge.cc
    /// `trx_purge_add_undo_to_history`, `purge_sys_t::iterator::free_history_rseg`, and
    /// the list neighbours fut0lst.cc fetches). A miss reads the page in as
    /// [`BufferPool::fetch_write`] does.
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fetch_write_fixed(&self, id: PageId) -> StorageResult<WritePageGuard<'_>> {
        self.pin_write_counted(id, false, Access::Fix)
    }

    /// Pins `id` (zero-filled on a miss when `create`, else read) and takes its exclusive
    /// lock.
    fn pin_write(&self, id: PageId, create: bool) -> StorageResult<WritePageGuard<'_>> {
        self.pin_write_counted(id, create, Access::Counted)
    }

    /// [`BufferPool::pin_write`], a hit counted as `access` says.
    fn pin_write_counted(
        &self,
        id: PageId,
        create: bool,
        access: Access,
    ) -> StorageResult<WritePageGuard<'_>> {
        let (f, hit) = self.pin_counted(id, create, access)?;
        let data = Some(self.frames[f].data.write());
        Ok(WritePageGuard {
            pool: self,
            frame: f,
            id,
            hit,
            data,
        })
    }

    /// Pins and exclusively locks page `id`, which the caller pinned moments ago and let go
    /// only to take two pages' locks in a fixed order: the pin counts neither a hit nor an
    /// access of the replacement policy, as PostgreSQL keeps the pin and only locks the
    /// buffer again (hio.c `RelationGetBufferForTuple` with `otherBuffer`: both locked in
    /// block order, neither pinned twice). A page evicted meanwhile is read again and
    /// counted as a miss.
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn fetch_write_relatch(&self, id: PageId) -> StorageResult<WritePageGuard<'_>> {
        self.pin_write_counted(id, false, Access::Uncounted)
    }

    /// Pins page `id` and takes its exclusive lock only if no one holds its content lock
    /// now; `None` otherwise (bufmgr.c `ConditionalLockBuffer`).
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn try_fetch_write(&self, id: PageId) -> StorageResult<Option<WritePageGuard<'_>>> {
        self.try_fetch_write_counted(id, Access::Counted)
    }

    /// [`BufferPool::try_fetch_write`] by a caller that works on the buffer its scan
    /// holds: when `id` is this thread's held buffer ([`BufferPool::fetch_read_held`]), the
    /// pin counts neither a hit nor a usage change, as pruneheap.c `heap_page_prune_opt`
    /// takes the cleanup lock on the buffer the scan has pinned without reading it again.
    ///
    /// Errors: as [`BufferPool::fetch_read`].
    pub fn try_fetch_write_held(&self, id: PageId) -> StorageResult<Option<WritePageGuard<'_>>> {
        self.try_fetch_write_counted(id, self.held_access(id))
    }

    fn try_fetch_write_counted(
        &self,
        id: PageId,
        access: Access,
    ) -> StorageResult<Option<WritePageGuard<'_>>> {
        let (f, hit) = self.pin_counted(id, false, access)?;
        match self.frames[f].data.try_write() {
            Some(data) => Ok(Some(WritePageGuard {
                pool: self,
                frame: f,
                id,
                hit,
                data: Some(data),
            })),
            None => {
                self.unpin(f);
                Ok(None)
            }
        }
    }

    /// Pins and exclusively locks page `id` without reading it: on a miss the frame is
    /// zero-filled, on a hit it holds the cached bytes (bufmgr.c `RBM_ZERO_AND_LOCK`, which
    /// redo uses for a page it restores from a full-page image or rebuilds whole). The
    /// relation is extended to cover `id` first. The caller overwrites the whole page.
    ///
    /// Errors: as [`PageStore::ensure_block`] and [`BufferPool::fetch_read`].
    pub fn fetch_for_overwrite(&self, id: PageId) -> StorageResult<WritePageGuard<'_>> {
        self.store.ensure_block(id)?;
        self.pin_write(id, true)
    }

    /// Allocates a page of `rel` in the store and returns it zeroed, pinned, exclusively
    /// locked and dirty, without reading it (PostgreSQL `ReadBuffer(P_NEW)`).
    ///
    /// Errors: as [`PageStore::allocate_page`] and [`BufferPool::fetch_read`].
    pub fn new_page(&self, rel: FileId) -> StorageResult<WritePageGuard<'_>> {
        let id = self.store.allocate_page(rel)?;
        self.pin_new(id)
    }

    /// Pins allocated page `id` zeroed, exclusively locked and dirty, without reading it.
    fn pin_new(&self, id: PageId) -> StorageResult<WritePageGuard<'_>> {
        let mut g = self.pin_write(id, true)?;
        g.hit = false;
        g.data_mut().fill(0);
        Ok(g)
    }

    /// [`BufferPool::new_page`] for a page InnoDB's file segment allocates near block
    /// `hint` ([`PageStore::allocate_page_near`]): a B-tree split's new right page, with the
    /// split page's number + 1 as the hint. A freed block still resident is reused in
    /// place, as `new_page` does.
    ///
    /// Errors: as [`PageStore::allocate_page_near`] and [`BufferPool::fetch_read`].
    pub fn new_page_near(&self, rel: FileId, hint: u32) -> StorageResult<WritePageGuard<'_>> {
        let id = self.store.allocate_page_near(rel, hint)?;
        self.pin_new(id)
    }

    /// [`BufferPool::new_page`] for a fragment page ([`PageStore::allocate_fragment_page`]:
    /// an undo page, InnoDB's `fsp_alloc_free_page` in the system tablespace, near block
    /// `hint`). A freed block still resident is reused in place (buf0buf.cc
    /// `buf_page_create_low`, not counted as created); one evicted since is created at the
    /// head of the LRU list.
    ///
    /// Errors: as [`PageStore::allocate_fragment_page`] and [`BufferPool::fetch_read`].
    pub fn new_fragment_page(&self, rel: FileId, hint: u32) -> StorageResult<WritePageGuard<'_>> {
        let id = self.store.allocate_fragment_page(rel, hint)?;
        self.pin_new(id)
    }

    /// One more pin of frame `f`, which the caller already pins (so it stays mapped to its
    /// page meanwhile): [`ReadPageGuard::fix`](super::ReadPageGuard::fix).
    pub(super) fn pin_again(&self, f: FrameId) {
        self.frames[f].pins.fetch_add(1, Ordering::AcqRel);
    }

    /// Drops one pin; the last pin of a frame that holds no page puts it on the free list.
    ///
    /// The frame's page is read before the pin is dropped: only a holder that saw the frame
    /// empty while pinned frees it. Read after, a holder of a mapped frame could see the page
    /// an evictor removed in the instant after its last unpin, and both would free the frame
    /// (two pages would then share it). Every thread that empties a frame holds a pin while it
    /// does, so it is the one that frees it.
    pub(super) fn unpin(&self, f: FrameId) {
        let fr = &self.frames[f];
        let empty = fr.page.load(Ordering::Acquire) == NO_PAGE;
        if fr.pins.fetch_sub(1, Ordering::AcqRel) == 1 && empty {
            self.free.lock().push(f);
        }
    }

    /// Pins `id`'s frame, loading the page (or zero-filling it when `create`) on a miss;
    /// returns the frame and whether it was a hit.
    fn pin(&self, id: PageId, create: bool) -> StorageResult<(FrameId, bool)> {
        self.pin_counted(id, create, Access::Counted)
    }

    /// [`BufferPool::pin`], a hit counted as `access` says. A hit on this thread's held
    /// buffer ([`BufferPool::fetch_read_held`]) is a nested pin: counted as a hit, without
    /// raising the usage count.
    fn pin_counted(
        &self,
        id: PageId,
        create: bool,
        access: Access,
    ) -> StorageResult<(FrameId, bool)> {
        let access = if access == Access::Counted && !create {
            self.descent_access(id)
        } else {
            access
        };
        let r = self.pin_counted_inner(id, create, access)?;
        if access == Access::Counted && !create {
            if let Some(ra) = &self.linear_ra {
                if let Some(first) = ra.on_access(id, !r.1, |p| self.is_resident(p)) {
                    self.read_ahead_area(id.rel, first, ra.area_pages());
                }
            }
        }
        Ok(r)
    }

    /// How a counted pin of `id` counts under this thread's descent mode: noted and counted
    /// while recording, the same pin again (uncounted) the first time a repeated descent
    /// pins a recorded page, counted otherwise.
    fn descent_access(&self, id: PageId) -> Access {
        DESCENT.with(|d| match &mut *d.borrow_mut() {
            Some(DescentMode::Recording { pool, rel, pages })
                if *pool == self.id() && *rel == id.rel =>
            {
                pages.push(id);
                Access::Counted
            }
            Some(DescentMode::Repeating { pool, pages }) if *pool == self.id() => {
                match pages.iter().position(|&p| p == id) {
                    Some(i) => {
                        pages.remove(i);
                        Access::Uncounted
                    }
                    None => Access::Counted,
                }
            }
            _ => Access::Counted,
        })
    }

    /// Runs `f` noting every counted pin it makes of a page of relation `rel` in this pool
    /// (an index descent), for [`BufferPool::repeat_descent`]. Returns `f`'s result and
    /// the pages pinned.
    ///
    /// Where the engine descends an index twice where PostgreSQL descends it once: nbtinsert.c
    /// `_bt_doinsert` runs `_bt_search` once and checks uniqueness (`_bt_check_unique`) and
    /// inserts on the leaf it keeps pinned, so each page on the path gets one pin (bufmgr.c
    /// `PinBuffer` raises its usage count once, `ReadBuffer_common` counts one hit). The
    /// engine's unique check scans the index first and the insertion descends again; with
    /// the check recorded and the insertion repeated, the pair counts as the one descent.
    /// Nesting replaces the outer mode for `f`'s duration.
    pub fn record_descent<T>(&self, rel: FileId, f: impl FnOnce() -> T) -> (T, DescentPins) {
        let recording = DescentMode::Recording {
            pool: self.id(),
            rel,
            pages: Vec::new(),
        };
        let (r, mode) = with_descent_mode(recording, f);
        let pages = match mode {
            Some(DescentMode::Recording { pages, .. }) => pages,
            _ => Vec::new(),
        };
        (
            r,
            DescentPins {
                pool: self.id(),
                pages,
            },
        )
    }

    /// Runs `f` with the pins `pins` recorded ([`BufferPool::record_descent`]) already
    /// held: the first pin `f` makes of each recorded page counts neither a hit nor an
    /// access of the replacement policy (a page evicted meanwhile is read again and counted
    /// as a miss). Pins of other pages count as usual.
    pub fn repeat_descent<T>(&self, pins: DescentPins, f: impl FnOnce() -> T) -> T {
        if pins.pool != self.id() {
            return f();
        }
        let repeating = DescentMode::Repeating {
            pool: self.id(),
            pages: pins.pages,
        };
        with_descent_mode(repeating, f).0
    }

    /// Reads the pages `first..first + n` of `rel` that exist and are not in the pool into
    /// it, without an access of the replacement policy (InnoDB reads them to the LRU
    /// list's midpoint and leaves `access_time` unset), under the cause `read_ahead`
    /// (read_ahead.rs). A page that cannot be read is skipped, as InnoDB ignores a failed
    /// read-ahead.
    fn read_ahead_area(&self, rel: FileId, first: u32, n: u32) {
        let Ok(n_blocks) = self.store.n_blocks(rel) else {
            return;
        };
        let _c = crate::stats::enter(crate::stats::Cause::ReadAhead);
        for block in first..first.saturating_add(n).min(n_blocks) {
            let id = PageId { rel, block };
            if self.is_resident(id) {
                continue;
            }
            if let Ok((f, _)) = self.pin_counted_inner(id, false, Access::Fix) {
                self.unpin(f);
                if let Some(ra) = &self.linear_ra {
                    ra.read_in(id);
                }
            }
        }
    }

    fn pin_counted_inner(
        &self,
        id: PageId,
        create: bool,
        access: Access,
    ) -> StorageResult<(FrameId, bool)> {
        let part = self.partition(id);
        loop {
            if let Some(f) = self.pin_mapped(id) {
                let fr = &self.frames[f];
                if !fr.valid.load(Ordering::Acquire) {
                    drop(fr.data.read()); // wait for the thread loading it
                    if !fr.valid.load(Ordering::Acquire) {
                        self.unpin(f); // its load failed; try ourselves
                        continue;
                    }
                }
                let nested = HELD.with(|h| h.get() == Some((self.id(), f, id)));
                let touch = if access != Access::Counted || nested {
                    // No usage change: a nested pin (PinBuffer with a private refcount), or
                    // a fix that is no access (buf_pool_t::page_fix).
                    Touch::Unchanged
                } else if create {
                    self.replacer.reinitialized(f)
                } else if strategy::with_active(self.id(), |_| ()).is_some() {
                    self.replacer.accessed_by_strategy(f)
                } else {
                    self.replacer.accessed(f)
                };
                self.count_touch(touch);
                if !create && access != Access::Uncounted {
                    self.stats.add(Metric::buffer_hits, 1);
                    self.count_rel(id.rel, true);
                    super::vacuum_cost::charge(super::vacuum_cost::Charge::Hit);
                }
                return Ok((f, true));
            }
            let f = self.grab_frame_for_read()?;
            let fr = &self.frames[f];
            let mut t = part.lock();
            if t.contains_key(&id) {
                drop(t);
                self.unpin(f);
                continue;
            }
            let mut data = fr.data.write();
            t.insert(id, f);
            fr.page.store(pack(id), Ordering::Release);
            drop(t);
            let loaded = if create {
                data.fill(0);
                Ok(())
            } else {
                self.store.read_page(id, &mut data)
            };
            match loaded {
                Ok(()) => {
                    if !create {
                        self.type_io[crate::page::page_type(&data) as usize][0]
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    fr.valid.store(true, Ordering::Release);
                    drop(data);
                    if create {
                        self.replacer.created(f);
                        self.stats.add(Metric::buffer_pages_created, 1);
                    } else {
                        self.replacer.loaded(f);
                        self.stats.add(Metric::buffer_misses, 1);
                        self.count_rel(id.rel, false);
                        super::vacuum_cost::charge(super::vacuum_cost::Charge::Miss);
                    }
                    return Ok((f, false));
                }
                Err(e) => {
                    let mut t = part.lock();
                    t.remove(&id);
                    fr.page.store(NO_PAGE, Ordering::Release);
                    drop(t);
                    drop(data);
                    self.unpin(f);
                    return Err(e);
                }
            }
        }
    }

    /// A frame pinned once by the caller, holding no page: from the free list, else evicted.
    /// With a free-page target, taking a frame that leaves fewer than half the target free
    /// wakes the page cleaner (buf0lru.cc `buf_LRU_get_free_block`).
    fn grab_frame(&self) -> StorageResult<FrameId> {
        self.replacer.note_alloc();
        loop {
            let (f, left) = {
                let mut free = self.free.lock();
                (free.pop(), free.len())
            };
            if let Some(target) = self.free_target {
                if self.need_lru_eviction(target, left) {
                    self.wake_page_cleaner();
                }
            }
            let Some(f) = f else {
                break;
            };
            if self.frames[f]
                .pins
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(f);
            }
            // A stale pin from a failed load: its unpin puts the frame back.
        }
        self.evict()
    }

    /// The replacer's usage figure of frame `f` (tests).
    #[cfg(test)]
    pub(super) fn replacer_usage(&self, f: FrameId) -> u8 {
        self.replacer.usage(f)
    }

    /// This pool's identity for the thread's ring ([`strategy::with_active`]).
    fn id(&self) -> usize {
        self as *const BufferPool as usize
    }

    /// The frame for a page about to be read: with a ring installed on this thread, the
    /// ring's next frame when it can be reused, else a frame from [`Self::grab_frame`] that
    /// then takes the ring's slot (freelist.c `StrategyGetBuffer` → `GetBufferFromRing`,
    /// `AddBufferToRing`); without a ring, [`Self::grab_frame`].
    fn grab_frame_for_read(&self) -> StorageResult<FrameId> {
        let slot = strategy::with_active(self.id(), |r| {
            r.current = (r.current + 1) % r.slots.len();
            r.slots[r.current]
        });
        let Some(slot) = slot else {
            return self.grab_frame();
        };
        if let Some(f) = slot {
            if self.replacer.usage(f) <= 1 && self.take_frame(f)? {
                return Ok(f);
            }
        }
        let f = self.grab_frame()?;
        strategy::with_active(self.id(), |r| r.slots[r.current] = Some(f));
        Ok(f)
    }

    /// Evicts a victim chosen by the replacer (PostgreSQL `BufferAlloc`).
    fn evict(&self) -> StorageResult<FrameId> {
        let n = self.frames.len();
        for _ in 0..(2 * n).max(16) {
            let evictable = |f: FrameId| self.frames[f].pins.load(Ordering::Relaxed) == 0;
            let Some(f) = self.replacer.victim(&evictable) else {
                break;
            };
            if self.take_frame(f)? {
                return Ok(f);
            }
        }
        Err(StorageError::BufferPoolExhausted { frames: n })
    }

    /// Empties frame `f` for the caller: pins it, writes its page first when dirty, and
    /// unmaps it if it is still pinned only by the caller and clean under its partition lock
    /// (bufmgr.c `BufferAlloc`: FlushBuffer under a pin, then recheck). Returns true with
    /// `f` pinned once and empty; false (nothing held) when `f` holds no page, is pinned, or
    /// its page could not be taken.
    ///
    /// Errors: write errors of the dirty page (the frame is unpinned).
    fn take_frame(&self, f: FrameId) -> StorageResult<bool> {
        let fr = &self.frames[f];
        let Some(id) = unpack(fr.page.load(Ordering::Acquire)) else {
            return Ok(false);
        };
        let part = self.partition(id);
        if !self.pin_if_mapped(&part.lock(), f, id) {
            return Ok(false);
        }
        if fr.dirty.load(Ordering::Acquire) {
            // The evicting thread may hold other content locks: take the victim's only
            // if it is free, else pass it over (bufmgr.c `BufferAlloc`:
            // `LWLockConditionalAcquire` on the victim's content lock).
            if let Err(e) = self.write_frames_with(&[f], true) {
                self.unpin(f);
                return Err(e);
            }
        }
        let t = part.lock();
        if fr.pins.load(Ordering::Acquire) == 1 && !fr.dirty.load(Ordering::Acquire) {
            self.unmap_evicted(t, f, id);
            return Ok(true);
        }
        drop(t);
        self.unpin(f);
        Ok(false)
    }

    /// Pins frame `f` if it holds a page; returns the page.
    fn pin_resident(&self, f: FrameId) -> Option<PageId> {
        let id = unpack(self.frames[f].page.load(Ordering::Acquire))?;
        let t = self.partition(id).lock();
        if t.get(&id) == Some(&f) {
            self.frames[f].pins.fetch_add(1, Ordering::AcqRel);
            Some(id)
        } else {
            None
        }
    }

    /// Writes the dirty pages among `fs` (frames the caller has pinned) to their home
    /// locations, the WAL flushed first up to their highest page LSN (WAL-before-data), and
    /// through the doublewrite area when configured. Counts `buffer_pages_written` to the
    /// current cause. Returns the pages written.
    ///
    /// Errors: WAL flush or device errors; the pages stay dirty then.
    pub(super) fn write_frames(&self, fs: &[FrameId]) -> StorageResult<usize> {
        self.write_frames_with(fs, false)
    }

    /// [`BufferPool::write_frames`]; with `conditional`, a frame whose content lock is held
    /// is skipped (it stays dirty).
    pub(super) fn write_frames_with(
        &self,
        fs: &[FrameId],
        conditional: bool,
    ) -> StorageResult<usize> {
        let _in_flight = self.writes_in_flight.read();
        let mut copies: Vec<(PageId, Vec<u8>)> = Vec::with_capacity(fs.len());
        let mut reinit: Vec<bool> = Vec::with_capacity(fs.len());
        let mut written_frames = Vec::with_capacity(fs.len());
        let mut max_lsn = 0;
        for &f in fs {
            let fr = &self.frames[f];
            let g = if conditional {
                match fr.data.try_read() {
                    Some(g) => g,
                    None => continue,
                }
            } else {
                fr.data.read()
            };
            let Some(id) = unpack(fr.page.load(Ordering::Acquire)) else {
                continue;
            };
            // Another thread is writing an older copy: leave the page dirty for later
            // (two copies in flight could reach the device in either order).
            if fr
                .writing
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                continue;
            }
            if !fr.dirty.swap(false, Ordering::SeqCst) {
                fr.writing.store(false, Ordering::SeqCst);
                continue;
            }
            fr.rec_lsn.store(0, Ordering::Release);
            reinit.push(fr.reinit.swap(false, Ordering::SeqCst));
            max_lsn = max_lsn.max(page_lsn(&g).0);
            copies.push((id, g.to_vec()));
            written_frames.push(f);
        }
        if copies.is_empty() {
            return Ok(0);
        }
        let n = copies.len();
        let r = self.write_copies(&mut copies, &reinit, max_lsn);
        for (f, reinit) in written_frames.into_iter().zip(reinit) {
            if r.is_err() {
                self.frames[f].dirty.store(true, Ordering::SeqCst);
                if reinit {
                    self.frames[f].reinit.store(true, Ordering::SeqCst);
                }
            }
            self.frames[f].writing.store(false, Ordering::SeqCst);
        }
        r.map(|_| n)
    }

    /// Writes `copies` home, WAL first. With a doublewrite area, the copies whose `reinit`
    /// is set go straight home (their relations synced at the next checkpoint, as without
    /// the area) and the others through the area (MariaDB buf0flu.cc `buf_page_t::flush`:
    /// `(s & LRU_MASK) == REINIT || !space->use_doublewrite()` → `space->io`, else
    /// `buf_dblwr.add_to_batch`).
    fn write_copies(
        &self,
        copies: &mut [(PageId, Vec<u8>)],
        reinit: &[bool],
        max_lsn: u64,
    ) -> StorageResult<()> {
        self.wal.flush(Lsn(max_lsn))?;
        debug_assert!(self.wal.durable_lsn().0 >= max_lsn, "WAL-before-data");
        let direct = |copies: &mut [(PageId, Vec<u8>)]| -> StorageResult<()> {
            for (id, copy) in copies.iter_mut() {
                self.store.write_page(*id, copy)?;
            }
            self.unsynced_rels
                .lock()
                .extend(copies.iter().map(|(id, _)| id.rel));
            Ok(())
        };
        match &self.dblwr {
            Some(d) if reinit.contains(&true) => {
                // Split without copying: the pages move into two lists and back.
                let (mut init, mut through) = (Vec::new(), Vec::new());
                for ((id, copy), &r) in copies.iter_mut().zip(reinit) {
                    let page = (*id, std::mem::take(copy));
                    if r {
                        init.push(page);
                    } else {
                        through.push(page);
                    }
                }
                let r = if through.is_empty() {
                    Ok(())
                } else {
                    d.write_through(&mut through, |id, copy| self.store.write_page(id, copy))
                };
                let r = r.and_then(|_| direct(&mut init));
                let (mut init, mut through) = (init.into_iter(), through.into_iter());
                for ((_, copy), &r) in copies.iter_mut().zip(reinit) {
                    let back = if r { init.next() } else { through.next() };
                    *copy = back.expect("each page returns to its place").1;
                }
                r?;
            }
            Some(d) => d.write_through(copies, |id, copy| self.store.write_page(id, copy))?,
            None => direct(copies)?,
        }
        self.stats
            .add(Metric::buffer_pages_written, copies.len() as u64);
        for (id, copy) in copies.iter() {
            self.type_io[crate::page::page_type(copy) as usize][1].fetch_add(1, Ordering::Relaxed);
            self.count_rel_written(id.rel);
        }
        Ok(())
    }

    /// Writes every dirty page, in page order (PostgreSQL `BufferSync` sorts checkpoint
    /// writes), in batches of 64. Counted to the current cause. Returns pages written.
    ///
    /// Errors: as `BufferPool::write_frames` (device and WAL errors).
    ///
    /// Copies other threads (an evictor, the page cleaner) took before and are still
    /// writing are waited for, and their pages written again when changed since: a
    /// checkpoint counts on every change made before it started being on the device when
    /// this returns (PostgreSQL: `SyncOneBuffer` → `FlushBuffer` → `StartBufferIO` waits
    /// for a write in progress). A page whose dirty flag an evictor had cleared but whose
    /// copy had not reached the device was otherwise left out of the checkpoint, and a
    /// crash right after it lost that page's changes from before the redo pointer.
    pub fn flush_all(&self) -> StorageResult<usize> {
        let start = self.wal.insert_lsn().0;
        let fr = |f: FrameId| &self.frames[f];
        let mut dirty: Vec<(PageId, FrameId)> = (0..self.frames.len())
            .filter(|&f| fr(f).dirty.load(Ordering::SeqCst) || fr(f).writing.load(Ordering::SeqCst))
            .filter_map(|f| unpack(fr(f).page.load(Ordering::Acquire)).map(|id| (id, f)))
            .collect();
        dirty.sort_unstable();
        let mut frames: Vec<FrameId> = dirty.iter().map(|d| d.1).collect();
        let mut total = 0;
        loop {
            total += self.write_unpinned(&frames)?;
            // Copies other threads are writing (frames this pass passed over among them):
            // wait for them, then write again the pages still holding a change from
            // before this flush started (their oldest unwritten change, `rec_lsn`, is
            // older; 0 for a change whose record is being inserted).
            for &f in &frames {
                while fr(f).writing.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
            }
            frames.retain(|&f| {
                let rec = fr(f).rec_lsn.load(Ordering::SeqCst);
                fr(f).writing.load(Ordering::SeqCst)
                    || (fr(f).dirty.load(Ordering::SeqCst) && rec < start)
            });
            if frames.is_empty() {
                self.stats
                    .add(Metric::buffer_flush_list_pages_written, total as u64);
                return Ok(total);
            }
        }
    }

    /// Frames pinned at once by a flush: at most 64 (a doublewrite batch) and an eighth of
    /// the pool, so that a checkpoint in a small pool leaves frames for the foreground
    /// (PostgreSQL's `BufferSync` pins one buffer at a time).
    fn pin_batch(&self) -> usize {
        (self.frames.len() / 8).clamp(1, 64)
    }

    /// Writes the dirty pages among `frames` (not pinned by the caller), pinning a batch
    /// ([`BufferPool::pin_batch`]) at a time: a frame whose page changed or was evicted
    /// since it was listed is skipped.
    fn write_unpinned(&self, frames: &[FrameId]) -> StorageResult<usize> {
        let mut total = 0;
        for chunk in frames.chunks(self.pin_batch()) {
            let pinned: Vec<FrameId> = chunk
                .iter()
                .copied()
                .filter(|&f| self.frames[f].dirty.load(Ordering::Acquire))
                .filter(|&f| self.pin_resident(f).is_some())
                .collect();
            total += self.write_pinned_batches(&pinned)?;
        }
        Ok(total)
    }

    /// Writes pinned frames in batches of 64, unpinning all of them whatever happens.
    fn write_pinned_batches(&self, frames: &[FrameId]) -> StorageResult<usize> {
        let mut total = 0;
        let mut result = Ok(());
        for chunk in frames.chunks(64) {
            if result.is_ok() {
                match self.write_frames(chunk) {
                    Ok(n) => total += n,
                    Err(e) => result = Err(e),
                }
            }
            for &f in chunk {
                self.unpin(f);
            }
        }
        result.map(|_| total)
    }

    /// One round of the background writer / page cleaner (PostgreSQL bgwriter.c
    /// `BgBufferSync`; InnoDB buf0flu.cc `buf_flush_page_cleaner`). Without a free-page
    /// target: writes the dirty, unpinned frames among the next `lru_scan_pages` victims.
    /// With one (InnoDB): when the LRU batch is needed (`need_LRU_eviction`), runs it
    /// ([`BufferPool::lru_batch`]). Then, with `max_dirty_pct`, writes the oldest-changed
    /// dirty frames above that share. Counted to the current cause (the page cleaner thread
    /// enters `page_cleaner`). Returns pages written.
    ///
    /// Errors: as `BufferPool::write_frames` (device and WAL errors).
    pub fn clean_round(&self, cfg: &PageCleanerConfig) -> StorageResult<usize> {
        let mut written = match cfg.free_target.map(|t| t.pages(self.frames.len())) {
            Some(target) => {
                if self.need_lru_eviction(target, self.free_frames()) {
                    self.lru_batch_with(target, cfg.flush_neighbors)?.1
                } else {
                    0
                }
            }
            None if self.cfg.replacer == ReplacerConfig::ClockSweep => self.bg_buffer_sync(cfg)?,
            None => {
                let picked: Vec<FrameId> = self
                    .replacer
                    .next_victims(cfg.lru_scan_pages)
                    .into_iter()
                    .filter(|&f| {
                        let fr = &self.frames[f];
                        fr.dirty.load(Ordering::Acquire) && fr.pins.load(Ordering::Acquire) == 0
                    })
                    .filter(|&f| self.pin_resident(f).is_some())
                    .collect();
                self.write_pinned_batches(&picked)?
            }
        };
        if let Some(pct) = cfg.max_dirty_pct {
            let limit = self.frames.len() * pct as usize / 100;
            let mut dirty: Vec<(u64, FrameId)> = (0..self.frames.len())
                .filter(|&f| self.frames[f].dirty.load(Ordering::Acquire))
                .map(|f| (self.frames[f].rec_lsn.load(Ordering::Acquire), f))
                .collect();
            if dirty.len() > limit {
                dirty.sort_unstable();
                let excess = dirty.len() - limit;
                let picked: Vec<FrameId> = dirty.into_iter().take(excess).map(|(_, f)| f).collect();
                let flushed = match self.neighbors_active(cfg.flush_neighbors) {
                    // buf0flu.cc `buf_do_flush_list_batch` → `buf_flush_try_neighbors`.
                    Some(mode) => {
                        let mut queued = std::collections::HashSet::new();
                        let mut pinned = Vec::new();
                        for f in picked {
                            if queued.contains(&f) || self.pin_resident(f).is_none() {
                                continue;
                            }
                            pinned.extend(self.with_neighbors(f, mode, &mut queued));
                        }
                        self.write_pinned_batches(&pinned)?
                    }
                    None => self.write_unpinned(&picked)?,
                };
                self.stats
                    .add(Metric::buffer_flush_list_pages_written, flushed as u64);
                written += flushed;
            }
        }
        Ok(written)
    }

    /// The background writer's round with the clock sweep ([`super::bgwriter`],
    /// bufmgr.c `BgBufferSync`): a reusable dirty frame (unpinned, usage count 0) is
    /// pinned and written (`SyncOneBuffer` with `skip_recently_used`). Returns pages
    /// written.
    ///
    /// Errors: as `BufferPool::write_frames` (device and WAL errors).
    fn bg_buffer_sync(&self, cfg: &PageCleanerConfig) -> StorageResult<usize> {
        let Some(pos) = self.replacer.strategy_sync_start() else {
            return Ok(0);
        };
        let mut picked = Vec::new();
        self.bgwriter.lock().round(
            self.frames.len(),
            pos,
            cfg.interval_ms,
            cfg.lru_multiplier,
            cfg.lru_scan_pages,
            |f| {
                let fr = &self.frames[f];
                if fr.pins.load(Ordering::Acquire) != 0 || self.replacer.usage(f) != 0 {
                    return SyncState::default();
                }
                let written = fr.dirty.load(Ordering::Acquire) && self.pin_resident(f).is_some();
                if written {
                    picked.push(f);
                }
                SyncState {
                    reusable: true,
                    written,
                }
            },
        );
        self.write_pinned_batches(&picked)
    }

    /// The page cleaner's LRU batch (MariaDB 10.11 buf0flu.cc `buf_flush_LRU` →
    /// `buf_flush_LRU_list_batch`): walks the replacer's victim order from the LRU tail and,
    /// while fewer than `target` frames are free and the LRU list is longer than
    /// `min(frames / 20 − 1, BUF_LRU_MIN_LEN)`, evicts each clean unpinned page to the free
    /// list (`buf_LRU_free_page`) and writes each dirty unpinned one, up to
    /// [`LRU_FLUSH_MAX_PAGES`], which stays in the list, clean, for a later batch (only
    /// temporary-tablespace pages are evicted when their write completes). Counted to the
    /// current cause. Returns (pages evicted, pages written).
    ///
    /// Errors: as `BufferPool::write_frames` (device and WAL errors).
    pub fn lru_batch(&self, target: usize) -> StorageResult<(usize, usize)> {
        self.lru_batch_with(target, FlushNeighbors::Off)
    }

    /// [`BufferPool::lru_batch`] with neighbour flushing `neighbors`: a dirty page is written
    /// with its dirty neighbours (buf0flu.cc `buf_flush_try_neighbors`) while at least half the
    /// free-page target is free (buf0flu.cc `buf_flush_LRU_list_batch`: "Skip
    /// neighbourhood flush from LRU list if we haven't yet reached half of the free page
    /// target").
    ///
    /// Errors: as `BufferPool::write_frames` (device and WAL errors).
    pub fn lru_batch_with(
        &self,
        target: usize,
        neighbors: FlushNeighbors,
    ) -> StorageResult<(usize, usize)> {
        let n = self.frames.len();
        let min_len = (n / 20).saturating_sub(1).min(BUF_LRU_MIN_LEN);
        let neighbors = self.neighbors_active(neighbors);
        let (mut evicted, mut written, mut scanned) = (0, 0, 0);
        let mut dirty = Vec::new();
        let mut queued = std::collections::HashSet::new();
        // The order as it is now, each frame with its position token: a frame moved since
        // (made young while the batch writes) is passed over, as InnoDB's batch, walking
        // the live list, no longer meets it.
        let order: Vec<(FrameId, u64)> = self
            .replacer
            .next_victims(n)
            .into_iter()
            .map(|f| (f, self.replacer.position_token(f)))
            .collect();
        for (f, token) in order {
            let free = self.free_frames();
            if free >= target || n - free <= min_len {
                break;
            }
            if self.replacer.position_token(f) != token {
                continue;
            }
            scanned += 1;
            let fr = &self.frames[f];
            if fr.pins.load(Ordering::Acquire) != 0 || queued.contains(&f) {
                continue;
            }
            if fr.dirty.load(Ordering::Acquire) {
                if written + dirty.len() < LRU_FLUSH_MAX_PAGES && self.pin_resident(f).is_some() {
                    match neighbors {
                        Some(mode) if free * 2 >= target => {
                            dirty.extend(self.with_neighbors(f, mode, &mut queued));
                        }
                        _ => {
                            queued.insert(f);
                            dirty.push(f);
                        }
                    }
                    if dirty.len() >= LRU_FLUSH_BATCH_PAGES {
                        // Written a batch at a time, so that few frames stay pinned.
                        written += self.write_pinned_batches(&std::mem::take(&mut dirty))?;
                    }
                }
            } else if self.evict_clean(f) {
                evicted += 1;
            }
        }
        written += self.write_pinned_batches(&dirty)?;
        self.stats
            .add(Metric::buffer_lru_batch_pages_written, written as u64);
        if scanned > 0 {
            // MONITOR_LRU_BATCH_SCANNED: counted only for a batch that scanned.
            self.stats.add(Metric::buffer_lru_batches, 1);
            self.stats
                .add(Metric::buffer_lru_batch_scanned, scanned as u64);
            self.stats
                .add(Metric::buffer_lru_batch_evicted, evicted as u64);
        }
        Ok((evicted, written))
    }

    /// `mode` unless it is off or the LRU list is shorter than [`BUF_LRU_OLD_MIN_LEN`].
    fn neighbors_active(&self, mode: FlushNeighbors) -> Option<FlushNeighbors> {
        let lru_len = self.frames.len() - self.free_frames();
        (!mode.is_off() && lru_len >= BUF_LRU_OLD_MIN_LEN).then_some(mode)
    }

    /// Pages of a flush area: MariaDB's `buf_pool.read_ahead_area` (the power of two at or
    /// above a 32nd of the pool, at most 64 pages: buf0buf.cc `buf_pool_t::create`,
    /// BUF_READ_AHEAD_PORTION, BUF_READ_AHEAD_PAGES) capped at a 16th of the pool
    /// (buf0flu.cc `buf_flush_check_neighbors`).
    pub fn flush_area_pages(&self) -> u32 {
        let frames = self.frames.len();
        let read_ahead = (frames / 32).next_power_of_two().min(64);
        read_ahead.min(frames / 16).max(1) as u32
    }

    /// Frame `f` (dirty, pinned by the caller) and its dirty neighbours, each pinned once,
    /// in page order, all added to `queued` (MariaDB buf0flu.cc `buf_flush_check_neighbors`
    /// and `buf_flush_try_neighbors`). The flush area is the aligned run of
    /// [`BufferPool::flush_area_pages`] pages of the same relation holding the page; a
    /// neighbour qualifies when it is resident, dirty, unpinned, not being written and
    /// not yet queued. `Contiguous` stops at the first page either side that does not
    /// qualify; `Area` takes every page that does. (MariaDB also caps the area at the
    /// tablespace's last page number; a page past the end is never resident here.)
    fn with_neighbors(
        &self,
        f: FrameId,
        mode: FlushNeighbors,
        queued: &mut std::collections::HashSet<FrameId>,
    ) -> Vec<FrameId> {
        queued.insert(f);
        let Some(id) = unpack(self.frames[f].page.load(Ordering::Acquire)) else {
            return vec![f];
        };
        let area = self.flush_area_pages();
        let low = id.block - id.block % area;
        let high = low.saturating_add(area);
        let qualifies = |block: u32, queued: &std::collections::HashSet<FrameId>| {
            let nid = PageId::new(id.rel, block);
            let nf = *self.partition(nid).lock().get(&nid)?;
            let fr = &self.frames[nf];
            (!queued.contains(&nf)
                && fr.dirty.load(Ordering::Acquire)
                && !fr.writing.load(Ordering::Acquire)
                && fr.pins.load(Ordering::Acquire) == 0)
                .then_some(nf)
        };
        let mut below = Vec::new();
        let mut above = Vec::new();
        for b in (low..id.block).rev() {
            match qualifies(b, queued) {
                Some(nf) => below.push(nf),
                None if mode == FlushNeighbors::Contiguous => break,
                None => {}
            }
        }
        for b in id.block + 1..high {
            match qualifies(b, queued) {
                Some(nf) => above.push(nf),
                None if mode == FlushNeighbors::Contiguous => break,
                None => {}
            }
        }
        let mut out: Vec<FrameId> = below.into_iter().rev().collect();
        out.retain(|&nf| self.pin_resident(nf).is_some());
        above.retain(|&nf| self.pin_resident(nf).is_some());
        out.push(f);
        out.extend(above);
        queued.extend(out.iter().copied());
        let neighbours = out.len() as u64 - 1;
        if neighbours > 0 {
            self.stats
                .add(Metric::buffer_flush_neighbor_pages, neighbours);
        }
        out
    }

    /// Evicts frame `f` to the free list if it holds a page that is clean and unpinned.
    fn evict_clean(&self, f: FrameId) -> bool {
        let fr = &self.frames[f];
        let Some(id) = unpack(fr.page.load(Ordering::Acquire)) else {
            return false;
        };
        let part = self.partition(id);
        let t = part.lock();
        if !self.pin_if_mapped(&t, f, id) {
            return false;
        }
        if fr.dirty.load(Ordering::Acquire) {
            fr.pins.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        self.unmap_evicted(t, f, id);
        self.unpin(f);
        true
    }

    /// Pins victim frame `f` once if, per its partition's table `t` (locked by the caller),
    /// it still holds page `id` and nobody has it pinned.
    fn pin_if_mapped(&self, t: &HashMap<PageId, FrameId>, f: FrameId, id: PageId) -> bool {
        t.get(&id) == Some(&f)
            && self.frames[f]
                .pins
                .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// Takes clean frame `f`, pinned once by the caller, away from page `id` under its
    /// partition lock `t` (released here), and counts an eviction.
    fn unmap_evicted(
        &self,
        mut t: MutexGuard<'_, HashMap<PageId, FrameId>>,
        f: FrameId,
        id: PageId,
    ) {
        let fr = &self.frames[f];
        t.remove(&id);
        fr.page.store(NO_PAGE, Ordering::Release);
        fr.valid.store(false, Ordering::Release);
        drop(t);
        self.replacer.removed(f);
        self.stats.add(Metric::buffer_evictions, 1);
    }

    /// Waits until every page write in flight has finished and registered its relation
    /// for sync. A checkpoint calls it after writing the dirty pages and before
    /// [`BufferPool::take_unsynced_relations`]: a page an evictor or the page cleaner took
    /// (clearing its dirty flag) just before the checkpoint looked for dirty pages is not
    /// written by the checkpoint, so its write must be finished and synced by it, or the
    /// control file would name a redo pointer past a change that is not durable (PostgreSQL:
    /// BM_DIRTY stays set until the write ends, and `BufferSync` waits for a buffer's I/O
    /// in progress).
    pub fn wait_for_writes_in_flight(&self) {
        drop(self.writes_in_flight.write());
    }

    /// Takes the set of relation files written since the last call without a sync (the
    /// checkpointer syncs them: PostgreSQL's pending-fsync queue, md.c `register_dirty_segment`).
    pub fn take_unsynced_relations(&self) -> BTreeSet<FileId> {
        std::mem::take(&mut *self.unsynced_rels.lock())
    }

    /// Gives back relations taken by [`BufferPool::take_unsynced_relations`] whose sync
    /// failed or did not happen, so the next checkpoint syncs them (PostgreSQL keeps a
    /// failed fsync request in the pending-ops table, sync.c `ProcessSyncRequests`).
    pub fn return_unsynced_relations(&self, rels: BTreeSet<FileId>) {
        self.unsynced_rels.lock().extend(rels);
    }

    /// Drops page `id` from the pool without writing it (before freeing the page or dropping
    /// its relation). Returns false, leaving it, when the page is pinned.
    pub fn discard(&self, id: PageId) -> bool {
        let part = self.partition(id);
        let mut t = part.lock();
        let Some(&f) = t.get(&id) else { return true };
        if !self.pin_if_mapped(&t, f, id) {
            return false;
        }
        let fr = &self.frames[f];
        t.remove(&id);
        fr.page.store(NO_PAGE, Ordering::Release);
        fr.valid.store(false, Ordering::Release);
        fr.dirty.store(false, Ordering::Release);
        fr.rec_lsn.store(0, Ordering::Release);
        fr.reinit.store(false, Ordering::Release);
        drop(t);
        self.replacer.removed(f);
        self.unpin(f);
        true
    }

    /// Marks page `id`, which the caller is freeing in its relation, as freed while it
    /// stays resident: its frame keeps its place in the replacement order and is reclaimed
    /// like a clean page when eviction reaches it; the page is never written (its dirty
    /// flag is cleared), and a later allocation of the same block finds it resident and
    /// reuses the frame without a read. This is InnoDB's handling of a freed page: buf0buf.cc
    /// `buf_page_free` sets the block's state to FREED and leaves it in the LRU list;
    /// buf0flu.cc `buf_page_t::flush` then releases it without a write
    /// (`buf_pool_t::release_freed_page` → `buf_LRU_free_page`) when the page cleaner's LRU
    /// or flush-list batch reaches it; `buf_page_create_low` reuses a resident block. A page
    /// not resident is left alone. Returns false, changing nothing, when the page is pinned.
    pub fn free_resident(&self, id: PageId) -> bool {
        let part = self.partition(id);
        let t = part.lock();
        let Some(&f) = t.get(&id) else { return true };
        if !self.pin_if_mapped(&t, f, id) {
            return false;
        }
        let fr = &self.frames[f];
        fr.dirty.store(false, Ordering::Release);
        fr.rec_lsn.store(0, Ordering::Release);
        fr.reinit.store(false, Ordering::Release);
        drop(t);
        self.unpin(f);
        true
    }

    /// Frames, resident pages and dirty pages now.
    pub fn state(&self) -> PoolState {
        let mut s = PoolState {
            frames: self.frames.len(),
            ..Default::default()
        };
        for fr in self.frames.iter() {
            if fr.page.load(Ordering::Relaxed) != NO_PAGE {
                s.resident_pages += 1;
                if fr.dirty.load(Ordering::Relaxed) {
                    s.dirty_pages += 1;
                }
            }
        }
        s
    }

    /// Every frame that holds a page, in frame order (contrib/pg_buffercache
    /// `pg_buffercache_pages`): for comparing the pool's usage counts and dirty pages with
    /// a real server's.
    pub fn buffer_cache(&self) -> Vec<BufferCacheEntry> {
        self.frames
            .iter()
            .enumerate()
            .filter_map(|(f, fr)| {
                let page = unpack(fr.page.load(Ordering::Acquire))?;
                let page_type = match fr.data.try_read() {
                    Some(d) if fr.valid.load(Ordering::Acquire) => crate::page::page_type(&d),
                    _ => 0,
                };
                Some(BufferCacheEntry {
                    frame: f,
                    page,
                    usage_count: self.replacer.usage(f),
                    dirty: fr.dirty.load(Ordering::Acquire),
                    pins: fr.pins.load(Ordering::Acquire),
                    old: self.replacer.is_old(f),
                    page_type,
                    freed: self.store.is_free(page).unwrap_or(false),
                })
            })
            .collect()
    }

    /// The resident pages the replacer would evict next, in its order, up to `n` (for tests
    /// and tools).
    pub fn victim_order(&self, n: usize) -> Vec<PageId> {
        self.replacer
            .next_victims(n)
            .into_iter()
            .filter_map(|f| unpack(self.frames[f].page.load(Ordering::Acquire)))
            .collect()
    }

    /// Holds the doublewrite area, so that page writes wait (tests).
    #[cfg(test)]
    pub(super) fn hold_doublewrite(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.dblwr.as_ref().expect("doublewrite on").hold()
    }

    /// Whether page `id` is resident (for tests and tools).
    pub fn is_resident(&self, id: PageId) -> bool {
        self.partition(id).lock().contains_key(&id)
    }
}
