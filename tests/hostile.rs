//! Hostile input: every case of the corpus in tests/data/hostile/ either exits 2 with a precise
//! message or runs within its budgets to the right outcome; the CLI refuses what would check
//! nothing or lose its findings; and a proptest harness feeds the scenario reader mutated
//! scenarios (`RINGSIDE_FUZZ_CASES=N` for more than CI's 256), none of which may panic, hang past
//! its event budget or report an error without a line.
//!
//! A corpus file says what it expects in its leading comments:
//! `# exit: N`, any number of `# contains: TEXT` (in standard output or error), and
//! `# args: ...` (extra flags for `ringside run`).

mod common;

use common::{json, ringside, root, text};
use proptest::prelude::*;
use ringside_sim::budget::{estimate, Limits};
use ringside_sim::engine::SUPPORT;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{parse_with, Outcome};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    root().join("tests/data/hostile")
}

/// Runs one corpus file as its comments say, and checks what they expect.
fn hostile(name: &str) {
    let path = corpus().join(name);
    let source = std::fs::read_to_string(&path).expect("a corpus file");
    let mut exit = None;
    let mut contains = Vec::new();
    let mut args = vec!["run".to_string(), path.display().to_string()];
    for line in source.lines().take_while(|l| l.starts_with('#')) {
        if let Some(v) = line.strip_prefix("# exit:") {
            exit = Some(v.trim().parse::<i32>().expect("an exit code"));
        } else if let Some(v) = line.strip_prefix("# contains:") {
            contains.push(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("# args:") {
            args.extend(v.split_whitespace().map(str::to_string));
        }
    }
    let exit = exit.unwrap_or_else(|| panic!("{name} says `# exit: N`"));
    let o = ringside(&args);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(exit), "{name}:\n{out}");
    assert!(!out.contains("panicked"), "{name}:\n{out}");
    for c in &contains {
        assert!(out.contains(c.as_str()), "{name} says `{c}`:\n{out}");
    }
    if exit == 2 {
        // one line: `error: FILE[:LINE][: KEY]: message`
        assert!(out.starts_with("error: "), "{name}:\n{out}");
        assert_eq!(
            out.trim_end().lines().count(),
            1,
            "{name}: one line:\n{out}"
        );
        assert!(
            !out.chars().any(|c| c.is_control() && c != '\n'),
            "{name}: nothing a terminal acts on:\n{out:?}"
        );
        assert!(
            out.contains(name),
            "{name}: the error names the file:\n{out}"
        );
    }
}

macro_rules! corpus_tests {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                hostile($file);
            }
        )*

        /// Every file of the corpus has its test above.
        #[test]
        fn every_corpus_file_is_a_test() {
            let listed = [$($file),*];
            let mut files: Vec<String> = std::fs::read_dir(corpus())
                .expect("the corpus")
                .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
                .filter(|f| f.ends_with(".toml"))
                .collect();
            files.sort();
            for f in &files {
                assert!(listed.contains(&f.as_str()), "{f} has no test in tests/hostile.rs");
            }
        }
    };
}

corpus_tests! {
    a_compute_past_the_longest_duration_is_refused => "compute-5000000h.toml",
    a_timeout_of_u64_max_nanoseconds_is_refused => "timeout-u64-max.toml",
    a_restart_after_u64_max_nanoseconds_is_refused => "restart-after-u64-max.toml",
    a_registry_step_past_the_longest_duration_is_refused => "registry-step-5000000h.toml",
    time_past_its_last_instant_ends_the_run_as_timed_out => "compute-past-the-end-of-time.toml",
    a_link_of_three_ranks_is_refused => "link-three-ranks.toml",
    a_link_with_junk_is_refused => "link-junk.toml",
    a_world_over_u32_says_the_range => "world-over-u32.toml",
    an_integer_beyond_i64_is_too_large => "iterations-beyond-i64.toml",
    iterations_near_u32_max_are_refused => "iterations-u32-max.toml",
    a_world_of_a_million_ranks_is_refused_for_its_memory => "world-of-a-million.toml",
    direct_allreduce_on_100k_ranks_is_refused_for_its_memory => "direct-on-100k-ranks.toml",
    the_most_elements_on_64_ranks_are_refused_for_their_memory => "most-elements-on-64-ranks.toml",
    a_mesh_of_19_dimensions_is_refused => "mesh-of-19-dimensions.toml",
    heartbeats_every_nanosecond_run_out_of_events => "heartbeats-every-nanosecond.toml",
    a_permanent_partition_under_a_huge_timeout_ends_at_once => "partition-under-a-huge-timeout.toml",
    a_quorum_lost_by_two_deaths_names_both => "quorum-lost-by-two.toml",
    a_duplicate_key_after_an_inline_array_names_its_path => "duplicate-after-array.toml",
    a_duplicate_key_in_an_inline_table_names_its_path => "duplicate-in-inline-table.toml",
    a_duplicate_key_in_an_array_of_tables_names_its_path => "duplicate-op-key.toml",
    a_pipeline_of_many_microbatches_is_refused_for_its_memory => "pipeline-of-100000-microbatches.toml",
    p2p_in_a_large_group_is_refused_for_its_memory => "p2p-in-a-world-of-4096.toml",
    a_large_elastic_group_is_refused_for_its_memory => "elastic-world-of-8192.toml",
    the_wall_clock_budget_ends_a_run_of_slow_events => "huge-buffers-under-a-wall-clock-budget.toml",
    a_run_under_the_longest_timeout_completes => "one-rank-under-the-longest-timeout.toml",
    a_mismatch_in_a_huge_pipeline_is_refused_at_once =>
        "pipeline-of-u32-max-microbatches-with-a-mismatch.toml",
    a_date_for_an_op_names_the_type_and_the_ops => "op-a-date.toml",
    an_integer_for_an_op_names_the_type_and_the_ops => "op-an-integer.toml",
    an_empty_table_for_an_outcome_names_the_outcomes => "outcome-an-empty-table.toml",
    a_multi_line_string_quoted_by_an_error_stays_on_its_line =>
        "a-multi-line-string-in-an-error.toml",
    a_run_that_outgrows_its_memory_limit_ends_as_budget =>
        "heartbeats-every-nanosecond-under-100mb.toml",
    a_healthy_ring_of_2048_ranks_completes_with_the_default_budget => "ring-of-2048-ranks.toml",
}

/// `--max-memory` bounds what a run grows to, not only what it needs at the start: under an
/// address-space cap of 1 GB, a run admitted under `--max-memory 100MB` whose queue grows
/// with virtual time ends as `budget: memory` (it grew to 3 GB before, and aborted under the
/// cap), and `replay` stops its re-run at the same event.
#[test]
fn the_memory_limit_bounds_what_a_run_grows_to() {
    let path = corpus().join("heartbeats-every-nanosecond-under-100mb.toml");
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("t.jsonl.zst");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000; exec \"$0\" run \"$1\" --max-memory 100MB --json --trace \"$2\"")
        .arg(common::bin())
        .arg(&path)
        .arg(&trace)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["outcome"], "timed_out", "{v}");
    assert_eq!(v["budget"], "memory", "{v}");
    let o = ringside(&["replay", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("identical"), "{}", text(&o));
}

/// `check` of a corpus file with `cases` cases, its failing cases kept in a temporary
/// directory.
fn check_corpus_file(name: &str, cases: &str) -> std::process::Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = corpus().join(name);
    ringside(&[
        "check",
        path.to_str().unwrap(),
        "--cases",
        cases,
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ])
}

/// `check`'s bounds (how long a run may take, whether its faults heal) add and multiply the
/// longest durations: they saturate instead of wrapping, which the overflow-checked build
/// of the tests would stop on.
#[test]
fn check_bounds_saturate_on_the_longest_durations() {
    let o = check_corpus_file("compute-past-the-end-of-time.toml", "3");
    assert!(
        matches!(o.status.code(), Some(0 | 1)) && !text(&o).contains("panicked"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_run_ended_by_a_budget_says_which_in_json() {
    let path = corpus().join("compute-past-the-end-of-time.toml");
    let v = json(&ringside(&["run", path.to_str().unwrap(), "--json"]));
    assert_eq!(v["outcome"], "timed_out");
    assert_eq!(v["budget"], "virtual_time");
    let path = corpus().join("heartbeats-every-nanosecond.toml");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--json",
        "--max-events",
        "1000",
    ];
    let v = json(&ringside(&args));
    assert_eq!(v["outcome"], "timed_out");
    assert_eq!(v["budget"], "events");
    // a run that ends on its own names no budget
    let v = json(&ringside(&[
        "run",
        "scenarios/healthy-allreduce.toml",
        "--json",
    ]));
    assert!(v.get("budget").is_none(), "{v}");
}

#[test]
fn the_wall_clock_budget_ends_a_run_as_timed_out() {
    let path = corpus().join("heartbeats-every-nanosecond.toml");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--json",
        "--max-events",
        "18446744073709551615",
        "--max-wall",
        "200ms",
    ];
    let v = json(&ringside(&args));
    assert_eq!(v["outcome"], "timed_out");
    assert_eq!(v["budget"], "wall_clock");
}

#[test]
fn the_memory_limit_can_be_raised() {
    let path = corpus().join("most-elements-on-64-ranks.toml");
    let o = ringside(&["run", path.to_str().unwrap(), "--max-memory", "1GB"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("more than the limit of 1.0 GB"),
        "{}",
        text(&o)
    );
    for bad in ["--max-memory=lots", "--max-events=0", "--max-wall=0s"] {
        let o = ringside(&["run", "scenarios/healthy-allreduce.toml", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
    }
}

#[test]
fn check_refuses_to_check_nothing() {
    let o = ringside(&["check", "--cases", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--cases 0 checks nothing"),
        "{}",
        text(&o)
    );
    let o = common::cmd()
        .args(["check"])
        .env("RINGSIDE_CHECK_CASES", "0")
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("RINGSIDE_CHECK_CASES=0"), "{}", text(&o));
    let o = ringside(&["check", "--cases", "1", "--shard", "1/2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("holds no case"), "{}", text(&o));
}

/// `check` that checked nothing is not green: a time budget that runs out before the first
/// case, or cases that all reach their event budget, exit 2 saying what went unchecked and
/// why; `--json` says `"passed": false`.
#[test]
fn check_that_checked_nothing_fails() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    for (args, why) in [
        (
            vec!["--cases", "5", "--time", "1ns"],
            "the time budget ran out (--time) after 0 of the 5 cases: raise it to run one",
        ),
        (
            vec!["--cases", "2", "--max-events", "1"],
            "2 of the 2 cases reached the event budget (--max-events 1) and went unchecked",
        ),
    ] {
        let mut a = vec!["check", "--quiet", "--out", &out];
        a.extend(&args);
        let o = ringside(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("error: check checked nothing: {why}")),
            "{args:?}: {}",
            text(&o)
        );
        a.push("--json");
        let o = ringside(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let v = json(&o);
        assert_eq!(v["passed"], false, "{v}");
        assert_eq!(v["checks"], 0, "{v}");
        assert!(
            v["unchecked"][0].as_str().is_some_and(|u| u.contains(why)),
            "{v}"
        );
    }
}

#[test]
fn check_counts_a_huge_shard_without_wrapping_and_stops_on_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let args = [
        "check",
        "--cases",
        "18446744073709551615",
        "--shard",
        "0/2",
        "--time",
        "1s",
        "--out",
        &out,
    ];
    let o = ringside(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("the time budget ran out"), "{}", text(&o));
}

#[test]
fn check_refuses_an_out_directory_it_cannot_write_before_the_first_case() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("a file");
    let out = file.join("regressions");
    let o = ringside(&[
        "check",
        "--cases",
        "1",
        "--mutation",
        "ring-wrong-chunk",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("failing cases could not be written there"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("replay it with"), "{}", text(&o));
}

#[test]
fn check_lays_faults_within_the_longest_duration_on_the_longest_timeout() {
    let o = check_corpus_file("one-rank-under-the-longest-timeout.toml", "64");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("64 cases passed"), "{}", text(&o));
}

#[test]
fn a_size_range_without_units_lists_every_unit_accepted() {
    let o = ringside(&[
        "sweep",
        "scenarios/healthy-allreduce.toml",
        "--bytes",
        "0..1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.starts_with("error: --bytes: `0` needs a unit"), "{out}");
    assert_eq!(out.trim_end().lines().count(), 1, "{out}");
    for unit in ["B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"] {
        assert!(out.contains(&format!(" {unit}")), "{unit}: {out}");
    }
}

#[test]
fn a_sweep_that_outgrows_the_watchdog_says_so() {
    let o = ringside(&[
        "sweep",
        "scenarios/healthy-allreduce.toml",
        "--bytes",
        "1B..16TiB",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the watchdog fired on rank")
            && text(&o).contains("longer than group.timeout (30s)"),
        "{}",
        text(&o)
    );
}

/// Values a hostile user writes where a scenario wants something sensible.
const HOSTILE_VALUES: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999",
    "1e308",
    "nan",
    "\"18446744073709551615ns\"",
    "\"1000000h\"",
    "\"5000000h\"",
    "\"1ns\"",
    "\"0s\"",
    "\"16TiB\"",
    "\"1B/s\"",
    "\"\"",
    "\"x\"",
    "[]",
    "[0, 1, 2]",
    "[0, 1, 99, \"x\"]",
    "[[0], [1, 2], []]",
    "{}",
    "{ a = 1 }",
    "true",
    "\"\u{1F600}\"",
];

/// The shipped scenarios and the corpus, as text.
fn seeds() -> Vec<String> {
    let mut v = Vec::new();
    for dir in [root().join("scenarios"), corpus()] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("a directory")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        v.extend(
            files
                .iter()
                .map(|f| std::fs::read_to_string(f).expect("text")),
        );
    }
    v
}

/// One edit of a scenario's text.
#[derive(Clone, Debug)]
enum Edit {
    /// The value of line `line` (if it is `key = value`) becomes `value`.
    Value { line: usize, value: &'static str },
    /// Line `line` is written twice.
    Duplicate { line: usize },
    /// Line `line` is removed.
    Remove { line: usize },
    /// `text` is inserted before line `line`.
    Insert { line: usize, text: String },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), proptest::sample::select(HOSTILE_VALUES))
            .prop_map(|(line, value)| Edit::Value { line, value }),
        1 => any::<usize>().prop_map(|line| Edit::Duplicate { line }),
        1 => any::<usize>().prop_map(|line| Edit::Remove { line }),
        1 => (any::<usize>(), "[ -~\n]{0,24}").prop_map(|(line, text)| Edit::Insert { line, text }),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for e in edits {
        if lines.is_empty() {
            break;
        }
        match e {
            Edit::Value { line, value } => {
                let i = line % lines.len();
                if let Some((key, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{key}= {value}");
                }
            }
            Edit::Duplicate { line } => {
                let i = line % lines.len();
                lines.insert(i, lines[i].clone());
            }
            Edit::Remove { line } => {
                lines.remove(line % lines.len());
            }
            Edit::Insert { line, text } => lines.insert(line % (lines.len() + 1), text.clone()),
        }
    }
    lines.join("\n")
}

fn fuzz_cases() -> u32 {
    std::env::var("RINGSIDE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: fuzz_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Mutated scenarios: the reader never panics, every error has a line, and a scenario it
    /// accepts runs to an end within a small event budget without panicking.
    #[test]
    fn the_scenario_reader_never_panics_and_every_run_ends(
        seed in 0usize..1000,
        edits in proptest::collection::vec(edit(), 1..4),
    ) {
        let seeds = seeds();
        let text = apply(&seeds[seed % seeds.len()], &edits);
        match parse_with(&text, "fuzz.toml", &SUPPORT) {
            Err(e) => prop_assert!(e.line > 0, "an error without a line: {e}\n{text}"),
            Ok(s) => {
                if estimate(&s).total < 64 << 20 && s.world.size <= 16 {
                    let opts = RunOptions {
                        limits: Limits { events: Some(100_000), ..Limits::default() },
                        ..RunOptions::default()
                    };
                    let out = run(&s, &opts).expect("a run without a trace file");
                    let o = out.report.outcome;
                    prop_assert!(
                        o != Outcome::TimedOut
                            || out.report.budget.is_some()
                            || s.time_limit.is_some(),
                        "timed out with no budget nor time limit:\n{text}"
                    );
                }
            }
        }
    }
}

/// `check` and `sweep` run a given scenario many times: they refuse one estimated past the
/// memory limit as `run` does, before any run, naming the file, and the line and key of what
/// drives the estimate.
#[test]
fn check_and_sweep_refuse_a_scenario_past_the_memory_limit() {
    for (name, at) in [
        ("most-elements-on-64-ranks.toml", ":15: workload.elements: "),
        ("elastic-world-of-8192.toml", ":8: world.size: "),
        (
            "pipeline-of-100000-microbatches.toml",
            ":16: workload.pipeline.microbatches: ",
        ),
    ] {
        let path = corpus().join(name);
        let p = path.to_str().unwrap();
        for args in [
            vec!["run", p, "--quiet", "--max-memory", "100MB"],
            vec![
                "check",
                p,
                "--cases",
                "2",
                "--quiet",
                "--max-memory",
                "100MB",
            ],
            vec![
                "sweep",
                p,
                "--bytes",
                "1KiB..2KiB",
                "--quiet",
                "--max-memory",
                "100MB",
            ],
        ] {
            let o = ringside(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
            assert!(
                text(&o).contains(&format!("{name}{at}this run would need about"))
                    && text(&o).contains("more than the limit of 100.0 MB"),
                "{args:?}: {}",
                text(&o)
            );
        }
    }
}

/// `check` keeps each case's trace in memory: a case whose run reaches the per-case event
/// budget is counted as too long and left unchecked, said so, instead of growing without
/// bound (this scenario's cases took gigabytes and aborted before the budget existed).
#[test]
fn check_leaves_a_case_past_its_event_budget_unchecked_and_says_so() {
    let path = root().join("tests/data/check/partition-under-a-100000h-timeout.toml");
    let out = tempfile::tempdir().expect("temp dir");
    let args = |json: bool| {
        let mut a = vec![
            "check".to_string(),
            path.display().to_string(),
            "--cases".into(),
            "8".into(),
            "--max-events".into(),
            "20000".into(),
            "--out".into(),
            out.path().display().to_string(),
            "--quiet".into(),
        ];
        if json {
            a.push("--json".into());
        }
        a
    };
    let o = ringside(&args(true));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = common::json(&o);
    assert_eq!(v["cases"], 8, "{v}");
    assert_eq!(v["max_events"], 20000, "{v}");
    let too_long = v["too_long"].as_u64().expect("too_long");
    assert!((1..8).contains(&too_long), "{v}");
    let o = ringside(&args(false));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let said = format!(
        "{too_long} of the 8 cases reached the event budget (--max-events 20000) and went \
         unchecked"
    );
    assert!(text(&o).contains(&said), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("check: {} cases passed", 8 - too_long)),
        "{}",
        text(&o)
    );
}
