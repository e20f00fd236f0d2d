//! Undo records: `UndoRecord::decode` on the fuzzer's bytes, or (selector bit 0)
//! `clustered::record_on_page` on an undo page of six records patched with (offset, byte)
//! pairs, at one of its record offsets or any offset; then the delta (`apply_delta`) and
//! primary key (`decode_key`) of what decodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::catalog::{apply_delta, decode_key};
use mvcclab_engine::clustered::{record_on_page, UndoRecord};
use mvcclab_engine::page::PageId;
use mvcclab_fuzz::{def, ok_or_corrupted, patch, row, undo_page, Input};

fuzz_target!(|data: &[u8]| {
    let d = def();
    let mut inp = Input::new(data);
    let sel = inp.u8();
    let r = if sel & 1 == 0 {
        UndoRecord::decode(inp.rest())
    } else {
        let (mut p, offs) = undo_page();
        let at = inp.u16();
        let off = if sel & 2 == 0 {
            offs[at as usize % offs.len()]
        } else {
            at
        };
        patch(&mut p, &mut inp);
        record_on_page(&p, PageId::new(7, 9), off)
    };
    ok_or_corrupted(&r);
    if let Ok(u) = r {
        let pk = d.column_types(&d.primary_key).unwrap();
        ok_or_corrupted(&decode_key(&pk, &u.pk));
        ok_or_corrupted(&apply_delta(&d, &mut row(3), &u.delta));
    }
});
