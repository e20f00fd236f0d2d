//! The CSV view (hyperfine `src/export/csv.rs`): one row per run, one column per leaf of
//! the JSON, named by its dotted path; for a named experiment one row per design and phase.

use super::exporter::Exporter;
use crate::result::{ExperimentReport, FidelityReport, Report};
use anyhow::Result;
use std::collections::BTreeMap;

/// Flattens JSON into `(dotted.path, scalar)` pairs, arrays indexed by position.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                flatten(&key(k), x, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), x, out);
            }
        }
        serde_json::Value::Null => out.push((prefix.to_string(), String::new())),
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The CSV view: a header of dotted JSON paths (`results.tps`,
/// `io.per_txn_by_cause.vacuum.write_blocks_4k`, ...) and one row per run; a field a run
/// does not have is empty. `storage_config` and `results.timeseries` are left out (they
/// are in the JSON; the series has its own view, `timeseries.csv`).
///
/// Errors: none in practice (writing to memory).
pub fn to_csv(report: &Report) -> anyhow::Result<String> {
    let rows: Vec<Vec<(String, String)>> = report
        .runs
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).expect("run serializes");
            if let Some(m) = v.as_object_mut() {
                m.remove("storage_config");
                if let Some(res) = m.get_mut("results").and_then(|x| x.as_object_mut()) {
                    res.remove("timeseries");
                }
            }
            let mut out = Vec::new();
            flatten("", &v, &mut out);
            out
        })
        .collect();
    let mut columns: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for row in &rows {
        for (k, _) in row {
            if seen.insert(k.clone()) {
                columns.push(k.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&columns)?;
    for row in &rows {
        let m: BTreeMap<&str, &str> = row.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        w.write_record(
            columns
                .iter()
                .map(|c| m.get(c.as_str()).copied().unwrap_or("")),
        )?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The CSV view of a named experiment: one row per design and phase, one column per JSON
/// leaf of the phase but its time series (`timeseries.csv`).
pub fn experiment_csv(r: &ExperimentReport) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Option<Vec<String>> = None;
    for run in &r.runs {
        for p in &run.phases {
            let mut leaves = vec![("design".to_string(), run.design.name.clone())];
            let mut v = serde_json::to_value(p)?;
            if let Some(m) = v.as_object_mut() {
                m.remove("timeseries");
            }
            flatten("", &v, &mut leaves);
            if header.is_none() {
                let h: Vec<String> = leaves.iter().map(|(k, _)| k.clone()).collect();
                w.write_record(&h)?;
                header = Some(h);
            }
            let m: BTreeMap<&str, &str> = leaves
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let h = header.as_ref().expect("header written");
            w.write_record(h.iter().map(|c| m.get(c.as_str()).copied().unwrap_or("")))?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The CSV view of `mvcclab fidelity`: one row per figure, one column per field of
/// `FidelityRow`.
///
/// Errors: none in practice (writing to memory).
pub fn fidelity_csv(f: &FidelityReport) -> Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    for r in &f.rows {
        w.serialize(r)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// `--format csv`.
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn export(&self, report: &Report) -> Result<String> {
        to_csv(report)
    }
}
