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
//! | index_fillfactor | 10–100 (%) | 90 | 100 |
//! | torn_page_protection | full_page_writes, doublewrite, none | full_page_writes | doublewrite |
//! | buffer_replacement | clock_sweep, lru_midpoint | clock_sweep | lru_midpoint |
//! | os_page_cache | on, off | on | off (O_DIRECT) |
//! | default_isolation | read_committed, repeatable_read | read_committed | repeatable_read |
//! | rollback_segments | 0 (no undo); 1–128 with undo_delta | 0 | 128 |
//! | wal_record_format | xlog, mtr | xlog | mtr |
//! | btree_deduplication | on, off | on | off (n/a) |
//! | btree_merge_threshold | 0 (never merge), 1–50 (% of a page) | 0 | 50 |
//! | purge_resets_trx_id | on, off | off (n/a) | off (MariaDB ≥ 10.11.15; on for ≤ 10.11.14) |
//! | system_versioning | off, timestamp, trx_id | off | off |
//! | history_storage | same_index, partition, history_table | same_index | same_index |
//! | history_partitions | 1–1024 (history partitions of `partition`) | 1 | 1 |
//! | history_partition_limit | 0 (no LIMIT), rows | 0 | 0 |
//! | history_partition_interval_s | 0 (no INTERVAL), seconds | 0 | 0 |
//! | history_partition_starts_unix_s | 0 (none), seconds since 1970 (STARTS) | 0 | 0 |
//! | flush_neighbors | off, contiguous, area (only on a rotational device) | off | contiguous |
//! | autovacuum | on, off | on | off (n/a) |
//!
//! A combination that cannot exist is refused with an error naming both switches
//! ([`DesignConfig::validate`]); a combination that could exist but is not built yet is
//! refused by `Database::open` naming the switch.

use crate::error::{Error, Result};
use crate::mvcc::Isolation;
use crate::page::PageSize;
use crate::storage::TornPageProtection;
use crate::wal::WalFormat;
use serde::{Deserialize, Serialize};

const PRESETS_JSON: &str = include_str!("presets.json");

/// One switch of the design space: its name, what it decides, its values.
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// Name (as in presets.json and `--set SWITCH=VALUE`).
    pub name: &'static str,
    /// What it decides.
    pub meaning: &'static str,
    /// Allowed values.
    pub values: &'static str,
}

/// Every switch, in the order of the module table.
pub const SWITCHES: &[Switch] = &[
    Switch {
        name: "page_size",
        meaning: "size of every data page",
        values: "8k, 16k",
    },
    Switch {
        name: "table_layout",
        meaning: "where rows live: an unordered heap, or the primary-key B+tree's leaves",
        values: "heap, clustered",
    },
    Switch {
        name: "version_storage",
        meaning: "how old versions are kept",
        values: "append_o2n, append_n2o, undo_delta, time_travel",
    },
    Switch {
        name: "garbage_collection",
        meaning: "how versions no one can see are removed",
        values: "vacuum, purge, off",
    },
    Switch {
        name: "index_pointers",
        meaning: "what secondary index entries point at",
        values: "physical (TID), logical (primary key)",
    },
    Switch {
        name: "hot_updates",
        meaning: "heap-only tuple updates when no indexed column changes",
        values: "on, off",
    },
    Switch {
        name: "fillfactor",
        meaning:
            "percent of a page inserts fill (heap) or ascending inserts leave in a leaf (clustered)",
        values: "10..=100",
    },
    Switch {
        name: "index_fillfactor",
        meaning: "percent of a B-tree leaf filled by a sorted index build and, in heap indexes, left in the rightmost leaf by ascending inserts: PostgreSQL's B-tree fillfactor (nbtree.h BTREE_DEFAULT_FILLFACTOR 90, nbtsort.c _bt_load, nbtsplitloc.c); clustered designs: MariaDB's innodb_fill_factor (default 100), which applies to sorted builds of secondary indexes only (btr0bulk.cc PageBulk::init) -- not the same knob",
        values: "10..=100",
    },
    Switch {
        name: "torn_page_protection",
        meaning: "how a page torn by a power cut is repaired",
        values: "full_page_writes, doublewrite, none",
    },
    Switch {
        name: "buffer_replacement",
        meaning: "buffer pool replacement policy",
        values: "clock_sweep, lru_midpoint",
    },
    Switch {
        name: "os_page_cache",
        meaning: "an emulated OS page cache below the buffer pool (double buffering)",
        values: "on, off",
    },
    Switch {
        name: "default_isolation",
        meaning: "isolation level of a transaction begun without one",
        values: "read_committed, repeatable_read",
    },
    Switch {
        name: "rollback_segments",
        meaning:
            "rollback segments the undo log is spread over, one per read-write transaction in turn",
        values: "0 without undo; 1..=128 with version_storage=undo_delta",
    },
    Switch {
        name: "wal_record_format",
        meaning: "WAL record layout: PostgreSQL 15's XLogRecord byte for byte (24-byte header, block headers, 8-byte aligned) or MariaDB-shaped compact records (varints, no padding)",
        values: "xlog, mtr",
    },
    Switch {
        name: "btree_deduplication",
        meaning: "B-tree deduplication: a full leaf of a heap index merges equal keys into posting lists (one key, many TIDs) before it splits (PostgreSQL 13+)",
        values: "on, off (on needs index_pointers=physical)",
    },
    Switch {
        name: "btree_merge_threshold",
        meaning: "B-tree page merges: a leaf whose entries fall below this percent of the page after a delete merges with a sibling when both fit in one page (InnoDB MERGE_THRESHOLD, btr_compress); 0: leaves are never merged (PostgreSQL nbtree)",
        values: "0, 1..=50",
    },
    Switch {
        name: "purge_resets_trx_id",
        meaning: "purge of an update resets the clustered record's DB_TRX_ID to 0 and DB_ROLL_PTR to 'no history' in place, which reads the record's leaf, dirties it and logs 13 bytes (MariaDB 10.3 to 10.11.14, row0purge.cc row_purge_reset_trx_id, MDEV-12288; removed by MDEV-16168)",
        values: "on, off (on needs garbage_collection=purge)",
    },
    Switch {
        name: "system_versioning",
        meaning: "every table is created WITH SYSTEM VERSIONING (SQL:2011): row_start/row_end columns, row_end appended to every unique key, an UPDATE also inserts the old row as a history row, a DELETE sets row_end (MariaDB 10.11 sql_insert.cc vers_insert_history_row, sql_delete.cc TABLE::delete_row); timestamp: TIMESTAMP(6) periods; trx_id: transaction ids with mysql.transaction_registry",
        values: "off, timestamp, trx_id (not with history_storage=partition or history_table)",
    },
    Switch {
        name: "history_storage",
        meaning: "where a system-versioned table's history rows live: beside the current rows in the same clustered index or heap and its indexes (MariaDB's default), in a history partition with its own indexes (PARTITION BY SYSTEM_TIME), or in a separate history table filled on update and delete (PostgreSQL's periods extension 1.2: rows stamped with the transaction's start, transaction_timestamp(); keys as declared, without row_end; the history table created LIKE the table, without keys or indexes; no history row for a row the same transaction wrote; periods.c write_history)",
        values: "same_index, partition (table_layout=clustered), history_table (table_layout=heap); anything but same_index needs system_versioning",
    },
    Switch {
        name: "history_partitions",
        meaning: "history partitions of a table with history_storage=partition (MariaDB PARTITION BY SYSTEM_TIME with several HISTORY partitions before the CURRENT one): history rows go to one of them at a time, which rotates to the next when it holds history_partition_limit rows (sql/partition_info.cc vers_set_hist_part); a history partition can be dropped (ALTER TABLE ... DROP PARTITION), the current one cannot",
        values: "1..=1024 (more than 1 needs history_storage=partition and history_partition_limit or history_partition_interval_s)",
    },
    Switch {
        name: "history_partition_limit",
        meaning: "PARTITION BY SYSTEM_TIME LIMIT n: a DML statement that writes history starts a new history partition when the last non-empty one holds n rows or more (sql/partition_info.cc vers_set_hist_part); the last history partition takes the rest; 0: no LIMIT",
        values: "0, or rows (needs history_storage=partition)",
    },
    Switch {
        name: "history_partition_interval_s",
        meaning: "PARTITION BY SYSTEM_TIME INTERVAL n unit STARTS t: history partition k holds the history rows of statements that started before STARTS + (k+1) intervals, and the last one those after its end (sql/partition_info.cc vers_set_hist_part, its interval branch, by the statement's start in whole seconds; WARN_VERS_PART_FULL); only the oldest history partitions can be dropped (ER_VERS_DROP_PARTITION_INTERVAL); 0: no INTERVAL. Fixed-length units only (SECOND to WEEK as seconds; MONTH, QUARTER and YEAR are not modelled)",
        values: "0, or seconds (needs history_storage=partition and history_partition_starts_unix_s; not with history_partition_limit)",
    },
    Switch {
        name: "history_partition_starts_unix_s",
        meaning: "STARTS of PARTITION BY SYSTEM_TIME INTERVAL, in seconds since 1970-01-01 UTC (MariaDB's my_time_t); MariaDB's default, the CREATE's time rounded down to the interval's unit (partition_info::vers_set_interval), is not modelled, so it must be given with an interval",
        values: "0, or seconds since 1970 (only with history_partition_interval_s)",
    },
    Switch {
        name: "flush_neighbors",
        meaning: "the page cleaner writes a dirty page's dirty neighbours in the same flush area with it (MariaDB innodb_flush_neighbors 1 = contiguous run, 2 = whole area; buf0flu.cc buf_flush_try_neighbors), which MariaDB does only on rotational storage: it applies only when the device is configured rotational (NvmeConfig::rotational, --rotational); PostgreSQL has no such mechanism",
        values: "off, contiguous, area",
    },
    Switch {
        name: "autovacuum",
        meaning: "the autovacuum worker (VACUUM and ANALYZE when a table crosses its thresholds; PostgreSQL's `autovacuum` setting, autovacuum.c). off stops it alone: pruning on access stays, as PostgreSQL prunes in heap_page_prune_opt (pruneheap.c) whatever autovacuum is set to; garbage_collection=off stops both. Only heap designs with garbage_collection=vacuum have an autovacuum worker",
        values: "on, off (on needs garbage_collection=vacuum)",
    },
];

/// Most rollback segments a design may have (InnoDB TRX_SYS_N_RSEGS: a roll pointer has 7
/// bits for the rollback segment id).
pub const MAX_ROLLBACK_SEGMENTS: u8 = 128;

/// Most history partitions a design may give a table (MariaDB allows up to 8,192
/// partitions, MAX_PARTITIONS; mvcclab keeps each one a relation of its own).
pub const MAX_HISTORY_PARTITIONS: u16 = 1024;

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
    /// None: no pruning, no vacuum, no purge (`version_chain`'s GC-off what-if; the
    /// `autovacuum` switch stops the autovacuum worker alone).
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

/// Whether, and by what, tables are system-versioned (SQL:2011 `WITH SYSTEM VERSIONING`;
/// MariaDB 10.11 manual, "System-Versioned Tables").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemVersioning {
    /// Plain tables.
    #[default]
    Off,
    /// `row_start`/`row_end` TIMESTAMP(6) columns set from the statement's time.
    Timestamp,
    /// `row_start`/`row_end` BIGINT UNSIGNED transaction ids, resolved to times through
    /// `mysql.transaction_registry` (MariaDB `VERS_TRX_ID`).
    TrxId,
}

/// Where the history rows of a system-versioned table live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryStorage {
    /// In the table itself, beside the current rows (MariaDB's default; `row_end` in every
    /// unique key tells them apart).
    #[default]
    SameIndex,
    /// In a history partition, a second relation with its own indexes (MariaDB
    /// `PARTITION BY SYSTEM_TIME`).
    Partition,
    /// In a separate history table filled on update and delete (PostgreSQL's `periods`
    /// extension).
    HistoryTable,
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
    /// B-tree fill factor in percent (10..=100; the `index_fillfactor` switch): heap
    /// designs' index `fillfactor` reloption, clustered designs' `innodb_fill_factor`.
    /// Missing in design files and reports written before the switch existed (read as 0:
    /// the design's default, 90 for heap and 100 for clustered designs,
    /// [`DesignConfig::index_fill_pct`]).
    #[serde(default)]
    pub index_fillfactor: u8,
    /// Torn-page protection.
    pub torn_page_protection: TornPageProtection,
    /// Buffer replacement policy.
    pub buffer_replacement: BufferReplacement,
    /// Emulate an OS page cache below the buffer pool.
    pub os_page_cache: bool,
    /// Isolation level of `Database::begin`.
    pub default_isolation: Isolation,
    /// Rollback segments of the undo log, assigned round robin to read-write transactions
    /// (MariaDB 10.11: always 128, trx0trx.cc `trx_assign_rseg_low`); 0 for designs without
    /// undo. Missing in reports written before the switch existed (read as 0).
    #[serde(default)]
    pub rollback_segments: u8,
    /// Layout of WAL records (wal/record.rs). Missing in reports written before the switch
    /// existed (read as xlog, the only format then).
    #[serde(default)]
    pub wal_record_format: WalFormat,
    /// B-tree deduplication in heap indexes (PostgreSQL 13+ nbtdedup.c, `btree::dedup`):
    /// only with physical index pointers (InnoDB has none). Missing in design files and
    /// reports written before the switch existed (read as off).
    #[serde(default)]
    pub btree_deduplication: bool,
    /// Percent of a page below which a B-tree leaf tries to merge with a sibling after a
    /// delete ([`crate::btree::BTreeConfig::merge_threshold_pct`]; InnoDB MERGE_THRESHOLD);
    /// 0: never. Missing in design files and reports written before the switch existed
    /// (read as 0, the behaviour then).
    #[serde(default)]
    pub btree_merge_threshold: u8,
    /// Purge resets the DB_TRX_ID and DB_ROLL_PTR of the clustered record an update undo
    /// record belongs to ([`crate::clustered::ClusteredTable::purge_record`]; MariaDB 10.3 to
    /// 10.11.14 `row_purge_reset_trx_id`). Missing in design files and reports written
    /// before the switch existed (read as off).
    #[serde(default)]
    pub purge_resets_trx_id: bool,
    /// System versioning of every table ([`crate::db::versioning`]). Missing in design
    /// files and reports written before the switch existed (read as off).
    #[serde(default)]
    pub system_versioning: SystemVersioning,
    /// Where a versioned table's history lives. Missing in design files and reports
    /// written before the switch existed (read as same_index).
    #[serde(default)]
    pub history_storage: HistoryStorage,
    /// History partitions of a table with `history_storage=partition` (MariaDB
    /// `PARTITION BY SYSTEM_TIME ... (PARTITION p0 HISTORY, ..., PARTITION pn CURRENT)`;
    /// [`crate::db::history_partitions`]). Missing in design files and reports written
    /// before the switch existed (read as 1, the behaviour then).
    #[serde(default = "history_partitions_default")]
    pub history_partitions: u16,
    /// `PARTITION BY SYSTEM_TIME LIMIT n`: rows of a history partition after which the
    /// next history-writing statement moves on to the next partition; 0: no LIMIT.
    /// Missing in design files and reports written before the switch existed (read as 0).
    #[serde(default)]
    pub history_partition_limit: u64,
    /// `PARTITION BY SYSTEM_TIME INTERVAL n`: the length of each history partition's
    /// interval in seconds; 0: no INTERVAL ([`crate::db::history_partitions`]). Missing in
    /// design files and reports written before the switch existed (read as 0).
    #[serde(default)]
    pub history_partition_interval_s: u64,
    /// `STARTS` of `PARTITION BY SYSTEM_TIME INTERVAL`: where the first history
    /// partition's interval begins, in seconds since 1970-01-01 UTC; 0 without an
    /// INTERVAL. Missing in design files and reports written before the switch existed
    /// (read as 0).
    #[serde(default)]
    pub history_partition_starts_unix_s: i64,
    /// Neighbour flushing of the page cleaner on a rotational device (MariaDB
    /// `innodb_flush_neighbors`; [`crate::buffer::FlushNeighbors`]). Missing in design
    /// files and reports written before the switch existed (read as off).
    #[serde(default)]
    pub flush_neighbors: crate::buffer::FlushNeighbors,
    /// The autovacuum worker runs (PostgreSQL's `autovacuum = on`, autovacuum.c
    /// `AutoVacWorkerMain`); off stops it and nothing else: on-access pruning
    /// (pruneheap.c `heap_page_prune_opt`) and a manual VACUUM still remove versions. Only
    /// meaningful with `garbage_collection = vacuum`. Missing in design files and reports
    /// written before the switch existed (read as on, the behaviour then; clustered designs
    /// never had the worker).
    #[serde(default = "autovacuum_default")]
    pub autovacuum: bool,
}

/// The `history_partitions` switch of designs written before it existed: one.
fn history_partitions_default() -> u16 {
    1
}

/// The `autovacuum` switch of designs written before it existed: on.
fn autovacuum_default() -> bool {
    true
}

/// Bytes of InnoDB's block descriptor (`sizeof(buf_block_t)`) that come out of the buffer
/// pool's own memory. Not printed by the server; bounded by measurement: MariaDB 10.11.19
/// reports `Innodb_buffer_pool_pages_total` 507, 1,014 and 4,056 for 8, 16 and 64 MiB of
/// 16 KiB pages, which holds for any size from 130 to 161 bytes.
pub const INNODB_BLOCK_DESCRIPTOR_BYTES: u64 = 160;

/// InnoDB's allocation unit of the buffer pool on 64-bit platforms
/// (`innodb_buffer_pool_extent_size`, buf0buf.h): 8 MiB.
const INNODB_POOL_EXTENT_BYTES: u64 = 8 << 20;

impl DesignConfig {
    /// The B-tree fill factor in percent: `index_fillfactor`, or when it is 0 (a design
    /// written before the switch) PostgreSQL's BTREE_DEFAULT_FILLFACTOR 90 for heap
    /// designs and MariaDB's `innodb_fill_factor` default 100 for clustered ones.
    pub fn index_fill_pct(&self) -> u8 {
        match (self.index_fillfactor, self.table_layout) {
            (0, TableLayout::Heap) => 90,
            (0, TableLayout::Clustered) => 100,
            (n, _) => n,
        }
    }

    /// The B-tree merge threshold as [`crate::btree::BTreeConfig::merge_threshold_pct`]
    /// takes it (`None` for 0).
    pub fn merge_threshold_pct(&self) -> Option<u8> {
        (self.btree_merge_threshold > 0).then_some(self.btree_merge_threshold)
    }

    /// Page frames of a buffer pool of `pool_bytes` (at least 16).
    ///
    /// - `lru_midpoint` (InnoDB's pool): the block descriptors live at the start of each
    ///   8 MiB extent, in frames of their own (MariaDB 10.11 buf0buf.cc `first_page`,
    ///   `pages_in_extent`, `buf_pool_t::get_n_blocks`): an extent of 16 KiB pages holds
    ///   `8 MiB / (16 KiB + 160)` = 507 frames, not 512, and a partial extent its pages
    ///   minus the same 5. So `--buffer-pool 8MiB` gives the innodb preset the 507 frames
    ///   of MariaDB's `innodb_buffer_pool_size=8M`.
    /// - `clock_sweep` (PostgreSQL): `shared_buffers` counts the buffers alone; their
    ///   descriptors are allocated beside them (buf_init.c `BufferManagerShmemSize`), so
    ///   8 MiB is 1,024 buffers of 8 KiB.
    pub fn buffer_pool_frames(&self, pool_bytes: u64) -> usize {
        let page = self.page_size.bytes() as u64;
        let frames = match self.buffer_replacement {
            BufferReplacement::ClockSweep => pool_bytes / page,
            BufferReplacement::LruMidpoint => {
                let ext = INNODB_POOL_EXTENT_BYTES;
                let first = ext / page - ext / (page + INNODB_BLOCK_DESCRIPTOR_BYTES);
                let full = pool_bytes / ext * (ext / page - first);
                let partial = ((pool_bytes % ext) / page).saturating_sub(first);
                full + partial
            }
        };
        frames.max(16) as usize
    }
}

impl DesignConfig {
    /// Every preset, from the presets file `crates/engine/src/presets.json` (the data
    /// behind the table in this module's doc).
    pub fn presets() -> Vec<DesignConfig> {
        serde_json::from_str(PRESETS_JSON).expect("presets.json is valid (checked by a test)")
    }

    fn named(name: &str) -> Self {
        Self::presets()
            .into_iter()
            .find(|p| p.name == name)
            .expect("preset in presets.json")
    }

    /// The `postgres` preset (PostgreSQL 15 defaults).
    pub fn postgres() -> Self {
        Self::named("postgres")
    }

    /// The `innodb` preset (MariaDB 10.11 defaults).
    pub fn innodb() -> Self {
        Self::named("innodb")
    }

    /// A preset by name.
    ///
    /// Errors: [`Error::InvalidConfig`] listing the presets.
    pub fn preset(name: &str) -> Result<Self> {
        let all = Self::presets();
        let names: Vec<String> = all.iter().map(|p| p.name.clone()).collect();
        all.into_iter().find(|p| p.name == name).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "unknown design '{name}'; presets are {}",
                names.join(" and ")
            ))
        })
    }

    /// The value of switch `name` as text (as in the presets file; booleans as on/off).
    ///
    /// Errors: [`Error::InvalidConfig`] for an unknown switch, listing the switches.
    pub fn switch_value(&self, name: &str) -> Result<String> {
        let v = serde_json::to_value(self).map_err(|e| Error::InvalidConfig(e.to_string()))?;
        match v.get(name) {
            Some(serde_json::Value::String(s)) if name != "name" => Ok(s.clone()),
            Some(serde_json::Value::Bool(b)) => Ok(if *b { "on" } else { "off" }.into()),
            Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
            _ => Err(Error::InvalidConfig(format!(
                "unknown switch '{name}'; switches are {}",
                SWITCHES
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
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
        if self.version_storage == VersionStorage::UndoDelta
            && !(1..=MAX_ROLLBACK_SEGMENTS).contains(&self.rollback_segments)
        {
            return Err(Error::InvalidConfig(format!(
                "switch rollback_segments must be 1..={MAX_ROLLBACK_SEGMENTS} with version_storage=undo_delta, got {}",
                self.rollback_segments
            )));
        }
        if self.version_storage != VersionStorage::UndoDelta && self.rollback_segments != 0 {
            return bad(
                "rollback_segments",
                "version_storage",
                "rollback segments hold undo logs: set rollback_segments=0 unless version_storage=undo_delta",
            );
        }
        if self.btree_deduplication
            && (self.table_layout != TableLayout::Heap
                || self.index_pointers != IndexPointers::Physical)
        {
            return bad(
                "btree_deduplication=on",
                "table_layout=clustered / index_pointers=logical",
                "posting lists hold heap TIDs: deduplication needs a heap and physical index pointers",
            );
        }
        if self.purge_resets_trx_id && self.garbage_collection != GarbageCollection::Purge {
            return bad(
                "purge_resets_trx_id=on",
                "garbage_collection=vacuum / off",
                "only purge of an undo log resets the records' transaction ids",
            );
        }
        if self.autovacuum && self.garbage_collection == GarbageCollection::Purge {
            return bad(
                "autovacuum=on",
                "garbage_collection=purge",
                "the autovacuum worker vacuums heap tables; purge of the undo log always runs in InnoDB",
            );
        }
        if self.system_versioning == SystemVersioning::Off
            && self.history_storage != HistoryStorage::SameIndex
        {
            return bad(
                "history_storage=partition / history_table",
                "system_versioning=off",
                "only a system-versioned table has history to store elsewhere",
            );
        }
        if self.system_versioning == SystemVersioning::TrxId
            && self.history_storage == HistoryStorage::Partition
        {
            // MariaDB refuses PARTITION BY SYSTEM_TIME on a table versioned by transaction
            // id (MDEV-15951; the variant seed 003 could not run).
            return bad(
                "system_versioning=trx_id",
                "history_storage=partition",
                "MariaDB refuses history partitions on a table versioned by transaction id (MDEV-15951)",
            );
        }
        if self.system_versioning == SystemVersioning::TrxId
            && self.history_storage == HistoryStorage::HistoryTable
        {
            // The periods extension's SYSTEM_TIME period is two timestamp columns set to
            // transaction_timestamp() (periods--1.2.sql `add_system_time_period`); it has
            // no transaction-id periods.
            return bad(
                "system_versioning=trx_id",
                "history_storage=history_table",
                "the periods extension versions by timestamp only (transaction_timestamp())",
            );
        }
        if self.history_storage == HistoryStorage::HistoryTable
            && self.table_layout != TableLayout::Heap
        {
            return bad(
                "history_storage=history_table",
                "table_layout=clustered",
                "a history table filled on update and delete is PostgreSQL's periods extension; MariaDB keeps history in the table or its partitions",
            );
        }
        if self.history_storage == HistoryStorage::Partition
            && self.table_layout != TableLayout::Clustered
        {
            return bad(
                "history_storage=partition",
                "table_layout=heap",
                "PARTITION BY SYSTEM_TIME is MariaDB's; PostgreSQL keeps a separate history table (history_table)",
            );
        }
        if !(1..=MAX_HISTORY_PARTITIONS).contains(&self.history_partitions) {
            return Err(Error::InvalidConfig(format!(
                "switch history_partitions must be 1..={MAX_HISTORY_PARTITIONS}, got {}",
                self.history_partitions
            )));
        }
        let interval = self.history_partition_interval_s > 0;
        if (self.history_partitions > 1 || self.history_partition_limit > 0 || interval)
            && self.history_storage != HistoryStorage::Partition
        {
            return bad(
                "history_partitions / history_partition_limit / history_partition_interval_s",
                "history_storage=same_index / history_table",
                "history partitions and their LIMIT or INTERVAL are PARTITION BY SYSTEM_TIME's",
            );
        }
        if interval && self.history_partition_limit > 0 {
            // The grammar takes LIMIT or INTERVAL (sql/sql_yacc.yy opt_versioning_rotation).
            return bad(
                "history_partition_limit",
                "history_partition_interval_s",
                "PARTITION BY SYSTEM_TIME rotates by LIMIT or by INTERVAL, not both",
            );
        }
        if interval != (self.history_partition_starts_unix_s > 0) {
            return Err(Error::InvalidConfig(format!(
                "switches history_partition_interval_s={} and history_partition_starts_unix_s={} \
                 go together: an INTERVAL needs its STARTS (seconds since 1970, above 0; \
                 MariaDB's default STARTS is not modelled) and STARTS needs an INTERVAL",
                self.history_partition_interval_s, self.history_partition_starts_unix_s
            )));
        }
        if self.history_partitions > 1 && self.history_partition_limit == 0 && !interval {
            // Without LIMIT or INTERVAL MariaDB keeps writing the first history partition.
            return Err(Error::InvalidConfig(format!(
                "switch history_partitions={} needs history_partition_limit (PARTITION BY \
                 SYSTEM_TIME LIMIT n) or history_partition_interval_s (INTERVAL n)",
                self.history_partitions
            )));
        }
        if self.btree_merge_threshold > 50 {
            return Err(Error::InvalidConfig(format!(
                "switch btree_merge_threshold must be 0 (never merge) or 1..=50, got {}",
                self.btree_merge_threshold
            )));
        }
        if !(10..=100).contains(&self.fillfactor) {
            return Err(Error::InvalidConfig(format!(
                "switch fillfactor must be 10..=100, got {}",
                self.fillfactor
            )));
        }
        if self.index_fillfactor != 0 && !(10..=100).contains(&self.index_fillfactor) {
            return Err(Error::InvalidConfig(format!(
                "switch index_fillfactor must be 10..=100, got {}",
                self.index_fillfactor
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn innodb_pools_lose_their_descriptor_frames_as_mariadb_reports() {
        let inno = DesignConfig::innodb();
        // Innodb_buffer_pool_pages_total of MariaDB 10.11.19 for 8, 16 and 64 MiB.
        for (mib, pages) in [(8u64, 507usize), (16, 1_014), (64, 4_056)] {
            assert_eq!(inno.buffer_pool_frames(mib << 20), pages, "{mib} MiB");
        }
        // A partial extent: its 256 pages minus the 5 descriptor frames.
        assert_eq!(inno.buffer_pool_frames(12 << 20), 507 + 251);
        // PostgreSQL's shared_buffers: every byte is buffers.
        assert_eq!(DesignConfig::postgres().buffer_pool_frames(8 << 20), 1_024);
        // Tiny pools keep the floor of 16 frames.
        assert_eq!(inno.buffer_pool_frames(64 << 10), 16);
    }

    #[test]
    fn presets_file_matches_the_documented_table() {
        let p = DesignConfig::postgres();
        let i = DesignConfig::innodb();
        let want = [
            ("page_size", "8k", "16k"),
            ("table_layout", "heap", "clustered"),
            ("version_storage", "append_o2n", "undo_delta"),
            ("garbage_collection", "vacuum", "purge"),
            ("index_pointers", "physical", "logical"),
            ("hot_updates", "on", "off"),
            ("fillfactor", "100", "94"),
            ("index_fillfactor", "90", "100"),
            ("torn_page_protection", "full_page_writes", "doublewrite"),
            ("buffer_replacement", "clock_sweep", "lru_midpoint"),
            ("os_page_cache", "on", "off"),
            ("default_isolation", "read_committed", "repeatable_read"),
            ("rollback_segments", "0", "128"),
            ("wal_record_format", "xlog", "mtr"),
            ("btree_deduplication", "on", "off"),
            ("btree_merge_threshold", "0", "50"),
            ("purge_resets_trx_id", "off", "off"),
            ("system_versioning", "off", "off"),
            ("history_storage", "same_index", "same_index"),
            ("history_partitions", "1", "1"),
            ("history_partition_limit", "0", "0"),
            ("history_partition_interval_s", "0", "0"),
            ("history_partition_starts_unix_s", "0", "0"),
            ("flush_neighbors", "off", "contiguous"),
            ("autovacuum", "on", "off"),
        ];
        assert_eq!(want.len(), SWITCHES.len());
        for (sw, pv, iv) in want {
            assert_eq!(p.switch_value(sw).unwrap(), pv, "{sw}");
            assert_eq!(i.switch_value(sw).unwrap(), iv, "{sw}");
        }
        assert!(p
            .switch_value("colour")
            .unwrap_err()
            .to_string()
            .contains("page_size"));
        assert_eq!(DesignConfig::presets().len(), 2);
    }

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
        for n in [0, 129] {
            let d = DesignConfig {
                rollback_segments: n,
                ..DesignConfig::innodb()
            };
            assert!(
                d.validate()
                    .unwrap_err()
                    .to_string()
                    .contains("rollback_segments must be 1..=128"),
                "{n}"
            );
        }
        let d = DesignConfig {
            rollback_segments: 4,
            ..DesignConfig::postgres()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("rollback_segments") && e.contains("version_storage"),
            "{e}"
        );
        let d = DesignConfig {
            btree_deduplication: true,
            ..DesignConfig::innodb()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("btree_deduplication=on"), "{e}");
        let d = DesignConfig {
            system_versioning: SystemVersioning::TrxId,
            history_storage: HistoryStorage::Partition,
            ..DesignConfig::innodb()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("system_versioning=trx_id") && e.contains("history_storage=partition"),
            "{e}"
        );
        let d = DesignConfig {
            history_storage: HistoryStorage::HistoryTable,
            ..DesignConfig::postgres()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("system_versioning=off"), "{e}");
        let d = DesignConfig {
            system_versioning: SystemVersioning::Timestamp,
            history_storage: HistoryStorage::HistoryTable,
            ..DesignConfig::innodb()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(e.contains("table_layout=clustered"), "{e}");
        let d = DesignConfig {
            system_versioning: SystemVersioning::TrxId,
            history_storage: HistoryStorage::HistoryTable,
            ..DesignConfig::postgres()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("system_versioning=trx_id") && e.contains("history_storage=history_table"),
            "{e}"
        );
        let d = DesignConfig {
            autovacuum: true,
            ..DesignConfig::innodb()
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("autovacuum=on") && e.contains("garbage_collection=purge"),
            "{e}"
        );
        assert!(DesignConfig::preset("oracle")
            .unwrap_err()
            .to_string()
            .contains("postgres and innodb"));
    }
}
