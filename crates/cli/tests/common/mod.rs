//! Helpers the command-line tests share: running the binary, and the guard that no FUSE
//! mount is left behind. Each test crate that declares `mod common;` uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Mounts under a folder, from /proc/self/mountinfo.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    let prefix = dir.to_string_lossy().to_string();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .filter(|m| m.starts_with(&prefix))
        .collect()
}

/// Detaches every mount left under its folder when dropped; the test then fails.
pub struct NoMountLeft(pub PathBuf);
impl Drop for NoMountLeft {
    fn drop(&mut self) {
        let left = mounts_under(&self.0);
        for m in &left {
            let c = std::ffi::CString::new(m.as_str()).unwrap();
            // SAFETY: a valid NUL-terminated path; umount2 reads only it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        if !std::thread::panicking() {
            assert!(left.is_empty(), "mounts left behind: {left:?}");
        }
    }
}

/// Runs `mvcclab ARGS` and returns its standard output; fails the test with its standard
/// error when it does not succeed.
pub fn mvcclab_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
