//! Row formats against one table of every column type (`mvcclab_fuzz::def`): the heap tuple
//! data (`decode_heap`), the COMPACT record (`decode_compact_record`, `compact_delete_mark`,
//! `compact_system_columns`), the undo delta (`apply_delta`) and the index key
//! (`decode_key`). Input: a selector byte, then the bytes (for the heap format, the null
//! bitmap comes first when bit 4 of the selector is set). What decodes must be a valid row.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::catalog::{
    apply_delta, compact_delete_mark, compact_system_columns, decode_compact_record, decode_heap,
    decode_key,
};
use mvcclab_fuzz::{def, ok_or_corrupted, row, Input};

fuzz_target!(|data: &[u8]| {
    let d = def();
    let mut inp = Input::new(data);
    let sel = inp.u8();
    match sel % 4 {
        0 => {
            let bitmap = (sel & 0x10 != 0).then(|| inp.bytes(d.columns.len().div_ceil(8)));
            let r = decode_heap(&d, bitmap, inp.rest());
            ok_or_corrupted(&r);
            if let Ok(r) = r {
                d.check_row(&r).expect("decoded rows are valid");
            }
        }
        1 => {
            let rec = inp.rest();
            let r = decode_compact_record(&d, rec);
            ok_or_corrupted(&r);
            if let Ok(r) = r {
                d.check_row(&r.row).expect("decoded rows are valid");
            }
            ok_or_corrupted(&compact_delete_mark(rec));
            ok_or_corrupted(&compact_system_columns(&d, rec));
        }
        2 => {
            let mut target = row(7);
            let before = target.clone();
            let r = apply_delta(&d, &mut target, inp.rest());
            ok_or_corrupted(&r);
            match r {
                Ok(_) => d
                    .check_row(&target)
                    .expect("applied deltas give valid rows"),
                Err(_) => assert_eq!(target, before, "a bad delta changes nothing"),
            }
        }
        _ => {
            let types = d.column_types(&[0, 1, 2, 3, 4]).unwrap();
            let n = (sel as usize >> 2) % types.len() + 1;
            ok_or_corrupted(&decode_key(&types[..n], inp.rest()));
        }
    }
});
