//! Redo of the heap (`heap::wal::redo_block`): every heap record of a workload replayed onto
//! zero pages rebuilds the live pages, up to what redo cannot reproduce
//! (`heap::wal::mask_unlogged`); and bad record bytes give `StorageError::Corrupted`, never a panic.

mod common;
use mvcclab_engine::catalog::{Column, ColumnType, IndexDef, TableDef, Value};
use mvcclab_engine::db::{Assign, Database, DatabaseConfig, TableId};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::error::Error;
use mvcclab_engine::error::StorageError;
use mvcclab_engine::heap::{info, raw, wal as heap_wal};
use mvcclab_engine::page::{self, set_page_lsn, PageId};
use mvcclab_engine::storage::StorageConfig;
use mvcclab_engine::wal::{rmgr, BlockRef, Lsn, WalRecord, FIRST_LSN};
use proptest::prelude::*;
use std::collections::HashMap;

fn open(fillfactor: u8, full_page_writes: bool) -> Database {
    let mut cfg = DatabaseConfig::new(DesignConfig {
        fillfactor,
        ..DesignConfig::postgres()
    });
    let quiet = StorageConfig::without_background(256);
    let replacer = cfg.storage.buffer_pool.replacer.clone();
    cfg.storage.buffer_pool = quiet.buffer_pool.clone();
    cfg.storage.buffer_pool.replacer = replacer;
    cfg.storage.checkpoint = quiet.checkpoint;
    cfg.storage.wal_writer_interval_ms = None;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(64 << 20);
    cfg.storage.wal.full_page_writes = full_page_writes;
    cfg.vacuum.autovacuum = false;
    Database::open(cfg).expect("open database")
}

/// `t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, note VARCHAR(200) NULL)`, index on k.
fn def() -> TableDef {
    TableDef {
        name: "redo".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("k", ColumnType::Integer),
            Column::nullable("note", ColumnType::Varchar(200)),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "redo_k".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

fn row(id: i32, k: i32, note: Option<String>) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::Integer(k),
        note.map_or(Value::Null, Value::Text),
    ]
}

fn note(id: i32, v: u32, len: usize) -> Option<String> {
    Some(format!("{id:06}-{v:06}-{}", "x".repeat(len)))
}

fn set(db: &Database, t: TableId, id: i32, a: Vec<Assign>) {
    let mut tx = db.begin();
    // A row whose key an earlier step changed is not found; that is fine.
    tx.update(t, &[Value::Integer(id)], &a).unwrap();
    tx.commit().unwrap();
}

/// Inserts, HOT and non-HOT updates on the same and another page, key updates, deletes,
/// aborted changes, pruning on access, VACUUM, and inserts that reuse freed line pointers.
/// `probe` runs before the first VACUUM, while old versions are still on the pages.
fn workload(db: &Database, checkpoint_midway: bool, probe: &dyn Fn(TableId)) -> TableId {
    let t = db.create_table(def()).unwrap();
    let mut tx = db.begin();
    for id in 0..400 {
        let n = if id % 7 == 0 { None } else { note(id, 0, 40) };
        tx.insert(t, row(id, id, n)).unwrap();
    }
    tx.commit().unwrap();
    // HOT updates (note only), growing a few rows until their page is full: the later ones
    // move to another page (LOCK + UPDATE across pages), and reads prune on access.
    // An open transaction holds the horizon back for the first half, so that pages fill.
    let mut blocker = Some(db.begin());
    blocker
        .as_mut()
        .unwrap()
        .insert(t, row(9999, 9999, None))
        .unwrap();
    for v in 1..40u32 {
        if v == 20 {
            blocker.take().unwrap().commit().unwrap();
        }
        for id in (0..400).step_by(37) {
            set(
                db,
                t,
                id,
                vec![Assign::Set(2, Value::Text(note(id, v, 60).unwrap()))],
            );
            let mut r = db.begin();
            r.get(t, &[Value::Integer(id)]).unwrap();
            r.commit().unwrap();
        }
    }
    if checkpoint_midway {
        db.storage().checkpoint().unwrap();
    }
    // Non-HOT updates: an indexed column, then the primary key (KEYS_UPDATED).
    for id in (1..400).step_by(11) {
        set(db, t, id, vec![Assign::Set(1, Value::Integer(id + 1000))]);
    }
    for id in (3..400).step_by(29) {
        set(db, t, id, vec![Assign::Set(0, Value::Integer(id + 10_000))]);
    }
    // Small same-size updates: prefix/suffix compression of same-page updates.
    for id in (5..400).step_by(13) {
        set(
            db,
            t,
            id,
            vec![Assign::Set(2, Value::Text(note(id, 7, 40).unwrap()))],
        );
        set(db, t, id, vec![Assign::Set(2, Value::Null)]);
        set(
            db,
            t,
            id,
            vec![Assign::Set(2, Value::Text(note(id, 8, 40).unwrap()))],
        );
    }
    // Deletes.
    let mut tx = db.begin();
    for id in (2..400).step_by(9) {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    // Aborted insert, update and delete.
    let mut tx = db.begin();
    tx.insert(t, row(5000, 5000, note(5000, 0, 10))).unwrap();
    tx.update(t, &[Value::Integer(4)], &[Assign::Set(2, Value::Null)])
        .unwrap();
    tx.update(
        t,
        &[Value::Integer(6)],
        &[Assign::Set(1, Value::Integer(-6))],
    )
    .unwrap();
    tx.delete(t, &[Value::Integer(8)]).unwrap();
    tx.abort().unwrap();
    // Reads set hint bits.
    let mut r = db.begin();
    for id in 0..400 {
        r.get(t, &[Value::Integer(id)]).unwrap();
    }
    r.commit().unwrap();
    probe(t);
    db.gc(t).unwrap();
    // After VACUUM: inserts reuse freed line pointers, updates clear PD_ALL_VISIBLE.
    let mut tx = db.begin();
    for id in 400..520 {
        tx.insert(t, row(id, id, note(id, 0, 30))).unwrap();
    }
    tx.commit().unwrap();
    for id in (10..400).step_by(31) {
        let mut tx = db.begin();
        if tx
            .update(t, &[Value::Integer(id)], &[Assign::Add(1, 1)])
            .unwrap()
        {
            tx.commit().unwrap();
        } else {
            tx.abort().unwrap();
        }
    }
    db.gc(t).unwrap();
    t
}

/// Replays every heap record of relation `rel` onto zero pages (restoring full-page images
/// where attached) and compares every page with the pool's, both masked with
/// `mask_unlogged`. Returns the records replayed per info code.
fn assert_heap_redo_rebuilds(db: &Database, rel: u32) -> HashMap<u8, usize> {
    let s = db.storage();
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let page_bytes = s.store().page_size().bytes();
    let mut pages: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut seen: HashMap<u8, usize> = HashMap::new();
    for r in recs.iter().filter(|r| r.rmgr == rmgr::HEAP) {
        for (b, blk) in r.blocks.iter().enumerate() {
            if blk.page.rel != rel {
                continue;
            }
            *seen.entry(r.info).or_default() += 1;
            let p = pages
                .entry(blk.page.block)
                .or_insert_with(|| vec![0u8; page_bytes]);
            match &blk.image {
                Some(img) => {
                    img.restore(p).unwrap();
                    set_page_lsn(p, r.end_lsn);
                }
                None => heap_wal::redo_block(r, b, p).unwrap_or_else(|e| {
                    panic!("redo of {:#04x} block {b} ({}): {e}", r.info, blk.page)
                }),
            }
        }
    }
    let n = s.store().n_blocks(rel).unwrap();
    assert_eq!(pages.len() as u32, n, "every page of the heap is logged");
    for block in 0..n {
        let id = PageId::new(rel, block);
        let mut live = s.pool().fetch_read(id).unwrap().data().to_vec();
        let mut redone = pages[&block].clone();
        heap_wal::mask_unlogged(&mut live);
        heap_wal::mask_unlogged(&mut redone);
        // Checksum and identity are stamped only on write copies.
        live[8..20].fill(0);
        redone[8..20].fill(0);
        if live != redone {
            let first = live.iter().zip(&redone).position(|(a, b)| a != b).unwrap();
            panic!(
                "{id} differs after redo from byte {first}: live {:?}, redone {:?}",
                &live[first..(first + 16).min(live.len())],
                &redone[first..(first + 16).min(live.len())]
            );
        }
    }
    seen
}

fn check(fillfactor: u8, full_page_writes: bool, checkpoint_midway: bool) {
    let db = open(fillfactor, full_page_writes);
    let t = workload(&db, checkpoint_midway, &|t| {
        assert_heap_redo_rebuilds(&db, db.relations(t).unwrap().table);
    });
    let rel = db.relations(t).unwrap().table;
    let seen = assert_heap_redo_rebuilds(&db, rel);
    for code in [
        info::INSERT,
        info::INSERT | info::INIT_PAGE,
        info::DELETE,
        info::UPDATE,
        info::HOT_UPDATE,
        info::LOCK,
        info::PRUNE,
        info::VACUUM,
        info::VISIBLE,
    ] {
        assert!(
            seen.contains_key(&code),
            "no {code:#04x} record in {seen:?}"
        );
    }
    let s = db.table_stats(t).unwrap();
    assert!(s.pages_pruned > 0 && s.n_tup_hot_upd > 0, "{s:?}");
}

#[test]
fn redo_rebuilds_heap_without_full_page_images() {
    check(90, false, false);
}

#[test]
fn redo_rebuilds_heap_with_full_page_images_and_checkpoint() {
    check(100, true, true);
}

/// A heap page holding a few tuples, and a record of each kind about it.
fn sample_page() -> Vec<u8> {
    let mut p = vec![0u8; 8192];
    raw::init(&mut p);
    for i in 0..6u8 {
        let t = raw::build(100, 0, 3, None, &[i; 40], 0);
        raw::add_tuple(&mut p, &t).unwrap();
    }
    p
}

fn record(info: u8, blocks: Vec<Vec<u8>>, main: Vec<u8>) -> WalRecord {
    WalRecord {
        lsn: page::Lsn(0x1234),
        end_lsn: page::Lsn(0x1300),
        prev_lsn: page::Lsn(0),
        xid: 200,
        rmgr: rmgr::HEAP,
        info,
        blocks: blocks
            .into_iter()
            .enumerate()
            .map(|(i, data)| BlockRef {
                page: PageId::new(16384, i as u32),
                will_init: info & info::INIT_PAGE != 0 && i == 0,
                image: None,
                data,
            })
            .collect(),
        main_data: main,
    }
}

const CODES: [u8; 10] = [
    info::INSERT,
    info::INSERT | info::INIT_PAGE,
    info::DELETE,
    info::UPDATE,
    info::HOT_UPDATE,
    info::UPDATE | info::INIT_PAGE,
    info::LOCK,
    info::PRUNE,
    info::VACUUM,
    info::VISIBLE,
];

#[test]
fn well_formed_records_apply_and_truncations_are_corrupted() {
    let p = sample_page();
    // A valid DELETE of offset 2 applies.
    let mut main = 200u32.to_le_bytes().to_vec();
    main.extend_from_slice(&2u16.to_le_bytes());
    main.extend_from_slice(&[0x10, 0]);
    let rec = record(info::DELETE, vec![vec![]], main.clone());
    let mut q = p.clone();
    heap_wal::redo_block(&rec, 0, &mut q).unwrap();
    assert_eq!(page::page_lsn(&q), page::Lsn(0x1300));
    // Every truncation of it is Corrupted.
    for n in 0..main.len() {
        let rec = record(info::DELETE, vec![vec![]], main[..n].to_vec());
        let mut q = p.clone();
        let e = heap_wal::redo_block(&rec, 0, &mut q).unwrap_err();
        assert!(
            matches!(e, Error::Storage(StorageError::Corrupted { .. })),
            "{e}"
        );
    }
    // A valid INSERT at offset 7, then its truncations.
    let t = raw::build(200, 0, 3, None, &[9u8; 30], 0);
    let mut data = 7u16.to_le_bytes().to_vec();
    data.push(0);
    data.extend_from_slice(&t[18..]);
    let rec = record(info::INSERT, vec![data.clone()], vec![]);
    let mut q = p.clone();
    heap_wal::redo_block(&rec, 0, &mut q).unwrap();
    assert_eq!(raw::max_offset(&q), 7);
    for n in 0..8 {
        let rec = record(info::INSERT, vec![data[..n].to_vec()], vec![]);
        let mut q = p.clone();
        assert!(heap_wal::redo_block(&rec, 0, &mut q).is_err());
    }
    // Redo onto a zero page (no INIT_PAGE) is Corrupted, not a panic.
    let mut z = vec![0u8; 8192];
    assert!(heap_wal::redo_block(&rec, 0, &mut z).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn garbage_records_are_corrupted_never_a_panic(
        code in 0..CODES.len(),
        data in proptest::collection::vec(any::<u8>(), 0..64),
        data2 in proptest::collection::vec(any::<u8>(), 0..8),
        main in proptest::collection::vec(any::<u8>(), 0..20),
        two_blocks in any::<bool>(),
        small_offsets in any::<bool>(),
    ) {
        let p = sample_page();
        // Small offsets make more records reach the page logic instead of failing early.
        let mut data = data;
        let mut main = main;
        if small_offsets {
            for b in data.iter_mut().skip(1).step_by(2) { *b = 0; }
            for b in main.iter_mut().skip(1).step_by(2) { *b = 0; }
            for b in data.iter_mut().step_by(2) { *b %= 8; }
            for b in main.iter_mut().step_by(2) { *b %= 8; }
        }
        let blocks = if two_blocks { vec![data, data2] } else { vec![data] };
        let rec = record(CODES[code], blocks, main);
        common::assert_redo_ok_or_corrupted(heap_wal::redo_block, &rec, &p);
        // And on a page of garbage.
        let mut g = p.clone();
        for (i, b) in g.iter_mut().enumerate().skip(20).take(200) { *b = (i as u8).wrapping_mul(37); }
        common::assert_redo_ok_or_corrupted(heap_wal::redo_block, &rec, &g);
    }
}
