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
//! * [`postgresql`], [`mariadb`]: the targets, their load, their settle step (checkpoint /
//!   flush to zero dirty pages) and their counters;
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

pub mod loopdev;
pub mod managed;
pub mod mariadb;
pub mod postgresql;
pub mod schema;

use mvcclab_engine::wal::RecordTypeCounts;
use mvcclab_workload::driver::Target;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A real engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ServerKind {
    /// PostgreSQL 15.
    #[serde(rename = "postgresql")]
    PostgreSql,
    /// MariaDB 10.11 with InnoDB.
    #[serde(rename = "mariadb")]
    MariaDb,
}

impl ServerKind {
    /// Every kind.
    pub const ALL: [ServerKind; 2] = [ServerKind::PostgreSql, ServerKind::MariaDb];

    /// `real:postgresql` or `real:mariadb`: its name in `--designs` and in reports.
    pub fn design_name(self) -> String {
        format!("real:{}", self.name())
    }

    /// The kind modelled by preset `preset` (`postgres`, `innodb`).
    pub fn of_preset(preset: &str) -> Option<ServerKind> {
        ServerKind::ALL.into_iter().find(|k| k.preset() == preset)
    }

    /// `postgresql` or `mariadb`: the target name (`--target`, `real:NAME`).
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgresql",
            ServerKind::MariaDb => "mariadb",
        }
    }

    /// The mvcclab preset that models it.
    pub fn preset(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgres",
            ServerKind::MariaDb => "innodb",
        }
    }

    /// The Debian package that provides it.
    pub fn package(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgresql-15",
            ServerKind::MariaDb => "mariadb-server",
        }
    }

    /// The engine's page size in bytes (PostgreSQL BLCKSZ 8 KiB; innodb_page_size 16 KiB).
    pub fn page_size_bytes(self) -> u64 {
        match self {
            ServerKind::PostgreSql => 8192,
            ServerKind::MariaDb => 16384,
        }
    }

    /// The kind whose name (or URL scheme) is `s`: `postgresql`/`postgres`, or
    /// `mariadb`/`mysql`.
    pub fn parse(s: &str) -> Option<ServerKind> {
        match s {
            "postgresql" | "postgres" | "pg" => Some(ServerKind::PostgreSql),
            "mariadb" | "mysql" => Some(ServerKind::MariaDb),
            _ => None,
        }
    }

    /// The kind a URL is for, from its scheme (`postgresql://`, `postgres://`, `mysql://`,
    /// `mariadb://`).
    pub fn of_url(url: &str) -> Option<ServerKind> {
        ServerKind::parse(url.split("://").next()?)
    }
}

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

/// How to reach or start a server.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// An existing server to use (`postgresql://user@host:port/db`,
    /// `mysql://user:password@host:port/db`); `None` starts a managed one.
    pub url: Option<String>,
    /// How to start a managed one (buffer pool, folder, loop device).
    pub managed: managed::ManagedOptions,
}

/// What a report says of the server a run used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `postgresql` or `mariadb`.
    pub engine: String,
    /// The server's version string (`SELECT version()`).
    pub version: String,
    /// True when mvcclab started it (false with `--url`).
    pub managed: bool,
    /// `host:port` it was reached at.
    pub address: String,
    /// The settings that shape the measurement, as the server reports them (`SHOW`,
    /// `SHOW GLOBAL VARIABLES`): buffer pool, checkpoint and flush settings.
    pub settings: BTreeMap<String, String>,
    /// How the OS page cache stood: PostgreSQL reads through it, MariaDB bypasses it
    /// (O_DIRECT).
    pub page_cache: String,
    /// Whether device I/O was measured, and how (`exact: /dev/loopN ...`), or why not.
    pub device_io: String,
    /// The engine's own counters for the measured phase, under its own names: counts are
    /// `after − before`, state values (see `state_counters`) the `after` value.
    pub counters: BTreeMap<String, f64>,
    /// Names in `counters` that are state values, not deltas.
    pub state_counters: Vec<String>,
    /// Report fields (dotted paths) this server's counters cannot fill: they are 0 in the
    /// report and must not be read as measurements.
    pub not_measured: Vec<String>,
}

/// A snapshot of a server's counters, by the engine's own names.
pub type Snapshot = BTreeMap<String, f64>;

/// A real server as a workload target.
pub trait RealServer: Target {
    /// Which engine.
    fn kind(&self) -> ServerKind;

    /// The server as a workload target (for the driver).
    fn as_target(&self) -> &dyn Target;

    /// After the load and before the warm-up: a checkpoint (PostgreSQL `CHECKPOINT`; InnoDB
    /// flushed to zero dirty pages and purge caught up), then, with `drop_caches`, the OS
    /// page cache dropped (`sync`, `echo 3 > /proc/sys/vm/drop_caches`).
    ///
    /// Errors: [`ServerError::Sql`], [`ServerError::Timeout`] (InnoDB still has dirty
    /// pages after 10 min), [`ServerError::Io`] (drop_caches not writable: needs root).
    fn settle(&self, drop_caches: bool) -> Result<(), ServerError>;

    /// The counters now (and the loop device's, with exact device I/O). Waits for the
    /// workload's sessions to have reported their statistics first.
    ///
    /// Errors: [`ServerError::Sql`], [`ServerError::Counters`].
    fn snapshot(&self) -> Result<Snapshot, ServerError>;

    /// Whether counter `name` is a state value (reported as its `after` value).
    fn is_state(&self, name: &str) -> bool;

    /// The WAL records written between two snapshots, by record type in pg_waldump's
    /// `Rmgr/RECORD` names (`pg_waldump --stats=record` over a managed PostgreSQL's WAL);
    /// empty where the server has no such reader or its WAL is not on this machine.
    ///
    /// Errors: [`ServerError::Counters`] when the reader fails or prints what cannot be read.
    fn wal_by_record(
        &self,
        _before: &Snapshot,
        _after: &Snapshot,
    ) -> Result<BTreeMap<String, RecordTypeCounts>, ServerError> {
        Ok(BTreeMap::new())
    }

    /// The report's server section, without counters.
    fn info(&self) -> ServerInfo;
}

/// The measured phase's counters: `after − before` for counts, `after` for the state
/// values of `server`.
pub fn delta(server: &dyn RealServer, before: &Snapshot, after: &Snapshot) -> Snapshot {
    after
        .iter()
        .map(|(k, a)| {
            let v = if server.is_state(k) {
                *a
            } else {
                a - before.get(k).copied().unwrap_or(0.0)
            };
            (k.clone(), v)
        })
        .collect()
}

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
                    ServerKind::MariaDb => "mysql",
                }
            )));
        }
    }
    Ok(match kind {
        ServerKind::PostgreSql => Box::new(postgresql::PostgreSql::open(o)?),
        ServerKind::MariaDb => Box::new(mariadb::MariaDb::open(o)?),
    })
}

/// Drops the OS page cache: `sync`, then `3` into `/proc/sys/vm/drop_caches`.
///
/// Errors: [`ServerError::Io`] naming the file when it is not writable (not root, or a
/// read-only /proc in a container).
pub fn drop_os_page_cache() -> Result<(), ServerError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        ServerError::io(
            "--drop-caches: writing /proc/sys/vm/drop_caches (needs root)",
            e,
        )
    })
}

/// Device counters of a managed server's loop device, after syncing its file system, as
/// `device.*` snapshot entries (sectors are 512 bytes).
pub(crate) fn device_snapshot(
    m: Option<&managed::ManagedServer>,
    out: &mut Snapshot,
) -> Result<(), ServerError> {
    if let Some(l) = m.and_then(|m| m.loop_device()) {
        l.sync()?;
        let s = l.stat()?;
        out.insert("device.read_ios".into(), s.read_ios as f64);
        out.insert("device.read_sectors".into(), s.read_sectors as f64);
        out.insert("device.write_ios".into(), s.write_ios as f64);
        out.insert("device.write_sectors".into(), s.write_sectors as f64);
        out.insert("device.flush_ios".into(), s.flush_ios as f64);
    }
    Ok(())
}

/// Rows per multi-row INSERT of the load.
const LOAD_BATCH_ROWS: u32 = 1000;

/// Loads sysbench's tables as oltp_common.lua's `create_table` does: for each table, drop
/// it if present, create it, insert `opts.prepare_rows(kind)` rows (the embedded load's
/// rows: same generator, same seed) in multi-row INSERTs, create the `k` index, then run
/// the statements `after(n)` returns, in order (the engine's statistics statements). `exec`
/// runs one statement.
///
/// Errors: the first failing statement's [`ServerError`], as text.
pub(crate) fn load_sbtest(
    d: mvcclab_workload::sql::Dialect,
    kind: mvcclab_workload::sysbench::WorkloadKind,
    opts: &mvcclab_workload::sysbench::SysbenchOptions,
    seed: u64,
    exec: &dyn Fn(&str) -> Result<(), ServerError>,
    after: &dyn Fn(u32) -> Vec<String>,
) -> Result<(), String> {
    use mvcclab_workload::sql;
    let rows = opts.prepare_rows(kind);
    let run = |q: &str| exec(q).map_err(|e| e.to_string());
    for n in 1..=opts.tables {
        run(&format!("DROP TABLE IF EXISTS sbtest{n}"))?;
        run(&sql::create_table(d, n, opts.auto_inc))?;
        let mut rng = mvcclab_workload::rand::SbRand::new(seed, 0x10000 + n, opts.rand.clone());
        let mut id = 1;
        while id <= rows {
            let last = (id + LOAD_BATCH_ROWS - 1).min(rows);
            let batch: Vec<_> = (id..=last)
                .map(|i| mvcclab_workload::sysbench::load_row(&mut rng, opts, i))
                .collect();
            run(&sql::bulk_insert(n, opts.auto_inc, &batch))?;
            id = last + 1;
        }
        run(&sql::create_secondary_index(n))?;
        for q in after(n) {
            run(&q)?;
        }
    }
    Ok(())
}

/// The `device_io` sentence of a report.
pub(crate) fn device_io_text(m: Option<&managed::ManagedServer>) -> String {
    match m.and_then(|m| m.loop_device()) {
        Some(l) => format!(
            "exact: {} (ext4, own loop device), /sys/block stat counters; the file system is synced before each reading",
            l.device().display()
        ),
        None => "not measured: engine counters only (run as root with --exact-device-io for a loop device of the server's own)".into(),
    }
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
