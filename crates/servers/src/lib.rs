//! Real PostgreSQL 15 and MariaDB 10.11 servers as targets of mvcclab's workloads, beside
//! the embedded engine: the same operation stream (same seed, same statements as sysbench
//! sends them, through the `postgres` and `mysql` crates with prepared statements), and the
//! servers' own counters read before and after the measured phase.
//!
//! This is the one crate that links the client libraries (redb's `redb-bench-compare`
//! habit: the engines a project is compared with are linked in one place only).
//!
//! * [`managed`]: servers mvcclab starts itself, on 127.0.0.1 and a free port, stopped by
//!   their process id;
//! * [`loopdev`]: a loop device per server for exact device I/O (`--exact-device-io`);
//! * [`file_class`]: a server's files on the FUSE device (crates/devfs) named by what they
//!   hold, for the report's `by_file_class`;
//! * [`postgresql`], [`mariadb`]: the targets, their load, their settle step (checkpoint /
//!   flush to zero dirty pages) and their counters;
//! * [`cpu`]: CPU time, page faults and context switches of a server's process tree
//!   from /proc, exited children included;
//! * [`perf_stat`]: `perf stat` over a cgroup v2 group of a server's processes (software
//!   events and the page-cache read tracepoint), as seed 002 measured;
//! * [`storm`]: seed 002's connection storm, an async raw-protocol client for PostgreSQL
//!   and MariaDB; [`pgbouncer`]: PgBouncer in front of a managed PostgreSQL;
//! * [`tpch`]: TPC-H loaded on a managed server (COPY / LOAD DATA), its 22 queries with
//!   a statement timeout, and their EXPLAIN JSON;
//! * [`schema`]: the counters put into the result schema's fields where the meaning is the
//!   same.
//!
//! # Invariants
//! 1. A counter snapshot names every value by the engine's own view and column
//!    (`pg_stat_wal.wal_bytes`, `global_status.Innodb_pages_written`,
//!    `innodb_metrics.trx_rseg_history_len`, `device.write_sectors`).
//! 2. A measured phase's figures are `after − before` for counts, and the `after` value for
//!    the state values that [`RealServer::is_state`] names (live/dead tuples, history list
//!    length, dirty pages, relation sizes).
//! 3. A schema field a server's counters cannot fill stays 0 and is listed in
//!    [`ServerInfo::not_measured`], so no 0 is mistaken for a measurement.
//!
//! # Locking
//! Each target holds one admin connection behind a mutex (counters, checkpoint); each
//! driver thread has its own session connection. No lock is held across a workload
//! statement.
//!
//! # Crash safety
//! Managed servers work in scratch folders: nothing here must survive a crash. If mvcclab
//! dies, the kernel stops its servers (parent-death signal, see [`managed`]).
#![warn(missing_docs)]

/// The workload's numbered tables as a regular-expression alternation over a table's
/// name: sysbench's `sbtestN` and sysbench-tpcc's nine tables with their set number. One
/// list for both servers' queries (postgresql.rs `TABLES`, mariadb.rs `WORKLOAD_TABLES`),
/// each adding its own suffixes and the hot-set experiment's table.
macro_rules! workload_table_names {
    () => {
        "(sbtest|warehouse|district|customer|history|orders|new_orders|order_line|stock|item)[0-9]+"
    };
}

pub mod cpu;
pub mod file_class;
pub mod loopdev;
pub mod managed;
pub mod mariadb;
pub mod perf_stat;
pub mod pgbouncer;
pub mod postgresql;
pub mod schema;
pub mod storm;
pub mod tpch;

mod error;
mod kind;
mod load;
mod server;

pub use error::ServerError;
pub use kind::ServerKind;
pub use load::drop_os_page_cache;
pub(crate) use load::{device_io_text, device_snapshot, load_sbtest, tpcc_tables};
pub use managed::PageCacheScope;
pub use server::{delta, RealServer, ServerInfo, ServerOptions, Snapshot};

/// Opens the target for `kind`: connects to `o.url`, or starts a managed server.
///
/// Errors: [`ServerError`] from start-up or connection; [`ServerError::Usage`] for a URL of
/// the other engine.
pub fn open(kind: ServerKind, o: &ServerOptions) -> Result<Box<dyn RealServer>, ServerError> {
    if let Some(url) = &o.url {
        if ServerKind::of_url(url) != Some(kind) {
            return Err(ServerError::Usage(format!(
                "--url '{url}' is not a {} URL (expected {}://...)",
                kind.name(),
                match kind {
                    ServerKind::PostgreSql => "postgresql",
                    ServerKind::MariaDb | ServerKind::MyRocks => "mysql",
                }
            )));
        }
    }
    Ok(match kind {
        ServerKind::PostgreSql => Box::new(postgresql::PostgreSql::open(o)?),
        ServerKind::MariaDb | ServerKind::MyRocks => Box::new(mariadb::MariaDb::open(kind, o)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_from_names_and_urls() {
        assert_eq!(
            ServerKind::parse("postgresql"),
            Some(ServerKind::PostgreSql)
        );
        assert_eq!(ServerKind::parse("mariadb"), Some(ServerKind::MariaDb));
        assert_eq!(ServerKind::parse("oracle"), None);
        assert_eq!(
            ServerKind::of_url("postgres://u@127.0.0.1:5432/db"),
            Some(ServerKind::PostgreSql)
        );
        assert_eq!(
            ServerKind::of_url("mysql://root@h/db"),
            Some(ServerKind::MariaDb)
        );
        assert_eq!(ServerKind::of_url("no-scheme"), None);
    }
}
