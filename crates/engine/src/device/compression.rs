//! Transparent-compression accounting: what a compressing SSD (ScaleFlux CSD and the like)
//! would store for each 4 KiB block written.
//!
//! For every 4 KiB block written, the physical size is its compressed size with the chosen
//! algorithm, capped at 4096 (a block that does not compress is stored raw). The model keeps
//! the latest physical size of every block of every file, so an overwrite replaces the old
//! size, and removing a file frees its blocks (TRIM). Logical bytes are the blocks held ×
//! 4096.

use super::{FileId, BLOCK_4K};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Compression algorithm of the emulated SSD. Parsed from `none`, `lz4`, `zstd` (level 3) or
/// `zstd:LEVEL` (1..=22).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// No compression accounting (physical bytes are not computed).
    #[default]
    None,
    /// LZ4 block format (lz4_flex).
    Lz4,
    /// Zstandard at the given level.
    Zstd {
        /// Compression level, 1..=22.
        level: i32,
    },
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd { level: 3 }),
            _ => {
                let level = s
                    .strip_prefix("zstd:")
                    .and_then(|l| l.parse::<i32>().ok())
                    .filter(|l| (1..=22).contains(l));
                level.map(|level| Compression::Zstd { level }).ok_or_else(|| {
                    format!("unknown compression '{s}'; expected none, lz4, zstd or zstd:LEVEL with LEVEL in 1..=22")
                })
            }
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Lz4 => f.write_str("lz4"),
            Compression::Zstd { level } => write!(f, "zstd:{level}"),
        }
    }
}

/// Whole-device compression state: bytes held now, not counts over time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompressionTotals {
    /// Blocks held × 4096.
    pub logical_bytes: u64,
    /// Sum of the latest physical size of every block held.
    pub physical_bytes: u64,
    /// `logical_bytes / physical_bytes` (1.0 when empty).
    pub ratio: f64,
}

impl CompressionTotals {
    /// `self` with `ratio` computed from the two byte counts (1.0 when empty).
    pub fn with_ratio(mut self) -> CompressionTotals {
        self.ratio = if self.physical_bytes == 0 {
            1.0
        } else {
            self.logical_bytes as f64 / self.physical_bytes as f64
        };
        self
    }

    /// `self + o`, the ratio recomputed.
    pub fn plus(&self, o: &CompressionTotals) -> CompressionTotals {
        CompressionTotals {
            logical_bytes: self.logical_bytes + o.logical_bytes,
            physical_bytes: self.physical_bytes + o.physical_bytes,
            ratio: 0.0,
        }
        .with_ratio()
    }
}

/// The per-block physical sizes of one device. See the module doc.
pub struct CompressionModel {
    algo: Compression,
    blocks: Mutex<HashMap<FileId, Vec<u32>>>,
    logical_bytes: AtomicU64,
    physical_bytes: AtomicU64,
}

impl CompressionModel {
    /// A model for `algo`, or `None` for [`Compression::None`].
    pub fn new(algo: Compression) -> Option<Self> {
        (algo != Compression::None).then(|| CompressionModel {
            algo,
            blocks: Mutex::new(HashMap::new()),
            logical_bytes: AtomicU64::new(0),
            physical_bytes: AtomicU64::new(0),
        })
    }

    /// Physical bytes of one 4 KiB block (`block.len()` ≤ 4096; a shorter tail block is
    /// compressed as it is).
    pub fn compressed_len(&self, block: &[u8]) -> u32 {
        let n = match self.algo {
            Compression::None => block.len(),
            Compression::Lz4 => lz4_flex::block::compress(block).len(),
            Compression::Zstd { level } => {
                zstd::bulk::compress(block, level).map_or(block.len(), |v| v.len())
            }
        };
        n.min(block.len()) as u32
    }

    /// Records the latest content of 4 KiB block `block_no` of `file`; returns its physical
    /// size in bytes.
    pub fn record(&self, file: FileId, block_no: u64, block: &[u8]) -> u32 {
        let size = self.compressed_len(block);
        let mut files = self.blocks.lock();
        let sizes = files.entry(file).or_default();
        let i = block_no as usize;
        if sizes.len() <= i {
            sizes.resize(i + 1, u32::MAX);
        }
        let old = std::mem::replace(&mut sizes[i], size);
        if old == u32::MAX {
            self.logical_bytes.fetch_add(BLOCK_4K, Ordering::Relaxed);
        } else {
            self.physical_bytes.fetch_sub(old as u64, Ordering::Relaxed);
        }
        self.physical_bytes
            .fetch_add(size as u64, Ordering::Relaxed);
        size
    }

    /// Forgets every block of `file` (the file was removed: TRIM).
    pub fn remove_file(&self, file: FileId) {
        if let Some(sizes) = self.blocks.lock().remove(&file) {
            for s in sizes.into_iter().filter(|&s| s != u32::MAX) {
                self.logical_bytes.fetch_sub(BLOCK_4K, Ordering::Relaxed);
                self.physical_bytes.fetch_sub(s as u64, Ordering::Relaxed);
            }
        }
    }

    /// Logical and physical bytes held by the files `keep` selects (the WAL's, the
    /// relations': `file_ids::is_wal`, `is_relation`).
    pub fn totals_where(&self, keep: impl Fn(FileId) -> bool) -> CompressionTotals {
        let files = self.blocks.lock();
        let mut t = CompressionTotals::default();
        for (_, sizes) in files.iter().filter(|(f, _)| keep(**f)) {
            for &s in sizes.iter().filter(|&&s| s != u32::MAX) {
                t.logical_bytes += BLOCK_4K;
                t.physical_bytes += s as u64;
            }
        }
        t.with_ratio()
    }

    /// Logical and physical bytes held by each file that holds a block.
    pub fn totals_by_file(&self) -> HashMap<FileId, CompressionTotals> {
        let files = self.blocks.lock();
        files
            .iter()
            .map(|(f, sizes)| {
                let mut t = CompressionTotals::default();
                for &s in sizes.iter().filter(|&&s| s != u32::MAX) {
                    t.logical_bytes += BLOCK_4K;
                    t.physical_bytes += s as u64;
                }
                (*f, t.with_ratio())
            })
            .filter(|(_, t)| t.logical_bytes > 0)
            .collect()
    }

    /// Current logical and physical bytes held.
    pub fn totals(&self) -> CompressionTotals {
        let logical_bytes = self.logical_bytes.load(Ordering::Relaxed);
        let physical_bytes = self.physical_bytes.load(Ordering::Relaxed);
        let ratio = if physical_bytes == 0 {
            1.0
        } else {
            logical_bytes as f64 / physical_bytes as f64
        };
        CompressionTotals {
            logical_bytes,
            physical_bytes,
            ratio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_block(seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn zero_blocks_shrink_random_blocks_do_not() {
        for algo in [Compression::Lz4, Compression::Zstd { level: 3 }] {
            let m = CompressionModel::new(algo).unwrap();
            let zero = m.compressed_len(&[0u8; 4096]);
            let random = m.compressed_len(&random_block(7));
            assert!(zero < 100, "{algo}: zero block compressed to {zero} bytes");
            assert_eq!(random, 4096, "{algo}: random block must be stored raw");
        }
    }

    #[test]
    fn totals_where_splits_the_files() {
        let m = CompressionModel::new(Compression::Lz4).unwrap();
        m.record(1, 0, &[0u8; 4096]);
        m.record(7, 0, &random_block(3));
        m.record(7, 2, &random_block(4));
        let one = m.totals_where(|f| f == 1);
        let seven = m.totals_where(|f| f == 7);
        assert_eq!((one.logical_bytes, seven.logical_bytes), (4096, 8192));
        assert!(one.physical_bytes < 100 && seven.physical_bytes == 8192);
        assert_eq!(
            one.physical_bytes + seven.physical_bytes,
            m.totals().physical_bytes
        );
        let by = m.totals_by_file();
        assert_eq!(by.len(), 2);
        assert_eq!(by[&7], seven);
        assert_eq!(
            by[&1].plus(&by[&7]).physical_bytes,
            m.totals().physical_bytes
        );
    }

    #[test]
    fn overwrite_replaces_the_blocks_size_and_remove_frees_it() {
        let m = CompressionModel::new(Compression::Lz4).unwrap();
        m.record(5, 0, &random_block(1));
        m.record(5, 1, &random_block(2));
        let t = m.totals();
        assert_eq!((t.logical_bytes, t.physical_bytes), (8192, 8192));
        let zero_size = m.record(5, 1, &[0u8; 4096]) as u64;
        let t = m.totals();
        assert_eq!(t.logical_bytes, 8192);
        assert_eq!(t.physical_bytes, 4096 + zero_size);
        assert!(t.ratio > 1.9);
        m.remove_file(5);
        assert_eq!(m.totals().logical_bytes, 0);
        assert_eq!(m.totals().physical_bytes, 0);
    }

    #[test]
    fn parse_names() {
        assert_eq!(
            "zstd:7".parse::<Compression>().unwrap(),
            Compression::Zstd { level: 7 }
        );
        assert_eq!("lz4".parse::<Compression>().unwrap(), Compression::Lz4);
        let e = "zstd:99".parse::<Compression>().unwrap_err();
        assert!(e.contains("1..=22"), "{e}");
    }
}
