//! The `innodb` design's table access method: rows in the leaves of the primary-key
//! B+tree, updated in place with the old values of the changed columns in an undo log,
//! newest-to-oldest version chains through roll pointers, secondary indexes keyed by the
//! primary key with delete marks, and purge.
//!
//! Follows MariaDB 10.11 storage/innobase (row0ins.cc, row0upd.cc, row0vers.cc, row0sel.cc,
//! row0undo.cc, row0purge.cc, trx0undo.cc, trx0rec.cc, trx0purge.cc) and the manual's
//! "InnoDB Multi-Versioning" and "Purge Configuration" pages.
//!
//! # Rules
//! 1. Every clustered record carries DB_TRX_ID and DB_ROLL_PTR. An update writes an undo
//!    record holding the old values of the changed columns (and the ordering fields of every
//!    index whose key changes) and changes the record in place; a delete sets the delete
//!    mark, with an undo record.
//! 2. A record whose DB_TRX_ID is a running transaction is locked by it (implicit lock);
//!    writers wait for that transaction, with deadlock detection. UPDATE and DELETE work on
//!    the newest version whatever the read view (a locking read), so at repeatable read the
//!    lost-update behaviour is InnoDB's: no serialization failure, the newest value is used.
//! 3. A consistent read starts at the clustered record and applies undo records newest to
//!    oldest until DB_TRX_ID is visible to the read view (row_vers_build_for_consistent_read);
//!    an insert undo record means the row did not exist for the view.
//! 4. Secondary index entries hold the primary key and are never updated in place: a key
//!    change delete-marks the old entry and inserts the new one. Reads through a secondary
//!    index check the clustered record's visible version still carries the key.
//! 5. Insert undo is dropped at commit; update undo joins the history list in commit order
//!    and is purged once the transaction is older than every read view (the oldest-xmin
//!    horizon): purge removes delete-marked records and stale delete-marked secondary
//!    entries; history truncation after each purge batch then frees the undo segments.
//! 6. Undo lives in N rollback segments (`rollback_segments`, 128 in the preset): a
//!    read-write transaction takes the next one in turn and keeps it until it ends; each
//!    has a header page (slots, history list), its own segment caches and its own history
//!    list (see `rseg` and `undo_log`; trx0trx.cc `trx_assign_rseg_low`, trx0rseg.cc).
//!
//! # Locking
//! A row's read-check-modify sequence runs under a per-primary-key stripe mutex (InnoDB holds
//! the leaf page latch for it); waits for a lock holder happen with the stripe released.
//! Purge and rollback take the same stripe. B+tree and undo page latches are taken inside,
//! one at a time, except under a rollback segment's mutex: lock order row stripe → rollback
//! segment mutex → its header page → undo pages (see `undo_log`). The history list's mutex and
//! the truncation mutex (one truncating thread at a time) are leaves or outermost: purge
//! takes a log from the history, releases it, then purges; truncation takes no row stripe.
//!
//! # Crash safety
//! Every clustered, secondary, undo and rollback segment header page change is WAL-logged
//! (B+tree and UNDO records). At recovery the rollback segments' slots, caches and history
//! lists are rebuilt from their pages (`UndoSpace::open`) and the transactions whose undo
//! segments are still active are rolled back through their undo records
//! (`ClusteredAm::open`).
//!
//! # Documented differences from InnoDB
//! - Redo of an in-place update logs the changed bytes (PATCH_VALUE) under mvcclab's larger
//!   WAL record headers (InnoDB's mini-transaction records take a few bytes).
//! - The purge horizon is the oldest xmin of all snapshots (InnoDB uses the oldest view's
//!   transaction number), which can keep a log a little longer.
//! - Secondary entries carry their delete mark in a 1-byte value (InnoDB: a header bit).
//! - No gap or next-key locks (phantoms at repeatable read are not prevented for writes),
//!   no explicit record locks for locking reads, no change buffer, no adaptive hash index.
//! - Updating a primary-key column is refused (InnoDB does delete-mark + insert).
//! - The rollback segments live in one undo relation (the system tablespace with
//!   innodb_undo_tablespaces=0); no undo tablespace truncation; creating and freeing undo
//!   segments touches no file segment inode or extent descriptor pages.
//! - Insert and update undo are separate segments, insert undo freed or cached at commit
//!   (MariaDB before 10.3); MariaDB 10.3+ keeps one log per transaction, purges insert undo
//!   too and resets DB_TRX_ID (row0purge.cc `row_purge_reset_trx_id`).
//!
//! # Files
//! Along MariaDB's storage/innobase/trx/ map: `undo_page` (undo page, segment and log
//! header layouts, trx0undo.h), `undo_rec` (undo records and roll pointers, trx0rec.cc),
//! `undo_wal` (the UNDO WAL records: info codes, encoders, redo), `rseg` (rollback
//! segments, trx0rseg.cc), `undo_log` (a transaction's undo logs and segments,
//! trx0undo.cc), `undo_startup` (the undo space rebuilt from its pages at startup),
//! `purge` (history list, purge and history truncation, trx0purge.cc), `table` (the
//! clustered table, row0*.cc), `check` (its index check), `am` (the access method: end of
//! transaction, the purge coordinator and history truncation, undo recovery; ha_innodb.cc,
//! srv0srv.cc, trx0roll.cc).

mod am;
mod check;
mod purge;
pub mod row_id;
pub mod rseg;
mod table;
mod undo_log;
mod undo_page;
mod undo_rec;
mod undo_startup;
pub mod undo_wal;

pub use am::ClusteredAm;
pub use purge::{purge_tasks, History, HistoryEntry, PurgeConfig};
pub use row_id::RowIdSequence;
pub use rseg::{RsegInfo, PAGE_TYPE_RSEG};
pub use table::{ClusteredTable, RowCtx};
pub use undo_log::{LogRef, TrxUndo, UndoCounters, UndoSegment, UndoSpace};
pub use undo_page::PAGE_TYPE_UNDO;
pub use undo_rec::{record_on_page, RollPtr, UndoRecord, UndoType};
pub use undo_startup::RecoveredUndo;
pub use undo_wal::info_name as undo_info_name;
