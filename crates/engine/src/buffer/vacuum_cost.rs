//! Cost-based vacuum delay (PostgreSQL 15: bufmgr.c charges `VacuumCostPageHit`,
//! `VacuumCostPageMiss` and `VacuumCostPageDirty` to `VacuumCostBalance` in
//! `ReadBuffer_common`, `MarkBufferDirty` and `MarkBufferDirtyHint`; vacuum.c
//! `vacuum_delay_point` sleeps once the balance reaches the limit; manual "Cost-based Vacuum
//! Delay").
//!
//! An autovacuum worker runs its VACUUM and ANALYZE of a table with the cost active
//! (`autovacuum_vacuum_cost_delay` 2 ms, `vacuum_cost_limit` 200); a manual VACUUM or
//! ANALYZE runs with it off (`vacuum_cost_delay` 0). While it is active on a thread, every
//! buffer access of that thread adds to the thread's balance: a hit 1, a miss (a read into
//! the pool) 2, and the first change that makes a clean buffer dirty 20. At each delay
//! point (vacuum.c callers: one per heap block vacuum scans or sweeps, one per block
//! ANALYZE samples) a balance at or above the limit sleeps `delay × balance / limit`, at
//! most 4 × delay, and starts again from 0.
//!
//! This is what makes an autoanalyze long: in PostgreSQL 15 on the 2-core machine, the
//! autoanalyze of a 100,000-row sysbench table under oltp_update_non_index took 0.32 s, of
//! which 0.07 s was CPU (its buffer usage, 892 hits, 2,200 misses and 891 pages dirtied,
//! costs 23,112: 115 delays of 2 ms). ANALYZE holds its snapshot that long
//! ([`crate::heap`]'s analyze module), so every version deleted meanwhile stays unprunable.
//!
//! Differences: PostgreSQL's B-tree vacuum has a delay point per index page
//! (nbtree.c `btvacuumpage`); mvcclab's index pass walks the leaves with latch coupling, so
//! it has none, and the index pages' cost is paid at the next heap delay point (one sleep
//! of at most 4 × delay). Several autovacuum workers share the limit in PostgreSQL
//! (autovacuum.c `autovac_balance_cost`); mvcclab runs one worker.
//!
//! # State
//! Thread-local: the settings and stop signal of the cost-delayed work running on this
//! thread (none outside [`with_cost_delay`]; the settings double as the "active" flag) and
//! its balance. Nothing is shared, so nothing
//! is locked; a delay point sleeps on the stop signal, and once the signal is raised it no
//! longer sleeps (the work finishes at full speed, as close as mvcclab comes to
//! PostgreSQL's worker being terminated).

use crate::stop::StopSignal;
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

/// The cost settings (postgresql.conf names; PostgreSQL 15 defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VacuumCost {
    /// `vacuum_cost_page_hit`: cost of a buffer found in the pool (1).
    pub page_hit: u32,
    /// `vacuum_cost_page_miss`: cost of a buffer read into the pool (2 since PostgreSQL 14).
    pub page_miss: u32,
    /// `vacuum_cost_page_dirty`: cost of dirtying a clean buffer (20).
    pub page_dirty: u32,
    /// `vacuum_cost_limit` (`autovacuum_vacuum_cost_limit` -1 uses it): balance that
    /// triggers a delay (200).
    pub limit: u32,
    /// `autovacuum_vacuum_cost_delay` in µs: the sleep per `limit` of balance (2 ms); 0
    /// turns the delay off for autovacuum too.
    pub autovacuum_delay_us: u64,
}

impl Default for VacuumCost {
    fn default() -> Self {
        VacuumCost {
            page_hit: 1,
            page_miss: 2,
            page_dirty: 20,
            limit: 200,
            autovacuum_delay_us: 2_000,
        }
    }
}

thread_local! {
    /// The settings of the cost-delayed work running on this thread (`None` outside
    /// [`with_cost_delay`]): the one flag [`charge`] tests.
    static ACTIVE: Cell<Option<VacuumCost>> = const { Cell::new(None) };
    /// Its stop signal, set with `ACTIVE`.
    static STOP: RefCell<Option<Arc<StopSignal>>> = const { RefCell::new(None) };
    static BALANCE: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` with the cost-based delay active on this thread (autovacuum.c: an autovacuum
/// worker's `VacuumCostActive`, with the balance reset to 0 as vacuum.c `vacuum` does for
/// each table). A `cost` whose delay or limit is 0 runs `f` without delay. Nested calls use
/// the outer settings.
pub fn with_cost_delay<R>(cost: VacuumCost, stop: &Arc<StopSignal>, f: impl FnOnce() -> R) -> R {
    if cost.autovacuum_delay_us == 0 || cost.limit == 0 || ACTIVE.with(Cell::get).is_some() {
        return f();
    }
    STOP.with(|s| *s.borrow_mut() = Some(stop.clone()));
    BALANCE.with(|b| b.set(0));
    ACTIVE.with(|a| a.set(Some(cost)));
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(None));
            STOP.with(|s| *s.borrow_mut() = None);
        }
    }
    let _off = Off;
    f()
}

/// What a buffer access costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Charge {
    /// Found in the pool.
    Hit,
    /// Read into the pool.
    Miss,
    /// A clean buffer made dirty.
    Dirty,
}

/// Adds an access to this thread's balance when the delay is active (bufmgr.c). Cheap
/// when it is not: one thread-local flag.
pub(crate) fn charge(c: Charge) {
    let Some(cost) = ACTIVE.with(Cell::get) else {
        return;
    };
    let n = match c {
        Charge::Hit => cost.page_hit,
        Charge::Miss => cost.page_miss,
        Charge::Dirty => cost.page_dirty,
    };
    BALANCE.with(|b| b.set(b.get() + n as u64));
}

/// This thread's balance (0 when the delay is not active).
pub fn balance() -> u64 {
    match ACTIVE.with(Cell::get) {
        Some(_) => BALANCE.with(Cell::get),
        None => 0,
    }
}

/// vacuum.c `vacuum_delay_point`: when the delay is active and the balance has reached the
/// limit, sleeps `delay × balance / limit` (at most 4 × delay) and resets the balance.
/// Returns the nap taken (zero when none; a sleep never ends early, it may end late by the
/// scheduler's delay, as `pg_usleep` does). Call it where no page latch is held.
pub fn delay_point() -> Duration {
    let Some(cost) = ACTIVE.with(Cell::get) else {
        return Duration::ZERO;
    };
    let bal = BALANCE.with(Cell::get);
    if bal < cost.limit as u64 {
        return Duration::ZERO;
    }
    BALANCE.with(|b| b.set(0));
    let Some(stop) = STOP.with(|s| s.borrow().clone()) else {
        return Duration::ZERO;
    };
    if stop.is_raised() {
        return Duration::ZERO;
    }
    let nap_us =
        (cost.autovacuum_delay_us * bal / cost.limit as u64).min(cost.autovacuum_delay_us * 4);
    let nap = Duration::from_micros(nap_us);
    stop.sleep(nap);
    nap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_count_only_inside_and_a_full_balance_sleeps_in_proportion() {
        let stop = Arc::new(StopSignal::default());
        charge(Charge::Dirty);
        assert_eq!(balance(), 0, "no cost outside autovacuum");
        assert_eq!(delay_point(), Duration::ZERO);
        let cost = VacuumCost {
            autovacuum_delay_us: 1_000,
            ..Default::default()
        };
        with_cost_delay(cost, &stop, || {
            for _ in 0..5 {
                charge(Charge::Dirty); // 100
            }
            charge(Charge::Miss);
            charge(Charge::Hit); // 103
            assert_eq!(balance(), 103);
            assert_eq!(delay_point(), Duration::ZERO, "below the limit: no nap");
            for _ in 0..10 {
                charge(Charge::Dirty); // 303
            }
            let start = std::time::Instant::now();
            // 1 ms × 303 / 200 = 1.515 ms.
            assert_eq!(delay_point(), Duration::from_micros(1_515));
            assert!(
                start.elapsed() >= Duration::from_micros(1_515),
                "slept the nap"
            );
            assert_eq!(balance(), 0, "reset after the nap");
            for _ in 0..100 {
                charge(Charge::Dirty); // 2,000: 10 ms, capped at 4 × 1 ms
            }
            assert_eq!(delay_point(), Duration::from_millis(4));
        });
        charge(Charge::Dirty);
        assert_eq!(balance(), 0, "off again after");
    }

    #[test]
    fn a_raised_stop_signal_ends_the_naps() {
        let stop = Arc::new(StopSignal::default());
        with_cost_delay(VacuumCost::default(), &stop, || {
            for _ in 0..100 {
                charge(Charge::Dirty);
            }
            stop.raise();
            assert_eq!(delay_point(), Duration::ZERO);
            assert_eq!(balance(), 0);
        });
    }

    #[test]
    fn a_zero_delay_turns_the_cost_off() {
        let stop = Arc::new(StopSignal::default());
        let cost = VacuumCost {
            autovacuum_delay_us: 0,
            ..Default::default()
        };
        with_cost_delay(cost, &stop, || {
            charge(Charge::Dirty);
            assert_eq!(balance(), 0);
        });
    }
}
