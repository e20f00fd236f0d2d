//! A device backed by memory: each file a `Vec<u8>` behind its own lock.

use super::error::{DeviceError as Error, DeviceResult as Result};
use super::{Device, FileId};
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Files kept in RAM. `sync` only checks the file exists (everything written is "durable"
/// until the process ends). Lock order: the directory lock, then a file's lock; neither
/// is held across calls.
#[derive(Default)]
pub struct MemDevice {
    files: RwLock<BTreeMap<FileId, Arc<RwLock<Vec<u8>>>>>,
}

impl MemDevice {
    /// An empty device.
    pub fn new() -> Self {
        Self::default()
    }

    fn file(&self, file: FileId) -> Result<Arc<RwLock<Vec<u8>>>> {
        self.files
            .read()
            .get(&file)
            .cloned()
            .ok_or(Error::NoSuchFile { file })
    }
}

impl Device for MemDevice {
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
        Ok(self.file(file)?.read().len() as u64)
    }

    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        let f = self.file(file)?;
        let data = f.read();
        match offset.checked_add(buf.len() as u64) {
            Some(end) if end <= data.len() as u64 => {
                buf.copy_from_slice(&data[offset as usize..end as usize]);
                Ok(())
            }
            _ => Err(Error::ReadPastEof {
                file,
                offset_bytes: offset,
                len_bytes: buf.len(),
                file_len_bytes: data.len() as u64,
            }),
        }
    }

    fn write_at(&self, file: FileId, offset: u64, src: &[u8]) -> Result<()> {
        let f = self.file(file)?;
        let mut data = f.write();
        let end = offset as usize + src.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(src);
        Ok(())
    }

    fn sync(&self, file: FileId) -> Result<()> {
        self.file(file).map(|_| ())
    }
}
