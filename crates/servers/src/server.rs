//! A real server as a workload target: how it is reached or started, what a report says of
//! it, and its counter snapshots (see the crate doc's invariants).

use crate::error::ServerError;
use crate::kind::ServerKind;
use crate::managed;
use mvcclab_devfs::DevMount;
use mvcclab_engine::wal::RecordTypeCounts;
use mvcclab_workload::driver::Target;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How to reach or start a server.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// An existing server to use (`postgresql://user@host:port/db`,
    /// `mysql://user:password@host:port/db`); `None` starts a managed one.
    pub url: Option<String>,
    /// How to start a managed one (buffer pool, folder, loop device).
    pub managed: managed::ManagedOptions,
    /// `--fillfactor`: PostgreSQL's heap and B-tree `fillfactor` of every table and index
    /// the load creates; MariaDB's global `innodb_fill_factor` (sorted index builds only,
    /// not the same knob). `None` leaves the server's defaults (100 and 90 for
    /// PostgreSQL's heap and B-tree, 100 for innodb_fill_factor).
    pub fillfactor: Option<u8>,
}

/// What a report says of the server a run used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `postgresql`, `mariadb` or `myrocks`.
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
    /// Whether the block device under a managed server's data directory says it is
    /// rotational (`/sys/dev/block/MAJOR:MINOR/queue/rotational`, of the whole disk for a
    /// partition): MariaDB flushes a page's dirty neighbours only on rotational storage
    /// (buf0flu.cc `buf_flush_try_neighbors`). `None` when there is no block device (the
    /// FUSE device in file-system mode) or the server is not managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
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

    /// The counters now, without waiting for anything: the same names as
    /// [`RealServer::snapshot`], read while the workload runs, once per interval of a time
    /// series. The server's own reporting delay applies (PostgreSQL backends flush their
    /// statistics at most once a second, pgstat.c `PGSTAT_MIN_INTERVAL`); InnoDB's status
    /// variables are live. By default the full snapshot, which waits for nothing on
    /// MariaDB.
    ///
    /// Errors: as [`RealServer::snapshot`].
    fn sample(&self) -> Result<Snapshot, ServerError> {
        self.snapshot()
    }

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

    /// The server mvcclab started (`None` with `--url`).
    fn managed(&self) -> Option<&managed::ManagedServer> {
        None
    }

    /// The server mvcclab started, to stop it and save its data directory
    /// ([`managed::ManagedServer::save_data`]); `None` with `--url`.
    fn managed_mut(&mut self) -> Option<&mut managed::ManagedServer> {
        None
    }

    /// The FUSE device its data directory lives on (a managed server started with
    /// `ManagedOptions::device`), whose counts the report's `io` section takes.
    fn device(&self) -> Option<&DevMount> {
        self.managed().and_then(|m| m.device())
    }

    /// The class of each of `paths` (relative to the device's root; `file_class` module
    /// doc), for the report's `by_file_class`. By default every file is `other`.
    ///
    /// Errors: [`ServerError::Sql`] when the catalog that names the files cannot be read.
    fn file_classes(&self, paths: &[&str]) -> Result<BTreeMap<String, String>, ServerError> {
        Ok(paths
            .iter()
            .map(|p| (p.to_string(), "other".into()))
            .collect())
    }

    /// What each InnoDB index id names, for the device's page counts by index
    /// (`mvcclab_devfs::DeviceCounts::innodb_pages`): `table/index` (as
    /// `INNODB_SYS_TABLES.NAME` and `INNODB_SYS_INDEXES.NAME`) and its class, `table` for
    /// the clustered index of a workload table (`PRIMARY` or `GEN_CLUST_INDEX`), `index`
    /// for its other indexes, `system` for the rest. Empty for a server without InnoDB.
    ///
    /// Errors: [`ServerError::Sql`] when the dictionary views cannot be read.
    fn innodb_indexes(&self) -> Result<BTreeMap<u64, (String, &'static str)>, ServerError> {
        Ok(BTreeMap::new())
    }

    /// The file class that holds its write-ahead log (`pg_wal`, `ib_logfile0`).
    fn wal_file_class(&self) -> &'static str;

    /// `tpcc_check.lua`'s consistency checks 1–4 on the TPC-C tables of `opts` (its
    /// `--tables` and size), with the script's queries, on the admin connection
    /// ([`mvcclab_workload::tpcc_sql::check`]).
    ///
    /// Errors: [`ServerError::Sql`] for a failing query.
    fn tpcc_check(
        &self,
        opts: &mvcclab_workload::sysbench::SysbenchOptions,
    ) -> Result<Vec<mvcclab_workload::tpcc_embedded::CheckOutcome>, ServerError>;

    /// Runs one SQL statement on the admin connection, outside any transaction block (an
    /// experiment's own table, its load and its autocommit statements, a setting);
    /// returns the rows it changed (`UPDATE`: rows matched on PostgreSQL, rows changed on
    /// MariaDB).
    ///
    /// Errors: [`ServerError::Sql`] naming the statement.
    fn execute_sql(&self, sql: &str) -> Result<u64, ServerError>;

    /// A manual garbage collection of `table` with the server's own means: PostgreSQL
    /// `VACUUM` (vacuum.c; on-access pruning needs no command), InnoDB purge waited for to
    /// the end of the history list (purge runs in the background whatever is set; MariaDB
    /// KB "InnoDB Purge").
    ///
    /// Errors: [`ServerError::Sql`]; [`ServerError::Timeout`] when purge does not catch up.
    fn collect_garbage(&self, table: &str) -> Result<(), ServerError>;
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
