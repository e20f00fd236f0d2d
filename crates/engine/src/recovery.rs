//! Crash recovery at open: the storage-level half (doublewrite repair, redo from the last
//! checkpoint's redo pointer, the catalog and the transaction outcomes found in the WAL).
//! The design-level half (marking crashed xids aborted, rolling back through the undo log,
//! finishing incomplete B+tree splits) is done by the engine that [`crate::db::Database`]
//! opens on the redone pages.
//!
//! # The sequence (`Database::open`)
//! 1. [`repair_from_doublewrite`] (torn-page protection `doublewrite`): every intact page in
//!    the doublewrite area whose home page fails its checksum is copied home
//!    (MariaDB 10.11 buf0dblwr.cc `buf_dblwr_t::recover`, which `recv_recovery_from_checkpoint_start`
//!    runs before applying the log).
//! 2. [`redo`]: reads the WAL from the control file's redo LSN to its end (the first record
//!    whose length or CRC is invalid, xlogreader.c `ReadRecord`; once: it takes the records
//!    `Wal::open` decoded to find that end, `Wal::take_records_read_at_open`) and replays every block
//!    of every record in LSN order (xlogrecovery.c `PerformWalRecovery` →
//!    `ApplyWalRecord` → each rmgr's `rm_redo`):
//!    - a block with a full-page image is restored from it, without reading the page
//!      (xlogutils.c `XLogReadBufferForRedoExtended` → `BLK_RESTORED`);
//!    - a will-init block is rebuilt from the record on a zeroed page (`RBM_ZERO_AND_LOCK`);
//!    - any other block is read (its checksum verified) and replayed only when its page
//!      LSN is below the record's end (`BLK_NEEDS_REDO`; else `BLK_DONE`);
//!    - with the doublewrite area (InnoDB), a block is skipped, its page not read, when a
//!      later record in the redo range rebuilds the page whole (a will-init block): MariaDB
//!      log0recv.cc `page_recv_t::will_not_read` drops a page's earlier records at an
//!      INIT_PAGE. A page written since such an init skipped the doublewrite area
//!      (`BufferPool`'s `reinit`, buf0flu.cc `buf_page_t::flush`), so a torn copy of it is
//!      repaired by this rebuild, not from the area;
//!    - relations are extended to cover the blocks named (extension is not logged).
//!
//!    Along the way it keeps the newest catalog (CATALOG records and the checkpoint
//!    record's copy, by version), every transaction's commit or abort record, and the
//!    largest `DB_ROW_ID` counter value written (`Catalog/ROW_ID`, the innodb design's
//!    dictionary header write).
//! 3. The engine opens its tables from the catalog and finishes: xids that neither
//!    committed nor aborted are marked aborted in the clog (PostgreSQL: they are simply
//!    never marked committed, and `TransactionIdDidCommit` says no), or the undo logs of
//!    active transactions are rolled back (InnoDB `trx_rollback_recovered`); every B+tree
//!    finishes the splits a crash interrupted.
//! 4. An end-of-recovery checkpoint (PostgreSQL 15 `StartupXLOG` requests one with
//!    CHECKPOINT_END_OF_RECOVERY), then the background threads start.
//!
//! # Invariants
//! 1. Redo is idempotent: a block is changed only when its page LSN is below the record's
//!    end, and every changed page gets that end as its LSN, so replaying a record twice
//!    (a crash during recovery) changes nothing the second time.
//! 2. The catalog used is the one with the highest version among the checkpoint record and
//!    the CATALOG records after the redo pointer; since `Storage::log_catalog` numbers
//!    versions under one mutex and flushes each record before the DDL returns, it is the
//!    newest catalog any acknowledged DDL produced.
//!
//! # Locking
//! Runs single-threaded before the background threads start; takes page locks through
//! the buffer pool one page at a time.
//!
//! # Crash safety
//! Recovery writes nothing but pages through the pool (WAL-before-data holds: every record
//! replayed is already durable) and repaired home pages (synced before redo starts), so a
//! crash during recovery leaves a state recovery can start from again.

pub use crate::access::{CatalogSnapshot, CatalogTable, RecoveryReport, Redone};
use crate::device::file_ids;
use crate::error::{Error, Result};
use crate::page::{identify, page_lsn, set_page_lsn, verify, PageId};
use crate::stats::{enter, Cause};
use crate::storage::TornPageProtection;
use crate::storage::{parse_checkpoint_main_data, CatalogBlob, Storage};
use crate::wal::{catalog_info, rmgr, xlog_info, WalRecord};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// The name of a WAL record type (resource manager and `info` code) in pg_waldump's
/// `Rmgr/RECORD` form, PostgreSQL's names where the record means the same (nbtxlog.h,
/// heapam_xlog.h, xact.h): `Heap/HOT_UPDATE`, `Heap/UPDATE+INIT`, `Heap2/PRUNE`,
/// `Btree/INSERT_LEAF`, `Transaction/COMMIT`; mvcclab's own records under theirs
/// (`Btree/DELETE_DEAD` is PostgreSQL's `Btree/DELETE`; `Btree/SPLIT` its `SPLIT_L` and
/// `SPLIT_R`), InnoDB's as `Undo/APPEND`, `Undo/WRITE`, `Undo/RSEG_INIT`. An unknown
/// code is named by its numbers.
pub fn record_type_name(rmgr_id: u8, info: u8) -> String {
    let known = match rmgr_id {
        rmgr::XLOG => match info {
            xlog_info::CHECKPOINT => Some("XLOG/CHECKPOINT".to_string()),
            xlog_info::CHECKPOINT_SHUTDOWN => Some("XLOG/CHECKPOINT_SHUTDOWN".to_string()),
            xlog_info::FPI_FOR_HINT => Some("XLOG/FPI_FOR_HINT".to_string()),
            _ => None,
        },
        rmgr::HEAP => crate::heap::wal::info_name(info),
        rmgr::BTREE => crate::btree::wal::info_name(info).map(|n| format!("Btree/{n}")),
        rmgr::XACT => match info {
            crate::mvcc::xact_info::COMMIT => Some("Transaction/COMMIT".to_string()),
            crate::mvcc::xact_info::ABORT => Some("Transaction/ABORT".to_string()),
            _ => None,
        },
        rmgr::UNDO => crate::clustered::undo_info_name(info).map(|n| format!("Undo/{n}")),
        rmgr::CATALOG => match info {
            catalog_info::SNAPSHOT => Some("Catalog/SNAPSHOT".to_string()),
            catalog_info::ROW_ID => Some("Catalog/ROW_ID".to_string()),
            _ => None,
        },
        rmgr::TEST => Some("Test/FILL".to_string()),
        _ => None,
    };
    known.unwrap_or_else(|| format!("rmgr{rmgr_id}/{info:#04x}"))
}

/// The pages of `dev`'s relation files (`file_ids::is_relation`) that fail
/// [`verify`] (torn or damaged), read directly from the device, pages `page_bytes` long
/// (a partial last page padded with zeros, as a torn extension reads). For crash tests:
/// what a cut tore, before recovery, and what recovery left torn.
///
/// Errors: device errors listing or reading the files.
pub fn pages_failing_checksum<D: crate::device::Device + ?Sized>(
    dev: &D,
    page_bytes: usize,
) -> Result<std::collections::BTreeSet<PageId>> {
    let mut out = std::collections::BTreeSet::new();
    for f in dev.files()? {
        if !file_ids::is_relation(f) {
            continue;
        }
        let mut bytes = vec![0u8; dev.len_bytes(f)? as usize];
        dev.read_at(f, 0, &mut bytes)?;
        for (b, chunk) in bytes.chunks(page_bytes.max(1)).enumerate() {
            let id = PageId::new(f, b as u32);
            let mut page = chunk.to_vec();
            page.resize(page_bytes, 0);
            if verify(&page, id).is_err() {
                out.insert(id);
            }
        }
    }
    Ok(out)
}

/// Copies every intact page of the doublewrite area over its home page when the home page
/// fails its checksum (a torn write); the newest copy (highest page LSN) wins when the area
/// holds a page twice. Homes that verify are left for redo. Syncs each relation repaired.
/// Returns the pages restored. A store without a doublewrite area restores nothing.
///
/// Source: MariaDB 10.11 buf0dblwr.cc `buf_dblwr_t::recover`.
///
/// Errors: device errors.
pub fn repair_from_doublewrite(storage: &Storage) -> Result<u64> {
    let _c = enter(Cause::Recovery);
    let vfs = storage.vfs();
    let Ok(len) = vfs.len_bytes(file_ids::DOUBLEWRITE) else {
        return Ok(0);
    };
    let page_bytes = storage.config().page_size.bytes();
    let n = (len / page_bytes as u64) as usize;
    if n == 0 {
        return Ok(0);
    }
    let mut area = vec![0u8; n * page_bytes];
    vfs.read_at(file_ids::DOUBLEWRITE, 0, &mut area)?;
    let mut newest: BTreeMap<PageId, &[u8]> = BTreeMap::new();
    for copy in area.chunks(page_bytes) {
        let Some(id) = identify(copy) else { continue };
        if !file_ids::is_relation(id.rel) {
            continue;
        }
        let e = newest.entry(id).or_insert(copy);
        if page_lsn(copy) > page_lsn(e) {
            *e = copy;
        }
    }
    let mut restored = 0;
    let mut rels = std::collections::BTreeSet::new();
    for (id, copy) in newest {
        let Ok(file_len) = vfs.len_bytes(id.rel) else {
            continue;
        };
        let off = id.block as u64 * page_bytes as u64;
        let mut home = vec![0u8; page_bytes];
        if off + page_bytes as u64 <= file_len {
            vfs.read_at(id.rel, off, &mut home)?;
        } else if off < file_len {
            // A torn extension: the page's first sectors made it, the rest did not.
            let have = (file_len - off) as usize;
            vfs.read_at(id.rel, off, &mut home[..have])?;
        }
        if verify(&home, id).is_ok() {
            continue;
        }
        vfs.write_at(id.rel, off, copy)?;
        rels.insert(id.rel);
        restored += 1;
    }
    for rel in rels {
        vfs.sync(rel)?;
    }
    Ok(restored)
}

/// Replays the WAL from the control file's redo pointer (see the module doc), returning the
/// catalog and transaction outcomes it found. Pages are changed in the buffer pool (cause
/// `recovery`) and left dirty for the end-of-recovery checkpoint.
///
/// Errors: [`StorageError::ChecksumMismatch`](crate::error::StorageError::ChecksumMismatch) naming the page when a page redo must read is torn
/// (torn-page protection off, or a page changed without WAL); [`StorageError::Corrupted`](crate::error::StorageError::Corrupted) for a
/// record a resource manager cannot apply, naming its LSN; device errors.
pub fn redo(storage: &Storage) -> Result<Redone> {
    let started = Instant::now();
    let _c = enter(Cause::Recovery);
    let wal = storage.wal();
    let start = wal.redo_lsn();
    // Wal::open decoded these to find the end; the first redo after it needs no second read.
    let (records, end) = match wal.take_records_read_at_open() {
        Some(r) if r.from == start => (r.records, r.end),
        _ => wal.read_from(start)?,
    };
    let mut out = Redone {
        started: Some(started),
        ..Default::default()
    };
    out.report.redo_start_lsn = start.0;
    out.report.redo_end_lsn = end.0;
    // The last record rebuilding each page whole (InnoDB: a page torn while written
    // without the doublewrite area is rebuilt by it, never read).
    let mut last_init: HashMap<PageId, usize> = HashMap::new();
    if storage.config().torn_page_protection == TornPageProtection::Doublewrite {
        for (i, rec) in records.iter().enumerate() {
            for blk in rec.blocks.iter().filter(|b| b.will_init) {
                last_init.insert(blk.page, i);
            }
        }
    }
    for (i, rec) in records.iter().enumerate() {
        out.max_xid = out.max_xid.max(rec.xid);
        match rec.rmgr {
            rmgr::XLOG
                if rec.info == xlog_info::CHECKPOINT
                    || rec.info == xlog_info::CHECKPOINT_SHUTDOWN =>
            {
                let (_, state, c) =
                    parse_checkpoint_main_data(&rec.main_data).ok_or_else(|| {
                        Error::corrupted(format!(
                            "checkpoint WAL record at {}: {} bytes of main data",
                            rec.lsn,
                            rec.main_data.len()
                        ))
                    })?;
                newer_catalog(&mut out.catalog, c);
                out.checkpoint_engine_state = Some(state);
            }
            rmgr::CATALOG if rec.info == catalog_info::ROW_ID => {
                let id = rec
                    .main_data
                    .get(..8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .ok_or_else(|| {
                        Error::corrupted(format!(
                            "row id WAL record at {}: {} bytes of main data",
                            rec.lsn,
                            rec.main_data.len()
                        ))
                    })?;
                out.dict_hdr_row_id = out.dict_hdr_row_id.max(id);
            }
            rmgr::CATALOG => {
                let c = CatalogBlob::decode(&rec.main_data).ok_or_else(|| {
                    Error::corrupted(format!(
                        "catalog WAL record at {}: {} bytes of main data",
                        rec.lsn,
                        rec.main_data.len()
                    ))
                })?;
                newer_catalog(&mut out.catalog, c);
            }
            rmgr::XACT => {
                let committed = rec.info == crate::mvcc::xact_info::COMMIT;
                if committed || rec.info == crate::mvcc::xact_info::ABORT {
                    out.xact_ends.push((rec.xid, committed));
                }
            }
            _ => {}
        }
        redo_blocks(
            storage,
            rec,
            |page| last_init.get(&page).is_some_and(|&j| j > i),
            &mut out.report,
        )?;
        out.report.records_replayed += 1;
    }
    // xlog.c `StartupXLOG`: a shutdown checkpoint with nothing after it needs no recovery.
    out.clean_shutdown = matches!(
        records.as_slice(),
        [only] if only.rmgr == rmgr::XLOG && only.info == xlog_info::CHECKPOINT_SHUTDOWN
    );
    Ok(out)
}

fn newer_catalog(have: &mut CatalogBlob, found: CatalogBlob) {
    if found.version >= have.version && !(found.version == 0 && found.bytes.is_empty()) {
        *have = found;
    }
}

/// Replays every block of `rec` (see the module doc) but those of the pages
/// `rebuilt_later` names, which a later record rebuilds whole (counted skipped).
fn redo_blocks(
    storage: &Storage,
    rec: &WalRecord,
    rebuilt_later: impl Fn(PageId) -> bool,
    report: &mut RecoveryReport,
) -> Result<()> {
    let pool = storage.pool();
    for (b, blk) in rec.blocks.iter().enumerate() {
        if rebuilt_later(blk.page) {
            report.blocks_skipped += 1;
            continue;
        }
        if let Some(image) = &blk.image {
            let mut g = pool.fetch_for_overwrite(blk.page)?;
            image.restore(g.data_mut())?;
            set_page_lsn(g.data_mut(), rec.end_lsn);
            g.note_logged(rec.end_lsn);
            report.full_page_images_restored += 1;
            continue;
        }
        let mut g = if blk.will_init {
            let mut g = pool.fetch_for_overwrite(blk.page)?;
            g.data_mut().fill(0);
            g
        } else {
            pool.store().ensure_block(blk.page)?;
            let g = pool.fetch_write(blk.page)?;
            if page_lsn(g.data()) >= rec.end_lsn {
                report.blocks_skipped += 1;
                continue;
            }
            g
        };
        let page = g.data_mut();
        match rec.rmgr {
            rmgr::HEAP => crate::heap::wal::redo_block(rec, b, page)?,
            rmgr::BTREE => crate::btree::wal::redo_block(rec, b, page)?,
            rmgr::UNDO => crate::clustered::undo_wal::redo_block(rec, b, page)?,
            other => {
                return Err(Error::corrupted(format!(
                        "WAL record at {} (rmgr {other}, info {:#x}) changes {} without an image, and no resource manager replays it",
                        rec.lsn,
                        rec.info,
                        blk.page
                    )))
            }
        }
        g.note_logged(rec.end_lsn);
        report.blocks_redone += 1;
    }
    Ok(())
}
