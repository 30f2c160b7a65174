//! Gather and scatter along a binomial tree (MPICH's `gather_binomial`, `scatter_binomial`).
//!
//! The buffer has p blocks, block i being rank i's piece; ranks are numbered relative to the
//! root, r = (me - root) mod p, and the tree has L = ceil(lg p) levels.
//!
//! - gather: in step k (d = 2^k) every rank r with r mod 2d = d sends the pieces it has
//!   collected, those of ranks r .. r+d, to r - d. Cost for p a power of two:
//!   lg p a + (p-1) n/p b (n: the root's gathered buffer).
//! - scatter: the mirror image: in step k (d = 2^(L-1-k)) every rank r with r mod 2d = 0 sends
//!   the pieces of ranks r+d .. r+2d to r + d. Same cost.
//!
//! Non-powers of two clip the tree at p, which makes the formula an upper bound there. The
//! direct algorithms are in [`super::direct`].

use super::binomial::{abs, rel};
use super::fold::ceil_log2;
use super::{Action, Ctx, Schedule, StepPlan};

/// Relative blocks `[lo, hi)` of the tree rooted at `root`, as at most two runs of absolute
/// blocks (the range wraps past p - 1).
pub fn runs(ctx: Ctx, lo: u32, hi: u32) -> Vec<(u32, u32)> {
    let (a, b) = (abs(ctx, lo), abs(ctx, hi - 1) + 1);
    if a < b {
        vec![(a, b)]
    } else {
        vec![(a, ctx.p), (0, b)]
    }
}

pub struct BinomialGather {
    ctx: Ctx,
    levels: u32,
}

impl BinomialGather {
    pub fn new(ctx: Ctx) -> Self {
        BinomialGather {
            ctx,
            levels: ceil_log2(ctx.p),
        }
    }
}

impl Schedule for BinomialGather {
    fn steps(&self) -> u32 {
        self.levels
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (ctx, p, r) = (self.ctx, self.ctx.p, rel(self.ctx));
        let d = 1u32 << step;
        if r % (2 * d) == d {
            plan.send(abs(ctx, r - d), &runs(ctx, r, (r + d).min(p)));
        } else if r.is_multiple_of(2 * d) && r + d < p {
            let blocks = runs(ctx, r + d, (r + 2 * d).min(p));
            plan.recv(abs(ctx, r + d), &blocks, Action::Copy);
        }
    }
}

pub struct BinomialScatter {
    ctx: Ctx,
    levels: u32,
}

impl BinomialScatter {
    pub fn new(ctx: Ctx) -> Self {
        BinomialScatter {
            ctx,
            levels: ceil_log2(ctx.p),
        }
    }
}

impl Schedule for BinomialScatter {
    fn steps(&self) -> u32 {
        self.levels
    }

    fn nblocks(&self) -> u32 {
        self.ctx.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (ctx, p, r) = (self.ctx, self.ctx.p, rel(self.ctx));
        let d = 1u32 << (self.levels - 1 - step);
        if r.is_multiple_of(2 * d) && r + d < p {
            plan.send(abs(ctx, r + d), &runs(ctx, r + d, (r + 2 * d).min(p)));
        } else if r % (2 * d) == d {
            plan.recv(abs(ctx, r - d), &runs(ctx, r, (r + d).min(p)), Action::Copy);
        }
    }
}
