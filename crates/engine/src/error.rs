//! Typed errors of the engine: [`Error`] for the layers above the device, which wraps the
//! device layer's own [`DeviceError`] (`crate::device`: I/O, files, reads past the end).
//!
//! Follows the habit of redb `src/error.rs`: a `#[non_exhaustive]` enum with `Io`,
//! `Corrupted` and `ChecksumMismatch`; after an I/O failure in a WAL flush the WAL stays
//! failed until the storage is reopened (SQLite's pager ERROR state, redb's `PreviousIo`),
//! reported as [`Error::PreviousIo`].

pub use crate::device::DeviceError;
use crate::page::PageId;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error the storage layers return. Nothing that comes from the device is
/// `unwrap()`ed: a bad page or record is one of these variants, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
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
    /// control file). `what` names the structure and the problem.
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
    /// A configuration value is out of range or two switches cannot be combined; the
    /// message names the switch(es).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// An earlier I/O failure in a WAL write or sync left the storage failed; reopen it.
    #[error("storage failed by an earlier I/O error ({0}); reopen the database to recover")]
    PreviousIo(String),
    /// The storage is shutting down.
    #[error("storage is shut down")]
    ShutDown,
    /// A unique index (or primary key) already holds the key
    /// (PostgreSQL SQLSTATE 23505 unique_violation).
    #[error("duplicate key value violates unique constraint \"{index}\": key {key}")]
    DuplicateKey {
        /// Index (or primary key) name.
        index: String,
        /// The key, rendered for people.
        key: String,
    },
    /// A value does not fit its column (type, length, nullability) or a row is malformed.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// An index entry or tuple is larger than a page can hold.
    #[error("{what} of {bytes} bytes exceeds the maximum of {max_bytes} bytes")]
    TooLarge {
        /// What was too large (index entry, tuple).
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
        /// The limit in bytes.
        max_bytes: usize,
    },
    /// A table, column or index that does not exist, or a definition that is not valid.
    #[error("catalog: {0}")]
    Catalog(String),
    /// A concurrent update made the transaction's snapshot unusable
    /// (PostgreSQL SQLSTATE 40001 "could not serialize access due to concurrent update").
    #[error("could not serialize access due to concurrent update ({0})")]
    SerializationFailure(String),
    /// The transaction was chosen as the victim of a deadlock (PostgreSQL SQLSTATE 40P01).
    #[error("deadlock detected: {0}")]
    Deadlock(String),
    /// A rollback segment has no free undo slot for another transaction's undo segment
    /// (InnoDB DB_TOO_MANY_CONCURRENT_TRXS, trx0undo.cc `trx_undo_seg_create`).
    #[error("too many concurrent transactions: {0}")]
    TooManyConcurrentTransactions(String),
    /// The transaction can no longer be used (aborted, or already committed).
    #[error("transaction is {0}; start a new one")]
    TransactionClosed(&'static str),
}

/// A device error in the engine's terms: a device configuration the device refused is the
/// engine's [`Error::InvalidConfig`] (a usage error for the command line), every other one
/// [`Error::Device`].
impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        match e {
            DeviceError::InvalidConfig(s) => Error::InvalidConfig(s),
            e => Error::Device(e),
        }
    }
}
