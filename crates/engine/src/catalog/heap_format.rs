//! PostgreSQL heap tuple data: the user-data part of a heap tuple, and the null bitmap that
//! lives in the tuple header.
//!
//! Follows PostgreSQL 15 src/include/access/htup_details.h (`HeapTupleHeaderData`, `t_bits`,
//! `t_hoff`), src/backend/access/common/heaptuple.c (`heap_compute_data_size`,
//! `heap_fill_tuple`, `heap_deform_tuple`), src/include/varatt.h / postgres.h (varlena
//! headers) and pg_type.dat (typlen, typalign). The heap layer writes the 23 fixed header
//! bytes (`t_xmin`, `t_xmax`, `t_cid`, `t_ctid`, `t_infomask2`, `t_infomask`, `t_hoff`);
//! this module produces what follows them:
//!
//! ```text
//! | offset              | bytes              | field                                        |
//! |---------------------|--------------------|----------------------------------------------|
//! | 0                   | 23                 | fixed tuple header (heap layer)              |
//! | 23                  | ceil(natts/8)      | t_bits, only if some attribute is NULL       |
//! | ...                 | 0–7                | zero padding up to t_hoff = MAXALIGN(23+bits)|
//! | t_hoff              | data.len()         | attributes, in column order:                 |
//! |   align 2           |   2                |   tinyint, smallint (int2, little-endian)    |
//! |   align 4           |   4                |   integer (int4), date (int4 days), LE       |
//! |   align 8           |   8                |   bigint (int8), timestamp* (int8 µs), LE    |
//! |   none              |   1 + len          |   text, numeric: short varlena, header       |
//! |                     |                    |   (1+len)<<1 | 1                             |
//! |   align 4           |   4 + len          |   text, 4-byte varlena: header (4+len)<<2, LE |
//! ```
//! - `tinyint` is stored as `int2` (pg_type.dat: typlen 2, typalign `s`): PostgreSQL has no
//!   1-byte integer type (`"char"` is not an integer), so a TINYINT column is a `smallint`
//!   there, 2 bytes.
//! - `date` is `int4` days since 2000-01-01 (utils/adt/date.c, `DateADT`; typlen 4,
//!   typalign `i`); `timestamp(0)`, `timestamp(6)` and the DATETIME(6) columns are `int8`
//!   microseconds since 2000-01-01 (typlen 8, typalign `d`).
//! - `numeric(p,s)` (typlen −1, typalign `i`, typstorage `m`) is a varlena holding
//!   utils/adt/numeric.c's `NumericShort` (see `put_numeric`): a 2-byte header (`0x8000`,
//!   sign `0x2000`, display scale << 7, weight in 7 bits) and one little-endian `int16` per
//!   base-10000 digit (`NBASE`), leading and trailing zero digits stripped (`make_result`,
//!   `strip_var`). Every value in the domain (p ≤ 65, s ≤ 38) fits the short form and a
//!   1-byte varlena header, so a numeric takes 1 + 2 + 2 × (base-10000 digits) bytes,
//!   unaligned.
//! - `t_bits`: bit `i % 8` of byte `i / 8` is **1 when attribute `i` is not NULL**
//!   (`heap_fill_tuple`); bits past the last attribute are 0. Without NULLs there is no
//!   bitmap (`HEAP_HASNULL` clear) and `t_hoff` = 24.
//! - NULL attributes take no data bytes and no alignment.
//! - Alignment is relative to the start of the data area; since `t_hoff` and the tuple's
//!   place on the page are MAXALIGNed (8), it is also the address alignment PostgreSQL uses.
//!   Padding bytes are zero.
//! - Text (`bpchar`, `varchar`; typalign `i`, typstorage `x`) takes the 1-byte header without
//!   alignment when header + payload ≤ 127 bytes (`VARATT_CAN_MAKE_SHORT`,
//!   `VARATT_SHORT_MAX`), else the 4-byte header aligned to 4. A reader tells padding from a
//!   1-byte header by the first byte: padding is 0, a 1-byte header has its low bit set
//!   (`att_align_pointer`). CHAR(n) text is blank-padded to n characters before it is stored.
//! - Values are never compressed or moved out of line (no TOAST): a 1-byte header of exactly
//!   `0x01` (external pointer) or a 4-byte header with low bits `10` (compressed) is refused
//!   as corrupt. A row with a `text` value whose tuple would exceed `TOAST_TUPLE_THRESHOLD`
//!   ([`TOAST_TUPLE_THRESHOLD`], 2032 bytes for 8 KiB pages), which PostgreSQL would
//!   compress or move out of line (heapam.c `heap_prepare_insert` →
//!   `heap_toast_insert_or_update`), is refused by
//!   [`TableDef::check_row`](super::TableDef::check_row).
//!
//! Example, sysbench `sbtest` (`id int4, k int4, c char(120), pad char(60)`):
//! id at 0, k at 4, c at 8 (header 121<<1|1, 120 bytes), pad at 129 (header 61<<1|1,
//! 60 bytes): 190 bytes of data, `t_hoff` 24, tuple 214 bytes (216 on the page after
//! MAXALIGN, plus a 4-byte line pointer).

use super::decimal::Decimal;
use super::value::{
    check_value, date_in_domain, datetime6_in_domain, timestamp6_in_domain, timestamp_in_domain,
    MAX_TEXT_BYTES, NUL_IN_TEXT,
};
use super::{ColumnType, Projection, Row, TableDef, Value};
use crate::error::{Error, Result};

/// Bytes of the fixed part of a heap tuple header, up to `t_bits`
/// (`SizeofHeapTupleHeader`, `offsetof(HeapTupleHeaderData, t_bits)`).
pub const SIZEOF_HEAP_TUPLE_HEADER: usize = 23;
/// Bytes of an index tuple header (`IndexTupleData`: 6-byte `t_tid` + 2-byte `t_info`).
pub const SIZEOF_INDEX_TUPLE_HEADER: usize = 8;
/// Bytes of an index tuple's null bitmap when it has one (`IndexAttributeBitMapData`,
/// `INDEX_MAX_KEYS` / 8).
const SIZEOF_INDEX_ATTR_BITMAP: usize = 4;
/// Largest index tuple PostgreSQL can represent (`INDEX_SIZE_MASK`, 13 bits of `t_info`;
/// `index_form_tuple` "index row requires %zu bytes, maximum size is %zu").
const INDEX_SIZE_MASK: usize = 0x1FFF;
/// PostgreSQL's `MAXIMUM_ALIGNOF` on 64-bit platforms, in bytes.
pub const MAXIMUM_ALIGNOF: usize = 8;
/// Largest varlena (header + payload) that takes a 1-byte header (`VARATT_SHORT_MAX`).
const VARATT_SHORT_MAX: usize = 0x7F;
/// Bytes of a 4-byte varlena header (`VARHDRSZ`).
const VARHDRSZ: usize = 4;
/// Largest 4-byte varlena (30 bits of length).
const VARLENA_MAX: usize = 0x3FFF_FFFF;
/// Tuple length above which PostgreSQL 15 TOASTs a tuple's varlena attributes, for 8 KiB
/// pages (heaptoast.h `TOAST_TUPLE_THRESHOLD` = `MaximumBytesPerTuple(4)` =
/// MAXALIGN_DOWN((8192 − MAXALIGN(24 + 4 × 4)) / 4)).
pub const TOAST_TUPLE_THRESHOLD: usize = 2032;
/// Base of a numeric digit (numeric.c `NBASE`), and decimal digits per numeric digit
/// (`DEC_DIGITS`).
const NBASE: u16 = 10_000;
const DEC_DIGITS: usize = 4;
/// Numeric header bits (numeric.c): short format flag, its sign bit, display-scale shift and
/// mask, weight sign bit and weight mask.
const NUMERIC_SHORT: u16 = 0x8000;
const NUMERIC_SHORT_SIGN_MASK: u16 = 0x2000;
const NUMERIC_SHORT_DSCALE_MASK: u16 = 0x1F80;
const NUMERIC_SHORT_DSCALE_SHIFT: u16 = 7;
const NUMERIC_SHORT_WEIGHT_SIGN_MASK: u16 = 0x0040;
const NUMERIC_SHORT_WEIGHT_MASK: u16 = 0x003F;

/// `n` rounded up to a multiple of [`MAXIMUM_ALIGNOF`] (PostgreSQL `MAXALIGN`).
pub fn maxalign(n: usize) -> usize {
    n.div_ceil(MAXIMUM_ALIGNOF) * MAXIMUM_ALIGNOF
}

/// The parts of a heap tuple this module encodes: the null bitmap (`t_bits`, which lives in
/// the header and decides `t_hoff`) and the data area that starts at `t_hoff`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapTupleData {
    /// `t_bits`: `ceil(natts / 8)` bytes, bit set = attribute not NULL; `None` when no
    /// attribute is NULL (`HEAP_HASNULL` clear).
    pub null_bitmap: Option<Vec<u8>>,
    /// The attributes, aligned as described in the module doc.
    pub data: Vec<u8>,
}

impl HeapTupleData {
    /// Offset of the data area in the tuple, in bytes: `MAXALIGN(23 + bitmap bytes)`
    /// (`t_hoff`, computed in `heap_form_tuple`).
    pub fn t_hoff(&self) -> usize {
        maxalign(SIZEOF_HEAP_TUPLE_HEADER + self.null_bitmap.as_ref().map_or(0, Vec::len))
    }

    /// Length of the whole tuple in bytes, header included (`t_len`, the line pointer's
    /// `lp_len`). The tuple occupies `MAXALIGN` of it on the page, plus a 4-byte line pointer.
    pub fn tuple_bytes(&self) -> usize {
        self.t_hoff() + self.data.len()
    }
}

fn align_with_zeros(data: &mut Vec<u8>, align: usize) {
    let pad = data.len().next_multiple_of(align) - data.len();
    data.resize(data.len() + pad, 0);
}

/// Appends one non-NULL attribute as `heap_fill_tuple` does. The value must be of `ty`'s
/// kind; otherwise the value's kind name is returned.
fn fill_attr(ty: ColumnType, v: &Value, data: &mut Vec<u8>) -> std::result::Result<(), String> {
    match (ty, v) {
        (ColumnType::TinyInt, Value::TinyInt(x)) => {
            align_with_zeros(data, 2);
            data.extend_from_slice(&i16::from(*x).to_le_bytes());
        }
        (ColumnType::SmallInt, Value::SmallInt(x)) => {
            align_with_zeros(data, 2);
            data.extend_from_slice(&x.to_le_bytes());
        }
        (ColumnType::Integer, Value::Integer(x)) | (ColumnType::Date, Value::Date(x)) => {
            align_with_zeros(data, 4);
            data.extend_from_slice(&x.to_le_bytes());
        }
        (ColumnType::Decimal { scale, .. }, Value::Decimal(d)) => {
            let mut payload = Vec::with_capacity(2 + 2 * 18);
            put_numeric(d, scale, &mut payload);
            put_varlena_header(payload.len(), data)?;
            data.extend_from_slice(&payload);
        }
        (ColumnType::BigInt, Value::BigInt(x))
        | (
            ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6,
            Value::Timestamp(x),
        ) => {
            align_with_zeros(data, 8);
            data.extend_from_slice(&x.to_le_bytes());
        }
        (ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text, Value::Text(s)) => {
            let pad = match ty {
                ColumnType::Char(n) => usize::from(n).saturating_sub(char_count(s)),
                _ => 0,
            };
            put_varlena_header(s.len() + pad, data)?;
            data.extend_from_slice(s.as_bytes());
            data.resize(data.len() + pad, b' ');
        }
        _ => return Err(format!("a {} value", v.kind_name())),
    }
    Ok(())
}

/// Appends the varlena header of a `len`-byte payload: 1 byte without alignment when
/// header + payload ≤ 127 bytes (`VARATT_CAN_MAKE_SHORT`; `SET_VARSIZE_SHORT`: little-endian,
/// low bit 1), else 4 bytes aligned to 4 (`SET_VARSIZE_4B`: little-endian, low bits 00).
fn put_varlena_header(len: usize, data: &mut Vec<u8>) -> std::result::Result<(), String> {
    if len < VARATT_SHORT_MAX {
        data.push((((1 + len) << 1) | 1) as u8);
    } else {
        if VARHDRSZ + len > VARLENA_MAX {
            return Err(format!("text of {len} bytes (over 1 GB)"));
        }
        align_with_zeros(data, 4);
        data.extend_from_slice(&(((VARHDRSZ + len) as u32) << 2).to_le_bytes());
    }
    Ok(())
}

/// Appends the numeric payload (after the varlena header) of `d` in a column of scale
/// `dscale`: numeric.c `make_result` of a `NumericVar` whose digits are base 10000 and
/// stripped of leading and trailing zero digits (`strip_var`), written as a `NumericShort`
/// (`NUMERIC_CAN_BE_SHORT`: dscale ≤ 63 and −64 ≤ weight ≤ 63, always true in the
/// domain). Zero has no digits, weight 0 and a positive sign.
///
/// Example: `1234.50` in numeric(10,2): digits 1234, 5000; weight 0; header
/// `0x8000 | 2 << 7` = `0x8100`; payload `00 81 D2 04 88 13`, 6 bytes, 7 with the
/// varlena header.
fn put_numeric(d: &Decimal, dscale: u8, out: &mut Vec<u8>) {
    let int = d.integer_digits();
    let frac = d.fraction_digits();
    // Integer digits padded on the left, fraction digits on the right, to whole NBASE
    // digits; the integer part's first NBASE digit has weight int_groups − 1.
    let int_groups = int.len().div_ceil(DEC_DIGITS);
    let mut all = "0".repeat(int_groups * DEC_DIGITS - int.len());
    all.push_str(int);
    all.push_str(&frac);
    all.push_str(&"0".repeat(frac.len().next_multiple_of(DEC_DIGITS) - frac.len()));
    let mut digits: Vec<u16> = all
        .as_bytes()
        .chunks(DEC_DIGITS)
        .map(|c| {
            c.iter()
                .fold(0u16, |acc, &b| acc * 10 + u16::from(b - b'0'))
        })
        .collect();
    let mut weight = int_groups as i32 - 1;
    // strip_var: leading zero digits move the weight down; trailing ones just go.
    let lead = digits.iter().take_while(|&&x| x == 0).count();
    digits.drain(..lead);
    weight -= lead as i32;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let negative = d.is_negative();
    if digits.is_empty() {
        weight = 0;
    }
    let mut header = NUMERIC_SHORT | (u16::from(dscale) << NUMERIC_SHORT_DSCALE_SHIFT);
    if negative && !digits.is_empty() {
        header |= NUMERIC_SHORT_SIGN_MASK;
    }
    if weight < 0 {
        header |= NUMERIC_SHORT_WEIGHT_SIGN_MASK;
    }
    header |= (weight as u16) & NUMERIC_SHORT_WEIGHT_MASK;
    out.extend_from_slice(&header.to_le_bytes());
    for x in digits {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Reads a numeric payload written by [`put_numeric`] for numeric(`precision`, `scale`).
/// Refuses the long and special (NaN, ±Infinity) formats, which no value of the domain
/// takes, a display scale other than the column's, and digits that are not canonical
/// (≥ 10000, leading or trailing zero digits, non-zero digits past the scale). Returns the
/// problem in words.
fn get_numeric(payload: &[u8], precision: u8, scale: u8) -> std::result::Result<Decimal, String> {
    if payload.len() < 2 || !payload.len().is_multiple_of(2) {
        return Err(format!("numeric of {} bytes", payload.len()));
    }
    let header = u16::from_le_bytes([payload[0], payload[1]]);
    if header & 0xC000 != NUMERIC_SHORT {
        return Err(format!(
            "numeric header {header:#06x} is not the short format, which every value of \
             the column takes"
        ));
    }
    let dscale = (header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT;
    if dscale != u16::from(scale) {
        return Err(format!(
            "numeric display scale {dscale} in a scale-{scale} column"
        ));
    }
    let mut weight = i32::from(header & NUMERIC_SHORT_WEIGHT_MASK);
    if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 {
        weight -= 64;
    }
    let negative = header & NUMERIC_SHORT_SIGN_MASK != 0;
    let digits: Vec<u16> = payload[2..]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    if digits.is_empty() {
        if weight != 0 || negative {
            return Err("numeric zero with a weight or a sign".into());
        }
        return Ok(Decimal::from_i64(0)
            .with_scale(scale)
            .unwrap_or_else(|| Decimal::from_i64(0)));
    }
    if digits.iter().any(|&x| x >= NBASE) {
        return Err("numeric digit ≥ 10000".into());
    }
    if digits[0] == 0 || digits[digits.len() - 1] == 0 {
        return Err("numeric digits not stripped of zeros".into());
    }
    // Decimal digits from 10^(4·(weight+1)) down.
    let mut s = String::with_capacity(digits.len() * DEC_DIGITS);
    for x in &digits {
        s.push_str(&format!("{x:04}"));
    }
    let int_digits = DEC_DIGITS as i32 * (weight + 1);
    let max_int = i32::from(precision - scale.min(precision));
    let (int, frac) = if int_digits >= 0 {
        let int_digits = int_digits as usize;
        if int_digits >= s.len() {
            let mut int = s.clone();
            int.push_str(&"0".repeat(int_digits - s.len()));
            (int, String::new())
        } else {
            (s[..int_digits].to_owned(), s[int_digits..].to_owned())
        }
    } else {
        (
            String::new(),
            format!("{}{s}", "0".repeat((-int_digits) as usize)),
        )
    };
    let int_len = int.trim_start_matches('0').len() as i32;
    if int_len > max_int {
        return Err(format!(
            "numeric of {int_len} integer digits in a numeric({precision},{scale}) column"
        ));
    }
    let s_len = usize::from(scale);
    if frac.len() > s_len && frac.as_bytes()[s_len..].iter().any(|&b| b != b'0') {
        return Err(format!("numeric has digits past its scale {scale}"));
    }
    let mut frac = frac;
    frac.truncate(s_len);
    frac.push_str(&"0".repeat(s_len - frac.len()));
    let all = format!("{int}{frac}");
    Decimal::new(negative, if all.is_empty() { "0" } else { &all }, scale)
        .ok_or_else(|| "numeric has no digits".into())
}

fn char_count(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Encodes a row as PostgreSQL heap tuple data: the null bitmap (only if a value is NULL)
/// and the aligned data area. CHAR(n) values are blank-padded to n characters.
///
/// # Panics
/// If the row has a different number of values than the table has columns, or a value is
/// not of its column's kind (a row that fails [`TableDef::check_row`]; call it first).
pub fn encode_heap(def: &TableDef, row: &Row) -> HeapTupleData {
    assert_eq!(
        row.len(),
        def.columns.len(),
        "encode_heap: table \"{}\" has {} columns, the row has {} values; \
         call TableDef::check_row first",
        def.name,
        def.columns.len(),
        row.len()
    );
    let natts = def.columns.len();
    let has_null = row.iter().any(Value::is_null);
    let mut bitmap = has_null.then(|| vec![0u8; natts.div_ceil(8)]);
    let mut data = Vec::with_capacity(natts * 8);
    for (i, (col, v)) in def.columns.iter().zip(row).enumerate() {
        if v.is_null() {
            continue;
        }
        if let Some(bm) = bitmap.as_mut() {
            bm[i / 8] |= 1 << (i % 8);
        }
        if let Err(problem) = fill_attr(col.ty, v, &mut data) {
            panic!(
                "encode_heap: column \"{}\" of table \"{}\" ({}) got {problem}; \
                 call TableDef::check_row first",
                col.name, def.name, col.ty
            );
        }
    }
    HeapTupleData {
        null_bitmap: bitmap,
        data,
    }
}

/// Cursor over a data area that reports every problem as [`StorageError::Corrupted`](crate::error::StorageError::Corrupted).
struct Reader<'a> {
    data: &'a [u8],
    off: usize,
    table: &'a str,
}

impl Reader<'_> {
    fn corrupt(&self, column: &str, problem: impl std::fmt::Display) -> Error {
        Error::corrupted(format!(
            "heap tuple of table \"{}\", column \"{column}\" at data offset {}: {problem}",
            self.table, self.off
        ))
    }

    fn byte(&self, column: &str) -> Result<u8> {
        self.data
            .get(self.off)
            .copied()
            .ok_or_else(|| self.corrupt(column, "data ends before the attribute"))
    }

    /// Skips the zero padding up to a multiple of `align`.
    fn align(&mut self, align: usize, column: &str) -> Result<()> {
        let to = self.off.next_multiple_of(align);
        let pad = self
            .data
            .get(self.off..to)
            .ok_or_else(|| self.corrupt(column, "data ends inside alignment padding"))?;
        if pad.iter().any(|&b| b != 0) {
            return Err(self.corrupt(column, "non-zero alignment padding"));
        }
        self.off = to;
        Ok(())
    }

    fn take(&mut self, n: usize, column: &str) -> Result<&[u8]> {
        let end = self.off.checked_add(n);
        let bytes = end
            .and_then(|end| self.data.get(self.off..end))
            .ok_or_else(|| {
                self.corrupt(
                    column,
                    format_args!(
                        "attribute of {n} bytes runs past the end of the data ({} bytes)",
                        self.data.len()
                    ),
                )
            })?;
        self.off += n;
        Ok(bytes)
    }

    fn fixed<const N: usize>(&mut self, column: &str) -> Result<[u8; N]> {
        self.align(N.min(MAXIMUM_ALIGNOF), column)?;
        let b = self.take(N, column)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    /// Steps over one present attribute of type `ty` without converting it (heaptuple.c
    /// `att_addlength_pointer` after `att_align_pointer`).
    fn skip(&mut self, ty: ColumnType, column: &str) -> Result<()> {
        match ty {
            ColumnType::Integer | ColumnType::Date => {
                self.fixed::<4>(column)?;
            }
            ColumnType::BigInt
            | ColumnType::Timestamp
            | ColumnType::Timestamp6
            | ColumnType::DateTime6 => {
                self.fixed::<8>(column)?;
            }
            ColumnType::SmallInt | ColumnType::TinyInt => {
                self.fixed::<2>(column)?;
            }
            ColumnType::Decimal { .. }
            | ColumnType::Char(_)
            | ColumnType::Varchar(_)
            | ColumnType::Text => {
                self.varlena(column)?;
            }
        }
        Ok(())
    }

    /// Reads a varlena payload (`att_align_pointer`, `VARSIZE_ANY`).
    fn varlena(&mut self, column: &str) -> Result<&[u8]> {
        if !self.off.is_multiple_of(4) && self.byte(column)? == 0 {
            self.align(4, column)?;
        }
        let first = self.byte(column)?;
        if first & 0x01 == 0x01 {
            if first == 0x01 {
                return Err(self.corrupt(
                    column,
                    "external (TOAST) varlena pointer; out-of-line values are not modelled",
                ));
            }
            let total = usize::from(first >> 1);
            self.off += 1;
            return self.take(total - 1, column);
        }
        if !self.off.is_multiple_of(4) {
            return Err(self.corrupt(column, "4-byte varlena header is not 4-byte aligned"));
        }
        let h = u32::from_le_bytes(self.fixed::<4>(column)?);
        if h & 0x03 != 0 {
            return Err(self.corrupt(
                column,
                format_args!("varlena header {h:#010x} is compressed; compression is not modelled"),
            ));
        }
        let total = (h >> 2) as usize;
        if total < VARHDRSZ {
            return Err(self.corrupt(column, format_args!("varlena length {total} < 4")));
        }
        self.take(total - VARHDRSZ, column)
    }
}

/// Decodes heap tuple data back into a row; `null_bitmap` is `t_bits` (`None` when the
/// tuple has no NULLs). CHAR(n) values come back blank-padded to n characters.
///
/// # Errors
/// [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the table, column and problem for any byte string that is not
/// the encoding of a row passing [`TableDef::check_row`]: wrong bitmap length or stray bits,
/// a NULL in a NOT NULL column, non-zero padding, a truncated attribute, a TOAST pointer or
/// compressed varlena, invalid UTF-8 or a NUL character, a CHAR(n) of other than n
/// characters, a VARCHAR(n) longer than n, a timestamp outside the domain, or trailing bytes.
/// Never panics.
pub fn decode_heap(def: &TableDef, null_bitmap: Option<&[u8]>, data: &[u8]) -> Result<Row> {
    decode_heap_projected(def, null_bitmap, data, &Projection::all())
}

/// Decodes only the columns `proj` needs from heap tuple data, as PostgreSQL deforms a
/// tuple up to the last attribute a plan references (REL_15 execTuples.c
/// `slot_deform_heap_tuple(slot, natts)`): the attributes before the last needed one are
/// walked (their alignment and lengths decide where the next starts) but not converted,
/// those after it not even walked. The row has the table's width; a column not needed is
/// [`Value::Null`]. With [`Projection::all`] this is [`decode_heap`].
///
/// # Errors
/// As [`decode_heap`], for the attributes walked (the bytes after the last needed
/// attribute are not checked).
pub fn decode_heap_projected(
    def: &TableDef,
    null_bitmap: Option<&[u8]>,
    data: &[u8],
    proj: &Projection,
) -> Result<Row> {
    let natts = def.columns.len();
    let corrupt_bitmap = |problem: String| {
        Error::corrupted(format!("heap tuple of table \"{}\": {problem}", def.name))
    };
    if let Some(bm) = null_bitmap {
        // `t_bits` runs from the 23-byte header to `t_hoff`, which is MAXALIGN'd
        // (heaptuple.c `heap_form_tuple`: `len = MAXALIGN(offsetof(HeapTupleHeaderData,
        // t_bits) + BITMAPLEN(natts))`): a bitmap of 2..=8 bytes comes with up to 7 zero
        // bytes of padding (23 + 2 = 25 → 32), which are not part of it.
        let want = natts.div_ceil(8);
        let padded = (23 + want).next_multiple_of(8) - 23;
        if bm.len() != want && bm.len() != padded {
            return Err(corrupt_bitmap(format!(
                "null bitmap of {} bytes for {natts} attributes (expected {want}, or {padded} \
                 with the padding to t_hoff)",
                bm.len(),
            )));
        }
        if bm[want..].iter().any(|&b| b != 0) {
            return Err(corrupt_bitmap(
                "non-zero padding after the null bitmap".into(),
            ));
        }
        let bm = &bm[..want];
        if !natts.is_multiple_of(8) {
            let stray = bm[bm.len() - 1] >> (natts % 8);
            if stray != 0 {
                return Err(corrupt_bitmap(
                    "null bitmap has bits set past the last attribute".into(),
                ));
            }
        }
    }
    let mut r = Reader {
        data,
        off: 0,
        table: &def.name,
    };
    let walk = proj.walk_width(natts);
    let mut row = Vec::with_capacity(natts);
    for (i, col) in def.columns.iter().enumerate().take(walk) {
        let present = null_bitmap.is_none_or(|bm| bm[i / 8] & (1 << (i % 8)) != 0);
        let name = col.name.as_str();
        if !present {
            if !col.nullable {
                return Err(r.corrupt(name, "NULL in a NOT NULL column"));
            }
            row.push(Value::Null);
            continue;
        }
        if !proj.needs(i) {
            r.skip(col.ty, name)?;
            row.push(Value::Null);
            continue;
        }
        let v = match col.ty {
            ColumnType::Integer => Value::Integer(i32::from_le_bytes(r.fixed::<4>(name)?)),
            ColumnType::BigInt => Value::BigInt(i64::from_le_bytes(r.fixed::<8>(name)?)),
            ColumnType::SmallInt => Value::SmallInt(i16::from_le_bytes(r.fixed::<2>(name)?)),
            ColumnType::TinyInt => {
                let x = i16::from_le_bytes(r.fixed::<2>(name)?);
                let Ok(x) = i8::try_from(x) else {
                    r.off -= 2;
                    return Err(r.corrupt(name, format_args!("tinyint {x} is out of range")));
                };
                Value::TinyInt(x)
            }
            ColumnType::Date => {
                let days = i32::from_le_bytes(r.fixed::<4>(name)?);
                if !date_in_domain(days) {
                    r.off -= 4;
                    return Err(r.corrupt(name, format_args!("date {days} days is out of range")));
                }
                Value::Date(days)
            }
            ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6 => {
                let us = i64::from_le_bytes(r.fixed::<8>(name)?);
                let ok = match col.ty {
                    ColumnType::Timestamp => timestamp_in_domain(us),
                    ColumnType::Timestamp6 => timestamp6_in_domain(us),
                    _ => datetime6_in_domain(us),
                };
                if !ok {
                    return Err(r.corrupt(name, format_args!("timestamp {us} µs is out of range")));
                }
                Value::Timestamp(us)
            }
            ColumnType::Decimal { precision, scale } => {
                let start = r.off;
                let payload = r.varlena(name)?;
                match get_numeric(payload, precision, scale) {
                    Ok(d) => Value::Decimal(d),
                    Err(problem) => {
                        r.off = start;
                        return Err(r.corrupt(name, problem));
                    }
                }
            }
            ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text => {
                let start = r.off;
                let payload = r.varlena(name)?;
                let s = std::str::from_utf8(payload).map(str::to_owned);
                let s = match s {
                    Ok(s) if !s.contains('\0') => s,
                    Ok(_) => {
                        r.off = start;
                        return Err(r.corrupt(name, NUL_IN_TEXT));
                    }
                    Err(_) => {
                        r.off = start;
                        return Err(r.corrupt(name, "text is not valid UTF-8"));
                    }
                };
                let chars = char_count(&s);
                let ok = match col.ty {
                    ColumnType::Char(n) => chars == usize::from(n),
                    ColumnType::Varchar(n) => chars <= usize::from(n),
                    _ => s.len() <= MAX_TEXT_BYTES,
                };
                if !ok {
                    r.off = start;
                    return Err(r.corrupt(
                        name,
                        format_args!("text of {chars} characters in a {} column", col.ty),
                    ));
                }
                Value::Text(s)
            }
        };
        row.push(v);
    }
    if walk < natts {
        row.resize(natts, Value::Null);
        return Ok(row);
    }
    if r.off != data.len() {
        return Err(Error::corrupted(format!(
            "heap tuple of table \"{}\": {} trailing bytes after the last attribute",
            def.name,
            data.len() - r.off
        )));
    }
    Ok(row)
}

/// Size in bytes PostgreSQL gives a B-tree index tuple holding `values` (of `types`):
/// the 8-byte `IndexTupleData` header, a 4-byte null bitmap when a value is NULL (the data
/// then starts at MAXALIGN(12) = 16), the attributes aligned as in the heap, and the whole
/// rounded up to MAXALIGN (access/itup.h, indextuple.c `index_form_tuple`). CHAR(n) values
/// count blank-padded. Excludes the 4-byte line pointer; B-tree deduplication and pivot
/// suffix truncation are not modelled.
///
/// Examples: one int4 key, 16 bytes; one int8, 16; int4 + char(10) 'abc', 8 + 4 + 11 → 24.
///
/// # Errors
/// [`Error::InvalidValue`] if the counts differ or a value does not fit its type;
/// [`Error::TooLarge`] above PostgreSQL's 8191-byte index tuple limit.
pub fn pg_index_tuple_bytes(types: &[ColumnType], values: &[Value]) -> Result<usize> {
    if types.len() != values.len() {
        return Err(Error::InvalidValue(format!(
            "index tuple of {} columns given {} values",
            types.len(),
            values.len()
        )));
    }
    let has_null = values.iter().any(Value::is_null);
    let header = if has_null {
        maxalign(SIZEOF_INDEX_TUPLE_HEADER + SIZEOF_INDEX_ATTR_BITMAP)
    } else {
        maxalign(SIZEOF_INDEX_TUPLE_HEADER)
    };
    let mut data = Vec::new();
    for (k, (&ty, v)) in types.iter().zip(values).enumerate() {
        if v.is_null() {
            continue;
        }
        check_value(ty, v, false)
            .and_then(|()| fill_attr(ty, v, &mut data))
            .map_err(|p| Error::InvalidValue(format!("index key column {}: {p}", k + 1)))?;
    }
    let bytes = maxalign(header + data.len());
    if bytes > INDEX_SIZE_MASK {
        return Err(Error::TooLarge {
            what: "PostgreSQL index tuple",
            bytes,
            max_bytes: INDEX_SIZE_MASK,
        });
    }
    Ok(bytes)
}
