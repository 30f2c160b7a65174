//! The structure around a workload's shared ops: a named group that splits the world into
//! sub-groups, ranks that run a program of their own, and a pipeline of send, recv and compute.
//!
//! Every shape drawn here is healthy: each rank's program issues what its peers expect, in an
//! order that cannot deadlock (sends and recvs go one way along a chain; a program only adds
//! compute and a collective of the ranks that run it), so a stall is the faults' doing.

use crate::scenario::{
    GroupRanks, NamedGroup, OpKind, OpSpec, PipeSchedule, Pipeline, Program, Workload,
};
use crate::units::{Duration, Size};
use proptest::prelude::*;

/// The named group ops may run on.
pub(super) const SPLIT: &str = "g";
/// The group of the ranks that run their own program.
const OWN: &str = "own";

/// Draws of a workload's structure, reduced into range for a world by [`ShapeDraw::apply`].
#[derive(Clone, Debug)]
pub(super) struct ShapeDraw {
    /// Up to this many sub-groups of group `g` (consecutive ranks after a rotation); 0: no
    /// named group.
    split: u32,
    rotate: u32,
    /// Ranks (a bit mask, reduced into the world) that run the shared ops with this much more
    /// compute before the first, then an allreduce among themselves.
    program: Option<(u32, u64)>,
    pipeline: Option<PipeDraw>,
}

#[derive(Clone, Debug)]
struct PipeDraw {
    microbatches: u32,
    gpipe: bool,
    forward_us: u64,
    backward_us: u64,
    bytes: u64,
    /// Along the sub-groups of `g` (when each has two stages or more) rather than the world.
    on_split: bool,
}

pub(super) fn shape_draws() -> impl Strategy<Value = ShapeDraw> {
    let pipe = (
        1u32..=4,
        any::<bool>(),
        1u64..=200,
        1u64..=200,
        0u64..=1 << 20,
        any::<bool>(),
    )
        .prop_map(
            |(microbatches, gpipe, forward_us, backward_us, bytes, on_split)| PipeDraw {
                microbatches,
                gpipe,
                forward_us,
                backward_us,
                bytes,
                on_split,
            },
        );
    (
        prop_oneof![2 => Just(0u32), 1 => 1u32..=4],
        any::<u32>(),
        prop::option::weighted(0.25, (1u32.., 0u64..=2_000)),
        prop::option::weighted(0.25, pipe),
    )
        .prop_map(|(split, rotate, program, pipeline)| ShapeDraw {
            split,
            rotate,
            program,
            pipeline,
        })
}

impl ShapeDraw {
    /// The sub-groups of `g` on `p` ranks, if the draw has it.
    pub(super) fn subgroups(&self, p: u32) -> Option<Vec<Vec<u32>>> {
        if self.split == 0 {
            return None;
        }
        let k = self.split.min(p).max(1);
        let order: Vec<u32> = (0..p).map(|i| (i + self.rotate % p) % p).collect();
        let base = p / k;
        let extra = p % k;
        let mut out = Vec::new();
        let mut at = 0usize;
        for i in 0..k {
            let n = (base + u32::from(i < extra)) as usize;
            out.push(order[at..at + n].to_vec());
            at += n;
        }
        Some(out)
    }

    /// Lays the shape on workload `w` of a world of `p` ranks: its named groups, programs and
    /// pipeline.
    pub(super) fn apply(&self, p: u32, w: &mut Workload, groups: &mut Vec<NamedGroup>) {
        if let Some(subs) = self.subgroups(p) {
            groups.push(NamedGroup {
                name: SPLIT.into(),
                ranks: GroupRanks::Many(subs),
            });
        }
        if let Some(d) = &self.pipeline {
            if p < 2 {
                return;
            }
            let along_split = d.on_split
                && groups
                    .iter()
                    .any(|g| g.name == SPLIT && g.ranks.subgroups().iter().all(|s| s.len() >= 2));
            w.pipeline = Some(Pipeline {
                group: along_split.then(|| SPLIT.to_string()),
                microbatches: d.microbatches,
                schedule: if d.gpipe {
                    PipeSchedule::Gpipe
                } else {
                    PipeSchedule::OneFOneB
                },
                forward: Duration(d.forward_us * 1_000),
                backward: Duration(d.backward_us * 1_000),
                bytes: Size(d.bytes),
            });
            // a program would replace the pipeline's steps on its ranks: none beside one
            return;
        }
        if let Some((mask, extra_us)) = self.program {
            let ranks: Vec<u32> = (0..p).filter(|r| mask >> (r % 32) & 1 == 1).collect();
            if ranks.is_empty() || ranks.len() == p as usize {
                return;
            }
            groups.push(NamedGroup {
                name: OWN.into(),
                ranks: GroupRanks::One(ranks.clone()),
            });
            let mut ops = w.ops.clone();
            if let Some(first) = ops.first_mut() {
                let before = first.compute.map_or(0, |d| d.0);
                first.compute = Some(Duration(before + extra_us * 1_000));
            }
            ops.push(OpSpec {
                bytes: Size(4096),
                group: Some(OWN.into()),
                ..OpSpec::of(OpKind::Allreduce)
            });
            w.programs.push(Program { ranks, ops });
        }
    }
}
