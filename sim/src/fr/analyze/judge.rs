//! One group's calls side by side, seq by seq, and its earliest divergence.

use super::lanes::{self, Call, Lane};
use super::seqs::{At, Ctx, Divergence, DivergenceKind, GroupScan, Row};
use super::verdict::{judge_absent, judge_params, judge_site};
use crate::diagnose::ranks_phrase;
use crate::fr::groups::Group;
use crate::scenario::RootCause;

/// The distinct calls at one seq, each with the ranks that made it.
type Variants = Vec<(Call, Vec<u32>)>;

/// The statuses of every member at `s`, advancing the cursors.
fn statuses(member_lanes: &[Option<&Lane>], s: u64, pos: &mut [usize], out: &mut Vec<At>) {
    out.clear();
    for (i, lane) in member_lanes.iter().enumerate() {
        let Some(lane) = lane else {
            out.push(At::NoDump);
            continue;
        };
        let calls = &lane.calls;
        while pos[i] < calls.len() && calls[pos[i]].seq < s {
            pos[i] += 1;
        }
        let at = if pos[i] < calls.len() && calls[pos[i]].seq == s {
            At::Has(pos[i])
        } else if pos[i] < calls.len() || lane.enqueued.is_some_and(|e| e >= s as i64) {
            // a later call of the group proves this one was issued
            At::Overwritten
        } else {
            At::NotYet
        };
        out.push(at);
    }
}

/// The sorted union of `a` (sorted, distinct) and `b` (increasing) into `out`.
fn merge(a: &[u64], b: impl Iterator<Item = u64>, out: &mut Vec<u64>) {
    out.clear();
    let mut i = 0;
    for x in b {
        while i < a.len() && a[i] < x {
            out.push(a[i]);
            i += 1;
        }
        if i < a.len() && a[i] == x {
            i += 1;
        }
        if out.last() != Some(&x) {
            out.push(x);
        }
    }
    out.extend_from_slice(&a[i..]);
}

/// Every seq some member issued and those some member completed (both sorted), and the
/// highest seq some member left. Each lane is sorted and members' lanes mostly alike, so they
/// are merged one by one.
fn issued_seqs(member_lanes: &[Option<&Lane>]) -> (Vec<u64>, Vec<u64>, Option<u64>) {
    let mut seqs: Vec<u64> = Vec::new();
    let mut completed: Vec<u64> = Vec::new();
    let mut merged: Vec<u64> = Vec::new();
    let mut max_left: Option<u64> = None;
    for l in member_lanes.iter().flatten() {
        if !l.calls.iter().map(|c| c.seq).eq(seqs.iter().copied()) {
            merge(&seqs, l.calls.iter().map(|c| c.seq), &mut merged);
            std::mem::swap(&mut seqs, &mut merged);
        }
        let done = l.calls.iter().filter(|c| c.completed()).map(|c| c.seq);
        if !done.clone().eq(completed.iter().copied()) {
            merge(&completed, done, &mut merged);
            std::mem::swap(&mut completed, &mut merged);
        }
        if let Some(c) = l.calls.iter().rev().find(|c| c.left()) {
            max_left = max_left.max(Some(c.seq));
        }
    }
    (seqs, completed, max_left)
}

/// One seq across the members: its row, the distinct calls made at it and the members whose
/// records show they have not issued it yet.
struct SeqView {
    row: Row,
    /// The distinct calls with the ranks that made each, when the members' calls differ; empty
    /// when every member that issued it issued it alike (most seqs of a job: nothing is
    /// gathered for them).
    variants: Variants,
    not_yet: Vec<u32>,
}

impl SeqView {
    /// The members that issued the call, variant by variant.
    fn issued(&self, g: &Group, at: &[At]) -> Vec<u32> {
        if self.variants.is_empty() {
            has(g, at).collect()
        } else {
            self.variants
                .iter()
                .flat_map(|(_, r)| r.iter().copied())
                .collect()
        }
    }
}

/// The members with a call at the seq `at` describes.
fn has<'a>(g: &'a Group, at: &'a [At]) -> impl Iterator<Item = u32> + 'a {
    (at.iter().zip(&g.members))
        .filter(|(a, _)| matches!(a, At::Has(_)))
        .map(|(_, &m)| m)
}

/// The members' calls at `s` (their statuses in `at`), or None when no member's record of it
/// is left.
fn view_seq(
    ctx: &Ctx,
    g: &Group,
    member_lanes: &[Option<&Lane>],
    at: &[At],
    s: u64,
) -> Option<SeqView> {
    let mut rep: Option<Call> = None;
    let mut start = u64::MAX;
    let (mut called, mut left) = (0u32, 0u32);
    let mut odd = false;
    let mut not_yet: Vec<u32> = Vec::new();
    for (i, a) in at.iter().enumerate() {
        match *a {
            At::Has(k) => {
                let Some(lane) = member_lanes[i] else {
                    continue;
                };
                let c = lane.calls[k];
                called += 1;
                left += u32::from(c.left());
                start = start.min(c.time_ns);
                match rep {
                    None => rep = Some(c),
                    // the common case: every call alike, compared with the first only
                    Some(r) => odd = odd || lanes::differs(ctx.dumps, &r, &c).is_some(),
                }
            }
            At::NotYet => not_yet.push(g.members[i]),
            _ => {}
        }
    }
    let rep = rep?;
    // a member whose records begin after this call was issued elsewhere cannot tell
    not_yet.retain(|&m| {
        ctx.dump(m)
            .is_some_and(|d| ctx.oldest_ns[d].is_some_and(|o| o <= start))
    });
    Some(SeqView {
        row: Row {
            seq: s,
            call: rep,
            start_ns: start,
            called,
            left,
            members: g.members.len() as u32,
        },
        variants: if odd {
            variants(ctx, g, member_lanes, at)
        } else {
            Vec::new()
        },
        not_yet,
    })
}

/// The distinct calls of the members at one seq, each with the ranks that made it (in the
/// order of the members).
fn variants(ctx: &Ctx, g: &Group, member_lanes: &[Option<&Lane>], at: &[At]) -> Variants {
    let mut variants: Variants = Vec::new();
    for (i, a) in at.iter().enumerate() {
        let At::Has(k) = *a else { continue };
        let Some(c) = member_lanes[i].map(|l| l.calls[k]) else {
            continue;
        };
        let m = g.members[i];
        match variants
            .iter_mut()
            .find(|(v, _)| lanes::differs(ctx.dumps, v, &c).is_none())
        {
            Some((_, rs)) => rs.push(m),
            None => variants.push((c, vec![m])),
        }
    }
    variants
}

/// The call sites of the members' calls at one seq (calls without frames left out), when
/// there is more than one (else none: most seqs come from one site, found without gathering).
fn site_variants(g: &Group, member_lanes: &[Option<&Lane>], at: &[At]) -> Variants {
    let site = |(i, a): (usize, &At)| match *a {
        At::Has(k) => member_lanes[i].map(|l| l.calls[k]).filter(|c| c.site != 0),
        _ => None,
    };
    let mut seen = at.iter().enumerate().filter_map(site).map(|c| c.site);
    let first = seen.next();
    if seen.all(|x| Some(x) == first) {
        return Vec::new();
    }
    let mut sites: Variants = Vec::new();
    for (i, a) in at.iter().enumerate() {
        let Some(c) = site((i, a)) else { continue };
        match sites.iter_mut().find(|(v, _)| v.site == c.site) {
            Some((_, rs)) => rs.push(g.members[i]),
            None => sites.push((c, vec![g.members[i]])),
        }
    }
    sites
}

/// The first seq at which each kind of disagreement shows in a group.
#[derive(Default)]
struct Firsts {
    /// Calls with other parameters.
    params: Option<(u64, Variants)>,
    /// Alike calls from other call sites.
    site: Option<(u64, Variants)>,
    /// (seq, its start, the members that issued it, those whose records show they did not).
    absent: Option<(u64, u64, Vec<u32>, Vec<u32>)>,
    /// The first seq some member has not left (or not issued).
    frontier: Option<u64>,
}

impl Firsts {
    fn note(
        &mut self,
        v: &SeqView,
        issued: impl FnOnce() -> Vec<u32>,
        sites: impl FnOnce() -> Variants,
    ) {
        let s = v.row.seq;
        if v.variants.len() > 1 && self.params.is_none() {
            self.params = Some((s, v.variants.clone()));
        }
        if v.variants.is_empty() && self.site.is_none() {
            let sites = sites();
            if sites.len() > 1 {
                self.site = Some((s, sites));
            }
        }
        if !v.not_yet.is_empty() && self.absent.is_none() {
            self.absent = Some((s, v.row.start_ns, issued(), v.not_yet.clone()));
        }
        if self.frontier.is_none() && (v.row.left < v.row.called || !v.not_yet.is_empty()) {
            self.frontier = Some(s);
        }
    }

    /// The earliest of the disagreements, judged; a call-site one only for a group that
    /// stalled (`stalled`), and after any other at the same seq.
    fn judge(self, ctx: &Ctx, g: &Group, rows: &[Row], stalled: bool) -> Option<Divergence> {
        let mut cands: Vec<Divergence> = Vec::new();
        if let Some((s, vs)) = self.params {
            cands.push(judge_params(ctx, g, s, &vs, rows));
        }
        if let Some((s, vs)) = self.site.filter(|_| stalled) {
            cands.extend(judge_site(ctx, g, s, &vs, rows));
        }
        if let Some((s, start, issued, not_yet)) = self.absent {
            cands.push(judge_absent(ctx, g, s, start, &issued, &not_yet));
        }
        cands.sort_by_key(|d| (d.seq, d.kind == DivergenceKind::CallSite));
        cands.into_iter().next()
    }
}

/// Scans group `g`: its rows, and the earliest divergence with its verdict.
pub fn scan(ctx: &Ctx, g: &Group) -> GroupScan {
    let member_lanes: Vec<Option<&Lane>> = g.members.iter().map(|&m| ctx.lane(m, g.id)).collect();
    let (seqs, completed, max_left) = issued_seqs(&member_lanes);
    let mut out = GroupScan {
        last_seq: seqs.last().copied(),
        max_left,
        completed,
        ..GroupScan::default()
    };
    out.rows.reserve_exact(seqs.len());
    let mut pos = vec![0usize; g.members.len()];
    let mut at: Vec<At> = Vec::with_capacity(g.members.len());
    let mut firsts = Firsts::default();
    let has_frames = ctx.dumps.iter().any(|d| d.has_frames);
    for &s in &seqs {
        statuses(&member_lanes, s, &mut pos, &mut at);
        let Some(v) = view_seq(ctx, g, &member_lanes, &at, s) else {
            continue;
        };
        firsts.note(
            &v,
            || v.issued(g, &at),
            || {
                if has_frames {
                    site_variants(g, &member_lanes, &at)
                } else {
                    Vec::new()
                }
            },
        );
        out.rows.push(v.row);
    }
    let frontier = firsts.frontier;
    let has_no_dump = g.members.iter().any(|&m| ctx.dump(m).is_none());
    let stalled = firsts.absent.is_some() || frontier.is_some() || has_no_dump;
    let div = firsts.judge(ctx, g, &out.rows, stalled);
    out.divergence = blame_missing(ctx, g, &out, div, frontier);
    out
}

/// The divergence once members without a dump are counted: they are the victims of a decided
/// one, or else the cause (`missing:R`) at the group's frontier — unless the group's last call
/// completed on the device, which proves every member took part in it.
fn blame_missing(
    ctx: &Ctx,
    g: &Group,
    out: &GroupScan,
    mut div: Option<Divergence>,
    frontier: Option<u64>,
) -> Option<Divergence> {
    let missing: Vec<u32> = g
        .members
        .iter()
        .copied()
        .filter(|&m| ctx.dump(m).is_none())
        .collect();
    let proved = frontier.is_none()
        && out.last_seq.is_some_and(|s| {
            g.members.iter().any(|&m| {
                ctx.lane(m, g.id)
                    .is_some_and(|l| l.calls.iter().any(|c| c.seq == s && c.completed()))
            })
        });
    if missing.is_empty() || proved {
        return div;
    }
    if let Some(d) = div.as_mut().filter(|d| d.decided()) {
        d.victims = missing;
        return div;
    }
    let s = frontier.or(out.last_seq).unwrap_or(0);
    if div.as_ref().is_some_and(|d| d.seq < s) {
        return div;
    }
    let row = out.rows.iter().find(|r| r.seq == s);
    let agree: Vec<u32> = g
        .members
        .iter()
        .copied()
        // (missing is sorted, as the members are)
        .filter(|m| missing.binary_search(m).is_err())
        .collect();
    let text = format!(
        "{} of {} left no dump; the others stop at {} #{s}, which cannot complete without {}",
        ranks_phrase(&missing),
        g.label(),
        row.map_or("call", |r| lanes::op_name(ctx.dumps, &r.call)),
        if missing.len() == 1 { "it" } else { "them" }
    );
    Some(Divergence {
        group: g.id,
        seq: s,
        at_ns: row.map_or(0, |r| r.start_ns).saturating_sub(ctx.t0),
        kind: DivergenceKind::MissingDump,
        causes: missing
            .iter()
            .map(|&m| RootCause::missing(vec![crate::proto::types::Rank(m)]))
            .collect(),
        culprits: missing,
        agree,
        text,
        undecided: None,
        victims: Vec::new(),
    })
}
