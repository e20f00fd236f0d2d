//! The client's ledger: what was acknowledged as committed and what was in flight when
//! the power went (outcome unknown, so either is accepted), kept in memory for power cuts
//! and appended to a file by the child process of a kill test.

use parking_lot::Mutex;
use std::collections::HashMap;

/// A transfer: (src, dst, amount).
pub(super) type Transfer = (i32, i32, i64);

/// What the client knows. Counters are indexed by row id − 1.
#[derive(Default)]
pub(super) struct Ledger {
    /// Transfers acknowledged as committed (since the last check resolved the rest).
    pub(super) acked: HashMap<i64, Transfer>,
    /// Transfers whose commit did not return success: outcome unknown.
    pub(super) in_flight: HashMap<i64, Transfer>,
    /// Every transfer id present after the last check (committed for sure).
    pub(super) present: HashMap<i64, Transfer>,
    pub(super) counter_acked: Vec<i64>,
    pub(super) counter_in_flight: Vec<i64>,
    pub(super) commits: u64,
}

/// Where a worker records what it sends and what was acknowledged.
pub(super) trait LedgerSink: Sync {
    /// A transfer's commit is about to be sent.
    fn transfer_in_flight(&self, id: i64, tr: Transfer);
    /// It was acknowledged.
    fn transfer_acked(&self, id: i64, tr: Transfer);
    /// An increment of counter `row` is about to be committed.
    fn counter_in_flight(&self, row: i32);
    /// It was acknowledged.
    fn counter_acked(&self, row: i32);
}

impl Ledger {
    pub(super) fn new(rows: u32) -> Self {
        Ledger {
            counter_acked: vec![0; rows as usize],
            counter_in_flight: vec![0; rows as usize],
            ..Default::default()
        }
    }

    /// Applies one line of a child's ledger file ([`FileLedger`]); false for a line it
    /// does not understand (a line cut short by the kill).
    pub(super) fn apply_line(&mut self, line: &str) -> bool {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
        let row = |l: &Ledger, r: Option<i64>| {
            r.filter(|&r| r >= 1 && r as usize <= l.counter_acked.len())
        };
        match (f.first().copied(), f.len()) {
            (Some("t"), 5) => match (num(1), num(2), num(3), num(4)) {
                (Some(id), Some(a), Some(b), Some(amt)) => {
                    self.in_flight.insert(id, (a as i32, b as i32, amt));
                    true
                }
                _ => false,
            },
            (Some("T"), 2) => {
                match num(1).and_then(|id| self.in_flight.remove(&id).map(|tr| (id, tr))) {
                    Some((id, tr)) => {
                        self.acked.insert(id, tr);
                        self.commits += 1;
                        true
                    }
                    None => false,
                }
            }
            (Some("c"), 2) => match row(self, num(1)) {
                Some(r) => {
                    self.counter_in_flight[r as usize - 1] += 1;
                    true
                }
                None => false,
            },
            (Some("C"), 2) => match row(self, num(1)) {
                Some(r) => {
                    self.counter_in_flight[r as usize - 1] -= 1;
                    self.counter_acked[r as usize - 1] += 1;
                    self.commits += 1;
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

impl LedgerSink for Mutex<Ledger> {
    fn transfer_in_flight(&self, id: i64, tr: Transfer) {
        self.lock().in_flight.insert(id, tr);
    }
    fn transfer_acked(&self, id: i64, tr: Transfer) {
        let mut l = self.lock();
        l.in_flight.remove(&id);
        l.acked.insert(id, tr);
        l.commits += 1;
    }
    fn counter_in_flight(&self, row: i32) {
        self.lock().counter_in_flight[row as usize - 1] += 1;
    }
    fn counter_acked(&self, row: i32) {
        let mut l = self.lock();
        l.counter_in_flight[row as usize - 1] -= 1;
        l.counter_acked[row as usize - 1] += 1;
        l.commits += 1;
    }
}

/// A child process's ledger: one line per event appended to a file, written before the
/// next step (the kernel keeps what a killed process wrote): `t ID SRC DST AMOUNT` and
/// `T ID` for a transfer in flight and acknowledged, `c ROW` and `C ROW` for an increment.
pub(super) struct FileLedger(pub(super) Mutex<std::fs::File>);

impl FileLedger {
    fn line(&self, l: String) {
        use std::io::Write;
        let _ = self.0.lock().write_all(l.as_bytes());
    }
}

impl LedgerSink for FileLedger {
    fn transfer_in_flight(&self, id: i64, (a, b, amt): Transfer) {
        self.line(format!("t {id} {a} {b} {amt}\n"));
    }
    fn transfer_acked(&self, id: i64, _: Transfer) {
        self.line(format!("T {id}\n"));
    }
    fn counter_in_flight(&self, row: i32) {
        self.line(format!("c {row}\n"));
    }
    fn counter_acked(&self, row: i32) {
        self.line(format!("C {row}\n"));
    }
}
