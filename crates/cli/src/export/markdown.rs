//! The Markdown view (hyperfine `src/export/markdown.rs`): the summary a report directory
//! opens with (`summary.md`), and the Markdown table every Markdown view is made of.

use super::exporter::Exporter;
use super::summary::{
    fidelity_grid, fidelity_value, heading, ratio_text, run_label, server_versions, summary_rows,
};
use crate::result::{FidelityReport, FidelityRow, Report, RunReport};
use anyhow::Result;

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

/// The Markdown view: the summary table, foreground blocks per operation, latency
/// percentiles per operation kind, and (when `plots` is given) links to the SVG files.
pub fn to_markdown(report: &Report, plots: &[&str]) -> String {
    if report.runs.is_empty() {
        return "# mvcclab report\n\nNo run completed.\n".into();
    }
    let runs = &report.runs;
    let labels: Vec<String> = runs.iter().map(run_label).collect();
    let mut out = format!(
        "# mvcclab {}\n\n{}. Schema version {}; every field is described in docs/results.md.\n\n",
        report.command,
        heading(runs),
        report.schema_version
    );
    out += "## Summary\n\n";
    out += &markdown_table("", &labels, &summary_rows(runs));
    if !report.loads.is_empty() {
        out += "\n## Loads (once per design, reused by its runs)\n\n| design | load s | kept MiB | runs | how |\n|---|---|---|---|---|\n";
        for l in &report.loads {
            out += &format!(
                "| {} | {:.1} | {:.0} | {} | {} |\n",
                l.design,
                l.duration_s,
                l.saved_bytes as f64 / 1048576.0,
                l.runs,
                l.method
            );
        }
    }
    // Rows of `keys` (sorted, deduplicated), one cell per run from `cell` ("-" if None).
    let rows_of = |keys: Vec<&String>, cell: &dyn Fn(&RunReport, &str) -> Option<String>| {
        let mut keys = keys;
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let vals = runs
                    .iter()
                    .map(|r| cell(r, k).unwrap_or_else(|| "-".into()));
                (k.clone(), vals.collect())
            })
            .collect::<Vec<(String, Vec<String>)>>()
    };
    out += "\n## Foreground 4 KiB blocks read/written per operation\n\n";
    let ops = rows_of(
        runs.iter().flat_map(|r| r.io.per_op.keys()).collect(),
        &|r, k| {
            r.io.per_op
                .get(k)
                .map(|p| format!("{:.3}/{:.3}", p.read_blocks_4k, p.write_blocks_4k))
        },
    );
    out += &markdown_table("operation", &labels, &ops);
    out += "\n## Latency per operation kind, p50 / p95 / p99 (ms)\n\n";
    let lat = rows_of(
        runs.iter().flat_map(|r| r.results.latency.keys()).collect(),
        &|r, k| {
            r.results
                .latency
                .get(k)
                .map(|l| format!("{:.3} / {:.3} / {:.3}", l.p50_ms, l.p95_ms, l.p99_ms))
        },
    );
    out += &markdown_table("operation", &labels, &lat);
    if !plots.is_empty() {
        out += "\n## Plots\n\n";
        for p in plots {
            out += &format!("![{p}]({p})\n\n");
        }
    }
    out
}

/// One Markdown table per workload of `rows` (in the order the workloads first appear):
/// preset, real and ratio per figure.
fn workload_tables(rows: &[FidelityRow]) -> String {
    let labels = vec![
        "preset".to_string(),
        "real".to_string(),
        "preset / real".to_string(),
    ];
    let mut workloads: Vec<&str> = Vec::new();
    for r in rows {
        if !workloads.contains(&r.workload.as_str()) {
            workloads.push(&r.workload);
        }
    }
    let mut out = String::new();
    for w in workloads {
        out += &format!("### {w}\n\n");
        let table: Vec<(String, Vec<String>)> = rows
            .iter()
            .filter(|r| r.workload == w)
            .map(|r| {
                (
                    format!("{} vs {}: {}", r.preset, r.real, r.metric),
                    vec![
                        fidelity_value(r.preset_value),
                        fidelity_value(r.real_value),
                        ratio_text(r),
                    ],
                )
            })
            .collect();
        out += &markdown_table("figure", &labels, &table);
        out += "\n";
    }
    out
}

/// The Markdown view of `mvcclab fidelity`: the servers, one table per workload (per scale
/// and workload with several scales, then the scale grid: [`fidelity_grid`]), then the
/// commands.
pub fn fidelity_markdown(f: &FidelityReport) -> String {
    let mut out = String::new();
    let servers = server_versions(&f.report);
    if !servers.is_empty() {
        out += &format!("Servers: {}.\n\n", servers.join("; "));
    }
    out += &repeats_note(f);
    if f.scales.len() > 1 {
        for s in &f.scales {
            out += &format!("## Scale {}: {}\n\n", s.name, s.shape());
            let rows: Vec<FidelityRow> = f
                .rows
                .iter()
                .filter(|r| r.scale.as_deref() == Some(s.name.as_str()))
                .cloned()
                .collect();
            out += &workload_tables(&rows);
        }
        let (labels, rows) = fidelity_grid(f);
        out += "## Scale grid: preset / real per transaction (! = outside 0.8–1.25)\n\n";
        out += &markdown_table("workload · pair · figure", &labels, &rows);
        out += "\n";
    } else {
        out += &workload_tables(&f.rows);
    }
    out += "Commands that reproduce each pair:\n\n```sh\n";
    for c in &f.commands {
        out += c;
        out += "\n";
    }
    out += "```\n";
    out
}

/// With `--repeats`, what a row of several pairs shows (a line and a blank line); empty
/// when every row is one pair.
pub(crate) fn repeats_note(f: &FidelityReport) -> String {
    match f.rows.iter().map(|r| r.repeats).max() {
        Some(n) if n > 1 => format!(
            "Each figure sums up {n} pairs of runs: each side's median value, and the median \
             of the pairs' ratios with their range [lowest–highest]; `!` follows the median.\n\n"
        ),
        _ => String::new(),
    }
}

/// `--format md`: the summary without plots.
pub struct MarkdownExporter;

impl Exporter for MarkdownExporter {
    fn export(&self, report: &Report) -> Result<String> {
        Ok(to_markdown(report, &[]))
    }
}
