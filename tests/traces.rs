//! Traces for big runs, as a user writes and reads them: zstd-compressed traces that every
//! reader opens, `--trace-level calls` traces that leave message lines out and still replay
//! against the digest of every event, version 1 traces still read, and `explain` saying when a
//! trace is incomplete.

mod common;

use common::{json, ringside, root, stdout, text};
use std::path::{Path, PathBuf};

/// A 32-rank ring allreduce with a preemption: many message lines, and a stall to explain.
const RING: &str = r#"
name = "ring-32-preempted"
seed = 3
[world]
size = 32
[network]
latency = "5us"
bandwidth = "10Gbit/s"
[workload]
iterations = 4
elements = 256
[[workload.ops]]
op = "allreduce"
algorithm = "ring"
bytes = "1MiB"
[[faults]]
kind = "preempt"
rank = 9
at = "1ms"
"#;

fn ring_file(dir: &Path) -> PathBuf {
    let p = dir.join("ring.toml");
    std::fs::write(&p, RING).expect("write the scenario");
    p
}

fn run_with(scenario: &Path, trace: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "run",
        scenario.to_str().expect("utf-8"),
        "--json",
        "--trace",
        trace.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let o = ringside(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    json(&o)
}

fn explain_json(trace: &Path) -> serde_json::Value {
    let o = ringside(&["explain", trace.to_str().expect("utf-8"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    json(&o)
}

fn lines_of(trace: &Path) -> Vec<String> {
    std::fs::read_to_string(trace)
        .expect("a plain trace")
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_zst_trace_is_compressed_and_every_reader_opens_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sc = ring_file(dir.path());
    let plain = dir.path().join("run.jsonl");
    let zst = dir.path().join("run.jsonl.zst");
    let a = run_with(&sc, &plain, &[]);
    let b = run_with(&sc, &zst, &[]);
    assert_eq!(
        a["digest"], b["digest"],
        "compression changes nothing of the run"
    );
    let z = std::fs::read(&zst).expect("the compressed trace");
    assert_eq!(&z[..4], &[0x28, 0xB5, 0x2F, 0xFD], "a zstd frame");
    let p = std::fs::metadata(&plain).expect("plain").len();
    assert!(
        p >= 8 * z.len() as u64,
        "{p} bytes plain, {} compressed: less than 8x smaller",
        z.len()
    );
    // the same text once decompressed
    let unpacked = zstd::decode_all(&z[..]).expect("decompresses");
    assert_eq!(unpacked, std::fs::read(&plain).expect("plain"));

    // explain, replay, export and the debugger read it as they read the plain one
    assert_eq!(
        explain_json(&plain)["root_causes"],
        explain_json(&zst)["root_causes"]
    );
    assert_eq!(explain_json(&zst)["root_causes"][0], "preempted:9");
    let o = ringside(&["replay", zst.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("identical"), "{}", text(&o));
    for t in [&plain, &zst] {
        let out = dir.path().join(format!(
            "{}.perfetto.json",
            t.file_name().expect("name").to_string_lossy()
        ));
        let o = ringside(&[
            "export",
            t.to_str().expect("utf-8"),
            "--perfetto",
            out.to_str().expect("utf-8"),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let (pa, pb) = (
        std::fs::read(dir.path().join("run.jsonl.perfetto.json")).expect("export"),
        std::fs::read(dir.path().join("run.jsonl.zst.perfetto.json")).expect("export"),
    );
    assert_eq!(pa, pb, "the same export from either trace");
    let (la, lb) = (
        ringside_tui::Loaded::open(&plain).expect("the debugger opens the plain trace"),
        ringside_tui::Loaded::open(&zst).expect("the debugger opens the compressed trace"),
    );
    assert_eq!(la.len(), lb.len());
    assert_eq!(la.trace.digest, lb.trace.digest);
}

#[test]
fn a_compressed_trace_cut_short_is_read_up_to_the_cut_and_said_to_be_incomplete() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sc = ring_file(dir.path());
    let zst = dir.path().join("run.jsonl.zst");
    run_with(&sc, &zst, &[]);
    let z = std::fs::read(&zst).expect("trace");
    let cut = dir.path().join("cut.jsonl.zst");
    std::fs::write(&cut, &z[..z.len() / 2]).expect("write");
    let o = ringside(&["explain", cut.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains("incomplete trace"), "{out}");
    assert!(out.contains("compressed stream ends early"), "{out}");
    assert_eq!(explain_json(&cut)["complete"], false);
    assert_eq!(
        explain_json(&zst)["complete"],
        true,
        "the whole trace is complete"
    );
    // replay proves nothing past the cut, and says where it stops
    let o = ringside(&["replay", cut.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("incomplete trace"), "{}", text(&o));
}

#[test]
fn a_calls_level_trace_leaves_message_lines_out_and_replays_against_the_full_digest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sc = ring_file(dir.path());
    let full = dir.path().join("full.jsonl");
    let calls = dir.path().join("calls.jsonl");
    let a = run_with(&sc, &full, &[]);
    let b = run_with(&sc, &calls, &["--trace-level", "calls"]);
    assert_eq!(
        a["digest"], b["digest"],
        "the digest covers every event at any level"
    );
    let (fl, cl) = (lines_of(&full), lines_of(&calls));
    let header: serde_json::Value = serde_json::from_str(&cl[0]).expect("header");
    assert_eq!(header["level"], "calls");
    assert_eq!(header["version"], 2);
    let kinds = |lines: &[String]| -> Vec<String> {
        lines[1..lines.len() - 1]
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("event");
                v["kind"].as_str().expect("kind").to_string()
            })
            .collect()
    };
    let (fk, ck) = (kinds(&fl), kinds(&cl));
    for message in ["send", "deliver"] {
        assert!(
            fk.iter().any(|k| k == message),
            "the full trace has {message}"
        );
        assert!(
            !ck.iter().any(|k| k == message),
            "the calls trace has no {message}"
        );
    }
    for kept in [
        "call",
        "step",
        "complete",
        "fault",
        "process_death",
        "diagnosis",
    ] {
        assert_eq!(
            fk.iter().filter(|k| *k == kept).count(),
            ck.iter().filter(|k| *k == kept).count(),
            "every {kept} is kept"
        );
    }
    assert!(
        cl.len() * 2 < fl.len(),
        "{} vs {} lines",
        cl.len(),
        fl.len()
    );
    let footer: serde_json::Value = serde_json::from_str(cl.last().expect("footer")).expect("end");
    assert_eq!(footer["lines"], ck.len());
    assert_eq!(
        footer["events"],
        fk.len(),
        "the footer counts every event of the run"
    );

    // explain reads the same story from it
    let (ef, ec) = (explain_json(&full), explain_json(&calls));
    assert_eq!(ef["root_causes"], ec["root_causes"]);
    assert_eq!(ef["blocked"], ec["blocked"]);
    assert_eq!(ec["trace_level"], "calls");

    // replay checks the lines it has and the digest of all the others
    let o = ringside(&["replay", calls.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let digest = a["digest"].as_str().expect("digest").to_string();
    assert!(stdout(&o).contains(&digest), "{}", text(&o));

    // a footer whose digest does not cover the events the run makes is found out
    let mut forged = cl.clone();
    let last = forged.len() - 1;
    forged[last] = forged[last].replace(&digest, "0123456789abcdef");
    let bad = dir.path().join("forged.jsonl");
    std::fs::write(&bad, forged.join("\n") + "\n").expect("write");
    let o = ringside(&["replay", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("0123456789abcdef"), "{}", text(&o));

    // and so is a line count that does not match
    let mut short = cl.clone();
    short.remove(2);
    std::fs::write(&bad, short.join("\n") + "\n").expect("write");
    let o = ringside(&["explain", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("event lines"), "{}", text(&o));
}

#[test]
fn trace_level_needs_a_trace_and_a_known_level() {
    let sc = root().join("scenarios/healthy-allreduce.toml");
    let sc = sc.to_str().expect("utf-8");
    let o = ringside(&["run", sc, "--trace-level", "calls"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = ringside(&[
        "run",
        sc,
        "--trace",
        "/tmp/x.jsonl",
        "--trace-level",
        "some",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("calls"), "{}", text(&o));
}

#[test]
fn a_header_with_an_unknown_level_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = dir.path().join("t.jsonl");
    let o = ringside(&[
        "run",
        root()
            .join("scenarios/healthy-allreduce.toml")
            .to_str()
            .expect("utf-8"),
        "--trace",
        t.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let text0 = std::fs::read_to_string(&t).expect("trace");
    std::fs::write(
        &t,
        text0.replacen("\"level\":\"full\"", "\"level\":\"most\"", 1),
    )
    .expect("write");
    let o = ringside(&["explain", t.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(":1: the header's `level` is \"most\""),
        "{}",
        text(&o)
    );
}

#[test]
fn version_1_traces_are_still_read_and_replayed() {
    let v1 = root().join("tests/data/traces/v1-preempt.jsonl");
    let head: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&v1)
            .expect("the v1 trace")
            .lines()
            .next()
            .expect("a header"),
    )
    .expect("JSON");
    assert_eq!(head["version"], 1);
    let o = ringside(&["replay", v1.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(explain_json(&v1)["root_causes"][0], "preempted:2");
    // its lines are the lines a version 2 trace has; only the digest changed
    let dir = tempfile::tempdir().expect("temp dir");
    let t = dir.path().join("v2.jsonl");
    let o = ringside(&[
        "run",
        root()
            .join("scenarios/preempt-mid-allreduce.toml")
            .to_str()
            .expect("utf-8"),
        "--trace",
        t.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (a, b) = (lines_of(&v1), lines_of(&t));
    assert_eq!(a.len(), b.len());
    assert_eq!(a[1..a.len() - 1], b[1..b.len() - 1]);
}

#[test]
fn progress_is_never_shown_off_a_terminal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sc = ring_file(dir.path());
    for args in [
        vec!["run", sc.to_str().expect("utf-8")],
        vec!["run", sc.to_str().expect("utf-8"), "--quiet"],
        vec![
            "sweep",
            sc.to_str().expect("utf-8"),
            "--bytes",
            "1KiB..4KiB",
        ],
    ] {
        let o = ringside(&args);
        assert!(o.status.code() == Some(0), "{args:?}: {}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{args:?}");
    }
}
