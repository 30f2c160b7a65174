//! Helpers shared by the test binaries: `mod common;` at the top of a test file, then
//! `common::ringside(...)`, `common::scenario(...)`.

// each test binary uses some of these
#![allow(dead_code)]

use ringside_sim::scenario::{load, parse, Scenario};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The repository: where `scenarios/`, `traces/` and the docs are.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `ringside` binary, for tests that spawn it and talk to it while it runs.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ringside"))
}

/// The `ringside` binary, to be run in the repository and, whatever the environment, without
/// `CI` set (which changes how `check` shows progress).
pub fn cmd() -> assert_cmd::Command {
    let mut c = assert_cmd::cargo::cargo_bin_cmd!("ringside");
    c.current_dir(root()).env_remove("CI");
    c
}

/// Runs `ringside` with `args` (see [`cmd`]) and returns what it did.
pub fn ringside<S: AsRef<OsStr>>(args: &[S]) -> Output {
    cmd().args(args).output().expect("the ringside binary runs")
}

/// Standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard output, then standard error.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The exit code (-1 when a signal ended the process) and standard output.
pub fn code_and_stdout(o: &Output) -> (i32, String) {
    (o.status.code().unwrap_or(-1), stdout(o))
}

/// Standard output as one JSON value.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is one JSON object ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// A scenario from TOML text; panics with the error and the text when it is invalid.
pub fn scenario(text: &str) -> Scenario {
    parse(text, "inline.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The shipped scenario `scenarios/<name>`.
pub fn shipped(name: &str) -> Scenario {
    load(&root().join("scenarios").join(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Every shipped scenario file, sorted.
pub fn shipped_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("scenarios"))
        .expect("scenarios/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}
