//! The undo space at startup: [`UndoSpace::open`] rebuilds the rollback segments' memory
//! state (slots, segment caches, history lists) from the rollback segment header pages and
//! the undo segments' pages after redo, and hands back the committed logs for purge and the
//! undo of the transactions a crash interrupted ([`RecoveredUndo`]) (MariaDB 10.11
//! storage/innobase/trx/trx0rseg.cc `trx_rseg_array_init` → `trx_rseg_mem_restore`,
//! trx0undo.cc `trx_undo_lists_init` → `trx_undo_mem_create_at_db_start`).

use super::purge::HistoryEntry;
use super::rseg::{self, Cached, FilAddr, HistLog, Rseg, RsegState, FIL_NULL};
use super::undo_log::{LogRef, TrxUndo, UndoCounters, UndoSegment, UndoSpace};
use super::undo_page::{
    state, LOG_HEADER_BYTES, LOG_HIST_PREV, LOG_NEXT_LOG, LOG_START, LOG_TRX_ID, LOG_TRX_NO,
    PAGE_TYPE_UNDO, SEG_FIRST_LOG, SEG_KIND, SEG_LAST_LOG, SEG_LAST_PAGE, SEG_N_PAGES, SEG_SLOT,
    SEG_STATE,
};
use super::undo_rec::{RollPtr, RECORD_FIXED_BYTES};
use crate::buffer::BufferPool;
use crate::device::FileId;
use crate::error::{Error, Result};
use crate::mvcc::TrxId;
use crate::page::{aux, get_u16, get_u32, get_u64, hole, page_type, PageId, PAGE_HEADER_BYTES};
use crate::wal::Wal;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// A history log as read at open: its transaction id, its records' roll pointers and its
/// in-memory entry (numbered later).
type HistoryLogRead = (u64, Vec<RollPtr>, HistLog);

/// What [`UndoSpace::open`] found on the pages besides the rollback segments' state.
#[derive(Debug, Default)]
pub struct RecoveredUndo {
    /// The update undo logs of every history list, in commit order (oldest first), as
    /// commit made them for purge.
    pub history: Vec<HistoryEntry>,
    /// Transactions with an undo segment in state active (their commit never reached the
    /// undo log), by transaction id: their undo, holding a reference on their rollback
    /// segment, `all` in rollback order reversed (see [`UndoSpace::open`]).
    pub active: Vec<(u64, TrxUndo)>,
    /// The largest transaction id in any undo log header or rollback segment header
    /// (TRX_RSEG_MAX_TRX_ID).
    pub max_trx_id: TrxId,
    /// Insert segments a crash left to be freed, freed at open.
    pub segments_freed: u64,
}

impl UndoSpace {
    /// Opens the undo relation `rel` after redo and rebuilds the rollback segments' memory
    /// state from their pages (trx0rseg.cc `trx_rseg_array_init` → `trx_rseg_mem_restore`,
    /// trx0undo.cc `trx_undo_lists_init` → `trx_undo_mem_create_at_db_start`):
    /// - each header page's undo slots: a segment in state active belongs to a transaction
    ///   the crash interrupted and is handed back in [`RecoveredUndo::active`] (grouped by
    ///   the transaction id of the last log header on its first page, its records read
    ///   from the pages); a cached one goes back to its cache; an insert segment left to
    ///   be freed is freed now (MariaDB before 10.3: `trx_undo_insert_cleanup` at startup);
    /// - each history list, walked from its oldest log (FLST_LAST) through the logs'
    ///   history nodes, with the history size from the header; every log comes back as a
    ///   [`HistoryEntry`] with its records' roll pointers, all rollback segments' logs in
    ///   commit order (TRX_UNDO_TRX_NO), for purge to resume (trx0purge.cc
    ///   `purge_sys_t::create` / `trx_purge_rseg_get_next_history_log` read them lazily;
    ///   here they are read at open);
    /// - the largest transaction id of any log header and of TRX_RSEG_MAX_TRX_ID, and the
    ///   next commit number.
    ///
    /// Undo pages freed before a crash but not reused leak (the free page list is not
    /// persistent), as MariaDB's `trx_purge_free_segment` notes for a crash mid-free.
    ///
    /// Errors: [`Error::InvalidConfig`] for a rollback segment count the relation was not
    /// made with; [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for pages that do not hold what their headers say;
    /// storage errors.
    pub fn open(
        pool: Arc<BufferPool>,
        wal: Arc<Wal>,
        rel: FileId,
        n_rsegs: u8,
    ) -> Result<(UndoSpace, RecoveredUndo)> {
        if !(1..=crate::design::MAX_ROLLBACK_SEGMENTS).contains(&n_rsegs) {
            return Err(Error::InvalidConfig(format!(
                "rollback_segments must be 1..=128, got {n_rsegs}"
            )));
        }
        let slots = rseg::n_slots(pool.store().page_size().bytes());
        let mut space = UndoSpace {
            rel,
            pool,
            wal,
            rsegs: Box::new([]),
            next_rseg: AtomicU32::new(0),
            skipped_rseg: AtomicU32::new(0),
            next_trx_no: AtomicU64::new(0),
            counters: UndoCounters::default(),
            file_space: None,
        };
        let mut out = RecoveredUndo::default();
        let mut history: Vec<(u64, HistoryEntry)> = Vec::new();
        let mut rsegs = Vec::with_capacity(n_rsegs as usize);
        let mut active: std::collections::BTreeMap<u64, TrxUndo> = Default::default();
        let mut to_free: Vec<(u8, u16, Vec<u32>)> = Vec::new();
        let mut pages_in_use = std::collections::HashSet::new();
        let mut max_trx_no = 0u64;
        for r in 0..n_rsegs {
            let hdr = space.pool.fetch_read(PageId::new(rel, r as u32))?;
            let h = hdr.data();
            if page_type(h) != rseg::PAGE_TYPE_RSEG {
                return Err(Error::InvalidConfig(format!(
                    "the undo log has no rollback segment {r} (block {r} has page type {}): open the database with the rollback_segments it was made with",
                    page_type(h)
                )));
            }
            let mut st = RsegState {
                slots_used: vec![false; slots],
                insert_cached: Vec::new(),
                update_cached: Vec::new(),
                history: VecDeque::new(),
                history_size: rseg::history_size(h),
                max_trx_id: get_u64(h, rseg::MAX_TRX_ID),
                last_seq: 0,
            };
            out.max_trx_id = out.max_trx_id.max(st.max_trx_id);
            // The history list, oldest first.
            let len = rseg::history_len(h) as usize;
            let mut seq_at = std::collections::HashMap::new();
            let mut next = FilAddr::read(h, rseg::HISTORY_LAST);
            while next != FilAddr::NULL {
                if st.history.len() >= len {
                    return Err(space.bad(format!(
                        "rollback segment {r}: history list longer than its length {len}"
                    )));
                }
                let at = next;
                let (log, trx_no, newer) = space.read_history_log(r, at)?;
                max_trx_no = max_trx_no.max(trx_no);
                out.max_trx_id = out.max_trx_id.max(log.0);
                st.last_seq += 1;
                let seq = st.last_seq;
                seq_at.insert((at.page, at.offset), seq);
                if !log.2.cached {
                    pages_in_use.extend(log.2.seg_pages.iter().copied());
                }
                st.history.push_front(HistLog { seq, ..log.2 });
                history.push((
                    trx_no,
                    HistoryEntry {
                        trx_id: log.0,
                        records: log.1,
                        log: LogRef {
                            rseg: r,
                            page: at.page,
                            offset: at.offset,
                            seq,
                        },
                    },
                ));
                next = newer;
            }
            if st.history.len() != len {
                return Err(space.bad(format!(
                    "rollback segment {r}: history list of {} logs, its length says {len}",
                    st.history.len()
                )));
            }
            // The undo slots.
            for slot in 0..slots as u16 {
                let p = rseg::slot(h, slot);
                if p == FIL_NULL {
                    continue;
                }
                let g = space.pool.fetch_read(PageId::new(rel, p))?;
                let d = g.data();
                if page_type(d) != PAGE_TYPE_UNDO || get_u16(d, SEG_SLOT) != slot {
                    return Err(space.bad(format!(
                        "rollback segment {r} slot {slot}: page {p} is not that slot's undo segment"
                    )));
                }
                let s = get_u16(d, SEG_STATE);
                let insert = d[SEG_KIND] == 1;
                let last_log = get_u16(d, SEG_LAST_LOG);
                let trx_id = get_u64(d, last_log as usize + LOG_TRX_ID);
                out.max_trx_id = out.max_trx_id.max(trx_id);
                drop(g);
                let pages = space.segment_pages(p)?;
                match s {
                    state::ACTIVE => {
                        let records = space.log_records(insert, r, &pages, last_log, None)?;
                        let t = active.entry(trx_id).or_insert_with(|| TrxUndo {
                            rseg: Some(r),
                            ..Default::default()
                        });
                        if t.rseg != Some(r) {
                            return Err(space.bad(format!(
                                "transaction {trx_id} has active undo in rollback segments {:?} and {r}",
                                t.rseg
                            )));
                        }
                        let seg = UndoSegment {
                            pages: pages.clone(),
                            records,
                            slot,
                            log_offset: last_log,
                        };
                        if insert {
                            t.insert = seg;
                        } else {
                            t.update = seg;
                        }
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages);
                    }
                    state::CACHED => {
                        let c = Cached {
                            page: p,
                            slot,
                            last_seq: if insert {
                                0
                            } else {
                                seq_at.get(&(p, last_log)).copied().unwrap_or(0)
                            },
                        };
                        if insert {
                            st.insert_cached.push(c);
                        } else {
                            st.update_cached.push(c);
                        }
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages);
                    }
                    state::TO_FREE => {
                        st.slots_used[slot as usize] = true;
                        pages_in_use.extend(pages.iter().copied());
                        to_free.push((r, slot, pages));
                    }
                    // A to-purge segment gave its slot back in the record that made it so.
                    _ => {}
                }
            }
            drop(hdr);
            rsegs.push(Rseg {
                page: r as u32,
                refs: AtomicU32::new(0),
                skip: AtomicBool::new(false),
                state: Mutex::new(st),
            });
        }
        space.rsegs = rsegs.into_boxed_slice();
        space.next_trx_no.store(max_trx_no, Ordering::Relaxed);
        space
            .counters
            .pages_allocated
            .store(pages_in_use.len() as u64, Ordering::Relaxed);
        for (r, slot, pages) in to_free {
            let mut st = space.rsegs[r as usize].state.lock();
            space.free_to_free_segment(r, &mut st, slot, &pages)?;
            out.segments_freed += 1;
        }
        for (trx_id, mut t) in active {
            // Rollback order: update undo newest first, then insert undo newest first. A
            // row's insert record precedes every other record of the same transaction on
            // that row (a later re-insert finds the delete-marked record and writes update
            // undo), so this undoes each row's changes in reverse.
            t.all = t.insert.records.to_vec();
            t.all.extend(t.update.records.iter().copied());
            space.rsegs[t.rseg.expect("set") as usize]
                .refs
                .fetch_add(1, Ordering::AcqRel);
            out.active.push((trx_id, t));
        }
        history.sort_by_key(|(no, _)| *no);
        out.history = history.into_iter().map(|(_, e)| e).collect();
        Ok((space, out))
    }

    /// The pages of the segment whose first page is `first`, first page first: the last
    /// page from the segment header (TRX_UNDO_PAGE_LIST's last), then each later page's
    /// previous page (its `aux` word) back to the first.
    fn segment_pages(&self, first: u32) -> Result<Vec<u32>> {
        let (n, mut p) = {
            let g = self.pool.fetch_read(PageId::new(self.rel, first))?;
            (
                get_u32(g.data(), SEG_N_PAGES),
                get_u32(g.data(), SEG_LAST_PAGE),
            )
        };
        if n == 0 || n as usize > self.pool.store().n_blocks(self.rel)? as usize {
            return Err(self.bad(format!("segment at page {first} has {n} pages")));
        }
        let mut pages = Vec::with_capacity(n as usize);
        for _ in 1..n {
            pages.push(p);
            let g = self.pool.fetch_read(PageId::new(self.rel, p))?;
            if page_type(g.data()) != PAGE_TYPE_UNDO {
                return Err(self.bad(format!(
                    "segment at page {first}: page {p} is not an undo page"
                )));
            }
            p = aux(g.data());
        }
        if p != first {
            return Err(self.bad(format!(
                "segment at page {first}: its page list leads to page {p}"
            )));
        }
        pages.push(first);
        pages.reverse();
        Ok(pages)
    }

    /// Roll pointers of the records of the log whose header is at `log_offset` on the
    /// segment's first page: from its TRX_UNDO_LOG_START to the next log header (`end`,
    /// for a log that is not the page's last) or, for the last log, to the page's free
    /// pointer and on through the segment's later pages.
    fn log_records(
        &self,
        insert: bool,
        r: u8,
        pages: &[u32],
        log_offset: u16,
        end: Option<u16>,
    ) -> Result<Vec<RollPtr>> {
        let mut out = Vec::new();
        for (i, &p) in pages.iter().enumerate() {
            let g = self.pool.fetch_read(PageId::new(self.rel, p))?;
            let d = g.data();
            let lower = hole(d).0;
            let (from, to) = if i == 0 {
                let start = get_u16(d, log_offset as usize + LOG_START);
                (start, end.unwrap_or(lower))
            } else {
                (PAGE_HEADER_BYTES as u16, lower)
            };
            let (mut off, to) = (from as usize, to as usize);
            if off < PAGE_HEADER_BYTES || to > d.len() {
                return Err(self.bad(format!("page {p}: records at {off}..{to}")));
            }
            while off < to {
                let len = get_u16(d, off) as usize;
                if len < RECORD_FIXED_BYTES || off + len > to {
                    return Err(self.bad(format!(
                        "page {p}: undo record of {len} bytes at {off} (records end at {to})"
                    )));
                }
                out.push(RollPtr::new(insert, r, p, off as u16));
                off += len;
            }
            if end.is_some() {
                break;
            }
        }
        Ok(out)
    }

    /// Reads the history log at `at` of rollback segment `r`: (trx id, roll pointers of its
    /// records, its in-memory entry without its number), its commit number and the next
    /// newer log's address.
    fn read_history_log(&self, r: u8, at: FilAddr) -> Result<(HistoryLogRead, u64, FilAddr)> {
        let (trx_id, trx_no, newer, next_log, seg_state, last_log, slot) = {
            let g = self.pool.fetch_read(PageId::new(self.rel, at.page))?;
            let d = g.data();
            let o = at.offset as usize;
            if page_type(d) != PAGE_TYPE_UNDO || o < SEG_FIRST_LOG || o + LOG_HEADER_BYTES > d.len()
            {
                return Err(self.bad(format!(
                    "rollback segment {r}: history log at page {} offset {o}",
                    at.page
                )));
            }
            (
                get_u64(d, o + LOG_TRX_ID),
                get_u64(d, o + LOG_TRX_NO),
                FilAddr::read(d, o + LOG_HIST_PREV),
                get_u16(d, o + LOG_NEXT_LOG),
                get_u16(d, SEG_STATE),
                get_u16(d, SEG_LAST_LOG),
                get_u16(d, SEG_SLOT),
            )
        };
        let has_next = next_log != 0;
        // A log followed by another on its page was cached at commit (a segment is reused
        // only from the cache); the page's last log was cached unless its segment waits
        // to be purged.
        let cached = has_next || (last_log == at.offset && seg_state != state::TO_PURGE);
        let seg_pages = if has_next {
            vec![at.page]
        } else {
            self.segment_pages(at.page)?
        };
        let records = self.log_records(
            false,
            r,
            &seg_pages,
            at.offset,
            has_next.then_some(next_log),
        )?;
        Ok((
            (
                trx_id,
                records,
                HistLog {
                    seq: 0,
                    at,
                    seg_pages,
                    slot,
                    cached,
                    has_next,
                    purged: false,
                },
            ),
            trx_no,
            newer,
        ))
    }
}
