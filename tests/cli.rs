//! End-to-end tests of the `ringside` command line: shipped scenarios, exit codes, bad input,
//! traces.

mod common;

use common::{json, ringside};
use std::path::PathBuf;
use std::process::Command;

fn scenarios() -> Vec<PathBuf> {
    let v = common::shipped_files();
    assert!(v.len() >= 5, "at least five shipped scenarios");
    v
}

#[test]
fn every_shipped_scenario_meets_its_expectations_and_is_deterministic() {
    for path in scenarios() {
        let p = path.to_str().expect("utf-8 path");
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(text.contains("[expect]"), "{p} has an [expect] section");
        let a = ringside(&["run", p, "--json"]);
        assert_eq!(
            a.status.code(),
            Some(0),
            "{p}: expectations fail:\n{}{}",
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&a.stderr)
        );
        let b = ringside(&["run", p, "--json"]);
        let (ja, jb) = (json(&a), json(&b));
        assert_eq!(ja["digest"], jb["digest"], "{p}: two runs, two digests");
        assert_eq!(ja["expect"]["ok"], true);
    }
}

#[test]
fn run_json_has_every_contract_field() {
    let o = ringside(&["run", "scenarios/preempt-mid-allreduce.toml", "--json"]);
    let j = json(&o);
    for key in [
        "scenario",
        "seed",
        "outcome",
        "virtual_time_ns",
        "messages",
        "digest",
        "ops",
        "blocked",
        "root_causes",
        "generations",
        "expect",
    ] {
        assert!(j.get(key).is_some(), "--json lacks `{key}`: {j}");
    }
    let op = &j["ops"][0];
    for key in [
        "iteration",
        "index",
        "op",
        "algorithm",
        "group",
        "generation",
        "seq",
        "bytes",
        "start_ns",
        "end_ns",
        "ranks_completed",
        "correct",
    ] {
        assert!(op.get(key).is_some(), "ops[0] lacks `{key}`: {op}");
    }
    let b = &j["blocked"][0];
    for key in ["rank", "op", "seq", "step", "waiting_for", "since_ns"] {
        assert!(b.get(key).is_some(), "blocked[0] lacks `{key}`: {b}");
    }
    assert_eq!(j["outcome"], "stalled");
    assert_eq!(j["root_causes"], serde_json::json!(["preempted:2"]));
    assert_eq!(j["blocked"][0]["waiting_for"], serde_json::json!([2]));
    assert!(j["expect"]["failures"]
        .as_array()
        .is_some_and(|f| f.is_empty()));
    let g = &j["generations"][0];
    assert_eq!(g["members"], serde_json::json!([0, 1, 2]));
}

#[test]
fn human_output_says_who_waits_for_whom_and_why() {
    let o = ringside(&["run", "scenarios/preempt-mid-allreduce.toml"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("stalled at 2010.000ms"), "{out}");
    assert!(out.contains("blocked in allreduce #1 (ring"), "{out}");
    assert!(out.contains("0 waits for 2"), "{out}");
    assert!(out.contains("rank 2 was preempted at 12.000ms"), "{out}");
}

#[test]
fn seed_override_and_failed_expectation_exit_1() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("wrong.toml");
    std::fs::write(
        &path,
        "name = \"wrong\"\n[world]\nsize = 2\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n[expect]\noutcome = \"stalled\"\n",
    )
    .expect("write");
    let o = ringside(&[
        "run",
        path.to_str().expect("utf-8"),
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j = json(&o);
    assert_eq!(j["seed"], 9);
    assert_eq!(j["expect"]["ok"], false);
    assert!(j["expect"]["failures"][0]
        .as_str()
        .is_some_and(|f| f.contains("expected stalled, got completed")));
}

#[test]
fn a_run_says_whether_it_had_expectations_to_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    let body = "name = \"x\"\n[world]\nsize = 2\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n";
    for (expect, said) in [
        (
            "",
            "no expectations to check (the scenario has no [expect])",
        ),
        ("[expect]\noutcome = \"completed\"\n", "expectations met"),
    ] {
        let path = dir.path().join("x.toml");
        std::fs::write(&path, format!("{body}{expect}")).expect("write");
        let o = ringside(&["run", path.to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(0));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.lines().last(), Some(said), "{out}");
    }
}

/// (name, scenario text, key that must be named, line that must be named)
const BAD: &[(&str, &str, &str, usize)] = &[
    (
        "malformed TOML",
        "name = \"x\"\n[world\nsize = 2\n",
        "",
        2,
    ),
    (
        "unknown key",
        "name = \"x\"\n[world]\nsize = 2\ncolour = \"red\"\n[workload]\n",
        "colour",
        4,
    ),
    (
        "bad unit",
        "name = \"x\"\n[world]\nsize = 2\n[network]\nlatency = \"5 parsecs\"\n[workload]\n",
        "latency",
        5,
    ),
    (
        "rank out of range",
        "name = \"x\"\n[world]\nsize = 2\n[workload]\n[[faults]]\nkind = \"preempt\"\nrank = 7\nat = \"1ms\"\n",
        "rank",
        7,
    ),
    (
        "overlapping partition sides",
        "name = \"x\"\n[world]\nsize = 4\n[workload]\n[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [1, 2]]\nat = \"1ms\"\n",
        "sides",
        7,
    ),
    (
        "zero world size",
        "name = \"x\"\n[world]\nsize = 0\n[workload]\n",
        "size",
        3,
    ),
];

#[test]
fn bad_input_exits_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text, key, line) in BAD {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, text).expect("write");
        let o = ringside(&["run", path.to_str().expect("utf-8")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name}: exit 2, got {:?}: {err}",
            o.status
        );
        assert!(!err.contains("panicked"), "{name}: panicked: {err}");
        assert!(err.contains("bad.toml"), "{name}: names the file: {err}");
        assert!(
            err.contains(&format!("bad.toml:{line}:")),
            "{name}: names line {line}: {err}"
        );
        assert!(err.contains(key), "{name}: names key `{key}`: {err}");
    }
    let o = ringside(&["run", "does/not/exist.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does/not/exist.toml"));
}

#[test]
fn trace_has_header_events_footer_and_a_chained_digest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.jsonl");
    let t = trace.to_str().expect("utf-8");
    let o = ringside(&[
        "run",
        "scenarios/healthy-allreduce.toml",
        "--trace",
        t,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let report = json(&o);
    let text = std::fs::read_to_string(&trace).expect("trace written");
    let lines: Vec<&str> = text.lines().collect();
    let header: serde_json::Value = serde_json::from_str(lines[0]).expect("header is JSON");
    assert_eq!(header["format"], "ringside-trace");
    assert_eq!(header["version"], 2);
    assert_eq!(header["level"], "full");
    assert_eq!(header["seed"], 1);
    assert_eq!(header["scenario"]["name"], "healthy-allreduce");
    let footer: serde_json::Value =
        serde_json::from_str(lines[lines.len() - 1]).expect("footer is JSON");
    assert_eq!(footer["kind"], "end");
    assert_eq!(footer["outcome"], "completed");
    assert_eq!(footer["events"], (lines.len() - 2) as u64);
    assert_eq!(footer["digest"], report["digest"]);
    for l in &lines[1..lines.len() - 1] {
        let v: serde_json::Value = serde_json::from_str(l).expect("event is JSON");
        assert!(v["t"].is_u64() && v["kind"].is_string(), "{l}");
    }
    // the library recomputes the chained digest and checks it against the footer
    let read = ringside_sim::trace::read_trace(&trace).expect("readable");
    assert_eq!(read.digest, footer["digest"].as_str().expect("hex"));
    // replay proves the stream identical
    let o = ringside(&["replay", t]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // a tampered event is caught: replay names the first diverging line
    let tampered = dir.path().join("tampered.jsonl");
    let mut changed = lines.clone();
    let edited = changed[5].replacen("\"t\":", "\"t\":1", 1);
    changed[5] = &edited;
    std::fs::write(&tampered, changed.join("\n") + "\n").expect("write");
    let o = ringside(&["replay", tampered.to_str().expect("utf-8")]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 6"));
}

/// The trace of a run of the shipped healthy allreduce, written in `dir`.
fn healthy_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let trace = dir.join("t.jsonl");
    let t = trace.to_str().expect("utf-8");
    let o = ringside(&["run", "scenarios/healthy-allreduce.toml", "--trace", t]);
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    trace
}

#[test]
fn malformed_traces_exit_2_with_the_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = healthy_trace(dir.path());
    let text = std::fs::read_to_string(&trace).expect("trace");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[3] = "{\"t\":5,\"kind\":\"no_such_event\"}".into();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, lines.join("\n") + "\n").expect("write");
    for cmd in ["replay", "explain"] {
        let o = ringside(&[cmd, bad.to_str().expect("utf-8")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("bad.jsonl:4:"), "{cmd}: {err}");
        assert!(!err.contains("panicked"));
    }
    std::fs::write(&bad, "{\"format\":\"something-else\",\"version\":1}\n").expect("write");
    let o = ringside(&["explain", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a ringside trace"));
    std::fs::write(&bad, "{\"format\":\"ringside-trace\",\"version\":99}\n").expect("write");
    let o = ringside(&["explain", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("version 99"));
}

#[test]
fn a_negative_time_to_explain_at_is_named_in_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = healthy_trace(dir.path());
    let t = trace.to_str().expect("utf-8");
    for at in [&["--at", "-1ms"][..], &["--at=-1ms"]] {
        let mut args = vec!["explain", t];
        args.extend_from_slice(at);
        let o = ringside(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{at:?}: {err}");
        assert_eq!(
            err.trim(),
            "error: --at: `-1ms` does not start with a number",
            "{at:?}"
        );
    }
}

#[test]
fn an_interrupted_run_leaves_a_readable_trace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("long.toml");
    // long enough in wall time that the interrupt lands mid-run
    std::fs::write(
        &scenario,
        "name = \"long\"\n[world]\nsize = 64\n[workload]\niterations = 1000000\nelements = 64\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n",
    )
    .expect("write");
    let trace = dir.path().join("t.jsonl");
    let child = Command::new(common::bin())
        .args([
            "run",
            scenario.to_str().expect("utf-8"),
            "--trace",
            trace.to_str().expect("utf-8"),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // wait until events are flowing to the file, then interrupt
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if std::fs::metadata(&trace).is_ok_and(|m| m.len() > 2_000_000) {
            break;
        }
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status();
    assert!(killed.is_ok_and(|s| s.success()), "SIGINT sent");
    let out = child.wait_with_output().expect("exits");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("interrupted"),
        "says it was interrupted: {err}"
    );
    let read = ringside_sim::trace::read_trace(&trace).expect("the partial trace is readable");
    assert!(read.footer.is_none(), "no footer: the run did not end");
    assert!(
        read.events.len() > 1000,
        "events up to the interrupt are kept"
    );
    assert_eq!(read.header.scenario.name, "long");
    // explain works on it too
    let o = ringside(&["explain", trace.to_str().expect("utf-8")]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    // enough output (a report of 3000 collectives) to overflow the pipe after the reader left
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("long.toml");
    std::fs::write(
        &path,
        "name = \"long\"\n[world]\nsize = 2\n[workload]\niterations = 3000\nelements = 2\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n",
    )
    .expect("write scenario");
    let mut child = Command::new(common::bin())
        .args(["run", path.to_str().expect("utf-8"), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the ringside binary runs");
    let mut first = [0u8; 1];
    let mut out = child.stdout.take().expect("stdout");
    std::io::Read::read_exact(&mut out, &mut first).expect("some output");
    drop(out);
    let o = child.wait_with_output().expect("it ends");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "a closed stdout is no failure: {stderr}"
    );
}

// ---- the docs say what the program does ----------------------------------------------------

fn doc(path: &str) -> String {
    std::fs::read_to_string(common::root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_example_is_what_run_prints() {
    let command = "run scenarios/preempt-mid-allreduce.toml";
    let o = ringside(&command.split(' ').collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", common::text(&o));
    for (path, prompt) in [
        ("README.md", "$ cargo run --release --"),
        ("docs/cli.md", "$ ringside"),
    ] {
        let shown = format!("{prompt} {command}\n{}```", common::stdout(&o));
        assert!(
            doc(path).contains(&shown),
            "{path} should show what `ringside {command}` prints:\n{shown}"
        );
    }
}

#[test]
fn check_help_and_the_docs_name_every_property_check_runs() {
    let o = ringside(&["check", "--cases", "1"]);
    let out = common::stdout(&o);
    // `7 properties checked (agreement, validity, ...)`
    let names: Vec<&str> = out
        .split_once("properties checked (")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(names, _)| names.split(", ").collect())
        .unwrap_or_else(|| panic!("no property names in:\n{out}"));
    assert!(names.len() >= 7, "{names:?}");
    let help = common::stdout(&ringside(&["check", "--help"]));
    let properties = doc("docs/properties.md");
    for name in names {
        assert!(
            help.contains(name),
            "`check --help` does not name {name}:\n{help}"
        );
        assert!(
            properties.contains(&format!("`{name}`")),
            "docs/properties.md does not name {name}"
        );
    }
    assert!(help.contains("docs/properties.md"), "{help}");
}
