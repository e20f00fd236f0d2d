//! The subcommands, one file (or folder) each, on top of the run layer
//! ([`crate::bench`]) and the export ([`crate::export`]): each parses its flags, builds
//! what it runs, calls the layer below, and writes the result.

pub mod bandwidth_sweep;
pub mod connection_storm;
pub mod crashtest;
pub mod designs;
pub mod device;
pub mod experiment_common;
pub mod experiment_sysver;
pub mod experiments;
pub mod fidelity;
pub mod fillfactor_compression;
pub mod report;
pub mod run;
pub mod serve;
pub mod storage_bench;
pub mod tpch_q18;
pub mod workloads;
