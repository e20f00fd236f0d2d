//! The crash test's workload: the three tables (accounts, transfers, counters), their
//! load, and the worker loop of transfers and counter increments, one in ten rolled back
//! on purpose, each reported to the client's ledger before and after its commit.

use super::ledger::LedgerSink;
use anyhow::Result;
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::Error as EngineError;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Balance each account opens with.
pub const INITIAL_BALANCE: i64 = 1_000;

/// The three tables' ids.
#[derive(Clone, Copy)]
pub(super) struct Tables {
    pub(super) accounts: TableId,
    pub(super) transfers: TableId,
    pub(super) counters: TableId,
}

pub(super) fn table_defs() -> [TableDef; 3] {
    let accounts = TableDef {
        name: "accounts".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("balance", ColumnType::BigInt),
            Column::not_null("pad", ColumnType::Char(100)),
        ],
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    };
    let transfers = TableDef {
        name: "transfers".into(),
        columns: vec![
            Column::not_null("id", ColumnType::BigInt),
            Column::not_null("src", ColumnType::Integer),
            Column::not_null("dst", ColumnType::Integer),
            Column::not_null("amount", ColumnType::BigInt),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "transfers_src".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    };
    let counters = TableDef {
        name: "counters".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("n", ColumnType::BigInt),
            Column::not_null("pad", ColumnType::Char(100)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "counters_n".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    };
    [accounts, transfers, counters]
}

pub(super) fn is_power_off(e: &EngineError) -> bool {
    e.to_string().contains("power is off")
}

/// The tables of a database made by [`load`].
pub(super) fn tables_of(db: &Database) -> mvcclab_engine::Result<Tables> {
    Ok(Tables {
        accounts: db.table_id("accounts")?,
        transfers: db.table_id("transfers")?,
        counters: db.table_id("counters")?,
    })
}

/// Creates and fills the tables (committed and checkpointed before the first cut).
pub(super) fn load(db: &Database, rows: u32) -> Result<Tables> {
    let [a, t, c] = table_defs();
    let tables = Tables {
        accounts: db.create_table(a)?,
        transfers: db.create_table(t)?,
        counters: db.create_table(c)?,
    };
    let pad = Value::Text("x".repeat(100));
    for chunk in (1..=rows as i32).collect::<Vec<_>>().chunks(100) {
        let mut tx = db.begin();
        for &id in chunk {
            tx.insert(
                tables.accounts,
                vec![
                    Value::Integer(id),
                    Value::BigInt(INITIAL_BALANCE),
                    pad.clone(),
                ],
            )?;
            tx.insert(
                tables.counters,
                vec![Value::Integer(id), Value::BigInt(0), pad.clone()],
            )?;
        }
        tx.commit()?;
    }
    db.storage().checkpoint()?;
    Ok(tables)
}

/// One worker's loop until `stop` or the power goes.
#[allow(clippy::too_many_arguments)]
pub(super) fn worker(
    db: &Database,
    t: Tables,
    rows: u32,
    seed: u64,
    ledger: &dyn LedgerSink,
    stop: &AtomicBool,
    done: &AtomicU64,
    next_transfer: &AtomicU64,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while !stop.load(Ordering::Acquire) {
        let mut tx = db.begin();
        let abort = rng.random_bool(0.1);
        let transfer = rng.random_bool(0.5);
        let (id, tr, ctr) = if transfer {
            let a = rng.random_range(1..=rows as i32);
            let mut b = rng.random_range(1..rows as i32);
            if b >= a {
                b += 1;
            }
            let amount = rng.random_range(1..=100i64);
            let id = next_transfer.fetch_add(1, Ordering::AcqRel) as i64;
            // Lock the lower id first, so two transfers do not deadlock.
            let (lo, hi) = if a < b { (a, -amount) } else { (b, amount) };
            let (hi_id, hi_delta) = if a < b { (b, amount) } else { (a, -amount) };
            let r = (|| -> mvcclab_engine::Result<()> {
                tx.update(t.accounts, &[Value::Integer(lo)], &[Assign::Add(1, hi)])?;
                tx.update(
                    t.accounts,
                    &[Value::Integer(hi_id)],
                    &[Assign::Add(1, hi_delta)],
                )?;
                tx.insert(
                    t.transfers,
                    vec![
                        Value::BigInt(id),
                        Value::Integer(a),
                        Value::Integer(b),
                        Value::BigInt(amount),
                    ],
                )
            })();
            if let Err(e) = r {
                if is_power_off(&e) {
                    return;
                }
                continue;
            }
            (id, Some((a, b, amount)), None)
        } else {
            let r = rng.random_range(1..=rows as i32);
            if let Err(e) = tx.update(t.counters, &[Value::Integer(r)], &[Assign::Add(1, 1)]) {
                if is_power_off(&e) {
                    return;
                }
                continue;
            }
            (0, None, Some(r))
        };
        if abort {
            let _ = tx.abort();
            continue;
        }
        if let Some(tr) = tr {
            ledger.transfer_in_flight(id, tr);
        }
        if let Some(r) = ctr {
            ledger.counter_in_flight(r);
        }
        match tx.commit() {
            Ok(()) => {
                if let Some(tr) = tr {
                    ledger.transfer_acked(id, tr);
                }
                if let Some(r) = ctr {
                    ledger.counter_acked(r);
                }
                done.fetch_add(1, Ordering::AcqRel);
            }
            Err(e) => {
                // Outcome unknown: stays in flight.
                if is_power_off(&e) {
                    return;
                }
            }
        }
    }
}
