//! `mvcclab report --merge DIR…`: the point files that `--shard` runs wrote
//! (`point-INDEX-NAME.json`, bench/grid.rs) joined into the one report a local run of the
//! whole grid makes, its runs in the grid's order.
//!
//! # Checks (each a [`UsageError`], exit 2, naming the files or points)
//! 1. Every directory exists and holds at least one point file; every point file parses
//!    and has this schema version.
//! 2. Every point was made by the same mvcclab version and git commit.
//! 3. Every point belongs to the same grid: the same command, parameters and point list
//!    (the parameters that differ are named). Host and start time may differ: each run
//!    keeps its point's metadata (`runs[].metadata`).
//! 4. No point is there twice, and none is missing (the missing ones are listed).

use crate::metadata::RunMetadata;
use crate::result::{ExperimentReport, ExperimentRun, PointReport, Report, SCHEMA_VERSION};
use crate::UsageError;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A joined report: `run`/`compare`'s or an experiment's.
#[derive(Debug)]
pub enum Merged {
    /// The report of `run` or `compare`.
    Run(Report),
    /// An experiment's report.
    Experiment(ExperimentReport),
}

fn usage(m: String) -> anyhow::Error {
    UsageError(m).into()
}

/// Reads every `point-*.json` in `dirs` (sorted by file name within a directory).
///
/// Errors ([`UsageError`]): a directory cannot be read or holds no point file; a file is
/// not a point report of this schema version.
pub fn read_points(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, PointReport)>> {
    let mut out = Vec::new();
    for dir in dirs {
        let entries =
            std::fs::read_dir(dir).map_err(|e| usage(format!("--merge {}: {e}", dir.display())))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with("point-") && name.ends_with(".json")
            })
            .collect();
        if files.is_empty() {
            return Err(usage(format!(
                "--merge {}: no point-*.json files (written by a run with --shard I/N --report DIR)",
                dir.display()
            )));
        }
        files.sort();
        for f in files {
            let text =
                std::fs::read_to_string(&f).map_err(|e| usage(format!("{}: {e}", f.display())))?;
            let p: PointReport = serde_json::from_str(&text).map_err(|e| {
                usage(format!(
                    "{} is not an mvcclab point report: {e}",
                    f.display()
                ))
            })?;
            if p.schema_version != SCHEMA_VERSION {
                return Err(usage(format!(
                    "{} has schema version {}; this mvcclab reads version {SCHEMA_VERSION}",
                    f.display(),
                    p.schema_version
                )));
            }
            out.push((f, p));
        }
    }
    Ok(out)
}

/// The top-level keys in which two parameter objects differ (`parameters` itself when
/// they are not objects).
fn differing_keys(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| format!("{k} ({} vs {})", show(a.get(k)), show(b.get(k))))
                .collect()
        }
        _ => vec!["parameters".into()],
    }
}

fn show(v: Option<&serde_json::Value>) -> String {
    v.map_or("absent".into(), |v| v.to_string())
}

/// Joins adjacent runs of the same design and bandwidth (an experiment's variants of one
/// design) into one run, their phases and metadata in order.
pub fn join_experiment_runs(runs: Vec<ExperimentRun>) -> Vec<ExperimentRun> {
    let mut out: Vec<ExperimentRun> = Vec::new();
    for r in runs {
        match out.last_mut() {
            Some(last)
                if last.design.name == r.design.name
                    && last.device.bandwidth_mib_s == r.device.bandwidth_mib_s =>
            {
                last.phases.extend(r.phases);
                last.metadata.extend(r.metadata);
            }
            _ => out.push(r),
        }
    }
    out
}

/// Joins `points` (file, report) into one report in the grid's order (the checks in the
/// module doc).
///
/// Errors ([`UsageError`]): points from different mvcclab versions or commits, or from
/// different grids; a point twice; a point missing; a point file without a run.
pub fn merge_points(points: Vec<(PathBuf, PointReport)>) -> Result<Merged> {
    let Some((first_path, first)) = points.first() else {
        return Err(usage("--merge: no point files".into()));
    };
    let (first_path, first) = (first_path.clone(), first.clone());
    let name = |p: &Path| p.display().to_string();
    for (path, p) in &points {
        if p.mvcclab_version != first.mvcclab_version || p.git_commit != first.git_commit {
            return Err(usage(format!(
                "points from different mvcclab versions: {} was made by {} (commit {}), {} by {} (commit {})",
                name(&first_path),
                first.mvcclab_version,
                first.git_commit,
                name(path),
                p.mvcclab_version,
                p.git_commit
            )));
        }
        if p.grid.command != first.grid.command {
            return Err(usage(format!(
                "points from different commands: {} is from `{}`, {} from `{}`",
                name(&first_path),
                first.grid.command,
                name(path),
                p.grid.command
            )));
        }
        if p.grid.parameters != first.grid.parameters || p.grid.points != first.grid.points {
            let mut keys = differing_keys(&first.grid.parameters, &p.grid.parameters);
            if keys.is_empty() {
                keys.push("the list of points".into());
            }
            return Err(usage(format!(
                "points from different parameters: {} and {} differ in {}",
                name(&first_path),
                name(path),
                keys.join(", ")
            )));
        }
    }
    let labels = &first.grid.points;
    let mut by_index: BTreeMap<usize, (PathBuf, PointReport)> = BTreeMap::new();
    for (path, p) in points {
        let i = p.point.index;
        if i >= labels.len() || !labels[i].starts_with(&format!("{} ", p.point.name)) {
            return Err(usage(format!(
                "{}: point {i} ({}) is not a point of its grid",
                name(&path),
                p.point.name
            )));
        }
        if let Some((other, _)) = by_index.get(&i) {
            return Err(usage(format!(
                "duplicate point {i} ({}): in {} and in {}",
                labels[i],
                name(other),
                name(&path)
            )));
        }
        by_index.insert(i, (path, p));
    }
    let missing: Vec<String> = (0..labels.len())
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i} ({})", labels[i]))
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "missing {} of the grid's {} points: {}",
            missing.len(),
            labels.len(),
            missing.join(", ")
        )));
    }
    let merge_meta = Some(RunMetadata::of_this_process());
    let no_run = |path: &Path| usage(format!("{}: the point file holds no run", name(path)));
    if first.experiment.is_some() {
        let mut runs = Vec::new();
        let mut head: Option<ExperimentReport> = None;
        for (path, p) in by_index.into_values() {
            let Some(mut e) = p.experiment else {
                return Err(no_run(&path));
            };
            let meta = e.metadata.take();
            for mut r in std::mem::take(&mut e.runs) {
                r.metadata.extend(meta.clone());
                runs.push(r);
            }
            head.get_or_insert(e);
        }
        let head = head.ok_or_else(|| no_run(&first_path))?;
        let runs = join_experiment_runs(runs);
        Ok(Merged::Experiment(ExperimentReport {
            schema_version: SCHEMA_VERSION,
            mvcclab_version: first.mvcclab_version,
            experiment: head.experiment,
            metadata: merge_meta,
            parameters: head.parameters,
            interrupted: false,
            ratios: crate::result::experiment_ratios(&runs),
            runs,
        }))
    } else {
        let mut runs = Vec::new();
        for (path, p) in by_index.into_values() {
            let Some(r) = p.report else {
                return Err(no_run(&path));
            };
            for mut run in r.runs {
                run.metadata = r.metadata.clone();
                runs.push(run);
            }
        }
        Ok(Merged::Run(Report {
            schema_version: SCHEMA_VERSION,
            mvcclab_version: first.mvcclab_version,
            command: first.grid.command,
            metadata: merge_meta,
            runs,
            loads: Vec::new(),
        }))
    }
}
