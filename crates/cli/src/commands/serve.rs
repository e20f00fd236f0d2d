//! `mvcclab serve`: a design behind PostgreSQL's wire protocol (crate `mvcclab-wire`), for
//! real clients — psql, sysbench's pgsql driver, pgbench.

use crate::bench::{open_database, DeviceArgs};
use crate::design_arg::resolve_design;
use crate::UsageError;
use anyhow::{Context, Result};
use clap::Args;
use mvcclab_wire::{serve, Catalog, ConnectionModel};
use std::io::Write;
use std::sync::Arc;

/// Flags of `mvcclab serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Design: a preset (postgres, innodb) or a design file.
    #[arg(long, default_value = "postgres")]
    pub design: String,
    /// Change a switch of the design (SWITCH=VALUE).
    #[arg(long = "set", value_name = "SWITCH=VALUE")]
    pub set: Vec<String>,
    /// TCP port on 127.0.0.1 (0: a free port; the address is printed on start).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// How connections map onto threads: thread-per-connection, pool (one worker per
    /// CPU, MariaDB's default thread_pool_size) or pool:N.
    #[arg(long, default_value = "thread-per-connection", value_parser = |s: &str| s.parse::<ConnectionModel>())]
    pub connection_model: ConnectionModel,
    /// Memory and device.
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Opens the design, listens, prints `listening on 127.0.0.1:PORT` and serves until
/// SIGINT or SIGTERM.
///
/// Errors: a bad design or flag ([`UsageError`], exit 2); the port cannot be bound or the
/// database cannot be opened (exit 1).
pub fn run(a: ServeArgs) -> Result<()> {
    let design = resolve_design(&a.design, &a.set)?;
    if a.device.bandwidth.len() > 1 {
        return Err(UsageError("--bandwidth: serve takes one value".into()).into());
    }
    let bandwidth = a.device.bandwidth.first().copied();
    let (db, _, _) = open_database(&design, &a.device, bandwidth)?;
    let catalog = Arc::new(Catalog::new(db, design.name.clone()));
    let server = serve(catalog, a.port, a.connection_model)
        .with_context(|| format!("binding 127.0.0.1:{}", a.port))?;
    let mut out = std::io::stdout();
    writeln!(
        out,
        "listening on {} (design {}, {:?})",
        server.local_addr(),
        design.name,
        a.connection_model
    )?;
    out.flush()?;
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let _ = signals.forever().next();
    server.stop();
    Ok(())
}
