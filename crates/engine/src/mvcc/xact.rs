//! The transaction manager: xid assignment, clog, proc array, snapshots, and waits for a
//! transaction to end (with deadlock detection).

use super::{Snapshot, Xid, FIRST_NORMAL_XID, INVALID_XID};
use crate::error::TxnError;
use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Fate of a transaction in the commit log (PostgreSQL clog.h `XidStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XidStatus {
    /// Not yet committed or aborted.
    InProgress,
    /// Committed.
    Committed,
    /// Aborted (or crashed).
    Aborted,
}

/// A slot in the proc array: one per open transaction, whether or not it has an xid
/// (PostgreSQL PGPROC).
pub type ProcId = u64;

#[derive(Default)]
struct Proc {
    xid: Xid,
    /// Oldest xmin of the snapshots the transaction holds (0 = none).
    xmin: Xid,
}

#[derive(Default)]
struct ProcArray {
    procs: BTreeMap<ProcId, Proc>,
    /// Running xids (those with an assigned xid, not yet ended).
    running: BTreeMap<Xid, ProcId>,
}

/// Transactions of one database. See the module doc of `mvcc`.
pub struct TransactionManager {
    next_xid: AtomicU32,
    next_proc: AtomicU64,
    procs: Mutex<ProcArray>,
    /// One byte per xid, indexed by xid (0 in progress, 1 committed, 2 aborted).
    clog: RwLock<Vec<u8>>,
    /// Wait-for edges: waiting xid → xid it waits for (deadlock.c's graph, for xid waits).
    waits: Mutex<HashMap<Xid, Xid>>,
    ended: Condvar,
    /// Lowest xid whose status changed since the clog was last written (u32::MAX: none).
    clog_dirty_from: AtomicU32,
    /// Held shared from a commit record's insertion until its clog update, exclusively by
    /// the checkpoint's clog write (PostgreSQL's DELAY_CHKPT_START, see
    /// [`TransactionManager::delay_checkpoint`]).
    delay_checkpoint: RwLock<()>,
}

/// Xids per byte of the clog file: 2 status bits each (clog.c CLOG_XACTS_PER_BYTE).
pub const CLOG_XACTS_PER_BYTE: u32 = 4;
/// Bytes of a clog page, the unit the clog file is written in (BLCKSZ).
pub const CLOG_PAGE_BYTES: u32 = 8192;

impl Default for TransactionManager {
    fn default() -> Self {
        Self::new()
    }
}

impl TransactionManager {
    /// A manager with no transactions; the first xid is [`FIRST_NORMAL_XID`].
    pub fn new() -> Self {
        TransactionManager {
            next_xid: AtomicU32::new(FIRST_NORMAL_XID),
            next_proc: AtomicU64::new(1),
            procs: Mutex::new(ProcArray::default()),
            clog: RwLock::new(vec![1; FIRST_NORMAL_XID as usize]),
            waits: Mutex::new(HashMap::new()),
            ended: Condvar::new(),
            clog_dirty_from: AtomicU32::new(0),
            delay_checkpoint: RwLock::new(()),
        }
    }

    /// A manager after crash recovery (xlog.c `StartupXLOG` with clog.c `StartupCLOG` and
    /// `TrimCLOG`): statuses from the clog file `clog_file` (2 bits per xid, as
    /// [`TransactionManager::clog_to_write`] wrote it), then the commit and abort records
    /// redo found (`ends`, xact_redo_commit / xact_redo_abort). The next xid follows the
    /// largest one either knows of or any record named (`max_xid`). Every xid below it that
    /// is still without a status neither committed nor aborted before the crash: it is
    /// marked aborted. Returns the manager and how many xids it marked so.
    pub fn recovered(clog_file: &[u8], ends: &[(Xid, bool)], max_xid: Xid) -> (Self, u64) {
        let tm = TransactionManager::new();
        let mut next = FIRST_NORMAL_XID;
        let mut aborted = 0;
        {
            let mut clog = tm.clog.write();
            let n = clog_file.len() * CLOG_XACTS_PER_BYTE as usize;
            let len = n.max(clog.len());
            clog.resize(len, 0);
            for (i, b) in clog_file.iter().enumerate() {
                for k in 0..CLOG_XACTS_PER_BYTE as usize {
                    let st = (b >> (2 * k)) & 3;
                    let xid = i * CLOG_XACTS_PER_BYTE as usize + k;
                    if xid >= FIRST_NORMAL_XID as usize && st != 0 {
                        clog[xid] = st.min(2);
                        next = next.max(xid as Xid + 1);
                    }
                }
            }
            for &(xid, committed) in ends {
                if (xid as usize) >= clog.len() {
                    clog.resize((xid as usize + 1).next_power_of_two(), 0);
                }
                if xid >= FIRST_NORMAL_XID {
                    clog[xid as usize] = if committed { 1 } else { 2 };
                    next = next.max(xid + 1);
                }
            }
            next = next.max(max_xid.saturating_add(1));
            if clog.len() < next as usize {
                clog.resize((next as usize).next_power_of_two(), 0);
            }
            for st in &mut clog[FIRST_NORMAL_XID as usize..next as usize] {
                if *st == 0 {
                    *st = 2;
                    aborted += 1;
                }
            }
        }
        tm.next_xid.store(next, Ordering::Release);
        tm.clog_dirty_from.store(0, Ordering::Release);
        (tm, aborted)
    }

    /// A manager after InnoDB-style crash recovery, where the undo logs, not a clog, say
    /// which transactions did not commit (trx0trx.cc `trx_lists_init_at_db_start` puts the
    /// transactions of active undo logs in `trx_sys.rw_trx_hash`; every other id below
    /// `trx_sys.m_max_trx_id` reads as committed to a read view): the next xid is `next`
    /// (above every id in an undo log header, a rollback segment header and the replayed
    /// WAL), the xids in `aborted` (rolled back at recovery, or with an abort record) are
    /// aborted, and every other xid below `next` is committed. No transaction is running.
    pub fn recovered_committed(next: Xid, aborted: &[Xid]) -> Self {
        let tm = TransactionManager::new();
        let next = next.max(FIRST_NORMAL_XID);
        {
            let mut clog = tm.clog.write();
            clog.resize((next as usize).next_power_of_two(), 0);
            for st in &mut clog[FIRST_NORMAL_XID as usize..next as usize] {
                *st = 1;
            }
            for &x in aborted {
                if x >= FIRST_NORMAL_XID && x < next {
                    clog[x as usize] = 2;
                }
            }
        }
        tm.next_xid.store(next, Ordering::Release);
        tm.clog_dirty_from.store(0, Ordering::Release);
        tm
    }

    /// Held (shared) by a committing transaction from before its commit record is inserted
    /// until its clog entry is set; the checkpoint's clog write takes it exclusively after
    /// the redo pointer is set, so a commit whose record lies before the redo pointer is in
    /// the clog that checkpoint writes (PostgreSQL `RecordTransactionCommit` sets
    /// DELAY_CHKPT_START and `CreateCheckPoint` waits for it; without this, a commit logged
    /// just before the redo pointer and set in the clog just after the clog was written
    /// would be lost by a crash before the next checkpoint).
    pub fn delay_checkpoint(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.delay_checkpoint.read()
    }

    /// The clog bytes to write at a checkpoint (clog.c `CheckPointCLOG`): the pages from the
    /// one holding the lowest xid whose status changed since the last call to the end of
    /// the clog, 2 bits per xid (0 in progress, 1 committed, 2 aborted), as
    /// `(byte offset in the clog file, bytes)` — whole [`CLOG_PAGE_BYTES`] pages; `None`
    /// when nothing changed. Waits for commits between their record and their clog update
    /// ([`TransactionManager::delay_checkpoint`]). On a failed write, hand the offset back
    /// with [`TransactionManager::clog_write_failed`].
    pub fn clog_to_write(&self) -> Option<(u64, Vec<u8>)> {
        let _wait = self.delay_checkpoint.write();
        let from = self.clog_dirty_from.swap(u32::MAX, Ordering::AcqRel);
        let clog = self.clog.read();
        let next = self.next_xid.load(Ordering::Acquire) as usize;
        if from == u32::MAX || from as usize >= next {
            return None;
        }
        let per_page = (CLOG_PAGE_BYTES * CLOG_XACTS_PER_BYTE) as usize;
        let first = from as usize / per_page * per_page;
        let end = next.div_ceil(per_page) * per_page;
        let mut bytes = vec![0u8; (end - first) / CLOG_XACTS_PER_BYTE as usize];
        for xid in first..next.min(clog.len()) {
            let st = clog[xid] & 3;
            let i = (xid - first) / CLOG_XACTS_PER_BYTE as usize;
            bytes[i] |= st << (2 * (xid % CLOG_XACTS_PER_BYTE as usize));
        }
        Some(((first / CLOG_XACTS_PER_BYTE as usize) as u64, bytes))
    }

    /// Marks the clog dirty again from byte `offset` (a write of
    /// [`TransactionManager::clog_to_write`]'s bytes failed).
    pub fn clog_write_failed(&self, offset: u64) {
        let xid = (offset * CLOG_XACTS_PER_BYTE as u64).min(u32::MAX as u64 - 1) as u32;
        self.clog_dirty_from.fetch_min(xid, Ordering::AcqRel);
    }

    /// Registers a new transaction without an xid (PostgreSQL assigns xids lazily, at the
    /// first change: read-only transactions never get one).
    pub fn begin(&self) -> ProcId {
        let id = self.next_proc.fetch_add(1, Ordering::Relaxed);
        self.procs.lock().procs.insert(id, Proc::default());
        id
    }

    /// Assigns an xid to `proc` if it has none (PostgreSQL `GetCurrentTransactionId`);
    /// returns it.
    pub fn assign_xid(&self, proc: ProcId) -> Xid {
        let mut pa = self.procs.lock();
        if let Some(p) = pa.procs.get(&proc) {
            if p.xid != INVALID_XID {
                return p.xid;
            }
        }
        // Assign under the proc-array lock so that snapshots see a consistent running set
        // (GetNewTransactionId + ProcArray insertion under XidGenLock).
        let xid = self.next_xid.fetch_add(1, Ordering::AcqRel);
        {
            let mut clog = self.clog.write();
            if clog.len() <= xid as usize {
                let new_len = (xid as usize + 1).next_power_of_two();
                clog.resize(new_len, 0);
            }
            clog[xid as usize] = 0;
        }
        pa.procs.entry(proc).or_default().xid = xid;
        pa.running.insert(xid, proc);
        xid
    }

    /// A fresh value of the xid sequence that no transaction gets as its xid: InnoDB's
    /// `trx_sys.get_new_trx_id()` as MariaDB 10.11 takes it for a commit id
    /// (storage/innobase/handler/ha_innodb.cc `innodb_prepare_commit_versioned`, called by
    /// sql/handler.cc `ha_commit_trans` just before `TR_table::update` writes the
    /// `mysql.transaction_registry` row). It is larger than every xid assigned before and
    /// smaller than every xid assigned after. Taken under the proc-array lock as
    /// [`TransactionManager::assign_xid`] takes an xid; its clog status is never set (no
    /// tuple carries it: it reads as in progress, and as aborted after a crash's
    /// `TrimCLOG`).
    pub fn new_trx_id(&self) -> Xid {
        let _pa = self.procs.lock();
        self.next_xid.fetch_add(1, Ordering::AcqRel)
    }

    /// Moves the next xid past `used` when it is not already (an id handed out by
    /// [`TransactionManager::new_trx_id`] and stored in a table, which recovery's own bound
    /// does not see). Call before any transaction starts.
    pub fn advance_next_xid_past(&self, used: Xid) {
        let _pa = self.procs.lock();
        self.next_xid
            .fetch_max(used.saturating_add(1), Ordering::AcqRel);
    }

    /// The xid of `proc` (0 if none yet).
    pub fn xid_of(&self, proc: ProcId) -> Xid {
        self.procs
            .lock()
            .procs
            .get(&proc)
            .map_or(INVALID_XID, |p| p.xid)
    }

    /// Takes a snapshot for `proc` (procarray.c `GetSnapshotData`) and records its xmin in
    /// the proc's slot (raising no earlier one: a repeatable-read transaction keeps its first).
    pub fn snapshot(&self, proc: ProcId) -> Snapshot {
        let mut pa = self.procs.lock();
        let xmax = self.next_xid.load(Ordering::Acquire);
        let xip: Vec<Xid> = pa.running.keys().copied().collect();
        let xmin = xip.first().copied().unwrap_or(xmax);
        if let Some(p) = pa.procs.get_mut(&proc) {
            if p.xmin == INVALID_XID {
                p.xmin = xmin;
            }
        }
        Snapshot { xmin, xmax, xip }
    }

    /// Forgets the xmin `proc` holds (at read committed, between statements; PostgreSQL
    /// `SnapshotResetXmin`).
    pub fn release_snapshot(&self, proc: ProcId) {
        if let Some(p) = self.procs.lock().procs.get_mut(&proc) {
            p.xmin = INVALID_XID;
        }
    }

    /// The oldest xid any transaction may still need to see as running: the horizon below
    /// which a version deleted by a committed transaction is dead for everyone (procarray.c
    /// `GetOldestNonRemovableTransactionId`; InnoDB's oldest read view for purge).
    pub fn oldest_xmin(&self) -> Xid {
        let pa = self.procs.lock();
        let mut oldest = self.next_xid.load(Ordering::Acquire);
        for p in pa.procs.values() {
            if p.xid != INVALID_XID {
                oldest = oldest.min(p.xid);
            }
            if p.xmin != INVALID_XID {
                oldest = oldest.min(p.xmin);
            }
        }
        oldest
    }

    /// The next xid to be assigned.
    pub fn next_xid(&self) -> Xid {
        self.next_xid.load(Ordering::Acquire)
    }

    /// Fate of `xid` in the clog (PostgreSQL `TransactionIdGetStatus`). Xids never assigned
    /// read as aborted.
    pub fn status(&self, xid: Xid) -> XidStatus {
        if xid == INVALID_XID {
            return XidStatus::Aborted;
        }
        match self.clog.read().get(xid as usize).copied() {
            Some(0) if xid < self.next_xid.load(Ordering::Acquire) => XidStatus::InProgress,
            Some(1) => XidStatus::Committed,
            _ => XidStatus::Aborted,
        }
    }

    /// True while `xid` is running (in the proc array).
    pub fn is_running(&self, xid: Xid) -> bool {
        self.procs.lock().running.contains_key(&xid)
    }

    /// Ends `proc`: records the fate of its xid (if any) in the clog, then removes it from
    /// the proc array (xact.c `RecordTransactionCommit` → `ProcArrayEndTransaction`) and wakes
    /// the transactions waiting for it. The caller has made the commit record durable first.
    pub fn end(&self, proc: ProcId, committed: bool) {
        // The clog entry and the removal from the running set change together under the
        // proc-array lock: a writer that reads "committed" in the clog may then build on the
        // row, and every snapshot taken after that must see the transaction as finished
        // (PostgreSQL gets the same guarantee by checking the proc array before the clog in
        // HeapTupleSatisfiesUpdate; a gap here let readers see half a transaction).
        let xid = {
            let mut pa = self.procs.lock();
            let xid = pa.procs.get(&proc).map_or(INVALID_XID, |p| p.xid);
            if xid != INVALID_XID {
                self.clog.write()[xid as usize] = if committed { 1 } else { 2 };
                self.clog_dirty_from.fetch_min(xid, Ordering::AcqRel);
                pa.running.remove(&xid);
            }
            pa.procs.remove(&proc);
            xid
        };
        let mut w = self.waits.lock();
        w.remove(&xid);
        drop(w);
        self.ended.notify_all();
    }

    /// Waits until `holder` has ended (lmgr.c `XactLockTableWait`). `waiter` is the xid of
    /// the waiting transaction: the wait is entered in the wait-for graph first, and if it
    /// closes a cycle the waiter is the victim (PostgreSQL aborts the transaction that runs
    /// the check after deadlock_timeout; mvcclab checks at once, a documented difference).
    ///
    /// Errors: [`TxnError::Deadlock`](crate::error::TxnError::Deadlock) naming the cycle.
    pub fn wait_for(&self, waiter: Xid, holder: Xid) -> Result<()> {
        if holder == INVALID_XID || holder == waiter {
            return Ok(());
        }
        let mut w = self.waits.lock();
        // Follow the chain from the holder: reaching the waiter means a cycle.
        let mut cycle = vec![waiter, holder];
        let mut at = holder;
        while let Some(&next) = w.get(&at) {
            if next == waiter {
                return Err(Error::Txn(TxnError::Deadlock(format!(
                    "transaction {waiter} waits for {}; this transaction was chosen as the victim",
                    cycle[1..]
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", which waits for ")
                        + &format!(", which waits for {waiter}")
                ))));
            }
            cycle.push(next);
            at = next;
            if cycle.len() > 10_000 {
                break;
            }
        }
        w.insert(waiter, holder);
        while self.is_running(holder) {
            self.ended.wait(&mut w);
        }
        w.remove(&waiter);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn snapshot_sees_committed_before_it_and_not_after() {
        let tm = TransactionManager::new();
        let a = tm.begin();
        let xa = tm.assign_xid(a);
        let b = tm.begin();
        let xb = tm.assign_xid(b);
        tm.end(a, true);
        let r = tm.begin();
        let s = tm.snapshot(r);
        assert!(!s.xid_in_progress(xa));
        assert_eq!(tm.status(xa), XidStatus::Committed);
        assert!(s.xid_in_progress(xb), "b was running");
        tm.end(b, true);
        assert!(
            s.xid_in_progress(xb),
            "still in progress for the old snapshot"
        );
        let c = tm.begin();
        let xc = tm.assign_xid(c);
        assert!(s.xid_in_progress(xc), "assigned after the snapshot");
        tm.end(c, false);
        assert_eq!(tm.status(xc), XidStatus::Aborted);
    }

    #[test]
    fn new_trx_id_lies_between_the_xids_assigned_around_it() {
        let tm = TransactionManager::new();
        let a = tm.begin();
        let xa = tm.assign_xid(a);
        let commit_id = tm.new_trx_id();
        tm.end(a, true);
        let b = tm.begin();
        let xb = tm.assign_xid(b);
        assert!(
            xa < commit_id && commit_id < xb,
            "{xa} < {commit_id} < {xb}"
        );
        assert!(!tm.is_running(commit_id));
        tm.end(b, true);
        tm.advance_next_xid_past(xb + 10);
        assert_eq!(tm.next_xid(), xb + 11);
        tm.advance_next_xid_past(xa);
        assert_eq!(tm.next_xid(), xb + 11, "never moves back");
    }

    #[test]
    fn read_only_transactions_take_no_xid_but_hold_the_horizon() {
        let tm = TransactionManager::new();
        let w = tm.begin();
        let xw = tm.assign_xid(w);
        let r = tm.begin();
        let _s = tm.snapshot(r);
        assert_eq!(tm.xid_of(r), INVALID_XID);
        tm.end(w, true);
        assert_eq!(
            tm.oldest_xmin(),
            xw,
            "the reader's snapshot still treats xw as running"
        );
        tm.release_snapshot(r);
        assert_eq!(tm.oldest_xmin(), tm.next_xid());
        tm.end(r, true);
    }

    #[test]
    fn waiter_resumes_when_the_holder_ends() {
        let tm = Arc::new(TransactionManager::new());
        let h = tm.begin();
        let xh = tm.assign_xid(h);
        let w = tm.begin();
        let xw = tm.assign_xid(w);
        let t = {
            let tm = tm.clone();
            std::thread::spawn(move || tm.wait_for(xw, xh))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!t.is_finished());
        tm.end(h, true);
        t.join().unwrap().unwrap();
    }

    #[test]
    fn a_wait_that_closes_a_cycle_is_a_deadlock() {
        let tm = Arc::new(TransactionManager::new());
        let a = tm.begin();
        let xa = tm.assign_xid(a);
        let b = tm.begin();
        let xb = tm.assign_xid(b);
        let t = {
            let tm = tm.clone();
            std::thread::spawn(move || tm.wait_for(xa, xb))
        };
        while !tm.waits.lock().contains_key(&xa) {
            std::thread::yield_now();
        }
        let e = tm.wait_for(xb, xa).unwrap_err();
        assert!(matches!(e, Error::Txn(TxnError::Deadlock(_))), "{e}");
        assert!(e.to_string().contains(&xa.to_string()));
        tm.end(b, false);
        t.join().unwrap().unwrap();
    }
}
