//! Embeds the git commit mvcclab is built from as `MVCCLAB_GIT_COMMIT` (`git rev-parse
//! HEAD`), or `unknown` outside a git checkout or without git: plain std, no C library.
//! Cargo reruns it when HEAD or the branch it names moves. Uncommitted changes are not
//! marked: the script is not rerun on every edit, so such a mark would go stale.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(c) => {
            // Rerun when HEAD moves to another branch or the branch gets a new commit.
            for path in ["HEAD", "packed-refs"] {
                if let Some(p) = git(&["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                if let Some(p) = git(&["rev-parse", "--git-path", &r]) {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
            c
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=MVCCLAB_GIT_COMMIT={commit}");
}
