//! A loop device of its own for one server's files, so that its device I/O can be read
//! exactly from `/sys/block/loopN/stat` (Documentation/block/stat.rst in the kernel).
//!
//! `/proc/PID/io` is not used: its `write_bytes` counts pages dirtied in the page cache
//! and is not exact for buffered writes (Documentation/filesystems/proc.rst, "Note: ...
//! write_bytes"); the block device's own counters see what reaches the device, after the
//! page cache, whatever process issued it (the kernel's flusher threads included).
//!
//! The file system is ext4 with its inode tables and journal initialized at mkfs time
//! (`lazy_itable_init=0,lazy_journal_init=0`), so no background initialization writes
//! fall inside a measured phase; ext4's own journal writes are counted, as on any device.
//!
//! # Crash safety
//! None is needed: the backing file is scratch. [`LoopDevice::release`] unmounts and
//! detaches; if mvcclab dies first, `losetup -a` shows the device, and `umount` plus
//! `losetup -d` free it.

use crate::ServerError;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The readahead limit a loop device is given, KiB (`queue/read_ahead_kb`): the kernel's
/// default `VM_READAHEAD_PAGES` (include/linux/mm.h, 128 KiB), which a block device
/// without an optimal I/O size presents (block/blk-settings.c `blk_apply_bdi_limits`: the
/// larger of twice `io_opt` and that default), as an NVMe SSD does and as the postgres
/// preset's emulated page cache assumes (`OsCacheConfig::max_readahead_blocks`, 32 blocks
/// of 4 KiB). The loop driver's own value was 2,560 KiB on this machine's kernel (6.18), a
/// window 20 times the preset's for every sequential read of real PostgreSQL's files
/// (docs/fidelity.md, "Scale grid").
pub const READ_AHEAD_KB: u64 = 128;

/// A sparse file attached to a loop device, formatted ext4 and mounted.
#[derive(Debug)]
pub struct LoopDevice {
    device: PathBuf,
    mount_point: PathBuf,
    backing: PathBuf,
}

/// Counters of a block device (`/sys/block/NAME/stat`), cumulative since attach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockStat {
    /// Read requests completed.
    pub read_ios: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Flush requests completed (kernel 5.5 and later; 0 before).
    pub flush_ios: u64,
}

impl BlockStat {
    /// Parses the stat file's text: fields 1, 3, 5, 7 and 16 (1-based).
    ///
    /// Errors: [`ServerError::Io`]-free; [`ServerError::Counters`] for text that is not
    /// the kernel's format (fewer than 11 fields, or a field that is not a number).
    pub fn parse(text: &str) -> Result<BlockStat, ServerError> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|x| x.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                ServerError::Counters(format!(
                    "block stat '{}' has a non-number field",
                    text.trim()
                ))
            })?;
        if f.len() < 11 {
            return Err(ServerError::Counters(format!(
                "block stat '{}' has {} fields, expected at least 11",
                text.trim(),
                f.len()
            )));
        }
        Ok(BlockStat {
            read_ios: f[0],
            read_sectors: f[2],
            write_ios: f[4],
            write_sectors: f[6],
            flush_ios: f.get(15).copied().unwrap_or(0),
        })
    }
}

fn run(program: &str, args: &[&str]) -> Result<String, ServerError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| ServerError::io(&format!("running {program}"), e))?;
    if !out.status.success() {
        return Err(ServerError::Device(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl LoopDevice {
    /// Creates `dir/device.img` (sparse, `size_bytes`), attaches it (`losetup --find
    /// --show`), formats it ext4 and mounts it on `dir/mnt`.
    ///
    /// Errors: [`ServerError::Device`] naming the command that failed; not root gives
    /// "--exact-device-io needs root".
    pub fn create(dir: &Path, size_bytes: u64) -> Result<LoopDevice, ServerError> {
        Self::create_on(dir, dir, size_bytes, false, None)
    }

    /// As [`LoopDevice::create`] with the image in `image_dir` (the FUSE device's mount in
    /// block-device mode): attached with `--direct-io=on` when `direct_io` (the loop
    /// driver then reads and writes the image with O_DIRECT, so no second page cache sits
    /// between ext4 and the device). `rotational` sets `queue/rotational` (`Some(false)`: 0,
    /// as an NVMe device presents itself; `Some(true)`: 1, as a hard disk; `None`: the loop
    /// driver's own value is left). The readahead limit is set to [`READ_AHEAD_KB`].
    ///
    /// Errors: as [`LoopDevice::create`].
    pub fn create_on(
        dir: &Path,
        image_dir: &Path,
        size_bytes: u64,
        direct_io: bool,
        rotational: Option<bool>,
    ) -> Result<LoopDevice, ServerError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(ServerError::Device(
                "--exact-device-io needs root (it attaches and mounts a loop device); run as root or leave it off"
                    .into(),
            ));
        }
        let backing = image_dir.join("device.img");
        let f = fs::File::create(&backing)
            .map_err(|e| ServerError::io("creating the loop device's file", e))?;
        f.set_len(size_bytes)
            .map_err(|e| ServerError::io("sizing the loop device's file", e))?;
        drop(f);
        let image = backing.display().to_string();
        let mut args = vec!["--find", "--show"];
        if direct_io {
            args.push("--direct-io=on");
        }
        args.push(&image);
        let device = PathBuf::from(run("losetup", &args)?);
        let name = device
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if let Some(rot) = rotational {
            let flag = if rot { "1" } else { "0" };
            let _ = fs::write(format!("/sys/block/{name}/queue/rotational"), flag);
        }
        // Before mkfs and mount: ext4's files take their readahead limit from the device's
        // bdi when opened (mm/readahead.c `file_ra_state_init`). A refused write leaves the
        // loop driver's value, which `read_ahead_kb` reports.
        let _ = fs::write(
            format!("/sys/block/{name}/queue/read_ahead_kb"),
            READ_AHEAD_KB.to_string(),
        );
        let mount_point = dir.join("mnt");
        let l = LoopDevice {
            device,
            mount_point,
            backing,
        };
        let dev = l.device.display().to_string();
        let setup = || -> Result<(), ServerError> {
            run(
                "mkfs.ext4",
                &[
                    "-q",
                    "-F",
                    "-E",
                    "lazy_itable_init=0,lazy_journal_init=0",
                    &dev,
                ],
            )?;
            fs::create_dir_all(&l.mount_point)
                .map_err(|e| ServerError::io("creating the mount point", e))?;
            run("mount", &[&dev, &l.mount_point.display().to_string()])?;
            Ok(())
        };
        if let Err(e) = setup() {
            let _ = run("losetup", &["-d", &dev]);
            return Err(e);
        }
        Ok(l)
    }

    /// The device (`/dev/loopN`).
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// Where its file system is mounted.
    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    /// Writes the file system's dirty pages to the device (`syncfs` through `sync -f`), so
    /// that writes a server issued are counted before the counters are read.
    ///
    /// Errors: [`ServerError::Device`].
    pub fn sync(&self) -> Result<(), ServerError> {
        run("sync", &["-f", &self.mount_point.display().to_string()]).map(|_| ())
    }

    /// The device's counters now.
    ///
    /// Errors: [`ServerError::Io`] reading `/sys/block/loopN/stat`; [`ServerError::Counters`].
    pub fn stat(&self) -> Result<BlockStat, ServerError> {
        let name = self
            .device
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let p = format!("/sys/block/{name}/stat");
        let text =
            fs::read_to_string(&p).map_err(|e| ServerError::io(&format!("reading {p}"), e))?;
        BlockStat::parse(&text)
    }

    /// The device's readahead limit now, KiB (`/sys/block/loopN/queue/read_ahead_kb`, the
    /// bdi's `ra_pages` that bounds every readahead window of ext4's files on it);
    /// [`READ_AHEAD_KB`] once attached by [`LoopDevice::create_on`].
    pub fn read_ahead_kb(&self) -> Option<u64> {
        let name = self.device.file_name()?.to_string_lossy().to_string();
        let t = fs::read_to_string(format!("/sys/block/{name}/queue/read_ahead_kb")).ok()?;
        t.trim().parse().ok()
    }

    /// Whether the kernel shows the device as rotational (`/sys/block/loopN/queue/
    /// rotational`), which is what the servers on it conclude (MariaDB buf0flu.cc flushes
    /// a page's neighbours only on rotational storage).
    pub fn rotational(&self) -> Option<bool> {
        let name = self.device.file_name()?.to_string_lossy().to_string();
        let t = fs::read_to_string(format!("/sys/block/{name}/queue/rotational")).ok()?;
        Some(t.trim() == "1")
    }

    /// The extents of every regular file of the mounted file system, in 4 KiB blocks of
    /// the device: path relative to the mount point → `(first block, blocks)` (FIEMAP,
    /// through `filefrag -e -b4096`, e2fsprogs).
    ///
    /// Errors: [`ServerError::Io`] walking the folder; [`ServerError::Device`] when
    /// filefrag fails.
    pub fn extents(&self) -> Result<BTreeMap<String, Vec<(u64, u64)>>, ServerError> {
        let mut files = Vec::new();
        let mut stack = vec![self.mount_point.clone()];
        while let Some(d) = stack.pop() {
            let entries = fs::read_dir(&d)
                .map_err(|e| ServerError::io(&format!("listing {}", d.display()), e))?;
            for e in entries.flatten() {
                let Ok(t) = e.file_type() else { continue };
                if t.is_dir() {
                    stack.push(e.path());
                } else if t.is_file() {
                    files.push(e.path());
                }
            }
        }
        let mut out = BTreeMap::new();
        for chunk in files.chunks(200) {
            let mut args: Vec<String> = vec!["-e".into(), "-b4096".into()];
            args.extend(chunk.iter().map(|p| p.display().to_string()));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let text = run("filefrag", &refs)?;
            for (path, ext) in parse_filefrag(&text) {
                let rel = Path::new(&path)
                    .strip_prefix(&self.mount_point)
                    .map(|p| p.display().to_string())
                    .unwrap_or(path);
                out.insert(rel, ext);
            }
        }
        Ok(out)
    }

    /// Unmounts, detaches and deletes the backing file.
    ///
    /// Errors: [`ServerError::Device`] when umount or losetup fail (the device stays).
    pub fn release(self) -> Result<(), ServerError> {
        run("umount", &[&self.mount_point.display().to_string()])?;
        run("losetup", &["-d", &self.device.display().to_string()])?;
        let _ = fs::remove_file(&self.backing);
        Ok(())
    }
}

/// Parses `filefrag -e -b4096` output: each file's "File size of PATH is ..." line, then
/// its extent lines `N: logical..end: physical..end: length: ...`.
fn parse_filefrag(text: &str) -> Vec<(String, Vec<(u64, u64)>)> {
    let mut out: Vec<(String, Vec<(u64, u64)>)> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("File size of ") {
            if let Some(i) = rest.rfind(" is ") {
                out.push((rest[..i].to_string(), Vec::new()));
            }
            continue;
        }
        let f: Vec<&str> = line.split(':').map(str::trim).collect();
        if f.len() < 4 || f[0].parse::<u64>().is_err() {
            continue;
        }
        let physical = f[2]
            .split("..")
            .next()
            .and_then(|x| x.trim().parse::<u64>().ok());
        let length = f[3].parse::<u64>().ok();
        if let (Some(p), Some(n), Some(last)) = (physical, length, out.last_mut()) {
            last.1.push((p, n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_filefrag_extents() {
        let text = "\
Filesystem type is: ef53
File size of /m/data/base/5/1259 is 106496 (26 blocks of 4096 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..      15:      34816..     34831:     16:
   1:       16..      25:      40000..     40009:     10:      34832: last,eof
/m/data/base/5/1259: 2 extents found
File size of /m/x y is 0 (0 blocks of 4096 bytes)
/m/x y: 0 extents found
";
        assert_eq!(
            parse_filefrag(text),
            vec![
                (
                    "/m/data/base/5/1259".to_string(),
                    vec![(34816, 16), (40000, 10)]
                ),
                ("/m/x y".to_string(), vec![]),
            ]
        );
    }

    #[test]
    fn parses_the_kernel_stat_line() {
        let s = BlockStat::parse(
            "      66        0     2250        2       43      266   153944       20        0        8       25        2        0  4194312        0        5        1\n",
        )
        .unwrap();
        assert_eq!(
            s,
            BlockStat {
                read_ios: 66,
                read_sectors: 2250,
                write_ios: 43,
                write_sectors: 153944,
                flush_ios: 5
            }
        );
        assert!(BlockStat::parse("1 2 3").is_err());
        assert!(BlockStat::parse("1 2 x 4 5 6 7 8 9 10 11").is_err());
    }
}
