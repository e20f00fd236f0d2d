//! Which real engine: PostgreSQL 15 or MariaDB 10.11, by name and by URL scheme.

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
