//! Tests of kill bits and of the deletion of dead entries before a split (`delete_dead.rs`,
//! `cleanup.rs`), with a table stand-in.

use super::*;

#[test]
fn killed_entries_are_skipped_by_live_scans_and_deleted_before_a_split() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    // One leaf's worth of distinct keys, each on its own heap block, offset 1.
    let mut keys = Vec::new();
    for i in 0..1000u64 {
        let key = heap_key(i, i as u32, 1);
        t.insert(&key, b"").unwrap();
        keys.push(key);
    }
    let first_leaf = leaves(&s, &t)[0].clone();
    let victims: Vec<Vec<u8>> = first_leaf.1.iter().step_by(2).cloned().collect();
    let leaf = t.leaf_ref(first_leaf.0).unwrap();
    // A scan that read the leaf before it changed does not mark anything.
    let stale = LeafRef {
        lsn: Lsn(leaf.lsn.0 - 1),
        ..leaf
    };
    assert_eq!(
        t.kill_items(stale, &victims).unwrap(),
        0,
        "the leaf changed since"
    );
    assert_eq!(t.kill_items(leaf, &victims).unwrap(), victims.len());
    let leaf = t.leaf_ref(first_leaf.0).unwrap();
    assert_eq!(t.kill_items(leaf, &victims).unwrap(), 0, "already marked");
    // Keys not in that leaf are skipped.
    assert_eq!(t.kill_items(leaf, &[keys[999].clone()]).unwrap(), 0);
    // A plain scan still returns them (vacuum, checks); a live scan skips them.
    assert_eq!(all(&t).len(), 1000);
    let live = live(&t);
    assert_eq!(live.len(), 1000 - victims.len());
    assert!(live.iter().all(|(_, k)| !victims.contains(k)));
    assert!(live
        .iter()
        .filter(|(_, k)| first_leaf.1.contains(k))
        .all(|(leaf, _)| leaf.block == first_leaf.0));

    // Fill the first leaf until it would split: the insert deletes the marked entries
    // (plus the other entries on their heap blocks that the heap finds dead) instead.
    let heap = FakeHeap {
        dead_offsets: Vec::new(),
        visits: Default::default(),
    };
    let leaves_before = leaves(&s, &t).len();
    let wal_before = s.snapshot();
    let lo = u64::from_be_bytes(first_leaf.1[0][..8].try_into().unwrap());
    let mut outcome = CleanupOutcome::default();
    for j in 0..2000u32 {
        // Keys between the first leaf's first two keys: all land in the first leaf.
        let mut key = lo.to_be_bytes().to_vec();
        key.extend_from_slice(&(5_000_000 + j).to_be_bytes());
        key.extend_from_slice(&2u16.to_be_bytes());
        let o = t
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: false,
                    deduplicate: false,
                },
            )
            .unwrap();
        outcome.simple_deleted += o.simple_deleted;
        if outcome.simple_deleted > 0 {
            break;
        }
    }
    assert_eq!(outcome.simple_deleted, victims.len() as u64);
    assert_eq!(outcome.bottom_up_passes, 0, "the key was not unchanged");
    assert_eq!(leaves(&s, &t).len(), leaves_before, "no split");
    let visited = heap.visits.lock().unwrap().clone();
    assert!(!visited.is_empty());
    let d = s.snapshot().delta(&wal_before).counters;
    assert!(d.total().wal_records > 0);
    for v in &victims {
        assert_eq!(t.get(v).unwrap(), None, "deleted");
    }
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn bottom_up_deletion_removes_dead_versions_of_an_unchanged_key_instead_of_splitting() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    // Versions of a few index keys: key v, heap block b, offset 1 = dead old version,
    // offset 2 = live.
    let heap = FakeHeap {
        dead_offsets: vec![1],
        visits: Default::default(),
    };
    let mut inserted = 0u32;
    let mut out = CleanupOutcome::default();
    while out.bottom_up_passes == 0 {
        let v = (inserted % 4) as u64;
        let key = heap_key(v, inserted / 4, 1);
        let o = t
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: true,
                    deduplicate: false,
                },
            )
            .unwrap();
        out.bottom_up_passes += o.bottom_up_passes;
        out.bottom_up_deleted += o.bottom_up_deleted;
        inserted += 1;
        assert!(inserted < 10_000, "no bottom-up pass ran");
    }
    assert!(out.bottom_up_deleted > 0, "{out:?}");
    // At most BOTTOMUP_MAX_NBLOCKS-style limits are the table's business; the tree asked
    // once and removed what it was told.
    assert_eq!(
        leaves(&s, &t).len(),
        1,
        "the root leaf freed room instead of splitting"
    );
    // Without the hint the same full leaf splits.
    let u = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    let mut i = 0u32;
    while leaves(&s, &u).len() == 1 {
        let key = heap_key((i % 4) as u64, i / 4, 1);
        let o = u
            .insert_cleaning(
                &key,
                b"",
                &InsertCleanup {
                    table: &heap,
                    index_unchanged: false,
                    deduplicate: false,
                },
            )
            .unwrap();
        assert_eq!(o.bottom_up_passes, 0);
        i += 1;
    }
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}
