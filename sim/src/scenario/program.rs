//! What each rank runs in one iteration: its program, resolved from `[[workload.ops]]`,
//! `[workload.pipeline]` and `[[workload.programs]]`.
//!
//! A rank listed in a `[[workload.programs]]` entry runs that entry's ops; every other rank runs
//! the pipeline's steps for its stage (when there is a pipeline and the rank is in one of its
//! sub-groups), then `[[workload.ops]]`. An op's `compute` becomes a compute step before its
//! call. Which calls a rank really issues (not those of a group it is not in, not a send to a
//! `"next"` past the last stage) is decided when the program runs, from the group layout.
//!
//! Pipelines: each sub-group of the pipeline's group is one pipeline, its members the stages in
//! list order; stage s of S runs microbatches 0..m, a forward being (recv from s-1, compute
//! `forward`, send to s+1) and a backward (recv from s+1, compute `backward`, send to s-1), with
//! the first and last stages skipping the transfers they have no peer for:
//! - `gpipe`: every forward, then every backward;
//! - `1f1b`: min(S-1-s, m) forwards to fill the pipeline, then one forward and one backward at a
//!   time, then the backwards left (the schedule of PipeDream-flush and Megatron-LM).

use super::{OpKind, OpSpec, Peer, PeerStep, PipeSchedule, Pipeline, Scenario};
use crate::units::Duration;
use crate::units::Nanos;

/// Where a call of a program was declared (what `op_index` and the reports refer to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `[[workload.ops]]` entry i.
    Shared(u32),
    /// `[[workload.programs]]` entry p, op i.
    Program(u32, u32),
    /// Call i of the rank's pipeline stage in one iteration.
    Pipeline(u32),
}

/// One step of a rank's iteration.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Compute(Nanos),
    Call(OpSpec, Source),
}

/// The `[[workload.programs]]` entry that lists `rank`, if any.
pub fn program_of(s: &Scenario, rank: u32) -> Option<usize> {
    s.workload
        .programs
        .iter()
        .position(|p| p.ranks.contains(&rank))
}

/// The steps `rank` runs in every iteration (after the iteration's `compute`).
pub fn steps(s: &Scenario, rank: u32) -> Vec<Step> {
    let stage = match (&s.workload.pipeline, program_of(s, rank)) {
        (Some(pipe), None) => stage_of(s, pipe, rank),
        _ => None,
    };
    steps_of(s, program_of(s, rank), stage)
}

/// The steps of `[[workload.programs]]` entry `program`, or else of pipeline stage `stage`
/// (stage, stages) followed by `[[workload.ops]]`.
pub fn steps_of(s: &Scenario, program: Option<usize>, stage: Option<(u32, u32)>) -> Vec<Step> {
    let mut out = Vec::new();
    let push = |spec: &OpSpec, source: Source, out: &mut Vec<Step>| {
        if let Some(Duration(ns)) = spec.compute.filter(|d| d.0 > 0) {
            out.push(Step::Compute(ns));
        }
        out.push(Step::Call(spec.clone(), source));
    };
    if let Some(p) = program {
        for (i, op) in s.workload.programs[p].ops.iter().enumerate() {
            push(op, Source::Program(p as u32, i as u32), &mut out);
        }
        return out;
    }
    if let (Some(pipe), Some((stage, stages))) = (&s.workload.pipeline, stage) {
        out.extend(pipeline_steps(pipe, stage, stages));
    }
    for (i, op) in s.workload.ops.iter().enumerate() {
        push(op, Source::Shared(i as u32), &mut out);
    }
    out
}

/// The calls of `rank`'s iteration, in order, with where each was declared.
pub fn calls(s: &Scenario, rank: u32) -> Vec<(OpSpec, Source)> {
    steps(s, rank)
        .into_iter()
        .filter_map(|st| match st {
            Step::Call(op, src) => Some((op, src)),
            Step::Compute(_) => None,
        })
        .collect()
}

/// The number of calls in `rank`'s iteration and the call at `index`, if there is one: what
/// [`calls`] holds, found without laying the iteration out (a pipeline of millions of
/// microbatches is refused for its memory after validation, not built during it).
pub fn call_at(s: &Scenario, rank: u32, index: usize) -> (usize, Option<(OpSpec, Source)>) {
    let program = program_of(s, rank);
    if let Some(p) = program {
        let ops = &s.workload.programs[p].ops;
        let call = ops
            .get(index)
            .map(|op| (op.clone(), Source::Program(p as u32, index as u32)));
        return (ops.len(), call);
    }
    let (piped, call) = match &s.workload.pipeline {
        Some(pipe) => match stage_of(s, pipe, rank) {
            Some((stage, stages)) => pipeline_call_at(pipe, stage, stages, index),
            None => (0, None),
        },
        None => (0, None),
    };
    let shared = &s.workload.ops;
    let call = call.or_else(|| {
        let i = index.checked_sub(piped)?;
        shared
            .get(i)
            .map(|op| (op.clone(), Source::Shared(i as u32)))
    });
    (piped.saturating_add(shared.len()), call)
}

/// The number of calls of stage `stage` of `stages` in one iteration of `pipe`, and the call
/// at `index`: [`pipeline_steps`] computed for one call. A forward and a backward each make
/// one call per neighbour the stage has; the schedule orders them.
fn pipeline_call_at(
    pipe: &Pipeline,
    stage: u32,
    stages: u32,
    index: usize,
) -> (usize, Option<(OpSpec, Source)>) {
    let (first, last) = (stage == 0, stage + 1 >= stages);
    let per_pass = usize::from(!first) + usize::from(!last);
    let m = pipe.microbatches as usize;
    let count = m.saturating_mul(2).saturating_mul(per_pass);
    if index >= count {
        return (count, None);
    }
    let (pass, within) = (index / per_pass, index % per_pass);
    let forward = match pipe.schedule {
        PipeSchedule::Gpipe => pass < m,
        PipeSchedule::OneFOneB => {
            let warmup = (stages - 1 - stage).min(pipe.microbatches) as usize;
            pass < warmup || (pass < 2 * m - warmup && (pass - warmup).is_multiple_of(2))
        }
    };
    // a forward receives from the previous stage and sends to the next, a backward the reverse
    let mut calls = Vec::with_capacity(2);
    if forward {
        if !first {
            calls.push((OpKind::Recv, PeerStep::Prev));
        }
        if !last {
            calls.push((OpKind::Send, PeerStep::Next));
        }
    } else {
        if !last {
            calls.push((OpKind::Recv, PeerStep::Next));
        }
        if !first {
            calls.push((OpKind::Send, PeerStep::Prev));
        }
    }
    let (op, peer) = calls[within];
    let spec = OpSpec {
        bytes: pipe.bytes,
        group: pipe.group.clone(),
        peer: Some(Peer::Step(peer)),
        ..OpSpec::of(op)
    };
    (count, Some((spec, Source::Pipeline(index as u32))))
}

/// `rank`'s stage in its pipeline and the number of stages, if it is in one.
pub fn stage_of(s: &Scenario, pipe: &Pipeline, rank: u32) -> Option<(u32, u32)> {
    match &pipe.group {
        None => Some((rank, s.world.size)),
        Some(name) => super::groups::subgroup_of(s, name, rank).map(|members| {
            let at = members.iter().position(|&r| r == rank).unwrap_or(0);
            (at as u32, members.len() as u32)
        }),
    }
}

/// The steps of stage `stage` of `stages` in one iteration of `pipe`.
pub fn pipeline_steps(pipe: &Pipeline, stage: u32, stages: u32) -> Vec<Step> {
    let (first, last) = (stage == 0, stage + 1 >= stages);
    let mut calls = 0u32;
    let mut out = Vec::new();
    let mut p2p = |op: OpKind, peer: PeerStep, out: &mut Vec<Step>| {
        let spec = OpSpec {
            bytes: pipe.bytes,
            group: pipe.group.clone(),
            peer: Some(Peer::Step(peer)),
            ..OpSpec::of(op)
        };
        out.push(Step::Call(spec, Source::Pipeline(calls)));
        calls += 1;
    };
    let forward = |out: &mut Vec<Step>, p2p: &mut dyn FnMut(OpKind, PeerStep, &mut Vec<Step>)| {
        if !first {
            p2p(OpKind::Recv, PeerStep::Prev, out);
        }
        out.push(Step::Compute(pipe.forward.0));
        if !last {
            p2p(OpKind::Send, PeerStep::Next, out);
        }
    };
    let backward = |out: &mut Vec<Step>, p2p: &mut dyn FnMut(OpKind, PeerStep, &mut Vec<Step>)| {
        if !last {
            p2p(OpKind::Recv, PeerStep::Next, out);
        }
        out.push(Step::Compute(pipe.backward.0));
        if !first {
            p2p(OpKind::Send, PeerStep::Prev, out);
        }
    };
    let m = pipe.microbatches;
    match pipe.schedule {
        PipeSchedule::Gpipe => {
            (0..m).for_each(|_| forward(&mut out, &mut p2p));
            (0..m).for_each(|_| backward(&mut out, &mut p2p));
        }
        PipeSchedule::OneFOneB => {
            let warmup = (stages - 1 - stage).min(m);
            (0..warmup).for_each(|_| forward(&mut out, &mut p2p));
            for _ in warmup..m {
                forward(&mut out, &mut p2p);
                backward(&mut out, &mut p2p);
            }
            (0..warmup).for_each(|_| backward(&mut out, &mut p2p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Size;

    fn pipe(schedule: PipeSchedule, m: u32) -> Pipeline {
        Pipeline {
            group: None,
            microbatches: m,
            schedule,
            forward: Duration(2),
            backward: Duration(4),
            bytes: Size(8),
        }
    }

    /// The stage's steps as a string: F/B computes, s+/s- sends to next/prev, r+/r- receives.
    fn shape(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|st| match st {
                Step::Compute(2) => "F".to_string(),
                Step::Compute(_) => "B".to_string(),
                Step::Call(op, _) => {
                    let dir = match op.peer {
                        Some(Peer::Step(PeerStep::Next)) => "+",
                        _ => "-",
                    };
                    let verb = if op.op == OpKind::Send { "s" } else { "r" };
                    format!("{verb}{dir}")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn one_call_is_the_call_of_the_whole_stage() {
        for schedule in [PipeSchedule::Gpipe, PipeSchedule::OneFOneB] {
            for stages in 1..=5u32 {
                for m in 0..=6u32 {
                    let p = pipe(schedule, m);
                    for stage in 0..stages {
                        let all: Vec<(OpSpec, Source)> = pipeline_steps(&p, stage, stages)
                            .into_iter()
                            .filter_map(|st| match st {
                                Step::Call(op, src) => Some((op, src)),
                                Step::Compute(_) => None,
                            })
                            .collect();
                        for index in 0..all.len() + 3 {
                            let (count, call) = pipeline_call_at(&p, stage, stages, index);
                            assert_eq!(count, all.len(), "{schedule:?} {stage}/{stages} m={m}");
                            assert_eq!(
                                call.as_ref(),
                                all.get(index),
                                "{schedule:?} {stage}/{stages} m={m} call {index}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gpipe_runs_every_forward_then_every_backward() {
        let p = pipe(PipeSchedule::Gpipe, 2);
        assert_eq!(shape(&pipeline_steps(&p, 0, 3)), "F s+ F s+ r+ B r+ B");
        assert_eq!(
            shape(&pipeline_steps(&p, 1, 3)),
            "r- F s+ r- F s+ r+ B s- r+ B s-"
        );
        assert_eq!(shape(&pipeline_steps(&p, 2, 3)), "r- F r- F B s- B s-");
    }

    #[test]
    fn one_f_one_b_fills_then_alternates_then_drains() {
        let p = pipe(PipeSchedule::OneFOneB, 4);
        // stage 0 of 4: three forwards to fill, then 1F1B once, then three backwards
        assert_eq!(
            shape(&pipeline_steps(&p, 0, 4)),
            "F s+ F s+ F s+ F s+ r+ B r+ B r+ B r+ B"
        );
        // the last stage alternates from the start
        assert_eq!(
            shape(&pipeline_steps(&p, 3, 4)),
            "r- F B s- r- F B s- r- F B s- r- F B s-"
        );
        // fewer microbatches than stages: the warm-up is cut at m
        let short = pipe(PipeSchedule::OneFOneB, 1);
        assert_eq!(shape(&pipeline_steps(&short, 0, 4)), "F s+ r+ B");
    }

    #[test]
    fn every_send_meets_a_recv_in_the_same_order() {
        for schedule in [PipeSchedule::Gpipe, PipeSchedule::OneFOneB] {
            for stages in 2..=6u32 {
                for m in 1..=7u32 {
                    let p = pipe(schedule, m);
                    let per: Vec<Vec<Step>> =
                        (0..stages).map(|s| pipeline_steps(&p, s, stages)).collect();
                    for s in 0..stages as usize - 1 {
                        // what s sends to s+1 forward is what s+1 receives from s, in order
                        let sent = |st: &[Step], op: OpKind, dir: PeerStep| {
                            st.iter()
                                .filter(|x| {
                                    matches!(x, Step::Call(o, _) if o.op == op
                                        && o.peer == Some(Peer::Step(dir)))
                                })
                                .count()
                        };
                        assert_eq!(
                            sent(&per[s], OpKind::Send, PeerStep::Next),
                            sent(&per[s + 1], OpKind::Recv, PeerStep::Prev)
                        );
                        assert_eq!(
                            sent(&per[s + 1], OpKind::Send, PeerStep::Prev),
                            sent(&per[s], OpKind::Recv, PeerStep::Next)
                        );
                        assert_eq!(sent(&per[s], OpKind::Send, PeerStep::Next), m as usize);
                    }
                }
            }
        }
    }
}
