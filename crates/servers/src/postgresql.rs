//! PostgreSQL 15 as a target: sysbench's tables loaded as `oltp_common.lua` loads them, the
//! workload sent through the `postgres` crate with prepared statements (sysbench's pgsql
//! driver uses `PQprepare`), and the cumulative statistics views read before and after the
//! measured phase (PostgreSQL 15 manual, 28.2 "The Cumulative Statistics System").
//!
//! TPC-C (`--workload tpcc`) is loaded and run as sysbench-tpcc sends it, in plain
//! queries ([`mvcclab_workload::tpcc_sql`]); `--fillfactor` sets the `fillfactor` storage
//! parameter of every table and index the load creates (for sysbench's tables: `ALTER
//! TABLE/INDEX ... SET (fillfactor)` before the rows go in, and the `k` index, built after
//! them, rebuilt with `REINDEX`).
//!
//! Counters read (sums over the workload's tables where the view is per table):
//! `pg_stat_user_tables` (n_tup_ins/upd/hot_upd/del, n_live_tup, n_dead_tup, vacuum and
//! autovacuum counts, and the autovacuum triggers n_ins_since_vacuum and
//! n_mod_since_analyze, reported as their values at the end), `pg_statio_user_tables` (heap/idx blks read and hit),
//! `pg_stat_bgwriter` (buffers_checkpoint/clean/backend/alloc, checkpoints),
//! `pg_stat_wal` (wal_records, wal_fpi, wal_bytes, wal_write, wal_sync),
//! `pg_stat_database` (xact_commit, blks_read/hit, deadlocks) and the relations' sizes;
//! at the phase's start and end (not in the per-second samples), contrib/pg_buffercache's
//! buffers by usage count and dirty flag (`pg_buffercache.*`, state values), for comparing
//! the clock sweep's state with the postgres preset's pool.
//! The load runs on the admin connection, whose pending counts are flushed with
//! `pg_stat_force_next_flush()` before each snapshot.
//!
//! Statistics reach the shared views late: a backend flushes its pending counts when it
//! exits (pgstat.c `pgstat_shutdown_hook`), and the checkpointer reports
//! `buffers_backend` only when it wakes (checkpointer.c `CheckpointerMain`, which with
//! `checkpoint_timeout=1d` sleeps until signalled). [`RealServer::snapshot`] therefore
//! waits for the workload's backends to exit, wakes the checkpointer with
//! `pg_reload_conf()` (its SIGHUP handler sets its latch; the loop then calls
//! `pgstat_report_checkpointer`) and reads with `stats_fetch_consistency = none`.

use crate::file_class::{postgresql_class, PgRelations};
use crate::managed::ManagedServer;
use crate::{
    device_io_text, device_snapshot, RealServer, ServerError, ServerInfo, ServerKind,
    ServerOptions, Snapshot,
};
use mvcclab_engine::wal::RecordTypeCounts;
use mvcclab_workload::driver::{ErrorCode, OpError, Session, Target};
use mvcclab_workload::sql::{self, Dialect, Param};
use mvcclab_workload::sysbench::{Op, SysbenchOptions, WorkloadKind};
use mvcclab_workload::tpcc_embedded::CheckOutcome;
use mvcclab_workload::tpcc_sql::{self, SqlConn, TextRows};
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, SimpleQueryMessage};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const KIND: ServerKind = ServerKind::PostgreSql;

/// A PostgreSQL server (managed or `--url`) as a target.
pub struct PostgreSql {
    config: Config,
    address: String,
    admin: Mutex<Client>,
    version: String,
    caches_dropped: AtomicBool,
    /// `--fillfactor` of the tables and indexes the load creates.
    fillfactor: Option<u8>,
    // Last field: dropped (server stopped) after the connections above are closed.
    managed: Option<ManagedServer>,
}

/// Connects with `config`, retrying for up to `wait` while the server is starting
/// (SQLSTATE 57P03 or a refused socket).
///
/// Errors: [`ServerError::Connect`] for any other failure, or once `wait` has passed.
pub fn connect(config: &Config, wait: Duration) -> Result<Client, ServerError> {
    let deadline = Instant::now() + wait;
    loop {
        match config.connect(NoTls) {
            Ok(c) => return Ok(c),
            Err(e) => {
                // "the database system is starting up" (57P03) or a refused socket while
                // the postmaster opens its listener: retry until the deadline.
                let starting =
                    e.code() == Some(&SqlState::CANNOT_CONNECT_NOW) || e.as_db_error().is_none();
                if !starting || Instant::now() > deadline {
                    return Err(ServerError::Connect {
                        server: KIND.name().into(),
                        address: format!("{:?}:{:?}", config.get_hosts(), config.get_ports()),
                        message: e.to_string(),
                    });
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

fn db_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{} ({})", d.message(), d.code().code()),
        None => e.to_string(),
    }
}

impl PostgreSql {
    /// Connects to `o.url`, or starts a managed server and creates database `sbtest` in it.
    ///
    /// Errors: [`ServerError`] from start-up, connection, or a bad URL
    /// ([`ServerError::Usage`]).
    pub fn open(o: &ServerOptions) -> Result<PostgreSql, ServerError> {
        let (managed, mut config) = match &o.url {
            Some(u) => {
                let c: Config = u
                    .parse()
                    .map_err(|e| ServerError::Usage(format!("--url '{u}': {e}")))?;
                (None, c)
            }
            None => {
                let m = ManagedServer::start(KIND, &o.managed)?;
                let mut c = Config::new();
                c.host("127.0.0.1")
                    .port(m.port())
                    .user("postgres")
                    .dbname("postgres");
                (Some(m), c)
            }
        };
        let mut admin = connect(&config, Duration::from_secs(60))?;
        if let Some(m) = &managed {
            if !m.restored() {
                admin.batch_execute("CREATE DATABASE sbtest").map_err(|e| {
                    ServerError::sql(KIND, "CREATE DATABASE sbtest", db_message(&e))
                })?;
            }
            config.dbname("sbtest");
            admin = connect(&config, Duration::from_secs(10))?;
        }
        admin
            .batch_execute("SET stats_fetch_consistency = none")
            .map_err(|e| ServerError::sql(KIND, "SET stats_fetch_consistency", db_message(&e)))?;
        let version: String = admin
            .query_one("SELECT version()", &[])
            .map_err(|e| ServerError::sql(KIND, "SELECT version()", db_message(&e)))?
            .get(0);
        let address = match &managed {
            Some(m) => format!("127.0.0.1:{}", m.port()),
            None => format!("{:?}:{:?}", config.get_hosts(), config.get_ports()),
        };
        Ok(PostgreSql {
            config,
            address,
            admin: Mutex::new(admin),
            version,
            caches_dropped: AtomicBool::new(false),
            fillfactor: o.fillfactor,
            managed,
        })
    }

    fn admin(&self) -> std::sync::MutexGuard<'_, Client> {
        self.admin.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every counter a snapshot keeps, as the statistics views show them now (a fresh
    /// statistics snapshot, `pg_stat_clear_snapshot`), without waiting for sessions.
    fn read_counters(&self) -> Result<Snapshot, ServerError> {
        self.exec("SELECT pg_stat_clear_snapshot()")?;
        let mut s = Snapshot::new();
        self.read_row(
            "pg_stat_user_tables",
            &format!(
                "SELECT sum(n_tup_ins)::float8 n_tup_ins, sum(n_tup_upd)::float8 n_tup_upd, \
                 sum(n_tup_hot_upd)::float8 n_tup_hot_upd, sum(n_tup_del)::float8 n_tup_del, \
                 sum(n_live_tup)::float8 n_live_tup, sum(n_dead_tup)::float8 n_dead_tup, \
                 sum(seq_scan)::float8 seq_scan, sum(idx_scan)::float8 idx_scan, \
                 sum(vacuum_count)::float8 vacuum_count, sum(autovacuum_count)::float8 autovacuum_count, \
                 sum(analyze_count)::float8 analyze_count, sum(autoanalyze_count)::float8 autoanalyze_count, \
                 sum(n_ins_since_vacuum)::float8 n_ins_since_vacuum, \
                 sum(n_mod_since_analyze)::float8 n_mod_since_analyze \
                 FROM pg_stat_user_tables WHERE {TABLES}"
            ),
            &mut s,
        )?;
        self.read_row(
            "pg_statio_user_tables",
            &format!(
                "SELECT sum(heap_blks_read)::float8 heap_blks_read, sum(heap_blks_hit)::float8 heap_blks_hit, \
                 sum(idx_blks_read)::float8 idx_blks_read, sum(idx_blks_hit)::float8 idx_blks_hit \
                 FROM pg_statio_user_tables WHERE {TABLES}"
            ),
            &mut s,
        )?;
        self.read_row(
            "pg_stat_bgwriter",
            "SELECT checkpoints_timed::float8, checkpoints_req::float8, buffers_checkpoint::float8, \
             buffers_clean::float8, maxwritten_clean::float8, buffers_backend::float8, \
             buffers_backend_fsync::float8, buffers_alloc::float8 FROM pg_stat_bgwriter",
            &mut s,
        )?;
        self.read_row(
            "pg_stat_wal",
            "SELECT wal_records::float8, wal_fpi::float8, wal_bytes::float8, wal_buffers_full::float8, \
             wal_write::float8, wal_sync::float8 FROM pg_stat_wal",
            &mut s,
        )?;
        self.read_row(
            "pg_stat_database",
            "SELECT xact_commit::float8, xact_rollback::float8, blks_read::float8, blks_hit::float8, \
             tup_returned::float8, tup_fetched::float8, tup_inserted::float8, tup_updated::float8, \
             tup_deleted::float8, deadlocks::float8, temp_files::float8 \
             FROM pg_stat_database WHERE datname = current_database()",
            &mut s,
        )?;
        self.read_row(
            "space",
            &format!(
                "SELECT (coalesce(sum(pg_relation_size(relid)), 0) / 8192)::float8 table_pages, \
                 (coalesce(sum(pg_indexes_size(relid)), 0) / 8192)::float8 index_pages \
                 FROM pg_stat_user_tables WHERE {TABLES}"
            ),
            &mut s,
        )?;
        // Pages of each workload table (state values, `space.` prefix).
        let q = format!(
            "SELECT relname::text, (pg_relation_size(relid) / 8192)::float8, \
             (pg_indexes_size(relid) / 8192)::float8 FROM pg_stat_user_tables WHERE {TABLES}"
        );
        for r in self
            .admin()
            .query(&q, &[])
            .map_err(|e| ServerError::sql(KIND, &q, db_message(&e)))?
        {
            let name: String = r.get(0);
            s.insert(format!("space.table_pages.{name}"), r.get(1));
            s.insert(format!("space.index_pages.{name}"), r.get(2));
        }
        // The WAL write position, for pg_waldump over the phase (`wal_by_record`).
        self.read_row(
            "wal",
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 lsn",
            &mut s,
        )?;
        device_snapshot(self.managed.as_ref(), &mut s)?;
        self.read_cpu(&mut s);
        Ok(s)
    }

    /// The shared buffers now by usage count and dirty flag, from contrib/pg_buffercache
    /// (`pg_buffercache.usage_N_dirty`, `pg_buffercache.usage_N_clean`, and
    /// `pg_buffercache.unused` for buffers holding no page), every buffer of the server
    /// (catalogs included), and by owner (`pg_buffercache.workload_main_fork`,
    /// `.workload_fsm_vm`, `.other_relations`); state values. Nothing when the extension
    /// is missing.
    fn read_buffer_cache(&self, s: &mut Snapshot) {
        const Q: &str = "SELECT usagecount::int, isdirty, count(*)::float8 FROM pg_buffercache \
                         GROUP BY 1, 2";
        let Ok(rows) = self.admin().query(Q, &[]) else {
            return;
        };
        for r in rows {
            let (usage, dirty, n): (Option<i32>, Option<bool>, f64) =
                (r.get(0), r.get(1), r.get(2));
            let key = match (usage, dirty) {
                (Some(u), Some(d)) => {
                    format!(
                        "pg_buffercache.usage_{u}_{}",
                        if d { "dirty" } else { "clean" }
                    )
                }
                _ => "pg_buffercache.unused".to_string(),
            };
            *s.entry(key).or_insert(0.0) += n;
        }
        // Whose pages they are: the workload's tables and indexes (main fork, and their
        // free space map and visibility map forks) or other relations (the catalogs), the
        // share of the pool a preset, which keeps no catalog pages, has for data.
        let q = format!(
            "WITH w AS (SELECT oid FROM pg_class WHERE {TABLES} AND relkind = 'r'), \
             f AS (SELECT pg_relation_filenode(oid) f FROM w UNION ALL \
                   SELECT pg_relation_filenode(indexrelid) FROM pg_index \
                   WHERE indrelid IN (SELECT oid FROM w)), \
             b AS (SELECT relforknumber, relfilenode IN (SELECT f FROM f) \
                   AND reldatabase = (SELECT oid FROM pg_database \
                                      WHERE datname = current_database()) AS mine \
                   FROM pg_buffercache WHERE relfilenode IS NOT NULL) \
             SELECT count(*) FILTER (WHERE mine AND relforknumber = 0)::float8 workload_main_fork, \
             count(*) FILTER (WHERE mine AND relforknumber <> 0)::float8 workload_fsm_vm, \
             count(*) FILTER (WHERE NOT mine)::float8 other_relations FROM b"
        );
        let _ = self.read_row("pg_buffercache", &q, s);
    }

    /// A managed server's CPU use as `cpu.*` entries, from its process tree in /proc (the
    /// postmaster, its live children by kind, its exited children through its cumulative
    /// child fields; [`crate::cpu::tree_cpu`]). Nothing for a `--url` server, whose
    /// processes are not ours to read.
    fn read_cpu(&self, s: &mut Snapshot) {
        if let Some(pid) = self.managed.as_ref().and_then(|m| m.pid()) {
            if let Ok(t) = crate::cpu::tree_cpu(pid) {
                crate::cpu::snapshot_entries(&t, s);
            }
        }
    }

    fn exec(&self, sql: &str) -> Result<(), ServerError> {
        self.admin()
            .batch_execute(sql)
            .map_err(|e| ServerError::sql(KIND, sql, db_message(&e)))
    }

    /// Rows of `sql` (every column cast to float8) as `prefix.column` values.
    fn read_row(&self, prefix: &str, sql: &str, out: &mut Snapshot) -> Result<(), ServerError> {
        let row = self
            .admin()
            .query_one(sql, &[])
            .map_err(|e| ServerError::sql(KIND, sql, db_message(&e)))?;
        for (i, c) in row.columns().iter().enumerate() {
            let v: Option<f64> = row
                .try_get(i)
                .map_err(|e| ServerError::Counters(format!("{prefix}.{}: {e}", c.name())))?;
            out.insert(format!("{prefix}.{}", c.name()), v.unwrap_or(0.0));
        }
        Ok(())
    }

    /// Waits (up to 10 s) until no other client backend of this database is left, then
    /// 0.5 s more for their exit-time statistics flush.
    fn wait_for_sessions_to_exit(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let n: i64 = self
                .admin()
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                     AND pid <> pg_backend_pid() AND datname = current_database()",
                    &[],
                )
                .map(|r| r.get(0))
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The tables whose counters a snapshot sums: sysbench's `sbtestN`, sysbench-tpcc's nine of
/// each set, and the `update_hot_set` experiment's; with `_history`, the periods extension's
/// history table of one of them (`experiment system_versioning`'s `history_table` variant).
const TABLES: &str = concat!(
    "relname ~ '^(",
    workload_table_names!(),
    "(_history)?|hot_set)$'"
);

impl Target for PostgreSql {
    fn prepare(&self, kind: WorkloadKind, opts: &SysbenchOptions, seed: u64) -> Result<(), String> {
        // VACUUM ANALYZE: statistics for the planner, the visibility map set and no
        // insert-triggered autovacuum left to fall inside the measured phase. The load's
        // last inserts are still pending in this backend (it flushes them at most once a
        // second, pgstat.c `pgstat_report_stat`); flushed after VACUUM had zeroed
        // `n_ins_since_vacuum`, they would count as inserts since the vacuum and trigger
        // an autovacuum and an autoanalyze at the launcher's next round, inside the run.
        // `pg_stat_force_next_flush()` makes the backend flush them when it goes idle
        // after that statement, before it reads the VACUUM.
        let exec = |q: &str| self.exec(q).map_err(|e| e.to_string());
        if kind == WorkloadKind::Tpcc {
            tpcc_sql::load(Dialect::PostgreSql, opts, seed, self.fillfactor, &exec)?;
            exec("SELECT pg_stat_force_next_flush()")?;
            for t in crate::tpcc_tables(opts) {
                exec(&format!("VACUUM ANALYZE {t}"))?;
            }
            return Ok(());
        }
        let ff = self.fillfactor;
        crate::load_sbtest(
            Dialect::PostgreSql,
            kind,
            opts,
            seed,
            &|q| self.exec(q),
            // The fill factor of the table and its primary key, before the rows go in.
            &|n| match ff {
                Some(f) => vec![
                    format!("ALTER TABLE sbtest{n} SET (fillfactor = {f})"),
                    format!("ALTER INDEX sbtest{n}_pkey SET (fillfactor = {f})"),
                ],
                None => Vec::new(),
            },
            &|n| {
                let mut v = Vec::new();
                if let Some(f) = ff {
                    // The k index is built after the load: rebuilt with the fill factor.
                    v.push(format!("ALTER INDEX k_{n} SET (fillfactor = {f})"));
                    v.push(format!("REINDEX INDEX k_{n}"));
                }
                v.push("SELECT pg_stat_force_next_flush()".into());
                v.push(format!("VACUUM ANALYZE sbtest{n}"));
                v
            },
        )
    }

    fn session(&self) -> Result<Box<dyn Session + '_>, String> {
        let client = connect(&self.config, Duration::from_secs(10)).map_err(|e| e.to_string())?;
        Ok(Box::new(PgSession {
            client,
            statements: HashMap::new(),
            in_transaction: false,
            tpcc_setup: false,
        }))
    }
}

/// The admin or a session connection as sysbench-tpcc's plain-query connection.
struct PgText<'a>(&'a mut Client);

impl SqlConn for PgText<'_> {
    fn query(&mut self, sql: &str) -> Result<TextRows, OpError> {
        let msgs = self
            .0
            .simple_query(sql)
            .map_err(|e| op_error(e).with_statement(sql))?;
        Ok(msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => {
                    Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                }
                _ => None,
            })
            .collect())
    }
}

/// One driver thread's connection.
struct PgSession {
    client: Client,
    /// Prepared statements by SQL text (sysbench prepares each once per connection).
    statements: HashMap<String, postgres::Statement>,
    in_transaction: bool,
    /// The TPC-C session settings have been sent (`tpcc_sql::session_setup`).
    tpcc_setup: bool,
}

/// A client error with the server's SQLSTATE (its kind from `ErrorKind::from_sqlstate`);
/// one without (a lost connection) has no code and stops the run, as drv_pgsql.c
/// `pgsql_check_status` makes every error but 40P01, 23505 and 40001 fatal.
fn op_error(e: postgres::Error) -> OpError {
    match e.code() {
        Some(c) => OpError::coded(ErrorCode::SqlState(c.code().to_string()), db_message(&e)),
        None => OpError::other(db_message(&e)),
    }
}

impl Session for PgSession {
    /// Errors: the server's ([`op_error`]), naming the statement sent.
    fn execute(&mut self, op: &Op) -> Result<(), OpError> {
        self.execute_op(op)
            .map_err(|e| sql::name_statement(Dialect::PostgreSql, op, e))
    }

    fn rollback(&mut self) {
        if self.in_transaction {
            let _ = self.client.batch_execute("ROLLBACK");
            self.in_transaction = false;
        }
    }
}

impl PgSession {
    fn execute_op(&mut self, op: &Op) -> Result<(), OpError> {
        if let Op::Tpcc(txn) = op {
            if !self.tpcc_setup {
                for q in tpcc_sql::session_setup(Dialect::PostgreSql) {
                    self.client.batch_execute(q).map_err(op_error)?;
                }
                self.tpcc_setup = true;
            }
            self.in_transaction = true;
            tpcc_sql::execute(&mut PgText(&mut self.client), txn)?;
            self.in_transaction = false;
            return Ok(());
        }
        let st = sql::statement(Dialect::PostgreSql, op);
        match op {
            Op::Begin => self.in_transaction = true,
            Op::Commit => self.in_transaction = false,
            _ => {}
        }
        if !st.prepared {
            return self.client.batch_execute(&st.text).map_err(op_error);
        }
        let stmt = match self.statements.get(&st.text) {
            Some(s) => s.clone(),
            None => {
                let s = self.client.prepare(&st.text).map_err(op_error)?;
                self.statements.insert(st.text.clone(), s.clone());
                s
            }
        };
        let params: Vec<&(dyn ToSql + Sync)> = st
            .params
            .iter()
            .map(|p| match p {
                Param::Int(i) => i as &(dyn ToSql + Sync),
                Param::Text(s) => s as &(dyn ToSql + Sync),
            })
            .collect();
        if st.returns_rows {
            self.client
                .query(&stmt, &params)
                .map(|_| ())
                .map_err(op_error)
        } else {
            self.client
                .execute(&stmt, &params)
                .map(|_| ())
                .map_err(op_error)
        }
    }
}

/// PostgreSQL 15's WAL reader (Debian's postgresql-15 package).
const PG_WALDUMP: &str = "/usr/lib/postgresql/15/bin/pg_waldump";

/// The record-type lines of `pg_waldump --stats=record`: `Rmgr/RECORD  N (%)  record size
/// (%)  FPI size (%)  combined size (%)`; the header, rule and total lines are skipped.
///
/// Errors: [`ServerError::Counters`] for a record line whose numbers do not parse.
pub fn parse_waldump_stats(text: &str) -> Result<BTreeMap<String, RecordTypeCounts>, ServerError> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(char::is_whitespace) else {
            continue;
        };
        if !name.contains('/') {
            continue;
        }
        // Drop the parenthesized percentages, keep the four counts.
        let mut plain = String::with_capacity(rest.len());
        let mut depth = 0;
        for ch in rest.chars() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ if depth == 0 => plain.push(ch),
                _ => {}
            }
        }
        let nums: Vec<u64> = plain
            .split_whitespace()
            .map(|t| t.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|e| ServerError::Counters(format!("pg_waldump line '{line}': {e}")))?;
        let [records, record_bytes, fpi_bytes, _combined] = nums[..] else {
            return Err(ServerError::Counters(format!(
                "pg_waldump line '{line}': expected 4 numbers"
            )));
        };
        out.insert(
            name.to_string(),
            RecordTypeCounts {
                records,
                record_bytes,
                fpi_bytes,
            },
        );
    }
    Ok(out)
}

/// Settings a report states.
const SETTINGS: &[&str] = &[
    "shared_buffers",
    "checkpoint_timeout",
    "max_wal_size",
    "full_page_writes",
    "wal_compression",
    "wal_level",
    "synchronous_commit",
    "fsync",
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_vacuum_scale_factor",
    "bgwriter_delay",
    "bgwriter_lru_maxpages",
    "default_transaction_isolation",
    "data_checksums",
    "wal_log_hints",
];

impl RealServer for PostgreSql {
    fn kind(&self) -> ServerKind {
        KIND
    }

    fn as_target(&self) -> &dyn Target {
        self
    }

    fn settle(&self, drop_caches: bool) -> Result<(), ServerError> {
        // contrib/pg_buffercache, for the pool's usage counts at each snapshot
        // (`read_buffer_cache`); a server without it (a `--url` server without the
        // privilege or the contrib package) is measured without them.
        let _ = self.exec("CREATE EXTENSION IF NOT EXISTS pg_buffercache");
        self.exec("CHECKPOINT")?;
        if drop_caches {
            // A managed server's own files only; a `--url` server's files are not ours
            // to find, so the whole machine's cache.
            match &self.managed {
                Some(m) => m.page_cache_scope().drop()?,
                None => crate::drop_os_page_cache()?,
            }
            self.caches_dropped.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot, ServerError> {
        // This connection's own pending counts (the load ran on it) are flushed when it
        // next goes idle after this call (pgstat.c pgstat_force_next_flush).
        self.exec("SELECT pg_stat_force_next_flush()")?;
        self.wait_for_sessions_to_exit();
        // Wake the checkpointer so that it reports buffers_backend (module doc). Needs
        // superuser on a --url server; without it the figure may lag.
        if self.exec("SELECT pg_reload_conf()").is_ok() {
            std::thread::sleep(Duration::from_millis(300));
        }
        let mut s = self.read_counters()?;
        self.read_buffer_cache(&mut s);
        Ok(s)
    }

    fn sample(&self) -> Result<Snapshot, ServerError> {
        self.read_counters()
    }

    fn is_state(&self, name: &str) -> bool {
        matches!(
            name,
            "pg_stat_user_tables.n_live_tup"
                | "pg_stat_user_tables.n_dead_tup"
                | "pg_stat_user_tables.n_ins_since_vacuum"
                | "pg_stat_user_tables.n_mod_since_analyze"
                | "wal.lsn"
                | "cpu.processes"
        ) || name.starts_with("space.")
            || name.starts_with("pg_buffercache.")
    }

    fn wal_by_record(
        &self,
        before: &Snapshot,
        after: &Snapshot,
    ) -> Result<BTreeMap<String, RecordTypeCounts>, ServerError> {
        let (Some(m), Some(&from), Some(&to)) = (
            self.managed.as_ref(),
            before.get("wal.lsn"),
            after.get("wal.lsn"),
        ) else {
            return Ok(BTreeMap::new());
        };
        if to <= from {
            return Ok(BTreeMap::new());
        }
        let lsn = |x: f64| {
            let v = x as u64;
            format!("{:X}/{:X}", v >> 32, v & 0xFFFF_FFFF)
        };
        let wal_dir = m.data_dir().join("pg_wal");
        // The segments holding the start and the end, named: without them pg_waldump
        // takes the segment size from the first WAL file its directory listing returns,
        // which may be a pre-allocated segment of zeros (pg_waldump.c `search_directory`),
        // as after a data directory copied back (bench/loaded.rs). With a start segment it
        // wants the end's too when the range crosses into a later one; `pg_walfile_name`
        // of an end position names the segment holding the byte before it.
        let seg_sql =
            "SELECT pg_walfile_name(($1::text::pg_lsn) + 1), pg_walfile_name($2::text::pg_lsn)";
        let row = self
            .admin()
            .query_one(seg_sql, &[&lsn(from), &lsn(to)])
            .map_err(|e| ServerError::sql(KIND, seg_sql, db_message(&e)))?;
        let (start_seg, end_seg): (String, String) = (row.get(0), row.get(1));
        let out = std::process::Command::new(PG_WALDUMP)
            .arg("-p")
            .arg(&wal_dir)
            .args(["-s", &lsn(from), "-e", &lsn(to), "--stats=record"])
            .args([&start_seg, &end_seg])
            .output()
            .map_err(|e| ServerError::Counters(format!("running {PG_WALDUMP}: {e}")))?;
        if !out.status.success() {
            return Err(ServerError::Counters(format!(
                "{PG_WALDUMP} over {}..{}: {}",
                lsn(from),
                lsn(to),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        parse_waldump_stats(&String::from_utf8_lossy(&out.stdout))
    }

    fn info(&self) -> ServerInfo {
        let mut settings = std::collections::BTreeMap::new();
        let names: Vec<String> = SETTINGS.iter().map(|s| s.to_string()).collect();
        if let Ok(rows) = self.admin().query(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1)",
            &[&names],
        ) {
            for r in rows {
                settings.insert(r.get::<_, String>(0), r.get::<_, String>(1));
            }
        }
        let dropped = self.caches_dropped.load(Ordering::Relaxed);
        ServerInfo {
            engine: KIND.name().into(),
            version: self.version.clone(),
            managed: self.managed.is_some(),
            address: self.address.clone(),
            settings,
            page_cache: format!(
                "PostgreSQL reads and writes through the OS page cache: heap_blks_read/idx_blks_read \
                 count pages read into shared_buffers, which the page cache may have served; \
                 before the warm-up the page cache {} (its bound, if any: the settings' \
                 memory_cgroup_*)",
                match (dropped, self.managed.is_some()) {
                    (true, true) => "of the server's files was dropped (--drop-caches)",
                    (true, false) => "of the whole host was dropped (--drop-caches)",
                    (false, _) => "was not dropped",
                }
            ),
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

    /// Relation files are named from the catalog of the run's database:
    /// `pg_relation_filenode` of every `pg_class` row (mapped catalogs included).
    fn file_classes(&self, paths: &[&str]) -> Result<BTreeMap<String, String>, ServerError> {
        file_classes_of(&mut self.admin(), paths)
    }

    fn execute_sql(&self, sql: &str) -> Result<u64, ServerError> {
        self.admin()
            .execute(sql, &[])
            .map_err(|e| ServerError::sql(KIND, sql, db_message(&e)))
    }

    fn collect_garbage(&self, table: &str) -> Result<(), ServerError> {
        self.exec(&format!("VACUUM {table}"))
    }

    fn wal_file_class(&self) -> &'static str {
        "pg_wal"
    }

    fn tpcc_check(&self, opts: &SysbenchOptions) -> Result<Vec<CheckOutcome>, ServerError> {
        tpcc_sql::check(
            &mut PgText(&mut self.admin()),
            opts.tables,
            &opts.tpcc_size(),
        )
        .map_err(|e| ServerError::sql(KIND, "tpcc_check.lua checks 1-4", e))
    }
}

/// The class of each of `paths` on the FUSE device ([`postgresql_class`]), relation
/// files named from the catalog of `c`'s database: `pg_relation_filenode` of every
/// `pg_class` row (mapped catalogs included).
///
/// Errors: [`ServerError::Sql`].
pub(crate) fn file_classes_of(
    c: &mut Client,
    paths: &[&str],
) -> Result<BTreeMap<String, String>, ServerError> {
    let sql_db = "SELECT oid::int8 FROM pg_database WHERE datname = current_database()";
    let db: i64 = c
        .query_one(sql_db, &[])
        .map_err(|e| ServerError::sql(KIND, sql_db, db_message(&e)))?
        .get(0);
    let sql = "SELECT pg_relation_filenode(c.oid)::int8, c.relname::text, c.relkind::text, \
               n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
               WHERE pg_relation_filenode(c.oid) IS NOT NULL";
    let rows = c
        .query(sql, &[])
        .map_err(|e| ServerError::sql(KIND, sql, db_message(&e)))?;
    let relations: PgRelations = rows
        .iter()
        .map(|r| (r.get::<_, i64>(0) as u32, (r.get(1), r.get(2), r.get(3))))
        .collect();
    Ok(paths
        .iter()
        .map(|p| (p.to_string(), postgresql_class(p, db as u32, &relations)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waldump_record_stats_parse_and_bad_lines_are_errors() {
        let text = "\
WAL statistics between 0/3AFBB20 and 0/81868A8:
Type                                           N      (%)          Record size      (%)             FPI size      (%)        Combined size      (%)
----                                           -      ---          -----------      ---             --------      ---        -------------      ---
Transaction/COMMIT                        181226 ( 19.88)              6161908 ( 10.52)                    0 (  0.00)              6161908 (  8.55)
Heap/UPDATE+INIT                             487 (  0.05)               129766 (  0.22)                    0 (  0.00)               129766 (  0.18)
Heap/LOCK                                  16671 (  1.83)               907114 (  1.55)             11233664 ( 83.32)             12140778 ( 16.84)
                                        --------                      --------                      --------                      --------
Total                                     911723                      58596914 [81.29%]             13482840 [18.71%]             72079754 [100%]
";
        let m = parse_waldump_stats(text).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m["Heap/LOCK"],
            RecordTypeCounts {
                records: 16671,
                record_bytes: 907114,
                fpi_bytes: 11233664
            }
        );
        assert_eq!(m["Heap/UPDATE+INIT"].records, 487);
        assert!(parse_waldump_stats("Heap/UPDATE 12 (1.0) x (2.0) 0 (0) 1 (0)").is_err());
        assert!(parse_waldump_stats("Heap/UPDATE 12 (1.0)").is_err());
    }
}
