//! A copy-on-write device over a frozen image: a design's tables loaded once and reused at
//! every point of a sweep (issue 26), as a file system snapshot (a ZFS or LVM thin
//! snapshot) lets a benchmark restart from the same loaded state without loading again.
//!
//! [`CowDevice::new`] is an empty device in memory; [`CowDevice::freeze`] turns what was
//! written into a [`DeviceImage`]; [`CowDevice::over`] opens a new device on an image,
//! sharing its blocks until they are written. Many devices may share one image at once.
//!
//! # Invariants
//! 1. An image never changes after [`CowDevice::freeze`]: a write to a device over it copies
//!    the chunk (4 KiB) into the device's own map first, so a reader of another device over
//!    the same image never sees it.
//! 2. A chunk absent from both maps reads as zeros (a sparse file's hole, as
//!    [`super::MemDevice`] fills a gap with zeros); a read past a file's length is an error.
//! 3. Removing a file removes it from this device only; the image keeps it.
//!
//! # Locking
//! The directory lock, then a file's lock; neither is held across calls.
//!
//! # Crash safety
//! None beyond [`super::MemDevice`]'s: everything lives in memory until the process ends.

use super::error::{DeviceError as Error, DeviceResult as Result};
use super::{Device, FileId};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Bytes per copy-on-write chunk: the device's accounting block.
pub const COW_CHUNK_BYTES: usize = 4096;

type Chunk = Arc<[u8]>;

/// One file of an image: its length in bytes and its written chunks (chunk number → bytes).
#[derive(Default, Clone)]
struct FileImage {
    len_bytes: u64,
    chunks: HashMap<u64, Chunk>,
}

/// A frozen device: the files a [`CowDevice`] held when it was frozen. Shared by reference
/// between the devices opened over it.
#[derive(Default)]
pub struct DeviceImage {
    files: BTreeMap<FileId, Arc<FileImage>>,
}

impl DeviceImage {
    /// Bytes of the chunks the image holds (its memory, without the maps' overhead).
    pub fn stored_bytes(&self) -> u64 {
        self.files
            .values()
            .map(|f| f.chunks.len() as u64 * COW_CHUNK_BYTES as u64)
            .sum()
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.files.len()
    }
}

/// One file of a device: the image's file (if any) below this device's own chunks.
#[derive(Default)]
struct CowFile {
    base: Option<Arc<FileImage>>,
    own: HashMap<u64, Vec<u8>>,
    len_bytes: u64,
}

impl CowFile {
    fn chunk(&self, n: u64) -> Option<&[u8]> {
        self.own.get(&n).map(|c| c.as_slice()).or_else(|| {
            self.base
                .as_ref()
                .and_then(|b| b.chunks.get(&n))
                .map(|c| &c[..])
        })
    }
}

/// A device in memory whose files start as those of a [`DeviceImage`] (or empty) and
/// whose writes go to chunks of its own (module doc).
#[derive(Default)]
pub struct CowDevice {
    files: RwLock<BTreeMap<FileId, Arc<RwLock<CowFile>>>>,
}

impl CowDevice {
    /// An empty device.
    pub fn new() -> Self {
        Self::default()
    }

    /// A device whose files are those of `image`, written copy-on-write.
    pub fn over(image: &Arc<DeviceImage>) -> Self {
        let files = image
            .files
            .iter()
            .map(|(id, f)| {
                let file = CowFile {
                    base: Some(f.clone()),
                    own: HashMap::new(),
                    len_bytes: f.len_bytes,
                };
                (*id, Arc::new(RwLock::new(file)))
            })
            .collect();
        CowDevice {
            files: RwLock::new(files),
        }
    }

    /// The device's files as they are now, frozen into an image (this device keeps
    /// working; later writes do not reach the image).
    pub fn freeze(&self) -> Arc<DeviceImage> {
        let files = self
            .files
            .read()
            .iter()
            .map(|(id, f)| {
                let f = f.read();
                let mut img = f.base.as_deref().cloned().unwrap_or_default();
                img.len_bytes = f.len_bytes;
                for (n, c) in &f.own {
                    img.chunks.insert(*n, Arc::from(c.as_slice()));
                }
                img.chunks
                    .retain(|n, _| n * (COW_CHUNK_BYTES as u64) < f.len_bytes);
                (*id, Arc::new(img))
            })
            .collect();
        Arc::new(DeviceImage { files })
    }

    fn file(&self, file: FileId) -> Result<Arc<RwLock<CowFile>>> {
        self.files
            .read()
            .get(&file)
            .cloned()
            .ok_or(Error::NoSuchFile { file })
    }
}

impl Device for CowDevice {
    fn create(&self, file: FileId) -> Result<()> {
        self.files.write().entry(file).or_default();
        Ok(())
    }

    fn remove(&self, file: FileId) -> Result<()> {
        self.files.write().remove(&file);
        Ok(())
    }

    fn files(&self) -> Result<Vec<FileId>> {
        Ok(self.files.read().keys().copied().collect())
    }

    fn len_bytes(&self, file: FileId) -> Result<u64> {
        Ok(self.file(file)?.read().len_bytes)
    }

    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        let f = self.file(file)?;
        let f = f.read();
        match offset.checked_add(buf.len() as u64) {
            Some(end) if end <= f.len_bytes => {}
            _ => {
                return Err(Error::ReadPastEof {
                    file,
                    offset_bytes: offset,
                    len_bytes: buf.len(),
                    file_len_bytes: f.len_bytes,
                })
            }
        }
        let chunk = COW_CHUNK_BYTES as u64;
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let (n, within) = (at / chunk, (at % chunk) as usize);
            let take = (COW_CHUNK_BYTES - within).min(buf.len() - done);
            let dst = &mut buf[done..done + take];
            match f.chunk(n) {
                Some(c) => dst.copy_from_slice(&c[within..within + take]),
                None => dst.fill(0),
            }
            done += take;
        }
        Ok(())
    }

    fn write_at(&self, file: FileId, offset: u64, src: &[u8]) -> Result<()> {
        let f = self.file(file)?;
        let mut f = f.write();
        let chunk = COW_CHUNK_BYTES as u64;
        let mut done = 0usize;
        while done < src.len() {
            let at = offset + done as u64;
            let (n, within) = (at / chunk, (at % chunk) as usize);
            let take = (COW_CHUNK_BYTES - within).min(src.len() - done);
            if !f.own.contains_key(&n) {
                let copy = f
                    .chunk(n)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_else(|| vec![0; COW_CHUNK_BYTES]);
                f.own.insert(n, copy);
            }
            if let Some(c) = f.own.get_mut(&n) {
                c[within..within + take].copy_from_slice(&src[done..done + take]);
            }
            done += take;
        }
        let end = offset + src.len() as u64;
        if end > f.len_bytes {
            f.len_bytes = end;
        }
        Ok(())
    }

    fn sync(&self, file: FileId) -> Result<()> {
        self.file(file).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use proptest::prelude::*;

    #[test]
    fn writes_after_freeze_reach_neither_the_image_nor_other_devices() {
        let d = CowDevice::new();
        d.create(7).unwrap();
        d.write_at(7, 100, b"loaded").unwrap();
        let img = d.freeze();
        let (a, b) = (CowDevice::over(&img), CowDevice::over(&img));
        a.write_at(7, 102, b"XX").unwrap();
        a.write_at(7, 9000, b"grown").unwrap();
        let mut buf = [0u8; 6];
        a.read_at(7, 100, &mut buf).unwrap();
        assert_eq!(&buf, b"loXXed");
        b.read_at(7, 100, &mut buf).unwrap();
        assert_eq!(&buf, b"loaded");
        assert_eq!(a.len_bytes(7).unwrap(), 9005);
        assert_eq!(b.len_bytes(7).unwrap(), 106);
        assert!(b.read_at(7, 104, &mut buf).is_err());
        b.remove(7).unwrap();
        assert_eq!(CowDevice::over(&img).files().unwrap(), vec![7]);
        assert_eq!(img.stored_bytes(), 4096);
    }

    proptest! {
        /// A device over an image reads as a memory device given the same writes: the
        /// image's writes, then its own.
        #[test]
        fn reads_as_a_memory_device(
            before in proptest::collection::vec((0u64..20_000, 1usize..9000, any::<u8>()), 0..12),
            after in proptest::collection::vec((0u64..20_000, 1usize..9000, any::<u8>()), 0..12),
        ) {
            let (cow, mem) = (CowDevice::new(), MemDevice::new());
            cow.create(1).unwrap();
            mem.create(1).unwrap();
            for (off, len, v) in &before {
                cow.write_at(1, *off, &vec![*v; *len]).unwrap();
                mem.write_at(1, *off, &vec![*v; *len]).unwrap();
            }
            let cow = CowDevice::over(&cow.freeze());
            for (off, len, v) in &after {
                cow.write_at(1, *off, &vec![*v; *len]).unwrap();
                mem.write_at(1, *off, &vec![*v; *len]).unwrap();
            }
            let len = mem.len_bytes(1).unwrap();
            prop_assert_eq!(cow.len_bytes(1).unwrap(), len);
            let (mut x, mut y) = (vec![0u8; len as usize], vec![0u8; len as usize]);
            cow.read_at(1, 0, &mut x).unwrap();
            mem.read_at(1, 0, &mut y).unwrap();
            prop_assert_eq!(x, y);
        }
    }
}
