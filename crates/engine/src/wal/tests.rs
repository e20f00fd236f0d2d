use super::*;
use crate::device::{
    DeviceError, DeviceResult, IoKind, MemDevice, Nvme, NvmeConfig, OsCacheConfig,
};
use crate::error::StorageError;
use crate::page::{init_page, PageId};
use crate::stats::{enter, Cause};

fn wal_with(cfg: WalConfig) -> (Arc<Vfs>, Wal) {
    let stats = Arc::new(Stats::new());
    let nvme = Nvme::new(
        Box::new(MemDevice::new()),
        &NvmeConfig {
            trace: true,
            ..Default::default()
        },
        stats.clone(),
    )
    .unwrap();
    let vfs = Arc::new(Vfs::new(nvme, &OsCacheConfig::default()));
    let wal = Wal::open(vfs.clone(), cfg, stats, FIRST_LSN).unwrap();
    (vfs, wal)
}

fn page() -> Vec<u8> {
    let mut p = vec![0u8; 8192];
    init_page(&mut p, 1, 0);
    crate::page::set_hole(&mut p, 64, 8000);
    p
}

#[test]
fn lsn_displays_like_postgres() {
    assert_eq!(Lsn(0x16B3740).to_string(), "0/16B3740");
    assert_eq!(Lsn(0x1_0000_00A0).to_string(), "1/A0");
}

#[test]
fn fpi_only_on_first_change_after_the_redo_pointer() {
    let (_vfs, wal) = wal_with(WalConfig::default());
    let mut p = page();
    let id = PageId::new(16384, 0);
    let rec = RecordBuilder::new(rmgr::TEST, 0).block(id, false, b"x");
    // Before any checkpoint the redo pointer is FIRST_LSN and the new page's LSN 0 is below it.
    let e1 = wal.insert(&rec, &mut [&mut p]).unwrap();
    assert_eq!(page_lsn(&p), e1);
    let e2 = wal.insert(&rec, &mut [&mut p]).unwrap();
    let s = wal.stats.snapshot().total();
    assert_eq!(
        s.wal_fpi, 1,
        "second change in the same checkpoint cycle has no image"
    );
    assert_eq!(
        s.wal_fpi_bytes,
        8192 - (8000 - 64),
        "image leaves the hole out"
    );
    assert!(e2 > e1);
    // Checkpoint: the redo pointer moves past the page LSN, the next change carries an image.
    let redo = wal.begin_checkpoint();
    assert_eq!(redo, e2);
    wal.insert(&rec, &mut [&mut p]).unwrap();
    wal.insert(&rec, &mut [&mut p]).unwrap();
    assert_eq!(wal.stats.snapshot().total().wal_fpi, 2);
    // will_init pages never need one.
    wal.begin_checkpoint();
    let init = RecordBuilder::new(rmgr::TEST, 0).block(id, true, b"x");
    wal.insert(&init, &mut [&mut p]).unwrap();
    assert_eq!(wal.stats.snapshot().total().wal_fpi, 2);
}

#[test]
fn full_page_writes_off_attaches_no_images() {
    let (_vfs, wal) = wal_with(WalConfig {
        full_page_writes: false,
        ..Default::default()
    });
    let mut p = page();
    let rec = RecordBuilder::new(rmgr::TEST, 0).block(PageId::new(16384, 0), false, b"x");
    wal.insert(&rec, &mut [&mut p]).unwrap();
    assert_eq!(wal.stats.snapshot().total().wal_fpi, 0);
}

#[test]
fn flush_writes_whole_blocks_syncs_and_rewrites_the_partial_tail() {
    let (vfs, wal) = wal_with(WalConfig {
        block_bytes: 512,
        ..Default::default()
    });
    let rec = RecordBuilder::new(rmgr::TEST, 0).main_data(&[1u8; 100]);
    let e1 = wal.insert(&rec, &mut []).unwrap();
    assert!(wal.durable_lsn() < e1);
    {
        let _g = enter(Cause::Commit);
        wal.flush(e1).unwrap();
    }
    assert!(wal.durable_lsn() >= e1);
    let e2 = wal.insert(&rec, &mut []).unwrap();
    wal.flush(e2).unwrap();
    let trace = vfs.nvme().take_trace();
    let writes: Vec<_> = trace.iter().filter(|e| e.kind == IoKind::Write).collect();
    assert_eq!(writes.len(), 2);
    assert_eq!((writes[0].offset_bytes, writes[0].len_bytes), (0, 512));
    assert_eq!(
        (writes[1].offset_bytes, writes[1].len_bytes),
        (0, 512),
        "partial block rewritten"
    );
    assert_eq!(trace.iter().filter(|e| e.kind == IoKind::Sync).count(), 2);
    let s = wal.stats.snapshot();
    assert_eq!(s.cause(Cause::Commit).wal_syncs, 1);
    assert_eq!(s.total().wal_written_bytes, 1024);
    // Flushing again is free (already durable).
    wal.flush(e2).unwrap();
    assert_eq!(wal.stats.snapshot().total().wal_syncs, 2);
}

#[test]
fn records_read_back_across_segments_and_reopen_continues() {
    read_back_across_segments(WalFormat::Xlog);
}

#[test]
fn mtr_records_read_back_across_segments_and_reopen_continues() {
    read_back_across_segments(WalFormat::Mtr);
}

fn read_back_across_segments(record_format: WalFormat) {
    let cfg = WalConfig {
        block_bytes: 512,
        segment_bytes: 4096,
        buffer_bytes: 2048,
        full_page_writes: true,
        record_format,
    };
    let (vfs, wal) = wal_with(cfg.clone());
    let mut ends = Vec::new();
    for i in 0..50u32 {
        let rec = RecordBuilder::new(rmgr::TEST, 1)
            .xid(i)
            .main_data(&[i as u8; 160]);
        ends.push(wal.insert(&rec, &mut []).unwrap());
    }
    wal.flush_all().unwrap();
    assert!(
        wal.stats.snapshot().total().wal_writes > 2,
        "buffer overflow wrote out early"
    );
    let (recs, end) = wal.read_from(Lsn(FIRST_LSN)).unwrap();
    assert_eq!(recs.len(), 50);
    assert_eq!(end, *ends.last().unwrap());
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r.xid, i as u32);
        assert_eq!(r.main_data, vec![i as u8; 160]);
        assert_eq!(r.end_lsn, ends[i]);
        if i > 0 {
            assert_eq!(r.lsn, ends[i - 1], "contiguous");
            assert_eq!(r.prev_lsn, recs[i - 1].lsn);
        }
    }
    assert!(
        vfs.files()
            .unwrap()
            .iter()
            .filter(|f| file_ids::is_wal(**f))
            .count()
            >= 3
    );
    // Reopen from the start: continues at the end, and new records chain after the old.
    let stats = Arc::new(Stats::new());
    let wal2 = Wal::open(vfs.clone(), cfg, stats, FIRST_LSN).unwrap();
    assert_eq!(wal2.insert_lsn(), end);
    let e = wal2
        .insert(&RecordBuilder::new(rmgr::TEST, 2), &mut [])
        .unwrap();
    wal2.flush(e).unwrap();
    let (recs, _) = wal2.read_from(Lsn(FIRST_LSN)).unwrap();
    assert_eq!(recs.len(), 51);
    assert_eq!(recs[50].prev_lsn, recs[49].lsn);
    // Old segments go once a redo pointer passes them.
    let removed = wal2.remove_segments_before(Lsn(8192)).unwrap();
    assert_eq!(removed, 2);
}

#[test]
fn a_torn_tail_is_the_end_of_the_wal() {
    torn_tail(WalFormat::Xlog);
}

#[test]
fn a_torn_tail_is_the_end_of_an_mtr_wal() {
    torn_tail(WalFormat::Mtr);
}

fn torn_tail(record_format: WalFormat) {
    let (vfs, wal) = wal_with(WalConfig {
        block_bytes: 512,
        record_format,
        ..Default::default()
    });
    for _ in 0..3 {
        wal.insert(
            &RecordBuilder::new(rmgr::TEST, 0).main_data(&[5u8; 40]),
            &mut [],
        )
        .unwrap();
    }
    wal.flush_all().unwrap();
    let (recs, _) = wal.read_from(Lsn(FIRST_LSN)).unwrap();
    // Damage the third record's main data on the device.
    let off = recs[2].lsn.0 + 40;
    vfs.nvme()
        .write_at(file_ids::WAL_BASE, off, &[0xEE])
        .unwrap();
    let (recs2, end) = wal.read_from(Lsn(FIRST_LSN)).unwrap();
    assert_eq!(recs2.len(), 2);
    assert_eq!(end, recs[2].lsn);
}

/// A device that runs `before_sync` before each sync it passes on to `inner` (a failpoint:
/// the hook fails the sync, or holds it in flight).
struct SyncHook<D> {
    inner: D,
    before_sync: Box<dyn Fn(FileId) -> DeviceResult<()> + Send + Sync>,
}

impl<D: crate::device::Device> crate::device::Device for SyncHook<D> {
    fn create(&self, f: FileId) -> DeviceResult<()> {
        self.inner.create(f)
    }
    fn remove(&self, f: FileId) -> DeviceResult<()> {
        self.inner.remove(f)
    }
    fn files(&self) -> DeviceResult<Vec<FileId>> {
        self.inner.files()
    }
    fn len_bytes(&self, f: FileId) -> DeviceResult<u64> {
        self.inner.len_bytes(f)
    }
    fn read_at(&self, f: FileId, o: u64, b: &mut [u8]) -> DeviceResult<()> {
        self.inner.read_at(f, o, b)
    }
    fn write_at(&self, f: FileId, o: u64, d: &[u8]) -> DeviceResult<()> {
        self.inner.write_at(f, o, d)
    }
    fn sync(&self, f: FileId) -> DeviceResult<()> {
        (self.before_sync)(f)?;
        self.inner.sync(f)
    }
}

#[test]
fn a_failed_sync_fails_the_wal_until_reopened() {
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stats = Arc::new(Stats::new());
    let failing = fail.clone();
    let dev = SyncHook {
        inner: MemDevice::new(),
        before_sync: Box::new(move |f| {
            if failing.load(Ordering::SeqCst) {
                return Err(DeviceError::io(
                    "sync",
                    f,
                    std::io::Error::other("injected EIO"),
                ));
            }
            Ok(())
        }),
    };
    let nvme = Nvme::new(Box::new(dev), &NvmeConfig::default(), stats.clone()).unwrap();
    let vfs = Arc::new(Vfs::new(nvme, &OsCacheConfig::default()));
    let wal = Wal::open(vfs.clone(), WalConfig::default(), stats.clone(), FIRST_LSN).unwrap();
    let e = wal
        .insert(&RecordBuilder::new(rmgr::TEST, 0), &mut [])
        .unwrap();
    wal.flush(e).unwrap();
    fail.store(true, Ordering::SeqCst);
    let e = wal
        .insert(&RecordBuilder::new(rmgr::TEST, 0), &mut [])
        .unwrap();
    let first = wal.flush(e).unwrap_err();
    assert!(first.to_string().contains("injected EIO"), "{first}");
    assert!(
        wal.durable_lsn() < e,
        "a failed sync must not advance the durable LSN"
    );
    // The device is healthy again, but the WAL stays failed (fsync errors are not retried:
    // PostgreSQL PANICs on them, since the kernel may have dropped the dirty data).
    fail.store(false, Ordering::SeqCst);
    let again = wal.flush(e).unwrap_err();
    assert!(matches!(again, StorageError::PreviousIo(_)), "{again}");
    // Reopening finds every record that was written.
    let wal2 = Wal::open(vfs, WalConfig::default(), stats, FIRST_LSN).unwrap();
    assert_eq!(wal2.insert_lsn(), e);
}

#[test]
fn concurrent_committers_share_syncs() {
    // Group commit: with 200 µs per sync, committers that arrive while one syncs are covered
    // by the next flusher, so there are fewer syncs than commits.
    let stats = Arc::new(Stats::new());
    let cfg = NvmeConfig {
        throttle: crate::device::ThrottleConfig {
            latency_us: Some(200),
            ..Default::default()
        },
        ..Default::default()
    };
    let nvme = Nvme::new(Box::new(MemDevice::new()), &cfg, stats.clone()).unwrap();
    let vfs = Arc::new(Vfs::new(nvme, &OsCacheConfig::default()));
    let wal = Arc::new(Wal::open(vfs, WalConfig::default(), stats.clone(), FIRST_LSN).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let _c = enter(Cause::Commit);
                for _ in 0..50 {
                    let e = wal
                        .insert(&RecordBuilder::new(rmgr::XACT, 0), &mut [])
                        .unwrap();
                    wal.flush(e).unwrap();
                    assert!(wal.durable_lsn() >= e);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let c = stats.snapshot().cause(Cause::Commit);
    assert_eq!(c.wal_records, 400);
    assert!(
        c.wal_syncs < 300,
        "8 committers x 50 commits needed {} syncs",
        c.wal_syncs
    );
}

/// A gate syncs wait at while it is closed (a sync held in flight).
#[derive(Default)]
struct Gate {
    closed: parking_lot::Mutex<bool>,
    opened: parking_lot::Condvar,
    waiting: std::sync::atomic::AtomicBool,
}

impl Gate {
    fn pass(&self) {
        let mut closed = self.closed.lock();
        if *closed {
            self.waiting.store(true, Ordering::Release);
            while *closed {
                self.opened.wait(&mut closed);
            }
        }
    }

    fn set(&self, closed: bool) {
        *self.closed.lock() = closed;
        self.opened.notify_all();
    }
}

/// Two committers flush the same record; the first one's sync fails (power cut while it
/// was in flight). The second, already waiting for the flush lock, must not find the
/// first one's write counted as written and report its commit durable: it must fail too
/// (the crash test's lost commits, issue 7). Before the fix it returned Ok with nothing
/// synced.
#[test]
fn a_failed_sync_fails_the_flusher_waiting_behind_it() {
    use crate::device::{CrashConfig, CrashDevice, Device};
    let crash = Arc::new(
        CrashDevice::with_config(CrashConfig {
            survive_probability: 0.0,
            tear_probability: 0.0,
        })
        .unwrap(),
    );
    let gate = Arc::new(Gate::default());
    let g = gate.clone();
    let dev = SyncHook {
        inner: crash.clone(),
        before_sync: Box::new(move |_| {
            g.pass();
            Ok(())
        }),
    };
    let stats = Arc::new(Stats::new());
    let nvme = Nvme::new(Box::new(dev), &NvmeConfig::default(), stats.clone()).unwrap();
    let vfs = Arc::new(Vfs::new(nvme, &OsCacheConfig::default()));
    let wal = Wal::open(vfs, WalConfig::default(), stats, FIRST_LSN).unwrap();
    let end = wal
        .insert(
            &RecordBuilder::new(rmgr::TEST, 0).main_data(b"commit"),
            &mut [],
        )
        .unwrap();
    gate.set(true);
    std::thread::scope(|s| {
        let first = s.spawn(|| wal.flush(end));
        while !gate.waiting.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let second = s.spawn(|| wal.flush(end));
        // Let the second reach the flush lock (if it is late, the test passes either way).
        std::thread::sleep(std::time::Duration::from_millis(50));
        crash.power_cut_and_hold(7);
        gate.set(false);
        assert!(first.join().unwrap().is_err(), "the sync failed");
        let r = second.join().unwrap();
        assert!(
            r.is_err(),
            "the second flusher reported {end} durable: {r:?}"
        );
    });
    assert!(wal.durable_lsn() < end);
    crash.power_on();
    assert!(
        matches!(wal.flush(end), Err(StorageError::PreviousIo(_))),
        "a failed WAL stays failed"
    );
    assert_eq!(
        crash.len_bytes(file_ids::WAL_BASE).unwrap(),
        0,
        "nothing reached the medium"
    );
}
