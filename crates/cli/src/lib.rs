//! The `mvcclab` command line as a library, in layers that each use only those below:
//!
//! | layer | holds |
//! |---|---|
//! | [`commands`] | one file (or folder) per subcommand: flags → what to run → the run layer → export |
//! | [`mod@bench`] | the run layer: run specs, the engine's configuration from the flags, one path prepare → settle → warm-up → measure → report for a design or a real server |
//! | [`export`] | the views of the result schema, one file per format, and where a report goes |
//! | [`result`], [`metadata`], [`design_arg`], [`progress`], [`units`], [`error`] | the result schema, a report's run metadata (host, version, commit, command line), design files, progress bar and Ctrl-C, sizes, errors and exit codes |
//!
//! The binary (src/main.rs) only parses the command line and maps errors to exit codes.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod commands;
pub mod design_arg;
pub mod error;
pub mod export;
pub mod metadata;
pub mod progress;
pub mod result;
pub mod units;

pub use error::UsageError;
