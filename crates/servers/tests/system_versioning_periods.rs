//! The postgres preset's system-versioned tables with `history_storage=history_table`
//! beside a real PostgreSQL 15 with the periods extension 1.2 (issue 29: the heap design's
//! real counterpart): the same table, made system-versioned on the server by
//! `periods.add_system_time_period` and `periods.add_system_versioning` (a history table
//! `accounts_history` created `LIKE accounts`, the view `accounts_with_history` and the
//! functions `accounts__as_of`, `__between`, `__between_symmetric`, `__from_to`), and the
//! same statements on both sides. Each side records its own time after each step's commit;
//! reads as of a step use, on each side, its own time between that step and the next. For
//! every step the rows `accounts__as_of` returns must equal the preset's `AS OF` (all rows,
//! by id, by the secondary key `owner`), and the history table must hold the same rows;
//! `__between`, `__between_symmetric` and `__from_to` between every two steps must equal
//! the preset's `BETWEEN` / `FROM ... TO`, and `accounts_with_history` its `ALL`.
//!
//! The steps include what tells the periods extension from MariaDB: an update and a
//! delete of rows the same transaction inserted and two updates of one row in one
//! transaction (periods.c `write_history` writes no history row for a row whose
//! `system_time_start` is the transaction's start), and an update at read committed of a
//! row a later-started transaction wrote ("invalid row version", SQLSTATE 2201H, on both).
//!
//! The test starts its own managed PostgreSQL 15 (127.0.0.1, a free port, stopped by its
//! pid on drop). It needs Debian's `postgresql-15` and `postgresql-15-periods`: when the
//! extension is missing it installs it with apt-get as root, and otherwise fails naming the
//! command (README, Set-up).

mod common;
use common::*;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{system_time_now_us, Assign, SystemTime};
use mvcclab_engine::design::{DesignConfig, HistoryStorage, SystemVersioning};
use mvcclab_engine::Error;
use mvcclab_servers::managed::{ManagedOptions, ManagedServer};
use mvcclab_servers::ServerKind;
use postgres::Client;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The extension's control file in Debian's postgresql-15-periods.
const PERIODS_CONTROL: &str = "/usr/share/postgresql/15/extension/periods.control";

/// Installs postgresql-15-periods with apt-get when it is missing and the test runs as
/// root; fails naming the command otherwise (never passes without the extension).
fn ensure_periods_installed() {
    if Path::new(PERIODS_CONTROL).exists() {
        return;
    }
    let uid = Command::new("id").arg("-u").output().expect("run id -u");
    let root = String::from_utf8_lossy(&uid.stdout).trim() == "0";
    assert!(
        root,
        "the periods extension is not installed ({PERIODS_CONTROL} is missing): run \
         `apt-get install -y postgresql-15-periods` (README, Set-up)"
    );
    let ok = Command::new("sh")
        .args([
            "-c",
            "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-periods",
        ])
        .status()
        .expect("run apt-get");
    assert!(ok.success(), "apt-get install postgresql-15-periods failed");
    assert!(Path::new(PERIODS_CONTROL).exists(), "{PERIODS_CONTROL}");
}

/// A server error with PostgreSQL's message and SQLSTATE.
fn db_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{} ({})", d.message(), d.code().code()),
        None => e.to_string(),
    }
}

/// The declared columns and keys of `accounts` in PostgreSQL's DDL, then the period and
/// system versioning (periods--1.2.sql).
const DDL: &[&str] = &[
    "CREATE TABLE accounts (id integer PRIMARY KEY, balance bigint NOT NULL, \
     owner varchar(32) NOT NULL, code integer NOT NULL, CONSTRAINT accounts_code UNIQUE (code))",
    "CREATE INDEX accounts_owner ON accounts (owner)",
    "SELECT periods.add_system_time_period('accounts')",
    "SELECT periods.add_system_versioning('accounts')",
];

/// The declared columns, as the preset returns them.
const COLS: &str = "id, balance, owner::text, code";

struct Real {
    conn: Client,
}

impl Real {
    fn step(&mut self, ops: &[Op]) {
        self.conn.batch_execute("BEGIN").unwrap();
        for op in ops {
            let sql = op.sql();
            self.conn
                .batch_execute(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {}", db_message(&e)));
        }
        self.conn.batch_execute("COMMIT").unwrap();
    }

    /// The server's own time now (`clock_timestamp()`, as text for a timestamptz
    /// literal); then a pause of 2 ms, so that the next transaction starts later.
    fn now(&mut self) -> String {
        let t: String = self
            .conn
            .query_one("SELECT clock_timestamp()::text", &[])
            .unwrap()
            .get(0);
        self.conn.batch_execute("SELECT pg_sleep(0.002)").unwrap();
        t
    }

    /// The declared columns of `from` (a relation or a function call) with `filter`,
    /// ordered by id and the period's end.
    fn rows(&mut self, from: &str, filter: &str) -> Vec<R> {
        let sql = format!("SELECT {COLS} FROM {from} {filter} ORDER BY id, system_time_end");
        self.conn
            .query(&sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {}", db_message(&e)))
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }
}

/// The periods steps: the steps (inserts, updates of a non-indexed and an indexed
/// column, a delete, the deleted key inserted again), then one transaction that inserts
/// rows 6 and 7, updates 6, deletes 7 and updates row 1 twice.
fn periods_steps() -> Vec<Vec<Op>> {
    use Op::*;
    let mut s = steps();
    s.push(vec![
        Insert(6, 600, "even", 6),
        AddBalance(6, 1),
        Insert(7, 700, "odd", 7),
        Delete(7),
        AddBalance(1, 5),
        AddBalance(1, 5),
    ]);
    s
}

fn design() -> DesignConfig {
    let mut d = DesignConfig::postgres();
    d.system_versioning = SystemVersioning::Timestamp;
    d.history_storage = HistoryStorage::HistoryTable;
    d
}

/// A managed PostgreSQL 15 on a free port with the periods extension created in its
/// `postgres` database (CASCADE: it requires btree_gist, from postgresql-15), and a
/// connection to it.
fn start_postgresql() -> (ManagedServer, Client, postgres::Config) {
    ensure_periods_installed();
    let server = ManagedServer::start(ServerKind::PostgreSql, &ManagedOptions::default())
        .unwrap_or_else(|e| panic!("starting PostgreSQL 15 (apt-get install postgresql-15): {e}"));
    let mut config = postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(server.port())
        .user("postgres")
        .dbname("postgres");
    let mut conn = mvcclab_servers::postgresql::connect(&config, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("connect to the managed PostgreSQL: {e}"));
    conn.batch_execute("CREATE EXTENSION periods CASCADE")
        .unwrap_or_else(|e| {
            panic!(
                "CREATE EXTENSION periods (apt-get install -y postgresql-15-periods): {}",
                db_message(&e)
            )
        });
    (server, conn, config)
}

#[test]
fn periods_history_matches_a_real_postgresql_step_by_step() {
    let (_server, conn, config) = start_postgresql();
    let mut real = Real { conn };
    for sql in DDL {
        real.conn
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {}", db_message(&e)));
    }
    let version: String = real
        .conn
        .query_one(
            "SELECT extversion FROM pg_extension WHERE extname = 'periods'",
            &[],
        )
        .unwrap()
        .get(0);
    eprintln!("periods {version}");
    // The history table has no index (LIKE without INCLUDING), as the preset's.
    let hist_indexes: i64 = real
        .conn
        .query_one(
            "SELECT count(*) FROM pg_index WHERE indrelid = 'accounts_history'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(hist_indexes, 0, "indexes of accounts_history on the server");
    let emb = Emb::open(design());
    let hd = emb
        .db
        .table_def(emb.db.table_id("accounts_history").unwrap())
        .unwrap();
    assert!(hd.primary_key.is_empty() && hd.indexes.is_empty(), "{hd:?}");

    let mut emb = emb;
    let mut real_times = vec![real.now()];
    let mut emb_times = vec![system_time_now_us()];
    for (i, ops) in periods_steps().iter().enumerate() {
        real.step(ops);
        emb.step(ops);
        real_times.push(real.now());
        emb_times.push(system_time_now_us());
        // A table without key or index: compared as sets of rows.
        let mut real_hist = real.rows("accounts_history", "");
        let mut emb_hist = emb.relation_rows("accounts_history");
        real_hist.sort();
        emb_hist.sort();
        eprintln!(
            "after step {}: history rows {} (server), {} (preset)",
            i + 1,
            real_hist.len(),
            emb_hist.len()
        );
        assert_eq!(emb_hist, real_hist, "history table after step {}", i + 1);
    }
    // The last step inserted and changed rows 6 and 7 and updated row 1 twice: one history
    // row (row 1 as the step found it), as on the server.
    let n = real_times.len();
    for (i, (rt, et)) in real_times.iter().zip(&emb_times).enumerate() {
        let from = format!("accounts__as_of('{rt}')");
        let ew = SystemTime::AsOf(*et);
        assert_eq!(
            emb.scan(ew),
            real.rows(&from, ""),
            "all rows as of step {i}"
        );
        for id in 0..=7 {
            assert_eq!(
                emb.by_id(id, ew),
                real.rows(&from, &format!("WHERE id = {id}")),
                "id {id} as of step {i}"
            );
        }
        for owner in ["odd", "even"] {
            let mut want = real.rows(&from, &format!("WHERE owner = '{owner}'"));
            want.sort();
            assert_eq!(
                emb.by_owner(owner, ew),
                want,
                "owner {owner} as of step {i}"
            );
        }
    }
    for a in 0..n {
        for b in a + 1..n {
            let (ra, rb) = (&real_times[a], &real_times[b]);
            let (ea, eb) = (emb_times[a], emb_times[b]);
            assert_eq!(
                emb.scan(SystemTime::Between(ea, eb)),
                real.rows(&format!("accounts__between('{ra}', '{rb}')"), ""),
                "BETWEEN steps {a} and {b}"
            );
            assert_eq!(
                emb.scan(SystemTime::Between(ea, eb)),
                real.rows(&format!("accounts__between_symmetric('{rb}', '{ra}')"), ""),
                "BETWEEN SYMMETRIC steps {b} and {a}"
            );
            assert_eq!(
                emb.scan(SystemTime::FromTo(ea, eb)),
                real.rows(&format!("accounts__from_to('{ra}', '{rb}')"), ""),
                "FROM steps {a} TO {b}"
            );
        }
    }
    assert_eq!(
        emb.scan(SystemTime::All),
        real.rows("accounts_with_history", ""),
        "ALL (accounts_with_history)"
    );

    // Read committed: a transaction that began first updates a row that one begun later
    // changed and committed. periods: "invalid row version" (2201H) on both sides.
    let mut early = Client::configure()
        .host("127.0.0.1")
        .port(config.get_ports()[0])
        .user("postgres")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .unwrap();
    early
        .batch_execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        .unwrap();
    real.step(&[Op::AddBalance(3, 1)]);
    let e = early
        .batch_execute(&Op::AddBalance(3, 1).sql())
        .expect_err("the server takes the update");
    let real_state = e.code().map(|c| c.code().to_string());
    early.batch_execute("ROLLBACK").unwrap();

    let mut tx_early = emb.db.begin();
    let mut tx_late = emb.db.begin();
    assert!(tx_late
        .update(emb.t, &[Value::Integer(3)], &[Assign::Add(1, 1)])
        .unwrap());
    tx_late.commit().unwrap();
    let emb_state = match tx_early.update(emb.t, &[Value::Integer(3)], &[Assign::Add(1, 1)]) {
        Err(Error::Txn(e)) => Some(e.sqlstate().to_string()),
        other => panic!("the preset took the update: {other:?}"),
    };
    assert_eq!(real_state.as_deref(), Some("2201H"), "server: {e}");
    assert_eq!(emb_state, real_state, "invalid row version on both sides");
}
