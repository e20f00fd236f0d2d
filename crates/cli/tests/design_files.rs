//! The example design files in docs/designs load and differ from their base preset.

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
