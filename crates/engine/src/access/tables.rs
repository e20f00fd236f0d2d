//! A design's tables by id, shared by every engine: the id of a table is its position in
//! creation order (tables are never dropped yet), names are unique.
//!
//! # Locking
//! One `RwLock` over the list: lookups take it shared for the time of a clone of the
//! table's `Arc`; `create` holds it exclusively while it builds the table's relations, so
//! two creations of one name cannot both succeed.

use super::catalog_snapshot::CatalogTable;
use super::relations::{TableId, TableRelations};
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use parking_lot::RwLock;
use std::sync::Arc;

/// A table an engine keeps: anything with a definition.
pub trait Catalogued {
    /// The table's definition.
    fn def(&self) -> &TableDef;
    /// Its B+trees: the primary key or clustered index first (a heap table without a
    /// primary key has neither), then the secondary indexes.
    fn trees(&self) -> Vec<&crate::btree::BTree>;
    /// The relation holding its rows: the heap, or the clustered index (the first tree).
    fn table_relation(&self) -> crate::device::FileId;
    /// The relation files holding it: its rows' relation, then its trees' (the primary-key
    /// tree is the rows' own relation for a clustered table).
    fn relations(&self) -> TableRelations {
        let trees = self.trees();
        let table = self.table_relation();
        let first_is_key =
            self.def().has_primary_key() || trees.first().is_some_and(|t| t.rel() == table);
        let secondary = if first_is_key {
            &trees[1..]
        } else {
            &trees[..]
        };
        TableRelations {
            table,
            primary_key: first_is_key.then(|| trees[0].rel()),
            indexes: secondary.iter().map(|t| t.rel()).collect(),
            file_space: trees.first().and_then(|t| t.file_space()).map(|f| f.rel()),
        }
    }
    /// Its pgstat counters (`pg_stat_user_tables`).
    fn counters(&self) -> &super::stats::TableCounters;
    /// Set while its secondary indexes are deferred (`crate::db::Database::create_table_for_load`).
    fn secondary_deferred(&self) -> &std::sync::atomic::AtomicBool;
}

/// The tables of one engine (see the module doc).
pub struct TableList<T>(RwLock<Vec<Arc<T>>>);

impl<T: Catalogued> Default for TableList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Catalogued> TableList<T> {
    /// No tables.
    pub fn new() -> Self {
        TableList(RwLock::new(Vec::new()))
    }

    /// The table with id `t`. Errors: [`Error::Catalog`] when there is none.
    pub fn get(&self, t: TableId) -> Result<Arc<T>> {
        self.0
            .read()
            .get(t as usize)
            .cloned()
            .ok_or_else(|| Error::Catalog(format!("no table with id {t}")))
    }

    /// The id of the table named `name`. Errors: [`Error::Catalog`] when there is none.
    pub fn id_of(&self, name: &str) -> Result<TableId> {
        self.0
            .read()
            .iter()
            .position(|t| t.def().name == name)
            .map(|i| i as TableId)
            .ok_or_else(|| Error::Catalog(format!("no table named {name}")))
    }

    /// The relation files of table `t`. Errors: [`Error::Catalog`] when there is none.
    pub fn relations(&self, t: TableId) -> Result<TableRelations> {
        Ok(self.get(t)?.relations())
    }

    /// Defers table `t`'s secondary indexes until they are built.
    /// Errors: [`Error::Catalog`] when there is no such table.
    pub fn defer_secondary_indexes(&self, t: TableId) -> Result<()> {
        self.get(t)?
            .secondary_deferred()
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Every table as the catalog records it, in id order.
    pub fn catalog_tables(&self) -> Vec<CatalogTable> {
        self.all()
            .iter()
            .map(|t| CatalogTable {
                def: t.def().clone(),
                relations: t.relations(),
                secondary_deferred: t
                    .secondary_deferred()
                    .load(std::sync::atomic::Ordering::Acquire),
            })
            .collect()
    }

    /// Finishes the B+tree splits a crash interrupted in every tree of every table
    /// ([`crate::btree::BTree::finish_incomplete_splits`]); returns how many.
    ///
    /// Errors: those of the finishing.
    pub fn finish_incomplete_splits(&self) -> Result<u64> {
        let mut n = 0;
        for t in self.all() {
            for tree in t.trees() {
                n += tree.finish_incomplete_splits()? as u64;
            }
        }
        Ok(n)
    }

    /// True when an error left a split incomplete in any tree of any table
    /// ([`crate::btree::BTree::left_incomplete_split`]).
    pub fn incomplete_split_left(&self) -> bool {
        self.all()
            .iter()
            .any(|t| t.trees().iter().any(|tree| tree.left_incomplete_split()))
    }

    /// Splits and merges of every tree of every table, summed
    /// ([`crate::btree::BTree::ops`]).
    pub fn btree_ops(&self) -> crate::btree::BTreeOps {
        let mut sum = crate::btree::BTreeOps::default();
        for t in self.all() {
            for tree in t.trees() {
                sum = sum.plus(tree.ops());
            }
        }
        sum
    }

    /// Every table, in id order.
    pub fn all(&self) -> Vec<Arc<T>> {
        self.0.read().clone()
    }

    /// Checks `def`, refuses a name already taken, and adds the table `make` builds for
    /// the next id; returns that id.
    ///
    /// Errors: [`Error::Catalog`] for an invalid definition or a taken name; `make`'s.
    pub fn create(
        &self,
        def: TableDef,
        make: impl FnOnce(TableId, TableDef) -> Result<T>,
    ) -> Result<TableId> {
        def.validate()?;
        let mut tables = self.0.write();
        if tables.iter().any(|t| t.def().name == def.name) {
            return Err(Error::Catalog(format!("table {} already exists", def.name)));
        }
        let id = tables.len() as TableId;
        tables.push(Arc::new(make(id, def)?));
        Ok(id)
    }
}

/// Errors with [`Error::Catalog`] when `deferred` is set: table `name`'s secondary indexes
/// are deferred until its load ends (`crate::db::Database::create_table_for_load`) and `what` needs
/// them.
pub fn check_not_deferred(
    deferred: &std::sync::atomic::AtomicBool,
    name: &str,
    what: &str,
) -> Result<()> {
    if deferred.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::Catalog(format!(
            "table {name}: {what} needs its secondary indexes, which are deferred until the \
             load ends (build them first)"
        )));
    }
    Ok(())
}

/// What every table access method keeps: its transaction manager and its tables
/// ([`super::TableAccessMethod::shared`]).
pub struct AmShared<T> {
    /// The transaction manager.
    pub tm: crate::mvcc::TransactionManager,
    /// The design's tables.
    pub tables: TableList<T>,
}

impl<T: Catalogued> AmShared<T> {
    /// No tables yet, transactions from `tm`.
    pub fn new(tm: crate::mvcc::TransactionManager) -> Self {
        AmShared {
            tm,
            tables: TableList::new(),
        }
    }
}
