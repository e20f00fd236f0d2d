//! The `postgres` design's table access method: an append-only heap with oldest-to-newest
//! version chains, HOT updates, on-access pruning, vacuum, a free space map and a
//! visibility map, with B+tree indexes that point at tuples by TID.
//!
//! Follows PostgreSQL REL_15: src/backend/access/heap/README.HOT, heapam.c, pruneheap.c,
//! heapam_visibility.c, vacuumlazy.c; src/backend/storage/page/bufpage.c.
//!
//! # A worked example (README.HOT)
//! ```text
//! insert row (id 1)          update non-indexed col     update again (HOT)
//! lp1 → t1 (xmin 100)        lp1 → t1 (xmax 101,        lp1 → t1 (dead)
//!                                  HOT_UPDATED, ctid lp2)  lp2 → t2 (xmax 102, HOT_UPDATED, ctid lp3)
//! index: 1 → (0,1)           lp2 → t2 (HEAP_ONLY)       lp3 → t3 (HEAP_ONLY)
//!                            index unchanged            index unchanged: (0,1) is the root
//!
//! after pruning (100, 101 committed, no snapshot older than 102):
//! lp1 → REDIRECT lp3,  lp2 UNUSED,  lp3 → t3           index still (0,1)
//! ```
//!
//! # Rules
//! 1. An update is HOT exactly when the new version fits on the old version's page
//!    (`heap_free_space`) and no column used by any index changed (binary comparison of
//!    the values); the old version gets HEAP_HOT_UPDATED, the new one HEAP_ONLY_TUPLE, and no
//!    index entry is added. Otherwise every index gets a new entry for the new TID.
//! 2. Inserts leave `100 − fillfactor` percent of a page free for later updates of its rows;
//!    updates may use that space.
//! 3. A page is pruned on access when `pd_prune_xid` precedes the oldest xmin and the page is
//!    full or has less than `max(fillfactor reserve, BLCKSZ / 10)` free, and only with a
//!    cleanup lock (exclusive lock, no other pin).
//! 4. Vacuum: scan (prune, collect LP_DEAD items) → delete their entries from every index →
//!    mark the line pointers unused; set the visibility map for pages all visible. Its reads
//!    go through a 256 KiB buffer ring (`BAS_VACUUM`). Its snapshot holds back no one's
//!    horizon (PostgreSQL's `PROC_IN_VACUUM`).
//! 5. ANALYZE (`analyze`): a sample of up to 30,000 heap blocks read through the same
//!    ring; it sets the live and dead row estimates and resets `n_mod_since_analyze`. It
//!    holds a snapshot from start to end, so nothing deleted since it started can be pruned
//!    until it ends.
//! 6. Autovacuum's VACUUM and ANALYZE run with the cost-based delay
//!    ([`crate::buffer::vacuum_cost`]); manual ones do not.
//! 7. A writer that meets a row changed by a running transaction waits for it (xid wait,
//!    with deadlock detection); afterwards, at read committed it follows `t_ctid` to the
//!    newest version and re-checks the key (EvalPlanQual); at repeatable read it fails with
//!    a serialization failure.
//!
//! # Locking
//! Heap page content locks are taken one at a time, except by a non-HOT update that moves
//! the row to another page, which locks both pages in block order after re-locking (the old
//! row is first locked through its xmax, as heapam.c does). Index leaf latches are never
//! held while heap pages are read (scans collect TIDs in batches). Unique checks hold a
//! per-key stripe mutex between the check and the insert.
//!
//! # Crash safety
//! Every page change is WAL-logged through `buffer::log_change` (records below) and so
//! carries full-page images by the foundation's rule. Hint bits are set without WAL, as
//! PostgreSQL does with checksums off. [`wal::redo_block`] replays one block of a record;
//! [`wal`] lists what redo does not reproduce (hint bits, t_cid, pd_prune_xid,
//! PD_PAGE_FULL) and [`wal::mask_unlogged`] hides it.
//!
//! # Documented differences from PostgreSQL
//! - The free space map and visibility map live in memory; their forks' I/O is not counted.
//! - No TOAST: a tuple larger than a page is an error.
//! - No command ids in visibility (single-row statements), no combo cids, no multixacts
//!   (no SELECT FOR SHARE), no xid freezing.
//! - ANALYZE gathers no column statistics (there is no planner): it reads its sample and
//!   reports row estimates only.

mod am;
mod analyze;
mod fsm;
mod page;
mod prune;
mod table;
mod tuple;
mod vacuum;
mod visibility;
mod vm;
pub mod wal;

pub use am::HeapAm;
pub use analyze::{sample_blocks, AnalyzeReport, ANALYZE_TARGET_ROWS};
pub use fsm::FreeSpaceMap;
pub use page::{maxalign, ItemId, LpState, PAGE_TYPE_HEAP};
pub use prune::PruneResult;
pub use table::{Ctx, HeapTable};
pub use tuple::Tid;
pub use vacuum::{VacuumConfig, VacuumReport};
pub use vm::VisibilityMap;

/// Raw access to heap pages and tuples, for tests and tools.
pub mod raw {
    pub use super::page::*;
    pub use super::tuple::*;
}

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// `info` codes of [`crate::wal::rmgr::HEAP`] records (PostgreSQL heapam_xlog.h; the HEAP2
/// records share the rmgr here).
pub mod info {
    /// XLOG_HEAP_INSERT: block 0 = page; data = offnum u16, flags u8, xl_heap_header
    /// (infomask2 u16, infomask u16, hoff u8), tuple bytes from offset 23.
    pub const INSERT: u8 = 0x00;
    /// XLOG_HEAP_DELETE: block 0 = page; main = xmax u32, offnum u16, infobits u8, flags u8.
    pub const DELETE: u8 = 0x10;
    /// XLOG_HEAP_UPDATE: block 0 = new page (data: [prefix u16][suffix u16], xl_heap_header,
    /// tuple bytes from 23 minus prefix/suffix), block 1 = old page if different; main =
    /// xl_heap_update (14 bytes; its flags say whether prefix and suffix are present,
    /// `wal::XLH_UPDATE_PREFIX_FROM_OLD` / `SUFFIX_FROM_OLD`).
    pub const UPDATE: u8 = 0x20;
    /// XLOG_HEAP_HOT_UPDATE: as UPDATE, one page.
    pub const HOT_UPDATE: u8 = 0x40;
    /// XLOG_HEAP_LOCK: block 0 = page; main = locker xid u32, offnum u16.
    pub const LOCK: u8 = 0x60;
    /// XLOG_HEAP_INIT_PAGE flag: the record rebuilds the page (will_init).
    pub const INIT_PAGE: u8 = 0x80;
    /// XLOG_HEAP2_PRUNE: block 0 = page, data = `PruneResult::encode`; main = horizon xid.
    pub const PRUNE: u8 = 0x11;
    /// XLOG_HEAP2_VACUUM: block 0 = page, data = offsets (u16) now unused.
    pub const VACUUM: u8 = 0x21;
    /// XLOG_HEAP2_VISIBLE: block 0 = page; main = cutoff xid u32.
    pub const VISIBLE: u8 = 0x41;
}

/// Live counters of one table (pg_stat_user_tables, pg_statio_user_tables).
#[derive(Default)]
pub struct TableCounters {
    /// Rows inserted.
    pub n_tup_ins: AtomicU64,
    /// Rows updated (HOT included).
    pub n_tup_upd: AtomicU64,
    /// Rows updated by HOT.
    pub n_tup_hot_upd: AtomicU64,
    /// Rows deleted.
    pub n_tup_del: AtomicU64,
    /// Estimated live rows (changed at commit/abort, as pgstat does).
    pub n_live_tup: AtomicI64,
    /// Estimated dead rows (changed at commit/abort, by pruning and by vacuum).
    pub n_dead_tup: AtomicI64,
    /// Rows inserted since the last vacuum (n_ins_since_vacuum).
    pub n_ins_since_vacuum: AtomicI64,
    /// Rows inserted, updated or deleted by committed transactions since the last analyze
    /// (n_mod_since_analyze).
    pub n_mod_since_analyze: AtomicI64,
    /// Manual vacuums.
    pub vacuum_count: AtomicU64,
    /// Vacuums by autovacuum.
    pub autovacuum_count: AtomicU64,
    /// Manual analyzes.
    pub analyze_count: AtomicU64,
    /// Analyzes by autovacuum.
    pub autoanalyze_count: AtomicU64,
    /// Index entries inserted (all indexes).
    pub index_entries_inserted: AtomicU64,
    /// Tuple versions examined by reads (chain members checked for visibility).
    pub versions_traversed: AtomicU64,
    /// Pages pruned on access.
    pub pages_pruned: AtomicU64,
    /// Hint-bit settings that dirtied a page without WAL.
    pub hint_bit_writes: AtomicU64,
    /// Index entries marked dead by scans (nbtutils.c `_bt_killitems`).
    pub index_items_killed: AtomicU64,
    /// Index entries removed by simple deletion before a split (`_bt_simpledel_pass`).
    pub index_simple_deleted: AtomicU64,
    /// Index entries removed by bottom-up deletion (`_bt_bottomupdel_pass`).
    pub index_bottom_up_deleted: AtomicU64,
    /// Bottom-up deletion passes run.
    pub index_bottom_up_passes: AtomicU64,
    /// Deduplication passes run (nbtdedup.c `_bt_dedup_pass`).
    pub index_dedup_passes: AtomicU64,
}

impl TableCounters {
    pub(crate) fn sub_dead(&self, n: u64) {
        let _ = self
            .n_dead_tup
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| {
                Some((d - n as i64).max(0))
            });
    }

    /// pgstat's end-of-transaction accounting (pgstat_relation.c `AtEOXact_PgStat_Relations`).
    pub fn end_of_xact(&self, committed: bool, ins: u64, upd: u64, del: u64) {
        if committed {
            self.n_live_tup
                .fetch_add(ins as i64 - del as i64, Ordering::Relaxed);
            self.n_dead_tup
                .fetch_add((upd + del) as i64, Ordering::Relaxed);
            self.n_ins_since_vacuum
                .fetch_add(ins as i64, Ordering::Relaxed);
            // Insert, update and delete each count as one change; an abort counts none.
            self.n_mod_since_analyze
                .fetch_add((ins + upd + del) as i64, Ordering::Relaxed);
        } else {
            self.n_dead_tup
                .fetch_add((ins + upd) as i64, Ordering::Relaxed);
        }
    }

    /// A plain snapshot of the table's own counters (block figures are zero here;
    /// `Database::table_stats` adds them from the buffer pool).
    pub fn snapshot(&self) -> TableStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TableStats {
            n_tup_ins: l(&self.n_tup_ins),
            n_tup_upd: l(&self.n_tup_upd),
            n_tup_hot_upd: l(&self.n_tup_hot_upd),
            n_tup_del: l(&self.n_tup_del),
            n_live_tup: self.n_live_tup.load(Ordering::Relaxed).max(0) as u64,
            n_dead_tup: self.n_dead_tup.load(Ordering::Relaxed).max(0) as u64,
            vacuum_count: l(&self.vacuum_count),
            autovacuum_count: l(&self.autovacuum_count),
            n_mod_since_analyze: self.n_mod_since_analyze.load(Ordering::Relaxed).max(0) as u64,
            analyze_count: l(&self.analyze_count),
            autoanalyze_count: l(&self.autoanalyze_count),
            heap_blks_hit: 0,
            heap_blks_read: 0,
            idx_blks_hit: 0,
            idx_blks_read: 0,
            index_entries_inserted: l(&self.index_entries_inserted),
            versions_traversed: l(&self.versions_traversed),
            pages_pruned: l(&self.pages_pruned),
            hint_bit_writes: l(&self.hint_bit_writes),
            index_items_killed: l(&self.index_items_killed),
            index_simple_deleted: l(&self.index_simple_deleted),
            index_bottom_up_deleted: l(&self.index_bottom_up_deleted),
            index_bottom_up_passes: l(&self.index_bottom_up_passes),
            index_dedup_passes: l(&self.index_dedup_passes),
        }
    }
}

/// A table's counters at one moment (pg_stat_user_tables / pg_statio_user_tables names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    /// Rows inserted.
    pub n_tup_ins: u64,
    /// Rows updated (HOT included).
    pub n_tup_upd: u64,
    /// Rows updated by HOT.
    pub n_tup_hot_upd: u64,
    /// Rows deleted.
    pub n_tup_del: u64,
    /// Estimated live rows.
    pub n_live_tup: u64,
    /// Estimated dead rows.
    pub n_dead_tup: u64,
    /// Manual vacuums.
    pub vacuum_count: u64,
    /// Autovacuums.
    pub autovacuum_count: u64,
    /// Rows changed since the last analyze (a state value, not a count).
    #[serde(default)]
    pub n_mod_since_analyze: u64,
    /// Manual analyzes.
    #[serde(default)]
    pub analyze_count: u64,
    /// Analyzes by autovacuum.
    #[serde(default)]
    pub autoanalyze_count: u64,
    /// Heap page buffer hits.
    pub heap_blks_hit: u64,
    /// Heap pages read.
    pub heap_blks_read: u64,
    /// Index page buffer hits, all the table's indexes (pg_statio_user_tables.idx_blks_hit).
    pub idx_blks_hit: u64,
    /// Index pages read.
    pub idx_blks_read: u64,
    /// Index entries inserted.
    pub index_entries_inserted: u64,
    /// Tuple versions examined by reads.
    pub versions_traversed: u64,
    /// Pages pruned on access.
    pub pages_pruned: u64,
    /// Hint-bit writes.
    pub hint_bit_writes: u64,
    /// Index entries marked dead by scans (LP_DEAD, `_bt_killitems`).
    #[serde(default)]
    pub index_items_killed: u64,
    /// Index entries removed by simple deletion before a split.
    #[serde(default)]
    pub index_simple_deleted: u64,
    /// Index entries removed by bottom-up deletion.
    #[serde(default)]
    pub index_bottom_up_deleted: u64,
    /// Bottom-up deletion passes.
    #[serde(default)]
    pub index_bottom_up_passes: u64,
    /// Deduplication passes (full leaves whose equal keys were merged into posting lists
    /// before a split).
    #[serde(default)]
    pub index_dedup_passes: u64,
}
