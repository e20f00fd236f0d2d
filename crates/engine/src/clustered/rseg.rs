//! The rollback segment header page (MariaDB 10.11 storage/innobase/include/trx0rseg.h,
//! trx/trx0rseg.cc `trx_rseg_header_create`): one page per rollback segment at the start of
//! the undo relation, holding the segment's history list base node and its undo slots.
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
//! headers (see `undo`): the base node here, each node in a log header on an undo page.
//! All integers little-endian.

use crate::page::{init_page, set_hole, PAGE_HEADER_BYTES};

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
