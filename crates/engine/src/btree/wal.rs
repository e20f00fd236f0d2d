//! The B+tree's WAL records ([`rmgr::BTREE`](crate::wal::rmgr::BTREE)): info codes,
//! block data encoders, decoders and redo of one block.
//!
//! Records are physiological, as PostgreSQL's nbtxlog.h: a block is named physically, the
//! change inside it logically (slot and entry bytes). Block data formats (all integers
//! little-endian):
//! ```text
//! entry      = key_len u16 | value_len u16 | key | value
//! slot_entry = slot u16 | entry
//! node_image = level u16 | flags u16 | left u32 | right u32 | n u16 | n × entry
//! split_left = level u16 | flags u16 | left u32 | right u32 | head u16 | n u16 | n × entry
//!              | from u16 | tail u16
//!              (the page's entries after the split: the first `head` entries it held
//!              before, the `n` entries given, then its entries `from..from + tail`)
//! geometry   = entry_header_bytes u8 | entry_align u8 | slot_bytes u8 | flags u8
//!              (bit 0: innodb_compact)
//! ```
//! | info | name | blocks (registration order) and their data | main data |
//! |------|------|--------------------------------------------|-----------|
//! | 0x00 | INSERT_LEAF  | 0: leaf, `slot_entry` (insert before slot) | — |
//! | 0x10 | INSERT_UPPER | 0: internal page, `slot_entry` (separator, child u32); 1: left child, empty (clears INCOMPLETE_SPLIT) | — |
//! | 0x20 | UPDATE_VALUE | 0: leaf, `slot_entry` (replaces the entry at slot) | — |
//! | 0x40 | PATCH_VALUE  | 0: leaf, `slot u16 | n u16 | n × (at u16 | len u16 | bytes)` (overwrites bytes `at..at+len` of the value of the entry at slot, for each of the `n` spans; the entry keeps its size) | — |
//! | 0x30 | SPLIT        | 0: left page (the page split), `split_left`; 1: new right page, will_init, `node_image`; then, as `which` says, the old right sibling (`new left u32`) and the child whose split this completes (empty; clears INCOMPLETE_SPLIT) | `geometry`, `which u8` (bit 0: old right sibling, bit 1: child), `sep_len u16`, separator |
//! | 0x50 | DELETE_DEAD  | 0: leaf, `n u16 | n × slot u16` (ascending: entries removed), then, only when a posting entry lost some of its TIDs, `m u16 | m × slot_entry` (ascending: entries rewritten first, slots as before the record) | `latest_removed_xid u32` |
//! | 0x60 | BUILD        | 0: a page of a sorted build, will_init, `node_image`; 1 (on the last page only): meta page, will_init, meta fields | `geometry` |
//! | 0x70 | DELETE       | 0: leaf, `slot u16 | key_len u16 | key` | — |
//! | 0xA0 | NEWROOT      | 0: new root, will_init, `node_image`; 1: left child, empty (clears INCOMPLETE_SPLIT); 2: meta page, will_init, meta fields (24 bytes, `node::Meta::encode`) | `geometry` |
//! | 0x80 | INSERT_POST  | 0: leaf, `slot u16 | tid (6 bytes)`: the TID swapped into the posting entry at slot, whose largest TID comes out as a plain entry at slot + 1 (`dedup::swap_insert`) | — |
//! | 0x90 | DEDUP        | 0: leaf, `n u16 | n × (first slot u16 | count u16)`: each interval merged into one posting entry (`dedup::apply_pass`) | — |
//! | 0xC0 | VACUUM       | 0: leaf, as DELETE_DEAD: `n u16 | n × slot u16` (ascending: entries removed), then, only when a posting entry lost some of its TIDs, `m u16 | m × slot_entry` (entries rewritten; slots as before the record); redo compacts the survivors as the change did | — |
//! | 0xF0 | CREATE       | 0: meta page, will_init, meta fields; 1: root leaf, will_init, `node_image` | — |
//! | 0xB0 | MERGE        | 0: surviving leaf, `right u32 | n u16 | n × entry` (its new right link; the entries appended at its end); 1: freed leaf, will_init, empty; 2: parent, `slot u16` (the freed leaf's downlink, removed); 3 (when the freed leaf had a right sibling): that sibling, `new left u32` | `geometry` |
//! | 0xD0 | MERGE_RIGHT  | 0: surviving leaf (the freed leaf's right sibling), `left u32 | n u16 | n × entry` (its new left link; the entries put before its own); 1: freed leaf, will_init, empty; 2: parent, `slot u16 | child u32` (the freed leaf's downlink, which now names the survivor `child`; the survivor's old downlink at `slot + 1` removed); 3 (when the freed leaf had a left sibling): that sibling, `new right u32` | `geometry` |
//!
//! The codes follow PostgreSQL's `XLOG_BTREE_*` where the record means the same
//! (INSERT_LEAF 0x00, INSERT_UPPER 0x10, NEWROOT 0xA0, VACUUM 0xC0); SPLIT
//! stands for SPLIT_L/SPLIT_R (0x30/0x40). As there, only the new right page is logged
//! whole: the left page is rebuilt from its contents before the split and the entries
//! that differ from them (the new item when it stays left), so its block is not
//! will-init and takes a full-page image at its first change after a checkpoint
//! (nbtinsert.c `_bt_split` registers the original page with REGBUF_STANDARD; nbtxlog.c
//! `btree_xlog_split` reconstructs it). InnoDB likewise logs a split as the moved
//! records' inserts into the new page and a few header writes on the old one
//! (btr0btr.cc `btr_page_split_and_insert` → `page_move_rec_list_end`). UPDATE_VALUE
//! (InnoDB's update-in-place redo, `MLOG_REC_UPDATE_IN_PLACE`) and CREATE (PostgreSQL logs
//! a new index's pages as full images) are mvcclab's. PATCH_VALUE is the in-place update as
//! MariaDB 10.5+ logs it: btr0cur.cc `btr_cur_upd_rec_sys` writes DB_TRX_ID and
//! DB_ROLL_PTR and `btr_cur_upd_rec_in_place` each updated field, each through mtr0log.h
//! `mtr_t::memcpy<MAYBE_NOP>`, which skips the field's leading unchanged bytes and logs
//! nothing for an unchanged one; mvcclab puts every changed run of the record in one
//! record (MariaDB: one WRITE record per field, in one mini-transaction), under a code
//! PostgreSQL gives to XLOG_BTREE_SPLIT_R (SPLIT covers both sides here). DELETE_DEAD is PostgreSQL's
//! XLOG_BTREE_DELETE of simple and bottom-up deletion (nbtxlog.h `xl_btree_delete`: the
//! conflict horizon, then the deleted offsets), under a code PostgreSQL gives to
//! XLOG_BTREE_INSERT_META, which mvcclab does not write. INSERT_POST and DEDUP are
//! PostgreSQL's XLOG_BTREE_INSERT_POST and XLOG_BTREE_DEDUP (nbtxlog.h `xl_btree_insert`
//! with `postingoff`, `xl_btree_dedup` with its `BTDedupInterval`s; `btree_xlog_insert`,
//! `btree_xlog_dedup`) under codes PostgreSQL gives to page deletion, which mvcclab does
//! not do (0x50 and 0x60 are DELETE_DEAD and BUILD here); a posting entry losing one TID
//! in a plain delete is an UPDATE_VALUE of the rewritten entry. The trailing parts of
//! DELETE_DEAD and VACUUM are PostgreSQL's `updated` items (`xl_btree_update`), absent
//! (so the bytes are those of a tree without deduplication) when there are none. MERGE
//! is InnoDB's page merge (btr0btr.cc `btr_compress`), which MariaDB logs as the moved
//! records' inserts, the node pointer's delete and the page's FREE_PAGE record in one
//! mini-transaction; PostgreSQL has no such record. MERGE_RIGHT is the same merge when
//! the leaf moves into its right sibling (`btr_compress` with `is_left` false:
//! `page_copy_rec_list_end` into the right page, `btr_level_list_remove`,
//! `btr_node_ptr_set_child_page_no` on the leaf's node pointer, the right page's own node
//! pointer deleted), under a code PostgreSQL gives to XLOG_BTREE_REUSE_PAGE, which
//! mvcclab does not write.

use super::node::{self, Geometry, Meta, NodeHeader, FLAG_INCOMPLETE_SPLIT, META_BYTES};
use crate::error::Result;
use crate::page::{set_page_lsn, PageId};
use crate::wal::data::DataReader;
use crate::wal::redo::redo_block_ref;
use crate::wal::{Lsn, WalRecord};

/// `info` codes of [`rmgr::BTREE`](crate::wal::rmgr::BTREE) records; block data formats in
/// the `btree::wal` module doc.
pub mod info {
    /// Insert into a leaf (PostgreSQL XLOG_BTREE_INSERT_LEAF).
    pub const INSERT_LEAF: u8 = 0x00;
    /// Insert a downlink into an internal page (PostgreSQL XLOG_BTREE_INSERT_UPPER).
    pub const INSERT_UPPER: u8 = 0x10;
    /// Replace a leaf entry's value in place.
    pub const UPDATE_VALUE: u8 = 0x20;
    /// Overwrite the runs of changed bytes of a leaf entry's value in place, the entry
    /// keeping its size (MariaDB logs an in-place update as the changed bytes only:
    /// btr0cur.cc `btr_cur_upd_rec_sys` and `btr_cur_upd_rec_in_place` write the system
    /// columns and each updated field with `mtr_t::memcpy<MAYBE_NOP>`).
    pub const PATCH_VALUE: u8 = 0x40;
    /// Split a page in two (PostgreSQL XLOG_BTREE_SPLIT_L / _R).
    pub const SPLIT: u8 = 0x30;
    /// Delete one leaf entry by key.
    pub const DELETE: u8 = 0x70;
    /// Delete a leaf's entries whose heap tuples are dead to everyone, before a split
    /// (PostgreSQL XLOG_BTREE_DELETE, written by nbtpage.c `_bt_delitems_delete` for
    /// simple and bottom-up deletion).
    pub const DELETE_DEAD: u8 = 0x50;
    /// New root above a split root (PostgreSQL XLOG_BTREE_NEWROOT).
    pub const NEWROOT: u8 = 0xA0;
    /// Bulk delete of one leaf's dead entries (PostgreSQL XLOG_BTREE_VACUUM).
    pub const VACUUM: u8 = 0xC0;
    /// One page of a sorted index build, logged whole (PostgreSQL `log_newpage` from
    /// nbtsort.c `_bt_blwritepage`), with the meta page on the last (the root).
    pub const BUILD: u8 = 0x60;
    /// Index creation: meta page and empty root leaf.
    pub const CREATE: u8 = 0xF0;
    /// Insert whose TID falls inside a posting entry: the posting list swap (PostgreSQL
    /// XLOG_BTREE_INSERT_POST, nbtdedup.c `_bt_swap_posting`).
    pub const INSERT_POST: u8 = 0x80;
    /// Deduplication pass over a leaf (PostgreSQL XLOG_BTREE_DEDUP, nbtdedup.c
    /// `_bt_dedup_pass`).
    pub const DEDUP: u8 = 0x90;
    /// A leaf merged into its left sibling and freed (InnoDB btr0btr.cc `btr_compress`).
    pub const MERGE: u8 = 0xB0;
    /// A leaf merged into its right sibling and freed (InnoDB btr0btr.cc `btr_compress`
    /// when the leaf does not fit into its left sibling: `is_left` false).
    pub const MERGE_RIGHT: u8 = 0xD0;
}

/// The name of B+tree record `info` (the constant's name in [`info`]), `None` for an
/// unknown code.
pub fn info_name(code: u8) -> Option<&'static str> {
    Some(match code {
        info::INSERT_LEAF => "INSERT_LEAF",
        info::INSERT_UPPER => "INSERT_UPPER",
        info::UPDATE_VALUE => "UPDATE_VALUE",
        info::PATCH_VALUE => "PATCH_VALUE",
        info::SPLIT => "SPLIT",
        info::DELETE => "DELETE",
        info::DELETE_DEAD => "DELETE_DEAD",
        info::NEWROOT => "NEWROOT",
        info::VACUUM => "VACUUM",
        info::BUILD => "BUILD",
        info::CREATE => "CREATE",
        info::INSERT_POST => "INSERT_POST",
        info::DEDUP => "DEDUP",
        info::MERGE => "MERGE",
        info::MERGE_RIGHT => "MERGE_RIGHT",
        _ => return None,
    })
}

/// Appends `n u16 | n × entry`.
fn put_entries<K: AsRef<[u8]>, V: AsRef<[u8]>>(out: &mut Vec<u8>, entries: &[(K, V)]) {
    put16(out, entries.len() as u16);
    for (k, v) in entries {
        let (k, v) = (k.as_ref(), v.as_ref());
        put16(out, k.len() as u16);
        put16(out, v.len() as u16);
        out.extend_from_slice(k);
        out.extend_from_slice(v);
    }
}

/// `link u32 | n u16 | n × entry`: the surviving leaf's data in a MERGE record (`link` is
/// its new right link, the entries are appended) or a MERGE_RIGHT record (its new left
/// link, the entries put first).
pub fn encode_merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(link: u32, entries: &[(K, V)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&link.to_le_bytes());
    put_entries(&mut out, entries);
    out
}

/// The header of a page a merge freed: a leaf with no links, flagged
/// [`node::FLAG_FREED`].
pub fn freed_header() -> NodeHeader {
    NodeHeader {
        level: 0,
        flags: node::FLAG_FREED,
        left: node::NO_BLOCK,
        right: node::NO_BLOCK,
    }
}

/// `which` bit of a SPLIT record: the old right sibling is registered.
pub const SPLIT_HAS_OLD_RIGHT: u8 = 1;
/// `which` bit of a SPLIT record: the child whose split this completes is registered.
pub const SPLIT_HAS_CHILD: u8 = 2;

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// `slot u16 | key_len u16 | value_len u16 | key | value`.
pub fn encode_slot_entry(slot: usize, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + key.len() + value.len());
    put16(&mut out, slot as u16);
    put16(&mut out, key.len() as u16);
    put16(&mut out, value.len() as u16);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

/// Bytes of a PATCH_VALUE span's header in the block data: `at u16 | len u16`.
pub const PATCH_SPAN_HEADER_BYTES: usize = 4;

/// `slot u16 | n u16 | n × (at u16 | len u16 | bytes)`: the block data of PATCH_VALUE,
/// bytes `at..at+len` of `value` (the entry's new value) for each span `(at, at+len)` of
/// `spans` (ascending, disjoint, inside `value`).
pub fn encode_patch(slot: usize, value: &[u8], spans: &[(usize, usize)]) -> Vec<u8> {
    let bytes: usize = spans
        .iter()
        .map(|(a, b)| PATCH_SPAN_HEADER_BYTES + b - a)
        .sum();
    let mut out = Vec::with_capacity(4 + bytes);
    put16(&mut out, slot as u16);
    put16(&mut out, spans.len() as u16);
    for &(a, b) in spans {
        put16(&mut out, a as u16);
        put16(&mut out, (b - a) as u16);
        out.extend_from_slice(&value[a..b]);
    }
    out
}

/// `slot u16 | key_len u16 | key`.
pub fn encode_delete(slot: usize, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + key.len());
    put16(&mut out, slot as u16);
    put16(&mut out, key.len() as u16);
    out.extend_from_slice(key);
    out
}

/// `n u16 | n × slot u16` (block data of DELETE_DEAD).
pub fn encode_slots(slots: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 2 * slots.len());
    put16(&mut out, slots.len() as u16);
    for &s in slots {
        put16(&mut out, s as u16);
    }
    out
}

/// `slot u16 | tid` (block data of INSERT_POST).
pub fn encode_insert_post(slot: usize, tid: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + tid.len());
    put16(&mut out, slot as u16);
    out.extend_from_slice(tid);
    out
}

/// `n u16 | n × (first slot u16 | count u16)` (block data of DEDUP).
pub fn encode_intervals(intervals: &[(usize, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 4 * intervals.len());
    put16(&mut out, intervals.len() as u16);
    for &(a, n) in intervals {
        put16(&mut out, a as u16);
        put16(&mut out, n as u16);
    }
    out
}

/// Block data of DELETE_DEAD and VACUUM: the slots removed, then the posting entries
/// rewritten (only when there are some).
pub fn encode_removed_slots(slots: &[usize], updates: &[(usize, node::Entry)]) -> Vec<u8> {
    let mut out = encode_slots(slots);
    if !updates.is_empty() {
        put16(&mut out, updates.len() as u16);
        for (i, e) in updates {
            out.extend_from_slice(&encode_slot_entry(*i, &e.key, &e.value));
        }
    }
    out
}

/// A leaf's entries after VACUUM removed those at `slots` and rewrote those in `updated`
/// (slots as before; both ascending): the survivors in slot order, which the change and
/// its redo both build the page from (one compaction, bufpage.c `PageIndexMultiDelete`).
pub fn vacuumed_entries(
    entries: Vec<node::Entry>,
    slots: &[usize],
    updated: &[(usize, node::Entry)],
) -> Vec<node::Entry> {
    let (mut gone, mut new) = (slots.iter().peekable(), updated.iter().peekable());
    let mut keep = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        if gone.next_if(|&&s| s == i).is_some() {
            continue;
        }
        match new.next_if(|u| u.0 == i) {
            Some((_, e)) => keep.push(e.clone()),
            None => keep.push(e),
        }
    }
    keep
}

/// `split_left`: the left page of a split, header `h` and entries `left`, as its
/// difference from `before`, the entries the page held before the split. The shortest
/// middle part is chosen among those that leave the rest a prefix of `before` and a run of
/// `before` starting at most two entries after it (an insert, a replacement, a removal,
/// or a replacement and an insert); anything else is logged whole in the middle part.
pub fn encode_split_left<K: AsRef<[u8]>, V: AsRef<[u8]>, BK: AsRef<[u8]>, BV: AsRef<[u8]>>(
    h: NodeHeader,
    before: &[(BK, BV)],
    left: &[(K, V)],
) -> Vec<u8> {
    let same = |(bk, bv): &(BK, BV), (k, v): &(K, V)| {
        bk.as_ref() == k.as_ref() && bv.as_ref() == v.as_ref()
    };
    let head = before
        .iter()
        .zip(left)
        .take_while(|(e, l)| same(e, l))
        .count();
    let rest = left.len() - head;
    let (mut mid, mut from, mut tail) = (rest, 0, 0);
    'search: for e in 0..=rest.min(2) {
        let run = rest - e;
        for j in head..=(head + 2).min(before.len()) {
            if j + run <= before.len()
                && before[j..j + run]
                    .iter()
                    .zip(&left[head + e..])
                    .all(|(b, l)| same(b, l))
            {
                (mid, from, tail) = (e, j, run);
                break 'search;
            }
        }
    }
    let mut out = Vec::new();
    put_header(&mut out, h);
    put16(&mut out, head as u16);
    put_entries(&mut out, &left[head..head + mid]);
    put16(&mut out, from as u16);
    put16(&mut out, tail as u16);
    out
}

/// `level u16 | flags u16 | left u32 | right u32 | n u16 | n × entry`.
pub fn encode_node<K: AsRef<[u8]>, V: AsRef<[u8]>>(h: NodeHeader, entries: &[(K, V)]) -> Vec<u8> {
    let mut out = Vec::new();
    put_header(&mut out, h);
    put_entries(&mut out, entries);
    out
}

/// Appends `level u16 | flags u16 | left u32 | right u32`.
fn put_header(out: &mut Vec<u8>, h: NodeHeader) {
    put16(out, h.level);
    put16(out, h.flags);
    out.extend_from_slice(&h.left.to_le_bytes());
    out.extend_from_slice(&h.right.to_le_bytes());
}

/// `n u16 | n × (key_len u16 | key)`.
pub fn encode_keys<K: AsRef<[u8]>>(keys: &[K]) -> Vec<u8> {
    let mut out = Vec::new();
    put16(&mut out, keys.len() as u16);
    for k in keys {
        put16(&mut out, k.as_ref().len() as u16);
        out.extend_from_slice(k.as_ref());
    }
    out
}

/// `entry_header_bytes u8 | entry_align u8 | slot_bytes u8 | flags u8` (bit 0:
/// [`Geometry::innodb_compact`]).
pub fn encode_geometry(g: Geometry) -> [u8; 4] {
    [
        g.entry_header_bytes as u8,
        g.entry_align as u8,
        g.slot_bytes as u8,
        u8::from(g.innodb_compact),
    ]
}

/// Main data of a SPLIT record.
pub fn encode_split_main(g: Geometry, which: u8, separator: &[u8]) -> Vec<u8> {
    let mut out = encode_geometry(g).to_vec();
    out.push(which);
    put16(&mut out, separator.len() as u16);
    out.extend_from_slice(separator);
    out
}

/// The bounds-checked record reader, with the B+tree's own fields.
type Reader<'a> = DataReader<'a>;

/// Reads the B+tree's composite fields from a record part.
trait BtreeFields<'a> {
    /// `key_len u16 | value_len u16 | key | value`.
    fn entry(&mut self) -> Result<(&'a [u8], &'a [u8])>;
    /// `n u16 | n × entry`.
    fn entries(&mut self) -> Result<Vec<(&'a [u8], &'a [u8])>>;
    /// `level u16 | flags u16 | left u32 | right u32`.
    fn node_header(&mut self) -> Result<NodeHeader>;
    /// `entry_header_bytes u8 | entry_align u8 | slot_bytes u8 | flags u8`, validated.
    fn geometry(&mut self) -> Result<Geometry>;
}

impl<'a> BtreeFields<'a> for DataReader<'a> {
    fn entry(&mut self) -> Result<(&'a [u8], &'a [u8])> {
        let k = self.u16()? as usize;
        let v = self.u16()? as usize;
        Ok((self.bytes(k)?, self.bytes(v)?))
    }
    fn entries(&mut self) -> Result<Vec<(&'a [u8], &'a [u8])>> {
        let n = self.u16()? as usize;
        let mut entries = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            entries.push(self.entry()?);
        }
        Ok(entries)
    }
    fn node_header(&mut self) -> Result<NodeHeader> {
        Ok(NodeHeader {
            level: self.u16()?,
            flags: self.u16()?,
            left: self.u32()?,
            right: self.u32()?,
        })
    }
    fn geometry(&mut self) -> Result<Geometry> {
        let (h, a, s, flags) = (self.u8()?, self.u8()?, self.u8()?, self.u8()?);
        let g = Geometry {
            entry_header_bytes: h as u16,
            entry_align: a as u16,
            slot_bytes: s as u16,
            innodb_compact: flags == 1,
        };
        if flags > 1 {
            return Err(self.bad("unknown geometry flags").into());
        }
        g.validate().map_err(|_| self.bad("impossible geometry"))?;
        Ok(g)
    }
}

/// A reader over part of the B+tree record at `lsn`.
fn reader(b: &[u8], lsn: Lsn) -> Reader<'_> {
    DataReader::new(b, lsn, "B+tree WAL record")
}

/// Redo of a MERGE (`before` false) or MERGE_RIGHT (`before` true) record's surviving
/// leaf: `link u32 | n u16 | n × entry` read from `r`, the survivor `page` (block `id`)
/// rebuilt with the moved entries after its own and `link` as its right sibling, or before
/// them and `link` as its left sibling.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for short
/// or trailing bytes, a bad page, or moved keys on the wrong side of the survivor's.
fn redo_merge_survivor(
    page: &mut [u8],
    id: PageId,
    r: &mut Reader<'_>,
    before: bool,
) -> Result<()> {
    let link = r.u32()?;
    let moved = r.entries()?;
    r.end()?;
    let (h, g, own) = {
        let survivor = node::Node::parse(page, id)?;
        let h = survivor.header();
        let h = if before {
            NodeHeader { left: link, ..h }
        } else {
            NodeHeader { right: link, ..h }
        };
        (h, survivor.geometry(), survivor.entries()?)
    };
    let moved: Vec<node::Entry> = moved
        .iter()
        .map(|(k, v)| node::Entry {
            key: k.to_vec(),
            value: v.to_vec(),
        })
        .collect();
    let (low, high) = if before { (moved, own) } else { (own, moved) };
    if let (Some(last), Some(first)) = (low.last(), high.first()) {
        if last.key >= first.key {
            return Err(r
                .bad(if before {
                    "MERGE_RIGHT puts keys not below the surviving leaf's first"
                } else {
                    "MERGE appends keys not above the surviving leaf's"
                })
                .into());
        }
    }
    let all: Vec<node::Entry> = low.into_iter().chain(high).collect();
    node::build(page, id, g, h, &node::pairs(&all))
}

/// A decoded `node_image`.
pub type NodeImage<'a> = (NodeHeader, Vec<(&'a [u8], &'a [u8])>);

/// Decodes a `node_image` (block data of SPLIT, NEWROOT and CREATE).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the record's LSN for short or trailing bytes.
pub fn decode_node(b: &[u8], lsn: Lsn) -> Result<NodeImage<'_>> {
    let mut r = reader(b, lsn);
    let h = r.node_header()?;
    let entries = r.entries()?;
    r.end()?;
    Ok((h, entries))
}

/// A decoded `split_left` (block 0 of SPLIT): the left page's entries are the first
/// `head` of the page before the split, `mid`, then its entries `from..from + tail`.
#[derive(Debug)]
pub struct SplitLeft<'a> {
    /// The left page's header after the split.
    pub header: NodeHeader,
    /// Leading entries kept from the page before the split.
    pub head: usize,
    /// Entries logged whole.
    pub mid: Vec<(&'a [u8], &'a [u8])>,
    /// First of the trailing entries kept, as an index into the page before the split.
    pub from: usize,
    /// Trailing entries kept.
    pub tail: usize,
}

/// Decodes a `split_left`.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the record's LSN for short or trailing bytes.
pub fn decode_split_left(b: &[u8], lsn: Lsn) -> Result<SplitLeft<'_>> {
    let mut r = reader(b, lsn);
    let header = r.node_header()?;
    let head = r.u16()? as usize;
    let mid = r.entries()?;
    let from = r.u16()? as usize;
    let tail = r.u16()? as usize;
    r.end()?;
    Ok(SplitLeft {
        header,
        head,
        mid,
        from,
        tail,
    })
}

/// Decodes the main data of a SPLIT record: geometry, `which` bits, separator.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the record's LSN.
pub fn decode_split_main(b: &[u8], lsn: Lsn) -> Result<(Geometry, u8, &[u8])> {
    let mut r = reader(b, lsn);
    let g = r.geometry()?;
    let which = r.u8()?;
    let n = r.u16()? as usize;
    let sep = r.bytes(n)?;
    r.end()?;
    Ok((g, which, sep))
}

fn clear_incomplete(page: &mut [u8], id: PageId) -> Result<()> {
    let flags = node::Node::parse(page, id)?.flags();
    node::set_flags(page, id, flags & !FLAG_INCOMPLETE_SPLIT)
}

/// Redo of block `b` of B+tree record `rec` on `page` (the page's current bytes; ignored
/// for will-init blocks), then sets the page LSN to the record's end. The caller (crash
/// recovery) skips blocks restored from a full-page image and pages whose LSN is already
/// at or past `rec.end_lsn`, and afterwards finishes every split left incomplete (a page
/// with INCOMPLETE_SPLIT whose downlink record never made it) with
/// [`BTree::finish_incomplete_splits`](super::BTree::finish_incomplete_splits), as
/// PostgreSQL's `_bt_finish_split` does.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the record or the page does not fit the format, or
/// the record is not a B+tree record this module writes.
pub fn redo_block(rec: &WalRecord, b: usize, page: &mut [u8]) -> Result<()> {
    let lsn = rec.lsn;
    let block = redo_block_ref(
        rec,
        b,
        page.len(),
        None,
        "B+tree WAL record",
        crate::page::PAGE_HEADER_BYTES + node::SPECIAL_BYTES + 64,
    )?;
    let id = block.page;
    let mut r = reader(&block.data, lsn);
    match (rec.info, b) {
        (info::INSERT_LEAF, 0) | (info::INSERT_UPPER, 0) => {
            let slot = r.u16()? as usize;
            let (k, v) = r.entry()?;
            r.end()?;
            node::insert_at(page, id, slot, k, v)?;
        }
        (info::UPDATE_VALUE, 0) => {
            let slot = r.u16()? as usize;
            let (k, v) = r.entry()?;
            r.end()?;
            node::replace_at(page, id, slot, k, v)?;
        }
        (info::PATCH_VALUE, 0) => {
            let slot = r.u16()? as usize;
            let spans = r.u16()?;
            for _ in 0..spans {
                let at = r.u16()? as usize;
                let n = r.u16()? as usize;
                node::patch_value(page, id, slot, at, r.bytes(n)?)?;
            }
            r.end()?;
        }
        (info::DELETE, 0) => {
            let slot = r.u16()? as usize;
            let n = r.u16()? as usize;
            let key = r.bytes(n)?;
            r.end()?;
            if node::Node::parse(page, id)?.key(slot)? != key {
                return Err(r.bad("DELETE names a key that is not at its slot").into());
            }
            node::remove_at(page, id, slot)?;
        }
        (info::DELETE_DEAD, 0) | (info::VACUUM, 0) => {
            let n = r.u16()? as usize;
            let mut slots = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                slots.push(r.u16()? as usize);
            }
            let mut updates = Vec::new();
            if !r.is_empty() {
                let m = r.u16()? as usize;
                for _ in 0..m {
                    let slot = r.u16()? as usize;
                    updates.push((slot, r.entry()?));
                }
            }
            r.end()?;
            if rec.info == info::DELETE_DEAD {
                for (slot, (k, v)) in updates {
                    node::replace_at(page, id, slot, k, v)?;
                }
                node::remove_slots(page, id, &slots)?;
            } else {
                // As the change did: one compaction of the survivors, in slot order.
                let (h, g, entries) = {
                    let n = node::Node::parse(page, id)?;
                    (n.header(), n.geometry(), n.entries()?)
                };
                let ascending = |v: &[usize]| v.windows(2).all(|w| w[0] < w[1]);
                let updated_slots: Vec<usize> = updates.iter().map(|u| u.0).collect();
                if !ascending(&slots)
                    || !ascending(&updated_slots)
                    || slots
                        .iter()
                        .chain(&updated_slots)
                        .any(|&s| s >= entries.len())
                {
                    return Err(r
                        .bad("VACUUM names slots out of order or past the page")
                        .into());
                }
                let updated: Vec<(usize, node::Entry)> = updates
                    .into_iter()
                    .map(|(s, (k, v))| {
                        let e = node::Entry {
                            key: k.to_vec(),
                            value: v.to_vec(),
                        };
                        (s, e)
                    })
                    .collect();
                let keep = vacuumed_entries(entries, &slots, &updated);
                node::build(page, id, g, h, &node::pairs(&keep))?;
            }
        }
        (info::INSERT_POST, 0) => {
            let slot = r.u16()? as usize;
            let tid = r.bytes(super::dedup::TID_BYTES)?;
            r.end()?;
            super::dedup::swap_insert(page, id, slot, tid)?;
        }
        (info::DEDUP, 0) => {
            let n = r.u16()? as usize;
            let mut intervals = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                intervals.push((r.u16()? as usize, r.u16()? as usize));
            }
            r.end()?;
            super::dedup::apply_pass(page, id, &intervals)?;
        }
        (info::INSERT_UPPER, 1) | (info::NEWROOT, 1) => {
            r.end()?;
            clear_incomplete(page, id)?;
        }
        (info::SPLIT, 0) => {
            let (g, _, _) = decode_split_main(&rec.main_data, lsn)?;
            let l = decode_split_left(&block.data, lsn)?;
            let before = node::Node::parse(page, id)?.entries()?;
            let (head, tail) = (&before.get(..l.head), before.get(l.from..l.from + l.tail));
            let (Some(head), Some(tail)) = (head, tail) else {
                return Err(r
                    .bad(&format!(
                        "SPLIT keeps entries 0..{} and {}..{} of a page of {}",
                        l.head,
                        l.from,
                        l.from + l.tail,
                        before.len()
                    ))
                    .into());
            };
            let mut entries = node::pairs(head);
            entries.extend(l.mid);
            entries.extend(node::pairs(tail));
            node::build(page, id, g, l.header, &entries)?;
        }
        (info::SPLIT, 1) => {
            let (g, _, _) = decode_split_main(&rec.main_data, lsn)?;
            let (h, entries) = decode_node(&block.data, lsn)?;
            node::build(page, id, g, h, &entries)?;
        }
        (info::SPLIT, _) => {
            let (_, which, _) = decode_split_main(&rec.main_data, lsn)?;
            let old_right_at = (which & SPLIT_HAS_OLD_RIGHT != 0).then_some(2);
            let child_at = (which & SPLIT_HAS_CHILD != 0)
                .then_some(2 + (which & SPLIT_HAS_OLD_RIGHT) as usize);
            if Some(b) == old_right_at {
                let left = r.u32()?;
                r.end()?;
                node::set_left(page, id, left)?;
            } else if Some(b) == child_at {
                r.end()?;
                clear_incomplete(page, id)?;
            } else {
                return Err(r.bad("SPLIT block not named by its `which` bits").into());
            }
        }
        (info::BUILD, 0) => {
            let g = reader(&rec.main_data, lsn).geometry()?;
            let (h, entries) = decode_node(&block.data, lsn)?;
            node::build(page, id, g, h, &entries)?;
        }
        (info::NEWROOT, 0) => {
            let g = reader(&rec.main_data, lsn).geometry()?;
            let (h, entries) = decode_node(&block.data, lsn)?;
            node::build(page, id, g, h, &entries)?;
        }
        (info::NEWROOT, 2) | (info::CREATE, 0) | (info::BUILD, 1) => {
            let m = Meta::decode(r.bytes(META_BYTES)?, id)?;
            r.end()?;
            m.write(page);
        }
        (info::CREATE, 1) => {
            let (h, entries) = decode_node(&block.data, lsn)?;
            let meta_block = rec
                .blocks
                .first()
                .ok_or_else(|| r.bad("CREATE without meta"))?;
            let m = Meta::decode(&meta_block.data, meta_block.page)?;
            node::build(page, id, m.geometry, h, &entries)?;
        }
        (info::MERGE, 0) => redo_merge_survivor(page, id, &mut r, false)?,
        (info::MERGE_RIGHT, 0) => redo_merge_survivor(page, id, &mut r, true)?,
        (info::MERGE_RIGHT, 2) => {
            let slot = r.u16()? as usize;
            let child = r.u32()?;
            r.end()?;
            node::set_child(page, id, slot, child)?;
            node::remove_at(page, id, slot + 1)?;
        }
        (info::MERGE_RIGHT, 3) => {
            let right = r.u32()?;
            r.end()?;
            node::set_right(page, id, right)?;
        }
        (info::MERGE | info::MERGE_RIGHT, 1) => {
            r.end()?;
            let g = reader(&rec.main_data, lsn).geometry()?;
            let none: [(&[u8], &[u8]); 0] = [];
            node::build(page, id, g, freed_header(), &none)?;
        }
        (info::MERGE, 2) => {
            let slot = r.u16()? as usize;
            r.end()?;
            node::remove_at(page, id, slot)?;
        }
        (info::MERGE, 3) => {
            let left = r.u32()?;
            r.end()?;
            node::set_left(page, id, left)?;
        }
        (i, b) => return Err(r.bad(&format!("unknown info {i:#04x} or block {b}")).into()),
    }
    set_page_lsn(page, rec.end_lsn);
    Ok(())
}
