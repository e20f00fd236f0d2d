//! `mvcclab designs`: every design switch with its meaning, its values, and each preset's
//! value (from the presets file, crates/engine/src/presets.json).

use anyhow::Result;
use mvcclab_engine::design::{DesignConfig, SWITCHES};

/// Prints the table of switches and presets (Markdown, so it pastes into notes).
pub fn run() -> Result<()> {
    let presets = DesignConfig::presets();
    let mut out = String::from("| switch | meaning | values |");
    for p in &presets {
        out += &format!(" {} |", p.name);
    }
    out += "\n|---|---|---|";
    out += &"---|".repeat(presets.len());
    out += "\n";
    for s in SWITCHES {
        out += &format!("| {} | {} | {} |", s.name, s.meaning, s.values);
        for p in &presets {
            out += &format!(" {} |", p.switch_value(s.name)?);
        }
        out += "\n";
    }
    out += "\nA design file (FILE.toml, for --design/--designs) names a `base` preset and the switches it \
             changes, e.g. `base = \"postgres\"` and `hot_updates = false`; examples are in docs/designs/.\n";
    print!("{out}");
    Ok(())
}
