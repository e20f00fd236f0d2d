//! The errors of the storage layers between the device and the tables: pages (checksum,
//! header, relation bounds), the buffer pool and the WAL. [`StorageError`] is what the page
//! store, the buffer pool, the doublewrite buffer and the WAL return; it wraps the device
//! layer's own [`DeviceError`], and the engine's [`crate::Error`] wraps it in turn
//! ([`crate::Error::Storage`]). Nothing here is a transaction's outcome (deadlock,
//! serialization failure, duplicate key: [`crate::mvcc::TxnError`]) or a catalog's.
//!
//! Follows the habit of redb `src/error.rs`: `Io`, `Corrupted` and `ChecksumMismatch`; after
//! an I/O failure in a WAL flush the WAL stays failed until the storage is reopened (SQLite's
//! pager ERROR state, redb's `PreviousIo`), reported as [`StorageError::PreviousIo`].

use super::PageId;
use crate::device::DeviceError;

/// Result alias of the page, buffer-pool and WAL layers.
pub type StorageResult<T, E = StorageError> = std::result::Result<T, E>;

/// Every error the page store, the buffer pool and the WAL return. Nothing that comes from
/// the device is `unwrap()`ed: a bad page or record is one of these variants, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The device failed or was addressed wrongly (a file that does not exist, a read past
    /// its end, an I/O error, an unaligned O_DIRECT request): the device layer's own error,
    /// [`DeviceError`], shown as it is.
    #[error(transparent)]
    Device(DeviceError),
    /// A page read from the device does not carry the checksum its bytes give: a torn or
    /// otherwise damaged page (PostgreSQL: "page verification failed").
    #[error("checksum mismatch in {page}: stored {expected:#010x}, computed {got:#010x} (torn or corrupted page)")]
    ChecksumMismatch {
        /// The page that failed verification.
        page: PageId,
        /// Checksum computed over the bytes read.
        got: u32,
        /// Checksum stored in the page header.
        expected: u32,
    },
    /// Bytes from the device are not what the format allows (page header, WAL record,
    /// control file, or a layout above: heap, B+tree node, undo page, catalog). `what` names
    /// the structure and the problem.
    #[error("corrupted {what}")]
    Corrupted {
        /// Structure and problem, e.g. "page 16384/7: header names page 16384/9".
        what: String,
    },
    /// Every frame of the buffer pool is pinned: no victim can be found.
    #[error("buffer pool exhausted: all {frames} frames are pinned; raise the buffer pool size or release page guards sooner")]
    BufferPoolExhausted {
        /// Number of frames in the pool.
        frames: usize,
    },
    /// A page of a relation that does not exist, or past its end, was asked for.
    #[error("{page} does not exist ({reason})")]
    NoSuchPage {
        /// The page asked for.
        page: PageId,
        /// Why it does not exist.
        reason: &'static str,
    },
    /// An earlier I/O failure in a WAL write or sync left the storage failed; reopen it.
    #[error("storage failed by an earlier I/O error ({0}); reopen the database to recover")]
    PreviousIo(String),
    /// A page, buffer-pool or WAL setting is out of range; the message names the setting.
    /// The engine reports it as [`crate::Error::InvalidConfig`] (a usage error).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
}

impl StorageError {
    /// A [`StorageError::Corrupted`] naming the structure and the problem.
    pub fn corrupted(what: impl Into<String>) -> Self {
        StorageError::Corrupted { what: what.into() }
    }
}

/// A device error in the storage layers' terms: a refused device setting is a
/// [`StorageError::InvalidConfig`], every other one [`StorageError::Device`].
impl From<DeviceError> for StorageError {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::InvalidConfig(s) => StorageError::InvalidConfig(s),
            e => StorageError::Device(e),
        }
    }
}
