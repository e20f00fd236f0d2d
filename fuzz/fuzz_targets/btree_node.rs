//! B+tree node and meta pages: `Node::parse` and every reader of a parsed node, the page
//! changers on a copy (`insert_at`, `remove_at`, `replace_at`, `set_dead`), `Meta::read`,
//! and the COMPACT record and key decoders on leaf entries. Input: seed page choice
//! (clustered leaf, index leaf, internal page, meta page), a probe key (length u8, bytes),
//! then (offset, byte) patches to the page.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::btree::node::{self, Meta, Node};
use mvcclab_engine::catalog::{
    compact_delete_mark, compact_system_columns, decode_compact_record, decode_key,
};
use mvcclab_engine::page::PageId;
use mvcclab_fuzz::{btree_pages, def, ok_or_corrupted, patch, Input};

fuzz_target!(|data: &[u8]| {
    let d = def();
    let pk = d.column_types(&d.primary_key).unwrap();
    let id = PageId::new(16384, 1);
    let mut inp = Input::new(data);
    let mut seeds = btree_pages();
    let pick = inp.u8() as usize % seeds.len();
    let mut p = seeds.swap_remove(pick);
    let n = inp.u8() as usize;
    let probe = inp.bytes(n).to_vec();
    patch(&mut p, &mut inp);
    ok_or_corrupted(&Meta::read(&p, id));
    let r = Node::parse(&p, id);
    ok_or_corrupted(&r);
    if let Ok(nd) = r {
        let _ = (
            nd.level(),
            nd.flags(),
            nd.left(),
            nd.right(),
            nd.free_bytes(),
            nd.used_bytes(),
        );
        let _ = (nd.dead_slots(), nd.is_dead(0));
        ok_or_corrupted(&nd.search(&probe));
        ok_or_corrupted(&nd.upper_bound(&probe));
        ok_or_corrupted(&nd.child_index(&probe, true));
        ok_or_corrupted(&nd.entries());
        for i in 0..=nd.len() {
            ok_or_corrupted(&nd.entry_space(i));
            let e = nd.entry(i);
            ok_or_corrupted(&e);
            let Ok((k, v)) = e else { continue };
            if nd.level() > 0 {
                ok_or_corrupted(&nd.child(i));
                continue;
            }
            ok_or_corrupted(&decode_key(&pk, k));
            let r = decode_compact_record(&d, v);
            ok_or_corrupted(&r);
            if let Ok(r) = r {
                d.check_row(&r.row).expect("decoded rows are valid");
            }
            ok_or_corrupted(&compact_delete_mark(v));
            ok_or_corrupted(&compact_system_columns(&d, v));
        }
    }
    ok_or_corrupted(&node::insert_at(&mut p.clone(), id, 1, &probe, b"v"));
    ok_or_corrupted(&node::remove_at(&mut p.clone(), id, 0));
    ok_or_corrupted(&node::replace_at(&mut p.clone(), id, 0, &probe, &probe));
    ok_or_corrupted(&node::set_dead(&mut p.clone(), id, 1));
    ok_or_corrupted(&node::remove_slots(&mut p.clone(), id, &[0, 2]));
});
