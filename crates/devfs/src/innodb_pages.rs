//! InnoDB page images in the device's requests, counted by index: what a real MariaDB reads
//! and writes per index, which its own counters do not say (`buffer_page_written_index_leaf`
//! counts index leaves of every index together).
//!
//! A page image is 16 KiB (`innodb_page_size`, as mvcclab starts MariaDB) at a 4 KiB
//! offset of a request's data whose last four bytes are the CRC-32C of the rest, big
//! endian, and whose four bytes before them repeat the low half of `FIL_PAGE_LSN`
//! (MariaDB 10.5+'s default `innodb_checksum_algorithm=full_crc32`: buf0flu.cc
//! `buf_flush_init_for_writing`, `FIL_PAGE_FCRC32_END_LSN`,
//! `buf_flush_assign_full_crc32_checksum`). Its FIL header gives the page
//! number (`FIL_PAGE_OFFSET`, byte 4), the page LSN (`FIL_PAGE_LSN`, byte 16), the type
//! (`FIL_PAGE_TYPE`, byte 24) and the tablespace (`FIL_PAGE_SPACE_ID`, byte 34); an index
//! page (`FIL_PAGE_INDEX`, 17855) its level and index id (`PAGE_LEVEL` and `PAGE_INDEX_ID`
//! at `FIL_PAGE_DATA` + 26 and + 28). InnoDB's index ids are unique in the server
//! (`DICT_HDR_INDEX_ID`), so an index page counts under `index ID`, any other page under
//! `type TYPE`.
//!
//! **Invariants.** A page written through the doublewrite buffer crosses the device twice
//! with the same bytes (the copy in the doublewrite area, then the page at home:
//! buf0dblwr.cc `buf_dblwr_t::flush_buffered_writes_completed`); a write of an image whose
//! page and LSN equal the last written image of that page counts once, so
//! `pages_written` is page writes, not images. Reads are not deduplicated (a page read
//! twice was read twice). An image split between two requests (a page whose 4 KiB blocks
//! are not contiguous under a file system on the device) is not found: the counts are a
//! lower bound, exact when every page is written in one request, as InnoDB writes them.
//!
//! **Locking.** One mutex over the counts and the last LSN of each page; taken once per
//! request that carries at least one image, after the scan.
//!
//! **Crash safety.** Counts only; nothing is stored.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Bytes of an InnoDB page image (`innodb_page_size`, 16 KiB).
pub const INNODB_PAGE_BYTES: usize = 16384;

/// `FIL_PAGE_INDEX`: a B-tree page.
const FIL_PAGE_INDEX: u16 = 17855;

/// One page image found in a request (see the module doc for the fields' offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageImage {
    /// `FIL_PAGE_SPACE_ID`.
    pub space_id: u32,
    /// `FIL_PAGE_OFFSET`.
    pub page_no: u32,
    /// `FIL_PAGE_LSN`.
    pub lsn: u64,
    /// `FIL_PAGE_TYPE`.
    pub page_type: u16,
    /// For an index page, its `PAGE_INDEX_ID` and `PAGE_LEVEL` (0 = leaf).
    pub index: Option<(u64, u16)>,
}

impl PageImage {
    /// The key it counts under: `index ID` for an index page, `type TYPE` otherwise.
    pub fn key(&self) -> String {
        match self.index {
            Some((id, _)) => format!("index {id}"),
            None => format!("type {}", self.page_type),
        }
    }
}

/// The page images in `data`, at 4 KiB steps from its start (see the module doc).
pub fn page_images(data: &[u8]) -> Vec<PageImage> {
    let be32 = |p: &[u8], o: usize| u32::from_be_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]);
    let mut found = Vec::new();
    let mut at = 0;
    while at + INNODB_PAGE_BYTES <= data.len() {
        let p = &data[at..at + INNODB_PAGE_BYTES];
        let stored = be32(p, INNODB_PAGE_BYTES - 4);
        // FIL_PAGE_FCRC32_END_LSN (8 bytes from the end) repeats FIL_PAGE_LSN's low 4
        // bytes (buf0flu.cc `buf_flush_init_for_writing`): a cheap test before the CRC.
        let end_lsn_agrees = p[INNODB_PAGE_BYTES - 8..INNODB_PAGE_BYTES - 4] == p[20..24];
        if stored != 0 && end_lsn_agrees && crc32c::crc32c(&p[..INNODB_PAGE_BYTES - 4]) == stored {
            let page_type = u16::from_be_bytes([p[24], p[25]]);
            let index = (page_type == FIL_PAGE_INDEX).then(|| {
                let mut id = [0u8; 8];
                id.copy_from_slice(&p[66..74]);
                (u64::from_be_bytes(id), u16::from_be_bytes([p[64], p[65]]))
            });
            let mut lsn = [0u8; 8];
            lsn.copy_from_slice(&p[16..24]);
            found.push(PageImage {
                space_id: be32(p, 34),
                page_no: be32(p, 4),
                lsn: u64::from_be_bytes(lsn),
                page_type,
                index,
            });
            at += INNODB_PAGE_BYTES;
        } else {
            at += 4096;
        }
    }
    found
}

/// Pages of one key (an index or a page type) that crossed the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageIo {
    /// Page images read.
    pub pages_read: u64,
    /// Page writes (a doublewrite copy and the write home count once).
    pub pages_written: u64,
    /// Of `pages_read`, leaf pages (`PAGE_LEVEL` 0; zero for pages that are not index
    /// pages).
    pub leaf_pages_read: u64,
    /// Of `pages_written`, leaf pages.
    pub leaf_pages_written: u64,
}

impl PageIo {
    /// Field-wise `self - earlier` (saturating).
    pub fn minus(&self, earlier: &PageIo) -> PageIo {
        PageIo {
            pages_read: self.pages_read.saturating_sub(earlier.pages_read),
            pages_written: self.pages_written.saturating_sub(earlier.pages_written),
            leaf_pages_read: self.leaf_pages_read.saturating_sub(earlier.leaf_pages_read),
            leaf_pages_written: self
                .leaf_pages_written
                .saturating_sub(earlier.leaf_pages_written),
        }
    }

    /// True when nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == PageIo::default()
    }
}

/// The counts by key and the last LSN written of each page (see the module doc).
#[derive(Default)]
pub(crate) struct PageCounter {
    by_key: BTreeMap<String, PageIo>,
    last_written_lsn: HashMap<(u32, u32), u64>,
}

impl PageCounter {
    /// Counts the images of one request: a read when `write` is false.
    pub(crate) fn count(&mut self, images: &[PageImage], write: bool) {
        for im in images {
            if write {
                let last = self
                    .last_written_lsn
                    .insert((im.space_id, im.page_no), im.lsn);
                if last == Some(im.lsn) {
                    continue;
                }
            }
            let leaf = matches!(im.index, Some((_, 0)));
            let e = self.by_key.entry(im.key()).or_default();
            if write {
                e.pages_written += 1;
                e.leaf_pages_written += u64::from(leaf);
            } else {
                e.pages_read += 1;
                e.leaf_pages_read += u64::from(leaf);
            }
        }
    }

    /// The counts so far.
    pub(crate) fn by_key(&self) -> BTreeMap<String, PageIo> {
        self.by_key.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full_crc32 page image of `space`/`page` at `lsn`, an index page of `index` at
    /// `level` when given.
    fn image(space: u32, page: u32, lsn: u64, index: Option<(u64, u16)>) -> Vec<u8> {
        let mut p = vec![0u8; INNODB_PAGE_BYTES];
        p[4..8].copy_from_slice(&page.to_be_bytes());
        p[16..24].copy_from_slice(&lsn.to_be_bytes());
        let ty: u16 = if index.is_some() { FIL_PAGE_INDEX } else { 2 };
        p[24..26].copy_from_slice(&ty.to_be_bytes());
        p[34..38].copy_from_slice(&space.to_be_bytes());
        if let Some((id, level)) = index {
            p[64..66].copy_from_slice(&level.to_be_bytes());
            p[66..74].copy_from_slice(&id.to_be_bytes());
        }
        p[100] = 0xAB;
        let end_lsn = p[20..24].to_vec();
        p[INNODB_PAGE_BYTES - 8..INNODB_PAGE_BYTES - 4].copy_from_slice(&end_lsn);
        let crc = crc32c::crc32c(&p[..INNODB_PAGE_BYTES - 4]);
        p[INNODB_PAGE_BYTES - 4..].copy_from_slice(&crc.to_be_bytes());
        p
    }

    #[test]
    fn images_are_found_at_4k_steps_and_torn_ones_are_not() {
        let mut data = vec![0u8; 4096];
        data.extend(image(5, 7, 100, Some((24, 0))));
        data.extend(image(5, 3, 90, None));
        let mut torn = image(5, 9, 80, Some((23, 1)));
        torn[200] ^= 1;
        data.extend(torn);
        let found = page_images(&data);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0],
            PageImage {
                space_id: 5,
                page_no: 7,
                lsn: 100,
                page_type: FIL_PAGE_INDEX,
                index: Some((24, 0)),
            }
        );
        assert_eq!(
            (found[1].key(), found[1].page_no),
            ("type 2".to_string(), 3)
        );
        assert!(
            page_images(&data[..INNODB_PAGE_BYTES]).is_empty(),
            "cut short"
        );
        assert!(
            page_images(&vec![0u8; 65536]).is_empty(),
            "zeros are no page"
        );
    }

    #[test]
    fn a_doublewrite_copy_counts_once_and_reads_count_every_time() {
        let mut c = PageCounter::default();
        let leaf = page_images(&image(5, 7, 100, Some((24, 0))));
        let upper = page_images(&image(5, 8, 100, Some((24, 1))));
        c.count(&leaf, true); // the doublewrite copy
        c.count(&leaf, true); // the page at home: same page, same LSN
        c.count(&upper, true);
        c.count(&page_images(&image(5, 7, 120, Some((24, 0)))), true); // written again
        c.count(&leaf, false);
        c.count(&leaf, false);
        let k = c.by_key();
        assert_eq!(
            k["index 24"],
            PageIo {
                pages_read: 2,
                pages_written: 3,
                leaf_pages_read: 2,
                leaf_pages_written: 2,
            }
        );
        assert_eq!(k["index 24"].minus(&k["index 24"]), PageIo::default());
    }
}
