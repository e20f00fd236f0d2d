//! `mvcclab serve` driven by the real clients: psql, Debian's sysbench with its pgsql
//! driver (prepare, a short run, cleanup), pgbench (`-i -s 1`, `-T 5`), and a malformed
//! protocol (random bytes, truncated messages, unknown statements) that leaves the server
//! serving its other connections (under the pool-of-threads model; the others run thread
//! per connection).
//!
//! Each test starts its own server on 127.0.0.1 and a free port, and stops it by the pid it
//! started (SIGKILL, also when the test fails).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `mvcclab serve` child process, killed by its pid when dropped.
struct ServeProcess {
    child: Child,
    port: u16,
}

impl ServeProcess {
    fn start(args: &[&str]) -> ServeProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting mvcclab serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("reading the listening line");
        let port = line
            .split_whitespace()
            .nth(2)
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok());
        let port = match port {
            Some(p) => p,
            None => {
                let _ = child.kill();
                panic!("no port in serve's first line: {line:?}");
            }
        };
        ServeProcess { child, port }
    }

    /// Whether the process is still running.
    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        // Stop the server we started, by its pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn need(tool: &str, package: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{tool} is missing: apt-get install -y {package} (README, Set-up)"
    );
}

fn psql(port: u16, sql: &str) -> (bool, String, String) {
    let out = Command::new("psql")
        .args([
            "-X",
            "-A",
            "-t",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "mvcclab",
            "-d",
            "mvcclab",
            "-c",
            sql,
        ])
        .env("PGSSLMODE", "disable")
        .env("PGGSSENCMODE", "disable")
        .output()
        .expect("running psql");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

fn sysbench(port: u16, cmd: &str, extra: &[&str]) -> String {
    let port = format!("--pgsql-port={port}");
    let mut args = vec![
        "oltp_read_write",
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        port.as_str(),
        "--pgsql-user=mvcclab",
        "--pgsql-db=mvcclab",
        "--tables=1",
        "--table-size=2000",
    ];
    args.extend_from_slice(extra);
    args.push(cmd);
    client("sysbench", &args)
}

/// Runs a client tool without TLS or GSS; returns its output, failing the test (with the
/// output) when it fails.
fn client(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .env("PGSSLMODE", "disable")
        .env("PGGSSENCMODE", "disable")
        .output()
        .unwrap_or_else(|e| panic!("running {tool}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{tool} {args:?} failed:\n{text}");
    text
}

/// The number after `label` in sysbench's report (`transactions:  1234  (411.2 per sec.)`).
fn figure(text: &str, label: &str) -> f64 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' in:\n{text}"))
}

#[test]
fn psql_and_sysbench_oltp_read_write_prepare_run_cleanup() {
    need("psql", "postgresql-client-15");
    need("sysbench", "sysbench");
    let mut server = ServeProcess::start(&["--design", "postgres"]);
    let port = server.port;

    let (ok, out, err) = psql(port, "SHOW mvcclab.design");
    assert!(ok, "psql SHOW failed: {err}");
    assert_eq!(out, "postgres");

    sysbench(port, "prepare", &[]);
    let (ok, out, err) = psql(port, "SELECT count(*) FROM sbtest1");
    assert!(ok, "psql count(*) failed: {err}");
    assert_eq!(out, "2000", "rows after sysbench prepare");

    let run = sysbench(port, "run", &["--time=3", "--threads=2"]);
    let txns = figure(&run, "transactions:");
    assert!(txns > 0.0, "no transactions in:\n{run}");
    // sysbench counts the SQLSTATE 40P01/40001/23505 errors it retries as "ignored
    // errors"; any other error would have stopped it (a failed run).
    let (ok, out, _) = psql(port, "SELECT count(*) FROM sbtest1");
    assert!(ok);
    // oltp_read_write deletes and re-inserts the same ids: the count is unchanged.
    assert_eq!(out, "2000", "rows after the run");

    let (ok, out, err) = psql(port, "SELECT * FROM mvcclab_stat_io");
    assert!(ok, "mvcclab_stat_io: {err}");
    assert!(out.contains("point_select"), "stat_io rows: {out}");

    // The server's own CPU use (getrusage: every thread, exited backends included).
    let (ok, out, err) = psql(port, "SELECT * FROM mvcclab_stat_cpu");
    assert!(ok, "mvcclab_stat_cpu: {err}");
    let cpu: Vec<u64> = out.split('|').map(|v| v.parse().unwrap()).collect();
    assert_eq!(cpu.len(), 6, "{out}");
    assert!(cpu[0] + cpu[1] > 0 && cpu[2] > 0 && cpu[4] > 0, "{out}");

    let (ok, _, err) = psql(port, "SELECT c FROM sbtest1 WHERE pad LIKE 'x%'");
    assert!(
        !ok && err.contains("not supported"),
        "unsupported shape: {err}"
    );

    sysbench(port, "cleanup", &[]);
    let (ok, _, err) = psql(port, "SELECT count(*) FROM sbtest1");
    assert!(
        !ok && err.contains("does not exist"),
        "after cleanup: {err}"
    );
    assert!(server.alive(), "the server died");
}

/// A startup message for user and database `mvcclab` (protocol 3.0).
fn startup() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes());
    for s in ["user", "mvcclab", "database", "mvcclab"] {
        body.extend_from_slice(s.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    m.extend_from_slice(&body);
    m
}

fn query_msg(sql: &str) -> Vec<u8> {
    let mut m = vec![b'Q'];
    m.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
    m.extend_from_slice(sql.as_bytes());
    m.push(0);
    m
}

/// Reads backend messages until ReadyForQuery; returns the SQLSTATEs of ErrorResponses.
fn read_until_ready(s: &mut TcpStream) -> std::io::Result<Vec<String>> {
    let mut codes = Vec::new();
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len.saturating_sub(4)];
        s.read_exact(&mut body)?;
        match head[0] {
            b'Z' => return Ok(codes),
            b'E' => {
                for f in body.split(|b| *b == 0) {
                    if let Some(code) = f.strip_prefix(b"C") {
                        codes.push(String::from_utf8_lossy(code).into_owned());
                    }
                }
            }
            _ => {}
        }
    }
}

fn connect(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).ok();
    s.write_all(&startup()).expect("startup");
    read_until_ready(&mut s).expect("startup answered");
    s
}

#[test]
fn malformed_protocol_leaves_other_connections_served() {
    need("psql", "postgresql-client-15");
    let mut server = ServeProcess::start(&["--design", "innodb", "--connection-model", "pool:2"]);
    let port = server.port;
    let mut good = connect(port);
    good.write_all(&query_msg(
        "CREATE TABLE t (id INTEGER NOT NULL, v INTEGER, PRIMARY KEY (id)); \
         INSERT INTO t (id, v) VALUES (1, 10), (2, 20)",
    ))
    .unwrap();
    assert_eq!(read_until_ready(&mut good).unwrap(), Vec::<String>::new());

    // Unknown and unsupported statements: an error naming them, the connection stays.
    for (sql, code) in [
        ("FROBNICATE ALL THE THINGS", "0A000"),
        ("SELECT v FROM t WHERE v > 3", "0A000"),
        ("CREATE VIEW w AS SELECT * FROM t", "0A000"),
        ("SELECT * FROM nowhere", "42P01"),
        ("INSERT INTO t (id, v) VALUES (1, 5)", "23505"),
    ] {
        good.write_all(&query_msg(sql)).unwrap();
        assert_eq!(
            read_until_ready(&mut good).unwrap(),
            vec![code.to_string()],
            "{sql}"
        );
    }

    // Random bytes, before and after startup, and truncated messages, on other sockets.
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for i in 0..40 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_millis(200))).ok();
        if i % 2 == 1 {
            s.write_all(&startup()).unwrap();
            let _ = read_until_ready(&mut s);
        }
        let n = (next() % 300) as usize + 1;
        let bytes: Vec<u8> = (0..n).map(|_| next() as u8).collect();
        let _ = s.write_all(&bytes);
        let mut sink = [0u8; 1024];
        let _ = s.read(&mut sink);
    }
    for cut in [1usize, 3, 6, 9] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.write_all(&startup()).unwrap();
        let _ = read_until_ready(&mut s);
        let q = query_msg("SELECT v FROM t WHERE id = 1");
        let _ = s.write_all(&q[..cut.min(q.len())]);
        drop(s); // truncated: the client goes away mid-message
    }
    // A message whose length field is absurd.
    {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.write_all(&startup()).unwrap();
        let _ = read_until_ready(&mut s);
        let _ = s.write_all(&[b'Q', 0xff, 0xff, 0xff, 0xf0, b'x']);
    }

    assert!(server.alive(), "the server died");
    good.write_all(&query_msg("SELECT v FROM t WHERE id = 2"))
        .unwrap();
    assert_eq!(read_until_ready(&mut good).unwrap(), Vec::<String>::new());
    let (ok, out, err) = psql(port, "SELECT count(*) FROM t");
    assert!(ok, "a new client after the garbage: {err}");
    assert_eq!(out, "2");
}

fn pgbench(port: u16, args: &[&str]) -> String {
    let port = port.to_string();
    let mut all = vec!["-h", "127.0.0.1", "-p", &port, "-U", "mvcclab"];
    all.extend_from_slice(args);
    all.push("mvcclab");
    client("pgbench", &all)
}

#[test]
fn pgbench_init_and_tpcb_run() {
    need("psql", "postgresql-client-15");
    need("pgbench", "postgresql-client-15");
    let mut server = ServeProcess::start(&["--design", "innodb"]);
    let port = server.port;
    // DROP TABLE IF EXISTS of four tables, CREATE TABLE … WITH (fillfactor=100), TRUNCATE,
    // COPY … FROM STDIN (with (freeze on)), VACUUM ANALYZE, ALTER TABLE … ADD PRIMARY KEY.
    pgbench(port, &["-i", "-s", "1"]);
    let (ok, out, err) = psql(port, "SELECT count(*) FROM pgbench_accounts");
    assert!(ok, "{err}");
    assert_eq!(out, "100000");
    // select count(*) from pgbench_branches, the pg_catalog partition probe (an error
    // pgbench tolerates), VACUUM, TRUNCATE pgbench_history, then the TPC-B script.
    let run = pgbench(port, &["-T", "5"]);
    let done = figure(&run, "number of transactions actually processed:");
    assert!(done > 0.0, "no transactions:\n{run}");
    assert!(run.contains("number of failed transactions: 0 "), "{run}");
    // TPC-B's invariant: every delta went to one account, teller and branch, and history.
    let sums: Vec<String> = [
        "SELECT sum(abalance) FROM pgbench_accounts",
        "SELECT sum(tbalance) FROM pgbench_tellers",
        "SELECT sum(bbalance) FROM pgbench_branches",
        "SELECT sum(delta) FROM pgbench_history",
    ]
    .iter()
    .map(|q| {
        let (ok, out, err) = psql(port, q);
        assert!(ok, "{q}: {err}");
        out
    })
    .collect();
    assert!(
        sums.iter().all(|s| s == &sums[0]),
        "balances differ: {sums:?}"
    );
    let (ok, out, _) = psql(port, "SELECT count(*) FROM pgbench_history");
    assert!(ok);
    assert_eq!(
        out.parse::<f64>().ok(),
        Some(done),
        "history rows = transactions"
    );
    assert!(server.alive(), "the server died");
}
