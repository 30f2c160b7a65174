//! `ringside replay`: its contract (docs/cli.md).
//!
//! - exit 0 when the re-run is identical, line for line;
//! - exit 1 and the first diverging line (its number, the recorded and the re-run text) when
//!   it is not — including a trace with more or fewer events than the run;
//! - exit 2 naming the line when the trace is malformed, or incomplete: cut off in the middle
//!   of a line, or ending without its `end` footer (an interrupted run or a truncated file).
//!   The recorded prefix of an incomplete trace is still compared: a difference there is
//!   reported as a divergence first; a matching prefix is mentioned in the exit-2 message.
//!
//! Every trace under `traces/regressions/` replays, and every scenario there now passes every
//! property.

use ringside_sim::check::{Case, Mutations, Property};
use ringside_sim::replay::{replay, ReplayOutcome};
use std::path::{Path, PathBuf};

mod common;

use common::{ringside, text};

fn files_in(dir: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// A trace of `scenario` in a fresh temp dir, as lines.
fn recorded(dir: &Path, scenario: &str) -> (PathBuf, Vec<String>) {
    recorded_with(dir, scenario, &[])
}

/// A trace of `scenario` run with the extra flags `args`, as lines.
fn recorded_with(dir: &Path, scenario: &str, args: &[&str]) -> (PathBuf, Vec<String>) {
    let trace = dir.join("t.jsonl");
    let mut all = vec!["run", scenario, "--trace", trace.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    let o = ringside(&all);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", text(&o));
    let lines = std::fs::read_to_string(&trace)
        .expect("trace written")
        .lines()
        .map(String::from)
        .collect();
    (trace, lines)
}

/// `lines` written as a trace file `name`.
fn trace_of(dir: &Path, name: &str, lines: &[String]) -> String {
    write(dir, name, &(lines.join("\n") + "\n"))
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("write");
    p.to_str().expect("utf-8").to_string()
}

#[test]
fn every_shipped_scenario_replays_identically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenarios = files_in("scenarios", "toml");
    assert!(scenarios.len() >= 5);
    for s in scenarios {
        let (trace, lines) = recorded(dir.path(), s.to_str().expect("utf-8"));
        let o = ringside(&["replay", trace.to_str().expect("utf-8")]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(0), "{}: {out}", s.display());
        let events = lines.len() - 2;
        assert!(
            out.contains(&format!("identical: {events} events replayed")),
            "{}: {out}",
            s.display()
        );
    }
}

#[test]
fn an_altered_event_is_reported_at_its_line_with_both_versions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/preempt-mid-allreduce.toml");
    // change one field of event line 9 (a line that still parses)
    let mut altered = lines.clone();
    let original = altered[8].clone();
    altered[8] = original.replacen("\"t\":", "\"t\":7", 1);
    assert_ne!(altered[8], original);
    let p = trace_of(dir.path(), "altered.jsonl", &altered);
    let o = ringside(&["replay", &p]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("diverged at line 9"), "{out}");
    assert!(out.contains(&format!("expected: {}", altered[8])), "{out}");
    assert!(out.contains(&format!("actual:   {original}")), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn more_or_fewer_events_than_the_run_is_a_divergence() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/healthy-allreduce.toml");
    let n = lines.len();
    // an event missing in the middle: the run's event lands where the next recorded one is
    let mut fewer = lines.clone();
    fewer.remove(4);
    let p = trace_of(dir.path(), "fewer.jsonl", &fewer);
    let o = ringside(&["replay", &p]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("diverged at line 5"), "{}", text(&o));
    // an extra event before the footer: the run ends first
    let mut more = lines.clone();
    more.insert(n - 1, lines[n - 2].clone());
    let p = trace_of(dir.path(), "more.jsonl", &more);
    let o = ringside(&["replay", &p]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("diverged at line {n}")), "{out}");
    assert!(out.contains("(the end of the run)"), "{out}");
}

#[test]
fn a_truncated_trace_exits_2_naming_where_it_stops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/preempt-mid-allreduce.toml");
    // whole lines kept, the rest (and the footer) gone
    let p = trace_of(dir.path(), "cut.jsonl", &lines[..20]);
    let o = ringside(&["replay", &p]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("cut.jsonl:20:"), "{out}");
    assert!(out.contains("incomplete trace"), "{out}");
    assert!(out.contains("its 19 recorded events match"), "{out}");
    // every event there, only the footer missing
    let p = write(
        dir.path(),
        "nofooter.jsonl",
        &(lines[..lines.len() - 1].join("\n") + "\n"),
    );
    let o = ringside(&["replay", &p]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(&format!("nofooter.jsonl:{}:", lines.len() - 1)));
    // cut in the middle of a line
    let torn = lines[..12].join("\n") + "\n" + &lines[12][..lines[12].len() / 2];
    let p = write(dir.path(), "torn.jsonl", &torn);
    let o = ringside(&["replay", &p]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("torn.jsonl:13:"), "{out}");
    assert!(out.contains("cut off in the middle of this line"), "{out}");
    // a prefix that differs is a divergence, even when the trace is cut short
    let mut bad = lines[..20].to_vec();
    bad[5] = bad[5].replacen("\"t\":", "\"t\":9", 1);
    let p = trace_of(dir.path(), "badcut.jsonl", &bad);
    let o = ringside(&["replay", &p]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("diverged at line 6"));
    // the header alone
    let p = write(dir.path(), "header.jsonl", &(lines[0].clone() + "\n"));
    let o = ringside(&["replay", &p]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("header.jsonl:1:"), "{}", text(&o));
}

#[test]
fn malformed_traces_exit_2_naming_the_line_and_never_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/healthy-allreduce.toml");
    let n = lines.len();
    let with = |i: usize, l: &str| {
        let mut v = lines.clone();
        v[i] = l.to_string();
        v.join("\n") + "\n"
    };
    let footer_digest = lines[n - 1].replace("\"digest\":\"", "\"digest\":\"00");
    let cases: Vec<(&str, String, usize, &str)> = vec![
        (
            "unknown event",
            with(3, "{\"t\":5,\"kind\":\"no_such_event\"}"),
            4,
            "malformed event",
        ),
        ("not JSON", with(6, "garbage"), 7, "malformed event"),
        (
            "missing field",
            with(2, "{\"t\":5,\"kind\":\"deliver\"}"),
            3,
            "malformed event",
        ),
        (
            "wrong footer digest",
            with(n - 1, &footer_digest),
            n,
            "digest mismatch",
        ),
        ("empty file", String::new(), 1, "empty file"),
        (
            "not a trace",
            "{\"format\":\"csv\"}\n".into(),
            1,
            "not a ringside trace",
        ),
        (
            "bad embedded scenario",
            with(0, &lines[0].replace("\"size\":", "\"size\":0,\"x\":")),
            1,
            "scenario",
        ),
    ];
    for (what, content, line, fragment) in cases {
        let p = write(dir.path(), "bad.jsonl", &content);
        let o = ringside(&["replay", &p]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {out}");
        assert!(out.contains(&format!("bad.jsonl:{line}:")), "{what}: {out}");
        assert!(out.contains(fragment), "{what}: {out}");
        assert!(!out.contains("panicked"), "{what}: {out}");
    }
    // bytes that are not UTF-8 on an event line
    let mut bytes = (lines[..3].join("\n") + "\n").into_bytes();
    bytes.extend_from_slice(b"{\"t\":1,\"kind\":\"\xff\xfe\"}\n");
    let p = dir.path().join("binary.jsonl");
    std::fs::write(&p, bytes).expect("write");
    let o = ringside(&["replay", p.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("binary.jsonl:4:"), "{}", text(&o));
    let o = ringside(&["replay", "does/not/exist.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Failing cases found by `ringside check` land in `traces/regressions/` (a scenario and its
/// trace). Once the bug is fixed and the trace re-recorded, both stay as regression tests.
#[test]
fn every_regression_replays_and_now_passes_every_property() {
    let traces = files_in("traces/regressions", "jsonl");
    for t in &traces {
        match replay(t, Mutations::NONE) {
            Ok(ReplayOutcome::Identical { .. }) => {}
            other => panic!(
                "{}: {other:?}\nre-record it with `ringside run {} --trace {}`",
                t.display(),
                t.with_extension("toml").display(),
                t.display()
            ),
        }
    }
    for s in files_in("traces/regressions", "toml") {
        let scenario = ringside_sim::scenario::load_with(&s, &ringside_sim::engine::SUPPORT)
            .unwrap_or_else(|e| panic!("{e}"));
        let case = Case::new(scenario);
        let run = case.run();
        for p in Property::all() {
            if let Err(v) = p.check(&case, &run) {
                panic!("{}: {v}", s.display());
            }
        }
        assert!(
            s.with_extension("jsonl").exists(),
            "{}: its trace is kept next to it",
            s.display()
        );
    }
}

/// Every kind of event the shipped scenarios write is described in docs/trace-format.md.
#[test]
fn the_trace_format_doc_describes_every_event_kind_written() {
    let format = std::fs::read_to_string(common::root().join("docs/trace-format.md"))
        .expect("docs/trace-format.md");
    let mut kinds = std::collections::BTreeSet::new();
    for path in common::shipped_files() {
        let s = ringside_sim::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut rec = ringside_sim::trace::VecRecorder::default();
        ringside_sim::run::run_events(&s, &ringside_sim::run::RunOptions::default(), &mut rec);
        kinds.extend(rec.events.iter().map(|(_, ev)| ev.kind()));
    }
    assert!(kinds.len() >= 25, "{kinds:?}");
    for kind in kinds {
        assert!(
            format.contains(&format!("| `{kind}`")) || format.contains(&format!(", `{kind}`")),
            "docs/trace-format.md does not describe `{kind}` events"
        );
    }
}

#[test]
fn a_run_its_event_budget_ended_replays_to_the_same_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let healthy = "scenarios/healthy-allreduce.toml";
    let (trace, lines) = recorded_with(dir.path(), healthy, &["--max-events", "30"]);
    let trace = trace.to_str().expect("utf-8");
    assert!(lines[0].contains(r#""max_events":30"#), "{}", lines[0]);
    let footer = lines.last().expect("a footer");
    assert!(
        footer.contains(r#""outcome":"timed_out""#) && footer.contains(r#""budget":"events""#),
        "{footer}"
    );
    let o = ringside(&["replay", trace]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("identical"), "{}", text(&o));

    // a budget above the default: the run goes on past the default's end, and so does replay
    let (trace, lines) = recorded_with(dir.path(), healthy, &["--max-events", "30000000"]);
    assert!(
        lines[0].contains(r#""max_events":30000000"#),
        "{}",
        lines[0]
    );
    assert!(!lines.last().expect("footer").contains("budget"));
    let o = ringside(&["replay", trace.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // the default budget is not written: a replay applies it anyway
    let (_, lines) = recorded_with(dir.path(), healthy, &[]);
    assert!(!lines[0].contains("max_events"), "{}", lines[0]);
}

#[test]
fn a_run_its_wall_clock_budget_ended_replays_as_far_as_it_goes() {
    let dir = tempfile::tempdir().expect("temp dir");
    // a ring of 1,024 ranks takes far longer than 20ms on any machine
    let ring = write(
        dir.path(),
        "ring.toml",
        "name = \"ring\"\n[world]\nsize = 1024\n[workload]\nelements = 1024\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n",
    );
    for level in ["full", "calls"] {
        let (trace, lines) = recorded_with(
            dir.path(),
            &ring,
            &["--max-wall", "20ms", "--trace-level", level],
        );
        let footer = lines.last().expect("a footer");
        assert!(footer.contains(r#""budget":"wall_clock""#), "{footer}");
        let o = ringside(&["replay", trace.to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(0), "{level}: {}", text(&o));
        let out = text(&o);
        assert!(
            out.contains("identical as far as it goes") && out.contains("--max-wall"),
            "{level}: {out}"
        );
        // the diagnosis line is the one thing not compared: another event in its place is a
        // divergence there
        let mut forged = lines.clone();
        let n = forged.len();
        forged[n - 2] = forged[n - 3].clone();
        let o = ringside(&["replay", &trace_of(dir.path(), "forged.jsonl", &forged)]);
        assert_eq!(o.status.code(), Some(1), "{level}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("diverged at line {}", n - 1)),
            "{level}: {}",
            text(&o)
        );
    }
}

#[test]
fn a_footer_that_claims_a_wall_clock_budget_on_a_diverging_run_still_diverges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/healthy-allreduce.toml");
    let mut forged = lines.clone();
    let n = forged.len();
    // an event in the middle changed: not the diagnosis, so a divergence whatever the footer
    forged[n / 2] = forged[n / 2].replacen("\"t\":", "\"t\":9", 1);
    forged[n - 1] = forged[n - 1].replace("}", r#","budget":"wall_clock"}"#);
    let o = ringside(&["replay", &trace_of(dir.path(), "forged.jsonl", &forged)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("diverged"), "{}", text(&o));
}

#[test]
fn a_header_with_a_bad_event_budget_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, lines) = recorded(dir.path(), "scenarios/healthy-allreduce.toml");
    for bad in ["0", "-5", "\"many\"", "1.5"] {
        let mut forged = lines.clone();
        forged[0] = forged[0].replacen('{', &format!("{{\"max_events\":{bad},"), 1);
        let path = trace_of(dir.path(), "bad.jsonl", &forged);
        for cmd in ["replay", "explain"] {
            let o = ringside(&[cmd, &path]);
            assert_eq!(o.status.code(), Some(2), "{cmd} {bad}: {}", text(&o));
            assert!(
                text(&o).contains("bad.jsonl:1:") && text(&o).contains("`max_events`"),
                "{cmd} {bad}: {}",
                text(&o)
            );
        }
    }
}
