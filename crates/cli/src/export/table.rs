//! The terminal view (`--format table`, the default): the runs side by side, one
//! right-aligned column per run; for a named experiment one column per design × phase.

use super::exporter::Exporter;
use super::markdown::markdown_table;
use super::summary::{
    fidelity_grid, fidelity_value, heading, ratio_text, run_label, server_versions, summary_rows,
};
use crate::result::{
    ExperimentReport, ExperimentRun, FidelityReport, FidelityRow, PerOpIo, PhaseReport, Report,
    Sample,
};
use anyhow::Result;
use mvcclab_engine::design::VersionStorage;
use mvcclab_engine::stats::Cause;

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

/// Causes with any block or request in some phase of some run.
/// The classes of real servers' files that moved blocks in any phase, sorted.
fn file_classes(runs: &[ExperimentRun]) -> Vec<String> {
    let mut v: Vec<String> = runs
        .iter()
        .flat_map(|r| r.phases.iter())
        .filter_map(|p| p.server.as_ref())
        .flat_map(|s| {
            s.by_file_class
                .iter()
                .filter(|(_, c)| c.io.read_blocks_4k + c.io.write_blocks_4k > 0)
                .map(|(k, _)| k.clone())
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn causes(runs: &[ExperimentRun]) -> Vec<Cause> {
    let mut v: Vec<Cause> = runs
        .iter()
        .flat_map(|r| r.phases.iter())
        .flat_map(|p| {
            p.by_cause
                .iter()
                .filter(|(_, c)| c.read_requests + c.write_requests > 0)
                .map(|(k, _)| *k)
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The table view of a named experiment (Markdown with `markdown`): one column per
/// design × phase, per-statement figures by cause.
pub fn experiment_table(r: &ExperimentReport, markdown: bool) -> String {
    let cols: Vec<(String, &PhaseReport)> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.phases
                .iter()
                .map(move |p| (format!("{} {}", run.design.name, p.name), p))
        })
        .collect();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, f: &dyn Fn(&PhaseReport) -> String| {
        rows.push((name, cols.iter().map(|(_, p)| f(p)).collect()))
    };
    add("statements".into(), &|p| p.ops.to_string());
    add("elapsed (s)".into(), &|p| format!("{:.1}", p.elapsed_s));
    let per = |p: &PhaseReport, f: &dyn Fn(&PerOpIo) -> f64| {
        if p.ops == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", f(&p.per_op))
        }
    };
    add("read requests / stmt".into(), &|p| {
        per(p, &|x| x.read_requests)
    });
    add("write requests / stmt".into(), &|p| {
        per(p, &|x| x.write_requests)
    });
    add("4 KiB blocks read / stmt".into(), &|p| {
        per(p, &|x| x.read_blocks_4k)
    });
    add("4 KiB blocks written / stmt".into(), &|p| {
        per(p, &|x| x.write_blocks_4k)
    });
    add("WAL/redo bytes / stmt".into(), &|p| {
        per(p, &|x| x.wal_bytes)
    });
    let per_total = |p: &PhaseReport, v: u64| {
        if p.ops == 0 {
            format!("{v} (total)")
        } else {
            format!("{:.3}", v as f64 / p.ops as f64)
        }
    };
    add("buffer hits / stmt".into(), &|p| {
        per_total(p, p.total.buffer_hits)
    });
    add("buffer misses / stmt".into(), &|p| {
        per_total(p, p.total.buffer_misses)
    });
    add("OS-cache hits / stmt".into(), &|p| {
        per_total(p, p.total.os_cache_read_hits)
    });
    add("full-page images / stmt".into(), &|p| {
        per_total(p, p.total.wal_fpi)
    });
    // A real server counts neither (its phase's `server.not_measured`).
    add("versions traversed / stmt".into(), &|p| match p.server {
        Some(_) => "-".into(),
        None => format!("{:.2}", p.versions_traversed_per_op),
    });
    add("HOT updates / updates".into(), &|p| {
        format!("{}/{}", p.tables.n_tup_hot_upd, p.tables.n_tup_upd)
    });
    add("index entries inserted".into(), &|p| match p.server {
        Some(_) => "-".into(),
        None => p.tables.index_entries_inserted.to_string(),
    });
    add("pages (table, indexes) at end".into(), &|p| {
        format!("{}, {}", p.pages.0, p.pages.1)
    });
    // Undo designs and real InnoDB: purge's batches, the undo and rollback-segment pages it
    // moved, and the history list length as sampled each `--report-interval` on both sides.
    if r.runs
        .iter()
        .any(|run| run.design.version_storage == VersionStorage::UndoDelta)
    {
        add("purge batches (total)".into(), &|p| {
            p.undo.purge_batches.to_string()
        });
        add("undo / rseg pages read (total)".into(), &|p| {
            format!("{} / {}", p.undo.undo_pages_read, p.undo.rseg_pages_read)
        });
        add("undo / rseg pages written (total)".into(), &|p| {
            format!(
                "{} / {}",
                p.undo.undo_pages_written, p.undo.rseg_pages_written
            )
        });
        add("file-space pages read / written (total)".into(), &|p| {
            format!(
                "{} / {}",
                p.undo.file_space_pages_read, p.undo.file_space_pages_written
            )
        });
        add("history list, samples: largest / mean".into(), &|p| {
            let h: Vec<f64> = p
                .timeseries
                .iter()
                .filter_map(Sample::history_list_length)
                .collect();
            if h.is_empty() {
                return "-".into();
            }
            let max = h.iter().copied().fold(0.0, f64::max);
            format!("{max:.0} / {:.0}", h.iter().sum::<f64>() / h.len() as f64)
        });
    }
    for cause in causes(&r.runs) {
        add(format!("requests r/w / stmt: {cause}"), &|p| {
            let x = p.per_op_by_cause.get(&cause).cloned().unwrap_or_default();
            if p.ops == 0 {
                let c = p.by_cause.get(&cause).copied().unwrap_or_default();
                format!("{}/{} (total)", c.read_requests, c.write_requests)
            } else {
                format!("{:.3}/{:.3}", x.read_requests, x.write_requests)
            }
        });
        add(format!("blocks r/w / stmt: {cause}"), &|p| {
            let x = p.per_op_by_cause.get(&cause).cloned().unwrap_or_default();
            if p.ops == 0 {
                let c = p.by_cause.get(&cause).copied().unwrap_or_default();
                format!("{}/{} (total)", c.read_blocks_4k, c.write_blocks_4k)
            } else {
                format!("{:.3}/{:.3}", x.read_blocks_4k, x.write_blocks_4k)
            }
        });
    }
    for class in file_classes(&r.runs) {
        add(format!("blocks r/w / stmt: file {class}"), &|p| {
            let Some(c) = p.server.as_ref().and_then(|s| s.by_file_class.get(&class)) else {
                return "-".into();
            };
            if p.ops == 0 {
                format!("{}/{} (total)", c.io.read_blocks_4k, c.io.write_blocks_4k)
            } else {
                let n = p.ops as f64;
                format!(
                    "{:.3}/{:.3}",
                    c.io.read_blocks_4k as f64 / n,
                    c.io.write_blocks_4k as f64 / n
                )
            }
        });
    }
    let title = format!(
        "experiment {} {}{}",
        r.experiment,
        r.parameters,
        if r.interrupted {
            " (INTERRUPTED by Ctrl-C)"
        } else {
            ""
        }
    );
    let labels: Vec<String> = cols.into_iter().map(|(l, _)| l).collect();
    let servers: Vec<String> = r
        .runs
        .iter()
        .filter_map(|run| {
            run.server
                .as_ref()
                .map(|s| format!("{} {}", run.design.name, s.version))
        })
        .collect();
    let ratio_title = format!(
        "preset / real per statement, phase by phase (as mvcclab fidelity; ! = outside 0.8–1.25){}",
        servers.iter().map(|v| format!("; {v}")).collect::<String>()
    );
    let ratio_labels = vec![
        "preset".to_string(),
        "real".to_string(),
        "preset / real".to_string(),
    ];
    let ratio_rows = table_rows(&r.ratios, false);
    if markdown {
        let mut out = format!("# {title}\n\n{}", markdown_table("", &labels, &rows));
        if !r.ratios.is_empty() {
            out += &format!(
                "\n## {ratio_title}\n\n{}",
                markdown_table("figure", &ratio_labels, &ratio_rows)
            );
        }
        out
    } else {
        let mut out = side_by_side(&title, &labels, &rows, 12);
        if !r.ratios.is_empty() {
            out += "\n";
            out += &side_by_side(&ratio_title, &ratio_labels, &ratio_rows, 12);
        }
        out
    }
}

/// Rows of the text and Markdown tables: ([scale · ]workload · metric, [preset, real,
/// ratio]); the scale only when `scales` is set.
fn table_rows(rows: &[FidelityRow], scales: bool) -> Vec<(String, Vec<String>)> {
    rows.iter()
        .map(|r| {
            let scale = match (&r.scale, scales) {
                (Some(s), true) => format!("{s} · "),
                _ => String::new(),
            };
            (
                format!(
                    "{scale}{} · {} vs {} · {}",
                    r.workload, r.preset, r.real, r.metric
                ),
                vec![
                    fidelity_value(r.preset_value),
                    fidelity_value(r.real_value),
                    ratio_text(r),
                ],
            )
        })
        .collect()
}

/// The table view of `mvcclab fidelity`: preset, real and ratio per figure, under a title
/// naming the runs' `shape` and the servers, then the commands that reproduce them.
pub fn fidelity_table(f: &FidelityReport, shape: &str) -> String {
    let labels = vec![
        "preset".to_string(),
        "real".to_string(),
        "preset / real".to_string(),
    ];
    let mut out = side_by_side(
        &format!(
            "fidelity: preset / real per transaction ({}{}); ! = outside 0.8–1.25",
            shape,
            server_versions(&f.report)
                .iter()
                .map(|v| format!("; {v}"))
                .collect::<String>()
        ),
        &labels,
        &table_rows(&f.rows, f.scales.len() > 1),
        12,
    );
    out += &super::markdown::repeats_note(f);
    if f.scales.len() > 1 {
        let (labels, rows) = fidelity_grid(f);
        out += "\n";
        out += &side_by_side(
            "scale grid: preset / real per transaction; ! = outside 0.8–1.25",
            &labels,
            &rows,
            10,
        );
        for s in &f.scales {
            out += &format!("{}: {}\n", s.name, s.shape());
        }
    }
    out + "\nreproduce with:\n" + &f.commands.join("\n") + "\n"
}

/// `--format table`.
pub struct TableExporter;

impl Exporter for TableExporter {
    fn export(&self, report: &Report) -> Result<String> {
        Ok(to_table(report))
    }
}
