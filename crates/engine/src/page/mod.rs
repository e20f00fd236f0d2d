//! Pages: identity, size, the common page header and its checksum; the page store below the
//! buffer pool.
//!
//! Every page, whatever its layout (heap, B+tree node, undo), starts with the same 32-byte
//! header. It combines what PostgreSQL's `PageHeaderData` (bufpage.h: pd_lsn, pd_checksum,
//! pd_lower, pd_upper, pd_special) and InnoDB's FIL header (fil0fil.h: FIL_PAGE_SPACE_ID,
//! FIL_PAGE_OFFSET, FIL_PAGE_LSN) carry, so that both the full-page-image hole and the
//! doublewrite area's self-identifying pages work on one format.
//!
//! ```text
//! | offset | bytes | field         | meaning                                                  |
//! |--------|-------|---------------|----------------------------------------------------------|
//! | 0      | 8     | page_lsn      | end LSN of the last WAL record that changed the page     |
//! | 8      | 4     | checksum      | CRC-32C of the page with this field zeroed               |
//! | 12     | 4     | rel           | relation file id the page belongs to                     |
//! | 16     | 4     | block         | block number within the relation                         |
//! | 20     | 2     | lower         | start of the free-space hole (pd_lower)                  |
//! | 22     | 2     | upper         | end of the free-space hole (pd_upper)                    |
//! | 24     | 2     | special       | start of the layout's special space (pd_special)         |
//! | 26     | 1     | page_type     | layout tag (0 = untyped)                                 |
//! | 27     | 1     | flags         | layout flags                                             |
//! | 28     | 4     | aux           | a word the layout defines (heap: pd_prune_xid; B+tree    |
//! |        |       |               | node: the last insert, btree::node)                      |
//! ```
//! All integers little-endian. `lower..upper` is the hole left out of a full-page image;
//! a layout that has no hole leaves `lower == upper`.
//!
//! # Invariants
//! 1. A page on the device is either all zeros (allocated, never written: PostgreSQL's
//!    `PageIsNew`) or carries a checksum that matches its bytes and a `rel`/`block` that
//!    match where it is stored. Anything else is reported as [`StorageError::ChecksumMismatch`] or
//!    [`StorageError::Corrupted`], never returned as data.
//! 2. `rel`, `block` and `checksum` are stamped by [`finish_for_write`] on a private copy
//!    just before the write (PostgreSQL `PageSetChecksumCopy`), never in the buffer pool frame.

mod error;
mod id;
mod lsn;
mod segment;
mod store;

pub use error::{StorageError, StorageResult};
pub use id::PageId;
pub use lsn::Lsn;
#[cfg(test)]
pub(crate) use store::extent_pages;
pub use store::PageStore;

use serde::{Deserialize, Serialize};

/// Page size of a database: 8 KiB (PostgreSQL BLCKSZ) or 16 KiB (InnoDB innodb_page_size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PageSize {
    /// 8192 bytes.
    #[serde(rename = "8k")]
    K8,
    /// 16384 bytes.
    #[serde(rename = "16k")]
    K16,
}

impl PageSize {
    /// Size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            PageSize::K8 => 8192,
            PageSize::K16 => 16384,
        }
    }
}

impl std::str::FromStr for PageSize {
    type Err = String;
    fn from_str(s: &str) -> StorageResult<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "8k" | "8kib" | "8192" => Ok(PageSize::K8),
            "16k" | "16kib" | "16384" => Ok(PageSize::K16),
            _ => Err(format!("unknown page size '{s}'; expected 8k or 16k")),
        }
    }
}

/// Bytes of the common page header.
pub const PAGE_HEADER_BYTES: usize = 32;

const OFF_LSN: usize = 0;
const OFF_CHECKSUM: usize = 8;
const OFF_REL: usize = 12;
const OFF_BLOCK: usize = 16;
/// Byte offset of `lower` (pd_lower) in the common header, for layouts that log it as a field.
pub const OFF_LOWER: usize = 20;
const OFF_UPPER: usize = 22;
const OFF_SPECIAL: usize = 24;
/// Byte offset of `page_type` in the common header.
pub const OFF_TYPE: usize = 26;
const OFF_FLAGS: usize = 27;
/// Byte offset of the layout-defined word (`aux`) in the common header.
pub const OFF_AUX: usize = 28;

/// The little-endian u16 at byte `off` of `p`; panics when `p` is too short (callers
/// check bounds first).
pub(crate) fn get_u16(p: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([p[off], p[off + 1]])
}
/// The little-endian u32 at byte `off` of `p`; panics when `p` is too short.
pub(crate) fn get_u32(p: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(p[off..off + 4].try_into().expect("4 bytes"))
}
/// The little-endian u64 at byte `off` of `p`; panics when `p` is too short.
pub(crate) fn get_u64(p: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(p[off..off + 8].try_into().expect("8 bytes"))
}

/// Page LSN (end LSN of the last record that changed the page); 0 for a new page.
pub fn page_lsn(page: &[u8]) -> Lsn {
    Lsn(u64::from_le_bytes(
        page[OFF_LSN..OFF_LSN + 8].try_into().expect("8 bytes"),
    ))
}

/// Sets the page LSN.
pub fn set_page_lsn(page: &mut [u8], lsn: Lsn) {
    page[OFF_LSN..OFF_LSN + 8].copy_from_slice(&lsn.0.to_le_bytes());
}

/// The free-space hole `(lower, upper)` as the layout set it.
pub fn hole(page: &[u8]) -> (u16, u16) {
    (get_u16(page, OFF_LOWER), get_u16(page, OFF_UPPER))
}

/// Sets the free-space hole bounds (pd_lower, pd_upper).
pub fn set_hole(page: &mut [u8], lower: u16, upper: u16) {
    page[OFF_LOWER..OFF_LOWER + 2].copy_from_slice(&lower.to_le_bytes());
    page[OFF_UPPER..OFF_UPPER + 2].copy_from_slice(&upper.to_le_bytes());
}

/// Start of the special space (pd_special).
pub fn special(page: &[u8]) -> u16 {
    get_u16(page, OFF_SPECIAL)
}

/// Sets the start of the special space.
pub fn set_special(page: &mut [u8], special: u16) {
    page[OFF_SPECIAL..OFF_SPECIAL + 2].copy_from_slice(&special.to_le_bytes());
}

/// Layout tag.
pub fn page_type(page: &[u8]) -> u8 {
    page[OFF_TYPE]
}

/// Sets the layout tag.
pub fn set_page_type(page: &mut [u8], t: u8) {
    page[OFF_TYPE] = t;
}

/// Layout flags byte (heap: PD_HAS_FREE_LINES, PD_PAGE_FULL, PD_ALL_VISIBLE).
pub fn flags(page: &[u8]) -> u8 {
    page[OFF_FLAGS]
}

/// Sets the layout flags byte.
pub fn set_flags(page: &mut [u8], f: u8) {
    page[OFF_FLAGS] = f;
}

/// The layout-defined word (heap: pd_prune_xid; B+tree node: `PAGE_LAST_INSERT`).
pub fn aux(page: &[u8]) -> u32 {
    get_u32(page, OFF_AUX)
}

/// Sets the layout-defined word.
pub fn set_aux(page: &mut [u8], v: u32) {
    page[OFF_AUX..OFF_AUX + 4].copy_from_slice(&v.to_le_bytes());
}

/// Initializes an empty page of a layout: zero header, the hole spanning everything after
/// the header up to `special` (bufpage.c `PageInit`).
pub fn init_page(page: &mut [u8], page_type: u8, special_bytes: usize) {
    page.fill(0);
    let special = (page.len() - special_bytes) as u16;
    set_hole(page, PAGE_HEADER_BYTES as u16, special);
    set_special(page, special);
    set_page_type(page, page_type);
}

/// The valid hole of a page for a full-page image, or `None` when the header does not
/// describe one (PostgreSQL `XLogRecordAssemble`: only a standard page with
/// `SizeOfPageHeaderData <= lower <= upper <= BLCKSZ` has its hole removed).
pub fn fpi_hole(page: &[u8]) -> Option<(usize, usize)> {
    let (lower, upper) = hole(page);
    let (lower, upper) = (lower as usize, upper as usize);
    (PAGE_HEADER_BYTES <= lower && lower < upper && upper <= page.len()).then_some((lower, upper))
}

/// CRC-32C of `page` with the checksum field taken as zero.
pub fn compute_checksum(page: &[u8]) -> u32 {
    let c = crc32c::crc32c(&page[..OFF_CHECKSUM]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, &page[OFF_CHECKSUM + 4..])
}

/// Stamps identity and checksum into `copy`, a private copy of the page about to be written
/// to `id` (bufmgr.c `FlushBuffer` → `PageSetChecksumCopy`).
pub fn finish_for_write(copy: &mut [u8], id: PageId) {
    copy[OFF_REL..OFF_REL + 4].copy_from_slice(&id.rel.to_le_bytes());
    copy[OFF_BLOCK..OFF_BLOCK + 4].copy_from_slice(&id.block.to_le_bytes());
    let c = compute_checksum(copy);
    copy[OFF_CHECKSUM..OFF_CHECKSUM + 4].copy_from_slice(&c.to_le_bytes());
}

/// Checks a page read from `id` (bufpage.c `PageIsVerifiedExtended`): an all-zero page is
/// valid (new); otherwise the checksum must match and the header must name `id`.
///
/// Errors: [`StorageError::ChecksumMismatch`] for a torn or damaged page; [`StorageError::Corrupted`]
/// when the buffer is shorter than the page header, or the page is intact but belongs
/// elsewhere or has an impossible hole.
pub fn verify(page: &[u8], id: PageId) -> StorageResult<()> {
    if page.len() < PAGE_HEADER_BYTES {
        return Err(StorageError::corrupted(format!(
            "{id}: {} bytes, shorter than a page header",
            page.len()
        )));
    }
    if page.iter().all(|&b| b == 0) {
        return Ok(());
    }
    let expected = get_u32(page, OFF_CHECKSUM);
    let got = compute_checksum(page);
    if got != expected {
        return Err(StorageError::ChecksumMismatch {
            page: id,
            got,
            expected,
        });
    }
    let (rel, block) = (get_u32(page, OFF_REL), get_u32(page, OFF_BLOCK));
    if (rel, block) != (id.rel, id.block) {
        return Err(StorageError::corrupted(format!(
            "{id}: header names page {rel}/{block} (misdirected write)"
        )));
    }
    let (lower, upper) = hole(page);
    if lower > upper || upper as usize > page.len() {
        return Err(StorageError::corrupted(format!(
            "{id}: hole {lower}..{upper} is impossible"
        )));
    }
    Ok(())
}

/// The identity a page image names in its header (for the doublewrite area, whose slots
/// hold whole pages as InnoDB's do). `None` when the image's checksum does not match.
pub fn identify(page: &[u8]) -> Option<PageId> {
    if page.len() < PAGE_HEADER_BYTES || get_u32(page, OFF_CHECKSUM) != compute_checksum(page) {
        return None;
    }
    Some(PageId::new(
        get_u32(page, OFF_REL),
        get_u32(page, OFF_BLOCK),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_detects_a_torn_write_and_a_misdirected_page() {
        let id = PageId::new(16384, 3);
        let mut p = vec![0u8; 8192];
        init_page(&mut p, 1, 16);
        p[100..200].fill(0xAB);
        set_page_lsn(&mut p, Lsn(42));
        finish_for_write(&mut p, id);
        verify(&p, id).unwrap();
        assert_eq!(identify(&p), Some(id));
        // Torn: the second half is from an older version.
        let mut torn = p.clone();
        torn[4096..].fill(0x11);
        assert!(matches!(
            verify(&torn, id),
            Err(StorageError::ChecksumMismatch { .. })
        ));
        assert_eq!(identify(&torn), None);
        let e = verify(&p, PageId::new(16384, 4)).unwrap_err();
        assert!(e.to_string().contains("misdirected"), "{e}");
        verify(&vec![0u8; 8192], id).unwrap();
        // A buffer shorter than the header is not a page.
        assert!(matches!(
            verify(&[1u8; 20], id),
            Err(StorageError::Corrupted { .. })
        ));
    }

    #[test]
    fn fpi_hole_needs_a_standard_header() {
        let mut p = vec![0u8; 8192];
        assert_eq!(fpi_hole(&p), None);
        init_page(&mut p, 1, 0);
        assert_eq!(fpi_hole(&p), Some((32, 8192)));
        set_hole(&mut p, 500, 100);
        assert_eq!(fpi_hole(&p), None);
    }
}
