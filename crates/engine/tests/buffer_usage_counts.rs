//! The postgres preset's clock-sweep usage counts after one sysbench statement on an empty
//! pool, against PostgreSQL 15's, read with contrib/pg_buffercache after a restart
//! (`scripts/pg_usage_counts.sh`: the same 20,000-row sbtest1, VACUUM ANALYZE and
//! CHECKPOINT, then the statement, then `usagecount` and `isdirty` of each buffer of the
//! table and its two indexes). A usage count that is too high keeps a page, dirty ones
//! included, one more pass of the clock in the pool (issue 26: the background writer
//! wrote fewer pages than PostgreSQL's).
//!
//! PostgreSQL 15.20 gave, per page (the B-tree metapages, the free space map and the
//! visibility map left out: the preset keeps no such buffers):
//!
//! | statement | heap | sbtest1_pkey (root, leaf) | k_1 (root, leaf) |
//! |---|---|---|---|
//! | UPDATE SET k = k + 1 (no room: new version on another page) | old 1 dirty, new 1 dirty | 2, 2 dirty | 1, 1 dirty |
//! | INSERT of a new id | 1 dirty | 1, 1 dirty | 1, 1 dirty |
//! | DELETE then INSERT of the same id, one transaction | old 2 dirty, new 1 dirty | 2, 2 dirty | 1, 1 dirty |
//! | UPDATE SET c = 'x', fill factor 90 (HOT) | 1 dirty | 1, 1 | – |

mod common;
use common::*;
use mvcclab_engine::catalog::{TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId, Transaction};
use mvcclab_engine::design::DesignConfig;

/// sbtest1 with 20,000 rows of sysbench's widths, loaded, indexed and vacuumed as the
/// embedded target's `prepare` does.
fn load(db: &Database) -> TableId {
    let t = db.create_table_for_load(TableDef::sbtest(1)).unwrap();
    let mut tx = db.begin();
    for id in 1..=20_000i32 {
        tx.insert(
            t,
            vec![
                Value::Integer(id),
                Value::Integer((id * 7919) % 10_000),
                Value::Text(format!("{id:0>119}")),
                Value::Text(format!("{id:0>59}")),
            ],
        )
        .unwrap();
        if id % 1000 == 0 {
            tx.commit().unwrap();
            tx = db.begin();
        }
    }
    tx.commit().unwrap();
    db.build_secondary_indexes(t).unwrap();
    db.gc(t).unwrap();
    db.analyze(t).unwrap();
    t
}

/// Every page written and dropped from the pool (a restarted server's empty pool).
fn empty_pool(db: &Database) {
    let pool = db.storage().pool();
    pool.flush_all().unwrap();
    for e in pool.buffer_cache() {
        assert!(pool.discard(e.page), "{:?} is pinned", e.page);
    }
}

/// Every resident page as `relation usage-count[ dirty]`, sorted and joined by `, `
/// (relation `heap`, `pkey` or `k_1`), as the module's table reads.
fn usage(db: &Database, t: TableId) -> String {
    let r = db.relations(t).unwrap();
    let mut v: Vec<String> = db
        .storage()
        .pool()
        .buffer_cache()
        .into_iter()
        .map(|e| {
            let rel = if e.page.rel == r.table {
                "heap"
            } else if Some(e.page.rel) == r.primary_key {
                "pkey"
            } else {
                "k_1"
            };
            let dirty = if e.dirty { " dirty" } else { "" };
            format!("{rel} {}{dirty}", e.usage_count)
        })
        .collect();
    v.sort();
    v.join(", ")
}

fn after(f: impl Fn(&mut Transaction, TableId)) -> String {
    after_with(100, f)
}

/// [`after`] on a table of fill factor `fillfactor`.
fn after_with(fillfactor: u8, f: impl Fn(&mut Transaction, TableId)) -> String {
    let db = open_db(
        DesignConfig {
            fillfactor,
            ..DesignConfig::postgres()
        },
        2048,
    );
    let t = load(&db);
    empty_pool(&db);
    let mut tx = db.begin();
    f(&mut tx, t);
    tx.commit().unwrap();
    usage(&db, t)
}

fn row(id: i32) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::Integer(3),
        Value::Text("y".into()),
        Value::Text("z".into()),
    ]
}

/// The unique check's scan and the insertion count as one descent of the primary key
/// (nbtinsert.c `_bt_doinsert`), and the page that takes the new version is pinned once
/// (hio.c `RelationGetBufferForTuple`).
#[test]
fn a_non_hot_update_pins_each_page_as_postgresql_does() {
    let got = after(|tx, t| {
        assert!(tx
            .update(t, &[Value::Integer(5000)], &[Assign::Add(1, 1)])
            .unwrap());
    });
    assert_eq!(
        got,
        "heap 1 dirty, heap 1 dirty, k_1 1, k_1 1 dirty, pkey 2, pkey 2 dirty"
    );
}

#[test]
fn an_insert_pins_its_primary_key_path_once() {
    let got = after(|tx, t| tx.insert(t, row(20_001)).unwrap());
    assert_eq!(
        got,
        "heap 1 dirty, k_1 1, k_1 1 dirty, pkey 1, pkey 1 dirty"
    );
}

/// oltp_read_write's delete and insert of one id in one transaction.
#[test]
fn a_delete_and_insert_of_one_id_pins_as_postgresql_does() {
    let got = after(|tx, t| {
        assert!(tx.delete(t, &[Value::Integer(11_000)]).unwrap());
        tx.insert(t, row(11_000)).unwrap();
    });
    assert_eq!(
        got,
        "heap 1 dirty, heap 2 dirty, k_1 1, k_1 1 dirty, pkey 2, pkey 2 dirty"
    );
}

/// A HOT update (room on the page: fill factor 90, `FILLFACTOR=90` for the script) pins
/// the heap page once: the index scan's fetch, the old version's fetch and the update share
/// the scan's pin.
#[test]
fn a_hot_update_pins_each_page_once() {
    let got = after_with(90, |tx, t| {
        assert!(tx
            .update(
                t,
                &[Value::Integer(7000)],
                &[Assign::Set(2, Value::Text("x".into()))]
            )
            .unwrap());
    });
    assert_eq!(got, "heap 1 dirty, pkey 1, pkey 1");
}
