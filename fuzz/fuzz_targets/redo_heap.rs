//! Heap redo (`heap::wal::redo_block`). Input: seed page choice (zero page or a heap page of
//! eight tuples, a redirect and a dead line pointer), a record (`mvcclab_fuzz::record`:
//! info, blocks, data, main data), then (offset, byte) patches to the page. Every block and
//! one past the end is redone on a copy of the page: Ok or `Corrupted`, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::heap::wal::redo_block;
use mvcclab_engine::wal::rmgr;
use mvcclab_fuzz::{heap_page, patch, record, redo_all, Input, PAGE_BYTES};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let mut page = if inp.u8() & 1 == 0 {
        heap_page()
    } else {
        vec![0u8; PAGE_BYTES]
    };
    let rec = record(rmgr::HEAP, &mut inp);
    patch(&mut page, &mut inp);
    redo_all(redo_block, &rec, &page);
});
