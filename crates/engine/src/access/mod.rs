//! The table access method layer: the trait every design's tables implement
//! ([`TableAccessMethod`], PostgreSQL tableam.h), and the types the designs and the engine
//! API above them share — table ids and relation files, an UPDATE's SET list
//! ([`Assign`]), a design's table list, the design-independent part of a transaction
//! ([`TxnCore`]), the catalog a database logs, and what recovery hands a design.
//!
//! Layers (docs/sourcetree.md): `db/` is written once over this trait; `heap/` and
//! `clustered/` implement it; nothing here imports from them. The per-table statistics
//! counters ([`TableCounters`], pgstat) and the garbage collection reports are here because
//! both designs keep them.
//!
//! # Adding a design
//! A new table design (an undo-based heap, newest-to-oldest chains, a history store, an
//! LSM tree) plugs in here:
//! 1. its table type implements [`Catalogued`], [`TableRead`] and [`TableWrite`] (with its
//!    per-transaction state as `TxnState`), in the design's own folder;
//! 2. its access method implements [`TableAccessMethod`] (end of transaction, garbage
//!    collection, counters, index check) and an `open(AmOpen, config)` constructor that
//!    starts its background threads and, given [`Recovering`], does its part of recovery;
//! 3. `crate::db::Database::open` maps its `(table_layout, version_storage)` switches to
//!    `DesignEngine<ItsAm>`;
//! 4. if it logs records of its own, its WAL resource manager (info codes, encoders and
//!    `redo_block`, opening with `crate::wal::redo::redo_block_ref`) is dispatched from
//!    `crate::recovery` and named in `record_type_name`.
//!
//! # Invariants
//! 1. A table's id is its position in its design's [`TableList`]; tables are never dropped.
//! 2. [`TableAccessMethod::end_xact`] calls [`TxnCore::finish`] exactly once per
//!    transaction, after the design's commit (or rollback) is logged, so the transaction
//!    leaves the proc array only once its outcome is durable (commit) or undone (abort).
//!
//! # Locking
//! [`TableList`] holds one `RwLock` over the list (see its doc); the trait's methods take
//! their design's locks (heap: page content locks; clustered: row stripes, then B+tree and
//! undo page latches), never a lock of this layer.
//!
//! # Crash safety
//! Nothing here writes: [`CatalogSnapshot`] is what `crate::storage::Storage::log_catalog`
//! logs and recovery reads back; [`TxnCore::log_end`] inserts the commit or abort record.

mod assign;
mod catalog_snapshot;
mod counters;
mod delta;
mod method;
mod recovered;
mod relations;
mod stats;
mod tables;
mod txn;

pub use assign::Assign;
pub use catalog_snapshot::{CatalogSnapshot, CatalogTable};
pub use counters::{AnalyzeReport, EngineCounters, GcReport, VacuumReport};
pub use method::{
    retain_by_key, IndexCondition, Statement, TableAccessMethod, TableRead, TableWrite, XactEnd,
};
pub use recovered::{AmOpen, Recovering, RecoveryReport, Redone};
pub use relations::{TableId, TableRelations};
pub use stats::{TableCounters, TableStats};
pub use tables::{check_not_deferred, AmShared, Catalogued, TableList};
pub use txn::{Changes, TxnCore};
