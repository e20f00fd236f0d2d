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
//!    The write in flight when an armed cut fires ([`CrashDevice::arm_power_cut`]) is
//!    not drawn by steps 2 and 3: the power went during its transfer, so the number of its
//!    sectors that reached the medium is uniform in `0..=n` (0: lost, `n`: whole, anything
//!    between: torn), whatever the probabilities.
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

use super::error::{DeviceError as Error, DeviceResult as Result};
use super::{Device, FileId};
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
    /// The write an armed cut fired inside (module doc, step 3).
    in_flight: bool,
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
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
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
    /// Power stays off after [`CrashDevice::power_cut_and_hold`]: every change fails.
    off: std::sync::atomic::AtomicBool,
    /// Writes left before an armed cut fires (0: none armed), and its seed.
    armed_writes: std::sync::atomic::AtomicU64,
    armed_seed: std::sync::atomic::AtomicU64,
    /// The armed cut counts only writes to relation files (home page writes).
    armed_relations_only: std::sync::atomic::AtomicBool,
    /// The report of an armed cut that fired.
    fired: parking_lot::Mutex<Option<PowerCutReport>>,
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
            ..Default::default()
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
        self.cut(&mut files, seed)
    }

    /// [`CrashDevice::power_cut`], leaving the power off: until [`CrashDevice::power_on`],
    /// every write, sync, creation and removal fails with [`Error::Io`] ("power is off";
    /// reads still see the cut's result). So an engine still running above the device
    /// when the power goes cannot change what the next life will find, as a real machine's
    /// processes die with its power; its threads meet the errors and stop.
    pub fn power_cut_and_hold(&self, seed: u64) -> PowerCutReport {
        let mut files = self.files.write();
        if self.off.load(std::sync::atomic::Ordering::Acquire) {
            // Already off (an armed cut fired): nothing is pending, nothing changes.
            return PowerCutReport {
                seed,
                ..Default::default()
            };
        }
        let report = self.cut(&mut files, seed);
        self.off.store(true, std::sync::atomic::Ordering::Release);
        report
    }

    /// Arms a cut that fires inside the `after_writes`-th write from now (counting every
    /// file; `after_writes ≥ 1`): the power goes while that write is in flight, so a
    /// uniformly random prefix of its sectors, from none to all, reaches the medium (module
    /// doc, step 3), and the other unsynced writes fare as in any cut; the caller gets an error;
    /// the power is cut with `seed` and held off, as by [`CrashDevice::power_cut_and_hold`]. So a cut can
    /// land in the middle of a batch of page writes (between the doublewrite area's sync
    /// and the home writes, say), which a cut made from outside between two operations
    /// rarely does. With `relation_writes_only`, only writes to relation files count
    /// (`file_ids::is_relation`): the cut then lands among home page writes.
    /// [`CrashDevice::take_fired`] gives its report.
    pub fn arm_power_cut(&self, after_writes: u64, seed: u64, relation_writes_only: bool) {
        use std::sync::atomic::Ordering;
        self.armed_seed.store(seed, Ordering::Release);
        self.armed_relations_only
            .store(relation_writes_only, Ordering::Release);
        self.armed_writes
            .store(after_writes.max(1), Ordering::Release);
    }

    /// Disarms a cut armed by [`CrashDevice::arm_power_cut`] that has not fired.
    pub fn disarm(&self) {
        self.armed_writes
            .store(0, std::sync::atomic::Ordering::Release);
    }

    /// The report of the armed cut, once it has fired (taken once).
    pub fn take_fired(&self) -> Option<PowerCutReport> {
        self.fired.lock().take()
    }

    /// True while the power is held off.
    pub fn is_off(&self) -> bool {
        self.off.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Counts one write to `file` against an armed cut; fires it (and returns true) on
    /// the last.
    fn armed_write_fires(&self, file: FileId, offset: u64, data: &[u8]) -> bool {
        use std::sync::atomic::Ordering;
        if self.armed_writes.load(Ordering::Acquire) == 0
            || (self.armed_relations_only.load(Ordering::Acquire)
                && !super::file_ids::is_relation(file))
        {
            return false;
        }
        let fire = self
            .armed_writes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            == Ok(1);
        if fire {
            let mut files = self.files.write();
            if !self.off.load(Ordering::Acquire) {
                // The power goes while this write is in flight: it is one more unsynced
                // write, which the cut may keep, drop or tear like the others.
                if let (Some(f), Ok(start)) = (files.get_mut(&file), usize::try_from(offset)) {
                    if !data.is_empty() && start.checked_add(data.len()).is_some() {
                        let f = f.get_mut();
                        apply(&mut f.volatile, start, data);
                        f.pending.push(PendingWrite {
                            offset,
                            data: data.to_vec(),
                            in_flight: true,
                        });
                    }
                }
                let r = self.cut(&mut files, self.armed_seed.load(Ordering::Acquire));
                self.off.store(true, Ordering::Release);
                *self.fired.lock() = Some(r);
            }
        }
        fire
    }

    /// Turns the power back on after [`CrashDevice::power_cut_and_hold`].
    pub fn power_on(&self) {
        self.off.store(false, std::sync::atomic::Ordering::Release);
    }

    fn check_power(&self, op: &'static str, file: FileId) -> Result<()> {
        if self.off.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::io(
                op,
                file,
                std::io::Error::other("power is off (crash device)"),
            ));
        }
        Ok(())
    }

    fn cut(&self, files: &mut BTreeMap<FileId, RwLock<CrashFile>>, seed: u64) -> PowerCutReport {
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
                let first = w.offset / SECTOR_BYTES;
                let sectors = (w.offset + len).div_ceil(SECTOR_BYTES) - first;
                // Sectors that reach the medium: all, none, or a torn prefix.
                let reached = if w.in_flight {
                    rng.below(sectors + 1)
                } else if !rng.chance(self.cfg.survive_probability) {
                    0
                } else if sectors > 1 && rng.chance(self.cfg.tear_probability) {
                    1 + rng.below(sectors - 1)
                } else {
                    sectors
                };
                if reached == 0 {
                    report.writes_dropped += 1;
                    report.bytes_lost += len;
                    continue;
                }
                report.writes_kept += 1;
                let mut kept = w.data.len();
                if reached < sectors {
                    let sectors_kept = reached;
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
        let mut files = self.files.write();
        self.check_power("create", file)?;
        files.entry(file).or_default();
        Ok(())
    }

    fn remove(&self, file: FileId) -> Result<()> {
        let mut files = self.files.write();
        self.check_power("remove", file)?;
        files.remove(&file);
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
        if self.armed_write_fires(file, offset, data) {
            return self.check_power("write", file);
        }
        let files = self.files.read();
        self.check_power("write", file)?;
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
            in_flight: false,
        });
        Ok(())
    }

    fn sync(&self, file: FileId) -> Result<()> {
        let files = self.files.read();
        self.check_power("sync", file)?;
        let mut f = files.get(&file).ok_or(Error::NoSuchFile { file })?.write();
        let f = &mut *f;
        for w in f.pending.drain(..) {
            apply(&mut f.durable, w.offset as usize, &w.data);
        }
        debug_assert_eq!(f.durable.len(), f.volatile.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::StorageError;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn dev(survive: f64, tear: f64) -> CrashDevice {
        CrashDevice::with_config(CrashConfig {
            survive_probability: survive,
            tear_probability: tear,
        })
        .unwrap()
    }

    fn contents(d: &CrashDevice, file: FileId) -> Vec<u8> {
        let mut buf = vec![0; d.len_bytes(file).unwrap() as usize];
        d.read_at(file, 0, &mut buf).unwrap();
        buf
    }

    /// The whole device: every file and its bytes.
    fn image(d: &CrashDevice) -> Vec<(FileId, Vec<u8>)> {
        d.files()
            .unwrap()
            .into_iter()
            .map(|f| (f, contents(d, f)))
            .collect()
    }

    #[test]
    fn reads_see_every_write_before_any_sync() {
        let d = CrashDevice::new();
        d.create(3).unwrap();
        d.write_at(3, 10, b"abc").unwrap();
        assert_eq!(d.len_bytes(3).unwrap(), 13);
        assert_eq!(contents(&d, 3), [&[0u8; 10][..], b"abc"].concat());
        d.write_at(3, 11, b"XY").unwrap();
        assert_eq!(&contents(&d, 3)[10..], b"aXY");
        assert_eq!(d.pending_writes(), 2);
        d.sync(3).unwrap();
        assert_eq!(d.pending_writes(), 0);
        d.write_at(3, 0, &[]).unwrap();
        assert_eq!(d.pending_writes(), 0, "a zero-length write is nothing");
    }

    #[test]
    fn errors_name_missing_files_reads_past_the_end_and_bad_probabilities() {
        let d = CrashDevice::new();
        assert!(matches!(d.sync(7), Err(Error::NoSuchFile { file: 7 })));
        assert!(matches!(
            d.write_at(7, 0, b"x"),
            Err(Error::NoSuchFile { .. })
        ));
        assert!(matches!(d.len_bytes(7), Err(Error::NoSuchFile { .. })));
        d.create(7).unwrap();
        d.write_at(7, 0, b"xy").unwrap();
        let mut buf = [0u8; 2];
        assert!(matches!(
            d.read_at(7, 1, &mut buf),
            Err(Error::ReadPastEof {
                file_len_bytes: 2,
                ..
            })
        ));
        for (s, t) in [(1.5, 0.0), (0.5, -0.1), (f64::NAN, 0.0)] {
            let e = CrashDevice::with_config(CrashConfig {
                survive_probability: s,
                tear_probability: t,
            })
            .err()
            .expect("refused");
            assert!(
                matches!(e, Error::InvalidConfig(ref m) if m.contains("probability")),
                "{e}"
            );
        }
    }

    #[test]
    fn synced_data_survives_every_cut() {
        for seed in 0..200 {
            let d = CrashDevice::new();
            d.create(1).unwrap();
            let synced: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
            d.write_at(1, 0, &synced).unwrap();
            d.sync(1).unwrap();
            // Unsynced writes after it, beside it and past the end, some spanning sectors.
            d.write_at(1, 8192, &[0xAA; 4096]).unwrap();
            d.write_at(1, 20000, &[0xBB; 1500]).unwrap();
            d.write_at(1, 8000 + 192, &[0xCC; 700]).unwrap();
            let r = d.power_cut(seed);
            assert_eq!(r.pending_writes, 3);
            let c = contents(&d, 1);
            assert_eq!(&c[..8192], &synced[..], "seed {seed}");
        }
    }

    #[test]
    fn unsynced_writes_may_vanish() {
        let (mut lost, mut kept) = (0, 0);
        for seed in 0..64 {
            let d = CrashDevice::new();
            d.create(1).unwrap();
            d.write_at(1, 0, &[1; 512]).unwrap();
            let r = d.power_cut(seed);
            assert_eq!(r.writes_kept + r.writes_dropped, 1);
            assert_eq!(r.writes_torn, 0, "a one-sector write is never torn");
            match d.len_bytes(1).unwrap() {
                0 => {
                    lost += 1;
                    assert_eq!(r.bytes_lost, 512);
                }
                512 => {
                    kept += 1;
                    assert_eq!(contents(&d, 1), vec![1; 512]);
                    assert_eq!(r.bytes_lost, 0);
                }
                n => panic!("length {n}"),
            }
        }
        assert!(lost > 10 && kept > 10, "lost {lost}, kept {kept}");
        // Never surviving: everything since the sync is gone; always, with no tearing: all kept.
        let d = dev(0.0, 0.0);
        d.create(1).unwrap();
        d.write_at(1, 0, b"durable").unwrap();
        d.sync(1).unwrap();
        d.write_at(1, 0, b"DUR").unwrap();
        d.write_at(1, 100, b"more").unwrap();
        let r = d.power_cut(1);
        assert_eq!((r.writes_dropped, r.bytes_lost), (2, 7));
        assert_eq!(contents(&d, 1), b"durable");
        let d = dev(1.0, 0.0);
        d.create(1).unwrap();
        d.write_at(1, 0, &[5; 3000]).unwrap();
        d.write_at(1, 1000, &[6; 3000]).unwrap();
        let r = d.power_cut(1);
        assert_eq!((r.writes_kept, r.writes_torn, r.bytes_lost), (2, 0, 0));
        assert_eq!(
            contents(&d, 1),
            [vec![5; 1000], vec![6; 3000]].concat(),
            "in issue order"
        );
    }

    /// Many pending writes to three files, a cut, then more writes and a second cut.
    fn scenario(seed: u64) -> (Vec<PowerCutReport>, Vec<(FileId, Vec<u8>)>) {
        let d = CrashDevice::new();
        let mut reports = Vec::new();
        for round in 0..2u8 {
            for f in 0..3 {
                d.create(f).unwrap();
            }
            for i in 0..200u32 {
                let f = i % 3;
                let off = u64::from(i * 7919 % 40) * 1024 + u64::from(i % 5) * 100;
                d.write_at(
                    f,
                    off,
                    &vec![(i as u8) ^ round; 600 + (i as usize % 9) * 1000],
                )
                .unwrap();
                if i % 50 == 49 {
                    d.sync(f).unwrap();
                }
            }
            reports.push(d.power_cut(seed.wrapping_add(u64::from(round))));
        }
        (reports, image(&d))
    }

    #[test]
    fn the_same_seed_replays_identically_and_another_differs() {
        let a = scenario(42);
        assert_eq!(a, scenario(42));
        let b = scenario(43);
        assert_ne!(a.0, b.0);
        assert_ne!(a.1, b.1);
        let r = &a.0[0];
        assert_eq!(r.seed, 42);
        assert!(
            r.writes_kept > 0 && r.writes_dropped > 0 && r.writes_torn > 0,
            "{r:?}"
        );
    }

    #[test]
    fn a_torn_write_leaves_a_sector_aligned_prefix_new_and_the_rest_old() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..100 {
            let d = dev(1.0, 1.0);
            d.create(9).unwrap();
            d.write_at(9, 0, &[0x11; 8192]).unwrap();
            d.sync(9).unwrap();
            d.write_at(9, 0, &[0x22; 8192]).unwrap();
            // Unaligned: bytes 100..1100 of file 10 span its sectors 0, 1 and 2.
            d.create(10).unwrap();
            d.write_at(10, 0, &[0x33; 2048]).unwrap();
            d.sync(10).unwrap();
            d.write_at(10, 100, &[0x44; 1000]).unwrap();
            // Within one sector: never torn.
            d.write_at(10, 1500, &[0x55; 12]).unwrap();
            let r = d.power_cut(seed);
            assert_eq!((r.writes_kept, r.writes_torn), (3, 2), "{r:?}");
            let c = contents(&d, 9);
            let new = c.iter().take_while(|&&b| b == 0x22).count();
            assert!(c[new..].iter().all(|&b| b == 0x11), "seed {seed}");
            assert!(
                new > 0 && new < 8192 && new % 512 == 0,
                "seed {seed}: {new}"
            );
            seen.insert(new);
            assert_eq!(
                r.torn[0],
                TornWrite {
                    file: 9,
                    offset_bytes: 0,
                    len_bytes: 8192,
                    sectors_kept: new as u64 / 512,
                    sectors: 16
                }
            );
            assert_eq!(
                r.bytes_lost,
                (8192 - new as u64) + r.torn[1].len_bytes - {
                    let t = r.torn[1];
                    (t.sectors_kept * 512) - t.offset_bytes
                }
            );
            let c = contents(&d, 10);
            let t = r.torn[1];
            assert_eq!((t.file, t.offset_bytes, t.sectors), (10, 100, 3));
            let end = (t.sectors_kept * 512) as usize;
            assert!(end == 512 || end == 1024);
            assert!(c[..100].iter().all(|&b| b == 0x33));
            assert!(c[100..end].iter().all(|&b| b == 0x44));
            assert!(c[end..1500].iter().all(|&b| b == 0x33));
            assert!(c[1500..1512].iter().all(|&b| b == 0x55));
            assert!(c[1512..].iter().all(|&b| b == 0x33));
        }
        assert!(
            seen.len() > 5,
            "the tear point varies with the seed: {seen:?}"
        );
    }

    /// The write an armed cut fires inside reaches the medium as a prefix of its sectors,
    /// from none to all, whatever the probabilities (even "every write survives whole").
    #[test]
    fn the_write_in_flight_at_an_armed_cut_keeps_a_random_prefix_of_its_sectors() {
        let mut seen = BTreeSet::new();
        for seed in 0..200u64 {
            let d = dev(1.0, 0.0);
            d.create(5).unwrap();
            d.write_at(5, 0, &[1u8; 4096]).unwrap();
            d.sync(5).unwrap();
            d.arm_power_cut(1, seed, false);
            assert!(d.write_at(5, 0, &[2u8; 4096]).is_err(), "the power went");
            let r = d.take_fired().expect("fired");
            assert_eq!(r.pending_writes, 1);
            let c = contents(&d, 5);
            assert_eq!(c.len(), 4096);
            let k = c.iter().take_while(|&&b| b == 2).count();
            assert_eq!(k % SECTOR_BYTES as usize, 0, "whole sectors");
            assert!(c[k..].iter().all(|&b| b == 1), "a prefix new, the rest old");
            let sectors = (k as u64) / SECTOR_BYTES;
            assert_eq!(r.writes_dropped, u64::from(sectors == 0));
            assert_eq!(r.writes_torn, u64::from(sectors > 0 && sectors < 8));
            seen.insert(sectors);
            assert!(d.write_at(5, 0, b"x").is_err(), "the power stays off");
        }
        assert_eq!(
            seen.len(),
            9,
            "every prefix from 0 to 8 sectors occurs: {seen:?}"
        );
    }

    #[test]
    fn length_after_a_cut_grows_only_with_surviving_bytes() {
        let setup = |d: &CrashDevice| {
            d.create(1).unwrap();
            d.write_at(1, 0, &[1; 4096]).unwrap();
            d.sync(1).unwrap();
            d.write_at(1, 8192, &[2; 4096]).unwrap();
        };
        let d = dev(0.0, 0.0);
        setup(&d);
        assert_eq!(d.len_bytes(1).unwrap(), 12288, "the volatile length");
        d.power_cut(0);
        assert_eq!(d.len_bytes(1).unwrap(), 4096);
        let d = dev(1.0, 0.0);
        setup(&d);
        d.power_cut(0);
        let c = contents(&d, 1);
        assert_eq!(c.len(), 12288);
        assert!(
            c[4096..8192].iter().all(|&b| b == 0),
            "the gap reads as zeros"
        );
        for seed in 0..20 {
            let d = dev(1.0, 1.0);
            setup(&d);
            let r = d.power_cut(seed);
            let len = d.len_bytes(1).unwrap();
            assert_eq!(len, 8192 + r.torn[0].sectors_kept * 512);
            assert!(len > 8192 && len < 12288);
            assert!(contents(&d, 1)[8192..].iter().all(|&b| b == 2));
        }
    }

    #[test]
    fn a_sync_of_one_file_leaves_another_files_writes_pending() {
        let d = dev(0.0, 0.0);
        d.create(1).unwrap();
        d.create(2).unwrap();
        d.write_at(1, 0, b"one").unwrap();
        d.write_at(2, 0, b"two").unwrap();
        d.sync(1).unwrap();
        assert_eq!(d.pending_writes(), 1);
        let r = d.power_cut(5);
        assert_eq!((r.pending_writes, r.writes_dropped), (1, 1));
        assert_eq!(contents(&d, 1), b"one");
        assert_eq!(
            d.len_bytes(2).unwrap(),
            0,
            "created (durable), never synced"
        );
    }

    #[test]
    fn creation_and_removal_are_durable_at_once() {
        let d = dev(0.0, 0.0);
        d.create(1).unwrap();
        d.create(2).unwrap();
        d.write_at(2, 0, b"gone").unwrap();
        d.sync(2).unwrap();
        d.remove(2).unwrap();
        d.create(3).unwrap();
        d.write_at(3, 0, b"pending").unwrap();
        d.remove(3).unwrap();
        d.create(3).unwrap();
        let r = d.power_cut(0);
        assert_eq!(r.pending_writes, 0, "a removed file's writes go with it");
        assert_eq!(d.files().unwrap(), vec![1, 3]);
        assert_eq!(d.len_bytes(3).unwrap(), 0);
        // Usable again after the cut.
        d.write_at(1, 0, b"next life").unwrap();
        d.sync(1).unwrap();
        d.power_cut(1);
        assert_eq!(contents(&d, 1), b"next life");
    }

    #[derive(Clone, Debug)]
    enum Op {
        Create(FileId),
        Remove(FileId),
        Write(FileId, u64, usize),
        Sync(FileId),
        Cut(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (0..3u32).prop_map(Op::Create),
            1 => (0..3u32).prop_map(Op::Remove),
            10 => (0..3u32, 0..6000u64, 0..2500usize).prop_map(|(f, o, l)| Op::Write(f, o, l)),
            3 => (0..3u32).prop_map(Op::Sync),
            2 => any::<u64>().prop_map(Op::Cut),
        ]
    }

    #[derive(Clone, Default)]
    struct ModelFile {
        durable: Vec<u8>,
        pending: Vec<(u64, Vec<u8>)>,
        volatile: Vec<u8>,
    }

    /// Runs `ops` on `d` and on a model; `check_cut` judges each cut from the model file
    /// before it, the file's bytes after it, and the cut's torn writes of that file.
    fn run_model(
        d: &CrashDevice,
        ops: &[Op],
        check_cut: impl Fn(&ModelFile, &[u8], &[TornWrite]) -> std::result::Result<(), TestCaseError>,
    ) -> std::result::Result<(), TestCaseError> {
        let mut model: BTreeMap<FileId, ModelFile> = BTreeMap::new();
        for (id, op) in ops.iter().enumerate() {
            match *op {
                Op::Create(f) => {
                    d.create(f).unwrap();
                    model.entry(f).or_default();
                }
                Op::Remove(f) => {
                    d.remove(f).unwrap();
                    model.remove(&f);
                }
                Op::Write(f, off, len) => {
                    let data = vec![(id % 255) as u8 + 1; len];
                    let r = d.write_at(f, off, &data);
                    match model.get_mut(&f) {
                        Some(m) => {
                            r.unwrap();
                            if len > 0 {
                                apply(&mut m.volatile, off as usize, &data);
                                m.pending.push((off, data));
                            }
                        }
                        None => prop_assert!(matches!(r, Err(Error::NoSuchFile { .. })), "{:?}", r),
                    }
                }
                Op::Sync(f) => {
                    let r = d.sync(f);
                    match model.get_mut(&f) {
                        Some(m) => {
                            r.unwrap();
                            m.durable = m.volatile.clone();
                            m.pending.clear();
                        }
                        None => prop_assert!(matches!(r, Err(Error::NoSuchFile { .. })), "{:?}", r),
                    }
                }
                Op::Cut(seed) => {
                    let n: usize = model.values().map(|m| m.pending.len()).sum();
                    prop_assert_eq!(d.pending_writes(), n);
                    let r = d.power_cut(seed);
                    prop_assert_eq!(r.pending_writes, n as u64);
                    prop_assert_eq!(r.writes_kept + r.writes_dropped, n as u64);
                    prop_assert_eq!(r.torn.len() as u64, r.writes_torn);
                    prop_assert!(r.writes_torn <= r.writes_kept);
                    for (&f, m) in model.iter_mut() {
                        let c = contents(d, f);
                        let torn: Vec<TornWrite> =
                            r.torn.iter().filter(|t| t.file == f).copied().collect();
                        for t in &torn {
                            prop_assert!(t.sectors_kept >= 1 && t.sectors_kept < t.sectors);
                        }
                        check_cut(m, &c, &torn)?;
                        *m = ModelFile {
                            durable: c.clone(),
                            pending: Vec::new(),
                            volatile: c,
                        };
                    }
                }
            }
            prop_assert_eq!(
                d.files().unwrap(),
                model.keys().copied().collect::<Vec<_>>()
            );
            for (&f, m) in &model {
                prop_assert!(contents(d, f) == m.volatile, "file {} after op {}", f, id);
            }
        }
        Ok(())
    }

    proptest! {
        /// Invariant 3: after a cut every byte is its durable value (zero past the durable
        /// length) or the value of a pending write covering it; the length is the durable
        /// one or the end of a pending write or of a sector inside one.
        #[test]
        fn every_byte_after_a_cut_is_durable_or_pending(ops in prop::collection::vec(op(), 1..60)) {
            let d = CrashDevice::new();
            run_model(&d, &ops, |m, c, _| {
                let len = c.len() as u64;
                prop_assert!(c.len() >= m.durable.len());
                prop_assert!(
                    c.len() == m.durable.len()
                        || m.pending.iter().any(|(o, w)| {
                            let end = o + w.len() as u64;
                            *o < len && len <= end && (len == end || len.is_multiple_of(SECTOR_BYTES))
                        }),
                    "length {}", len
                );
                for (i, &b) in c.iter().enumerate() {
                    let durable = m.durable.get(i).copied().unwrap_or(0);
                    let ok = b == durable
                        || m.pending.iter().any(|(o, w)| {
                            let o = *o as usize;
                            (o..o + w.len()).contains(&i) && w[i - o] == b
                        });
                    prop_assert!(ok, "byte {} is {}", i, b);
                }
                Ok(())
            })?;
        }

        /// When every write survives, the result is exactly the pending writes replayed in
        /// order over the durable image, each torn one cut at the sector its report names.
        #[test]
        fn with_every_write_kept_the_cut_is_the_replay_of_the_report(
            ops in prop::collection::vec(op(), 1..60),
        ) {
            let d = dev(1.0, 0.5);
            run_model(&d, &ops, |m, c, torn| {
                let mut want = m.durable.clone();
                let mut torn = torn.iter().peekable();
                for (o, w) in &m.pending {
                    let mut keep = w.len();
                    if let Some(t) = torn.next_if(|t| t.offset_bytes == *o && t.len_bytes == w.len() as u64) {
                        keep = ((o / SECTOR_BYTES + t.sectors_kept) * SECTOR_BYTES - o) as usize;
                        prop_assert_eq!(t.sectors, (o + w.len() as u64).div_ceil(SECTOR_BYTES) - o / SECTOR_BYTES);
                    }
                    apply(&mut want, *o as usize, &w[..keep]);
                }
                prop_assert!(torn.next().is_none(), "every torn write matched");
                prop_assert!(c == &want[..]);
                Ok(())
            })?;
        }
    }

    /// Through the storage: a page written and synced by a checkpoint survives every cut;
    /// a change written after it without a sync is kept, lost, or torn (and then refused by
    /// its checksum), as the seed decides.
    #[test]
    fn storage_on_a_shared_crash_device() {
        use crate::storage::{Backing, Storage, StorageConfig};
        use crate::testkit::{fill_and_log, filled_value};
        use std::sync::Arc;
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..48 {
            let dev = Arc::new(CrashDevice::new());
            let cfg = StorageConfig {
                backing: Backing::shared(dev.clone()),
                ..StorageConfig::without_background(8)
            };
            let s = Storage::open(cfg.clone()).unwrap();
            let rel = s.store().create_relation().unwrap();
            let mut ids = Vec::new();
            for v in [1, 2] {
                let mut g = s.pool().new_page(rel).unwrap();
                fill_and_log(s.wal(), &mut g, v, false).unwrap();
                ids.push(g.page_id());
            }
            s.checkpoint().unwrap();
            {
                let mut g = s.pool().fetch_write(ids[1]).unwrap();
                fill_and_log(s.wal(), &mut g, 3, false).unwrap();
            }
            s.pool().flush_all().unwrap();
            drop(s);
            assert_eq!(dev.pending_writes(), 1, "the page, written without a sync");
            let r = dev.power_cut(seed);
            let s = Storage::open(cfg).unwrap();
            assert_eq!(filled_value(s.pool().fetch_read(ids[0]).unwrap().data()), 1);
            match s.pool().fetch_read(ids[1]) {
                Ok(g) => {
                    let v = filled_value(g.data());
                    assert_eq!(v, if r.writes_kept == 1 { 3 } else { 2 }, "seed {seed}");
                    outcomes.insert(v);
                }
                Err(StorageError::ChecksumMismatch { page, .. }) => {
                    assert_eq!(page, ids[1]);
                    assert_eq!(r.writes_torn, 1, "seed {seed}");
                    outcomes.insert(0);
                }
                Err(e) => panic!("seed {seed}: {e}"),
            };
        }
        assert_eq!(
            outcomes.len(),
            3,
            "kept, lost and torn all seen: {outcomes:?}"
        );
    }
}
