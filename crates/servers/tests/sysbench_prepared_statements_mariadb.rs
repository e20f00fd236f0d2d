//! sysbench's oltp_read_write on real MariaDB with more prepared statements per
//! connection than the `mysql` crate caches (32 by default): 5 tables × 9 statements.
//! sysbench keeps every statement prepared for the connection's life (oltp_common.lua
//! `prepare_statements`), so no event may fail; before the driver's connections turned the
//! crate's cache off, the cache closed the least recently used statement on the server and
//! its next execution failed with ER_UNKNOWN_STMT_HANDLER 1243 (docs/fidelity.md, scale
//! grid, `sweep`).
//!
//! The server is a managed one (127.0.0.1, a free port, its own folder, stopped by its pid
//! when the target is dropped, also when an assertion fails). Needs MariaDB installed
//! (README Set-up).

use mvcclab_servers::managed::ManagedOptions;
use mvcclab_servers::{open, ServerKind, ServerOptions};
use mvcclab_workload::driver::{run, RunControl, RunOptions};
use mvcclab_workload::sysbench::{SysbenchOptions, WorkloadKind};

#[test]
fn oltp_read_write_on_five_tables_keeps_every_statement_prepared() {
    let s = open(
        ServerKind::MariaDb,
        &ServerOptions {
            url: None,
            managed: ManagedOptions {
                buffer_pool_bytes: 16 << 20,
                ..Default::default()
            },
            fillfactor: None,
        },
    )
    .unwrap_or_else(|e| panic!("starting MariaDB (README Set-up): {e}"));
    let o = SysbenchOptions {
        tables: 5,
        table_size: 300,
        ..Default::default()
    };
    s.as_target()
        .prepare(WorkloadKind::OltpReadWrite, &o, 1)
        .unwrap_or_else(|e| panic!("prepare: {e}"));
    let events = 60;
    let r = run(
        s.as_target(),
        WorkloadKind::OltpReadWrite,
        &o,
        &RunOptions {
            threads: 1,
            time_s: 0.0,
            events,
            rand_seed: 3,
            rate_tps: 0.0,
            ignore_errors: Default::default(),
        },
        &RunControl::default(),
    )
    .unwrap();
    // One thread: no lock conflicts, so every event commits.
    assert_eq!(r.errors, 0, "{:?}", r.error_samples);
    assert_eq!(r.transactions, events);
    assert_eq!(r.ops_by_kind["point_select"], 10 * events);
    assert_eq!(r.ops_by_kind["simple_range"], events);
    assert_eq!(r.ops_by_kind["insert"], events);
}
