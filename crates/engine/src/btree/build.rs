//! The sorted build of an empty tree (PostgreSQL nbtsort.c `_bt_load` / `_bt_buildadd`,
//! with `_bt_sort_dedup_finish_pending` for posting entries; InnoDB btr0bulk.cc
//! `BtrBulk`): leaves filled left to right, each level above built from the one below up
//! to a single root, every page logged whole.

use super::dedup;
use super::node::{self, Meta, NodeHeader, NO_BLOCK};
use super::tree::{truncated_separator, BTree};
use super::wal::{self as bwal, info};
use crate::buffer::{log_change, WritePageGuard};
use crate::error::{Error, Result};
use crate::wal::{rmgr, RecordBuilder};
use std::sync::atomic::Ordering;

impl BTree {
    /// Fills an empty tree from `entries`, sorted ascending by key with no duplicate keys,
    /// bottom up as a sorted index build does (PostgreSQL nbtsort.c `_bt_load` /
    /// `_bt_buildadd` for CREATE INDEX; InnoDB btr0bulk.cc `BtrBulk` for ALTER TABLE ADD
    /// INDEX): leaves are filled left to right to `leaf_fill_pct` percent of their usable
    /// bytes (PostgreSQL: the index fillfactor, 90 by default; InnoDB innodb_fill_factor),
    /// then each level above gets one downlink per page below, filled to
    /// `internal_fill_pct` (PostgreSQL BTREE_NONLEAF_FILLFACTOR, 70), up to a single
    /// root. Separators are suffix-truncated when the tree's configuration says so. Every
    /// page is logged whole as one BUILD record (PostgreSQL writes each built page to the
    /// WAL as a full-page image, `log_newpage`); the last names the new root in the meta
    /// page. The empty root leaf of [`BTree::create`] becomes the first leaf.
    ///
    /// Errors: [`Error::InvalidValue`] when the tree is not empty, `entries` are not
    /// strictly ascending, or a fill percentage is outside 10..=100;
    /// [`Error::TooLarge`] for an entry over [`BTree::max_entry_bytes`]; pool and WAL
    /// errors.
    pub fn bulk_load(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        leaf_fill_pct: u8,
        internal_fill_pct: u8,
    ) -> Result<()> {
        self.bulk_load_with(
            entries,
            leaf_fill_pct,
            internal_fill_pct,
            self.cfg.deduplicate,
        )
    }

    /// [`BTree::bulk_load`], merging runs of equal keys into posting entries when
    /// `deduplicate` (and the tree deduplicates): nbtsort.c `_bt_load` with
    /// `_bt_sort_dedup_finish_pending`, which PostgreSQL skips for unique indexes.
    ///
    /// Errors: as [`BTree::bulk_load`].
    pub fn bulk_load_with(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        leaf_fill_pct: u8,
        internal_fill_pct: u8,
        deduplicate: bool,
    ) -> Result<()> {
        for pct in [leaf_fill_pct, internal_fill_pct] {
            if !(10..=100).contains(&pct) {
                return Err(Error::InvalidValue(format!(
                    "bulk load fill percentage {pct} is outside 10..=100"
                )));
            }
        }
        if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::InvalidValue(
                "bulk load entries are not strictly ascending by key".into(),
            ));
        }
        for (k, v) in entries {
            self.check_size(k, v)?;
        }
        let mut mg = self.pool.fetch_write(self.meta_id())?;
        let meta = Meta::read(mg.data(), mg.page_id())?;
        self.check_meta(&meta, mg.page_id())?;
        // Descents read the meta page (and wait for its latch) until the build names the
        // new root: the old, empty root stays a sibling-less leaf the cache check accepts.
        self.root_cache.store(0, Ordering::Release);
        let empty = meta.height == 1 && {
            let rg = self.fetch_read(meta.root, self.meta_id(), "root")?;
            self.node(rg.data(), rg.page_id(), Some(0))?.is_empty()
        };
        {
            if !empty {
                return Err(Error::InvalidValue(format!(
                    "bulk load into B+tree {} that is not empty",
                    self.rel
                )));
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        // Pages of one level: (first key, entries), cut where the next entry would pass
        // the fill target (a page always takes at least one entry, as _bt_buildadd does).
        // With innodb_compact, InnoDB's rule (btr0bulk.cc `PageBulk::isSpaceAvailable`):
        // a record goes in while the free space it leaves, its share of the page directory
        // counted, is at least the reserve, `srv_page_size × (100 − fill) / 100`.
        let page_bytes = self.pool.store().page_size().bytes();
        let cut = |items: Vec<(Vec<u8>, Vec<u8>)>, pct: u8| -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
            let target = self.usable * pct as usize / 100;
            let reserve = page_bytes * (100 - pct as usize) / 100;
            let takes = |n: usize, used: usize| {
                if self.geo.innodb_compact {
                    self.page_fits(n, used + reserve)
                } else {
                    used <= target
                }
            };
            let mut pages: Vec<Vec<(Vec<u8>, Vec<u8>)>> = Vec::new();
            let mut used = 0;
            for (k, v) in items {
                let sp = self.geo.space(k.len(), v.len());
                match pages.last_mut() {
                    Some(p) if takes(p.len() + 1, used + sp) => {
                        used += sp;
                        p.push((k, v));
                    }
                    _ => {
                        used = sp;
                        pages.push(vec![(k, v)]);
                    }
                }
            }
            pages
        };
        let leaf_entries = if deduplicate && self.new_postings {
            dedup::merge_sorted(entries, self.max_posting)
        } else {
            entries.to_vec()
        };
        let mut level_pages = cut(leaf_entries, leaf_fill_pct);
        // Internal levels: each page's low key (its first separator, stored as minus
        // infinity in the page itself).
        let mut lows: Vec<Vec<u8>> = Vec::new();
        let mut level: u16 = 0;
        loop {
            let top = level_pages.len() == 1;
            let mut uplinks: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(level_pages.len());
            // A page is written once the next one's block is known (its right link), as
            // _bt_buildadd writes a page when it starts the next.
            let mut prev: Option<(WritePageGuard<'_>, usize)> = None;
            let mut prev_block = NO_BLOCK;
            for i in 0..=level_pages.len() {
                let next = if i < level_pages.len() {
                    Some(if level == 0 && i == 0 {
                        self.fetch_write(meta.root, self.meta_id(), "root")?
                    } else {
                        self.pool.new_page(self.rel)?
                    })
                } else {
                    None
                };
                let next_block = next.as_ref().map_or(NO_BLOCK, |g| g.page_id().block);
                if let Some((mut g, j)) = prev.take() {
                    let id = g.page_id();
                    let page_entries = &level_pages[j];
                    let h = NodeHeader {
                        level,
                        flags: 0,
                        left: prev_block,
                        right: next_block,
                    };
                    node::build(g.data_mut(), id, self.geo, h, page_entries)?;
                    let mut rec = RecordBuilder::new(rmgr::BTREE, info::BUILD)
                        .block(id, true, &bwal::encode_node(h, page_entries))
                        .main_data(&bwal::encode_geometry(self.geo));
                    if top {
                        let m = Meta {
                            root: id.block,
                            height: level as u32 + 1,
                            ..meta
                        };
                        m.write(mg.data_mut());
                        rec = rec.block(mg.page_id(), true, &m.encode());
                        log_change(self.pool.wal(), &rec, &mut [&mut g, &mut mg])?;
                        self.cache_root(m.root, m.height);
                    } else {
                        log_change(self.pool.wal(), &rec, &mut [&mut g])?;
                    }
                    prev_block = id.block;
                }
                if let Some(g) = next {
                    let sep = match i {
                        0 => Vec::new(),
                        _ if level > 0 => lows[i].clone(),
                        _ => {
                            let first = &level_pages[i][0].0;
                            let (lk, lv) = level_pages[i - 1].last().expect("page with entries");
                            let last = if self.cfg.deduplicate {
                                dedup::max_key(lk, lv)
                            } else {
                                lk.clone()
                            };
                            if self.cfg.suffix_truncation {
                                truncated_separator(&last, first)
                            } else {
                                first.clone()
                            }
                        }
                    };
                    uplinks.push((sep, g.page_id().block.to_le_bytes().to_vec()));
                    prev = Some((g, i));
                }
            }
            if top {
                return Ok(());
            }
            // The level above: the first downlink's key means minus infinity.
            level += 1;
            level_pages = cut(uplinks, internal_fill_pct);
            lows = level_pages
                .iter_mut()
                .map(|p| std::mem::take(&mut p[0].0))
                .collect();
        }
    }
}
