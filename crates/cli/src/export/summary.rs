//! The rows the terminal table and the Markdown summary share: the labels of the runs,
//! the heading, and one row per figure, with `n/m` for a figure a real server does not
//! measure; and the cells and server versions of the fidelity views.

use crate::result::{FidelityReport, FidelityRow, Report, RunReport};
use mvcclab_engine::stats::Cause;
use std::collections::BTreeMap;

/// A short label of a run: the design name, with the bandwidth when one was set.
pub fn run_label(r: &RunReport) -> String {
    label(&r.design.name, r.device.bandwidth_mib_s)
}

/// The label of a design run at a bandwidth (`postgres @ 250 MiB/s`, or just the name).
pub fn label(design: &str, bandwidth_mib_s: Option<f64>) -> String {
    match bandwidth_mib_s {
        Some(b) => format!("{design} @ {b} MiB/s"),
        None => design.to_string(),
    }
}

/// Rows of the side-by-side summary: (label, one value per run).
pub fn summary_rows(runs: &[RunReport]) -> Vec<(String, Vec<String>)> {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: &str, f: &dyn Fn(&RunReport) -> String| {
        rows.push((name.to_string(), runs.iter().map(f).collect()))
    };
    let txns = |r: &RunReport| r.results.transactions.max(1) as f64;
    // A figure a real server does not count shows as "n/m", never as 0.
    let m = |r: &RunReport, path: &str, f: &dyn Fn(&RunReport) -> String| {
        if r.measured(path) {
            f(r)
        } else {
            "n/m".to_string()
        }
    };
    add("transactions", &|r| r.results.transactions.to_string());
    add("tps", &|r| format!("{:.1}", r.results.tps));
    add("qps", &|r| format!("{:.1}", r.results.qps));
    add("errors", &|r| r.results.errors.to_string());
    for (label, q) in [("p50", 0), ("p95", 1), ("p99", 2)] {
        add(&format!("txn latency {label} (ms)"), &|r| {
            r.results.latency.get("event").map_or("-".into(), |l| {
                format!("{:.3}", [l.p50_ms, l.p95_ms, l.p99_ms][q])
            })
        });
    }
    add("4 KiB blocks read / txn", &|r| {
        m(r, "io.total.read_blocks_4k", &|r| {
            format!("{:.2}", r.io.total.read_blocks_4k as f64 / txns(r))
        })
    });
    add("4 KiB blocks written / txn", &|r| {
        m(r, "io.total.write_blocks_4k", &|r| {
            format!("{:.2}", r.io.total.write_blocks_4k as f64 / txns(r))
        })
    });
    add("device requests / txn", &|r| {
        m(r, "io.total.read_requests", &|r| {
            format!(
                "{:.2}",
                (r.io.total.read_requests + r.io.total.write_requests) as f64 / txns(r)
            )
        })
    });
    add("device syncs / txn", &|r| {
        m(r, "io.total.syncs", &|r| {
            format!("{:.2}", r.io.total.syncs as f64 / txns(r))
        })
    });
    add("pool misses / txn (pages)", &|r| {
        format!("{:.2}", r.io.total.buffer_misses as f64 / txns(r))
    });
    add("pool pages written / txn", &|r| {
        format!("{:.2}", r.io.total.buffer_pages_written as f64 / txns(r))
    });
    add("WAL/redo bytes / txn", &|r| {
        format!("{:.0}", r.io.total.wal_bytes as f64 / txns(r))
    });
    add("full-page images / txn", &|r| {
        format!("{:.3}", r.io.total.wal_fpi as f64 / txns(r))
    });
    add("doublewrite pages / txn", &|r| {
        format!("{:.3}", r.io.total.doublewrite_pages as f64 / txns(r))
    });
    // InnoDB's page cleaner (innodb_metrics buffer_LRU_batch_*): "-" for a pool without
    // its free-page target.
    add(
        "LRU batch: pages looked at, written, evicted / batch",
        &|r| {
            m(r, "io.total.buffer_lru_batches", &|r| {
                let t = &r.io.total;
                if t.buffer_lru_batches == 0 {
                    return "-".into();
                }
                let b = t.buffer_lru_batches as f64;
                format!(
                    "{:.0}, {:.0}, {:.0}",
                    t.buffer_lru_batch_scanned as f64 / b,
                    t.buffer_lru_batch_pages_written as f64 / b,
                    t.buffer_lru_batch_evicted as f64 / b
                )
            })
        },
    );
    add("old pages made young, not / txn", &|r| {
        m(r, "io.total.buffer_pages_made_young", &|r| {
            let t = &r.io.total;
            if t.buffer_pages_made_young + t.buffer_pages_made_not_young == 0 {
                return "-".into();
            }
            format!(
                "{:.3}, {:.3}",
                t.buffer_pages_made_young as f64 / txns(r),
                t.buffer_pages_made_not_young as f64 / txns(r)
            )
        })
    });
    add("buffer hit ratio", &|r| {
        format!("{:.4}", r.engine.buffer_hit_ratio)
    });
    add("HOT updates / updates", &|r| {
        format!(
            "{}/{}",
            r.engine.hot_updates,
            r.engine.hot_updates + r.engine.non_hot_updates
        )
    });
    add("index entries inserted", &|r| {
        m(r, "engine.index_entries_inserted", &|r| {
            r.engine.index_entries_inserted.to_string()
        })
    });
    add("versions traversed / read", &|r| {
        m(r, "engine.versions_traversed_per_read", &|r| {
            format!("{:.2}", r.engine.versions_traversed_per_read)
        })
    });
    add("dead tuples (end)", &|r| {
        m(r, "engine.dead_tuples", &|r| {
            r.engine.dead_tuples.to_string()
        })
    });
    add("history list length (end, peak)", &|r| {
        m(r, "engine.history_list_length", &|r| {
            format!(
                "{}, {}",
                r.engine.history_list_length,
                if r.measured("engine.history_list_length_peak") {
                    r.engine.history_list_length_peak.to_string()
                } else {
                    "n/m".into()
                }
            )
        })
    });
    add(
        "B-tree splits, merges (attempts), reorganizations / txn",
        &|r| {
            m(r, "engine.undo.index_page_splits", &|r| {
                let u = &r.engine.undo;
                format!(
                    "{:.3}, {:.3} ({:.3}), {:.3}",
                    u.index_page_splits as f64 / txns(r),
                    u.index_page_merge_successful as f64 / txns(r),
                    u.index_page_merge_attempts as f64 / txns(r),
                    u.index_page_reorg_attempts as f64 / txns(r)
                )
            })
        },
    );
    add("B-tree splits at the insert point / txn", &|r| {
        m(r, "engine.undo.index_page_splits_at_insert_point", &|r| {
            format!(
                "{:.3}",
                r.engine.undo.index_page_splits_at_insert_point as f64 / txns(r)
            )
        })
    });
    add("pages (table, indexes, undo)", &|r| {
        format!(
            "{}, {}, {}",
            r.space.table_pages, r.space.index_pages, r.space.undo_pages
        )
    });
    for c in causes_with_blocks(runs) {
        add(&format!("blocks r/w / txn: {c}"), &|r| {
            let b = r.io.per_txn_by_cause.get(&c).cloned().unwrap_or_default();
            format!("{:.2}/{:.2}", b.read_blocks_4k, b.write_blocks_4k)
        });
    }
    for name in wal_record_types_shown(runs) {
        add(&format!("WAL bytes / txn: {name}"), &|r| {
            if r.engine.wal_by_record.is_empty() {
                return "n/m".into();
            }
            let c = r
                .engine
                .wal_by_record
                .get(&name)
                .copied()
                .unwrap_or_default();
            format!("{:.1}", (c.record_bytes + c.fpi_bytes) as f64 / txns(r))
        });
    }
    rows
}

/// WAL record types that carry at least 1 % of some run's WAL bytes of the phase, the
/// largest first (by their largest share in any run).
pub fn wal_record_types_shown(runs: &[RunReport]) -> Vec<String> {
    let mut share: BTreeMap<String, f64> = BTreeMap::new();
    for r in runs {
        let total: u64 = r
            .engine
            .wal_by_record
            .values()
            .map(|c| c.record_bytes + c.fpi_bytes)
            .sum();
        for (name, c) in &r.engine.wal_by_record {
            let s = (c.record_bytes + c.fpi_bytes) as f64 / total.max(1) as f64;
            let e = share.entry(name.clone()).or_insert(0.0);
            *e = e.max(s);
        }
    }
    let mut names: Vec<(String, f64)> = share.into_iter().filter(|(_, s)| *s >= 0.01).collect();
    names.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    names.into_iter().map(|(n, _)| n).collect()
}

/// Causes that moved at least one 4 KiB block in some run, in declaration order.
pub fn causes_with_blocks(runs: &[RunReport]) -> Vec<Cause> {
    let mut causes: Vec<Cause> = runs
        .iter()
        .flat_map(|r| {
            r.io.by_cause
                .iter()
                .filter(|(_, c)| c.read_blocks_4k + c.write_blocks_4k > 0)
                .map(|(k, _)| *k)
        })
        .collect();
    causes.sort();
    causes.dedup();
    causes
}

/// The heading of the table and summary views: workload, size, threads, measured time.
pub(crate) fn heading(runs: &[RunReport]) -> String {
    let r = &runs[0];
    format!(
        "workload {} ({} rows × {} tables, {} threads, {:.0} s measured{})",
        r.workload.name,
        r.workload.options.table_size,
        r.workload.options.tables,
        r.driver.threads,
        r.results.elapsed_s,
        if runs.iter().any(|r| r.results.interrupted) {
            ", INTERRUPTED by Ctrl-C"
        } else {
            ""
        }
    )
}

/// A fidelity value as the table and Markdown views show it.
pub(crate) fn fidelity_value(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// A fidelity ratio as the table and Markdown views show it (`both 0`, `both ≈ 0`, `real 0`,
/// a `!` outside 0.8–1.25); a row of several pairs (`--repeats`) as its median with the
/// pairs' range, `1.13 [1.08–1.25]`.
pub fn ratio_text(r: &FidelityRow) -> String {
    let flag = if r.outside { " !" } else { "" };
    let range = match (r.repeats > 1, r.ratio_min, r.ratio_max) {
        (true, Some(lo), Some(hi)) => format!(" [{lo:.2}–{hi:.2}]"),
        _ => String::new(),
    };
    match r.ratio {
        _ if r.equal_zero && (r.preset_value != 0.0 || r.real_value != 0.0) => "both ≈ 0".into(),
        _ if r.equal_zero => "both 0".into(),
        Some(x) => format!("{x:.2}{range}{flag}"),
        None => format!("real 0{flag}"),
    }
}

/// The scale grid of a `mvcclab fidelity --scales` report: the scale names as column
/// labels, and one row per workload, pair and figure (in the order they first appear)
/// with its ratio at each scale ([`ratio_text`], `-` where that scale has no such row).
pub fn fidelity_grid(f: &FidelityReport) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let labels: Vec<String> = f.scales.iter().map(|s| s.name.clone()).collect();
    let key =
        |r: &FidelityRow| format!("{} · {} vs {} · {}", r.workload, r.preset, r.real, r.metric);
    let mut keys: Vec<String> = Vec::new();
    for r in &f.rows {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let rows = keys
        .into_iter()
        .map(|k| {
            let cells = labels
                .iter()
                .map(|scale| {
                    f.rows
                        .iter()
                        .find(|r| r.scale.as_deref() == Some(scale.as_str()) && key(r) == k)
                        .map_or_else(|| "-".to_string(), ratio_text)
                })
                .collect();
            (k, cells)
        })
        .collect();
    (labels, rows)
}

/// The real servers that ran, one `target: version` per distinct pair in run order, from
/// each run's `server.version`: the figures per transaction differ between server versions
/// (MariaDB 10.11.14 against 10.11.19, docs/fidelity.md), so every view names them.
pub fn server_versions(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in &report.runs {
        if let Some(s) = &r.server {
            let line = format!("{} {}", r.design.name, s.version);
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}
