//! Live progress on the terminal and a clean stop on Ctrl-C.
//!
//! The first Ctrl-C (SIGINT) sets the run's stop flag: each driver thread finishes its
//! current event, the run returns what it measured (marked `interrupted`), runs not yet
//! started are skipped, and the report is written as usual. A second Ctrl-C exits at once
//! with status 130 (signal-hook's conditional shutdown), writing nothing.
//!
//! The bar (indicatif, on standard error) shows elapsed time against `--time` (or events
//! against `--events`) and the TPS of the last second; in a measured phase with a time
//! series, the TPS and device MiB/s (read, written) of the last `--report-interval`
//! instead ([`LiveRates`], published by the sampler, bench/series.rs). It is hidden when
//! standard error is not a terminal, and with `--quiet`.

use indicatif::{ProgressBar, ProgressStyle};
use mvcclab_workload::driver::RunControl;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Routes SIGINT to `stop` (first press) and to process exit (second press).
///
/// Errors: the handler cannot be installed (the OS refused `sigaction`).
pub fn install_ctrl_c(stop: &Arc<AtomicBool>) -> anyhow::Result<()> {
    use signal_hook::consts::SIGINT;
    // Order matters: the conditional shutdown checks the flag before the flag is set.
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, stop.clone())?;
    signal_hook::flag::register(SIGINT, stop.clone())?;
    Ok(())
}

/// Whether progress is drawn: standard error is a terminal and `--quiet` was not given.
pub fn visible(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A status line on standard error (hidden with `--quiet`).
pub fn status(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("{msg}");
    }
}

/// The figures of the last completed interval of a time series, for the progress line:
/// transactions per second and device MiB/s read and written (f64 bits in atomics).
#[derive(Debug, Default)]
pub struct LiveRates {
    tps: AtomicU64,
    read_mib_s: AtomicU64,
    write_mib_s: AtomicU64,
    published: AtomicBool,
}

impl LiveRates {
    /// Publishes the last interval's TPS and MiB/s read and written.
    pub fn publish(&self, tps: f64, read_mib_s: f64, write_mib_s: f64) {
        self.tps.store(tps.to_bits(), Ordering::Relaxed);
        self.read_mib_s
            .store(read_mib_s.to_bits(), Ordering::Relaxed);
        self.write_mib_s
            .store(write_mib_s.to_bits(), Ordering::Relaxed);
        self.published.store(true, Ordering::Release);
    }

    /// The last published (TPS, MiB/s read, MiB/s written), if any.
    pub fn last(&self) -> Option<(f64, f64, f64)> {
        self.published.load(Ordering::Acquire).then(|| {
            let f = |a: &AtomicU64| f64::from_bits(a.load(Ordering::Relaxed));
            (f(&self.tps), f(&self.read_mib_s), f(&self.write_mib_s))
        })
    }
}

/// Runs `f` (a driver run using `ctl`) under a progress bar labelled `label`. `time_s` or
/// `events` (whichever is set) gives the bar's length. With `live`, the line shows its
/// last interval's TPS and MiB/s once published; otherwise the TPS of the last second of
/// `ctl.completed`.
pub fn with_progress<T: Send>(
    label: &str,
    time_s: f64,
    events: u64,
    ctl: &RunControl,
    quiet: bool,
    live: Option<&LiveRates>,
    f: impl FnOnce() -> T + Send,
) -> T {
    if !visible(quiet) {
        return f();
    }
    let by_time = time_s > 0.0;
    let (len, template) = if by_time {
        (
            (time_s * 10.0).ceil() as u64,
            "{prefix:>24} [{bar:30}] {elapsed:>4} of {len_s} {msg}",
        )
    } else {
        (events, "{prefix:>24} [{bar:30}] {pos}/{len} events {msg}")
    };
    let bar = ProgressBar::new(len.max(1));
    let template = template.replace("{len_s}", &format!("{time_s:.0}s"));
    bar.set_style(
        ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(label.to_string());
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            let mut last = (Instant::now(), 0u64);
            let mut tps = 0.0;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let n = ctl.completed.load(Ordering::Relaxed);
                let now = Instant::now();
                let dt = now.duration_since(last.0).as_secs_f64();
                if dt >= 1.0 {
                    tps = n.saturating_sub(last.1) as f64 / dt;
                    last = (now, n);
                }
                bar.set_position(if by_time {
                    (start.elapsed().as_secs_f64() * 10.0) as u64
                } else {
                    n
                });
                let stopping = if ctl.stop.load(Ordering::Relaxed) {
                    " (stopping: Ctrl-C)"
                } else {
                    ""
                };
                let rates = match live.and_then(LiveRates::last) {
                    Some((tps, r, w)) => {
                        format!("{tps:.0} tps, {r:.1} MiB/s read, {w:.1} MiB/s written")
                    }
                    None => format!("{tps:.0} tps"),
                };
                bar.set_message(format!("{n} txns, {rates}{stopping}"));
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        out
    });
    bar.finish_and_clear();
    out
}
