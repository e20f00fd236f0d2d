//! The heap's WAL resource manager ([`crate::wal::rmgr::HEAP`]): its
//! [`info`] codes (PostgreSQL heapam_xlog.h), the block and main data the writers log
//! (heapam.c `heap_insert`, `log_heap_update`), and redo: one block of one record applied
//! to a page, as PostgreSQL REL_15 heapam.c `heap_xlog_insert`, `heap_xlog_update`,
//! `heap_xlog_delete`, `heap_xlog_lock`, `heap_xlog_prune`, `heap_xlog_vacuum` and
//! `heap_xlog_visible` do, and [`mask_unlogged`], the counterpart of heapam.c `heap_mask`
//! (bufmask.c `mask_page_hint_bits`, `mask_unused_space`) that hides what redo cannot
//! reproduce. It uses only the page and tuple layouts (`page.rs`, `tuple.rs`) and the
//! prune result of `prune.rs` (`PruneResult`, `execute` = pruneheap.c
//! `heap_page_prune_execute`, which PostgreSQL's redo calls too, and `set_prunable`),
//! never the table.
//!
//! Records are physiological: the block is named physically, the change inside it by line
//! pointer offset. Block and main data formats (integers little-endian):
//! ```text
//! xl_heap_header = t_infomask2 u16 | t_infomask u16 | t_hoff u8
//! tuple body     = the tuple from byte 23 on (null bitmap, padding, data)
//! ```
//! | info | blocks and their data | main data |
//! |------|-----------------------|-----------|
//! | INSERT (0x00, \|0x80 INIT_PAGE) | 0: `offnum u16 \| flags u8 \| xl_heap_header \| body` | — |
//! | DELETE (0x10) | 0: empty | `xmax u32 \| offnum u16 \| infobits u8 \| flags u8` |
//! | UPDATE (0x20, \|0x80) / HOT_UPDATE (0x40) | 0: new page, `[prefix u16] [suffix u16] xl_heap_header \| bitmap+padding \| data minus prefix and suffix`; 1: old page if different, empty | `xl_heap_update`: `old_xmax u32 \| old_offnum u16 \| old_infobits u8 \| flags u8 \| new_xmax u32 \| new_offnum u16` |
//! | LOCK (0x60) | 0: empty | `locker xid u32 \| offnum u16` |
//! | PRUNE (0x11) | 0: `n_redirected u16 \| n_dead u16 \| n_unused u16 \| pairs \| offsets` | horizon xid u32 |
//! | VACUUM (0x21) | 0: offsets u16 now unused | — |
//! | VISIBLE (0x41) | 0: empty | cutoff xid u32 |
//!
//! The new tuple of INSERT and UPDATE gets t_xmin = the record's xid, t_xmax = 0 (INSERT)
//! or new_xmax (UPDATE), t_cid = 0 (FirstCommandId) and t_ctid = its own TID.
//!
//! # What redo does not reproduce (masked by [`mask_unlogged`])
//! 1. Hint bits (HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID, HEAP_XMAX_COMMITTED,
//!    HEAP_XMAX_INVALID) set by readers, by `lock_for_change` and by pruning without WAL,
//!    as PostgreSQL sets them (`SetHintBits`, `MarkBufferDirtyHint`).
//! 2. t_cid: the command id is not logged; redo writes FirstCommandId (0), as PostgreSQL.
//! 3. pd_prune_xid: pruning sets it to the oldest xmax still pending without logging it
//!    (pruneheap.c `heap_page_prune` likewise); redo only applies `PageSetPrunable` of
//!    DELETE and UPDATE.
//! 4. PD_PAGE_FULL: set by an update that found no room, cleared by pruning, never logged
//!    (a hint in PostgreSQL too).
//! 5. Bytes nobody reads: the hole between pd_lower and pd_upper and the MAXALIGN padding
//!    after a tuple, which keep stale bytes on the live page after
//!    `PageRepairFragmentation` but are zero after redo onto a zero page.
//!
//! The free space map and the visibility map live in memory and have no pages to redo; a
//! crash recovery rebuilds them (VACUUM) rather than replaying them. PD_ALL_VISIBLE is
//! reproduced: VISIBLE sets it, and INSERT, UPDATE (both pages) and DELETE clear it, as the
//! writers always do (PostgreSQL logs `XLH_*_ALL_VISIBLE_CLEARED` only when the bit was set,
//! which gives the same page).
//!
//! # Differences from PostgreSQL's redo (the live writers differ in the same way)
//! - LOCK has no infobits: redo sets xmax, HEAP_XMAX_LOCK_ONLY and clears the xmax hint
//!   bits, keeping HEAP_HOT_UPDATED, HEAP_KEYS_UPDATED and t_ctid as the writer does
//!   (heap_xlog_lock clears them when the xmax only locks).
//! - HEAP_KEYS_UPDATED is only ever added by DELETE and UPDATE (`set_old_xmax`), never
//!   cleared (`fix_infomask_from_infobits` clears it first).
//! - INSERT and UPDATE place the tuple where `PageAddItem` without an offset would (the
//!   first unused line pointer when PD_HAS_FREE_LINES is set, else a new one) and fail
//!   when that is not the logged offset, so that PD_HAS_FREE_LINES comes out as on the
//!   live page; PostgreSQL overwrites at the logged offset.
//!
//! # Writer fixes made with this module
//! Redo could not rebuild two things the writers left out of their records: DELETE and
//! UPDATE now log XLHL_KEYS_UPDATED in their infobits when they set HEAP_KEYS_UPDATED on
//! the old tuple, and UPDATE logs XLH_UPDATE_PREFIX_FROM_OLD / SUFFIX_FROM_OLD in its flags
//! (without them the block data of a compressed same-page update cannot be parsed).
//!
//! # Hardening
//! Every length and offset is checked: bad bytes, a page that is not a heap page, an
//! offset out of range or a line pointer in the wrong state give [`StorageError::Corrupted`](crate::error::StorageError::Corrupted)
//! naming the record's LSN, never a panic.

use super::page::{self as hp, ItemId, LpState, PAGE_TYPE_HEAP, PD_ALL_VISIBLE, PD_HAS_FREE_LINES};
use super::prune::{self, PruneResult};
use super::tuple::{self as ht, HeaderRead, Tid};
use crate::error::{Error, Result};
use crate::mvcc::Xid;
use crate::page::{flags, hole, page_type, set_aux, set_flags, set_page_lsn, PAGE_HEADER_BYTES};
use crate::wal::data::DataReader;
use crate::wal::redo::redo_block_ref;
use crate::wal::{rmgr, Lsn, WalRecord};

/// `info` codes of [`crate::wal::rmgr::HEAP`] records (PostgreSQL heapam_xlog.h; the HEAP2
/// records share the rmgr here).
pub mod info {
    /// XLOG_HEAP_INSERT: block 0 = page; data = offnum u16, flags u8, xl_heap_header
    /// (infomask2 u16, infomask u16, hoff u8), tuple bytes from offset 23.
    pub const INSERT: u8 = 0x00;
    /// XLOG_HEAP_DELETE: block 0 = page; main = xmax u32, offnum u16, infobits u8, flags u8.
    pub const DELETE: u8 = 0x10;
    /// XLOG_HEAP_UPDATE: block 0 = new page (data: [prefix u16][suffix u16], xl_heap_header,
    /// tuple bytes from 23 minus prefix/suffix), block 1 = old page if different; main =
    /// xl_heap_update (14 bytes; its flags say whether prefix and suffix are present,
    /// `wal::XLH_UPDATE_PREFIX_FROM_OLD` / `SUFFIX_FROM_OLD`).
    pub const UPDATE: u8 = 0x20;
    /// XLOG_HEAP_HOT_UPDATE: as UPDATE, one page.
    pub const HOT_UPDATE: u8 = 0x40;
    /// XLOG_HEAP_LOCK: block 0 = page; main = locker xid u32, offnum u16.
    pub const LOCK: u8 = 0x60;
    /// XLOG_HEAP_INIT_PAGE flag: the record rebuilds the page (will_init).
    pub const INIT_PAGE: u8 = 0x80;
    /// XLOG_HEAP2_PRUNE: block 0 = page, data = `PruneResult::encode`; main = horizon xid.
    pub const PRUNE: u8 = 0x11;
    /// XLOG_HEAP2_VACUUM: block 0 = page, data = offsets (u16) now unused.
    pub const VACUUM: u8 = 0x21;
    /// XLOG_HEAP2_VISIBLE: block 0 = page; main = cutoff xid u32.
    pub const VISIBLE: u8 = 0x41;
}

/// xl_heap_delete / xl_heap_update infobits: the tuple's HEAP_KEYS_UPDATED is set
/// (heapam_xlog.h XLHL_KEYS_UPDATED).
pub const XLHL_KEYS_UPDATED: u8 = 0x10;
/// xl_heap_update flags: block 0's data starts with the length of a prefix of the new
/// tuple's data shared with the old tuple (heapam_xlog.h XLH_UPDATE_PREFIX_FROM_OLD).
pub const XLH_UPDATE_PREFIX_FROM_OLD: u8 = 1 << 5;
/// xl_heap_update flags: block 0's data carries the length of a shared suffix
/// (XLH_UPDATE_SUFFIX_FROM_OLD).
pub const XLH_UPDATE_SUFFIX_FROM_OLD: u8 = 1 << 6;

/// Bytes of xl_heap_header.
const XL_HEAP_HEADER_BYTES: usize = 5;

/// Block data of an insert-style record: offnum u16, flags u8, then xl_heap_header
/// (t_infomask2 u16, t_infomask u16, t_hoff u8) and the tuple from byte 23 on (null
/// bitmap, padding, data), as heapam.c `heap_insert` logs it.
pub(super) fn insert_block_data(off: u16, t: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(8 + t.len() - ht::HEADER_BYTES);
    d.extend_from_slice(&off.to_le_bytes());
    d.push(0);
    d.extend_from_slice(&t[18..23]);
    d.extend_from_slice(&t[ht::HEADER_BYTES..]);
    d
}

/// Same-page update record data with PostgreSQL's prefix/suffix compression
/// (heapam.c `log_heap_update`: only when old and new share the page and the page needs
/// no full-page image; each of prefix and suffix only if at least 3 bytes). Returns the
/// data and the xl_heap_update flags saying which of prefix and suffix it carries.
pub(super) fn update_block_data(
    old: &[u8],
    new: &[u8],
    same_page: bool,
    page_needs_image: bool,
) -> (Vec<u8>, u8) {
    let (mut prefix, mut suffix) = (0usize, 0usize);
    let (od, nd) = (
        &old[(old[22] as usize).min(old.len())..],
        &new[(new[22] as usize).min(new.len())..],
    );
    if same_page && !page_needs_image {
        prefix = od.iter().zip(nd).take_while(|(a, b)| a == b).count();
        if prefix < 3 {
            prefix = 0;
        }
        let max_suffix = od.len().min(nd.len()) - prefix;
        suffix = od
            .iter()
            .rev()
            .zip(nd.iter().rev())
            .take(max_suffix)
            .take_while(|(a, b)| a == b)
            .count();
        if suffix < 3 {
            suffix = 0;
        }
    }
    let mut d = Vec::new();
    if prefix > 0 {
        d.extend_from_slice(&(prefix as u16).to_le_bytes());
    }
    if suffix > 0 {
        d.extend_from_slice(&(suffix as u16).to_le_bytes());
    }
    d.extend_from_slice(&new[18..23]);
    let hoff = new[22] as usize;
    d.extend_from_slice(&new[ht::HEADER_BYTES..hoff.min(new.len())]);
    d.extend_from_slice(&nd[prefix..nd.len() - suffix]);
    let mut flags = 0;
    if prefix > 0 {
        flags |= XLH_UPDATE_PREFIX_FROM_OLD;
    }
    if suffix > 0 {
        flags |= XLH_UPDATE_SUFFIX_FROM_OLD;
    }
    (d, flags)
}

/// xl_heap_update: old_xmax u32, old_offnum u16, old_infobits u8, flags u8, new_xmax u32,
/// new_offnum u16 (14 bytes). old_infobits carries XLHL_KEYS_UPDATED when the update
/// changed the key; flags the XLH_UPDATE_PREFIX/SUFFIX_FROM_OLD bits of the block data.
pub(super) fn update_main_data(
    xid: Xid,
    old_off: u16,
    keys_updated: bool,
    flags: u8,
    new_off: u16,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(14);
    m.extend_from_slice(&xid.to_le_bytes());
    m.extend_from_slice(&old_off.to_le_bytes());
    let infobits = if keys_updated { XLHL_KEYS_UPDATED } else { 0 };
    m.extend_from_slice(&[infobits, flags]);
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(&new_off.to_le_bytes());
    m
}
fn corrupted(lsn: Lsn, why: &str) -> Error {
    crate::wal::redo::corrupted("heap WAL record", lsn, why).into()
}

/// Checks that `page` is a heap page whose header and line pointers can be trusted by the
/// page functions (which index without checks): the hole inside the page, every normal
/// line pointer's tuple between pd_upper and the end and long enough for a header, every
/// redirect inside the line pointer array.
fn check_page(page: &[u8], lsn: Lsn) -> Result<()> {
    let bad = |why: String| Err(corrupted(lsn, &why));
    if page_type(page) != PAGE_TYPE_HEAP {
        return bad(format!("page type {} is not a heap page", page_type(page)));
    }
    let (lower, upper) = hole(page);
    let (lower, upper) = (lower as usize, upper as usize);
    if lower < PAGE_HEADER_BYTES
        || !(lower - PAGE_HEADER_BYTES).is_multiple_of(hp::ITEM_ID_BYTES)
        || lower > upper
        || upper > page.len()
    {
        return bad(format!("bad hole {lower}..{upper}"));
    }
    let n = hp::max_offset(page);
    if n as usize > hp::max_heap_tuples_per_page(page.len()) {
        return bad(format!("{n} line pointers"));
    }
    let id = crate::page::PageId::new(0, 0);
    for off in 1..=n {
        let lp = hp::item_id(page, off, id).map_err(|_| corrupted(lsn, "bad line pointer"))?;
        match lp.state {
            LpState::Normal => {
                if (lp.off as usize) < upper
                    || lp.off as usize + lp.len as usize > page.len()
                    || !ht::header_ok(hp::tuple(page, lp))
                {
                    return bad(format!("line pointer {off} points at no tuple"));
                }
            }
            LpState::Redirect => {
                if lp.off == 0 || lp.off > n {
                    return bad(format!("line pointer {off} redirects outside"));
                }
            }
            LpState::Unused | LpState::Dead => {}
        }
    }
    Ok(())
}

/// The normal line pointer `off` holding a tuple, or Corrupted.
fn normal_item(page: &[u8], off: u16, lsn: Lsn) -> Result<ItemId> {
    let n = hp::max_offset(page);
    if off == 0 || off > n {
        return Err(corrupted(
            lsn,
            &format!("offset {off} beyond {n} line pointers"),
        ));
    }
    let lp = hp::item_id(page, off, crate::page::PageId::new(0, 0))
        .map_err(|_| corrupted(lsn, "bad line pointer"))?;
    if lp.state != LpState::Normal {
        return Err(corrupted(
            lsn,
            &format!("line pointer {off} is {:?}, not normal", lp.state),
        ));
    }
    Ok(lp)
}

/// Builds the new tuple of an INSERT or UPDATE (heap_xlog_insert: header zeroed, then
/// xl_heap_header, xmin from the record, cmin FirstCommandId, ctid the new TID).
fn build_tuple(
    hdr: &[u8],
    body: &[u8],
    xmin: u32,
    xmax: u32,
    ctid: Tid,
    page_len: usize,
    lsn: Lsn,
) -> Result<Vec<u8>> {
    let mut t = vec![0u8; ht::HEADER_BYTES + body.len()];
    t[18..23].copy_from_slice(hdr);
    t[ht::HEADER_BYTES..].copy_from_slice(body);
    if !ht::header_ok(&t) {
        return Err(corrupted(lsn, &format!("t_hoff {} impossible", t[22])));
    }
    if ht::maxalign(t.len()) > page_len - PAGE_HEADER_BYTES - hp::ITEM_ID_BYTES {
        return Err(corrupted(lsn, &format!("tuple of {} bytes", t.len())));
    }
    t[0..4].copy_from_slice(&xmin.to_le_bytes());
    ht::set_xmax(&mut t, xmax);
    ht::set_cid(&mut t, 0);
    ht::set_ctid(&mut t, ctid);
    Ok(t)
}

/// PageAddItem at the logged offset: checks that it is the line pointer `hp::add_tuple`
/// picks (see the module doc), that the tuple fits, and adds it.
fn add_tuple_at(page: &mut [u8], off: u16, t: &[u8], lsn: Lsn) -> Result<()> {
    let n = hp::max_offset(page);
    let first_unused = if flags(page) & PD_HAS_FREE_LINES != 0 {
        (1..=n).find(|&o| {
            hp::item_id(page, o, crate::page::PageId::new(0, 0))
                .is_ok_and(|lp| lp.state == LpState::Unused)
        })
    } else {
        None
    };
    let expected = first_unused.unwrap_or(n + 1);
    if off != expected {
        return Err(corrupted(
            lsn,
            &format!("tuple logged at offset {off}, page would place it at {expected}"),
        ));
    }
    let (lower, upper) = hole(page);
    let need = ht::maxalign(t.len()) + if first_unused.is_some() { 0 } else { 4 };
    if (upper as usize).saturating_sub(lower as usize) < need {
        return Err(corrupted(lsn, "no room for the tuple"));
    }
    match hp::add_tuple(page, t) {
        Some(o) if o == off => Ok(()),
        got => Err(corrupted(
            lsn,
            &format!("tuple added at {got:?}, logged at {off}"),
        )),
    }
}

/// The old tuple's side of DELETE and UPDATE (heap_xlog_delete / heap_xlog_update's old
/// page): xmax, flags and t_ctid as `tuple::set_old_xmax` sets them, the page
/// prunable by the record's xid, PD_ALL_VISIBLE cleared.
#[allow(clippy::too_many_arguments)]
fn mark_old(
    page: &mut [u8],
    off: u16,
    xmax: u32,
    ctid: Tid,
    hot: bool,
    infobits: u8,
    xid: u32,
    lsn: Lsn,
) -> Result<()> {
    let lp = normal_item(page, off, lsn)?;
    ht::set_old_xmax(
        hp::tuple_mut(page, lp),
        xmax,
        ctid,
        hot,
        infobits & XLHL_KEYS_UPDATED != 0,
    );
    prune::set_prunable(page, xid);
    set_flags(page, flags(page) & !PD_ALL_VISIBLE);
    Ok(())
}

/// The pg_waldump name of heap record `code`: `Heap/INSERT`, `Heap/DELETE`, `Heap/UPDATE`,
/// `Heap/HOT_UPDATE`, `Heap/LOCK` (with `+INIT` when the record rebuilds the page), and
/// `Heap2/PRUNE`, `Heap2/VACUUM`, `Heap2/VISIBLE`; `None` for an unknown code.
pub fn info_name(code: u8) -> Option<String> {
    let heap2 = match code {
        info::PRUNE => Some("PRUNE"),
        info::VACUUM => Some("VACUUM"),
        info::VISIBLE => Some("VISIBLE"),
        _ => None,
    };
    if let Some(n) = heap2 {
        return Some(format!("Heap2/{n}"));
    }
    let base = match code & !info::INIT_PAGE {
        info::INSERT => "INSERT",
        info::DELETE => "DELETE",
        info::UPDATE => "UPDATE",
        info::HOT_UPDATE => "HOT_UPDATE",
        info::LOCK => "LOCK",
        _ => return None,
    };
    let init = if code & info::INIT_PAGE != 0 {
        "+INIT"
    } else {
        ""
    };
    Some(format!("Heap/{base}{init}"))
}

/// Redo of block `b` of heap record `rec` on `page` (the page's current bytes; ignored for
/// will-init blocks), then sets the page LSN to the record's end. The caller restores
/// blocks that carry a full-page image and skips pages whose LSN is already at or past
/// `rec.end_lsn`, as for the B+tree (`btree::wal::redo_block`).
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the record's LSN when the record or the page does
/// not fit the format, or the record is not a heap record this module knows.
pub fn redo_block(rec: &WalRecord, b: usize, page: &mut [u8]) -> Result<()> {
    let lsn = rec.lsn;
    let block = redo_block_ref(
        rec,
        b,
        page.len(),
        Some((rmgr::HEAP, "the heap")),
        "heap WAL record",
        PAGE_HEADER_BYTES + 64,
    )?;
    let init = rec.info & info::INIT_PAGE != 0;
    let base = rec.info & !info::INIT_PAGE;
    let mut r = DataReader::new(&block.data, lsn, "heap WAL record (block data)");
    let mut m = DataReader::new(&rec.main_data, lsn, "heap WAL record (main data)");
    match (base, b) {
        (info::INSERT, 0) => {
            // heap_xlog_insert
            if init {
                hp::init(page);
            } else {
                check_page(page, lsn)?;
            }
            m.end()?;
            let off = r.u16()?;
            let _flags = r.u8()?;
            let hdr = r.bytes(XL_HEAP_HEADER_BYTES)?;
            let body = r.rest();
            let tid = Tid {
                block: block.page.block,
                offset: off,
            };
            let t = build_tuple(hdr, body, rec.xid, 0, tid, page.len(), lsn)?;
            add_tuple_at(page, off, &t, lsn)?;
            set_flags(page, flags(page) & !PD_ALL_VISIBLE);
        }
        (info::DELETE, 0) if !init => {
            // heap_xlog_delete
            check_page(page, lsn)?;
            r.end()?;
            let xmax = m.u32()?;
            let off = m.u16()?;
            let infobits = m.u8()?;
            let _flags = m.u8()?;
            m.end()?;
            let tid = Tid {
                block: block.page.block,
                offset: off,
            };
            mark_old(page, off, xmax, tid, false, infobits, rec.xid, lsn)?;
        }
        (info::UPDATE, _) | (info::HOT_UPDATE, 0)
            if b < 2 && !(init && base == info::HOT_UPDATE) =>
        {
            // heap_xlog_update
            let hot = base == info::HOT_UPDATE;
            let old_xmax = m.u32()?;
            let old_off = m.u16()?;
            let infobits = m.u8()?;
            let uflags = m.u8()?;
            let new_xmax = m.u32()?;
            let new_off = m.u16()?;
            m.end()?;
            let same_page = rec.blocks.len() == 1;
            if hot && !same_page {
                return Err(corrupted(lsn, "HOT_UPDATE across pages"));
            }
            if rec.blocks.len() > 2 || (init && same_page) {
                return Err(corrupted(lsn, "UPDATE with impossible blocks"));
            }
            let new_tid = Tid {
                block: rec.blocks[0].page.block,
                offset: new_off,
            };
            if b == 1 {
                // The old page of an update across pages.
                check_page(page, lsn)?;
                r.end()?;
                mark_old(
                    page, old_off, old_xmax, new_tid, false, infobits, rec.xid, lsn,
                )?;
            } else {
                if init {
                    hp::init(page);
                } else {
                    check_page(page, lsn)?;
                }
                let prefix = if uflags & XLH_UPDATE_PREFIX_FROM_OLD != 0 {
                    r.u16()? as usize
                } else {
                    0
                };
                let suffix = if uflags & XLH_UPDATE_SUFFIX_FROM_OLD != 0 {
                    r.u16()? as usize
                } else {
                    0
                };
                let hdr = r.bytes(XL_HEAP_HEADER_BYTES)?;
                let hoff = hdr[4] as usize;
                let bitmap = r
                    .bytes(hoff.saturating_sub(ht::HEADER_BYTES))
                    .map_err(|_| r.bad("shorter than t_hoff"))?;
                let middle = r.rest();
                let mut body = bitmap.to_vec();
                if prefix + suffix > 0 {
                    if !same_page {
                        return Err(corrupted(lsn, "prefix/suffix of an update across pages"));
                    }
                    let lp = normal_item(page, old_off, lsn)?;
                    let old = hp::tuple(page, lp);
                    let od = &old[old[22] as usize..];
                    if prefix + suffix > od.len() {
                        return Err(corrupted(
                            lsn,
                            &format!(
                                "prefix {prefix} + suffix {suffix} longer than the old data ({})",
                                od.len()
                            ),
                        ));
                    }
                    body.extend_from_slice(&od[..prefix]);
                    body.extend_from_slice(middle);
                    body.extend_from_slice(&od[od.len() - suffix..]);
                } else {
                    body.extend_from_slice(middle);
                }
                let t = build_tuple(hdr, &body, rec.xid, new_xmax, new_tid, page.len(), lsn)?;
                if same_page {
                    // Check the old tuple before changing anything.
                    normal_item(page, old_off, lsn)?;
                }
                add_tuple_at(page, new_off, &t, lsn)?;
                if same_page {
                    mark_old(
                        page, old_off, old_xmax, new_tid, hot, infobits, rec.xid, lsn,
                    )?;
                }
                set_flags(page, flags(page) & !PD_ALL_VISIBLE);
            }
        }
        (info::LOCK, 0) if !init => {
            // heap_xlog_lock, as the writer (try_update) locks: see the module doc.
            check_page(page, lsn)?;
            r.end()?;
            let xid = m.u32()?;
            let off = m.u16()?;
            m.end()?;
            let lp = normal_item(page, off, lsn)?;
            let t = hp::tuple_mut(page, lp);
            ht::set_xmax(t, xid);
            let mask = (t.infomask() & !(ht::HEAP_XMAX_INVALID | ht::HEAP_XMAX_COMMITTED))
                | ht::HEAP_XMAX_LOCK_ONLY;
            ht::set_infomask(t, mask);
        }
        (info::PRUNE, 0) => {
            // heap_xlog_prune → heap_page_prune_execute
            check_page(page, lsn)?;
            let _horizon = m.u32()?;
            m.end()?;
            let n = hp::max_offset(page);
            let (nr, nd, nu) = (r.u16()?, r.u16()?, r.u16()?);
            let mut off = || -> Result<u16> {
                let o = r.u16()?;
                if o == 0 || o > n {
                    return Err(r
                        .bad(&format!("offset {o} beyond {n} line pointers"))
                        .into());
                }
                Ok(o)
            };
            let mut res = PruneResult::default();
            for _ in 0..nr {
                res.redirected.push((off()?, off()?));
            }
            for _ in 0..nd {
                res.now_dead.push(off()?);
            }
            for _ in 0..nu {
                res.now_unused.push(off()?);
            }
            r.end()?;
            prune::execute(page, &res);
            check_page(page, lsn)?;
        }
        (info::VACUUM, 0) => {
            // heap_xlog_vacuum (and the PageRepairFragmentation the writer also does)
            check_page(page, lsn)?;
            m.end()?;
            if block.data.len() % 2 != 0 {
                return Err(r.bad("odd length").into());
            }
            let n = hp::max_offset(page);
            let mut offs = Vec::with_capacity(block.data.len() / 2);
            while !r.is_empty() {
                let o = r.u16()?;
                if o == 0 || o > n {
                    return Err(r
                        .bad(&format!("offset {o} beyond {n} line pointers"))
                        .into());
                }
                let lp = hp::item_id(page, o, crate::page::PageId::new(0, 0))
                    .map_err(|_| r.bad("bad line pointer"))?;
                if lp.state != LpState::Dead {
                    return Err(r
                        .bad(&format!("line pointer {o} is {:?}, not dead", lp.state))
                        .into());
                }
                offs.push(o);
            }
            for o in offs {
                hp::set_item_id(page, o, ItemId::UNUSED);
            }
            hp::truncate_line_pointers(page);
            hp::repair_fragmentation(page);
        }
        (info::VISIBLE, 0) => {
            // heap_xlog_visible: the heap page's PD_ALL_VISIBLE (the map is in memory).
            check_page(page, lsn)?;
            r.end()?;
            let _cutoff = m.u32()?;
            m.end()?;
            set_flags(page, flags(page) | PD_ALL_VISIBLE);
        }
        (i, b) => {
            return Err(corrupted(
                lsn,
                &format!(
                    "unknown info {:#04x} or block {b}",
                    i | (rec.info & info::INIT_PAGE)
                ),
            ))
        }
    }
    set_page_lsn(page, rec.end_lsn);
    Ok(())
}

/// Hides what redo does not reproduce (module doc, items 1 to 5), as heapam.c `heap_mask`
/// does for `wal_consistency_checking`: pd_prune_xid, PD_PAGE_FULL, tuple hint bits and
/// t_cid, the hole and the padding after each tuple. A page that is not a heap page, or
/// whose header cannot be trusted, is left as it is.
pub fn mask_unlogged(page: &mut [u8]) {
    if page_type(page) != PAGE_TYPE_HEAP || check_page(page, Lsn(0)).is_err() {
        return;
    }
    set_aux(page, 0);
    set_flags(page, flags(page) & !hp::PD_PAGE_FULL);
    let (lower, upper) = hole(page);
    page[lower as usize..upper as usize].fill(0);
    let id = crate::page::PageId::new(0, 0);
    for off in 1..=hp::max_offset(page) {
        let Ok(lp) = hp::item_id(page, off, id) else {
            continue;
        };
        if lp.state != LpState::Normal {
            continue;
        }
        let t = hp::tuple_mut(page, lp);
        let m = t.infomask()
            & !(ht::HEAP_XMIN_COMMITTED
                | ht::HEAP_XMIN_INVALID
                | ht::HEAP_XMAX_COMMITTED
                | ht::HEAP_XMAX_INVALID);
        ht::set_infomask(t, m);
        ht::set_cid(t, 0);
        let end = lp.off as usize + lp.len as usize;
        let pad_end = (lp.off as usize + ht::maxalign(lp.len as usize)).min(page.len());
        page[end..pad_end].fill(0);
    }
}
