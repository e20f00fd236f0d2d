//! What the storage-level half of crash recovery ([`crate::recovery::redo`]) hands the
//! table access method for its own half, and the report both halves fill.

use crate::storage::CatalogBlob;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What recovery did at one open. Counts are exact; `duration_us` is wall-clock time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Redo started here (the last checkpoint's redo pointer).
    pub redo_start_lsn: u64,
    /// End of the valid WAL, where new records go.
    pub redo_end_lsn: u64,
    /// WAL records read and replayed.
    pub records_replayed: u64,
    /// Blocks changed by replaying a record.
    pub blocks_redone: u64,
    /// Blocks skipped because their page LSN was already at or past the record's end, or
    /// (doublewrite designs) because a later record rebuilds the page whole.
    pub blocks_skipped: u64,
    /// Blocks restored from a full-page image.
    pub full_page_images_restored: u64,
    /// Torn home pages repaired from the doublewrite area.
    pub doublewrite_pages_restored: u64,
    /// B+tree splits a crash had left without their downlink, finished.
    pub splits_finished: u64,
    /// Transactions that had neither committed nor aborted, marked aborted (postgres).
    pub transactions_aborted: u64,
    /// Active transactions rolled back through their undo logs (innodb).
    pub transactions_rolled_back: u64,
    /// Undo records applied by those rollbacks.
    pub undo_records_rolled_back: u64,
    /// Time taken, µs.
    pub duration_us: u64,
}

/// What [`crate::recovery::redo`] found besides the pages.
#[derive(Debug, Default)]
pub struct Redone {
    /// The newest catalog (version 0 and no bytes when no DDL was ever logged).
    pub catalog: CatalogBlob,
    /// The outcome of every transaction whose commit (true) or abort (false) record was
    /// replayed, in LSN order.
    pub xact_ends: Vec<(u32, bool)>,
    /// The largest xid named by any record replayed (0 if none).
    pub max_xid: u32,
    /// The engine state the last checkpoint record replayed carries
    /// ([`crate::storage::CheckpointHook::checkpoint`]).
    pub checkpoint_engine_state: Option<Vec<u8>>,
    /// The largest `DB_ROW_ID` counter value a `Catalog/ROW_ID` record replayed wrote to
    /// the dictionary header (0 if none; `crate::clustered::RowIdSequence`).
    pub dict_hdr_row_id: u64,
    /// Redo found only a shutdown checkpoint
    /// ([`crate::wal::xlog_info::CHECKPOINT_SHUTDOWN`]): the database was closed cleanly,
    /// so no B+tree split can be incomplete and recovery's tree walk is skipped (xlog.c
    /// `StartupXLOG` leaves `InRecovery` false after a clean shutdown).
    pub clean_shutdown: bool,
    /// Counts so far (the engine adds its own).
    pub report: RecoveryReport,
    /// When recovery started.
    pub started: Option<Instant>,
}

/// What a table access method is opened on: the storage, the design's switches, and, for
/// a database that existed, what crash recovery's storage half found
/// ([`crate::heap::HeapAm::open`], [`crate::clustered::ClusteredAm::open`]).
pub struct AmOpen<'a> {
    /// The storage, its pages redone.
    pub storage: std::sync::Arc<crate::storage::Storage>,
    /// The design's switches.
    pub design: crate::design::DesignConfig,
    /// `None` for a new database.
    pub recovering: Option<Recovering<'a>>,
}

/// What recovery hands an access method: the catalog redo found, and what redo found
/// besides the pages, whose report the access method adds its counts to.
pub struct Recovering<'a> {
    /// The newest catalog.
    pub catalog: &'a super::CatalogSnapshot,
    /// The transaction outcomes, xids, checkpoint state and report of redo.
    pub redone: &'a mut Redone,
}
