//! Seed 002's load, a connection storm: U users started evenly over a ramp-up of T seconds
//! (JMeter's thread group: 3,000 threads, ramp-up 150 s, duration 150 s), each sending
//! `SELECT * FROM sbtest1 LIMIT 20` in a loop until the end — over one connection of its
//! own (`persistent`), or over a new connection for every query (`per_query`).
//!
//! The client must not be what limits the server, and 3,000 connections must be driven
//! from a 2-core machine: so every user is a task on one tokio runtime (two worker
//! threads), speaking the wire protocol itself with the least work a client can do —
//! PostgreSQL's simple query protocol (protocol.sgml "Simple Query": `Q`, then
//! `RowDescription`, `DataRow`s, `CommandComplete`, `ReadyForQuery`) and MySQL's text
//! protocol (`COM_QUERY`, column count, column definitions, EOF, rows, EOF; MariaDB KB
//! "Result Set Packets"), rows counted and not decoded. Authentication: trust only
//! (PostgreSQL `AuthenticationOk`; MariaDB started with `--skip-grant-tables`, where the
//! empty `mysql_native_password` answer is accepted), which is how mvcclab's managed
//! servers, PgBouncer (`auth_type = trust`) and `mvcclab serve` run.
//!
//! On ending a connection the client sends `Terminate` / `COM_QUIT` and waits for the
//! server to close first, so the TIME_WAIT sockets of a `per_query` storm stay on the
//! server's side of loopback and do not use up the client's ephemeral ports.
//!
//! # Invariants
//! 1. No user starts a query after the end of the window; queries in flight then finish
//!    (at most 30 s later) and are counted.
//! 2. A failed connect or query is counted and the user goes on after 100 ms (so a
//!    server that refuses connections is seen in the counts, not as a hang); the first
//!    error's text is kept.

use crate::ServerError;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The query every user sends (seed 002, Table 2: `SELECT * FROM DB LIMIT 20`).
pub const STORM_QUERY: &str = "SELECT * FROM sbtest1 LIMIT 20";

/// Which wire protocol, as whom, into which database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// PostgreSQL's protocol 3.0 (real PostgreSQL, PgBouncer, `mvcclab serve`).
    Postgres {
        /// `user` of the startup message.
        user: String,
        /// `database` of the startup message.
        database: String,
    },
    /// MySQL's client/server protocol 4.1 (MariaDB).
    MySql {
        /// User name of the handshake response.
        user: String,
        /// Database of the handshake response (`CLIENT_CONNECT_WITH_DB`).
        database: String,
    },
}

/// How users connect: one connection each for the whole run, or one per query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StormVariant {
    /// Each user opens its connection once and loops the query on it (the seed's JMeter
    /// thread keeping its connection).
    Persistent,
    /// Each user connects, sends one query and disconnects, in a loop.
    PerQuery,
}

impl StormVariant {
    /// `persistent` / `per_query`.
    pub fn name(self) -> &'static str {
        match self {
            StormVariant::Persistent => "persistent",
            StormVariant::PerQuery => "per_query",
        }
    }
}

/// A storm to run.
#[derive(Clone, Debug)]
pub struct StormPlan {
    /// The server's address (127.0.0.1:PORT).
    pub addr: SocketAddr,
    /// Its protocol and login.
    pub protocol: Protocol,
    /// Users (U).
    pub users: u32,
    /// Users start evenly over this many seconds (T): user i at i·T/U.
    pub ramp_up_s: f64,
    /// The window's length, s, from the first user's start; no query starts after it.
    pub duration_s: f64,
    /// Persistent connections or one per query.
    pub variant: StormVariant,
    /// Pause after each query, ms (0: a tight loop).
    pub think_ms: u64,
    /// The query.
    pub query: String,
}

/// What the client did and saw.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StormOutcome {
    /// Queries answered (each with its rows).
    pub queries: u64,
    /// Rows received.
    pub rows: u64,
    /// Connections opened (startup / handshake completed).
    pub connections: u64,
    /// Connects or logins that failed.
    pub connect_errors: u64,
    /// Queries answered with an error.
    pub query_errors: u64,
    /// The first failure's message.
    pub first_error: Option<String>,
    /// Largest number of connections open at once.
    pub peak_open_connections: u64,
    /// From the first user's start to the last user's end, s.
    pub elapsed_s: f64,
}

#[derive(Default)]
struct Tally {
    queries: AtomicU64,
    rows: AtomicU64,
    connections: AtomicU64,
    connect_errors: AtomicU64,
    query_errors: AtomicU64,
    open: AtomicU64,
    peak_open: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Tally {
    fn error(&self, counter: &AtomicU64, msg: String) {
        counter.fetch_add(1, Ordering::Relaxed);
        let mut f = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(msg);
        }
    }
}

/// An open connection of either protocol.
enum Conn {
    Pg(BufReader<TcpStream>),
    My(BufReader<TcpStream>),
}

type Res<T> = Result<T, String>;

async fn read_exact(s: &mut BufReader<TcpStream>, n: usize) -> Res<Vec<u8>> {
    let mut b = vec![0u8; n];
    s.read_exact(&mut b)
        .await
        .map_err(|e| format!("reading from the server: {e}"))?;
    Ok(b)
}

/// One PostgreSQL message: (type, body).
async fn pg_message(s: &mut BufReader<TcpStream>) -> Res<(u8, Vec<u8>)> {
    let h = read_exact(s, 5).await?;
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
    if !(4..=(1 << 30)).contains(&len) {
        return Err(format!(
            "bad message length {len} (type {:?})",
            h[0] as char
        ));
    }
    Ok((h[0], read_exact(s, len - 4).await?))
}

/// The `M` field of an ErrorResponse.
fn pg_error_text(body: &[u8]) -> String {
    let mut i = 0;
    while i < body.len() && body[i] != 0 {
        let end = body[i + 1..]
            .iter()
            .position(|&b| b == 0)
            .map_or(body.len(), |p| i + 1 + p);
        if body[i] == b'M' {
            return String::from_utf8_lossy(&body[i + 1..end]).into_owned();
        }
        i = end + 1;
    }
    "error without a message".into()
}

async fn pg_connect(addr: SocketAddr, user: &str, database: &str) -> Res<Conn> {
    let s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut s = BufReader::new(s);
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", user), ("database", database)] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.get_mut()
        .write_all(&msg)
        .await
        .map_err(|e| format!("sending the startup message: {e}"))?;
    loop {
        let (t, b) = pg_message(&mut s).await?;
        match t {
            b'R' => {
                let code = b
                    .get(..4)
                    .map_or(u32::MAX, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                if code != 0 {
                    return Err(format!(
                        "authentication method {code} asked: the storm client logs in with \
                         trust only"
                    ));
                }
            }
            b'E' => return Err(pg_error_text(&b)),
            b'Z' => return Ok(Conn::Pg(s)),
            _ => {} // ParameterStatus, BackendKeyData, NoticeResponse
        }
    }
}

/// Sends `sql` (simple query) and returns its rows, or the server's error.
async fn pg_query(s: &mut BufReader<TcpStream>, sql: &str) -> Res<Result<u64, String>> {
    let mut msg = vec![b'Q'];
    msg.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
    msg.extend_from_slice(sql.as_bytes());
    msg.push(0);
    s.get_mut()
        .write_all(&msg)
        .await
        .map_err(|e| format!("sending a query: {e}"))?;
    let mut rows = 0;
    let mut err = None;
    loop {
        let (t, b) = pg_message(s).await?;
        match t {
            b'D' => rows += 1,
            b'E' => err = Some(pg_error_text(&b)),
            b'Z' => return Ok(err.map_or(Ok(rows), Err)),
            _ => {}
        }
    }
}

/// One MySQL packet: (sequence id, payload).
async fn my_packet(s: &mut BufReader<TcpStream>) -> Res<(u8, Vec<u8>)> {
    let h = read_exact(s, 4).await?;
    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
    Ok((h[3], read_exact(s, len).await?))
}

async fn my_send(s: &mut BufReader<TcpStream>, seq: u8, payload: &[u8]) -> Res<()> {
    let len = payload.len() as u32;
    let mut p = len.to_le_bytes()[..3].to_vec();
    p.push(seq);
    p.extend_from_slice(payload);
    s.get_mut()
        .write_all(&p)
        .await
        .map_err(|e| format!("sending a packet: {e}"))
}

/// The message of an ERR packet (0xFF, code, '#', SQLSTATE, message).
fn my_error_text(p: &[u8]) -> String {
    let code = if p.len() >= 3 {
        u16::from_le_bytes([p[1], p[2]])
    } else {
        0
    };
    let msg = if p.len() > 9 && p[3] == b'#' {
        &p[9..]
    } else {
        p.get(3..).unwrap_or(&[])
    };
    format!("{code}: {}", String::from_utf8_lossy(msg))
}

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;

async fn my_connect(addr: SocketAddr, user: &str, database: &str) -> Res<Conn> {
    let s = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut s = BufReader::new(s);
    let (seq, hello) = my_packet(&mut s).await?;
    match hello.first() {
        Some(0xFF) => return Err(my_error_text(&hello)),
        Some(10) => {}
        other => return Err(format!("unknown handshake version {other:?}")),
    }
    let caps = CLIENT_LONG_PASSWORD
        | CLIENT_CONNECT_WITH_DB
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION;
    let mut r = Vec::new();
    r.extend_from_slice(&caps.to_le_bytes());
    r.extend_from_slice(&(16u32 << 20).to_le_bytes()); // max packet
    r.push(33); // utf8_general_ci
    r.extend_from_slice(&[0u8; 23]);
    r.extend_from_slice(user.as_bytes());
    r.push(0);
    r.push(0); // empty auth response (length-prefixed)
    r.extend_from_slice(database.as_bytes());
    r.push(0);
    my_send(&mut s, seq.wrapping_add(1), &r).await?;
    loop {
        let (seq, p) = my_packet(&mut s).await?;
        match p.first() {
            Some(0x00) => return Ok(Conn::My(s)),
            Some(0xFF) => return Err(my_error_text(&p)),
            // Auth switch request: answer with empty auth data.
            Some(0xFE) => my_send(&mut s, seq.wrapping_add(1), &[]).await?,
            other => return Err(format!("unexpected login answer {other:?}")),
        }
    }
}

/// An EOF packet (0xFE and shorter than 9 bytes).
fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xFE) && p.len() < 9
}

async fn my_query(s: &mut BufReader<TcpStream>, sql: &str) -> Res<Result<u64, String>> {
    let mut q = vec![0x03];
    q.extend_from_slice(sql.as_bytes());
    my_send(s, 0, &q).await?;
    let (_, first) = my_packet(s).await?;
    match first.first() {
        Some(0xFF) => return Ok(Err(my_error_text(&first))),
        Some(0x00) => return Ok(Ok(0)),
        _ => {}
    }
    // Column definitions up to EOF, then rows up to EOF (or ERR).
    loop {
        let (_, p) = my_packet(s).await?;
        if is_eof(&p) {
            break;
        }
    }
    let mut rows = 0;
    loop {
        let (_, p) = my_packet(s).await?;
        if is_eof(&p) {
            return Ok(Ok(rows));
        }
        if p.first() == Some(&0xFF) {
            return Ok(Err(my_error_text(&p)));
        }
        rows += 1;
    }
}

impl Conn {
    async fn open(addr: SocketAddr, p: &Protocol) -> Res<Conn> {
        match p {
            Protocol::Postgres { user, database } => pg_connect(addr, user, database).await,
            Protocol::MySql { user, database } => my_connect(addr, user, database).await,
        }
    }

    /// Runs `sql`: Ok(Ok(rows)), Ok(Err(server's error)), or Err (connection broken).
    async fn query(&mut self, sql: &str) -> Res<Result<u64, String>> {
        match self {
            Conn::Pg(s) => pg_query(s, sql).await,
            Conn::My(s) => my_query(s, sql).await,
        }
    }

    /// Says goodbye (Terminate / COM_QUIT) and waits up to 5 s for the server to close.
    async fn close(self) {
        let (mut s, bye): (BufReader<TcpStream>, Vec<u8>) = match self {
            Conn::Pg(s) => (s, vec![b'X', 0, 0, 0, 4]),
            Conn::My(s) => (s, vec![1, 0, 0, 0, 0x01]),
        };
        if s.get_mut().write_all(&bye).await.is_ok() {
            let mut b = [0u8; 256];
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                while let Ok(n) = s.read(&mut b).await {
                    if n == 0 {
                        break;
                    }
                }
            })
            .await;
        }
    }
}

async fn user_task(plan: Arc<StormPlan>, t: Arc<Tally>, start: tokio::time::Instant, i: u32) {
    let offset = plan.ramp_up_s * i as f64 / plan.users.max(1) as f64;
    tokio::time::sleep_until(start + Duration::from_secs_f64(offset)).await;
    let end = start + Duration::from_secs_f64(plan.duration_s);
    let retry = Duration::from_millis(100);
    let think = Duration::from_millis(plan.think_ms);
    let mut conn: Option<Conn> = None;
    while tokio::time::Instant::now() < end {
        let mut c = match conn.take() {
            Some(c) => c,
            None => match Conn::open(plan.addr, &plan.protocol).await {
                Ok(c) => {
                    t.connections.fetch_add(1, Ordering::Relaxed);
                    let open = t.open.fetch_add(1, Ordering::Relaxed) + 1;
                    t.peak_open.fetch_max(open, Ordering::Relaxed);
                    c
                }
                Err(e) => {
                    t.error(&t.connect_errors, e);
                    tokio::time::sleep(retry).await;
                    continue;
                }
            },
        };
        match c.query(&plan.query).await {
            Ok(Ok(rows)) => {
                t.queries.fetch_add(1, Ordering::Relaxed);
                t.rows.fetch_add(rows, Ordering::Relaxed);
                if plan.variant == StormVariant::Persistent {
                    conn = Some(c);
                } else {
                    c.close().await;
                    t.open.fetch_sub(1, Ordering::Relaxed);
                }
                if !think.is_zero() {
                    tokio::time::sleep(think).await;
                }
            }
            Ok(Err(e)) => {
                t.error(&t.query_errors, e);
                conn = Some(c);
                tokio::time::sleep(retry).await;
            }
            Err(e) => {
                // The connection broke: count it, open a new one.
                t.error(&t.query_errors, e);
                t.open.fetch_sub(1, Ordering::Relaxed);
                tokio::time::sleep(retry).await;
            }
        }
    }
    if let Some(c) = conn {
        c.close().await;
        t.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs the storm of `plan` to its end on a runtime of its own (two worker threads).
///
/// Errors: [`ServerError::Io`] when the runtime cannot be built; failures of single
/// connections and queries are counted in the outcome, not returned.
pub fn run_storm(plan: &StormPlan) -> Result<StormOutcome, ServerError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mvcclab-storm")
        .enable_all()
        .build()
        .map_err(|e| ServerError::io("building the storm client's runtime", e))?;
    let plan = Arc::new(plan.clone());
    let tally = Arc::new(Tally::default());
    let began = Instant::now();
    rt.block_on(async {
        let start = tokio::time::Instant::now();
        let tasks: Vec<_> = (0..plan.users)
            .map(|i| tokio::spawn(user_task(plan.clone(), tally.clone(), start, i)))
            .collect();
        let limit = start + Duration::from_secs_f64(plan.duration_s) + Duration::from_secs(30);
        for t in tasks {
            let _ = tokio::time::timeout_at(limit, t).await;
        }
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    let t = &tally;
    let first_error = t
        .first_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(StormOutcome {
        queries: t.queries.load(Ordering::Relaxed),
        rows: t.rows.load(Ordering::Relaxed),
        connections: t.connections.load(Ordering::Relaxed),
        connect_errors: t.connect_errors.load(Ordering::Relaxed),
        query_errors: t.query_errors.load(Ordering::Relaxed),
        first_error,
        peak_open_connections: t.peak_open.load(Ordering::Relaxed),
        elapsed_s: began.elapsed().as_secs_f64(),
    })
}

/// Runs the statements `sqls` in order on one connection (the load), retrying the
/// connect for up to 60 s while the server starts up.
///
/// Errors: [`ServerError::Connect`] when no connection could be made in 60 s;
/// [`ServerError::Io`] naming the statement and the server's message when one fails.
pub fn run_statements(
    addr: SocketAddr,
    protocol: &Protocol,
    sqls: &mut dyn Iterator<Item = String>,
) -> Result<(), ServerError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::io("building a runtime", e))?;
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut c = loop {
            match Conn::open(addr, protocol).await {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => {
                    return Err(ServerError::Connect {
                        server: "storm target".into(),
                        address: addr.to_string(),
                        message: e,
                    })
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        for sql in sqls {
            let short: String = sql.chars().take(100).collect();
            match c.query(&sql).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) | Err(e) => {
                    return Err(ServerError::io(
                        &format!("running `{short}` on {addr}"),
                        std::io::Error::other(e),
                    ))
                }
            }
        }
        c.close().await;
        Ok(())
    })
}

/// The statements that load `sbtest1` with `rows` rows as sysbench's `prepare` does
/// (oltp_common.lua: CREATE TABLE, multi-row INSERTs, CREATE INDEX k_1), for `protocol`'s
/// dialect, after a `DROP TABLE IF EXISTS`.
pub fn load_statements(protocol: &Protocol, rows: u32, seed: u64) -> Vec<String> {
    use mvcclab_workload::sql::{self, Dialect};
    use mvcclab_workload::sysbench::{load_row, SysbenchOptions};
    let d = match protocol {
        Protocol::Postgres { .. } => Dialect::PostgreSql,
        Protocol::MySql { .. } => Dialect::MySql,
    };
    let opts = SysbenchOptions {
        tables: 1,
        table_size: rows,
        auto_inc: false,
        ..SysbenchOptions::default()
    };
    let mut out = vec![
        "DROP TABLE IF EXISTS sbtest1".to_string(),
        sql::create_table(d, 1, false),
    ];
    let mut rng = mvcclab_workload::rand::SbRand::new(seed, 0x10001, opts.rand.clone());
    let mut id = 1;
    while id <= rows {
        let last = (id + 999).min(rows);
        let batch: Vec<_> = (id..=last).map(|i| load_row(&mut rng, &opts, i)).collect();
        out.push(sql::bulk_insert(1, false, &batch));
        id = last + 1;
    }
    out.push(sql::create_secondary_index(1));
    out
}

/// Whose count of pages read from outside the buffer pool [`pages_read_outside_pool`]
/// reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolEngine {
    /// `sum(pg_stat_database.blks_read)`: 8 KiB pages read through the OS page cache.
    PostgreSql,
    /// `Innodb_buffer_pool_reads`: 16 KiB pages read with O_DIRECT.
    MariaDb,
    /// `mvcclab serve`: `sum(buffer_misses)` of `mvcclab_stat_io`.
    Serve,
}

/// The engine's own count, since it started, of pages it read from outside its buffer
/// pool, from a new admin connection to 127.0.0.1:`port` (PostgreSQL and serve as
/// `postgres`, MariaDB as `root`). `None` when it cannot be read.
pub fn pages_read_outside_pool(engine: PoolEngine, port: u16) -> Option<u64> {
    let pg = |sql: &str, column: &str| -> Option<u64> {
        let mut c = postgres::Config::new()
            .host("127.0.0.1")
            .port(port)
            .user("postgres")
            .dbname("postgres")
            .connect(postgres::NoTls)
            .ok()?;
        let rows = c.simple_query(sql).ok()?;
        Some(
            rows.iter()
                .filter_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(column)?.parse::<u64>().ok(),
                    _ => None,
                })
                .sum(),
        )
    };
    match engine {
        PoolEngine::PostgreSql => pg(
            "SELECT sum(blks_read)::bigint AS blks_read FROM pg_stat_database",
            "blks_read",
        ),
        PoolEngine::Serve => pg("SELECT * FROM mvcclab_stat_io", "buffer_misses"),
        PoolEngine::MariaDb => {
            use mysql::prelude::Queryable;
            let mut c = mysql::Conn::new(
                mysql::OptsBuilder::new()
                    .ip_or_hostname(Some("127.0.0.1"))
                    .tcp_port(port)
                    .user(Some("root")),
            )
            .ok()?;
            let v: Option<(String, u64)> = c
                .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")
                .ok()?;
            v.map(|(_, n)| n)
        }
    }
}

/// The soft limit of open files of this process (`getrlimit(RLIMIT_NOFILE)`), or `None`
/// when it cannot be read.
pub fn open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0).then_some(limit.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_is_sysbench_s_prepare_in_the_protocol_s_dialect() {
        let pg = Protocol::Postgres {
            user: "u".into(),
            database: "d".into(),
        };
        let s = load_statements(&pg, 2500, 1);
        assert_eq!(s.len(), 2 + 3 + 1);
        assert!(s[1].starts_with("CREATE TABLE sbtest1(id INTEGER NOT NULL"));
        assert!(!s[1].contains("ENGINE"));
        assert_eq!(s[5], "CREATE INDEX k_1 ON sbtest1(k)");
        let my = Protocol::MySql {
            user: "u".into(),
            database: "d".into(),
        };
        assert!(load_statements(&my, 10, 1)[1].contains("ENGINE = InnoDB"));
    }

    #[test]
    fn error_packets_give_their_message() {
        let mut p = vec![0xFF, 0x28, 0x04, b'#'];
        p.extend_from_slice(b"08004Too many connections");
        assert_eq!(my_error_text(&p), "1064: Too many connections");
        let body = b"SFATAL\0C53300\0Msorry, too many clients already\0\0";
        assert_eq!(pg_error_text(body), "sorry, too many clients already");
        assert!(is_eof(&[0xFE, 0, 0, 2, 0]));
        assert!(!is_eof(&[0xFE, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    }

    #[test]
    fn a_refused_storm_is_counted_not_hung() {
        // A port nothing listens on: every connect fails, counted; the run ends.
        let port = crate::managed::free_port().unwrap();
        let plan = StormPlan {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            protocol: Protocol::Postgres {
                user: "u".into(),
                database: "d".into(),
            },
            users: 3,
            ramp_up_s: 0.1,
            duration_s: 0.5,
            variant: StormVariant::PerQuery,
            think_ms: 0,
            query: STORM_QUERY.into(),
        };
        let o = run_storm(&plan).unwrap();
        assert_eq!(o.queries, 0);
        assert!(o.connect_errors >= 3, "{o:?}");
        assert!(o.first_error.unwrap().contains("connecting to"));
    }
}
