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
//! # Files
//! - `table.rs`: [`HeapTable`] and [`Ctx`]; update and delete (heapam.c `heap_update`,
//!   `heap_delete`).
//! - `insert.rs`: insert (`heap_insert`, hio.c `RelationGetBufferForTuple`).
//! - `fetch.rs`: reads through HOT chains (`heapam_index_fetch_tuple`,
//!   `heap_hot_search_buffer`) with hint bits.
//! - `index.rs`: index maintenance: entries and unique checks (execIndexing.c,
//!   `_bt_check_unique`), kill bits, the heap side of index deletion
//!   (`heap_index_delete_tuples`), the sorted build, the index check.
//! - `prune_opt.rs`: pruning a table's page, WAL-logged (`heap_page_prune_opt`);
//!   `prune.rs`: deciding and applying a prune on the page's bytes (pruneheap.c).
//! - `vacuum.rs`, `analyze.rs`: VACUUM (vacuumlazy.c) and ANALYZE (their reports, and the
//!   table's pgstat counters both designs keep, are in `crate::access`).
//! - `visibility.rs`: tuple visibility (heapam_visibility.c); `fsm.rs`, `vm.rs`: the free
//!   space and visibility maps.
//! - `page.rs`, `tuple.rs`: the page and tuple layouts (byte tables); `wal.rs`: the WAL
//!   resource manager (info codes, encoders, redo), which uses only those two and
//!   `prune.rs`'s prune result (`PruneResult`, `execute`, `set_prunable`).
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
mod fetch;
mod fsm;
mod index;
mod insert;
mod page;
mod prune;
mod prune_opt;
mod table;
mod tuple;
mod vacuum;
mod visibility;
mod vm;
pub mod wal;

pub use crate::access::{AnalyzeReport, TableCounters, TableStats, VacuumReport};
pub use am::HeapAm;
pub use analyze::{sample_blocks, ANALYZE_TARGET_ROWS};
pub use fsm::FreeSpaceMap;
pub use page::{ItemId, LpState, PAGE_TYPE_HEAP};
pub use prune::PruneResult;
pub use table::{Ctx, HeapTable};
pub use tuple::{maxalign, Tid};
pub use vacuum::VacuumConfig;
pub use vm::VisibilityMap;
pub use wal::info;

/// Raw access to heap pages and tuples, for tests and tools.
pub mod raw {
    pub use super::page::*;
    pub use super::tuple::*;
}
