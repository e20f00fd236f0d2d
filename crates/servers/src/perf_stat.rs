//! A server's CPU use as the seed measured it: `perf stat` (perf-stat(1)) with software
//! events, counted per control group so that every process and thread the server has —
//! PostgreSQL's backends forked during the run and already exited included — is in the
//! figures, and nothing else is.
//!
//! - [`Cgroup`]: a cgroup v2 group (`/sys/fs/cgroup/unified/NAME` here, where v1 holds the
//!   controllers; a v2 group needs no controller to be counted by perf) that a server's
//!   processes are moved into; children forked later are born in it (cgroups(7)).
//! - [`PerfStat`]: `perf stat -a -x, -G GROUP,… -e EVENT,…` over the measured window,
//!   ended by SIGINT, its CSV output parsed into [`PerfCounts`] per group. Events:
//!   `task-clock` (ms of CPU, all CPUs), `context-switches`, `cpu-migrations`,
//!   `page-faults`, `minor-faults`, `major-faults` (perf's software events, the seed's
//!   Table 3), and the tracepoint `filemap:mm_filemap_get_pages` (mm/filemap.c
//!   `filemap_get_pages`, reached by every buffered `read`/`pread` of a file through the
//!   OS page cache, once per batch of pages; O_DIRECT reads and sockets never reach it):
//!   the OS page-cache reads. Where the kernel lacks that tracepoint the counts are taken
//!   without it and `page_cache_reads` is `None`.
//!
//! Only software events exist on this machine (no hardware PMU, so no `dTLB-load-misses`):
//! the seed's TLB explanation cannot be measured here.
//!
//! # Invariants
//! 1. A group is removed (rmdir) on drop; the processes in it must have exited or been
//!    moved out by then (the server is stopped first), else the directory stays and is
//!    reported by nothing: [`Cgroup::drop`] is best effort.
//! 2. `perf` is a direct child of mvcclab with its parent-death signal set: it ends with
//!    mvcclab at the latest.

use crate::ServerError;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// Where cgroup v2 is mounted on this machine (v1 holds the controllers at
/// `/sys/fs/cgroup/*`); a machine with only v2 has it at `/sys/fs/cgroup`.
fn cgroup2_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// A cgroup v2 group of a server's processes; removed on drop.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    name: String,
}

impl Cgroup {
    /// Creates group `name` under the cgroup2 mount.
    ///
    /// Errors: [`ServerError::Io`] when no cgroup2 file system is mounted or the group
    /// cannot be made (root only).
    pub fn create(name: &str) -> Result<Cgroup, ServerError> {
        let root = cgroup2_root().ok_or_else(|| {
            ServerError::io(
                "finding the cgroup2 mount in /proc/self/mounts",
                std::io::Error::other("no cgroup2 file system is mounted"),
            )
        })?;
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| ServerError::io(&format!("creating {} (root)", dir.display()), e))?;
        Ok(Cgroup {
            dir,
            name: name.to_string(),
        })
    }

    /// Its name relative to the cgroup2 mount (what `perf stat -G` takes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves process `pid` (all its threads) and its live descendants into the group;
    /// processes they fork later are born in it.
    ///
    /// Errors: [`ServerError::Io`] when `cgroup.procs` cannot be written.
    pub fn adopt_tree(&self, pid: u32) -> Result<(), ServerError> {
        let mut pids = vec![pid];
        pids.extend(descendants(pid));
        let procs = self.dir.join("cgroup.procs");
        for p in pids {
            if let Err(e) = std::fs::write(&procs, p.to_string()) {
                // A descendant that exited in between is no error.
                if Path::new(&format!("/proc/{p}")).exists() {
                    return Err(ServerError::io(
                        &format!("moving pid {p} into {}", procs.display()),
                        e,
                    ));
                }
            }
        }
        Ok(())
    }

    /// `cpu.stat`'s `usage_usec` (CPU time of every task that ran in the group, exited
    /// ones included), µs; 0 when unreadable.
    pub fn cpu_usage_us(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("cpu.stat"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())
            })
            .unwrap_or(0)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The live descendants of `pid` (from each process's parent in `/proc/N/stat`).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(s) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let ppid = s
                .rfind(')')
                .and_then(|i| s[i + 2..].split_whitespace().nth(1))
                .and_then(|f| f.parse::<u32>().ok());
            if let Some(pp) = ppid {
                parent.insert(p, pp);
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (&c, &pp) in &parent {
            if pp == p && c != pid {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

/// What `perf stat` counted for one group over the window.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PerfCounts {
    /// `task-clock`: CPU time of the group's tasks, ms.
    pub task_clock_ms: f64,
    /// `context-switches`.
    pub context_switches: u64,
    /// `cpu-migrations`.
    pub cpu_migrations: u64,
    /// `page-faults` (minor + major).
    pub page_faults: u64,
    /// `minor-faults`.
    pub minor_faults: u64,
    /// `major-faults`.
    pub major_faults: u64,
    /// `filemap:mm_filemap_get_pages` events: buffered file reads served through the OS
    /// page cache (one per batch of pages); `None` where the kernel has no such
    /// tracepoint.
    pub page_cache_reads: Option<u64>,
}

/// The software events counted, in the seed's Table 3 order.
const EVENTS: [&str; 6] = [
    "task-clock",
    "context-switches",
    "cpu-migrations",
    "page-faults",
    "minor-faults",
    "major-faults",
];

/// The tracepoint of a read through the OS page cache.
const PAGE_CACHE_READ: &str = "filemap:mm_filemap_get_pages";

/// A running `perf stat` over some groups.
pub struct PerfStat {
    child: Option<Child>,
    out: PathBuf,
    groups: Vec<String>,
    with_page_cache: bool,
    started: Instant,
}

fn perf_command(groups: &[String], events: &[&str], out: &Path) -> Command {
    let mut ev = Vec::new();
    let mut gs = Vec::new();
    for g in groups {
        for e in events {
            ev.push(e.to_string());
            gs.push(g.clone());
        }
    }
    let mut c = Command::new("perf");
    c.args(["stat", "-a", "-x,", "-o"])
        .arg(out)
        .arg("-e")
        .arg(ev.join(","))
        .arg("-G")
        .arg(gs.join(","))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it only sets this child's parent-death signal.
    #[allow(unsafe_code)]
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT as libc::c_ulong);
            Ok(())
        });
    }
    c
}

impl PerfStat {
    /// Starts counting the groups named `groups` (cgroup2 paths relative to its mount),
    /// writing to `out`. Tries the page-cache tracepoint first and falls back to the
    /// software events alone when perf refuses it.
    ///
    /// Errors: [`ServerError::NotInstalled`] without `perf` (Debian's `linux-perf`);
    /// [`ServerError::Io`] when perf cannot start or exits at once (its message).
    pub fn start(groups: &[&Cgroup], out: &Path) -> Result<PerfStat, ServerError> {
        let names: Vec<String> = groups.iter().map(|g| g.name().to_string()).collect();
        let mut with_tp: Vec<&str> = EVENTS.to_vec();
        with_tp.push(PAGE_CACHE_READ);
        let mut last_err = String::new();
        for (events, with_page_cache) in [(&with_tp, true), (&EVENTS.to_vec(), false)] {
            let mut child = match perf_command(&names, events, out).spawn() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ServerError::NotInstalled {
                        program: "perf".into(),
                        package: "linux-perf".into(),
                    })
                }
                Err(e) => return Err(ServerError::io("starting perf stat", e)),
            };
            // perf refuses a bad event or group at once; give it time to open them.
            let opened = Instant::now();
            let mut exited = None;
            while opened.elapsed().as_millis() < 700 {
                if let Ok(Some(st)) = child.try_wait() {
                    exited = Some(st);
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            match exited {
                None => {
                    return Ok(PerfStat {
                        child: Some(child),
                        out: out.to_path_buf(),
                        groups: names,
                        with_page_cache,
                        started: Instant::now(),
                    })
                }
                Some(st) => {
                    let mut msg = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        use std::io::Read;
                        let _ = e.read_to_string(&mut msg);
                    }
                    last_err = format!("perf stat exited with {st}: {}", msg.trim());
                }
            }
        }
        Err(ServerError::io(
            "counting with perf stat",
            std::io::Error::other(last_err),
        ))
    }

    /// Stops counting (SIGINT, as Ctrl-C ends `perf stat`) and returns the counts per
    /// group name, with the window's length in seconds.
    ///
    /// Errors: [`ServerError::Io`] when perf cannot be waited for or its output read;
    /// [`ServerError::Counters`] when a group's line is missing.
    pub fn stop(mut self) -> Result<(BTreeMap<String, PerfCounts>, f64), ServerError> {
        let elapsed_s = self.started.elapsed().as_secs_f64();
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill has no memory preconditions; the pid is our own child's, not
            // yet waited for.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGINT)
            };
            c.wait()
                .map_err(|e| ServerError::io("waiting for perf stat", e))?;
        }
        let text = std::fs::read_to_string(&self.out).map_err(|e| {
            ServerError::io(&format!("reading perf's output {}", self.out.display()), e)
        })?;
        let counts = parse_perf_csv(&text, &self.groups, self.with_page_cache)?;
        Ok((counts, elapsed_s))
    }
}

impl Drop for PerfStat {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Parses `perf stat -x,` output with a cgroup column: `VALUE,UNIT,EVENT,GROUP,…`.
///
/// Errors: [`ServerError::Counters`] when a group has no `task-clock` line.
pub fn parse_perf_csv(
    text: &str,
    groups: &[String],
    with_page_cache: bool,
) -> Result<BTreeMap<String, PerfCounts>, ServerError> {
    let mut out: BTreeMap<String, PerfCounts> = BTreeMap::new();
    let mut seen = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 4 || line.starts_with('#') {
            continue;
        }
        let (value, event, group) = (f[0], f[2], f[3]);
        let Some(g) = groups.iter().find(|g| g.as_str() == group) else {
            continue;
        };
        // `<not counted>` / `<not supported>`: 0.
        let v: f64 = value.trim().parse().unwrap_or(0.0);
        let c = out.entry(g.clone()).or_default();
        match event {
            "task-clock" => {
                c.task_clock_ms = v;
                seen.insert(g.clone(), true);
            }
            "context-switches" => c.context_switches = v as u64,
            "cpu-migrations" => c.cpu_migrations = v as u64,
            "page-faults" => c.page_faults = v as u64,
            "minor-faults" => c.minor_faults = v as u64,
            "major-faults" => c.major_faults = v as u64,
            PAGE_CACHE_READ if with_page_cache => c.page_cache_reads = Some(v as u64),
            _ => {}
        }
    }
    for g in groups {
        if !seen.contains_key(g) {
            return Err(ServerError::Counters(format!(
                "perf stat printed no task-clock for cgroup {g}:\n{text}"
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_csv_lines_are_read_per_group() {
        let text = "# started on Thu Nov 26 14:31:39 2026\n\n\
            131.77,msec,task-clock,a,131773867,100.00,0.058,CPUs utilized\n\
            136,,context-switches,a,131773867,100.00,1.032,K/sec\n\
            8052,,page-faults,a,131773867,100.00,61.108,K/sec\n\
            8050,,minor-faults,a,131773867,100.00,61.108,K/sec\n\
            2,,major-faults,a,131773867,100.00,0.000,/sec\n\
            532,,filemap:mm_filemap_get_pages,a,131773867,100.00,4.762,K/sec\n\
            5.5,msec,task-clock,b,1,100.00,0.058,CPUs utilized\n\
            <not counted>,,context-switches,b,0,0.00,,\n";
        let groups = vec!["a".to_string(), "b".to_string()];
        let c = parse_perf_csv(text, &groups, true).unwrap();
        assert_eq!(c["a"].task_clock_ms, 131.77);
        assert_eq!(c["a"].context_switches, 136);
        assert_eq!(c["a"].minor_faults, 8050);
        assert_eq!(c["a"].major_faults, 2);
        assert_eq!(c["a"].page_cache_reads, Some(532));
        assert_eq!(c["b"].context_switches, 0);
        assert_eq!(c["b"].page_cache_reads, None);
        let missing = vec!["a".to_string(), "z".to_string()];
        assert!(parse_perf_csv(text, &missing, true).is_err());
    }
}
