//! Direct (all-to-all, one-step) algorithms: every rank talks to every peer it needs at once.
//!
//! - broadcast: the root sends the buffer to each other rank in turn; a + (p-1) n b.
//! - reduce: every other rank sends its buffer to the root, which reduces them in order of
//!   arrival; a + (p-1) n b (the root's receive port serializes them).
//! - allgather: rank i sends its block to every other rank; a + n(p-1)/p b.
//! - reduce_scatter: rank i sends block j to rank j, which reduces the p - 1 pieces of its own
//!   block; a + n(p-1)/p b.
//! - allreduce: the reduce-scatter above, then each rank sends its finished block to everyone
//!   (one owner reduces each block, everyone else copies it, so all agree bit for bit);
//!   2a + 2n(p-1)/p b.
//! - all_to_all: rank i sends block j of its send buffer to rank j, which copies it into block
//!   i of its receive buffer; a + n(p-1)/p b (n: one rank's send buffer).
//! - gather: every other rank sends its block to the root; a + n(p-1)/p b (n: the gathered
//!   buffer; the root's receive port serializes the pieces).
//! - scatter: the root sends block i to rank i, in turn; a + n(p-1)/p b.
//!
//! In the all-to-all steps rank i addresses its peers in the order i+1, i+2, ... (mod p), so in
//! the t-th slot every rank receives from exactly one sender and no receive port is contended.

use super::binomial::{abs, rel};
use super::{Action, Ctx, Schedule, StepPlan};
use crate::vocab::OpKind;

pub struct Direct {
    ctx: Ctx,
    op: OpKind,
}

impl Direct {
    /// The direct algorithm of `op`; barriers and point-to-point ops have none.
    pub fn new(op: OpKind, ctx: Ctx) -> Option<Self> {
        (op != OpKind::Barrier && !op.point_to_point()).then_some(Direct { ctx, op })
    }

    /// Block i to rank i, reduce the pieces of my block.
    fn scatter_reduce(&self, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        for t in 1..p {
            let to = (me + t) % p;
            plan.send(to, &[(to, to + 1)]);
        }
        for t in 1..p {
            plan.recv((me + p - t) % p, &[(me, me + 1)], Action::Reduce);
        }
    }

    /// Block i of my send buffer to rank i, into block me of its receive buffer.
    fn all_to_all(&self, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        for t in 1..p {
            let to = (me + t) % p;
            plan.send(to, &[(to, to + 1)]);
        }
        for t in 1..p {
            let from = (me + p - t) % p;
            plan.recv(from, &[(p + from, p + from + 1)], Action::Copy);
        }
    }

    /// My block to everyone, copy everyone's block.
    fn gather(&self, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        for t in 1..p {
            plan.send((me + t) % p, &[(me, me + 1)]);
        }
        for t in 1..p {
            let from = (me + p - t) % p;
            plan.recv(from, &[(from, from + 1)], Action::Copy);
        }
    }
}

impl Schedule for Direct {
    fn steps(&self) -> u32 {
        match (self.ctx.p, self.op) {
            (1, _) => 0,
            (_, OpKind::Allreduce) => 2,
            _ => 1,
        }
    }

    fn nblocks(&self) -> u32 {
        match self.op {
            OpKind::Broadcast | OpKind::Reduce | OpKind::Barrier => 1,
            OpKind::AllToAll => 2 * self.ctx.p,
            _ => self.ctx.p,
        }
    }

    fn modeled(&self, bytes: u64) -> u64 {
        match self.op {
            OpKind::AllToAll => bytes.saturating_mul(2),
            _ => bytes,
        }
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (ctx, p) = (self.ctx, self.ctx.p);
        let all = &[(0, 1)];
        match self.op {
            OpKind::Broadcast if rel(ctx) == 0 => {
                (1..p).for_each(|r| plan.send(abs(ctx, r), all));
            }
            OpKind::Broadcast => plan.recv(ctx.root, all, Action::Copy),
            OpKind::Reduce if rel(ctx) == 0 => {
                (1..p).for_each(|r| plan.recv(abs(ctx, r), all, Action::Reduce));
            }
            OpKind::Reduce => plan.send(ctx.root, all),
            OpKind::Allgather => self.gather(plan),
            OpKind::ReduceScatter => self.scatter_reduce(plan),
            OpKind::Allreduce if step == 0 => self.scatter_reduce(plan),
            OpKind::Allreduce => self.gather(plan),
            OpKind::Barrier | OpKind::Send | OpKind::Recv => {}
            OpKind::AllToAll => self.all_to_all(plan),
            OpKind::Gather if rel(ctx) == 0 => (1..p).for_each(|r| {
                let from = abs(ctx, r);
                plan.recv(from, &[(from, from + 1)], Action::Copy);
            }),
            OpKind::Gather => plan.send(ctx.root, &[(ctx.me, ctx.me + 1)]),
            OpKind::Scatter if rel(ctx) == 0 => (1..p).for_each(|r| {
                let to = abs(ctx, r);
                plan.send(to, &[(to, to + 1)]);
            }),
            OpKind::Scatter => plan.recv(ctx.root, &[(ctx.me, ctx.me + 1)], Action::Copy),
        }
    }
}
