//! Page identity: relation file and block number (PostgreSQL `BufferTag` without its fork;
//! InnoDB `page_id_t`). Kept apart from the page header code so that the engine's error
//! type can name a page without depending on it.

use crate::device::FileId;
use serde::{Deserialize, Serialize};

/// Identity of a page: relation file and block number within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PageId {
    /// Relation file id (PostgreSQL relfilenode; InnoDB space id).
    pub rel: FileId,
    /// Block number within the relation (PostgreSQL BlockNumber; InnoDB page number).
    pub block: u32,
}

impl PageId {
    /// The page `block` of relation `rel`.
    pub fn new(rel: FileId, block: u32) -> Self {
        PageId { rel, block }
    }
}

impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "page {}/{}", self.rel, self.block)
    }
}
