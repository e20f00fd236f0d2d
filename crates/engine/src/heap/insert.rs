//! Insert into a heap table: the tuple onto a page with room for it and the fillfactor
//! reserve, WAL-logged, then its index entries (PostgreSQL REL_15 heapam.c `heap_insert`,
//! hio.c `RelationGetBufferForTuple` with the free space map, nodeModifyTable.c
//! `ExecInsert` calling `ExecInsertIndexTuples`, in `index.rs`).

use super::page as hp;
use super::table::{Ctx, HeapTable};
use super::tuple::{self as ht, maxalign, Tid};
use super::wal::{info, insert_block_data};
use crate::buffer::{log_change, WritePageGuard};
use crate::catalog::{encode_heap, Row};
use crate::error::{Error, Result};
use crate::wal::{rmgr, RecordBuilder};
use std::sync::atomic::Ordering;

impl HeapTable {
    /// RelationGetBufferForTuple: a page of the heap with room for `len` bytes plus the
    /// fillfactor reserve, from the table's target block, the free space map, or a new page,
    /// never `avoid`; returned exclusively locked with whether it is new.
    pub(super) fn page_for_tuple(
        &self,
        len: usize,
        avoid: Option<u32>,
    ) -> Result<(WritePageGuard<'_>, bool)> {
        let need = maxalign(len) + self.save_free_space();
        let mut cand = match self.target_block.load(Ordering::Relaxed) {
            u32::MAX => self.fsm.search(need),
            b => Some(b),
        };
        let mut tries = 0;
        while let Some(b) = cand {
            tries += 1;
            if Some(b) != avoid && b < self.pool.store().n_blocks(self.heap_rel)? {
                let g = self.pool.fetch_write(self.page_id(b))?;
                let free = hp::heap_free_space(g.data());
                if need <= free {
                    return Ok((g, false));
                }
                self.fsm.record(b, free);
            }
            if tries > 1000 {
                break;
            }
            cand = self.fsm.search(need);
            if cand == Some(b) {
                break; // the map still names the page we just found wanting (or must avoid)
            }
        }
        let mut g = self.pool.new_page(self.heap_rel)?;
        hp::init(g.data_mut());
        self.target_block
            .store(g.page_id().block, Ordering::Relaxed);
        Ok((g, true))
    }

    pub(super) fn heap_insert(&self, ctx: &Ctx<'_>, row: &Row) -> Result<Tid> {
        let enc = encode_heap(&self.def, row);
        let t = ht::build(
            ctx.xid,
            ctx.cid,
            self.def.columns.len() as u16,
            enc.null_bitmap.as_deref(),
            &enc.data,
            0,
        );
        let page_bytes = self.pool.store().page_size().bytes();
        let max = page_bytes - crate::page::PAGE_HEADER_BYTES - hp::ITEM_ID_BYTES;
        if maxalign(t.len()) > max {
            return Err(Error::TooLarge {
                what: "heap tuple",
                bytes: t.len(),
                max_bytes: max,
            });
        }
        let (mut g, new) = self.page_for_tuple(t.len(), None)?;
        let block = g.page_id().block;
        let off = hp::add_tuple(g.data_mut(), &t).ok_or_else(|| {
            Error::corrupted(format!("{}: no room for a tuple that fit", g.page_id()))
        })?;
        let tid = Tid { block, offset: off };
        let id = g.page_id();
        {
            let lp = hp::item_id(g.data(), off, id)?;
            ht::set_ctid(hp::tuple_mut(g.data_mut(), lp), tid);
        }
        self.clear_all_visible(&mut g);
        let stored = hp::tuple(g.data(), hp::item_id(g.data(), off, id)?).to_vec();
        let init = new && off == 1;
        let rec = RecordBuilder::new(
            rmgr::HEAP,
            info::INSERT | if init { info::INIT_PAGE } else { 0 },
        )
        .xid(ctx.xid)
        .block(id, init, &insert_block_data(off, &stored));
        log_change(&self.wal, &rec, &mut [&mut g])?;
        self.target_block.store(block, Ordering::Relaxed);
        Ok(tid)
    }
}
