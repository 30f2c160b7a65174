//! The property registry (docs/properties.md) and `ringside check`.
//!
//! Each property passes on the real code and fails on a deliberately broken variant of it; a
//! planted bug is shrunk to a small scenario whose files replay; the CLI runs a swarm of 64
//! cases (`RINGSIDE_CHECK_CASES=N` for more).

use proptest::prelude::*;
use ringside_sim::check::bound::healing;
use ringside_sim::check::swarm::{Quiet, Swarm};
use ringside_sim::check::{strategy, Case, Gen, Mutation, Mutations, Property, Violation};
use ringside_sim::proto::Rank;
use ringside_sim::replay::{replay, ReplayOutcome};
use ringside_sim::scenario::{Outcome, RootCause, Scenario};

mod common;

use common::{ringside, scenario, text};

/// `p` ranks running `ops` (TOML of `[[workload.ops]]` entries), no faults.
fn world(p: u32, extra: &str, ops: &str) -> Scenario {
    scenario(&format!(
        "name = \"t\"\nseed = 5\n[world]\nsize = {p}\n[network]\nlatency = \"2us\"\n\
         bandwidth = \"10GB/s\"\n{extra}\n[group]\ntimeout = \"1s\"\n[workload]\niterations = 2\n\
         elements = 48\n{ops}"
    ))
}

const RING_ALLREDUCE: &str =
    "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\nalgorithm = \"ring\"\n";

fn holds(p: Property, case: &Case) -> Result<(), Violation> {
    p.check(case, &case.run())
}

#[track_caller]
fn passes(p: Property, case: &Case) {
    if let Err(v) = holds(p, case) {
        panic!("{p} fails on the real code: {v}");
    }
}

/// What breaks `p` on `case`, which must break it.
#[track_caller]
fn fails(p: Property, case: &Case) -> String {
    match holds(p, case) {
        Ok(()) => panic!("{p} holds on {:?}", case.mutations),
        Err(v) => {
            assert_eq!(v.property, p, "{v}");
            v.message
        }
    }
}

#[test]
fn every_property_holds_on_the_real_code() {
    for p in [1, 2, 3, 4, 7, 8] {
        let ops = format!(
            "[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n\
             [[workload.ops]]\nop = \"allgather\"\nbytes = \"256KiB\"\n\
             [[workload.ops]]\nop = \"reduce_scatter\"\nbytes = \"1MiB\"\n\
             [[workload.ops]]\nop = \"broadcast\"\nbytes = \"1MiB\"\nroot = {}\n",
            p - 1
        );
        let case = Case::new(world(p, "jitter = \"1us\"", &ops));
        for prop in Property::all() {
            passes(prop, &case);
        }
    }
}

#[test]
fn a_wrong_ring_chunk_breaks_validity_and_agreement() {
    let real = Case::new(world(4, "", RING_ALLREDUCE));
    passes(Property::Validity, &real);
    passes(Property::Agreement, &real);
    let broken = real.clone().with_mutations(Mutation::RingWrongChunk);
    let v = Property::Validity
        .check(&broken, &broken.run())
        .expect_err("a wrong chunk");
    assert!(v.message.contains("allreduce #1 (ring"), "{v}");
    assert!(v.op.is_some(), "the violation names the collective: {v:?}");
    let why = fails(Property::Agreement, &broken);
    assert!(why.contains("2 different results"), "{why}");
}

#[test]
fn an_allgather_that_drops_a_rank_breaks_validity() {
    for algorithm in ["ring", "recursive_doubling", "direct"] {
        for p in [2, 5, 8] {
            let ops = format!(
                "[[workload.ops]]\nop = \"allgather\"\nbytes = \"64KiB\"\nalgorithm = \"{algorithm}\"\n"
            );
            let real = Case::new(world(p, "", &ops));
            passes(Property::Validity, &real);
            let broken = real.with_mutations(Mutation::AllgatherDropRank);
            let why = fails(Property::Validity, &broken);
            assert!(why.contains("allgather #1"), "{algorithm} on {p}: {why}");
        }
    }
}

#[test]
fn dropping_early_chunks_breaks_liveness() {
    // jitter reorders a peer's messages, so some arrive a step early
    let real = Case::new(world(8, "jitter = \"20us\"", RING_ALLREDUCE));
    assert_eq!(real.run().report.outcome, Outcome::Completed);
    passes(Property::Liveness, &real);
    let broken = real.with_mutations(Mutation::DropEarlyChunks);
    let why = fails(Property::Liveness, &broken);
    assert!(
        why.contains("there are no faults, yet the run stalled"),
        "{why}"
    );
}

/// Three messages to rank 1, which computes before it receives them: all three wait there.
const MESSAGES_WAIT: &str = "[[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1KiB\"\n\
    [[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"1KiB\"\n\
    [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1KiB\"\ncompute = \"100us\"\n\
    [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"1KiB\"\n";

#[test]
fn a_recv_that_takes_the_wrong_message_breaks_validity() {
    let real = Case::new(world(2, "", MESSAGES_WAIT));
    for p in Property::all() {
        passes(p, &real);
    }
    let broken = real.with_mutations(Mutation::P2pTakeLatest);
    let why = fails(Property::Validity, &broken);
    assert!(why.contains("send #1"), "{why}");
}

#[test]
fn a_corrupted_message_breaks_validity() {
    let ops = "[[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"4KiB\"\n\
               [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"4KiB\"\n";
    let real = Case::new(world(4, "", ops));
    for p in Property::all() {
        passes(p, &real);
    }
    let broken = real.with_mutations(Mutation::P2pCorruptPayload);
    let why = fails(Property::Validity, &broken);
    assert!(why.contains("send #1"), "{why}");
}

#[test]
fn a_rendezvous_send_never_acknowledged_breaks_liveness() {
    let ops = "[[workload.ops]]\nop = \"send\"\npeer = \"next\"\nbytes = \"4KiB\"\n\
               rendezvous = true\n\
               [[workload.ops]]\nop = \"recv\"\npeer = \"prev\"\nbytes = \"4KiB\"\n";
    let real = Case::new(world(3, "", ops));
    passes(Property::Liveness, &real);
    let broken = real.with_mutations(Mutation::NoRendezvousAck);
    let why = fails(Property::Liveness, &broken);
    assert!(
        why.contains("there are no faults, yet the run stalled"),
        "{why}"
    );
}

/// `check` over random workloads (named groups, programs, pipelines, sends and recvs) finds
/// each planted bug of point-to-point messages: some property fails.
#[test]
fn check_finds_every_planted_bug_of_messages() {
    for bug in [
        "p2p-take-latest",
        "p2p-corrupt-payload",
        "no-rendezvous-ack",
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let o = ringside(&[
            "check",
            "--cases",
            "2000",
            "--mutation",
            bug,
            "--out",
            dir.path().to_str().expect("utf-8"),
        ]);
        let out = text(&o);
        // the first property to fail may be another than the one its unit test names: a
        // message taken out of order may also stall the run, a lost acknowledgement is
        // diagnosed as the receiver's skipped call
        assert_eq!(o.status.code(), Some(1), "{bug}: {out}");
        assert!(out.contains("check: property `"), "{bug}: {out}");
    }
}

#[test]
fn nondeterministic_ties_break_determinism() {
    // no jitter, no compute: many events at the same instants
    let real = Case::new(world(8, "", RING_ALLREDUCE));
    passes(Property::Determinism, &real);
    let broken = real.with_mutations(Mutation::NondeterministicTies);
    let why = fails(Property::Determinism, &broken);
    assert!(
        why.contains("different digests") || why.contains("diverged at line"),
        "{why}"
    );
}

#[test]
fn a_quorum_lost_without_its_members_breaks_diagnosis_completeness() {
    // two of four members die at once: rank 3 waits for rank 2, nobody waits for rank 1, but
    // rank 1's death is half of why the quorum of 3 cannot form
    let real = Case::new(scenario(
        "name = \"q\"\n[world]\nsize = 4\n[group]\ntimeout = \"2s\"\n\
         elastic = { min_size = 3, max_size = 4 }\n[workload]\niterations = 3\ncompute = \"10ms\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"25ms\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"25ms\"\n",
    ));
    let causes = real.run().report.root_causes;
    let names: Vec<String> = causes.iter().map(|c| c.to_string()).collect();
    assert_eq!(names, ["preempted:1", "preempted:2", "quorum_lost"]);
    passes(Property::DiagnosisComplete, &real);
    passes(Property::DiagnosisSound, &real);
    let broken = real.with_mutations(Mutation::QuorumNamesNoMember);
    let why = fails(Property::DiagnosisComplete, &broken);
    assert!(
        why.contains("faults[0] (preempt)") && why.contains("`preempted:1` is not among"),
        "{why}"
    );
}

#[test]
fn liveness_demands_completion_only_once_faults_heal() {
    let base = "name = \"l\"\n[world]\nsize = 4\n[network]\nretransmit_timeout = \"2ms\"\n\
                [group]\ntimeout = \"200ms\"\n[workload]\n\
                iterations = 3\ncompute = \"1ms\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n";
    // heals: a short pause, a short partition; the run completes in time
    let healing_case = Case::new(scenario(&format!(
        "{base}[[faults]]\nkind = \"pause\"\nrank = 1\nat = \"1ms\"\nduration = \"5ms\"\n\
         [[faults]]\nkind = \"partition\"\nsides = [[0], [2, 3]]\nat = \"2ms\"\nduration = \"3ms\"\n"
    )));
    assert!(healing(&healing_case.scenario).heals);
    assert_eq!(healing_case.run().report.outcome, Outcome::Completed);
    passes(Property::Liveness, &healing_case);
    // never heals: a preempted rank stalls the job, and the stall is diagnosed
    let stalled = Case::new(scenario(&format!(
        "{base}[[faults]]\nkind = \"preempt\"\nrank = 2\nat = \"1500us\"\n"
    )));
    assert!(!healing(&stalled.scenario).heals);
    let out = stalled.run();
    assert_eq!(out.report.outcome, Outcome::Stalled);
    assert_eq!(out.report.root_causes, [RootCause::Preempted(Rank(2))]);
    passes(Property::Liveness, &stalled);
}

#[test]
fn calls_after_an_application_bug_are_not_held_to_agreement() {
    // rank 1 believes rank 1 is the root: both "roots" complete at once with their own data
    let case = Case::new(scenario(
        "name = \"m\"\n[world]\nsize = 3\n[group]\ntimeout = \"100ms\"\n[workload]\n\
         [[workload.ops]]\nop = \"broadcast\"\nbytes = \"1KiB\"\nroot = 0\n\
         [[faults]]\nkind = \"mismatch\"\nrank = 1\niteration = 0\nroot = 1\n",
    ));
    for p in Property::all() {
        passes(p, &case);
    }
}

/// The size bound a planted bug shrinks to: one collective on at most 4 ranks, one iteration,
/// no fault. (The wrong chunk needs at least 2 ranks; whether it shows depends on how the
/// elements split into blocks, so a few rank counts may pass where a larger one fails.)
const MAX_RANKS: u32 = 4;

#[test]
fn a_planted_bug_shrinks_to_a_small_scenario_whose_files_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mutations = Mutations::from(Mutation::RingWrongChunk);
    for seed in [0, 2, 7] {
        let swarm = Swarm {
            seed,
            cases: 1_000,
            out_dir: Some(dir.path().to_path_buf()),
            mutations,
            ..Swarm::default()
        };
        let found = swarm
            .run(&mut Quiet)
            .found
            .unwrap_or_else(|| panic!("seed {seed}: the planted bug is found"));
        let size = found.shrunk.size();
        assert!(
            size.ranks <= MAX_RANKS && size.iterations == 1 && size.ops == 1 && size.faults == 0,
            "seed {seed}: {} shrank only to {size}",
            found.original.size()
        );
        let op = &found.shrunk.scenario.workload.ops[0];
        assert_eq!(op.op, ringside_sim::scenario::OpKind::Allreduce);
        let files = found.files.expect("files written");
        assert_eq!(files.replay, Ok(()), "seed {seed}");
        // the scenario file parses back to the shrunk scenario and still fails
        let back = ringside_sim::scenario::load(&files.scenario).expect("parses");
        assert_eq!(back, found.shrunk.scenario);
        let again = Case::new(back).with_mutations(mutations);
        let p: Property = found.failure.name().parse().expect("a registered property");
        assert!(holds(p, &again).is_err(), "seed {seed}: still fails");
        // without the bug it passes: the failure is the planted bug's
        passes(p, &Case::new(again.scenario.clone()));
        // and the trace replays under the same code
        assert!(matches!(
            replay(&files.trace, mutations),
            Ok(ReplayOutcome::Identical { .. })
        ));
        assert!(files
            .trace
            .file_name()
            .is_some_and(|n| n.to_string_lossy() == format!("{}-{}.jsonl", p, found.case_seed)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// The library as another crate's test uses it: strategies in, properties out.
    #[test]
    fn random_cases_hold_every_property(case in strategy::cases(&Gen::default())) {
        let run = case.run();
        for p in Property::all() {
            if let Err(v) = p.check(&case, &run) {
                prop_assert!(false, "{v}");
            }
        }
    }
}

/// `RINGSIDE_CHECK_CASES=10000 cargo test --release --test properties` for a longer run.
#[test]
fn check_passes_on_the_real_code() {
    let cases = std::env::var("RINGSIDE_CHECK_CASES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().expect("temp dir");
    let o = ringside(&[
        "check",
        "--cases",
        &cases.to_string(),
        "--out",
        dir.path().to_str().expect("utf-8"),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(&format!("check: {cases} cases passed")),
        "{out}"
    );
    let names: Vec<&str> = Property::all().map(Property::name).collect();
    assert!(
        out.contains(&format!(
            "{} properties checked ({})",
            names.len(),
            names.join(", ")
        )),
        "{out}"
    );
    assert!(out.contains("cases/s"), "{out}");
    // without a terminal there is no progress: the summary is the only output
    assert!(!out.contains(&format!("{cases}/{cases}")), "{out}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "",
        "nothing on stderr without a terminal"
    );
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

#[test]
fn check_lays_fault_schedules_on_given_scenarios() {
    let dir = tempfile::tempdir().expect("temp dir");
    let o = ringside(&[
        "check",
        "scenarios/healthy-allreduce.toml",
        "scenarios/preempt-mid-allreduce.toml",
        "--cases",
        "12",
        "--out",
        dir.path().to_str().expect("utf-8"),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("fault schedules on 2 scenario(s)"), "{out}");
}

#[test]
fn check_splits_cases_among_shards_and_stops_at_its_budget() {
    let o = ringside(&[
        "check",
        "--cases",
        "10",
        "--shard",
        "1/4",
        "--out",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("check: 3 cases passed"), "{}", text(&o));
    assert!(text(&o).contains("shard 1/4"), "{}", text(&o));
    let o = ringside(&[
        "check",
        "--cases",
        "100000000",
        "--time",
        "300ms",
        "--out",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("the time budget ran out"), "{}", text(&o));
}

#[test]
fn check_rejects_bad_input_with_exit_2() {
    for args in [
        vec!["check", "--shard", "4/4"],
        vec!["check", "--shard", "x"],
        vec!["check", "--time", "5 parsecs"],
        vec!["check", "--time", "0s"],
        vec!["check", "does/not/exist.toml"],
    ] {
        let o = ringside(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"), "{args:?}: {}", text(&o));
    }
}

#[test]
fn check_and_replay_take_every_planted_bug_by_name() {
    for verb in ["check", "replay"] {
        let help = text(&ringside(&[verb, "--help"]));
        for m in Mutation::all() {
            assert!(
                help.contains(m.name()),
                "`{verb} --help` lists {m}:\n{help}"
            );
        }
    }
    let o = ringside(&["check", "--mutation", "no-such-bug"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("ring-wrong-chunk"), "{}", text(&o));
}

#[test]
fn check_on_a_planted_bug_exits_1_with_the_command_that_replays_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let o = ringside(&[
        "check",
        "--cases",
        "1000",
        "--mutation",
        "allgather-drop-rank",
        "--out",
        dir.path().to_str().expect("utf-8"),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("check: property `"), "{out}");
    assert!(out.contains("case seed"), "{out}");
    let command = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("ringside replay "))
        .unwrap_or_else(|| panic!("no replay command in:\n{out}"));
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let o = ringside(&args);
    assert_eq!(o.status.code(), Some(0), "{command}: {}", text(&o));
    assert!(text(&o).contains("identical"), "{}", text(&o));
    // the scenario file runs as any other
    let toml = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "toml"))
        .expect("a scenario file");
    let o = ringside(&["run", toml.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn one_world_per_generation_is_in_the_registry_and_catches_a_split_brain() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join("elastic-partition-majority.toml");
    let real = Case::new(ringside_sim::scenario::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let p: Property = "one_world_per_generation".parse().expect("registered");
    passes(p, &real);
    let broken = real.clone().with_mutations(Mutation::NoQuorum);
    let v = p.check(&broken, &broken.run()).expect_err("a split brain");
    assert!(v.message.contains("split brain"), "{v}");
    assert_eq!(v.ranks.len(), 2, "the two ranks that disagree: {v:?}");
}

#[test]
fn check_help_lists_every_property_of_the_registry() {
    let o = ringside(&["check", "--help"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for p in Property::all() {
        assert!(out.contains(&format!("  {} ({})\n", p, p.kind())), "{out}");
        assert!(out.contains(p.statement().split(' ').next().unwrap_or("")));
    }
}

#[test]
fn check_writes_junit_and_json_for_ci_with_the_commands_that_replay_a_failure() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("regressions");
    let junit = dir.path().join("check.xml");
    let o = ringside(&[
        "check",
        "scenarios/healthy-allreduce.toml",
        "scenarios/preempt-mid-allreduce.toml",
        "--cases",
        "40",
        "--seed",
        "3",
        "--mutation",
        "ring-wrong-chunk",
        "--out",
        out_dir.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = common::json(&o);
    assert_eq!(v["passed"], false);
    let f = &v["failure"];
    let property = f["property"].as_str().expect("a property").to_string();
    let trace = f["trace_file"].as_str().expect("a trace was written");
    assert!(std::path::Path::new(trace).exists());
    assert_eq!(
        f["replay"],
        format!("ringside replay {trace} --mutation ring-wrong-chunk")
    );
    assert!(f["reproduce"]
        .as_str()
        .expect("reproduce")
        .starts_with("ringside check scenarios/healthy-allreduce.toml"));
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file");
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"));
    let names: Vec<&str> = Property::all().map(Property::name).collect();
    assert!(names.contains(&property.as_str()), "{v}");
    // a suite per scenario, a case per property in each
    assert_eq!(xml.matches("<testsuite ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 2 * names.len(), "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(xml.contains(&format!(
        "ringside replay {trace} --mutation ring-wrong-chunk"
    )));
    assert!(
        xml.contains(&format!(
            r#"<testsuites name="ringside check" tests="{}" failures="1""#,
            2 * names.len()
        )),
        "{xml}"
    );
    assert!(xml.contains(&format!(r#"name="{property}">"#)), "{xml}");
    // the failing case belongs to the scenario it was drawn from
    let suite = if f["scenario"] == "scenarios/healthy-allreduce.toml" {
        0
    } else {
        1
    };
    let failing_suite = xml.split("<testsuite ").nth(suite + 1).expect("the suite");
    assert!(failing_suite.contains("failures=\"1\""), "{xml}");

    // the real code passes, and says so the same ways
    let o = ringside(&[
        "check",
        "--cases",
        "8",
        "--out",
        out_dir.to_str().expect("utf-8"),
        "--junit",
        junit.to_str().expect("utf-8"),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = common::json(&o);
    assert_eq!(v["passed"], true);
    assert_eq!(v["cases"], 8);
    assert!(v["failure"].is_null());
    let xml = std::fs::read_to_string(&junit).expect("the JUnit file");
    assert!(
        xml.contains("<testsuite name=\"random scenarios\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure").count(), 0, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), names.len(), "{xml}");
}

/// A scenario whose links are slower than its watchdog allows stalls without a fault: the
/// diagnosis blames the timeout, and `check` over it (faults added at random, elastic or not)
/// holds it to a diagnosed stall instead of failing soundness or liveness.
#[test]
fn a_watchdog_shorter_than_the_calls_is_blamed_and_checked_as_the_scenarios_own_timing() {
    let file = common::root().join("tests/data/timing/mesh-slow-links.toml");
    let run = ringside(&["run".as_ref(), file.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let v = common::json(&run);
    assert_eq!(v["root_causes"], serde_json::json!(["watchdog_timeout"]));
    assert!(!v["blocked"].as_array().expect("blocked").is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    let check = |file: &std::path::Path, cases: &str| {
        let out = ringside(&[
            "check".as_ref(),
            file.as_os_str(),
            "--cases".as_ref(),
            cases.as_ref(),
            "--quiet".as_ref(),
            "--out".as_ref(),
            dir.path().as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    };
    check(&file, "12");
    // the elastic group of a shipped scenario, with its timing made too tight
    let shipped =
        std::fs::read_to_string(common::root().join("scenarios/elastic-three-workers.toml"))
            .expect("shipped");
    let variants: [(&str, &[(&str, &str)]); 3] = [
        // a watchdog of a millisecond
        ("elastic-1ms", &[("timeout = \"2s\"", "timeout = \"1ms\"")]),
        // a watchdog of 100ms over a call of about 84ms: enough for the fault-free run, but
        // not after a rebuild, when the rejoining ranks call tens of milliseconds apart
        (
            "elastic-thin",
            &[
                ("timeout = \"2s\"", "timeout = \"100ms\""),
                ("latency = \"5us\"", "latency = \"20ms\""),
            ],
        ),
        // links of 1 MB/s: every call outlasts the watchdog, and a group that keeps
        // rebuilding may reach its time limit before it is found stuck
        (
            "elastic-1mbps",
            &[("bandwidth = \"25GB/s\"", "bandwidth = \"1MB/s\"")],
        ),
    ];
    for (name, edits) in variants {
        let text = edits.iter().fold(shipped.clone(), |t, (from, to)| {
            assert!(t.contains(from), "{name}: {from}");
            t.replace(from, to)
        });
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).expect("write");
        check(&path, "6");
    }
    // an elastic group whose failure detector gives up sooner than its network answers:
    // the survivors of a preemption can never rebuild, and the diagnosis says why
    let quick = common::root().join("tests/data/timing/elastic-quick-detector.toml");
    let run = ringside(&["run".as_ref(), quick.as_os_str(), "--json".as_ref()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let v = common::json(&run);
    assert_eq!(v["root_causes"], serde_json::json!(["watchdog_timeout"]));
    let story = v["explanation"].to_string();
    assert!(
        story.contains("failure detector's window (300.000ms"),
        "{story}"
    );
    check(&quick, "12");
}

/// Ranks that call one slot with different ops (rank 2's own program allreduces where the
/// others scatter) ran different calls: the scatter's per-rank chunks are not a disagreement.
#[test]
fn agreement_does_not_compare_the_results_of_a_mismatched_slot() {
    let file = common::root().join("tests/data/check/extra-collective-scatter.toml");
    let dir = tempfile::tempdir().expect("tempdir");
    let o = ringside(&[
        "check".as_ref(),
        file.as_os_str(),
        "--cases".as_ref(),
        "8".as_ref(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("8 cases passed"), "{}", text(&o));
}

/// A run stalled by a fault has no result to judge; the fault-free run of the same code has
/// one, and it is wrong.
#[test]
fn a_wrong_result_hidden_by_a_stall_breaks_fault_free_completion() {
    let ops = format!("{RING_ALLREDUCE}[[faults]]\nkind = \"preempt\"\nrank = 3\nat = \"0s\"\n");
    let real = Case::new(world(4, "", &ops));
    passes(Property::FaultFreeCompletes, &real);
    let broken = real.with_mutations(Mutation::RingWrongChunk);
    for p in [Property::Agreement, Property::Validity, Property::Liveness] {
        passes(p, &broken);
    }
    let why = fails(Property::FaultFreeCompletes, &broken);
    assert!(
        why.starts_with("without its faults, the workload completed, but allreduce #1")
            && why.contains("has a wrong result"),
        "{why}"
    );
}
