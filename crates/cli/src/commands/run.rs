//! `mvcclab run` and `mvcclab compare`: a sysbench workload on one or more designs (or
//! real servers), with every 4 KiB block of I/O per transaction and per cause. The flags
//! become run specs, the run layer ([`crate::bench`]) runs them, the export writes the
//! report.

use crate::bench::{
    apply_fillfactor, parse_shard, resolve_spec, run_specs, run_specs_sharded, CommonArgs, RunSpec,
    Shard,
};
use crate::export::write_report;
use crate::UsageError;
use anyhow::Result;
use clap::Args;
use mvcclab_servers::ServerKind;

/// Flags of `mvcclab run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Design: a preset (postgres, innodb) or a design file (FILE.toml).
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Where to run: embedded (mvcclab's engine, with --design), postgresql, mariadb or
    /// myrocks (a real server; --design is then ignored).
    #[arg(long, default_value = "embedded")]
    pub target: String,
    /// Run only grid points I, I+N, … (I from 0) of the designs × bandwidths, each into
    /// its own file in --report DIR; points already there are skipped. Join the shards'
    /// directories with `mvcclab report --merge` (docs/experiments.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Workload, device and output flags.
    #[command(flatten)]
    pub common: CommonArgs,
    /// TPC-H flags (`--workload tpch`).
    #[command(flatten)]
    pub tpch: super::tpch_q18::TpchArgs,
}

/// Flags of `mvcclab compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Designs to compare, comma-separated: presets, design files (FILE.toml), or real
    /// servers (real:postgresql, real:mariadb, real:myrocks).
    #[arg(long, default_value = "postgres,innodb", value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Run only grid points I, I+N, … (I from 0) of the designs × bandwidths, each into
    /// its own file in --report DIR; points already there are skipped. Join the shards'
    /// directories with `mvcclab report --merge` (docs/experiments.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
    /// Workload, device and output flags.
    #[command(flatten)]
    pub common: CommonArgs,
}

fn run_all(command: &str, designs: &[String], c: &CommonArgs, shard: Option<Shard>) -> Result<()> {
    let specs: Vec<RunSpec> = designs
        .iter()
        .map(|d| resolve_spec(d, &c.set).and_then(|s| apply_fillfactor(s, c.fillfactor)))
        .collect::<Result<_>>()?;
    if let Some(shard) = shard {
        return run_specs_sharded(command, designs, &specs, c, shard);
    }
    let report = run_specs(command, &specs, c)?;
    write_report(&report, &c.out)
}

/// `mvcclab run`.
pub fn run(a: RunArgs) -> Result<()> {
    let design = match a.target.as_str() {
        "embedded" => a.design.clone(),
        t => match ServerKind::parse(t) {
            Some(k) => k.design_name(),
            None => {
                return Err(UsageError(format!(
                    "--target '{t}': expected embedded, postgresql, mariadb or myrocks"
                ))
                .into())
            }
        },
    };
    if a.common.workload == "tpch" {
        return super::tpch_q18::run_query_command(&design, &a.common, &a.tpch);
    }
    run_all("run", std::slice::from_ref(&design), &a.common, a.shard)
}

/// `mvcclab compare`.
pub fn compare(a: CompareArgs) -> Result<()> {
    run_all("compare", &a.designs, &a.common, a.shard)
}
