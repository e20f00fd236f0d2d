//! InnoDB ROW_FORMAT=COMPACT records: the clustered-index record of a row, and the size of a
//! secondary-index record.
//!
//! Follows MariaDB 10.11 storage/innobase/rem/rem0rec.cc (`rec_convert_dtuple_to_rec_comp`,
//! `rec_init_offsets_comp_ordinary`), include/rem0rec.h (`REC_N_NEW_EXTRA_BYTES`,
//! `REC_INFO_DELETED_FLAG`), row/row0mysql.cc (`row_mysql_store_col_in_innobase_format`),
//! dict/dict0dict.cc (`dict_index_build_internal_clust`) and the manual's "InnoDB Row
//! Formats" / "COMPACT Row Format". MariaDB 10.11's default, ROW_FORMAT=DYNAMIC, stores
//! records that fit inline exactly like COMPACT; the two differ only in off-page columns,
//! which are not modelled.
//!
//! A clustered record holds its fields in index order: the primary key columns (key order),
//! `DB_TRX_ID`, `DB_ROLL_PTR`, then the other columns in table order. InnoDB searches its
//! pages by those first fields; here the B-tree entry's key holds them (the order-preserving
//! [`super::encode_key`] of the primary key), and the stored record, the entry's value,
//! leaves them out, with their length bytes. A table without a primary key is clustered on
//! InnoDB's hidden `DB_ROW_ID` (`dict_index_build_internal_clust` adds it as the first
//! field of the GEN_CLUST_INDEX, before `DB_TRX_ID` and `DB_ROLL_PTR`; 6 bytes, big-endian,
//! `dict_sys_write_row_id`): the entry's key is then those 6 bytes ([`DB_ROW_ID_BYTES`]),
//! and every user column is in the stored record. Our record, from its first byte:
//!
//! ```text
//! | offset         | bytes          | field                                                   |
//! |----------------|----------------|---------------------------------------------------------|
//! | 0              | 1              | info bits (high nibble: 0x20 delete mark) | n_owned (low) |
//! | (page layer)   | (4)            | heap_no << 3 | status (2), next record offset (2): not  |
//! |                |                |   stored in the record; the B-tree's 4-byte entry       |
//! |                |                |   header stands for them                                |
//! | 1              | ceil(nullable/8)| NULL bitmap: bit i % 8 of byte i / 8 set = i-th nullable |
//! |                |                |   field is NULL (none if no field is nullable)          |
//! | 1 + N          | 1 or 2 each    | lengths of the non-NULL variable-length fields, in      |
//! |                |                |   field order: 1 byte if len < 128 or max ≤ 255 bytes,  |
//! |                |                |   else 0x80 | len >> 8, then len & 0xFF (len < 16384)   |
//! | origin         | ...            | fields, the primary key's left out (they are the entry's|
//! |                |                |   key); NULLs take nothing                              |
//! |                |   4            |   INTEGER: big-endian, sign bit flipped                 |
//! |                |   8            |   BIGINT: big-endian, sign bit flipped                  |
//! |                |   4            |   TIMESTAMP: Unix seconds, big-endian (MariaDB          |
//! |                |                |   TIMESTAMP(0), `my_timestamp_to_binary`)               |
//! |                |   1 / 2        |   TINYINT / SMALLINT: big-endian, sign bit flipped      |
//! |                |   3            |   DATE: day + month·32 + year·16·32, big-endian, sign   |
//! |                |                |   bit flipped                                           |
//! |                |   7            |   TIMESTAMP(6): 4 bytes of Unix seconds + 3 of µs,      |
//! |                |                |   big-endian (`my_timestamp_to_binary`, dec 6)          |
//! |                |   8            |   DATETIME(6): 5 bytes of packed date and time + 0x80…, |
//! |                |                |   3 of µs, big-endian (`my_datetime_packed_to_binary`)  |
//! |                |   bin size     |   DECIMAL(p,s): `decimal2bin` (see `decimal`)           |
//! |                |   len          |   TEXT: the value's bytes                               |
//! |                |   len          |   CHAR(n), utf8mb4: value without trailing blanks,      |
//! |                |                |   blank-padded to at least n bytes                      |
//! |                |   len          |   VARCHAR(n): the value's bytes                         |
//! |                |   6            |   DB_TRX_ID, big-endian (`mach_write_to_6`)             |
//! |                |   7            |   DB_ROLL_PTR, big-endian (`mach_write_to_7`)           |
//! ```
//!
//! **Order of the extra bytes.** InnoDB points at the record's origin (the first field) and
//! reads the extra bytes *downward* from it: header at origin−5..origin, NULL bitmap from
//! origin−6 down, lengths below it. We store the same bytes in the order InnoDB reads them,
//! header first, so that a record is self-delimiting from its first byte (no origin pointer
//! needed) and the delete mark is always byte 0. Sizes and contents are InnoDB's; only the
//! order of the extra bytes differs.
//!
//! **Where the header's page-layer bytes are.** Four of the 5 header bytes
//! (`REC_N_NEW_EXTRA_BYTES`) serve InnoDB's page layer: the record's heap number and status,
//! and the offset of the next record in key order. The B-tree here finds and orders its
//! entries through its slot array and describes each with a 4-byte entry header (the key and
//! value lengths, [`crate::btree::BTreeConfig::innodb`]); those 4 bytes stand for the 4 of
//! InnoDB, and the stored record keeps only the info-bits byte
//! ([`REC_STORED_HEADER_BYTES`]). With the primary key fields in the entry's key and not
//! again in the value, a record on a page takes InnoDB's bytes plus the key's encoding
//! overhead (none for NOT NULL integer keys). [`compact_index_record_bytes`] gives the size
//! InnoDB's page layer would see.
//!
//! Size rules worth knowing:
//! - A length byte exists only for a non-NULL variable-length field. CHAR in a multi-byte
//!   charset (utf8mb4) is variable-length in InnoDB (`dict_col_get_fixed_size` is 0 when
//!   mbminlen ≠ mbmaxlen); its stored form keeps at least n bytes so that most updates fit
//!   in place (row0mysql.cc: `while (col_len > n_chars && ptr[col_len - 1] == 0x20)`).
//! - Maximum byte lengths are MariaDB's: CHAR(n)/VARCHAR(n) n × 4 (utf8mb4), so a column of
//!   more than 63 characters takes a 2-byte length when its value has 128 bytes or more.
//! - INTEGER, BIGINT, TIMESTAMP, TINYINT, SMALLINT, DATE, TIMESTAMP(6), DATETIME(6) and
//!   DECIMAL are fixed-length: no length byte. MariaDB's ha_innodb.cc
//!   `get_innobase_type_from_mysql_type` gives the integers and DATE the type `DATA_INT`
//!   (signed: row0mysql.cc `row_mysql_store_col_in_innobase_format` stores them big-endian
//!   with the sign bit flipped, `Field_newdate::store` packs the date as
//!   day + month × 32 + year × 16 × 32 in 3 bytes), and DECIMAL, TIMESTAMP(6) and
//!   DATETIME(6) `DATA_FIXBINARY`, stored as the server writes them: strings/decimal.c
//!   `decimal2bin`; sql/compat56.cc `my_timestamp_to_binary` (`mi_int4store` of the
//!   seconds, `mi_int3store` of the microseconds for precision 5–6) and
//!   `my_datetime_packed_to_binary` (`mi_int5store` of the packed integer part,
//!   `((year × 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 | second`, plus
//!   `DATETIMEF_INT_OFS` 0x8000000000, then `mi_int3store` of the microseconds).
//! - TEXT is `DATA_BLOB`: variable-length, its length takes 2 bytes from 128 bytes on
//!   (`DATA_BIG_COL`). InnoDB would store a long TEXT off page (ROW_FORMAT=DYNAMIC moves the
//!   longest BLOB/TEXT fields out when a record reaches half a page,
//!   `page_zip_rec_needs_ext`: [`INNODB_REC_NEEDS_EXT_BYTES`] for 16 KiB pages); off-page
//!   storage is not modelled, and [`TableDef::check_row`] refuses rows with TEXT whose
//!   clustered record would reach that size ([`compact_clustered_record_bytes`]).
//! - `TIMESTAMP` is 4 bytes because [`TableDef::check_row`] holds timestamps to whole
//!   seconds in MariaDB's TIMESTAMP range (see [`ColumnType::Timestamp`]); MariaDB would use
//!   4 + 3 bytes for TIMESTAMP(6).
//! - A field longer than 16383 bytes cannot be stored inline (InnoDB would move it off page);
//!   [`encode_compact`] refuses it with [`Error::TooLarge`].
//!
//! Example, sysbench `sbtest` (`id INTEGER, k INTEGER, c CHAR(120), pad CHAR(60)`, all
//! NOT NULL, ASCII): lengths of c (120 < 128: 1 byte) and pad (1 byte), no NULL bitmap,
//! 5 header bytes, id 4, DB_TRX_ID 6, DB_ROLL_PTR 7, k 4, c 120, pad 60: 208 bytes in
//! InnoDB, of which the record stores 200 (the info byte of the header, the lengths, and
//! the fields after id); the B-tree entry adds the 4-byte key (id) and its 4-byte header.
//!
//! A secondary-index record has the same layout over the index's columns followed by the
//! primary key columns not among them ([`TableDef::secondary_record_columns`]), without
//! DB_TRX_ID and DB_ROLL_PTR: [`compact_index_record_bytes`].

use super::datetime::{pg_days_of_ymd, ymd_of_pg_days};
use super::decimal::{bin2decimal, decimal2bin};
use super::value::{check_value, pad_char, timestamp_in_domain, MAX_TEXT_BYTES, NUL_IN_TEXT};
use super::{ColumnType, Projection, Row, TableDef, Value, PG_EPOCH_UNIX_SECS, USECS_PER_SEC};
use crate::error::{Error, Result};
use std::ops::Range;

/// Bytes of the fixed record header of a COMPACT record in InnoDB (`REC_N_NEW_EXTRA_BYTES`).
pub const REC_N_NEW_EXTRA_BYTES: usize = 5;
/// Bytes of that header a stored record keeps: the info bits (delete mark). The other 4
/// (heap number and status, next-record offset) belong to the page layer, whose B-tree
/// entry header stands for them (module doc).
pub const REC_STORED_HEADER_BYTES: usize = 1;
/// The delete-mark bit in byte 0 of a record (`REC_INFO_DELETED_FLAG`).
pub const COMPACT_DELETED_FLAG: u8 = 0x20;
/// Info bits other than the delete mark; none of them is valid in a leaf record
/// (`REC_INFO_MIN_REC_FLAG` 0x10 marks node pointers, 0x40/0x80 are unused).
const INFO_BITS_OTHER: u8 = 0xD0;
/// Bytes of `DB_ROW_ID`, the hidden clustered key of a table without a primary key
/// (`DATA_ROW_ID_LEN`): the B-tree key of its clustered index, and the suffix of its
/// secondary index records in place of a primary key.
pub const DB_ROW_ID_BYTES: usize = 6;
/// Largest `DB_ROW_ID` a record can hold (48 bits).
pub const MAX_ROW_ID: u64 = (1 << 48) - 1;
/// Bytes of `DB_TRX_ID` (`DATA_TRX_ID_LEN`).
pub const DB_TRX_ID_BYTES: usize = 6;
/// Bytes of `DB_ROLL_PTR` (`DATA_ROLL_PTR_LEN`).
pub const DB_ROLL_PTR_BYTES: usize = 7;
/// Largest transaction id a record can hold (48 bits).
pub const MAX_TRX_ID: u64 = (1 << 48) - 1;
/// Largest roll pointer a record can hold (56 bits; InnoDB packs insert flag, rollback
/// segment, undo page and offset into them, mvcclab treats it as an opaque number).
pub const MAX_ROLL_PTR: u64 = (1 << 56) - 1;
/// Longest field stored inline, in bytes (14 bits of a 2-byte length).
const MAX_INLINE_FIELD_BYTES: usize = 0x3FFF;
/// Size from which InnoDB stores a record's longest BLOB/TEXT fields off page, on 16 KiB
/// pages: half the free space of an empty page (page0zip.h `page_zip_rec_needs_ext`:
/// `rec_size >= page_get_free_space_of_empty(comp) / 2`; 16384 − `PAGE_NEW_SUPREMUM_END`
/// 120 − `PAGE_DIR` 8 − 2 slots × 2 = 16252, halved).
pub const INNODB_REC_NEEDS_EXT_BYTES: usize = 8126;
/// `DATETIMEF_INT_OFS` (sql/compat56.cc): added to the packed DATETIME integer part so
/// that the binary form compares as unsigned.
const DATETIMEF_INT_OFS: u64 = 0x80_0000_0000;

/// A field of an index record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    /// A user column (position in `TableDef::columns`).
    Col(usize),
    /// `DB_ROW_ID` (tables without a primary key).
    RowId,
    /// `DB_TRX_ID`.
    TrxId,
    /// `DB_ROLL_PTR`.
    RollPtr,
}

/// The fields a stored clustered record holds: [`clustered_fields`] without the primary key
/// columns or DB_ROW_ID, which the B-tree entry's key holds (module doc).
fn stored_fields(def: &TableDef) -> Vec<Field> {
    // Built in one allocation: decoders call this for every record.
    let mut fields = Vec::with_capacity(def.columns.len() + 2);
    fields.push(Field::TrxId);
    fields.push(Field::RollPtr);
    fields.extend(
        (0..def.columns.len())
            .filter(|c| !def.primary_key.contains(c))
            .map(Field::Col),
    );
    fields
}

/// Fields of the clustered index in order (`dict_index_build_internal_clust`): primary key
/// columns (DB_ROW_ID for a table without one), DB_TRX_ID, DB_ROLL_PTR, the other columns
/// in table order.
pub(super) fn clustered_fields(def: &TableDef) -> Vec<Field> {
    let mut fields: Vec<Field> = def.primary_key.iter().map(|&c| Field::Col(c)).collect();
    if fields.is_empty() {
        fields.push(Field::RowId);
    }
    fields.extend(stored_fields(def));
    fields
}

fn is_var_len(ty: ColumnType) -> bool {
    ty.is_text()
}

/// Appends the stored form of a non-NULL value (`row_mysql_store_col_in_innobase_format`).
/// Errors name the problem (the caller adds the column).
pub(super) fn put_field(
    ty: ColumnType,
    v: &Value,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    match (ty, v) {
        (ColumnType::Integer, Value::Integer(x)) => {
            out.extend_from_slice(&((*x as u32) ^ 0x8000_0000).to_be_bytes());
        }
        (ColumnType::TinyInt, Value::TinyInt(x)) => out.push((*x as u8) ^ 0x80),
        (ColumnType::SmallInt, Value::SmallInt(x)) => {
            out.extend_from_slice(&((*x as u16) ^ 0x8000).to_be_bytes());
        }
        (ColumnType::Date, Value::Date(days)) => {
            check_value(ty, v, true)?;
            let (y, m, d) = ymd_of_pg_days(i64::from(*days));
            // Field_newdate::store: day + month*32 + year*16*32, here big-endian with the
            // sign bit flipped (DATA_INT, signed).
            let packed = (d + m * 32 + y * 16 * 32) as u32 ^ 0x80_0000;
            out.extend_from_slice(&packed.to_be_bytes()[1..]);
        }
        (ColumnType::Timestamp6, Value::Timestamp(us)) => {
            check_value(ty, v, true)?;
            let secs = us.div_euclid(USECS_PER_SEC) + PG_EPOCH_UNIX_SECS;
            let usec = us.rem_euclid(USECS_PER_SEC);
            out.extend_from_slice(&(secs as u32).to_be_bytes());
            out.extend_from_slice(&(usec as u32).to_be_bytes()[1..]);
        }
        (ColumnType::DateTime6, Value::Timestamp(us)) => {
            check_value(ty, v, true)?;
            let days = us.div_euclid(86_400 * USECS_PER_SEC);
            let in_day = us.rem_euclid(86_400 * USECS_PER_SEC);
            let (y, m, d) = ymd_of_pg_days(days);
            let sod = in_day / USECS_PER_SEC;
            let frac = in_day % USECS_PER_SEC;
            let ymd = ((y * 13 + m) << 5) | d;
            let hms = ((sod / 3600) << 12) | ((sod / 60 % 60) << 6) | (sod % 60);
            let int_part = ((ymd << 17) | hms) as u64 + DATETIMEF_INT_OFS;
            out.extend_from_slice(&int_part.to_be_bytes()[3..]);
            out.extend_from_slice(&(frac as u32).to_be_bytes()[1..]);
        }
        (ColumnType::Decimal { precision, scale }, Value::Decimal(d)) => {
            d.check_fits(precision, scale)?;
            decimal2bin(d, precision, scale, out);
        }
        (ColumnType::Text, Value::Text(s)) => out.extend_from_slice(s.as_bytes()),
        (ColumnType::BigInt, Value::BigInt(x)) => {
            out.extend_from_slice(&((*x as u64) ^ (1 << 63)).to_be_bytes());
        }
        (ColumnType::Timestamp, Value::Timestamp(us)) => {
            if !timestamp_in_domain(*us) {
                // Gives the precise message.
                check_value(ty, v, true)?;
            }
            let unix = us / USECS_PER_SEC + PG_EPOCH_UNIX_SECS;
            out.extend_from_slice(&(unix as u32).to_be_bytes());
        }
        (ColumnType::Char(n), Value::Text(s)) => {
            let content = s.trim_end_matches(' ');
            out.extend_from_slice(content.as_bytes());
            let pad = usize::from(n).saturating_sub(content.len());
            out.resize(out.len() + pad, b' ');
        }
        (ColumnType::Varchar(_), Value::Text(s)) => out.extend_from_slice(s.as_bytes()),
        _ => return Err(format!("expected {ty}, got a {} value {v}", v.kind_name())),
    }
    Ok(())
}

/// Decodes the stored form of a non-NULL value; `bytes` has the field's full length.
pub(super) fn get_field(ty: ColumnType, bytes: &[u8]) -> std::result::Result<Value, String> {
    let fixed = |n: usize| {
        if bytes.len() == n {
            Ok(())
        } else {
            Err(format!(
                "{ty} field of {} bytes (expected {n})",
                bytes.len()
            ))
        }
    };
    match ty {
        ColumnType::TinyInt => {
            fixed(1)?;
            Ok(Value::TinyInt((bytes[0] ^ 0x80) as i8))
        }
        ColumnType::SmallInt => {
            fixed(2)?;
            Ok(Value::SmallInt(
                (u16::from_be_bytes([bytes[0], bytes[1]]) ^ 0x8000) as i16,
            ))
        }
        ColumnType::Date => {
            fixed(3)?;
            let packed = be_uint(bytes) as i64 ^ 0x80_0000;
            let (y, m, d) = (packed >> 9, (packed >> 5) & 15, packed & 31);
            let days = valid_date(y, m, d)
                .ok_or_else(|| format!("date field {packed:#08x} is not a valid date"))?;
            let v = Value::Date(days);
            check_value(ty, &v, true)?;
            Ok(v)
        }
        ColumnType::Timestamp6 => {
            fixed(7)?;
            let secs = be_uint(&bytes[..4]) as i64;
            let usec = be_uint(&bytes[4..]) as i64;
            if usec >= USECS_PER_SEC {
                return Err(format!("timestamp(6) field has {usec} microseconds"));
            }
            let v = Value::Timestamp((secs - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC + usec);
            check_value(ty, &v, true)?;
            Ok(v)
        }
        ColumnType::DateTime6 => {
            fixed(8)?;
            let int_part = be_uint(&bytes[..5])
                .checked_sub(DATETIMEF_INT_OFS)
                .ok_or("datetime(6) field is negative")? as i64;
            let frac = be_uint(&bytes[5..]) as i64;
            let (ymd, hms) = (int_part >> 17, int_part & 0x1_FFFF);
            let (ym, d) = (ymd >> 5, ymd & 31);
            let (y, m) = (ym / 13, ym % 13);
            let (h, mi, sec) = (hms >> 12, (hms >> 6) & 63, hms & 63);
            let days = valid_date(y, m, d)
                .filter(|_| h < 24 && mi < 60 && sec < 60 && frac < USECS_PER_SEC)
                .ok_or_else(|| format!("datetime(6) field {int_part:#x} is not a valid time"))?;
            let v = Value::Timestamp(
                i64::from(days) * 86_400 * USECS_PER_SEC
                    + (h * 3600 + mi * 60 + sec) * USECS_PER_SEC
                    + frac,
            );
            check_value(ty, &v, true)?;
            Ok(v)
        }
        ColumnType::Decimal { precision, scale } => {
            let d = bin2decimal(bytes, precision, scale)?;
            d.check_fits(precision, scale)?;
            Ok(Value::Decimal(d))
        }
        ColumnType::Text => {
            if bytes.len() > MAX_TEXT_BYTES {
                return Err(format!("text field of {} bytes", bytes.len()));
            }
            let s = std::str::from_utf8(bytes).map_err(|_| "text is not valid UTF-8")?;
            if bytes.contains(&0) {
                return Err(NUL_IN_TEXT.into());
            }
            Ok(Value::Text(s.to_owned()))
        }
        ColumnType::Integer => {
            fixed(4)?;
            let mut b = [0u8; 4];
            b.copy_from_slice(bytes);
            Ok(Value::Integer((u32::from_be_bytes(b) ^ 0x8000_0000) as i32))
        }
        ColumnType::BigInt => {
            fixed(8)?;
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            Ok(Value::BigInt((u64::from_be_bytes(b) ^ (1 << 63)) as i64))
        }
        ColumnType::Timestamp => {
            fixed(4)?;
            let mut b = [0u8; 4];
            b.copy_from_slice(bytes);
            let unix = i64::from(u32::from_be_bytes(b));
            let us = (unix - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC;
            if !timestamp_in_domain(us) {
                return Err(format!("timestamp of {unix} Unix seconds is out of range"));
            }
            Ok(Value::Timestamp(us))
        }
        ColumnType::Char(n) | ColumnType::Varchar(n) => {
            let max = ty.mariadb_max_bytes();
            if bytes.len() > max {
                return Err(format!(
                    "{ty} field of {} bytes (at most {max})",
                    bytes.len()
                ));
            }
            let s = std::str::from_utf8(bytes).map_err(|_| "text is not valid UTF-8")?;
            if bytes.contains(&0) {
                return Err(NUL_IN_TEXT.into());
            }
            let text = match ty {
                ColumnType::Char(_) => {
                    let n_bytes = usize::from(n);
                    if bytes.len() < n_bytes {
                        return Err(format!(
                            "{ty} field of {} bytes (at least {n_bytes})",
                            bytes.len()
                        ));
                    }
                    if bytes.len() > n_bytes && bytes.last() == Some(&b' ') {
                        return Err(format!(
                            "{ty} field of {} bytes keeps trailing blanks past {n_bytes} bytes",
                            bytes.len()
                        ));
                    }
                    s.trim_end_matches(' ')
                }
                _ => s,
            };
            let chars = text.chars().count();
            if chars > usize::from(n) {
                return Err(format!("text of {chars} characters in a {ty} field"));
            }
            Ok(Value::Text(match ty {
                ColumnType::Char(_) => pad_char(text, n),
                _ => text.to_owned(),
            }))
        }
    }
}

/// Days since 2000-01-01 of (year, month, day) if that is a date of the calendar.
fn valid_date(y: i64, m: i64, d: i64) -> Option<i32> {
    if !(1..=12).contains(&m) || d < 1 || !(0..=9999).contains(&y) {
        return None;
    }
    let days = pg_days_of_ymd(y, m, d);
    (ymd_of_pg_days(days) == (y, m, d)).then_some(days as i32)
}

/// The error for `problem` with the value of column `c`, naming the column and table.
fn invalid_column(def: &TableDef, c: usize, problem: &str) -> Error {
    Error::InvalidValue(format!(
        "column \"{}\" of table \"{}\": {problem}",
        def.columns[c].name, def.name
    ))
}

/// Checks a value of column `c` for a record: not NULL unless the column is nullable, and
/// of the column's type and domain.
fn check_column(def: &TableDef, c: usize, v: &Value) -> Result<()> {
    let col = &def.columns[c];
    if v.is_null() {
        return match col.nullable {
            true => Ok(()),
            false => Err(invalid_column(
                def,
                c,
                "null value violates not-null constraint",
            )),
        };
    }
    check_value(col.ty, v, true).map_err(|p| invalid_column(def, c, &p))
}

/// Encodes `fields` of `row` as a COMPACT record (header zero, no delete mark).
fn encode_fields(
    def: &TableDef,
    fields: &[Field],
    row: &Row,
    trx_id: u64,
    roll_ptr: u64,
) -> Result<Vec<u8>> {
    def.check_width(row)?;
    let n_nullable = fields
        .iter()
        .filter(|f| matches!(f, Field::Col(c) if def.columns[*c].nullable))
        .count();
    let mut nulls = vec![0u8; n_nullable.div_ceil(8)];
    let mut lens = Vec::new();
    let mut data = Vec::with_capacity(fields.len() * 8);
    let mut null_bit = 0;
    for &f in fields {
        let c = match f {
            Field::TrxId => {
                data.extend_from_slice(&trx_id.to_be_bytes()[8 - DB_TRX_ID_BYTES..]);
                continue;
            }
            Field::RollPtr => {
                data.extend_from_slice(&roll_ptr.to_be_bytes()[8 - DB_ROLL_PTR_BYTES..]);
                continue;
            }
            Field::RowId => {
                // Only sizes are computed with it (the stored record leaves it out).
                data.extend_from_slice(&[0; DB_ROW_ID_BYTES]);
                continue;
            }
            Field::Col(c) => c,
        };
        let col = &def.columns[c];
        let v = &row[c];
        if col.nullable {
            let bit = null_bit;
            null_bit += 1;
            if v.is_null() {
                nulls[bit / 8] |= 1 << (bit % 8);
                continue;
            }
        }
        check_column(def, c, v)?;
        let start = data.len();
        put_field(col.ty, v, &mut data).map_err(|p| invalid_column(def, c, &p))?;
        if is_var_len(col.ty) {
            let len = data.len() - start;
            if len < 128 || col.ty.mariadb_max_bytes() <= 255 {
                lens.push(len as u8);
            } else if len <= MAX_INLINE_FIELD_BYTES {
                lens.push(0x80 | (len >> 8) as u8);
                lens.push(len as u8);
            } else {
                return Err(Error::TooLarge {
                    what: "InnoDB COMPACT field stored inline (off-page columns are not modelled)",
                    bytes: len,
                    max_bytes: MAX_INLINE_FIELD_BYTES,
                });
            }
        }
    }
    let mut rec =
        Vec::with_capacity(REC_STORED_HEADER_BYTES + nulls.len() + lens.len() + data.len());
    rec.extend_from_slice(&[0u8; REC_STORED_HEADER_BYTES]);
    rec.extend_from_slice(&nulls);
    rec.extend_from_slice(&lens);
    rec.extend_from_slice(&data);
    Ok(rec)
}

fn corrupt(def: &TableDef, problem: impl std::fmt::Display) -> Error {
    Error::corrupted(format!(
        "InnoDB COMPACT record of table \"{}\": {problem}",
        def.name
    ))
}

/// Where each field lies in `rec` (`None` = NULL): InnoDB's `rec_init_offsets_comp_ordinary`.
/// Checks the header's info bits, the NULL bitmap's unused bits, that NOT NULL fields are not
/// NULL, and that the fields end exactly at the end of `rec`.
fn rec_offsets(def: &TableDef, fields: &[Field], rec: &[u8]) -> Result<Vec<Option<Range<usize>>>> {
    let Some(&info) = rec.first() else {
        return Err(corrupt(def, "empty record"));
    };
    if info & INFO_BITS_OTHER != 0 {
        return Err(corrupt(
            def,
            format_args!(
                "info bits {:#04x} are not valid in a leaf record",
                info & 0xF0
            ),
        ));
    }
    let n_nullable = fields
        .iter()
        .filter(|f| matches!(f, Field::Col(c) if def.columns[*c].nullable))
        .count();
    let nulls_end = REC_STORED_HEADER_BYTES + n_nullable.div_ceil(8);
    let nulls = rec
        .get(REC_STORED_HEADER_BYTES..nulls_end)
        .ok_or_else(|| corrupt(def, "record ends inside the NULL bitmap"))?;
    if n_nullable % 8 != 0 && nulls[nulls.len() - 1] >> (n_nullable % 8) != 0 {
        return Err(corrupt(
            def,
            "NULL bitmap has bits set past the last nullable field",
        ));
    }
    // Pass 1: NULL flags and lengths of variable-length fields.
    let mut pos = nulls_end;
    let mut null_bit = 0;
    let mut lens: Vec<Option<usize>> = Vec::with_capacity(fields.len());
    for &f in fields {
        let (ty, name) = match f {
            Field::TrxId => (None, "DB_TRX_ID"),
            Field::RollPtr => (None, "DB_ROLL_PTR"),
            Field::RowId => (None, "DB_ROW_ID"),
            Field::Col(c) => (Some(def.columns[c].ty), def.columns[c].name.as_str()),
        };
        let Some(ty) = ty else {
            lens.push(Some(match f {
                Field::TrxId => DB_TRX_ID_BYTES,
                Field::RowId => DB_ROW_ID_BYTES,
                _ => DB_ROLL_PTR_BYTES,
            }));
            continue;
        };
        if let Field::Col(c) = f {
            if def.columns[c].nullable {
                let bit = null_bit;
                null_bit += 1;
                if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                    lens.push(None);
                    continue;
                }
            }
        }
        let len = match ty {
            ty if !is_var_len(ty) => ty.mariadb_max_bytes(),
            _ => {
                let b = *rec.get(pos).ok_or_else(|| {
                    corrupt(
                        def,
                        format_args!("record ends inside the length of column \"{name}\""),
                    )
                })?;
                pos += 1;
                if ty.mariadb_max_bytes() > 255 && b & 0x80 != 0 {
                    if b & 0x40 != 0 {
                        return Err(corrupt(
                            def,
                            format_args!(
                                "column \"{name}\" is stored off page (external flag); \
                                 off-page columns are not modelled"
                            ),
                        ));
                    }
                    let lo = *rec.get(pos).ok_or_else(|| {
                        corrupt(
                            def,
                            format_args!("record ends inside the length of column \"{name}\""),
                        )
                    })?;
                    pos += 1;
                    (usize::from(b & 0x3F) << 8) | usize::from(lo)
                } else {
                    usize::from(b)
                }
            }
        };
        lens.push(Some(len));
    }
    // Pass 2: field ranges from the origin.
    let mut offsets = Vec::with_capacity(fields.len());
    for len in lens {
        match len {
            None => offsets.push(None),
            Some(len) => {
                let end = pos + len;
                if end > rec.len() {
                    return Err(corrupt(
                        def,
                        format_args!(
                            "fields run to byte {end}, past the end of the {}-byte record",
                            rec.len()
                        ),
                    ));
                }
                offsets.push(Some(pos..end));
                pos = end;
            }
        }
    }
    if pos != rec.len() {
        return Err(corrupt(
            def,
            format_args!("{} trailing bytes after the last field", rec.len() - pos),
        ));
    }
    Ok(offsets)
}

fn be_uint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// A decoded clustered-index record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactRecord {
    /// The row, CHAR(n) values blank-padded to n characters.
    pub row: Row,
    /// `DB_TRX_ID`: the transaction that last changed the row.
    pub trx_id: u64,
    /// `DB_ROLL_PTR`: the undo record holding the previous version.
    pub roll_ptr: u64,
    /// Whether the delete mark (`REC_INFO_DELETED_FLAG`) is set.
    pub delete_marked: bool,
}

/// Encodes a row as an InnoDB COMPACT clustered-index record carrying `trx_id` (48 bits)
/// and `roll_ptr` (56 bits), delete mark clear, without its primary key fields (the
/// entry's key, [`super::key_of`] over `def.primary_key`); see the module doc for the
/// layout. Set the mark with [`set_compact_delete_mark`].
///
/// # Errors
/// [`Error::InvalidValue`] naming the column if the row fails [`TableDef::check_row`] or
/// `trx_id`/`roll_ptr` do not fit their fields; [`Error::TooLarge`] for a field longer than
/// 16383 bytes (InnoDB would store it off page).
pub fn encode_compact(def: &TableDef, row: &Row, trx_id: u64, roll_ptr: u64) -> Result<Vec<u8>> {
    if trx_id > MAX_TRX_ID {
        return Err(Error::InvalidValue(format!(
            "DB_TRX_ID {trx_id} does not fit in 6 bytes"
        )));
    }
    if roll_ptr > MAX_ROLL_PTR {
        return Err(Error::InvalidValue(format!(
            "DB_ROLL_PTR {roll_ptr:#x} does not fit in 7 bytes"
        )));
    }
    // The primary key is the entry's key, not stored here: checked as a stored field is.
    def.check_width(row)?;
    for &c in &def.primary_key {
        check_column(def, c, &row[c])?;
    }
    encode_fields(def, &stored_fields(def), row, trx_id, roll_ptr)
}

/// Decodes a clustered-index record made by [`encode_compact`], with `key`, the entry's
/// key that holds its primary key fields (or, for a table without a primary key, its
/// 6-byte `DB_ROW_ID`, which is no column of the row): the row and its delete mark,
/// `DB_TRX_ID` and `DB_ROLL_PTR`.
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the table (and column) for any byte string that is not such a
/// record of a row passing [`TableDef::check_row`]: truncation, stray info or NULL bits, a
/// NULL in a NOT NULL column, an off-page flag, field lengths that disagree with the record
/// length or the type, invalid UTF-8 or a NUL character, non-canonical CHAR padding, an
/// out-of-range timestamp; or a `key` that is not a primary key of the table. Never panics.
pub fn decode_compact_record(def: &TableDef, key: &[u8], rec: &[u8]) -> Result<CompactRecord> {
    decode_compact_record_projected(def, key, rec, &Projection::all())
}

/// Decodes only the columns `proj` needs from a clustered-index record (the others are
/// [`Value::Null`]; the system columns and the delete mark always), as InnoDB copies only
/// the prebuilt template's fields into the server's row (MariaDB 10.11 row0sel.cc
/// `row_sel_store_mysql_rec` over `prebuilt->mysql_template`, built from the statement's
/// `read_set` by ha_innodb.cc `ha_innobase::build_template`). The field offsets are
/// computed for the whole record, as `rec_get_offsets` does. With [`Projection::all`]
/// this is [`decode_compact_record`].
///
/// # Errors
/// As [`decode_compact_record`], for the header, the offsets and the fields decoded.
pub fn decode_compact_record_projected(
    def: &TableDef,
    key: &[u8],
    rec: &[u8],
    proj: &Projection,
) -> Result<CompactRecord> {
    let fields = stored_fields(def);
    let offsets = rec_offsets(def, &fields, rec)?;
    let mut row = vec![Value::Null; def.columns.len()];
    if !def.has_primary_key() && key.len() != DB_ROW_ID_BYTES {
        return Err(corrupt(
            def,
            format_args!(
                "key of {} bytes; DB_ROW_ID has {DB_ROW_ID_BYTES}",
                key.len()
            ),
        ));
    }
    let pk_values = match def.has_primary_key() {
        false => Vec::new(),
        true if !def.primary_key.iter().any(|&c| proj.needs(c)) => Vec::new(),
        true => def
            .key_columns(&def.primary_key)
            .and_then(|types| super::decode_key(&types, key))
            .map_err(|e| corrupt(def, format_args!("primary key of the record: {e}")))?,
    };
    for (&c, v) in def.primary_key.iter().zip(pk_values) {
        if proj.needs(c) {
            row[c] = v;
        }
    }
    let (mut trx_id, mut roll_ptr) = (0, 0);
    for (f, range) in fields.iter().zip(offsets) {
        match (*f, range) {
            (Field::TrxId, Some(r)) => trx_id = be_uint(&rec[r]),
            (Field::RollPtr, Some(r)) => roll_ptr = be_uint(&rec[r]),
            (Field::Col(c), None) => {
                if !def.columns[c].nullable {
                    return Err(corrupt(
                        def,
                        format_args!("NULL in NOT NULL column \"{}\"", def.columns[c].name),
                    ));
                }
            }
            (Field::Col(c), Some(_)) if !proj.needs(c) => {}
            (Field::Col(c), Some(r)) => {
                let col = &def.columns[c];
                row[c] = get_field(col.ty, &rec[r])
                    .map_err(|p| corrupt(def, format_args!("column \"{}\": {p}", col.name)))?;
            }
            // Not a stored field (the entry's key holds it).
            (Field::RowId, Some(_)) => {}
            (_, None) => return Err(corrupt(def, "system column is NULL")),
        }
    }
    Ok(CompactRecord {
        row,
        trx_id,
        roll_ptr,
        delete_marked: rec[0] & COMPACT_DELETED_FLAG != 0,
    })
}

/// Decodes a clustered-index record with its entry's `key` into `(row, DB_TRX_ID,
/// DB_ROLL_PTR)`; the delete mark is read with [`compact_delete_mark`] (or use
/// [`decode_compact_record`]).
///
/// # Errors
/// As [`decode_compact_record`].
pub fn decode_compact(def: &TableDef, key: &[u8], rec: &[u8]) -> Result<(Row, u64, u64)> {
    let r = decode_compact_record(def, key, rec)?;
    Ok((r.row, r.trx_id, r.roll_ptr))
}

/// Whether a stored COMPACT record is delete-marked (byte 0, the info bits,
/// `REC_INFO_DELETED_FLAG`).
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) if `rec` is empty (has no info byte).
pub fn compact_delete_mark(rec: &[u8]) -> Result<bool> {
    match rec.first() {
        Some(&b) => Ok(b & COMPACT_DELETED_FLAG != 0),
        None => Err(Error::corrupted(
            "InnoDB COMPACT record of 0 bytes has no header",
        )),
    }
}

/// Sets or clears the delete mark of a COMPACT record in place, as InnoDB's
/// `btr_rec_set_deleted` does (the record's size does not change).
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) if `rec` is empty (has no info byte).
pub fn set_compact_delete_mark(rec: &mut [u8], marked: bool) -> Result<()> {
    compact_delete_mark(rec)?;
    if marked {
        rec[0] |= COMPACT_DELETED_FLAG;
    } else {
        rec[0] &= !COMPACT_DELETED_FLAG;
    }
    Ok(())
}

/// Range of DB_TRX_ID followed by DB_ROLL_PTR in a clustered record.
fn system_columns_range(def: &TableDef, rec: &[u8]) -> Result<Range<usize>> {
    let fields = stored_fields(def);
    let offsets = rec_offsets(def, &fields, rec)?;
    let trx = offsets[0].clone();
    match trx {
        Some(r) => Ok(r.start..r.start + DB_TRX_ID_BYTES + DB_ROLL_PTR_BYTES),
        None => Err(corrupt(def, "system column is NULL")),
    }
}

/// `(DB_TRX_ID, DB_ROLL_PTR)` of a clustered record, without decoding the row (what a
/// consistent read checks first, `row_sel_clust_sees` / `lock_clust_rec_cons_read_sees`).
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) if the record's structure is damaged.
pub fn compact_system_columns(def: &TableDef, rec: &[u8]) -> Result<(u64, u64)> {
    let r = system_columns_range(def, rec)?;
    let sys = &rec[r];
    Ok((
        be_uint(&sys[..DB_TRX_ID_BYTES]),
        be_uint(&sys[DB_TRX_ID_BYTES..]),
    ))
}

/// Overwrites DB_TRX_ID and DB_ROLL_PTR of a clustered record in place
/// (`row_upd_rec_sys_fields`).
///
/// # Errors
/// [`Error::InvalidValue`] if the values do not fit 6 and 7 bytes; [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) if
/// the record's structure is damaged.
pub fn set_compact_system_columns(
    def: &TableDef,
    rec: &mut [u8],
    trx_id: u64,
    roll_ptr: u64,
) -> Result<()> {
    if trx_id > MAX_TRX_ID || roll_ptr > MAX_ROLL_PTR {
        return Err(Error::InvalidValue(format!(
            "DB_TRX_ID {trx_id} / DB_ROLL_PTR {roll_ptr:#x} do not fit in 6 / 7 bytes"
        )));
    }
    let r = system_columns_range(def, rec)?;
    let sys = &mut rec[r];
    sys[..DB_TRX_ID_BYTES].copy_from_slice(&trx_id.to_be_bytes()[8 - DB_TRX_ID_BYTES..]);
    sys[DB_TRX_ID_BYTES..].copy_from_slice(&roll_ptr.to_be_bytes()[8 - DB_ROLL_PTR_BYTES..]);
    Ok(())
}

/// Size in bytes of the whole clustered-index record of `row` in InnoDB (5-byte header,
/// NULL bitmap, lengths, primary key fields or `DB_ROW_ID`, `DB_TRX_ID`, `DB_ROLL_PTR`,
/// other fields:
/// `rec_get_converted_size_comp`), which decides whether InnoDB would move fields off page
/// ([`INNODB_REC_NEEDS_EXT_BYTES`]).
///
/// # Errors
/// As [`encode_compact`].
pub fn compact_clustered_record_bytes(def: &TableDef, row: &Row) -> Result<usize> {
    let stored = encode_fields(def, &clustered_fields(def), row, 0, 0)?.len();
    Ok(stored - REC_STORED_HEADER_BYTES + REC_N_NEW_EXTRA_BYTES)
}

/// Size in bytes of a COMPACT index record over `columns` of `row` in InnoDB (the whole
/// 5-byte header, NULL bitmap of the nullable ones, lengths, fields), as InnoDB's
/// `rec_get_converted_size_comp` gives it.
/// For a secondary index pass [`TableDef::secondary_record_columns`]; e.g. sysbench's
/// `k_1 (k)` with primary key `id`: 5 + 4 + 4 = 13 bytes. On a table without a primary key
/// add [`DB_ROW_ID_BYTES`], the row id every secondary record ends with. Excludes the page
/// directory (about 2 bytes per 4–8 records).
///
/// # Errors
/// [`Error::Catalog`] for a column position not in the table; [`Error::InvalidValue`] and
/// [`Error::TooLarge`] as [`encode_compact`].
pub fn compact_index_record_bytes(def: &TableDef, columns: &[usize], row: &Row) -> Result<usize> {
    def.column_types(columns)?;
    let fields: Vec<Field> = columns.iter().map(|&c| Field::Col(c)).collect();
    let stored = encode_fields(def, &fields, row, 0, 0)?.len();
    Ok(stored - REC_STORED_HEADER_BYTES + REC_N_NEW_EXTRA_BYTES)
}
