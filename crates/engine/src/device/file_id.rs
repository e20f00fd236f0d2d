//! The number of a file on the device: what every layer above names a relation, the WAL's
//! segments and the control file by (PostgreSQL's relfilenode; InnoDB's space id). Kept in a
//! file of its own, importing nothing, so that the page identity and the engine's error
//! type can name it without depending on the device.

/// A file on the device, numbered (the file device names it `f{id:08x}`).
pub type FileId = u32;
