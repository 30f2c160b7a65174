//! The step structure of every algorithm reproduces its textbook cost (Thakur, Rabenseifner &
//! Gropp 2005) under the driver's alpha-beta model, which is the engine's.

use crate::driver::{run, Net, Setup, ALGORITHMS};
use ringside_sim::proto::collective::fold::ceil_log2;
use ringside_sim::scenario::{Algorithm, OpKind};

/// What the cost model predicts for a call.
#[derive(Clone, Copy, Debug)]
enum Cost {
    /// Exactly this many ns.
    Exact(f64),
    /// Binomial trees clipped at a non-power of two: ranks whose subtrees were clipped away
    /// finish early, so each of the `phases` trees may take one round less: the time lies in
    /// [rounds - phases, rounds] times the cost of a round.
    Tree {
        rounds: u32,
        phases: u32,
        round: f64,
    },
}

/// The cost of `op` with `algorithm` on p ranks for latency a and n*b = `nb` ns.
fn cost(op: OpKind, algorithm: Algorithm, p: u32, a: f64, nb: f64) -> Option<Cost> {
    use Algorithm as A;
    use OpKind as O;
    let pf = f64::from(p);
    let lg = f64::from(ceil_log2(p));
    let frac = (pf - 1.0) / pf;
    let pow2 = p.is_power_of_two();
    let tree = |phases: u32, round: f64| {
        let rounds = phases * ceil_log2(p);
        if pow2 {
            Cost::Exact(f64::from(rounds) * round)
        } else {
            Cost::Tree {
                rounds,
                phases,
                round,
            }
        }
    };
    let c = match (op, algorithm) {
        // one rank per host: the ring
        (O::Allreduce, A::Ring | A::Hierarchical) => {
            Cost::Exact(2.0 * (pf - 1.0) * a + 2.0 * frac * nb)
        }
        (O::Allreduce, A::RecursiveDoubling) if pow2 => Cost::Exact(lg * a + lg * nb),
        (O::Allreduce, A::Rabenseifner) if pow2 => Cost::Exact(2.0 * lg * a + 2.0 * frac * nb),
        (O::Allreduce, A::Tree) => tree(2, a + nb),
        (O::Allreduce, A::Direct) => Cost::Exact(2.0 * a + 2.0 * frac * nb),
        (O::Broadcast | O::Reduce, A::Binomial) => tree(1, a + nb),
        (O::Broadcast, A::ScatterAllgather) if pow2 => {
            Cost::Exact((lg + pf - 1.0) * a + 2.0 * frac * nb)
        }
        (O::Broadcast | O::Reduce, A::Direct) => Cost::Exact(a + (pf - 1.0) * nb),
        (O::Allgather | O::ReduceScatter, A::Ring) => Cost::Exact((pf - 1.0) * a + frac * nb),
        (O::Allgather, A::RecursiveDoubling) | (O::ReduceScatter, A::RecursiveHalving) if pow2 => {
            Cost::Exact(lg * a + frac * nb)
        }
        (O::Allgather | O::ReduceScatter, A::Direct) => Cost::Exact(a + frac * nb),
        (O::Barrier, A::Dissemination) => Cost::Exact(lg * a),
        (O::Barrier, A::Tree) => tree(2, a),
        (O::AllToAll, A::Pairwise) => Cost::Exact((pf - 1.0) * (a + nb / pf)),
        (O::AllToAll | O::Gather | O::Scatter, A::Direct) => Cost::Exact(a + frac * nb),
        // step k moves the c_k positions j < p with bit k set
        (O::AllToAll, A::Bruck) => Cost::Exact(
            (0..ceil_log2(p))
                .map(|k| {
                    let c = (0..p).filter(|j| j >> k & 1 == 1).count() as f64;
                    a + c * nb / pf
                })
                .sum(),
        ),
        (O::Gather | O::Scatter, A::Binomial) if pow2 => Cost::Exact(lg * a + frac * nb),
        _ => return None,
    };
    Some(c)
}

/// n = 720720 * 16 bytes: 720720 = lcm(1..=16), so at 16 bytes/ns every block of p <= 16 ranks
/// (and of their powers of two) is a whole number of bytes and of ns, and nothing rounds.
const N: u64 = 720_720 * 16;

fn check_costs(net: Net) {
    let a = net.latency as f64;
    let nb = N as f64 / net.bytes_per_ns as f64;
    let mut checked = 0;
    for &(op, algorithm) in ALGORITHMS {
        for p in 2..=16 {
            let s = Setup {
                root: p / 2,
                bytes: if op == OpKind::Barrier { 0 } else { N },
                ..Setup::new(op, algorithm, p)
            };
            let Some(want) = cost(op, algorithm, p, a, nb) else {
                continue;
            };
            let got = run(&s, net);
            let t = got.end_ns as f64;
            // each message rounds its wire time up to a whole ns
            let slack = f64::from(got.steps);
            let ok = match want {
                Cost::Exact(w) => (t - w).abs() <= slack,
                Cost::Tree {
                    rounds,
                    phases,
                    round,
                } => {
                    t >= f64::from(rounds - phases) * round
                        && t <= f64::from(rounds) * round + slack
                }
            };
            assert!(
                ok,
                "{op} {algorithm} p={p} {net:?}: took {t} ns, model says {want:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} cases checked");
}

#[test]
fn completion_times_match_the_cost_formulas_bandwidth_heavy() {
    // a = 5us, n b = 720.72us
    check_costs(Net {
        latency: 5_000,
        bytes_per_ns: 16,
    });
}

#[test]
fn completion_times_match_the_cost_formulas_latency_heavy() {
    // a = 20ms, n b = 720.72us
    check_costs(Net {
        latency: 20_000_000,
        bytes_per_ns: 16,
    });
}

#[test]
fn hierarchical_costs_two_rings_inside_and_one_across() {
    // one link for all: 2(l-1)(a + n/l b) + 2(H-1)(a + n/p b)
    let net = Net {
        latency: 5_000,
        bytes_per_ns: 16,
    };
    for (p, l) in [
        (8u32, 4u32),
        (8, 2),
        (12, 3),
        (12, 4),
        (16, 4),
        (6, 6),
        (6, 1),
    ] {
        let s = Setup {
            per_host: l,
            bytes: N,
            ..Setup::new(OpKind::Allreduce, Algorithm::Hierarchical, p)
        };
        let h = p / l;
        let (a, nb) = (net.latency as f64, N as f64 / net.bytes_per_ns as f64);
        let want = 2.0 * f64::from(l - 1) * (a + nb / f64::from(l))
            + 2.0 * f64::from(h - 1) * (a + nb / f64::from(p));
        let got = run(&s, net);
        let t = got.end_ns as f64;
        assert!(
            (t - want).abs() <= f64::from(got.steps),
            "p={p} l={l}: took {t} ns, model says {want}"
        );
    }
}

#[test]
fn one_rank_costs_nothing() {
    for &(op, algorithm) in ALGORITHMS {
        let net = Net {
            latency: 5_000,
            bytes_per_ns: 16,
        };
        assert_eq!(run(&Setup::new(op, algorithm, 1), net).end_ns, 0);
    }
}
