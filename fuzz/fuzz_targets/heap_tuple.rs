//! Heap page and tuple access: line pointers (`item_id`), the tuple header accessors, the
//! null bitmap and data (`bitmap_and_data`) and the heap row format (`catalog::decode_heap`),
//! free space, and `heap::wal::mask_unlogged`. Input: a fill byte (when odd, the free space
//! between pd_lower and pd_upper is filled with it, so that patches of pd_lower find
//! non-zero line pointers there), then (offset, byte) patches to a heap page of eight
//! tuples, a redirect and a dead line pointer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::catalog::decode_heap;
use mvcclab_engine::heap::raw::{self, HeaderRead, LpState};
use mvcclab_engine::heap::wal::mask_unlogged;
use mvcclab_engine::page::{hole, PageId};
use mvcclab_fuzz::{def, heap_page, ok_or_corrupted, patch, Input};

fuzz_target!(|data: &[u8]| {
    let d = def();
    let id = PageId::new(16384, 0);
    let mut p = heap_page();
    let mut inp = Input::new(data);
    let fill = inp.u8();
    if fill & 1 != 0 {
        let (lower, upper) = hole(&p);
        p[lower as usize..upper as usize].fill(fill);
    }
    patch(&mut p, &mut inp);
    let _ = (raw::free_space(&p), raw::heap_free_space(&p));
    for off in 0..=raw::max_offset(&p).saturating_add(1) {
        let r = raw::item_id(&p, off, id);
        ok_or_corrupted(&r);
        let Ok(lp) = r else { continue };
        if lp.state != LpState::Normal {
            continue;
        }
        let t = raw::tuple(&p, lp);
        let _ = (t.xmin(), t.xmax(), t.ctid(), t.infomask(), t.infomask2());
        let _ = (t.is_hot_updated(), t.is_heap_only(), raw::header_ok(t));
        if let Some((bitmap, data)) = t.bitmap_and_data() {
            let r = decode_heap(&d, bitmap, data);
            ok_or_corrupted(&r);
            if let Ok(row) = r {
                d.check_row(&row).expect("decoded rows are valid");
            }
        }
    }
    mask_unlogged(&mut p);
});
