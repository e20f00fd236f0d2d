//! The row check ([`TableDef::check_row`]): what a row must satisfy before a table layer
//! stores it, in both engines.
//!
//! Per value, the domain of `value::check_value` (the intersection of PostgreSQL 15 and
//! MariaDB 10.11). Per row, for rows holding a TEXT value, the sizes that keep the row
//! inline in both engines, since neither TOAST nor InnoDB off-page columns are modelled:
//!
//! - PostgreSQL: the heap tuple (header and data, [`encode_heap`]) at most
//!   [`TOAST_TUPLE_THRESHOLD`] (2032 bytes for 8 KiB pages); a longer tuple would have its
//!   varlena attributes compressed or moved to the TOAST table (heapam.c
//!   `heap_prepare_insert`, heaptoast.c `heap_toast_insert_or_update`).
//! - InnoDB: the clustered-index record ([`compact_clustered_record_bytes`]) below
//!   [`INNODB_REC_NEEDS_EXT_BYTES`] (8126 bytes for 16 KiB pages); a larger record would
//!   have its longest BLOB/TEXT fields stored off page (page0zip.h `page_zip_rec_needs_ext`,
//!   btr0cur.cc `btr_cur_optimistic_insert` → `dtuple_convert_big_rec`).
//!
//! Rows without TEXT are checked value by value only, as before TEXT existed (a long
//! VARCHAR row could exceed these sizes too; the table layers refuse rows that do not fit a
//! page with [`Error::TooLarge`]).
//!
//! It lives above the codecs (it encodes the row to measure it) and below the table layers.

use super::compact_format::{compact_clustered_record_bytes, INNODB_REC_NEEDS_EXT_BYTES};
use super::heap_format::{encode_heap, TOAST_TUPLE_THRESHOLD};
use super::value::{check_value, ColumnType};
use super::{Row, TableDef};
use crate::error::{Error, Result};

impl TableDef {
    /// Checks a row against the definition: one value per column, of the column's type,
    /// not NULL in a NOT NULL column, text of at most `n` characters, timestamps in the
    /// domain described in [`ColumnType::Timestamp`] (whole seconds in MariaDB's TIMESTAMP
    /// range), the other types in the domains of [`ColumnType`]'s variants; a row holding
    /// TEXT must fit inline in both engines (module doc).
    ///
    /// # Errors
    /// [`Error::InvalidValue`] naming the table, the column and the problem.
    pub fn check_row(&self, row: &Row) -> Result<()> {
        self.check_width(row)?;
        let mut text_column = None;
        for (i, (c, v)) in self.columns.iter().zip(row).enumerate() {
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
            check_value(c.ty, v, true).map_err(|problem| {
                Error::InvalidValue(format!(
                    "column \"{}\" of table \"{}\": {problem}",
                    c.name, self.name
                ))
            })?;
            if c.ty == ColumnType::Text && text_column.is_none() {
                text_column = Some(i);
            }
        }
        if let Some(i) = text_column {
            self.check_text_inline(row, i)?;
        }
        Ok(())
    }

    /// Refuses a row with TEXT that either engine would not keep inline (module doc);
    /// `text` is the first TEXT column holding a value, named in the error.
    fn check_text_inline(&self, row: &Row, text: usize) -> Result<()> {
        let column = &self.columns[text].name;
        let heap = encode_heap(self, row).tuple_bytes();
        if heap > TOAST_TUPLE_THRESHOLD {
            return Err(Error::InvalidValue(format!(
                "column \"{column}\" of table \"{}\": the row's heap tuple of {heap} bytes is \
                 over PostgreSQL's TOAST_TUPLE_THRESHOLD of {TOAST_TUPLE_THRESHOLD} bytes and \
                 would be TOASTed (compressed or stored out of line), which is not modelled",
                self.name
            )));
        }
        let rec = compact_clustered_record_bytes(self, row)?;
        if rec >= INNODB_REC_NEEDS_EXT_BYTES {
            return Err(Error::InvalidValue(format!(
                "column \"{column}\" of table \"{}\": the row's InnoDB record of {rec} bytes \
                 reaches half a 16 KiB page ({INNODB_REC_NEEDS_EXT_BYTES} bytes) and its TEXT \
                 would be stored off page, which is not modelled",
                self.name
            )));
        }
        Ok(())
    }
}
