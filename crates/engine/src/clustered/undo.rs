//! The undo log: undo records in undo pages, grouped in undo segments that belong to
//! rollback segments, all in one relation that goes through the buffer pool and the WAL like
//! any other (MariaDB 10.11 storage/innobase/trx/trx0undo.cc, trx0rseg.cc, trx0rec.cc,
//! trx0purge.cc, trx0trx.cc).
//!
//! The relation starts with one rollback segment header page per rollback segment (blocks
//! `0..N`, layout in `rseg`); undo pages follow. Undo page layout:
//! ```text
//! | offset | bytes | field                                                          |
//! |--------|-------|----------------------------------------------------------------|
//! | 0      | 32    | common page header; page_type = 5 (undo); lower = end of the   |
//! |        |       | last record (TRX_UNDO_PAGE_FREE); upper = page end              |
//! | 32     | 16    | only on a segment's first page, the segment header             |
//! |        |       | (TRX_UNDO_SEG_HDR):                                             |
//! |        |       |  +0 u16 state: 1 active, 2 cached, 3 to free (insert undo),    |
//! |        |       |     4 to purge (TRX_UNDO_STATE)                                 |
//! |        |       |  +2 u16 offset of the last log header on the page               |
//! |        |       |     (TRX_UNDO_LAST_LOG)                                         |
//! |        |       |  +4 u8 kind: 1 insert, 2 update; +5 u8 rollback segment id;     |
//! |        |       |  +6 u16 slot in the rollback segment header                     |
//! |        |       |  +8 u32 pages in the segment, +12 u32 its last page             |
//! |        |       |     (TRX_UNDO_PAGE_LIST; each later page's `aux` word in the     |
//! |        |       |     common header names the page before it, TRX_UNDO_PAGE_NODE)  |
//! | 32/48  | …     | appended: a log header (34 bytes, TRX_UNDO_LOG_OLD_HDR_SIZE)    |
//! |        |       | where a transaction's log starts, 152 bytes reserved (the XA    |
//! |        |       | XID area, to TRX_UNDO_LOG_XA_HDR_SIZE = 186 bytes in all, never |
//! |        |       | written), then its undo records                                |
//! ```
//! Undo log header (at its offset on the segment's first page):
//! ```text
//! | 0  | 8 | DB_TRX_ID of the transaction (TRX_UNDO_TRX_ID)                          |
//! | 8  | 8 | commit number, 0 until the log joins the history (TRX_UNDO_TRX_NO)      |
//! | 16 | 2 | offset of the next log header on this page, 0 if none (TRX_UNDO_NEXT_LOG) |
//! | 18 | 2 | offset of the previous log header on this page (TRX_UNDO_PREV_LOG)      |
//! | 20 | 6 | history list node, previous = newer log: page u32, offset u16            |
//! | 26 | 6 | history list node, next = older log (TRX_UNDO_HISTORY_NODE)              |
//! | 32 | 2 | offset of the log's first record (TRX_UNDO_LOG_START)                    |
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
//! A roll pointer (DB_ROLL_PTR, 7 bytes) is `insert flag << 55 | rseg id << 48 | page << 16
//! | offset`, as InnoDB's (trx0undo.ic `trx_undo_build_roll_ptr`).
//!
//! # Rollback segments (trx0rseg.cc, trx0trx.cc)
//! A read-write transaction gets one of the N rollback segments in turn at its first undo
//! record (`trx_assign_rseg_low`: a counter modulo N) and holds a reference on it until it
//! ends. Each rollback segment has its own latch (`trx_rseg_t::latch`: the `Rseg` mutex),
//! its own caches of one-page undo segments, its own undo slots and its own history list.
//! Its header page is touched where MariaDB touches it:
//! - creating an undo segment writes its slot (trx0undo.cc `trx_undo_seg_create`, from
//!   `trx_undo_assign_low` → `trx_undo_create` when the cache is empty);
//! - committing update undo adds the log as the first node of the history list and, for a
//!   segment that is not kept for reuse, frees its slot and adds its pages to the history
//!   size (trx0purge.cc `trx_purge_add_undo_to_history`);
//! - freeing an insert segment at commit frees its slot (`trx_undo_seg_free`, as MariaDB
//!   before 10.3 did for insert undo, `trx_undo_insert_cleanup`);
//! - truncating the history after a purge batch latches every rollback segment's header,
//!   removes the purged logs from the tail of its list and frees their segments
//!   (trx0purge.cc `purge_sys_t::iterator::free_history_rseg`).
//!
//! # Segments and reuse (trx0undo.cc)
//! Each transaction writes insert undo and update undo into segments of its own, in its
//! rollback segment: a cached one of that rollback segment when there is one
//! (`trx_undo_reuse_cached`: a new log header on its page; an insert segment's page starts
//! over) or a new one (`trx_undo_create`). At commit (`trx_undo_set_state_at_finish`) a
//! one-page segment less than 3/4 full (TRX_UNDO_PAGE_REUSE_LIMIT) is cached in its rollback
//! segment. Insert undo is then no longer needed: a segment that is not cached is freed.
//! Update undo joins the history list for purge; its segment, cached or not, is freed when
//! history truncation removes the last log on its first page and no later transaction
//! started a log on that page.
//!
//! # Invariants
//! 1. A roll pointer stays valid until the log holding it is truncated from the history,
//!    which happens only after purge processed it (`purged`) and no transaction holds its
//!    rollback segment (MariaDB's `rseg.is_referenced()` check).
//! 2. An undo slot is in use exactly while its segment is active, cached, or (insert undo)
//!    being freed; a to-purge update segment gives its slot back at commit.
//! 3. Each rollback segment's history list is in commit order: newest first, truncated
//!    from the oldest end only.
//! 4. The header page and the in-memory `RsegState` change together, under the `Rseg` mutex.
//!
//! # Locking
//! Lock order: `Rseg` mutex → its header page's content lock → undo page content locks (the
//! log's first page, then the page of its history neighbour). A thread holds more than one
//! undo page latch only under the `Rseg` mutex; appenders and readers hold one page latch at
//! a time and take no mutex while holding it. No page latch is held across a wait for a
//! transaction.
//!
//! # Crash safety
//! Every change to a rollback segment header or an undo page is WAL-logged (UNDO records:
//! `APPEND`, `WRITE`, `RSEG_INIT`) before the page can be written; `undo_wal::redo_block`
//! replays them (block formats and what redo does not reproduce: see `undo_wal`). The
//! states of a transaction's insert and update segments and its history list entry change
//! in one record ([`UndoSpace::finish`]), which is the commit (the engine flushes the WAL
//! past it before the commit returns; there is no commit record, as in InnoDB), so a
//! segment found active after a crash belongs to a transaction that did not commit.
//! [`UndoSpace::open`] rebuilds the in-memory state after redo: slots, caches and
//! history lists from the rollback segment header pages and the segments' first pages, a
//! segment's pages through each later page's predecessor (`aux`), the history's records
//! from the undo pages; the engine rolls back the active segments' transactions
//! (`ClusteredAm::recover`). Undo pages freed before a crash leak (the free page list is in
//! memory), as MariaDB's `trx_purge_free_segment` notes for a crash mid-free.

use super::rseg::{self, FilAddr, FIL_NULL};
use super::undo_wal::WriteLog;
use super::HistoryEntry;
use crate::buffer::{log_change, BufferPool, ReadPageGuard, WritePageGuard};
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::mvcc::Xid;
use crate::page::{
    aux, get_u16, get_u32, get_u64, hole, init_page, page_type, set_hole, PageId, OFF_AUX,
    OFF_LOWER, PAGE_HEADER_BYTES,
};
use crate::wal::{rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Page type tag of undo pages.
pub const PAGE_TYPE_UNDO: u8 = 5;
/// Bytes of a transaction's undo log header on a page (TRX_UNDO_LOG_OLD_HDR_SIZE).
pub const LOG_HEADER_BYTES: usize = 34;
/// Bytes a log header takes on its page: the header and the space MariaDB reserves after
/// it for an X/Open XA XID, for every log whether or not the transaction is an XA one
/// (trx0undo.cc `trx_undo_header_create` advances TRX_UNDO_PAGE_FREE by
/// TRX_UNDO_LOG_XA_HDR_SIZE = 46 + 3 × 4 + XIDDATASIZE 128 = 186 bytes). The reserved
/// bytes are neither written nor logged; they make a page fill, and its segment stop being
/// cached, after as many logs as MariaDB's.
pub const LOG_HEADER_SPACE_BYTES: usize = 186;
/// Bytes of the segment header on a segment's first page.
pub const SEG_HEADER_BYTES: usize = 16;
/// Undo record fixed part before the primary key.
pub const RECORD_FIXED_BYTES: usize = 22;

const SEG_STATE: usize = PAGE_HEADER_BYTES;
const SEG_LAST_LOG: usize = PAGE_HEADER_BYTES + 2;
const SEG_KIND: usize = PAGE_HEADER_BYTES + 4;
const SEG_RSEG: usize = PAGE_HEADER_BYTES + 5;
const SEG_SLOT: usize = PAGE_HEADER_BYTES + 6;
const SEG_N_PAGES: usize = PAGE_HEADER_BYTES + 8;
const SEG_LAST_PAGE: usize = PAGE_HEADER_BYTES + 12;
/// Where the first log header of a segment's first page starts.
pub(super) const SEG_FIRST_LOG: usize = PAGE_HEADER_BYTES + SEG_HEADER_BYTES;

const LOG_TRX_ID: usize = 0;
const LOG_TRX_NO: usize = 8;
const LOG_NEXT_LOG: usize = 16;
const LOG_PREV_LOG: usize = 18;
const LOG_HIST_PREV: usize = 20;
const LOG_HIST_NEXT: usize = 26;
const LOG_START: usize = 32;

/// Undo segment states (trx0undo.h TRX_UNDO_ACTIVE …).
pub mod state {
    /// In use by a running transaction.
    pub const ACTIVE: u16 = 1;
    /// Kept in its rollback segment's cache for reuse.
    pub const CACHED: u16 = 2;
    /// Insert undo being freed at commit (MariaDB before 10.3: TRX_UNDO_TO_FREE).
    pub const TO_FREE: u16 = 3;
    /// Update undo waiting in the history list.
    pub const TO_PURGE: u16 = 4;
}

/// `info` codes of [`rmgr::UNDO`] records.
pub mod info {
    /// Bytes appended to an undo page (an undo record): block 0 = page; data = offset u16
    /// then the bytes (MLOG_UNDO_INSERT).
    pub const APPEND: u8 = 0x10;
    /// Fields written on one or more pages in one mini-transaction (segment and log headers,
    /// rollback segment header slots and history list): each block's data is a sequence of
    /// (offset u16, length u16, bytes); a will_init block is first formatted as an empty
    /// undo page whose records start after the common header (a segment's first page then
    /// writes its segment header and free pointer in the same block; a later page of a
    /// segment has empty data) (mtr_t::write / memcpy / memset records).
    pub const WRITE: u8 = 0x20;
    /// A rollback segment header page was created (will_init): data = rollback segment id
    /// (trx_rseg_header_create).
    pub const RSEG_INIT: u8 = 0x30;
}

/// The name of undo record `code` (the constant's name in [`info`]), `None` for an
/// unknown code.
pub fn info_name(code: u8) -> Option<&'static str> {
    Some(match code {
        info::APPEND => "APPEND",
        info::WRITE => "WRITE",
        info::RSEG_INIT => "RSEG_INIT",
        _ => return None,
    })
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

/// The undo record at byte `off` of undo page `page` (page `id`): the bytes from `off` up
/// to the page's free pointer (TRX_UNDO_PAGE_FREE, `lower`), decoded by
/// [`UndoRecord::decode`].
///
/// Errors: [`Error::Corrupted`] when `off` is not between the page header and the free
/// pointer, the free pointer lies past the end of the page, or the record is bad; never a
/// panic.
pub fn record_on_page(page: &[u8], id: PageId, off: u16) -> Result<UndoRecord> {
    if page.len() < PAGE_HEADER_BYTES {
        return Err(Error::Corrupted {
            what: format!("{id}: undo page of {} bytes", page.len()),
        });
    }
    let (lower, _) = hole(page);
    if (off as usize) < PAGE_HEADER_BYTES || off >= lower || lower as usize > page.len() {
        return Err(Error::Corrupted {
            what: format!(
                "{id}: undo record offset {off} outside the records (free pointer {lower}, \
                 page of {} bytes)",
                page.len()
            ),
        });
    }
    UndoRecord::decode(&page[off as usize..lower as usize])
}

/// Builds a roll pointer (trx_undo_build_roll_ptr): insert flag, rollback segment id
/// (7 bits), page, offset.
pub fn roll_ptr(insert: bool, rseg: u8, page: u32, offset: u16) -> u64 {
    (u64::from(insert) << 55)
        | ((u64::from(rseg) & 0x7F) << 48)
        | ((page as u64) << 16)
        | offset as u64
}

/// Parts of a roll pointer (trx_undo_decode_roll_ptr): (insert flag, rollback segment id,
/// page, offset).
pub fn split_roll_ptr(rp: u64) -> (bool, u8, u32, u16) {
    (
        (rp >> 55) & 1 == 1,
        ((rp >> 48) & 0x7F) as u8,
        (rp >> 16) as u32,
        rp as u16,
    )
}

/// Where a committed update undo log is: its rollback segment and its log header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRef {
    /// Rollback segment id.
    pub rseg: u8,
    /// The segment's first page, holding the log header.
    pub page: u32,
    /// Offset of the log header on it.
    pub offset: u16,
    /// Its number in its rollback segment's history (1 for the first log committed there).
    pub seq: u64,
}

/// One transaction's undo segment (insert or update).
#[derive(Debug, Default)]
pub struct UndoSegment {
    /// Pages, the segment's first page (with the segment header) first.
    pub pages: Vec<u32>,
    /// Roll pointers of the records written, in order.
    pub records: Vec<u64>,
    /// Its undo slot in the rollback segment header.
    pub slot: u16,
    /// Offset of the transaction's log header on the first page.
    pub log_offset: u16,
}

/// A transaction's undo state in one database: its rollback segment and its insert and
/// update segments (trx_t::rsegs).
#[derive(Debug, Default)]
pub struct TrxUndo {
    /// The rollback segment assigned at the first undo record (None before).
    pub rseg: Option<u8>,
    /// Insert undo.
    pub insert: UndoSegment,
    /// Update undo.
    pub update: UndoSegment,
    /// Roll pointers of every record written, in order, for rollback (each undo record
    /// names its table).
    pub all: Vec<u64>,
}

#[derive(Clone, Copy, Debug)]
struct Cached {
    page: u32,
    slot: u16,
    /// The history number of the last (update) log on the page, 0 for insert undo.
    last_seq: u64,
}

/// A log in a rollback segment's history list.
#[derive(Debug)]
struct HistLog {
    /// Its number in the rollback segment's history: the list holds consecutive numbers,
    /// newest first, so a log is found by subtraction.
    seq: u64,
    at: FilAddr,
    /// Pages of its segment at commit, first page first.
    seg_pages: Vec<u32>,
    slot: u16,
    /// Its segment was cached at commit (else to purge).
    cached: bool,
    /// A later log header was written on the same page (TRX_UNDO_NEXT_LOG != 0).
    has_next: bool,
    /// Purge has processed its records.
    purged: bool,
}

/// What a rollback segment's header page says, kept in memory (trx_rseg_t).
struct RsegState {
    slots_used: Vec<bool>,
    insert_cached: Vec<Cached>,
    update_cached: Vec<Cached>,
    /// Newest first (the list's FIRST), as on the page.
    history: VecDeque<HistLog>,
    history_size: u32,
    /// Largest transaction id that wrote undo here (trx_rseg_t::needs_purge − 1).
    max_trx_id: u64,
    /// History number of the last log added.
    last_seq: u64,
}

impl RsegState {
    /// The log numbered `seq` if it is still in the history.
    fn log_mut(&mut self, seq: u64) -> Option<&mut HistLog> {
        let newest = self.history.front()?.seq;
        let i = newest.checked_sub(seq)?;
        self.history.get_mut(usize::try_from(i).ok()?)
    }
}

/// One rollback segment (trx_rseg_t).
struct Rseg {
    /// Its header page.
    page: u32,
    /// Transactions holding it (trx_rseg_t::ref).
    refs: AtomicU32,
    state: Mutex<RsegState>,
}

/// Counts of the undo log (innodb_metrics-like).
#[derive(Default)]
pub struct UndoCounters {
    /// Undo records written.
    pub records_written: AtomicU64,
    /// Undo pages allocated (new or reused from the free list); header pages not included.
    pub pages_allocated: AtomicU64,
    /// Undo pages freed.
    pub pages_freed: AtomicU64,
    /// Cached segments reused (trx_undo_reuse_cached).
    pub segments_reused: AtomicU64,
    /// Segments created (trx_undo_create).
    pub segments_created: AtomicU64,
    /// Segments freed (at commit for insert undo, by history truncation for update undo).
    pub segments_freed: AtomicU64,
    /// Logs removed from history lists by truncation.
    pub logs_truncated: AtomicU64,
    /// History truncations (each latches every rollback segment header). Concurrent
    /// requests coalesce, so there can be fewer than purge batches.
    pub truncations: AtomicU64,
    /// Purge batches ended (trx0purge.cc `trx_purge`, innodb_metrics `purge_invoked`),
    /// counted by the purge threads of `db::innodb`.
    pub purge_batches: AtomicU64,
}

/// What one rollback segment holds now (for tests and tools).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RsegInfo {
    /// Header page (block of the undo relation).
    pub header_page: u32,
    /// Transactions holding it.
    pub refs: u32,
    /// Undo slots in use.
    pub slots_used: usize,
    /// First pages of cached insert segments.
    pub insert_cached: Vec<u32>,
    /// First pages of cached update segments.
    pub update_cached: Vec<u32>,
    /// Logs in its history list.
    pub history_len: usize,
    /// Pages of to-purge segments in its history list.
    pub history_size: u32,
}

/// The undo space of a database: N rollback segments and their undo pages in one relation
/// (InnoDB keeps them in the system tablespace, or undo tablespaces).
pub struct UndoSpace {
    rel: FileId,
    pool: Arc<BufferPool>,
    wal: Arc<Wal>,
    rsegs: Box<[Rseg]>,
    next_rseg: AtomicU32,
    next_trx_no: AtomicU64,
    /// Counters.
    pub counters: UndoCounters,
}

const REUSE_LIMIT_NUM: usize = 3;
const REUSE_LIMIT_DEN: usize = 4;

/// A history log as read at open: its transaction id, its records' roll pointers and its
/// in-memory entry (numbered later).
type HistoryLogRead = (u64, Vec<u64>, HistLog);

/// What [`UndoSpace::open`] found on the pages besides the rollback segments' state.
#[derive(Debug, Default)]
pub struct RecoveredUndo {
    /// The update undo logs of every history list, in commit order (oldest first), as
    /// commit made them for purge.
    pub history: Vec<HistoryEntry>,
    /// Transactions with an undo segment in state active (their commit never reached the
    /// undo log), by transaction id: their undo, holding a reference on their rollback
    /// segment, `all` in rollback order reversed (see [`UndoSpace::open`]).
    pub active: Vec<(u64, TrxUndo)>,
    /// The largest transaction id in any undo log header or rollback segment header
    /// (TRX_RSEG_MAX_TRX_ID).
    pub max_trx_id: u64,
    /// Insert segments a crash left to be freed, freed at open.
    pub segments_freed: u64,
}

/// Writes `bytes` at `off` of the page and notes in `log` (a WRITE block's data) only the
/// bytes that changed, nothing when none did: mtr0log.h `mtr_t::write` compares the value
/// with the page and logs from the first byte that differs (a `MAYBE_NOP` write of an equal
/// value logs nothing). InnoDB's integers are big-endian, so that trimming drops their
/// unchanged high-order bytes; mvcclab's are little-endian, whose high-order bytes come
/// last, so the unchanged bytes at both ends are dropped. Not for a `will_init` block, whose
/// redo starts from a freshly formatted page ([`put_forced`]).
fn put(g: &mut WritePageGuard<'_>, log: &mut WriteLog, off: usize, bytes: &[u8]) {
    let old = &g.data()[off..off + bytes.len()];
    let Some(first) = old.iter().zip(bytes).position(|(a, b)| a != b) else {
        return;
    };
    let end = old
        .iter()
        .zip(bytes)
        .rposition(|(a, b)| a != b)
        .map_or(bytes.len(), |i| i + 1);
    g.data_mut()[off + first..off + end].copy_from_slice(&bytes[first..end]);
    log.push(off + first, &bytes[first..end]);
}

/// Writes `bytes` at `off` of the page and notes all of them in `log` (mtr0log.h
/// `mtr_t::write<…, FORCED>`): for the blocks of a page the record initializes.
fn put_forced(g: &mut WritePageGuard<'_>, log: &mut WriteLog, off: usize, bytes: &[u8]) {
    g.data_mut()[off..off + bytes.len()].copy_from_slice(bytes);
    log.push(off, bytes);
}

/// Formats an empty undo page; a segment's first page keeps room for the segment header.
pub(super) fn format_undo_page(p: &mut [u8], first: bool) {
    init_page(p, PAGE_TYPE_UNDO, 0);
    let len = p.len() as u16;
    let lower = if first {
        SEG_FIRST_LOG
    } else {
        PAGE_HEADER_BYTES
    };
    set_hole(p, lower as u16, len);
}

/// Offset and length of each field of a log header, in [`log_header`]'s layout.
const LOG_HEADER_FIELDS: [(usize, usize); 7] = [
    (LOG_TRX_ID, 8),
    (LOG_TRX_NO, 8),
    (LOG_NEXT_LOG, 2),
    (LOG_PREV_LOG, 2),
    (LOG_HIST_PREV, 6),
    (LOG_HIST_NEXT, 6),
    (LOG_START, 2),
];

/// Writes log header `h` at `off` field by field, each logged as [`put`] logs it, as
/// trx0undo.cc `trx_undo_header_create` writes a reused page's new header with one
/// `mtr_t::write` per field.
fn put_log_header(
    g: &mut WritePageGuard<'_>,
    log: &mut WriteLog,
    off: usize,
    h: &[u8; LOG_HEADER_BYTES],
) {
    for (at, len) in LOG_HEADER_FIELDS {
        put(g, log, off + at, &h[at..at + len]);
    }
}

/// Where the first record of a log whose header is at `off` starts: after the header's
/// space ([`LOG_HEADER_SPACE_BYTES`]), TRX_UNDO_LOG_START.
fn log_start(off: usize) -> u16 {
    (off + LOG_HEADER_SPACE_BYTES) as u16
}

/// A log header for transaction `trx_id` at offset `off`, after the log at `prev_log`.
fn log_header(trx_id: u64, off: usize, prev_log: u16) -> [u8; LOG_HEADER_BYTES] {
    let mut h = [0u8; LOG_HEADER_BYTES];
    h[LOG_TRX_ID..LOG_TRX_ID + 8].copy_from_slice(&trx_id.to_le_bytes());
    h[LOG_PREV_LOG..LOG_PREV_LOG + 2].copy_from_slice(&prev_log.to_le_bytes());
    h[LOG_HIST_PREV..LOG_HIST_PREV + 6].copy_from_slice(&FilAddr::NULL.encode());
    h[LOG_HIST_NEXT..LOG_HIST_NEXT + 6].copy_from_slice(&FilAddr::NULL.encode());
    h[LOG_START..LOG_START + 2].copy_from_slice(&log_start(off).to_le_bytes());
    h
}

impl UndoSpace {
    /// Creates the undo relation with `n_rsegs` rollback segment header pages
    /// (trx_rseg_header_create, at database creation).
    ///
    /// Errors: [`Error::InvalidConfig`] for 0 or more than 128 rollback segments; storage
    /// errors.
    pub fn create(pool: Arc<BufferPool>, wal: Arc<Wal>, n_rsegs: u8) -> Result<UndoSpace> {
        if !(1..=crate::design::MAX_ROLLBACK_SEGMENTS).contains(&n_rsegs) {
            return Err(Error::InvalidConfig(format!(
                "rollback_segments must be 1..=128, got {n_rsegs}"
            )));
        }
        let rel = pool.store().create_relation()?;
        let slots = rseg::n_slots(pool.store().page_size().bytes());
        let mut rsegs = Vec::with_capacity(n_rsegs as usize);
        for id in 0..n_rsegs {
            let mut g = pool.new_page(rel)?;
            rseg::init(g.data_mut());
            let rec =
                RecordBuilder::new(rmgr::UNDO, info::RSEG_INIT).block(g.page_id(), true, &[id]);
            log_change(&wal, &rec, &mut [&mut g])?;
            rsegs.push(Rseg {
                page: g.page_id().block,
                refs: AtomicU32::new(0),
                state: Mutex::new(RsegState {
                    slots_used: vec![false; slots],
                    insert_cached: Vec::new(),
                    update_cached: Vec::new(),
                    history: VecDeque::new(),
                    history_size: 0,
                    max_trx_id: 0,
                    last_seq: 0,
                }),
            });
        }
        Ok(UndoSpace {
            rel,
            pool,
            wal,
            rsegs: rsegs.into_boxed_slice(),
            next_rseg: AtomicU32::new(0),
            next_trx_no: AtomicU64::new(0),
            counters: UndoCounters::default(),
        })
    }

    /// Opens the undo relation `rel` after redo and rebuilds the rollback segments' memory
    /// state from their pages (trx0rseg.cc `trx_rseg_array_init` → `trx_rseg_mem_restore`,
    /// trx0undo.cc `trx_undo_lists_init` → `trx_undo_mem_create_at_db_start`):
    /// - each header page's undo slots: a segment in state active belongs to a transaction
    ///   the crash interrupted and is handed back in [`RecoveredUndo::active`] (grouped by
    ///   the transaction id of the last log header on its first page, its records read
    ///   from the pages); a cached one goes back to its cache; an insert segment left to
    ///   be freed is freed now (MariaDB before 10.3: `trx_undo_insert_cleanup` at startup);
    /// - each history list, walked from its oldest log (FLST_LAST) through the logs'
    ///   history nodes, with the history size from the header; every log comes back as a
    ///   [`HistoryEntry`] with its records' roll pointers, all rollback segments' logs in
    ///   commit order (TRX_UNDO_TRX_NO), for purge to resume (trx0purge.cc
    ///   `purge_sys_t::create` / `trx_purge_rseg_get_next_history_log` read them lazily;
    ///   here they are read at open);
    /// - the largest transaction id of any log header and of TRX_RSEG_MAX_TRX_ID, and the
    ///   next commit number.
    ///
    /// Undo pages freed before a crash but not reused leak (the free page list is not
    /// persistent), as MariaDB's `trx_purge_free_segment` notes for a crash mid-free.
    ///
    /// Errors: [`Error::InvalidConfig`] for a rollback segment count the relation was not
    /// made with; [`Error::Corrupted`] for pages that do not hold what their headers say;
    /// storage errors.
    pub fn open(
        pool: Arc<BufferPool>,
        wal: Arc<Wal>,
        rel: FileId,
        n_rsegs: u8,
    ) -> Result<(UndoSpace, RecoveredUndo)> {
        if !(1..=crate::design::MAX_ROLLBACK_SEGMENTS).contains(&n_rsegs) {
            return Err(Error::InvalidConfig(format!(
                "rollback_segments must be 1..=128, got {n_rsegs}"
            )));
        }
        let slots = rseg::n_slots(pool.store().page_size().bytes());
        let mut space = UndoSpace {
            rel,
            pool,
            wal,
            rsegs: Box::new([]),
            next_rseg: AtomicU32::new(0),
            next_trx_no: AtomicU64::new(0),
            counters: UndoCounters::default(),
        };
        let mut out = RecoveredUndo::default();
        let mut history: Vec<(u64, HistoryEntry)> = Vec::new();
        let mut rsegs = Vec::with_capacity(n_rsegs as usize);
        let mut active: std::collections::BTreeMap<u64, TrxUndo> = Default::default();
        let mut to_free: Vec<(u8, u16, Vec<u32>)> = Vec::new();
        let mut pages_in_use = std::collections::HashSet::new();
        let mut max_trx_no = 0u64;
        for r in 0..n_rsegs {
            let hdr = space.pool.fetch_read(PageId::new(rel, r as u32))?;
            let h = hdr.data();
            if page_type(h) != rseg::PAGE_TYPE_RSEG {
                return Err(Error::InvalidConfig(format!(
                    "the undo log has no rollback segment {r} (block {r} has page type {}): open the database with the rollback_segments it was made with",
                    page_type(h)
                )));
            }
            let mut st = RsegState {
                slots_used: vec![false; slots],
                insert_cached: Vec::new(),
                update_cached: Vec::new(),
                history: VecDeque::new(),
                history_size: rseg::history_size(h),
                max_trx_id: get_u64(h, rseg::MAX_TRX_ID),
                last_seq: 0,
            };
            out.max_trx_id = out.max_trx_id.max(st.max_trx_id);
            // The history list, oldest first.
            let len = rseg::history_len(h) as usize;
            let mut seq_at = std::collections::HashMap::new();
            let mut next = FilAddr::read(h, rseg::HISTORY_LAST);
            while next != FilAddr::NULL {
                if st.history.len() >= len {
                    return Err(space.bad(format!(
                        "rollback segment {r}: history list longer than its length {len}"
                    )));
                }
                let at = next;
                let (log, trx_no, newer) = space.read_history_log(r, at)?;
                max_trx_no = max_trx_no.max(trx_no);
                out.max_trx_id = out.max_trx_id.max(log.0);
                st.last_seq += 1;
                let seq = st.last_seq;
                seq_at.insert((at.page, at.offset), seq);
                if !log.2.cached {
                    pages_in_use.extend(log.2.seg_pages.iter().copied());
                }
                st.history.push_front(HistLog { seq, ..log.2 });
                history.push((
                    trx_no,
                    HistoryEntry {
                        trx_id: log.0,
                        records: log.1,
                        log: LogRef {
                            rseg: r,
                            page: at.page,
                            offset: at.offset,
                            seq,
                        },
                    },
                ));
                next = newer;
            }
            if st.history.len() != len {
                return Err(space.bad(format!(
                    "rollback segment {r}: history list of {} logs, its length says {len}",
                    st.history.len()
                )));
            }
            // The undo slots.
            for slot in 0..slots as u16 {
                let p = rseg::slot(h, slot);
                if p == FIL_NULL {
                    continue;
                }
                let g = space.pool.fetch_read(PageId::new(rel, p))?;
                let d = g.data();
                if page_type(d) != PAGE_TYPE_UNDO || get_u16(d, SEG_SLOT) != slot {
                    return Err(space.bad(format!(
                        "rollback segment {r} slot {slot}: page {p} is not that slot's undo segment"
                    )));
                }
                let s = get_u16(d, SEG_STATE);
                let insert = d[SEG_KIND] == 1;
                let last_log = get_u16(d, SEG_LAST_LOG);
                let trx_id = get_u64(d, last_log as usize + LOG_TRX_ID);
                out.max_trx_id = out.max_trx_id.max(trx_id);
                drop(g);
                let pages = space.segment_pages(p)?;
                match s {
                    state::ACTIVE => {
                        let records = space.log_records(insert, r, &pages, last_log, None)?;
                        let t = active.entry(trx_id).or_insert_with(|| TrxUndo {
                            rseg: Some(r),
                            ..Default::default()
                        });
                        if t.rseg != Some(r) {
                            return Err(space.bad(format!(
                                "transaction {trx_id} has active undo in rollback segments {:?} and {r}",
                                t.rseg
                            )));
                        }
                        let seg = UndoSegment {
                            pages: pages.clone(),
                            records,
                            slot,
                            log_offset: last_log,
                        };
                        if insert {
                            t.insert = seg;
                        } else {
                            t.update = seg;
                        }
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages);
                    }
                    state::CACHED => {
                        let c = Cached {
                            page: p,
                            slot,
                            last_seq: if insert {
                                0
                            } else {
                                seq_at.get(&(p, last_log)).copied().unwrap_or(0)
                            },
                        };
                        if insert {
                            st.insert_cached.push(c);
                        } else {
                            st.update_cached.push(c);
                        }
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages);
                    }
                    state::TO_FREE => {
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages.iter().copied());
                        to_free.push((r, slot, pages));
                    }
                    // A to-purge segment gave its slot back in the record that made it so.
                    _ => {}
                }
            }
            drop(hdr);
            rsegs.push(Rseg {
                page: r as u32,
                refs: AtomicU32::new(0),
                state: Mutex::new(st),
            });
        }
        space.rsegs = rsegs.into_boxed_slice();
        space.next_trx_no.store(max_trx_no, Ordering::Relaxed);
        space
            .counters
            .pages_allocated
            .store(pages_in_use.len() as u64, Ordering::Relaxed);
        for (r, slot, pages) in to_free {
            let mut st = space.rsegs[r as usize].state.lock();
            space.free_to_free_segment(r, &mut st, slot, &pages)?;
            out.segments_freed += 1;
        }
        for (trx_id, mut t) in active {
            // Rollback order: update undo newest first, then insert undo newest first. A
            // row's insert record precedes every other record of the same transaction on
            // that row (a later re-insert finds the delete-marked record and writes update
            // undo), so this undoes each row's changes in reverse.
            t.all = t.insert.records.to_vec();
            t.all.extend(t.update.records.iter().copied());
            space.rsegs[t.rseg.expect("set") as usize]
                .refs
                .fetch_add(1, Ordering::AcqRel);
            out.active.push((trx_id, t));
        }
        history.sort_by_key(|(no, _)| *no);
        out.history = history.into_iter().map(|(_, e)| e).collect();
        Ok((space, out))
    }

    fn bad(&self, what: String) -> Error {
        Error::Corrupted {
            what: format!("undo log (relation {}): {what}", self.rel),
        }
    }

    /// The pages of the segment whose first page is `first`, first page first: the last
    /// page from the segment header (TRX_UNDO_PAGE_LIST's last), then each later page's
    /// previous page (its `aux` word) back to the first.
    fn segment_pages(&self, first: u32) -> Result<Vec<u32>> {
        let (n, mut p) = {
            let g = self.pool.fetch_read(PageId::new(self.rel, first))?;
            (
                get_u32(g.data(), SEG_N_PAGES),
                get_u32(g.data(), SEG_LAST_PAGE),
            )
        };
        if n == 0 || n as usize > self.pool.store().n_blocks(self.rel)? as usize {
            return Err(self.bad(format!("segment at page {first} has {n} pages")));
        }
        let mut pages = Vec::with_capacity(n as usize);
        for _ in 1..n {
            pages.push(p);
            let g = self.pool.fetch_read(PageId::new(self.rel, p))?;
            if page_type(g.data()) != PAGE_TYPE_UNDO {
                return Err(self.bad(format!(
                    "segment at page {first}: page {p} is not an undo page"
                )));
            }
            p = aux(g.data());
        }
        if p != first {
            return Err(self.bad(format!(
                "segment at page {first}: its page list leads to page {p}"
            )));
        }
        pages.push(first);
        pages.reverse();
        Ok(pages)
    }

    /// Roll pointers of the records of the log whose header is at `log_offset` on the
    /// segment's first page: from its TRX_UNDO_LOG_START to the next log header (`end`,
    /// for a log that is not the page's last) or, for the last log, to the page's free
    /// pointer and on through the segment's later pages.
    fn log_records(
        &self,
        insert: bool,
        r: u8,
        pages: &[u32],
        log_offset: u16,
        end: Option<u16>,
    ) -> Result<Vec<u64>> {
        let mut out = Vec::new();
        for (i, &p) in pages.iter().enumerate() {
            let g = self.pool.fetch_read(PageId::new(self.rel, p))?;
            let d = g.data();
            let lower = hole(d).0;
            let (from, to) = if i == 0 {
                let start = get_u16(d, log_offset as usize + LOG_START);
                (start, end.unwrap_or(lower))
            } else {
                (PAGE_HEADER_BYTES as u16, lower)
            };
            let (mut off, to) = (from as usize, to as usize);
            if off < PAGE_HEADER_BYTES || to > d.len() {
                return Err(self.bad(format!("page {p}: records at {off}..{to}")));
            }
            while off < to {
                let len = get_u16(d, off) as usize;
                if len < RECORD_FIXED_BYTES || off + len > to {
                    return Err(self.bad(format!(
                        "page {p}: undo record of {len} bytes at {off} (records end at {to})"
                    )));
                }
                out.push(roll_ptr(insert, r, p, off as u16));
                off += len;
            }
            if end.is_some() {
                break;
            }
        }
        Ok(out)
    }

    /// Reads the history log at `at` of rollback segment `r`: (trx id, roll pointers of its
    /// records, its in-memory entry without its number), its commit number and the next
    /// newer log's address.
    fn read_history_log(&self, r: u8, at: FilAddr) -> Result<(HistoryLogRead, u64, FilAddr)> {
        let (trx_id, trx_no, newer, next_log, seg_state, last_log, slot) = {
            let g = self.pool.fetch_read(PageId::new(self.rel, at.page))?;
            let d = g.data();
            let o = at.offset as usize;
            if page_type(d) != PAGE_TYPE_UNDO || o < SEG_FIRST_LOG || o + LOG_HEADER_BYTES > d.len()
            {
                return Err(self.bad(format!(
                    "rollback segment {r}: history log at page {} offset {o}",
                    at.page
                )));
            }
            (
                get_u64(d, o + LOG_TRX_ID),
                get_u64(d, o + LOG_TRX_NO),
                FilAddr::read(d, o + LOG_HIST_PREV),
                get_u16(d, o + LOG_NEXT_LOG),
                get_u16(d, SEG_STATE),
                get_u16(d, SEG_LAST_LOG),
                get_u16(d, SEG_SLOT),
            )
        };
        let has_next = next_log != 0;
        // A log followed by another on its page was cached at commit (a segment is reused
        // only from the cache); the page's last log was cached unless its segment waits
        // to be purged.
        let cached = has_next || (last_log == at.offset && seg_state != state::TO_PURGE);
        let seg_pages = if has_next {
            vec![at.page]
        } else {
            self.segment_pages(at.page)?
        };
        let records = self.log_records(
            false,
            r,
            &seg_pages,
            at.offset,
            has_next.then_some(next_log),
        )?;
        Ok((
            (
                trx_id,
                records,
                HistLog {
                    seq: 0,
                    at,
                    seg_pages,
                    slot,
                    cached,
                    has_next,
                    purged: false,
                },
            ),
            trx_no,
            newer,
        ))
    }

    /// The undo relation.
    pub fn rel(&self) -> FileId {
        self.rel
    }

    /// Number of rollback segments.
    pub fn n_rsegs(&self) -> usize {
        self.rsegs.len()
    }

    /// The header page of rollback segment `id`.
    pub fn rseg_header(&self, id: u8) -> PageId {
        PageId::new(self.rel, self.rsegs[id as usize].page)
    }

    /// What rollback segment `id` holds now.
    pub fn rseg_info(&self, id: u8) -> RsegInfo {
        let r = &self.rsegs[id as usize];
        let st = r.state.lock();
        RsegInfo {
            header_page: r.page,
            refs: r.refs.load(Ordering::Relaxed),
            slots_used: st.slots_used.iter().filter(|u| **u).count(),
            insert_cached: st.insert_cached.iter().map(|c| c.page).collect(),
            update_cached: st.update_cached.iter().map(|c| c.page).collect(),
            history_len: st.history.len(),
            history_size: st.history_size,
        }
    }

    /// One WAL record (rmgr UNDO, WRITE) for the writes noted in `logs`, block `i` being
    /// `guards[i]` (will_init when `logs[i].0`).
    fn log_writes(
        &self,
        guards: &mut [&mut WritePageGuard<'_>],
        logs: &[(bool, WriteLog)],
    ) -> Result<()> {
        let mut rec = RecordBuilder::new(rmgr::UNDO, info::WRITE);
        for (g, (init, data)) in guards.iter().zip(logs) {
            rec = rec.block(g.page_id(), *init, data.as_bytes());
        }
        log_change(&self.wal, &rec, guards)?;
        Ok(())
    }

    /// trx_assign_rseg_low: the next rollback segment in turn, referenced by the caller
    /// until [`UndoSpace::release`].
    fn assign_rseg(&self) -> u8 {
        let id = self.next_rseg.fetch_add(1, Ordering::Relaxed) as usize % self.rsegs.len();
        self.rsegs[id].refs.fetch_add(1, Ordering::AcqRel);
        id as u8
    }

    /// trx_undo_assign_low: gives `seg` a segment in rollback segment `r`, with a new log
    /// header for `trx_id`: a cached one (trx_undo_reuse_cached) or a new one
    /// (trx_undo_create → trx_undo_seg_create).
    fn assign_segment(
        &self,
        r: u8,
        seg: &mut UndoSegment,
        insert: bool,
        trx_id: u64,
    ) -> Result<()> {
        let rs = &self.rsegs[r as usize];
        let mut st = rs.state.lock();
        st.max_trx_id = st.max_trx_id.max(trx_id);
        let cached = if insert {
            st.insert_cached.pop()
        } else {
            st.update_cached.pop()
        };
        if let Some(c) = cached {
            let mut g = self.pool.fetch_write(PageId::new(self.rel, c.page))?;
            let (lower, upper) = hole(g.data());
            let prev_log = get_u16(g.data(), SEG_LAST_LOG);
            // An insert segment's old log is dead: its page starts over, keeping the
            // segment header (trx_undo_insert_header_reuse, before MariaDB 10.3).
            let (off, prev_log) = if insert {
                (SEG_FIRST_LOG, 0)
            } else {
                (lower as usize, prev_log)
            };
            if off < SEG_FIRST_LOG || off + LOG_HEADER_SPACE_BYTES > upper as usize {
                return Err(Error::Corrupted {
                    what: format!("{}: cached undo page free pointer {lower}", g.page_id()),
                });
            }
            let mut w = WriteLog::default();
            if prev_log != 0 {
                put(
                    &mut g,
                    &mut w,
                    prev_log as usize + LOG_NEXT_LOG,
                    &(off as u16).to_le_bytes(),
                );
                let at = FilAddr {
                    page: c.page,
                    offset: prev_log,
                };
                if let Some(l) = st.log_mut(c.last_seq).filter(|l| l.at == at) {
                    l.has_next = true;
                }
            }
            put_log_header(&mut g, &mut w, off, &log_header(trx_id, off, prev_log));
            put(&mut g, &mut w, SEG_STATE, &state::ACTIVE.to_le_bytes());
            put(&mut g, &mut w, SEG_LAST_LOG, &(off as u16).to_le_bytes());
            put(&mut g, &mut w, OFF_LOWER, &log_start(off).to_le_bytes());
            self.log_writes(&mut [&mut g], &[(false, w)])?;
            self.counters
                .segments_reused
                .fetch_add(1, Ordering::Relaxed);
            seg.pages = vec![c.page];
            seg.slot = c.slot;
            seg.log_offset = off as u16;
            return Ok(());
        }
        let Some(slot) = st.slots_used.iter().position(|u| !u) else {
            return Err(Error::TooManyConcurrentTransactions(format!(
                "rollback segment {r} has no free undo slot (all {} in use)",
                st.slots_used.len()
            )));
        };
        let slot = slot as u16;
        let mut h = self.pool.fetch_write(self.rseg_header(r))?;
        let mut g = self.pool.new_page(self.rel)?;
        let p = g.page_id().block;
        format_undo_page(g.data_mut(), true);
        let mut wg = WriteLog::default();
        let off = SEG_FIRST_LOG;
        let mut sh = [0u8; SEG_HEADER_BYTES];
        let at = |f: usize| f - SEG_STATE;
        sh[at(SEG_STATE)..at(SEG_STATE) + 2].copy_from_slice(&state::ACTIVE.to_le_bytes());
        sh[at(SEG_LAST_LOG)..at(SEG_LAST_LOG) + 2].copy_from_slice(&(off as u16).to_le_bytes());
        sh[at(SEG_KIND)] = if insert { 1 } else { 2 };
        sh[at(SEG_RSEG)] = r;
        sh[at(SEG_SLOT)..at(SEG_SLOT) + 2].copy_from_slice(&slot.to_le_bytes());
        sh[at(SEG_N_PAGES)..at(SEG_N_PAGES) + 4].copy_from_slice(&1u32.to_le_bytes());
        sh[at(SEG_LAST_PAGE)..at(SEG_LAST_PAGE) + 4].copy_from_slice(&p.to_le_bytes());
        put_forced(&mut g, &mut wg, SEG_STATE, &sh);
        put_forced(&mut g, &mut wg, off, &log_header(trx_id, off, 0));
        put_forced(&mut g, &mut wg, OFF_LOWER, &log_start(off).to_le_bytes());
        let mut wh = WriteLog::default();
        put(&mut h, &mut wh, rseg::slot_offset(slot), &p.to_le_bytes());
        self.log_writes(&mut [&mut h, &mut g], &[(false, wh), (true, wg)])?;
        st.slots_used[slot as usize] = true;
        self.counters
            .pages_allocated
            .fetch_add(1, Ordering::Relaxed);
        self.counters
            .segments_created
            .fetch_add(1, Ordering::Relaxed);
        seg.pages = vec![p];
        seg.slot = slot;
        seg.log_offset = off as u16;
        Ok(())
    }

    /// trx_undo_add_page: a new last page for `seg`, under its rollback segment's latch,
    /// noted in the segment header (TRX_UNDO_PAGE_LIST).
    fn add_page(&self, r: u8, seg: &mut UndoSegment) -> Result<u32> {
        let _st = self.rsegs[r as usize].state.lock();
        let mut h = self.pool.fetch_write(PageId::new(self.rel, seg.pages[0]))?;
        let mut g = self.pool.new_page(self.rel)?;
        let p = g.page_id().block;
        format_undo_page(g.data_mut(), false);
        let prev = *seg.pages.last().expect("a segment has its first page");
        let mut wg = WriteLog::default();
        put_forced(&mut g, &mut wg, OFF_AUX, &prev.to_le_bytes());
        let mut wh = WriteLog::default();
        put(
            &mut h,
            &mut wh,
            SEG_N_PAGES,
            &(seg.pages.len() as u32 + 1).to_le_bytes(),
        );
        put(&mut h, &mut wh, SEG_LAST_PAGE, &p.to_le_bytes());
        let rec = RecordBuilder::new(rmgr::UNDO, info::WRITE)
            .block(h.page_id(), false, wh.as_bytes())
            .block(g.page_id(), true, wg.as_bytes());
        log_change(&self.wal, &rec, &mut [&mut h, &mut g])?;
        self.counters
            .pages_allocated
            .fetch_add(1, Ordering::Relaxed);
        seg.pages.push(p);
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

    /// Appends an undo record to the transaction's insert or update segment (assigning it a
    /// rollback segment and the segment a log header first, when needed); returns its roll
    /// pointer, also noted in `trx.all`. Counts `records_written`.
    ///
    /// Errors: [`Error::TooLarge`] for a record larger than a page;
    /// [`Error::TooManyConcurrentTransactions`] when the rollback segment has no free slot;
    /// storage errors.
    pub fn append(
        &self,
        trx: &mut TrxUndo,
        insert: bool,
        trx_id: u64,
        rec: &UndoRecord,
    ) -> Result<u64> {
        let bytes = rec.encode();
        let page_bytes = self.pool.store().page_size().bytes();
        let max_bytes = page_bytes - SEG_FIRST_LOG - LOG_HEADER_SPACE_BYTES;
        if bytes.len() > max_bytes {
            return Err(Error::TooLarge {
                what: "undo record",
                bytes: bytes.len(),
                max_bytes,
            });
        }
        let r = match trx.rseg {
            Some(r) => r,
            None => *trx.rseg.insert(self.assign_rseg()),
        };
        let seg = if insert {
            &mut trx.insert
        } else {
            &mut trx.update
        };
        if seg.pages.is_empty() {
            self.assign_segment(r, seg, insert, trx_id)?;
        }
        let last = *seg.pages.last().expect("segment has a page");
        let (page, off) = match self.append_on(last, &bytes)? {
            Some(off) => (last, off),
            None => {
                let p = self.add_page(r, seg)?;
                let off = self.append_on(p, &bytes)?.ok_or_else(|| Error::Corrupted {
                    what: "undo record does not fit an empty page".into(),
                })?;
                (p, off)
            }
        };
        self.counters
            .records_written
            .fetch_add(1, Ordering::Relaxed);
        let rp = roll_ptr(insert, r, page, off);
        seg.records.push(rp);
        trx.all.push(rp);
        Ok(rp)
    }

    /// Reads the undo record at roll pointer `rp` (counted to the caller's cause).
    ///
    /// Errors: [`Error::Corrupted`] for a bad pointer or record; storage errors.
    pub fn read(&self, rp: u64) -> Result<UndoRecord> {
        self.read_with(rp, BufferPool::fetch_read)
    }

    /// [`UndoSpace::read`] for purge, which fixes the undo page without making it young
    /// in the LRU list ([`BufferPool::fetch_read_fixed`]; trx0purge.cc
    /// `purge_sys_t::get_page` → `buf_pool_t::page_fix`).
    ///
    /// Errors: as [`UndoSpace::read`].
    pub fn read_for_purge(&self, rp: u64) -> Result<UndoRecord> {
        self.read_with(rp, BufferPool::fetch_read_fixed)
    }

    fn read_with<'a>(
        &'a self,
        rp: u64,
        fetch: impl FnOnce(&'a BufferPool, PageId) -> Result<ReadPageGuard<'a>>,
    ) -> Result<UndoRecord> {
        let (_, _, page, off) = split_roll_ptr(rp);
        if (page as usize) < self.rsegs.len() {
            return Err(Error::Corrupted {
                what: format!("roll pointer {rp:#x} points into a rollback segment header"),
            });
        }
        let g = fetch(&self.pool, PageId::new(self.rel, page))?;
        record_on_page(g.data(), g.page_id(), off)
    }

    /// trx_undo_set_state_at_finish: whether the segment is kept for reuse (one page under
    /// 3/4 full, TRX_UNDO_PAGE_REUSE_LIMIT), read from its first page.
    fn reusable(&self, seg: &UndoSegment, first: &WritePageGuard<'_>) -> bool {
        let page_bytes = self.pool.store().page_size().bytes();
        let used = hole(first.data()).0 as usize;
        seg.pages.len() == 1 && used * REUSE_LIMIT_DEN < page_bytes * REUSE_LIMIT_NUM
    }

    /// At commit or after rollback, both of the transaction's segments are done in one
    /// mini-transaction (one WAL record), the commit of the undo log (trx0trx.cc
    /// `trx_write_serialisation_history`: `trx_undo_set_state_at_finish` for the insert undo
    /// and `trx_purge_add_undo_to_history` for the update undo, in one mtr):
    /// - the insert segment's state: a one-page segment under 3/4 full is cached in its
    ///   rollback segment, any other is to be freed (TRX_UNDO_TO_FREE);
    /// - the update segment's log joins its rollback segment's history list as the newest:
    ///   the header page's list base node and TRX_RSEG_MAX_TRX_ID, the log header's commit
    ///   number and history node, the previous newest log's node, the segment state; a
    ///   segment not kept for reuse gives its slot back and its pages count in the history
    ///   size.
    ///
    /// Then an insert segment to be freed is freed and its slot cleared (a second record,
    /// trx_undo_insert_cleanup → trx_undo_seg_free, as MariaDB did before 10.3 kept one undo
    /// log per transaction; recovery finishes a to-free segment a crash left in its slot).
    /// Since the state change is one record, a segment a crash leaves active on the page
    /// belongs to a transaction whose commit was never logged (see `ClusteredAm::recover`).
    /// Returns the update log and the roll pointers of its records, or None when the
    /// transaction wrote no update undo.
    ///
    /// Errors: storage errors.
    pub fn finish(&self, trx: &mut TrxUndo) -> Result<Option<(LogRef, Vec<u64>)>> {
        self.finish_segments(trx, true, true)
    }

    /// [`UndoSpace::finish`] for the insert segment alone.
    ///
    /// Errors: storage errors.
    pub fn finish_insert(&self, trx: &mut TrxUndo) -> Result<()> {
        self.finish_segments(trx, true, false).map(|_| ())
    }

    /// [`UndoSpace::finish`] for the update segment alone.
    ///
    /// Errors: storage errors.
    pub fn finish_update(&self, trx: &mut TrxUndo) -> Result<Option<(LogRef, Vec<u64>)>> {
        self.finish_segments(trx, false, true)
    }

    fn finish_segments(
        &self,
        trx: &mut TrxUndo,
        ins: bool,
        upd: bool,
    ) -> Result<Option<(LogRef, Vec<u64>)>> {
        let Some(r) = trx.rseg else {
            return Ok(None);
        };
        let iseg = if ins {
            std::mem::take(&mut trx.insert)
        } else {
            UndoSegment::default()
        };
        let useg = if upd {
            std::mem::take(&mut trx.update)
        } else {
            UndoSegment::default()
        };
        let (ifirst, ufirst) = (iseg.pages.first().copied(), useg.pages.first().copied());
        if ifirst.is_none() && ufirst.is_none() {
            return Ok(None);
        }
        let rs = &self.rsegs[r as usize];
        let mut st = rs.state.lock();
        // Latch order: header page, insert segment's first page, update segment's first
        // page, the previous newest log's page.
        let mut h = match ufirst {
            Some(_) => Some(self.pool.fetch_write(self.rseg_header(r))?),
            None => None,
        };
        let mut gi = match ifirst {
            Some(p) => Some(self.pool.fetch_write_fixed(PageId::new(self.rel, p))?),
            None => None,
        };
        let mut icache = false;
        let mut wi = WriteLog::default();
        if let Some(g) = gi.as_mut() {
            icache = self.reusable(&iseg, g);
            let s = if icache {
                state::CACHED
            } else {
                state::TO_FREE
            };
            put(g, &mut wi, SEG_STATE, &s.to_le_bytes());
        }
        let mut gu = None;
        let mut n = None;
        let (mut wh, mut wu, mut wn) = (
            WriteLog::default(),
            WriteLog::default(),
            WriteLog::default(),
        );
        let mut ucache = false;
        let mut at = FilAddr::NULL;
        if let (Some(first), Some(h)) = (ufirst, h.as_mut()) {
            let trx_no = self.next_trx_no.fetch_add(1, Ordering::Relaxed) + 1;
            at = FilAddr {
                page: first,
                offset: useg.log_offset,
            };
            let mut g = self.pool.fetch_write_fixed(PageId::new(self.rel, first))?;
            ucache = self.reusable(&useg, &g);
            let old_first = st.history.front().map(|l| l.at);
            // flst_add_first(TRX_RSEG_HISTORY, log's TRX_UNDO_HISTORY_NODE).
            let len = st.history.len() as u32 + 1;
            put(h, &mut wh, rseg::HISTORY_LEN, &len.to_le_bytes());
            put(h, &mut wh, rseg::HISTORY_FIRST, &at.encode());
            if old_first.is_none() {
                put(h, &mut wh, rseg::HISTORY_LAST, &at.encode());
            }
            let off = useg.log_offset as usize;
            put(
                &mut g,
                &mut wu,
                off + LOG_HIST_PREV,
                &FilAddr::NULL.encode(),
            );
            put(
                &mut g,
                &mut wu,
                off + LOG_HIST_NEXT,
                &old_first.unwrap_or(FilAddr::NULL).encode(),
            );
            if !ucache {
                // The segment will not be reused: free its slot; its pages join the
                // history size.
                put(
                    h,
                    &mut wh,
                    rseg::slot_offset(useg.slot),
                    &FIL_NULL.to_le_bytes(),
                );
                st.history_size += useg.pages.len() as u32;
                put(
                    h,
                    &mut wh,
                    rseg::HISTORY_SIZE,
                    &st.history_size.to_le_bytes(),
                );
            }
            // TRX_RSEG_MAX_TRX_ID at every history change, so that recovery finds the
            // largest transaction id even after the logs are gone.
            put(h, &mut wh, rseg::MAX_TRX_ID, &st.max_trx_id.to_le_bytes());
            let s = if ucache {
                state::CACHED
            } else {
                state::TO_PURGE
            };
            put(&mut g, &mut wu, SEG_STATE, &s.to_le_bytes());
            put(&mut g, &mut wu, off + LOG_TRX_NO, &trx_no.to_le_bytes());
            match old_first {
                Some(of) if of.page == first => {
                    put(
                        &mut g,
                        &mut wu,
                        of.offset as usize + LOG_HIST_PREV,
                        &at.encode(),
                    );
                }
                Some(of) => {
                    let mut ng = self
                        .pool
                        .fetch_write_fixed(PageId::new(self.rel, of.page))?;
                    put(
                        &mut ng,
                        &mut wn,
                        of.offset as usize + LOG_HIST_PREV,
                        &at.encode(),
                    );
                    n = Some(ng);
                }
                None => {}
            }
            gu = Some(g);
        }
        {
            let mut guards: Vec<&mut WritePageGuard<'_>> = Vec::new();
            let mut logs = Vec::new();
            if let Some(h) = h.as_mut() {
                guards.push(h);
                logs.push((false, std::mem::take(&mut wh)));
            }
            if let Some(g) = gi.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wi)));
            }
            if let Some(g) = gu.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wu)));
            }
            if let Some(g) = n.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wn)));
            }
            self.log_writes(&mut guards, &logs)?;
        }
        drop((n, gu, gi, h));
        if let Some(first) = ifirst {
            if icache {
                st.insert_cached.push(Cached {
                    page: first,
                    slot: iseg.slot,
                    last_seq: 0,
                });
            } else {
                self.free_to_free_segment(r, &mut st, iseg.slot, &iseg.pages)?;
            }
        }
        let Some(first) = ufirst else {
            return Ok(None);
        };
        st.last_seq += 1;
        let seq = st.last_seq;
        if ucache {
            st.update_cached.push(Cached {
                page: first,
                slot: useg.slot,
                last_seq: seq,
            });
        } else {
            st.slots_used[useg.slot as usize] = false;
        }
        st.history.push_front(HistLog {
            seq,
            at,
            seg_pages: useg.pages,
            slot: useg.slot,
            cached: ucache,
            has_next: false,
            purged: false,
        });
        Ok(Some((
            LogRef {
                rseg: r,
                page: first,
                offset: useg.log_offset,
                seq,
            },
            useg.records,
        )))
    }

    /// Frees an insert segment in state to-free: clears its slot (with TRX_RSEG_MAX_TRX_ID,
    /// so that the transaction's id outlives its log) and frees its pages
    /// (trx_undo_seg_free). Under the rollback segment's mutex.
    fn free_to_free_segment(
        &self,
        r: u8,
        st: &mut RsegState,
        slot: u16,
        pages: &[u32],
    ) -> Result<()> {
        let mut h = self.pool.fetch_write(self.rseg_header(r))?;
        let mut w = WriteLog::default();
        put(
            &mut h,
            &mut w,
            rseg::slot_offset(slot),
            &FIL_NULL.to_le_bytes(),
        );
        put(
            &mut h,
            &mut w,
            rseg::MAX_TRX_ID,
            &st.max_trx_id.to_le_bytes(),
        );
        self.log_writes(&mut [&mut h], &[(false, w)])?;
        drop(h);
        st.slots_used[slot as usize] = false;
        self.free_segment_pages(pages)
    }

    /// The transaction ended: its reference on its rollback segment is dropped
    /// (trx_t::commit_in_memory → `rseg->release()`).
    pub fn release(&self, trx: &mut TrxUndo) {
        if let Some(r) = trx.rseg.take() {
            self.rsegs[r as usize].refs.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Purge has processed every record of `log`: history truncation may remove it.
    pub fn purged(&self, log: LogRef) {
        let at = FilAddr {
            page: log.page,
            offset: log.offset,
        };
        let mut st = self.rsegs[log.rseg as usize].state.lock();
        if let Some(l) = st.log_mut(log.seq).filter(|l| l.at == at) {
            l.purged = true;
        }
    }

    /// History truncation after a purge batch (trx0purge.cc `trx_purge_truncate_history` →
    /// `purge_sys_t::iterator::free_history` → `free_history_rseg` for every rollback
    /// segment): latches each rollback segment header, reads the oldest log's header page,
    /// and while that log is purged, the rollback segment is held by no transaction and its
    /// newest transaction is older than `horizon` (`purge_sys.sees(rseg.needs_purge)`),
    /// removes it from the list (flst_remove: the header and the newer neighbour's node) and,
    /// when it is the last log on its segment's first page, frees the segment (a cached one
    /// leaves the cache and frees its slot; a to-purge one leaves the history size). Returns
    /// the logs removed.
    ///
    /// Errors: storage errors.
    pub fn truncate_history(&self, horizon: Xid) -> Result<u64> {
        self.counters.truncations.fetch_add(1, Ordering::Relaxed);
        let mut removed = 0;
        for (r, rs) in self.rsegs.iter().enumerate() {
            let mut st = rs.state.lock();
            let mut h = self.pool.fetch_write(self.rseg_header(r as u8))?;
            while let Some(oldest) = st.history.back() {
                let at = oldest.at;
                let mut g = self
                    .pool
                    .fetch_write_fixed(PageId::new(self.rel, at.page))?;
                if !oldest.purged
                    || rs.refs.load(Ordering::Acquire) > 0
                    || st.max_trx_id >= horizon as u64
                {
                    break;
                }
                let log = st.history.pop_back().expect("oldest exists");
                let newer = st.history.back().map(|l| l.at);
                let (mut wh, mut wg) = (WriteLog::default(), WriteLog::default());
                put(
                    &mut h,
                    &mut wh,
                    rseg::HISTORY_LEN,
                    &(st.history.len() as u32).to_le_bytes(),
                );
                put(
                    &mut h,
                    &mut wh,
                    rseg::HISTORY_LAST,
                    &newer.unwrap_or(FilAddr::NULL).encode(),
                );
                if newer.is_none() {
                    put(
                        &mut h,
                        &mut wh,
                        rseg::HISTORY_FIRST,
                        &FilAddr::NULL.encode(),
                    );
                }
                let mut to_free = Vec::new();
                if !log.has_next {
                    if log.cached {
                        st.update_cached.retain(|c| c.page != at.page);
                        put(
                            &mut h,
                            &mut wh,
                            rseg::slot_offset(log.slot),
                            &FIL_NULL.to_le_bytes(),
                        );
                        put(
                            &mut h,
                            &mut wh,
                            rseg::MAX_TRX_ID,
                            &st.max_trx_id.to_le_bytes(),
                        );
                        st.slots_used[log.slot as usize] = false;
                    } else {
                        st.history_size -= log.seg_pages.len() as u32;
                        put(
                            &mut h,
                            &mut wh,
                            rseg::HISTORY_SIZE,
                            &st.history_size.to_le_bytes(),
                        );
                    }
                    to_free = log.seg_pages;
                }
                match newer {
                    Some(nw) if nw.page == at.page => {
                        put(
                            &mut g,
                            &mut wg,
                            nw.offset as usize + LOG_HIST_NEXT,
                            &FilAddr::NULL.encode(),
                        );
                        self.log_writes(&mut [&mut h, &mut g], &[(false, wh), (false, wg)])?;
                    }
                    Some(nw) => {
                        let mut n = self
                            .pool
                            .fetch_write_fixed(PageId::new(self.rel, nw.page))?;
                        let mut wn = WriteLog::default();
                        put(
                            &mut n,
                            &mut wn,
                            nw.offset as usize + LOG_HIST_NEXT,
                            &FilAddr::NULL.encode(),
                        );
                        self.log_writes(&mut [&mut h, &mut n], &[(false, wh), (false, wn)])?;
                    }
                    None => self.log_writes(&mut [&mut h], &[(false, wh)])?,
                }
                drop(g);
                removed += 1;
                if !to_free.is_empty() {
                    self.free_segment_pages(&to_free)?;
                }
            }
        }
        self.counters
            .logs_truncated
            .fetch_add(removed, Ordering::Relaxed);
        Ok(removed)
    }

    /// Frees a segment's pages (fseg_free_step).
    fn free_segment_pages(&self, pages: &[u32]) -> Result<()> {
        for &p in pages {
            self.free_page(p)?;
        }
        self.counters.segments_freed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Frees undo page `p` (fsp0fsp.cc `fseg_free_page` → buf0buf.cc `buf_page_free`): the
    /// page stays in its frame, clean, until eviction reaches it or the block is allocated
    /// again ([`BufferPool::free_resident`]), and goes back to the relation's free list.
    fn free_page(&self, p: u32) -> Result<()> {
        let id = PageId::new(self.rel, p);
        let mut tries = 0;
        while !self.pool.free_resident(id) {
            tries += 1;
            if tries > 10_000 {
                return Ok(()); // still pinned by a reader: leave the page (it leaks, no data is lost)
            }
            std::thread::yield_now();
        }
        self.pool.store().free_page(id)?;
        self.counters.pages_freed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Undo pages in use (allocated and not freed; rollback segment headers not included).
    pub fn pages_in_use(&self) -> u64 {
        self.counters.pages_allocated.load(Ordering::Relaxed)
            - self.counters.pages_freed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Storage, StorageConfig};
    use proptest::prelude::*;

    fn rec(delta_bytes: usize) -> UndoRecord {
        UndoRecord {
            kind: UndoType::UpdateExisting,
            table: 1,
            old_trx_id: 7,
            old_roll_ptr: 0,
            pk: vec![1, 2, 3],
            delta: vec![9; delta_bytes],
        }
    }

    fn space(frames: usize, n_rsegs: u8) -> (Storage, UndoSpace) {
        let s = Storage::open(StorageConfig::without_background(frames)).unwrap();
        let u = UndoSpace::create(s.pool().clone(), s.wal().clone(), n_rsegs).unwrap();
        (s, u)
    }

    /// A transaction `trx_id` that writes `n` update undo records (and `ins` insert undo
    /// records) and commits; returns its first update roll pointer and its history log.
    fn commit(u: &UndoSpace, trx_id: u64, n: usize, ins: usize, bytes: usize) -> (u64, LogRef) {
        let mut t = TrxUndo::default();
        let mut first = 0;
        for i in 0..n {
            let rp = u.append(&mut t, false, trx_id, &rec(bytes)).unwrap();
            if i == 0 {
                first = rp;
            }
        }
        for _ in 0..ins {
            u.append(&mut t, true, trx_id, &rec(bytes)).unwrap();
        }
        u.finish_insert(&mut t).unwrap();
        let (log, records) = u.finish_update(&mut t).unwrap().unwrap();
        assert_eq!(records.len(), n);
        u.release(&mut t);
        (first, log)
    }

    #[test]
    fn put_logs_only_the_changed_bytes_and_nothing_for_an_equal_value() {
        let (s, u) = space(64, 1);
        let mut g = s.pool().fetch_write(u.rseg_header(0)).unwrap();
        let before = g.data().to_vec();
        let at = rseg::MAX_TRX_ID;
        let old = get_u64(g.data(), at);
        let mut w = WriteLog::default();
        // Only the low byte differs: one byte logged (mtr_t::write).
        put(&mut g, &mut w, at, &(old ^ 0x5A).to_le_bytes());
        let mut expect = WriteLog::default();
        expect.push(at, &[(old as u8) ^ 0x5A]);
        assert_eq!(w, expect);
        // Writing the value the page holds logs nothing (MAYBE_NOP).
        put(&mut g, &mut w, at, &(old ^ 0x5A).to_le_bytes());
        assert_eq!(w, expect);
        // Two bytes apart in the middle of a field: the run between them is logged.
        let mut v = (old ^ 0x5A).to_le_bytes();
        v[2] ^= 1;
        v[4] ^= 1;
        put(&mut g, &mut w, at, &v);
        expect.push(at + 2, &v[2..5]);
        assert_eq!(w, expect);
        assert_eq!(get_u64(g.data(), at), u64::from_le_bytes(v));
        // put_forced logs every byte.
        let mut f = WriteLog::default();
        put_forced(&mut g, &mut f, at, &v);
        let mut all = WriteLog::default();
        all.push(at, &v);
        assert_eq!(f, all);
        // Redo of the trimmed writes on the page as it was gives the page as it is.
        let after = g.data().to_vec();
        drop(g);
        let wr = crate::wal::WalRecord {
            lsn: 0x100,
            end_lsn: 0x140,
            prev_lsn: 0,
            xid: 0,
            rmgr: rmgr::UNDO,
            info: info::WRITE,
            blocks: vec![crate::wal::BlockRef {
                page: u.rseg_header(0),
                will_init: false,
                image: None,
                data: w.into_bytes(),
            }],
            main_data: vec![],
        };
        let mut redone = before.clone();
        super::super::undo_wal::redo_block(&wr, 0, &mut redone).unwrap();
        crate::page::set_page_lsn(&mut redone, crate::page::page_lsn(&after));
        assert_eq!(redone, after);
    }

    #[test]
    fn record_roundtrip_and_roll_pointer() {
        let r = UndoRecord {
            kind: UndoType::UpdateExisting,
            table: 3,
            old_trx_id: 77,
            old_roll_ptr: roll_ptr(true, 5, 9, 100),
            pk: vec![1, 2, 3],
            delta: vec![9; 10],
        };
        let b = r.encode();
        assert_eq!(b.len(), RECORD_FIXED_BYTES + 3 + 10);
        assert_eq!(UndoRecord::decode(&b).unwrap(), r);
        assert_eq!(split_roll_ptr(roll_ptr(true, 5, 9, 100)), (true, 5, 9, 100));
        assert_eq!(
            split_roll_ptr(roll_ptr(false, 127, u32::MAX, 7)),
            (false, 127, u32::MAX, 7)
        );
        // InnoDB's bit layout: insert flag at 55, rollback segment id at 48..55.
        assert_eq!(roll_ptr(true, 1, 0, 0), (1 << 55) | (1 << 48));
        assert!(roll_ptr(true, 127, u32::MAX, u16::MAX) < 1 << 56, "7 bytes");
    }

    #[test]
    fn consecutive_transactions_take_rollback_segments_in_turn_and_write_their_headers() {
        let (s, u) = space(256, 4);
        let pool = s.pool();
        for r in 0..4 {
            assert_eq!(
                u.rseg_header(r).block,
                r as u32,
                "headers open the relation"
            );
        }
        pool.flush_all().unwrap();
        let before = pool.page_type_io(rseg::PAGE_TYPE_RSEG);
        assert_eq!(
            before.pages_written, 4,
            "each header written once at creation"
        );
        let mut seen = Vec::new();
        for i in 0..8u64 {
            let (rp, log) = commit(&u, 100 + i, 1, 0, 10);
            let (_, r, page, _) = split_roll_ptr(rp);
            assert_eq!(log.rseg, r);
            assert!(page >= 4, "undo records are never on header pages");
            seen.push(r);
        }
        assert_eq!(seen, [0, 1, 2, 3, 0, 1, 2, 3]);
        for r in 0..4 {
            let info = u.rseg_info(r);
            assert_eq!(info.history_len, 2, "{r}: {info:?}");
            assert_eq!(info.refs, 0);
            let g = pool.fetch_read(u.rseg_header(r)).unwrap();
            assert_eq!(
                rseg::history_len(g.data()),
                2,
                "the header page says so too"
            );
        }
        pool.flush_all().unwrap();
        let after = pool.page_type_io(rseg::PAGE_TYPE_RSEG);
        assert_eq!(
            after.pages_written - before.pages_written,
            4,
            "every header changed"
        );
        // Truncation latches every header: with them out of the pool, it reads each once.
        for r in 0..4 {
            assert!(pool.discard(u.rseg_header(r)));
        }
        u.truncate_history(Xid::MAX).unwrap();
        assert_eq!(pool.page_type_io(rseg::PAGE_TYPE_RSEG).pages_read, 4);
        assert_eq!(
            u.counters.logs_truncated.load(Ordering::Relaxed),
            0,
            "none purged"
        );
    }

    #[test]
    fn cached_segments_belong_to_their_rollback_segment() {
        let (_s, u) = space(256, 2);
        let (rp0, _) = commit(&u, 10, 1, 1, 10);
        let (rp1, _) = commit(&u, 11, 1, 1, 10);
        let p0 = split_roll_ptr(rp0).2;
        let p1 = split_roll_ptr(rp1).2;
        assert_ne!(p0, p1, "rseg 1 does not take rseg 0's cached segment");
        assert_eq!(u.rseg_info(0).update_cached, vec![p0]);
        assert_eq!(u.rseg_info(1).update_cached, vec![p1]);
        assert_eq!(u.rseg_info(0).insert_cached.len(), 1);
        assert_eq!(u.rseg_info(1).insert_cached.len(), 1);
        assert_eq!(u.counters.segments_created.load(Ordering::Relaxed), 4);
        assert_eq!(u.counters.segments_reused.load(Ordering::Relaxed), 0);
        // The next round reuses each rollback segment's own segments: the update log goes
        // on after the previous one, on the same page.
        let (rp2, _) = commit(&u, 12, 1, 1, 10);
        let (rp3, _) = commit(&u, 13, 1, 1, 10);
        assert_eq!(split_roll_ptr(rp2).2, p0);
        assert_eq!(split_roll_ptr(rp3).2, p1);
        assert!(split_roll_ptr(rp2).3 > split_roll_ptr(rp0).3);
        assert_eq!(u.counters.segments_reused.load(Ordering::Relaxed), 4);
        assert_eq!(u.counters.segments_created.load(Ordering::Relaxed), 4);
        assert_eq!(
            u.rseg_info(0).slots_used,
            2,
            "one insert, one update segment"
        );
    }

    /// Each log takes MariaDB's 186 bytes of header space (trx0undo.cc
    /// `trx_undo_header_create`: TRX_UNDO_LOG_XA_HDR_SIZE), so an update segment stops
    /// being cached after as many logs as MariaDB's would hold.
    #[test]
    fn each_log_takes_the_xa_header_space_and_the_page_fills_after_as_many_logs() {
        let (s, u) = space(256, 1);
        let rec_bytes = rec(100).encode().len();
        let (rp0, _) = commit(&u, 10, 1, 0, 100);
        let (rp1, _) = commit(&u, 11, 1, 0, 100);
        let (_, _, p0, off0) = split_roll_ptr(rp0);
        let (_, _, p1, off1) = split_roll_ptr(rp1);
        assert_eq!(off0 as usize, SEG_FIRST_LOG + LOG_HEADER_SPACE_BYTES);
        assert_eq!(p1, p0, "the cached segment is reused");
        assert_eq!(
            off1 as usize,
            off0 as usize + rec_bytes + LOG_HEADER_SPACE_BYTES
        );
        // Logs on the first page until a commit leaves it at least 3/4 full: the first
        // `n` with SEG_FIRST_LOG + n × (186 + record) ≥ 3/4 of the page.
        let page = s.pool().store().page_size().bytes();
        let per_log = LOG_HEADER_SPACE_BYTES + rec_bytes;
        let expect = (page * 3 / 4 - SEG_FIRST_LOG).div_ceil(per_log);
        let mut logs_on_p0 = 2;
        for trx in 12.. {
            let (rp, _) = commit(&u, trx, 1, 0, 100);
            if split_roll_ptr(rp).2 != p0 {
                break;
            }
            logs_on_p0 += 1;
        }
        assert_eq!(logs_on_p0, expect);
    }

    #[test]
    fn truncation_frees_purged_logs_per_rollback_segment() {
        let (s, u) = space(256, 2);
        let (rp0, l0) = commit(&u, 10, 1, 0, 10);
        let (_, l1) = commit(&u, 11, 1, 0, 10);
        let (_, l2) = commit(&u, 12, 1, 0, 10);
        let (_, l3) = commit(&u, 13, 1, 0, 10);
        assert_eq!((l0.rseg, l1.rseg, l2.rseg, l3.rseg), (0, 1, 0, 1));
        assert_eq!(l2.page, l0.page, "the cached segment was reused");
        // Nothing purged: nothing truncated. Purged but not older than the horizon: neither.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 0);
        for l in [l0, l1] {
            u.purged(l);
        }
        assert_eq!(
            u.truncate_history(11).unwrap(),
            0,
            "rseg 0 and 1 hold newer trx"
        );
        // l0 and l1 go; their pages hold l2 and l3, so nothing is freed.
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 2);
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 0);
        assert_eq!(u.rseg_info(0).history_len, 1);
        assert_eq!(u.rseg_info(1).history_len, 1);
        u.purged(l2);
        u.purged(l3);
        // A running transaction holds rseg 0 (the 5th in turn): only rseg 1 is truncated.
        let mut t = TrxUndo::default();
        u.append(&mut t, true, 14, &rec(10)).unwrap();
        assert_eq!(t.rseg, Some(0));
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        let r1 = u.rseg_info(1);
        assert_eq!(
            (r1.history_len, r1.update_cached.len(), r1.slots_used),
            (0, 0, 0),
            "rseg 1's cached segment was freed with its last log"
        );
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 1);
        assert_eq!(u.rseg_info(0).history_len, 1);
        u.finish_insert(&mut t).unwrap();
        assert!(u.finish_update(&mut t).unwrap().is_none());
        u.release(&mut t);
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        let r0 = u.rseg_info(0);
        assert_eq!((r0.history_len, r0.update_cached.len()), (0, 0));
        assert_eq!(
            r0.insert_cached.len(),
            1,
            "insert undo is not in the history"
        );
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 2);
        // The freed page stays in the pool until eviction reaches it (InnoDB's FREED
        // state), and its block is the relation's next allocation.
        let freed = PageId::new(u.rel(), split_roll_ptr(rp0).2);
        assert!(s.pool().is_resident(freed));
        let blocks = [
            s.store().allocate_page(u.rel()).unwrap(),
            s.store().allocate_page(u.rel()).unwrap(),
        ];
        assert!(blocks.contains(&freed), "{blocks:?} {freed}");
        for r in 0..2 {
            let g = s.pool().fetch_read(u.rseg_header(r)).unwrap();
            assert_eq!(rseg::history_len(g.data()), 0);
            assert_eq!(FilAddr::read(g.data(), rseg::HISTORY_FIRST), FilAddr::NULL);
            assert_eq!(FilAddr::read(g.data(), rseg::HISTORY_LAST), FilAddr::NULL);
        }
    }

    #[test]
    fn a_segment_too_big_to_cache_waits_in_the_history_size_and_is_freed_whole() {
        let (s, u) = space(256, 1);
        let page_bytes = s.store().page_size().bytes();
        // Three records of 40 % of a page: the segment needs two pages.
        let (_, log) = commit(&u, 10, 3, 0, page_bytes * 2 / 5);
        let info = u.rseg_info(0);
        assert_eq!(info.history_size, 2);
        assert_eq!(
            info.slots_used, 0,
            "a to-purge segment gives its slot back at commit"
        );
        assert!(info.update_cached.is_empty());
        {
            let g = s.pool().fetch_read(u.rseg_header(0)).unwrap();
            assert_eq!(rseg::history_size(g.data()), 2);
            assert_eq!(rseg::slot(g.data(), 0), FIL_NULL);
        }
        u.purged(log);
        assert_eq!(u.truncate_history(Xid::MAX).unwrap(), 1);
        assert_eq!(u.counters.pages_freed.load(Ordering::Relaxed), 2);
        assert_eq!(u.rseg_info(0).history_size, 0);
        assert_eq!(u.pages_in_use(), 0);
    }

    #[test]
    fn record_on_page_checks_the_free_pointer() {
        let id = PageId::new(9, 3);
        let mut p = vec![0u8; 8192];
        format_undo_page(&mut p, false);
        let r = rec(10).encode();
        p[PAGE_HEADER_BYTES..PAGE_HEADER_BYTES + r.len()].copy_from_slice(&r);
        set_hole(&mut p, (PAGE_HEADER_BYTES + r.len()) as u16, 8192);
        assert_eq!(record_on_page(&p, id, 32).unwrap(), rec(10));
        assert!(record_on_page(&p, id, 31).is_err());
        assert!(record_on_page(&p, id, (32 + r.len()) as u16).is_err());
        // A free pointer past the page end is corrupted, not a slice out of bounds.
        set_hole(&mut p, 9000, 9000);
        let e = record_on_page(&p, id, 32).unwrap_err();
        assert!(e.to_string().contains("free pointer 9000"), "{e}");
    }

    proptest! {
        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = UndoRecord::decode(&b);
        }
    }
}
