//! The CLI's errors and their exit codes (hyperfine `src/main.rs`: `main` prints
//! `Error: {:#}` and exits non-zero): a [`UsageError`] (a flag, a switch, a design file,
//! a workload name) exits 2; a failure of the engine, a server or the driver's target
//! exits 1 with its own message.

use mvcclab_workload::driver::RunOptions;

/// An error in what the user asked for (a flag, a switch, a workload name): exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An engine error as the CLI reports it, with the engine's message: a configuration the
/// engine refuses (`Error::InvalidConfig`, which names the switch or setting) is the
/// user's ([`UsageError`], exit 2); any other failure (I/O, corruption, ...) exits 1.
pub fn engine_error(e: mvcclab_engine::Error) -> anyhow::Error {
    match e {
        mvcclab_engine::Error::InvalidConfig(_) => UsageError(e.to_string()).into(),
        other => anyhow::Error::msg(other.to_string()),
    }
}

/// A driver error `message` of a run with `run`: the driver's own checks of its options
/// (workload driver.rs `run`: no threads, neither a time nor an event limit, a bad rate)
/// are the user's ([`UsageError`], exit 2); anything else (a session that cannot open on
/// the target) is the target's failure (exit 1).
pub fn driver_error(run: &RunOptions, message: String) -> anyhow::Error {
    let bad_options = run.threads == 0
        || (run.events == 0 && run.time_s <= 0.0)
        || !(run.rate_tps >= 0.0 && run.rate_tps.is_finite());
    if bad_options {
        UsageError(message).into()
    } else {
        anyhow::Error::msg(message)
    }
}
