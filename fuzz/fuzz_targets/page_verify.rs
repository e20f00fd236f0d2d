//! Page verification (`page::verify`, `identify`, `fpi_hole`) on buffers of any length and
//! content; then, with a checksum stamped (`finish_for_write`) so that verification passes,
//! again on the page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::page::{
    finish_for_write, fpi_hole, identify, verify, PageId, PAGE_HEADER_BYTES,
};
use mvcclab_fuzz::ok_or_corrupted;

fuzz_target!(|data: &[u8]| {
    let id = PageId::new(16384, 3);
    ok_or_corrupted(&verify(data, id));
    let _ = identify(data);
    if data.len() >= PAGE_HEADER_BYTES {
        let _ = fpi_hole(data);
        let mut p = data.to_vec();
        finish_for_write(&mut p, id);
        ok_or_corrupted(&verify(&p, id));
        assert_eq!(identify(&p), Some(id));
    }
});
