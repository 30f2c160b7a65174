//! `ringside export TRACE --perfetto FILE` from the command line.

mod common;

use common::ringside;
use std::path::Path;

#[test]
fn export_writes_trace_event_json_with_a_track_per_rank() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.jsonl");
    let json = dir.path().join("t.json");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/preempt-mid-allreduce.toml");
    let out = ringside(&[
        "run".as_ref(),
        scenario.as_os_str(),
        "--trace".as_ref(),
        trace.as_os_str(),
    ]);
    assert!(out.status.success());
    let out = ringside(&[
        "export".as_ref(),
        trace.as_os_str(),
        "--perfetto".as_ref(),
        json.as_os_str(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("written")).expect("JSON");
    let evs = v["traceEvents"].as_array().expect("traceEvents");
    let ranks: Vec<&str> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert_eq!(ranks, ["rank 0", "rank 1", "rank 2"]);
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "i" && e["name"] == "fault: preempt"));

    // the same on standard output
    let out = ringside(&[
        "export".as_ref(),
        trace.as_os_str(),
        "--perfetto".as_ref(),
        "-".as_ref(),
    ]);
    assert!(out.status.success());
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(w, v);
}

#[test]
fn export_refuses_what_is_not_a_trace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "not json\n").expect("write");
    let out = ringside(&[
        "export".as_ref(),
        bad.as_os_str(),
        "--perfetto".as_ref(),
        dir.path().join("x.json").as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}
