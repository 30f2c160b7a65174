//! Tree allreduce and tree barrier: up a binomial tree to rank 0, then back down it.
//!
//! Allreduce: a binomial reduce to rank 0 (steps 0..L, see `binomial`), then a binomial
//! broadcast of the result from rank 0 (steps L..2L); only rank 0 reduces the full result and
//! everyone else copies it, so all ranks agree bit for bit. Cost: 2 ceil(lg p)(a + n b).
//! Barrier: the same two phases with zero-byte messages: rank 0 learns that everyone arrived,
//! then releases everyone. Cost: 2 ceil(lg p) a. (Both are upper bounds when p is not a power
//! of two, as for the binomial trees.)

use super::binomial::{down, up};
use super::fold::ceil_log2;
use super::{Action, Ctx, Schedule, StepPlan};

pub struct Tree {
    ctx: Ctx,
    levels: u32,
    /// Whether the messages carry the buffer (allreduce) or nothing (barrier).
    data: bool,
}

impl Tree {
    pub fn allreduce(ctx: Ctx) -> Self {
        Tree {
            ctx,
            levels: ceil_log2(ctx.p),
            data: true,
        }
    }

    pub fn barrier(ctx: Ctx) -> Self {
        Tree {
            ctx,
            levels: ceil_log2(ctx.p),
            data: false,
        }
    }
}

impl Schedule for Tree {
    fn steps(&self) -> u32 {
        2 * self.levels
    }

    fn nblocks(&self) -> u32 {
        1
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        let blocks: &[(u32, u32)] = if self.data { &[(0, 1)] } else { &[] };
        let (send, recv, action) = if step < self.levels {
            let (send, recv) = up(me, p, step);
            (send, recv, Action::Reduce)
        } else {
            let (send, recv) = down(me, p, self.levels, step - self.levels);
            (send, recv, Action::Copy)
        };
        if let Some(to) = send {
            plan.send(to, blocks);
        }
        if let Some(from) = recv {
            plan.recv(from, blocks, action);
        }
    }
}
