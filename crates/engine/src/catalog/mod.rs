//! Catalog (being written).
