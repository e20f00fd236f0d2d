//! The undo space's WAL records ([`crate::wal::rmgr::UNDO`]): info codes
//! ([`info`]), the encoders of a WRITE block's data ([`WriteLog`], `put`, `put_forced`,
//! `put_log_header`: mtr0log.h `mtr_t::write`) and redo of one block of one record applied
//! to an undo page or a rollback segment header page, as MariaDB 10.11
//! storage/innobase/log/log0recv.cc applies its page records (`log_phys_t::apply`:
//! `INIT_PAGE`, `WRITE`, `MEMSET`, `MEMMOVE`) and as MariaDB 10.2 trx0rec.cc
//! `trx_undo_parse_add_undo_rec` applied MLOG_UNDO_INSERT. Page formats: `undo_page`
//! (trx0undo.h) and `rseg` (trx0rseg.h); this file depends on them only.
//!
//! Block data formats (integers little-endian, *v* a MariaDB redo varint,
//! `crate::wal::put_varint`; records have no main data):
//! ```text
//! write = where v | length v | length bytes
//! where = 2 × (offset − end of the previous write of the block), when at or after it
//!         (the first write: after 0), else 2 × offset + 1
//! ```
//! This is how MariaDB frames the writes of a mini-transaction to one page (mtr0log.h
//! `mtr_t::log_write`): a record for the same page as the one before carries no page id and
//! its offset relative to where the previous write ended (`m_last_offset`), so a run of
//! writes to nearby fields costs 2 bytes each plus the bytes written ([`WriteLog`]).
//! | info | blocks and their data | redo (log0recv.cc counterpart) |
//! |------|-----------------------|--------------------------------|
//! | APPEND (0x10) | 0: undo page, `offset u16 \| undo record bytes` | the bytes at `offset`, which must be the page's free pointer (TRX_UNDO_PAGE_FREE = `lower`); `lower` += their length (MLOG_UNDO_INSERT) |
//! | WRITE (0x20) | each: an undo or rollback segment header page, `write*` | a will_init block is first formatted as an empty undo page (`INIT_PAGE`, `trx_undo_page_init`); then each write copies its bytes (`WRITE`; mvcclab logs MEMSET and MEMMOVE changes as plain writes) |
//! | RSEG_INIT (0x30) | 0: will_init, `rseg id u8` | the page formatted as an empty rollback segment header (`trx_rseg_header_create`) |
//!
//! A segment's first page (WRITE, will_init) is formatted like any other undo page and then
//! gets its segment header, first log header and free pointer from the block's writes, so
//! one format serves both (`undo_page::format_undo_page(_, true)` only differs in the free
//! pointer, which the writer logs). Every redone block sets the page LSN to the record's
//! end LSN.
//!
//! # What redo does not reproduce
//! Only the free space of an undo page, bytes `lower..upper` (past TRX_UNDO_PAGE_FREE),
//! which nobody reads: a cached insert segment starts over at its first log
//! (`trx_undo_insert_header_reuse`) and keeps the old records' bytes past the new free
//! pointer, and a full-page image leaves its hole out (restored as zeros). Every change to
//! bytes below `lower` and to the page header fields but the checksum and identity (stamped
//! only on write copies) is logged.
//!
//! # Hardening
//! Every offset and length is checked: bad bytes, a block that is not will_init on a page
//! of the wrong type, a write outside the page or into the page LSN, checksum or identity,
//! or an append that is not at the free pointer or does not fit give
//! [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the record's LSN, never a panic.

use super::rseg::{self, PAGE_TYPE_RSEG};
use super::undo_page::{format_undo_page, LOG_HEADER_BYTES, LOG_HEADER_FIELDS, PAGE_TYPE_UNDO};
use crate::buffer::WritePageGuard;
use crate::error::{Error, Result};
use crate::page::{hole, page_type, set_hole, set_page_lsn, OFF_LOWER, PAGE_HEADER_BYTES};
use crate::wal::data::DataReader;
use crate::wal::redo::redo_block_ref;
use crate::wal::{rmgr, Lsn, WalRecord};

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

/// The data of one WRITE block being built: its writes in the module doc's encoding.
/// Shape: offsets and lengths in bytes within one page (below 64 KiB).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteLog {
    bytes: Vec<u8>,
    last_end: usize,
}

impl WriteLog {
    /// Notes a write of `data` at byte `offset` of the page.
    pub fn push(&mut self, offset: usize, data: &[u8]) {
        let at = if offset >= self.last_end {
            2 * (offset - self.last_end)
        } else {
            2 * offset + 1
        };
        crate::wal::put_varint(&mut self.bytes, at as u32);
        crate::wal::put_varint(&mut self.bytes, data.len() as u32);
        self.bytes.extend_from_slice(data);
        self.last_end = offset + data.len();
    }

    /// The block data.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The block data, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Writes `bytes` at `off` of the page and notes in `log` (a WRITE block's data) only the
/// bytes that changed, nothing when none did: mtr0log.h `mtr_t::write` compares the value
/// with the page and logs from the first byte that differs (a `MAYBE_NOP` write of an equal
/// value logs nothing). InnoDB's integers are big-endian, so that trimming drops their
/// unchanged high-order bytes; mvcclab's are little-endian, whose high-order bytes come
/// last, so the unchanged bytes at both ends are dropped. Not for a `will_init` block, whose
/// redo starts from a freshly formatted page ([`put_forced`]).
pub(super) fn put(g: &mut WritePageGuard<'_>, log: &mut WriteLog, off: usize, bytes: &[u8]) {
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
pub(super) fn put_forced(g: &mut WritePageGuard<'_>, log: &mut WriteLog, off: usize, bytes: &[u8]) {
    g.data_mut()[off..off + bytes.len()].copy_from_slice(bytes);
    log.push(off, bytes);
}

/// Writes log header `h` at `off` field by field, each logged as [`put`] logs it, as
/// trx0undo.cc `trx_undo_header_create` writes a reused page's new header with one
/// `mtr_t::write` per field.
pub(super) fn put_log_header(
    g: &mut WritePageGuard<'_>,
    log: &mut WriteLog,
    off: usize,
    h: &[u8; LOG_HEADER_BYTES],
) {
    for (at, len) in LOG_HEADER_FIELDS {
        put(g, log, off + at, &h[at..at + len]);
    }
}

fn corrupted(lsn: Lsn, why: &str) -> Error {
    crate::wal::redo::corrupted("undo WAL record", lsn, why).into()
}

/// Applies block `b` of `rec` (an [`rmgr::UNDO`] record) to `page` and sets its page LSN to
/// `rec.end_lsn`.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) (naming the record's LSN) for a record of another resource
/// manager, an unknown info code, a missing block, bad block data or a page the record
/// cannot apply to; never a panic.
pub fn redo_block(rec: &WalRecord, b: usize, page: &mut [u8]) -> Result<()> {
    let lsn = rec.lsn;
    let block = redo_block_ref(
        rec,
        b,
        page.len(),
        Some((rmgr::UNDO, "the undo log")),
        "undo WAL record",
        256,
    )?;
    if !rec.main_data.is_empty() {
        return Err(corrupted(lsn, "main data on an undo record"));
    }
    let mut r = DataReader::new(&block.data, lsn, "undo WAL record (block data)");
    match rec.info {
        info::RSEG_INIT if b == 0 && block.will_init => {
            // trx_rseg_header_create: the id names the segment, the page does not hold it.
            let _id = r.u8()?;
            r.end()?;
            rseg::init(page);
        }
        info::WRITE => {
            if block.will_init {
                // INIT_PAGE (trx_undo_page_init).
                format_undo_page(page, false);
            } else {
                let t = page_type(page);
                if t != PAGE_TYPE_UNDO && t != PAGE_TYPE_RSEG {
                    return Err(r.bad(&format!("page type {t} is not an undo page")).into());
                }
            }
            let mut last_end = 0usize;
            while !r.is_empty() {
                // WRITE (mtr_t::write, mtr_t::memcpy).
                let at = r.varint()? as usize;
                let off = if at & 1 == 0 {
                    last_end + at / 2
                } else {
                    at / 2
                };
                let len = r.varint()? as usize;
                let bytes = r.bytes(len)?;
                if off < OFF_LOWER || off + len > page.len() {
                    return Err(r.bad(&format!("write of {len} bytes at {off}")).into());
                }
                page[off..off + len].copy_from_slice(bytes);
                last_end = off + len;
            }
        }
        info::APPEND if b == 0 && !block.will_init => {
            // MLOG_UNDO_INSERT (trx_undo_parse_add_undo_rec): at TRX_UNDO_PAGE_FREE.
            if page_type(page) != PAGE_TYPE_UNDO {
                return Err(r
                    .bad(&format!(
                        "page type {} is not an undo page",
                        page_type(page)
                    ))
                    .into());
            }
            let off = r.u16()? as usize;
            let bytes = r.rest();
            let (lower, upper) = hole(page);
            let (lower, upper) = (lower as usize, upper as usize);
            if lower < PAGE_HEADER_BYTES || lower > upper || upper > page.len() {
                return Err(corrupted(lsn, &format!("bad free space {lower}..{upper}")));
            }
            if bytes.is_empty() || off != lower || off + bytes.len() > upper {
                return Err(corrupted(
                    lsn,
                    &format!(
                        "append of {} bytes at {off}, free space {lower}..{upper}",
                        bytes.len()
                    ),
                ));
            }
            page[off..off + bytes.len()].copy_from_slice(bytes);
            set_hole(page, (off + bytes.len()) as u16, upper as u16);
        }
        i => {
            return Err(corrupted(
                lsn,
                &format!(
                    "info {i:#04x} block {b} (will_init {}) is not an undo redo",
                    block.will_init
                ),
            ))
        }
    }
    set_page_lsn(page, rec.end_lsn);
    Ok(())
}

/// Zeroes what redo does not reproduce (see the module doc): on an undo page, its free
/// space `lower..upper`; the page LSN, checksum and identity are left as they are.
pub fn mask_unlogged(page: &mut [u8]) {
    if page_type(page) != PAGE_TYPE_UNDO {
        return;
    }
    let (lower, upper) = hole(page);
    let (lower, upper) = (lower as usize, (upper as usize).min(page.len()));
    if lower < upper {
        page[lower..upper].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::undo_log::tests::space;
    use super::*;
    use crate::page::{get_u64, PageId, StorageError};
    use crate::wal::BlockRef;

    fn rec(info: u8, will_init: bool, data: Vec<u8>) -> WalRecord {
        WalRecord {
            lsn: Lsn(0x2000),
            end_lsn: Lsn(0x2040),
            prev_lsn: Lsn(0),
            xid: 0,
            rmgr: rmgr::UNDO,
            info,
            blocks: vec![BlockRef {
                page: PageId::new(1, 4),
                will_init,
                image: None,
                data,
            }],
            main_data: vec![],
        }
    }

    #[test]
    fn writes_forward_and_backward_apply_where_they_were_made() {
        let mut p = vec![0u8; 8192];
        format_undo_page(&mut p, false);
        let mut w = WriteLog::default();
        // Forward from the previous end (relative), then back (absolute), then forward.
        w.push(200, &[1, 2]);
        w.push(210, &[3]);
        w.push(100, &[4, 5, 6]);
        w.push(5000, &[7]);
        // 8 bytes past the previous write's end: one byte (2 × 8) for where, one for the
        // length; 100, behind it, is absolute (2 × 100 + 1, two bytes).
        assert_eq!(&w.as_bytes()[5..8], &[16, 1, 3][..]);
        assert_eq!(w.as_bytes().len(), 5 + 3 + 6 + 4);
        let mut q = p.clone();
        redo_block(&rec(info::WRITE, false, w.into_bytes()), 0, &mut q).unwrap();
        assert_eq!(&q[200..202], &[1, 2]);
        assert_eq!(q[210], 3);
        assert_eq!(&q[100..103], &[4, 5, 6]);
        assert_eq!(q[5000], 7);
        // A cut varint is Corrupted, not a panic.
        let e = redo_block(&rec(info::WRITE, false, vec![0xC0]), 0, &mut p).unwrap_err();
        assert!(
            matches!(e, Error::Storage(StorageError::Corrupted { .. })),
            "{e}"
        );
    }

    #[test]
    fn init_write_and_append_build_an_undo_page() {
        let mut p = vec![0u8; 8192];
        let mut w = WriteLog::default();
        w.push(OFF_LOWER, &100u16.to_le_bytes());
        redo_block(&rec(info::WRITE, true, w.into_bytes()), 0, &mut p).unwrap();
        assert_eq!(hole(&p), (100, 8192));
        let mut a = 100u16.to_le_bytes().to_vec();
        a.extend_from_slice(&[7; 30]);
        redo_block(&rec(info::APPEND, false, a.clone()), 0, &mut p).unwrap();
        assert_eq!(hole(&p), (130, 8192));
        assert_eq!(&p[100..130], &[7; 30]);
        assert_eq!(crate::page::page_lsn(&p), Lsn(0x2040));
        // The same append again is not at the free pointer.
        let e = redo_block(&rec(info::APPEND, false, a), 0, &mut p).unwrap_err();
        assert!(e.to_string().contains(&Lsn(0x2000).to_string()), "{e}");
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
            lsn: Lsn(0x100),
            end_lsn: Lsn(0x140),
            prev_lsn: Lsn(0),
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
        redo_block(&wr, 0, &mut redone).unwrap();
        crate::page::set_page_lsn(&mut redone, crate::page::page_lsn(&after));
        assert_eq!(redone, after);
    }
}
