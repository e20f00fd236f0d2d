//! The undo log: undo records in undo pages that go through the buffer pool and the WAL
//! like any page (MariaDB 10.11 storage/innobase/trx/trx0undo.cc, trx0rec.cc).
//!
//! Undo page layout:
//! ```text
//! | offset | bytes | field                                                        |
//! |--------|-------|--------------------------------------------------------------|
//! | 0      | 32    | common page header; page_type = 5 (undo); lower = end of the |
//! |        |       | last record (TRX_UNDO_PAGE_FREE); upper = page end            |
//! | 32     | …     | records, appended: a log header (34 bytes, TRX_UNDO_LOG_OLD_ |
//! |        |       | HDR_SIZE) when a transaction's log starts on the page, then   |
//! |        |       | its undo records                                              |
//! ```
//! Undo record:
//! ```text
//! | 0  | 2 | length of the record (this field included)                           |
//! | 2  | 1 | type: 11 insert, 12 update of an existing row, 13 update of a         |
//! |    |   | delete-marked row (re-insert), 14 delete-mark (TRX_UNDO_*_REC)        |
//! | 3  | 4 | table id                                                              |
//! | 7  | 6 | DB_TRX_ID of the previous version (0 for insert)                      |
//! | 13 | 7 | DB_ROLL_PTR of the previous version (0 for insert)                    |
//! | 20 | 2 | primary key length, then the encoded primary key                      |
//! | …  |   | delta: old values of the changed columns, and of every column of an   |
//! |    |   | index whose key changed or of all indexes for a delete-mark (the      |
//! |    |   | "ordering fields" purge needs), catalog::encode_delta                 |
//! ```
//! A roll pointer (DB_ROLL_PTR, 7 bytes) is `insert flag << 55 | page << 16 | offset`
//! (InnoDB: insert flag, rollback segment id, page number, offset).
//!
//! # Segments and reuse (trx0undo.cc)
//! Each transaction writes insert undo and update undo into segments of its own. At commit,
//! insert undo is no longer needed: a one-page insert segment that is less than 3/4 full is
//! cached for reuse (TRX_UNDO_PAGE_REUSE_LIMIT), others are freed. Update undo goes to the
//! history list for purge; a one-page update segment under 3/4 full is also cached, so the
//! next transaction appends its log on the same page. A page is freed when purge has
//! processed every log on it and no segment is using it.
//!
//! # Locking
//! `state` mutex for page bookkeeping; an undo page's content lock while appending. Never
//! held across a wait.

use crate::buffer::{log_change, BufferPool, WritePageGuard};
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::page::{hole, init_page, set_hole, PageId, PAGE_HEADER_BYTES};
use crate::wal::{rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Page type tag of undo pages.
pub const PAGE_TYPE_UNDO: u8 = 5;
/// Bytes of a transaction's undo log header on a page (TRX_UNDO_LOG_OLD_HDR_SIZE).
pub const LOG_HEADER_BYTES: usize = 34;
/// Undo record fixed part before the primary key.
pub const RECORD_FIXED_BYTES: usize = 22;

/// `info` codes of [`rmgr::UNDO`] records.
pub mod info {
    /// An undo page was (re)initialized: block 0 = page (will_init).
    pub const PAGE_INIT: u8 = 0x00;
    /// Bytes appended to an undo page (log header or record): block 0 = page; data =
    /// offset u16 then the bytes (MLOG_UNDO_INSERT).
    pub const APPEND: u8 = 0x10;
}

/// Undo record types (trx0rec.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UndoType {
    /// TRX_UNDO_INSERT_REC.
    Insert = 11,
    /// TRX_UNDO_UPD_EXIST_REC.
    UpdateExisting = 12,
    /// TRX_UNDO_UPD_DEL_REC: re-insert over a delete-marked record.
    UpdateDeleted = 13,
    /// TRX_UNDO_DEL_MARK_REC.
    DeleteMark = 14,
}

/// A decoded undo record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndoRecord {
    /// Type.
    pub kind: UndoType,
    /// Table id.
    pub table: u32,
    /// DB_TRX_ID of the previous version.
    pub old_trx_id: u64,
    /// DB_ROLL_PTR of the previous version.
    pub old_roll_ptr: u64,
    /// Encoded primary key.
    pub pk: Vec<u8>,
    /// Old values (catalog::encode_delta).
    pub delta: Vec<u8>,
}

impl UndoRecord {
    /// Encodes the record.
    pub fn encode(&self) -> Vec<u8> {
        let len = RECORD_FIXED_BYTES + self.pk.len() + self.delta.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.push(self.kind as u8);
        out.extend_from_slice(&self.table.to_le_bytes());
        out.extend_from_slice(&self.old_trx_id.to_le_bytes()[..6]);
        out.extend_from_slice(&self.old_roll_ptr.to_le_bytes()[..7]);
        out.extend_from_slice(&(self.pk.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.pk);
        out.extend_from_slice(&self.delta);
        out
    }

    /// Decodes a record at the start of `b`. Errors: [`Error::Corrupted`], never a panic.
    pub fn decode(b: &[u8]) -> Result<UndoRecord> {
        let bad = |w: &str| Error::Corrupted {
            what: format!("undo record: {w}"),
        };
        if b.len() < RECORD_FIXED_BYTES {
            return Err(bad("shorter than its header"));
        }
        let len = u16::from_le_bytes([b[0], b[1]]) as usize;
        if len < RECORD_FIXED_BYTES || len > b.len() {
            return Err(bad("bad length"));
        }
        let kind = match b[2] {
            11 => UndoType::Insert,
            12 => UndoType::UpdateExisting,
            13 => UndoType::UpdateDeleted,
            14 => UndoType::DeleteMark,
            t => return Err(bad(&format!("unknown type {t}"))),
        };
        let table = u32::from_le_bytes([b[3], b[4], b[5], b[6]]);
        let mut t = [0u8; 8];
        t[..6].copy_from_slice(&b[7..13]);
        let mut r = [0u8; 8];
        r[..7].copy_from_slice(&b[13..20]);
        let pk_len = u16::from_le_bytes([b[20], b[21]]) as usize;
        if RECORD_FIXED_BYTES + pk_len > len {
            return Err(bad("primary key longer than the record"));
        }
        Ok(UndoRecord {
            kind,
            table,
            old_trx_id: u64::from_le_bytes(t),
            old_roll_ptr: u64::from_le_bytes(r),
            pk: b[RECORD_FIXED_BYTES..RECORD_FIXED_BYTES + pk_len].to_vec(),
            delta: b[RECORD_FIXED_BYTES + pk_len..len].to_vec(),
        })
    }
}

/// Builds a roll pointer.
pub fn roll_ptr(insert: bool, page: u32, offset: u16) -> u64 {
    (u64::from(insert) << 55) | ((page as u64) << 16) | offset as u64
}

/// Parts of a roll pointer: (insert flag, page, offset).
pub fn split_roll_ptr(rp: u64) -> (bool, u32, u16) {
    ((rp >> 55) & 1 == 1, (rp >> 16) as u32, rp as u16)
}

/// One transaction's undo segment (insert or update).
#[derive(Debug, Default)]
pub struct UndoSegment {
    /// Pages, in order.
    pub pages: Vec<u32>,
    /// Roll pointers of the records written, in order.
    pub records: Vec<u64>,
}

#[derive(Default)]
struct PageState {
    /// Committed logs on the page not yet purged.
    pending_logs: u32,
    /// A segment (active or cached) is appending to it.
    in_use: bool,
}

#[derive(Default)]
struct State {
    pages: HashMap<u32, PageState>,
    insert_cache: Vec<u32>,
    update_cache: Vec<u32>,
}

/// Counts of the undo log (innodb_metrics-like).
#[derive(Default)]
pub struct UndoCounters {
    /// Undo records written.
    pub records_written: AtomicU64,
    /// Undo pages allocated (new or reused from the free list).
    pub pages_allocated: AtomicU64,
    /// Undo pages freed.
    pub pages_freed: AtomicU64,
    /// Cached segments reused.
    pub segments_reused: AtomicU64,
}

/// The undo space of a database: one relation of undo pages (InnoDB keeps them in the
/// system tablespace or undo tablespaces).
pub struct UndoSpace {
    rel: FileId,
    pool: Arc<BufferPool>,
    wal: Arc<Wal>,
    state: Mutex<State>,
    /// Counters.
    pub counters: UndoCounters,
}

const REUSE_LIMIT_NUM: usize = 3;
const REUSE_LIMIT_DEN: usize = 4;

impl UndoSpace {
    /// Creates the undo relation.
    ///
    /// Errors: storage errors.
    pub fn create(pool: Arc<BufferPool>, wal: Arc<Wal>) -> Result<UndoSpace> {
        let rel = pool.store().create_relation()?;
        Ok(UndoSpace {
            rel,
            pool,
            wal,
            state: Mutex::new(State::default()),
            counters: UndoCounters::default(),
        })
    }

    /// The undo relation.
    pub fn rel(&self) -> FileId {
        self.rel
    }

    fn init_page(&self, g: &mut WritePageGuard<'_>) -> Result<()> {
        init_page(g.data_mut(), PAGE_TYPE_UNDO, 0);
        let rec = RecordBuilder::new(rmgr::UNDO, info::PAGE_INIT).block(g.page_id(), true, &[]);
        log_change(&self.wal, &rec, &mut [g])?;
        Ok(())
    }

    /// A page for a new segment: a cached one (its log continues after the previous
    /// transaction's) or a new one.
    fn start_page(&self, insert: bool) -> Result<u32> {
        let cached = {
            let mut st = self.state.lock();
            if insert {
                st.insert_cache.pop()
            } else {
                st.update_cache.pop()
            }
        };
        if let Some(p) = cached {
            self.counters
                .segments_reused
                .fetch_add(1, Ordering::Relaxed);
            if insert {
                // A cached insert segment's old log is dead: reinitialize the page.
                let mut g = self.pool.fetch_write(PageId::new(self.rel, p))?;
                self.init_page(&mut g)?;
            }
            return Ok(p);
        }
        self.new_page()
    }

    fn new_page(&self) -> Result<u32> {
        let mut g = self.pool.new_page(self.rel)?;
        self.init_page(&mut g)?;
        let p = g.page_id().block;
        self.counters
            .pages_allocated
            .fetch_add(1, Ordering::Relaxed);
        self.state.lock().pages.insert(
            p,
            PageState {
                pending_logs: 0,
                in_use: true,
            },
        );
        Ok(p)
    }

    /// Appends `bytes` to page `p` if they fit; returns the offset.
    fn append_on(&self, p: u32, bytes: &[u8]) -> Result<Option<u16>> {
        let mut g = self.pool.fetch_write(PageId::new(self.rel, p))?;
        let (lower, upper) = hole(g.data());
        if (lower as usize) < PAGE_HEADER_BYTES || lower > upper {
            return Err(Error::Corrupted {
                what: format!("{}: undo page free pointer {lower}", g.page_id()),
            });
        }
        if ((upper - lower) as usize) < bytes.len() {
            return Ok(None);
        }
        let off = lower as usize;
        g.data_mut()[off..off + bytes.len()].copy_from_slice(bytes);
        set_hole(g.data_mut(), (off + bytes.len()) as u16, upper);
        let mut data = Vec::with_capacity(2 + bytes.len());
        data.extend_from_slice(&(off as u16).to_le_bytes());
        data.extend_from_slice(bytes);
        let rec = RecordBuilder::new(rmgr::UNDO, info::APPEND).block(g.page_id(), false, &data);
        log_change(&self.wal, &rec, &mut [&mut g])?;
        Ok(Some(off as u16))
    }

    /// Appends an undo record to `seg` (starting the segment, with its log header, when
    /// empty); returns its roll pointer. Counts `records_written`.
    ///
    /// Errors: [`Error::TooLarge`] for a record larger than a page; storage errors.
    pub fn append(
        &self,
        seg: &mut UndoSegment,
        insert: bool,
        trx_id: u64,
        rec: &UndoRecord,
    ) -> Result<u64> {
        let bytes = rec.encode();
        let page_bytes = self.pool.store().page_size().bytes();
        if bytes.len() + LOG_HEADER_BYTES > page_bytes - PAGE_HEADER_BYTES {
            return Err(Error::TooLarge {
                what: "undo record",
                bytes: bytes.len(),
                max_bytes: page_bytes - PAGE_HEADER_BYTES - LOG_HEADER_BYTES,
            });
        }
        if seg.pages.is_empty() {
            let p = self.start_page(insert)?;
            seg.pages.push(p);
            let mut hdr = [0u8; LOG_HEADER_BYTES];
            hdr[..8].copy_from_slice(&trx_id.to_le_bytes());
            if self.append_on(p, &hdr)?.is_none() {
                // The cached page had no room for another log after all: take a new one.
                self.release_page(p);
                let p = self.new_page()?;
                seg.pages[0] = p;
                self.append_on(p, &hdr)?;
            }
        }
        let last = *seg.pages.last().expect("segment has a page");
        let off = match self.append_on(last, &bytes)? {
            Some(off) => (last, off),
            None => {
                let p = self.new_page()?;
                seg.pages.push(p);
                let off = self.append_on(p, &bytes)?.ok_or_else(|| Error::Corrupted {
                    what: "undo record does not fit an empty page".into(),
                })?;
                (p, off)
            }
        };
        self.counters
            .records_written
            .fetch_add(1, Ordering::Relaxed);
        let rp = roll_ptr(insert, off.0, off.1);
        seg.records.push(rp);
        Ok(rp)
    }

    /// Reads the undo record at roll pointer `rp` (counted to the caller's cause).
    ///
    /// Errors: [`Error::Corrupted`] for a bad pointer or record; storage errors.
    pub fn read(&self, rp: u64) -> Result<UndoRecord> {
        let (_, page, off) = split_roll_ptr(rp);
        let g = self.pool.fetch_read(PageId::new(self.rel, page))?;
        let (lower, _) = hole(g.data());
        if (off as usize) < PAGE_HEADER_BYTES || off >= lower {
            return Err(Error::Corrupted {
                what: format!("roll pointer {rp:#x} points outside page {page}'s records"),
            });
        }
        UndoRecord::decode(&g.data()[off as usize..lower as usize])
    }

    fn used_bytes(&self, p: u32) -> Result<usize> {
        let g = self.pool.fetch_read(PageId::new(self.rel, p))?;
        Ok(hole(g.data()).0 as usize)
    }

    fn release_page(&self, p: u32) {
        let mut st = self.state.lock();
        if let Some(s) = st.pages.get_mut(&p) {
            s.in_use = false;
        }
    }

    fn reusable(&self, seg: &UndoSegment) -> Result<Option<u32>> {
        if seg.pages.len() != 1 {
            return Ok(None);
        }
        let page_bytes = self.pool.store().page_size().bytes();
        let used = self.used_bytes(seg.pages[0])?;
        Ok((used * REUSE_LIMIT_DEN < page_bytes * REUSE_LIMIT_NUM).then_some(seg.pages[0]))
    }

    /// At commit or after rollback: the insert segment is done. Caches it for reuse when
    /// it is one page under 3/4 full, else frees its pages.
    ///
    /// Errors: storage errors.
    pub fn finish_insert(&self, seg: UndoSegment) -> Result<()> {
        if seg.pages.is_empty() {
            return Ok(());
        }
        if let Some(p) = self.reusable(&seg)? {
            self.state.lock().insert_cache.push(p);
            return Ok(());
        }
        for p in seg.pages {
            self.free_page(p)?;
        }
        Ok(())
    }

    /// At commit: the update segment's log goes to the history list (the caller keeps the
    /// segment's records there); its pages now hold one more log pending purge, and a small
    /// one-page segment is cached for the next transaction.
    ///
    /// Errors: storage errors.
    pub fn finish_update(&self, seg: &UndoSegment) -> Result<()> {
        if seg.pages.is_empty() {
            return Ok(());
        }
        let cache = self.reusable(seg)?;
        let mut st = self.state.lock();
        for p in &seg.pages {
            let s = st.pages.entry(*p).or_default();
            s.pending_logs += 1;
            s.in_use = Some(*p) == cache;
        }
        if let Some(p) = cache {
            st.update_cache.push(p);
        }
        Ok(())
    }

    /// After rollback: the update segment's records are no longer needed (the rolled-back
    /// changes were undone); its pages are released.
    ///
    /// Errors: storage errors.
    pub fn discard_update(&self, seg: UndoSegment) -> Result<()> {
        let mut to_free = Vec::new();
        {
            let mut st = self.state.lock();
            for p in &seg.pages {
                if let Some(s) = st.pages.get_mut(p) {
                    s.in_use = false;
                    if s.pending_logs == 0 {
                        to_free.push(*p);
                    }
                }
            }
        }
        for p in to_free {
            self.free_page(p)?;
        }
        Ok(())
    }

    /// Purge has processed one committed log that had records on `pages`: pages no longer
    /// holding a pending log and not in use are freed.
    ///
    /// Errors: storage errors.
    pub fn purged(&self, pages: &[u32]) -> Result<()> {
        let mut to_free = Vec::new();
        {
            let mut st = self.state.lock();
            for p in pages {
                if let Some(s) = st.pages.get_mut(p) {
                    s.pending_logs = s.pending_logs.saturating_sub(1);
                    if s.pending_logs == 0 && !s.in_use {
                        to_free.push(*p);
                    }
                }
            }
        }
        for p in to_free {
            self.free_page(p)?;
        }
        Ok(())
    }

    fn free_page(&self, p: u32) -> Result<()> {
        let id = PageId::new(self.rel, p);
        let mut tries = 0;
        while !self.pool.discard(id) {
            tries += 1;
            if tries > 10_000 {
                return Ok(()); // still pinned by a reader: leave the page (it leaks, no data is lost)
            }
            std::thread::yield_now();
        }
        self.state.lock().pages.remove(&p);
        self.pool.store().free_page(id)?;
        self.counters.pages_freed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Undo pages in use (allocated and not freed).
    pub fn pages_in_use(&self) -> u64 {
        self.counters.pages_allocated.load(Ordering::Relaxed)
            - self.counters.pages_freed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn record_roundtrip_and_roll_pointer() {
        let r = UndoRecord {
            kind: UndoType::UpdateExisting,
            table: 3,
            old_trx_id: 77,
            old_roll_ptr: roll_ptr(true, 9, 100),
            pk: vec![1, 2, 3],
            delta: vec![9; 10],
        };
        let b = r.encode();
        assert_eq!(b.len(), RECORD_FIXED_BYTES + 3 + 10);
        assert_eq!(UndoRecord::decode(&b).unwrap(), r);
        assert_eq!(split_roll_ptr(roll_ptr(true, 9, 100)), (true, 9, 100));
        assert_eq!(
            split_roll_ptr(roll_ptr(false, u32::MAX, 7)),
            (false, u32::MAX, 7)
        );
    }

    proptest! {
        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = UndoRecord::decode(&b);
        }
    }
}
