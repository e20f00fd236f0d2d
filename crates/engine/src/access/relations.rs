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
    /// The primary-key index (postgres); the same as `table` for a clustered table (also
    /// one clustered on the hidden DB_ROW_ID). `None` for a heap table without a primary
    /// key, which has no such index (serialized as `null`; a key's relation as the bare
    /// number it always was, so catalogs of tables with a key keep their bytes).
    pub primary_key: Option<FileId>,
    /// Secondary indexes in definition order.
    pub indexes: Vec<FileId>,
    /// The relation holding the file-space pages of the table's tablespace (innodb:
    /// `FSP_HDR`, `IBUF_BITMAP`, `INODE`; `btree::file_space`). `None` for postgres, and
    /// for innodb tables made before 2026-11-28 (not serialized then, so catalogs without
    /// it keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_space: Option<FileId>,
}

impl TableRelations {
    /// Every index relation apart from the table itself: the primary-key index when it is
    /// separate (postgres), then the secondary indexes. What pg_statio_user_tables counts
    /// as `idx_blks_*`.
    pub fn index_relations(&self) -> impl Iterator<Item = FileId> + '_ {
        let pk = self.primary_key.filter(|&pk| pk != self.table);
        pk.into_iter().chain(self.indexes.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catalogs written before the file-space relation existed read as having none, and a
    /// table without one is written as before (its catalog bytes unchanged).
    #[test]
    fn a_catalog_without_the_file_space_relation_reads_as_none_and_keeps_its_bytes() {
        let json = r#"{"table":5,"primary_key":5,"indexes":[6]}"#;
        let r: TableRelations = serde_json::from_str(json).unwrap();
        assert_eq!(r.file_space, None);
        assert_eq!(serde_json::to_string(&r).unwrap(), json);
        let with = TableRelations {
            file_space: Some(7),
            ..r
        };
        let text = serde_json::to_string(&with).unwrap();
        assert!(text.ends_with(r#","file_space":7}"#), "{text}");
        assert_eq!(serde_json::from_str::<TableRelations>(&text).unwrap(), with);
    }
}
