//! The undo page and the undo segment and undo log header layouts (MariaDB 10.11
//! storage/innobase/include/trx0undo.h byte offsets: TRX_UNDO_PAGE_HDR, TRX_UNDO_SEG_HDR,
//! TRX_UNDO_LOG_HDR; trx/trx0undo.cc `trx_undo_page_init`, `trx_undo_header_create`).
//! The records on the pages: `undo_rec`; the WAL records that change the pages: `undo_wal`.
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
//! All integers little-endian.

use super::rseg::FilAddr;
use crate::mvcc::TrxId;
use crate::page::{init_page, set_hole, PAGE_HEADER_BYTES};

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

pub(super) const SEG_STATE: usize = PAGE_HEADER_BYTES;
pub(super) const SEG_LAST_LOG: usize = PAGE_HEADER_BYTES + 2;
pub(super) const SEG_KIND: usize = PAGE_HEADER_BYTES + 4;
pub(super) const SEG_RSEG: usize = PAGE_HEADER_BYTES + 5;
pub(super) const SEG_SLOT: usize = PAGE_HEADER_BYTES + 6;
pub(super) const SEG_N_PAGES: usize = PAGE_HEADER_BYTES + 8;
pub(super) const SEG_LAST_PAGE: usize = PAGE_HEADER_BYTES + 12;
/// Where the first log header of a segment's first page starts.
pub(super) const SEG_FIRST_LOG: usize = PAGE_HEADER_BYTES + SEG_HEADER_BYTES;

pub(super) const LOG_TRX_ID: usize = 0;
pub(super) const LOG_TRX_NO: usize = 8;
pub(super) const LOG_NEXT_LOG: usize = 16;
pub(super) const LOG_PREV_LOG: usize = 18;
pub(super) const LOG_HIST_PREV: usize = 20;
pub(super) const LOG_HIST_NEXT: usize = 26;
pub(super) const LOG_START: usize = 32;

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
pub(super) const LOG_HEADER_FIELDS: [(usize, usize); 7] = [
    (LOG_TRX_ID, 8),
    (LOG_TRX_NO, 8),
    (LOG_NEXT_LOG, 2),
    (LOG_PREV_LOG, 2),
    (LOG_HIST_PREV, 6),
    (LOG_HIST_NEXT, 6),
    (LOG_START, 2),
];

/// Where the first record of a log whose header is at `off` starts: after the header's
/// space ([`LOG_HEADER_SPACE_BYTES`]), TRX_UNDO_LOG_START.
pub(super) fn log_start(off: usize) -> u16 {
    (off + LOG_HEADER_SPACE_BYTES) as u16
}

/// A log header for transaction `trx_id` at offset `off`, after the log at `prev_log`.
pub(super) fn log_header(trx_id: TrxId, off: usize, prev_log: u16) -> [u8; LOG_HEADER_BYTES] {
    let mut h = [0u8; LOG_HEADER_BYTES];
    h[LOG_TRX_ID..LOG_TRX_ID + 8].copy_from_slice(&trx_id.to_le_bytes());
    h[LOG_PREV_LOG..LOG_PREV_LOG + 2].copy_from_slice(&prev_log.to_le_bytes());
    h[LOG_HIST_PREV..LOG_HIST_PREV + 6].copy_from_slice(&FilAddr::NULL.encode());
    h[LOG_HIST_NEXT..LOG_HIST_NEXT + 6].copy_from_slice(&FilAddr::NULL.encode());
    h[LOG_START..LOG_START + 2].copy_from_slice(&log_start(off).to_le_bytes());
    h
}
