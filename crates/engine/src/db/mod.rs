//! The engine API every design implements: open a database with a design, create tables
//! and indexes, and run transactions of single-row and range operations from many threads.
//!
//! [`Database`] owns the storage and one [`Engine`] (the design: `postgres` now, `innodb`
//! next). A [`Transaction`] wraps the engine's transaction: any error of an operation aborts
//! it (as PostgreSQL puts a transaction in the failed state, and mvcclab then rolls it back),
//! after which every call returns [`TxnError::TransactionClosed`](crate::error::TxnError::TransactionClosed); dropping an open transaction
//! aborts it.
//!
//! Each operation runs under a foreground cause (`point_select` for `get` and
//! `get_by_index`, `range_scan`, `insert`, `update`, `delete`, `commit`, `abort`), so its
//! I/O is attributed without the caller doing anything.
//!
//! With the design switch `system_versioning=timestamp`, every table is system-versioned
//! ([`versioning`]): history rows beside the current ones, `FOR SYSTEM_TIME` reads through
//! the `*_system_time` methods of [`Transaction`], `DELETE HISTORY`.
//!
//! # Locking
//! The engine's own; `Database` adds none.
//!
//! # Crash safety
//! Every DDL logs the whole catalog (table definitions and their relation files) in a
//! CATALOG WAL record, flushed before it returns, and every checkpoint record carries a
//! copy; `Database::open` runs crash recovery (the `recovery` module) and reopens the
//! tables from the newest catalog.

mod database;
mod engine;
pub mod history_partitions;
mod transaction;
pub mod versioning;

pub use crate::access::{Assign, EngineCounters, GcReport, TableId, TableRelations};
pub use database::{Database, DatabaseConfig};
pub use engine::{DesignEngine, Engine, EngineTxn};
pub use transaction::Transaction;
pub use versioning::{system_time_now_us, SystemTime};

/// The `postgres` preset's engine: the heap access method ([`crate::heap::HeapAm`]).
pub type PostgresEngine = DesignEngine<crate::heap::HeapAm>;
/// The `innodb` preset's engine: the clustered access method
/// ([`crate::clustered::ClusteredAm`]).
pub type InnodbEngine = DesignEngine<crate::clustered::ClusteredAm>;
