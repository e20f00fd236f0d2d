//! Unit tests of the B+tree, one file per concern as the tree's own files are cut
//! (module doc of `btree`); this file holds the fixtures and helpers they share: presets,
//! a storage, key makers, scans collected, leaves read around the tree's code, and redo
//! onto zeroed pages checked byte for byte against the pool.

use super::node::{Meta, Node, NodeHeader, NO_BLOCK, SPECIAL_BYTES};
use super::*;
use crate::page::{set_page_lsn, PageId};
use crate::stats::{enter, Cause};
use crate::storage::{Storage, StorageConfig};
use crate::wal::{rmgr, Lsn, FIRST_LSN};
use crate::{Error, Result};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

mod bulk_delete;
mod bulk_load;
mod concurrency;
mod corruption;
mod create_open;
mod dead_entries;
mod entry_bytes;
mod incomplete_splits;
mod insert_split;
mod merge;
mod model;
mod page_garbage;
mod posting_lists;
mod purge_lag;
mod scans;
mod wal_records;

/// PostgreSQL's accounting without deduplication: for the tests whose keys do not end in
/// heap TIDs or whose values are not empty.
fn pg_plain() -> BTreeConfig {
    BTreeConfig {
        deduplicate: false,
        ..BTreeConfig::postgres()
    }
}

/// InnoDB's accounting without page merges: for the tests of what a tree that keeps its
/// empty leaves logs and scans.
fn innodb_no_merge() -> BTreeConfig {
    BTreeConfig {
        merge_threshold_pct: None,
        ..BTreeConfig::innodb()
    }
}
use crate::error::StorageError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

type Kv = (Vec<u8>, Vec<u8>);
/// A corruption case: name, page, how to damage it, what must then report corruption.
type Case<'c> = (
    &'c str,
    PageId,
    Box<dyn Fn(&mut [u8])>,
    &'c dyn Fn(&BTree) -> bool,
);

/// A storage of 8 KiB pages with `frames` frames and no background threads.
fn storage(frames: usize) -> Storage {
    Storage::open(StorageConfig::without_background(frames)).unwrap()
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:08}").into_bytes()
}

/// Shuffles `v` in place (Fisher–Yates) with an xorshift64 generator started at `seed`:
/// the same order on every run.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

fn collect(t: &BTree, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: ScanDirection) -> Result<Vec<Kv>> {
    let mut out = Vec::new();
    t.scan(lo, hi, dir, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })?;
    Ok(out)
}

fn all(t: &BTree) -> Vec<Kv> {
    collect(
        t,
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
    )
    .unwrap()
}

/// Every entry a live scan (`scan_live`, entries marked dead skipped) returns, forward,
/// with the leaf it was read from.
fn live(t: &BTree) -> Vec<(LeafRef, Vec<u8>)> {
    let mut out = Vec::new();
    t.scan_live(
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        &mut |leaf, k, _| {
            out.push((leaf, k.to_vec()));
            Ok(true)
        },
    )
    .unwrap();
    out
}

fn is_corrupted<T: std::fmt::Debug>(r: Result<T>) -> bool {
    matches!(r, Err(Error::Storage(StorageError::Corrupted { .. })))
}

/// Leaf blocks left to right with their keys, read around the tree's code.
fn leaves(s: &Storage, t: &BTree) -> Vec<(u32, Vec<Vec<u8>>)> {
    walk_level(s, t, 0, |n| {
        n.entries().unwrap().into_iter().map(|e| e.key).collect()
    })
}

/// The pages of level `level` of `t`, left to right along the right links from the
/// leftmost (reached from the root by first downlinks), each with `f` of its node.
fn walk_level<T>(s: &Storage, t: &BTree, level: u16, f: impl Fn(&Node<'_>) -> T) -> Vec<(u32, T)> {
    let pool = s.pool();
    let meta_id = PageId::new(t.rel(), 0);
    let meta = Meta::read(pool.fetch_read(meta_id).unwrap().data(), meta_id).unwrap();
    let mut b = meta.root;
    loop {
        let id = PageId::new(t.rel(), b);
        let g = pool.fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        if n.level() == level {
            break;
        }
        b = n.child(0).unwrap();
    }
    let mut out = Vec::new();
    while b != NO_BLOCK {
        let id = PageId::new(t.rel(), b);
        let g = pool.fetch_read(id).unwrap();
        let n = Node::parse(g.data(), id).unwrap();
        out.push((b, f(&n)));
        b = n.right();
    }
    out
}

/// Redo of the B+tree records of `recs` that name relation `rel`, in order, onto `pages`
/// (by block; a block not there yet starts zeroed) with `wal::redo_block`, restoring
/// full-page images where attached.
fn redo_onto(
    pages: &mut HashMap<u32, Vec<u8>>,
    recs: &[crate::wal::WalRecord],
    rel: crate::device::FileId,
    page_bytes: usize,
) {
    for r in recs.iter().filter(|r| r.rmgr == rmgr::BTREE) {
        for (b, blk) in r.blocks.iter().enumerate() {
            if blk.page.rel != rel {
                continue;
            }
            let p = pages
                .entry(blk.page.block)
                .or_insert_with(|| vec![0u8; page_bytes]);
            match &blk.image {
                Some(img) => {
                    img.restore(p).unwrap();
                    set_page_lsn(p, r.end_lsn);
                }
                None => wal::redo_block(r, b, p)
                    .unwrap_or_else(|e| panic!("redo of {:#04x} block {b}: {e}", r.info)),
            }
        }
    }
}

/// Checks that every used page of relation `rel` comes out of `pages` byte for byte as the
/// pool has it (page LSN included; checksum and identity, stamped only on write copies,
/// excepted). A free block (freed, or reserved in an extent and never used) is skipped.
fn assert_pages_match(s: &Storage, rel: crate::device::FileId, pages: &HashMap<u32, Vec<u8>>) {
    let n = s.store().n_blocks(rel).unwrap();
    assert!(
        pages.keys().all(|&b| b < n),
        "a logged page past the relation's end"
    );
    for block in 0..n {
        let id = PageId::new(rel, block);
        if s.store().is_free(id).unwrap() {
            continue;
        }
        let live = s.pool().fetch_read(id).unwrap();
        let redone = pages
            .get(&block)
            .unwrap_or_else(|| panic!("{id} is used but not logged"));
        assert!(
            live.data()[..8] == redone[..8] && live.data()[20..] == redone[20..],
            "{id} differs after redo"
        );
    }
}

/// Replays every B+tree record of `t` from the start of the WAL onto zeroed pages and
/// checks that every page of the relation comes out as the pool has it.
fn assert_redo_rebuilds(s: &Storage, t: &BTree) {
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let mut pages: HashMap<u32, Vec<u8>> = HashMap::new();
    redo_onto(&mut pages, &recs, t.rel(), s.store().page_size().bytes());
    assert_pages_match(s, t.rel(), &pages);
}

/// A PostgreSQL-shaped key: 8-byte index key `v`, then a 6-byte heap TID (block, offset).
fn heap_key(v: u64, block: u32, off: u16) -> Vec<u8> {
    let mut key = v.to_be_bytes().to_vec();
    key.extend_from_slice(&block.to_be_bytes());
    key.extend_from_slice(&off.to_be_bytes());
    key
}

/// Every entry of the scan, forward.
/// The keys a scan of `t` delivers, in the order it delivers them.
fn keys_in(t: &BTree, lo: Bound<&[u8]>, hi: Bound<&[u8]>, dir: ScanDirection) -> Vec<Vec<u8>> {
    collect(t, lo, hi, dir)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn keys_of(t: &BTree) -> Vec<Vec<u8>> {
    all(t).into_iter().map(|(k, _)| k).collect()
}

/// A table stand-in: the keys whose TID block is in `dead_blocks` (or whose TID offset is
/// in `dead_offsets`) point at tuples dead to everyone; counts the blocks it visits.
struct FakeHeap {
    dead_offsets: Vec<u16>,
    visits: std::sync::Mutex<Vec<u32>>,
}

impl IndexDeleteTuples for FakeHeap {
    fn heap_block(&self, key: &[u8]) -> Option<u32> {
        let n = key.len();
        Some(u32::from_be_bytes(key[n - 6..n - 2].try_into().unwrap()))
    }
    fn tid_suffix_bytes(&self) -> usize {
        6
    }
    fn index_delete_tuples(&self, op: &DeleteOp) -> Result<DeleteVerdict> {
        let mut blocks: Vec<u32> = op
            .candidates
            .iter()
            .filter_map(|c| self.heap_block(&c.key))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        self.visits.lock().unwrap().extend(blocks);
        Ok(DeleteVerdict {
            deletable: op
                .candidates
                .iter()
                .map(|c| {
                    let n = c.key.len();
                    let off = u16::from_be_bytes([c.key[n - 2], c.key[n - 1]]);
                    c.known_dead || self.dead_offsets.contains(&off)
                })
                .collect(),
            latest_removed_xid: 42,
        })
    }
}
