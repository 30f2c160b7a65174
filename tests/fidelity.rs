//! Fidelity of the engine's network models: with no faults, no jitter and no compute, the time
//! of a collective run through the real engine (`run::run`, the report's `end_ns - start_ns`)
//! equals the published cost formula of its algorithm, to within the rounding of each message
//! and reduction to whole nanoseconds.
//!
//! alpha-beta formulas: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
//! Operations in MPICH" (2005), with a = latency, b = 1/bandwidth, g = 1/reduce_bandwidth.
//! LogGP: LogGOPSim's own example.

use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{parse, Algorithm, OpKind, Outcome, Scenario};

fn scenario(text: &str) -> Scenario {
    parse(text, "fidelity.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs a scenario of one op and returns its time in ns, checking that it completed correctly.
fn op_time(text: &str) -> u64 {
    let out = run(&scenario(text), &RunOptions::default()).expect("runs");
    let r = &out.report;
    assert_eq!(r.outcome, Outcome::Completed, "{text}");
    assert_eq!(r.ops.len(), 1, "{text}");
    let op = &r.ops[0];
    assert!(op.correct, "wrong result:\n{text}");
    op.end_ns.expect("completed") - op.start_ns
}

/// An alpha-beta network: latency a in ns, bandwidth and reduce bandwidth in bytes/s.
#[derive(Clone, Copy, Debug)]
struct Net {
    a: u64,
    bw: u64,
    reduce_bw: Option<u64>,
}

impl Net {
    /// b: ns per byte.
    fn b(&self) -> f64 {
        1e9 / self.bw as f64
    }
    /// g: ns per byte reduced (0 when reductions are free).
    fn g(&self) -> f64 {
        self.reduce_bw.map_or(0.0, |r| 1e9 / r as f64)
    }
}

fn one_op(p: u32, net: Net, op: OpKind, algorithm: Algorithm, n: u64) -> String {
    let reduce_bw = net
        .reduce_bw
        .map(|r| format!("reduce_bandwidth = \"{r}B/s\"\n"))
        .unwrap_or_default();
    let root = if op.rooted() {
        format!("root = {}\n", p / 2)
    } else {
        String::new()
    };
    let bytes = if op == OpKind::Barrier {
        String::new()
    } else {
        format!("bytes = \"{n}B\"\n")
    };
    format!(
        "name = \"fidelity\"\n[world]\nsize = {p}\n\
         [network]\nlatency = \"{}ns\"\nbandwidth = \"{}B/s\"\n{reduce_bw}\
         [workload]\ndtype = \"i64\"\nelements = 13\n\
         [[workload.ops]]\nop = \"{op}\"\nalgorithm = \"{algorithm}\"\n{bytes}{root}",
        net.a, net.bw
    )
}

fn lg(p: u32) -> u32 {
    if p <= 1 {
        0
    } else {
        32 - (p - 1).leading_zeros()
    }
}

/// What the paper predicts for one call.
#[derive(Clone, Copy, Debug)]
enum Cost {
    /// This many ns, over `rounds` messages in sequence (each may round up by 1 ns, and so
    /// may each reduction).
    Exact { ns: f64, rounds: u32 },
    /// A binomial tree on a non-power of two: a rank whose subtree is cut off by p has nothing
    /// to wait for and sends early, so a tree phase of ceil(lg p) rounds may take only
    /// floor(lg p). The time lies between `lo` and `hi` (+ rounding).
    Between { lo: f64, hi: f64, rounds: u32 },
}

/// The cost of `op`/`algorithm` on p ranks for n bytes, with the paper's gamma terms.
fn cost(op: OpKind, algorithm: Algorithm, p: u32, n: u64, net: Net) -> Option<Cost> {
    use Algorithm as A;
    use OpKind as O;
    let (a, b, g) = (net.a as f64, net.b(), net.g());
    let (pf, n) = (f64::from(p), n as f64);
    let l = lg(p);
    let lgp = f64::from(l);
    let frac = (pf - 1.0) / pf;
    let pow2 = p.is_power_of_two();
    let exact = |ns: f64, rounds: u32| Some(Cost::Exact { ns, rounds });
    // `phases` binomial trees in sequence, of which `reducing` reduce on the way
    let tree = |phases: u32, reducing: u32| {
        let up = a + n * b + n * g;
        let down = a + n * b;
        let per = |k: u32| f64::from(reducing) * f64::from(k) * up;
        let rest = |k: u32| f64::from(phases - reducing) * f64::from(k) * down;
        let hi = per(l) + rest(l);
        let rounds = phases * l;
        if pow2 {
            Some(Cost::Exact { ns: hi, rounds })
        } else {
            let lo = per(l - 1) + rest(l - 1);
            Some(Cost::Between { lo, hi, rounds })
        }
    };
    match (op, algorithm) {
        (O::Allreduce, A::Ring) => exact(
            2.0 * (pf - 1.0) * a + 2.0 * frac * n * b + frac * n * g,
            2 * (p - 1),
        ),
        (O::Allreduce, A::RecursiveDoubling) if pow2 => exact(lgp * (a + n * b + n * g), l),
        (O::Allreduce, A::Rabenseifner) if pow2 => {
            exact(2.0 * lgp * a + 2.0 * frac * n * b + frac * n * g, 2 * l)
        }
        (O::Allreduce, A::Tree) => tree(2, 1),
        (O::Broadcast, A::Binomial) => tree(1, 0),
        (O::Reduce, A::Binomial) => tree(1, 1),
        (O::Allgather, A::Ring) => exact((pf - 1.0) * a + frac * n * b, p - 1),
        (O::Allgather, A::RecursiveDoubling) if pow2 => exact(lgp * a + frac * n * b, l),
        (O::ReduceScatter, A::Ring) => exact((pf - 1.0) * a + frac * n * (b + g), p - 1),
        (O::ReduceScatter, A::RecursiveHalving) if pow2 => exact(lgp * a + frac * n * (b + g), l),
        (O::Barrier, A::Dissemination) => exact(lgp * a, l),
        (O::AllToAll, A::Pairwise) => exact((pf - 1.0) * (a + n / pf * b), p - 1),
        (O::AllToAll | O::Gather | O::Scatter, A::Direct) => exact(a + frac * n * b, p - 1),
        (O::AllToAll, A::Bruck) => {
            // step k moves the positions j < p with bit k set
            let moved = |k: u32| (0..p).filter(|j| j >> k & 1 == 1).count() as f64;
            exact((0..l).map(|k| a + moved(k) * n / pf * b).sum(), l)
        }
        (O::Gather | O::Scatter, A::Binomial) if pow2 => exact(lgp * a + frac * n * b, l),
        _ => None,
    }
}

/// The algorithms the paper gives a formula for.
const PAPER: &[(OpKind, Algorithm)] = &[
    (OpKind::Allreduce, Algorithm::Ring),
    (OpKind::Allreduce, Algorithm::RecursiveDoubling),
    (OpKind::Allreduce, Algorithm::Rabenseifner),
    (OpKind::Allreduce, Algorithm::Tree),
    (OpKind::Broadcast, Algorithm::Binomial),
    (OpKind::Reduce, Algorithm::Binomial),
    (OpKind::Allgather, Algorithm::Ring),
    (OpKind::Allgather, Algorithm::RecursiveDoubling),
    (OpKind::ReduceScatter, Algorithm::Ring),
    (OpKind::ReduceScatter, Algorithm::RecursiveHalving),
    (OpKind::Barrier, Algorithm::Dissemination),
    (OpKind::AllToAll, Algorithm::Pairwise),
    (OpKind::AllToAll, Algorithm::Direct),
    (OpKind::AllToAll, Algorithm::Bruck),
    (OpKind::Gather, Algorithm::Binomial),
    (OpKind::Gather, Algorithm::Direct),
    (OpKind::Scatter, Algorithm::Binomial),
    (OpKind::Scatter, Algorithm::Direct),
];

const RANKS: [u32; 9] = [2, 3, 4, 5, 6, 7, 8, 9, 16];

/// 720720 = lcm(1..=16): n a multiple of it splits into whole bytes for every p here.
const LCM: u64 = 720_720;

/// Checks every algorithm of the paper on every p of `RANKS` against its formula.
fn check_formulas(net: Net, n: u64) {
    let mut checked = 0;
    for &(op, algorithm) in PAPER {
        for p in RANKS {
            let Some(want) = cost(op, algorithm, p, n, net) else {
                continue;
            };
            let t = op_time(&one_op(p, net, op, algorithm, n)) as f64;
            // each message's wire time, and each reduction, rounds up to a whole ns
            let slack =
                |rounds: u32| f64::from(rounds) * if net.reduce_bw.is_some() { 2.0 } else { 1.0 };
            let ok = match want {
                Cost::Exact { ns, rounds } => (t - ns).abs() <= slack(rounds),
                Cost::Between { lo, hi, rounds } => t >= lo && t <= hi + slack(rounds),
            };
            assert!(
                ok,
                "{op} {algorithm} p={p} n={n} {net:?}: took {t} ns, paper says {want:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 70, "only {checked} cases checked");
}

#[test]
fn alpha_beta_times_are_the_paper_formulas_bandwidth_bound() {
    // b = 1 ns/byte and n divisible by every p: nothing rounds
    let net = Net {
        a: 5_000,
        bw: 1_000_000_000,
        reduce_bw: None,
    };
    check_formulas(net, 2 * LCM);
}

#[test]
fn alpha_beta_times_are_the_paper_formulas_latency_bound() {
    // b = 0.25 ns/byte, a large latency, chunks that round
    let net = Net {
        a: 20_000,
        bw: 4_000_000_000,
        reduce_bw: None,
    };
    check_formulas(net, 100_003);
}

#[test]
fn alpha_beta_times_are_the_paper_formulas_slow_links() {
    // b = 2 ns/byte, a small latency
    let net = Net {
        a: 700,
        bw: 500_000_000,
        reduce_bw: None,
    };
    check_formulas(net, 3 * LCM);
}

#[test]
fn reductions_add_the_papers_gamma_terms() {
    // g = 0.5 ns/byte: cheaper than the wire
    let net = Net {
        a: 5_000,
        bw: 1_000_000_000,
        reduce_bw: Some(2_000_000_000),
    };
    check_formulas(net, 2 * LCM);
    // g = 4 ns/byte: dearer than the wire
    let net = Net {
        a: 3_000,
        bw: 2_000_000_000,
        reduce_bw: Some(250_000_000),
    };
    check_formulas(net, LCM);
}

#[test]
fn every_op_and_algorithm_is_correct_through_the_engine() {
    for op in OpKind::ALL {
        for &algorithm in op.algorithms() {
            for p in 1..=9u32 {
                // hierarchical runs on a two-level topology; the others on a flat one
                let hosts: Vec<u32> = if algorithm == Algorithm::Hierarchical {
                    (1..=4).filter(|&rph| rph <= p).collect()
                } else {
                    vec![1]
                };
                for rph in hosts {
                    for (dtype, reduce) in [("i64", "sum"), ("f32", "prod"), ("f64", "max")] {
                        let root = if op.rooted() {
                            format!("root = {}\n", (2 * p / 3).min(p - 1))
                        } else {
                            String::new()
                        };
                        let reduce = if op.reduces() {
                            format!("reduce = \"{reduce}\"\n")
                        } else {
                            String::new()
                        };
                        let bytes = if op == OpKind::Barrier {
                            ""
                        } else {
                            "bytes = \"1MiB\"\n"
                        };
                        let text = format!(
                            "name = \"correct\"\n[world]\nsize = {p}\nranks_per_host = {rph}\n\
                             [workload]\niterations = 2\ndtype = \"{dtype}\"\nelements = 11\n\
                             [[workload.ops]]\nop = \"{op}\"\nalgorithm = \"{algorithm}\"\n\
                             {bytes}{root}{reduce}"
                        );
                        let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
                        let r = &out.report;
                        assert_eq!(r.outcome, Outcome::Completed, "{text}");
                        assert_eq!(r.ops.len(), 2, "{text}");
                        for o in &r.ops {
                            assert!(o.correct, "{op} {algorithm} p={p} rph={rph}: wrong\n{text}");
                            assert_eq!(o.ranks_completed, p);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn hierarchical_allreduce_costs_two_intra_host_rings_and_one_across_hosts() {
    // 2(l-1)(a_l + n/l b_l) + 2(H-1)(a + n/p b), with b_l = 0.1 ns/byte and b = 1 ns/byte
    for (p, l) in [(8u64, 4u64), (8, 2), (12, 3), (16, 4), (6, 6), (4, 1)] {
        let n = 2 * LCM;
        let text = format!(
            "name = \"hier\"\n[world]\nsize = {p}\nranks_per_host = {l}\n\
             [network]\nlatency = \"5us\"\nbandwidth = \"1GB/s\"\n{}\
             [workload]\n[[workload.ops]]\nop = \"allreduce\"\nalgorithm = \"hierarchical\"\n\
             bytes = \"{n}B\"\n",
            if l > 1 {
                "[network.intra_host]\nlatency = \"1us\"\nbandwidth = \"10GB/s\"\n"
            } else {
                ""
            }
        );
        let h = p / l;
        let want = 2 * (l - 1) * (1_000 + n / l / 10) + 2 * (h - 1) * (5_000 + n / p);
        assert_eq!(op_time(&text), want, "p={p} l={l}");
    }
}

/// LogGOPSim's README: "for small simulations, each host end time is printed (22000ns for our
/// example with default parameters)", the example being `dissemination_16.goal` and the
/// defaults L = 2500ns, o = 1500ns, g = 1000ns, G = 6ns (its simulator.ggo).
///
/// The schedule: 4 rounds; in round k every rank sends 1 byte to r + 2^k and receives from
/// r - 2^k, and its round-(k+1) send depends on its round-k receive. With 1 byte, (k-1)G = 0,
/// so every message takes 2o + L with no contention:
/// - round 1: all send at 0 (CPU busy 0..1500); first bytes arrive at o + L = 4000; the
///   receiver's CPU pays o: received at 5500;
/// - round 2: sends at 5500 (the gap g ended at 1000, the CPU at 5500): received at 11000;
/// - round 3: received at 16500; round 4: received at 22000.
///
/// So the barrier takes 4 (2o + L) = 4 x 5500 = 22000 ns. Our dissemination barrier sends
/// zero-byte messages, which cost what one byte costs in LogGP.
#[test]
fn loggp_dissemination_16_takes_what_loggopsim_reports() {
    let text = "name = \"loggopsim-dissemination-16\"\n[world]\nsize = 16\n\
                [network]\nmodel = \"loggp\"\nL = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"6ns\"\n\
                [workload]\n[[workload.ops]]\nop = \"barrier\"\nalgorithm = \"dissemination\"\n";
    assert_eq!(op_time(text), 22_000);
}

#[test]
fn loggp_messages_of_k_bytes_add_k_minus_1_gaps() {
    // a binomial broadcast of k bytes on 2 ranks is one message: 2o + L + (k-1)G
    let text = "name = \"loggp-bcast\"\n[world]\nsize = 2\n\
                [network]\nmodel = \"loggp\"\nL = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"6ns\"\n\
                [workload]\n[[workload.ops]]\nop = \"broadcast\"\nbytes = \"1001B\"\n";
    assert_eq!(op_time(text), 5_500 + 6_000);
}

#[test]
fn loggp_gap_per_byte_may_be_fractional_or_a_bandwidth() {
    // 0.04 ns per byte is 25 GB/s: (k-1)G = 1,000,000 x 0.04 = 40,000 ns, either way written
    for g in ["0.04ns", "25GB/s", "200Gbit/s"] {
        let text = format!(
            "name = \"loggp-fractional\"\n[world]\nsize = 2\n\
             [network]\nmodel = \"loggp\"\nL = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"{g}\"\n\
             [workload]\n[[workload.ops]]\nop = \"broadcast\"\nbytes = \"1000001B\"\n"
        );
        assert_eq!(op_time(&text), 5_500 + 40_000, "G = {g}");
    }
}

#[test]
fn loggp_pairwise_all_to_all_is_p_minus_1_exchanges() {
    // each step one message of k = n/p bytes each way: 2o + L + (k-1)G
    let (p, n) = (4u64, 4_000_000u64);
    let text = format!(
        "name = \"loggp-a2a\"\n[world]\nsize = {p}\n\
         [network]\nmodel = \"loggp\"\nL = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"0.04ns\"\n\
         [workload]\nelements = 3\n[[workload.ops]]\nop = \"all_to_all\"\nbytes = \"{n}B\"\n"
    );
    let k = n / p;
    let step = 2 * 1_500 + 2_500 + ((k - 1) * 4).div_ceil(100);
    assert_eq!(op_time(&text), (p - 1) * step);
}
