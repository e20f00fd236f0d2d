//! MariaDB 10.11 (InnoDB) as a target: sysbench's tables loaded as `oltp_common.lua` loads
//! them for the mysql driver (`ENGINE = InnoDB`, AUTO_INCREMENT ids), the workload sent
//! through the `mysql` crate with server-side prepared statements (sysbench's default
//! `--db-ps-mode=auto`), and the server's counters read before and after the measured
//! phase: `SHOW GLOBAL STATUS` (the `Innodb_*` variables; MariaDB KB "InnoDB Status
//! Variables") and `information_schema.INNODB_METRICS` (every counter enabled at start-up
//! with `innodb_monitor_enable=all`; KB "Information Schema INNODB_METRICS Table").
//!
//! MyRocks (`real:myrocks`) is the same server started with the RocksDB plugin
//! (managed.rs): the tables are created `ENGINE = ROCKSDB` (sysbench's
//! `--mysql-storage-engine=rocksdb`), a snapshot adds `SHOW GLOBAL STATUS LIKE 'Rocksdb%'`
//! (KB "MyRocks Status Variables"), and settling also flushes the memtables to SST files
//! (`rocksdb_force_flush_memtable_now`, KB "MyRocks System Variables").
//!
//! Before the warm-up the buffer pool is flushed to zero dirty pages (setting
//! `innodb_max_dirty_pages_pct=0` until `Innodb_buffer_pool_pages_dirty` reads 0, the
//! documented way to make the page cleaner flush everything; KB "InnoDB Page Flushing") and
//! purge is let catch up (history list length 0).

use crate::file_class::mariadb_class;
use crate::managed::ManagedServer;
use crate::{
    device_io_text, device_snapshot, RealServer, ServerError, ServerInfo, ServerKind,
    ServerOptions, Snapshot,
};
use mvcclab_workload::driver::{ErrorCode, OpError, Session, Target};
use mvcclab_workload::sql::{self, Dialect, Param};
use mvcclab_workload::sysbench::{Op, SysbenchOptions, WorkloadKind};
use mvcclab_workload::tpcc_embedded::CheckOutcome;
use mvcclab_workload::tpcc_sql::{self, SqlConn, TextRows};
use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, Params, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const KIND: ServerKind = ServerKind::MariaDb;

/// The workload's tables as a regular expression over a table's name (sysbench's
/// `sbtestN`, sysbench-tpcc's nine tables with their set number, the hot-set experiment's
/// table).
const WORKLOAD_TABLES: &str = concat!(workload_table_names!(), "|hot_set");

/// INNODB_METRICS subsystems kept in a snapshot.
const METRIC_SUBSYSTEMS: &str =
    "'buffer','buffer_page_io','purge','transaction','recovery','index','lock','server'";

/// How long flushing to zero dirty pages and purge may take before `settle` gives up.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(600);

/// A MariaDB server (managed or `--url`) as a target, its tables InnoDB or (`MyRocks`)
/// RocksDB.
pub struct MariaDb {
    kind: ServerKind,
    opts: Opts,
    address: String,
    admin: Mutex<Conn>,
    version: String,
    /// INNODB_METRICS counters of type `value` (state values), learned at each snapshot.
    state_metrics: Mutex<BTreeSet<String>>,
    /// `--fillfactor`: the global `innodb_fill_factor` set before the load.
    fillfactor: Option<u8>,
    // Last field: the server is stopped after the connections above are closed.
    managed: Option<ManagedServer>,
}

/// Connects with `opts`, retrying every 200 ms for up to `wait` (a server still starting).
///
/// Errors: [`ServerError::Connect`] once `wait` has passed.
pub fn connect(opts: &Opts, wait: Duration) -> Result<Conn, ServerError> {
    let deadline = Instant::now() + wait;
    loop {
        match Conn::new(opts.clone()) {
            Ok(c) => return Ok(c),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => {
                return Err(ServerError::Connect {
                    server: KIND.name().into(),
                    address: format!("{}:{}", opts.get_ip_or_hostname(), opts.get_tcp_port()),
                    message: e.to_string(),
                })
            }
        }
    }
}

impl MariaDb {
    /// Connects to `o.url` (`mysql://` or `mariadb://`), or starts a managed server and
    /// creates database `sbtest` in it.
    ///
    /// Errors: [`ServerError`] from start-up, connection, or a bad URL
    /// ([`ServerError::Usage`]).
    pub fn open(kind: ServerKind, o: &ServerOptions) -> Result<MariaDb, ServerError> {
        let (managed, opts) = match &o.url {
            Some(u) => {
                let u = u.replacen("mariadb://", "mysql://", 1);
                let parsed = Opts::from_url(&u)
                    .map_err(|e| ServerError::Usage(format!("--url '{u}': {e}")))?;
                (
                    None,
                    Opts::from(OptsBuilder::from_opts(parsed).prefer_socket(false)),
                )
            }
            None => {
                let m = ManagedServer::start(kind, &o.managed)?;
                let b = OptsBuilder::new()
                    .ip_or_hostname(Some("127.0.0.1"))
                    .tcp_port(m.port())
                    .user(Some("root"))
                    .prefer_socket(false);
                (Some(m), Opts::from(b))
            }
        };
        let mut admin = connect(&opts, Duration::from_secs(60))?;
        let opts = if let Some(m) = &managed {
            if !m.restored() {
                admin
                    .query_drop("CREATE DATABASE sbtest")
                    .map_err(|e| ServerError::sql(KIND, "CREATE DATABASE sbtest", e))?;
            }
            let o = Opts::from(OptsBuilder::from_opts(opts).db_name(Some("sbtest")));
            admin = connect(&o, Duration::from_secs(10))?;
            o
        } else {
            opts
        };
        let version: String = admin
            .query_first("SELECT version()")
            .map_err(|e| ServerError::sql(KIND, "SELECT version()", e))?
            .unwrap_or_default();
        let address = format!("{}:{}", opts.get_ip_or_hostname(), opts.get_tcp_port());
        Ok(MariaDb {
            kind,
            opts,
            address,
            admin: Mutex::new(admin),
            version,
            state_metrics: Mutex::new(BTreeSet::new()),
            fillfactor: o.fillfactor,
            managed,
        })
    }

    fn admin(&self) -> std::sync::MutexGuard<'_, Conn> {
        self.admin.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn exec(&self, sql: &str) -> Result<(), ServerError> {
        self.admin()
            .query_drop(sql)
            .map_err(|e| ServerError::sql(KIND, sql, e))
    }

    /// The status variables, INNODB_METRICS, the workload tables' sizes, the device's and
    /// the process's counters: a snapshot without the buffer pool census.
    ///
    /// Errors: [`ServerError::Sql`].
    fn counters(&self) -> Result<Snapshot, ServerError> {
        let mut s = Snapshot::new();
        // One statement for every variable a snapshot keeps.
        let names: Vec<String> = STATUS_VARIABLES.iter().map(|n| format!("'{n}'")).collect();
        let condition = format!(
            "Variable_name LIKE 'Innodb_%'{} OR Variable_name IN ({})",
            if self.kind == ServerKind::MyRocks {
                " OR Variable_name LIKE 'Rocksdb_%'"
            } else {
                ""
            },
            names.join(",")
        );
        for (k, v) in self.status(&condition)? {
            s.insert(format!("global_status.{k}"), v);
        }
        let q = format!(
            "SELECT NAME, COUNT, CAST(TYPE AS CHAR) FROM information_schema.INNODB_METRICS \
             WHERE ENABLED = 1 AND SUBSYSTEM IN ({METRIC_SUBSYSTEMS})"
        );
        let rows: Vec<(String, i64, String)> = self
            .admin()
            .query(&q)
            .map_err(|e| ServerError::sql(KIND, &q, e))?;
        let mut state = self.state_metrics.lock().unwrap_or_else(|p| p.into_inner());
        for (name, count, ty) in rows {
            let key = format!("innodb_metrics.{name}");
            if ty == "value" {
                state.insert(key.clone());
            }
            s.insert(key, count as f64);
        }
        drop(state);
        let page = self.kind.page_size_bytes();
        let q = format!(
            "SELECT CAST(coalesce(sum(DATA_LENGTH), 0) / {page} AS DOUBLE), \
             CAST(coalesce(sum(INDEX_LENGTH), 0) / {page} AS DOUBLE) FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME REGEXP '^({WORKLOAD_TABLES})$'"
        );
        let sizes: Option<(f64, f64)> = self
            .admin()
            .query_first(&q)
            .map_err(|e| ServerError::sql(KIND, &q, e))?;
        let (t, i) = sizes.unwrap_or_default();
        s.insert("space.table_pages".into(), t);
        s.insert("space.index_pages".into(), i);
        device_snapshot(self.managed.as_ref(), &mut s)?;
        // A managed server's CPU use (mariadbd is one process: its own fields cover its
        // exited threads' times and faults, not their context switches; cpu.rs).
        if let Some(pid) = self.managed.as_ref().and_then(|m| m.pid()) {
            if let Ok(t) = crate::cpu::tree_cpu(pid) {
                crate::cpu::snapshot_entries(&t, &mut s);
            }
        }
        Ok(s)
    }

    /// The buffer pool by owner from `information_schema.INNODB_BUFFER_PAGE`, in the
    /// classes a preset's pool report gives (crates/cli/src/bench/figures.rs `PoolOwners`):
    /// `innodb_buffer_page.owner_<class>_pages`, `_dirty` (`OLDEST_MODIFICATION > 0`) and
    /// `_old` (`IS_OLD`, an integer 0 or 1 in 10.11: comparing it with `'YES'` counts the
    /// young blocks), class `table` (the PRIMARY or GEN_CLUST_INDEX of a workload
    /// table), `index` (its other indexes), `undo` (`UNDO_LOG` pages), `freed` (a FILE_PAGE
    /// block of type `UNKNOWN`: a page freed while resident, buf0buf.cc `buf_page_free`,
    /// whose identity handler/i_s.cc no longer reads — `i_s_innodb_buffer_page_get_info`
    /// fills in nothing else for a FREED block, so its space, page number,
    /// `OLDEST_MODIFICATION` and `IS_OLD` read 0 and `owner_freed_dirty`/`_old` are always
    /// 0; a block being read in shows the same), `memory` (blocks lent to the adaptive hash index and lock heaps), `system`
    /// (the rest: rollback segment headers, dictionary and file-space pages); and
    /// `innodb_buffer_page.unused` (`NOT_USED`: the free list). State values. The view
    /// copies every block's descriptor under the buffer pool mutex, so it is read in the
    /// snapshots around a phase, not in a time series' samples. Blocks are counted by
    /// distinct `BLOCK_ID`: for a pool of more than 10,000 blocks (MAX_BUF_INFO_CACHED)
    /// MariaDB 10.11's `i_s_innodb_buffer_page_fill` emits its last batch at the full
    /// batch size, the rows past the pool's end zeroed (`NOT_USED`, `BLOCK_ID` 0), which
    /// a plain count takes for free blocks (3,776 of them in a 256 MiB pool). Block 0
    /// counts once whatever its state, so `unused` can be one too many.
    ///
    /// Errors: [`ServerError::Sql`].
    fn read_buffer_page(&self, s: &mut Snapshot) -> Result<(), ServerError> {
        let q = format!(
            "SELECT CASE \
               WHEN PAGE_STATE = 'NOT_USED' THEN 'unused' \
               WHEN PAGE_STATE <> 'FILE_PAGE' THEN 'memory' \
               WHEN PAGE_TYPE = 'UNKNOWN' THEN 'freed' \
               WHEN PAGE_TYPE = 'UNDO_LOG' THEN 'undo' \
               WHEN PAGE_TYPE = 'INDEX' AND TABLE_NAME REGEXP \
                 CONCAT('^`', DATABASE(), '`\\\\.`({WORKLOAD_TABLES})`$') THEN \
                 IF(INDEX_NAME IN ('PRIMARY', 'GEN_CLUST_INDEX'), 'table', 'index') \
               ELSE 'system' END AS owner, \
             CAST(COUNT(DISTINCT BLOCK_ID) AS DOUBLE), \
             CAST(SUM(OLDEST_MODIFICATION > 0) AS DOUBLE), \
             CAST(SUM(IS_OLD = 1) AS DOUBLE) \
             FROM information_schema.INNODB_BUFFER_PAGE GROUP BY owner"
        );
        let rows: Vec<(String, f64, f64, f64)> = self
            .admin()
            .query(&q)
            .map_err(|e| ServerError::sql(KIND, &q, e))?;
        for (owner, pages, dirty, old) in rows {
            if owner == "unused" {
                s.insert("innodb_buffer_page.unused".into(), pages);
                continue;
            }
            for (what, v) in [("pages", pages), ("dirty", dirty), ("old", old)] {
                s.insert(format!("innodb_buffer_page.owner_{owner}_{what}"), v);
            }
        }
        Ok(())
    }

    /// `SHOW GLOBAL STATUS` values whose name matches the SQL `condition`, numeric ones
    /// only.
    fn status(&self, condition: &str) -> Result<BTreeMap<String, f64>, ServerError> {
        let q = format!("SHOW GLOBAL STATUS WHERE {condition}");
        let rows: Vec<(String, String)> = self
            .admin()
            .query(&q)
            .map_err(|e| ServerError::sql(KIND, &q, e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
            .collect())
    }

    fn status_value(&self, name: &str) -> Result<f64, ServerError> {
        self.status(&format!("Variable_name = '{name}'"))?
            .get(name)
            .copied()
            .ok_or_else(|| ServerError::Counters(format!("SHOW GLOBAL STATUS has no {name}")))
    }

    /// Waits until `name` reads 0, or fails after [`SETTLE_TIMEOUT`].
    fn wait_for_zero(&self, name: &str, what: &str) -> Result<(), ServerError> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let v = self.status_value(name)?;
            if v == 0.0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ServerError::Timeout(format!(
                    "mariadb: {what}: {name} still {v} after {} s",
                    SETTLE_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Target for MariaDb {
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<(), String> {
        // MyRocks: the engine sysbench's `--mysql-storage-engine=rocksdb` writes into the
        // CREATE TABLE (oltp_common.lua `create_table`). Its secondary index built after
        // the load goes the COPY way: the in-place build writes an SST file and hard-links
        // it into the database (ha_rocksdb.cc `inplace_populate_sk`, bulk load), and
        // mvcclab's FUSE device has no link(2) (measured: "while link file to
        // ./#rocksdb/000012.sst: Operation not permitted").
        let engine = |q: &str| {
            if self.kind != ServerKind::MyRocks {
                q.to_string()
            } else if q.starts_with("CREATE INDEX") {
                format!("{q} ALGORITHM=COPY")
            } else {
                q.replace("ENGINE = InnoDB", "ENGINE = ROCKSDB")
            }
        };
        let exec = |q: &str| self.exec(&engine(q)).map_err(|e| e.to_string());
        if let Some(f) = self.fillfactor {
            // The only fill factor InnoDB has: the leaf and non-leaf fill of sorted index
            // builds (CREATE INDEX on a loaded table, table rebuilds); row-by-row inserts
            // fill pages as they always do (MariaDB KB "innodb_fill_factor").
            exec(&format!("SET GLOBAL innodb_fill_factor = {f}"))?;
        }
        if kind == WorkloadKind::Tpcc {
            tpcc_sql::load(Dialect::MySql, opts, seed, None, &exec)?;
            for t in crate::tpcc_tables(opts) {
                exec(&format!("ANALYZE TABLE {t}"))?;
            }
            return Ok(());
        }
        crate::load_sbtest(
            Dialect::MySql,
            kind,
            opts,
            seed,
            &|q| self.exec(&engine(q)),
            &|_| Vec::new(),
            &|n| vec![format!("ANALYZE TABLE sbtest{n}")],
        )
    }

    fn session(&self) -> Result<Box<dyn Session + '_>, String> {
        let conn = connect(&session_opts(&self.opts), Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        Ok(Box::new(MariaSession {
            conn,
            statements: HashMap::new(),
            in_transaction: false,
            tpcc_setup: false,
        }))
    }
}

/// `opts` for a driver thread's connection: the `mysql` crate's own statement cache off
/// (size 0), so that [`MariaSession::statements`] alone holds the prepared statements and
/// every one stays prepared for the connection's life, as sysbench keeps them
/// (oltp_common.lua `prepare_statements`: each table's statements prepared once per
/// thread, closed at disconnect).
///
/// With the crate's default cache of 32 (`mysql` 28, `DEFAULT_STMT_CACHE_SIZE`) a
/// connection that prepares more statements than that (oltp_read_write's 9 per table on 4
/// tables: 36) has the least recently used one closed on the server (`Conn::_prepare`
/// sends COM_STMT_CLOSE for what the cache evicts), and the next execution of the handle
/// kept here fails with ER_UNKNOWN_STMT_HANDLER 1243. That failed 7,203 transactions
/// against 3,385 committed in the scale grid's `sweep` oltp_read_write (docs/fidelity.md),
/// each after some of its reads had run.
fn session_opts(opts: &Opts) -> Opts {
    Opts::from(OptsBuilder::from_opts(opts.clone()).stmt_cache_size(Some(0)))
}

/// One driver thread's connection.
struct MariaSession {
    conn: Conn,
    /// Server-side prepared statements by SQL text, the connection's only statement cache
    /// ([`session_opts`]).
    statements: HashMap<String, mysql::Statement>,
    in_transaction: bool,
    /// The TPC-C session settings have been sent (`tpcc_sql::session_setup`).
    tpcc_setup: bool,
}

/// The admin or a session connection as sysbench-tpcc's plain-query connection (the text
/// protocol: every value arrives as text).
struct MyText<'a>(&'a mut Conn);

impl SqlConn for MyText<'_> {
    fn query(&mut self, sql: &str) -> Result<TextRows, OpError> {
        let rows: Vec<mysql::Row> = self
            .0
            .query(sql)
            .map_err(|e| op_error(e).with_statement(sql))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        Value::NULL => None,
                        Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                    })
                    .collect()
            })
            .collect())
    }
}

/// A client error with the server's error number (its kind from
/// `ErrorKind::from_mariadb`); one without (a lost connection, a driver error) has no
/// code. sysbench's mysql driver ignores the numbers in `--mysql-ignore-errors` (default
/// 1213, 1020, 1205: drv_mysql.c `check_error`) and stops the run at any other.
fn op_error(e: mysql::Error) -> OpError {
    match &e {
        mysql::Error::MySqlError(m) => OpError::coded(ErrorCode::MariaDb(m.code), e.to_string()),
        _ => OpError::other(e.to_string()),
    }
}

impl Session for MariaSession {
    /// Errors: the server's ([`op_error`]), naming the statement sent.
    fn execute(&mut self, op: &Op) -> Result<(), OpError> {
        self.execute_op(op)
            .map_err(|e| sql::name_statement(Dialect::MySql, op, e))
    }

    fn rollback(&mut self) {
        if self.in_transaction {
            let _ = self.conn.query_drop("ROLLBACK");
            self.in_transaction = false;
        }
    }
}

impl MariaSession {
    fn execute_op(&mut self, op: &Op) -> Result<(), OpError> {
        if let Op::Tpcc(txn) = op {
            if !self.tpcc_setup {
                for q in tpcc_sql::session_setup(Dialect::MySql) {
                    self.conn.query_drop(q).map_err(op_error)?;
                }
                self.tpcc_setup = true;
            }
            self.in_transaction = true;
            tpcc_sql::execute(&mut MyText(&mut self.conn), txn)?;
            self.in_transaction = false;
            return Ok(());
        }
        let st = sql::statement(Dialect::MySql, op);
        match op {
            Op::Begin => self.in_transaction = true,
            Op::Commit => self.in_transaction = false,
            _ => {}
        }
        if !st.prepared {
            return self.conn.query_drop(&st.text).map_err(op_error);
        }
        let stmt = match self.statements.get(&st.text) {
            Some(s) => s.clone(),
            None => {
                let s = self.conn.prep(&st.text).map_err(op_error)?;
                self.statements.insert(st.text.clone(), s.clone());
                s
            }
        };
        let params = Params::Positional(
            st.params
                .iter()
                .map(|p| match p {
                    Param::Int(i) => Value::Int(*i as i64),
                    Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
                })
                .collect(),
        );
        if st.returns_rows {
            self.conn
                .exec::<mysql::Row, _, _>(&stmt, params)
                .map(|_| ())
                .map_err(op_error)
        } else {
            self.conn.exec_drop(&stmt, params).map_err(op_error)
        }
    }
}

/// `SHOW GLOBAL STATUS` variables a snapshot keeps beside every `Innodb_*` one: statements
/// and the rows the SQL layer wrote, updated, deleted and read.
const STATUS_VARIABLES: &[&str] = &[
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_commit",
    "Com_rollback",
    "Handler_update",
    "Handler_write",
    "Handler_delete",
    "Handler_read_key",
    "Handler_read_next",
];

/// Variables a report states.
const SETTINGS: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_page_size",
    "innodb_fill_factor",
    "innodb_log_file_size",
    "innodb_log_buffer_size",
    "innodb_flush_method",
    "innodb_flush_log_at_trx_commit",
    "innodb_doublewrite",
    "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm",
    "innodb_adaptive_flushing",
    "innodb_lru_scan_depth",
    "innodb_io_capacity",
    "innodb_purge_threads",
    "innodb_change_buffering",
    "innodb_adaptive_hash_index",
    "transaction_isolation",
    "log_bin",
];

/// Variables a MyRocks report states besides [`SETTINGS`]: its cache, whether reads and
/// flushes bypass the OS page cache, its block size and WAL sync.
const MYROCKS_SETTINGS: &[&str] = &[
    "default_storage_engine",
    "rocksdb_block_cache_size",
    "rocksdb_block_size",
    "rocksdb_use_direct_reads",
    "rocksdb_use_direct_io_for_flush_and_compaction",
    "rocksdb_flush_log_at_trx_commit",
    "rocksdb_max_background_jobs",
    "rocksdb_default_cf_options",
];

/// `SHOW GLOBAL STATUS` variables that are state values, not counts.
fn is_state_status(name: &str) -> bool {
    const STATE: &[&str] = &[
        "Rocksdb_memtable_total",
        "Rocksdb_memtable_unflushed",
        "Rocksdb_num_iterators",
        "Rocksdb_manual_compactions_running",
        "Rocksdb_block_cache_usage",
        "Rocksdb_block_cache_pinned_usage",
        "Innodb_buffer_pool_pages_data",
        "Innodb_buffer_pool_bytes_data",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_buffer_pool_bytes_dirty",
        "Innodb_buffer_pool_pages_free",
        "Innodb_buffer_pool_pages_misc",
        "Innodb_buffer_pool_pages_old",
        "Innodb_buffer_pool_pages_total",
        "Innodb_checkpoint_age",
        "Innodb_checkpoint_max_age",
        "Innodb_history_list_length",
        "Innodb_page_size",
        "Innodb_num_open_files",
        "Innodb_available_undo_logs",
        "Innodb_mem_adaptive_hash",
        "Innodb_mem_dictionary",
        "Innodb_row_lock_current_waits",
        "Innodb_row_lock_time_avg",
        "Innodb_row_lock_time_max",
        "Innodb_data_pending_fsyncs",
        "Innodb_data_pending_reads",
        "Innodb_data_pending_writes",
    ];
    STATE.contains(&name)
}

impl RealServer for MariaDb {
    fn kind(&self) -> ServerKind {
        self.kind
    }

    fn as_target(&self) -> &dyn Target {
        self
    }

    fn settle(&self, drop_caches: bool) -> Result<(), ServerError> {
        let old: String = self
            .admin()
            .query_first("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
            .map_err(|e| ServerError::sql(KIND, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct", e))?
            .unwrap_or_else(|| "90".into());
        self.exec("SET GLOBAL innodb_max_dirty_pages_pct = 0")?;
        let flushed = self
            .wait_for_zero("Innodb_history_list_length", "purge")
            .and_then(|_| self.wait_for_zero("Innodb_buffer_pool_pages_dirty", "flush"));
        self.exec(&format!("SET GLOBAL innodb_max_dirty_pages_pct = {old}"))?;
        flushed?;
        if self.kind == ServerKind::MyRocks {
            // The memtables to SST files: what a checkpoint is to InnoDB.
            self.exec("SET GLOBAL rocksdb_force_flush_memtable_now = 1")?;
        }
        if drop_caches {
            // InnoDB uses O_DIRECT, but the redo log does not. A managed server's own
            // files only; a `--url` server's are not ours to find.
            match &self.managed {
                Some(m) => m.page_cache_scope().drop()?,
                None => crate::drop_os_page_cache()?,
            }
        }
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot, ServerError> {
        let mut s = self.counters()?;
        if self.kind != ServerKind::MyRocks {
            self.read_buffer_page(&mut s)?;
        }
        Ok(s)
    }

    /// The counters without the buffer pool census, which scans every block of the pool
    /// under its mutex: what a time series samples once per interval.
    fn sample(&self) -> Result<Snapshot, ServerError> {
        self.counters()
    }

    fn is_state(&self, name: &str) -> bool {
        name.starts_with("space.")
            || name.starts_with("innodb_buffer_page.")
            || name == "cpu.processes"
            || name
                .strip_prefix("global_status.")
                .is_some_and(is_state_status)
            || self
                .state_metrics
                .lock()
                .map(|s| s.contains(name))
                .unwrap_or(false)
    }

    fn info(&self) -> ServerInfo {
        let mut settings = BTreeMap::new();
        let myrocks: &[&str] = if self.kind == ServerKind::MyRocks {
            MYROCKS_SETTINGS
        } else {
            &[]
        };
        let list: Vec<String> = SETTINGS
            .iter()
            .chain(myrocks)
            .map(|s| format!("'{s}'"))
            .collect();
        let q = format!(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})",
            list.join(",")
        );
        if let Ok(rows) = self.admin().query::<(String, String), _>(&q) {
            settings.extend(rows);
        }
        let page_cache = if self.kind == ServerKind::MyRocks {
            format!(
                "MyRocks reads its SST files through the OS page cache unless \
                 rocksdb_use_direct_reads=ON (here {}); Rocksdb_block_cache_miss counts reads the \
                 page cache may have served",
                settings
                    .get("rocksdb_use_direct_reads")
                    .cloned()
                    .unwrap_or_else(|| "?".into())
            )
        } else {
            format!(
                "InnoDB bypasses the OS page cache for data files (innodb_flush_method={}); \
                 Innodb_buffer_pool_reads are device reads",
                settings
                    .get("innodb_flush_method")
                    .cloned()
                    .unwrap_or_else(|| "?".into())
            )
        };
        ServerInfo {
            engine: self.kind.name().into(),
            version: self.version.clone(),
            managed: self.managed.is_some(),
            address: self.address.clone(),
            page_cache,
            settings,
            device_io: device_io_text(self.managed.as_ref()),
            rotational: self.managed.as_ref().and_then(|m| m.rotational()),
            ..Default::default()
        }
    }

    fn managed(&self) -> Option<&ManagedServer> {
        self.managed.as_ref()
    }

    fn managed_mut(&mut self) -> Option<&mut ManagedServer> {
        self.managed.as_mut()
    }

    fn file_classes(&self, paths: &[&str]) -> Result<BTreeMap<String, String>, ServerError> {
        Ok(paths
            .iter()
            .map(|p| (p.to_string(), mariadb_class(p)))
            .collect())
    }

    /// `information_schema.INNODB_SYS_INDEXES` joined with `INNODB_SYS_TABLES` on
    /// `TABLE_ID`; a workload table is one of this database's `WORKLOAD_TABLES`, as in
    /// `read_buffer_page`.
    fn innodb_indexes(&self) -> Result<BTreeMap<u64, (String, &'static str)>, ServerError> {
        let q = format!(
            "SELECT i.INDEX_ID, CONCAT(t.NAME, '/', i.NAME), \
               CASE WHEN t.NAME NOT REGEXP CONCAT('^', DATABASE(), '/({WORKLOAD_TABLES})$') \
                 THEN 'system' \
               WHEN i.NAME IN ('PRIMARY', 'GEN_CLUST_INDEX') THEN 'table' \
               ELSE 'index' END \
             FROM information_schema.INNODB_SYS_INDEXES i \
             JOIN information_schema.INNODB_SYS_TABLES t ON t.TABLE_ID = i.TABLE_ID"
        );
        let rows: Vec<(u64, String, String)> = self
            .admin()
            .query(&q)
            .map_err(|e| ServerError::sql(KIND, &q, e))?;
        Ok(rows
            .into_iter()
            .map(|(id, name, class)| {
                let class = match class.as_str() {
                    "table" => "table",
                    "index" => "index",
                    _ => "system",
                };
                (id, (name, class))
            })
            .collect())
    }

    fn wal_file_class(&self) -> &'static str {
        if self.kind == ServerKind::MyRocks {
            "rocksdb_wal"
        } else {
            "ib_logfile0"
        }
    }

    fn execute_sql(&self, sql: &str) -> Result<u64, ServerError> {
        let mut c = self.admin();
        c.query_drop(sql)
            .map_err(|e| ServerError::sql(KIND, sql, e))?;
        Ok(c.affected_rows())
    }

    fn collect_garbage(&self, _table: &str) -> Result<(), ServerError> {
        if self.kind == ServerKind::MyRocks {
            // Old versions go when compaction merges SST files: a manual compaction of
            // the default column family (KB "MyRocks System Variables", rocksdb_compact_cf).
            self.exec("SET GLOBAL rocksdb_force_flush_memtable_now = 1")?;
            return self.exec("SET GLOBAL rocksdb_compact_cf = 'default'");
        }
        self.wait_for_zero("Innodb_history_list_length", "purge")
    }

    fn tpcc_check(&self, opts: &SysbenchOptions) -> Result<Vec<CheckOutcome>, ServerError> {
        tpcc_sql::check(
            &mut MyText(&mut self.admin()),
            opts.tables,
            &opts.tpcc_size(),
        )
        .map_err(|e| ServerError::sql(KIND, "tpcc_check.lua checks 1-4", e))
    }
}
