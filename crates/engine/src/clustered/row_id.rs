//! InnoDB's `DB_ROW_ID` sequence: the hidden clustered key of a table without a primary key
//! (the GEN_CLUST_INDEX, dict0dict.cc `dict_index_build_internal_clust`).
//!
//! Follows MariaDB 10.11: one counter for the whole server, shared by every table without a
//! primary key (`dict_sys.row_id`, dict0dict.h), handed out by `dict_sys_t::get_new_row_id`
//! from row0ins.cc `row_ins_alloc_row_id_step` before the row's clustered record is built.
//! The counter is not made durable at each id: when an id that is a multiple of
//! `ROW_ID_WRITE_MARGIN` (256) is handed out, that id is written to the data dictionary
//! header page, `DICT_HDR_ROW_ID` (dict0boot.cc `dict_hdr_flush_row_id`, a redo-logged
//! mini-transaction that writes the id only when it is larger than the header's, so that
//! two inserters racing past the counter's atomic increment cannot move it back; here the
//! counter's mutex orders them); at startup `dict_boot` sets the counter to that value rounded up to a
//! multiple of 256, plus 256 (`dict_sys_t::recover_row_id`), so no id handed out before a
//! restart or crash is handed out again. 10.11 does not read each table's largest
//! DB_ROW_ID (measured on MariaDB 10.11.19: ids interleave across two tables, 512, 513,
//! 514 in one, 515, 516 in the other, 517 in the first; a clean restart continues at 768,
//! a crash after 768 at 1024; docs/innodb.md).
//!
//! Here the dictionary header write is a WAL record of its own, `Catalog/ROW_ID`
//! ([`crate::wal::catalog_info::ROW_ID`], main data the id as u64 LE); checkpoints carry the
//! last value written ([`RowIdSequence::checkpoint_state`]), and recovery takes the larger
//! of the checkpoint's and every ROW_ID record replayed
//! ([`crate::access::Redone::dict_hdr_row_id`]). The header page itself is not modelled (no
//! page write at checkpoints for it).
//!
//! # Invariants
//! 1. Every id handed out is at most 255 above the last value written; that write precedes
//!    in the WAL the record of any row carrying the id, so a row that survives a crash has an
//!    id below the recovered value rounded up plus 256, where the counter restarts.
//!
//! # Locking
//! One mutex over the counter and the last value written; the WAL record is inserted under
//! it, so a checkpoint's state is never older than a record before its redo pointer.
//!
//! # Crash safety
//! See invariant 1; ids of rows lost or rolled back in a crash may be handed out again,
//! as in InnoDB, since no row carries them.

use crate::catalog::{DB_ROW_ID_BYTES, MAX_ROW_ID};
use crate::error::{Error, Result};
use crate::wal::{catalog_info, rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
use std::sync::Arc;

/// Where the dictionary header's row id starts in a new database (dict0boot.cc
/// `dict_hdr_create` writes `DICT_HDR_FIRST_ID`, 10).
pub const DICT_HDR_FIRST_ID: u64 = 10;
/// Every this many ids the counter is written to the dictionary header
/// (`dict_sys_t::ROW_ID_WRITE_MARGIN`, `DICT_HDR_ROW_ID_WRITE_MARGIN` before 10.6).
pub const ROW_ID_WRITE_MARGIN: u64 = 256;

struct State {
    /// The next id to hand out (`dict_sys.row_id`).
    next: u64,
    /// The last value written to the dictionary header (`DICT_HDR_ROW_ID`).
    hdr: u64,
}

/// The server-wide `DB_ROW_ID` counter of the innodb design (see the module doc).
pub struct RowIdSequence {
    wal: Arc<Wal>,
    state: Mutex<State>,
}

impl RowIdSequence {
    /// The counter at startup, from the dictionary header's value `hdr`
    /// ([`DICT_HDR_FIRST_ID`] for a new database): `hdr` rounded up to a multiple of
    /// [`ROW_ID_WRITE_MARGIN`], plus one margin (dict0boot.cc `dict_boot` →
    /// `dict_sys_t::recover_row_id`). A new database's first id is 512, as MariaDB's.
    pub fn recovered(wal: Arc<Wal>, hdr: u64) -> Self {
        let next = hdr.div_ceil(ROW_ID_WRITE_MARGIN) * ROW_ID_WRITE_MARGIN + ROW_ID_WRITE_MARGIN;
        RowIdSequence {
            wal,
            state: Mutex::new(State { next, hdr }),
        }
    }

    /// The next `DB_ROW_ID` (`dict_sys_t::get_new_row_id`), as its 6 big-endian bytes
    /// (`dict_sys_write_row_id`, `mach_write_to_6`): the clustered key of the row. A
    /// multiple of [`ROW_ID_WRITE_MARGIN`] is first written to the dictionary header (a
    /// `Catalog/ROW_ID` WAL record, not flushed: the inserting transaction's commit flushes
    /// it, as InnoDB's mini-transaction is made durable by a later log write).
    ///
    /// Errors: [`Error::TooLarge`] past 2^48 − 1 (InnoDB would wrap around and overwrite an
    /// old row); WAL errors.
    pub fn next_row_id(&self) -> Result<Vec<u8>> {
        let mut s = self.state.lock();
        let id = s.next;
        if id > MAX_ROW_ID {
            return Err(Error::TooLarge {
                what: "DB_ROW_ID (6 bytes)",
                bytes: 8,
                max_bytes: DB_ROW_ID_BYTES,
            });
        }
        if id.is_multiple_of(ROW_ID_WRITE_MARGIN) {
            let rec = RecordBuilder::new(rmgr::CATALOG, catalog_info::ROW_ID)
                .main_data(&id.to_le_bytes());
            self.wal.insert(&rec, &mut [])?;
            s.hdr = id;
        }
        s.next = id + 1;
        Ok(id.to_be_bytes()[8 - DB_ROW_ID_BYTES..].to_vec())
    }

    /// What a checkpoint record carries for the sequence: the dictionary header's value
    /// (u64 LE), or nothing while it is still [`DICT_HDR_FIRST_ID`] (so that a database
    /// that never used a row id logs the checkpoints it always did).
    pub fn checkpoint_state(&self) -> Vec<u8> {
        let hdr = self.state.lock().hdr;
        match hdr {
            DICT_HDR_FIRST_ID => Vec::new(),
            v => v.to_le_bytes().to_vec(),
        }
    }

    /// The dictionary header's value from a checkpoint's state
    /// ([`RowIdSequence::checkpoint_state`]); [`DICT_HDR_FIRST_ID`] for none.
    pub fn hdr_of_checkpoint_state(state: Option<&[u8]>) -> u64 {
        state
            .and_then(|b| b.get(..8))
            .map_or(DICT_HDR_FIRST_ID, |b| {
                u64::from_le_bytes(b.try_into().expect("8 bytes"))
            })
    }

    /// The id the next insert gets (for tests and reports).
    pub fn peek(&self) -> u64 {
        self.state.lock().next
    }
}

/// The `DB_ROW_ID` a clustered key of a table without a primary key holds (6 big-endian
/// bytes); `None` for a key of another length.
pub fn row_id_of_key(key: &[u8]) -> Option<u64> {
    (key.len() == DB_ROW_ID_BYTES).then(|| key.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)))
}
