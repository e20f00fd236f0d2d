//! The checks after recovery (see "The checks" in the module doc): lost commits,
//! invariant violations (balances, transfers never committed, counters, every row found
//! through its indexes, `Database::check_indexes`), and the ledger resolved to what is
//! there.

use super::ledger::{Ledger, Transfer};
use super::report::CrashtestSummary;
use super::workload::{Tables, INITIAL_BALANCE};
use anyhow::{Context, Result};
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::Database;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// The checks of the module doc on a recovered database; resolves the ledger's in-flight
/// entries to what is there.
pub(super) fn check(
    db: &Database,
    t: Tables,
    rows: u32,
    l: &mut Ledger,
    s: &mut CrashtestSummary,
    cut: u32,
) -> Result<()> {
    let mut tx = db.begin();
    // Transfers present.
    let all = tx.scan(
        t.transfers,
        Bound::Unbounded,
        Bound::Unbounded,
        mvcclab_engine::btree::ScanDirection::Forward,
        usize::MAX,
    )?;
    let mut present: HashMap<i64, Transfer> = HashMap::new();
    for r in &all {
        let (Value::BigInt(id), Value::Integer(a), Value::Integer(b), Value::BigInt(amt)) =
            (&r[0], &r[1], &r[2], &r[3])
        else {
            s.problem(cut, format!("transfers row of the wrong shape: {r:?}"));
            continue;
        };
        present.insert(*id, (*a, *b, *amt));
    }
    for (id, tr) in &l.acked {
        if present.get(id) != Some(tr) {
            s.lost_commits += 1;
            if s.problems.len() < 20 {
                // Tell a row the primary key misses from a row that is gone: look for it
                // through the index on src too.
                let via_src = tx
                    .get_by_index(t.transfers, 0, &[Value::Integer(tr.0)])?
                    .iter()
                    .any(|r| r[0] == Value::BigInt(*id));
                s.problems.push(format!(
                    "cut {cut}: acknowledged transfer {id} {tr:?} is missing ({})",
                    if via_src {
                        "yet found through index transfers_src: its primary-key entry is gone"
                    } else {
                        "not found through index transfers_src either"
                    }
                ));
            }
        }
    }
    for (id, tr) in &present {
        let known = l
            .acked
            .get(id)
            .or(l.in_flight.get(id))
            .or(l.present.get(id));
        if known != Some(tr) {
            s.problem(
                cut,
                format!("transfer {id} {tr:?} is visible but was never committed"),
            );
        }
    }
    // Balances follow from the transfers present.
    let mut expect: BTreeMap<i32, i64> = (1..=rows as i32).map(|i| (i, INITIAL_BALANCE)).collect();
    for (a, b, amt) in present.values() {
        *expect.entry(*a).or_default() -= amt;
        *expect.entry(*b).or_default() += amt;
    }
    let mut total = 0i64;
    for id in 1..=rows as i32 {
        match tx.get(t.accounts, &[Value::Integer(id)])? {
            Some(r) => {
                let bal = match r[1] {
                    Value::BigInt(v) => v,
                    _ => 0,
                };
                total += bal;
                if bal != expect[&id] {
                    s.problem(
                        cut,
                        format!(
                            "account {id}: balance {bal}, the transfers present imply {}",
                            expect[&id]
                        ),
                    );
                }
            }
            None => s.problem(cut, format!("account {id} is missing")),
        }
    }
    if total != INITIAL_BALANCE * rows as i64 {
        s.problem(
            cut,
            format!(
                "balances sum to {total}, not {}",
                INITIAL_BALANCE * rows as i64
            ),
        );
    }
    // Counters: acknowledged ≤ n ≤ acknowledged + in flight; each found through its index.
    for id in 1..=rows as i32 {
        let i = id as usize - 1;
        let Some(r) = tx.get(t.counters, &[Value::Integer(id)])? else {
            s.problem(cut, format!("counter {id} is missing"));
            continue;
        };
        let n = match r[1] {
            Value::BigInt(v) => v,
            _ => -1,
        };
        let (acked, maybe) = (l.counter_acked[i], l.counter_in_flight[i]);
        if n < acked {
            s.lost_commits += (acked - n) as u64;
            if s.problems.len() < 20 {
                s.problems.push(format!(
                    "cut {cut}: counter {id} is {n}, {acked} increments were acknowledged"
                ));
            }
        } else if n > acked + maybe {
            s.problem(
                cut,
                format!("counter {id} is {n}: only {acked} acknowledged and {maybe} in flight"),
            );
        }
        let via_index = tx.get_by_index(t.counters, 0, &[Value::BigInt(n)])?;
        if !via_index.iter().any(|row| row[0] == Value::Integer(id)) {
            s.problem(
                cut,
                format!("counter {id} (n = {n}) is not found through index counters_n"),
            );
        }
        // Resynchronized with what is there, so that a loss is counted once.
        l.counter_acked[i] = n;
        l.counter_in_flight[i] = 0;
    }
    // Every transfer found through its src index.
    let mut by_src: HashMap<i32, Vec<i64>> = HashMap::new();
    for (id, (a, _, _)) in &present {
        by_src.entry(*a).or_default().push(*id);
    }
    for (a, ids) in by_src {
        let found: BTreeSet<i64> = tx
            .get_by_index(t.transfers, 0, &[Value::Integer(a)])?
            .iter()
            .filter_map(|r| match r[0] {
                Value::BigInt(v) => Some(v),
                _ => None,
            })
            .collect();
        for id in ids {
            if !found.contains(&id) {
                s.problem(
                    cut,
                    format!("transfer {id} is not found through index transfers_src"),
                );
            }
        }
    }
    tx.commit()?;
    for (name, table) in [
        ("accounts", t.accounts),
        ("transfers", t.transfers),
        ("counters", t.counters),
    ] {
        let (_, problems) = db
            .check_indexes(table)
            .with_context(|| format!("checking the indexes of {name}"))?;
        for p in problems {
            s.problem(cut, p);
        }
    }
    l.present = present;
    l.acked.clear();
    l.in_flight.clear();
    Ok(())
}
