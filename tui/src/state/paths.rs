//! The wait-for graph cut into paths that each read as one line: `102 → 101 → 100`, every
//! edge used once. Paths end at the ranks the causes name first (the culprit last on its
//! line), then at any other rank that waits for no one, and what is left are cycles, walked
//! from their lowest rank (`0 → 3 → 2 → 1 → 0`). A 256-rank ring with one dead rank is one
//! path of 256 ranks; a 2 x 4 mesh mid-allreduce is its two rings and the edges between them.

use std::collections::{BTreeMap, BTreeSet};

/// Ranks that wait each for the next one; a cycle ends with the rank it starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitPath {
    pub ranks: Vec<u32>,
}

impl WaitPath {
    /// It comes back to where it started.
    pub fn is_cycle(&self) -> bool {
        self.ranks.len() > 2 && self.ranks.first() == self.ranks.last()
    }

    /// The ranks on it, each once.
    pub fn distinct(&self) -> &[u32] {
        let n = self.ranks.len() - usize::from(self.is_cycle());
        &self.ranks[..n]
    }
}

/// Every edge of `edges` (waiter, awaited) on exactly one path; `first` are the ranks whose
/// paths come first (the culprits, in the order of their causes).
pub fn wait_paths(edges: &[(u32, u32)], first: &[u32]) -> Vec<WaitPath> {
    let mut out_of: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut into: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for &(a, b) in edges {
        if a != b {
            out_of.entry(a).or_default().insert(b);
            into.entry(b).or_default().insert(a);
        }
    }
    let mut paths = Vec::new();
    // ends: ranks that others wait for and that wait for no one (left)
    let mut ends: Vec<u32> = first.to_vec();
    ends.extend(into.keys().filter(|r| !first.contains(r)));
    loop {
        let end = ends.iter().copied().find(|r| {
            into.get(r).is_some_and(|w| !w.is_empty()) && out_of.get(r).is_none_or(|o| o.is_empty())
        });
        let Some(end) = end else { break };
        // grow backwards, each time through the waiter that has the most waiters of its own
        let mut path = vec![end];
        let mut on: BTreeSet<u32> = path.iter().copied().collect();
        let mut head = end;
        loop {
            let next = into.get(&head).and_then(|ws| {
                ws.iter()
                    .copied()
                    .filter(|w| !on.contains(w))
                    .max_by_key(|w| (into.get(w).map_or(0, |x| x.len()), u32::MAX - w))
            });
            let Some(w) = next else { break };
            take(&mut out_of, &mut into, w, head);
            path.push(w);
            on.insert(w);
            head = w;
        }
        if path.len() == 1 {
            // only waiters already on the path are left: a cycle through `end` remains
            break;
        }
        path.reverse();
        paths.push(WaitPath { ranks: path });
    }
    // what is left has no end: walk forwards until the walk closes, from a rank no one waits
    // for when there is one (it leads into a cycle), else from the lowest
    let waits = |out_of: &BTreeMap<u32, BTreeSet<u32>>, r: u32| {
        out_of.get(&r).is_some_and(|o| !o.is_empty())
    };
    loop {
        let unawaited = out_of
            .keys()
            .copied()
            .find(|&r| waits(&out_of, r) && into.get(&r).is_none_or(|i| i.is_empty()));
        let Some(start) = unawaited.or_else(|| out_of.keys().copied().find(|&r| waits(&out_of, r)))
        else {
            break;
        };
        let mut path = vec![start];
        let mut on = BTreeSet::from([start]);
        let mut at = start;
        while let Some(next) = out_of.get(&at).and_then(|o| {
            // back to the start as soon as possible, else onwards to a rank not on it yet
            if o.contains(&start) && path.len() > 1 {
                Some(start)
            } else {
                o.iter()
                    .copied()
                    .find(|b| !on.contains(b))
                    .or(o.first().copied())
            }
        }) {
            take(&mut out_of, &mut into, at, next);
            path.push(next);
            if !on.insert(next) {
                break;
            }
            at = next;
        }
        // a walk that closes on a rank past its start is a path into a cycle: two lines
        let last = path[path.len() - 1];
        match path.iter().position(|&r| r == last) {
            Some(i) if i > 0 && i + 1 < path.len() => {
                let mut cycle = path.split_off(i);
                path.push(last);
                paths.push(WaitPath {
                    ranks: from_lowest(&mut cycle),
                });
                paths.push(WaitPath { ranks: path });
            }
            _ => paths.push(WaitPath { ranks: path }),
        }
    }
    paths
}

/// A cycle (first rank repeated last) turned to start at its lowest rank.
fn from_lowest(cycle: &mut Vec<u32>) -> Vec<u32> {
    cycle.pop();
    let low = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
    cycle.rotate_left(low);
    cycle.push(cycle[0]);
    std::mem::take(cycle)
}

fn take(
    out_of: &mut BTreeMap<u32, BTreeSet<u32>>,
    into: &mut BTreeMap<u32, BTreeSet<u32>>,
    a: u32,
    b: u32,
) {
    if let Some(o) = out_of.get_mut(&a) {
        o.remove(&b);
    }
    if let Some(i) = into.get_mut(&b) {
        i.remove(&a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(p: &[WaitPath]) -> Vec<Vec<u32>> {
        p.iter().map(|p| p.ranks.clone()).collect()
    }

    #[test]
    fn a_broken_ring_is_one_path_to_the_dead_rank() {
        let edges: Vec<(u32, u32)> = (0..256u32)
            .filter(|&a| a != 100)
            .map(|a| (a, (a + 255) % 256))
            .collect();
        let p = wait_paths(&edges, &[100]);
        assert_eq!(p.len(), 1);
        let r = &p[0].ranks;
        assert_eq!(r.len(), 256);
        assert_eq!(r[..2], [99, 98]);
        assert_eq!(r[r.len() - 2..], [101, 100]);
        assert!(!p[0].is_cycle());
    }

    #[test]
    fn two_rings_and_an_edge_between_them() {
        // a 2 x 4 mesh: tp rings 0-3 and 4-7, rank 2 waits for 6 in its dp group
        let mut edges = vec![
            (0, 3),
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 7),
            (5, 4),
            (6, 5),
            (7, 6),
        ];
        edges.push((2, 6));
        let p = wait_paths(&edges, &[]);
        assert_eq!(
            ranks(&p),
            [vec![0, 3, 2, 1, 0], vec![4, 7, 6, 5, 4], vec![2, 6]],
            "every edge once"
        );
        // rank 2 left its ring for the dp call: one line leads into the other ring
        edges.retain(|&e| e != (2, 1));
        let q = wait_paths(&edges, &[]);
        assert_eq!(ranks(&q), [vec![4, 7, 6, 5, 4], vec![1, 0, 3, 2, 6]]);
        assert!(p[0].is_cycle());
        assert_eq!(p[0].distinct(), [0, 3, 2, 1]);
        assert_eq!(p.iter().map(|p| p.ranks.len() - 1).sum::<usize>(), 9);
    }

    #[test]
    fn a_tree_of_waiters_gives_one_path_per_branch() {
        // 1 and 2 both wait for 0; 3 waits for 1
        let p = wait_paths(&[(1, 0), (2, 0), (3, 1)], &[0]);
        assert_eq!(ranks(&p), [vec![3, 1, 0], vec![2, 0]]);
    }

    #[test]
    fn a_deadlock_with_a_waiter_outside_it() {
        let p = wait_paths(&[(0, 2), (1, 0), (2, 1), (3, 1)], &[]);
        assert_eq!(ranks(&p), [vec![0, 2, 1, 0], vec![3, 1]]);
    }
}
