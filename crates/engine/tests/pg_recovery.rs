//! Crash recovery of the `postgres` preset on the crash-simulation device: committed work
//! survives a power cut, uncommitted work does not even when its pages reached the device,
//! a clean close reopens with everything, a torn page is repaired from a full-page image,
//! and with torn-page protection off it is detected by its checksum, never read silently.

mod common;

use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{Assign, Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::device::{CrashConfig, CrashDevice, Device};
use mvcclab_engine::error::StorageError;
use mvcclab_engine::storage::{Backing, CheckpointConfig, TornPageProtection};
use mvcclab_engine::Error;
use std::sync::Arc;

fn config(design: DesignConfig, dev: &Arc<CrashDevice>) -> DatabaseConfig {
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.backing = Backing::shared(dev.clone() as Arc<dyn Device>);
    cfg.storage.buffer_pool.frames = 64;
    cfg.storage.buffer_pool.page_cleaner.enabled = false;
    cfg.storage.checkpoint = CheckpointConfig {
        interval_ms: None,
        wal_bytes: None,
    };
    cfg.storage.wal_writer_interval_ms = None;
    cfg.storage.os_cache.size_bytes = 0;
    cfg.vacuum.autovacuum = false;
    cfg
}

fn device(survive: f64, tear: f64) -> Arc<CrashDevice> {
    Arc::new(
        CrashDevice::with_config(CrashConfig {
            survive_probability: survive,
            tear_probability: tear,
        })
        .unwrap(),
    )
}

fn row(id: i32, balance: i64) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::BigInt(balance),
        Value::Text(format!("owner{}", id % 7)),
    ]
}

fn balance(db: &Database, id: i32) -> Option<i64> {
    let t = db.table_id("accounts").unwrap();
    let mut tx = db.begin();
    let r = tx.get(t, &[Value::Integer(id)]).unwrap();
    tx.commit().unwrap();
    r.map(|r| match r[1] {
        Value::BigInt(v) => v,
        _ => panic!("balance is not a bigint: {r:?}"),
    })
}

/// 200 accounts with balance 100, committed and checkpointed.
fn loaded(cfg: &DatabaseConfig) -> Database {
    let db = Database::open(cfg.clone()).unwrap();
    let t = db.create_table(common::accounts_def()).unwrap();
    let mut tx = db.begin();
    for id in 1..=200 {
        tx.insert(t, row(id, 100)).unwrap();
    }
    tx.commit().unwrap();
    db.storage().checkpoint().unwrap();
    db
}

#[test]
fn committed_work_survives_and_uncommitted_work_is_gone_even_on_the_device() {
    for seed in 0..6u64 {
        let dev = device(0.5, 0.5);
        let cfg = config(DesignConfig::postgres(), &dev);
        let db = loaded(&cfg);
        let t = db.table_id("accounts").unwrap();
        // Committed after the checkpoint: updates, an insert, a delete.
        let mut tx = db.begin();
        for id in 1..=50 {
            tx.update(t, &[Value::Integer(id)], &[Assign::Add(1, 5)])
                .unwrap();
        }
        tx.insert(t, row(1000, 7)).unwrap();
        tx.delete(t, &[Value::Integer(200)]).unwrap();
        tx.commit().unwrap();
        // Uncommitted, with its pages made durable by a checkpoint while it is open.
        let mut open = db.begin();
        for id in 51..=100 {
            open.update(t, &[Value::Integer(id)], &[Assign::Add(1, 1000)])
                .unwrap();
        }
        open.insert(t, row(2000, 1)).unwrap();
        open.delete(t, &[Value::Integer(199)]).unwrap();
        db.storage().checkpoint().unwrap();
        std::mem::forget(open); // the process dies with it: no abort record
        drop(db);
        dev.power_cut(seed);

        let db = Database::open(cfg.clone()).unwrap();
        let rep = db.recovery_report().clone();
        assert!(rep.records_replayed > 0, "seed {seed}: {rep:?}");
        assert!(rep.transactions_aborted >= 1, "seed {seed}: {rep:?}");
        for id in 1..=50 {
            assert_eq!(
                balance(&db, id),
                Some(105),
                "seed {seed}, committed account {id}"
            );
        }
        for id in 51..=100 {
            assert_eq!(
                balance(&db, id),
                Some(100),
                "seed {seed}, uncommitted account {id}"
            );
        }
        assert_eq!(balance(&db, 1000), Some(7), "seed {seed}");
        assert_eq!(
            balance(&db, 2000),
            None,
            "seed {seed}: uncommitted insert visible"
        );
        assert_eq!(
            balance(&db, 200),
            None,
            "seed {seed}: committed delete undone"
        );
        assert_eq!(
            balance(&db, 199),
            Some(100),
            "seed {seed}: uncommitted delete applied"
        );
        let t = db.table_id("accounts").unwrap();
        let (entries, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "seed {seed}: {problems:?}");
        assert!(entries >= 2 * 200, "seed {seed}: {entries} index entries");
        // The index on owner finds every live row.
        let mut tx = db.begin();
        let owners = tx
            .get_by_index(t, 0, &[Value::Text("owner3".into())])
            .unwrap();
        tx.commit().unwrap();
        let want = (1..=200)
            .chain([1000])
            .filter(|id| id % 7 == 3 && *id != 200)
            .count();
        assert_eq!(owners.len(), want, "seed {seed}");
        // Writes go on after recovery, and a second crash recovers them too.
        let mut tx = db.begin();
        tx.update(t, &[Value::Integer(1)], &[Assign::Add(1, 1)])
            .unwrap();
        tx.commit().unwrap();
        drop(db);
        dev.power_cut(seed + 100);
        let db = Database::open(cfg.clone()).unwrap();
        assert_eq!(
            balance(&db, 1),
            Some(106),
            "seed {seed}, after a second crash"
        );
        assert_eq!(
            balance(&db, 51),
            Some(100),
            "seed {seed}, after a second crash"
        );
    }
}

#[test]
fn a_clean_close_reopens_with_every_table_and_row() {
    let dev = device(0.0, 0.0);
    let cfg = config(DesignConfig::postgres(), &dev);
    let db = loaded(&cfg);
    let t = db.table_id("accounts").unwrap();
    let mut tx = db.begin();
    tx.update(t, &[Value::Integer(3)], &[Assign::Add(1, 1)])
        .unwrap();
    tx.commit().unwrap();
    db.close().unwrap();
    // Nothing unsynced is left for a cut to lose.
    dev.power_cut(1);
    let db = Database::open(cfg).unwrap();
    assert_eq!(
        db.recovery_report().records_replayed,
        1,
        "the shutdown checkpoint only"
    );
    assert_eq!(balance(&db, 3), Some(101));
    assert_eq!(balance(&db, 4), Some(100));
    assert!(
        db.create_table(common::accounts_def()).is_err(),
        "the catalog came back"
    );
}

#[test]
fn a_database_is_reopened_only_with_its_own_layout() {
    let dev = device(0.0, 0.0);
    let db = loaded(&config(DesignConfig::postgres(), &dev));
    db.close().unwrap();
    // Same page size and WAL format, so that the control file agrees and the catalog speaks.
    let mut innodb = DesignConfig::innodb();
    innodb.page_size = DesignConfig::postgres().page_size;
    innodb.wal_record_format = DesignConfig::postgres().wal_record_format;
    innodb.torn_page_protection = DesignConfig::postgres().torn_page_protection;
    let mut cfg = config(innodb, &dev);
    cfg.storage.wal.block_bytes = DatabaseConfig::new(DesignConfig::postgres())
        .storage
        .wal
        .block_bytes;
    match Database::open(cfg) {
        Err(Error::InvalidConfig(m)) => assert!(m.contains("Heap/AppendO2n"), "{m}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("an innodb design opened a postgres database"),
    }
}

/// Changes every heap page after the checkpoint and writes them to the device unsynced, then
/// cuts the power with every write kept but torn.
fn torn_heap_pages(protection: TornPageProtection) -> (Arc<CrashDevice>, DatabaseConfig) {
    let dev = device(1.0, 1.0);
    let mut design = DesignConfig::postgres();
    design.torn_page_protection = protection;
    let cfg = config(design, &dev);
    let db = loaded(&cfg);
    let t = db.table_id("accounts").unwrap();
    let mut tx = db.begin();
    for id in 1..=200 {
        tx.update(t, &[Value::Integer(id)], &[Assign::Add(1, 1)])
            .unwrap();
    }
    tx.commit().unwrap();
    db.storage().pool().flush_all().unwrap(); // written, not synced
    drop(db);
    let cut = dev.power_cut(9);
    assert!(cut.writes_torn > 0, "{cut:?}");
    (dev, cfg)
}

#[test]
fn torn_pages_are_restored_from_full_page_images() {
    let (_dev, cfg) = torn_heap_pages(TornPageProtection::FullPageWrites);
    let db = Database::open(cfg).unwrap();
    assert!(db.recovery_report().full_page_images_restored > 0);
    for id in 1..=200 {
        assert_eq!(balance(&db, id), Some(101), "account {id}");
    }
}

#[test]
fn without_protection_a_torn_page_is_reported_naming_its_relation_and_block() {
    let (dev, cfg) = torn_heap_pages(TornPageProtection::None);
    let heap_rel = 16384; // the first relation: the table's heap
    match Database::open(cfg) {
        Err(Error::Storage(StorageError::ChecksumMismatch { page, .. })) => {
            assert!(page.rel >= heap_rel, "{page}");
            let msg = Error::Storage(StorageError::ChecksumMismatch {
                page,
                got: 0,
                expected: 1,
            })
            .to_string();
            assert!(msg.contains(&page.to_string()), "{msg}");
        }
        Err(e) => panic!("expected a checksum mismatch, got: {e}"),
        Ok(db) => {
            // Redo may not need every torn page; reading one must then fail, never return
            // a wrong balance.
            for id in 1..=200 {
                let t = db.table_id("accounts").unwrap();
                let mut tx = db.begin();
                match tx.get(t, &[Value::Integer(id)]) {
                    Ok(Some(r)) => assert_eq!(r[1], Value::BigInt(101), "account {id}"),
                    Ok(None) => panic!("account {id} silently missing"),
                    Err(Error::Storage(StorageError::ChecksumMismatch { .. })) => {}
                    Err(e) => panic!("account {id}: unexpected error {e}"),
                }
            }
        }
    }
    let _ = dev;
}

/// Recovery reads the WAL from the redo pointer once: `Wal::open` decodes it to find the
/// end and hands the records to redo (xlogrecovery.c reads each record once), counted to
/// the cause `recovery`.
#[test]
fn recovery_reads_the_wal_once() {
    let dev = device(1.0, 0.0);
    let mut cfg = config(DesignConfig::postgres(), &dev);
    cfg.storage.nvme.trace = true;
    let db = loaded(&cfg);
    let t = db.table_id("accounts").unwrap();
    for round in 0..20 {
        let mut tx = db.begin();
        for id in 1..=200 {
            tx.update(t, &[Value::Integer(id)], &[Assign::Add(1, round)])
                .unwrap();
        }
        tx.commit().unwrap();
    }
    let redo_end = db.storage().wal().insert_lsn().0;
    let redo_start = db.storage().wal().redo_lsn().0;
    drop(db);
    dev.power_cut(1);
    let db = Database::open(cfg).unwrap();
    assert!(db.recovery_report().records_replayed > 4000);
    let wal_reads: Vec<_> = db
        .storage()
        .vfs()
        .nvme()
        .take_trace()
        .into_iter()
        .filter(|e| {
            e.kind == mvcclab_engine::device::IoKind::Read
                && mvcclab_engine::device::file_ids::is_wal(e.file)
        })
        .collect();
    let bytes: u64 = wal_reads.iter().map(|e| e.len_bytes as u64).sum();
    let wal_bytes = redo_end - redo_start;
    assert!(wal_bytes > 256 << 10, "{wal_bytes} bytes of WAL");
    // One pass, plus the partial last block re-read to continue it and the segment's tail
    // checked for stale bytes: a few blocks, not a second pass.
    assert!(
        bytes < wal_bytes + (64 << 10),
        "{bytes} bytes of WAL read for {wal_bytes} bytes of WAL"
    );
    assert!(wal_reads
        .iter()
        .all(|e| e.cause == mvcclab_engine::stats::Cause::Recovery));
}

#[test]
fn posting_lists_made_after_the_checkpoint_survive_a_crash() {
    for seed in 0..3u64 {
        let dev = device(0.5, 0.5);
        let cfg = config(DesignConfig::postgres(), &dev);
        let db = loaded(&cfg);
        let t = db.table_id("accounts").unwrap();
        // After the checkpoint: 3000 rows over 7 owners (dedup passes), then deletes,
        // vacuum (TIDs out of posting lists) and inserts into the freed line pointers
        // (TIDs inside posting lists: swaps).
        let mut live: std::collections::BTreeSet<i32> = (1..=200).collect();
        let mut tx = db.begin();
        for id in 1001..=4000 {
            tx.insert(t, row(id, 1)).unwrap();
            live.insert(id);
        }
        tx.commit().unwrap();
        let mut tx = db.begin();
        for id in (1001..=4000).step_by(3) {
            assert!(tx.delete(t, &[Value::Integer(id)]).unwrap());
            live.remove(&id);
        }
        tx.commit().unwrap();
        db.gc(t).unwrap();
        let mut tx = db.begin();
        for id in 5001..=5600 {
            tx.insert(t, row(id, 2)).unwrap();
            live.insert(id);
        }
        tx.commit().unwrap();
        assert!(
            db.table_stats(t).unwrap().index_dedup_passes > 0,
            "seed {seed}"
        );
        drop(db);
        dev.power_cut(seed);

        let db = Database::open(cfg.clone()).unwrap();
        let t = db.table_id("accounts").unwrap();
        let (_, problems) = db.check_indexes(t).unwrap();
        assert!(problems.is_empty(), "seed {seed}: {problems:?}");
        let owner_index = mvcclab_engine::btree::BTree::open(
            db.storage().pool().clone(),
            db.relations(t).unwrap().indexes[0],
            mvcclab_engine::btree::BTreeConfig::postgres(),
        )
        .unwrap()
        .verify()
        .unwrap();
        assert!(
            owner_index.posting_entries > 0,
            "seed {seed}: {owner_index:?}"
        );
        let mut tx = db.begin();
        for o in 0..7 {
            let got = common::ids_by_index(&mut tx, t, 0, &[Value::Text(format!("owner{o}"))]);
            let want: Vec<i32> = live.iter().copied().filter(|id| id % 7 == o).collect();
            assert_eq!(got, want, "seed {seed}, owner{o}");
        }
        tx.commit().unwrap();
    }
}
