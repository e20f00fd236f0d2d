use super::*;
use crate::device::{file_ids, IoKind, NvmeConfig};
use crate::error::StorageError;
use crate::page::{identify, PageId};
use crate::stats::{enter, Cause};
use crate::storage::{Storage, StorageConfig, TornPageProtection};
use proptest::prelude::*;

/// A storage with `frames` frames, tracing, and no background threads (tests drive them).
pub(crate) fn quiet(frames: usize, tpp: TornPageProtection, replacer: ReplacerConfig) -> Storage {
    let mut cfg = StorageConfig::without_background(frames);
    cfg.nvme = NvmeConfig {
        trace: true,
        ..Default::default()
    };
    cfg.buffer_pool.replacer = replacer;
    cfg.torn_page_protection = tpp;
    cfg.doublewrite_batch_pages = 4;
    Storage::open(cfg).unwrap()
}

pub(crate) fn put(s: &Storage, g: &mut WritePageGuard<'_>, v: u8) -> Lsn {
    crate::testkit::fill_and_log(s.wal(), g, v, false).unwrap()
}

fn value(p: &[u8]) -> u8 {
    crate::testkit::filled_value(p)
}

#[test]
fn all_frames_pinned_exhausts_the_pool_and_pinned_pages_stay() {
    let s = quiet(
        4,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    let mut guards: Vec<_> = (0..4).map(|_| pool.new_page(rel).unwrap()).collect();
    for (i, g) in guards.iter_mut().enumerate() {
        put(&s, g, i as u8 + 1);
    }
    let err = pool.new_page(rel).err().expect("no frame can be had");
    assert!(
        matches!(err, StorageError::BufferPoolExhausted { frames: 4 }),
        "{err}"
    );
    let kept = guards.pop().unwrap().page_id();
    // One frame free again: the next page evicts the unpinned one, never a pinned one.
    let mut g = pool.new_page(rel).unwrap();
    put(&s, &mut g, 9);
    drop(g);
    for g in &guards {
        assert!(pool.is_resident(g.page_id()));
    }
    assert!(
        !pool.is_resident(kept),
        "the only unpinned page was the victim"
    );
    drop(guards);
    let r = pool.fetch_read(kept).unwrap();
    assert_eq!(
        value(r.data()),
        4,
        "the evicted page reads back from the device"
    );
}

#[test]
fn conditional_write_passes_over_a_frame_whose_content_lock_is_held() {
    // Eviction writes a dirty victim only if its content lock is free (the race it guards:
    // another thread pins and locks the victim after the evictor saw it unpinned, and waits
    // on something the evictor holds). Here the lock is held by a live write guard.
    let s = quiet(
        4,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let mut g = s.pool().new_page(rel).unwrap();
    put(&s, &mut g, 1);
    let frame = g.frame;
    assert_eq!(
        s.pool().write_frames_with(&[frame], true).unwrap(),
        0,
        "skipped, not waited for"
    );
    assert_eq!(s.pool().state().dirty_pages, 1);
    drop(g);
    let pinned = s.pool().fetch_read(PageId::new(rel, 0)).unwrap();
    assert_eq!(
        s.pool().write_frames_with(&[frame], true).unwrap(),
        1,
        "a shared lock does not stop it"
    );
    drop(pinned);
    assert_eq!(s.pool().state().dirty_pages, 0);
}

#[test]
fn evicting_a_dirty_page_flushes_the_wal_to_its_lsn_first() {
    let s = quiet(
        2,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    let mut g = pool.new_page(rel).unwrap();
    let id = g.page_id();
    let lsn = put(&s, &mut g, 7);
    drop(g);
    assert!(s.wal().durable_lsn() < lsn, "nothing flushed yet");
    s.vfs().nvme().take_trace();
    for v in 0..3 {
        let mut g = pool.new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    assert!(!pool.is_resident(id));
    assert!(s.wal().durable_lsn() >= lsn);
    let trace = s.vfs().nvme().take_trace();
    let page_write = trace
        .iter()
        .position(|e| e.kind == IoKind::Write && e.file == rel && e.offset_bytes == 0)
        .expect("the page was written");
    let wal_sync = trace
        .iter()
        .position(|e| e.kind == IoKind::Sync && file_ids::is_wal(e.file))
        .expect("the WAL was synced");
    assert!(
        wal_sync < page_write,
        "WAL sync must complete before the page write: {trace:?}"
    );
}

#[test]
fn doublewrite_copy_is_synced_before_home_writes() {
    let s = quiet(
        64,
        TornPageProtection::Doublewrite,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    for v in 0..10u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v + 1);
    }
    s.vfs().nvme().take_trace();
    s.checkpoint().unwrap();
    let trace = s.vfs().nvme().take_trace();
    let homes: Vec<usize> = trace
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == IoKind::Write && e.file == rel)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(homes.len(), 10);
    // Batches of 4: each home write is preceded by a doublewrite sync that comes after the
    // last home write of the previous batch.
    for (n, &i) in homes.iter().enumerate() {
        let batch_start = homes[n - n % 4];
        let dblwr_sync = trace[..batch_start]
            .iter()
            .rposition(|e| e.kind == IoKind::Sync && e.file == file_ids::DOUBLEWRITE)
            .expect("doublewrite synced before the batch");
        let prev_home = if n >= 4 { homes[n - n % 4 - 1] } else { 0 };
        assert!(
            dblwr_sync < i && dblwr_sync >= prev_home,
            "home write {n} at {i}: {trace:?}"
        );
    }
    let c = s.snapshot().counters;
    assert_eq!(
        c.cause(Cause::Doublewrite).write_blocks_4k,
        10 * 2,
        "10 pages of 8 KiB"
    );
    assert_eq!(c.cause(Cause::Doublewrite).syncs, 3);
    assert_eq!(c.total().doublewrite_pages, 10);
    assert_eq!(c.total().doublewrite_batches, 3);
    assert_eq!(
        c.total().wal_fpi,
        0,
        "doublewrite replaces full-page images"
    );
    // The area holds whole self-identifying pages: the last batch is pages 8 and 9.
    let mut area = vec![0u8; 8192];
    s.vfs()
        .read_at(file_ids::DOUBLEWRITE, 8192, &mut area)
        .unwrap();
    assert_eq!(identify(&area), Some(PageId::new(rel, 9)));
}

#[test]
fn a_checkpoint_flush_waits_for_a_copy_another_thread_is_still_writing() {
    // An evictor (or the page cleaner) copies a dirty page, clears its dirty flag and waits
    // for the doublewrite area. A checkpoint that starts then has its redo pointer past the
    // page's change: its flush must not return before that copy is on the device, or a
    // crash right after the checkpoint loses the change (the crash test found undo pages
    // that missed their history list node this way).
    let s = quiet(
        8,
        TornPageProtection::Doublewrite,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    let mut g = pool.new_page(rel).unwrap();
    let id = g.page_id();
    let frame = g.frame;
    put(&s, &mut g, 7);
    drop(g);
    let on_device = || {
        let mut buf = vec![0u8; s.store().page_size().bytes()];
        s.store().read_page(id, &mut buf).is_ok() && value(&buf) == 7
    };
    let flushed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let area = pool.hold_doublewrite();
        let writer = sc.spawn(|| {
            let pin = pool.fetch_read(id).unwrap();
            pool.write_frames(&[frame]).unwrap();
            drop(pin);
        });
        while pool.state().dirty_pages != 0 {
            std::thread::yield_now();
        }
        let checkpoint = sc.spawn(|| {
            pool.flush_all().unwrap();
            flushed.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!on_device(), "the writer is held at the doublewrite area");
        assert!(
            !flushed.load(std::sync::atomic::Ordering::SeqCst),
            "flush_all returned while a copy of a page changed before it was not written"
        );
        drop(area);
        checkpoint.join().unwrap();
        writer.join().unwrap();
    });
    assert!(flushed.load(std::sync::atomic::Ordering::SeqCst));
    assert!(on_device());
    assert_eq!(pool.state().dirty_pages, 0);
}

#[test]
fn a_damaged_page_is_reported_not_returned() {
    let s = quiet(2, TornPageProtection::None, ReplacerConfig::ClockSweep);
    let rel = s.store().create_relation().unwrap();
    let mut g = s.pool().new_page(rel).unwrap();
    let id = g.page_id();
    put(&s, &mut g, 3);
    drop(g);
    s.checkpoint().unwrap();
    assert!(s.pool().discard(id));
    // Tear the page: its second 4 KiB block is from "another version".
    s.vfs().nvme().write_at(rel, 4096, &[0x5Au8; 4096]).unwrap();
    let e = s.pool().fetch_read(id).err().expect("checksum must fail");
    assert!(
        matches!(e, StorageError::ChecksumMismatch { page, .. } if page == id),
        "{e}"
    );
    assert!(
        !s.pool().is_resident(id),
        "a page that failed to load is not cached"
    );
    // The frame is usable again.
    let mut g = s.pool().new_page(rel).unwrap();
    put(&s, &mut g, 4);
}

#[test]
fn page_cleaner_writes_are_counted_to_the_page_cleaner() {
    // LRU midpoint: the cleaner flushes the tail. (With the clock sweep it would write only
    // frames whose usage count fell to 0, as PostgreSQL's BgBufferSync skips recently used
    // buffers; see clock_sweep_cleaner_skips_recently_used_buffers.)
    let s = quiet(
        16,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::lru_midpoint_default(),
    );
    let rel = s.store().create_relation().unwrap();
    for v in 0..8u8 {
        let _g = enter(Cause::Insert);
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    let before = s.snapshot();
    let written = {
        let _g = enter(Cause::PageCleaner);
        s.pool()
            .clean_round(&PageCleanerConfig {
                enabled: true,
                interval_ms: 1,
                lru_scan_pages: 100,
                lru_multiplier: 2.0,
                max_dirty_pct: None,
                free_target: None,
                flush_neighbors: FlushNeighbors::Off,
            })
            .unwrap()
    };
    assert!(written > 0);
    let d = s.snapshot().delta(&before).counters;
    assert_eq!(
        d.cause(Cause::PageCleaner).buffer_pages_written,
        written as u64
    );
    let pc = d.cause(Cause::PageCleaner);
    assert!(pc.wal_syncs >= 1, "WAL flushed before the pages");
    // Its device writes are the pages (2 blocks each) plus the WAL flush it had to do.
    assert_eq!(
        pc.write_blocks_4k,
        2 * written as u64 + pc.wal_written_bytes.div_ceil(4096)
    );
    assert_eq!(d.cause(Cause::Insert).write_blocks_4k, 0);
}

/// A freed page allocated again keeps its place in InnoDB's LRU list (buf0buf.cc
/// `buf_page_create_low` reinitializes a resident block in place); a read of an old page
/// moves it to the head and counts as made young (buf0lru.cc `buf_page_make_young`).
#[test]
fn a_freed_page_allocated_again_keeps_its_lru_place_and_a_read_makes_an_old_page_young() {
    let s = quiet(
        64,
        TornPageProtection::None,
        ReplacerConfig::LruMidpoint {
            old_pct: 37,
            old_blocks_time_ms: 0,
            old_min_len: 8,
        },
    );
    let rel = s.store().create_relation().unwrap();
    // 90 pages through 64 frames: 26 evictions, more than the 10 (64 × 646 / 4096) a page
    // put at the head must wait before an access moves it again.
    for v in 0..90u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    s.pool().flush_all().unwrap();
    let tail = s.pool().victim_order(1)[0];
    assert!(s.pool().free_resident(tail));
    s.store().free_page(tail).unwrap();
    // The census (INNODB_BUFFER_PAGE's view): the tail is old and freed; 37 % of the 64
    // frames are old; the head is neither.
    let census = s.pool().buffer_cache();
    let entry = |id| *census.iter().find(|e| e.page == id).unwrap();
    assert!(entry(tail).old && entry(tail).freed, "{:?}", entry(tail));
    let old = census.iter().filter(|e| e.old).count();
    assert!((22..=25).contains(&old), "{old} old frames of 64");
    assert_eq!(census.iter().filter(|e| e.freed).count(), 1);
    // The page type is read from the frame.
    let head = census.iter().find(|e| !e.old).unwrap().page;
    crate::page::set_page_type(s.pool().fetch_write(head).unwrap().data_mut(), 9);
    let census = s.pool().buffer_cache();
    assert_eq!(census.iter().find(|e| e.page == head).unwrap().page_type, 9);
    let before = s.snapshot();
    let g = s.pool().new_page(rel).unwrap();
    assert_eq!(g.page_id(), tail, "the freed block is allocated again");
    drop(g);
    assert_eq!(
        s.pool().victim_order(1),
        vec![tail],
        "reinitialized in place, not moved to the head"
    );
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!((d.buffer_pages_made_young, d.buffer_misses), (0, 0));
    // A read of the old tail page moves it to the head, counted as made young.
    drop(s.pool().fetch_read(tail).unwrap());
    assert_ne!(s.pool().victim_order(1), vec![tail], "moved to the head");
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!(d.buffer_pages_made_young, 1, "{d:?}");
    // The young page nearest the old sublist was put at the head before the first
    // eviction, more than 64 × 646 / 4096 = 10 evictions ago: a read moves it back to the
    // head (buf_page_peek_if_young), counted as moved, not as made young.
    let census = s.pool().buffer_cache();
    let is_young = |id: &PageId| census.iter().any(|e| e.page == *id && !e.old && !e.freed);
    let last_young = s
        .pool()
        .victim_order(64)
        .into_iter()
        .find(is_young)
        .unwrap();
    let before = s.snapshot();
    drop(s.pool().fetch_read(last_young).unwrap());
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!(
        (d.buffer_pages_moved_to_head, d.buffer_pages_made_young),
        (1, 0),
        "{d:?}"
    );
}

/// A freed page stays in its frame, clean, until eviction reaches it (InnoDB's FREED
/// state); it is never written, and allocating the block again reuses the frame without a
/// read.
#[test]
fn a_freed_page_stays_resident_unwritten_until_evicted_or_allocated_again() {
    let s = quiet(
        4,
        TornPageProtection::None,
        ReplacerConfig::lru_midpoint_default(),
    );
    let rel = s.store().create_relation().unwrap();
    let mut g = s.pool().new_page(rel).unwrap();
    let id = g.page_id();
    put(&s, &mut g, 7);
    drop(g);
    assert_eq!(s.pool().state().dirty_pages, 1);
    assert!(s.pool().free_resident(id));
    s.store().free_page(id).unwrap();
    assert!(s.pool().is_resident(id), "the frame keeps the freed page");
    assert_eq!(s.pool().state().dirty_pages, 0, "a freed page is not dirty");
    let before = s.snapshot();
    assert_eq!(
        s.pool().flush_all().unwrap(),
        0,
        "a freed page is not written"
    );
    // The relation's next allocation is the freed block: found in the pool, not read.
    let g = s.pool().new_page(rel).unwrap();
    assert_eq!(g.page_id(), id);
    assert!(g.data().iter().all(|&b| b == 0), "handed out zeroed");
    drop(g);
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!((d.buffer_misses, d.read_blocks_4k), (0, 0));
    // Allocated, but not created in the pool (buf0buf.cc `buf_page_create_low` counts
    // `Innodb_pages_created` only for a page it did not find resident).
    assert_eq!((d.pages_allocated, d.buffer_pages_created), (1, 0));
    // Marked freed again (the store keeps the block this time, so that the next pages
    // are new blocks), then pushed out by four new pages: its frame, at the LRU tail, is
    // reclaimed like a clean page's, with no write.
    assert!(s.pool().free_resident(id));
    let before = s.snapshot();
    for v in 0..4u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        assert_ne!(g.page_id(), id);
        put(&s, &mut g, v);
    }
    assert!(!s.pool().is_resident(id), "evicted");
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!(d.buffer_pages_written, 0, "{d:?}");
    assert_eq!(d.buffer_pages_created, 4, "{d:?}");
    // A pinned page is not marked.
    let g = s.pool().fetch_read(PageId::new(rel, 1)).unwrap();
    assert!(!s.pool().free_resident(PageId::new(rel, 1)));
    drop(g);
}

#[test]
fn clock_sweep_cleaner_skips_recently_used_buffers() {
    let s = quiet(
        8,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    for v in 0..8u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    let cfg = PageCleanerConfig {
        enabled: true,
        interval_ms: 1,
        lru_scan_pages: 100,
        lru_multiplier: 2.0,
        max_dirty_pct: None,
        free_target: None,
        flush_neighbors: FlushNeighbors::Off,
    };
    assert_eq!(
        s.pool().clean_round(&cfg).unwrap(),
        0,
        "every buffer has usage_count 1"
    );
    // One more page forces a sweep that brings usage counts down to 0 on its way.
    let mut g = s.pool().new_page(rel).unwrap();
    put(&s, &mut g, 9);
    drop(g);
    assert!(s.pool().clean_round(&cfg).unwrap() > 0);
}

#[test]
fn max_dirty_pct_flushes_oldest_changes_first() {
    let s = quiet(
        10,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let mut ids = Vec::new();
    for v in 0..10u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
        ids.push(g.page_id());
    }
    let cfg = PageCleanerConfig {
        enabled: true,
        interval_ms: 1,
        lru_scan_pages: 0,
        lru_multiplier: 2.0,
        max_dirty_pct: Some(50),
        free_target: None,
        flush_neighbors: FlushNeighbors::Off,
    };
    let before = s.snapshot();
    assert_eq!(s.pool().clean_round(&cfg).unwrap(), 5);
    assert_eq!(s.pool().state().dirty_pages, 5);
    let d = s.snapshot().delta(&before).counters.total();
    assert_eq!(
        (
            d.buffer_flush_list_pages_written,
            d.buffer_lru_batch_pages_written
        ),
        (5, 0),
        "flush-list writes (buffer_flush_batch_total_pages)"
    );
    // The first five (oldest rec_lsn) went.
    let written: Vec<u64> = s
        .vfs()
        .nvme()
        .take_trace()
        .iter()
        .filter(|e| e.kind == IoKind::Write && e.file == rel)
        .map(|e| e.offset_bytes / 8192)
        .collect();
    assert_eq!(written, vec![0, 1, 2, 3, 4]);
}

#[test]
fn lru_midpoint_pool_keeps_a_hot_page_through_a_scan() {
    let s = quiet(
        32,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::LruMidpoint {
            old_pct: 37,
            old_blocks_time_ms: 0,
            old_min_len: 4,
        },
    );
    let rel = s.store().create_relation().unwrap();
    let mut ids = Vec::new();
    for v in 0..100u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
        ids.push(g.page_id());
    }
    s.checkpoint().unwrap();
    for &id in &ids {
        assert!(s.pool().discard(id));
    }
    let hot = ids[0];
    for _ in 0..3 {
        drop(s.pool().fetch_read(hot).unwrap());
    }
    for &id in &ids[1..] {
        drop(s.pool().fetch_read(id).unwrap());
    }
    assert!(
        s.pool().is_resident(hot),
        "a scan must not push out the young hot page"
    );
}

#[test]
fn concurrent_writers_and_readers_see_their_own_last_write() {
    let s = std::sync::Arc::new(quiet(
        8,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    ));
    let rel = s.store().create_relation().unwrap();
    let ids: Vec<PageId> = (0..32)
        .map(|_| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, 0);
            g.page_id()
        })
        .collect();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let s = s.clone();
            let mine: Vec<PageId> = ids.iter().copied().skip(t).step_by(4).collect();
            std::thread::spawn(move || {
                for round in 1..=20u8 {
                    for &id in &mine {
                        let mut g = s.pool().fetch_write(id).unwrap();
                        put(&s, &mut g, round);
                    }
                    for &id in &mine {
                        assert_eq!(value(s.pool().fetch_read(id).unwrap().data()), round);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for &id in &ids {
        assert_eq!(value(s.pool().fetch_read(id).unwrap().data()), 20);
    }
    let c = s.snapshot().counters.total();
    assert!(
        c.buffer_evictions > 0 && c.buffer_misses > 0,
        "the small pool had to evict: {c:?}"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, u8),
    Read(usize),
    Checkpoint,
    Clean,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..12usize, any::<u8>()).prop_map(|(p, v)| Op::Write(p, v)),
        4 => (0..12usize).prop_map(Op::Read),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Clean),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    /// Model-based: the pool (3 frames, 12 pages, both replacers, both torn-page schemes)
    /// always returns what a BTreeMap says was last written.
    #[test]
    fn pool_agrees_with_a_btreemap(ops in proptest::collection::vec(op(), 1..120), lru in any::<bool>(), dblwr in any::<bool>()) {
        let replacer = if lru {
            ReplacerConfig::LruMidpoint { old_pct: 37, old_blocks_time_ms: 0, old_min_len: 2 }
        } else {
            ReplacerConfig::ClockSweep
        };
        let tpp = if dblwr { TornPageProtection::Doublewrite } else { TornPageProtection::FullPageWrites };
        let s = quiet(3, tpp, replacer);
        let rel = s.store().create_relation().unwrap();
        let mut model = std::collections::BTreeMap::new();
        let ids: Vec<PageId> = (0..12).map(|_| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, 0);
            model.insert(g.page_id(), 0u8);
            g.page_id()
        }).collect();
        for op in ops {
            match op {
                Op::Write(p, v) => {
                    let mut g = s.pool().fetch_write(ids[p]).unwrap();
                    put(&s, &mut g, v);
                    model.insert(ids[p], v);
                }
                Op::Read(p) => {
                    let g = s.pool().fetch_read(ids[p]).unwrap();
                    prop_assert_eq!(value(g.data()), model[&ids[p]]);
                }
                Op::Checkpoint => { s.checkpoint().unwrap(); }
                Op::Clean => { s.pool().clean_round(&PageCleanerConfig::default()).unwrap(); }
            }
        }
        s.checkpoint().unwrap();
        prop_assert_eq!(s.pool().state().dirty_pages, 0);
        // Everything is on the device: read it around the pool.
        for (id, v) in model {
            let mut page = vec![0u8; 8192];
            s.store().read_page(id, &mut page).unwrap();
            prop_assert_eq!(value(&page), v);
        }
    }
}

#[test]
fn free_target_scales_with_the_pool_as_the_real_server_is_started() {
    // crates/servers/src/managed.rs: pool pages × 1536 / 8192, clamped to 100..=1536.
    assert_eq!(
        FreeTarget::ScaledLruScanDepth.pages(512),
        100,
        "8 MiB of 16 KiB"
    );
    assert_eq!(FreeTarget::ScaledLruScanDepth.pages(4096), 768);
    assert_eq!(FreeTarget::ScaledLruScanDepth.pages(8192), 1536, "128 MiB");
    assert_eq!(FreeTarget::ScaledLruScanDepth.pages(65536), 1536);
    assert_eq!(FreeTarget::Pages(7).pages(65536), 7);
}

#[test]
fn free_target_round_evicts_clean_tail_pages_until_the_target_is_free() {
    // An LRU whose tail is old and stays put when re-accessed (old_blocks_time); the pool
    // keeps 100 frames free (no page cleaner thread: the test runs the rounds).
    let mut sc = StorageConfig::without_background(400);
    sc.buffer_pool.replacer = ReplacerConfig::LruMidpoint {
        old_pct: 37,
        old_blocks_time_ms: 600_000,
        old_min_len: 8,
    };
    sc.buffer_pool.page_cleaner.free_target = Some(FreeTarget::Pages(100));
    let s = Storage::open(sc).unwrap();
    assert_eq!(s.pool().free_target(), Some(100));
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    for v in 0..400u32 {
        let mut g = pool.new_page(rel).unwrap();
        put(&s, &mut g, v as u8);
    }
    pool.flush_all().unwrap();
    assert_eq!(pool.free_frames(), 0);
    let order = pool.victim_order(400);
    assert_eq!(order.len(), 400);
    let dirty: Vec<PageId> = [2, 5, 9, 13, 17].iter().map(|&i| order[i]).collect();
    for id in &dirty {
        let mut g = pool.fetch_write(*id).unwrap();
        put(&s, &mut g, 99);
    }
    assert_eq!(pool.victim_order(400), order, "re-access kept the order");
    // PostgreSQL's bgwriter (no target) writes but never evicts.
    let bgwriter = PageCleanerConfig {
        lru_scan_pages: 0,
        lru_multiplier: 2.0,
        ..Default::default()
    };
    pool.clean_round(&bgwriter).unwrap();
    assert_eq!(pool.free_frames(), 0);
    let cfg = PageCleanerConfig {
        lru_scan_pages: 0,
        lru_multiplier: 2.0,
        free_target: Some(FreeTarget::Pages(100)),
        ..Default::default()
    };
    let before = s.snapshot();
    let written = {
        let _c = enter(Cause::PageCleaner);
        pool.clean_round(&cfg).unwrap()
    };
    assert_eq!(written, 5, "the dirty pages it met");
    assert_eq!(pool.free_frames(), 100);
    for (i, id) in order.iter().enumerate() {
        let resident = i >= 105 || dirty.contains(id);
        assert_eq!(pool.is_resident(*id), resident, "victim #{i} {id}");
    }
    assert_eq!(pool.state().dirty_pages, 0, "written, kept, clean");
    let d = s.snapshot().delta(&before).counters;
    let pc = d.cause(Cause::PageCleaner);
    assert_eq!((pc.buffer_evictions, pc.buffer_pages_written), (100, 5));
    assert_eq!(
        (
            pc.buffer_lru_batch_pages_written,
            pc.buffer_flush_list_pages_written
        ),
        (5, 0),
        "LRU batch writes (buffer_LRU_batch_flush_total_pages)"
    );
    assert_eq!(
        (
            pc.buffer_lru_batches,
            pc.buffer_lru_batch_scanned,
            pc.buffer_lru_batch_evicted
        ),
        (1, 105, 100),
        "one batch looked at the 100 clean and 5 dirty victims it met"
    );
    // With at least half the target free, a round does nothing (need_LRU_eviction).
    assert_eq!(pool.clean_round(&cfg).unwrap(), 0);
    assert_eq!(pool.free_frames(), 100);
    // Taking frames rings the page cleaner once fewer than half the target are left.
    pool.page_cleaner_sleep(std::time::Duration::ZERO);
    for v in 0..50u8 {
        let mut g = pool.new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    let t = std::time::Instant::now();
    pool.page_cleaner_sleep(std::time::Duration::from_millis(100));
    assert!(t.elapsed().as_millis() >= 90, "50 left: not rung");
    let mut g = pool.new_page(rel).unwrap();
    put(&s, &mut g, 1);
    drop(g);
    let t = std::time::Instant::now();
    pool.page_cleaner_sleep(std::time::Duration::from_secs(10));
    assert!(t.elapsed().as_secs() < 5, "49 left: rung");
    pool.clean_round(&cfg).unwrap();
    assert_eq!(pool.free_frames(), 100);
}

/// A pool of 1,024 frames holding pages 0..`pages` of one relation, written out, the LRU
/// tail at page 0 (old pages stay put when accessed again), and pages `dirty` changed in
/// that order. Flush area: min(pow2(1024 / 32) = 32, 64, 1024 / 16) = 32 pages.
fn neighbours_pool(pages: u32, dirty: &[u32]) -> (Storage, Vec<PageId>) {
    let mut sc = StorageConfig::without_background(1024);
    sc.buffer_pool.replacer = ReplacerConfig::LruMidpoint {
        old_pct: 37,
        old_blocks_time_ms: 600_000,
        old_min_len: 8,
    };
    let s = Storage::open(sc).unwrap();
    assert_eq!(s.pool().flush_area_pages(), 32);
    let rel = s.store().create_relation().unwrap();
    let mut ids = Vec::new();
    for v in 0..pages {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v as u8);
        ids.push(g.page_id());
    }
    s.pool().flush_all().unwrap();
    for &b in dirty {
        let mut g = s.pool().fetch_write(ids[b as usize]).unwrap();
        put(&s, &mut g, 7);
    }
    assert_eq!(
        s.pool().victim_order(1)[0],
        ids[0],
        "old pages stay at the tail"
    );
    (s, ids)
}

/// (pages written, of them neighbours, pages left dirty) of `f` run as the page cleaner.
fn cleaner_writes(s: &Storage, f: impl FnOnce() -> usize) -> (usize, u64, usize) {
    let before = s.snapshot();
    let written = {
        let _c = enter(Cause::PageCleaner);
        f()
    };
    let d = s.snapshot().delta(&before).counters;
    let pc = d.cause(Cause::PageCleaner);
    assert_eq!(pc.buffer_pages_written, written as u64);
    (
        written,
        pc.buffer_flush_neighbor_pages,
        s.pool().state().dirty_pages,
    )
}

/// MariaDB's neighbour flushing in the flush-list batch (buf0flu.cc
/// `buf_do_flush_list_batch` → `buf_flush_try_neighbors`): the oldest-changed page is
/// written with the contiguous run of dirty resident pages around it in its flush area
/// (`innodb_flush_neighbors=1`), or every dirty one of the area (`=2`); off, alone.
#[test]
fn flush_list_batch_writes_the_dirty_neighbours_by_mode() {
    // 11 dirty pages, 10 allowed (1 % of 1,024): one page over, the oldest change, 10.
    // Its run is 8..=12 (7 and 13 clean); 14 and 15 share its area; 40..=43 do not.
    let dirty = [10, 8, 9, 11, 12, 14, 15, 40, 41, 42, 43];
    let run = |mode: FlushNeighbors| {
        let (s, _) = neighbours_pool(1024, &dirty);
        let cfg = PageCleanerConfig {
            lru_scan_pages: 0,
            max_dirty_pct: Some(1),
            flush_neighbors: mode,
            ..Default::default()
        };
        cleaner_writes(&s, || s.pool().clean_round(&cfg).unwrap())
    };
    assert_eq!(run(FlushNeighbors::Off), (1, 0, 10));
    assert_eq!(run(FlushNeighbors::Contiguous), (5, 4, 6));
    assert_eq!(run(FlushNeighbors::Area), (7, 6, 4));
}

/// The LRU batch flushes neighbours too, but only while at least half the free-page target
/// is free (buf0flu.cc `buf_flush_LRU_list_batch`), and neither batch does with an LRU list
/// under BUF_LRU_OLD_MIN_LEN (512) pages.
#[test]
fn lru_batch_writes_neighbours_only_with_half_the_free_target_free() {
    // 1,023 pages in 1,024 frames: one free. Dirty: the tail page 0, and 2 and 3 beyond
    // the clean page 1, whose eviction ends the batch.
    let run = |mode: FlushNeighbors, target: usize| {
        let (s, _) = neighbours_pool(1023, &[0, 2, 3]);
        cleaner_writes(&s, || s.pool().lru_batch_with(target, mode).unwrap().1)
    };
    assert_eq!(run(FlushNeighbors::Off, 2), (1, 0, 2));
    assert_eq!(run(FlushNeighbors::Contiguous, 2), (1, 0, 2), "1 is clean");
    assert_eq!(run(FlushNeighbors::Area, 2), (3, 2, 0));
    // A target of 8: the free frames stay under half of it until the batch has met 0, 2
    // and 3 itself, so all three are written, none as a neighbour.
    assert_eq!(run(FlushNeighbors::Area, 8), (3, 0, 0));
    // A short LRU list: no neighbours in either batch.
    let (s, _) = neighbours_pool(500, &[0, 2, 3]);
    let cfg = PageCleanerConfig {
        lru_scan_pages: 0,
        max_dirty_pct: Some(0),
        flush_neighbors: FlushNeighbors::Area,
        ..Default::default()
    };
    assert_eq!(
        cleaner_writes(&s, || s.pool().clean_round(&cfg).unwrap()),
        (3, 0, 0)
    );
}

/// Reads per thread of the eviction race test (raise it to hunt the race).
const STRESS_READS: usize = 100_000;

/// Regression (found by `compare` with the free-page target): a guard's unpin raced with the
/// page cleaner evicting the frame it had just released, both put the frame on the free
/// list, and two pages later shared it.
#[test]
fn unpin_racing_with_eviction_never_frees_a_frame_twice() {
    let s = std::sync::Arc::new(quiet(
        24,
        TornPageProtection::None,
        ReplacerConfig::lru_midpoint_default(),
    ));
    let rel = s.store().create_relation().unwrap();
    let ids: Vec<PageId> = (0..96u8)
        .map(|v| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, v);
            g.page_id()
        })
        .collect();
    s.pool().flush_all().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cleaner = {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                s.pool().lru_batch(12).unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..3u32)
        .map(|t| {
            let (s, ids) = (s.clone(), ids.clone());
            std::thread::spawn(move || {
                let mut x = t as usize + 1;
                for _ in 0..STRESS_READS {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let i = (x >> 33) % ids.len();
                    let g = match s.pool().fetch_read(ids[i]) {
                        Ok(g) => g,
                        Err(StorageError::BufferPoolExhausted { .. }) => continue,
                        Err(e) => panic!("{e}"),
                    };
                    assert_eq!(
                        value(g.data()),
                        i as u8,
                        "page {} shows another's bytes",
                        ids[i]
                    );
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    cleaner.join().unwrap();
    let st = s.pool().state();
    assert_eq!(
        s.pool().free_frames() + st.resident_pages,
        st.frames,
        "every frame is either free (once) or holds a page"
    );
}

/// `n` pages of one relation, each filled with its index, checkpointed and then dropped
/// from the pool: every later read is a miss.
fn cold_pages(s: &Storage, n: usize) -> Vec<PageId> {
    let rel = s.store().create_relation().unwrap();
    let ids: Vec<PageId> = (0..n)
        .map(|v| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(s, &mut g, v as u8);
            g.page_id()
        })
        .collect();
    s.checkpoint().unwrap();
    for &id in &ids {
        assert!(s.pool().discard(id));
    }
    ids
}

/// A scan through a VACUUM ring (32 frames of 8 KiB) reuses its ring's frames: the pages
/// a foreground reader made hot stay resident, and the scan leaves at most a ring's worth
/// of its pages behind. Without the ring, the same scan evicts the hot pages.
#[test]
fn a_ring_scan_keeps_the_working_set_and_leaves_only_a_ring_of_pages() {
    for ring in [true, false] {
        let s = quiet(
            128,
            TornPageProtection::FullPageWrites,
            ReplacerConfig::ClockSweep,
        );
        let ids = cold_pages(&s, 600);
        let (hot, scanned) = ids.split_at(64);
        for _ in 0..3 {
            for &id in hot {
                drop(s.pool().fetch_read(id).unwrap());
            }
        }
        let scan = || {
            for &id in scanned {
                assert_eq!(
                    value(s.pool().fetch_read(id).unwrap().data()),
                    id.block as u8
                );
            }
        };
        if ring {
            strategy::with_ring(strategy::RingKind::Vacuum, 8192, scan);
        } else {
            scan();
        }
        let hot_left = hot.iter().filter(|&&id| s.pool().is_resident(id)).count();
        let scanned_left = scanned
            .iter()
            .filter(|&&id| s.pool().is_resident(id))
            .count();
        if ring {
            assert_eq!(hot_left, 64, "the ring spares the working set");
            assert!(
                scanned_left <= 128 - 64,
                "{scanned_left} scanned pages resident"
            );
        } else {
            assert!(hot_left < 64, "without a ring the scan evicts hot pages");
        }
    }
}

/// A ring page changed by the scan is written before its frame is reused (WAL first), and
/// reads back with the change; the writes are the scan's own, counted to its cause.
#[test]
fn a_dirty_ring_frame_is_written_before_reuse_and_counted_to_the_scan() {
    let s = quiet(
        128,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let ids = cold_pages(&s, 200);
    let before = s.stats().snapshot();
    strategy::with_ring(strategy::RingKind::Vacuum, 8192, || {
        let _c = enter(Cause::Vacuum);
        for &id in &ids {
            let mut g = s.pool().fetch_write(id).unwrap();
            put(&s, &mut g, 200);
        }
    });
    let written = s
        .stats()
        .snapshot()
        .delta(&before)
        .cause(Cause::Vacuum)
        .buffer_pages_written;
    assert!(written >= 200 - 32, "{written} pages written by the scan");
    assert!(s.pool().state().resident_pages <= 32 + 1);
    for &id in &ids {
        assert_eq!(value(s.pool().fetch_read(id).unwrap().data()), 200);
    }
}

/// A hit through a ring raises a page's usage count only from 0 to 1 (bufmgr.c
/// `PinBuffer` with a strategy); a plain hit raises it by one.
#[test]
fn a_hit_through_a_ring_does_not_make_a_page_hot() {
    let s = quiet(
        16,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let ids = cold_pages(&s, 2);
    let pool = s.pool();
    drop(pool.fetch_read(ids[0]).unwrap());
    drop(pool.fetch_read(ids[1]).unwrap());
    let usage = |id: PageId| {
        let g = pool.fetch_read(id).unwrap();
        let f = g.frame;
        drop(g);
        pool.replacer_usage(f)
    };
    strategy::with_ring(strategy::RingKind::Vacuum, 8192, || {
        for _ in 0..3 {
            drop(pool.fetch_read(ids[0]).unwrap());
        }
    });
    for _ in 0..3 {
        drop(pool.fetch_read(ids[1]).unwrap());
    }
    // Each `usage` call is one more plain hit.
    assert_eq!(
        usage(ids[0]),
        2,
        "1 after the load, kept at 1 by the ring, +1 here"
    );
    assert_eq!(usage(ids[1]), 5, "1 + 3 + 1, capped at BM_MAX_USAGE_COUNT");
}

/// A scan's held buffer: this thread's later pins of it are nested pins that leave its
/// usage count alone (bufmgr.c `PinBuffer`); fetching it again as the held buffer counts
/// no hit (`ReleaseAndReadBuffer`); after the statement, a pin raises the count again.
#[test]
fn pins_of_the_held_buffer_are_nested_and_leave_the_usage_count() {
    let s = quiet(
        8,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    let id = pool.new_page(rel).unwrap().page_id();
    let frame = |pool: &BufferPool| pool.fetch_read(id).unwrap().frame;
    let f = frame(pool);
    let usage = pool.replacer_usage(f);
    let hits = || s.stats().snapshot().total().buffer_hits;
    release_held();
    let h0 = hits();
    drop(pool.fetch_read_held(id).unwrap());
    assert_eq!(
        pool.replacer_usage(f),
        usage + 1,
        "the scan's first pin counts"
    );
    assert_eq!(hits(), h0 + 1);
    drop(pool.fetch_write(id).unwrap());
    drop(pool.fetch_read(id).unwrap());
    assert_eq!(pool.replacer_usage(f), usage + 1, "nested pins do not");
    assert_eq!(hits(), h0 + 3, "but count as hits");
    drop(pool.fetch_read_held(id).unwrap());
    assert_eq!(hits(), h0 + 3, "the held buffer fetched again is no hit");
    release_held();
    drop(pool.fetch_read(id).unwrap());
    assert_eq!(
        pool.replacer_usage(f),
        usage + 2,
        "after the statement a pin counts"
    );
}

/// With the clock sweep the page cleaner runs PostgreSQL's BgBufferSync: it writes the
/// reusable dirty buffers ahead of the hand for twice the recent allocations.
#[test]
fn clock_sweep_cleaner_writes_ahead_for_the_recent_allocations() {
    let s = quiet(
        64,
        TornPageProtection::FullPageWrites,
        ReplacerConfig::ClockSweep,
    );
    let rel = s.store().create_relation().unwrap();
    let pool = s.pool();
    // 64 dirty pages fill the pool; 10 more allocations evict 10 of them.
    let ids: Vec<PageId> = (0..74)
        .map(|i| {
            let mut g = pool.new_page(rel).unwrap();
            put(&s, &mut g, i as u8);
            g.page_id()
        })
        .collect();
    let cfg = PageCleanerConfig::default();
    let written = pool.clean_round(&cfg).unwrap();
    // 74 allocations since the start: the round aims at 148 reusable buffers, so it
    // scans the whole pool once and writes every dirty unpinned buffer with usage 0.
    let dirty_left = pool.state().dirty_pages;
    assert!(written > 0, "{written} {dirty_left}");
    assert_eq!(dirty_left + written, 64, "every dirty buffer was reusable");
    assert_eq!(ids.len(), 74);
    // Nothing allocated since: the next round aims only at the slow whole-pool scan.
    let again = pool.clean_round(&cfg).unwrap();
    assert_eq!(again, 0);
}

/// Twenty pages written through an LRU pool of sixteen frames (no `old_blocks_time`):
/// four evictions start the eviction clock, after which an access may move a page.
fn twenty_pages_in_sixteen_lru_frames() -> Storage {
    let s = quiet(
        16,
        TornPageProtection::Doublewrite,
        ReplacerConfig::LruMidpoint {
            old_pct: 37,
            old_blocks_time_ms: 0,
            old_min_len: 2,
        },
    );
    let rel = s.store().create_relation().unwrap();
    for v in 0..20u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    s
}

/// A fix (MariaDB's purge, `buf_pool_t::page_fix`) or a fetch without an access counts a
/// hit but leaves the page where it is in the LRU list; an access (`buf_page_get_gen`
/// followed by `buf_page_make_young_if_needed`) makes the same page young.
#[test]
fn a_fix_counts_a_hit_and_leaves_the_page_in_its_lru_place() {
    let s = twenty_pages_in_sixteen_lru_frames();
    let pool = s.pool();
    let hits = || s.stats().snapshot().total().buffer_hits;
    let order = pool.victim_order(16);
    let tail = order[0];
    let h0 = hits();
    drop(pool.fetch_read_fixed(tail).unwrap());
    assert_eq!(hits(), h0 + 1, "a fix is a hit");
    assert_eq!(pool.victim_order(16), order, "and moves nothing");
    // The same for an exclusive fetch without an access (MariaDB's commit and history
    // truncation changing undo log pages with `buf_page_get_gen` alone).
    drop(pool.fetch_write_fixed(tail).unwrap());
    assert_eq!(hits(), h0 + 2);
    assert_eq!(pool.victim_order(16), order);
    drop(pool.fetch_read(tail).unwrap());
    assert_eq!(hits(), h0 + 3);
    assert_ne!(
        pool.victim_order(16)[0],
        tail,
        "an access makes the tail page young"
    );
}

/// A cursor's optimistic restore (`buf_page_optimistic_get`) is an access of the LRU list
/// without a hit (`buf_inc_get` is not called) and reads nothing: a page not in the pool is
/// left to the caller's search. A page fix (`buf_pool_t::page_fix`, the left sibling of a
/// split) reads a missing page in at the midpoint and counts a hit on a resident one,
/// without an access.
#[test]
fn a_cursor_restore_moves_a_page_without_a_hit_and_a_fix_reads_without_moving() {
    let s = twenty_pages_in_sixteen_lru_frames();
    let pool = s.pool();
    pool.flush_all().unwrap();
    let counts = || {
        let t = s.stats().snapshot().total();
        (t.buffer_hits, t.buffer_misses, t.buffer_pages_made_young)
    };
    let order = pool.victim_order(16);
    let tail = order[0];
    let c0 = counts();
    assert!(pool.restore_access(tail));
    let c1 = counts();
    assert_eq!((c1.0, c1.1), (c0.0, c0.1), "no hit, no read");
    assert_eq!(c1.2, c0.2 + 1, "the old tail page is made young");
    assert_ne!(pool.victim_order(1)[0], tail);
    // A page that left the pool: nothing happens, and the caller is told.
    let gone = pool.victim_order(1)[0];
    assert!(pool.discard(gone));
    let order = pool.victim_order(16);
    assert!(!pool.restore_access(gone));
    assert_eq!(counts().0, c1.0);
    assert_eq!(pool.victim_order(16), order);
    // A fix reads it back (a miss) at the midpoint and then counts a hit, moving nothing.
    assert!(!pool.fix_page(gone).unwrap());
    assert_eq!(counts().1, c1.1 + 1);
    assert!(pool.is_resident(gone));
    let order = pool.victim_order(16);
    assert!(pool.fix_page(gone).unwrap());
    assert_eq!(counts().0, c1.0 + 1);
    assert_eq!(pool.victim_order(16), order);
}

/// A fix taken from a read guard (MariaDB's purge keeps each undo page of a batch fixed,
/// trx0purge.cc `purge_sys_t::get_page`) outlives the guard: the page stays in the pool
/// while every other page cycles through it, and can be evicted once the fix drops.
#[test]
fn a_fixed_page_stays_in_the_pool_until_the_fix_drops() {
    let s = twenty_pages_in_sixteen_lru_frames();
    let pool = s.pool();
    let tail = pool.victim_order(1)[0];
    let others: Vec<PageId> = (0..20)
        .map(|b| PageId::new(tail.rel, b))
        .filter(|&id| id != tail)
        .collect();
    let cycle = || {
        for &id in &others {
            drop(pool.fetch_read(id).unwrap());
        }
    };
    let g = pool.fetch_read_fixed(tail).unwrap();
    let fix = g.fix();
    drop(g);
    assert_eq!(fix.page_id(), tail);
    cycle();
    cycle();
    assert!(pool.is_resident(tail), "fixed: never a victim");
    drop(fix);
    cycle();
    cycle();
    assert!(!pool.is_resident(tail), "unfixed: evicted by the cycle");
}

/// Fragment pages (InnoDB's `fsp_alloc_free_page`, the undo relation's pages): pages freed
/// together empty their extents, which go to the end of the space's free list, so the next
/// pages come from the extents that were free before them; the first ones come back a
/// round later. Taking the lowest freed block would hand the same blocks out again at once.
#[test]
fn fragment_pages_freed_together_are_taken_again_a_round_later() {
    let s = quiet(
        8,
        TornPageProtection::None,
        ReplacerConfig::lru_midpoint_default(),
    );
    let store = s.store();
    let e = crate::page::extent_pages(store.page_size());
    let rel = store.create_relation().unwrap();
    // The first extent stays used, as the undo relation's rollback segment headers do.
    for b in 0..e {
        assert_eq!(store.allocate_page(rel).unwrap().block, b);
    }
    let round = || -> Vec<u32> {
        (0..2 * e)
            .map(|_| store.allocate_fragment_page(rel, 0).unwrap().block)
            .collect()
    };
    let free = |rel, blocks: &[u32]| {
        for &b in blocks {
            store.free_page(PageId::new(rel, b)).unwrap();
        }
    };
    // The space's free list gets four extents (1–4); the first round takes two.
    let first = round();
    assert_eq!(
        first,
        (e..3 * e).collect::<Vec<_>>(),
        "extents 1 and 2, in order"
    );
    free(rel, &first);
    let second = round();
    assert_eq!(
        second,
        (3 * e..5 * e).collect::<Vec<_>>(),
        "extents 3 and 4, free before 1 and 2 came back"
    );
    free(rel, &second);
    assert_eq!(round(), first, "then extents 1 and 2 again");
    assert_eq!(
        store.n_blocks(rel).unwrap(),
        5 * e,
        "nothing past extent 4 was used"
    );
    // Lowest first would have taken the freed blocks again at once.
    let other = store.create_relation().unwrap();
    let lowest: Vec<u32> = (0..4)
        .map(|_| store.allocate_page(other).unwrap().block)
        .collect();
    free(other, &lowest);
    assert_eq!(store.allocate_page(other).unwrap().block, lowest[0]);
}
