//! TPC-H on a real server: the schema as each engine is given it (PostgreSQL: primary
//! keys; MariaDB: primary keys and foreign keys, whose indexes InnoDB creates), the rows
//! of `tpchgen` loaded the engine's bulk way (PostgreSQL `COPY ... FROM STDIN`, MariaDB
//! `LOAD DATA INFILE` from a file in the server's folder), `ANALYZE`, the 22 queries
//! with a statement timeout, and their plans as `EXPLAIN` JSON.
//!
//! The server is a [`ManagedServer`] on 127.0.0.1 and a free port, in database `tpch`,
//! stopped by its pid when the [`TpchServer`] is dropped. The engines run at their
//! defaults except: PostgreSQL's `max_parallel_workers_per_gather` is pinned to 0 (the
//! presets execute one process per query; said in every report), InnoDB's statistics read
//! every page (`innodb_stats_persistent_sample_pages`, so that ANALYZE gives the same plan
//! each time), and the buffer pools are what [`ManagedOptions::buffer_pool_bytes`] says
//! (128 MiB, both defaults, when 0).

use crate::managed::{ManagedOptions, ManagedServer};
use crate::{ServerError, ServerKind};
use mvcclab_engine::catalog::TableDef;
use mvcclab_workload::sql::Dialect;
use mvcclab_workload::tpch::{self, plain_text, QueryParams, TpchIndexes, TpchTable};
use mysql::prelude::Queryable;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// PostgreSQL's `max_parallel_workers_per_gather` in every TPC-H run (its default is 2).
pub const PG_PARALLEL_WORKERS_PER_GATHER: u32 = 0;

/// How long a connection to the freshly started server is retried.
const CONNECT_WAIT: Duration = Duration::from_secs(60);

enum Conn {
    Pg(Box<postgres::Client>),
    My(mysql::Conn),
    /// Between a restart's shutdown and its new connection.
    None,
}

fn not_connected(kind: ServerKind) -> ServerError {
    ServerError::Usage(format!("{}: not connected (a restart failed)", kind.name()))
}

/// Connects to database `tpch` of the server on 127.0.0.1:`port`, creating it first when
/// `create`; PostgreSQL's session gets [`PG_PARALLEL_WORKERS_PER_GATHER`].
fn connect(kind: ServerKind, port: u16, create: bool) -> Result<Conn, ServerError> {
    Ok(match kind {
        ServerKind::PostgreSql => {
            let mut cfg = postgres::Config::new();
            cfg.host("127.0.0.1")
                .port(port)
                .user("postgres")
                .dbname("postgres");
            if create {
                let mut c = crate::postgresql::connect(&cfg, CONNECT_WAIT)?;
                pg_exec(&mut c, "CREATE DATABASE tpch")?;
            }
            cfg.dbname("tpch");
            let mut c = crate::postgresql::connect(&cfg, CONNECT_WAIT)?;
            pg_exec(
                &mut c,
                &format!("SET max_parallel_workers_per_gather = {PG_PARALLEL_WORKERS_PER_GATHER}"),
            )?;
            Conn::Pg(Box::new(c))
        }
        ServerKind::MariaDb | ServerKind::MyRocks => {
            let b = mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(port)
                .user(Some("root"))
                .prefer_socket(false);
            if create {
                let mut c = crate::mariadb::connect(&mysql::Opts::from(b.clone()), CONNECT_WAIT)?;
                my_exec(&mut c, "CREATE DATABASE tpch")?;
            }
            Conn::My(crate::mariadb::connect(
                &mysql::Opts::from(b.db_name(Some("tpch"))),
                CONNECT_WAIT,
            )?)
        }
    })
}

/// A managed real server holding the TPC-H database.
pub struct TpchServer {
    kind: ServerKind,
    conn: Conn,
    // Last: dropped (server stopped) after the connection is closed.
    managed: ManagedServer,
}

/// One query's outcome on a real server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerQueryRun {
    /// The result rows, each value as the server's text output (NULL as `NULL`); empty
    /// when the query timed out.
    pub rows: Vec<Vec<String>>,
    /// Wall-clock time of the statements, in microseconds (under whatever load the machine
    /// has).
    pub duration_us: u64,
    /// True when the statement timeout stopped it.
    pub timed_out: bool,
}

/// The CREATE TABLE statement of `def` for `dialect`: columns with the engine's type
/// names, the primary key, and on MariaDB the foreign keys (InnoDB indexes them itself)
/// and `ENGINE=InnoDB`.
pub fn create_table_sql(def: &TableDef, dialect: Dialect) -> String {
    let mut s = format!("CREATE TABLE {} (", def.name);
    for (i, c) in def.columns.iter().enumerate() {
        let ty = match dialect {
            Dialect::PostgreSql => c.ty.postgres_sql(),
            Dialect::MySql => c.ty.mariadb_sql(),
        };
        let _ = write!(
            s,
            "{}{} {ty}{}",
            if i > 0 { ", " } else { "" },
            c.name,
            if c.nullable { "" } else { " NOT NULL" }
        );
    }
    let names = |cols: &[usize]| -> String {
        cols.iter()
            .map(|&c| def.columns[c].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(s, ", PRIMARY KEY ({})", names(&def.primary_key));
    if dialect == Dialect::MySql {
        for fk in &def.foreign_keys {
            let _ = write!(
                s,
                ", CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
                fk.name,
                names(&fk.columns),
                fk.referenced_table,
                fk.referenced_columns.join(", ")
            );
        }
        s.push_str(") ENGINE=InnoDB");
    } else {
        s.push(')');
    }
    s
}

/// One load-file field: text with the COPY / LOAD DATA escapes for backslash, tab and
/// newline (both engines' default text format).
fn field(v: &mvcclab_engine::catalog::Value, out: &mut String) {
    for ch in plain_text(v).chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Rows of one table as tab-separated lines, written to `w` in chunks.
fn write_rows(t: TpchTable, sf: f64, w: &mut dyn std::io::Write) -> std::io::Result<u64> {
    let mut buf = String::new();
    let mut n = 0u64;
    tpch::rows::<std::io::Error>(t, sf, &mut |row| {
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                buf.push('\t');
            }
            field(v, &mut buf);
        }
        buf.push('\n');
        n += 1;
        if buf.len() > 1 << 20 {
            w.write_all(buf.as_bytes())?;
            buf.clear();
        }
        Ok(())
    })?;
    w.write_all(buf.as_bytes())?;
    Ok(n)
}

impl TpchServer {
    /// Starts a managed `kind` server with options `o` (a 0 buffer pool becomes 128 MiB,
    /// both engines' default) and creates database `tpch` (or, with
    /// [`ManagedOptions::restore_from`], finds it in the restored data directory).
    ///
    /// Errors: [`ServerError::Usage`] for MyRocks (TPC-H is not built for it: its tables
    /// would need `ENGINE=ROCKSDB` and its own plans); [`ServerError`] from start-up or
    /// connection.
    pub fn start(kind: ServerKind, o: &ManagedOptions) -> Result<TpchServer, ServerError> {
        if kind == ServerKind::MyRocks {
            return Err(ServerError::Usage(
                "TPC-H runs on real:postgresql and real:mariadb; real:myrocks is not built for it"
                    .into(),
            ));
        }
        let mut o = o.clone();
        if o.buffer_pool_bytes == 0 {
            o.buffer_pool_bytes = 128 << 20;
        }
        let managed = ManagedServer::start(kind, &o)?;
        // A restored data directory holds database `tpch` already.
        let conn = connect(kind, managed.port(), o.restore_from.is_none())?;
        Ok(TpchServer {
            kind,
            conn,
            managed,
        })
    }

    /// Restarts the server ([`ManagedServer::restart_with`]: a clean shutdown, then the same
    /// server on the same data directory, its buffer pool empty) and connects again;
    /// with `drop_page_cache` the kernel's page cache of its files is dropped while it is
    /// down ([`TpchServer::drop_page_cache`]). A cold start for the next query.
    ///
    /// Errors: as [`ManagedServer::restart_with`]; [`ServerError::Io`] when the page cache
    /// cannot be dropped; the connection's.
    pub fn restart(&mut self, drop_page_cache: bool) -> Result<(), ServerError> {
        // The old connection goes first, so that shutdown does not wait for it.
        self.conn = Conn::None;
        let scope = self.managed.page_cache_scope();
        self.managed.restart_with(|| {
            if drop_page_cache {
                scope.drop()?;
            }
            Ok(())
        })?;
        self.conn = connect(self.kind, self.managed.port(), false)?;
        Ok(())
    }

    /// Drops the kernel's page cache of this server's files
    /// ([`crate::PageCacheScope::drop`]), other processes' cached files left alone.
    ///
    /// Errors: [`ServerError::Io`] naming a file that cannot be read.
    pub fn drop_page_cache(&self) -> Result<(), ServerError> {
        self.managed.page_cache_scope().drop()
    }

    /// The class of each file on the FUSE device ([`crate::file_class`]): PostgreSQL's
    /// relation files named from the `tpch` database's catalog, MariaDB's by path.
    ///
    /// Errors: [`ServerError::Sql`].
    pub fn file_classes(
        &mut self,
        paths: &[&str],
    ) -> Result<std::collections::BTreeMap<String, String>, ServerError> {
        match &mut self.conn {
            Conn::Pg(c) => crate::postgresql::file_classes_of(c, paths),
            Conn::My(_) => Ok(paths
                .iter()
                .map(|p| (p.to_string(), crate::file_class::mariadb_class(p)))
                .collect()),
            Conn::None => Err(not_connected(self.kind)),
        }
    }

    /// Runs one statement of text and returns its rows as text (NULL as `NULL`) and its
    /// duration in µs (client side, rows received included): for a figure taken by hand,
    /// such as `SELECT count(*) FROM lineitem`.
    ///
    /// Errors: [`ServerError::Sql`].
    pub fn query_text(&mut self, sql: &str) -> Result<(Vec<Vec<String>>, u64), ServerError> {
        let kind = self.kind;
        let t0 = Instant::now();
        let rows = match &mut self.conn {
            Conn::None => return Err(not_connected(kind)),
            Conn::Pg(c) => pg_text_rows(
                &c.simple_query(sql)
                    .map_err(|e| ServerError::sql(kind, sql, pg_message(&e)))?,
            ),
            Conn::My(c) => {
                let rows: Vec<mysql::Row> =
                    c.query(sql).map_err(|e| ServerError::sql(kind, sql, e))?;
                rows.into_iter()
                    .map(|r| r.unwrap().into_iter().map(my_text).collect())
                    .collect()
            }
        };
        Ok((rows, t0.elapsed().as_micros() as u64))
    }

    /// Saves the data directory to `to` for a later start with
    /// [`ManagedOptions::restore_from`] ([`ManagedServer::save_data`]: the server is
    /// stopped first, with its shutdown checkpoint, and stays stopped).
    ///
    /// Errors: as [`ManagedServer::save_data`].
    pub fn save_data(&mut self, to: &std::path::Path) -> Result<(), ServerError> {
        self.conn = Conn::None;
        self.managed.save_data(to)
    }

    /// Which engine.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The managed server (port, pid, folder).
    pub fn managed(&self) -> &ManagedServer {
        &self.managed
    }

    /// Creates the eight tables and loads them at scale factor `sf` (PostgreSQL: `COPY
    /// FROM STDIN`; MariaDB: `LOAD DATA INFILE` of a file written to the server's folder and
    /// removed after, with `foreign_key_checks=0` during the load as mysqldump does),
    /// then `ANALYZE` (`ANALYZE` / `ANALYZE TABLE`). Returns the rows loaded per table.
    ///
    /// Errors: a bad scale factor ([`ServerError::Usage`]); [`ServerError::Sql`];
    /// [`ServerError::Io`] writing the load file.
    pub fn load(&mut self, sf: f64) -> Result<Vec<(TpchTable, u64)>, ServerError> {
        tpch::check_scale_factor(sf).map_err(ServerError::Usage)?;
        let (dialect, ix) = match self.kind {
            ServerKind::PostgreSql => (Dialect::PostgreSql, TpchIndexes::PrimaryKeysOnly),
            ServerKind::MariaDb | ServerKind::MyRocks => {
                (Dialect::MySql, TpchIndexes::ForeignKeyIndexes)
            }
        };
        let defs = tpch::table_defs(ix);
        let mut loaded = Vec::new();
        let dir = self.managed.dir().to_path_buf();
        match &mut self.conn {
            Conn::None => return Err(not_connected(self.kind)),
            Conn::Pg(c) => {
                for (t, def) in TpchTable::ALL.iter().zip(&defs) {
                    pg_exec(c, &create_table_sql(def, dialect))?;
                    let sql = format!("COPY {} FROM STDIN", t.name());
                    let mut w = c
                        .copy_in(&sql)
                        .map_err(|e| ServerError::sql(self.kind, &sql, pg_message(&e)))?;
                    let n = write_rows(*t, sf, &mut w)
                        .map_err(|e| ServerError::io(&format!("COPY {}", t.name()), e))?;
                    w.finish()
                        .map_err(|e| ServerError::sql(self.kind, &sql, pg_message(&e)))?;
                    loaded.push((*t, n));
                }
                pg_exec(c, "ANALYZE")?;
            }
            Conn::My(c) => {
                // InnoDB's persistent statistics sample 20 random leaf pages per index
                // (innodb_stats_persistent_sample_pages); with so few, the estimates
                // and with them Q18's join order changed from ANALYZE to ANALYZE at SF
                // 0.01. Every page is read instead, so that the plan is reproducible:
                // the one setting that differs from the defaults.
                my_exec(
                    c,
                    "SET GLOBAL innodb_stats_persistent_sample_pages = 1000000",
                )?;
                my_exec(c, "SET foreign_key_checks = 0")?;
                for (t, def) in TpchTable::ALL.iter().zip(&defs) {
                    my_exec(c, &create_table_sql(def, dialect))?;
                    let path = dir.join(format!("load-{}.tsv", t.name()));
                    let f = std::fs::File::create(&path)
                        .map_err(|e| ServerError::io(&format!("creating {}", path.display()), e))?;
                    let mut w = std::io::BufWriter::new(f);
                    let n = write_rows(*t, sf, &mut w)
                        .and_then(|n| w.flush().map(|_| n))
                        .map_err(|e| ServerError::io(&format!("writing {}", path.display()), e))?;
                    drop(w);
                    let r = my_exec(
                        c,
                        &format!(
                            "LOAD DATA INFILE '{}' INTO TABLE {}",
                            path.display(),
                            t.name()
                        ),
                    );
                    let _ = std::fs::remove_file(&path);
                    r?;
                    loaded.push((*t, n));
                }
                my_exec(c, "SET foreign_key_checks = 1")?;
                let names: Vec<&str> = TpchTable::ALL.iter().map(|t| t.name()).collect();
                let sql = format!("ANALYZE TABLE {}", names.join(", "));
                c.query_drop(&sql)
                    .map_err(|e| ServerError::sql(self.kind, &sql, e))?;
            }
        }
        Ok(loaded)
    }

    /// The dialect of this server's queries.
    pub fn dialect(&self) -> Dialect {
        match self.kind {
            ServerKind::PostgreSql => Dialect::PostgreSql,
            ServerKind::MariaDb | ServerKind::MyRocks => Dialect::MySql,
        }
    }

    /// Runs query `n` with parameters `p`, stopped after `timeout` (PostgreSQL
    /// `statement_timeout`; MariaDB `max_statement_time`), and returns the last statement's
    /// rows (Q15's view is created, queried and dropped).
    ///
    /// Errors: a query number outside 1..=22 ([`ServerError::Usage`]);
    /// [`ServerError::Sql`] for any failure but the timeout.
    pub fn run_query(
        &mut self,
        n: u32,
        p: &QueryParams,
        timeout: Duration,
    ) -> Result<ServerQueryRun, ServerError> {
        let stmts = tpch::query_sql(n, self.dialect(), p).map_err(ServerError::Usage)?;
        let kind = self.kind;
        let t0 = Instant::now();
        let mut rows = Vec::new();
        let mut timed_out = false;
        match &mut self.conn {
            Conn::None => return Err(not_connected(self.kind)),
            Conn::Pg(c) => {
                pg_exec(
                    c,
                    &format!("SET statement_timeout = {}", timeout.as_millis()),
                )?;
                for s in &stmts {
                    match c.simple_query(s) {
                        Ok(msgs) => {
                            if s.starts_with("select") {
                                rows = pg_text_rows(&msgs);
                            }
                        }
                        Err(e) if e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED) => {
                            timed_out = true;
                            break;
                        }
                        Err(e) => return Err(ServerError::sql(kind, s, pg_message(&e))),
                    }
                }
                if timed_out {
                    // Q15: the view may be left behind.
                    let _ = c.simple_query("DROP VIEW IF EXISTS revenue0");
                }
                pg_exec(c, "SET statement_timeout = 0")?;
            }
            Conn::My(c) => {
                my_exec(
                    c,
                    &format!("SET max_statement_time = {}", timeout.as_secs_f64()),
                )?;
                // ER_STATEMENT_TIMEOUT (1969): "Query execution was interrupted
                // (max_statement_time exceeded)", at the statement or while its rows come.
                let is_timeout =
                    |e: &mysql::Error| matches!(e, mysql::Error::MySqlError(m) if m.code == 1969);
                for s in &stmts {
                    let r: Result<Vec<Vec<String>>, mysql::Error> = (|| {
                        let mut res = c.query_iter(s)?;
                        let mut r = Vec::new();
                        if let Some(set) = res.iter() {
                            for row in set {
                                r.push(row?.unwrap().into_iter().map(my_text).collect());
                            }
                        }
                        Ok(r)
                    })();
                    match r {
                        Ok(r) if s.starts_with("select") => rows = r,
                        Ok(_) => {}
                        Err(e) if is_timeout(&e) => {
                            timed_out = true;
                            break;
                        }
                        Err(e) => return Err(ServerError::sql(kind, s, e)),
                    }
                }
                if timed_out {
                    let _ = c.query_drop("DROP VIEW IF EXISTS revenue0");
                }
                my_exec(c, "SET max_statement_time = 0")?;
            }
        }
        Ok(ServerQueryRun {
            rows: if timed_out { Vec::new() } else { rows },
            duration_us: t0.elapsed().as_micros() as u64,
            timed_out,
        })
    }

    /// The engine's plan of query `n` as JSON: PostgreSQL `EXPLAIN (FORMAT JSON)`, MariaDB
    /// `EXPLAIN FORMAT=JSON` (of the query statement; Q15's view is created first and
    /// dropped after).
    ///
    /// Errors: as [`TpchServer::run_query`]; [`ServerError::Counters`] for output that is
    /// not JSON.
    pub fn explain_json(
        &mut self,
        n: u32,
        p: &QueryParams,
    ) -> Result<serde_json::Value, ServerError> {
        let stmts = tpch::query_sql(n, self.dialect(), p).map_err(ServerError::Usage)?;
        let kind = self.kind;
        let mut text = String::new();
        for s in &stmts {
            let query = s.starts_with("select");
            match &mut self.conn {
                Conn::None => return Err(not_connected(self.kind)),
                Conn::Pg(c) => {
                    if !query {
                        pg_exec(c, s)?;
                        continue;
                    }
                    let sql = format!("EXPLAIN (FORMAT JSON) {s}");
                    let r = c
                        .simple_query(&sql)
                        .map_err(|e| ServerError::sql(kind, &sql, pg_message(&e)))?;
                    for m in r {
                        if let postgres::SimpleQueryMessage::Row(row) = m {
                            text.push_str(row.get(0).unwrap_or(""));
                        }
                    }
                }
                Conn::My(c) => {
                    if !query {
                        my_exec(c, s)?;
                        continue;
                    }
                    let sql = format!("EXPLAIN FORMAT=JSON {s}");
                    let r: Option<String> = c
                        .query_first(&sql)
                        .map_err(|e| ServerError::sql(kind, &sql, e))?;
                    text = r.unwrap_or_default();
                }
            }
        }
        serde_json::from_str(&text)
            .map_err(|e| ServerError::Counters(format!("EXPLAIN of Q{n} is not JSON: {e}")))
    }

    /// Pages the engine has read from storage so far, in 4 KiB blocks: PostgreSQL
    /// `sum(pg_stat_database.blks_read)` (8 KiB pages, after `pg_stat_force_next_flush()`;
    /// reads the OS page cache served count too), InnoDB `Innodb_pages_read` (16 KiB
    /// pages, read-ahead included; O_DIRECT, so every one is a device read).
    ///
    /// Errors: [`ServerError::Sql`].
    pub fn read_blocks_4k(&mut self) -> Result<u64, ServerError> {
        let kind = self.kind;
        match &mut self.conn {
            Conn::None => Err(not_connected(self.kind)),
            Conn::Pg(c) => {
                pg_exec(c, "SELECT pg_stat_force_next_flush()")?;
                let sql = "SELECT sum(blks_read)::bigint FROM pg_stat_database";
                let row = c
                    .query_one(sql, &[])
                    .map_err(|e| ServerError::sql(kind, sql, pg_message(&e)))?;
                let v: Option<i64> = row.get(0);
                Ok(v.unwrap_or(0).max(0) as u64 * 2)
            }
            Conn::My(c) => {
                let sql = "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                           WHERE VARIABLE_NAME = 'INNODB_PAGES_READ'";
                let v: Option<String> = c
                    .query_first(sql)
                    .map_err(|e| ServerError::sql(kind, sql, e))?;
                Ok(v.and_then(|s| s.parse::<u64>().ok()).unwrap_or(0) * 4)
            }
        }
    }

    /// Stops the server (also done on drop).
    ///
    /// Errors: as [`ManagedServer::stop`].
    pub fn stop(mut self) -> Result<(), ServerError> {
        self.managed.stop()
    }
}

/// The rows of a simple-protocol reply as text (NULL as `NULL`).
fn pg_text_rows(msgs: &[postgres::SimpleQueryMessage]) -> Vec<Vec<String>> {
    msgs.iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(r) => Some(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn my_text(v: mysql::Value) -> String {
    match v {
        mysql::Value::NULL => "NULL".into(),
        mysql::Value::Bytes(b) => String::from_utf8_lossy(&b).into_owned(),
        mysql::Value::Int(i) => i.to_string(),
        mysql::Value::UInt(u) => u.to_string(),
        mysql::Value::Float(f) => f.to_string(),
        mysql::Value::Double(d) => d.to_string(),
        other => other.as_sql(true),
    }
}

fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{} ({})", d.message(), d.code().code()),
        None => e.to_string(),
    }
}

fn pg_exec(c: &mut postgres::Client, sql: &str) -> Result<(), ServerError> {
    c.batch_execute(sql)
        .map_err(|e| ServerError::sql(ServerKind::PostgreSql, sql, pg_message(&e)))
}

fn my_exec(c: &mut mysql::Conn, sql: &str) -> Result<(), ServerError> {
    c.query_drop(sql)
        .map_err(|e| ServerError::sql(ServerKind::MariaDb, sql, e))
}
