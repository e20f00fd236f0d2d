//! A device backed by real files: one file per device file id in a directory, accessed with
//! pread/pwrite (`std::os::unix::fs::FileExt`), optionally with O_DIRECT.

use super::error::{DeviceError as Error, DeviceResult as Result};
use super::{Device, FileId};
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Alignment O_DIRECT needs for buffers, offsets and lengths (the logical sector size).
const DIRECT_ALIGN: usize = 512;
/// Buffer alignment used for bounce buffers (a page, which satisfies every device).
const BUF_ALIGN: usize = 4096;

/// Files in a directory, named `f{id:08x}`. With `direct`, files are opened with O_DIRECT
/// (bypassing the kernel page cache, as InnoDB's `innodb_flush_method=O_DIRECT`); requests
/// must then be 512-byte aligned in offset and length ([`Error::Unaligned`] otherwise), and
/// unaligned buffers are copied through an aligned bounce buffer. Not every file system
/// accepts O_DIRECT (tmpfs does not): opening then fails with the OS error.
pub struct FileDevice {
    dir: PathBuf,
    direct: bool,
    open: RwLock<BTreeMap<FileId, Arc<File>>>,
}

impl FileDevice {
    /// Uses (and creates if needed) directory `dir`, opening the files already in it.
    ///
    /// Errors: [`Error::Io`] if the directory cannot be created or listed, or a file in it
    /// cannot be opened.
    pub fn open(dir: impl AsRef<Path>, direct: bool) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("create_dir", 0, e))?;
        let dev = FileDevice {
            dir,
            direct,
            open: RwLock::new(BTreeMap::new()),
        };
        for id in dev.files()? {
            dev.open_file(id, false)?;
        }
        Ok(dev)
    }

    fn path(&self, file: FileId) -> PathBuf {
        self.dir.join(format!("f{file:08x}"))
    }

    fn open_file(&self, file: FileId, create: bool) -> Result<Arc<File>> {
        let mut opts = OpenOptions::new();
        opts.read(true).write(true).create(create);
        if self.direct {
            opts.custom_flags(libc::O_DIRECT);
        }
        let f = Arc::new(
            opts.open(self.path(file))
                .map_err(|e| Error::io("open", file, e))?,
        );
        self.open.write().insert(file, f.clone());
        Ok(f)
    }

    fn file(&self, file: FileId) -> Result<Arc<File>> {
        self.open
            .read()
            .get(&file)
            .cloned()
            .ok_or(Error::NoSuchFile { file })
    }

    fn check_aligned(&self, file: FileId, offset: u64, len: usize) -> Result<()> {
        if self.direct
            && (!offset.is_multiple_of(DIRECT_ALIGN as u64) || !len.is_multiple_of(DIRECT_ALIGN))
        {
            return Err(Error::Unaligned {
                file,
                offset_bytes: offset,
                len_bytes: len,
            });
        }
        Ok(())
    }
}

/// A zeroed buffer of `len` bytes whose start is aligned to `BUF_ALIGN`, carved out of a
/// slightly larger `Vec` (safe code; no custom allocation).
struct Aligned {
    v: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize) -> Self {
        let v = vec![0u8; len + BUF_ALIGN];
        let start = v.as_ptr().align_offset(BUF_ALIGN);
        Aligned { v, start, len }
    }
    fn bytes(&self) -> &[u8] {
        &self.v[self.start..self.start + self.len]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.start..self.start + self.len]
    }
}

impl Device for FileDevice {
    fn create(&self, file: FileId) -> Result<()> {
        if self.open.read().contains_key(&file) {
            return Ok(());
        }
        self.open_file(file, true).map(|_| ())
    }

    fn remove(&self, file: FileId) -> Result<()> {
        self.open.write().remove(&file);
        match std::fs::remove_file(self.path(file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", file, e)),
            _ => Ok(()),
        }
    }

    fn files(&self) -> Result<Vec<FileId>> {
        let mut ids = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(|e| Error::io("read_dir", 0, e))? {
            let entry = entry.map_err(|e| Error::io("read_dir", 0, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(hex) = name.strip_prefix('f') {
                if let (8, Ok(id)) = (hex.len(), u32::from_str_radix(hex, 16)) {
                    ids.push(id);
                }
            }
        }
        ids.sort_unstable();
        Ok(ids)
    }

    fn len_bytes(&self, file: FileId) -> Result<u64> {
        let f = self.file(file)?;
        Ok(f.metadata().map_err(|e| Error::io("stat", file, e))?.len())
    }

    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.check_aligned(file, offset, buf.len())?;
        let f = self.file(file)?;
        let len = f.metadata().map_err(|e| Error::io("stat", file, e))?.len();
        if offset + buf.len() as u64 > len {
            return Err(Error::ReadPastEof {
                file,
                offset_bytes: offset,
                len_bytes: buf.len(),
                file_len_bytes: len,
            });
        }
        if self.direct && buf.as_ptr().align_offset(DIRECT_ALIGN) != 0 {
            let mut bounce = Aligned::new(buf.len());
            f.read_exact_at(bounce.bytes_mut(), offset)
                .map_err(|e| Error::io("read", file, e))?;
            buf.copy_from_slice(bounce.bytes());
            return Ok(());
        }
        f.read_exact_at(buf, offset)
            .map_err(|e| Error::io("read", file, e))
    }

    fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        self.check_aligned(file, offset, data.len())?;
        let f = self.file(file)?;
        if self.direct && data.as_ptr().align_offset(DIRECT_ALIGN) != 0 {
            let mut bounce = Aligned::new(data.len());
            bounce.bytes_mut().copy_from_slice(data);
            return f
                .write_all_at(bounce.bytes(), offset)
                .map_err(|e| Error::io("write", file, e));
        }
        f.write_all_at(data, offset)
            .map_err(|e| Error::io("write", file, e))
    }

    fn sync(&self, file: FileId) -> Result<()> {
        self.file(file)?
            .sync_data()
            .map_err(|e| Error::io("sync", file, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(direct: bool) {
        let dir = tempfile::tempdir().unwrap();
        let dev = FileDevice::open(dir.path(), direct).unwrap();
        dev.create(16384).unwrap();
        let page: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        // Unaligned source buffer: start one byte into a vector.
        let mut shifted = vec![0u8; 8193];
        shifted[1..].copy_from_slice(&page);
        dev.write_at(16384, 8192, &shifted[1..]).unwrap();
        dev.sync(16384).unwrap();
        assert_eq!(dev.len_bytes(16384).unwrap(), 16384);
        let mut back = vec![0u8; 8193];
        dev.read_at(16384, 8192, &mut back[1..]).unwrap();
        assert_eq!(&back[1..], &page[..]);
        assert!(matches!(
            dev.read_at(16384, 16384, &mut [0u8; 512]),
            Err(Error::ReadPastEof { .. })
        ));
        drop(dev);
        let again = FileDevice::open(dir.path(), direct).unwrap();
        assert_eq!(again.files().unwrap(), vec![16384]);
        let mut back = vec![0u8; 8192];
        again.read_at(16384, 8192, &mut back).unwrap();
        assert_eq!(back, page);
        again.remove(16384).unwrap();
        assert!(again.files().unwrap().is_empty());
    }

    #[test]
    fn buffered_roundtrip_and_reopen() {
        roundtrip(false);
    }

    /// Needs a file system that accepts O_DIRECT (ext4, xfs; not tmpfs) under the temp dir.
    #[test]
    fn direct_io_roundtrip_with_unaligned_buffers() {
        roundtrip(true);
    }

    #[test]
    fn direct_io_refuses_unaligned_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let dev = FileDevice::open(dir.path(), true).unwrap();
        dev.create(2).unwrap();
        let err = dev.write_at(2, 100, &[0u8; 512]).unwrap_err();
        assert!(err.to_string().contains("not 512-byte aligned"), "{err}");
    }
}
