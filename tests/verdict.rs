//! The first line of every report is the answer, and `--exit-code` tells a script whether the
//! job finished: `run`, `explain` and `import` alike.

mod common;

use common::{code_and_stdout, ringside, root};

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[test]
fn a_stalled_run_opens_with_its_root_cause_and_where_it_holds_ranks_up() {
    let (code, out) = code_and_stdout(&ringside(&["run", "scenarios/hung-worker.toml"]));
    assert_eq!(code, 0, "{out}");
    let line = first_line(&out);
    assert!(line.starts_with("STALLED: hung:"), "{out}");
    // the cause in words, then the call the others are blocked in
    assert!(line.contains(" — "), "{line}");
    assert!(line.contains("blocked in allreduce #"), "{line}");
}

#[test]
fn a_healthy_run_opens_with_what_it_completed() {
    let (code, out) = code_and_stdout(&ringside(&["run", "scenarios/healthy-allreduce.toml"]));
    assert_eq!(code, 0, "{out}");
    let line = first_line(&out);
    assert!(line.starts_with("COMPLETED: "), "{out}");
    assert!(line.ends_with("all results correct"), "{line}");
    assert!(line.contains(" ranks in "), "{line}");
}

#[test]
fn exit_code_says_whether_the_job_finished() {
    let stalled = ["run", "scenarios/hung-worker.toml", "--exit-code"];
    assert_eq!(ringside(&stalled).status.code(), Some(1));
    let healthy = ["run", "scenarios/healthy-allreduce.toml", "--exit-code"];
    assert_eq!(ringside(&healthy).status.code(), Some(0));
    // without the flag a stall is a result, not a failure
    assert_eq!(
        ringside(&["run", "scenarios/hung-worker.toml"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn explain_opens_with_the_same_answer_as_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("hung.jsonl");
    let t = trace.to_str().unwrap();
    let (_, run) = code_and_stdout(&ringside(&[
        "run",
        "scenarios/hung-worker.toml",
        "--trace",
        t,
    ]));
    let (code, explain) = code_and_stdout(&ringside(&["explain", t]));
    assert_eq!(code, 0, "{explain}");
    assert_eq!(first_line(&explain), first_line(&run));
    assert_eq!(
        ringside(&["explain", t, "--exit-code"]).status.code(),
        Some(1)
    );
    // before anything went wrong, nobody is blocked
    let (_, early) = code_and_stdout(&ringside(&["explain", t, "--at", "0ns"]));
    assert!(first_line(&early).starts_with("NOT BLOCKED at "), "{early}");
    assert_eq!(
        ringside(&["explain", t, "--at", "0ns", "--exit-code"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn import_opens_with_the_culprit_and_how_long_its_peers_had_waited() {
    let dumps = root().join("tests/data/flight-recorder/real/skipped_collective/json");
    let d = dumps.to_str().unwrap();
    let (code, out) = code_and_stdout(&ringside(&["import", d]));
    assert_eq!(code, 0, "{out}");
    let line = first_line(&out);
    assert!(line.starts_with("STALLED: hung:2 — "), "{out}");
    // gloo records only when a call was issued: nothing tells how long it had waited
    assert!(
        line.contains(" since 25.192ms after the job's first record"),
        "{line}"
    );
    assert_eq!(
        ringside(&["import", d, "--exit-code"]).status.code(),
        Some(1)
    );
    // NCCL records when a kernel started: the age is measured on the rank's own dump
    let nccl = root().join("tests/data/flight-recorder/nccl/3d_hung/json");
    let (_, out) = code_and_stdout(&ringside(&["import", nccl.to_str().unwrap()]));
    let line = first_line(&out);
    assert!(line.starts_with("STALLED: hung:5 — "), "{out}");
    assert!(
        line.contains("for at least 8.000us when it dumped"),
        "{line}"
    );
    let healthy = root().join("tests/data/flight-recorder/real/healthy/json");
    let h = healthy.to_str().unwrap();
    let (code, out) = code_and_stdout(&ringside(&["import", h, "--exit-code"]));
    assert_eq!(code, 0, "{out}");
    assert!(first_line(&out).starts_with("COMPLETED: "), "{out}");
}

/// 64 ranks allreduce along the world, then along their pair; rank 1's program takes the pair
/// first (`inverted`), or every rank's does (`all`: no rank deviates from the others).
fn pairs_scenario(inverted: &[u32]) -> String {
    let pairs: Vec<String> = (0..32)
        .map(|i| format!("[{}, {}]", 2 * i, 2 * i + 1))
        .collect();
    let mut s = format!(
        "name = \"order-64\"\nseed = 1\n[world]\nsize = 64\n[group]\ntimeout = \"1s\"\n\
         [[groups]]\nname = \"pair\"\nranks = [{}]\n[workload]\niterations = 1\n\
         compute = \"1ms\"\nelements = 4\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"pair\"\n",
        pairs.join(", ")
    );
    if !inverted.is_empty() {
        s.push_str(&format!(
            "[[workload.programs]]\nranks = {inverted:?}\n\
             [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"pair\"\n\
             [[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n"
        ));
    }
    s
}

#[test]
fn the_rank_whose_call_order_differs_is_named_at_64_ranks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("order.toml");
    std::fs::write(&file, pairs_scenario(&[1])).unwrap();
    let f = file.to_str().unwrap();
    let o = ringside(&["run", f, "--json"]);
    let v = common::json(&o);
    assert_eq!(v["root_causes"], serde_json::json!(["mismatch:1"]), "{v}");
    let (_, out) = code_and_stdout(&ringside(&["run", f]));
    let line = first_line(&out);
    assert!(
        line.starts_with("STALLED: mismatch:1 — rank 1 is in allreduce"),
        "{line}"
    );
    assert!(
        line.contains("inverse order of the programs of ranks 0,2-63"),
        "{line}"
    );
    // explain reads the same answer off the trace
    let trace = dir.path().join("order.jsonl");
    let t = trace.to_str().unwrap();
    ringside(&["run", f, "--trace", t]);
    let (_, explained) = code_and_stdout(&ringside(&["explain", t]));
    assert_eq!(first_line(&explained), line);
}

/// Rank 1's loop makes world then pair like every rank's, then swaps them in the second pass:
/// its program starts as the others' do, and its own earlier calls show the inversion.
#[test]
fn a_rank_that_swaps_two_groups_in_a_later_pass_is_named_by_its_own_history() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("later.toml");
    let op = |group: &str| {
        format!("[[workload.programs.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n{group}")
    };
    let (world, pair) = (op(""), op("group = \"pair\"\n"));
    let mut s = pairs_scenario(&[]);
    s = s.replace(
        "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"pair\"\n",
        "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"pair\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"pair\"\n",
    );
    s.push_str(&format!(
        "[[workload.programs]]\nranks = [1]\n{world}{pair}{pair}{world}"
    ));
    std::fs::write(&file, s).unwrap();
    let f = file.to_str().unwrap();
    let v = common::json(&ringside(&["run", f, "--json"]));
    assert_eq!(v["root_causes"], serde_json::json!(["mismatch:1"]), "{v}");
    let (_, out) = code_and_stdout(&ringside(&["run", f]));
    let line = first_line(&out);
    assert!(
        line.contains("rank 1 made these two calls the other way round earlier in its program"),
        "{line}"
    );
}

#[test]
fn a_cycle_where_half_the_ranks_take_each_order_stays_a_deadlock() {
    // ranks 0 and 1 of the first pair each follow an order that half the world follows: nobody
    // stands out, so no rank is blamed
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("half.toml");
    let half: Vec<u32> = (0..64).filter(|r| r % 2 == 1).collect();
    std::fs::write(&file, pairs_scenario(&half)).unwrap();
    let v = common::json(&ringside(&["run", file.to_str().unwrap(), "--json"]));
    let causes = v["root_causes"].as_array().unwrap();
    assert!(!causes.is_empty(), "{v}");
    assert!(
        causes
            .iter()
            .all(|c| c.as_str().unwrap().starts_with("deadlock:")),
        "{v}"
    );
}

/// Four ranks calling five all_reduces from `train.py:40`, `train.py:41`, ... in turn; `odd`
/// gives rank 0 a program of its own: these sites, in order (`None`: no sites at all).
fn sites_scenario(odd: &[u32], named: bool) -> String {
    let op = |line: u32| {
        let site = if named {
            format!("site = \"train.py:{line}\"\n")
        } else {
            String::new()
        };
        format!("[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n{site}\n")
    };
    let mut s = String::from(
        "name = \"sites\"\n[world]\nsize = 4\n[group]\ntimeout = \"1s\"\n[workload]\n\
         iterations = 1\n",
    );
    for line in 40..45 {
        s.push_str(&op(line));
    }
    s.push_str("[[workload.programs]]\nranks = [0]\n");
    for &line in odd {
        s.push_str(&op(line).replace("[[workload.ops]]", "[[workload.programs.ops]]"));
    }
    s
}

fn run_explanation(scenario: &str) -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("sites.toml");
    std::fs::write(&file, scenario).unwrap();
    let (code, out) = code_and_stdout(&ringside(&["run", "--json", file.to_str().unwrap()]));
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let causes = v["root_causes"].to_string();
    let text = v["explanation"].to_string();
    (causes, text)
}

#[test]
fn an_extra_call_alike_to_the_next_is_placed_by_its_call_site() {
    // rank 0 calls an extra all_reduce from line 99 third: the engine matches it with the
    // others' third, as a real job does, and rank 0 is left waiting in a sixth
    let (causes, text) = run_explanation(&sites_scenario(&[40, 41, 99, 42, 43, 44], true));
    assert_eq!(causes, "[\"mismatch:0\"]", "{text}");
    assert!(text.contains("allreduce #3 from train.py:99"), "{text}");
    assert!(text.contains("an extra call"), "{text}");
    // without call sites the calls are alike: the call rank 0 waits in is all there is
    let (causes, text) = run_explanation(&sites_scenario(&[40, 41, 99, 42, 43, 44], false));
    assert_eq!(causes, "[\"mismatch:0\"]", "{text}");
    assert!(!text.contains("#3"), "{text}");
}

#[test]
fn a_skipped_call_is_placed_by_its_call_site() {
    // rank 0 skips the call of line 41: its later calls are the others' one earlier
    let (causes, text) = run_explanation(&sites_scenario(&[40, 42, 43, 44], true));
    assert_eq!(causes, "[\"skipped:0\"]", "{text}");
    assert!(text.contains("skipped allreduce #2"), "{text}");
    assert!(text.contains("train.py:41"), "{text}");
}
