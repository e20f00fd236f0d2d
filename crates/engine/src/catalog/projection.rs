//! The columns a reader needs from each row of a scan: what a scan decodes, the others
//! left as [`Value::Null`] placeholders in a row of the table's full width.
//!
//! Follows the real engines' executors, which never convert a column nobody asked for:
//! PostgreSQL deforms a heap tuple only up to the last attribute the plan references
//! (REL_15 execTuples.c `slot_getsomeattrs` → `slot_deform_heap_tuple(slot, natts)`; a
//! `Seq Scan` under `count(*)` references none, so no attribute is deformed), and InnoDB
//! copies into the server's row buffer only the fields of the prebuilt template (MariaDB
//! 10.11 ha_innodb.cc `ha_innobase::build_template` with `ROW_MYSQL_REC_FIELDS`: the
//! columns of `table->read_set`; row0sel.cc `row_sel_store_mysql_rec` over
//! `prebuilt->mysql_template`).
//!
//! A projection changes what is decoded, never which pages are read: the blocks a scan
//! moves are the same for every projection.

use super::value::Value;
use crate::error::{Error, Result};

/// The columns a scan's reader needs, by column number (0-based, the table's column order).
/// [`Projection::all`] decodes every column; [`Projection::columns`] only those listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    /// `needed[c]` for the listed columns (`None`: all).
    needed: Option<Vec<bool>>,
}

impl Projection {
    /// Every column (a whole row, `SELECT *`).
    pub fn all() -> Projection {
        Projection { needed: None }
    }

    /// Only the columns `cols` (any order; repeats allowed; empty: no column, as under
    /// `count(*)`).
    pub fn columns(cols: &[usize]) -> Projection {
        let width = cols.iter().max().map_or(0, |&c| c + 1);
        let mut needed = vec![false; width];
        for &c in cols {
            needed[c] = true;
        }
        Projection {
            needed: Some(needed),
        }
    }

    /// Whether column `c` is decoded.
    pub fn needs(&self, c: usize) -> bool {
        match &self.needed {
            None => true,
            Some(n) => n.get(c).copied().unwrap_or(false),
        }
    }

    /// Whether every column is decoded.
    pub fn is_all(&self) -> bool {
        self.needed.is_none()
    }

    /// How many leading columns of a `width`-column row a decoder must walk to reach every
    /// needed one (PostgreSQL's `natts` argument of `slot_deform_heap_tuple`): `width` for
    /// [`Projection::all`], else one past the last needed column (0 for none).
    pub fn walk_width(&self, width: usize) -> usize {
        match &self.needed {
            None => width,
            Some(n) => n.iter().rposition(|&b| b).map_or(0, |c| c + 1).min(width),
        }
    }

    /// Checks that every listed column exists in a table of `width` columns named `table`.
    ///
    /// Errors: [`Error::InvalidValue`] naming the first column past the table's width.
    pub fn check_width(&self, table: &str, width: usize) -> Result<()> {
        match &self.needed {
            Some(n) if n.len() > width => Err(Error::InvalidValue(format!(
                "projection names column {} of table {table}, which has {width} columns",
                n.len() - 1
            ))),
            _ => Ok(()),
        }
    }

    /// Replaces the values of the columns not needed by [`Value::Null`] (for a row decoded
    /// whole, e.g. one rebuilt from undo), so that every path of a scan hands out the same
    /// row shape.
    pub fn mask(&self, row: &mut [Value]) {
        if self.is_all() {
            return;
        }
        for (c, v) in row.iter_mut().enumerate() {
            if !self.needs(c) {
                *v = Value::Null;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_needed_as_listed_and_walk_stops_after_the_last() {
        let p = Projection::columns(&[4, 1, 4]);
        assert!(p.needs(1) && p.needs(4));
        assert!(!p.needs(0) && !p.needs(2) && !p.needs(5));
        assert_eq!(p.walk_width(16), 5);
        assert_eq!(Projection::columns(&[]).walk_width(16), 0);
        assert_eq!(Projection::all().walk_width(16), 16);
        assert!(Projection::all().needs(99));
    }

    #[test]
    fn a_column_past_the_width_is_refused_by_name() {
        let e = Projection::columns(&[3]).check_width("t", 3).unwrap_err();
        assert!(e.to_string().contains("column 3 of table t"), "{e}");
        Projection::columns(&[2]).check_width("t", 3).unwrap();
    }

    #[test]
    fn mask_nulls_the_columns_not_needed() {
        let mut row = vec![Value::Integer(1), Value::Integer(2), Value::Integer(3)];
        Projection::columns(&[1]).mask(&mut row);
        assert_eq!(row, vec![Value::Null, Value::Integer(2), Value::Null]);
    }
}
