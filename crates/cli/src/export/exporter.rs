//! The trait each format's file implements (hyperfine `src/export/mod.rs`, `trait
//! Exporter`): the result schema's [`Report`] as text.

use crate::result::Report;
use anyhow::Result;

/// A format of the result schema: the [`Report`] as text.
pub trait Exporter {
    /// `report` in this format.
    ///
    /// Errors: the format's writer failing (none in practice: it writes to memory).
    fn export(&self, report: &Report) -> Result<String>;
}
