//! What both targets share: sysbench's load (oltp_common.lua `create_table`), dropping the OS
//! page cache (the whole machine's, or one managed server's files), and a managed server's loop-device counters.

use crate::error::ServerError;
use crate::managed;
use crate::server::Snapshot;

/// Drops the OS page cache: `sync`, then `3` into `/proc/sys/vm/drop_caches`.
///
/// Errors: [`ServerError::Io`] naming the file when it is not writable (not root, or a
/// read-only /proc in a container).
pub fn drop_os_page_cache() -> Result<(), ServerError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        ServerError::io(
            "--drop-caches: writing /proc/sys/vm/drop_caches (needs root)",
            e,
        )
    })
}

/// The files a managed server's page cache is made of
/// ([`ManagedServer::page_cache_scope`](crate::managed::ManagedServer::page_cache_scope)):
/// every regular file under the folder holding its data directory (with MariaDB's `tmpdir`
/// and PostgreSQL's `pg_wal` and `base/pgsql_tmp`), and the loop device under its ext4 in
/// block-device mode, whose own page cache holds ext4's metadata and journal blocks.
///
/// [`PageCacheScope::drop`] empties the page cache of those files alone, where
/// [`drop_os_page_cache`] empties the whole machine's: a run that drops caches then no
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

/// Device counters of a managed server's loop device, after syncing its file system, as
/// `device.*` snapshot entries (sectors are 512 bytes).
pub(crate) fn device_snapshot(
    m: Option<&managed::ManagedServer>,
    out: &mut Snapshot,
) -> Result<(), ServerError> {
    if let Some(l) = m.and_then(|m| m.loop_device()) {
        l.sync()?;
        let s = l.stat()?;
        out.insert("device.read_ios".into(), s.read_ios as f64);
        out.insert("device.read_sectors".into(), s.read_sectors as f64);
        out.insert("device.write_ios".into(), s.write_ios as f64);
        out.insert("device.write_sectors".into(), s.write_sectors as f64);
        out.insert("device.flush_ios".into(), s.flush_ios as f64);
    }
    Ok(())
}

/// Rows per multi-row INSERT of the load.
const LOAD_BATCH_ROWS: u32 = 1000;

/// The TPC-C tables of `opts.tables` sets (`warehouse1`, …, `item1`, `warehouse2`, …).
pub(crate) fn tpcc_tables(opts: &mvcclab_workload::sysbench::SysbenchOptions) -> Vec<String> {
    (1..=opts.tables)
        .flat_map(|n| {
            mvcclab_workload::tpcc::table_defs(n, false)
                .into_iter()
                .map(|d| d.name)
        })
        .collect()
}

/// Loads sysbench's tables as oltp_common.lua's `create_table` does: for each table, drop
/// it if present, create it, run the statements `after_create(n)` returns (PostgreSQL's
/// fill factor), insert `opts.prepare_rows(kind)` rows (the embedded load's
/// rows: same generator, same seed) in multi-row INSERTs, create the `k` index, then run
/// the statements `after(n)` returns, in order (the engine's statistics statements). `exec`
/// runs one statement.
///
/// Errors: the first failing statement's [`ServerError`], as text.
pub(crate) fn load_sbtest(
    d: mvcclab_workload::sql::Dialect,
    kind: mvcclab_workload::sysbench::WorkloadKind,
    opts: &mvcclab_workload::sysbench::SysbenchOptions,
    seed: u64,
    exec: &dyn Fn(&str) -> Result<(), ServerError>,
    after_create: &dyn Fn(u32) -> Vec<String>,
    after: &dyn Fn(u32) -> Vec<String>,
) -> Result<(), String> {
    use mvcclab_workload::sql;
    let rows = opts.prepare_rows(kind);
    let run = |q: &str| exec(q).map_err(|e| e.to_string());
    for n in 1..=opts.tables {
        run(&format!("DROP TABLE IF EXISTS sbtest{n}"))?;
        run(&sql::create_table(d, n, opts.auto_inc))?;
        for q in after_create(n) {
            run(&q)?;
        }
        let mut rng = mvcclab_workload::rand::SbRand::new(seed, 0x10000 + n, opts.rand.clone());
        let mut id = 1;
        while id <= rows {
            let last = (id + LOAD_BATCH_ROWS - 1).min(rows);
            let batch: Vec<_> = (id..=last)
                .map(|i| mvcclab_workload::sysbench::load_row(&mut rng, opts, i))
                .collect();
            run(&sql::bulk_insert(n, opts.auto_inc, &batch))?;
            id = last + 1;
        }
        run(&sql::create_secondary_index(n))?;
        for q in after(n) {
            run(&q)?;
        }
    }
    Ok(())
}

/// The `device_io` sentence of a report.
pub(crate) fn device_io_text(m: Option<&managed::ManagedServer>) -> String {
    match m.and_then(|m| m.loop_device()) {
        Some(l) => format!(
            "exact: {} (ext4, own loop device), /sys/block stat counters; the file system is synced before each reading",
            l.device().display()
        ),
        None => "not measured: engine counters only (run as root with --exact-device-io for a loop device of the server's own)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::PageCacheScope;
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
