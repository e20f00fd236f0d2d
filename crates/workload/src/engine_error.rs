//! The engine's errors as the driver sees them: each in the dialect of the real engine its
//! design models, with that engine's code, so that sysbench's rules for that engine's
//! driver decide which are ignored (driver.rs). Used by the embedded targets of sysbench's
//! scripts (embedded.rs) and of TPC-C (tpcc_embedded.rs).

use crate::driver::{ErrorCode, OpError};
use crate::sql::Dialect;
use mvcclab_engine::db::Database;
use mvcclab_engine::Error;

/// The dialect of the engine a design models, whose sysbench driver decides which errors
/// are ignored: PostgreSQL for heap tables, MariaDB for clustered ones (as the presets).
pub fn dialect_of(db: &Database) -> Dialect {
    match db.design().table_layout {
        mvcclab_engine::design::TableLayout::Heap => Dialect::PostgreSql,
        _ => Dialect::MySql,
    }
}

/// An engine error as the real engine of dialect `d` reports it: a transaction error with
/// that engine's code ([`mvcclab_engine::mvcc::TxnError::sqlstate`], `mariadb_errno`),
/// any other (storage, catalog, value) without a code, of kind [`crate::driver::ErrorKind::Other`].
pub fn engine_error(e: &Error, d: Dialect) -> OpError {
    let code = e.as_txn().and_then(|t| match d {
        Dialect::PostgreSql => Some(ErrorCode::SqlState(t.sqlstate().into())),
        Dialect::MySql => t.mariadb_errno().map(ErrorCode::MariaDb),
    });
    match code {
        Some(c) => OpError::coded(c, e.to_string()),
        None => OpError::other(e.to_string()),
    }
}
