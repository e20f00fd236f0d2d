//! The engine API every design implements: open a database with a design, create tables
//! and indexes, and run transactions of single-row and range operations from many threads.
//!
//! [`Database`] owns the storage and one [`Engine`] (the design: `postgres` now, `innodb`
//! next). A [`Transaction`] wraps the engine's transaction: any error of an operation aborts
//! it (as PostgreSQL puts a transaction in the failed state, and mvcclab then rolls it back),
//! after which every call returns [`Error::TransactionClosed`]; dropping an open transaction
//! aborts it.
//!
//! Each operation runs under a foreground cause (`point_select` for `get` and
//! `get_by_index`, `range_scan`, `insert`, `update`, `delete`, `commit`, `abort`), so its
//! I/O is attributed without the caller doing anything.
//!
//! # Locking
//! The engine's own; `Database` adds none.
//!
//! # Crash safety
//! Every DDL logs the whole catalog (table definitions and their relation files) in a
//! CATALOG WAL record, flushed before it returns, and every checkpoint record carries a
//! copy; `Database::open` runs crash recovery (the `recovery` module) and reopens the
//! tables from the newest catalog.

mod delta;
mod innodb;
mod postgres;
mod tables;
pub(crate) use tables::{check_not_deferred, Catalogued, TableList};
mod txn;

pub use innodb::InnodbEngine;
pub use postgres::PostgresEngine;
pub use txn::xact_info;

use crate::btree::ScanDirection;
use crate::catalog::{Row, TableDef, Value};
use crate::design::{DesignConfig, TableLayout, VersionStorage};
use crate::error::{Error, Result};
use crate::heap::{TableStats, VacuumConfig, VacuumReport};
use crate::mvcc::Isolation;
use crate::recovery;
use crate::storage::{Storage, StorageConfig};
use serde::{Deserialize, Serialize};
use std::ops::Bound;
use std::sync::Arc;

/// A table's id within its database.
pub type TableId = u32;

/// One assignment of an UPDATE's SET list, evaluated on the version being replaced (so that,
/// as PostgreSQL's EvalPlanQual re-evaluates `SET k = k + 1` on the newest version after a
/// wait, no increment is lost at read committed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Assign {
    /// `column = value`.
    Set(usize, Value),
    /// `column = column + delta` (INTEGER or BIGINT columns).
    Add(usize, i64),
}

impl Assign {
    /// Applies the assignments to `row` in order.
    ///
    /// Errors: [`Error::InvalidValue`] for a column out of range, `Add` on a non-integer or
    /// NULL column, or an overflow.
    pub fn apply(set: &[Assign], row: &mut Row) -> Result<()> {
        for a in set {
            let c = match a {
                Assign::Set(c, _) | Assign::Add(c, _) => *c,
            };
            let slot = row
                .get_mut(c)
                .ok_or_else(|| Error::InvalidValue(format!("no column #{c}")))?;
            match a {
                Assign::Set(_, v) => *slot = v.clone(),
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

/// Everything a database is opened with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatabaseConfig {
    /// The design switches.
    pub design: DesignConfig,
    /// Storage settings (page size, torn-page protection, WAL record format, replacer and
    /// OS cache are taken from the design by [`DatabaseConfig::new`]; page size, torn-page
    /// protection and WAL record format again by [`Database::open`]).
    pub storage: StorageConfig,
    /// Vacuum / autovacuum settings (postgres design).
    pub vacuum: VacuumConfig,
    /// Purge settings (innodb design).
    pub purge: crate::clustered::PurgeConfig,
}

impl DatabaseConfig {
    /// Storage defaults shaped by `design`: page size, torn-page protection, replacement
    /// policy, and an OS page cache of 1 GiB when the design has one (pick the size to
    /// match the experiment).
    pub fn new(design: DesignConfig) -> Self {
        let mut storage = StorageConfig {
            page_size: design.page_size,
            torn_page_protection: design.torn_page_protection,
            ..Default::default()
        };
        storage.wal.record_format = design.wal_record_format;
        storage.buffer_pool.replacer = match design.buffer_replacement {
            crate::design::BufferReplacement::ClockSweep => {
                crate::buffer::ReplacerConfig::ClockSweep
            }
            crate::design::BufferReplacement::LruMidpoint => {
                crate::buffer::ReplacerConfig::lru_midpoint_default()
            }
        };
        if design.os_page_cache {
            storage.os_cache.size_bytes = 1 << 30;
        }
        if design.version_storage == VersionStorage::UndoDelta {
            // InnoDB: redo written in 512-byte blocks (OS_FILE_LOG_BLOCK_SIZE); page cleaner
            // once a second or when woken, keeping innodb_lru_scan_depth frames free (scaled
            // with the pool as mvcclab starts the real MariaDB; its LRU batch replaces the
            // bgwriter-style scan, so lru_scan_pages is 0), flushing above
            // innodb_max_dirty_pages_pct 90.
            storage.wal.block_bytes = 512;
            let pc = &mut storage.buffer_pool.page_cleaner;
            pc.interval_ms = 1000;
            pc.lru_scan_pages = 0;
            pc.free_target = Some(crate::buffer::FreeTarget::ScaledLruScanDepth);
            pc.max_dirty_pct = Some(90);
        }
        DatabaseConfig {
            design,
            storage,
            vacuum: VacuumConfig::default(),
            purge: Default::default(),
        }
    }
}

/// A design's transaction. Implemented by each engine; used through [`Transaction`].
pub trait EngineTxn: Send {
    /// Row by primary key.
    fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>>;
    /// Rows by secondary index key.
    fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>>;
    /// Rows by primary-key range.
    fn scan(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>>;
    /// Inserts a row.
    fn insert(&mut self, t: TableId, row: Row) -> Result<()>;
    /// Updates columns of the row with a primary key; false if none.
    fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool>;
    /// Deletes the row with a primary key; false if none.
    fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool>;
    /// Commits.
    fn commit(&mut self) -> Result<()>;
    /// Rolls back.
    fn abort(&mut self) -> Result<()>;
}

/// The relation files holding a table (for tools and tests that inspect pages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRelations {
    /// The heap (postgres) or clustered index (innodb).
    pub table: crate::device::FileId,
    /// The primary-key index (postgres); the same as `table` for a clustered table.
    pub primary_key: crate::device::FileId,
    /// Secondary indexes in definition order.
    pub indexes: Vec<crate::device::FileId>,
}

impl TableRelations {
    /// Every index relation apart from the table itself: the primary-key index when it is
    /// separate (postgres), then the secondary indexes. What pg_statio_user_tables counts
    /// as `idx_blks_*`.
    pub fn index_relations(&self) -> impl Iterator<Item = crate::device::FileId> + '_ {
        let pk = (self.primary_key != self.table).then_some(self.primary_key);
        pk.into_iter().chain(self.indexes.iter().copied())
    }
}

/// Design-wide counters (innodb_metrics / SHOW ENGINE INNODB STATUS names in the docs);
/// the undo and purge ones are zero for designs without an undo log, the B-tree ones are
/// counted by both presets (postgres: splits only; nbtree never merges).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineCounters {
    /// Undo records written (undo_rec_written... InnoDB counts them per log).
    pub undo_records_written: u64,
    /// Undo pages allocated.
    pub undo_pages_allocated: u64,
    /// Undo pages written from the buffer pool (innodb_metrics undo pages written, as
    /// page writes of the undo relation).
    pub undo_pages_written: u64,
    /// Undo pages freed by commit (insert undo) or purge.
    pub undo_pages_freed: u64,
    /// Undo pages held now.
    pub undo_pages_in_use: u64,
    /// Cached undo segments reused (TRX_UNDO_CACHED).
    pub undo_segments_reused: u64,
    /// Undo records purge processed (purge_undo_log_pages... innodb_metrics purge_upd_exist_or_extern_records + purge_del_mark_records).
    pub purge_records: u64,
    /// Records and secondary entries purge removed.
    pub purge_removed: u64,
    /// Undo logs purged.
    pub purged_logs: u64,
    /// Purge batches, each ended by a truncation of the history that visits every
    /// rollback segment header (MariaDB: innodb_metrics `purge_invoked`, one per
    /// `trx_purge` call, after which `purge_truncation_task` runs
    /// `trx_purge_truncate_history`, trx0purge.cc / srv0srv.cc). The preset counts the
    /// batch ends of its purge threads (a batch ends at `innodb_purge_batch_size` undo
    /// pages, or when a round finds nothing more to purge).
    /// Reports written before this field existed read as 0.
    #[serde(default)]
    pub purge_batches: u64,
    /// History list length now (trx_rseg_history_len).
    pub history_list_length: u64,
    /// Highest history list length seen.
    pub history_list_length_peak: u64,
    /// Undo log pages read into the buffer pool (innodb_metrics
    /// `buffer_page_read_undo_log`).
    #[serde(default)]
    pub undo_pages_read: u64,
    /// Rollback segment header pages read into the buffer pool (MariaDB counts them, with
    /// the other system pages, as `buffer_page_read_system_page`).
    #[serde(default)]
    pub rseg_pages_read: u64,
    /// Rollback segment header pages written from the buffer pool
    /// (`buffer_page_written_system_page`).
    #[serde(default)]
    pub rseg_pages_written: u64,
    /// B-tree page splits, every index and level (innodb_metrics `index_page_splits`).
    #[serde(default)]
    pub index_page_splits: u64,
    /// Leaves that fell below the merge threshold and tried to merge with a sibling
    /// (`index_page_merge_attempts`; btr0btr.cc `btr_compress`).
    #[serde(default)]
    pub index_page_merge_attempts: u64,
    /// Of those, leaves merged (`index_page_merge_successful`).
    #[serde(default)]
    pub index_page_merge_successful: u64,
}

/// What garbage collection did (vacuum for `postgres`, purge for `innodb`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcReport {
    /// Vacuum's report (postgres design).
    pub vacuum: Option<VacuumReport>,
}

/// A design: tables, transactions, garbage collection.
pub trait Engine: Send + Sync {
    /// Creates a table (and its indexes); returns its id.
    fn create_table(&self, def: TableDef) -> Result<TableId>;
    /// Marks a new table's secondary indexes deferred: not maintained until
    /// [`Engine::build_secondary_indexes`].
    fn defer_secondary_indexes(&self, t: TableId) -> Result<()>;
    /// Builds a table's deferred secondary indexes by sorting; returns the entries built.
    fn build_secondary_indexes(&self, t: TableId) -> Result<u64>;
    /// The id of a table by name.
    fn table_id(&self, name: &str) -> Result<TableId>;
    /// The definition of a table.
    fn table_def(&self, t: TableId) -> Result<TableDef>;
    /// Begins a transaction.
    fn begin(&self, iso: Isolation) -> Box<dyn EngineTxn>;
    /// Runs garbage collection on a table now.
    fn gc(&self, t: TableId) -> Result<GcReport>;
    /// ANALYZE of a table now; only heap tables have one here.
    fn analyze(&self, _t: TableId) -> Result<crate::heap::AnalyzeReport> {
        Err(Error::InvalidConfig(
            "ANALYZE is modelled for heap tables only (the postgres table layout)".into(),
        ))
    }
    /// The table's own counters; the block figures (`heap_blks_*`, `idx_blks_*`) are left
    /// 0 for [`Database::table_stats`] to fill from the buffer pool.
    fn table_counters(&self, t: TableId) -> Result<TableStats>;
    /// The relation files of a table.
    fn relations(&self, t: TableId) -> Result<TableRelations>;
    /// Every version of a row, newest first: (transaction id, deleted, row). Empty for
    /// designs that do not chain versions from the newest (postgres: use the heap tools).
    fn row_versions(&self, _t: TableId, _pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        Ok(Vec::new())
    }
    /// Design-wide counters (undo, purge, history list).
    fn engine_counters(&self) -> EngineCounters {
        EngineCounters::default()
    }
    /// Stops background work (autovacuum, purge threads).
    fn shutdown(&self);
    /// The catalog to log (`layout` is filled in by the database).
    fn catalog(&self) -> crate::recovery::CatalogSnapshot;
    /// Checks a table's indexes against the table: (entries checked, problems).
    fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)>;
    /// Finishes the B+tree splits a crash interrupted, in every tree of every table
    /// ([`crate::btree::BTree::finish_incomplete_splits`]); returns how many. Recovery
    /// calls it after redo, before the tables are used.
    fn finish_incomplete_splits(&self) -> Result<u64>;
}

/// An open database. Share it by `Arc` between threads; every method takes `&self`.
pub struct Database {
    design: DesignConfig,
    storage: Arc<Storage>,
    engine: Box<dyn Engine>,
    recovery: recovery::RecoveryReport,
}

/// The catalog's name for a design's table layout and version storage, as `Heap/AppendO2n`.
fn layout_name(d: &DesignConfig) -> String {
    format!("{:?}/{:?}", d.table_layout, d.version_storage)
}

impl Database {
    /// Opens a database with `cfg`.
    ///
    /// Errors: [`Error::InvalidConfig`] for an impossible or not yet built combination of
    /// switches (naming them); storage errors.
    pub fn open(cfg: DatabaseConfig) -> Result<Database> {
        cfg.design.validate()?;
        let mut storage_cfg = cfg.storage.clone();
        storage_cfg.page_size = cfg.design.page_size;
        storage_cfg.torn_page_protection = cfg.design.torn_page_protection;
        storage_cfg.wal.record_format = cfg.design.wal_record_format;
        let storage = Arc::new(Storage::open_for_recovery(storage_cfg)?);
        // Crash recovery (the `recovery` module doc): doublewrite repair, redo, then the
        // engine's own part on the redone pages, then an end-of-recovery checkpoint.
        let restored = recovery::repair_from_doublewrite(&storage)?;
        let mut redone = recovery::redo(&storage)?;
        redone.report.doublewrite_pages_restored = restored;
        let layout = layout_name(&cfg.design);
        let fresh = redone.catalog.version == 0;
        let catalog = recovery::CatalogSnapshot::decode(&redone.catalog.bytes)?;
        if !fresh && catalog.layout != layout {
            return Err(Error::InvalidConfig(format!(
                "the database was made with table layout and version storage {}; the design asks for {layout} (open it with the design it was made with)",
                catalog.layout
            )));
        }
        storage.set_recovered_catalog(redone.catalog.clone());
        let engine: Box<dyn Engine> = match (cfg.design.table_layout, cfg.design.version_storage) {
            (TableLayout::Heap, VersionStorage::AppendO2n) if fresh => {
                Box::new(PostgresEngine::new(storage.clone(), cfg.design.clone(), cfg.vacuum.clone()))
            }
            (TableLayout::Heap, VersionStorage::AppendO2n) => Box::new(PostgresEngine::recover(
                storage.clone(),
                cfg.design.clone(),
                cfg.vacuum.clone(),
                &catalog,
                &mut redone,
            )?),
            (TableLayout::Clustered, VersionStorage::UndoDelta) if fresh => {
                Box::new(InnodbEngine::new(storage.clone(), cfg.design.clone(), cfg.purge.clone())?)
            }
            (TableLayout::Clustered, VersionStorage::UndoDelta) => Box::new(InnodbEngine::recover(
                storage.clone(),
                cfg.design.clone(),
                cfg.purge.clone(),
                &catalog,
                &mut redone,
            )?),
            (layout, vs) => {
                return Err(Error::InvalidConfig(format!(
                    "switches table_layout={layout:?} with version_storage={vs:?} are not built yet; use the postgres or innodb preset"
                )))
            }
        };
        let db = Database {
            design: cfg.design,
            storage,
            engine,
            recovery: recovery::RecoveryReport::default(),
        };
        if !fresh {
            let _c = crate::stats::enter(crate::stats::Cause::Recovery);
            redone.report.splits_finished += db.engine.finish_incomplete_splits()?;
        }
        if fresh {
            // The design-wide relations (the undo log) are in the catalog from the start.
            db.log_catalog()?;
        } else if redone.report.records_replayed > 1 {
            // More than the shutdown checkpoint's record: the database had crashed.
            db.storage.checkpoint()?;
        }
        db.storage.start_background();
        let mut db = db;
        redone.report.duration_us = redone.started.map_or(0, |t| t.elapsed().as_micros() as u64);
        db.recovery = redone.report;
        Ok(db)
    }

    /// Checks table `t`'s indexes against it, as a crash test does after recovery
    /// (contrib/amcheck in spirit): every B+tree's structure, and that every index entry
    /// leads to a row version (postgres: a line pointer in use; innodb: a clustered record,
    /// possibly delete-marked). Returns the entries checked and one line per problem found
    /// (empty when consistent). Call it on a quiet table.
    ///
    /// Errors: [`Error::Catalog`] for an unknown table; pool and device errors.
    pub fn check_indexes(&self, t: TableId) -> Result<(u64, Vec<String>)> {
        self.engine.check_indexes(t)
    }

    /// What recovery did when this database was opened (all zero for a new database).
    pub fn recovery_report(&self) -> &recovery::RecoveryReport {
        &self.recovery
    }

    /// Logs the catalog (after a DDL), so that recovery can reopen the tables.
    fn log_catalog(&self) -> Result<()> {
        let layout = layout_name(&self.design);
        self.storage.log_catalog(|| {
            let mut c = self.engine.catalog();
            c.layout = layout;
            c.encode()
        })?;
        Ok(())
    }

    /// The design switches in force.
    pub fn design(&self) -> &DesignConfig {
        &self.design
    }

    /// The storage below (counters, checkpoints).
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Creates a table with its primary key and secondary indexes (cause `ddl`).
    ///
    /// Errors: [`Error::Catalog`] for an invalid definition or a name in use.
    pub fn create_table(&self, def: TableDef) -> Result<TableId> {
        let _c = crate::stats::enter(crate::stats::Cause::Ddl);
        let t = self.engine.create_table(def)?;
        self.log_catalog()?;
        Ok(t)
    }

    /// Creates a table for a bulk load whose secondary indexes are built afterwards, as
    /// sysbench's prepare does (CREATE TABLE with the primary key, INSERTs, then CREATE
    /// INDEX; oltp_common.lua `create_table`): the secondary indexes are not maintained
    /// by inserts until [`Database::build_secondary_indexes`], and updates, deletes and
    /// secondary-index reads of the table are refused meanwhile (cause `ddl`).
    ///
    /// Errors: as [`Database::create_table`]; [`Error::Catalog`] for a unique secondary
    /// index (its build does not check uniqueness).
    pub fn create_table_for_load(&self, def: TableDef) -> Result<TableId> {
        if let Some(ix) = def.indexes.iter().find(|ix| ix.unique) {
            return Err(Error::Catalog(format!(
                "table {}: unique index {} cannot be built after the load; create the table \
                 with create_table",
                def.name, ix.name
            )));
        }
        // One catalog record, with the deferral in it (create_table would log one more).
        let _c = crate::stats::enter(crate::stats::Cause::Ddl);
        let t = self.engine.create_table(def)?;
        self.engine.defer_secondary_indexes(t)?;
        self.log_catalog()?;
        Ok(t)
    }

    /// Builds the secondary indexes of a table made by [`Database::create_table_for_load`]
    /// from its rows, sorted and packed bottom up (PostgreSQL CREATE INDEX, nbtsort.c;
    /// MariaDB ADD INDEX, row0merge.cc / btr0bulk.cc), and maintains them from then on.
    /// Counts go to the caller's cause. Returns the entries built (0 when nothing was
    /// deferred).
    ///
    /// Errors: [`Error::Catalog`] for an unknown table; storage errors.
    pub fn build_secondary_indexes(&self, t: TableId) -> Result<u64> {
        let n = self.engine.build_secondary_indexes(t)?;
        self.log_catalog()?;
        Ok(n)
    }

    /// A table's id by name. Errors: [`Error::Catalog`].
    pub fn table_id(&self, name: &str) -> Result<TableId> {
        self.engine.table_id(name)
    }

    /// A table's definition. Errors: [`Error::Catalog`].
    pub fn table_def(&self, t: TableId) -> Result<TableDef> {
        self.engine.table_def(t)
    }

    /// Begins a transaction at the design's default isolation.
    pub fn begin(&self) -> Transaction {
        self.begin_with(self.design.default_isolation)
    }

    /// Begins a transaction at `iso`.
    pub fn begin_with(&self, iso: Isolation) -> Transaction {
        Transaction {
            inner: self.engine.begin(iso),
            state: TxnState::Open,
        }
    }

    /// Runs garbage collection (vacuum or purge) on a table now (cause `vacuum`/`purge`).
    ///
    /// Errors: storage errors.
    pub fn gc(&self, t: TableId) -> Result<GcReport> {
        self.engine.gc(t)
    }

    /// ANALYZE of a table now (cause `vacuum`): the heap sample, its live and dead row
    /// estimates and `n_mod_since_analyze` reset (`crate::heap::HeapTable::analyze`);
    /// counted as a manual analyze.
    ///
    /// Errors: [`Error::InvalidConfig`] for a clustered table (the innodb layout); catalog
    /// and storage errors.
    pub fn analyze(&self, t: TableId) -> Result<crate::heap::AnalyzeReport> {
        self.engine.analyze(t)
    }

    /// Every version of a row, newest first (innodb: the undo chain). Errors: storage errors.
    pub fn row_versions(&self, t: TableId, pk: &[Value]) -> Result<Vec<(u64, bool, Row)>> {
        self.engine.row_versions(t, pk)
    }

    /// Design-wide counters (undo, purge, history list).
    pub fn engine_counters(&self) -> EngineCounters {
        self.engine.engine_counters()
    }

    /// WAL records inserted since the database opened, by record type in pg_waldump's
    /// `Rmgr/RECORD` names ([`crate::recovery::record_type_name`]): what pg_waldump
    /// `--stats=record` reports for PostgreSQL's WAL.
    pub fn wal_record_types(
        &self,
    ) -> std::collections::BTreeMap<String, crate::wal::RecordTypeCounts> {
        self.storage
            .wal()
            .record_type_counts()
            .into_iter()
            .map(|((r, i), c)| (crate::recovery::record_type_name(r, i), c))
            .collect()
    }

    /// A table's counters, with its buffer-pool block figures (pg_statio_user_tables: the
    /// heap or clustered index as `heap_blks_*`, every other index as `idx_blks_*`).
    /// Errors: [`Error::Catalog`].
    pub fn table_stats(&self, t: TableId) -> Result<TableStats> {
        let mut s = self.engine.table_counters(t)?;
        let rels = self.engine.relations(t)?;
        let pool = self.storage.pool();
        let heap = pool.rel_io(rels.table);
        s.heap_blks_hit = heap.blks_hit;
        s.heap_blks_read = heap.blks_read;
        for rel in rels.index_relations() {
            let io = pool.rel_io(rel);
            s.idx_blks_hit += io.blks_hit;
            s.idx_blks_read += io.blks_read;
        }
        Ok(s)
    }

    /// Pages of a table: (heap or clustered index, all other indexes).
    /// Errors: [`Error::Catalog`]; storage errors.
    pub fn table_pages(&self, t: TableId) -> Result<(u64, u64)> {
        let rels = self.engine.relations(t)?;
        let store = self.storage.store();
        let mut idx = 0;
        for rel in rels.index_relations() {
            idx += store.n_blocks(rel)? as u64;
        }
        Ok((store.n_blocks(rels.table)? as u64, idx))
    }

    /// The relation files of a table. Errors: [`Error::Catalog`].
    pub fn relations(&self, t: TableId) -> Result<TableRelations> {
        self.engine.relations(t)
    }

    /// Stops background work and closes the storage with a checkpoint.
    ///
    /// Errors: those of the final checkpoint.
    pub fn close(self) -> Result<()> {
        self.engine.shutdown();
        // The shutdown checkpoint runs while the engine lives, so that its checkpoint hook
        // (the clog) takes part.
        self.storage.shutdown()
    }
}

impl Drop for Database {
    /// Stops the engine's threads (autovacuum, purge) and the storage's (checkpointer, WAL
    /// writer, page cleaner), waiting for each, so that nothing of this instance writes to
    /// the device after the drop, as after a crash nothing of a dead server does. Writes
    /// nothing itself (no checkpoint: [`Database::close`] is the clean shutdown).
    fn drop(&mut self) {
        self.engine.shutdown();
        self.storage.stop_background();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxnState {
    Open,
    Committed,
    Aborted,
}

/// A transaction. Operations take `&mut self`; the first error aborts it.
pub struct Transaction {
    inner: Box<dyn EngineTxn>,
    state: TxnState,
}

impl Transaction {
    fn run<T>(&mut self, f: impl FnOnce(&mut dyn EngineTxn) -> Result<T>) -> Result<T> {
        match self.state {
            TxnState::Open => {}
            TxnState::Committed => return Err(Error::TransactionClosed("committed")),
            TxnState::Aborted => return Err(Error::TransactionClosed("aborted")),
        }
        let r = f(self.inner.as_mut());
        if r.is_err() {
            self.state = TxnState::Aborted;
            let _ = self.inner.abort();
        }
        r
    }

    /// The row with primary key `pk`, if visible.
    ///
    /// Errors: [`Error::InvalidValue`] for a key of the wrong shape; [`Error::Catalog`];
    /// storage errors. Any error aborts the transaction.
    pub fn get(&mut self, t: TableId, pk: &[Value]) -> Result<Option<Row>> {
        self.run(|x| x.get(t, pk))
    }

    /// Rows whose secondary index `index` (position in the table's `indexes`) key is `key`.
    ///
    /// Errors: as [`Transaction::get`].
    pub fn get_by_index(&mut self, t: TableId, index: usize, key: &[Value]) -> Result<Vec<Row>> {
        self.run(|x| x.get_by_index(t, index, key))
    }

    /// Rows with primary key in `lo..hi`, forward or backward, at most `limit`.
    ///
    /// Errors: as [`Transaction::get`].
    pub fn scan(
        &mut self,
        t: TableId,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
        dir: ScanDirection,
        limit: usize,
    ) -> Result<Vec<Row>> {
        self.run(|x| x.scan(t, lo, hi, dir, limit))
    }

    /// Inserts `row`.
    ///
    /// Errors: [`Error::DuplicateKey`], [`Error::InvalidValue`], [`Error::Deadlock`], as
    /// [`Transaction::get`].
    pub fn insert(&mut self, t: TableId, row: Row) -> Result<()> {
        self.run(|x| x.insert(t, row))
    }

    /// Applies `set` to the row with primary key `pk` (on the newest version, after any
    /// wait); false when there is no such row.
    ///
    /// Errors: [`Error::SerializationFailure`] (repeatable read), [`Error::Deadlock`],
    /// [`Error::DuplicateKey`], as [`Transaction::get`].
    pub fn update(&mut self, t: TableId, pk: &[Value], set: &[Assign]) -> Result<bool> {
        self.run(|x| x.update(t, pk, set))
    }

    /// Deletes the row with primary key `pk`; false when there is none.
    ///
    /// Errors: as [`Transaction::update`].
    pub fn delete(&mut self, t: TableId, pk: &[Value]) -> Result<bool> {
        self.run(|x| x.delete(t, pk))
    }

    /// Commits (the commit record is durable when this returns).
    ///
    /// Errors: [`Error::TransactionClosed`] when already ended; WAL errors.
    pub fn commit(mut self) -> Result<()> {
        self.run(|x| x.commit())?;
        self.state = TxnState::Committed;
        Ok(())
    }

    /// Rolls back.
    ///
    /// Errors: [`Error::TransactionClosed`] when already ended.
    pub fn abort(mut self) -> Result<()> {
        self.run(|x| x.abort())?;
        self.state = TxnState::Aborted;
        Ok(())
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.state == TxnState::Open {
            let _ = self.inner.abort();
        }
    }
}
