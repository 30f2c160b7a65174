//! The wait-for solver: the one answer to "who is blocked on what", for every source of evidence.
//!
//! A source (the fold of a simulated or real run's trace, or the Flight Recorder dumps of a real
//! job) classifies each wait of a rank for a peer into a [`WaitEdge`] and hands the edges to a
//! [`WaitGraph`]; the solver does the rest, the same way for every source:
//!
//! 1. **root causes propagate**: a rank with a root-cause edge is blocked on those causes, and so
//!    is every waiter that reaches it through `waits` edges;
//! 2. **progress**: a waiter that is not blocked and whose every `waits` edge leads to a rank
//!    that is not waiting (it works) or that itself progresses will finish (least fixpoint, so a
//!    cycle never progresses). A waiter whose only edges are chunks on their way progresses;
//! 3. **cycles**: among the waiters left, each strongly connected component of `waits` edges
//!    with a cycle is one where ranks wait for one another; the source names it (a deadlock, in
//!    canonical form, or the rank whose call order deviates) and [`Solution::propagate`] blocks
//!    its members and everyone upstream on that name.
//!
//! Sources may add phases of their own on the same [`Solution`] (lateness of a simulated run's
//! chunks, faults that hold a chain) through [`Solution::propagate`] and
//! [`Solution::propagate_along_all`]. Propagation costs the edges it crosses once per cause,
//! never the world's size per cause: a job with thousands of ranks without a dump has as many
//! causes.

use super::{EdgeKind, WaitEdge};
use crate::cause::RootCause;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::NodeFiltered;
use petgraph::Direction;
use std::collections::VecDeque;

/// The waits of the ranks of a world, classified by their source.
#[derive(Clone, Debug)]
pub struct WaitGraph {
    waiter: Vec<bool>,
    edges: Vec<WaitEdge>,
    /// `waits` edges only: blocking propagates back along them and cycles are found on them.
    waits: DiGraph<(), ()>,
    /// Every edge whose far end is in the world, whatever its kind.
    all: DiGraph<(), ()>,
    /// Per rank, the ranks whose chunk it waits for is on its way.
    in_flight: Vec<Vec<u32>>,
}

impl WaitGraph {
    /// A world of `n` ranks, none waiting yet.
    pub fn new(n: usize) -> WaitGraph {
        let mut waits = DiGraph::with_capacity(n, n);
        let mut all = DiGraph::with_capacity(n, n);
        for _ in 0..n {
            waits.add_node(());
            all.add_node(());
        }
        WaitGraph {
            waiter: vec![false; n],
            edges: Vec::new(),
            waits,
            all,
            in_flight: vec![Vec::new(); n],
        }
    }

    pub fn len(&self) -> usize {
        self.waiter.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiter.is_empty()
    }

    /// Rank `r` is inside a call and waits for peers (its edges say for whom).
    pub fn wait(&mut self, r: u32) {
        if let Some(w) = self.waiter.get_mut(r as usize) {
            *w = true;
        }
    }

    /// Adds one classified edge; its `from` is a waiter. An edge toward a rank outside the
    /// world is kept for the report but joins no graph.
    pub fn add(&mut self, e: WaitEdge) {
        self.wait(e.from);
        let n = self.len();
        let (a, b) = (e.from as usize, e.to as usize);
        if a < n && b < n {
            self.all.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
            match e.kind {
                EdgeKind::Waits => {
                    self.waits
                        .add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
                }
                EdgeKind::InFlight => self.in_flight[a].push(e.to),
                EdgeKind::RootCause => {}
            }
        }
        self.edges.push(e);
    }

    pub fn is_waiter(&self, r: u32) -> bool {
        self.waiter.get(r as usize).copied().unwrap_or(false)
    }

    pub fn edges(&self) -> &[WaitEdge] {
        &self.edges
    }

    /// Solves steps 1 and 2 (root causes, progress) and finds the cycles of step 3, which the
    /// caller names and propagates.
    pub fn solve(self) -> Solution {
        let n = self.len();
        let mut s = Solution {
            blocked_by: vec![Vec::new(); n],
            progressing: vec![false; n],
            graph: self,
        };
        let seeds: Vec<(RootCause, u32)> = s
            .graph
            .edges
            .iter()
            .flat_map(|e| e.causes.iter().map(move |c| (c.clone(), e.from)))
            .collect();
        s.propagate(&seeds);
        s.progressing = s.progress();
        s
    }
}

/// The solved graph: what each rank is blocked on so far, and who progresses.
#[derive(Clone, Debug)]
pub struct Solution {
    graph: WaitGraph,
    /// The causes each rank of the world is blocked on (empty: not blocked).
    pub blocked_by: Vec<Vec<RootCause>>,
    /// Waiters that will progress (step 2).
    pub progressing: Vec<bool>,
}

impl Solution {
    pub fn graph(&self) -> &WaitGraph {
        &self.graph
    }

    /// Takes the edges back, for the report.
    pub fn into_edges(self) -> Vec<WaitEdge> {
        self.graph.edges
    }

    pub fn is_waiter(&self, r: u32) -> bool {
        self.graph.is_waiter(r)
    }

    pub fn is_blocked(&self, r: u32) -> bool {
        self.blocked_by
            .get(r as usize)
            .is_some_and(|b| !b.is_empty())
    }

    /// The strongly connected components with a cycle among waiters that are neither blocked
    /// nor progressing, each as its ranks in increasing order; components in order of their
    /// smallest rank.
    pub fn cycles(&self) -> Vec<Vec<u32>> {
        let g = &self.graph.waits;
        let rest: Vec<bool> = (0..self.graph.len())
            .map(|i| self.graph.waiter[i] && self.blocked_by[i].is_empty() && !self.progressing[i])
            .collect();
        let sub = NodeFiltered::from_fn(g, |x: NodeIndex| rest[x.index()]);
        let mut out: Vec<Vec<u32>> = tarjan_scc(&sub)
            .into_iter()
            .filter(|scc| scc.len() > 1 || g.contains_edge(scc[0], scc[0]))
            .map(|scc| {
                let mut ranks: Vec<u32> = scc.iter().map(|x| x.index() as u32).collect();
                ranks.sort_unstable();
                ranks
            })
            .collect();
        out.sort();
        out
    }

    /// The ranks `r` waits for through `waits` edges, the edge added last first (a rank twice
    /// when two calls wait for it).
    pub fn waits_of(&self, r: u32) -> impl Iterator<Item = u32> + '_ {
        self.graph
            .waits
            .neighbors_directed(NodeIndex::new(r as usize), Direction::Outgoing)
            .map(|x| x.index() as u32)
    }

    /// The ranks whose chunk `r` waits for is on its way.
    pub fn in_flight_of(&self, r: u32) -> &[u32] {
        self.graph
            .in_flight
            .get(r as usize)
            .map_or(&[], Vec::as_slice)
    }

    /// Marks every waiter that reaches a seed `(cause, rank)` through `waits` edges as
    /// blocked on the seed's cause.
    pub fn propagate(&mut self, seeds: &[(RootCause, u32)]) {
        propagate(
            &self.graph.waits,
            &self.graph.waiter,
            None,
            seeds,
            &mut self.blocked_by,
        );
    }

    /// As [`Solution::propagate`], along edges of every kind, adding each cause only to the
    /// ranks that are blocked already (the others are passed through).
    pub fn propagate_along_all(&mut self, seeds: &[(RootCause, u32)]) {
        let only: Vec<bool> = self.blocked_by.iter().map(|b| !b.is_empty()).collect();
        propagate(
            &self.graph.all,
            &self.graph.waiter,
            Some(&only),
            seeds,
            &mut self.blocked_by,
        );
    }

    /// Step 2 on the causes found so far.
    fn progress(&self) -> Vec<bool> {
        let g = &self.graph.waits;
        let waiter = &self.graph.waiter;
        let n = waiter.len();
        let mut pending = vec![0usize; n];
        let mut done = vec![false; n];
        let mut queue = VecDeque::new();
        for i in 0..n {
            if !waiter[i] || !self.blocked_by[i].is_empty() {
                continue;
            }
            pending[i] = g
                .neighbors_directed(NodeIndex::new(i), Direction::Outgoing)
                .filter(|b| waiter[b.index()])
                .count();
            if pending[i] == 0 {
                done[i] = true;
                queue.push_back(i);
            }
        }
        while let Some(b) = queue.pop_front() {
            for up in g.neighbors_directed(NodeIndex::new(b), Direction::Incoming) {
                let a = up.index();
                if !waiter[a] || !self.blocked_by[a].is_empty() || done[a] {
                    continue;
                }
                // parallel edges are counted once each, in both directions
                pending[a] -= 1;
                if pending[a] == 0 {
                    done[a] = true;
                    queue.push_back(a);
                }
            }
        }
        done
    }
}

/// Marks every waiter that reaches a seed through the edges of `g` as blocked by the seed's
/// cause; with `only`, just the ranks it holds.
fn propagate(
    g: &DiGraph<(), ()>,
    waiter: &[bool],
    only: Option<&[bool]>,
    seeds: &[(RootCause, u32)],
    blocked_by: &mut [Vec<RootCause>],
) {
    // each cause once, with the ranks it seeds
    let mut seeds: Vec<(&RootCause, usize)> = seeds
        .iter()
        .map(|(k, r)| (k, *r as usize))
        .filter(|&(_, r)| r < waiter.len())
        .collect();
    seeds.sort();
    // within one pass a rank meets each cause once: only what earlier passes found can repeat it
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
            if only.is_none_or(|o| o[i]) && !blocked_by[i][..before[i]].contains(key) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::types::Rank;

    fn edge(from: u32, to: u32, causes: &[RootCause]) -> WaitEdge {
        WaitEdge {
            from,
            to,
            kind: if causes.is_empty() {
                EdgeKind::Waits
            } else {
                EdgeKind::RootCause
            },
            causes: causes.to_vec(),
            message: None,
        }
    }

    fn solved(n: usize, edges: &[WaitEdge]) -> Solution {
        let mut g = WaitGraph::new(n);
        for e in edges {
            g.add(e.clone());
        }
        g.solve()
    }

    #[test]
    fn causes_propagate_back_along_waits() {
        let dead = RootCause::Preempted(Rank(3));
        let s = solved(
            4,
            &[
                edge(0, 1, &[]),
                edge(1, 2, &[]),
                edge(2, 3, std::slice::from_ref(&dead)),
            ],
        );
        for r in 0..3 {
            assert_eq!(s.blocked_by[r], std::slice::from_ref(&dead), "rank {r}");
        }
        assert!(s.blocked_by[3].is_empty());
        assert!(s.cycles().is_empty());
    }

    #[test]
    fn a_cycle_is_found_once_whichever_way_it_turns() {
        // 0 -> 2 -> 1 -> 0, and 3 waits on it from outside
        let s = solved(
            4,
            &[
                edge(0, 2, &[]),
                edge(2, 1, &[]),
                edge(1, 0, &[]),
                edge(3, 0, &[]),
            ],
        );
        assert_eq!(s.cycles(), [vec![0, 1, 2]]);
        let mut s = s;
        let key = RootCause::deadlock(vec![Rank(0), Rank(1), Rank(2)]);
        s.propagate(&[(key.clone(), 0), (key.clone(), 1), (key.clone(), 2)]);
        for r in 0..4 {
            assert_eq!(s.blocked_by[r], std::slice::from_ref(&key), "rank {r}");
        }
        assert_eq!(key.to_string(), "deadlock:0,1,2");
    }

    #[test]
    fn waiting_on_a_working_rank_progresses_and_cycles_never_do() {
        let mut g = WaitGraph::new(5);
        // 0 waits for 1, which works (it waits for nobody)
        g.add(edge(0, 1, &[]));
        // 2 waits for a chunk on its way from 3
        g.add(WaitEdge {
            kind: EdgeKind::InFlight,
            ..edge(2, 3, &[])
        });
        // 3 and 4 wait for each other
        g.add(edge(3, 4, &[]));
        g.add(edge(4, 3, &[]));
        let s = g.solve();
        assert_eq!(s.progressing, [true, false, true, false, false]);
        assert_eq!(s.cycles(), [vec![3, 4]]);
        assert_eq!(s.in_flight_of(2), [3]);
    }

    #[test]
    fn along_all_edges_only_blocked_ranks_take_the_cause() {
        let paused = RootCause::Paused(Rank(2));
        let mut g = WaitGraph::new(3);
        g.add(WaitEdge {
            kind: EdgeKind::InFlight,
            ..edge(1, 2, &[])
        });
        g.add(edge(0, 1, &[RootCause::Hung(Rank(1))]));
        let mut s = g.solve();
        s.propagate_along_all(&[(paused.clone(), 1)]);
        // 1 is not blocked (its chunk is on its way): it passes the cause on to 0
        assert!(s.blocked_by[1].is_empty());
        assert_eq!(s.blocked_by[0], [RootCause::Hung(Rank(1)), paused]);
    }
}
