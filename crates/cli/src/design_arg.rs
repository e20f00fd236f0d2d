//! What `--design` / `--designs` name: a preset (`postgres`, `innodb`) or a design file,
//! and the `--set SWITCH=VALUE` changes applied on top.
//!
//! A design file is TOML: an optional `name` (default: the file's stem), an optional `base`
//! preset, and switch values under their names (see `mvcclab designs`). Without `base`,
//! every switch must be given. Booleans may be written `true`/`false` or `"on"`/`"off"`.
//!
//! ```toml
//! name = "postgres_no_hot"
//! base = "postgres"
//! hot_updates = false
//! fillfactor = 90
//! ```

use crate::UsageError;
use anyhow::Result;
use mvcclab_engine::design::{DesignConfig, SWITCHES};
use serde_json::Value;
use std::path::Path;

/// True when `arg` names a design file rather than a preset.
fn is_file(arg: &str) -> bool {
    arg.ends_with(".toml") || arg.contains('/') || Path::new(arg).is_file()
}

/// "on"/"off" to booleans (as `--set` takes them) for a boolean switch `key`; other
/// switches keep the text (`garbage_collection = "off"` is a value of its own).
fn on_off(key: &str, v: Value) -> Value {
    let boolean = DesignConfig::presets()
        .first()
        .and_then(|p| serde_json::to_value(p).ok())
        .is_some_and(|p| p[key].is_boolean());
    match v.as_str() {
        Some("on") if boolean => Value::Bool(true),
        Some("off") if boolean => Value::Bool(false),
        _ => v,
    }
}

fn unknown_switch(key: &str) -> String {
    let names: Vec<&str> = SWITCHES.iter().map(|s| s.name).collect();
    format!("unknown switch '{key}'; switches are {}", names.join(", "))
}

/// Merges `changes` (switch → JSON value) into `base` and checks the result.
fn merge(base: Value, changes: Vec<(String, Value)>, what: &str) -> Result<DesignConfig> {
    let mut v = base;
    for (k, x) in changes {
        if k != "name" && !SWITCHES.iter().any(|s| s.name == k) {
            return Err(UsageError(format!("{what}: {}", unknown_switch(&k))).into());
        }
        v[k.as_str()] = on_off(&k, x);
    }
    let d: DesignConfig =
        serde_json::from_value(v).map_err(|e| UsageError(format!("{what}: {e}")))?;
    d.validate()
        .map_err(|e| UsageError(format!("{what}: {e}")))?;
    Ok(d)
}

/// Loads a design file (format in the module doc).
///
/// Errors ([`UsageError`], exit 2): the file cannot be read, is not TOML, names an unknown
/// base preset or switch, gives a value a switch does not take, leaves a switch unset
/// without `base`, or combines switches that cannot be combined. Each names the file.
pub fn load_design_file(path: &Path) -> Result<DesignConfig> {
    let what = format!("design file {}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| UsageError(format!("{what}: {e}")))?;
    let table: serde_json::Map<String, Value> =
        basic_toml::from_str(&text).map_err(|e| UsageError(format!("{what}: {e}")))?;
    let mut changes = Vec::new();
    let mut base = Value::Object(Default::default());
    let mut has_name = false;
    for (k, v) in table {
        match k.as_str() {
            "base" => {
                let name = v.as_str().ok_or_else(|| {
                    UsageError(format!("{what}: base must be a preset name in quotes"))
                })?;
                let p = DesignConfig::preset(name)
                    .map_err(|e| UsageError(format!("{what}: base: {e}")))?;
                base = serde_json::to_value(p)?;
            }
            _ => {
                has_name |= k == "name";
                changes.push((k, v));
            }
        }
    }
    if !has_name {
        let stem = path
            .file_stem()
            .map_or("design".into(), |s| s.to_string_lossy().into_owned());
        changes.push(("name".into(), Value::String(stem)));
    }
    merge(base, changes, &what)
}

/// The design `arg` names (a preset or a design file) with `set` applied.
///
/// Errors ([`UsageError`]): an unknown preset, a bad design file (see
/// [`load_design_file`]), a `--set` that is not `SWITCH=VALUE`, names an unknown switch or
/// gives a value the switch does not take.
pub fn resolve_design(arg: &str, set: &[String]) -> Result<DesignConfig> {
    let design = if is_file(arg) {
        load_design_file(Path::new(arg))?
    } else {
        DesignConfig::preset(arg).map_err(|e| {
            UsageError(format!(
                "{e}, or give a design file (FILE.toml, see `mvcclab designs`)"
            ))
        })?
    };
    if set.is_empty() {
        return Ok(design);
    }
    let mut changes = Vec::new();
    for s in set {
        let (k, val) = s
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--set '{s}': expected SWITCH=VALUE")))?;
        if k == "name" || !SWITCHES.iter().any(|w| w.name == k) {
            return Err(UsageError(format!("--set {s}: {}", unknown_switch(k))).into());
        }
        let parsed = val
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(val.to_string()));
        changes.push((k.to_string(), parsed));
    }
    merge(serde_json::to_value(design)?, changes, "--set")
}
