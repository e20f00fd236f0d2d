//! The log sequence number (PostgreSQL xlogdefs.h `XLogRecPtr`; InnoDB `lsn_t`): a byte
//! position in the WAL, carried in every page header as the page LSN. Kept beside the page
//! layout, below the WAL, because the page header names it.

use serde::{Deserialize, Serialize};

/// A log sequence number: a byte position in the WAL. Shown as PostgreSQL shows it,
/// `{hi:X}/{lo:X}` (e.g. `0/16B3740`, xlogdefs.h `LSN_FORMAT_ARGS`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Lsn(pub u64);

impl std::fmt::Display for Lsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 as u32)
    }
}
