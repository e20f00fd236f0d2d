//! Transactions shared by every design: transaction ids, the commit log, the array of
//! running transactions, snapshots and waits on a transaction's end with deadlock
//! detection.
//!
//! Follows PostgreSQL REL_15: src/backend/access/transam/README (xids, clog),
//! procarray.c `GetSnapshotData` (snapshots), lmgr.c `XactLockTableWait` (waiting for a
//! transaction that holds a row) and deadlock.c (wait-for graph). The InnoDB preset uses the
//! same ids as its trx ids and the same snapshot shape for its read views (read0read.cc
//! `ReadView::open`: low limit = next id, up limit = oldest active, ids = active list).
//!
//! # Invariants
//! 1. Xids are assigned in increasing order from [`FIRST_NORMAL_XID`]; an xid is in the
//!    running set from assignment until its commit or abort is recorded in the clog.
//! 2. The clog records each xid's fate once: in progress → committed | aborted.
//! 3. A snapshot taken at time T treats as in progress exactly the xids that were running at
//!    T or assigned after T (`xip` plus everything ≥ `xmax`).
//! 4. `oldest_xmin()` never exceeds the xmin of any live snapshot or the xid of any running
//!    transaction: what is dead before it is dead for every reader (vacuum/purge horizon).
//!
//! # Locking
//! `procs` (the proc array) is one mutex (PostgreSQL's ProcArrayLock); the clog an
//! `RwLock`; waits use the `waits` mutex and a condvar. Order: `waits` → `procs` → clog; no
//! lock is held while sleeping except through the condvar.
//!
//! # Crash safety
//! The clog and proc array are in memory (PostgreSQL keeps pg_xact on disk through SLRU
//! buffers; its I/O is small and not modelled). Recovery (issue 7) marks xids without a
//! commit record as aborted.

mod error;
mod snapshot;
mod xact;
pub mod xact_info;
mod xid;

pub use error::TxnError;
pub use snapshot::Snapshot;
pub use xact::{ProcId, TransactionManager, XidStatus, CLOG_PAGE_BYTES, CLOG_XACTS_PER_BYTE};
pub use xid::{xid_of_trx_id, TrxId, Xid, FIRST_NORMAL_XID, INVALID_XID};

/// Isolation level of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// A new snapshot (read view) for every statement (PostgreSQL's default).
    ReadCommitted,
    /// One snapshot for the whole transaction (InnoDB's default; PostgreSQL's snapshot
    /// isolation).
    RepeatableRead,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().replace([' ', '-'], "_").as_str() {
            "read_committed" | "rc" => Ok(Isolation::ReadCommitted),
            "repeatable_read" | "rr" => Ok(Isolation::RepeatableRead),
            _ => Err(format!(
                "unknown isolation '{s}'; expected read_committed or repeatable_read"
            )),
        }
    }
}
