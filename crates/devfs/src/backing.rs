//! The bytes under the FUSE file system: one backing file per device file id, in memory or
//! in a directory (`--data-dir`), sparse in both.
//!
//! Unlike the engine's [`mvcclab_engine::device::MemDevice`] and `FileDevice`, a read past
//! the end of what was written returns zeros: a file's size is the file system's (kept in
//! its inode), and a file grown by `fallocate` or `truncate` has no bytes behind it until
//! they are written, as on a sparse file of ext4. The [`Nvme`](mvcclab_engine::device::Nvme)
//! above counts every call; this layer counts nothing.

use mvcclab_engine::device::{Device, DeviceError, DeviceResult, FileId};
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes per chunk of a file in memory: only chunks written hold memory, so a 16 GiB
/// image file with a few hundred MiB written costs a few hundred MiB.
const CHUNK: u64 = 64 << 10;

/// A file in memory: its written chunks and the end of what was written.
#[derive(Default)]
struct MemFile {
    chunks: BTreeMap<u64, Box<[u8]>>,
    len: u64,
}

impl MemFile {
    fn read(&self, offset: u64, buf: &mut [u8]) {
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset + done as u64;
            let (c, within) = (pos / CHUNK, (pos % CHUNK) as usize);
            let n = (CHUNK as usize - within).min(buf.len() - done);
            match self.chunks.get(&c) {
                Some(chunk) => buf[done..done + n].copy_from_slice(&chunk[within..within + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let pos = offset + done as u64;
            let (c, within) = (pos / CHUNK, (pos % CHUNK) as usize);
            let n = (CHUNK as usize - within).min(data.len() - done);
            let chunk = self
                .chunks
                .entry(c)
                .or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
            chunk[within..within + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        self.len = self.len.max(offset + data.len() as u64);
    }

    fn truncate(&mut self, len: u64) {
        if len >= self.len {
            return;
        }
        self.chunks.retain(|c, _| c * CHUNK < len);
        if let Some(last) = self.chunks.get_mut(&(len / CHUNK)) {
            last[(len % CHUNK) as usize..].fill(0);
        }
        self.len = len;
    }
}

/// Where the bytes live.
enum Store {
    /// Chunks per file.
    Mem(RwLock<BTreeMap<FileId, Arc<RwLock<MemFile>>>>),
    /// A file `f{id:08x}` per file in a directory, read and written with pread/pwrite.
    Dir {
        dir: PathBuf,
        open: RwLock<BTreeMap<FileId, Arc<File>>>,
    },
}

/// Sparse backing files (module doc). All methods may be called from many threads.
pub struct SparseBacking {
    store: Store,
}

impl SparseBacking {
    /// Files kept in RAM.
    pub fn memory() -> Self {
        SparseBacking {
            store: Store::Mem(RwLock::new(BTreeMap::new())),
        }
    }

    /// Files kept in directory `dir` (created if needed). Files already in it are removed:
    /// the file system's directory tree lives in memory, so old bytes would have no names.
    ///
    /// Errors: [`DeviceError::Io`] when the directory cannot be created or cleared.
    pub fn directory(dir: &Path) -> DeviceResult<Self> {
        std::fs::create_dir_all(dir).map_err(|e| DeviceError::io("create_dir", 0, e))?;
        let entries = std::fs::read_dir(dir).map_err(|e| DeviceError::io("read_dir", 0, e))?;
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.len() == 9 && name.starts_with('f') {
                std::fs::remove_file(e.path()).map_err(|e| DeviceError::io("remove", 0, e))?;
            }
        }
        Ok(SparseBacking {
            store: Store::Dir {
                dir: dir.to_path_buf(),
                open: RwLock::new(BTreeMap::new()),
            },
        })
    }

    fn mem_file(
        files: &RwLock<BTreeMap<FileId, Arc<RwLock<MemFile>>>>,
        file: FileId,
    ) -> DeviceResult<Arc<RwLock<MemFile>>> {
        files
            .read()
            .get(&file)
            .cloned()
            .ok_or(DeviceError::NoSuchFile { file })
    }

    fn dir_file(
        open: &RwLock<BTreeMap<FileId, Arc<File>>>,
        file: FileId,
    ) -> DeviceResult<Arc<File>> {
        open.read()
            .get(&file)
            .cloned()
            .ok_or(DeviceError::NoSuchFile { file })
    }

    /// Cuts `file`'s bytes at `len_bytes` (a no-op when it holds fewer): ftruncate(2).
    ///
    /// Errors: [`DeviceError::NoSuchFile`], [`DeviceError::Io`].
    pub fn truncate(&self, file: FileId, len_bytes: u64) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => {
                Self::mem_file(files, file)?.write().truncate(len_bytes);
                Ok(())
            }
            Store::Dir { open, .. } => {
                let f = Self::dir_file(open, file)?;
                let cur = f
                    .metadata()
                    .map_err(|e| DeviceError::io("fstat", file, e))?
                    .len();
                if cur > len_bytes {
                    f.set_len(len_bytes)
                        .map_err(|e| DeviceError::io("ftruncate", file, e))?;
                }
                Ok(())
            }
        }
    }

    /// The directory the bytes live in (`None` in memory).
    pub fn dir(&self) -> Option<&Path> {
        match &self.store {
            Store::Mem(_) => None,
            Store::Dir { dir, .. } => Some(dir),
        }
    }
}

impl Device for SparseBacking {
    fn create(&self, file: FileId) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => {
                files.write().entry(file).or_default();
                Ok(())
            }
            Store::Dir { dir, open } => {
                if open.read().contains_key(&file) {
                    return Ok(());
                }
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(dir.join(format!("f{file:08x}")))
                    .map_err(|e| DeviceError::io("open", file, e))?;
                open.write().insert(file, Arc::new(f));
                Ok(())
            }
        }
    }

    fn remove(&self, file: FileId) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => {
                files.write().remove(&file);
            }
            Store::Dir { dir, open } => {
                if open.write().remove(&file).is_some() {
                    std::fs::remove_file(dir.join(format!("f{file:08x}")))
                        .map_err(|e| DeviceError::io("remove", file, e))?;
                }
            }
        }
        Ok(())
    }

    fn files(&self) -> DeviceResult<Vec<FileId>> {
        Ok(match &self.store {
            Store::Mem(files) => files.read().keys().copied().collect(),
            Store::Dir { open, .. } => open.read().keys().copied().collect(),
        })
    }

    fn len_bytes(&self, file: FileId) -> DeviceResult<u64> {
        match &self.store {
            Store::Mem(files) => Ok(Self::mem_file(files, file)?.read().len),
            Store::Dir { open, .. } => Ok(Self::dir_file(open, file)?
                .metadata()
                .map_err(|e| DeviceError::io("fstat", file, e))?
                .len()),
        }
    }

    /// Reads `buf.len()` bytes at `offset`; what lies past the bytes written reads as zeros.
    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => {
                Self::mem_file(files, file)?.read().read(offset, buf);
                Ok(())
            }
            Store::Dir { open, .. } => {
                let f = Self::dir_file(open, file)?;
                let mut done = 0;
                while done < buf.len() {
                    let n = f
                        .read_at(&mut buf[done..], offset + done as u64)
                        .map_err(|e| DeviceError::io("pread", file, e))?;
                    if n == 0 {
                        break;
                    }
                    done += n;
                }
                buf[done..].fill(0);
                Ok(())
            }
        }
    }

    fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => {
                Self::mem_file(files, file)?.write().write(offset, data);
                Ok(())
            }
            Store::Dir { open, .. } => Self::dir_file(open, file)?
                .write_all_at(data, offset)
                .map_err(|e| DeviceError::io("pwrite", file, e)),
        }
    }

    fn sync(&self, file: FileId) -> DeviceResult<()> {
        match &self.store {
            Store::Mem(files) => Self::mem_file(files, file).map(|_| ()),
            Store::Dir { open, .. } => Self::dir_file(open, file)?
                .sync_data()
                .map_err(|e| DeviceError::io("fdatasync", file, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(b: &SparseBacking) {
        b.create(3).unwrap();
        b.write_at(3, 8192, &[7u8; 100]).unwrap();
        let mut buf = [1u8; 300];
        b.read_at(3, 8100, &mut buf).unwrap();
        assert_eq!(&buf[..92], &[0u8; 92][..]);
        assert_eq!(&buf[92..192], &[7u8; 100][..]);
        assert_eq!(&buf[192..], &[0u8; 108][..], "past the end reads zeros");
        b.truncate(3, 8200).unwrap();
        assert_eq!(b.len_bytes(3).unwrap(), 8200);
        b.read_at(3, 8192, &mut buf[..16]).unwrap();
        assert_eq!(
            &buf[..16],
            &[7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        b.sync(3).unwrap();
        b.remove(3).unwrap();
        assert!(b.files().unwrap().is_empty());
        assert!(matches!(
            b.read_at(3, 0, &mut buf),
            Err(DeviceError::NoSuchFile { file: 3 })
        ));
    }

    #[test]
    fn memory_backing_is_sparse_and_truncates() {
        let b = SparseBacking::memory();
        check(&b);
        // A write 16 GiB out holds one chunk, and crossing chunks reads back whole.
        b.create(4).unwrap();
        b.write_at(4, (16 << 30) - 10, &[5u8; 20]).unwrap();
        b.write_at(4, CHUNK - 3, &[6u8; 6]).unwrap();
        let mut buf = [0u8; 8];
        b.read_at(4, CHUNK - 4, &mut buf).unwrap();
        assert_eq!(buf, [0, 6, 6, 6, 6, 6, 6, 0]);
        assert_eq!(b.len_bytes(4).unwrap(), (16 << 30) + 10);
        if let Store::Mem(files) = &b.store {
            assert_eq!(files.read()[&4].read().chunks.len(), 4);
        }
        b.truncate(4, CHUNK - 1).unwrap();
        b.read_at(4, CHUNK - 4, &mut buf).unwrap();
        assert_eq!(buf, [0, 6, 6, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn directory_backing_is_sparse_and_truncates() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f00000009"), b"old").unwrap();
        let b = SparseBacking::directory(d.path()).unwrap();
        assert!(
            !d.path().join("f00000009").exists(),
            "old bytes are cleared"
        );
        check(&b);
    }
}
