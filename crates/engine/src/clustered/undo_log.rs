//! Undo logs and undo segments: a transaction's insert and update undo segments in its
//! rollback segment, their allocation (a segment from the rollback segment's cache or a new
//! one, new pages as records fill them), the records appended to them, reading a record by
//! its roll pointer, and the finish of both segments at commit or rollback, all in one
//! relation that goes through the buffer pool and the WAL like any other (MariaDB 10.11
//! storage/innobase/trx/trx0undo.cc `trx_undo_assign_low`, `trx_undo_reuse_cached`,
//! `trx_undo_create`, `trx_undo_add_page`, `trx_undo_set_state_at_finish`,
//! `trx_undo_seg_free`; trx0trx.cc `trx_assign_rseg_low`,
//! `trx_write_serialisation_history`). [`UndoSpace`] is a database's undo space: its
//! memory state is rebuilt at startup by `undo_startup` ([`UndoSpace::open`]) and its
//! history lists truncated by `purge` ([`UndoSpace::truncate_history`]). Page layouts:
//! `undo_page`, `rseg`; the record format and roll pointers: `undo_rec`; the WAL records:
//! `undo_wal`.
//!
//! # Segments and reuse (trx0undo.cc)
//! Each transaction writes insert undo and update undo into segments of its own, in its
//! rollback segment: a cached one of that rollback segment when there is one
//! (`trx_undo_reuse_cached`: a new log header on its page; an insert segment's page starts
//! over) or a new one (`trx_undo_create`). At commit (`trx_undo_set_state_at_finish`) a
//! one-page segment less than 3/4 full (TRX_UNDO_PAGE_REUSE_LIMIT) is cached in its rollback
//! segment. Insert undo is then no longer needed: a segment that is not cached is freed.
//! Update undo joins the history list for purge; its segment, cached or not, is freed when
//! history truncation removes the last log on its first page and no later transaction
//! started a log on that page. New undo pages are fragment pages of the undo relation, as
//! InnoDB's are of the system tablespace ([`BufferPool::new_fragment_page`]: a new
//! segment's page with hint 0, a segment's next page after its last), so the segments a
//! truncation frees together are replaced from other extents, and their pages wait in the
//! pool as freed pages until eviction or their extent's next turn (docs/innodb.md, "Undo
//! pages in the system tablespace's fragment extents").
//!
//! # Invariants
//! 1. A roll pointer stays valid until the log holding it is truncated from the history,
//!    which happens only after purge processed it (`purged`) and no transaction holds its
//!    rollback segment (MariaDB's `rseg.is_referenced()` check).
//! 2. An undo slot is in use exactly while its segment is active, cached, or (insert undo)
//!    being freed; a to-purge update segment gives its slot back at commit.
//! 3. Each rollback segment's history list is in commit order: newest first, truncated
//!    from the oldest end only.
//! 4. The header page and the in-memory `RsegState` change together, under the `Rseg` mutex.
//!
//! # Locking
//! Lock order: `Rseg` mutex → its header page's content lock → undo page content locks (the
//! log's first page, then the page of its history neighbour). A thread holds more than one
//! undo page latch only under the `Rseg` mutex; appenders and readers hold one page latch at
//! a time and take no mutex while holding it. No page latch is held across a wait for a
//! transaction.
//!
//! # Crash safety
//! Every change to a rollback segment header or an undo page is WAL-logged (UNDO records:
//! `APPEND`, `WRITE`, `RSEG_INIT`) before the page can be written; `undo_wal::redo_block`
//! replays them (block formats and what redo does not reproduce: see `undo_wal`). The
//! states of a transaction's insert and update segments and its history list entry change
//! in one record ([`UndoSpace::finish`]), which is the commit (the engine flushes the WAL
//! past it before the commit returns; there is no commit record, as in InnoDB), so a
//! segment found active after a crash belongs to a transaction that did not commit.
//! [`UndoSpace::open`] rebuilds the in-memory state after redo: slots, caches and
//! history lists from the rollback segment header pages and the segments' first pages, a
//! segment's pages through each later page's predecessor (`aux`), the history's records
//! from the undo pages; the engine rolls back the active segments' transactions
//! (`ClusteredAm::open`). Undo pages freed before a crash leak (the free page list is in
//! memory), as MariaDB's `trx_purge_free_segment` notes for a crash mid-free.

use super::rseg::{self, Cached, FilAddr, HistLog, Rseg, RsegInfo, RsegState, FIL_NULL};
use super::undo_page::{
    format_undo_page, log_header, log_start, state, LOG_HEADER_SPACE_BYTES, LOG_HIST_NEXT,
    LOG_HIST_PREV, LOG_NEXT_LOG, LOG_TRX_NO, SEG_FIRST_LOG, SEG_HEADER_BYTES, SEG_KIND,
    SEG_LAST_LOG, SEG_LAST_PAGE, SEG_N_PAGES, SEG_RSEG, SEG_SLOT, SEG_STATE,
};
use super::undo_rec::{record_on_page, RollPtr, UndoRecord};
use super::undo_wal::{info, put, put_forced, put_log_header, WriteLog};
use crate::btree::FileSpace;
use crate::buffer::{log_change, BufferPool, PageFix, ReadPageGuard, WritePageGuard};
use crate::device::FileId;
use crate::error::TxnError;
use crate::error::{Error, Result, StorageResult};
use crate::mvcc::TrxId;
use crate::page::{get_u16, hole, set_hole, PageId, OFF_AUX, OFF_LOWER, PAGE_HEADER_BYTES};
use crate::wal::{rmgr, RecordBuilder, Wal};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Where a committed update undo log is: its rollback segment and its log header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRef {
    /// Rollback segment id.
    pub rseg: u8,
    /// The segment's first page, holding the log header.
    pub page: u32,
    /// Offset of the log header on it.
    pub offset: u16,
    /// Its number in its rollback segment's history (1 for the first log committed there).
    pub seq: u64,
}

/// One transaction's undo segment (insert or update).
#[derive(Debug, Default)]
pub struct UndoSegment {
    /// Pages, the segment's first page (with the segment header) first.
    pub pages: Vec<u32>,
    /// Roll pointers of the records written, in order.
    pub records: Vec<RollPtr>,
    /// Its undo slot in the rollback segment header.
    pub slot: u16,
    /// Offset of the transaction's log header on the first page.
    pub log_offset: u16,
}

/// A transaction's undo state in one database: its rollback segment and its insert and
/// update segments (trx_t::rsegs).
#[derive(Debug, Default)]
pub struct TrxUndo {
    /// The rollback segment assigned at the first undo record (None before).
    pub rseg: Option<u8>,
    /// Insert undo.
    pub insert: UndoSegment,
    /// Update undo.
    pub update: UndoSegment,
    /// Roll pointers of every record written, in order, for rollback (each undo record
    /// names its table).
    pub all: Vec<RollPtr>,
}

/// Counts of the undo log (innodb_metrics-like).
#[derive(Default)]
pub struct UndoCounters {
    /// Undo records written.
    pub records_written: AtomicU64,
    /// Undo pages allocated (new or reused from the free list); header pages not included.
    pub pages_allocated: AtomicU64,
    /// Undo pages freed.
    pub pages_freed: AtomicU64,
    /// Cached segments reused (trx_undo_reuse_cached).
    pub segments_reused: AtomicU64,
    /// Segments created (trx_undo_create).
    pub segments_created: AtomicU64,
    /// Segments freed (at commit for insert undo, by history truncation for update undo).
    pub segments_freed: AtomicU64,
    /// Logs removed from history lists by truncation.
    pub logs_truncated: AtomicU64,
    /// History truncations (each latches every rollback segment header): one after each
    /// purge batch, and one at the end of `gc`.
    pub truncations: AtomicU64,
    /// Purge batches run (trx0purge.cc `trx_purge`, innodb_metrics `purge_invoked`), counted
    /// by `ClusteredAm`'s purge coordinator and `gc`.
    pub purge_batches: AtomicU64,
    /// Rollback segments history truncation took out of assignment because it could remove
    /// none of their purged logs (trx0purge.cc `free_history_rseg` →
    /// `rseg.set_skip_allocation()`, MDEV-33213).
    pub rseg_skips: AtomicU64,
}

/// The undo space of a database: N rollback segments and their undo pages in one relation
/// (InnoDB keeps them in the system tablespace, or undo tablespaces).
pub struct UndoSpace {
    pub(super) rel: FileId,
    pub(super) pool: Arc<BufferPool>,
    pub(super) wal: Arc<Wal>,
    pub(super) rsegs: Box<[Rseg]>,
    pub(super) next_rseg: AtomicU32,
    /// The rollback segment history truncation may take out of assignment next
    /// (`purge_sys.skipped_rseg`): one at a time, in turn.
    pub(super) skipped_rseg: AtomicU32,
    pub(super) next_trx_no: AtomicU64,
    /// Counters.
    pub counters: UndoCounters,
    /// The file-space pages of the undo log's tablespace (MariaDB's system tablespace):
    /// every undo page allocated or freed changes its header and inode pages, as
    /// fsp0fsp.cc `fseg_alloc_free_page` / `fseg_free_page` do for an undo segment
    /// (`btree::file_space`). `None` for a database made before 2026-11-28.
    pub(super) file_space: Option<Arc<FileSpace>>,
}

const REUSE_LIMIT_NUM: usize = 3;
const REUSE_LIMIT_DEN: usize = 4;

impl UndoSpace {
    /// Creates the undo relation with `n_rsegs` rollback segment header pages
    /// (trx_rseg_header_create, at database creation).
    ///
    /// Errors: [`Error::InvalidConfig`] for 0 or more than 128 rollback segments; storage
    /// errors.
    pub fn create(pool: Arc<BufferPool>, wal: Arc<Wal>, n_rsegs: u8) -> Result<UndoSpace> {
        if !(1..=crate::design::MAX_ROLLBACK_SEGMENTS).contains(&n_rsegs) {
            return Err(Error::InvalidConfig(format!(
                "rollback_segments must be 1..=128, got {n_rsegs}"
            )));
        }
        let rel = pool.store().create_relation()?;
        let slots = rseg::n_slots(pool.store().page_size().bytes());
        let mut rsegs = Vec::with_capacity(n_rsegs as usize);
        for id in 0..n_rsegs {
            let mut g = pool.new_page(rel)?;
            rseg::init(g.data_mut());
            let rec =
                RecordBuilder::new(rmgr::UNDO, info::RSEG_INIT).block(g.page_id(), true, &[id]);
            log_change(&wal, &rec, &mut [&mut g])?;
            rsegs.push(Rseg {
                page: g.page_id().block,
                refs: AtomicU32::new(0),
                skip: AtomicBool::new(false),
                state: Mutex::new(RsegState {
                    slots_used: vec![false; slots],
                    insert_cached: Vec::new(),
                    update_cached: Vec::new(),
                    history: VecDeque::new(),
                    history_size: 0,
                    max_trx_id: 0,
                    last_seq: 0,
                }),
            });
        }
        Ok(UndoSpace {
            rel,
            pool,
            wal,
            rsegs: rsegs.into_boxed_slice(),
            next_rseg: AtomicU32::new(0),
            skipped_rseg: AtomicU32::new(0),
            next_trx_no: AtomicU64::new(0),
            counters: UndoCounters::default(),
            file_space: None,
        })
    }

    pub(super) fn bad(&self, what: String) -> Error {
        Error::corrupted(format!("undo log (relation {}): {what}", self.rel))
    }

    /// The undo relation.
    pub fn rel(&self) -> FileId {
        self.rel
    }

    /// Number of rollback segments.
    pub fn n_rsegs(&self) -> usize {
        self.rsegs.len()
    }

    /// The header page of rollback segment `id`.
    pub fn rseg_header(&self, id: u8) -> PageId {
        PageId::new(self.rel, self.rsegs[id as usize].page)
    }

    /// What rollback segment `id` holds now.
    pub fn rseg_info(&self, id: u8) -> RsegInfo {
        let r = &self.rsegs[id as usize];
        let st = r.state.lock();
        RsegInfo {
            header_page: r.page,
            refs: r.refs.load(Ordering::Relaxed),
            slots_used: st.slots_used.iter().filter(|u| **u).count(),
            insert_cached: st.insert_cached.iter().map(|c| c.page).collect(),
            update_cached: st.update_cached.iter().map(|c| c.page).collect(),
            history_len: st.history.len(),
            history_size: st.history_size,
        }
    }

    /// One WAL record (rmgr UNDO, WRITE) for the writes noted in `logs`, block `i` being
    /// `guards[i]` (will_init when `logs[i].0`).
    pub(super) fn log_writes(
        &self,
        guards: &mut [&mut WritePageGuard<'_>],
        logs: &[(bool, WriteLog)],
    ) -> Result<()> {
        let mut rec = RecordBuilder::new(rmgr::UNDO, info::WRITE);
        for (g, (init, data)) in guards.iter().zip(logs) {
            rec = rec.block(g.page_id(), *init, data.as_bytes());
        }
        log_change(&self.wal, &rec, guards)?;
        Ok(())
    }

    /// trx_assign_rseg_low: the next rollback segment in turn that history truncation has
    /// not taken out of assignment, referenced by the caller until [`UndoSpace::release`].
    /// The reference is taken before the skip flag is read, and truncation sets the flag
    /// before it reads the references (both sequentially consistent), so a segment is never
    /// both assigned and truncated whole (trx_rseg_t::acquire_if_available, one
    /// compare-and-swap over the reference count and the SKIP bit). Only one segment is
    /// skipped at a time, and never the only one, so the loop ends.
    fn assign_rseg(&self) -> u8 {
        loop {
            let id = self.next_rseg.fetch_add(1, Ordering::Relaxed) as usize % self.rsegs.len();
            let rs = &self.rsegs[id];
            rs.refs.fetch_add(1, Ordering::SeqCst);
            if !rs.skip.load(Ordering::SeqCst) {
                return id as u8;
            }
            rs.refs.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// trx_undo_assign_low: gives `seg` a segment in rollback segment `r`, with a new log
    /// header for `trx_id`: a cached one (trx_undo_reuse_cached) or a new one
    /// (trx_undo_create → trx_undo_seg_create).
    fn assign_segment(
        &self,
        r: u8,
        seg: &mut UndoSegment,
        insert: bool,
        trx_id: TrxId,
    ) -> Result<()> {
        let rs = &self.rsegs[r as usize];
        let mut st = rs.state.lock();
        st.max_trx_id = st.max_trx_id.max(trx_id);
        let cached = if insert {
            st.insert_cached.pop()
        } else {
            st.update_cached.pop()
        };
        if let Some(c) = cached {
            let mut g = self.pool.fetch_write(PageId::new(self.rel, c.page))?;
            let (lower, upper) = hole(g.data());
            let prev_log = get_u16(g.data(), SEG_LAST_LOG);
            // An insert segment's old log is dead: its page starts over, keeping the
            // segment header (trx_undo_insert_header_reuse, before MariaDB 10.3).
            let (off, prev_log) = if insert {
                (SEG_FIRST_LOG, 0)
            } else {
                (lower as usize, prev_log)
            };
            if off < SEG_FIRST_LOG || off + LOG_HEADER_SPACE_BYTES > upper as usize {
                return Err(Error::corrupted(format!(
                    "{}: cached undo page free pointer {lower}",
                    g.page_id()
                )));
            }
            let mut w = WriteLog::default();
            if prev_log != 0 {
                put(
                    &mut g,
                    &mut w,
                    prev_log as usize + LOG_NEXT_LOG,
                    &(off as u16).to_le_bytes(),
                );
                let at = FilAddr {
                    page: c.page,
                    offset: prev_log,
                };
                if let Some(l) = st.log_mut(c.last_seq).filter(|l| l.at == at) {
                    l.has_next = true;
                }
            }
            put_log_header(&mut g, &mut w, off, &log_header(trx_id, off, prev_log));
            put(&mut g, &mut w, SEG_STATE, &state::ACTIVE.to_le_bytes());
            put(&mut g, &mut w, SEG_LAST_LOG, &(off as u16).to_le_bytes());
            put(&mut g, &mut w, OFF_LOWER, &log_start(off).to_le_bytes());
            self.log_writes(&mut [&mut g], &[(false, w)])?;
            self.counters
                .segments_reused
                .fetch_add(1, Ordering::Relaxed);
            seg.pages = vec![c.page];
            seg.slot = c.slot;
            seg.log_offset = off as u16;
            return Ok(());
        }
        let Some(slot) = st.slots_used.iter().position(|u| !u) else {
            return Err(Error::Txn(TxnError::TooManyConcurrentTransactions(
                format!(
                    "rollback segment {r} has no free undo slot (all {} in use)",
                    st.slots_used.len()
                ),
            )));
        };
        let slot = slot as u16;
        let mut h = self.pool.fetch_write(self.rseg_header(r))?;
        // `fseg_create` → `fseg_alloc_free_page_low` with hint 0 → `fsp_alloc_free_page`:
        // a fragment page of the system tablespace.
        let mut g = self.pool.new_fragment_page(self.rel, 0)?;
        let p = g.page_id().block;
        format_undo_page(g.data_mut(), true);
        let mut wg = WriteLog::default();
        let off = SEG_FIRST_LOG;
        let mut sh = [0u8; SEG_HEADER_BYTES];
        let at = |f: usize| f - SEG_STATE;
        sh[at(SEG_STATE)..at(SEG_STATE) + 2].copy_from_slice(&state::ACTIVE.to_le_bytes());
        sh[at(SEG_LAST_LOG)..at(SEG_LAST_LOG) + 2].copy_from_slice(&(off as u16).to_le_bytes());
        sh[at(SEG_KIND)] = if insert { 1 } else { 2 };
        sh[at(SEG_RSEG)] = r;
        sh[at(SEG_SLOT)..at(SEG_SLOT) + 2].copy_from_slice(&slot.to_le_bytes());
        sh[at(SEG_N_PAGES)..at(SEG_N_PAGES) + 4].copy_from_slice(&1u32.to_le_bytes());
        sh[at(SEG_LAST_PAGE)..at(SEG_LAST_PAGE) + 4].copy_from_slice(&p.to_le_bytes());
        put_forced(&mut g, &mut wg, SEG_STATE, &sh);
        put_forced(&mut g, &mut wg, off, &log_header(trx_id, off, 0));
        put_forced(&mut g, &mut wg, OFF_LOWER, &log_start(off).to_le_bytes());
        let mut wh = WriteLog::default();
        put(&mut h, &mut wh, rseg::slot_offset(slot), &p.to_le_bytes());
        self.log_writes(&mut [&mut h, &mut g], &[(false, wh), (true, wg)])?;
        st.slots_used[slot as usize] = true;
        self.counters
            .pages_allocated
            .fetch_add(1, Ordering::Relaxed);
        self.counters
            .segments_created
            .fetch_add(1, Ordering::Relaxed);
        // `trx_undo_seg_create` → `fseg_create`: the inode and the first page's extent.
        self.file_space_changed()?;
        seg.pages = vec![p];
        seg.slot = slot;
        seg.log_offset = off as u16;
        Ok(())
    }

    /// trx_undo_add_page: a new last page for `seg`, under its rollback segment's latch,
    /// noted in the segment header (TRX_UNDO_PAGE_LIST).
    fn add_page(&self, r: u8, seg: &mut UndoSegment) -> Result<u32> {
        let _st = self.rsegs[r as usize].state.lock();
        let mut h = self.pool.fetch_write(PageId::new(self.rel, seg.pages[0]))?;
        let prev = *seg.pages.last().expect("a segment has its first page");
        // `fseg_alloc_free_page_general(…, undo->top_page_no + 1, FSP_UP)`: a fragment page
        // from the last page on.
        let mut g = self.pool.new_fragment_page(self.rel, prev + 1)?;
        let p = g.page_id().block;
        format_undo_page(g.data_mut(), false);
        let mut wg = WriteLog::default();
        put_forced(&mut g, &mut wg, OFF_AUX, &prev.to_le_bytes());
        let mut wh = WriteLog::default();
        put(
            &mut h,
            &mut wh,
            SEG_N_PAGES,
            &(seg.pages.len() as u32 + 1).to_le_bytes(),
        );
        put(&mut h, &mut wh, SEG_LAST_PAGE, &p.to_le_bytes());
        let rec = RecordBuilder::new(rmgr::UNDO, info::WRITE)
            .block(h.page_id(), false, wh.as_bytes())
            .block(g.page_id(), true, wg.as_bytes());
        log_change(&self.wal, &rec, &mut [&mut h, &mut g])?;
        self.counters
            .pages_allocated
            .fetch_add(1, Ordering::Relaxed);
        seg.pages.push(p);
        // `trx_undo_add_page` → `fseg_alloc_free_page_general`.
        self.file_space_changed()?;
        Ok(p)
    }

    /// Appends `bytes` to page `p` if they fit; returns the offset.
    fn append_on(&self, p: u32, bytes: &[u8]) -> Result<Option<u16>> {
        let mut g = self.pool.fetch_write(PageId::new(self.rel, p))?;
        let (lower, upper) = hole(g.data());
        if (lower as usize) < PAGE_HEADER_BYTES || lower > upper {
            return Err(Error::corrupted(format!(
                "{}: undo page free pointer {lower}",
                g.page_id()
            )));
        }
        if ((upper - lower) as usize) < bytes.len() {
            return Ok(None);
        }
        let off = lower as usize;
        g.data_mut()[off..off + bytes.len()].copy_from_slice(bytes);
        set_hole(g.data_mut(), (off + bytes.len()) as u16, upper);
        let mut data = Vec::with_capacity(2 + bytes.len());
        data.extend_from_slice(&(off as u16).to_le_bytes());
        data.extend_from_slice(bytes);
        let rec = RecordBuilder::new(rmgr::UNDO, info::APPEND).block(g.page_id(), false, &data);
        log_change(&self.wal, &rec, &mut [&mut g])?;
        Ok(Some(off as u16))
    }

    /// Appends an undo record to the transaction's insert or update segment (assigning it a
    /// rollback segment and the segment a log header first, when needed); returns its roll
    /// pointer, also noted in `trx.all`. Counts `records_written`.
    ///
    /// Errors: [`Error::TooLarge`] for a record larger than a page;
    /// [`TxnError::TooManyConcurrentTransactions`](crate::error::TxnError::TooManyConcurrentTransactions) when the rollback segment has no free slot;
    /// storage errors.
    pub fn append(
        &self,
        trx: &mut TrxUndo,
        insert: bool,
        trx_id: TrxId,
        rec: &UndoRecord,
    ) -> Result<RollPtr> {
        let bytes = rec.encode();
        let page_bytes = self.pool.store().page_size().bytes();
        let max_bytes = page_bytes - SEG_FIRST_LOG - LOG_HEADER_SPACE_BYTES;
        if bytes.len() > max_bytes {
            return Err(Error::TooLarge {
                what: "undo record",
                bytes: bytes.len(),
                max_bytes,
            });
        }
        let r = match trx.rseg {
            Some(r) => r,
            None => *trx.rseg.insert(self.assign_rseg()),
        };
        let seg = if insert {
            &mut trx.insert
        } else {
            &mut trx.update
        };
        if seg.pages.is_empty() {
            self.assign_segment(r, seg, insert, trx_id)?;
        }
        let last = *seg.pages.last().expect("segment has a page");
        let (page, off) = match self.append_on(last, &bytes)? {
            Some(off) => (last, off),
            None => {
                let p = self.add_page(r, seg)?;
                let off = self
                    .append_on(p, &bytes)?
                    .ok_or_else(|| Error::corrupted("undo record does not fit an empty page"))?;
                (p, off)
            }
        };
        self.counters
            .records_written
            .fetch_add(1, Ordering::Relaxed);
        let rp = RollPtr::new(insert, r, page, off);
        seg.records.push(rp);
        trx.all.push(rp);
        Ok(rp)
    }

    /// Reads the undo record at roll pointer `rp` (counted to the caller's cause).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad pointer or record; storage errors.
    pub fn read(&self, rp: RollPtr) -> Result<UndoRecord> {
        self.read_with(rp, BufferPool::fetch_read)
    }

    /// [`UndoSpace::read`] for purge, which fixes the undo page without making it young
    /// in the LRU list ([`BufferPool::fetch_read_fixed`]; trx0purge.cc
    /// `purge_sys_t::get_page` → `buf_pool_t::page_fix`).
    ///
    /// Errors: as [`UndoSpace::read`].
    pub fn read_for_purge(&self, rp: RollPtr) -> Result<UndoRecord> {
        self.read_with(rp, BufferPool::fetch_read_fixed)
    }

    /// [`UndoSpace::read_for_purge`] that also keeps the record's undo page fixed in
    /// `fixed` (one [`PageFix`] per page) until the caller drops it: purge's batch holds
    /// every undo page it has read from until the batch ends (trx0purge.cc
    /// `purge_sys_t::get_page`: "batch_cleanup() will unfix()"), so none of them can be
    /// evicted while the batch's records are purged.
    ///
    /// Errors: as [`UndoSpace::read`].
    pub fn read_for_purge_fixing<'a>(
        &'a self,
        rp: RollPtr,
        fixed: &mut HashMap<u32, PageFix<'a>>,
    ) -> Result<UndoRecord> {
        self.read_with(rp, |pool, id| {
            let g = pool.fetch_read_fixed(id)?;
            fixed.entry(id.block).or_insert_with(|| g.fix());
            Ok(g)
        })
    }

    fn read_with<'a>(
        &'a self,
        rp: RollPtr,
        fetch: impl FnOnce(&'a BufferPool, PageId) -> StorageResult<ReadPageGuard<'a>>,
    ) -> Result<UndoRecord> {
        let RollPtr {
            page_no: page,
            offset: off,
            ..
        } = rp;
        if (page as usize) < self.rsegs.len() {
            return Err(Error::corrupted(format!(
                "roll pointer {:#x} points into a rollback segment header",
                rp.encode()
            )));
        }
        let g = fetch(&self.pool, PageId::new(self.rel, page))?;
        record_on_page(g.data(), g.page_id(), off)
    }

    /// trx_undo_set_state_at_finish: whether the segment is kept for reuse (one page under
    /// 3/4 full, TRX_UNDO_PAGE_REUSE_LIMIT), read from its first page.
    fn reusable(&self, seg: &UndoSegment, first: &WritePageGuard<'_>) -> bool {
        let page_bytes = self.pool.store().page_size().bytes();
        let used = hole(first.data()).0 as usize;
        seg.pages.len() == 1 && used * REUSE_LIMIT_DEN < page_bytes * REUSE_LIMIT_NUM
    }

    /// At commit or after rollback, both of the transaction's segments are done in one
    /// mini-transaction (one WAL record), the commit of the undo log (trx0trx.cc
    /// `trx_write_serialisation_history`: `trx_undo_set_state_at_finish` for the insert undo
    /// and `trx_purge_add_undo_to_history` for the update undo, in one mtr):
    /// - the insert segment's state: a one-page segment under 3/4 full is cached in its
    ///   rollback segment, any other is to be freed (TRX_UNDO_TO_FREE);
    /// - the update segment's log joins its rollback segment's history list as the newest:
    ///   the header page's list base node and TRX_RSEG_MAX_TRX_ID, the log header's commit
    ///   number and history node, the previous newest log's node, the segment state; a
    ///   segment not kept for reuse gives its slot back and its pages count in the history
    ///   size.
    ///
    /// Then an insert segment to be freed is freed and its slot cleared (a second record,
    /// trx_undo_insert_cleanup → trx_undo_seg_free, as MariaDB did before 10.3 kept one undo
    /// log per transaction; recovery finishes a to-free segment a crash left in its slot).
    /// Since the state change is one record, a segment a crash leaves active on the page
    /// belongs to a transaction whose commit was never logged (see `ClusteredAm::open`).
    /// Returns the update log and the roll pointers of its records, or None when the
    /// transaction wrote no update undo.
    ///
    /// Errors: storage errors.
    pub fn finish(&self, trx: &mut TrxUndo) -> Result<Option<(LogRef, Vec<RollPtr>)>> {
        self.finish_segments(trx, true, true)
    }

    /// [`UndoSpace::finish`] for the insert segment alone.
    ///
    /// Errors: storage errors.
    pub fn finish_insert(&self, trx: &mut TrxUndo) -> Result<()> {
        self.finish_segments(trx, true, false).map(|_| ())
    }

    /// [`UndoSpace::finish`] for the update segment alone.
    ///
    /// Errors: storage errors.
    pub fn finish_update(&self, trx: &mut TrxUndo) -> Result<Option<(LogRef, Vec<RollPtr>)>> {
        self.finish_segments(trx, false, true)
    }

    fn finish_segments(
        &self,
        trx: &mut TrxUndo,
        ins: bool,
        upd: bool,
    ) -> Result<Option<(LogRef, Vec<RollPtr>)>> {
        let Some(r) = trx.rseg else {
            return Ok(None);
        };
        let iseg = if ins {
            std::mem::take(&mut trx.insert)
        } else {
            UndoSegment::default()
        };
        let useg = if upd {
            std::mem::take(&mut trx.update)
        } else {
            UndoSegment::default()
        };
        let (ifirst, ufirst) = (iseg.pages.first().copied(), useg.pages.first().copied());
        if ifirst.is_none() && ufirst.is_none() {
            return Ok(None);
        }
        let rs = &self.rsegs[r as usize];
        let mut st = rs.state.lock();
        // Latch order: header page, insert segment's first page, update segment's first
        // page, the previous newest log's page.
        let mut h = match ufirst {
            Some(_) => Some(self.pool.fetch_write(self.rseg_header(r))?),
            None => None,
        };
        let mut gi = match ifirst {
            Some(p) => Some(self.pool.fetch_write_fixed(PageId::new(self.rel, p))?),
            None => None,
        };
        let mut icache = false;
        let mut wi = WriteLog::default();
        if let Some(g) = gi.as_mut() {
            icache = self.reusable(&iseg, g);
            let s = if icache {
                state::CACHED
            } else {
                state::TO_FREE
            };
            put(g, &mut wi, SEG_STATE, &s.to_le_bytes());
        }
        let mut gu = None;
        let mut n = None;
        let (mut wh, mut wu, mut wn) = (
            WriteLog::default(),
            WriteLog::default(),
            WriteLog::default(),
        );
        let mut ucache = false;
        let mut at = FilAddr::NULL;
        if let (Some(first), Some(h)) = (ufirst, h.as_mut()) {
            let trx_no = self.next_trx_no.fetch_add(1, Ordering::Relaxed) + 1;
            at = FilAddr {
                page: first,
                offset: useg.log_offset,
            };
            let mut g = self.pool.fetch_write_fixed(PageId::new(self.rel, first))?;
            ucache = self.reusable(&useg, &g);
            let old_first = st.history.front().map(|l| l.at);
            // flst_add_first(TRX_RSEG_HISTORY, log's TRX_UNDO_HISTORY_NODE).
            let len = st.history.len() as u32 + 1;
            put(h, &mut wh, rseg::HISTORY_LEN, &len.to_le_bytes());
            put(h, &mut wh, rseg::HISTORY_FIRST, &at.encode());
            if old_first.is_none() {
                put(h, &mut wh, rseg::HISTORY_LAST, &at.encode());
            }
            let off = useg.log_offset as usize;
            put(
                &mut g,
                &mut wu,
                off + LOG_HIST_PREV,
                &FilAddr::NULL.encode(),
            );
            put(
                &mut g,
                &mut wu,
                off + LOG_HIST_NEXT,
                &old_first.unwrap_or(FilAddr::NULL).encode(),
            );
            if !ucache {
                // The segment will not be reused: free its slot; its pages join the
                // history size.
                put(
                    h,
                    &mut wh,
                    rseg::slot_offset(useg.slot),
                    &FIL_NULL.to_le_bytes(),
                );
                st.history_size += useg.pages.len() as u32;
                put(
                    h,
                    &mut wh,
                    rseg::HISTORY_SIZE,
                    &st.history_size.to_le_bytes(),
                );
            }
            // TRX_RSEG_MAX_TRX_ID at every history change, so that recovery finds the
            // largest transaction id even after the logs are gone.
            put(h, &mut wh, rseg::MAX_TRX_ID, &st.max_trx_id.to_le_bytes());
            let s = if ucache {
                state::CACHED
            } else {
                state::TO_PURGE
            };
            put(&mut g, &mut wu, SEG_STATE, &s.to_le_bytes());
            put(&mut g, &mut wu, off + LOG_TRX_NO, &trx_no.to_le_bytes());
            match old_first {
                Some(of) if of.page == first => {
                    put(
                        &mut g,
                        &mut wu,
                        of.offset as usize + LOG_HIST_PREV,
                        &at.encode(),
                    );
                }
                Some(of) => {
                    let mut ng = self
                        .pool
                        .fetch_write_fixed(PageId::new(self.rel, of.page))?;
                    put(
                        &mut ng,
                        &mut wn,
                        of.offset as usize + LOG_HIST_PREV,
                        &at.encode(),
                    );
                    n = Some(ng);
                }
                None => {}
            }
            gu = Some(g);
        }
        {
            let mut guards: Vec<&mut WritePageGuard<'_>> = Vec::new();
            let mut logs = Vec::new();
            if let Some(h) = h.as_mut() {
                guards.push(h);
                logs.push((false, std::mem::take(&mut wh)));
            }
            if let Some(g) = gi.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wi)));
            }
            if let Some(g) = gu.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wu)));
            }
            if let Some(g) = n.as_mut() {
                guards.push(g);
                logs.push((false, std::mem::take(&mut wn)));
            }
            self.log_writes(&mut guards, &logs)?;
        }
        drop((n, gu, gi, h));
        if let Some(first) = ifirst {
            if icache {
                st.insert_cached.push(Cached {
                    page: first,
                    slot: iseg.slot,
                    last_seq: 0,
                });
            } else {
                self.free_to_free_segment(r, &mut st, iseg.slot, &iseg.pages)?;
            }
        }
        let Some(first) = ufirst else {
            return Ok(None);
        };
        st.last_seq += 1;
        let seq = st.last_seq;
        if ucache {
            st.update_cached.push(Cached {
                page: first,
                slot: useg.slot,
                last_seq: seq,
            });
        } else {
            st.slots_used[useg.slot as usize] = false;
        }
        st.history.push_front(HistLog {
            seq,
            at,
            seg_pages: useg.pages,
            slot: useg.slot,
            cached: ucache,
            has_next: false,
            purged: false,
        });
        Ok(Some((
            LogRef {
                rseg: r,
                page: first,
                offset: useg.log_offset,
                seq,
            },
            useg.records,
        )))
    }

    /// Frees an insert segment in state to-free: clears its slot (with TRX_RSEG_MAX_TRX_ID,
    /// so that the transaction's id outlives its log) and frees its pages
    /// (trx_undo_seg_free). Under the rollback segment's mutex.
    pub(super) fn free_to_free_segment(
        &self,
        r: u8,
        st: &mut RsegState,
        slot: u16,
        pages: &[u32],
    ) -> Result<()> {
        let mut h = self.pool.fetch_write(self.rseg_header(r))?;
        let mut w = WriteLog::default();
        put(
            &mut h,
            &mut w,
            rseg::slot_offset(slot),
            &FIL_NULL.to_le_bytes(),
        );
        put(
            &mut h,
            &mut w,
            rseg::MAX_TRX_ID,
            &st.max_trx_id.to_le_bytes(),
        );
        self.log_writes(&mut [&mut h], &[(false, w)])?;
        drop(h);
        st.slots_used[slot as usize] = false;
        self.free_segment_pages(pages)
    }

    /// The transaction ended: its reference on its rollback segment is dropped
    /// (trx_t::commit_in_memory → `rseg->release()`).
    pub fn release(&self, trx: &mut TrxUndo) {
        if let Some(r) = trx.rseg.take() {
            self.rsegs[r as usize].refs.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Frees a segment's pages (fseg_free_step).
    pub(super) fn free_segment_pages(&self, pages: &[u32]) -> Result<()> {
        for &p in pages {
            self.free_page(p)?;
        }
        self.counters.segments_freed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Frees undo page `p` (fsp0fsp.cc `fseg_free_page` → buf0buf.cc `buf_page_free`): the
    /// page stays in its frame, clean, until eviction reaches it or the block is allocated
    /// again ([`BufferPool::free_resident`]), and goes back to the relation's free list.
    fn free_page(&self, p: u32) -> Result<()> {
        let id = PageId::new(self.rel, p);
        let mut tries = 0;
        while !self.pool.free_resident(id) {
            tries += 1;
            if tries > 10_000 {
                return Ok(()); // still pinned by a reader: leave the page (it leaks, no data is lost)
            }
            std::thread::yield_now();
        }
        self.pool.store().free_page(id)?;
        self.counters.pages_freed.fetch_add(1, Ordering::Relaxed);
        self.file_space_changed()
    }

    /// An undo page was allocated or freed: the undo tablespace's file-space pages change
    /// (`FileSpace::page_allocated_or_freed`), when the database has them.
    fn file_space_changed(&self) -> Result<()> {
        match &self.file_space {
            Some(fs) => fs.page_allocated_or_freed(),
            None => Ok(()),
        }
    }

    /// Undo pages in use (allocated and not freed; rollback segment headers not included).
    pub fn pages_in_use(&self) -> u64 {
        self.counters.pages_allocated.load(Ordering::Relaxed)
            - self.counters.pages_freed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::clustered::undo_rec::UndoType;
    use crate::mvcc::Xid;
    use crate::storage::{Storage, StorageConfig};

    pub(in crate::clustered) fn rec(delta_bytes: usize) -> UndoRecord {
        UndoRecord {
            kind: UndoType::UpdateExisting,
            table: 1,
            old_trx_id: 7,
            old_roll_ptr: RollPtr::NULL,
            pk: vec![1, 2, 3],
            delta: vec![9; delta_bytes],
        }
    }

    pub(in crate::clustered) fn space(frames: usize, n_rsegs: u8) -> (Storage, UndoSpace) {
        let s = Storage::open(StorageConfig::without_background(frames)).unwrap();
        let u = UndoSpace::create(s.pool().clone(), s.wal().clone(), n_rsegs).unwrap();
        (s, u)
    }

    /// A transaction `trx_id` that writes `n` update undo records (and `ins` insert undo
    /// records) and commits; returns its first update roll pointer and its history log.
    pub(in crate::clustered) fn commit(
        u: &UndoSpace,
        trx_id: TrxId,
        n: usize,
        ins: usize,
        bytes: usize,
    ) -> (RollPtr, LogRef) {
        let mut t = TrxUndo::default();
        let mut first = RollPtr::NULL;
        for i in 0..n {
            let rp = u.append(&mut t, false, trx_id, &rec(bytes)).unwrap();
            if i == 0 {
                first = rp;
            }
        }
        for _ in 0..ins {
            u.append(&mut t, true, trx_id, &rec(bytes)).unwrap();
        }
        u.finish_insert(&mut t).unwrap();
        let (log, records) = u.finish_update(&mut t).unwrap().unwrap();
        assert_eq!(records.len(), n);
        u.release(&mut t);
        (first, log)
    }

    #[test]
    fn consecutive_transactions_take_rollback_segments_in_turn_and_write_their_headers() {
        let (s, u) = space(256, 4);
        let pool = s.pool();
        for r in 0..4 {
            assert_eq!(
                u.rseg_header(r).block,
                r as u32,
                "headers open the relation"
            );
        }
        pool.flush_all().unwrap();
        let before = pool.page_type_io(rseg::PAGE_TYPE_RSEG);
        assert_eq!(
            before.pages_written, 4,
            "each header written once at creation"
        );
        let mut seen = Vec::new();
        for i in 0..8u64 {
            let (rp, log) = commit(&u, 100 + i, 1, 0, 10);
            let RollPtr {
                rseg_id: r,
                page_no: page,
                ..
            } = rp;
            assert_eq!(log.rseg, r);
            assert!(page >= 4, "undo records are never on header pages");
            seen.push(r);
        }
        assert_eq!(seen, [0, 1, 2, 3, 0, 1, 2, 3]);
        for r in 0..4 {
            let info = u.rseg_info(r);
            assert_eq!(info.history_len, 2, "{r}: {info:?}");
            assert_eq!(info.refs, 0);
            let g = pool.fetch_read(u.rseg_header(r)).unwrap();
            assert_eq!(
                rseg::history_len(g.data()),
                2,
                "the header page says so too"
            );
        }
        pool.flush_all().unwrap();
        let after = pool.page_type_io(rseg::PAGE_TYPE_RSEG);
        assert_eq!(
            after.pages_written - before.pages_written,
            4,
            "every header changed"
        );
        // Truncation latches every header: with them out of the pool, it reads each once.
        for r in 0..4 {
            assert!(pool.discard(u.rseg_header(r)));
        }
        u.truncate_history(Xid::MAX).unwrap();
        assert_eq!(pool.page_type_io(rseg::PAGE_TYPE_RSEG).pages_read, 4);
        assert_eq!(
            u.counters.logs_truncated.load(Ordering::Relaxed),
            0,
            "none purged"
        );
    }

    /// Purge's read keeps the undo page fixed for the batch (trx0purge.cc
    /// `purge_sys_t::get_page`, released by `batch_cleanup`): one pin per page however
    /// many of its records are read, none once the batch's fixes drop.
    #[test]
    fn a_purge_read_keeps_its_undo_page_fixed_until_the_batch_lets_go() {
        let (s, u) = space(256, 2);
        let pool = s.pool();
        let (first, _log) = commit(&u, 100, 3, 0, 10);
        let page = PageId::new(u.rel, first.page_no);
        let pins = || {
            pool.buffer_cache()
                .into_iter()
                .find(|e| e.page == page)
                .map(|e| e.pins)
        };
        assert_eq!(pins(), Some(0));
        let mut fixed = HashMap::new();
        u.read_for_purge_fixing(first, &mut fixed).unwrap();
        u.read_for_purge_fixing(first, &mut fixed).unwrap();
        assert_eq!(fixed.len(), 1);
        assert_eq!(
            pins(),
            Some(1),
            "fixed once, after the reads' guards dropped"
        );
        drop(fixed);
        assert_eq!(pins(), Some(0));
        // The plain purge read leaves no pin behind.
        u.read_for_purge(first).unwrap();
        assert_eq!(pins(), Some(0));
    }

    #[test]
    fn cached_segments_belong_to_their_rollback_segment() {
        let (_s, u) = space(256, 2);
        let (rp0, _) = commit(&u, 10, 1, 1, 10);
        let (rp1, _) = commit(&u, 11, 1, 1, 10);
        let p0 = rp0.page_no;
        let p1 = rp1.page_no;
        assert_ne!(p0, p1, "rseg 1 does not take rseg 0's cached segment");
        assert_eq!(u.rseg_info(0).update_cached, vec![p0]);
        assert_eq!(u.rseg_info(1).update_cached, vec![p1]);
        assert_eq!(u.rseg_info(0).insert_cached.len(), 1);
        assert_eq!(u.rseg_info(1).insert_cached.len(), 1);
        assert_eq!(u.counters.segments_created.load(Ordering::Relaxed), 4);
        assert_eq!(u.counters.segments_reused.load(Ordering::Relaxed), 0);
        // The next round reuses each rollback segment's own segments: the update log goes
        // on after the previous one, on the same page.
        let (rp2, _) = commit(&u, 12, 1, 1, 10);
        let (rp3, _) = commit(&u, 13, 1, 1, 10);
        assert_eq!(rp2.page_no, p0);
        assert_eq!(rp3.page_no, p1);
        assert!(rp2.offset > rp0.offset);
        assert_eq!(u.counters.segments_reused.load(Ordering::Relaxed), 4);
        assert_eq!(u.counters.segments_created.load(Ordering::Relaxed), 4);
        assert_eq!(
            u.rseg_info(0).slots_used,
            2,
            "one insert, one update segment"
        );
    }

    /// Each log takes MariaDB's 186 bytes of header space (trx0undo.cc
    /// `trx_undo_header_create`: TRX_UNDO_LOG_XA_HDR_SIZE), so an update segment stops
    /// being cached after as many logs as MariaDB's would hold.
    #[test]
    fn each_log_takes_the_xa_header_space_and_the_page_fills_after_as_many_logs() {
        let (s, u) = space(256, 1);
        let rec_bytes = rec(100).encode().len();
        let (rp0, _) = commit(&u, 10, 1, 0, 100);
        let (rp1, _) = commit(&u, 11, 1, 0, 100);
        let RollPtr {
            page_no: p0,
            offset: off0,
            ..
        } = rp0;
        let RollPtr {
            page_no: p1,
            offset: off1,
            ..
        } = rp1;
        assert_eq!(off0 as usize, SEG_FIRST_LOG + LOG_HEADER_SPACE_BYTES);
        assert_eq!(p1, p0, "the cached segment is reused");
        assert_eq!(
            off1 as usize,
            off0 as usize + rec_bytes + LOG_HEADER_SPACE_BYTES
        );
        // Logs on the first page until a commit leaves it at least 3/4 full: the first
        // `n` with SEG_FIRST_LOG + n × (186 + record) ≥ 3/4 of the page.
        let page = s.pool().store().page_size().bytes();
        let per_log = LOG_HEADER_SPACE_BYTES + rec_bytes;
        let expect = (page * 3 / 4 - SEG_FIRST_LOG).div_ceil(per_log);
        let mut logs_on_p0 = 2;
        for trx in 12.. {
            let (rp, _) = commit(&u, trx, 1, 0, 100);
            if rp.page_no != p0 {
                break;
            }
            logs_on_p0 += 1;
        }
        assert_eq!(logs_on_p0, expect);
    }
}
