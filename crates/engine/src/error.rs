//! Typed errors of the engine (one enum for the storage layers).
//!
//! Follows the habit of redb `src/error.rs`: a `#[non_exhaustive]` enum with `Io`,
//! `Corrupted` and `ChecksumMismatch`; after an I/O failure in a WAL flush the WAL stays
//! failed until the storage is reopened (SQLite's pager ERROR state, redb's `PreviousIo`),
//! reported as [`Error::PreviousIo`].

use crate::page::PageId;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error the storage layers return. Nothing that comes from the device is
/// `unwrap()`ed: a bad page or record is one of these variants, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backing store failed: `op` is the operation (`read`, `write`, `sync`, ...) and
    /// `file` the device file id (hex, as in the file device's file names).
    #[error("I/O error during {op} of device file {file:#010x}: {source}")]
    Io {
        /// Operation that failed.
        op: &'static str,
        /// Device file id.
        file: u32,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A read asked for bytes past the end of a device file.
    #[error("read of {len_bytes} bytes at offset {offset_bytes} is past the end of device file {file:#010x} ({file_len_bytes} bytes)")]
    ReadPastEof {
        /// Device file id.
        file: u32,
        /// Offset of the request in bytes.
        offset_bytes: u64,
        /// Length of the request in bytes.
        len_bytes: usize,
        /// Current length of the file in bytes.
        file_len_bytes: u64,
    },
    /// A device file that does not exist was addressed.
    #[error("device file {file:#010x} does not exist")]
    NoSuchFile {
        /// Device file id.
        file: u32,
    },
    /// A request for a file opened with O_DIRECT was not aligned to 512 bytes.
    #[error("O_DIRECT request on device file {file:#010x} is not 512-byte aligned (offset {offset_bytes}, length {len_bytes}); direct I/O needs sector-aligned offsets and lengths")]
    Unaligned {
        /// Device file id.
        file: u32,
        /// Offset of the request in bytes.
        offset_bytes: u64,
        /// Length of the request in bytes.
        len_bytes: usize,
    },
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

impl Error {
    /// Wraps an `std::io::Error` from operation `op` on device file `file`.
    pub fn io(op: &'static str, file: u32, source: std::io::Error) -> Self {
        Error::Io { op, file, source }
    }
}
