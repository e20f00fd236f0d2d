//! Deduplication: posting lists in the leaves of a heap index (PostgreSQL 13+ nbtdedup.c,
//! nbtree/README "Notes about deduplication", REL_15).
//!
//! In a tree with [`super::BTreeConfig::deduplicate`] every leaf key ends in a
//! [`TID_BYTES`]-byte heap TID and values are empty. A run of entries whose keys are equal
//! before the TID (`K`) can be stored as one *posting entry*:
//! ```text
//! | key                  | value                                          |
//! |----------------------|------------------------------------------------|
//! | K ‖ tid_min (6 bytes)| tid_2 ‖ tid_3 ‖ ... ‖ tid_max, 6 bytes each,   |
//! |                      | strictly ascending, all above tid_min          |
//! ```
//! so it sorts where its first TID would (PostgreSQL's posting tuple keeps the key once and
//! an array of TIDs, `BTreeTupleGetPosting`; its `t_tid` names the first). In a dedup tree
//! a leaf entry with a non-empty value is a posting entry, and every TID of a posting entry
//! lies strictly between its key and the next entry's key (`K ‖ tid_max < next key`).
//! Outside the tree everything stays per TID: scans, lookups, deletes, kill bits, vacuum
//! and deletion candidates all name `K ‖ tid`.
//!
//! The pieces, each with its PostgreSQL counterpart:
//! - [`plan_pass`]: the deduplication pass over a full leaf (`_bt_dedup_pass`), merging
//!   runs of equal `K` into posting entries of at most [`max_posting_bytes`]
//!   (`maxpostingsize`), whole page; [`apply_pass`] applies it (the same function in the
//!   running tree and in redo of the DEDUP record: `_bt_dedup_pass` / `btree_xlog_dedup`).
//! - [`swap_insert`]: an insert whose TID falls inside a posting entry's range (PostgreSQL's
//!   "posting list split", `_bt_swap_posting`): the new TID goes into the list and the
//!   list's largest TID comes out as a plain entry right after it, so the posting entry
//!   keeps its size and the page takes one plain entry, exactly what any other insert
//!   takes (PostgreSQL: the same, in one XLOG_BTREE_INSERT_POST record).
//! - [`merge_sorted`]: the sorted build's merging (nbtsort.c `_bt_sort_dedup_finish_pending`).
//! - [`without`]: a posting entry with some TIDs removed (nbtree.c `btreevacuumposting`,
//!   nbtdedup.c `_bt_update_posting`).

use super::node::{self, Entry, Node};
use crate::error::{Error, Result};
use crate::page::PageId;

/// Bytes of a heap TID at the end of every key of a deduplicating tree (block u32 +
/// offset u16, PostgreSQL `ItemPointerData`).
pub const TID_BYTES: usize = 6;

/// Largest key + value of a posting entry for a tree whose entries may have
/// `max_entry_bytes` and whose pages have `usable` bytes: a sixth of the page (PostgreSQL
/// `maxpostingsize = BTMaxItemSize(page) / 2`, BTMaxItemSize being about a third of the
/// page), at most the tree's own limit.
pub fn max_posting_bytes(max_entry_bytes: usize, usable: usize) -> usize {
    max_entry_bytes.min(usable / 6)
}

/// True when (key, value) is a posting entry of a leaf of a deduplicating tree.
pub fn is_posting(key: &[u8], value: &[u8]) -> bool {
    !value.is_empty() && key.len() >= TID_BYTES
}

/// `K`: the key without its TID (the whole key when it is shorter than a TID).
pub fn prefix(key: &[u8]) -> &[u8] {
    &key[..key.len().saturating_sub(TID_BYTES)]
}

/// The TIDs (each [`TID_BYTES`] bytes) of a leaf entry of a deduplicating tree: the key's
/// own, then the posting list's.
pub fn tids<'a>(key: &'a [u8], value: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let own = &key[key.len().saturating_sub(TID_BYTES)..];
    std::iter::once(own).chain(value.chunks(TID_BYTES))
}

/// Number of TIDs of a leaf entry of a deduplicating tree.
pub fn n_tids(value: &[u8]) -> usize {
    1 + value.len() / TID_BYTES
}

/// The per-TID keys `K ‖ tid` of a leaf entry of a deduplicating tree, ascending.
pub fn expand(key: &[u8], value: &[u8]) -> Vec<Vec<u8>> {
    let k = prefix(key);
    tids(key, value)
        .map(|t| {
            let mut v = Vec::with_capacity(k.len() + TID_BYTES);
            v.extend_from_slice(k);
            v.extend_from_slice(t);
            v
        })
        .collect()
}

/// The largest per-TID key of a leaf entry of a deduplicating tree (`K ‖ tid_max`).
pub fn max_key(key: &[u8], value: &[u8]) -> Vec<u8> {
    // (A value shorter than a TID is corrupt: checked by `check_entry`; no panic here.)
    if !is_posting(key, value) || value.len() < TID_BYTES {
        return key.to_vec();
    }
    let mut v = prefix(key).to_vec();
    v.extend_from_slice(&value[value.len() - TID_BYTES..]);
    v
}

/// The entry holding `K` and the TIDs `tids` (ascending, at least one): plain
/// `(K ‖ tid, [])` for one TID, else a posting entry.
pub fn make_entry(k: &[u8], tids: &[&[u8]]) -> Entry {
    let mut key = Vec::with_capacity(k.len() + TID_BYTES);
    key.extend_from_slice(k);
    key.extend_from_slice(tids[0]);
    Entry {
        key,
        value: tids[1..].concat(),
    }
}

/// Checks a posting entry read from a page or a record: the value a whole number of TIDs,
/// the TIDs strictly ascending.
fn check_posting(id: PageId, key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() < TID_BYTES || !value.len().is_multiple_of(TID_BYTES) {
        return Err(bad(
            id,
            format!(
                "posting entry with a {}-byte key and a {}-byte TID list",
                key.len(),
                value.len()
            ),
        ));
    }
    let t: Vec<&[u8]> = tids(key, value).collect();
    if t.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad(id, "posting list TIDs are not ascending"));
    }
    Ok(())
}

fn bad(id: PageId, what: impl std::fmt::Display) -> Error {
    Error::corrupted(format!("B+tree {id}: {what}"))
}

/// A deduplication pass's plan: intervals `(first slot, count)` of the page's entries,
/// ascending and disjoint, each merged into one posting entry (PostgreSQL logs the same
/// intervals in XLOG_BTREE_DEDUP, `BTDedupInterval`).
pub type Intervals = Vec<(usize, usize)>;

/// Plans the deduplication pass over the leaf `n` (PostgreSQL nbtdedup.c
/// `_bt_dedup_pass`: runs of equal `K` merged left to right, a pending posting list
/// finished when the next TIDs would pass `max_posting` bytes of key + value,
/// `_bt_dedup_save_htid`). Entries marked dead are left out of merging (the pass runs after
/// simple deletion has removed what it could). Returns the intervals and the bytes the
/// pass frees; an empty plan when no run has two entries.
pub fn plan_pass(n: &Node<'_>, max_posting: usize) -> Result<(Intervals, usize)> {
    let geo = n.geometry();
    let mut out = Vec::new();
    let mut saved = 0usize;
    let mut i = 0;
    while i < n.len() {
        let (k0, v0) = n.entry(i)?;
        if k0.len() < TID_BYTES || n.is_dead(i) {
            i += 1;
            continue;
        }
        let mut payload = k0.len() + v0.len();
        let mut space = geo.space(k0.len(), v0.len());
        let mut j = i + 1;
        while j < n.len() {
            let (k, v) = n.entry(j)?;
            if n.is_dead(j) || k.len() != k0.len() || prefix(k) != prefix(k0) {
                break;
            }
            let more = TID_BYTES + v.len();
            if payload + more > max_posting {
                break;
            }
            payload += more;
            space += geo.space(k.len(), v.len());
            j += 1;
        }
        if j - i >= 2 {
            let merged = geo.space(k0.len(), payload - k0.len());
            saved += space.saturating_sub(merged);
            out.push((i, j - i));
        }
        i = j;
    }
    Ok((out, saved))
}

/// Applies a deduplication plan to leaf page `p`: rebuilds it with each interval merged
/// into one posting entry (the header kept; slot flags, hints, are lost as in a split).
/// The same function runs the pass and its redo, so both leave the same bytes.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page, intervals out of order or range, entries
/// of an interval that do not share `K` or whose TIDs are not ascending, or a result that
/// does not fit.
pub fn apply_pass(p: &mut [u8], id: PageId, intervals: &[(usize, usize)]) -> Result<()> {
    let (geo, h, entries) = {
        let n = Node::parse(p, id)?;
        if n.level() != 0 {
            return Err(bad(id, "deduplication of an internal page"));
        }
        (n.geometry(), n.header(), n.entries()?)
    };
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut next = 0usize;
    for &(first, count) in intervals {
        if first < next || count < 2 || first + count > entries.len() {
            return Err(bad(
                id,
                format!(
                    "deduplication interval {first}+{count} out of order or range ({} entries)",
                    entries.len()
                ),
            ));
        }
        out.extend(entries[next..first].iter().cloned());
        let run = &entries[first..first + count];
        let k = prefix(&run[0].key);
        let mut all: Vec<&[u8]> = Vec::new();
        for e in run {
            if e.key.len() != run[0].key.len() || prefix(&e.key) != k {
                return Err(bad(id, "deduplication interval with different keys"));
            }
            if !e.value.is_empty() {
                check_posting(id, &e.key, &e.value)?;
            }
            all.extend(tids(&e.key, &e.value));
        }
        if all.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad(id, "deduplication interval with TIDs out of order"));
        }
        out.push(make_entry(k, &all));
        next = first + count;
    }
    out.extend(entries[next..].iter().cloned());
    let pairs: Vec<(&[u8], &[u8])> = out
        .iter()
        .map(|e| (e.key.as_slice(), e.value.as_slice()))
        .collect();
    node::build(p, id, geo, h, &pairs)
}

/// The posting entry at `slot` after `tid` went into it and its largest TID came out, and
/// that TID's plain entry (PostgreSQL nbtdedup.c `_bt_swap_posting`). `tid` must lie
/// strictly between the entry's first and last TIDs and not be in the list.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) when it does not.
pub fn swapped(id: PageId, key: &[u8], value: &[u8], tid: &[u8]) -> Result<(Entry, Entry)> {
    check_posting(id, key, value)?;
    let mut all: Vec<&[u8]> = tids(key, value).collect();
    let last = all[all.len() - 1];
    if tid.len() != TID_BYTES || tid <= all[0] || tid >= last {
        return Err(bad(id, "TID outside the posting entry it is swapped into"));
    }
    let Err(at) = all.binary_search(&tid) else {
        return Err(bad(
            id,
            "TID already in the posting entry it is swapped into",
        ));
    };
    all.insert(at, tid);
    all.pop();
    let k = prefix(key);
    Ok((make_entry(k, &all), make_entry(k, &[last])))
}

/// [`swapped`] applied to leaf page `p`: the posting entry at `slot` rewritten in place
/// (same size) and the plain entry inserted at `slot + 1`. The same function runs the
/// insert and its redo (INSERT_POST).
///
/// Errors: as [`swapped`], and [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad page or no room.
pub fn swap_insert(p: &mut [u8], id: PageId, slot: usize, tid: &[u8]) -> Result<()> {
    let (post, plain) = {
        let n = Node::parse(p, id)?;
        let (k, v) = n.entry(slot)?;
        swapped(id, k, v, tid)?
    };
    node::replace_at(p, id, slot, &post.key, &post.value)?;
    // A live TID joined the entry: a kill bit set for the old TIDs no longer holds
    // (PostgreSQL deletes an LP_DEAD posting tuple before it would split it,
    // `_bt_findinsertloc` with `postingoff == -1`).
    node::clear_dead(p, id, slot)?;
    node::insert_at(p, id, slot + 1, &plain.key, &plain.value)
}

/// The entry (key, value) without the TIDs for which `gone` is true, or `None` when none
/// is left (nbtree.c `btreevacuumposting`, nbtdedup.c `_bt_update_posting`).
pub fn without(key: &[u8], value: &[u8], gone: impl Fn(usize) -> bool) -> Option<Entry> {
    let keep: Vec<&[u8]> = tids(key, value)
        .enumerate()
        .filter(|(i, _)| !gone(*i))
        .map(|(_, t)| t)
        .collect();
    (!keep.is_empty()).then(|| make_entry(prefix(key), &keep))
}

/// Merges sorted per-TID entries (empty values, keys ascending) into posting entries of at
/// most `max_posting` bytes of key + value where runs of equal `K` allow (nbtsort.c
/// `_bt_sort_dedup_finish_pending`, with `_bt_dedup_save_htid`'s limit).
pub fn merge_sorted(entries: &[(Vec<u8>, Vec<u8>)], max_posting: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(entries.len());
    let mut i = 0;
    while i < entries.len() {
        let k0 = &entries[i].0;
        if k0.len() < TID_BYTES || !entries[i].1.is_empty() {
            out.push(entries[i].clone());
            i += 1;
            continue;
        }
        let mut payload = k0.len();
        let mut j = i + 1;
        while j < entries.len() {
            let k = &entries[j].0;
            if !entries[j].1.is_empty()
                || k.len() != k0.len()
                || prefix(k) != prefix(k0)
                || payload + TID_BYTES > max_posting
            {
                break;
            }
            payload += TID_BYTES;
            j += 1;
        }
        let all: Vec<&[u8]> = entries[i..j]
            .iter()
            .map(|e| &e.0[e.0.len() - TID_BYTES..])
            .collect();
        let e = make_entry(prefix(k0), &all);
        out.push((e.key, e.value));
        i = j;
    }
    out
}

/// Checks leaf entry (key, value) of a deduplicating tree for [`super::BTree::verify`]:
/// a posting entry well formed and its largest TID below `next` (the next key, or the
/// page's high bound). Returns its number of TIDs.
///
/// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the page.
pub fn check_entry(id: PageId, key: &[u8], value: &[u8], next: Option<&[u8]>) -> Result<usize> {
    if value.is_empty() {
        return Ok(1);
    }
    check_posting(id, key, value)?;
    if next.is_some_and(|nx| max_key(key, value).as_slice() >= nx) {
        return Err(bad(
            id,
            "a posting entry's largest TID is not below the next key",
        ));
    }
    Ok(n_tids(value))
}
