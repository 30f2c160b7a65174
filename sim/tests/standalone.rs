//! The standalone executor as a library user drives it: the real ranks of shipped scenarios
//! (`RankProcess`, their collectives, sends and recvs, compute phases and timers) run on it
//! without the engine, and the observer every driver shares checks their results. A planted
//! bug is caught there too.

use ringside_sim::observe::Observer;
use ringside_sim::proto::mutation::{Mutation, Mutations};
use ringside_sim::proto::standalone::{Network, Standalone};
use ringside_sim::proto::{ProtoEvent, Rank, RankProcess};
use ringside_sim::scenario::{load, resolve};
use ringside_sim::trace::Event;
use std::path::Path;
use std::sync::Arc;

/// What a standalone run of the shipped scenario `name` did: ranks that finished their
/// workload, calls completed right, calls completed wrong.
fn run(name: &str, mutations: Mutations) -> (Vec<u32>, usize, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let cfg = Arc::new(resolve::workload(&s, s.seed, mutations));
    let p = s.world.size;
    let ranks = (0..p)
        .map(|r| RankProcess::new(cfg.clone(), Rank(r), 0))
        .collect();
    let mut x = Standalone::new(ranks, Network::latency(s.network.latency.0));
    assert!(x.run(10_000_000), "{name}: still running");
    let mut observer = Observer::new(cfg, s.seed, p as usize);
    let (mut done, mut right, mut wrong) = (Vec::new(), 0, 0);
    for (t, rank, pe) in x.events() {
        if matches!(pe, ProtoEvent::WorkloadDone) {
            done.push(rank.0);
        }
        match observer.observe(rank.0, *t, pe.clone(), true).event {
            Some(Event::Complete {
                correct: Some(true),
                ..
            }) => right += 1,
            Some(Event::Complete {
                correct: Some(false),
                ..
            }) => wrong += 1,
            _ => {}
        }
    }
    done.sort_unstable();
    (done, right, wrong)
}

#[test]
fn shipped_jobs_run_to_the_right_results_without_the_engine() {
    for name in [
        "healthy-allreduce.toml",
        "hierarchical-allreduce.toml",
        "mesh-tp-dp.toml",
        "moe-all-to-all.toml",
        "pipeline-1f1b.toml",
    ] {
        let (done, right, wrong) = run(name, Mutations::NONE);
        let p = load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios")
                .join(name),
        )
        .unwrap()
        .world
        .size;
        assert_eq!(
            done,
            (0..p).collect::<Vec<_>>(),
            "{name}: ranks that finished"
        );
        assert!(
            right > 0 && wrong == 0,
            "{name}: {right} right, {wrong} wrong"
        );
    }
}

#[test]
fn a_planted_bug_gives_wrong_results_there_too() {
    // rank 0 takes its last chunk into the wrong block: a wrong result, or a rank 0 that
    // waits in vain for the chunk it expects
    let (done, _, wrong) = run("healthy-allreduce.toml", Mutation::RingWrongChunk.into());
    assert!(
        wrong > 0 || done != [0, 1, 2],
        "a ring that writes the wrong block is caught"
    );
    let (_, _, wrong) = run("pipeline-1f1b.toml", Mutation::P2pCorruptPayload.into());
    assert!(wrong > 0, "a send of the wrong data is caught");
}

/// ringside's own rank process is a node like any other (`proto::node::Node`): it says what it
/// waits for. In a five-rank elastic group split two against three, a rank of the minority
/// waits in the rendezvous for generation 1 for the members it cannot reach, while a member of
/// the majority rebuilds, finishes its workload, and then waits for nobody.
#[test]
fn an_elastic_rank_cut_off_in_a_minority_says_it_waits_for_the_majority() {
    use ringside_sim::proto::node::Node;
    let s = ringside_sim::scenario::parse(
        "name = \"split\"\n[world]\nsize = 5\n[group]\ntimeout = \"1s\"\n\
         elastic = { min_size = 2, max_size = 5, heartbeat_interval = \"10ms\" }\n\
         [workload]\niterations = 1000\ncompute = \"1ms\"\n\
         [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KiB\"\n",
        "split.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cfg = Arc::new(resolve::workload(&s, s.seed, Mutations::NONE));
    let ranks = (0..5)
        .map(|r| RankProcess::new(cfg.clone(), Rank(r), 0))
        .collect();
    let mut x = Standalone::new(ranks, Network::latency(5_000));
    x.run_until(20_000_000);
    x.isolate(&[Rank(3), Rank(4)]);
    x.run_until(2_000_000_000);
    let minority = x.node(Rank(3)).expect("alive").wait_state().expect("waits");
    assert_eq!(minority.on, "rendezvous for generation 1");
    assert_eq!(minority.waiting_for, [Rank(0), Rank(1), Rank(2)]);
    let majority = x.node(Rank(0)).expect("alive");
    assert!(
        majority.membership().is_some_and(|m| m.generation.0 >= 1),
        "the majority rebuilt"
    );
    assert!(majority.finished() && majority.wait_state().is_none());
}
