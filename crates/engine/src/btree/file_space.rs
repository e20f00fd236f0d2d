//! The file-space pages of an InnoDB tablespace as pages of the buffer pool: the space
//! header with its extent descriptors (`FSP_HDR`, page 0), the change buffer's bitmap
//! (`IBUF_BITMAP`, page 1) and the file segment inodes (`INODE`, page 2) that every
//! file-per-table tablespace starts with (MariaDB 10.11 fsp0fsp.cc `fsp_header_init`;
//! fsp0types.h `FSP_XDES_OFFSET`, `FSP_IBUF_BITMAP_OFFSET`, `FSP_FIRST_INODE_PAGE_NO`).
//!
//! What is modelled is their traffic, not their content: the preset keeps its free-space
//! state in memory (`page::segment`), and these pages carry the reads and writes InnoDB
//! spends on keeping that state in pages. A B-tree of the table touches them as
//! MariaDB 10.11's B-tree does:
//! - a page allocated for a split or a new root, and a page a merge frees, change the
//!   extent descriptor on `FSP_HDR` and the segment's inode (`fseg_alloc_free_page_low`,
//!   `fseg_free_page_low` → `fseg_inode_get`, `xdes_get_descriptor_with_space_hdr`);
//! - every pessimistic insert (a split) and pessimistic delete (a merge attempt) reserves
//!   free extents first, which reads `FSP_HDR` without changing it (btr0cur.cc
//!   `btr_cur_pessimistic_insert` / `btr_cur_pessimistic_delete` →
//!   `fsp_reserve_free_extents` → `fsp_get_header`);
//! - a secondary-index leaf split sets both halves' free bits in `IBUF_BITMAP`
//!   (btr0btr.cc `btr_page_split_and_insert` → `ibuf_update_free_bits_for_two_pages_low`),
//!   and a secondary-index leaf merge lowers the surviving page's bits when it is left
//!   with less than 4/32 of a page free (`btr_compress` → `ibuf_update_free_bits_if_full`;
//!   ibuf0ibuf.inl `ibuf_index_page_calc_free_bits`: 3 from 4/32 of the page on).
//!
//! fsp0fsp.cc and ibuf0ibuf.cc fetch these pages with `buf_page_get_gen`, which in 10.11
//! never moves a page in the LRU list (only callers that call
//! `buf_page_make_young_if_needed` do, buf0buf.cc), so every touch here is a
//! [`BufferPool::fetch_write_fixed`] / [`BufferPool::fetch_read_fixed`]: a page read in
//! enters at the midpoint and drifts to the tail however often it is used; there the
//! page cleaner's LRU batch writes it, and, changed again before it can be evicted, it is
//! written again at the next batch (read again only when it was evicted meanwhile). Both
//! MariaDB and the preset write these pages some twenty times as often as they read them
//! (docs/fidelity.md, "File-space pages in the pool": 0.07 pages of each kind written per
//! transaction at `sweep` oltp_read_write).
//!
//! Not modelled: the free bits that optimistic inserts and deletes change when a leaf's
//! free space crosses a 1/32-page step near full (btr0cur.cc
//! `btr_cur_optimistic_insert` → `ibuf_update_free_bits_if_full`,
//! `btr_cur_optimistic_delete` → `ibuf_update_free_bits_low`); the redo InnoDB writes
//! for these pages (a few bytes per change); `XDES` pages past the first 256 MiB of a
//! tablespace (a table here keeps one descriptor page, `FSP_HDR`); the sorted build's
//! allocations.
//!
//! The undo log's relation (MariaDB's system tablespace, with `innodb_undo_tablespaces=0`,
//! 10.11's default) has a `FileSpace` too (`clustered::undo_log`): every undo page
//! allocated or freed changes its `FSP_HDR` and `INODE` (trx0undo.cc
//! `trx_undo_seg_create` → `fseg_create`, `trx_undo_add_page` →
//! `fseg_alloc_free_page_general`, `trx_undo_free_page` / `trx_purge_free_segment` →
//! `fseg_free_page` / `fseg_free_step`).
//!
//! # Invariants
//! The relation has exactly three blocks, `FSP_HDR_BLOCK`, `IBUF_BITMAP_BLOCK` and
//! `INODE_BLOCK`, each all zeros on the device (never written) or a page of its type whose
//! `aux` word counts the changes made to it (wrapping), repeated in its last 4 bytes.
//!
//! # Locking
//! A touch holds the page's latch only for the touch (exclusive to change it, shared to
//! read it), with tree pages latched: these pages come last in the lock order, and no one
//! waits for a tree page while holding one.
//!
//! # Crash safety
//! No WAL record names these pages, and nothing is read from them: a change notes the WAL
//! insert position as the page's oldest change, so checkpoints flush them as InnoDB's
//! flush list does. A page found torn or misdirected at open ([`FileSpace::open`]) is
//! rebuilt in the pool, its content being the preset's in-memory state.

use crate::buffer::BufferPool;
use crate::device::{file_ids, FileId};
use crate::error::{Error, Result, StorageError};
use crate::page::{self, PageId};
use std::sync::Arc;

/// Block of the space header and the first extent descriptors (InnoDB `FSP_XDES_OFFSET`,
/// page 0, `FIL_PAGE_TYPE_FSP_HDR`).
pub const FSP_HDR_BLOCK: u32 = 0;
/// Block of the change buffer bitmap (InnoDB `FSP_IBUF_BITMAP_OFFSET`, page 1,
/// `FIL_PAGE_IBUF_BITMAP`).
pub const IBUF_BITMAP_BLOCK: u32 = 1;
/// Block of the file segment inodes (InnoDB `FSP_FIRST_INODE_PAGE_NO`, page 2,
/// `FIL_PAGE_INODE`).
pub const INODE_BLOCK: u32 = 2;

/// Page type of the space header page (InnoDB's `FIL_PAGE_TYPE_FSP_HDR`, 8).
pub const PAGE_TYPE_FSP_HDR: u8 = 8;
/// Page type of the change buffer bitmap page (InnoDB's `FIL_PAGE_IBUF_BITMAP` is 5, the
/// undo page type here; 9 instead).
pub const PAGE_TYPE_IBUF_BITMAP: u8 = 9;
/// Page type of the inode page (InnoDB's `FIL_PAGE_INODE`, 3).
pub const PAGE_TYPE_INODE: u8 = 3;

/// Bytes of the trailer: the change count again, in the page's last bytes (the special
/// space), so that a write torn after its first sectors fails the checksum, as InnoDB's
/// FIL trailer makes a torn page detectable (`FIL_PAGE_END_LSN_OLD_CHKSUM`).
const TRAILER_BYTES: usize = 4;

/// The three pages' types, indexed by block (`FSP_HDR_BLOCK`, `IBUF_BITMAP_BLOCK`,
/// `INODE_BLOCK`).
pub const PAGE_TYPES: [u8; 3] = [PAGE_TYPE_FSP_HDR, PAGE_TYPE_IBUF_BITMAP, PAGE_TYPE_INODE];

/// The blocks of the relation with their page types, in block order.
fn pages() -> impl Iterator<Item = (u32, u8)> {
    (0u32..).zip(PAGE_TYPES)
}

/// The file-space pages of one table's tablespace, in a relation of their own. See the
/// module doc.
pub struct FileSpace {
    pool: Arc<BufferPool>,
    rel: FileId,
}

impl std::fmt::Debug for FileSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSpace").field("rel", &self.rel).finish()
    }
}

impl FileSpace {
    /// Creates the relation and its three pages, dirty in the pool (InnoDB
    /// `fsp_header_init` at CREATE TABLE).
    ///
    /// Errors: store and pool errors.
    pub fn create(pool: Arc<BufferPool>) -> Result<FileSpace> {
        let rel = pool.store().create_relation()?;
        for (block, page_type) in pages() {
            let mut g = pool.new_page(rel)?;
            if g.page_id().block != block {
                return Err(Error::corrupted(format!(
                    "file-space relation {rel}: a new relation's page {} is not block {block}",
                    g.page_id().block
                )));
            }
            page::init_page(g.data_mut(), page_type, TRAILER_BYTES);
            g.note_logged(pool.wal().insert_lsn());
            // A page initialized since its last write goes home without the doublewrite
            // area, as InnoDB's pages initialized by `fsp_header_init` do (REINIT).
            g.note_reinit();
        }
        Ok(FileSpace { pool, rel })
    }

    /// Opens the file-space pages of relation `rel` after a restart: the relation is made
    /// to hold its three blocks (a crash may have left it shorter: it is never named by
    /// the WAL), and each page is read; one found never written (zeros), torn or
    /// misdirected is rebuilt dirty in the pool (InnoDB reads page 0 of every tablespace
    /// it opens, `fil_node_open_file`; its doublewrite buffer restores a torn one, here
    /// the content is the in-memory state).
    ///
    /// Errors: [`Error::InvalidConfig`] for an id that is not a relation file; store and
    /// pool errors other than a damaged page.
    pub fn open(pool: Arc<BufferPool>, rel: FileId) -> Result<FileSpace> {
        if !file_ids::is_relation(rel) {
            return Err(Error::InvalidConfig(format!(
                "file-space relation {rel} is not a relation file"
            )));
        }
        pool.store().ensure_block(PageId::new(rel, INODE_BLOCK))?;
        for (block, page_type) in pages() {
            let id = PageId::new(rel, block);
            let whole = match pool.fetch_read_fixed(id) {
                Ok(g) => page::page_type(g.data()) == page_type,
                Err(StorageError::ChecksumMismatch { .. } | StorageError::Corrupted { .. }) => {
                    false
                }
                Err(e) => return Err(e.into()),
            };
            if !whole {
                let mut g = pool.fetch_for_overwrite(id)?;
                page::init_page(g.data_mut(), page_type, TRAILER_BYTES);
                g.note_logged(pool.wal().insert_lsn());
                g.note_reinit();
            }
        }
        Ok(FileSpace { pool, rel })
    }

    /// The relation holding the three pages.
    pub fn rel(&self) -> FileId {
        self.rel
    }

    /// Changes page `block` (exclusive latch, no LRU move; counts the change in its `aux`
    /// word).
    fn change(&self, block: u32) -> Result<()> {
        let mut g = self.pool.fetch_write_fixed(PageId::new(self.rel, block))?;
        let data = g.data_mut();
        let n = page::aux(data).wrapping_add(1);
        page::set_aux(data, n);
        let end = data.len();
        data[end - TRAILER_BYTES..].copy_from_slice(&n.to_le_bytes());
        g.note_logged(self.pool.wal().insert_lsn());
        Ok(())
    }

    /// A page of one of the tablespace's segments was allocated or freed: its extent
    /// descriptor (`FSP_HDR`) and its segment's inode (`INODE`) change.
    ///
    /// Errors: pool errors.
    pub fn page_allocated_or_freed(&self) -> Result<()> {
        self.change(FSP_HDR_BLOCK)?;
        self.change(INODE_BLOCK)
    }

    /// A pessimistic insert or delete reserves free extents: `FSP_HDR` is read, shared,
    /// without an LRU move.
    ///
    /// Errors: pool errors.
    pub fn extents_reserved(&self) -> Result<()> {
        self.pool
            .fetch_read_fixed(PageId::new(self.rel, FSP_HDR_BLOCK))?;
        Ok(())
    }

    /// A secondary-index leaf's free bits changed: `IBUF_BITMAP` changes.
    ///
    /// Errors: pool errors.
    pub fn free_bits_changed(&self) -> Result<()> {
        self.change(IBUF_BITMAP_BLOCK)
    }

    /// Whether a leaf left with `free_bytes` free has free bits below 3 (InnoDB
    /// `ibuf_index_page_calc_free_bits`: `free / (page / 32)`, 3 made 2, capped at 3).
    pub fn free_bits_below_max(&self, free_bytes: usize) -> bool {
        free_bytes < 4 * self.pool.store().page_size().bytes() / 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::ReplacerConfig;
    use crate::storage::{Storage, StorageConfig};

    /// A pool of `frames` with InnoDB's midpoint LRU, an access of an old page making it
    /// young at once (`innodb_old_blocks_time` 0).
    fn storage(frames: usize) -> Storage {
        let mut cfg = StorageConfig::without_background(frames);
        cfg.buffer_pool.replacer = ReplacerConfig::LruMidpoint {
            old_pct: 37,
            old_blocks_time_ms: 0,
            old_min_len: 8,
        };
        Storage::open(cfg).unwrap()
    }

    /// Pages touched on every round drift out of the pool all the same, are written
    /// there dirty and read again, where a page fetched as often with an LRU access stays
    /// (fsp0fsp.cc's `buf_page_get_gen` without `buf_page_make_young_if_needed`).
    #[test]
    fn touched_pages_are_not_moved_in_the_lru_and_are_read_again_after_eviction() {
        let s = storage(64);
        let fs = FileSpace::create(s.pool().clone()).unwrap();
        let rel = s.store().create_relation().unwrap();
        let control = s.pool().new_page(rel).unwrap().page_id();
        s.pool().flush_all().unwrap();
        let round = || {
            // A page streams through the pool each round, written when it is evicted.
            let mut g = s.pool().new_page(rel).unwrap();
            g.data_mut()[crate::page::PAGE_HEADER_BYTES] = 1;
            drop(g);
            fs.page_allocated_or_freed().unwrap();
            fs.extents_reserved().unwrap();
            s.pool().fetch_write(control).unwrap().data_mut()[crate::page::PAGE_HEADER_BYTES] = 2;
        };
        // Until the pool is full and its old sublist formed, the first pages may reach the
        // tail young (an access moves a young page only when it is far from the head).
        (0..100).for_each(|_| round());
        let (own, ctrl) = (s.pool().rel_io(fs.rel()), s.pool().rel_io(rel));
        let types = |t| s.pool().page_type_io(t).pages_read;
        let (hdr, inode) = (types(PAGE_TYPE_FSP_HDR), types(PAGE_TYPE_INODE));
        (0..200).for_each(|_| round());
        let own_after = s.pool().rel_io(fs.rel());
        assert!(
            own_after.blks_read >= own.blks_read + 4
                && own_after.blks_written >= own.blks_written + 4,
            "the file-space pages were evicted dirty and read again: {own:?} → {own_after:?}"
        );
        assert_eq!(
            types(PAGE_TYPE_FSP_HDR) - hdr,
            types(PAGE_TYPE_INODE) - inode,
            "FSP_HDR and INODE are touched together"
        );
        assert_eq!(types(PAGE_TYPE_IBUF_BITMAP), 0);
        assert_eq!(
            s.pool().rel_io(rel).blks_read,
            ctrl.blks_read,
            "the control page, accessed as often, stayed in the pool"
        );
        // Every change was counted on the page (FSP_HDR: 300 allocations or frees).
        s.pool().flush_all().unwrap();
        for (block, n) in [
            (FSP_HDR_BLOCK, 300),
            (IBUF_BITMAP_BLOCK, 0),
            (INODE_BLOCK, 300),
        ] {
            let g = s.pool().fetch_read(PageId::new(fs.rel(), block)).unwrap();
            assert_eq!(page::aux(g.data()), n, "block {block}");
        }
    }

    /// A torn page found at open is rebuilt, not an error, and written whole at the next
    /// flush; a relation id out of range is refused.
    #[test]
    fn open_rebuilds_a_torn_page_and_refuses_a_non_relation() {
        let s = storage(64);
        let fs = FileSpace::create(s.pool().clone()).unwrap();
        fs.free_bits_changed().unwrap();
        s.pool().flush_all().unwrap();
        let rel = fs.rel();
        let id = PageId::new(rel, IBUF_BITMAP_BLOCK);
        assert!(s.pool().discard(id));
        let size = s.store().page_size().bytes();
        s.store()
            .vfs()
            .write_at(rel, size as u64, &vec![0xA5; size])
            .unwrap();
        let again = FileSpace::open(s.pool().clone(), rel).unwrap();
        {
            let g = s.pool().fetch_read(id).unwrap();
            assert_eq!(page::page_type(g.data()), PAGE_TYPE_IBUF_BITMAP);
            assert_eq!(page::aux(g.data()), 0, "rebuilt, its count restarted");
        }
        again.free_bits_changed().unwrap();
        s.pool().flush_all().unwrap();
        assert!(s.pool().discard(id));
        let mut buf = vec![0u8; size];
        s.store().read_page(id, &mut buf).unwrap();
        assert_eq!(
            page::aux(&buf),
            1,
            "the rebuilt page is written and verifies"
        );
        let err = FileSpace::open(s.pool().clone(), u32::MAX).unwrap_err();
        assert!(err.to_string().contains("not a relation file"), "{err}");
    }

    #[test]
    fn free_bits_fall_below_three_under_four_32nds_of_a_page() {
        let s = storage(16);
        let fs = FileSpace::create(s.pool().clone()).unwrap();
        let page = s.store().page_size().bytes();
        assert!(fs.free_bits_below_max(page * 4 / 32 - 1));
        assert!(!fs.free_bits_below_max(page * 4 / 32));
    }
}
