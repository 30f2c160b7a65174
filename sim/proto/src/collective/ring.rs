//! Ring algorithms: allreduce, allgather and reduce-scatter, each rank talking only to its
//! neighbours r + 1 and r - 1.
//!
//! Ring allreduce (Patarasuk & Yuan; the bandwidth-optimal algorithm of NCCL and MPICH):
//! the buffer is cut into p blocks. In p-1 reduce-scatter steps, rank r sends block (r-s) mod p
//! to its right neighbour and reduces block (r-s-1) mod p arriving from its left; afterwards rank
//! r holds the full reduction of block (r+1) mod p. In p-1 allgather steps the finished blocks
//! travel once more around the ring, copied. Cost: 2(p-1)a + 2(p-1)/p n b (+ (p-1)/p n g).

use super::{Action, Ctx, PairStep, Schedule, StepPlan};

/// `x mod p` for x < 3p, without a division (this runs for every message of a ring).
#[inline]
pub fn wrap(mut x: u32, p: u32) -> u32 {
    while x >= p {
        x -= p;
    }
    x
}

pub struct RingAllreduce {
    ctx: Ctx,
    right: u32,
    left: u32,
}

impl RingAllreduce {
    pub fn new(ctx: Ctx) -> Self {
        let Ctx { me, p, .. } = ctx;
        RingAllreduce {
            ctx,
            right: if me + 1 >= p { 0 } else { me + 1 },
            left: if me == 0 { p.saturating_sub(1) } else { me - 1 },
        }
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
        self.step(step).plan(plan);
    }

    #[inline]
    fn pair(&self, step: u32) -> Option<PairStep> {
        Some(self.step(step))
    }
}

impl RingAllreduce {
    #[inline]
    fn step(&self, step: u32) -> PairStep {
        let Ctx { me, p, .. } = self.ctx;
        let (right, left) = (self.right, self.left);
        // reduce-scatter (step s < p-1): send block me - s, reduce block me - s - 1;
        // allgather (s = step - (p-1)): send block me + 1 - s (the finished one), copy the one
        // before it
        let (from, s, action) = if step < p - 1 {
            (me, step, Action::Reduce)
        } else {
            (right, step - (p - 1), Action::Copy)
        };
        // from < p and s < p: one conditional subtraction wraps (this runs for every message)
        let send = from + p - s;
        let send = if send >= p { send - p } else { send };
        let recv = if send == 0 { p - 1 } else { send - 1 };
        PairStep {
            send_to: right,
            send_block: send,
            recv_from: left,
            recv_block: recv,
            action,
        }
    }
}

/// Ring allgather: in step s rank r passes block r - s (its own first, then the one it just
/// received) to its right neighbour and copies block r - s - 1 from its left.
/// Cost: (p-1) a + n(p-1)/p b.
pub struct RingAllgather {
    ctx: Ctx,
}

impl RingAllgather {
    pub fn new(ctx: Ctx) -> Self {
        RingAllgather { ctx }
    }
}

impl Schedule for RingAllgather {
    fn steps(&self) -> u32 {
        self.ctx.p - 1
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, s: u32, plan: &mut StepPlan) {
        self.step(s).plan(plan);
    }

    #[inline]
    fn pair(&self, s: u32) -> Option<PairStep> {
        Some(self.step(s))
    }
}

impl RingAllgather {
    #[inline]
    fn step(&self, s: u32) -> PairStep {
        let Ctx { me, p, .. } = self.ctx;
        PairStep {
            send_to: wrap(me + 1, p),
            send_block: wrap(me + p - s, p),
            recv_from: wrap(me + p - 1, p),
            recv_block: wrap(me + 2 * p - s - 1, p),
            action: Action::Copy,
        }
    }
}

/// Ring reduce-scatter: the reduce-scatter half of the ring allreduce, shifted by one block
/// so that rank r ends with the full reduction of its own block r: in step s it sends block
/// r - s - 1 to the right and reduces block r - s - 2 arriving from the left.
/// Cost: (p-1) a + n(p-1)/p b.
pub struct RingReduceScatter {
    ctx: Ctx,
}

impl RingReduceScatter {
    pub fn new(ctx: Ctx) -> Self {
        RingReduceScatter { ctx }
    }
}

impl Schedule for RingReduceScatter {
    fn steps(&self) -> u32 {
        self.ctx.p - 1
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, s: u32, plan: &mut StepPlan) {
        self.step(s).plan(plan);
    }

    #[inline]
    fn pair(&self, s: u32) -> Option<PairStep> {
        Some(self.step(s))
    }
}

impl RingReduceScatter {
    #[inline]
    fn step(&self, s: u32) -> PairStep {
        let Ctx { me, p, .. } = self.ctx;
        PairStep {
            send_to: wrap(me + 1, p),
            send_block: wrap(me + 2 * p - s - 1, p),
            recv_from: wrap(me + p - 1, p),
            recv_block: wrap(me + 2 * p - s - 2, p),
            action: Action::Reduce,
        }
    }
}
