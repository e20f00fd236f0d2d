//! The undo record format and the roll pointer that names a record (MariaDB 10.11
//! storage/innobase/trx/trx0rec.cc: `trx_undo_page_report_insert` and
//! `trx_undo_page_report_modify` write a record, `trx_undo_rec_get_pars` and
//! `trx_undo_update_rec_get_sys_cols` read its header; include/trx0types.h `roll_ptr_t`,
//! include/trx0undo.h `trx_undo_build_roll_ptr` / `trx_undo_decode_roll_ptr`). The pages
//! that hold the records: `undo_page`.
//!
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
//! A roll pointer (DB_ROLL_PTR, 7 bytes, [`RollPtr`]) is `insert flag << 55 | rseg id << 48
//! | page << 16 | offset`, as InnoDB's (trx0undo.ic `trx_undo_build_roll_ptr`). In the undo
//! record DB_TRX_ID and DB_ROLL_PTR are little-endian (the clustered record stores them
//! big-endian, `catalog::encode_compact`).

use crate::error::{Error, Result};
use crate::mvcc::TrxId;
use crate::page::{hole, PageId, PAGE_HEADER_BYTES};

/// Undo record fixed part before the primary key.
pub const RECORD_FIXED_BYTES: usize = 22;

/// A roll pointer, DB_ROLL_PTR (trx0types.h `roll_ptr_t`): where the undo record of a
/// record's previous version is. Stored in 7 bytes (DATA_ROLL_PTR_LEN) as
/// `is_insert << 55 | rseg_id << 48 | page_no << 16 | offset` ([`RollPtr::encode`],
/// [`RollPtr::decode`]); every value below 2^56 decodes and encodes back to itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RollPtr {
    /// The record is insert undo (the row had no earlier version).
    pub is_insert: bool,
    /// Rollback segment id (7 bits: `encode` keeps the low 7).
    pub rseg_id: u8,
    /// Undo page (block of the undo relation).
    pub page_no: u32,
    /// Byte offset of the undo record on the page.
    pub offset: u16,
}

impl RollPtr {
    /// Bytes of a stored roll pointer (DATA_ROLL_PTR_LEN).
    pub const BYTES: usize = 7;

    /// The roll pointer that encodes as 0: an insert undo record's "previous version" (an
    /// insert has none).
    pub const NULL: RollPtr = RollPtr {
        is_insert: false,
        rseg_id: 0,
        page_no: 0,
        offset: 0,
    };

    /// A roll pointer of its parts.
    pub const fn new(is_insert: bool, rseg_id: u8, page_no: u32, offset: u16) -> RollPtr {
        RollPtr {
            is_insert,
            rseg_id,
            page_no,
            offset,
        }
    }

    /// The 56-bit value (trx_undo_build_roll_ptr): insert flag, rollback segment id
    /// (7 bits), page, offset.
    pub fn encode(self) -> u64 {
        (u64::from(self.is_insert) << 55)
            | ((u64::from(self.rseg_id) & 0x7F) << 48)
            | ((self.page_no as u64) << 16)
            | self.offset as u64
    }

    /// The parts of a roll pointer value (trx_undo_decode_roll_ptr); bits from 56 up are
    /// ignored.
    pub fn decode(rp: u64) -> RollPtr {
        RollPtr {
            is_insert: (rp >> 55) & 1 == 1,
            rseg_id: ((rp >> 48) & 0x7F) as u8,
            page_no: (rp >> 16) as u32,
            offset: rp as u16,
        }
    }
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
    pub old_trx_id: TrxId,
    /// DB_ROLL_PTR of the previous version.
    pub old_roll_ptr: RollPtr,
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
        out.extend_from_slice(&self.old_roll_ptr.encode().to_le_bytes()[..RollPtr::BYTES]);
        out.extend_from_slice(&(self.pk.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.pk);
        out.extend_from_slice(&self.delta);
        out
    }

    /// Decodes a record at the start of `b`. Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted), never a panic.
    pub fn decode(b: &[u8]) -> Result<UndoRecord> {
        let bad = |w: &str| Error::corrupted(format!("undo record: {w}"));
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
        r[..RollPtr::BYTES].copy_from_slice(&b[13..20]);
        let pk_len = u16::from_le_bytes([b[20], b[21]]) as usize;
        if RECORD_FIXED_BYTES + pk_len > len {
            return Err(bad("primary key longer than the record"));
        }
        Ok(UndoRecord {
            kind,
            table,
            old_trx_id: TrxId::from_le_bytes(t),
            old_roll_ptr: RollPtr::decode(u64::from_le_bytes(r)),
            pk: b[RECORD_FIXED_BYTES..RECORD_FIXED_BYTES + pk_len].to_vec(),
            delta: b[RECORD_FIXED_BYTES + pk_len..len].to_vec(),
        })
    }
}

/// The undo record at byte `off` of undo page `page` (page `id`): the bytes from `off` up
/// to the page's free pointer (TRX_UNDO_PAGE_FREE, `lower`), decoded by
/// [`UndoRecord::decode`].
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when `off` is not between the page header and the free
/// pointer, the free pointer lies past the end of the page, or the record is bad; never a
/// panic.
pub fn record_on_page(page: &[u8], id: PageId, off: u16) -> Result<UndoRecord> {
    if page.len() < PAGE_HEADER_BYTES {
        return Err(Error::corrupted(format!(
            "{id}: undo page of {} bytes",
            page.len()
        )));
    }
    let (lower, _) = hole(page);
    if (off as usize) < PAGE_HEADER_BYTES || off >= lower || lower as usize > page.len() {
        return Err(Error::corrupted(format!(
            "{id}: undo record offset {off} outside the records (free pointer {lower}, \
                 page of {} bytes)",
            page.len()
        )));
    }
    UndoRecord::decode(&page[off as usize..lower as usize])
}

#[cfg(test)]
mod tests {
    use super::super::undo_log::tests::rec;
    use super::super::undo_page::format_undo_page;
    use super::*;
    use crate::page::set_hole;
    use proptest::prelude::*;

    #[test]
    fn record_roundtrip_and_roll_pointer() {
        let r = UndoRecord {
            kind: UndoType::UpdateExisting,
            table: 3,
            old_trx_id: 77,
            old_roll_ptr: RollPtr::new(true, 5, 9, 100),
            pk: vec![1, 2, 3],
            delta: vec![9; 10],
        };
        let b = r.encode();
        assert_eq!(b.len(), RECORD_FIXED_BYTES + 3 + 10);
        assert_eq!(UndoRecord::decode(&b).unwrap(), r);
        assert_eq!(
            RollPtr::decode(RollPtr::new(true, 5, 9, 100).encode()),
            RollPtr::new(true, 5, 9, 100)
        );
        assert_eq!(
            RollPtr::decode(RollPtr::new(false, 127, u32::MAX, 7).encode()),
            RollPtr::new(false, 127, u32::MAX, 7)
        );
        // InnoDB's bit layout: insert flag at 55, rollback segment id at 48..55.
        assert_eq!(RollPtr::new(true, 1, 0, 0).encode(), (1 << 55) | (1 << 48));
        assert!(
            RollPtr::new(true, 127, u32::MAX, u16::MAX).encode() < 1 << 56,
            "7 bytes"
        );
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
