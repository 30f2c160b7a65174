//! One group's calls side by side, seq by seq, and its earliest divergence.

use super::lanes::{self, Call, Lane, Lanes};
use super::verdict::{judge_absent, judge_params, judge_site};
use crate::diagnose::ranks_phrase;
use crate::fr::groups::Group;
use crate::fr::model::Dump;
use crate::scenario::RootCause;
use serde::Serialize;

/// What a member shows at one seq of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Its call (index into its lane).
    Has(usize),
    /// It left no dump.
    NoDump,
    /// It issued the call, but the record is gone (ring buffer, or `pg_status` says so).
    Overwritten,
    /// Its records cover that time and it has not issued the call.
    NotYet,
    /// Its records do not reach back that far.
    Unknown,
}

/// How the ranks of a group disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// Same seq, other op, sizes or dtypes.
    Parameters,
    /// A rank issued a call its peers did not.
    ExtraCall,
    /// A rank went past a call its peers issued.
    SkippedCall,
    /// A rank stopped issuing calls.
    Stopped,
    /// Same parameters from another call site: a shifted call that happened to match.
    CallSite,
    /// Members have not issued the call because they wait in another one.
    WaitsElsewhere,
    /// A member left no dump.
    MissingDump,
}

/// The earliest point where a group's ranks disagree, and who is wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    pub group: u32,
    pub seq: u64,
    /// Wall-clock time of the first call at that seq, relative to the first record.
    pub at_ns: u64,
    pub kind: DivergenceKind,
    /// The ranks judged wrong.
    pub culprits: Vec<u32>,
    /// The ranks that agree with each other.
    pub agree: Vec<u32>,
    #[serde(skip)]
    pub causes: Vec<RootCause>,
    pub text: String,
    /// Why no rank can be named, when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
    /// Members without a dump that this divergence explains (gloo aborts the rank that
    /// receives a mismatched message, for one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub victims: Vec<u32>,
}

impl Divergence {
    pub fn decided(&self) -> bool {
        !self.causes.is_empty() && self.undecided.is_none()
    }
}

/// One collective of a group, across ranks (for the report's `ops`).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub seq: u64,
    /// A call of it (for op, sizes).
    pub call: Call,
    pub start_ns: u64,
    pub called: u32,
    pub left: u32,
    pub members: u32,
}

/// The result of scanning one group.
#[derive(Clone, Debug, Default)]
pub struct GroupScan {
    pub rows: Vec<Row>,
    pub divergence: Option<Divergence>,
    /// The highest seq any member issued.
    pub last_seq: Option<u64>,
    /// The highest seq some member left.
    pub max_left: Option<u64>,
    /// Seqs some member completed on the device (sorted).
    pub completed: Vec<u64>,
}

impl GroupScan {
    /// Whether #s is proved complete for every member: a member completed it on the device, or
    /// left a later call.
    pub fn passed(&self, s: u64) -> bool {
        self.max_left.is_some_and(|m| m > s) || self.completed.binary_search(&s).is_ok()
    }
}

/// What the scan needs to know of every rank.
pub struct Ctx<'a> {
    pub dumps: &'a [Dump],
    /// The lanes of each dump.
    pub lanes: &'a [Lanes],
    /// Dump index of each rank of the world.
    pub dump_of: &'a [Option<u32>],
    /// Each dump's oldest record time (None: no records).
    pub oldest_ns: &'a [Option<u64>],
    /// Each dump's newest record time.
    pub newest_ns: &'a [u64],
    pub t0: u64,
}

impl Ctx<'_> {
    pub(super) fn lane(&self, rank: u32, g: u32) -> Option<&Lane> {
        let d = (*self.dump_of.get(rank as usize)?)?;
        Some(&self.lanes[d as usize].groups[g as usize])
    }

    /// Whether dump `d` has a call it has not left (or one that failed), in any group.
    pub(super) fn busy(&self, d: usize) -> bool {
        self.lanes[d].busy()
    }

    pub(super) fn dump(&self, rank: u32) -> Option<usize> {
        self.dump_of
            .get(rank as usize)
            .copied()
            .flatten()
            .map(|d| d as usize)
    }

    /// Same parameters and (when both are known) the same call site.
    pub(super) fn same(&self, a: &Call, b: &Call) -> bool {
        lanes::differs(self.dumps, a, b).is_none()
            && (a.site == 0 || b.site == 0 || a.site == b.site)
    }
}

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

/// Scans group `g`: its rows, and the earliest divergence with its verdict.
pub fn scan(ctx: &Ctx, g: &Group) -> GroupScan {
    let n = g.members.len();
    let member_lanes: Vec<Option<&Lane>> = g.members.iter().map(|&m| ctx.lane(m, g.id)).collect();
    // every seq a member issued, and those some member completed: each lane is sorted and
    // members' lanes mostly alike, so they are merged one by one
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
    let mut out = GroupScan {
        last_seq: seqs.last().copied(),
        max_left,
        completed,
        ..GroupScan::default()
    };
    let mut pos = vec![0usize; n];
    let mut at: Vec<At> = Vec::with_capacity(n);
    let mut first_params: Option<(u64, Variants)> = None;
    let mut first_site: Option<(u64, Variants)> = None;
    let mut first_absent: Option<(u64, u64, Vec<u32>, Vec<u32>)> = None;
    let mut frontier: Option<u64> = None;
    let has_no_dump = g.members.iter().any(|&m| ctx.dump(m).is_none());
    for &s in &seqs {
        statuses(&member_lanes, s, &mut pos, &mut at);
        let mut rep: Option<Call> = None;
        let mut start = u64::MAX;
        let (mut called, mut left) = (0u32, 0u32);
        let mut variants: Vec<(Call, Vec<u32>)> = Vec::new();
        let mut odd = false;
        let mut not_yet: Vec<u32> = Vec::new();
        for (i, a) in at.iter().enumerate() {
            let m = g.members[i];
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
                        None => {
                            rep = Some(c);
                            variants.push((c, vec![m]));
                        }
                        Some(r) => {
                            if !odd && lanes::differs(ctx.dumps, &r, &c).is_none() {
                                variants[0].1.push(m);
                            } else {
                                odd = true;
                                match variants
                                    .iter_mut()
                                    .find(|(v, _)| lanes::differs(ctx.dumps, v, &c).is_none())
                                {
                                    Some((_, rs)) => rs.push(m),
                                    None => variants.push((c, vec![m])),
                                }
                            }
                        }
                    }
                }
                At::NotYet => not_yet.push(m),
                _ => {}
            }
        }
        let Some(rep) = rep else { continue };
        out.rows.push(Row {
            seq: s,
            call: rep,
            start_ns: start,
            called,
            left,
            members: n as u32,
        });
        // a member whose records begin after this call was issued elsewhere cannot tell
        not_yet.retain(|&m| {
            ctx.dump(m)
                .is_some_and(|d| ctx.oldest_ns[d].is_some_and(|o| o <= start))
        });
        if variants.len() > 1 && first_params.is_none() {
            first_params = Some((s, variants.clone()));
        }
        if variants.len() == 1 && first_site.is_none() && ctx.dumps.iter().any(|d| d.has_frames) {
            let mut sites: Vec<(Call, Vec<u32>)> = Vec::new();
            for (i, a) in at.iter().enumerate() {
                let At::Has(k) = *a else { continue };
                let m = g.members[i];
                let Some(c) = member_lanes[i].map(|l| l.calls[k]) else {
                    continue;
                };
                if c.site == 0 {
                    continue;
                }
                match sites.iter_mut().find(|(v, _)| v.site == c.site) {
                    Some((_, rs)) => rs.push(m),
                    None => sites.push((c, vec![m])),
                }
            }
            if sites.len() > 1 {
                first_site = Some((s, sites));
            }
        }
        let issued: Vec<u32> = variants
            .iter()
            .flat_map(|(_, r)| r.iter().copied())
            .collect();
        if !not_yet.is_empty() && first_absent.is_none() {
            first_absent = Some((s, start, issued.clone(), not_yet.clone()));
        }
        if frontier.is_none() && (left < called || !not_yet.is_empty()) {
            frontier = Some(s);
        }
    }
    let stalled = first_absent.is_some() || frontier.is_some() || has_no_dump;
    let mut cands: Vec<Divergence> = Vec::new();
    if let Some((s, vs)) = first_params {
        cands.push(judge_params(ctx, g, s, &vs, &out.rows));
    }
    if let Some((s, vs)) = first_site.filter(|_| stalled) {
        if let Some(d) = judge_site(ctx, g, s, &vs, &out.rows) {
            cands.push(d);
        }
    }
    if let Some((s, start, issued, not_yet)) = first_absent {
        cands.push(judge_absent(ctx, g, s, start, &issued, &not_yet));
    }
    cands.sort_by_key(|d| (d.seq, d.kind == DivergenceKind::CallSite));
    let mut div = cands.into_iter().next();
    let missing: Vec<u32> = g
        .members
        .iter()
        .copied()
        .filter(|&m| ctx.dump(m).is_none())
        .collect();
    // the group's last call completed on the device: every member took part in it
    let proved = frontier.is_none()
        && out.last_seq.is_some_and(|s| {
            g.members.iter().any(|&m| {
                ctx.lane(m, g.id)
                    .is_some_and(|l| l.calls.iter().any(|c| c.seq == s && c.completed()))
            })
        });
    if !missing.is_empty() && !proved {
        match div.as_mut() {
            Some(d) if d.decided() => d.victims = missing,
            _ => {
                let s = frontier.or(out.last_seq).unwrap_or(0);
                let start = out
                    .rows
                    .iter()
                    .find(|r| r.seq == s)
                    .map_or(0, |r| r.start_ns);
                let agree: Vec<u32> = g
                    .members
                    .iter()
                    .copied()
                    // (missing is sorted, as the members are)
                    .filter(|m| missing.binary_search(m).is_err())
                    .collect();
                let text = format!(
                    "{} of {} left no dump; the others stop at {} #{s}, which cannot complete \
                     without {}",
                    ranks_phrase(&missing),
                    g.label(),
                    out.rows
                        .iter()
                        .find(|r| r.seq == s)
                        .map_or("call", |r| lanes::op_name(ctx.dumps, &r.call)),
                    if missing.len() == 1 { "it" } else { "them" }
                );
                if div.as_ref().is_none_or(|d| d.seq >= s) {
                    div = Some(Divergence {
                        group: g.id,
                        seq: s,
                        at_ns: start.saturating_sub(ctx.t0),
                        kind: DivergenceKind::MissingDump,
                        culprits: missing.clone(),
                        agree,
                        causes: missing
                            .iter()
                            .map(|&m| RootCause::Missing(crate::proto::types::Rank(m)))
                            .collect(),
                        text,
                        undecided: None,
                        victims: Vec::new(),
                    });
                }
            }
        }
    }
    out.divergence = div;
    out
}
