//! The WAL record format: encoding, decoding (hardened: bad bytes give an error, never a
//! panic) and full-page images.
//!
//! A record, 8-byte aligned in the WAL stream (PostgreSQL MAXALIGN), laid out as
//! PostgreSQL 15's (src/include/access/xlogrecord.h), so that its bytes count as
//! PostgreSQL's do:
//! ```text
//! XLogRecord, 24 bytes:
//! | offset | bytes | field     |
//! |--------|-------|-----------|
//! | 0      | 4     | tot_len   | bytes of the record, padding excluded (xl_tot_len)
//! | 4      | 4     | xid       | transaction id, 0 = none (xl_xid)
//! | 8      | 8     | prev_lsn  | start of the previous record, 0 for the first (xl_prev)
//! | 16     | 1     | info      | record type within the resource manager (xl_info)
//! | 17     | 1     | rmgr      | resource manager, see [`rmgr`] (xl_rmid)
//! | 18     | 2     | zero      | padding
//! | 20     | 4     | crc       | CRC-32C of bytes [24, tot_len), then of bytes [0, 20)
//! then one header per block, in block order (XLogRecordBlockHeader and what follows it):
//! | 1 | id         | 0, 1, 2, ... (XLR_MAX_BLOCK_ID 32)
//! | 1 | fork_flags | fork 0 | HAS_IMAGE 0x10 | HAS_DATA 0x20 | WILL_INIT 0x40 | SAME_REL 0x80
//! | 2 | data_len   | block data bytes
//! | 5 | image hdr  | with HAS_IMAGE: image length u16, hole offset u16, bimg_info u8
//! |   |            | (HAS_HOLE 0x01, APPLY 0x02); with HAS_HOLE 2 more: hole length u16
//! | 12| rel        | without SAME_REL: RelFileNode (tablespace 1663, database 1, relation)
//! | 4 | block      | BlockNumber
//! then the main data's header when there is main data: 0xFF + length u8 (below 256
//! bytes, XLR_BLOCK_ID_DATA_SHORT) or 0xFE + length u32 (XLR_BLOCK_ID_DATA_LONG);
//! then each block's image and data, then the main data.
//! ```
//! `WILL_INIT` means redo rebuilds the page from the record alone (`REGBUF_WILL_INIT`);
//! an image is the page without its hole `[hole_offset, hole_offset + hole_len)`.
//! PostgreSQL derives the hole's length from BLCKSZ; mvcclab's pages have two sizes, so the
//! record carries it (2 bytes, PostgreSQL's compressed-image field). A one-block record
//! with 10 bytes of data and no main data costs 24 + 20 + 10 = 54 bytes, 56 with padding,
//! as in PostgreSQL.
//!
//! # The compact (`mtr`) format
//! The same [`WalRecord`] in the shape of MariaDB 10.8+'s redo log (the `innodb` preset,
//! design switch `wal_record_format = "mtr"`): variable-length integers, no padding, no
//! back pointer. Integers marked *v* are MariaDB's `mlog_encode_varint` encoding
//! (storage/innobase/include/mtr0log.h): 1 byte below 0x80, `10xxxxxx` + 1 byte below
//! 0x4080, `110xxxxx` + 2 bytes below 0x204080, `1110xxxx` + 3 bytes below 0x10204080,
//! else `0xF0` + 4 bytes (big-endian, each range offset by the previous ones).
//! ```text
//! | bytes | field         |
//! |-------|---------------|
//! | 1–5 v | body_len      | bytes from rmgr to the end of main data (0 = end of WAL)
//! | 1     | rmgr          |
//! | 1     | info          |
//! | 1–5 v | xid           | 0 = none
//! | 1–5 v | n_blocks      |
//! |       | per block:    |
//! | 1     | flags         | HAS_IMAGE 1, WILL_INIT 2, SAME_REL 4
//! | 1–5 v | rel           | absent with SAME_REL (same relation as the previous block)
//! | 1–5 v | block         |
//! | 3×v   | image fields  | with HAS_IMAGE only: hole_offset, hole_len, image_len
//! | 1–5 v | data_len      |
//! | 1–5 v | main_data_len |
//! | ...   | per block     | image bytes, then block data bytes (as in the xlog format)
//! | ...   | main data     |
//! | 4     | crc           | CRC-32C of every byte before it, body_len included (LE)
//! ```
//! A one-block record with 10 bytes of data and no image costs 12 header bytes plus the CRC
//! here against 44 (24 + 20) plus up to 7 bytes of padding in the xlog format.
//!
//! What it follows: a MariaDB mini-transaction (mtr0mtr.cc `mtr_t::finish_write`, parsed by
//! log0recv.cc `recv_sys_t::parse`) is a run of records of one type-and-length byte, the page
//! id as varints (space id, page number) left out when the record is for the same page as
//! the previous one (the "same page" flag, 0x80), then offset and payload; the run ends with
//! a one-byte termination marker and a CRC-32C of the mini-transaction. What differs here:
//! mvcclab still writes one record per change, each with its own length, resource manager,
//! type, xid and CRC (MariaDB: one CRC per mini-transaction of several records, no xid; the
//! transaction id lives in the undo and record bytes the redo rewrites); "same relation"
//! spares only the relation, not the block number; the length comes first as a varint rather
//! than in the low bits of a type byte. The record's start LSN is the byte position, as in
//! the xlog format; `prev_lsn` is not stored and the reader fills it with the start of the
//! record read before it (0 for the first one read).
//!
//! A WAL is read with the format it was written with: the format is a WAL setting
//! ([`WalFormat`], in `WalConfig::record_format`), recorded in the control file at each
//! checkpoint, and storage refuses to open a database whose control file names the other.

use crate::page::{Lsn, PageId};
use crate::page::{StorageError, StorageResult};
use serde::{Deserialize, Serialize};

/// How records are laid out in the WAL stream (design switch `wal_record_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WalFormat {
    /// PostgreSQL's `XLogRecord`: 32-byte header, 24 bytes per block, 8-byte aligned.
    #[default]
    Xlog,
    /// MariaDB-shaped compact records: varints, no padding (module doc).
    Mtr,
}

impl WalFormat {
    /// Code stored in the control file.
    pub fn code(self) -> u32 {
        match self {
            WalFormat::Xlog => 0,
            WalFormat::Mtr => 1,
        }
    }
    /// The format of control-file code `c`.
    pub fn from_code(c: u32) -> Option<Self> {
        match c {
            0 => Some(WalFormat::Xlog),
            1 => Some(WalFormat::Mtr),
            _ => None,
        }
    }
}

impl std::fmt::Display for WalFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WalFormat::Xlog => "xlog",
            WalFormat::Mtr => "mtr",
        })
    }
}

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
    /// The catalog: main data is a catalog version (u64 LE) and the whole catalog as JSON
    /// (`crate::recovery::CatalogSnapshot`), written and flushed at every DDL.
    pub const CATALOG: u8 = 6;
    /// Records written by tests and benchmarks (page filled with a byte).
    pub const TEST: u8 = 255;
}

/// `info` values of [`rmgr::CATALOG`].
pub mod catalog_info {
    /// The whole catalog (`crate::storage::Storage::log_catalog`).
    pub const SNAPSHOT: u8 = 0;
    /// The innodb design's `DB_ROW_ID` counter written to the data dictionary header
    /// (MariaDB dict0boot.cc `dict_hdr_flush_row_id`, `DICT_HDR_ROW_ID`); main data the
    /// value, u64 LE (`crate::clustered::RowIdSequence`).
    pub const ROW_ID: u8 = 1;
}

/// `info` values of [`rmgr::XLOG`].
pub mod xlog_info {
    /// Checkpoint; main data is the redo LSN (u64 LE), the engine's state (u32 LE length,
    /// then bytes: the postgres engine's next xid), then the catalog version (u64 LE) and
    /// the catalog (JSON; empty before the first DDL), as PostgreSQL's checkpoint record
    /// carries what recovery needs to start (`CheckPoint` in pg_control.h);
    /// `storage::checkpoint_main_data`.
    pub const CHECKPOINT: u8 = 1;
    /// A full-page image taken because a page changed without WAL (hint bits, index kill
    /// bits) for the first time since the checkpoint (xloginsert.c `XLogSaveBufferForHint`,
    /// XLOG_FPI_FOR_HINT; written only with full-page writes on, as PostgreSQL does when
    /// data checksums or wal_log_hints are on). One block with its image, no data.
    pub const FPI_FOR_HINT: u8 = 2;
    /// The shutdown checkpoint a clean close writes ([`CHECKPOINT`]'s main data; PostgreSQL
    /// pg_control.h XLOG_CHECKPOINT_SHUTDOWN, written by xlog.c `CreateCheckPoint` with
    /// CHECKPOINT_IS_SHUTDOWN). When it is the only record redo finds, the database was
    /// shut down cleanly and recovery has nothing to finish (xlog.c `StartupXLOG`:
    /// `wasShutdown` with the redo pointer at the record itself leaves `InRecovery` false).
    /// Not written when a B+tree split was left incomplete by an error
    /// ([`crate::btree::BTree::left_incomplete_split`]), so that the next open finishes it.
    pub const CHECKPOINT_SHUTDOWN: u8 = 3;
}

/// Bytes of the record header (XLogRecord, `SizeOfXLogRecord`).
pub const RECORD_HEADER_BYTES: usize = 24;
/// Bytes of one block's header in the xlog format without an image and with its relation
/// named: XLogRecordBlockHeader 4 + RelFileNode 12 + BlockNumber 4.
pub const BLOCK_HEADER_BYTES: usize = 20;
const FLAG_HAS_IMAGE: u8 = 1;
const FLAG_WILL_INIT: u8 = 2;
/// xlogrecord.h fork_flags bits.
const BKPBLOCK_HAS_IMAGE: u8 = 0x10;
const BKPBLOCK_HAS_DATA: u8 = 0x20;
const BKPBLOCK_WILL_INIT: u8 = 0x40;
const BKPBLOCK_SAME_REL: u8 = 0x80;
/// bimg_info bits.
const BKPIMAGE_HAS_HOLE: u8 = 0x01;
const BKPIMAGE_APPLY: u8 = 0x02;
/// Block ids of the main data's header (XLR_BLOCK_ID_DATA_SHORT / _LONG).
const XLR_BLOCK_ID_DATA_SHORT: u8 = 255;
const XLR_BLOCK_ID_DATA_LONG: u8 = 254;
/// Highest block id (XLR_MAX_BLOCK_ID).
const XLR_MAX_BLOCK_ID: usize = 32;
/// RelFileNode's tablespace and database oids in every xlog record (pg_default, and the
/// one database mvcclab keeps).
const REL_SPC_OID: u32 = 1663;
const REL_DB_OID: u32 = 1;
/// Compact format only: the block is in the previous block's relation (MariaDB's "same
/// page" flag, narrowed to the relation).
const FLAG_SAME_REL: u8 = 4;
/// Bytes of the compact format's CRC.
pub const MTR_CRC_BYTES: usize = 4;

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
    /// Errors: [`StorageError::Corrupted`] when image and hole do not add up to `page.len()`.
    pub fn restore(&self, page: &mut [u8]) -> StorageResult<()> {
        let (lo, len) = (self.hole_offset as usize, self.hole_len as usize);
        if self.bytes.len() + len != page.len() || lo > self.bytes.len() {
            return Err(StorageError::corrupted(format!(
                "full-page image: {} bytes + hole {}@{} do not make a {}-byte page",
                self.bytes.len(),
                len,
                lo,
                page.len()
            )));
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
    pub lsn: Lsn,
    /// LSN just past the record and its padding (the next record's start; what page LSNs
    /// are set to, as PostgreSQL's `EndRecPtr`).
    pub end_lsn: Lsn,
    /// Start of the previous record (compact format: the record read before this one, 0
    /// for the first one read).
    pub prev_lsn: Lsn,
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

/// Encodes a record in `format` with images `images[i]` for block `i`; returns the bytes,
/// padding included (xlog). `prev_lsn` is written by the xlog format only.
pub fn encode_with(
    format: WalFormat,
    b: &RecordBuilder,
    prev_lsn: u64,
    images: &[Option<PageImage>],
) -> Vec<u8> {
    match format {
        WalFormat::Xlog => encode(b, prev_lsn, images),
        WalFormat::Mtr => encode_mtr(b, images),
    }
}

/// Smallest value that takes 2, 3, 4 and 5 bytes as a varint (mtr0log.h `MIN_2BYTE`..).
const MIN_2BYTE: u32 = 1 << 7;
const MIN_3BYTE: u32 = MIN_2BYTE + (1 << 14);
const MIN_4BYTE: u32 = MIN_3BYTE + (1 << 21);
const MIN_5BYTE: u32 = MIN_4BYTE + (1 << 28);

/// Appends `v` as a MariaDB redo varint (module doc).
pub fn put_varint(out: &mut Vec<u8>, v: u32) {
    if v < MIN_2BYTE {
        out.push(v as u8);
    } else if v < MIN_3BYTE {
        let x = v - MIN_2BYTE;
        out.extend_from_slice(&[0x80 | (x >> 8) as u8, x as u8]);
    } else if v < MIN_4BYTE {
        let x = v - MIN_3BYTE;
        out.extend_from_slice(&[0xC0 | (x >> 16) as u8, (x >> 8) as u8, x as u8]);
    } else if v < MIN_5BYTE {
        let x = v - MIN_4BYTE;
        out.extend_from_slice(&[
            0xE0 | (x >> 24) as u8,
            (x >> 16) as u8,
            (x >> 8) as u8,
            x as u8,
        ]);
    } else {
        out.push(0xF0);
        out.extend_from_slice(&(v - MIN_5BYTE).to_be_bytes());
    }
}

/// Decodes a varint at the start of `b`: `(value, bytes)`, `None` when cut or invalid.
pub(crate) fn get_varint(b: &[u8]) -> Option<(u32, usize)> {
    let first = *b.first()? as u32;
    let tail = |n: usize| -> Option<u32> {
        let s = b.get(1..1 + n)?;
        Some(s.iter().fold(0u32, |a, &x| a << 8 | x as u32))
    };
    match first {
        0x00..=0x7F => Some((first, 1)),
        0x80..=0xBF => Some((MIN_2BYTE + ((first & 0x3F) << 8 | tail(1)?), 2)),
        0xC0..=0xDF => Some((MIN_3BYTE + ((first & 0x1F) << 16 | tail(2)?), 3)),
        0xE0..=0xEF => Some((MIN_4BYTE + ((first & 0x0F) << 24 | tail(3)?), 4)),
        0xF0 => {
            let x = tail(4)?;
            // Lazily: the sum overflows when x is out of range.
            (x <= !MIN_5BYTE).then(|| (MIN_5BYTE + x, 5))
        }
        _ => None,
    }
}

fn encode_mtr(b: &RecordBuilder, images: &[Option<PageImage>]) -> Vec<u8> {
    let len32 = |n: usize| u32::try_from(n).expect("record part below 4 GiB");
    let mut body = Vec::with_capacity(16 + b.main_data.len());
    body.push(b.rmgr);
    body.push(b.info);
    put_varint(&mut body, b.xid);
    put_varint(&mut body, len32(b.blocks.len()));
    let mut prev_rel = None;
    for (i, (page, will_init, data)) in b.blocks.iter().enumerate() {
        let im = images[i].as_ref();
        let same = prev_rel == Some(page.rel);
        let flags = if im.is_some() { FLAG_HAS_IMAGE } else { 0 }
            | if *will_init { FLAG_WILL_INIT } else { 0 }
            | if same { FLAG_SAME_REL } else { 0 };
        body.push(flags);
        if !same {
            put_varint(&mut body, page.rel);
        }
        put_varint(&mut body, page.block);
        if let Some(im) = im {
            put_varint(&mut body, im.hole_offset as u32);
            put_varint(&mut body, im.hole_len as u32);
            put_varint(&mut body, len32(im.bytes.len()));
        }
        put_varint(&mut body, len32(data.len()));
        prev_rel = Some(page.rel);
    }
    put_varint(&mut body, len32(b.main_data.len()));
    for (i, (_, _, data)) in b.blocks.iter().enumerate() {
        if let Some(im) = &images[i] {
            body.extend_from_slice(&im.bytes);
        }
        body.extend_from_slice(data);
    }
    body.extend_from_slice(&b.main_data);
    let mut out = Vec::with_capacity(body.len() + 5 + MTR_CRC_BYTES);
    put_varint(&mut out, len32(body.len()));
    out.extend_from_slice(&body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Total bytes (padding excluded) of the record starting at `bytes[0]` as its length field
/// says (0 when it is invalid), `None` when the bytes end inside the length field; for the
/// reader to tell a record cut by its window from the end of the WAL.
pub fn record_len(format: WalFormat, bytes: &[u8]) -> Option<usize> {
    match format {
        WalFormat::Xlog => bytes
            .get(..4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")) as usize),
        WalFormat::Mtr => match get_varint(bytes) {
            Some((body, n)) => Some(n + body as usize + MTR_CRC_BYTES),
            // A varint is at most 5 bytes: with 5 at hand it is invalid, not cut.
            None if bytes.len() < 5 => None,
            None => Some(0),
        },
    }
}

/// Decodes the record in `format` starting at `bytes[0]`, at WAL position `lsn`;
/// `prev_lsn` is used by the compact format, which does not store it. Never panics.
pub fn decode_with(format: WalFormat, bytes: &[u8], lsn: u64, prev_lsn: u64) -> Decoded {
    match format {
        WalFormat::Xlog => decode(bytes, lsn),
        WalFormat::Mtr => decode_mtr(bytes, lsn, prev_lsn),
    }
}

fn decode_mtr(bytes: &[u8], lsn: u64, prev_lsn: u64) -> Decoded {
    let Some((body, n)) = get_varint(bytes) else {
        return Decoded::End("partial or invalid record length");
    };
    if body == 0 {
        return Decoded::End("zero record length");
    }
    let Some(tot) = n
        .checked_add(body as usize)
        .and_then(|t| t.checked_add(MTR_CRC_BYTES))
        .filter(|&t| t <= bytes.len())
    else {
        return Decoded::End("invalid or partial record length");
    };
    let stored = u32::from_le_bytes(bytes[tot - 4..tot].try_into().expect("4"));
    if crc32c::crc32c(&bytes[..tot - 4]) != stored {
        return Decoded::End("record checksum mismatch");
    }
    match parse_mtr(&bytes[n..tot - 4], lsn, lsn + tot as u64, prev_lsn) {
        Some(r) => Decoded::Record(r),
        None => Decoded::End("record fields inconsistent with its length"),
    }
}

fn parse_mtr(body: &[u8], lsn: u64, end_lsn: u64, prev_lsn: u64) -> Option<WalRecord> {
    let mut c = Cursor { b: body, at: 0 };
    let rmgr = c.u8()?;
    let info = c.u8()?;
    let xid = c.varint()?;
    let n_blocks = c.varint()? as usize;
    let mut heads = Vec::with_capacity(n_blocks.min(64));
    let mut prev_rel = None;
    for _ in 0..n_blocks {
        let flags = c.u8()?;
        if flags & !(FLAG_HAS_IMAGE | FLAG_WILL_INIT | FLAG_SAME_REL) != 0 {
            return None;
        }
        let rel = if flags & FLAG_SAME_REL != 0 {
            prev_rel?
        } else {
            c.varint()?
        };
        let block = c.varint()?;
        let (hole_offset, hole_len, image_len) = if flags & FLAG_HAS_IMAGE != 0 {
            (
                u16::try_from(c.varint()?).ok()?,
                u16::try_from(c.varint()?).ok()?,
                c.varint()? as usize,
            )
        } else {
            (0, 0, 0)
        };
        let data_len = c.varint()? as usize;
        prev_rel = Some(rel);
        heads.push((
            PageId::new(rel, block),
            flags,
            hole_offset,
            hole_len,
            image_len,
            data_len,
        ));
    }
    let main_len = c.varint()? as usize;
    let blocks = take_blocks(&mut c, heads)?;
    let main_data = c.take(main_len)?.to_vec();
    if c.at != body.len() {
        return None;
    }
    Some(WalRecord {
        lsn: Lsn(lsn),
        end_lsn: Lsn(end_lsn),
        prev_lsn: Lsn(prev_lsn),
        xid,
        rmgr,
        info,
        blocks,
        main_data,
    })
}

type BlockHead = (PageId, u8, u16, u16, usize, usize);

/// Reads the image and data bytes of every block header in `heads` (both formats).
fn take_blocks(c: &mut Cursor<'_>, heads: Vec<BlockHead>) -> Option<Vec<BlockRef>> {
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
    Some(blocks)
}

/// Encodes a record (xlog format) with images `images[i]` for block `i`; returns the
/// bytes, padding included. Block data is below 64 KiB (pages are at most 16 KiB).
pub(crate) fn encode(b: &RecordBuilder, prev_lsn: u64, images: &[Option<PageImage>]) -> Vec<u8> {
    assert!(
        b.blocks.len() <= XLR_MAX_BLOCK_ID,
        "at most 33 blocks per record"
    );
    let mut out = Vec::with_capacity(64 + b.main_data.len());
    out.extend_from_slice(&[0u8; 4]); // tot_len, below
    out.extend_from_slice(&b.xid.to_le_bytes());
    out.extend_from_slice(&prev_lsn.to_le_bytes());
    out.push(b.info);
    out.push(b.rmgr);
    out.extend_from_slice(&[0u8; 2]);
    out.extend_from_slice(&[0u8; 4]); // crc, below
    let mut prev_rel = None;
    for (i, (page, will_init, data)) in b.blocks.iter().enumerate() {
        let im = images[i].as_ref();
        let same = prev_rel == Some(page.rel);
        let flags = if im.is_some() { BKPBLOCK_HAS_IMAGE } else { 0 }
            | if data.is_empty() {
                0
            } else {
                BKPBLOCK_HAS_DATA
            }
            | if *will_init { BKPBLOCK_WILL_INIT } else { 0 }
            | if same { BKPBLOCK_SAME_REL } else { 0 };
        out.push(i as u8);
        out.push(flags);
        let data_len = u16::try_from(data.len()).expect("block data below 64 KiB");
        out.extend_from_slice(&data_len.to_le_bytes());
        if let Some(im) = im {
            let len = u16::try_from(im.bytes.len()).expect("an image is at most a page");
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&im.hole_offset.to_le_bytes());
            let hole = im.hole_len > 0;
            out.push(BKPIMAGE_APPLY | if hole { BKPIMAGE_HAS_HOLE } else { 0 });
            if hole {
                out.extend_from_slice(&im.hole_len.to_le_bytes());
            }
        }
        if !same {
            out.extend_from_slice(&REL_SPC_OID.to_le_bytes());
            out.extend_from_slice(&REL_DB_OID.to_le_bytes());
            out.extend_from_slice(&page.rel.to_le_bytes());
        }
        out.extend_from_slice(&page.block.to_le_bytes());
        prev_rel = Some(page.rel);
    }
    match b.main_data.len() {
        0 => {}
        n if n < 256 => {
            out.push(XLR_BLOCK_ID_DATA_SHORT);
            out.push(n as u8);
        }
        n => {
            out.push(XLR_BLOCK_ID_DATA_LONG);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
    }
    for (i, (_, _, data)) in b.blocks.iter().enumerate() {
        if let Some(im) = &images[i] {
            out.extend_from_slice(&im.bytes);
        }
        out.extend_from_slice(data);
    }
    out.extend_from_slice(&b.main_data);
    let tot = out.len();
    out[0..4].copy_from_slice(&(tot as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[24..]), &out[..20]);
    out[20..24].copy_from_slice(&crc.to_le_bytes());
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
    fn varint(&mut self) -> Option<u32> {
        let (v, n) = get_varint(self.b.get(self.at..)?)?;
        self.at += n;
        Some(v)
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
    let stored = u32::from_le_bytes(bytes[20..24].try_into().expect("4"));
    if crc32c::crc32c_append(crc32c::crc32c(&bytes[24..tot]), &bytes[..20]) != stored {
        return Decoded::End("record checksum mismatch");
    }
    match parse(&bytes[..tot], lsn) {
        Some(r) => Decoded::Record(r),
        None => Decoded::End("record fields inconsistent with its length"),
    }
}

fn parse(rec: &[u8], lsn: u64) -> Option<WalRecord> {
    let mut c = Cursor { b: rec, at: 4 };
    let xid = c.u32()?;
    let prev_lsn = c.u64()?;
    let info = c.u8()?;
    let rmgr = c.u8()?;
    if c.u16()? != 0 {
        return None;
    }
    c.u32()?; // crc, checked by the caller
    let mut heads = Vec::new();
    let mut main_len = 0;
    let mut payload = 0usize;
    let mut prev_rel = None;
    // Headers until what is left is exactly the payload they announced (xlogreader.c
    // `DecodeXLogRecord`).
    while rec.len() - c.at > payload {
        let id = c.u8()?;
        if id == XLR_BLOCK_ID_DATA_SHORT || id == XLR_BLOCK_ID_DATA_LONG {
            main_len = if id == XLR_BLOCK_ID_DATA_SHORT {
                c.u8()? as usize
            } else {
                c.u32()? as usize
            };
            payload = payload.checked_add(main_len)?;
            break;
        }
        if id as usize != heads.len() || heads.len() > XLR_MAX_BLOCK_ID {
            return None;
        }
        let fork_flags = c.u8()?;
        let data_len = c.u16()? as usize;
        if fork_flags & 0x0F != 0 || (fork_flags & BKPBLOCK_HAS_DATA == 0) != (data_len == 0) {
            return None;
        }
        let (mut image_len, mut hole_offset, mut hole_len) = (0, 0, 0);
        if fork_flags & BKPBLOCK_HAS_IMAGE != 0 {
            image_len = c.u16()? as usize;
            hole_offset = c.u16()?;
            let bimg_info = c.u8()?;
            if bimg_info & !(BKPIMAGE_HAS_HOLE | BKPIMAGE_APPLY) != 0 {
                return None;
            }
            if bimg_info & BKPIMAGE_HAS_HOLE != 0 {
                hole_len = c.u16()?;
                if hole_len == 0 {
                    return None;
                }
            }
        }
        let rel = if fork_flags & BKPBLOCK_SAME_REL != 0 {
            prev_rel?
        } else {
            let (spc, db) = (c.u32()?, c.u32()?);
            if (spc, db) != (REL_SPC_OID, REL_DB_OID) {
                return None;
            }
            c.u32()?
        };
        let block = c.u32()?;
        prev_rel = Some(rel);
        let flags = if fork_flags & BKPBLOCK_HAS_IMAGE != 0 {
            FLAG_HAS_IMAGE
        } else {
            0
        } | if fork_flags & BKPBLOCK_WILL_INIT != 0 {
            FLAG_WILL_INIT
        } else {
            0
        };
        payload = payload.checked_add(image_len)?.checked_add(data_len)?;
        heads.push((
            PageId::new(rel, block),
            flags,
            hole_offset,
            hole_len,
            image_len,
            data_len,
        ));
    }
    if rec.len() - c.at != payload {
        return None;
    }
    let blocks = take_blocks(&mut c, heads)?;
    let main_data = c.take(main_len)?.to_vec();
    if c.at != rec.len() {
        return None;
    }
    Some(WalRecord {
        lsn: Lsn(lsn),
        end_lsn: Lsn(lsn + align8(rec.len() as u64)),
        prev_lsn: Lsn(prev_lsn),
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
            (r.xid, r.rmgr, r.info, r.prev_lsn.0),
            (42, rmgr::HEAP, 3, 1234)
        );
        assert_eq!(r.end_lsn.0, 4096 + bytes.len() as u64);
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

    #[test]
    fn mtr_roundtrip_with_image_and_same_relation() {
        let (b, images) = sample();
        let b = b.block(PageId::new(16385, 10), false, b"again");
        let images = [images, vec![None]].concat();
        let bytes = encode_with(WalFormat::Mtr, &b, 1234, &images);
        let Decoded::Record(r) = decode_with(WalFormat::Mtr, &bytes, 4099, 77) else {
            panic!("not decoded")
        };
        assert_eq!(
            (r.xid, r.rmgr, r.info, r.prev_lsn.0),
            (42, rmgr::HEAP, 3, 77)
        );
        assert_eq!(r.end_lsn.0, 4099 + bytes.len() as u64, "no padding");
        assert_eq!(r.blocks.len(), 3);
        assert_eq!(r.blocks[2].page, PageId::new(16385, 10));
        assert_eq!(r.blocks[2].data, b"again");
        assert!(r.blocks[1].will_init && r.blocks[1].image.is_none());
        assert_eq!(r.blocks[0].image, images[0]);
        assert_eq!(r.main_data, b"main");
        assert_eq!(record_len(WalFormat::Mtr, &bytes), Some(bytes.len()));
    }

    /// The sizes the compact format exists for: one small change to one page.
    #[test]
    fn a_small_mtr_record_is_far_smaller_than_its_xlog_twin() {
        let b = RecordBuilder::new(rmgr::CLUSTERED, 3).xid(1000).block(
            PageId::new(16384, 5),
            false,
            &[9u8; 10],
        );
        let xlog = encode_with(WalFormat::Xlog, &b, 8, &[None]);
        let mtr = encode_with(WalFormat::Mtr, &b, 8, &[None]);
        // 24 header + 20 block header + 10 data = 54, padded to 56: PostgreSQL's sizes.
        assert_eq!(xlog.len(), 56);
        assert_eq!(record_len(WalFormat::Xlog, &xlog), Some(54));
        // len 1, rmgr 1, info 1, xid 2, n_blocks 1, flags 1, rel 2, block 1, data_len 1,
        // main_len 1, data 10, crc 4.
        assert_eq!(mtr.len(), 26);
        assert_eq!(mtr[0], 21, "body length");
        // A second block of the same relation costs flags, block, data_len and its data.
        let b2 = b.clone().block(PageId::new(16384, 6), false, &[1u8; 3]);
        let mtr2 = encode_with(WalFormat::Mtr, &b2, 8, &[None, None]);
        assert_eq!(mtr2.len(), 26 + 3 + 3);
        // In the xlog format the second block costs a header of 8 (id, flags, data_len,
        // block number: SAME_REL leaves out the RelFileNode) and its data: 54 + 11 = 65.
        let xlog2 = encode_with(WalFormat::Xlog, &b2, 8, &[None, None]);
        assert_eq!(record_len(WalFormat::Xlog, &xlog2), Some(65));
        assert_eq!(xlog2.len(), 72);
        // Main data adds its 2-byte header (XLR_BLOCK_ID_DATA_SHORT) below 256 bytes, 5 from
        // 256 on: a commit record (8 bytes of main data) is 34 bytes, as PostgreSQL's.
        let commit = RecordBuilder::new(rmgr::XACT, 0)
            .xid(7)
            .main_data(&[0u8; 8]);
        assert_eq!(
            record_len(
                WalFormat::Xlog,
                &encode_with(WalFormat::Xlog, &commit, 8, &[])
            ),
            Some(34)
        );
        let long = RecordBuilder::new(rmgr::XACT, 0).main_data(&[0u8; 300]);
        let bytes = encode_with(WalFormat::Xlog, &long, 8, &[]);
        assert_eq!(record_len(WalFormat::Xlog, &bytes), Some(24 + 5 + 300));
        let Decoded::Record(r) = decode(&bytes, 0) else {
            panic!("long main data decodes")
        };
        assert_eq!(r.main_data.len(), 300);
    }

    #[test]
    fn varints_follow_mariadb_boundaries_and_reject_bad_first_bytes() {
        for (v, n) in [
            (0u32, 1usize),
            (127, 1),
            (128, 2),
            (MIN_3BYTE - 1, 2),
            (MIN_3BYTE, 3),
            (MIN_4BYTE - 1, 3),
            (MIN_4BYTE, 4),
            (MIN_5BYTE - 1, 4),
            (MIN_5BYTE, 5),
            (u32::MAX, 5),
        ] {
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(out.len(), n, "{v:#x}");
            assert_eq!(get_varint(&out), Some((v, n)), "{v:#x}");
            assert_eq!(get_varint(&out[..n - 1]), None, "cut {v:#x}");
        }
        assert_eq!(get_varint(&[0x80, 0x00]), Some((128, 2)));
        for first in 0xF1..=0xFFu8 {
            assert_eq!(get_varint(&[first, 0, 0, 0, 0]), None);
        }
        assert_eq!(get_varint(&[0xF0, 0xFF, 0xFF, 0xFF, 0xFF]), None);
        assert_eq!(
            record_len(WalFormat::Mtr, &[0xFF; 8]),
            Some(0),
            "invalid, not cut"
        );
        assert_eq!(record_len(WalFormat::Mtr, &[0xC0, 0]), None, "cut");
    }

    #[test]
    fn any_flipped_byte_ends_an_mtr_wal_instead_of_decoding() {
        let (b, images) = sample();
        let bytes = encode_with(WalFormat::Mtr, &b, 0, &images);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(
                matches!(decode_with(WalFormat::Mtr, &bad, 8, 0), Decoded::End(_)),
                "byte {i}"
            );
        }
        for cut in 0..bytes.len() {
            assert!(matches!(
                decode_with(WalFormat::Mtr, &bytes[..cut], 8, 0),
                Decoded::End(_)
            ));
        }
        assert!(matches!(
            decode_with(WalFormat::Mtr, &[0u8; 64], 8, 0),
            Decoded::End("zero record length")
        ));
    }

    fn arb_record() -> impl Strategy<Value = (RecordBuilder, Vec<Option<PageImage>>)> {
        let block = (
            prop_oneof![Just(16384u32), Just(16385), any::<u32>()],
            any::<u32>(),
            any::<bool>(),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::option::of((
                0usize..64,
                0usize..64,
                proptest::collection::vec(any::<u8>(), 64..128),
            )),
        );
        (
            any::<u8>(),
            any::<u8>(),
            any::<u32>(),
            proptest::collection::vec(block, 0..5),
            proptest::collection::vec(any::<u8>(), 0..300),
        )
            .prop_map(|(rm, info, xid, blocks, main)| {
                let mut b = RecordBuilder::new(rm, info).xid(xid).main_data(&main);
                let mut images = vec![];
                for (rel, block, will_init, data, img) in blocks {
                    b = b.block(PageId::new(rel, block), will_init, &data);
                    images.push(img.map(|(lo, len, bytes)| PageImage {
                        hole_offset: lo as u16,
                        hole_len: len as u16,
                        bytes,
                    }));
                }
                (b, images)
            })
    }

    proptest! {
        /// Any record comes back as it was built, in both formats, at any position.
        #[test]
        fn random_records_roundtrip_in_both_formats(
            (b, images) in arb_record(),
            lsn in 8u64..1 << 40,
            prev in any::<u64>(),
            mtr in any::<bool>(),
        ) {
            let format = if mtr { WalFormat::Mtr } else { WalFormat::Xlog };
            let bytes = encode_with(format, &b, prev, &images);
            let Decoded::Record(r) = decode_with(format, &bytes, lsn, prev) else {
                panic!("not decoded")
            };
            prop_assert_eq!(r.end_lsn.0, lsn + bytes.len() as u64);
            let tot = record_len(format, &bytes).unwrap();
            prop_assert_eq!(if mtr { tot } else { align8(tot as u64) as usize }, bytes.len());
            prop_assert_eq!((r.lsn.0, r.prev_lsn.0, r.xid, r.rmgr, r.info), (lsn, prev, b.xid, b.rmgr, b.info));
            prop_assert_eq!(&r.main_data, &b.main_data);
            prop_assert_eq!(r.blocks.len(), b.blocks.len());
            for (i, blk) in r.blocks.iter().enumerate() {
                let (page, will_init, data) = &b.blocks[i];
                prop_assert_eq!((blk.page, blk.will_init, &blk.data), (*page, *will_init, data));
                prop_assert_eq!(&blk.image, &images[i]);
            }
            if format == WalFormat::Xlog {
                prop_assert_eq!(bytes.len() % 8, 0);
            }
            // Followed by zeros (a WAL's tail), the record still decodes and the next is the end.
            let mut tail = bytes.clone();
            tail.resize(bytes.len() + 64, 0);
            prop_assert!(matches!(decode_with(format, &tail[bytes.len()..], r.end_lsn.0, lsn), Decoded::End(_)));
        }

        /// The compact decoder never panics, whatever the bytes.
        #[test]
        fn mtr_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_with(WalFormat::Mtr, &bytes, 8, 0);
            let _ = record_len(WalFormat::Mtr, &bytes);
        }

        /// Compact garbage with a valid length and CRC never panics and, when it parses,
        /// spans exactly its bytes.
        #[test]
        fn mtr_decode_with_valid_crc_never_panics(body in proptest::collection::vec(any::<u8>(), 1..300)) {
            let mut bytes = vec![];
            put_varint(&mut bytes, body.len() as u32);
            bytes.extend_from_slice(&body);
            let crc = crc32c::crc32c(&bytes);
            bytes.extend_from_slice(&crc.to_le_bytes());
            if let Decoded::Record(r) = decode_with(WalFormat::Mtr, &bytes, 8, 0) {
                prop_assert_eq!(r.end_lsn.0, 8 + bytes.len() as u64);
            }
        }

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
                prop_assert_eq!(r.end_lsn.0, 8 + align8(tot as u64));
            }
        }
    }
}
