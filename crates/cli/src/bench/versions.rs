//! The server version a real run met, and the design switches that make a preset model
//! it: a preset run beside a server version it models only with a switch gets a note
//! (`run`, `compare`), and `fidelity` sets the switch on the preset it runs after the
//! server.

use crate::result::RunReport;

/// The design switches that make a preset model the server version that ran (`real`'s
/// `server.version`), each `SWITCH=VALUE`, leaving out those `--set` (`set`) chose:
/// - `purge_resets_trx_id=on` for MariaDB 10.11.0 to 10.11.14, whose purge resets the
///   DB_TRX_ID of every updated clustered record (row0purge.cc `row_purge_reset_trx_id`,
///   MDEV-12288). Measured: 10.11.14 logs about 19 redo bytes per updated row in purge,
///   and its oltp_update_non_index reads and writes index leaves as the preset does only
///   with the switch on; 10.11.19 agrees with the switch off and logs no reset (687 redo
///   bytes in purge after 2,000 updated rows; docs/fidelity.md). The reset was removed by
///   MDEV-16168 (pull request opened 2025-08-21, after 10.11.14), taken here to be gone
///   from 10.11.15 (10.11.15 to 10.11.18 not measured).
pub fn version_switches(real: &RunReport, set: &[String]) -> Vec<String> {
    let Some(version) = real.server.as_ref().map(|s| s.version.as_str()) else {
        return Vec::new();
    };
    let chosen = |name: &str| set.iter().any(|s| s.split('=').next() == Some(name));
    let mut out = Vec::new();
    if !chosen("purge_resets_trx_id") && mariadb_purge_resets_trx_id(version) {
        out.push("purge_resets_trx_id=on".to_string());
    }
    out
}

/// Notes for a set of runs in which a real server ran beside a preset of its family (same
/// table layout) without the switches that make the preset model that server's version
/// ([`version_switches`]): one line per such preset run, naming the server, its version
/// and the `--set` that models it. `compare` prints them; `fidelity` applies the switches
/// itself, since it runs each server before its preset.
pub fn version_notes(runs: &[RunReport]) -> Vec<String> {
    let mut out = Vec::new();
    for real in runs.iter().filter(|r| r.server.is_some()) {
        let version = real.server.as_ref().map_or("", |s| s.version.as_str());
        for sw in version_switches(real, &[]) {
            let Some((name, value)) = sw.split_once('=') else {
                continue;
            };
            for preset in runs
                .iter()
                .filter(|r| r.server.is_none() && r.design.table_layout == real.design.table_layout)
            {
                let had = preset.design.switch_value(name).unwrap_or_default();
                if had != value {
                    out.push(format!(
                        "note: {} ran {version}, which {} models with --set {sw}; the {} run \
                         had {name}={had}",
                        real.design.name, preset.design.name, preset.design.name,
                    ));
                }
            }
        }
    }
    out
}

/// Whether server version `v` (as `SELECT VERSION()` gives it, e.g.
/// `10.11.14-MariaDB-0+deb12u2`) is a MariaDB 10.11 up to 10.11.14.
fn mariadb_purge_resets_trx_id(v: &str) -> bool {
    if !v.contains("MariaDB") {
        return false;
    }
    let mut parts = v
        .split(|ch: char| !ch.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u32>().unwrap_or(u32::MAX));
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(10), Some(11), Some(patch)) if patch <= 14
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../tests/data/run_report.json");

    #[test]
    fn compare_notes_a_preset_run_without_its_servers_version_switches() {
        let mut inno: RunReport = serde_json::from_str(SAMPLE).unwrap();
        inno.design = mvcclab_engine::design::DesignConfig::innodb();
        inno.server = None;
        let mut maria = inno.clone();
        maria.design.name = "real:mariadb".into();
        let mut server = mvcclab_servers::ServerInfo {
            version: "10.11.14-MariaDB-0+deb12u2".into(),
            ..Default::default()
        };
        maria.server = Some(server.clone());
        let mut pg = inno.clone();
        pg.design = mvcclab_engine::design::DesignConfig::postgres();
        let notes = version_notes(&[pg, inno.clone(), maria.clone()]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("10.11.14") && notes[0].contains("--set purge_resets_trx_id=on"),
            "{notes:?}"
        );
        // With the switch on, or against a current server, nothing to say.
        let mut on = inno.clone();
        on.design.purge_resets_trx_id = true;
        assert!(version_notes(&[on, maria.clone()]).is_empty());
        server.version = "10.11.19-MariaDB-0+deb12u1".into();
        maria.server = Some(server);
        assert!(version_notes(&[inno, maria]).is_empty());
    }

    #[test]
    fn mariadb_up_to_10_11_14_resets_trx_ids_in_purge() {
        assert!(mariadb_purge_resets_trx_id("10.11.14-MariaDB-0+deb12u2"));
        assert!(mariadb_purge_resets_trx_id("10.11.6-MariaDB"));
        assert!(!mariadb_purge_resets_trx_id("10.11.15-MariaDB"));
        assert!(!mariadb_purge_resets_trx_id("10.11.19-MariaDB-0+deb12u1"));
        assert!(!mariadb_purge_resets_trx_id("11.4.2-MariaDB"));
        assert!(!mariadb_purge_resets_trx_id(
            "PostgreSQL 15.18 (Debian 15.18-0+deb12u1)"
        ));
        assert!(!mariadb_purge_resets_trx_id("garbage"));
    }
}
