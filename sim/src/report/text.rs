//! The sentences of a diagnosis: who is blocked, in which call, waiting for whom, and the root
//! cause. One writer for `run`, `explain` and `import`; each source says, through [`Wording`],
//! how it names a group and what it knows of a call beyond the diagnosis (a simulated call's
//! algorithm and step; a recorded call's group description and age).

use crate::cause::RootCause;
use crate::diagnose::{fmt_ranks, ranks_phrase, Blocked, Diagnosis};
use crate::proto::vocab::OpKind;
use std::collections::{BTreeMap, BTreeSet};

/// `1 call`, `2 calls`, `0 calls`: a count and its noun, plural by an `s`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// How a source names what the sentences mention.
pub trait Wording {
    /// The call as a sentence names it (`allreduce`, `nccl:all_reduce`).
    fn op(&self, b: &Blocked) -> String {
        b.op.to_string()
    }

    /// Where the call is, after its number: ` in group 2`, ` of group 1 (pp)`; empty for the
    /// world of a simulated run.
    fn group(&self, b: &Blocked) -> String;

    /// What follows: ` (ring, step 2/4)` for the ranks `bs`, all in one call.
    fn detail(&self, bs: &[&Blocked]) -> String;
}

/// The wording of a simulated (or real, traced) run.
pub struct Simulated;

impl Wording for Simulated {
    fn group(&self, b: &Blocked) -> String {
        if b.group == 0 {
            String::new()
        } else {
            format!(" in group {}", b.group)
        }
    }

    fn detail(&self, bs: &[&Blocked]) -> String {
        let k = bs[0];
        // a send or recv has one step: where it goes matters, not the step
        if k.peer.is_some() {
            return format!(" ({})", k.algorithm);
        }
        let lo = bs.iter().map(|b| b.step + 1).min().unwrap_or(0);
        let hi = bs.iter().map(|b| b.step + 1).max().unwrap_or(0);
        let step = if lo == hi {
            format!("step {lo}/{}", k.steps)
        } else {
            format!("steps {lo}-{hi} of {}", k.steps)
        };
        format!(" ({}, {step})", k.algorithm)
    }
}

/// At most this many "a waits for b" clauses per paragraph.
const MAX_WAITS: usize = 12;

/// At most this many distinct calls named in one clause.
const MAX_CALLS: usize = 8;

/// Root causes explained one by one; the rest are summed up in one line.
const MAX_PARAGRAPHS: usize = 32;

/// One paragraph per root cause: which ranks are blocked on it, in which call, who waits for
/// whom, and what happened. Paragraphs that read alike are said once; past a screenful of
/// causes (a job with thousands of ranks without a dump has a cause for each), one line names
/// the rest.
pub fn explain(d: &Diagnosis, w: &dyn Wording) -> Vec<String> {
    if d.blocked.is_empty() {
        // nobody waits in a call, yet something holds the workload up
        return d
            .causes
            .iter()
            .map(|c| format!("no rank is waiting in a collective; root cause: {}", c.text))
            .collect();
    }
    if d.causes.is_empty() {
        // every blocked rank has a cause by construction; keep a sentence for the impossible
        let all: Vec<&Blocked> = d.blocked.iter().collect();
        return vec![format!(
            "{}; root cause: not determined",
            blocked_clause(&all, w)
        )];
    }
    // causes mostly share their blocked ranks: each set's clause is written once
    let mut clauses: BTreeMap<&[u32], String> = BTreeMap::new();
    let mut out: Vec<String> = d
        .causes
        .iter()
        .take(MAX_PARAGRAPHS)
        .map(|c| {
            let clause = clauses.entry(&c.blocked).or_insert_with(|| {
                let mine: Vec<&Blocked> = d
                    .blocked
                    .iter()
                    .filter(|b| c.blocked.binary_search(&b.rank).is_ok())
                    .collect();
                if mine.is_empty() {
                    String::new()
                } else {
                    blocked_clause(&mine, w)
                }
            });
            if clause.is_empty() {
                format!("no rank is waiting in a call; root cause: {}", c.text)
            } else {
                format!("{clause}; root cause: {}", c.text)
            }
        })
        .collect();
    let mut seen = BTreeSet::new();
    out.retain(|p| seen.insert(p.clone()));
    let rest = d.causes.get(MAX_PARAGRAPHS..).unwrap_or_default();
    if !rest.is_empty() {
        out.push(the_rest(rest.iter().map(|c| &c.cause)));
    }
    out
}

/// `and 40 more root causes: ranks 32-71 left no dump`.
fn the_rest<'a>(rest: impl Iterator<Item = &'a RootCause>) -> String {
    let mut missing = Vec::new();
    let mut others = Vec::new();
    let mut n = 0;
    for c in rest {
        n += 1;
        match c {
            RootCause::Missing(rs) => missing.extend(rs.iter().map(|r| r.0)),
            c => others.push(c.to_string()),
        }
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("{} left no dump", ranks_phrase(&missing)));
    }
    if !others.is_empty() {
        let shown = others.len().min(16);
        let more = if others.len() > shown { ", ..." } else { "" };
        parts.push(format!("{}{more}", others[..shown].join(", ")));
    }
    format!("and {n} more root causes: {}", parts.join("; "))
}

/// How many calls the first line names before it counts the rest.
const VERDICT_CALLS: usize = 2;

/// How many root causes the first line names before it counts the rest.
const VERDICT_CAUSES: usize = 4;

/// The answer of a stalled report, for its first line after the outcome: the root causes
/// (culprits and fault classes), what the first of them says, and where the ranks it holds up
/// are blocked: `hung:2 — rank 2 never issued allreduce #6 ...; ranks 0,1 are blocked in
/// allreduce #6 ...`.
pub fn culprit(d: &Diagnosis, w: &dyn Wording) -> String {
    let Some(first) = d.causes.first() else {
        return if d.blocked.is_empty() {
            "no rank is waiting in a call, yet the work did not finish".into()
        } else {
            let all: Vec<&Blocked> = d.blocked.iter().collect();
            format!(
                "root cause not determined; {}",
                calls_phrase(&all, w, VERDICT_CALLS)
            )
        };
    };
    let mut causes: Vec<String> = d
        .causes
        .iter()
        .take(VERDICT_CAUSES)
        .map(|c| c.cause.to_string())
        .collect();
    if d.causes.len() > VERDICT_CAUSES {
        causes.push(format!("{} more", d.causes.len() - VERDICT_CAUSES));
    }
    let held: Vec<&Blocked> = d
        .blocked
        .iter()
        .filter(|b| first.blocked.binary_search(&b.rank).is_ok())
        .collect();
    let calls = if held.is_empty() {
        String::new()
    } else {
        format!("; {}", calls_phrase(&held, w, VERDICT_CALLS))
    };
    format!("{} — {}{calls}", causes.join(", "), first.text)
}

/// `ranks 0,1 are blocked in allreduce #3 (ring, step 2/4): 0 waits for 2, 1 waits for 0`.
fn blocked_clause(bs: &[&Blocked], w: &dyn Wording) -> String {
    let mut waits: Vec<String> = bs
        .iter()
        .take(MAX_WAITS)
        .map(|b| format!("{} waits for {}", b.rank, fmt_ranks(&b.waiting_for)))
        .collect();
    if bs.len() > MAX_WAITS {
        waits.push(format!("... ({} more)", bs.len() - MAX_WAITS));
    }
    format!("{}: {}", calls_phrase(bs, w, MAX_CALLS), waits.join(", "))
}

/// `ranks 0,1 are blocked in allreduce #3 (ring, step 2/4) and rank 2 in recv #1 from rank 1`.
fn calls_phrase(bs: &[&Blocked], w: &dyn Wording, max_calls: usize) -> String {
    // the calls the ranks are blocked in, first seen first
    let mut calls: Vec<Vec<&Blocked>> = Vec::new();
    for b in bs {
        match calls.iter_mut().find(|v| {
            let k = v[0];
            k.op == b.op
                && k.seq == b.seq
                && k.group == b.group
                && k.generation == b.generation
                && k.peer == b.peer
        }) {
            Some(v) => v.push(b),
            None => calls.push(vec![b]),
        }
    }
    let mut parts: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let k = v[0];
            let ranks: Vec<u32> = v.iter().map(|b| b.rank).collect();
            let verb = match (i, ranks.len()) {
                (0, 1) => " is blocked",
                (0, _) => " are blocked",
                _ => "",
            };
            let peer = match k.peer {
                Some(p) if k.op.is(OpKind::Send) => format!(" to rank {p}"),
                Some(p) => format!(" from rank {p}"),
                None => String::new(),
            };
            format!(
                "{}{verb} in {} #{}{peer}{}{}",
                ranks_phrase(&ranks),
                w.op(k),
                k.seq,
                w.group(k),
                w.detail(v)
            )
        })
        .collect();
    if parts.len() > max_calls {
        let rest: usize = calls[max_calls..].iter().map(Vec::len).sum();
        let n = parts.len() - max_calls;
        parts.truncate(max_calls);
        let ranks = if rest == 1 { "rank" } else { "ranks" };
        parts.push(format!("{rest} more {ranks} in {n} other calls"));
    }
    parts.join(" and ")
}
