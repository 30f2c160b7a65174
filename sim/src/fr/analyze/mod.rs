//! The diagnosis of a job from its dumps.
//!
//! Calls are matched per group: collectives by `collective_seq_id` ([`judge`] scans a group seq
//! by seq), point-to-point calls by (peer pair, order) ([`p2p`]). Each group's earliest
//! divergence is judged by the majority of its members, then by the history of the call (its
//! parameters and call site elsewhere in the group: `verdict`); then every rank stuck in a call
//! that cannot complete is put in a wait-for graph, solved by the diagnosis's one solver
//! ([`crate::diagnose::solve`]), to find what it is blocked on.

pub mod judge;
pub mod lanes;
pub mod p2p;
mod verdict;

use crate::diagnose::solve::WaitGraph;
use crate::diagnose::{ranks_phrase, Blocked, Cause, Diagnosis, EdgeKind, Via, WaitEdge};
use crate::fr::groups::{self, Groups};
use crate::fr::model::Dump;
use crate::scenario::{Outcome, RootCause};
pub use judge::{Divergence, DivergenceKind, GroupScan};
use lanes::{Call, Lane};
use std::collections::BTreeMap;

/// A rank stuck in a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Stuck {
    pub rank: u32,
    pub group: u32,
    pub call: Call,
    /// Members it cannot complete without.
    pub waiting_for: Vec<u32>,
    /// The rank has left the call (the watchdog retired it), yet it cannot have succeeded.
    pub failed: bool,
    /// A point-to-point call.
    pub p2p: bool,
    /// A send and its recv that move different sizes: the root cause (the end whose size the
    /// group's other messages do not have, or `undecided`) and what happened.
    pub mismatch: Option<(RootCause, String)>,
}

/// Everything the dumps tell.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The first record's wall-clock time (Unix epoch ns): times are relative to it.
    pub t0_ns: u64,
    /// The last record's time, relative.
    pub span_ns: u64,
    pub groups: Groups,
    /// Per group.
    pub scans: Vec<GroupScan>,
    /// The divergence of each group that has one, earliest first.
    pub divergences: Vec<Divergence>,
    pub stuck: Vec<Stuck>,
    pub diagnosis: Diagnosis,
    pub outcome: Outcome,
    pub undecided_reason: Option<String>,
    /// Member ranks without a dump.
    pub missing: Vec<u32>,
    pub notes: Vec<String>,
    pub lanes: Vec<Vec<Lane>>,
    pub dump_of: Vec<Option<u32>>,
}

impl Analysis {
    pub fn root_causes(&self) -> Vec<RootCause> {
        self.diagnosis.root_causes()
    }

    /// The lane of `rank` in group `g`.
    pub fn lane(&self, rank: u32, g: u32) -> Option<&Lane> {
        let d = (*self.dump_of.get(rank as usize)?)?;
        self.lanes.get(d as usize)?.get(g as usize)
    }
}

/// What a wait edge toward a member carries of its group's divergence.
///
/// Toward a member that left no dump and that the divergence names as missing: that rank alone,
/// beside the causes that are not missing ranks. Toward any other member: all of them. A
/// waiting rank's causes, the union over its edges, come out the same, but a job with many
/// ranks without a dump no longer gives each of its many edges the whole list (which grows
/// with the square of those ranks).
struct Toward<'a> {
    all: &'a [RootCause],
    missing: std::collections::BTreeSet<u32>,
    others: Vec<RootCause>,
}

impl<'a> Toward<'a> {
    fn new(causes: &'a [RootCause]) -> Toward<'a> {
        let mut missing = std::collections::BTreeSet::new();
        let mut others = Vec::new();
        for c in causes {
            match c {
                RootCause::Missing(m) => {
                    missing.insert(m.0);
                }
                c => others.push(c.clone()),
            }
        }
        Toward {
            all: causes,
            missing,
            others,
        }
    }

    /// The causes of an edge toward `m` (`no_dump`: it left none).
    fn causes(&self, m: u32, no_dump: bool) -> Vec<RootCause> {
        if no_dump && self.missing.len() > 1 && self.missing.contains(&m) {
            let mut v = self.others.clone();
            v.push(RootCause::Missing(r(m)));
            v
        } else {
            self.all.to_vec()
        }
    }
}

fn r(x: u32) -> crate::proto::types::Rank {
    crate::proto::types::Rank(x)
}

/// Analyzes the dumps of one job (sorted by rank, one per rank).
pub fn analyze(dumps: &[Dump]) -> Analysis {
    let groups = groups::infer(dumps);
    let mut notes = groups.notes.clone();
    let world = groups.world_size as usize;
    let lanes = lanes::build(dumps, &groups);
    let mut dump_of: Vec<Option<u32>> = vec![None; world];
    for (i, d) in dumps.iter().enumerate() {
        if let Some(slot) = dump_of.get_mut(d.rank as usize) {
            *slot = Some(i as u32);
        }
    }
    // each dump's oldest record time (None: no records; 0: none has a time) and newest
    let (oldest, newest): (Vec<Option<u64>>, Vec<u64>) = dumps
        .iter()
        .map(|d| {
            let (mut old, mut new) = (u64::MAX, 0u64);
            for r in &d.records {
                if r.time_ns > 0 {
                    old = old.min(r.time_ns);
                }
                new = new.max(r.time_ns);
            }
            let old = (!d.records.is_empty()).then_some(if old == u64::MAX { 0 } else { old });
            (old, new)
        })
        .unzip();
    let t0 = oldest
        .iter()
        .flatten()
        .copied()
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(0);
    let span = newest.iter().copied().max().unwrap_or(0).saturating_sub(t0);
    let busy: Vec<bool> = lanes
        .iter()
        .map(|ls| {
            ls.iter()
                .any(|l| l.calls.last().is_some_and(|c| !c.left) || l.p2p.iter().any(|c| !c.left))
        })
        .collect();
    let ctx = judge::Ctx {
        dumps,
        lanes: &lanes,
        dump_of: &dump_of,
        oldest_ns: &oldest,
        newest_ns: &newest,
        busy: &busy,
        t0,
    };
    let scans: Vec<GroupScan> = groups.list.iter().map(|g| judge::scan(&ctx, g)).collect();
    let mut in_a_group = vec![false; world];
    for &m in groups.list.iter().flat_map(|g| &g.members) {
        if let Some(x) = in_a_group.get_mut(m as usize) {
            *x = true;
        }
    }
    let missing: Vec<u32> = (0..world as u32)
        .filter(|&m| dump_of[m as usize].is_none() && in_a_group[m as usize])
        .collect();

    // the ranks stuck in calls, and the edges of the wait-for graph
    let mut stuck: Vec<Stuck> = Vec::new();
    for (gi, g) in groups.list.iter().enumerate() {
        // members' last calls mostly share a seq: who is absent there is worked out once
        let mut cache: BTreeMap<u64, Absent> = BTreeMap::new();
        for &m in &g.members {
            let Some(d) = dump_of[m as usize] else {
                continue;
            };
            let lane = &lanes[d as usize][gi];
            if let Some(c) = lane.calls.last() {
                let at = cache
                    .entry(c.seq)
                    .or_insert_with(|| absent(&ctx, &lanes, &scans[gi], g, c));
                let waiting_for = at.for_member(&ctx, m, c);
                if !waiting_for.is_empty() || !c.left {
                    stuck.push(Stuck {
                        rank: m,
                        group: gi as u32,
                        call: *c,
                        waiting_for: waiting_for.clone(),
                        failed: c.left,
                        p2p: false,
                        mismatch: None,
                    });
                }
            }
        }
    }
    stuck.extend(p2p::stuck(dumps, &groups, &lanes, &dump_of));
    stuck.sort_by_key(|s| (s.rank, s.call.time_ns, s.group));
    let mut waiter = vec![false; world];
    for s in &stuck {
        if !s.waiting_for.is_empty() {
            waiter[s.rank as usize] = true;
        }
    }
    let mut undecided_reasons: Vec<String> = Vec::new();
    let mut graph = WaitGraph::new(world);
    let toward: Vec<Toward> = scans
        .iter()
        .map(|sc| Toward::new(sc.divergence.as_ref().map_or(&[], |d| &d.causes)))
        .collect();
    for s in stuck.iter().filter(|s| !s.waiting_for.is_empty()) {
        let div = scans[s.group as usize]
            .divergence
            .as_ref()
            .filter(|d| d.seq <= s.call.seq && !s.p2p);
        for &m in &s.waiting_for {
            let peer_dump = dump_of.get(m as usize).copied().flatten();
            let elsewhere = waiter.get(m as usize).copied().unwrap_or(false)
                && of_rank(&stuck, m)
                    .iter()
                    .any(|o| o.group != s.group || s.p2p);
            let causes = if let Some((c, text)) = &s.mismatch {
                if *c == RootCause::Undecided && !undecided_reasons.contains(text) {
                    undecided_reasons.push(text.clone());
                }
                vec![c.clone()]
            } else if elsewhere {
                Vec::new()
            } else if div.is_some_and(|d| !d.causes.is_empty()) {
                toward[s.group as usize].causes(m, peer_dump.is_none())
            } else if peer_dump.is_none() {
                vec![RootCause::Missing(r(m))]
            } else if s.p2p {
                let pd = peer_dump.unwrap_or(0) as usize;
                if busy[pd] {
                    Vec::new()
                } else if newest[pd] > s.call.time_ns {
                    // the peer went on with later calls without this one
                    vec![RootCause::Skipped(r(m))]
                } else {
                    let d = &dumps[s.call.dump as usize];
                    let reason = format!(
                        "rank {} waits in {} and its peer, rank {m}, issued nothing after: with \
                         two parties the dumps cannot tell a missing call from an extra one",
                        s.rank,
                        d.profiling_name(&d.records[s.call.first as usize])
                    );
                    if !undecided_reasons.contains(&reason) {
                        undecided_reasons.push(reason);
                    }
                    vec![RootCause::Undecided]
                }
            } else {
                vec![RootCause::Undecided]
            };
            graph.add(WaitEdge {
                from: s.rank,
                to: m,
                kind: if causes.is_empty() {
                    EdgeKind::Waits
                } else {
                    EdgeKind::RootCause
                },
                causes,
                message: None,
            });
        }
    }
    let mut solved = graph.solve();
    let cycles: Vec<(RootCause, u32)> = solved
        .cycles()
        .into_iter()
        .flat_map(|ranks| {
            let key = RootCause::deadlock(ranks.iter().copied().map(r).collect());
            ranks.into_iter().map(move |x| (key.clone(), x))
        })
        .collect();
    solved.propagate(&cycles);
    let mut blocked: Vec<Blocked> = Vec::new();
    let mut per_cause: BTreeMap<RootCause, Vec<u32>> = BTreeMap::new();
    let mut in_progress: Vec<u32> = Vec::new();
    for rank in 0..world as u32 {
        let mine: Vec<&Stuck> = of_rank(&stuck, rank).iter().collect();
        let Some(first) = mine
            .iter()
            .filter(|s| !s.waiting_for.is_empty())
            .min_by_key(|s| (s.call.time_ns, s.group))
            .copied()
        else {
            if !mine.is_empty() {
                in_progress.push(rank);
            }
            continue;
        };
        let mut causes = solved.blocked_by[rank as usize].clone();
        if causes.is_empty() {
            // waits on ranks that are merely in progress
            in_progress.push(rank);
            continue;
        }
        causes.sort();
        causes.dedup();
        for c in &causes {
            per_cause.entry(c.clone()).or_default().push(rank);
        }
        blocked.push(blocked_entry(dumps, &groups, t0, first, &causes));
    }
    // ranks waiting in calls that every member issued alike: nothing in the dumps explains it
    if per_cause.is_empty() && !in_progress.is_empty() {
        let reason = format!(
            "{} wait in calls that every member issued with the same parameters: the dumps show \
             no divergence (a device or network fault, a straggler, or dumps taken while the \
             calls were simply running)",
            ranks_phrase(&in_progress)
        );
        undecided_reasons.push(reason);
        for &rank in &in_progress {
            if let Some(s) = of_rank(&stuck, rank)
                .iter()
                .min_by_key(|s| (s.call.time_ns, s.group))
            {
                // it waits for every member not known to have left the call
                let mut s = s.clone();
                let g = &groups.list[s.group as usize];
                s.waiting_for = g
                    .members
                    .iter()
                    .copied()
                    .filter(|&m| m != rank)
                    .filter(|&m| {
                        let lane = dump_of[m as usize].map(|d| &lanes[d as usize][g.id as usize]);
                        !lane.is_some_and(|l| l.calls.iter().any(|c| c.seq == s.call.seq && c.left))
                    })
                    .collect();
                per_cause
                    .entry(RootCause::Undecided)
                    .or_default()
                    .push(rank);
                blocked.push(blocked_entry(
                    dumps,
                    &groups,
                    t0,
                    &s,
                    &[RootCause::Undecided],
                ));
            }
        }
        in_progress.clear();
    }
    let mut divergences: Vec<Divergence> =
        scans.iter().filter_map(|s| s.divergence.clone()).collect();
    divergences.sort_by_key(|d| (d.at_ns, d.group));
    for d in &divergences {
        if let Some(u) = &d.undecided {
            if per_cause.contains_key(&RootCause::Undecided) && !undecided_reasons.contains(u) {
                undecided_reasons.push(u.clone());
            }
        }
    }
    // the text of the first divergence that names each cause
    let mut told: BTreeMap<&RootCause, &str> = BTreeMap::new();
    for d in &divergences {
        for c in &d.causes {
            told.entry(c).or_insert(&d.text);
        }
    }
    let causes: Vec<Cause> = per_cause
        .into_iter()
        .map(|(c, blocked)| {
            let (text, ranks) = describe(
                &c,
                &told,
                &undecided_reasons,
                solved.graph().edges(),
                &stuck,
                dumps,
                &groups,
            );
            Cause {
                cause: c.clone(),
                text,
                ranks,
                blocked,
            }
        })
        .collect();
    // victims: members without a dump that a divergence explains
    for d in &divergences {
        for v in &d.victims {
            notes.push(format!(
                "rank {v} left no dump; it is a victim of the divergence in {} at #{}, not a \
                 cause (gloo, for one, aborts the rank that receives a mismatched message)",
                groups.list[d.group as usize].label(),
                d.seq
            ));
        }
    }
    let outcome = if blocked.is_empty() && causes.is_empty() {
        Outcome::Completed
    } else {
        Outcome::Stalled
    };
    let diagnosis = Diagnosis {
        t: span,
        blocked,
        causes,
        waits: solved.into_edges(),
        in_progress,
        stragglers: Vec::new(),
    };
    if outcome == Outcome::Completed
        && dumps.iter().any(|d| {
            d.strings
                .find("gloo")
                .is_some_and(|g| d.records.iter().any(|r| r.backend == g))
        })
    {
        notes.push(
            "gloo records no point-to-point calls (send, recv, batch_isend_irecv): a hang in one \
             of them would not show in these dumps"
                .into(),
        );
    }
    let mut versions: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for d in dumps {
        versions
            .entry(d.version.as_deref().unwrap_or("none"))
            .or_default()
            .push(d.rank);
    }
    if versions.len() > 1 {
        let parts: Vec<String> = versions
            .iter()
            .map(|(v, rs)| format!("{v} ({})", ranks_phrase(rs)))
            .collect();
        notes.push(format!(
            "the dumps carry different versions: {}; each is read by the keys it has",
            parts.join(", ")
        ));
    }
    Analysis {
        t0_ns: t0,
        span_ns: span,
        groups,
        scans,
        divergences,
        stuck,
        diagnosis,
        outcome,
        undecided_reason: (!undecided_reasons.is_empty()).then(|| undecided_reasons.join("; ")),
        missing,
        notes,
        lanes,
        dump_of,
    }
}

/// The stuck calls of `rank` (`stuck` is sorted by rank).
pub fn of_rank(stuck: &[Stuck], rank: u32) -> &[Stuck] {
    let lo = stuck.partition_point(|s| s.rank < rank);
    let hi = stuck.partition_point(|s| s.rank <= rank);
    &stuck[lo..hi]
}

/// Who is not in a group's call at one seq: members that have not issued it (or left no dump,
/// unless the call is proved complete), and the distinct calls made there with their members.
struct Absent {
    missing: Vec<u32>,
    variants: Vec<(Call, Vec<u32>)>,
}

impl Absent {
    /// The members that `m`'s call `c` cannot complete without.
    fn for_member(&self, ctx: &judge::Ctx, m: u32, c: &Call) -> Vec<u32> {
        let mut out: Vec<u32> = self.missing.iter().copied().filter(|&o| o != m).collect();
        for (rep, members) in &self.variants {
            if !members.contains(&m) && lanes::differs(ctx.dumps, rep, c).is_some() {
                out.extend(members.iter().copied().filter(|&o| o != m));
            }
        }
        out.sort_unstable();
        out
    }
}

/// Who is absent from group `g`'s call at `c.seq`.
fn absent(
    ctx: &judge::Ctx,
    lanes: &[Vec<Lane>],
    scan: &GroupScan,
    g: &crate::fr::groups::Group,
    c: &Call,
) -> Absent {
    let mut out = Absent {
        missing: Vec::new(),
        variants: Vec::new(),
    };
    // a dumped member that went past this seq proves it completed for everyone
    let passed = c.completed || scan.passed(c.seq);
    for &o in &g.members {
        let Some(d) = ctx.dump_of[o as usize] else {
            if !passed {
                out.missing.push(o);
            }
            continue;
        };
        let lane = &lanes[d as usize][g.id as usize];
        match lane.calls.binary_search_by_key(&c.seq, |x| x.seq) {
            Ok(i) => {
                let x = lane.calls[i];
                match out
                    .variants
                    .iter_mut()
                    .find(|(rep, _)| lanes::differs(ctx.dumps, rep, &x).is_none())
                {
                    Some((_, members)) => members.push(o),
                    None => out.variants.push((x, vec![o])),
                }
            }
            Err(i) => {
                let issued =
                    i < lane.calls.len() || lane.enqueued.is_some_and(|e| e >= c.seq as i64);
                let covers = ctx.oldest_ns[d as usize].is_some_and(|t| t <= c.time_ns);
                if !issued && covers {
                    out.missing.push(o);
                }
            }
        }
    }
    out
}

fn blocked_entry(
    dumps: &[Dump],
    groups: &Groups,
    t0: u64,
    s: &Stuck,
    causes: &[RootCause],
) -> Blocked {
    let d = &dumps[s.call.dump as usize];
    let rec = &d.records[s.call.first as usize];
    Blocked {
        rank: s.rank,
        op: rec.kind.call_op(d.str(rec.op)),
        algorithm: Via::Backend(d.str(rec.backend).into()),
        group: groups.list[s.group as usize].id,
        generation: 0,
        seq: if s.p2p {
            rec.p2p_seq.get().unwrap_or(0)
        } else {
            s.call.seq
        },
        iteration: 0,
        index: 0,
        step: 0,
        steps: 1,
        waiting_for: s.waiting_for.clone(),
        since_ns: s.call.time_ns.saturating_sub(t0),
        causes: causes.to_vec(),
        // a send or recv waits for its other end
        peer: if s.p2p {
            s.waiting_for.first().copied()
        } else {
            None
        },
    }
}

/// The sentence and the named ranks of a cause.
fn describe(
    c: &RootCause,
    told: &BTreeMap<&RootCause, &str>,
    undecided: &[String],
    edges: &[WaitEdge],
    stuck: &[Stuck],
    dumps: &[Dump],
    groups: &Groups,
) -> (String, Vec<u32>) {
    let ranks: Vec<u32> = c.ranks().iter().map(|x| x.0).collect();
    match c {
        RootCause::Undecided => (format!("undecided: {}", undecided.join("; ")), Vec::new()),
        RootCause::Deadlock(rs) => {
            let parts: Vec<String> = rs
                .iter()
                .filter_map(|x| {
                    let s = stuck
                        .iter()
                        .find(|s| s.rank == x.0 && !s.waiting_for.is_empty())?;
                    let d = &dumps[s.call.dump as usize];
                    let to: Vec<u32> = edges
                        .iter()
                        .filter(|e| e.from == x.0 && rs.iter().any(|y| y.0 == e.to))
                        .map(|e| e.to)
                        .collect();
                    Some(format!(
                        "rank {} waits in {} of {} for {}",
                        x.0,
                        d.profiling_name(&d.records[s.call.first as usize]),
                        groups.list[s.group as usize].label(),
                        crate::diagnose::fmt_ranks(&to)
                    ))
                })
                .collect();
            (
                format!(
                    "{} wait for one another in a cycle (calls issued in different orders): {}",
                    ranks_phrase(&ranks),
                    parts.join(", ")
                ),
                ranks,
            )
        }
        _ => {
            let text = told
                .get(c)
                .map(|t| t.to_string())
                .or_else(|| {
                    stuck
                        .iter()
                        .find_map(|s| s.mismatch.as_ref().filter(|(x, _)| x == c))
                        .map(|(_, t)| t.clone())
                })
                .unwrap_or_else(|| match c {
                    RootCause::Missing(m) => format!("rank {} left no dump", m.0),
                    other => other.to_string(),
                });
            (text, ranks)
        }
    }
}
