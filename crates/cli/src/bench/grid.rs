//! Grid points: the runs a command makes (`compare`'s designs × bandwidths, an
//! experiment's designs × variants × bandwidths) as a list with a stable order and a
//! stable name per point, and `--shard I/N`, which runs points I, I+N, … of that list and
//! writes each point's report into `--report DIR` (docs/experiments.md, "Sweeps across
//! machines"). `mvcclab report --merge` joins the points again (export/merge.rs).
//!
//! # Invariants
//! 1. The order is bandwidth (as given) outermost, then design (as given), then variant:
//!    the order a local run runs them in, so a merged report lists its runs as the local
//!    run does.
//! 2. A point's name is the first 12 hex digits of the SHA-256 of the grid's command and
//!    parameters and the point's design (every switch), variant and bandwidth: the same
//!    flags give the same names on every machine and every mvcclab build.
//! 3. A point file appears whole or not at all: it is written to a temporary file in the
//!    same directory and renamed (rename(2) is atomic within a file system), so a point
//!    whose file exists is finished and a rerun skips it.
//! 4. A point cut short by Ctrl-C writes no file, so a rerun runs it again.

use crate::metadata::RunMetadata;
use crate::progress::status;
use crate::result::{ExperimentReport, GridInfo, PointInfo, PointReport, Report, SCHEMA_VERSION};
use crate::UsageError;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `--shard I/N`: this process runs grid points I, I+N, I+2N, … (I from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// I, from 0 to N − 1.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

/// Parses `--shard I/N` (0 ≤ I < N).
///
/// Errors: a message naming the value when it is not `I/N` with 0 ≤ I < N.
pub fn parse_shard(s: &str) -> Result<Shard, String> {
    let bad = || format!("'{s}' is not a shard I/N with 0 <= I < N (for example 0/4)");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let index: usize = i.trim().parse().map_err(|_| bad())?;
    let count: usize = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// One point as a command lists it: its design's name and every switch (as JSON), its
/// variant (empty where the command has none) and its bandwidth in MiB/s.
#[derive(Clone, Debug)]
pub struct PointSpec {
    /// The design's name (or `real:NAME`).
    pub design: String,
    /// Everything that defines the design (its switches as JSON), hashed into the name.
    pub design_config: serde_json::Value,
    /// The variant (`seed`, `autovacuum_on`, ... for `version_chain`), or empty.
    pub variant: String,
    /// Device bandwidth in MiB/s (None = unthrottled).
    pub bandwidth_mib_s: Option<f64>,
}

/// The points of a command, in their stable order, with the parameters they share.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The command and shared parameters, and the points' labels.
    pub info: GridInfo,
    /// The points.
    pub points: Vec<PointInfo>,
}

/// A point's label in [`GridInfo::points`]: `NAME design[/variant][ @ B MiB/s]`.
pub fn point_label(p: &PointInfo) -> String {
    let mut s = format!("{} {}", p.name, p.design);
    if !p.variant.is_empty() {
        s.push('/');
        s.push_str(&p.variant);
    }
    if let Some(b) = p.bandwidth_mib_s {
        s.push_str(&format!(" @ {b} MiB/s"));
    }
    s
}

impl Grid {
    /// The grid of `command` with shared `parameters` (a JSON object) over `points`, in
    /// the order given (the caller gives invariant 1's order).
    pub fn new(command: &str, parameters: serde_json::Value, points: Vec<PointSpec>) -> Grid {
        let points: Vec<PointInfo> = points
            .into_iter()
            .enumerate()
            .map(|(index, p)| {
                let key = serde_json::json!({
                    "command": command,
                    "parameters": parameters,
                    "design": p.design_config,
                    "variant": p.variant,
                    "bandwidth_mib_s": p.bandwidth_mib_s,
                });
                let digest = Sha256::digest(key.to_string().as_bytes());
                let name: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
                PointInfo {
                    index,
                    name,
                    design: p.design,
                    variant: p.variant,
                    bandwidth_mib_s: p.bandwidth_mib_s,
                }
            })
            .collect();
        Grid {
            info: GridInfo {
                command: command.to_string(),
                parameters,
                points: points.iter().map(point_label).collect(),
            },
            points,
        }
    }

    /// The points `shard` runs: I, I+N, ….
    pub fn shard(&self, shard: Shard) -> impl Iterator<Item = &PointInfo> {
        self.points.iter().skip(shard.index).step_by(shard.count)
    }
}

/// The file of point `p` in a `--report DIR`: `point-INDEX-NAME.json` (index 4 digits).
pub fn point_path(dir: &Path, p: &PointInfo) -> PathBuf {
    dir.join(format!("point-{:04}-{}.json", p.index, p.name))
}

/// What a point's run made: a `run`/`compare` report or an experiment's.
pub enum PointResult {
    /// A report with the point's one run.
    Run(Report),
    /// An experiment's report with the point's one run.
    Experiment(ExperimentReport),
}

/// Writes `text` to `path` whole or not at all: a temporary file in the same directory,
/// synced, then renamed over `path`.
///
/// Errors: the directory cannot be written (the message names the path).
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|_| tmp.as_file().sync_all())
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
}

/// Runs the points of `shard` that have no file in `dir` yet, one after the other, with
/// `run_point`, and writes each one's [`PointReport`] (invariants 3, 4). `run_point`
/// returns None when Ctrl-C cut the point short; the remaining points are then skipped.
///
/// Errors: `dir` cannot be created or written; a point's run failing (the points written
/// before stay).
pub fn run_shard(
    grid: &Grid,
    shard: Shard,
    dir: &Path,
    quiet: bool,
    mut run_point: impl FnMut(&PointInfo) -> Result<Option<PointResult>>,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating --report {}", dir.display()))?;
    let (mut ran, mut skipped, mut mine) = (0, 0, 0);
    for p in grid.shard(shard) {
        mine += 1;
        let path = point_path(dir, p);
        if path.exists() {
            status(
                quiet,
                &format!(
                    "point {} ({}) already done: {}",
                    p.index,
                    point_label(p),
                    path.display()
                ),
            );
            skipped += 1;
            continue;
        }
        status(quiet, &format!("point {}: {}", p.index, point_label(p)));
        let Some(result) = run_point(p)? else {
            status(
                quiet,
                "Ctrl-C: the point is not written; skipping the remaining points",
            );
            break;
        };
        let (report, experiment) = match result {
            PointResult::Run(r) => (Some(r), None),
            PointResult::Experiment(e) => (None, Some(e)),
        };
        let meta = RunMetadata::of_this_process();
        let point = PointReport {
            schema_version: SCHEMA_VERSION,
            mvcclab_version: meta.mvcclab_version,
            git_commit: meta.git_commit,
            grid: grid.info.clone(),
            point: p.clone(),
            report,
            experiment,
        };
        write_atomically(&path, &(serde_json::to_string_pretty(&point)? + "\n"))?;
        ran += 1;
    }
    status(
        quiet,
        &format!(
            "shard {}/{}: {ran} points run, {skipped} already done, of its {mine} (grid of {}) in {}",
            shard.index,
            shard.count,
            grid.points.len(),
            dir.display()
        ),
    );
    Ok(())
}

/// The `--report DIR` a `--shard` run writes its points into.
///
/// Errors: [`UsageError`] when `--report` is missing.
pub fn shard_dir(report: &Option<PathBuf>) -> Result<&Path> {
    report.as_deref().ok_or_else(|| {
        UsageError("--shard writes each grid point into --report DIR: give --report".into()).into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(design: &str, b: Option<f64>) -> PointSpec {
        PointSpec {
            design: design.into(),
            design_config: serde_json::json!({ "name": design }),
            variant: String::new(),
            bandwidth_mib_s: b,
        }
    }

    #[test]
    fn shards_split_the_points_and_names_are_stable_and_distinct() {
        let params = serde_json::json!({ "events": 10 });
        let specs: Vec<PointSpec> = [Some(100.0), Some(200.0)]
            .into_iter()
            .flat_map(|b| [spec("postgres", b), spec("innodb", b)])
            .collect();
        let g = Grid::new("compare", params.clone(), specs.clone());
        let names: Vec<&str> = g.points.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 4);
        let mut distinct = names.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| n.len() == 12));
        let again = Grid::new("compare", params, specs.clone());
        assert_eq!(g.points, again.points);
        let other = Grid::new("compare", serde_json::json!({ "events": 11 }), specs);
        assert_ne!(g.points[0].name, other.points[0].name);
        let s0: Vec<usize> = g
            .shard(parse_shard("0/3").unwrap())
            .map(|p| p.index)
            .collect();
        let s2: Vec<usize> = g
            .shard(parse_shard("2/3").unwrap())
            .map(|p| p.index)
            .collect();
        assert_eq!((s0, s2), (vec![0, 3], vec![2]));
    }

    #[test]
    fn bad_shards_are_refused() {
        for s in ["3/3", "1", "a/2", "0/0", "-1/2", "1/2/3"] {
            assert!(parse_shard(s).is_err(), "{s}");
        }
        assert_eq!(parse_shard("1/4"), Ok(Shard { index: 1, count: 4 }));
    }
}
