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

/// heap_page_prune: decides and applies the pruning of one page (exclusively locked by the
/// caller, with no other pin). Returns what changed; the caller WAL-logs it.
pub fn prune_page(
    page: &mut [u8],
    id: PageId,
    oldest_xmin: Xid,
    tm: &TransactionManager,
) -> PruneResult {
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
    // Hint bits learned above: the page is exclusively locked, so set them now.
    for &(off, h) in &res.hints {
        if let Ok(lp) = hp::item_id(page, off, id) {
            let t = hp::tuple_mut(page, lp);
            let m = t.infomask() | h;
            super::tuple::set_infomask(t, m);
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
    execute(page, &res);
    set_aux(page, new_prune_xid);
    set_flags(page, flags(page) & !hp::PD_PAGE_FULL);
    res
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
