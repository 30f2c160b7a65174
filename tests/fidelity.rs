//! Fidelity of the engine's network models: with no faults, no jitter and no compute, the time
//! of a collective run through the real engine (`run::run`, the report's `end_ns - start_ns`)
//! equals the cost formula of its algorithm (`ringside_sim::cost`, from Thakur, Rabenseifner &
//! Gropp 2005), to within the rounding of each message and reduction to whole nanoseconds.
//! LogGP: LogGOPSim's own example.

mod common;

use ringside_sim::cost::{hierarchical_allreduce, textbook, Net};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{Algorithm, OpKind, Outcome};

/// Runs a scenario of one op and returns its time in ns, checking that it completed correctly.
fn op_time(text: &str) -> u64 {
    let out = run(&common::scenario(text), &RunOptions::default()).expect("runs");
    let r = &out.report;
    assert_eq!(r.outcome, Outcome::Completed, "{text}");
    assert_eq!(r.ops.len(), 1, "{text}");
    let op = &r.ops[0];
    assert!(op.correct, "wrong result:\n{text}");
    op.end_ns.expect("completed") - op.start_ns
}

/// An alpha-beta network: latency in ns, bandwidth and reduce bandwidth in bytes/s.
#[derive(Clone, Copy, Debug)]
struct Link {
    latency: u64,
    bandwidth: u64,
    reduce_bandwidth: Option<u64>,
}

impl Link {
    fn net(&self) -> Net {
        let net = Net::new(self.latency, self.bandwidth);
        self.reduce_bandwidth.map_or(net, |r| net.reducing(r))
    }
}

fn one_op(p: u32, link: Link, op: OpKind, algorithm: Algorithm, n: u64) -> String {
    let reduce_bw = link
        .reduce_bandwidth
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
        link.latency, link.bandwidth
    )
}

const RANKS: [u32; 9] = [2, 3, 4, 5, 6, 7, 8, 9, 16];

/// 720720 = lcm(1..=16): n a multiple of it splits into whole bytes for every p here.
const LCM: u64 = 720_720;

/// Checks every algorithm on every p of `RANKS` against its formula, where it has one.
fn check_formulas(link: Link, n: u64) {
    let mut checked = 0;
    for op in OpKind::ALL {
        for &algorithm in op.algorithms() {
            for p in RANKS {
                let Some(want) = textbook(op, algorithm, p, n, link.net()) else {
                    continue;
                };
                let t = op_time(&one_op(p, link, op, algorithm, n)) as f64;
                // each message's wire time, and each reduction, rounds up to a whole ns
                assert!(
                    want.admits(t, f64::from(want.rounds())),
                    "{op} {algorithm} p={p} n={n} {link:?}: took {t} ns, the formula says {want:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 70, "only {checked} cases checked");
}

#[test]
fn alpha_beta_times_are_the_formulas_bandwidth_bound() {
    // b = 1 ns/byte and n divisible by every p: nothing rounds
    let link = Link {
        latency: 5_000,
        bandwidth: 1_000_000_000,
        reduce_bandwidth: None,
    };
    check_formulas(link, 2 * LCM);
}

#[test]
fn alpha_beta_times_are_the_formulas_latency_bound() {
    // b = 0.25 ns/byte, a large latency, chunks that round
    let link = Link {
        latency: 20_000,
        bandwidth: 4_000_000_000,
        reduce_bandwidth: None,
    };
    check_formulas(link, 100_003);
}

#[test]
fn alpha_beta_times_are_the_formulas_slow_links() {
    // b = 2 ns/byte, a small latency
    let link = Link {
        latency: 700,
        bandwidth: 500_000_000,
        reduce_bandwidth: None,
    };
    check_formulas(link, 3 * LCM);
}

#[test]
fn reductions_add_the_papers_gamma_terms() {
    // g = 0.5 ns/byte: cheaper than the wire
    let link = Link {
        latency: 5_000,
        bandwidth: 1_000_000_000,
        reduce_bandwidth: Some(2_000_000_000),
    };
    check_formulas(link, 2 * LCM);
    // g = 4 ns/byte: dearer than the wire
    let link = Link {
        latency: 3_000,
        bandwidth: 2_000_000_000,
        reduce_bandwidth: Some(250_000_000),
    };
    check_formulas(link, LCM);
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
                        let out =
                            run(&common::scenario(&text), &RunOptions::default()).expect("runs");
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
    // b' = 0.1 ns/byte inside a host, b = 1 ns/byte across
    let (inter, intra) = (
        Net::new(5_000, 1_000_000_000),
        Net::new(1_000, 10_000_000_000),
    );
    for (p, l) in [(8u32, 4u32), (8, 2), (12, 3), (16, 4), (6, 6), (4, 1)] {
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
        let want = hierarchical_allreduce(p, l, n, inter, intra);
        let t = op_time(&text) as f64;
        // nothing rounds: n splits into whole bytes and whole ns
        assert!(
            want.admits(t, 1e-6),
            "p={p} l={l}: took {t}, the formula says {want:?}"
        );
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
