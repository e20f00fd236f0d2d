//! A table's id and the relation files that hold it (PostgreSQL's `pg_class.relfilenode` of
//! the heap and of each index; InnoDB's index root pages in one tablespace here a file each).

use crate::device::FileId;
use serde::{Deserialize, Serialize};

/// A table's id within its database: its position in creation order (tables are never
/// dropped yet).
pub type TableId = u32;

/// The relation files holding a table (for tools and tests that inspect pages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRelations {
    /// The heap (postgres) or clustered index (innodb).
    pub table: FileId,
    /// The primary-key index (postgres); the same as `table` for a clustered table.
    pub primary_key: FileId,
    /// Secondary indexes in definition order.
    pub indexes: Vec<FileId>,
}

impl TableRelations {
    /// Every index relation apart from the table itself: the primary-key index when it is
    /// separate (postgres), then the secondary indexes. What pg_statio_user_tables counts
    /// as `idx_blks_*`.
    pub fn index_relations(&self) -> impl Iterator<Item = FileId> + '_ {
        let pk = (self.primary_key != self.table).then_some(self.primary_key);
        pk.into_iter().chain(self.indexes.iter().copied())
    }
}
