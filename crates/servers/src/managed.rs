//! Servers mvcclab starts itself: PostgreSQL 15 and MariaDB 10.11 from Debian's packages,
//! each in a folder of its own, on 127.0.0.1 and a free port, stopped by the process id
//! that started them.
//!
//! # Invariants
//! 1. The server is a direct child of mvcclab (no `pg_ctl`, no `mysqld_safe`, no `runuser`
//!    in between), so the pid mvcclab holds is the server's own and stopping it needs no
//!    search by name.
//! 2. It runs in a process group of its own, so a Ctrl-C at the terminal reaches mvcclab
//!    only; mvcclab ends the run and then stops the server itself.
//! 3. Its parent-death signal is set (`prctl(PR_SET_PDEATHSIG)`), so if mvcclab dies
//!    without stopping it (second Ctrl-C, SIGKILL, panic) the kernel stops it.
//! 4. When mvcclab runs as root the server runs as its package's system user (`postgres`,
//!    `mysql`), which owns the folder; PostgreSQL refuses to run as root.
//!
//! 5. With a FUSE device ([`ManagedOptions::device`]) the data directory (and with it
//!    PostgreSQL's `pg_wal`, InnoDB's redo log, undo and system tablespace) lives on the
//!    mount, `device/data` in the server's folder (in block-device mode on ext4 over a loop
//!    device over `device/device.img`, mounted at `mnt`), and so do the temporary files of
//!    queries: PostgreSQL's `base/pgsql_tmp` is inside the data directory, MariaDB's
//!    `tmpdir` is set to `tmp` beside it (also on the loop device of `exact_device_io`);
//!    the socket, the pid file and the log stay off it, in the folder itself. The device
//!    is mounted unthrottled: whoever runs the workload turns the throttle on after the
//!    load ([`ManagedServer::device`]). It is unmounted after the server has stopped.
//!    Without a device MariaDB's `tmpdir` is `tmp` in the server's folder: never the
//!    environment's `TMPDIR`, which the server's user may not be able to write.
//!
//! # Crash safety
//! None is needed: the folder is scratch, removed when the [`ManagedServer`] is dropped.
//! A FUSE mount left by a killed run is unmounted by `fusermount3` (`auto_unmount`).

use crate::loopdev::LoopDevice;
use crate::{ServerError, ServerKind};
use mvcclab_devfs::{DevMount, DeviceConfig};
use std::fs;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// MyRocks' storage engine plugin (Debian's `mariadb-plugin-rocksdb`).
const MYROCKS_PLUGIN: &str = "/usr/lib/mysql/plugin/ha_rocksdb.so";

/// How to start a managed server.
#[derive(Clone, Debug)]
pub struct ManagedOptions {
    /// Buffer pool in bytes: PostgreSQL `shared_buffers`, InnoDB `innodb_buffer_pool_size`
    /// (raised to the engine's minimum: 128 KiB and 6 MiB).
    pub buffer_pool_bytes: u64,
    /// Folder under which the server's own folder is made (default: the system's temp
    /// directory).
    pub base_dir: Option<PathBuf>,
    /// Put the server's files on a loop device of their own, to read exact device I/O from
    /// `/sys/block/loopN/stat` (root only).
    pub exact_device_io: bool,
    /// Size of that loop device's backing file in bytes (sparse).
    pub device_size_bytes: u64,
    /// Put the server's data directory on mvcclab's virtual NVMe device, mounted through
    /// FUSE (root; `/dev/fuse` and `fusermount3`). Not with `exact_device_io`.
    pub device: Option<DeviceConfig>,
    /// With `device`: block-device mode, as NVMeVirt is — the mount holds one image file,
    /// a loop device over it (`losetup --direct-io=on`, non-rotational), ext4 on the loop
    /// device, and the server's data directory on ext4, so that the file system's journal
    /// and metadata I/O reach the device too. Without it, file-system mode: the server's
    /// files are files of the mount.
    pub block_device: bool,
    /// In block-device mode, present the loop device as rotational (`queue/rotational` =
    /// 1, a hard disk) instead of non-rotational (0, an NVMe SSD): MariaDB then flushes a
    /// page's dirty neighbours (buf0flu.cc `buf_flush_try_neighbors`), as the innodb
    /// preset does with `--rotational`.
    pub rotational: bool,
    /// Start from this saved data directory ([`ManagedServer::save_data`]) instead of a new
    /// one: it is copied into place (`cp -a --sparse=always`) where `initdb` or
    /// `mariadb-install-db` would have made one, and neither runs (issue 26, load once).
    pub restore_from: Option<PathBuf>,
    /// Bound the server's memory, page cache included, with a memory cgroup (v1:
    /// `/sys/fs/cgroup/memory/mvcclab-KIND-PORT`, `memory.limit_in_bytes`), so that the
    /// kernel's cache of its files is as large as the emulated OS cache of the preset
    /// (DESIGN.md "Page cache and memory, stated"); root only. The FUSE daemon is
    /// mvcclab's own thread and stays outside it. `u64::MAX`: no limit at start-up (the
    /// group only holds the processes, so that a load is not slowed by a small page
    /// cache) until [`ManagedServer::bound_page_cache`] sets one.
    pub memory_limit_bytes: Option<u64>,
    /// More server settings, after mvcclab's own (so they win): PostgreSQL `-c NAME=VALUE`,
    /// MariaDB `--NAME=VALUE` (`max_connections`, `thread_handling=pool-of-threads` for
    /// `experiment connection_storm`).
    pub extra_settings: Vec<(String, String)>,
}

/// A managed PostgreSQL's `checkpoint_timeout`, seconds: one day, so that no timed
/// checkpoint falls inside a run (its phases checkpoint when they ask; postgresql.conf
/// "Checkpoints"). A preset run beside it takes the same (cli `DeviceArgs`
/// `checkpoints_as_managed_postgresql`).
pub const PG_CHECKPOINT_TIMEOUT_S: u64 = 86_400;

/// A managed PostgreSQL's `max_wal_size`, bytes (100 GB): no checkpoint by WAL volume
/// inside a run either.
pub const PG_MAX_WAL_SIZE_BYTES: u64 = 100 << 30;

/// A memory cgroup (v1) holding a managed server's processes; removed on drop, after
/// the server has stopped.
struct MemoryCgroup {
    dir: PathBuf,
}

impl MemoryCgroup {
    /// Creates `/sys/fs/cgroup/memory/NAME` with `memory.limit_in_bytes` = `limit`
    /// (`u64::MAX`: `-1`, no limit; mm/memcontrol-v1.c `mem_cgroup_write` →
    /// `page_counter_memparse`).
    fn create(name: &str, limit: u64) -> Result<MemoryCgroup, ServerError> {
        let dir = Path::new("/sys/fs/cgroup/memory").join(name);
        fs::create_dir_all(&dir).map_err(|e| {
            ServerError::io(
                &format!(
                    "creating the memory cgroup {} (cgroup v1, root)",
                    dir.display()
                ),
                e,
            )
        })?;
        let g = MemoryCgroup { dir };
        g.write("memory.limit_in_bytes", &limit_text(limit))?;
        Ok(g)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), ServerError> {
        let p = self.dir.join(file);
        fs::write(&p, value).map_err(|e| ServerError::io(&format!("writing {}", p.display()), e))
    }

    fn read_u64(&self, file: &str) -> Option<u64> {
        fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|t| t.trim().parse().ok())
    }

    /// The cgroup's memory now: `memory.usage_in_bytes`, `memory.stat`, `memory.limit_in_bytes`
    /// and `memory.failcnt`; `None` when the files cannot be read.
    fn memory(&self) -> Option<CgroupMemory> {
        let stat = fs::read_to_string(self.dir.join("memory.stat")).ok()?;
        Some(CgroupMemory::from_stat(
            self.read_u64("memory.usage_in_bytes")?,
            &stat,
            self.read_u64("memory.limit_in_bytes").unwrap_or(u64::MAX),
            self.read_u64("memory.failcnt").unwrap_or(0),
        ))
    }
}

/// `limit` as `memory.limit_in_bytes` takes it: bytes, or `-1` (no limit) for `u64::MAX`.
fn limit_text(limit: u64) -> String {
    if limit == u64::MAX {
        "-1".into()
    } else {
        limit.to_string()
    }
}

/// A memory cgroup's (v1) memory at one moment, bytes: what
/// [`ManagedServer::bound_page_cache`] derives the limit from and the report shows.
///
/// The page cache of the server's files is the file LRU lists, `memory.stat`
/// `active_file + inactive_file` (mm/memcontrol-v1.c `memcg1_stat_format`): v1's `cache`
/// also holds shared memory (PostgreSQL's shared buffers, on the anon LRU lists since shmem
/// is swap-backed), so it is not the page cache. Everything else charged to the group —
/// anonymous memory, shared memory, kernel memory (v1 charges kmem to
/// `memory.usage_in_bytes` too) — is the server's own memory, `usage − file`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CgroupMemory {
    /// `memory.usage_in_bytes`: everything charged to the group.
    pub usage_bytes: u64,
    /// The page cache of files: `memory.stat` `active_file + inactive_file`.
    pub file_bytes: u64,
    /// `memory.stat` `shmem` (PostgreSQL's shared memory).
    pub shmem_bytes: u64,
    /// `memory.stat` `rss` (anonymous memory of its processes).
    pub rss_bytes: u64,
    /// `memory.limit_in_bytes`.
    pub limit_bytes: u64,
    /// `memory.failcnt`: times the limit was hit.
    pub failcnt: u64,
    /// Shared memory the server has mapped but not yet touched, so not yet charged
    /// ([`ManagedServer::bound_page_cache`] fills it in; 0 from `memory.stat` alone).
    pub untouched_shared_bytes: u64,
}

impl CgroupMemory {
    /// From `memory.usage_in_bytes` (`usage_bytes`), the text of `memory.stat` (`stat`:
    /// `KEY VALUE` lines; a missing key counts 0), the limit and the failure count.
    pub fn from_stat(usage_bytes: u64, stat: &str, limit_bytes: u64, failcnt: u64) -> Self {
        let get = |key: &str| {
            stat.lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    (k == key).then(|| v.trim().parse::<u64>().ok())?
                })
                .unwrap_or(0)
        };
        CgroupMemory {
            usage_bytes,
            file_bytes: get("active_file") + get("inactive_file"),
            shmem_bytes: get("shmem"),
            rss_bytes: get("rss"),
            limit_bytes,
            failcnt,
            untouched_shared_bytes: 0,
        }
    }

    /// The server's own memory: everything charged but the page cache, `usage − file`,
    /// plus the shared memory it will be charged for when first touched
    /// (`untouched_shared_bytes`).
    pub fn own_bytes(&self) -> u64 {
        self.usage_bytes
            .saturating_sub(self.file_bytes)
            .saturating_add(self.untouched_shared_bytes)
    }

    /// The limit that leaves the server `page_cache_bytes` of page cache beside its own
    /// memory as it is now: `own_bytes + page_cache_bytes`.
    pub fn limit_for_page_cache(&self, page_cache_bytes: u64) -> u64 {
        self.own_bytes().saturating_add(page_cache_bytes)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Possible once no process is left in it (the server has stopped); v1 moves the
        // charged pages to the parent.
        let _ = fs::remove_dir(&self.dir);
    }
}

impl Default for ManagedOptions {
    fn default() -> Self {
        ManagedOptions {
            buffer_pool_bytes: 8 << 20,
            base_dir: None,
            exact_device_io: false,
            device_size_bytes: 16 << 30,
            device: None,
            block_device: false,
            rotational: false,
            restore_from: None,
            memory_limit_bytes: None,
            extra_settings: Vec::new(),
        }
    }
}

/// The bytes of shared anonymous and System V shared memory mapped by a process, from the
/// text of its `/proc/PID/maps`: lines naming `/dev/zero (deleted)` (how Linux shows a
/// `MAP_SHARED | MAP_ANONYMOUS` mapping, PostgreSQL's main segment: sysv_shmem.c
/// `CreateAnonymousSegment`) or `SYSV` (its small System V header segment), each
/// `end - start`. Lines that do not parse count 0.
pub fn shared_mapping_bytes(maps: &str) -> u64 {
    maps.lines()
        .filter(|l| l.ends_with("/dev/zero (deleted)") || l.contains(" /SYSV"))
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some(
                u64::from_str_radix(b, 16)
                    .ok()?
                    .saturating_sub(u64::from_str_radix(a, 16).ok()?),
            )
        })
        .sum()
}

/// The files a managed server's page cache is made of
/// ([`ManagedServer::page_cache_scope`](ManagedServer::page_cache_scope)):
/// every regular file under the folder holding its data directory (with MariaDB's `tmpdir`
/// and PostgreSQL's `pg_wal` and `base/pgsql_tmp`), and the loop device under its ext4 in
/// block-device mode, whose own page cache holds ext4's metadata and journal blocks.
///
/// [`PageCacheScope::drop`] empties the page cache of those files alone, where
/// [`crate::drop_os_page_cache`] empties the whole machine's: a run that drops caches then no
/// longer takes the page cache from every other run on the machine (the issue 24 trace: a
/// bounded real PostgreSQL's heap left the cache about ten times in one phase, each time
/// another session wrote `drop_caches`).
#[derive(Clone, Debug)]
pub struct PageCacheScope {
    /// Walked recursively; regular files only.
    pub home: std::path::PathBuf,
    /// A block device whose own page cache goes too (`/dev/loopN`), if any.
    pub block_device: Option<std::path::PathBuf>,
}

impl PageCacheScope {
    /// `sync`, then `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole of every file in
    /// the scope and of its block device: the kernel drops their clean page-cache pages
    /// (mm/fadvise.c `generic_fadvise`, `invalidate_mapping_pages`), whichever memory
    /// cgroup they are charged to (a restored data directory's pages are charged to the
    /// process that copied it). Pages a process has mapped stay; neither server maps its
    /// data files. Dentries and inodes stay cached, unlike `drop_caches` 3. Files that
    /// vanish during the walk (a server removing a temporary file) are skipped.
    ///
    /// Errors: [`ServerError::Io`] naming the folder or file that cannot be read or opened.
    pub fn drop(&self) -> Result<(), ServerError> {
        // SAFETY: sync has no preconditions.
        unsafe { libc::sync() };
        let mut dirs = vec![self.home.clone()];
        while let Some(dir) = dirs.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(ServerError::io(&format!("reading {}", dir.display()), e)),
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    fadvise_dontneed(&entry.path())?;
                }
            }
        }
        if let Some(dev) = &self.block_device {
            fadvise_dontneed(dev)?;
        }
        Ok(())
    }
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` on `path` opened read-only; a file gone
/// before it is opened is skipped.
fn fadvise_dontneed(path: &std::path::Path) -> Result<(), ServerError> {
    use std::os::fd::AsRawFd;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ServerError::io(&format!("opening {}", path.display()), e)),
    };
    // SAFETY: the descriptor is open for the call's duration; offset 0 and length 0 mean
    // the whole file.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(ServerError::io(
            &format!("posix_fadvise(DONTNEED) on {}", path.display()),
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    Ok(())
}

/// A server process mvcclab started; stopped (fast shutdown, then SIGKILL after 60 s) and
/// its folder removed on [`ManagedServer::stop`] or drop.
pub struct ManagedServer {
    kind: ServerKind,
    child: Option<Child>,
    port: u16,
    /// The server's folder (data directory, socket, log).
    dir: PathBuf,
    /// Its data directory (under `dir`, or on the loop device).
    data: PathBuf,
    /// `dir` is ours to remove (a temp folder), and the loop device under it.
    _scratch: Option<tempfile::TempDir>,
    loopdev: Option<LoopDevice>,
    /// The FUSE device holding its data directory.
    device: Option<DevMount>,
    /// Server-side settings given on its command line, for the report.
    pub settings: Vec<(String, String)>,
    /// Its data directory was copied from a saved one ([`ManagedOptions::restore_from`]).
    restored: bool,
    /// The memory cgroup bounding it ([`ManagedOptions::memory_limit_bytes`]).
    cgroup: Option<MemoryCgroup>,
    /// How the server process was started, for [`ManagedServer::restart`].
    launch: Launch,
}

/// The server process's command line: program, its user, parent-death signal, arguments
/// and log, kept so that [`ManagedServer::restart_with`] starts the same server again.
#[derive(Debug)]
struct Launch {
    program: PathBuf,
    owner: Option<(u32, u32)>,
    deathsig: i32,
    args: Vec<std::ffi::OsString>,
    log: PathBuf,
}

impl Launch {
    /// Starts the process, its output appended to the log, and moves it into `cgroup`
    /// (`cgroup.procs`); if that fails the process is killed and reaped, so that no server
    /// runs outside the bound it was given.
    ///
    /// Errors: [`ServerError::Io`] when the log cannot be opened, the program cannot be
    /// started or `cgroup.procs` cannot be written.
    fn spawn_into(&self, cgroup: Option<&MemoryCgroup>) -> Result<Child, ServerError> {
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| ServerError::io(&format!("creating {}", self.log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| ServerError::io("duplicating a log handle", e))?;
        let mut child = command(&self.program, self.owner, self.deathsig)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| ServerError::io(&format!("starting {}", self.program.display()), e))?;
        if let Some(g) = cgroup {
            if let Err(e) = g.write("cgroup.procs", &child.id().to_string()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        }
        Ok(child)
    }
}

/// A system user: (uid, gid).
pub(crate) fn system_user(name: &str) -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// Whether the block device holding `path` — or, when `path` does not exist yet, its
/// nearest existing ancestor — is rotational: `/sys/dev/block/MAJOR:MINOR/queue/rotational`
/// (the whole disk's for a partition) = 1. A loop device takes the flag of the disk under
/// its backing file when the file is attached (drivers/block/loop.c; seen on kernel 6.18:
/// `exact_device_io` loop devices over files on a rotational disk show 1), so a managed
/// server with `exact_device_io` sees the same flag as its folder. `None` when the file system has
/// no block device (tmpfs, FUSE: major 0) or sysfs does not say.
pub fn storage_rotational(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let dev = path.ancestors().find_map(|p| fs::metadata(p).ok())?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let base = format!("/sys/dev/block/{major}:{minor}");
    let text = fs::read_to_string(format!("{base}/queue/rotational"))
        .or_else(|_| fs::read_to_string(format!("{base}/../queue/rotational")))
        .ok()?;
    Some(text.trim() == "1")
}

/// Whether this process runs as root (effective uid 0): the OS page cache can be dropped,
/// memory cgroups made, loop devices set up and servers started as their system users.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A port on 127.0.0.1 that nothing listens on now (the OS picks it).
///
/// Errors: [`ServerError::Io`] when no socket can be bound.
pub fn free_port() -> Result<u16, ServerError> {
    let l =
        TcpListener::bind("127.0.0.1:0").map_err(|e| ServerError::io("binding 127.0.0.1:0", e))?;
    Ok(l.local_addr()
        .map_err(|e| ServerError::io("reading the bound port", e))?
        .port())
}

pub(crate) fn chown(path: &Path, owner: Option<(u32, u32)>) -> Result<(), ServerError> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .map_err(|e| ServerError::io(&format!("chown {}", path.display()), e))?;
    }
    Ok(())
}

/// A command run as `owner` (when root), in its own process group, killed with `deathsig`
/// if mvcclab dies.
pub(crate) fn command(program: &Path, owner: Option<(u32, u32)>, deathsig: i32) -> Command {
    let mut c = Command::new(program);
    if let Some((uid, gid)) = owner {
        // std clears the supplementary groups before setuid (setgroups(0)).
        c.uid(uid).gid(gid);
    }
    c.process_group(0);
    // SAFETY: prctl is async-signal-safe; runs in the child after the uid change, so the
    // setting is not cleared by it.
    unsafe {
        c.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, deathsig as libc::c_ulong);
            Ok(())
        });
    }
    c.env("LC_ALL", "C");
    c
}

/// Runs a set-up command to its end; its output goes to `log`.
fn run_setup(mut c: Command, what: &str, log: &Path) -> Result<(), ServerError> {
    let out = fs::File::create(log)
        .map_err(|e| ServerError::io(&format!("creating {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| ServerError::io("duplicating a log handle", e))?;
    let status = c
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| ServerError::io(what, e))?;
    if !status.success() {
        return Err(ServerError::Start {
            server: what.to_string(),
            detail: format!("exited with {status}; its output:\n{}", log_tail(log)),
        });
    }
    Ok(())
}

/// Waits until a process started in the background listens on 127.0.0.1:`port`, polling
/// every 50 ms for at most `timeout`; `child` becomes `None` if the process exits first.
/// `logs` gives the text (log tails) an error message ends with.
///
/// Errors: [`ServerError::Start`] naming `server` when the process exits while starting
/// (with its exit status) or is not listening after `timeout`.
pub(crate) fn wait_listening(
    child: &mut Option<Child>,
    port: u16,
    timeout: Duration,
    server: &str,
    logs: &dyn Fn() -> String,
) -> Result<(), ServerError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(Ok(Some(status))) = child.as_mut().map(|c| c.try_wait()) {
            *child = None;
            return Err(ServerError::Start {
                server: server.to_string(),
                detail: format!("exited with {status} while starting; {}", logs()),
            });
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(ServerError::Start {
                server: server.to_string(),
                detail: format!(
                    "not listening on 127.0.0.1:{port} after {} s; {}",
                    timeout.as_secs(),
                    logs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of a log file, for error messages.
pub fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

pub(crate) fn require(path: &str, package: &str) -> Result<PathBuf, ServerError> {
    let p = PathBuf::from(path);
    if p.exists() {
        Ok(p)
    } else {
        Err(ServerError::NotInstalled {
            program: path.to_string(),
            package: package.to_string(),
        })
    }
}

impl ManagedServer {
    /// Creates the server's folder, initializes a data directory and starts the server,
    /// waiting (up to 120 s) until it accepts connections on 127.0.0.1.
    ///
    /// PostgreSQL: `initdb --auth=trust --no-sync --data-checksums -E UTF8 --locale=C`
    /// (checksums on, as every mvcclab page has one: so hint-bit changes log full-page
    /// images on both sides, bufmgr.c `MarkBufferDirtyHint`), then `postgres -D`
    /// with `checkpoint_timeout=1d` and `max_wal_size=100GB` (no checkpoint falls inside a
    /// run unless asked; postgresql.conf "Checkpoints"). MariaDB: `mariadb-install-db`,
    /// then `mariadbd --no-defaults` with `--skip-grant-tables`, `innodb_flush_method=
    /// O_DIRECT`, `innodb_log_file_size=1G` and every InnoDB monitor counter enabled.
    /// MyRocks: the same MariaDB with `plugin-load-add=ha_rocksdb.so` (Debian's
    /// mariadb-plugin-rocksdb), `rocksdb_block_cache_size` = the buffer pool and
    /// `default_storage_engine=ROCKSDB`.
    ///
    /// Errors: [`ServerError::NotInstalled`] (with the apt-get command),
    /// [`ServerError::Start`] with the tail of the server's log, [`ServerError::Io`].
    pub fn start(kind: ServerKind, o: &ManagedOptions) -> Result<ManagedServer, ServerError> {
        let (user, programs) = match kind {
            ServerKind::PostgreSql => (
                "postgres",
                vec![
                    require("/usr/lib/postgresql/15/bin/initdb", "postgresql-15")?,
                    require("/usr/lib/postgresql/15/bin/postgres", "postgresql-15")?,
                ],
            ),
            ServerKind::MariaDb | ServerKind::MyRocks => (
                "mysql",
                vec![
                    require("/usr/bin/mariadb-install-db", "mariadb-server")?,
                    require("/usr/sbin/mariadbd", "mariadb-server")?,
                ],
            ),
        };
        if kind == ServerKind::MyRocks {
            require(MYROCKS_PLUGIN, kind.package())?;
        }
        let owner = if is_root() {
            Some(system_user(user).ok_or_else(|| ServerError::NotInstalled {
                program: format!("system user '{user}'"),
                package: kind.package().to_string(),
            })?)
        } else {
            None
        };
        let base = o.base_dir.clone().unwrap_or_else(std::env::temp_dir);
        fs::create_dir_all(&base)
            .map_err(|e| ServerError::io(&format!("creating {}", base.display()), e))?;
        let scratch = tempfile::Builder::new()
            .prefix(&format!("mvcclab-{}-", kind.name()))
            .tempdir_in(&base)
            .map_err(|e| ServerError::io(&format!("creating a folder in {}", base.display()), e))?;
        let dir = scratch.path().to_path_buf();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))
            .map_err(|e| ServerError::io("chmod of the server folder", e))?;
        let device = match &o.device {
            Some(_) if o.exact_device_io => {
                return Err(ServerError::Usage(
                    "the FUSE device and --exact-device-io both measure the device: choose one"
                        .into(),
                ))
            }
            Some(cfg) => {
                let d = DevMount::mount(&dir.join("device"), cfg)
                    .map_err(|e| ServerError::Fuse(e.to_string()))?;
                if o.block_device {
                    d.map_blocks_of("device.img");
                }
                Some(d)
            }
            None => None,
        };
        let loopdev = match &device {
            _ if o.exact_device_io => Some(LoopDevice::create(&dir, o.device_size_bytes)?),
            Some(d) if o.block_device => Some(LoopDevice::create_on(
                &dir,
                d.dir(),
                o.device_size_bytes,
                true,
                Some(o.rotational),
            )?),
            _ => None,
        };
        let home = match (&loopdev, &device) {
            (Some(l), _) => l.mount_point().to_path_buf(),
            (None, Some(d)) => d.dir().to_path_buf(),
            (None, None) => dir.clone(),
        };
        chown(&dir, owner)?;
        chown(&home, owner)?;
        let data = home.join("data");
        let port = free_port()?;
        let log = dir.join("server.log");
        let mut settings: Vec<(String, String)> = Vec::new();
        let (deathsig, args) = match kind {
            ServerKind::PostgreSql => {
                let mut init = command(&programs[0], owner, libc::SIGKILL);
                init.arg("-D")
                    .arg(&data)
                    .args([
                        "-U",
                        "postgres",
                        "--auth=trust",
                        "--no-sync",
                        "--data-checksums",
                    ])
                    .args(["-E", "UTF8"])
                    .arg("--locale=C");
                match &o.restore_from {
                    Some(saved) => copy_tree(saved, &data)?,
                    None => run_setup(init, "initdb", &dir.join("initdb.log"))?,
                }
                let shared_buffers_kb = (o.buffer_pool_bytes / 1024).max(128);
                settings.extend(
                    [
                        ("port", port.to_string()),
                        ("listen_addresses", "127.0.0.1".into()),
                        ("unix_socket_directories", dir.display().to_string()),
                        ("shared_buffers", format!("{shared_buffers_kb}kB")),
                        ("checkpoint_timeout", format!("{PG_CHECKPOINT_TIMEOUT_S}s")),
                        ("max_wal_size", format!("{}MB", PG_MAX_WAL_SIZE_BYTES >> 20)),
                        ("log_checkpoints", "on".into()),
                        ("log_autovacuum_min_duration", "0".into()),
                    ]
                    .map(|(k, v)| (k.to_string(), v)),
                );
                settings.extend(o.extra_settings.iter().cloned());
                let mut args = vec!["-D".into(), data.clone().into_os_string()];
                for (k, v) in &settings {
                    args.push("-c".into());
                    args.push(format!("{k}={v}").into());
                }
                (libc::SIGQUIT, args)
            }
            ServerKind::MariaDb | ServerKind::MyRocks => {
                // Invariant 5: internal temporary tables and sort files that spill
                // (`tmpdir`, MariaDB KB "Server System Variables") go to `tmp` beside the
                // data directory (on the device when there is one, as PostgreSQL's
                // base/pgsql_tmp is inside its data directory), owned by the server's user.
                // The bootstrap server of `mariadb-install-db` takes its tmpdir from
                // `TMPDIR` (mysys `create_temp_file`); one its user cannot write, such as a
                // root-owned 0755 folder, fails InnoDB's start ("Unable to create temporary
                // file", errno 13) and with it the install, so it gets the same folder. A
                // folder of its own also keeps concurrent installs apart: three
                // `mariadb-install-db` at once sharing /tmp failed 4 of 12 times ("Unknown
                // table 'mysql.tmp_user_sys'", the bootstrap script's temporary tables; the
                // intermittent start failures of tests that start servers side by side),
                // each with its own TMPDIR 0 of 15 (measured by hand, 2026-11-27).
                let tmp = home.join("tmp");
                fs::create_dir_all(&tmp).map_err(|e| ServerError::io("creating the tmpdir", e))?;
                chown(&tmp, owner)?;
                if let Some(saved) = &o.restore_from {
                    copy_tree(saved, &data)?;
                } else {
                    fs::create_dir_all(&data)
                        .map_err(|e| ServerError::io("creating the datadir", e))?;
                    chown(&data, owner)?;
                    let mut init = command(&programs[0], owner, libc::SIGKILL);
                    init.arg("--no-defaults")
                        .arg(format!("--datadir={}", data.display()))
                        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
                        .env("TMPDIR", &tmp);
                    run_setup(init, "mariadb-install-db", &dir.join("install-db.log"))?;
                }
                if let (Some(d), None) = (&device, &loopdev) {
                    // File-system mode: ibdata1 counted by what each request touches.
                    let part = crate::file_class::system_tablespace_parts(&data.join("ibdata1"))?;
                    d.split_file("data/ibdata1", part)
                        .map_err(|e| ServerError::io("splitting ibdata1's counts", e))?;
                }
                if let (Some(d), ServerKind::MariaDb) = (&device, kind) {
                    // Either mode: InnoDB's reads and writes by index, found by checksum
                    // (mvcclab_devfs::DeviceCounts::innodb_pages).
                    d.count_innodb_pages();
                }
                let pool = o.buffer_pool_bytes.max(6 << 20);
                // innodb_lru_scan_depth is also the number of free pages the page cleaner
                // keeps (buf0flu.cc, buf_flush_page_cleaner; MariaDB KB
                // "innodb_lru_scan_depth"). Its default, 1536, is 19 % of the default
                // 128 MiB pool but 300 % of an 8 MiB one, where the page cleaner then evicts
                // without pause (measured: hit ratio 0.75 on a table that fits). Scale it
                // with the pool as at the default size, no lower than its minimum 100.
                let lru_scan_depth = (pool / 16384 * 1536 / 8192).clamp(100, 1536);
                settings.extend(
                    [
                        ("port", port.to_string()),
                        ("bind-address", "127.0.0.1".into()),
                        ("socket", dir.join("mysqld.sock").display().to_string()),
                        ("pid-file", dir.join("mysqld.pid").display().to_string()),
                        ("log-error", log.display().to_string()),
                        ("skip-grant-tables", "ON".into()),
                        ("innodb-buffer-pool-size", pool.to_string()),
                        ("innodb-flush-method", "O_DIRECT".into()),
                        ("innodb-log-file-size", (1u64 << 30).to_string()),
                        ("innodb-doublewrite", "ON".into()),
                        ("innodb-lru-scan-depth", lru_scan_depth.to_string()),
                        ("innodb-monitor-enable", "all".into()),
                        ("innodb-buffer-pool-load-at-startup", "OFF".into()),
                        ("innodb-buffer-pool-dump-at-shutdown", "OFF".into()),
                    ]
                    .map(|(k, v)| (k.to_string(), v)),
                );
                if kind == ServerKind::MyRocks {
                    // MyRocks as Debian's mariadb-plugin-rocksdb installs it (its
                    // rocksdb.cnf holds only `plugin-load-add=ha_rocksdb.so`, which
                    // --no-defaults skips). The block cache is MyRocks' buffer pool
                    // (MariaDB KB "MyRocks System Variables": rocksdb_block_cache_size);
                    // reads go through the OS page cache (rocksdb_use_direct_reads OFF,
                    // the default, recorded in the report's settings). InnoDB keeps its
                    // pool for the system tables.
                    settings.extend(
                        [
                            ("plugin-load-add", "ha_rocksdb.so".to_string()),
                            ("rocksdb-block-cache-size", pool.to_string()),
                            ("default-storage-engine", "ROCKSDB".to_string()),
                        ]
                        .map(|(k, v)| (k.to_string(), v)),
                    );
                }
                settings.push(("tmpdir".into(), tmp.display().to_string()));
                settings.extend(o.extra_settings.iter().cloned());
                let mut args: Vec<std::ffi::OsString> = vec![
                    "--no-defaults".into(),
                    format!("--datadir={}", data.display()).into(),
                ];
                for (k, v) in &settings {
                    args.push(format!("--{k}={v}").into());
                }
                (libc::SIGKILL, args)
            }
        };
        let launch = Launch {
            program: programs[1].clone(),
            owner,
            deathsig,
            args,
            log: log.clone(),
        };
        let cgroup = o
            .memory_limit_bytes
            .map(|limit| MemoryCgroup::create(&format!("mvcclab-{}-{port}", kind.name()), limit))
            .transpose()?;
        let child = launch.spawn_into(cgroup.as_ref())?;
        if let Some(limit) = o.memory_limit_bytes {
            let text = if limit == u64::MAX {
                "none until the first bound".to_string()
            } else {
                limit.to_string()
            };
            settings.push(("memory_cgroup_limit_bytes".into(), text));
        }
        let mut m = ManagedServer {
            kind,
            child: Some(child),
            port,
            dir,
            data,
            _scratch: Some(scratch),
            loopdev,
            device,
            settings,
            restored: o.restore_from.is_some(),
            cgroup,
            launch,
        };
        m.wait_ready(&log)?;
        Ok(m)
    }

    /// Stops the server process (PostgreSQL's shutdown checkpoint; InnoDB's shutdown),
    /// runs `while_down` (e.g. [`PageCacheScope::drop`], for a cold kernel
    /// cache), and starts it again on the same data directory, port and settings, its
    /// devices left mounted, so that its buffer pool starts empty (a cold start). Clients
    /// must connect again.
    ///
    /// Errors: [`ServerError::Io`] when the process cannot be stopped or started;
    /// [`ServerError::Usage`] after [`ManagedServer::stop`]; `while_down`'s (the server
    /// then stays down); a server that does not come up (with its log's tail).
    pub fn restart_with(
        &mut self,
        while_down: impl FnOnce() -> Result<(), ServerError>,
    ) -> Result<(), ServerError> {
        if self.child.is_none() {
            return Err(ServerError::Usage(format!(
                "{}: restarting a server that was stopped",
                self.kind.name()
            )));
        }
        self.stop_process()?;
        while_down()?;
        self.child = Some(self.launch.spawn_into(self.cgroup.as_ref())?);
        let log = self.launch.log.clone();
        self.wait_ready(&log)
    }

    fn wait_ready(&mut self, log: &Path) -> Result<(), ServerError> {
        // A port accepting connections is not yet a server accepting queries (PostgreSQL
        // answers "the database system is starting up"); the targets retry their first
        // connection.
        wait_listening(
            &mut self.child,
            self.port,
            Duration::from_secs(120),
            self.kind.name(),
            &|| format!("its log:\n{}", log_tail(log)),
        )
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id of the server (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The server's folder (data directory, log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's data directory (PostgreSQL's `-D`, MariaDB's `--datadir`).
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// Whether the server sees the storage under its data directory as rotational: the
    /// block device's `queue/rotational` in sysfs (the whole disk's for a partition).
    /// Without a block device (the FUSE device in file-system mode: an anonymous device,
    /// major 0) MariaDB concludes rotational — it lists the non-rotational devices of
    /// `/sys/block` at start-up and treats a file on any other device as rotational
    /// (fil0fil.cc `fil_system_t::create`, `fil_node_t::find_metadata` →
    /// `fil_system_t::is_ssd`), so it flushes neighbours there; PostgreSQL reads no such
    /// flag (`None`).
    pub fn rotational(&self) -> Option<bool> {
        use std::os::unix::fs::MetadataExt;
        let dev = fs::metadata(&self.data).ok()?.dev();
        if libc::major(dev) == 0 {
            return (self.kind != ServerKind::PostgreSql).then_some(true);
        }
        storage_rotational(&self.data)
    }

    /// The files whose page cache is this server's ([`PageCacheScope`]): the folder
    /// holding its data directory (on the device when it has one, with MariaDB's `tmpdir`)
    /// and its loop device. `page_cache_scope().drop()` makes its next reads cold without
    /// touching other processes' cached files, as `drop_caches` would.
    pub fn page_cache_scope(&self) -> PageCacheScope {
        PageCacheScope {
            home: self.data.parent().unwrap_or(&self.data).to_path_buf(),
            block_device: self.loopdev.as_ref().map(|l| l.device().to_path_buf()),
        }
    }

    /// The loop device holding its files, with `exact_device_io`.
    pub fn loop_device(&self) -> Option<&LoopDevice> {
        self.loopdev.as_ref()
    }

    /// The FUSE device holding its data directory, with [`ManagedOptions::device`].
    pub fn device(&self) -> Option<&DevMount> {
        self.device.as_ref()
    }

    /// The memory cgroup's memory now ([`CgroupMemory`]: usage, page cache, limit, times
    /// the limit was hit); `None` without [`ManagedOptions::memory_limit_bytes`] or when its
    /// files cannot be read.
    pub fn cgroup_memory(&self) -> Option<CgroupMemory> {
        self.cgroup.as_ref()?.memory()
    }

    /// Bounds the server's page cache to `page_cache_bytes`: sets the memory cgroup's
    /// `memory.limit_in_bytes` to the server's own memory now (everything charged but the
    /// page cache, plus the shared memory its main process has mapped but not yet touched:
    /// [`CgroupMemory::own_bytes`], [`shared_mapping_bytes`]) + `page_cache_bytes`, so that the kernel's
    /// cache of its files is as large as the preset's emulated OS cache, whatever its
    /// processes use (shared buffers, backends' private memory, kernel memory). A limit
    /// below the usage makes the kernel reclaim page cache first (clean file pages; v1
    /// `mem_cgroup_resize_max`). Called at the start of each measured phase, when the
    /// server's memory is what the phase starts with; a backend started in the phase adds
    /// its memory and takes that much from the page cache (the reports show the page cache
    /// read during the phase). Returns the memory read before and the limit set; `None`
    /// without a cgroup.
    ///
    /// Errors: [`ServerError::Io`] when the cgroup's files cannot be read or the limit
    /// written (the kernel refuses a limit it cannot reclaim down to with EBUSY).
    pub fn bound_page_cache(
        &self,
        page_cache_bytes: u64,
    ) -> Result<Option<(CgroupMemory, u64)>, ServerError> {
        let Some(g) = self.cgroup.as_ref() else {
            return Ok(None);
        };
        let m = g.memory().ok_or_else(|| {
            ServerError::io(
                &format!("reading the memory cgroup {}", g.dir.display()),
                std::io::Error::other("memory.usage_in_bytes or memory.stat unreadable"),
            )
        })?;
        // Shared memory is charged to the group when a page of it is first touched: after
        // a restart few of PostgreSQL's shared buffers have been, and those touched during
        // the phase would come out of the page cache. Count the part not yet charged as
        // the server's own (its main process's shared mappings − the group's `shmem`).
        let mapped = self
            .pid()
            .and_then(|pid| fs::read_to_string(format!("/proc/{pid}/maps")).ok())
            .map(|t| shared_mapping_bytes(&t))
            .unwrap_or(0);
        let m = CgroupMemory {
            untouched_shared_bytes: mapped.saturating_sub(m.shmem_bytes),
            ..m
        };
        let limit = m.limit_for_page_cache(page_cache_bytes);
        g.write("memory.limit_in_bytes", &limit.to_string())?;
        Ok(Some((m, limit)))
    }

    /// Whether its data directory was copied from a saved one
    /// ([`ManagedOptions::restore_from`]): the `sbtest` database is already there.
    pub fn restored(&self) -> bool {
        self.restored
    }

    /// Saves the data directory for later starts ([`ManagedOptions::restore_from`]): stops
    /// the server (its shutdown checkpoint: PostgreSQL's shutdown checkpoint, InnoDB's
    /// flush at a slow-enough shutdown, `innodb_fast_shutdown=1`), then copies the data
    /// directory to `to` (`cp -a --sparse=always`: owner, mode and holes kept). The server
    /// stays stopped; its devices stay mounted until [`ManagedServer::stop`] or drop.
    ///
    /// Errors: [`ServerError::Io`] when the process cannot be waited for or the copy
    /// fails (the message names both directories).
    pub fn save_data(&mut self, to: &Path) -> Result<(), ServerError> {
        self.stop_process()?;
        copy_tree(&self.data, to)
    }

    /// Stops the server process (as [`ManagedServer::stop`]) and leaves its devices.
    fn stop_process(&mut self) -> Result<(), ServerError> {
        if let Some(mut c) = self.child.take() {
            let sig = match self.kind {
                ServerKind::PostgreSql => libc::SIGINT,
                ServerKind::MariaDb | ServerKind::MyRocks => libc::SIGTERM,
            };
            stop_child(&mut c, sig, Duration::from_secs(60), "the server")?;
        }
        Ok(())
    }

    /// Stops the server by its process id: fast shutdown (PostgreSQL SIGINT, MariaDB
    /// SIGTERM), SIGKILL if it has not exited after 60 s; then releases the loop device or
    /// unmounts the FUSE device.
    ///
    /// The device's throttle is turned off first: what the shutdown writes (PostgreSQL's
    /// shutdown checkpoint, InnoDB's flush of every dirty page through the doublewrite
    /// buffer, ext4's write-back at unmount) is never part of a measured phase, and at
    /// 1 MiB/s it took up to the 60 s grace per run, after which InnoDB was killed anyway
    /// (issue 26: a restored server of `bandwidth_sweep` is thrown away after its point).
    ///
    /// Errors: [`ServerError::Io`] when the process cannot be waited for.
    pub fn stop(&mut self) -> Result<(), ServerError> {
        if let Some(d) = &self.device {
            d.set_throttling(false);
        }
        self.stop_process()?;
        self.cgroup = None;
        if let Some(l) = self.loopdev.take() {
            l.release()?;
        }
        if let Some(d) = self.device.take() {
            d.unmount()
                .map_err(|e| ServerError::Fuse(format!("unmounting: {e}")))?;
        }
        Ok(())
    }
}

/// Stops child process `c` by its pid: signal `sig`, then SIGKILL if it has not exited
/// after `grace`; waits for it either way.
///
/// Errors: [`ServerError::Io`] when it cannot be waited for (naming `what`).
pub fn stop_child(c: &mut Child, sig: i32, grace: Duration, what: &str) -> Result<(), ServerError> {
    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet waited
    // for, so it cannot have been reused.
    unsafe { libc::kill(c.id() as libc::pid_t, sig) };
    let deadline = Instant::now() + grace;
    loop {
        match c.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = c.kill();
                let _ = c.wait();
                return Ok(());
            }
            Err(e) => return Err(ServerError::io(&format!("waiting for {what} to stop"), e)),
        }
    }
}

/// Copies the directory `from` to `to` (which must not exist) with `cp -a
/// --sparse=always`: owner, group, mode and sparse files kept, as the server left them.
///
/// Errors: [`ServerError::Io`] when `cp` cannot run or fails (with its message).
fn copy_tree(from: &Path, to: &Path) -> Result<(), ServerError> {
    let out = Command::new("cp")
        .args(["-a", "--sparse=always"])
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| ServerError::io("running cp", e))?;
    if !out.status.success() {
        return Err(ServerError::io(
            &format!("copying {} to {}", from.display(), to.display()),
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ));
    }
    Ok(())
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's main segment (a shared anonymous mapping) and its System V header are
    /// counted; private anonymous memory, files and malformed lines are not.
    #[test]
    fn shared_mappings_of_a_maps_file() {
        let maps = "\
55d1a0000000-55d1a0100000 r-xp 00000000 08:01 123 /usr/lib/postgresql/15/bin/postgres
7f0000000000-7f0001600000 rw-s 00000000 00:01 6734                       /dev/zero (deleted)
7f0002000000-7f0002001000 rw-s 00000000 00:01 32769                      /SYSV0052e2c1 (deleted)
7f0003000000-7f0003800000 rw-p 00000000 00:00 0
zzzz-yyyy rw-s 00000000 00:01 1 /dev/zero (deleted)
";
        assert_eq!(shared_mapping_bytes(maps), 0x1600000 + 0x1000);
        let m = CgroupMemory {
            usage_bytes: 40 << 20,
            file_bytes: 10 << 20,
            untouched_shared_bytes: 8 << 20,
            ..Default::default()
        };
        assert_eq!(m.own_bytes(), 38 << 20);
        assert_eq!(m.limit_for_page_cache(48 << 20), 86 << 20);
    }

    #[test]
    fn free_ports_are_bindable() {
        let p = free_port().unwrap();
        assert!(p > 0);
        assert!(TcpListener::bind(("127.0.0.1", p)).is_ok());
    }

    #[test]
    fn missing_programs_name_the_package() {
        let e = require("/nonexistent/bin/postgres", "postgresql-15").unwrap_err();
        let m = e.to_string();
        assert!(m.contains("apt-get install -y postgresql-15"), "{m}");
    }

    /// A real PostgreSQL group's memory.stat (read during a version_chain run, 2026-11-26):
    /// 16 MiB of shared memory on the anon lists is in v1's `cache` but not page cache.
    const PG_STAT: &str = "cache 167772160\nrss 9437184\nrss_huge 0\nshmem 16777216\n\
        mapped_file 18874368\ninactive_anon 16777216\nactive_anon 9437184\n\
        inactive_file 100663296\nactive_file 50331648\nunevictable 0\n";

    #[test]
    fn page_cache_is_the_file_lists_not_v1_cache() {
        let usage = 9437184 + 167772160 + (2 << 20);
        let m = CgroupMemory::from_stat(usage, PG_STAT, u64::MAX, 0);
        assert_eq!(m.file_bytes, 100663296 + 50331648);
        assert_eq!(m.shmem_bytes, 16 << 20);
        // Shared memory, anonymous and kernel memory are the server's own.
        assert_eq!(m.own_bytes(), (9 << 20) + (16 << 20) + (2 << 20));
    }

    #[test]
    fn the_limit_leaves_exactly_the_requested_page_cache() {
        let usage = 9437184 + 167772160 + (2 << 20);
        let m = CgroupMemory::from_stat(usage, PG_STAT, u64::MAX, 0);
        let limit = m.limit_for_page_cache(64 << 20);
        // Under the limit, the page cache can take what the server's own memory leaves.
        assert_eq!(limit - m.own_bytes(), 64 << 20);
        // The old fixed headroom (pool 8 + cache 64 + 96 MiB) left 141 MiB.
        assert_eq!((8u64 + 64 + 96) * (1 << 20) - m.own_bytes(), 141 << 20);
        // A group with more page cache than usage (cannot happen) does not underflow.
        let odd = CgroupMemory::from_stat(1, PG_STAT, u64::MAX, 0);
        assert_eq!(odd.own_bytes(), 0);
        assert_eq!(odd.limit_for_page_cache(64 << 20), 64 << 20);
    }

    #[test]
    fn no_limit_is_written_as_minus_one() {
        assert_eq!(limit_text(u64::MAX), "-1");
        assert_eq!(limit_text(176160768), "176160768");
    }

    #[test]
    fn system_user_reads_passwd() {
        assert_eq!(system_user("root"), Some((0, 0)));
        assert_eq!(system_user("no-such-user-mvcclab"), None);
    }
}

#[cfg(test)]
mod page_cache_scope_tests {
    use super::{storage_rotational, PageCacheScope};
    use std::io::{Read, Write};
    use std::path::Path;

    /// Pages of `path` in the page cache, by `mincore` over a shared read-only mapping.
    fn cached_pages(path: &Path) -> usize {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(path).unwrap();
        let len = f.metadata().unwrap().len() as usize;
        let page = 4096;
        let mut vec = vec![0u8; len.div_ceil(page)];
        // SAFETY: a read-only shared mapping of an open file of `len` bytes, unmapped
        // below; `vec` has one byte per page of it, as mincore requires.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
            libc::munmap(p, len);
        }
        vec.iter().filter(|b| **b & 1 == 1).count()
    }

    fn write_and_read(path: &Path) {
        let mut f = std::fs::File::create(path).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let mut back = Vec::new();
        std::fs::File::open(path)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
    }

    /// tmpfs has no block device, so no rotational flag, also for a path below it that
    /// does not exist yet (its nearest existing ancestor decides).
    #[test]
    fn storage_rotational_is_none_without_a_block_device() {
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        assert_eq!(storage_rotational(shm.path()), None);
        assert_eq!(storage_rotational(&shm.path().join("not/yet")), None);
    }

    /// The scope's files, nested ones included, leave the page cache; a file outside it
    /// stays (what `drop_caches` would not leave).
    #[test]
    fn drop_empties_the_scope_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        // On tmpfs the page cache is the file's only copy: nothing can leave it.
        let c = std::ffi::CString::new(tmp.path().as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a zeroed statfs for the call to fill.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
        if st.f_type == libc::TMPFS_MAGIC {
            eprintln!("skipped: the temp directory is on tmpfs");
            return;
        }
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join("data/base")).unwrap();
        let inside = home.join("data/base/16384");
        let outside = tmp.path().join("other");
        write_and_read(&inside);
        write_and_read(&outside);
        if cached_pages(&inside) == 0 {
            eprintln!("skipped: this file system keeps no page cache for a fresh file");
            return;
        }
        PageCacheScope {
            home: home.clone(),
            block_device: None,
        }
        .drop()
        .unwrap();
        assert_eq!(
            cached_pages(&inside),
            0,
            "a file in the scope stayed cached"
        );
        assert_eq!(
            cached_pages(&outside),
            256,
            "a file outside the scope left the cache"
        );
        // A scope whose folder is gone is not an error (a server that removed it).
        PageCacheScope {
            home: tmp.path().join("gone"),
            block_device: None,
        }
        .drop()
        .unwrap();
    }
}
