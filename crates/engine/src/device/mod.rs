//! The virtual NVMe device: raw backings, exact per-cause accounting, a throttle, a
//! transparent-compression model, and an emulated OS page cache above it.
//!
//! The stack, from the bottom:
//! - a [`Device`] backing: [`MemDevice`] (RAM), [`FileDevice`] (one file per device file
//!   id in a directory; pread/pwrite, O_DIRECT optional) or [`CrashDevice`] (RAM with a
//!   durable image per file and a seeded power cut that loses or tears unsynced writes)
//!   or [`CowDevice`] (RAM, copy-on-write over a frozen [`DeviceImage`]: a load reused by
//!   many runs).
//!   An `Arc` of a device is a device too, so a test can keep a handle on the backing
//!   the storage runs on (`storage::Backing::Shared`).
//! - [`Nvme`]: counts every request per cause (`stats`), splits it into requests at
//!   `iop_max_bytes`, rounds it out to 4 KiB blocks, throttles it ([`Throttle`], in the
//!   manner of NVMeVirt), and records the compressed size of every 4 KiB block written
//!   ([`CompressionModel`]).
//! - [`Vfs`]: what the engine calls. Files that are buffered go through the
//!   [`OsPageCache`] emulation (PostgreSQL's double buffering); direct files go straight
//!   to the [`Nvme`] (InnoDB's O_DIRECT).
//!
//! # Accounting rules
//! 1. A call of `len` bytes at `offset` touches `ceil((offset+len)/4096) - floor(offset/4096)`
//!    4 KiB blocks and is `max(1, ceil(len / iop_max_bytes))` requests (a 64 KiB write with
//!    the default 16 KiB split is 16 blocks and 4 requests). A zero-length call counts
//!    nothing.
//! 2. Every count goes to the cause current on the calling thread (`stats::enter`), except
//!    OS-cache write-back, which goes to the cause that dirtied the block.
//! 3. Syncs are explicit and counted; nothing is durable before a sync (the crash backing
//!    relies on this).
//!
//! # File ids
//! A device holds numbered files (`FileId`), as a file system holds files: the control file,
//! the doublewrite area, WAL segments and one file per relation (see [`file_ids`]).
//!
//! # Locking
//! `Nvme` takes no lock on the accounting path; the throttle takes one short mutex per call
//! to reserve channel time; the compression model takes a mutex per call when enabled.
//! Lock order: the OS-cache mutex is never held across a device call.
//!
//! # Crash safety
//! The memory and file backings keep what was written; durability is whatever the
//! backing gives after `sync`. The OS-cache emulation loses unsynced dirty blocks when the
//! process dies, as the kernel would at a power cut. The crash backing ([`CrashDevice`])
//! makes the power cut itself: what was synced survives; each write since its file's last
//! sync survives or not at random (seeded), and a surviving multi-sector write may be torn
//! at a 512-byte sector boundary; file creation and removal are durable at once. Its
//! module doc gives the model and what it leaves out.

mod compression;
mod cow;
mod crash;
#[cfg(test)]
pub(crate) use crash::SplitMix64;
mod error;
mod file;
mod file_id;
mod mem;
mod nvme;
mod os_cache;
mod throttle;
mod vfs;

pub use compression::{Compression, CompressionModel, CompressionTotals};
pub use cow::{CowDevice, DeviceImage, COW_CHUNK_BYTES};
pub use crash::{CrashConfig, CrashDevice, PowerCutReport, TornWrite, SECTOR_BYTES};
pub use error::{DeviceError, DeviceResult};
pub use file::FileDevice;
pub use file_id::FileId;
pub use mem::MemDevice;
pub use nvme::{IoEvent, IoKind, Nvme, NvmeConfig};
pub use os_cache::{OsCacheConfig, OsPageCache};
pub use throttle::{Throttle, ThrottleConfig};
pub use vfs::Vfs;

use self::error::DeviceResult as Result;

/// Size of the accounting block: every request is rounded out to these.
pub const BLOCK_4K: u64 = 4096;

/// Well-known file ids and ranges.
pub mod file_ids {
    use super::FileId;
    /// The control file (PostgreSQL `global/pg_control`): last checkpoint location.
    pub const CONTROL: FileId = 0;
    /// The doublewrite area (InnoDB's doublewrite buffer, in the system tablespace).
    pub const DOUBLEWRITE: FileId = 1;
    /// The commit log (PostgreSQL `pg_xact`): 2 status bits per xid, written at checkpoints.
    pub const CLOG: FileId = 2;
    /// WAL segment `n` is file `WAL_BASE + n`.
    pub const WAL_BASE: FileId = 0x4000_0000;
    /// First relation file id (PostgreSQL's FirstNormalObjectId).
    pub const FIRST_RELATION: FileId = 16384;
    /// True for WAL segment files.
    pub fn is_wal(f: FileId) -> bool {
        f >= WAL_BASE
    }
    /// True for relation files.
    pub fn is_relation(f: FileId) -> bool {
        (FIRST_RELATION..WAL_BASE).contains(&f)
    }
}

/// A raw backing store: numbered files of bytes. Implementations do no accounting; the
/// [`Nvme`] above them counts. All methods may be called from many threads at once.
///
/// Errors: [`DeviceError::NoSuchFile`] for a file that was not created,
/// [`DeviceError::ReadPastEof`] for a read past the end, [`DeviceError::Io`] for a
/// failure of the operating system.
pub trait Device: Send + Sync + 'static {
    /// Creates an empty file; a no-op if it exists.
    fn create(&self, file: FileId) -> Result<()>;
    /// Removes a file (a no-op if absent).
    fn remove(&self, file: FileId) -> Result<()>;
    /// The files that exist, ascending.
    fn files(&self) -> Result<Vec<FileId>>;
    /// The file's length in bytes.
    fn len_bytes(&self, file: FileId) -> Result<u64>;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Writes `data` at `offset`, extending the file (with zeros in any gap) as needed.
    fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes every write to `file` so far durable.
    fn sync(&self, file: FileId) -> Result<()>;
}

/// A shared device is a device: the storage can run on an `Arc` whose other clone a test
/// harness keeps (to cut the power of a [`CrashDevice`], say).
impl<D: Device + ?Sized> Device for std::sync::Arc<D> {
    fn create(&self, file: FileId) -> Result<()> {
        (**self).create(file)
    }
    fn remove(&self, file: FileId) -> Result<()> {
        (**self).remove(file)
    }
    fn files(&self) -> Result<Vec<FileId>> {
        (**self).files()
    }
    fn len_bytes(&self, file: FileId) -> Result<u64> {
        (**self).len_bytes(file)
    }
    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_at(file, offset, buf)
    }
    fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        (**self).write_at(file, offset, data)
    }
    fn sync(&self, file: FileId) -> Result<()> {
        (**self).sync(file)
    }
}

/// 4 KiB blocks touched by `len` bytes at `offset` (accounting rule 1).
#[inline]
pub fn blocks_4k(offset: u64, len: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    let end = offset + len as u64;
    end.div_ceil(BLOCK_4K) - offset / BLOCK_4K
}

/// Requests a call of `len` bytes becomes when split at `iop_max_bytes` (accounting rule 1).
#[inline]
pub fn requests(len: usize, iop_max_bytes: usize) -> u64 {
    if len == 0 {
        0
    } else {
        len.div_ceil(iop_max_bytes) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rounding_and_splitting_rules() {
        assert_eq!(blocks_4k(0, 65536), 16);
        assert_eq!(requests(65536, 16384), 4);
        assert_eq!(blocks_4k(0, 1), 1);
        assert_eq!(blocks_4k(4095, 2), 2);
        assert_eq!(blocks_4k(512, 512), 1);
        assert_eq!(blocks_4k(8192, 8192), 2);
        assert_eq!(blocks_4k(100, 0), 0);
        assert_eq!(requests(0, 16384), 0);
        assert_eq!(requests(16385, 16384), 2);
        assert_eq!(requests(512, 16384), 1);
    }

    proptest! {
        /// The block count equals the number of distinct 4 KiB block numbers the bytes fall in.
        #[test]
        fn blocks_equal_distinct_block_numbers(offset in 0u64..100_000, len in 0usize..70_000) {
            let distinct = if len == 0 { 0 } else {
                (offset / 4096..=(offset + len as u64 - 1) / 4096).count() as u64
            };
            prop_assert_eq!(blocks_4k(offset, len), distinct);
        }

        /// Every request is at most iop_max_bytes, and no fewer requests could carry len.
        #[test]
        fn requests_are_minimal(len in 1usize..1_000_000, iop in 512usize..200_000) {
            let n = requests(len, iop) as usize;
            prop_assert!(n * iop >= len);
            prop_assert!((n - 1) * iop < len);
        }
    }
}
