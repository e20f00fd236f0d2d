//! Order-preserving key encoding for B+tree keys: comparing two encodings as unsigned bytes
//! (`memcmp`, then length) gives the SQL order of the values they encode.
//!
//! The format is mvcclab's own (neither engine stores keys this way: PostgreSQL compares
//! index tuples with the type's comparison function, InnoDB with `cmp_dtuple_rec`); the
//! order is PostgreSQL's for `COLLATE "C"`, ascending, NULLS LAST. A key is the
//! concatenation of its columns ([`KeyColumn`]: a type, and whether the column may hold
//! NULL):
//!
//! ```text
//! | bytes     | field                                                                  |
//! |-----------|------------------------------------------------------------------------|
//! | 0 or 1    | tag, nullable columns only: 0x01 = value follows, 0x02 = NULL (sorts   |
//! |           | after every value; nothing follows)                                    |
//! | 1 / 2     | tinyint / smallint: big-endian, sign bit flipped                       |
//! | 4         | integer, date (days since 2000-01-01): big-endian, sign bit flipped    |
//! | 8         | bigint, timestamp, timestamp(6), datetime(6) (µs since 2000-01-01):    |
//! |           | big-endian, sign bit flipped                                           |
//! | bin size  | decimal(p,s): MariaDB's `decimal2bin` form, memcmp-ordered for a given |
//! |           | (p,s) (strings/decimal.c; see `decimal`)                               |
//! | 2+        | char(n): the value without trailing blanks, escaped, then terminated   |
//! | 2+        | varchar(n), text: the value's bytes, escaped, then terminated          |
//! ```
//! A decimal key value must fit its column's (p,s) ([`encode_key`] refuses one that does
//! not); it is encoded at the column's scale, so `1.5` and `1.50` are the same key.
//! A NOT NULL column has no tag, as neither engine spends a byte on it: an InnoDB record
//! holds a NULL bitmap only for its nullable fields (rem0rec.cc
//! `rec_get_converted_size_comp_prefix_low`), a PostgreSQL index tuple one only when a key
//! is NULL (indextuple.c `index_form_tuple`, `INDEX_NULL_MASK`). The B-tree pages thus hold
//! an `INTEGER NOT NULL` key in its 4 bytes, as the real engines do. Every key of one index
//! has the same columns, so the tags (or their absence) line up and byte order stays SQL
//! order.
//!
//! Text escaping: every 0x00 byte becomes `0x00 0xFF`; the terminator is `0x00 0x01`. A
//! prefix thus sorts before its extensions, and UTF-8 byte order is code-point order
//! (PostgreSQL `varstr_cmp` under the C collation: `memcmp`, then length; MariaDB
//! `utf8mb4_bin`).
//!
//! CHAR values drop their trailing blanks before encoding, so `'ab'` and `'ab  '` are the
//! same key, and compare as PostgreSQL's `bpcharcmp` does (trailing blanks stripped, then
//! as text). [`decode_key`] gives them back blank-padded to n characters.
//!
//! Note for unique indexes: two keys holding a NULL encode equal when their other columns
//! are equal, yet SQL treats them as distinct (neither engine reports a duplicate); the
//! unique check skips keys with a NULL (`HeapTable::insert_index_entries` as nbtinsert.c
//! `_bt_doinsert`, `ClusteredTable::unique_conflict` as row0ins.cc
//! `row_ins_scan_sec_index_for_duplicate`).

use super::decimal::{bin2decimal, decimal2bin, decimal_bin_size};
use super::value::{check_value, pad_char};
use super::{ColumnType, Value};
use crate::error::{Error, Result};

/// One column of a key: its type, and whether it may hold NULL (only such a column carries
/// a tag byte in the encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyColumn {
    /// The column's type.
    pub ty: ColumnType,
    /// Whether the column may hold NULL.
    pub nullable: bool,
}

impl KeyColumn {
    /// A NOT NULL column of type `ty` (no tag byte).
    pub fn not_null(ty: ColumnType) -> KeyColumn {
        KeyColumn {
            ty,
            nullable: false,
        }
    }

    /// A nullable column of type `ty` (a tag byte before each value).
    pub fn nullable(ty: ColumnType) -> KeyColumn {
        KeyColumn { ty, nullable: true }
    }
}

/// Tag byte of a non-NULL key column.
pub const KEY_NOT_NULL: u8 = 0x01;
/// Tag byte of a NULL key column (greater than [`KEY_NOT_NULL`]: NULLs sort last).
pub const KEY_NULL: u8 = 0x02;

fn put_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        if b == 0 {
            out.extend_from_slice(&[0x00, 0xFF]);
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

pub(super) fn encode_pairs<'a>(
    pairs: impl Iterator<Item = (KeyColumn, &'a Value)>,
    out: &mut Vec<u8>,
) -> Result<()> {
    for (k, (col, v)) in pairs.enumerate() {
        let ty = col.ty;
        if v.is_null() {
            if !col.nullable {
                return Err(Error::InvalidValue(format!(
                    "key column {} is NOT NULL and was given NULL",
                    k + 1
                )));
            }
            out.push(KEY_NULL);
            continue;
        }
        check_value(ty, v, false)
            .map_err(|p| Error::InvalidValue(format!("key column {}: {p}", k + 1)))?;
        if col.nullable {
            out.push(KEY_NOT_NULL);
        }
        match v {
            Value::Integer(x) | Value::Date(x) => {
                out.extend_from_slice(&((*x as u32) ^ 0x8000_0000).to_be_bytes())
            }
            Value::TinyInt(x) => out.push((*x as u8) ^ 0x80),
            Value::SmallInt(x) => out.extend_from_slice(&((*x as u16) ^ 0x8000).to_be_bytes()),
            Value::Decimal(d) => {
                if let ColumnType::Decimal { precision, scale } = ty {
                    decimal2bin(d, precision, scale, out);
                }
            }
            Value::BigInt(x) | Value::Timestamp(x) => {
                out.extend_from_slice(&((*x as u64) ^ (1 << 63)).to_be_bytes())
            }
            Value::Text(s) => {
                let s = match ty {
                    ColumnType::Char(_) => s.trim_end_matches(' '),
                    _ => s.as_str(),
                };
                put_escaped(s.as_bytes(), out);
            }
            Value::Null => {}
        }
    }
    Ok(())
}

/// Appends the key encoding of `values` (one per entry of `types`) to `out`.
///
/// # Errors
/// [`Error::InvalidValue`] naming the key column (1-based) if the counts differ, a value is
/// not of its type's kind, a text is longer than the type allows, or a NOT NULL column is
/// given NULL; `out` is then left as it was.
pub fn encode_key(types: &[KeyColumn], values: &[Value], out: &mut Vec<u8>) -> Result<()> {
    if types.len() != values.len() {
        return Err(Error::InvalidValue(format!(
            "key of {} columns given {} values",
            types.len(),
            values.len()
        )));
    }
    let start = out.len();
    let r = encode_pairs(types.iter().copied().zip(values), out);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

fn corrupt(at: usize, problem: impl std::fmt::Display) -> Error {
    Error::corrupted(format!("index key at byte {at}: {problem}"))
}

fn take<const N: usize>(bytes: &[u8], pos: &mut usize) -> Result<[u8; N]> {
    let s = bytes
        .get(*pos..*pos + N)
        .ok_or_else(|| corrupt(*pos, format_args!("key ends inside a {N}-byte value")))?;
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    *pos += N;
    Ok(a)
}

/// Decodes the key columns of `types` from the start of `bytes`, returning the values and
/// the number of bytes they took (the rest may be a suffix the caller appended).
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a bad tag, a truncated value, a bad escape, invalid UTF-8, a text
/// longer than its type, or a CHAR encoding that keeps trailing blanks. Never panics.
pub fn decode_key_prefix(types: &[KeyColumn], bytes: &[u8]) -> Result<(Vec<Value>, usize)> {
    let mut pos = 0;
    let mut values = Vec::with_capacity(types.len());
    for &col in types {
        let ty = col.ty;
        if pos >= bytes.len() {
            return Err(corrupt(pos, "key ends before a column"));
        }
        if col.nullable {
            let tag_at = pos;
            let tag = bytes[pos];
            pos += 1;
            match tag {
                KEY_NULL => {
                    values.push(Value::Null);
                    continue;
                }
                KEY_NOT_NULL => {}
                t => return Err(corrupt(tag_at, format_args!("bad tag {t:#04x}"))),
            }
        }
        let v = match ty {
            ColumnType::Integer => Value::Integer(
                (u32::from_be_bytes(take::<4>(bytes, &mut pos)?) ^ 0x8000_0000) as i32,
            ),
            ColumnType::BigInt => {
                Value::BigInt((u64::from_be_bytes(take::<8>(bytes, &mut pos)?) ^ (1 << 63)) as i64)
            }
            ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6 => {
                Value::Timestamp(
                    (u64::from_be_bytes(take::<8>(bytes, &mut pos)?) ^ (1 << 63)) as i64,
                )
            }
            ColumnType::TinyInt => Value::TinyInt((take::<1>(bytes, &mut pos)?[0] ^ 0x80) as i8),
            ColumnType::SmallInt => {
                Value::SmallInt((u16::from_be_bytes(take::<2>(bytes, &mut pos)?) ^ 0x8000) as i16)
            }
            ColumnType::Date => {
                Value::Date((u32::from_be_bytes(take::<4>(bytes, &mut pos)?) ^ 0x8000_0000) as i32)
            }
            ColumnType::Decimal { precision, scale } => {
                let n = decimal_bin_size(precision, scale);
                let b = bytes.get(pos..pos + n).ok_or_else(|| {
                    corrupt(pos, format_args!("key ends inside a {n}-byte value"))
                })?;
                let d = bin2decimal(b, precision, scale).map_err(|p| corrupt(pos, p))?;
                pos += n;
                Value::Decimal(d)
            }
            ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => {
                let start = pos;
                let mut raw = Vec::new();
                loop {
                    let b = *bytes
                        .get(pos)
                        .ok_or_else(|| corrupt(start, "text has no terminator"))?;
                    if b != 0 {
                        raw.push(b);
                        pos += 1;
                        continue;
                    }
                    match bytes.get(pos + 1) {
                        Some(0xFF) => raw.push(0),
                        Some(0x01) => {
                            pos += 2;
                            break;
                        }
                        _ => return Err(corrupt(pos, "bad escape in text")),
                    }
                    pos += 2;
                }
                let s = String::from_utf8(raw)
                    .map_err(|_| corrupt(start, "text is not valid UTF-8"))?;
                if matches!(ty, ColumnType::Char(_)) && s.ends_with(' ') {
                    return Err(corrupt(start, "char key keeps trailing blanks"));
                }
                if let Some(n) = ty.max_chars() {
                    let chars = s.chars().count();
                    if chars > usize::from(n) {
                        return Err(corrupt(
                            start,
                            format_args!("text of {chars} characters for {ty}"),
                        ));
                    }
                }
                if let Err(p) = check_value(ty, &Value::Text(s.clone()), false) {
                    return Err(corrupt(start, p));
                }
                Value::Text(match ty {
                    ColumnType::Char(n) => pad_char(&s, n),
                    _ => s,
                })
            }
        };
        values.push(v);
    }
    Ok((values, pos))
}

/// Decodes a whole key of `types` (CHAR values blank-padded to n characters).
///
/// # Errors
/// As [`decode_key_prefix`], and [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) if bytes remain after the last column.
pub fn decode_key(types: &[KeyColumn], bytes: &[u8]) -> Result<Vec<Value>> {
    let (values, used) = decode_key_prefix(types, bytes)?;
    if used != bytes.len() {
        return Err(corrupt(
            used,
            format_args!(
                "{} trailing bytes after the last column",
                bytes.len() - used
            ),
        ));
    }
    Ok(values)
}
