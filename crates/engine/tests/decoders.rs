//! Decoders on bad input (issue 7, item 6): page verification and the heap page and tuple
//! accessors, B+tree node and meta pages, undo records on their pages, the row formats read
//! from real pages, WAL records in both formats and each resource manager's `redo_block`.
//!
//! Every test starts from valid bytes made by a small workload through the public API (the
//! pages it leaves and the WAL records it writes, with the page each record was applied
//! to), then flips, overwrites and truncates some of them, so that the damage reaches the
//! decoders' deep paths instead of failing the first check. Every decoder must return `Ok`
//! or an error, never panic (a panic fails the test). The cargo-fuzz targets in `fuzz/`
//! feed the same decoders outside CI (docs/testing.md, "Fuzzing").

mod common;

use common::open_db;
use mvcclab_engine::btree::node::{Meta, Node};
use mvcclab_engine::btree::wal as btree_wal;
use mvcclab_engine::catalog::{
    apply_delta, compact_delete_mark, compact_system_columns, decode_compact_record, decode_heap,
    decode_key, Column, ColumnType, IndexDef, Row, TableDef, Value,
};
use mvcclab_engine::clustered::{record_on_page, undo_wal, UndoRecord, PAGE_TYPE_UNDO};
use mvcclab_engine::db::{Assign, Database};
use mvcclab_engine::design::DesignConfig;
use mvcclab_engine::error::StorageError;
use mvcclab_engine::error::{Error, Result};
use mvcclab_engine::heap::raw::{self, HeaderRead};
use mvcclab_engine::heap::{wal as heap_wal, LpState, PAGE_TYPE_HEAP};
use mvcclab_engine::page::{self, finish_for_write, hole, page_type, set_page_lsn, PageId};
use mvcclab_engine::wal::{
    decode_with, encode_with, record_len, rmgr, Decoded, Lsn, PageImage, RecordBuilder, WalFormat,
    WalRecord, FIRST_LSN,
};
use proptest::prelude::*;
use proptest::sample::Index;
use std::collections::HashMap;
use std::sync::OnceLock;

type Redo = fn(&WalRecord, usize, &mut [u8]) -> Result<()>;

/// Valid bytes of one design's workload.
struct Corpus {
    page_bytes: usize,
    /// The table's definition.
    def: TableDef,
    /// Every record of the WAL, in order.
    recs: Vec<WalRecord>,
    /// (record, block, the page before redo of that block) for blocks without an image.
    pre: Vec<(usize, usize, Vec<u8>)>,
    /// Every page of every relation at the end, stamped as for a write (verify passes).
    pages: Vec<(PageId, Vec<u8>)>,
}

/// `t(id INTEGER, k BIGINT, note VARCHAR(100) NULL, c CHAR(10), at TIMESTAMP NULL)`,
/// primary key id, index on k.
fn def() -> TableDef {
    TableDef {
        name: "dec".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("k", ColumnType::BigInt),
            Column::nullable("note", ColumnType::Varchar(100)),
            Column::not_null("c", ColumnType::Char(10)),
            Column::nullable("at", ColumnType::Timestamp),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "dec_k".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

fn row(id: i32, v: i64) -> Row {
    vec![
        Value::Integer(id),
        Value::BigInt(v),
        if id % 5 == 0 {
            Value::Null
        } else {
            Value::Text(format!("n{id}-{}", "x".repeat((id as usize * 7) % 60)))
        },
        Value::Text(format!("c{}", id % 100)),
        if id % 3 == 0 {
            Value::Null
        } else {
            Value::timestamp_from_unix_secs(1_700_000_000 + id as i64)
        },
    ]
}

/// Inserts, updates in place and of the indexed column, deletes, an aborted transaction,
/// garbage collection (vacuum or purge), and more inserts.
fn workload(db: &Database) {
    let t = db.create_table(def()).unwrap();
    let mut tx = db.begin();
    for id in 0..240 {
        tx.insert(t, row(id, id as i64)).unwrap();
    }
    tx.commit().unwrap();
    for v in 0..120 {
        let id = (v * 7) % 240;
        let mut tx = db.begin();
        let set = if v % 2 == 0 {
            vec![Assign::Set(2, Value::Text(format!("u{v}")))]
        } else {
            vec![Assign::Set(1, Value::BigInt(1000 + v as i64))]
        };
        tx.update(t, &[Value::Integer(id)], &set).unwrap();
        tx.commit().unwrap();
    }
    let mut tx = db.begin();
    for id in (0..240).step_by(4) {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin();
    tx.insert(t, row(1000, 1)).unwrap();
    tx.abort().unwrap();
    db.gc(t).unwrap();
    let mut tx = db.begin();
    for id in 300..340 {
        tx.insert(t, row(id, id as i64)).unwrap();
    }
    tx.commit().unwrap();
    // A low-cardinality k (postgres: deduplication passes, then vacuum of TIDs in posting
    // lists and inserts into them: DEDUP, VACUUM with rewritten entries, INSERT_POST).
    let mut tx = db.begin();
    for id in 400..1400 {
        tx.insert(t, row(id, (id % 3) as i64)).unwrap();
    }
    tx.commit().unwrap();
    let mut tx = db.begin();
    for id in (400..1400).step_by(3) {
        tx.delete(t, &[Value::Integer(id)]).unwrap();
    }
    tx.commit().unwrap();
    db.gc(t).unwrap();
    let mut tx = db.begin();
    for id in 1500..1800 {
        tx.insert(t, row(id, (id % 3) as i64)).unwrap();
    }
    tx.commit().unwrap();
}

fn redo_of(rmgr_id: u8) -> Option<Redo> {
    match rmgr_id {
        rmgr::HEAP => Some(heap_wal::redo_block),
        rmgr::BTREE => Some(btree_wal::redo_block),
        rmgr::UNDO => Some(undo_wal::redo_block),
        _ => None,
    }
}

fn build(design: DesignConfig) -> Corpus {
    let db = open_db(design, 512);
    workload(&db);
    let s = db.storage();
    s.wal().flush_all().unwrap();
    let (recs, _) = s.wal().read_from(Lsn(FIRST_LSN)).unwrap();
    let page_bytes = s.store().page_size().bytes();
    // Replay in order onto zero pages, keeping the page each block was applied to.
    let mut pages: HashMap<PageId, Vec<u8>> = HashMap::new();
    let mut pre = Vec::new();
    let mut failed = 0;
    for (i, r) in recs.iter().enumerate() {
        let Some(redo) = redo_of(r.rmgr) else {
            continue;
        };
        for (b, blk) in r.blocks.iter().enumerate() {
            let p = pages
                .entry(blk.page)
                .or_insert_with(|| vec![0u8; page_bytes]);
            match &blk.image {
                Some(img) => {
                    img.restore(p).unwrap();
                    set_page_lsn(p, r.end_lsn);
                }
                None => {
                    // Every second block keeps its page: enough samples, less memory.
                    if (i + b) % 2 == 0 {
                        pre.push((i, b, p.clone()));
                    }
                    if redo(r, b, p).is_err() {
                        failed += 1;
                    }
                }
            }
        }
    }
    assert!(
        failed * 20 <= pre.len(),
        "{failed} of {} blocks failed to replay",
        pre.len()
    );
    let mut out_pages = Vec::new();
    for rel in s.store().relations() {
        for block in 0..s.store().n_blocks(rel).unwrap() {
            let id = PageId::new(rel, block);
            let mut p = s.pool().fetch_read(id).unwrap().data().to_vec();
            finish_for_write(&mut p, id);
            out_pages.push((id, p));
        }
    }
    Corpus {
        page_bytes,
        def: def(),
        recs,
        pre,
        pages: out_pages,
    }
}

fn corpora() -> &'static [Corpus; 2] {
    static C: OnceLock<[Corpus; 2]> = OnceLock::new();
    C.get_or_init(|| {
        [
            build(DesignConfig::postgres()),
            build(DesignConfig::innodb()),
        ]
    })
}

/// One change to a byte string: `kind` picks flip, overwrite, a 16-bit field set to an
/// extreme, or (when `may_cut`) a truncation; positions favour the first and last bytes,
/// where headers, line pointers, slots and the special area live.
#[derive(Clone, Debug)]
struct Damage {
    kind: u8,
    region: u8,
    at: Index,
    v: u8,
}

fn damage() -> impl Strategy<Value = Vec<Damage>> {
    proptest::collection::vec(
        (any::<u8>(), any::<u8>(), any::<Index>(), any::<u8>()).prop_map(
            |(kind, region, at, v)| Damage {
                kind,
                region,
                at,
                v,
            },
        ),
        1..5,
    )
}

fn apply(bytes: &mut Vec<u8>, ds: &[Damage], may_cut: bool) {
    for d in ds {
        if bytes.is_empty() {
            return;
        }
        let n = bytes.len();
        let i = match d.region % 4 {
            0 => d.at.index(n.min(64)),
            1 => n - 1 - d.at.index(n.min(24)),
            _ => d.at.index(n),
        };
        match d.kind % 8 {
            0..=2 => bytes[i] ^= d.v.max(1),
            3 | 4 => bytes[i] = d.v,
            5 | 6 => {
                let v: u16 = match d.v % 4 {
                    0 => 0,
                    1 => 0xFFFF,
                    2 => n as u16,
                    _ => d.v as u16,
                };
                let j = i.min(n.saturating_sub(2));
                bytes[j..(j + 2).min(n)].copy_from_slice(&v.to_le_bytes()[..(n - j).min(2)]);
            }
            _ if may_cut => bytes.truncate(i),
            _ => bytes[i] = !bytes[i],
        }
    }
}

fn ok_or_bad<T>(r: &Result<T>) -> std::result::Result<(), TestCaseError> {
    match r {
        Ok(_) | Err(Error::Storage(StorageError::Corrupted { .. })) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("unexpected error {e}"))),
    }
}

/// A row of the table's width (apply_delta's target).
fn some_row() -> Row {
    row(1, 1)
}

/// Runs every decoder that reads a page of this type; all must give Ok or Corrupted.
fn decode_page(c: &Corpus, id: PageId, p: &[u8]) -> std::result::Result<(), TestCaseError> {
    let def = &c.def;
    let pk_types = def.key_columns(&def.primary_key).unwrap();
    match page_type(p) {
        PAGE_TYPE_HEAP => {
            let _ = (raw::free_space(p), raw::heap_free_space(p));
            for off in 1..=raw::max_offset(p).min(400) {
                let r = raw::item_id(p, off, id);
                ok_or_bad(&r)?;
                let Ok(lp) = r else { continue };
                if lp.state != LpState::Normal {
                    continue;
                }
                let t = raw::tuple(p, lp);
                let _ = (t.xmin(), t.xmax(), t.ctid(), t.infomask(), t.is_heap_only());
                if let Some((bitmap, data)) = t.bitmap_and_data() {
                    ok_or_bad(&decode_heap(def, bitmap, data))?;
                }
            }
            let mut m = p.to_vec();
            heap_wal::mask_unlogged(&mut m);
        }
        mvcclab_engine::btree::node::PAGE_TYPE_BTREE => {
            ok_or_bad(&Meta::read(p, id))?;
            let n = Node::parse(p, id);
            ok_or_bad(&n)?;
            let Ok(n) = n else { return Ok(()) };
            let _ = (n.level(), n.flags(), n.left(), n.right(), n.dead_slots());
            ok_or_bad(&n.search(b"\x80\x00\x00\x07"))?;
            for i in 0..n.len().min(400) {
                let e = n.entry(i);
                ok_or_bad(&e)?;
                let Ok((k, v)) = e else { continue };
                if n.level() > 0 {
                    ok_or_bad(&n.child(i))?;
                } else {
                    // A clustered leaf holds COMPACT records (other leaves' values are
                    // refused as such).
                    let _ = decode_key(&pk_types, k);
                    if let Ok(r) = decode_compact_record(def, k, v) {
                        prop_assert!(def.check_row(&r.row).is_ok());
                    }
                    let _ = compact_delete_mark(v);
                    let _ = compact_system_columns(def, v);
                }
            }
        }
        PAGE_TYPE_UNDO => {
            let (lower, _) = hole(p);
            for off in (32..lower.min(c.page_bytes as u16 + 8)).step_by(7) {
                let r = record_on_page(p, id, off);
                ok_or_bad(&r)?;
                if let Ok(u) = r {
                    ok_or_bad(&apply_delta(def, &mut some_row(), &u.delta))?;
                    let _ = decode_key(&pk_types, &u.pk);
                }
            }
            let mut m = p.to_vec();
            undo_wal::mask_unlogged(&mut m);
        }
        _ => {}
    }
    Ok(())
}

/// Runs `redo` for every block of `rec` and one past the end on a copy of `page`: each must
/// succeed or give `StorageError::Corrupted`; the heap and undo redo also name the record's LSN
/// (`common::assert_redo_ok_or_corrupted`), the B+tree's names the page.
fn redo_ok_or_corrupted(
    redo: Redo,
    rec: &WalRecord,
    page: &[u8],
) -> std::result::Result<(), TestCaseError> {
    for b in 0..rec.blocks.len() + 1 {
        let mut p = page.to_vec();
        match redo(rec, b, &mut p) {
            Ok(()) => {}
            Err(Error::Storage(StorageError::Corrupted { what })) => prop_assert!(
                rec.rmgr == rmgr::BTREE || what.contains(&rec.lsn.to_string()),
                "{}",
                what
            ),
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }
    Ok(())
}

/// The record's builder and images, to encode it again.
fn builder_of(r: &WalRecord) -> (RecordBuilder, Vec<Option<PageImage>>) {
    let mut b = RecordBuilder::new(r.rmgr, r.info)
        .xid(r.xid)
        .main_data(&r.main_data);
    for blk in &r.blocks {
        b = b.block(blk.page, blk.will_init, &blk.data);
    }
    (b, r.blocks.iter().map(|blk| blk.image.clone()).collect())
}

/// Recomputes the CRC of an encoded record whose length field is intact.
fn fix_crc(format: WalFormat, bytes: &mut [u8]) {
    match format {
        WalFormat::Xlog => {
            if bytes.len() < 8 {
                return;
            }
            let tot = (u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize)
                .clamp(8, bytes.len());
            let crc = crc32c_of(&bytes[8..tot], &bytes[..4]);
            bytes[4..8].copy_from_slice(&crc.to_le_bytes());
        }
        WalFormat::Mtr => {
            if let Some(tot) = record_len(format, bytes).filter(|&t| t >= 4 && t <= bytes.len()) {
                let crc = crc32c_of(&bytes[..tot - 4], &[]);
                bytes[tot - 4..tot].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
}

/// CRC-32C (Castagnoli) of `a` then `b`, bit by bit (the test does not link crc32c).
fn crc32c_of(a: &[u8], b: &[u8]) -> u32 {
    let mut c = !0u32;
    for &x in a.iter().chain(b) {
        c ^= x as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// The postgres corpus holds the deduplication records, so the damage tests reach their
/// decoders and redo.
#[test]
fn the_postgres_corpus_has_deduplication_records() {
    let c = &corpora()[0];
    for code in [btree_wal::info::DEDUP, btree_wal::info::INSERT_POST] {
        assert!(
            c.recs
                .iter()
                .any(|r| r.rmgr == rmgr::BTREE && r.info == code),
            "no B+tree record {code:#04x}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Pages of every kind, damaged (and half of the time with garbage in the free space):
    /// `page::verify` and `identify`, then (with the checksum
    /// stamped again, as a page damaged before its write would be) the heap page and tuple
    /// accessors with the heap row decoder, B+tree node and meta decoding with the COMPACT
    /// record and key decoders, undo records on their page with the delta decoder.
    #[test]
    fn damaged_pages_give_errors_never_panics(
        design in 0usize..2,
        pick in any::<Index>(),
        ds in damage(),
        restamp in any::<bool>(),
        fill in proptest::option::of(any::<u8>()),
    ) {
        let c = &corpora()[design];
        let (id, p) = &c.pages[pick.index(c.pages.len())];
        let mut p = p.clone();
        if let Some(x) = fill {
            // Garbage in the free space, where a damaged pd_lower finds its line pointers.
            let (lower, upper) = hole(&p);
            if let Some(free) = p.get_mut(lower as usize..upper as usize) {
                free.fill(x);
            }
        }
        apply(&mut p, &ds, false);
        let v = page::verify(&p, *id);
        prop_assert!(
            matches!(v, Ok(()) | Err(StorageError::ChecksumMismatch { .. } | StorageError::Corrupted { .. })),
            "{:?}", v
        );
        let _ = (page::identify(&p), page::fpi_hole(&p));
        if restamp {
            finish_for_write(&mut p, *id);
        }
        decode_page(c, *id, &p)?;
    }

    /// Page buffers of any length: `verify` refuses what is not a page, never panics.
    #[test]
    fn verify_takes_any_buffer(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
        let _ = page::verify(&bytes, PageId::new(1, 2));
        let _ = page::identify(&bytes);
    }

    /// WAL records of the workload encoded again in both formats, damaged (the CRC made
    /// right again half of the time, so that the field parser is reached), decoded; what
    /// still decodes is redone on the page its record was applied to.
    #[test]
    fn damaged_wal_records_give_errors_never_panics(
        design in 0usize..2,
        pick in any::<Index>(),
        mtr in any::<bool>(),
        ds in damage(),
        crc_ok in any::<bool>(),
    ) {
        let c = &corpora()[design];
        let i = pick.index(c.recs.len());
        let r = &c.recs[i];
        let format = if mtr { WalFormat::Mtr } else { WalFormat::Xlog };
        let (b, images) = builder_of(r);
        let mut bytes = encode_with(format, &b, r.prev_lsn.0, &images);
        if let Decoded::Record(back) = decode_with(format, &bytes, r.lsn.0, r.prev_lsn.0) {
            prop_assert_eq!(
                (back.rmgr, back.info, &back.blocks, &back.main_data),
                (r.rmgr, r.info, &r.blocks, &r.main_data)
            );
        } else {
            prop_assert!(false, "record {} does not decode after encoding", i);
        }
        apply(&mut bytes, &ds, true);
        if crc_ok {
            fix_crc(format, &mut bytes);
        }
        let _ = record_len(format, &bytes);
        if let Decoded::Record(d) = decode_with(format, &bytes, r.lsn.0, r.prev_lsn.0) {
            if let Some(redo) = redo_of(d.rmgr) {
                let page = c
                    .pre
                    .iter()
                    .find(|s| s.0 == i)
                    .map_or_else(|| vec![0u8; c.page_bytes], |s| s.2.clone());
                redo_ok_or_corrupted(redo, &d, &page)?;
            }
        }
    }

    /// Each resource manager's `redo_block` on a record of the workload with damaged block
    /// data, main data, info or will_init, or a damaged page: Ok or `Corrupted` naming the
    /// record's LSN.
    #[test]
    fn damaged_redo_inputs_give_corrupted_never_panics(
        design in 0usize..2,
        pick in any::<Index>(),
        what in 0u8..5,
        ds in damage(),
        x in any::<u8>(),
    ) {
        let c = &corpora()[design];
        let (i, b, page) = &c.pre[pick.index(c.pre.len())];
        let mut rec = c.recs[*i].clone();
        let mut page = page.clone();
        let redo = redo_of(rec.rmgr).unwrap();
        match what {
            0 => apply(&mut rec.blocks[*b].data, &ds, true),
            1 => apply(&mut rec.main_data, &ds, true),
            2 => {
                rec.info ^= x.max(1);
                apply(&mut rec.blocks[*b].data, &ds, true);
            }
            3 => {
                rec.blocks[*b].will_init ^= true;
                apply(&mut rec.blocks[*b].data, &ds, true);
            }
            _ => apply(&mut page, &ds, false),
        }
        redo_ok_or_corrupted(redo, &rec, &page)?;
    }

    /// Undo records of the workload (the APPEND records' bytes), damaged: `UndoRecord::decode`,
    /// then the delta and key decoders on what decodes.
    #[test]
    fn damaged_undo_records_give_errors_never_panics(
        pick in any::<Index>(),
        ds in damage(),
    ) {
        let c = &corpora()[1];
        let appends: Vec<&[u8]> = c
            .recs
            .iter()
            .filter(|r| r.rmgr == rmgr::UNDO && r.info == undo_wal::info::APPEND)
            .filter_map(|r| r.blocks.first().and_then(|b| b.data.get(2..)))
            .collect();
        prop_assert!(!appends.is_empty());
        let mut bytes = appends[pick.index(appends.len())].to_vec();
        prop_assert!(UndoRecord::decode(&bytes).is_ok());
        apply(&mut bytes, &ds, true);
        let r = UndoRecord::decode(&bytes);
        ok_or_bad(&r)?;
        if let Ok(u) = r {
            ok_or_bad(&apply_delta(&c.def, &mut some_row(), &u.delta))?;
            let pk_types = c.def.key_columns(&c.def.primary_key).unwrap();
            let _ = decode_key(&pk_types, &u.pk);
        }
    }
}
