//! What the engine calls for file I/O: the device, with the emulated OS page cache in front
//! of it when one is configured.

use super::error::DeviceResult as Result;
use super::{CompressionTotals, FileId, Nvme, OsCacheConfig, OsPageCache};

/// Files of the engine, buffered through an [`OsPageCache`] when `os_cache.size_bytes > 0`
/// (PostgreSQL: every file goes through the kernel's cache) or direct (InnoDB's O_DIRECT).
/// Cheap to share by reference; all methods take `&self`.
pub struct Vfs {
    nvme: Nvme,
    os_cache: Option<OsPageCache>,
}

impl Vfs {
    /// Puts an OS page cache of `os_cache.size_bytes` (none if 0) over `nvme`.
    pub fn new(nvme: Nvme, os_cache: &OsCacheConfig) -> Self {
        Vfs {
            nvme,
            os_cache: OsPageCache::new(os_cache),
        }
    }

    /// The device below.
    pub fn nvme(&self) -> &Nvme {
        &self.nvme
    }

    /// The OS page cache emulation, if configured.
    pub fn os_cache(&self) -> Option<&OsPageCache> {
        self.os_cache.as_ref()
    }

    /// Reads exactly `buf.len()` bytes at `offset`. Errors: device errors,
    /// [`super::DeviceError::ReadPastEof`].
    pub fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        match &self.os_cache {
            Some(c) => c.read(&self.nvme, file, offset, buf),
            None => self.nvme.read_at(file, offset, buf),
        }
    }

    /// Writes `data` at `offset` (into the OS cache when there is one). Errors: device errors.
    pub fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        match &self.os_cache {
            Some(c) => c.write(&self.nvme, file, offset, data),
            None => self.nvme.write_at(file, offset, data),
        }
    }

    /// Makes all writes to `file` durable (fsync). Errors: device errors.
    pub fn sync(&self, file: FileId) -> Result<()> {
        match &self.os_cache {
            Some(c) => c.sync(&self.nvme, file),
            None => self.nvme.sync(file),
        }
    }

    /// Creates `file` if absent.
    pub fn create(&self, file: FileId) -> Result<()> {
        self.nvme.create(file)
    }

    /// Removes `file` (cached blocks are dropped).
    pub fn remove(&self, file: FileId) -> Result<()> {
        if let Some(c) = &self.os_cache {
            c.forget(file);
        }
        self.nvme.remove(file)
    }

    /// Files on the device.
    pub fn files(&self) -> Result<Vec<FileId>> {
        self.nvme.files()
    }

    /// Length of `file` in bytes, writes still in the OS cache included.
    pub fn len_bytes(&self, file: FileId) -> Result<u64> {
        match &self.os_cache {
            Some(c) => c.len_bytes(&self.nvme, file),
            None => self.nvme.len_bytes(file),
        }
    }

    /// Compression state of the device.
    pub fn compression_totals(&self) -> CompressionTotals {
        self.nvme.compression_totals()
    }

    /// Compression state of the files `keep` selects (see `file_ids`).
    pub fn compression_totals_where(&self, keep: impl Fn(FileId) -> bool) -> CompressionTotals {
        self.nvme.compression_totals_where(keep)
    }
}
