//! Van de Geijn's broadcast: a binomial scatter followed by a ring allgather (Thakur,
//! Rabenseifner & Gropp 2005, §4.1; MPICH's `bcast_scatter_ring_allgather`).
//!
//! The buffer is cut into p blocks, block r belonging to relative rank r = (me - root) mod p.
//! Scatter: in step k (distance d = 2^(L-1-k)) a rank r with r mod 2d = 0 holding blocks
//! [r, r + 2d) sends [r + d, r + 2d) to r + d (clipped at p). Allgather: p - 1 ring steps in
//! which rank r passes block r - s to its right neighbour and copies block r - s - 1 from its
//! left. Cost for p a power of two: (lg p + p - 1) a + 2n(p-1)/p b.

use super::binomial::{abs, rel};
use super::fold::ceil_log2;
use super::{Action, Ctx, Schedule, StepPlan};

pub struct ScatterAllgather {
    ctx: Ctx,
    levels: u32,
}

impl ScatterAllgather {
    pub fn new(ctx: Ctx) -> Self {
        ScatterAllgather {
            ctx,
            levels: ceil_log2(ctx.p),
        }
    }
}

impl Schedule for ScatterAllgather {
    fn steps(&self) -> u32 {
        self.levels + self.ctx.p - 1
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (ctx, p) = (self.ctx, self.ctx.p);
        let r = rel(ctx);
        if step < self.levels {
            let d = 1u32 << (self.levels - 1 - step);
            if r.is_multiple_of(2 * d) && r + d < p {
                plan.send(abs(ctx, r + d), &[(r + d, (r + 2 * d).min(p))]);
            }
            if r % (2 * d) == d {
                plan.recv(abs(ctx, r - d), &[(r, (r + d).min(p))], Action::Copy);
            }
        } else {
            let s = step - self.levels;
            let send = (r + 2 * p - s) % p;
            let recv = (r + 2 * p - s - 1) % p;
            plan.send(abs(ctx, r + 1), &[(send, send + 1)]);
            plan.recv(abs(ctx, r + p - 1), &[(recv, recv + 1)], Action::Copy);
        }
    }
}
