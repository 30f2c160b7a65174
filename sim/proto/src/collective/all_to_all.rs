//! All-to-all: every rank sends a distinct piece of its buffer to every other rank
//! (`torch.distributed.all_to_all_single` with equal splits; MPI_Alltoall).
//!
//! Each rank's input has p blocks, block j for rank j; afterwards block i of each rank's result
//! is what rank i sent it. The modeled size n is one rank's whole send buffer, so n/p goes to
//! each peer.
//!
//! - `pairwise` (MPICH's pairwise exchange): in step k = 1..p-1 rank r sends block r+k to rank
//!   r+k and receives from rank r-k (mod p), one exchange per step, so no port ever holds two
//!   messages: (p-1)(a + n/p b).
//! - `direct` ([`super::direct`]): every block leaves at once, to r+1, r+2, ... in turn:
//!   a + (p-1) n/p b.
//! - `bruck` (Bruck et al. 1997): ceil(lg p) steps. The buffer is kept rotated, position j
//!   holding what is bound for rank r+j; in step k every position with bit k set moves 2^k ranks
//!   on, so data travels lg p hops in messages of about half the buffer: for p a power of two,
//!   lg p (a + n/2 b); for other p, step k carries the c_k of the p positions with bit k set,
//!   sum_k (a + c_k n/p b). Fewer messages than pairwise, more bytes: it wins for small n.
//!
//! The layouts: `pairwise` and `direct` keep the send buffer (blocks 0..p) apart from the
//! receive buffer (blocks p..2p), since a block arriving in step k would overwrite one not yet
//! sent; `bruck` works in place, in rotated order.

use super::{Ctx, PairStep, Schedule, StepPlan};
use crate::collective::Action;

/// Pairwise exchange over a send and a receive buffer of p blocks each.
pub struct Pairwise {
    ctx: Ctx,
}

impl Pairwise {
    pub fn new(ctx: Ctx) -> Self {
        Pairwise { ctx }
    }

    #[inline]
    fn step(&self, step: u32) -> PairStep {
        let Ctx { me, p, .. } = self.ctx;
        let k = step + 1;
        let to = (me + k) % p;
        let from = (me + p - k) % p;
        PairStep {
            send_to: to,
            send_block: to,
            recv_from: from,
            recv_block: p + from,
            action: Action::Copy,
        }
    }
}

impl Schedule for Pairwise {
    fn steps(&self) -> u32 {
        self.ctx.p - 1
    }

    fn nblocks(&self) -> u32 {
        2 * self.ctx.p
    }

    fn modeled(&self, bytes: u64) -> u64 {
        bytes.saturating_mul(2)
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        self.step(step).plan(plan);
    }

    #[inline]
    fn pair(&self, step: u32) -> Option<PairStep> {
        Some(self.step(step))
    }
}

/// Bruck's all-to-all, in place over p blocks in rotated order.
pub struct Bruck {
    ctx: Ctx,
    levels: u32,
}

impl Bruck {
    pub fn new(ctx: Ctx) -> Self {
        Bruck {
            ctx,
            levels: super::fold::ceil_log2(ctx.p),
        }
    }
}

impl Schedule for Bruck {
    fn steps(&self) -> u32 {
        self.levels
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        let d = 1u32 << step;
        // the positions with bit `step` set, as runs of d consecutive positions
        let mut runs = Vec::new();
        let mut lo = d;
        while lo < p {
            runs.push((lo, (lo + d).min(p)));
            lo += 2 * d;
        }
        plan.send((me + d) % p, &runs);
        plan.recv((me + p - d) % p, &runs, Action::Copy);
    }
}

/// Position of block `block` (bound for, or coming from, that rank) in rank `me`'s rotated
/// Bruck buffer: before the exchange position j holds what goes to me + j; after it, what came
/// from me - j.
pub fn bruck_position(me: u32, p: u32, block: u32, after: bool) -> u32 {
    if after {
        (me + p - block) % p
    } else {
        (block + p - me) % p
    }
}
