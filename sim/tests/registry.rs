//! Registry nodes driven directly, without the engine: on the standalone executor, whose
//! in-memory network has a fixed latency and can cut nodes off.

use ringside_sim::proto::mutation::Mutations;
use ringside_sim::proto::registry::*;
use ringside_sim::proto::standalone::{Network, Standalone};
use ringside_sim::proto::{ProtoEvent, Rank};
use ringside_sim::scenario::{parse, resolve};
use ringside_sim::units::Nanos;
use std::ops::{Deref, DerefMut};

const MS: Nanos = 1_000_000;
const LATENCY: Nanos = 5_000;

/// The registry nodes of a scenario, started on a standalone executor.
struct Net(Standalone<Registry>);

impl Net {
    fn new(scenario: &str) -> Net {
        let s = parse(scenario, "registry.toml").expect("valid");
        let cfg = resolve::registry(&s).expect("registry steps");
        let nodes = (0..cfg.nodes)
            .map(|r| Registry::new(cfg.clone(), Rank(r), 0, Mutations::NONE))
            .collect();
        Net(Standalone::new(nodes, Network::latency(LATENCY)))
    }

    fn registry(&self, node: u32) -> &Registry {
        self.node(Rank(node)).expect("a running node")
    }

    fn members(&self, node: u32, group: &str) -> Vec<u32> {
        self.registry(node)
            .members(0, group)
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

impl Deref for Net {
    type Target = Standalone<Registry>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Net {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
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
    assert!(net.registry(0).local_member(0, "todo") && !net.registry(1).local_member(0, "todo"));
    for n in [0, 2] {
        let got = net.registry(n).received(0, "todo");
        assert_eq!(got, [(Rank(1), "buy milk".to_string())], "node {n}");
    }
    assert!(
        net.registry(1).received(0, "todo").is_empty(),
        "not a member"
    );
}

#[test]
fn a_cut_off_node_leaves_the_views_and_comes_back_after_the_heal() {
    let mut net = Net::new(THREE);
    net.run_until(10 * MS);
    net.isolate(&[Rank(2)]);
    net.run_until(500 * MS);
    assert_eq!(net.members(0, "todo"), [0]);
    assert_eq!(net.members(1, "todo"), [0]);
    assert_eq!(net.members(2, "todo"), [2]);
    // node 1's monitor saw 0 and 2 join, then 2 leave
    let notes: Vec<(Vec<Rank>, Vec<Rank>)> = net
        .events()
        .iter()
        .filter_map(|(_, r, e)| match e {
            ProtoEvent::Registry(RegistryEvent::Notify { joined, left, .. }) if r.0 == 1 => {
                Some((joined.clone(), left.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(notes.last(), Some(&(vec![], vec![Rank(2)])));
    net.heal();
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
