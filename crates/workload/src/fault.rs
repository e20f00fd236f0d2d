//! A target that fails on purpose, for tests of the driver's error handling through the
//! whole command line (hyperfine's `--debug-mode` is the model: a hidden flag that makes a
//! run's behaviour deterministic for a test). [`FaultTarget`] passes every operation to the
//! target it wraps, but every N-th operation on an sbtest table of each session goes to
//! `sbtest0`, a table no target has: the target itself then fails the statement, with its
//! own code (PostgreSQL's 42P01 undefined_table, MariaDB's 1146 ER_NO_SUCH_TABLE), message
//! and statement text, an error no sysbench driver ignores.

use crate::driver::{OpError, Session, Target};
use crate::sysbench::{Op, SysbenchOptions, WorkloadKind};

/// `inner`, with every `every_ops`-th operation on an sbtest table of each session sent to
/// the missing table `sbtest0`. Operations without a table (BEGIN, COMMIT,
/// select_random_points / select_random_ranges, TPC-C's transactions) pass unchanged and
/// are not counted.
pub struct FaultTarget<'a> {
    /// The target that runs the operations.
    pub inner: &'a dyn Target,
    /// Table operations per session between two faults; 0 = none.
    pub every_ops: u64,
}

impl Target for FaultTarget<'_> {
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<(), String> {
        self.inner.prepare(kind, opts, seed)
    }

    fn session(&self) -> Result<Box<dyn Session + '_>, String> {
        Ok(Box::new(FaultSession {
            inner: self.inner.session()?,
            every_ops: self.every_ops,
            ops: 0,
        }))
    }
}

struct FaultSession<'a> {
    inner: Box<dyn Session + 'a>,
    every_ops: u64,
    ops: u64,
}

/// `op` on table 0, `None` for an operation without a table.
fn on_missing_table(op: &Op) -> Option<Op> {
    let mut op = op.clone();
    match &mut op {
        Op::PointSelect { table, .. }
        | Op::SimpleRange { table, .. }
        | Op::SumRange { table, .. }
        | Op::OrderRange { table, .. }
        | Op::DistinctRange { table, .. }
        | Op::IndexUpdate { table, .. }
        | Op::NonIndexUpdate { table, .. }
        | Op::Delete { table, .. }
        | Op::Insert { table, .. } => *table = 0,
        Op::Begin
        | Op::Commit
        | Op::RandomPoints { .. }
        | Op::RandomRanges { .. }
        | Op::Tpcc(_) => return None,
    }
    Some(op)
}

impl Session for FaultSession<'_> {
    /// Errors: the inner session's, the injected ones included.
    fn execute(&mut self, op: &Op) -> Result<(), OpError> {
        if self.every_ops > 0 {
            if let Some(missing) = on_missing_table(op) {
                self.ops += 1;
                if self.ops.is_multiple_of(self.every_ops) {
                    return self.inner.execute(&missing);
                }
            }
        }
        self.inner.execute(op)
    }

    fn rollback(&mut self) {
        self.inner.rollback();
    }
}
