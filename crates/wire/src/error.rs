//! Errors as the client sees them: a SQLSTATE and a message (PostgreSQL's errcodes.txt).

use mvcclab_engine::Error;
use pgwire::error::{ErrorInfo, PgWireError};

/// An error response: SQLSTATE and message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct SqlError {
    /// The five-character SQLSTATE.
    pub code: &'static str,
    /// The message.
    pub message: String,
}

impl SqlError {
    /// An error with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
        }
    }

    /// The ErrorResponse fields (severity ERROR).
    pub fn info(&self) -> ErrorInfo {
        ErrorInfo::new("ERROR".into(), self.code.into(), self.message.clone())
    }
}

impl From<SqlError> for PgWireError {
    fn from(e: SqlError) -> Self {
        PgWireError::UserError(Box::new(e.info()))
    }
}

/// An engine error with its SQLSTATE: a transaction error's own
/// ([`mvcclab_engine::error::TxnError::sqlstate`]: 40P01, 40001, 23505 …); 22000 for a
/// value that does not fit its column, 54000 for a row too large, 42P16 for a catalog
/// error, 22023 for a configuration value, 58030 (io_error) for the storage below.
pub fn engine_error(e: Error) -> SqlError {
    let code = match &e {
        Error::Txn(t) => t.sqlstate(),
        Error::InvalidValue(_) => "22000",
        Error::TooLarge { .. } => "54000",
        Error::Catalog(_) => "42P16",
        Error::InvalidConfig(_) => "22023",
        _ => "58030",
    };
    SqlError::new(code, e.to_string())
}
