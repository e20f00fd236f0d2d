//! A server's files on the FUSE device, named by what they hold: the `by_file_class` of a
//! report. Paths are relative to the mount's root, where the managed server's data
//! directory is `data/` (managed.rs, invariant 5).
//!
//! PostgreSQL 15 (storage layout: "Database File Layout" in the manual): `data/pg_wal/*`
//! is `pg_wal`, `data/pg_xact/*` is `pg_xact`, anything under a `pgsql_tmp` folder is
//! `temp`; `data/base/DBOID/FILENODE[_fork][.segment]` of the run's database is named by
//! the relation whose `pg_relation_filenode` it is — `heap NAME` for a table (relkind
//! `r`, also TOAST `t` and materialized views `m`), `index NAME` for an index (`i`), with
//! ` fsm` or ` vm` after it for those forks — and a system catalog's file is `catalog`;
//! every other file is `other`.
//!
//! MariaDB 10.11 (the InnoDB file layout of the KB, "InnoDB System Tablespaces", "InnoDB
//! Redo Log", "InnoDB Undo Log"): `ib_logfile0` (the redo log), `ibdata1` (the system
//! tablespace: doublewrite buffer, undo logs with the default
//! `innodb_undo_tablespaces=0`, change buffer) — in file-system mode split into
//! `ibdata1 doublewrite`, `ibdata1 undo` and `ibdata1 system` by what each request touches
//! ([`system_tablespace_parts`]) —, `undo001`... (`undo`), `ibtmp1`, `#sql*` files and
//! everything in the `tmp/` tmpdir (`temp`), every `.ibd` file by its name (`sbtest1.ibd`), the rest
//! (`.frm`, Aria's logs, `mysql/` system tables) `other`.

use crate::error::ServerError;
use mvcclab_devfs::FileIo;
use mvcclab_engine::device::CompressionTotals;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek};
use std::path::Path;

/// The kind of space a file of a data directory holds, for `space.by_file_kind`: `data`
/// (PostgreSQL's `base/` and `global/` relation files with their forks; InnoDB's `.ibd`
/// files and the system tablespace `ibdata1`), `wal` (`pg_wal/`; `ib_logfile*`), `other`.
pub fn space_kind(path: &str) -> &'static str {
    let p = path.strip_prefix("data/").unwrap_or(path);
    let name = p.rsplit('/').next().unwrap_or(p);
    if p.starts_with("base/")
        || p.starts_with("global/")
        || name.ends_with(".ibd")
        || name == "ibdata1"
    {
        "data"
    } else if p.starts_with("pg_wal/") || name.starts_with("ib_logfile") {
        "wal"
    } else {
        "other"
    }
}

/// Per-file byte totals summed per [`space_kind`] of their paths.
pub fn space_by_kind(
    files: &BTreeMap<String, CompressionTotals>,
) -> BTreeMap<String, CompressionTotals> {
    let mut out: BTreeMap<String, CompressionTotals> = BTreeMap::new();
    for (p, t) in files {
        let e = out.entry(space_kind(p).to_string()).or_default();
        *e = e.plus(t);
    }
    out
}

/// What a PostgreSQL relation file node is: (relation name, relkind, schema).
pub type PgRelations = HashMap<u32, (String, String, String)>;

/// The class of a PostgreSQL file at `path`; `db_oid` is the run's database and
/// `relations` its file nodes (module doc).
pub fn postgresql_class(path: &str, db_oid: u32, relations: &PgRelations) -> String {
    let p = path.strip_prefix("data/").unwrap_or(path);
    if p.split('/').any(|c| c == "pgsql_tmp") {
        return "temp".into();
    }
    if p.starts_with("pg_wal/") {
        return "pg_wal".into();
    }
    if p.starts_with("pg_xact/") {
        return "pg_xact".into();
    }
    let mut parts = p.split('/');
    if let (Some("base"), Some(db), Some(file), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    {
        if db.parse::<u32>().ok() == Some(db_oid) {
            let stem = file.split('.').next().unwrap_or(file);
            let (node, fork) = match stem.split_once('_') {
                Some((n, f)) => (n, Some(f)),
                None => (stem, None),
            };
            if let Some((name, kind, schema)) =
                node.parse::<u32>().ok().and_then(|n| relations.get(&n))
            {
                if schema == "pg_catalog" || schema == "information_schema" {
                    return "catalog".into();
                }
                let what = if kind == "i" { "index" } else { "heap" };
                return match fork {
                    Some(f) => format!("{what} {name} {f}"),
                    None => format!("{what} {name}"),
                };
            }
        }
    }
    "other".into()
}

/// InnoDB's page size as the managed MariaDB runs (innodb_page_size default, 16 KiB).
const INNODB_PAGE_BYTES: u64 = 16384;
/// Pages of one of the doublewrite buffer's two blocks (trx0sys.h
/// TRX_SYS_DOUBLEWRITE_BLOCK_SIZE = FSP_EXTENT_SIZE: 64 pages of 16 KiB).
const DOUBLEWRITE_BLOCK_PAGES: u64 = 64;
/// FIL_PAGE_TYPE's offset in a page and the type of an undo log page (fil0fil.h
/// FIL_PAGE_TYPE = 24, FIL_PAGE_UNDO_LOG = 2).
const FIL_PAGE_TYPE: usize = 24;
const FIL_PAGE_UNDO_LOG: u16 = 2;

/// The parts of MariaDB's system tablespace (`ibdata1`) a request falls in, for the FUSE
/// device's split counts ([`mvcclab_devfs::DevMount::split_file`]): `doublewrite` for the
/// doublewrite buffer's two 64-page blocks, whose first page numbers the TRX_SYS page
/// (page 5) stores at TRX_SYS_DOUBLEWRITE + 14 and + 18, after its magic number at + 10
/// (TRX_SYS_DOUBLEWRITE = page size − 200; trx0sys.h, buf0dblwr.cc
/// `buf_dblwr_t::init_or_load_pages`; 64 and 128 in a new 10.11 data directory); `undo`
/// for a request whose first page has FIL_PAGE_TYPE = FIL_PAGE_UNDO_LOG (the undo logs
/// live in ibdata1 with the default `innodb_undo_tablespaces=0`); `system` for the rest
/// (TRX_SYS and rollback segment headers, the data dictionary, the change buffer, free
/// space management). A request is named by its first page. Read from `ibdata1` (the
/// data directory's file) once.
///
/// Errors: [`ServerError::Io`] reading the file; [`ServerError::Device`] when the TRX_SYS
/// page has no doublewrite magic (TRX_SYS_DOUBLEWRITE_MAGIC_N 536853855).
pub fn system_tablespace_parts(ibdata1: &Path) -> Result<mvcclab_devfs::PartFn, ServerError> {
    let mut f = std::fs::File::open(ibdata1)
        .map_err(|e| ServerError::io(&format!("opening {}", ibdata1.display()), e))?;
    let mut field = [0u8; 12];
    let at = 5 * INNODB_PAGE_BYTES + INNODB_PAGE_BYTES - 200 + 10;
    f.seek(std::io::SeekFrom::Start(at))
        .and_then(|_| f.read_exact(&mut field))
        .map_err(|e| ServerError::io("reading ibdata1's TRX_SYS page", e))?;
    let word = |i: usize| u32::from_be_bytes([field[i], field[i + 1], field[i + 2], field[i + 3]]);
    if word(0) != 536_853_855 {
        return Err(ServerError::Device(format!(
            "{}: no doublewrite buffer in the TRX_SYS page (magic {:#x})",
            ibdata1.display(),
            word(0)
        )));
    }
    let blocks = [u64::from(word(4)), u64::from(word(8))];
    Ok(std::sync::Arc::new(move |offset: u64, data: &[u8]| {
        let page = offset / INNODB_PAGE_BYTES;
        if blocks
            .iter()
            .any(|&b| (b..b + DOUBLEWRITE_BLOCK_PAGES).contains(&page))
        {
            return "doublewrite";
        }
        let at = (INNODB_PAGE_BYTES - offset % INNODB_PAGE_BYTES) % INNODB_PAGE_BYTES;
        match data.get(at as usize + FIL_PAGE_TYPE..at as usize + FIL_PAGE_TYPE + 2) {
            Some(t) if u16::from_be_bytes([t[0], t[1]]) == FIL_PAGE_UNDO_LOG => "undo",
            _ => "system",
        }
    }))
}

/// The class of a MariaDB file at `path` (module doc).
pub fn mariadb_class(path: &str) -> String {
    let p = path.strip_prefix("data/").unwrap_or(path);
    let name = p.rsplit('/').next().unwrap_or(p);
    if name == "ib_logfile0" || name == "ibdata1" {
        return name.into();
    }
    // ibdata1 counted by part (file-system mode, [`system_tablespace_parts`]).
    if let Some(part) = name.strip_prefix("ibdata1#") {
        return format!("ibdata1 {part}");
    }
    // MyRocks' RocksDB directory (`#rocksdb`): SST files, its WAL, the MANIFEST.
    if p.starts_with("#rocksdb/") {
        return if name.ends_with(".sst") {
            "sst".into()
        } else if name.ends_with(".log") {
            "rocksdb_wal".into()
        } else if name.starts_with("MANIFEST") {
            "MANIFEST".into()
        } else {
            "rocksdb_other".into()
        };
    }
    if name.starts_with("undo") && name[4..].chars().all(|c| c.is_ascii_digit()) && name.len() > 4 {
        return "undo".into();
    }
    // `tmp/`: the tmpdir a managed server on the device gets (managed.rs invariant 5).
    if name == "ibtmp1"
        || name.starts_with("#sql")
        || p.starts_with("#innodb_temp/")
        || path.starts_with("tmp/")
    {
        return "temp".into();
    }
    if name.ends_with(".ibd") && !p.starts_with("mysql/") {
        return name.into();
    }
    "other".into()
}

/// Sums the per-file counts into classes by `class`.
pub fn by_class(
    by_file: &BTreeMap<String, FileIo>,
    class: impl Fn(&str) -> String,
) -> BTreeMap<String, FileIo> {
    let mut out: BTreeMap<String, FileIo> = BTreeMap::new();
    for (path, c) in by_file {
        let e = out.entry(class(path)).or_default();
        *e = e.plus(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_is_split_by_what_the_files_hold() {
        let t = |l: u64, p: u64| CompressionTotals {
            logical_bytes: l,
            physical_bytes: p,
            ratio: 0.0,
        };
        let files: BTreeMap<String, CompressionTotals> = [
            ("data/base/5/16384".to_string(), t(8192, 1000)),
            ("data/base/5/16384_fsm".to_string(), t(4096, 100)),
            (
                "data/pg_wal/000000010000000000000001".to_string(),
                t(4096, 4096),
            ),
            ("data/postmaster.pid".to_string(), t(4096, 10)),
        ]
        .into_iter()
        .collect();
        let k = space_by_kind(&files);
        assert_eq!(
            (k["data"].logical_bytes, k["data"].physical_bytes),
            (12288, 1100)
        );
        assert!((k["data"].ratio - 12288.0 / 1100.0).abs() < 1e-9);
        assert_eq!(k["wal"].physical_bytes, 4096);
        assert_eq!(k["other"].logical_bytes, 4096);
        assert_eq!(space_kind("data/base/1/2_fsm"), "data");
        assert_eq!(space_kind("sbtest/warehouse1.ibd"), "data");
        assert_eq!(space_kind("ib_logfile0"), "wal");
    }

    #[test]
    fn postgresql_files_are_named_by_their_relations() {
        let mut r = PgRelations::new();
        r.insert(16400, ("sbtest1".into(), "r".into(), "public".into()));
        r.insert(16407, ("k_1".into(), "i".into(), "public".into()));
        r.insert(1259, ("pg_class".into(), "r".into(), "pg_catalog".into()));
        let c = |p: &str| postgresql_class(p, 16384, &r);
        assert_eq!(c("data/base/16384/16400"), "heap sbtest1");
        assert_eq!(c("data/base/16384/16400.1"), "heap sbtest1");
        assert_eq!(c("data/base/16384/16400_fsm"), "heap sbtest1 fsm");
        assert_eq!(c("data/base/16384/16407"), "index k_1");
        assert_eq!(c("data/base/16384/1259"), "catalog");
        assert_eq!(c("data/base/1/16400"), "other", "another database's file");
        assert_eq!(c("data/pg_wal/000000010000000000000001"), "pg_wal");
        assert_eq!(c("data/pg_xact/0000"), "pg_xact");
        assert_eq!(c("data/base/pgsql_tmp/pgsql_tmp123.0"), "temp");
        assert_eq!(c("data/global/pg_control"), "other");
    }

    #[test]
    fn mariadb_files_are_named_by_tablespace() {
        assert_eq!(mariadb_class("data/ib_logfile0"), "ib_logfile0");
        assert_eq!(mariadb_class("data/ibdata1"), "ibdata1");
        assert_eq!(mariadb_class("data/undo001"), "undo");
        assert_eq!(
            mariadb_class("data/ibdata1#doublewrite"),
            "ibdata1 doublewrite"
        );
        assert_eq!(mariadb_class("data/ibtmp1"), "temp");
        assert_eq!(mariadb_class("tmp/MYfd=42"), "temp");
        assert_eq!(mariadb_class("data/sbtest/sbtest1.ibd"), "sbtest1.ibd");
        assert_eq!(mariadb_class("data/mysql/innodb_table_stats.ibd"), "other");
        assert_eq!(mariadb_class("data/sbtest/sbtest1.frm"), "other");
        assert_eq!(mariadb_class("data/#rocksdb/000012.sst"), "sst");
        assert_eq!(mariadb_class("data/#rocksdb/000011.log"), "rocksdb_wal");
        assert_eq!(mariadb_class("data/#rocksdb/MANIFEST-000004"), "MANIFEST");
        assert_eq!(
            mariadb_class("data/#rocksdb/OPTIONS-000009"),
            "rocksdb_other"
        );
    }

    /// A system tablespace with the doublewrite blocks at pages 64 and 128, as a new
    /// MariaDB 10.11 data directory has them.
    #[test]
    fn ibdata1_requests_are_named_doublewrite_undo_or_system() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ibdata1");
        let mut img = vec![0u8; 6 * 16384];
        let at = 5 * 16384 + 16384 - 200 + 10;
        img[at..at + 4].copy_from_slice(&536_853_855u32.to_be_bytes());
        img[at + 4..at + 8].copy_from_slice(&64u32.to_be_bytes());
        img[at + 8..at + 12].copy_from_slice(&128u32.to_be_bytes());
        std::fs::write(&path, &img).unwrap();
        let part = system_tablespace_parts(&path).unwrap();
        let mut undo = vec![0u8; 16384];
        undo[24..26].copy_from_slice(&2u16.to_be_bytes());
        let index = vec![0u8; 16384];
        assert_eq!(part(64 * 16384, &index), "doublewrite");
        assert_eq!(part(191 * 16384, &undo), "doublewrite");
        assert_eq!(part(192 * 16384, &undo), "undo");
        assert_eq!(part(300 * 16384, &index), "system");
        assert_eq!(part(5 * 16384, &[]), "system");
        std::fs::write(&path, vec![0u8; 6 * 16384]).unwrap();
        assert!(system_tablespace_parts(&path).is_err(), "no magic");
    }
}
