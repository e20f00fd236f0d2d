//! The `mvcclab` command line.

mod designs;
mod storage_bench;
mod units;

use clap::{Parser, Subcommand};

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
    /// Every design switch with its meaning and values, and each preset's value.
    Designs,
    /// Random page reads and WAL-logged page updates on the storage foundation alone,
    /// with I/O per operation and per cause.
    StorageBench(storage_bench::StorageBenchArgs),
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::StorageBench(a) => storage_bench::run(a),
        Command::Designs => designs::run(),
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("Error: {e:#}");
        std::process::exit(1);
    }
}
