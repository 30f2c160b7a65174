//! Deliberately broken variants of the protocol code.
//!
//! A property that never fails proves nothing, so each property of DESIGN §5 has a test that
//! runs it against one of these bugs and expects it to fail. They are switched on only through
//! [`WorkloadConfig::mutation`](super::workload::WorkloadConfig::mutation) by code that asks for
//! them (tests, `ringside check --mutation`), never by a scenario file.

use super::collective::{self, AnySchedule, Ctx, Schedule, StepPlan, UnsupportedAlgorithm};
use crate::vocab::{Algorithm, OpKind};
use std::fmt;
use std::str::FromStr;

/// One planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutation {
    /// Ring allreduce: in its last step, group rank 0 writes the block it receives over the
    /// wrong block of its buffer (the one it sends in that step). Rank 0 ends with a wrong
    /// result that differs from everyone else's; when the two blocks differ in size the chunk
    /// does not fit and the call never finishes.
    RingWrongChunk,
    /// Allgather (any algorithm): in the last step one rank never receives what it should, and
    /// its peers never send it, so that rank's result lacks the blocks of some ranks.
    AllgatherDropRank,
    /// The process group throws away chunks that arrive for a later step of the running call
    /// instead of keeping them, so any reordering of a peer's messages stalls the call.
    DropEarlyChunks,
}

impl Mutation {
    pub const ALL: [Mutation; 3] = [
        Mutation::RingWrongChunk,
        Mutation::AllgatherDropRank,
        Mutation::DropEarlyChunks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutation::RingWrongChunk => "ring-wrong-chunk",
            Mutation::AllgatherDropRank => "allgather-drop-rank",
            Mutation::DropEarlyChunks => "drop-early-chunks",
        }
    }
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mutation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mutation::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Mutation::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mutation `{s}`: use one of {}", names.join(", "))
            })
    }
}

/// The schedule of `op` with `algorithm` for `ctx`, with `mutation` planted when it applies.
pub fn schedule(
    mutation: Option<Mutation>,
    op: OpKind,
    algorithm: Algorithm,
    ctx: Ctx,
    per_host: u32,
) -> Result<AnySchedule, UnsupportedAlgorithm> {
    let inner = collective::schedule_with(op, algorithm, ctx, per_host)?;
    if mutation.is_none() {
        return Ok(inner);
    }
    let last = inner.steps().checked_sub(1);
    Ok(match (mutation, op, algorithm, last) {
        (Some(Mutation::RingWrongChunk), OpKind::Allreduce, Algorithm::Ring, Some(last))
            if ctx.me == 0 =>
        {
            AnySchedule::from(Box::new(WrongChunk { inner, last }) as Box<dyn Schedule>)
        }
        (Some(Mutation::AllgatherDropRank), OpKind::Allgather, _, Some(last)) => {
            match victim(algorithm, ctx, last) {
                Some(victim) => AnySchedule::from(Box::new(DropRank {
                    inner,
                    me: ctx.me,
                    victim,
                    last,
                }) as Box<dyn Schedule>),
                None => inner,
            }
        }
        _ => inner,
    })
}

struct WrongChunk {
    inner: AnySchedule,
    last: u32,
}

impl Schedule for WrongChunk {
    fn steps(&self) -> u32 {
        self.inner.steps()
    }
    fn nblocks(&self) -> u32 {
        self.inner.nblocks()
    }
    fn plan(&self, step: u32, plan: &mut StepPlan) {
        self.inner.plan(step, plan);
        if step == self.last {
            if let (Some(send), Some(recv)) = (plan.sends.first(), plan.recvs.first()) {
                let wrong = send.ranges.clone();
                if recv.ranges != wrong {
                    plan.recvs[0].ranges = wrong;
                }
            }
        }
    }
}

/// The first group rank that receives something in the last step of the allgather.
fn victim(algorithm: Algorithm, ctx: Ctx, last: u32) -> Option<u32> {
    let mut plan = StepPlan::default();
    (0..ctx.p).find(|&me| {
        plan.clear();
        match collective::schedule(OpKind::Allgather, algorithm, Ctx { me, ..ctx }) {
            Ok(s) => {
                s.plan(last, &mut plan);
                !plan.recvs.is_empty()
            }
            Err(_) => false,
        }
    })
}

struct DropRank {
    inner: AnySchedule,
    me: u32,
    victim: u32,
    last: u32,
}

impl Schedule for DropRank {
    fn steps(&self) -> u32 {
        self.inner.steps()
    }
    fn nblocks(&self) -> u32 {
        self.inner.nblocks()
    }
    fn plan(&self, step: u32, plan: &mut StepPlan) {
        self.inner.plan(step, plan);
        if step == self.last {
            if self.me == self.victim {
                plan.recvs.clear();
            } else {
                plan.sends.retain(|t| t.peer != self.victim);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mutation::ALL {
            assert_eq!(m.name().parse::<Mutation>(), Ok(m));
        }
        assert!("no-such-bug".parse::<Mutation>().is_err());
    }

    #[test]
    fn only_the_named_op_is_changed() {
        let ctx = Ctx {
            me: 0,
            p: 4,
            root: 0,
        };
        let plans = |m: Option<Mutation>, op, a| {
            let s = schedule(m, op, a, ctx, 1).expect("supported");
            (0..s.steps())
                .map(|k| {
                    let mut p = StepPlan::default();
                    s.plan(k, &mut p);
                    (p.sends, p.recvs)
                })
                .collect::<Vec<_>>()
        };
        for m in Mutation::ALL {
            assert_eq!(
                plans(Some(m), OpKind::Broadcast, Algorithm::Binomial),
                plans(None, OpKind::Broadcast, Algorithm::Binomial)
            );
        }
        assert_ne!(
            plans(
                Some(Mutation::RingWrongChunk),
                OpKind::Allreduce,
                Algorithm::Ring
            ),
            plans(None, OpKind::Allreduce, Algorithm::Ring)
        );
        for a in [
            Algorithm::Ring,
            Algorithm::RecursiveDoubling,
            Algorithm::Direct,
        ] {
            let victim = victim(
                a,
                ctx,
                schedule(None, OpKind::Allgather, a, ctx, 1)
                    .unwrap()
                    .steps()
                    - 1,
            );
            assert!(victim.is_some(), "{a}: someone receives in the last step");
        }
    }
}
