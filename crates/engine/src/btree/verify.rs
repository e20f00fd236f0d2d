//! Statistics and the structural check of a quiet tree (PostgreSQL contrib/amcheck
//! verify_nbtree.c `bt_index_check` → `bt_check_every_level`,
//! `bt_check_level_from_leftmost`, `bt_target_page_check`; contrib/pgstattuple
//! pgstatindex.c `pgstatindex` for the counts).

use super::dedup;
use super::node::{FLAG_INCOMPLETE_SPLIT, NO_BLOCK};
use super::tree::{BTree, BTreeStats};
use crate::error::{Error, Result};
use crate::page::PageId;

impl BTree {
    /// Pages, leaf and internal page counts, entries, bytes used and height, by walking
    /// each level left to right from its leftmost page (one shared latch at a time).
    /// Exact when the tree is quiet.
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a damaged page or a sibling cycle; pool errors.
    pub fn stats(&self) -> Result<BTreeStats> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let mut s = BTreeStats {
            pages: self.n_blocks()?,
            height: meta.height,
            page_usable_bytes: self.usable as u32,
            ..Default::default()
        };
        self.walk_levels(
            &meta,
            |_, n, level| {
                let used = n.used_bytes() as u64;
                if level > 0 {
                    s.internal_pages += 1;
                    s.internal_used_bytes += used;
                    return Ok(None::<()>);
                }
                s.leaf_pages += 1;
                s.leaf_used_bytes += used;
                if self.cfg.deduplicate {
                    for i in 0..n.len() {
                        let (k, v) = n.entry(i)?;
                        if dedup::is_posting(k, v) {
                            s.posting_entries += 1;
                            s.posting_tids += dedup::n_tids(v) as u64;
                            s.entries += dedup::n_tids(v) as u64;
                        } else {
                            s.entries += 1;
                        }
                    }
                } else {
                    s.entries += n.len() as u64;
                }
                if n.right() == NO_BLOCK {
                    s.rightmost_leaf_used_bytes = used;
                }
                Ok(None)
            },
            |_, _| Ok(()),
        )?;
        Ok(s)
    }

    /// Checks the whole structure (PostgreSQL contrib/amcheck `bt_index_check`): every
    /// page's level and geometry, keys strictly ascending within each page and inside the
    /// bounds its parent gives, internal pages' first key empty, no INCOMPLETE_SPLIT left,
    /// and the sibling links of every level matching the order the downlinks give. Returns
    /// the statistics. Call it on a quiet tree (it takes one latch at a time).
    ///
    /// Errors: [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) naming the first violation; pool errors.
    pub fn verify(&self) -> Result<BTreeStats> {
        let (mg, meta) = self.read_meta()?;
        drop(mg);
        let root_level = Self::root_level(&meta);
        let mut levels: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); root_level as usize + 1];
        let mut s = BTreeStats {
            pages: self.n_blocks()?,
            height: meta.height,
            page_usable_bytes: self.usable as u32,
            ..Default::default()
        };
        let mut budget = s.pages as u64;
        self.verify_page(
            meta.root,
            self.meta_id(),
            root_level,
            None,
            None,
            &mut levels,
            &mut s,
            &mut budget,
        )?;
        for (level, pages) in levels.iter().enumerate() {
            for (j, &(block, left, right)) in pages.iter().enumerate() {
                let want_left = if j == 0 { NO_BLOCK } else { pages[j - 1].0 };
                let want_right = pages.get(j + 1).map_or(NO_BLOCK, |p| p.0);
                if left != want_left || right != want_right {
                    return Err(Error::corrupted(format!(
                            "B+tree {}: level {level} links left {left} right {right}, the downlinks say {want_left} and {want_right}",
                            PageId::new(self.rel, block)
                        )));
                }
            }
        }
        if let Some(&(last, _, _)) = levels[0].last() {
            let g = self.fetch_read(last, self.meta_id(), "leaf")?;
            s.rightmost_leaf_used_bytes =
                self.node(g.data(), g.page_id(), Some(0))?.used_bytes() as u64;
        }
        Ok(s)
    }

    #[allow(clippy::too_many_arguments)]
    fn verify_page(
        &self,
        block: u32,
        from: PageId,
        level: u16,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
        levels: &mut [Vec<(u32, u32, u32)>],
        s: &mut BTreeStats,
        budget: &mut u64,
    ) -> Result<()> {
        let bad = |id: PageId, what: String| Error::corrupted(format!("B+tree {id}: {what}"));
        if *budget == 0 {
            return Err(bad(
                from,
                "more pages reachable than the relation has".into(),
            ));
        }
        *budget -= 1;
        let (id, hdr, entries, used) = {
            let g = self.fetch_read(block, from, "downlink")?;
            let id = g.page_id();
            let n = self.node(g.data(), id, Some(level))?;
            (id, n.header(), n.entries()?, n.used_bytes() as u64)
        };
        if hdr.flags & FLAG_INCOMPLETE_SPLIT != 0 {
            return Err(bad(id, "INCOMPLETE_SPLIT is set".into()));
        }
        levels[level as usize].push((block, hdr.left, hdr.right));
        let first_checked = if level > 0 {
            if !entries[0].key.is_empty() {
                return Err(bad(
                    id,
                    "first internal key is not empty (minus infinity)".into(),
                ));
            }
            1
        } else {
            0
        };
        for (i, e) in entries.iter().enumerate().skip(first_checked) {
            if i > first_checked && entries[i - 1].key >= e.key {
                return Err(bad(id, format!("keys {} and {i} are not ascending", i - 1)));
            }
            let above = match low {
                None => true,
                Some(l) if level > 0 => e.key.as_slice() > l,
                Some(l) => e.key.as_slice() >= l,
            };
            if !above || high.is_some_and(|h| e.key.as_slice() >= h) {
                return Err(bad(
                    id,
                    format!("key {i} is outside the bounds its parent gives"),
                ));
            }
        }
        if level == 0 {
            s.leaf_pages += 1;
            s.leaf_used_bytes += used;
            if !self.cfg.deduplicate {
                s.entries += entries.len() as u64;
                return Ok(());
            }
            // Posting entries: TIDs ascending, all below the next key (or the high bound).
            for (i, e) in entries.iter().enumerate() {
                let next = entries.get(i + 1).map(|n| n.key.as_slice()).or(high);
                let t = dedup::check_entry(id, &e.key, &e.value, next)
                    .map_err(|err| bad(id, format!("entry {i}: {err}")))?;
                s.entries += t as u64;
                if t > 1 {
                    s.posting_entries += 1;
                    s.posting_tids += t as u64;
                }
            }
            return Ok(());
        }
        s.internal_pages += 1;
        s.internal_used_bytes += used;
        for (i, e) in entries.iter().enumerate() {
            let child: [u8; 4] = e
                .value
                .as_slice()
                .try_into()
                .map_err(|_| bad(id, format!("downlink {i} is not 4 bytes")))?;
            let child_low = if i == 0 { low } else { Some(e.key.as_slice()) };
            let child_high = entries.get(i + 1).map(|n| n.key.as_slice()).or(high);
            self.verify_page(
                u32::from_le_bytes(child),
                id,
                level - 1,
                child_low,
                child_high,
                levels,
                s,
                budget,
            )?;
        }
        Ok(())
    }
}
