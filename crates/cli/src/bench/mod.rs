//! The run layer below the commands: what a run is ([`RunSpec`], the flags in
//! [`CommonArgs`]), the engine's configuration from the flags ([`open_database`],
//! [`buffer_pool_frames`]), and one path every run takes whatever its subject, an
//! embedded design or a real server behind the [`Subject`] trait: prepare → settle →
//! warm-up → measure → report ([`run_subject`]), as sysbench runs `prepare` and then `run`
//! with a warm-up. `run`, `compare`, `fidelity` and the real-server runs go through
//! [`run_specs`] / [`run_specs_with`]; the named experiments take the same subjects
//! through their phases with [`experiment_phase`].
//!
//! # Invariants
//! 1. Loads are not measured: the counters of a run are those from [`Subject::mark`],
//!    taken after the load, the settle step and the warm-up, to the end of the measured
//!    phase.
//! 2. Counts are `after − before` and state values (dead tuples, history list length,
//!    undo pages in use) the values at the end; the engine subtracts them
//!    (`StorageSnapshot::delta`, `EngineCounters::delta`, `TableStats::delta_sum`), the
//!    servers crate for a real server (`mvcclab_servers::delta`).
//! 3. A managed server is stopped on every path, error and Ctrl-C included (its value is
//!    dropped).
//! 4. A measured phase's time series is sampled by reading cumulative counters, never
//!    resetting them, and its samples add up exactly to the phase's totals
//!    ([`sampled`], [`close`]; series.rs).
//! 5. The run layer uses only the layers below it (the result schema, the export's
//!    output flags, progress, design files), never a command.

mod args;
mod config;
mod embedded;
mod figures;
mod grid;
mod loaded;
mod phase;
mod runs;
mod series;
mod server;
mod spec;
mod subject;
mod versions;

pub use args::{
    driver_info, parse_bandwidth, parse_report_interval, sysbench_options, CommonArgs, DeviceArgs,
    ServerArgs, SERVER_HEADROOM_BYTES,
};
pub use config::{buffer_pool_frames, database_config, open_database, open_database_on, PoolSize};
pub use embedded::{phase_report_of, wait_for_purge, EmbeddedRun};
pub use figures::{blocks_per_txn_by_cause, engine_report, io_report};
pub use grid::{
    parse_shard, point_label, point_path, run_shard, shard_dir, write_atomically, Grid,
    PointResult, PointSpec, Shard,
};
pub use loaded::{can_load_once, load_once, run_from_load, Loaded};
pub use phase::{Mark, PhaseDelta};
pub use runs::{
    bandwidth_list, run_spec, run_specs, run_specs_sharded, run_specs_with, run_specs_with_loads,
    spec_grid,
};
pub use series::{close, sampled, CounterReading, Reading};
pub use server::ServerRun;
pub use spec::{
    apply_fillfactor, check_common, fuse_device, fuse_device_of, resolve_spec, RunSpec,
};
pub use subject::{
    experiment_phase, measure, run_loaded, run_subject, warm_up, warmup_options, Subject,
};
pub use versions::{version_notes, version_switches};
