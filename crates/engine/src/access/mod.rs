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
pub use method::{Statement, TableAccessMethod, TableRead, TableWrite, XactEnd};
pub use recovered::{AmOpen, Recovering, RecoveryReport, Redone};
pub use relations::{TableId, TableRelations};
pub use stats::{TableCounters, TableStats};
pub use tables::{check_not_deferred, AmShared, Catalogued, TableList};
pub use txn::{Changes, TxnCore};
