//! Tests that the postgres preset's leaf entries take the bytes PostgreSQL gives its index
//! tuples (`node.rs` geometry).

use super::*;

#[test]
fn postgres_leaf_entries_take_the_bytes_of_postgresql_index_tuples() {
    use crate::catalog::{pg_index_tuple_bytes, ColumnType, Value};
    let geo = BTreeConfig::postgres().geometry();
    // An int4 key (sysbench's id and k): the encoded key (4 bytes) plus the 6-byte heap
    // TID after the 4-byte length header: 16 bytes, PostgreSQL's 8 + 4 MAXALIGNed.
    let pg = pg_index_tuple_bytes(&[ColumnType::Integer], &[Value::Integer(7)]).unwrap();
    assert_eq!(geo.entry_bytes(4 + 6), pg);
    // Line pointer: 4 bytes, as ItemIdData.
    assert_eq!(geo.space(4 + 6), pg + 4);
    // The length header is 2 bytes more than t_info: an int8 key takes 24 bytes where
    // PostgreSQL needs 16 (documented in BTreeConfig::postgres).
    let pg8 = pg_index_tuple_bytes(&[ColumnType::BigInt], &[Value::BigInt(7)]).unwrap();
    assert_eq!((geo.entry_bytes(8 + 6), pg8), (24, 16));
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
        let entry = geo.entry_bytes(key.len() + 6);
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
