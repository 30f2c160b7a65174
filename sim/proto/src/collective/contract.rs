//! The contract between the schedules of the ranks of one call, checked without running them.
//!
//! The [`Collective`](super::Collective) executor relies on it (see the module doc of
//! [`collective`](super)): every rank has the same number of steps and blocks; within a step
//! a rank sends to and receives from each peer at most once, never itself, and only ranks of
//! the group; it names only blocks of the buffer; and every send of a step is matched by a
//! receive of the same blocks in the same step of its destination, and every receive by a send.
//! A schedule that breaks it deadlocks, or takes a chunk into the wrong blocks, on some p.
//! [`plans_agree`] checks every step of every rank's plan, so a new schedule can be held to the
//! contract for every p before it runs anywhere.

use super::{input_len, Blocks, Ctx, Schedule, StepPlan, Transfer};
use crate::vocab::OpKind;

/// How the plans of one call's ranks break the contract (the first breach found, by step,
/// then by rank).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanMismatch {
    #[error("ranks disagree on the number of steps or blocks")]
    Shape,
    #[error("step {step}: rank {rank} has a repeated peer or itself")]
    RepeatedPeer { step: u32, rank: u32 },
    #[error("step {step}: rank {rank} names a peer >= p")]
    PeerOutOfRange { step: u32, rank: u32 },
    #[error("step {step}: rank {rank} names blocks outside 0..{nblocks}")]
    BlocksOutOfRange { step: u32, rank: u32, nblocks: u32 },
    #[error("step {step}: rank {rank} sends {sent:?} to {peer}, which expects {expected:?}")]
    Unmatched {
        step: u32,
        rank: u32,
        peer: u32,
        /// The block ranges sent.
        sent: Vec<(u32, u32)>,
        /// The block ranges the peer receives from `rank` in that step, if any.
        expected: Option<Vec<(u32, u32)>>,
    },
    #[error("step {step}: rank {rank} waits for {peer} in vain")]
    InVain { step: u32, rank: u32, peer: u32 },
}

/// Checks that the plans of `schedules` — rank `r`'s schedule at index `r`, for one call of
/// `op` on `elements` elements per rank — fit together (see the module doc).
///
/// all_to_all receives into another buffer than it sends from: there a received piece must
/// only hold as many elements as the piece sent (their modeled bytes differ by one when p does
/// not divide n: the sender's count is the one that travels); everywhere else a send and its
/// receive name the very same blocks.
pub fn plans_agree<S: Schedule>(
    op: OpKind,
    elements: u32,
    schedules: &[S],
) -> Result<(), PlanMismatch> {
    let Some(first) = schedules.first() else {
        return Ok(());
    };
    let (steps, nb) = (first.steps(), first.nblocks());
    if schedules
        .iter()
        .any(|x| x.steps() != steps || x.nblocks() != nb)
    {
        return Err(PlanMismatch::Shape);
    }
    let p = schedules.len() as u32;
    let ctx = Ctx { me: 0, p, root: 0 };
    let layout = Blocks::new(nb, input_len(op, ctx, elements) * 2, 0);
    let mut plans = vec![StepPlan::default(); schedules.len()];
    for step in 0..steps {
        for (plan, sched) in plans.iter_mut().zip(schedules) {
            plan.clear();
            sched.plan(step, plan);
        }
        for (me, plan) in plans.iter().enumerate() {
            let me = me as u32;
            well_formed(step, me, plan, p, nb)?;
            for t in &plan.sends {
                matched(step, me, plan, t, &plans[t.peer as usize], op, &layout)?;
            }
            for t in &plan.recvs {
                if !plans[t.peer as usize].sends.iter().any(|x| x.peer == me) {
                    return Err(PlanMismatch::InVain {
                        step,
                        rank: me,
                        peer: t.peer,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Rank `me`'s plan of `step` on its own: each peer at most once each way, never itself, all
/// of them below `p`, and only blocks below `nb`.
fn well_formed(step: u32, me: u32, plan: &StepPlan, p: u32, nb: u32) -> Result<(), PlanMismatch> {
    for list in [&plan.sends, &plan.recvs] {
        let mut peers: Vec<u32> = list.iter().map(|t| t.peer).collect();
        peers.sort_unstable();
        if peers.windows(2).any(|w| w[0] == w[1]) || peers.contains(&me) {
            return Err(PlanMismatch::RepeatedPeer { step, rank: me });
        }
        if peers.iter().any(|&q| q >= p) {
            return Err(PlanMismatch::PeerOutOfRange { step, rank: me });
        }
    }
    if plan.ranges.iter().any(|&(lo, hi)| lo >= hi || hi > nb) {
        return Err(PlanMismatch::BlocksOutOfRange {
            step,
            rank: me,
            nblocks: nb,
        });
    }
    Ok(())
}

/// The send `t` of rank `me` in `step` is matched by a receive of its peer (`theirs`).
fn matched(
    step: u32,
    me: u32,
    plan: &StepPlan,
    t: &Transfer,
    theirs: &StepPlan,
    op: OpKind,
    layout: &Blocks,
) -> Result<(), PlanMismatch> {
    let blocks = |plan: &StepPlan, t: &Transfer| plan.ranges[t.ranges.clone()].to_vec();
    let size = |runs: &[(u32, u32)]| -> usize {
        runs.iter()
            .map(|&(lo, hi)| layout.elems(lo, hi).len())
            .sum()
    };
    let sent = blocks(plan, t);
    let expected = theirs
        .recvs
        .iter()
        .find(|r| r.peer == me)
        .map(|r| blocks(theirs, r));
    let fits = match &expected {
        Some(m) if op == OpKind::AllToAll => size(m) == size(&sent),
        Some(m) => *m == sent,
        None => false,
    };
    if fits {
        return Ok(());
    }
    Err(PlanMismatch::Unmatched {
        step,
        rank: me,
        peer: t.peer,
        sent,
        expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{schedule_with, Action, AnySchedule};
    use crate::vocab::Algorithm;

    fn stock(op: OpKind, algorithm: Algorithm, p: u32) -> Vec<AnySchedule> {
        (0..p)
            .map(|me| schedule_with(op, algorithm, Ctx { me, p, root: 0 }, 1).unwrap())
            .collect()
    }

    #[test]
    fn the_stock_ring_fits_together() {
        for p in 1..=9 {
            let s = stock(OpKind::Allreduce, Algorithm::Ring, p);
            assert_eq!(plans_agree(OpKind::Allreduce, 7, &s), Ok(()), "p = {p}");
        }
    }

    /// A one-step schedule whose plan is `plan(me, p, &mut plan)`.
    struct Planned {
        me: u32,
        p: u32,
        nblocks: u32,
        plan: fn(u32, u32, &mut StepPlan),
    }

    impl Schedule for Planned {
        fn steps(&self) -> u32 {
            1
        }
        fn nblocks(&self) -> u32 {
            self.nblocks
        }
        fn plan(&self, _: u32, plan: &mut StepPlan) {
            (self.plan)(self.me, self.p, plan)
        }
    }

    fn check(p: u32, plan: fn(u32, u32, &mut StepPlan)) -> Result<(), PlanMismatch> {
        let s: Vec<Planned> = (0..p)
            .map(|me| Planned {
                me,
                p,
                nblocks: p,
                plan,
            })
            .collect();
        plans_agree(OpKind::Allreduce, 4, &s)
    }

    #[test]
    fn every_breach_is_named_with_its_step_and_rank() {
        // a ring step: send block me to the right, receive block me - 1 from the left
        let ring = |me: u32, p: u32, plan: &mut StepPlan| {
            plan.send((me + 1) % p, &[(me, me + 1)]);
            let left = (me + p - 1) % p;
            plan.recv(left, &[(left, left + 1)], Action::Reduce);
        };
        assert_eq!(check(4, ring), Ok(()));
        let to_itself = |me: u32, _: u32, plan: &mut StepPlan| plan.send(me, &[(0, 1)]);
        assert_eq!(
            check(3, to_itself),
            Err(PlanMismatch::RepeatedPeer { step: 0, rank: 0 })
        );
        let past_p = |_: u32, p: u32, plan: &mut StepPlan| plan.send(p, &[(0, 1)]);
        assert_eq!(
            check(3, past_p),
            Err(PlanMismatch::PeerOutOfRange { step: 0, rank: 0 })
        );
        let past_blocks = |me: u32, p: u32, plan: &mut StepPlan| {
            plan.send((me + 1) % p, &[(0, p + 1)]);
        };
        assert_eq!(
            check(3, past_blocks),
            Err(PlanMismatch::BlocksOutOfRange {
                step: 0,
                rank: 0,
                nblocks: 3
            })
        );
        // the receiver expects the sender's own block; it sends the receiver's
        let wrong_blocks = |me: u32, p: u32, plan: &mut StepPlan| {
            let right = (me + 1) % p;
            plan.send(right, &[(right, right + 1)]);
            let left = (me + p - 1) % p;
            plan.recv(left, &[(left, left + 1)], Action::Copy);
        };
        let e = check(3, wrong_blocks).unwrap_err();
        assert_eq!(
            e.to_string(),
            "step 0: rank 0 sends [(1, 2)] to 1, which expects Some([(0, 1)])"
        );
        let waits_in_vain = |me: u32, p: u32, plan: &mut StepPlan| {
            plan.recv((me + 1) % p, &[(0, 1)], Action::Copy);
        };
        assert_eq!(
            check(2, waits_in_vain),
            Err(PlanMismatch::InVain {
                step: 0,
                rank: 0,
                peer: 1
            })
        );
    }
}
