//! Ranks that wait for one another in a cycle: who deviates from the call order the others
//! follow ([`crate::diagnose::order`], the one rule for simulated runs and dumps alike).
//!
//! A rank of the cycle sits in a call of one group while a peer waits for it in a call of
//! another. Its own records say first which order it keeps: the last time it made the two
//! calls. Where they do not (a ring buffer too short to hold an earlier iteration), or show it
//! keeping its own order, the ranks of the sibling groups vote in the place a simulated run's
//! programs do: the other replicas of a stage (the groups of the same description and size,
//! other members), each of which made the two calls at the same seqs, in an order. More of them
//! one way than the other decide; a tie decides nothing, and is told.

use super::lanes::{self, Lanes};
use super::seqs::Ctx;
use super::waits::{self, Stuck};
use super::{call_words, Reasons};
use crate::diagnose::order::{self, CallKey};
use crate::diagnose::ranks_phrase;
use crate::diagnose::solve::Solution;
use crate::fr::groups::Groups;
use crate::proto::types::Rank;
use crate::report::text::count;
use crate::scenario::RootCause;
use std::collections::{BTreeMap, BTreeSet};

/// One collective as the sibling vote matches it: its group, seq and signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    key: CallKey,
    seq: u64,
}

/// How the ranks of the sibling groups ordered two calls: how many made the first one first,
/// and how many the second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    first: u32,
    second: u32,
}

impl Tally {
    /// Whether more ranks made the second call first (None: a tie, or no rank made both).
    fn second_first(self) -> Option<bool> {
        (self.first != self.second).then_some(self.second > self.first)
    }
}

/// How the ranks outside `parties` that belong to `a`'s group or one of its siblings and to
/// `b`'s group or one of its siblings ordered their calls like `a` and like `b` (made at the
/// same seqs, with the same op, sizes and dtypes).
fn sibling_tally(ctx: &Ctx, a: Point, b: Point, parties: &[u32]) -> Tally {
    let (Some(ga), Some(gb)) = (
        ctx.groups.get(a.key.group as usize),
        ctx.groups.get(b.key.group as usize),
    ) else {
        return Tally::default();
    };
    // each rank's group among `b`'s and its siblings
    let mut in_b: BTreeMap<u32, u32> = BTreeMap::new();
    for h in std::iter::once(gb).chain(ctx.siblings(gb)) {
        for &m in &h.members {
            in_b.entry(m).or_insert(h.id);
        }
    }
    let mut t = Tally::default();
    let mut voted: BTreeSet<u32> = BTreeSet::new();
    for h in std::iter::once(ga).chain(ctx.siblings(ga)) {
        for &y in &h.members {
            let Some(&hb) = in_b.get(&y) else { continue };
            if hb == h.id || parties.binary_search(&y).is_ok() || voted.contains(&y) {
                continue;
            }
            let like = |g: u32, p: Point| {
                let l = ctx.lane(y, g)?;
                let i = l.calls.binary_search_by_key(&p.seq, |c| c.seq).ok()?;
                let c = l.calls[i];
                (lanes::sig(ctx.dumps, &c) == p.key.like).then_some(c.pos)
            };
            let (Some(pa), Some(pb)) = (like(h.id, a), like(hb, b)) else {
                continue;
            };
            voted.insert(y);
            if pa < pb {
                t.first += 1;
            } else {
                t.second += 1;
            }
        }
    }
    t
}

/// Where rank `x` is stuck: its head's place in its queue, its lanes and its stuck call.
fn head<'a>(ctx: &'a Ctx, stuck: &'a [Stuck], x: u32) -> Option<(usize, &'a Lanes, &'a Stuck)> {
    let s = waits::of_rank(stuck, x)?;
    let lanes = &ctx.lanes[ctx.dump(x)?];
    Some((s.call.pos as usize, lanes, s))
}

/// The ranks of cycle `ranks` (sorted) whose call order deviates, told in `reasons`; a tie of
/// the sibling groups that left the cycle a deadlock is told as its reason.
pub(super) fn inverted(
    ctx: &Ctx,
    groups: &Groups,
    stuck: &[Stuck],
    solved: &Solution,
    ranks: &[u32],
    reasons: &mut Reasons,
) -> Vec<u32> {
    let point = |lanes: &Lanes, s: &Stuck, pos: usize| {
        (!s.p2p).then(|| Point {
            key: lanes.key(ctx.dumps, pos),
            seq: s.call.seq,
        })
    };
    let mut tallies: BTreeMap<(Point, Point), Tally> = BTreeMap::new();
    let mut votes: Vec<(u32, order::Votes)> = Vec::new();
    // the ranks whose own history shows them deviating; the sibling tally that shows each other
    // one deviating (its head, the awaited call); the ties
    let mut by_history: BTreeSet<u32> = BTreeSet::new();
    let mut by_siblings: BTreeMap<u32, (Point, Point, Tally)> = BTreeMap::new();
    let mut ties: Vec<(Point, Point, Tally)> = Vec::new();
    for &x in ranks {
        let mut v = order::Votes::default();
        if let Some((pos, lanes, sx)) = head(ctx, stuck, x) {
            let history: Vec<CallKey> = (0..pos).map(|i| lanes.key(ctx.dumps, i)).collect();
            for e in solved.graph().edges().iter().filter(|e| e.to == x) {
                if ranks.binary_search(&e.from).is_err() {
                    continue;
                }
                let Some((ppos, plane, sp)) = head(ctx, stuck, e.from) else {
                    continue;
                };
                let (mine, theirs) = (lanes.key(ctx.dumps, pos), plane.key(ctx.dumps, ppos));
                let own = order::deviates(&history, mine, theirs);
                if own == Some(true) {
                    by_history.insert(x);
                }
                // the siblings vote in the place of programs: did more of them make the
                // awaited call first?
                let siblings = match (own, point(lanes, sx, pos), point(plane, sp, ppos)) {
                    (Some(true), ..) | (_, None, _) | (_, _, None) => None,
                    (_, Some(a), Some(b)) if a.key.group != b.key.group => {
                        let t = *tallies
                            .entry((a, b))
                            .or_insert_with(|| sibling_tally(ctx, a, b, ranks));
                        match t.second_first() {
                            Some(true) => {
                                by_siblings.entry(x).or_insert((a, b, t));
                            }
                            None if t.first > 0 => ties.push((a, b, t)),
                            _ => {}
                        }
                        t.second_first()
                    }
                    _ => None,
                };
                v.add(order::verdict(own, siblings));
            }
        }
        votes.push((x, v));
    }
    let dev = order::deviants(&votes);
    for &x in &dev {
        let Some((pos, lanes, s)) = head(ctx, stuck, x) else {
            continue;
        };
        let waiting: Vec<u32> = solved
            .graph()
            .edges()
            .iter()
            .filter(|e| e.to == x && ranks.binary_search(&e.from).is_ok())
            .map(|e| e.from)
            .collect();
        let c = lanes.call(pos);
        let mine = call_words(ctx, groups, s.group, &c, s.p2p, true);
        let text = match by_siblings.get(&x).filter(|_| !by_history.contains(&x)) {
            Some((_, b, t)) => format!(
                "rank {x} called {mine} first, where {} wait{} for it in {}, which the ranks of \
                 the sibling groups (the same descriptions and sizes, other members) made first \
                 ({} did, {} made the other first): a call order that differs from the others'",
                ranks_phrase(&waiting),
                if waiting.len() == 1 { "s" } else { "" },
                point_words(ctx, groups, stuck, ranks, *b),
                count(t.second as usize, "rank"),
                t.first
            ),
            None => format!(
                "rank {x} called {mine} first, where {} wait{} for it in another group's call \
                 that it made first in its earlier iterations, as they do: a call order that \
                 differs from the others'",
                ranks_phrase(&waiting),
                if waiting.len() == 1 { "s" } else { "" },
            ),
        };
        reasons.tell(&RootCause::Mismatch(Rank(x)), || text);
    }
    if let Some((a, b, t)) = ties.first().filter(|_| dev.is_empty()) {
        let deadlock = RootCause::deadlock(ranks.iter().map(|&x| Rank(x)).collect());
        let text = format!(
            "the ranks of the sibling groups tie on the order: {} made {} first, as many made \
             {} first",
            count(t.first as usize, "rank"),
            point_words(ctx, groups, stuck, ranks, *a),
            point_words(ctx, groups, stuck, ranks, *b)
        );
        reasons.tell(&deadlock, || text);
    }
    dev
}

/// The call at `p`, as a rank of the cycle that sits in it made it.
fn point_words(ctx: &Ctx, groups: &Groups, stuck: &[Stuck], ranks: &[u32], p: Point) -> String {
    ranks
        .iter()
        .filter_map(|&r| head(ctx, stuck, r))
        .find(|(pos, l, s)| !s.p2p && s.call.seq == p.seq && l.key(ctx.dumps, *pos) == p.key)
        .map(|(pos, l, s)| call_words(ctx, groups, s.group, &l.call(pos), false, false))
        .unwrap_or_else(|| {
            format!(
                "#{} of {}",
                p.seq,
                groups.list[p.key.group as usize].label()
            )
        })
}
