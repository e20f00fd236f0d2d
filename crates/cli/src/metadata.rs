//! Where, when and how a report was made ([`RunMetadata`], the `metadata` section of every
//! report, as BenchBase keeps a run's `params.json`): the host (CPU model, cores, memory,
//! kernel, read from /proc as `lscpu` and `free` do), mvcclab's version and git commit
//! (embedded at build time by build.rs), the full command line and the start time. The
//! settings of each run are in the run itself (`runs[].design`, `driver`, `device`,
//! `storage_config`); with these, a report says enough to run it again.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The moment [`mark_start`] was first called (or metadata first read).
static START: OnceLock<SystemTime> = OnceLock::new();

/// Records the process's start time for [`RunMetadata::started_at`]; `main` calls it
/// first. Later calls change nothing.
pub fn mark_start() {
    START.get_or_init(SystemTime::now);
}

/// The machine a report was made on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// CPU model (`model name` of /proc/cpuinfo; empty where it has none).
    pub cpu_model: String,
    /// Logical CPUs this process may run on (`std::thread::available_parallelism`).
    pub cores: u32,
    /// Memory in bytes (`MemTotal` of /proc/meminfo; 0 where unreadable).
    pub memory_bytes: u64,
    /// Kernel name and release (/proc/sys/kernel/ostype and osrelease, as `uname -sr`).
    pub kernel: String,
}

impl HostInfo {
    /// This machine, from /proc (fields it cannot read are empty or 0).
    pub fn of_this_machine() -> HostInfo {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu_model = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| {
                let kib = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
                kib.trim().parse::<u64>().ok()
            })
            .map_or(0, |kib| kib * 1024);
        let kernel = format!(
            "{} {}",
            read("/proc/sys/kernel/ostype").trim(),
            read("/proc/sys/kernel/osrelease").trim()
        )
        .trim()
        .to_string();
        HostInfo {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
            memory_bytes,
            kernel,
        }
    }
}

/// The `metadata` section of a report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// The machine.
    pub host: HostInfo,
    /// mvcclab's version (Cargo.toml).
    pub mvcclab_version: String,
    /// The git commit HEAD pointed at when mvcclab was built (uncommitted changes are not
    /// marked; `unknown` when built outside a git checkout).
    pub git_commit: String,
    /// The full command line, program first.
    pub command_line: Vec<String>,
    /// When the command started, UTC, RFC 3339 (`2026-11-26T08:45:35Z`).
    pub started_at: String,
}

impl RunMetadata {
    /// The metadata of this process.
    pub fn of_this_process() -> RunMetadata {
        let start = *START.get_or_init(SystemTime::now);
        RunMetadata {
            host: HostInfo::of_this_machine(),
            mvcclab_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: env!("MVCCLAB_GIT_COMMIT").to_string(),
            command_line: std::env::args().collect(),
            started_at: rfc3339_utc(start),
        }
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (UTC; whole seconds; times before 1970 as 1970).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date: Howard Hinnant's `civil_from_days`
    // (chrono-compatible algorithms, public domain).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_dates_match_known_instants() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // `date -u -d @951782400` (a leap day) and `date -u -d @1795682735`.
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_682_735), "2026-11-26T08:45:35Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn this_machine_has_cores_and_a_kernel() {
        let h = HostInfo::of_this_machine();
        assert!(h.cores >= 1);
        if cfg!(target_os = "linux") {
            assert!(h.kernel.starts_with("Linux"), "{h:?}");
            assert!(h.memory_bytes > 0);
        }
    }
}
