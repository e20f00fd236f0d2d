//! The subject of a run as the user names it ([`RunSpec`]: a preset, a design file, or
//! `real:postgresql` / `real:mariadb`), and the checks of the shared flags made before the
//! first (long) run.

use super::args::{sysbench_options, CommonArgs, DeviceArgs, ServerArgs};
use crate::design_arg::resolve_design;
use crate::UsageError;
use anyhow::Result;
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::Compression;
use mvcclab_servers::ServerKind;
use mvcclab_workload::sysbench::WorkloadKind;

/// One entry of `--designs`: an mvcclab design, or a real server.
#[derive(Clone, Debug)]
pub enum RunSpec {
    /// A preset or design file run on the embedded engine.
    Embedded(DesignConfig),
    /// `real:postgresql`, `real:mariadb` or `real:myrocks`.
    Real(ServerKind),
}

impl RunSpec {
    /// The name a report shows for it.
    pub fn name(&self) -> String {
        match self {
            RunSpec::Embedded(d) => d.name.clone(),
            RunSpec::Real(k) => k.design_name(),
        }
    }
}

/// Parses a `--designs` entry: `real:postgresql`, `real:mariadb`, a preset or a design file
/// (with `--set` applied to the latter two).
///
/// Errors: [`UsageError`] naming the entry.
pub fn resolve_spec(arg: &str, set: &[String]) -> Result<RunSpec> {
    if let Some(name) = arg.strip_prefix("real:") {
        return ServerKind::parse(name).map(RunSpec::Real).ok_or_else(|| {
            UsageError(format!(
                "'{arg}': unknown real server '{name}' (real:postgresql, real:mariadb or real:myrocks)"
            ))
            .into()
        });
    }
    resolve_design(arg, set).map(RunSpec::Embedded)
}

/// `--fillfactor n` applied to a run's subject: a heap design gets `fillfactor` and
/// `index_fillfactor` = n (PostgreSQL's `ALTER TABLE ... SET (fillfactor = n)` and the
/// same on every index); a clustered design `index_fillfactor` = n (MariaDB's
/// `innodb_fill_factor`), its `fillfactor` switch (InnoDB's fixed 15/16 fill of ascending
/// inserts) left alone.
///
/// A real server gets it at its load instead (`ServerOptions::fillfactor`: PostgreSQL's
/// storage parameter on every table and index, MariaDB's `innodb_fill_factor`); its spec
/// is returned unchanged.
///
/// Errors: [`UsageError`] for n outside 10..=100.
pub fn apply_fillfactor(spec: RunSpec, n: Option<u8>) -> Result<RunSpec> {
    let Some(n) = n else {
        return Ok(spec);
    };
    if !(10..=100).contains(&n) {
        return Err(UsageError(format!("--fillfactor must be 10..=100, got {n}")).into());
    }
    match spec {
        RunSpec::Embedded(mut d) => {
            if d.table_layout == mvcclab_engine::design::TableLayout::Heap {
                d.fillfactor = n;
            }
            d.index_fillfactor = n;
            Ok(RunSpec::Embedded(d))
        }
        RunSpec::Real(k) => Ok(RunSpec::Real(k)),
    }
}

/// Checks the flags shared by every run before the first (long) one.
///
/// Errors: [`UsageError`] naming the flag.
pub fn check_common(c: &CommonArgs, specs: &[RunSpec]) -> Result<()> {
    let kind: WorkloadKind = c.workload.parse().map_err(UsageError)?;
    let bad = |m: &str| -> Result<()> { Err(UsageError(m.to_string()).into()) };
    if kind == WorkloadKind::Tpcc {
        // Before any design opens or server starts, not at its load (`--scale 0`).
        sysbench_options(c)
            .tpcc_size()
            .validate()
            .map_err(UsageError)?;
    }
    if c.rand_spec_iter == 0 {
        bad("--rand-spec-iter must be at least 1")?;
    }
    if c.rand_spec_pct > 100 || c.rand_spec_res > 100 {
        bad("--rand-spec-pct and --rand-spec-res are percentages (0..=100)")?;
    }
    if !(c.rand_pareto_h > 0.0 && c.rand_pareto_h < 1.0) {
        bad("--rand-pareto-h must lie strictly between 0 and 1")?;
    }
    let mut names: Vec<String> = specs.iter().map(RunSpec::name).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return bad(&format!(
            "two designs are named '{}'; give design files distinct `name`s",
            w[0]
        ));
    }
    let real = specs.iter().any(|s| matches!(s, RunSpec::Real(_)));
    if real && fuse_device(c) {
        if c.server.exact_device_io {
            bad(
                "--exact-device-io counts a loop device on the machine's storage, --bandwidth, \
                 --latency-us, --compression and --fuse-device put the server on mvcclab's FUSE \
                 device: choose one",
            )?;
        }
        if !c.server.urls.is_empty() {
            bad(
                "a server given by --url runs on its own storage: --bandwidth, --latency-us, \
                 --compression and --fuse-device apply to servers mvcclab starts (leave --url off)",
            )?;
        }
    }
    if real && c.device.rotational && c.server.fuse_mode != "block-device" {
        // Off the FUSE device a managed server sees the disk under its folder (and a loop
        // device of --exact-device-io takes that disk's flag): --rotational then matches
        // the presets to it, which is right only when that disk is rotational (MariaDB
        // flushes neighbours only there, buf0flu.cc `buf_flush_try_neighbors`).
        if fuse_device(c) || !c.server.urls.is_empty() {
            bad(
                "--rotational marks mvcclab's device rotational; a server on the FUSE device \
                 sees it only in --fuse-mode block-device (a loop device marked rotational), \
                 and a --url server runs on its own storage",
            )?;
        }
        let dir = c
            .server
            .server_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        match mvcclab_servers::managed::storage_rotational(&dir) {
            Some(true) => {}
            flag => bad(&format!(
                "--rotational: the real servers' folder {} is on {}, which they would not see \
                 as rotational (--server-dir on a rotational disk, or --fuse-device \
                 --fuse-mode block-device)",
                dir.display(),
                if flag == Some(false) {
                    "a non-rotational disk"
                } else {
                    "storage without a rotational flag"
                }
            ))?,
        }
    }
    for u in &c.server.urls {
        if ServerKind::of_url(u).is_none() {
            bad(&format!(
                "--url '{u}': expected postgresql://..., postgres://..., mysql://... or mariadb://..."
            ))?;
        }
    }
    Ok(())
}

/// True when a real server runs on mvcclab's FUSE device: any of `--bandwidth`,
/// `--latency-us`, `--compression` (other than none), `--fuse-device` or
/// `--fuse-mode block-device`.
pub fn fuse_device(c: &CommonArgs) -> bool {
    fuse_device_of(&c.server, &c.device)
}

/// [`fuse_device`] from the server and device flags alone.
pub fn fuse_device_of(s: &ServerArgs, d: &DeviceArgs) -> bool {
    s.fuse_device
        || s.fuse_mode == "block-device"
        || !d.bandwidth.is_empty()
        || d.latency_us.is_some()
        || d.compression != Compression::None
}
