//! The opening checks every resource manager's redo of one block makes before it reads the
//! block's data (xlogrecovery.c `ApplyWalRecord` hands a record to its rmgr's `rm_redo`;
//! xlogutils.c `XLogReadBufferForRedo` gives it a block the record registered): the record
//! is that resource manager's, block `b` is registered, and the page buffer is a page.
//! Each check failing is [`StorageError::Corrupted`] naming the record kind and its LSN, never a
//! panic.

use super::record::{BlockRef, WalRecord};
use super::Lsn;
use crate::page::{StorageError, StorageResult};

/// The error for a record of kind `what` (e.g. "heap WAL record") at `lsn`:
/// `"{what} at {lsn}: {why}"`.
pub(crate) fn corrupted(what: &str, lsn: Lsn, why: &str) -> StorageError {
    StorageError::corrupted(format!("{what} at {lsn}: {why}"))
}

/// Block `b` of `rec`, after the opening checks of a resource manager whose records are
/// named `what` in errors: `rec` is a record of resource manager `rmgr.0` (named `rmgr.1`;
/// skipped when `rmgr` is `None`: the caller dispatched on it already), the block is
/// registered, and
/// `page_len` lies in `min_page_bytes..=32 KiB` (the largest page size, InnoDB's
/// innodb_page_size maximum, is 64 KiB, but mvcclab's are 8 and 16 KiB).
///
/// Errors: [`StorageError::Corrupted`] naming the record and the failed check.
pub(crate) fn redo_block_ref<'r>(
    rec: &'r WalRecord,
    b: usize,
    page_len: usize,
    rmgr: Option<(u8, &str)>,
    what: &str,
    min_page_bytes: usize,
) -> StorageResult<&'r BlockRef> {
    if let Some((id, noun)) = rmgr {
        if rec.rmgr != id {
            return Err(corrupted(
                what,
                rec.lsn,
                &format!("rmgr {} is not {noun}", rec.rmgr),
            ));
        }
    }
    let block = rec
        .blocks
        .get(b)
        .ok_or_else(|| corrupted(what, rec.lsn, &format!("no block {b}")))?;
    if page_len < min_page_bytes || page_len > 1 << 15 {
        return Err(corrupted(
            what,
            rec.lsn,
            &format!("page buffer of {page_len} bytes"),
        ));
    }
    Ok(block)
}
