//! The diagnosis of a job from its dumps.
//!
//! Calls are matched per group: collectives by `collective_seq_id` ([`judge`] scans a group seq
//! by seq), point-to-point calls by (peer pair, order) ([`p2p`]). Each group's earliest
//! divergence is judged by the majority of its members, then by the history of the call (its
//! parameters and call site elsewhere in the group: `verdict`); then every rank stuck in a call
//! that cannot complete is put in a wait-for graph, solved by the diagnosis's one solver
//! ([`crate::diagnose::solve`]), to find what it is blocked on.

mod cycles;
pub mod judge;
pub mod lanes;
pub mod p2p;
pub(crate) mod par;
pub mod seqs;
mod verdict;
pub mod waits;

use crate::diagnose::solve::{Solution, WaitGraph};
use crate::diagnose::{ranks_phrase, Blocked, Cause, Diagnosis, EdgeKind, Via, WaitEdge};
use crate::fr::groups::{self, Groups};
use crate::fr::model::Dump;
use crate::scenario::{Outcome, RootCause};
use lanes::{Lane, Lanes};
pub use seqs::{Divergence, DivergenceKind, GroupScan};
use std::collections::BTreeMap;
pub use waits::{Obstacle, Stuck};

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
    pub lanes: Vec<Lanes>,
    pub dump_of: Vec<Option<u32>>,
    /// The dumps taken after a call of theirs timed out (by rank).
    pub late: Vec<u32>,
    /// Each dump's newest record time (Unix epoch ns; 0 when none has one): the latest moment
    /// the dump is known to have been taken after.
    pub newest_ns: Vec<u64>,
}

impl Analysis {
    pub fn root_causes(&self) -> Vec<RootCause> {
        self.diagnosis.root_causes()
    }

    /// The lane of `rank` in group `g`.
    pub fn lane(&self, rank: u32, g: u32) -> Option<&Lane> {
        let d = (*self.dump_of.get(rank as usize)?)?;
        self.lanes.get(d as usize)?.groups.get(g as usize)
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
                RootCause::Missing(ms) => missing.extend(ms.iter().map(|m| m.0)),
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
            v.push(RootCause::missing(vec![r(m)]));
            v
        } else {
            self.all.to_vec()
        }
    }
}

fn r(x: u32) -> crate::proto::types::Rank {
    crate::proto::types::Rank(x)
}

/// Analyzes the dumps of one job (sorted by rank, one per rank), its world as large as the
/// dumps show.
pub fn analyze(dumps: &[Dump]) -> Analysis {
    analyze_in(dumps, None)
}

/// Analyzes the dumps of one job in a world of `world` ranks, where the user states it
/// (`import --world-size`; the dumps checked against it by
/// [`check_ranks`](crate::fr::read::check_ranks)).
pub fn analyze_in(dumps: &[Dump], world: Option<u32>) -> Analysis {
    let groups = groups::infer(dumps, world);
    let lanes = lanes::build(dumps, &groups);
    let times = Times::of(dumps, &lanes, groups.world_size as usize);
    let ctx = times.ctx(dumps, &lanes, &groups.list);
    let mut scans: Vec<GroupScan> =
        par::map(groups.list.len(), |g| judge::scan(&ctx, &groups.list[g]));
    verdict::settle_ties(&mut scans);
    let msgs = p2p::match_all(dumps, &groups, &lanes, &times.dump_of);
    let stuck = waits::stuck(&ctx, &groups, &scans, &msgs);
    let mut reasons = Reasons::default();
    let graph = classify(&ctx, &groups, &scans, &stuck, &mut reasons);
    let solved = solve(graph, &ctx, &groups, &stuck, &mut reasons);
    let (diagnosis, outcome) =
        diagnosis(dumps, &groups, &scans, &stuck, &times, solved, &mut reasons);
    let divergences = earliest_first(&scans);
    let missing = missing_members(&groups, &times.dump_of);
    let late = late_dumps(dumps, &lanes);
    let notes = notes(dumps, &groups, &divergences, &late, outcome);
    Analysis {
        t0_ns: times.t0,
        span_ns: times.span,
        groups,
        scans,
        divergences,
        stuck,
        diagnosis,
        outcome,
        undecided_reason: reasons.joined(),
        missing,
        notes,
        lanes,
        dump_of: times.dump_of,
        late,
        newest_ns: times.newest,
    }
}

/// When each dump's records begin and end, and which dump is each rank's.
struct Times {
    dump_of: Vec<Option<u32>>,
    /// Each dump's oldest record time (None: no records; 0: none has a time) and newest.
    oldest: Vec<Option<u64>>,
    newest: Vec<u64>,
    /// The first record's time, and the span of all records after it.
    t0: u64,
    span: u64,
}

impl Times {
    fn of(dumps: &[Dump], lanes: &[Lanes], world: usize) -> Times {
        let mut dump_of: Vec<Option<u32>> = vec![None; world];
        for (i, d) in dumps.iter().enumerate() {
            if let Some(slot) = dump_of.get_mut(d.rank as usize) {
                *slot = Some(i as u32);
            }
        }
        let oldest: Vec<Option<u64>> = lanes.iter().map(|l| l.oldest_ns).collect();
        let newest: Vec<u64> = lanes.iter().map(|l| l.newest_ns).collect();
        let t0 = oldest
            .iter()
            .flatten()
            .copied()
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(0);
        let span = newest.iter().copied().max().unwrap_or(0).saturating_sub(t0);
        Times {
            dump_of,
            oldest,
            newest,
            t0,
            span,
        }
    }

    fn ctx<'a>(
        &'a self,
        dumps: &'a [Dump],
        lanes: &'a [Lanes],
        groups: &'a [groups::Group],
    ) -> seqs::Ctx<'a> {
        seqs::Ctx {
            dumps,
            lanes,
            groups,
            dump_of: &self.dump_of,
            oldest_ns: &self.oldest,
            newest_ns: &self.newest,
            t0: self.t0,
        }
    }
}

/// Why the dumps cannot decide, each reason once, in the order found; and what happened for
/// each cause found on an edge, in the words of the first edge that found it.
#[derive(Default)]
struct Reasons {
    undecided: Vec<String>,
    told: BTreeMap<RootCause, String>,
}

impl Reasons {
    fn add(&mut self, r: String) {
        if !self.undecided.contains(&r) {
            self.undecided.push(r);
        }
    }

    fn tell(&mut self, c: &RootCause, text: impl FnOnce() -> String) {
        if !self.told.contains_key(c) {
            self.told.insert(c.clone(), text());
        }
    }

    fn joined(&self) -> Option<String> {
        (!self.undecided.is_empty()).then(|| self.undecided.join("; "))
    }
}

/// The wait-for graph: one edge per obstacle of each stuck rank, classified.
fn classify(
    ctx: &seqs::Ctx,
    groups: &Groups,
    scans: &[GroupScan],
    stuck: &[Stuck],
    reasons: &mut Reasons,
) -> WaitGraph {
    let mut graph = WaitGraph::new(groups.world_size as usize);
    let toward: Vec<Toward> = scans
        .iter()
        .map(|sc| Toward::new(sc.divergence.as_ref().map_or(&[], |d| &d.causes)))
        .collect();
    // the ranks that wait for each idle rank
    let mut idle_waiters: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for s in stuck {
        for (m, why) in &s.waits {
            if *why == Obstacle::Idle {
                idle_waiters.entry(*m).or_default().push(s.rank);
            }
        }
    }
    for s in stuck {
        for (m, why) in &s.waits {
            let lone = idle_waiters.get(m).is_some_and(|w| w.len() == 1);
            let causes = edge_causes(ctx, groups, scans, &toward, s, *m, why, lone, reasons);
            graph.add(WaitEdge {
                from: s.rank,
                to: *m,
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
    graph
}

/// The causes of the wait of stuck rank `s` for member `m` (empty: a plain wait, `m` is stuck
/// itself).
#[allow(clippy::too_many_arguments)]
fn edge_causes(
    ctx: &seqs::Ctx,
    groups: &Groups,
    scans: &[GroupScan],
    toward: &[Toward],
    s: &Stuck,
    m: u32,
    why: &Obstacle,
    lone: bool,
    reasons: &mut Reasons,
) -> Vec<RootCause> {
    if let Obstacle::Sizes(c, text) = why {
        if *c == RootCause::Undecided {
            reasons.add(text.clone());
        }
        reasons.tell(c, || text.clone());
        return vec![c.clone()];
    }
    // a rank whose stream is held before its head holds up whoever waits for it
    let held = ctx.dump(m).is_some_and(|dm| ctx.lanes[dm].held());
    let why = match why {
        Obstacle::Behind if held => &Obstacle::NotStarted,
        Obstacle::Behind => return Vec::new(),
        w => w,
    };
    let div = scans[s.group as usize]
        .divergence
        .as_ref()
        .filter(|d| d.seq <= s.call.seq && !s.p2p && !d.causes.is_empty());
    if div.is_some() {
        return toward[s.group as usize].causes(m, *why == Obstacle::NoDump);
    }
    let d = &ctx.dumps[s.call.dump as usize];
    let name = d.profiling_name(&d.records.get(s.call.first as usize));
    let group = groups.list[s.group as usize].label();
    let call = if s.p2p {
        format!("{name} of {group}")
    } else {
        format!("{name} #{} of {group}", s.call.seq)
    };
    match why {
        Obstacle::NoDump => vec![RootCause::missing(vec![r(m)])],
        Obstacle::NotStarted => {
            let c = RootCause::Hung(r(m));
            reasons.tell(&c, || held_text(ctx, groups, m));
            vec![c]
        }
        Obstacle::Idle => {
            let newest = ctx.dump(m).map_or(0, |dm| ctx.newest_ns[dm]);
            let what = if s.p2p {
                format!(
                    "never issued the other end of {call} that rank {} waits in",
                    s.rank
                )
            } else {
                format!("never issued {call} that rank {} waits in", s.rank)
            };
            if s.p2p && lone && newest <= s.call.time_ns {
                reasons.add(format!(
                    "rank {} waits in {call} and its peer, rank {m}, issued nothing after: with \
                     two parties the dumps cannot tell a missing call from an extra one",
                    s.rank
                ));
                return vec![RootCause::Undecided];
            }
            if newest > s.call.time_ns {
                // it went on with later calls without this one
                let c = RootCause::Skipped(r(m));
                reasons.tell(&c, || {
                    format!("rank {m} {what} and went on with later calls: it skipped it")
                });
                vec![c]
            } else {
                let c = RootCause::Hung(r(m));
                reasons.tell(&c, || {
                    format!(
                        "rank {m} {what}: its last call completed and it issued nothing after \
                         (stopped outside collectives)"
                    )
                });
                vec![c]
            }
        }
        Obstacle::AnySource => {
            reasons.add(format!(
                "rank {} waits in {name}, a receive from any source of {}, and no member sent \
                 it anything: the dumps cannot tell who should have",
                s.rank,
                groups.list[s.group as usize].label()
            ));
            vec![RootCause::Undecided]
        }
        _ => {
            reasons.add(format!(
                "rank {} waits in {name} of {} for rank {m}, which issued it with other \
                 parameters, and the group's history does not tell which is right",
                s.rank,
                groups.list[s.group as usize].label()
            ));
            vec![RootCause::Undecided]
        }
    }
}

/// What a rank whose stream is held did: the call it issued whose kernel never started.
fn held_text(ctx: &seqs::Ctx, groups: &Groups, m: u32) -> String {
    let Some(dm) = ctx.dump(m) else {
        return format!("rank {m} is held");
    };
    let lanes = &ctx.lanes[dm];
    let Some((_, q)) = lanes.head() else {
        return format!("rank {m} is held");
    };
    let lane = &lanes.groups[q.group as usize];
    let c = match q.what {
        lanes::QueuedCall::Collective(i) => lane.calls[i as usize],
        lanes::QueuedCall::P2p(a, _) => lane.p2p[a as usize],
    };
    let p2p = ctx.dumps[dm].records.get(c.first as usize).kind.is_p2p();
    format!(
        "rank {m} issued {}, but its kernel never started (`scheduled`) though every call \
         before it ended: its stream is held by work the dumps do not record (a compute kernel, \
         a copy, a call of another library)",
        call_words(ctx, groups, q.group, &c, p2p, true)
    )
}

/// `nccl:all_reduce #3 of group 0 (default_pg)` (no seq for a point-to-point call), and
/// ` at train.py:12` with `site`.
fn call_words(
    ctx: &seqs::Ctx,
    groups: &Groups,
    g: u32,
    c: &lanes::Call,
    p2p: bool,
    site: bool,
) -> String {
    let d = &ctx.dumps[c.dump as usize];
    let rec = &d.records.get(c.first as usize);
    let site = lanes::site(ctx.dumps, c)
        .filter(|_| site)
        .map(|s| format!(" at {s}"))
        .unwrap_or_default();
    let seq = if p2p {
        String::new()
    } else {
        format!(" #{}", c.seq)
    };
    format!(
        "{}{seq} of {}{site}",
        d.profiling_name(rec),
        groups.list[g as usize].label()
    )
}

/// Solves the graph with the diagnosis's one solver. Ranks that wait for one another in a
/// cycle are blocked on whoever among them deviates from the call order the others follow
/// ([`crate::diagnose::order`]), or on a deadlock when nobody does.
fn solve(
    graph: WaitGraph,
    ctx: &seqs::Ctx,
    groups: &Groups,
    stuck: &[Stuck],
    reasons: &mut Reasons,
) -> Solution {
    let mut solved = graph.solve();
    let mut seeds: Vec<(RootCause, u32)> = Vec::new();
    for ranks in solved.cycles() {
        let culprits = cycles::inverted(ctx, groups, stuck, &solved, &ranks, reasons);
        let keys: Vec<RootCause> = if culprits.is_empty() {
            vec![RootCause::deadlock(ranks.iter().copied().map(r).collect())]
        } else {
            culprits
                .iter()
                .map(|&c| RootCause::Mismatch(r(c)))
                .collect()
        };
        for k in keys {
            seeds.extend(ranks.iter().map(|&x| (k.clone(), x)));
        }
    }
    solved.propagate(&seeds);
    solved
}

/// The blocked ranks, the causes with their sentences, and the outcome.
fn diagnosis(
    dumps: &[Dump],
    groups: &Groups,
    scans: &[GroupScan],
    stuck: &[Stuck],
    times: &Times,
    solved: Solution,
    reasons: &mut Reasons,
) -> (Diagnosis, Outcome) {
    let world = groups.world_size;
    let mut blocked: Vec<Blocked> = Vec::new();
    let mut per_cause: BTreeMap<RootCause, Vec<u32>> = BTreeMap::new();
    let mut in_progress: Vec<u32> = Vec::new();
    let mut unexplained: Vec<&Stuck> = Vec::new();
    for s in stuck {
        let mut causes = solved.blocked_by[s.rank as usize].clone();
        if causes.is_empty() {
            if s.waits.is_empty() {
                unexplained.push(s);
            }
            in_progress.push(s.rank);
            continue;
        }
        causes.sort();
        causes.dedup();
        for c in &causes {
            per_cause.entry(c.clone()).or_default().push(s.rank);
        }
        blocked.push(blocked_entry(dumps, groups, times.t0, s, &causes));
    }
    // ranks stuck in calls that every member issued alike, and nobody else to blame: nothing
    // in the dumps explains it
    if per_cause.is_empty() && !unexplained.is_empty() {
        let ranks: Vec<u32> = unexplained.iter().map(|s| s.rank).collect();
        reasons.add(format!(
            "{} wait in calls that every member issued with the same parameters: the dumps show \
             no divergence (a device or network fault, a straggler, or dumps taken while the \
             calls were simply running)",
            ranks_phrase(&ranks)
        ));
        // each waits for every member of its call
        let mut held_up: Vec<Stuck> = unexplained
            .into_iter()
            .map(|s| {
                let mut s = s.clone();
                let g = &groups.list[s.group as usize];
                s.waits = g
                    .members
                    .iter()
                    .filter(|&&m| m != s.rank)
                    .map(|&m| (m, Obstacle::Behind))
                    .collect();
                s
            })
            .collect();
        // a rank that waits for them (in a later call they never reached) is held up as they
        // are, and so is one that waits for it
        let mut held: std::collections::BTreeSet<u32> = held_up.iter().map(|s| s.rank).collect();
        loop {
            let more: Vec<&Stuck> = stuck
                .iter()
                .filter(|s| in_progress.contains(&s.rank) && !held.contains(&s.rank))
                .filter(|s| s.waits.iter().any(|(m, _)| held.contains(m)))
                .collect();
            if more.is_empty() {
                break;
            }
            held.extend(more.iter().map(|s| s.rank));
            held_up.extend(more.into_iter().cloned());
        }
        for s in &held_up {
            per_cause
                .entry(RootCause::Undecided)
                .or_default()
                .push(s.rank);
            blocked.push(blocked_entry(
                dumps,
                groups,
                times.t0,
                s,
                &[RootCause::Undecided],
            ));
        }
        in_progress.retain(|x| !held.contains(x));
        blocked.sort_by_key(|b| b.rank);
        for v in per_cause.values_mut() {
            v.sort_unstable();
        }
    }
    let divergences = earliest_first(scans);
    for d in &divergences {
        if let Some(u) = &d.undecided {
            if per_cause.contains_key(&RootCause::Undecided) {
                reasons.add(u.clone());
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
    let edges = solved.graph().edges();
    let causes: Vec<Cause> = per_cause
        .into_iter()
        .map(|(c, blocked)| {
            let (text, ranks) = describe(&c, &told, reasons, edges, stuck, dumps, groups);
            Cause {
                cause: c.clone(),
                text,
                ranks,
                blocked,
            }
        })
        .collect();
    let outcome = if blocked.is_empty() && causes.is_empty() {
        Outcome::Completed
    } else {
        Outcome::Stalled
    };
    let _ = world;
    let mut diagnosis = Diagnosis {
        t: times.span,
        blocked,
        causes,
        waits: solved.into_edges(),
        in_progress,
        stragglers: Vec::new(),
    };
    diagnosis.merge_missing();
    (diagnosis, outcome)
}

/// The divergence of each group that has one, earliest first.
fn earliest_first(scans: &[GroupScan]) -> Vec<Divergence> {
    let mut v: Vec<Divergence> = scans.iter().filter_map(|s| s.divergence.clone()).collect();
    v.sort_by_key(|d| (d.at_ns, d.group));
    v
}

/// Member ranks without a dump.
fn missing_members(groups: &Groups, dump_of: &[Option<u32>]) -> Vec<u32> {
    let world = groups.world_size as usize;
    let mut in_a_group = vec![false; world];
    for &m in groups.list.iter().flat_map(|g| &g.members) {
        if let Some(x) = in_a_group.get_mut(m as usize) {
            *x = true;
        }
    }
    (0..world as u32)
        .filter(|&m| dump_of[m as usize].is_none() && in_a_group[m as usize])
        .collect()
}

/// Ranks whose dump was taken after a call of theirs timed out: it holds a call the watchdog
/// retired without completing.
fn late_dumps(dumps: &[Dump], lanes: &[Lanes]) -> Vec<u32> {
    let mut v: Vec<u32> = dumps
        .iter()
        .zip(lanes)
        .filter(|(_, l)| l.failed())
        .map(|(d, _)| d.rank)
        .collect();
    v.sort_unstable();
    v
}

/// What the report says besides the diagnosis.
fn notes(
    dumps: &[Dump],
    groups: &Groups,
    divergences: &[Divergence],
    late: &[u32],
    outcome: Outcome,
) -> Vec<String> {
    let mut notes = groups.notes.clone();
    // victims: members without a dump that a divergence explains
    for d in divergences {
        for v in &d.victims {
            notes.push(format!(
                "rank {v} left no dump; it is a victim of the divergence in {} at #{}, not a \
                 cause (gloo, for one, aborts the rank that receives a mismatched message)",
                groups.list[d.group as usize].label(),
                d.seq
            ));
        }
    }
    if !late.is_empty() {
        notes.push(format!(
            "the dumps of {} were taken after a call of theirs timed out (retired without \
             completing): what they show after that is the job being torn down",
            ranks_phrase(late)
        ));
    }
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
    notes
}

fn blocked_entry(
    dumps: &[Dump],
    groups: &Groups,
    t0: u64,
    s: &Stuck,
    causes: &[RootCause],
) -> Blocked {
    let d = &dumps[s.call.dump as usize];
    let rec = &d.records.get(s.call.first as usize);
    let waiting_for = s.waiting_for();
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
        since_ns: s.call.time_ns.saturating_sub(t0),
        causes: causes.to_vec(),
        // a send or recv waits for its other end
        peer: if s.p2p {
            waiting_for.first().copied()
        } else {
            None
        },
        waiting_for,
    }
}

/// The sentence and the named ranks of a cause.
fn describe(
    c: &RootCause,
    told: &BTreeMap<&RootCause, &str>,
    reasons: &Reasons,
    edges: &[WaitEdge],
    stuck: &[Stuck],
    dumps: &[Dump],
    groups: &Groups,
) -> (String, Vec<u32>) {
    let ranks: Vec<u32> = c.ranks().iter().map(|x| x.0).collect();
    match c {
        RootCause::Undecided => (
            format!("undecided: {}", reasons.undecided.join("; ")),
            Vec::new(),
        ),
        RootCause::Deadlock(rs) => {
            let parts: Vec<String> = rs
                .iter()
                .filter_map(|x| {
                    let s = stuck
                        .iter()
                        .find(|s| s.rank == x.0 && !s.waits.is_empty())?;
                    let d = &dumps[s.call.dump as usize];
                    let to: Vec<u32> = edges
                        .iter()
                        .filter(|e| e.from == x.0 && rs.iter().any(|y| y.0 == e.to))
                        .map(|e| e.to)
                        .collect();
                    Some(format!(
                        "rank {} waits in {} of {} for {}",
                        x.0,
                        d.profiling_name(&d.records.get(s.call.first as usize)),
                        groups.list[s.group as usize].label(),
                        crate::diagnose::fmt_ranks(&to)
                    ))
                })
                .collect();
            let tie = reasons
                .told
                .get(c)
                .map(|t| format!("; {t}"))
                .unwrap_or_default();
            (
                format!(
                    "{} wait for one another in a cycle (calls issued in different orders): \
                     {}{tie}",
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
                .or_else(|| reasons.told.get(c).cloned())
                .unwrap_or_else(|| match c {
                    RootCause::Missing(ms) => {
                        let ms: Vec<u32> = ms.iter().map(|m| m.0).collect();
                        format!("{} left no dump", ranks_phrase(&ms))
                    }
                    other => other.to_string(),
                });
            (text, ranks)
        }
    }
}
