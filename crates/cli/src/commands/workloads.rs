//! `mvcclab workloads`: every sysbench workload with the statements one event (transaction)
//! runs at the default options, counted from the workload's own generator, and the
//! options it reads.

use anyhow::Result;
use mvcclab_workload::sysbench::{Generator, SysbenchOptions, WorkloadKind};
use std::collections::BTreeMap;

/// The options each workload reads (besides --tables, --table-size and --rand-*), as in
/// the sysbench 1.0.20 scripts.
fn options_of(kind: WorkloadKind) -> &'static str {
    use WorkloadKind::*;
    match kind {
        OltpPointSelect => "--point-selects (as 1 per event), --skip-trx (always on)",
        OltpReadOnly => {
            "--point-selects --simple-ranges --sum-ranges --order-ranges --distinct-ranges --range-size --range-selects --skip-trx"
        }
        OltpReadWrite => {
            "--point-selects --simple-ranges --sum-ranges --order-ranges --distinct-ranges --range-size --range-selects --index-updates --non-index-updates --delete-inserts --skip-trx"
        }
        OltpWriteOnly => "--index-updates --non-index-updates --delete-inserts --skip-trx",
        OltpUpdateIndex | OltpUpdateNonIndex | OltpInsert | OltpDelete => {
            "autocommit, one statement per event"
        }
        SelectRandomPoints => "--random-points",
        SelectRandomRanges => "--number-of-ranges --delta",
        Tpcc => "--tables (table sets) --scale (warehouses) --use-fk; one TPC-C transaction per event (43.5 % new_order, 43.5 % payment, 4.3 % each order_status, delivery, stock_level)",
    }
}

/// The statements of one event of `kind` at the default options: (kind, count).
pub fn event_mix(kind: WorkloadKind) -> BTreeMap<String, usize> {
    let mut g = Generator::new(kind, SysbenchOptions::default(), 1, 0, 1);
    let mut mix = BTreeMap::new();
    for op in g.next_event() {
        *mix.entry(op.kind().to_string()).or_default() += 1;
    }
    mix
}

/// Prints the table of workloads (Markdown).
pub fn run() -> Result<()> {
    let d = SysbenchOptions::default();
    let mut out = String::from(
        "| workload | statements per event at the defaults | options it reads |\n|---|---|---|\n",
    );
    for &(kind, name) in WorkloadKind::ALL {
        let mix: Vec<String> = event_mix(kind)
            .iter()
            .map(|(k, n)| format!("{n} × {k}"))
            .collect();
        out += &format!("| {name} | {} | {} |\n", mix.join(", "), options_of(kind));
    }
    out += "| tpch | one TPC-H query (`mvcclab run` only; Q1, Q6, Q18 on the presets, all 22 on real servers) | --query --scale-factor --query-timeout --q18-quantity |\n";
    out += &format!(
        "\nDefaults (sysbench 1.0.20): --tables {} --table-size {} --range-size {} --point-selects {} --simple-ranges {} --sum-ranges {} --order-ranges {} --distinct-ranges {} --index-updates {} --non-index-updates {} --delete-inserts {} --random-points {} --number-of-ranges {} --delta {} --rand-type {}.\n\
         `mvcclab run` and `compare` default to --table-size 100000 (a quarter of it fits the default 8MiB buffer pool).\n",
        d.tables,
        d.table_size,
        d.range_size,
        d.point_selects,
        d.simple_ranges,
        d.sum_ranges,
        d.order_ranges,
        d.distinct_ranges,
        d.index_updates,
        d.non_index_updates,
        d.delete_inserts,
        d.random_points,
        d.number_of_ranges,
        d.delta,
        d.rand.rand_type,
    );
    print!("{out}");
    Ok(())
}
