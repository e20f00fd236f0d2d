//! What the fuzz targets share: a cursor over the fuzzer's bytes, valid seed pages built
//! through the engine's public API (so that the fuzzer's patches reach the decoders' deep
//! paths), the table every row format is decoded against, and the check that a result is
//! `Ok` or one of the errors a decoder may give for bad bytes.

use mvcclab_engine::btree::node::{self, Meta, NodeHeader, NO_BLOCK};
use mvcclab_engine::btree::BTreeConfig;
use mvcclab_engine::catalog::{
    encode_compact, encode_heap, key_of, Column, ColumnType, IndexDef, Row, TableDef, Value,
};
use mvcclab_engine::clustered::{rseg, undo_wal, RollPtr, UndoRecord, UndoType};
use mvcclab_engine::error::{Error, Result};
use mvcclab_engine::heap::raw;
use mvcclab_engine::page::PageId;
use mvcclab_engine::wal::{rmgr, BlockRef, WalRecord};

/// Page size of every seed page, in bytes.
pub const PAGE_BYTES: usize = 8192;

/// Reads the fuzzer's bytes front to back; past the end every read gives zeros.
pub struct Input<'a> {
    b: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor over `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Input { b }
    }
    /// Next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        let (first, rest) = self.b.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.b = rest;
        first
    }
    /// Next little-endian u16 (0 past the end).
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    /// Next `n` bytes, fewer at the end.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.b.split_at(n.min(self.b.len()));
        self.b = b;
        a
    }
    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.bytes(self.b.len())
    }
}

/// Overwrites bytes of `page` as the rest of `inp` says: (offset u16, value u8) triples, the
/// offset taken modulo the page size.
pub fn patch(page: &mut [u8], inp: &mut Input<'_>) {
    let rest = inp.rest();
    for t in rest.chunks_exact(3) {
        let off = u16::from_le_bytes([t[0], t[1]]) as usize % page.len();
        page[off] = t[2];
    }
}

/// `Ok`, or an error a decoder may give for bad bytes; panics (a finding) otherwise.
pub fn ok_or_corrupted<T>(r: &Result<T>) {
    match r {
        Ok(_) | Err(Error::Corrupted { .. }) | Err(Error::ChecksumMismatch { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// `t(id INTEGER, k BIGINT, note VARCHAR(100) NULL, c CHAR(10), at TIMESTAMP NULL)`, primary
/// key id, index on k: every column type and both nullabilities.
pub fn def() -> TableDef {
    TableDef {
        name: "fuzz".into(),
        columns: vec![
            Column::not_null("id", ColumnType::Integer),
            Column::not_null("k", ColumnType::BigInt),
            Column::nullable("note", ColumnType::Varchar(100)),
            Column::not_null("c", ColumnType::Char(10)),
            Column::nullable("at", ColumnType::Timestamp),
        ],
        primary_key: vec![0],
        indexes: vec![IndexDef {
            name: "fuzz_k".into(),
            columns: vec![1],
            unique: false,
        }],
        foreign_keys: Vec::new(),
    }
}

/// Row `i` of [`def`]: some NULLs, texts of several lengths.
pub fn row(i: i32) -> Row {
    vec![
        Value::Integer(i),
        Value::BigInt(i as i64 * 1000 - 7),
        if i % 3 == 0 {
            Value::Null
        } else {
            Value::Text("n".repeat((i as usize * 13) % 90))
        },
        Value::Text(format!("c{i}")),
        if i % 2 == 0 {
            Value::Null
        } else {
            Value::timestamp_from_unix_secs(1_700_000_000 + i as i64)
        },
    ]
}

/// A heap page holding eight tuples of [`def`] rows, one of them pointed at by a redirect
/// and one line pointer dead.
pub fn heap_page() -> Vec<u8> {
    let d = def();
    let mut p = vec![0u8; PAGE_BYTES];
    raw::init(&mut p);
    for i in 0..8 {
        let t = encode_heap(&d, &row(i));
        let tup = raw::build(
            100 + i as u32,
            0,
            d.columns.len() as u16,
            t.null_bitmap.as_deref(),
            &t.data,
            0,
        );
        raw::add_tuple(&mut p, &tup).expect("fits");
    }
    raw::set_item_id(
        &mut p,
        2,
        raw::ItemId {
            off: 3,
            state: raw::LpState::Redirect,
            len: 0,
        },
    );
    raw::set_item_id(&mut p, 5, raw::ItemId::DEAD);
    p
}

/// B+tree seed pages: a leaf of COMPACT records (innodb geometry), a leaf of index entries
/// (postgres geometry), an internal page, and a meta page.
pub fn btree_pages() -> Vec<Vec<u8>> {
    let d = def();
    let id = PageId::new(1, 1);
    let leaf_h = NodeHeader {
        level: 0,
        flags: 0,
        left: NO_BLOCK,
        right: 4,
    };
    let mut clustered = vec![0u8; PAGE_BYTES];
    let recs: Vec<(Vec<u8>, Vec<u8>)> = (0..12)
        .map(|i| {
            let r = row(i);
            (
                key_of(&d, &d.primary_key, &r).expect("key"),
                encode_compact(&d, &r, 50 + i as u64, 9).expect("record"),
            )
        })
        .collect();
    node::build(
        &mut clustered,
        id,
        BTreeConfig::innodb().geometry(),
        leaf_h,
        &recs,
    )
    .expect("fits");
    let mut index = vec![0u8; PAGE_BYTES];
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..20)
        .map(|i| {
            let r = row(i);
            (
                key_of(&d, &[1], &r).expect("key"),
                vec![0, 0, 0, 1, 0, i as u8],
            )
        })
        .collect();
    node::build(
        &mut index,
        id,
        BTreeConfig::postgres().geometry(),
        leaf_h,
        &entries,
    )
    .expect("fits");
    let mut internal = vec![0u8; PAGE_BYTES];
    let downlinks: Vec<(Vec<u8>, Vec<u8>)> = (0..6u32)
        .map(|i| {
            let key = if i == 0 {
                Vec::new()
            } else {
                key_of(&d, &[1], &row(i as i32 * 3)).expect("key")
            };
            (key, (i + 2).to_le_bytes().to_vec())
        })
        .collect();
    node::build(
        &mut internal,
        id,
        BTreeConfig::postgres().geometry(),
        NodeHeader {
            level: 1,
            flags: 0,
            left: NO_BLOCK,
            right: NO_BLOCK,
        },
        &downlinks,
    )
    .expect("fits");
    let mut meta = vec![0u8; PAGE_BYTES];
    Meta {
        root: 1,
        height: 2,
        geometry: BTreeConfig::postgres().geometry(),
    }
    .write(&mut meta);
    vec![clustered, index, internal, meta]
}

fn undo_rec(info: u8, will_init: bool, data: Vec<u8>) -> WalRecord {
    WalRecord {
        lsn: mvcclab_engine::wal::Lsn(0x1000),
        end_lsn: mvcclab_engine::wal::Lsn(0x1040),
        prev_lsn: mvcclab_engine::wal::Lsn(0),
        xid: 0,
        rmgr: rmgr::UNDO,
        info,
        blocks: vec![BlockRef {
            page: PageId::new(2, 4),
            will_init,
            image: None,
            data,
        }],
        main_data: vec![],
    }
}

/// An undo record of [`def`]'s row `i` (an update's old values of columns 1 and 2).
pub fn undo_record(i: i32) -> UndoRecord {
    let d = def();
    let r = row(i);
    UndoRecord {
        kind: if i % 2 == 0 {
            UndoType::UpdateExisting
        } else {
            UndoType::DeleteMark
        },
        table: 1,
        old_trx_id: 40 + i as u64,
        old_roll_ptr: RollPtr::decode(0x55_0000_0001_0040),
        pk: key_of(&d, &d.primary_key, &r).expect("key"),
        delta: mvcclab_engine::catalog::encode_delta(&d, &r, &[1, 2]),
    }
}

/// An undo page built by redo of the undo space's own records (WRITE will_init, then
/// APPENDs of [`undo_record`]s), and the offsets of its records.
pub fn undo_page() -> (Vec<u8>, Vec<u16>) {
    let mut p = vec![0u8; PAGE_BYTES];
    undo_wal::redo_block(&undo_rec(undo_wal::info::WRITE, true, vec![]), 0, &mut p).expect("init");
    let mut offs = Vec::new();
    for i in 0..6 {
        let off = mvcclab_engine::page::hole(&p).0;
        let mut data = off.to_le_bytes().to_vec();
        data.extend_from_slice(&undo_record(i).encode());
        undo_wal::redo_block(&undo_rec(undo_wal::info::APPEND, false, data), 0, &mut p)
            .expect("append");
        offs.push(off);
    }
    (p, offs)
}

/// A rollback segment header page.
pub fn rseg_page() -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    rseg::init(&mut p);
    p
}

/// A WAL record of resource manager `rmgr_id` built from the fuzzer's bytes: info, block
/// count (1 to 3) and will_init flags, then each block's data and the main data, each
/// preceded by its length (u8). Blocks name pages 1/1, 1/2, 1/3.
pub fn record(rmgr_id: u8, inp: &mut Input<'_>) -> WalRecord {
    let info = inp.u8();
    let shape = inp.u8();
    let n = 1 + (shape as usize & 3) % 3;
    let blocks = (0..n)
        .map(|i| {
            let len = inp.u8() as usize;
            BlockRef {
                page: PageId::new(1, 1 + i as u32),
                will_init: shape & (4 << i) != 0,
                image: None,
                data: inp.bytes(len).to_vec(),
            }
        })
        .collect();
    let main_len = inp.u8() as usize;
    WalRecord {
        lsn: mvcclab_engine::wal::Lsn(0x2000),
        end_lsn: mvcclab_engine::wal::Lsn(0x2100),
        prev_lsn: mvcclab_engine::wal::Lsn(0x1F00),
        xid: 300,
        rmgr: rmgr_id,
        info,
        blocks,
        main_data: inp.bytes(main_len).to_vec(),
    }
}

/// Runs `redo` on every block of `rec` and one past the end, each on a copy of `page`.
pub fn redo_all(
    redo: fn(&WalRecord, usize, &mut [u8]) -> Result<()>,
    rec: &WalRecord,
    page: &[u8],
) {
    for b in 0..=rec.blocks.len() {
        let mut p = page.to_vec();
        ok_or_corrupted(&redo(rec, b, &mut p));
    }
}
