//! The `mvcclab` command line as a library: its subcommands, the result schema
//! ([`result`]) and the report directory ([`report`]). The binary (src/main.rs) only parses
//! the command line and maps errors to exit codes.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod crashtest;
pub mod design_arg;
pub mod designs;
pub mod experiments;
pub mod fidelity;
pub mod output;
pub mod progress;
pub mod real;
pub mod report;
pub mod result;
pub mod run;
pub mod storage_bench;
pub mod units;
pub mod workloads;

/// An error in what the user asked for (a flag, a switch, a workload name): exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
