//! The device mounted through FUSE: files behave as on a local file system (owners, modes,
//! sizes, sparse fallocate, rename, unlink) and every read, write and sync is counted by
//! file and in 4 KiB blocks; the mount is gone after the test, also when it fails.

use mvcclab_devfs::{is_mounted, DevMount, DeviceConfig};
use mvcclab_engine::device::Compression;
use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Instant;

/// Unmounts in `drop`, so a failing assertion leaves no mount either.
struct Mounted(Option<DevMount>, std::path::PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        drop(self.0.take());
        assert!(!is_mounted(&self.1), "mount left at {}", self.1.display());
    }
}

fn fallocate(f: &fs::File, len: i64) -> i32 {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor; fallocate reads only its integer arguments.
    unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len) }
}

#[test]
fn files_keep_owner_mode_and_size_and_io_is_counted_by_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mnt");
    let mut cfg = DeviceConfig::new(None, None, Compression::Lz4);
    cfg.threads = 2;
    let m = Mounted(
        Some(DevMount::mount(&dir, &cfg).unwrap()),
        std::path::absolute(&dir).unwrap(),
    );
    let root = m.0.as_ref().unwrap().dir().to_path_buf();

    fs::create_dir(root.join("data")).unwrap();
    fs::set_permissions(root.join("data"), fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(root.join("data"), Some(1234), Some(4321)).unwrap();
    let md = fs::metadata(root.join("data")).unwrap();
    assert_eq!(
        (md.mode() & 0o7777, md.uid(), md.gid()),
        (0o700, 1234, 4321)
    );

    let path = root.join("data/t1");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    f.write_all(&vec![0u8; 65536]).unwrap();
    f.sync_all().unwrap();
    f.sync_data().unwrap();
    assert_eq!(
        fallocate(&f, 1 << 20),
        0,
        "{}",
        std::io::Error::last_os_error()
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), 1 << 20);
    f.seek(SeekFrom::Start(1 << 19)).unwrap();
    let mut buf = vec![1u8; 4096];
    f.read_exact(&mut buf).unwrap();
    assert!(buf.iter().all(|b| *b == 0), "sparse space reads zeros");
    drop(f);

    let c = m.0.as_ref().unwrap().counts();
    let t1 = c.by_file["data/t1"];
    assert_eq!(t1.io.write_bytes, 65536);
    assert_eq!(t1.io.write_blocks_4k, 16);
    assert_eq!(t1.io.syncs, 2);
    assert!(t1.io.read_bytes >= 4096, "{t1:?}");
    assert_eq!(c.total.io.write_bytes, 65536, "fallocate writes nothing");
    assert!(c.compression.logical_bytes >= 65536);
    assert!(
        c.compression.physical_bytes < c.compression.logical_bytes / 10,
        "{:?}",
        c.compression
    );
    assert!(c.by_process.values().map(|p| p.io.write_bytes).sum::<u64>() == 65536);

    fs::rename(&path, root.join("data/t2")).unwrap();
    assert!(!path.exists());
    fs::write(root.join("data/t3"), b"x").unwrap();
    fs::remove_file(root.join("data/t3")).unwrap();
    let names: Vec<_> = fs::read_dir(root.join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["t2"]);
    let c2 = m.0.as_ref().unwrap().counts();
    assert_eq!(
        c2.by_file["data/t2"].io.write_bytes, 65536,
        "counts follow a rename"
    );
    assert_eq!(
        c2.by_file["data/t3"].io.write_bytes, 1,
        "a removed file keeps its counts"
    );
    assert!(c2.since(&c).total.io.write_bytes == 1);
    let f = OpenOptions::new()
        .write(true)
        .open(root.join("data/t2"))
        .unwrap();
    f.set_len(0).unwrap();
    drop(f);
    let c3 = m.0.as_ref().unwrap().counts();
    assert!(
        c3.compression.logical_bytes < c2.compression.logical_bytes,
        "truncation trims"
    );
}

#[test]
fn throttle_holds_writes_to_the_bandwidth_once_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mnt");
    let m = Mounted(
        Some(
            DevMount::mount(&dir, &DeviceConfig::new(Some(8.0), None, Compression::None)).unwrap(),
        ),
        std::path::absolute(&dir).unwrap(),
    );
    let dev = m.0.as_ref().unwrap();
    let path = dev.dir().join("f");
    // Unthrottled set-up: no waiting counted.
    fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    assert_eq!(dev.counts().total.io.device_wait_us, 0);
    dev.set_throttling(true);
    let start = Instant::now();
    let mut f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all(&vec![9u8; 4 << 20]).unwrap();
    f.sync_all().unwrap();
    // 4 MiB at 8 MiB/s cannot complete in under 0.5 s (a lower bound, not a timing race).
    assert!(
        start.elapsed().as_secs_f64() >= 0.5,
        "{:?}",
        start.elapsed()
    );
    assert!(dev.counts().total.io.device_wait_us > 0);
}
