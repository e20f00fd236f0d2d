//! Where reports go: the output formats and `--output FILE|-`.

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
    #[arg(long, default_value = "-")]
    pub output: String,
    /// Also write the report directory into DIR: JSON, CSV, a Markdown summary and, for
    /// run/compare, SVG plots.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// No progress bar and no status lines on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Text table with the row names in the first column and one right-aligned column per
/// label (at least `min_width` wide), under `title`.
pub fn side_by_side(
    title: &str,
    labels: &[String],
    rows: &[(String, Vec<String>)],
    min_width: usize,
) -> String {
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(10);
    let w = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(min_width);
    let mut out = format!("{title}\n\n{:<w0$}", "");
    for l in labels {
        out += &format!(" {l:>w$}");
    }
    out += "\n";
    for (name, vals) in rows {
        out += &format!("{name:<w0$}");
        for v in vals {
            out += &format!(" {v:>w$}");
        }
        out += "\n";
    }
    out
}

/// A Markdown table: a header of `first` and the labels, one row per entry.
pub fn markdown_table(first: &str, labels: &[String], rows: &[(String, Vec<String>)]) -> String {
    let mut s = format!("| {first} |");
    for l in labels {
        s += &format!(" {l} |");
    }
    s += "\n|---|";
    s += &"---:|".repeat(labels.len());
    s += "\n";
    for (name, vals) in rows {
        s += &format!("| {name} | {} |\n", vals.join(" | "));
    }
    s
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
