//! The server's catalog: SQL table names mapped to the engine's tables, with what SQL
//! declares and the engine does not keep (SERIAL sequences, column defaults).
//!
//! The engine has no DROP TABLE or TRUNCATE: a dropped table leaves the map (its relation
//! files stay until the server exits, as the server's database is a scratch one), and a
//! TRUNCATE or a recreated table gets a fresh engine table named `name_gN` (generation N).
//!
//! Schema knowledge of the two real clients (the engine's tables cannot gain an index or a
//! primary key after their rows):
//! - sysbench's `sbtestN` (oltp_common.lua `create_table`: CREATE TABLE, INSERTs, then
//!   `CREATE INDEX k_N ON sbtestN(k)`) is created with its secondary index `k_N` deferred
//!   ([`Database::create_table_for_load`]), which the CREATE INDEX then builds sorted;
//! - pgbench's tables (pgbench.c `initCreateTables` / `initCreatePKeys`: the primary keys
//!   are added after the COPY) are created with the primary key pgbench will add, and the
//!   ALTER TABLE … ADD PRIMARY KEY checks that it is that key.

use crate::error::SqlError;
use crate::operand::Arg;
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef};
use mvcclab_engine::db::{Database, TableId};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// A column as CREATE TABLE declared it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSpec {
    /// Column name.
    pub name: String,
    /// Engine type.
    pub ty: ColumnType,
    /// NOT NULL (also for primary-key and SERIAL columns).
    pub not_null: bool,
    /// DEFAULT operand.
    pub default: Option<Arg>,
    /// SERIAL: values from the table's sequence when the column is omitted.
    pub serial: bool,
}

/// A table of the server.
pub struct SqlTable {
    /// The engine's table.
    pub id: TableId,
    /// The engine's definition, with the SQL name.
    pub def: TableDef,
    /// The columns as declared.
    pub columns: Vec<ColumnSpec>,
    /// The SERIAL column's sequence: the last value given.
    pub sequence: AtomicI64,
    /// Whether the secondary indexes are deferred until CREATE INDEX (sysbench's load).
    pub deferred_index: parking_lot::Mutex<bool>,
}

impl SqlTable {
    /// A column's position by its (folded) name. Errors: 42703.
    pub fn column(&self, name: &str) -> Result<usize, SqlError> {
        self.def
            .columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| {
                SqlError::new(
                    "42703",
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        self.def.name
                    ),
                )
            })
    }
}

/// The SQL names of the server's tables and its settings.
pub struct Catalog {
    db: Arc<Database>,
    tables: RwLock<HashMap<String, Arc<SqlTable>>>,
    generation: AtomicU64,
    design_name: String,
    /// Serialises DDL (the engine's catalog is logged per DDL; the map follows it).
    ddl: parking_lot::Mutex<()>,
}

/// pgbench's tables and the primary key `pgbench -i` adds after the load
/// (pgbench.c `initCreatePKeys`).
const PGBENCH_KEYS: [(&str, &str); 3] = [
    ("pgbench_branches", "bid"),
    ("pgbench_tellers", "tid"),
    ("pgbench_accounts", "aid"),
];

impl Catalog {
    /// The catalog of a server over `db`, whose design is called `design_name`.
    pub fn new(db: Arc<Database>, design_name: String) -> Self {
        Catalog {
            db,
            tables: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            design_name,
            ddl: parking_lot::Mutex::new(()),
        }
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The value of a setting SHOW can read: `mvcclab.design`, `server_version`,
    /// `transaction_isolation` (the design's default), `fillfactor`.
    pub fn setting(&self, name: &str) -> Option<String> {
        let d = self.db.design();
        Some(match name {
            "mvcclab.design" => self.design_name.clone(),
            "server_version" => "15.0 (mvcclab)".into(),
            "transaction_isolation" | "default_transaction_isolation" => {
                match d.default_isolation {
                    mvcclab_engine::mvcc::Isolation::ReadCommitted => "read committed".into(),
                    mvcclab_engine::mvcc::Isolation::RepeatableRead => "repeatable read".into(),
                }
            }
            "mvcclab.fillfactor" => d.fillfactor.to_string(),
            _ => return None,
        })
    }

    /// The table called `name`. Errors: 42P01.
    pub fn lookup(&self, name: &str) -> Result<Arc<SqlTable>, SqlError> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| SqlError::new("42P01", format!("relation \"{name}\" does not exist")))
    }

    /// An engine name for the SQL name `name` that no engine table has.
    fn engine_name(&self, name: &str) -> String {
        if self.db.table_id(name).is_err() {
            return name.to_string();
        }
        loop {
            let g = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
            let candidate = format!("{}_g{g}", &name[..name.len().min(50)]);
            if self.db.table_id(&candidate).is_err() {
                return candidate;
            }
        }
    }

    /// CREATE TABLE (a table without a primary key too: pgbench_history; the engine's
    /// plain heap or InnoDB's hidden DB_ROW_ID). Errors: 42P07 when it exists (unless
    /// `if_not_exists`); engine catalog errors as 42P16.
    pub fn create_table(
        &self,
        name: &str,
        columns: Vec<ColumnSpec>,
        mut primary_key: Vec<usize>,
        if_not_exists: bool,
    ) -> Result<bool, SqlError> {
        let _ddl = self.ddl.lock();
        if self.tables.read().contains_key(name) {
            if if_not_exists {
                return Ok(false);
            }
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{name}\" already exists"),
            ));
        }
        if primary_key.is_empty() {
            if let Some((_, key)) = PGBENCH_KEYS.iter().find(|(t, _)| *t == name) {
                if let Some(i) = columns.iter().position(|c| c.name == *key) {
                    primary_key.push(i);
                }
            }
        }
        let mut def = TableDef {
            name: name.to_string(),
            columns: columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if c.not_null || primary_key.contains(&i) {
                        Column::not_null(c.name.clone(), c.ty)
                    } else {
                        Column::nullable(c.name.clone(), c.ty)
                    }
                })
                .collect(),
            primary_key,
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
        };
        // sysbench's sbtestN: its k_N index comes after the load.
        let sb = name
            .strip_prefix("sbtest")
            .and_then(|n| n.parse::<u32>().ok())
            .map(mvcclab_workload::sysbench::sbtest_def)
            .filter(|sb| sb.columns == def.columns && sb.primary_key == def.primary_key);
        let deferred = sb.is_some();
        if let Some(sb) = sb {
            def.indexes = sb.indexes;
        }
        let t = self.create_engine_table(def.clone(), deferred)?;
        self.tables.write().insert(
            name.to_string(),
            Arc::new(SqlTable {
                id: t,
                def,
                columns,
                sequence: AtomicI64::new(0),
                deferred_index: parking_lot::Mutex::new(deferred),
            }),
        );
        Ok(true)
    }

    fn create_engine_table(&self, mut def: TableDef, deferred: bool) -> Result<TableId, SqlError> {
        def.name = self.engine_name(&def.name);
        let r = if deferred {
            self.db.create_table_for_load(def)
        } else {
            self.db.create_table(def)
        };
        r.map_err(crate::error::engine_error)
    }

    /// DROP TABLE. Errors: 42P01 for an unknown table unless `if_exists`.
    pub fn drop_tables(&self, names: &[String], if_exists: bool) -> Result<(), SqlError> {
        let _ddl = self.ddl.lock();
        let mut map = self.tables.write();
        if !if_exists {
            if let Some(n) = names.iter().find(|n| !map.contains_key(n.as_str())) {
                return Err(SqlError::new(
                    "42P01",
                    format!("table \"{n}\" does not exist"),
                ));
            }
        }
        for n in names {
            map.remove(n);
        }
        Ok(())
    }

    /// TRUNCATE: each table gets a fresh, empty engine table (not transactional: it takes
    /// effect at once, also inside a transaction block). Errors: 42P01.
    pub fn truncate(&self, names: &[String]) -> Result<(), SqlError> {
        let _ddl = self.ddl.lock();
        for n in names {
            let old = self.lookup(n)?;
            let deferred = *old.deferred_index.lock();
            let id = self.create_engine_table(old.def.clone(), deferred)?;
            self.tables.write().insert(
                n.clone(),
                Arc::new(SqlTable {
                    id,
                    def: old.def.clone(),
                    columns: old.columns.clone(),
                    sequence: AtomicI64::new(0),
                    deferred_index: parking_lot::Mutex::new(deferred),
                }),
            );
        }
        Ok(())
    }

    /// CREATE INDEX: builds a deferred index (sysbench's `k_N`), or, on an empty table,
    /// recreates it with the index. Errors: 0A000 for an index on a table with rows;
    /// 42P01, 42703.
    pub fn create_index(
        &self,
        name: &str,
        table: &str,
        columns: &[String],
        unique: bool,
    ) -> Result<(), SqlError> {
        let _ddl = self.ddl.lock();
        let t = self.lookup(table)?;
        let cols = columns
            .iter()
            .map(|c| t.column(c))
            .collect::<Result<Vec<_>, _>>()?;
        {
            let mut deferred = t.deferred_index.lock();
            if *deferred {
                if let Some(ix) = t.def.indexes.iter().find(|ix| ix.columns == cols) {
                    if ix.unique == unique {
                        self.db
                            .build_secondary_indexes(t.id)
                            .map_err(crate::error::engine_error)?;
                        *deferred = false;
                        return Ok(());
                    }
                }
            }
        }
        let mut tx = self.db.begin();
        let empty = tx
            .scan(
                t.id,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                mvcclab_engine::btree::ScanDirection::Forward,
                1,
            )
            .map_err(crate::error::engine_error)?
            .is_empty();
        let _ = tx.commit();
        if !empty {
            return Err(SqlError::new(
                "0A000",
                format!(
                    "not supported by mvcclab serve: CREATE INDEX {name} on table \"{table}\", \
                     which has rows (the engine builds secondary indexes only after a load it \
                     was told of; create the index before inserting)"
                ),
            ));
        }
        let mut def = t.def.clone();
        def.indexes.push(IndexDef {
            name: name.to_string(),
            columns: cols,
            unique,
        });
        let id = self.create_engine_table(def.clone(), false)?;
        self.tables.write().insert(
            table.to_string(),
            Arc::new(SqlTable {
                id,
                def,
                columns: t.columns.clone(),
                sequence: AtomicI64::new(t.sequence.load(Ordering::Relaxed)),
                deferred_index: parking_lot::Mutex::new(false),
            }),
        );
        Ok(())
    }

    /// ALTER TABLE … ADD PRIMARY KEY: accepted when it is the key the table already has
    /// (pgbench's tables, see the module doc). Errors: 0A000 otherwise; 42P01, 42703.
    pub fn add_primary_key(&self, table: &str, columns: &[String]) -> Result<(), SqlError> {
        let t = self.lookup(table)?;
        let cols = columns
            .iter()
            .map(|c| t.column(c))
            .collect::<Result<Vec<_>, _>>()?;
        if cols == t.def.primary_key {
            Ok(())
        } else {
            Err(SqlError::new(
                "0A000",
                format!(
                    "not supported by mvcclab serve: ALTER TABLE {table} ADD PRIMARY KEY other \
                     than the key the table was created with"
                ),
            ))
        }
    }

    /// Every table: (SQL name, table).
    pub fn all(&self) -> Vec<(String, Arc<SqlTable>)> {
        let mut v: Vec<_> = self
            .tables
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}
