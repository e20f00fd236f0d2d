//! mvcclab's storage engine: the storage foundation (virtual NVMe device with exact I/O
//! accounting, OS page cache emulation, page store, buffer pool, WAL, checkpoints) on which
//! the MVCC designs are built.
//!
//! Start at [`storage::Storage`]; every count is in [`stats`], attributed to a
//! [`stats::Cause`]. docs/sourcetree.md maps the folders; docs/glossary.md the terms.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod access;
pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod clustered;
pub mod db;
pub mod design;
pub mod device;
pub mod error;
pub mod heap;
pub mod mvcc;
pub mod page;
pub mod recovery;
pub mod stats;
pub mod stop;
pub mod storage;
pub mod testkit;
pub mod wal;

pub use error::{Error, Result};
pub use storage::{Storage, StorageConfig, StorageSnapshot};
