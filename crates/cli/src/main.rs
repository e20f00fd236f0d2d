//! The `mvcclab` command line.

use clap::{Parser, Subcommand};
use mvcclab::commands::{
    crashtest, designs, device, experiments, fidelity, report, run, serve, storage_bench, workloads,
};
use mvcclab::UsageError;

/// mvcclab: a laboratory storage engine for multi-version concurrency control, with every
/// 4 KiB block of I/O counted and attributed to its cause.
#[derive(Parser)]
#[command(name = "mvcclab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a sysbench workload on one design and report I/O per transaction and per cause.
    Run(run::RunArgs),
    /// Run a workload on several designs (default postgres and innodb) side by side.
    Compare(run::CompareArgs),
    /// Each preset against the real engine it models (postgres vs PostgreSQL 15, innodb vs
    /// MariaDB 10.11): per-transaction ratios preset / real on five sysbench workloads.
    Fidelity(fidelity::FidelityArgs),
    /// Every design switch with its meaning and values, and each preset's value.
    Designs,
    /// A named experiment: update_hot_set or version_chain.
    Experiment(experiments::ExperimentArgs),
    /// Write a report directory (CSV, Markdown, SVG plots) from a saved report.json.
    Report(report::ReportArgs),
    /// The sysbench workloads with the statements per event and the options each reads.
    Workloads,
    /// Power cuts at random moments under a bank-transfer and counter workload, recovery
    /// after each, and checks that no acknowledged commit is lost and no invariant broken.
    Crashtest(crashtest::CrashtestArgs),
    /// A design behind PostgreSQL's wire protocol on 127.0.0.1, for psql, sysbench and
    /// pgbench.
    Serve(serve::ServeArgs),
    /// Random page reads and WAL-logged page updates on the storage foundation alone,
    /// with I/O per operation and per cause.
    StorageBench(storage_bench::StorageBenchArgs),
    /// The virtual NVMe device as a FUSE mount for hand use (`device mount DIR`).
    Device(device::DeviceArgs),
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::StorageBench(a) => storage_bench::run(a),
        Command::Designs => designs::run(),
        Command::Workloads => workloads::run(),
        Command::Experiment(a) => experiments::run(a),
        Command::Report(a) => report::run(a),
        Command::Run(a) => run::run(a),
        Command::Compare(a) => run::compare(a),
        Command::Fidelity(a) => fidelity::run(a),
        Command::Crashtest(a) => crashtest::run(a),
        Command::Device(a) => device::run(a),
        Command::Serve(a) => serve::run(a),
    }
}

fn main() {
    mvcclab::metadata::mark_start();
    if let Err(e) = run() {
        eprintln!("Error: {e:#}");
        let usage = e.downcast_ref::<UsageError>().is_some();
        std::process::exit(if usage { 2 } else { 1 });
    }
}
