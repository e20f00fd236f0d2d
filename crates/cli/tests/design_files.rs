//! The docs' data stay true: the example design files in docs/designs load and differ from
//! their base preset, and docs/fidelity.md renders docs/fidelity/fidelity.json.

mod common;

use common::mvcclab_ok;
use mvcclab::design_arg::load_design_file;
use mvcclab_engine::design::DesignConfig;

#[test]
fn every_example_design_file_loads_and_changes_its_base() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/designs");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        n += 1;
        let d = load_design_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(d.name, path.file_stem().unwrap().to_str().unwrap());
        let base = DesignConfig::presets()
            .into_iter()
            .find(|p| d.name.starts_with(&p.name))
            .expect("named after its base preset");
        let mut renamed = d.clone();
        renamed.name = base.name.clone();
        assert_ne!(renamed, base, "{} changes a switch", d.name);
    }
    assert!(n >= 3, "{n} design files");
}

/// docs/fidelity.md's table is the re-rendering of the committed docs/fidelity/fidelity.json
/// (`mvcclab fidelity --from`), so the page and the data cannot drift apart.
#[test]
fn fidelity_doc_table_is_rendered_from_the_committed_run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let from = root.join("docs/fidelity/fidelity.json");
    let stdout = mvcclab_ok(&[
        "fidelity".as_ref(),
        "--from".as_ref(),
        from.as_os_str(),
        "--format".as_ref(),
        "md".as_ref(),
    ]);
    let doc = std::fs::read_to_string(root.join("docs/fidelity.md")).unwrap();
    let text = String::from_utf8_lossy(&stdout);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(rows.len() > 50, "{text}");
    for l in rows {
        assert!(doc.contains(l), "docs/fidelity.md lacks: {l}");
    }
}
