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
//!
//! `--repeats N` runs every point N times, the i-th with `--rand-seed` + i (repeats
//! outermost, so that the two fill factors of one seed run next to each other), and adds
//! the run-to-run spread of TPS and the fill factor's change per seed to the summary.
//! `--bandwidth` and `--scale` (common flags) give the seed's other condition: several
//! warehouses on a device whose writes cost time (the preset's device throttled from the
//! load on, a real server's FUSE device from the warm-up on, bench/server.rs).

use crate::bench::{apply_fillfactor, resolve_spec, run_specs_with, CommonArgs, RunSpec};
use crate::export::{label, write_report};
use crate::progress::{install_ctrl_c, status};
use crate::result::{Report, RunReport, Space};
use crate::UsageError;
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
    /// Runs of every point (design × fill factor × compression × bandwidth), the i-th
    /// (from 0) with `--rand-seed` + i, for the run-to-run spread of TPS (1..=100).
    #[arg(long, default_value_t = 1)]
    pub repeats: u32,
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

/// B-tree page splits per 1,000 committed transactions of `r`: its WAL's `Btree/SPLIT*`
/// records (the preset's `Btree/SPLIT`; pg_waldump's `Btree/SPLIT_L` and `SPLIT_R`,
/// nbtxlog.h), 0 where the WAL was not read by record type.
fn splits_per_1k_txn(r: &RunReport) -> f64 {
    let splits: u64 = r
        .engine
        .wal_by_record
        .iter()
        .filter(|(k, _)| k.starts_with("Btree/SPLIT"))
        .map(|(_, v)| v.records)
        .sum();
    1000.0 * splits as f64 / r.results.run.transactions.max(1) as f64
}

/// The point of run `r` as the summary's first column: its design, with ` @ B MiB/s` when
/// the device was throttled and ` seed S` when `seeds` (the runs hold several seeds).
fn point(r: &RunReport, seeds: bool) -> String {
    let mut s = label(&r.design.name, r.device.bandwidth_mib_s);
    if seeds {
        s += &format!(" seed {}", r.driver.rand_seed);
    }
    s
}

/// Whether `runs` were made with more than one `--rand-seed` (`--repeats`).
fn several_seeds(runs: &[RunReport]) -> bool {
    runs.iter()
        .any(|r| r.driver.rand_seed != runs[0].driver.rand_seed)
}

/// Whether `a` and `b` ran the same design on the same device: design, compression and
/// bandwidth.
fn same_design_and_device(a: &RunReport, b: &RunReport) -> bool {
    a.design.name == b.design.name
        && a.device.compression == b.device.compression
        && a.device.bandwidth_mib_s == b.device.bandwidth_mib_s
}

/// Whether `a` and `b` are the same point but for the fill factor: design, compression,
/// bandwidth and seed.
fn same_point(a: &RunReport, b: &RunReport) -> bool {
    same_design_and_device(a, b) && a.driver.rand_seed == b.driver.rand_seed
}

/// One row of the run table: the run's figures at its end.
fn row(r: &RunReport, seeds: bool) -> String {
    let per = |k: &str| r.io.per_txn.get(k).copied().unwrap_or(0.0);
    format!(
        "| {} | {} | {} | {} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        point(r, seeds),
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
/// factor on every design: PostgreSQL's `fillfactor`, InnoDB's `innodb_fill_factor`),
/// bandwidth and seed.
fn changes(runs: &[RunReport], ffs: &[u8]) -> String {
    let seeds = several_seeds(runs);
    let mut out = String::from(
        "| design | compression | fillfactor | TPS | data MiB at load (pages × page size) | data files physical MiB at load | data files physical MiB at the end | HOT % | write blocks/txn | WAL bytes/txn | FPIs/txn | B-tree splits/1,000 txn |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let find = |r0: &RunReport, ff: u8| {
        runs.iter()
            .find(|r| same_point(r, r0) && r.design.index_fillfactor == ff)
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
            let fpi =
                |r: &RunReport| r.engine.wal_fpi as f64 / r.results.run.transactions.max(1) as f64;
            out += &format!(
                "| {} | {} | {} → {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                point(a, seeds),
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
                change(fpi(a), fpi(b), 2),
                change(splits_per_1k_txn(a), splits_per_1k_txn(b), 0),
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
    let seeds = several_seeds(runs);
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
            point(r, seeds),
            r.device.compression,
            r.design.index_fillfactor
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

/// Mean, smallest, largest and sample standard deviation of `xs` (not empty).
fn stats(xs: &[f64]) -> (f64, f64, f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, min, max, var.sqrt())
}

/// The run-to-run spread (`--repeats`): for each point but the seed, the runs' TPS (mean,
/// range, sample standard deviation and its share of the mean) and mean blocks per
/// transaction; then, per seed, TPS at each other fill factor of `ffs` against the first's
/// of the same seed. Empty when no point ran more than once.
fn spread(runs: &[RunReport], ffs: &[u8]) -> String {
    // One group per point but the seed, in the order the runs came.
    let mut groups: Vec<Vec<&RunReport>> = Vec::new();
    for r in runs {
        let same = |g: &Vec<&RunReport>| {
            same_design_and_device(g[0], r)
                && g[0].design.index_fillfactor == r.design.index_fillfactor
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    if groups.iter().all(|g| g.len() < 2) {
        return String::new();
    }
    let per = |r: &RunReport, k: &str| r.io.per_txn.get(k).copied().unwrap_or(0.0);
    let mut out = String::from(
        "\nRun-to-run spread (each point run once per seed):\n\n| design | compression | fillfactor | runs | TPS mean | TPS min – max | TPS sd (of mean) | read blocks/txn | write blocks/txn | HOT % |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for g in &groups {
        let (mean, min, max, sd) = stats(&g.iter().map(|r| r.results.run.tps).collect::<Vec<_>>());
        let avg =
            |f: &dyn Fn(&RunReport) -> f64| stats(&g.iter().map(|r| f(r)).collect::<Vec<_>>()).0;
        out += &format!(
            "| {} | {} | {} | {} | {mean:.1} | {min:.1} – {max:.1} | {sd:.1} ({:.1} %) | {:.1} | {:.1} | {:.1} |\n",
            label(&g[0].design.name, g[0].device.bandwidth_mib_s),
            g[0].device.compression,
            g[0].design.index_fillfactor,
            g.len(),
            100.0 * sd / mean.max(f64::MIN_POSITIVE),
            avg(&|r| per(r, "read_blocks_4k")),
            avg(&|r| per(r, "write_blocks_4k")),
            avg(&hot_pct),
        );
    }
    let Some((&base, others)) = ffs.split_first() else {
        return out;
    };
    out += "\nTPS change from the first fill factor, seed by seed (same design, compression, bandwidth and seed):\n\n| design | compression | fillfactor | change per seed | mean change | min – max |\n|---|---|---|---|---|---|\n";
    for g in groups
        .iter()
        .filter(|g| g[0].design.index_fillfactor == base)
    {
        for &ff in others {
            let pairs: Vec<(u64, f64)> = g
                .iter()
                .filter_map(|a| {
                    let b = runs
                        .iter()
                        .find(|b| same_point(a, b) && b.design.index_fillfactor == ff)?;
                    let ta = a.results.run.tps;
                    (ta > 0.0).then(|| (a.driver.rand_seed, 100.0 * (b.results.run.tps - ta) / ta))
                })
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let (mean, min, max, _) = stats(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
            let each: Vec<String> = pairs
                .iter()
                .map(|(seed, c)| format!("{seed}: {c:+.1} %"))
                .collect();
            out += &format!(
                "| {} | {} | {base} → {ff} | {} | {mean:+.1} % | {min:+.1} % – {max:+.1} % |\n",
                label(&g[0].design.name, g[0].device.bandwidth_mib_s),
                g[0].device.compression,
                each.join(", "),
            );
        }
    }
    out
}

/// `--repeats`: at least one run per point, at most 100.
///
/// Errors: [`UsageError`] naming the flag when `n` is 0 or above 100.
fn check_repeats(n: u32) -> Result<()> {
    if !(1..=100).contains(&n) {
        return Err(UsageError(format!("--repeats {n}: runs per point must be 1 to 100")).into());
    }
    Ok(())
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
    let seeds = several_seeds(runs);
    for r in runs {
        out += &row(r, seeds);
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
                    point(r, seeds),
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
    out += &spread(runs, ffs);
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
    check_repeats(a.repeats)?;
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
    let first_seed = c.rand_seed;
    for rep in 0..u64::from(a.repeats) {
        c.rand_seed = first_seed.wrapping_add(rep);
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
                let seed = if a.repeats > 1 {
                    format!(", seed {}", c.rand_seed)
                } else {
                    String::new()
                };
                status(
                    c.out.quiet,
                    &format!("fillfactor {ff}, compression {comp}{seed}"),
                );
                runs.extend(run_specs_with(&specs, &c, &ctl)?);
            }
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
        // One run per point: no spread, no seed in the first column.
        assert!(!s.contains("Run-to-run spread"), "{s}");
        assert!(!s.contains("postgres seed"), "{s}");
    }

    /// `run` with `--rand-seed seed` at `bandwidth`.
    fn seeded(ff: u8, tps: f64, seed: u64, bandwidth: Option<f64>) -> RunReport {
        let mut r = run("postgres", ff, tps, 100);
        r.driver.rand_seed = seed;
        r.device.bandwidth_mib_s = bandwidth;
        r
    }

    #[test]
    fn repeats_pair_each_seed_and_give_the_spread() {
        let b = Some(40.0);
        let runs = [
            seeded(100, 100.0, 1, b),
            seeded(75, 110.0, 1, b),
            seeded(100, 200.0, 2, b),
            seeded(75, 180.0, 2, b),
            seeded(100, 150.0, 3, b),
            seeded(75, 165.0, 3, b),
        ];
        let s = summary(&runs, &[100, 75]);
        // Each seed against its own seed, not the first run of the design.
        assert!(
            s.contains("| postgres @ 40 MiB/s seed 2 | lz4 | 100 → 75 | 200.0 → 180.0 (-10.0 %) |"),
            "{s}"
        );
        // TPS 100, 200, 150: mean 150, sd 50.
        assert!(
            s.contains(
                "| postgres @ 40 MiB/s | lz4 | 100 | 3 | 150.0 | 100.0 – 200.0 | 50.0 (33.3 %) |"
            ),
            "{s}"
        );
        assert!(
            s.contains("| postgres @ 40 MiB/s | lz4 | 100 → 75 | 1: +10.0 %, 2: -10.0 %, 3: +10.0 % | +3.3 % | -10.0 % – +10.0 % |"),
            "{s}"
        );
        // Another bandwidth is another point, never paired with these.
        let mut other = runs.to_vec();
        other.push(seeded(75, 1000.0, 1, Some(80.0)));
        assert!(summary(&other, &[100, 75])
            .contains("| postgres @ 40 MiB/s seed 1 | lz4 | 100 → 75 | 100.0 → 110.0 (+10.0 %) |"));
    }

    #[test]
    fn splits_count_every_btree_split_record_per_1000_transactions() {
        let mut r = run("real:postgresql", 100, 1.0, 1);
        r.results.run.transactions = 200;
        r.engine.wal_by_record.clear();
        for (k, n) in [
            ("Btree/SPLIT_L", 3),
            ("Btree/SPLIT_R", 7),
            ("Btree/INSERT_LEAF", 50),
        ] {
            r.engine.wal_by_record.insert(
                k.into(),
                mvcclab_engine::wal::RecordTypeCounts {
                    records: n,
                    ..Default::default()
                },
            );
        }
        assert_eq!(splits_per_1k_txn(&r), 50.0);
    }

    #[test]
    fn repeats_out_of_range_are_usage_errors() {
        for bad in [0, 101] {
            let e = check_repeats(bad).unwrap_err();
            assert!(e.downcast_ref::<UsageError>().is_some(), "{e}");
            assert!(e.to_string().contains("--repeats"), "{e}");
        }
        for good in [1, 3, 100] {
            check_repeats(good).unwrap();
        }
    }
}
