//! Redo of the undo space (`clustered::undo_wal::redo_block`): every UNDO record of an
//! innodb workload replayed onto zero pages rebuilds the live undo and rollback segment
//! header pages, up to what redo cannot reproduce (`undo_wal::mask_unlogged`: an undo
//! page's free space); and bad record bytes give `StorageError::Corrupted`, never a panic.

mod common;

use common::*;
use mvcclab_engine::catalog::Value;
use mvcclab_engine::clustered::undo_wal::{self, info};
use mvcclab_engine::clustered::{PAGE_TYPE_RSEG, PAGE_TYPE_UNDO};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::error::Error;
use mvcclab_engine::error::StorageError;
use mvcclab_engine::page::{hole, page_type, set_page_lsn, PageId};
use mvcclab_engine::storage::{StorageConfig, TornPageProtection};
use mvcclab_engine::wal::{rmgr, BlockRef, Lsn, WalRecord, FIRST_LSN};
use proptest::prelude::*;
use std::collections::HashMap;

/// An innodb database as `common::open_db` opens it, without purge threads: purge and
/// history truncation run only in `db.gc`, so nothing changes the pages while they are
/// compared.
fn open(torn_page_protection: TornPageProtection) -> Database {
    let design = DesignConfig {
        torn_page_protection,
        ..DesignConfig::innodb()
    };
    let mut cfg = DatabaseConfig::new(design.clone());
    let quiet = StorageConfig::without_background(4096);
    cfg.storage.buffer_pool = quiet.buffer_pool.clone();
    cfg.storage.buffer_pool.replacer = DatabaseConfig::new(design).storage.buffer_pool.replacer;
    cfg.storage.checkpoint = quiet.checkpoint;
    cfg.storage.wal_writer_interval_ms = None;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.vacuum.autovacuum = false;
    cfg.purge.threads = 0;
    Database::open(cfg).expect("open database")
}

fn sbrow(id: i32, c: &str) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::Integer(id),
        Value::Text(c.into()),
        Value::Text("pad".into()),
    ]
}

fn set(db: &Database, t: TableId, id: i32, a: Vec<Assign>) {
    let mut tx = db.begin();
    tx.update(t, &[Value::Integer(id)], &a).unwrap();
    tx.commit().unwrap();
}

/// Inserts (a multi-page insert segment, freed at commit), single-row updates of an
/// unindexed and an indexed column over more transactions than rollback segments (cached
/// segments reused, several logs per page), a multi-page update segment (history size),
/// deletes, an aborted transaction, purge with history truncation (segments freed), then
/// more transactions that reuse freed pages.
fn workload(db: &Database, checkpoint_midway: bool) -> TableId {
    let t = db.create_table(sbtest_def("sbtest1")).unwrap();
    let mut tx = db.begin();
    for id in 0..700 {
        tx.insert(t, sbrow(id, &format!("c{id}"))).unwrap();
    }
    tx.commit().unwrap();
    for v in 0..300 {
        let id = (v * 7) % 700;
        if v % 3 == 0 {
            set(db, t, id, vec![Assign::Add(1, 1)]);
        } else {
            set(
                db,
                t,
                id,
                vec![Assign::Set(
                    2,
                    Value::Text(format!("v{v}-{}", "x".repeat(v as usize % 90))),
                )],
            );
        }
        if v == 150 && checkpoint_midway {
            db.storage().checkpoint().unwrap();
        }
    }
    // One transaction with a large update undo log: several pages, not cached.
    let mut tx = db.begin();
    for id in 0..200 {
        tx.update(
            t,
            &[Value::Integer(id)],
            &[Assign::Set(2, Value::Text("y".repeat(110)))],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin();
    for id in (3..700).step_by(17) {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    // Aborted insert, updates and delete.
    let mut tx = db.begin();
    tx.insert(t, sbrow(5000, "gone")).unwrap();
    tx.update(t, &[Value::Integer(4)], &[Assign::Add(1, 5)])
        .unwrap();
    tx.update(
        t,
        &[Value::Integer(6)],
        &[Assign::Set(2, Value::Text("z".into()))],
    )
    .unwrap();
    tx.delete(t, &[Value::Integer(8)]).unwrap();
    tx.abort().unwrap();
    db.gc(t).unwrap();
    // After purge: new segments take freed pages. A checkpoint midway makes the next change
    // of each cached insert segment's page log a full-page image after the page started
    // over (`mask_unlogged`).
    for v in 0..200 {
        if v == 100 && checkpoint_midway {
            db.storage().checkpoint().unwrap();
        }
        let id = (v * 11) % 700;
        let mut tx = db.begin();
        if tx
            .update(t, &[Value::Integer(id)], &[Assign::Add(1, 2)])
            .unwrap()
        {
            // Some logs of several records: a later one-record log that reuses the
            // cached insert segment leaves their bytes past its free pointer.
            for k in 0..if v % 10 == 0 { 4 } else { 1 } {
                tx.insert(t, sbrow(2000 + 10 * v + k, "new")).unwrap();
            }
            tx.commit().unwrap();
        } else {
            tx.abort().unwrap();
        }
    }
    let mut tx = db.begin();
    for id in (2000..4000).step_by(20) {
        tx.update(
            t,
            &[Value::Integer(id)],
            &[Assign::Set(2, Value::Text("w".repeat(100)))],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    t
}

/// Replays every UNDO record onto zero pages (restoring full-page images where attached)
/// and compares every page of the undo relation still in use (resident in the pool: a page
/// freed by history truncation or at commit is discarded from it) with the pool's, both
/// masked with `mask_unlogged`. Returns (records replayed per (info, will_init), pages
/// compared).
fn assert_undo_redo_rebuilds(db: &Database) -> (HashMap<(u8, bool), usize>, usize) {
    let s = db.storage();
    let rel = undo_relation(db);
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let page_bytes = s.store().page_size().bytes();
    let mut pages: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut seen: HashMap<(u8, bool), usize> = HashMap::new();
    for r in recs.iter().filter(|r| r.rmgr == rmgr::UNDO) {
        for (b, blk) in r.blocks.iter().enumerate() {
            assert_eq!(
                blk.page.rel, rel,
                "UNDO records name only the undo relation"
            );
            *seen.entry((r.info, blk.will_init)).or_default() += 1;
            let p = pages
                .entry(blk.page.block)
                .or_insert_with(|| vec![0u8; page_bytes]);
            match &blk.image {
                Some(img) => {
                    *seen.entry((0xFF, false)).or_default() += 1;
                    img.restore(p).unwrap();
                    set_page_lsn(p, r.end_lsn);
                }
                None => undo_wal::redo_block(r, b, p).unwrap_or_else(|e| {
                    panic!("redo of {:#04x} block {b} ({}): {e}", r.info, blk.page)
                }),
            }
        }
    }
    let n = s.store().n_blocks(rel).unwrap();
    let mut compared = 0;
    for block in 0..n {
        let id = PageId::new(rel, block);
        if !s.pool().is_resident(id) {
            continue;
        }
        compared += 1;
        let mut live = s.pool().fetch_read(id).unwrap().data().to_vec();
        assert!(
            [PAGE_TYPE_RSEG, PAGE_TYPE_UNDO].contains(&page_type(&live)),
            "{id} in use"
        );
        let mut redone = pages
            .get(&block)
            .unwrap_or_else(|| panic!("{id} has no UNDO record"))
            .clone();
        undo_wal::mask_unlogged(&mut live);
        undo_wal::mask_unlogged(&mut redone);
        // Checksum and identity are stamped only on write copies.
        live[8..20].fill(0);
        redone[8..20].fill(0);
        if live != redone {
            let first = live.iter().zip(&redone).position(|(a, b)| a != b).unwrap();
            panic!(
                "{id} (type {}) differs after redo from byte {first}: live {:?}, redone {:?}",
                page_type(&live),
                &live[first..(first + 16).min(live.len())],
                &redone[first..(first + 16).min(live.len())]
            );
        }
    }
    (seen, compared)
}

fn check(torn_page_protection: TornPageProtection, checkpoint_midway: bool) {
    let db = open(torn_page_protection);
    workload(&db, checkpoint_midway);
    let (seen, compared) = assert_undo_redo_rebuilds(&db);
    for k in [
        (info::RSEG_INIT, true),
        (info::WRITE, true),
        (info::WRITE, false),
        (info::APPEND, false),
    ] {
        assert!(seen.contains_key(&k), "no {k:?} in {seen:?}");
    }
    if torn_page_protection == TornPageProtection::FullPageWrites && checkpoint_midway {
        assert!(
            seen.contains_key(&(0xFF, false)),
            "no full-page image: {seen:?}"
        );
    }
    let rsegs = DesignConfig::innodb().rollback_segments as u64;
    let c = db.engine_counters();
    assert!(
        c.undo_pages_freed > 0 && c.undo_segments_reused > 0 && c.purged_logs > 0,
        "{c:?}"
    );
    // The pages compared are exactly the headers and the undo pages in use.
    assert_eq!(compared as u64, rsegs + c.undo_pages_in_use, "{c:?}");
    // Freed pages were allocated again.
    let n = db.storage().store().n_blocks(undo_relation(&db)).unwrap() as u64;
    assert!(c.undo_pages_allocated > n - rsegs, "{n} blocks, {c:?}");
}

#[test]
fn redo_rebuilds_undo_pages() {
    check(TornPageProtection::Doublewrite, false);
}

#[test]
fn redo_rebuilds_undo_pages_with_full_page_images_and_checkpoint() {
    check(TornPageProtection::FullPageWrites, true);
}

fn record(code: u8, will_init: bool, blocks: Vec<Vec<u8>>, main: Vec<u8>) -> WalRecord {
    WalRecord {
        lsn: mvcclab_engine::page::Lsn(0x4321),
        end_lsn: mvcclab_engine::page::Lsn(0x4400),
        prev_lsn: mvcclab_engine::page::Lsn(0),
        xid: 0,
        rmgr: rmgr::UNDO,
        info: code,
        blocks: blocks
            .into_iter()
            .enumerate()
            .map(|(i, data)| BlockRef {
                page: PageId::new(16384, 4 + i as u32),
                will_init: will_init && i == 0,
                image: None,
                data,
            })
            .collect(),
        main_data: main,
    }
}

/// An undo page: formatted, free pointer at 82, one record appended.
fn sample_page() -> Vec<u8> {
    let mut p = vec![0u8; 16384];
    let mut wl = undo_wal::WriteLog::default();
    wl.push(20, &82u16.to_le_bytes());
    let w = wl.into_bytes();
    undo_wal::redo_block(&record(info::WRITE, true, vec![w], vec![]), 0, &mut p).unwrap();
    let mut a = 82u16.to_le_bytes().to_vec();
    a.extend_from_slice(&[5; 40]);
    undo_wal::redo_block(&record(info::APPEND, false, vec![a], vec![]), 0, &mut p).unwrap();
    assert_eq!(hole(&p), (122, 16384));
    p
}

#[test]
fn well_formed_records_apply_and_truncations_are_corrupted() {
    let p = sample_page();
    // A write of 8 bytes at 100 applies; every truncation of it is Corrupted.
    let mut wl = undo_wal::WriteLog::default();
    wl.push(100, &[9; 8]);
    let w = wl.into_bytes();
    let mut q = p.clone();
    undo_wal::redo_block(
        &record(info::WRITE, false, vec![w.clone()], vec![]),
        0,
        &mut q,
    )
    .unwrap();
    assert_eq!(&q[100..108], &[9; 8]);
    assert_eq!(
        mvcclab_engine::page::page_lsn(&q),
        mvcclab_engine::page::Lsn(0x4400)
    );
    for n in 1..w.len() {
        let rec = record(info::WRITE, false, vec![w[..n].to_vec()], vec![]);
        let e = undo_wal::redo_block(&rec, 0, &mut p.clone()).unwrap_err();
        assert!(
            matches!(e, Error::Storage(StorageError::Corrupted { .. })),
            "{e}"
        );
    }
    // An append at the free pointer applies; truncated, it is Corrupted.
    let mut a = 122u16.to_le_bytes().to_vec();
    a.extend_from_slice(&[6; 10]);
    undo_wal::redo_block(
        &record(info::APPEND, false, vec![a.clone()], vec![]),
        0,
        &mut p.clone(),
    )
    .unwrap();
    for n in 0..3 {
        let rec = record(info::APPEND, false, vec![a[..n].to_vec()], vec![]);
        assert!(undo_wal::redo_block(&rec, 0, &mut p.clone()).is_err());
    }
    // RSEG_INIT takes one byte, and only as a will_init block.
    let mut z = vec![0u8; 16384];
    undo_wal::redo_block(
        &record(info::RSEG_INIT, true, vec![vec![3]], vec![]),
        0,
        &mut z,
    )
    .unwrap();
    assert_eq!(page_type(&z), PAGE_TYPE_RSEG);
    for (init, data) in [(true, vec![]), (true, vec![3, 4]), (false, vec![3])] {
        let rec = record(info::RSEG_INIT, init, vec![data], vec![]);
        assert!(undo_wal::redo_block(&rec, 0, &mut z.clone()).is_err());
    }
    // APPEND or WRITE onto a zero page (not will_init) is Corrupted, not a panic.
    let rec = record(info::APPEND, false, vec![a], vec![]);
    assert!(undo_wal::redo_block(&rec, 0, &mut vec![0u8; 16384]).is_err());
    let rec = record(info::WRITE, false, vec![w], vec![]);
    assert!(undo_wal::redo_block(&rec, 0, &mut vec![0u8; 16384]).is_err());
}

const CODES: [(u8, bool); 5] = [
    (info::APPEND, false),
    (info::WRITE, false),
    (info::WRITE, true),
    (info::RSEG_INIT, true),
    (0x40, false),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn garbage_records_are_corrupted_never_a_panic(
        code in 0..CODES.len(),
        data in proptest::collection::vec(any::<u8>(), 0..64),
        data2 in proptest::collection::vec(any::<u8>(), 0..8),
        main in proptest::collection::vec(any::<u8>(), 0..4),
        two_blocks in any::<bool>(),
        small_offsets in any::<bool>(),
    ) {
        let p = sample_page();
        let mut data = data;
        if small_offsets {
            // Offsets and lengths near the free pointer reach the page logic.
            if data.len() >= 2 {
                data[0] = 122;
                data[1] = 0;
            }
            for b in data.iter_mut().skip(3).step_by(2) { *b = 0; }
        }
        let main = if main.len() < 2 { vec![] } else { main };
        let blocks = if two_blocks { vec![data, data2] } else { vec![data] };
        let (c, init) = CODES[code];
        let rec = record(c, init, blocks, main);
        assert_redo_ok_or_corrupted(undo_wal::redo_block, &rec, &p);
        // And on a page of garbage, and on a zero page.
        let mut g = p.clone();
        for (i, b) in g.iter_mut().enumerate().skip(20).take(200) { *b = (i as u8).wrapping_mul(37); }
        assert_redo_ok_or_corrupted(undo_wal::redo_block, &rec, &g);
        assert_redo_ok_or_corrupted(undo_wal::redo_block, &rec, &vec![0u8; 16384]);
    }
}
