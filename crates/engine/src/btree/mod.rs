//! B+tree (being written).
