//! The page store: one device file per relation (as PostgreSQL's relfilenode files and
//! InnoDB's file-per-table tablespaces), fixed-size pages, allocation by extension and
//! reuse of freed pages.
//!
//! # Invariants
//! 1. Block `b` of relation `r` lives at byte `b × page_size` of file `r`.
//! 2. A block is handed out by [`PageStore::allocate_page`],
//!    [`PageStore::allocate_page_near`] or [`PageStore::allocate_fragment_page`] once until
//!    it is freed. `allocate_page` reuses freed blocks lowest first before the relation
//!    grows (PostgreSQL nbtree recycles deleted pages through the FSM);
//!    `allocate_page_near` chooses as an InnoDB file segment does and
//!    `allocate_fragment_page` as InnoDB's fragment extents do (`page::segment`); both may
//!    take a block past the end, the blocks skipped becoming free blocks of the relation.
//! 3. `n_blocks` may exceed the file's length: an allocated page reaches the device only
//!    when the buffer pool first writes it (PostgreSQL 15 instead writes a zero page at
//!    extension, `smgrextend`; set `zero_fill_on_extend` for that cost).
//!
//! # Locking
//! The relation map is behind an `RwLock`; each relation's free list and extent counts
//! behind its own mutex, under which `n_blocks` (atomic, read without it) changes. No lock
//! is held across device I/O.
//!
//! # Crash safety
//! The free list is in memory: after a restart, freed pages are not reused (they leak, no
//! data is lost); `n_blocks` is recovered from the file length at open (a torn extension's
//! partial last page counted, and read as torn), and redo extends relations to the blocks
//! the WAL names ([`PageStore::ensure_block`]): relation extension is not logged.

use super::segment::FreeSpace;
use super::{finish_for_write, verify, PageId, PageSize};
use super::{StorageError, StorageResult};
use crate::device::{file_ids, FileId, Vfs};
use crate::stats::Metric;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

struct Relation {
    /// Blocks allocated; changed under `free`, read without it.
    n_blocks: AtomicU32,
    free: Mutex<FreeSpace>,
}

impl Relation {
    fn new(n_blocks: u32, extent_pages: u32) -> Arc<Relation> {
        Arc::new(Relation {
            n_blocks: AtomicU32::new(n_blocks),
            free: Mutex::new(FreeSpace::new(n_blocks, extent_pages)),
        })
    }
}

/// Blocks of an InnoDB extent for `page_size` (fsp0types.h `FSP_EXTENT_SIZE`: 1 MiB of
/// pages up to 16 KiB pages, 64 pages above).
pub(crate) fn extent_pages(page_size: PageSize) -> u32 {
    let bytes = page_size.bytes() as u32;
    if bytes <= 16384 {
        (1 << 20) / bytes
    } else {
        64
    }
}

/// Pages of relations on a [`Vfs`]. See the module doc.
pub struct PageStore {
    vfs: Arc<Vfs>,
    page_size: PageSize,
    zero_fill_on_extend: bool,
    rels: RwLock<HashMap<FileId, Arc<Relation>>>,
    next_rel: AtomicU32,
}

impl PageStore {
    /// Opens the store on `vfs`, finding the relations already there (block counts from
    /// file lengths, a partial last page counted).
    ///
    /// Errors: device errors listing or measuring files.
    pub fn open(
        vfs: Arc<Vfs>,
        page_size: PageSize,
        zero_fill_on_extend: bool,
    ) -> StorageResult<Self> {
        let mut rels = HashMap::new();
        let mut next = file_ids::FIRST_RELATION;
        for f in vfs
            .files()?
            .into_iter()
            .filter(|f| file_ids::is_relation(*f))
        {
            // A length that is not a whole number of pages is a torn extension (a crash kept
            // the first sectors of a page written past the end): the partial page counts,
            // and reads as torn until recovery restores it.
            let len = vfs.len_bytes(f)?;
            let n = len.div_ceil(page_size.bytes() as u64) as u32;
            rels.insert(f, Relation::new(n, extent_pages(page_size)));
            next = next.max(f + 1);
        }
        Ok(PageStore {
            vfs,
            page_size,
            zero_fill_on_extend,
            rels: RwLock::new(rels),
            next_rel: AtomicU32::new(next),
        })
    }

    /// Page size of this store.
    pub fn page_size(&self) -> PageSize {
        self.page_size
    }

    /// The file layer below.
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.vfs
    }

    /// Creates an empty relation and returns its file id.
    ///
    /// Errors: device errors creating the file.
    pub fn create_relation(&self) -> StorageResult<FileId> {
        let rel = self.next_rel.fetch_add(1, Ordering::Relaxed);
        if !file_ids::is_relation(rel) {
            return Err(StorageError::InvalidConfig(
                "relation file ids exhausted".into(),
            ));
        }
        self.vfs.create(rel)?;
        self.rels
            .write()
            .insert(rel, Relation::new(0, extent_pages(self.page_size)));
        Ok(rel)
    }

    /// Removes a relation and its file. The caller must have discarded its pages from the
    /// buffer pool first.
    ///
    /// Errors: device errors removing the file.
    pub fn drop_relation(&self, rel: FileId) -> StorageResult<()> {
        self.rels.write().remove(&rel);
        Ok(self.vfs.remove(rel)?)
    }

    /// Relations that exist, ascending.
    pub fn relations(&self) -> Vec<FileId> {
        let mut v: Vec<_> = self.rels.read().keys().copied().collect();
        v.sort_unstable();
        v
    }

    fn rel(&self, rel: FileId) -> StorageResult<Arc<Relation>> {
        self.rels
            .read()
            .get(&rel)
            .cloned()
            .ok_or(StorageError::NoSuchPage {
                page: PageId::new(rel, 0),
                reason: "no such relation",
            })
    }

    /// Number of blocks allocated in `rel` (PostgreSQL `RelationGetNumberOfBlocks`).
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation.
    pub fn n_blocks(&self, rel: FileId) -> StorageResult<u32> {
        Ok(self.rel(rel)?.n_blocks.load(Ordering::Acquire))
    }

    /// Allocates a page of `rel`: the lowest freed block, else a new block at the end.
    /// Counts `pages_allocated`; with `zero_fill_on_extend` an extension also writes a zero
    /// page (PostgreSQL 15 `smgrextend`).
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation; device errors.
    pub fn allocate_page(&self, rel: FileId) -> StorageResult<PageId> {
        let (block, extended) = self.allocate_by(rel, |free, n| free.take_lowest(n))?;
        if extended && self.zero_fill_on_extend {
            let zeros = vec![0u8; self.page_size.bytes()];
            self.vfs.write_at(rel, self.offset(block), &zeros)?;
        }
        Ok(PageId::new(rel, block))
    }

    /// Allocates a page of `rel` as InnoDB's file segment would for a page split whose
    /// new page follows block `hint` − 1 (fsp0fsp.cc `fseg_alloc_free_page_low` with
    /// `FSP_UP`; the rules are `page::segment`'s `FreeSpace::take_near`): the hint, a
    /// free block of its extent, a new extent when the segment is short of free blocks,
    /// or the first free block of the oldest extent not full. Counts `pages_allocated`;
    /// never writes (InnoDB's `fsp_init_file_page` initializes the page in the buffer
    /// pool).
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation.
    pub fn allocate_page_near(&self, rel: FileId, hint: u32) -> StorageResult<PageId> {
        let (block, _) = self.allocate_by(rel, |free, n| free.take_near(hint, n))?;
        Ok(PageId::new(rel, block))
    }

    /// Allocates a fragment page of `rel` as InnoDB's `fsp_alloc_free_page` does for a
    /// segment under half an extent, with `hint` the block it would like (fsp0fsp.cc; the
    /// rules are `page::segment`'s `FreeSpace::take_fragment`): the hint's extent when it is
    /// a fragment extent, else the first fragment extent's first free block, else a free
    /// extent. The undo relation allocates its pages so (trx0undo.cc
    /// `trx_undo_seg_create` with hint 0, `trx_undo_add_page` with the last page + 1).
    /// Counts `pages_allocated`; never writes.
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation.
    pub fn allocate_fragment_page(&self, rel: FileId, hint: u32) -> StorageResult<PageId> {
        let (block, _) = self.allocate_by(rel, |free, n| free.take_fragment(hint, n))?;
        Ok(PageId::new(rel, block))
    }

    /// One allocation in `rel`, counted as `pages_allocated`: runs `pick` on the relation's
    /// free space and block count under its lock; returns the block and whether it lies
    /// past the old end.
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation.
    fn allocate_by(
        &self,
        rel: FileId,
        pick: impl FnOnce(&mut FreeSpace, &mut u32) -> u32,
    ) -> StorageResult<(u32, bool)> {
        let r = self.rel(rel)?;
        self.vfs.nvme().stats().add(Metric::pages_allocated, 1);
        let mut free = r.free.lock();
        let old = r.n_blocks.load(Ordering::Acquire);
        let mut n = old;
        let b = pick(&mut free, &mut n);
        r.n_blocks.store(n, Ordering::Release);
        Ok((b, b >= old))
    }

    /// Makes `id` an allocated block of its relation, creating the relation and growing
    /// `n_blocks` past `id.block` as needed. Redo does this for pages the WAL names beyond
    /// the relation's durable end (relation extension is not logged: the first record of a
    /// new page rebuilds it or carries its image, as PostgreSQL's `XLogReadBufferExtended`
    /// extends the relation during recovery). Blocks skipped over read as zeros.
    ///
    /// Errors: [`StorageError::InvalidConfig`] for an id that is not a relation file; device
    /// errors creating the file.
    pub fn ensure_block(&self, id: PageId) -> StorageResult<()> {
        if !file_ids::is_relation(id.rel) {
            return Err(StorageError::InvalidConfig(format!(
                "{id}: file {} is not a relation file",
                id.rel
            )));
        }
        let r = match self.rel(id.rel) {
            Ok(r) => r,
            Err(_) => {
                self.vfs.create(id.rel)?;
                let mut rels = self.rels.write();
                self.next_rel.fetch_max(id.rel + 1, Ordering::AcqRel);
                rels.entry(id.rel)
                    .or_insert_with(|| Relation::new(0, extent_pages(self.page_size)))
                    .clone()
            }
        };
        let mut free = r.free.lock();
        let old = r.n_blocks.load(Ordering::Acquire);
        if id.block >= old {
            free.extended(old, id.block + 1);
            r.n_blocks.store(id.block + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Whether block `id.block` of its relation is free: freed and not allocated again, or
    /// reserved past the last used block of an extent ([`PageStore::allocate_page_near`])
    /// and never used. Such a block holds no page the WAL describes.
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation.
    pub fn is_free(&self, id: PageId) -> StorageResult<bool> {
        let r = self.rel(id.rel)?;
        let free = r.free.lock();
        Ok(free.is_free(id.block, r.n_blocks.load(Ordering::Acquire)))
    }

    /// Returns a page to its relation's free list. The caller must have discarded it from
    /// the buffer pool.
    ///
    /// Errors: [`StorageError::NoSuchPage`] for an unknown relation or a block never allocated.
    pub fn free_page(&self, id: PageId) -> StorageResult<()> {
        let r = self.rel(id.rel)?;
        if id.block >= r.n_blocks.load(Ordering::Acquire) {
            return Err(StorageError::NoSuchPage {
                page: id,
                reason: "freeing a block never allocated",
            });
        }
        let mut free = r.free.lock();
        // Freeing a free block again changes nothing (the free list is a set).
        if !free.blocks.contains(&id.block) {
            free.free(id.block);
        }
        Ok(())
    }

    fn offset(&self, block: u32) -> u64 {
        block as u64 * self.page_size.bytes() as u64
    }

    /// Reads page `id` into `buf` (one page) and verifies it ([`super::verify`]). A block
    /// allocated but never written reads as zeros without device I/O.
    ///
    /// Errors: [`StorageError::NoSuchPage`] past the relation's end; [`StorageError::ChecksumMismatch`] or
    /// [`StorageError::Corrupted`] for a damaged page; device errors.
    pub fn read_page(&self, id: PageId, buf: &mut [u8]) -> StorageResult<()> {
        let r = self.rel(id.rel)?;
        if id.block >= r.n_blocks.load(Ordering::Acquire) {
            return Err(StorageError::NoSuchPage {
                page: id,
                reason: "past the end of the relation",
            });
        }
        let off = self.offset(id.block);
        let len = self.vfs.len_bytes(id.rel)?;
        if off >= len {
            buf.fill(0);
            return Ok(());
        }
        if off + buf.len() as u64 > len {
            // Torn extension: what made it, then zeros; verification tells.
            let have = (len - off) as usize;
            buf[have..].fill(0);
            self.vfs.read_at(id.rel, off, &mut buf[..have])?;
            return verify(buf, id);
        }
        self.vfs.read_at(id.rel, off, buf)?;
        verify(buf, id)
    }

    /// Writes `copy` (a private copy of the page) to `id`'s home location after stamping its
    /// identity and checksum.
    ///
    /// Errors: device errors.
    pub fn write_page(&self, id: PageId, copy: &mut [u8]) -> StorageResult<()> {
        finish_for_write(copy, id);
        Ok(self.vfs.write_at(id.rel, self.offset(id.block), copy)?)
    }

    /// Syncs the files of `rels` (fsync after a batch of writes or at checkpoint).
    ///
    /// Errors: device errors.
    pub fn sync_relations(&self, rels: impl IntoIterator<Item = FileId>) -> StorageResult<()> {
        for rel in rels {
            self.vfs.sync(rel)?;
        }
        Ok(())
    }
}
