//! The bidirectional ring as its users run it: registered under its name, a scenario names
//! it, the engine runs it with the right result on every group size, in the time its network
//! allows, under faults with its stall diagnosed; its trace names it and replays; the swarm
//! checks it under generated fault schedules.

use ringside_sim::check::swarm::{Quiet, Swarm};
use ringside_sim::check::{Case, Gen, Property, Run, UserProperty};
use ringside_sim::cost::{textbook, Net};
use ringside_sim::replay::{replay, ReplayOutcome};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{parse, Algorithm, OpKind, Outcome, Scenario};
use std::path::PathBuf;
use std::sync::Arc;

fn scenario(text: &str) -> Scenario {
    parse(text, "bidi.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// One bidirectional ring allreduce of `bytes` on `p` ranks, and what follows it in the file.
fn bidi(p: u32, bytes: u64, rest: &str) -> String {
    format!(
        "name = \"bidi\"\n[world]\nsize = {p}\n\
         [network]\nlatency = \"5us\"\nbandwidth = \"1GB/s\"\n\
         [workload]\ndtype = \"i64\"\nelements = 29\n\
         [[workload.ops]]\nop = \"allreduce\"\nalgorithm = \"bidi_ring\"\nbytes = \"{bytes}B\"\n\
         {rest}"
    )
}

#[test]
fn a_registered_algorithm_runs_from_a_scenario_with_the_right_result() {
    let algorithm = bidi_ring::register();
    assert_eq!(algorithm.name(), "bidi_ring");
    assert_eq!("bidi_ring".parse::<Algorithm>(), Ok(algorithm));
    assert!(algorithm.implements(OpKind::Allreduce));
    assert!(!algorithm.implements(OpKind::Broadcast));
    for p in 1..=9 {
        let s = scenario(&bidi(p, 720_720, ""));
        let out = run(&s, &RunOptions::default()).expect("runs");
        assert_eq!(out.report.outcome, Outcome::Completed, "p = {p}");
        assert!(!out.report.ops.is_empty(), "p = {p}");
        for op in &out.report.ops {
            assert!(op.correct, "p = {p}: a wrong result");
        }
    }
}

#[test]
fn on_one_port_per_rank_it_costs_what_a_ring_costs() {
    bidi_ring::register();
    // each step's two chunks of n/2p bytes leave one after the other on the one send port:
    // 2(p-1)(a + n/p b), the ring's time
    for p in [2, 3, 4, 5, 8] {
        let n = 2 * 720_720;
        let out = run(&scenario(&bidi(p, n, "")), &RunOptions::default()).expect("runs");
        let op = &out.report.ops[0];
        let took = (op.end_ns.expect("completed") - op.start_ns) as f64;
        let ring = textbook(
            OpKind::Allreduce,
            Algorithm::Ring,
            p,
            n,
            Net::new(5_000, 1_000_000_000),
        )
        .expect("the ring has a formula");
        assert!(
            ring.admits(took, f64::from(ring.rounds())),
            "p = {p}: {took} ns, {ring:?}"
        );
    }
}

#[test]
fn on_two_ports_per_rank_it_costs_its_own_formula() {
    let algorithm = bidi_ring::register();
    // both chunks of a step travel at once: 2(p-1)(a + n/2p b), half the ring's bandwidth term
    for p in [2, 3, 4, 5, 8, 9] {
        let n = 2 * 720_720;
        let text = bidi(p, n, "").replace(
            "bandwidth = \"1GB/s\"\n",
            "bandwidth = \"1GB/s\"\nports = 2\n",
        );
        let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
        let op = &out.report.ops[0];
        assert!(op.correct, "p = {p}");
        let took = (op.end_ns.expect("completed") - op.start_ns) as f64;
        let net = Net::new(5_000, 1_000_000_000);
        let own = textbook(OpKind::Allreduce, algorithm, p, n, net).expect("its formula");
        assert!(
            own.admits(took, f64::from(own.rounds())),
            "p = {p}: {took} ns, {own:?}"
        );
        let ring = textbook(OpKind::Allreduce, Algorithm::Ring, p, n, net).expect("the ring's");
        if p > 2 {
            assert!(
                took < 0.75 * ring_ns(&ring),
                "p = {p}: {took} ns, the ring {ring:?}"
            );
        }
    }
}

fn ring_ns(c: &ringside_sim::cost::Cost) -> f64 {
    match *c {
        ringside_sim::cost::Cost::Exact { ns, .. } => ns,
        ringside_sim::cost::Cost::Between { hi, .. } => hi,
    }
}

#[test]
fn when_a_rank_dies_its_stall_is_diagnosed() {
    bidi_ring::register();
    let s = scenario(&bidi(
        5,
        1 << 20,
        "[group]\ntimeout = \"50ms\"\n\
         [[faults]]\nkind = \"preempt\"\nrank = 3\nat = \"0s\"\n",
    ));
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
    let causes = out.diagnosis.root_cause_names();
    assert_eq!(causes, ["preempted:3"], "{:#?}", out.report.explanation);
    // rank 3's neighbours wait for it: clockwise and counter-clockwise
    let blocked: Vec<u32> = out.report.blocked.iter().map(|b| b.rank).collect();
    assert!(blocked.contains(&2) && blocked.contains(&4), "{blocked:?}");
}

#[test]
fn its_trace_names_it_and_replays() {
    bidi_ring::register();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bidi.jsonl");
    let s = scenario(&bidi(4, 4096, ""));
    let opts = RunOptions {
        trace: Some(&path),
        ..RunOptions::default()
    };
    run(&s, &opts).expect("runs");
    let text = std::fs::read_to_string(&path).expect("the trace");
    assert!(text.contains("\"algorithm\":\"bidi_ring\""), "{text}");
    let replayed = replay(&path, Default::default()).expect("replays");
    assert!(
        matches!(replayed, ReplayOutcome::Identical { .. }),
        "{replayed:?}"
    );
}

#[test]
fn the_swarm_checks_it_under_generated_fault_schedules() {
    bidi_ring::register();
    let swarm = Swarm {
        seed: 7,
        cases: 24,
        scenarios: vec![scenario(&bidi(4, 1 << 16, ""))],
        gen: Gen::ranks(4),
        ..Swarm::default()
    };
    let summary = swarm.run(&mut Quiet);
    assert_eq!(summary.cases, 24);
    if let Some(found) = summary.found {
        panic!("{}\n{:#?}", found.failure.message(), found.shrunk.scenario);
    }
}

#[test]
fn a_wrong_peer_is_caught_shrunk_and_named_with_its_step_and_peer() {
    bidi_ring::register_wrong_peer();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let base = bidi(7, 1 << 16, "").replace("\"bidi_ring\"", "\"bidi_ring_wrong_peer\"");
    let swarm = Swarm {
        seed: 3,
        cases: 4,
        scenarios: vec![scenario(&base)],
        gen: Gen::ranks(7),
        out_dir: Some(dir.path().to_path_buf()),
        ..Swarm::default()
    };
    let found = swarm
        .run(&mut Quiet)
        .found
        .expect("the planted bug is caught");
    assert_eq!(found.failure.property(), Some(Property::ScheduleContract));
    // shrunk to the fewest ranks where rank 0 has a wrong peer at all
    assert_eq!(
        found.shrunk.scenario.world.size, 4,
        "{:#?}",
        found.shrunk.scenario
    );
    assert_eq!(
        found.failure.message(),
        "allreduce bidi_ring_wrong_peer on 4 ranks: step 2: rank 0 sends [(6, 7)] to 2, \
         which expects None"
    );
    // written as a scenario that names the algorithm, and a trace that replays
    let files = found.files.expect("files written");
    assert_eq!(files.written, Ok(()));
    assert_eq!(files.replay, Ok(()));
    let toml = std::fs::read_to_string(&files.scenario).expect("the scenario");
    assert!(toml.contains("bidi_ring_wrong_peer"), "{toml}");
    // and the run of the shrunk scenario stalls where the contract broke: rank 2 is handed a
    // chunk it does not expect, and rank 3 waits for it; the diagnosis names rank 0
    let trace = dir.path().join("shrunk.jsonl");
    let opts = RunOptions {
        trace: Some(&trace),
        ..RunOptions::default()
    };
    let out = run(&found.shrunk.scenario, &opts).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
    assert!(
        out.report.blocked.iter().any(|b| b.rank == 3),
        "{:#?}",
        out.report.blocked
    );
    let causes = out.diagnosis.root_cause_names();
    assert_eq!(causes, ["mismatch:0"], "{:#?}", out.report.explanation);
    let story = out.report.explanation.join("\n");
    assert!(
        story.contains(
            "rank 0 sent its chunk of step 3/6 of allreduce #1 (bidi_ring_wrong_peer) to rank 2, \
             which did not expect it (the receiver had left that step); rank 3 waits for it"
        ),
        "{story}"
    );
    let text = std::fs::read_to_string(&trace).expect("the trace");
    let unexpected: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"unexpected\""))
        .collect();
    assert_eq!(unexpected.len(), 1, "{unexpected:?}");
    for field in [
        "\"rank\":2,",
        "\"step\":2,",
        "\"steps\":6,",
        "\"from\":0,",
        "\"algorithm\":\"bidi_ring_wrong_peer\"",
        "\"why\":\"step_over\"",
    ] {
        assert!(unexpected[0].contains(field), "{field}: {}", unexpected[0]);
    }
}

/// A property of the example's own: without faults, every `bidi_ring` allreduce takes the
/// time of its cost formula on the case's network (an alpha-beta network without jitter).
struct TakesItsFormula;

impl UserProperty for TakesItsFormula {
    fn name(&self) -> &'static str {
        "takes_its_formula"
    }

    fn statement(&self) -> &'static str {
        "without faults, every bidi_ring allreduce takes the time of its cost formula"
    }

    fn check(&self, case: &Case, run: &Run) -> Result<(), String> {
        let s = &case.scenario;
        let n = &s.network;
        if !s.faults.is_empty()
            || n.jitter.0 > 0
            || n.intra_host.is_some()
            || n.reduce_bandwidth.is_some()
        {
            return Ok(());
        }
        let net = Net::new(n.latency.0, n.bandwidth.0);
        for op in &run.report.ops {
            let Some(end) = op.end_ns.filter(|_| op.algorithm.name() == "bidi_ring") else {
                continue;
            };
            let Some(cost) = bidi_ring::cost(OpKind::Allreduce, s.world.size, op.bytes, net) else {
                continue;
            };
            let took = (end - op.start_ns) as f64;
            if !cost.admits(took, f64::from(cost.rounds())) {
                return Err(format!(
                    "allreduce #{} on {} ranks took {took} ns, its formula says {cost:?}",
                    op.seq, s.world.size
                ));
            }
        }
        Ok(())
    }
}

#[test]
fn a_user_property_is_checked_beside_the_built_in_ones_and_catches_a_broken_variant() {
    bidi_ring::register();
    let swarm = |text: &str, out_dir: Option<PathBuf>| Swarm {
        seed: 11,
        cases: 6,
        scenarios: vec![scenario(text)],
        gen: Gen::fault_free(),
        user_properties: vec![Arc::new(TakesItsFormula)],
        out_dir,
        ..Swarm::default()
    };
    let two_ports = bidi(5, 1 << 20, "").replace(
        "bandwidth = \"1GB/s\"\n",
        "bandwidth = \"1GB/s\"\nports = 2\n",
    );
    let summary = swarm(&two_ports, None).run(&mut Quiet);
    assert_eq!(summary.properties, Property::all().count() + 1);
    if let Some(found) = summary.found {
        panic!("{}: {}", found.failure.name(), found.failure.message());
    }
    // the broken variant: one port per rank, on which a step's two chunks queue one after
    // the other
    let dir = tempfile::tempdir().expect("a temporary directory");
    let found = swarm(&bidi(5, 1 << 20, ""), Some(dir.path().to_path_buf()))
        .run(&mut Quiet)
        .found
        .expect("the user property fails");
    assert_eq!(found.failure.name(), "takes_its_formula");
    assert_eq!(found.failure.property(), None);
    assert!(
        found.failure.message().contains("its formula says"),
        "{}",
        found.failure.message()
    );
    // shrunk to three ranks: on two, a step's two blocks travel as one message
    assert_eq!(found.shrunk.scenario.world.size, 3);
    let stem = found.file_stem();
    assert!(stem.starts_with("takes_its_formula-"), "{stem}");
    let files = found.files.expect("files written");
    assert_eq!(files.written, Ok(()));
    assert_eq!(files.replay, Ok(()));
    assert!(files.scenario.to_string_lossy().contains(&stem));
}

#[test]
fn a_user_property_that_takes_a_built_in_name_is_refused() {
    struct Impostor;
    impl UserProperty for Impostor {
        fn name(&self) -> &'static str {
            "validity"
        }
        fn statement(&self) -> &'static str {
            "anything"
        }
        fn check(&self, _: &Case, _: &Run) -> Result<(), String> {
            Ok(())
        }
    }
    bidi_ring::register();
    let found = Swarm {
        cases: 1,
        scenarios: vec![scenario(&bidi(3, 4096, ""))],
        user_properties: vec![Arc::new(Impostor)],
        ..Swarm::default()
    }
    .run(&mut Quiet)
    .found
    .expect("refused");
    assert_eq!(found.failure.name(), "generator");
    assert_eq!(
        found.failure.message(),
        "the user property `validity` takes the name of a built-in one"
    );
}

/// The stall of a schedule that always hangs is its own, and never excused: with the
/// contract check left out, the fault-free run still fails it.
#[test]
fn a_schedule_that_always_hangs_fails_fault_free_completion() {
    bidi_ring::register_wrong_peer();
    let base = bidi(5, 1 << 16, "").replace("\"bidi_ring\"", "\"bidi_ring_wrong_peer\"");
    let found = Swarm {
        seed: 5,
        cases: 4,
        scenarios: vec![scenario(&base)],
        gen: Gen::ranks(5),
        properties: Property::all()
            .filter(|p| *p != Property::ScheduleContract)
            .collect(),
        ..Swarm::default()
    }
    .run(&mut Quiet)
    .found
    .expect("the planted bug is caught");
    assert_eq!(
        found.failure.property(),
        Some(Property::FaultFreeCompletes),
        "{}",
        found.failure.message()
    );
    let message = found.failure.message();
    assert!(message.contains("the workload stalled"), "{message}");
    assert!(
        message.contains("rank 0 sent its chunk of step ")
            && message.contains("which did not expect it"),
        "{message}"
    );
}

/// The run described in code (`ringside_sim::builder`) rather than in a file: the ring under a
/// preemption, diagnosed and held to every property, its trace written; the planted wrong peer
/// on four ranks, caught by the contract and by the fault-free completion the ring owes, and
/// named as rank 0's mismatch.
#[test]
fn described_in_code_it_runs_is_judged_and_its_wrong_peer_is_named() {
    use ringside_sim::builder::{fault, op, Builder};
    use ringside_sim::scenario::Dtype;
    let ring = |algorithm: Algorithm, p: u32| {
        Builder::new("bidi")
            .ranks(p)
            .ports(2)
            .latency("5us")
            .bandwidth("1GB/s")
            .timeout("50ms")
            .dtype(Dtype::I64)
            .elements(29)
            .op(op::allreduce("1MiB").algorithm(algorithm))
            .seed(1)
    };
    let (case, run) = ring(bidi_ring::register(), 5)
        .fault(fault::preempt(3).at("0s"))
        .run()
        .expect("a valid scenario");
    assert_eq!(run.report.outcome, Outcome::Stalled);
    assert_eq!(run.diagnosis.root_causes()[0].to_string(), "preempted:3");
    for p in Property::all() {
        assert_eq!(p.check(&case, &run), Ok(()), "{p}");
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bidi.jsonl");
    run.write_trace(&path).expect("written");
    assert!(matches!(
        replay(&path, Default::default()),
        Ok(ReplayOutcome::Identical { .. })
    ));

    let (case, run) = ring(bidi_ring::register_wrong_peer(), 4)
        .run()
        .expect("valid");
    assert_eq!(run.report.outcome, Outcome::Stalled);
    let causes = run.diagnosis.root_cause_names();
    assert_eq!(causes, ["mismatch:0"]);
    for p in [Property::ScheduleContract, Property::FaultFreeCompletes] {
        let v = p.check(&case, &run).expect_err("the wrong peer breaks it");
        assert_eq!(v.property, p);
    }
    let e = ring(bidi_ring::register(), 4).ports(0).build().unwrap_err();
    assert!(e.to_string().starts_with("ports(): network.ports: "), "{e}");
}
