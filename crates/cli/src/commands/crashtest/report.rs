//! What a crash test found ([`CrashtestSummary`]): counts over all cuts, the summary
//! line, and the first problems, each naming its cut.

use serde::Serialize;

/// What a crash test found. Counts are over all cuts.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CrashtestSummary {
    /// The design's name.
    pub design: String,
    /// The seed.
    pub seed: u64,
    /// Power cuts made.
    pub cuts: u32,
    /// Commits acknowledged to the client.
    pub commits_acknowledged: u64,
    /// Acknowledged commits not found after recovery.
    pub lost_commits: u64,
    /// Invariant violations (see the module doc).
    pub invariant_violations: u64,
    /// Relation pages that failed their checksum on the device after a cut.
    pub torn_pages_found: u64,
    /// Of those, pages that verified after recovery.
    pub torn_pages_repaired: u64,
    /// Unsynced writes the device dropped at the cuts.
    pub writes_dropped: u64,
    /// Unsynced writes the device tore at the cuts.
    pub writes_torn: u64,
    /// WAL records replayed by recovery.
    pub records_replayed: u64,
    /// Blocks restored from full-page images.
    pub full_page_images_restored: u64,
    /// Pages repaired from the doublewrite area.
    pub doublewrite_pages_restored: u64,
    /// Transactions recovery marked aborted (postgres) or rolled back (innodb).
    pub transactions_undone: u64,
    /// The first problems found (at most 20), each naming the cut.
    pub problems: Vec<String>,
}

impl CrashtestSummary {
    /// The summary line the issue asks for.
    pub fn line(&self) -> String {
        format!(
            "cuts: {}, lost_commits: {}, invariant_violations: {}, torn_pages_repaired: {}",
            self.cuts, self.lost_commits, self.invariant_violations, self.torn_pages_repaired
        )
    }

    pub(super) fn add_recovery(&mut self, r: &mvcclab_engine::recovery::RecoveryReport) {
        self.records_replayed += r.records_replayed;
        self.full_page_images_restored += r.full_page_images_restored;
        self.doublewrite_pages_restored += r.doublewrite_pages_restored;
        self.transactions_undone += r.transactions_aborted + r.transactions_rolled_back;
    }

    pub(super) fn problem(&mut self, cut: u32, what: String) {
        self.invariant_violations += 1;
        if self.problems.len() < 20 {
            self.problems.push(format!("cut {cut}: {what}"));
        }
    }
}
