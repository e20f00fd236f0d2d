//! Several history partitions (`history_partitions`, rotated by `history_partition_limit`,
//! MariaDB `PARTITION BY SYSTEM_TIME LIMIT n`) and `DROP PARTITION` of a history
//! partition, on the innodb preset (the postgres preset has no partitions BY SYSTEM_TIME:
//! its switches are refused): each history-writing statement fills the working partition
//! until it holds LIMIT rows, the last takes the rest; a dropped partition's rows are gone
//! from every read while the others' stay; the current partition and the last history
//! partition cannot be dropped; the drop survives a crash. Rotation by INTERVAL
//! (`history_partition_interval_s` from `history_partition_starts_unix_s`, MariaDB
//! `PARTITION BY SYSTEM_TIME INTERVAL n STARTS t`): history goes to the partition whose
//! interval holds the statement's start, and only the oldest partition can be dropped.

mod common;
use common::*;
use mvcclab_engine::btree::ScanDirection;
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, Row, TableDef, Value};
use mvcclab_engine::db::{system_time_now_us, Assign, Database, SystemTime, TableId};
use mvcclab_engine::design::{DesignConfig, HistoryStorage, SystemVersioning};
use mvcclab_engine::device::CrashDevice;
use mvcclab_engine::Error;
use std::ops::Bound;
use std::sync::Arc;

/// The innodb preset versioned by timestamp with `parts` history partitions of LIMIT
/// `limit` rows.
fn partitioned(parts: u16, limit: u64) -> DesignConfig {
    DesignConfig {
        system_versioning: SystemVersioning::Timestamp,
        history_storage: HistoryStorage::Partition,
        history_partitions: parts,
        history_partition_limit: limit,
        ..DesignConfig::innodb()
    }
}

/// `items(id PK, qty, tag)` with a non-unique index on `tag`.
fn def() -> TableDef {
    TableDef {
        name: "items".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("qty", ColumnType::BigInt),
            Column::not_null("tag", ColumnType::Varchar(16)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "items_tag".into(),
            columns: vec![2],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

/// Every row of relation `t` (`FOR SYSTEM_TIME ALL`), in key order.
fn all(db: &Database, t: TableId) -> Vec<Row> {
    scan(db, t, SystemTime::All)
}

fn scan(db: &Database, t: TableId, when: SystemTime) -> Vec<Row> {
    let mut tx = db.begin();
    let rows = tx
        .scan_system_time(
            t,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
            usize::MAX,
            when,
        )
        .unwrap();
    tx.commit().unwrap();
    rows
}

/// Rows in each history partition of `items` (by relation name `items#p0`, ...).
fn partition_rows(db: &Database, parts: u16) -> Vec<usize> {
    (0..parts)
        .map(|i| {
            let h = db.table_id(&format!("items#p{i}")).unwrap();
            all(db, h).len()
        })
        .collect()
}

/// One autocommit UPDATE of `id`'s qty.
fn bump(db: &Database, t: TableId, ids: &[i32]) {
    let mut tx = db.begin();
    for &id in ids {
        assert!(tx
            .update(t, &[Value::Integer(id)], &[Assign::Add(1, 1)])
            .unwrap());
    }
    tx.commit().unwrap();
}

/// The ids (and qty) a read returns, for comparing states.
fn ids_qty(rows: &[Row]) -> Vec<(i32, i64)> {
    rows.iter()
        .map(|r| match (&r[0], &r[1]) {
            (Value::Integer(i), Value::BigInt(q)) => (*i, *q),
            other => panic!("row of another shape: {other:?}"),
        })
        .collect()
}

#[test]
fn history_rotates_by_limit_and_a_dropped_partition_is_gone() {
    let parts = 3;
    let dev = Arc::new(CrashDevice::new());
    let db = Database::open(crash_db_config(partitioned(parts, 2), &dev)).unwrap();
    let t = db.create_table(def()).unwrap();
    for i in 0..parts {
        assert!(db.table_id(&format!("items#p{i}")).is_ok());
    }
    let mut tx = db.begin();
    for id in 1..=3 {
        tx.insert(
            t,
            vec![Value::Integer(id), Value::BigInt(0), Value::text("a")],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let t_insert = system_time_now_us();

    // One statement per transaction: p0 takes two history rows, then p1.
    bump(&db, t, &[1]);
    bump(&db, t, &[2]);
    assert_eq!(partition_rows(&db, parts), vec![2, 0, 0]);
    bump(&db, t, &[3]);
    assert_eq!(partition_rows(&db, parts), vec![2, 1, 0]);
    let t_third = system_time_now_us();
    // Each statement of a transaction picks its partition (vers_set_hist_part per
    // statement, its own uncommitted rows counted): p1 fills, then p2.
    bump(&db, t, &[1, 2, 3]);
    assert_eq!(partition_rows(&db, parts), vec![2, 2, 2]);
    // The last history partition takes the rest (MariaDB warns WARN_VERS_PART_FULL).
    bump(&db, t, &[1, 2]);
    assert_eq!(partition_rows(&db, parts), vec![2, 2, 4]);
    // A rolled-back statement's history row is not counted.
    let mut tx = db.begin();
    tx.update(t, &[Value::Integer(3)], &[Assign::Add(1, 1)])
        .unwrap();
    tx.abort().unwrap();
    assert_eq!(partition_rows(&db, parts), vec![2, 2, 4]);
    let t_before_drop = system_time_now_us();

    let before_all = all(&db, t);
    assert_eq!(before_all.len(), 3 + 8);
    // AS OF after the inserts: the three original versions (ids 1 and 2 in p0, 3 in p1).
    assert_eq!(
        ids_qty(&scan(&db, t, SystemTime::AsOf(t_insert))),
        vec![(1, 0), (2, 0), (3, 0)]
    );
    let as_of_third = ids_qty(&scan(&db, t, SystemTime::AsOf(t_third)));
    assert_eq!(as_of_third, vec![(1, 1), (2, 1), (3, 1)]);
    let current = ids_qty(&scan(&db, t, SystemTime::Current));

    // The current partition and unknown names are refused.
    for (name, want) in [
        (
            "pn",
            "must have at least one HISTORY and exactly one last CURRENT",
        ),
        ("p7", "error in list of partitions to DROP"),
    ] {
        let e = db.drop_partition(t, name).unwrap_err();
        assert!(
            matches!(&e, Error::Catalog(m) if m.contains(want)),
            "{name}: {e}"
        );
    }
    // Dropping p0 removes its two rows (ids 1 and 2 as inserted) and nothing else.
    assert_eq!(db.drop_partition(t, "p0").unwrap(), 2);
    let e = db.drop_partition(t, "p0").unwrap_err();
    assert!(e.to_string().contains("error in list of partitions"), "{e}");
    assert_eq!(all(&db, t).len(), before_all.len() - 2);
    assert_eq!(
        ids_qty(&scan(&db, t, SystemTime::AsOf(t_insert))),
        vec![(3, 0)]
    );
    assert_eq!(
        ids_qty(&scan(&db, t, SystemTime::AsOf(t_third))),
        as_of_third
    );
    assert_eq!(ids_qty(&scan(&db, t, SystemTime::Current)), current);
    let mut tx = db.begin();
    let by_tag = tx
        .get_by_index_system_time(t, 0, &[Value::text("a")], SystemTime::AsOf(t_insert))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(ids_qty(&by_tag), vec![(3, 0)]);

    // History goes on into the remaining partitions: p1 is full, so the last one.
    bump(&db, t, &[3]);
    assert_eq!(all(&db, db.table_id("items#p2").unwrap()).len(), 5);
    let after = ids_qty(&all(&db, t));

    // The drop survives a crash; the partitions are counted again after it.
    db.storage().wal().flush_all().unwrap();
    drop(db);
    dev.power_cut(7);
    let db = Database::open(crash_db_config(partitioned(parts, 2), &dev)).unwrap();
    let t = db.table_id("items").unwrap();
    assert_eq!(ids_qty(&all(&db, t)), after);
    assert_eq!(
        ids_qty(&scan(&db, t, SystemTime::AsOf(t_insert))),
        vec![(3, 0)]
    );
    assert!(ids_qty(&scan(&db, t, SystemTime::AsOf(t_before_drop))).len() == 3);
    let e = db.drop_partition(t, "p0").unwrap_err();
    assert!(e.to_string().contains("error in list of partitions"), "{e}");
    // p1 can go; then p2 is the last history partition and stays.
    assert_eq!(db.drop_partition(t, "p1").unwrap(), 2);
    let e = db.drop_partition(t, "p2").unwrap_err();
    assert!(e.to_string().contains("at least one HISTORY"), "{e}");
    bump(&db, t, &[1]);
    assert_eq!(all(&db, db.table_id("items#p2").unwrap()).len(), 6);
    let (_, problems) = db.check_indexes(t).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
}

/// The innodb preset versioned by timestamp with `parts` history partitions rotated by
/// an INTERVAL of `interval_s` seconds from `starts` (seconds since 1970).
fn by_interval(parts: u16, interval_s: u64, starts: i64) -> DesignConfig {
    DesignConfig {
        history_partition_interval_s: interval_s,
        history_partition_starts_unix_s: starts,
        ..partitioned(parts, 0)
    }
}

fn unix_now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Rotation by INTERVAL (`PARTITION BY SYSTEM_TIME INTERVAL 1 HOUR STARTS t`): history
/// goes to the partition whose hour holds the statement's start — p0 when STARTS is
/// ahead, p1 when p0's hour has passed, the last when every hour has passed; only the
/// oldest partition can be dropped (ER_VERS_DROP_PARTITION_INTERVAL), and after it is the
/// others keep their hours. No waiting: STARTS is placed around the clock.
#[test]
fn history_rotates_by_interval_and_only_the_oldest_partition_drops() {
    let hour = 3600;
    let now = unix_now_s();
    for (starts, want) in [
        (now + hour, vec![2, 0, 0]),
        (now - hour - 60, vec![0, 2, 0]),
        (now - 10 * hour, vec![0, 0, 2]),
    ] {
        let db = open_db(by_interval(3, hour as u64, starts), 256);
        let t = db.create_table(def()).unwrap();
        let mut tx = db.begin();
        tx.insert(
            t,
            vec![Value::Integer(1), Value::BigInt(0), Value::text("a")],
        )
        .unwrap();
        tx.commit().unwrap();
        bump(&db, t, &[1]);
        bump(&db, t, &[1]);
        assert_eq!(
            partition_rows(&db, 3),
            want,
            "STARTS now{:+}s",
            starts - now
        );
        if want[1] == 2 {
            let e = db.drop_partition(t, "p1").unwrap_err().to_string();
            assert!(e.contains("oldest"), "{e}");
            db.drop_partition(t, "p0").unwrap();
            // p1 keeps its hour: history still goes there.
            bump(&db, t, &[1]);
            let h1 = db.table_id("items#p1").unwrap();
            assert_eq!(all(&db, h1).len(), 3);
            assert_eq!(scan(&db, t, SystemTime::All).len(), 4);
        }
    }
}

#[test]
fn partition_switches_are_refused_where_they_do_not_apply() {
    // Several partitions need a LIMIT or an INTERVAL.
    let e = partitioned(3, 0).validate().unwrap_err().to_string();
    assert!(e.contains("history_partition_limit"), "{e}");
    // No partitions in the postgres preset, nor with history in the same index.
    for base in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let d = DesignConfig {
            system_versioning: SystemVersioning::Timestamp,
            history_partitions: 2,
            history_partition_limit: 10,
            ..base
        };
        let e = d.validate().unwrap_err().to_string();
        assert!(
            e.contains("history_partitions") && e.contains("history_storage"),
            "{e}"
        );
    }
    let e = partitioned(0, 0).validate().unwrap_err().to_string();
    assert!(e.contains("history_partitions must be"), "{e}");
    // LIMIT or INTERVAL, not both; an INTERVAL needs its STARTS and STARTS its INTERVAL.
    let both = DesignConfig {
        history_partition_limit: 5,
        ..by_interval(3, 60, 1_700_000_000)
    };
    let e = both.validate().unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
    let e = by_interval(3, 60, 0).validate().unwrap_err().to_string();
    assert!(e.contains("STARTS"), "{e}");
    let e = by_interval(3, 0, 1_700_000_000)
        .validate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("STARTS needs an INTERVAL"), "{e}");
    assert!(by_interval(3, 60, 1_700_000_000).validate().is_ok());
    // DROP PARTITION of a table without partitions BY SYSTEM_TIME, on both presets.
    for base in [DesignConfig::postgres(), DesignConfig::innodb()] {
        let name = base.name.clone();
        let db = open_db(
            DesignConfig {
                system_versioning: SystemVersioning::Timestamp,
                ..base
            },
            64,
        );
        let t = db.create_table(def()).unwrap();
        let e = db.drop_partition(t, "p_hist").unwrap_err();
        assert!(
            matches!(&e, Error::Catalog(m) if m.contains("partitioned BY SYSTEM_TIME")),
            "{name}: {e}"
        );
    }
    // One history partition (the default): it is the last, so it cannot be dropped.
    let db = open_db(partitioned(1, 0), 64);
    let t = db.create_table(def()).unwrap();
    let e = db.drop_partition(t, "p_hist").unwrap_err();
    assert!(e.to_string().contains("at least one HISTORY"), "{e}");
    let e = db.drop_partition(t, "p_cur").unwrap_err();
    assert!(e.to_string().contains("at least one HISTORY"), "{e}");
}
