//! Transaction ids: mvcclab's [`Xid`] (PostgreSQL's 32-bit `TransactionId`), and the wider
//! [`TrxId`] InnoDB stores in records and undo logs, with the one checked conversion back.

use crate::error::{Error, Result};

/// A transaction id (PostgreSQL TransactionId; InnoDB trx_id). 0 = invalid.
pub type Xid = u32;
/// The invalid xid.
pub const INVALID_XID: Xid = 0;
/// The first xid handed to a transaction (PostgreSQL FirstNormalTransactionId).
pub const FIRST_NORMAL_XID: Xid = 3;
/// InnoDB's transaction id as records (`DB_TRX_ID`, 6 bytes) and undo log headers
/// (`TRX_UNDO_TRX_ID`, 8 bytes) store it (trx0types.h `trx_id_t`). mvcclab's clustered
/// design writes an [`Xid`] widened (`TrxId::from(xid)`, lossless), so every stored id is an
/// xid; reading one back goes through [`xid_of_trx_id`].
pub type TrxId = u64;

/// The xid a stored transaction id names.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming `what` (the field it was read from) when the id is
/// past the xid space: a record or undo log mvcclab did not write.
pub fn xid_of_trx_id(trx: TrxId, what: &str) -> Result<Xid> {
    Xid::try_from(trx).map_err(|_| {
        Error::corrupted(format!(
            "{what} names transaction id {trx}, past the xid space (at most {})",
            Xid::MAX
        ))
    })
}
