//! Tuple visibility (PostgreSQL src/backend/access/heap/heapam_visibility.c, REL_15).
//!
//! Each function reads a tuple header, consults the clog through the transaction manager,
//! and returns its verdict with the hint bits it learned (`HEAP_XMIN_COMMITTED`, ...). The
//! caller ORs the hints into the tuple when it can take the page's exclusive lock without
//! waiting (PostgreSQL sets them under a share lock with `MarkBufferDirtyHint`; mvcclab
//! cannot write under a shared guard, so it re-locks conditionally: the effect, a dirtied
//! page, is the same). Command ids are not compared: mvcclab's operations are single-row
//! statements, so a transaction always sees its own earlier changes (documented
//! simplification).

use super::tuple::*;
use crate::mvcc::{Snapshot, TransactionManager, Xid, XidStatus, INVALID_XID};

fn xmin_fate(t: &[u8], own: Xid, tm: &TransactionManager, hints: &mut u16) -> Option<XidStatus> {
    let m = t.infomask();
    if m & HEAP_XMIN_COMMITTED != 0 {
        return Some(XidStatus::Committed);
    }
    if m & HEAP_XMIN_INVALID != 0 {
        return Some(XidStatus::Aborted);
    }
    let xmin = t.xmin();
    if xmin == own && own != INVALID_XID {
        return None; // own insert
    }
    let st = tm.status(xmin);
    match st {
        XidStatus::Committed => *hints |= HEAP_XMIN_COMMITTED,
        XidStatus::Aborted => *hints |= HEAP_XMIN_INVALID,
        XidStatus::InProgress => {}
    }
    Some(st)
}

fn xmax_fate(t: &[u8], tm: &TransactionManager, hints: &mut u16) -> XidStatus {
    let m = t.infomask();
    if m & HEAP_XMAX_COMMITTED != 0 {
        return XidStatus::Committed;
    }
    let st = tm.status(t.xmax());
    match st {
        XidStatus::Committed => *hints |= HEAP_XMAX_COMMITTED,
        XidStatus::Aborted => *hints |= HEAP_XMAX_INVALID,
        XidStatus::InProgress => {}
    }
    st
}

fn xmax_none(t: &[u8]) -> bool {
    t.infomask() & HEAP_XMAX_INVALID != 0 || t.xmax() == INVALID_XID
}

/// HeapTupleSatisfiesMVCC: is the tuple visible to `snap`, for the transaction whose xid is
/// `own` (0 if it has none)? Returns the verdict and hint bits.
pub fn satisfies_mvcc(t: &[u8], snap: &Snapshot, own: Xid, tm: &TransactionManager) -> (bool, u16) {
    let mut hints = 0;
    match xmin_fate(t, own, tm, &mut hints) {
        None => {
            // Inserted by this transaction: visible unless it also deleted it.
            let deleted =
                !xmax_none(t) && t.infomask() & HEAP_XMAX_LOCK_ONLY == 0 && t.xmax() == own;
            return (!deleted, hints);
        }
        Some(XidStatus::Aborted) => return (false, hints),
        Some(_) if snap.xid_in_progress(t.xmin()) => return (false, hints),
        Some(XidStatus::InProgress) => return (false, hints),
        Some(XidStatus::Committed) => {}
    }
    if xmax_none(t) || t.infomask() & HEAP_XMAX_LOCK_ONLY != 0 {
        return (true, hints);
    }
    let xmax = t.xmax();
    if xmax == own && own != INVALID_XID {
        return (false, hints);
    }
    if snap.xid_in_progress(xmax) {
        return (true, hints);
    }
    let st = xmax_fate(t, tm, &mut hints);
    (st != XidStatus::Committed, hints)
}

/// Result of [`satisfies_vacuum`] (PostgreSQL HTSV_Result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VacuumStatus {
    /// Dead to everyone: can be removed.
    Dead,
    /// Deleted by a committed transaction some snapshot may still not see.
    RecentlyDead,
    /// Live.
    Live,
    /// Inserted by a transaction still running.
    InsertInProgress,
    /// Deleted by a transaction still running.
    DeleteInProgress,
}

/// HeapTupleSatisfiesVacuum with horizon `oldest_xmin` (procarray's oldest non-removable
/// xid): is the tuple dead to every transaction?
pub fn satisfies_vacuum(
    t: &[u8],
    oldest_xmin: Xid,
    tm: &TransactionManager,
) -> (VacuumStatus, u16) {
    let mut hints = 0;
    match xmin_fate(t, INVALID_XID, tm, &mut hints) {
        Some(XidStatus::Aborted) => return (VacuumStatus::Dead, hints),
        Some(XidStatus::InProgress) => return (VacuumStatus::InsertInProgress, hints),
        _ => {}
    }
    if xmax_none(t) || t.infomask() & HEAP_XMAX_LOCK_ONLY != 0 {
        return (VacuumStatus::Live, hints);
    }
    match xmax_fate(t, tm, &mut hints) {
        XidStatus::InProgress => (VacuumStatus::DeleteInProgress, hints),
        XidStatus::Aborted => (VacuumStatus::Live, hints),
        XidStatus::Committed if t.xmax() < oldest_xmin => (VacuumStatus::Dead, hints),
        XidStatus::Committed => (VacuumStatus::RecentlyDead, hints),
    }
}

/// Result of [`satisfies_update`] (PostgreSQL TM_Result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateStatus {
    /// The tuple may be updated or deleted.
    Ok,
    /// Already updated or deleted by this transaction.
    SelfModified,
    /// Being updated, deleted or locked by the running transaction `xid`: wait for it.
    BeingModified(Xid),
    /// Updated or deleted by a committed transaction: follow `t_ctid` (read committed) or
    /// fail (repeatable read).
    Updated,
    /// Not visible at all (inserter running or aborted).
    Invisible,
}

/// HeapTupleSatisfiesUpdate: may transaction `own` update the tuple now?
pub fn satisfies_update(t: &[u8], own: Xid, tm: &TransactionManager) -> (UpdateStatus, u16) {
    let mut hints = 0;
    match xmin_fate(t, own, tm, &mut hints) {
        Some(XidStatus::Aborted) | Some(XidStatus::InProgress) => {
            return (UpdateStatus::Invisible, hints)
        }
        _ => {}
    }
    if xmax_none(t) {
        return (UpdateStatus::Ok, hints);
    }
    let xmax = t.xmax();
    if xmax == own {
        let lock_only = t.infomask() & HEAP_XMAX_LOCK_ONLY != 0;
        return (
            if lock_only {
                UpdateStatus::Ok
            } else {
                UpdateStatus::SelfModified
            },
            hints,
        );
    }
    let lock_only = t.infomask() & HEAP_XMAX_LOCK_ONLY != 0;
    match xmax_fate(t, tm, &mut hints) {
        XidStatus::InProgress => (UpdateStatus::BeingModified(xmax), hints),
        XidStatus::Aborted => (UpdateStatus::Ok, hints),
        XidStatus::Committed if lock_only => (UpdateStatus::Ok, hints & !HEAP_XMAX_COMMITTED),
        XidStatus::Committed => (UpdateStatus::Updated, hints),
    }
}

/// Result of [`satisfies_dirty`] (PostgreSQL SnapshotDirty, used by unique checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyStatus {
    /// Committed (or own) and not deleted: a live row.
    Live,
    /// Dead, or deleted by this transaction.
    Dead,
    /// Inserted or deleted by running transaction `xid`: its fate decides; wait for it.
    InProgress(Xid),
}

/// HeapTupleSatisfiesDirty: for `_bt_check_unique`, is there (or may there be) a live row?
pub fn satisfies_dirty(t: &[u8], own: Xid, tm: &TransactionManager) -> (DirtyStatus, u16) {
    let mut hints = 0;
    match xmin_fate(t, own, tm, &mut hints) {
        None => {
            let deleted =
                !xmax_none(t) && t.infomask() & HEAP_XMAX_LOCK_ONLY == 0 && t.xmax() == own;
            return (
                if deleted {
                    DirtyStatus::Dead
                } else {
                    DirtyStatus::Live
                },
                hints,
            );
        }
        Some(XidStatus::Aborted) => return (DirtyStatus::Dead, hints),
        Some(XidStatus::InProgress) => return (DirtyStatus::InProgress(t.xmin()), hints),
        Some(XidStatus::Committed) => {}
    }
    if xmax_none(t) || t.infomask() & HEAP_XMAX_LOCK_ONLY != 0 {
        return (DirtyStatus::Live, hints);
    }
    if t.xmax() == own {
        return (DirtyStatus::Dead, hints);
    }
    match xmax_fate(t, tm, &mut hints) {
        XidStatus::InProgress => (DirtyStatus::InProgress(t.xmax()), hints),
        XidStatus::Committed => (DirtyStatus::Dead, hints),
        XidStatus::Aborted => (DirtyStatus::Live, hints),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tup(xmin: Xid, xmax: Xid) -> Vec<u8> {
        let mut t = build(xmin, 0, 1, None, &[1, 2, 3, 4], 0);
        if xmax != 0 {
            set_xmax(&mut t, xmax);
            let m = t.as_slice().infomask() & !HEAP_XMAX_INVALID;
            set_infomask(&mut t, m);
        }
        t
    }

    #[test]
    fn mvcc_rules() {
        let tm = TransactionManager::new();
        let (a, b, r) = (tm.begin(), tm.begin(), tm.begin());
        let xa = tm.assign_xid(a);
        tm.end(a, true);
        let xb = tm.assign_xid(b);
        let snap = tm.snapshot(r);
        // Committed insert, no delete: visible, and the xmin hint is learned.
        let (v, h) = satisfies_mvcc(&tup(xa, 0), &snap, 0, &tm);
        assert!(v);
        assert_eq!(h, HEAP_XMIN_COMMITTED);
        // Deleted by b, running at snapshot time: still visible.
        assert!(satisfies_mvcc(&tup(xa, xb), &snap, 0, &tm).0);
        // Inserted by b: invisible to the snapshot, visible to b itself.
        assert!(!satisfies_mvcc(&tup(xb, 0), &snap, 0, &tm).0);
        assert!(satisfies_mvcc(&tup(xb, 0), &snap, xb, &tm).0);
        assert!(
            !satisfies_mvcc(&tup(xb, xb), &snap, xb, &tm).0,
            "inserted and deleted by b"
        );
        tm.end(b, true);
        assert!(
            satisfies_mvcc(&tup(xa, xb), &snap, 0, &tm).0,
            "old snapshot keeps seeing the row"
        );
        let snap2 = tm.snapshot(tm.begin());
        let (v, h) = satisfies_mvcc(&tup(xa, xb), &snap2, 0, &tm);
        assert!(!v);
        assert_eq!(h, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED);
    }

    #[test]
    fn vacuum_and_update_rules() {
        let tm = TransactionManager::new();
        let (a, b, c) = (tm.begin(), tm.begin(), tm.begin());
        let xa = tm.assign_xid(a);
        tm.end(a, true);
        let xb = tm.assign_xid(b);
        let xc = tm.assign_xid(c);
        let _c_snapshot = tm.snapshot(c); // taken while b runs: holds the horizon at xb
        assert_eq!(
            satisfies_vacuum(&tup(xa, xb), tm.oldest_xmin(), &tm).0,
            VacuumStatus::DeleteInProgress
        );
        assert_eq!(
            satisfies_update(&tup(xa, xb), xc, &tm).0,
            UpdateStatus::BeingModified(xb)
        );
        assert_eq!(
            satisfies_dirty(&tup(xb, 0), xc, &tm).0,
            DirtyStatus::InProgress(xb)
        );
        tm.end(b, true);
        assert_eq!(
            satisfies_update(&tup(xa, xb), xc, &tm).0,
            UpdateStatus::Updated
        );
        // c's snapshot does not see b's commit, so xb's delete is only recently dead.
        assert_eq!(
            satisfies_vacuum(&tup(xa, xb), tm.oldest_xmin(), &tm).0,
            VacuumStatus::RecentlyDead
        );
        tm.end(c, false);
        assert_eq!(
            satisfies_vacuum(&tup(xa, xb), tm.oldest_xmin(), &tm).0,
            VacuumStatus::Dead
        );
        assert_eq!(
            satisfies_vacuum(&tup(xc, 0), tm.oldest_xmin(), &tm).0,
            VacuumStatus::Dead,
            "aborted insert"
        );
        assert_eq!(satisfies_dirty(&tup(xa, 0), 0, &tm).0, DirtyStatus::Live);
    }
}
