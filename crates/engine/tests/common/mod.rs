//! Helpers shared by the integration tests (included with `mod common;`).
#![allow(dead_code)]

use mvcclab_engine::buffer::WritePageGuard;
use mvcclab_engine::storage::StorageConfig;
use mvcclab_engine::testkit::{fill_and_log, filled_value};
use mvcclab_engine::wal::Lsn;
use mvcclab_engine::Storage;

/// A configuration with no background threads and `frames` frames.
pub fn quiet_config(frames: usize) -> StorageConfig {
    StorageConfig::without_background(frames)
}

/// Fills the page with `v` (outside its hole) and WAL-logs it.
pub fn put(s: &Storage, g: &mut WritePageGuard<'_>, v: u8) -> Lsn {
    fill_and_log(s.wal(), g, v, false).unwrap()
}

/// The byte `put` wrote.
pub fn value(p: &[u8]) -> u8 {
    filled_value(p)
}

use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef};
use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;

/// The designs every MVCC test body runs for.
pub fn designs() -> Vec<DesignConfig> {
    vec![DesignConfig::postgres(), DesignConfig::innodb()]
}

/// A database of `design` with `frames` buffer frames, no autovacuum and no background
/// storage threads (tests decide when to vacuum and checkpoint).
pub fn open_db(design: DesignConfig, frames: usize) -> Database {
    Database::open(quiet_db_config(design, frames)).expect("open database")
}

/// The configuration [`open_db`] opens.
pub fn quiet_db_config(design: DesignConfig, frames: usize) -> DatabaseConfig {
    let mut cfg = DatabaseConfig::new(design);
    let quiet = StorageConfig::without_background(frames);
    cfg.storage.buffer_pool = quiet.buffer_pool.clone();
    cfg.storage.buffer_pool.replacer = DatabaseConfig::new(cfg.design.clone())
        .storage
        .buffer_pool
        .replacer;
    cfg.storage.checkpoint = quiet.checkpoint;
    cfg.storage.wal_writer_interval_ms = None;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.vacuum.autovacuum = false;
    cfg
}

/// [`quiet_db_config`] on the crash device `dev` (its pages shared with the reopened
/// database), with a 16 MiB OS cache at most and one purge thread, for crash-recovery
/// tests.
pub fn crash_db_config(
    design: DesignConfig,
    dev: &std::sync::Arc<mvcclab_engine::device::CrashDevice>,
) -> DatabaseConfig {
    let mut cfg = quiet_db_config(design, 256);
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(16 << 20);
    cfg.storage.backing = mvcclab_engine::storage::Backing::shared(dev.clone());
    cfg.purge.threads = 1;
    cfg
}

/// `accounts(id INTEGER PRIMARY KEY, balance BIGINT NOT NULL, owner VARCHAR(32) NOT NULL)`
/// with a non-unique index on owner.
pub fn accounts_def() -> TableDef {
    TableDef {
        name: "accounts".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("balance", ColumnType::BigInt),
            Column::not_null("owner", ColumnType::Varchar(32)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "accounts_owner".into(),
            columns: vec![2],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

/// sysbench's sbtest table named `name` (`TableDef::sbtest` under another name).
pub fn sbtest_def(name: &str) -> TableDef {
    TableDef {
        name: name.into(),
        ..TableDef::sbtest(1)
    }
}

use mvcclab_engine::clustered::PAGE_TYPE_RSEG;
use mvcclab_engine::page::{page_type, PageId};
use mvcclab_engine::wal::WalRecord;

/// The undo relation of an innodb database: the one whose block 0 is a rollback segment
/// header.
pub fn undo_relation(db: &Database) -> u32 {
    let pool = db.storage().pool();
    db.storage()
        .store()
        .relations()
        .into_iter()
        .find(|&rel| {
            db.storage().store().n_blocks(rel).unwrap() > 0
                && page_type(pool.fetch_read(PageId::new(rel, 0)).unwrap().data()) == PAGE_TYPE_RSEG
        })
        .expect("an undo relation")
}

/// Runs `redo` for every block of `rec` and one past the end (at least blocks 0 and 1) on
/// a copy of `page`: each must succeed or give `StorageError::Corrupted` naming the record's LSN,
/// never another error or a panic.
pub fn assert_redo_ok_or_corrupted(
    redo: fn(&WalRecord, usize, &mut [u8]) -> mvcclab_engine::Result<()>,
    rec: &WalRecord,
    page: &[u8],
) {
    for b in 0..rec.blocks.len().max(1) + 1 {
        let mut p = page.to_vec();
        match redo(rec, b, &mut p) {
            Ok(()) => {}
            Err(mvcclab_engine::Error::Storage(
                mvcclab_engine::error::StorageError::Corrupted { what },
            )) => {
                assert!(what.contains(&rec.lsn.to_string()), "{what}")
            }
            Err(e) => panic!("{e}"),
        }
    }
}

use mvcclab_engine::catalog::Value;
use mvcclab_engine::db::{TableId, Transaction};

/// The integer primary keys (column 0) of the rows `tx` finds in table `t` through its
/// secondary index `index` under `key`, ascending.
pub fn ids_by_index(tx: &mut Transaction, t: TableId, index: usize, key: &[Value]) -> Vec<i32> {
    let mut ids: Vec<i32> = tx
        .get_by_index(t, index, key)
        .unwrap()
        .iter()
        .map(|r| match r[0] {
            Value::Integer(id) => id,
            ref v => panic!("{v:?}"),
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// Two threads close a lock cycle on `db`: each begins a transaction, runs `lock` on its
/// first key (`keys.0`, resp. `keys.1`), waits for the other at a barrier, then runs
/// `lock` on the other's key and commits. Asserts that exactly one of the two is the
/// deadlock victim (`TxnError::Deadlock`) and that the other committed; returns the
/// victim's error message.
///
/// Panics (test failure) when the first `lock` fails or the outcome is not one victim.
pub fn lock_cycle<F>(
    db: &std::sync::Arc<mvcclab_engine::db::Database>,
    keys: (i32, i32),
    lock: F,
) -> String
where
    F: Fn(&mut Transaction, i32) -> mvcclab_engine::Result<()> + Copy + Send + 'static,
{
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let run = |first: i32, second: i32| {
        let (db, barrier) = (db.clone(), barrier.clone());
        std::thread::spawn(move || {
            let mut tx = db.begin();
            lock(&mut tx, first).unwrap();
            barrier.wait();
            lock(&mut tx, second).and_then(|_| tx.commit())
        })
    };
    let a = run(keys.0, keys.1);
    let b = run(keys.1, keys.0);
    let (ra, rb) = (a.join().unwrap(), b.join().unwrap());
    let victims = [&ra, &rb]
        .iter()
        .filter(|r| {
            matches!(
                r,
                Err(mvcclab_engine::Error::Txn(
                    mvcclab_engine::error::TxnError::Deadlock(_)
                ))
            )
        })
        .count();
    assert_eq!(victims, 1, "exactly one victim: {ra:?} {rb:?}");
    assert!(ra.is_ok() || rb.is_ok(), "the other commits: {ra:?} {rb:?}");
    [ra, rb]
        .into_iter()
        .find_map(|r| r.err())
        .unwrap()
        .to_string()
}
