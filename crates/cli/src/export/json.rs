//! The JSON view: the result schema as serde writes it, pretty-printed with a final
//! newline (hyperfine `src/export/json.rs`); docs/results.md describes every field.

use super::exporter::Exporter;
use crate::result::Report;
use anyhow::Result;
use serde::Serialize;

/// Any report as pretty-printed JSON with a final newline.
///
/// Errors: serde's (none for the report types).
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// `--format json`.
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn export(&self, report: &Report) -> Result<String> {
        to_json(report)
    }
}
