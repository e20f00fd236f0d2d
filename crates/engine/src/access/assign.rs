//! An UPDATE's SET list as data: what every table access method applies to the version it
//! replaces (PostgreSQL evaluates the target list in `ExecUpdate` on the tuple
//! EvalPlanQual re-fetched; InnoDB's `row_upd_build_difference_binary` on the newest record).

use crate::catalog::{Row, Value};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One assignment of an UPDATE's SET list, evaluated on the version being replaced (so that,
/// as PostgreSQL's EvalPlanQual re-evaluates `SET k = k + 1` on the newest version after a
/// wait, no increment is lost at read committed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Assign {
    /// `column = value`.
    Set(usize, Value),
    /// `column = column + delta` (TINYINT, SMALLINT, INTEGER or BIGINT columns).
    Add(usize, i64),
    /// `column = column + delta` on a DECIMAL column (TPC-C's `w_ytd = w_ytd + :h_amount`);
    /// the sum keeps the column value's scale when the delta has no more fraction digits.
    AddDecimal(usize, crate::catalog::Decimal),
}

impl Assign {
    /// Applies the assignments to `row` in order.
    ///
    /// Errors: [`Error::InvalidValue`] for a column out of range, `Add` on a non-integer or
    /// NULL column, or an overflow.
    pub fn apply(set: &[Assign], row: &mut Row) -> Result<()> {
        for a in set {
            let c = match a {
                Assign::Set(c, _) | Assign::Add(c, _) | Assign::AddDecimal(c, _) => *c,
            };
            let slot = row
                .get_mut(c)
                .ok_or_else(|| Error::InvalidValue(format!("no column #{c}")))?;
            match a {
                Assign::Set(_, v) => *slot = v.clone(),
                Assign::AddDecimal(_, d) => {
                    *slot = match slot {
                        Value::Decimal(x) => {
                            let sum = x.checked_add(d).ok_or_else(|| {
                                Error::InvalidValue(format!("column #{c}: decimal out of range"))
                            })?;
                            Value::Decimal(sum.with_scale(x.scale()).unwrap_or(sum))
                        }
                        other => {
                            return Err(Error::InvalidValue(format!(
                                "column #{c}: cannot add a decimal to {other:?}"
                            )))
                        }
                    }
                }
                Assign::Add(_, d) => {
                    *slot = match slot {
                        Value::Integer(x) => i32::try_from(*x as i64 + d)
                            .map(Value::Integer)
                            .map_err(|_| {
                                Error::InvalidValue(format!("column #{c}: integer out of range"))
                            })?,
                        Value::BigInt(x) => {
                            x.checked_add(*d).map(Value::BigInt).ok_or_else(|| {
                                Error::InvalidValue(format!("column #{c}: bigint out of range"))
                            })?
                        }
                        Value::SmallInt(x) => i16::try_from(*x as i64 + d)
                            .map(Value::SmallInt)
                            .map_err(|_| {
                                Error::InvalidValue(format!("column #{c}: smallint out of range"))
                            })?,
                        Value::TinyInt(x) => i8::try_from(*x as i64 + d)
                            .map(Value::TinyInt)
                            .map_err(|_| {
                                Error::InvalidValue(format!("column #{c}: tinyint out of range"))
                            })?,
                        other => {
                            return Err(Error::InvalidValue(format!(
                                "column #{c}: cannot add to {other:?}"
                            )))
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
