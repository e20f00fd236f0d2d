//! The layers only look down (shared/STYLE.md, "mvcclab's own layers"; docs/sourcetree.md):
//! no two source files of a crate import each other round a circle, except the buffer pool
//! and its page guards. `scripts/import_cycles.py` resolves every `crate::`, `super::` and
//! child-module path of every file (inline paths too, re-exports followed to the defining
//! file) and exits 1 on a circle; this test runs it over the five crates, so a change that
//! closes a circle fails here, naming the files.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn no_source_file_imports_round_a_circle_but_the_pool_and_its_guards() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .current_dir(&root)
        .arg("scripts/import_cycles.py")
        .args(["--allow", "buffer/guard.rs,buffer/pool.rs"])
        .args([
            "crates/engine/src",
            "crates/cli/src",
            "crates/servers/src",
            "crates/workload/src",
            "crates/devfs/src",
            "crates/wire/src",
        ])
        .output()
        .expect("python3 runs scripts/import_cycles.py (Debian's python3 package)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "import circles between source files:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The script read the five crates (a wrong path would report nothing).
    for krate in ["engine", "cli", "servers", "workload", "devfs", "wire"] {
        assert!(
            text.contains(&format!("crates/{krate}/src: ")),
            "no report for crates/{krate}/src:\n{text}"
        );
    }
}
