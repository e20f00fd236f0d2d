//! What can go wrong with a real server: starting it, reaching it, its SQL, its counters.

use crate::kind::ServerKind;

/// Errors of the real-server targets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A program or system user of a server package is missing.
    #[error(
        "{program} not found: install it with `apt-get install -y {package}` (README, Set-up)"
    )]
    NotInstalled {
        /// What is missing.
        program: String,
        /// The Debian package that provides it.
        package: String,
    },
    /// A server (or its set-up program) did not start.
    #[error("{server} did not start: {detail}")]
    Start {
        /// Which program.
        server: String,
        /// Why, with the tail of its log.
        detail: String,
    },
    /// A statement of mvcclab's own (load, counters, checkpoint) failed.
    #[error("{server}: `{sql}` failed: {message}")]
    Sql {
        /// Which server.
        server: String,
        /// The statement (shortened).
        sql: String,
        /// The server's message.
        message: String,
    },
    /// Connecting failed.
    #[error("cannot connect to {server} at {address}: {message}")]
    Connect {
        /// Which server.
        server: String,
        /// Where.
        address: String,
        /// The client library's message.
        message: String,
    },
    /// A bad `--url` or option.
    #[error("{0}")]
    Usage(String),
    /// The loop device for exact device I/O.
    #[error("loop device: {0}")]
    Device(String),
    /// The FUSE device (crates/devfs): mounting, unmounting.
    #[error("FUSE device: {0}")]
    Fuse(String),
    /// A counter that could not be read or parsed.
    #[error("counters: {0}")]
    Counters(String),
    /// A waiting step (flush, purge) did not finish in time.
    #[error("{0}")]
    Timeout(String),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl ServerError {
    /// An [`ServerError::Io`] with its context.
    pub fn io(context: &str, source: std::io::Error) -> ServerError {
        ServerError::Io {
            context: context.to_string(),
            source,
        }
    }

    pub(crate) fn sql(
        server: ServerKind,
        sql: &str,
        message: impl std::fmt::Display,
    ) -> ServerError {
        let mut s: String = sql.chars().take(120).collect();
        if s.len() < sql.len() {
            s.push_str(" ...");
        }
        ServerError::Sql {
            server: server.name().to_string(),
            sql: s,
            message: message.to_string(),
        }
    }
}
