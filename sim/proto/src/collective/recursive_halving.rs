//! Recursive-halving reduce-scatter (Thakur, Rabenseifner & Gropp 2005, §4.2), and the
//! halving round shared with Rabenseifner's allreduce.
//!
//! Each virtual rank v starts responsible for all of the buffer. In round k (distance
//! d = p'/2^(k+1)) it splits its current window of 2d virtual ranks' blocks in halves, sends the
//! half that v xor d keeps and reduces the half it keeps with what the partner sends. After
//! lg p' rounds v holds the full reduction of its own blocks. Cost for p a power of two:
//! lg p a + n(p-1)/p b. Other p fold (see `fold`): the odd rank of a pair hands its whole buffer
//! to the even one (reduced), and gets back its own block, fully reduced, at the end; the even
//! rank of a pair is responsible for both their blocks.

use super::fold::{Fold, Phase, Role};
use super::{Action, Ctx, Schedule, StepPlan};

/// Round `k` of recursive halving for virtual rank `v` of `pof2` (lg pof2 rounds): the peer,
/// the virtual ranks whose blocks go to it, and those whose blocks this rank keeps and reduces.
pub fn halving(v: u32, pof2: u32, k: u32) -> (u32, (u32, u32), (u32, u32)) {
    let d = pof2 >> (k + 1);
    let first = v & !(2 * d - 1);
    let (low, high) = ((first, first + d), (first + d, first + 2 * d));
    if v & d == 0 {
        (v ^ d, high, low)
    } else {
        (v ^ d, low, high)
    }
}

pub struct RecursiveHalvingReduceScatter {
    ctx: Ctx,
    fold: Fold,
}

impl RecursiveHalvingReduceScatter {
    pub fn new(ctx: Ctx) -> Self {
        RecursiveHalvingReduceScatter {
            ctx,
            fold: Fold::new(ctx.p),
        }
    }

    /// The real blocks of virtual ranks `[v, w)`.
    fn blocks(&self, (v, w): (u32, u32)) -> (u32, u32) {
        (self.fold.real(v), self.fold.real(w))
    }
}

impl Schedule for RecursiveHalvingReduceScatter {
    fn steps(&self) -> u32 {
        self.fold.steps(self.fold.rounds)
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let Ctx { me, p, .. } = self.ctx;
        match (self.fold.phase(step, self.fold.rounds), self.fold.role(me)) {
            (Phase::FoldIn, Role::Odd) => plan.send(me - 1, &[(0, p)]),
            (Phase::FoldIn, Role::Even(_)) => plan.recv(me + 1, &[(0, p)], Action::Reduce),
            (Phase::Main(k), Role::Even(v) | Role::Alone(v)) => {
                let (peer, give, keep) = halving(v, self.fold.pof2, k);
                let peer = self.fold.real(peer);
                plan.send(peer, &[self.blocks(give)]);
                plan.recv(peer, &[self.blocks(keep)], Action::Reduce);
            }
            (Phase::FoldOut, Role::Even(_)) => plan.send(me + 1, &[(me + 1, me + 2)]),
            (Phase::FoldOut, Role::Odd) => plan.recv(me - 1, &[(me, me + 1)], Action::Copy),
            _ => {}
        }
    }
}
