//! Fidelity of the engine's network models: with no faults, no jitter and no compute, the time
//! of a collective run through the real engine (`run::run`, the report's `end_ns - start_ns`)
//! equals the cost formula of its algorithm (`ringside_sim::cost`, from Thakur, Rabenseifner &
//! Gropp 2005), to within the rounding of each message and reduction to whole nanoseconds.
//! LogGP: LogGOPSim's own example.

mod common;

use common::scenario;
use ringside_sim::cost::{hierarchical_allreduce, textbook, Net};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{Algorithm, OpKind, Outcome};

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
    // send and recv: `messages_carry_their_senders_data_for_p_1_to_17`
    for op in OpKind::ALL.into_iter().filter(|o| !o.point_to_point()) {
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

/// When each end of the one message of `text` (rank 0 sends to rank 1) completes: (send, recv),
/// in ns after the call, both ends calling at time 0.
fn message_times(text: &str) -> (u64, u64) {
    message_times_with(text, &RunOptions::default())
}

fn message_times_with(text: &str, options: &RunOptions) -> (u64, u64) {
    use ringside_sim::run::run_events;
    use ringside_sim::trace::{Event, VecRecorder};
    let s = scenario(text);
    let mut rec = VecRecorder::default();
    let (result, _, _) = run_events(&s, options, &mut rec);
    assert_eq!(result.outcome, Outcome::Completed, "{text}");
    let done = |who: u32| {
        rec.events
            .iter()
            .find_map(|(t, e)| match e {
                Event::Complete {
                    rank,
                    correct,
                    result,
                    ..
                } if *rank == who => {
                    assert_eq!(*correct, Some(true), "{text}");
                    // the receiver holds the sender's data; the sender nothing
                    assert_eq!(result.is_empty(), who == 0, "{text}");
                    Some(*t)
                }
                _ => None,
            })
            .expect("both ends complete")
    };
    (done(0), done(1))
}

/// One message of `n` bytes from rank 0 to rank 1 on `network`.
fn one_message(network: &str, n: u64, rendezvous: bool) -> String {
    format!(
        "name = \"p2p\"\n[world]\nsize = 2\n[network]\n{network}\
         [workload]\ndtype = \"f64\"\nelements = 5\n\
         [[workload.ops]]\nop = \"send\"\npeer = 1\nbytes = \"{n}B\"\nrendezvous = {rendezvous}\n\
         [[workload.programs]]\nranks = [1]\n\
         [[workload.programs.ops]]\nop = \"recv\"\npeer = 0\nbytes = \"{n}B\"\n"
    )
}

/// alpha-beta, a = latency, b = 1/bandwidth, a message of n bytes:
/// - eager send: done when its bytes have left, n b;
/// - recv: done when the message arrived, a + n b;
/// - rendezvous send: done when the receiver's acknowledgement (no bytes) is back, 2a + n b.
#[test]
fn alpha_beta_send_and_recv_times_are_exact() {
    for (a, bw, n) in [
        (5_000u64, 25_000_000_000u64, 64u64 << 20),
        (2_000, 1_000_000_000, 1_000_000),
        (700, 100_000_000_000, 0),
        (10_000, 4_000_000_000, 12_345),
    ] {
        let net = format!("latency = \"{a}ns\"\nbandwidth = \"{bw}B/s\"\n");
        let nb = (u128::from(n) * 1_000_000_000).div_ceil(u128::from(bw)) as u64;
        let text = one_message(&net, n, false);
        assert_eq!(message_times(&text), (nb, a + nb), "eager {text}");
        let text = one_message(&net, n, true);
        assert_eq!(
            message_times(&text),
            (2 * a + nb, a + nb),
            "rendezvous {text}"
        );
    }
}

/// LogGP, a message of k bytes:
/// - eager send: done when the sender paid its overhead and the bytes' gaps, o + (k-1)G;
/// - recv: done when the receiver took it, 2o + L + (k-1)G;
/// - rendezvous send: the acknowledgement (no bytes) takes 2o + L more, 4o + 2L + (k-1)G.
#[test]
fn loggp_send_and_recv_times_are_exact() {
    let net = "model = \"loggp\"\nL = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"6ns\"\n";
    for k in [1u64, 1001, 65_536] {
        let (l, o, gk) = (2_500, 1_500, 6 * (k - 1));
        let text = one_message(net, k, false);
        assert_eq!(
            message_times(&text),
            (o + gk, 2 * o + l + gk),
            "eager {text}"
        );
        let text = one_message(net, k, true);
        assert_eq!(
            message_times(&text),
            (4 * o + 2 * l + gk, 2 * o + l + gk),
            "rendezvous {text}"
        );
    }
}

/// The exact send times catch an eager send that reports itself done before its bytes left.
#[test]
fn an_eager_send_done_early_misses_its_time() {
    use ringside_sim::check::Mutation;
    let text = one_message(
        "latency = \"5us\"\nbandwidth = \"1GB/s\"\n",
        1_000_000,
        false,
    );
    assert_eq!(message_times(&text), (1_000_000, 1_005_000));
    let broken = RunOptions {
        mutations: Mutation::EagerSendDoneEarly.into(),
        ..RunOptions::default()
    };
    let (sent, received) = message_times_with(&text, &broken);
    assert_eq!(received, 1_005_000, "the message itself is on time");
    assert!(sent < 1_000_000, "done at {sent}, before its bytes left");
}

/// A message's op in the report spans the earliest call to the latest completion: for an
/// eager send of n bytes, a + n b after both ends called.
#[test]
fn a_message_in_the_report_takes_latency_plus_transfer() {
    let text = one_message(
        "latency = \"5us\"\nbandwidth = \"25GB/s\"\n",
        25_000_000,
        false,
    );
    assert_eq!(op_time(&text), 5_000 + 1_000_000);
    let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
    let op = &out.report.ops[0];
    assert_eq!((op.op.name(), op.algorithm.name()), ("send", "eager"));
    assert_eq!((op.from, op.to), (Some(0), Some(1)));
}

/// Every rank sends to the next and receives from the previous (a shift, as a pipeline's
/// activations move), eager and rendezvous, one way and the other: every recv holds exactly
/// what its sender sent, for p = 1..17.
#[test]
fn messages_carry_their_senders_data_for_p_1_to_17() {
    for p in 1..=17u32 {
        for rendezvous in [false, true] {
            for (to, from) in [("next", "prev"), ("prev", "next")] {
                for dtype in ["i64", "f32", "f64"] {
                    let text = format!(
                        "name = \"shift\"\n[world]\nsize = {p}\n\
                         [workload]\niterations = 3\ndtype = \"{dtype}\"\nelements = 7\n\
                         [[workload.ops]]\nop = \"send\"\npeer = \"{to}\"\nbytes = \"1MiB\"\n\
                         rendezvous = {rendezvous}\n\
                         [[workload.ops]]\nop = \"recv\"\npeer = \"{from}\"\nbytes = \"1MiB\"\n"
                    );
                    let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
                    let r = &out.report;
                    assert_eq!(r.outcome, Outcome::Completed, "{text}");
                    // p - 1 messages per iteration, each with both ends
                    assert_eq!(r.ops.len() as u32, 3 * (p - 1), "{text}");
                    for o in &r.ops {
                        assert!(o.correct, "p={p}: wrong data\n{text}");
                        assert_eq!((o.ranks_called, o.ranks_completed), (2, 2), "{text}");
                    }
                }
            }
        }
    }
}

/// A GPipe pipeline of S stages and m microbatches, forward f and backward b per microbatch
/// and stage, n bytes each way, a = latency, b' = 1/bandwidth: each stage's sends are eager, so
/// a stage computes its next microbatch once the last one's bytes have left (n b'), and
///   T = (m + S - 1)(f + b) + 2(S - 1) a + 2(m + S - 2) n b'
/// (every microbatch passes S - 1 links each way; the first and last stage's m sends each way
/// hold them up once per microbatch but the last).
#[test]
fn a_gpipe_pipeline_takes_its_formula() {
    for (f, b, n, a, bw) in [
        (
            1_000_000u64,
            3_000_000u64,
            1u64 << 20,
            10_000u64,
            10_000_000_000u64,
        ),
        (500_000, 500_000, 4 << 20, 2_000, 50_000_000_000),
        (2_000_000, 4_000_000, 16 << 20, 5_000, 25_000_000_000),
    ] {
        for stages in [2u64, 3, 5, 6] {
            for m in [1u64, 2, 5, 7] {
                let text = format!(
                    "name = \"gpipe\"\n[world]\nsize = {stages}\n\
                     [network]\nlatency = \"{a}ns\"\nbandwidth = \"{bw}B/s\"\n\
                     [workload]\n[workload.pipeline]\nmicrobatches = {m}\nschedule = \"gpipe\"\n\
                     forward = \"{f}ns\"\nbackward = \"{b}ns\"\nbytes = \"{n}B\"\n"
                );
                let out = run(&scenario(&text), &RunOptions::default()).expect("runs");
                assert_eq!(out.report.outcome, Outcome::Completed, "{text}");
                let nb = (u128::from(n) * 1_000_000_000).div_ceil(u128::from(bw)) as u64;
                let want =
                    (m + stages - 1) * (f + b) + 2 * (stages - 1) * a + 2 * (m + stages - 2) * nb;
                assert_eq!(out.result.end_ns, want, "{text}");
            }
        }
    }
}
