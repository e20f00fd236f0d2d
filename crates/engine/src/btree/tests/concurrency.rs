//! Tests of concurrent inserts, lookups, scans and deletes under latch coupling (the
//! `btree` module doc's Locking rules).

use super::*;
use crate::error::TxnError;

#[test]
fn concurrent_inserts_and_lookups_then_a_full_scan_returns_exactly_the_set() {
    let s = Arc::new(storage(256));
    let t = Arc::new(BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap());
    const THREADS: u32 = 4;
    const OWN: u32 = 1500;
    const SHARED: u32 = 400;
    // Long keys: few entries per internal page, so internal pages split too.
    let key_of = |n: u32| [k(n), vec![b'p'; 250]].concat();
    let shared_wins = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|th| {
            let (t, wins) = (t.clone(), shared_wins.clone());
            std::thread::spawn(move || {
                let mut x = 0x9E37_79B9u32.wrapping_mul(th + 1);
                for i in 0..OWN {
                    // Disjoint: interleaved key sets, each thread in its own order.
                    let key = key_of((i * 7919 + th * 13) % OWN * THREADS + th);
                    let value = key[..9].repeat(7);
                    t.insert(&key, &value).unwrap();
                    assert_eq!(t.get(&key).unwrap(), Some(value));
                    // Overlapping: every thread tries the same keys; exactly one wins each.
                    if i % 4 == 0 {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let shared = format!("s{:06}", x % SHARED).into_bytes();
                        match t.insert(&shared, b"shared") {
                            Ok(()) => {
                                wins.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Error::Txn(TxnError::DuplicateKey { .. })) => {}
                            Err(e) => panic!("{e}"),
                        }
                        assert_eq!(t.get(&shared).unwrap().as_deref(), Some(&b"shared"[..]));
                    }
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    let got = all(&t);
    let shared: Vec<&Kv> = got.iter().filter(|e| e.0[0] == b's').collect();
    assert_eq!(shared.len(), shared_wins.load(Ordering::Relaxed));
    let own: Vec<Vec<u8>> = got
        .iter()
        .filter(|e| e.0[0] == b'k')
        .map(|e| e.0.clone())
        .collect();
    let want: Vec<Vec<u8>> = (0..OWN * THREADS).map(key_of).collect();
    assert_eq!(own, want, "exactly the inserted set, in order");
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    let st = t.verify().unwrap();
    assert!(st.height >= 3, "splits at several levels happened: {st:?}");
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn concurrent_scans_see_every_old_key_in_order_while_inserts_split_pages() {
    let s = Arc::new(storage(256));
    let t = Arc::new(BTree::create(s.pool().clone(), pg_plain()).unwrap());
    const OLD: u32 = 4000;
    for i in 0..OLD {
        t.insert(&k(i * 2), &[1u8; 40]).unwrap();
    }
    let writing = Arc::new(AtomicBool::new(true));
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..OLD / 2 {
                    let odd = ((i * 4099 + w * 1009) % (OLD / 2)) * 2 + w;
                    t.insert(&k(odd * 2 + 1), &[2u8; 120]).unwrap();
                    if i % 10 == 0 {
                        // Values that grow force replace-splits under the scans too.
                        assert!(t.update_value(&k(odd * 2), &[3u8; 300]).unwrap());
                    }
                }
            })
        })
        .collect();
    let scanners: Vec<_> = (0..2)
        .map(|sc| {
            let (t, writing) = (t.clone(), writing.clone());
            std::thread::spawn(move || {
                let mut scans = 0;
                while writing.load(Ordering::Acquire) || scans < 4 {
                    let backward = (scans + sc) % 2 == 1;
                    let (lo, hi) = if scans % 3 == 2 {
                        (k(500), k(3000))
                    } else {
                        (Vec::new(), b"l".to_vec())
                    };
                    let dir = if backward {
                        ScanDirection::Backward
                    } else {
                        ScanDirection::Forward
                    };
                    let mut keys: Vec<Vec<u8>> = Vec::new();
                    t.scan(
                        Bound::Included(&lo),
                        Bound::Excluded(&hi),
                        dir,
                        &mut |k, _| {
                            keys.push(k.to_vec());
                            Ok(true)
                        },
                    )
                    .unwrap();
                    if backward {
                        keys.reverse();
                    }
                    assert!(
                        keys.windows(2).all(|w| w[0] < w[1]),
                        "scan {scans} ({dir:?}) out of order or repeated"
                    );
                    let old: Vec<Vec<u8>> = (0..OLD)
                        .map(|i| k(i * 2))
                        .filter(|key| *key >= lo && *key < hi)
                        .collect();
                    let seen_old: Vec<&Vec<u8>> = keys
                        .iter()
                        .filter(|key| {
                            let i: u32 = std::str::from_utf8(&key[1..]).unwrap().parse().unwrap();
                            i.is_multiple_of(2)
                        })
                        .collect();
                    assert_eq!(
                        seen_old.len(),
                        old.len(),
                        "scan {scans} ({dir:?}) missed old keys"
                    );
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    writing.store(false, Ordering::Release);
    for sc in scanners {
        assert!(sc.join().unwrap() >= 4);
    }
    let st = t.verify().unwrap();
    assert_eq!(st.entries, 2 * OLD as u64);
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn concurrent_mixed_operations_match_per_thread_models() {
    let s = Arc::new(storage(128));
    let t = Arc::new(BTree::create(s.pool().clone(), BTreeConfig::innodb()).unwrap());
    let threads: Vec<_> = (0..4u8)
        .map(|th| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut model = BTreeMap::new();
                let mut x = 0x1234_5678u64 + th as u64;
                for _ in 0..1500 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = format!("{}-{:04}", (b'a' + th) as char, x % 400).into_bytes();
                    let v = vec![th; (x >> 20) as usize % 600];
                    match x % 10 {
                        0..=4 => {
                            let r = t.insert(&key, &v);
                            match model.entry(key) {
                                std::collections::btree_map::Entry::Occupied(_) => {
                                    assert!(matches!(
                                        r,
                                        Err(Error::Txn(TxnError::DuplicateKey { .. }))
                                    ))
                                }
                                std::collections::btree_map::Entry::Vacant(e) => {
                                    r.unwrap();
                                    e.insert(v);
                                }
                            }
                        }
                        5..=6 => {
                            let present = model.contains_key(&key);
                            assert_eq!(t.update_value(&key, &v).unwrap(), present);
                            if present {
                                model.insert(key, v);
                            }
                        }
                        7..=8 => assert_eq!(t.delete(&key).unwrap(), model.remove(&key).is_some()),
                        _ => assert_eq!(t.get(&key).unwrap().as_ref(), model.get(&key)),
                    }
                }
                model
            })
        })
        .collect();
    let mut want = BTreeMap::new();
    for th in threads {
        want.extend(th.join().unwrap());
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> = all(&t).into_iter().collect();
    assert_eq!(got, want);
    t.verify().unwrap();
    assert_redo_rebuilds(&s, &t);
}
