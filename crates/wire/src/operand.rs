//! The operands of statements, shared by the plans and the catalog's column defaults.

/// An operand of a statement: a literal, a parameter of the extended protocol, or
/// `CURRENT_TIMESTAMP`.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// An integer literal.
    Int(i64),
    /// A string literal (also a number written with a fraction, kept as text).
    Str(String),
    /// NULL.
    Null,
    /// Parameter `$n` as a 0-based position.
    Param(usize),
    /// `CURRENT_TIMESTAMP` / `now()`: the statement's start.
    Now,
}
