//! The B-tree page operations behind the innodb preset's split and merge churn under
//! oltp_update_index: a full 16 KiB leaf of `(k, id)` entries split by one insert, and the
//! two halves merged again when a delete takes the right one under the merge threshold
//! (InnoDB btr0btr.cc `btr_page_split_and_insert`, `btr_compress`). The purge thread does
//! the merges, so their cost sets how long each purge run lasts (issue 26,
//! docs/fidelity.md "The purge run's length").
//!
//! Run: `cargo bench -p mvcclab-engine --bench btree_ops`. Figures go to
//! docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, Criterion};
use mvcclab_engine::btree::{BTree, BTreeConfig};
use mvcclab_engine::page::PageSize;
use mvcclab_engine::{Storage, StorageConfig};

/// InnoDB's 16 KiB leaf holds 1,203 `(k, id)` entries of 8 key bytes and a 1-byte value.
const LEAF_ENTRIES: u32 = 1_203;

/// An 8-byte key that leaves a gap after every entry (room for `gap(i)`).
fn key(i: u32) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(&(i * 2).to_be_bytes());
    k
}

/// The key between `key(i)` and `key(i + 1)`.
fn gap(i: u32) -> [u8; 8] {
    let mut k = key(i);
    k[7] = 1;
    k
}

fn split_and_merge(c: &mut Criterion) {
    let mut cfg = StorageConfig::without_background(512);
    cfg.page_size = PageSize::K16;
    let storage = Storage::open(cfg).unwrap();
    let tree = BTree::create(storage.pool().clone(), BTreeConfig::innodb()).unwrap();
    // Three full leaves from a sorted build; the middle one churns.
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..3 * LEAF_ENTRIES)
        .map(|i| (key(i).to_vec(), vec![0]))
        .collect();
    tree.bulk_load(&entries, 100, 100).unwrap();
    let middle = LEAF_ENTRIES + LEAF_ENTRIES / 2;
    let mut g = c.benchmark_group("btree_ops/innodb_16k");
    g.bench_function("split_then_merge", |b| {
        b.iter(|| {
            // The insert splits the full middle leaf into halves; the delete takes the
            // right half under the merge threshold, and it fits into the left one.
            tree.insert(&gap(middle), &[0]).unwrap();
            tree.delete(&gap(middle)).unwrap();
        })
    });
    g.finish();
    let ops = tree.ops();
    assert!(
        ops.index_page_splits > 0 && ops.index_page_merge_successful >= ops.index_page_splits - 1,
        "every insert split and every delete merged: {ops:?}"
    );
}

criterion_group!(benches, split_and_merge);
criterion_main!(benches);
