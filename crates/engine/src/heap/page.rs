//! The heap page: line pointers growing up from the header, tuples growing down
//! (PostgreSQL src/include/storage/bufpage.h, itemid.h; src/backend/storage/page/bufpage.c).
//!
//! ```text
//! | offset       | bytes      | field                                                     |
//! |--------------|------------|-----------------------------------------------------------|
//! | 0            | 32         | common page header (page/mod.rs); page_type = 1 (heap),   |
//! |              |            | lower = pd_lower, upper = pd_upper, special = page size,  |
//! |              |            | flags = PD_HAS_FREE_LINES 0x1 / PD_PAGE_FULL 0x2 /        |
//! |              |            | PD_ALL_VISIBLE 0x4, aux = pd_prune_xid                    |
//! | 32 + 4(i−1)  | 4          | line pointer i (ItemIdData, u32 LE): lp_off bits 0–14,    |
//! |              |            | lp_flags bits 15–16 (0 unused, 1 normal, 2 redirect,      |
//! |              |            | 3 dead), lp_len bits 17–31                                 |
//! | lower…upper  |            | free space (the hole)                                     |
//! | upper…end    |            | tuples, each at a MAXALIGN (8) offset, MAXALIGN'd length  |
//! ```
//! Offsets (OffsetNumber) count from 1. PostgreSQL's page header is 24 bytes; mvcclab's
//! common header is 32, so a heap page holds 8 bytes less (documented difference).

use super::tuple::{maxalign, HEADER_BYTES};
use crate::error::{Error, Result};
use crate::page::{flags, hole, init_page, set_flags, set_hole, PageId, PAGE_HEADER_BYTES};

/// Page type tag of heap pages.
pub const PAGE_TYPE_HEAP: u8 = 1;
/// Line pointer size (sizeof(ItemIdData)).
pub const ITEM_ID_BYTES: usize = 4;
/// PD_HAS_FREE_LINES: some line pointer is unused.
pub const PD_HAS_FREE_LINES: u8 = 0x1;
/// PD_PAGE_FULL: an update found no room on the page (a hint for pruning).
pub const PD_PAGE_FULL: u8 = 0x2;
/// PD_ALL_VISIBLE: every tuple is visible to every transaction.
pub const PD_ALL_VISIBLE: u8 = 0x4;

/// Line pointer states (itemid.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LpState {
    /// LP_UNUSED: free for reuse.
    Unused,
    /// LP_NORMAL: points at a tuple.
    Normal,
    /// LP_REDIRECT: HOT chain root redirected to offset `off`.
    Redirect,
    /// LP_DEAD: dead, storage reclaimed, index entries may still point here.
    Dead,
}

/// A decoded line pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId {
    /// Tuple offset in the page (or redirect target offset number).
    pub off: u16,
    /// State.
    pub state: LpState,
    /// Tuple length in bytes (0 unless normal).
    pub len: u16,
}

impl ItemId {
    /// An unused line pointer (PostgreSQL `ItemIdSetUnused`).
    pub const UNUSED: ItemId = ItemId {
        off: 0,
        state: LpState::Unused,
        len: 0,
    };
    /// A dead line pointer without storage (`ItemIdSetDead`).
    pub const DEAD: ItemId = ItemId {
        off: 0,
        state: LpState::Dead,
        len: 0,
    };
}

/// Tuples that fit on a page at most (htup_details.h `MaxHeapTuplesPerPage`).
pub fn max_heap_tuples_per_page(page_bytes: usize) -> usize {
    (page_bytes - PAGE_HEADER_BYTES) / (maxalign(HEADER_BYTES) + ITEM_ID_BYTES)
}

/// Initializes an empty heap page (bufpage.c `PageInit`).
pub fn init(page: &mut [u8]) {
    init_page(page, PAGE_TYPE_HEAP, 0);
}

/// Number of line pointers (PageGetMaxOffsetNumber).
pub fn max_offset(page: &[u8]) -> u16 {
    let (lower, _) = hole(page);
    ((lower as usize).saturating_sub(PAGE_HEADER_BYTES) / ITEM_ID_BYTES) as u16
}

fn lp_pos(off: u16) -> usize {
    PAGE_HEADER_BYTES + (off as usize - 1) * ITEM_ID_BYTES
}

/// Line pointer `off` (1-based). A normal line pointer returned here points at a tuple
/// inside the page that is at least a tuple header long, so [`tuple()`] and the
/// [`super::tuple::HeaderRead`] accessors on it cannot go out of bounds.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when `off` is out of range, the line pointer lies past the
/// end of the page (pd_lower beyond it), or a normal line pointer's tuple lies outside the
/// page or is shorter than a tuple header.
pub fn item_id(page: &[u8], off: u16, id: PageId) -> Result<ItemId> {
    if off == 0 || off > max_offset(page) {
        return Err(Error::corrupted(format!(
            "{id}: line pointer {off} out of range"
        )));
    }
    let p = lp_pos(off);
    if p + ITEM_ID_BYTES > page.len() {
        return Err(Error::corrupted(format!(
            "{id}: line pointer {off} lies past the end of the page"
        )));
    }
    let v = u32::from_le_bytes(page[p..p + 4].try_into().expect("4 bytes"));
    let lp_off = (v & 0x7FFF) as u16;
    let state = match (v >> 15) & 3 {
        0 => LpState::Unused,
        1 => LpState::Normal,
        2 => LpState::Redirect,
        _ => LpState::Dead,
    };
    let len = (v >> 17) as u16;
    if state == LpState::Normal
        && (lp_off as usize + len as usize > page.len() || (lp_off as usize) < PAGE_HEADER_BYTES)
    {
        return Err(Error::corrupted(format!(
            "{id}: line pointer {off} points outside the page"
        )));
    }
    if state == LpState::Normal && (len as usize) < HEADER_BYTES {
        return Err(Error::corrupted(format!(
            "{id}: line pointer {off} holds {len} bytes, less than a tuple header"
        )));
    }
    Ok(ItemId {
        off: lp_off,
        state,
        len,
    })
}

/// Writes line pointer `off`.
pub fn set_item_id(page: &mut [u8], off: u16, lp: ItemId) {
    let flags = match lp.state {
        LpState::Unused => 0u32,
        LpState::Normal => 1,
        LpState::Redirect => 2,
        LpState::Dead => 3,
    };
    let v = (lp.off as u32 & 0x7FFF) | (flags << 15) | ((lp.len as u32) << 17);
    let p = lp_pos(off);
    page[p..p + 4].copy_from_slice(&v.to_le_bytes());
}

/// Bytes of the tuple at a normal line pointer.
pub fn tuple(page: &[u8], lp: ItemId) -> &[u8] {
    &page[lp.off as usize..lp.off as usize + lp.len as usize]
}

/// Mutable bytes of the tuple at a normal line pointer.
pub fn tuple_mut(page: &mut [u8], lp: ItemId) -> &mut [u8] {
    &mut page[lp.off as usize..lp.off as usize + lp.len as usize]
}

/// PageGetFreeSpace: the hole minus one line pointer (0 if smaller).
pub fn free_space(page: &[u8]) -> usize {
    let (lower, upper) = hole(page);
    (upper as usize)
        .saturating_sub(lower as usize)
        .saturating_sub(ITEM_ID_BYTES)
}

/// PageGetHeapFreeSpace: [`free_space`], but 0 when the page already has
/// `MaxHeapTuplesPerPage` line pointers and none is unused. The PD_HAS_FREE_LINES flag is
/// only a hint, so it is confirmed by looking for an unused line pointer, as bufpage.c does
/// ("the hint is wrong, but we can't clear it here"). A page whose pd_lower lies past its
/// end (corrupted) has no free space.
pub fn heap_free_space(page: &[u8]) -> usize {
    if hole(page).0 as usize > page.len() {
        return 0;
    }
    let n = max_offset(page);
    if n as usize >= max_heap_tuples_per_page(page.len()) {
        if flags(page) & PD_HAS_FREE_LINES == 0 {
            return 0;
        }
        let any_unused = (1..=n).any(|off| {
            let p = lp_pos(off);
            (u32::from_le_bytes(page[p..p + 4].try_into().expect("4 bytes")) >> 15) & 3 == 0
        });
        if !any_unused {
            return 0;
        }
    }
    free_space(page)
}

/// PageAddItem for heap tuples: stores `tup` in the first unused line pointer (when the page
/// has free lines) or a new one; returns its offset, or `None` when it does not fit.
pub fn add_tuple(page: &mut [u8], tup: &[u8]) -> Option<u16> {
    let n = max_offset(page);
    let mut reuse = None;
    if flags(page) & PD_HAS_FREE_LINES != 0 {
        for off in 1..=n {
            let p = lp_pos(off);
            let v = u32::from_le_bytes(page[p..p + 4].try_into().expect("4 bytes"));
            if (v >> 15) & 3 == 0 {
                reuse = Some(off);
                break;
            }
        }
        if reuse.is_none() {
            set_flags(page, flags(page) & !PD_HAS_FREE_LINES);
        }
    }
    let (lower, upper) = hole(page);
    let need = maxalign(tup.len()) + if reuse.is_some() { 0 } else { ITEM_ID_BYTES };
    if (upper as usize).saturating_sub(lower as usize) < need {
        return None;
    }
    if reuse.is_none() && n as usize >= max_heap_tuples_per_page(page.len()) {
        return None;
    }
    let new_upper = upper as usize - maxalign(tup.len());
    page[new_upper..new_upper + tup.len()].copy_from_slice(tup);
    let off = reuse.unwrap_or(n + 1);
    set_item_id(
        page,
        off,
        ItemId {
            off: new_upper as u16,
            state: LpState::Normal,
            len: tup.len() as u16,
        },
    );
    let new_lower = if reuse.is_some() {
        lower
    } else {
        lower + ITEM_ID_BYTES as u16
    };
    set_hole(page, new_lower, new_upper as u16);
    Some(off)
}

/// PageRepairFragmentation: moves the normal tuples together at the end of the page,
/// leaving one contiguous hole, and sets or clears PD_HAS_FREE_LINES.
pub fn repair_fragmentation(page: &mut [u8]) {
    let n = max_offset(page);
    let mut items: Vec<(u16, ItemId)> = Vec::new();
    let mut any_unused = false;
    for off in 1..=n {
        let p = lp_pos(off);
        let v = u32::from_le_bytes(page[p..p + 4].try_into().expect("4 bytes"));
        match (v >> 15) & 3 {
            0 => any_unused = true,
            1 => items.push((
                off,
                ItemId {
                    off: (v & 0x7FFF) as u16,
                    state: LpState::Normal,
                    len: (v >> 17) as u16,
                },
            )),
            _ => {}
        }
    }
    // Copy tuples out in descending page order, then lay them down from the end.
    items.sort_by_key(|b| std::cmp::Reverse(b.1.off));
    let copies: Vec<(u16, Vec<u8>)> = items
        .iter()
        .map(|(o, lp)| (*o, tuple(page, *lp).to_vec()))
        .collect();
    let mut upper = page.len();
    for (off, bytes) in copies {
        upper -= maxalign(bytes.len());
        page[upper..upper + bytes.len()].copy_from_slice(&bytes);
        set_item_id(
            page,
            off,
            ItemId {
                off: upper as u16,
                state: LpState::Normal,
                len: bytes.len() as u16,
            },
        );
    }
    let (lower, _) = hole(page);
    set_hole(page, lower, upper as u16);
    let f = flags(page);
    set_flags(
        page,
        if any_unused {
            f | PD_HAS_FREE_LINES
        } else {
            f & !PD_HAS_FREE_LINES
        },
    );
}

/// PageTruncateLinePointerArray (PostgreSQL 14+): drops trailing unused line pointers.
pub fn truncate_line_pointers(page: &mut [u8]) {
    let mut n = max_offset(page);
    while n > 0 {
        let p = lp_pos(n);
        let v = u32::from_le_bytes(page[p..p + 4].try_into().expect("4 bytes"));
        if (v >> 15) & 3 != 0 {
            break;
        }
        page[p..p + 4].fill(0);
        n -= 1;
    }
    let (_, upper) = hole(page);
    set_hole(
        page,
        (PAGE_HEADER_BYTES + n as usize * ITEM_ID_BYTES) as u16,
        upper,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_reuse_and_compact() {
        let id = PageId::new(16384, 0);
        let mut p = vec![0u8; 8192];
        init(&mut p);
        assert_eq!(free_space(&p), 8192 - 32 - 4);
        let a = add_tuple(&mut p, &[1u8; 100]).unwrap();
        let b = add_tuple(&mut p, &[2u8; 50]).unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(free_space(&p), 8192 - 32 - 8 - 104 - 56 - 4);
        // Free the first, compact, reuse its line pointer.
        set_item_id(&mut p, a, ItemId::UNUSED);
        repair_fragmentation(&mut p);
        assert_eq!(flags(&p) & PD_HAS_FREE_LINES, PD_HAS_FREE_LINES);
        assert_eq!(tuple(&p, item_id(&p, b, id).unwrap()), &[2u8; 50]);
        let c = add_tuple(&mut p, &[3u8; 10]).unwrap();
        assert_eq!(c, 1);
        assert_eq!(max_offset(&p), 2);
        set_item_id(&mut p, b, ItemId::UNUSED);
        set_item_id(&mut p, c, ItemId::UNUSED);
        truncate_line_pointers(&mut p);
        assert_eq!(max_offset(&p), 0);
        assert!(item_id(&p, 1, id).is_err());
    }

    #[test]
    fn a_line_pointer_array_past_the_page_end_is_corrupted_not_a_panic() {
        let id = PageId::new(16384, 0);
        let mut p = vec![0u8; 8192];
        init(&mut p);
        add_tuple(&mut p, &[1u8; 40]).unwrap();
        p[36..8152].fill(0xFF);
        let (_, upper) = hole(&p);
        set_hole(&mut p, 0x2100, upper);
        set_flags(&mut p, PD_HAS_FREE_LINES);
        assert_eq!(heap_free_space(&p), 0);
        assert!(item_id(&p, max_offset(&p), id).is_err());
        // A normal line pointer shorter than a tuple header.
        let mut q = vec![0u8; 8192];
        init(&mut q);
        let off = add_tuple(&mut q, &[1u8; 10]).unwrap();
        assert!(item_id(&q, off, id).is_err());
    }

    #[test]
    fn max_tuples_per_page_matches_postgres_arithmetic() {
        // PostgreSQL: (8192 - 24) / (24 + 4) = 291; our header is 8 bytes larger.
        assert_eq!(max_heap_tuples_per_page(8192), (8192 - 32) / 28);
    }
}
