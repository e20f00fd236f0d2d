//! Catalog: table definitions, values, and the byte formats a row takes in the two engines
//! mvcclab models, with the sizes the real engines give them.
//!
//! mvcclab counts pages, and a row's byte size decides how many rows fit on a page, so each
//! format reproduces the real engine's arithmetic byte for byte for the features modelled:
//!
//! | codec | follows | used by |
//! |---|---|---|
//! | [`encode_heap`] / [`decode_heap`] | PostgreSQL 15 heap tuple data (htup_details.h; heaptuple.c `heap_compute_data_size`, `heap_fill_tuple`) | heap tables (`postgres` preset) |
//! | [`encode_compact`] / [`decode_compact`] | InnoDB ROW_FORMAT=COMPACT clustered-index record (MariaDB 10.11 rem0rec.cc `rec_convert_dtuple_to_rec_comp`; row0mysql.cc `row_mysql_store_col_in_innobase_format`) | clustered tables (`innodb` preset) |
//! | [`encode_delta`] / [`apply_delta`] | the changed-columns part of an InnoDB update undo record (trx0rec.cc `trx_undo_page_report_modify`) | undo log (delta version storage) |
//! | [`encode_key`] / [`decode_key`] | an order-preserving (memcmp) key encoding of our own | B+tree keys of every index |
//!
//! Sizes per value (NULLs take no data bytes in either engine):
//!
//! | type | PostgreSQL heap | InnoDB COMPACT |
//! |---|---|---|
//! | `TinyInt` | 2, aligned to 2 (int2: PostgreSQL has no 1-byte integer) | 1 |
//! | `SmallInt` | 2, aligned to 2 | 2 |
//! | `Integer` | 4, aligned to 4 | 4 |
//! | `BigInt` | 8, aligned to 8 | 8 |
//! | `Decimal { p, s }` | 3 + 2 per base-10000 digit (short varlena header, `NumericShort`) | `decimal_bin_size(p, s)`: 4 per 9 digits, leftovers by `dig2bytes` |
//! | `Date` | 4, aligned to 4 | 3 |
//! | `Timestamp` | 8, aligned to 8 | 4 (MariaDB `TIMESTAMP(0)`) |
//! | `Timestamp6` | 8, aligned to 8 | 7 (MariaDB `TIMESTAMP(6)`) |
//! | `DateTime6` | 8, aligned to 8 | 8 (MariaDB `DATETIME(6)`) |
//! | `Char(n)` | 1 + bytes of the value padded to n chars if ≤ 127 in all, else 4 (aligned to 4) + bytes | 1–2 length bytes + max(n, bytes without trailing blanks) |
//! | `Varchar(n)` | as `Char`, unpadded | 1–2 length bytes + bytes |
//! | `Text` | as `Varchar` | 1–2 length bytes + bytes |
//!
//! Files: `value` (types, values, their domain), `projection` (the columns a scan
//! decodes), `decimal` (the DECIMAL value and MariaDB's
//! binary form), `datetime` (calendar arithmetic), `table_def` (columns, indexes, foreign
//! keys, tables), `row_check` (the row check), and one file per codec.
//!
//! [`pg_index_tuple_bytes`] and [`compact_index_record_bytes`] give the size of an index
//! entry in each engine, for reports.
//!
//! Worked example, sysbench's `sbtest` row (`id INTEGER, k INTEGER, c CHAR(120),
//! pad CHAR(60)`, all NOT NULL, ASCII text): the PostgreSQL heap data is
//! 4 + 4 + (1 + 120) + (1 + 60) = 190 bytes behind a 24-byte tuple header; the InnoDB
//! clustered record is 2 length bytes + 5 header + 4 (id) + 6 (DB_TRX_ID) +
//! 7 (DB_ROLL_PTR) + 4 (k) + 120 + 60 = 208 bytes, stored as 200 in the B-tree entry's
//! value: 4 header bytes belong to the page layer (the entry header stands for them) and
//! the id is the entry's key (see `compact_format`). The same row in a table without a
//! primary key takes 6 bytes more in InnoDB (the hidden `DB_ROW_ID`, then the entry's key)
//! and nothing more in PostgreSQL (a plain heap).
//!
//! Text is UTF-8 (PostgreSQL server encoding UTF8; MariaDB utf8mb4). Comparison is by code
//! point (PostgreSQL `COLLATE "C"`; MariaDB `utf8mb4_bin`), CHAR comparisons ignore trailing
//! blanks (PostgreSQL `bpcharcmp`), and NULLs sort last (PostgreSQL's default `ASC NULLS
//! LAST`). The harness should create the real databases with these collations
//! (`initdb --locale=C`; `utf8mb4_bin`) for index orders to match.
//!
//! Not modelled: TOAST (PostgreSQL compresses or moves out of line values of tuples over
//! ~2 KB) and InnoDB off-page columns (values moved to overflow pages when a record would
//! exceed about half a page); rows must fit their page inline, which the table layers check
//! with [`Error::TooLarge`](crate::error::Error::TooLarge), and rows holding TEXT must stay
//! under both engines' thresholds ([`TableDef::check_row`]). B-tree deduplication
//! (PostgreSQL 13+) and suffix truncation of pivot tuples are not reflected in
//! [`pg_index_tuple_bytes`]. Declared foreign keys ([`ForeignKeyDef`]) are not enforced.
//!
//! # Invariants
//! 1. Every definition a table layer uses has passed [`TableDef::validate`]; every row it
//!    stores has passed [`TableDef::check_row`]. Both refuse what either real server would
//!    refuse (the domain is the intersection of PostgreSQL 15 and MariaDB 10.11; see
//!    [`ColumnType::Timestamp`] and [`TableDef::validate`]).
//! 2. Round trip: for a row that passes `check_row`, each decoder returns
//!    [`TableDef::normalize_row`] of what was encoded (CHAR(n) blank-padded to n characters,
//!    DECIMAL at the column's scale).
//! 3. Decoders are hardened: any byte string either decodes to what the encoder accepts (a
//!    row whose values pass `check_row`; the row-size limit for TEXT is not the decoders'
//!    business; key values of their types) or gives
//!    [`StorageError::Corrupted`](crate::error::StorageError::Corrupted)(Error::Storage(StorageError::Corrupted)); none panics.
//! 4. Key order: for values of the same types, comparing [`encode_key`] outputs as unsigned
//!    bytes gives the SQL order described above.
//! 5. A CHAR value is compared, indexed and stored by its padded form: `'ab'` and `'ab  '`
//!    in a CHAR(4) column are the same value in every codec; likewise `1.5` and `1.50` in a
//!    DECIMAL(p,2) column.
//!
//! # Locking
//! None: a definition is not changed once a table uses it (it is shared read-only); the
//! codecs are pure functions.
//!
//! # Crash safety
//! Not applicable: the codecs write no pages. Decoders never trust their input (invariant 3),
//! so a torn or damaged record surfaces as an error.

mod compact_format;
mod datetime;
mod decimal;
mod delta_format;
mod heap_format;
mod key;
mod projection;
mod row_check;
mod table_def;
mod value;

#[cfg(test)]
mod tests;

pub use compact_format::{
    compact_clustered_record_bytes, compact_delete_mark, compact_index_record_bytes,
    compact_system_columns, decode_compact, decode_compact_record, decode_compact_record_projected,
    encode_compact, set_compact_delete_mark, set_compact_system_columns, CompactRecord,
    COMPACT_DELETED_FLAG, DB_ROLL_PTR_BYTES, DB_ROW_ID_BYTES, DB_TRX_ID_BYTES,
    INNODB_REC_NEEDS_EXT_BYTES, MAX_ROLL_PTR, MAX_ROW_ID, MAX_TRX_ID, REC_N_NEW_EXTRA_BYTES,
    REC_STORED_HEADER_BYTES,
};
pub use datetime::{
    format_date, pg_days_of_ymd, MAX_DATE_YMD, MIN_DATE_YMD, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY,
};
pub use decimal::{decimal_bin_size, Decimal, DECIMAL_MAX_PRECISION, DECIMAL_MAX_SCALE};
pub use delta_format::{apply_delta, encode_delta, UNIV_SQL_NULL};
pub use heap_format::{
    decode_heap, decode_heap_projected, encode_heap, maxalign, pg_index_tuple_bytes, HeapTupleData,
    MAXIMUM_ALIGNOF, SIZEOF_HEAP_TUPLE_HEADER, SIZEOF_INDEX_TUPLE_HEADER, TOAST_TUPLE_THRESHOLD,
};
pub use key::{decode_key, decode_key_prefix, encode_key, KeyColumn, KEY_NOT_NULL, KEY_NULL};
pub use projection::Projection;
pub use table_def::{
    key_of, Column, ForeignKeyDef, IndexDef, Row, TableDef, MAX_CHAR_CHARS, MAX_COLUMNS,
    MAX_INDEX_COLUMNS, MAX_KEY_BYTES, MAX_MARIADB_ROW_BYTES, MAX_NAME_BYTES, MAX_SECONDARY_INDEXES,
    TEXT_PACK_LENGTH,
};
pub use value::{
    date_in_domain, datetime6_in_domain, format_timestamp, timestamp6_in_domain,
    timestamp_in_domain, ColumnType, Value, MARIADB_TIMESTAMP_MAX_UNIX_SECS,
    MARIADB_TIMESTAMP_MIN_UNIX_SECS, MAX_TEXT_BYTES, PG_EPOCH_UNIX_SECS, USECS_PER_SEC,
    UTF8MB4_MAX_BYTES_PER_CHAR,
};
