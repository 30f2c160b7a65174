//! Every algorithm computes the right result on every rank, and ranks that receive the same
//! result hold the same bits.

use crate::driver::{
    plans_agree, run, run_schedules, Net, Outcome, Setup, ALGORITHMS, DTYPES, REDUCES,
};
use proptest::prelude::*;
use ringside_sim::proto::collective::{
    block_elems, schedule_with, supported, Action, AnySchedule, Ctx, PairStep, Schedule, StepPlan,
};
use ringside_sim::proto::Buffer;
use ringside_sim::scenario::{Algorithm, Dtype, OpKind, ReduceOp};

/// The result each rank must hold, computed directly from the inputs.
fn expected(s: &Setup) -> Vec<Option<Buffer>> {
    let inputs: Vec<Buffer> = (0..s.p).map(|r| s.input(r)).collect();
    let reduced = || {
        let mut acc = inputs[0].clone();
        for x in &inputs[1..] {
            assert!(acc.reduce_from(0, x, 0, x.len(), s.reduce));
        }
        acc
    };
    (0..s.p)
        .map(|me| match s.op {
            OpKind::Allreduce => Some(reduced()),
            OpKind::Reduce => (me == s.root).then(reduced),
            OpKind::Broadcast => Some(inputs[s.root as usize].clone()),
            OpKind::Allgather => {
                let mut all = Buffer::empty(s.dtype);
                inputs.iter().for_each(|x| all.extend_from(x, 0..x.len()));
                Some(all)
            }
            OpKind::ReduceScatter => {
                let mut mine = Buffer::empty(s.dtype);
                let all = reduced();
                mine.extend_from(&all, block_elems(me, me + 1, s.p, all.len()));
                Some(mine)
            }
            // no schedule: point-to-point calls run outside the collective executor
            OpKind::Barrier | OpKind::Send | OpKind::Recv => None,
            OpKind::Gather => (me == s.root).then(|| {
                let mut all = Buffer::empty(s.dtype);
                inputs.iter().for_each(|x| all.extend_from(x, 0..x.len()));
                all
            }),
            OpKind::Scatter => {
                let all = &inputs[s.root as usize];
                let mut mine = Buffer::empty(s.dtype);
                mine.extend_from(all, block_elems(me, me + 1, s.p, all.len()));
                Some(mine)
            }
            // piece `me` of every rank's input, in rank order
            OpKind::AllToAll => {
                let mut mine = Buffer::empty(s.dtype);
                for x in &inputs {
                    mine.extend_from(x, block_elems(me, me + 1, s.p, x.len()));
                }
                Some(mine)
            }
        })
        .collect()
}

/// Compares an outcome with the reference: exact for copies and integers, close for float
/// reductions (whose order differs between algorithms); and bit-identical across the ranks
/// that receive the same result.
fn verify(s: &Setup, got: &Outcome) -> Result<(), String> {
    let want = expected(s);
    let copies_only = !s.op.reduces();
    for (me, (g, w)) in got.results.iter().zip(&want).enumerate() {
        let ok = match (g, w) {
            (None, None) => true,
            (Some(g), Some(w)) if copies_only => g.hash() == w.hash() && g.len() == w.len(),
            (Some(g), Some(w)) => g.approx_eq(w),
            _ => false,
        };
        if !ok {
            return Err(format!("{s:?}: rank {me} holds {g:?}, expected {w:?}"));
        }
    }
    if s.op.same_result_everywhere() {
        let hashes: Vec<u64> = got.results.iter().flatten().map(Buffer::hash).collect();
        if hashes.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("{s:?}: ranks disagree: {:?}", got.results));
        }
    }
    Ok(())
}

fn check(s: &Setup, net: Net) -> Result<(), String> {
    plans_agree(s).map_err(|e| format!("{s:?}: {e}"))?;
    verify(s, &run(s, net))
}

#[test]
fn every_algorithm_p_dtype_and_reduction() {
    for &(op, algorithm) in ALGORITHMS {
        for p in 1..=17 {
            for dtype in DTYPES {
                for reduce in REDUCES {
                    for elements in [1, 5, 7, 13] {
                        let s = Setup {
                            root: (p * 2 / 3).min(p - 1),
                            elements,
                            dtype,
                            reduce,
                            seed: u64::from(p),
                            ..Setup::new(op, algorithm, p)
                        };
                        check(&s, Net::INSTANT).unwrap();
                    }
                }
            }
        }
    }
}

#[test]
fn rooted_ops_from_every_root() {
    for &(op, algorithm) in ALGORITHMS {
        if !op.rooted() {
            continue;
        }
        for p in 1..=17 {
            for root in 0..p {
                let s = Setup {
                    root,
                    elements: 5,
                    dtype: Dtype::F32,
                    reduce: ReduceOp::Prod,
                    ..Setup::new(op, algorithm, p)
                };
                check(&s, Net::INSTANT).unwrap();
            }
        }
    }
}

#[test]
fn hierarchical_on_every_host_layout() {
    for p in 1..=24 {
        for per_host in 1..=p {
            for reduce in REDUCES {
                let s = Setup {
                    per_host,
                    reduce,
                    elements: 9,
                    seed: u64::from(p * 31 + per_host),
                    ..Setup::new(OpKind::Allreduce, Algorithm::Hierarchical, p)
                };
                check(&s, Net::INSTANT).unwrap();
                check(
                    &s,
                    Net {
                        latency: 7,
                        bytes_per_ns: 3,
                    },
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn plans_fit_together_up_to_65_ranks() {
    for &(op, algorithm) in ALGORITHMS {
        for p in 1..=65 {
            let s = Setup {
                root: p / 3,
                ..Setup::new(op, algorithm, p)
            };
            plans_agree(&s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        }
    }
}

#[test]
fn one_rank_takes_no_steps() {
    for &(op, algorithm) in ALGORITHMS {
        let got = run(&Setup::new(op, algorithm, 1), Net::INSTANT);
        assert_eq!((got.steps, got.messages), (0, 0), "{op} {algorithm}");
    }
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn setups() -> impl Strategy<Value = (Setup, Net)> {
    (
        0..ALGORITHMS.len(),
        1..=17u32,
        0..=40u32,
        any::<u32>(),
        any::<u64>(),
        (0..DTYPES.len(), 0..REDUCES.len()),
        (0..50u64, 0..8u64, 0..100_000u64),
    )
        .prop_map(
            |(alg, p, elements, root, seed, (dt, rd), (latency, bw, bytes))| {
                let (op, algorithm) = ALGORITHMS[alg];
                let s = Setup {
                    root: root % p,
                    elements,
                    dtype: DTYPES[dt],
                    reduce: REDUCES[rd],
                    seed,
                    bytes,
                    ..Setup::new(op, algorithm, p)
                };
                let net = Net {
                    latency,
                    bytes_per_ns: bw,
                };
                (s, net)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Any call, under FIFO delivery and under a timed network (which reorders deliveries).
    #[test]
    fn random_calls_give_the_reference_result((s, net) in setups()) {
        prop_assert_eq!(check(&s, Net::INSTANT), Ok(()));
        prop_assert_eq!(check(&s, net), Ok(()));
    }
}

/// A deliberately broken allreduce: everyone sends its input to everyone and reduces what
/// arrives in arrival order, so ranks combine in different orders.
struct EveryoneReduces(Ctx);

impl Schedule for EveryoneReduces {
    fn steps(&self) -> u32 {
        1
    }
    fn nblocks(&self) -> u32 {
        1
    }
    fn plan(&self, _: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.0;
        for peer in (0..p).filter(|&q| q != me) {
            plan.send(peer, &[(0, 1)]);
            plan.recv(peer, &[(0, 1)], Action::Reduce);
        }
    }
}

#[test]
fn disagreement_is_caught() {
    let s = Setup {
        dtype: Dtype::F32,
        reduce: ReduceOp::Prod,
        elements: 64,
        ..Setup::new(OpKind::Allreduce, Algorithm::Direct, 9)
    };
    let scheds = (0..s.p)
        .map(|me| Box::new(EveryoneReduces(s.ctx(me))) as Box<dyn Schedule>)
        .collect();
    let got = run_schedules(&s, Net::INSTANT, scheds);
    let err = verify(&s, &got).unwrap_err();
    assert!(err.contains("ranks disagree"), "{err}");
}

/// A schedule that waits for a message nobody sends.
struct Forlorn;

impl Schedule for Forlorn {
    fn steps(&self) -> u32 {
        1
    }
    fn nblocks(&self) -> u32 {
        1
    }
    fn plan(&self, _: u32, plan: &mut StepPlan) {
        plan.recv(0, &[(0, 1)], Action::Copy);
    }
}

#[test]
#[should_panic(expected = "deadlock")]
fn deadlock_is_caught() {
    let s = Setup::new(OpKind::Allreduce, Algorithm::Direct, 2);
    let forlorn = || Box::new(Forlorn) as Box<dyn Schedule>;
    run_schedules(&s, Net::INSTANT, vec![forlorn(), forlorn()]);
}

#[test]
fn supported_names_exactly_the_implemented_algorithms() {
    // every stock algorithm (the vocabulary's own test holds the list to the enum)
    let every = Algorithm::STOCK;
    for op in OpKind::ALL {
        for &algorithm in every {
            let implemented = ALGORITHMS.contains(&(op, algorithm));
            assert_eq!(supported(op, algorithm), implemented, "{op} {algorithm}");
        }
    }
}

/// A library schedule whose pair path is `pair` instead of its own.
struct Repaired {
    inner: AnySchedule,
    pair: fn(&AnySchedule, u32) -> Option<PairStep>,
}

impl Repaired {
    fn all(s: &Setup, pair: fn(&AnySchedule, u32) -> Option<PairStep>) -> Vec<Box<dyn Schedule>> {
        (0..s.p)
            .map(|me| {
                let inner = schedule_with(s.op, s.algorithm, s.ctx(me), s.per_host)
                    .expect("supported algorithm");
                Box::new(Repaired { inner, pair }) as Box<dyn Schedule>
            })
            .collect()
    }
}

impl Schedule for Repaired {
    fn steps(&self) -> u32 {
        self.inner.steps()
    }
    fn nblocks(&self) -> u32 {
        self.inner.nblocks()
    }
    fn plan(&self, step: u32, plan: &mut StepPlan) {
        self.inner.plan(step, plan)
    }
    fn pair(&self, step: u32) -> Option<PairStep> {
        (self.pair)(&self.inner, step)
    }
}

/// Runs `s` once with `pair` as the schedules' pair path and once through their plans only:
/// the results, the completion time and the messages must be the same.
fn pair_and_plan_paths_agree(
    s: &Setup,
    net: Net,
    pair: fn(&AnySchedule, u32) -> Option<PairStep>,
) -> Result<(), String> {
    let fast = run_schedules(s, net, Repaired::all(s, pair));
    // no pair path: the executor plans every step
    let planned = run_schedules(s, net, Repaired::all(s, |_, _| None));
    let bits = |o: &Outcome| -> Vec<Option<u64>> {
        o.results
            .iter()
            .map(|r| r.as_ref().map(Buffer::hash))
            .collect()
    };
    if bits(&fast) != bits(&planned)
        || (fast.end_ns, fast.messages) != (planned.end_ns, planned.messages)
    {
        return Err(format!(
            "{s:?}: the pair path ends at {} ns after {} messages, the plan path at {} ns after {}",
            fast.end_ns, fast.messages, planned.end_ns, planned.messages
        ));
    }
    Ok(())
}

#[test]
fn the_pair_path_runs_like_the_plan_path() {
    let net = Net {
        latency: 5,
        bytes_per_ns: 3,
    };
    for &(op, algorithm) in ALGORITHMS {
        for p in [1, 2, 3, 5, 8, 13] {
            for elements in [1, 7, 64] {
                let s = Setup {
                    elements,
                    dtype: Dtype::F32,
                    bytes: 1000 + u64::from(elements),
                    ..Setup::new(op, algorithm, p)
                };
                pair_and_plan_paths_agree(&s, net, |inner, step| inner.pair(step)).unwrap();
            }
        }
    }
}

#[test]
fn a_pair_path_that_differs_from_its_plan_is_caught() {
    let s = Setup {
        elements: 8,
        ..Setup::new(OpKind::Allreduce, Algorithm::Ring, 4)
    };
    // unlike the plan, the pair path receives into the block it sends
    let wrong = |inner: &AnySchedule, step| {
        inner.pair(step).map(|mut pair: PairStep| {
            pair.recv_block = pair.send_block;
            pair
        })
    };
    let err = pair_and_plan_paths_agree(&s, Net::INSTANT, wrong).unwrap_err();
    assert!(err.contains("the pair path"), "{err}");
    let got = run_schedules(&s, Net::INSTANT, Repaired::all(&s, wrong));
    assert!(
        verify(&s, &got).is_err(),
        "a wrong pair path gives wrong results"
    );
}
