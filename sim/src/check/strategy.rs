//! proptest strategies for scenarios: worlds, networks, workloads and fault schedules.
//!
//! Every generated scenario passes [`scenario::validate`](crate::scenario::validate) and
//! [`engine::SUPPORT`](crate::engine::SUPPORT): ranks, iterations and op indices are drawn as
//! free numbers and reduced into range when the scenario is assembled, which also keeps
//! shrinking simple — the world, the workload and each fault shrink independently (fewer
//! ranks, fewer iterations and ops, fewer and shorter faults) and the result stays valid.
//!
//! Fault times are drawn as fractions: `at` of the fault-free run length (so faults land while
//! the workload runs), durations and extra delays of the collective timeout (so some faults
//! heal well within it and others outlast it).

use super::bound;
use super::Case;
use crate::proto::collective::supported;
use crate::proto::data::mix;
use crate::scenario::{
    Algorithm, Dtype, EngineConfig, Fault, GroupConfig, Link, Network, OpKind, OpSpec, ReduceOp,
    Scenario, TieBreak, Workload, World,
};
use crate::units::{Bandwidth, Duration, Nanos, Size};
use proptest::prelude::*;
use proptest::sample::select;
use std::ops::RangeInclusive;

/// How big generated scenarios get. The defaults keep a case to a few milliseconds of wall
/// time while still using every op, algorithm and fault kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Gen {
    /// World sizes.
    pub ranks: RangeInclusive<u32>,
    pub max_iterations: u32,
    /// Ops per iteration (at least one is always generated).
    pub max_ops: usize,
    pub max_faults: usize,
    pub max_elements: u32,
    /// Largest modeled op size.
    pub max_bytes: u64,
    /// Collective timeouts, in milliseconds (raised when needed so that one fault-free
    /// iteration fits four times into the timeout).
    pub timeout_ms: RangeInclusive<u64>,
    /// Largest compute phase, in microseconds.
    pub max_compute_us: u64,
    /// Fault kinds to draw from, as written in `kind = "..."`.
    pub fault_kinds: Vec<&'static str>,
}

impl Default for Gen {
    fn default() -> Self {
        Gen {
            ranks: 2..=8,
            max_iterations: 3,
            max_ops: 3,
            max_faults: 3,
            max_elements: 64,
            max_bytes: 4 << 20,
            timeout_ms: 50..=500,
            max_compute_us: 5_000,
            fault_kinds: Fault::KINDS.to_vec(),
        }
    }
}

impl Gen {
    /// The default sizes on exactly `p` ranks.
    pub fn ranks(p: u32) -> Gen {
        Gen {
            ranks: p..=p,
            ..Gen::default()
        }
    }

    /// The default sizes without faults.
    pub fn fault_free() -> Gen {
        Gen {
            max_faults: 0,
            ..Gen::default()
        }
    }
}

/// Worlds of `gen.ranks` ranks, most with one rank per host.
pub fn worlds(gen: &Gen) -> impl Strategy<Value = World> {
    let max = *gen.ranks.end();
    (
        gen.ranks.clone(),
        prop_oneof![3 => Just(1u32), 1 => 1..=max.max(1)],
    )
        .prop_map(|(size, rph)| World {
            size,
            ranks_per_host: rph.min(size).max(1),
        })
}

/// Alpha-beta networks: latency 100ns-50us, bandwidth 1-100 GB/s, sometimes jitter, a
/// reduction bandwidth and faster intra-host links (used only when a host holds several ranks).
pub fn networks() -> impl Strategy<Value = Network> {
    (
        100u64..=50_000,
        1u64..=100,
        prop::option::weighted(0.3, 1u64..=20_000),
        1u64..=20,
        prop::option::weighted(0.3, 1u64..=100),
        prop::option::weighted(0.5, (100u64..=5_000, 10u64..=400)),
    )
        .prop_map(|(latency, gbps, jitter, rto_ms, reduce, intra)| Network {
            latency: Duration(latency),
            bandwidth: Bandwidth(gbps * 1_000_000_000),
            jitter: Duration(jitter.unwrap_or(0)),
            retransmit_timeout: Duration(rto_ms * 1_000_000),
            reduce_bandwidth: reduce.map(|g| Bandwidth(g * 1_000_000_000)),
            intra_host: intra.map(|(l, g)| Link {
                latency: Duration(l),
                bandwidth: Bandwidth(g * 1_000_000_000),
            }),
            ..Network::default()
        })
}

/// Draws of one op, reduced into range by [`OpDraw::spec`].
#[derive(Clone, Debug)]
struct OpDraw {
    op: OpKind,
    /// 0: the default algorithm; k: the (k-1)-th supported one, wrapping.
    algorithm: u8,
    bytes: u64,
    reduce: ReduceOp,
    root: u32,
}

fn supported_algorithms(op: OpKind) -> Vec<Algorithm> {
    op.algorithms()
        .iter()
        .copied()
        .filter(|a| supported(op, *a))
        .collect()
}

impl OpDraw {
    fn spec(&self, p: u32) -> OpSpec {
        let algs = supported_algorithms(self.op);
        let algorithm = match self.algorithm {
            0 => None,
            k if !algs.is_empty() => Some(algs[(k as usize - 1) % algs.len()]),
            _ => None,
        };
        OpSpec {
            op: self.op,
            bytes: Size(if self.op == OpKind::Barrier {
                0
            } else {
                self.bytes
            }),
            reduce: if self.op.reduces() {
                self.reduce
            } else {
                ReduceOp::Sum
            },
            algorithm,
            root: self.op.rooted().then_some(self.root % p.max(1)),
            group: None,
        }
    }
}

fn op_draws(gen: &Gen) -> impl Strategy<Value = OpDraw> {
    (
        select(OpKind::ALL.to_vec()),
        0u8..=5,
        1..=gen.max_bytes.max(1),
        select(vec![
            ReduceOp::Sum,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Prod,
        ]),
        0u32..1024,
    )
        .prop_map(|(op, algorithm, bytes, reduce, root)| OpDraw {
            op,
            algorithm,
            bytes,
            reduce,
            root,
        })
}

/// Draws of a workload, reduced into range for a world by [`WorkloadDraw::workload`].
#[derive(Clone, Debug)]
struct WorkloadDraw {
    iterations: u32,
    compute_us: u64,
    dtype: Dtype,
    elements: u32,
    ops: Vec<OpDraw>,
}

impl WorkloadDraw {
    fn workload(&self, p: u32) -> Workload {
        Workload {
            iterations: self.iterations,
            compute: Duration(self.compute_us * 1_000),
            dtype: self.dtype,
            elements: self.elements,
            ops: self.ops.iter().map(|o| o.spec(p)).collect(),
            registry: Vec::new(),
        }
    }
}

fn workload_draws(gen: &Gen) -> impl Strategy<Value = WorkloadDraw> {
    (
        1..=gen.max_iterations.max(1),
        prop_oneof![1 => Just(0u64), 3 => 0..=gen.max_compute_us],
        select(vec![Dtype::F32, Dtype::F64, Dtype::I64]),
        1..=gen.max_elements.max(1),
        prop::collection::vec(op_draws(gen), 1..=gen.max_ops.max(1)),
    )
        .prop_map(
            |(iterations, compute_us, dtype, elements, ops)| WorkloadDraw {
                iterations,
                compute_us,
                dtype,
                elements,
                ops,
            },
        )
}

/// Workloads for a world of `p` ranks: 1 to `gen.max_iterations` iterations of up to
/// `gen.max_ops` ops of every kind, each with the default or any supported algorithm.
pub fn workloads_for(p: u32, gen: &Gen) -> impl Strategy<Value = Workload> {
    workload_draws(gen).prop_map(move |w| w.workload(p))
}

/// Draws of one fault, reduced into range by [`FaultDraw::fault`].
#[derive(Clone, Debug)]
struct FaultDraw {
    /// Index into the allowed kinds, wrapping.
    kind: usize,
    rank: u32,
    /// A second number: the other end of a link, the sides of a partition, the changed value
    /// of a mismatch.
    other: u32,
    /// Start, in thousandths of the fault-free run length.
    at: u32,
    /// Duration in thousandths of the collective timeout; None = permanent where allowed.
    duration: Option<u32>,
    /// Extra delay (thousandths of a quarter timeout), loss rate, slow factor, which
    /// parameter a mismatch changes.
    magnitude: u32,
    /// A link instead of a rank, a one-way partition, a restart after a preemption.
    flag: bool,
    iteration: u32,
    op_index: u32,
}

fn fault_draws(kinds: usize) -> impl Strategy<Value = FaultDraw> {
    (
        0..kinds.max(1),
        0u32..1024,
        0u32..1024,
        0u32..=1000,
        prop::option::weighted(0.85, 1u32..=1500),
        0u32..1000,
        any::<bool>(),
        0u32..64,
        0u32..64,
    )
        .prop_map(
            |(kind, rank, other, at, duration, magnitude, flag, iteration, op_index)| FaultDraw {
                kind,
                rank,
                other,
                at,
                duration,
                magnitude,
                flag,
                iteration,
                op_index,
            },
        )
}

/// What a fault is laid on: the scenario's shape.
struct Frame<'a> {
    p: u32,
    iterations: u32,
    ops: &'a [OpSpec],
    dtype: Dtype,
    timeout: Nanos,
    /// Fault-free run length (an upper bound).
    horizon: Nanos,
}

impl<'a> Frame<'a> {
    fn of(s: &'a Scenario) -> Frame<'a> {
        Frame {
            p: s.world.size,
            iterations: s.workload.iterations,
            ops: &s.workload.ops,
            dtype: s.workload.dtype,
            timeout: s.group.timeout.0,
            horizon: Nanos::from(s.workload.iterations) * bound::iteration_cost(s),
        }
    }
}

fn other_dtype(d: Dtype, k: u32) -> Dtype {
    let all = [Dtype::F32, Dtype::F64, Dtype::I64];
    let i = all.iter().position(|x| *x == d).unwrap_or(0);
    all[(i + 1 + (k % 2) as usize) % 3]
}

impl FaultDraw {
    /// The fault on `f`, or None when it cannot exist there (a link or partition on one rank,
    /// an application bug in a workload without ops).
    fn fault(&self, f: &Frame, kinds: &[&'static str]) -> Option<Fault> {
        let p = f.p.max(1);
        let kind = *kinds.get(self.kind % kinds.len().max(1))?;
        let rank = self.rank % p;
        let other_rank = (p >= 2).then(|| (rank + 1 + self.other % (p - 1)) % p);
        let at = Duration(
            (u128::from(f.horizon) * u128::from(self.at.min(1000)) / 1000)
                .try_into()
                .unwrap_or(u64::MAX / 4),
        );
        let span = |per_mille: u32| {
            Duration((u128::from(f.timeout) * u128::from(per_mille) / 1000).max(1_000) as Nanos)
        };
        let duration = self.duration.map(span);
        let target = match (self.flag, other_rank) {
            (true, Some(b)) => (None, Some([rank, b])),
            _ => (Some(rank), None),
        };
        let iteration = self.iteration % f.iterations.max(1);
        let op_index = (!f.ops.is_empty()).then(|| self.op_index % f.ops.len() as u32);
        Some(match kind {
            "preempt" => Fault::Preempt {
                rank,
                at,
                restart_after: self.flag.then(|| duration.unwrap_or(span(100))),
            },
            "pause" => Fault::Pause {
                rank,
                at,
                duration: duration.unwrap_or(span(100)),
            },
            "partition" => {
                let b = other_rank?;
                // 2 or 3 sides; other ranks are on no side (their links are untouched)
                let k = 2 + self.magnitude % 2;
                let mut sides: Vec<Vec<u32>> = vec![Vec::new(); k as usize];
                for r in 0..p {
                    let side = if r == rank {
                        0
                    } else if r == b {
                        1
                    } else {
                        (mix(u64::from(self.other) << 32 | u64::from(r)) % u64::from(k + 1)) as u32
                    };
                    if let Some(s) = sides.get_mut(side as usize) {
                        s.push(r);
                    }
                }
                sides.retain(|s| !s.is_empty());
                Fault::Partition {
                    sides,
                    at,
                    duration,
                    oneway: self.flag,
                }
            }
            "delay" => {
                let extra = Duration(
                    (u128::from(f.timeout / 4) * u128::from(self.magnitude) / 1000).max(1_000)
                        as Nanos,
                );
                Fault::Delay {
                    rank: target.0,
                    link: target.1,
                    at,
                    duration,
                    extra,
                    jitter: self
                        .other
                        .is_multiple_of(3)
                        .then(|| Duration(extra.0 / 2 + 1)),
                }
            }
            "loss" => Fault::Loss {
                rank: target.0,
                link: target.1,
                at,
                duration,
                rate: f64::from(self.magnitude % 100 + 1) / 100.0,
            },
            "slow" => Fault::Slow {
                rank,
                at,
                duration,
                factor: 1.0 + f64::from(self.magnitude % 90 + 5) / 10.0,
            },
            "mismatch" => {
                let index = op_index?;
                let target = &f.ops[index as usize];
                let mut m = (None, None, None, None);
                match self.magnitude % 4 {
                    0 => m.1 = Some(Size(target.bytes.0 + 1 + u64::from(self.other))),
                    1 => {
                        let i = OpKind::ALL
                            .iter()
                            .position(|o| *o == target.op)
                            .unwrap_or(0);
                        m.0 = Some(OpKind::ALL[(i + 1 + (self.other % 5) as usize) % 6]);
                    }
                    3 if p >= 2 => {
                        let root = target.root.unwrap_or(0);
                        m.2 = Some((root + 1 + self.other % (p - 1)) % p);
                    }
                    _ => m.3 = Some(other_dtype(f.dtype, self.other)),
                }
                Fault::Mismatch {
                    rank,
                    iteration,
                    op_index: Some(index),
                    op: m.0,
                    bytes: m.1,
                    root: m.2,
                    dtype: m.3,
                }
            }
            "skip" => Fault::Skip {
                rank,
                iteration,
                op_index: Some(op_index?),
            },
            "hang" => Fault::Hang { rank, iteration },
            _ => return None,
        })
    }
}

fn faults_on(frame: &Frame, draws: &[FaultDraw], kinds: &[&'static str]) -> Vec<Fault> {
    draws.iter().filter_map(|d| d.fault(frame, kinds)).collect()
}

/// Fault schedules for `base`: up to `gen.max_faults` faults of `gen.fault_kinds`, each valid
/// for its world and workload.
pub fn fault_schedules(base: &Scenario, gen: &Gen) -> impl Strategy<Value = Vec<Fault>> {
    let kinds = gen.fault_kinds.clone();
    let base = base.clone();
    prop::collection::vec(fault_draws(kinds.len()), 0..=gen.max_faults)
        .prop_map(move |draws| faults_on(&Frame::of(&base), &draws, &kinds))
}

/// `base` with its `[expect]` and faults replaced by a generated fault schedule and a
/// generated seed; its world, network, group and workload are kept.
pub fn with_faults(base: &Scenario, gen: &Gen) -> impl Strategy<Value = Scenario> {
    let mut base = base.clone();
    base.expect = None;
    base.faults.clear();
    (fault_schedules(&base, gen), any::<u64>()).prop_map(move |(faults, seed)| {
        let mut s = base.clone();
        s.seed = seed;
        s.faults = faults;
        s
    })
}

/// Whole random scenarios: a world, a network, a group, a workload, a fault schedule and a
/// seed. The timeout is raised when needed so that a fault-free iteration fits in a quarter of
/// it: a watchdog that fires on a healthy run is a misconfiguration, not a finding.
pub fn scenarios(gen: &Gen) -> impl Strategy<Value = Scenario> {
    let kinds = gen.fault_kinds.clone();
    (
        worlds(gen),
        networks(),
        (
            gen.timeout_ms.clone(),
            prop::option::weighted(0.2, 0u8..5),
            prop::bool::weighted(0.2),
        ),
        workload_draws(gen),
        prop::collection::vec(fault_draws(kinds.len()), 0..=gen.max_faults),
        any::<u64>(),
    )
        .prop_map(
            move |(world, mut network, (timeout_ms, allreduce, shuffle), w, draws, seed)| {
                if world.ranks_per_host <= 1 {
                    network.intra_host = None;
                }
                let p = world.size;
                let allreduce_algs = supported_algorithms(OpKind::Allreduce);
                let mut s = Scenario {
                    name: "generated".into(),
                    description: None,
                    seed,
                    time_limit: None,
                    world,
                    network,
                    engine: EngineConfig {
                        tie_break: if shuffle {
                            TieBreak::Shuffle
                        } else {
                            TieBreak::Insertion
                        },
                    },
                    group: GroupConfig {
                        timeout: Duration(timeout_ms * 1_000_000),
                        algorithm: allreduce
                            .map(|k| allreduce_algs[k as usize % allreduce_algs.len()]),
                        ..GroupConfig::default()
                    },
                    workload: w.workload(p),
                    faults: Vec::new(),
                    expect: None,
                };
                let floor = 4 * bound::iteration_cost(&s);
                s.group.timeout.0 = s.group.timeout.0.max(floor);
                s.faults = faults_on(&Frame::of(&s), &draws, &kinds);
                s
            },
        )
}

/// Cases on random scenarios (the case's seed is the scenario's).
pub fn cases(gen: &Gen) -> impl Strategy<Value = Case> {
    scenarios(gen).prop_map(Case::new)
}

/// Cases laid on `base`: its world, network and workload under generated faults and seeds.
pub fn cases_on(base: &Scenario, gen: &Gen) -> impl Strategy<Value = Case> {
    with_faults(base, gen).prop_map(Case::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SUPPORT;
    use crate::scenario::{unsupported, validate};
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};

    fn runner() -> TestRunner {
        TestRunner::new(Config {
            cases: 512,
            failure_persistence: None,
            ..Config::default()
        })
    }

    #[test]
    fn every_generated_scenario_is_valid_and_supported() {
        runner()
            .run(&scenarios(&Gen::default()), |s| {
                validate(&s).map_err(|(k, m)| TestCaseError::fail(format!("{k}: {m}\n{s:?}")))?;
                unsupported(&s, &SUPPORT)
                    .map_err(|(k, m)| TestCaseError::fail(format!("{k}: {m}\n{s:?}")))?;
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn faults_laid_on_a_scenario_keep_it_and_stay_valid() {
        let base = crate::scenario::parse(
            "name = \"base\"\nseed = 3\n[world]\nsize = 5\n[group]\ntimeout = \"2s\"\n\
             [workload]\niterations = 2\n[[workload.ops]]\nop = \"broadcast\"\nbytes = \"1MiB\"\n\
             root = 4\n[[faults]]\nkind = \"preempt\"\nrank = 1\nat = \"1ms\"\n\
             [expect]\noutcome = \"stalled\"\n",
            "base.toml",
        )
        .unwrap();
        runner()
            .run(&with_faults(&base, &Gen::default()), |s| {
                validate(&s).map_err(|(k, m)| TestCaseError::fail(format!("{k}: {m}")))?;
                prop_assert_eq!(&s.world, &base.world);
                prop_assert_eq!(&s.workload, &base.workload);
                prop_assert_eq!(&s.network, &base.network);
                prop_assert!(s.expect.is_none());
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn every_fault_kind_and_op_is_generated() {
        let mut runner = runner();
        let strategy = scenarios(&Gen::default());
        let mut kinds = std::collections::BTreeSet::new();
        let mut ops = std::collections::BTreeSet::new();
        for _ in 0..512 {
            let s = strategy.new_tree(&mut runner).unwrap().current();
            kinds.extend(s.faults.iter().map(|f| f.kind()));
            ops.extend(s.workload.ops.iter().map(|o| o.op));
        }
        assert_eq!(kinds.len(), Fault::KINDS.len(), "{kinds:?}");
        assert_eq!(ops.len(), OpKind::ALL.len(), "{ops:?}");
    }
}
