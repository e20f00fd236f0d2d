//! The B+tree itself: [`BTree`] and its configuration ([`BTreeConfig`]), the counters and
//! statistics it reports ([`BTreeOps`], [`BTreeStats`]), creating and opening a tree (the
//! meta page at block 0 and an empty root leaf: PostgreSQL nbtpage.c `_bt_initmetapage`),
//! the cached copy of the meta page's root (`rd_amcache`, nbtpage.c `_bt_getroot`), and
//! the helpers every operation shares: page fetches that name the link followed in their
//! errors (nbtpage.c `_bt_getbuf`), node parsing checked against the tree's geometry and
//! the level expected, entry size checks, separator truncation (nbtutils.c
//! `_bt_truncate`), the sibling-hop guard and the level-by-level walk.
//!
//! The operations are in the sibling files, each an `impl BTree` block, along PostgreSQL's
//! nbtree file map (the `btree` module doc lists them). See the module doc of `btree` for
//! the rules they follow.

use super::dedup::{self, TID_BYTES};
use super::file_space::FileSpace;
use super::node::{self, Geometry, Meta, Node, NodeHeader, FLAG_FREED, META_BLOCK, NO_BLOCK};
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, BufferPool, ReadPageGuard, WritePageGuard};
use crate::device::FileId;
use crate::error::StorageError;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::wal::{rmgr, RecordBuilder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

/// How a B+tree sizes and splits its pages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BTreeConfig {
    /// When an insert splits the rightmost leaf at its end (ascending inserts), the left
    /// page keeps this percent of the page's usable bytes (PostgreSQL
    /// BTREE_DEFAULT_FILLFACTOR 90, nbtsplitloc.c `_bt_findsplitloc`; InnoDB about 15/16 =
    /// 94, btr0btr.cc `btr_page_get_split_rec_to_right`). Other splits divide the bytes in
    /// half. 10..=100.
    pub rightmost_fill_pct: u8,
    /// Bytes of each entry's header (PostgreSQL: 4, IndexTupleData's 8 bytes less the TID
    /// carried in the key, see [`BTreeConfig::postgres`]). At least 4 (key_len u16 +
    /// value_len u16, then zero padding), at most 64; with
    /// [`BTreeConfig::innodb_compact`], 2 (the least its lengths take).
    pub entry_header_bytes: u16,
    /// Alignment of each entry's size in bytes (PostgreSQL MAXALIGN 8; InnoDB 1): an entry
    /// occupies `align_up(entry_header_bytes + key.len() + value.len(), entry_align)`
    /// bytes. 1, 2, 4 or 8.
    pub entry_align: u16,
    /// Bytes of each slot in the slot array (PostgreSQL ItemIdData, 4; InnoDB 2, which with
    /// the 2-byte header stands for InnoDB's 5-byte record header, see
    /// [`BTreeConfig::innodb_compact`]). At least 2 (a u16 offset, then zero padding), at
    /// most 16.
    pub slot_bytes: u16,
    /// Leaf splits push up the shortest prefix of the right half's first key that is
    /// still greater than the left half's last key, instead of the whole key (PostgreSQL
    /// suffix truncation since 12, nbtutils.c `_bt_truncate`; InnoDB copies the whole key
    /// into its node pointers).
    pub suffix_truncation: bool,
    /// Leaf keys end in a 6-byte heap TID, values are empty, and a full leaf merges runs of
    /// keys equal before the TID into posting entries before it splits (PostgreSQL 13+
    /// deduplication, nbtdedup.c; see `btree::dedup`). InnoDB has none.
    #[serde(default)]
    pub deduplicate: bool,
    /// A leaf whose entries (headers included, slots not; with
    /// [`BTreeConfig::innodb_compact`], entries and slots: InnoDB's `page_get_data_size`)
    /// fall below this percent of the page size after a delete is merged into a sibling under the same parent when the
    /// two fit in one page (InnoDB: `MERGE_THRESHOLD`, 50 by default, dict0mem.h
    /// `DICT_INDEX_MERGE_THRESHOLD_DEFAULT`; btr0cur.cc `btr_cur_compress_if_useful` →
    /// btr0btr.cc `btr_compress`; see [`BTree::delete`]). `None`: pages are never merged
    /// (PostgreSQL nbtree never merges). 1..=50.
    #[serde(default)]
    pub merge_threshold_pct: Option<u8>,
    /// Leaves keep InnoDB's `PAGE_GARBAGE`, the space of deleted entries not yet reused,
    /// and an insert into a leaf that has garbage, less than a 32nd of the page free and
    /// no contiguous room for the entry splits the leaf instead of reusing the garbage
    /// (btr0cur.cc `btr_cur_optimistic_insert`, `BTR_CUR_PAGE_REORGANIZE_LIMIT`; see
    /// `btree::garbage`). False: a leaf splits only when the entry does not fit
    /// (PostgreSQL: nbtree pages are compacted by `PageIndexMultiDelete`).
    #[serde(default)]
    pub page_garbage: bool,
    /// A split's new page is allocated as InnoDB's file segment allocates it, near the
    /// split page (the next block if free, else a free block of its extent, a new extent
    /// when the segment is short of free pages, else the oldest extent not full:
    /// fsp0fsp.cc `fseg_alloc_free_page_low`, hint page number + 1 from btr0btr.cc
    /// `btr_page_split_and_insert`; `PageStore::allocate_page_near`). False: the
    /// relation's lowest free block, else a new one (PostgreSQL nbtree takes a recycled
    /// page from the free space map, `_bt_getbuf` → `GetFreeIndexPage`).
    #[serde(default)]
    pub extent_allocation: bool,
    /// Pages are sized as InnoDB's COMPACT pages ([`Geometry::innodb_compact`]): 1- or
    /// 2-byte key and value lengths in place of the 4-byte header, and InnoDB's free space
    /// (the page less its 132 bytes of headers, trailer and infimum/supremum, less the
    /// page directory of one 2-byte slot per 4 records, page0page.inl
    /// `page_get_max_insert_size`). Without it an InnoDB page would spend a 2-byte slot on
    /// every record and hold 10 % fewer secondary-index entries than InnoDB's (1,089
    /// against 1,203 entries of `(k, id)` in a 16 KiB page). Requires
    /// `entry_header_bytes` 2, `entry_align` 1 and `slot_bytes` 2.
    #[serde(default)]
    pub innodb_compact: bool,
    /// A page splits at the insert point when the insert lands next to the page's last
    /// insert (InnoDB's eager heuristic for sequential inserts, btr0btr.cc
    /// `btr_page_split_and_insert` → `btr_page_get_split_rec_to_right` /
    /// `btr_page_get_split_rec_to_left`, reading `PAGE_LAST_INSERT`, see `btree::node`):
    /// right after it, the left page keeps the entries up to the new one and the next,
    /// the rest move right; right before it, the entries below the one before the insert
    /// point move left. Any other split divides the bytes in half. The rule of
    /// [`BTreeConfig::rightmost_fill_pct`] comes first. False: every split but that one
    /// halves the bytes (PostgreSQL `_bt_findsplitloc` has no such case).
    #[serde(default)]
    pub sequential_split: bool,
    /// A descent that may split a leaf (the pessimistic one) also fixes the leaf's left
    /// sibling, reading it on a miss, as InnoDB's `BTR_MODIFY_TREE` search latches left,
    /// self and right before the split (btr0cur.cc `btr_cur_t::search_leaf` →
    /// `btr_latch_prev` → buf0buf.cc `buf_pool_t::page_fix`: a hit leaves the page where
    /// it is in the LRU list, a miss reads it in at the midpoint; the right sibling, which
    /// a split relinks, is fetched by both engines). The left sibling is neither changed
    /// nor latched here: only its pin and its read are modelled (see
    /// [`BufferPool::fix_page`](crate::buffer::BufferPool::fix_page)). False: PostgreSQL's
    /// `_bt_split` touches only the right sibling.
    #[serde(default)]
    pub split_fixes_left_sibling: bool,
}

impl BTreeConfig {
    /// PostgreSQL nbtree's accounting: MAXALIGN 8, 4-byte line pointers, fillfactor 90
    /// for the rightmost leaf, suffix truncation. The 8-byte `IndexTupleData` header is
    /// the 6-byte `t_tid` plus the 2-byte `t_info`: here the heap TID is the last 6 bytes
    /// of a leaf key (an internal entry's downlink is its 4-byte value), so the entry
    /// header is the 4-byte length pair, and an int4 key takes 4 + 4 + 6 = 14 → 16 bytes
    /// as in PostgreSQL (8 + 4 → 16, `catalog::pg_index_tuple_bytes`). The length pair is
    /// 2 bytes more than `t_info`, so keys of 7 to 8 bytes (mod 8) round up one step
    /// further than PostgreSQL's: an int8 key takes 24 bytes, not 16.
    pub fn postgres() -> Self {
        BTreeConfig {
            rightmost_fill_pct: 90,
            entry_header_bytes: 4,
            entry_align: 8,
            slot_bytes: 4,
            suffix_truncation: true,
            deduplicate: true,
            merge_threshold_pct: None,
            page_garbage: false,
            extent_allocation: false,
            innodb_compact: false,
            sequential_split: false,
            split_fixes_left_sibling: false,
        }
    }

    /// InnoDB's accounting: COMPACT pages ([`BTreeConfig::innodb_compact`]: InnoDB's free
    /// space and page directory of one 2-byte slot per 4 records), no alignment, 15/16
    /// fill on ascending inserts, whole keys in node pointers, leaves merged below half a
    /// page (MERGE_THRESHOLD 50), leaves with `PAGE_GARBAGE`, split pages allocated from
    /// file segment extents, splits at the insert point next to the last insert, the left
    /// sibling fixed by the descent that splits.
    ///
    /// An entry takes its 1- or 2-byte key and value lengths, its key and value, and a
    /// 2-byte slot: 4 bytes besides key and value when both are shorter than 128 bytes,
    /// which stand for the 4 bytes of InnoDB's 5-byte record header
    /// (`REC_N_NEW_EXTRA_BYTES`) that the page layer uses (heap_no and status, 2;
    /// next-record offset, 2); the fifth, the info bits with the delete mark, is the first
    /// byte of the value: of the COMPACT record in the clustered index, of the 1-byte
    /// value of a secondary entry (`clustered::table`). An internal entry (separator key,
    /// 4-byte child block) takes a byte less than InnoDB's node pointer record, whose
    /// header has info bits too.
    pub fn innodb() -> Self {
        BTreeConfig {
            rightmost_fill_pct: 94,
            entry_header_bytes: 2,
            entry_align: 1,
            slot_bytes: 2,
            suffix_truncation: false,
            deduplicate: false,
            merge_threshold_pct: Some(50),
            page_garbage: true,
            extent_allocation: true,
            innodb_compact: true,
            sequential_split: true,
            split_fixes_left_sibling: true,
        }
    }

    /// The entry geometry recorded in every page.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            entry_header_bytes: self.entry_header_bytes,
            entry_align: self.entry_align,
            slot_bytes: self.slot_bytes,
            innodb_compact: self.innodb_compact,
        }
    }

    /// Checks every field's range.
    ///
    /// Errors: [`Error::InvalidConfig`] naming the field.
    pub fn validate(&self) -> Result<()> {
        self.geometry().validate()?;
        if !(10..=100).contains(&self.rightmost_fill_pct) {
            return Err(Error::InvalidConfig(format!(
                "btree rightmost_fill_pct must be 10..=100, got {}",
                self.rightmost_fill_pct
            )));
        }
        if let Some(pct) = self.merge_threshold_pct {
            if !(1..=50).contains(&pct) {
                return Err(Error::InvalidConfig(format!(
                    "btree merge_threshold_pct must be 1..=50 (InnoDB MERGE_THRESHOLD), got {pct}"
                )));
            }
        }
        Ok(())
    }
}

/// Size and shape of a tree (PostgreSQL pgstattuple's `pgstatindex`). Exact when no other
/// thread changes the tree meanwhile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BTreeStats {
    /// Pages in the index relation (meta page included).
    pub pages: u32,
    /// Leaf pages reachable from the root.
    pub leaf_pages: u64,
    /// Internal pages reachable from the root.
    pub internal_pages: u64,
    /// Entries in the leaves, one per TID in a deduplicating tree (a posting entry counts
    /// its TIDs).
    pub entries: u64,
    /// Posting entries in the leaves (deduplication; pgstattuple has no such column,
    /// amcheck's `bt_page_items` shows `htids`).
    #[serde(default)]
    pub posting_entries: u64,
    /// TIDs held by posting entries.
    #[serde(default)]
    pub posting_tids: u64,
    /// Levels (1 = the root is a leaf).
    pub height: u32,
    /// Bytes of slots and entries in all leaves.
    pub leaf_used_bytes: u64,
    /// Bytes of slots and entries in the rightmost leaf.
    pub rightmost_leaf_used_bytes: u64,
    /// Bytes of slots and entries in all internal pages.
    pub internal_used_bytes: u64,
    /// Bytes of a page that slots and entries can use (page minus header and special).
    pub page_usable_bytes: u32,
}

impl BTreeStats {
    /// Average fill of the leaves in percent of their usable bytes, the rightmost leaf
    /// left out when there are others (it is the one still filling up). 0 for no leaves.
    pub fn avg_leaf_fill_pct(&self) -> f64 {
        let (used, pages) = if self.leaf_pages > 1 {
            (
                self.leaf_used_bytes - self.rightmost_leaf_used_bytes,
                self.leaf_pages - 1,
            )
        } else {
            (self.leaf_used_bytes, self.leaf_pages)
        };
        if pages == 0 || self.page_usable_bytes == 0 {
            return 0.0;
        }
        100.0 * used as f64 / (pages as f64 * self.page_usable_bytes as f64)
    }
}

/// A concurrent B+tree in the pages of a buffer pool. See the `btree` module doc.
pub struct BTree {
    pub(super) pool: Arc<BufferPool>,
    pub(super) rel: FileId,
    pub(super) cfg: BTreeConfig,
    pub(super) geo: Geometry,
    pub(super) usable: usize,
    /// Largest key + value (bytes) of an entry: its space is at most a quarter of
    /// `usable`.
    pub(super) max_payload: usize,
    /// Free bytes an internal page needs to be "safe": room for the largest separator.
    pub(super) sep_reserve: usize,
    /// Largest key + value of a posting entry ([`dedup::max_posting_bytes`]).
    pub(super) max_posting: usize,
    /// New posting entries may be made (deduplication passes, sorted builds): the
    /// configuration's `deduplicate` unless [`BTree::with_deduplication`] turned it off.
    /// Posting entries already there are read either way.
    pub(super) new_postings: bool,
    /// Structural changes since the tree was opened ([`BTree::ops`]).
    pub(super) ops: OpCounters,
    /// The root block and the height as last read from the meta page, `root << 32 |
    /// height` (0: not read yet): PostgreSQL keeps a copy of the metapage in the relcache
    /// (`rd_amcache`, nbtpage.c `_bt_getroot`), InnoDB the root page number in the
    /// dictionary (`dict_index_t::page`), so neither reads the meta page per descent.
    pub(super) root_cache: AtomicU64,
    /// An error stopped a split cascade in this tree since it was opened, leaving a page
    /// with INCOMPLETE_SPLIT (invariant 6's exception): the database's close then writes
    /// an ordinary checkpoint instead of a shutdown one, so the next open finishes it.
    pub(super) split_left_incomplete: AtomicBool,
    /// The leaves' `PAGE_GARBAGE` ([`BTreeConfig::page_garbage`]; `btree::garbage`).
    pub(super) garbage: GarbageMap,
    /// The file-space pages of the tree's tablespace, and whether the tree is a secondary
    /// index (whose leaves have change-buffer free bits), when its table has them
    /// ([`BTree::set_file_space`]; `btree::file_space`).
    pub(super) file_space: Option<(Arc<FileSpace>, bool)>,
}

/// The garbage of a tree's leaves by block (absent: none), each read and changed under the
/// leaf's exclusive latch (InnoDB's `PAGE_GARBAGE`; `btree::garbage`).
#[derive(Debug, Default)]
pub(super) struct GarbageMap(Mutex<HashMap<u32, usize>>);

impl GarbageMap {
    pub(super) fn get(&self, block: u32) -> usize {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&block).copied().unwrap_or(0)
    }

    pub(super) fn set(&self, block: u32, bytes: usize) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if bytes == 0 {
            m.remove(&block);
        } else {
            m.insert(block, bytes);
        }
    }
}

#[derive(Default)]
pub(super) struct OpCounters {
    pub(super) splits: AtomicU64,
    pub(super) splits_at_insert_point: AtomicU64,
    pub(super) merge_attempts: AtomicU64,
    pub(super) merges: AtomicU64,
    pub(super) reorgs: AtomicU64,
}

/// Structural changes a tree made since it was opened, under MariaDB's `innodb_metrics`
/// names (srv0mon.h `MONITOR_INDEX_SPLIT`, `MONITOR_INDEX_MERGE_ATTEMPTS`,
/// `MONITOR_INDEX_MERGE_SUCCESSFUL`, `MONITOR_INDEX_REORG_ATTEMPTS`). Counts of operations,
/// not pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BTreeOps {
    /// Page splits, every level (`index_page_splits`; PostgreSQL counts none).
    pub index_page_splits: u64,
    /// Of those, splits at the insert point next to the page's last insert
    /// ([`BTreeConfig::sequential_split`]; MariaDB counts none).
    #[serde(default)]
    pub index_page_splits_at_insert_point: u64,
    /// Leaves found below the merge threshold after a delete, with their siblings latched
    /// (`index_page_merge_attempts`, counted where `btr_compress` starts).
    pub index_page_merge_attempts: u64,
    /// Of those, leaves merged with a sibling (`index_page_merge_successful`).
    pub index_page_merge_successful: u64,
    /// Leaves InnoDB would reorganize (`index_page_reorg_attempts`, counted by btr0btr.cc
    /// `btr_page_reorganize_low`; every attempt succeeds on an uncompressed page): an insert
    /// that fits only once the page's garbage is made contiguous (btr0cur.cc
    /// `btr_cur_optimistic_insert`), and a merge page whose contiguous free space cannot
    /// take the merged records (btr0btr.cc `btr_can_merge_with_page`). Only with
    /// [`BTreeConfig::page_garbage`]; the pages themselves are always compact, so nothing is
    /// rewritten or logged (see `btree::garbage`).
    #[serde(default)]
    pub index_page_reorg_attempts: u64,
}

impl BTreeOps {
    /// Field-by-field sum.
    pub fn plus(self, o: BTreeOps) -> BTreeOps {
        BTreeOps {
            index_page_splits: self.index_page_splits + o.index_page_splits,
            index_page_splits_at_insert_point: self.index_page_splits_at_insert_point
                + o.index_page_splits_at_insert_point,
            index_page_merge_attempts: self.index_page_merge_attempts + o.index_page_merge_attempts,
            index_page_merge_successful: self.index_page_merge_successful
                + o.index_page_merge_successful,
            index_page_reorg_attempts: self.index_page_reorg_attempts + o.index_page_reorg_attempts,
        }
    }
}

impl std::fmt::Debug for BTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTree")
            .field("rel", &self.rel)
            .field("cfg", &self.cfg)
            .field("max_entry_bytes", &self.max_payload)
            .finish_non_exhaustive()
    }
}

/// Counts sibling hops and descents so that a corrupted sibling chain (a cycle) ends in an
/// error instead of a loop.
pub(super) struct Hops<'t> {
    tree: &'t BTree,
    n: u64,
    limit: u64,
}

impl<'t> Hops<'t> {
    pub(super) fn new(tree: &'t BTree) -> Result<Self> {
        Ok(Hops {
            tree,
            n: 0,
            limit: tree.n_blocks()? as u64,
        })
    }
    pub(super) fn step(&mut self, at: PageId) -> Result<()> {
        self.n += 1;
        if self.n > self.limit {
            self.limit = self.tree.n_blocks()? as u64;
            if self.n > self.limit {
                return Err(Error::corrupted(format!(
                        "B+tree {at}: more steps along a level than the relation has pages ({}): a sibling cycle",
                        self.limit
                    )));
            }
        }
        Ok(())
    }
}

impl BTree {
    /// Creates the index relation (`store.create_relation()`), its meta page at block 0
    /// (root block and height) and an empty root leaf at block 1, logged as one CREATE
    /// record.
    ///
    /// Errors: [`Error::InvalidConfig`] for a bad `cfg` or a page size whose quarter cannot
    /// hold an entry; store, pool and WAL errors.
    pub fn create(pool: Arc<BufferPool>, cfg: BTreeConfig) -> Result<BTree> {
        let rel = pool.store().create_relation()?;
        let tree = BTree::with(pool, rel, cfg)?;
        let mut mg = tree.pool.new_page(rel)?;
        let mut rg = tree.pool.new_page(rel)?;
        let (mid, rid) = (mg.page_id(), rg.page_id());
        if mid.block != META_BLOCK {
            return Err(Error::corrupted(format!(
                "B+tree {mid}: a new relation's first page is not block 0"
            )));
        }
        let meta = Meta {
            root: rid.block,
            height: 1,
            geometry: tree.geo,
        };
        meta.write(mg.data_mut());
        let h = NodeHeader {
            level: 0,
            flags: 0,
            left: NO_BLOCK,
            right: NO_BLOCK,
        };
        let none: [(&[u8], &[u8]); 0] = [];
        node::build(rg.data_mut(), rid, tree.geo, h, &none)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::CREATE)
            .block(mid, true, &meta.encode())
            .block(rid, true, &bwal::encode_node(h, &none));
        log_change(tree.pool.wal(), &rec, &mut [&mut mg, &mut rg])?;
        drop((mg, rg));
        Ok(tree)
    }

    /// Opens the tree stored in relation `rel` (reads its meta page).
    ///
    /// Errors: [`Error::InvalidConfig`] for a bad `cfg` or one whose entry geometry differs
    /// from the tree's; [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when block 0 is not a B+tree meta page; pool
    /// errors reading it.
    pub fn open(pool: Arc<BufferPool>, rel: FileId, cfg: BTreeConfig) -> Result<BTree> {
        let tree = BTree::with(pool, rel, cfg)?;
        let g = tree.pool.fetch_read(tree.meta_id())?;
        let m = Meta::read(g.data(), g.page_id())?;
        if m.geometry != tree.geo {
            return Err(Error::InvalidConfig(format!(
                "B+tree in relation {rel} was created with {:?}, the configuration says {:?}",
                m.geometry, tree.geo
            )));
        }
        drop(g);
        Ok(tree)
    }

    /// Whether `n_entries` entries of `used_bytes` (summed [`Geometry::space`]) fit one of
    /// the tree's pages ([`Geometry::fits`]).
    pub(super) fn page_fits(&self, n_entries: usize, used_bytes: usize) -> bool {
        self.geo
            .fits(n_entries, used_bytes, self.pool.store().page_size().bytes())
    }

    fn with(pool: Arc<BufferPool>, rel: FileId, cfg: BTreeConfig) -> Result<BTree> {
        cfg.validate()?;
        let geo = cfg.geometry();
        let usable = geo.capacity_bytes(pool.store().page_size().bytes());
        let quarter = usable / 4;
        let a = geo.entry_align as usize;
        let room = (quarter.saturating_sub(geo.slot_bytes as usize)) / a * a;
        // An innodb_compact header of two lengths of 128 bytes or more takes 4 bytes.
        let header = if geo.innodb_compact {
            4
        } else {
            geo.entry_header_bytes as usize
        };
        let max_payload = room.saturating_sub(header);
        if max_payload < 16 {
            return Err(Error::InvalidConfig(format!(
                "btree entry geometry {geo:?} leaves {max_payload} bytes per entry in a quarter page"
            )));
        }
        Ok(BTree {
            rel,
            geo,
            usable,
            max_payload,
            sep_reserve: geo.space(max_payload, 4),
            max_posting: dedup::max_posting_bytes(max_payload, usable),
            new_postings: cfg.deduplicate,
            ops: OpCounters::default(),
            root_cache: AtomicU64::new(0),
            split_left_incomplete: AtomicBool::new(false),
            garbage: GarbageMap::default(),
            file_space: None,
            cfg,
            pool,
        })
    }

    /// Makes the tree touch the file-space pages of its tablespace as MariaDB's B-tree
    /// does (`btree::file_space`): on every page it allocates or frees, every split and
    /// merge attempt (`FSP_HDR`, `INODE`), and, when `secondary`, on its leaves' splits
    /// and merges (`IBUF_BITMAP`). InnoDB keeps them per tablespace, so a table's trees
    /// share one [`FileSpace`].
    pub fn set_file_space(&mut self, file_space: Arc<FileSpace>, secondary: bool) {
        self.file_space = Some((file_space, secondary));
    }

    /// The file-space pages the tree touches, if any ([`BTree::set_file_space`]).
    pub fn file_space(&self) -> Option<&Arc<FileSpace>> {
        self.file_space.as_ref().map(|(f, _)| f)
    }

    /// A page of the tree was allocated or freed: its tablespace's extent descriptor and
    /// segment inode change (`FileSpace::page_allocated_or_freed`).
    pub(super) fn fsp_page_allocated_or_freed(&self) -> Result<()> {
        match &self.file_space {
            Some((fs, _)) => fs.page_allocated_or_freed(),
            None => Ok(()),
        }
    }

    /// A pessimistic insert or delete reserves free extents (`FileSpace::extents_reserved`).
    pub(super) fn fsp_extents_reserved(&self) -> Result<()> {
        match &self.file_space {
            Some((fs, _)) => fs.extents_reserved(),
            None => Ok(()),
        }
    }

    /// A leaf split (`split`), or a leaf merge whose surviving page `survivor` (page
    /// `sid`, as merged) is given: a secondary index's free bits change in its
    /// tablespace's `IBUF_BITMAP` (`FileSpace::free_bits_changed`), at a merge only when
    /// the survivor's bits fall below 3. The survivor is parsed only for a secondary
    /// index with file-space pages.
    pub(super) fn fsp_leaf_free_bits(&self, survivor: Option<(&[u8], PageId)>) -> Result<()> {
        let Some((fs, true)) = &self.file_space else {
            return Ok(());
        };
        let below = match survivor {
            None => true,
            Some((data, sid)) => {
                fs.free_bits_below_max(self.node(data, sid, Some(0))?.free_bytes())
            }
        };
        if below {
            fs.free_bits_changed()?;
        }
        Ok(())
    }

    /// This tree with new posting entries allowed or not (the design switch
    /// `btree_deduplication`): off, a deduplicating tree behaves and writes exactly as one
    /// without deduplication, and still reads the posting entries an earlier run made
    /// (PostgreSQL's `deduplicate_items` storage parameter works the same way).
    pub fn with_deduplication(mut self, on: bool) -> Self {
        self.new_postings = on && self.cfg.deduplicate;
        self
    }

    /// The index relation's file id.
    pub fn rel(&self) -> FileId {
        self.rel
    }

    /// The configuration.
    pub fn config(&self) -> &BTreeConfig {
        &self.cfg
    }

    /// True when an error stopped a split cascade in this tree since it was opened, so a
    /// page may still carry INCOMPLETE_SPLIT (in memory; the flag on the page is what
    /// [`BTree::finish_incomplete_splits`] looks for). A clean close then writes no
    /// shutdown checkpoint ([`crate::wal::xlog_info::CHECKPOINT_SHUTDOWN`]).
    pub fn left_incomplete_split(&self) -> bool {
        self.split_left_incomplete.load(Ordering::Acquire)
    }

    /// Splits and merges since the tree was opened (in memory: zero again after a
    /// restart).
    pub fn ops(&self) -> BTreeOps {
        BTreeOps {
            index_page_splits: self.ops.splits.load(Ordering::Relaxed),
            index_page_splits_at_insert_point: self
                .ops
                .splits_at_insert_point
                .load(Ordering::Relaxed),
            index_page_merge_attempts: self.ops.merge_attempts.load(Ordering::Relaxed),
            index_page_merge_successful: self.ops.merges.load(Ordering::Relaxed),
            index_page_reorg_attempts: self.ops.reorgs.load(Ordering::Relaxed),
        }
    }

    /// Largest key + value in bytes an entry may have: its space (header, padding, slot)
    /// is at most a quarter of a page's usable bytes.
    pub fn max_entry_bytes(&self) -> usize {
        self.max_payload
    }

    pub(super) fn meta_id(&self) -> PageId {
        PageId::new(self.rel, META_BLOCK)
    }

    pub(super) fn n_blocks(&self) -> Result<u32> {
        Ok(self.pool.store().n_blocks(self.rel)?)
    }

    pub(super) fn check_meta(&self, m: &Meta, id: PageId) -> Result<()> {
        if m.geometry != self.geo {
            return Err(Error::corrupted(format!(
                "B+tree {id}: meta geometry {:?} differs from the open tree's {:?}",
                m.geometry, self.geo
            )));
        }
        Ok(())
    }

    pub(super) fn read_meta(&self) -> Result<(ReadPageGuard<'_>, Meta)> {
        let g = self.pool.fetch_read(self.meta_id())?;
        let m = Meta::read(g.data(), g.page_id())?;
        self.check_meta(&m, g.page_id())?;
        Ok((g, m))
    }

    /// The page `block` named by a link (`what`) on page `from`, checked (a link to the
    /// page itself would make the caller latch a page it holds).
    pub(super) fn linked(&self, block: u32, from: PageId, what: &str) -> Result<PageId> {
        if block == META_BLOCK || block == NO_BLOCK || block == from.block {
            return Err(Error::corrupted(format!(
                "B+tree {from}: {what} names block {block}"
            )));
        }
        Ok(PageId::new(self.rel, block))
    }

    fn missing(e: StorageError, from: PageId, what: &str, block: u32) -> Error {
        match e {
            StorageError::NoSuchPage { .. } => Error::corrupted(format!(
                "B+tree {from}: {what} names block {block}, past the end of the relation"
            )),
            e => e.into(),
        }
    }

    pub(super) fn fetch_read(
        &self,
        block: u32,
        from: PageId,
        what: &str,
    ) -> Result<ReadPageGuard<'_>> {
        let id = self.linked(block, from, what)?;
        self.pool
            .fetch_read(id)
            .map_err(|e| Self::missing(e, from, what, block))
    }

    pub(super) fn fetch_write(
        &self,
        block: u32,
        from: PageId,
        what: &str,
    ) -> Result<WritePageGuard<'_>> {
        let id = self.linked(block, from, what)?;
        self.pool
            .fetch_write(id)
            .map_err(|e| Self::missing(e, from, what, block))
    }

    /// Fixes the page `block` named by a link (`what`) on page `from` without latching it
    /// ([`crate::buffer::BufferPool::fix_page`]).
    pub(super) fn fix_linked(&self, block: u32, from: PageId, what: &str) -> Result<()> {
        let id = self.linked(block, from, what)?;
        self.pool
            .fix_page(id)
            .map(|_| ())
            .map_err(|e| Self::missing(e, from, what, block))
    }

    /// Parses node page `data` (page `id`), checking the tree's geometry and, when given,
    /// the level the path to it implies.
    pub(super) fn node<'g>(
        &self,
        data: &'g [u8],
        id: PageId,
        level: Option<u16>,
    ) -> Result<Node<'g>> {
        let n = Node::parse(data, id)?;
        if n.geometry() != self.geo {
            return Err(Error::corrupted(format!(
                "B+tree {id}: page geometry {:?} differs from the tree's {:?}",
                n.geometry(),
                self.geo
            )));
        }
        if n.flags() & FLAG_FREED != 0 {
            return Err(Error::corrupted(format!(
                "B+tree {id}: a link names a page freed by a merge"
            )));
        }
        if let Some(l) = level {
            if n.level() != l {
                return Err(Error::corrupted(format!(
                    "B+tree {id}: level {} where {l} was expected",
                    n.level()
                )));
            }
        }
        Ok(n)
    }

    pub(super) fn root_level(m: &Meta) -> u16 {
        (m.height - 1) as u16
    }

    /// Notes `root` and `height` as the meta page names them now ([`BTree::latch_root`]).
    pub(super) fn cache_root(&self, root: u32, height: u32) {
        self.root_cache
            .store((root as u64) << 32 | height as u64, Ordering::Release);
    }

    pub(super) fn check_size(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.cfg.deduplicate && (!value.is_empty() || key.len() < TID_BYTES) {
            return Err(Error::InvalidValue(format!(
                "a deduplicating B+tree takes keys ending in a {TID_BYTES}-byte TID and empty values (key {} bytes, value {} bytes)",
                key.len(),
                value.len()
            )));
        }
        let bytes = key.len() + value.len();
        if bytes > self.max_payload {
            return Err(Error::TooLarge {
                what: "B+tree entry (key + value)",
                bytes,
                max_bytes: self.max_payload,
            });
        }
        Ok(())
    }

    /// Visits every page of the tree `meta` describes level by level, the root's level
    /// first, each level left to right along the right links from its leftmost page (the
    /// first child of the leftmost page of the level above), one shared latch at a time:
    /// `visit(page, node, level)` runs with the page latched and may pick it out, and
    /// `level_done(level, picked)` runs after each level with no latch held, with what
    /// `visit` picked there, in page order.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page or a sibling cycle; pool errors;
    /// those of the callbacks, which stop the walk.
    pub(super) fn walk_levels<T>(
        &self,
        meta: &Meta,
        mut visit: impl FnMut(PageId, &Node<'_>, u16) -> Result<Option<T>>,
        mut level_done: impl FnMut(u16, Vec<T>) -> Result<()>,
    ) -> Result<()> {
        let mut level = Self::root_level(meta);
        let mut leftmost = meta.root;
        loop {
            let mut hops = Hops::new(self)?;
            let mut block = leftmost;
            let mut from = self.meta_id();
            let mut next_leftmost = None;
            let mut picked = Vec::new();
            while block != NO_BLOCK {
                let g = self.fetch_read(block, from, "link")?;
                let id = g.page_id();
                let n = self.node(g.data(), id, Some(level))?;
                if level > 0 && next_leftmost.is_none() {
                    next_leftmost = Some(n.child(0)?);
                }
                picked.extend(visit(id, &n, level)?);
                block = n.right();
                from = id;
                hops.step(id)?;
            }
            level_done(level, picked)?;
            match next_leftmost {
                Some(b) if level > 0 => {
                    leftmost = b;
                    level -= 1;
                }
                _ => return Ok(()),
            }
        }
    }
}

/// The shortest prefix of `right_first` that is greater than `left_last` (which is
/// smaller than `right_first`): PostgreSQL nbtutils.c `_bt_truncate` on bytes.
pub(crate) fn truncated_separator(left_last: &[u8], right_first: &[u8]) -> Vec<u8> {
    let common = left_last
        .iter()
        .zip(right_first)
        .take_while(|(a, b)| a == b)
        .count();
    right_first[..(common + 1).min(right_first.len())].to_vec()
}
