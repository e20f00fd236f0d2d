//! mvcclab's workloads: sysbench 1.0.20's OLTP scripts as streams of typed operations
//! ([`sysbench`]), its random numbers ([`rand`]), and the driver that runs them against a
//! target ([`driver`]); the embedded target ([`embedded`]) runs them on mvcclab's engine,
//! its errors in the dialect of the engine a design models ([`engine_error`]);
//! [`fault`] wraps a target to fail on purpose (tests of the driver's error handling).
//! TPC-C as Percona-Lab/sysbench-tpcc runs it: [`tpcc`] (schema, the transaction mix),
//! [`tpcc_load`] (the loader's rows and value generators, for any target),
//! [`tpcc_embedded`] (load, transactions and consistency checks on the engine) and
//! [`tpcc_sql`] (the script's DDL, statements and checks as SQL text for the real servers).
//! TPC-H: [`tpch`] (schema, `tpchgen` rows, the 22 queries with validation
//! parameters in both dialects), [`tpch_embedded`] (load, and Q1, Q6, Q18 on a preset as
//! its real engine's plan), [`tpch_plans`] (the real engines' EXPLAIN JSON and plan
//! shapes).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cpu;
pub mod driver;
pub mod embedded;
pub mod engine_error;
pub mod fault;
pub mod rand;
pub mod sql;
pub mod sysbench;
pub mod tpcc;
pub mod tpcc_embedded;
pub mod tpcc_load;
pub mod tpcc_sql;
pub mod tpch;
pub mod tpch_embedded;
pub mod tpch_plans;

/// sysbench's `rand_unique_permute` (public domain RandomSequence by Jeff Preshing): a
/// permutation of u32, used for unique insert ids.
pub fn unique_permute(x: u32) -> u32 {
    const PRIME: u32 = 4_294_967_291;
    if x >= PRIME {
        return x;
    }
    let residue = ((x as u64 * x as u64) % PRIME as u64) as u32;
    if x <= PRIME / 2 {
        residue
    } else {
        PRIME - residue
    }
}

#[cfg(test)]
mod driver_errors_tests;
#[cfg(test)]
mod tests;
