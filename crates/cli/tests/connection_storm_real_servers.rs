//! `mvcclab experiment connection_storm` small (20 users over 2 s) on real PostgreSQL and
//! `mvcclab serve`, both variants: the seed's Table 3 figures are present and non-zero for
//! every run, PostgreSQL's connection per query forks a backend per query (its faults
//! grow with the connections), and no server or cgroup is left behind.
//!
//! Needs root (cgroups, perf over all CPUs), `perf` (linux-perf) and postgresql-15, from
//! `.ci/run` and the README's set-up.

use mvcclab::commands::connection_storm::ConnectionStormReport;

#[test]
fn connection_storm_counts_postgresql_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args([
            "experiment",
            "connection_storm",
            "--users",
            "20",
            "--ramp-up-s",
            "2",
            "--targets",
            "postgresql,serve",
            "--table-size",
            "200",
            "--buffer-pool",
            "16MiB",
            "--format",
            "json",
            "--quiet",
            "--server-dir",
            dir.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: ConnectionStormReport = serde_json::from_slice(&out.stdout).expect("report JSON");
    assert_eq!(r.runs.len(), 4, "{:?}", r.failed);
    assert!(r.failed.is_empty());
    for x in &r.runs {
        let what = format!("{} {}", x.target, x.variant);
        let c = &x.client;
        assert!(c.queries > 0 && c.rows == 20 * c.queries, "{what}: {c:?}");
        assert!(c.connections > 0, "{what}");
        assert!(x.window_s >= 2.0, "{what}: {}", x.window_s);
        assert!(x.server.context_switches > 0, "{what}");
        assert!(x.server.minor_faults > 0, "{what}");
        assert!(x.server.task_clock_ms > 0.0, "{what}");
        assert!(x.cpus_utilised() > 0.0, "{what}");
        assert!(x.server.page_cache_reads.is_some(), "{what}");
        assert!(x.pool_misses_pages.is_some(), "{what}");
        assert!(x.client_cpu_s > 0.0, "{what}");
        assert!(!x.version.is_empty(), "{what}");
        if x.variant == "per_query" {
            assert_eq!(c.connections, c.queries, "{what}");
        } else {
            assert!(c.connections <= 20, "{what}: {c:?}");
        }
    }
    let pg = |v: &str| {
        r.runs
            .iter()
            .find(|x| x.target == "postgresql" && x.variant == v)
            .unwrap()
    };
    // A backend per connection: PostgreSQL's faults per connection stay of the same order
    // when every query connects anew, so the per-query storm faults far more in total
    // per query.
    let per_q = |x: &mvcclab::commands::connection_storm::StormRun| {
        x.server.minor_faults as f64 / x.client.queries as f64
    };
    assert!(
        per_q(pg("per_query")) > 5.0 * per_q(pg("persistent")),
        "{} vs {}",
        per_q(pg("per_query")),
        per_q(pg("persistent"))
    );
    let md = mvcclab::commands::connection_storm::summary_md(&r);
    assert!(md.contains("| postgresql | per_query |"), "{md}");
    // Nothing left: the run's cgroups are gone.
    let prefix = format!("mvcclab-storm-{pid}-");
    let groups = std::fs::read_dir("/sys/fs/cgroup/unified")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(groups, 0, "cgroups left behind");
}

#[test]
fn connection_storm_refuses_bad_flags() {
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args([
            "experiment",
            "connection_storm",
            "--targets",
            "oracle",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("--targets oracle"));
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(["experiment", "connection_storm", "--users", "0"])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
}
