//! Emulated OS page cache between the buffer pool and the device: how PostgreSQL's double
//! buffering (shared_buffers over the kernel's page cache) is modelled.
//!
//! Model (Linux `mm/filemap.c` and `mm/page-writeback.c`, simplified):
//! - The cache holds 4 KiB blocks of files, up to `size_bytes`, replaced least recently
//!   used first (Linux keeps active/inactive lists; plain LRU is a documented simplification).
//! - Readahead (mm/readahead.c `page_cache_sync_ra` / `page_cache_async_ra`,
//!   `ondemand_readahead`, REL v6.1): per file, a read that continues the previous one (its
//!   first block follows the last block read) opens a window of `get_init_ra_size` blocks
//!   (the request rounded up to a power of two, ×4 when small, ×2 when medium, at most
//!   `max_readahead_blocks`, the device's `read_ahead_kb` 128 KiB = 32 blocks by default)
//!   and reads the missing ones in one request; a read that reaches the window's
//!   `PG_readahead` mark (the first block of its asynchronous part) reads the next window,
//!   of `get_next_ra_size` blocks (×4 while small, ×2, at most the maximum). A missed read
//!   that does not continue the previous one but follows more cached blocks than it asks
//!   for (counted back to the first hole, at most the maximum: `page_cache_prev_miss`)
//!   opens a window of that run plus the request, at most the maximum, whose mark is its
//!   last block (context readahead: `try_context_readahead` up to v6.9, the same rule in
//!   `page_cache_sync_ra` since v6.10). Any other read reads only what it asked for.
//!   Blocks read beyond
//!   what the reader asked for count under the cause `read_ahead`; the kernel puts them in
//!   the same request, here they are a request of their own.
//! - A read whose blocks are all cached costs no device I/O and counts `os_cache_read_hits`
//!   and `os_cache_hit_blocks_4k`. Otherwise one device read covers the missing blocks (from
//!   the first missing to the last, whole 4 KiB blocks, clamped at the end of the file).
//! - A write copies into the cache and marks the blocks dirty with the writer's cause
//!   (write-back). A block only partly overwritten and not cached is read first, as the
//!   kernel does. When dirty blocks exceed `dirty_background_pct` of the cache (the kernel's
//!   `vm.dirty_background_ratio`, default 10), the oldest dirty blocks are written back until
//!   half that share remains; the writing thread does it (the kernel would throttle it in
//!   `balance_dirty_pages`), and the device counts each block to the cause that dirtied it.
//! - Periodic write-back of old dirty data (fs/fs-writeback.c `wb_check_old_data_flush`,
//!   `wb_writeback` with `for_kupdate`; mm/page-writeback.c `dirty_writeback_interval`,
//!   `dirty_expire_interval`): every `dirty_writeback_ms` (`vm.dirty_writeback_centisecs`,
//!   5 s) the kernel's flusher writes back every dirty page of each file (inode) that
//!   became dirty more than `dirty_expire_ms` ago (`vm.dirty_expire_centisecs`, 30 s;
//!   `inode->dirtied_when` is set when a clean file gets its first dirty page and kept
//!   while it stays dirty, so a file written without pause is written back whole every
//!   30–35 s). Here the check runs on the thread of the next read or write through the
//!   cache once the interval has passed (no flusher thread; the first call checks), and
//!   the blocks count to the causes that dirtied them.
//! - `sync(file)` writes back every dirty block of the file, contiguous blocks in one call,
//!   then syncs the device file: fsync.
//!
//! # Invariants
//! 1. A cached block's bytes are the file's current bytes; the device's may be older only
//!    while the block is dirty or its write-back is in flight.
//! 2. `sync(file)` returns only after every write to `file` before the call reached the
//!    device and the device synced it (in-flight write-backs are waited for).
//!
//! # Locking
//! One mutex over the cache state; it is never held across a device call. Write-backs in
//! flight are counted per file under that mutex, and `sync` waits on a condvar for them.

use super::error::{DeviceError, DeviceResult as Result};
use super::{FileId, Nvme, BLOCK_4K};
use crate::stats::{current_cause, Cause, Metric};
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

const B: usize = BLOCK_4K as usize;

/// Settings of the emulated OS page cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OsCacheConfig {
    /// Capacity in bytes (rounded down to 4 KiB blocks). 0 means direct I/O (no cache).
    pub size_bytes: u64,
    /// Dirty share (percent of capacity) above which write-back starts
    /// (`vm.dirty_background_ratio`, default 10).
    pub dirty_background_pct: u8,
    /// Largest readahead window in 4 KiB blocks (the block device's `read_ahead_kb` / 4:
    /// 128 KiB, 32 blocks, by default); 0 turns readahead off.
    #[serde(default = "default_readahead_blocks")]
    pub max_readahead_blocks: u64,
    /// A file dirty for longer than this many milliseconds is written back whole at the
    /// next periodic check (`vm.dirty_expire_centisecs` × 10: 30,000 by default).
    #[serde(default = "default_dirty_expire_ms")]
    pub dirty_expire_ms: u64,
    /// Milliseconds between two periodic checks for expired dirty files
    /// (`vm.dirty_writeback_centisecs` × 10: 5,000 by default); 0 turns the periodic
    /// write-back off, as 0 does in the kernel.
    #[serde(default = "default_dirty_writeback_ms")]
    pub dirty_writeback_ms: u64,
}

fn default_dirty_expire_ms() -> u64 {
    30_000
}

fn default_dirty_writeback_ms() -> u64 {
    5_000
}

fn default_readahead_blocks() -> u64 {
    32
}

impl Default for OsCacheConfig {
    fn default() -> Self {
        OsCacheConfig {
            size_bytes: 0,
            dirty_background_pct: 10,
            max_readahead_blocks: default_readahead_blocks(),
            dirty_expire_ms: default_dirty_expire_ms(),
            dirty_writeback_ms: default_dirty_writeback_ms(),
        }
    }
}

struct Entry {
    data: Box<[u8]>,
    lru_tick: u64,
    /// `(dirty_tick, cause)` while dirty.
    dirty: Option<(u64, Cause)>,
}

type Key = (FileId, u64);

/// A file's readahead state (struct file_ra_state): the window `[start, start + size)`,
/// its asynchronous tail `async_size` (the mark is at `start + size - async_size`), and the
/// last block read (`prev_pos`).
#[derive(Clone, Copy, Debug, Default)]
struct RaState {
    start: u64,
    size: u64,
    async_size: u64,
    prev_block: Option<u64>,
}

/// mm/readahead.c `get_init_ra_size`.
fn init_ra_size(req: u64, max: u64) -> u64 {
    let n = req.max(1).next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

/// mm/readahead.c `get_next_ra_size`.
fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

#[derive(Default)]
struct Inner {
    ra: HashMap<FileId, RaState>,
    map: HashMap<Key, Entry>,
    lru: BTreeMap<u64, Key>,
    dirty_order: BTreeMap<u64, Key>,
    dirty_by_file: HashMap<FileId, BTreeSet<u64>>,
    /// When each file with dirty blocks got its first one (`inode->dirtied_when`).
    dirtied_when: HashMap<FileId, Instant>,
    /// The next periodic check for expired files; `None` before the first.
    next_expire_check: Option<Instant>,
    file_len: HashMap<FileId, u64>,
    in_flight: HashMap<FileId, usize>,
    tick: u64,
}

impl Inner {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn touch(&mut self, key: Key) {
        let t = self.next_tick();
        if let Some(e) = self.map.get_mut(&key) {
            self.lru.remove(&e.lru_tick);
            e.lru_tick = t;
            self.lru.insert(t, key);
        }
    }

    fn mark_dirty(&mut self, key: Key, cause: Cause) {
        let t = self.next_tick();
        let e = self
            .map
            .get_mut(&key)
            .expect("mark_dirty of a cached block");
        if let Some((old, _)) = e.dirty.take() {
            self.dirty_order.remove(&old);
        }
        e.dirty = Some((t, cause));
        self.dirty_order.insert(t, key);
        let set = self.dirty_by_file.entry(key.0).or_default();
        if set.is_empty() {
            self.dirtied_when.insert(key.0, Instant::now());
        }
        set.insert(key.1);
    }

    fn mark_clean(&mut self, key: Key) -> Option<(Cause, Box<[u8]>)> {
        let e = self.map.get_mut(&key)?;
        let (t, cause) = e.dirty.take()?;
        let data = e.data.clone();
        self.dirty_order.remove(&t);
        if let Some(set) = self.dirty_by_file.get_mut(&key.0) {
            set.remove(&key.1);
            if set.is_empty() {
                self.dirtied_when.remove(&key.0);
            }
        }
        Some((cause, data))
    }

    fn insert_clean(&mut self, key: Key, data: Box<[u8]>) {
        let t = self.next_tick();
        self.lru.insert(t, key);
        self.map.insert(
            key,
            Entry {
                data,
                lru_tick: t,
                dirty: None,
            },
        );
    }

    /// Evicts clean blocks, least recently used first, until at most `cap` are held or
    /// only dirty ones remain in the scanned prefix.
    fn evict_clean(&mut self, cap: usize) {
        let excess = self.map.len().saturating_sub(cap);
        if excess == 0 {
            return;
        }
        let victims: Vec<(u64, Key)> = self
            .lru
            .iter()
            .filter(|(_, k)| self.map.get(k).is_some_and(|e| e.dirty.is_none()))
            .take(excess)
            .map(|(t, k)| (*t, *k))
            .collect();
        for (t, k) in victims {
            self.lru.remove(&t);
            self.map.remove(&k);
        }
    }

    fn n_dirty(&self) -> usize {
        self.dirty_order.len()
    }
}

/// A run of contiguous dirty blocks of one file taken for write-back, with the cause that
/// dirtied its first block (runs are split where the cause changes).
struct Run {
    file: FileId,
    first_block: u64,
    cause: Cause,
    data: Vec<u8>,
}

/// The emulated OS page cache. See the module doc.
pub struct OsPageCache {
    cap_blocks: usize,
    max_ra_blocks: u64,
    dirty_limit_blocks: usize,
    dirty_expire: Duration,
    /// `None`: no periodic write-back (`dirty_writeback_ms` 0).
    dirty_writeback: Option<Duration>,
    inner: Mutex<Inner>,
    drained: Condvar,
}

impl OsPageCache {
    /// A cache of `cfg.size_bytes`, or `None` when that is below one 4 KiB block.
    pub fn new(cfg: &OsCacheConfig) -> Option<Self> {
        let cap_blocks = (cfg.size_bytes / BLOCK_4K) as usize;
        (cap_blocks > 0).then(|| OsPageCache {
            cap_blocks,
            max_ra_blocks: cfg.max_readahead_blocks,
            dirty_limit_blocks: (cap_blocks * cfg.dirty_background_pct.min(100) as usize / 100)
                .max(1),
            dirty_expire: Duration::from_millis(cfg.dirty_expire_ms),
            dirty_writeback: (cfg.dirty_writeback_ms > 0)
                .then(|| Duration::from_millis(cfg.dirty_writeback_ms)),
            inner: Mutex::new(Inner::default()),
            drained: Condvar::new(),
        })
    }

    /// Blocks held now.
    pub fn cached_blocks(&self) -> usize {
        self.inner.lock().map.len()
    }

    /// Dirty blocks held now.
    pub fn dirty_blocks(&self) -> usize {
        self.inner.lock().n_dirty()
    }

    fn file_len(&self, inner: &mut Inner, nvme: &Nvme, file: FileId) -> Result<u64> {
        if let Some(l) = inner.file_len.get(&file) {
            return Ok(*l);
        }
        let l = nvme.len_bytes(file)?;
        inner.file_len.insert(file, l);
        Ok(l)
    }

    /// Length of `file` as the cache sees it (dirty extensions included).
    pub fn len_bytes(&self, nvme: &Nvme, file: FileId) -> Result<u64> {
        let mut inner = self.inner.lock();
        self.file_len(&mut inner, nvme, file)
    }

    /// Reads `buf.len()` bytes at `offset` through the cache (see the module doc).
    ///
    /// Errors: [`DeviceError::ReadPastEof`] past the end of the file; device errors.
    pub fn read(&self, nvme: &Nvme, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset + buf.len() as u64;
        let (first, last) = (offset / BLOCK_4K, (end - 1) / BLOCK_4K);
        let mut missing = Vec::new();
        let flen;
        let expired;
        {
            let mut inner = self.inner.lock();
            flen = self.file_len(&mut inner, nvme, file)?;
            if end > flen {
                return Err(DeviceError::ReadPastEof {
                    file,
                    offset_bytes: offset,
                    len_bytes: buf.len(),
                    file_len_bytes: flen,
                });
            }
            for b in first..=last {
                if inner.map.contains_key(&(file, b)) {
                    copy_out(&inner.map[&(file, b)].data, b, offset, buf);
                    inner.touch((file, b));
                } else {
                    missing.push(b);
                }
            }
            expired = self.take_expired(&mut inner);
        }
        self.write_runs(nvme, expired)?;
        let hits = (last - first + 1) - missing.len() as u64;
        nvme.stats().add(Metric::os_cache_hit_blocks_4k, hits);
        let ahead = self.readahead_window(file, first, last, !missing.is_empty(), flen);
        let (Some(&m0), Some(&m1)) = (missing.first(), missing.last()) else {
            nvme.stats().add(Metric::os_cache_read_hits, 1);
            if let Some((a0, a1)) = ahead {
                self.read_ahead(nvme, file, a0, a1, flen)?;
            }
            return Ok(());
        };
        let span_start = m0 * BLOCK_4K;
        let span_end = ((m1 + 1) * BLOCK_4K).min(flen.max(end));
        let mut span = vec![0u8; ((m1 - m0 + 1) * BLOCK_4K) as usize];
        let dev_len = nvme.len_bytes(file)?;
        let readable = span_end.min(dev_len).saturating_sub(span_start) as usize;
        nvme.read_at(file, span_start, &mut span[..readable])?;
        nvme.stats()
            .add(Metric::os_cache_miss_blocks_4k, m1 - m0 + 1);
        let mut inner = self.inner.lock();
        for b in m0..=m1 {
            let key = (file, b);
            let i = ((b - m0) * BLOCK_4K) as usize;
            if !inner.map.contains_key(&key) {
                inner.insert_clean(key, span[i..i + B].into());
            }
            if missing.binary_search(&b).is_ok() {
                copy_out(&inner.map[&key].data, b, offset, buf);
            }
        }
        inner.evict_clean(self.cap_blocks);
        let runs = self.take_writeback(&mut inner);
        drop(inner);
        self.write_runs(nvme, runs)?;
        if let Some((a0, a1)) = ahead {
            self.read_ahead(nvme, file, a0, a1, flen)?;
        }
        Ok(())
    }

    /// The readahead a read of blocks `first..=last` starts (see the module doc): the
    /// blocks to read ahead beyond `last`, if any, updating the file's window. `missed`:
    /// some requested block was not cached (a synchronous readahead); otherwise only the
    /// window's mark starts one (asynchronous).
    fn readahead_window(
        &self,
        file: FileId,
        first: u64,
        last: u64,
        missed: bool,
        flen: u64,
    ) -> Option<(u64, u64)> {
        let max = self.max_ra_blocks;
        if max == 0 {
            return None;
        }
        let n_blocks = flen.div_ceil(BLOCK_4K);
        let mut inner = self.inner.lock();
        // page_cache_prev_miss(mapping, index - 1, max_pages): the cached blocks right
        // before this read, counted back to the first hole, at most `max`; `None` when the
        // count reached block 0 within `max` (the kernel's ULONG_MAX: the file is cached
        // from its start).
        let contig_before = if missed {
            let mut n = 0;
            while n < max && n < first && inner.map.contains_key(&(file, first - 1 - n)) {
                n += 1;
            }
            if n < max && n == first {
                None
            } else {
                Some(n)
            }
        } else {
            Some(0)
        };
        let ra = inner.ra.entry(file).or_default();
        let sequential = match ra.prev_block {
            Some(p) => first == p + 1 || first == p,
            None => first == 0,
        };
        ra.prev_block = Some(last);
        let mark = (ra.start + ra.size).saturating_sub(ra.async_size);
        let window = if ra.size > 0 && ra.async_size > 0 && (first..=last).contains(&mark) {
            // page_cache_async_ra: the mark was reached; the next window follows this one.
            let start = ra.start + ra.size;
            let size = next_ra_size(ra.size, max);
            *ra = RaState {
                start,
                size,
                async_size: size,
                prev_block: Some(last),
            };
            Some((start, start + size - 1))
        } else if missed && sequential {
            // page_cache_sync_ra on a sequential miss: a new window from this read.
            let req = last - first + 1;
            let size = init_ra_size(req, max).max(req);
            *ra = RaState {
                start: first,
                size,
                async_size: size - req,
                prev_block: Some(last),
            };
            (size > req).then(|| (last + 1, first + size - 1))
        } else if missed {
            // page_cache_sync_ra's context readahead (try_context_readahead before v6.10):
            // a miss that continues no read of this file but follows more cached blocks
            // than it asks for is taken for a stream whose state was lost (interleaved
            // readers, another open file); the window is the cached run plus the request
            // (twice the run when the file is cached from its start), at most `max`, its
            // mark on its last block. Otherwise a standalone random read: as asked.
            let req = last - first + 1;
            let contig = match contig_before {
                None => 2 * first,
                Some(n) => n,
            };
            if contig <= req {
                None
            } else {
                let size = (contig + req).min(max).max(req);
                *ra = RaState {
                    start: first,
                    size,
                    async_size: 1,
                    prev_block: Some(last),
                };
                (size > req).then(|| (last + 1, first + size - 1))
            }
        } else {
            None
        };
        window
            .map(|(a, b)| (a, b.min(n_blocks.saturating_sub(1))))
            .filter(|(a, b)| a <= b)
    }

    /// Reads blocks `a0..=a1` of `file` that are not cached into the cache, in one device
    /// request from the first missing to the last, counted under [`Cause::ReadAhead`].
    fn read_ahead(&self, nvme: &Nvme, file: FileId, a0: u64, a1: u64, flen: u64) -> Result<()> {
        let missing: Vec<u64> = {
            let inner = self.inner.lock();
            (a0..=a1)
                .filter(|b| !inner.map.contains_key(&(file, *b)))
                .collect()
        };
        let (Some(&m0), Some(&m1)) = (missing.first(), missing.last()) else {
            return Ok(());
        };
        let span_start = m0 * BLOCK_4K;
        let dev_len = nvme.len_bytes(file)?;
        let span_end = ((m1 + 1) * BLOCK_4K).min(flen).min(dev_len);
        if span_end <= span_start {
            return Ok(());
        }
        let mut span = vec![0u8; ((m1 - m0 + 1) * BLOCK_4K) as usize];
        {
            let _c = crate::stats::enter(Cause::ReadAhead);
            nvme.read_at(
                file,
                span_start,
                &mut span[..(span_end - span_start) as usize],
            )?;
            nvme.stats()
                .add(Metric::os_cache_miss_blocks_4k, m1 - m0 + 1);
        }
        let mut inner = self.inner.lock();
        for b in m0..=m1 {
            let key = (file, b);
            if !inner.map.contains_key(&key) {
                let i = ((b - m0) * BLOCK_4K) as usize;
                inner.insert_clean(key, span[i..i + B].into());
            }
        }
        inner.evict_clean(self.cap_blocks);
        Ok(())
    }

    /// Writes `data` at `offset` into the cache, dirty, counted to the current cause when
    /// written back (see the module doc).
    ///
    /// Errors: device errors of a read-modify-write or a write-back.
    pub fn write(&self, nvme: &Nvme, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let cause = current_cause();
        let end = offset + data.len() as u64;
        let (first, last) = (offset / BLOCK_4K, (end - 1) / BLOCK_4K);
        let mut inner = self.inner.lock();
        let flen = self.file_len(&mut inner, nvme, file)?;
        for b in first..=last {
            let key = (file, b);
            let bstart = b * BLOCK_4K;
            let covers = offset <= bstart && end >= bstart + BLOCK_4K;
            if !inner.map.contains_key(&key) {
                let mut block = vec![0u8; B].into_boxed_slice();
                if !covers && bstart < flen {
                    // Read-modify-write of a partly overwritten block: the kernel reads it.
                    drop(inner);
                    let dev_len = nvme.len_bytes(file)?;
                    let n = dev_len.saturating_sub(bstart).min(BLOCK_4K) as usize;
                    nvme.read_at(file, bstart, &mut block[..n])?;
                    nvme.stats().add(Metric::os_cache_miss_blocks_4k, 1);
                    inner = self.inner.lock();
                }
                if !inner.map.contains_key(&key) {
                    inner.insert_clean(key, block);
                }
            }
            let e = inner.map.get_mut(&key).expect("inserted above");
            let s = offset.max(bstart);
            let t = end.min(bstart + BLOCK_4K);
            e.data[(s - bstart) as usize..(t - bstart) as usize]
                .copy_from_slice(&data[(s - offset) as usize..(t - offset) as usize]);
            inner.touch(key);
            inner.mark_dirty(key, cause);
        }
        let l = inner.file_len.entry(file).or_insert(flen);
        *l = (*l).max(end);
        inner.evict_clean(self.cap_blocks);
        let mut runs = self.take_writeback(&mut inner);
        runs.extend(self.take_expired(&mut inner));
        drop(inner);
        self.write_runs(nvme, runs)
    }

    /// Writes back every dirty block of `file`, waits for write-backs in flight, then syncs
    /// the device file (fsync).
    ///
    /// Errors: device errors.
    pub fn sync(&self, nvme: &Nvme, file: FileId) -> Result<()> {
        let runs = Self::take_file(&mut self.inner.lock(), file);
        self.write_runs(nvme, runs)?;
        let mut inner = self.inner.lock();
        while inner.in_flight.get(&file).copied().unwrap_or(0) > 0 {
            self.drained.wait(&mut inner);
        }
        drop(inner);
        nvme.sync(file)
    }

    /// Drops every block of `file` (the file was removed; dirty blocks are discarded).
    pub fn forget(&self, file: FileId) {
        let mut inner = self.inner.lock();
        let keys: Vec<Key> = inner.map.keys().filter(|k| k.0 == file).copied().collect();
        for k in keys {
            let _ = inner.mark_clean(k);
            if let Some(e) = inner.map.remove(&k) {
                inner.lru.remove(&e.lru_tick);
            }
        }
        inner.dirty_by_file.remove(&file);
        inner.dirtied_when.remove(&file);
        inner.file_len.remove(&file);
        inner.ra.remove(&file);
    }

    /// Over the dirty limit (or over capacity with only dirty blocks left to evict): takes
    /// the oldest dirty blocks for write-back until half the limit remains.
    fn take_writeback(&self, inner: &mut Inner) -> Vec<Run> {
        let over_cap = inner.map.len() > self.cap_blocks;
        if inner.n_dirty() <= self.dirty_limit_blocks && !over_cap {
            return Vec::new();
        }
        let target = if over_cap {
            0
        } else {
            self.dirty_limit_blocks / 2
        };
        let n = inner.n_dirty() - target.min(inner.n_dirty());
        let mut by_file: BTreeMap<FileId, Vec<u64>> = BTreeMap::new();
        for (_, (f, b)) in inner.dirty_order.iter().take(n) {
            by_file.entry(*f).or_default().push(*b);
        }
        let mut runs = Vec::new();
        for (f, mut blocks) in by_file {
            blocks.sort_unstable();
            runs.extend(Self::take_runs(inner, f, &blocks));
        }
        runs
    }

    /// When a periodic check is due (see the module doc): takes every dirty block of each
    /// file dirty for at least `dirty_expire` for write-back, and sets the next check.
    fn take_expired(&self, inner: &mut Inner) -> Vec<Run> {
        let Some(interval) = self.dirty_writeback else {
            return Vec::new();
        };
        let now = Instant::now();
        if inner.next_expire_check.is_some_and(|t| now < t) {
            return Vec::new();
        }
        inner.next_expire_check = Some(now + interval);
        let mut files: Vec<FileId> = inner
            .dirtied_when
            .iter()
            .filter(|(_, &t)| now.saturating_duration_since(t) >= self.dirty_expire)
            .map(|(&f, _)| f)
            .collect();
        files.sort_unstable();
        files
            .into_iter()
            .flat_map(|f| Self::take_file(inner, f))
            .collect()
    }

    /// Takes every dirty block of `file` for write-back ([`Self::take_runs`]).
    fn take_file(inner: &mut Inner, file: FileId) -> Vec<Run> {
        let blocks: Vec<u64> = inner
            .dirty_by_file
            .get(&file)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        Self::take_runs(inner, file, &blocks)
    }

    /// Marks `blocks` (ascending) of `file` clean and groups them into contiguous runs of
    /// one cause; counts them in flight.
    fn take_runs(inner: &mut Inner, file: FileId, blocks: &[u64]) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for &b in blocks {
            let Some((cause, data)) = inner.mark_clean((file, b)) else {
                continue;
            };
            match runs.last_mut() {
                Some(r) if r.cause == cause && r.first_block + (r.data.len() / B) as u64 == b => {
                    r.data.extend_from_slice(&data)
                }
                _ => runs.push(Run {
                    file,
                    first_block: b,
                    cause,
                    data: data.into_vec(),
                }),
            }
        }
        if !runs.is_empty() {
            *inner.in_flight.entry(file).or_default() += runs.len();
        }
        runs
    }

    fn write_runs(&self, nvme: &Nvme, runs: Vec<Run>) -> Result<()> {
        let mut result = Ok(());
        for run in runs {
            let flen = self
                .inner
                .lock()
                .file_len
                .get(&run.file)
                .copied()
                .unwrap_or(u64::MAX);
            let start = run.first_block * BLOCK_4K;
            let len = (run.data.len() as u64).min(flen.saturating_sub(start)) as usize;
            let r = nvme.write_at_for(run.cause, run.file, start, &run.data[..len]);
            if r.is_err() && result.is_ok() {
                result = r;
            }
            let mut inner = self.inner.lock();
            if let Some(n) = inner.in_flight.get_mut(&run.file) {
                *n -= 1;
            }
            drop(inner);
            self.drained.notify_all();
        }
        result
    }
}

/// Copies the part of block `b` that overlaps `[offset, offset + buf.len())` into `buf`.
fn copy_out(block: &[u8], b: u64, offset: u64, buf: &mut [u8]) {
    let bstart = b * BLOCK_4K;
    let end = offset + buf.len() as u64;
    let s = offset.max(bstart);
    let t = end.min(bstart + BLOCK_4K);
    buf[(s - offset) as usize..(t - offset) as usize]
        .copy_from_slice(&block[(s - bstart) as usize..(t - bstart) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{MemDevice, NvmeConfig};
    use crate::stats::{enter, Stats};
    use std::sync::Arc;

    /// A cache without readahead (the tests of the other rules count exact blocks).
    fn setup(size_bytes: u64) -> (Nvme, OsPageCache) {
        setup_ra(size_bytes, 0)
    }

    fn setup_ra(size_bytes: u64, max_readahead_blocks: u64) -> (Nvme, OsPageCache) {
        let nvme = Nvme::new(
            Box::new(MemDevice::new()),
            &NvmeConfig::default(),
            Arc::new(Stats::new()),
        )
        .unwrap();
        nvme.create(1).unwrap();
        let c = OsPageCache::new(&OsCacheConfig {
            size_bytes,
            dirty_background_pct: 50,
            max_readahead_blocks,
            // No periodic write-back: these tests count what the other rules write.
            dirty_writeback_ms: 0,
            ..OsCacheConfig::default()
        })
        .unwrap();
        (nvme, c)
    }

    /// A cache whose periodic check runs at the first call and then not for an hour, with
    /// files expiring after `dirty_expire_ms`.
    fn setup_expiry(dirty_expire_ms: u64) -> (Nvme, OsPageCache) {
        let (nvme, _) = setup(1 << 20);
        let c = OsPageCache::new(&OsCacheConfig {
            size_bytes: 1 << 20,
            dirty_background_pct: 50,
            max_readahead_blocks: 0,
            dirty_expire_ms,
            dirty_writeback_ms: 3_600_000,
        })
        .unwrap();
        (nvme, c)
    }

    #[test]
    fn an_expired_dirty_file_is_written_back_whole_without_fsync() {
        // Expiry 0: the file is old enough at once; the first call's check takes it.
        let (nvme, c) = setup_expiry(0);
        {
            let _g = enter(Cause::Checkpointer);
            c.write(&nvme, 1, 0, &[5u8; 8192]).unwrap();
        }
        let s = nvme.stats().snapshot();
        let cp = s.cause(Cause::Checkpointer);
        assert_eq!(
            (cp.write_blocks_4k, cp.write_requests, cp.syncs),
            (2, 1, 0),
            "the whole file, in one run, to the writer's cause, no fsync"
        );
        assert_eq!(c.dirty_blocks(), 0);
        let mut back = [0u8; 8192];
        nvme.read_at(1, 0, &mut back).unwrap();
        assert_eq!(back, [5u8; 8192]);
        // The next check is an hour away: a second write stays dirty.
        c.write(&nvme, 1, 8192, &[6u8; 4096]).unwrap();
        assert_eq!(c.dirty_blocks(), 1);
        assert_eq!(nvme.stats().snapshot().total().write_blocks_4k, 2);
    }

    #[test]
    fn a_file_dirty_for_less_than_the_expiry_stays_dirty() {
        let (nvme, c) = setup_expiry(3_600_000);
        c.write(&nvme, 1, 0, &[5u8; 8192]).unwrap();
        let mut buf = [0u8; 4096];
        c.read(&nvme, 1, 0, &mut buf).unwrap();
        assert_eq!(c.dirty_blocks(), 2);
        assert_eq!(nvme.stats().snapshot().total().write_blocks_4k, 0);
    }

    #[test]
    fn no_periodic_write_back_when_its_interval_is_zero() {
        let (nvme, _) = setup(1 << 20);
        let c = OsPageCache::new(&OsCacheConfig {
            size_bytes: 1 << 20,
            dirty_background_pct: 50,
            max_readahead_blocks: 0,
            dirty_expire_ms: 0,
            dirty_writeback_ms: 0,
        })
        .unwrap();
        c.write(&nvme, 1, 0, &[5u8; 8192]).unwrap();
        assert_eq!(c.dirty_blocks(), 2);
        assert_eq!(nvme.stats().snapshot().total().write_blocks_4k, 0);
    }

    #[test]
    fn reads_hit_after_first_miss_and_cost_no_device_io() {
        let (nvme, c) = setup(1 << 20);
        nvme.write_at(1, 0, &[7u8; 16384]).unwrap();
        let before = nvme.stats().snapshot();
        let mut buf = [0u8; 8192];
        c.read(&nvme, 1, 8192, &mut buf).unwrap();
        c.read(&nvme, 1, 8192, &mut buf).unwrap();
        assert_eq!(buf, [7u8; 8192]);
        let d = nvme.stats().snapshot().delta(&before).total();
        assert_eq!(
            d.read_blocks_4k, 2,
            "only the first read reaches the device"
        );
        assert_eq!(d.read_requests, 1);
        assert_eq!(d.os_cache_read_hits, 1);
        assert_eq!(d.os_cache_hit_blocks_4k, 2);
        assert_eq!(d.os_cache_miss_blocks_4k, 2);
    }

    #[test]
    fn writes_reach_the_device_at_fsync_counted_to_the_writers_cause() {
        let (nvme, c) = setup(1 << 20);
        {
            let _g = enter(Cause::Checkpointer);
            c.write(&nvme, 1, 0, &[1u8; 8192]).unwrap();
            c.write(&nvme, 1, 8192, &[2u8; 8192]).unwrap();
        }
        assert_eq!(
            nvme.stats().snapshot().total().write_blocks_4k,
            0,
            "write-back, not write-through"
        );
        assert_eq!(c.dirty_blocks(), 4);
        c.sync(&nvme, 1).unwrap(); // fsync from cause Other
        let s = nvme.stats().snapshot();
        let cp = s.cause(Cause::Checkpointer);
        assert_eq!(
            (cp.write_blocks_4k, cp.write_requests),
            (4, 1),
            "one contiguous run"
        );
        assert_eq!(s.cause(Cause::Other).syncs, 1);
        assert_eq!(c.dirty_blocks(), 0);
        let mut back = [0u8; 16384];
        nvme.read_at(1, 0, &mut back).unwrap();
        assert_eq!(&back[..8192], &[1u8; 8192]);
        assert_eq!(&back[8192..], &[2u8; 8192]);
    }

    #[test]
    fn dirty_share_over_the_threshold_starts_writeback() {
        // 64 blocks, 50% dirty limit = 32 blocks.
        let (nvme, c) = setup(64 * 4096);
        for i in 0..40u64 {
            c.write(&nvme, 1, i * 4096, &[i as u8; 4096]).unwrap();
        }
        assert!(c.dirty_blocks() <= 32);
        let written = nvme.stats().snapshot().total().write_blocks_4k;
        assert!(written >= 8, "written back {written} blocks");
        // Every byte is still readable and right, cached or not.
        for i in 0..40u64 {
            let mut b = [0u8; 4096];
            c.read(&nvme, 1, i * 4096, &mut b).unwrap();
            assert_eq!(b, [i as u8; 4096]);
        }
    }

    #[test]
    fn capacity_is_respected_by_evicting_clean_blocks() {
        let (nvme, c) = setup(8 * 4096);
        nvme.write_at(1, 0, &vec![3u8; 64 * 4096]).unwrap();
        for i in 0..64u64 {
            let mut b = [0u8; 4096];
            c.read(&nvme, 1, i * 4096, &mut b).unwrap();
        }
        assert!(c.cached_blocks() <= 8);
    }

    #[test]
    fn partial_block_write_reads_the_block_first() {
        let (nvme, c) = setup(1 << 20);
        nvme.write_at(1, 0, &[5u8; 4096]).unwrap();
        c.write(&nvme, 1, 512, &[6u8; 512]).unwrap();
        assert_eq!(nvme.stats().snapshot().total().read_blocks_4k, 1);
        let mut b = [0u8; 4096];
        c.read(&nvme, 1, 0, &mut b).unwrap();
        assert_eq!(b[0], 5);
        assert_eq!(b[600], 6);
        assert_eq!(b[1100], 5);
    }

    #[test]
    fn sequential_reads_open_a_readahead_window_that_grows_at_its_mark() {
        let (nvme, cache) = setup_ra(1 << 20, 32);
        let f: FileId = 1;
        nvme.write_at(f, 0, &vec![7u8; 64 * B]).unwrap();
        let before = nvme.stats().snapshot();
        let mut buf = vec![0u8; 2 * B];
        // 8 KiB pages read in order, as a sequential heap scan does.
        for page in 0..16u64 {
            cache.read(&nvme, f, page * 2 * B as u64, &mut buf).unwrap();
        }
        let d = nvme.stats().snapshot().delta(&before);
        let ahead = d.cause(Cause::ReadAhead).read_bytes / BLOCK_4K;
        let demand = d.cause(Cause::Other).read_bytes / BLOCK_4K;
        // First read: 2 blocks asked, a window of 4 (get_init_ra_size), 2 read ahead;
        // each mark then reads the next window (8, 16, 32 blocks, at most 32).
        assert_eq!(demand, 2, "only the first read misses");
        assert!(ahead >= 30, "read ahead {ahead} blocks");
        // A random read does not read ahead.
        let (nvme, cache) = setup_ra(1 << 20, 32);
        nvme.write_at(f, 0, &vec![7u8; 64 * B]).unwrap();
        let before = nvme.stats().snapshot();
        for page in [9u64, 3, 17, 1] {
            cache.read(&nvme, f, page * 2 * B as u64, &mut buf).unwrap();
        }
        let d = nvme.stats().snapshot().delta(&before);
        assert_eq!(d.cause(Cause::ReadAhead).read_bytes, 0);
        assert_eq!(d.cause(Cause::Other).read_bytes, 8 * BLOCK_4K);
    }

    #[test]
    fn a_miss_after_a_cached_run_reads_ahead_by_context() {
        let f: FileId = 1;
        let ahead_of = |cached: std::ops::Range<u64>, page: u64| {
            let (nvme, cache) = setup_ra(1 << 20, 32);
            nvme.write_at(f, 0, &vec![7u8; 128 * B]).unwrap();
            // The cached run, put there by writes (no read yet: no stream state).
            let n = (cached.end - cached.start) as usize;
            if n > 0 {
                cache
                    .write(&nvme, f, cached.start * BLOCK_4K, &vec![7u8; n * B])
                    .unwrap();
            }
            let before = nvme.stats().snapshot();
            let mut buf = vec![0u8; 2 * B];
            cache.read(&nvme, f, page * 2 * BLOCK_4K, &mut buf).unwrap();
            let d = nvme.stats().snapshot().delta(&before);
            (
                d.cause(Cause::Other).read_bytes / BLOCK_4K,
                d.cause(Cause::ReadAhead).read_bytes / BLOCK_4K,
            )
        };
        // Blocks 40..=47 cached, page 24 (blocks 48, 49) missed: a window of 8 + 2 blocks.
        assert_eq!(ahead_of(40..48, 24), (2, 8));
        // Blocks 46, 47 only: a run no longer than the request, a random read.
        assert_eq!(ahead_of(46..48, 24), (2, 0));
        // A run of 40 blocks: the window stops at the maximum, 32.
        assert_eq!(ahead_of(8..48, 24), (2, 30));
        // Cached from the file's start (blocks 0..=3): twice the run plus the request.
        assert_eq!(ahead_of(0..4, 2), (2, 8));
        // Nothing cached before it.
        assert_eq!(ahead_of(0..0, 24), (2, 0));
    }

    #[test]
    fn reads_past_the_end_fail() {
        let (nvme, c) = setup(1 << 20);
        c.write(&nvme, 1, 0, &[1u8; 100]).unwrap();
        let mut b = [0u8; 200];
        assert!(matches!(
            c.read(&nvme, 1, 0, &mut b),
            Err(DeviceError::ReadPastEof { .. })
        ));
        let mut b = [0u8; 100];
        c.read(&nvme, 1, 0, &mut b).unwrap();
        c.sync(&nvme, 1).unwrap();
        assert_eq!(
            nvme.len_bytes(1).unwrap(),
            100,
            "write-back clamps to the file length"
        );
    }
}
