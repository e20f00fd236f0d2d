//! Tests of vacuum's bulk delete (`vacuum.rs`).

use super::*;

#[test]
fn bulk_delete_removes_exactly_the_dead_entries_with_one_record_per_leaf() {
    let s = storage(128);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..4000u32 {
        let mut key = k(i);
        key.extend_from_slice(&[0, 0, 0, 1, 0, (i % 200) as u8]);
        t.insert(&key, b"").unwrap();
        model.insert(key, Vec::new());
    }
    // Dead: every 5th key in the first quarter, so some leaves have none.
    let is_dead = |key: &[u8]| {
        let i: u32 = std::str::from_utf8(&key[1..9]).unwrap().parse().unwrap();
        i < 1000 && i.is_multiple_of(5)
    };
    let changed_leaves = leaves(&s, &t)
        .iter()
        .filter(|(_, keys)| keys.iter().any(|k| is_dead(k)))
        .count() as u64;
    let total_leaves = leaves(&s, &t).len() as u64;
    assert!(changed_leaves > 0 && changed_leaves < total_leaves);
    let before = s.snapshot();
    let mut calls = 0u64;
    let removed = {
        let _c = enter(Cause::Vacuum);
        t.bulk_delete(&mut |key, _| {
            calls += 1;
            is_dead(key)
        })
        .unwrap()
    };
    let d = s.snapshot().delta(&before).counters;
    assert_eq!(removed, 200);
    assert_eq!(calls, 4000, "every entry visited once");
    assert_eq!(d.cause(Cause::Vacuum).wal_records, changed_leaves);
    assert_eq!(d.cause(Cause::Other).wal_records, 0);
    model.retain(|k, _| !is_dead(k));
    let got: BTreeMap<Vec<u8>, Vec<u8>> = all(&t).into_iter().collect();
    assert_eq!(got, model);
    assert_eq!(t.bulk_delete(&mut |_, _| false).unwrap(), 0);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}
