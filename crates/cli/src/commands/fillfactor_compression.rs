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
use crate::result::{Report, RunReport};
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_engine::device::Compression;
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

/// One row of the summary: the run's figures.
fn row(r: &RunReport) -> String {
    let s = &r.space;
    let e = &r.engine;
    let hot = e.hot_updates as f64 / (e.hot_updates + e.non_hot_updates).max(1) as f64;
    let per = |k: &str| r.io.per_txn.get(k).copied().unwrap_or(0.0);
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let kind = |k: &str| s.by_file_kind.get(k).copied().unwrap_or_default();
    let (data, wal) = (kind("data"), kind("wal"));
    let or_dash = |x: u64, v: String| if x == 0 { "–".to_string() } else { v };
    format!(
        "| {} | {} | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        r.design.name,
        r.device.compression,
        r.design.fillfactor,
        r.design.index_fillfactor,
        r.results.run.tps,
        s.table_pages,
        s.index_pages,
        mib(s.logical_bytes),
        or_dash(data.logical_bytes, format!("{:.1}", mib(data.logical_bytes))),
        or_dash(data.physical_bytes, format!("{:.1} ({:.2})", mib(data.physical_bytes), data.ratio)),
        or_dash(wal.logical_bytes, format!("{:.1}", mib(wal.logical_bytes))),
        or_dash(wal.physical_bytes, format!("{:.1} ({:.2})", mib(wal.physical_bytes), wal.ratio)),
        100.0 * hot,
        per("read_blocks_4k"),
        per("write_blocks_4k"),
        e.wal_bytes as f64 / r.results.run.transactions.max(1) as f64,
    )
}

/// The summary table (Markdown) of the runs, then their pages per table.
pub fn summary(runs: &[RunReport]) -> String {
    let mut out = String::from(
        "| design | compression | fillfactor | index fillfactor | TPS | table pages | index pages | data MiB | data files MiB | data files physical MiB (ratio) | WAL MiB | WAL physical MiB (ratio) | HOT % | read blocks/txn | write blocks/txn | WAL bytes/txn |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        out += &row(r);
        out.push('\n');
    }
    let mut tables: Vec<&String> = runs
        .iter()
        .flat_map(|r| r.space.pages_by_table.keys())
        .collect();
    tables.sort();
    tables.dedup();
    if !tables.is_empty() {
        out += "\nPages per table at the end (table + index pages):\n\n| design | compression | fillfactor |";
        for t in &tables {
            out += &format!(" {t} |");
        }
        out += "\n|---|---|---|";
        out += &"---|".repeat(tables.len());
        out.push('\n');
        for r in runs {
            out += &format!(
                "| {} | {} | {} |",
                r.design.name, r.device.compression, r.design.fillfactor
            );
            for t in &tables {
                match r.space.pages_by_table.get(*t) {
                    Some((p, i)) => out += &format!(" {p} + {i} |"),
                    None => out += " – |",
                }
            }
            out.push('\n');
        }
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
    let table = summary(&runs);
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
