//! Model-based test: random operations on a tree against a `BTreeMap` (redb
//! `fuzz_redb.rs`), reopened and redone.

use super::*;
use crate::error::TxnError;

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, usize, u8),
    Update(usize, usize, u8),
    Delete(usize),
    Get(usize),
    Scan {
        lo: (u8, usize),
        hi: (u8, usize),
        backward: bool,
        limit: usize,
    },
    BulkDelete(usize),
    Checkpoint,
    /// Reads 16 pages of another relation, evicting every unpinned page of the tree.
    Flood,
}

/// Mostly large values (up to about a quarter page), so that 16 frames cannot hold the
/// tree and leaves split every few inserts.
fn value_len() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 0usize..16, 3 => 300usize..2000]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (any::<usize>(), value_len(), any::<u8>()).prop_map(|(k, l, b)| Op::Insert(k, l, b)),
        3 => (any::<usize>(), value_len(), any::<u8>()).prop_map(|(k, l, b)| Op::Update(k, l, b)),
        2 => any::<usize>().prop_map(Op::Delete),
        2 => any::<usize>().prop_map(Op::Get),
        3 => ((0u8..3, any::<usize>()), (0u8..3, any::<usize>()), any::<bool>(), 1usize..400)
            .prop_map(|(lo, hi, backward, limit)| Op::Scan { lo, hi, backward, limit }),
        1 => (4usize..12).prop_map(Op::BulkDelete),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Flood),
    ]
}

/// Short keys over a 3-letter alphabet (many share prefixes, "" included), some padded
/// long, a few very long with long common prefixes, so that even truncated separators are
/// long and internal pages split too.
fn key() -> impl Strategy<Value = Vec<u8>> {
    let padded = |pad: std::ops::Range<usize>| {
        (proptest::collection::vec(b'a'..b'd', 0..8), pad).prop_map(|(mut k, pad)| {
            k.extend(std::iter::repeat_n(b'z', pad));
            k
        })
    };
    prop_oneof![
        3 => proptest::collection::vec(b'a'..b'd', 0..10),
        3 => padded(0..300),
        4 => padded(300..1800),
    ]
}

fn bound(b: (u8, usize), keys: &[Vec<u8>]) -> Bound<&[u8]> {
    let key = keys[b.1 % keys.len()].as_slice();
    match b.0 {
        0 => Bound::Unbounded,
        1 => Bound::Included(key),
        _ => Bound::Excluded(key),
    }
}

fn in_range(k: &[u8], lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    (match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Model-based: with 16 frames (evictions) and entries up to a quarter page (splits
    /// every few inserts), every operation answers as a BTreeMap does, and after every
    /// operation a full scan equals the map. At the end the structure checks out, the WAL
    /// replays to the same pages, and a reopened tree sees the same entries.
    #[test]
    fn tree_agrees_with_a_btreemap(
        keys in proptest::collection::vec(key(), 50..400),
        ops in proptest::collection::vec(op(), 100..600),
        innodb in any::<bool>(),
    ) {
        let s = storage(16);
        let cfg = if innodb { BTreeConfig::innodb() } else { pg_plain() };
        let t = BTree::create(s.pool().clone(), cfg.clone()).unwrap();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let max = t.max_entry_bytes();
        let scratch = s.store().create_relation().unwrap();
        for _ in 0..16 {
            crate::testkit::fill_and_log(s.wal(), &mut s.pool().new_page(scratch).unwrap(), 1, true).unwrap();
        }
        let fit = |key: &[u8], len: usize| len.min(max - key.len());
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert(i, len, b) => {
                    let key = &keys[i % keys.len()];
                    let v = vec![b; fit(key, len)];
                    let r = t.insert(key, &v);
                    if model.contains_key(key) {
                        prop_assert!(matches!(r, Err(Error::Txn(TxnError::DuplicateKey { .. }))), "{:?}", r);
                    } else {
                        r.unwrap();
                        model.insert(key.clone(), v);
                    }
                }
                Op::Update(i, len, b) => {
                    let key = &keys[i % keys.len()];
                    let v = vec![b; fit(key, len)];
                    let present = model.contains_key(key);
                    prop_assert_eq!(t.update_value(key, &v).unwrap(), present);
                    if present {
                        model.insert(key.clone(), v);
                    }
                }
                Op::Delete(i) => {
                    let key = &keys[i % keys.len()];
                    prop_assert_eq!(t.delete(key).unwrap(), model.remove(key).is_some());
                }
                Op::Get(i) => {
                    let key = &keys[i % keys.len()];
                    let got = t.get(key).unwrap();
                    prop_assert_eq!(got.as_ref(), model.get(key));
                }
                Op::Scan { lo, hi, backward, limit } => {
                    let (lo, hi) = (bound(lo, &keys), bound(hi, &keys));
                    let mut want: Vec<Kv> = model
                        .iter()
                        .filter(|(k, _)| in_range(k, lo, hi))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if backward {
                        want.reverse();
                    }
                    want.truncate(limit);
                    let mut got = Vec::new();
                    let dir = if backward { ScanDirection::Backward } else { ScanDirection::Forward };
                    t.scan(lo, hi, dir, &mut |k, v| {
                        got.push((k.to_vec(), v.to_vec()));
                        Ok(got.len() < limit)
                    }).unwrap();
                    prop_assert_eq!(got, want);
                }
                Op::BulkDelete(m) => {
                    let dead = |k: &[u8], v: &[u8]| (k.len() + v.len()).is_multiple_of(m);
                    let before = model.len();
                    model.retain(|k, v| !dead(k, v));
                    let removed = t.bulk_delete(&mut |k, v| dead(k, v)).unwrap();
                    prop_assert_eq!(removed as usize, before - model.len());
                }
                Op::Checkpoint => {
                    s.checkpoint().unwrap();
                }
                Op::Flood => {
                    for b in 0..16 {
                        drop(s.pool().fetch_read(PageId::new(scratch, b)).unwrap());
                    }
                }
            }
            let got: Vec<Kv> = all(&t);
            let want: Vec<Kv> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(got, want, "after op {}", n);
            if n % 25 == 0 {
                t.verify().unwrap();
            }
        }
        let st = t.verify().unwrap();
        prop_assert_eq!(st.entries as usize, model.len());
        prop_assert_eq!(t.stats().unwrap(), st);
        assert_redo_rebuilds(&s, &t);
        let again = BTree::open(s.pool().clone(), t.rel(), cfg).unwrap();
        let want: Vec<Kv> = model.into_iter().collect();
        prop_assert_eq!(all(&again), want);
    }
}
