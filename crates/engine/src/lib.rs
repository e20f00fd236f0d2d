//! mvcclab's storage engine.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod error;
pub mod stats;

pub use error::{Error, Result};
pub mod page;
pub mod wal;
