//! Accounting: every count the engine reports, attributed to a cause.
//!
//! A *cause* is what the calling thread is doing when a count happens: a foreground
//! operation kind (point select, range scan, insert, ...) or a named background component
//! (checkpointer, page cleaner, WAL writer, vacuum, purge, doublewrite). Each thread carries
//! its current cause in a thread-local ([`enter`] sets it for a scope); every counting site
//! reads it, so the device, the buffer pool and the WAL attribute without being told.
//!
//! Counters live in [`Stats`]: `SHARDS` cache-line-aligned copies of a
//! `[cause][metric]` array of relaxed `AtomicU64`s. A thread always adds to the shard it was
//! given at its first count (round robin), so the hot path is one uncontended atomic add
//! and no lock. [`Stats::snapshot`] sums the shards.
//!
//! # Invariants
//! 1. A count is added exactly once, to the cause current on the thread that did the work
//!    (or, for deferred work such as OS-cache write-back, the cause recorded when the work
//!    was created; see `device::os_cache`).
//! 2. Counters only grow; [`Counters::delta`] of two snapshots of the same `Stats` taken
//!    in order is therefore never negative.
//!
//! # Locking
//! None: atomics only. A snapshot taken while other threads count is not a single instant
//! across metrics (each counter is read once); take snapshots at quiet points for exact
//! per-phase figures.
//!
//! # Crash safety
//! Counters are in memory only and start at zero at every open.

use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

macro_rules! causes {
    ($($(#[$doc:meta])* $name:ident = $s:literal, $bg:literal;)*) => {
        /// What a thread is doing when it causes a count. Foreground variants are the
        /// operation kinds a workload executes; background variants are engine
        /// components. Serialized in snake_case (`point_select`, `page_cleaner`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum Cause { $($(#[$doc])* $name,)* }

        impl Cause {
            /// Every cause, in declaration order (index = `cause as usize`).
            pub const ALL: &'static [Cause] = &[$(Cause::$name,)*];
            /// The snake_case name used in reports.
            pub fn name(self) -> &'static str { match self { $(Cause::$name => $s,)* } }
            /// True for engine components that run beside the workload.
            pub fn is_background(self) -> bool { match self { $(Cause::$name => $bg,)* } }
        }
    };
}

causes! {
    /// Work not inside any declared operation (set-up, tests, tools).
    Other = "other", false;
    /// Bulk load of a table before a measured phase.
    Load = "load", false;
    /// Lookup of one row by a key.
    PointSelect = "point_select", false;
    /// Scan of a key range.
    RangeScan = "range_scan", false;
    /// Sequential scan of a whole table (PostgreSQL `Seq Scan`; MariaDB full table scan).
    SeqScan = "seq_scan", false;
    /// Temporary files of a query: a hash or sort spilled past PostgreSQL's `work_mem`
    /// (base/pgsql_tmp), or a MariaDB internal temporary table past
    /// `tmp_memory_table_size` (written to disk as an Aria/InnoDB table).
    Temp = "temp", false;
    /// Pages read ahead of the reader: the kernel's readahead in the OS page cache, InnoDB's
    /// linear read-ahead (buf0rea.cc `buf_read_ahead_linear`).
    ReadAhead = "read_ahead", false;
    /// Insert of a row.
    Insert = "insert", false;
    /// Update of a row.
    Update = "update", false;
    /// Delete of a row.
    Delete = "delete", false;
    /// Transaction commit (WAL flush at commit).
    Commit = "commit", false;
    /// Transaction rollback.
    Abort = "abort", false;
    /// DDL: create/drop table or index.
    Ddl = "ddl", false;
    /// The checkpointer (PostgreSQL checkpointer.c; InnoDB log checkpoint).
    Checkpointer = "checkpointer", true;
    /// Background writer / page cleaner (PostgreSQL bgwriter.c; InnoDB buf0flu.cc page cleaner).
    PageCleaner = "page_cleaner", true;
    /// Background WAL writer (PostgreSQL walwriter.c).
    WalWriter = "wal_writer", true;
    /// VACUUM and autovacuum (PostgreSQL vacuumlazy.c).
    Vacuum = "vacuum", true;
    /// InnoDB purge (trx0purge.cc).
    Purge = "purge", true;
    /// Writes to and syncs of the doublewrite area (InnoDB buf0dblwr.cc).
    Doublewrite = "doublewrite", true;
    /// Crash recovery at open.
    Recovery = "recovery", true;
}

/// Number of causes.
pub const N_CAUSES: usize = Cause::ALL.len();

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Cause {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Cause::ALL
            .iter()
            .copied()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Cause::ALL.iter().map(|c| c.name()).collect();
                format!("unknown cause '{s}'; expected one of {}", names.join(", "))
            })
    }
}

macro_rules! metrics {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        /// One counted quantity. The name carries the unit.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Metric { $($(#[$doc])* $name,)* }

        /// Every metric for one cause. Field names carry units; all are counts that only
        /// grow over the life of a [`Stats`].
        /// A field missing from a report written before it existed reads as 0.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct CauseCounts { $($(#[$doc])* pub $name: u64,)* }

        impl CauseCounts {
            fn from_array(a: &[u64; N_METRICS]) -> Self {
                let mut i = 0;
                $(let $name = a[i]; i += 1;)*
                let _ = i;
                CauseCounts { $($name,)* }
            }
            /// Field-wise `self - earlier` (saturating at 0).
            pub fn minus(&self, earlier: &CauseCounts) -> CauseCounts {
                CauseCounts { $($name: self.$name.saturating_sub(earlier.$name),)* }
            }
            /// Field-wise sum.
            pub fn plus(&self, other: &CauseCounts) -> CauseCounts {
                CauseCounts { $($name: self.$name + other.$name,)* }
            }
            /// True when every field is zero.
            pub fn is_zero(&self) -> bool { true $(&& self.$name == 0)* }
        }
        const METRIC_COUNT: usize = [$(stringify!($name),)*].len();
    };
}

metrics! {
    /// Device read requests, after splitting each call at `iop_max_bytes`.
    read_requests;
    /// 4 KiB device blocks touched by reads (a request is rounded out to 4 KiB boundaries).
    read_blocks_4k;
    /// Bytes read from the device.
    read_bytes;
    /// Device write requests, after splitting each call at `iop_max_bytes`.
    write_requests;
    /// 4 KiB device blocks touched by writes.
    write_blocks_4k;
    /// Bytes written to the device (logical, as sent by the host).
    write_bytes;
    /// Bytes the written 4 KiB blocks occupy after transparent compression (0 when
    /// compression accounting is off).
    write_physical_bytes;
    /// Device cache flushes (fsync/fdatasync).
    syncs;
    /// Microseconds spent waiting on the throttled device.
    device_wait_us;
    /// Read calls served entirely by the emulated OS page cache (no device I/O).
    os_cache_read_hits;
    /// 4 KiB blocks served by the emulated OS page cache.
    os_cache_hit_blocks_4k;
    /// 4 KiB blocks the emulated OS page cache had to read from the device.
    os_cache_miss_blocks_4k;
    /// Page requests served from the buffer pool (PostgreSQL shared_blks_hit; InnoDB
    /// Innodb_buffer_pool_read_requests minus reads).
    buffer_hits;
    /// Page requests that had to read the page (PostgreSQL shared_blks_read; InnoDB
    /// Innodb_buffer_pool_reads).
    buffer_misses;
    /// Pages evicted from the pool to make room.
    buffer_evictions;
    /// Dirty pages written from the pool to their home location (PostgreSQL
    /// buffers_checkpoint/buffers_clean/buffers_backend; InnoDB Innodb_pages_written).
    buffer_pages_written;
    /// Dirty pages the page cleaner wrote as neighbours of the page it chose, part of
    /// `buffer_pages_written` (innodb_metrics `buffer_flush_neighbor_pages`; only with the
    /// `flush_neighbors` switch on a rotational device).
    buffer_flush_neighbor_pages;
    /// Dirty pages the page cleaner's LRU batch wrote from the LRU tail, part of
    /// `buffer_pages_written` (innodb_metrics `buffer_LRU_batch_flush_total_pages`;
    /// buf0flu.cc `buf_flush_LRU_list_batch`). Only pools with InnoDB's free-page target.
    buffer_lru_batch_pages_written;
    /// Dirty pages written oldest change first from the flush list, part of
    /// `buffer_pages_written`: the page cleaner's batch above `max_dirty_pct` and the
    /// checkpoint's flush of every dirty page (innodb_metrics
    /// `buffer_flush_batch_total_pages`; buf0flu.cc `buf_do_flush_list_batch`).
    buffer_flush_list_pages_written;
    /// LRU batches of the page cleaner that looked at one page or more (innodb_metrics
    /// `buffer_LRU_batch_num_scan`; buf0flu.cc `buf_flush_LRU_list_batch`). Only pools
    /// with InnoDB's free-page target.
    buffer_lru_batches;
    /// Pages those batches looked at from the LRU tail, clean, dirty or pinned
    /// (innodb_metrics `buffer_LRU_batch_scanned`).
    buffer_lru_batch_scanned;
    /// Clean pages those batches evicted to the free list (innodb_metrics
    /// `buffer_LRU_batch_evict_total_pages`, `Innodb_buffer_pool_pages_LRU_freed`).
    buffer_lru_batch_evicted;
    /// Accesses that moved a page of the old sublist to the young head of the LRU list
    /// (`Innodb_buffer_pool_pages_made_young`; buf0lru.cc `buf_page_make_young`, which
    /// counts a move only when the page was old, from `buf_page_make_young_if_needed`).
    /// Only the LRU midpoint policy.
    buffer_pages_made_young;
    /// Accesses to a page of the old sublist within `old_blocks_time` of its first
    /// access, which leave it where it is (`Innodb_buffer_pool_pages_made_not_young`;
    /// buf0buf.h `buf_page_peek_if_too_old`). Only the LRU midpoint policy.
    buffer_pages_made_not_young;
    /// Accesses that moved a page of the young sublist back to the head of the LRU list
    /// because it had drifted past the first quarter of the young sublist, by the eviction
    /// clock (buf0buf.h `buf_page_peek_if_young` false → buf0lru.cc `buf_page_make_young`,
    /// which counts nothing for a young page: InnoDB has no such counter, so MariaDB's
    /// side of this figure is not measured). Only the LRU midpoint policy.
    buffer_pages_moved_to_head;
    /// Pages initialized in the pool without a read while not resident: a new page of a
    /// relation (or a page redo rebuilds whole) that needed a frame (InnoDB
    /// `Innodb_pages_created`, innodb_metrics `buffer_pages_created`: buf0buf.cc
    /// `buf_page_create_low` counts only a page it did not find in the pool; a freed page
    /// still resident and allocated again is reused without counting). Compare with
    /// `pages_allocated`, which counts every allocation.
    buffer_pages_created;
    /// New pages allocated by extending a relation or reusing a freed page.
    pages_allocated;
    /// WAL records inserted (pg_stat_wal.wal_records).
    wal_records;
    /// WAL bytes inserted, full-page images included, each record's own length without
    /// the alignment padding that may follow it (pg_stat_wal.wal_bytes sums `xl_tot_len`;
    /// InnoDB: Innodb_lsn_current advance, no padding). The WAL stream itself, and the
    /// blocks written, include the padding.
    wal_bytes;
    /// Full-page images attached to WAL records (pg_stat_wal.wal_fpi).
    wal_fpi;
    /// Bytes of full-page images (page minus hole), part of `wal_bytes`.
    wal_fpi_bytes;
    /// WAL write calls (pg_stat_wal.wal_write).
    wal_writes;
    /// WAL syncs (pg_stat_wal.wal_sync; InnoDB Innodb_os_log_fsyncs).
    wal_syncs;
    /// Bytes written to the WAL file, padding of partial WAL blocks included (InnoDB
    /// Innodb_os_log_written).
    wal_written_bytes;
    /// Pages written to the doublewrite area (Innodb_dblwr_pages_written).
    doublewrite_pages;
    /// Doublewrite batches (Innodb_dblwr_writes).
    doublewrite_batches;
    /// Checkpoints started because the interval elapsed (pg_stat_bgwriter.checkpoints_timed).
    checkpoints_timed;
    /// Checkpoints requested by WAL volume or by a call (pg_stat_bgwriter.checkpoints_req).
    checkpoints_requested;
}

/// Number of metrics.
pub const N_METRICS: usize = METRIC_COUNT;

const SHARDS: usize = 32;

#[repr(align(128))]
struct Shard {
    v: [[AtomicU64; N_METRICS]; N_CAUSES],
}

impl Shard {
    fn new() -> Self {
        Shard {
            v: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
        }
    }
}

thread_local! {
    static CURRENT: Cell<Cause> = const { Cell::new(Cause::Other) };
    static SHARD_IX: Cell<usize> = const { Cell::new(usize::MAX) };
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

fn shard_index() -> usize {
    SHARD_IX.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(i);
        }
        i
    })
}

/// The cause current on this thread.
pub fn current_cause() -> Cause {
    CURRENT.with(|c| c.get())
}

/// Makes `cause` current on this thread until the returned guard drops; the previous cause
/// is restored then, so scopes nest (a doublewrite batch inside a page-cleaner round).
#[must_use = "the cause is reset when the guard drops"]
pub fn enter(cause: Cause) -> CauseGuard {
    let prev = CURRENT.with(|c| c.replace(cause));
    CauseGuard { prev }
}

/// Restores the previous cause when dropped; see [`enter`].
pub struct CauseGuard {
    prev: Cause,
}

impl Drop for CauseGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

/// The counters of one storage instance, sharded per thread. Shared by `Arc` between the
/// device, the OS-cache emulation, the buffer pool and the WAL.
pub struct Stats {
    shards: Box<[Shard]>,
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// Zeroed counters.
    pub fn new() -> Self {
        Stats {
            shards: (0..SHARDS).map(|_| Shard::new()).collect(),
        }
    }

    /// Adds `n` to `metric` for the cause current on this thread.
    #[inline]
    pub fn add(&self, metric: Metric, n: u64) {
        self.add_for(current_cause(), metric, n);
    }

    /// Adds `n` to `metric` for `cause`.
    #[inline]
    pub fn add_for(&self, cause: Cause, metric: Metric, n: u64) {
        if n != 0 {
            self.shards[shard_index()].v[cause as usize][metric as usize]
                .fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Sums the shards into per-cause counts (causes with all-zero counts are left out).
    pub fn snapshot(&self) -> Counters {
        let mut by_cause = BTreeMap::new();
        for &cause in Cause::ALL {
            let mut a = [0u64; N_METRICS];
            for shard in self.shards.iter() {
                for (m, slot) in a.iter_mut().enumerate() {
                    *slot += shard.v[cause as usize][m].load(Ordering::Relaxed);
                }
            }
            let c = CauseCounts::from_array(&a);
            if !c.is_zero() {
                by_cause.insert(cause, c);
            }
        }
        Counters { by_cause }
    }
}

/// A snapshot of every count, per cause. Serializes as
/// `{"by_cause": {"checkpointer": {"write_blocks_4k": 12, ...}, ...}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Counts per cause; causes with no counts are absent.
    pub by_cause: BTreeMap<Cause, CauseCounts>,
}

impl Counters {
    /// The counts of one cause (zero if absent).
    pub fn cause(&self, cause: Cause) -> CauseCounts {
        self.by_cause.get(&cause).copied().unwrap_or_default()
    }

    /// Sum over all causes.
    pub fn total(&self) -> CauseCounts {
        self.by_cause
            .values()
            .fold(CauseCounts::default(), |a, c| a.plus(c))
    }

    /// Sum over background causes only.
    pub fn background(&self) -> CauseCounts {
        self.by_cause
            .iter()
            .filter(|(c, _)| c.is_background())
            .fold(CauseCounts::default(), |a, (_, c)| a.plus(c))
    }

    /// What happened between `earlier` and `self` (both snapshots of the same [`Stats`]).
    pub fn delta(&self, earlier: &Counters) -> Counters {
        let by_cause = self
            .by_cause
            .iter()
            .map(|(cause, c)| (*cause, c.minus(&earlier.cause(*cause))))
            .filter(|(_, c)| !c.is_zero())
            .collect();
        Counters { by_cause }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn cause_scopes_nest_and_restore() {
        assert_eq!(current_cause(), Cause::Other);
        {
            let _g = enter(Cause::PageCleaner);
            assert_eq!(current_cause(), Cause::PageCleaner);
            {
                let _d = enter(Cause::Doublewrite);
                assert_eq!(current_cause(), Cause::Doublewrite);
            }
            assert_eq!(current_cause(), Cause::PageCleaner);
        }
        assert_eq!(current_cause(), Cause::Other);
    }

    #[test]
    fn counts_from_many_threads_are_attributed_to_each_threads_cause() {
        let stats = Arc::new(Stats::new());
        let causes = [
            Cause::PointSelect,
            Cause::Update,
            Cause::Vacuum,
            Cause::Purge,
        ];
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let stats = stats.clone();
                let cause = causes[i % causes.len()];
                std::thread::spawn(move || {
                    let _g = enter(cause);
                    for _ in 0..1000 {
                        stats.add(Metric::read_blocks_4k, 2);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let snap = stats.snapshot();
        for c in causes {
            assert_eq!(snap.cause(c).read_blocks_4k, 2 * 1000 * 2, "{c}");
        }
        assert_eq!(snap.total().read_blocks_4k, 16_000);
        assert_eq!(snap.background().read_blocks_4k, 8000);
        assert!(snap.cause(Cause::Other).is_zero());
    }

    #[test]
    fn delta_subtracts_per_cause() {
        let stats = Stats::new();
        stats.add_for(Cause::Insert, Metric::wal_bytes, 100);
        let a = stats.snapshot();
        stats.add_for(Cause::Insert, Metric::wal_bytes, 50);
        stats.add_for(Cause::Commit, Metric::wal_syncs, 1);
        let d = stats.snapshot().delta(&a);
        assert_eq!(d.cause(Cause::Insert).wal_bytes, 50);
        assert_eq!(d.cause(Cause::Commit).wal_syncs, 1);
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains("\"insert\""), "{json}");
        let back: Counters = serde_json::from_str(&json).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn cause_names_round_trip() {
        for c in Cause::ALL {
            assert_eq!(c.name().parse::<Cause>().unwrap(), *c);
        }
        assert!("nope"
            .parse::<Cause>()
            .unwrap_err()
            .contains("page_cleaner"));
    }
}
