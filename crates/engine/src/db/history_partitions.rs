//! Several history partitions of a system-versioned table (`history_storage=partition`
//! with `history_partitions` > 1), as MariaDB 10.11's `PARTITION BY SYSTEM_TIME LIMIT n
//! (PARTITION p0 HISTORY, ..., PARTITION pn CURRENT)` keeps them, and `ALTER TABLE ... DROP
//! PARTITION` of a history partition.
//!
//! What is modelled, and from where:
//! - Each history partition is a relation of its own with the table's columns and keys
//!   (`{table}#p0`, `{table}#p1`, ...; with one history partition `{table}#p_hist`, as
//!   before), the current partition is the table itself (`pn`, or `p_cur` with one).
//! - Rotation by LIMIT (sql/partition_info.cc `partition_info::vers_set_hist_part`, run
//!   for every statement that writes history): starting from the first history partition,
//!   the working partition is the last non-empty one before the first empty one; when it
//!   holds `limit` rows or more and a next history partition exists, the next one. All the
//!   history rows of the statement go there (sql/sql_partition.cc routes a history row to
//!   `vers_info->hist_part`), so a partition can exceed its LIMIT within a statement, and
//!   the last one takes everything once full (MariaDB then warns WARN_VERS_PART_FULL).
//!   [`vers_set_hist_part`] is that function over the partitions' row counts.
//! - Rotation by INTERVAL (`PARTITION BY SYSTEM_TIME INTERVAL n unit STARTS t`; the
//!   switches `history_partition_interval_s`, `history_partition_starts_unix_s`): history
//!   partition k ends at STARTS + (k+1) intervals (its `range_value`, seconds since 1970),
//!   and `vers_set_hist_part`'s interval branch moves the working partition on, from the
//!   one it had, to the first whose end is after the statement's start
//!   (`thd->query_start()`, whole seconds); when none is, the last history partition takes
//!   the rows (WARN_VERS_PART_FULL). The ends grow with k and statement starts do not go
//!   back, so that is the first remaining partition whose end is after the statement's
//!   start ([`vers_set_hist_part_by_interval`]); a partition keeps its end when an older
//!   one is dropped (sql/sql_partition.cc sets `interval.start` to the dropped one's
//!   end). Only the oldest history partitions can be dropped
//!   (ER_VERS_DROP_PARTITION_INTERVAL). Not modelled: units of varying length (MONTH,
//!   QUARTER, YEAR: `date_add_interval` on the calendar), the default STARTS (the
//!   CREATE's time rounded down to the unit, `partition_info::vers_set_interval`) and
//!   AUTO partitions (created when the last one is full, `vers_create_partitions`).
//! - Row counts: MariaDB reads each partition's `stats.records` (`ha_partition::part_records`
//!   with HA_STATUS_OPEN), InnoDB's `stat_n_rows`, counted up by each insert and down by
//!   each delete as they happen, committed or not (row0mysql.cc `dict_table_n_rows_inc` /
//!   `_dec`; rollback undoes them, row0umod.cc). Here [`PartitionCounts`] counts each
//!   relation once (its rows visible to the statement) when first needed, then adds the
//!   history rows each statement writes; a rollback or a `DELETE HISTORY` drops the counts,
//!   which are counted again by the next statement that needs them.
//! - DROP PARTITION of a history partition (sql/sql_partition.cc `prep_alter_part_table`,
//!   ALTER_PARTITION_DROP): refused for the current partition and for the last history
//!   partition (ER_VERS_WRONG_PARTS, "Wrong partitions for `t`: must have at least one
//!   HISTORY and exactly one last CURRENT"), and for a name that is not a partition
//!   (ER_DROP_PARTITION_NON_EXISTENT). MariaDB removes the partition's `.ibd` file and its
//!   entry in the table's `.frm`; mvcclab deletes the partition's rows in one transaction and
//!   records the drop in the system table [`DROPPED_PARTITIONS`] in the same transaction
//!   (so a crash keeps both or neither). The blocks that costs are not those of an unlink;
//!   what the table returns afterwards is the same.

use crate::access::TableId;
use crate::catalog::{Column, ColumnType, TableDef};
use crate::design::HistoryStorage;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// The system table that records dropped history partitions: one row per dropped
/// partition relation (`relation`, its name, as `accounts#p0`). MariaDB keeps a table's
/// partitions in its `.frm`; mvcclab's catalog has no room for them.
pub const DROPPED_PARTITIONS: &str = "dropped_partitions";

/// [`DROPPED_PARTITIONS`]: `relation VARCHAR(200) PRIMARY KEY`.
pub fn dropped_partitions_def() -> TableDef {
    TableDef {
        name: DROPPED_PARTITIONS.into(),
        columns: vec![Column::not_null("relation", ColumnType::Varchar(200))],
        primary_key: vec![0],
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
    }
}

/// The partition names of a table with `parts` history partitions: the history
/// partitions in order, then the current one. One history partition: `p_hist`, `p_cur`
/// (the names the experiment's MariaDB DDL gives them); several: `p0`.. and `pn`
/// (MariaDB's default names for `PARTITION BY SYSTEM_TIME ... PARTITIONS k`).
pub fn partition_names(parts: u16) -> (Vec<String>, String) {
    if parts <= 1 {
        return (vec!["p_hist".into()], "p_cur".into());
    }
    ((0..parts).map(|i| format!("p{i}")).collect(), "pn".into())
}

/// The relations that hold `table`'s history under `storage`, in partition order: none
/// for `same_index`; `{table}#{partition}` for each history partition (MariaDB names a
/// partition's file `t#P#p`); `{table}_history` for a history table (the periods
/// extension's default name).
pub fn history_relation_names(storage: HistoryStorage, parts: u16, table: &str) -> Vec<String> {
    match storage {
        HistoryStorage::SameIndex => Vec::new(),
        HistoryStorage::Partition => partition_names(parts)
            .0
            .iter()
            .map(|p| format!("{table}#{p}"))
            .collect(),
        HistoryStorage::HistoryTable => vec![format!("{table}_history")],
    }
}

/// The working history partition of a statement that writes history, by LIMIT: the index
/// into `records` (the rows of each remaining history partition, in order) that
/// sql/partition_info.cc `vers_set_hist_part` picks — the last non-empty partition before
/// the first empty one (the first if it is empty), or the one after it when it holds
/// `limit` rows or more and is not the last. `limit` 0 (no LIMIT): the first. Empty
/// `records`: 0.
pub fn vers_set_hist_part(records: &[u64], limit: u64) -> usize {
    if limit == 0 || records.is_empty() {
        return 0;
    }
    let mut hist = 0;
    let mut rows = 0;
    let mut next = records.len();
    for (i, &r) in records.iter().enumerate() {
        if r == 0 {
            next = i;
            break;
        }
        hist = i;
        rows = r;
    }
    // The loop stopped at an empty partition: that one becomes the working one when the
    // last non-empty one is full. When every partition is non-empty, MariaDB's loop ends
    // at the current partition and the last history partition stays the working one.
    if rows >= limit && next < records.len() {
        hist = next;
    }
    hist
}

/// The working history partition of a statement that writes history, by INTERVAL: the
/// index into `range_ends_unix_s` (each remaining history partition's end, STARTS + (k+1)
/// intervals for partition k, in order) of the first partition whose end is after
/// `query_start_unix_s`, the statement's start in whole seconds since 1970
/// (sql/partition_info.cc `vers_set_hist_part`: it moves on while `range_value <=
/// thd->query_start()`); the last one when every end has passed (MariaDB then warns
/// WARN_VERS_PART_FULL). Empty: 0.
pub fn vers_set_hist_part_by_interval(range_ends_unix_s: &[i64], query_start_unix_s: i64) -> usize {
    range_ends_unix_s
        .iter()
        .position(|&end| end > query_start_unix_s)
        .unwrap_or(range_ends_unix_s.len().saturating_sub(1))
}

/// The end of history partition `k` (its position among all the table's history
/// partitions, dropped ones included) of an INTERVAL of `interval_s` seconds from
/// `starts_unix_s`: STARTS + (k+1) intervals, in seconds since 1970.
pub fn interval_partition_end_unix_s(starts_unix_s: i64, interval_s: u64, k: usize) -> i64 {
    starts_unix_s.saturating_add((interval_s as i64).saturating_mul(k as i64 + 1))
}

/// What the engine knows of its tables' history partitions between statements: the row
/// count of each partition relation, and the dropped partitions (a cache of
/// [`DROPPED_PARTITIONS`], read when first needed). Shared by the engine and its
/// transactions.
#[derive(Default)]
pub struct PartitionCounts {
    inner: Mutex<CountsInner>,
}

#[derive(Default)]
struct CountsInner {
    rows: HashMap<TableId, u64>,
    dropped: Option<HashSet<String>>,
}

impl PartitionCounts {
    /// The row count of partition relation `rel`, counting it with `count` when not known.
    ///
    /// Errors: `count`'s.
    pub fn rows(
        &self,
        rel: TableId,
        count: impl FnOnce() -> crate::error::Result<u64>,
    ) -> crate::error::Result<u64> {
        if let Some(&n) = self.lock().rows.get(&rel) {
            return Ok(n);
        }
        let n = count()?;
        self.lock().rows.insert(rel, n);
        Ok(n)
    }

    /// Adds `n` history rows written into partition relation `rel` (kept only when its count
    /// is known).
    pub fn add(&self, rel: TableId, n: u64) {
        if let Some(c) = self.lock().rows.get_mut(&rel) {
            *c += n;
        }
    }

    /// Forgets every count (after a rollback, a `DELETE HISTORY` or a drop): the next
    /// statement that needs one counts again.
    pub fn forget_counts(&self) {
        self.lock().rows.clear();
    }

    /// Whether relation `name` is a dropped partition, reading the dropped set with `load`
    /// when not known.
    ///
    /// Errors: `load`'s.
    pub fn is_dropped(
        &self,
        name: &str,
        load: impl FnOnce() -> crate::error::Result<HashSet<String>>,
    ) -> crate::error::Result<bool> {
        if let Some(d) = &self.lock().dropped {
            return Ok(d.contains(name));
        }
        let d = load()?;
        let hit = d.contains(name);
        self.lock().dropped = Some(d);
        Ok(hit)
    }

    /// Forgets the dropped set (after a transaction that dropped a partition ended).
    pub fn forget_dropped(&self) {
        self.lock().dropped = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CountsInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_part_by_interval_is_the_first_partition_not_yet_ended() {
        // STARTS 1000, INTERVAL 10: p0 ends 1010, p1 1020, p2 1030.
        let ends: Vec<i64> = (0..3)
            .map(|k| interval_partition_end_unix_s(1000, 10, k))
            .collect();
        assert_eq!(ends, vec![1010, 1020, 1030]);
        // Before STARTS and within p0's interval: p0.
        assert_eq!(vers_set_hist_part_by_interval(&ends, 990), 0);
        assert_eq!(vers_set_hist_part_by_interval(&ends, 1009), 0);
        // At p0's end (range_value <= query_start): p1.
        assert_eq!(vers_set_hist_part_by_interval(&ends, 1010), 1);
        assert_eq!(vers_set_hist_part_by_interval(&ends, 1029), 2);
        // Every end passed: the last takes the rest.
        assert_eq!(vers_set_hist_part_by_interval(&ends, 5000), 2);
        // p0 dropped: the others keep their ends.
        assert_eq!(vers_set_hist_part_by_interval(&ends[1..], 1005), 0);
        assert_eq!(vers_set_hist_part_by_interval(&[], 1005), 0);
    }

    #[test]
    fn hist_part_follows_vers_set_hist_part_by_limit() {
        // All empty: the first.
        assert_eq!(vers_set_hist_part(&[0, 0, 0], 2), 0);
        // The first below its LIMIT: stays.
        assert_eq!(vers_set_hist_part(&[1, 0, 0], 2), 0);
        // At its LIMIT: the next (empty) one.
        assert_eq!(vers_set_hist_part(&[2, 0, 0], 2), 1);
        // Over it (a statement wrote several rows): the next.
        assert_eq!(vers_set_hist_part(&[5, 1, 0], 2), 1);
        assert_eq!(vers_set_hist_part(&[5, 3, 0], 2), 2);
        // The last one takes the rest.
        assert_eq!(vers_set_hist_part(&[5, 3, 9], 2), 2);
        // An emptied first partition before a full one is the working one again.
        assert_eq!(vers_set_hist_part(&[0, 3, 0], 2), 0);
        // No LIMIT: the first.
        assert_eq!(vers_set_hist_part(&[7, 0], 0), 0);
        assert_eq!(vers_set_hist_part(&[], 3), 0);
    }

    #[test]
    fn names_of_one_and_several_partitions() {
        assert_eq!(
            history_relation_names(HistoryStorage::Partition, 1, "t"),
            vec!["t#p_hist"]
        );
        assert_eq!(
            history_relation_names(HistoryStorage::Partition, 3, "t"),
            vec!["t#p0", "t#p1", "t#p2"]
        );
        assert_eq!(partition_names(3).1, "pn");
        assert_eq!(
            history_relation_names(HistoryStorage::HistoryTable, 1, "t"),
            vec!["t_history"]
        );
        assert!(history_relation_names(HistoryStorage::SameIndex, 1, "t").is_empty());
    }
}
