//! Sequential and primary-key range scans that decode only the columns a plan needs
//! (`Transaction::seq_scan_columns`, `Transaction::scan_columns`, PostgreSQL's `slot_deform_heap_tuple` up to the last
//! attribute needed, InnoDB's `row_sel_store_mysql_rec` over the template's fields), in both
//! presets: the same rows as the whole-row scan with the other columns NULL, also for a
//! row whose visible version is rebuilt from undo, the same blocks under `seq_scan` and
//! `range_scan`, and
//! a column past the table's width refused by name.

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{Column, ColumnType, Decimal, Row, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, TableId};
use mvcclab_engine::stats::{Cause, CauseCounts};
use std::ops::Bound;

fn def() -> TableDef {
    TableDef {
        name: "items".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null(
                "qty",
                ColumnType::Decimal {
                    precision: 15,
                    scale: 2,
                },
            ),
            Column::nullable("note", ColumnType::Varchar(40)),
            Column::not_null("shipped", ColumnType::Date),
            Column::not_null("big", ColumnType::BigInt),
            Column::not_null("comment", ColumnType::Text),
        ],
        primary_key: vec![0],
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
    }
}

fn row(i: i32) -> Row {
    vec![
        Value::Integer(i),
        Value::Decimal(
            format!("{}.{:02}", i % 50, i % 100)
                .parse::<Decimal>()
                .unwrap(),
        ),
        if i % 7 == 0 {
            Value::Null
        } else {
            Value::Text(format!("note {i}"))
        },
        Value::Date(i % 3000),
        Value::BigInt(i64::from(i) * 1_000_003),
        Value::Text("x".repeat((i % 90) as usize)),
    ]
}

const ROWS: i32 = 12_000;

fn loaded(design: mvcclab_engine::design::DesignConfig) -> (Database, TableId) {
    let db = open_db(design, 32);
    let t = db.create_table(def()).unwrap();
    let mut tx = db.begin();
    for i in 0..ROWS {
        tx.insert(t, row(i)).unwrap();
    }
    tx.commit().unwrap();
    (db, t)
}

fn scan(db: &Database, t: TableId, cols: Option<&[usize]>) -> (Vec<Row>, CauseCounts) {
    let before = db.storage().stats().snapshot();
    let mut tx = db.begin();
    let mut rows = Vec::new();
    let mut f = |r: Row| {
        rows.push(r);
        Ok(true)
    };
    match cols {
        None => tx.seq_scan(t, &mut f).unwrap(),
        Some(c) => tx.seq_scan_columns(t, c, &mut f).unwrap(),
    }
    tx.commit().unwrap();
    let d = db.storage().stats().snapshot().delta(&before);
    (rows, d.cause(Cause::SeqScan))
}

fn range(db: &Database, t: TableId, cols: Option<&[usize]>) -> (Vec<Row>, CauseCounts) {
    let before = db.storage().stats().snapshot();
    let mut tx = db.begin();
    let (lo, hi) = ([Value::Integer(100)], [Value::Integer(ROWS - 100)]);
    let (lo, hi) = (Bound::Included(&lo[..]), Bound::Excluded(&hi[..]));
    let rows = match cols {
        None => tx.scan(t, lo, hi, ScanDirection::Forward, usize::MAX),
        Some(c) => tx.scan_columns(t, lo, hi, ScanDirection::Forward, usize::MAX, c),
    }
    .unwrap();
    tx.commit().unwrap();
    let d = db.storage().stats().snapshot().delta(&before);
    (rows, d.cause(Cause::RangeScan))
}

fn masked(rows: &[Row], cols: &[usize]) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, v)| {
                    if cols.contains(&c) {
                        v.clone()
                    } else {
                        Value::Null
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn projected_scans_return_the_needed_columns_and_read_the_same_blocks() {
    for design in designs() {
        let name = design.name.clone();
        let (db, t) = loaded(design);
        // Warm-up: hint bits are set by the first scan and the pages they dirtied are
        // written out by the second, so the scans below are alike.
        scan(&db, t, None);
        scan(&db, t, None);
        let (all, all_counts) = scan(&db, t, None);
        assert_eq!(all.len(), ROWS as usize, "{name}");
        assert!(
            all_counts.buffer_misses > 0,
            "{name}: the table is larger than the pool, the scan reads pages in"
        );
        for cols in [&[][..], &[0], &[1, 3], &[5], &[2, 0], &[0, 1, 2, 3, 4, 5]] {
            let (got, counts) = scan(&db, t, Some(cols));
            assert_eq!(got, masked(&all, cols), "{name} {cols:?}");
            assert_eq!(counts, all_counts, "{name} {cols:?}: blocks of the scan");
        }
        assert_eq!(
            scan(&db, t, None).1,
            all_counts,
            "{name}: the whole-row scan again"
        );
        // The pool's state after a range scan is that of the next: warm up to it.
        range(&db, t, None);
        range(&db, t, None);
        let (all, all_counts) = range(&db, t, None);
        assert_eq!(all.len(), ROWS as usize - 200, "{name}");
        for cols in [&[][..], &[1], &[4, 2]] {
            let (got, counts) = range(&db, t, Some(cols));
            assert_eq!(got, masked(&all, cols), "{name} {cols:?}: range");
            assert_eq!(
                counts, all_counts,
                "{name} {cols:?}: blocks of the range scan"
            );
        }
        db.close().unwrap();
    }
}

#[test]
fn a_projected_scan_sees_the_version_its_snapshot_sees() {
    for design in designs() {
        let name = design.name.clone();
        let (db, t) = loaded(design);
        let mut reader = db.begin_with(mvcclab_engine::mvcc::Isolation::RepeatableRead);
        let mut before = Vec::new();
        reader
            .seq_scan(t, &mut |r| {
                before.push(r);
                Ok(true)
            })
            .unwrap();
        // A committed update the reader's snapshot must not see (innodb: rebuilt from undo).
        let mut w = db.begin();
        for i in 10..20 {
            w.update(
                t,
                &[Value::Integer(i)],
                &[Assign::Set(1, Value::Decimal("99.99".parse().unwrap()))],
            )
            .unwrap();
        }
        w.commit().unwrap();
        let cols = [1usize, 3];
        let mut got = Vec::new();
        reader
            .seq_scan_columns(t, &cols, &mut |r| {
                got.push(r);
                Ok(true)
            })
            .unwrap();
        reader.commit().unwrap();
        let key = |r: &Row| format!("{:?}{:?}", r[1], r[3]);
        let mut want: Vec<String> = masked(&before, &cols).iter().map(key).collect();
        let mut got: Vec<String> = got.iter().map(key).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
        db.close().unwrap();
    }
}

#[test]
fn a_column_past_the_table_is_refused_by_name() {
    for design in designs() {
        let (db, t) = loaded(design);
        let mut tx = db.begin();
        let e = tx.seq_scan_columns(t, &[6], &mut |_| Ok(true)).unwrap_err();
        assert!(e.to_string().contains("column 6 of table items"), "{e}");
        drop(tx);
        db.close().unwrap();
    }
}
