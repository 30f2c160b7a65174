//! The rendezvous driven directly, without the engine: a few `Elastic` state machines on the
//! standalone executor, whose in-memory network has a fixed latency and can lose everything
//! between two sides.

use super::*;
use crate::msg::Msg;
use crate::process::Input;
use crate::standalone::{Network, Node, Standalone};

const MS: Nanos = 1_000_000;
const LATENCY: Nanos = 5_000;

/// One member: its rendezvous, and the generation it installed last.
struct Member {
    elastic: Elastic,
    installed: Option<(Generation, Vec<Rank>)>,
}

impl Node for Member {
    fn wait_state(&self) -> Option<crate::node::Waiting> {
        None
    }
    fn finished(&self) -> bool {
        false
    }
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        // every member reports the same progress
        let progress = Progress {
            completed: 7,
            done: false,
        };
        let d = match input {
            Input::Start => self.elastic.start(now, out),
            Input::Message {
                from,
                msg: Msg::Elastic(m),
            } => self.elastic.on_message(now, from, *m, progress, out),
            Input::Timer(key) => self.elastic.on_timer(now, key, progress, out),
            _ => return,
        };
        if let Decision::Install {
            generation,
            proposal,
        } = d
        {
            self.installed = Some((generation, proposal.ranks().to_vec()));
        }
    }
}

/// `p` members of one group on a standalone executor.
struct Net(Standalone<Member>);

impl Net {
    fn new(p: u32, cfg: ElasticConfig, mutations: Mutations) -> Net {
        let world = Members::new((0..p).map(Rank).collect());
        let cfg = Arc::new(cfg);
        let members = (0..p)
            .map(|r| Member {
                elastic: Elastic::new(cfg.clone(), Rank(r), 0, world.clone(), mutations),
                installed: None,
            })
            .collect();
        Net(Standalone::new(members, Network::latency(LATENCY)))
    }

    /// The generation rank `r` installed last (None for a stopped rank, too).
    fn installed(&self, r: u32) -> Option<&(Generation, Vec<Rank>)> {
        self.0.node(Rank(r))?.installed.as_ref()
    }

    /// Every membership event, with its rank.
    fn events(&self) -> impl Iterator<Item = (Rank, &MemberEvent)> {
        self.0.events().iter().filter_map(|(_, r, e)| match e {
            ProtoEvent::Membership(e) => Some((*r, e)),
            _ => None,
        })
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
    net.0.run_until(15 * MS);
    net.0.stop(Rank(2));
    net.0.run_until(200 * MS);
    let want = (Generation(1), vec![Rank(0), Rank(1), Rank(3)]);
    for r in [0, 1, 3] {
        assert_eq!(net.installed(r), Some(&want), "rank {r}");
    }
    let suspected: Vec<Rank> = net
        .events()
        .filter_map(|(_, e)| match e {
            MemberEvent::Suspect { peer, .. } => Some(*peer),
            _ => None,
        })
        .collect();
    assert!(suspected.iter().all(|&p| p == Rank(2)) && !suspected.is_empty());
    // everyone resumes from the progress they reported
    let resumes: Vec<u32> = net
        .events()
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
    net.0.isolate(&[Rank(0), Rank(1)]);
    net.0.run_until(2_000 * MS);
    let majority = (Generation(1), vec![Rank(2), Rank(3), Rank(4)]);
    for r in [2, 3, 4] {
        assert_eq!(net.installed(r), Some(&majority), "rank {r}");
    }
    assert!(net.installed(0).is_none() && net.installed(1).is_none());
    let waits = net
        .events()
        .filter(|(r, e)| r.0 < 2 && matches!(e, MemberEvent::RendezvousWait { quorum: 3, .. }))
        .count();
    assert!(waits > 0, "the minority reports why it waits");
    // once the partition heals, the minority learns it was left out, asks in, and is admitted
    net.0.heal();
    net.0.run_until(4_000 * MS);
    let all = (Generation(2), (0..5).map(Rank).collect::<Vec<_>>());
    for r in 0..5 {
        assert_eq!(net.installed(r), Some(&all), "rank {r}");
    }
}

#[test]
fn a_minority_with_the_quorum_rule_off_forms_a_rival_generation() {
    let mut net = Net::new(5, config(2, 5), Mutation::NoQuorum.into());
    net.0.isolate(&[Rank(0), Rank(1)]);
    net.0.run_until(2_000 * MS);
    assert_eq!(
        net.installed(0),
        Some(&(Generation(1), vec![Rank(0), Rank(1)]))
    );
    assert_eq!(
        net.installed(2),
        Some(&(Generation(1), vec![Rank(2), Rank(3), Rank(4)]))
    );
}
