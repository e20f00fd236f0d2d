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
//! | `Integer` | 4, aligned to 4 | 4 |
//! | `BigInt` | 8, aligned to 8 | 8 |
//! | `Timestamp` | 8, aligned to 8 | 4 (MariaDB `TIMESTAMP(0)`) |
//! | `Char(n)` | 1 + bytes of the value padded to n chars if ≤ 127 in all, else 4 (aligned to 4) + bytes | 1–2 length bytes + max(n, bytes without trailing blanks) |
//! | `Varchar(n)` | as `Char`, unpadded | 1–2 length bytes + bytes |
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
//! the id is the entry's key (see `compact_format`).
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
//! with [`Error::TooLarge`]. B-tree deduplication (PostgreSQL 13+)
//! and suffix truncation of pivot tuples are not reflected in [`pg_index_tuple_bytes`].
//!
//! # Invariants
//! 1. Every definition a table layer uses has passed [`TableDef::validate`]; every row it
//!    stores has passed [`TableDef::check_row`]. Both refuse what either real server would
//!    refuse (the domain is the intersection of PostgreSQL 15 and MariaDB 10.11; see
//!    [`ColumnType::Timestamp`] and [`TableDef::validate`]).
//! 2. Round trip: for a row that passes `check_row`, each decoder returns
//!    [`TableDef::normalize_row`] of what was encoded (CHAR(n) blank-padded to n characters).
//! 3. Decoders are hardened: any byte string either decodes to what the encoder accepts (a
//!    row that passes `check_row`; key values of their types) or gives
//!    [`Error::Corrupted`]; none panics.
//! 4. Key order: for values of the same types, comparing [`encode_key`] outputs as unsigned
//!    bytes gives the SQL order described above.
//! 5. A CHAR value is compared, indexed and stored by its padded form: `'ab'` and `'ab  '`
//!    in a CHAR(4) column are the same value in every codec.
//!
//! # Locking
//! None: a definition is not changed once a table uses it (it is shared read-only); the
//! codecs are pure functions.
//!
//! # Crash safety
//! Not applicable: the codecs write no pages. Decoders never trust their input (invariant 3),
//! so a torn or damaged record surfaces as an error.

mod compact_format;
mod delta_format;
mod heap_format;
mod key;
mod value;

#[cfg(test)]
mod tests;

pub use compact_format::{
    compact_delete_mark, compact_index_record_bytes, compact_system_columns, decode_compact,
    decode_compact_record, encode_compact, set_compact_delete_mark, set_compact_system_columns,
    CompactRecord, COMPACT_DELETED_FLAG, DB_ROLL_PTR_BYTES, DB_TRX_ID_BYTES, MAX_ROLL_PTR,
    MAX_TRX_ID, REC_N_NEW_EXTRA_BYTES, REC_STORED_HEADER_BYTES,
};
pub use delta_format::{apply_delta, encode_delta, UNIV_SQL_NULL};
pub use heap_format::{
    decode_heap, encode_heap, maxalign, pg_index_tuple_bytes, HeapTupleData, MAXIMUM_ALIGNOF,
    SIZEOF_HEAP_TUPLE_HEADER, SIZEOF_INDEX_TUPLE_HEADER,
};
pub use key::{
    decode_key, decode_key_prefix, encode_key, key_of, KeyColumn, KEY_NOT_NULL, KEY_NULL,
};
pub use value::{
    format_timestamp, timestamp_in_domain, ColumnType, Value, MARIADB_TIMESTAMP_MAX_UNIX_SECS,
    MARIADB_TIMESTAMP_MIN_UNIX_SECS, PG_EPOCH_UNIX_SECS, USECS_PER_SEC, UTF8MB4_MAX_BYTES_PER_CHAR,
};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// A row: one value per column of its table, in column order.
pub type Row = Vec<Value>;

/// Longest table, column or index name in bytes (PostgreSQL `NAMEDATALEN` − 1; MariaDB
/// allows 64 characters).
pub const MAX_NAME_BYTES: usize = 63;
/// Most columns a table may have (InnoDB's limit of 1017; PostgreSQL allows 1600).
pub const MAX_COLUMNS: usize = 1017;
/// Most columns in one index or primary key (InnoDB's limit of 16; PostgreSQL
/// `INDEX_MAX_KEYS` is 32).
pub const MAX_INDEX_COLUMNS: usize = 16;
/// Most secondary indexes per table (InnoDB's limit of 64).
pub const MAX_SECONDARY_INDEXES: usize = 64;
/// Longest declared key of one index in bytes, in MariaDB's arithmetic
/// ([`ColumnType::mariadb_max_bytes`] summed; InnoDB's 3072-byte limit for 16 KiB pages,
/// "Specified key was too long; max key length is 3072 bytes").
pub const MAX_KEY_BYTES: usize = 3072;
/// Longest CHAR in characters (MariaDB `CHAR(M)`, M ≤ 255).
pub const MAX_CHAR_CHARS: u16 = 255;
/// Longest row in MariaDB's server format in bytes ("Row size too large. The maximum row
/// size for the used table type, not counting BLOBs, is 65535").
pub const MAX_MARIADB_ROW_BYTES: usize = 65_535;

/// A column of a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Column name (compared without regard to ASCII case, as unquoted SQL identifiers).
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// Whether it accepts NULL (`false` = NOT NULL).
    pub nullable: bool,
}

impl Column {
    /// A NOT NULL column.
    pub fn not_null(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: false,
        }
    }

    /// A column that accepts NULL.
    pub fn nullable(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: true,
        }
    }
}

/// A secondary index of a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Index name, unique within the table.
    pub name: String,
    /// Indexed columns, as positions in [`TableDef::columns`], in key order.
    pub columns: Vec<usize>,
    /// Whether the index refuses duplicate keys (keys with a NULL never collide, as in SQL).
    pub unique: bool,
}

impl IndexDef {
    /// Whether `row`'s key in this index has a NULL column: such a key collides with no
    /// other in a unique index (nbtinsert.c `_bt_doinsert` `anynullkeys`; row0ins.cc
    /// `row_ins_scan_sec_index_for_duplicate`).
    pub fn key_has_null(&self, row: &Row) -> bool {
        self.columns.iter().any(|&c| row[c].is_null())
    }
}

/// Definition of a table: its columns, primary key and secondary indexes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Table name.
    pub name: String,
    /// Columns in table order (PostgreSQL attnum − 1).
    pub columns: Vec<Column>,
    /// Primary key columns, as positions in `columns`, in key order.
    pub primary_key: Vec<usize>,
    /// Secondary indexes only (the primary key is not listed here).
    pub indexes: Vec<IndexDef>,
}

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::Catalog(format!("{what} has an empty name")));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::Catalog(format!(
            "{what} name \"{name}\" is {} bytes long; the limit is {MAX_NAME_BYTES} bytes \
             (PostgreSQL NAMEDATALEN)",
            name.len()
        )));
    }
    Ok(())
}

impl TableDef {
    /// Checks that the definition is one both real engines would accept:
    /// a table name; 1..=[`MAX_COLUMNS`] columns with unique names (ASCII case ignored);
    /// `Char(n)` with 1 ≤ n ≤ [`MAX_CHAR_CHARS`], `Varchar(n)` with n ≥ 1; a MariaDB row size
    /// (pack lengths plus NULL-bit bytes) ≤ [`MAX_MARIADB_ROW_BYTES`]; a primary key of
    /// 1..=[`MAX_INDEX_COLUMNS`] distinct, existing, NOT NULL columns; at most
    /// [`MAX_SECONDARY_INDEXES`] secondary indexes with unique names, each of
    /// 1..=[`MAX_INDEX_COLUMNS`] distinct existing columns; every key at most
    /// [`MAX_KEY_BYTES`] declared bytes.
    ///
    /// # Errors
    /// [`Error::Catalog`] naming the table, the column or index, and the problem.
    pub fn validate(&self) -> Result<()> {
        let t = &self.name;
        check_name("table", t)?;
        if self.columns.is_empty() {
            return Err(Error::Catalog(format!("table \"{t}\" has no columns")));
        }
        if self.columns.len() > MAX_COLUMNS {
            return Err(Error::Catalog(format!(
                "table \"{t}\" has {} columns; InnoDB allows at most {MAX_COLUMNS}",
                self.columns.len()
            )));
        }
        let mut row_bytes = 0usize;
        let mut nullable = 0usize;
        for (i, c) in self.columns.iter().enumerate() {
            check_name(&format!("column {} of table \"{t}\"", i + 1), &c.name)?;
            if let Some(j) = self.columns[..i]
                .iter()
                .position(|o| o.name.eq_ignore_ascii_case(&c.name))
            {
                return Err(Error::Catalog(format!(
                    "table \"{t}\": column name \"{}\" is used by columns {} and {}",
                    c.name,
                    j + 1,
                    i + 1
                )));
            }
            match c.ty {
                ColumnType::Char(0) | ColumnType::Varchar(0) => {
                    return Err(Error::Catalog(format!(
                        "table \"{t}\", column \"{}\": length of {} must be at least 1",
                        c.name, c.ty
                    )))
                }
                ColumnType::Char(n) if n > MAX_CHAR_CHARS => {
                    return Err(Error::Catalog(format!(
                        "table \"{t}\", column \"{}\": {} is longer than MariaDB's CHAR limit \
                         of {MAX_CHAR_CHARS} characters; use varchar",
                        c.name, c.ty
                    )))
                }
                _ => {}
            }
            let max = c.ty.mariadb_max_bytes();
            row_bytes += max;
            if matches!(c.ty, ColumnType::Varchar(_)) {
                row_bytes += if max <= 255 { 1 } else { 2 };
            }
            nullable += usize::from(c.nullable);
        }
        row_bytes += nullable.div_ceil(8);
        if row_bytes > MAX_MARIADB_ROW_BYTES {
            return Err(Error::Catalog(format!(
                "table \"{t}\": row size too large: {row_bytes} bytes in MariaDB's row format \
                 (utf8mb4, 4 bytes per character), the maximum is {MAX_MARIADB_ROW_BYTES}"
            )));
        }

        self.check_key_columns(&format!("primary key of table \"{t}\""), &self.primary_key)?;
        for &c in &self.primary_key {
            let col = &self.columns[c];
            if col.nullable {
                return Err(Error::Catalog(format!(
                    "primary key of table \"{t}\": column \"{}\" is nullable; primary key \
                     columns must be NOT NULL",
                    col.name
                )));
            }
        }
        if self.indexes.len() > MAX_SECONDARY_INDEXES {
            return Err(Error::Catalog(format!(
                "table \"{t}\" has {} secondary indexes; InnoDB allows at most \
                 {MAX_SECONDARY_INDEXES}",
                self.indexes.len()
            )));
        }
        for (i, ix) in self.indexes.iter().enumerate() {
            check_name(&format!("index {} of table \"{t}\"", i + 1), &ix.name)?;
            if self.indexes[..i]
                .iter()
                .any(|o| o.name.eq_ignore_ascii_case(&ix.name))
            {
                return Err(Error::Catalog(format!(
                    "table \"{t}\": index name \"{}\" is used twice",
                    ix.name
                )));
            }
            self.check_key_columns(
                &format!("index \"{}\" of table \"{t}\"", ix.name),
                &ix.columns,
            )?;
        }
        Ok(())
    }

    fn check_key_columns(&self, what: &str, cols: &[usize]) -> Result<()> {
        if cols.is_empty() {
            return Err(Error::Catalog(format!("{what} has no columns")));
        }
        if cols.len() > MAX_INDEX_COLUMNS {
            return Err(Error::Catalog(format!(
                "{what} has {} columns; InnoDB allows at most {MAX_INDEX_COLUMNS}",
                cols.len()
            )));
        }
        let mut key_bytes = 0;
        for (k, &c) in cols.iter().enumerate() {
            let Some(col) = self.columns.get(c) else {
                return Err(Error::Catalog(format!(
                    "{what} names column position {c}, but the table has {} columns",
                    self.columns.len()
                )));
            };
            if cols[..k].contains(&c) {
                return Err(Error::Catalog(format!(
                    "{what} names column \"{}\" twice",
                    col.name
                )));
            }
            key_bytes += col.ty.mariadb_max_bytes();
        }
        if key_bytes > MAX_KEY_BYTES {
            return Err(Error::Catalog(format!(
                "{what}: key of up to {key_bytes} bytes is too long; max key length is \
                 {MAX_KEY_BYTES} bytes (InnoDB, utf8mb4 counts 4 bytes per character)"
            )));
        }
        Ok(())
    }

    /// Position of the column called `name` (ASCII case ignored).
    ///
    /// # Errors
    /// [`Error::Catalog`] if the table has no such column.
    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::Catalog(format!(
                    "column \"{name}\" of table \"{}\" does not exist",
                    self.name
                ))
            })
    }

    /// Refuses a row that does not have one value per column.
    ///
    /// # Errors
    /// [`Error::InvalidValue`] naming the table and both counts.
    pub fn check_width(&self, row: &Row) -> Result<()> {
        if row.len() != self.columns.len() {
            return Err(Error::InvalidValue(format!(
                "table \"{}\" has {} columns, the row has {} values",
                self.name,
                self.columns.len(),
                row.len()
            )));
        }
        Ok(())
    }

    /// Checks a row against the definition: one value per column, of the column's type,
    /// not NULL in a NOT NULL column, text of at most `n` characters, timestamps in the
    /// domain described in [`ColumnType::Timestamp`] (whole seconds in MariaDB's TIMESTAMP
    /// range).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] naming the table, the column and the problem.
    pub fn check_row(&self, row: &Row) -> Result<()> {
        self.check_width(row)?;
        for (c, v) in self.columns.iter().zip(row) {
            if v.is_null() {
                if !c.nullable {
                    return Err(Error::InvalidValue(format!(
                        "null value in column \"{}\" of table \"{}\" violates not-null \
                         constraint",
                        c.name, self.name
                    )));
                }
                continue;
            }
            value::check_value(c.ty, v, true).map_err(|problem| {
                Error::InvalidValue(format!(
                    "column \"{}\" of table \"{}\": {problem}",
                    c.name, self.name
                ))
            })?;
        }
        Ok(())
    }

    /// The row as both engines store it: CHAR(n) text blank-padded to `n` characters
    /// (PostgreSQL `bpchar`; InnoDB CHAR), everything else unchanged. The codecs pad on their
    /// own; use this to compare a row with a decoded one, or before comparing versions.
    pub fn normalize_row(&self, row: &Row) -> Row {
        row.iter()
            .enumerate()
            .map(|(i, v)| match self.columns.get(i) {
                Some(c) => value::normalize_value(c.ty, v),
                None => v.clone(),
            })
            .collect()
    }

    /// Columns referenced by the primary key or any secondary index, ascending and without
    /// duplicates: PostgreSQL's "indexed attributes"; an update that changes none of them
    /// (bitwise) may be HOT (heapam.c `heap_update`: `RelationGetIndexAttrBitmap(...,
    /// INDEX_ATTR_BITMAP_ALL)` and `HeapDetermineModifiedColumns` in 15,
    /// `HeapDetermineColumnsInfo` in 16).
    pub fn indexed_columns(&self) -> Vec<usize> {
        let mut cols: Vec<usize> = self
            .primary_key
            .iter()
            .chain(self.indexes.iter().flat_map(|ix| ix.columns.iter()))
            .copied()
            .collect();
        cols.sort_unstable();
        cols.dedup();
        cols
    }

    /// Columns of an InnoDB secondary index record of `self.indexes[index]`: the index's
    /// columns, then the primary key columns not among them (InnoDB
    /// `dict_index_build_internal_non_clust`: a secondary record carries the primary key,
    /// its logical pointer to the row).
    ///
    /// # Panics
    /// If `index` is not a position in `self.indexes`.
    pub fn secondary_record_columns(&self, index: usize) -> Vec<usize> {
        let mut cols = self.indexes[index].columns.clone();
        for &c in &self.primary_key {
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
        cols
    }

    /// sysbench's `sbtest{n}` table (oltp_common.lua `create_table`): id INTEGER primary key,
    /// k INTEGER with the secondary index `k_{n}`, c CHAR(120), pad CHAR(60), all NOT NULL.
    pub fn sbtest(n: u32) -> TableDef {
        TableDef {
            name: format!("sbtest{n}"),
            columns: vec![
                Column::not_null("id", ColumnType::Integer),
                Column::not_null("k", ColumnType::Integer),
                Column::not_null("c", ColumnType::Char(120)),
                Column::not_null("pad", ColumnType::Char(60)),
            ],
            primary_key: vec![0],
            indexes: vec![IndexDef {
                name: format!("k_{n}"),
                columns: vec![1],
                unique: false,
            }],
        }
    }

    /// The key of `columns` for a key given as `values` (a lookup by primary key or index
    /// key), encoded with [`encode_key`].
    ///
    /// # Errors
    /// [`Error::InvalidValue`] when the number of values differs from the columns' or a
    /// value does not fit its column's type; [`Error::Catalog`] for a bad column position.
    pub fn key_from_values(&self, columns: &[usize], values: &[Value]) -> Result<Vec<u8>> {
        if values.len() != columns.len() {
            return Err(Error::InvalidValue(format!(
                "table {}: the key has {} columns, {} values given",
                self.name,
                columns.len(),
                values.len()
            )));
        }
        let mut out = Vec::new();
        encode_key(&self.key_columns(columns)?, values, &mut out)?;
        Ok(out)
    }

    /// The key columns (type and nullability) of `columns`, for [`encode_key`] and
    /// [`decode_key`].
    ///
    /// # Errors
    /// [`Error::Catalog`] if a position is not a column of the table.
    pub fn key_columns(&self, columns: &[usize]) -> Result<Vec<KeyColumn>> {
        columns
            .iter()
            .map(|&c| {
                self.column(c).map(|col| KeyColumn {
                    ty: col.ty,
                    nullable: col.nullable,
                })
            })
            .collect()
    }

    fn column(&self, c: usize) -> Result<&Column> {
        self.columns.get(c).ok_or_else(|| {
            Error::Catalog(format!(
                "table \"{}\" has {} columns; there is no column at position {c}",
                self.name,
                self.columns.len()
            ))
        })
    }

    /// Column types of `columns`.
    ///
    /// # Errors
    /// [`Error::Catalog`] if a position is not a column of the table.
    pub fn column_types(&self, columns: &[usize]) -> Result<Vec<ColumnType>> {
        columns
            .iter()
            .map(|&c| self.column(c).map(|col| col.ty))
            .collect()
    }
}
