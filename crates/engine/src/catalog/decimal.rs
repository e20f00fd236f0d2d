//! Exact decimal values (SQL `DECIMAL(p,s)` / `NUMERIC(p,s)`) and MariaDB's fixed-length
//! binary form of them, which is also their order-preserving key form.
//!
//! A [`Decimal`] is a sign, a coefficient of decimal digits and a scale: `-12.50` is
//! (negative, `1250`, 2). It is kept as a digit string because DECIMAL(65, s) holds more
//! digits than any machine integer.
//!
//! The binary form follows MariaDB 10.11 strings/decimal.c `decimal2bin` / `bin2decimal` /
//! `decimal_bin_size` (used by sql/field.cc `Field_new_decimal::store_value`, and stored
//! as is by InnoDB, whose type for it is `DATA_FIXBINARY`): for a column of precision `p`
//! and scale `s`, the `p − s` integer digits and the `s` fraction digits are each cut in
//! groups of 9 (`DIG_PER_DEC1`) counted from the decimal point; a full group takes 4 bytes,
//! a partial one (the leading integer digits, the trailing fraction digits) the bytes
//! `dig2bytes` gives (`{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}` for 0–9 digits); each group is
//! stored big-endian, every byte is inverted for a negative number, and the first bit of
//! the result is inverted, so that `memcmp` order is numeric order. Example from
//! decimal.c's comment: `1234567890.1234` as DECIMAL(14,4) is `81 0D FB 38 D2 04 D2`,
//! `-1234567890.1234` is `7E F2 04 C7 2D FB 2D`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Most digits of a DECIMAL: MariaDB's `DECIMAL_MAX_PRECISION` (PostgreSQL allows 1000).
pub const DECIMAL_MAX_PRECISION: u8 = 65;
/// Most fraction digits of a DECIMAL: MariaDB's `DECIMAL_MAX_SCALE` (PostgreSQL 15 allows
/// up to 1000, and scales outside 0..=p, which MariaDB refuses).
pub const DECIMAL_MAX_SCALE: u8 = 38;
/// Decimal digits per 4-byte group of the binary form (`DIG_PER_DEC1`).
const DIG_PER_DEC1: usize = 9;
/// Bytes taken by a group of 0–9 digits (decimal.c `dig2bytes`).
const DIG2BYTES: [usize; DIG_PER_DEC1 + 1] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// An exact decimal number: `(-1)^negative × digits × 10^-scale`.
///
/// Canonical form (what [`Decimal::new`] and parsing give, and what every codec accepts):
/// `digits` are ASCII digits without leading zeros (`"0"` for zero), and zero is not
/// negative. `1.5` and `1.50` are different values of this type (they differ in scale);
/// a column normalizes every value to its own scale
/// ([`TableDef::normalize_row`](super::TableDef::normalize_row)), as both engines do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Decimal {
    negative: bool,
    digits: String,
    scale: u8,
}

impl Decimal {
    /// The decimal `(-1)^negative × digits × 10^-scale`; `digits` are ASCII decimal digits
    /// (leading zeros allowed, then dropped). `None` if `digits` is empty or holds anything
    /// but digits.
    pub fn new(negative: bool, digits: &str, scale: u8) -> Option<Decimal> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = digits.trim_start_matches('0');
        let digits = if trimmed.is_empty() { "0" } else { trimmed };
        Some(Decimal {
            negative: negative && digits != "0",
            digits: digits.to_owned(),
            scale,
        })
    }

    /// The integer `v` with scale 0.
    pub fn from_i64(v: i64) -> Decimal {
        Decimal {
            negative: v < 0,
            digits: v.unsigned_abs().to_string(),
            scale: 0,
        }
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Number of fraction digits.
    pub fn scale(&self) -> u8 {
        self.scale
    }

    /// Whether the value is in canonical form (see the type's doc); a value decoded from
    /// serde may not be.
    pub fn is_canonical(&self) -> bool {
        !self.digits.is_empty()
            && self.digits.bytes().all(|b| b.is_ascii_digit())
            && (self.digits == "0" || !self.digits.starts_with('0'))
            && !(self.negative && self.digits == "0")
    }

    /// The integer digits, without leading zeros (empty for |value| < 1).
    pub fn integer_digits(&self) -> &str {
        let n = self.digits.len().saturating_sub(usize::from(self.scale));
        let int = &self.digits[..n];
        if int == "0" {
            ""
        } else {
            int
        }
    }

    /// The fraction digits, exactly `scale` of them (leading zeros kept).
    pub fn fraction_digits(&self) -> String {
        let s = usize::from(self.scale);
        if self.digits.len() >= s {
            self.digits[self.digits.len() - s..].to_owned()
        } else {
            let mut f = "0".repeat(s - self.digits.len());
            f.push_str(&self.digits);
            f
        }
    }

    /// The same value with `scale` fraction digits, trailing zeros added; `None` if that
    /// would drop a non-zero digit (values are never rounded).
    pub fn with_scale(&self, scale: u8) -> Option<Decimal> {
        if scale >= self.scale {
            let mut digits = self.digits.clone();
            if digits != "0" {
                digits.push_str(&"0".repeat(usize::from(scale - self.scale)));
            }
            return Some(Decimal {
                negative: self.negative,
                digits,
                scale,
            });
        }
        let drop = usize::from(self.scale - scale);
        let frac = self.fraction_digits();
        if frac[frac.len() - drop..].bytes().any(|b| b != b'0') {
            return None;
        }
        let mut int = self.integer_digits().to_owned();
        int.push_str(&frac[..frac.len() - drop]);
        Decimal::new(
            self.negative,
            if int.is_empty() { "0" } else { &int },
            scale,
        )
    }

    /// The value as an integer count of `10^-scale` units (`12.50` at scale 2 is 1250);
    /// `None` if `scale` would drop a non-zero digit or the count passes `i128`.
    pub fn to_units(&self, scale: u8) -> Option<i128> {
        let d = self.with_scale(scale)?;
        let v: i128 = d.digits.parse().ok()?;
        Some(if d.negative { -v } else { v })
    }

    /// The decimal `units × 10^-scale` (the inverse of [`Decimal::to_units`]).
    pub fn from_units(units: i128, scale: u8) -> Decimal {
        Decimal {
            negative: units < 0,
            digits: units.unsigned_abs().to_string(),
            scale,
        }
    }

    /// `self + other` at the larger of the two scales; `None` past `i128`.
    pub fn checked_add(&self, other: &Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let sum = self.to_units(scale)?.checked_add(other.to_units(scale)?)?;
        Some(Decimal::from_units(sum, scale))
    }

    /// Checks the value against DECIMAL(`precision`, `scale`): at most `scale` fraction
    /// digits (more would be rounded by both engines; refused here) and at most
    /// `precision − scale` integer digits. Returns the problem in words.
    pub(crate) fn check_fits(&self, precision: u8, scale: u8) -> Result<(), String> {
        if !self.is_canonical() {
            return Err(format!("decimal {self:?} is not in canonical form"));
        }
        if self.with_scale(scale).is_none() {
            return Err(format!(
                "decimal {self} has more than {scale} fraction digits \
                 (values are not rounded to the column's scale)"
            ));
        }
        let int = self.integer_digits().len();
        let max_int = usize::from(precision - scale.min(precision));
        if int > max_int {
            return Err(format!(
                "decimal {self} has {int} integer digits; decimal({precision},{scale}) allows \
                 {max_int} (numeric field overflow; MariaDB: out of range value)"
            ));
        }
        Ok(())
    }
}

impl fmt::Display for Decimal {
    /// `-12.50`: sign, integer digits (at least `0`), and `scale` fraction digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        let int = self.integer_digits();
        f.write_str(if int.is_empty() { "0" } else { int })?;
        if self.scale > 0 {
            write!(f, ".{}", self.fraction_digits())?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Decimal {
    type Err = String;

    /// Parses `[-+]digits[.digits]` (at most 255 fraction digits).
    fn from_str(s: &str) -> Result<Decimal, String> {
        let bad = || format!("invalid input syntax for type numeric: \"{s}\"");
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
        if int.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        let scale = u8::try_from(frac.len()).map_err(|_| bad())?;
        let digits = format!("{int}{frac}");
        Decimal::new(negative, &digits, scale).ok_or_else(bad)
    }
}

/// Bytes of the binary form of DECIMAL(`precision`, `scale`) (decimal.c
/// `decimal_bin_size`): e.g. DECIMAL(15,2) 7, DECIMAL(12,2) 6, DECIMAL(65,30) 30.
pub fn decimal_bin_size(precision: u8, scale: u8) -> usize {
    let intg = usize::from(precision - scale.min(precision));
    let frac = usize::from(scale);
    (intg / DIG_PER_DEC1) * 4
        + DIG2BYTES[intg % DIG_PER_DEC1]
        + (frac / DIG_PER_DEC1) * 4
        + DIG2BYTES[frac % DIG_PER_DEC1]
}

/// Appends the group of `digits` (at most 9 decimal digits) in `DIG2BYTES[width]` bytes,
/// inverted if `negative`.
fn put_group(digits: &str, width: usize, negative: bool, out: &mut Vec<u8>) {
    let x: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().unwrap_or(0)
    };
    let x = if negative { !x } else { x };
    let n = DIG2BYTES[width];
    out.extend_from_slice(&x.to_be_bytes()[4 - n..]);
}

/// Appends the binary form of `d` as DECIMAL(`precision`, `scale`) (decimal.c
/// `decimal2bin`, without its rounding: `d` must pass
/// [`Decimal::check_fits`]`(precision, scale)`, which the callers have checked).
pub(crate) fn decimal2bin(d: &Decimal, precision: u8, scale: u8, out: &mut Vec<u8>) {
    let start = out.len();
    let intg = usize::from(precision - scale.min(precision));
    let s = usize::from(scale);
    let int = d.integer_digits();
    let int = format!("{}{int}", "0".repeat(intg.saturating_sub(int.len())));
    let mut frac = d.fraction_digits();
    frac.truncate(s);
    frac.push_str(&"0".repeat(s - frac.len()));
    let neg = d.is_negative();
    let lead = intg % DIG_PER_DEC1;
    if lead > 0 {
        put_group(&int[..lead], lead, neg, out);
    }
    for g in int.as_bytes()[lead..].chunks(DIG_PER_DEC1) {
        put_group(std::str::from_utf8(g).unwrap_or(""), DIG_PER_DEC1, neg, out);
    }
    let full = s / DIG_PER_DEC1 * DIG_PER_DEC1;
    for g in frac.as_bytes()[..full].chunks(DIG_PER_DEC1) {
        put_group(std::str::from_utf8(g).unwrap_or(""), DIG_PER_DEC1, neg, out);
    }
    if s > full {
        put_group(&frac[full..], s - full, neg, out);
    }
    if out.len() > start {
        out[start] ^= 0x80;
    }
}

/// Reads the binary form of DECIMAL(`precision`, `scale`) from `bytes`, which must have
/// exactly [`decimal_bin_size`] bytes (decimal.c `bin2decimal`). Stricter than MariaDB's
/// reader: a group holding more digits than it may, or a negative zero, is refused, so that
/// every accepted byte string is what [`decimal2bin`] writes. Returns the problem in words.
pub(crate) fn bin2decimal(bytes: &[u8], precision: u8, scale: u8) -> Result<Decimal, String> {
    let size = decimal_bin_size(precision, scale);
    if bytes.len() != size {
        return Err(format!(
            "decimal({precision},{scale}) field of {} bytes (expected {size})",
            bytes.len()
        ));
    }
    let Some(&first) = bytes.first() else {
        return Err("empty decimal field".into());
    };
    let negative = first & 0x80 == 0;
    let mut b = bytes.to_vec();
    b[0] ^= 0x80;
    if negative {
        for x in &mut b {
            *x = !*x;
        }
    }
    let intg = usize::from(precision - scale.min(precision));
    let s = usize::from(scale);
    let mut pos = 0;
    let mut digits = String::with_capacity(intg + s);
    let mut group = |width: usize, digits: &mut String| -> Result<(), String> {
        let n = DIG2BYTES[width];
        let x = b[pos..pos + n]
            .iter()
            .fold(0u32, |acc, &y| (acc << 8) | u32::from(y));
        pos += n;
        if u64::from(x) >= 10u64.pow(width as u32) {
            return Err(format!("decimal group {x} has more than {width} digits"));
        }
        digits.push_str(&format!("{x:0width$}"));
        Ok(())
    };
    let lead = intg % DIG_PER_DEC1;
    if lead > 0 {
        group(lead, &mut digits)?;
    }
    for _ in 0..intg / DIG_PER_DEC1 {
        group(DIG_PER_DEC1, &mut digits)?;
    }
    for _ in 0..s / DIG_PER_DEC1 {
        group(DIG_PER_DEC1, &mut digits)?;
    }
    if s % DIG_PER_DEC1 > 0 {
        group(s % DIG_PER_DEC1, &mut digits)?;
    }
    let is_zero = digits.bytes().all(|c| c == b'0');
    if negative && is_zero {
        return Err("decimal is a negative zero".into());
    }
    Decimal::new(
        negative,
        if digits.is_empty() { "0" } else { &digits },
        scale,
    )
    .ok_or_else(|| "decimal has no digits".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(d("-12.50").to_string(), "-12.50");
        assert_eq!(d("0.05").to_string(), "0.05");
        assert_eq!(d("-0.00").to_string(), "0.00");
        assert_eq!(d("007").to_string(), "7");
        assert_eq!(d(".5").to_string(), "0.5");
        assert!("1.2.3".parse::<Decimal>().is_err());
        assert!("".parse::<Decimal>().is_err());
        assert_eq!(d("1.5").with_scale(3).unwrap().to_string(), "1.500");
        assert_eq!(d("1.500").with_scale(1).unwrap(), d("1.5"));
        assert!(d("1.55").with_scale(1).is_none());
    }

    #[test]
    fn binary_form_is_decimal_c_example() {
        let mut out = Vec::new();
        decimal2bin(&d("1234567890.1234"), 14, 4, &mut out);
        assert_eq!(out, [0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2]);
        out.clear();
        decimal2bin(&d("-1234567890.1234"), 14, 4, &mut out);
        assert_eq!(out, [0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D]);
        assert_eq!(bin2decimal(&out, 14, 4).unwrap(), d("-1234567890.1234"));
        assert_eq!(decimal_bin_size(14, 4), 7);
        assert_eq!(decimal_bin_size(15, 2), 7);
        assert_eq!(decimal_bin_size(12, 2), 6);
        assert_eq!(decimal_bin_size(65, 30), 30);
        assert_eq!(decimal_bin_size(4, 4), 2);
    }
}
