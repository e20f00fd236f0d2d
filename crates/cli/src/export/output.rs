//! Where a report goes and in which format: `--format`, `--output FILE|-` (`-` is
//! standard output, as hyperfine's `--export-*` take it) and `--report DIR`, and the
//! [`Exporter`] of each `--format`.

use super::exporter::Exporter;
use super::{CsvExporter, JsonExporter, MarkdownExporter, TableExporter};
use crate::progress::status;
use crate::result::Report;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// Where and how a report goes: flags shared by `run`, `compare` and the experiments.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the report here; `-` is standard output.
    #[arg(long, default_value = "-", value_parser = output_path)]
    pub output: String,
    /// Also write the report directory into DIR: JSON, CSV, a Markdown summary and, for
    /// run/compare, SVG plots.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Draw `blocks_per_second.svg` of the report directory stacked by cause, one panel
    /// per run (default: one line per run).
    #[arg(long)]
    pub stack_by_cause: bool,
    /// No progress bar and no status lines on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

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

/// Checks an `--output` value before any work starts, so that a run of minutes does not
/// end in an error about where its report goes: `-`, or a path that is not a directory
/// (use `--report DIR` for a directory). A missing parent directory is created when the
/// report is written ([`emit`]), as `--report` creates its directory.
///
/// Errors: the path names a directory.
pub fn output_path(s: &str) -> std::result::Result<String, String> {
    if s != "-" && std::path::Path::new(s).is_dir() {
        return Err(format!(
            "{s} is a directory; --output takes a file path or - (--report DIR writes a report directory)"
        ));
    }
    Ok(s.to_string())
}

/// Writes `text` to `output`: a file path, its missing parent directories created, or
/// `-` for standard output.
///
/// Errors: the directory or the file cannot be written (the message names `--output`).
pub fn emit(text: &str, output: &str) -> Result<()> {
    if output == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
    } else {
        if let Some(dir) = std::path::Path::new(output).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating the directory of --output {output}"))?;
            }
        }
        std::fs::write(output, text).with_context(|| format!("writing --output {output}"))?;
    }
    Ok(())
}

/// The exporter of `format`.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Json => Box::new(JsonExporter),
        Format::Table => Box::new(TableExporter),
        Format::Csv => Box::new(CsvExporter),
        Format::Md => Box::new(MarkdownExporter),
    }
}

/// Writes `report` in the chosen format to `--output` (and the report directory first,
/// with `--report`).
///
/// Errors: the output or the report directory cannot be written.
pub fn write_report(report: &Report, out: &OutputArgs) -> Result<()> {
    if let Some(dir) = &out.report {
        let files = super::write_report_dir(report, dir, out.stack_by_cause)?;
        status(
            out.quiet,
            &format!("report written to {}: {}", dir.display(), files.join(", ")),
        );
    }
    let text = exporter(out.format).export(report)?;
    emit(&text, &out.output)
}
