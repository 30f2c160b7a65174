//! A bidirectional ring allreduce, brought to ringside as a collective library would bring
//! its own algorithm (docs/custom-algorithms.md walks through it).
//!
//! The buffer is cut into 2p blocks. Blocks `0..p` go round the ring clockwise exactly as in
//! the classic ring allreduce (p - 1 reduce-scatter steps, then p - 1 allgather steps); blocks
//! `p..2p` go round it counter-clockwise at the same time. Each step a rank sends one block to
//! each neighbour and receives one from each, so with two ports per rank each message carries
//! n / 2p bytes and the call takes 2(p-1) a + (p-1)/p n b, half the bandwidth term of the ring.
//! On two ranks both neighbours are the same rank, and a step's two blocks travel as one
//! message (the schedule contract allows one send to a peer per step).
//!
//! [`register`] registers it as `bidi_ring`; [`register_wrong_peer`] registers a copy with a
//! planted bug, `bidi_ring_wrong_peer`: on four ranks or more, rank 0 sends its last
//! counter-clockwise reduce-scatter chunk two ranks to the right instead of to its left
//! neighbour, so that tests can show the bug caught. [`register_wrong_sum`] registers
//! another, `bidi_ring_wrong_sum`: rank 0 copies the first clockwise chunk it receives instead
//! of adding it, so the call completes and its result is wrong.

use ringside_sim::cost::{Cost, Net};
use ringside_sim::proto::collective::custom::{self, GroupCtx, ScheduleFactory};
use ringside_sim::proto::collective::{Action, Ctx, Schedule, StepPlan};
use ringside_sim::scenario::{Algorithm, OpKind};
use std::sync::OnceLock;

/// One rank's schedule of a bidirectional ring allreduce.
pub struct BidiRing {
    me: u32,
    p: u32,
    /// Where the planted bug strikes: the step whose counter-clockwise send goes the wrong way.
    wrong_peer_at: Option<u32>,
    /// Where the other planted bug strikes: the step whose clockwise chunk is copied over the
    /// rank's own instead of added to it.
    copy_at: Option<u32>,
}

impl BidiRing {
    pub fn new(ctx: Ctx) -> BidiRing {
        BidiRing {
            me: ctx.me,
            p: ctx.p,
            wrong_peer_at: None,
            copy_at: None,
        }
    }

    /// The clockwise ring's step for the rank at `pos`: (block sent to the right, block
    /// received from the left, what is done with it).
    fn ring(&self, pos: u32, step: u32) -> (u32, u32, Action) {
        let p = self.p;
        let (from, s, action) = if step < p - 1 {
            (pos, step, Action::Reduce)
        } else {
            ((pos + 1) % p, step - (p - 1), Action::Copy)
        };
        let send = (from + p - s) % p;
        (send, (send + p - 1) % p, action)
    }
}

impl Schedule for BidiRing {
    fn steps(&self) -> u32 {
        2 * (self.p - 1)
    }

    fn nblocks(&self) -> u32 {
        2 * self.p
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (me, p) = (self.me, self.p);
        let right = (me + 1) % p;
        let left = (me + p - 1) % p;
        // clockwise: the classic ring on blocks 0..p
        let (cw_send, cw_recv, action) = self.ring(me, step);
        // counter-clockwise: the classic ring on the reversed order, on blocks p..2p; the
        // rank at position q of the reversed ring is rank (p - q) mod p
        let (ccw_send, ccw_recv, _) = self.ring((p - me) % p, step);
        let (ccw_send, ccw_recv) = (p + ccw_send, p + ccw_recv);
        let block = |b: u32| (b, b + 1);
        if right == left {
            // two ranks: one message each way carries both blocks
            plan.send(right, &[block(cw_send), block(ccw_send)]);
            plan.recv(left, &[block(cw_recv), block(ccw_recv)], action);
            return;
        }
        let ccw_to = if self.wrong_peer_at == Some(step) {
            (me + 2) % p // the planted bug
        } else {
            left
        };
        plan.send(right, &[block(cw_send)]);
        plan.send(ccw_to, &[block(ccw_send)]);
        let cw_action = if self.copy_at == Some(step) {
            Action::Copy // the other planted bug
        } else {
            action
        };
        plan.recv(left, &[block(cw_recv)], cw_action);
        plan.recv(right, &[block(ccw_recv)], action);
    }
}

/// The time of one bidirectional ring allreduce of `n` bytes on `p` ranks with two ports per
/// rank (`[network] ports = 2`): 2(p-1) steps, each a message of n/2p bytes each way (on two
/// ranks, one message of n/p bytes). With reductions free only.
pub fn cost(op: OpKind, p: u32, n: u64, net: Net) -> Option<Cost> {
    // with reductions charged, how a step's two reductions overlap its transfers is not
    // captured by this formula
    if op != OpKind::Allreduce || net.g != 0.0 {
        return None;
    }
    if p <= 1 {
        return Some(Cost::Exact { ns: 0.0, rounds: 0 });
    }
    let steps = 2 * (p - 1);
    // two ranks send both blocks of a step in one message
    let chunk = n as f64 / f64::from(if p == 2 { p } else { 2 * p });
    Some(Cost::Exact {
        ns: f64::from(steps) * (net.a + chunk * net.b),
        rounds: steps,
    })
}

/// `bidi_ring`, registered once for the whole program (later calls return the same
/// algorithm).
pub fn register() -> Algorithm {
    static ALGORITHM: OnceLock<Algorithm> = OnceLock::new();
    *ALGORITHM.get_or_init(|| {
        let factory = ScheduleFactory::new("bidi_ring", &[OpKind::Allreduce], |g: &GroupCtx| {
            Box::new(BidiRing::new(g.ctx))
        })
        .with_cost(cost);
        custom::register(factory).expect("bidi_ring is a new algorithm name")
    })
}

/// `bidi_ring_wrong_peer`: `bidi_ring` with the planted bug of the module doc.
pub fn register_wrong_peer() -> Algorithm {
    static ALGORITHM: OnceLock<Algorithm> = OnceLock::new();
    *ALGORITHM.get_or_init(|| {
        planted("bidi_ring_wrong_peer", |s, ctx| {
            if ctx.me == 0 && ctx.p >= 4 {
                s.wrong_peer_at = Some(ctx.p - 2); // the last reduce-scatter step
            }
        })
    })
}

/// `bidi_ring_wrong_sum`: `bidi_ring` with the other planted bug of the module doc (on three
/// ranks or more).
pub fn register_wrong_sum() -> Algorithm {
    static ALGORITHM: OnceLock<Algorithm> = OnceLock::new();
    *ALGORITHM.get_or_init(|| {
        planted("bidi_ring_wrong_sum", |s, ctx| {
            if ctx.me == 0 && ctx.p >= 3 {
                s.copy_at = Some(0); // the first reduce-scatter step
            }
        })
    })
}

/// Registers `name`: `bidi_ring` with a bug that `plant` puts into a rank's schedule.
fn planted(name: &'static str, plant: fn(&mut BidiRing, Ctx)) -> Algorithm {
    let factory = ScheduleFactory::new(name, &[OpKind::Allreduce], move |g: &GroupCtx| {
        let mut s = BidiRing::new(g.ctx);
        plant(&mut s, g.ctx);
        Box::new(s)
    });
    custom::register(factory).unwrap_or_else(|e| panic!("{name} is a new algorithm name: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringside_sim::proto::collective::{plans_agree, PlanMismatch};

    fn ranks(p: u32, wrong: Option<u32>) -> Vec<BidiRing> {
        (0..p)
            .map(|me| BidiRing {
                wrong_peer_at: wrong.filter(|_| me == 0),
                ..BidiRing::new(Ctx { me, p, root: 0 })
            })
            .collect()
    }

    #[test]
    fn the_plans_of_every_group_size_fit_together() {
        for p in 1..=12 {
            assert_eq!(
                plans_agree(OpKind::Allreduce, 100, &ranks(p, None)),
                Ok(()),
                "p = {p}"
            );
        }
    }

    #[test]
    fn the_planted_wrong_peer_breaks_the_contract_at_its_step() {
        let e = plans_agree(OpKind::Allreduce, 100, &ranks(4, Some(2))).unwrap_err();
        assert_eq!(
            e,
            PlanMismatch::Unmatched {
                step: 2,
                rank: 0,
                peer: 2,
                sent: vec![(6, 7)],
                expected: None
            }
        );
    }
}
