//! What the FUSE device counts beside the [`Nvme`](mvcclab_engine::device::Nvme)'s own
//! totals: the same metrics per file (by its path on the mount), per process (by what
//! `/proc/PID/cmdline` says it is) and per second of wall time.
//!
//! Every request is counted with the device's accounting rules (`device` module doc, rule
//! 1: 4 KiB blocks touched, requests split at `iop_max_bytes`), so the per-file and
//! per-process figures add up to the device's totals.

use crate::innodb_pages::{page_images, PageCounter, PageIo};
use mvcclab_engine::device::{blocks_4k, requests, CompressionTotals};
use mvcclab_engine::stats::CauseCounts;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// One request as the counters see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// A read of `len` bytes at `offset`.
    Read {
        /// Offset in bytes.
        offset: u64,
        /// Length in bytes.
        len: usize,
    },
    /// A write of `len` bytes at `offset`.
    Write {
        /// Offset in bytes.
        offset: u64,
        /// Length in bytes.
        len: usize,
    },
    /// An fsync or fdatasync of a file or directory.
    Sync,
}

impl Request {
    /// Adds this request to `c` (device accounting rule 1), with `waited_us` of throttle.
    pub fn add_to(self, c: &mut CauseCounts, iop_max_bytes: usize, waited_us: u64) {
        match self {
            Request::Read { offset, len } => {
                c.read_requests += requests(len, iop_max_bytes);
                c.read_blocks_4k += blocks_4k(offset, len);
                c.read_bytes += len as u64;
            }
            Request::Write { offset, len } => {
                c.write_requests += requests(len, iop_max_bytes);
                c.write_blocks_4k += blocks_4k(offset, len);
                c.write_bytes += len as u64;
            }
            Request::Sync => c.syncs += 1,
        }
        c.device_wait_us += waited_us;
    }
}

/// The device's metrics of one file (or class of files, or process), and the FUSE
/// requests they came in: a `write(2)` of up to the mount's largest write (128 KiB by
/// default, 1 MiB where the kernel allows) is one write call, however many device
/// requests (`write_requests`, split at `iop_max_bytes`) it makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIo {
    /// The device's metrics (only the device fields are filled).
    #[serde(flatten)]
    pub io: CauseCounts,
    /// FUSE read requests.
    pub read_calls: u64,
    /// FUSE write requests.
    pub write_calls: u64,
}

impl FileIo {
    /// Field-wise `self - earlier` (saturating).
    pub fn minus(&self, earlier: &FileIo) -> FileIo {
        FileIo {
            io: self.io.minus(&earlier.io),
            read_calls: self.read_calls.saturating_sub(earlier.read_calls),
            write_calls: self.write_calls.saturating_sub(earlier.write_calls),
        }
    }

    /// Field-wise sum.
    pub fn plus(&self, other: &FileIo) -> FileIo {
        FileIo {
            io: self.io.plus(&other.io),
            read_calls: self.read_calls + other.read_calls,
            write_calls: self.write_calls + other.write_calls,
        }
    }

    /// True when nothing was counted.
    pub fn is_zero(&self) -> bool {
        self.io.is_zero() && self.read_calls == 0 && self.write_calls == 0
    }

    fn add(&mut self, req: Request, iop_max_bytes: usize, waited_us: u64) {
        req.add_to(&mut self.io, iop_max_bytes, waited_us);
        match req {
            Request::Read { .. } => self.read_calls += 1,
            Request::Write { .. } => self.write_calls += 1,
            Request::Sync => {}
        }
    }
}

/// Read and written bytes of one second of wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecondIo {
    /// Bytes read in that second.
    pub read_bytes: u64,
    /// Bytes written in that second.
    pub write_bytes: u64,
}

/// The device's counts at one moment; two of them give a phase ([`DeviceCounts::since`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCounts {
    /// Seconds since the mount when taken.
    pub at_s: f64,
    /// Every request, summed.
    pub total: FileIo,
    /// Per file, by its path relative to the mount's root (`data/base/16384/16397`); a
    /// removed file keeps the path it last had, and files that had the same path add up.
    pub by_file: BTreeMap<String, FileIo>,
    /// Per process kind ([`process_kind`]).
    pub by_process: BTreeMap<String, FileIo>,
    /// Bytes held, logical and physical, with compression on (zeros without).
    pub compression: CompressionTotals,
    /// Read and written bytes per second since the mount (second `i` is `[i, i+1)` s).
    pub per_second: Vec<SecondIo>,
    /// CPU seconds (user + system) the daemon's request threads (`fuser-N`) have used;
    /// they share the machine's cores with the server and the clients.
    pub daemon_cpu_s: f64,
    /// InnoDB pages read and written, by `index ID` or `type TYPE`, when the mount counts
    /// them ([`crate::DevMount::count_innodb_pages`]; `innodb_pages` module doc); empty
    /// otherwise.
    #[serde(default)]
    pub innodb_pages: BTreeMap<String, PageIo>,
}

impl DeviceCounts {
    /// The counts of the phase from `earlier` to `self`: field-wise differences, the
    /// compression state of `self`, and the seconds that began at or after `earlier`.
    pub fn since(&self, earlier: &DeviceCounts) -> DeviceCounts {
        let sub = |now: &BTreeMap<String, FileIo>, then: &BTreeMap<String, FileIo>| {
            now.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.minus(&then.get(k).copied().unwrap_or_default()),
                    )
                })
                .filter(|(_, v)| !v.is_zero())
                .collect()
        };
        let first = earlier.at_s.ceil() as usize;
        let last = self.at_s.floor() as usize;
        DeviceCounts {
            at_s: self.at_s - earlier.at_s,
            total: self.total.minus(&earlier.total),
            by_file: sub(&self.by_file, &earlier.by_file),
            by_process: sub(&self.by_process, &earlier.by_process),
            compression: self.compression,
            daemon_cpu_s: (self.daemon_cpu_s - earlier.daemon_cpu_s).max(0.0),
            innodb_pages: self
                .innodb_pages
                .iter()
                .map(|(k, v)| {
                    let then = earlier.innodb_pages.get(k).copied().unwrap_or_default();
                    (k.clone(), v.minus(&then))
                })
                .filter(|(_, v)| !v.is_zero())
                .collect(),
            per_second: self
                .per_second
                .get(first.min(last)..last.min(self.per_second.len()))
                .unwrap_or_default()
                .to_vec(),
        }
    }
}

/// Counts of one 4 KiB block of a file whose blocks are mapped ([`BlockMap`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockIo {
    /// Times the block was read (4 KiB blocks read).
    pub read_blocks_4k: u64,
    /// Times the block was written (4 KiB blocks written).
    pub write_blocks_4k: u64,
    /// Read requests (FUSE calls) that began in this block.
    pub read_calls: u64,
    /// Write requests (FUSE calls) that began in this block.
    pub write_calls: u64,
    /// Bytes of this block read (a request covering part of it counts that part).
    pub read_bytes: u64,
    /// Bytes of this block written.
    pub write_bytes: u64,
}

/// Per-4 KiB-block counts of one file (block-device mode: the image file under a loop
/// device, whose blocks are mapped to the files of the file system on it by their extents).
pub type BlockMap = HashMap<u64, BlockIo>;

/// Names the part of a split file a request falls in, from its offset in bytes and its
/// data (what was written, or what was read): [`crate::DevMount::split_file`].
pub type PartFn = std::sync::Arc<dyn Fn(u64, &[u8]) -> &'static str + Send + Sync>;

/// The accumulators, shared by the file system's request threads.
pub(crate) struct Counting {
    pub(crate) started: Instant,
    pub(crate) iop_max_bytes: usize,
    inner: Mutex<Inner>,
    /// The path whose blocks are mapped, if any (set before the file is created).
    pub(crate) mapped_path: Mutex<Option<String>>,
    mapped: Mutex<(Option<u64>, BlockMap)>,
    /// The file whose requests are counted by part (its inode and namer), if any.
    split: Mutex<Option<(u64, PartFn)>>,
    /// InnoDB page images by index, counted once asked for
    /// ([`Counting::count_innodb_pages`]; empty until then).
    pages: Mutex<PageCounter>,
    /// Whether `pages` counts: read on every request without the mutex.
    pages_on: AtomicBool,
}

#[derive(Default)]
struct Inner {
    total: FileIo,
    /// Per inode and part (`""` but for a split file).
    by_ino: HashMap<(u64, &'static str), FileIo>,
    /// Counts of files that are gone, by their last path.
    removed: BTreeMap<String, FileIo>,
    by_process: BTreeMap<String, FileIo>,
    process_kinds: HashMap<u32, String>,
    per_second: Vec<SecondIo>,
}

impl Counting {
    pub(crate) fn new(iop_max_bytes: usize) -> Self {
        Counting {
            started: Instant::now(),
            iop_max_bytes,
            inner: Mutex::new(Inner::default()),
            mapped_path: Mutex::new(None),
            mapped: Mutex::new((None, BlockMap::new())),
            split: Mutex::new(None),
            pages: Mutex::new(PageCounter::default()),
            pages_on: AtomicBool::new(false),
        }
    }

    /// Counts the InnoDB page images of every read and write from now on.
    pub(crate) fn count_innodb_pages(&self) {
        self.pages_on.store(true, Ordering::Release);
    }

    /// Counts the requests of inode `ino` by the part `part` names from now on.
    pub(crate) fn split_inode(&self, ino: u64, part: PartFn) {
        *self.split.lock() = Some((ino, part));
    }

    /// Maps the blocks of inode `ino` from now on.
    pub(crate) fn map_inode(&self, ino: u64) {
        self.mapped.lock().0 = Some(ino);
    }

    /// The block counts of the mapped file so far.
    pub(crate) fn block_map(&self) -> BlockMap {
        self.mapped.lock().1.clone()
    }

    fn count_blocks(&self, ino: u64, req: Request) {
        let mut m = self.mapped.lock();
        if m.0 != Some(ino) {
            return;
        }
        let (offset, len, write) = match req {
            Request::Read { offset, len } => (offset, len, false),
            Request::Write { offset, len } => (offset, len, true),
            Request::Sync => return,
        };
        if len == 0 {
            return;
        }
        let first = offset / 4096;
        let last = (offset + len as u64 - 1) / 4096;
        let end = offset + len as u64;
        for b in first..=last {
            let part = end.min((b + 1) * 4096) - offset.max(b * 4096);
            let e = m.1.entry(b).or_default();
            if write {
                e.write_blocks_4k += 1;
                e.write_calls += u64::from(b == first);
                e.write_bytes += part;
            } else {
                e.read_blocks_4k += 1;
                e.read_calls += u64::from(b == first);
                e.read_bytes += part;
            }
        }
    }

    /// Counts `req` on inode `ino`, made by process `pid`, which waited `waited_us`; `data`
    /// is what a read returned or a write carried (empty for a sync).
    pub(crate) fn count(&self, ino: u64, pid: u32, req: Request, waited_us: u64, data: &[u8]) {
        self.count_blocks(ino, req);
        if let Request::Read { .. } | Request::Write { .. } = req {
            if self.pages_on.load(Ordering::Acquire) {
                // Scanned outside the lock: a CRC-32C per candidate image.
                let images = page_images(data);
                if !images.is_empty() {
                    self.pages
                        .lock()
                        .count(&images, matches!(req, Request::Write { .. }));
                }
            }
        }
        let part = match (&*self.split.lock(), req) {
            (Some((i, f)), Request::Read { offset, .. } | Request::Write { offset, .. })
                if *i == ino =>
            {
                f(offset, data)
            }
            _ => "",
        };
        let kind = {
            let known = self.inner.lock().process_kinds.get(&pid).cloned();
            match known {
                Some(k) => k,
                None => {
                    // Read outside the lock: /proc is cheap but not free.
                    let k = process_kind(pid);
                    self.inner.lock().process_kinds.insert(pid, k.clone());
                    k
                }
            }
        };
        let sec = self.started.elapsed().as_secs() as usize;
        let iop = self.iop_max_bytes;
        let mut g = self.inner.lock();
        g.total.add(req, iop, waited_us);
        g.by_ino
            .entry((ino, part))
            .or_default()
            .add(req, iop, waited_us);
        g.by_process
            .entry(kind)
            .or_default()
            .add(req, iop, waited_us);
        if g.per_second.len() <= sec {
            g.per_second.resize(sec + 1, SecondIo::default());
        }
        match req {
            Request::Read { len, .. } => g.per_second[sec].read_bytes += len as u64,
            Request::Write { len, .. } => g.per_second[sec].write_bytes += len as u64,
            Request::Sync => {}
        }
    }

    /// Inode `ino` is gone; its counts stay under `path`.
    pub(crate) fn removed(&self, ino: u64, path: String) {
        let mut g = self.inner.lock();
        let parts: Vec<(u64, &'static str)> =
            g.by_ino.keys().filter(|k| k.0 == ino).copied().collect();
        for key in parts {
            if let Some(c) = g.by_ino.remove(&key) {
                let e = g.removed.entry(part_path(&path, key.1)).or_default();
                *e = e.plus(&c);
            }
        }
    }

    /// The counts now; `path_of` names a live inode.
    pub(crate) fn snapshot(
        &self,
        path_of: impl Fn(u64) -> Option<String>,
        compression: CompressionTotals,
    ) -> DeviceCounts {
        let at_s = self.started.elapsed().as_secs_f64();
        let g = self.inner.lock();
        let mut by_file = g.removed.clone();
        for ((ino, part), c) in &g.by_ino {
            let path = path_of(*ino).unwrap_or_else(|| format!("(inode {ino})"));
            let e = by_file.entry(part_path(&path, part)).or_default();
            *e = e.plus(c);
        }
        DeviceCounts {
            at_s,
            total: g.total,
            by_file,
            by_process: g.by_process.clone(),
            compression,
            per_second: g.per_second.clone(),
            daemon_cpu_s: daemon_cpu_s(),
            innodb_pages: self.pages.lock().by_key(),
        }
    }
}

/// The `by_file` key of part `part` of the file at `path`: `path#part` (the path alone for
/// an unsplit file).
fn part_path(path: &str, part: &str) -> String {
    if part.is_empty() {
        path.to_string()
    } else {
        format!("{path}#{part}")
    }
}

/// CPU seconds of this process's threads named `fuser-N` (`/proc/self/task/*/stat`,
/// fields 14 and 15, utime and stime, in clock ticks of `sysconf(_SC_CLK_TCK)`; proc(5)).
fn daemon_cpu_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ticks = 0u64;
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // "tid (comm) state ..." — comm may hold spaces; the fields follow the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        if !comm.starts_with("fuser-") || comm == "fuser-bg" {
            continue;
        }
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the comm, field 3 (state) is f[0]; utime (14) is f[11], stime (15) f[12].
        ticks += f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
            + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    }
    ticks as f64 / hz
}

/// What kind of process `pid` is, from `/proc/PID/cmdline` and `/proc/PID/comm` (FUSE
/// gives the id of the thread that made the request): PostgreSQL names its processes in
/// their command line (`postgres: checkpointer`, `postgres: background writer`,
/// `postgres: walwriter`, `postgres: autovacuum worker`, `postgres: USER DB HOST ...` for
/// a backend; ps_status.c `init_ps_display`), which become `checkpointer`,
/// `background writer`, `walwriter`, `autovacuum worker` and `backend`. Any other process
/// is named by its thread's `comm` (`mariadbd`, `initdb`, ...); pid 0 (the kernel's own
/// requests) is `kernel`, and a process gone before it could be read is `exited`.
pub fn process_kind(pid: u32) -> String {
    if pid == 0 {
        return "kernel".into();
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let first = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    if let Some(rest) = first.strip_prefix("postgres: ") {
        return postgres_kind(rest).to_string();
    }
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => "exited".into(),
    }
}

/// The kind of a PostgreSQL process from its ps display after `postgres: ` (the cluster
/// name, when set, comes first and is skipped when it is not a known kind).
fn postgres_kind(display: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("checkpointer", "checkpointer"),
        ("background writer", "background writer"),
        ("walwriter", "walwriter"),
        ("autovacuum launcher", "autovacuum launcher"),
        ("autovacuum worker", "autovacuum worker"),
        (
            "logical replication launcher",
            "logical replication launcher",
        ),
        ("stats collector", "stats collector"),
        ("startup", "startup"),
        ("archiver", "archiver"),
        ("walsender", "walsender"),
        ("walreceiver", "walreceiver"),
    ];
    KINDS
        .iter()
        .find(|(p, _)| display.starts_with(p))
        .map(|(_, k)| *k)
        .unwrap_or("backend")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_processes_are_named_by_their_display() {
        assert_eq!(postgres_kind("checkpointer "), "checkpointer");
        assert_eq!(postgres_kind("background writer"), "background writer");
        assert_eq!(
            postgres_kind("autovacuum worker sbtest"),
            "autovacuum worker"
        );
        assert_eq!(
            postgres_kind("postgres sbtest 127.0.0.1(4242) UPDATE"),
            "backend"
        );
        assert_eq!(process_kind(0), "kernel");
        assert!(!process_kind(std::process::id()).is_empty());
    }

    #[test]
    fn counts_add_up_and_phases_subtract() {
        let c = Counting::new(16384);
        c.count(
            2,
            0,
            Request::Write {
                offset: 0,
                len: 65536,
            },
            5,
            &[],
        );
        c.count(
            3,
            0,
            Request::Read {
                offset: 100,
                len: 10,
            },
            0,
            &[],
        );
        c.count(3, 0, Request::Sync, 0, &[]);
        let a = c.snapshot(|i| Some(format!("f{i}")), CompressionTotals::default());
        assert_eq!(
            (a.total.io.write_blocks_4k, a.total.io.write_requests),
            (16, 4)
        );
        assert_eq!(a.by_file["f3"].io.syncs, 1);
        assert_eq!(a.by_file["f3"].read_calls, 1);
        assert_eq!(a.by_process["kernel"].io.read_bytes, 10);
        c.removed(2, "f2".into());
        c.count(
            3,
            0,
            Request::Write {
                offset: 4096,
                len: 4096,
            },
            0,
            &[],
        );
        let b = c.snapshot(|i| Some(format!("f{i}")), CompressionTotals::default());
        assert_eq!(
            b.by_file["f2"].io.write_bytes, 65536,
            "a removed file keeps its counts"
        );
        let d = b.since(&a);
        assert_eq!(d.total.io.write_bytes, 4096);
        assert_eq!(d.by_file.len(), 1, "{:?}", d.by_file);
        assert_eq!(d.by_file["f3"].io.write_blocks_4k, 1);
    }

    #[test]
    fn a_split_file_is_counted_by_part_and_its_parts_add_up() {
        let c = Counting::new(16384);
        // Offsets below 8 KiB are "head"; the rest by the first data byte.
        let part: PartFn = std::sync::Arc::new(|offset: u64, data: &[u8]| {
            if offset < 8192 {
                "head"
            } else if data.first() == Some(&1) {
                "one"
            } else {
                "rest"
            }
        });
        c.split_inode(7, part);
        let w = |offset, data: &[u8]| {
            c.count(
                7,
                0,
                Request::Write {
                    offset,
                    len: data.len(),
                },
                0,
                data,
            )
        };
        w(0, &[9; 4096]);
        w(8192, &[1; 4096]);
        w(12288, &[2; 8192]);
        c.count(7, 0, Request::Sync, 0, &[]);
        c.count(8, 0, Request::Write { offset: 0, len: 10 }, 0, &[1; 10]);
        let s = c.snapshot(|i| Some(format!("f{i}")), CompressionTotals::default());
        assert_eq!(s.by_file["f7#head"].io.write_bytes, 4096);
        assert_eq!(s.by_file["f7#one"].io.write_bytes, 4096);
        assert_eq!(s.by_file["f7#rest"].io.write_blocks_4k, 2);
        assert_eq!(s.by_file["f7"].io.syncs, 1, "a sync has no part");
        assert_eq!(
            s.by_file["f8"].io.write_bytes, 10,
            "another file is not split"
        );
        let sum: u64 = s.by_file.values().map(|f| f.io.write_bytes).sum();
        assert_eq!(sum, s.total.io.write_bytes);
        c.removed(7, "gone".into());
        let s = c.snapshot(|i| Some(format!("f{i}")), CompressionTotals::default());
        assert_eq!(s.by_file["gone#one"].io.write_bytes, 4096);
    }
}
