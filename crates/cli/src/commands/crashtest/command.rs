//! The command `mvcclab crashtest`: a power-cut or a kill test (or,
//! hidden, the child of a kill test), the summary line, `--json`, and failure when a
//! commit was lost or an invariant broken.

use super::args::CrashtestArgs;
use super::kill::{kill_test, run_child};
use super::power_cut::crashtest;
use anyhow::{Context, Result};

/// `mvcclab crashtest`: runs, prints the summary line (and `--json`), and fails when a
/// commit was lost or an invariant broken.
///
/// Errors: as [`crashtest`]; writing the JSON; lost commits or violations (exit code 1).
pub fn run(args: CrashtestArgs) -> Result<()> {
    if let Some(dir) = &args.child_dir {
        return run_child(&args, dir);
    }
    let summary = match args.kills {
        Some(n) => kill_test(
            &args,
            &std::env::current_exe().context("finding the mvcclab binary")?,
            n,
        )?,
        None => crashtest(&args)?,
    };
    for p in &summary.problems {
        eprintln!("problem: {p}");
    }
    println!("{}", summary.line());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if summary.lost_commits > 0 || summary.invariant_violations > 0 {
        anyhow::bail!(
            "{} lost commits and {} invariant violations over {} cuts (seed {})",
            summary.lost_commits,
            summary.invariant_violations,
            summary.cuts,
            summary.seed
        );
    }
    Ok(())
}
