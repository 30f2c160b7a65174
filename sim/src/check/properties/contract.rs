//! **schedule_contract**: every call of a registered algorithm keeps the contract of the
//! schedule executor on every group the workload runs it on: each step's sends and receives
//! agree across the group's ranks ([`plans_agree`]). A schedule that breaks it deadlocks, or
//! takes a chunk into the wrong blocks, on that group size; the violation names the step, the
//! rank and the peer. ringside's own algorithms are held to the contract by their tests, for
//! every group size up to 65, and are not checked again here.

use super::{Property, Violation};
use crate::check::{Case, Run};
use crate::proto::collective::{plans_agree, schedule_with, Ctx, PlanMismatch};
use crate::proto::mutation::Mutations;
use crate::proto::workload::{Along, Step};
use crate::scenario::resolve;
use std::collections::BTreeSet;

pub(super) fn schedule_contract(case: &Case, _run: &Run) -> Result<(), Violation> {
    let cfg = resolve::workload(&case.scenario, case.seed, Mutations::NONE);
    let mut checked = BTreeSet::new();
    let calls = cfg.programs.iter().flat_map(|prog| &prog.steps);
    for call in calls.filter_map(|s| match s {
        Step::Call { call, .. } if call.algorithm.is_custom() => Some(call),
        _ => None,
    }) {
        // the world's size, every size an elastic group may shrink to, or the sub-groups'
        let sizes: Vec<u32> = match call.along {
            Along::World if cfg.elastic.is_some() => (1..=cfg.world_size).collect(),
            Along::World => vec![cfg.world_size],
            Along::Layout(l) => cfg.layouts[l as usize]
                .groups
                .iter()
                .map(|g| g.members.len() as u32)
                .collect(),
        };
        let per_host = match call.along {
            Along::World => cfg.world_per_host,
            Along::Layout(_) => 1,
        };
        for p in sizes {
            if !checked.insert((call.op, call.algorithm, p, call.root)) {
                continue;
            }
            let ctx = |me| Ctx {
                me,
                p,
                root: call.root,
            };
            let Ok(plans) = (0..p)
                .map(|me| schedule_with(call.op, call.algorithm, ctx(me), per_host))
                .collect::<Result<Vec<_>, _>>()
            else {
                continue; // validation refuses an algorithm that does not implement the op
            };
            if let Err(e) = plans_agree(call.op, cfg.elements, &plans) {
                let root = if call.op.rooted() {
                    format!(", root {}", call.root)
                } else {
                    String::new()
                };
                let v = Violation::new(
                    Property::ScheduleContract,
                    format!("{} {} on {p} ranks{root}: {e}", call.op, call.algorithm),
                );
                return Err(match e {
                    PlanMismatch::Shape => v,
                    PlanMismatch::RepeatedPeer { rank, .. }
                    | PlanMismatch::PeerOutOfRange { rank, .. }
                    | PlanMismatch::BlocksOutOfRange { rank, .. }
                    | PlanMismatch::Unmatched { rank, .. }
                    | PlanMismatch::InVain { rank, .. } => v.ranks([rank]),
                });
            }
        }
    }
    Ok(())
}
