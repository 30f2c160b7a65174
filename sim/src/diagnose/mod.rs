//! Diagnosis from a trace alone: who is blocked, on what, waiting for whom, and why.
//!
//! The wait-for graph has an edge `a -> b` when rank `a` is inside a collective (running, or
//! aborted by its watchdog) and still waits for a message of the current step from `b`.
//! Root causes are the ranks or links at the far end of those edges that a fault explains.

pub mod fold;
pub mod membership;

pub use fold::{CallView, FaultView, Fold, OpView, RankState, RankView};
pub use membership::{GenerationView, MembershipView, QueryView, WaitView};

use crate::units::{fmt_ms, Nanos};
use serde::Serialize;
use std::collections::BTreeSet;

/// A rank that waits, directly or transitively, on a root cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Blocked {
    pub rank: u32,
    pub op: String,
    pub algorithm: String,
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
}

/// A root cause with its explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// In the vocabulary of DESIGN §2, e.g. `preempted:2`.
    pub cause: String,
    /// One paragraph for humans.
    pub text: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diagnosis {
    pub t: Nanos,
    pub blocked: Vec<Blocked>,
    pub causes: Vec<Cause>,
    /// Wait-for edges (waiter, awaited).
    pub edges: Vec<(u32, u32)>,
}

impl Diagnosis {
    pub fn root_causes(&self) -> Vec<String> {
        self.causes.iter().map(|c| c.cause.clone()).collect()
    }

    pub fn blocked_ranks(&self) -> Vec<u32> {
        self.blocked.iter().map(|b| b.rank).collect()
    }
}

fn waits(v: &RankView) -> Option<&CallView> {
    v.call.as_ref().filter(|c| !c.waiting_for.is_empty())
}

/// Diagnoses the state in `fold`.
pub fn diagnose(fold: &Fold) -> Diagnosis {
    let mut edges = Vec::new();
    for v in &fold.ranks {
        if v.state == RankState::Dead {
            continue;
        }
        if let Some(c) = waits(v) {
            for &w in &c.waiting_for {
                edges.push((v.rank, w));
            }
        }
    }
    // ranks at the end of wait chains that a fault explains
    let mut causes: Vec<Cause> = Vec::new();
    let mut culprits = BTreeSet::new();
    let awaited: BTreeSet<u32> = edges.iter().map(|e| e.1).collect();
    for &r in &awaited {
        let Some(v) = fold.ranks.get(r as usize) else {
            continue;
        };
        if v.state == RankState::Dead || v.state == RankState::Refused {
            let at = v.dead_since.unwrap_or(v.since_ns);
            culprits.insert(r);
            causes.push(Cause {
                cause: format!("preempted:{r}"),
                text: format!("rank {r} was preempted at {}", fmt_ms(at)),
            });
        } else if v.paused {
            culprits.insert(r);
            causes.push(Cause {
                cause: format!("paused:{r}"),
                text: format!(
                    "rank {r} has been paused since {}",
                    fmt_ms(v.paused_since.unwrap_or(v.since_ns))
                ),
            });
        }
    }
    for f in fold.active_faults().filter(|f| f.kind == "partition") {
        let Some(sides) = &f.sides else { continue };
        let side_of = |r: u32| sides.iter().position(|s| s.contains(&r));
        if edges
            .iter()
            .any(|&(a, b)| matches!((side_of(a), side_of(b)), (Some(x), Some(y)) if x != y))
        {
            let mut sides = sides.clone();
            for s in &mut sides {
                s.sort_unstable();
            }
            sides.sort();
            let text: Vec<String> = sides
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            causes.push(Cause {
                cause: format!("partitioned:{}", text.join("|")),
                text: format!(
                    "the network has been partitioned into {} since {}",
                    text.iter()
                        .map(|s| format!("{{{s}}}"))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    fmt_ms(f.begin_ns)
                ),
            });
            for (a, b) in &edges {
                if side_of(*a) != side_of(*b) {
                    culprits.insert(*b);
                }
            }
        }
    }
    let blocked = fold
        .ranks
        .iter()
        .filter(|v| v.state != RankState::Dead)
        .filter_map(|v| {
            let c = waits(v)?;
            Some(Blocked {
                rank: v.rank,
                op: c.op.name().into(),
                algorithm: c.algorithm.name().into(),
                group: c.group.0,
                generation: c.generation.0,
                seq: c.seq.0,
                iteration: c.iteration,
                index: c.index,
                step: c.step,
                steps: c.steps,
                waiting_for: c.waiting_for.clone(),
                since_ns: c.since_ns,
            })
        })
        .collect();
    Diagnosis {
        t: fold.t,
        blocked,
        causes,
        edges,
    }
}
