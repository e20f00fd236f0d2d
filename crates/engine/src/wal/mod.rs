//! Write-ahead log: records with LSN and CRC, a WAL buffer, group commit, segments, the
//! full-page-image rule, and the control file that records the last checkpoint.
//!
//! Follows PostgreSQL's xlog.c / xloginsert.c (REL_15): `XLogInsert` appends a record to
//! the WAL buffer and returns its end LSN, which becomes the page LSN of every page the
//! record changed; `XLogFlush(lsn)` writes and syncs the WAL up to at least `lsn`, and
//! whoever flushes writes everything inserted so far, so concurrent committers share one
//! sync (group commit). A WAL block that was written partly is written again, whole, by the
//! next flush (PostgreSQL rewrites the partial last page; InnoDB the last 512-byte block).
//!
//! # The WAL coding recipe (transam/README, "Write-Ahead Log Coding")
//! 1. Pin and exclusively lock every page the change touches (`WritePageGuard`).
//! 2. Apply the change to the page bytes.
//! 3. Build the record ([`RecordBuilder`]) and call `buffer::log_change`, which inserts it
//!    ([`Wal::insert`]), stamps the returned end LSN into every page and marks them dirty.
//! 4. Release the locks. At commit, call [`Wal::flush`] with the commit record's LSN.
//!
//! # Full-page images (xloginsert.c `XLogRecordAssemble`, `XLogCheckBufferNeedsBackup`)
//! With `full_page_writes`, a registered page whose page LSN is at or below the redo pointer
//! of the last checkpoint gets its image attached (page minus the `lower..upper` hole), unless
//! the record rebuilds the page (`will_init`). The redo pointer is read under the insert
//! lock, and a checkpoint moves it under the same lock, so no change can slip between the
//! two without an image. The image is taken after step 2, as in PostgreSQL.
//!
//! # Invariants
//! 1. LSNs are byte positions in the WAL stream; records are contiguous, 8-byte aligned in
//!    the xlog format and unpadded in the compact (mtr) format; WAL segment `n` holds positions `[n × segment_bytes, (n+1) × segment_bytes)`.
//! 2. `durable_lsn` only grows; every record ending at or below it has been written and
//!    synced.
//! 3. WAL-before-data: the buffer pool calls [`Wal::flush`] with a page's LSN before
//!    writing the page.
//! 4. After a write or sync failure the WAL refuses every later flush
//!    ([`StorageError::PreviousIo`]) until reopened, as PostgreSQL PANICs on a failed WAL write or
//!    fsync (xlog.c `XLogWrite`, `issue_xlog_fsync`): the failed state is set and tested
//!    under the flush mutex, so no flusher can take the bytes a failed one wrote for synced.
//!
//! # Locking
//! Lock order: `flush` mutex, then `insert` mutex (a flusher copies the buffer under the
//! insert lock; an inserter never takes the flush lock while holding the insert lock).
//! Device I/O happens under the flush mutex only.
//!
//! # Crash safety
//! A record is durable once `durable_lsn` passes its end. At a crash, the tail after the
//! last synced write may be missing or torn; decoding stops at the first record whose
//! length or CRC is invalid, which is the end of the WAL (PostgreSQL `ReadRecord`).

mod control;
pub(crate) mod data;
mod record;
pub(crate) mod redo;

pub use control::ControlFile;
pub use record::{
    align8, catalog_info, decode, decode_with, encode_with, put_varint, record_len, rmgr,
    xlog_info, BlockRef, Decoded, PageImage, RecordBuilder, WalFormat, WalRecord,
    BLOCK_HEADER_BYTES, MTR_CRC_BYTES, RECORD_HEADER_BYTES,
};

use crate::device::{file_ids, FileId, Vfs};
use crate::page::{fpi_hole, page_lsn, set_page_lsn};
use crate::page::{StorageError, StorageResult};
use crate::stats::{Metric, Stats};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::page::Lsn;

/// LSN of the first record of a new WAL.
pub const FIRST_LSN: u64 = 8;

/// WAL settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WalConfig {
    /// Unit of WAL writes in bytes: 8192 (PostgreSQL XLOG_BLCKSZ) or 512 (InnoDB
    /// OS_FILE_LOG_BLOCK_SIZE). A power of two from 512 to 65536.
    pub block_bytes: usize,
    /// Bytes per WAL segment file (PostgreSQL wal_segment_size, 16 MiB). A multiple of
    /// `block_bytes`.
    pub segment_bytes: u64,
    /// WAL buffer size in bytes (PostgreSQL wal_buffers; InnoDB innodb_log_buffer_size):
    /// past this, inserters write the buffer out without syncing.
    pub buffer_bytes: usize,
    /// Attach full-page images (PostgreSQL full_page_writes).
    pub full_page_writes: bool,
    /// Record layout: PostgreSQL's `XLogRecord` or MariaDB-shaped compact records (see
    /// the `record` module doc). A WAL is read with the format it was written with.
    #[serde(default)]
    pub record_format: WalFormat,
}

impl Default for WalConfig {
    fn default() -> Self {
        WalConfig {
            block_bytes: 8192,
            segment_bytes: 16 << 20,
            buffer_bytes: 16 << 20,
            full_page_writes: true,
            record_format: WalFormat::Xlog,
        }
    }
}

impl WalConfig {
    /// Checks ranges. Errors: [`StorageError::InvalidConfig`] naming the field.
    pub fn validate(&self) -> StorageResult<()> {
        if !self.block_bytes.is_power_of_two() || !(512..=65536).contains(&self.block_bytes) {
            return Err(StorageError::InvalidConfig(format!(
                "wal block_bytes must be a power of two from 512 to 65536, got {}",
                self.block_bytes
            )));
        }
        if self.segment_bytes == 0 || !self.segment_bytes.is_multiple_of(self.block_bytes as u64) {
            return Err(StorageError::InvalidConfig(format!(
                "wal segment_bytes ({}) must be a positive multiple of block_bytes ({})",
                self.segment_bytes, self.block_bytes
            )));
        }
        if self.buffer_bytes < self.block_bytes {
            return Err(StorageError::InvalidConfig(format!(
                "wal buffer_bytes ({}) must be at least block_bytes ({})",
                self.buffer_bytes, self.block_bytes
            )));
        }
        Ok(())
    }
}

/// Records read from the WAL: those from `from` (a record boundary) up to `end`, the end
/// of the valid WAL when they were read.
#[derive(Debug)]
pub struct RecordsRead {
    /// Where reading started.
    pub from: Lsn,
    /// The records, in LSN order.
    pub records: Vec<WalRecord>,
    /// Just past the last one.
    pub end: Lsn,
}

struct InsertState {
    /// WAL bytes from `buf_start` to `insert_lsn`.
    buf: Vec<u8>,
    buf_start: u64,
    insert_lsn: u64,
    prev_lsn: u64,
    /// Records inserted since open, by (resource manager, info): pg_waldump `--stats=record`.
    by_type: BTreeMap<(u8, u8), RecordTypeCounts>,
}

/// What the WAL holds of one record type (resource manager and `info` code), as pg_waldump
/// `--stats=record` reports it: records, their bytes without full-page images, and the
/// full-page images' bytes. Counted at insert, since the WAL was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordTypeCounts {
    /// Records inserted.
    pub records: u64,
    /// Their bytes in the WAL, full-page images excluded (pg_waldump's "Record size").
    pub record_bytes: u64,
    /// Bytes of the full-page images they carried (pg_waldump's "FPI size").
    pub fpi_bytes: u64,
}

impl RecordTypeCounts {
    /// `self − earlier`, field by field (saturating).
    pub fn minus(&self, earlier: &RecordTypeCounts) -> RecordTypeCounts {
        RecordTypeCounts {
            records: self.records.saturating_sub(earlier.records),
            record_bytes: self.record_bytes.saturating_sub(earlier.record_bytes),
            fpi_bytes: self.fpi_bytes.saturating_sub(earlier.fpi_bytes),
        }
    }
}

struct FlushState {
    written_lsn: u64,
    unsynced: BTreeSet<FileId>,
}

/// The write-ahead log of one storage instance. See the module doc.
pub struct Wal {
    vfs: Arc<Vfs>,
    stats: Arc<Stats>,
    cfg: WalConfig,
    insert: Mutex<InsertState>,
    flush: Mutex<FlushState>,
    durable_lsn: AtomicU64,
    redo_lsn: AtomicU64,
    failed: Mutex<Option<String>>,
    /// The records [`Wal::open`] decoded to find the end, for recovery to replay without
    /// reading the WAL a second time ([`Wal::take_records_read_at_open`]).
    read_at_open: Mutex<Option<RecordsRead>>,
}

fn align_down(x: u64, a: u64) -> u64 {
    x - x % a
}

impl Wal {
    /// Opens the WAL on `vfs`, continuing after the last valid record at or after
    /// `redo_lsn` (the last checkpoint's redo pointer; [`FIRST_LSN`] for a new database).
    ///
    /// Errors: [`StorageError::InvalidConfig`]; device errors reading the tail.
    pub fn open(
        vfs: Arc<Vfs>,
        cfg: WalConfig,
        stats: Arc<Stats>,
        redo_lsn: u64,
    ) -> StorageResult<Self> {
        cfg.validate()?;
        let (records, end) = read_records(&vfs, &cfg, redo_lsn)?;
        let prev = records.last().map_or(0, |r| r.lsn.0);
        let read_at_open = Mutex::new(Some(RecordsRead {
            from: Lsn(redo_lsn),
            records,
            end: Lsn(end),
        }));
        let buf_start = align_down(end, cfg.block_bytes as u64);
        let mut buf = vec![0u8; (end - buf_start) as usize];
        if !buf.is_empty() {
            read_wal_bytes(&vfs, cfg.segment_bytes, buf_start, &mut buf)?;
        }
        zero_stale_tail(&vfs, &cfg, buf_start, &buf)?;
        Ok(Wal {
            vfs,
            stats,
            insert: Mutex::new(InsertState {
                buf,
                buf_start,
                insert_lsn: end,
                prev_lsn: prev,
                by_type: BTreeMap::new(),
            }),
            flush: Mutex::new(FlushState {
                written_lsn: end,
                unsynced: BTreeSet::new(),
            }),
            durable_lsn: AtomicU64::new(end),
            redo_lsn: AtomicU64::new(redo_lsn),
            failed: Mutex::new(None),
            read_at_open,
            cfg,
        })
    }

    /// The records [`Wal::open`] read from its redo pointer to the end of the WAL, once
    /// (`None` after the first call): crash recovery replays them instead of decoding the
    /// WAL again, as PostgreSQL's startup process reads the WAL once
    /// (xlogrecovery.c `PerformWalRecovery`). A caller that will not replay should take and
    /// drop them, to free the memory.
    pub fn take_records_read_at_open(&self) -> Option<RecordsRead> {
        self.read_at_open.lock().take()
    }

    /// Settings.
    pub fn config(&self) -> &WalConfig {
        &self.cfg
    }

    /// Position where the next record will be inserted.
    pub fn insert_lsn(&self) -> Lsn {
        Lsn(self.insert.lock().insert_lsn)
    }

    /// Everything below this LSN is durable.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable_lsn.load(Ordering::Acquire))
    }

    /// Redo pointer of the last checkpoint (pages at or below it need a full-page image).
    pub fn redo_lsn(&self) -> Lsn {
        Lsn(self.redo_lsn.load(Ordering::Acquire))
    }

    /// Records inserted since the WAL was opened, by (resource manager, info code), for
    /// pg_waldump `--stats=record`-like reports (names: `crate::recovery::record_type_name`).
    pub fn record_type_counts(&self) -> BTreeMap<(u8, u8), RecordTypeCounts> {
        self.insert.lock().by_type.clone()
    }

    /// Starts a checkpoint: moves the redo pointer to the current insert position, under the
    /// insert lock (xlog.c `CreateCheckPoint`), and returns it.
    pub fn begin_checkpoint(&self) -> Lsn {
        let ins = self.insert.lock();
        self.redo_lsn.store(ins.insert_lsn, Ordering::Release);
        Lsn(ins.insert_lsn)
    }

    /// Inserts record `rec`; `pages[i]` are the current bytes of the page registered as
    /// block `i` (already changed, exclusively locked by the caller). Attaches full-page
    /// images by the rule in the module doc, sets every page's LSN to the record's end, and
    /// returns that end LSN. Counts `wal_records`, `wal_bytes`, `wal_fpi`, `wal_fpi_bytes`
    /// to the current cause. When the buffer passes `buffer_bytes`, writes it out (no sync).
    ///
    /// Panics if `pages.len()` differs from the registered block count (a caller bug).
    /// Errors: device errors of a buffer write-out; [`StorageError::PreviousIo`].
    pub fn insert(&self, rec: &RecordBuilder, pages: &mut [&mut [u8]]) -> StorageResult<Lsn> {
        let lsn = self.insert_inner(rec, pages, false)?;
        Ok(lsn.expect("inserted unconditionally"))
    }

    /// Logs a full-page image of page `id` (its current bytes `page`, exclusively locked,
    /// just changed without WAL: hint bits, index kill bits) when full-page writes are on
    /// and this is the page's first change since the redo pointer (xloginsert.c
    /// `XLogSaveBufferForHint`, called from bufmgr.c `MarkBufferDirtyHint` when checksums
    /// are on). The test and the insert happen under the insert lock, so a checkpoint
    /// cannot move the redo pointer between them (PostgreSQL holds off the checkpoint with
    /// DELAY_CHKPT_START for the same reason). Returns the record's end LSN, stamped into
    /// the page, or `None` when no image was needed. Without it, a page changed only by
    /// hints and torn by a crash could not be repaired.
    ///
    /// Errors: as [`Wal::insert`].
    pub fn insert_hint_image(
        &self,
        id: crate::page::PageId,
        page: &mut [u8],
    ) -> StorageResult<Option<Lsn>> {
        if !self.cfg.full_page_writes {
            return Ok(None);
        }
        let rec = RecordBuilder::new(record::rmgr::XLOG, record::xlog_info::FPI_FOR_HINT).block(
            id,
            false,
            &[],
        );
        self.insert_inner(&rec, &mut [page], true)
    }

    fn insert_inner(
        &self,
        rec: &RecordBuilder,
        pages: &mut [&mut [u8]],
        only_with_image: bool,
    ) -> StorageResult<Option<Lsn>> {
        assert_eq!(
            pages.len(),
            rec.blocks.len(),
            "one page per registered block"
        );
        let (end, over) = {
            let mut ins = self.insert.lock();
            let redo = self.redo_lsn.load(Ordering::Acquire);
            let mut fpi_bytes = 0u64;
            let images: Vec<Option<PageImage>> = rec
                .blocks
                .iter()
                .zip(pages.iter())
                .map(|((_, will_init, _), page)| {
                    let needs =
                        self.cfg.full_page_writes && !*will_init && page_lsn(page).0 <= redo;
                    needs.then(|| {
                        let im = PageImage::of(page, fpi_hole(page));
                        fpi_bytes += im.bytes.len() as u64;
                        im
                    })
                })
                .collect();
            if only_with_image && images.iter().all(Option::is_none) {
                return Ok(None);
            }
            let lsn = ins.insert_lsn;
            let bytes = record::encode_with(self.cfg.record_format, rec, ins.prev_lsn, &images);
            ins.buf.extend_from_slice(&bytes);
            ins.prev_lsn = lsn;
            ins.insert_lsn += bytes.len() as u64;
            let end = ins.insert_lsn;
            for p in pages.iter_mut() {
                set_page_lsn(p, Lsn(end));
            }
            // The record's own length, without the alignment padding before the next
            // one: what PostgreSQL adds to pg_stat_wal.wal_bytes (xlog.c
            // `XLogInsertRecord`: `xl_tot_len`) and pg_waldump reports.
            let rec_len =
                record::record_len(self.cfg.record_format, &bytes).unwrap_or(bytes.len()) as u64;
            let t = ins.by_type.entry((rec.rmgr, rec.info)).or_default();
            t.records += 1;
            t.record_bytes += rec_len - fpi_bytes;
            t.fpi_bytes += fpi_bytes;
            self.stats.add(Metric::wal_records, 1);
            self.stats.add(Metric::wal_bytes, rec_len);
            self.stats
                .add(Metric::wal_fpi, images.iter().flatten().count() as u64);
            self.stats.add(Metric::wal_fpi_bytes, fpi_bytes);
            (end, ins.buf.len() > self.cfg.buffer_bytes)
        };
        if over {
            self.write_out(0, false)?;
        }
        Ok(Some(Lsn(end)))
    }

    /// Makes the WAL durable up to at least `upto` (xlog.c `XLogFlush`): writes everything
    /// inserted so far and syncs; returns at once when already durable (group commit: a
    /// waiter finds its LSN covered by another's flush).
    ///
    /// Errors: device errors (after which the WAL is failed); [`StorageError::PreviousIo`].
    pub fn flush(&self, upto: Lsn) -> StorageResult<()> {
        if self.durable_lsn.load(Ordering::Acquire) >= upto.0 {
            return Ok(());
        }
        self.write_out(upto.0, true)
    }

    /// Writes (and syncs) everything inserted so far; for the WAL writer and shutdown.
    ///
    /// Errors: as [`Wal::flush`].
    pub fn flush_all(&self) -> StorageResult<()> {
        let upto = self.insert_lsn();
        self.flush(upto)
    }

    fn check_failed(&self) -> StorageResult<()> {
        match &*self.failed.lock() {
            Some(m) => Err(StorageError::PreviousIo(m.clone())),
            None => Ok(()),
        }
    }

    fn write_out(&self, upto: u64, sync: bool) -> StorageResult<()> {
        let mut fl = self.flush.lock();
        // Checked under the flush lock: a flusher whose write or sync failed marks the WAL
        // failed before it releases the lock, so the next holder cannot find its
        // `written_lsn` advanced and take the writes for synced (a commit acknowledged
        // without its record on the device; crash test, issue 7).
        self.check_failed()?;
        if sync && self.durable_lsn.load(Ordering::Acquire) >= upto {
            return Ok(());
        }
        let r = self.write_out_locked(&mut fl, sync);
        if let Err(e) = &r {
            *self.failed.lock() = Some(e.to_string());
        }
        r
    }

    fn write_out_locked(&self, fl: &mut FlushState, sync: bool) -> StorageResult<()> {
        let block = self.cfg.block_bytes as u64;
        let (start, end, mut bytes) = {
            let ins = self.insert.lock();
            let start = align_down(fl.written_lsn, block);
            let from = (start - ins.buf_start) as usize;
            (start, ins.insert_lsn, ins.buf[from..].to_vec())
        };
        if end > fl.written_lsn {
            bytes.resize((end.div_ceil(block) * block - start) as usize, 0);
            let mut pos = start;
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let seg = pos / self.cfg.segment_bytes;
                let off = pos % self.cfg.segment_bytes;
                let n = ((self.cfg.segment_bytes - off) as usize).min(rest.len());
                let file = file_ids::WAL_BASE + seg as FileId;
                self.vfs.create(file)?;
                self.vfs.write_at(file, off, &rest[..n])?;
                self.stats.add(Metric::wal_writes, 1);
                self.stats.add(Metric::wal_written_bytes, n as u64);
                fl.unsynced.insert(file);
                pos += n as u64;
                rest = &rest[n..];
            }
            fl.written_lsn = end;
            let mut ins = self.insert.lock();
            let keep_from = align_down(end, block);
            let drop_n = (keep_from - ins.buf_start) as usize;
            ins.buf.drain(..drop_n);
            ins.buf_start = keep_from;
        }
        if sync {
            // A file leaves the set only once synced: after a failed sync it is still owed.
            while let Some(&file) = fl.unsynced.first() {
                self.vfs.sync(file)?;
                fl.unsynced.remove(&file);
                self.stats.add(Metric::wal_syncs, 1);
            }
            self.durable_lsn.fetch_max(fl.written_lsn, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Removes WAL segments that end at or below `lsn` (after a checkpoint whose redo
    /// pointer is `lsn`; xlog.c `RemoveOldXlogFiles`). Returns how many were removed.
    ///
    /// Errors: device errors.
    pub fn remove_segments_before(&self, lsn: Lsn) -> StorageResult<usize> {
        let _fl = self.flush.lock();
        let mut n = 0;
        for f in self
            .vfs
            .files()?
            .into_iter()
            .filter(|f| file_ids::is_wal(*f))
        {
            let seg = (f - file_ids::WAL_BASE) as u64;
            if (seg + 1) * self.cfg.segment_bytes <= lsn.0 {
                self.vfs.remove(f)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Reads every valid record from `from` to the end of the WAL (counted to the current
    /// cause). Returns the records and the end LSN.
    ///
    /// Errors: device errors.
    pub fn read_from(&self, from: Lsn) -> StorageResult<(Vec<WalRecord>, Lsn)> {
        let _fl = self.flush.lock();
        let (r, end) = read_records(&self.vfs, &self.cfg, from.0)?;
        Ok((r, Lsn(end)))
    }
}

/// Erases what lies past the end of the valid WAL: zeros from the end to the end of its
/// segment file, and removes the segment files after it, then syncs. A crash can leave
/// bytes of a previous life there (writes after a lost one survived); records appended at
/// the end would otherwise be followed by them, and one that happened to start where a
/// new record ends, with a valid CRC, would be replayed by the next recovery as if it were
/// new (PostgreSQL guards with each page's xlp_pageaddr and each record's xl_prev, MariaDB
/// with the sequence bit of its log blocks; mvcclab erases). `block` is the partial last
/// block's start and `head` its valid bytes, rewritten in front of the zeros.
///
/// Errors: device errors.
fn zero_stale_tail(vfs: &Vfs, cfg: &WalConfig, block: u64, head: &[u8]) -> StorageResult<()> {
    let seg = block / cfg.segment_bytes;
    let file = file_ids::WAL_BASE + seg as FileId;
    let off = block % cfg.segment_bytes;
    if let Ok(len) = vfs.len_bytes(file) {
        if len > off + head.len() as u64 {
            // WAL files grow in whole blocks, so `off..len` is sector-aligned.
            let mut on_device = vec![0u8; (len - off) as usize];
            vfs.read_at(file, off, &mut on_device)?;
            if on_device[head.len()..].iter().any(|&b| b != 0) {
                let mut bytes = head.to_vec();
                bytes.resize(on_device.len(), 0);
                vfs.write_at(file, off, &bytes)?;
                vfs.sync(file)?;
            }
        }
    }
    for f in vfs.files()? {
        if file_ids::is_wal(f) && f > file {
            vfs.remove(f)?;
        }
    }
    Ok(())
}

/// Reads `buf.len()` WAL bytes at position `pos`, across segments; missing segments or
/// bytes past a segment's end read as zeros (the end of the WAL).
fn read_wal_bytes(
    vfs: &Vfs,
    segment_bytes: u64,
    mut pos: u64,
    buf: &mut [u8],
) -> StorageResult<()> {
    let mut at = 0;
    while at < buf.len() {
        let seg = pos / segment_bytes;
        let off = pos % segment_bytes;
        let n = ((segment_bytes - off) as usize).min(buf.len() - at);
        let file = file_ids::WAL_BASE + seg as FileId;
        let chunk = &mut buf[at..at + n];
        chunk.fill(0);
        if let Ok(len) = vfs.len_bytes(file) {
            let avail = len.saturating_sub(off).min(n as u64) as usize;
            if avail > 0 {
                // Read whole 512-byte sectors so that O_DIRECT files accept the request.
                let a0 = align_down(off, 512);
                let a1 = (off + avail as u64)
                    .div_ceil(512)
                    .saturating_mul(512)
                    .min(len);
                let mut sectors = vec![0u8; (a1 - a0) as usize];
                vfs.read_at(file, a0, &mut sectors)?;
                let skip = (off - a0) as usize;
                chunk[..avail].copy_from_slice(&sectors[skip..skip + avail]);
            }
        }
        at += n;
        pos += n as u64;
    }
    Ok(())
}

/// Largest record the reader accepts; a longer length field is taken as the end of the WAL.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// Decodes records (in `cfg.record_format`) from `from` until the first invalid one;
/// returns them and the end LSN. Reads the WAL in 1 MiB chunks, keeping only the undecoded
/// tail in memory.
fn read_records(vfs: &Vfs, cfg: &WalConfig, from: u64) -> StorageResult<(Vec<WalRecord>, u64)> {
    const CHUNK: usize = 1 << 20;
    let segment_bytes = cfg.segment_bytes;
    let mut out: Vec<WalRecord> = Vec::new();
    let mut window: Vec<u8> = Vec::new();
    let mut window_start = from;
    let mut pos = from;
    let mut exhausted = false;
    loop {
        let rest = &window[(pos - window_start) as usize..];
        let prev = out.last().map_or(0, |r| r.lsn.0);
        if let Decoded::Record(r) = decode_with(cfg.record_format, rest, pos, prev) {
            pos = r.end_lsn.0;
            out.push(r);
            continue;
        }
        // Invalid here. More bytes could complete it only if it is cut by the window.
        let cut = match record_len(cfg.record_format, rest) {
            None => true,
            Some(t) => t > rest.len() && t <= MAX_RECORD_BYTES,
        };
        if exhausted || !cut {
            return Ok((out, pos));
        }
        let mut more = vec![0u8; CHUNK];
        read_wal_bytes(
            vfs,
            segment_bytes,
            window_start + window.len() as u64,
            &mut more,
        )?;
        exhausted = more.iter().all(|&b| b == 0);
        window.drain(..(pos - window_start) as usize);
        window_start = pos;
        window.extend_from_slice(&more);
    }
}

#[cfg(test)]
mod tests;
