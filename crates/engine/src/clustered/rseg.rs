//! Rollback segments (MariaDB 10.11 storage/innobase/include/trx0rseg.h, trx/trx0rseg.cc):
//! the rollback segment header page (`trx_rseg_header_create`), one page per rollback
//! segment at the start of the undo relation, holding the segment's history list base node
//! and its undo slots; and what a rollback segment keeps in memory (`trx_rseg_t`: `Rseg`,
//! its caches, slots and history list), which `UndoSpace` (`undo_log`) changes together
//! with the header page.
//!
//! ```text
//! | offset | bytes     | field                                                          |
//! |--------|-----------|----------------------------------------------------------------|
//! | 0      | 32        | common page header; page_type = 6 (rollback segment header,   |
//! |        |           | InnoDB FIL_PAGE_TYPE_SYS); lower = end of the slots            |
//! | 32     | 4         | history size: pages of the undo segments that wait in the      |
//! |        |           | history list for purge (TRX_RSEG_HISTORY_SIZE)                  |
//! | 36     | 4         | history list length (TRX_RSEG_HISTORY: FLST_LEN)               |
//! | 40     | 6         | history list first = newest log: page u32, offset u16          |
//! |        |           | (FLST_FIRST; page 0xFFFF_FFFF = none)                          |
//! | 46     | 6         | history list last = oldest log (FLST_LAST)                     |
//! | 52     | 8         | largest transaction id at the last history change              |
//! |        |           | (TRX_RSEG_MAX_TRX_ID)                                          |
//! | 60     | 4 × slots | undo slots: the header page of each undo segment of this       |
//! |        |           | rollback segment, 0xFFFF_FFFF when free (TRX_RSEG_UNDO_SLOTS); |
//! |        |           | slots = page size / 16 (TRX_RSEG_N_SLOTS)                       |
//! ```
//! The history list is a doubly linked list through the history nodes of the undo log
//! headers (see `undo_page`): the base node here, each node in a log header on an undo page.
//! All integers little-endian.
//!
//! # Rollback segments in use (trx0rseg.cc, trx0trx.cc)
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

use crate::mvcc::TrxId;
use crate::page::{init_page, set_hole, PAGE_HEADER_BYTES};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32};

/// Page type tag of rollback segment header pages.
pub const PAGE_TYPE_RSEG: u8 = 6;
/// "No page" in a slot or list address (InnoDB FIL_NULL).
pub const FIL_NULL: u32 = u32::MAX;
/// TRX_RSEG_HISTORY_SIZE.
pub const HISTORY_SIZE: usize = PAGE_HEADER_BYTES;
/// FLST_LEN of TRX_RSEG_HISTORY.
pub const HISTORY_LEN: usize = PAGE_HEADER_BYTES + 4;
/// FLST_FIRST of TRX_RSEG_HISTORY.
pub const HISTORY_FIRST: usize = PAGE_HEADER_BYTES + 8;
/// FLST_LAST of TRX_RSEG_HISTORY.
pub const HISTORY_LAST: usize = PAGE_HEADER_BYTES + 14;
/// TRX_RSEG_MAX_TRX_ID.
pub const MAX_TRX_ID: usize = PAGE_HEADER_BYTES + 20;
/// TRX_RSEG_UNDO_SLOTS.
pub const SLOTS: usize = PAGE_HEADER_BYTES + 28;

/// Undo slots of a rollback segment on pages of `page_bytes` (TRX_RSEG_N_SLOTS).
pub fn n_slots(page_bytes: usize) -> usize {
    page_bytes / 16
}

/// Byte offset of slot `slot`.
pub fn slot_offset(slot: u16) -> usize {
    SLOTS + 4 * slot as usize
}

/// A file list address (InnoDB fil_addr_t): page and byte offset; `page == FIL_NULL` is none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilAddr {
    /// Page (block of the undo relation).
    pub page: u32,
    /// Byte offset on the page.
    pub offset: u16,
}

impl FilAddr {
    /// The null address.
    pub const NULL: FilAddr = FilAddr {
        page: FIL_NULL,
        offset: 0,
    };

    /// The 6 bytes of the address.
    pub fn encode(self) -> Vec<u8> {
        let mut v = self.page.to_le_bytes().to_vec();
        v.extend_from_slice(&self.offset.to_le_bytes());
        v
    }

    /// The address at `off` of `page`.
    pub fn read(page: &[u8], off: usize) -> FilAddr {
        FilAddr {
            page: u32::from_le_bytes([page[off], page[off + 1], page[off + 2], page[off + 3]]),
            offset: u16::from_le_bytes([page[off + 4], page[off + 5]]),
        }
    }
}

/// Formats a new rollback segment header (trx_rseg_header_create): empty history, every
/// slot free.
pub fn init(page: &mut [u8]) {
    init_page(page, PAGE_TYPE_RSEG, 0);
    let end = slot_offset(n_slots(page.len()) as u16);
    page[HISTORY_FIRST..HISTORY_FIRST + 6].copy_from_slice(&FilAddr::NULL.encode());
    page[HISTORY_LAST..HISTORY_LAST + 6].copy_from_slice(&FilAddr::NULL.encode());
    page[SLOTS..end].fill(0xFF);
    let len = page.len() as u16;
    set_hole(page, end as u16, len);
}

/// The header page of the segment in `slot` (FIL_NULL when free).
pub fn slot(page: &[u8], slot: u16) -> u32 {
    let o = slot_offset(slot);
    u32::from_le_bytes([page[o], page[o + 1], page[o + 2], page[o + 3]])
}

/// The history list length on the page.
pub fn history_len(page: &[u8]) -> u32 {
    u32::from_le_bytes([
        page[HISTORY_LEN],
        page[HISTORY_LEN + 1],
        page[HISTORY_LEN + 2],
        page[HISTORY_LEN + 3],
    ])
}

/// The history size (pages) on the page.
pub fn history_size(page: &[u8]) -> u32 {
    u32::from_le_bytes([
        page[HISTORY_SIZE],
        page[HISTORY_SIZE + 1],
        page[HISTORY_SIZE + 2],
        page[HISTORY_SIZE + 3],
    ])
}

/// A cached undo segment of a rollback segment (trx_rseg_t::undo_cached).
#[derive(Clone, Copy, Debug)]
pub(super) struct Cached {
    pub(super) page: u32,
    pub(super) slot: u16,
    /// The history number of the last (update) log on the page, 0 for insert undo.
    pub(super) last_seq: u64,
}

/// A log in a rollback segment's history list.
#[derive(Debug)]
pub(super) struct HistLog {
    /// Its number in the rollback segment's history: the list holds consecutive numbers,
    /// newest first, so a log is found by subtraction.
    pub(super) seq: u64,
    pub(super) at: FilAddr,
    /// Pages of its segment at commit, first page first.
    pub(super) seg_pages: Vec<u32>,
    pub(super) slot: u16,
    /// Its segment was cached at commit (else to purge).
    pub(super) cached: bool,
    /// A later log header was written on the same page (TRX_UNDO_NEXT_LOG != 0).
    pub(super) has_next: bool,
    /// Purge has processed its records.
    pub(super) purged: bool,
}

/// What a rollback segment's header page says, kept in memory (trx_rseg_t).
pub(super) struct RsegState {
    pub(super) slots_used: Vec<bool>,
    pub(super) insert_cached: Vec<Cached>,
    pub(super) update_cached: Vec<Cached>,
    /// Newest first (the list's FIRST), as on the page.
    pub(super) history: VecDeque<HistLog>,
    pub(super) history_size: u32,
    /// Largest transaction id that wrote undo here (trx_rseg_t::needs_purge − 1).
    pub(super) max_trx_id: TrxId,
    /// History number of the last log added.
    pub(super) last_seq: u64,
}

impl RsegState {
    /// The log numbered `seq` if it is still in the history.
    pub(super) fn log_mut(&mut self, seq: u64) -> Option<&mut HistLog> {
        let newest = self.history.front()?.seq;
        let i = newest.checked_sub(seq)?;
        self.history.get_mut(usize::try_from(i).ok()?)
    }
}

/// One rollback segment (trx_rseg_t).
pub(super) struct Rseg {
    /// Its header page.
    pub(super) page: u32,
    /// Transactions holding it (trx_rseg_t::ref).
    pub(super) refs: AtomicU32,
    /// History truncation took it out of assignment until it has removed some of its logs
    /// (the SKIP bit of trx_rseg_t::ref, `set_skip_allocation`; in memory only).
    pub(super) skip: AtomicBool,
    pub(super) state: Mutex<RsegState>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_header_has_an_empty_history_and_free_slots() {
        let mut p = vec![0u8; 16384];
        init(&mut p);
        assert_eq!(crate::page::page_type(&p), PAGE_TYPE_RSEG);
        assert_eq!(n_slots(p.len()), 1024);
        assert_eq!(slot(&p, 0), FIL_NULL);
        assert_eq!(slot(&p, 1023), FIL_NULL);
        assert_eq!(history_len(&p), 0);
        assert_eq!(history_size(&p), 0);
        assert_eq!(FilAddr::read(&p, HISTORY_FIRST), FilAddr::NULL);
        assert_eq!(FilAddr::read(&p, HISTORY_LAST), FilAddr::NULL);
        let (lower, upper) = crate::page::hole(&p);
        assert_eq!((lower as usize, upper as usize), (SLOTS + 4096, 16384));
    }
}
