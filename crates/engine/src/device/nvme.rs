//! The accounting layer of the virtual NVMe device.

use super::error::{DeviceError as Error, DeviceResult as Result};
use super::{
    blocks_4k, requests, CompressionModel, CompressionTotals, Device, FileId, Throttle,
    ThrottleConfig, BLOCK_4K,
};
use crate::device::Compression;
use crate::stats::{current_cause, Cause, Metric, Stats};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Settings of the virtual NVMe device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NvmeConfig {
    /// Largest request the device accepts; larger calls are split (Linux `max_sectors_kb`).
    /// Default 16384. Must be a positive multiple of 512.
    pub iop_max_bytes: usize,
    /// Bandwidth, latency and queue depth; default unthrottled.
    pub throttle: ThrottleConfig,
    /// Transparent compression accounting; default none.
    pub compression: Compression,
    /// Keep a trace of every request ([`Nvme::take_trace`]); for tests and debugging.
    pub trace: bool,
    /// The device reports itself rotational (Linux `queue/rotational` = 1), as a hard disk
    /// does; an NVMe SSD, and so this model by default, does not. It changes no timing: an
    /// engine reads it, as MariaDB turns neighbour flushing on only for rotational storage
    /// (`fil_space_t::is_rotational`; the `flush_neighbors` design switch). Missing in
    /// configurations written before it existed (read as false).
    #[serde(default)]
    pub rotational: bool,
}

impl Default for NvmeConfig {
    fn default() -> Self {
        NvmeConfig {
            iop_max_bytes: 16384,
            throttle: ThrottleConfig::default(),
            compression: Compression::None,
            trace: false,
            rotational: false,
        }
    }
}

/// Kind of a traced request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoKind {
    /// A read.
    Read,
    /// A write.
    Write,
    /// A sync (flush) of a file.
    Sync,
}

/// One traced call, recorded when it completes (so the trace order is completion order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoEvent {
    /// Read, write or sync.
    pub kind: IoKind,
    /// Device file id.
    pub file: FileId,
    /// Offset in bytes (0 for syncs).
    pub offset_bytes: u64,
    /// Length in bytes (0 for syncs).
    pub len_bytes: usize,
    /// Cause the call was counted to.
    pub cause: Cause,
}

/// A backing [`Device`] with exact per-cause accounting, a throttle and a compression
/// model (see the module doc of `device` for the rules).
pub struct Nvme {
    backing: Box<dyn Device>,
    stats: Arc<Stats>,
    iop_max_bytes: usize,
    throttle: Option<Throttle>,
    compression: Option<CompressionModel>,
    trace: Option<Mutex<Vec<IoEvent>>>,
}

impl Nvme {
    /// Puts the accounting layer over `backing`, counting into `stats`.
    ///
    /// Errors: [`Error::InvalidConfig`] when `iop_max_bytes` is not a positive multiple of
    /// 512 or the throttle settings are out of range.
    pub fn new(backing: Box<dyn Device>, cfg: &NvmeConfig, stats: Arc<Stats>) -> Result<Self> {
        if cfg.iop_max_bytes == 0 || !cfg.iop_max_bytes.is_multiple_of(512) {
            return Err(Error::InvalidConfig(format!(
                "iop_max_bytes must be a positive multiple of 512, got {}",
                cfg.iop_max_bytes
            )));
        }
        cfg.throttle.validate()?;
        Ok(Nvme {
            backing,
            stats,
            iop_max_bytes: cfg.iop_max_bytes,
            throttle: Throttle::new(&cfg.throttle),
            compression: CompressionModel::new(cfg.compression),
            trace: cfg.trace.then(|| Mutex::new(Vec::new())),
        })
    }

    /// The counters this device adds to.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    fn traced(
        &self,
        kind: IoKind,
        file: FileId,
        offset_bytes: u64,
        len_bytes: usize,
        cause: Cause,
    ) {
        if let Some(t) = &self.trace {
            t.lock().push(IoEvent {
                kind,
                file,
                offset_bytes,
                len_bytes,
                cause,
            });
        }
    }

    fn throttle(&self, cause: Cause, write: bool, bytes: usize, n: u64) {
        if let Some(t) = &self.throttle {
            let waited = t.serve(write, bytes, n);
            self.stats.add_for(cause, Metric::device_wait_us, waited);
        }
    }

    /// Reads `buf.len()` bytes at `offset` of `file`, counted to the current cause.
    ///
    /// Errors: those of the backing ([`Error::ReadPastEof`], [`Error::NoSuchFile`],
    /// [`Error::Io`]).
    pub fn read_at(&self, file: FileId, offset: u64, buf: &mut [u8]) -> Result<()> {
        let cause = current_cause();
        let n = requests(buf.len(), self.iop_max_bytes);
        self.stats.add_for(cause, Metric::read_requests, n);
        self.stats
            .add_for(cause, Metric::read_blocks_4k, blocks_4k(offset, buf.len()));
        self.stats
            .add_for(cause, Metric::read_bytes, buf.len() as u64);
        self.throttle(cause, false, buf.len(), n);
        self.backing.read_at(file, offset, buf)?;
        self.traced(IoKind::Read, file, offset, buf.len(), cause);
        Ok(())
    }

    /// Writes `data` at `offset` of `file`, counted to the current cause.
    ///
    /// Errors: those of the backing.
    pub fn write_at(&self, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        self.write_at_for(current_cause(), file, offset, data)
    }

    /// Writes `data` at `offset` of `file`, counted to `cause` (OS-cache write-back counts
    /// to the cause that dirtied the blocks).
    ///
    /// Errors: those of the backing.
    pub fn write_at_for(&self, cause: Cause, file: FileId, offset: u64, data: &[u8]) -> Result<()> {
        let n = requests(data.len(), self.iop_max_bytes);
        self.stats.add_for(cause, Metric::write_requests, n);
        self.stats.add_for(
            cause,
            Metric::write_blocks_4k,
            blocks_4k(offset, data.len()),
        );
        self.stats
            .add_for(cause, Metric::write_bytes, data.len() as u64);
        self.throttle(cause, true, data.len(), n);
        self.backing.write_at(file, offset, data)?;
        if let Some(model) = &self.compression {
            let physical = self.record_compression(model, file, offset, data)?;
            self.stats
                .add_for(cause, Metric::write_physical_bytes, physical);
        }
        self.traced(IoKind::Write, file, offset, data.len(), cause);
        Ok(())
    }

    /// Records the new content of every 4 KiB block the write touched; a block only partly
    /// covered is read back from the backing (the SSD's own read-modify-write, not host I/O).
    fn record_compression(
        &self,
        model: &CompressionModel,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<u64> {
        if data.is_empty() {
            return Ok(0);
        }
        let first = offset / BLOCK_4K;
        let last = (offset + data.len() as u64 - 1) / BLOCK_4K;
        let file_len = self.backing.len_bytes(file)?;
        let mut scratch = vec![0u8; BLOCK_4K as usize];
        let mut physical = 0;
        for b in first..=last {
            let bstart = b * BLOCK_4K;
            let size = if bstart >= offset && bstart + BLOCK_4K <= offset + data.len() as u64 {
                let s = (bstart - offset) as usize;
                model.record(file, b, &data[s..s + BLOCK_4K as usize])
            } else {
                let avail = (file_len.saturating_sub(bstart)).min(BLOCK_4K) as usize;
                scratch.fill(0);
                self.backing.read_at(file, bstart, &mut scratch[..avail])?;
                model.record(file, b, &scratch[..avail])
            };
            physical += size as u64;
        }
        Ok(physical)
    }

    /// Makes `file` durable, counted to the current cause.
    ///
    /// Errors: those of the backing.
    pub fn sync(&self, file: FileId) -> Result<()> {
        let cause = current_cause();
        self.stats.add_for(cause, Metric::syncs, 1);
        self.throttle(cause, true, 0, 1);
        self.backing.sync(file)?;
        self.traced(IoKind::Sync, file, 0, 0, cause);
        Ok(())
    }

    /// Creates `file` (no I/O counted: metadata).
    pub fn create(&self, file: FileId) -> Result<()> {
        self.backing.create(file)
    }

    /// Removes `file` and frees its blocks in the compression model (TRIM).
    pub fn remove(&self, file: FileId) -> Result<()> {
        if let Some(m) = &self.compression {
            m.remove_file(file);
        }
        self.backing.remove(file)
    }

    /// Files on the device.
    pub fn files(&self) -> Result<Vec<FileId>> {
        self.backing.files()
    }

    /// Length of `file` in bytes.
    pub fn len_bytes(&self, file: FileId) -> Result<u64> {
        self.backing.len_bytes(file)
    }

    /// Logical and physical bytes held (zeros when compression accounting is off).
    pub fn compression_totals(&self) -> CompressionTotals {
        self.compression
            .as_ref()
            .map(|m| m.totals())
            .unwrap_or_default()
    }

    /// Logical and physical bytes held by the files `keep` selects (zeros when compression
    /// accounting is off).
    pub fn compression_totals_where(&self, keep: impl Fn(FileId) -> bool) -> CompressionTotals {
        self.compression
            .as_ref()
            .map(|m| m.totals_where(keep))
            .unwrap_or_default()
    }

    /// Logical and physical bytes held by each file (empty when compression accounting is
    /// off).
    pub fn compression_totals_by_file(
        &self,
    ) -> std::collections::HashMap<FileId, CompressionTotals> {
        self.compression
            .as_ref()
            .map(|m| m.totals_by_file())
            .unwrap_or_default()
    }

    /// Takes the trace recorded so far (empty unless `trace` was set).
    pub fn take_trace(&self) -> Vec<IoEvent> {
        self.trace
            .as_ref()
            .map(|t| std::mem::take(&mut *t.lock()))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use crate::stats::enter;

    fn nvme(cfg: NvmeConfig) -> Nvme {
        Nvme::new(Box::new(MemDevice::new()), &cfg, Arc::new(Stats::new())).unwrap()
    }

    #[test]
    fn a_64k_write_is_16_blocks_and_4_requests() {
        let d = nvme(NvmeConfig::default());
        d.create(7).unwrap();
        {
            let _g = enter(Cause::Checkpointer);
            d.write_at(7, 0, &vec![1u8; 65536]).unwrap();
            d.sync(7).unwrap();
        }
        let mut buf = vec![0u8; 512];
        d.read_at(7, 4096 + 100, &mut buf).unwrap();
        let s = d.stats().snapshot();
        let c = s.cause(Cause::Checkpointer);
        assert_eq!(
            (c.write_blocks_4k, c.write_requests, c.write_bytes, c.syncs),
            (16, 4, 65536, 1)
        );
        let o = s.cause(Cause::Other);
        assert_eq!(
            (o.read_blocks_4k, o.read_requests, o.read_bytes),
            (1, 1, 512)
        );
    }

    #[test]
    fn unaligned_small_write_rounds_out_to_two_blocks() {
        let d = nvme(NvmeConfig {
            iop_max_bytes: 4096,
            ..Default::default()
        });
        d.create(1).unwrap();
        d.write_at(1, 4000, &[9u8; 200]).unwrap();
        let c = d.stats().snapshot().total();
        assert_eq!((c.write_blocks_4k, c.write_requests), (2, 1));
    }

    #[test]
    fn bad_iop_max_is_refused() {
        let e = Nvme::new(
            Box::new(MemDevice::new()),
            &NvmeConfig {
                iop_max_bytes: 1000,
                ..Default::default()
            },
            Arc::new(Stats::new()),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("iop_max_bytes"), "{e}");
    }

    #[test]
    fn compression_counts_physical_bytes_per_cause_and_partial_blocks() {
        let d = nvme(NvmeConfig {
            compression: Compression::Lz4,
            ..Default::default()
        });
        d.create(3).unwrap();
        d.write_at(3, 0, &[0u8; 8192]).unwrap();
        let t = d.compression_totals();
        assert_eq!(t.logical_bytes, 8192);
        assert!(t.physical_bytes < 200, "{t:?}");
        // A 512-byte write into block 0 recompresses the whole block.
        let noise: Vec<u8> = (0..512u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        d.write_at(3, 512, &noise).unwrap();
        let t2 = d.compression_totals();
        assert_eq!(t2.logical_bytes, 8192);
        assert!(t2.physical_bytes > t.physical_bytes + 300, "{t2:?}");
        let c = d.stats().snapshot().total();
        assert!(c.write_physical_bytes > 0 && c.write_physical_bytes < c.write_bytes);
        d.remove(3).unwrap();
        assert_eq!(d.compression_totals().logical_bytes, 0);
    }

    #[test]
    fn trace_records_completion_order() {
        let d = nvme(NvmeConfig {
            trace: true,
            ..Default::default()
        });
        d.create(1).unwrap();
        d.write_at(1, 0, &[1u8; 4096]).unwrap();
        d.sync(1).unwrap();
        let t = d.take_trace();
        assert_eq!(
            t.iter().map(|e| e.kind).collect::<Vec<_>>(),
            vec![IoKind::Write, IoKind::Sync]
        );
        assert!(d.take_trace().is_empty());
    }
}
