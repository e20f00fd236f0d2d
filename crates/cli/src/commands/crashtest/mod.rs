//! `mvcclab crashtest`: power cuts at random moments under a workload with checkable
//! invariants, recovery after each, and the checks (issue 7).
//!
//! Files: the flags (`args.rs`) and the command (`command.rs`), the tables and the workers
//! (`workload.rs`), the client's ledger (`ledger.rs`), power cuts on the crash-simulation
//! device (`power_cut.rs`), SIGKILLed child processes (`kill.rs`), the checks after
//! recovery (`check.rs`) and the summary (`report.rs`).
//!
//! # The workload
//! Three tables on the design under test:
//! - `accounts(id INTEGER PRIMARY KEY, balance BIGINT, pad CHAR(100))`: bank accounts, each
//!   opened with [`INITIAL_BALANCE`];
//! - `transfers(id BIGINT PRIMARY KEY, src INTEGER, dst INTEGER, amount BIGINT)` with an
//!   index on `src`: one row per transfer, inserted by the transaction that moves the money;
//! - `counters(id INTEGER PRIMARY KEY, n BIGINT, pad CHAR(100))` with an index on `n`: each
//!   increment changes an indexed column (a non-HOT update in `postgres`, a secondary-index
//!   delete-mark and insert in `innodb`).
//!
//! Worker threads run transactions: a transfer (two balance updates and a transfers row) or
//! an increment of one counter; one in ten is rolled back on purpose after its changes. The
//! client keeps a ledger: what was acknowledged as committed, and what was in flight (a
//! commit that returned an error, or had not returned, when the power went: its outcome is
//! unknown, so either is accepted).
//!
//! # A cut
//! Half the cuts come after a random number of acknowledged commits, from outside; the
//! others fire inside a random device write ([`CrashDevice::arm_power_cut`](mvcclab_engine::device::CrashDevice::arm_power_cut): that write
//! reaches the medium as a random prefix of its sectors, none to all), half of those among
//! home page writes only, so that cuts land in the middle of a batch of page writes.
//! The crash device's power is cut and held off ([`CrashDevice::power_cut_and_hold`](mvcclab_engine::device::CrashDevice::power_cut_and_hold)): unsynced writes are kept, dropped or torn at
//! random (seeded), every later write fails, the workers stop at their next error. The
//! database is dropped (the buffer pool, WAL buffer and in-memory state are lost), the
//! relation files are scanned for pages that fail their checksum (torn), power comes back
//! and the database is reopened, which runs recovery. Then the checks, and the next cut
//! continues the workload on the recovered database.
//!
//! # The checks
//! - **lost commits**: an acknowledged transfer whose row is missing, or a counter below
//!   its acknowledged increments;
//! - **invariant violations**: the sum of balances differs from the opening total; a
//!   balance differs from what the transfers rows present imply; a transfers row that was
//!   never committed (rolled back, or failed before its commit) is visible; a counter above
//!   its acknowledged plus in-flight increments; a row missing from an index, or an index
//!   entry that leads to no row version ([`Database::check_indexes`](mvcclab_engine::db::Database::check_indexes)); a page still torn
//!   after recovery; recovery failing.
//! - **torn pages repaired**: pages that failed their checksum on the device after the cut
//!   and verify after recovery (its end-of-recovery checkpoint writes the redone pages).
//!
//! The device's outcome at each cut is a function of the seed; the threads' interleaving
//! and the timed background work (checkpointer, page cleaner, autovacuum, purge) are not,
//! so a run replays the same cuts but not byte for byte the same workload.

mod args;
mod check;
mod command;
mod kill;
mod ledger;
mod power_cut;
mod report;
mod workload;

pub use args::CrashtestArgs;
pub use command::run;
pub use kill::kill_test;
pub use power_cut::crashtest;
pub use report::CrashtestSummary;
pub use workload::INITIAL_BALANCE;
