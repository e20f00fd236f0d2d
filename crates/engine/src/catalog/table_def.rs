//! Table definitions: columns, secondary indexes and the table itself, with the checks that
//! a definition (`TableDef::validate`) and a row (`TableDef::check_row`) pass before a table
//! layer uses them.
//!
//! The limits are the intersection of PostgreSQL 15 and MariaDB 10.11 (the stricter of the
//! two for each): name length (PostgreSQL `NAMEDATALEN`), columns, index columns and key
//! length (InnoDB, dict0mem.h / ha_innodb.cc "Specified key was too long"), MariaDB's row
//! size (sql/table.cc "Row size too large"). InnoDB's clustered and secondary record layout
//! (`dict_index_build_internal_clust`, `dict_index_build_internal_non_clust`) decides
//! [`TableDef::secondary_record_columns`]; PostgreSQL's `RelationGetIndexAttrBitmap`
//! decides [`TableDef::indexed_columns`].

use super::decimal::{DECIMAL_MAX_PRECISION, DECIMAL_MAX_SCALE};
use super::key::{encode_key, encode_pairs, KeyColumn};
use super::value::{self, ColumnType, Value};
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
/// Bytes a TEXT column counts in MariaDB's row size: its pack length, 2 length bytes and an
/// 8-byte pointer (sql/field.h `Field_blob::pack_length`, `portable_sizeof_char_ptr`).
pub const TEXT_PACK_LENGTH: usize = 10;
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

/// A declared foreign key: `columns` of this table reference `referenced_columns` of
/// `referenced_table` (SQL `CONSTRAINT name FOREIGN KEY (columns) REFERENCES
/// referenced_table (referenced_columns)`).
///
/// Declared only, **not enforced**: no insert, update or delete checks the referenced
/// table, and no index is created for it (InnoDB would add one on `columns`,
/// dict0dict.cc `dict_foreign_add_to_cache`; PostgreSQL checks with triggers,
/// ri_triggers.c). It records the schema the workloads declare (TPC-C, TPC-H) so that
/// both servers can be given the same DDL. [`TableDef::validate`] checks its shape only:
/// the columns exist in this table, there are as many referenced columns, the names are
/// valid; the referenced table and its columns are not looked up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKeyDef {
    /// Constraint name, unique among the table's foreign keys.
    pub name: String,
    /// Referencing columns, as positions in [`TableDef::columns`].
    pub columns: Vec<usize>,
    /// Name of the referenced table.
    pub referenced_table: String,
    /// Names of the referenced columns, one per entry of `columns`.
    pub referenced_columns: Vec<String>,
}

/// Definition of a table: its columns, primary key, secondary indexes and declared
/// foreign keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Table name.
    pub name: String,
    /// Columns in table order (PostgreSQL attnum − 1).
    pub columns: Vec<Column>,
    /// Primary key columns, as positions in `columns`, in key order. Empty: the table has
    /// no primary key (SQL allows it; TPC-C's `history` has none). The `postgres` design
    /// then keeps a plain heap with no primary-key index; the `innodb` design clusters the
    /// rows on InnoDB's hidden 6-byte `DB_ROW_ID` (dict0dict.cc
    /// `dict_index_build_internal_clust`, the GEN_CLUST_INDEX). Reads and writes by
    /// primary key are refused on such a table ([`TableDef::require_primary_key`]).
    pub primary_key: Vec<usize>,
    /// Secondary indexes only (the primary key is not listed here).
    pub indexes: Vec<IndexDef>,
    /// Declared foreign keys ([`ForeignKeyDef`]: not enforced). Absent in catalogs written
    /// before they existed, which decode with none, and left out of the catalog's JSON when
    /// there are none, so a table without them logs the same catalog bytes as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKeyDef>,
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
    /// `Char(n)` with 1 ≤ n ≤ [`MAX_CHAR_CHARS`], `Varchar(n)` with n ≥ 1, `Decimal` with
    /// 1 ≤ p ≤ 65 and s ≤ min(p, 38); a MariaDB row size (pack lengths, TEXT counting
    /// [`TEXT_PACK_LENGTH`], plus NULL-bit bytes) ≤ [`MAX_MARIADB_ROW_BYTES`]; no primary key
    /// (`primary_key` empty) or one of 1..=[`MAX_INDEX_COLUMNS`] distinct, existing, NOT
    /// NULL columns; at most
    /// [`MAX_SECONDARY_INDEXES`] secondary indexes with unique names, each of
    /// 1..=[`MAX_INDEX_COLUMNS`] distinct existing columns; every key at most
    /// [`MAX_KEY_BYTES`] declared bytes, and no TEXT key column; foreign keys of the shape
    /// [`ForeignKeyDef`] describes.
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
                ColumnType::Decimal { precision, scale }
                    if precision == 0
                        || precision > DECIMAL_MAX_PRECISION
                        || scale > precision
                        || scale > DECIMAL_MAX_SCALE =>
                {
                    return Err(Error::Catalog(format!(
                        "table \"{t}\", column \"{}\": {} is outside the precision and scale \
                         both engines accept (1 <= precision <= {DECIMAL_MAX_PRECISION}, \
                         0 <= scale <= min(precision, {DECIMAL_MAX_SCALE}); MariaDB's limits)",
                        c.name, c.ty
                    )))
                }
                _ => {}
            }
            if c.ty == ColumnType::Text {
                // A BLOB/TEXT field counts its pack length in the server's row:
                // 2 length bytes + an 8-byte pointer (Field_blob::pack_length).
                row_bytes += TEXT_PACK_LENGTH;
            } else {
                let max = c.ty.mariadb_max_bytes();
                row_bytes += max;
                if matches!(c.ty, ColumnType::Varchar(_)) {
                    row_bytes += if max <= 255 { 1 } else { 2 };
                }
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

        if self.has_primary_key() {
            self.check_key_columns(&format!("primary key of table \"{t}\""), &self.primary_key)?;
        }
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
        for (i, fk) in self.foreign_keys.iter().enumerate() {
            self.check_foreign_key(i, fk)?;
        }
        Ok(())
    }

    /// Shape check of the `i`-th foreign key (see [`ForeignKeyDef`]).
    fn check_foreign_key(&self, i: usize, fk: &ForeignKeyDef) -> Result<()> {
        let t = &self.name;
        check_name(&format!("foreign key {} of table \"{t}\"", i + 1), &fk.name)?;
        let what = format!("foreign key \"{}\" of table \"{t}\"", fk.name);
        if self.foreign_keys[..i]
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&fk.name))
        {
            return Err(Error::Catalog(format!("{what}: the name is used twice")));
        }
        check_name(&format!("table referenced by {what}"), &fk.referenced_table)?;
        if fk.columns.is_empty() {
            return Err(Error::Catalog(format!("{what} has no columns")));
        }
        if fk.columns.len() > MAX_INDEX_COLUMNS {
            return Err(Error::Catalog(format!(
                "{what} has {} columns; InnoDB allows at most {MAX_INDEX_COLUMNS}",
                fk.columns.len()
            )));
        }
        if fk.columns.len() != fk.referenced_columns.len() {
            return Err(Error::Catalog(format!(
                "{what}: {} referencing columns but {} referenced columns \
                 (number of referencing and referenced columns for foreign key disagree)",
                fk.columns.len(),
                fk.referenced_columns.len()
            )));
        }
        for (k, &c) in fk.columns.iter().enumerate() {
            let Some(col) = self.columns.get(c) else {
                return Err(Error::Catalog(format!(
                    "{what} names column position {c}, but the table has {} columns",
                    self.columns.len()
                )));
            };
            if fk.columns[..k].contains(&c) {
                return Err(Error::Catalog(format!(
                    "{what} names column \"{}\" twice",
                    col.name
                )));
            }
        }
        for (k, name) in fk.referenced_columns.iter().enumerate() {
            check_name(&format!("referenced column {} of {what}", k + 1), name)?;
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
            if col.ty == ColumnType::Text {
                return Err(Error::Catalog(format!(
                    "{what}: column \"{}\" is TEXT; MariaDB indexes a TEXT column only by a \
                     prefix (BLOB/TEXT column used in key specification without a key length), \
                     which is not modelled",
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

    /// Whether the table has a primary key (`primary_key` not empty).
    pub fn has_primary_key(&self) -> bool {
        !self.primary_key.is_empty()
    }

    /// Refuses `what` (e.g. "a read by primary key") on a table without a primary key.
    ///
    /// # Errors
    /// [`Error::Catalog`] naming the table, saying it has no primary key and what it can do
    /// instead (an unbounded scan, a secondary-index read).
    pub fn require_primary_key(&self, what: &str) -> Result<()> {
        if self.has_primary_key() {
            return Ok(());
        }
        Err(Error::Catalog(format!(
            "table \"{}\" has no primary key: {what} needs one (read the table with an \
             unbounded scan or through a secondary index)",
            self.name
        )))
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
    /// its logical pointer to the row). A table without a primary key carries the hidden
    /// 6-byte `DB_ROW_ID` instead, which is no column and not listed here
    /// ([`crate::catalog::DB_ROW_ID_BYTES`]).
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
            foreign_keys: Vec::new(),
        }
    }

    /// The key of the leading `values.len()` columns of `columns` (a lookup by a leading
    /// part of an index key, as `WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?` on the index
    /// `(c_w_id, c_d_id, c_last, c_first)`); the encoding is a byte prefix of every full key
    /// that starts with these values ([`encode_key`] encodes column by column).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] for no values or more values than columns, or a value that
    /// does not fit its column's type; [`Error::Catalog`] for a bad column position.
    pub fn key_prefix_from_values(&self, columns: &[usize], values: &[Value]) -> Result<Vec<u8>> {
        if values.is_empty() || values.len() > columns.len() {
            return Err(Error::InvalidValue(format!(
                "table {}: the key has {} columns, {} values given (1 to {} allowed for a \
                 leading part)",
                self.name,
                columns.len(),
                values.len(),
                columns.len()
            )));
        }
        self.key_from_values(&columns[..values.len()], values)
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
    /// [`decode_key`](super::decode_key).
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

/// The key of `row` over `columns` (positions in the table), e.g. `def.primary_key` or an
/// index's columns followed by the primary key's.
///
/// # Errors
/// [`Error::Catalog`] for a position that is not a column; [`Error::InvalidValue`] if the
/// row does not have one value per column or a value does not fit its type.
pub fn key_of(def: &TableDef, columns: &[usize], row: &Row) -> Result<Vec<u8>> {
    let types = def.key_columns(columns)?;
    def.check_width(row)?;
    let mut out = Vec::with_capacity(columns.len() * 9);
    encode_pairs(
        types.into_iter().zip(columns.iter().map(|&c| &row[c])),
        &mut out,
    )
    .map_err(|e| match e {
        Error::InvalidValue(m) => {
            Error::InvalidValue(format!("key of table \"{}\": {m}", def.name))
        }
        e => e,
    })?;
    Ok(out)
}
