//! `mvcclab report FILE --report DIR`: the report directory (export/report_dir.rs) written
//! again from a saved report.json.

use crate::export::write_report_dir;
use crate::result::{Report, SCHEMA_VERSION};
use anyhow::Result;

/// Flags of `mvcclab report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A report.json written by `run`/`compare` (`--format json` or `--report`).
    pub input: std::path::PathBuf,
    /// Directory to write report.json, report.csv, summary.md and the plots into.
    #[arg(long, value_name = "DIR")]
    pub report: std::path::PathBuf,
    /// Draw `blocks_per_second.svg` stacked by cause, one panel per run.
    #[arg(long)]
    pub stack_by_cause: bool,
}

/// `mvcclab report FILE --report DIR`: the report directory again from a saved report
/// (for example after mvcclab's plots changed).
///
/// Errors ([`crate::UsageError`]): the file cannot be read or is not a report of this
/// schema version; or the directory cannot be written.
pub fn run(a: ReportArgs) -> Result<()> {
    let what = a.input.display();
    let text =
        std::fs::read_to_string(&a.input).map_err(|e| crate::UsageError(format!("{what}: {e}")))?;
    let report: Report = serde_json::from_str(&text)
        .map_err(|e| crate::UsageError(format!("{what} is not an mvcclab report: {e}")))?;
    if report.schema_version != SCHEMA_VERSION {
        return Err(crate::UsageError(format!(
            "{what} has schema version {}; this mvcclab reads version {}",
            report.schema_version, SCHEMA_VERSION
        ))
        .into());
    }
    let files = write_report_dir(&report, &a.report, a.stack_by_cause)?;
    eprintln!(
        "report written to {}: {}",
        a.report.display(),
        files.join(", ")
    );
    Ok(())
}
