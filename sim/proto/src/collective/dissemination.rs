//! Dissemination barrier (Hensgen, Finkel & Manber): in round k rank r signals r + 2^k and
//! waits for r - 2^k; after ceil(lg p) rounds every rank has heard, transitively, from all.
//! Cost: ceil(lg p) a with zero-byte messages.

use super::{Action, Ctx, Schedule, StepPlan};

pub struct Dissemination {
    ctx: Ctx,
    rounds: u32,
}

impl Dissemination {
    pub fn new(ctx: Ctx) -> Self {
        let rounds = if ctx.p <= 1 {
            0
        } else {
            32 - (ctx.p - 1).leading_zeros()
        };
        Dissemination { ctx, rounds }
    }
}

impl Schedule for Dissemination {
    fn steps(&self) -> u32 {
        self.rounds
    }

    fn nblocks(&self) -> u32 {
        1
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        let d = 1u32 << step;
        plan.send((me + d) % p, &[]);
        plan.recv((me + p - d % p) % p, &[], Action::Copy);
    }
}
