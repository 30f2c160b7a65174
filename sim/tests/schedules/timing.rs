//! The step structure of every algorithm reproduces its textbook cost (`ringside_sim::cost`,
//! from Thakur, Rabenseifner & Gropp 2005) under the driver's alpha-beta model, which is the
//! engine's.

use crate::driver::{run, Net, Setup, ALGORITHMS};
use ringside_sim::cost::{self, hierarchical_allreduce, textbook};
use ringside_sim::scenario::{Algorithm, OpKind};

/// The driver's network as the cost formulas take it: reductions are free.
fn model(net: Net) -> cost::Net {
    cost::Net {
        a: net.latency as f64,
        b: 1.0 / net.bytes_per_ns as f64,
        g: 0.0,
    }
}

/// n = 720720 * 16 bytes: 720720 = lcm(1..=16), so at 16 bytes/ns every block of p <= 16 ranks
/// (and of their powers of two) is a whole number of bytes and of ns, and nothing rounds.
const N: u64 = 720_720 * 16;

fn check_costs(net: Net) {
    let mut checked = 0;
    for &(op, algorithm) in ALGORITHMS {
        for p in 2..=16 {
            let s = Setup {
                root: p / 2,
                bytes: if op == OpKind::Barrier { 0 } else { N },
                ..Setup::new(op, algorithm, p)
            };
            let want = if algorithm == Algorithm::Hierarchical {
                // one rank per host: the ring
                Some(hierarchical_allreduce(p, 1, N, model(net), model(net)))
            } else {
                textbook(op, algorithm, p, s.bytes, model(net))
            };
            let Some(want) = want else {
                continue;
            };
            let got = run(&s, net);
            let t = got.end_ns as f64;
            // each message rounds its wire time up to a whole ns
            assert!(
                want.admits(t, f64::from(got.steps)),
                "{op} {algorithm} p={p} {net:?}: took {t} ns, the formula says {want:?}"
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
        let want = hierarchical_allreduce(p, l, N, model(net), model(net));
        let got = run(&s, net);
        let t = got.end_ns as f64;
        assert!(
            want.admits(t, f64::from(got.steps)),
            "p={p} l={l}: took {t} ns, the formula says {want:?}"
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
