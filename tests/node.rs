//! A protocol of one's own as a node (`ringside_sim::proto::node`): a coordinated barrier,
//! registered under a name, runs on the engine under faults, its waits diagnosed by the same
//! solver as collectives, its runs checked by the properties; its planted bug (the
//! coordinator forgets to release the last rank) is caught by the checker, shrunk, and named
//! with whom the stuck rank waits for.

mod common;

use ringside_sim::builder::{fault, Builder};
use ringside_sim::check::swarm::{Quiet, Swarm};
use ringside_sim::check::{Case, Gen, Property, Run, UserProperty};
use ringside_sim::proto::event::Outbox;
use ringside_sim::proto::msg::Msg;
use ringside_sim::proto::node::{self, Node, NodeCtx, NodeFactory, NodeKind, Waiting};
use ringside_sim::proto::{Input, Rank};
use ringside_sim::scenario::{FaultKind, Outcome, Scenario};
use ringside_sim::units::Nanos;
use std::sync::{Arc, OnceLock};

const ARRIVE: u8 = 0;
const RELEASE: u8 = 1;

/// A barrier of `rounds` rounds coordinated by rank 0: every rank tells the coordinator it
/// arrived; once all have, the coordinator releases every other rank; a rank passes its last
/// round and is finished. `forgets_last`: in the last round, the coordinator does not
/// release the last rank.
struct Barrier {
    me: Rank,
    p: u32,
    rounds: u32,
    round: u32,
    /// The coordinator: who arrived in the current round.
    arrived: Vec<bool>,
    /// The coordinator: arrivals of the next round that came early.
    early: Vec<bool>,
    forgets_last: bool,
}

impl Barrier {
    fn new(ctx: &NodeCtx, forgets_last: bool) -> Barrier {
        Barrier {
            me: ctx.me,
            p: ctx.world,
            rounds: 2,
            round: 0,
            arrived: vec![false; ctx.world as usize],
            early: vec![false; ctx.world as usize],
            forgets_last,
        }
    }

    fn coordinator(&self) -> bool {
        self.me.0 == 0
    }

    fn msg(kind: u8, round: u32) -> Msg {
        let mut b = vec![kind];
        b.extend_from_slice(&round.to_le_bytes());
        Msg::Node(Box::new(b))
    }

    /// Enters the current round: the coordinator counts itself, the others say they arrived.
    fn enter(&mut self, out: &mut Outbox) {
        if self.round == self.rounds {
            return;
        }
        if self.coordinator() {
            self.arrived = std::mem::replace(&mut self.early, vec![false; self.p as usize]);
            self.arrived[0] = true;
            self.release_if_all(out);
        } else {
            out.send(Rank(0), Barrier::msg(ARRIVE, self.round), 5);
        }
    }

    fn release_if_all(&mut self, out: &mut Outbox) {
        if !self.arrived.iter().all(|&a| a) {
            return;
        }
        let last_round = self.round + 1 == self.rounds;
        let last = if self.forgets_last && last_round {
            self.p - 1
        } else {
            self.p
        };
        for r in 1..last {
            out.send(Rank(r), Barrier::msg(RELEASE, self.round), 5);
        }
        self.round += 1;
        self.enter(out);
    }
}

impl Node for Barrier {
    fn handle(&mut self, _now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Start => self.enter(out),
            Input::Message {
                from,
                msg: Msg::Node(b),
            } => {
                let (Some(&kind), Some(round)) = (b.first(), b.get(1..5)) else {
                    return;
                };
                let round = u32::from_le_bytes(round.try_into().unwrap_or_default());
                match kind {
                    ARRIVE if self.coordinator() && round == self.round => {
                        self.arrived[from.0 as usize] = true;
                        self.release_if_all(out);
                    }
                    ARRIVE if self.coordinator() && round == self.round + 1 => {
                        self.early[from.0 as usize] = true;
                    }
                    RELEASE if !self.coordinator() && round == self.round => {
                        self.round += 1;
                        self.enter(out);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn wait_state(&self) -> Option<Waiting> {
        if self.finished() {
            return None;
        }
        let waiting_for = if self.coordinator() {
            (0..self.p)
                .filter(|&r| !self.arrived[r as usize])
                .map(Rank)
                .collect()
        } else {
            vec![Rank(0)]
        };
        Some(Waiting {
            on: format!("barrier round {}", self.round),
            waiting_for,
        })
    }

    fn finished(&self) -> bool {
        self.round == self.rounds
    }
}

fn barrier() -> NodeKind {
    static KIND: OnceLock<NodeKind> = OnceLock::new();
    *KIND.get_or_init(|| {
        node::register(NodeFactory::new("barrier", |ctx| {
            Box::new(Barrier::new(ctx, false))
        }))
        .expect("registered once")
    })
}

fn barrier_forgets_last() -> NodeKind {
    static KIND: OnceLock<NodeKind> = OnceLock::new();
    *KIND.get_or_init(|| {
        node::register(NodeFactory::new("barrier_forgets_last", |ctx| {
            Box::new(Barrier::new(ctx, true))
        }))
        .expect("registered once")
    })
}

fn job(kind: NodeKind, p: u32) -> Builder {
    Builder::new("barrier")
        .ranks(p)
        .latency("5us")
        .retransmit_timeout("1ms")
        .node(kind)
        .seed(5)
}

/// Every rank passes every round: its node finished.
struct EveryRankPasses;

impl UserProperty for EveryRankPasses {
    fn name(&self) -> &'static str {
        "every_rank_passes"
    }
    fn statement(&self) -> &'static str {
        "once the faults heal, every live rank passes every round of the barrier"
    }
    fn check(&self, case: &Case, run: &Run) -> Result<(), String> {
        let permanent = case
            .scenario
            .faults
            .iter()
            .any(|f| f.duration().is_none() && f.kind() != FaultKind::Slow);
        if permanent || run.report.outcome == Outcome::Completed {
            return Ok(());
        }
        Err(format!(
            "the run {}: {}",
            run.report.outcome,
            run.report.explanation.join("; ")
        ))
    }
}

#[test]
fn a_node_of_ones_own_runs_under_faults_and_its_waits_are_diagnosed() {
    let kind = barrier();
    let (case, run) = job(kind, 4).run().expect("valid");
    assert_eq!(run.report.outcome, Outcome::Completed);
    for p in Property::all() {
        assert_eq!(p.check(&case, &run), Ok(()), "{p}");
    }

    // the coordinator dies: every other rank waits for it, for good
    let (case, run) = job(kind, 4)
        .fault(fault::preempt(0).at("3us"))
        .run()
        .expect("valid");
    assert_eq!(run.report.outcome, Outcome::Stalled);
    let causes = run.diagnosis.root_cause_names();
    assert_eq!(causes, ["preempted:0"], "{:#?}", run.report.explanation);
    assert_eq!(run.diagnosis.blocked_ranks(), [1, 2, 3]);
    for b in &run.diagnosis.blocked {
        assert_eq!(b.waiting_for, [0]);
        assert_eq!(b.op.to_string(), "barrier round 0");
    }
    for p in Property::all() {
        assert_eq!(p.check(&case, &run), Ok(()), "{p}");
    }

    // a partition that heals delays it; one that does not holds rank 3's side
    let (_, healed) = job(kind, 4)
        .fault(fault::partition(&[&[0, 1], &[2, 3]]).lasting("3ms"))
        .run()
        .unwrap();
    assert_eq!(healed.report.outcome, Outcome::Completed);
    let (_, cut) = job(kind, 4)
        .fault(fault::partition(&[&[0, 1, 2], &[3]]))
        .run()
        .unwrap();
    assert_eq!(cut.report.outcome, Outcome::Stalled);
    let causes = cut.diagnosis.root_cause_names();
    assert_eq!(
        causes,
        ["partitioned:0,1,2|3"],
        "{:#?}",
        cut.report.explanation
    );
    // and a pause of the coordinator only delays it
    let (_, paused) = job(kind, 4)
        .fault(fault::pause(0, "2ms").at("1us"))
        .run()
        .unwrap();
    assert_eq!(paused.report.outcome, Outcome::Completed);

    // its trace replays, naming the node
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("barrier.jsonl");
    run.write_trace(&path).expect("written");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\"node\":\"barrier\""),
        "the header names the node"
    );
    assert!(text.contains("\"kind\":\"node_wait\""));
    let (again, _) = Run::from_trace(text.into_bytes(), "barrier.jsonl").unwrap();
    assert_eq!(again, case);
}

#[test]
fn the_swarm_checks_a_node_under_generated_faults() {
    let base: Scenario = job(barrier(), 4).build().unwrap();
    let gen = Gen {
        fault_kinds: vec![
            FaultKind::Pause,
            FaultKind::Delay,
            FaultKind::Loss,
            FaultKind::Partition,
            FaultKind::Preempt,
        ],
        ..Gen::ranks(4)
    };
    let summary = Swarm {
        seed: 11,
        cases: 24,
        scenarios: vec![base],
        gen,
        user_properties: vec![Arc::new(EveryRankPasses)],
        ..Swarm::default()
    }
    .run(&mut Quiet);
    if let Some(found) = summary.found {
        panic!("{}\n{:#?}", found.failure.message(), found.shrunk.scenario);
    }
}

#[test]
fn a_planted_bug_in_a_node_is_caught_and_the_stuck_rank_named_with_whom_it_waits_for() {
    let base = job(barrier_forgets_last(), 6).build().unwrap();
    let summary = Swarm {
        seed: 2,
        cases: 4,
        scenarios: vec![base],
        gen: Gen::fault_free(),
        user_properties: vec![Arc::new(EveryRankPasses)],
        ..Swarm::default()
    }
    .run(&mut Quiet);
    let found = summary.found.expect("the planted bug is caught");
    assert_eq!(found.failure.property(), Some(Property::FaultFreeCompletes));
    let (case, run) = {
        let case = found.shrunk.clone();
        let run = case.run();
        (case, run)
    };
    assert_eq!(run.report.outcome, Outcome::Stalled);
    let last = case.scenario.world.size - 1;
    let stuck: Vec<_> = run
        .diagnosis
        .blocked
        .iter()
        .filter(|b| b.rank == last)
        .collect();
    assert_eq!(stuck.len(), 1, "{:#?}", run.diagnosis.blocked);
    assert_eq!(stuck[0].waiting_for, [0]);
    assert_eq!(stuck[0].op.to_string(), "barrier round 1");
    let causes = run.diagnosis.root_cause_names();
    assert_eq!(causes, ["hung:0"], "{:#?}", run.report.explanation);
    let story = run.report.explanation.join("\n");
    assert!(
        story.contains(&format!(
            "while rank {last} waits for it in `barrier round 1`"
        )),
        "{story}"
    );
}

#[test]
fn a_scenario_names_a_registered_node_or_is_refused() {
    barrier();
    let text = "name = \"b\"\n[world]\nsize = 3\n[workload]\nnode = \"barrier\"\n";
    let s = common::scenario(text);
    assert_eq!(s.workload.node, Some(barrier()));
    let e = ringside_sim::scenario::parse(&text.replace("\"barrier\"", "\"nope\""), "b.toml")
        .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (5, "workload.node"), "{e}");
    assert!(e.message.contains("unknown node `nope`"), "{e}");
    let with_ops = format!("{text}[[workload.ops]]\nop = \"barrier\"\n");
    let e = ringside_sim::scenario::parse(&with_ops, "b.toml").unwrap_err();
    assert_eq!(e.key, "workload.node", "{e}");
    assert!(e.message.contains("cannot go with `ops`"), "{e}");
    // a node's name is one a scenario can write, and taken once
    for bad in ["", "Barrier", "2pc", "two-phase", "barrier "] {
        let f = NodeFactory::new(bad, |ctx| Box::new(Barrier::new(ctx, false)));
        let e = node::register(f).map(|_| ()).unwrap_err();
        assert_eq!(e.to_string(), format!("`{bad}` is not a node name: use lowercase letters, digits and `_`, starting with a letter"));
    }
    let again = NodeFactory::new("barrier", |ctx| Box::new(Barrier::new(ctx, false)));
    let e = node::register(again).map(|_| ()).unwrap_err();
    assert_eq!(e.to_string(), "`barrier` is already a node");
}
