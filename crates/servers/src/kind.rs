//! Which real engine: PostgreSQL 15, MariaDB 10.11 with InnoDB, or MariaDB 10.11 with
//! MyRocks (RocksDB, Debian's `mariadb-plugin-rocksdb`), by name and by URL scheme.

use serde::{Deserialize, Serialize};

/// A real engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ServerKind {
    /// PostgreSQL 15.
    #[serde(rename = "postgresql")]
    PostgreSql,
    /// MariaDB 10.11 with InnoDB.
    #[serde(rename = "mariadb")]
    MariaDb,
    /// MariaDB 10.11 with MyRocks: the same server started with
    /// `--plugin-load-add=ha_rocksdb.so`, the workload's tables `ENGINE=ROCKSDB`.
    #[serde(rename = "myrocks")]
    MyRocks,
}

impl ServerKind {
    /// Every kind.
    pub const ALL: [ServerKind; 3] = [
        ServerKind::PostgreSql,
        ServerKind::MariaDb,
        ServerKind::MyRocks,
    ];

    /// `real:postgresql` or `real:mariadb`: its name in `--designs` and in reports.
    pub fn design_name(self) -> String {
        format!("real:{}", self.name())
    }

    /// The kind modelled by preset `preset` (`postgres`, `innodb`).
    pub fn of_preset(preset: &str) -> Option<ServerKind> {
        ServerKind::ALL
            .into_iter()
            .find(|k| k.preset() == Some(preset))
    }

    /// `postgresql` or `mariadb`: the target name (`--target`, `real:NAME`).
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgresql",
            ServerKind::MariaDb => "mariadb",
            ServerKind::MyRocks => "myrocks",
        }
    }

    /// The mvcclab preset that models it; MyRocks has none yet (an LSM tree is a later
    /// design, shared/DESIGN.md).
    pub fn preset(self) -> Option<&'static str> {
        match self {
            ServerKind::PostgreSql => Some("postgres"),
            ServerKind::MariaDb => Some("innodb"),
            ServerKind::MyRocks => None,
        }
    }

    /// Whether the server is MariaDB (with InnoDB or MyRocks tables).
    pub fn is_mariadb(self) -> bool {
        matches!(self, ServerKind::MariaDb | ServerKind::MyRocks)
    }

    /// The Debian package that provides it.
    pub fn package(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "postgresql-15",
            ServerKind::MariaDb => "mariadb-server",
            ServerKind::MyRocks => "mariadb-plugin-rocksdb",
        }
    }

    /// The engine's page size in bytes (PostgreSQL BLCKSZ 8 KiB; innodb_page_size 16 KiB;
    /// MyRocks: its data block, `rocksdb_block_size`, 4 KiB by default).
    pub fn page_size_bytes(self) -> u64 {
        match self {
            ServerKind::PostgreSql => 8192,
            ServerKind::MariaDb => 16384,
            ServerKind::MyRocks => 4096,
        }
    }

    /// The kind whose name (or URL scheme) is `s`: `postgresql`/`postgres`,
    /// `mariadb`/`mysql`, or `myrocks` (a name only: a `mysql://` URL is MariaDB's).
    pub fn parse(s: &str) -> Option<ServerKind> {
        match s {
            "postgresql" | "postgres" | "pg" => Some(ServerKind::PostgreSql),
            "mariadb" | "mysql" => Some(ServerKind::MariaDb),
            "myrocks" => Some(ServerKind::MyRocks),
            _ => None,
        }
    }

    /// The kind a URL is for, from its scheme (`postgresql://`, `postgres://`, `mysql://`,
    /// `mariadb://`).
    pub fn of_url(url: &str) -> Option<ServerKind> {
        ServerKind::parse(url.split("://").next()?).filter(|k| *k != ServerKind::MyRocks)
    }
}
