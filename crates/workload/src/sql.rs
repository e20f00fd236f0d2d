//! The SQL text sysbench sends for each [`Op`], in the PostgreSQL and MySQL dialects, with
//! its parameters: what the real-server targets prepare and execute.
//!
//! The statement texts are those of sysbench 1.0's `oltp_common.lua` (`stmt_defs`),
//! `oltp_insert.lua`, `select_random_points.lua` and `select_random_ranges.lua`; the
//! dialects differ only in their placeholders (`$1` for PostgreSQL's extended protocol,
//! `?` for MySQL's binary protocol). oltp_insert is the one script that sends a plain
//! query instead of a prepared statement; [`Statement::prepared`] says so.

use crate::sysbench::Op;

/// SQL dialect of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// PostgreSQL (placeholders `$1`, `$2`, ...; SERIAL ids).
    PostgreSql,
    /// MySQL / MariaDB (placeholders `?`; AUTO_INCREMENT ids; `ENGINE = InnoDB`).
    MySql,
}

/// One parameter of a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// An INTEGER (sysbench `sysbench.sql.type.INT`).
    Int(i32),
    /// A CHAR(n) value (sysbench `sysbench.sql.type.CHAR`).
    Text(String),
}

/// A statement to send: its text, its parameters, and whether sysbench prepares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The SQL text with placeholders (`prepared`) or with the values inlined (not).
    pub text: String,
    /// Parameters in placeholder order (empty when not prepared).
    pub params: Vec<Param>,
    /// True when sysbench sends it as a prepared statement; false for a plain query
    /// (BEGIN, COMMIT, oltp_insert's INSERT).
    pub prepared: bool,
    /// True for statements that return rows (the client reads them all).
    pub returns_rows: bool,
}

fn placeholders(d: Dialect, from: usize, n: usize) -> Vec<String> {
    (from..from + n)
        .map(|i| match d {
            Dialect::PostgreSql => format!("${i}"),
            Dialect::MySql => "?".to_string(),
        })
        .collect()
}

fn prepared(text: String, params: Vec<Param>, returns_rows: bool) -> Statement {
    Statement {
        text,
        params,
        prepared: true,
        returns_rows,
    }
}

/// The statement sysbench sends for `op` in dialect `d`.
///
/// `Op::Insert` with an id is oltp_read_write's prepared `INSERT ... (id, k, c, pad)`;
/// without one it is oltp_insert's plain `INSERT ... (k, c, pad) VALUES (...)` (the values
/// are digits and dashes, so they are inlined without escaping, as the script does).
pub fn statement(d: Dialect, op: &Op) -> Statement {
    let p = |n| placeholders(d, 1, n);
    match op {
        Op::Begin => Statement {
            text: "BEGIN".into(),
            params: vec![],
            prepared: false,
            returns_rows: false,
        },
        Op::Commit => Statement {
            text: "COMMIT".into(),
            params: vec![],
            prepared: false,
            returns_rows: false,
        },
        Op::PointSelect { table, id } => {
            let ph = p(1);
            prepared(
                format!("SELECT c FROM sbtest{table} WHERE id={}", ph[0]),
                vec![Param::Int(*id)],
                true,
            )
        }
        Op::SimpleRange { table, lo, hi }
        | Op::SumRange { table, lo, hi }
        | Op::OrderRange { table, lo, hi }
        | Op::DistinctRange { table, lo, hi } => {
            let ph = p(2);
            let (a, b) = (&ph[0], &ph[1]);
            let text = match op {
                Op::SimpleRange { .. } => {
                    format!("SELECT c FROM sbtest{table} WHERE id BETWEEN {a} AND {b}")
                }
                Op::SumRange { .. } => {
                    format!("SELECT SUM(k) FROM sbtest{table} WHERE id BETWEEN {a} AND {b}")
                }
                Op::OrderRange { .. } => {
                    format!("SELECT c FROM sbtest{table} WHERE id BETWEEN {a} AND {b} ORDER BY c")
                }
                _ => format!(
                    "SELECT DISTINCT c FROM sbtest{table} WHERE id BETWEEN {a} AND {b} ORDER BY c"
                ),
            };
            prepared(text, vec![Param::Int(*lo), Param::Int(*hi)], true)
        }
        Op::IndexUpdate { table, id } => {
            let ph = p(1);
            prepared(
                format!("UPDATE sbtest{table} SET k=k+1 WHERE id={}", ph[0]),
                vec![Param::Int(*id)],
                false,
            )
        }
        Op::NonIndexUpdate { table, id, c } => {
            let ph = p(2);
            prepared(
                format!("UPDATE sbtest{table} SET c={} WHERE id={}", ph[0], ph[1]),
                vec![Param::Text(c.clone()), Param::Int(*id)],
                false,
            )
        }
        Op::Delete { table, id } => {
            let ph = p(1);
            prepared(
                format!("DELETE FROM sbtest{table} WHERE id={}", ph[0]),
                vec![Param::Int(*id)],
                false,
            )
        }
        Op::Insert {
            table,
            id: Some(id),
            k,
            c,
            pad,
        } => {
            let ph = p(4);
            prepared(
                format!(
                    "INSERT INTO sbtest{table} (id, k, c, pad) VALUES ({})",
                    ph.join(", ")
                ),
                vec![
                    Param::Int(*id),
                    Param::Int(*k),
                    Param::Text(c.clone()),
                    Param::Text(pad.clone()),
                ],
                false,
            )
        }
        Op::Insert {
            table,
            id: None,
            k,
            c,
            pad,
        } => Statement {
            text: format!("INSERT INTO sbtest{table} (k, c, pad) VALUES ({k}, '{c}', '{pad}')"),
            params: vec![],
            prepared: false,
            returns_rows: false,
        },
        Op::RandomPoints { ks } => {
            let ph = p(ks.len());
            prepared(
                format!(
                    "SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({})",
                    ph.join(", ")
                ),
                ks.iter().map(|k| Param::Int(*k)).collect(),
                true,
            )
        }
        Op::Tpcc(t) => Statement {
            // A TPC-C transaction is many statements whose parameters depend on what the
            // earlier ones read; the real-server targets do not run it (yet).
            text: format!("/* tpcc {} */", t.kind()),
            params: Vec::new(),
            prepared: false,
            returns_rows: false,
        },
        Op::RandomRanges { ranges } => {
            let ph = p(2 * ranges.len());
            let cond: Vec<String> = ph
                .chunks(2)
                .map(|c| format!("k BETWEEN {} AND {}", c[0], c[1]))
                .collect();
            prepared(
                format!("SELECT count(k) FROM sbtest1 WHERE {}", cond.join(" OR ")),
                ranges
                    .iter()
                    .flat_map(|(a, b)| [Param::Int(*a), Param::Int(*b)])
                    .collect(),
                true,
            )
        }
    }
}

/// `CREATE TABLE sbtestN` as oltp_common.lua's `create_table` writes it for the dialect
/// (PRIMARY KEY on id; SERIAL / AUTO_INCREMENT when `auto_inc`; `ENGINE = InnoDB` for
/// MySQL).
pub fn create_table(d: Dialect, n: u32, auto_inc: bool) -> String {
    let (id_def, engine) = match (d, auto_inc) {
        (Dialect::PostgreSql, true) => ("SERIAL", ""),
        (Dialect::PostgreSql, false) => ("INTEGER NOT NULL", ""),
        (Dialect::MySql, true) => ("INTEGER NOT NULL AUTO_INCREMENT", " ENGINE = InnoDB"),
        (Dialect::MySql, false) => ("INTEGER NOT NULL", " ENGINE = InnoDB"),
    };
    format!(
        "CREATE TABLE sbtest{n}(id {id_def}, k INTEGER DEFAULT '0' NOT NULL, \
         c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)){engine}"
    )
}

/// `CREATE INDEX k_N ON sbtestN(k)`, run after the load (oltp_common.lua,
/// `--create_secondary` on).
pub fn create_secondary_index(n: u32) -> String {
    format!("CREATE INDEX k_{n} ON sbtest{n}(k)")
}

/// The multi-row INSERT of the load for rows `(id, k, c, pad)`: with `auto_inc` the id is
/// left to SERIAL / AUTO_INCREMENT, which assigns 1, 2, ... in order as in sysbench's
/// bulk insert (so the ids equal the embedded load's).
pub fn bulk_insert(n: u32, auto_inc: bool, rows: &[(i32, i32, String, String)]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|(id, k, c, pad)| {
            if auto_inc {
                format!("({k}, '{c}', '{pad}')")
            } else {
                format!("({id}, {k}, '{c}', '{pad}')")
            }
        })
        .collect();
    let cols = if auto_inc {
        "(k, c, pad)"
    } else {
        "(id, k, c, pad)"
    };
    format!("INSERT INTO sbtest{n}{cols} VALUES {}", values.join(","))
}

/// `e`, naming the statement sysbench sends for `op` in dialect `d` as the one that failed
/// (TPC-C's transactions, several statements each, are left as they are: their SQL
/// connections name the statement themselves).
pub fn name_statement(d: Dialect, op: &Op, e: crate::driver::OpError) -> crate::driver::OpError {
    match op {
        Op::Tpcc(_) => e,
        _ => e.with_statement(statement(d, op).text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_follow_the_dialect() {
        let op = Op::NonIndexUpdate {
            table: 3,
            id: 7,
            c: "1-2".into(),
        };
        let pg = statement(Dialect::PostgreSql, &op);
        assert_eq!(pg.text, "UPDATE sbtest3 SET c=$1 WHERE id=$2");
        assert_eq!(pg.params, vec![Param::Text("1-2".into()), Param::Int(7)]);
        let my = statement(Dialect::MySql, &op);
        assert_eq!(my.text, "UPDATE sbtest3 SET c=? WHERE id=?");
        assert!(my.prepared && !my.returns_rows);
    }

    #[test]
    fn random_ranges_and_points_have_one_placeholder_per_value() {
        let r = statement(
            Dialect::PostgreSql,
            &Op::RandomRanges {
                ranges: vec![(1, 5), (10, 15)],
            },
        );
        assert_eq!(
            r.text,
            "SELECT count(k) FROM sbtest1 WHERE k BETWEEN $1 AND $2 OR k BETWEEN $3 AND $4"
        );
        assert_eq!(r.params.len(), 4);
        let p = statement(Dialect::MySql, &Op::RandomPoints { ks: vec![4, 5, 6] });
        assert_eq!(
            p.text,
            "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?)"
        );
        assert!(p.returns_rows);
    }

    #[test]
    fn oltp_insert_with_auto_inc_is_a_plain_query_without_id() {
        let s = statement(
            Dialect::MySql,
            &Op::Insert {
                table: 1,
                id: None,
                k: 5,
                c: "11-22".into(),
                pad: "33".into(),
            },
        );
        assert!(!s.prepared && s.params.is_empty());
        assert_eq!(
            s.text,
            "INSERT INTO sbtest1 (k, c, pad) VALUES (5, '11-22', '33')"
        );
    }

    #[test]
    fn create_table_matches_oltp_common() {
        assert!(
            create_table(Dialect::MySql, 2, true).contains("id INTEGER NOT NULL AUTO_INCREMENT")
        );
        assert!(create_table(Dialect::MySql, 2, true).ends_with("ENGINE = InnoDB"));
        assert!(create_table(Dialect::PostgreSql, 2, true).contains("id SERIAL"));
        let b = bulk_insert(
            1,
            false,
            &[
                (1, 2, "c".into(), "p".into()),
                (2, 3, "d".into(), "q".into()),
            ],
        );
        assert_eq!(
            b,
            "INSERT INTO sbtest1(id, k, c, pad) VALUES (1, 2, 'c', 'p'),(2, 3, 'd', 'q')"
        );
    }
}
