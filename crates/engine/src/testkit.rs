//! A page-level workload shared by `mvcclab storage-bench`, the tests and the benchmarks:
//! fill a page (outside a hole) with one byte and WAL-log the change as an
//! [`rmgr::TEST`] record. It exercises the buffer pool, the FPI rule and the WAL without
//! any MVCC design. Also the table the system-versioning tests of the engine and of the
//! real servers share ([`versioned_accounts_def`]).

use crate::buffer::{log_change, WritePageGuard};
use crate::error::Result;
use crate::page::{init_page, set_hole, PAGE_HEADER_BYTES};
use crate::wal::{rmgr, Lsn, RecordBuilder, Wal};

/// Bytes kept outside the hole at each end of a filled page: `[header, 64)` and the last 64.
pub const FILLED_EDGE_BYTES: usize = 64;

/// Sets the page (initializing it first when `new`) to byte `v` outside the hole
/// `[64, len − 64)`, and logs a TEST record for it (with `will_init` when `new`). Returns
/// the record's end LSN.
///
/// Errors: as [`Wal::insert`].
pub fn fill_and_log(wal: &Wal, g: &mut WritePageGuard<'_>, v: u8, new: bool) -> Result<Lsn> {
    let p = g.data_mut();
    if new {
        init_page(p, 1, 0);
    }
    let n = p.len();
    p[PAGE_HEADER_BYTES..FILLED_EDGE_BYTES].fill(v);
    p[n - FILLED_EDGE_BYTES..].fill(v);
    set_hole(p, FILLED_EDGE_BYTES as u16, (n - FILLED_EDGE_BYTES) as u16);
    let rec = RecordBuilder::new(rmgr::TEST, 0).block(g.page_id(), new, &[v]);
    Ok(log_change(wal, &rec, &mut [g])?)
}

/// The byte [`fill_and_log`] wrote into `page`.
pub fn filled_value(page: &[u8]) -> u8 {
    page[PAGE_HEADER_BYTES]
}

/// `accounts(id INTEGER PRIMARY KEY, balance BIGINT, owner VARCHAR(32), code INTEGER)`, all
/// NOT NULL, with a non-unique index `accounts_owner` on owner and a unique one
/// `accounts_code` on code: the table the system-versioning tests run on both presets and
/// beside the real servers (`crates/engine/tests/system_versioning.rs`,
/// `crates/servers/tests/common/mod.rs`).
pub fn versioned_accounts_def() -> crate::catalog::TableDef {
    use crate::catalog::{Column, ColumnType, IndexDef, TableDef};
    TableDef {
        name: "accounts".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("balance", ColumnType::BigInt),
            Column::not_null("owner", ColumnType::Varchar(32)),
            Column::not_null("code", ColumnType::Integer),
        ],
        primary_key: vec![0],
        indexes: vec![
            IndexDef {
                name: "accounts_owner".into(),
                columns: vec![2],
                unique: false,
            },
            IndexDef {
                name: "accounts_code".into(),
                columns: vec![3],
                unique: true,
            },
        ],
        foreign_keys: Vec::new(),
    }
}

/// `mysql.transaction_registry` of a database versioned by transaction id
/// ([`crate::db::versioning::TRANSACTION_REGISTRY`]) as `(transaction_id, commit_id)` rows
/// in commit-id order, read in a transaction of its own: what the system-versioning tests
/// of the engine and beside real MariaDB compare.
///
/// Errors: [`crate::error::Error::corrupted`] for a row whose first two columns are not
/// BIGINTs; as [`crate::db::Database::table_id`] (no such table when the database
/// has no table versioned by transaction id) and [`crate::db::Transaction::scan`].
pub fn transaction_registry_rows(db: &crate::db::Database) -> Result<Vec<(i64, i64)>> {
    use crate::catalog::Value;
    use crate::db::versioning::TRANSACTION_REGISTRY;
    use crate::error::Error;
    use std::ops::Bound;
    let reg = db.table_id(TRANSACTION_REGISTRY)?;
    let mut tx = db.begin();
    let rows = tx.scan(
        reg,
        Bound::Unbounded,
        Bound::Unbounded,
        crate::btree::ScanDirection::Forward,
        usize::MAX,
    )?;
    tx.commit()?;
    let mut out = rows
        .iter()
        .map(|r| match (r.first(), r.get(1)) {
            (Some(Value::BigInt(t)), Some(Value::BigInt(c))) => Ok((*t, *c)),
            other => Err(Error::corrupted(format!(
                "transaction_registry row of another shape: {other:?}"
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    out.sort_by_key(|r| r.1);
    Ok(out)
}
