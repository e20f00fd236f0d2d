//! The B+tree operations: create/open, lookup, insert (optimistic, then pessimistic with
//! splits), update, delete, scans in both directions, bulk delete, statistics and a
//! structural check. See the module doc of `btree` for the rules they follow.

use super::cleanup::{CleanupOutcome, DeleteCandidate, DeleteOp, IndexDeleteTuples, InsertCleanup};
use super::dedup::{self, TID_BYTES};
use super::node::{
    self, usable_bytes, Entry, Geometry, Meta, Node, NodeHeader, FLAG_FREED, FLAG_INCOMPLETE_SPLIT,
    META_BLOCK, NO_BLOCK,
};
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, BufferPool, ReadPageGuard, WritePageGuard};
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::wal::{rmgr, RecordBuilder};
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// carried in the key, see [`BTreeConfig::postgres`]; InnoDB: the 5-byte
    /// record header). At least 4 (key_len u16 + value_len u16, then zero padding), at
    /// most 64.
    pub entry_header_bytes: u16,
    /// Alignment of each entry's size in bytes (PostgreSQL MAXALIGN 8; InnoDB 1): an entry
    /// occupies `align_up(entry_header_bytes + key.len() + value.len(), entry_align)`
    /// bytes. 1, 2, 4 or 8.
    pub entry_align: u16,
    /// Bytes of each slot in the slot array (PostgreSQL ItemIdData, 4; InnoDB about 2 of
    /// page directory). At least 2 (a u16 offset, then zero padding), at most 16.
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
    /// A leaf whose entries (headers included, slots not) fall below this percent of the
    /// page size after a delete is merged into a sibling under the same parent when the
    /// two fit in one page (InnoDB: `MERGE_THRESHOLD`, 50 by default, dict0mem.h
    /// `DICT_INDEX_MERGE_THRESHOLD_DEFAULT`; btr0cur.cc `btr_cur_compress_if_useful` →
    /// btr0btr.cc `btr_compress`; see [`BTree::delete`]). `None`: pages are never merged
    /// (PostgreSQL nbtree never merges). 1..=50.
    #[serde(default)]
    pub merge_threshold_pct: Option<u8>,
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
        }
    }

    /// InnoDB's accounting: no alignment, 2 bytes of page directory per record (InnoDB
    /// has one 2-byte slot per 4 to 8 records, page0page.h `PAGE_DIR_SLOT_MAX_N_OWNED`),
    /// 15/16 fill on ascending inserts, whole keys in node pointers, leaves merged below
    /// half a page (MERGE_THRESHOLD 50).
    ///
    /// The entry header is the 4-byte length pair. It stands for the 4 bytes of InnoDB's
    /// 5-byte record header (`REC_N_NEW_EXTRA_BYTES`) that the page layer uses (heap_no and
    /// status, 2; next-record offset, 2); the fifth, the info bits with the delete mark,
    /// is the first byte of the value: of the COMPACT record in the clustered index, of the
    /// 1-byte value of a secondary entry (`clustered::table`).
    pub fn innodb() -> Self {
        BTreeConfig {
            rightmost_fill_pct: 94,
            entry_header_bytes: 4,
            entry_align: 1,
            slot_bytes: 2,
            suffix_truncation: false,
            deduplicate: false,
            merge_threshold_pct: Some(50),
        }
    }

    /// The entry geometry recorded in every page.
    pub fn geometry(&self) -> Geometry {
        Geometry {
            entry_header_bytes: self.entry_header_bytes,
            entry_align: self.entry_align,
            slot_bytes: self.slot_bytes,
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

/// What [`BTree::scan_live`] calls per entry: `(leaf block, key, value)`, returning
/// whether to go on.
pub type LeafVisitor<'f> = dyn FnMut(LeafRef, &[u8], &[u8]) -> Result<bool> + 'f;

/// The leaf an entry of a scan came from, as the scan saw it: its block and its page LSN
/// when the scan copied its entries (nbtree's `BTScanPosData.currPage` and `.lsn`), so
/// that [`BTree::kill_items`] can tell whether the leaf changed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeafRef {
    /// The leaf's block.
    pub block: u32,
    /// Its page LSN when the entries were read.
    pub lsn: u64,
}

/// Direction of [`BTree::scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScanDirection {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Backward,
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
    pool: Arc<BufferPool>,
    rel: FileId,
    cfg: BTreeConfig,
    geo: Geometry,
    usable: usize,
    /// Largest key + value (bytes) of an entry: its space is at most a quarter of
    /// `usable`.
    max_payload: usize,
    /// Free bytes an internal page needs to be "safe": room for the largest separator.
    sep_reserve: usize,
    /// Largest key + value of a posting entry ([`dedup::max_posting_bytes`]).
    max_posting: usize,
    /// New posting entries may be made (deduplication passes, sorted builds): the
    /// configuration's `deduplicate` unless [`BTree::with_deduplication`] turned it off.
    /// Posting entries already there are read either way.
    new_postings: bool,
    /// Structural changes since the tree was opened ([`BTree::ops`]).
    ops: OpCounters,
    /// The root block and the height as last read from the meta page, `root << 32 |
    /// height` (0: not read yet): PostgreSQL keeps a copy of the metapage in the relcache
    /// (`rd_amcache`, nbtpage.c `_bt_getroot`), InnoDB the root page number in the
    /// dictionary (`dict_index_t::page`), so neither reads the meta page per descent.
    root_cache: AtomicU64,
}

#[derive(Default)]
struct OpCounters {
    splits: AtomicU64,
    merge_attempts: AtomicU64,
    merges: AtomicU64,
}

/// Structural changes a tree made since it was opened, under MariaDB's `innodb_metrics`
/// names (srv0mon.h `MONITOR_INDEX_SPLIT`, `MONITOR_INDEX_MERGE_ATTEMPTS`,
/// `MONITOR_INDEX_MERGE_SUCCESSFUL`). Counts of operations, not pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BTreeOps {
    /// Page splits, every level (`index_page_splits`; PostgreSQL counts none).
    pub index_page_splits: u64,
    /// Leaves found below the merge threshold after a delete, with their siblings latched
    /// (`index_page_merge_attempts`, counted where `btr_compress` starts).
    pub index_page_merge_attempts: u64,
    /// Of those, leaves merged with a sibling (`index_page_merge_successful`).
    pub index_page_merge_successful: u64,
}

impl BTreeOps {
    /// Field-by-field sum.
    pub fn plus(self, o: BTreeOps) -> BTreeOps {
        BTreeOps {
            index_page_splits: self.index_page_splits + o.index_page_splits,
            index_page_merge_attempts: self.index_page_merge_attempts + o.index_page_merge_attempts,
            index_page_merge_successful: self.index_page_merge_successful
                + o.index_page_merge_successful,
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

/// Where an insert goes in a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The key is there already (in a posting entry too).
    Dup,
    /// A new entry before slot `i`.
    Before(usize),
    /// The key's TID falls inside the range of the posting entry at this slot: swapped in
    /// ([`dedup::swap_insert`]).
    Posting(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Insert,
    Replace,
}

/// Where a descent goes.
enum Target<'k> {
    /// The leaf holding the first key at or after the bound.
    Lower(Bound<&'k [u8]>),
    /// The rightmost leaf that can hold keys below (or at) the bound.
    Upper(Bound<&'k [u8]>),
}

/// Fill of the left page when a leaf of one key value splits at its end (PostgreSQL
/// nbtree.h BTREE_SINGLEVAL_FILLFACTOR).
const SINGLEVAL_FILL_PCT: u8 = 96;

/// A page's key range `[low, high)` (`None` = unbounded).
type Fences = (Option<Vec<u8>>, Option<Vec<u8>>);

/// [`BTree::split_halves`]: the largest key under the left half, the first key of the
/// leftmost leaf under the right half, the smallest separator on the right half's
/// leftmost path.
type SplitHalves = (Option<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>);

/// What [`BTree::descend_pessimistic`] keeps latched above the page it returns: the meta
/// page (while every page below it on the path is unsafe) and the ancestors, root first,
/// each with the index of the downlink followed.
struct WritePath<'a> {
    meta: Meta,
    meta_g: Option<WritePageGuard<'a>>,
    path: Vec<(WritePageGuard<'a>, usize)>,
}

fn pick(n: &Node<'_>, t: &Target<'_>) -> Result<usize> {
    match *t {
        Target::Lower(Bound::Unbounded) => Ok(0),
        Target::Lower(Bound::Included(k) | Bound::Excluded(k)) => n.child_index(k, true),
        Target::Upper(Bound::Unbounded) => Ok(n.len() - 1),
        Target::Upper(Bound::Included(k)) => n.child_index(k, true),
        Target::Upper(Bound::Excluded(k)) => n.child_index(k, false),
    }
}

fn above_lo(k: &[u8], lo: Bound<&[u8]>) -> bool {
    match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }
}

fn below_hi(k: &[u8], hi: Bound<&[u8]>) -> bool {
    match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    }
}

fn borrowed(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
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

/// Renders a key for an error message: text when printable, else hex; long keys cut.
fn render_key(k: &[u8]) -> String {
    const MAX: usize = 48;
    let cut = &k[..k.len().min(MAX)];
    let mut s = if cut.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(cut).into_owned()
    } else {
        cut.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    if k.len() > MAX {
        s.push_str(&format!("... ({} bytes)", k.len()));
    }
    s
}

/// Counts sibling hops and descents so that a corrupted sibling chain (a cycle) ends in an
/// error instead of a loop.
struct Hops<'t> {
    tree: &'t BTree,
    n: u64,
    limit: u64,
}

impl<'t> Hops<'t> {
    fn new(tree: &'t BTree) -> Result<Self> {
        Ok(Hops {
            tree,
            n: 0,
            limit: tree.n_blocks()? as u64,
        })
    }
    fn step(&mut self, at: PageId) -> Result<()> {
        self.n += 1;
        if self.n > self.limit {
            self.limit = self.tree.n_blocks()? as u64;
            if self.n > self.limit {
                return Err(Error::Corrupted {
                    what: format!(
                        "B+tree {at}: more steps along a level than the relation has pages ({}): a sibling cycle",
                        self.limit
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The root page latched by [`BTree::latch_root`].
enum RootGuard<'a> {
    Read(ReadPageGuard<'a>),
    Write(WritePageGuard<'a>),
}

impl RootGuard<'_> {
    fn data(&self) -> &[u8] {
        match self {
            RootGuard::Read(g) => g.data(),
            RootGuard::Write(g) => g.data(),
        }
    }

    fn page_id(&self) -> PageId {
        match self {
            RootGuard::Read(g) => g.page_id(),
            RootGuard::Write(g) => g.page_id(),
        }
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
            return Err(Error::Corrupted {
                what: format!("B+tree {mid}: a new relation's first page is not block 0"),
            });
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

    /// Fills an empty tree from `entries`, sorted ascending by key with no duplicate keys,
    /// bottom up as a sorted index build does (PostgreSQL nbtsort.c `_bt_load` /
    /// `_bt_buildadd` for CREATE INDEX; InnoDB btr0bulk.cc `BtrBulk` for ALTER TABLE ADD
    /// INDEX): leaves are filled left to right to `leaf_fill_pct` percent of their usable
    /// bytes (PostgreSQL: the index fillfactor, 90 by default; InnoDB innodb_fill_factor),
    /// then each level above gets one downlink per page below, filled to
    /// `internal_fill_pct` (PostgreSQL BTREE_NONLEAF_FILLFACTOR, 70), up to a single
    /// root. Separators are suffix-truncated when the tree's configuration says so. Every
    /// page is logged whole as one BUILD record (PostgreSQL writes each built page to the
    /// WAL as a full-page image, `log_newpage`); the last names the new root in the meta
    /// page. The empty root leaf of [`BTree::create`] becomes the first leaf.
    ///
    /// Errors: [`Error::InvalidValue`] when the tree is not empty, `entries` are not
    /// strictly ascending, or a fill percentage is outside 10..=100;
    /// [`Error::TooLarge`] for an entry over [`BTree::max_entry_bytes`]; pool and WAL
    /// errors.
    pub fn bulk_load(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        leaf_fill_pct: u8,
        internal_fill_pct: u8,
    ) -> Result<()> {
        self.bulk_load_with(
            entries,
            leaf_fill_pct,
            internal_fill_pct,
            self.cfg.deduplicate,
        )
    }

    /// [`BTree::bulk_load`], merging runs of equal keys into posting entries when
    /// `deduplicate` (and the tree deduplicates): nbtsort.c `_bt_load` with
    /// `_bt_sort_dedup_finish_pending`, which PostgreSQL skips for unique indexes.
    ///
    /// Errors: as [`BTree::bulk_load`].
    pub fn bulk_load_with(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        leaf_fill_pct: u8,
        internal_fill_pct: u8,
        deduplicate: bool,
    ) -> Result<()> {
        for pct in [leaf_fill_pct, internal_fill_pct] {
            if !(10..=100).contains(&pct) {
                return Err(Error::InvalidValue(format!(
                    "bulk load fill percentage {pct} is outside 10..=100"
                )));
            }
        }
        if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::InvalidValue(
                "bulk load entries are not strictly ascending by key".into(),
            ));
        }
        for (k, v) in entries {
            self.check_size(k, v)?;
        }
        let mut mg = self.pool.fetch_write(self.meta_id())?;
        let meta = Meta::read(mg.data(), mg.page_id())?;
        self.check_meta(&meta, mg.page_id())?;
        // Descents read the meta page (and wait for its latch) until the build names the
        // new root: the old, empty root stays a sibling-less leaf the cache check accepts.
        self.root_cache.store(0, Ordering::Release);
        let empty = meta.height == 1 && {
            let rg = self.fetch_read(meta.root, self.meta_id(), "root")?;
            self.node(rg.data(), rg.page_id(), Some(0))?.is_empty()
        };
        {
            if !empty {
                return Err(Error::InvalidValue(format!(
                    "bulk load into B+tree {} that is not empty",
                    self.rel
                )));
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        // Pages of one level: (first key, entries), cut where the next entry would pass
        // the fill target (a page always takes at least one entry, as _bt_buildadd does).
        let cut = |items: Vec<(Vec<u8>, Vec<u8>)>, pct: u8| -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
            let target = self.usable * pct as usize / 100;
            let mut pages: Vec<Vec<(Vec<u8>, Vec<u8>)>> = Vec::new();
            let mut used = 0;
            for (k, v) in items {
                let sp = self.geo.space(k.len() + v.len());
                match pages.last_mut() {
                    Some(p) if used + sp <= target => {
                        used += sp;
                        p.push((k, v));
                    }
                    _ => {
                        used = sp;
                        pages.push(vec![(k, v)]);
                    }
                }
            }
            pages
        };
        let leaf_entries = if deduplicate && self.new_postings {
            dedup::merge_sorted(entries, self.max_posting)
        } else {
            entries.to_vec()
        };
        let mut level_pages = cut(leaf_entries, leaf_fill_pct);
        // Internal levels: each page's low key (its first separator, stored as minus
        // infinity in the page itself).
        let mut lows: Vec<Vec<u8>> = Vec::new();
        let mut level: u16 = 0;
        loop {
            let top = level_pages.len() == 1;
            let mut uplinks: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(level_pages.len());
            // A page is written once the next one's block is known (its right link), as
            // _bt_buildadd writes a page when it starts the next.
            let mut prev: Option<(WritePageGuard<'_>, usize)> = None;
            let mut prev_block = NO_BLOCK;
            for i in 0..=level_pages.len() {
                let next = if i < level_pages.len() {
                    Some(if level == 0 && i == 0 {
                        self.fetch_write(meta.root, self.meta_id(), "root")?
                    } else {
                        self.pool.new_page(self.rel)?
                    })
                } else {
                    None
                };
                let next_block = next.as_ref().map_or(NO_BLOCK, |g| g.page_id().block);
                if let Some((mut g, j)) = prev.take() {
                    let id = g.page_id();
                    let page_entries = &level_pages[j];
                    let h = NodeHeader {
                        level,
                        flags: 0,
                        left: prev_block,
                        right: next_block,
                    };
                    node::build(g.data_mut(), id, self.geo, h, page_entries)?;
                    let mut rec = RecordBuilder::new(rmgr::BTREE, info::BUILD)
                        .block(id, true, &bwal::encode_node(h, page_entries))
                        .main_data(&bwal::encode_geometry(self.geo));
                    if top {
                        let m = Meta {
                            root: id.block,
                            height: level as u32 + 1,
                            ..meta
                        };
                        m.write(mg.data_mut());
                        rec = rec.block(mg.page_id(), true, &m.encode());
                        log_change(self.pool.wal(), &rec, &mut [&mut g, &mut mg])?;
                        self.cache_root(m.root, m.height);
                    } else {
                        log_change(self.pool.wal(), &rec, &mut [&mut g])?;
                    }
                    prev_block = id.block;
                }
                if let Some(g) = next {
                    let sep = match i {
                        0 => Vec::new(),
                        _ if level > 0 => lows[i].clone(),
                        _ => {
                            let first = &level_pages[i][0].0;
                            let (lk, lv) = level_pages[i - 1].last().expect("page with entries");
                            let last = if self.cfg.deduplicate {
                                dedup::max_key(lk, lv)
                            } else {
                                lk.clone()
                            };
                            if self.cfg.suffix_truncation {
                                truncated_separator(&last, first)
                            } else {
                                first.clone()
                            }
                        }
                    };
                    uplinks.push((sep, g.page_id().block.to_le_bytes().to_vec()));
                    prev = Some((g, i));
                }
            }
            if top {
                return Ok(());
            }
            // The level above: the first downlink's key means minus infinity.
            level += 1;
            level_pages = cut(uplinks, internal_fill_pct);
            lows = level_pages
                .iter_mut()
                .map(|p| std::mem::take(&mut p[0].0))
                .collect();
        }
    }

    /// Opens the tree stored in relation `rel` (reads its meta page).
    ///
    /// Errors: [`Error::InvalidConfig`] for a bad `cfg` or one whose entry geometry differs
    /// from the tree's; [`Error::Corrupted`] when block 0 is not a B+tree meta page; pool
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

    fn with(pool: Arc<BufferPool>, rel: FileId, cfg: BTreeConfig) -> Result<BTree> {
        cfg.validate()?;
        let geo = cfg.geometry();
        let usable = usable_bytes(pool.store().page_size().bytes());
        let quarter = usable / 4;
        let a = geo.entry_align as usize;
        let room = (quarter.saturating_sub(geo.slot_bytes as usize)) / a * a;
        let max_payload = room.saturating_sub(geo.entry_header_bytes as usize);
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
            sep_reserve: geo.space(max_payload + 4),
            max_posting: dedup::max_posting_bytes(max_payload, usable),
            new_postings: cfg.deduplicate,
            ops: OpCounters::default(),
            root_cache: AtomicU64::new(0),
            cfg,
            pool,
        })
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

    /// Splits and merges since the tree was opened (in memory: zero again after a
    /// restart).
    pub fn ops(&self) -> BTreeOps {
        BTreeOps {
            index_page_splits: self.ops.splits.load(Ordering::Relaxed),
            index_page_merge_attempts: self.ops.merge_attempts.load(Ordering::Relaxed),
            index_page_merge_successful: self.ops.merges.load(Ordering::Relaxed),
        }
    }

    /// Largest key + value in bytes an entry may have: its space (header, padding, slot)
    /// is at most a quarter of a page's usable bytes.
    pub fn max_entry_bytes(&self) -> usize {
        self.max_payload
    }

    fn meta_id(&self) -> PageId {
        PageId::new(self.rel, META_BLOCK)
    }

    fn n_blocks(&self) -> Result<u32> {
        self.pool.store().n_blocks(self.rel)
    }

    fn check_meta(&self, m: &Meta, id: PageId) -> Result<()> {
        if m.geometry != self.geo {
            return Err(Error::Corrupted {
                what: format!(
                    "B+tree {id}: meta geometry {:?} differs from the open tree's {:?}",
                    m.geometry, self.geo
                ),
            });
        }
        Ok(())
    }

    fn read_meta(&self) -> Result<(ReadPageGuard<'_>, Meta)> {
        let g = self.pool.fetch_read(self.meta_id())?;
        let m = Meta::read(g.data(), g.page_id())?;
        self.check_meta(&m, g.page_id())?;
        Ok((g, m))
    }

    /// The page `block` named by a link (`what`) on page `from`, checked (a link to the
    /// page itself would make the caller latch a page it holds).
    fn linked(&self, block: u32, from: PageId, what: &str) -> Result<PageId> {
        if block == META_BLOCK || block == NO_BLOCK || block == from.block {
            return Err(Error::Corrupted {
                what: format!("B+tree {from}: {what} names block {block}"),
            });
        }
        Ok(PageId::new(self.rel, block))
    }

    fn missing(e: Error, from: PageId, what: &str, block: u32) -> Error {
        match e {
            Error::NoSuchPage { .. } => Error::Corrupted {
                what: format!(
                    "B+tree {from}: {what} names block {block}, past the end of the relation"
                ),
            },
            e => e,
        }
    }

    fn fetch_read(&self, block: u32, from: PageId, what: &str) -> Result<ReadPageGuard<'_>> {
        let id = self.linked(block, from, what)?;
        self.pool
            .fetch_read(id)
            .map_err(|e| Self::missing(e, from, what, block))
    }

    fn fetch_write(&self, block: u32, from: PageId, what: &str) -> Result<WritePageGuard<'_>> {
        let id = self.linked(block, from, what)?;
        self.pool
            .fetch_write(id)
            .map_err(|e| Self::missing(e, from, what, block))
    }

    /// Parses node page `data` (page `id`), checking the tree's geometry and, when given,
    /// the level the path to it implies.
    fn node<'g>(&self, data: &'g [u8], id: PageId, level: Option<u16>) -> Result<Node<'g>> {
        let n = Node::parse(data, id)?;
        if n.geometry() != self.geo {
            return Err(Error::Corrupted {
                what: format!(
                    "B+tree {id}: page geometry {:?} differs from the tree's {:?}",
                    n.geometry(),
                    self.geo
                ),
            });
        }
        if n.flags() & FLAG_FREED != 0 {
            return Err(Error::Corrupted {
                what: format!("B+tree {id}: a link names a page freed by a merge"),
            });
        }
        if let Some(l) = level {
            if n.level() != l {
                return Err(Error::Corrupted {
                    what: format!("B+tree {id}: level {} where {l} was expected", n.level()),
                });
            }
        }
        Ok(n)
    }

    fn root_level(m: &Meta) -> u16 {
        (m.height - 1) as u16
    }

    /// The root latched for a descent and its level: shared, or exclusive when it is a leaf
    /// and `write_leaf`. From the cached root when it still is the root (nbtpage.c
    /// `_bt_getroot` with `rd_amcache`: the cached root is read and checked, and the meta
    /// page is read only when the check fails): the latched page must be a node at the
    /// cached height's root level with no sibling on either side, so it covers every key
    /// (a root that has split since has a right sibling). Otherwise from the meta page
    /// under its shared latch, released once the root is latched, which refreshes the
    /// cache.
    ///
    /// Errors: as [`BTree::read_meta`] and for a damaged root page.
    fn latch_root(&self, write_leaf: bool) -> Result<(RootGuard<'_>, u16)> {
        let latch = |root: u32, level: u16, what: &str| -> Result<RootGuard<'_>> {
            Ok(if write_leaf && level == 0 {
                RootGuard::Write(self.fetch_write(root, self.meta_id(), what)?)
            } else {
                RootGuard::Read(self.fetch_read(root, self.meta_id(), what)?)
            })
        };
        let c = self.root_cache.load(Ordering::Acquire);
        if c != 0 {
            let (root, height) = ((c >> 32) as u32, c as u32);
            let level = (height - 1) as u16;
            let g = latch(root, level, "cached root")?;
            let still_root = Node::parse(g.data(), g.page_id()).is_ok_and(|n| {
                let h = n.header();
                h.level == level
                    && h.left == NO_BLOCK
                    && h.right == NO_BLOCK
                    && h.flags & FLAG_FREED == 0
            });
            if still_root {
                return Ok((g, level));
            }
        }
        let (mg, meta) = self.read_meta()?;
        let level = Self::root_level(&meta);
        let g = latch(meta.root, level, "root")?;
        self.cache_root(meta.root, meta.height);
        drop(mg);
        Ok((g, level))
    }

    /// Notes `root` and `height` as the meta page names them now ([`BTree::latch_root`]).
    fn cache_root(&self, root: u32, height: u32) {
        self.root_cache
            .store((root as u64) << 32 | height as u64, Ordering::Release);
    }

    /// The leaf for `t` under a shared latch (latch coupling from the root down), and
    /// with `fence`, the leaf's low fence: the separator that bounds its keys from below
    /// (`None` = minus infinity).
    fn descend_read(
        &self,
        t: &Target<'_>,
        fence: bool,
    ) -> Result<(ReadPageGuard<'_>, Option<Vec<u8>>)> {
        let (root, mut level) = self.latch_root(false)?;
        let RootGuard::Read(mut g) = root else {
            unreachable!("latch_root(false) latches shared");
        };
        let mut low = None;
        while level > 0 {
            let child = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                let i = pick(&n, t)?;
                if fence && i > 0 {
                    low = Some(n.key(i)?.to_vec());
                }
                n.child(i)?
            };
            let c = self.fetch_read(child, g.page_id(), "downlink")?;
            g = c;
            level -= 1;
        }
        self.node(g.data(), g.page_id(), Some(0))?;
        Ok((g, low))
    }

    /// The leaf for `t` under an exclusive latch: shared latches down to the leaf's parent,
    /// coupled (InnoDB `btr_cur_optimistic_insert`'s BTR_MODIFY_LEAF descent).
    fn descend_write(&self, t: &Target<'_>) -> Result<WritePageGuard<'_>> {
        let (root, mut level) = self.latch_root(true)?;
        let mut g = match root {
            RootGuard::Write(g) => {
                self.node(g.data(), g.page_id(), Some(0))?;
                return Ok(g);
            }
            RootGuard::Read(g) => g,
        };
        loop {
            let child = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                n.child(pick(&n, t)?)?
            };
            if level == 1 {
                let w = self.fetch_write(child, g.page_id(), "downlink")?;
                drop(g);
                self.node(w.data(), w.page_id(), Some(0))?;
                return Ok(w);
            }
            let c = self.fetch_read(child, g.page_id(), "downlink")?;
            g = c;
            level -= 1;
        }
    }

    fn check_size(&self, key: &[u8], value: &[u8]) -> Result<()> {
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

    fn duplicate(&self, key: &[u8]) -> Error {
        Error::DuplicateKey {
            index: format!("btree {}", self.rel),
            key: render_key(key),
        }
    }

    /// The slot holding `key` in leaf `n` and the index of its TID there (0 for a plain
    /// entry; in a deduplicating tree the key may be inside a posting entry).
    fn locate_tid(&self, n: &Node<'_>, key: &[u8]) -> Result<Option<(usize, usize)>> {
        let i = match n.search(key)? {
            Ok(i) => return Ok(Some((i, 0))),
            Err(i) => i,
        };
        if !self.cfg.deduplicate || i == 0 || key.len() < TID_BYTES {
            return Ok(None);
        }
        let (k, v) = n.entry(i - 1)?;
        if !dedup::is_posting(k, v)
            || k.len() != key.len()
            || dedup::prefix(k) != dedup::prefix(key)
        {
            return Ok(None);
        }
        let t = &key[key.len() - TID_BYTES..];
        Ok(dedup::tids(k, v).position(|x| x == t).map(|j| (i - 1, j)))
    }

    /// Where an insert of `key` goes in leaf `n`.
    fn place(&self, n: &Node<'_>, key: &[u8]) -> Result<Place> {
        if self.locate_tid(n, key)?.is_some() {
            return Ok(Place::Dup);
        }
        let i = n.lower_bound(key)?;
        if self.cfg.deduplicate && i > 0 && key.len() >= TID_BYTES {
            let (k, v) = n.entry(i - 1)?;
            if dedup::is_posting(k, v)
                && k.len() == key.len()
                && dedup::prefix(k) == dedup::prefix(key)
                && key < dedup::max_key(k, v).as_slice()
            {
                return Ok(Place::Posting(i - 1));
            }
        }
        Ok(Place::Before(i))
    }

    /// True when a deduplicating tree's leaf `entries` and the new `key` all hold one key
    /// value `K` and the page has posting entries (nbtsplitloc.c `_bt_strategy`'s
    /// SPLIT_SINGLE_VALUE test, on the page's first and last keys).
    fn single_value(&self, entries: &[Entry], key: &[u8]) -> bool {
        self.new_postings
            && key.len() >= TID_BYTES
            && entries.iter().any(|e| !e.value.is_empty())
            && [entries.first(), entries.last()].iter().all(|e| {
                e.is_some_and(|e| {
                    e.key.len() == key.len() && dedup::prefix(&e.key) == dedup::prefix(key)
                })
            })
    }

    /// The per-TID keys a leaf entry of a deduplicating tree stands for, ascending (one
    /// for a plain entry).
    fn per_tid(&self, k: &[u8], v: &[u8]) -> Vec<Vec<u8>> {
        if dedup::is_posting(k, v) {
            dedup::expand(k, v)
        } else {
            vec![k.to_vec()]
        }
    }

    /// The largest key an entry stands for: `K ‖ tid_max` for a posting entry of a leaf,
    /// else its key (what a separator must stay above).
    fn max_key_of(&self, e: &Entry) -> Vec<u8> {
        if self.cfg.deduplicate {
            dedup::max_key(&e.key, &e.value)
        } else {
            e.key.clone()
        }
    }

    /// Inserts `key` (empty value in a deduplicating tree) at `place` in leaf `g`, which
    /// has room: INSERT_LEAF, or INSERT_POST for a posting list swap.
    fn apply_insert(
        &self,
        g: &mut WritePageGuard<'_>,
        place: Place,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        match place {
            Place::Dup => Err(self.duplicate(key)),
            Place::Before(i) => self.apply_leaf_change(g, Mode::Insert, i, key, value),
            Place::Posting(s) => {
                let id = g.page_id();
                let tid = &key[key.len() - TID_BYTES..];
                dedup::swap_insert(g.data_mut(), id, s, tid)?;
                let rec = RecordBuilder::new(rmgr::BTREE, info::INSERT_POST).block(
                    id,
                    false,
                    &bwal::encode_insert_post(s, tid),
                );
                log_change(self.pool.wal(), &rec, &mut [g])?;
                Ok(())
            }
        }
    }

    /// The deduplication pass over full leaf `g` (PostgreSQL nbtdedup.c `_bt_dedup_pass`):
    /// merges runs of equal keys into posting entries, one DEDUP record naming the
    /// intervals (XLOG_BTREE_DEDUP). Returns whether it merged anything.
    fn dedup_pass(&self, g: &mut WritePageGuard<'_>) -> Result<bool> {
        let id = g.page_id();
        let (intervals, saved) = {
            let n = self.node(g.data(), id, Some(0))?;
            dedup::plan_pass(&n, self.max_posting)?
        };
        if intervals.is_empty() || saved == 0 {
            return Ok(false);
        }
        dedup::apply_pass(g.data_mut(), id, &intervals)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::DEDUP).block(
            id,
            false,
            &bwal::encode_intervals(&intervals),
        );
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(true)
    }

    /// Inserts into leaf `g` when the entry fits, after freeing room if it must: simple
    /// and bottom-up deletion (with `cleanup`), then the deduplication pass (a
    /// deduplicating tree, unless `cleanup` forbids it), in the order of PostgreSQL 14+
    /// nbtinsert.c `_bt_delete_or_dedup_one_page`. `None`: the leaf must split.
    fn insert_in_leaf(
        &self,
        g: &mut WritePageGuard<'_>,
        key: &[u8],
        value: &[u8],
        cleanup: Option<(&InsertCleanup<'_>, &mut CleanupOutcome)>,
    ) -> Result<Option<bool>> {
        let id = g.page_id();
        let need = self.geo.space(key.len() + value.len());
        let fits_now = |t: &Self, g: &WritePageGuard<'_>| -> Result<(Place, bool)> {
            let n = t.node(g.data(), id, Some(0))?;
            Ok((t.place(&n, key)?, n.free_bytes() >= need))
        };
        let (place, fits) = fits_now(self, g)?;
        if place == Place::Dup {
            return Err(self.duplicate(key));
        }
        if fits {
            self.apply_insert(g, place, key, value)?;
            return Ok(Some(true));
        }
        let mut deduplicate = self.new_postings;
        let mut out = None;
        if let Some((c, o)) = cleanup {
            deduplicate &= c.deduplicate;
            if self.delete_before_split(g, need, c, o)? {
                let (place, _) = fits_now(self, g)?;
                self.apply_insert(g, place, key, value)?;
                return Ok(Some(true));
            }
            out = Some(o);
        }
        if deduplicate && self.dedup_pass(g)? {
            if let Some(o) = out {
                o.dedup_passes += 1;
            }
            let (place, fits) = fits_now(self, g)?;
            if fits {
                self.apply_insert(g, place, key, value)?;
                return Ok(Some(true));
            }
        }
        Ok(None)
    }

    /// Inserts (key, value) as a new entry. In a deduplicating tree the value must be empty
    /// and the key end in a TID; a key whose TID falls inside a posting entry's range is
    /// swapped into it ([`dedup::swap_insert`]), and a full leaf runs the deduplication
    /// pass before it splits.
    ///
    /// Errors: [`Error::DuplicateKey`] when the exact key is present (in a posting entry
    /// too); [`Error::InvalidValue`] for a value or a short key in a deduplicating tree;
    /// [`Error::TooLarge`] when key + value exceed [`BTree::max_entry_bytes`] (a quarter of
    /// the usable page); [`Error::Corrupted`] for a damaged page on the path; pool and WAL
    /// errors.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_size(key, value)?;
        match self.modify_optimistic(key, value, Mode::Insert, None)? {
            Some(_) => Ok(()),
            None => self
                .modify_pessimistic(key, value, Mode::Insert)
                .map(|_| ()),
        }
    }

    /// Inserts like [`BTree::insert`], but a leaf without room for the entry first deletes
    /// the entries `cleanup.table` finds dead (simple deletion of entries marked dead, then,
    /// for an update that left the key unchanged, bottom-up deletion; `btree::cleanup`)
    /// then, in a deduplicating tree, runs the deduplication pass (unless
    /// `cleanup.deduplicate` is false), and splits only when that did not free enough
    /// (PostgreSQL 14+ nbtinsert.c `_bt_findinsertloc` → `_bt_delete_or_dedup_one_page`).
    /// Returns what was deleted and the passes run.
    ///
    /// Errors: as [`BTree::insert`], and the table's errors reading the heap.
    pub fn insert_cleaning(
        &self,
        key: &[u8],
        value: &[u8],
        cleanup: &InsertCleanup<'_>,
    ) -> Result<CleanupOutcome> {
        self.check_size(key, value)?;
        let mut out = CleanupOutcome::default();
        if self
            .modify_optimistic(key, value, Mode::Insert, Some((cleanup, &mut out)))?
            .is_none()
        {
            self.modify_pessimistic(key, value, Mode::Insert)?;
        }
        Ok(out)
    }

    /// The leaf `block` as a scan would name it now ([`LeafRef`]: its current page LSN).
    ///
    /// Errors: pool errors.
    pub fn leaf_ref(&self, block: u32) -> Result<LeafRef> {
        let g = self.pool.fetch_read(PageId::new(self.rel, block))?;
        Ok(LeafRef {
            block,
            lsn: g.page_lsn(),
        })
    }

    /// Marks the entries with `keys` in `leaf` dead ([`node::SLOT_FLAG_DEAD`]), as a
    /// hint without WAL (PostgreSQL nbtutils.c `_bt_killitems` → `MarkBufferDirtyHint`; with
    /// full-page writes, a full-page image at the leaf's first change since the checkpoint,
    /// [`crate::buffer::mark_dirty_hint`]), after a scan found every tuple they point at dead to everyone. Keys no longer in
    /// that leaf (a split or vacuum moved or removed them) are skipped; so is the whole
    /// leaf when its page LSN is no longer the one the scan saw (`_bt_killitems` gives up
    /// on a page that changed: with vacuum and a recycled heap TID, an entry with the same
    /// key may now point at a live tuple) or its latch cannot be had at once. Returns the
    /// entries newly marked.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page; pool errors.
    pub fn kill_items(&self, leaf: LeafRef, keys: &[Vec<u8>]) -> Result<usize> {
        if keys.is_empty() || self.geo.slot_bytes < 3 {
            return Ok(0);
        }
        let Some(mut g) = self
            .pool
            .try_fetch_write(PageId::new(self.rel, leaf.block))?
        else {
            return Ok(0);
        };
        if g.page_lsn() != leaf.lsn {
            // The leaf changed since the scan read it: vacuum may have removed an entry
            // and an insert added one with the same key for a recycled heap TID, now live
            // (`_bt_killitems` gives up when the page LSN moved).
            return Ok(0);
        }
        let id = g.page_id();
        let slots: Vec<usize> = {
            let Ok(n) = Node::parse(g.data(), id) else {
                return Ok(0);
            };
            if n.level() != 0 {
                return Ok(0);
            }
            // Per slot, the TIDs named; a posting entry is marked only when every one of
            // its TIDs was (`_bt_killitems` checks each TID of a posting list).
            let mut named: std::collections::BTreeMap<usize, std::collections::BTreeSet<usize>> =
                Default::default();
            for k in keys {
                if let Some((i, j)) = self.locate_tid(&n, k)? {
                    named.entry(i).or_default().insert(j);
                }
            }
            let mut v = Vec::with_capacity(named.len());
            for (i, tids) in named {
                let (k, val) = n.entry(i)?;
                let all = if self.cfg.deduplicate && dedup::is_posting(k, val) {
                    tids.len() == dedup::n_tids(val)
                } else {
                    true
                };
                if all && !n.is_dead(i) {
                    v.push(i);
                }
            }
            v
        };
        let mut marked = 0;
        for i in slots {
            if node::set_dead(g.data_mut(), id, i)? {
                marked += 1;
            }
        }
        if marked > 0 {
            crate::buffer::mark_dirty_hint(self.pool.wal(), &mut g)?;
        }
        Ok(marked)
    }

    /// The deletion candidates of leaf `n` for which `pick(key, known_dead)` holds, one per
    /// TID (a posting entry offers each of its TIDs as `K ‖ tid`; PostgreSQL's
    /// `_bt_simpledel_pass` / `_bt_bottomupdel_pass` do the same with `TM_IndexDelete`
    /// entries pointing into posting lists), `promising` as `promising(slot)` says.
    fn candidates(
        &self,
        n: &Node<'_>,
        pick: &dyn Fn(&[u8], bool) -> bool,
        promising: &dyn Fn(usize) -> bool,
    ) -> Result<Vec<DeleteCandidate>> {
        let mut out = Vec::new();
        for i in 0..n.len() {
            let (k, v) = n.entry(i)?;
            let known_dead = n.is_dead(i);
            if self.cfg.deduplicate && dedup::is_posting(k, v) {
                for tk in dedup::expand(k, v) {
                    if pick(&tk, known_dead) {
                        out.push(DeleteCandidate {
                            slot: i,
                            key: tk,
                            known_dead,
                            promising: true,
                            space_bytes: TID_BYTES,
                        });
                    }
                }
            } else if pick(k, known_dead) {
                out.push(DeleteCandidate {
                    slot: i,
                    key: k.to_vec(),
                    known_dead,
                    promising: promising(i),
                    space_bytes: n.entry_space(i)?,
                });
            }
        }
        Ok(out)
    }

    /// Frees room in the full leaf `g` for an entry needing `need` bytes: simple deletion
    /// of entries marked dead, then bottom-up deletion for an unchanged key (the
    /// `btree::cleanup` module doc). Returns whether the entry now fits.
    fn delete_before_split(
        &self,
        g: &mut WritePageGuard<'_>,
        need: usize,
        cleanup: &InsertCleanup<'_>,
        out: &mut CleanupOutcome,
    ) -> Result<bool> {
        let id = g.page_id();
        let table = cleanup.table;
        // 1. Simple deletion (_bt_simpledel_pass): the marked entries, plus the others that
        // point at the same heap blocks (_bt_deadblocks), checked for free.
        let simple = {
            let n = self.node(g.data(), id, Some(0))?;
            let dead = n.dead_slots();
            if dead.is_empty() {
                None
            } else {
                let mut blocks = Vec::new();
                for &i in &dead {
                    let (k, v) = n.entry(i)?;
                    let keys = if self.cfg.deduplicate && dedup::is_posting(k, v) {
                        dedup::expand(k, v)
                    } else {
                        vec![k.to_vec()]
                    };
                    for k in keys {
                        if let Some(b) = table.heap_block(&k) {
                            blocks.push(b);
                        }
                    }
                }
                blocks.sort_unstable();
                blocks.dedup();
                let pick = |key: &[u8], known_dead: bool| {
                    known_dead
                        || table
                            .heap_block(key)
                            .is_some_and(|b| blocks.binary_search(&b).is_ok())
                };
                Some(DeleteOp {
                    bottom_up: false,
                    free_target_bytes: need,
                    candidates: self.candidates(&n, &pick, &|_| false)?,
                })
            }
        };
        if let Some(op) = simple {
            out.simple_deleted += self.delete_deletable(g, table, &op)?;
            if self.node(g.data(), id, Some(0))?.free_bytes() >= need {
                return Ok(true);
            }
        }
        if !cleanup.index_unchanged {
            return Ok(false);
        }
        // 2. Bottom-up deletion (_bt_bottomupdel_pass): every entry a candidate, those in a
        // group of equal keys (before the TID) promising; every TID of a posting entry is.
        let op = {
            let n = self.node(g.data(), id, Some(0))?;
            let suffix = table.tid_suffix_bytes();
            let prefix_len = |k: &[u8]| k.len().saturating_sub(suffix);
            let same = |a: &[u8], b: &[u8]| a[..prefix_len(a)] == b[..prefix_len(b)];
            let keys: Vec<&[u8]> = (0..n.len()).map(|i| n.key(i)).collect::<Result<_>>()?;
            let promising = |i: usize| {
                let k = keys[i];
                (i > 0 && same(keys[i - 1], k)) || (i + 1 < keys.len() && same(keys[i + 1], k))
            };
            let candidates = self.candidates(&n, &|_, _| true, &promising)?;
            if !candidates.iter().any(|c| c.promising) {
                return Ok(false);
            }
            DeleteOp {
                bottom_up: true,
                free_target_bytes: need.max(self.pool.store().page_size().bytes() / 16),
                candidates,
            }
        };
        out.bottom_up_passes += 1;
        out.bottom_up_deleted += self.delete_deletable(g, table, &op)?;
        Ok(self.node(g.data(), id, Some(0))?.free_bytes() >= need)
    }

    /// Asks the table about `op`'s candidates and removes the deletable ones from leaf
    /// `g` in one DELETE_DEAD record (nbtpage.c `_bt_delitems_delete`): an entry goes when
    /// all its TIDs are deletable, a posting entry with only some is rewritten without them
    /// (`updatable`, `_bt_update_posting`). Returns how many TIDs went.
    fn delete_deletable(
        &self,
        g: &mut WritePageGuard<'_>,
        table: &dyn IndexDeleteTuples,
        op: &DeleteOp,
    ) -> Result<u64> {
        let id = g.page_id();
        let verdict = table.index_delete_tuples(op)?;
        if verdict.deletable.len() != op.candidates.len() {
            return Err(Error::Corrupted {
                what: format!(
                    "{id}: the table answered {} verdicts for {} deletion candidates",
                    verdict.deletable.len(),
                    op.candidates.len()
                ),
            });
        }
        // Per slot, the deletable keys.
        let mut per_slot: std::collections::BTreeMap<usize, Vec<&[u8]>> = Default::default();
        for (c, _) in op
            .candidates
            .iter()
            .zip(&verdict.deletable)
            .filter(|(_, &d)| d)
        {
            per_slot.entry(c.slot).or_default().push(&c.key);
        }
        let mut slots = Vec::new();
        let mut updates: Vec<(usize, Entry)> = Vec::new();
        let mut gone = 0u64;
        {
            let n = self.node(g.data(), id, Some(0))?;
            for (&i, keys) in &per_slot {
                let (k, v) = n.entry(i)?;
                if self.cfg.deduplicate && dedup::is_posting(k, v) {
                    let all = dedup::expand(k, v);
                    let dead: Vec<bool> =
                        all.iter().map(|t| keys.contains(&t.as_slice())).collect();
                    gone += dead.iter().filter(|&&d| d).count() as u64;
                    match dedup::without(k, v, |j| dead[j]) {
                        None => slots.push(i),
                        Some(e) => updates.push((i, e)),
                    }
                } else {
                    gone += 1;
                    slots.push(i);
                }
            }
        }
        if slots.is_empty() && updates.is_empty() {
            return Ok(0);
        }
        for (i, e) in &updates {
            node::replace_at(g.data_mut(), id, *i, &e.key, &e.value)?;
        }
        node::remove_slots(g.data_mut(), id, &slots)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::DELETE_DEAD)
            .block(id, false, &bwal::encode_removed_slots(&slots, &updates))
            .main_data(&verdict.latest_removed_xid.to_le_bytes());
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(gone)
    }

    /// The value stored under `key`, if any.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page on the path; pool errors.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (g, _) = self.descend_read(&Target::Lower(Bound::Included(key)), false)?;
        let n = self.node(g.data(), g.page_id(), Some(0))?;
        match self.locate_tid(&n, key)? {
            // A deduplicating tree's values are empty (a posting entry's is its TIDs).
            Some(_) if self.cfg.deduplicate => Ok(Some(Vec::new())),
            Some((i, _)) => Ok(Some(n.entry(i)?.1.to_vec())),
            None => Ok(None),
        }
    }

    /// Replaces the value stored under `key`: in place (one UPDATE_VALUE record) when the
    /// new entry fits the leaf, else by splitting the leaf with the new entry in the old
    /// one's place (the pessimistic insert path), so that no reader ever finds the key
    /// missing. Returns `Ok(false)`, changing nothing, when the key is absent.
    ///
    /// Errors: as [`BTree::insert`], without `DuplicateKey`.
    pub fn update_value(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.check_size(key, value)?;
        match self.modify_optimistic(key, value, Mode::Replace, None)? {
            Some(found) => Ok(found),
            None => self.modify_pessimistic(key, value, Mode::Replace),
        }
    }

    /// Removes the entry with `key`; `Ok(false)` when there is none. Without a merge
    /// threshold a leaf may become empty and stays in the tree (PostgreSQL deletes empty
    /// pages in VACUUM, never merges; mvcclab does neither). With one
    /// ([`BTreeConfig::merge_threshold_pct`], InnoDB), a leaf left below it tries to merge
    /// with a sibling afterwards (see `compress`), as InnoDB's optimistic delete gives way
    /// to the pessimistic one when `btr_cur_can_delete_without_compress` says no.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page on the path; pool and WAL errors.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let mut g = self.descend_write(&Target::Lower(Bound::Included(key)))?;
        let id = g.page_id();
        let (found, posting) = {
            let n = self.node(g.data(), id, Some(0))?;
            let found = self.locate_tid(&n, key)?;
            let posting = match found {
                Some((i, j)) if self.cfg.deduplicate => {
                    let (k, v) = n.entry(i)?;
                    dedup::is_posting(k, v)
                        .then(|| dedup::without(k, v, |x| x == j))
                        .flatten()
                }
                _ => None,
            };
            (found, posting)
        };
        let Some((i, _)) = found else {
            return Ok(false);
        };
        if let Some(e) = posting {
            // One TID out of a posting entry: the entry rewritten (nbtpage.c
            // `_bt_delitems_vacuum`'s updated items), logged as UPDATE_VALUE.
            node::replace_at(g.data_mut(), id, i, &e.key, &e.value)?;
            let rec = RecordBuilder::new(rmgr::BTREE, info::UPDATE_VALUE).block(
                id,
                false,
                &bwal::encode_slot_entry(i, &e.key, &e.value),
            );
            log_change(self.pool.wal(), &rec, &mut [&mut g])?;
            return Ok(true);
        }
        node::remove_at(g.data_mut(), id, i)?;
        let rec = RecordBuilder::new(rmgr::BTREE, info::DELETE).block(
            id,
            false,
            &bwal::encode_delete(i, key),
        );
        log_change(self.pool.wal(), &rec, &mut [&mut g])?;
        let compress = {
            let n = self.node(g.data(), id, Some(0))?;
            self.below_merge_threshold(&n) && (n.left() != NO_BLOCK || n.right() != NO_BLOCK)
        };
        drop(g);
        if compress {
            self.compress(key)?;
        }
        Ok(true)
    }

    /// Whether leaf `n` holds fewer entry bytes than the merge threshold
    /// ([`BTreeConfig::merge_threshold_pct`] of the page size), as InnoDB's
    /// `btr_cur_compress_recommendation` compares `page_get_data_size` (records with their
    /// headers, not the page directory) with `BTR_CUR_PAGE_COMPRESS_LIMIT`
    /// (`srv_page_size × merge_threshold / 100`). False without a threshold.
    fn below_merge_threshold(&self, n: &Node<'_>) -> bool {
        let Some(pct) = self.cfg.merge_threshold_pct else {
            return false;
        };
        let data = n.used_bytes() - n.len() * self.geo.slot_bytes as usize;
        let page = self.pool.store().page_size().bytes();
        data < page * pct as usize / 100
    }

    /// Tries to merge the leaf holding `key` with a sibling (InnoDB btr0btr.cc
    /// `btr_compress`, reached from `btr_cur_pessimistic_delete` through
    /// `btr_cur_compress_if_useful`). The pessimistic descent latches the parent
    /// exclusively, then the leaf's left sibling under the same parent, the leaf and its
    /// right sibling, in key order (InnoDB's `btr_cur_latch_leaves` latches left, self,
    /// right for BTR_MODIFY_TREE, reading both siblings). A left sibling under another
    /// parent is only read, without waiting for its latch (it precedes the parent in the
    /// lock order), and never merged with. Still below the threshold under the latches, the
    /// leaf counts a merge attempt; it moves into its left sibling when all its entries fit
    /// there, else its right sibling (same parent) moves into it when that fits: the left
    /// page always survives, so no page's low fence changes (InnoDB moves the leaf into
    /// its right sibling instead; the same pages are read and written, but InnoDB updates
    /// the left neighbour's link where mvcclab updates the right one's). The emptied page
    /// is freed ([`node::FLAG_FREED`]) to the relation's free list. Merges stop at the
    /// leaves: an internal page that falls below the threshold stays (InnoDB compresses the
    /// father level too, and lifts a lone child into the root).
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page on the path or sibling links that
    /// disagree with the parent's downlinks; pool and WAL errors.
    /// Called only for a leaf with a sibling, so the tree has a level above the leaves
    /// (heights never shrink).
    fn compress(&self, key: &[u8]) -> Result<()> {
        let (wp, mut parent) = self.descend_pessimistic(key, 1)?;
        // The parent only loses a downlink: nothing above it changes.
        drop(wp);
        let pid = parent.page_id();
        let (i, left_block, block, right_in_parent) = {
            let n = self.node(parent.data(), pid, Some(1))?;
            let i = n.child_index(key, true)?;
            let left = if i > 0 { Some(n.child(i - 1)?) } else { None };
            let right = if i + 1 < n.len() {
                Some(n.child(i + 1)?)
            } else {
                None
            };
            (i, left, n.child(i)?, right)
        };
        let mut left = match left_block {
            Some(b) => Some(self.fetch_write(b, pid, "downlink")?),
            None => None,
        };
        let mut leaf = self.fetch_write(block, pid, "downlink")?;
        let lid = leaf.page_id();
        let (lh, below, leaf_used, leaf_free) = {
            let n = self.node(leaf.data(), lid, Some(0))?;
            let below = self.below_merge_threshold(&n);
            (n.header(), below, n.used_bytes(), n.free_bytes())
        };
        if left.is_none() && lh.left != NO_BLOCK {
            // Read, not merged with: see the doc above.
            let other = self.linked(lh.left, lid, "left link")?;
            drop(self.pool.try_fetch_write(other)?);
        }
        if left_block.is_some_and(|b| b != lh.left)
            || right_in_parent.is_some_and(|b| b != lh.right)
        {
            return Err(Error::Corrupted {
                what: format!(
                    "B+tree {lid}: sibling links {} / {} disagree with the downlinks of {pid}",
                    lh.left, lh.right
                ),
            });
        }
        let mut right = match lh.right {
            NO_BLOCK => None,
            b => Some(self.fetch_write(b, lid, "right link")?),
        };
        if !below || (left.is_none() && right.is_none()) {
            return Ok(());
        }
        self.ops.merge_attempts.fetch_add(1, Ordering::Relaxed);
        if let Some(l) = left.as_mut() {
            let fits = self.node(l.data(), l.page_id(), Some(0))?.free_bytes() >= leaf_used;
            if fits {
                self.merge(&mut parent, i, l, &mut leaf, right.as_mut())?;
                drop((parent, left, right));
                return self.free_merged(leaf);
            }
        }
        // Only a right sibling under the same parent is merged with.
        let (Some(_), Some(mut r)) = (right_in_parent, right) else {
            return Ok(());
        };
        let (fits, rr) = {
            let rn = self.node(r.data(), r.page_id(), Some(0))?;
            (leaf_free >= rn.used_bytes(), rn.right())
        };
        if !fits {
            return Ok(());
        }
        drop(left);
        let mut next = match rr {
            NO_BLOCK => None,
            b => Some(self.fetch_write(b, r.page_id(), "right link")?),
        };
        self.merge(&mut parent, i + 1, &mut leaf, &mut r, next.as_mut())?;
        drop((parent, leaf, next));
        self.free_merged(r)
    }

    /// Moves every entry of `victim` to the end of `survivor` (its left sibling), removes
    /// the victim's downlink (slot `slot` of `parent`), links `survivor` to the victim's
    /// right sibling `next` and back, and marks the victim freed: one MERGE record
    /// (InnoDB `btr_compress`: `page_copy_rec_list_end` / `_start` into the merge page,
    /// `btr_level_list_remove`, `btr_node_ptr_delete`, `btr_page_free`).
    fn merge<'a>(
        &'a self,
        parent: &mut WritePageGuard<'a>,
        slot: usize,
        survivor: &mut WritePageGuard<'a>,
        victim: &mut WritePageGuard<'a>,
        next: Option<&mut WritePageGuard<'a>>,
    ) -> Result<()> {
        let (sid, vid, pid) = (survivor.page_id(), victim.page_id(), parent.page_id());
        let (sh, mut all) = {
            let n = self.node(survivor.data(), sid, Some(0))?;
            (n.header(), n.entries()?)
        };
        let (vh, moved) = {
            let n = self.node(victim.data(), vid, Some(0))?;
            (n.header(), n.entries()?)
        };
        if self.node(parent.data(), pid, Some(1))?.child(slot)? != vid.block {
            return Err(Error::Corrupted {
                what: format!("B+tree {pid}: downlink {slot} does not name {vid}"),
            });
        }
        let data = bwal::encode_merge(vh.right, &node::pairs(&moved));
        all.extend(moved);
        let new_sh = NodeHeader {
            right: vh.right,
            ..sh
        };
        node::build(
            survivor.data_mut(),
            sid,
            self.geo,
            new_sh,
            &node::pairs(&all),
        )?;
        let none: [(&[u8], &[u8]); 0] = [];
        node::build(
            victim.data_mut(),
            vid,
            self.geo,
            bwal::freed_header(),
            &none,
        )?;
        node::remove_at(parent.data_mut(), pid, slot)?;
        let mut rec = RecordBuilder::new(rmgr::BTREE, info::MERGE)
            .block(sid, false, &data)
            .block(vid, true, &[])
            .block(pid, false, &(slot as u16).to_le_bytes());
        let mut guards: Vec<&mut WritePageGuard<'a>> = vec![survivor, victim, parent];
        if let Some(nx) = next {
            let nid = nx.page_id();
            node::set_left(nx.data_mut(), nid, sid.block)?;
            rec = rec.block(nid, false, &sid.block.to_le_bytes());
            guards.push(nx);
        }
        let rec = rec.main_data(&bwal::encode_geometry(self.geo));
        log_change(self.pool.wal(), &rec, &mut guards)?;
        self.ops.merges.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Returns a page a merge emptied to the relation's free list, for a later split's
    /// [`BufferPool::new_page`]. The page stays in the pool (dirty, marked freed) and is
    /// written like any other: InnoDB skips writing a freed page (`buf_page_t::FREED`),
    /// which its recovery allows by ignoring the log of pages freed later in it; mvcclab's
    /// redo has no such pass, so the freed page is written once.
    fn free_merged(&self, g: WritePageGuard<'_>) -> Result<()> {
        let id = g.page_id();
        drop(g);
        self.pool.store().free_page(id)
    }

    fn apply_leaf_change(
        &self,
        g: &mut WritePageGuard<'_>,
        mode: Mode,
        slot: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let id = g.page_id();
        if mode == Mode::Replace {
            // An entry that keeps its size is patched in place and only the bytes that
            // changed are logged, as MariaDB logs an in-place update (`mtr_t::memcpy
            // <MAYBE_NOP>` in `btr_cur_upd_rec_in_place`): `k=k+1` logs its 4 bytes plus the
            // changed system columns, not the whole record. Nothing changed, nothing logged.
            let span = {
                let n = self.node(g.data(), id, Some(0))?;
                let (k, old) = n.entry(slot)?;
                (k == key && old.len() == value.len()).then(|| changed_span(old, value))
            };
            if let Some(span) = span {
                let Some((a, b)) = span else { return Ok(()) };
                node::patch_value(g.data_mut(), id, slot, a, &value[a..b])?;
                let rec = RecordBuilder::new(rmgr::BTREE, info::PATCH_VALUE).block(
                    id,
                    false,
                    &bwal::encode_patch(slot, a, &value[a..b]),
                );
                log_change(self.pool.wal(), &rec, &mut [g])?;
                return Ok(());
            }
        }
        let code = match mode {
            Mode::Insert => {
                node::insert_at(g.data_mut(), id, slot, key, value)?;
                info::INSERT_LEAF
            }
            Mode::Replace => {
                node::replace_at(g.data_mut(), id, slot, key, value)?;
                info::UPDATE_VALUE
            }
        };
        let rec = RecordBuilder::new(rmgr::BTREE, code).block(
            id,
            false,
            &bwal::encode_slot_entry(slot, key, value),
        );
        log_change(self.pool.wal(), &rec, &mut [g])?;
        Ok(())
    }

    /// The leaf change when it fits without a split: `Some(found)`; `None` to go
    /// pessimistic. (InnoDB `btr_cur_optimistic_insert`; PostgreSQL `_bt_doinsert` with
    /// its fast path.)
    fn modify_optimistic(
        &self,
        key: &[u8],
        value: &[u8],
        mode: Mode,
        cleanup: Option<(&InsertCleanup<'_>, &mut CleanupOutcome)>,
    ) -> Result<Option<bool>> {
        let mut g = self.descend_write(&Target::Lower(Bound::Included(key)))?;
        if mode == Mode::Insert {
            return self.insert_in_leaf(&mut g, key, value, cleanup);
        }
        let (pos, free, old_space) = {
            let n = self.node(g.data(), g.page_id(), Some(0))?;
            let pos = n.search(key)?;
            let old = match pos {
                Ok(i) => n.entry_space(i)?,
                Err(_) => 0,
            };
            (pos, n.free_bytes(), old)
        };
        let need = self.geo.space(key.len() + value.len());
        match (mode, pos) {
            (Mode::Insert, Ok(_)) => Err(self.duplicate(key)),
            (Mode::Replace, Err(_)) => Ok(Some(false)),
            (Mode::Insert, Err(i)) | (Mode::Replace, Ok(i)) if free + old_space >= need => {
                self.apply_leaf_change(&mut g, mode, i, key, value)?;
                Ok(Some(true))
            }
            _ => Ok(None),
        }
    }

    /// The change with splits (InnoDB `btr_cur_pessimistic_insert`; the latch crabbing of
    /// Bayer and Schkolnick): exclusive latches from the meta page down, ancestors released
    /// as soon as a child is safe (room for one more separator); the leaf splits, and each
    /// split inserts its separator into the parent still latched, up to a new root.
    fn modify_pessimistic(&self, key: &[u8], value: &[u8], mode: Mode) -> Result<bool> {
        let (wp, mut g) = self.descend_pessimistic(key, 0)?;
        let (place, n_entries, hdr, fits) = {
            let n = self.node(g.data(), g.page_id(), Some(0))?;
            let (place, old) = match mode {
                Mode::Insert => (self.place(&n, key)?, 0),
                Mode::Replace => match n.search(key)? {
                    Ok(i) => (Place::Before(i), n.entry_space(i)?),
                    Err(_) => return Ok(false),
                },
            };
            let need = self.geo.space(key.len() + value.len());
            (place, n.len(), n.header(), n.free_bytes() + old >= need)
        };
        if place == Place::Dup {
            return Err(self.duplicate(key));
        }
        if fits {
            // Another thread made room meanwhile: no split, no ancestors needed.
            drop(wp);
            match (mode, place) {
                (Mode::Replace, Place::Before(i)) => {
                    self.apply_leaf_change(&mut g, mode, i, key, value)?
                }
                _ => self.apply_insert(&mut g, place, key, value)?,
            }
            return Ok(true);
        }
        let mut combined = self.node(g.data(), g.page_id(), Some(0))?.entries()?;
        let new = Entry {
            key: key.to_vec(),
            value: value.to_vec(),
        };
        let mut fill = None;
        match (mode, place) {
            (Mode::Insert, Place::Before(slot)) => {
                if hdr.right == NO_BLOCK && slot == n_entries {
                    fill = Some(self.cfg.rightmost_fill_pct);
                } else if slot == n_entries && self.single_value(&combined, key) {
                    // nbtsplitloc.c's single value strategy: a leaf holding one key value
                    // (posting entries and the new TID at its end) splits leaving the
                    // left page BTREE_SINGLEVAL_FILLFACTOR full, since later TIDs of
                    // that value go right.
                    fill = Some(SINGLEVAL_FILL_PCT);
                }
                combined.insert(slot, new);
            }
            (Mode::Replace, Place::Before(slot)) => combined[slot] = new,
            (_, Place::Posting(s)) => {
                let tid = &key[key.len() - TID_BYTES..];
                let (post, plain) =
                    dedup::swapped(g.page_id(), &combined[s].key, &combined[s].value, tid)?;
                combined[s] = post;
                combined.insert(s + 1, plain);
            }
            (_, Place::Dup) => return Err(self.duplicate(key)),
        }
        let held: Vec<u32> = wp.path.iter().map(|(p, _)| p.page_id().block).collect();
        let (sep, right) = self.split(&mut g, hdr, combined, fill, None, &held)?;
        self.insert_into_parent(wp, g, sep, right, 0)?;
        Ok(true)
    }

    /// The pessimistic descent towards `key` down to the page at `stop_level` (returned
    /// exclusively latched): exclusive latches from the meta page down, every latch above
    /// a safe page (room for one more separator, invariant 5) released, the meta page's
    /// included. The returned [`WritePath`] holds the ancestors still latched, each with
    /// the index of the downlink followed (PostgreSQL's `BTStack`, but latched).
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page on the path, a downlink to an
    /// ancestor, or a tree lower than `stop_level`; pool errors.
    fn descend_pessimistic(
        &self,
        key: &[u8],
        stop_level: u16,
    ) -> Result<(WritePath<'_>, WritePageGuard<'_>)> {
        let mg = self.pool.fetch_write(self.meta_id())?;
        let meta = Meta::read(mg.data(), mg.page_id())?;
        self.check_meta(&meta, mg.page_id())?;
        let mut level = Self::root_level(&meta);
        if level < stop_level {
            return Err(Error::Corrupted {
                what: format!(
                    "B+tree {}: root level {level} is below level {stop_level}",
                    mg.page_id()
                ),
            });
        }
        let mut meta_g = Some(mg);
        let mut path: Vec<(WritePageGuard<'_>, usize)> = Vec::new();
        let mut g = self.fetch_write(meta.root, self.meta_id(), "root")?;
        while level > stop_level {
            let (i, child, safe) = {
                let n = self.node(g.data(), g.page_id(), Some(level))?;
                let i = n.child_index(key, true)?;
                (i, n.child(i)?, n.free_bytes() >= self.sep_reserve)
            };
            if safe {
                path.clear();
                meta_g = None;
            }
            if path.iter().any(|(p, _)| p.page_id().block == child) {
                return Err(Error::Corrupted {
                    what: format!(
                        "B+tree {}: downlink to an ancestor, block {child}",
                        g.page_id()
                    ),
                });
            }
            let c = self.fetch_write(child, g.page_id(), "downlink")?;
            path.push((g, i));
            g = c;
            level -= 1;
        }
        self.node(g.data(), g.page_id(), Some(stop_level))?;
        Ok((WritePath { meta, meta_g, path }, g))
    }

    /// Inserts the downlink (`sep` → `right`) of the split of `g` (at `child_level`,
    /// flagged INCOMPLETE_SPLIT) into its parent, the last page of `wp.path`, clearing the
    /// flag of `g` in the same INSERT_UPPER record; a parent without room splits in turn
    /// (its SPLIT record clears the flag) and the cascade goes on up, ending in a new root
    /// when the path runs out (the meta page is then still latched). PostgreSQL
    /// nbtinsert.c `_bt_insert_parent` (with `_bt_newroot` for the root).
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page or a split that reaches the root
    /// without the meta page latched; pool and WAL errors (the cascade stops there, pages
    /// below keep INCOMPLETE_SPLIT).
    fn insert_into_parent<'a>(
        &'a self,
        wp: WritePath<'a>,
        mut g: WritePageGuard<'a>,
        mut sep: Vec<u8>,
        mut right: u32,
        mut child_level: u16,
    ) -> Result<()> {
        let WritePath {
            meta,
            mut meta_g,
            mut path,
        } = wp;
        loop {
            match path.pop() {
                Some((mut pg, i)) => {
                    let pid = pg.page_id();
                    let down = right.to_le_bytes();
                    let (fits, phdr) = {
                        let n = self.node(pg.data(), pid, Some(child_level + 1))?;
                        let fits = n.free_bytes() >= self.geo.space(sep.len() + down.len());
                        (fits, n.header())
                    };
                    if fits {
                        node::insert_at(pg.data_mut(), pid, i + 1, &sep, &down)?;
                        self.clear_incomplete(&mut g)?;
                        let rec = RecordBuilder::new(rmgr::BTREE, info::INSERT_UPPER)
                            .block(pid, false, &bwal::encode_slot_entry(i + 1, &sep, &down))
                            .block(g.page_id(), false, &[]);
                        log_change(self.pool.wal(), &rec, &mut [&mut pg, &mut g])?;
                        return Ok(());
                    }
                    let mut combined = self.node(pg.data(), pid, None)?.entries()?;
                    combined.insert(
                        i + 1,
                        Entry {
                            key: sep,
                            value: down.to_vec(),
                        },
                    );
                    let mut held: Vec<u32> = path.iter().map(|(p, _)| p.page_id().block).collect();
                    held.push(g.page_id().block);
                    let (s, r) = self.split(&mut pg, phdr, combined, None, Some(&mut g), &held)?;
                    g = pg;
                    sep = s;
                    right = r;
                    child_level += 1;
                }
                None => {
                    let Some(mut mg) = meta_g.take() else {
                        return Err(Error::Corrupted {
                            what: format!(
                                "B+tree {}: a split reached the root without the meta page latched",
                                g.page_id()
                            ),
                        });
                    };
                    self.new_root(&mut mg, &mut g, child_level + 1, meta, &sep, right)?;
                    return Ok(());
                }
            }
        }
    }

    fn clear_incomplete(&self, g: &mut WritePageGuard<'_>) -> Result<()> {
        let id = g.page_id();
        let flags = Node::parse(g.data(), id)?.flags();
        node::set_flags(g.data_mut(), id, flags & !FLAG_INCOMPLETE_SPLIT)
    }

    /// Index `m` of the first entry of `combined` that goes right: among the points that
    /// leave both halves fitting, the one whose left half is closest to the target, which
    /// is `fill` percent of the usable bytes when given (`rightmost_fill_pct` for ascending
    /// inserts: nbtsplitloc.c's fillfactor split of the rightmost page, InnoDB
    /// `btr_page_get_split_rec_to_right`; [`SINGLEVAL_FILL_PCT`] for a leaf of one key
    /// value), else half the bytes (`_bt_findsplitloc`'s default: equalize free space).
    fn split_point(&self, combined: &[Entry], leaf: bool, fill: Option<u8>) -> Result<usize> {
        let sizes: Vec<usize> = combined
            .iter()
            .map(|e| self.geo.space(e.key.len() + e.value.len()))
            .collect();
        let total: usize = sizes.iter().sum();
        let target = self.usable * fill.unwrap_or(50) as usize / 100;
        let mut best: Option<((u8, usize), usize)> = None;
        let mut left = 0;
        for m in 1..combined.len() {
            left += sizes[m - 1];
            // An internal page's first entry on the right keeps only its downlink.
            let first_right = if leaf {
                sizes[m]
            } else {
                self.geo.space(combined[m].value.len())
            };
            let right = total - left - sizes[m] + first_right;
            if left > self.usable || right > self.usable {
                continue;
            }
            let score = if fill.is_some() {
                if left <= target {
                    (0, target - left)
                } else {
                    (1, left - target)
                }
            } else {
                (0, left.abs_diff(right))
            };
            if best.map_or(true, |(s, _)| score < s) {
                best = Some((score, m));
            }
        }
        best.map(|(_, m)| m).ok_or_else(|| Error::Corrupted {
            what: format!(
                "B+tree: no split point fits {} entries of {total} bytes in two pages",
                combined.len()
            ),
        })
    }

    /// Splits the page held by `g` (header `hdr`) whose contents would be `combined`: the
    /// left part stays (flagged INCOMPLETE_SPLIT until its parent has the downlink), the
    /// rest moves to a new right page, the old right sibling's left link is updated, and
    /// `child` (the page whose split this completes, one level down) loses its flag; one
    /// SPLIT record. `held` are the other pages the caller has latched (a corrupted right
    /// link to one of them is an error, not a self-deadlock). Returns the separator for the parent and the new page's block
    /// (PostgreSQL nbtinsert.c `_bt_split`; InnoDB `btr_page_split_and_insert`).
    fn split<'a>(
        &'a self,
        g: &mut WritePageGuard<'a>,
        hdr: NodeHeader,
        mut combined: Vec<Entry>,
        fill: Option<u8>,
        child: Option<&mut WritePageGuard<'a>>,
        held: &[u32],
    ) -> Result<(Vec<u8>, u32)> {
        let leaf = hdr.level == 0;
        let m = self.split_point(&combined, leaf, fill)?;
        let sep = if !leaf {
            // The separator moves up; the right page's first entry means minus infinity.
            std::mem::take(&mut combined[m].key)
        } else if self.cfg.suffix_truncation {
            // Above the left half's largest key: a posting entry's last TID, not its key.
            truncated_separator(&self.max_key_of(&combined[m - 1]), &combined[m].key)
        } else {
            combined[m].key.clone()
        };
        let right_entries = combined.split_off(m);
        let lid = g.page_id();
        let mut old_right = match hdr.right {
            NO_BLOCK => None,
            b if held.contains(&b) => {
                return Err(Error::Corrupted {
                    what: format!("B+tree {lid}: right link to block {b}, a page on the path"),
                })
            }
            b => {
                let o = self.fetch_write(b, lid, "right link")?;
                self.node(o.data(), o.page_id(), Some(hdr.level))?;
                Some(o)
            }
        };
        let mut r = self.pool.new_page(self.rel)?;
        let rid = r.page_id();
        let left_h = NodeHeader {
            flags: hdr.flags | FLAG_INCOMPLETE_SPLIT,
            right: rid.block,
            ..hdr
        };
        let right_h = NodeHeader {
            level: hdr.level,
            flags: 0,
            left: lid.block,
            right: hdr.right,
        };
        let (lp, rp) = (node::pairs(&combined), node::pairs(&right_entries));
        let before = self.node(g.data(), lid, Some(hdr.level))?.entries()?;
        let left_data = bwal::encode_split_left(left_h, &before, &lp);
        node::build(r.data_mut(), rid, self.geo, right_h, &rp)?;
        node::build(g.data_mut(), lid, self.geo, left_h, &lp)?;
        let mut which = 0;
        let mut rec = RecordBuilder::new(rmgr::BTREE, info::SPLIT)
            .block(lid, false, &left_data)
            .block(rid, true, &bwal::encode_node(right_h, &rp));
        if let Some(o) = old_right.as_mut() {
            let oid = o.page_id();
            node::set_left(o.data_mut(), oid, rid.block)?;
            rec = rec.block(oid, false, &rid.block.to_le_bytes());
            which |= bwal::SPLIT_HAS_OLD_RIGHT;
        }
        let mut child = child;
        if let Some(c) = child.as_deref_mut() {
            self.clear_incomplete(c)?;
            rec = rec.block(c.page_id(), false, &[]);
            which |= bwal::SPLIT_HAS_CHILD;
        }
        let rec = rec.main_data(&bwal::encode_split_main(self.geo, which, &sep));
        let mut guards: Vec<&mut WritePageGuard<'a>> = vec![g, &mut r];
        if let Some(o) = old_right.as_mut() {
            guards.push(o);
        }
        if let Some(c) = child {
            guards.push(c);
        }
        log_change(self.pool.wal(), &rec, &mut guards)?;
        self.ops.splits.fetch_add(1, Ordering::Relaxed);
        Ok((sep, rid.block))
    }

    /// A new root above the split old root `left` (PostgreSQL nbtinsert.c `_bt_newroot`):
    /// entries (minus infinity → left, `sep` → `right`); the meta page names it and the
    /// height grows by one; one NEWROOT record.
    fn new_root<'a>(
        &'a self,
        mg: &mut WritePageGuard<'a>,
        left: &mut WritePageGuard<'a>,
        level: u16,
        meta: Meta,
        sep: &[u8],
        right: u32,
    ) -> Result<()> {
        let mut root = self.pool.new_page(self.rel)?;
        let rid = root.page_id();
        let h = NodeHeader {
            level,
            flags: 0,
            left: NO_BLOCK,
            right: NO_BLOCK,
        };
        let (dl, dr) = (left.page_id().block.to_le_bytes(), right.to_le_bytes());
        let entries: [(&[u8], &[u8]); 2] = [(&[], &dl), (sep, &dr)];
        node::build(root.data_mut(), rid, self.geo, h, &entries)?;
        self.clear_incomplete(left)?;
        let meta = Meta {
            root: rid.block,
            height: meta.height + 1,
            ..meta
        };
        meta.write(mg.data_mut());
        let rec = RecordBuilder::new(rmgr::BTREE, info::NEWROOT)
            .block(rid, true, &bwal::encode_node(h, &entries))
            .block(left.page_id(), false, &[])
            .block(mg.page_id(), true, &meta.encode())
            .main_data(&bwal::encode_geometry(self.geo));
        log_change(self.pool.wal(), &rec, &mut [&mut root, left, mg])?;
        // Under the meta page's and the old root's exclusive latches: a descent that
        // latches the old root after this sees its right sibling and rereads the meta page.
        self.cache_root(rid.block, meta.height);
        Ok(())
    }

    /// Finishes every split that a crash (or an error in the middle of a cascade) left
    /// incomplete, as crash recovery must before the tree is used: for each page with
    /// INCOMPLETE_SPLIT, the missing downlink to its right sibling is inserted into the
    /// parent, clearing the flag in the same record (PostgreSQL nbtinsert.c
    /// `_bt_finish_split`, which PostgreSQL runs lazily from `_bt_getstackbuf` /
    /// `_bt_moveright`; mvcclab readers do not move right, so recovery runs it eagerly).
    /// The insertion is the normal one (`insert_into_parent`, PostgreSQL
    /// `_bt_insert_parent`): one INSERT_UPPER record, or a SPLIT of a full parent naming the
    /// child whose flag it clears and so on up, or a NEWROOT when the unfinished split is at
    /// the root level (the meta page still names the left page, the old root: PostgreSQL
    /// `_bt_newroot`). So a crash while finishing leaves a state this function finishes in
    /// turn. Returns the number of splits finished.
    ///
    /// How it finds them: each level is walked left to right along the right links from
    /// its leftmost page, from the root's level (the page the meta page names; a right
    /// sibling there is the unlinked half of a root split) down to the leaves; a page
    /// reached only through a right link is visited too. Levels go top down, so the parent
    /// level of each split being finished is already complete and the descent towards the
    /// separator finds the parent holding the left page's downlink (PostgreSQL gets the
    /// same guarantee by finishing an incomplete parent first, in `_bt_getstackbuf`).
    ///
    /// The separator: a leaf split's is recomputed from the two halves exactly as the
    /// split chose it (the right page's first key, suffix-truncated against the left page's
    /// last key when [`BTreeConfig::suffix_truncation`] is on). An internal split's moved up
    /// and is stored nowhere (no high keys; the right page's first key is minus infinity),
    /// so one is chosen that bounds the two subtrees the same way: from the largest key
    /// under the left page (its rightmost path, halves of unfinished splits below
    /// included) and the first key of the leftmost leaf under the right page; it lies in
    /// the left page's range and above every key under the left page and at most every key
    /// under the right one, so every lookup and scan finds what it found with the original.
    ///
    /// Runs single-threaded at recovery: it reads with shared latches one page at a time
    /// and changes the tree through the pessimistic descent's exclusive latches, but does
    /// not guard against concurrent changes between the two.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page or sibling chain, an incomplete split
    /// without a right sibling or whose right sibling does not link back, a flagged page at
    /// the root level that is not the root, a page no downlink reaches, or halves whose keys
    /// leave no separator between them; pool and WAL errors (the splits finished before stay
    /// finished; calling it again goes on).
    pub fn finish_incomplete_splits(&self) -> Result<usize> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let mut finished = 0;
        self.walk_levels(
            &meta,
            |id, n, _| {
                let hdr = n.header();
                Ok((hdr.flags & FLAG_INCOMPLETE_SPLIT != 0).then_some((id.block, hdr.right)))
            },
            // Each level's splits are finished before the walk descends: finishing changes
            // only the flag of the page and pages above its level.
            |level, flagged| {
                for (block, right) in flagged {
                    self.finish_split(block, right, level)?;
                    finished += 1;
                }
                Ok(())
            },
        )?;
        Ok(finished)
    }

    /// Visits every page of the tree `meta` describes level by level, the root's level
    /// first, each level left to right along the right links from its leftmost page (the
    /// first child of the leftmost page of the level above), one shared latch at a time:
    /// `visit(page, node, level)` runs with the page latched and may pick it out, and
    /// `level_done(level, picked)` runs after each level with no latch held, with what
    /// `visit` picked there, in page order.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page or a sibling cycle; pool errors;
    /// those of the callbacks, which stop the walk.
    fn walk_levels<T>(
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

    /// Finishes the split of `left` (at `level`, flagged) whose right half is `right`:
    /// chooses the separator (see [`BTree::finish_incomplete_splits`]), descends to `left`
    /// pessimistically and inserts the downlink with [`BTree::insert_into_parent`].
    fn finish_split(&self, left: u32, right: u32, level: u16) -> Result<()> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let lid = PageId::new(self.rel, left);
        let corrupt = |what: String| Error::Corrupted {
            what: format!("B+tree {lid}: {what}"),
        };
        if right == NO_BLOCK {
            return Err(corrupt("INCOMPLETE_SPLIT without a right sibling".into()));
        }
        let (low, high) = self.fences_of(&meta, left, level)?;
        let (below, first_right, right_sep) = self.split_halves(left, right, level)?;
        // Everything the separator must stay above / at most / below.
        let lb = match (low, below) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let ub_sep = match (high, right_sep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sep = match (&first_right, &lb) {
            (Some(f), l) if self.cfg.suffix_truncation => {
                truncated_separator(l.as_deref().unwrap_or(&[]), f)
            }
            (Some(f), _) => f.clone(),
            // The right half's leftmost leaf is empty: just above everything on the left.
            (None, Some(l)) => {
                let mut s = l.clone();
                s.push(0);
                s
            }
            (None, None) => vec![0],
        };
        let fits = !sep.is_empty()
            && lb.as_ref().map_or(true, |l| *l < sep)
            && first_right.as_ref().map_or(true, |f| sep <= *f)
            && ub_sep.as_ref().map_or(true, |u| sep < *u);
        if !fits {
            return Err(corrupt(format!(
                "no separator fits between the halves of its incomplete split (right half {right})"
            )));
        }
        let (wp, g) = self.descend_pessimistic(&sep, level)?;
        let hdr = self.node(g.data(), g.page_id(), Some(level))?.header();
        if g.page_id().block != left || hdr.flags & FLAG_INCOMPLETE_SPLIT == 0 || hdr.right != right
        {
            return Err(corrupt(format!(
                "the descent for its incomplete split's separator reached {} (right {}, flags {:#x})",
                g.page_id(),
                hdr.right,
                hdr.flags
            )));
        }
        self.insert_into_parent(wp, g, sep, right, level)
    }

    /// The key range `[low, high)` that the downlink to `target` (at `level`) gives it
    /// (`None` = unbounded), found by walking the levels above it from the root (shared
    /// latches, one page at a time). A page at the root level must be the root.
    fn fences_of(&self, meta: &Meta, target: u32, level: u16) -> Result<Fences> {
        let root_level = Self::root_level(meta);
        let tid = PageId::new(self.rel, target);
        if level > root_level || (level == root_level && target != meta.root) {
            return Err(Error::Corrupted {
                what: format!(
                    "B+tree {tid}: level {level} page with INCOMPLETE_SPLIT is not the root (block {}, level {root_level})",
                    meta.root
                ),
            });
        }
        if level == root_level {
            return Ok((None, None));
        }
        let mut budget = self.n_blocks()? as u64;
        let mut stack: Vec<(u32, u16, PageId, Fences)> =
            vec![(meta.root, root_level, self.meta_id(), (None, None))];
        while let Some((block, lv, from, (low, high))) = stack.pop() {
            if budget == 0 {
                return Err(Error::Corrupted {
                    what: format!("B+tree {from}: more pages reachable than the relation has"),
                });
            }
            budget -= 1;
            let g = self.fetch_read(block, from, "downlink")?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            for i in 0..n.len() {
                let child = n.child(i)?;
                let c_low = if i == 0 {
                    low.clone()
                } else {
                    Some(n.key(i)?.to_vec())
                };
                let c_high = match i + 1 < n.len() {
                    true => Some(n.key(i + 1)?.to_vec()),
                    false => high.clone(),
                };
                if lv - 1 == level {
                    if child == target {
                        return Ok((c_low, c_high));
                    }
                } else {
                    stack.push((child, lv - 1, id, (c_low, c_high)));
                }
            }
        }
        Err(Error::Corrupted {
            what: format!("B+tree {tid}: no downlink reaches this level {level} page"),
        })
    }

    /// What the two halves of the split of `left` into `right` (at `level`) hold near
    /// their boundary: the largest key under `left` (its last key and those of the pages
    /// on its rightmost path down to the leaf, moving right past pages whose own split is
    /// unfinished: their right halves belong to the same subtree), the first key of the
    /// leftmost leaf under `right`, and the smallest separator on `right`'s leftmost path.
    fn split_halves(&self, left: u32, right: u32, level: u16) -> Result<SplitHalves> {
        let mut hops = Hops::new(self)?;
        let mut below: Option<Vec<u8>> = None;
        let (mut at, mut lv, mut from, mut chase) = (left, level, self.meta_id(), false);
        loop {
            let g = self.fetch_read(at, from, if chase { "right link" } else { "downlink" })?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            if lv < level && n.flags() & FLAG_INCOMPLETE_SPLIT != 0 && n.right() != NO_BLOCK {
                (at, from, chase) = (n.right(), id, true);
                hops.step(id)?;
                continue;
            }
            let keyed = if lv > 0 { 1 } else { 0 };
            if n.len() > keyed {
                let (k, v) = n.entry(n.len() - 1)?;
                // A leaf's largest key: a posting entry's last TID.
                let last = if lv == 0 && self.cfg.deduplicate {
                    dedup::max_key(k, v)
                } else {
                    k.to_vec()
                };
                if below.as_deref().map_or(true, |b| last.as_slice() > b) {
                    below = Some(last);
                }
            }
            if lv == 0 {
                break;
            }
            (at, from, chase) = (n.child(n.len() - 1)?, id, false);
            lv -= 1;
        }
        let (mut at, mut lv, mut from) = (right, level, PageId::new(self.rel, left));
        let mut right_sep: Option<Vec<u8>> = None;
        loop {
            let what = if lv == level {
                "right link"
            } else {
                "downlink"
            };
            let g = self.fetch_read(at, from, what)?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(lv))?;
            if lv == level && n.left() != left {
                return Err(Error::Corrupted {
                    what: format!(
                        "B+tree {id}: right half of the incomplete split of block {left} links left to {}",
                        n.left()
                    ),
                });
            }
            if lv == 0 {
                let first = (!n.is_empty()).then(|| n.key(0)).transpose()?;
                return Ok((below, first.map(<[u8]>::to_vec), right_sep));
            }
            if n.len() > 1 {
                let k = n.key(1)?;
                if right_sep.as_deref().map_or(true, |s| k < s) {
                    right_sep = Some(k.to_vec());
                }
            }
            (at, from) = (n.child(0)?, id);
            lv -= 1;
        }
    }

    /// Visits the entries with `lo <= key <= hi` in key order (`Forward`) or reverse
    /// (`Backward`), calling `f(key, value)`; `f` returns `Ok(false)` to stop, and its
    /// error ends the scan and is returned.
    ///
    /// `f` runs with no latch held: the scan copies one leaf's matching entries under the
    /// leaf's shared latch, releases it, then calls `f` for them, so `f` may use this tree
    /// or wait on anything. Forward, the scan then latches the leaf again, latches its
    /// right sibling and only then releases the leaf (left-to-right coupling), and skips
    /// entries at or below the last key delivered (entries moved right by a split since).
    /// Backward scans never latch right to left: after a leaf, they descend again from the
    /// root for the keys below that leaf's low fence (the separator bounding it from below,
    /// at most the smallest key seen there). Not a snapshot: an entry inserted or deleted
    /// during the scan may or may not be seen, but every entry present throughout is seen
    /// exactly once, in order.
    ///
    /// Errors: `f`'s error; [`Error::Corrupted`] for a damaged page (or a sibling cycle);
    /// pool errors.
    #[allow(clippy::type_complexity)] // the signature the callers were promised
    pub fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: ScanDirection,
        f: &mut dyn FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let f = &mut |_: LeafRef, k: &[u8], v: &[u8]| f(k, v);
        match dir {
            ScanDirection::Forward => self.scan_forward(lo, hi, false, f),
            ScanDirection::Backward => self.scan_backward(lo, hi, false, f),
        }
    }

    /// [`BTree::scan`] for an MVCC index scan: entries marked dead
    /// ([`node::SLOT_FLAG_DEAD`]) are skipped (PostgreSQL nbtsearch.c `_bt_readpage` with
    /// `ignore_killed_tuples`), and `f(leaf_block, key, value)` learns the leaf each entry
    /// came from, for [`BTree::kill_items`].
    ///
    /// Errors: as [`BTree::scan`].
    pub fn scan_live(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        dir: ScanDirection,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        match dir {
            ScanDirection::Forward => self.scan_forward(lo, hi, true, f),
            ScanDirection::Backward => self.scan_backward(lo, hi, true, f),
        }
    }

    #[allow(clippy::type_complexity)]
    fn scan_forward(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        skip_dead: bool,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        let (mut g, _) = self.descend_read(&Target::Lower(lo), false)?;
        let mut last: Option<Vec<u8>> = None;
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut hops = Hops::new(self)?;
        loop {
            let cur = g.page_id();
            let leaf = LeafRef {
                block: cur.block,
                lsn: g.page_lsn(),
            };
            let (done, right) = {
                let n = self.node(g.data(), cur, Some(0))?;
                let start = match (&last, lo) {
                    (Some(l), _) => n.upper_bound(l)?,
                    (None, Bound::Included(k)) => n.lower_bound(k)?,
                    (None, Bound::Excluded(k)) => n.upper_bound(k)?,
                    (None, Bound::Unbounded) => 0,
                };
                // A posting entry before `start` may hold TIDs past the bound: filtered per
                // TID below.
                let start = if self.cfg.deduplicate {
                    start.saturating_sub(1)
                } else {
                    start
                };
                let mut done = false;
                for i in start..n.len() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate {
                        let skip = |tk: &[u8]| {
                            last.as_ref().is_some_and(|l| tk <= l.as_slice()) || !above_lo(tk, lo)
                        };
                        let stop = |tk: &[u8]| !below_hi(tk, hi);
                        let dead = skip_dead && n.is_dead(i);
                        if push_per_tid(self.per_tid(k, v), dead, skip, stop, &mut batch) {
                            done = true;
                            break;
                        }
                        continue;
                    }
                    if !below_hi(k, hi) {
                        done = true;
                        break;
                    }
                    if skip_dead && n.is_dead(i) {
                        continue;
                    }
                    batch.push((k.to_vec(), v.to_vec()));
                }
                (done, n.right())
            };
            if batch.is_empty() {
                if done || right == NO_BLOCK {
                    return Ok(());
                }
                let r = self.fetch_read(right, cur, "right link")?;
                hops.step(cur)?;
                g = r;
                continue;
            }
            drop(g);
            for (k, v) in &batch {
                if !f(leaf, k, v)? {
                    return Ok(());
                }
            }
            let newest = batch.pop().map(|e| e.0);
            if let (Some(old), Some(new)) = (&last, &newest) {
                // Keys delivered ascend strictly, so a scan that resumes after its last key
                // always moves on; on a damaged page whose keys do not ascend it could not.
                if new <= old {
                    return Err(Error::Corrupted {
                        what: format!("B+tree page {cur}: keys out of order in a forward scan"),
                    });
                }
            }
            last = newest;
            batch.clear();
            if done {
                return Ok(());
            }
            if self.cfg.merge_threshold_pct.is_some() {
                // While no latch was held the leaf may have been merged away (freed, even
                // reused by a split elsewhere): find the position again from the root,
                // after the last key delivered (InnoDB restores its persistent cursor the
                // same way, btr0pcur.cc `btr_pcur_t::restore_position`).
                let Some(l) = last.as_deref() else {
                    return Ok(());
                };
                g = self
                    .descend_read(&Target::Lower(Bound::Excluded(l)), false)?
                    .0;
                continue;
            }
            let c = self.fetch_read(cur.block, self.meta_id(), "scan position")?;
            let right = self.node(c.data(), cur, Some(0))?.right();
            if right == NO_BLOCK {
                return Ok(());
            }
            let r = self.fetch_read(right, cur, "right link")?;
            hops.step(cur)?;
            drop(c);
            g = r;
        }
    }

    #[allow(clippy::type_complexity)]
    fn scan_backward(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        skip_dead: bool,
        f: &mut LeafVisitor<'_>,
    ) -> Result<()> {
        let mut bound: Bound<Vec<u8>> = match hi {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut batch: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut hops = Hops::new(self)?;
        loop {
            let (g, low) = self.descend_read(&Target::Upper(borrowed(&bound)), true)?;
            let at = g.page_id();
            let leaf = LeafRef {
                block: at.block,
                lsn: g.page_lsn(),
            };
            let done = {
                let n = self.node(g.data(), at, Some(0))?;
                let end = match &bound {
                    Bound::Unbounded => n.len(),
                    Bound::Included(k) => n.upper_bound(k)?,
                    Bound::Excluded(k) => n.lower_bound(k)?,
                };
                let mut done = false;
                for i in (0..end).rev() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate {
                        // Per TID, descending; a posting entry's last TIDs may pass the bound.
                        let skip = |tk: &[u8]| !below_hi(tk, borrowed(&bound));
                        let stop = |tk: &[u8]| !above_lo(tk, lo);
                        let dead = skip_dead && n.is_dead(i);
                        let tks = self.per_tid(k, v).into_iter().rev();
                        if push_per_tid(tks, dead, skip, stop, &mut batch) {
                            done = true;
                            break;
                        }
                        continue;
                    }
                    if !above_lo(k, lo) {
                        done = true;
                        break;
                    }
                    if skip_dead && n.is_dead(i) {
                        continue;
                    }
                    batch.push((k.to_vec(), v.to_vec()));
                }
                done
            };
            drop(g);
            for (k, v) in &batch {
                if !f(leaf, k, v)? {
                    return Ok(());
                }
            }
            batch.clear();
            let Some(low) = low else { return Ok(()) };
            if done {
                return Ok(());
            }
            if let Bound::Included(l) | Bound::Excluded(l) = lo {
                if low.as_slice() <= l {
                    return Ok(()); // every key below the fence is below `lo`
                }
            }
            bound = Bound::Excluded(low);
            hops.step(at)?;
        }
    }

    /// Vacuum's index pass (PostgreSQL nbtree.c `btbulkdelete` → `btvacuumscan`): visits
    /// every leaf once, left to right along the sibling links under exclusive latches
    /// (coupled), removes the entries for which `dead(key, value)` is true and logs one
    /// VACUUM record per changed leaf. `dead` runs under the leaf's exclusive latch and
    /// must not use this tree (PostgreSQL's callback is a lookup in the dead-TID store).
    /// Returns the number of entries removed. Counts go to the calling thread's cause
    /// (`vacuum` when the caller entered it).
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page or a sibling cycle; pool and WAL
    /// errors (the leaves before the failing one keep their removals).
    pub fn bulk_delete(&self, dead: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
        let mut g = self.descend_write(&Target::Lower(Bound::Unbounded))?;
        let mut removed = 0u64;
        let mut hops = Hops::new(self)?;
        loop {
            let id = g.page_id();
            let (hdr, gone) = {
                let n = self.node(g.data(), id, Some(0))?;
                let mut gone = Vec::new();
                for i in 0..n.len() {
                    let (k, v) = n.entry(i)?;
                    if self.cfg.deduplicate && dedup::is_posting(k, v) {
                        // btreevacuumposting: the callback per TID; a posting entry with
                        // some dead TIDs is rewritten without them.
                        let d: Vec<bool> =
                            dedup::expand(k, v).iter().map(|t| dead(t, &[])).collect();
                        let n_dead = d.iter().filter(|&&x| x).count();
                        if n_dead == d.len() {
                            gone.push((i, None, n_dead));
                        } else if n_dead > 0 {
                            gone.push((i, dedup::without(k, v, |j| d[j]), n_dead));
                        }
                    } else if dead(k, v) {
                        gone.push((i, None, 1));
                    }
                }
                (n.header(), gone)
            };
            if !gone.is_empty() {
                let slots: Vec<usize> =
                    gone.iter().filter(|g| g.1.is_none()).map(|g| g.0).collect();
                let updated: Vec<(usize, Entry)> = gone
                    .iter()
                    .filter_map(|g| g.1.clone().map(|e| (g.0, e)))
                    .collect();
                let keep = {
                    let n = self.node(g.data(), id, Some(0))?;
                    bwal::vacuumed_entries(n.entries()?, &slots, &updated)
                };
                // One compaction for the page (bufpage.c `PageIndexMultiDelete`).
                node::build(g.data_mut(), id, self.geo, hdr, &node::pairs(&keep))?;
                let rec = RecordBuilder::new(rmgr::BTREE, info::VACUUM).block(
                    id,
                    false,
                    &bwal::encode_removed_slots(&slots, &updated),
                );
                log_change(self.pool.wal(), &rec, &mut [&mut g])?;
                removed += gone.iter().map(|g| g.2 as u64).sum::<u64>();
            }
            if hdr.right == NO_BLOCK {
                return Ok(removed);
            }
            let r = self.fetch_write(hdr.right, id, "right link")?;
            hops.step(id)?;
            g = r;
        }
    }

    /// Pages, leaf and internal page counts, entries, bytes used and height, by walking
    /// each level left to right from its leftmost page (one shared latch at a time).
    /// Exact when the tree is quiet.
    ///
    /// Errors: [`Error::Corrupted`] for a damaged page or a sibling cycle; pool errors.
    pub fn stats(&self) -> Result<BTreeStats> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let mut s = BTreeStats {
            pages: self.n_blocks()?,
            height: meta.height,
            page_usable_bytes: self.usable as u32,
            ..Default::default()
        };
        self.walk_levels(
            &meta,
            |_, n, level| {
                let used = n.used_bytes() as u64;
                if level > 0 {
                    s.internal_pages += 1;
                    s.internal_used_bytes += used;
                    return Ok(None::<()>);
                }
                s.leaf_pages += 1;
                s.leaf_used_bytes += used;
                if self.cfg.deduplicate {
                    for i in 0..n.len() {
                        let (k, v) = n.entry(i)?;
                        if dedup::is_posting(k, v) {
                            s.posting_entries += 1;
                            s.posting_tids += dedup::n_tids(v) as u64;
                            s.entries += dedup::n_tids(v) as u64;
                        } else {
                            s.entries += 1;
                        }
                    }
                } else {
                    s.entries += n.len() as u64;
                }
                if n.right() == NO_BLOCK {
                    s.rightmost_leaf_used_bytes = used;
                }
                Ok(None)
            },
            |_, _| Ok(()),
        )?;
        Ok(s)
    }

    /// Checks the whole structure (PostgreSQL contrib/amcheck `bt_index_check`): every
    /// page's level and geometry, keys strictly ascending within each page and inside the
    /// bounds its parent gives, internal pages' first key empty, no INCOMPLETE_SPLIT left,
    /// and the sibling links of every level matching the order the downlinks give. Returns
    /// the statistics. Call it on a quiet tree (it takes one latch at a time).
    ///
    /// Errors: [`Error::Corrupted`] naming the first violation; pool errors.
    pub fn verify(&self) -> Result<BTreeStats> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let root_level = Self::root_level(&meta);
        let mut levels: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); root_level as usize + 1];
        let mut s = BTreeStats {
            pages: self.n_blocks()?,
            height: meta.height,
            page_usable_bytes: self.usable as u32,
            ..Default::default()
        };
        let mut budget = s.pages as u64;
        self.verify_page(
            meta.root,
            self.meta_id(),
            root_level,
            None,
            None,
            &mut levels,
            &mut s,
            &mut budget,
        )?;
        for (level, pages) in levels.iter().enumerate() {
            for (j, &(block, left, right)) in pages.iter().enumerate() {
                let want_left = if j == 0 { NO_BLOCK } else { pages[j - 1].0 };
                let want_right = pages.get(j + 1).map_or(NO_BLOCK, |p| p.0);
                if left != want_left || right != want_right {
                    return Err(Error::Corrupted {
                        what: format!(
                            "B+tree {}: level {level} links left {left} right {right}, the downlinks say {want_left} and {want_right}",
                            PageId::new(self.rel, block)
                        ),
                    });
                }
            }
        }
        if let Some(&(last, _, _)) = levels[0].last() {
            let g = self.fetch_read(last, self.meta_id(), "leaf")?;
            s.rightmost_leaf_used_bytes =
                self.node(g.data(), g.page_id(), Some(0))?.used_bytes() as u64;
        }
        Ok(s)
    }

    #[allow(clippy::too_many_arguments)]
    fn verify_page(
        &self,
        block: u32,
        from: PageId,
        level: u16,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
        levels: &mut [Vec<(u32, u32, u32)>],
        s: &mut BTreeStats,
        budget: &mut u64,
    ) -> Result<()> {
        let bad = |id: PageId, what: String| Error::Corrupted {
            what: format!("B+tree {id}: {what}"),
        };
        if *budget == 0 {
            return Err(bad(
                from,
                "more pages reachable than the relation has".into(),
            ));
        }
        *budget -= 1;
        let (id, hdr, entries, used) = {
            let g = self.fetch_read(block, from, "downlink")?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(level))?;
            (id, n.header(), n.entries()?, n.used_bytes() as u64)
        };
        if hdr.flags & FLAG_INCOMPLETE_SPLIT != 0 {
            return Err(bad(id, "INCOMPLETE_SPLIT is set".into()));
        }
        levels[level as usize].push((block, hdr.left, hdr.right));
        let first_checked = if level > 0 {
            if !entries[0].key.is_empty() {
                return Err(bad(
                    id,
                    "first internal key is not empty (minus infinity)".into(),
                ));
            }
            1
        } else {
            0
        };
        for (i, e) in entries.iter().enumerate().skip(first_checked) {
            if i > first_checked && entries[i - 1].key >= e.key {
                return Err(bad(id, format!("keys {} and {i} are not ascending", i - 1)));
            }
            let above = match low {
                None => true,
                Some(l) if level > 0 => e.key.as_slice() > l,
                Some(l) => e.key.as_slice() >= l,
            };
            if !above || high.is_some_and(|h| e.key.as_slice() >= h) {
                return Err(bad(
                    id,
                    format!("key {i} is outside the bounds its parent gives"),
                ));
            }
        }
        if level == 0 {
            s.leaf_pages += 1;
            s.leaf_used_bytes += used;
            if !self.cfg.deduplicate {
                s.entries += entries.len() as u64;
                return Ok(());
            }
            // Posting entries: TIDs ascending, all below the next key (or the high bound).
            for (i, e) in entries.iter().enumerate() {
                let next = entries.get(i + 1).map(|n| n.key.as_slice()).or(high);
                let t = dedup::check_entry(id, &e.key, &e.value, next)
                    .map_err(|err| bad(id, format!("entry {i}: {err}")))?;
                s.entries += t as u64;
                if t > 1 {
                    s.posting_entries += 1;
                    s.posting_tids += t as u64;
                }
            }
            return Ok(());
        }
        s.internal_pages += 1;
        s.internal_used_bytes += used;
        for (i, e) in entries.iter().enumerate() {
            let child: [u8; 4] = e
                .value
                .as_slice()
                .try_into()
                .map_err(|_| bad(id, format!("downlink {i} is not 4 bytes")))?;
            let child_low = if i == 0 { low } else { Some(e.key.as_slice()) };
            let child_high = entries.get(i + 1).map(|n| n.key.as_slice()).or(high);
            self.verify_page(
                u32::from_le_bytes(child),
                id,
                level - 1,
                child_low,
                child_high,
                levels,
                s,
                budget,
            )?;
        }
        Ok(())
    }
}

/// The byte range `a..b` outside of which `old` and `new` (of equal length) agree: the
/// span an in-place patch must write; `None` when they are equal.
fn changed_span(old: &[u8], new: &[u8]) -> Option<(usize, usize)> {
    let a = old.iter().zip(new).position(|(x, y)| x != y)?;
    let b = old.len()
        - old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .position(|(x, y)| x != y)?;
    Some((a, b))
}

/// A scan's step over the per-TID keys `tks` of one leaf entry of a deduplicating tree, in
/// scan order: keys `skip` rejects are passed over, the others are pushed onto `batch`
/// (with an empty value) unless the entry is `dead`, until `stop` accepts one. Returns true
/// when it did: the scan has reached its bound.
fn push_per_tid(
    tks: impl IntoIterator<Item = Vec<u8>>,
    dead: bool,
    skip: impl Fn(&[u8]) -> bool,
    stop: impl Fn(&[u8]) -> bool,
    batch: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> bool {
    for tk in tks {
        if skip(&tk) {
            continue;
        }
        if stop(&tk) {
            return true;
        }
        if !dead {
            batch.push((tk, Vec::new()));
        }
    }
    false
}
