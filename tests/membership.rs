//! Elastic membership and the registry: the properties of the registry (docs/properties.md)
//! under proptest fault schedules of elastic jobs and registries, each shown to catch a
//! deliberately broken variant, and the shipped scenarios.
//!
//! Case counts default to CI-sized values; `PROPTEST_CASES=N` overrides them. A failing case
//! prints its scenario as TOML: save it and `ringside run` it to reproduce.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use ringside_sim::check::strategy::membership::{elastic_case, registry_case};
use ringside_sim::check::{Case, Kind, Mutation, Mutations, Property, Run, Violation};
use ringside_sim::proto::Rank;
use ringside_sim::replay::{replay, ReplayOutcome};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{parse, Outcome, RootCause, Scenario};
use ringside_sim::trace::Event;

const MS: u64 = 1_000_000;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    }
}

mod common;

use common::{scenario, shipped};

/// The real code.
const REAL: Mutations = Mutations::NONE;

/// What a run keeps under any schedule, healing or not: every safety property.
fn safety() -> Vec<Property> {
    Property::all()
        .filter(|p| p.kind() == Kind::Safety)
        .collect()
}

/// And once every fault has healed: every property.
fn every() -> Vec<Property> {
    Property::all().collect()
}

/// Runs `s` once on the real code and checks `properties` in order: the run, or the first
/// violation.
fn check(s: &Scenario, properties: &[Property]) -> Result<Run, Violation> {
    check_broken(s, REAL, properties)
}

/// [`check`] with `mutations` planted.
fn check_broken(
    s: &Scenario,
    mutations: Mutations,
    properties: &[Property],
) -> Result<Run, Violation> {
    let case = Case::new(s.clone()).with_mutations(mutations);
    let run = case.run();
    for p in properties {
        p.check(&case, &run)?;
    }
    Ok(run)
}

fn record(s: &Scenario, mutations: Mutations) -> Run {
    Case::new(s.clone()).with_mutations(mutations).run()
}

proptest! {
    #![proptest_config(config(32))]

    /// Safety under any schedule, healing or not: one world per generation, valid collectives,
    /// and every other safety property.
    #[test]
    fn elastic_safety(case in elastic_case(false)) {
        let res = check(&case.scenario(), &safety());
        prop_assert!(res.is_ok(), "{}\n{}", res.err().unwrap(), case.toml());
    }

    /// Safety, then liveness: once everything has healed, the job finishes within the bound
    /// its time limit sets.
    #[test]
    fn elastic_liveness(case in elastic_case(true)) {
        let res = check(&case.scenario(), &every());
        prop_assert!(res.is_ok(), "{}\n{}", res.err().unwrap(), case.toml());
    }

    /// Registry views converge once partitions, losses, pauses and restarts are over.
    #[test]
    fn registry_convergence(case in registry_case()) {
        let res = check(&case.scenario(), &every());
        prop_assert!(res.is_ok(), "{}\n{}", res.err().unwrap(), case.toml());
    }
}

/// Searches deterministic generated cases, broken by `mutation`, for one that breaks
/// `property`; returns how many cases it took.
fn search<S: Strategy>(
    strategy: S,
    limit: u32,
    property: Property,
    mutation: Mutation,
    scenario: impl Fn(&S::Value) -> Scenario,
) -> u32 {
    let mut runner = TestRunner::deterministic();
    for i in 0..limit {
        let case = strategy.new_tree(&mut runner).expect("a case").current();
        if let Err(v) = check_broken(&scenario(&case), mutation.into(), &[property]) {
            assert_eq!(v.property, property, "{v}");
            return i + 1;
        }
    }
    panic!("no case out of {limit} broke `{property}`");
}

// ---- one world per generation -------------------------------------------------------------

#[test]
fn the_minority_side_of_a_partition_never_forms_a_generation() {
    let rec = check(&shipped("elastic-partition-majority.toml"), &safety())
        .unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Rebuilt);
    let gens = &rec.fold.membership.generations;
    assert_eq!(gens.len(), 1, "{gens:?}");
    assert_eq!(gens[0].members, vec![2, 3, 4]);
    // the minority says why it waits: the members it reaches and the quorum it needs
    let waits: Vec<_> = rec
        .events()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::RendezvousWait {
                reachable,
                quorum,
                reason,
                ..
            } => Some((reachable.clone(), *quorum, reason.clone())),
            _ => None,
        })
        .collect();
    assert!(!waits.is_empty());
    for (reachable, quorum, reason) in waits {
        assert!(reachable.iter().all(|r| *r < 2), "{reachable:?}");
        assert_eq!(quorum, 3);
        assert!(reason.starts_with("quorum lost"), "{reason}");
    }
    let view = &rec.fold.membership.waiting;
    assert!(view.keys().all(|r| *r < 2) && !view.is_empty(), "{view:?}");
}

#[test]
fn without_the_quorum_rule_a_partition_splits_the_brain() {
    let s = shipped("elastic-partition-majority.toml");
    let broken = Mutations::from(Mutation::NoQuorum);
    let rec = record(&s, broken);
    let v = Property::OneWorldPerGeneration
        .check(&Case::new(s).with_mutations(broken), &rec)
        .expect_err("split brain");
    assert!(v.message.contains("split brain"), "{v}");
    assert!(!rec.fold.membership.conflicts.is_empty());
    // and generated schedules find it quickly
    let no_quorum = Mutation::NoQuorum;
    let n = search(
        elastic_case(false),
        200,
        Property::OneWorldPerGeneration,
        no_quorum,
        |c| c.scenario(),
    );
    assert!(n <= 200);
}

// ---- validity of the collectives of a new generation ---------------------------------------

#[test]
fn rebuilt_collectives_reduce_exactly_their_members_inputs() {
    for name in [
        "elastic-three-workers.toml",
        "elastic-restart-rejoins.toml",
        "elastic-partition-majority.toml",
    ] {
        let rec = check(&shipped(name), &[Property::Agreement, Property::Validity])
            .unwrap_or_else(|v| panic!("{name}: {v}"));
        let rebuilt_ops = rec
            .fold
            .ops
            .values()
            .filter(|o| o.generation.0 > 0 && o.ranks_completed > 0)
            .count();
        assert!(
            rebuilt_ops > 0,
            "{name}: collectives ran in a later generation"
        );
        // a generation's calls have exactly its members
        for (_, e) in rec.events() {
            if let Event::Call {
                generation,
                members,
                ..
            } = e
            {
                let g = rec
                    .fold
                    .membership
                    .generations
                    .iter()
                    .find(|g| g.generation == generation.0);
                if let Some(g) = g {
                    assert_eq!(*members as usize, g.members.len(), "{name}");
                }
            }
        }
    }
}

#[test]
fn fingerprints_without_the_generation_let_stale_chunks_corrupt_results() {
    let no_generation_check = Mutation::NoGenerationCheck;
    let n = search(
        elastic_case(true),
        400,
        Property::Validity,
        no_generation_check,
        |c| c.scenario(),
    );
    assert!(n <= 400);
}

// ---- liveness ------------------------------------------------------------------------------

/// Every rank alone for a while: no side has a majority, so no generation forms until the
/// partition heals — and then one must.
const ISOLATED: &str = r#"
name = "isolated"
time_limit = "5s"
[world]
size = 3
[network]
retransmit_timeout = "20ms"
[group]
timeout = "200ms"
[group.elastic]
min_size = 1
max_size = 3
heartbeat_interval = "10ms"
heartbeat_misses = 3
[workload]
iterations = 20
compute = "10ms"
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
[[faults]]
kind = "partition"
sides = [[0], [1], [2]]
at = "55ms"
duration = "300ms"
"#;

#[test]
fn after_a_heal_the_group_rebuilds_and_finishes() {
    let s = scenario(ISOLATED);
    let rec = check(&s, &every()).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Rebuilt);
    let formed = &rec.fold.membership.generations;
    assert!(
        formed.iter().all(|g| g.formed_ns >= 355 * MS),
        "nothing forms while every rank is alone: {formed:?}"
    );
}

#[test]
fn a_rendezvous_that_never_retries_stays_stuck_after_the_heal() {
    let s = scenario(ISOLATED);
    let broken = Mutations::from(Mutation::NoRetry);
    let v = check_broken(&s, broken, &[Property::Liveness])
        .err()
        .expect("stuck");
    assert!(v.message.contains("after every fault had healed"), "{v}");
    let no_retry = Mutation::NoRetry;
    let n = search(elastic_case(true), 200, Property::Liveness, no_retry, |c| {
        c.scenario()
    });
    assert!(n <= 200);
}

#[test]
fn a_lost_quorum_ends_the_run_as_a_stall_not_a_timeout() {
    // generation 1 = {1, 2}; then 2 dies for good: {1} alone is no majority of {1, 2}
    let s = scenario(
        r#"
name = "quorum-lost"
time_limit = "60s"
[world]
size = 3
[group]
timeout = "200ms"
[group.elastic]
min_size = 1
max_size = 3
heartbeat_interval = "10ms"
[workload]
iterations = 50
compute = "10ms"
[[workload.ops]]
op = "allreduce"
bytes = "1MiB"
[[faults]]
kind = "preempt"
rank = 0
at = "20ms"
[[faults]]
kind = "preempt"
rank = 2
at = "200ms"
"#,
    );
    // every property holds: a true quorum loss is a live, diagnosed stall
    let rec = check(&s, &every()).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Stalled);
    assert!(
        rec.result.end_ns < 1_000 * MS,
        "stops once nothing can change"
    );
    let w = rec.fold.membership.waiting.get(&1).expect("rank 1 waits");
    assert_eq!((w.quorum, w.reachable.clone()), (2, vec![1]));
}

// ---- registry convergence ------------------------------------------------------------------

const REGISTRY_PARTITION: &str = r#"
name = "registry-partition"
[world]
size = 2
[workload]
[[workload.registry]]
at = "1ms"
rank = 0
action = "join"
group = "todo"
[[workload.registry]]
at = "1ms"
rank = 1
action = "join"
group = "todo"
[[workload.registry]]
at = "600ms"
rank = 0
action = "query"
group = "todo"
expect_members = [0]
[[workload.registry]]
at = "3s"
rank = 0
action = "query"
group = "todo"
expect_members = [0, 1]
[[workload.registry]]
at = "3s"
rank = 1
action = "query"
group = "todo"
expect_members = [0, 1]
[[faults]]
kind = "partition"
sides = [[0], [1]]
at = "100ms"
duration = "1s"
"#;

#[test]
fn registry_views_shrink_in_a_partition_and_converge_after_it() {
    let s = scenario(REGISTRY_PARTITION);
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert!(out.report.expect.ok, "{:?}", out.report.expect);
    assert_eq!(out.report.queries.len(), 3);
    let rec = check(&s, &every()).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Completed);
}

#[test]
fn without_a_state_exchange_on_reconnection_views_diverge() {
    let s = scenario(REGISTRY_PARTITION);
    let broken = Mutations::from(Mutation::NoRegistryResync);
    let v = check_broken(&s, broken, &[Property::Liveness])
        .err()
        .expect("diverged");
    assert!(v.message.contains("at 3000.000ms node"), "{v}");
    assert!(v.message.contains("sees todo"), "{v}");
    // the report's expectations catch it too
    let opts = RunOptions {
        mutations: broken,
        ..RunOptions::default()
    };
    let out = run(&s, &opts).expect("runs");
    assert!(!out.report.expect.ok);
    assert!(out.report.expect.failures[0].contains("registry query"));
    let no_registry_resync = Mutation::NoRegistryResync;
    let n = search(
        registry_case(),
        200,
        Property::Liveness,
        no_registry_resync,
        |c| c.scenario(),
    );
    assert!(n <= 200);
}

#[test]
fn the_replicated_todo_list_survives_the_loss_of_a_node() {
    let rec = record(&shipped("registry-todo-list.toml"), REAL);
    assert_eq!(rec.result.outcome, Outcome::Completed);
    let list_of = |node: u32| -> Vec<String> {
        rec.events()
            .iter()
            .filter_map(|(_, e)| match e {
                Event::RegistryDeliver { rank, message, .. } if *rank == node => {
                    Some(message.clone())
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(list_of(1), ["buy milk", "write the report"]);
    assert_eq!(
        list_of(0),
        ["buy milk", "write the report", "call the plumber"]
    );
    let left: Vec<_> = rec
        .events()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::RegistryNotify { rank: 0, left, .. } if !left.is_empty() => Some(left.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(left, [vec![1]], "the monitor hears that node 1 left");
}

#[test]
fn a_query_that_sees_other_members_fails_the_expectations() {
    let text = REGISTRY_PARTITION.replace("expect_members = [0]\n", "expect_members = [0, 1]\n");
    let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
    assert!(!out.report.expect.ok);
    let f = &out.report.expect.failures;
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].contains("rank 0") && f[0].contains("[0]") && f[0].contains("expected [0,1]"),
        "{f:?}"
    );
}

// ---- the shipped scenarios -----------------------------------------------------------------

#[test]
fn shipped_elastic_scenarios_keep_every_property_and_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in [
        "elastic-three-workers.toml",
        "elastic-partition-majority.toml",
        "elastic-restart-rejoins.toml",
        "elastic-store-failure.toml",
        "registry-todo-list.toml",
    ] {
        let s = shipped(name);
        check(&s, &every()).unwrap_or_else(|v| panic!("{name}: {v}"));
        let trace = dir.path().join("t.jsonl");
        let out = run(
            &s,
            &RunOptions {
                trace: Some(&trace),
                ..RunOptions::default()
            },
        )
        .expect("runs");
        assert!(out.report.expect.ok, "{name}: {:?}", out.report.expect);
        match replay(&trace, REAL).expect("readable") {
            ReplayOutcome::Identical { digest, .. } => assert_eq!(digest, out.report.digest),
            d => panic!("{name}: {d:?}"),
        }
    }
}

#[test]
fn generations_in_the_report_list_each_generation_once_with_its_members() {
    let out = run(
        &shipped("elastic-restart-rejoins.toml"),
        &RunOptions::default(),
    )
    .expect("runs");
    let g: Vec<(u32, Vec<u32>)> = out
        .report
        .generations
        .iter()
        .map(|g| (g.generation, g.members.clone()))
        .collect();
    assert_eq!(g, [(0, vec![0, 1, 2]), (1, vec![0, 1]), (2, vec![0, 1, 2])]);
    assert!(out.report.generations[1].formed_ns > 0);
    assert!(out.report.generations[2].formed_ns > out.report.generations[1].formed_ns);
    assert_eq!(out.report.outcome, Outcome::Rebuilt);
}

#[test]
fn a_dead_store_stops_every_rebuild() {
    let rec = record(&shipped("elastic-store-failure.toml"), REAL);
    assert_eq!(rec.result.outcome, Outcome::Stalled);
    assert!(rec.fold.membership.generations.is_empty());
    let reasons: Vec<&str> = rec
        .fold
        .membership
        .waiting
        .values()
        .map(|w| w.reason.as_str())
        .collect();
    assert_eq!(reasons, ["the store does not answer"; 2]);
    // with the store alive, the same failure is survived
    let mut s = shipped("elastic-store-failure.toml");
    s.faults.remove(0);
    s.expect = None;
    let rec = check(&s, &every()).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Rebuilt);
}

#[test]
fn faults_name_the_store_only_with_a_store_rendezvous() {
    let plain = "name = \"s\"\n[world]\nsize = 3\n[workload]\n[[faults]]\nkind = \"preempt\"\nrank = 3\nat = \"1ms\"\n";
    let e = parse(plain, "s.toml").expect_err("no store without a store rendezvous");
    assert_eq!(e.key, "faults[0].rank", "{e}");
    let store = plain.replace(
        "[workload]",
        "[group]\nelastic = { min_size = 2, max_size = 3, rendezvous = \"store\" }\n[workload]",
    );
    assert!(parse(&store, "s.toml").is_ok());
    let cut = store.replace(
        "kind = \"preempt\"\nrank = 3\n",
        "kind = \"partition\"\nsides = [[0, 1], [2, 3]]\n",
    );
    assert!(
        parse(&cut, "s.toml").is_ok(),
        "the store can be partitioned off"
    );
    let beyond = store.replace("rank = 3", "rank = 4");
    let e = parse(&beyond, "s.toml").expect_err("nothing after the store");
    assert_eq!(e.key, "faults[0].rank", "{e}");
}

// ---- diagnosis of ranks the group went on without -------------------------------------------

const THREE_ELASTIC: &str = r#"
name = "left-behind"
[world]
size = 3
[group]
timeout = "2s"
[group.elastic]
min_size = 2
max_size = 3
heartbeat_interval = "100ms"
[workload]
iterations = 1
elements = 1
[[workload.ops]]
op = "allreduce"
bytes = "64MiB"
"#;

fn causes_of(text: &str) -> (Outcome, Vec<u32>, Vec<String>) {
    let s = scenario(text);
    let out = run(&s, &RunOptions::default()).expect("runs");
    (
        out.report.outcome,
        out.report.blocked.iter().map(|b| b.rank).collect(),
        out.report
            .root_causes
            .iter()
            .map(ToString::to_string)
            .collect(),
    )
}

#[test]
fn a_rank_whose_heartbeats_are_cut_one_way_is_left_behind_by_the_partition() {
    // 2 hears the others but they never hear it: they rebuild without 2, which still waits
    // for a chunk from 1 in generation 0; 1 is no straggler, it moved on
    let (outcome, blocked, causes) = causes_of(&format!(
        "{THREE_ELASTIC}[[faults]]\nkind = \"partition\"\nsides = [[2], [0, 1]]\nat = \"0ns\"\n\
         oneway = true\n"
    ));
    assert_eq!(outcome, Outcome::Rebuilt);
    assert_eq!(blocked, [2]);
    assert_eq!(causes, ["partitioned:0,1|2"]);
}

#[test]
fn a_rank_cut_off_from_a_member_it_does_not_wait_for_is_left_behind_by_the_partition() {
    // 0 waits for a chunk from 2, which it can still reach; the partition from 1 is why the
    // group went on without it
    let (outcome, blocked, causes) = causes_of(&format!(
        "{THREE_ELASTIC}[[faults]]\nkind = \"partition\"\nsides = [[0], [1]]\nat = \"0ns\"\n"
    ));
    assert_eq!(outcome, Outcome::Rebuilt);
    assert_eq!(blocked, [0]);
    assert_eq!(causes, ["partitioned:0|1"]);
}

#[test]
fn the_minority_of_a_partition_is_blocked_on_the_partition_and_a_lost_quorum() {
    let out = run(
        &shipped("elastic-partition-majority.toml"),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(out.report.outcome, Outcome::Rebuilt);
    let quorum = out
        .diagnosis
        .causes
        .iter()
        .find(|c| c.cause == RootCause::QuorumLost)
        .expect("quorum_lost is a root cause");
    assert_eq!(
        quorum.blocked,
        [0, 1],
        "both minority ranks lack the quorum"
    );
    assert!(
        quorum.text.contains("strict majority is 3"),
        "{}",
        quorum.text
    );
}

#[test]
fn a_dead_store_is_named_as_a_root_cause() {
    let out = run(
        &shipped("elastic-store-failure.toml"),
        &RunOptions::default(),
    )
    .expect("runs");
    let store = out
        .diagnosis
        .causes
        .iter()
        .find(|c| c.cause == RootCause::Preempted(Rank(3)))
        .expect("the store's death is a root cause");
    assert!(
        store.text.contains("rendezvous store (node 3)"),
        "{}",
        store.text
    );
    assert_eq!(store.blocked, [0, 1]);
}

#[test]
fn a_bug_that_recurs_in_every_generation_ends_the_run_as_a_diagnosed_stall() {
    // every rebuilt generation repeats iteration 0, and rank 3 repeats its wrong call: the
    // group would rebuild forever
    let s = scenario(
        r#"
name = "recurring-bug"
[world]
size = 4
[group]
timeout = "2s"
[group.elastic]
min_size = 2
max_size = 4
[workload]
elements = 1
[[workload.ops]]
op = "allreduce"
bytes = "16MiB"
[[faults]]
kind = "mismatch"
rank = 3
iteration = 0
op_index = 0
op = "reduce"
"#,
    );
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
    assert!(out.report.generations.len() > 1, "it did try to rebuild");
    assert!(out.result.end_ns < 30_000 * MS, "{} ns", out.result.end_ns);
    assert_eq!(out.report.root_causes, [RootCause::Mismatch(Rank(3))]);
}

#[test]
fn a_registry_node_that_hangs_ends_the_run_once_every_step_ran() {
    let s = scenario(
        r#"
name = "registry-hang"
[world]
size = 2
[workload]
[[workload.registry]]
at = "1ms"
rank = 0
action = "join"
group = "todo"
[[workload.registry]]
at = "50ms"
rank = 0
action = "query"
group = "todo"
[[faults]]
kind = "hang"
rank = 1
iteration = 0
"#,
    );
    let out = run(&s, &RunOptions::default()).expect("runs");
    assert_eq!(out.report.outcome, Outcome::Stalled);
    assert!(out.result.end_ns <= 50 * MS, "{} ns", out.result.end_ns);
}

fn elastic_pair(rendezvous: &str, iterations: u32, compute: &str, faults: &str) -> String {
    format!(
        "name = \"pair\"\n[world]\nsize = 2\n[group]\ntimeout = \"2s\"\n[group.elastic]\n\
         min_size = 2\nmax_size = 3\nheartbeat_interval = \"100ms\"\nrendezvous = \"{rendezvous}\"\n\
         [workload]\niterations = {iterations}\ncompute = \"{compute}\"\nelements = 1\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"64MiB\"\n{faults}"
    )
}

#[test]
fn an_elastic_run_waits_for_every_member_of_the_newest_generation() {
    // rank 0 skips the last call; every rebuild resumes at it, and rank 0, done at once in the
    // new generation, must not end the run before rank 1 even installed it
    let (outcome, blocked, causes) = causes_of(&elastic_pair(
        "store",
        10,
        "0ns",
        "[[faults]]\nkind = \"skip\"\nrank = 0\niteration = 9\nop_index = 0\n",
    ));
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!(blocked, [1]);
    assert_eq!(causes, ["skipped:0"]);
}

#[test]
fn a_restarted_process_outside_the_group_lost_what_its_old_one_sent() {
    // 0 dies mid-call and comes back as a fresh process; a majority of {0, 1} needs both
    let (outcome, blocked, causes) = causes_of(&elastic_pair(
        "quorum",
        1,
        "10ms",
        "[[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"10032115ns\"\nrestart_after = \"200ms\"\n",
    ));
    assert_eq!(outcome, Outcome::Stalled);
    assert_eq!(blocked, [1]);
    assert_eq!(causes, ["preempted:0"]);
}

#[test]
fn a_stall_after_every_fault_healed_is_live_when_the_quorum_is_truly_gone() {
    // the restarted 0 lost its promises: {1} alone is no majority of {0, 1}
    let restart = "[[faults]]\nkind = \"preempt\"\nrank = 0\nat = \"10032115ns\"\n\
                   restart_after = \"200ms\"\n";
    let s = scenario(&elastic_pair("quorum", 1, "10ms", restart));
    let rec = check(&s, &every()).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(rec.result.outcome, Outcome::Stalled);
}

#[test]
fn a_group_that_keeps_rebuilding_names_the_link_that_makes_it_flap() {
    // heartbeats delayed by about the detection time: members keep losing sight of 0 and 1
    let s = "name = \"flap\"\nseed = 2814032929184147307\n[world]\nsize = 3\n[group]\n\
         timeout = \"2s\"\n[group.elastic]\nmin_size = 2\nmax_size = 3\n\
         heartbeat_interval = \"100ms\"\nrendezvous = \"store\"\n[workload]\niterations = 4\n\
         compute = \"10ms\"\nelements = 1\n[[workload.ops]]\nop = \"allreduce\"\n\
         bytes = \"64MiB\"\n[[faults]]\nkind = \"delay\"\nlink = [0, 1]\nat = \"50160577ns\"\n\
         extra = \"279500us\"\njitter = \"139750001ns\"\n";
    let (outcome, blocked, causes) = causes_of(s);
    assert_eq!(outcome, Outcome::Stalled);
    assert!(!blocked.is_empty());
    assert!(!causes.is_empty());
    for c in &causes {
        assert!(c == "slow:0" || c == "slow:1", "{causes:?}");
    }
}
