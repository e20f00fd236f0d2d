//! What every design's transaction shares: its proc in the transaction manager, the read
//! view per statement (read committed) or per transaction (repeatable read), the xid
//! assigned at the first change, per-table change counts for pgstat, and the commit or
//! abort record (PostgreSQL xact.c `RecordTransactionCommit`; InnoDB writes its commit in
//! the same place of trx_commit).

use super::relations::TableId;
use crate::error::TxnError;
use crate::error::{Error, Result};
use crate::mvcc::{xact_info, Isolation, ProcId, Snapshot, TransactionManager, Xid, INVALID_XID};
use crate::wal::{rmgr, RecordBuilder, Wal};
use std::collections::BTreeMap;

/// Inserted, updated, deleted rows of one table in one transaction.
pub type Changes = (u64, u64, u64);

/// The design-independent state of a transaction.
pub struct TxnCore {
    proc: ProcId,
    iso: Isolation,
    view: Option<Snapshot>,
    changes: BTreeMap<TableId, Changes>,
    ended: bool,
}

impl TxnCore {
    /// A new transaction (no xid until its first change).
    pub fn begin(tm: &TransactionManager, iso: Isolation) -> Self {
        TxnCore {
            proc: tm.begin(),
            iso,
            view: None,
            changes: BTreeMap::new(),
            ended: false,
        }
    }

    /// Errors: [`TxnError::TransactionClosed`](crate::error::TxnError::TransactionClosed) once the transaction ended.
    pub fn check_open(&self) -> Result<()> {
        if self.ended {
            return Err(Error::Txn(TxnError::TransactionClosed("ended")));
        }
        Ok(())
    }

    /// The isolation level.
    pub fn isolation(&self) -> Isolation {
        self.iso
    }

    /// Starts a statement: its xid (assigned first when it `writes`) and its read view — a
    /// new one at read committed, the transaction's (taken at its first statement) at
    /// repeatable read.
    pub fn statement(&mut self, tm: &TransactionManager, writes: bool) -> (Xid, Snapshot) {
        let xid = if writes {
            tm.assign_xid(self.proc)
        } else {
            tm.xid_of(self.proc)
        };
        let view = match self.iso {
            Isolation::RepeatableRead => self
                .view
                .get_or_insert_with(|| tm.snapshot(self.proc))
                .clone(),
            Isolation::ReadCommitted => tm.snapshot(self.proc),
        };
        (xid, view)
    }

    /// Ends a statement: at read committed its view no longer holds back vacuum or purge.
    pub fn end_statement(&self, tm: &TransactionManager) {
        crate::buffer::release_held();
        if self.iso == Isolation::ReadCommitted {
            tm.release_snapshot(self.proc);
        }
    }

    /// Counts rows changed in table `t`.
    pub fn count(&mut self, t: TableId, ins: u64, upd: u64, del: u64) {
        let e = self.changes.entry(t).or_default();
        e.0 += ins;
        e.1 += upd;
        e.2 += del;
    }

    /// True once the transaction ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The transaction's xid (0 while it has none).
    pub fn xid(&self, tm: &TransactionManager) -> Xid {
        tm.xid_of(self.proc)
    }

    /// Writes the commit record and flushes the WAL to it (synchronous commit), or writes
    /// the abort record without a flush; nothing for a transaction without an xid.
    ///
    /// Errors: WAL errors.
    pub fn log_end(&self, tm: &TransactionManager, wal: &Wal, committed: bool) -> Result<()> {
        let xid = tm.xid_of(self.proc);
        if xid == INVALID_XID {
            return Ok(());
        }
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let info = if committed {
            xact_info::COMMIT
        } else {
            xact_info::ABORT
        };
        let rec = RecordBuilder::new(rmgr::XACT, info)
            .xid(xid)
            .main_data(&now_us.to_le_bytes());
        let lsn = wal.insert(&rec, &mut [])?;
        if committed {
            wal.flush(lsn)?;
        }
        Ok(())
    }

    /// Records the transaction's fate and leaves the proc array; returns the per-table
    /// change counts for pgstat's end-of-transaction accounting.
    pub fn finish(
        &mut self,
        tm: &TransactionManager,
        committed: bool,
    ) -> BTreeMap<TableId, Changes> {
        tm.end(self.proc, committed);
        self.ended = true;
        std::mem::take(&mut self.changes)
    }
}
