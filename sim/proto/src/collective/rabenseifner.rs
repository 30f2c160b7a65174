//! Rabenseifner's allreduce: a recursive-halving reduce-scatter followed by a
//! recursive-doubling allgather (Thakur, Rabenseifner & Gropp 2005, §4.4).
//!
//! The buffer is cut into p' blocks (p' the largest power of two <= p), one per virtual rank.
//! Halving leaves virtual rank v with the full reduction of block v (each block reduced by one
//! rank only); doubling then copies the finished blocks to everyone, so all ranks agree bit for
//! bit. Cost for p a power of two: 2 lg p a + 2n(p-1)/p b. Other p fold (see `fold`): the odd
//! rank of a pair reduces its whole buffer into the even one first and copies the whole result
//! back at the end.

use super::fold::{Fold, Phase, Role};
use super::recursive_halving::halving;
use super::{Action, Ctx, Schedule, StepPlan};

pub struct Rabenseifner {
    ctx: Ctx,
    fold: Fold,
}

impl Rabenseifner {
    pub fn new(ctx: Ctx) -> Self {
        Rabenseifner {
            ctx,
            fold: Fold::new(ctx.p),
        }
    }
}

impl Schedule for Rabenseifner {
    fn steps(&self) -> u32 {
        self.fold.steps(2 * self.fold.rounds)
    }

    fn nblocks(&self) -> u32 {
        self.fold.pof2
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let me = self.ctx.me;
        let Fold { pof2, rounds, .. } = self.fold;
        let all = &[(0, pof2)];
        match (self.fold.phase(step, 2 * rounds), self.fold.role(me)) {
            (Phase::FoldIn, Role::Odd) => plan.send(me - 1, all),
            (Phase::FoldIn, Role::Even(_)) => plan.recv(me + 1, all, Action::Reduce),
            (Phase::Main(k), Role::Even(v) | Role::Alone(v)) if k < rounds => {
                let (peer, give, keep) = halving(v, pof2, k);
                let peer = self.fold.real(peer);
                plan.send(peer, &[give]);
                plan.recv(peer, &[keep], Action::Reduce);
            }
            (Phase::Main(k), Role::Even(v) | Role::Alone(v)) => {
                // doubling: the finished blocks of the aligned group of d virtual ranks
                let d = 1 << (k - rounds);
                let peer = v ^ d;
                let mine = v & !(d - 1);
                let theirs = peer & !(d - 1);
                let peer = self.fold.real(peer);
                plan.send(peer, &[(mine, mine + d)]);
                plan.recv(peer, &[(theirs, theirs + d)], Action::Copy);
            }
            (Phase::FoldOut, Role::Even(_)) => plan.send(me + 1, all),
            (Phase::FoldOut, Role::Odd) => plan.recv(me - 1, all, Action::Copy),
            _ => {}
        }
    }
}
