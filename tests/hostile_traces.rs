//! Hostile traces: every file of tests/data/hostile/traces/ through `explain`, `replay` and
//! `export --perfetto`, each with the exit code and the message it must give; none panics and
//! none writes or holds more than its input warrants. The files are written by
//! `write_the_corpus` below (`cargo test --test hostile_traces -- --ignored`), from a run of
//! `scenarios/preempt-mid-allreduce.toml` edited as a crash, a bug or an attacker would.

mod common;

use common::{ringside, root, text};
use ringside_sim::run::{run_events, RunOptions};
use ringside_sim::scenario::load;
use ringside_sim::trace::{parse_event_line, Digest, TraceWriter};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    root().join("tests/data/hostile/traces")
}

/// What one command must do with one file: its exit code and a fragment of its output.
struct Want {
    args: &'static [&'static str],
    exit: i32,
    contains: &'static str,
}

const fn want(args: &'static [&'static str], exit: i32, contains: &'static str) -> Want {
    Want {
        args,
        exit,
        contains,
    }
}

const EXPLAIN: &[&str] = &["explain"];
/// `explain --at 0ns` diagnoses the state before the first event, and still reads the trace to
/// its end and checks it.
const EXPLAIN_AT_0: &[&str] = &["explain", "--at", "0ns"];
const REPLAY: &[&str] = &["replay"];
const PERFETTO: &[&str] = &["export", "--perfetto", "-"];

/// Runs each command on `file` (placed after the subcommand) and checks what it must do.
fn check(file: &str, wants: &[Want]) {
    let path = corpus().join(file);
    for w in wants {
        let mut args: Vec<String> = vec![w.args[0].to_string(), path.display().to_string()];
        args.extend(w.args[1..].iter().map(|a| a.to_string()));
        let o = ringside(&args);
        let out = text(&o);
        assert!(!out.contains("panicked"), "{file} {args:?}:\n{out}");
        assert_eq!(o.status.code(), Some(w.exit), "{file} {args:?}:\n{out}");
        assert!(
            out.contains(w.contains),
            "{file} {args:?}: want {:?} in:\n{out}",
            w.contains
        );
        // an export is sized by the events it holds, not by the world its header claims
        assert!(
            o.stdout.len() < 64 << 10,
            "{file} {args:?}: {} bytes out",
            o.stdout.len()
        );
        if w.exit == 2 {
            // an export to standard output may have streamed a part before the error
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.starts_with("error: "), "{file} {args:?}:\n{out}");
            assert!(
                err.contains(file),
                "{file} {args:?}: names the file:\n{out}"
            );
        }
    }
}

macro_rules! corpus_tests {
    ($($test:ident => $file:literal: [$($w:expr),* $(,)?],)*) => {
        $(
            #[test]
            fn $test() {
                check($file, &[$($w),*]);
            }
        )*

        /// Every file of the corpus has its test above.
        #[test]
        fn every_hostile_trace_is_a_test() {
            let listed = [$($file),*];
            for e in std::fs::read_dir(corpus()).expect("the corpus") {
                let f = e.expect("an entry").file_name().to_string_lossy().into_owned();
                assert!(listed.contains(&f.as_str()), "{f} has no test in tests/hostile_traces.rs");
            }
        }
    };
}

const INCOMPLETE_NUL: &str = "incomplete trace: it ends in 4096 NUL bytes";
const NUL_LINE: &str = ":2: 4096 NUL bytes where an event should be";

corpus_tests! {
    a_header_then_nul_bytes_is_incomplete => "header-then-nul.jsonl": [
        want(EXPLAIN, 0, INCOMPLETE_NUL),
        want(&["explain", "--json"], 0, "\"complete\": false"),
        want(REPLAY, 2, ":2: incomplete trace: it is cut off in the middle of this line"),
        want(PERFETTO, 0, INCOMPLETE_NUL),
    ],
    nul_bytes_before_the_events_are_named => "nul-bytes-then-events.jsonl": [
        want(EXPLAIN, 2, NUL_LINE),
        want(REPLAY, 2, NUL_LINE),
        want(PERFETTO, 2, NUL_LINE),
    ],
    time_at_u64_max_overflows_nothing => "time-u64-max.jsonl": [
        want(EXPLAIN, 0, "at 18446744073709.551ms:"),
        want(&["explain", "--json"], 0, "\"at_ns\": 18446744073709551615"),
        want(&["explain", "--dot"], 0, "digraph"),
        want(&["explain", "--at", "1000000h"], 0, "at 3600000000000.000ms:"),
        want(REPLAY, 1, "diverged at line"),
        want(PERFETTO, 0, "\"ts\":1.844674407370955e+16"),
    ],
    time_that_goes_backwards_is_refused => "time-goes-backwards.jsonl": [
        want(EXPLAIN, 2, ":20: time goes backwards: this event is at t = 5 ns"),
        want(EXPLAIN_AT_0, 2, ":20: time goes backwards: this event is at t = 5 ns"),
        want(REPLAY, 2, ":20: time goes backwards"),
        want(PERFETTO, 2, ":20: time goes backwards"),
    ],
    a_world_of_a_million_in_a_three_rank_trace_is_bounded => "world-of-a-million.jsonl": [
        want(EXPLAIN, 0, "root cause: rank 2 was preempted"),
        want(REPLAY, 2, ":1: the embedded scenario is not re-run: this run would need about"),
        want(PERFETTO, 0, "\"rank 2\""),
    ],
    a_rank_beyond_the_world_is_refused => "rank-beyond-the-world.jsonl": [
        want(EXPLAIN, 2, ":5: a `process_start` event whose `rank` is 7, but the header's \
                          scenario has 3 ranks (0 to 2)"),
        want(REPLAY, 2, ":5: a `process_start` event whose `rank` is 7"),
        want(PERFETTO, 2, ":5: a `process_start` event whose `rank` is 7"),
    ],
    a_message_to_a_rank_beyond_the_world_is_refused => "send-beyond-the-world.jsonl": [
        want(EXPLAIN, 2, ":13: a `send` event whose `to` is 3, but the header's scenario has \
                          3 ranks (0 to 2)"),
        want(REPLAY, 2, ":13: a `send` event whose `to` is 3"),
        want(PERFETTO, 2, ":13: a `send` event whose `to` is 3"),
    ],
    a_rank_of_u32_max_is_refused => "rank-u32-max.jsonl": [
        want(EXPLAIN, 2, "whose `rank` is 4294967295"),
        want(PERFETTO, 2, "whose `rank` is 4294967295"),
    ],
    a_version_as_a_string_must_be_a_number => "version-a-string.jsonl": [
        want(EXPLAIN, 2, ":1: the header's `version` must be a number, not \"1\""),
        want(REPLAY, 2, ":1: the header's `version` must be a number"),
        want(PERFETTO, 2, ":1: the header's `version` must be a number"),
    ],
    a_wrong_format_is_not_a_trace => "wrong-format.jsonl": [
        want(EXPLAIN, 2, ":1: not a ringside trace: header `format` is \"ringside-scenario\""),
        want(REPLAY, 2, ":1: not a ringside trace"),
        want(PERFETTO, 2, ":1: not a ringside trace"),
    ],
    a_footer_that_miscounts_is_refused => "footer-count-mismatch.jsonl": [
        want(EXPLAIN, 2, ":54: the footer counts 53 event lines but the trace has 52"),
        want(EXPLAIN_AT_0, 2, ":54: the footer counts 53 event lines but the trace has 52"),
        want(REPLAY, 2, ":54: the footer counts 53"),
        want(PERFETTO, 2, ":54: the footer counts 53"),
    ],
    a_footer_with_another_digest_is_refused => "footer-digest-mismatch.jsonl": [
        want(EXPLAIN, 2, ":54: digest mismatch: the footer says 0000000000000000"),
        want(EXPLAIN_AT_0, 2, ":54: digest mismatch: the footer says 0000000000000000"),
        want(REPLAY, 2, "0000000000000000"),
        want(PERFETTO, 2, ":54: digest mismatch"),
    ],
}

/// `explain --at` of a trace torn after the time asked for says it is incomplete, in words
/// and in `--json`, as `explain` to the end does.
#[test]
fn explain_at_a_time_says_the_trace_is_torn_after_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let whole =
        std::fs::read_to_string(corpus().join("footer-count-mismatch.jsonl")).expect("a trace");
    let lines: Vec<&str> = whole.lines().collect();
    // without the footer, and the last event cut in the middle
    let last = lines[lines.len() - 2];
    let torn = format!(
        "{}\n{}",
        lines[..lines.len() - 2].join("\n"),
        &last[..last.len() / 2]
    );
    let path = dir.path().join("torn.jsonl");
    std::fs::write(&path, torn).expect("written");
    let p = path.display().to_string();
    let o = ringside(&["explain", &p, "--at", "1ms", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = common::json(&o);
    assert_eq!(v["complete"], false, "{v}");
    let o = ringside(&["explain", &p, "--at", "1ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("incomplete trace") && text(&o).contains("how the run ended is unknown"),
        "{}",
        text(&o)
    );
}

/// A line longer than the 64 MiB limit (as `/dev/zero` would give) is refused by name, in
/// bounded memory. Written here rather than committed.
#[test]
fn an_endless_line_is_refused_by_its_length() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let header = std::fs::read(corpus().join("header-then-nul.jsonl")).expect("the corpus");
    let header = &header[..=header.iter().position(|&b| b == b'\n').expect("a header")];
    for (name, fill) in [("zeros.jsonl", 0u8), ("x.jsonl", b'x')] {
        let path = dir.path().join(name);
        let mut bytes = header.to_vec();
        bytes.resize(header.len() + (65 << 20), fill);
        std::fs::write(&path, &bytes).expect("written");
        for args in [EXPLAIN, REPLAY, PERFETTO] {
            let mut a = vec![args[0].to_string(), path.display().to_string()];
            a.extend(args[1..].iter().map(|s| s.to_string()));
            let o = ringside(&a);
            let out = text(&o);
            assert_eq!(o.status.code(), Some(2), "{name} {a:?}:\n{out}");
            assert!(
                out.contains(":2: line longer than 64 MiB"),
                "{name} {a:?}:\n{out}"
            );
        }
    }
}

/// `export --fr` writes a dump per rank the trace shows, whatever world its header claims,
/// and says when the trace has no footer.
#[test]
fn flight_recorder_export_is_bounded_and_says_when_incomplete() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().join("million");
    let path = corpus().join("world-of-a-million.jsonl");
    let o = ringside(&[
        "export",
        path.to_str().unwrap(),
        "--fr",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(std::fs::read_dir(&out).expect("dumps").count(), 2);
    let out = dir.path().join("nul");
    let path = corpus().join("header-then-nul.jsonl");
    let o = ringside(&[
        "export",
        path.to_str().unwrap(),
        "--fr",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains(INCOMPLETE_NUL), "{}", text(&o));
    let path = corpus().join("time-u64-max.jsonl");
    let o = ringside(&[
        "export",
        path.to_str().unwrap(),
        "--fr",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// Writes the corpus from a fresh run: `cargo test --test hostile_traces -- --ignored`.
#[test]
#[ignore = "writes tests/data/hostile/traces/"]
fn write_the_corpus() {
    let scenario = load(&root().join("scenarios/preempt-mid-allreduce.toml")).expect("scenario");
    let mut bytes = Vec::new();
    let mut writer = TraceWriter::new(&mut bytes, &scenario, 1).expect("a writer");
    let (result, _, _) = run_events(&scenario, &RunOptions::seeded(1), &mut writer);
    writer.finish(result.outcome).expect("a footer");
    let text = String::from_utf8(bytes).expect("UTF-8");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let (header, events, footer) = (
        &lines[0],
        &lines[1..lines.len() - 1],
        &lines[lines.len() - 1],
    );
    assert_eq!(events.len(), 52, "the line numbers below");
    std::fs::create_dir_all(corpus()).expect("the corpus directory");
    let put = |name: &str, bytes: Vec<u8>| {
        std::fs::write(corpus().join(name), bytes).expect("written");
    };
    let join = |h: &str, evs: &[String], f: Option<&str>| {
        let mut s = format!("{h}\n");
        for e in evs {
            s.push_str(e);
            s.push('\n');
        }
        if let Some(f) = f {
            s.push_str(f);
            s.push('\n');
        }
        s.into_bytes()
    };
    // the footer that the events as edited hash to
    let sealed = |evs: &[String]| {
        let mut d = Digest::new();
        for e in evs {
            let (t, ev) = parse_event_line(e).expect("an event");
            d.update(t, &ev);
        }
        let mut f: serde_json::Value = serde_json::from_str(footer).expect("the footer");
        f["digest"] = d.hex().into();
        serde_json::to_string(&f).expect("JSON")
    };
    let set_t = |line: &str, t: u64| {
        let rest = &line[line.find(',').expect("a `t`")..];
        format!("{{\"t\":{t}{rest}")
    };
    let mut nul = format!("{header}\n").into_bytes();
    nul.resize(nul.len() + 4096, 0);
    put("header-then-nul.jsonl", nul.clone());
    nul.push(b'\n');
    nul.extend(join(header, events, Some(footer)).split_off(header.len() + 1));
    put("nul-bytes-then-events.jsonl", nul);
    // every event from the watchdog's on at the last instant time can represent
    let late: Vec<String> = events
        .iter()
        .map(|e| {
            if e.contains("\"kind\":\"timer\"")
                || e.contains("\"kind\":\"abort\"")
                || e.contains("\"kind\":\"flight_record\"")
                || e.contains("\"kind\":\"diagnosis\"")
            {
                set_t(e, u64::MAX)
            } else {
                e.clone()
            }
        })
        .collect();
    put(
        "time-u64-max.jsonl",
        join(header, &late, Some(&sealed(&late))),
    );
    let mut back = events.to_vec();
    back[18] = set_t(&back[18], 5);
    put(
        "time-goes-backwards.jsonl",
        join(header, &back, Some(&sealed(&back))),
    );
    let million = header.replace("\"size\":3", "\"size\":1000000");
    assert_ne!(&million, header);
    put(
        "world-of-a-million.jsonl",
        join(&million, events, Some(footer)),
    );
    let mut beyond = events.to_vec();
    assert!(beyond[3].contains("\"kind\":\"process_start\""));
    beyond[3] = beyond[3].replace("\"rank\":1", "\"rank\":7");
    put(
        "rank-beyond-the-world.jsonl",
        join(header, &beyond, Some(&sealed(&beyond))),
    );
    let mut max = events.to_vec();
    max[3] = max[3].replace("\"rank\":1", "\"rank\":4294967295");
    put(
        "rank-u32-max.jsonl",
        join(header, &max, Some(&sealed(&max))),
    );
    let mut to = events.to_vec();
    assert!(to[11].contains("\"kind\":\"send\""), "{}", to[11]);
    to[11] = to[11].replace("\"to\":1", "\"to\":3");
    put(
        "send-beyond-the-world.jsonl",
        join(header, &to, Some(&sealed(&to))),
    );
    put(
        "version-a-string.jsonl",
        join(
            &header.replace("\"version\":2", "\"version\":\"1\""),
            events,
            Some(footer),
        ),
    );
    put(
        "wrong-format.jsonl",
        join(
            &header.replace("\"ringside-trace\"", "\"ringside-scenario\""),
            events,
            Some(footer),
        ),
    );
    put(
        "footer-count-mismatch.jsonl",
        join(
            header,
            events,
            Some(&footer.replace("\"events\":52", "\"events\":53")),
        ),
    );
    let mut f: serde_json::Value = serde_json::from_str(footer).expect("the footer");
    f["digest"] = "0000000000000000".into();
    put(
        "footer-digest-mismatch.jsonl",
        join(header, events, Some(&f.to_string())),
    );
}
