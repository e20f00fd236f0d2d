//! The errors of concurrency control: what a transaction runs into because of other
//! transactions or its own state, as opposed to a failure of the storage below it
//! ([`crate::page::StorageError`]). Each has the SQLSTATE PostgreSQL gives it
//! (src/backend/utils/errcodes.txt) and the MariaDB error it corresponds to, so that a
//! client (the workload driver, a wire-protocol server) can decide whether to retry: the
//! transaction-rollback class 40 is retried from the transaction's start.

/// A transaction's outcome that is not a storage failure: a conflict with another
/// transaction, a constraint it violated, or its own state.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TxnError {
    /// A unique index (or primary key) already holds the key
    /// (PostgreSQL SQLSTATE 23505 unique_violation; MariaDB ER_DUP_ENTRY 1062).
    #[error("duplicate key value violates unique constraint \"{index}\": key {key}")]
    DuplicateKey {
        /// Index (or primary key) name.
        index: String,
        /// The key, rendered for people.
        key: String,
    },
    /// A concurrent update made the transaction's snapshot unusable
    /// (PostgreSQL SQLSTATE 40001 "could not serialize access due to concurrent update";
    /// MariaDB ER_CHECKREAD 1020 "Record has changed since last read").
    #[error("could not serialize access due to concurrent update ({0})")]
    SerializationFailure(String),
    /// The transaction was chosen as the victim of a deadlock (PostgreSQL SQLSTATE 40P01;
    /// MariaDB ER_LOCK_DEADLOCK 1213).
    #[error("deadlock detected: {0}")]
    Deadlock(String),
    /// A rollback segment has no free undo slot for another transaction's undo segment
    /// (InnoDB DB_TOO_MANY_CONCURRENT_TRXS, trx0undo.cc `trx_undo_seg_create`; MariaDB
    /// ER_TOO_MANY_CONCURRENT_TRXS 1637). SQLSTATE 53000 insufficient_resources.
    #[error("too many concurrent transactions: {0}")]
    TooManyConcurrentTransactions(String),
    /// An UPDATE or DELETE of a system-versioned row whose period starts after the
    /// transaction did (the periods extension's "invalid row version", periods.c
    /// `write_history`; SQL:2016 15.13 GR 9)a)iii)1)): PostgreSQL SQLSTATE 2201H
    /// invalid_row_version, "The transaction might succeed if retried".
    #[error("invalid row version: {0}")]
    InvalidRowVersion(String),
    /// The transaction can no longer be used (aborted, or already committed): PostgreSQL
    /// SQLSTATE 25P02 in_failed_sql_transaction.
    #[error("transaction is {0}; start a new one")]
    TransactionClosed(&'static str),
}

impl TxnError {
    /// The five-character SQLSTATE PostgreSQL reports for this error (errcodes.txt).
    pub fn sqlstate(&self) -> &'static str {
        match self {
            TxnError::DuplicateKey { .. } => "23505",
            TxnError::SerializationFailure(_) => "40001",
            TxnError::Deadlock(_) => "40P01",
            TxnError::TooManyConcurrentTransactions(_) => "53000",
            TxnError::TransactionClosed(_) => "25P02",
            TxnError::InvalidRowVersion(_) => "2201H",
        }
    }

    /// The MariaDB error number of the same failure (include/mysqld_error.h), `None` for
    /// [`TxnError::TransactionClosed`], which has none (MariaDB rolls a failed
    /// transaction back and goes on in autocommit), and for
    /// [`TxnError::InvalidRowVersion`], the periods extension's error, which only a heap
    /// design's history table raises (MariaDB versions a row in place and has no such
    /// refusal).
    pub fn mariadb_errno(&self) -> Option<u16> {
        match self {
            TxnError::DuplicateKey { .. } => Some(1062),
            TxnError::SerializationFailure(_) => Some(1020),
            TxnError::Deadlock(_) => Some(1213),
            TxnError::TooManyConcurrentTransactions(_) => Some(1637),
            TxnError::TransactionClosed(_) | TxnError::InvalidRowVersion(_) => None,
        }
    }

    /// Whether the transaction should be retried from its start: the transaction-rollback
    /// class (SQLSTATE class 40: deadlock, serialization failure), which is what a benchmark
    /// driver counts as an ignored error and retries.
    pub fn is_retryable(&self) -> bool {
        self.sqlstate().starts_with("40")
    }
}
