//! The catalog a database logs at every DDL and recovery reads back: every table's
//! definition and relation files, and the design-wide relations (PostgreSQL keeps this in
//! its system catalogs, WAL-logged as heap changes; InnoDB in its data dictionary tables).

use super::relations::TableRelations;
use crate::catalog::TableDef;
use crate::device::FileId;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// One table in the catalog: its definition and the relation files that hold it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogTable {
    /// The definition.
    pub def: TableDef,
    /// Its relations (heap or clustered index, primary key, secondary indexes).
    pub relations: TableRelations,
    /// Secondary indexes not built yet (`Database::create_table_for_load`).
    pub secondary_deferred: bool,
}

/// The catalog a database logs at every DDL ([`crate::storage::Storage::log_catalog`]) and recovery reads
/// back: every table in id order (a table's id is its position), and the design-wide
/// relations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogSnapshot {
    /// The design's table layout and version storage, as `Heap/AppendO2n` or
    /// `Clustered/UndoDelta`: a database is reopened with the layout it was made with.
    pub layout: String,
    /// Tables in id order.
    pub tables: Vec<CatalogTable>,
    /// The undo log's relation (innodb), when there is one.
    pub undo_relation: Option<FileId>,
    /// The file-space pages of the undo log's tablespace (innodb: the system tablespace's
    /// header and inode pages that undo segments' page allocations change;
    /// `btree::file_space`). Absent in catalogs from before 2026-11-28.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_file_space: Option<FileId>,
}

impl CatalogSnapshot {
    /// JSON bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a catalog always serializes")
    }

    /// Parses `bytes` ([`CatalogSnapshot::encode`]); empty bytes are the empty catalog.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for bytes that are not a catalog.
    pub fn decode(bytes: &[u8]) -> Result<CatalogSnapshot> {
        if bytes.is_empty() {
            return Ok(CatalogSnapshot::default());
        }
        serde_json::from_slice(bytes)
            .map_err(|e| Error::corrupted(format!("catalog in the WAL: {e}")))
    }
}
