//! What a collective should cost: the textbook time of every algorithm, and the bandwidths
//! nccl-tests reports. `ringside sweep` reports bandwidths with [`bus_factor`]; the tests hold
//! the engine (`tests/fidelity.rs`) and the schedules on their own (`sim/tests/schedules`) to
//! [`textbook`].
//!
//! The model is alpha-beta-gamma, as in Thakur, Rabenseifner & Gropp, "Optimization of
//! Collective Communication Operations in MPICH" (2005): a message of m bytes costs `a + m b` on
//! its link (a = latency, b = 1/bandwidth), reducing m bytes costs `m g` (g = 1/reduce
//! bandwidth; 0 when reductions are free). With p ranks, n bytes (allgather: the gathered
//! output; reduce_scatter: the input), `lg = ceil(log2 p)` and `f = (p-1)/p`:
//!
//! | op | algorithm | time |
//! |---|---|---|
//! | allreduce | `ring` | 2(p-1) a + 2 f n b + f n g |
//! | allreduce | `recursive_doubling` | lg (a + n b + n g) |
//! | allreduce | `rabenseifner` | 2 lg a + 2 f n b + f n g |
//! | allreduce | `tree` | lg (a + n b + n g) + lg (a + n b): a binomial reduce, then a broadcast |
//! | allreduce | `direct` | 2 a + 2 f n b |
//! | allreduce | `hierarchical` | 2(l-1)(a' + n/l b') + 2(H-1)(a + n/p b): H hosts of l ranks, a' and b' the intra-host link ([`hierarchical_allreduce`]) |
//! | broadcast | `binomial` | lg (a + n b) |
//! | broadcast | `scatter_allgather` | (lg + p - 1) a + 2 f n b |
//! | broadcast | `direct` | a + (p-1) n b |
//! | reduce | `binomial` | lg (a + n b + n g) |
//! | reduce | `direct` | a + (p-1) n b |
//! | allgather | `ring` | (p-1) a + f n b |
//! | allgather | `recursive_doubling` | lg a + f n b |
//! | allgather | `direct` | a + f n b |
//! | reduce_scatter | `ring` | (p-1) a + f n (b + g) |
//! | reduce_scatter | `recursive_halving` | lg a + f n (b + g) |
//! | reduce_scatter | `direct` | a + f n b |
//! | barrier | `dissemination` | lg a |
//! | barrier | `tree` | 2 lg a |
//! | all_to_all | `pairwise` | (p-1)(a + n/p b) |
//! | all_to_all | `direct` | a + f n b |
//! | all_to_all | `bruck` | the sum over its lg steps k of a + c_k n/p b, c_k the ranks j < p with bit k set |
//! | gather | `binomial` | lg a + f n b |
//! | gather | `direct` | a + f n b |
//! | scatter | `binomial` | lg a + f n b |
//! | scatter | `direct` | a + f n b |
//!
//! For all_to_all n is one rank's send buffer (n/p to each peer); for gather and scatter the
//! root's whole buffer (n/p per rank).
//!
//! Where the formula holds:
//! - `recursive_doubling`, `recursive_halving`, `rabenseifner`, `scatter_allgather` and the
//!   `binomial` gather and scatter when p is a power of two (on other p they fold ranks first,
//!   or clip their tree, and cost more);
//! - the `direct` algorithms and `hierarchical` when reductions are free (g = 0): their
//!   reductions overlap the transfers in a way these formulas do not capture;
//! - the binomial trees (`binomial`, `tree`) exactly when p is a power of two; on other p a rank
//!   whose subtree is cut off has nothing to wait for and sends early, so each tree may take
//!   one round less: [`Cost::Between`].
//!
//! Messages and reductions are timed in whole nanoseconds, each rounded up: [`Cost::rounds`]
//! is how many of them lie in sequence on the critical path, the most the rounding can add.
//!
//! Bandwidths as nccl-tests defines them (its doc/PERFORMANCE.md): the algorithm bandwidth of
//! a call of n bytes that took t is `algbw = n / t`; the bus bandwidth `busbw = algbw x`
//! [`bus_factor`]: 2(p-1)/p for allreduce, (p-1)/p for allgather and reduce_scatter, 1 for
//! broadcast and reduce, where p is the size of the group the op runs on; a barrier has none.

pub use crate::proto::cost::{Cost, Net};
use crate::scenario::{Algorithm, OpKind};

/// ceil(log2 p): the rounds of a binomial tree or of a dissemination on p ranks.
pub fn ceil_log2(p: u32) -> u32 {
    if p <= 1 {
        0
    } else {
        32 - (p - 1).leading_zeros()
    }
}

/// The time of one call of `op` with `algorithm` on `p` ranks for `n` bytes, every rank calling
/// at once, with no faults, no jitter and no contention from other calls; `None` where the
/// table of the module has no formula (see there) and for `hierarchical`, which needs the
/// topology ([`hierarchical_allreduce`]). A registered algorithm's time is its own formula
/// ([`ScheduleFactory::with_cost`](crate::proto::collective::custom::ScheduleFactory::with_cost)).
pub fn textbook(op: OpKind, algorithm: Algorithm, p: u32, n: u64, net: Net) -> Option<Cost> {
    use Algorithm as A;
    use OpKind as O;
    if let A::Custom(c) = algorithm {
        return c.factory().cost(op, p, n, net);
    }
    let Net { a, b, g } = net;
    // a barrier moves no data, whatever `n` says
    let n = if op == OpKind::Barrier { 0.0 } else { n as f64 };
    let pf = f64::from(p);
    let l = ceil_log2(p);
    let lg = f64::from(l);
    let f = (pf - 1.0) / pf;
    let pow2 = p.is_power_of_two();
    let free = g == 0.0;
    let exact = |ns: f64, rounds: u32| Some(Cost::Exact { ns, rounds });
    let reductions = |k: u32| if free { 0 } else { k };
    // `phases` binomial trees in sequence, of which the first `reducing` reduce on the way up
    let trees = |phases: u32, reducing: u32| {
        let up = a + n * b + n * g;
        let down = a + n * b;
        let time = |k: u32| {
            f64::from(k) * (f64::from(reducing) * up + f64::from(phases - reducing) * down)
        };
        let rounds = phases * l + reductions(reducing * l);
        if pow2 {
            Some(Cost::Exact {
                ns: time(l),
                rounds,
            })
        } else {
            Some(Cost::Between {
                lo: time(l - 1),
                hi: time(l),
                rounds,
            })
        }
    };
    match (op, algorithm) {
        _ if p <= 1 => exact(0.0, 0),
        (O::Allreduce, A::Ring) => exact(
            2.0 * (pf - 1.0) * a + 2.0 * f * n * b + f * n * g,
            2 * (p - 1) + reductions(p - 1),
        ),
        (O::Allreduce, A::RecursiveDoubling) if pow2 => {
            exact(lg * (a + n * b + n * g), l + reductions(l))
        }
        (O::Allreduce, A::Rabenseifner) if pow2 => exact(
            2.0 * lg * a + 2.0 * f * n * b + f * n * g,
            2 * l + reductions(l),
        ),
        (O::Allreduce, A::Tree) => trees(2, 1),
        (O::Allreduce, A::Direct) if free => exact(2.0 * a + 2.0 * f * n * b, 2 * (p - 1)),
        (O::Broadcast, A::Binomial) => trees(1, 0),
        (O::Broadcast, A::ScatterAllgather) if pow2 => {
            exact((lg + pf - 1.0) * a + 2.0 * f * n * b, l + p - 1)
        }
        (O::Broadcast, A::Direct) => exact(a + (pf - 1.0) * n * b, p - 1),
        (O::Reduce, A::Binomial) => trees(1, 1),
        (O::Reduce, A::Direct) if free => exact(a + (pf - 1.0) * n * b, p - 1),
        (O::Allgather, A::Ring) => exact((pf - 1.0) * a + f * n * b, p - 1),
        (O::Allgather, A::RecursiveDoubling) if pow2 => exact(lg * a + f * n * b, l),
        (O::Allgather, A::Direct) => exact(a + f * n * b, p - 1),
        (O::ReduceScatter, A::Ring) => {
            exact((pf - 1.0) * a + f * n * (b + g), p - 1 + reductions(p - 1))
        }
        (O::ReduceScatter, A::RecursiveHalving) if pow2 => {
            exact(lg * a + f * n * (b + g), l + reductions(l))
        }
        (O::ReduceScatter, A::Direct) if free => exact(a + f * n * b, p - 1),
        (O::Barrier, A::Dissemination) => exact(lg * a, l),
        (O::Barrier, A::Tree) => trees(2, 0),
        (O::AllToAll, A::Pairwise) => exact((pf - 1.0) * (a + n / pf * b), p - 1),
        (O::AllToAll | O::Gather | O::Scatter, A::Direct) => exact(a + f * n * b, p - 1),
        (O::AllToAll, A::Bruck) => {
            // step k moves the blocks of the positions j < p with bit k set
            let moved = |k: u32| (0..p).filter(|j| j >> k & 1 == 1).count() as f64;
            exact((0..l).map(|k| a + moved(k) * n / pf * b).sum(), l)
        }
        (O::Gather | O::Scatter, A::Binomial) if pow2 => exact(lg * a + f * n * b, l),
        _ => None,
    }
}

/// The time of a `hierarchical` allreduce of `n` bytes on `p` ranks, `per_host` consecutive
/// ranks to a host, over `intra` inside a host and `inter` between hosts: a ring
/// reduce-scatter inside each host, a ring allreduce across hosts among the ranks with the
/// same local index, and a ring allgather inside each host. With reductions free only; `p`
/// must be a multiple of `per_host`.
pub fn hierarchical_allreduce(p: u32, per_host: u32, n: u64, inter: Net, intra: Net) -> Cost {
    let (l, h) = (per_host, p / per_host);
    let (lf, hf, n) = (f64::from(l), f64::from(h), n as f64);
    Cost::Exact {
        ns: 2.0 * (lf - 1.0) * (intra.a + n / lf * intra.b)
            + 2.0 * (hf - 1.0) * (inter.a + n / f64::from(p) * inter.b),
        rounds: 2 * (l - 1) + 2 * (h - 1),
    }
}

/// nccl-tests' bus bandwidth factor of `op` on a group of `p` ranks (none for a barrier).
pub fn bus_factor(op: OpKind, p: u32) -> Option<f64> {
    let (p, frac) = (f64::from(p), f64::from(p.saturating_sub(1)));
    match op {
        OpKind::Allreduce => Some(2.0 * frac / p),
        OpKind::Allgather | OpKind::ReduceScatter => Some(frac / p),
        OpKind::AllToAll | OpKind::Gather | OpKind::Scatter => Some(frac / p),
        OpKind::Broadcast | OpKind::Reduce | OpKind::Send | OpKind::Recv => Some(1.0),
        OpKind::Barrier => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_allreduce_is_the_papers_formula() {
        // 2(p-1) a + 2 f n b + f n g with p = 4, a = 5us, b = 1 ns/byte, g = 0.5 ns/byte
        let net = Net::new(5_000, 1_000_000_000).reducing(2_000_000_000);
        let c = textbook(OpKind::Allreduce, Algorithm::Ring, 4, 4_000_000, net);
        assert_eq!(
            c,
            Some(Cost::Exact {
                ns: 30_000.0 + 6_000_000.0 + 1_500_000.0,
                rounds: 9,
            })
        );
    }

    #[test]
    fn trees_on_a_non_power_of_two_may_take_a_round_less() {
        let net = Net::new(1_000, 1_000_000_000);
        let c = textbook(OpKind::Broadcast, Algorithm::Binomial, 5, 1_000, net);
        // lg 5 = 3 rounds of 2us, or 2
        assert_eq!(
            c,
            Some(Cost::Between {
                lo: 4_000.0,
                hi: 6_000.0,
                rounds: 3
            })
        );
        assert!(c.is_some_and(|c| c.admits(4_000.0, 3.0) && !c.admits(6_004.0, 3.0)));
    }

    #[test]
    fn no_formula_where_the_table_has_none() {
        let net = Net::new(1_000, 1_000_000_000);
        let rd = |p| textbook(OpKind::Allreduce, Algorithm::RecursiveDoubling, p, 64, net);
        assert!(rd(8).is_some() && rd(6).is_none());
        let direct = |net| textbook(OpKind::Allreduce, Algorithm::Direct, 4, 64, net);
        assert!(direct(net).is_some() && direct(net.reducing(1_000_000_000)).is_none());
        assert!(textbook(OpKind::Allreduce, Algorithm::Hierarchical, 4, 64, net).is_none());
        assert!(textbook(OpKind::Barrier, Algorithm::Ring, 4, 0, net).is_none());
        assert_eq!(
            textbook(OpKind::Allreduce, Algorithm::Tree, 1, 64, net),
            Some(Cost::Exact { ns: 0.0, rounds: 0 })
        );
    }

    #[test]
    fn hierarchical_on_one_rank_per_host_is_the_ring() {
        let net = Net::new(5_000, 1_000_000_000);
        let ring = textbook(OpKind::Allreduce, Algorithm::Ring, 6, 6_000, net);
        assert_eq!(Some(hierarchical_allreduce(6, 1, 6_000, net, net)), ring);
    }

    #[test]
    fn bus_factors_are_nccl_tests() {
        assert_eq!(bus_factor(OpKind::Allreduce, 8), Some(2.0 * 7.0 / 8.0));
        assert_eq!(bus_factor(OpKind::Allgather, 4), Some(0.75));
        assert_eq!(bus_factor(OpKind::Broadcast, 4), Some(1.0));
        assert_eq!(bus_factor(OpKind::Barrier, 4), None);
    }
}
