//! B+tree redo (`btree::wal::redo_block`). Input: seed page choice (a clustered leaf of
//! COMPACT records, an index leaf, an internal page, a meta page, a zero page), a record
//! (`mvcclab_fuzz::record`), then (offset, byte) patches to the page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::btree::wal::redo_block;
use mvcclab_engine::wal::rmgr;
use mvcclab_fuzz::{btree_pages, patch, record, redo_all, Input, PAGE_BYTES};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let mut seeds = btree_pages();
    seeds.push(vec![0u8; PAGE_BYTES]);
    let pick = inp.u8() as usize % seeds.len();
    let mut page = seeds.swap_remove(pick);
    let rec = record(rmgr::BTREE, &mut inp);
    patch(&mut page, &mut inp);
    redo_all(redo_block, &rec, &page);
});
