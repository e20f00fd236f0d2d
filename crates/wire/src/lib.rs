//! mvcclab's PostgreSQL wire-protocol server: real clients (psql, sysbench's pgsql driver,
//! pgbench) drive a design of the engine.
//!
//! Layers, top to bottom: [`server`] (the listener and the connection models: thread per
//! connection, pool of threads), [`handler`] (pgwire: startup, simple and extended query
//! protocols, COPY, result encoding), [`session`] (a client's transaction block and the
//! execution of plans on the engine), [`plan`] (SQL matched by shape onto the engine's
//! typed operations), [`catalog`] (SQL names to engine tables), [`operand`] (literals and parameters),
//! [`error`] (SQLSTATEs).
//!
//! The protocol comes from `pgwire` (server API only, no TLS), the SQL syntax from
//! `sqlparser`; what runs is the engine API (`mvcclab_engine::db`): `get`, `scan`,
//! `get_by_index`, `insert`, `update`, `delete`, never a general executor. Anything else
//! gets SQLSTATE 0A000 naming what is unsupported, and the connection stays usable.
#![deny(unsafe_code)]
// Unsafe only in cpu.rs (getrusage), each block with its Safety comment.
#![warn(missing_docs)]

pub mod catalog;
pub mod cpu;
pub mod error;
pub mod handler;
pub mod operand;
pub mod plan;
pub mod server;
pub mod session;

pub use catalog::Catalog;
pub use error::SqlError;
pub use server::{serve, ConnectionModel, Server};
