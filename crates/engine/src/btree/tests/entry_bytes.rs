//! Tests that the postgres preset's leaf entries take the bytes PostgreSQL gives its index
//! tuples, and that the innodb preset's pages hold what InnoDB's COMPACT pages hold
//! (`node.rs` geometry).

use super::*;

#[test]
fn postgres_leaf_entries_take_the_bytes_of_postgresql_index_tuples() {
    use crate::catalog::{pg_index_tuple_bytes, ColumnType, Value};
    let geo = BTreeConfig::postgres().geometry();
    // An int4 key (sysbench's id and k): the encoded key (4 bytes) plus the 6-byte heap
    // TID after the 4-byte length header: 16 bytes, PostgreSQL's 8 + 4 MAXALIGNed.
    let pg = pg_index_tuple_bytes(&[ColumnType::Integer], &[Value::Integer(7)]).unwrap();
    assert_eq!(geo.entry_bytes(4 + 6, 0), pg);
    // Line pointer: 4 bytes, as ItemIdData.
    assert_eq!(geo.space(4 + 6, 0), pg + 4);
    // The length header is 2 bytes more than t_info: an int8 key takes 24 bytes where
    // PostgreSQL needs 16 (documented in BTreeConfig::postgres).
    let pg8 = pg_index_tuple_bytes(&[ColumnType::BigInt], &[Value::BigInt(7)]).unwrap();
    assert_eq!((geo.entry_bytes(8 + 6, 0), pg8), (24, 16));
}

/// A postgres-preset leaf entry (key ‖ 6-byte heap TID, under the 4-byte length pair,
/// MAXALIGNed) takes the bytes PostgreSQL gives the index tuple
/// (`catalog::pg_index_tuple_bytes`) for NOT NULL keys: no tag byte in the key.
#[test]
fn postgres_leaf_entries_take_postgresql_index_tuple_bytes() {
    use crate::catalog::{encode_key, pg_index_tuple_bytes, ColumnType, KeyColumn, Value};
    let geo = BTreeConfig::postgres().geometry();
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    for (ty, v) in [
        (ColumnType::Integer, Value::Integer(7)),
        (ColumnType::BigInt, Value::BigInt(-7)),
        (ColumnType::Varchar(36), Value::text(uuid)),
    ] {
        let mut key = Vec::new();
        encode_key(
            &[KeyColumn::not_null(ty)],
            std::slice::from_ref(&v),
            &mut key,
        )
        .unwrap();
        let entry = geo.entry_bytes(key.len() + 6, 0);
        let pg = pg_index_tuple_bytes(&[ty], &[v]).unwrap();
        match ty {
            // The length pair is 2 bytes more than t_info: an 8-byte key rounds one step
            // further (documented at BTreeConfig::postgres).
            ColumnType::BigInt => assert_eq!((entry, pg), (24, 16)),
            _ => assert_eq!(entry, pg, "{ty}"),
        }
    }
    // The UUID text: 8 + 1 + 36 → 48 in PostgreSQL; 4 + 38 + 6 → 48 here.
    assert_eq!(
        pg_index_tuple_bytes(&[ColumnType::Varchar(36)], &[Value::text(uuid)]).unwrap(),
        48
    );
}

/// The innodb preset's `(k, id)` secondary entry (two 4-byte keys and the info-bits byte)
/// takes InnoDB's 13-byte record (5-byte header + 8), and a page holds what InnoDB's
/// `page_get_max_insert_size` allows: a 16 KiB page 1,203 of them (13 × n plus the
/// directory's `(2n + 3) / 4` within 16,384 − 132 bytes), where one 2-byte slot per entry
/// would hold 1,089. Records of 128 bytes or more spend a second length byte.
#[test]
fn innodb_pages_hold_what_innodb_compact_pages_hold() {
    let geo = BTreeConfig::innodb().geometry();
    assert_eq!(geo.space(8, 1), 13);
    assert_eq!(geo.space(4, 200), 4 + 200 + 1 + 2 + 2);
    let most = |page: usize, each: usize| (1..).take_while(|&n| geo.fits(n, n * each, page)).last();
    assert_eq!(most(16384, 13), Some(1203));
    assert_eq!(most(8192, 13), Some(597));
    // The same records with a slot each and the node's own header: 10 % fewer.
    assert_eq!(node::usable_bytes(16384) / 15, 1089);
}

/// A sorted build with innodb_fill_factor 100 fills each 8 KiB leaf with 597 of those
/// entries, as btr0bulk.cc `PageBulk::isSpaceAvailable` does; an insert into a full leaf
/// splits it, and a leaf whose page directory and entries still fit takes the insert.
#[test]
fn innodb_leaves_fill_to_innodb_capacity_and_split_past_it() {
    let s = storage(256);
    let t = BTree::create(s.pool().clone(), innodb_no_merge()).unwrap();
    let key = |i: u32| (i * 2).to_be_bytes().repeat(2);
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..5_000u32).map(|i| (key(i), vec![0])).collect();
    t.bulk_load(&entries, 100, 100).unwrap();
    let leaves = leaves(&s, &t);
    let counts: Vec<usize> = leaves
        .iter()
        .map(|&(b, _)| {
            let id = PageId::new(t.rel(), b);
            let g = s.pool().fetch_read(id).unwrap();
            Node::parse(g.data(), id).unwrap().len()
        })
        .collect();
    assert_eq!(counts[..counts.len() - 1], vec![597; counts.len() - 1][..]);
    assert_eq!(counts.iter().sum::<usize>(), 5_000);
    // A full leaf has no room for one more record and its directory slot share.
    let first = PageId::new(t.rel(), leaves[0].0);
    let free = {
        let g = s.pool().fetch_read(first).unwrap();
        Node::parse(g.data(), first).unwrap().free_bytes()
    };
    assert!(free < 13, "{free}");
    let mut odd = 1u32.to_be_bytes().repeat(2);
    odd[7] = 1;
    t.insert(&odd, &[0]).unwrap();
    assert_eq!(t.ops().index_page_splits, 1);
}
