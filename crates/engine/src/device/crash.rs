//! A crash-simulation backing: files in memory that remember what is durable, and a power
//! cut that keeps a random, seeded subset of the writes since each file's last sync, tearing
//! some of them. It is the device that crash tests and `mvcclab crashtest` run the engine on
//! (issue 7); it follows the habit of redb `tests/crash_consistency.rs` (a backing with a
//! live and a durable image), with sector tearing added.
//!
//! # The model
//! Each file has
//! - a **durable image**: its bytes (and so its length) as of its last [`Device::sync`],
//!   or as of the last power cut, or empty since its creation;
//! - the **pending writes**: every `write_at` since then, offset and bytes, in issue order;
//! - the **volatile image**: the durable image with every pending write applied in order.
//!   Reads and `len_bytes` see the volatile image, as they see the kernel's page cache.
//!
//! `sync(file)` applies the file's pending writes to its durable image and empties the
//! list. [`CrashDevice::power_cut`] simulates a power loss:
//! 1. Files are visited in ascending id, each with its own pseudo-random stream derived
//!    from the seed and the file id (so one file's outcome does not depend on how many
//!    writes another file had).
//! 2. Each pending write, in issue order, survives with probability
//!    [`CrashConfig::survive_probability`]; the others are lost whole.
//! 3. A surviving write that spans more than one 512-byte sector is torn with probability
//!    [`CrashConfig::tear_probability`]: only its first `k` sectors reach the medium, `k`
//!    uniform in `1..n` for a write spanning `n` sectors; the rest keep their old bytes.
//! 4. The surviving bytes are applied in issue order over the durable image (a later
//!    surviving write wins where two overlap). The result becomes both images; pending
//!    lists are emptied and the device is usable again: the engine reopens on it.
//!
//! # Invariants
//! 1. The volatile image equals the durable image with the pending writes applied in order
//!    (zeros in any gap a write leaves past the end).
//! 2. The pending writes of a file are exactly its writes since its last sync, creation or
//!    power cut, in issue order; a sync of one file never touches another file's.
//! 3. After a power cut, every byte of a file is either its durable value (zero past the
//!    durable length) or the value one of the pending writes covering it gave it; a byte no
//!    pending write covered keeps its durable value. So synced data survives every cut
//!    unless a later, unsynced write overwrote it.
//! 4. The outcome of a cut is a function of the seed, the configuration, and each file's
//!    durable image and pending list: the same operations and seed replay identically.
//!
//! # What is and is not simulated
//! - Sectors are 512 bytes at file offsets that are multiples of 512 (the file system's
//!   blocks map onto whole device sectors); a sector is written atomically: a cut never
//!   leaves half a sector. A write within one sector is never torn.
//! - Writes since a file's last sync may reach the medium in any subset (so reordered among
//!   themselves), never across a sync of the same file: a sync is a barrier, and everything
//!   before a completed sync is durable (no lying write cache, no lost FUA).
//! - Tearing keeps a prefix of a write's sectors (in-order transfer), the case the issue
//!   asks for; real drives may persist any subset, which is not simulated.
//! - File creation and removal are durable at once, as a journaling file system's metadata
//!   is once the directory has been synced (the [`Device`] trait has no directory sync and
//!   the engine never asks for one). Removing a file drops its pending writes with it.
//! - A file's durable length grows only when a write that extends it reaches the medium:
//!   to the write's end, or for a torn write to the end of its kept prefix; a gap left
//!   before it reads as zeros. Lengths never shrink (the trait has no truncate).
//! - A zero-length write changes nothing and is not a pending write.
//! - Only the device is simulated: the emulated OS page cache and the buffer pool above
//!   lose what they hold when the `Storage` is dropped. A crash is: drop the engine
//!   (dropping writes nothing), [`CrashDevice::power_cut`], reopen on the same device
//!   (share it through [`crate::storage::Backing::Shared`]).
//! - No I/O errors, bit rot, lost or misdirected writes.
//!
//! # Locking
//! One directory lock (`RwLock`) over the files, each file behind its own `RwLock`. Every
//! call holds the directory lock shared for its whole duration, then takes its file's lock;
//! `create`, `remove` and `power_cut` hold the directory lock exclusive. Lock order:
//! directory, then file. So every call is wholly before or wholly after a power cut; a
//! write after the cut belongs to the next life of the device.

use super::{Device, FileId};
use crate::error::{Error, Result};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Size of the sector a power cut tears at: a sector is written whole or not at all.
pub const SECTOR_BYTES: u64 = 512;

/// How unkind a power cut is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrashConfig {
    /// Probability that one write since its file's last sync reaches the medium at a power
    /// cut, each write independently. Default 0.5.
    pub survive_probability: f64,
    /// Probability that a surviving write spanning more than one sector is torn (only a
    /// non-empty proper prefix of its sectors reaches the medium). Default 0.25.
    pub tear_probability: f64,
}

impl Default for CrashConfig {
    fn default() -> Self {
        CrashConfig {
            survive_probability: 0.5,
            tear_probability: 0.25,
        }
    }
}

impl CrashConfig {
    /// Errors: [`Error::InvalidConfig`] naming a probability outside `[0, 1]`.
    pub fn validate(&self) -> Result<()> {
        for (name, p) in [
            ("survive_probability", self.survive_probability),
            ("tear_probability", self.tear_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::InvalidConfig(format!(
                    "crash device {name} must be in [0, 1], got {p}"
                )));
            }
        }
        Ok(())
    }
}

/// A write that a power cut tore: only its first `sectors_kept` of `sectors` 512-byte
/// sectors reached the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TornWrite {
    /// Device file id.
    pub file: FileId,
    /// Offset of the write in bytes.
    pub offset_bytes: u64,
    /// Length of the write in bytes.
    pub len_bytes: u64,
    /// Sectors that reached the medium (from the first one), `1..sectors`.
    pub sectors_kept: u64,
    /// Sectors the write spans (counted at 512-byte boundaries of the file).
    pub sectors: u64,
}

/// What a power cut did. `writes_kept + writes_dropped == pending_writes`; torn writes are
/// among the kept ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerCutReport {
    /// The seed the cut was made with (to replay it).
    pub seed: u64,
    /// Writes not yet synced at the cut, over all files.
    pub pending_writes: u64,
    /// Pending writes that reached the medium, whole or torn.
    pub writes_kept: u64,
    /// Pending writes lost whole.
    pub writes_dropped: u64,
    /// Kept writes that were torn.
    pub writes_torn: u64,
    /// Bytes of pending writes that did not reach the medium (dropped writes and the lost
    /// tails of torn ones; bytes a later write covered anyway are counted too).
    pub bytes_lost: u64,
    /// Every torn write, in file then issue order.
    pub torn: Vec<TornWrite>,
}

struct PendingWrite {
    offset: u64,
    data: Vec<u8>,
}

#[derive(Default)]
struct CrashFile {
    volatile: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<PendingWrite>,
}

/// Writes `data` at `offset` of `image`, zero-filling any gap.
fn apply(image: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset..end].copy_from_slice(data);
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so the crate needs no
/// `rand` and a cut replays from its seed on every platform.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p` (always for 1, never for 0).
    fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < p
    }

    /// Uniform in `0..n`, `n > 0` (Lemire's multiply-shift; the bias is below 2^-32 for
    /// any `n` a write can have).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A memory device with a durable image per file and a seeded [`CrashDevice::power_cut`]
/// (see the module doc for the model, its invariants and its limits).
#[derive(Default)]
pub struct CrashDevice {
    cfg: CrashConfig,
    files: RwLock<BTreeMap<FileId, RwLock<CrashFile>>>,
}

impl CrashDevice {
    /// An empty device with the default [`CrashConfig`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty device that cuts power as `cfg` says.
    ///
    /// Errors: [`Error::InvalidConfig`] for a probability outside `[0, 1]`.
    pub fn with_config(cfg: CrashConfig) -> Result<Self> {
        cfg.validate()?;
        Ok(CrashDevice {
            cfg,
            files: RwLock::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CrashConfig {
        &self.cfg
    }

    /// Writes not yet synced, over all files (what a cut now could lose).
    pub fn pending_writes(&self) -> usize {
        self.files
            .read()
            .values()
            .map(|f| f.read().pending.len())
            .sum()
    }

    /// Cuts the power: each file keeps its durable image plus a random subset of its
    /// pending writes, some torn (module doc, steps 1–4), and the device carries on from
    /// there with nothing pending. The same operations and `seed` give the same result.
    pub fn power_cut(&self, seed: u64) -> PowerCutReport {
        let mut files = self.files.write();
        let mut report = PowerCutReport {
            seed,
            ..Default::default()
        };
        for (&file, f) in files.iter_mut() {
            let f = f.get_mut();
            let mut rng =
                SplitMix64(seed ^ (u64::from(file) + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93));
            let mut image = std::mem::take(&mut f.durable);
            for w in f.pending.drain(..) {
                let len = w.data.len() as u64;
                report.pending_writes += 1;
                if !rng.chance(self.cfg.survive_probability) {
                    report.writes_dropped += 1;
                    report.bytes_lost += len;
                    continue;
                }
                report.writes_kept += 1;
                let first = w.offset / SECTOR_BYTES;
                let sectors = (w.offset + len).div_ceil(SECTOR_BYTES) - first;
                let mut kept = w.data.len();
                if sectors > 1 && rng.chance(self.cfg.tear_probability) {
                    let sectors_kept = 1 + rng.below(sectors - 1);
                    kept = ((first + sectors_kept) * SECTOR_BYTES - w.offset) as usize;
                    report.writes_torn += 1;
                    report.bytes_lost += len - kept as u64;
                    report.torn.push(TornWrite {
                        file,
                        offset_bytes: w.offset,
                        len_bytes: len,
                        sectors_kept,
                        sectors,
                    });
                }
                apply(&mut image, w.offset as usize, &w.data[..kept]);
            }
            f.volatile.clone_from(&image);
            f.durable = image;
        }
        report
    }
}

impl Device for CrashDevice {
    fn create(&self, file: FileId) -> Result<()> {
        self.files.write().entry(file).or_default();
        Ok(())
    }

    fn remove(&self, file: FileId) -> Result<()> {
        self.files.write().remove(&file);
        Ok(())
    }

    fn files(&self) -> Result<Vec<FileId>> {
        Ok(self.files.read().keys().copied().collect())
    }

    fn len_bytes(&self, file: FileId) -> Result<u64> {
        let files = self.files.read();
        let f = files.get(&file).ok_or(Error::NoSuchFile { file })?;
        let len = f.read().volatile.len() as u64;
        Ok(len)
    }

    fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        let files = self.files.read();
        let f = files.get(&file).ok_or(Error::NoSuchFile { file })?.read();
        let data = &f.volatile;
        match offset.checked_add(buf.len() as u64) {
            Some(end) if end <= data.len() as u64 => {
                buf.copy_from_slice(&data[offset as usize..end as usize]);
                Ok(())
            }
            _ => Err(Error::ReadPastEof {
                file,
                offset_bytes: offset,
                len_bytes: buf.len(),
                file_len_bytes: data.len() as u64,
            }),
        }
    }

    fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        let files = self.files.read();
        let mut f = files.get(&file).ok_or(Error::NoSuchFile { file })?.write();
        if data.is_empty() {
            return Ok(());
        }
        let start = usize::try_from(offset)
            .ok()
            .filter(|s| s.checked_add(data.len()).is_some())
            .ok_or_else(|| {
                Error::io(
                    "write",
                    file,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("offset {offset} + {} bytes overflows", data.len()),
                    ),
                )
            })?;
        apply(&mut f.volatile, start, data);
        f.pending.push(PendingWrite {
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }

    fn sync(&self, file: FileId) -> Result<()> {
        let files = self.files.read();
        let mut f = files.get(&file).ok_or(Error::NoSuchFile { file })?.write();
        let f = &mut *f;
        for w in f.pending.drain(..) {
            apply(&mut f.durable, w.offset as usize, &w.data);
        }
        debug_assert_eq!(f.durable.len(), f.volatile.len());
        Ok(())
    }
}
