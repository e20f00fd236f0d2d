//! Tables without a primary key, in both presets: a plain heap with no primary-key index
//! (postgres), a clustered index on InnoDB's hidden 6-byte `DB_ROW_ID` (innodb). Inserts,
//! storage-order scans, secondary-index reads, visibility of committed and rolled-back
//! inserts, garbage collection after aborted inserts, the refusal of reads and writes by
//! primary key, reopen and crash recovery (no row id handed out twice, as MariaDB 10.11's
//! `dict_sys_t::recover_row_id`), and the 6 bytes the row id adds to every clustered entry.

mod common;
use common::*;
use mvcclab_engine::btree::{BTree, BTreeConfig, ScanDirection};
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, Row, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::CrashDevice;
use mvcclab_engine::error::TxnError;
use mvcclab_engine::Error;
use std::ops::Bound;
use std::sync::Arc;

/// TPC-C's `history` (no primary key) with a non-unique index on the customer id.
fn history_def(name: &str) -> TableDef {
    TableDef {
        name: name.into(),
        columns: vec![
            Column::not_null("h_c_id", ColumnType::Integer),
            Column::not_null("h_amount", ColumnType::BigInt),
            Column::nullable("h_data", ColumnType::Varchar(24)),
        ],
        primary_key: Vec::new(),
        indexes: vec![IndexDef {
            name: format!("{name}_c_id"),
            columns: vec![0],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

fn hrow(c: i32, amount: i64) -> Row {
    vec![
        Value::Integer(c),
        Value::BigInt(amount),
        Value::Text(format!("d{amount}")),
    ]
}

fn all(db: &Database, t: TableId, dir: ScanDirection) -> Vec<Row> {
    let mut tx = db.begin();
    let rows = tx
        .scan(t, Bound::Unbounded, Bound::Unbounded, dir, usize::MAX)
        .unwrap();
    tx.commit().unwrap();
    rows
}

fn by_index(db: &Database, t: TableId, c: i32) -> Vec<Row> {
    let mut tx = db.begin();
    let rows = tx.get_by_index(t, 0, &[Value::Integer(c)]).unwrap();
    tx.commit().unwrap();
    rows
}

/// Asserts `e` is the refusal of a primary-key operation on table `name`.
fn assert_no_pk_error(e: Error, name: &str) {
    match e {
        Error::Catalog(m) => {
            assert!(m.contains(&format!("\"{name}\"")), "{m}");
            assert!(m.contains("has no primary key"), "{m}");
        }
        other => panic!("expected a catalog error, got {other:?}"),
    }
}

#[test]
fn insert_scan_index_read_and_visibility() {
    for design in designs() {
        let name = design.name.clone();
        let db = open_db(design, 256);
        let t = db.create_table(history_def("history")).unwrap();
        // Identical rows are two rows: no key to collide on.
        let mut tx = db.begin();
        for i in 0..50 {
            tx.insert(t, hrow(i % 5, i64::from(i))).unwrap();
        }
        tx.insert(t, hrow(1, 1)).unwrap();
        tx.commit().unwrap();
        let mut expected: Vec<Row> = (0..50).map(|i| hrow(i % 5, i64::from(i))).collect();
        expected.push(hrow(1, 1));
        // Storage order is insertion order here: heap blocks and line pointers filled in
        // turn; DB_ROW_ID handed out in turn.
        assert_eq!(all(&db, t, ScanDirection::Forward), expected, "{name}");
        let mut rev = expected.clone();
        rev.reverse();
        assert_eq!(all(&db, t, ScanDirection::Backward), rev, "{name}");
        let mut tx = db.begin();
        let first3 = tx
            .scan(
                t,
                Bound::Unbounded,
                Bound::Unbounded,
                ScanDirection::Forward,
                3,
            )
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(first3, expected[..3].to_vec(), "{name}");
        // No hidden column in what the user sees.
        assert!(expected.iter().all(|r| r.len() == 3));
        let ones: Vec<Row> = expected
            .iter()
            .filter(|r| r[0] == Value::Integer(1))
            .cloned()
            .collect();
        assert_eq!(by_index(&db, t, 1).len(), ones.len(), "{name}");
        for r in by_index(&db, t, 1) {
            assert!(ones.contains(&r), "{name}: {r:?}");
        }

        // An insert not yet committed is seen by its own transaction only; rolled back, it
        // is gone; committed, it is there.
        let mut writer = db.begin();
        writer.insert(t, hrow(7, 700)).unwrap();
        assert_eq!(
            writer
                .scan(
                    t,
                    Bound::Unbounded,
                    Bound::Unbounded,
                    ScanDirection::Forward,
                    usize::MAX
                )
                .unwrap()
                .len(),
            52,
            "{name}"
        );
        assert!(
            by_index(&db, t, 7).is_empty(),
            "{name}: uncommitted row visible"
        );
        assert_eq!(all(&db, t, ScanDirection::Forward).len(), 51, "{name}");
        writer.abort().unwrap();
        assert_eq!(all(&db, t, ScanDirection::Forward), expected, "{name}");
        assert!(
            by_index(&db, t, 7).is_empty(),
            "{name}: rolled-back row visible"
        );
        let mut tx = db.begin();
        tx.insert(t, hrow(7, 701)).unwrap();
        tx.commit().unwrap();
        assert_eq!(by_index(&db, t, 7), vec![hrow(7, 701)], "{name}");
        expected.push(hrow(7, 701));
        assert_eq!(all(&db, t, ScanDirection::Forward), expected, "{name}");

        // Reads and writes by primary key are refused, naming the table.
        let pk = [Value::Integer(1)];
        let b: &[Value] = &pk;
        let fails: Vec<Error> = vec![
            db.begin().get(t, &pk).unwrap_err(),
            db.begin()
                .update(t, &pk, &[Assign::Set(1, Value::BigInt(0))])
                .unwrap_err(),
            db.begin().delete(t, &pk).unwrap_err(),
            db.begin()
                .scan(
                    t,
                    Bound::Included(b),
                    Bound::Unbounded,
                    ScanDirection::Forward,
                    10,
                )
                .unwrap_err(),
            db.begin()
                .scan(
                    t,
                    Bound::Unbounded,
                    Bound::Excluded(b),
                    ScanDirection::Forward,
                    10,
                )
                .unwrap_err(),
        ];
        for e in fails {
            assert_no_pk_error(e, "history");
        }
        let (checked, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "{name}: {problems:?}");
        assert!(checked >= 52, "{name}: {checked}");
    }
}

#[test]
fn the_heap_has_no_primary_key_index_and_the_clustered_index_is_the_table() {
    for design in designs() {
        let db = open_db(design.clone(), 256);
        let t = db.create_table(history_def("history")).unwrap();
        let r = db.relations(t).unwrap();
        match design.name.as_str() {
            "postgres" => assert_eq!(r.primary_key, None),
            _ => assert_eq!(r.primary_key, Some(r.table)),
        }
        assert_eq!(r.indexes.len(), 1);
        assert_eq!(r.index_relations().count(), 1, "{}", design.name);
        // A table with a key logs its relations as it always did: the bare relation number.
        let s = db.create_table(accounts_def()).unwrap();
        let json = serde_json::to_string(&db.relations(s).unwrap()).unwrap();
        let pk = db.relations(s).unwrap().primary_key.unwrap();
        assert!(json.contains(&format!("\"primary_key\":{pk},")), "{json}");
    }
}

#[test]
fn vacuum_and_purge_after_aborted_inserts() {
    for design in designs() {
        let name = design.name.clone();
        let db = open_db(design, 256);
        let t = db.create_table(history_def("history")).unwrap();
        let mut tx = db.begin();
        for i in 0..40 {
            tx.insert(t, hrow(i, 1)).unwrap();
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        for i in 0..300 {
            tx.insert(t, hrow(1000 + i, 2)).unwrap();
        }
        tx.abort().unwrap();
        let rep = db.gc(t).unwrap();
        match name.as_str() {
            "postgres" => {
                // The aborted tuples are dead: vacuum removes them and their index entries
                // (no primary-key index to clean).
                let v = rep.vacuum.expect("a vacuum report");
                assert_eq!(v.index_entries_removed, 300, "{v:?}");
                assert_eq!(v.live_tuples, 40, "{v:?}");
                assert!(v.tuples_pruned + v.dead_items_removed >= 300, "{v:?}");
            }
            _ => {
                // The rollback removed the rows (insert undo); nothing is left for purge.
                assert!(rep.vacuum.is_none());
                assert_eq!(db.engine_counters().history_list_length, 0);
            }
        }
        let rows = all(&db, t, ScanDirection::Forward);
        assert_eq!(
            rows,
            (0..40).map(|i| hrow(i, 1)).collect::<Vec<_>>(),
            "{name}"
        );
        let (checked, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "{name}: {problems:?}");
        // One secondary entry per committed row, none left of the aborted ones.
        assert_eq!(checked, 40, "{name}");
        // The table goes on after its garbage was collected.
        let mut tx = db.begin();
        tx.insert(t, hrow(5000, 3)).unwrap();
        tx.commit().unwrap();
        assert_eq!(by_index(&db, t, 5000), vec![hrow(5000, 3)], "{name}");
    }
}

/// The `DB_ROW_ID`s of a clustered table without a primary key, in key order.
fn row_ids(db: &Database, t: TableId) -> Vec<u64> {
    let rel = db.relations(t).unwrap().table;
    let tree = BTree::open(db.storage().pool().clone(), rel, BTreeConfig::innodb()).unwrap();
    let mut ids = Vec::new();
    tree.scan(
        Bound::Unbounded,
        Bound::Unbounded,
        ScanDirection::Forward,
        &mut |k, _| {
            assert_eq!(k.len(), 6, "a DB_ROW_ID key is 6 bytes");
            ids.push(k.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)));
            Ok(true)
        },
    )
    .unwrap();
    ids
}

fn insert_committed(db: &Database, t: TableId, from: i32, n: i32) -> Vec<Row> {
    let mut tx = db.begin();
    let rows: Vec<Row> = (from..from + n).map(|i| hrow(i, i64::from(i))).collect();
    for r in &rows {
        tx.insert(t, r.clone()).unwrap();
    }
    tx.commit().unwrap();
    rows
}

/// MariaDB 10.11's row id counter: one for the server, written to the dictionary header
/// at every multiple of 256 handed out, restarted at that value rounded up plus 256.
/// Measured on MariaDB 10.11.19 (docs/innodb.md): a fresh server's first row id is 512;
/// after 512..=516 a clean restart continues at 768; after 768 a crash continues at 1024.
#[test]
fn innodb_row_ids_are_never_handed_out_twice_across_restart_and_crash() {
    let dev = Arc::new(CrashDevice::new());
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    let a = db.create_table(history_def("a")).unwrap();
    let b = db.create_table(history_def("b")).unwrap();
    let mut want_a = insert_committed(&db, a, 0, 3);
    let want_b = insert_committed(&db, b, 1000, 2);
    want_a.extend(insert_committed(&db, a, 3, 1));
    // One counter for both tables, from 512.
    assert_eq!(row_ids(&db, a), vec![512, 513, 514, 517]);
    assert_eq!(row_ids(&db, b), vec![515, 516]);

    // A clean restart: the shutdown checkpoint carries the header's 512.
    db.close().unwrap();
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    let (a, b) = (db.table_id("a").unwrap(), db.table_id("b").unwrap());
    want_a.extend(insert_committed(&db, a, 4, 1));
    assert_eq!(row_ids(&db, a), vec![512, 513, 514, 517, 768]);

    // A crash with no checkpoint since the header was written (768): recovery finds the
    // write in the WAL.
    let more = insert_committed(&db, a, 5, 300); // 769..=1068, header written at 1024
    want_a.extend(more);
    db.storage().wal().flush_all().unwrap();
    drop(db);
    dev.power_cut(7);
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    let (a, b2) = (db.table_id("a").unwrap(), db.table_id("b").unwrap());
    assert_eq!(b2, b);
    want_a.extend(insert_committed(&db, a, 400, 1));
    let ids = row_ids(&db, a);
    assert_eq!(ids.last(), Some(&1280), "restart after 1024: 1280");
    assert_eq!(ids.len(), want_a.len());
    assert_eq!(all(&db, a, ScanDirection::Forward), want_a);
    assert_eq!(all(&db, b, ScanDirection::Forward), want_b);

    // A crash after a checkpoint that carries the header (1280), with no write since: the
    // header comes from the checkpoint record.
    db.storage().checkpoint().unwrap();
    want_a.extend(insert_committed(&db, a, 500, 10)); // 1281..=1290
    db.storage().wal().flush_all().unwrap();
    drop(db);
    dev.power_cut(8);
    let db = Database::open(crash_db_config(DesignConfig::innodb(), &dev)).unwrap();
    let a = db.table_id("a").unwrap();
    want_a.extend(insert_committed(&db, a, 600, 1));
    let ids = row_ids(&db, a);
    assert_eq!(ids.last(), Some(&1536));
    let mut sorted = ids.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "a row id handed out twice");
    assert_eq!(all(&db, a, ScanDirection::Forward), want_a);
    let (_, problems) = db.check_indexes(a).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    db.close().unwrap();
}

/// Both presets: committed rows of a table without a primary key survive a crash, an open
/// transaction's do not, and the table takes more rows afterwards.
#[test]
fn crash_recovery_keeps_committed_rows_and_drops_open_ones() {
    for design in designs() {
        let name = design.name.clone();
        let dev = Arc::new(CrashDevice::new());
        let db = Database::open(crash_db_config(design.clone(), &dev)).unwrap();
        let t = db.create_table(history_def("history")).unwrap();
        let mut want = insert_committed(&db, t, 0, 200);
        db.storage().checkpoint().unwrap();
        want.extend(insert_committed(&db, t, 200, 100));
        let mut open_tx = db.begin();
        for i in 0..50 {
            open_tx.insert(t, hrow(9000 + i, 0)).unwrap();
        }
        db.storage().wal().flush_all().unwrap();
        std::mem::forget(open_tx);
        drop(db);
        dev.power_cut(3);
        let db = Database::open(crash_db_config(design, &dev)).unwrap();
        let t = db.table_id("history").unwrap();
        assert_eq!(all(&db, t, ScanDirection::Forward), want, "{name}");
        assert!(by_index(&db, t, 9000).is_empty(), "{name}");
        want.extend(insert_committed(&db, t, 300, 20));
        assert_eq!(
            all(&db, t, ScanDirection::Forward).len(),
            want.len(),
            "{name}"
        );
        assert_eq!(by_index(&db, t, 310), vec![hrow(310, 310)], "{name}");
        db.gc(t).unwrap();
        let (_, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "{name}: {problems:?}");
        db.close().unwrap();
    }
}

/// The hidden row id is counted in the clustered record: the same rows take exactly
/// 6 bytes more per leaf entry than in a table keyed on its 4-byte integer column (InnoDB:
/// 6-byte DB_ROW_ID in the record instead of the key's 4 bytes, the column's 4 bytes moved
/// into the record), and so more pages; a heap is the same either way.
#[test]
fn the_hidden_row_id_is_counted_in_page_space() {
    let n: u64 = 3000;
    let keyed = |name: &str, pk: bool| TableDef {
        name: name.into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("k", ColumnType::Integer),
            Column::not_null("c", ColumnType::Char(120)),
            Column::not_null("pad", ColumnType::Char(60)),
        ],
        primary_key: if pk { vec![0] } else { Vec::new() },
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
    };
    for design in designs() {
        let db = open_db(design.clone(), 1024);
        let with = db.create_table(keyed("with_pk", true)).unwrap();
        let without = db.create_table(keyed("without_pk", false)).unwrap();
        for t in [with, without] {
            let mut tx = db.begin();
            for i in 0..n as i32 {
                tx.insert(
                    t,
                    vec![
                        Value::Integer(i),
                        Value::Integer(i),
                        Value::Text(format!("c{i}")),
                        Value::Text("p".into()),
                    ],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        }
        let (pages_with, idx_with) = db.table_pages(with).unwrap();
        let (pages_without, idx_without) = db.table_pages(without).unwrap();
        assert_eq!(idx_without, 0, "{}", design.name);
        if design.name == "postgres" {
            assert_eq!(pages_with, pages_without, "a heap does not change");
            assert!(idx_with > 0, "the keyed heap has its primary-key index");
            continue;
        }
        let stats = |t| {
            BTree::open(
                db.storage().pool().clone(),
                db.relations(t).unwrap().table,
                BTreeConfig::innodb(),
            )
            .unwrap()
            .stats()
            .unwrap()
        };
        let (sw, so) = (stats(with), stats(without));
        assert_eq!(sw.entries, n);
        assert_eq!(so.entries, n);
        assert_eq!(
            so.leaf_used_bytes - sw.leaf_used_bytes,
            6 * n,
            "{sw:?} {so:?}"
        );
        assert!(
            pages_without > pages_with,
            "{pages_without} pages without a key, {pages_with} with"
        );
    }
}

/// InnoDB clusters a table without a primary key on its first unique index over NOT NULL
/// columns (MariaDB declares it the primary key); the innodb design does not model that
/// and refuses such a table instead of diverging silently. A unique index with a nullable
/// column leaves the table on DB_ROW_ID, as in MariaDB.
#[test]
fn innodb_refuses_a_unique_not_null_index_standing_in_for_a_primary_key() {
    let db = open_db(DesignConfig::innodb(), 64);
    let mut def = history_def("u");
    def.indexes[0].unique = true;
    match db.create_table(def.clone()) {
        Err(Error::Catalog(m)) => {
            assert!(m.contains("\"u\"") && m.contains("not model"), "{m}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let mut nullable = history_def("v");
    nullable.indexes[0].unique = true;
    nullable.indexes[0].columns = vec![2];
    let t = db.create_table(nullable).unwrap();
    let mut tx = db.begin();
    tx.insert(t, hrow(1, 1)).unwrap();
    tx.insert(t, vec![Value::Integer(2), Value::BigInt(2), Value::Null])
        .unwrap();
    tx.insert(t, vec![Value::Integer(3), Value::BigInt(3), Value::Null])
        .unwrap();
    match tx.insert(t, hrow(4, 1)) {
        Err(Error::Txn(TxnError::DuplicateKey { index, .. })) => assert_eq!(index, "v_c_id"),
        other => panic!("expected a duplicate key, got {other:?}"),
    }
    // The postgres design takes the same table as it is: a heap and a unique index.
    let pg = open_db(DesignConfig::postgres(), 64);
    pg.create_table(def).unwrap();
}
