//! Column types and values: what a column may hold, the domain both engines accept, and how
//! a value prints.
//!
//! A value is checked against its column once, by
//! [`TableDef::check_row`](super::TableDef::check_row); the checks live here so that the
//! codecs can reuse them. The domain is the intersection of what PostgreSQL 15 and MariaDB
//! 10.11 accept for the column type, because mvcclab runs the same workload against both
//! servers:
//!
//! - `Char(n)` / `Varchar(n)`: at most `n` characters (Unicode scalar values), as both engines
//!   count them (PostgreSQL `bpchar`/`varchar` typmod; MariaDB `CHAR(n)`/`VARCHAR(n)` in
//!   utf8mb4). Over-long values are refused, never truncated. Text may not contain the NUL
//!   character (PostgreSQL: "invalid byte sequence for encoding \"UTF8\": 0x00").
//! - `Timestamp`: whole seconds between `1970-01-01 00:00:01` and `2038-01-19 03:14:07` UTC, the
//!   range of MariaDB's `TIMESTAMP` (= `TIMESTAMP(0)`, 4 bytes of Unix seconds; MariaDB
//!   manual, "TIMESTAMP"). PostgreSQL's `timestamp(0)` rounds to whole seconds too, so a
//!   `Timestamp` column is `timestamp(0)` in PostgreSQL and `TIMESTAMP` in MariaDB.

use super::datetime::{civil_from_days, date_domain_days, format_date, USECS_PER_DAY};
use super::decimal::{decimal_bin_size, Decimal};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Seconds from the Unix epoch (1970-01-01) to PostgreSQL's epoch (2000-01-01)
/// (PostgreSQL `POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE` days × 86400).
pub const PG_EPOCH_UNIX_SECS: i64 = 946_684_800;
/// Microseconds per second.
pub const USECS_PER_SEC: i64 = 1_000_000;
/// Earliest MariaDB `TIMESTAMP`, in Unix seconds (`1970-01-01 00:00:01` UTC; 0 is the zero
/// date `0000-00-00 00:00:00`, which [`Value`] cannot hold).
pub const MARIADB_TIMESTAMP_MIN_UNIX_SECS: i64 = 1;
/// Latest MariaDB 10.11 `TIMESTAMP`, in Unix seconds (`2038-01-19 03:14:07` UTC, 2³¹−1).
pub const MARIADB_TIMESTAMP_MAX_UNIX_SECS: i64 = i32::MAX as i64;
/// Bytes per character of utf8mb4 at most (MariaDB `mbmaxlen`); CHAR and VARCHAR columns are
/// sized by it.
pub const UTF8MB4_MAX_BYTES_PER_CHAR: usize = 4;

/// SQL column type. `n` in `Char(n)` / `Varchar(n)` is the maximum length in characters.
///
/// Sizes and SQL names in each engine:
///
/// | type | PostgreSQL | PostgreSQL heap bytes | MariaDB | InnoDB bytes |
/// |---|---|---|---|---|
/// | `TinyInt` | `smallint` (no 1-byte integer; the value range is TINYINT's) | 2, align 2 | `TINYINT` | 1 |
/// | `SmallInt` | `smallint` (int2) | 2, align 2 | `SMALLINT` | 2 |
/// | `Integer` | `integer` (int4) | 4, align 4 | `INT` | 4 |
/// | `BigInt` | `bigint` (int8) | 8, align 8 | `BIGINT` | 8 |
/// | `Decimal { p, s }` | `numeric(p,s)` | varlena: 1 + 2 + 2 per 4 digits | `DECIMAL(p,s)` | `decimal_bin_size(p, s)` |
/// | `Date` | `date` (int4 days) | 4, align 4 | `DATE` | 3 |
/// | `Timestamp` | `timestamp(0)` | 8, align 8 | `TIMESTAMP` | 4 |
/// | `Timestamp6` | `timestamp(6)` | 8, align 8 | `TIMESTAMP(6)` | 7 |
/// | `DateTime6` | `timestamp(6)` | 8, align 8 | `DATETIME(6)` | 8 |
/// | `Char(n)` / `Varchar(n)` / `Text` | `char(n)` / `varchar(n)` / `text` | varlena | `CHAR(n)` / `VARCHAR(n)` / `TEXT` | length bytes + bytes |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ColumnType {
    /// 32-bit signed integer (PostgreSQL `int4`; MariaDB `INT`).
    Integer,
    /// 64-bit signed integer (PostgreSQL `int8`; MariaDB `BIGINT`).
    BigInt,
    /// Fixed-length text of `n` characters, blank-padded when stored (PostgreSQL `bpchar`;
    /// MariaDB `CHAR(n)`).
    Char(u16),
    /// Text of at most `n` characters (PostgreSQL `varchar(n)`; MariaDB `VARCHAR(n)`).
    Varchar(u16),
    /// Date and time in whole seconds, without time zone (PostgreSQL `timestamp(0)`;
    /// MariaDB `TIMESTAMP`). See the module doc for the range.
    Timestamp,
    /// 8-bit signed integer, -128..=127 (MariaDB `TINYINT`, 1 byte). PostgreSQL has no
    /// 1-byte integer: the column is a `smallint` (int2, 2 bytes) there, holding TINYINT's
    /// range.
    TinyInt,
    /// 16-bit signed integer (PostgreSQL `smallint`, int2; MariaDB `SMALLINT`).
    SmallInt,
    /// Exact decimal of `precision` digits, `scale` of them after the point (PostgreSQL
    /// `numeric(p,s)`; MariaDB `DECIMAL(p,s)`); 1 ≤ p ≤ 65 and 0 ≤ s ≤ min(p, 38), the
    /// intersection of the two engines' limits.
    Decimal {
        /// Total digits (p).
        precision: u8,
        /// Fraction digits (s).
        scale: u8,
    },
    /// Calendar date, `1000-01-01` to `9999-12-31` (PostgreSQL `date`; MariaDB `DATE`).
    Date,
    /// Date and time in microseconds, in MariaDB's TIMESTAMP range (`1970-01-01
    /// 00:00:01.000000` .. `2038-01-19 03:14:07.999999` UTC) (PostgreSQL `timestamp(6)`;
    /// MariaDB `TIMESTAMP(6)`).
    Timestamp6,
    /// Date and time in microseconds, `1000-01-01 00:00:00` to `9999-12-31
    /// 23:59:59.999999` (PostgreSQL `timestamp(6)`; MariaDB `DATETIME(6)`).
    DateTime6,
    /// Text without a declared length: at most 65,535 bytes (MariaDB `TEXT`; PostgreSQL
    /// `text`), stored inline (see [`TableDef::check_row`](super::TableDef::check_row) for
    /// the row-size limits that keep TOAST and off-page storage out).
    Text,
}

/// Longest TEXT value in bytes (MariaDB `TEXT`: L < 2^16).
pub const MAX_TEXT_BYTES: usize = 65_535;

impl ColumnType {
    /// Maximum length in characters of a CHAR or VARCHAR type; `None` for the others
    /// (TEXT is limited in bytes, [`MAX_TEXT_BYTES`]).
    pub fn max_chars(self) -> Option<u16> {
        match self {
            ColumnType::Char(n) | ColumnType::Varchar(n) => Some(n),
            _ => None,
        }
    }

    /// Whether values of this type are [`Value::Text`].
    pub fn is_text(self) -> bool {
        self.max_chars().is_some() || self == ColumnType::Text
    }

    /// Maximum bytes of a value in MariaDB/InnoDB (the dictionary column length `col->len`:
    /// TINYINT 1, SMALLINT 2, INT 4, BIGINT 8, DATE 3, TIMESTAMP 4, TIMESTAMP(6) 7,
    /// DATETIME(6) 8, DECIMAL(p,s) `decimal_bin_size`, CHAR(n)/VARCHAR(n) n × 4 in utf8mb4,
    /// TEXT 65,535).
    pub fn mariadb_max_bytes(self) -> usize {
        match self {
            ColumnType::TinyInt => 1,
            ColumnType::SmallInt => 2,
            ColumnType::Integer => 4,
            ColumnType::BigInt => 8,
            ColumnType::Date => 3,
            ColumnType::Timestamp => 4,
            ColumnType::Timestamp6 => 7,
            ColumnType::DateTime6 => 8,
            ColumnType::Decimal { precision, scale } => decimal_bin_size(precision, scale),
            ColumnType::Char(n) | ColumnType::Varchar(n) => {
                usize::from(n) * UTF8MB4_MAX_BYTES_PER_CHAR
            }
            ColumnType::Text => MAX_TEXT_BYTES,
        }
    }

    /// The type's name in PostgreSQL DDL (`smallint` for TINYINT, which PostgreSQL lacks).
    pub fn postgres_sql(self) -> String {
        match self {
            ColumnType::TinyInt | ColumnType::SmallInt => "smallint".into(),
            ColumnType::Integer => "integer".into(),
            ColumnType::BigInt => "bigint".into(),
            ColumnType::Decimal { precision, scale } => format!("numeric({precision},{scale})"),
            ColumnType::Date => "date".into(),
            ColumnType::Timestamp => "timestamp(0)".into(),
            ColumnType::Timestamp6 | ColumnType::DateTime6 => "timestamp(6)".into(),
            ColumnType::Char(n) => format!("char({n})"),
            ColumnType::Varchar(n) => format!("varchar({n})"),
            ColumnType::Text => "text".into(),
        }
    }

    /// The type's name in MariaDB DDL.
    pub fn mariadb_sql(self) -> String {
        match self {
            ColumnType::TinyInt => "TINYINT".into(),
            ColumnType::SmallInt => "SMALLINT".into(),
            ColumnType::Integer => "INT".into(),
            ColumnType::BigInt => "BIGINT".into(),
            ColumnType::Decimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
            ColumnType::Date => "DATE".into(),
            ColumnType::Timestamp => "TIMESTAMP".into(),
            ColumnType::Timestamp6 => "TIMESTAMP(6)".into(),
            ColumnType::DateTime6 => "DATETIME(6)".into(),
            ColumnType::Char(n) => format!("CHAR({n})"),
            ColumnType::Varchar(n) => format!("VARCHAR({n})"),
            ColumnType::Text => "TEXT".into(),
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Integer => f.write_str("integer"),
            ColumnType::BigInt => f.write_str("bigint"),
            ColumnType::Char(n) => write!(f, "char({n})"),
            ColumnType::Varchar(n) => write!(f, "varchar({n})"),
            ColumnType::Timestamp => f.write_str("timestamp"),
            ColumnType::TinyInt => f.write_str("tinyint"),
            ColumnType::SmallInt => f.write_str("smallint"),
            ColumnType::Decimal { precision, scale } => write!(f, "decimal({precision},{scale})"),
            ColumnType::Date => f.write_str("date"),
            ColumnType::Timestamp6 => f.write_str("timestamp(6)"),
            ColumnType::DateTime6 => f.write_str("datetime(6)"),
            ColumnType::Text => f.write_str("text"),
        }
    }
}

/// A value of a column, or SQL NULL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Value {
    /// SQL NULL (any type).
    Null,
    /// Value of an [`ColumnType::Integer`] column.
    Integer(i32),
    /// Value of a [`ColumnType::BigInt`] column.
    BigInt(i64),
    /// Value of a [`ColumnType::Char`], [`ColumnType::Varchar`] or [`ColumnType::Text`]
    /// column.
    Text(String),
    /// Value of a [`ColumnType::Timestamp`], [`ColumnType::Timestamp6`] or
    /// [`ColumnType::DateTime6`] column: microseconds since 2000-01-01 00:00:00
    /// (PostgreSQL's epoch and unit, `Timestamp` in datatype/timestamp.h; the column type
    /// decides the range).
    Timestamp(i64),
    /// Value of a [`ColumnType::TinyInt`] column.
    TinyInt(i8),
    /// Value of a [`ColumnType::SmallInt`] column.
    SmallInt(i16),
    /// Value of a [`ColumnType::Decimal`] column.
    Decimal(Decimal),
    /// Value of a [`ColumnType::Date`] column: days since 2000-01-01 (PostgreSQL `DateADT`).
    Date(i32),
}

impl Value {
    /// Whether the value is SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A text value.
    pub fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    /// The timestamp `secs` seconds after the Unix epoch (1970-01-01 00:00:00).
    pub fn timestamp_from_unix_secs(secs: i64) -> Value {
        Value::Timestamp(
            secs.saturating_sub(PG_EPOCH_UNIX_SECS)
                .saturating_mul(USECS_PER_SEC),
        )
    }

    /// Name of the value's kind, for messages: `NULL`, `integer`, `bigint`, `text`,
    /// `timestamp`, `tinyint`, `smallint`, `decimal`, `date`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Integer(_) => "integer",
            Value::BigInt(_) => "bigint",
            Value::Text(_) => "text",
            Value::Timestamp(_) => "timestamp",
            Value::TinyInt(_) => "tinyint",
            Value::SmallInt(_) => "smallint",
            Value::Decimal(_) => "decimal",
            Value::Date(_) => "date",
        }
    }

    /// Whether a non-NULL value has the kind `ty` stores (NULL matches every type).
    pub fn matches_type(&self, ty: ColumnType) -> bool {
        matches!(
            (ty, self),
            (_, Value::Null)
                | (ColumnType::Integer, Value::Integer(_))
                | (ColumnType::BigInt, Value::BigInt(_))
                | (
                    ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Text,
                    Value::Text(_)
                )
                | (
                    ColumnType::Timestamp | ColumnType::Timestamp6 | ColumnType::DateTime6,
                    Value::Timestamp(_)
                )
                | (ColumnType::TinyInt, Value::TinyInt(_))
                | (ColumnType::SmallInt, Value::SmallInt(_))
                | (ColumnType::Decimal { .. }, Value::Decimal(_))
                | (ColumnType::Date, Value::Date(_))
        )
    }
}

/// Prints like `psql` would: numbers plainly (decimals with their scale, `-12.50`), text
/// quoted with `'` (doubled inside), timestamps as `'2000-01-01 00:00:00'`, dates as
/// `'2000-01-01'`, NULL as `NULL`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Integer(v) => write!(f, "{v}"),
            Value::BigInt(v) => write!(f, "{v}"),
            Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Value::Timestamp(us) => write!(f, "'{}'", format_timestamp(*us)),
            Value::TinyInt(v) => write!(f, "{v}"),
            Value::SmallInt(v) => write!(f, "{v}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Date(days) => write!(f, "'{}'", format_date(*days)),
        }
    }
}

/// Formats microseconds since 2000-01-01 as PostgreSQL's ISO output does
/// (`YYYY-MM-DD HH:MM:SS[.ffffff]`, `BC` for years before 1, `infinity`/`-infinity` for
/// `i64::MAX`/`i64::MIN`: `DT_NOEND`/`DT_NOBEGIN`).
pub fn format_timestamp(us: i64) -> String {
    if us == i64::MAX {
        return "infinity".into();
    }
    if us == i64::MIN {
        return "-infinity".into();
    }
    let secs = us.div_euclid(USECS_PER_SEC);
    let frac = us.rem_euclid(USECS_PER_SEC);
    let days = secs.div_euclid(86_400) + PG_EPOCH_UNIX_SECS / 86_400;
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (year, era) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    let mut s = format!(
        "{year:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    );
    if frac != 0 {
        let f = format!(".{frac:06}");
        s.push_str(f.trim_end_matches('0'));
    }
    s.push_str(era);
    s
}

/// Whether `us` (microseconds since 2000-01-01) is a whole second inside MariaDB's
/// `TIMESTAMP` range (see the module doc).
pub fn timestamp_in_domain(us: i64) -> bool {
    us % USECS_PER_SEC == 0 && {
        let unix = us / USECS_PER_SEC + PG_EPOCH_UNIX_SECS;
        (MARIADB_TIMESTAMP_MIN_UNIX_SECS..=MARIADB_TIMESTAMP_MAX_UNIX_SECS).contains(&unix)
    }
}

/// Whether `us` (microseconds since 2000-01-01) is inside MariaDB's `TIMESTAMP(6)` range,
/// `1970-01-01 00:00:01.000000` .. `2038-01-19 03:14:07.999999` UTC (MariaDB 10.11).
pub fn timestamp6_in_domain(us: i64) -> bool {
    let unix = us.div_euclid(USECS_PER_SEC) + PG_EPOCH_UNIX_SECS;
    (MARIADB_TIMESTAMP_MIN_UNIX_SECS..=MARIADB_TIMESTAMP_MAX_UNIX_SECS).contains(&unix)
}

/// Whether `us` (microseconds since 2000-01-01) is inside the `DATETIME(6)` range both
/// engines accept, `1000-01-01 00:00:00` .. `9999-12-31 23:59:59.999999`.
pub fn datetime6_in_domain(us: i64) -> bool {
    let (lo, hi) = date_domain_days();
    (lo * USECS_PER_DAY..(hi + 1) * USECS_PER_DAY).contains(&us)
}

/// Whether `days` (since 2000-01-01) is inside the `DATE` range both engines accept,
/// `1000-01-01` .. `9999-12-31`.
pub fn date_in_domain(days: i32) -> bool {
    let (lo, hi) = date_domain_days();
    (lo..=hi).contains(&i64::from(days))
}

/// Checks a non-NULL or NULL value against a column type: kind, length in characters and
/// DECIMAL digits; if `row_domain`, also the rules only stored rows follow (no NUL in text,
/// TEXT at most [`MAX_TEXT_BYTES`], dates and timestamps in the domain; keys may hold any
/// value of their kind). Returns the problem in words (without the column name, which the
/// caller adds). Nullability is the caller's business.
pub(crate) fn check_value(
    ty: ColumnType,
    v: &Value,
    row_domain: bool,
) -> std::result::Result<(), String> {
    if !v.matches_type(ty) {
        return Err(format!("expected {ty}, got a {} value {v}", v.kind_name()));
    }
    match (ty, v) {
        (ColumnType::Char(n) | ColumnType::Varchar(n), Value::Text(s)) => {
            // Bytes bound the characters: count them only when the bytes do not fit already.
            if s.len() > usize::from(n) {
                let chars = s.chars().count();
                if chars > usize::from(n) {
                    return Err(format!(
                        "value of {chars} characters is too long for {ty} (value too long for type)"
                    ));
                }
            }
            if row_domain && s.as_bytes().contains(&0) {
                return Err(NUL_IN_TEXT.into());
            }
        }
        (ColumnType::Text, Value::Text(s)) => {
            if s.len() > MAX_TEXT_BYTES {
                return Err(format!(
                    "text of {} bytes is longer than MariaDB's TEXT limit of {MAX_TEXT_BYTES} \
                     bytes (Data too long)",
                    s.len()
                ));
            }
            if row_domain && s.as_bytes().contains(&0) {
                return Err(NUL_IN_TEXT.into());
            }
        }
        (ColumnType::Timestamp, Value::Timestamp(us)) if row_domain => {
            if us % USECS_PER_SEC != 0 {
                return Err(format!(
                    "timestamp '{}' has a fraction of a second; timestamp columns hold whole \
                     seconds (MariaDB TIMESTAMP stores 4 bytes of seconds)",
                    format_timestamp(*us)
                ));
            }
            if !timestamp_in_domain(*us) {
                return Err(format!(
                    "timestamp '{}' is outside MariaDB's TIMESTAMP range \
                     '1970-01-01 00:00:01' .. '2038-01-19 03:14:07' UTC",
                    format_timestamp(*us)
                ));
            }
        }
        (ColumnType::Timestamp6, Value::Timestamp(us))
            if row_domain && !timestamp6_in_domain(*us) =>
        {
            return Err(format!(
                "timestamp '{}' is outside MariaDB's TIMESTAMP(6) range \
                 '1970-01-01 00:00:01' .. '2038-01-19 03:14:07.999999' UTC",
                format_timestamp(*us)
            ));
        }
        (ColumnType::DateTime6, Value::Timestamp(us))
            if row_domain && !datetime6_in_domain(*us) =>
        {
            return Err(format!(
                "datetime '{}' is outside the DATETIME range \
                 '1000-01-01 00:00:00' .. '9999-12-31 23:59:59.999999'",
                format_timestamp(*us)
            ));
        }
        (ColumnType::Date, Value::Date(days)) if row_domain && !date_in_domain(*days) => {
            return Err(format!(
                "date '{}' is outside the DATE range '1000-01-01' .. '9999-12-31'",
                format_date(*days)
            ));
        }
        (ColumnType::Decimal { precision, scale }, Value::Decimal(d)) => {
            d.check_fits(precision, scale)?;
        }
        _ => {}
    }
    Ok(())
}

/// Why text with a NUL character is refused.
pub(crate) const NUL_IN_TEXT: &str =
    "text contains the NUL character (0x00), which PostgreSQL's UTF8 encoding refuses";

/// `s` blank-padded to `n` characters (PostgreSQL `bpchar` input, `bpchar()` in
/// varchar.c; MariaDB pads CHAR the same way when it reads the value back). Longer values are
/// returned unchanged.
pub(crate) fn pad_char(s: &str, n: u16) -> String {
    let n = usize::from(n);
    // Fast path: an ASCII-only string has as many characters as bytes.
    let chars = if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    };
    if chars >= n {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + (n - chars));
    out.push_str(s);
    out.extend(std::iter::repeat_n(' ', n - chars));
    out
}

/// The value as it is stored: CHAR(n) text blank-padded to `n` characters; a DECIMAL
/// with the column's scale (trailing zeros added, as both engines store it; a value with
/// more fraction digits is left as is, and refused by the checks); anything else unchanged.
pub(crate) fn normalize_value(ty: ColumnType, v: &Value) -> Value {
    match (ty, v) {
        (ColumnType::Char(n), Value::Text(s)) => Value::Text(pad_char(s, n)),
        (ColumnType::Decimal { scale, .. }, Value::Decimal(d)) => {
            Value::Decimal(d.with_scale(scale).unwrap_or_else(|| d.clone()))
        }
        _ => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_print_like_postgres() {
        assert_eq!(format_timestamp(0), "2000-01-01 00:00:00");
        assert_eq!(format_timestamp(-1), "1999-12-31 23:59:59.999999");
        assert_eq!(format_timestamp(1_500_000), "2000-01-01 00:00:01.5");
        assert_eq!(
            Value::timestamp_from_unix_secs(MARIADB_TIMESTAMP_MAX_UNIX_SECS).to_string(),
            "'2038-01-19 03:14:07'"
        );
        assert_eq!(
            Value::timestamp_from_unix_secs(MARIADB_TIMESTAMP_MIN_UNIX_SECS).to_string(),
            "'1970-01-01 00:00:01'"
        );
        // 2000-02-29 (leap day) and a date BC.
        assert_eq!(
            format_timestamp(59 * 86_400 * USECS_PER_SEC),
            "2000-02-29 00:00:00"
        );
        assert_eq!(
            format_timestamp(60 * 86_400 * USECS_PER_SEC),
            "2000-03-01 00:00:00"
        );
        assert!(format_timestamp(-63_200_000_000 * USECS_PER_SEC).ends_with(" BC"));
        assert_eq!(format_timestamp(i64::MAX), "infinity");
    }

    #[test]
    fn values_and_types_print() {
        assert_eq!(Value::text("it's").to_string(), "'it''s'");
        assert_eq!(Value::Null.to_string(), "NULL");
        assert_eq!(ColumnType::Char(120).to_string(), "char(120)");
        assert_eq!(ColumnType::Varchar(60).to_string(), "varchar(60)");
    }

    #[test]
    fn timestamp_domain_is_mariadb_timestamp() {
        assert!(timestamp_in_domain(0));
        assert!(!timestamp_in_domain(1));
        assert!(!timestamp_in_domain(
            (MARIADB_TIMESTAMP_MAX_UNIX_SECS + 1 - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC
        ));
        assert!(!timestamp_in_domain(-PG_EPOCH_UNIX_SECS * USECS_PER_SEC));
        assert!(timestamp_in_domain(
            (1 - PG_EPOCH_UNIX_SECS) * USECS_PER_SEC
        ));
    }

    #[test]
    fn char_padding_counts_characters() {
        assert_eq!(pad_char("ab", 4), "ab  ");
        assert_eq!(pad_char("€a", 3), "€a ");
        assert_eq!(pad_char("abcd", 2), "abcd");
    }
}
