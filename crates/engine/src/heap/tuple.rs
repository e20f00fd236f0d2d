//! The heap tuple header (PostgreSQL src/include/access/htup_details.h,
//! `HeapTupleHeaderData`, 23 bytes + null bitmap, data at MAXALIGN(t_hoff)), with
//! [`maxalign`] (c.h `MAXALIGN`), which the page layout (`page.rs`) uses too, and the
//! header change of an updated or deleted tuple that the writers and redo share
//! (`set_old_xmax`).
//!
//! ```text
//! | offset | bytes | field        |
//! |--------|-------|--------------|
//! | 0      | 4     | t_xmin       | inserting xid
//! | 4      | 4     | t_xmax       | deleting/updating/locking xid (0 = none)
//! | 8      | 4     | t_cid        | command id (cmin or cmax; no combo cids)
//! | 12     | 4     | ctid block   | t_ctid: this tuple, or its newer version
//! | 16     | 2     | ctid offset  |
//! | 18     | 2     | t_infomask2  | natts (11 bits), HEAP_KEYS_UPDATED, HEAP_HOT_UPDATED, HEAP_ONLY_TUPLE
//! | 20     | 2     | t_infomask   | HEAP_HASNULL, hint bits, HEAP_XMAX_LOCK_ONLY, HEAP_UPDATED
//! | 22     | 1     | t_hoff       | offset of the data (MAXALIGN'd)
//! | 23     | n     | t_bits       | null bitmap, present with HEAP_HASNULL
//! | t_hoff | …     | data         | attributes (catalog::encode_heap)
//! ```

use crate::mvcc::Xid;
use crate::page::PageId;

/// MAXALIGN: rounds up to 8.
pub fn maxalign(n: usize) -> usize {
    (n + 7) & !7
}

/// Bytes of the fixed header (SizeofHeapTupleHeader).
pub const HEADER_BYTES: usize = 23;

/// t_infomask: has a null bitmap.
pub const HEAP_HASNULL: u16 = 0x0001;
/// t_infomask: xmax only locks the row.
pub const HEAP_XMAX_LOCK_ONLY: u16 = 0x0080;
/// t_infomask hint: xmin committed.
pub const HEAP_XMIN_COMMITTED: u16 = 0x0100;
/// t_infomask hint: xmin aborted.
pub const HEAP_XMIN_INVALID: u16 = 0x0200;
/// t_infomask hint: xmax committed.
pub const HEAP_XMAX_COMMITTED: u16 = 0x0400;
/// t_infomask hint: xmax invalid (none, or aborted).
pub const HEAP_XMAX_INVALID: u16 = 0x0800;
/// t_infomask: this is an updated version of a row.
pub const HEAP_UPDATED: u16 = 0x2000;
/// t_infomask2: number of attributes.
pub const HEAP_NATTS_MASK: u16 = 0x07FF;
/// t_infomask2: an update changed key columns (or the row was deleted).
pub const HEAP_KEYS_UPDATED: u16 = 0x2000;
/// t_infomask2: updated by a HOT update; the newer version is on this page.
pub const HEAP_HOT_UPDATED: u16 = 0x4000;
/// t_infomask2: a heap-only tuple (no index entry points at it).
pub const HEAP_ONLY_TUPLE: u16 = 0x8000;

/// A tuple id: (block, offset) of a line pointer (ItemPointerData, 6 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tid {
    /// Heap block.
    pub block: u32,
    /// Line pointer offset (1-based).
    pub offset: u16,
}

impl Tid {
    /// 6 bytes, big-endian, so that they sort as (block, offset) in index keys.
    pub fn to_bytes(self) -> [u8; 6] {
        let b = self.block.to_be_bytes();
        let o = self.offset.to_be_bytes();
        [b[0], b[1], b[2], b[3], o[0], o[1]]
    }
    /// Inverse of [`Tid::to_bytes`]; `None` unless exactly 6 bytes.
    pub fn from_bytes(b: &[u8]) -> Option<Tid> {
        let b: [u8; 6] = b.try_into().ok()?;
        Some(Tid {
            block: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            offset: u16::from_be_bytes([b[4], b[5]]),
        })
    }
    /// The page of this tid in relation `rel`.
    pub fn page(self, rel: u32) -> PageId {
        PageId::new(rel, self.block)
    }
}

impl std::fmt::Display for Tid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.block, self.offset)
    }
}

fn u16_at(t: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([t[o], t[o + 1]])
}
fn u32_at(t: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([t[o], t[o + 1], t[o + 2], t[o + 3]])
}

/// Builds a tuple: header for `xmin`/`cid`, ctid = `self_tid` (fixed up by the caller once
/// the tuple has a place), the null bitmap and data.
pub fn build(
    xmin: Xid,
    cid: u32,
    natts: u16,
    null_bitmap: Option<&[u8]>,
    data: &[u8],
    infomask: u16,
) -> Vec<u8> {
    let bits = null_bitmap.map_or(0, |b| b.len());
    let hoff = maxalign(HEADER_BYTES + bits);
    let mut t = vec![0u8; hoff + data.len()];
    t[0..4].copy_from_slice(&xmin.to_le_bytes());
    t[8..12].copy_from_slice(&cid.to_le_bytes());
    t[18..20].copy_from_slice(&(natts & HEAP_NATTS_MASK).to_le_bytes());
    let mask = infomask | HEAP_XMAX_INVALID | if bits > 0 { HEAP_HASNULL } else { 0 };
    t[20..22].copy_from_slice(&mask.to_le_bytes());
    t[22] = hoff as u8;
    if let Some(b) = null_bitmap {
        t[HEADER_BYTES..HEADER_BYTES + bits].copy_from_slice(b);
    }
    t[hoff..].copy_from_slice(data);
    t
}

/// Read access to a tuple's header fields.
pub trait HeaderRead {
    /// Tuple bytes.
    fn bytes(&self) -> &[u8];
    /// t_xmin.
    fn xmin(&self) -> Xid {
        u32_at(self.bytes(), 0)
    }
    /// t_xmax.
    fn xmax(&self) -> Xid {
        u32_at(self.bytes(), 4)
    }
    /// t_ctid.
    fn ctid(&self) -> Tid {
        Tid {
            block: u32_at(self.bytes(), 12),
            offset: u16_at(self.bytes(), 16),
        }
    }
    /// t_infomask.
    fn infomask(&self) -> u16 {
        u16_at(self.bytes(), 20)
    }
    /// t_infomask2.
    fn infomask2(&self) -> u16 {
        u16_at(self.bytes(), 18)
    }
    /// HEAP_HOT_UPDATED.
    fn is_hot_updated(&self) -> bool {
        self.infomask2() & HEAP_HOT_UPDATED != 0
    }
    /// HEAP_ONLY_TUPLE.
    fn is_heap_only(&self) -> bool {
        self.infomask2() & HEAP_ONLY_TUPLE != 0
    }
    /// The null bitmap (when HEAP_HASNULL) and the data.
    fn bitmap_and_data(&self) -> Option<(Option<&[u8]>, &[u8])> {
        let t = self.bytes();
        let hoff = *t.get(22)? as usize;
        if hoff < HEADER_BYTES || hoff > t.len() {
            return None;
        }
        let bitmap = (self.infomask() & HEAP_HASNULL != 0).then(|| &t[HEADER_BYTES..hoff]);
        Some((bitmap, &t[hoff..]))
    }
}

impl HeaderRead for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}
impl HeaderRead for &mut [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}
impl HeaderRead for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Writes t_xmax.
pub fn set_xmax(t: &mut [u8], xmax: Xid) {
    t[4..8].copy_from_slice(&xmax.to_le_bytes());
}
/// Writes t_cid.
pub fn set_cid(t: &mut [u8], cid: u32) {
    t[8..12].copy_from_slice(&cid.to_le_bytes());
}
/// Writes t_ctid.
pub fn set_ctid(t: &mut [u8], tid: Tid) {
    t[12..16].copy_from_slice(&tid.block.to_le_bytes());
    t[16..18].copy_from_slice(&tid.offset.to_le_bytes());
}
/// Writes t_infomask.
pub fn set_infomask(t: &mut [u8], m: u16) {
    t[20..22].copy_from_slice(&m.to_le_bytes());
}
/// Writes t_infomask2.
pub fn set_infomask2(t: &mut [u8], m: u16) {
    t[18..20].copy_from_slice(&m.to_le_bytes());
}
/// Is the tuple bytes long enough to hold a header? (decoders check before reading).
pub fn header_ok(t: &[u8]) -> bool {
    t.len() >= HEADER_BYTES && (t[22] as usize) >= HEADER_BYTES && (t[22] as usize) <= t.len()
}

/// Marks the old tuple as replaced or deleted by `xid` (also what redo does,
/// `heap::wal`).
pub(super) fn set_old_xmax(t: &mut [u8], xid: Xid, ctid: Tid, hot: bool, keys_updated: bool) {
    set_xmax(t, xid);
    let m = t.infomask() & !(HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_LOCK_ONLY);
    set_infomask(t, m);
    let mut m2 = t.infomask2() & !HEAP_HOT_UPDATED;
    if hot {
        m2 |= HEAP_HOT_UPDATED;
    }
    if keys_updated {
        m2 |= HEAP_KEYS_UPDATED;
    }
    set_infomask2(t, m2);
    set_ctid(t, ctid);
}
