//! The changed-columns part of an InnoDB update undo record: the values some columns had,
//! enough to rebuild the previous version of a row from the current one.
//!
//! Follows MariaDB 10.11 storage/innobase/trx/trx0rec.cc `trx_undo_page_report_modify`
//! ("Save to the undo log the old values of the columns to be updated") and its reader
//! `trx_undo_update_rec_get_update`; integers are `mach_write_compressed` /
//! `mach_read_next_compressed` (include/mach0data.inl). The undo record's own header
//! (type, undo number, table id, info bits, DB_TRX_ID, DB_ROLL_PTR, primary key) belongs to
//! the undo log; this is the part after it:
//!
//! ```text
//! | bytes   | field                                                                    |
//! |---------|--------------------------------------------------------------------------|
//! | 1–5     | n_fields: number of entries (compressed)                                 |
//! | per entry:                                                                         |
//! | 1–5     | field_no: the column's field position in the clustered index             |
//! |         |   (primary key columns, DB_TRX_ID, DB_ROLL_PTR, other columns) (compressed)|
//! | 1–5     | len: the field's stored length, or UNIV_SQL_NULL (0xFFFFFFFF) for NULL   |
//! |         |   (compressed; NULL takes 5 bytes)                                       |
//! | len     | the field in its COMPACT stored form (see compact_format)                |
//! ```
//! Compressed integers (`mach_write_compressed`), big-endian:
//! `< 0x80`: 1 byte; `< 0x4000`: 2 bytes, `0x8000 | n`; `< 0x200000`: 3 bytes,
//! `0xC00000 | n`; `< 0x10000000`: 4 bytes, `0xE0000000 | n`; otherwise `0xF0` + 4 bytes.
//!
//! Off-page (externally stored) columns, whose undo entry carries a prefix and a BLOB
//! pointer, are not modelled.

use super::compact_format::{clustered_fields, get_field, put_field, Field};
use super::{Row, TableDef, Value};
use crate::error::{Error, Result};

/// The length InnoDB writes for an SQL NULL field (`UNIV_SQL_NULL`).
pub const UNIV_SQL_NULL: u32 = 0xFFFF_FFFF;

/// `mach_write_compressed`.
fn write_compressed(out: &mut Vec<u8>, n: u32) {
    if n < 0x80 {
        out.push(n as u8);
    } else if n < 0x4000 {
        out.extend_from_slice(&((n | 0x8000) as u16).to_be_bytes());
    } else if n < 0x20_0000 {
        out.extend_from_slice(&(n | 0xC0_0000).to_be_bytes()[1..]);
    } else if n < 0x1000_0000 {
        out.extend_from_slice(&(n | 0xE000_0000).to_be_bytes());
    } else {
        out.push(0xF0);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// `mach_read_next_compressed`; `None` if the bytes end early or the first byte is not a
/// valid prefix.
fn read_compressed(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let b = *bytes.get(*pos)?;
    let (len, mask): (usize, u32) = match b {
        0x00..=0x7F => (1, 0x7F),
        0x80..=0xBF => (2, 0x3FFF),
        0xC0..=0xDF => (3, 0x1F_FFFF),
        0xE0..=0xEF => (4, 0x0FFF_FFFF),
        0xF0 => (5, u32::MAX),
        _ => return None,
    };
    let s = bytes.get(*pos..*pos + len)?;
    let v = if len == 5 {
        u32::from_be_bytes([s[1], s[2], s[3], s[4]])
    } else {
        s.iter().fold(0u32, |acc, &x| (acc << 8) | u32::from(x)) & mask
    };
    *pos += len;
    Some(v)
}

/// Field position of each column in the clustered index.
fn field_positions(def: &TableDef) -> Vec<usize> {
    let mut pos = vec![0; def.columns.len()];
    for (p, f) in clustered_fields(def).into_iter().enumerate() {
        if let Field::Col(c) = f {
            pos[c] = p;
        }
    }
    pos
}

/// Encodes the values of `columns` (positions in the table) taken from `row` in the format
/// of the module doc, in the order given. For an undo record pass the version *before* the
/// update and the columns the update changes; [`apply_delta`] on the newer version then
/// gives the older one back.
///
/// # Panics
/// If the row's length differs from the table's column count, a column position is out of
/// range, or a value fails [`TableDef::check_row`] (call it first).
pub fn encode_delta(def: &TableDef, row: &Row, columns: &[usize]) -> Vec<u8> {
    assert_eq!(
        row.len(),
        def.columns.len(),
        "encode_delta: table \"{}\" has {} columns, the row has {} values",
        def.name,
        def.columns.len(),
        row.len()
    );
    let pos = field_positions(def);
    let mut out = Vec::with_capacity(1 + columns.len() * 8);
    write_compressed(&mut out, columns.len() as u32);
    let mut field = Vec::new();
    for &c in columns {
        let col = &def.columns[c];
        write_compressed(&mut out, pos[c] as u32);
        let v = &row[c];
        if v.is_null() {
            write_compressed(&mut out, UNIV_SQL_NULL);
            continue;
        }
        field.clear();
        if let Err(problem) = put_field(col.ty, v, &mut field) {
            panic!(
                "encode_delta: column \"{}\" of table \"{}\": {problem}; \
                 call TableDef::check_row first",
                col.name, def.name
            );
        }
        write_compressed(&mut out, field.len() as u32);
        out.extend_from_slice(&field);
    }
    out
}

/// Applies a delta made by [`encode_delta`] to `row`: each listed column takes the value the
/// delta holds. Returns the columns changed, in the delta's order. `row` is changed only if
/// the whole delta is valid.
///
/// # Errors
/// [`Error::InvalidValue`] if `row` does not have one value per column;
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the table for any byte string that is not a delta of values
/// passing [`TableDef::check_row`] (bad compressed integer, field position of no column or of
/// a system column, NULL in a NOT NULL column, bad field bytes, trailing bytes). Never panics.
pub fn apply_delta(def: &TableDef, row: &mut Row, delta: &[u8]) -> Result<Vec<usize>> {
    def.check_width(row)?;
    let corrupt = |at: usize, problem: String| {
        Error::corrupted(format!(
            "undo delta of table \"{}\" at byte {at}: {problem}",
            def.name
        ))
    };
    let fields = clustered_fields(def);
    let mut p = 0;
    let n = read_compressed(delta, &mut p).ok_or_else(|| corrupt(0, "bad field count".into()))?;
    let mut changes: Vec<(usize, Value)> = Vec::new();
    for _ in 0..n {
        let at = p;
        let field_no =
            read_compressed(delta, &mut p).ok_or_else(|| corrupt(at, "bad field number".into()))?;
        let c = match fields.get(field_no as usize) {
            Some(Field::Col(c)) => *c,
            Some(_) => return Err(corrupt(at, format!("field {field_no} is a system column"))),
            None => {
                return Err(corrupt(
                    at,
                    format!("field {field_no} of {} fields", fields.len()),
                ))
            }
        };
        let col = &def.columns[c];
        let at = p;
        let len = read_compressed(delta, &mut p)
            .ok_or_else(|| corrupt(at, format!("bad length of column \"{}\"", col.name)))?;
        if len == UNIV_SQL_NULL {
            if !col.nullable {
                return Err(corrupt(
                    at,
                    format!("NULL in NOT NULL column \"{}\"", col.name),
                ));
            }
            changes.push((c, Value::Null));
            continue;
        }
        let bytes = p
            .checked_add(len as usize)
            .and_then(|end| delta.get(p..end))
            .ok_or_else(|| {
                corrupt(
                    at,
                    format!(
                        "column \"{}\" of {len} bytes runs past the end of the delta",
                        col.name
                    ),
                )
            })?;
        let v = get_field(col.ty, bytes)
            .map_err(|problem| corrupt(p, format!("column \"{}\": {problem}", col.name)))?;
        p += bytes.len();
        changes.push((c, v));
    }
    if p != delta.len() {
        return Err(corrupt(p, format!("{} trailing bytes", delta.len() - p)));
    }
    let mut cols = Vec::with_capacity(changes.len());
    for (c, v) in changes {
        row[c] = v;
        cols.push(c);
    }
    Ok(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_match_mach_write_compressed() {
        for (n, bytes) in [
            (0u32, 1usize),
            (0x7F, 1),
            (0x80, 2),
            (0x3FFF, 2),
            (0x4000, 3),
            (0x1F_FFFF, 3),
            (0x20_0000, 4),
            (0x0FFF_FFFF, 4),
            (0x1000_0000, 5),
            (UNIV_SQL_NULL, 5),
        ] {
            let mut out = Vec::new();
            write_compressed(&mut out, n);
            assert_eq!(out.len(), bytes, "{n:#x}");
            let mut p = 0;
            assert_eq!(read_compressed(&out, &mut p), Some(n));
            assert_eq!(p, bytes);
        }
        let mut p = 0;
        assert_eq!(read_compressed(&[0xF1, 0, 0, 0, 0], &mut p), None);
        assert_eq!(read_compressed(&[0x80], &mut p), None);
    }
}
