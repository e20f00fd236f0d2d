//! Where reports go: the output formats and `--output FILE|-`.

use anyhow::{Context, Result};
use clap::ValueEnum;
use std::io::Write;

/// Output formats.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A human-readable table.
    Table,
    /// The report as JSON (schema in docs/results.md).
    Json,
    /// One row per run, one column per JSON field.
    Csv,
    /// A Markdown summary.
    Md,
}

/// Output formats of reports that have no CSV or Markdown view (`storage-bench`).
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum BasicFormat {
    /// A human-readable table.
    Table,
    /// The report as JSON.
    Json,
}

/// Writes `text` to `output`: a file path, or `-` for standard output.
///
/// Errors: the file cannot be written (the message names `--output`).
pub fn emit(text: &str, output: &str) -> Result<()> {
    if output == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        std::fs::write(output, text).with_context(|| format!("writing --output {output}"))?;
    }
    Ok(())
}
