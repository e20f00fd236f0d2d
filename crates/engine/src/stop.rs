//! A stop signal for background threads (checkpointer, page cleaner, WAL writer,
//! autovacuum, purge): they sleep on it between rounds and end when it is raised.

use parking_lot::{Condvar, Mutex};
use std::time::Duration;

/// Raised once, at shutdown; wakes every sleeper.
#[derive(Default)]
pub struct StopSignal {
    stop: Mutex<bool>,
    wake: Condvar,
}

impl StopSignal {
    /// Sleeps up to `d` unless the signal is raised; true when it is (then or during).
    pub fn sleep(&self, d: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, d);
        }
        *stop
    }

    /// True once the signal is raised.
    pub fn is_raised(&self) -> bool {
        *self.stop.lock()
    }

    /// Raises the signal and wakes every sleeper.
    pub fn raise(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
    }
}
