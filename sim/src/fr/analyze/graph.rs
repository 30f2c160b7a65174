//! Who is blocked on what: the wait-for graph of the ranks stuck in calls.
//!
//! An edge `a -> b` says rank `a` is in a call that cannot complete without `b`: `b` has not
//! issued it, issued it with other parameters, or left no dump. As in the diagnosis of
//! simulated runs (see `diagnose`), an edge is a root-cause edge when the far end explains the
//! wait by itself (the group's divergence names a culprit, `b` left no dump), and a plain wait
//! when `b` is itself stuck in another call; blocking propagates back along plain waits, and
//! plain waits that close a cycle (two groups called in opposite orders) are a deadlock.

use crate::diagnose::{EdgeKind, WaitEdge};
use crate::scenario::RootCause;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::NodeFiltered;
use petgraph::Direction;
use std::collections::VecDeque;

/// One edge, classified.
#[derive(Clone, Debug)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    /// Root causes the far end shows; empty for a plain wait.
    pub causes: Vec<RootCause>,
}

/// The causes each rank of the world is blocked on (empty: not blocked), and deadlocks found.
pub struct Solved {
    pub blocked_by: Vec<Vec<RootCause>>,
    pub waits: Vec<WaitEdge>,
}

/// Propagates root causes back along plain waits; cycles of plain waits among the rest are
/// deadlocks (written in cycle order from their smallest rank).
pub fn solve(n: usize, waiter: &[bool], edges: &[Edge]) -> Solved {
    let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n, edges.len());
    for _ in 0..n {
        g.add_node(());
    }
    let mut blocked_by: Vec<Vec<RootCause>> = vec![Vec::new(); n];
    let mut seeds: Vec<(RootCause, u32)> = Vec::new();
    for e in edges {
        if e.causes.is_empty() {
            if (e.to as usize) < n {
                g.add_edge(
                    NodeIndex::new(e.from as usize),
                    NodeIndex::new(e.to as usize),
                    (),
                );
            }
        } else {
            for c in &e.causes {
                seeds.push((c.clone(), e.from));
            }
        }
    }
    propagate(&g, waiter, &seeds, &mut blocked_by);
    let rest: Vec<bool> = (0..n)
        .map(|i| waiter[i] && blocked_by[i].is_empty())
        .collect();
    let mut dl = Vec::new();
    {
        let sub = NodeFiltered::from_fn(&g, |x: NodeIndex| rest[x.index()]);
        for scc in tarjan_scc(&sub) {
            let cyclic = scc.len() > 1 || g.contains_edge(scc[0], scc[0]);
            if !cyclic {
                continue;
            }
            let members: Vec<u32> = scc.iter().map(|x| x.index() as u32).collect();
            let cycle = cycle_order(&g, &members);
            let key =
                RootCause::Deadlock(cycle.into_iter().map(crate::proto::types::Rank).collect());
            for &r in &members {
                dl.push((key.clone(), r));
            }
        }
    }
    propagate(&g, waiter, &dl, &mut blocked_by);
    let waits = edges
        .iter()
        .map(|e| WaitEdge {
            from: e.from,
            to: e.to,
            kind: if e.causes.is_empty() {
                EdgeKind::Waits
            } else {
                EdgeKind::RootCause
            },
            causes: e.causes.clone(),
            message: None,
        })
        .collect();
    Solved { blocked_by, waits }
}

/// The ranks of a strongly connected component in the order of one cycle through them, from
/// the smallest (every rank of the component, when one cycle passes them all).
fn cycle_order(g: &DiGraph<(), ()>, members: &[u32]) -> Vec<u32> {
    let mut sorted = members.to_vec();
    sorted.sort_unstable();
    let start = sorted[0];
    let mut order = vec![start];
    let mut cur = start;
    while order.len() < sorted.len() {
        let mut next: Vec<u32> = g
            .neighbors_directed(NodeIndex::new(cur as usize), Direction::Outgoing)
            .map(|x| x.index() as u32)
            .filter(|x| sorted.binary_search(x).is_ok() && !order.contains(x))
            .collect();
        next.sort_unstable();
        match next.first() {
            Some(&x) => {
                order.push(x);
                cur = x;
            }
            None => {
                // no single cycle through all of them: name them in rank order
                return sorted;
            }
        }
    }
    order
}

fn propagate(
    g: &DiGraph<(), ()>,
    waiter: &[bool],
    seeds: &[(RootCause, u32)],
    blocked_by: &mut [Vec<RootCause>],
) {
    // each cause once, with the ranks it seeds: a job with many ranks without a dump has as
    // many causes, so nothing here may cost the world's size per cause
    let mut seeds: Vec<(&RootCause, usize)> = seeds
        .iter()
        .map(|(k, r)| (k, *r as usize))
        .filter(|&(_, r)| r < waiter.len())
        .collect();
    seeds.sort();
    // what earlier passes found: a cause is added to a rank once
    let before: Vec<usize> = blocked_by.iter().map(Vec::len).collect();
    let mut seen = vec![false; waiter.len()];
    let mut touched: Vec<usize> = Vec::new();
    for group in seeds.chunk_by(|a, b| a.0 == b.0) {
        let key = group[0].0;
        for &i in &touched {
            seen[i] = false;
        }
        touched.clear();
        let mut queue: VecDeque<usize> = VecDeque::new();
        for &(_, r) in group {
            if !seen[r] {
                seen[r] = true;
                touched.push(r);
                queue.push_back(r);
            }
        }
        while let Some(i) = queue.pop_front() {
            if !blocked_by[i][..before[i]].contains(key) {
                blocked_by[i].push(key.clone());
            }
            for up in g.neighbors_directed(NodeIndex::new(i), Direction::Incoming) {
                let j = up.index();
                if waiter[j] && !seen[j] {
                    seen[j] = true;
                    touched.push(j);
                    queue.push_back(j);
                }
            }
        }
    }
}
