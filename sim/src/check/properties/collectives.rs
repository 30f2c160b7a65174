//! **agreement** and **validity**: what the ranks that complete a collective hold.
//!
//! Calls from the first mismatched or skipped call on are not checked: the collective contract
//! requires every member to issue the same call, and a skipped call shifts the skipping rank's
//! later calls onto its peers' sequence numbers, so from there on ranks legitimately disagree.

use super::{Property, Violation};
use crate::check::{Case, Run};
use crate::diagnose::{OpView, Slot};
use crate::proto::{Generation, GroupId, SeqNo};
use crate::scenario::Fault;
use crate::trace::Event;
use crate::units::fmt_ms;
use std::collections::BTreeMap;

/// The first call of the workload, (iteration, op index), at which some rank issues a call
/// the workload does not say (a mismatched or skipped call), if any. By workload position,
/// not sequence number: a rebuilt generation numbers its calls from 1 again.
fn first_buggy_call(case: &Case) -> (u32, u32) {
    case.scenario
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Mismatch {
                iteration,
                op_index,
                ..
            }
            | Fault::Skip {
                iteration,
                op_index,
                ..
            } => Some((*iteration, op_index.unwrap_or(0))),
            _ => None,
        })
        .min()
        .unwrap_or((u32::MAX, u32::MAX))
}

fn checked_ops<'a>(case: &Case, run: &'a Run) -> impl Iterator<Item = &'a OpView> {
    let mut limit = first_buggy_call(case);
    let w = &case.scenario.workload;
    if !w.programs.is_empty() || w.pipeline.is_some() {
        // an op's place is that of its first caller's program, which another rank's bug
        // does not index: check only the iterations before the first bug
        limit.1 = 0;
    }
    run.fold
        .ops
        .values()
        .filter(move |o| (o.iteration, o.index) < limit)
}

fn describe(o: &OpView) -> String {
    format!(
        "{} #{} ({}, iteration {} op {}, generation {})",
        o.op, o.seq.0, o.algorithm, o.iteration, o.index, o.generation.0
    )
}

fn slot(o: &OpView) -> Slot {
    Slot {
        group: o.group,
        generation: o.generation,
        seq: o.seq,
        pair: o.pair,
    }
}

/// Every rank that completed a collective holds the same result bits (where the op gives
/// every member the same result: not reduce_scatter, all_to_all or scatter). Ranks that
/// called the slot with different ops or parameters (an application bug, which the diagnosis
/// names) ran different calls, whose results are not compared.
pub(super) fn agreement(case: &Case, run: &Run) -> Result<(), Violation> {
    for o in checked_ops(case, run) {
        if o.op.same_result_everywhere() && o.variants.len() <= 1 && o.results.len() > 1 {
            return Err(Violation::new(
                Property::Agreement,
                format!(
                    "{}: the {} ranks that completed it hold {} different results ({})",
                    describe(o),
                    o.ranks_completed,
                    o.results.len(),
                    o.results.join(", ")
                ),
            )
            .op(slot(o)));
        }
    }
    Ok(())
}

/// Every completed result equals the reference computed from the inputs of the call's
/// members; and once the group was rebuilt, every call of a later generation has exactly that
/// generation's members.
pub(super) fn validity(case: &Case, run: &Run) -> Result<(), Violation> {
    for o in checked_ops(case, run) {
        if !o.correct {
            return Err(Violation::new(
                Property::Validity,
                format!(
                    "{}: a rank completed it with a result that differs from the reduction of \
                     the members' inputs",
                    describe(o)
                ),
            )
            .op(slot(o)));
        }
    }
    if run.fold.membership.generations.is_empty() {
        return Ok(());
    }
    rebuilt_calls_have_their_members(case, run)
}

/// Every call of a generation after the first is made with that generation's size, and every
/// completion of one is checked correct (the engine's `correct` flag).
fn rebuilt_calls_have_their_members(case: &Case, run: &Run) -> Result<(), Violation> {
    let limit = first_buggy_call(case);
    let mut size_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut site_of: BTreeMap<(GroupId, Generation, SeqNo), (u32, u32)> = BTreeMap::new();
    for (t, ev) in run.events() {
        match ev {
            Event::GenerationFormed {
                generation,
                members,
                ..
            } => {
                size_of.entry(generation.0).or_insert(members.len());
            }
            Event::Call {
                rank,
                group,
                generation,
                seq,
                op,
                members,
                iteration,
                index,
                ..
            } if generation.0 > 0 => {
                site_of.insert((*group, *generation, *seq), (*iteration, *index));
                if (*iteration, *index) >= limit {
                    continue;
                }
                if let Some(&n) = size_of.get(&generation.0) {
                    if n != *members as usize {
                        return Err(Violation::new(
                            Property::Validity,
                            format!(
                                "at {} rank {rank} calls {op} #{seq} of generation {} on \
                                 {members} ranks, the generation has {n}",
                                fmt_ms(*t),
                                generation.0
                            ),
                        )
                        .ranks([*rank])
                        .op(Slot::collective(*group, *generation, *seq)));
                    }
                }
            }
            Event::Complete {
                rank,
                group,
                generation,
                seq,
                correct,
                ..
            } if generation.0 > 0 => {
                let key = (*group, *generation, *seq);
                if site_of.get(&key).is_some_and(|s| *s >= limit) {
                    continue;
                }
                if *correct != Some(true) {
                    return Err(Violation::new(
                        Property::Validity,
                        format!(
                            "at {} rank {rank} completes #{seq} of generation {} with a result \
                             that is not the reduction of its members' inputs",
                            fmt_ms(*t),
                            generation.0
                        ),
                    )
                    .ranks([*rank])
                    .op(Slot::collective(key.0, key.1, key.2)));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
