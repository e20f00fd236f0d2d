//! `mvcclab report FILE --report DIR`: the report directory (export/report_dir.rs) written
//! again from a saved report.json; `mvcclab report --merge DIR…`: the grid points that
//! `--shard` runs wrote (bench/grid.rs) joined into one report (export/merge.rs) and
//! rendered as a local run renders it.

use crate::export::{
    emit, experiment_csv, experiment_table, exporter, merge_points, read_points, to_json,
    write_experiment_dir, write_report_dir, Format, Merged,
};
use crate::result::{Report, SCHEMA_VERSION};
use crate::UsageError;
use anyhow::Result;
use std::path::PathBuf;

/// Flags of `mvcclab report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A report.json written by `run`/`compare` (`--format json` or `--report`).
    #[arg(required_unless_present = "merge", conflicts_with = "merge")]
    pub input: Option<PathBuf>,
    /// Join the grid points in these directories (written by runs with `--shard I/N
    /// --report DIR`) into one report, printed as --format and written to --report DIR.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub merge: Vec<PathBuf>,
    /// Directory to write report.json, report.csv, summary.md and the plots into
    /// (experiment.json, experiment.csv, summary.md for an experiment's points).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Format of the merged report on --output (with --merge).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where the merged report goes (with --merge); `-` is standard output.
    #[arg(long, default_value = "-", value_parser = crate::export::output_path)]
    pub output: String,
    /// Draw `blocks_per_second.svg` stacked by cause, one panel per run.
    #[arg(long)]
    pub stack_by_cause: bool,
}

/// `mvcclab report FILE --report DIR`: the report directory again from a saved report
/// (for example after mvcclab's plots changed); `mvcclab report --merge DIR…`: the points
/// of a sharded sweep as one report.
///
/// Errors ([`UsageError`]): the file cannot be read or is not a report of this schema
/// version; the points cannot be joined (export/merge.rs names each case); or the
/// directory cannot be written.
pub fn run(a: ReportArgs) -> Result<()> {
    if !a.merge.is_empty() {
        return merge(a);
    }
    let Some(input) = &a.input else {
        return Err(UsageError("give a report.json or --merge DIR...".into()).into());
    };
    let Some(dir) = &a.report else {
        return Err(UsageError(format!(
            "--report DIR: where to write the report directory of {}",
            input.display()
        ))
        .into());
    };
    let what = input.display();
    let text = std::fs::read_to_string(input).map_err(|e| UsageError(format!("{what}: {e}")))?;
    let report: Report = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("{what} is not an mvcclab report: {e}")))?;
    if report.schema_version != SCHEMA_VERSION {
        return Err(UsageError(format!(
            "{what} has schema version {}; this mvcclab reads version {}",
            report.schema_version, SCHEMA_VERSION
        ))
        .into());
    }
    let files = write_report_dir(&report, dir, a.stack_by_cause)?;
    eprintln!("report written to {}: {}", dir.display(), files.join(", "));
    Ok(())
}

fn merge(a: ReportArgs) -> Result<()> {
    let merged = merge_points(read_points(&a.merge)?)?;
    let written = |files: Vec<String>, dir: &std::path::Path| {
        eprintln!("report written to {}: {}", dir.display(), files.join(", "));
    };
    let text = match &merged {
        Merged::Run(r) => {
            if let Some(dir) = &a.report {
                written(write_report_dir(r, dir, a.stack_by_cause)?, dir);
            }
            exporter(a.format).export(r)?
        }
        Merged::Experiment(e) => {
            if let Some(dir) = &a.report {
                written(write_experiment_dir(e, dir)?, dir);
            }
            match a.format {
                Format::Json => to_json(e)?,
                Format::Table => experiment_table(e, false),
                Format::Md => experiment_table(e, true),
                Format::Csv => experiment_csv(e)?,
            }
        }
    };
    emit(&text, &a.output)
}
