//! The design space: every MVCC design decision as a switch, and the presets that choose a
//! value for each (shared/DESIGN.md, "The design space").
//!
//! | switch | values | `postgres` | `innodb` |
//! |---|---|---|---|
//! | page_size | 8k, 16k | 8k | 16k |
//! | table_layout | heap, clustered | heap | clustered |
//! | version_storage | append_o2n, append_n2o, undo_delta, time_travel | append_o2n | undo_delta |
//! | garbage_collection | vacuum, purge, off | vacuum | purge |
//! | index_pointers | physical, logical | physical | logical |
//! | hot_updates | on, off | on | off (n/a) |
//! | fillfactor | 10–100 (%) | 100 | 94 (15/16 leaf fill) |
//! | torn_page_protection | full_page_writes, doublewrite, none | full_page_writes | doublewrite |
//! | buffer_replacement | clock_sweep, lru_midpoint | clock_sweep | lru_midpoint |
//! | os_page_cache | on, off | on | off (O_DIRECT) |
//! | default_isolation | read_committed, repeatable_read | read_committed | repeatable_read |
//!
//! A combination that cannot exist is refused with an error naming both switches
//! ([`DesignConfig::validate`]); a combination that could exist but is not built yet is
//! refused by `Database::open` naming the switch.

use crate::error::{Error, Result};
use crate::mvcc::Isolation;
use crate::page::PageSize;
use crate::storage::TornPageProtection;
use serde::{Deserialize, Serialize};

/// Where a table's rows live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableLayout {
    /// An unordered heap of pages; indexes point into it (PostgreSQL).
    Heap,
    /// Rows in the leaves of the primary-key B+tree (InnoDB).
    Clustered,
}

/// How old versions are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionStorage {
    /// Append-only, chains from the oldest to the newest version (PostgreSQL).
    AppendO2n,
    /// Append-only, chains from the newest to the oldest.
    AppendN2o,
    /// In-place update with the old values in an undo log (InnoDB).
    UndoDelta,
    /// Old versions moved to a history store.
    TimeTravel,
}

/// How garbage (versions no one can see) is removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GarbageCollection {
    /// VACUUM and autovacuum, with on-access page pruning (PostgreSQL).
    Vacuum,
    /// Purge of the undo log (InnoDB).
    Purge,
    /// None (for experiments such as `version_chain`).
    Off,
}

/// What secondary index entries point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexPointers {
    /// The physical tuple id (PostgreSQL ctid).
    Physical,
    /// The primary key (InnoDB).
    Logical,
}

/// Buffer replacement policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferReplacement {
    /// PostgreSQL's clock sweep.
    ClockSweep,
    /// InnoDB's LRU with midpoint insertion.
    LruMidpoint,
}

/// One value per switch. Serialized with the switch names of the module table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DesignConfig {
    /// Preset name or a user's label.
    pub name: String,
    /// Page size.
    pub page_size: PageSize,
    /// Table layout.
    pub table_layout: TableLayout,
    /// Version storage.
    pub version_storage: VersionStorage,
    /// Garbage collection.
    pub garbage_collection: GarbageCollection,
    /// Index pointers.
    pub index_pointers: IndexPointers,
    /// HOT updates (heap only).
    pub hot_updates: bool,
    /// Fill factor of inserts in percent (10..=100).
    pub fillfactor: u8,
    /// Torn-page protection.
    pub torn_page_protection: TornPageProtection,
    /// Buffer replacement policy.
    pub buffer_replacement: BufferReplacement,
    /// Emulate an OS page cache below the buffer pool.
    pub os_page_cache: bool,
    /// Isolation level of `Database::begin`.
    pub default_isolation: Isolation,
}

impl DesignConfig {
    /// The `postgres` preset (PostgreSQL 15 defaults).
    pub fn postgres() -> Self {
        DesignConfig {
            name: "postgres".into(),
            page_size: PageSize::K8,
            table_layout: TableLayout::Heap,
            version_storage: VersionStorage::AppendO2n,
            garbage_collection: GarbageCollection::Vacuum,
            index_pointers: IndexPointers::Physical,
            hot_updates: true,
            fillfactor: 100,
            torn_page_protection: TornPageProtection::FullPageWrites,
            buffer_replacement: BufferReplacement::ClockSweep,
            os_page_cache: true,
            default_isolation: Isolation::ReadCommitted,
        }
    }

    /// The `innodb` preset (MariaDB 10.11 defaults).
    pub fn innodb() -> Self {
        DesignConfig {
            name: "innodb".into(),
            page_size: PageSize::K16,
            table_layout: TableLayout::Clustered,
            version_storage: VersionStorage::UndoDelta,
            garbage_collection: GarbageCollection::Purge,
            index_pointers: IndexPointers::Logical,
            hot_updates: false,
            fillfactor: 94,
            torn_page_protection: TornPageProtection::Doublewrite,
            buffer_replacement: BufferReplacement::LruMidpoint,
            os_page_cache: false,
            default_isolation: Isolation::RepeatableRead,
        }
    }

    /// A preset by name.
    ///
    /// Errors: [`Error::InvalidConfig`] listing the presets.
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "postgres" => Ok(Self::postgres()),
            "innodb" => Ok(Self::innodb()),
            _ => Err(Error::InvalidConfig(format!(
                "unknown design '{name}'; presets are postgres and innodb"
            ))),
        }
    }

    /// Refuses combinations that cannot exist, naming both switches.
    ///
    /// Errors: [`Error::InvalidConfig`].
    pub fn validate(&self) -> Result<()> {
        let bad = |a: &str, b: &str, why: &str| {
            Err(Error::InvalidConfig(format!(
                "switches {a} and {b} cannot be combined: {why}"
            )))
        };
        if self.table_layout == TableLayout::Clustered
            && self.index_pointers == IndexPointers::Physical
        {
            return bad(
                "table_layout=clustered",
                "index_pointers=physical",
                "rows of a clustered table move when leaves split, so indexes must point by primary key",
            );
        }
        if self.hot_updates && self.table_layout != TableLayout::Heap {
            return bad(
                "hot_updates=on",
                "table_layout=clustered",
                "HOT chains exist only in a heap",
            );
        }
        if self.hot_updates && self.version_storage != VersionStorage::AppendO2n {
            return bad(
                "hot_updates=on",
                "version_storage",
                "HOT needs append-only oldest-to-newest chains",
            );
        }
        if self.version_storage == VersionStorage::UndoDelta
            && self.garbage_collection == GarbageCollection::Vacuum
        {
            return bad(
                "version_storage=undo_delta",
                "garbage_collection=vacuum",
                "undo is reclaimed by purge, not by scanning pages",
            );
        }
        if matches!(
            self.version_storage,
            VersionStorage::AppendO2n | VersionStorage::AppendN2o
        ) && self.garbage_collection == GarbageCollection::Purge
        {
            return bad(
                "version_storage=append_*",
                "garbage_collection=purge",
                "append-only versions in pages are reclaimed by vacuum",
            );
        }
        if !(10..=100).contains(&self.fillfactor) {
            return Err(Error::InvalidConfig(format!(
                "switch fillfactor must be 10..=100, got {}",
                self.fillfactor
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_impossible_combinations_name_both_switches() {
        DesignConfig::postgres().validate().unwrap();
        DesignConfig::innodb().validate().unwrap();
        let d = DesignConfig {
            index_pointers: IndexPointers::Physical,
            ..DesignConfig::innodb()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("table_layout=clustered") && e.contains("index_pointers=physical"),
            "{e}"
        );
        let d = DesignConfig {
            fillfactor: 5,
            ..DesignConfig::postgres()
        };
        assert!(d.validate().unwrap_err().to_string().contains("fillfactor"));
        assert!(DesignConfig::preset("oracle")
            .unwrap_err()
            .to_string()
            .contains("postgres and innodb"));
    }
}
