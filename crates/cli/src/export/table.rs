//! The terminal view (`--format table`, the default): the runs side by side, one
//! right-aligned column per run.

use super::exporter::Exporter;
use super::summary::{heading, run_label, summary_rows};
use crate::result::Report;
use anyhow::Result;

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

/// The terminal table: runs side by side.
pub fn to_table(report: &Report) -> String {
    if report.runs.is_empty() {
        return "no run completed\n".into();
    }
    let labels: Vec<String> = report.runs.iter().map(run_label).collect();
    side_by_side(
        &heading(&report.runs),
        &labels,
        &summary_rows(&report.runs),
        18,
    )
}

/// `--format table`.
pub struct TableExporter;

impl Exporter for TableExporter {
    fn export(&self, report: &Report) -> Result<String> {
        Ok(to_table(report))
    }
}
