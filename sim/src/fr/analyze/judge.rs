//! One group's calls side by side, seq by seq, and its earliest divergence.

use super::lanes::{self, Call, Lane};
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
    /// `lanes[dump][group]`.
    pub lanes: &'a [Vec<Lane>],
    /// Dump index of each rank of the world.
    pub dump_of: &'a [Option<u32>],
    /// Each dump's oldest record time (None: no records).
    pub oldest_ns: &'a [Option<u64>],
    /// Each dump's newest record time.
    pub newest_ns: &'a [u64],
    /// Each dump has a call it has not left, in any group.
    pub busy: &'a [bool],
    pub t0: u64,
}

impl Ctx<'_> {
    fn lane(&self, rank: u32, g: u32) -> Option<&Lane> {
        let d = (*self.dump_of.get(rank as usize)?)?;
        Some(&self.lanes[d as usize][g as usize])
    }

    fn dump(&self, rank: u32) -> Option<usize> {
        self.dump_of
            .get(rank as usize)
            .copied()
            .flatten()
            .map(|d| d as usize)
    }

    /// Same parameters and (when both are known) the same call site.
    fn same(&self, a: &Call, b: &Call) -> bool {
        lanes::differs(self.dumps, a, b).is_none()
            && match (lanes::site(self.dumps, a), lanes::site(self.dumps, b)) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            }
    }
}

/// The distinct calls at one seq, each with the ranks that made it.
type Variants = Vec<(Call, Vec<u32>)>;

/// The statuses of every member at `s`, advancing the cursors.
fn statuses(ctx: &Ctx, g: &Group, s: u64, pos: &mut [usize], out: &mut Vec<At>) {
    out.clear();
    for (i, &m) in g.members.iter().enumerate() {
        let Some(lane) = ctx.lane(m, g.id) else {
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

/// Scans group `g`: its rows, and the earliest divergence with its verdict.
pub fn scan(ctx: &Ctx, g: &Group) -> GroupScan {
    let n = g.members.len();
    let mut seqs: Vec<u64> = Vec::new();
    for &m in &g.members {
        if let Some(l) = ctx.lane(m, g.id) {
            seqs.extend(l.calls.iter().map(|c| c.seq));
        }
    }
    seqs.sort_unstable();
    seqs.dedup();
    let mut out = GroupScan {
        last_seq: seqs.last().copied(),
        ..GroupScan::default()
    };
    let mut completed: Vec<u64> = Vec::new();
    for &m in &g.members {
        let Some(l) = ctx.lane(m, g.id) else { continue };
        for c in &l.calls {
            if c.left {
                out.max_left = out.max_left.max(Some(c.seq));
            }
            if c.completed {
                completed.push(c.seq);
            }
        }
    }
    completed.sort_unstable();
    completed.dedup();
    out.completed = completed;
    let mut pos = vec![0usize; n];
    let mut at: Vec<At> = Vec::with_capacity(n);
    let mut first_params: Option<(u64, Variants)> = None;
    let mut first_site: Option<(u64, Variants)> = None;
    let mut first_absent: Option<(u64, u64, Vec<u32>, Vec<u32>)> = None;
    let mut frontier: Option<u64> = None;
    let has_no_dump = g.members.iter().any(|&m| ctx.dump(m).is_none());
    for &s in &seqs {
        statuses(ctx, g, s, &mut pos, &mut at);
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
                    let Some(lane) = ctx.lane(m, g.id) else {
                        continue;
                    };
                    let c = lane.calls[k];
                    called += 1;
                    left += u32::from(c.left);
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
                let Some(c) = ctx.lane(m, g.id).map(|l| l.calls[k]) else {
                    continue;
                };
                let Some(site) = lanes::site(ctx.dumps, &c) else {
                    continue;
                };
                match sites
                    .iter_mut()
                    .find(|(v, _)| lanes::site(ctx.dumps, v) == Some(site))
                {
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
                    .is_some_and(|l| l.calls.iter().any(|c| c.seq == s && c.completed))
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
                    .filter(|m| !missing.contains(m))
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

/// `culprit`'s calls from `s` on, against `right`'s: Some(true) when the culprit's calls are
/// the right ones one seq later (an extra call), Some(false) when one seq earlier (a skipped
/// call).
fn shift(ctx: &Ctx, g: &Group, s: u64, culprit: u32, right: u32) -> Option<bool> {
    let (lc, lr) = (ctx.lane(culprit, g.id)?, ctx.lane(right, g.id)?);
    let at = |l: &Lane, q: u64| l.calls.iter().find(|c| c.seq == q).copied();
    let agree = |a: Option<Call>, b: Option<Call>| match (a, b) {
        (Some(a), Some(b)) => Some(ctx.same(&a, &b)),
        _ => None,
    };
    // an extra call: culprit(s+1) = right(s)
    if agree(at(lc, s + 1), at(lr, s)) == Some(true)
        && agree(at(lc, s + 2), at(lr, s + 1)) != Some(false)
    {
        return Some(true);
    }
    if agree(at(lc, s), at(lr, s + 1)) == Some(true)
        && agree(at(lc, s + 1), at(lr, s + 2)) != Some(false)
    {
        return Some(false);
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
    skipped.then_some(false)
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

/// Ranks issued #s with different parameters: the majority is right; on a tie, the call that
/// also appears elsewhere in the group's history.
fn judge_params(ctx: &Ctx, g: &Group, s: u64, vs: &[(Call, Vec<u32>)], rows: &[Row]) -> Divergence {
    let start = rows.iter().find(|r| r.seq == s).map_or(0, |r| r.start_ns);
    let max = vs.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let top: Vec<usize> = (0..vs.len()).filter(|&i| vs[i].1.len() == max).collect();
    let right = if top.len() == 1 {
        Some(top[0])
    } else {
        let usual_ones: Vec<usize> = (0..vs.len())
            .filter(|&i| usual(ctx, g, s, &vs[i].0))
            .collect();
        (usual_ones.len() == 1).then(|| usual_ones[0])
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
            "at {} #{s} of {} {}: no majority, and no call of the group's history tells which \
             is right",
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
            match shift(ctx, g, s, r, rr[0]) {
                Some(true) => {
                    kind = DivergenceKind::ExtraCall;
                    causes.push(RootCause::Mismatch(rank(r)));
                }
                Some(false) => {
                    kind = DivergenceKind::SkippedCall;
                    causes.push(RootCause::Skipped(rank(r)));
                }
                None => causes.push(RootCause::Mismatch(rank(r))),
            }
        }
        let shifted = match kind {
            DivergenceKind::ExtraCall => {
                ": an extra call (its later calls are the others' calls one seq later)"
            }
            DivergenceKind::SkippedCall => {
                ": it skipped a call (its calls are the others' calls one seq earlier)"
            }
            _ => "",
        };
        texts.push(format!(
            "{} called {} with {how} (as {} called it){shifted}",
            ranks_phrase(ranks),
            call_phrase(ctx, g, s, c),
            ranks_phrase(rr)
        ));
    }
    culprits.sort_unstable();
    causes.sort();
    causes.dedup();
    Divergence {
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
    }
}

/// Same parameters at #s from different call sites: a shifted call that matched by chance.
/// Named only when the minority's site never appears in the majority's records.
fn judge_site(
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
            ctx.lane(m, g.id).is_some_and(|l| {
                l.calls
                    .iter()
                    .any(|x| lanes::site(ctx.dumps, x) == Some(site))
            })
        });
        if seen {
            return None;
        }
        for &r in ranks {
            culprits.push(r);
            match shift(ctx, g, s, r, rr[0]) {
                Some(false) => {
                    kind = DivergenceKind::SkippedCall;
                    causes.push(RootCause::Skipped(rank(r)));
                }
                Some(true) => {
                    kind = DivergenceKind::ExtraCall;
                    causes.push(RootCause::Mismatch(rank(r)));
                }
                None => causes.push(RootCause::Mismatch(rank(r))),
            }
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
fn judge_absent(
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
        .filter(|&m| ctx.dump(m).is_some_and(|d| !ctx.busy[d]))
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
        Ordering::Greater => {
            let mut causes = Vec::new();
            let mut kind = DivergenceKind::Stopped;
            let mut moved = Vec::new();
            for &m in &idle {
                let d = ctx.dump(m).unwrap_or(0);
                if ctx.newest_ns[d] > start {
                    kind = DivergenceKind::SkippedCall;
                    moved.push(m);
                    causes.push(RootCause::Skipped(rank(m)));
                } else {
                    causes.push(RootCause::Hung(rank(m)));
                }
            }
            let text = if moved.is_empty() {
                format!(
                    "{} issued {what}; {} never issued it: {} last call completed and {} \
                     issued nothing after (stopped outside collectives)",
                    ranks_phrase(issued),
                    ranks_phrase(&idle),
                    if idle.len() == 1 { "its" } else { "their" },
                    if idle.len() == 1 { "it" } else { "they" }
                )
            } else {
                format!(
                    "{} issued {what}; {} never issued it and went on with later calls: {} \
                     skipped it",
                    ranks_phrase(issued),
                    ranks_phrase(&idle),
                    if idle.len() == 1 { "it" } else { "they" }
                )
            };
            Divergence {
                kind,
                culprits: idle.clone(),
                agree: issued.to_vec(),
                causes,
                text,
                ..base
            }
        }
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
                kind: DivergenceKind::ExtraCall,
                causes: vec![RootCause::Undecided],
                text: reason.clone(),
                undecided: Some(reason),
                ..base
            }
        }
    }
}
