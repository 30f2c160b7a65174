//! Ring allreduce (Patarasuk & Yuan; the bandwidth-optimal algorithm of NCCL and MPICH).
//!
//! The buffer is cut into p blocks. In p-1 reduce-scatter steps, rank r sends block (r-s) mod p
//! to its right neighbour and reduces block (r-s-1) mod p arriving from its left; afterwards rank
//! r holds the full reduction of block (r+1) mod p. In p-1 allgather steps the finished blocks
//! travel once more around the ring, copied. Cost: 2(p-1)a + 2(p-1)/p n b (+ (p-1)/p n g).

use super::{Action, Ctx, Schedule, StepPlan};

pub struct RingAllreduce {
    ctx: Ctx,
}

impl RingAllreduce {
    pub fn new(ctx: Ctx) -> Self {
        RingAllreduce { ctx }
    }
}

impl Schedule for RingAllreduce {
    fn steps(&self) -> u32 {
        2 * (self.ctx.p - 1)
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        let right = (me + 1) % p;
        let left = (me + p - 1) % p;
        // position in the ring phase, and the action of the phase
        let (s, action) = if step < p - 1 {
            (step, Action::Reduce)
        } else {
            (step - (p - 1), Action::Copy)
        };
        // reduce-scatter: send block me - s; allgather: send block me + 1 - s (the finished one)
        let shift = if action == Action::Reduce { 0 } else { 1 };
        let send = (me + shift + 2 * p - s) % p;
        let recv = (me + shift + 2 * p - s - 1) % p;
        plan.send(right, &[(send, send + 1)]);
        plan.recv(left, &[(recv, recv + 1)], action);
    }
}
