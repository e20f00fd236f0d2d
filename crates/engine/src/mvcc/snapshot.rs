//! MVCC snapshots (PostgreSQL snapshot.h `SnapshotData`, procarray.c `GetSnapshotData`).

use super::Xid;

/// Which transactions' effects a reader sees. An xid is "in progress" for the snapshot when
/// it is ≥ `xmax` or listed in `xip`; everything else below `xmax` has finished (committed or
/// aborted, as the clog says).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Every xid below this had finished when the snapshot was taken.
    pub xmin: Xid,
    /// First xid not yet assigned when the snapshot was taken.
    pub xmax: Xid,
    /// Xids in `[xmin, xmax)` running when the snapshot was taken, sorted.
    pub xip: Vec<Xid>,
}

impl Snapshot {
    /// PostgreSQL `XidInMVCCSnapshot`: true when `xid` counts as in progress for this
    /// snapshot (its effects are invisible whatever the clog says).
    pub fn xid_in_progress(&self, xid: Xid) -> bool {
        if xid < self.xmin {
            return false;
        }
        if xid >= self.xmax {
            return true;
        }
        self.xip.binary_search(&xid).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_progress_rules() {
        let s = Snapshot {
            xmin: 10,
            xmax: 20,
            xip: vec![12, 15],
        };
        assert!(!s.xid_in_progress(9));
        assert!(!s.xid_in_progress(11));
        assert!(s.xid_in_progress(12));
        assert!(s.xid_in_progress(15));
        assert!(s.xid_in_progress(20));
        assert!(s.xid_in_progress(99));
    }
}
