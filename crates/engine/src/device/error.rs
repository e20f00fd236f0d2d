//! The device layer's errors: what a device file operation can fail with. The engine's
//! [`crate::Error`] wraps them (through [`crate::error::StorageError::Device`]); the device knows nothing of
//! pages, transactions or the catalog, so none of their errors are here.

/// Result alias of the device layer.
pub type DeviceResult<T, E = DeviceError> = std::result::Result<T, E>;

/// Every error a device file operation returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The backing store failed: `op` is the operation (`read`, `write`, `sync`, ...) and
    /// `file` the device file id (hex, as in the file device's file names).
    #[error("I/O error during {op} of device file {file:#010x}: {source}")]
    Io {
        /// Operation that failed.
        op: &'static str,
        /// Device file id.
        file: u32,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A read asked for bytes past the end of a device file.
    #[error("read of {len_bytes} bytes at offset {offset_bytes} is past the end of device file {file:#010x} ({file_len_bytes} bytes)")]
    ReadPastEof {
        /// Device file id.
        file: u32,
        /// Offset of the request in bytes.
        offset_bytes: u64,
        /// Length of the request in bytes.
        len_bytes: usize,
        /// Current length of the file in bytes.
        file_len_bytes: u64,
    },
    /// A device file that does not exist was addressed.
    #[error("device file {file:#010x} does not exist")]
    NoSuchFile {
        /// Device file id.
        file: u32,
    },
    /// A request for a file opened with O_DIRECT was not aligned to 512 bytes.
    #[error("O_DIRECT request on device file {file:#010x} is not 512-byte aligned (offset {offset_bytes}, length {len_bytes}); direct I/O needs sector-aligned offsets and lengths")]
    Unaligned {
        /// Device file id.
        file: u32,
        /// Offset of the request in bytes.
        offset_bytes: u64,
        /// Length of the request in bytes.
        len_bytes: usize,
    },
    /// A device setting is out of range (throttle, compression, crash simulation); the
    /// message names the setting.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
}

impl DeviceError {
    /// Wraps an `std::io::Error` from operation `op` on device file `file`.
    pub fn io(op: &'static str, file: u32, source: std::io::Error) -> Self {
        DeviceError::Io { op, file, source }
    }
}
