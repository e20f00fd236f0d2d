//! Checkpoints: full-page images on first touch after one, the control file, WAL segment
//! removal, and a clean close that reopens with every change (file backing).

mod common;
use common::*;
use mvcclab_engine::device::file_ids;
use mvcclab_engine::page::PageId;
use mvcclab_engine::stats::{enter, Cause};
use mvcclab_engine::storage::{Backing, TornPageProtection};
use mvcclab_engine::wal::{ControlFile, WalConfig};
use mvcclab_engine::Storage;

#[test]
fn fpi_on_first_touch_after_checkpoint_only() {
    let s = Storage::open(quiet_config(64)).unwrap();
    let rel = s.store().create_relation().unwrap();
    let ids: Vec<PageId> = (0..4)
        .map(|_| {
            let mut g = s.pool().new_page(rel).unwrap();
            put(&s, &mut g, 1);
            g.page_id()
        })
        .collect();
    s.checkpoint().unwrap();
    let before = s.snapshot();
    {
        let _u = enter(Cause::Update);
        for round in 0..3u8 {
            for &id in &ids {
                let mut g = s.pool().fetch_write(id).unwrap();
                put(&s, &mut g, round);
            }
        }
    }
    let d = s.snapshot().delta(&before).counters.cause(Cause::Update);
    assert_eq!(d.wal_records, 12);
    assert_eq!(
        d.wal_fpi, 4,
        "one image per page, on its first change after the checkpoint"
    );
    assert_eq!(
        d.wal_fpi_bytes,
        4 * 128,
        "each image is the page minus its 8064-byte hole"
    );
    s.checkpoint().unwrap();
    let before = s.snapshot();
    {
        let _u = enter(Cause::Update);
        let mut g = s.pool().fetch_write(ids[0]).unwrap();
        put(&s, &mut g, 9);
    }
    assert_eq!(
        s.snapshot()
            .delta(&before)
            .counters
            .cause(Cause::Update)
            .wal_fpi,
        1
    );
}

#[test]
fn doublewrite_and_none_attach_no_images() {
    for tpp in [TornPageProtection::Doublewrite, TornPageProtection::None] {
        let s = Storage::open(mvcclab_engine::StorageConfig {
            torn_page_protection: tpp,
            ..quiet_config(16)
        })
        .unwrap();
        let rel = s.store().create_relation().unwrap();
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, 1);
        drop(g);
        s.checkpoint().unwrap();
        assert_eq!(s.snapshot().counters.total().wal_fpi, 0, "{tpp:?}");
    }
}

#[test]
fn checkpoint_counts_writes_syncs_and_control_file() {
    let s = Storage::open(quiet_config(64)).unwrap();
    let rel = s.store().create_relation().unwrap();
    for v in 0..10u8 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v);
    }
    let redo = s.checkpoint().unwrap();
    let c = s.snapshot().counters.cause(Cause::Checkpointer);
    assert_eq!(c.checkpoints_requested, 1);
    assert_eq!(c.buffer_pages_written, 10);
    // Exactly: 10 pages × 2 blocks, the WAL it flushed (8 KiB WAL blocks, aligned, so
    // bytes / 4096 blocks), and the 512-byte control file (1 block).
    assert_eq!(
        c.write_blocks_4k,
        20 + c.wal_written_bytes / 4096 + 1,
        "{c:?}"
    );
    assert!(c.syncs >= 3, "relation, WAL and control file synced: {c:?}");
    let ctl = ControlFile::read(s.vfs()).unwrap().unwrap();
    assert_eq!(ctl.redo_lsn, redo.0);
    assert!(ctl.checkpoint_lsn >= redo.0);
    assert_eq!(s.pool().state().dirty_pages, 0);
}

#[test]
fn old_wal_segments_are_removed_after_a_checkpoint() {
    let cfg = mvcclab_engine::StorageConfig {
        wal: WalConfig {
            block_bytes: 512,
            segment_bytes: 8 << 10,
            buffer_bytes: 8 << 10,
            full_page_writes: true,
            record_format: Default::default(),
        },
        ..quiet_config(8)
    };
    let s = Storage::open(cfg).unwrap();
    let rel = s.store().create_relation().unwrap();
    for v in 0..200u32 {
        let mut g = s.pool().new_page(rel).unwrap();
        put(&s, &mut g, v as u8);
    }
    let segs = |s: &Storage| {
        s.vfs()
            .files()
            .unwrap()
            .into_iter()
            .filter(|f| file_ids::is_wal(*f))
            .count()
    };
    s.wal().flush_all().unwrap();
    let before = segs(&s);
    assert!(before > 3, "{before}");
    s.checkpoint().unwrap();
    assert!(
        segs(&s) <= 2,
        "segments below the redo pointer are gone: {}",
        segs(&s)
    );
}

#[test]
fn clean_close_reopens_with_every_change_on_files() {
    let dir = tempfile::tempdir().unwrap();
    for direct in [false, true] {
        let path = dir.path().join(format!("db-direct-{direct}"));
        let cfg = mvcclab_engine::StorageConfig {
            backing: Backing::Directory {
                path: path.clone(),
                direct,
            },
            ..quiet_config(4)
        };
        let s = Storage::open(cfg.clone()).unwrap();
        let rel = s.store().create_relation().unwrap();
        let ids: Vec<PageId> = (0..20u8)
            .map(|v| {
                let mut g = s.pool().new_page(rel).unwrap();
                put(&s, &mut g, v);
                g.page_id()
            })
            .collect();
        let insert_lsn = s.wal().insert_lsn();
        s.close().unwrap();
        let s = Storage::open(cfg.clone()).unwrap();
        assert!(
            s.wal().insert_lsn() > insert_lsn,
            "continues after the shutdown checkpoint"
        );
        assert_eq!(s.store().relations(), vec![rel]);
        assert_eq!(s.store().n_blocks(rel).unwrap(), 20);
        for (v, &id) in ids.iter().enumerate() {
            assert_eq!(value(s.pool().fetch_read(id).unwrap().data()), v as u8);
        }
        drop(s);
        // A configuration that does not match the database is refused, naming both.
        let bad = mvcclab_engine::StorageConfig {
            page_size: mvcclab_engine::page::PageSize::K16,
            ..cfg
        };
        let e = Storage::open(bad).err().expect("page size mismatch");
        assert!(
            e.to_string().contains("8192") && e.to_string().contains("16384"),
            "{e}"
        );
    }
}

/// A WAL is read with the format it was written with: the control file records it, a
/// database reopens in it with every change, and the other format is refused.
#[test]
fn the_wal_record_format_is_kept_in_the_control_file() {
    use mvcclab_engine::wal::WalFormat;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = mvcclab_engine::StorageConfig {
        backing: Backing::Directory {
            path: dir.path().join("db"),
            direct: false,
        },
        ..quiet_config(4)
    };
    cfg.wal.record_format = WalFormat::Mtr;
    let s = Storage::open(cfg.clone()).unwrap();
    let rel = s.store().create_relation().unwrap();
    let mut g = s.pool().new_page(rel).unwrap();
    put(&s, &mut g, 7);
    let id = g.page_id();
    drop(g);
    s.checkpoint().unwrap();
    let mut g = s.pool().fetch_write(id).unwrap();
    put(&s, &mut g, 8);
    drop(g);
    s.wal().flush_all().unwrap();
    let insert_lsn = s.wal().insert_lsn();
    let control = ControlFile::read(s.vfs()).unwrap().unwrap();
    assert_eq!(control.wal_format, WalFormat::Mtr);
    drop(s);
    let s = Storage::open(cfg.clone()).unwrap();
    assert_eq!(
        s.wal().insert_lsn(),
        insert_lsn,
        "tail found in the mtr format"
    );
    let (recs, _) = s.wal().read_from(s.wal().redo_lsn()).unwrap();
    assert!(recs.iter().any(|r| r.blocks.iter().any(|b| b.page == id)));
    drop(s);
    let mut xlog = cfg.clone();
    xlog.wal.record_format = WalFormat::Xlog;
    let e = Storage::open(xlog).err().expect("format mismatch");
    assert!(
        e.to_string().contains("mtr record format") && e.to_string().contains("xlog"),
        "{e}"
    );
}
