//! The WAL record format: encoding, decoding (hardened: bad bytes give an error, never a
//! panic) and full-page images.
//!
//! A record, 8-byte aligned in the WAL stream (PostgreSQL MAXALIGN):
//! ```text
//! | offset | bytes | field          |
//! |--------|-------|----------------|
//! | 0      | 4     | tot_len        | bytes of the record, padding excluded
//! | 4      | 4     | crc            | CRC-32C of bytes [8, tot_len) then bytes [0, 4)
//! | 8      | 8     | prev_lsn       | start of the previous record (0 for the first)
//! | 16     | 4     | xid            | transaction id (0 = none)
//! | 20     | 1     | rmgr           | resource manager (see [`rmgr`])
//! | 21     | 1     | info           | record type within the resource manager
//! | 22     | 2     | n_blocks       | block references that follow
//! | 24     | 4     | main_data_len  |
//! | 28     | 4     | reserved       | zero
//! | 32     | 24×n  | block headers  | rel u32, block u32, flags u8, pad u8, hole_offset u16,
//! |        |       |                | hole_len u16, pad u16, image_len u32, data_len u32
//! | ...    |       | per block      | image bytes, then block data bytes
//! | ...    |       | main data      |
//! ```
//! Block flags: `HAS_IMAGE` (a full-page image follows: the page minus the hole
//! `[hole_offset, hole_offset + hole_len)`), `WILL_INIT` (redo rebuilds the page from the
//! record alone; PostgreSQL `REGBUF_WILL_INIT`). This is the layout of PostgreSQL's
//! `XLogRecord` + `XLogRecordBlockHeader` (xlogrecord.h), flattened: every field redo needs
//! (page identity, image, per-block data, main data, xid) is present, so crash recovery
//! needs no format change.

use crate::error::{Error, Result};
use crate::page::PageId;

/// Resource manager ids (PostgreSQL rmgrlist.h). The presets add theirs.
pub mod rmgr {
    /// WAL-internal records: checkpoint, no-op.
    pub const XLOG: u8 = 0;
    /// Heap (postgres preset).
    pub const HEAP: u8 = 1;
    /// B+tree.
    pub const BTREE: u8 = 2;
    /// Transaction commit/abort.
    pub const XACT: u8 = 3;
    /// Clustered index records (innodb preset).
    pub const CLUSTERED: u8 = 4;
    /// Undo log (innodb preset).
    pub const UNDO: u8 = 5;
    /// Records written by tests and benchmarks (page filled with a byte).
    pub const TEST: u8 = 255;
}

/// `info` values of [`rmgr::XLOG`].
pub mod xlog_info {
    /// Checkpoint; main data is the redo LSN (u64 LE).
    pub const CHECKPOINT: u8 = 1;
}

/// Bytes of the record header.
pub const RECORD_HEADER_BYTES: usize = 32;
/// Bytes of one block header.
pub const BLOCK_HEADER_BYTES: usize = 24;
const FLAG_HAS_IMAGE: u8 = 1;
const FLAG_WILL_INIT: u8 = 2;

/// A full-page image: the page without its hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageImage {
    /// Offset of the hole in the page.
    pub hole_offset: u16,
    /// Length of the hole (0 when the whole page is stored).
    pub hole_len: u16,
    /// The page bytes outside the hole.
    pub bytes: Vec<u8>,
}

impl PageImage {
    /// Image of `page` without `hole` (`(lower, upper)`), or the whole page.
    pub fn of(page: &[u8], hole: Option<(usize, usize)>) -> Self {
        match hole {
            Some((lo, hi)) => {
                let mut bytes = Vec::with_capacity(page.len() - (hi - lo));
                bytes.extend_from_slice(&page[..lo]);
                bytes.extend_from_slice(&page[hi..]);
                PageImage {
                    hole_offset: lo as u16,
                    hole_len: (hi - lo) as u16,
                    bytes,
                }
            }
            None => PageImage {
                hole_offset: 0,
                hole_len: 0,
                bytes: page.to_vec(),
            },
        }
    }

    /// Rebuilds the page (hole zero-filled) into `page`.
    ///
    /// Errors: [`Error::Corrupted`] when image and hole do not add up to `page.len()`.
    pub fn restore(&self, page: &mut [u8]) -> Result<()> {
        let (lo, len) = (self.hole_offset as usize, self.hole_len as usize);
        if self.bytes.len() + len != page.len() || lo > self.bytes.len() {
            return Err(Error::Corrupted {
                what: format!(
                    "full-page image: {} bytes + hole {}@{} do not make a {}-byte page",
                    self.bytes.len(),
                    len,
                    lo,
                    page.len()
                ),
            });
        }
        page[..lo].copy_from_slice(&self.bytes[..lo]);
        page[lo..lo + len].fill(0);
        page[lo + len..].copy_from_slice(&self.bytes[lo..]);
        Ok(())
    }
}

/// One page a record changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// The page.
    pub page: PageId,
    /// Redo rebuilds the page from this record alone (no image needed).
    pub will_init: bool,
    /// Full-page image, when the first-change-after-checkpoint rule attached one.
    pub image: Option<PageImage>,
    /// Per-block redo data of the resource manager.
    pub data: Vec<u8>,
}

/// A decoded WAL record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalRecord {
    /// Start LSN.
    pub lsn: u64,
    /// LSN just past the record and its padding (the next record's start; what page LSNs
    /// are set to, as PostgreSQL's `EndRecPtr`).
    pub end_lsn: u64,
    /// Start of the previous record.
    pub prev_lsn: u64,
    /// Transaction id (0 = none).
    pub xid: u32,
    /// Resource manager.
    pub rmgr: u8,
    /// Record type.
    pub info: u8,
    /// Pages changed.
    pub blocks: Vec<BlockRef>,
    /// Resource-manager data not tied to a page.
    pub main_data: Vec<u8>,
}

/// A record under construction: what the caller registers before `Wal::insert` (PostgreSQL
/// `XLogBeginInsert` / `XLogRegisterBuffer` / `XLogRegisterData`).
#[derive(Clone, Debug, Default)]
pub struct RecordBuilder {
    pub(crate) xid: u32,
    pub(crate) rmgr: u8,
    pub(crate) info: u8,
    pub(crate) blocks: Vec<(PageId, bool, Vec<u8>)>,
    pub(crate) main_data: Vec<u8>,
}

impl RecordBuilder {
    /// A record of resource manager `rmgr`, type `info`.
    pub fn new(rmgr: u8, info: u8) -> Self {
        RecordBuilder {
            rmgr,
            info,
            ..Default::default()
        }
    }
    /// Sets the transaction id.
    pub fn xid(mut self, xid: u32) -> Self {
        self.xid = xid;
        self
    }
    /// Registers page `page` (block index = registration order) with its redo `data`;
    /// `will_init` when redo rebuilds the page from the record alone.
    pub fn block(mut self, page: PageId, will_init: bool, data: &[u8]) -> Self {
        self.blocks.push((page, will_init, data.to_vec()));
        self
    }
    /// Sets the main data.
    pub fn main_data(mut self, data: &[u8]) -> Self {
        self.main_data = data.to_vec();
        self
    }
    /// Pages registered, in order.
    pub fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.blocks.iter().map(|b| b.0)
    }
}

/// Rounds `n` up to 8.
pub fn align8(n: u64) -> u64 {
    (n + 7) & !7
}

/// Encodes a record at `lsn` with images `images[i]` for block `i`; returns the bytes,
/// padding included.
pub(crate) fn encode(b: &RecordBuilder, prev_lsn: u64, images: &[Option<PageImage>]) -> Vec<u8> {
    let mut tot = RECORD_HEADER_BYTES + BLOCK_HEADER_BYTES * b.blocks.len() + b.main_data.len();
    for (i, (_, _, data)) in b.blocks.iter().enumerate() {
        tot += data.len() + images[i].as_ref().map_or(0, |im| im.bytes.len());
    }
    let mut out = Vec::with_capacity(align8(tot as u64) as usize);
    out.extend_from_slice(&(tot as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&prev_lsn.to_le_bytes());
    out.extend_from_slice(&b.xid.to_le_bytes());
    out.push(b.rmgr);
    out.push(b.info);
    out.extend_from_slice(&(b.blocks.len() as u16).to_le_bytes());
    out.extend_from_slice(&(b.main_data.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    for (i, (page, will_init, data)) in b.blocks.iter().enumerate() {
        let im = images[i].as_ref();
        let flags = if im.is_some() { FLAG_HAS_IMAGE } else { 0 }
            | if *will_init { FLAG_WILL_INIT } else { 0 };
        out.extend_from_slice(&page.rel.to_le_bytes());
        out.extend_from_slice(&page.block.to_le_bytes());
        out.push(flags);
        out.push(0);
        out.extend_from_slice(&im.map_or(0, |i| i.hole_offset).to_le_bytes());
        out.extend_from_slice(&im.map_or(0, |i| i.hole_len).to_le_bytes());
        out.extend_from_slice(&[0u8; 2]);
        out.extend_from_slice(&(im.map_or(0, |i| i.bytes.len()) as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    }
    for (i, (_, _, data)) in b.blocks.iter().enumerate() {
        if let Some(im) = &images[i] {
            out.extend_from_slice(&im.bytes);
        }
        out.extend_from_slice(data);
    }
    out.extend_from_slice(&b.main_data);
    debug_assert_eq!(out.len(), tot);
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[8..]), &out[..4]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    out.resize(align8(tot as u64) as usize, 0);
    out
}

/// Outcome of decoding at one position.
#[derive(Debug)]
pub enum Decoded {
    /// A valid record of `len` bytes (padding excluded).
    Record(WalRecord),
    /// No valid record here: the end of the WAL (zeros, a torn or partial record, a bad
    /// CRC), as PostgreSQL's `ReadRecord` treats an invalid record as end of WAL.
    End(&'static str),
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8")))
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
}

/// Decodes the record starting at `bytes[0]`, which sits at WAL position `lsn`. Never
/// panics on any input.
pub fn decode(bytes: &[u8], lsn: u64) -> Decoded {
    if bytes.len() < RECORD_HEADER_BYTES {
        return Decoded::End("partial record header");
    }
    let tot = u32::from_le_bytes(bytes[0..4].try_into().expect("4")) as usize;
    if tot == 0 {
        return Decoded::End("zero record length");
    }
    if tot < RECORD_HEADER_BYTES || tot > bytes.len() {
        return Decoded::End("invalid or partial record length");
    }
    let stored = u32::from_le_bytes(bytes[4..8].try_into().expect("4"));
    if crc32c::crc32c_append(crc32c::crc32c(&bytes[8..tot]), &bytes[..4]) != stored {
        return Decoded::End("record checksum mismatch");
    }
    match parse(&bytes[..tot], lsn) {
        Some(r) => Decoded::Record(r),
        None => Decoded::End("record fields inconsistent with its length"),
    }
}

fn parse(rec: &[u8], lsn: u64) -> Option<WalRecord> {
    let mut c = Cursor { b: rec, at: 8 };
    let prev_lsn = c.u64()?;
    let xid = c.u32()?;
    let rmgr = c.u8()?;
    let info = c.u8()?;
    let n_blocks = c.u16()? as usize;
    let main_len = c.u32()? as usize;
    c.u32()?;
    let mut heads = Vec::with_capacity(n_blocks.min(64));
    for _ in 0..n_blocks {
        let rel = c.u32()?;
        let block = c.u32()?;
        let flags = c.u8()?;
        c.u8()?;
        let hole_offset = c.u16()?;
        let hole_len = c.u16()?;
        c.u16()?;
        let image_len = c.u32()? as usize;
        let data_len = c.u32()? as usize;
        if flags & !(FLAG_HAS_IMAGE | FLAG_WILL_INIT) != 0
            || (flags & FLAG_HAS_IMAGE == 0 && image_len != 0)
        {
            return None;
        }
        heads.push((
            PageId::new(rel, block),
            flags,
            hole_offset,
            hole_len,
            image_len,
            data_len,
        ));
    }
    let mut blocks = Vec::with_capacity(heads.len());
    for (page, flags, hole_offset, hole_len, image_len, data_len) in heads {
        let image = if flags & FLAG_HAS_IMAGE != 0 {
            let bytes = c.take(image_len)?.to_vec();
            if hole_offset as usize > bytes.len() {
                return None;
            }
            Some(PageImage {
                hole_offset,
                hole_len,
                bytes,
            })
        } else {
            None
        };
        let data = c.take(data_len)?.to_vec();
        blocks.push(BlockRef {
            page,
            will_init: flags & FLAG_WILL_INIT != 0,
            image,
            data,
        });
    }
    let main_data = c.take(main_len)?.to_vec();
    if c.at != rec.len() {
        return None;
    }
    Some(WalRecord {
        lsn,
        end_lsn: lsn + align8(rec.len() as u64),
        prev_lsn,
        xid,
        rmgr,
        info,
        blocks,
        main_data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> (RecordBuilder, Vec<Option<PageImage>>) {
        let mut page = vec![7u8; 8192];
        page[100..8000].fill(0);
        let b = RecordBuilder::new(rmgr::HEAP, 3)
            .xid(42)
            .block(PageId::new(16384, 1), false, b"tuple")
            .block(PageId::new(16385, 9), true, b"")
            .main_data(b"main");
        let img = PageImage::of(&page, Some((100, 8000)));
        (b, vec![Some(img), None])
    }

    #[test]
    fn encode_decode_roundtrip_with_image() {
        let (b, images) = sample();
        let bytes = encode(&b, 1234, &images);
        assert_eq!(bytes.len() % 8, 0);
        let Decoded::Record(r) = decode(&bytes, 4096) else {
            panic!("not decoded")
        };
        assert_eq!(
            (r.xid, r.rmgr, r.info, r.prev_lsn),
            (42, rmgr::HEAP, 3, 1234)
        );
        assert_eq!(r.end_lsn, 4096 + bytes.len() as u64);
        assert_eq!(r.blocks.len(), 2);
        assert_eq!(r.blocks[0].data, b"tuple");
        assert!(r.blocks[1].will_init && r.blocks[1].image.is_none());
        assert_eq!(r.main_data, b"main");
        let img = r.blocks[0].image.as_ref().unwrap();
        assert_eq!(img.bytes.len(), 8192 - 7900);
        let mut page = vec![0xFFu8; 8192];
        img.restore(&mut page).unwrap();
        assert_eq!(&page[..100], &[7u8; 100][..]);
        assert!(page[100..8000].iter().all(|&x| x == 0));
        assert!(img.restore(&mut vec![0u8; 16384]).is_err());
    }

    #[test]
    fn any_flipped_byte_ends_the_wal_instead_of_decoding() {
        let (b, images) = sample();
        let bytes = encode(&b, 0, &images);
        let tot = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        for i in 0..tot {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(matches!(decode(&bad, 0), Decoded::End(_)), "byte {i}");
        }
    }

    proptest! {
        /// The decoder never panics, whatever the bytes.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&bytes, 8);
        }

        /// Garbage with a valid CRC still never panics and is rejected or parsed consistently.
        #[test]
        fn decode_with_valid_crc_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 32..300)) {
            let tot = bytes.len();
            bytes[..4].copy_from_slice(&(tot as u32).to_le_bytes());
            let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[8..]), &bytes[..4]);
            bytes[4..8].copy_from_slice(&crc.to_le_bytes());
            if let Decoded::Record(r) = decode(&bytes, 8) {
                prop_assert_eq!(r.end_lsn, 8 + align8(tot as u64));
            }
        }
    }
}
