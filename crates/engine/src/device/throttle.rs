//! Device throttle in the manner of NVMeVirt (Kim et al., FAST '23): a bandwidth per
//! direction, a fixed latency per request and a queue depth.
//!
//! Model: each direction is a channel with a time at which it next falls idle. A call of
//! `bytes` split into `n` requests reserves `bytes / bandwidth` of channel time starting at
//! `max(now, idle_at)`; its requests then complete `latency × ceil(n / slots)` later, where
//! `slots = min(n, queue_depth)` is the number of queue slots the call holds while in
//! service. The calling thread sleeps until that completion time. A transfer of N MiB at
//! B MiB/s therefore never completes in less than N/B seconds, whatever the thread count.
//!
//! # Waiting precisely
//! A plain `std::thread::sleep` overshoots by the thread's timer slack (50 µs by default on
//! Linux, prctl(2) `PR_SET_TIMERSLACK`) plus the wake-up delay: on the 2-core CI machine a
//! 20 µs request took 104 µs and a 75 µs one 161 µs, which made every latency under a few
//! hundred µs a different, slower device (docs/benchmarks.md, "Device throttle").
//! [`wait_until`] therefore sets the waiting thread's timer slack to 1 ns once, sleeps
//! until [`SPIN_MARGIN`] before the deadline and yields the CPU in a loop for the rest. A
//! request still never completes early; it may complete late by a scheduling delay when
//! both cores are busy, as a real completion would wait for a CPU too.

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Throttle settings; `None` leaves that dimension unthrottled. All `None` = no throttle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleConfig {
    /// Read bandwidth in MiB/s.
    pub read_mib_s: Option<f64>,
    /// Write bandwidth in MiB/s.
    pub write_mib_s: Option<f64>,
    /// Fixed service latency of one request in µs.
    pub latency_us: Option<u64>,
    /// Requests in service at once (NVMe queue depth).
    pub queue_depth: Option<usize>,
}

impl ThrottleConfig {
    /// True when no dimension is throttled.
    pub fn is_unthrottled(&self) -> bool {
        self.read_mib_s.is_none()
            && self.write_mib_s.is_none()
            && self.latency_us.is_none()
            && self.queue_depth.is_none()
    }

    /// Checks ranges. Errors: [`super::error::DeviceError::InvalidConfig`] naming the field.
    pub fn validate(&self) -> super::error::DeviceResult<()> {
        for (name, v) in [
            ("read_mib_s", self.read_mib_s),
            ("write_mib_s", self.write_mib_s),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0) {
                    return Err(super::error::DeviceError::InvalidConfig(format!(
                        "throttle {name} must be a positive number of MiB/s, got {v}"
                    )));
                }
            }
        }
        if self.queue_depth == Some(0) {
            return Err(super::error::DeviceError::InvalidConfig(
                "throttle queue_depth must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// The throttle state of one device. See the module doc for the model.
pub struct Throttle {
    cfg: ThrottleConfig,
    read_idle_at: Mutex<Instant>,
    write_idle_at: Mutex<Instant>,
    free_slots: Mutex<usize>,
    slot_freed: Condvar,
}

impl Throttle {
    /// A throttle, or `None` when `cfg` throttles nothing.
    pub fn new(cfg: &ThrottleConfig) -> Option<Self> {
        if cfg.is_unthrottled() {
            return None;
        }
        let now = Instant::now();
        Some(Throttle {
            cfg: cfg.clone(),
            read_idle_at: Mutex::new(now),
            write_idle_at: Mutex::new(now),
            free_slots: Mutex::new(cfg.queue_depth.unwrap_or(usize::MAX)),
            slot_freed: Condvar::new(),
        })
    }

    /// Blocks the caller for the service time of one call of `bytes` bytes split into
    /// `n_requests` requests; returns the µs waited.
    pub fn serve(&self, write: bool, bytes: usize, n_requests: u64) -> u64 {
        let start = Instant::now();
        let n = n_requests.max(1) as usize;
        let want = n.min(self.cfg.queue_depth.unwrap_or(usize::MAX));
        {
            let mut free = self.free_slots.lock();
            while *free < want {
                self.slot_freed.wait(&mut free);
            }
            *free -= want;
        }
        let (bw, chan) = if write {
            (self.cfg.write_mib_s, &self.write_idle_at)
        } else {
            (self.cfg.read_mib_s, &self.read_idle_at)
        };
        let transfer = bw.map_or(Duration::ZERO, |mib_s| {
            Duration::from_secs_f64(bytes as f64 / (mib_s * 1024.0 * 1024.0))
        });
        let now = Instant::now();
        let channel_done = {
            let mut idle_at = chan.lock();
            let begin = (*idle_at).max(now);
            *idle_at = begin + transfer;
            *idle_at
        };
        let waves = n.div_ceil(want) as u32;
        let done = channel_done + Duration::from_micros(self.cfg.latency_us.unwrap_or(0)) * waves;
        wait_until(done);
        *self.free_slots.lock() += want;
        self.slot_freed.notify_all();
        start.elapsed().as_micros() as u64
    }
}

/// How long before a deadline [`wait_until`] stops sleeping and starts yielding: above
/// the wake-up overshoot with a 1 ns timer slack (20–35 µs measured on the CI machine).
pub const SPIN_MARGIN: Duration = Duration::from_micros(50);

thread_local! {
    static FINE_TIMER_SLACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Blocks the calling thread until `deadline`, returning no earlier and, when a core is
/// free, within a few µs after (module doc, "Waiting precisely"). The first call on a
/// thread sets its timer slack to 1 ns (Linux prctl(2) `PR_SET_TIMERSLACK`; where that
/// fails the wait is as precise as plain sleeping).
// The engine's one unsafe block (lib.rs denies unsafe code): a libc call with no pointers.
#[allow(unsafe_code)]
pub fn wait_until(deadline: Instant) {
    FINE_TIMER_SLACK.with(|set| {
        if !set.get() {
            // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument and changes
            // only the calling thread's timer slack; no memory is passed.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            }
            set.set(true);
        }
    });
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN_MARGIN {
            std::thread::sleep(left - SPIN_MARGIN);
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unthrottled_config_builds_no_throttle() {
        assert!(Throttle::new(&ThrottleConfig::default()).is_none());
    }

    #[test]
    fn invalid_settings_are_named() {
        let c = ThrottleConfig {
            write_mib_s: Some(0.0),
            ..Default::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("write_mib_s"));
        let c = ThrottleConfig {
            queue_depth: Some(0),
            ..Default::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("queue_depth"));
    }

    #[test]
    fn latency_is_paid_per_wave_of_queue_depth() {
        let t = Throttle::new(&ThrottleConfig {
            latency_us: Some(2000),
            queue_depth: Some(2),
            ..Default::default()
        })
        .unwrap();
        let start = Instant::now();
        // 4 requests through 2 slots: 2 waves of 2 ms.
        t.serve(false, 4 * 4096, 4);
        assert!(start.elapsed() >= Duration::from_millis(4));
    }

    #[test]
    fn a_wait_never_returns_before_its_deadline() {
        for us in [0u64, 1, 10, 49, 50, 51, 120, 700] {
            let deadline = Instant::now() + Duration::from_micros(us);
            wait_until(deadline);
            assert!(Instant::now() >= deadline, "{us} µs wait returned early");
        }
        // A deadline in the past returns at once.
        wait_until(Instant::now() - Duration::from_millis(1));
    }
}
