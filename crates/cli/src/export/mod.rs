//! The views of the result schema ([`crate::result`]), one file per format, each behind
//! the [`Exporter`] trait (hyperfine `src/export/`): JSON, CSV, Markdown, the terminal
//! table, SVG plots, the time series' CSV, and the report directory that holds them all; plus where a report
//! goes (`--format`, `--output`, `--report`), and the grid points of `--shard` joined
//! into one report (`merge.rs`).
//!
//! # Invariants
//! 1. Every view is a function of a [`crate::result::Report`] alone: the report
//!    directory written again from a saved `report.json` (`mvcclab report`) is the same
//!    byte for byte, plots included.
//! 2. A figure a real server does not measure shows as `n/m` in the table and Markdown
//!    views, never as 0; CSV and JSON carry the field as the run recorded it.

mod csv;
mod exporter;
mod json;
mod markdown;
mod merge;
mod output;
mod report_dir;
mod summary;
mod svg;
mod table;
mod timeseries;

pub use self::csv::{experiment_csv, fidelity_csv, flatten, to_csv, CsvExporter};
pub use exporter::Exporter;
pub use json::{to_json, JsonExporter};
pub use markdown::{fidelity_markdown, markdown_table, to_markdown, MarkdownExporter};
pub use merge::{join_experiment_runs, merge_points, read_points, Merged};
pub use output::{emit, exporter, output_path, write_report, BasicFormat, Format, OutputArgs};
pub use report_dir::{write_experiment_dir, write_report_dir};
pub use summary::{
    causes_with_blocks, fidelity_grid, label, ratio_text, run_label, server_versions, summary_rows,
    wal_record_types_shown,
};
pub use svg::plot_blocks_per_second;
pub use table::{experiment_table, fidelity_table, side_by_side, to_table, TableExporter};
pub use timeseries::{experiment_timeseries_csv, timeseries_csv};
