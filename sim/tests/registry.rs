//! Registry nodes driven directly, without the engine: an in-memory network with a fixed
//! latency that can cut nodes off, and the nodes' timers.

use ringside_sim::proto::event::Output;
use ringside_sim::proto::mutation::Mutations;
use ringside_sim::proto::registry::*;
use ringside_sim::proto::{Msg, Outbox, ProtoEvent, Rank, TimerKey};
use ringside_sim::scenario::{parse, resolve};
use ringside_sim::units::Nanos;
use std::collections::BTreeMap;

const MS: Nanos = 1_000_000;
const LATENCY: Nanos = 5_000;

/// For a node: a message (from whom) or a timer.
type Due = (Rank, Option<(Rank, RegistryMsg)>, Option<TimerKey>);

struct Net {
    nodes: Vec<Registry>,
    queue: BTreeMap<(Nanos, u64), Due>,
    timers: BTreeMap<(Rank, TimerKey), u64>,
    seq: u64,
    now: Nanos,
    /// Nodes cut off from the others.
    cut: Vec<Rank>,
    events: Vec<(Rank, RegistryEvent)>,
}

impl Net {
    fn new(scenario: &str) -> Net {
        let s = parse(scenario, "registry.toml").expect("valid");
        let cfg = resolve::registry(&s).expect("registry steps");
        let n = cfg.nodes;
        let mut net = Net {
            nodes: (0..n)
                .map(|r| Registry::new(cfg.clone(), Rank(r), 0, Mutations::NONE))
                .collect(),
            queue: BTreeMap::new(),
            timers: BTreeMap::new(),
            seq: 0,
            now: 0,
            cut: Vec::new(),
            events: Vec::new(),
        };
        for r in 0..n {
            let mut out = Outbox::new();
            net.nodes[r as usize].start(0, &mut out);
            net.carry(Rank(r), out);
        }
        net
    }

    fn carry(&mut self, me: Rank, mut out: Outbox) {
        for o in out.drain() {
            self.seq += 1;
            match o {
                Output::Send { to, msg, .. } => {
                    let Msg::Registry(m) = msg else { continue };
                    if self.cut.contains(&me) == self.cut.contains(&to) {
                        let at = self.now + LATENCY;
                        self.queue
                            .insert((at, self.seq), (to, Some((me, *m)), None));
                    }
                }
                Output::SetTimer { key, at } => {
                    self.timers.insert((me, key), self.seq);
                    self.queue.insert((at, self.seq), (me, None, Some(key)));
                }
                Output::Event(pe) => {
                    if let ProtoEvent::Registry(e) = *pe {
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
            let (rank, msg, timer) = self.queue.remove(&(at, token)).unwrap();
            self.now = at;
            let mut out = Outbox::new();
            if let Some((from, m)) = msg {
                self.nodes[rank.idx()].on_message(at, from, m, &mut out);
            }
            if let Some(key) = timer {
                if self.timers.get(&(rank, key)) == Some(&token) {
                    self.nodes[rank.idx()].on_timer(at, key, &mut out);
                }
            }
            self.carry(rank, out);
        }
        self.now = end;
    }

    fn members(&self, node: u32, group: &str) -> Vec<u32> {
        self.nodes[node as usize]
            .members(0, group)
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

const THREE: &str = r#"
name = "three"
[world]
size = 3
[workload]
[[workload.registry]]
at = "1ms"
rank = 0
action = "join"
group = "todo"
[[workload.registry]]
at = "1ms"
rank = 2
action = "join"
group = "todo"
[[workload.registry]]
at = "2ms"
rank = 1
action = "monitor"
group = "todo"
[[workload.registry]]
at = "3ms"
rank = 1
action = "broadcast"
group = "todo"
message = "buy milk"
[[workload.registry]]
at = "800ms"
rank = 2
action = "leave"
group = "todo"
"#;

#[test]
fn joins_reach_every_view_and_broadcasts_every_member() {
    let mut net = Net::new(THREE);
    net.run_until(10 * MS);
    for n in 0..3 {
        assert_eq!(net.members(n, "todo"), [0, 2], "node {n}");
    }
    assert!(net.nodes[0].local_member(0, "todo") && !net.nodes[1].local_member(0, "todo"));
    for n in [0, 2] {
        let got = net.nodes[n].received(0, "todo");
        assert_eq!(got, [(Rank(1), "buy milk".to_string())], "node {n}");
    }
    assert!(net.nodes[1].received(0, "todo").is_empty(), "not a member");
}

#[test]
fn a_cut_off_node_leaves_the_views_and_comes_back_after_the_heal() {
    let mut net = Net::new(THREE);
    net.run_until(10 * MS);
    net.cut = vec![Rank(2)];
    net.run_until(500 * MS);
    assert_eq!(net.members(0, "todo"), [0]);
    assert_eq!(net.members(1, "todo"), [0]);
    assert_eq!(net.members(2, "todo"), [2]);
    // node 1's monitor saw 0 and 2 join, then 2 leave
    let notes: Vec<(Vec<Rank>, Vec<Rank>)> = net
        .events
        .iter()
        .filter_map(|(r, e)| match e {
            RegistryEvent::Notify { joined, left, .. } if r.0 == 1 => {
                Some((joined.clone(), left.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(notes.last(), Some(&(vec![], vec![Rank(2)])));
    net.cut.clear();
    net.run_until(700 * MS);
    for n in 0..3 {
        assert_eq!(net.members(n, "todo"), [0, 2], "node {n} after the heal");
    }
    // a leave is seen everywhere
    net.run_until(900 * MS);
    for n in 0..3 {
        assert_eq!(net.members(n, "todo"), [0], "node {n} after 2 left");
    }
}
