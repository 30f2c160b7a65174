//! The engine as a library user drives it: exact results, exact costs, determinism.

mod common;

use common::{scenario, shipped_files};
use ringside_sim::cost::{textbook, Cost, Net};
use ringside_sim::diagnose::Fold;
use ringside_sim::run::{run, run_events, RunOptions};
use ringside_sim::scenario::{load, Algorithm, OpKind, Outcome, Scenario};
use ringside_sim::trace::{DigestRecorder, Event, Level, Recorder, TraceWriter, VecRecorder};
use ringside_sim::units::Nanos;

/// The textbook time of a ring allreduce.
fn ring(p: u64, n: u64, net: Net) -> Cost {
    textbook(OpKind::Allreduce, Algorithm::Ring, p as u32, n, net).expect("a formula")
}

#[test]
fn ring_allreduce_is_exact_and_identical_across_ranks() {
    for p in 1..=9u32 {
        for elements in [1u32, 5, 7, 13, 64] {
            for reduce in ["sum", "prod", "max", "min"] {
                let s = scenario(&format!(
                    "name = \"exact\"\n[world]\nsize = {p}\n[workload]\niterations = 2\ndtype = \"i64\"\nelements = {elements}\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\nreduce = \"{reduce}\"\nalgorithm = \"ring\"\n"
                ));
                let out = run(&s, &RunOptions::default()).expect("runs");
                let r = &out.report;
                assert_eq!(r.outcome, Outcome::Completed, "p={p} e={elements} {reduce}");
                assert_eq!(r.ops.len(), 2);
                for (key, op) in &out.fold.ops {
                    assert!(op.correct, "p={p} e={elements} {reduce}: {key:?} wrong");
                    assert_eq!(op.ranks_completed, p);
                    assert_eq!(
                        op.results.len(),
                        1,
                        "p={p} e={elements} {reduce}: every rank holds the same bits"
                    );
                }
            }
        }
    }
}

/// Time of the first op in a scenario with no compute, in ns.
fn op_time(text: &str) -> u64 {
    let s = scenario(text);
    let out = run(&s, &RunOptions::default()).expect("runs");
    let op = &out.report.ops[0];
    op.end_ns.expect("completed") - op.start_ns
}

#[test]
fn ring_allreduce_time_is_the_textbook_formula() {
    // latency a, bandwidth 1 GB/s so b = 1 ns/byte; n divisible by p keeps chunks whole
    for (p, n, a) in [
        (2u64, 1_000_000u64, 5_000u64),
        (3, 3_000_000, 5_000),
        (4, 4_000_000, 1_000),
        (5, 1_000_000, 10_000),
        (7, 7_000_000, 2_500),
        (8, 8_192_000, 5_000),
        (12, 1_200_000, 700),
        (16, 16_000_000, 5_000),
    ] {
        let t = op_time(&format!(
            "name = \"f\"\n[world]\nsize = {p}\n[network]\nlatency = \"{a}ns\"\nbandwidth = \"1GB/s\"\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"{n}B\"\nalgorithm = \"ring\"\n"
        ));
        let formula = ring(p, n, Net::new(a, 1_000_000_000));
        // nothing rounds
        assert!(
            formula.admits(t as f64, 1e-6),
            "p={p} n={n} a={a}: {t} vs {formula:?}"
        );
    }
}

#[test]
fn ring_allreduce_time_rounds_within_a_nanosecond_per_step() {
    // 25 GB/s: b = 0.04 ns/byte, chunk sizes that do not divide evenly
    for (p, n) in [(3u64, 67_108_864u64), (6, 10_000_001), (9, 123_457)] {
        let t = op_time(&format!(
            "name = \"f\"\n[world]\nsize = {p}\n[network]\nlatency = \"5us\"\nbandwidth = \"25GB/s\"\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"{n}B\"\n"
        ));
        let formula = ring(p, n, Net::new(5_000, 25_000_000_000));
        assert!(
            formula.admits(t as f64, f64::from(formula.rounds()) + 1.0),
            "p={p} n={n}: {t} vs {formula:?}"
        );
    }
}

#[test]
fn dissemination_barrier_takes_ceil_log2_p_latencies() {
    for p in 1..=33u64 {
        let t = op_time(&format!(
            "name = \"b\"\n[world]\nsize = {p}\n[network]\nlatency = \"3us\"\n[workload]\n[[workload.ops]]\nop = \"barrier\"\n"
        ));
        let rounds = if p <= 1 {
            0
        } else {
            64 - (p - 1).leading_zeros() as u64
        };
        assert_eq!(t, rounds * 3_000, "p={p}");
    }
}

#[test]
fn reduce_bandwidth_charges_the_gamma_term() {
    // ring allreduce: (p-1)/p n of reductions on the critical path
    let (p, n) = (4u64, 4_000_000u64);
    let t = op_time(&format!(
        "name = \"g\"\n[world]\nsize = {p}\n[network]\nlatency = \"5us\"\nbandwidth = \"1GB/s\"\nreduce_bandwidth = \"2GB/s\"\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"{n}B\"\n"
    ));
    let formula = ring(p, n, Net::new(5_000, 1_000_000_000).reducing(2_000_000_000));
    // nothing rounds
    assert!(formula.admits(t as f64, 1e-6), "{t} vs {formula:?}");
}

#[test]
fn intra_host_links_are_used_between_ranks_of_a_host() {
    let slow = op_time("name = \"h\"\n[world]\nsize = 4\n[network]\nlatency = \"10us\"\nbandwidth = \"1GB/s\"\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"4000000B\"\n");
    let fast = op_time("name = \"h\"\n[world]\nsize = 4\nranks_per_host = 4\n[network]\nlatency = \"10us\"\nbandwidth = \"1GB/s\"\n[network.intra_host]\nlatency = \"1us\"\nbandwidth = \"10GB/s\"\n[workload]\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"4000000B\"\n");
    assert_eq!(slow, 6 * 10_000 + 6 * 1_000_000);
    assert_eq!(fast, 6 * 1_000 + 6 * 100_000);
}

#[test]
fn jitter_is_seeded() {
    let text = "name = \"j\"\n[world]\nsize = 5\n[network]\njitter = \"3us\"\n[workload]\niterations = 3\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n";
    let s = scenario(text);
    let a = run(
        &s,
        &RunOptions {
            seed: Some(1),
            ..Default::default()
        },
    )
    .expect("runs");
    let b = run(
        &s,
        &RunOptions {
            seed: Some(1),
            ..Default::default()
        },
    )
    .expect("runs");
    let c = run(
        &s,
        &RunOptions {
            seed: Some(2),
            ..Default::default()
        },
    )
    .expect("runs");
    assert_eq!(a.report.digest, b.report.digest);
    assert_ne!(
        a.report.digest, c.report.digest,
        "another seed, other jitter"
    );
    assert_ne!(a.report.virtual_time_ns, c.report.virtual_time_ns);
}

#[test]
fn shuffled_tie_break_is_seeded_and_still_correct() {
    let text = "name = \"s\"\n[world]\nsize = 6\n[engine]\ntie_break = \"shuffle\"\n[workload]\niterations = 2\ndtype = \"i64\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n[[workload.ops]]\nop = \"barrier\"\n";
    let s = scenario(text);
    let a = run(&s, &RunOptions::default()).expect("runs");
    let b = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(a.report.digest, b.report.digest);
    assert_eq!(a.report.outcome, Outcome::Completed);
    assert!(a.report.ops.iter().all(|o| o.correct));
}

#[test]
fn partitions_hold_traffic_until_they_heal() {
    let base = "name = \"p\"\n[world]\nsize = 4\n[group]\ntimeout = \"2s\"\n[network]\nretransmit_timeout = \"10ms\"\n[workload]\ncompute = \"1ms\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n";
    // heals after 50ms: completes late
    let s = scenario(&format!("{base}[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [2, 3]]\nat = \"500us\"\nduration = \"50ms\"\n"));
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Completed);
    assert!(out.report.virtual_time_ns > 50_000_000);
    assert!(out.report.ops.iter().all(|o| o.correct));
    // permanent: stalls at the watchdog
    let s = scenario(&format!(
        "{base}[[faults]]\nkind = \"partition\"\nsides = [[0, 1], [2, 3]]\nat = \"500us\"\n"
    ));
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
    assert_eq!(out.report.virtual_time_ns, 2_001_000_000);
    // one-way 0 -> others: still stalls, since rank 1 needs rank 0's chunks
    let s = scenario(&format!("{base}[[faults]]\nkind = \"partition\"\nsides = [[0], [1, 2, 3]]\noneway = true\nat = \"500us\"\n"));
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
}

#[test]
fn a_restarted_rank_without_elastic_membership_says_it_cannot_rejoin() {
    let s = scenario("name = \"r\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[workload]\ncompute = \"5ms\"\niterations = 2\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"2ms\"\nrestart_after = \"10ms\"\n");
    let mut rec = ringside_sim::trace::VecRecorder::default();
    let (result, _, _) = ringside_sim::run::run_events(&s, &RunOptions::seeded(0), &mut rec);
    assert_eq!(result.outcome, Outcome::Stalled);
    assert!(rec.events.iter().any(|(t, e)| *t == 12_000_000
        && matches!(e, ringside_sim::trace::Event::RejoinRefused { rank: 1, reason } if reason.contains("not elastic"))));
}

/// A recorder told whole events only: the commonest kinds are built as events rather than told
/// to it field by field.
struct ByEvents<R>(R);

impl<R: Recorder> Recorder for ByEvents<R> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.0.record(t, ev);
    }
}

/// The trace of `s` at `level` written by a writer told events as `run_events` tells them,
/// and by one told whole events only.
fn traces_both_ways(s: &Scenario, opts: &RunOptions, level: Level) -> (Vec<u8>, Vec<u8>) {
    let mut direct = TraceWriter::with_level(Vec::new(), s, 1, level).expect("header");
    let (result, _, _) = run_events(s, opts, &mut direct);
    let mut whole = ByEvents(TraceWriter::with_level(Vec::new(), s, 1, level).expect("header"));
    run_events(s, opts, &mut whole);
    let direct = direct
        .finish_into(result.outcome, None)
        .expect("in memory")
        .1;
    let whole = whole
        .0
        .finish_into(result.outcome, None)
        .expect("in memory")
        .1;
    (direct, whole)
}

#[test]
fn events_told_field_by_field_are_written_as_the_events_themselves() {
    for file in shipped_files() {
        let s = load(&file).unwrap_or_else(|e| panic!("{e}"));
        for level in [Level::Full, Level::Calls] {
            let (direct, whole) = traces_both_ways(&s, &RunOptions::seeded(2), level);
            assert!(direct == whole, "{} at {level:?}", file.display());
        }
    }
}

#[test]
fn events_told_field_by_field_digest_and_fold_as_the_events_themselves() {
    for file in shipped_files() {
        let s = load(&file).unwrap_or_else(|e| panic!("{e}"));
        for seed in 1..=3 {
            let opts = RunOptions::seeded(seed);
            let mut direct = DigestRecorder::default();
            run_events(&s, &opts, &mut direct);
            let mut whole = ByEvents(DigestRecorder::default());
            run_events(&s, &opts, &mut whole);
            let at = format!("{} seed {seed}", file.display());
            assert_eq!(direct.digest, whole.0.digest, "{at}");
            assert_fold_is_that_of_its_events(&s, &opts, &at);
        }
    }
}

/// A run's own fold (its steps and sends told field by field, and kept aside until another
/// event comes) equals one that applies every event of the run as it comes.
fn assert_fold_is_that_of_its_events(s: &Scenario, opts: &RunOptions, at: &str) {
    let mut events = VecRecorder::default();
    let (result, mut fold, _) = run_events(s, opts, &mut events);
    let mut replayed = Fold::new(s);
    let (last, rest) = events.events.split_last().expect("a diagnosis at least");
    for (t, ev) in rest {
        replayed.apply(*t, ev);
    }
    replayed.t = result.end_ns;
    replayed.outcome = Some(result.outcome);
    replayed.apply(last.0, &last.1);
    // what each receiver was sent is a set, read only by membership: its order is free
    for f in [&mut fold, &mut replayed] {
        for list in &mut f.sent {
            list.sort_by_key(|m| format!("{m:?}"));
        }
    }
    assert_eq!(format!("{fold:?}"), format!("{replayed:?}"), "{at}");
}

#[test]
fn a_runs_fold_is_that_of_its_events_for_every_schedule() {
    // without faults every step and send of a run is kept aside before it reaches the fold
    let ops = [
        ("allreduce", "ring"),
        ("allreduce", "recursive_doubling"),
        ("allreduce", "rabenseifner"),
        ("allreduce", "tree"),
        ("allreduce", "direct"),
        ("broadcast", "binomial"),
        ("broadcast", "scatter_allgather"),
        ("reduce", "binomial"),
        ("allgather", "ring"),
        ("allgather", "recursive_doubling"),
        ("reduce_scatter", "recursive_halving"),
        ("barrier", "dissemination"),
        ("barrier", "tree"),
        ("all_to_all", "pairwise"),
        ("all_to_all", "bruck"),
        ("gather", "binomial"),
        ("scatter", "direct"),
    ];
    for p in [1u32, 2, 5, 8] {
        for (op, algorithm) in ops {
            let bytes = if op == "barrier" {
                ""
            } else {
                "bytes = \"96KiB\"\n"
            };
            let s = scenario(&format!(
                "name = \"fold\"\n[world]\nsize = {p}\n[workload]\niterations = 2\ncompute = \"1us\"\nelements = 24\n[[workload.ops]]\nop = \"{op}\"\n{bytes}algorithm = \"{algorithm}\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n"
            ));
            let at = format!("{op} {algorithm} on {p} ranks");
            assert_fold_is_that_of_its_events(&s, &RunOptions::seeded(1), &at);
        }
    }
    // stopped in the middle of a call, by a stall and by the event budget
    for name in [
        "skipped-allreduce.toml",
        "pipeline-1f1b.toml",
        "healthy-allreduce.toml",
    ] {
        let s = common::shipped(name);
        for events in [50, 400] {
            let opts = RunOptions {
                limits: ringside_sim::budget::Limits {
                    events: Some(events),
                    ..ringside_sim::budget::Limits::NONE
                },
                ..RunOptions::seeded(1)
            };
            assert_fold_is_that_of_its_events(&s, &opts, &format!("{name} within {events}"));
        }
    }
}

#[test]
fn a_long_run_tells_its_progress_as_it_goes() {
    use ringside_sim::trace::TICK_EVERY;
    use std::sync::Mutex;
    // a 256-rank ring: 130,560 messages, so the engine ticks several times
    let s = scenario(
        "name = \"long\"\n[world]\nsize = 256\n[workload]\nelements = 256\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"256KiB\"\n",
    );
    let told = Mutex::new(Vec::new());
    let tell = |t: Nanos, events: u64| told.lock().expect("not poisoned").push((t, events));
    let out = run(
        &s,
        &RunOptions {
            progress: Some(&tell),
            ..RunOptions::default()
        },
    )
    .expect("runs");
    assert_eq!(out.report.outcome, Outcome::Completed);
    let told = told.into_inner().expect("not poisoned");
    let deliveries = 2 * 255 * 256;
    assert!(
        told.len() as u64 >= deliveries / TICK_EVERY,
        "told {} times over {deliveries} deliveries",
        told.len()
    );
    for w in told.windows(2) {
        assert!(w[0].0 <= w[1].0, "virtual time never goes back: {w:?}");
        assert!(w[0].1 < w[1].1, "more events each time: {w:?}");
    }
    let (t, events) = *told.last().expect("told at least once");
    assert!(t <= out.result.end_ns && events < out.report.events);
}

#[test]
fn a_rank_preempted_after_it_finished_is_waited_for_until_it_restarts() {
    // rank 0 finishes at 10ms, long before the straggler rank 1 (100ms); preempted at 50ms
    // with a restart at 150ms, it is not finished when rank 1 is, so the run goes on to
    // the restart (where, not elastic, the new process cannot rejoin)
    let s = scenario(
        "name = \"done-then-preempted\"\n[world]\nsize = 2\n[[groups]]\nname = \"solo\"\nranks = [[0], [1]]\n[workload]\ncompute = \"10ms\"\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\ngroup = \"solo\"\n[[faults]]\nkind = \"slow\"\nrank = 1\nat = \"0s\"\nfactor = 10.0\n[[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"50ms\"\nrestart_after = \"100ms\"\n",
    );
    let mut events = VecRecorder::default();
    let (result, _, _) = run_events(&s, &RunOptions::default(), &mut events);
    assert_eq!(result.end_ns, 150_000_000);
    assert!(events
        .events
        .iter()
        .any(|(t, ev)| *t == 150_000_000 && matches!(ev, Event::ProcessStart { rank: 0, .. })));
}

/// The times of `rank`'s calls and of the beginnings of faults, in a run of `s`.
fn calls_and_fault_begins(s: &Scenario) -> (Outcome, Vec<Nanos>, Vec<Nanos>, Vec<String>) {
    let mut events = VecRecorder::default();
    let (result, _, _) = run_events(s, &RunOptions::default(), &mut events);
    let calls = events
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Call { rank: 1, .. }))
        .map(|(t, _)| *t)
        .collect();
    let (begins, details) = events
        .events
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Fault {
                phase: ringside_sim::trace::FaultPhase::Begin,
                detail,
                ..
            } => Some((*t, detail.clone())),
            _ => None,
        })
        .unzip();
    (result.outcome, calls, begins, details)
}

#[test]
fn a_fault_at_a_call_begins_as_its_rank_issues_that_call() {
    let head = "name = \"at-call\"\n[world]\nsize = 3\n[group]\ntimeout = \"1s\"\n[workload]\ncompute = \"5ms\"\niterations = 4\n[[workload.ops]]\nop = \"allreduce\"\nbytes = \"64KiB\"\n[[faults]]\n";
    // preempted as it issues its 3rd call: it issues no 4th, and the others stall on it
    let s = scenario(&format!(
        "{head}kind = \"preempt\"\nrank = 1\nat_call = 3\n"
    ));
    let (outcome, calls, begins, details) = calls_and_fault_begins(&s);
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(begins, [calls[2]]);
    assert_eq!(details, ["rank 1 preempted at its call 3"]);
    let r = run(&s, &RunOptions::default()).expect("runs").report;
    assert_eq!(r.root_causes, ["preempted:1".parse().unwrap()]);
    // a pause at its 2nd call holds that call (and the others) for its duration, then all end
    let s = scenario(&format!(
        "{head}kind = \"pause\"\nrank = 1\nat_call = 2\nduration = \"200ms\"\n"
    ));
    let (outcome, calls, begins, _) = calls_and_fault_begins(&s);
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(begins, [calls[1]]);
    assert!(calls[2] >= calls[1] + 200_000_000, "{calls:?}");
    // a call the rank never reaches triggers nothing
    let s = scenario(&format!(
        "{head}kind = \"preempt\"\nrank = 1\nat_call = 5\n"
    ));
    let (outcome, calls, begins, _) = calls_and_fault_begins(&s);
    assert_eq!(
        (outcome, calls.len(), begins.len()),
        (Outcome::Completed, 4, 0)
    );
}
