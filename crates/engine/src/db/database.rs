//! An open database: the storage below, one design's engine, crash recovery at open, the
//! catalog logged at every DDL, and the counters a report reads.

use super::engine::Engine;
use super::transaction::Transaction;
use super::{InnodbEngine, PostgresEngine};
use crate::access::{AmOpen, EngineCounters, GcReport, Recovering, TableId, TableRelations};
use crate::catalog::{Row, TableDef, Value};
use crate::clustered::{ClusteredAm, PurgeConfig};
use crate::design::{DesignConfig, SystemVersioning, TableLayout, VersionStorage};
use crate::error::{Error, Result};
use crate::heap::{HeapAm, TableStats, VacuumConfig};
use crate::mvcc::Isolation;
use crate::recovery;
use crate::storage::{Storage, StorageConfig};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    pub purge: PurgeConfig,
}

impl DatabaseConfig {
    /// Storage defaults shaped by `design`: page size, torn-page protection, replacement
    /// policy, and an OS page cache of 1 GiB when the design has one (pick the size to
    /// match the experiment).
    pub fn new(design: DesignConfig) -> Self {
        let mut storage = StorageConfig::default();
        fix_design_fields(&mut storage, &design);
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
            // Linear read-ahead at MariaDB's defaults (buf0rea.cc buf_read_ahead_linear:
            // 64-page areas, innodb_read_ahead_threshold 56).
            storage.buffer_pool.linear_read_ahead =
                Some(crate::buffer::read_ahead::LinearReadAheadConfig::innodb_default());
        }
        DatabaseConfig {
            design,
            storage,
            vacuum: VacuumConfig::default(),
            purge: Default::default(),
        }
    }
}

/// Sets the storage fields the design decides and no storage setting may change: page
/// size, torn-page protection, the WAL record format, and the page cleaner's neighbour
/// flushing (the design's `flush_neighbors` on a rotational device, else off). [`DatabaseConfig::new`] starts
/// from them and [`Database::open`] applies them again over whatever storage settings it
/// is given.
fn fix_design_fields(storage: &mut StorageConfig, design: &DesignConfig) {
    storage.page_size = design.page_size;
    storage.torn_page_protection = design.torn_page_protection;
    storage.wal.record_format = design.wal_record_format;
    // MariaDB flushes neighbours only when the tablespace is on rotational storage
    // (buf0flu.cc `buf_do_flush_list_batch`, `buf_flush_LRU_list_batch`:
    // `neighbors && space->is_rotational()`).
    storage.buffer_pool.page_cleaner.flush_neighbors = if storage.nvme.rotational {
        design.flush_neighbors
    } else {
        crate::buffer::FlushNeighbors::Off
    };
}

/// An open database. Share it by `Arc` between threads; every method takes `&self`.
pub struct Database {
    design: DesignConfig,
    storage: Arc<Storage>,
    engine: Box<dyn Engine>,
    recovery: recovery::RecoveryReport,
}

/// The catalog's name for a design's table layout and version storage, as `Heap/AppendO2n`
/// (with `/Timestamp/SameIndex` appended when tables are system-versioned).
fn layout_name(d: &DesignConfig) -> String {
    let mut s = format!("{:?}/{:?}", d.table_layout, d.version_storage);
    if d.system_versioning != SystemVersioning::Off {
        s.push_str(&format!(
            "/{:?}/{:?}",
            d.system_versioning, d.history_storage
        ));
    }
    s
}

impl Database {
    /// Opens a database with `cfg`.
    ///
    /// Errors: [`Error::InvalidConfig`] for an impossible or not yet built combination of
    /// switches (naming them); storage errors.
    pub fn open(cfg: DatabaseConfig) -> Result<Database> {
        cfg.design.validate()?;
        let versioned = (cfg.design.system_versioning != SystemVersioning::Off)
            .then_some(cfg.design.history_storage);
        let by_trx_id = cfg.design.system_versioning == SystemVersioning::TrxId;
        let mut storage_cfg = cfg.storage.clone();
        fix_design_fields(&mut storage_cfg, &cfg.design);
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
        let open = AmOpen {
            storage: storage.clone(),
            design: cfg.design.clone(),
            recovering: (!fresh).then_some(Recovering {
                catalog: &catalog,
                redone: &mut redone,
            }),
        };
        let engine: Box<dyn Engine> = match (cfg.design.table_layout, cfg.design.version_storage) {
            (TableLayout::Heap, VersionStorage::AppendO2n) => {
                Box::new(
                    PostgresEngine::new(HeapAm::open(open, cfg.vacuum.clone())?)
                        .with_system_versioning(versioned, by_trx_id)
                        .with_history_partitions(
                            cfg.design.history_partitions,
                            cfg.design.history_partition_limit,
                        )
                        .with_history_interval(
                            cfg.design.history_partition_interval_s,
                            cfg.design.history_partition_starts_unix_s,
                        ),
                )
            }
            (TableLayout::Clustered, VersionStorage::UndoDelta) => {
                Box::new(
                    InnodbEngine::new(ClusteredAm::open(open, cfg.purge.clone())?)
                        .with_system_versioning(versioned, by_trx_id)
                        .with_history_partitions(
                            cfg.design.history_partitions,
                            cfg.design.history_partition_limit,
                        )
                        .with_history_interval(
                            cfg.design.history_partition_interval_s,
                            cfg.design.history_partition_starts_unix_s,
                        ),
                )
            }
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
        if !fresh && !redone.clean_shutdown {
            // Only after a crash (or a close that an error left with a split incomplete):
            // a shutdown checkpoint guarantees none, and the walk would read every page of
            // every tree (PostgreSQL runs no recovery after a clean shutdown, xlog.c
            // `StartupXLOG`; MariaDB's B-tree changes are atomic mini-transactions).
            let _c = crate::stats::enter(crate::stats::Cause::Recovery);
            redone.report.splits_finished += db.engine.finish_incomplete_splits()?;
        }
        let registry_created = {
            let _c = crate::stats::enter(crate::stats::Cause::Ddl);
            db.engine.ensure_transaction_registry()?
        };
        if fresh || registry_created {
            // The design-wide relations (the undo log, the transaction registry) are in the
            // catalog from the start.
            db.log_catalog()?;
        } else if redone.report.records_replayed > 1 {
            // More than the shutdown checkpoint's record: the database had crashed.
            db.storage.checkpoint()?;
        }
        if by_trx_id && !registry_created {
            db.advance_past_registry_commit_ids()?;
        }
        db.storage.start_background();
        let mut db = db;
        redone.report.duration_us = redone.started.map_or(0, |t| t.elapsed().as_micros() as u64);
        db.recovery = redone.report;
        Ok(db)
    }

    /// Moves the transaction id sequence past the largest `commit_id` of
    /// `transaction_registry`. Commit ids come from that sequence
    /// ([`crate::mvcc::TransactionManager::new_trx_id`]) but no WAL record names them as a
    /// transaction's id, so the next id that recovery finds may not be above the last
    /// commit's. MariaDB keeps that order because the serialisation number `trx->no`,
    /// taken from the same sequence after the commit id, is written in the undo log
    /// header, from which trx0rseg.cc `trx_rseg_mem_restore` restores the sequence; the
    /// preset numbers `trx->no` on its own counter, so it reads the registry instead.
    ///
    /// Errors: reading the registry; a registry row of another shape
    /// ([`Error::Corrupted`]) or a commit id beyond the xid range ([`Error::InvalidValue`]).
    fn advance_past_registry_commit_ids(&self) -> Result<()> {
        let reg = self.table_id(super::versioning::TRANSACTION_REGISTRY)?;
        let mut tx = self.begin();
        let rows = tx.scan(
            reg,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            crate::btree::ScanDirection::Forward,
            usize::MAX,
        )?;
        tx.commit()?;
        let mut last = 0i64;
        for r in &rows {
            match r.get(1) {
                Some(Value::BigInt(c)) => last = last.max(*c),
                _ => {
                    return Err(Error::corrupted(
                        "transaction_registry row of another shape",
                    ))
                }
            }
        }
        let last = crate::mvcc::Xid::try_from(last).map_err(|_| {
            Error::InvalidValue(format!(
                "transaction_registry holds commit_id {last}, beyond the transaction id range"
            ))
        })?;
        self.engine.advance_past_commit_id(last);
        Ok(())
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

    /// `ALTER TABLE t DROP PARTITION partition` of a history partition of a table
    /// partitioned BY SYSTEM_TIME (`history_storage=partition`; partition names from
    /// [`super::history_partitions::partition_names`]), in a transaction of its own: its
    /// rows deleted and the drop recorded in `dropped_partitions` (created, cause `ddl`,
    /// the first time), so that history goes to the remaining partitions and reads no
    /// longer see the dropped rows ([`super::history_partitions`]). Returns the rows
    /// removed.
    ///
    /// Errors: [`Error::Catalog`] for the current partition or the last history partition
    /// (MariaDB ER_VERS_WRONG_PARTS), a name that is no (remaining) history partition
    /// (ER_DROP_PARTITION_NON_EXISTENT), a table not partitioned BY SYSTEM_TIME; the
    /// transaction's errors (it is rolled back).
    pub fn drop_partition(&self, t: TableId, partition: &str) -> Result<u64> {
        let created = {
            let _c = crate::stats::enter(crate::stats::Cause::Ddl);
            self.engine.ensure_dropped_partitions()?
        };
        if created {
            self.log_catalog()?;
        }
        let mut tx = self.begin();
        let n = tx.drop_history_partition(t, partition)?;
        tx.commit()?;
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
        Transaction::new(self.engine.begin(iso))
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
    pub fn analyze(&self, t: TableId) -> Result<crate::access::AnalyzeReport> {
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
        s.heap_blks_written = heap.blks_written;
        for rel in rels.index_relations() {
            let io = pool.rel_io(rel);
            s.idx_blks_hit += io.blks_hit;
            s.idx_blks_read += io.blks_read;
            s.idx_blks_written += io.blks_written;
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

    /// The undo log's relation (innodb: rollback segment headers and undo pages), or
    /// `None` for a design without one.
    pub fn undo_relation(&self) -> Option<crate::device::FileId> {
        self.engine.catalog().undo_relation
    }

    /// Stops background work and closes the storage with a checkpoint.
    ///
    /// Errors: those of the final checkpoint.
    pub fn close(self) -> Result<()> {
        self.engine.shutdown();
        // The shutdown checkpoint runs while the engine lives, so that its checkpoint hook
        // (the clog) takes part. It is marked a shutdown checkpoint unless an error left a
        // B+tree split incomplete, which the next open must then finish.
        let clean = !self.engine.incomplete_split_left();
        self.storage.shutdown_marked(clean)
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
