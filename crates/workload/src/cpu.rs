//! CPU use of a process or a set of processes: the figures `getrusage(2)` and
//! `/proc/PID/stat` give, as one type for the server that measures itself
//! (`mvcclab-wire`) and the harness that measures real servers from outside
//! (`mvcclab-servers`).

/// CPU use of some processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuUse {
    /// User CPU time, µs.
    pub user_us: u64,
    /// System CPU time, µs.
    pub system_us: u64,
    /// Voluntary context switches.
    pub voluntary_ctxt_switches: u64,
    /// Involuntary context switches.
    pub involuntary_ctxt_switches: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
}

impl CpuUse {
    /// `self + o`, field by field.
    pub fn plus(&self, o: &CpuUse) -> CpuUse {
        CpuUse {
            user_us: self.user_us + o.user_us,
            system_us: self.system_us + o.system_us,
            voluntary_ctxt_switches: self.voluntary_ctxt_switches + o.voluntary_ctxt_switches,
            involuntary_ctxt_switches: self.involuntary_ctxt_switches + o.involuntary_ctxt_switches,
            minor_faults: self.minor_faults + o.minor_faults,
            major_faults: self.major_faults + o.major_faults,
        }
    }

    /// `self − earlier`, field by field (0 where a counter went down: a process left).
    pub fn minus(&self, e: &CpuUse) -> CpuUse {
        CpuUse {
            user_us: self.user_us.saturating_sub(e.user_us),
            system_us: self.system_us.saturating_sub(e.system_us),
            voluntary_ctxt_switches: self
                .voluntary_ctxt_switches
                .saturating_sub(e.voluntary_ctxt_switches),
            involuntary_ctxt_switches: self
                .involuntary_ctxt_switches
                .saturating_sub(e.involuntary_ctxt_switches),
            minor_faults: self.minor_faults.saturating_sub(e.minor_faults),
            major_faults: self.major_faults.saturating_sub(e.major_faults),
        }
    }

    /// Task-clock in µs: user + system.
    pub fn task_clock_us(&self) -> u64 {
        self.user_us + self.system_us
    }
}
