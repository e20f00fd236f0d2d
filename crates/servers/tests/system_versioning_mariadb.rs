//! The innodb preset's system-versioned tables beside a real MariaDB 10.11 (issue 29,
//! "Real MariaDB beside it"): the same table `WITH SYSTEM VERSIONING` — by timestamp, by
//! transaction id, and by timestamp with a history partition — and the same statements on
//! both; each side records its own time after each step's commit, and `FOR SYSTEM_TIME AS
//! OF` reads on each side use its own time between two steps. The rows each side returns
//! for every step must be equal, for full, point and secondary-index reads, and `ALL`.
//! With three history partitions rotated by `LIMIT 2`, each partition's rows must be equal
//! after every step, and the reads equal after `DROP PARTITION` of the oldest one.
//!
//! A trap of the real server, found here (issue 29): on a MariaDB 10.11.19 started afresh,
//! `FOR SYSTEM_TIME AS OF TIMESTAMP t` on a table versioned by transaction id returns the
//! *current* rows, whatever `t`, until some statement has read `mysql.transaction_registry`
//! as a table; from then on (server-wide, every session) it returns the rows as of `t`.
//! The wrong rows are exactly those the row visibility functions give when their registry
//! look-up fails: sql/item_vers.cc `Item_func_trt_trx_sees::val_int` then returns its
//! default `accept_eq` — `TRT_TRX_SEES_EQ(t0, row_start)` true for every row,
//! `TRT_TRX_SEES(row_end, t0)` false for every history row and true only for `row_end` =
//! max (sql/table.cc `TR_table::query_sees`, `TR_table::query(ulonglong)`). Measured by
//! hand on a scratch server: restart, AS OF → current rows; `SELECT COUNT(*) FROM
//! mysql.transaction_registry`; the same AS OF → the right rows. The comparison therefore
//! reads the registry once before its AS OF reads ([`Real::read_registry`]); the preset
//! needs no such step.
//!
//! The test starts its own managed MariaDB (127.0.0.1, a free port, stopped by its pid on
//! drop). It needs MariaDB installed (`apt-get install mariadb-server`, README Set-up).

use mvcclab_engine::db::{system_time_now_us, SystemTime, TableId};
use mvcclab_engine::design::{DesignConfig, HistoryStorage, SystemVersioning};
use mvcclab_servers::managed::{ManagedOptions, ManagedServer};
use mvcclab_servers::ServerKind;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use std::time::Duration;

mod common;
use common::*;

struct Real {
    conn: Conn,
}

impl Real {
    fn step(&mut self, ops: &[Op]) {
        self.conn.query_drop("START TRANSACTION").unwrap();
        for op in ops {
            let sql = op.sql();
            self.conn
                .query_drop(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        self.conn.query_drop("COMMIT").unwrap();
    }

    /// The server's own time now, as text for `TIMESTAMP'...'`; then a pause of a
    /// millisecond, so that the next statement's time is later.
    fn now(&mut self) -> String {
        let t: String = self
            .conn
            .query_first("SELECT CAST(NOW(6) AS CHAR)")
            .unwrap()
            .unwrap();
        self.conn.query_drop("DO SLEEP(0.002)").unwrap();
        t
    }

    /// `mysql.transaction_registry` as (transaction_id, commit_id) rows in commit order,
    /// read as a table: on a freshly started server this is what makes later `AS OF
    /// TIMESTAMP` reads of a trx_id-versioned table return rows as of that time instead of
    /// the current ones (see the module doc).
    fn read_registry(&mut self) -> Vec<(u64, u64)> {
        self.conn
            .query("SELECT transaction_id, commit_id FROM mysql.transaction_registry ORDER BY commit_id")
            .unwrap()
    }

    fn rows(&mut self, when: &str, filter: &str) -> Vec<R> {
        let sql = format!(
            "SELECT id, balance, owner, code FROM accounts FOR SYSTEM_TIME {when} {filter} ORDER BY id, row_end"
        );
        self.conn
            .query(&sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
}

impl Emb {
    /// The number of rows of the preset's `transaction_registry`.
    fn registry_rows(&self) -> usize {
        self.registry().len()
    }

    /// The preset's `transaction_registry` transaction ids in commit order.
    fn registry_transactions(&self) -> Vec<i64> {
        self.registry().into_iter().map(|(t, _)| t).collect()
    }

    /// The preset's `transaction_registry` as (transaction_id, commit_id) in commit order.
    fn registry(&self) -> Vec<(i64, i64)> {
        mvcclab_engine::testkit::transaction_registry_rows(&self.db).unwrap()
    }
}

/// The declared columns and keys of `accounts` in MariaDB's DDL.
const COLS: &str =
    "id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, owner VARCHAR(32) NOT NULL, \
                    code INT NOT NULL, KEY accounts_owner (owner), UNIQUE KEY accounts_code (code)";

/// The rows of MariaDB's history partition `p`, by id then row_end. A history partition
/// named alone returns its rows; FOR SYSTEM_TIME is refused there
/// (ER_VERS_QUERY_IN_PARTITION).
fn real_part(real: &mut Real, p: &str) -> Vec<R> {
    real.conn
        .query(format!(
            "SELECT id, balance, owner, code FROM accounts PARTITION ({p}) ORDER BY id, row_end"
        ))
        .unwrap()
}

/// The rows of the preset's history partition `p` (relation `accounts#p`), in key order.
fn emb_part(emb: &Emb, p: &str) -> Vec<R> {
    emb.relation_rows(&format!("accounts#{p}"))
}

/// MariaDB's DDL of the variant: by timestamp (implicit row_start/row_end), by trx id
/// (BIGINT UNSIGNED period columns), by timestamp with history and current partitions.
/// Rows in MariaDB's history partitions p0, p1 and p2.
fn history_part_sizes(real: &mut Real) -> Vec<usize> {
    ["p0", "p1", "p2"]
        .iter()
        .map(|p| real_part(real, p).len())
        .collect()
}

/// `ALTER TABLE accounts DROP PARTITION part` on MariaDB and `drop_partition` on the
/// preset, both expected to be refused: their error messages (MariaDB's, the preset's).
fn drop_refused_on_both(real: &mut Real, emb: &Emb, t: TableId, part: &str) -> (String, String) {
    let real_e = real
        .conn
        .query_drop(format!("ALTER TABLE accounts DROP PARTITION {part}"))
        .unwrap_err()
        .to_string();
    let emb_e = emb.db.drop_partition(t, part).unwrap_err().to_string();
    (real_e, emb_e)
}

/// After `DROP PARTITION p0` and one more step: partitions p1 and p2, and `ALL`, equal on
/// both sides.
fn assert_partitions_and_all_after_the_drop(emb: &Emb, real: &mut Real) {
    for p in ["p1", "p2"] {
        assert_eq!(
            emb_part(emb, p),
            real_part(real, p),
            "partition {p} after the drop"
        );
    }
    assert_eq!(
        emb.scan(SystemTime::All),
        real.rows("ALL", ""),
        "ALL at the end"
    );
}

fn mariadb_ddl(variant: &str) -> String {
    match variant {
        "timestamp" => format!("CREATE TABLE accounts ({COLS}) ENGINE=InnoDB WITH SYSTEM VERSIONING"),
        "trx_id" => format!(
            "CREATE TABLE accounts ({COLS}, row_start BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, \
             row_end BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE, \
             PERIOD FOR SYSTEM_TIME(row_start, row_end)) ENGINE=InnoDB WITH SYSTEM VERSIONING"
        ),
        "partition" => format!(
            "CREATE TABLE accounts ({COLS}) ENGINE=InnoDB WITH SYSTEM VERSIONING \
             PARTITION BY SYSTEM_TIME (PARTITION p_hist HISTORY, PARTITION p_cur CURRENT)"
        ),
        _ => unreachable!(),
    }
}

fn design(variant: &str) -> DesignConfig {
    let mut d = DesignConfig::innodb();
    match variant {
        "timestamp" => d.system_versioning = SystemVersioning::Timestamp,
        "trx_id" => d.system_versioning = SystemVersioning::TrxId,
        "partition" => {
            d.system_versioning = SystemVersioning::Timestamp;
            d.history_storage = HistoryStorage::Partition;
        }
        _ => unreachable!(),
    }
    d
}

/// A managed MariaDB on a free port, a root connection to it (retried while it starts)
/// and that connection's options, for more connections.
fn start_mariadb() -> (ManagedServer, Conn, OptsBuilder) {
    let server = match ManagedServer::start(ServerKind::MariaDb, &ManagedOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("starting MariaDB (apt-get install mariadb-server): {e}"),
    };
    let opts = OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(server.port())
        .user(Some("root"))
        .prefer_socket(false);
    let conn = mvcclab_servers::mariadb::connect(&opts.clone().into(), Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("connect to the managed MariaDB: {e}"));
    (server, conn, opts)
}

#[test]
fn as_of_reads_match_a_real_mariadb_step_by_step() {
    let (mut server, mut admin, opts) = start_mariadb();
    for variant in ["trx_id", "timestamp", "partition"] {
        let db_name = format!("sv_{variant}");
        admin
            .query_drop(format!("CREATE DATABASE {db_name}"))
            .unwrap();
        let mut real = Real {
            conn: Conn::new(OptsBuilder::from_opts(opts.clone()).db_name(Some(db_name))).unwrap(),
        };
        real.conn.query_drop(mariadb_ddl(variant)).unwrap();
        let mut emb = Emb::open(design(variant));

        // Each side's own time after each step (and before the first).
        let mut real_times = vec![real.now()];
        let mut emb_times = vec![system_time_now_us()];
        for ops in steps() {
            real.step(&ops);
            emb.step(&ops);
            real_times.push(real.now());
            emb_times.push(system_time_now_us());
        }
        if variant == "trx_id" {
            // One registry row per step on each side, in the steps' order (sql/handler.cc
            // `TR_table::update` at each commit); read before any AS OF (module doc).
            let real_reg = real.read_registry();
            assert_eq!(
                real_reg.len(),
                steps().len(),
                "trx_id: registry rows on MariaDB"
            );
            assert_eq!(
                emb.registry_rows(),
                steps().len(),
                "trx_id: registry rows on the preset"
            );
            // commit_id is a value of the transaction id sequence taken at the commit
            // (ha_innodb.cc `innodb_prepare_commit_versioned`): above the transaction's
            // id, below the next transaction's, on both sides.
            let emb_reg: Vec<(u64, u64)> = emb
                .registry()
                .into_iter()
                .map(|(t, c)| (t as u64, c as u64))
                .collect();
            for (side, reg) in [("MariaDB", &real_reg), ("preset", &emb_reg)] {
                for (i, w) in reg.windows(2).enumerate() {
                    let ((t0, c0), (t1, _)) = (w[0], w[1]);
                    assert!(
                        t0 < c0 && c0 < t1,
                        "trx_id on {side}: registry rows {i} and {}: {reg:?}",
                        i + 1
                    );
                }
                eprintln!("trx_id on {side}: (transaction_id, commit_id) {reg:?}");
            }
        }
        for (i, (rt, et)) in real_times.iter().zip(&emb_times).enumerate() {
            let rw = format!("AS OF TIMESTAMP'{rt}'");
            let ew = SystemTime::AsOf(*et);
            assert_eq!(
                emb.scan(ew),
                real.rows(&rw, ""),
                "{variant}: all rows as of step {i}"
            );
            for id in 0..=6 {
                assert_eq!(
                    emb.by_id(id, ew),
                    real.rows(&rw, &format!("WHERE id = {id}")),
                    "{variant}: id {id} as of step {i}"
                );
            }
            for owner in ["odd", "even"] {
                let mut want = real.rows(&rw, &format!("WHERE owner = '{owner}'"));
                want.sort();
                assert_eq!(
                    emb.by_owner(owner, ew),
                    want,
                    "{variant}: owner {owner} as of step {i}"
                );
            }
        }
        if variant == "trx_id" {
            // AS OF TRANSACTION n for each step's transaction, by its id on each side
            // (the registry's transaction_id in commit order).
            let real_trx: Vec<u64> = real.read_registry().iter().map(|r| r.0).collect();
            let emb_trx = emb.registry_transactions();
            for (i, (rt, et)) in real_trx.iter().zip(&emb_trx).enumerate() {
                let ew = SystemTime::AsOfTransaction(*et);
                let rw = format!("AS OF TRANSACTION {rt}");
                assert_eq!(
                    emb.scan(ew),
                    real.rows(&rw, ""),
                    "trx_id: AS OF TRANSACTION of step {}",
                    i + 1
                );
                assert_eq!(
                    emb.by_owner("even", ew),
                    {
                        let mut v = real.rows(&rw, "WHERE owner = 'even'");
                        v.sort();
                        v
                    },
                    "trx_id: owner even AS OF TRANSACTION of step {}",
                    i + 1
                );
            }
        }
        // ALL, and BETWEEN the first and the last step.
        assert_eq!(
            emb.scan(SystemTime::All),
            real.rows("ALL", ""),
            "{variant}: ALL"
        );
        let (r1, r4) = (&real_times[1], &real_times[4]);
        assert_eq!(
            emb.by_id(2, SystemTime::Between(emb_times[1], emb_times[4])),
            real.rows(
                &format!("BETWEEN TIMESTAMP'{r1}' AND TIMESTAMP'{r4}'"),
                "WHERE id = 2"
            ),
            "{variant}: BETWEEN"
        );
    }
    server.stop().expect("stop the managed MariaDB");
}

/// `PARTITION BY SYSTEM_TIME LIMIT 2` with three history partitions on both sides: after
/// each step every history partition holds the same rows on each side (rotation by
/// LIMIT, sql/partition_info.cc `vers_set_hist_part`); `ALTER TABLE ... DROP PARTITION pn`
/// (the current one) is refused by both; after `DROP PARTITION p0`, AS OF every step, ALL
/// and a read by the secondary key return the same rows on each side, and history goes on
/// into the remaining partitions alike.
#[test]
fn history_partitions_by_limit_and_drop_partition_match_a_real_mariadb() {
    let (mut server, mut admin, opts) = start_mariadb();
    admin.query_drop("CREATE DATABASE sv_parts").unwrap();
    let mut real = Real {
        conn: Conn::new(OptsBuilder::from_opts(opts.clone()).db_name(Some("sv_parts"))).unwrap(),
    };
    real.conn
        .query_drop(format!(
            "CREATE TABLE accounts ({COLS}) ENGINE=InnoDB WITH SYSTEM VERSIONING \
             PARTITION BY SYSTEM_TIME LIMIT 2 (PARTITION p0 HISTORY, PARTITION p1 HISTORY, \
             PARTITION p2 HISTORY, PARTITION pn CURRENT)"
        ))
        .unwrap();
    let mut d = design("partition");
    d.history_partitions = 3;
    d.history_partition_limit = 2;
    let mut emb = Emb::open(d);
    let t = emb.t;

    use Op::*;
    let mut all_steps = steps();
    all_steps.push(vec![AddBalance(1, 5), AddBalance(5, 5)]);
    all_steps.push(vec![Delete(1)]);
    let mut real_times = vec![real.now()];
    let mut emb_times = vec![system_time_now_us()];
    for (i, ops) in all_steps.iter().enumerate() {
        real.step(ops);
        emb.step(ops);
        real_times.push(real.now());
        emb_times.push(system_time_now_us());
        for p in ["p0", "p1", "p2"] {
            assert_eq!(
                emb_part(&emb, p),
                real_part(&mut real, p),
                "partition {p} after step {}",
                i + 1
            );
        }
    }
    // LIMIT 2 filled p0 and p1 with two rows each, and the last one took three.
    let sizes = history_part_sizes(&mut real);
    assert_eq!(sizes, vec![2, 2, 3], "MariaDB's partitions");

    // The current partition cannot be dropped, on either side (ER_VERS_WRONG_PARTS).
    let (real_e, emb_e) = drop_refused_on_both(&mut real, &emb, t, "pn");
    assert!(real_e.contains("Wrong partitions"), "MariaDB: {real_e}");
    assert!(emb_e.contains("wrong partitions"), "preset: {emb_e}");

    real.conn
        .query_drop("ALTER TABLE accounts DROP PARTITION p0")
        .unwrap();
    assert_eq!(emb.db.drop_partition(t, "p0").unwrap(), 2);
    for (i, (rt, et)) in real_times.iter().zip(&emb_times).enumerate() {
        let rw = format!("AS OF TIMESTAMP'{rt}'");
        let ew = SystemTime::AsOf(*et);
        assert_eq!(
            emb.scan(ew),
            real.rows(&rw, ""),
            "after the drop: all rows as of step {i}"
        );
        let mut want = real.rows(&rw, "WHERE owner = 'even'");
        want.sort();
        assert_eq!(
            emb.by_owner("even", ew),
            want,
            "after the drop: owner even as of step {i}"
        );
    }
    assert_eq!(
        emb.scan(SystemTime::All),
        real.rows("ALL", ""),
        "ALL after the drop"
    );
    // History after the drop goes on alike (p1 is full: the last partition).
    let ops = vec![AddBalance(2, 100), Delete(5)];
    real.step(&ops);
    emb.step(&ops);
    assert_partitions_and_all_after_the_drop(&emb, &mut real);
    server.stop().expect("stop the managed MariaDB");
}

/// `PARTITION BY SYSTEM_TIME INTERVAL 2 SECOND STARTS t` with three history partitions on
/// both sides, the preset's switches `history_partition_interval_s` = 2 and
/// `history_partition_starts_unix_s` = t: each step runs on both sides within one
/// interval (it starts 0.2 s into the interval after the previous step's), so its history
/// rows go to the partition whose interval holds the statement's start, and to the last
/// one once every interval has passed (sql/partition_info.cc `vers_set_hist_part`, its
/// interval branch); each partition holds the same rows on each side after every step.
/// Dropping a history partition that is not the oldest is refused by both
/// (ER_VERS_DROP_PARTITION_INTERVAL); after `DROP PARTITION p0` the AS OF reads, ALL and
/// the later steps' history agree. The pauses only place the steps in their intervals;
/// nothing is timed.
#[test]
fn history_partitions_by_interval_match_a_real_mariadb() {
    const INTERVAL_S: i64 = 2;
    let (mut server, mut admin, opts) = start_mariadb();
    admin.query_drop("CREATE DATABASE sv_interval").unwrap();
    let mut real = Real {
        conn: Conn::new(OptsBuilder::from_opts(opts.clone()).db_name(Some("sv_interval"))).unwrap(),
    };
    // STARTS and NOW(6) in UTC, as the preset's seconds since 1970.
    real.conn.query_drop("SET time_zone = '+00:00'").unwrap();
    let unix_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
    };
    let starts = unix_now().as_secs() as i64 + 1;
    let starts_text: String = real
        .conn
        .query_first(format!("SELECT CAST(FROM_UNIXTIME({starts}) AS CHAR)"))
        .unwrap()
        .unwrap();
    real.conn
        .query_drop(format!(
            "CREATE TABLE accounts ({COLS}) ENGINE=InnoDB WITH SYSTEM VERSIONING \
             PARTITION BY SYSTEM_TIME INTERVAL {INTERVAL_S} SECOND STARTS TIMESTAMP'{starts_text}' \
             (PARTITION p0 HISTORY, PARTITION p1 HISTORY, PARTITION p2 HISTORY, \
             PARTITION pn CURRENT)"
        ))
        .unwrap();
    let mut d = design("partition");
    d.history_partitions = 3;
    d.history_partition_interval_s = INTERVAL_S as u64;
    d.history_partition_starts_unix_s = starts;
    let mut emb = Emb::open(d);
    let t = emb.t;

    use Op::*;
    let mut all_steps = steps();
    all_steps.push(vec![AddBalance(1, 5), AddBalance(5, 5)]);
    let mut real_times = vec![real.now()];
    let mut emb_times = vec![system_time_now_us()];
    // Step j starts 0.2 s into interval j (STARTS + j intervals): steps 0 and 1 write
    // into p0 and p1, steps 2 on into p2 (its interval, then every interval passed).
    let run_in_interval = |j: usize, real: &mut Real, emb: &mut Emb, ops: &[Op]| {
        let at = std::time::Duration::from_millis(
            ((starts + j as i64 * INTERVAL_S) * 1000 + 200) as u64,
        );
        if let Some(wait) = at.checked_sub(unix_now()) {
            std::thread::sleep(wait);
        }
        real.step(ops);
        emb.step(ops);
    };
    for (j, ops) in all_steps.iter().enumerate() {
        run_in_interval(j, &mut real, &mut emb, ops);
        real_times.push(real.now());
        emb_times.push(system_time_now_us());
        for p in ["p0", "p1", "p2"] {
            assert_eq!(
                emb_part(&emb, p),
                real_part(&mut real, p),
                "partition {p} after step {j} (0.2 s into interval {j})"
            );
        }
    }
    let sizes = history_part_sizes(&mut real);
    assert!(
        sizes[1] > 0 && sizes[2] > 0,
        "MariaDB rotated into p1 and p2: {sizes:?}"
    );

    // Only the oldest history partitions can be dropped (ER_VERS_DROP_PARTITION_INTERVAL).
    let (real_e, emb_e) = drop_refused_on_both(&mut real, &emb, t, "p1");
    assert!(real_e.contains("oldest"), "MariaDB: {real_e}");
    assert!(emb_e.contains("oldest"), "preset: {emb_e}");
    real.conn
        .query_drop("ALTER TABLE accounts DROP PARTITION p0")
        .unwrap();
    emb.db.drop_partition(t, "p0").unwrap();
    for (i, (rt, et)) in real_times.iter().zip(&emb_times).enumerate() {
        assert_eq!(
            emb.scan(SystemTime::AsOf(*et)),
            real.rows(&format!("AS OF TIMESTAMP'{rt}'"), ""),
            "after the drop: all rows as of step {i}"
        );
    }
    // History after the drop goes on alike: every interval has passed, p2 takes it.
    let j = all_steps.len();
    run_in_interval(j, &mut real, &mut emb, &[AddBalance(2, 100), Delete(5)]);
    assert_partitions_and_all_after_the_drop(&emb, &mut real);
    server.stop().expect("stop the managed MariaDB");
}
