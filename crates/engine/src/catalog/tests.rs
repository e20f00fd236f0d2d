//! Tests of the catalog: sizes against the real engines' documented arithmetic, round trips
//! of every codec, key order, hardened decoders, and the error messages.

use super::*;
use crate::error::StorageError;
use crate::error::{Error, Result};
use proptest::prelude::*;
use std::cmp::Ordering;

/// sysbench's `sbtest` (oltp_common.lua): `id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT
/// NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY
/// (id)`, plus `CREATE INDEX k_1 ON sbtest1(k)`.
fn sbtest() -> TableDef {
    TableDef {
        name: "sbtest1".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("k", ColumnType::Integer),
            Column::not_null("c", ColumnType::Char(120)),
            Column::not_null("pad", ColumnType::Char(60)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "k_1".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

fn sbtest_row() -> Row {
    // sysbench's c: 10 groups of 11 digits joined by '-' (119 characters); pad: 5 (59).
    let c = ["68487932199"; 10].join("-");
    let pad = ["22195207048"; 5].join("-");
    assert_eq!((c.len(), pad.len()), (119, 59));
    vec![
        Value::Integer(1),
        Value::Integer(4992),
        Value::Text(c),
        Value::Text(pad),
    ]
}

fn table(cols: Vec<Column>) -> TableDef {
    TableDef {
        name: "t".into(),
        columns: cols,
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    }
}

fn ts(unix: i64) -> Value {
    Value::timestamp_from_unix_secs(unix)
}

// ---------------------------------------------------------------------------------------
// Sizes against the real engines.

#[test]
fn sbtest_row_in_postgres_heap_is_190_bytes_of_data() {
    let def = sbtest();
    def.validate().unwrap();
    let row = sbtest_row();
    def.check_row(&row).unwrap();
    let t = encode_heap(&def, &row);
    assert_eq!(t.data.len(), 4 + 4 + (1 + 120) + (1 + 60));
    assert_eq!(t.data.len(), 190);
    assert_eq!(t.null_bitmap, None);
    assert_eq!(t.t_hoff(), 24);
    assert_eq!(t.tuple_bytes(), 214);
    assert_eq!(maxalign(t.tuple_bytes()), 216);
    // c is blank-padded to 120 characters: short header (1 + 120) << 1 | 1.
    assert_eq!(t.data[8], ((121 << 1) | 1) as u8);
    assert_eq!(
        decode_heap(&def, None, &t.data).unwrap(),
        def.normalize_row(&row)
    );
}

#[test]
fn sbtest_row_in_innodb_compact_is_208_bytes() {
    let def = sbtest();
    let row = sbtest_row();
    let rec = encode_compact(&def, &row, 0x1234, 0x0001_0000_0000_0110).unwrap();
    // InnoDB's 208 bytes less the 4 page-layer header bytes the B-tree entry header holds
    // and the 4-byte id the entry's key holds.
    assert_eq!(rec.len(), 2 + 1 + 6 + 7 + 4 + 120 + 60);
    let key = key_of(&def, &def.primary_key, &row).unwrap();
    assert_eq!(
        rec.len() + REC_N_NEW_EXTRA_BYTES - REC_STORED_HEADER_BYTES + key.len(),
        208
    );
    assert_eq!(
        compact_index_record_bytes(&def, &[0, 1, 2, 3], &row).unwrap(),
        208 - 13,
        "the same fields less DB_TRX_ID and DB_ROLL_PTR"
    );
    // The info byte, then the lengths of c and pad (no NULL bitmap: nothing is nullable).
    assert_eq!(&rec[1..3], &[120, 60]);
    // id = 1 is the key (big-endian, sign bit flipped); DB_TRX_ID is at the origin.
    assert_eq!(key, vec![0x80, 0, 0, 1]);
    assert_eq!(&rec[3..9], &[0, 0, 0, 0, 0x12, 0x34]);
    let (back, trx, roll) = decode_compact(&def, &key, &rec).unwrap();
    assert_eq!(back, def.normalize_row(&row));
    assert_eq!((trx, roll), (0x1234, 0x0001_0000_0000_0110));
}

#[test]
fn a_row_without_a_primary_key_carries_the_6_byte_db_row_id_in_innodb() {
    let keyed = sbtest();
    let mut def = sbtest();
    def.primary_key.clear();
    let row = sbtest_row();
    // InnoDB: 5 header + 6 DB_ROW_ID + 6 DB_TRX_ID + 7 DB_ROLL_PTR + the four columns.
    assert_eq!(compact_clustered_record_bytes(&def, &row).unwrap(), 208 + 6);
    assert_eq!(compact_clustered_record_bytes(&keyed, &row).unwrap(), 208);
    // The stored record holds every column (the row id is the entry's key).
    let rec = encode_compact(&def, &row, 0x1234, 0x0001_0000_0000_0110).unwrap();
    assert_eq!(rec.len(), 2 + 1 + 6 + 7 + 4 + 4 + 120 + 60);
    let key = vec![0, 0, 0, 0, 2, 0];
    let back = decode_compact_record(&def, &key, &rec).unwrap();
    assert_eq!(back.row, def.normalize_row(&row));
    assert_eq!(
        (back.trx_id, back.roll_ptr),
        (0x1234, 0x0001_0000_0000_0110)
    );
    // A key that is not 6 bytes is no DB_ROW_ID.
    for bad in [&key[..5], &[0u8; 7][..], &[][..]] {
        assert!(matches!(
            decode_compact_record(&def, bad, &rec),
            Err(Error::Storage(StorageError::Corrupted { .. }))
        ));
    }
    assert_eq!(
        compact_system_columns(&def, &rec).unwrap(),
        (0x1234, 0x0001_0000_0000_0110)
    );
}

#[test]
fn sbtest_index_entries() {
    let def = sbtest();
    let row = sbtest_row();
    // InnoDB secondary k_1: header 5 + k 4 + id 4.
    let cols = def.secondary_record_columns(0);
    assert_eq!(cols, vec![1, 0]);
    assert_eq!(compact_index_record_bytes(&def, &cols, &row).unwrap(), 13);
    // PostgreSQL: an int4 key takes 8 + 4 → MAXALIGN 16 bytes.
    assert_eq!(
        pg_index_tuple_bytes(&[ColumnType::Integer], &[Value::Integer(7)]).unwrap(),
        16
    );
    assert_eq!(
        pg_index_tuple_bytes(&[ColumnType::BigInt], &[Value::BigInt(7)]).unwrap(),
        16
    );
    // A NULL adds the 4-byte bitmap: data starts at MAXALIGN(12) = 16.
    assert_eq!(
        pg_index_tuple_bytes(&[ColumnType::Integer], &[Value::Null]).unwrap(),
        16
    );
    assert_eq!(
        pg_index_tuple_bytes(
            &[ColumnType::Integer, ColumnType::Integer],
            &[Value::Integer(1), Value::Null]
        )
        .unwrap(),
        24
    );
    assert_eq!(
        pg_index_tuple_bytes(
            &[ColumnType::Integer, ColumnType::Char(10)],
            &[Value::Integer(1), Value::text("abc")]
        )
        .unwrap(),
        24
    );
    assert!(matches!(
        pg_index_tuple_bytes(
            &[ColumnType::Varchar(9000)],
            &[Value::text("x".repeat(9000))]
        ),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn heap_varlena_headers_and_alignment() {
    let def = table(vec![
        Column::not_null("a", ColumnType::Char(1)),
        Column::not_null("b", ColumnType::Varchar(200)),
        Column::not_null("c", ColumnType::BigInt),
    ]);
    def.validate().unwrap();
    // 126 bytes of payload: 1-byte header (127 in all), no alignment.
    let row = vec![
        Value::text("x"),
        Value::text("y".repeat(126)),
        Value::BigInt(-1),
    ];
    let t = encode_heap(&def, &row);
    assert_eq!(t.data.len(), 2 + 127 + 7 /* pad to 136 */ + 8);
    // 127 bytes of payload: 4-byte header aligned to 4 (offset 2 → 4).
    let row = vec![
        Value::text("x"),
        Value::text("y".repeat(127)),
        Value::BigInt(-1),
    ];
    let t = encode_heap(&def, &row);
    assert_eq!(&t.data[2..4], &[0, 0]);
    assert_eq!(
        u32::from_le_bytes(t.data[4..8].try_into().unwrap()),
        (4 + 127) << 2
    );
    assert_eq!(t.data.len(), 8 + 127 + 1 /* pad to 136 */ + 8);
    assert_eq!(decode_heap(&def, None, &t.data).unwrap(), row);
    // Multibyte text counts bytes for the header: 40 × '€' = 120 bytes → short.
    let row = vec![
        Value::text("x"),
        Value::text("€".repeat(40)),
        Value::BigInt(0),
    ];
    assert_eq!(encode_heap(&def, &row).data[2], ((121 << 1) | 1) as u8);
}

#[test]
fn heap_null_bitmap_and_t_hoff() {
    let mut cols = vec![Column::not_null("id", ColumnType::Integer)];
    for i in 1..9 {
        cols.push(Column::nullable(format!("n{i}"), ColumnType::BigInt));
    }
    let def = table(cols);
    def.validate().unwrap();
    let mut row = vec![Value::Integer(1)];
    row.extend((1..9).map(|i| {
        if i == 3 {
            Value::Null
        } else {
            Value::BigInt(i)
        }
    }));
    let t = encode_heap(&def, &row);
    // 9 attributes: 2 bitmap bytes, bit set = not NULL; attribute 3 is NULL.
    assert_eq!(t.null_bitmap, Some(vec![0b1111_0111, 0b1]));
    assert_eq!(t.t_hoff(), maxalign(23 + 2));
    assert_eq!(t.t_hoff(), 32);
    // id 4, pad 4, 7 × 8.
    assert_eq!(t.data.len(), 8 + 7 * 8);
    assert_eq!(
        decode_heap(&def, t.null_bitmap.as_deref(), &t.data).unwrap(),
        row
    );
    // Up to 8 attributes the bitmap fits the header's padding byte: t_hoff stays 24.
    let small = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::nullable("x", ColumnType::Integer),
    ]);
    let t = encode_heap(&small, &vec![Value::Integer(1), Value::Null]);
    assert_eq!(
        (t.null_bitmap.clone(), t.t_hoff(), t.data.len()),
        (Some(vec![1]), 24, 4)
    );
}

#[test]
fn compact_char_in_utf8mb4_keeps_at_least_n_bytes() {
    // The examples of row0mysql.cc: CHAR(5) ".a   " is stored as ".a " (5 bytes), ".abc "
    // as ".abc" (6 bytes), '.' being a 3-byte character.
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null("c", ColumnType::Char(5)),
    ]);
    for (v, stored) in [
        ("€a", "€a "),
        ("€abc", "€abc"),
        ("", "     "),
        ("ab", "ab   "),
    ] {
        let row = vec![Value::Integer(1), Value::text(v)];
        let rec = encode_compact(&def, &row, 0, 0).unwrap();
        // info byte + 1 length + 13 system + field (id is the key).
        assert_eq!(rec.len(), 1 + 1 + 13 + stored.len(), "{v:?}");
        assert_eq!(rec[1] as usize, stored.len());
        assert_eq!(&rec[rec.len() - stored.len()..], stored.as_bytes());
        let key = key_of(&def, &def.primary_key, &row).unwrap();
        let (row, _, _) = decode_compact(&def, &key, &rec).unwrap();
        assert_eq!(row[1], Value::Text(super::value::pad_char(v, 5)));
    }
}

#[test]
fn compact_two_byte_lengths_and_null_bitmap() {
    let mut cols = vec![Column::not_null("id", ColumnType::Integer)];
    for i in 0..9 {
        cols.push(Column::nullable(format!("v{i}"), ColumnType::Varchar(200)));
    }
    cols.push(Column::not_null("small", ColumnType::Varchar(63)));
    let def = table(cols);
    def.validate().unwrap();
    let mut row = vec![Value::Integer(1)];
    row.extend((0..9).map(|i| match i {
        0 => Value::text("a".repeat(127)), // max 800 bytes, actual < 128: 1 byte
        1 => Value::text("a".repeat(128)), // ≥ 128 of a column over 255 bytes: 2 bytes
        _ => Value::Null,
    }));
    row.push(Value::text("€".repeat(63))); // 189 bytes, max 252 ≤ 255: 1 byte
    def.check_row(&row).unwrap();
    let rec = encode_compact(&def, &row, 1, 2).unwrap();
    let nulls = 2; // 9 nullable columns
    let lens = 1 + 2 + 1;
    assert_eq!(rec.len(), 1 + nulls + lens + 13 + 127 + 128 + 189);
    // NULL bitmap: nullable fields 2..=8 are NULL (bit set = NULL, unlike PostgreSQL).
    assert_eq!(&rec[1..3], &[0b1111_1100, 0b1]);
    // Lengths in field order: 127; 0x80 | 0, 128; 189.
    assert_eq!(&rec[3..7], &[127, 0x80, 128, 189]);
    let key = key_of(&def, &def.primary_key, &row).unwrap();
    let back = decode_compact_record(&def, &key, &rec).unwrap();
    assert_eq!(back.row, row);
    assert_eq!(
        (back.trx_id, back.roll_ptr, back.delete_marked),
        (1, 2, false)
    );
}

#[test]
fn compact_fixed_fields_are_memcmp_ordered() {
    let def = table(vec![
        Column::not_null("id", ColumnType::BigInt),
        Column::not_null("i", ColumnType::Integer),
        Column::not_null("t", ColumnType::Timestamp),
    ]);
    let row = vec![Value::BigInt(-1), Value::Integer(-2), ts(1_700_000_000)];
    let rec = encode_compact(&def, &row, MAX_TRX_ID, MAX_ROLL_PTR).unwrap();
    // No nullable or variable-length field: the info byte and fields only, id in the key.
    let key = key_of(&def, &def.primary_key, &row).unwrap();
    assert_eq!(key, 0x7FFF_FFFF_FFFF_FFFFu64.to_be_bytes());
    assert_eq!(rec.len(), 1 + 13 + 4 + 4);
    assert_eq!(&rec[1..7], &[0xFF; 6]);
    assert_eq!(&rec[7..14], &[0xFF; 7]);
    assert_eq!(&rec[14..18], &0x7FFF_FFFEu32.to_be_bytes());
    assert_eq!(&rec[18..22], &1_700_000_000u32.to_be_bytes());
    assert_eq!(decode_compact(&def, &key, &rec).unwrap().0, row);
    // A key that is not one of the table's primary keys is refused.
    assert!(matches!(
        decode_compact(&def, &key[..7], &rec),
        Err(Error::Storage(StorageError::Corrupted { .. }))
    ));
    assert!(matches!(
        encode_compact(&def, &row, MAX_TRX_ID + 1, 0),
        Err(Error::InvalidValue(_))
    ));
}

#[test]
fn compact_delete_mark_and_system_columns_in_place() {
    let def = sbtest();
    let mut rec = encode_compact(&def, &sbtest_row(), 10, 20).unwrap();
    let key = key_of(&def, &def.primary_key, &sbtest_row()).unwrap();
    assert!(!compact_delete_mark(&rec).unwrap());
    set_compact_delete_mark(&mut rec, true).unwrap();
    assert!(compact_delete_mark(&rec).unwrap());
    assert_eq!(rec[0], COMPACT_DELETED_FLAG);
    let r = decode_compact_record(&def, &key, &rec).unwrap();
    assert!(r.delete_marked);
    assert_eq!(compact_system_columns(&def, &rec).unwrap(), (10, 20));
    set_compact_system_columns(&def, &mut rec, 11, 21).unwrap();
    let r = decode_compact_record(&def, &key, &rec).unwrap();
    assert_eq!((r.trx_id, r.roll_ptr, r.delete_marked), (11, 21, true));
    assert_eq!(r.row, def.normalize_row(&sbtest_row()));
    set_compact_delete_mark(&mut rec, false).unwrap();
    assert!(!compact_delete_mark(&rec).unwrap());
    assert!(matches!(
        set_compact_delete_mark(&mut [], true),
        Err(Error::Storage(StorageError::Corrupted { .. }))
    ));
}

#[test]
fn compact_refuses_fields_it_cannot_store_inline() {
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null("v", ColumnType::Varchar(16_000)),
    ]);
    def.validate().unwrap();
    let row = vec![Value::Integer(1), Value::text("€".repeat(6000))];
    def.check_row(&row).unwrap();
    assert!(matches!(
        encode_compact(&def, &row, 0, 0),
        Err(Error::TooLarge {
            bytes: 18_000,
            max_bytes: 16_383,
            ..
        })
    ));
    // The heap stores it inline with a 4-byte header (no TOAST).
    let t = encode_heap(&def, &row);
    assert_eq!(t.data.len(), 4 + 4 + 18_000);
    assert_eq!(decode_heap(&def, None, &t.data).unwrap(), row);
}

#[test]
fn delta_holds_only_the_given_columns() {
    let def = sbtest();
    let old = sbtest_row();
    // UPDATE sbtest1 SET k = k + 1: the undo keeps k's old value only.
    let delta = encode_delta(&def, &old, &[1]);
    // n_fields 1, field_no 3 (id, DB_TRX_ID, DB_ROLL_PTR, k), len 4, 4 bytes.
    assert_eq!(delta, vec![1, 3, 4, 0x80, 0, 0x13, 0x80]);
    let mut new = old.clone();
    new[1] = Value::Integer(4993);
    assert_eq!(apply_delta(&def, &mut new, &delta).unwrap(), vec![1]);
    assert_eq!(new, old);
    // A NULL takes a 5-byte UNIV_SQL_NULL length.
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::nullable("x", ColumnType::Varchar(10)),
    ]);
    let delta = encode_delta(&def, &vec![Value::Integer(1), Value::Null], &[1]);
    assert_eq!(delta, vec![1, 3, 0xF0, 0xFF, 0xFF, 0xFF, 0xFF]);
    // Refused: field 1 is DB_TRX_ID.
    let mut row = vec![Value::Integer(1), Value::text("a")];
    assert!(matches!(
        apply_delta(&def, &mut row, &[1, 1, 0]),
        Err(Error::Storage(StorageError::Corrupted { .. }))
    ));
    assert_eq!(row, vec![Value::Integer(1), Value::text("a")]);
}

// ---------------------------------------------------------------------------------------
// Definitions and rows.

#[test]
fn check_row_errors_name_the_column() {
    let def = TableDef {
        name: "orders".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("code", ColumnType::Char(3)),
            Column::nullable("note", ColumnType::Varchar(5)),
            Column::nullable("at", ColumnType::Timestamp),
        ],
        primary_key: vec![0],
        indexes: vec![],
        foreign_keys: Vec::new(),
    };
    def.validate().unwrap();
    let ok = vec![Value::Integer(1), Value::text("ab"), Value::Null, ts(1)];
    def.check_row(&ok).unwrap();
    let err = |row: Row| match def.check_row(&row) {
        Err(Error::InvalidValue(m)) => m,
        other => panic!("expected InvalidValue, got {other:?}"),
    };
    let m = err(vec![Value::Integer(1)]);
    assert!(m.contains("4 columns") && m.contains("1 values"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::Integer(2),
        Value::Null,
        Value::Null,
    ]);
    assert!(
        m.contains("\"code\"") && m.contains("char(3)") && m.contains("integer"),
        "{m}"
    );
    let m = err(vec![
        Value::Null,
        Value::text("a"),
        Value::Null,
        Value::Null,
    ]);
    assert!(m.contains("\"id\"") && m.contains("not-null"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::text("abcd"),
        Value::Null,
        Value::Null,
    ]);
    assert!(m.contains("\"code\"") && m.contains("4 characters"), "{m}");
    // Characters, not bytes: five 4-byte characters fit varchar(5).
    def.check_row(&vec![
        Value::Integer(1),
        Value::text("a"),
        Value::text("😀".repeat(5)),
        Value::Null,
    ])
    .unwrap();
    let m = err(vec![
        Value::Integer(1),
        Value::text("a"),
        Value::text("123456"),
        Value::Null,
    ]);
    assert!(m.contains("\"note\"") && m.contains("varchar(5)"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::text("a"),
        Value::text("a\0"),
        Value::Null,
    ]);
    assert!(m.contains("\"note\"") && m.contains("NUL"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::text("a"),
        Value::Null,
        Value::Timestamp(1),
    ]);
    assert!(m.contains("\"at\"") && m.contains("fraction"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::text("a"),
        Value::Null,
        ts(0),
    ]);
    assert!(m.contains("\"at\"") && m.contains("range"), "{m}");
    let m = err(vec![
        Value::Integer(1),
        Value::text("a"),
        Value::Null,
        ts(1 << 31),
    ]);
    assert!(m.contains("\"at\"") && m.contains("2038"), "{m}");
    assert!(m.contains("\"orders\""), "{m}");
}

#[test]
fn validate_names_the_problem() {
    let err = |f: &dyn Fn(&mut TableDef)| {
        let mut d = sbtest();
        f(&mut d);
        match d.validate() {
            Err(Error::Catalog(m)) => m,
            other => panic!("expected Catalog error, got {other:?}"),
        }
    };
    assert!(err(&|d| d.columns[1].name = "ID".into()).contains("\"ID\""));
    // No primary key is a valid table (TPC-C's history); a key column named twice is not.
    let mut no_pk = sbtest();
    no_pk.primary_key.clear();
    no_pk
        .validate()
        .expect("a table without a primary key is valid");
    assert!(err(&|d| d.primary_key = vec![9]).contains("position 9"));
    assert!(err(&|d| d.columns[0].nullable = true).contains("\"id\" is nullable"));
    assert!(err(&|d| d.primary_key = vec![0, 0]).contains("twice"));
    assert!(err(&|d| d.indexes[0].columns = vec![9]).contains("position 9"));
    assert!(err(&|d| d.indexes[0].columns.clear()).contains("\"k_1\""));
    assert!(err(&|d| d.indexes.push(d.indexes[0].clone())).contains("\"k_1\""));
    assert!(err(&|d| d.columns[2].ty = ColumnType::Char(0)).contains("at least 1"));
    assert!(err(&|d| d.columns[2].ty = ColumnType::Char(256)).contains("255"));
    assert!(err(&|d| {
        d.columns[3].ty = ColumnType::Varchar(800);
        d.indexes[0].columns = vec![3];
    })
    .contains("3072"));
    assert!(err(&|d| d.name.clear()).contains("empty name"));
    assert!(err(&|d| d.columns[0].name = "x".repeat(64)).contains("64 bytes"));
    let m = err(&|d| {
        for i in 0..5 {
            d.columns
                .push(Column::nullable(format!("v{i}"), ColumnType::Varchar(4000)));
        }
    });
    assert!(m.contains("row size too large"), "{m}");
}

#[test]
fn lookups_and_indexed_columns() {
    let mut def = sbtest();
    assert_eq!(def.column_index("pad").unwrap(), 3);
    assert_eq!(def.column_index("PAD").unwrap(), 3);
    assert!(matches!(def.column_index("nope"), Err(Error::Catalog(m)) if m.contains("\"nope\"")));
    assert_eq!(def.indexed_columns(), vec![0, 1]);
    def.indexes.push(IndexDef {
        name: "c_k".into(),
        columns: vec![2, 1],
        unique: true,
    });
    def.validate().unwrap();
    assert_eq!(def.indexed_columns(), vec![0, 1, 2]);
    assert_eq!(def.secondary_record_columns(1), vec![2, 1, 0]);
    assert_eq!(
        def.column_types(&[3, 0]).unwrap(),
        vec![ColumnType::Char(60), ColumnType::Integer]
    );
    assert!(def.column_types(&[4]).is_err());
    assert_eq!(
        def.key_columns(&[3, 0]).unwrap(),
        vec![
            KeyColumn::not_null(ColumnType::Char(60)),
            KeyColumn::not_null(ColumnType::Integer)
        ]
    );
    assert!(def.key_columns(&[4]).is_err());
}

#[test]
fn normalize_pads_char_only() {
    let def = sbtest();
    let row = vec![
        Value::Integer(1),
        Value::Integer(2),
        Value::text("ab"),
        Value::text("€"),
    ];
    let n = def.normalize_row(&row);
    assert_eq!(n[2], Value::Text(format!("ab{}", " ".repeat(118))));
    assert_eq!(n[3], Value::Text(format!("€{}", " ".repeat(59))));
    assert_eq!(n[..2], row[..2]);
    assert_eq!(def.normalize_row(&n), n);
}

#[test]
fn definitions_serialize() {
    let def = sbtest();
    let json = serde_json::to_string(&def).unwrap();
    assert_eq!(serde_json::from_str::<TableDef>(&json).unwrap(), def);
    let row = sbtest_row();
    let json = serde_json::to_string(&row).unwrap();
    assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row);
}

#[test]
fn key_errors_leave_the_buffer_alone() {
    let int = KeyColumn::not_null(ColumnType::Integer);
    let mut out = vec![9];
    let r = encode_key(
        &[int, int],
        &[Value::Integer(1), Value::text("x")],
        &mut out,
    );
    assert!(matches!(r, Err(Error::InvalidValue(m)) if m.contains("key column 2")));
    assert_eq!(out, vec![9]);
    let char2 = KeyColumn::not_null(ColumnType::Char(2));
    assert!(encode_key(&[char2], &[Value::text("abc")], &mut out).is_err());
    assert!(encode_key(&[int], &[], &mut out).is_err());
    // NULL in a NOT NULL key column is refused, naming the column.
    let r = encode_key(&[int, int], &[Value::Integer(1), Value::Null], &mut out);
    assert!(matches!(r, Err(Error::InvalidValue(m)) if m.contains("key column 2 is NOT NULL")));
    assert_eq!(out, vec![9]);
    // CHAR keys ignore trailing blanks; decode pads them back. A NOT NULL column has no tag.
    let char4 = KeyColumn::not_null(ColumnType::Char(4));
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_key(&[char4], &[Value::text("ab")], &mut a).unwrap();
    encode_key(&[char4], &[Value::text("ab  ")], &mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, vec![b'a', b'b', 0, 1]);
    assert_eq!(decode_key(&[char4], &a).unwrap(), vec![Value::text("ab  ")]);
    // A nullable column has its tag: 0x01 then the value, or 0x02 alone.
    let nint = KeyColumn::nullable(ColumnType::Integer);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_key(&[nint], &[Value::Integer(-1)], &mut a).unwrap();
    encode_key(&[nint], &[Value::Null], &mut b).unwrap();
    assert_eq!(a, vec![KEY_NOT_NULL, 0x7F, 0xFF, 0xFF, 0xFF]);
    assert_eq!(b, vec![KEY_NULL]);
    assert!(a < b, "NULL sorts last");
    // key_of over the primary key: sbtest's (k, id) is 4 + 4 bytes, as in InnoDB's record;
    // and a decode with a suffix left over.
    let def = sbtest();
    let k = key_of(&def, &[1, 0], &sbtest_row()).unwrap();
    assert_eq!(k.len(), 8);
    let (v, used) = decode_key_prefix(&[int], &k).unwrap();
    assert_eq!((v, used), (vec![Value::Integer(4992)], 4));
    assert!(decode_key(&[int], &k).is_err());
    assert!(matches!(
        decode_key(&[int, int], &k[..4]),
        Err(Error::Storage(StorageError::Corrupted { .. }))
    ));
}

#[test]
fn decoders_refuse_what_is_not_modelled() {
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null("v", ColumnType::Varchar(100)),
    ]);
    // A 1-byte header of exactly 0x01 is a TOAST pointer.
    let m = decode_heap(&def, None, &[1, 0, 0, 0, 0x01, 0, 0, 0])
        .unwrap_err()
        .to_string();
    assert!(m.contains("TOAST") && m.contains("\"v\""), "{m}");
    // A 4-byte header with low bits 10 is compressed.
    let m = decode_heap(&def, None, &[1, 0, 0, 0, 0x22, 0, 0, 0])
        .unwrap_err()
        .to_string();
    assert!(m.contains("compressed"), "{m}");
    // An InnoDB length with the external flag (0x40) is an off-page column.
    let mut rec = vec![0, 0xC0, 20];
    rec.extend_from_slice(&[0u8; 13 + 20]);
    let m = decode_compact(&def, &[0x80, 0, 0, 1], &rec)
        .unwrap_err()
        .to_string();
    assert!(m.contains("off page"), "{m}");
}

// ---------------------------------------------------------------------------------------
// The types for TPC-C, TPC-H and system-versioned tables.

fn dec(s: &str) -> Value {
    Value::Decimal(s.parse().unwrap())
}

fn date(y: i64, m: i64, d: i64) -> Value {
    Value::Date(super::datetime::pg_days_of_ymd(y, m, d) as i32)
}

/// Microseconds since 2000-01-01 of a date and time.
fn at(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64, us: i64) -> Value {
    let days = super::datetime::pg_days_of_ymd(y, m, d);
    Value::Timestamp(days * USECS_PER_DAY + ((h * 60 + mi) * 60 + s) * USECS_PER_SEC + us)
}

/// `(id INT, a SMALLINT, b TINYINT, c DATE, d TIMESTAMP(6), e DECIMAL(12,2), f TEXT,
/// g DATETIME(6))`, all NOT NULL.
fn typed_table() -> TableDef {
    table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null("a", ColumnType::SmallInt),
        Column::not_null("b", ColumnType::TinyInt),
        Column::not_null("c", ColumnType::Date),
        Column::not_null("d", ColumnType::Timestamp6),
        Column::not_null(
            "e",
            ColumnType::Decimal {
                precision: 12,
                scale: 2,
            },
        ),
        Column::not_null("f", ColumnType::Text),
        Column::not_null("g", ColumnType::DateTime6),
    ])
}

fn typed_row() -> Row {
    vec![
        Value::Integer(1),
        Value::SmallInt(-2),
        Value::TinyInt(3),
        date(2000, 1, 1),
        at(2000, 1, 1, 0, 0, 0, 500_000),
        dec("1234.5"),
        Value::text("abc"),
        at(2000, 1, 1, 0, 0, 0, 1),
    ]
}

#[test]
fn new_types_in_postgres_heap_take_typlen_and_typalign() {
    // pg_type.dat: int2 typlen 2 align s; date typlen 4 align i; timestamp typlen 8 align d;
    // numeric and text typlen -1 (varlena) align i, 1-byte header when short.
    let def = typed_table();
    let row = typed_row();
    def.check_row(&row).unwrap();
    let t = encode_heap(&def, &row);
    let d = &t.data;
    assert_eq!(d[0..4], 1i32.to_le_bytes()); // id
    assert_eq!(d[4..6], (-2i16).to_le_bytes()); // smallint
    assert_eq!(d[6..8], 3i16.to_le_bytes()); // tinyint stored as int2
    assert_eq!(d[8..12], 0i32.to_le_bytes()); // date 2000-01-01 = day 0
    assert_eq!(d[12..16], [0; 4]); // padding to 8
    assert_eq!(d[16..24], 500_000i64.to_le_bytes()); // timestamp(6), µs
                                                     // numeric(12,2) 1234.50: NumericShort header 0x8000 | 2 << 7, digits 1234, 5000.
    assert_eq!(d[24..31], [0x0F, 0x00, 0x81, 0xD2, 0x04, 0x88, 0x13]);
    assert_eq!(d[31..35], [0x09, b'a', b'b', b'c']); // text, 1-byte header (1+3)<<1|1
    assert_eq!(d[35..40], [0; 5]); // padding to 8
    assert_eq!(d[40..48], 1i64.to_le_bytes()); // datetime(6) is timestamp(6) in PostgreSQL
    assert_eq!(d.len(), 48);
    let back = decode_heap(&def, None, d).unwrap();
    assert_eq!(back, def.normalize_row(&row));
    assert_eq!(back[5], dec("1234.50"));

    // Numeric sizes: 3 + 2 per base-10000 digit; zero has no digits; a negative fraction
    // has a negative weight.
    let one = |ty: ColumnType, v: Value| {
        let def = table(vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("x", ty),
        ]);
        let t = encode_heap(&def, &vec![Value::Integer(0), v.clone()]);
        let back = decode_heap(&def, None, &t.data).unwrap();
        assert_eq!(back[1], def.normalize_row(&vec![Value::Integer(0), v])[1]);
        t.data[4..].to_vec()
    };
    let n = |p, s| ColumnType::Decimal {
        precision: p,
        scale: s,
    };
    assert_eq!(one(n(10, 2), dec("0")), [0x07, 0x00, 0x81]);
    assert_eq!(one(n(4, 2), dec("-0.05")), [0x0B, 0x7F, 0xA1, 0xF4, 0x01]);
    assert_eq!(one(n(15, 2), dec("1234567890123.45")).len(), 3 + 2 * 5);
    assert_eq!(one(n(5, 0), dec("10000")), [0x0B, 0x01, 0x80, 0x01, 0x00]);
    assert_eq!(one(n(65, 30), dec("1.5")).len(), 3 + 2 * 2);
    assert_eq!(
        one(ColumnType::TinyInt, Value::TinyInt(-128)),
        (-128i16).to_le_bytes()
    );
    // A long text takes the 4-byte header, aligned to 4.
    let long = "x".repeat(200);
    let v = one(ColumnType::Text, Value::text(long.clone()));
    assert_eq!(v[..4], ((204u32) << 2).to_le_bytes());
    assert_eq!(v.len(), 204);
}

#[test]
fn new_types_in_innodb_compact_take_mariadb_sizes() {
    // MariaDB "Data Type Storage Requirements": TINYINT 1, SMALLINT 2, DATE 3,
    // TIMESTAMP(6) 4 + 3, DATETIME(6) 5 + 3, DECIMAL 4 bytes per 9 digits + leftovers.
    let def = typed_table();
    let row = typed_row();
    let rec = encode_compact(&def, &row, 5, 6).unwrap();
    // Header byte, 1 length byte (f), then a 2, b 1, c 3, d 7, e 6, f 3, g 8 (id is the key)
    // and DB_TRX_ID, DB_ROLL_PTR right after the key.
    assert_eq!(rec.len(), 1 + 1 + 6 + 7 + 2 + 1 + 3 + 7 + 6 + 3 + 8);
    assert_eq!(rec[1], 3); // length of f
    let f = &rec[2 + 13..];
    assert_eq!(f[0..2], [0x7F, 0xFE]); // -2, big-endian, sign bit flipped
    assert_eq!(f[2], 0x83); // 3
    assert_eq!(f[3..6], [0x8F, 0xA0, 0x21]); // 2000-01-01: 1 + 1*32 + 2000*512, signed
    assert_eq!(f[6..13], [0x38, 0x6D, 0x43, 0x80, 0x07, 0xA1, 0x20]); // 946684800 s, 500000 µs
    assert_eq!(f[13..19], [0x80, 0x00, 0x00, 0x04, 0xD2, 0x32]); // decimal2bin 1234.50
    assert_eq!(&f[19..22], b"abc");
    assert_eq!(f[22..30], [0x99, 0x64, 0x42, 0x00, 0x00, 0x00, 0x00, 0x01]); // packed datetime
    let key = key_of(&def, &def.primary_key, &row).unwrap();
    let r = decode_compact_record(&def, &key, &rec).unwrap();
    assert_eq!(r.row, def.normalize_row(&row));
    assert_eq!(
        compact_clustered_record_bytes(&def, &row).unwrap(),
        rec.len() - 1 + 5 + 4
    );
    for (ty, bytes) in [
        (ColumnType::TinyInt, 1),
        (ColumnType::SmallInt, 2),
        (ColumnType::Date, 3),
        (ColumnType::Timestamp6, 7),
        (ColumnType::DateTime6, 8),
        (
            ColumnType::Decimal {
                precision: 15,
                scale: 2,
            },
            7,
        ),
        (
            ColumnType::Decimal {
                precision: 65,
                scale: 30,
            },
            30,
        ),
    ] {
        assert_eq!(ty.mariadb_max_bytes(), bytes, "{ty}");
    }
    // strings/decimal.c's own example, through a record.
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null(
            "x",
            ColumnType::Decimal {
                precision: 14,
                scale: 4,
            },
        ),
    ]);
    let rec = encode_compact(
        &def,
        &vec![Value::Integer(1), dec("-1234567890.1234")],
        0,
        0,
    )
    .unwrap();
    assert_eq!(rec[1 + 13..], [0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D]);
    // TEXT takes a 2-byte length from 128 bytes on (DATA_BLOB).
    let def = table(vec![
        Column::not_null("id", ColumnType::Integer),
        Column::not_null("t", ColumnType::Text),
    ]);
    let rec = encode_compact(
        &def,
        &vec![Value::Integer(1), Value::text("y".repeat(130))],
        0,
        0,
    )
    .unwrap();
    assert_eq!(rec[1..3], [0x80, 130]);
    assert_eq!(rec.len(), 1 + 2 + 13 + 130);
}

#[test]
fn new_types_round_trip_through_delta_and_key() {
    let def = typed_table();
    let old = typed_row();
    let mut new = old.clone();
    new[1] = Value::SmallInt(i16::MAX);
    new[5] = dec("-9999999999.99");
    new[7] = at(9999, 12, 31, 23, 59, 59, 999_999);
    let delta = encode_delta(&def, &old, &[1, 5, 7]);
    let mut row = new.clone();
    assert_eq!(apply_delta(&def, &mut row, &delta).unwrap(), vec![1, 5, 7]);
    assert_eq!(row, def.normalize_row(&old));

    let kc = |ty| KeyColumn::not_null(ty);
    let types = [
        kc(ColumnType::TinyInt),
        kc(ColumnType::SmallInt),
        kc(ColumnType::Date),
        kc(ColumnType::Decimal {
            precision: 12,
            scale: 2,
        }),
        kc(ColumnType::DateTime6),
        kc(ColumnType::Text),
    ];
    let k = |b: i8, a: i16, c: Value, e: &str, g: Value, t: &str| {
        let mut out = Vec::new();
        let vals = vec![
            Value::TinyInt(b),
            Value::SmallInt(a),
            c,
            dec(e),
            g,
            Value::text(t),
        ];
        encode_key(&types, &vals, &mut out).unwrap();
        assert_eq!(
            decode_key(&types, &out).unwrap()[3],
            super::value::normalize_value(types[3].ty, &vals[3])
        );
        out
    };
    let t0 = at(2020, 1, 1, 0, 0, 0, 0);
    let base = k(0, 0, date(2020, 1, 1), "1.00", t0.clone(), "a");
    assert!(k(-1, 9, date(2030, 1, 1), "9", t0.clone(), "z") < base);
    assert!(k(0, -1, date(2030, 1, 1), "9", t0.clone(), "z") < base);
    assert!(k(0, 0, date(2019, 12, 31), "9", t0.clone(), "z") < base);
    assert!(k(0, 0, date(2020, 1, 1), "0.99", t0.clone(), "z") < base);
    assert!(k(0, 0, date(2020, 1, 1), "-5", t0.clone(), "z") < base);
    assert_eq!(k(0, 0, date(2020, 1, 1), "1", t0.clone(), "a"), base);
    assert!(
        k(
            0,
            0,
            date(2020, 1, 1),
            "1",
            at(2019, 12, 31, 23, 59, 59, 999_999),
            "z"
        ) < base
    );
    assert!(k(0, 0, date(2020, 1, 1), "1", t0.clone(), "") < base);
    assert!(k(0, 0, date(2020, 1, 1), "1", t0, "b") > base);
    // A decimal key must fit its column.
    let mut out = Vec::new();
    let e = encode_key(&types[3..4], &[dec("1.234")], &mut out).unwrap_err();
    assert!(e.to_string().contains("fraction digits"), "{e}");
}

#[test]
fn new_types_refuse_values_outside_both_engines_domain() {
    let def = typed_table();
    let bad = |c: usize, v: Value, words: &str| {
        let mut row = typed_row();
        row[c] = v;
        let m = def.check_row(&row).unwrap_err().to_string();
        let name = &def.columns[c].name;
        assert!(m.contains(&format!("column \"{name}\"")), "{m}");
        assert!(m.contains(words), "{m}");
        // The InnoDB encoder refuses it too (it checks values itself), except a row
        // InnoDB could store and only PostgreSQL would TOAST.
        if !words.contains("TOAST") {
            assert!(encode_compact(&def, &row, 0, 0).is_err());
        }
    };
    bad(1, Value::Integer(5), "expected smallint");
    bad(3, date(999, 12, 31), "outside the DATE range");
    bad(3, date(10000, 1, 1), "outside the DATE range");
    bad(4, at(1970, 1, 1, 0, 0, 0, 999_999), "TIMESTAMP(6) range");
    bad(4, at(2038, 1, 19, 3, 14, 8, 0), "TIMESTAMP(6) range");
    bad(5, dec("12345678901.5"), "integer digits");
    bad(5, dec("1.555"), "fraction digits");
    bad(6, Value::text("a\0b"), "NUL");
    bad(6, Value::text("x".repeat(MAX_TEXT_BYTES + 1)), "TEXT limit");
    bad(6, Value::text("x".repeat(2100)), "TOAST");
    bad(7, at(999, 12, 31, 23, 59, 59, 999_999), "DATETIME range");
    bad(7, Value::Timestamp(i64::MAX), "DATETIME range");
    // The edges of the domain are accepted.
    let mut row = typed_row();
    row[3] = date(1000, 1, 1);
    row[4] = at(2038, 1, 19, 3, 14, 7, 999_999);
    row[5] = dec("-9999999999.99");
    row[6] = Value::text("x".repeat(1900));
    row[7] = at(1000, 1, 1, 0, 0, 0, 0);
    def.check_row(&row).unwrap();
    let t = encode_heap(&def, &row);
    assert!(t.tuple_bytes() <= TOAST_TUPLE_THRESHOLD);
    assert_eq!(
        decode_heap(&def, None, &t.data).unwrap(),
        def.normalize_row(&row)
    );
    let rec = encode_compact(&def, &row, 0, 0).unwrap();
    let key = key_of(&def, &def.primary_key, &row).unwrap();
    assert_eq!(
        decode_compact(&def, &key, &rec).unwrap().0,
        def.normalize_row(&row)
    );
}

#[test]
fn new_types_validate_and_print() {
    let with = |ty: ColumnType| {
        table(vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("x", ty),
        ])
    };
    for (p, s) in [(0u8, 0u8), (66, 0), (10, 11), (40, 39)] {
        let ty = ColumnType::Decimal {
            precision: p,
            scale: s,
        };
        let m = with(ty).validate().unwrap_err().to_string();
        assert!(m.contains("column \"x\"") && m.contains("precision"), "{m}");
    }
    with(ColumnType::Decimal {
        precision: 65,
        scale: 30,
    })
    .validate()
    .unwrap();
    // TEXT counts its pack length in MariaDB's row size, and is never a key column.
    let mut def = with(ColumnType::Text);
    def.validate().unwrap();
    def.indexes.push(IndexDef {
        name: "ix".into(),
        columns: vec![1],
        unique: false,
    });
    let m = def.validate().unwrap_err().to_string();
    assert!(m.contains("TEXT") && m.contains("\"x\""), "{m}");

    let names: Vec<(String, String, String)> = [
        ColumnType::TinyInt,
        ColumnType::SmallInt,
        ColumnType::Decimal {
            precision: 15,
            scale: 2,
        },
        ColumnType::Date,
        ColumnType::Timestamp6,
        ColumnType::DateTime6,
        ColumnType::Text,
        ColumnType::Timestamp,
        ColumnType::Integer,
    ]
    .iter()
    .map(|t| (t.to_string(), t.postgres_sql(), t.mariadb_sql()))
    .collect();
    let expect = [
        ("tinyint", "smallint", "TINYINT"),
        ("smallint", "smallint", "SMALLINT"),
        ("decimal(15,2)", "numeric(15,2)", "DECIMAL(15,2)"),
        ("date", "date", "DATE"),
        ("timestamp(6)", "timestamp(6)", "TIMESTAMP(6)"),
        ("datetime(6)", "timestamp(6)", "DATETIME(6)"),
        ("text", "text", "TEXT"),
        ("timestamp", "timestamp(0)", "TIMESTAMP"),
        ("integer", "integer", "INT"),
    ];
    for (got, want) in names.iter().zip(expect) {
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2.as_str()), want);
    }
    assert_eq!(dec("-12.5").to_string(), "-12.5");
    assert_eq!(date(2024, 2, 29).to_string(), "'2024-02-29'");
    assert_eq!(
        at(2024, 2, 29, 13, 5, 9, 120).to_string(),
        "'2024-02-29 13:05:09.00012'"
    );
    assert_eq!(Value::TinyInt(-7).to_string(), "-7");
    assert_eq!(Value::SmallInt(300).to_string(), "300");
}

#[test]
fn foreign_keys_are_declared_and_shape_checked() {
    let mut def = typed_table();
    def.name = "orders".into();
    def.foreign_keys.push(ForeignKeyDef {
        name: "fk_customer".into(),
        columns: vec![1, 2],
        referenced_table: "customer".into(),
        referenced_columns: vec!["c_w_id".into(), "c_id".into()],
    });
    def.validate().unwrap();
    // Serialized and back; a catalog written without the field decodes with none.
    let json = serde_json::to_string(&def).unwrap();
    assert_eq!(serde_json::from_str::<TableDef>(&json).unwrap(), def);
    let mut old: serde_json::Value = serde_json::to_value(sbtest()).unwrap();
    old.as_object_mut().unwrap().remove("foreign_keys");
    let back: TableDef = serde_json::from_value(old).unwrap();
    assert_eq!(back, sbtest());
    assert!(back.foreign_keys.is_empty());

    let broken = |f: &dyn Fn(&mut ForeignKeyDef), words: &str| {
        let mut d = def.clone();
        f(&mut d.foreign_keys[0]);
        let m = d.validate().unwrap_err().to_string();
        assert!(
            m.contains("fk_customer") || m.contains("foreign key"),
            "{m}"
        );
        assert!(m.contains(words), "{m}");
    };
    broken(
        &|fk| fk.referenced_columns.pop().map(drop).unwrap_or(()),
        "disagree",
    );
    broken(&|fk| fk.columns[1] = 99, "column position 99");
    broken(&|fk| fk.columns[1] = 1, "twice");
    broken(&|fk| fk.columns.clear(), "no columns");
    broken(&|fk| fk.referenced_table.clear(), "empty name");
    let mut d = def.clone();
    d.foreign_keys.push(d.foreign_keys[0].clone());
    assert!(d.validate().unwrap_err().to_string().contains("used twice"));
    // Not enforced: a row is checked against its own table only.
    def.check_row(&typed_row()).unwrap();
}

// ---------------------------------------------------------------------------------------
// Property tests.

fn arb_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        Just(ColumnType::Integer),
        Just(ColumnType::BigInt),
        Just(ColumnType::Timestamp),
        (1u16..=12).prop_map(ColumnType::Char),
        (100u16..=255).prop_map(ColumnType::Char),
        (1u16..=12).prop_map(ColumnType::Varchar),
        (60u16..=380).prop_map(ColumnType::Varchar),
        Just(ColumnType::TinyInt),
        Just(ColumnType::SmallInt),
        Just(ColumnType::Date),
        Just(ColumnType::Timestamp6),
        Just(ColumnType::DateTime6),
        arb_decimal_type(),
        Just(ColumnType::Text),
    ]
}

/// DECIMAL(p,s) types: small ones, TPC's, and the largest both engines take.
fn arb_decimal_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        (1u8..=20).prop_flat_map(|p| (Just(p), 0..=p)),
        Just((12u8, 2u8)),
        Just((15, 2)),
        Just((4, 4)),
        Just((65, 0)),
        Just((65, 30)),
        Just((65, 38)),
    ]
    .prop_map(|(precision, scale)| ColumnType::Decimal { precision, scale })
}

/// A decimal that fits DECIMAL(p,s): up to p − s integer digits, up to s fraction digits
/// (fewer fraction digits than s test the normalization to the column's scale).
fn arb_decimal(p: u8, s: u8) -> BoxedStrategy<Value> {
    let int_max = usize::from(p - s);
    let s_max = usize::from(s);
    (
        any::<bool>(),
        proptest::collection::vec(0u8..=9, 0..=int_max),
        0..=s_max,
        proptest::collection::vec(0u8..=9, s_max..=s_max),
        prop_oneof![3 => Just(false), 1 => Just(true)],
    )
        .prop_map(move |(neg, int, scale, frac, nines)| {
            let digit = |d: &u8| char::from(b'0' + if nines { 9 } else { *d });
            let int: String = int.iter().map(digit).collect();
            let frac: String = frac[..scale].iter().map(digit).collect();
            let all = format!("{int}{frac}");
            let d = Decimal::new(neg, if all.is_empty() { "0" } else { &all }, scale as u8)
                .expect("digits");
            Value::Decimal(d)
        })
        .boxed()
}

/// Characters that stress the codecs: blanks, control characters below the blank, multibyte
/// characters; NUL only where `nul` (keys may hold it, stored rows may not).
fn arb_char(nul: bool) -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'e'),
        2 => Just(' '),
        1 => Just(if nul { '\0' } else { '\u{1}' }),
        1 => Just('\t'),
        1 => Just('€'),
        1 => any::<char>().prop_map(move |c| if c == '\0' && !nul { 'z' } else { c }),
    ]
}

fn arb_text(n: u16, nul: bool) -> impl Strategy<Value = String> {
    let max = usize::from(n);
    prop_oneof![
        proptest::collection::vec(arb_char(nul), 0..=max.min(8)),
        proptest::collection::vec(arb_char(nul), 0..=max),
        proptest::collection::vec(proptest::char::range('a', 'z'), max..=max),
    ]
    .prop_map(|cs| cs.into_iter().collect())
}

/// A non-NULL value of `ty` that passes `check_row`.
fn arb_value(ty: ColumnType) -> BoxedStrategy<Value> {
    match ty {
        ColumnType::Integer => any::<i32>().prop_map(Value::Integer).boxed(),
        ColumnType::BigInt => any::<i64>().prop_map(Value::BigInt).boxed(),
        ColumnType::Timestamp => (MARIADB_TIMESTAMP_MIN_UNIX_SECS
            ..=MARIADB_TIMESTAMP_MAX_UNIX_SECS)
            .prop_map(Value::timestamp_from_unix_secs)
            .boxed(),
        ColumnType::Char(n) | ColumnType::Varchar(n) => {
            arb_text(n, false).prop_map(Value::Text).boxed()
        }
        ColumnType::Text => arb_text(150, false).prop_map(Value::Text).boxed(),
        ColumnType::TinyInt => any::<i8>().prop_map(Value::TinyInt).boxed(),
        ColumnType::SmallInt => any::<i16>().prop_map(Value::SmallInt).boxed(),
        ColumnType::Date => {
            let (lo, hi) = date_days();
            (lo..=hi).prop_map(Value::Date).boxed()
        }
        ColumnType::Timestamp6 => ((MARIADB_TIMESTAMP_MIN_UNIX_SECS - PG_EPOCH_UNIX_SECS)
            * USECS_PER_SEC
            ..(MARIADB_TIMESTAMP_MAX_UNIX_SECS + 1 - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC)
            .prop_map(Value::Timestamp)
            .boxed(),
        ColumnType::DateTime6 => {
            let (lo, hi) = date_days();
            (i64::from(lo) * USECS_PER_DAY..(i64::from(hi) + 1) * USECS_PER_DAY)
                .prop_map(Value::Timestamp)
                .boxed()
        }
        ColumnType::Decimal { precision, scale } => arb_decimal(precision, scale),
    }
}

/// First and last day of the DATE domain, in days since 2000-01-01.
fn date_days() -> (i32, i32) {
    let (lo, hi) = super::datetime::date_domain_days();
    (lo as i32, hi as i32)
}

/// A value of `ty` for a key: any timestamp, NULL one time in four.
fn arb_key_value(col: KeyColumn) -> BoxedStrategy<Value> {
    let ty = col.ty;
    let v = match ty {
        ColumnType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
        ColumnType::Integer => prop_oneof![
            any::<i32>().prop_map(Value::Integer),
            (-2i32..=2).prop_map(Value::Integer)
        ]
        .boxed(),
        ColumnType::Char(n) | ColumnType::Varchar(n) => {
            arb_text(n, true).prop_map(Value::Text).boxed()
        }
        ColumnType::Text => arb_text(12, true).prop_map(Value::Text).boxed(),
        ColumnType::Date => prop_oneof![any::<i32>(), -2i32..=2]
            .prop_map(Value::Date)
            .boxed(),
        ColumnType::Timestamp6 | ColumnType::DateTime6 => {
            any::<i64>().prop_map(Value::Timestamp).boxed()
        }
        ColumnType::TinyInt => prop_oneof![any::<i8>(), -2i8..=2]
            .prop_map(Value::TinyInt)
            .boxed(),
        _ => arb_value(ty),
    };
    if !col.nullable {
        return v;
    }
    prop_oneof![1 => Just(Value::Null), 3 => v].boxed()
}

fn arb_def() -> impl Strategy<Value = TableDef> {
    (
        proptest::collection::vec((arb_type(), any::<bool>()), 1..=11),
        any::<prop::sample::Index>(),
        any::<bool>(),
        proptest::collection::vec(
            proptest::collection::vec(any::<prop::sample::Index>(), 1..=2),
            0..=2,
        ),
    )
        .prop_map(|(cols, pk_at, two_col_pk, ixs)| {
            let n = cols.len();
            let mut columns: Vec<Column> = cols
                .into_iter()
                .enumerate()
                .map(|(i, (ty, nullable))| Column {
                    name: format!("c{i}"),
                    ty,
                    nullable,
                })
                .collect();
            let first = pk_at.index(n);
            let mut primary_key = vec![first];
            if two_col_pk && n > 1 {
                primary_key.push((first + 1) % n);
            }
            for &c in &primary_key {
                columns[c].nullable = false;
            }
            // TEXT is never a key column (validate refuses it), and a table with TEXT keeps
            // its rows under PostgreSQL's TOAST threshold: at most two TEXT columns, the
            // other text columns short.
            let in_key = |c: usize| {
                primary_key.contains(&c) || ixs.iter().any(|ix| ix.iter().any(|x| x.index(n) == c))
            };
            let mut texts = 0;
            for (c, col) in columns.iter_mut().enumerate() {
                if col.ty == ColumnType::Text {
                    texts += 1;
                    if in_key(c) || texts > 2 {
                        col.ty = ColumnType::Varchar(12);
                    }
                }
            }
            if columns.iter().any(|c| c.ty == ColumnType::Text) {
                for col in &mut columns {
                    match col.ty {
                        ColumnType::Char(m) if m > 12 => col.ty = ColumnType::Char(12),
                        ColumnType::Varchar(m) if m > 12 => col.ty = ColumnType::Varchar(12),
                        _ => {}
                    }
                }
            }
            let indexes = ixs
                .into_iter()
                .enumerate()
                .map(|(i, cols)| {
                    let mut cols: Vec<usize> = cols.iter().map(|x| x.index(n)).collect();
                    cols.dedup();
                    IndexDef {
                        name: format!("ix{i}"),
                        columns: cols,
                        unique: i == 0,
                    }
                })
                .collect();
            let def = TableDef {
                name: "prop".into(),
                columns,
                primary_key,
                indexes,
                foreign_keys: Vec::new(),
            };
            def.validate().expect("generated definition is valid");
            def
        })
}

fn arb_row(def: &TableDef) -> BoxedStrategy<Row> {
    def.columns
        .iter()
        .map(|c| {
            if c.nullable {
                prop_oneof![1 => Just(Value::Null), 2 => arb_value(c.ty)].boxed()
            } else {
                arb_value(c.ty)
            }
        })
        .collect::<Vec<_>>()
        .boxed()
}

fn arb_def_row() -> impl Strategy<Value = (TableDef, Row)> {
    arb_def().prop_flat_map(|d| {
        let r = arb_row(&d);
        (Just(d), r)
    })
}

fn arb_def_two_rows() -> impl Strategy<Value = (TableDef, Row, Row, Vec<bool>)> {
    arb_def().prop_flat_map(|d| {
        let n = d.columns.len();
        let (a, b) = (arb_row(&d), arb_row(&d));
        (Just(d), a, b, proptest::collection::vec(any::<bool>(), n))
    })
}

/// The heap data size by the documented arithmetic, independently of the encoder.
fn expected_heap_data_bytes(def: &TableDef, row: &Row) -> usize {
    let mut off = 0usize;
    for (c, v) in def.columns.iter().zip(row) {
        match super::value::normalize_value(c.ty, v) {
            Value::Null => {}
            Value::TinyInt(_) | Value::SmallInt(_) => off = off.next_multiple_of(2) + 2,
            Value::Integer(_) | Value::Date(_) => off = off.next_multiple_of(4) + 4,
            Value::BigInt(_) | Value::Timestamp(_) => off = off.next_multiple_of(8) + 8,
            // 1-byte varlena header, 2-byte NumericShort header, 2 bytes per NBASE digit.
            Value::Decimal(d) => off += 3 + 2 * pg_numeric_digits(&d),
            Value::Text(p) if p.len() < 127 => off += 1 + p.len(),
            Value::Text(p) => off = off.next_multiple_of(4) + 4 + p.len(),
        }
    }
    off
}

/// Base-10000 digits PostgreSQL keeps of a numeric: the decimal digits cut in groups of 4
/// from the point, zero groups at either end dropped.
fn pg_numeric_digits(d: &Decimal) -> usize {
    let int = d.integer_digits();
    let frac = d.fraction_digits();
    let mut groups: Vec<String> = Vec::new();
    let pad = (4 - int.len() % 4) % 4;
    let int = format!("{}{int}", "0".repeat(pad));
    for g in int.as_bytes().chunks(4) {
        groups.push(String::from_utf8(g.to_vec()).unwrap());
    }
    let frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    for g in frac.as_bytes().chunks(4) {
        groups.push(String::from_utf8(g.to_vec()).unwrap());
    }
    let nonzero: Vec<usize> = (0..groups.len()).filter(|&i| groups[i] != "0000").collect();
    match (nonzero.first(), nonzero.last()) {
        (Some(a), Some(b)) => b - a + 1,
        _ => 0,
    }
}

/// The COMPACT record size by the documented arithmetic, independently of the encoder.
fn expected_compact_bytes(def: &TableDef, row: &Row) -> usize {
    let nullable = def.columns.iter().filter(|c| c.nullable).count();
    let mut bytes = REC_STORED_HEADER_BYTES + nullable.div_ceil(8) + 6 + 7;
    for (i, (c, v)) in def.columns.iter().zip(row).enumerate() {
        if def.primary_key.contains(&i) {
            continue; // the entry's key holds it
        }
        let field = match (c.ty, v) {
            (_, Value::Null) => continue,
            (ColumnType::Integer | ColumnType::Timestamp, _) => 4,
            (ColumnType::BigInt | ColumnType::DateTime6, _) => 8,
            (ColumnType::TinyInt, _) => 1,
            (ColumnType::SmallInt, _) => 2,
            (ColumnType::Date, _) => 3,
            (ColumnType::Timestamp6, _) => 7,
            (ColumnType::Decimal { precision, scale }, _) => decimal_bin_size(precision, scale),
            (ColumnType::Char(n), Value::Text(s)) => {
                s.trim_end_matches(' ').len().max(usize::from(n))
            }
            (_, Value::Text(s)) => s.len(),
            _ => unreachable!(),
        };
        bytes += field;
        if c.ty.is_text() {
            bytes += if field < 128 || c.ty.mariadb_max_bytes() <= 255 {
                1
            } else {
                2
            };
        }
    }
    bytes
}

/// SQL order of key values: PostgreSQL, C collation, bpchar ignoring trailing blanks,
/// NULLS LAST.
fn sql_cmp(types: &[KeyColumn], a: &[Value], b: &[Value]) -> Ordering {
    for ((col, x), y) in types.iter().zip(a).zip(b) {
        let ty = &col.ty;
        let o = match (x, y) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Greater,
            (_, Value::Null) => Ordering::Less,
            (Value::Integer(x), Value::Integer(y)) | (Value::Date(x), Value::Date(y)) => x.cmp(y),
            (Value::TinyInt(x), Value::TinyInt(y)) => x.cmp(y),
            (Value::SmallInt(x), Value::SmallInt(y)) => x.cmp(y),
            (Value::Decimal(x), Value::Decimal(y)) => decimal_cmp(x, y),
            (Value::BigInt(x), Value::BigInt(y)) | (Value::Timestamp(x), Value::Timestamp(y)) => {
                x.cmp(y)
            }
            (Value::Text(x), Value::Text(y)) => match ty {
                ColumnType::Char(_) => x
                    .trim_end_matches(' ')
                    .as_bytes()
                    .cmp(y.trim_end_matches(' ').as_bytes()),
                _ => x.as_bytes().cmp(y.as_bytes()),
            },
            _ => unreachable!("values match their types"),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Numeric order of two decimals.
fn decimal_cmp(x: &Decimal, y: &Decimal) -> Ordering {
    let scale = x.scale().max(y.scale());
    let (x, y) = (x.with_scale(scale).unwrap(), y.with_scale(scale).unwrap());
    let mag = |d: &Decimal| (d.integer_digits().len(), d.to_string().replace('-', ""));
    let (mx, my) = (mag(&x), mag(&y));
    match (x.is_negative(), y.is_negative()) {
        (false, false) => mx.cmp(&my),
        (true, true) => my.cmp(&mx),
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
    }
}

fn arb_key_types() -> impl Strategy<Value = Vec<KeyColumn>> {
    proptest::collection::vec(
        (
            prop_oneof![
                Just(ColumnType::Integer),
                Just(ColumnType::BigInt),
                Just(ColumnType::Timestamp),
                (1u16..=6).prop_map(ColumnType::Char),
                (1u16..=6).prop_map(ColumnType::Varchar),
                Just(ColumnType::TinyInt),
                Just(ColumnType::SmallInt),
                Just(ColumnType::Date),
                Just(ColumnType::Timestamp6),
                Just(ColumnType::DateTime6),
                Just(ColumnType::Text),
                arb_decimal_type(),
            ],
            any::<bool>(),
        )
            .prop_map(|(ty, nullable)| KeyColumn { ty, nullable }),
        1..=4,
    )
}

fn arb_keys(
    count: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = (Vec<KeyColumn>, Vec<Vec<Value>>)> {
    arb_key_types().prop_flat_map(move |types| {
        let one: Vec<BoxedStrategy<Value>> = types.iter().map(|&c| arb_key_value(c)).collect();
        (Just(types), proptest::collection::vec(one, count.clone()))
    })
}

fn encoded(types: &[KeyColumn], values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(types, values, &mut out).unwrap();
    out
}

/// A decoder's answer: a valid row, or `Corrupted`; anything else fails the test.
fn assert_valid_or_corrupted(
    def: &TableDef,
    r: Result<Row>,
) -> std::result::Result<(), TestCaseError> {
    match r {
        Ok(row) => {
            prop_assert!(
                def.check_row(&row).is_ok(),
                "decoded an invalid row {row:?}"
            );
            prop_assert_eq!(def.normalize_row(&row), row);
        }
        Err(Error::Storage(StorageError::Corrupted { .. })) => {}
        Err(e) => prop_assert!(false, "unexpected error {e}"),
    }
    Ok(())
}

/// Byte-string damage: flip bits of one byte, truncate, or append.
fn damage(mut bytes: Vec<u8>, how: u8, at: prop::sample::Index, x: u8) -> Vec<u8> {
    match how % 3 {
        0 if !bytes.is_empty() => {
            let i = at.index(bytes.len());
            bytes[i] ^= x.max(1);
        }
        1 => bytes.truncate(at.index(bytes.len() + 1)),
        _ => bytes.push(x),
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn heap_round_trips((def, row) in arb_def_row()) {
        def.check_row(&row).unwrap();
        let t = encode_heap(&def, &row);
        prop_assert_eq!(t.null_bitmap.is_some(), row.iter().any(Value::is_null));
        prop_assert_eq!(t.data.len(), expected_heap_data_bytes(&def, &row));
        let back = decode_heap(&def, t.null_bitmap.as_deref(), &t.data).unwrap();
        prop_assert_eq!(&back, &def.normalize_row(&row));
        // Encoding is a function of the stored value: re-encoding gives the same bytes.
        prop_assert_eq!(encode_heap(&def, &back), t);
    }

    #[test]
    fn compact_round_trips(
        (def, row) in arb_def_row(),
        trx in 0..=MAX_TRX_ID,
        roll in 0..=MAX_ROLL_PTR,
        mark in any::<bool>(),
    ) {
        let mut rec = encode_compact(&def, &row, trx, roll).unwrap();
        prop_assert_eq!(rec.len(), expected_compact_bytes(&def, &row));
        set_compact_delete_mark(&mut rec, mark).unwrap();
        let key = key_of(&def, &def.primary_key, &row).unwrap();
        let r = decode_compact_record(&def, &key, &rec).unwrap();
        prop_assert_eq!(&r.row, &def.normalize_row(&row));
        prop_assert_eq!((r.trx_id, r.roll_ptr, r.delete_marked), (trx, roll, mark));
        prop_assert_eq!(compact_system_columns(&def, &rec).unwrap(), (trx, roll));
        let mut again = encode_compact(&def, &r.row, trx, roll).unwrap();
        set_compact_delete_mark(&mut again, mark).unwrap();
        prop_assert_eq!(again, rec);
        // Secondary records: size = header + NULL bitmap + lengths + fields of those columns.
        for i in 0..def.indexes.len() {
            let cols = def.secondary_record_columns(i);
            prop_assert!(compact_index_record_bytes(&def, &cols, &row).unwrap() >= 5);
        }
    }

    #[test]
    fn delta_round_trips((def, old, new, pick) in arb_def_two_rows()) {
        let cols: Vec<usize> = (0..def.columns.len()).filter(|&c| pick[c]).collect();
        let delta = encode_delta(&def, &old, &cols);
        let mut row = new.clone();
        prop_assert_eq!(apply_delta(&def, &mut row, &delta).unwrap(), cols.clone());
        let norm_old = def.normalize_row(&old);
        let expected: Row = (0..def.columns.len())
            .map(|c| if pick[c] { norm_old[c].clone() } else { new[c].clone() })
            .collect();
        prop_assert_eq!(row, expected);
    }

    #[test]
    fn key_round_trips_and_preserves_order((types, keys) in arb_keys(2..=2)) {
        let (a, b) = (&keys[0], &keys[1]);
        let (ea, eb) = (encoded(&types, a), encoded(&types, b));
        prop_assert_eq!(ea.cmp(&eb), sql_cmp(&types, a, b), "{:?} vs {:?}", a, b);
        for (k, e) in [(a, &ea), (b, &eb)] {
            let norm: Vec<Value> = types
                .iter()
                .zip(k)
                .map(|(c, v)| super::value::normalize_value(c.ty, v))
                .collect();
            prop_assert_eq!(decode_key(&types, e).unwrap(), norm);
        }
    }

    #[test]
    fn sorting_by_key_bytes_sorts_by_sql_value((types, keys) in arb_keys(2..=24)) {
        let mut by_bytes: Vec<(Vec<u8>, &Vec<Value>)> =
            keys.iter().map(|k| (encoded(&types, k), k)).collect();
        by_bytes.sort_by(|x, y| x.0.cmp(&y.0));
        let mut by_value: Vec<&Vec<Value>> = keys.iter().collect();
        by_value.sort_by(|x, y| sql_cmp(&types, x, y));
        for w in by_bytes.windows(2) {
            prop_assert_ne!(sql_cmp(&types, w[0].1, w[1].1), Ordering::Greater);
        }
        // Same multiset of keys, position by position equal under SQL equality.
        for ((_, x), y) in by_bytes.iter().zip(&by_value) {
            prop_assert_eq!(sql_cmp(&types, x, y), Ordering::Equal);
        }
    }

    #[test]
    fn heap_decoder_never_panics(
        (def, row) in arb_def_row(),
        random in proptest::collection::vec(any::<u8>(), 0..300),
        bitmap in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..3)),
        how in any::<u8>(), at in any::<prop::sample::Index>(), x in any::<u8>(),
    ) {
        assert_valid_or_corrupted(&def, decode_heap(&def, bitmap.as_deref(), &random))?;
        let t = encode_heap(&def, &row);
        let data = damage(t.data.clone(), how, at, x);
        assert_valid_or_corrupted(&def, decode_heap(&def, t.null_bitmap.as_deref(), &data))?;
        if let Some(bm) = &t.null_bitmap {
            let bm = damage(bm.clone(), how, at, x);
            assert_valid_or_corrupted(&def, decode_heap(&def, Some(&bm), &t.data))?;
        }
    }

    #[test]
    fn compact_decoder_never_panics(
        (def, row) in arb_def_row(),
        random in proptest::collection::vec(any::<u8>(), 0..300),
        how in any::<u8>(), at in any::<prop::sample::Index>(), x in any::<u8>(),
    ) {
        let key = key_of(&def, &def.primary_key, &row).unwrap();
        assert_valid_or_corrupted(&def, decode_compact(&def, &key, &random).map(|r| r.0))?;
        assert_valid_or_corrupted(&def, decode_compact(&def, &random[..random.len().min(9)], &random).map(|r| r.0))?;
        let rec = damage(encode_compact(&def, &row, 7, 9).unwrap(), how, at, x);
        assert_valid_or_corrupted(&def, decode_compact(&def, &key, &rec).map(|r| r.0))?;
        let _ = compact_system_columns(&def, &rec);
        let mut rec = rec;
        let _ = set_compact_system_columns(&def, &mut rec, 1, 1);
        let _ = set_compact_delete_mark(&mut rec, true);
    }

    #[test]
    fn delta_decoder_never_panics(
        (def, row, other, pick) in arb_def_two_rows(),
        random in proptest::collection::vec(any::<u8>(), 0..200),
        how in any::<u8>(), at in any::<prop::sample::Index>(), x in any::<u8>(),
    ) {
        let mut target = other.clone();
        let r = apply_delta(&def, &mut target, &random);
        prop_assert!(matches!(r, Ok(_) | Err(Error::Storage(StorageError::Corrupted { .. }))), "{:?}", r);
        if r.is_err() {
            prop_assert_eq!(&target, &other);
        }
        let cols: Vec<usize> = (0..def.columns.len()).filter(|&c| pick[c]).collect();
        let delta = damage(encode_delta(&def, &row, &cols), how, at, x);
        let mut target = def.normalize_row(&other);
        match apply_delta(&def, &mut target, &delta) {
            Ok(_) => prop_assert!(def.check_row(&target).is_ok()),
            Err(Error::Storage(StorageError::Corrupted { .. })) => {}
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }

    #[test]
    fn key_decoder_never_panics(
        (types, keys) in arb_keys(1..=1),
        random in proptest::collection::vec(any::<u8>(), 0..64),
        how in any::<u8>(), at in any::<prop::sample::Index>(), x in any::<u8>(),
    ) {
        for bytes in [random, damage(encoded(&types, &keys[0]), how, at, x)] {
            match decode_key(&types, &bytes) {
                Ok(values) => {
                    // Whatever decodes re-encodes to the same bytes: one encoding per key.
                    prop_assert_eq!(encoded(&types, &values), bytes);
                }
                Err(Error::Storage(StorageError::Corrupted { .. })) => {}
                Err(e) => prop_assert!(false, "unexpected error {}", e),
            }
        }
    }
}
