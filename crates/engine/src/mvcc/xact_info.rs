//! The `info` codes of the transaction resource manager's WAL records ([`crate::wal::rmgr::XACT`];
//! PostgreSQL xact.h `XLOG_XACT_*`): the commit and abort records every design's
//! transaction writes (innodb: the abort record only) and recovery reads.

/// XLOG_XACT_COMMIT: main data = commit timestamp (µs, i64).
pub const COMMIT: u8 = 0x00;
/// XLOG_XACT_ABORT: main data = abort timestamp (µs, i64).
pub const ABORT: u8 = 0x20;
