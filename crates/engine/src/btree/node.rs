//! B+tree page layouts: the node page (leaf and internal) and the meta page at block 0.
//!
//! Node page (the slotted-page shape of PostgreSQL bufpage.h / nbtree.h: line pointers
//! growing up from the header, tuples growing down, `BTPageOpaqueData` at the end):
//! ```text
//! | offset           | bytes     | field                                                  |
//! |------------------|-----------|--------------------------------------------------------|
//! | 0                | 32        | common page header (page::init_page, page_type 2)      |
//! | 32               | n × slot  | slot array: entry i's offset (u16), then, when         |
//! |                  |           | slot_bytes >= 3, a flag byte (bit 0 LP_DEAD), zero pad |
//! |                  |           | to slot_bytes; slots are in key order                  |
//! | lower            | hole      | free space (lower..upper: left out of full-page images)|
//! | upper            | ...       | entries, packed, growing down (not in key order):      |
//! |                  |           |   key_len u16 | value_len u16 | zero pad to            |
//! |                  |           |   entry_header_bytes | key | value | zero pad to       |
//! |                  |           |   entry_align; with innodb_compact: key_len, value_len |
//! |                  |           |   of 1 byte each below 128, else 2 (top bit set,       |
//! |                  |           |   big-endian) | key | value                            |
//! | special = len-16 | 2         | level (0 = leaf)                                       |
//! | special + 2      | 2         | flags: 1 = META, 2 = INCOMPLETE_SPLIT, 4 = FREED       |
//! | special + 4      | 4         | left sibling block (u32::MAX = none)                   |
//! | special + 8      | 4         | right sibling block (u32::MAX = none)                  |
//! | special + 12     | 1         | entry_header_bytes  ┐ geometry: the page describes     |
//! | special + 13     | 1         | entry_align         │ itself, so redo and checks need  |
//! | special + 14     | 1         | slot_bytes          ┘ no configuration                 |
//! | special + 15     | 1         | bit 0: innodb_compact (the rest 0)                     |
//! ```
//! ```text
//!  0        32                 lower            upper                      special   len
//!  +--------+------------------+ - - - - - - - -+---------+---------+-----+---------+
//!  | header | s0 | s1 | s2 ... |   free (hole)  | entry 2 | entry 0 | ... | special |
//!  +--------+------------------+ - - - - - - - -+---------+---------+-----+---------+
//!              s0 ──────────────────────────────────────────┘ (slot i → its entry)
//! ```
//! The common header's `aux` word (page::aux) holds InnoDB's `PAGE_LAST_INSERT`: the
//! offset of the entry [`insert_at`] added last, 0 when the page was rebuilt ([`build`]) or
//! lost an entry since ([`remove_at`]), as page0cur.cc `page_cur_insert_rec_low` sets it
//! and `page_cur_delete_rec` resets it. Entries do not move when another is inserted, so
//! the offset names the same entry until a removal resets it. Only InnoDB's split point
//! reads it ([`super::BTreeConfig::sequential_split`]); do and redo change it with the same
//! functions, so both leave the same bytes.
//!
//! An internal page's entries are (separator key, child block u32 LE); the first entry's key
//! is stored empty and means minus infinity, so child `i` holds the keys `k` with
//! `key(i) <= k < key(i + 1)`.
//!
//! Leaf entries of a deduplicating tree ([`super::BTreeConfig::deduplicate`], heap indexes;
//! `super::dedup`), in the same entry frame:
//! ```text
//! | entry         | key                          | value                                 |
//! |---------------|------------------------------|---------------------------------------|
//! | plain         | K ‖ tid (6 bytes: block u32, | empty                                 |
//! |               | offset u16, big-endian)      |                                       |
//! | posting entry | K ‖ tid_min                  | tid_2 ‖ ... ‖ tid_max (6 bytes each,  |
//! |               |                              | strictly ascending, above tid_min)    |
//! ```
//! A non-empty value marks a posting entry (PostgreSQL marks posting tuples with
//! `INDEX_ALT_TID_MASK` in `t_info` and keeps the TID array after the key,
//! `BTreeTupleGetPosting`); its slot's LP_DEAD flag covers all its TIDs.
//!
//! Meta page (block 0; PostgreSQL `BTMetaPageData`, nbtree.h), the same header and special
//! area with flags = META and level 0:
//! ```text
//! | offset | bytes | field                                         |
//! |--------|-------|-----------------------------------------------|
//! | 0      | 32    | common page header (page_type 2)              |
//! | 32     | 4     | magic 0x053162 (PostgreSQL BTREE_MAGIC)        |
//! | 36     | 4     | version (1)                                    |
//! | 40     | 4     | root block                                     |
//! | 44     | 4     | height (levels; root level + 1)                |
//! | 48     | 2     | entry_header_bytes                             |
//! | 50     | 2     | entry_align                                    |
//! | 52     | 2     | slot_bytes                                     |
//! | 54     | 2     | 1 = innodb_compact, else 0                     |
//! | 56     |       | hole up to the special area                    |
//! ```
//! Every reader here checks bounds: bad bytes give [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the page,
//! never a panic.

use crate::error::{Error, Result};
use crate::page::{
    aux, hole, init_page, page_lsn, page_type, set_aux, set_hole, set_page_lsn, special, PageId,
    PAGE_HEADER_BYTES,
};

/// `page_type` of B+tree pages (node and meta) in the common page header.
pub const PAGE_TYPE_BTREE: u8 = 2;
/// Bytes of the special area at the end of every B+tree page (PostgreSQL's
/// `BTPageOpaqueData` is 16 bytes too).
pub const SPECIAL_BYTES: usize = 16;
/// Block number meaning "no sibling" (PostgreSQL P_NONE is 0; block 0 is the meta page
/// here as there, but u32::MAX is unmistakable in a dump).
pub const NO_BLOCK: u32 = u32::MAX;
/// Block of the meta page.
pub const META_BLOCK: u32 = 0;
/// Magic number of the meta page (PostgreSQL nbtree.h BTREE_MAGIC).
pub const BTREE_MAGIC: u32 = 0x053162;
/// Version of this layout.
pub const BTREE_VERSION: u32 = 1;
/// Page flag: the meta page (PostgreSQL BTP_META).
pub const FLAG_META: u16 = 1;
/// Page flag: this page was split and its new right sibling has no downlink in the parent
/// yet (PostgreSQL BTP_INCOMPLETE_SPLIT). Set by a SPLIT record, cleared by the record
/// that inserts the downlink.
pub const FLAG_INCOMPLETE_SPLIT: u16 = 2;
/// Page flag: the page was freed by a page merge ([`super::BTreeConfig::merge_threshold_pct`],
/// InnoDB btr0btr.cc `btr_compress` → `btr_page_free`): no downlink or sibling link names
/// it, it holds no entries, and the relation's free list hands it to a later split. Set by
/// a MERGE record.
pub const FLAG_FREED: u16 = 4;
/// Bytes of the length fields at the start of every entry (key_len u16, value_len u16).
pub const ENTRY_LEN_BYTES: usize = 4;
/// Slot flag (byte 2 of a slot, when slots have at least 3 bytes): the entry's heap tuples
/// are dead to every transaction (PostgreSQL's `LP_DEAD` line pointer state on an index
/// item, set as a hint by `_bt_killitems` and `_bt_check_unique`, nbtutils.c / nbtinsert.c).
/// Scans that ask for it skip such entries; a leaf about to split deletes them first
/// (nbtinsert.c `_bt_delete_or_dedup_one_page`). Not WAL-logged when set (a hint), and
/// lost when a page is rebuilt (split, vacuum), as PostgreSQL's `_bt_split` adds items
/// afresh.
pub const SLOT_FLAG_DEAD: u8 = 1;
/// Byte of a slot that holds its flags.
const SLOT_FLAGS_AT: usize = 2;
/// Highest level a page may claim (a sanity bound for corrupted bytes).
pub const MAX_LEVEL: u16 = 32;
/// Bytes of the meta page's fields after the header.
pub const META_BYTES: usize = 24;

const SP_LEVEL: usize = 0;
const SP_FLAGS: usize = 2;
const SP_LEFT: usize = 4;
const SP_RIGHT: usize = 8;
const SP_GEOMETRY: usize = 12;

fn rd16(p: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([p[off], p[off + 1]])
}
fn rd32(p: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([p[off], p[off + 1], p[off + 2], p[off + 3]])
}
fn wr16(p: &mut [u8], off: usize, v: u16) {
    p[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
fn wr32(p: &mut [u8], off: usize, v: u32) {
    p[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Rounds `n` up to a multiple of `a` (a power of two).
pub fn align_up(n: usize, a: usize) -> usize {
    (n + a - 1) & !(a - 1)
}

fn corrupted(id: PageId, what: impl std::fmt::Display) -> Error {
    Error::corrupted(format!("B+tree {id}: {what}"))
}

/// How entries are sized on a page: the per-entry space accounting of
/// [`super::BTreeConfig`], recorded in every page's special area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes of each entry's header (>= 4: key_len u16, value_len u16, zero padding); with
    /// `innodb_compact`, 2, the least its 1- or 2-byte lengths take.
    pub entry_header_bytes: u16,
    /// Alignment of each entry's size in bytes (1, 2, 4 or 8).
    pub entry_align: u16,
    /// Bytes of each slot (>= 2: a u16 offset, zero padding).
    pub slot_bytes: u16,
    /// InnoDB's COMPACT page accounting (MariaDB 10.11 storage/innobase). An entry's
    /// header is its key and value lengths, 1 byte each below 128, else 2 (rem0rec.cc
    /// stores a variable-length field's length the same way), so with its 2-byte slot a
    /// leaf entry whose lengths are both below 128 takes 4 bytes more than its key and
    /// value: InnoDB's 5-byte record header (`REC_N_NEW_EXTRA_BYTES`) less the info-bits
    /// byte, which is the first byte of an InnoDB leaf entry's value here. What the page
    /// can hold is InnoDB's: its free space is `page_get_max_insert_size(page, 1)`, the
    /// free space of an empty page (`page_get_free_space_of_empty`: the page less the
    /// 38-byte file header, the 56-byte page header, the infimum and supremum records,
    /// the 8-byte trailer and the two directory slots they own) less the entries' bytes
    /// and the page directory reserved for one more record (`page_dir_calc_reserved_space`:
    /// one 2-byte slot per 4 records, `PAGE_DIR_SLOT_MIN_N_OWNED`), never more than the
    /// physical hole. Requires a 2-byte header, alignment 1 and 2-byte slots.
    pub innodb_compact: bool,
}

/// Bytes of an InnoDB page that records and the page directory cannot use
/// (page0page.inl `page_get_free_space_of_empty` for COMPACT pages: `PAGE_NEW_SUPREMUM_END`
/// 120, `PAGE_DIR` 8, `2 * PAGE_DIR_SLOT_SIZE` 4).
pub const INNODB_PAGE_OVERHEAD_BYTES: usize = 132;

/// InnoDB's page directory reserved for `n_records` records (page0page.cc
/// `page_dir_calc_reserved_space`: `(PAGE_DIR_SLOT_SIZE × n + PAGE_DIR_SLOT_MIN_N_OWNED
/// - 1) / PAGE_DIR_SLOT_MIN_N_OWNED`, 2-byte slots owning at least 4 records each).
pub fn innodb_dir_reserved_bytes(n_records: usize) -> usize {
    (2 * n_records).div_ceil(4)
}

/// Bytes a length takes in an `innodb_compact` entry header: 1 below 128, else 2.
fn compact_len_bytes(len: usize) -> usize {
    if len < 128 {
        1
    } else {
        2
    }
}

/// Largest length an `innodb_compact` entry header can hold (15 bits).
const COMPACT_LEN_MAX: usize = 0x7fff;

impl Geometry {
    /// Checks the ranges (entry header 4..=64 bytes, alignment 1/2/4/8, slot 2..=16
    /// bytes; with `innodb_compact`, header 2, alignment 1, slot 2).
    ///
    /// Errors: [`Error::InvalidConfig`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if self.innodb_compact {
            if (self.entry_header_bytes, self.entry_align, self.slot_bytes) != (2, 1, 2) {
                return Err(Error::InvalidConfig(format!(
                    "btree innodb_compact needs entry_header_bytes 2, entry_align 1 and \
                     slot_bytes 2, got {}, {} and {}",
                    self.entry_header_bytes, self.entry_align, self.slot_bytes
                )));
            }
            return Ok(());
        }
        if !(ENTRY_LEN_BYTES as u16..=64).contains(&self.entry_header_bytes) {
            return Err(Error::InvalidConfig(format!(
                "btree entry_header_bytes must be 4..=64, got {}",
                self.entry_header_bytes
            )));
        }
        if ![1, 2, 4, 8].contains(&self.entry_align) {
            return Err(Error::InvalidConfig(format!(
                "btree entry_align must be 1, 2, 4 or 8, got {}",
                self.entry_align
            )));
        }
        if !(2..=16).contains(&self.slot_bytes) {
            return Err(Error::InvalidConfig(format!(
                "btree slot_bytes must be 2..=16, got {}",
                self.slot_bytes
            )));
        }
        Ok(())
    }

    fn is_valid(&self) -> bool {
        self.validate().is_ok()
    }

    /// Bytes of the header of an entry with a key of `key_bytes` and a value of
    /// `value_bytes`.
    pub fn header_bytes(&self, key_bytes: usize, value_bytes: usize) -> usize {
        if self.innodb_compact {
            compact_len_bytes(key_bytes) + compact_len_bytes(value_bytes)
        } else {
            self.entry_header_bytes as usize
        }
    }

    /// Bytes an entry with a key of `key_bytes` and a value of `value_bytes` occupies in
    /// the entry area (header and padding included).
    pub fn entry_bytes(&self, key_bytes: usize, value_bytes: usize) -> usize {
        align_up(
            self.header_bytes(key_bytes, value_bytes) + key_bytes + value_bytes,
            self.entry_align as usize,
        )
    }

    /// Bytes an entry with a key of `key_bytes` and a value of `value_bytes` takes from a
    /// page: entry area plus its slot. With `innodb_compact` and both lengths below 128,
    /// InnoDB's record size (see the field).
    pub fn space(&self, key_bytes: usize, value_bytes: usize) -> usize {
        self.entry_bytes(key_bytes, value_bytes) + self.slot_bytes as usize
    }

    /// Bytes of a page of `page_bytes` that entries and slots can use: [`usable_bytes`],
    /// with `innodb_compact` no more than InnoDB's free space of an empty page
    /// ([`INNODB_PAGE_OVERHEAD_BYTES`]).
    pub fn capacity_bytes(&self, page_bytes: usize) -> usize {
        let usable = usable_bytes(page_bytes);
        if self.innodb_compact {
            usable.min(page_bytes - INNODB_PAGE_OVERHEAD_BYTES)
        } else {
            usable
        }
    }

    /// Whether `n_entries` entries taking `used_bytes` (entries and slots, as
    /// [`Geometry::space`] sums them) fit one page of `page_bytes`: within
    /// [`Geometry::capacity_bytes`], with `innodb_compact` together with the directory
    /// InnoDB reserves for them ([`innodb_dir_reserved_bytes`]; page0page.inl
    /// `page_get_max_insert_size_after_reorganize`).
    pub fn fits(&self, n_entries: usize, used_bytes: usize, page_bytes: usize) -> bool {
        let dir = if self.innodb_compact {
            innodb_dir_reserved_bytes(n_entries)
        } else {
            0
        };
        used_bytes + dir <= self.capacity_bytes(page_bytes)
    }

    fn read(p: &[u8], special: usize) -> Geometry {
        Geometry {
            entry_header_bytes: p[special + SP_GEOMETRY] as u16,
            entry_align: p[special + SP_GEOMETRY + 1] as u16,
            slot_bytes: p[special + SP_GEOMETRY + 2] as u16,
            innodb_compact: p[special + SP_GEOMETRY + 3] & 1 != 0,
        }
    }
}

/// Bytes of a page of `page_bytes` that entries and slots can use.
pub fn usable_bytes(page_bytes: usize) -> usize {
    page_bytes - PAGE_HEADER_BYTES - SPECIAL_BYTES
}

/// Checks the parts of a B+tree page every reader relies on; returns the special offset.
fn check_common(p: &[u8], id: PageId) -> Result<usize> {
    if p.len() < PAGE_HEADER_BYTES + SPECIAL_BYTES + 64 || p.len() > 65536 {
        return Err(corrupted(id, format!("page of {} bytes", p.len())));
    }
    if page_type(p) != PAGE_TYPE_BTREE {
        return Err(corrupted(
            id,
            format!(
                "page type {} is not a B+tree page ({PAGE_TYPE_BTREE})",
                page_type(p)
            ),
        ));
    }
    let sp = special(p) as usize;
    if sp != p.len() - SPECIAL_BYTES {
        return Err(corrupted(
            id,
            format!(
                "special space at {sp}, expected {}",
                p.len() - SPECIAL_BYTES
            ),
        ));
    }
    Ok(sp)
}

/// A checked read-only view of a node page. Header fields are validated by
/// [`Node::parse`]; each entry is validated when it is read.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    p: &'a [u8],
    id: PageId,
    geo: Geometry,
    n: usize,
    lower: usize,
    upper: usize,
    special: usize,
}

impl<'a> Node<'a> {
    /// Checks the header and special area of node page `p` (page `id`).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the page when its type, special offset,
    /// geometry, hole, level or entry count are impossible, or when it is the meta page.
    pub fn parse(p: &'a [u8], id: PageId) -> Result<Self> {
        let special = check_common(p, id)?;
        let flags = rd16(p, special + SP_FLAGS);
        if flags & FLAG_META != 0 {
            return Err(corrupted(id, "meta page where a node was expected"));
        }
        if flags & !(FLAG_META | FLAG_INCOMPLETE_SPLIT | FLAG_FREED) != 0 {
            return Err(corrupted(id, format!("unknown flags {flags:#06x}")));
        }
        let geo = Geometry::read(p, special);
        if !geo.is_valid() {
            return Err(corrupted(id, format!("impossible entry geometry {geo:?}")));
        }
        let (lower, upper) = hole(p);
        let (lower, upper) = (lower as usize, upper as usize);
        let s = geo.slot_bytes as usize;
        if lower < PAGE_HEADER_BYTES
            || lower > upper
            || upper > special
            || !(lower - PAGE_HEADER_BYTES).is_multiple_of(s)
        {
            return Err(corrupted(
                id,
                format!("impossible hole {lower}..{upper} (special {special})"),
            ));
        }
        let n = (lower - PAGE_HEADER_BYTES) / s;
        let level = rd16(p, special + SP_LEVEL);
        if level > MAX_LEVEL {
            return Err(corrupted(id, format!("level {level}")));
        }
        if level > 0 && n == 0 {
            return Err(corrupted(id, "internal page without entries"));
        }
        Ok(Node {
            p,
            id,
            geo,
            n,
            lower,
            upper,
            special,
        })
    }

    /// The page this view reads.
    pub fn id(&self) -> PageId {
        self.id
    }
    /// Entry geometry recorded in the page.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.n
    }
    /// True when the page holds no entries.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Level (0 = leaf).
    pub fn level(&self) -> u16 {
        rd16(self.p, self.special + SP_LEVEL)
    }
    /// Page flags.
    pub fn flags(&self) -> u16 {
        rd16(self.p, self.special + SP_FLAGS)
    }
    /// Left sibling block ([`NO_BLOCK`] = none).
    pub fn left(&self) -> u32 {
        rd32(self.p, self.special + SP_LEFT)
    }
    /// Right sibling block ([`NO_BLOCK`] = none).
    pub fn right(&self) -> u32 {
        rd32(self.p, self.special + SP_RIGHT)
    }
    /// Whether entry `i` is the one inserted last (InnoDB's `PAGE_LAST_INSERT`, see the
    /// module doc): false when `i` is out of range or the page lost an entry or was
    /// rebuilt since its last insert.
    pub fn is_last_insert(&self, i: usize) -> bool {
        let last = aux(self.p) as usize;
        last != 0 && i < self.n && self.slot_offset(i) == last
    }

    /// The entry offset slot `i` holds, unchecked (`i` below [`Node::len`]).
    fn slot_offset(&self, i: usize) -> usize {
        rd16(self.p, PAGE_HEADER_BYTES + i * self.geo.slot_bytes as usize) as usize
    }

    /// Free bytes for one more entry: the hole, and with
    /// [`Geometry::innodb_compact`] no more than InnoDB's `page_get_max_insert_size(page,
    /// 1)` (the page's capacity less its entries and the directory reserved for one
    /// more).
    pub fn free_bytes(&self) -> usize {
        self.free_bytes_for(1)
    }

    /// Free bytes for `n_more` more entries: [`Node::free_bytes`] with the directory
    /// reserved for all of them (InnoDB's `page_get_max_insert_size(page, n_more)`).
    pub fn free_bytes_for(&self, n_more: usize) -> usize {
        let hole = self.upper - self.lower;
        if self.geo.innodb_compact {
            let cap = self.p.len() - INNODB_PAGE_OVERHEAD_BYTES;
            let taken = self.used_bytes() + innodb_dir_reserved_bytes(self.n + n_more);
            hole.min(cap.saturating_sub(taken))
        } else {
            hole
        }
    }

    /// Bytes of the hole between the slots and the entries (physical free space).
    fn hole_bytes(&self) -> usize {
        self.upper - self.lower
    }
    /// Bytes used by slots and entries.
    pub fn used_bytes(&self) -> usize {
        (self.lower - PAGE_HEADER_BYTES) + (self.special - self.upper)
    }

    /// Offset of entry `i` and its key and value lengths, checked.
    fn locate(&self, i: usize) -> Result<(usize, usize, usize)> {
        if i >= self.n {
            return Err(corrupted(
                self.id,
                format!("entry {i} asked of {} entries", self.n),
            ));
        }
        let off = self.slot_offset(i);
        let h = if self.geo.innodb_compact {
            1
        } else {
            self.geo.entry_header_bytes as usize
        };
        if off < self.upper || off + h > self.special {
            return Err(corrupted(
                self.id,
                format!(
                    "slot {i} points at {off}, outside the entry area {}..{}",
                    self.upper, self.special
                ),
            ));
        }
        let (k, v) = if self.geo.innodb_compact {
            let Some((k, kb)) = read_compact_len(self.p, off, self.special) else {
                return Err(corrupted(
                    self.id,
                    format!("entry {i} at {off}: key length runs past the entry area"),
                ));
            };
            let Some((v, _)) = read_compact_len(self.p, off + kb, self.special) else {
                return Err(corrupted(
                    self.id,
                    format!("entry {i} at {off}: value length runs past the entry area"),
                ));
            };
            (k, v)
        } else {
            (rd16(self.p, off) as usize, rd16(self.p, off + 2) as usize)
        };
        if off + self.geo.entry_bytes(k, v) > self.special {
            return Err(corrupted(
                self.id,
                format!(
                    "entry {i} at {off} with key {k} and value {v} bytes runs past the entry area"
                ),
            ));
        }
        Ok((off, k, v))
    }

    /// Entry `i` as (key, value).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when `i` is out of range or the entry's slot or lengths
    /// are impossible.
    pub fn entry(&self, i: usize) -> Result<(&'a [u8], &'a [u8])> {
        let (off, k, v) = self.locate(i)?;
        let at = off + self.geo.header_bytes(k, v);
        Ok((&self.p[at..at + k], &self.p[at + k..at + k + v]))
    }

    /// True when entry `i` carries [`SLOT_FLAG_DEAD`] (always false when slots have no flag
    /// byte, or `i` is out of range).
    pub fn is_dead(&self, i: usize) -> bool {
        let s = self.geo.slot_bytes as usize;
        s > SLOT_FLAGS_AT
            && i < self.n
            && self.p[PAGE_HEADER_BYTES + i * s + SLOT_FLAGS_AT] & SLOT_FLAG_DEAD != 0
    }

    /// Slots of the entries that carry [`SLOT_FLAG_DEAD`], ascending.
    pub fn dead_slots(&self) -> Vec<usize> {
        (0..self.n).filter(|&i| self.is_dead(i)).collect()
    }

    /// Key of entry `i`. Errors: as [`Node::entry`].
    pub fn key(&self, i: usize) -> Result<&'a [u8]> {
        self.entry(i).map(|e| e.0)
    }

    /// Bytes entry `i` takes from the page (entry area + slot). Errors: as [`Node::entry`].
    pub fn entry_space(&self, i: usize) -> Result<usize> {
        let (_, k, v) = self.locate(i)?;
        Ok(self.geo.space(k, v))
    }

    /// Child block of internal entry `i`.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the value is not 4 bytes or names no block.
    pub fn child(&self, i: usize) -> Result<u32> {
        let (_, v) = self.entry(i)?;
        let b: [u8; 4] = v
            .try_into()
            .map_err(|_| corrupted(self.id, format!("downlink {i} has {} bytes", v.len())))?;
        let b = u32::from_le_bytes(b);
        if b == NO_BLOCK || b == META_BLOCK {
            return Err(corrupted(self.id, format!("downlink {i} names block {b}")));
        }
        Ok(b)
    }

    /// First index in `from..len` whose key satisfies `!pred` (keys ascending, so `pred`
    /// holds on a prefix).
    fn partition(&self, from: usize, pred: impl Fn(&[u8]) -> bool) -> Result<usize> {
        let (mut lo, mut hi) = (from, self.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.key(mid)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Position of `key` in a leaf: `Ok(i)` when entry `i` has it, `Err(i)` where it would
    /// be inserted. Errors: as [`Node::entry`].
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        let i = self.lower_bound(key)?;
        if i < self.n && self.key(i)? == key {
            Ok(Ok(i))
        } else {
            Ok(Err(i))
        }
    }

    /// First index whose key is `>= key`. Errors: as [`Node::entry`].
    pub fn lower_bound(&self, key: &[u8]) -> Result<usize> {
        self.partition(0, |k| k < key)
    }

    /// First index whose key is `> key`. Errors: as [`Node::entry`].
    pub fn upper_bound(&self, key: &[u8]) -> Result<usize> {
        self.partition(0, |k| k <= key)
    }

    /// Internal page: index of the child to descend into for `key`: the last entry whose
    /// separator is `<= key` (`inclusive`) or `< key` (not), entry 0 (minus infinity)
    /// when none is. Errors: as [`Node::entry`].
    pub fn child_index(&self, key: &[u8], inclusive: bool) -> Result<usize> {
        let i = if inclusive {
            self.partition(1, |k| k <= key)?
        } else {
            self.partition(1, |k| k < key)?
        };
        Ok(i - 1)
    }

    /// Level, flags and sibling links, as [`build`] takes them.
    pub fn header(&self) -> NodeHeader {
        NodeHeader {
            level: self.level(),
            flags: self.flags(),
            left: self.left(),
            right: self.right(),
        }
    }

    /// Every entry, in slot order, as (key, value) slices of the page: one allocation, no
    /// copy. Errors: as [`Node::entry`].
    pub fn entry_slices(&self) -> Result<Vec<(&'a [u8], &'a [u8])>> {
        (0..self.n).map(|i| self.entry(i)).collect()
    }

    /// Every entry, in slot order, copied out of the page (one allocation per key and per
    /// value: for a page about to be rebuilt from its own entries; [`Node::entry_slices`]
    /// borrows them instead). Errors: as [`Node::entry`].
    pub fn entries(&self) -> Result<Vec<Entry>> {
        (0..self.n)
            .map(|i| {
                self.entry(i).map(|(k, v)| Entry {
                    key: k.to_vec(),
                    value: v.to_vec(),
                })
            })
            .collect()
    }
}

/// An entry copied out of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Key bytes.
    pub key: Vec<u8>,
    /// Value bytes (a child block, u32 LE, on internal pages).
    pub value: Vec<u8>,
}

/// `entries` as the (key, value) pairs [`build`] takes.
pub fn pairs(entries: &[Entry]) -> Vec<(&[u8], &[u8])> {
    entries
        .iter()
        .map(|e| (e.key.as_slice(), e.value.as_slice()))
        .collect()
}

/// What a node page says about itself besides its entries (for rebuilding it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeHeader {
    /// Level (0 = leaf).
    pub level: u16,
    /// Page flags.
    pub flags: u16,
    /// Left sibling block.
    pub left: u32,
    /// Right sibling block.
    pub right: u32,
}

fn write_special(p: &mut [u8], geo: Geometry, h: NodeHeader) {
    let sp = p.len() - SPECIAL_BYTES;
    wr16(p, sp + SP_LEVEL, h.level);
    wr16(p, sp + SP_FLAGS, h.flags);
    wr32(p, sp + SP_LEFT, h.left);
    wr32(p, sp + SP_RIGHT, h.right);
    p[sp + SP_GEOMETRY] = geo.entry_header_bytes as u8;
    p[sp + SP_GEOMETRY + 1] = geo.entry_align as u8;
    p[sp + SP_GEOMETRY + 2] = geo.slot_bytes as u8;
    p[sp + SP_GEOMETRY + 3] = u8::from(geo.innodb_compact);
}

/// An `innodb_compact` length at `at` (below `end`): (length, bytes it took).
fn read_compact_len(p: &[u8], at: usize, end: usize) -> Option<(usize, usize)> {
    let b = *p.get(at).filter(|_| at < end)?;
    if b & 0x80 == 0 {
        return Some((b as usize, 1));
    }
    let lo = *p.get(at + 1).filter(|_| at + 1 < end)?;
    Some(((((b & 0x7f) as usize) << 8) | lo as usize, 2))
}

/// Writes an `innodb_compact` length at `at`; returns the bytes it took.
fn write_compact_len(p: &mut [u8], at: usize, len: usize) -> usize {
    if len < 128 {
        p[at] = len as u8;
        1
    } else {
        p[at] = 0x80 | (len >> 8) as u8;
        p[at + 1] = len as u8;
        2
    }
}

/// The longest key or value an entry of `geo` can hold.
fn max_len(geo: Geometry) -> usize {
    if geo.innodb_compact {
        COMPACT_LEN_MAX
    } else {
        u16::MAX as usize
    }
}

fn write_entry(p: &mut [u8], geo: Geometry, at: usize, key: &[u8], value: &[u8]) {
    let h = geo.header_bytes(key.len(), value.len());
    let end = at + geo.entry_bytes(key.len(), value.len());
    if geo.innodb_compact {
        let kb = write_compact_len(p, at, key.len());
        write_compact_len(p, at + kb, value.len());
    } else {
        wr16(p, at, key.len() as u16);
        wr16(p, at + 2, value.len() as u16);
        p[at + ENTRY_LEN_BYTES..at + h].fill(0);
    }
    p[at + h..at + h + key.len()].copy_from_slice(key);
    let vat = at + h + key.len();
    p[vat..vat + value.len()].copy_from_slice(value);
    p[vat + value.len()..end].fill(0);
}

fn write_slot(p: &mut [u8], geo: Geometry, i: usize, off: usize) {
    let s = geo.slot_bytes as usize;
    let at = PAGE_HEADER_BYTES + i * s;
    wr16(p, at, off as u16);
    p[at + 2..at + s].fill(0);
}

/// Rebuilds page `p` (page `id`) as a node holding `entries` in order, keeping its page
/// LSN (the full-page-image rule reads it after the change; PostgreSQL's
/// `PageRestoreTempPage` keeps the LSN the same way). Used for splits, new roots, bulk
/// deletes and redo of will-init blocks.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the entries do not fit (a caller bug or a bad record).
pub fn build<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    p: &mut [u8],
    id: PageId,
    geo: Geometry,
    h: NodeHeader,
    entries: &[(K, V)],
) -> Result<()> {
    let need: usize = entries
        .iter()
        .map(|(k, v)| geo.space(k.as_ref().len(), v.as_ref().len()))
        .sum();
    if p.len() < PAGE_HEADER_BYTES + SPECIAL_BYTES + 64
        || need > usable_bytes(p.len())
        || entries
            .iter()
            .any(|(k, v)| k.as_ref().len() > max_len(geo) || v.as_ref().len() > max_len(geo))
    {
        return Err(corrupted(
            id,
            format!(
                "{} entries of {need} bytes do not fit the page",
                entries.len()
            ),
        ));
    }
    let lsn = page_lsn(p);
    init_page(p, PAGE_TYPE_BTREE, SPECIAL_BYTES);
    set_page_lsn(p, lsn);
    write_special(p, geo, h);
    let mut upper = p.len() - SPECIAL_BYTES;
    for (i, (k, v)) in entries.iter().enumerate() {
        let (k, v) = (k.as_ref(), v.as_ref());
        upper -= geo.entry_bytes(k.len(), v.len());
        write_entry(p, geo, upper, k, v);
        write_slot(p, geo, i, upper);
    }
    let lower = PAGE_HEADER_BYTES + entries.len() * geo.slot_bytes as usize;
    set_hole(p, lower as u16, upper as u16);
    Ok(())
}

/// Inserts (key, value) as entry `i` of node page `p`, shifting later slots up
/// (PostgreSQL `PageAddItem` in the middle of the line pointer array), and makes it the
/// page's last insert (InnoDB `PAGE_LAST_INSERT`, see the module doc).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the page is bad, `i` is past the end, or the entry
/// does not fit (callers check [`Node::free_bytes`] first).
pub fn insert_at(p: &mut [u8], id: PageId, i: usize, key: &[u8], value: &[u8]) -> Result<()> {
    let (geo, n, lower, upper) = {
        let node = Node::parse(p, id)?;
        (node.geo, node.n, node.lower, node.upper)
    };
    let eb = geo.entry_bytes(key.len(), value.len());
    let s = geo.slot_bytes as usize;
    if i > n || key.len() > max_len(geo) || value.len() > max_len(geo) || upper - lower < eb + s {
        return Err(corrupted(
            id,
            format!(
                "cannot insert an entry of {eb} bytes at slot {i} of {n} ({} bytes free)",
                upper - lower
            ),
        ));
    }
    let at = upper - eb;
    write_entry(p, geo, at, key, value);
    let slot_at = PAGE_HEADER_BYTES + i * s;
    p.copy_within(slot_at..lower, slot_at + s);
    write_slot(p, geo, i, at);
    set_hole(p, (lower + s) as u16, at as u16);
    set_aux(p, at as u32);
    Ok(())
}

/// Removes entry `i` of node page `p`, closing the gap in the entry area so that the
/// entries stay packed (PostgreSQL `PageIndexTupleDelete`), and clears the page's last
/// insert (InnoDB page0cur.cc `page_cur_delete_rec` → `page_header_reset_last_insert`).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when the page or the entry is bad.
pub fn remove_at(p: &mut [u8], id: PageId, i: usize) -> Result<()> {
    let (geo, n, lower, upper, off, eb) = {
        let node = Node::parse(p, id)?;
        let (off, k, v) = node.locate(i)?;
        (
            node.geo,
            node.n,
            node.lower,
            node.upper,
            off,
            node.geo.entry_bytes(k, v),
        )
    };
    let s = geo.slot_bytes as usize;
    // Entries below the removed one move up by its size.
    p.copy_within(upper..off, upper + eb);
    p[upper..upper + eb].fill(0);
    for j in 0..n {
        let at = PAGE_HEADER_BYTES + j * s;
        let o = rd16(p, at) as usize;
        if j != i && o < off {
            wr16(p, at, (o + eb) as u16);
        }
    }
    let slot_at = PAGE_HEADER_BYTES + i * s;
    p.copy_within(slot_at + s..lower, slot_at);
    p[lower - s..lower].fill(0);
    set_hole(p, (lower - s) as u16, (upper + eb) as u16);
    set_aux(p, 0);
    Ok(())
}

/// Replaces entry `i` of node page `p` by (key, value): in place when the entry keeps its
/// size, else removed and inserted again at the same slot.
///
/// Errors: as [`remove_at`] and [`insert_at`]; the page is unchanged when the new entry
/// does not fit.
pub fn replace_at(p: &mut [u8], id: PageId, i: usize, key: &[u8], value: &[u8]) -> Result<()> {
    let (geo, off, old_eb, free) = {
        let node = Node::parse(p, id)?;
        let (off, k, v) = node.locate(i)?;
        (node.geo, off, node.geo.entry_bytes(k, v), node.hole_bytes())
    };
    let new_eb = geo.entry_bytes(key.len(), value.len());
    if new_eb == old_eb {
        write_entry(p, geo, off, key, value);
        return Ok(());
    }
    if free + old_eb < new_eb || key.len() > max_len(geo) || value.len() > max_len(geo) {
        return Err(corrupted(
            id,
            format!("replacement entry of {new_eb} bytes does not fit ({free} bytes free)"),
        ));
    }
    remove_at(p, id, i)?;
    insert_at(p, id, i, key, value)
}

/// Overwrites `bytes.len()` bytes of entry `i`'s value from byte `at` of the value, in
/// place (the entry keeps its size).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page, or a span outside the value.
pub fn patch_value(p: &mut [u8], id: PageId, i: usize, at: usize, bytes: &[u8]) -> Result<()> {
    let (start, v) = {
        let node = Node::parse(p, id)?;
        let (off, k, v) = node.locate(i)?;
        (off + node.geo.header_bytes(k, v) + k, v)
    };
    if at + bytes.len() > v {
        return Err(corrupted(
            id,
            format!(
                "patch of bytes {at}..{} of entry {i}'s {v}-byte value",
                at + bytes.len()
            ),
        ));
    }
    p[start + at..start + at + bytes.len()].copy_from_slice(bytes);
    Ok(())
}

/// Sets [`SLOT_FLAG_DEAD`] on entry `i` of leaf page `p`. Returns false, changing
/// nothing, when the page's slots have no flag byte (InnoDB geometry) or the flag was
/// already set.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page or an `i` out of range.
pub fn set_dead(p: &mut [u8], id: PageId, i: usize) -> Result<bool> {
    let (s, n) = {
        let node = Node::parse(p, id)?;
        (node.geo.slot_bytes as usize, node.n)
    };
    if i >= n {
        return Err(corrupted(id, format!("entry {i} asked of {n} entries")));
    }
    let at = PAGE_HEADER_BYTES + i * s + SLOT_FLAGS_AT;
    if s <= SLOT_FLAGS_AT || p[at] & SLOT_FLAG_DEAD != 0 {
        return Ok(false);
    }
    p[at] |= SLOT_FLAG_DEAD;
    Ok(true)
}

/// Clears [`SLOT_FLAG_DEAD`] on entry `i` of leaf page `p` (a live TID joined the entry:
/// a posting list swap). Nothing to do when slots have no flag byte.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page or an `i` out of range.
pub fn clear_dead(p: &mut [u8], id: PageId, i: usize) -> Result<()> {
    let (s, n) = {
        let node = Node::parse(p, id)?;
        (node.geo.slot_bytes as usize, node.n)
    };
    if i >= n {
        return Err(corrupted(id, format!("entry {i} asked of {n} entries")));
    }
    if s > SLOT_FLAGS_AT {
        p[PAGE_HEADER_BYTES + i * s + SLOT_FLAGS_AT] &= !SLOT_FLAG_DEAD;
    }
    Ok(())
}

/// Removes the entries at `slots` (strictly ascending) from node page `p`, keeping the
/// survivors' order and slot flags (PostgreSQL `PageIndexMultiDelete`).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page, slots out of range or not ascending.
pub fn remove_slots(p: &mut [u8], id: PageId, slots: &[usize]) -> Result<()> {
    let n = Node::parse(p, id)?.n;
    if slots.windows(2).any(|w| w[0] >= w[1]) || slots.last().is_some_and(|&l| l >= n) {
        return Err(corrupted(
            id,
            format!("slots to remove {slots:?} are not ascending below {n}"),
        ));
    }
    for &i in slots.iter().rev() {
        remove_at(p, id, i)?;
    }
    Ok(())
}

/// Sets the flags of node page `p`. Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page.
pub fn set_flags(p: &mut [u8], id: PageId, flags: u16) -> Result<()> {
    Node::parse(p, id)?;
    let sp = p.len() - SPECIAL_BYTES;
    wr16(p, sp + SP_FLAGS, flags);
    Ok(())
}

/// Sets the left sibling of node page `p`. Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page.
pub fn set_left(p: &mut [u8], id: PageId, left: u32) -> Result<()> {
    Node::parse(p, id)?;
    let sp = p.len() - SPECIAL_BYTES;
    wr32(p, sp + SP_LEFT, left);
    Ok(())
}

/// Sets the right sibling of node page `p`. Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page.
pub fn set_right(p: &mut [u8], id: PageId, right: u32) -> Result<()> {
    Node::parse(p, id)?;
    let sp = p.len() - SPECIAL_BYTES;
    wr32(p, sp + SP_RIGHT, right);
    Ok(())
}

/// Points downlink `i` of internal page `p` at block `child`, its separator unchanged
/// (InnoDB btr0btr.cc `btr_node_ptr_set_child_page_no`).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page, or an entry that is not a downlink.
pub fn set_child(p: &mut [u8], id: PageId, i: usize, child: u32) -> Result<()> {
    Node::parse(p, id)?.child(i)?;
    patch_value(p, id, i, 0, &child.to_le_bytes())
}

/// Contents of the meta page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Root block.
    pub root: u32,
    /// Levels of the tree (root level + 1).
    pub height: u32,
    /// Entry geometry of every node page.
    pub geometry: Geometry,
}

impl Meta {
    /// The meta fields as stored after the page header ([`META_BYTES`] bytes; also the
    /// block data of the CREATE and NEWROOT records).
    pub fn encode(&self) -> [u8; META_BYTES] {
        let mut b = [0u8; META_BYTES];
        b[0..4].copy_from_slice(&BTREE_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&BTREE_VERSION.to_le_bytes());
        b[8..12].copy_from_slice(&self.root.to_le_bytes());
        b[12..16].copy_from_slice(&self.height.to_le_bytes());
        b[16..18].copy_from_slice(&self.geometry.entry_header_bytes.to_le_bytes());
        b[18..20].copy_from_slice(&self.geometry.entry_align.to_le_bytes());
        b[20..22].copy_from_slice(&self.geometry.slot_bytes.to_le_bytes());
        b[22..24].copy_from_slice(&u16::from(self.geometry.innodb_compact).to_le_bytes());
        b
    }

    /// Decodes [`Meta::encode`]'s bytes.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) (naming `id`) for a short buffer, a wrong magic or
    /// version, or impossible values.
    pub fn decode(b: &[u8], id: PageId) -> Result<Meta> {
        if b.len() < META_BYTES {
            return Err(corrupted(id, format!("meta data of {} bytes", b.len())));
        }
        let magic = rd32(b, 0);
        let version = rd32(b, 4);
        if magic != BTREE_MAGIC || version != BTREE_VERSION {
            return Err(corrupted(
                id,
                format!("meta magic {magic:#x} version {version}, expected {BTREE_MAGIC:#x} version {BTREE_VERSION}"),
            ));
        }
        let m = Meta {
            root: rd32(b, 8),
            height: rd32(b, 12),
            geometry: Geometry {
                entry_header_bytes: rd16(b, 16),
                entry_align: rd16(b, 18),
                slot_bytes: rd16(b, 20),
                innodb_compact: rd16(b, 22) == 1,
            },
        };
        if m.root == META_BLOCK
            || m.root == NO_BLOCK
            || m.height == 0
            || m.height > MAX_LEVEL as u32 + 1
            || rd16(b, 22) > 1
            || !m.geometry.is_valid()
        {
            return Err(corrupted(id, format!("impossible meta contents {m:?}")));
        }
        Ok(m)
    }

    /// Reads the meta page `p` (page `id`).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when it is not a B+tree meta page.
    pub fn read(p: &[u8], id: PageId) -> Result<Meta> {
        let sp = check_common(p, id)?;
        if rd16(p, sp + SP_FLAGS) != FLAG_META {
            return Err(corrupted(id, "not a meta page"));
        }
        Meta::decode(&p[PAGE_HEADER_BYTES..PAGE_HEADER_BYTES + META_BYTES], id)
    }

    /// Writes the meta page into `p`, keeping its page LSN.
    pub fn write(&self, p: &mut [u8]) {
        let lsn = page_lsn(p);
        init_page(p, PAGE_TYPE_BTREE, SPECIAL_BYTES);
        set_page_lsn(p, lsn);
        write_special(
            p,
            self.geometry,
            NodeHeader {
                level: 0,
                flags: FLAG_META,
                left: NO_BLOCK,
                right: NO_BLOCK,
            },
        );
        p[PAGE_HEADER_BYTES..PAGE_HEADER_BYTES + META_BYTES].copy_from_slice(&self.encode());
        let upper = p.len() - SPECIAL_BYTES;
        set_hole(p, (PAGE_HEADER_BYTES + META_BYTES) as u16, upper as u16);
    }
}
