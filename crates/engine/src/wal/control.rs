//! The control file (PostgreSQL `global/pg_control`, xlog.c `UpdateControlFile`): where the
//! last checkpoint is. Written and synced at the end of every checkpoint.
//!
//! ```text
//! | offset | bytes | field           |
//! |--------|-------|-----------------|
//! | 0      | 4     | magic "MVCL"    |
//! | 4      | 4     | version (2)     |
//! | 8      | 4     | page_size_bytes |
//! | 12     | 4     | wal_block_bytes |
//! | 16     | 8     | segment_bytes   |
//! | 24     | 8     | checkpoint_lsn  | start of the last checkpoint record
//! | 32     | 8     | redo_lsn        | its redo pointer
//! | 40     | 4     | wal_format      | WAL record format: 0 xlog, 1 mtr ([`WalFormat::code`])
//! | 44     | 4     | crc             | CRC-32C of bytes [0, 44)
//! ```
//! Version 1 files (no `wal_format`, CRC at 40) read as the xlog format.
//! The file is one 512-byte sector, so its write is atomic on any device.

use super::WalFormat;
use crate::device::{file_ids, Vfs};
use crate::page::{StorageError, StorageResult};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 4] = b"MVCL";
const BYTES: usize = 512;

/// Contents of the control file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlFile {
    /// Page size of the database in bytes.
    pub page_size_bytes: u32,
    /// WAL write unit in bytes.
    pub wal_block_bytes: u32,
    /// WAL segment size in bytes.
    pub segment_bytes: u64,
    /// Start of the last checkpoint record (0 before the first checkpoint).
    pub checkpoint_lsn: u64,
    /// Redo pointer of the last checkpoint.
    pub redo_lsn: u64,
    /// Record format the WAL is written in.
    pub wal_format: WalFormat,
}

impl ControlFile {
    /// Reads it; `None` when the file does not exist (a new database).
    ///
    /// Errors: [`StorageError::Corrupted`] for a bad magic, version or CRC; device errors.
    pub fn read(vfs: &Vfs) -> StorageResult<Option<Self>> {
        if !vfs.files()?.contains(&file_ids::CONTROL) {
            return Ok(None);
        }
        let mut b = [0u8; BYTES];
        vfs.read_at(file_ids::CONTROL, 0, &mut b)?;
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
        let version = u32_at(4);
        if &b[0..4] != MAGIC || !(1..=2).contains(&version) {
            return Err(StorageError::corrupted(
                "control file: bad magic or version",
            ));
        }
        let crc_at = if version == 1 { 40 } else { 44 };
        if crc32c::crc32c(&b[..crc_at]) != u32_at(crc_at) {
            return Err(StorageError::corrupted("control file: checksum mismatch"));
        }
        let wal_format = if version == 1 {
            WalFormat::Xlog
        } else {
            WalFormat::from_code(u32_at(40)).ok_or_else(|| {
                StorageError::corrupted(format!(
                    "control file: unknown WAL record format {}",
                    u32_at(40)
                ))
            })?
        };
        Ok(Some(ControlFile {
            page_size_bytes: u32_at(8),
            wal_block_bytes: u32_at(12),
            segment_bytes: u64_at(16),
            checkpoint_lsn: u64_at(24),
            redo_lsn: u64_at(32),
            wal_format,
        }))
    }

    /// Writes and syncs it.
    ///
    /// Errors: device errors.
    pub fn write(&self, vfs: &Vfs) -> StorageResult<()> {
        let mut b = [0u8; BYTES];
        b[0..4].copy_from_slice(MAGIC);
        b[4..8].copy_from_slice(&2u32.to_le_bytes());
        b[8..12].copy_from_slice(&self.page_size_bytes.to_le_bytes());
        b[12..16].copy_from_slice(&self.wal_block_bytes.to_le_bytes());
        b[16..24].copy_from_slice(&self.segment_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.checkpoint_lsn.to_le_bytes());
        b[32..40].copy_from_slice(&self.redo_lsn.to_le_bytes());
        b[40..44].copy_from_slice(&self.wal_format.code().to_le_bytes());
        let crc = crc32c::crc32c(&b[..44]);
        b[44..48].copy_from_slice(&crc.to_le_bytes());
        vfs.create(file_ids::CONTROL)?;
        vfs.write_at(file_ids::CONTROL, 0, &b)?;
        Ok(vfs.sync(file_ids::CONTROL)?)
    }
}
