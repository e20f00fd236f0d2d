//! The flags of `mvcclab crashtest` (and the hidden ones of a kill test's child).

use clap::Args;
use std::path::PathBuf;

/// Flags of `mvcclab crashtest`.
#[derive(Args, Clone, Debug)]
pub struct CrashtestArgs {
    /// Design: a preset (postgres, innodb) or a design file.
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Change a switch of the design (SWITCH=VALUE), e.g. torn_page_protection=none.
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// Power cuts to make.
    #[arg(long, default_value_t = 20)]
    pub cuts: u32,
    /// Seed of the cut moments and of the device's choices at each cut.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Accounts (and counters) in the tables.
    #[arg(long, default_value_t = 500)]
    pub rows: u32,
    /// Most acknowledged commits between two cuts (each cut comes after a uniform number
    /// of commits in 1..=this).
    #[arg(long, default_value_t = 300)]
    pub max_commits_per_cut: u64,
    /// Buffer pool frames (small, so that pages are evicted and written between
    /// checkpoints).
    #[arg(long, default_value_t = 48)]
    pub frames: usize,
    /// Probability that an unsynced write reaches the medium at a cut.
    #[arg(long, default_value_t = 0.5)]
    pub survive_probability: f64,
    /// Probability that a surviving multi-sector write is torn.
    #[arg(long, default_value_t = 0.25)]
    pub tear_probability: f64,
    /// Print a line per cut.
    #[arg(long)]
    pub verbose: bool,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Instead of power cuts on the crash-simulation device: run the workload in a child
    /// `mvcclab` process on files in a temporary directory and kill it with SIGKILL this
    /// many times at random moments, recovering and checking after each (`--cuts` is then
    /// ignored).
    #[arg(long, value_name = "N")]
    pub kills: Option<u32>,
    /// Internal: be the child process of `--kills`, on the database in this directory.
    #[arg(long, hide = true, value_name = "DIR")]
    pub child_dir: Option<PathBuf>,
    /// Internal: first transfer id of the child (unique across its lives).
    #[arg(long, hide = true, default_value_t = 1)]
    pub id_base: u64,
}

impl Default for CrashtestArgs {
    fn default() -> Self {
        CrashtestArgs {
            design: "postgres".into(),
            set: Vec::new(),
            cuts: 20,
            seed: 1,
            threads: 2,
            rows: 500,
            max_commits_per_cut: 300,
            frames: 48,
            survive_probability: 0.5,
            tear_probability: 0.25,
            verbose: false,
            json: None,
            kills: None,
            child_dir: None,
            id_base: 1,
        }
    }
}
