//! A bounds-checked reader over a WAL record's block data or main data, shared by the
//! resource managers' redo: every read past the end, and bytes left over at the end, give
//! [`StorageError::Corrupted`] naming the record's LSN and the byte position, never a panic.

use super::Lsn;
use crate::page::{StorageError, StorageResult};

/// Reads little-endian integers and byte runs from one record part.
pub(crate) struct DataReader<'a> {
    b: &'a [u8],
    at: usize,
    lsn: Lsn,
    /// The record kind and part, for errors ("B+tree WAL record", "heap WAL record
    /// (block data)").
    what: &'static str,
}

impl<'a> DataReader<'a> {
    /// A reader over `b`, part `what` of the record at `lsn`.
    pub(crate) fn new(b: &'a [u8], lsn: Lsn, what: &'static str) -> Self {
        DataReader {
            b,
            at: 0,
            lsn,
            what,
        }
    }

    /// The error for a bad record: `"{what} at {lsn}: {why} (at byte i of n)"`.
    pub(crate) fn bad(&self, why: &str) -> StorageError {
        StorageError::corrupted(format!(
            "{} at {}: {why} (at byte {} of {})",
            self.what,
            self.lsn,
            self.at,
            self.b.len()
        ))
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> StorageResult<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| self.bad("data too short"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// True when every byte was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.at == self.b.len()
    }

    /// Every byte left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = &self.b[self.at..];
        self.at = self.b.len();
        s
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> StorageResult<u8> {
        Ok(self.bytes(1)?[0])
    }

    /// A MariaDB redo varint (`crate::wal::put_varint`).
    pub(crate) fn varint(&mut self) -> StorageResult<u32> {
        let (v, n) = super::record::get_varint(&self.b[self.at..])
            .ok_or_else(|| self.bad("cut or invalid varint"))?;
        self.at += n;
        Ok(v)
    }

    /// A little-endian u16.
    pub(crate) fn u16(&mut self) -> StorageResult<u16> {
        let s = self.bytes(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }

    /// A little-endian u32.
    pub(crate) fn u32(&mut self) -> StorageResult<u32> {
        let s = self.bytes(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// Errors unless every byte was read.
    pub(crate) fn end(&self) -> StorageResult<()> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err(self.bad("trailing bytes"))
        }
    }
}
