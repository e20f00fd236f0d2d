//! Typed errors of the engine, one enum per layer:
//!
//! | layer                               | enum                         | examples                                  |
//! |-------------------------------------|------------------------------|-------------------------------------------|
//! | device (`crate::device`)            | [`DeviceError`]              | I/O, no such file, read past the end      |
//! | pages, buffer pool, WAL             | [`StorageError`]             | checksum, corruption, pool exhausted      |
//! | concurrency control (`crate::mvcc`) | [`TxnError`]                 | deadlock, serialization failure, dup key  |
//! | engine (catalog, values, settings)  | [`Error`]                    | invalid value, catalog, invalid config    |
//!
//! Each layer returns its own enum; [`Error`], what the engine API returns, wraps the lower
//! ones transparently ([`Error::Storage`], [`Error::Txn`]), so a message reads the same at
//! every level. A setting a lower layer refuses becomes [`Error::InvalidConfig`] (a usage
//! error for the command line, exit 2).

pub use crate::device::DeviceError;
pub use crate::mvcc::TxnError;
pub use crate::page::{StorageError, StorageResult};

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error the engine API returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage below the tables failed: the device, a page's checksum or format, the
    /// buffer pool, the WAL ([`StorageError`], shown as it is).
    #[error(transparent)]
    Storage(StorageError),
    /// The transaction ran into another one or its own state: deadlock, serialization
    /// failure, duplicate key, no undo slot, a closed transaction ([`TxnError`], shown as it
    /// is, with [`TxnError::sqlstate`] for clients).
    #[error(transparent)]
    Txn(TxnError),
    /// A configuration value is out of range or two switches cannot be combined; the
    /// message names the switch(es).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
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
}

impl Error {
    /// A [`StorageError::Corrupted`]: bytes read back (a page of any layout, a WAL record,
    /// the catalog) are not what the format allows; `what` names the structure and the
    /// problem.
    pub fn corrupted(what: impl Into<String>) -> Self {
        Error::Storage(StorageError::corrupted(what))
    }

    /// The transaction error, if this is one.
    pub fn as_txn(&self) -> Option<&TxnError> {
        match self {
            Error::Txn(e) => Some(e),
            _ => None,
        }
    }

    /// The storage error, if this is one.
    pub fn as_storage(&self) -> Option<&StorageError> {
        match self {
            Error::Storage(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the transaction should be retried from its start
    /// ([`TxnError::is_retryable`]: deadlock, serialization failure).
    pub fn is_retryable(&self) -> bool {
        self.as_txn().is_some_and(TxnError::is_retryable)
    }
}

/// A storage error in the engine's terms: a setting the storage layers refused is the
/// engine's [`Error::InvalidConfig`] (a usage error for the command line), every other one
/// [`Error::Storage`].
impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::InvalidConfig(s) => Error::InvalidConfig(s),
            e => Error::Storage(e),
        }
    }
}

/// A device error in the engine's terms, through [`StorageError`]'s conversion.
impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::from(StorageError::from(e))
    }
}

impl From<TxnError> for Error {
    fn from(e: TxnError) -> Self {
        Error::Txn(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::PageId;

    #[test]
    fn wrapping_keeps_each_layers_message() {
        let page = PageId::new(16384, 7);
        let e = Error::from(StorageError::ChecksumMismatch {
            page,
            got: 1,
            expected: 2,
        });
        assert!(matches!(
            e.as_storage(),
            Some(StorageError::ChecksumMismatch { .. })
        ));
        assert_eq!(
            e.to_string(),
            format!("checksum mismatch in {page}: stored 0x00000002, computed 0x00000001 (torn or corrupted page)")
        );
        let d = Error::from(DeviceError::NoSuchFile { file: 0x4000 });
        assert!(matches!(
            d,
            Error::Storage(StorageError::Device(DeviceError::NoSuchFile { .. }))
        ));
        assert_eq!(d.to_string(), "device file 0x00004000 does not exist");
        let t = Error::from(TxnError::Deadlock("cycle 3 → 4 → 3".into()));
        assert_eq!(t.to_string(), "deadlock detected: cycle 3 → 4 → 3");
        assert_eq!(Error::corrupted("x").to_string(), "corrupted x");
    }

    #[test]
    fn refused_settings_of_any_layer_are_invalid_config() {
        for e in [
            Error::from(DeviceError::InvalidConfig("bandwidth 0".into())),
            Error::from(StorageError::InvalidConfig("frames 0".into())),
        ] {
            assert!(matches!(e, Error::InvalidConfig(_)), "{e:?}");
            assert!(e.to_string().starts_with("invalid configuration: "));
        }
    }

    #[test]
    fn transaction_errors_carry_sqlstate_and_retry_class() {
        let cases = [
            (TxnError::Deadlock(String::new()), "40P01", true),
            (TxnError::SerializationFailure(String::new()), "40001", true),
            (
                TxnError::DuplicateKey {
                    index: "pk".into(),
                    key: "(1)".into(),
                },
                "23505",
                false,
            ),
            (
                TxnError::TooManyConcurrentTransactions(String::new()),
                "53000",
                false,
            ),
            (TxnError::TransactionClosed("aborted"), "25P02", false),
            (TxnError::InvalidRowVersion(String::new()), "2201H", false),
        ];
        for (e, state, retry) in cases {
            assert_eq!(e.sqlstate(), state, "{e}");
            let e = Error::from(e);
            assert_eq!(e.is_retryable(), retry, "{e}");
        }
        assert!(!Error::corrupted("x").is_retryable());
    }
}
