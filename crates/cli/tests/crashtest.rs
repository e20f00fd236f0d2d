//! Issue 7's crash tests at a size the suite can afford: power cuts on the crash-simulation
//! device for both presets, SIGKILL of a real `mvcclab` process for both presets, and the
//! torn-page check with protection off. The 200-cut runs are `mvcclab crashtest --cuts
//! 200` (docs/testing.md); set MVCCLAB_CRASH_CUTS / MVCCLAB_KILLS to run more here.

use mvcclab::commands::crashtest::{crashtest, kill_test, CrashtestArgs, CrashtestSummary};
use std::path::Path;

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn args(design: &str, seed: u64) -> CrashtestArgs {
    CrashtestArgs {
        design: design.into(),
        seed,
        rows: 300,
        max_commits_per_cut: 150,
        ..Default::default()
    }
}

fn assert_clean(s: &CrashtestSummary) {
    assert_eq!(s.lost_commits, 0, "{s:#?}");
    assert_eq!(s.invariant_violations, 0, "{s:#?}");
    assert_eq!(
        s.torn_pages_found, s.torn_pages_repaired,
        "every torn page is repaired: {s:#?}"
    );
    assert!(s.commits_acknowledged > 0, "{s:#?}");
}

/// `MVCCLAB_CRASH_CUTS` (15) power cuts on `design`; every one ran and the run is clean.
fn power_cuts(design: &str, seed: u64) -> CrashtestSummary {
    let cuts = env_or("MVCCLAB_CRASH_CUTS", 15);
    let s = crashtest(&CrashtestArgs {
        cuts,
        ..args(design, seed)
    })
    .unwrap();
    assert_eq!(s.cuts, cuts);
    assert_clean(&s);
    s
}

#[test]
fn postgres_survives_power_cuts() {
    let s = power_cuts("postgres", 11);
    // Full-page images repaired what the cuts tore.
    assert!(s.torn_pages_repaired > 0, "{s:#?}");
    assert!(s.full_page_images_restored > 0, "{s:#?}");
    assert!(s.line().starts_with(&format!(
        "cuts: {}, lost_commits: 0, invariant_violations: 0, torn_pages_repaired: ",
        s.cuts
    )));
}

#[test]
fn innodb_survives_power_cuts() {
    let s = power_cuts("innodb", 12);
    assert!(
        s.transactions_undone > 0,
        "some cut left a transaction to roll back: {s:#?}"
    );
}

#[test]
fn without_torn_page_protection_a_torn_page_is_detected_not_read() {
    // Every unsynced write survives and every multi-sector one is torn.
    let s = crashtest(&CrashtestArgs {
        cuts: 10,
        set: vec!["torn_page_protection=none".into()],
        survive_probability: 1.0,
        tear_probability: 1.0,
        ..args("postgres", 13)
    })
    .unwrap();
    assert_eq!(s.lost_commits, 0, "{s:#?}");
    // Recovery stopped at a torn page, naming it; no check before that found wrong data.
    assert_eq!(s.invariant_violations, 1, "{s:#?}");
    let p = &s.problems[0];
    assert!(
        p.contains("recovery failed") && p.contains("checksum mismatch in page"),
        "{p}"
    );
}

fn kills(design: &str, seed: u64) -> CrashtestSummary {
    let n = env_or("MVCCLAB_KILLS", 20);
    let s = kill_test(
        &CrashtestArgs {
            rows: 200,
            ..args(design, seed)
        },
        Path::new(env!("CARGO_BIN_EXE_mvcclab")),
        n,
    )
    .unwrap();
    assert_eq!(s.cuts, n, "{s:#?}");
    s
}

#[test]
fn postgres_survives_sigkill() {
    let s = kills("postgres", 21);
    assert_clean(&s);
}

#[test]
fn innodb_survives_sigkill() {
    let s = kills("innodb", 22);
    assert_clean(&s);
}
