//! Deliberately broken variants of the code: every planted bug, in one place.
//!
//! A property that never fails proves nothing, so each property has a test that runs it against
//! one of these bugs and expects it to fail. A run carries its bugs as a [`Mutations`] set in
//! [`WorkloadConfig::mutations`](super::workload::WorkloadConfig::mutations), filled only by code
//! that asks for them (tests, `ringside check --mutation NAME`), never by a scenario file. Each
//! state machine reads the set once, when it is built, so the real code pays nothing for it.

use super::collective::{self, AnySchedule, Ctx, Schedule, StepPlan, UnsupportedAlgorithm};
use crate::vocab::{Algorithm, OpKind};
use std::fmt;
use strum::{IntoEnumIterator, VariantNames};

/// One planted bug. Its name (`ring-wrong-chunk`) is how `ringside check --mutation` asks for it.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::Display,
    strum::EnumString,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Mutation {
    /// Ring allreduce: in its last step, group rank 0 writes the block it receives over the
    /// wrong block of its buffer (the one it sends in that step). Rank 0 ends with a wrong
    /// result that differs from everyone else's; when the two blocks differ in size the chunk
    /// does not fit and the call never finishes. Caught by validity and agreement.
    RingWrongChunk,
    /// Allgather (any algorithm): in the last step one rank never receives what it should, and
    /// its peers never send it, so that rank's result lacks the blocks of some ranks. Caught by
    /// validity.
    AllgatherDropRank,
    /// The process group throws away chunks that arrive for a later step of the running call
    /// instead of keeping them, so any reordering of a peer's messages stalls the call. Caught
    /// by liveness.
    DropEarlyChunks,
    /// The world group consumes collective messages of any generation, as if fingerprints did
    /// not carry it: a stale chunk of an older generation corrupts a rebuilt group's result.
    /// Caught by the validity of rebuilt collectives.
    NoGenerationCheck,
    /// Elastic rendezvous forms a generation without a strict majority of the previous one, so
    /// both sides of a partition form their own. Caught by one world per generation.
    NoQuorum,
    /// Elastic rendezvous never tries again after a failed round, so a group that lost its
    /// quorum for a while stays stuck after the partition heals. Caught by liveness.
    NoRetry,
    /// Registry nodes do not exchange their states when they reconnect, so views that
    /// diverged in a partition stay apart. Caught by registry convergence.
    NoRegistryResync,
    /// The diagnosis of a lost quorum names `quorum_lost` alone, not the members whose death,
    /// freeze or partition made it so. Caught by diagnosis_complete.
    QuorumNamesNoMember,
    /// The engine breaks ties between events at the same virtual time by a process-wide
    /// counter instead of by insertion order, so two runs of one scenario and seed differ.
    /// Caught by determinism.
    NondeterministicTies,
    /// Point-to-point: a recv takes the latest message its peer sent it that is still waiting,
    /// not the one of its order, so a message lands in the wrong recv when several wait (a
    /// pipeline stage that runs ahead). Caught by validity (the recv's data is another
    /// message's).
    P2pTakeLatest,
    /// Point-to-point: a receiver never acknowledges a rendezvous send, so the sender waits
    /// for good. Caught by liveness.
    NoRendezvousAck,
    /// Point-to-point: a send carries data made from another seed than the one of its
    /// message, as if a buffer were reused before the send read it. Caught by validity (the
    /// recv's data is not what its sender sent).
    P2pCorruptPayload,
    /// Point-to-point: an eager send reports itself done as soon as it is issued, before its
    /// bytes have left the sender. Caught by the exact send times (`tests/fidelity.rs`): a
    /// timing contract, which no property of a run's results sees.
    EagerSendDoneEarly,
}

impl Mutation {
    /// The bug's name, as `ringside check --mutation` takes it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every bug's name, in declaration order.
    pub fn names() -> &'static [&'static str] {
        Self::VARIANTS
    }

    /// Every bug, in declaration order.
    pub fn all() -> impl Iterator<Item = Mutation> {
        Self::iter()
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// A set of planted bugs; the empty set (the default) is the real code.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Mutations(u32);

impl Mutations {
    /// The real code.
    pub const NONE: Mutations = Mutations(0);

    pub fn contains(self, m: Mutation) -> bool {
        self.0 & m.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn insert(&mut self, m: Mutation) {
        self.0 |= m.bit();
    }

    /// The planted bugs, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Mutation> {
        Mutation::iter().filter(move |m| self.contains(*m))
    }
}

impl From<Mutation> for Mutations {
    fn from(m: Mutation) -> Mutations {
        Mutations(m.bit())
    }
}

impl FromIterator<Mutation> for Mutations {
    fn from_iter<I: IntoIterator<Item = Mutation>>(iter: I) -> Mutations {
        let mut set = Mutations::NONE;
        for m in iter {
            set.insert(m);
        }
        set
    }
}

impl fmt::Debug for Mutations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(Mutation::name))
            .finish()
    }
}

/// The schedule of `op` with `algorithm` for `ctx`, with the bugs of `mutations` that change
/// schedules planted where they apply.
pub fn schedule(
    mutations: Mutations,
    op: OpKind,
    algorithm: Algorithm,
    ctx: Ctx,
    per_host: u32,
) -> Result<AnySchedule, UnsupportedAlgorithm> {
    let inner = collective::schedule_with(op, algorithm, ctx, per_host)?;
    let wrong_chunk = mutations.contains(Mutation::RingWrongChunk);
    let drop_rank = mutations.contains(Mutation::AllgatherDropRank);
    let Some(last) = inner
        .steps()
        .checked_sub(1)
        .filter(|_| wrong_chunk || drop_rank)
    else {
        return Ok(inner);
    };
    Ok(match (op, algorithm) {
        (OpKind::Allreduce, Algorithm::Ring) if wrong_chunk && ctx.me == 0 => {
            AnySchedule::from(Box::new(WrongChunk { inner, last }) as Box<dyn Schedule>)
        }
        (OpKind::Allgather, _) if drop_rank => match victim(algorithm, ctx, last) {
            Some(victim) => AnySchedule::from(Box::new(DropRank {
                inner,
                me: ctx.me,
                victim,
                last,
            }) as Box<dyn Schedule>),
            None => inner,
        },
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
        for m in Mutation::iter() {
            assert_eq!(m.name().parse::<Mutation>(), Ok(m));
            assert_eq!(m.to_string(), m.name());
        }
        assert_eq!(Mutation::RingWrongChunk.name(), "ring-wrong-chunk");
        assert_eq!(
            Mutation::NondeterministicTies.name(),
            "nondeterministic-ties"
        );
        assert!("no-such-bug".parse::<Mutation>().is_err());
    }

    #[test]
    fn a_set_holds_exactly_what_was_put_in() {
        assert!(Mutations::NONE.is_empty());
        assert!(Mutation::iter().all(|m| !Mutations::NONE.contains(m)));
        let set: Mutations = [Mutation::NoQuorum, Mutation::DropEarlyChunks]
            .into_iter()
            .collect();
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Mutation::DropEarlyChunks, Mutation::NoQuorum]
        );
        assert!(!set.contains(Mutation::NoRetry));
        assert_eq!(format!("{set:?}"), "{\"drop-early-chunks\", \"no-quorum\"}");
        assert_eq!(Mutations::from(Mutation::NoRetry).iter().count(), 1);
        // every bug has a bit of its own
        assert_eq!(
            Mutation::all().collect::<Mutations>().iter().count(),
            Mutation::names().len()
        );
    }

    #[test]
    fn only_the_named_op_is_changed() {
        let ctx = Ctx {
            me: 0,
            p: 4,
            root: 0,
        };
        let plans = |m: Mutations, op, a| {
            let s = schedule(m, op, a, ctx, 1).expect("supported");
            (0..s.steps())
                .map(|k| {
                    let mut p = StepPlan::default();
                    s.plan(k, &mut p);
                    (p.sends, p.recvs)
                })
                .collect::<Vec<_>>()
        };
        let all: Mutations = Mutation::iter().collect();
        assert_eq!(
            plans(all, OpKind::Broadcast, Algorithm::Binomial),
            plans(Mutations::NONE, OpKind::Broadcast, Algorithm::Binomial)
        );
        assert_ne!(
            plans(
                Mutation::RingWrongChunk.into(),
                OpKind::Allreduce,
                Algorithm::Ring
            ),
            plans(Mutations::NONE, OpKind::Allreduce, Algorithm::Ring)
        );
        for a in [
            Algorithm::Ring,
            Algorithm::RecursiveDoubling,
            Algorithm::Direct,
        ] {
            let victim = victim(
                a,
                ctx,
                schedule(Mutations::NONE, OpKind::Allgather, a, ctx, 1)
                    .unwrap()
                    .steps()
                    - 1,
            );
            assert!(victim.is_some(), "{a}: someone receives in the last step");
        }
    }
}
