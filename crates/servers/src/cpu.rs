//! CPU accounting of a server's processes from outside, through /proc (proc(5)): user and
//! system time, minor and major page faults and context switches of a process and its live
//! children, plus what its already exited children used.
//!
//! - A process's own times and faults: `/proc/PID/stat` fields 10–15 (`minflt`, `cminflt`,
//!   `majflt`, `cmajflt`, `utime`, `stime`) and 16–17 (`cutime`, `cstime`), in clock ticks;
//!   for a thread group they include its exited threads.
//! - Exited children: the parent's cumulative child fields `cutime`, `cstime`, `cminflt`,
//!   `cmajflt` (children it has waited for; PostgreSQL's postmaster reaps every backend in
//!   `reaper()`, postmaster.c). This is how a backend per connection that has already
//!   left is still counted.
//! - Context switches: `voluntary_ctxt_switches` / `nonvoluntary_ctxt_switches` of
//!   `/proc/PID/task/TID/status`, summed over live threads. The kernel keeps no cumulative
//!   child field for them, so exited children's and exited threads' switches are missing:
//!   [`TreeCpu::ctxt_switches_of_exited_missing`] says so. (`mvcclab serve` reports its own,
//!   exited threads included, through `getrusage`: `SELECT * FROM mvcclab_stat_cpu`.)
//!
//! Per process kind (PostgreSQL): the process title set by `init_ps_display` (ps_status.c),
//! `postgres: checkpointer`, `postgres: background writer`, `postgres: walwriter`,
//! `postgres: autovacuum launcher`, `postgres: USER DB HOST(PORT) STATE` for a backend.
//!
//! Only software perf events are available on this machine (no dTLB-load-misses), so a TLB
//! explanation of a difference cannot be measured here.

use std::collections::BTreeMap;
use std::path::Path;

pub use mvcclab_workload::cpu::CpuUse;

/// CPU use of a server's process tree at one moment.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TreeCpu {
    /// Everything: the root, its live children, and its exited (waited-for) children.
    pub total: CpuUse,
    /// By process kind (`postmaster`, `backend`, `checkpointer`, …; `exited` for the
    /// children already gone, from the root's cumulative child fields).
    pub by_kind: BTreeMap<String, CpuUse>,
    /// Live processes counted (the root included).
    pub processes: u64,
    /// True: the context switches of exited children are not in the figures (the kernel
    /// keeps no cumulative child field for them).
    pub ctxt_switches_of_exited_missing: bool,
}

impl TreeCpu {
    /// `self − earlier` for the totals and each kind.
    pub fn minus(&self, e: &TreeCpu) -> TreeCpu {
        let mut by_kind = BTreeMap::new();
        for (k, v) in &self.by_kind {
            by_kind.insert(
                k.clone(),
                v.minus(&e.by_kind.get(k).copied().unwrap_or_default()),
            );
        }
        TreeCpu {
            total: self.total.minus(&e.total),
            by_kind,
            processes: self.processes,
            ctxt_switches_of_exited_missing: self.ctxt_switches_of_exited_missing,
        }
    }
}

/// Fields of `/proc/PID/stat` from field 3 on (after the parenthesised comm, which may
/// hold spaces).
fn stat_fields(proc_dir: &Path) -> Option<Vec<u64>> {
    let s = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    // Field 3 (state) is a letter: keep the positions, parse the numbers.
    Some(
        after
            .split_whitespace()
            .map(|f| f.parse::<i64>().map(|v| v.max(0) as u64).unwrap_or(0))
            .collect(),
    )
}

fn ticks_per_second() -> u64 {
    // sysconf(_SC_CLK_TCK); 100 on every Linux this runs on.
    #[allow(unsafe_code)]
    // SAFETY: sysconf has no memory preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Context switches of a process's live threads.
fn ctxt_switches(proc_dir: &Path) -> (u64, u64) {
    let mut v = 0;
    let mut n = 0;
    let Ok(tasks) = std::fs::read_dir(proc_dir.join("task")) else {
        return (0, 0);
    };
    for t in tasks.flatten() {
        let Ok(s) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        for l in s.lines() {
            if let Some(x) = l.strip_prefix("voluntary_ctxt_switches:") {
                v += x.trim().parse::<u64>().unwrap_or(0);
            } else if let Some(x) = l.strip_prefix("nonvoluntary_ctxt_switches:") {
                n += x.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    (v, n)
}

/// The CPU use of process `pid` itself (its threads, exited ones included; not its
/// children): mvcclab measuring its own process around a run.
///
/// Errors: none; `None` when the process does not exist.
pub fn process_cpu(pid: u32) -> Option<CpuUse> {
    process_use(pid).map(|(own, _, _)| own)
}

/// One process: (own use, exited children's use, parent pid).
fn process_use(pid: u32) -> Option<(CpuUse, CpuUse, u32)> {
    let dir = Path::new("/proc").join(pid.to_string());
    let f = stat_fields(&dir)?;
    // After comm: [0]=state, [1]=ppid, … [7]=minflt, [8]=cminflt, [9]=majflt, [10]=cmajflt,
    // [11]=utime, [12]=stime, [13]=cutime, [14]=cstime (proc(5) fields 3…17).
    if f.len() < 15 {
        return None;
    }
    let us = 1_000_000 / ticks_per_second();
    let (vol, invol) = ctxt_switches(&dir);
    let own = CpuUse {
        user_us: f[11] * us,
        system_us: f[12] * us,
        voluntary_ctxt_switches: vol,
        involuntary_ctxt_switches: invol,
        minor_faults: f[7],
        major_faults: f[9],
    };
    let children = CpuUse {
        user_us: f[13] * us,
        system_us: f[14] * us,
        voluntary_ctxt_switches: 0,
        involuntary_ctxt_switches: 0,
        minor_faults: f[8],
        major_faults: f[10],
    };
    Some((own, children, f[1] as u32))
}

/// A process kind from a PostgreSQL process title (`postgres: checkpointer` →
/// `checkpointer`; `postgres: sbtest sbtest 127.0.0.1(4242) idle` → `backend`); other
/// programs by their name.
pub fn process_kind(cmdline: &str, is_root: bool) -> String {
    if is_root {
        return if cmdline.contains("postgres") {
            "postmaster".into()
        } else {
            "server".into()
        };
    }
    match cmdline.strip_prefix("postgres: ") {
        Some(t) => {
            for k in [
                "checkpointer",
                "background writer",
                "walwriter",
                "autovacuum launcher",
                "autovacuum worker",
                "logical replication launcher",
                "stats collector",
                "archiver",
            ] {
                if t.starts_with(k) {
                    return k.replace(' ', "_");
                }
            }
            "backend".into()
        }
        None => cmdline
            .split([' ', '\0'])
            .next()
            .and_then(|p| p.rsplit('/').next())
            .unwrap_or("other")
            .to_string(),
    }
}

/// The CPU use of process `root` and its descendants now: live processes from their own
/// fields, exited children from each live process's cumulative child fields (kind
/// `exited`).
///
/// Errors: `root` does not exist (or /proc is not readable).
pub fn tree_cpu(root: u32) -> std::io::Result<TreeCpu> {
    let (own, children, _) = process_use(root).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotFound, format!("no process {root}"))
    })?;
    // Every process with its parent, to find the descendants.
    let mut parent = BTreeMap::new();
    for e in std::fs::read_dir("/proc")?.flatten() {
        if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
            if let Some(f) = stat_fields(&e.path()) {
                if f.len() > 1 {
                    parent.insert(pid, f[1] as u32);
                }
            }
        }
    }
    let mut tree = TreeCpu {
        ctxt_switches_of_exited_missing: true,
        ..TreeCpu::default()
    };
    let mut add = |kind: String, u: CpuUse| {
        let e = tree.by_kind.entry(kind).or_default();
        *e = e.plus(&u);
    };
    let cmd = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .replace('\0', " ")
            .trim()
            .to_string()
    };
    add(process_kind(&cmd(root), true), own);
    add("exited".into(), children);
    let mut processes = 1;
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (&c, &pp) in &parent {
            if pp == p && c != root {
                if let Some((own, exited, _)) = process_use(c) {
                    add(process_kind(&cmd(c), false), own);
                    add("exited".into(), exited);
                    processes += 1;
                    frontier.push(c);
                }
            }
        }
    }
    tree.total = tree
        .by_kind
        .values()
        .fold(CpuUse::default(), |a, b| a.plus(b));
    tree.processes = processes;
    Ok(tree)
}

/// The direct children of process `pid` now (from each process's parent in
/// `/proc/N/stat`).
pub fn children_of(pid: u32) -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(c) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if stat_fields(&e.path()).is_some_and(|f| f.len() > 1 && f[1] as u32 == pid) {
                out.insert(c);
            }
        }
    }
    out
}

/// Waits (up to `timeout`) until every child of `root` that is not in `keep` has been
/// reaped — gone from /proc, its use added to `root`'s cumulative child fields (a
/// PostgreSQL backend whose session ended exits and is then waited for by the
/// postmaster, postmaster.c `reaper()`). Until then an exiting backend is in no reading
/// that [`tree_cpu`] can subtract cleanly. Returns whether all were reaped in time.
pub fn wait_children_reaped(
    root: u32,
    keep: &std::collections::BTreeSet<u32>,
    timeout: std::time::Duration,
) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if children_of(root).iter().all(|c| keep.contains(c)) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The six figures of a [`CpuUse`] by their field names, in a fixed order.
pub fn fields(u: &CpuUse) -> [(&'static str, u64); 6] {
    [
        ("user_us", u.user_us),
        ("system_us", u.system_us),
        ("voluntary_ctxt_switches", u.voluntary_ctxt_switches),
        ("involuntary_ctxt_switches", u.involuntary_ctxt_switches),
        ("minor_faults", u.minor_faults),
        ("major_faults", u.major_faults),
    ]
}

/// A [`CpuUse`] from `name → value` (the names of [`fields`]); missing names are 0.
pub fn from_fields(get: impl Fn(&str) -> Option<f64>) -> CpuUse {
    let f = |n: &str| get(n).unwrap_or(0.0).max(0.0) as u64;
    CpuUse {
        user_us: f("user_us"),
        system_us: f("system_us"),
        voluntary_ctxt_switches: f("voluntary_ctxt_switches"),
        involuntary_ctxt_switches: f("involuntary_ctxt_switches"),
        minor_faults: f("minor_faults"),
        major_faults: f("major_faults"),
    }
}

/// A server's CPU use as counter-snapshot entries: `cpu.total.FIELD` and
/// `cpu.KIND.FIELD` (cumulative counts, so a phase's use is `after − before`), and
/// `cpu.processes` (a state value: live processes at the reading).
pub fn snapshot_entries(t: &TreeCpu, out: &mut crate::Snapshot) {
    for (n, v) in fields(&t.total) {
        out.insert(format!("cpu.total.{n}"), v as f64);
    }
    for (k, u) in &t.by_kind {
        for (n, v) in fields(u) {
            out.insert(format!("cpu.{k}.{n}"), v as f64);
        }
    }
    out.insert("cpu.processes".into(), t.processes as f64);
}

/// The phase's CPU use back from snapshot entries ([`snapshot_entries`], after
/// [`crate::delta`]): the total and each kind. `None` when the counters hold no `cpu.`
/// entry (the server's processes could not be read).
pub fn from_counters(c: &crate::Snapshot) -> Option<(CpuUse, BTreeMap<String, CpuUse>)> {
    if !c.keys().any(|k| k.starts_with("cpu.total.")) {
        return None;
    }
    let mut kinds: Vec<&str> = c
        .keys()
        .filter_map(|k| {
            k.strip_prefix("cpu.")?
                .rsplit_once('.')
                .map(|(kind, _)| kind)
        })
        .filter(|k| *k != "total")
        .collect();
    kinds.dedup();
    let of = |kind: &str| from_fields(|n| c.get(&format!("cpu.{kind}.{n}")).copied());
    let by_kind = kinds.iter().map(|k| (k.to_string(), of(k))).collect();
    Some((of("total"), by_kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_use_goes_through_snapshot_entries_and_back() {
        let u = |x: u64| CpuUse {
            user_us: x,
            system_us: 2 * x,
            voluntary_ctxt_switches: 3 * x,
            involuntary_ctxt_switches: 4 * x,
            minor_faults: 5 * x,
            major_faults: 6 * x,
        };
        let t = TreeCpu {
            total: u(3),
            by_kind: [("backend".to_string(), u(1)), ("exited".to_string(), u(2))]
                .into_iter()
                .collect(),
            processes: 4,
            ctxt_switches_of_exited_missing: true,
        };
        let mut s = crate::Snapshot::new();
        snapshot_entries(&t, &mut s);
        assert_eq!(s["cpu.exited.minor_faults"], 10.0);
        assert_eq!(s["cpu.processes"], 4.0);
        let (total, kinds) = from_counters(&s).unwrap();
        assert_eq!(total, u(3));
        assert_eq!(kinds, t.by_kind);
        assert!(from_counters(&crate::Snapshot::new()).is_none());
    }

    #[test]
    fn postgres_process_titles_name_their_kind() {
        assert_eq!(
            process_kind("postgres: checkpointer ", false),
            "checkpointer"
        );
        assert_eq!(
            process_kind("postgres: background writer ", false),
            "background_writer"
        );
        assert_eq!(
            process_kind("postgres: sbtest sbtest 127.0.0.1(5555) idle", false),
            "backend"
        );
        assert_eq!(
            process_kind("/usr/lib/postgresql/15/bin/postgres -D x", true),
            "postmaster"
        );
    }

    #[test]
    fn exited_children_stay_counted_through_the_cumulative_fields() {
        let me = std::process::id();
        let before = tree_cpu(me).unwrap();
        // A child that faults in pages and exits; waiting for it adds its use to our
        // cumulative child fields.
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
            .status()
            .unwrap();
        assert!(st.success());
        let after = tree_cpu(me).unwrap();
        let d = after.minus(&before);
        let exited = d.by_kind.get("exited").copied().unwrap_or_default();
        assert!(exited.minor_faults > 0, "{d:?}");
        assert!(after.processes >= 1);
        assert!(after.ctxt_switches_of_exited_missing);
    }

    #[test]
    fn waiting_for_reaping_ends_when_the_new_children_are_gone() {
        // A parent of its own (this test process has other tests' children): a shell that
        // waits for its `sleep` child, then becomes a `sleep` without children.
        let mut sh = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 30 & wait; exec sleep 30")
            .spawn()
            .unwrap();
        let root = sh.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let child = loop {
            if let Some(&c) = children_of(root).iter().next() {
                break c;
            }
            assert!(std::time::Instant::now() < deadline, "sh started no child");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let none = std::collections::BTreeSet::new();
        let short = std::time::Duration::from_millis(100);
        assert!(!wait_children_reaped(root, &none, short));
        assert!(wait_children_reaped(
            root,
            &[child].into_iter().collect(),
            short
        ));
        // The shell reaps its killed child.
        std::process::Command::new("kill")
            .arg(child.to_string())
            .status()
            .unwrap();
        assert!(wait_children_reaped(
            root,
            &none,
            std::time::Duration::from_secs(10)
        ));
        sh.kill().unwrap();
        sh.wait().unwrap();
    }
}
