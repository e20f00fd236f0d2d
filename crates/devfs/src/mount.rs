//! Mounting the device: checks that say what is missing, the cleaning of a stale mount,
//! the FUSE session, and the unmount on drop.
//!
//! # Crash safety
//! The mount is made with `auto_unmount` (through `fusermount3`, which stays beside the
//! daemon and unmounts when the daemon's `/dev/fuse` descriptor closes), so a killed run
//! leaves no mount. A mount left by an older kind of stop (`Transport endpoint is not
//! connected`) is detached lazily before mounting again, which never waits on the dead
//! daemon.

use crate::backing::SparseBacking;
use crate::counts::DeviceCounts;
use crate::fs::{DevFs, FsHandle};
use fuser::{BackgroundSession, Config, MountOption, SessionACL};
use mvcclab_engine::device::{
    Compression, DeviceError, Nvme, NvmeConfig, Throttle, ThrottleConfig,
};
use mvcclab_engine::stats::Stats;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the device behaves and where its bytes live.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceConfig {
    /// Largest request (`iop_max_bytes`), throttle and compression: the presets' device
    /// settings. `nvme.throttle` applies only while throttling is on
    /// ([`DevMount::set_throttling`]; see `throttle_from_mount`).
    pub nvme: NvmeConfig,
    /// Keep the files' bytes in this directory (`--data-dir`) instead of memory.
    pub data_dir: Option<PathBuf>,
    /// Throttle from the mount on (hand use); otherwise only once turned on.
    pub throttle_from_mount: bool,
    /// FUSE request threads (at least 1; 0 means 4): requests served at once, the most a
    /// queue depth above 1 can overlap.
    pub threads: usize,
}

impl DeviceConfig {
    /// A device with `bandwidth_mib_s` per direction, `latency_us` per request and
    /// `compression`, everything else at the presets' defaults.
    pub fn new(
        bandwidth_mib_s: Option<f64>,
        latency_us: Option<u64>,
        compression: Compression,
    ) -> Self {
        DeviceConfig {
            nvme: NvmeConfig {
                throttle: ThrottleConfig {
                    read_mib_s: bandwidth_mib_s,
                    write_mib_s: bandwidth_mib_s,
                    latency_us,
                    queue_depth: None,
                },
                compression,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

/// Why the device could not be mounted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MountError {
    /// `/dev/fuse` is absent.
    #[error("no /dev/fuse on this machine: load the fuse module (`modprobe fuse`) or give the container the device (`--device /dev/fuse`)")]
    NoFuseDevice,
    /// `fusermount3` is not installed (needed for `auto_unmount`).
    #[error("fusermount3 not found: install it with `apt-get install fuse3`")]
    NoFusermount,
    /// Mounting needs root here (or a FUSE configuration that allows `allow_other`).
    #[error("mounting {path} was refused ({source}): run as root, or set `user_allow_other` in /etc/fuse.conf")]
    Permission {
        /// The mount point.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The device settings are out of range.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// Any other failure of the operating system, with what was being done.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl MountError {
    /// True when the cause is the machine's set-up (no FUSE, no fusermount3, no
    /// permission) rather than a failure: a command exits 2 for these.
    pub fn is_setup(&self) -> bool {
        matches!(
            self,
            MountError::NoFuseDevice | MountError::NoFusermount | MountError::Permission { .. }
        )
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> MountError {
    let what = what.into();
    move |source| MountError::Io { what, source }
}

/// Where `fusermount3` is on the PATH (where `fuser` looks for it), if anywhere.
pub fn fusermount3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("fusermount3"))
        .find(|p| p.is_file())
}

/// Checks the machine can mount the device; the error says what to install or run.
///
/// Errors: [`MountError::NoFuseDevice`], [`MountError::NoFusermount`].
pub fn check_fuse() -> Result<PathBuf, MountError> {
    if !Path::new("/dev/fuse").exists() {
        return Err(MountError::NoFuseDevice);
    }
    fusermount3().ok_or(MountError::NoFusermount)
}

/// Whether `dir` is a mount point now, from `/proc/self/mountinfo` (field 5, with the
/// kernel's octal escapes for spaces and the like).
pub fn is_mounted(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = dir.to_string_lossy();
    text.lines().any(|l| {
        l.split(' ')
            .nth(4)
            .is_some_and(|m| unescape_mountinfo(m) == want)
    })
}

fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Lazily detaches whatever is mounted at `dir` (umount2 with MNT_DETACH: never waits on
/// a dead daemon), then waits up to 5 s for the mount table to show it gone.
fn detach(dir: &Path) -> Result<(), MountError> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        io(format!("mount point {}", dir.display()))(std::io::ErrorKind::InvalidInput.into())
    })?;
    // SAFETY: `c` is a valid NUL-terminated path; umount2 reads it and nothing else.
    let r = unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(MountError::Io {
                what: format!("unmounting the stale mount at {}", dir.display()),
                source: e,
            });
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while is_mounted(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The device mounted at a directory. Dropping it unmounts (and waits until the mount
/// table no longer shows it, at most 5 s).
pub struct DevMount {
    dir: PathBuf,
    fs: Arc<DevFs>,
    session: Option<BackgroundSession>,
    config: DeviceConfig,
}

impl std::fmt::Debug for DevMount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevMount")
            .field("dir", &self.dir)
            .field("config", &self.config)
            .finish()
    }
}

impl DevMount {
    /// Mounts a new, empty device at `dir` (created if absent; a stale mount there is
    /// detached first) with `allow_other`, `default_permissions` and `auto_unmount`.
    ///
    /// Errors: [`MountError::NoFuseDevice`], [`MountError::NoFusermount`],
    /// [`MountError::Permission`], [`MountError::Device`] (settings out of range, the
    /// backing directory unusable), [`MountError::Io`].
    pub fn mount(dir: &Path, config: &DeviceConfig) -> Result<DevMount, MountError> {
        check_fuse()?;
        std::fs::create_dir_all(dir)
            .or_else(|e| {
                // A dead FUSE mount answers ENOTCONN to everything; it is cleaned below.
                if e.raw_os_error() == Some(libc::ENOTCONN)
                    || e.kind() == std::io::ErrorKind::AlreadyExists
                {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .map_err(io(format!("creating {}", dir.display())))?;
        let abs = std::path::absolute(dir).map_err(io(format!("resolving {}", dir.display())))?;
        if is_mounted(&abs) {
            detach(&abs)?;
        }
        let backing = Arc::new(match &config.data_dir {
            Some(d) => SparseBacking::directory(d)?,
            None => SparseBacking::memory(),
        });
        let unthrottled = NvmeConfig {
            throttle: ThrottleConfig::default(),
            ..config.nvme.clone()
        };
        config.nvme.throttle.validate()?;
        let nvme = Nvme::new(
            Box::new(backing.clone()),
            &unthrottled,
            Arc::new(Stats::new()),
        )?;
        let fs = Arc::new(DevFs::new(
            nvme,
            backing,
            Throttle::new(&config.nvme.throttle),
            config.nvme.iop_max_bytes,
        )?);
        fs.set_throttling(config.throttle_from_mount);
        let mut cfg = Config::default();
        cfg.mount_options = vec![
            MountOption::FSName("mvcclab".into()),
            MountOption::Subtype("mvcclab".into()),
            MountOption::AutoUnmount,
            MountOption::DefaultPermissions,
            MountOption::Dev,
            MountOption::Suid,
        ];
        cfg.acl = SessionACL::All;
        cfg.n_threads = Some(if config.threads == 0 {
            4
        } else {
            config.threads
        });
        cfg.clone_fd = true;
        let session = fuser::spawn_mount2(FsHandle(fs.clone()), &abs, &cfg).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                MountError::Permission {
                    path: abs.clone(),
                    source: e,
                }
            } else {
                MountError::Io {
                    what: format!("mounting the device at {}", abs.display()),
                    source: e,
                }
            }
        })?;
        let m = DevMount {
            dir: abs,
            fs,
            session: Some(session),
            config: config.clone(),
        };
        // The mount is made by fusermount3 in the background: wait until it shows.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !is_mounted(&m.dir) {
            if Instant::now() > deadline {
                return Err(MountError::Io {
                    what: format!("waiting for the mount at {}", m.dir.display()),
                    source: std::io::ErrorKind::TimedOut.into(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(m)
    }

    /// The mount point (absolute).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The settings it was mounted with.
    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }

    /// Turns the throttle on (measured phases) or off (setup).
    pub fn set_throttling(&self, on: bool) {
        self.fs.set_throttling(on);
    }

    /// Counts the 4 KiB blocks of the file at `path` (relative to the mount, created
    /// after this call) one by one: block-device mode, where that file is the image under
    /// a loop device.
    pub fn map_blocks_of(&self, path: &str) {
        self.fs.map_blocks_of(path);
    }

    /// Counts the requests of the existing file at `path` (relative to the mount) by the
    /// part `part(offset, data)` names each one, under `path#part` in `by_file`
    /// (file-system mode: a file whose regions hold different things, as InnoDB's system
    /// tablespace holds the doublewrite buffer and undo pages).
    ///
    /// Errors: [`std::io::ErrorKind::NotFound`] when no file has that path.
    pub fn split_file(&self, path: &str, part: crate::PartFn) -> std::io::Result<()> {
        self.fs.split_file(path, part).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no file {path} on the device to split"),
            )
        })
    }

    /// Counts the InnoDB page images of every read and write by index from now on
    /// ([`DeviceCounts::innodb_pages`]; `innodb_pages` module doc), in either mode: a page
    /// image is found by its checksum, not by its file.
    pub fn count_innodb_pages(&self) {
        self.fs.count_innodb_pages()
    }

    /// The per-block counts of the mapped file so far.
    pub fn block_map(&self) -> crate::BlockMap {
        self.fs.block_map()
    }

    /// The counts now ([`DeviceCounts::since`] gives a phase).
    pub fn counts(&self) -> DeviceCounts {
        self.fs.counts()
    }

    /// Logical and physical bytes each file holds now, by its path relative to the mount
    /// (device/compression.rs accounting; empty without compression).
    pub fn compression_by_path(
        &self,
    ) -> std::collections::BTreeMap<String, mvcclab_engine::device::CompressionTotals> {
        self.fs.compression_by_path()
    }

    /// The kernel's page-cache settings of the mount, from its backing device info
    /// (`/sys/class/bdi/MAJOR:MINOR/`): `(read_ahead_kb, max_ratio)` — the readahead and
    /// the share of the dirty-page limit this mount may hold (with write-through, no dirty
    /// page waits for the daemon). `None` where sysfs does not show it.
    pub fn bdi(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(&self.dir).ok()?.dev();
        let (major, minor) = (libc::major(dev), libc::minor(dev));
        let read = |f: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/sys/class/bdi/{major}:{minor}/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some((read("read_ahead_kb")?, read("max_ratio")?))
    }

    /// Unmounts and waits for the mount to be gone.
    ///
    /// Errors: [`MountError::Io`] when the kernel refuses to detach it.
    pub fn unmount(mut self) -> Result<(), MountError> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<(), MountError> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let r = if is_mounted(&self.dir) {
            detach(&self.dir)
        } else {
            Ok(())
        };
        // The detached mount's requests end with ENODEV and the session's threads return
        // once no process holds a file on it; never wait more than 5 s for that.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(session.umount_and_join());
        });
        let _ = rx.recv_timeout(Duration::from_secs(5));
        r
    }
}

impl Drop for DevMount {
    fn drop(&mut self) {
        let _ = self.unmount_inner();
    }
}
