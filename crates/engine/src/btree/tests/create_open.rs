//! Tests of creating and opening a tree, and of the entry size limit (`tree.rs`).

use super::*;
use crate::error::TxnError;

#[test]
fn basic_operations_and_reopen() {
    let s = storage(64);
    let t = BTree::create(s.pool().clone(), pg_plain()).unwrap();
    assert_eq!(t.get(b"a").unwrap(), None);
    assert!(all(&t).is_empty());
    t.insert(b"b", b"2").unwrap();
    t.insert(b"a", b"1").unwrap();
    t.insert(b"", b"empty key").unwrap();
    let e = t.insert(b"a", b"again").unwrap_err();
    assert!(
        matches!(e, Error::Txn(TxnError::DuplicateKey { .. })),
        "{e}"
    );
    assert_eq!(t.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(t.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
    assert!(t.update_value(b"a", b"one").unwrap());
    assert!(!t.update_value(b"zz", b"x").unwrap());
    assert!(t.delete(b"b").unwrap());
    assert!(!t.delete(b"b").unwrap());
    assert_eq!(
        all(&t),
        vec![
            (b"".to_vec(), b"empty key".to_vec()),
            (b"a".to_vec(), b"one".to_vec())
        ]
    );
    let st = t.verify().unwrap();
    assert_eq!(
        (st.height, st.leaf_pages, st.entries, st.pages),
        (1, 1, 2, 2)
    );
    let again = BTree::open(s.pool().clone(), t.rel(), pg_plain()).unwrap();
    assert_eq!(all(&again), all(&t));
    let e = BTree::open(s.pool().clone(), t.rel(), BTreeConfig::innodb())
        .expect_err("geometry differs");
    assert!(matches!(e, Error::InvalidConfig(_)), "{e}");
    let mut bad = pg_plain();
    bad.entry_align = 3;
    assert!(matches!(
        BTree::create(s.pool().clone(), bad),
        Err(Error::InvalidConfig(_))
    ));
    assert_redo_rebuilds(&s, &t);
}

#[test]
fn entries_above_a_quarter_page_are_too_large() {
    let s = storage(64);
    for cfg in [pg_plain(), BTreeConfig::innodb()] {
        let t = BTree::create(s.pool().clone(), cfg).unwrap();
        let max = t.max_entry_bytes();
        // 8 KiB page: usable 8144, a quarter 2036 bytes including header, padding, slot.
        assert!((1900..=2036).contains(&max), "{max}");
        let e = t.insert(b"key", &vec![0u8; max - 2]).unwrap_err();
        assert!(
            matches!(e, Error::TooLarge { bytes, max_bytes, .. } if bytes == max + 1 && max_bytes == max),
            "{e}"
        );
        // Entries of the maximum size still split correctly, level after level.
        for i in 0..40u32 {
            let key = k(i);
            t.insert(&key, &vec![i as u8; max - key.len()]).unwrap();
        }
        assert!(t.update_value(&k(3), b"").is_ok());
        assert!(matches!(
            t.update_value(&k(3), &vec![0u8; max]),
            Err(Error::TooLarge { .. })
        ));
        let st = t.verify().unwrap();
        assert_eq!(st.entries, 40);
        assert!(st.height >= 2);
    }
}
