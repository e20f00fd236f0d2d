//! What both targets share: sysbench's load (oltp_common.lua `create_table`), dropping the OS
//! page cache (the whole machine's; one managed server's files: managed.rs `PageCacheScope`), and a managed server's loop-device counters.

use crate::error::ServerError;
use crate::managed;
use crate::server::Snapshot;

/// Drops the OS page cache: `sync`, then `3` into `/proc/sys/vm/drop_caches`.
///
/// Errors: [`ServerError::Io`] naming the file when it is not writable (not root, or a
/// read-only /proc in a container).
pub fn drop_os_page_cache() -> Result<(), ServerError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        ServerError::io(
            "--drop-caches: writing /proc/sys/vm/drop_caches (needs root)",
            e,
        )
    })
}

/// Device counters of a managed server's loop device, after syncing its file system, as
/// `device.*` snapshot entries (sectors are 512 bytes).
pub(crate) fn device_snapshot(
    m: Option<&managed::ManagedServer>,
    out: &mut Snapshot,
) -> Result<(), ServerError> {
    if let Some(l) = m.and_then(|m| m.loop_device()) {
        l.sync()?;
        let s = l.stat()?;
        out.insert("device.read_ios".into(), s.read_ios as f64);
        out.insert("device.read_sectors".into(), s.read_sectors as f64);
        out.insert("device.write_ios".into(), s.write_ios as f64);
        out.insert("device.write_sectors".into(), s.write_sectors as f64);
        out.insert("device.flush_ios".into(), s.flush_ios as f64);
    }
    Ok(())
}

/// Rows per multi-row INSERT of the load.
const LOAD_BATCH_ROWS: u32 = 1000;

/// The TPC-C tables of `opts.tables` sets (`warehouse1`, …, `item1`, `warehouse2`, …).
pub(crate) fn tpcc_tables(opts: &mvcclab_workload::sysbench::SysbenchOptions) -> Vec<String> {
    (1..=opts.tables)
        .flat_map(|n| {
            mvcclab_workload::tpcc::table_defs(n, false)
                .into_iter()
                .map(|d| d.name)
        })
        .collect()
}

/// Loads sysbench's tables as oltp_common.lua's `create_table` does: for each table, drop
/// it if present, create it, run the statements `after_create(n)` returns (PostgreSQL's
/// fill factor), insert `opts.prepare_rows(kind)` rows (the embedded load's
/// rows: same generator, same seed) in multi-row INSERTs, create the `k` index, then run
/// the statements `after(n)` returns, in order (the engine's statistics statements). `exec`
/// runs one statement.
///
/// Errors: the first failing statement's [`ServerError`], as text.
pub(crate) fn load_sbtest(
    d: mvcclab_workload::sql::Dialect,
    kind: mvcclab_workload::sysbench::WorkloadKind,
    opts: &mvcclab_workload::sysbench::SysbenchOptions,
    seed: u64,
    exec: &dyn Fn(&str) -> Result<(), ServerError>,
    after_create: &dyn Fn(u32) -> Vec<String>,
    after: &dyn Fn(u32) -> Vec<String>,
) -> Result<(), String> {
    use mvcclab_workload::sql;
    let rows = opts.prepare_rows(kind);
    let run = |q: &str| exec(q).map_err(|e| e.to_string());
    for n in 1..=opts.tables {
        run(&format!("DROP TABLE IF EXISTS sbtest{n}"))?;
        run(&sql::create_table(d, n, opts.auto_inc))?;
        for q in after_create(n) {
            run(&q)?;
        }
        let mut rng = mvcclab_workload::rand::SbRand::new(seed, 0x10000 + n, opts.rand.clone());
        let mut id = 1;
        while id <= rows {
            let last = (id + LOAD_BATCH_ROWS - 1).min(rows);
            let batch: Vec<_> = (id..=last)
                .map(|i| mvcclab_workload::sysbench::load_row(&mut rng, opts, i))
                .collect();
            run(&sql::bulk_insert(n, opts.auto_inc, &batch))?;
            id = last + 1;
        }
        run(&sql::create_secondary_index(n))?;
        for q in after(n) {
            run(&q)?;
        }
    }
    Ok(())
}

/// The `device_io` sentence of a report.
pub(crate) fn device_io_text(m: Option<&managed::ManagedServer>) -> String {
    match m.and_then(|m| m.loop_device()) {
        Some(l) => format!(
            "exact: {} (ext4, own loop device), /sys/block stat counters; the file system is synced before each reading",
            l.device().display()
        ),
        None => "not measured: engine counters only (run as root with --exact-device-io for a loop device of the server's own)".into(),
    }
}
