//! Undo space redo (`clustered::undo_wal::redo_block`). Input: seed page choice (an undo
//! page holding six undo records, a rollback segment header page, a zero page), a record
//! (`mvcclab_fuzz::record`), then (offset, byte) patches to the page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::clustered::undo_wal::redo_block;
use mvcclab_engine::wal::rmgr;
use mvcclab_fuzz::{patch, record, redo_all, rseg_page, undo_page, Input, PAGE_BYTES};

fuzz_target!(|data: &[u8]| {
    let mut inp = Input::new(data);
    let mut page = match inp.u8() % 3 {
        0 => undo_page().0,
        1 => rseg_page(),
        _ => vec![0u8; PAGE_BYTES],
    };
    let rec = record(rmgr::UNDO, &mut inp);
    patch(&mut page, &mut inp);
    redo_all(redo_block, &rec, &page);
});
