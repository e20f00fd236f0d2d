//! Exit codes: an engine failure exits 1 with the engine's message; a usage error (a bad
//! flag, switch or design file) exits 2 (the usage cases are in cli_run.rs,
//! cli_experiments.rs and real_servers.rs).

use std::process::Command;

fn mvcclab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(args)
        .output()
        .expect("run mvcclab")
}

/// `mvcclab <command>` of 10 events over 100 rows, no timed phases, quiet, plus `extra`.
fn tiny(command: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![command, "--quiet", "--table-size", "100", "--events", "10"];
    args.extend_from_slice(&["--time", "0", "--warmup", "0"]);
    args.extend_from_slice(extra);
    mvcclab(&args)
}

/// `--data-dir` under a regular file: the engine cannot create the design's directory
/// (tests run as root, so permissions would not stop it; ENOTDIR does).
#[test]
fn an_engine_failure_exits_1_with_the_engines_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a_file");
    std::fs::write(&file, b"not a directory").unwrap();
    let data_dir = file.join("data");
    for command in ["run", "compare"] {
        let out = tiny(command, &["--data-dir", data_dir.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.starts_with("Error: I/O error during create_dir"),
            "{command}: {err}"
        );
    }
}

#[test]
fn a_bad_flag_still_exits_2() {
    let out = tiny("run", &["--threads", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--threads must be at least 1"), "{err}");
}

/// `--output` naming a directory is a usage error found before the run (not after it,
/// when the report has nowhere to go); a file in a directory that does not exist yet is
/// written, the directory created.
#[test]
fn an_output_path_that_is_a_directory_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = |output: &str| tiny("run", &["--format", "json", "--output", output]);
    let out = run(dir.path().to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is a directory") && err.contains("--output"),
        "{err}"
    );
    assert!(!err.contains("loading"), "refused before loading: {err}");
    let file = dir.path().join("new_dir").join("r.json");
    let out = run(file.to_str().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(1));
}

/// `device mount` on a machine without `fusermount3` (an empty PATH here): one line
/// naming what to install, exit 2, nothing mounted.
#[test]
fn device_mount_without_fusermount3_is_a_setup_error() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let out = Command::new(env!("CARGO_BIN_EXE_mvcclab"))
        .args(["device", "mount", mnt.to_str().unwrap()])
        .env("PATH", dir.path())
        .output()
        .expect("run mvcclab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("apt-get install fuse3"), "{err}");
}
