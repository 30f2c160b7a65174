//! proptest strategies for every case the properties are checked on.
//!
//! - Here: whole random scenarios — worlds, networks, workloads and fault schedules of every
//!   kind ([`scenarios`], [`cases`]) — or fault schedules laid on a given scenario
//!   ([`with_faults`], [`cases_on`]); what `ringside check` runs.
//! - [`bugs`]: small jobs with application bugs on a minority of ranks among other faults, for
//!   the diagnosis property.
//! - [`membership`]: elastic jobs and registries under fault schedules that heal (or not), for
//!   the membership side of the properties.
//!
//! Every scenario generated here passes [`scenario::validate`](crate::scenario::validate) and
//! [`engine::SUPPORT`](crate::engine::SUPPORT): ranks, iterations and op indices are drawn as
//! free numbers and reduced into range when the scenario is assembled, which also keeps
//! shrinking simple — the world, the workload and each fault shrink independently (fewer
//! ranks, fewer iterations and ops, fewer and shorter faults) and the result stays valid.
//!
//! Fault times are drawn as fractions: `at` of the fault-free run length (so faults land while
//! the workload runs), durations and extra delays of the collective timeout (so some faults
//! heal well within it and others outlast it).

pub mod bugs;
mod faults;
pub mod membership;
mod shape;

pub use faults::fault_schedules;

use super::bound;
use super::Case;
use crate::proto::collective::supported;
use crate::scenario::{
    Algorithm, Dtype, EngineConfig, FaultKind, GroupConfig, Link, NamedGroup, Network, OpKind,
    OpSpec, Peer, PeerStep, ReduceOp, Scenario, TieBreak, Workload, World,
};
use crate::units::{Bandwidth, Duration, Size};
use faults::{fault_draws, faults_on, Frame};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed};
use shape::{shape_draws, ShapeDraw, SPLIT};
use std::ops::RangeInclusive;

/// A CI-sized proptest configuration: 32 cases unless `PROPTEST_CASES` says otherwise; a fixed
/// RNG seed unless `PROPTEST_RNG_SEED` says otherwise, so a CI run is reproducible.
pub fn config() -> Config {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    Config {
        cases: env("PROPTEST_CASES").map_or(32, |c| c as u32),
        rng_seed: RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(0x5eed)),
        failure_persistence: None,
        ..Config::default()
    }
}

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
    /// Fault kinds to draw from.
    pub fault_kinds: Vec<FaultKind>,
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
            fault_kinds: FaultKind::ALL.to_vec(),
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
    /// On the sub-groups of `g`, when the workload has it.
    on_split: bool,
    /// A send: to the previous rank rather than the next, and rendezvous.
    backwards: bool,
    rendezvous: bool,
    /// Compute before the call, in microseconds.
    compute_us: Option<u64>,
}

fn supported_algorithms(op: OpKind) -> Vec<Algorithm> {
    op.algorithms()
        .iter()
        .copied()
        .filter(|a| supported(op, *a))
        .collect()
}

impl OpDraw {
    /// The op's calls on `p` ranks whose group `g` is `split`: one collective, or a send and
    /// the recv that takes it (along a chain of the group's ranks, without wrap-around).
    fn specs(&self, p: u32, split: Option<&[Vec<u32>]>) -> Vec<OpSpec> {
        let group = split.filter(|_| self.on_split).map(|subs| {
            let smallest = subs.iter().map(|g| g.len() as u32).min().unwrap_or(1);
            (SPLIT.to_string(), smallest)
        });
        let members = group.as_ref().map_or(p, |g| g.1);
        let compute = self.compute_us.map(|us| Duration(us * 1_000));
        if self.op.point_to_point() {
            let (to, from) = if self.backwards {
                (PeerStep::Prev, PeerStep::Next)
            } else {
                (PeerStep::Next, PeerStep::Prev)
            };
            let bytes = Size(self.bytes % (self.bytes.min(1 << 20) + 1));
            let message = |op: OpKind, peer: PeerStep| OpSpec {
                bytes,
                group: group.as_ref().map(|g| g.0.clone()),
                peer: Some(Peer::Step(peer)),
                ..OpSpec::of(op)
            };
            return vec![
                OpSpec {
                    rendezvous: self.rendezvous,
                    compute,
                    ..message(OpKind::Send, to)
                },
                message(OpKind::Recv, from),
            ];
        }
        let mut spec = self.spec(members);
        spec.group = group.map(|g| g.0);
        spec.compute = compute;
        vec![spec]
    }

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
            ..OpSpec::of(self.op)
        }
    }
}

/// The ops drawn: every collective, and a send (which comes with its recv).
fn drawn_ops() -> Vec<OpKind> {
    OpKind::ALL
        .iter()
        .copied()
        .filter(|o| *o != OpKind::Recv)
        .collect()
}

fn op_draws(gen: &Gen) -> impl Strategy<Value = OpDraw> {
    (
        prop_oneof![3 => select(OpKind::CLASSIC.to_vec()), 2 => select(drawn_ops())],
        0u8..=5,
        1..=gen.max_bytes.max(1),
        select(vec![
            ReduceOp::Sum,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Prod,
        ]),
        0u32..1024,
        (
            any::<bool>(),
            any::<bool>(),
            prop::bool::weighted(0.3),
            prop::option::weighted(0.2, 0u64..=500),
        ),
    )
        .prop_map(
            |(
                op,
                algorithm,
                bytes,
                reduce,
                root,
                (on_split, backwards, rendezvous, compute_us),
            )| {
                OpDraw {
                    op,
                    algorithm,
                    bytes,
                    reduce,
                    root,
                    on_split,
                    backwards,
                    rendezvous,
                    compute_us,
                }
            },
        )
}

/// Draws of a workload, reduced into range for a world by [`WorkloadDraw::workload`].
#[derive(Clone, Debug)]
struct WorkloadDraw {
    iterations: u32,
    compute_us: u64,
    dtype: Dtype,
    elements: u32,
    ops: Vec<OpDraw>,
    shape: ShapeDraw,
}

impl WorkloadDraw {
    /// The workload on `p` ranks, with the named groups it runs on.
    fn workload(&self, p: u32) -> (Workload, Vec<NamedGroup>) {
        let split = self.shape.subgroups(p);
        let mut w = Workload {
            iterations: self.iterations,
            compute: Duration(self.compute_us * 1_000),
            dtype: self.dtype,
            elements: self.elements,
            ops: self
                .ops
                .iter()
                .flat_map(|o| o.specs(p, split.as_deref()))
                .collect(),
            programs: Vec::new(),
            pipeline: None,
            registry: Vec::new(),
            node: None,
        };
        let mut groups = Vec::new();
        self.shape.apply(p, &mut w, &mut groups);
        (w, groups)
    }
}

fn workload_draws(gen: &Gen) -> impl Strategy<Value = WorkloadDraw> {
    (
        1..=gen.max_iterations.max(1),
        prop_oneof![1 => Just(0u64), 3 => 0..=gen.max_compute_us],
        select(vec![Dtype::F32, Dtype::F64, Dtype::I64]),
        1..=gen.max_elements.max(1),
        prop::collection::vec(op_draws(gen), 1..=gen.max_ops.max(1)),
        shape_draws(),
    )
        .prop_map(
            |(iterations, compute_us, dtype, elements, ops, shape)| WorkloadDraw {
                iterations,
                compute_us,
                dtype,
                elements,
                ops,
                shape,
            },
        )
}

/// Workloads for a world of `p` ranks: 1 to `gen.max_iterations` iterations of up to
/// `gen.max_ops` ops of every kind, each with the default or any supported algorithm, on the
/// world, with the named groups they run on (sub-groups of the world, the ranks of a program
/// of their own), sometimes with a pipeline.
pub fn workloads_for(p: u32, gen: &Gen) -> impl Strategy<Value = (Workload, Vec<NamedGroup>)> {
    workload_draws(gen).prop_map(move |w| w.workload(p))
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
                let (workload, groups) = w.workload(p);
                let mut s = Scenario {
                    name: "generated".into(),
                    description: None,
                    seed,
                    time_limit: None,
                    world,
                    groups,
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
                    workload,
                    torch: None,
                    faults: Vec::new(),
                    expect: None,
                    flight_recorder: None,
                };
                let floor = bound::iteration_cost(&s).saturating_mul(4);
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
        let mut shapes = [false; 5];
        for _ in 0..512 {
            let s = strategy.new_tree(&mut runner).unwrap().current();
            kinds.extend(s.faults.iter().map(|f| f.kind()));
            ops.extend(s.workload.ops.iter().map(|o| o.op));
            shapes[0] |= !s.groups.is_empty();
            shapes[1] |= !s.workload.programs.is_empty();
            shapes[2] |= s.workload.pipeline.is_some();
            shapes[3] |= s.workload.ops.iter().any(|o| o.rendezvous);
            shapes[4] |= s.workload.ops.iter().any(|o| o.compute.is_some());
        }
        assert_eq!(kinds.len(), FaultKind::ALL.len(), "{kinds:?}");
        assert_eq!(ops.len(), OpKind::ALL.len(), "{ops:?}");
        assert_eq!(
            shapes, [true; 5],
            "groups, programs, pipelines, rendezvous, compute"
        );
    }
}
