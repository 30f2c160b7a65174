//! End-to-end diagnosis: every fault kind and their combinations, run through the engine and
//! diagnosed, with the outcome, the blocked ranks and the root causes asserted exactly; the
//! shipped scenarios meet their `[expect]`; `explain` on a trace agrees with the run.

mod common;

use common::code_and_stdout;
use ringside_sim::report::RunReport;
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{self, Outcome};
use ringside_sim::scenario::{FaultKind, RootCause};
use std::path::Path;

/// A small training job: `size` ranks, 3 iterations of 10ms compute then `ops`; 2s watchdog.
fn job(size: u32, ops: &str, faults: &str) -> String {
    format!(
        r#"
name = "table"
seed = 1

[world]
size = {size}

[network]
latency = "5us"
bandwidth = "25GB/s"
retransmit_timeout = "20ms"

[group]
timeout = "2s"

[workload]
iterations = 3
compute = "10ms"
elements = 16
{ops}
{faults}
"#
    )
}

/// An allreduce of 16 MiB (about 1ms on 4 ranks) then a barrier, each iteration.
const AR_BARRIER: &str = r#"
[[workload.ops]]
op = "allreduce"
bytes = "16MiB"

[[workload.ops]]
op = "barrier"
"#;

/// Two identical allreduces per iteration: a rank that skips one is silently shifted by one.
const TWO_AR: &str = r#"
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"

[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
"#;

const ONE_AR: &str = r#"
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
"#;

/// A seven-stage pipeline cut by a partition for 70 ms: the forward message it dropped is sent
/// again only after the retransmit timeout, at 84 ms, so the backward message that follows is
/// still on its way when the watchdog of a call made long after the partition healed fires.
const HEALED_PIPELINE: &str = r#"
name = "healed"
[world]
size = 7
[network]
latency = "35699ns"
bandwidth = "8GB/s"
retransmit_timeout = "14ms"
[group]
timeout = "85ms"
[workload]
compute = "448us"
elements = 1
[[workload.ops]]
op = "allreduce"
bytes = "1B"
[workload.pipeline]
microbatches = 1
schedule = "1f1b"
forward = "1us"
backward = "48us"
bytes = "451857B"
[[faults]]
kind = "partition"
sides = [[3, 4], [1, 2, 5, 6]]
at = "635642ns"
duration = "70125us"
"#;

struct Case {
    name: &'static str,
    toml: String,
    outcome: Outcome,
    blocked: &'static [u32],
    causes: &'static [&'static str],
    /// Checked when given.
    stragglers: Option<&'static [u32]>,
}

fn case(
    name: &'static str,
    toml: String,
    outcome: Outcome,
    blocked: &'static [u32],
    causes: &'static [&'static str],
) -> Case {
    Case {
        name,
        toml,
        outcome,
        blocked,
        causes,
        stragglers: None,
    }
}

fn stalled(
    name: &'static str,
    toml: String,
    blocked: &'static [u32],
    causes: &'static [&'static str],
) -> Case {
    case(name, toml, Outcome::Stalled, blocked, causes)
}

fn completed(name: &'static str, toml: String, stragglers: &'static [u32]) -> Case {
    Case {
        stragglers: Some(stragglers),
        ..case(name, toml, Outcome::Completed, &[], &[])
    }
}

fn table() -> Vec<Case> {
    let j4 = |faults: &str| job(4, AR_BARRIER, faults);
    vec![
        completed("healthy", j4(""), &[]),
        stalled(
            "preempted mid-allreduce",
            j4("[[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"10300us\""),
            &[0, 1, 3],
            &["preempted:2"],
        ),
        stalled(
            "two preemptions at once",
            job(
                6,
                AR_BARRIER,
                "[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"10300us\"\n\
                 [[faults]]\nkind = \"preempt\"\nrank = 4\nat = \"10300us\"",
            ),
            &[0, 2, 3, 5],
            &["preempted:1", "preempted:4"],
        ),
        stalled(
            "preempted, restarted, cannot rejoin a group that is not elastic",
            j4("[[faults]]\nkind = \"preempt\"\nrank = 3\nat = \"10300us\"\nrestart_after = \"100ms\""),
            &[0, 1, 2],
            &["preempted:3"],
        ),
        completed(
            "pause shorter than the timeout completes late, no false stall",
            j4("[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"10300us\"\nduration = \"1s\""),
            &[],
        ),
        stalled(
            "pause longer than the timeout stalls",
            j4("[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"10300us\"\nduration = \"5s\""),
            &[0, 2, 3],
            &["paused:1"],
        ),
        stalled(
            "partition in two halves",
            j4("[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [2, 3]]\nat = \"10300us\""),
            &[0, 1, 2, 3],
            &["partitioned:0,1|2,3"],
        ),
        stalled(
            "partition in three islands",
            job(
                6,
                AR_BARRIER,
                "[[faults]]\nkind = \"partition\"\nsides = [[4, 5], [0, 1], [2, 3]]\nat = \"10300us\"",
            ),
            &[0, 1, 2, 3, 4, 5],
            &["partitioned:0,1|2,3|4,5"],
        ),
        stalled(
            "one-way partition",
            j4("[[faults]]\nkind = \"partition\"\nsides = [[2], [0, 1, 3]]\noneway = true\nat = \"10300us\""),
            &[0, 1, 2, 3],
            &["partitioned:0,1,3|2"],
        ),
        completed(
            "partition that heals before the timeout completes",
            j4("[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [2, 3]]\nat = \"10300us\"\nduration = \"500ms\""),
            &[],
        ),
        completed(
            "a delay on a rank's links turns it into a straggler",
            j4("[[faults]]\nkind = \"delay\"\nrank = 2\nat = \"5ms\"\nextra = \"1ms\""),
            &[2],
        ),
        completed(
            "a delay on one link: the sender is the straggler",
            j4("[[faults]]\nkind = \"delay\"\nlink = [1, 2]\nat = \"5ms\"\nextra = \"2ms\"\njitter = \"500us\""),
            &[1],
        ),
        stalled(
            "a delay longer than the timeout stalls on the straggler",
            j4("[[faults]]\nkind = \"delay\"\nrank = 2\nat = \"10300us\"\nextra = \"3s\""),
            &[0, 1, 2, 3],
            &["slow:2"],
        ),
        completed(
            "loss: chunks are retransmitted and arrive late",
            j4("[[faults]]\nkind = \"loss\"\nlink = [0, 1]\nat = \"0s\"\nrate = 0.3"),
            &[0],
        ),
        completed(
            "slow compute: a straggler, not a stall",
            j4("[[faults]]\nkind = \"slow\"\nrank = 3\nat = \"0s\"\nfactor = 4.0"),
            &[3],
        ),
        stalled(
            "compute slower than the timeout stalls on the straggler",
            j4("[[faults]]\nkind = \"slow\"\nrank = 3\nat = \"20ms\"\nfactor = 500.0"),
            &[0, 1, 2],
            &["slow:3"],
        ),
        stalled(
            "mismatch in bytes",
            j4("[[faults]]\nkind = \"mismatch\"\nrank = 2\niteration = 1\nop_index = 0\nbytes = \"1MiB\""),
            &[0, 1, 2, 3],
            &["mismatch:2"],
        ),
        stalled(
            "mismatch in op",
            j4("[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 1\nop_index = 0\nop = \"barrier\""),
            &[0, 1, 2, 3],
            &["mismatch:1"],
        ),
        stalled(
            "mismatch in root",
            j4("[[faults]]\nkind = \"mismatch\"\nrank = 3\niteration = 0\nop_index = 0\nroot = 2"),
            &[0, 1, 2, 3],
            &["mismatch:3"],
        ),
        stalled(
            "mismatch in dtype",
            j4("[[faults]]\nkind = \"mismatch\"\nrank = 0\niteration = 2\nop_index = 1\ndtype = \"f64\""),
            &[0, 1, 2, 3],
            &["mismatch:0"],
        ),
        stalled(
            "mismatch on two ranks: with a tie the declared program wins",
            job(
                2,
                AR_BARRIER,
                "[[faults]]\nkind = \"mismatch\"\nrank = 0\niteration = 1\nop_index = 0\nbytes = \"1MiB\"",
            ),
            &[0, 1],
            &["mismatch:0"],
        ),
        stalled(
            "two ranks mismatch the same collective in different ways",
            job(
                5,
                AR_BARRIER,
                "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 1\nop_index = 0\nbytes = \"1MiB\"\n\
                 [[faults]]\nkind = \"mismatch\"\nrank = 3\niteration = 1\nop_index = 0\ndtype = \"i64\"",
            ),
            &[0, 1, 2, 3, 4],
            &["mismatch:1", "mismatch:3"],
        ),
        stalled(
            // rank 3's bug at #5 is never reached: everyone waits at #3, so only rank 1 is named
            "two mismatching ranks at different seqs: the first one stalls the job",
            job(
                5,
                AR_BARRIER,
                "[[faults]]\nkind = \"mismatch\"\nrank = 3\niteration = 2\nop_index = 0\nbytes = \"1MiB\"\n\
                 [[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 1\nop_index = 0\nbytes = \"1MiB\"",
            ),
            &[0, 1, 2, 3, 4],
            &["mismatch:1"],
        ),
        stalled(
            "skip: the culprit is already in the next call",
            j4("[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 1\nop_index = 0"),
            &[0, 1, 2, 3],
            &["skipped:1"],
        ),
        stalled(
            "skip of the last call: the culprit finished its workload",
            job(4, ONE_AR, "[[faults]]\nkind = \"skip\"\nrank = 2\niteration = 2"),
            &[0, 1, 3],
            &["skipped:2"],
        ),
        stalled(
            // identical calls match, so both skips go unnoticed until the last collective
            "two ranks skip at different seqs, silently shifted until the end",
            job(
                5,
                TWO_AR,
                "[[faults]]\nkind = \"skip\"\nrank = 1\niteration = 0\nop_index = 0\n\
                 [[faults]]\nkind = \"skip\"\nrank = 3\niteration = 1\nop_index = 1",
            ),
            &[0, 2, 4],
            &["skipped:1", "skipped:3"],
        ),
        stalled(
            "hang: a live rank stops issuing collectives",
            j4("[[faults]]\nkind = \"hang\"\nrank = 3\niteration = 2"),
            &[0, 1, 2],
            &["hung:3"],
        ),
        stalled(
            "combination: preemption and pause at once, with a straggler",
            job(
                6,
                AR_BARRIER,
                "[[faults]]\nkind = \"preempt\"\nrank = 4\nat = \"10300us\"\n\
                 [[faults]]\nkind = \"pause\"\nrank = 1\nat = \"10300us\"\nduration = \"10s\"\n\
                 [[faults]]\nkind = \"slow\"\nrank = 3\nat = \"0s\"\nfactor = 1.1",
            ),
            &[0, 2, 3, 5],
            &["paused:1", "preempted:4"],
        ),
        stalled(
            "a healed partition whose resent chunk holds back a chain of later calls",
            HEALED_PIPELINE.to_string(),
            &[0, 1, 2, 3, 4, 5, 6],
            &["partitioned:1,2,5,6|3,4"],
        ),
        stalled(
            "a partition that healed before a stage could compute: the stage is no straggler",
            HEALED_PIPELINE
                .replace("\"8GB/s\"", "\"11GB/s\"\njitter = \"5719ns\"")
                .replace("448us", "0ns")
                .replace("[3, 4], [1, 2, 5, 6]", "[0, 2, 6], [1, 3, 4]")
                .replace("at = \"635642ns\"", "at = \"0ns\"")
                .replace("70125us", "70550us")
                .replace("forward = \"1us\"", "forward = \"12us\"")
                .replace("48us", "49us")
                .replace("451857B", "455368B")
                + "[[faults]]\nkind = \"slow\"\nrank = 1\nat = \"3723ns\"\nfactor = 5.3\n",
            &[0, 1, 2, 4, 5, 6],
            &["partitioned:0,2,6|1,3,4"],
        ),
        stalled(
            "combination: a mismatch and a hang in one job",
            job(
                5,
                AR_BARRIER,
                "[[faults]]\nkind = \"hang\"\nrank = 4\niteration = 1\n\
                 [[faults]]\nkind = \"mismatch\"\nrank = 0\niteration = 1\nop_index = 0\nbytes = \"2MiB\"",
            ),
            &[0, 1, 2, 3],
            &["hung:4", "mismatch:0"],
        ),
        stalled(
            "combination: a rank preempted behind a partition is named, and so is the partition",
            job(
                2,
                ONE_AR,
                "[[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"10300us\"\n\
                 [[faults]]\nkind = \"partition\"\nsides = [[0], [1]]\nat = \"10300us\"",
            ),
            &[1],
            &["partitioned:0|1", "preempted:0"],
        ),
        stalled(
            // rank 1 freezes while it waits in the mismatched call: when rank 2 is fixed,
            // rank 1 still holds everyone
            "combination: a rank paused in a mismatched collective is named next to the mismatch",
            job(
                4,
                AR_BARRIER,
                "[[faults]]\nkind = \"mismatch\"\nrank = 2\niteration = 1\nop_index = 0\nbytes = \"1MiB\"\n\
                 [[faults]]\nkind = \"pause\"\nrank = 1\nat = \"30ms\"\nduration = \"10s\"",
            ),
            &[0, 2, 3],
            &["mismatch:2", "paused:1"],
        ),
        stalled(
            // the partition drops only what rank 1 sends rank 0, yet it holds their link
            "combination: a one-way partition on the link to a rank that skipped is named",
            job(
                2,
                ONE_AR,
                "[[faults]]\nkind = \"skip\"\nrank = 0\niteration = 2\n\
                 [[faults]]\nkind = \"partition\"\nsides = [[1], [0]]\noneway = true\nat = \"25ms\"",
            ),
            &[1],
            &["partitioned:0|1", "skipped:0"],
        ),
        stalled(
            // each ring step takes 10s on these links: the 2s watchdog fires on a chunk still
            // on its way, and nothing but the scenario's own timing made it late
            "no fault: links slower than the watchdog allows blame the timeout, not a rank",
            job(4, AR_BARRIER, "").replace("latency = \"5us\"", "latency = \"10s\""),
            &[0, 1, 2, 3],
            &["watchdog_timeout"],
        ),
        stalled(
            // rank 3's program computes 50ms before its allreduce; the others' 20ms watchdog
            // fires while it still computes
            "no fault: a watchdog shorter than a rank's compute blames the timeout",
            job(4, AR_BARRIER, "[[workload.programs]]\nranks = [3]\n\
                 [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"16MiB\"\ncompute = \"50ms\"\n\
                 [[workload.programs.ops]]\nop = \"barrier\"")
            .replace("timeout = \"2s\"", "timeout = \"20ms\""),
            &[0, 1, 2],
            &["watchdog_timeout"],
        ),
        stalled(
            // the delayed link still explains the late chunk: the timeout is not blamed
            "a delay fault on a slow link is still named, not the timeout",
            job(
                4,
                AR_BARRIER,
                "[[faults]]\nkind = \"delay\"\nlink = [1, 2]\nextra = \"5s\"\nat = \"0ns\"",
            ),
            &[0, 1, 2, 3],
            &["slow:1"],
        ),
    ]
}

/// Causes in canonical form, sorted as text.
fn sorted(v: impl IntoIterator<Item = RootCause>) -> Vec<String> {
    let mut v: Vec<String> = v.into_iter().map(|c| c.canonical().to_string()).collect();
    v.sort();
    v
}

/// Causes as the report prints them.
fn names(v: &[RootCause]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

/// Runs the scenario `toml` (named `file` in errors) and returns its report.
fn report(toml: &str, file: &str) -> RunReport {
    let s = scenario::parse(toml, file).expect("valid");
    run(&s, &RunOptions::default()).expect("runs").report
}

fn run_case(c: &Case) -> RunReport {
    let s = scenario::parse(&c.toml, c.name).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    run(&s, &RunOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", c.name))
        .report
}

#[test]
fn every_fault_kind_is_diagnosed_exactly() {
    let table = table();
    assert!(table.len() >= 15);
    let mut failures = Vec::new();
    for c in &table {
        let r = run_case(c);
        let mut blocked: Vec<u32> = r.blocked.iter().map(|b| b.rank).collect();
        blocked.sort_unstable();
        let got = (r.outcome, blocked, sorted(r.root_causes.clone()));
        let want = (
            c.outcome,
            c.blocked.to_vec(),
            sorted(c.causes.iter().map(|s| s.parse().expect("a root cause"))),
        );
        if got != want {
            failures.push(format!(
                "{}:\n  want {want:?}\n  got  {got:?}\n  {}",
                c.name,
                r.explanation.join("\n  ")
            ));
        }
        if let Some(st) = c.stragglers {
            let got: Vec<u32> = r.stragglers.iter().map(|s| s.rank).collect();
            if got != st {
                failures.push(format!("{}: stragglers: want {st:?}, got {got:?}", c.name));
            }
        }
        if r.outcome == Outcome::Stalled {
            assert_eq!(
                r.explanation.len(),
                r.root_causes.len(),
                "{}: one paragraph per cause",
                c.name
            );
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn the_explanation_names_the_chain_and_the_cause() {
    let c = &table()[1];
    let r = run_case(c);
    assert_eq!(r.explanation.len(), 1);
    let p = &r.explanation[0];
    assert!(
        p.starts_with("ranks 0,1,3 are blocked in allreduce #1 (ring, "),
        "{p}"
    );
    assert!(p.contains("3 waits for 2"), "{p}");
    assert!(
        p.ends_with("root cause: rank 2 was preempted at 10.300ms"),
        "{p}"
    );
}

#[test]
fn shipped_scenarios_meet_their_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    let mut kinds = std::collections::BTreeSet::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    for path in entries {
        let s = scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let e = s.expect.clone().unwrap_or_default();
        assert!(
            e.outcome.is_some() && e.blocked.is_some() && e.root_causes.is_some(),
            "{}: [expect] needs outcome, blocked and root_causes",
            path.display()
        );
        kinds.extend(s.faults.iter().map(|f| f.kind()));
        let out = run(&s, &RunOptions::default()).expect("run");
        assert!(
            out.report.expect.ok,
            "{}: {:?}",
            path.display(),
            out.report.expect.failures
        );
        n += 1;
    }
    assert!(n >= 12, "{n} scenarios");
    for k in FaultKind::ALL {
        assert!(kinds.contains(k), "no shipped scenario has a `{k}` fault");
    }
}

/// `ringside args`: its exit code and standard output.
fn ringside(args: &[&str]) -> (i32, String) {
    code_and_stdout(&common::ringside(args))
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}):\n{s}"))
}

#[test]
fn explain_on_a_trace_agrees_with_the_run_that_wrote_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    for name in [
        "preempt-and-pause.toml",
        "mismatched-op.toml",
        "skipped-allreduce.toml",
        "partition-oneway.toml",
        "hung-worker.toml",
        "slow-worker.toml",
    ] {
        let trace = dir.path().join(format!("{name}.jsonl"));
        let scenario = root.join(name);
        let (code, run_out) = ringside(&[
            "run",
            scenario.to_str().expect("path"),
            "--json",
            "--trace",
            trace.to_str().expect("path"),
        ]);
        assert_eq!(code, 0, "{name}: {run_out}");
        let run_json = json(&run_out);
        let (code, explain_out) = ringside(&["explain", trace.to_str().expect("path"), "--json"]);
        assert_eq!(code, 0, "{name}: {explain_out}");
        let ex = json(&explain_out);
        for key in ["blocked", "root_causes", "explanation", "stragglers"] {
            assert_eq!(run_json[key], ex[key], "{name}: `{key}` differs");
        }
        assert_eq!(run_json["virtual_time_ns"], ex["at_ns"], "{name}");
    }
}

#[test]
fn explain_at_an_earlier_time_sees_ranks_in_progress_not_blocked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("t.jsonl");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/slow-worker.toml");
    let (code, _) = ringside(&[
        "run",
        scenario.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
    ]);
    assert_eq!(code, 0);
    // at 30ms ranks 0-2 wait in the allreduce for rank 3, which still computes (4 x 10ms)
    let (code, out) = ringside(&[
        "explain",
        trace.to_str().expect("path"),
        "--at",
        "30ms",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["blocked"], serde_json::json!([]), "{out}");
    assert_eq!(v["root_causes"], serde_json::json!([]), "{out}");
    assert_eq!(v["in_progress"], serde_json::json!([0, 1, 2]), "{out}");
    assert_eq!(v["stragglers"][0]["straggler"], "slow:3", "{out}");

    // a preempted rank: before the preemption nothing is blocked, after it the chain is
    let trace = dir.path().join("p.jsonl");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/preempt-mid-allreduce.toml");
    ringside(&[
        "run",
        scenario.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
    ]);
    let (_, before) = ringside(&[
        "explain",
        trace.to_str().expect("path"),
        "--at",
        "11ms",
        "--json",
    ]);
    assert_eq!(json(&before)["root_causes"], serde_json::json!([]));
    let (_, after) = ringside(&[
        "explain",
        trace.to_str().expect("path"),
        "--at",
        "1s",
        "--json",
    ]);
    assert_eq!(
        json(&after)["root_causes"],
        serde_json::json!(["preempted:2"])
    );
    assert_eq!(json(&after)["blocked"].as_array().map(|a| a.len()), Some(2));
}

#[test]
fn explain_dot_draws_the_wait_for_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("t.jsonl");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/preempt-mid-allreduce.toml");
    ringside(&[
        "run",
        scenario.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
    ]);
    let (code, dot) = ringside(&["explain", trace.to_str().expect("path"), "--dot"]);
    assert_eq!(code, 0);
    assert!(dot.starts_with("digraph waits {"), "{dot}");
    assert!(dot.contains("r0 -> r2 [color=\"#e04040\""), "{dot}");
    assert!(dot.contains("r1 -> r0;"), "{dot}");
    assert!(
        dot.contains("r2 [label=\"rank 2\\ndead\", style=filled"),
        "{dot}"
    );
    assert!(dot.contains("allreduce #1 (ring)\\nstep "), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
}

#[test]
fn a_rank_preempted_before_it_starts_is_preempted_not_hung() {
    let c = stalled(
        "preempted at 0",
        job(
            4,
            ONE_AR,
            "[[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"0s\"",
        ),
        &[1, 2, 3],
        &["preempted:0"],
    );
    let r = run_case(&c);
    let mut blocked: Vec<u32> = r.blocked.iter().map(|b| b.rank).collect();
    blocked.sort_unstable();
    assert_eq!((r.outcome, blocked), (Outcome::Stalled, vec![1, 2, 3]));
    assert_eq!(names(&r.root_causes), ["preempted:0"]);
}

#[test]
fn chunks_late_on_a_healthy_link_are_charged_to_the_lossy_rank_that_holds_the_network_back() {
    // direct allreduce of 7 ranks with a watchdog that fires before rank 3's lost chunks are
    // sent again: the chunks still on their way between healthy ranks are no fault of theirs
    let r = report(
        "name = \"lossy-direct\"\nseed = 5053117706778821890\n[world]\nsize = 7\n[network]\n\
         latency = \"100ns\"\nbandwidth = \"53GB/s\"\nreduce_bandwidth = \"1GB/s\"\n\
         retransmit_timeout = \"5ms\"\n[group]\ntimeout = \"50ms\"\n[workload]\nelements = 1\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1B\"\nalgorithm = \"direct\"\n\
         [[faults]]\nkind = \"loss\"\nrank = 3\nat = \"0ns\"\nrate = 0.79\n",
        "lossy-direct.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(names(&r.root_causes), ["slow:3"]);
}

#[test]
fn chunks_late_on_a_healthy_link_after_a_partition_are_charged_to_the_partition() {
    // the partition from {3,4} to {0,2} ends before the watchdog, but the chunks it dropped
    // wait for the retransmit timeout and hold the direct allreduce's ports
    let r = report(
        "name = \"healed-late\"\n[world]\nsize = 5\n[network]\nlatency = \"100ns\"\n\
         bandwidth = \"7GB/s\"\nretransmit_timeout = \"14ms\"\n[group]\ntimeout = \"50ms\"\n\
         [workload]\ncompute = \"512us\"\nelements = 1\n[[workload.ops]]\nop = \"allgather\"\n\
         bytes = \"1B\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1542536B\"\n\
         algorithm = \"direct\"\n[[faults]]\nkind = \"partition\"\nsides = [[3, 4], [0, 2]]\n\
         at = \"512401ns\"\nduration = \"42050us\"\noneway = true\n",
        "healed-late.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(names(&r.root_causes), ["partitioned:0,2|3,4"]);
}

#[test]
fn a_rank_that_skips_a_call_of_one_mesh_group_is_named_not_a_deadlock() {
    // on a 2x4 mesh rank 0 skips its data-parallel allreduce and rank 1 its tensor-parallel
    // one; their other groups' calls carry them on, so the waits form a cycle across groups,
    // but each of them is past a call it never issued
    let r = report(
        "name = \"mesh-skips\"\n[world]\nsize = 8\nranks_per_host = 4\n\
         [network.intra_host]\nlatency = \"1us\"\nbandwidth = \"300GB/s\"\n\
         [group]\ntimeout = \"30s\"\n[group.mesh]\nshape = [2, 4]\ndims = [\"dp\", \"tp\"]\n\
         [workload]\niterations = 2\ncompute = \"0ns\"\nelements = 1\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"16MiB\"\ngroup = \"tp\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\ngroup = \"dp\"\n\
         [[faults]]\nkind = \"skip\"\nrank = 0\niteration = 0\nop_index = 1\n\
         [[faults]]\nkind = \"skip\"\nrank = 1\niteration = 0\nop_index = 0\n",
        "mesh-skips.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(names(&r.root_causes), ["skipped:0", "skipped:1"]);
    let text = r.human();
    assert!(
        text.contains("rank 0 never issued allreduce #1 (iteration 0, op 1)"),
        "{text}"
    );
}

#[test]
fn ranks_that_skipped_are_named_even_when_they_outnumber_the_right_call() {
    // at allreduce #3 ranks 2 and 3 skipped to the barrier and rank 1 mismatched its bytes:
    // rank 0 alone holds the right call, the earliest in the program
    let faults = "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 1\nop_index = 0\n\
                  bytes = \"16777217B\"\n\
                  [[faults]]\nkind = \"skip\"\nrank = 2\niteration = 1\nop_index = 0\n\
                  [[faults]]\nkind = \"skip\"\nrank = 3\niteration = 1\nop_index = 0\n";
    let r = report(&job(4, AR_BARRIER, faults), "skips-outnumber.toml");
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(
        sorted(r.root_causes.clone()),
        ["mismatch:1", "skipped:2", "skipped:3"]
    );
}

#[test]
fn ranks_that_share_a_mismatch_are_named_even_when_they_are_the_majority() {
    // two of three ranks call the allreduce with f64: the program says f32, as rank 0 does
    let faults = "[[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 0\nop_index = 0\n\
                  dtype = \"f64\"\n\
                  [[faults]]\nkind = \"mismatch\"\nrank = 2\niteration = 0\nop_index = 0\n\
                  dtype = \"f64\"\n";
    let r = report(&job(3, ONE_AR, faults), "shared-mismatch.toml");
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(sorted(r.root_causes.clone()), ["mismatch:1", "mismatch:2"]);
}

#[test]
fn a_hung_rank_behind_a_permanent_partition_ends_the_run_and_is_named() {
    // rank 0 finishes (its reduce to rank 1 only sends); rank 1 hangs, and the partition that
    // never heals would have the lost chunk sent again forever
    let r = report(
        "name = \"hung-cut-off\"\n[world]\nsize = 2\n[network]\nretransmit_timeout = \"8ms\"\n\
         [group]\ntimeout = \"50ms\"\n[workload]\ncompute = \"5ms\"\nelements = 4\n\
         [[workload.ops]]\nop = \"reduce\"\nbytes = \"2MiB\"\nroot = 1\n\
         [[faults]]\nkind = \"hang\"\nrank = 1\niteration = 0\n\
         [[faults]]\nkind = \"partition\"\nsides = [[0], [1]]\nat = \"4ms\"\n",
        "hung-cut-off.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert!(r.blocked.is_empty());
    assert_eq!(names(&r.root_causes), ["hung:1"]);
    let text = r.human();
    assert!(
        text.contains("no rank is waiting in a collective; root cause: rank 1 stopped issuing"),
        "{text}"
    );
}

#[test]
fn a_restarted_rank_alone_outside_the_group_is_not_called_hung() {
    // every rank is preempted at once and only rank 2 comes back: it waits to join a group
    // that no longer exists, which is no hang of its own
    let r = report(
        "name = \"alone\"\n[world]\nsize = 3\n[group]\ntimeout = \"2s\"\n\
         [group.elastic]\nmin_size = 2\nmax_size = 3\n[workload]\ncompute = \"0ns\"\n\
         elements = 1\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"0ns\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"0ns\"\nrestart_after = \"200ms\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"0ns\"\n",
        "alone.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert!(
        !r.root_causes
            .iter()
            .any(|c| matches!(c, RootCause::Hung(_))),
        "{:?}",
        r.root_causes
    );
}

#[test]
fn chunks_late_after_a_pause_are_charged_to_the_paused_rank() {
    // rank 0 is frozen for most of the watchdog's 50ms; when it resumes, its chunks and the
    // others' answers to them are still crossing the ports when the watchdog fires
    let r = report(
        "name = \"paused-late\"\n[world]\nsize = 4\n[network]\nlatency = \"100ns\"\n\
         bandwidth = \"1GB/s\"\nretransmit_timeout = \"1ms\"\n[group]\ntimeout = \"50ms\"\n\
         algorithm = \"direct\"\n[workload]\ncompute = \"271us\"\nelements = 1\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"900971B\"\n\
         [[faults]]\nkind = \"pause\"\nrank = 0\nat = \"0ns\"\nduration = \"48950us\"\n",
        "paused-late.toml",
    );
    assert_eq!(r.outcome, Outcome::Stalled);
    assert_eq!(names(&r.root_causes), ["paused:0"]);
}

#[test]
fn a_rank_left_behind_on_its_slow_links_is_charged_to_them_not_to_a_peer_that_finished() {
    // rank 2's links are delayed for most of the run: the group rebuilds without it, and when
    // it is left waiting in an old call, the peer it waits for has finished
    let r = report(
        "name = \"left-behind\"\nseed = 9100762491345494243\ntime_limit = \"60s\"\n\
         [world]\nsize = 3\n[network]\nretransmit_timeout = \"200ms\"\n[group]\ntimeout = \"2s\"\n\
         [group.elastic]\nmin_size = 2\nmax_size = 3\nrendezvous = \"store\"\n\
         [workload]\niterations = 2\ncompute = \"10ms\"\nelements = 1\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
         [[faults]]\nkind = \"delay\"\nrank = 2\nat = \"16147583ns\"\nduration = \"2884ms\"\n\
         extra = \"430ms\"\njitter = \"215000001ns\"\n\
         [[faults]]\nkind = \"skip\"\nrank = 0\niteration = 0\nop_index = 0\n",
        "left-behind.toml",
    );
    assert_eq!(r.outcome, Outcome::Rebuilt);
    assert_eq!(names(&r.root_causes), ["slow:2"]);
}

/// One wait-for solver names a cycle one way, whichever path reads it: the run, `explain` on
/// its trace, and `import` of the dumps the trace exports to.
#[test]
fn a_three_cycle_is_named_alike_by_run_explain_and_import() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = common::root().join("tests/data/diagnosis/three-group-cycle.toml");
    let trace = dir.path().join("cycle.jsonl");
    let (code, out) = ringside(&[
        "run",
        scenario.to_str().expect("path"),
        "--json",
        "--trace",
        trace.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{out}");
    let want = serde_json::json!(["deadlock:0,1,2"]);
    assert_eq!(json(&out)["root_causes"], want, "run");
    let (_, out) = ringside(&["explain", trace.to_str().expect("path"), "--json"]);
    assert_eq!(json(&out)["root_causes"], want, "explain");
    let fr = dir.path().join("fr");
    let (code, out) = ringside(&[
        "export",
        trace.to_str().expect("path"),
        "--fr",
        fr.to_str().expect("path"),
    ]);
    assert_eq!(code, 0, "{out}");
    let (_, out) = ringside(&["import", fr.to_str().expect("path"), "--json"]);
    assert_eq!(json(&out)["root_causes"], want, "import");
}
