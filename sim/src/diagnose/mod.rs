//! Diagnosis from a trace alone: who is blocked, on what, waiting for whom, and why.
//!
//! The input is a [`Fold`]: the state of every rank after some prefix of a trace's events, so
//! the same diagnosis serves a finished run, `explain` on a recorded trace at any time, and
//! the TUI.
//!
//! The wait-for graph has an edge `a -> b` when rank `a` is inside a call (running, or aborted
//! by its watchdog) and still waits for a chunk of its current step from `b`: a collective's
//! chunk, the message a recv waits for, or the acknowledgement a rendezvous send waits for. Each
//! edge is classified ([`EdgeKind`]):
//! - `root_cause`: the far end explains the wait by itself: `b` is dead or paused, a partition
//!   cuts `b -> a`, `b` issued this collective with another signature (mismatch, skip), `b`
//!   finished its workload without issuing it (skip), or `b` is alive but stopped issuing
//!   collectives (hang);
//! - `in_flight`: the trace shows `b` sent that chunk (a send event with its collective and
//!   step), so it is on its way — late perhaps, but coming;
//! - `waits`: `b` has not sent it yet; whether `a` is stuck depends on `b`.
//!
//! The classified edges go to the one wait-for solver ([`solve`]), which the diagnosis of Flight
//! Recorder dumps shares: a rank is **blocked** when it reaches a root-cause edge through `waits` edges; it is **in
//! progress** when every chain it waits on ends in a chunk on its way or in a healthy peer
//! that is working (computing, or still in an earlier collective). Waiters that are neither
//! sit in or upstream of a cycle of `waits` edges with nothing on its way: a **deadlock**,
//! reported per strongly connected component. Finally a rank whose watchdog fired while it was
//! merely in progress is blocked all the same (its call is gone): the cause is lateness, named
//! as `slow:R` (or as the partition that held the chunk back until recently).
//!
//! The cause that explains a wait first is not the only one: a blocked rank is also blocked on
//! every fault that still holds a rank or link along its chains of waits (edges of any kind):
//! a rank that is dead or frozen, a partition in force that cuts a link in either direction.
//! So a preempted rank behind a partition names both, and a rank frozen in a mismatched call
//! is named next to the mismatch. Ranks that are not blocked stay as they are.
//!
//! Stragglers — ranks that others waited for while a `slow`, `delay` or `loss` fault touched
//! them — are reported separately, never as blocked.

mod causes;
pub mod deferred;
mod dot;
pub mod fold;
mod graph;
pub mod membership;
pub mod order;
pub mod shift;
pub mod solve;

pub use crate::cause::RootCause;
pub use causes::{fmt_ranks, ranks_phrase};
pub use dot::{to_dot, to_dot_with};
pub use fold::{
    CallSig, CallView, FaultView, Fold, Lateness, OpView, PastCall, RankState, RankView, Slot,
    Variant,
};
pub use membership::{GenerationView, MembershipView, QueryView, WaitView};

use crate::proto::vocab::{Algorithm, OpKind};
use crate::units::Nanos;
use serde::{Serialize, Serializer};
use std::fmt;

/// The op of a call the diagnosis names: one of ringside's ops, or an op only a recorded job
/// knows (a vendor's collective in a Flight Recorder dump), kept as it was recorded.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallOp {
    Op(OpKind),
    Recorded(Box<str>),
}

impl CallOp {
    /// ringside's op, when it is one.
    pub fn kind(&self) -> Option<OpKind> {
        match self {
            CallOp::Op(k) => Some(*k),
            CallOp::Recorded(_) => None,
        }
    }

    pub fn is(&self, k: OpKind) -> bool {
        self.kind() == Some(k)
    }

    pub fn name(&self) -> &str {
        match self {
            CallOp::Op(k) => k.name(),
            CallOp::Recorded(s) => s,
        }
    }
}

impl fmt::Display for CallOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for CallOp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl From<OpKind> for CallOp {
    fn from(k: OpKind) -> CallOp {
        CallOp::Op(k)
    }
}

/// How a call is carried out: the algorithm of a simulated call, or the backend that ran a
/// recorded one (`nccl`, `gloo`). Written as its name (`--json`'s `algorithm`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Via {
    Algorithm(Algorithm),
    Backend(Box<str>),
}

impl Via {
    pub fn name(&self) -> &str {
        match self {
            Via::Algorithm(a) => a.name(),
            Via::Backend(b) => b,
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Via {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl From<Algorithm> for Via {
    fn from(a: Algorithm) -> Via {
        Via::Algorithm(a)
    }
}

/// A rank that waits, directly or transitively, on a root cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blocked {
    pub rank: u32,
    pub op: CallOp,
    pub algorithm: Via,
    pub group: u32,
    pub generation: u32,
    pub seq: u64,
    pub iteration: u32,
    pub index: u32,
    /// 0-based step and the number of steps.
    pub step: u32,
    pub steps: u32,
    pub waiting_for: Vec<u32>,
    pub since_ns: Nanos,
    /// The root causes this rank waits on.
    pub causes: Vec<RootCause>,
    /// A send or recv: the other end (the op says the direction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<u32>,
}

/// A root cause with its explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// E.g. `preempted:2`.
    pub cause: RootCause,
    /// What happened, for humans, e.g. `rank 2 was preempted at 12.000ms`.
    pub text: String,
    /// The ranks the cause names (the culprits; the sides of a partition).
    pub ranks: Vec<u32>,
    /// The ranks blocked on it.
    pub blocked: Vec<u32>,
}

/// A rank that others waited for while a straggler fault touched it: slow, not stalled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Straggler {
    /// `slow:R`.
    pub straggler: RootCause,
    pub rank: u32,
    /// Scenario indices of the faults that made it late.
    pub faults: Vec<u32>,
    /// Time others spent waiting for it, summed over the waiting ranks.
    pub waited_ns: Nanos,
    pub text: String,
}

/// What a wait-for edge means (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    RootCause,
    InFlight,
    Waits,
}

/// One wait-for edge: `from` waits for a chunk from `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WaitEdge {
    pub from: u32,
    pub to: u32,
    pub kind: EdgeKind,
    /// For root-cause edges, the causes the edge shows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<RootCause>,
    /// A send or recv's wait: which end `from` is of the message (`recv`: it waits for the
    /// message of `to`; `send`: for `to` to take it), its group and its order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageWait>,
}

/// The message a send or recv waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MessageWait {
    pub op: crate::scenario::OpKind,
    pub group: u32,
    pub seq: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    pub t: Nanos,
    /// Ranks blocked on a root cause, by rank.
    pub blocked: Vec<Blocked>,
    pub causes: Vec<Cause>,
    /// Every wait-for edge (waiter, awaited), classified.
    pub waits: Vec<WaitEdge>,
    /// Ranks inside a collective that are waiting but will progress.
    pub in_progress: Vec<u32>,
    pub stragglers: Vec<Straggler>,
}

/// At most this many ranks without a dump are root causes of their own (`missing:R` each);
/// more are one cause naming them all (`missing:1-4998`): a job whose dumps show a world far
/// larger than the dumps present is summarised, not enumerated.
pub const MAX_MISSING_CAUSES: usize = 32;

impl Diagnosis {
    /// Folds the `missing:R` causes into one `missing:` cause naming every rank without a dump,
    /// when there are more than [`MAX_MISSING_CAUSES`] of them, in the causes and in each
    /// blocked rank's causes. Its text is theirs when they all tell one story.
    pub fn merge_missing(&mut self) {
        let is_missing = |c: &RootCause| matches!(c, RootCause::Missing(_));
        let n = self.causes.iter().filter(|c| is_missing(&c.cause)).count();
        if n <= MAX_MISSING_CAUSES {
            return;
        }
        let (missing, mut causes): (Vec<Cause>, Vec<Cause>) = std::mem::take(&mut self.causes)
            .into_iter()
            .partition(|c| is_missing(&c.cause));
        let sorted = |v: Vec<u32>| {
            let mut v = v;
            v.sort_unstable();
            v.dedup();
            v
        };
        let ranks = sorted(
            missing
                .iter()
                .flat_map(|c| c.ranks.iter().copied())
                .collect(),
        );
        let blocked = sorted(
            missing
                .iter()
                .flat_map(|c| c.blocked.iter().copied())
                .collect(),
        );
        let all: Vec<crate::proto::types::Rank> = sorted(
            missing
                .iter()
                .flat_map(|c| c.cause.ranks())
                .map(|r| r.0)
                .collect(),
        )
        .into_iter()
        .map(crate::proto::types::Rank)
        .collect();
        let one_story = missing.windows(2).all(|w| w[0].text == w[1].text);
        let text = match missing.first() {
            Some(c) if one_story => c.text.clone(),
            _ => format!(
                "{} left no dump",
                ranks_phrase(&all.iter().map(|r| r.0).collect::<Vec<_>>())
            ),
        };
        let merged = RootCause::missing(all);
        for b in &mut self.blocked {
            if b.causes.iter().any(is_missing) {
                b.causes.retain(|c| !is_missing(c));
                b.causes.push(merged.clone());
                b.causes.sort();
            }
        }
        causes.push(Cause {
            cause: merged,
            text,
            ranks,
            blocked,
        });
        causes.sort_by(|a, b| a.cause.cmp(&b.cause));
        self.causes = causes;
    }

    /// Every root cause, in the order they are listed.
    pub fn root_causes(&self) -> Vec<RootCause> {
        self.causes.iter().map(|c| c.cause.clone()).collect()
    }

    /// The root causes as written in `--json`'s `root_causes` (`preempted:2`, `hung:0`).
    pub fn root_cause_names(&self) -> Vec<String> {
        self.causes.iter().map(|c| c.cause.to_string()).collect()
    }

    /// Every wait-for edge as (waiter, awaited).
    pub fn edges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.waits.iter().map(|e| (e.from, e.to))
    }

    pub fn blocked_ranks(&self) -> Vec<u32> {
        self.blocked.iter().map(|b| b.rank).collect()
    }

    /// `slow:R` for each straggler.
    pub fn straggler_names(&self) -> Vec<RootCause> {
        self.stragglers
            .iter()
            .map(|s| s.straggler.clone())
            .collect()
    }

    /// Ranks that a root cause names (dead, paused, hung, mismatched, partitioned...).
    pub fn culprits(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.causes.iter().flat_map(|c| c.ranks.clone()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Diagnoses the state in `fold` at `fold.t`.
pub fn diagnose(fold: &Fold) -> Diagnosis {
    let mut d = graph::analyze(fold);
    d.stragglers = causes::stragglers(fold);
    d
}

#[cfg(test)]
pub(crate) mod tests;
