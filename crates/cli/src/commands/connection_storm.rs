//! `mvcclab experiment connection_storm`: seed 002's CPU comparison of connection models.
//!
//! The seed ran JMeter with 3,000 users ramped up over 150 s, each sending
//! `SELECT * FROM DB LIMIT 20` until the end, against MariaDB 10.0 and PostgreSQL 9.5, and
//! read `perf stat` on the server: context switches, page faults, task-clock and CPUs
//! utilised (its Table 3). Here the same load (crates/servers `storm.rs`: U users started
//! evenly over T s, each looping the query until T, over one connection of its own —
//! variant `persistent` — or over a new connection per query — `per_query`) runs against:
//!
//! - `postgresql`: real PostgreSQL 15, a process per connection (postmaster.c
//!   `BackendStartup` forks a backend per connection), `max_connections` = U + 10;
//! - `pgbouncer`: the same PostgreSQL behind PgBouncer 1.18 (transaction pooling,
//!   `default_pool_size` backends; pgbouncer.rs), both processes' counts;
//! - `mariadb`: real MariaDB 10.11, a thread per connection (`thread_handling =
//!   one-thread-per-connection`, the default; MariaDB KB "Thread Pool in MariaDB");
//! - `mariadb_pool`: MariaDB with `thread_handling = pool-of-threads`;
//! - `serve`, `serve_pool`: `mvcclab serve` (a design behind PostgreSQL's protocol) with a
//!   thread per connection and with a pool of one worker per CPU.
//!
//! Each target × variant is a fresh server: started, `sbtest1` loaded as sysbench's
//! prepare loads it, one query sent to warm its caches, then its processes moved into a
//! cgroup v2 group of their own and counted by `perf stat -a -G` for the window (the
//! seed's tool and events; perf_stat.rs) — backends forked and exited during the window
//! included. Beside the seed's figures: the OS page-cache reads each server made (the
//! tracepoint `filemap:mm_filemap_get_pages`, reached by every buffered file read and by
//! no O_DIRECT read), and the engine's own count of pages it read from outside its buffer
//! pool (PostgreSQL `pg_stat_database.blks_read`, 8 KiB pages, through the page cache;
//! InnoDB `Innodb_buffer_pool_reads`, 16 KiB, O_DIRECT; serve's `buffer_misses`). The
//! client's own CPU (this process, all its threads) is reported too, so that a saturated
//! client can be seen.
//!
//! Only software perf events exist on this machine (no dTLB-load-misses): the seed's TLB
//! explanation of PostgreSQL's faults cannot be measured here and is not estimated.

use crate::progress::status;
use crate::units::parse_size_bytes;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_servers::managed::{stop_child, ManagedOptions, ManagedServer};
use mvcclab_servers::perf_stat::{Cgroup, PerfCounts, PerfStat};
use mvcclab_servers::pgbouncer::PgBouncer;
use mvcclab_servers::storm::{
    load_statements, open_files_limit, pages_read_outside_pool, run_statements, run_storm,
    PoolEngine, Protocol, StormOutcome, StormPlan, StormVariant, STORM_QUERY,
};
use mvcclab_servers::ServerKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The targets, in the report's order.
const TARGETS: [&str; 6] = [
    "postgresql",
    "pgbouncer",
    "mariadb",
    "mariadb_pool",
    "serve",
    "serve_pool",
];

/// Flags of `connection_storm`.
#[derive(Args, Debug)]
pub struct ConnectionStormArgs {
    /// Users (U): each opens its own connection (seed: 3,000).
    #[arg(long, default_value_t = 3000)]
    pub users: u32,
    /// Seconds over which the users start, evenly (T; seed: 150).
    #[arg(long, default_value_t = 150.0)]
    pub ramp_up_s: f64,
    /// Length of the measured window in seconds, from the first user's start (default:
    /// the ramp-up, as the seed's 150 s duration with 150 s ramp-up).
    #[arg(long)]
    pub duration_s: Option<f64>,
    /// Targets, comma-separated: postgresql, pgbouncer, mariadb, mariadb_pool, serve,
    /// serve_pool.
    #[arg(
        long,
        default_value = "postgresql,pgbouncer,mariadb,mariadb_pool,serve,serve_pool",
        value_delimiter = ','
    )]
    pub targets: Vec<String>,
    /// Variants, comma-separated: persistent (a connection per user), per_query (a new
    /// connection for every query).
    #[arg(long, default_value = "persistent,per_query", value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Pause after each query, ms (0: each user loops without pause).
    #[arg(long, default_value_t = 0)]
    pub think_ms: u64,
    /// Rows in sbtest1.
    #[arg(long, default_value_t = 10_000)]
    pub table_size: u32,
    /// Buffer pool of every target (PostgreSQL shared_buffers, InnoDB's pool, serve's).
    #[arg(long, default_value = "128MiB", value_parser = parse_size_bytes)]
    pub buffer_pool: u64,
    /// PgBouncer's default_pool_size: server connections per database and user.
    #[arg(long, default_value_t = 20)]
    pub pgbouncer_pool_size: u32,
    /// The design `serve` and `serve_pool` run.
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Where managed servers keep their folders (default: the system's temp directory).
    #[arg(long)]
    pub server_dir: Option<PathBuf>,
    /// Output format: md (the seed's Table 3 and more) or json.
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Write the report here; `-` is standard output.
    #[arg(long, default_value = "-", value_parser = crate::export::output_path)]
    pub output: String,
    /// Also write DIR/connection_storm.json and DIR/summary.md.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// No status lines on standard error.
    #[arg(long, short)]
    pub quiet: bool,
}

/// One target × variant.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StormRun {
    /// `postgresql`, `pgbouncer`, `mariadb`, `mariadb_pool`, `serve`, `serve_pool`.
    pub target: String,
    /// `persistent` or `per_query`.
    pub variant: String,
    /// The connection model, in words.
    pub connection_model: String,
    /// The server's version (`postgres --version`, `mariadbd --version`, mvcclab's).
    pub version: String,
    /// What the client did and saw.
    pub client: StormOutcome,
    /// perf stat's window, s.
    pub window_s: f64,
    /// The server's processes together (for `pgbouncer`: PostgreSQL and PgBouncer).
    pub server: PerfCounts,
    /// Per process group when there are several (`postgresql`, `pgbouncer`).
    pub by_process: BTreeMap<String, PerfCounts>,
    /// CPU time of the server's cgroup from its `cpu.stat` (`usage_usec`), s: a check of
    /// perf's task-clock by another counter.
    pub cgroup_cpu_s: f64,
    /// The engine's own count of pages read from outside its buffer pool during the
    /// window: PostgreSQL `pg_stat_database.blks_read` (8 KiB, through the OS page
    /// cache), InnoDB `Innodb_buffer_pool_reads` (16 KiB, O_DIRECT), serve's
    /// `buffer_misses` (of its design's page size). `None` where it could not be read.
    pub pool_misses_pages: Option<u64>,
    /// The client's CPU (this process, every thread): user + system, s.
    pub client_cpu_s: f64,
    /// The client's minor page faults.
    pub client_minor_faults: u64,
}

impl StormRun {
    /// task-clock / window: the seed's "CPUs utilized".
    pub fn cpus_utilised(&self) -> f64 {
        if self.window_s > 0.0 {
            self.server.task_clock_ms / 1000.0 / self.window_s
        } else {
            0.0
        }
    }
}

/// The report of `experiment connection_storm`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConnectionStormReport {
    /// `connection_storm`.
    pub experiment: String,
    /// The command line.
    pub command: String,
    /// Users, ramp-up and window, s, think time, ms, rows, buffer pool, bytes.
    pub parameters: serde_json::Value,
    /// What the counts are and what they are not.
    pub notes: Vec<String>,
    /// One run per target × variant that completed.
    pub runs: Vec<StormRun>,
    /// The runs that failed, each as `TARGET VARIANT: error` (the command then exits 1
    /// after writing the report).
    #[serde(default)]
    pub failed: Vec<String>,
}

/// A target's server(s), stopped on drop.
struct Started {
    /// Stopped first (fields drop in order): PgBouncer before its PostgreSQL.
    _bouncer: Option<PgBouncer>,
    _serve: Option<ServeChild>,
    server: Option<ManagedServer>,
    /// Where clients connect.
    addr: SocketAddr,
    protocol: Protocol,
    /// (group name, root pid) of each process tree counted.
    trees: Vec<(String, u32)>,
    model: String,
    version: String,
}

/// `mvcclab serve` as a child process, stopped by its pid (SIGTERM, then SIGKILL).
struct ServeChild {
    child: Child,
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        // SIGTERM: serve stops its listener and exits.
        let _ = stop_child(
            &mut self.child,
            signal_hook::consts::SIGTERM,
            Duration::from_secs(5),
            "serve",
        );
    }
}

fn version_of(program: &str) -> String {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Starts `mvcclab serve` for `design` with `model`, returning once it prints its address.
fn start_serve(a: &ConnectionStormArgs, model: &str) -> Result<(ServeChild, SocketAddr)> {
    let exe = std::env::current_exe().context("finding mvcclab's own executable")?;
    let mut child = Command::new(exe)
        .args(["serve", "--design", &a.design, "--connection-model", model])
        .arg("--buffer-pool")
        .arg(format!("{}", a.buffer_pool))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting mvcclab serve")?;
    let out = child.stdout.take().context("serve's standard output")?;
    let serve = ServeChild { child };
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .context("reading serve's address")?;
    let addr = line
        .split_whitespace()
        .nth(2)
        .and_then(|a| a.parse::<SocketAddr>().ok())
        .with_context(|| format!("serve printed no address: {line:?}"))?;
    Ok((serve, addr))
}

fn start_target(a: &ConnectionStormArgs, target: &str) -> Result<Started> {
    let extra = |pairs: &[(&str, String)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let max_conn = (a.users + 10).to_string();
    let managed = |kind: ServerKind, settings: Vec<(String, String)>| {
        ManagedServer::start(
            kind,
            &ManagedOptions {
                buffer_pool_bytes: a.buffer_pool,
                base_dir: a.server_dir.clone(),
                extra_settings: settings,
                ..Default::default()
            },
        )
    };
    let pg_protocol = Protocol::Postgres {
        user: "postgres".into(),
        database: "postgres".into(),
    };
    let my_protocol = Protocol::MySql {
        user: "root".into(),
        database: "mysql".into(),
    };
    let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    Ok(match target {
        "postgresql" | "pgbouncer" => {
            let s = managed(
                ServerKind::PostgreSql,
                extra(&[("max_connections", max_conn)]),
            )?;
            let pid = s.pid().context("PostgreSQL's pid")?;
            let mut trees = vec![("postgresql".to_string(), pid)];
            let (bouncer, addr, model) = if target == "pgbouncer" {
                let base = a.server_dir.clone().unwrap_or_else(std::env::temp_dir);
                let b = PgBouncer::start(
                    &base,
                    s.port(),
                    "postgres",
                    a.users + 100,
                    a.pgbouncer_pool_size,
                )?;
                trees.push(("pgbouncer".into(), b.pid().context("PgBouncer's pid")?));
                let addr = local(b.port());
                (
                    Some(b),
                    addr,
                    format!(
                        "PgBouncer, transaction pooling onto {} backends",
                        a.pgbouncer_pool_size
                    ),
                )
            } else {
                (None, local(s.port()), "process per connection".to_string())
            };
            Started {
                addr,
                protocol: pg_protocol,
                trees,
                model,
                version: version_of("/usr/lib/postgresql/15/bin/postgres"),
                server: Some(s),
                _bouncer: bouncer,
                _serve: None,
            }
        }
        "mariadb" | "mariadb_pool" => {
            let handling = if target == "mariadb" {
                "one-thread-per-connection"
            } else {
                "pool-of-threads"
            };
            let s = managed(
                ServerKind::MariaDb,
                extra(&[
                    ("max-connections", max_conn),
                    ("thread-handling", handling.to_string()),
                    // The listen queue (default 80 + max_connections / 5), as PostgreSQL's
                    // (2 × max_connections) and PgBouncer's here: up to somaxconn.
                    ("back-log", (a.users + 10).clamp(80, 4096).to_string()),
                ]),
            )?;
            let pid = s.pid().context("MariaDB's pid")?;
            Started {
                addr: local(s.port()),
                protocol: my_protocol,
                trees: vec![("mariadb".into(), pid)],
                model: format!("thread_handling={handling}"),
                version: version_of("/usr/sbin/mariadbd"),
                server: Some(s),
                _bouncer: None,
                _serve: None,
            }
        }
        "serve" | "serve_pool" => {
            let model = if target == "serve" {
                "thread-per-connection"
            } else {
                "pool"
            };
            let (child, addr) = start_serve(a, model)?;
            let pid = child.child.id();
            Started {
                addr,
                protocol: pg_protocol,
                trees: vec![("serve".into(), pid)],
                model: format!("mvcclab serve --connection-model {model}"),
                version: format!("mvcclab {} ({})", env!("CARGO_PKG_VERSION"), a.design),
                server: None,
                _bouncer: None,
                _serve: Some(child),
            }
        }
        other => {
            return Err(
                UsageError(format!("--targets {other}: one of {}", TARGETS.join(", "))).into(),
            )
        }
    })
}

/// The engine's pages read from outside its pool so far (see [`StormRun`]).
fn pool_misses(target: &str, s: &Started) -> Option<u64> {
    let port = s.server.as_ref().map(|m| m.port()).unwrap_or(s.addr.port());
    let engine = match target {
        "postgresql" | "pgbouncer" => PoolEngine::PostgreSql,
        "serve" | "serve_pool" => PoolEngine::Serve,
        _ => PoolEngine::MariaDb,
    };
    pages_read_outside_pool(engine, port)
}

fn one_run(
    a: &ConnectionStormArgs,
    target: &str,
    variant: StormVariant,
    scratch: &Path,
) -> Result<StormRun> {
    let duration_s = a.duration_s.unwrap_or(a.ramp_up_s);
    let s = start_target(a, target)?;
    status(
        a.quiet,
        &format!(
            "connection_storm: {target} {}: loading {} rows",
            variant.name(),
            a.table_size
        ),
    );
    // Load into the server itself (not through PgBouncer), then warm its caches.
    let load_addr = s
        .server
        .as_ref()
        .map(|m| SocketAddr::from(([127, 0, 0, 1], m.port())))
        .unwrap_or(s.addr);
    run_statements(
        load_addr,
        &s.protocol,
        &mut load_statements(&s.protocol, a.table_size, 1).into_iter(),
    )?;
    run_statements(
        s.addr,
        &s.protocol,
        &mut std::iter::once(STORM_QUERY.into()),
    )?;
    let stamp = format!("mvcclab-storm-{}-{}", std::process::id(), target);
    let groups: Vec<Cgroup> = s
        .trees
        .iter()
        .map(|(name, _)| Cgroup::create(&format!("{stamp}-{name}")))
        .collect::<Result<_, _>>()?;
    for (g, (_, pid)) in groups.iter().zip(&s.trees) {
        g.adopt_tree(*pid)?;
    }
    let misses_before = pool_misses(target, &s);
    let cg_before: u64 = groups.iter().map(|g| g.cpu_usage_us()).sum();
    let me = std::process::id();
    let client_before = mvcclab_servers::cpu::process_cpu(me).unwrap_or_default();
    let perf_out = scratch.join(format!("{stamp}-{}.perf", variant.name()));
    let perf = PerfStat::start(&groups.iter().collect::<Vec<_>>(), &perf_out)?;
    status(
        a.quiet,
        &format!(
            "connection_storm: {target} {}: {} users over {} s",
            variant.name(),
            a.users,
            a.ramp_up_s
        ),
    );
    let outcome = run_storm(&StormPlan {
        addr: s.addr,
        protocol: s.protocol.clone(),
        users: a.users,
        ramp_up_s: a.ramp_up_s,
        duration_s,
        variant,
        think_ms: a.think_ms,
        query: STORM_QUERY.into(),
    });
    // Let the last backends and threads finish exiting inside the window.
    std::thread::sleep(Duration::from_millis(500));
    let (counts, window_s) = perf.stop()?;
    let outcome = outcome?;
    let client_after = mvcclab_servers::cpu::process_cpu(me).unwrap_or_default();
    let cg_after: u64 = groups.iter().map(|g| g.cpu_usage_us()).sum();
    // PostgreSQL's backends report their statistics at exit or once a second.
    std::thread::sleep(Duration::from_millis(1200));
    let misses_after = pool_misses(target, &s);
    let _ = std::fs::remove_file(&perf_out);
    let mut server = PerfCounts {
        page_cache_reads: counts.values().map(|c| c.page_cache_reads).sum(),
        ..PerfCounts::default()
    };
    for c in counts.values() {
        server.task_clock_ms += c.task_clock_ms;
        server.context_switches += c.context_switches;
        server.cpu_migrations += c.cpu_migrations;
        server.page_faults += c.page_faults;
        server.minor_faults += c.minor_faults;
        server.major_faults += c.major_faults;
    }
    let by_process = if counts.len() > 1 {
        counts
            .into_iter()
            .map(|(k, v)| (k.trim_start_matches(&format!("{stamp}-")).to_string(), v))
            .collect()
    } else {
        BTreeMap::new()
    };
    let client = client_after.minus(&client_before);
    let run = StormRun {
        target: target.to_string(),
        variant: variant.name().to_string(),
        connection_model: s.model.clone(),
        version: s.version.clone(),
        client: outcome,
        window_s,
        server,
        by_process,
        cgroup_cpu_s: cg_after.saturating_sub(cg_before) as f64 / 1e6,
        pool_misses_pages: match (misses_before, misses_after) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b)),
            _ => None,
        },
        client_cpu_s: client.task_clock_us() as f64 / 1e6,
        client_minor_faults: client.minor_faults,
    };
    drop(s);
    drop(groups);
    Ok(run)
}

/// The seed's Table 3 and the rest, as Markdown.
pub fn summary_md(r: &ConnectionStormReport) -> String {
    let mut s = String::from(
        "| target | variant | queries | connections | errors | context switches | \
         page faults (minor / major) | task-clock, s | CPUs utilised | \
         OS page-cache reads | pool misses, pages | task-clock per query, µs | \
         minor faults per connection | client CPU, s |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for x in &r.runs {
        let q = x.client.queries.max(1) as f64;
        let conns = x.client.connections.max(1) as f64;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} / {} | {:.3} | {:.3} | {} | {} | {:.1} | {:.0} | {:.2} |\n",
            x.target,
            x.variant,
            x.client.queries,
            x.client.connections,
            x.client.connect_errors + x.client.query_errors,
            x.server.context_switches,
            x.server.minor_faults,
            x.server.major_faults,
            x.server.task_clock_ms / 1000.0,
            x.cpus_utilised(),
            x.server
                .page_cache_reads
                .map_or("not measured".into(), |n| n.to_string()),
            x.pool_misses_pages
                .map_or("not read".into(), |n| n.to_string()),
            x.server.task_clock_ms * 1000.0 / q,
            x.server.minor_faults as f64 / conns,
            x.client_cpu_s,
        ));
    }
    let split: Vec<&StormRun> = r.runs.iter().filter(|x| !x.by_process.is_empty()).collect();
    if !split.is_empty() {
        s.push_str(
            "\nBy process group:\n\n| target | variant | group | context switches | minor faults | task-clock, s | OS page-cache reads |\n|---|---|---|---:|---:|---:|---:|\n",
        );
        for x in split {
            for (g, c) in &x.by_process {
                s.push_str(&format!(
                    "| {} | {} | {g} | {} | {} | {:.3} | {} |\n",
                    x.target,
                    x.variant,
                    c.context_switches,
                    c.minor_faults,
                    c.task_clock_ms / 1000.0,
                    c.page_cache_reads
                        .map_or("not measured".into(), |n| n.to_string()),
                ));
            }
        }
    }
    for f in &r.failed {
        s.push_str(&format!("\n- failed: {f}"));
    }
    for n in &r.notes {
        s.push_str(&format!("\n- {n}"));
    }
    s.push('\n');
    s
}

fn check(a: &ConnectionStormArgs) -> Result<Vec<StormVariant>> {
    if a.users == 0 {
        return Err(UsageError("--users: at least 1".into()).into());
    }
    if !(a.ramp_up_s.is_finite() && a.ramp_up_s >= 0.0) {
        return Err(UsageError(format!("--ramp-up-s {}: 0 or more seconds", a.ramp_up_s)).into());
    }
    let d = a.duration_s.unwrap_or(a.ramp_up_s);
    if !(d.is_finite() && d > 0.0) {
        return Err(UsageError(format!(
            "--duration-s {d}: more than 0 seconds (give --duration-s with --ramp-up-s 0)"
        ))
        .into());
    }
    if a.table_size < 20 {
        return Err(
            UsageError("--table-size: at least 20 (the query reads 20 rows)".into()).into(),
        );
    }
    if a.format != "md" && a.format != "json" {
        return Err(UsageError(format!("--format {}: md or json", a.format)).into());
    }
    for t in &a.targets {
        if !TARGETS.contains(&t.as_str()) {
            return Err(UsageError(format!("--targets {t}: one of {}", TARGETS.join(", "))).into());
        }
    }
    // Each user holds one socket here and one in the server (PgBouncer: two).
    let need = 2 * a.users as u64 + 256;
    if let Some(n) = open_files_limit().filter(|&n| n < need) {
        return Err(UsageError(format!(
            "--users {}: the open-files limit is {n} (ulimit -n); raise it to at least {need}",
            a.users
        ))
        .into());
    }
    a.variants
        .iter()
        .map(|v| match v.as_str() {
            "persistent" => Ok(StormVariant::Persistent),
            "per_query" => Ok(StormVariant::PerQuery),
            other => Err(UsageError(format!("--variants {other}: persistent or per_query")).into()),
        })
        .collect()
}

/// `mvcclab experiment connection_storm`: every target × variant, one fresh server each.
///
/// Errors: [`UsageError`] for bad flags or a too low open-files limit; a server that does
/// not start, `perf` missing (Debian's `linux-perf`), a cgroup that cannot be made (root).
pub fn run(a: ConnectionStormArgs) -> Result<()> {
    let variants = check(&a)?;
    let scratch = a.server_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    for t in &a.targets {
        for &v in &variants {
            // A failed run is reported and the others still run: a storm at the seed's
            // size takes minutes per run.
            let r = match one_run(&a, t, v, &scratch) {
                Ok(r) => r,
                Err(e) => {
                    let msg = format!("{t} {}: {e:#}", v.name());
                    status(a.quiet, &format!("connection_storm: failed: {msg}"));
                    failed.push(msg);
                    continue;
                }
            };
            status(
                a.quiet,
                &format!(
                    "connection_storm: {t} {}: {} queries, task-clock {:.2} s, {} minor faults",
                    v.name(),
                    r.client.queries,
                    r.server.task_clock_ms / 1000.0,
                    r.server.minor_faults
                ),
            );
            runs.push(r);
        }
    }
    let report = ConnectionStormReport {
        experiment: "connection_storm".into(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        parameters: serde_json::json!({
            "users": a.users, "ramp_up_s": a.ramp_up_s,
            "duration_s": a.duration_s.unwrap_or(a.ramp_up_s), "think_ms": a.think_ms,
            "table_size": a.table_size, "buffer_pool_bytes": a.buffer_pool,
            "pgbouncer_pool_size": a.pgbouncer_pool_size, "design": a.design,
            "query": STORM_QUERY,
        }),
        notes: vec![
            "Server counts: perf stat -a -G over a cgroup v2 group holding the server's \
             processes (software events; exited backends and threads included)."
                .into(),
            "OS page-cache reads: filemap:mm_filemap_get_pages events (buffered file reads, \
             one per batch of pages); O_DIRECT reads never reach it."
                .into(),
            "Only software perf events exist on this machine (no dTLB-load-misses): a TLB \
             explanation cannot be measured here."
                .into(),
            "Client CPU: this mvcclab process (the storm client's two threads and the \
             harness), from /proc/self/stat."
                .into(),
        ],
        runs,
        failed: failed.clone(),
    };
    let json = serde_json::to_string_pretty(&report)? + "\n";
    let md = summary_md(&report);
    let text = if a.format == "json" { &json } else { &md };
    crate::export::emit(text, &a.output)?;
    if let Some(dir) = &a.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("connection_storm.json"), &json)?;
        std::fs::write(dir.join("summary.md"), &md)?;
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "connection_storm: {} run(s) failed (the report holds the others): {}",
            failed.len(),
            failed.join("; ")
        );
    }
    Ok(())
}
