//! oltp_update_index's `k` index at the `sweep` scale on one tree (docs/fidelity.md,
//! "Splits and merges at `sweep`: the purge lag"): 250,000 entries `(k, id)` built full
//! (as both engines build it, `innodb_fill_factor` 100), then `UPDATE ... SET k = k + 1`
//! on rows drawn from sysbench's default distribution: each update inserts `(k + 1, id)`
//! and, `lag` updates later, purge removes `(k, id)`. Every leaf split in the middle sits
//! below the merge threshold, so a purge delete on either half merges them back and the
//! next insert splits the full page again: how often that happens depends on how many
//! inserts land between a split and the purge of its halves, that is on the purge lag.
//! Long (about a minute in a debug build), so ignored: `cargo test -p mvcclab-engine --lib
//! -- --ignored split_and_merge_rates_fall_as_purge_lags --nocapture`.

use super::*;
use crate::device::SplitMix64;
use crate::page::PageSize;
use std::collections::VecDeque;

/// sysbench 1.0.20's special distribution (sb_rand.c `sb_rand_special`,
/// `--rand-spec-pct=1 --rand-spec-res=75 --rand-spec-iter=12`) over SplitMix64, enough for
/// a key stream.
struct SpecialRng(SplitMix64);

impl SpecialRng {
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn special(&mut self, a: u32, b: u32) -> u32 {
        let t = (b - a) as f64;
        let rnd = self.unit();
        if rnd * t * 4.0 < t {
            let sum: f64 = (0..12).map(|_| self.unit()).sum();
            return a + (sum * t / 12.0) as u32;
        }
        a + (rnd * (t / 100.0 + 1.0) + t / 2.0 - t / 200.0) as u32
    }
}

/// A secondary entry's key: `k`, then the primary key, both order-preserving.
fn sec_key(k: u32, id: u32) -> Vec<u8> {
    let mut v = (k ^ 0x8000_0000).to_be_bytes().to_vec();
    v.extend_from_slice(&(id ^ 0x8000_0000).to_be_bytes());
    v
}

/// Splits, merges and merge attempts per update over `measured` updates after `warm_up`,
/// with purge `lag` updates behind.
fn rates(lag: usize, warm_up: usize, measured: usize) -> (f64, f64, f64) {
    let mut sc = StorageConfig::without_background(4000);
    sc.page_size = PageSize::K16;
    let s = Storage::open(sc).unwrap();
    let t = BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap();
    let rows = 250_000u32;
    let mut rng = SpecialRng(SplitMix64(42));
    let mut k: Vec<u32> = (0..=rows).map(|_| rng.special(1, rows)).collect();
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (1..=rows)
        .map(|id| (sec_key(k[id as usize], id), vec![0u8]))
        .collect();
    entries.sort();
    t.bulk_load(&entries, 100, 100).unwrap();
    let mut purge = VecDeque::new();
    let mut base = t.ops();
    for n in 0..warm_up + measured {
        if n == warm_up {
            base = t.ops();
        }
        let id = rng.special(1, rows) as usize;
        t.insert(&sec_key(k[id] + 1, id as u32), &[0u8]).unwrap();
        purge.push_back(sec_key(k[id], id as u32));
        k[id] += 1;
        if purge.len() > lag {
            assert!(t.delete(&purge.pop_front().unwrap()).unwrap());
        }
    }
    let o = t.ops();
    let per = |a: u64, b: u64| (a - b) as f64 / measured as f64;
    (
        per(o.index_page_splits, base.index_page_splits),
        per(
            o.index_page_merge_successful,
            base.index_page_merge_successful,
        ),
        per(o.index_page_merge_attempts, base.index_page_merge_attempts),
    )
}

/// One table's share of a 10 s warm-up and a 30 s phase at `sweep` (about 120 updates a
/// second per table): a purge 30 updates behind splits and merges more often than one
/// 120 behind, by more than a tenth.
#[test]
#[ignore]
fn split_and_merge_rates_fall_as_purge_lags() {
    let short = rates(30, 1_200, 3_500);
    let long = rates(120, 1_200, 3_500);
    println!("lag 30: splits, merges, attempts per update {short:.3?}");
    println!("lag 120: {long:.3?}");
    assert!(short.0 > long.0 * 1.1, "{short:?} against {long:?}");
    assert!(short.1 > long.1 * 1.1, "{short:?} against {long:?}");
}
