//! Binomial trees: broadcast and reduce (MPICH's `bcast_binomial` and `reduce_binomial`).
//!
//! Ranks are numbered relative to the root, r = (me - root) mod p, and the tree has
//! L = ceil(lg p) levels. Broadcast: in step k (distance d = 2^(L-1-k)) every rank r with
//! r mod 2d = 0 that already holds the data sends it to r + d, if that rank exists; so the root
//! feeds its largest subtree first. Reduce is the mirror image: in step k (d = 2^k) rank r with
//! r mod 2d = d sends its partial result to r - d, which reduces it; so a parent receives its
//! children smallest subtree first, each exactly when that subtree is done. Non-powers of two
//! simply clip the tree at p. Cost: ceil(lg p)(a + n b) each (an upper bound when p is not a
//! power of two: children whose subtree is clipped away finish early).

use super::fold::ceil_log2;
use super::{Action, Ctx, Schedule, StepPlan};

/// Step `k` of a broadcast down the binomial tree of `p` ranks with `levels` levels, for
/// relative rank `r`: (child to send to, parent to receive from), both relative.
pub fn down(r: u32, p: u32, levels: u32, k: u32) -> (Option<u32>, Option<u32>) {
    let d = 1u32 << (levels - 1 - k);
    let send = (r.is_multiple_of(2 * d) && r + d < p).then_some(r + d);
    let recv = (r % (2 * d) == d).then(|| r - d);
    (send, recv)
}

/// Step `k` of a reduction up the binomial tree: (parent to send to, child to receive from).
pub fn up(r: u32, p: u32, k: u32) -> (Option<u32>, Option<u32>) {
    let d = 1u32 << k;
    let send = (r % (2 * d) == d).then(|| r - d);
    let recv = (r.is_multiple_of(2 * d) && r + d < p).then_some(r + d);
    (send, recv)
}

/// Relative rank of `me` with respect to `root`, and back.
pub fn rel(ctx: Ctx) -> u32 {
    (ctx.me + ctx.p - ctx.root) % ctx.p
}

pub fn abs(ctx: Ctx, r: u32) -> u32 {
    (r + ctx.root) % ctx.p
}

pub struct BinomialBroadcast {
    ctx: Ctx,
    levels: u32,
}

impl BinomialBroadcast {
    pub fn new(ctx: Ctx) -> Self {
        BinomialBroadcast {
            ctx,
            levels: ceil_log2(ctx.p),
        }
    }
}

impl Schedule for BinomialBroadcast {
    fn steps(&self) -> u32 {
        self.levels
    }

    fn nblocks(&self) -> u32 {
        1
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (send, recv) = down(rel(self.ctx), self.ctx.p, self.levels, step);
        if let Some(to) = send {
            plan.send(abs(self.ctx, to), &[(0, 1)]);
        }
        if let Some(from) = recv {
            plan.recv(abs(self.ctx, from), &[(0, 1)], Action::Copy);
        }
    }
}

pub struct BinomialReduce {
    ctx: Ctx,
    levels: u32,
}

impl BinomialReduce {
    pub fn new(ctx: Ctx) -> Self {
        BinomialReduce {
            ctx,
            levels: ceil_log2(ctx.p),
        }
    }
}

impl Schedule for BinomialReduce {
    fn steps(&self) -> u32 {
        self.levels
    }

    fn nblocks(&self) -> u32 {
        1
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (send, recv) = up(rel(self.ctx), self.ctx.p, step);
        if let Some(to) = send {
            plan.send(abs(self.ctx, to), &[(0, 1)]);
        }
        if let Some(from) = recv {
            plan.recv(abs(self.ctx, from), &[(0, 1)], Action::Reduce);
        }
    }
}
