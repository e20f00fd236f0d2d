//! A measured phase on the embedded engine: a [`Mark`] of the counters at its start and
//! the [`PhaseDelta`] from the mark to now, with every counter subtracted by the engine
//! (`StorageSnapshot::delta`, `EngineCounters::delta`, `TableStats::delta_sum`). Used by
//! an embedded run and by the named experiments alike.

use anyhow::Result;
use mvcclab_engine::db::{Database, EngineCounters, TableId};
use mvcclab_engine::heap::TableStats;
use mvcclab_engine::stats::Counters;
use mvcclab_engine::storage::StorageSnapshot;
use mvcclab_engine::wal::RecordTypeCounts;
use std::collections::BTreeMap;

/// The start of a measured phase on some tables: their counters, the engine's and the
/// storage's. Used by `run`/`compare` and the named experiments alike.
pub struct Mark {
    tables: Vec<TableStats>,
    engine: EngineCounters,
    storage: StorageSnapshot,
    wal_types: BTreeMap<String, RecordTypeCounts>,
}

/// What a phase did, from a [`Mark`] to now.
pub struct PhaseDelta {
    /// Storage counters of the phase; its state fields (compression, pool) are the
    /// current ones.
    pub storage: StorageSnapshot,
    /// Table counters of the phase, summed over the tables (see `TableStats::delta_sum`).
    pub tables: TableStats,
    /// Engine counters of the phase (see `EngineCounters::delta`).
    pub engine: EngineCounters,
    /// Pages of the tables now: (table or clustered index, other indexes), summed.
    pub pages: (u64, u64),
    /// The same per table, by name.
    pub pages_by_table: BTreeMap<String, (u64, u64)>,
    /// WAL records of the phase by record type (types with records only).
    pub wal_by_record: BTreeMap<String, RecordTypeCounts>,
}

impl Mark {
    /// Marks the start of a phase on `tables`. Errors: [`mvcclab_engine::Error::Catalog`].
    pub fn take(db: &Database, tables: &[TableId]) -> Result<Mark> {
        Ok(Mark {
            tables: stats_of(db, tables)?,
            engine: db.engine_counters(),
            storage: db.storage().snapshot(),
            wal_types: db.wal_record_types(),
        })
    }

    /// The storage's counts by cause since the mark: a read of the counters only, cheap
    /// enough for every sample of a time series (bench/series.rs).
    pub fn io_since(&self, db: &Database) -> Counters {
        db.storage()
            .stats()
            .snapshot()
            .delta(&self.storage.counters)
    }

    /// The engine's counters since the mark (`EngineCounters::delta`: counts since the
    /// mark, state values as they are now), for a time series' samples (bench/series.rs).
    pub fn engine_since(&self, db: &Database) -> EngineCounters {
        db.engine_counters().delta(&self.engine)
    }

    /// What happened on `tables` (those of [`Mark::take`]) since the mark.
    /// Errors: [`mvcclab_engine::Error::Catalog`]; storage errors counting pages.
    pub fn since(&self, db: &Database, tables: &[TableId]) -> Result<PhaseDelta> {
        let mut pages = (0, 0);
        let mut pages_by_table = BTreeMap::new();
        for &t in tables {
            let (p, i) = db.table_pages(t)?;
            pages.0 += p;
            pages.1 += i;
            pages_by_table.insert(db.table_def(t)?.name, (p, i));
        }
        Ok(PhaseDelta {
            storage: db.storage().snapshot().delta(&self.storage),
            tables: TableStats::delta_sum(&stats_of(db, tables)?, &self.tables),
            engine: db.engine_counters().delta(&self.engine),
            pages,
            pages_by_table,
            wal_by_record: db
                .wal_record_types()
                .into_iter()
                .map(|(n, c)| {
                    let d = c.minus(&self.wal_types.get(&n).copied().unwrap_or_default());
                    (n, d)
                })
                .filter(|(_, d)| d.records > 0)
                .collect(),
        })
    }
}

fn stats_of(db: &Database, tables: &[TableId]) -> Result<Vec<TableStats>> {
    Ok(tables
        .iter()
        .map(|&t| db.table_stats(t))
        .collect::<Result<_, _>>()?)
}
