//! The wait-for graph folded onto its root causes: for each cause, the ranks that wait on it
//! directly, then those that wait on them, nearest first. On a ring of 256 ranks with one
//! dead rank this is one line — `101 → 100`, then 254 ranks in single file behind 101 — where
//! the whole graph is 255 edges.

use ringside_sim::diagnose::{Diagnosis, EdgeKind, RootCause};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The ranks blocked on one root cause, as a chain from the cause outwards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CauseChain {
    /// Index of the cause in [`Diagnosis::causes`].
    pub cause: usize,
    /// The ranks the direct waiters wait for.
    pub culprits: Vec<u32>,
    /// Ranks whose wait the cause explains by itself (root-cause edges).
    pub direct: Vec<u32>,
    /// Ranks blocked on the cause through other ranks, nearest first.
    pub upstream: Vec<u32>,
    /// The upstream ranks wait in one line, each for the one before it.
    pub single_file: bool,
    /// For a deadlock: its ranks in the order they wait for one another.
    pub cycle: Vec<u32>,
}

/// Waiters by the rank they wait for.
fn waiters_of(d: &Diagnosis) -> BTreeMap<u32, Vec<u32>> {
    let mut m: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (a, b) in d.edges() {
        m.entry(b).or_default().push(a);
    }
    m
}

/// One chain per root cause, in the order the diagnosis lists the causes.
pub fn chains(d: &Diagnosis) -> Vec<CauseChain> {
    let waiters = waiters_of(d);
    d.causes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut direct = BTreeSet::new();
            let mut culprits = BTreeSet::new();
            for w in &d.waits {
                if w.kind == EdgeKind::RootCause && w.causes.contains(&c.cause) {
                    direct.insert(w.from);
                    culprits.insert(w.to);
                }
            }
            let cycle = match &c.cause {
                RootCause::Deadlock(_) => cycle_of(d, &c.ranks),
                _ => Vec::new(),
            };
            let blocked: BTreeSet<u32> = c.blocked.iter().copied().collect();
            let mut seen: BTreeSet<u32> = direct.union(&culprits).copied().collect();
            seen.extend(cycle.iter().copied());
            let mut queue: VecDeque<u32> = direct.iter().chain(cycle.iter()).copied().collect();
            let mut upstream = Vec::new();
            let mut single_file = direct.len() <= 1;
            while let Some(x) = queue.pop_front() {
                let new: Vec<u32> = waiters
                    .get(&x)
                    .into_iter()
                    .flatten()
                    .copied()
                    .filter(|w| blocked.contains(w) && !seen.contains(w))
                    .collect();
                if new.len() > 1 {
                    single_file = false;
                }
                for w in new {
                    seen.insert(w);
                    upstream.push(w);
                    queue.push_back(w);
                }
            }
            CauseChain {
                cause: i,
                culprits: culprits.into_iter().collect(),
                direct: direct.into_iter().collect(),
                upstream,
                single_file,
                cycle,
            }
        })
        .collect()
}

/// A deadlock's ranks in the order they wait for one another, from the lowest.
fn cycle_of(d: &Diagnosis, ranks: &[u32]) -> Vec<u32> {
    let Some(&start) = ranks.iter().min() else {
        return Vec::new();
    };
    let mut out = vec![start];
    let mut at = start;
    loop {
        let next = d
            .edges()
            .find(|&(a, b)| a == at && ranks.contains(&b) && (b == start || !out.contains(&b)))
            .map(|(_, b)| b);
        match next {
            Some(b) if b == start => break,
            Some(b) => {
                out.push(b);
                at = b;
            }
            None => break,
        }
    }
    out
}

/// Every waiter with the ranks it waits for, in the order the list shows them: outwards from
/// each cause (the ranks that wait on it directly, then those that wait on them, whether
/// blocked yet or not), then the waiters no cause explains, by rank.
pub fn waiters_in_order(d: &Diagnosis, chains: &[CauseChain]) -> Vec<(u32, Vec<u32>)> {
    let mut by_waiter: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (a, b) in d.edges() {
        by_waiter.entry(a).or_default().push(b);
    }
    let waiters = waiters_of(d);
    let mut out = Vec::with_capacity(by_waiter.len());
    let mut queue: VecDeque<u32> = VecDeque::new();
    for c in chains {
        queue.extend(c.direct.iter().chain(&c.cycle));
    }
    while let Some(r) = queue.pop_front() {
        if let Some(to) = by_waiter.remove(&r) {
            out.push((r, to));
            queue.extend(waiters.get(&r).into_iter().flatten());
        }
    }
    out.extend(by_waiter);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringside_sim::diagnose::{Blocked, Cause, WaitEdge};
    use ringside_sim::proto::Rank;
    use ringside_sim::scenario::{Algorithm, OpKind};

    fn blocked(rank: u32) -> Blocked {
        Blocked {
            rank,
            op: OpKind::Allreduce.into(),
            algorithm: Algorithm::Ring.into(),
            group: 0,
            generation: 0,
            seq: 1,
            iteration: 0,
            index: 0,
            step: 0,
            steps: 1,
            waiting_for: vec![],
            since_ns: 0,
            causes: vec![],
            peer: None,
        }
    }

    /// A ring of `n` where `dead` died: everyone waits for its left neighbour.
    fn ring(n: u32, dead: u32) -> Diagnosis {
        let cause = RootCause::Preempted(Rank(dead));
        let mut d = Diagnosis::default();
        for a in (0..n).filter(|&a| a != dead) {
            let b = (a + n - 1) % n;
            let root = b == dead;
            d.waits.push(WaitEdge {
                from: a,
                to: b,
                kind: if root {
                    EdgeKind::RootCause
                } else {
                    EdgeKind::Waits
                },
                causes: if root { vec![cause.clone()] } else { vec![] },
                message: None,
            });
            d.blocked.push(blocked(a));
        }
        d.causes.push(Cause {
            cause,
            text: format!("rank {dead} was preempted"),
            ranks: vec![dead],
            blocked: d.blocked.iter().map(|b| b.rank).collect(),
        });
        d
    }

    #[test]
    fn a_broken_ring_is_one_chain_from_the_dead_rank() {
        let d = ring(256, 100);
        let c = &chains(&d)[0];
        assert_eq!(c.culprits, [100]);
        assert_eq!(c.direct, [101]);
        assert_eq!(c.upstream.len(), 254);
        assert_eq!(c.upstream[..2], [102, 103]);
        assert_eq!(c.upstream.last(), Some(&99));
        assert!(c.single_file);
        let order = waiters_in_order(&d, &chains(&d));
        assert_eq!(order[0], (101, vec![100]));
        assert_eq!(order.len(), 255);
    }

    #[test]
    fn a_deadlock_is_shown_as_its_cycle() {
        let mut d = Diagnosis {
            waits: [(0, 2), (1, 0), (2, 1), (3, 1)]
                .map(|(from, to)| WaitEdge {
                    from,
                    to,
                    kind: EdgeKind::Waits,
                    causes: Vec::new(),
                    message: None,
                })
                .to_vec(),
            ..Diagnosis::default()
        };
        let cause = RootCause::deadlock(vec![Rank(0), Rank(1), Rank(2)]);
        d.causes.push(Cause {
            cause,
            text: String::new(),
            ranks: vec![0, 1, 2],
            blocked: vec![0, 1, 2, 3],
        });
        let c = &chains(&d)[0];
        assert_eq!(c.cycle, [0, 2, 1]);
        assert_eq!(c.upstream, [3]);
    }
}
