//! The verdict on a group's earliest divergence: who is wrong, and how.
//!
//! Ranks that disagree are judged by the majority of the group; on a tie, by the call's
//! history — a call whose parameters (or call site) appear elsewhere in the group is the
//! program's, one that appears nowhere is the deviation. A culprit whose calls are the others'
//! calls one seq later made an extra call; one seq earlier, it skipped one. Where nothing
//! decides, the verdict is `undecided`, with the reason.

use super::lanes::{self, Call, Lane};
use super::seqs::{Ctx, Divergence, DivergenceKind, Row};
use crate::diagnose::ranks_phrase;
use crate::diagnose::shift::{self, Shift};
use crate::fr::groups::Group;
use crate::scenario::RootCause;

fn rank(r: u32) -> crate::proto::types::Rank {
    crate::proto::types::Rank(r)
}

/// Whether a call like `v` appears in the group at a seq other than `s`.
fn usual(ctx: &Ctx, g: &Group, s: u64, v: &Call) -> bool {
    g.members.iter().any(|&m| {
        ctx.lane(m, g.id).is_some_and(|l| {
            l.calls
                .iter()
                .any(|c| c.seq != s && lanes::differs(ctx.dumps, v, c).is_none())
        })
    })
}

/// `culprit`'s calls from `s` on, against `right`'s ([`shift::shift`]), or else against what the
/// right ranks' history says follows their call at `s`.
fn shifted(ctx: &Ctx, g: &Group, s: u64, culprit: u32, right: u32) -> Option<Shift> {
    let (lc, lr) = (ctx.lane(culprit, g.id)?, ctx.lane(right, g.id)?);
    let at = |l: &Lane, q: u64| l.calls.iter().find(|c| c.seq == q).copied();
    let agree = |a: Option<Call>, b: Option<Call>| match (a, b) {
        (Some(a), Some(b)) => Some(ctx.same(&a, &b)),
        _ => None,
    };
    if let Some(sh) = shift::shift(s, |c, r| agree(at(lc, c), at(lr, r))) {
        return Some(sh);
    }
    // the right ranks stop at s: their history tells what comes after their call there (a
    // loop repeats its calls), and a culprit already at that call skipped theirs
    // (only with call sites: without them a call in place of another looks the same)
    let (mine, theirs) = (at(lc, s)?, at(lr, s)?);
    lanes::site(ctx.dumps, &mine)?;
    let skipped = lr.calls.windows(2).any(|w| {
        w[0].seq < s
            && w[1].seq == w[0].seq + 1
            && ctx.same(&w[0], &theirs)
            && ctx.same(&w[1], &mine)
    });
    skipped.then_some(Shift::Skipped)
}

/// Culprit `r`'s cause by how its later calls line up: a skipped call is `skipped:R`, an
/// extra or other call `mismatch:R`; a shift makes `kind` its own.
fn shift_cause(sh: Option<Shift>, r: u32, kind: &mut DivergenceKind) -> RootCause {
    match sh {
        Some(Shift::Skipped) => {
            *kind = DivergenceKind::SkippedCall;
            RootCause::Skipped(rank(r))
        }
        Some(Shift::Extra) => {
            *kind = DivergenceKind::ExtraCall;
            RootCause::Mismatch(rank(r))
        }
        None => RootCause::Mismatch(rank(r)),
    }
}

fn call_phrase(ctx: &Ctx, g: &Group, s: u64, c: &Call) -> String {
    let site = lanes::site(ctx.dumps, c)
        .map(|x| format!(" at {x}"))
        .unwrap_or_default();
    format!(
        "{} #{s} of {} ({}{site})",
        lanes::op_name(ctx.dumps, c),
        g.label(),
        lanes::describe(ctx.dumps, c)
    )
}

/// Which of the calls at #s that tie (`vs`: as many members made each) is right, and the
/// evidence that says so: the group's own history (the only one of them the group also made
/// at another seq: an earlier iteration in the ring buffer), else its sibling groups (the same
/// description and size, other members: the other replicas of a data-parallel stage), the
/// only one of them that siblings whose members agree made at the same seq.
fn tie_break(ctx: &Ctx, g: &Group, s: u64, vs: &[(Call, Vec<u32>)]) -> Option<(usize, String)> {
    let usual_ones: Vec<usize> = (0..vs.len())
        .filter(|&i| usual(ctx, g, s, &vs[i].0))
        .collect();
    if let [i] = usual_ones[..] {
        return Some((
            i,
            format!(
                "the group's calls at other seqs were made as {} made this one",
                ranks_phrase(&vs[i].1)
            ),
        ));
    }
    let mut votes = vec![0u32; vs.len()];
    for h in ctx.siblings(g) {
        let mut calls = h.members.iter().filter_map(|&m| {
            let l = ctx.lane(m, h.id)?;
            let k = l.calls.partition_point(|c| c.seq < s);
            l.calls.get(k).filter(|c| c.seq == s).copied()
        });
        let Some(first) = calls.next() else { continue };
        if calls.any(|c| lanes::differs(ctx.dumps, &first, &c).is_some()) {
            continue;
        }
        if let Some(i) = vs
            .iter()
            .position(|(v, _)| lanes::differs(ctx.dumps, v, &first).is_none())
        {
            votes[i] += 1;
        }
    }
    let backed: Vec<usize> = (0..vs.len()).filter(|&i| votes[i] > 0).collect();
    let [i] = backed[..] else { return None };
    Some((
        i,
        format!(
            "{} sibling group{} ({}, the same size, other members) made #{s} as {} did",
            votes[i],
            if votes[i] == 1 { "" } else { "s" },
            if g.desc.is_empty() {
                crate::text::safe("the same name")
            } else {
                crate::text::safe(&g.desc)
            },
            ranks_phrase(&vs[i].1)
        ),
    ))
}

/// Ranks issued #s with different parameters: the majority is right; on a tie, the call that
/// also appears elsewhere in the group's history.
pub(super) fn judge_params(
    ctx: &Ctx,
    g: &Group,
    s: u64,
    vs: &[(Call, Vec<u32>)],
    rows: &[Row],
) -> Divergence {
    let start = rows.iter().find(|r| r.seq == s).map_or(0, |r| r.start_ns);
    let max = vs.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let top: Vec<usize> = (0..vs.len()).filter(|&i| vs[i].1.len() == max).collect();
    let (right, evidence) = if top.len() == 1 {
        (Some(top[0]), None)
    } else {
        match tie_break(ctx, g, s, vs) {
            Some((i, why)) => (Some(i), Some(why)),
            None => (None, None),
        }
    };
    let describe_all = || {
        vs.iter()
            .map(|(c, r)| {
                format!(
                    "{} call it with {}",
                    ranks_phrase(r),
                    lanes::describe(ctx.dumps, c)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(ri) = right else {
        let reason = format!(
            "at {} #{s} of {} {}: no majority, and neither the group's calls at other seqs \
             nor its sibling groups (the same description and size, other members) at #{s} \
             tell which is right",
            lanes::op_name(ctx.dumps, &vs[0].0),
            g.label(),
            describe_all()
        );
        return Divergence {
            group: g.id,
            seq: s,
            at_ns: start.saturating_sub(ctx.t0),
            kind: DivergenceKind::Parameters,
            culprits: Vec::new(),
            agree: Vec::new(),
            causes: vec![RootCause::Undecided],
            text: reason.clone(),
            undecided: Some(reason),
            victims: Vec::new(),
        };
    };
    let (rc, rr) = &vs[ri];
    let mut culprits = Vec::new();
    let mut causes = Vec::new();
    let mut texts = Vec::new();
    let mut kind = DivergenceKind::Parameters;
    for (i, (c, ranks)) in vs.iter().enumerate() {
        if i == ri {
            continue;
        }
        let how = lanes::differs(ctx.dumps, rc, c).unwrap_or_default();
        for &r in ranks {
            culprits.push(r);
            causes.push(shift_cause(shifted(ctx, g, s, r, rr[0]), r, &mut kind));
        }
        let how_shifted = match kind {
            DivergenceKind::ExtraCall => {
                ": an extra call (its later calls are the others' calls one seq later)"
            }
            DivergenceKind::SkippedCall => {
                ": it skipped a call (its calls are the others' calls one seq earlier)"
            }
            _ => "",
        };
        texts.push(format!(
            "{} called {} with {how} (as {} called it){how_shifted}",
            ranks_phrase(ranks),
            call_phrase(ctx, g, s, c),
            ranks_phrase(rr)
        ));
    }
    culprits.sort_unstable();
    causes.sort();
    causes.dedup();
    let mut text = texts.join("; ");
    if let Some(why) = evidence {
        text.push_str(&format!("; as many members called it each way, and {why}"));
    }
    Divergence {
        group: g.id,
        seq: s,
        at_ns: start.saturating_sub(ctx.t0),
        kind,
        culprits,
        agree: rr.clone(),
        causes,
        text,
        undecided: None,
        victims: Vec::new(),
    }
}

/// Same parameters at #s from different call sites: a shifted call that matched by chance.
/// Named only when the minority's site never appears in the majority's records.
pub(super) fn judge_site(
    ctx: &Ctx,
    g: &Group,
    s: u64,
    vs: &[(Call, Vec<u32>)],
    rows: &[Row],
) -> Option<Divergence> {
    let start = rows.iter().find(|r| r.seq == s).map_or(0, |r| r.start_ns);
    let max = vs.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let top: Vec<usize> = (0..vs.len()).filter(|&i| vs[i].1.len() == max).collect();
    if top.len() != 1 {
        return None;
    }
    let (rc, rr) = &vs[top[0]];
    let mut culprits = Vec::new();
    let mut causes = Vec::new();
    let mut texts = Vec::new();
    let mut kind = DivergenceKind::CallSite;
    for (i, (c, ranks)) in vs.iter().enumerate() {
        if i == top[0] {
            continue;
        }
        let site = lanes::site(ctx.dumps, c)?;
        let seen = rr.iter().any(|&m| {
            ctx.lane(m, g.id)
                .is_some_and(|l| l.calls.iter().any(|x| x.site == c.site))
        });
        let shifts: Vec<Option<Shift>> = (ranks.iter())
            .map(|&r| shifted(ctx, g, s, r, rr[0]))
            .collect();
        // a site the others call from too is no divergence by itself: it is one when the
        // culprits' later calls are the others' shifted by one (a call skipped or added)
        if seen && shifts.iter().any(Option::is_none) {
            return None;
        }
        for (&r, sh) in ranks.iter().zip(shifts) {
            culprits.push(r);
            causes.push(shift_cause(sh, r, &mut kind));
        }
        texts.push(format!(
            "{} called {} from {site}, a call site {} never {} from; {} called it from {}{}",
            ranks_phrase(ranks),
            call_phrase(ctx, g, s, c).split(" (").next().unwrap_or(""),
            ranks_phrase(rr),
            if rr.len() == 1 { "calls" } else { "call" },
            ranks_phrase(rr),
            lanes::site(ctx.dumps, rc).unwrap_or("?"),
            match kind {
                DivergenceKind::ExtraCall => {
                    ": an extra call with the same parameters, so it matched the others' next \
                     call and every later call is shifted by one"
                }
                DivergenceKind::SkippedCall => ": a skipped call, shifting every later call by one",
                _ => "",
            }
        ));
    }
    culprits.sort_unstable();
    causes.sort();
    causes.dedup();
    Some(Divergence {
        group: g.id,
        seq: s,
        at_ns: start.saturating_sub(ctx.t0),
        kind,
        culprits,
        agree: rr.clone(),
        causes,
        text: texts.join("; "),
        undecided: None,
        victims: Vec::new(),
    })
}

/// Some members have not issued #s. Those waiting in other calls may still come; of the idle
/// ones, the side with fewer ranks is wrong: idle ranks that the majority waits for stopped (or
/// went past the call), an issuing minority made an extra call.
pub(super) fn judge_absent(
    ctx: &Ctx,
    g: &Group,
    s: u64,
    start: u64,
    issued: &[u32],
    not_yet: &[u32],
) -> Divergence {
    let idle: Vec<u32> = not_yet
        .iter()
        .copied()
        .filter(|&m| ctx.dump(m).is_some_and(|d| !ctx.busy(d)))
        .collect();
    let busy: Vec<u32> = not_yet
        .iter()
        .copied()
        .filter(|m| !idle.contains(m))
        .collect();
    let rep = issued
        .first()
        .and_then(|&m| ctx.lane(m, g.id))
        .and_then(|l| l.calls.iter().find(|c| c.seq == s).copied());
    let what = rep
        .map(|c| call_phrase(ctx, g, s, &c))
        .unwrap_or_else(|| format!("#{s} of {}", g.label()));
    let base = Divergence {
        group: g.id,
        seq: s,
        at_ns: start.saturating_sub(ctx.t0),
        kind: DivergenceKind::WaitsElsewhere,
        culprits: Vec::new(),
        agree: Vec::new(),
        causes: Vec::new(),
        text: String::new(),
        undecided: None,
        victims: Vec::new(),
    };
    if idle.is_empty() {
        return Divergence {
            text: format!(
                "{} issued {what}; {} {} not issued it and wait{} in other calls",
                ranks_phrase(issued),
                ranks_phrase(&busy),
                if busy.len() == 1 { "has" } else { "have" },
                if busy.len() == 1 { "s" } else { "" }
            ),
            ..base
        };
    }
    use std::cmp::Ordering;
    match issued.len().cmp(&idle.len()) {
        Ordering::Greater => stopped(ctx, issued, &idle, &what, start, base),
        Ordering::Less => Divergence {
            kind: DivergenceKind::ExtraCall,
            culprits: issued.to_vec(),
            agree: idle.clone(),
            causes: issued
                .iter()
                .map(|&m| RootCause::Mismatch(rank(m)))
                .collect(),
            text: format!(
                "{} issued {what}, which {} never issued ({} last call completed and nothing \
                 follows): an extra call",
                ranks_phrase(issued),
                ranks_phrase(&idle),
                if idle.len() == 1 { "its" } else { "their" }
            ),
            ..base
        },
        Ordering::Equal => {
            let reason = format!(
                "{} issued {what}, {} did not and issued nothing after: as many ranks on each \
                 side, so the dumps cannot tell an extra call from a stopped rank",
                ranks_phrase(issued),
                ranks_phrase(&idle)
            );
            Divergence {
                kind: DivergenceKind::Stopped,
                // the side that stopped, should it be the wrong one (see `settle_ties`)
                culprits: idle.clone(),
                agree: issued.to_vec(),
                causes: vec![RootCause::Undecided],
                text: reason.clone(),
                undecided: Some(reason),
                ..base
            }
        }
    }
}

/// A majority issued a call (`what`, begun at `start`) that the `idle` minority did not: an
/// idle rank that went on past the call went on without it (`skipped:R`), one that did not
/// stopped (`hung:R`); see [`went_on`].
fn stopped(
    ctx: &Ctx,
    issued: &[u32],
    idle: &[u32],
    what: &str,
    start: u64,
    base: Divergence,
) -> Divergence {
    let mut causes = Vec::new();
    let mut kind = DivergenceKind::Stopped;
    let mut moved = Vec::new();
    for &m in idle {
        if went_on(ctx, base.group, base.seq, m, issued, start) {
            kind = DivergenceKind::SkippedCall;
            moved.push(m);
            causes.push(RootCause::Skipped(rank(m)));
        } else {
            causes.push(RootCause::Hung(rank(m)));
        }
    }
    let text = if moved.is_empty() {
        format!(
            "{} issued {what}; {} never issued it: {} last call completed and {} issued \
             nothing after (stopped outside collectives)",
            ranks_phrase(issued),
            ranks_phrase(idle),
            if idle.len() == 1 { "its" } else { "their" },
            if idle.len() == 1 { "it" } else { "they" }
        )
    } else {
        format!(
            "{} issued {what}; {} never issued it and went on with later calls: {} skipped it",
            ranks_phrase(issued),
            ranks_phrase(idle),
            if idle.len() == 1 { "it" } else { "they" }
        )
    };
    Divergence {
        kind,
        culprits: idle.to_vec(),
        agree: issued.to_vec(),
        causes,
        text,
        ..base
    }
}

/// Whether idle rank `m`, which never issued #`s` of group `g` that the `issued` ranks issued
/// (the first of them at `start`), went on past the point where they issued it.
///
/// Each host has its own clock, and clocks of a job's hosts are apart by as much as the time
/// between two calls: `m`'s newest record is compared with its own calls, never with another
/// rank's clock. From the last call of the group `m` and the others both issued, `m` went on
/// when it issued more calls after it (in any group) than any of the others issued between it
/// and #`s`: it got past where they issued #`s`. Only when no such common call is in the dumps
/// (a ring buffer holds none) are the records' times compared across hosts.
fn went_on(ctx: &Ctx, g: u32, s: u64, m: u32, issued: &[u32], start: u64) -> bool {
    let Some(dm) = ctx.dump(m) else {
        return false;
    };
    let last = ctx.lane(m, g).and_then(|l| {
        l.calls[..l.calls.partition_point(|c| c.seq < s)]
            .last()
            .copied()
    });
    let counted = last.and_then(|last| {
        let after = ctx.lanes[dm]
            .queue
            .len()
            .checked_sub(last.pos as usize + 1)?;
        let between = issued
            .iter()
            .filter_map(|&k| {
                let l = ctx.lane(k, g)?;
                let at = |q: u64| {
                    let i = l.calls.binary_search_by_key(&q, |c| c.seq).ok()?;
                    Some(l.calls[i].pos)
                };
                let (from, to) = (at(last.seq)?, at(s)?);
                to.checked_sub(from + 1)
            })
            .max()?;
        Some(after > between as usize)
    });
    counted.unwrap_or_else(|| ctx.newest_ns[dm] > start)
}

/// A tie between ranks that issued a call and as many that stopped (two-member groups, for
/// one) is settled when the stopped ranks stopped in another group too, where a majority says
/// so: a rank that stopped issuing calls stopped everywhere.
pub(super) fn settle_ties(scans: &mut [super::GroupScan]) {
    let stopped: Vec<u32> = scans
        .iter()
        .filter_map(|s| s.divergence.as_ref())
        .filter(|d| d.decided())
        .flat_map(|d| {
            d.causes.iter().filter_map(|c| match c {
                RootCause::Hung(r) => Some(r.0),
                _ => None,
            })
        })
        .collect();
    for s in scans.iter_mut() {
        let Some(d) = s.divergence.as_mut() else {
            continue;
        };
        let tie = d.kind == DivergenceKind::Stopped && d.undecided.is_some();
        if !tie || d.culprits.is_empty() || !d.culprits.iter().all(|c| stopped.contains(c)) {
            continue;
        }
        d.causes = d
            .culprits
            .iter()
            .map(|&c| RootCause::Hung(rank(c)))
            .collect();
        d.text = format!(
            "{}; {} stopped issuing calls in other groups as well: {} stopped",
            d.text.split(": as many ranks").next().unwrap_or(&d.text),
            ranks_phrase(&d.culprits),
            if d.culprits.len() == 1 { "it" } else { "they" }
        );
        d.undecided = None;
    }
}
