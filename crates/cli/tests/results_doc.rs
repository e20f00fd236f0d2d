//! docs/results.md lists every field a report holds.

use std::process::Command;

/// Dotted paths of every leaf, with map keys that vary (causes, metrics, operation kinds,
/// WAL record types) replaced by the placeholders the page uses; the concrete names are
/// returned beside.
fn paths(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, Option<String>)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let (seg, name) = match prefix {
                    p if p.ends_with(".io.by_cause")
                        || p.ends_with(".io.per_txn_by_cause")
                        || p.ends_with(".timeseries[].blocks_by_cause") =>
                    {
                        ("<cause>".to_string(), Some(k.clone()))
                    }
                    p if p.ends_with(".timeseries[].server_counters") => ("<name>".into(), None),
                    p if p.ends_with(".cpu_seconds.server_s") => ("<kind>".into(), None),
                    p if p.ends_with(".space.pages_by_table")
                        || p.ends_with(".space.after_load.pages_by_table") =>
                    {
                        ("<table>".into(), None)
                    }
                    p if p.ends_with(".timeseries[].device_blocks") => ("<key>".into(), None),
                    p if p.ends_with(".io.per_op") => ("<op>".into(), Some(k.clone())),
                    p if p.ends_with(".space.pages_by_table")
                        || p.ends_with(".engine.buffer_cache") =>
                    {
                        ("<state>".into(), None)
                    }
                    p if p.ends_with(".engine.wal_by_record") => {
                        ("<record_type>".into(), Some(k.clone()))
                    }
                    p if p.ends_with(".results.latency")
                        || p.ends_with(".results.ops_by_kind")
                        || p.ends_with(".results.errors_by_kind") =>
                    {
                        ("<kind>".into(), Some(k.clone()))
                    }
                    p if p.ends_with(".io.total")
                        || p.ends_with(".io.per_txn")
                        || p.ends_with(".io.by_cause.<cause>") =>
                    {
                        ("<metric>".into(), Some(k.clone()))
                    }
                    _ => (k.clone(), None),
                };
                let path = if prefix.is_empty() {
                    seg
                } else {
                    format!("{prefix}.{seg}")
                };
                if path == "runs[].storage_config" {
                    out.push((path, None));
                    continue;
                }
                if let Some(n) = &name {
                    out.push((String::new(), Some(n.clone())));
                }
                paths(&path, x, out);
            }
        }
        serde_json::Value::Array(a) => {
            let path = format!("{prefix}[]");
            if a.is_empty() {
                out.push((path.clone(), None));
            }
            for x in a {
                if x.is_object() {
                    paths(&path, x, out);
                } else {
                    out.push((path.clone(), None));
                }
            }
        }
        _ => out.push((prefix.to_string(), None)),
    }
}

#[test]
fn every_field_of_a_report_is_documented_in_docs_results_md() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results.md"
    ))
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args([
            "compare",
            "--quiet",
            "--format",
            "json",
            "--table-size",
            "500",
            "--events",
            "80",
            "--time",
            "0",
            // A short paced warm-up, so that `driver.warmup_rate_tps` and
            // `results.warmup` are in the report.
            "--warmup",
            "0.3",
            "--warmup-rate",
            "50",
            "--bandwidth",
            // Two values: the designs are loaded once, so `loads[]` is in the report too.
            "4000,8000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut all = Vec::new();
    paths("", &v, &mut all);
    assert!(all.len() > 100);
    let mut missing = Vec::new();
    for (path, name) in all {
        if !path.is_empty() && !doc.contains(&format!("`{path}`")) {
            missing.push(path);
        }
        if let Some(n) = name {
            if !doc.contains(&format!("`{n}`")) {
                missing.push(n);
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "not in docs/results.md: {missing:?}");
}
