//! The rendezvous driven directly, without the engine: a few `Elastic` state machines, an
//! in-memory network with a fixed latency that can lose everything between two sides, and
//! their timers.

use super::*;
use crate::event::Output;
use std::collections::BTreeMap;

const MS: Nanos = 1_000_000;
const LATENCY: Nanos = 5_000;

enum Due {
    Msg { from: Rank, msg: ElasticMsg },
    Timer(TimerKey),
}

struct Net {
    nodes: Vec<Option<Elastic>>,
    queue: BTreeMap<(Nanos, u64), (Rank, Due)>,
    /// The live timer of each (rank, key), by token.
    timers: BTreeMap<(Rank, TimerKey), u64>,
    seq: u64,
    now: Nanos,
    /// Ranks on the other side of a partition from rank 0's side.
    cut: Vec<Rank>,
    events: Vec<(Rank, MemberEvent)>,
    installed: BTreeMap<Rank, (Generation, Vec<Rank>)>,
}

impl Net {
    fn new(p: u32, cfg: ElasticConfig, mutations: Mutations) -> Net {
        let world = Members::new((0..p).map(Rank).collect());
        let cfg = Arc::new(cfg);
        let mut net = Net {
            nodes: (0..p)
                .map(|r| {
                    Some(Elastic::new(
                        cfg.clone(),
                        Rank(r),
                        0,
                        world.clone(),
                        mutations,
                    ))
                })
                .collect(),
            queue: BTreeMap::new(),
            timers: BTreeMap::new(),
            seq: 0,
            now: 0,
            cut: Vec::new(),
            events: Vec::new(),
            installed: BTreeMap::new(),
        };
        for r in 0..p {
            let mut out = Outbox::new();
            let d = net.nodes[r as usize].as_mut().unwrap().start(0, &mut out);
            net.carry(Rank(r), d, out);
        }
        net
    }

    fn push(&mut self, at: Nanos, rank: Rank, due: Due) {
        self.seq += 1;
        self.queue.insert((at, self.seq), (rank, due));
    }

    fn linked(&self, a: Rank, b: Rank) -> bool {
        self.cut.contains(&a) == self.cut.contains(&b)
    }

    fn carry(&mut self, me: Rank, d: Decision, mut out: Outbox) {
        if let Decision::Install {
            generation,
            proposal,
        } = d
        {
            self.installed
                .insert(me, (generation, proposal.ranks().to_vec()));
        }
        for o in out.drain() {
            match o {
                Output::Send { to, msg, .. } => {
                    let Msg::Elastic(m) = msg else { continue };
                    if self.linked(me, to) {
                        let at = self.now + LATENCY;
                        self.push(at, to, Due::Msg { from: me, msg: *m });
                    }
                }
                Output::SetTimer { key, at } => {
                    self.seq += 1;
                    self.timers.insert((me, key), self.seq);
                    let token = self.seq;
                    self.queue.insert((at, token), (me, Due::Timer(key)));
                }
                Output::CancelTimer { key } => {
                    self.timers.remove(&(me, key));
                }
                Output::Event(pe) => {
                    if let ProtoEvent::Membership(e) = *pe {
                        self.events.push((me, e));
                    }
                }
                _ => {}
            }
        }
    }

    fn run_until(&mut self, end: Nanos) {
        while let Some((&(at, token), _)) = self.queue.iter().next() {
            if at > end {
                break;
            }
            let (rank, due) = self.queue.remove(&(at, token)).unwrap();
            self.now = at;
            let progress = Progress {
                completed: 7,
                done: false,
            };
            let mut out = Outbox::new();
            let Some(node) = self.nodes[rank.idx()].as_mut() else {
                continue; // dead
            };
            let d = match due {
                Due::Msg { from, msg } => node.on_message(at, from, msg, progress, &mut out),
                Due::Timer(key) => {
                    if self.timers.get(&(rank, key)) != Some(&token) {
                        continue; // cancelled or replaced
                    }
                    self.timers.remove(&(rank, key));
                    node.on_timer(at, key, progress, &mut out)
                }
            };
            self.carry(rank, d, out);
        }
        self.now = end;
    }
}

fn config(min_size: u32, max_size: u32) -> ElasticConfig {
    ElasticConfig {
        min_size,
        max_size,
        heartbeat_interval: 10 * MS,
        heartbeat_misses: 3,
        rendezvous: RendezvousKind::Quorum,
        store: Rank(99),
    }
}

#[test]
fn survivors_of_a_death_agree_on_the_next_generation() {
    let mut net = Net::new(4, config(2, 4), Mutations::NONE);
    net.run_until(15 * MS);
    net.nodes[2] = None;
    net.run_until(200 * MS);
    let want = (Generation(1), vec![Rank(0), Rank(1), Rank(3)]);
    for r in [0, 1, 3] {
        assert_eq!(net.installed.get(&Rank(r)), Some(&want), "rank {r}");
    }
    let suspected: Vec<Rank> = net
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            MemberEvent::Suspect { peer, .. } => Some(*peer),
            _ => None,
        })
        .collect();
    assert!(suspected.iter().all(|&p| p == Rank(2)) && !suspected.is_empty());
    // everyone resumes from the progress they reported
    let resumes: Vec<u32> = net
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            MemberEvent::GenerationFormed { proposal, .. } => Some(proposal.resume),
            _ => None,
        })
        .collect();
    assert_eq!(resumes, [7, 7, 7]);
}

#[test]
fn only_the_majority_side_of_a_partition_forms_a_generation() {
    let mut net = Net::new(5, config(2, 5), Mutations::NONE);
    net.cut = vec![Rank(0), Rank(1)];
    net.run_until(2_000 * MS);
    let majority = (Generation(1), vec![Rank(2), Rank(3), Rank(4)]);
    for r in [2, 3, 4] {
        assert_eq!(net.installed.get(&Rank(r)), Some(&majority), "rank {r}");
    }
    assert!(!net.installed.contains_key(&Rank(0)) && !net.installed.contains_key(&Rank(1)));
    let waits = net
        .events
        .iter()
        .filter(|(r, e)| r.0 < 2 && matches!(e, MemberEvent::RendezvousWait { quorum: 3, .. }))
        .count();
    assert!(waits > 0, "the minority reports why it waits");
    // once the partition heals, the minority learns it was left out, asks in, and is admitted
    net.cut.clear();
    net.run_until(4_000 * MS);
    let all = (Generation(2), (0..5).map(Rank).collect::<Vec<_>>());
    for r in 0..5 {
        assert_eq!(net.installed.get(&Rank(r)), Some(&all), "rank {r}");
    }
}

#[test]
fn a_minority_with_the_quorum_rule_off_forms_a_rival_generation() {
    let mut net = Net::new(5, config(2, 5), Mutation::NoQuorum.into());
    net.cut = vec![Rank(0), Rank(1)];
    net.run_until(2_000 * MS);
    assert_eq!(
        net.installed.get(&Rank(0)),
        Some(&(Generation(1), vec![Rank(0), Rank(1)]))
    );
    assert_eq!(
        net.installed.get(&Rank(2)),
        Some(&(Generation(1), vec![Rank(2), Rank(3), Rank(4)]))
    );
}
