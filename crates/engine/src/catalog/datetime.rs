//! Calendar arithmetic for the date and time types: days since PostgreSQL's epoch
//! (2000-01-01) to and from a proleptic Gregorian (year, month, day), and the ranges both
//! engines accept.
//!
//! PostgreSQL keeps a `date` as `int32` days since 2000-01-01 (`DateADT`,
//! utils/adt/date.c `date_in`: `date2j(...) - POSTGRES_EPOCH_JDATE`) and a `timestamp` as
//! `int64` microseconds since 2000-01-01 00:00:00 (datatype/timestamp.h). MariaDB's
//! DATE / DATETIME keep year, month and day fields (sql/field.cc `Field_newdate`,
//! `Field_datetimef`); the conversions here connect the two.

/// Days from 1970-01-01 to 2000-01-01 (`POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE`).
pub const PG_EPOCH_UNIX_DAYS: i64 = 10_957;
/// Microseconds per day.
pub const USECS_PER_DAY: i64 = 86_400_000_000;
/// Earliest DATE / DATETIME both engines accept: MariaDB's documented range starts at
/// `1000-01-01` (PostgreSQL goes back to 4713 BC).
pub const MIN_DATE_YMD: (i64, i64, i64) = (1000, 1, 1);
/// Latest DATE / DATETIME both engines accept: `9999-12-31` (MariaDB; PostgreSQL goes to
/// 5874897 AD).
pub const MAX_DATE_YMD: (i64, i64, i64) = (9999, 12, 31);

/// Proleptic Gregorian (year, month, day) of `z` days since 1970-01-01
/// (Howard Hinnant, "chrono-Compatible Low-Level Date Algorithms", `civil_from_days`).
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a proleptic Gregorian (year, month, day) (Hinnant,
/// `days_from_civil`); `m` in 1..=12, `d` in 1..=31 (not checked against the month).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of `days` since 2000-01-01.
pub(crate) fn ymd_of_pg_days(days: i64) -> (i64, i64, i64) {
    civil_from_days(days + PG_EPOCH_UNIX_DAYS)
}

/// Days since 2000-01-01 of (year, month, day).
pub fn pg_days_of_ymd(y: i64, m: i64, d: i64) -> i64 {
    days_from_civil(y, m, d) - PG_EPOCH_UNIX_DAYS
}

/// First and last day (days since 2000-01-01) of the DATE / DATETIME range both engines
/// accept ([`MIN_DATE_YMD`]..=[`MAX_DATE_YMD`]).
pub(crate) fn date_domain_days() -> (i64, i64) {
    let (y0, m0, d0) = MIN_DATE_YMD;
    let (y1, m1, d1) = MAX_DATE_YMD;
    (pg_days_of_ymd(y0, m0, d0), pg_days_of_ymd(y1, m1, d1))
}

/// Formats days since 2000-01-01 as PostgreSQL's ISO output does (`YYYY-MM-DD`, ` BC`
/// for years before 1).
pub fn format_date(days: i32) -> String {
    let (y, m, d) = ymd_of_pg_days(i64::from(days));
    let (year, era) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    format!("{year:04}-{m:02}-{d:02}{era}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_round_trip_and_epochs() {
        assert_eq!(pg_days_of_ymd(2000, 1, 1), 0);
        assert_eq!(pg_days_of_ymd(1970, 1, 1), -PG_EPOCH_UNIX_DAYS);
        assert_eq!(format_date(0), "2000-01-01");
        assert_eq!(format_date(59), "2000-02-29");
        assert_eq!(format_date(-1), "1999-12-31");
        for days in [-400_000, -1, 0, 1, 365, 2_900_000] {
            let (y, m, d) = ymd_of_pg_days(days);
            assert_eq!(pg_days_of_ymd(y, m, d), days);
        }
        let (lo, hi) = date_domain_days();
        assert_eq!(format_date(lo as i32), "1000-01-01");
        assert_eq!(format_date(hi as i32), "9999-12-31");
    }
}
