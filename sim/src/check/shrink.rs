//! A second shrinking pass, on the scenario itself.
//!
//! proptest shrinks a case through its value tree, one component after the other; a component
//! whose smaller values happen to pass (a failure that needs 8 ranks with 5 elements, but not
//! 7) ends the walk before the later components (iterations, ops, faults) had their turn.
//! [`smaller`] proposes structurally smaller scenarios — one fault fewer, one iteration, one op
//! fewer, one rank fewer, fewer elements, no compute or jitter — and the swarm keeps any that
//! still fails the same property, until none does. Every proposal is valid.

use crate::engine::SUPPORT;
use crate::scenario::{unsupported, validate, Fault, GroupRanks, OpSpec, Scenario, TieBreak};
use crate::units::Duration;

/// Removes the faults that name a rank outside `p` ranks, an iteration outside `iterations`,
/// or an op outside `ops`; trims partition sides to the ranks that remain.
fn fit_faults(s: &mut Scenario) {
    let p = s.world.size;
    let iterations = s.workload.iterations;
    let ops = s.workload.ops.len() as u32;
    let rank_ok = |r: &u32| *r < p;
    s.faults.retain_mut(|f| match f {
        Fault::Preempt { rank, .. } | Fault::Pause { rank, .. } | Fault::Slow { rank, .. } => {
            rank_ok(rank)
        }
        Fault::Partition { sides, .. } => {
            for side in sides.iter_mut() {
                side.retain(rank_ok);
            }
            sides.retain(|side| !side.is_empty());
            sides.len() >= 2
        }
        Fault::Delay { rank, link, .. } | Fault::Loss { rank, link, .. } => {
            rank.as_ref().is_none_or(rank_ok) && link.is_none_or(|[a, b]| a < p && b < p)
        }
        Fault::Mismatch {
            rank,
            iteration,
            op_index,
            root,
            ..
        } => {
            rank_ok(rank)
                && *iteration < iterations
                && op_index.unwrap_or(0) < ops
                && root.as_ref().is_none_or(rank_ok)
        }
        Fault::Skip {
            rank,
            iteration,
            op_index,
        } => rank_ok(rank) && *iteration < iterations && op_index.unwrap_or(0) < ops,
        Fault::Hang { rank, iteration } => rank_ok(rank) && *iteration < iterations,
    });
}

fn runnable(s: &Scenario) -> bool {
    validate(s).is_ok() && unsupported(s, &SUPPORT).is_ok()
}

/// Valid scenarios structurally smaller than `s`, the biggest reductions first: without a
/// fault, without structure around the shared ops, fewer iterations, fewer ops, a smaller
/// world, fewer elements, then simpler settings.
pub fn smaller(s: &Scenario) -> Vec<Scenario> {
    let candidates = [
        without_a_fault(s),
        without_structure(s),
        fewer_iterations(s),
        without_an_op(s),
        smaller_worlds(s),
        fewer_elements(s),
        simpler_settings(s),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter_map(|mut c| {
            fit_faults(&mut c);
            (c != *s && runnable(&c)).then_some(c)
        })
        .collect()
}

/// `s` with `change` made to a copy.
fn with(s: &Scenario, change: impl FnOnce(&mut Scenario)) -> Scenario {
    let mut c = s.clone();
    change(&mut c);
    c
}

/// `s` without each of its faults.
fn without_a_fault(s: &Scenario) -> Vec<Scenario> {
    (0..s.faults.len())
        .map(|i| {
            with(s, |c| {
                c.faults.remove(i);
            })
        })
        .collect()
}

/// The structure around the shared ops taken away: the pipeline, each program, each op's
/// named group, each named group no op uses.
fn without_structure(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    if s.workload.pipeline.is_some() {
        out.push(with(s, |c| c.workload.pipeline = None));
    }
    for i in 0..s.workload.programs.len() {
        out.push(with(s, |c| {
            c.workload.programs.remove(i);
        }));
    }
    for i in 0..s.workload.ops.len() {
        if s.workload.ops[i].group.is_some() {
            out.push(with(s, |c| c.workload.ops[i].group = None));
        }
    }
    for i in 0..s.groups.len() {
        out.push(with(s, |c| {
            c.groups.remove(i);
        }));
    }
    out
}

/// One iteration, and one fewer.
fn fewer_iterations(s: &Scenario) -> Vec<Scenario> {
    [1, s.workload.iterations.saturating_sub(1)]
        .into_iter()
        .filter(|&n| n >= 1 && n < s.workload.iterations)
        .map(|n| with(s, |c| c.workload.iterations = n))
        .collect()
}

/// `s` without each of its shared ops (when it has more than one); a program that repeats
/// the shared ops loses the same one, so that the shrinking plants no divergence of its own,
/// and faults on later ops move down with them.
fn without_an_op(s: &Scenario) -> Vec<Scenario> {
    if s.workload.ops.len() <= 1 {
        return Vec::new();
    }
    let same = |a: &OpSpec, b: &OpSpec| {
        OpSpec {
            compute: None,
            ..a.clone()
        } == OpSpec {
            compute: None,
            ..b.clone()
        }
    };
    (0..s.workload.ops.len())
        .map(|i| {
            with(s, |c| {
                c.workload.ops.remove(i);
                for p in &mut c.workload.programs {
                    if p.ops.len() > i && same(&p.ops[i], &s.workload.ops[i]) {
                        p.ops.remove(i);
                    }
                }
                for f in &mut c.faults {
                    if let Fault::Mismatch { op_index, .. } | Fault::Skip { op_index, .. } = f {
                        match op_index {
                            Some(k) if *k as usize > i => *k -= 1,
                            Some(k) if *k as usize == i => *k = u32::MAX,
                            _ => {}
                        }
                    }
                }
            })
        })
        .collect()
}

/// Worlds of two ranks and of one fewer; roots, named groups and programs fold their ranks
/// into the smaller world (r mod p), each rank once.
fn smaller_worlds(s: &Scenario) -> Vec<Scenario> {
    [2, s.world.size.saturating_sub(1)]
        .into_iter()
        .filter(|&p| p >= 1 && p < s.world.size)
        .map(|p| with(s, |c| fold_world(c, p)))
        .collect()
}

/// `c` on a world of `p` ranks.
fn fold_world(c: &mut Scenario, p: u32) {
    c.world.size = p;
    c.world.ranks_per_host = c.world.ranks_per_host.min(p);
    if c.world.ranks_per_host <= 1 {
        c.network.intra_host = None;
    }
    for op in &mut c.workload.ops {
        if let Some(root) = &mut op.root {
            *root %= p;
        }
    }
    let mut used = std::collections::BTreeSet::new();
    let fold = |r: &[u32], used: &mut std::collections::BTreeSet<u32>| {
        r.iter()
            .map(|&x| x % p)
            .filter(|&x| used.insert(x))
            .collect::<Vec<u32>>()
    };
    for g in &mut c.groups {
        used.clear();
        g.ranks = match &g.ranks {
            GroupRanks::One(r) => GroupRanks::One(fold(r, &mut used)),
            GroupRanks::Many(rs) => GroupRanks::Many(
                rs.iter()
                    .map(|r| fold(r, &mut used))
                    .filter(|r| !r.is_empty())
                    .collect(),
            ),
        };
    }
    used.clear();
    for prog in &mut c.workload.programs {
        prog.ranks = fold(&prog.ranks, &mut used);
    }
    c.workload.programs.retain(|prog| !prog.ranks.is_empty());
}

/// One element, half as many, and one fewer.
fn fewer_elements(s: &Scenario) -> Vec<Scenario> {
    let n = s.workload.elements;
    [1, n / 2, n.saturating_sub(1)]
        .into_iter()
        .filter(|&e| e >= 1 && e < n)
        .map(|e| with(s, |c| c.workload.elements = e))
        .collect()
}

/// No compute, no jitter, no shuffled ties.
fn simpler_settings(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    if s.workload.compute != Duration::ZERO {
        out.push(with(s, |c| c.workload.compute = Duration::ZERO));
    }
    if s.network.jitter != Duration::ZERO {
        out.push(with(s, |c| c.network.jitter = Duration::ZERO));
    }
    if s.engine.tie_break != TieBreak::Insertion {
        out.push(with(s, |c| c.engine.tie_break = TieBreak::Insertion));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    #[test]
    fn proposals_are_valid_and_smaller() {
        let s = parse(
            "name = \"s\"\n[world]\nsize = 4\n[workload]\niterations = 3\nelements = 8\n\
             [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1KB\"\n\
             [[workload.ops]]\nop = \"broadcast\"\nbytes = \"1KB\"\nroot = 3\n\
             [[faults]]\nkind = \"skip\"\nrank = 3\niteration = 2\nop_index = 1\n\
             [[faults]]\nkind = \"partition\"\nsides = [[0, 3], [1, 2]]\nat = \"1ms\"\n",
            "s.toml",
        )
        .unwrap();
        let all = smaller(&s);
        assert!(all.len() >= 8, "{}", all.len());
        for c in &all {
            assert!(runnable(c));
        }
        // two ranks: the skip of rank 3 goes, the partition keeps [0] | [1]
        let two = all.iter().find(|c| c.world.size == 2).unwrap();
        assert_eq!(two.faults.len(), 1);
        assert!(
            matches!(&two.faults[0], Fault::Partition { sides, .. } if *sides == vec![vec![0], vec![1]])
        );
        assert_eq!(two.workload.ops[1].root, Some(1));
        // dropping op 0 moves the skip of op 1 to op 0
        let one_op = all
            .iter()
            .find(|c| {
                c.workload.ops.len() == 1
                    && c.workload.ops[0].op == crate::scenario::OpKind::Broadcast
            })
            .unwrap();
        assert!(matches!(
            one_op.faults[0],
            Fault::Skip {
                op_index: Some(0),
                ..
            }
        ));
    }
}
