//! `mvcclab experiment fillfactor_compression`: seed 001's experiment (PostgreSQL under
//! sysbench-tpcc, fillfactor 100 against 75, on a normal and on a transparently compressing
//! drive) on the presets: every design × `--fillfactors` × `--compressions`, each a full
//! `--workload tpcc` run (load, checkpoint, warm-up, measured phase) with `--fillfactor`
//! and `--compression` set, then a summary of TPS, space and blocks per transaction.
//!
//! Compression is the emulated device's accounting (`device/compression.rs`: each 4 KiB
//! block compressed with the codec): it does not change what the engine does, so TPS
//! differs between compressions of one fill factor only by run-to-run noise; the space
//! figures are what it changes.
//!
//! Real PostgreSQL (`real:postgresql`, in the defaults) runs the same TPC-C statements
//! (`tpcc_sql.rs`) with its data directory, WAL included, on mvcclab's FUSE device
//! (`--fuse-device` is set for it, file-system mode), so its files are compressed block by
//! block with the same codec and accounting as the preset's: the summary's data and WAL
//! columns (`space.by_file_kind`) put the preset's compression ratio beside PostgreSQL's
//! own files'. Both are measured in the same invocation, one after the other.

use crate::bench::{apply_fillfactor, resolve_spec, run_specs_with, CommonArgs, RunSpec};
use crate::export::write_report;
use crate::progress::{install_ctrl_c, status};
use crate::result::{Report, RunReport, Space};
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::device::{Compression, CompressionTotals};
use mvcclab_workload::driver::RunControl;

/// Flags of `fillfactor_compression`.
#[derive(Args, Debug)]
pub struct FillfactorCompressionArgs {
    /// Designs, comma-separated: presets, design files or real servers (postgres and
    /// real:postgresql, and innodb for contrast: there `--fillfactor` is
    /// innodb_fill_factor, not the same knob).
    #[arg(
        long,
        default_value = "postgres,innodb,real:postgresql",
        value_delimiter = ','
    )]
    pub designs: Vec<String>,
    /// Fill factors to compare (seed 001: 100 and 75).
    #[arg(long, default_value = "100,75", value_delimiter = ',')]
    pub fillfactors: Vec<u8>,
    /// Device compressions to compare: none, lz4, zstd, zstd:LEVEL.
    #[arg(long, default_value = "none,lz4,zstd", value_delimiter = ',',
          value_parser = |s: &str| s.parse::<Compression>())]
    pub compressions: Vec<Compression>,
    /// Workload, driver, device and output flags (`--workload` is always tpcc;
    /// `--fillfactor` and `--compression` are set per run from the lists above).
    #[command(flatten)]
    pub common: CommonArgs,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// `MiB (ratio)` of `t`'s physical bytes, or `–` when nothing was compressed.
fn physical(t: &CompressionTotals) -> String {
    if t.physical_bytes == 0 {
        "–".into()
    } else {
        format!("{:.1} ({:.2})", mib(t.physical_bytes), t.ratio)
    }
}

/// `MiB` of `t`'s logical bytes, or `–` when nothing was compressed.
fn logical(t: &CompressionTotals) -> String {
    if t.logical_bytes == 0 {
        "–".into()
    } else {
        format!("{:.1}", mib(t.logical_bytes))
    }
}

/// The bytes of file kind `k` (`data`, `wal`, `other`) in `s`.
fn kind(s: &Space, k: &str) -> CompressionTotals {
    s.by_file_kind.get(k).copied().unwrap_or_default()
}

/// HOT updates as a percentage of all updates in `r`.
fn hot_pct(r: &RunReport) -> f64 {
    let e = &r.engine;
    100.0 * e.hot_updates as f64 / (e.hot_updates + e.non_hot_updates).max(1) as f64
}

/// The space columns of one row: pages, data MiB (pages × page size), then the data
/// files' and the WAL's logical and physical MiB.
fn space_cells(s: &Space) -> String {
    let (data, wal) = (kind(s, "data"), kind(s, "wal"));
    format!(
        "{} | {} | {:.1} | {} | {} | {} | {}",
        s.table_pages,
        s.index_pages,
        mib(s.logical_bytes),
        logical(&data),
        physical(&data),
        logical(&wal),
        physical(&wal),
    )
}

/// One row of the run table: the run's figures at its end.
fn row(r: &RunReport) -> String {
    let per = |k: &str| r.io.per_txn.get(k).copied().unwrap_or(0.0);
    format!(
        "| {} | {} | {} | {} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        r.design.name,
        r.device.compression,
        r.design.fillfactor,
        r.design.index_fillfactor,
        r.results.run.tps,
        space_cells(&r.space),
        hot_pct(r),
        per("read_blocks_4k"),
        per("write_blocks_4k"),
        r.engine.wal_bytes as f64 / r.results.run.transactions.max(1) as f64,
    )
}

/// `a → b (±x %)`, the change from fill factor `a`'s figure to `b`'s.
fn change(a: f64, b: f64, decimals: usize) -> String {
    let pct = if a == 0.0 {
        "–".to_string()
    } else {
        format!("{:+.1} %", 100.0 * (b - a) / a)
    };
    format!("{a:.decimals$} → {b:.decimals$} ({pct})")
}

/// The fill-factor comparison: for each design and compression, the first of `ffs`
/// against each other, on the figures seed 001 reports (TPS, logical space, physical
/// space at the end of the load) and the block-level causes beside them. A run is
/// matched by its design name, compression and `index_fillfactor` (the experiment's fill
/// factor on every design: PostgreSQL's `fillfactor`, InnoDB's `innodb_fill_factor`).
fn changes(runs: &[RunReport], ffs: &[u8]) -> String {
    let mut out = String::from(
        "| design | compression | fillfactor | TPS | data MiB at load (pages × page size) | data files physical MiB at load | data files physical MiB at the end | HOT % | write blocks/txn | WAL bytes/txn |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let find = |r0: &RunReport, ff: u8| {
        runs.iter().find(|r| {
            r.design.name == r0.design.name
                && r.device.compression == r0.device.compression
                && r.design.index_fillfactor == ff
        })
    };
    let Some((&base, others)) = ffs.split_first() else {
        return out;
    };
    let load = |r: &RunReport| {
        r.space
            .after_load
            .as_deref()
            .cloned()
            .unwrap_or_else(|| r.space.clone())
    };
    for a in runs.iter().filter(|r| r.design.index_fillfactor == base) {
        for b in others.iter().filter_map(|&ff| find(a, ff)) {
            let (la, lb) = (load(a), load(b));
            let per = |r: &RunReport, k: &str| r.io.per_txn.get(k).copied().unwrap_or(0.0);
            let wal = |r: &RunReport| {
                r.engine.wal_bytes as f64 / r.results.run.transactions.max(1) as f64
            };
            out += &format!(
                "| {} | {} | {} → {} | {} | {} | {} | {} | {} | {} | {} |\n",
                a.design.name,
                a.device.compression,
                base,
                b.design.index_fillfactor,
                change(a.results.run.tps, b.results.run.tps, 1),
                change(mib(la.logical_bytes), mib(lb.logical_bytes), 1),
                change(
                    mib(kind(&la, "data").physical_bytes),
                    mib(kind(&lb, "data").physical_bytes),
                    1
                ),
                change(
                    mib(kind(&a.space, "data").physical_bytes),
                    mib(kind(&b.space, "data").physical_bytes),
                    1
                ),
                change(hot_pct(a), hot_pct(b), 1),
                change(per(a, "write_blocks_4k"), per(b, "write_blocks_4k"), 1),
                change(wal(a), wal(b), 0),
            );
        }
    }
    out
}

/// Pages per table (`table + index`) of `runs` at the end of the run, or at the end of
/// the load with `at_load`.
fn pages_by_table(runs: &[RunReport], at_load: bool) -> String {
    let space = |r: &RunReport| -> Option<Space> {
        if at_load {
            r.space.after_load.as_deref().cloned()
        } else {
            Some(r.space.clone())
        }
    };
    let mut tables: Vec<String> = runs
        .iter()
        .filter_map(space)
        .flat_map(|s| s.pages_by_table.into_keys())
        .collect();
    tables.sort();
    tables.dedup();
    if tables.is_empty() {
        return String::new();
    }
    let mut out = String::from("| design | compression | fillfactor |");
    for t in &tables {
        out += &format!(" {t} |");
    }
    out += "\n|---|---|---|";
    out += &"---|".repeat(tables.len());
    out.push('\n');
    for r in runs {
        let Some(s) = space(r) else { continue };
        out += &format!(
            "| {} | {} | {} |",
            r.design.name, r.device.compression, r.design.index_fillfactor
        );
        for t in &tables {
            match s.pages_by_table.get(t) {
                Some((p, i)) => out += &format!(" {p} + {i} |"),
                None => out += " – |",
            }
        }
        out.push('\n');
    }
    out
}

/// Header of the space columns ([`space_cells`]).
const SPACE_HEADER: &str = "table pages | index pages | data MiB | data files MiB | data files physical MiB (ratio) | WAL MiB | WAL physical MiB (ratio)";

/// The summary (Markdown) of `runs` made with fill factors `ffs`: the runs at their end;
/// the space at the end of the load; the fill-factor changes seed 001 reports; pages per
/// table at the load and at the end.
pub fn summary(runs: &[RunReport], ffs: &[u8]) -> String {
    let mut out = format!(
        "At the end of the run:\n\n| design | compression | fillfactor | index fillfactor | TPS | {SPACE_HEADER} | HOT % | read blocks/txn | write blocks/txn | WAL bytes/txn |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        out += &row(r);
        out.push('\n');
    }
    if runs.iter().any(|r| r.space.after_load.is_some()) {
        out += &format!(
            "\nAt the end of the load (after its checkpoint; a real server's VACUUM ANALYZE and CHECKPOINT):\n\n| design | compression | fillfactor | {SPACE_HEADER} |\n|---|---|---|---|---|---|---|---|---|---|\n"
        );
        for r in runs {
            if let Some(s) = &r.space.after_load {
                out += &format!(
                    "| {} | {} | {} | {} |\n",
                    r.design.name,
                    r.device.compression,
                    r.design.index_fillfactor,
                    space_cells(s)
                );
            }
        }
    }
    if ffs.len() > 1 {
        out += "\nFill factor changes (seed 001: TPS +33 %, space +22 % on a normal SSD, +6 % physical on a compressing one):\n\n";
        out += &changes(runs, ffs);
    }
    let at_load = pages_by_table(runs, true);
    if !at_load.is_empty() {
        out += "\nPages per table at the end of the load (table + index pages):\n\n";
        out += &at_load;
    }
    let at_end = pages_by_table(runs, false);
    if !at_end.is_empty() {
        out += "\nPages per table at the end of the run (table + index pages):\n\n";
        out += &at_end;
    }
    out
}

/// `mvcclab experiment fillfactor_compression`.
///
/// Errors: bad flags (usage errors), a design failing.
pub fn run(a: FillfactorCompressionArgs) -> Result<()> {
    let mut c = a.common.clone();
    c.workload = "tpcc".into();
    // A real server runs on mvcclab's device, compressing or not, so that its files are
    // accounted as the preset's are.
    if a.designs.iter().any(|d| d.starts_with("real:")) {
        c.server.fuse_device = true;
    }
    let ctl = RunControl::default();
    install_ctrl_c(&ctl.stop)?;
    let mut runs = Vec::new();
    for comp in &a.compressions {
        for &ff in &a.fillfactors {
            c.device.compression = *comp;
            c.fillfactor = Some(ff);
            let specs: Vec<RunSpec> = a
                .designs
                .iter()
                .map(|d| resolve_spec(d, &c.set).and_then(|s| apply_fillfactor(s, Some(ff))))
                .collect::<Result<_>>()?;
            crate::bench::check_common(&c, &specs)?;
            status(c.out.quiet, &format!("fillfactor {ff}, compression {comp}"));
            runs.extend(run_specs_with(&specs, &c, &ctl)?);
        }
    }
    let table = summary(&runs, &a.fillfactors);
    if let Some(dir) = &c.out.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("fillfactor_compression.md"), &table)
            .with_context(|| format!("writing {}", dir.display()))?;
    }
    eprint!("{table}");
    write_report(
        &Report::new("experiment fillfactor_compression", runs),
        &c.out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../tests/data/run_report.json");

    /// A run of design `name` at fill factor `ff` with `tps`, whose data files held
    /// `load_mib` logical and `load_mib / 4` physical MiB at the end of the load.
    fn run(name: &str, ff: u8, tps: f64, load_mib: u64) -> RunReport {
        let mut r: RunReport = serde_json::from_str(SAMPLE).unwrap();
        r.design.name = name.into();
        r.design.index_fillfactor = ff;
        r.device.compression = Compression::Lz4;
        r.results.run.tps = tps;
        let mut load = r.space.clone();
        load.logical_bytes = load_mib << 20;
        load.by_file_kind.insert(
            "data".into(),
            CompressionTotals {
                logical_bytes: load_mib << 20,
                physical_bytes: load_mib << 18,
                ratio: 4.0,
            }
            .with_ratio(),
        );
        load.pages_by_table.insert("stock1".into(), (load_mib, 1));
        r.space.after_load = Some(Box::new(load));
        r
    }

    #[test]
    fn change_is_relative_to_the_first_fill_factor() {
        assert_eq!(change(100.0, 133.0, 1), "100.0 → 133.0 (+33.0 %)");
        assert_eq!(change(0.0, 5.0, 0), "0 → 5 (–)");
    }

    #[test]
    fn the_summary_compares_each_design_with_itself_at_the_load() {
        let runs = [
            run("postgres", 100, 100.0, 100),
            run("real:postgresql", 100, 50.0, 200),
            run("postgres", 75, 120.0, 122),
            run("real:postgresql", 75, 60.0, 212),
        ];
        let s = summary(&runs, &[100, 75]);
        assert!(s.contains("At the end of the load"), "{s}");
        // TPS, logical and physical space at load, each against the same design's.
        assert!(
            s.contains(
                "| postgres | lz4 | 100 → 75 | 100.0 → 120.0 (+20.0 %) | 100.0 → 122.0 (+22.0 %) | 25.0 → 30.5 (+22.0 %) |"
            ),
            "{s}"
        );
        assert!(
            s.contains("| real:postgresql | lz4 | 100 → 75 | 50.0 → 60.0 (+20.0 %) | 200.0 → 212.0 (+6.0 %) |"),
            "{s}"
        );
        assert!(s.contains("Pages per table at the end of the load"), "{s}");
        assert!(s.contains("| postgres | lz4 | 75 | 122 + 1 |"), "{s}");
        // One fill factor: nothing to compare.
        assert!(!summary(&runs[..1], &[100]).contains("Fill factor changes"));
    }
}
