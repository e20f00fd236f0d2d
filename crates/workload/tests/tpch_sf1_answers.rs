//! TPC-H Q18 at SF 1 on both presets against the answer set `tpchgen` ships (TPC's
//! `answers/q18.out`: 57 rows with the validation quantity 300). Ignored: loading 8.7
//! million rows takes a long while; run once with
//! `cargo test --release -p mvcclab-workload --test tpch_sf1_answers -- --ignored`.

use mvcclab_engine::db::{Database, DatabaseConfig};
use mvcclab_engine::design::DesignConfig;
use mvcclab_workload::tpch::QueryParams;
use mvcclab_workload::tpch_embedded;

/// The answer set's rows, fields trimmed (the file pads them to fixed widths).
fn answer_rows() -> Vec<Vec<String>> {
    tpchgen::q_and_a::answers_sf1::answer(18)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .skip(1)
        .map(|l| l.split('|').map(|f| f.trim().to_string()).collect())
        .collect()
}

#[test]
#[ignore = "loads SF 1 (8.7 million rows) into each preset"]
fn q18_at_sf1_returns_the_57_rows_of_the_answer_set_on_both_presets() {
    let expected = answer_rows();
    assert_eq!(expected.len(), 57);
    // The two presets are independent databases: each loads and queries on a thread of
    // its own (on this 2-core machine, half the wall time of one after the other).
    let results: Vec<(String, Vec<Vec<String>>)> = std::thread::scope(|s| {
        let runs: Vec<_> = [DesignConfig::postgres(), DesignConfig::innodb()]
            .into_iter()
            .map(|design| s.spawn(move || run_q18_at_sf1(design)))
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, rows) in results {
        assert_eq!(rows, expected, "{name}");
    }
}

/// Loads SF 1 into a database of `design` and runs Q18 with the validation quantity;
/// prints the load's and the query's wall time (for docs/experiments.md).
fn run_q18_at_sf1(design: DesignConfig) -> (String, Vec<Vec<String>>) {
    let name = design.name.clone();
    let mut cfg = DatabaseConfig::new(design);
    cfg.storage.buffer_pool.frames = 16_384;
    cfg.storage.os_cache.size_bytes = cfg.storage.os_cache.size_bytes.min(256 << 20);
    let db = Database::open(cfg).unwrap();
    let t0 = std::time::Instant::now();
    let t = tpch_embedded::load(&db, 1.0).unwrap();
    let load_s = t0.elapsed().as_secs_f64();
    let t1 = std::time::Instant::now();
    let r = tpch_embedded::run_query(
        &db,
        &t,
        18,
        &QueryParams {
            scale_factor: 1.0,
            q18_quantity: None,
        },
    )
    .unwrap();
    println!(
        "{name}: SF 1 load {load_s:.0} s, Q18 {:.0} s, {} rows",
        t1.elapsed().as_secs_f64(),
        r.rows.len()
    );
    db.close().unwrap();
    (name, r.rows)
}

#[test]
fn the_answer_set_parses_into_rows_of_six_fields() {
    let rows = answer_rows();
    assert_eq!(rows.len(), 57);
    assert!(rows.iter().all(|r| r.len() == 6));
    assert_eq!(rows[0][0], "Customer#000128120");
}
