//! Fault schedules: each fault drawn as free numbers, then laid on a scenario's shape.

use super::Gen;
use crate::check::bound;
use crate::proto::data::mix;
use crate::scenario::{program, Dtype, Fault, FaultKind, OpKind, OpSpec, Scenario, Trigger};
use crate::units::{Duration, Nanos, Size};
use proptest::prelude::*;

/// Draws of one fault, reduced into range by [`FaultDraw::fault`].
#[derive(Clone, Debug)]
pub(super) struct FaultDraw {
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

pub(super) fn fault_draws(kinds: usize) -> impl Strategy<Value = FaultDraw> {
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
pub(super) struct Frame {
    p: u32,
    iterations: u32,
    /// The calls of each rank's iteration (its program's, or the pipeline's and the shared
    /// ones it issues).
    ops: Vec<Vec<OpSpec>>,
    dtype: Dtype,
    timeout: Nanos,
    /// Fault-free run length (an upper bound).
    horizon: Nanos,
}

impl Frame {
    pub(super) fn of(s: &Scenario) -> Frame {
        let w = &s.workload;
        let shared = w.programs.is_empty() && w.pipeline.is_none() && s.groups.is_empty();
        let ops = if shared {
            // every rank issues every shared op
            vec![w.ops.clone()]
        } else {
            (0..s.world.size)
                .map(|r| program::calls(s, r).into_iter().map(|c| c.0).collect())
                .collect()
        };
        Frame {
            p: s.world.size,
            iterations: s.workload.iterations,
            ops,
            dtype: s.workload.dtype,
            timeout: s.group.timeout.0,
            horizon: Nanos::from(s.workload.iterations).saturating_mul(bound::iteration_cost(s)),
        }
    }
}

/// A drawn time as a duration a scenario may hold: a fault laid on a scenario whose timeout
/// or run length is near the longest duration accepted stays within it, so that the case
/// written out reads back.
fn capped(ns: u128) -> Duration {
    Duration(ns.min(u128::from(Duration::MAX.0)) as Nanos)
}

fn other_dtype(d: Dtype, k: u32) -> Dtype {
    let all = [Dtype::F32, Dtype::F64, Dtype::I64];
    let i = all.iter().position(|x| *x == d).unwrap_or(0);
    all[(i + 1 + (k % 2) as usize) % 3]
}

impl FaultDraw {
    /// The fault on `f`, or None when it cannot exist there (a link or partition on one rank,
    /// an application bug in a workload without ops).
    fn fault(&self, f: &Frame, kinds: &[FaultKind]) -> Option<Fault> {
        let p = f.p.max(1);
        let kind = *kinds.get(self.kind % kinds.len().max(1))?;
        let rank = self.rank % p;
        let other_rank = (p >= 2).then(|| (rank + 1 + self.other % (p - 1)) % p);
        let at = Trigger::At(capped(
            u128::from(f.horizon) * u128::from(self.at.min(1000)) / 1000,
        ));
        let span = |per_mille: u32| {
            capped((u128::from(f.timeout) * u128::from(per_mille) / 1000).max(1_000))
        };
        let duration = self.duration.map(span);
        let target = match (self.flag, other_rank) {
            (true, Some(b)) => (None, Some([rank, b])),
            _ => (Some(rank), None),
        };
        let iteration = self.iteration % f.iterations.max(1);
        let ops = &f.ops[(rank as usize).min(f.ops.len() - 1)];
        let op_index = (!ops.is_empty()).then(|| self.op_index % ops.len() as u32);
        Some(match kind {
            FaultKind::Preempt => Fault::Preempt {
                rank,
                at,
                restart_after: self.flag.then(|| duration.unwrap_or(span(100))),
            },
            FaultKind::Pause => Fault::Pause {
                rank,
                at,
                duration: duration.unwrap_or(span(100)),
            },
            FaultKind::Partition => Fault::Partition {
                sides: self.sides(p, rank, other_rank?),
                at,
                duration,
                oneway: self.flag,
            },
            FaultKind::Delay => {
                let extra = capped(
                    (u128::from(f.timeout / 4) * u128::from(self.magnitude) / 1000).max(1_000),
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
            FaultKind::Loss => Fault::Loss {
                rank: target.0,
                link: target.1,
                at,
                duration,
                rate: f64::from(self.magnitude % 100 + 1) / 100.0,
            },
            FaultKind::Slow => Fault::Slow {
                rank,
                at,
                duration,
                factor: 1.0 + f64::from(self.magnitude % 90 + 5) / 10.0,
            },
            FaultKind::Mismatch => {
                let index = op_index?;
                self.mismatch(f, rank, iteration, &ops[index as usize], index)
            }
            FaultKind::Skip => Fault::Skip {
                rank,
                iteration,
                op_index: Some(op_index?),
            },
            FaultKind::Hang => Fault::Hang { rank, iteration },
        })
    }
}

impl FaultDraw {
    /// The sides of a partition of `p` ranks with `rank` and `b` apart: 2 or 3 sides; other
    /// ranks are on no side (their links are untouched).
    fn sides(&self, p: u32, rank: u32, b: u32) -> Vec<Vec<u32>> {
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
        sides
    }

    /// `rank` calls op `index` of `iteration` (`target`) with one parameter changed: other
    /// bytes, another op, another root or another dtype.
    fn mismatch(&self, f: &Frame, rank: u32, iteration: u32, target: &OpSpec, index: u32) -> Fault {
        let p = f.p.max(1);
        let mut m = (None, None, None, None);
        match self.magnitude % 4 {
            // a send or recv of other bytes: it has no root, and stays point-to-point
            0 | 1 | 3 if target.op.point_to_point() => {
                m.1 = Some(Size(target.bytes.0 + 1 + u64::from(self.other)))
            }
            0 => m.1 = Some(Size(target.bytes.0 + 1 + u64::from(self.other))),
            1 => {
                let i = OpKind::CLASSIC
                    .iter()
                    .position(|o| *o == target.op)
                    .unwrap_or(0);
                m.0 = Some(OpKind::CLASSIC[(i + 1 + (self.other % 5) as usize) % 6]);
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
}

pub(super) fn faults_on(frame: &Frame, draws: &[FaultDraw], kinds: &[FaultKind]) -> Vec<Fault> {
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
