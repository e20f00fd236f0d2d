//! mvcclab's virtual NVMe device as a FUSE file system, so that real servers run on the
//! same device model as the presets (throttle, latency, transparent compression, exact
//! counting in 4 KiB blocks and requests), with every request attributed to its file and
//! to the process that made it.
//!
//! Layers, from the bottom: [`SparseBacking`] (the bytes, in memory or in a directory),
//! the engine's `Nvme` (counting and compression) and `Throttle`, [`DevFs`] (the directory
//! tree and the FUSE operations; `fs` module doc), [`DevMount`] (the mount, its checks and
//! its unmount; `mount` module doc), and the counts per file, per process and per second
//! ([`DeviceCounts`]), and, when asked, per InnoDB index (`innodb_pages` module doc).
//!
//! The mount needs `/dev/fuse`, `fusermount3` (Debian `fuse3`, for `auto_unmount`) and
//! root (for `allow_other`); [`check_fuse`] says what is missing.

mod backing;
mod counts;
mod fs;
mod innodb_pages;
mod mount;

pub use backing::SparseBacking;
pub use counts::{
    process_kind, BlockIo, BlockMap, DeviceCounts, FileIo, PartFn, Request, SecondIo,
};
pub use fs::DevFs;
pub use innodb_pages::{page_images, PageImage, PageIo, INNODB_PAGE_BYTES};
pub use mount::{check_fuse, fusermount3, is_mounted, DevMount, DeviceConfig, MountError};
