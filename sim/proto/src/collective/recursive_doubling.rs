//! Recursive doubling: allreduce and allgather (Thakur, Rabenseifner & Gropp 2005, §4).
//!
//! In round k every (virtual) rank v exchanges with v xor 2^k. Allreduce swaps the whole
//! buffer and both partners reduce the same two operands, so they agree bit for bit; cost for p
//! a power of two: lg p a + n lg p b. Allgather swaps the blocks gathered so far (those of the
//! aligned group of 2^k virtual ranks containing v), doubling them; cost lg p a + n(p-1)/p b.
//! Other p fold onto a power of two (see `fold`): allreduce folds the odd rank's whole buffer
//! in (reduced) and copies the result out; allgather folds the odd rank's block in and copies
//! every other block out.

use super::fold::{Fold, Phase, Role};
use super::{Action, Ctx, Schedule, StepPlan};

pub struct RecursiveDoublingAllreduce {
    ctx: Ctx,
    fold: Fold,
}

impl RecursiveDoublingAllreduce {
    pub fn new(ctx: Ctx) -> Self {
        RecursiveDoublingAllreduce {
            ctx,
            fold: Fold::new(ctx.p),
        }
    }
}

impl Schedule for RecursiveDoublingAllreduce {
    fn steps(&self) -> u32 {
        self.fold.steps(self.fold.rounds)
    }

    fn nblocks(&self) -> u32 {
        1
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let me = self.ctx.me;
        let all = &[(0, 1)];
        match (self.fold.phase(step, self.fold.rounds), self.fold.role(me)) {
            (Phase::FoldIn, Role::Odd) => plan.send(me - 1, all),
            (Phase::FoldIn, Role::Even(_)) => plan.recv(me + 1, all, Action::Reduce),
            (Phase::Main(k), Role::Even(v) | Role::Alone(v)) => {
                let peer = self.fold.real(v ^ (1 << k));
                plan.send(peer, all);
                plan.recv(peer, all, Action::Reduce);
            }
            (Phase::FoldOut, Role::Even(_)) => plan.send(me + 1, all),
            (Phase::FoldOut, Role::Odd) => plan.recv(me - 1, all, Action::Copy),
            _ => {}
        }
    }
}

pub struct RecursiveDoublingAllgather {
    ctx: Ctx,
    fold: Fold,
}

impl RecursiveDoublingAllgather {
    pub fn new(ctx: Ctx) -> Self {
        RecursiveDoublingAllgather {
            ctx,
            fold: Fold::new(ctx.p),
        }
    }

    /// The blocks of the aligned group of `d` virtual ranks that contains `v`.
    fn group(&self, v: u32, d: u32) -> (u32, u32) {
        let first = v & !(d - 1);
        (self.fold.real(first), self.fold.real(first + d))
    }
}

impl Schedule for RecursiveDoublingAllgather {
    fn steps(&self) -> u32 {
        self.fold.steps(self.fold.rounds)
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        match (self.fold.phase(step, self.fold.rounds), self.fold.role(me)) {
            (Phase::FoldIn, Role::Odd) => plan.send(me - 1, &[(me, me + 1)]),
            (Phase::FoldIn, Role::Even(_)) => plan.recv(me + 1, &[(me + 1, me + 2)], Action::Copy),
            (Phase::Main(k), Role::Even(v) | Role::Alone(v)) => {
                let d = 1 << k;
                let peer = v ^ d;
                plan.send(self.fold.real(peer), &[self.group(v, d)]);
                plan.recv(self.fold.real(peer), &[self.group(peer, d)], Action::Copy);
            }
            (Phase::FoldOut, Role::Even(_)) => plan.send(me + 1, &[(0, me + 1), (me + 2, p)]),
            (Phase::FoldOut, Role::Odd) => plan.recv(me - 1, &[(0, me), (me + 1, p)], Action::Copy),
            _ => {}
        }
    }
}
