//! On-access page pruning and HOT-chain pruning (PostgreSQL src/backend/access/heap/
//! pruneheap.c, REL_15: `heap_page_prune_opt`, `heap_page_prune`, `heap_prune_chain`,
//! `heap_page_prune_execute`). See README.HOT.
//!
//! # When a page is pruned on access (`heap_page_prune_opt`)
//! 1. The page's `pd_prune_xid` is set and precedes the oldest xmin (something on the page
//!    may be dead to everyone), and
//! 2. the page is marked full (PD_PAGE_FULL) or its free space is below
//!    `max(fillfactor reserve, BLCKSZ / 10)`, and
//! 3. the caller gets a cleanup lock without waiting: the exclusive lock, and no other pin.
//!
//! # What pruning does (`heap_prune_chain`)
//! Per HOT chain: if the dead members run to the end of the chain, the root line pointer
//! becomes LP_DEAD (index entries still point to it; vacuum reclaims it) and the heap-only
//! members LP_UNUSED; if live members remain, the root becomes LP_REDIRECT to the first one
//! and the dead heap-only members LP_UNUSED. A dead tuple that is not HOT-updated becomes
//! LP_DEAD. Then the page is defragmented (`PageRepairFragmentation`).
//!
//! Deciding ([`plan_prune`]) reads the page only; applying ([`apply_prune`]) changes it. A
//! page with nothing to change (no line pointer, hint bit, `pd_prune_xid` or PD_PAGE_FULL)
//! is not dirtied, as `heap_page_prune` leaves such a buffer clean: no write, and no
//! vacuum cost for dirtying it.

use super::page::{self as hp, ItemId, LpState};
use super::tuple::{HeaderRead, Tid};
use super::visibility::{satisfies_vacuum, VacuumStatus};
use crate::mvcc::{TransactionManager, Xid, INVALID_XID};
use crate::page::{aux, flags, set_aux, set_flags, PageId};

/// What one pruning pass changed, in the form of the XLOG_HEAP2_PRUNE record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneResult {
    /// (root, target) pairs now LP_REDIRECT.
    pub redirected: Vec<(u16, u16)>,
    /// Offsets now LP_DEAD.
    pub now_dead: Vec<u16>,
    /// Offsets now LP_UNUSED.
    pub now_unused: Vec<u16>,
    /// Tuples removed (dead heap storage reclaimed): for n_dead_tup.
    pub tuples_removed: u64,
    /// Hint bits learned on the way: (offset, bits).
    pub hints: Vec<(u16, u16)>,
}

impl PruneResult {
    /// True when pruning changed line pointers.
    pub fn changed(&self) -> bool {
        !(self.redirected.is_empty() && self.now_dead.is_empty() && self.now_unused.is_empty())
    }

    /// Encodes the record's block data: n_redirected u16, n_dead u16, n_unused u16, then
    /// the pairs and offsets as u16 LE.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for n in [
            self.redirected.len(),
            self.now_dead.len(),
            self.now_unused.len(),
        ] {
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        for (a, b) in &self.redirected {
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&b.to_le_bytes());
        }
        for o in self.now_dead.iter().chain(&self.now_unused) {
            out.extend_from_slice(&o.to_le_bytes());
        }
        out
    }
}

/// PageIsPrunable + the free-space test of `heap_page_prune_opt` (conditions 1 and 2 of the
/// module doc).
pub fn should_prune(page: &[u8], oldest_xmin: Xid, fillfactor: u8) -> bool {
    let prune_xid = aux(page);
    if prune_xid == INVALID_XID || prune_xid >= oldest_xmin {
        return false;
    }
    let reserve = page.len() * (100 - fillfactor as usize) / 100;
    let minfree = reserve.max(page.len() / 10);
    flags(page) & hp::PD_PAGE_FULL != 0 || hp::heap_free_space(page) < minfree
}

/// Sets pd_prune_xid if `xid` is older than the current hint (PageSetPrunable).
pub fn set_prunable(page: &mut [u8], xid: Xid) {
    let cur = aux(page);
    if cur == INVALID_XID || xid < cur {
        set_aux(page, xid);
    }
}

/// What [`plan_prune`] decided for one page: the changes and the page's new
/// `pd_prune_xid` (the oldest xmax still pending, or invalid).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrunePlan {
    /// The line pointer changes and hint bits.
    pub result: PruneResult,
    /// `pd_prune_xid` after pruning.
    pub new_prune_xid: Xid,
}

impl PrunePlan {
    /// True when applying the plan changes the page in any way: line pointers, hint bits,
    /// `pd_prune_xid` or PD_PAGE_FULL (pruneheap.c `heap_page_prune` dirties the buffer
    /// only then: `MarkBufferDirty` for a prune, `MarkBufferDirtyHint` for the rest).
    pub fn changes(&self, page: &[u8]) -> bool {
        self.result.changed()
            || !self.result.hints.is_empty()
            || aux(page) != self.new_prune_xid
            || flags(page) & hp::PD_PAGE_FULL != 0
    }
}

/// heap_page_prune, deciding part: what pruning one page (exclusively locked by the
/// caller, with no other pin) would change, read from the page without touching it.
/// [`apply_prune`] makes the changes; the caller WAL-logs them.
pub fn plan_prune(page: &[u8], id: PageId, oldest_xmin: Xid, tm: &TransactionManager) -> PrunePlan {
    let n = hp::max_offset(page);
    let mut res = PruneResult::default();
    let mut marked = vec![false; n as usize + 1];
    let mut status: Vec<Option<VacuumStatus>> = vec![None; n as usize + 1];
    let mut new_prune_xid = INVALID_XID;
    for off in 1..=n {
        if let Ok(lp) = hp::item_id(page, off, id) {
            if lp.state == LpState::Normal {
                let t = hp::tuple(page, lp);
                if super::tuple::header_ok(t) {
                    let (st, h) = satisfies_vacuum(t, oldest_xmin, tm);
                    if h != 0 {
                        res.hints.push((off, h));
                    }
                    if matches!(
                        st,
                        VacuumStatus::RecentlyDead | VacuumStatus::DeleteInProgress
                    ) {
                        let x = t.xmax();
                        if new_prune_xid == INVALID_XID || x < new_prune_xid {
                            new_prune_xid = x;
                        }
                    }
                    status[off as usize] = Some(st);
                }
            }
        }
    }
    for root in 1..=n {
        if marked[root as usize] {
            continue;
        }
        let Ok(lp) = hp::item_id(page, root, id) else {
            continue;
        };
        match lp.state {
            LpState::Unused | LpState::Dead => continue,
            LpState::Normal => {
                let t = hp::tuple(page, lp);
                if !super::tuple::header_ok(t) {
                    continue;
                }
                if t.is_heap_only() {
                    // Not a root. An orphaned dead heap-only tuple (its chain's earlier
                    // members are gone) that chains to nothing is freed right away.
                    if status[root as usize] == Some(VacuumStatus::Dead) && !t.is_hot_updated() {
                        marked[root as usize] = true;
                        res.now_unused.push(root);
                        res.tuples_removed += 1;
                    }
                    continue;
                }
            }
            LpState::Redirect => {}
        }
        // Walk the chain from the root.
        let mut chain: Vec<u16> = Vec::new();
        let mut latest_dead: Option<usize> = None;
        let mut off = root;
        let mut prev_xmax = INVALID_XID;
        loop {
            if off == 0 || off > n || marked[off as usize] && off != root {
                break;
            }
            let Ok(lp) = hp::item_id(page, off, id) else {
                break;
            };
            if lp.state == LpState::Redirect {
                if off != root {
                    break;
                }
                chain.push(off);
                off = lp.off;
                continue;
            }
            if lp.state != LpState::Normal {
                break;
            }
            let t = hp::tuple(page, lp);
            if !super::tuple::header_ok(t) {
                break;
            }
            if prev_xmax != INVALID_XID && t.xmin() != prev_xmax {
                break;
            }
            chain.push(off);
            match status[off as usize] {
                Some(VacuumStatus::Dead) => latest_dead = Some(chain.len() - 1),
                Some(VacuumStatus::RecentlyDead) => {}
                _ => break,
            }
            if !t.is_hot_updated() {
                break;
            }
            let next: Tid = t.ctid();
            if next.block != id.block {
                break;
            }
            prev_xmax = t.xmax();
            off = next.offset;
        }
        for &o in &chain {
            marked[o as usize] = true;
        }
        let Some(ld) = latest_dead else {
            // A redirect whose chain is gone: nothing to point to.
            if chain.len() < 2 && lp.state == LpState::Redirect {
                res.now_dead.push(root);
            }
            continue;
        };
        // Members after the root up to the latest dead one are freed.
        for &o in &chain[1..=ld] {
            if o != root {
                res.now_unused.push(o);
                res.tuples_removed += 1;
            }
        }
        if lp.state == LpState::Normal {
            res.tuples_removed += 1; // the root tuple's storage
        }
        if ld + 1 >= chain.len() {
            res.now_dead.push(root);
        } else {
            res.redirected.push((root, chain[ld + 1]));
        }
    }
    PrunePlan {
        result: res,
        new_prune_xid,
    }
}

/// heap_page_prune, applying part: sets the plan's hint bits (the page is exclusively
/// locked), executes its line pointer changes, sets `pd_prune_xid` and clears PD_PAGE_FULL.
pub fn apply_prune(page: &mut [u8], id: PageId, plan: &PrunePlan) {
    for &(off, h) in &plan.result.hints {
        if let Ok(lp) = hp::item_id(page, off, id) {
            let t = hp::tuple_mut(page, lp);
            let m = t.infomask() | h;
            super::tuple::set_infomask(t, m);
        }
    }
    execute(page, &plan.result);
    set_aux(page, plan.new_prune_xid);
    set_flags(page, flags(page) & !hp::PD_PAGE_FULL);
}

/// heap_page_prune_execute: applies a prune result to the page (also what redo does).
pub fn execute(page: &mut [u8], res: &PruneResult) {
    for &(from, to) in &res.redirected {
        hp::set_item_id(
            page,
            from,
            ItemId {
                off: to,
                state: LpState::Redirect,
                len: 0,
            },
        );
    }
    for &o in &res.now_dead {
        hp::set_item_id(page, o, ItemId::DEAD);
    }
    for &o in &res.now_unused {
        hp::set_item_id(page, o, ItemId::UNUSED);
    }
    hp::repair_fragmentation(page);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::tuple as ht;

    /// A page with one tuple inserted by `xmin` (committed), hinted or not.
    fn page_with_tuple(xmin: Xid, hinted: bool) -> (Vec<u8>, PageId) {
        let id = PageId::new(16384, 0);
        let mut p = vec![0u8; 8192];
        hp::init(&mut p);
        let mask = if hinted { ht::HEAP_XMIN_COMMITTED } else { 0 };
        hp::add_tuple(&mut p, &ht::build(xmin, 0, 1, None, &[7u8; 16], mask)).unwrap();
        (p, id)
    }

    #[test]
    fn a_page_with_nothing_to_prune_is_left_untouched() {
        let tm = TransactionManager::new();
        let p = tm.begin();
        let x = tm.assign_xid(p);
        tm.end(p, true);
        let (page, id) = page_with_tuple(x, true);
        let plan = plan_prune(&page, id, tm.oldest_xmin(), &tm);
        assert!(!plan.changes(&page), "{plan:?}");
        // An unhinted committed insert: setting the hint is a change (MarkBufferDirtyHint).
        let (page, id) = page_with_tuple(x, false);
        let plan = plan_prune(&page, id, tm.oldest_xmin(), &tm);
        assert!(plan.changes(&page) && !plan.result.changed(), "{plan:?}");
    }

    #[test]
    fn a_committed_delete_is_pruned_by_the_plan_and_applied() {
        let tm = TransactionManager::new();
        let (ins, del) = (tm.begin(), tm.begin());
        let x = tm.assign_xid(ins);
        tm.end(ins, true);
        let d = tm.assign_xid(del);
        let (mut page, id) = page_with_tuple(x, true);
        {
            let lp = hp::item_id(&page, 1, id).unwrap();
            let t = hp::tuple_mut(&mut page, lp);
            ht::set_xmax(t, d);
            let m = t.infomask() & !ht::HEAP_XMAX_INVALID;
            ht::set_infomask(t, m);
        }
        set_prunable(&mut page, d);
        // Still running: nothing is removable; the plan leaves the page as it is.
        let plan = plan_prune(&page, id, tm.oldest_xmin(), &tm);
        assert!(!plan.result.changed());
        tm.end(del, true);
        let plan = plan_prune(&page, id, tm.oldest_xmin(), &tm);
        assert_eq!(plan.result.now_dead, vec![1]);
        assert_eq!(plan.new_prune_xid, INVALID_XID);
        let before = page.clone();
        assert!(plan.changes(&page));
        assert_eq!(page, before, "planning does not touch the page");
        apply_prune(&mut page, id, &plan);
        assert_eq!(hp::item_id(&page, 1, id).unwrap().state, LpState::Dead);
        assert_eq!(aux(&page), INVALID_XID);
    }
}
