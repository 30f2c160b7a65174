//! A scenario that reproduces an imported job in the simulator (`import --scenario`).
//!
//! The job is written whole: the world, every other group the dumps show as a `[[groups]]`
//! entry (its members as the import inferred them, so a member's index is its group rank), and
//! each rank's program from the calls it recorded, in the order it issued them: collectives of
//! every group, sends and recvs with the recorded peer, modeled bytes from sizes times dtype,
//! and the compute before each call from the wall-clock gap since the rank's previous call,
//! rounded. The program most ranks run (a rank outside an op's group does not issue it) is
//! `[[workload.ops]]`; ranks whose calls differ (extra, skipped or reordered calls, other sizes,
//! other groups) run `[[workload.programs]]` of their own. A rank without a dump runs the calls
//! its peers made with it; when the import blames it, it is preempted in the compute before the
//! call it never issued. A rank that stopped after its last call (`hung:R`) hangs at the start
//! of a second iteration that nobody else runs.
//!
//! `[expect]` states the import's verdict, and the scenario is run once before it is written:
//! a job whose replay tells another story (other blocked ranks or root causes) is refused with
//! the reason, never written.

use super::analyze::lanes::{self, Call};
use super::analyze::{Analysis, DivergenceKind};
use super::groups::Group;
use super::model::{dtype, dtype_bytes, numel, Dump, RecordKind};
use crate::proto::vocab::Peer;
use crate::scenario::{
    Dtype, Expect, Fault, FlightRecorder, GroupConfig, GroupRanks, NamedGroup, OpKind, OpSpec,
    Outcome, Program, RootCause, Scenario, Trigger, Workload, World,
};
use crate::trace::{Event, NullRecorder, VecRecorder};
use crate::units::{Duration, Size};
use std::collections::BTreeMap;

/// A job as the simulator would run it.
#[derive(Clone, Debug)]
pub struct Replay {
    pub scenario: Scenario,
    /// For each dump, the index in its rank's program of each call, by the call's first record.
    pub index: Vec<BTreeMap<u32, u32>>,
    /// Why the job cannot be replayed as the import tells it, one sentence each.
    pub problems: Vec<String>,
}

impl Replay {
    /// The index in its rank's program of call `c`.
    pub fn index_of(&self, c: &Call) -> Option<u32> {
        self.index.get(c.dump as usize)?.get(&c.first).copied()
    }
}

/// Modeled bytes of call `c` of a group of `p` members, as the op's `bytes` counts them:
/// gather and scatter the root's whole buffer, every other op its larger side.
fn modeled_bytes(dumps: &[Dump], c: &Call, p: u64) -> u64 {
    let d = &dumps[c.dump as usize];
    lanes::parts(dumps, c)
        .map(|r| {
            let t = dtype_bytes(d.str(r.in_dtypes).split(',').next().unwrap_or(""));
            let (i, o) = (numel(d.shapes(r.input)), numel(d.shapes(r.output)));
            let n = match r.kind.op() {
                Some(OpKind::Gather) => i.saturating_mul(p),
                Some(OpKind::Scatter) => o.saturating_mul(p),
                _ => i.max(o),
            };
            n.saturating_mul(t)
        })
        .fold(0u64, |a, b| a.saturating_add(b))
}

/// Two significant digits, so that compute reads as a round number.
fn round2(ns: u64) -> u64 {
    let mut scale = 1u64;
    while ns / scale >= 100 {
        scale *= 10;
    }
    (ns + scale / 2) / scale * scale
}

/// What a call of a rank's list stands for: its own record, or (for a rank without a dump) a
/// group's collective or the other end of a peer's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Own { dump: u32, first: u32 },
    Collective { group: u32, seq: u64 },
    Mirror { dump: u32, first: u32 },
}

/// One call of a rank's list.
#[derive(Clone, Debug)]
struct Item {
    op: OpSpec,
    /// Wall-clock start, and when the rank left the call (0: unknown).
    t: u64,
    done: u64,
    source: Source,
    /// (group, p2p batch) of a send or recv, to issue a batch's sends first.
    batch: Option<(u32, u64)>,
}

/// The names of the groups in the scenario (None: the world). Sibling groups (the same
/// description and size, other members: the replicas of a stage) share one name, a group split
/// into disjoint sub-groups as a scenario writes one (`ranks = [[0, 1], [2, 3]]`): a replay's
/// programs then compare their calls of it as the import compares the siblings'.
fn group_names(a: &Analysis) -> Vec<Option<String>> {
    let world = a.groups.world_size;
    let mut used: Vec<String> = Vec::new();
    // per name given to a description: the group size and the ranks of its sub-groups so far
    let mut split: BTreeMap<String, (usize, Vec<u32>)> = BTreeMap::new();
    a.groups
        .list
        .iter()
        .map(|g| {
            if g.members.len() as u32 == world && g.members.iter().copied().eq(0..world) {
                return None;
            }
            let clean = |s: &str| -> String {
                s.chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect()
            };
            let mut name = clean(&g.desc);
            if name.is_empty() || name == "default_pg" || name.chars().all(|c| c == '_') {
                name = format!("pg{}", clean(&g.name));
            } else if let Some((size, ranks)) = split.get_mut(&name) {
                if *size == g.members.len() && g.members.iter().all(|m| !ranks.contains(m)) {
                    ranks.extend(&g.members);
                    return Some(name);
                }
            } else {
                split.insert(name.clone(), (g.members.len(), g.members.clone()));
            }
            if used.contains(&name) {
                name = format!("{name}_{}", g.id);
            }
            used.push(name.clone());
            Some(name)
        })
        .collect()
}

/// The op of call `c` in group `g`; `mirror`: the other end of a send or recv.
fn op_of(
    dumps: &[Dump],
    g: &Group,
    name: &Option<String>,
    c: &Call,
    mirror: bool,
) -> Result<OpSpec, String> {
    let d = &dumps[c.dump as usize];
    let rec = lanes::head(dumps, c);
    let unsupported = || {
        format!(
            "rank {}'s call {} in {} has no op in the scenario language",
            d.rank,
            d.profiling_name(&rec),
            g.label()
        )
    };
    let mut op = rec.kind.op().ok_or_else(unsupported)?;
    let p = g.members.len() as u64;
    let bytes = match op {
        OpKind::Barrier => 0,
        OpKind::Send | OpKind::Recv => modeled_bytes(dumps, c, p),
        _ => modeled_bytes(dumps, c, p).max(1),
    };
    let peer = if op.point_to_point() {
        let Some(peer) = rec.peer.and_then(|x| x.peer.map(|y| (x.me, y))) else {
            return Err(format!(
                "rank {}'s call {} in {} receives from any source: the scenario language names \
                 the peer of every recv",
                d.rank,
                d.profiling_name(&rec),
                g.label()
            ));
        };
        if mirror {
            op = if op == OpKind::Send {
                OpKind::Recv
            } else {
                OpKind::Send
            };
            Some(Peer::Rank(g.local(d.rank).unwrap_or(peer.0)))
        } else {
            Some(Peer::Rank(peer.1))
        }
    } else {
        None
    };
    Ok(OpSpec {
        op,
        bytes: Size(bytes),
        reduce: Default::default(),
        algorithm: None,
        root: None,
        group: name.clone(),
        peer,
        rendezvous: false,
        compute: None,
        // the other end of a message is not where this rank made its call
        site: (!mirror)
            .then(|| lanes::site(dumps, c).map(String::from))
            .flatten(),
    })
}

/// The first seq of each group that every dumped member still has (older calls of some were
/// overwritten in their ring buffers).
fn windows(a: &Analysis) -> Vec<u64> {
    a.groups
        .list
        .iter()
        .map(|g| {
            g.members
                .iter()
                .filter_map(|&m| a.lane(m, g.id).and_then(|l| l.calls.first()).map(|c| c.seq))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Whether `c` is a call of its own: not the record alone that closes a batch of sends and
/// recvs (`nccl:coalesced`, not marked point-to-point), whose member records are the calls.
fn is_call(dumps: &[Dump], c: &Call) -> bool {
    c.first != c.last || lanes::head(dumps, c).kind != RecordKind::Coalesced
}

/// The calls of dumped rank `d`, in the order it issued them.
fn own_list(
    dumps: &[Dump],
    a: &Analysis,
    names: &[Option<String>],
    window: &[u64],
    di: usize,
) -> Result<Vec<Item>, String> {
    let d = &dumps[di];
    let mut calls: Vec<(u32, Call, bool)> = Vec::new();
    for g in &a.groups.list {
        let lane = &a.lanes[di].groups[g.id as usize];
        calls.extend(
            lane.calls
                .iter()
                .filter(|c| c.seq >= window[g.id as usize] && is_call(dumps, c))
                .map(|c| (g.id, *c, false)),
        );
        calls.extend(lane.p2p.iter().map(|c| (g.id, *c, true)));
    }
    calls.sort_by_key(|(_, c, _)| c.first);
    calls
        .into_iter()
        .map(|(g, c, p2p)| {
            let group = &a.groups.list[g as usize];
            let rec = lanes::head(dumps, &c);
            let last = &d.records.get(c.last as usize);
            Ok(Item {
                op: op_of(dumps, group, &names[g as usize], &c, false)?,
                t: c.time_ns,
                done: last.completed_ns,
                source: Source::Own {
                    dump: di as u32,
                    first: c.first,
                },
                batch: p2p.then(|| (g, rec.p2p_seq.get().unwrap_or(0))),
            })
        })
        .collect()
}

/// The calls of rank `m`, which left no dump, as its peers made them with it: each group's
/// collectives as its dumped member with the most of them recorded them, and the other end of
/// every message a dumped peer sent to or received from it; in the order of their times.
fn missing_list(
    dumps: &[Dump],
    a: &Analysis,
    names: &[Option<String>],
    window: &[u64],
    m: u32,
) -> Result<Vec<Item>, String> {
    let mut items: Vec<Item> = Vec::new();
    for g in a.groups.list.iter().filter(|g| g.members.contains(&m)) {
        let reference = g
            .members
            .iter()
            .filter_map(|&o| a.lane(o, g.id))
            .max_by_key(|l| l.calls.len());
        if let Some(lane) = reference {
            for c in lane
                .calls
                .iter()
                .filter(|c| c.seq >= window[g.id as usize] && is_call(dumps, c))
            {
                items.push(Item {
                    op: op_of(dumps, g, &names[g.id as usize], c, false)?,
                    t: c.time_ns,
                    done: 0,
                    source: Source::Collective {
                        group: g.id,
                        seq: c.seq,
                    },
                    batch: None,
                });
            }
        }
        let Some(me) = g.local(m) else { continue };
        for &o in &g.members {
            let Some(lane) = a.lane(o, g.id) else {
                continue;
            };
            for c in &lane.p2p {
                let rec = lanes::head(dumps, c);
                if rec.peer.and_then(|p| p.peer) != Some(me) {
                    continue;
                }
                items.push(Item {
                    op: op_of(dumps, g, &names[g.id as usize], c, true)?,
                    t: c.time_ns,
                    done: 0,
                    source: Source::Mirror {
                        dump: c.dump,
                        first: c.first,
                    },
                    batch: Some((g.id, u64::MAX)),
                });
            }
        }
    }
    items.sort_by_key(|i| i.t);
    Ok(items)
}

/// Issues the sends of a batch of sends and recvs (`batch_isend_irecv`) before its recvs: they
/// are posted together, and an eager send does not wait for its recv.
fn sends_first(items: &mut [Item]) {
    let mut i = 0;
    while i < items.len() {
        let Some(b) = items[i].batch else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < items.len() && items[j].batch == Some(b) {
            j += 1;
        }
        items[i..j].sort_by_key(|x| x.op.op != OpKind::Send);
        i = j;
    }
}

/// Whether world rank `r` issues `op` (it is in the op's group).
fn issues(op: &OpSpec, r: u32, members: &BTreeMap<String, Vec<u32>>) -> bool {
    match &op.group {
        None => true,
        Some(n) => members.get(n).is_some_and(|m| m.contains(&r)),
    }
}

/// Positions in `program` of the calls of `list` when `program` is the program of rank `r`:
/// None when the calls rank `r` would issue from it are not exactly `list` (or, `partial`,
/// do not begin with `list`).
fn covers(
    program: &[OpSpec],
    list: &[Item],
    r: u32,
    members: &BTreeMap<String, Vec<u32>>,
    partial: bool,
) -> Option<Vec<u32>> {
    let mut pos = Vec::with_capacity(list.len());
    let mut it = list.iter();
    for (i, op) in program.iter().enumerate() {
        if !issues(op, r, members) {
            continue;
        }
        match it.next() {
            Some(x) if x.op == *op => pos.push(i as u32),
            None if partial => return Some(pos),
            _ => return None,
        }
    }
    it.next().is_none().then_some(pos)
}

/// As [`covers`], for a rank that skipped calls of `program`: the positions of the calls of
/// `list`, the calls before its last one that it never issued, and its calls past the end of
/// `program` (the others are stuck before them). None when `list` is not `program` with calls
/// left out (and more at its end).
fn covers_skipping(
    program: &[OpSpec],
    list: &[Item],
    r: u32,
    members: &BTreeMap<String, Vec<u32>>,
) -> Option<(Vec<u32>, Vec<u32>, Vec<OpSpec>)> {
    let (mut pos, mut skipped) = (Vec::with_capacity(list.len()), Vec::new());
    let mut it = list.iter().peekable();
    for (i, op) in program.iter().enumerate() {
        if !issues(op, r, members) {
            continue;
        }
        match it.peek() {
            Some(x) if x.op == *op => {
                it.next();
                pos.push(i as u32);
            }
            Some(_) => skipped.push(i as u32),
            None => break,
        }
    }
    let tail: Vec<OpSpec> = it.map(|x| x.op.clone()).collect();
    for i in 0..tail.len() {
        pos.push((program.len() + i) as u32);
    }
    (!skipped.is_empty()).then_some((pos, skipped, tail))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// The compute before each call of `list`: the gap since the rank's previous call ended (or
/// since the job's first record, for its first call).
fn gaps(list: &[Item], t0: u64) -> Vec<u64> {
    let mut prev = t0;
    list.iter()
        .map(|i| {
            let g = i.t.saturating_sub(prev);
            prev = i.t.max(i.done);
            g
        })
        .collect()
}

/// The programs of the scenario: the declared one first, each with its ranks; where each rank's
/// calls are in its program; and the calls that ranks running the declared program skip.
struct Programs {
    list: Vec<(Vec<OpSpec>, Vec<u32>)>,
    /// Per rank: its program, and the position in it of each call of its list.
    pos: Vec<(usize, Vec<u32>)>,
    /// (rank, op index) of each call it never issued.
    skips: Vec<(u32, u32)>,
}

impl Programs {
    fn op_mut(&mut self, rank: u32, i: u32) -> &mut OpSpec {
        let k = self.pos[rank as usize].0;
        &mut self.list[k].0[i as usize]
    }
}

/// What the plan works from: the import, the names of its groups in the scenario, and each
/// rank's calls as it goes.
struct Planner<'a> {
    dumps: &'a [Dump],
    a: &'a Analysis,
    world: u32,
    names: Vec<Option<String>>,
    window: Vec<u64>,
    /// Members of each named group.
    members: BTreeMap<String, Vec<u32>>,
    /// Ranks the import finds blocked, or in a call it cannot tell the end of.
    blocked: Vec<u32>,
    /// Ranks the import blames (a rank without a dump aside).
    blamed: Vec<u32>,
    /// Each rank's calls.
    lists: Vec<Vec<Item>>,
    problems: Vec<String>,
    /// What the replay chose where the dumps are silent, one sentence each.
    guesses: Vec<String>,
}

impl<'a> Planner<'a> {
    fn new(dumps: &'a [Dump], a: &'a Analysis) -> Planner<'a> {
        let names = group_names(a);
        let mut members: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (g, n) in a.groups.list.iter().zip(&names) {
            if let Some(n) = n {
                members.entry(n.clone()).or_default().extend(&g.members);
            }
        }
        let blamed = a
            .root_causes()
            .iter()
            .filter(|c| !matches!(c, RootCause::Missing(_)))
            .flat_map(|c| c.ranks().into_iter().map(|r| r.0))
            .collect();
        Planner {
            dumps,
            a,
            world: a.groups.world_size.max(1),
            window: windows(a),
            names,
            members,
            // a rank in a call that never ends is blocked in a replay
            blocked: a
                .diagnosis
                .blocked
                .iter()
                .map(|b| b.rank)
                .chain(a.diagnosis.in_progress.iter().copied())
                .collect(),
            blamed,
            lists: Vec::new(),
            problems: Vec::new(),
            guesses: Vec::new(),
        }
    }

    fn has_dump(&self, r: u32) -> bool {
        self.a.dump_of.get(r as usize).copied().flatten().is_some()
    }

    /// Every rank's calls: its own, or those its peers made with it.
    fn rank_lists(&mut self) {
        for r in 0..self.world {
            let list = match self.a.dump_of.get(r as usize).copied().flatten() {
                Some(di) => own_list(self.dumps, self.a, &self.names, &self.window, di as usize),
                None => missing_list(self.dumps, self.a, &self.names, &self.window, r),
            };
            match list {
                Ok(mut l) => {
                    sends_first(&mut l);
                    self.lists.push(l);
                }
                Err(e) => {
                    self.problems.push(e);
                    self.lists.push(Vec::new());
                }
            }
        }
    }

    /// The items of each group's collectives that ranks recorded themselves, by seq.
    fn own_calls_by_seq(&self, g: &Group) -> BTreeMap<u64, Vec<(u32, usize)>> {
        let mut at: BTreeMap<u64, Vec<(u32, usize)>> = BTreeMap::new();
        for &m in &g.members {
            for (i, item) in self.lists[m as usize].iter().enumerate() {
                if let (Source::Own { dump, first }, true) = (
                    item.source,
                    item.op.group == self.names[g.id as usize] && item.batch.is_none(),
                ) {
                    let lane = &self.a.lanes[dump as usize].groups[g.id as usize];
                    if let Ok(k) = lane.calls.binary_search_by_key(&first, |c| c.first) {
                        at.entry(lane.calls[k].seq).or_default().push((m, i));
                    }
                }
            }
        }
        at
    }

    /// A collective that completed on every member although ranks called it with other sizes
    /// (the backend never compared them) moves the same bytes in the replay: the most common.
    fn same_bytes_where_completed(&mut self) {
        for g in &self.a.groups.list {
            let scan = &self.a.scans[g.id as usize];
            for (seq, calls) in self.own_calls_by_seq(g) {
                if !scan.passed(seq) {
                    continue;
                }
                let mut count: BTreeMap<(OpKind, u64), usize> = BTreeMap::new();
                for &(m, i) in &calls {
                    let op = &self.lists[m as usize][i].op;
                    *count.entry((op.op, op.bytes.0)).or_default() += 1;
                }
                if count.len() < 2 {
                    continue;
                }
                let Some(((kind, bytes), _)) = count
                    .into_iter()
                    .max_by_key(|(k, n)| (*n, std::cmp::Reverse(*k)))
                else {
                    continue;
                };
                for (m, i) in calls {
                    let op = &mut self.lists[m as usize][i].op;
                    if op.op == kind {
                        op.bytes = Size(bytes);
                    }
                }
            }
        }
    }

    /// A rank the import blames for a rooted collective (broadcast, reduce, gather, scatter)
    /// it called alike from another call site, and that did not complete, called it with
    /// another root. The dumps record neither roots nor the backend's algorithm: choice `k`
    /// gives the culprit's call the `k % (p - 1) + 1`-th group rank as its root (the others
    /// keep group rank 0), and every member's call the `k / (p - 1)`-th algorithm of the op.
    /// Returns how many choices there are (0: no call of this kind).
    fn unrecorded(&mut self, k: u32) -> u32 {
        let mut choices = 0;
        for d in &self.a.divergences {
            if d.kind != DivergenceKind::CallSite || !d.decided() {
                continue;
            }
            let g = &self.a.groups.list[d.group as usize];
            let p = g.members.len() as u32;
            if self.a.scans[g.id as usize].passed(d.seq) || p < 2 {
                continue;
            }
            let calls = self.calls_at(g, d.seq);
            let Some(op) = calls
                .iter()
                .map(|&(m, i)| self.lists[m as usize][i].op.op)
                .find(|op| op.rooted())
            else {
                continue;
            };
            let algorithms = op.algorithms();
            choices = (p - 1).saturating_mul(algorithms.len() as u32);
            let (root, alg) = (k % (p - 1) + 1, (k / (p - 1)) as usize % algorithms.len());
            for (m, i) in calls {
                let call = &mut self.lists[m as usize][i].op;
                if call.op != op {
                    continue;
                }
                call.algorithm = (alg > 0).then_some(algorithms[alg]);
                if d.culprits.contains(&m) {
                    call.root = Some(root);
                    self.guesses.push(format!(
                        "rank {m}'s {op} #{} has root {root} and every member's the {} \
                         algorithm: the dumps record neither, and this is the first choice \
                         whose replay tells the import's story",
                        d.seq, algorithms[alg]
                    ));
                }
            }
        }
        choices
    }

    /// Every rank's call at `seq` of group `g`: the items of its own records, or (a rank
    /// without a dump) of the group's collective.
    fn calls_at(&self, g: &Group, seq: u64) -> Vec<(u32, usize)> {
        let mut out = self.own_calls_by_seq(g).remove(&seq).unwrap_or_default();
        for &m in &g.members {
            for (i, item) in self.lists[m as usize].iter().enumerate() {
                if item.source == (Source::Collective { group: g.id, seq }) {
                    out.push((m, i));
                }
            }
        }
        out
    }

    /// A blocked rank's program goes on past the call it is stuck in: a message a peer waits
    /// for from it is still to come, not skipped.
    fn pending_messages(&mut self) {
        let (dumps, a) = (self.dumps, self.a);
        for st in a.stuck.iter().filter(|x| {
            x.p2p
                && !x
                    .waits
                    .iter()
                    .any(|(_, o)| matches!(o, super::analyze::Obstacle::Sizes(..)))
        }) {
            let Some(&b) = st.waiting_for().first() else {
                continue;
            };
            if !self.blocked.contains(&b) || !self.has_dump(b) {
                continue;
            }
            let g = &a.groups.list[st.group as usize];
            match op_of(dumps, g, &self.names[g.id as usize], &st.call, true) {
                Ok(op) => self.lists[b as usize].push(Item {
                    op,
                    t: st.call.time_ns,
                    done: 0,
                    source: Source::Mirror {
                        dump: st.call.dump,
                        first: st.call.first,
                    },
                    batch: None,
                }),
                Err(e) => self.problems.push(e),
            }
        }
    }

    /// Which ranks a program covers, by rank (see [`covers`]); a blocked rank's calls may end
    /// early, in the call it is stuck in.
    fn coverage(&self, ops: &[OpSpec]) -> Vec<Option<Vec<u32>>> {
        (0..self.world)
            .map(|r| {
                let partial = self.blocked.contains(&r);
                covers(ops, &self.lists[r as usize], r, &self.members, partial)
            })
            .collect()
    }

    /// The program most ranks run, among the distinct lists; the ranks the import blames run
    /// programs of their own, where the lists allow.
    fn declared(&self) -> (Vec<OpSpec>, Vec<Option<Vec<u32>>>) {
        let mut distinct: Vec<Vec<OpSpec>> = Vec::new();
        for l in &self.lists {
            let ops: Vec<OpSpec> = l.iter().map(|i| i.op.clone()).collect();
            if !distinct.contains(&ops) {
                distinct.push(ops);
            }
        }
        let score = |cov: &[Option<Vec<u32>>]| {
            let (mut right, mut wrong) = (0, 0);
            for r in (0..self.world).filter(|r| cov[*r as usize].is_some()) {
                if self.blamed.contains(&r) {
                    wrong += 1;
                } else {
                    right += 1;
                }
            }
            (right, std::cmp::Reverse(wrong))
        };
        let mut best: Option<(usize, Vec<Option<Vec<u32>>>)> = None;
        for (k, ops) in distinct.iter().enumerate() {
            let cov = self.coverage(ops);
            if best.as_ref().is_none_or(|(_, b)| score(&cov) > score(b)) {
                best = Some((k, cov));
            }
        }
        match best {
            Some((k, cov)) => (distinct.swap_remove(k), cov),
            None => (Vec::new(), vec![None; self.world as usize]),
        }
    }

    /// A rank the import finds skipped a call runs the declared program with a `skip` fault:
    /// its positions, and (rank, op index) of each call it skips.
    fn skipped(
        &self,
        declared: &mut Vec<OpSpec>,
        covered: &mut [Option<Vec<u32>>],
    ) -> Vec<(u32, u32)> {
        let mut skips = Vec::new();
        for c in self.a.root_causes() {
            let RootCause::Skipped(r) = c else { continue };
            let r = r.0;
            if r >= self.world || covered[r as usize].is_some() {
                continue;
            }
            let Some((p, sk, tail)) =
                covers_skipping(declared, &self.lists[r as usize], r, &self.members)
            else {
                continue;
            };
            // calls past the end of the declared program are added to it only when every
            // other rank that runs it is stuck before them (or dead)
            let stuck_before = (0..self.world)
                .filter(|&o| o != r && covered[o as usize].is_some())
                .all(|o| self.blocked.contains(&o) || !self.has_dump(o));
            if !tail.is_empty() && !stuck_before {
                continue;
            }
            declared.extend(tail);
            covered[r as usize] = Some(p);
            skips.extend(sk.into_iter().map(|i| (r, i)));
        }
        skips
    }

    /// The declared program, then one per distinct list of the ranks it does not cover.
    fn programs(&self) -> Programs {
        let (mut declared, mut covered) = self.declared();
        let skips = self.skipped(&mut declared, &mut covered);
        let mut list: Vec<(Vec<OpSpec>, Vec<u32>)> = vec![(declared, Vec::new())];
        let mut pos: Vec<(usize, Vec<u32>)> = Vec::with_capacity(self.world as usize);
        for r in 0..self.world {
            match &covered[r as usize] {
                Some(p) => {
                    list[0].1.push(r);
                    pos.push((0, p.clone()));
                }
                None => {
                    let own = &self.lists[r as usize];
                    let ops: Vec<OpSpec> = own.iter().map(|i| i.op.clone()).collect();
                    let k = match list.iter().skip(1).position(|(o, _)| *o == ops) {
                        Some(k) => k + 1,
                        None => {
                            list.push((ops, Vec::new()));
                            list.len() - 1
                        }
                    };
                    list[k].1.push(r);
                    pos.push((k, (0..own.len() as u32).collect()));
                }
            }
        }
        Programs { list, pos, skips }
    }

    /// The compute before each call: the median over a program's ranks of their gap before
    /// it, rounded.
    fn compute(&self, programs: &mut Programs) {
        let mut per_op: Vec<Vec<Vec<u64>>> = programs
            .list
            .iter()
            .map(|(ops, _)| vec![Vec::new(); ops.len()])
            .collect();
        for (r, list) in self.lists.iter().enumerate() {
            let (k, p) = &programs.pos[r];
            for (g, &i) in gaps(list, self.a.t0_ns).into_iter().zip(p) {
                per_op[*k][i as usize].push(g);
            }
        }
        for ((ops, _), gs) in programs.list.iter_mut().zip(per_op) {
            for (op, g) in ops.iter_mut().zip(gs) {
                let c = round2(median(g));
                op.compute = (c > 0).then_some(Duration(c));
            }
        }
    }

    /// The index of each dumped call in its rank's program.
    fn index(&self, programs: &Programs) -> Vec<BTreeMap<u32, u32>> {
        let mut index: Vec<BTreeMap<u32, u32>> = vec![BTreeMap::new(); self.dumps.len()];
        for (list, (_, pos)) in self.lists.iter().zip(&programs.pos) {
            for (item, &i) in list.iter().zip(pos) {
                if let Source::Own { dump, first } = item.source {
                    index[dump as usize].insert(first, i);
                }
            }
        }
        index
    }

    /// The backend the dumps' profiling names carry (the most common), if any.
    fn backend(&self) -> Option<String> {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for d in self.dumps {
            if let Some(r) = d.records.first() {
                *count.entry(d.str(r.backend)).or_default() += 1;
            }
        }
        count
            .into_iter()
            .filter(|(b, _)| !b.is_empty())
            .max_by_key(|(_, n)| *n)
            .map(|(b, _)| b.to_string())
    }

    /// The scenario of the job without its faults and `[expect]`.
    fn skeleton(&self, name: &str, programs: &Programs) -> Scenario {
        let timeout = self
            .dumps
            .iter()
            .flat_map(|d| d.records.iter().filter_map(|r| r.timeout_ms.get()))
            .max();
        let mut dts: Vec<Dtype> = self
            .dumps
            .iter()
            .flat_map(|d| d.records.iter().map(|r| dtype(d.str(r.in_dtypes))))
            .take(10_000)
            .collect();
        dts.sort_by_key(|d| d.name());
        let hung = self
            .a
            .root_causes()
            .iter()
            .any(|c| matches!(c, RootCause::Hung(_)));
        let mut scenario = Scenario {
            name: name.to_string(),
            description: None,
            seed: 0,
            time_limit: None,
            world: World {
                size: self.world,
                ranks_per_host: 1,
            },
            network: Default::default(),
            engine: Default::default(),
            group: GroupConfig {
                timeout: Duration(
                    timeout.map_or(30_000_000_000, |t| t.max(1).saturating_mul(1_000_000)),
                ),
                ..GroupConfig::default()
            },
            workload: Workload {
                iterations: if hung { 2 } else { 1 },
                compute: Duration(0),
                dtype: dts.get(dts.len() / 2).copied().unwrap_or(Dtype::F32),
                elements: 16,
                ops: Vec::new(),
                programs: Vec::new(),
                pipeline: None,
                registry: Vec::new(),
                node: None,
            },
            torch: None,
            groups: self.named_groups(),
            faults: programs
                .skips
                .iter()
                .map(|&(rank, i)| Fault::Skip {
                    rank,
                    iteration: 0,
                    op_index: Some(i),
                })
                .collect(),
            expect: None,
            flight_recorder: Some(FlightRecorder {
                backend: self.backend(),
                no_dump: self.a.missing.clone(),
            }),
        };
        set_programs(&mut scenario, programs);
        scenario
    }

    /// The groups of the scenario: one per name, split into its sibling groups' members.
    fn named_groups(&self) -> Vec<NamedGroup> {
        let mut out: Vec<(String, Vec<Vec<u32>>)> = Vec::new();
        for (g, n) in self.a.groups.list.iter().zip(&self.names) {
            let Some(n) = n else { continue };
            match out.iter_mut().find(|(x, _)| x == n) {
                Some((_, lists)) => lists.push(g.members.clone()),
                None => out.push((n.clone(), vec![g.members.clone()])),
            }
        }
        out.into_iter()
            .map(|(name, mut lists)| NamedGroup {
                name,
                ranks: if lists.len() == 1 {
                    GroupRanks::One(lists.remove(0))
                } else {
                    GroupRanks::Many(lists)
                },
            })
            .collect()
    }

    /// Members without a dump that a divergence explains (the backend aborted them).
    fn victims(&self) -> Vec<u32> {
        self.a
            .divergences
            .iter()
            .flat_map(|d| d.victims.iter().copied())
            .collect()
    }

    /// Members without a dump that the import blames: they die in the replay.
    fn dead(&self) -> Vec<u32> {
        let victims = self.victims();
        self.a
            .root_causes()
            .iter()
            .flat_map(|c| match c {
                RootCause::Missing(rs) => rs.iter().map(|r| r.0).collect(),
                _ => Vec::new(),
            })
            .filter(|r| !victims.contains(r))
            .collect()
    }

    /// A stopped rank hangs at the start of the second iteration; ranks that finished their
    /// calls skip every call of it.
    fn hangs(&self, scenario: &mut Scenario, programs: &Programs) {
        let hung: Vec<u32> = self
            .a
            .root_causes()
            .iter()
            .filter_map(|c| match c {
                RootCause::Hung(r) => Some(r.0),
                _ => None,
            })
            .collect();
        if hung.is_empty() {
            return;
        }
        let (dead, victims) = (self.dead(), self.victims());
        for r in 0..self.world {
            if hung.contains(&r) {
                scenario.faults.push(Fault::Hang {
                    rank: r,
                    iteration: 1,
                });
            } else if !self.blocked.contains(&r) && !dead.contains(&r) && !victims.contains(&r) {
                for &i in &programs.pos[r as usize].1 {
                    scenario.faults.push(Fault::Skip {
                        rank: r,
                        iteration: 1,
                        op_index: Some(i),
                    });
                }
            }
        }
    }

    /// Each rank without a dump that the import blames, and the index in its program of the
    /// first call its peers wait for it in: it dies in the compute before it.
    fn preemptions(&mut self, programs: &Programs) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for m in self.dead() {
            let list = &self.lists[m as usize];
            let waited = |s: &super::analyze::Stuck| {
                list.iter().position(|i| match i.source {
                    Source::Collective { group, seq } => {
                        !s.p2p && s.group == group && s.call.seq == seq
                    }
                    Source::Mirror { dump, first } => {
                        s.p2p && s.call.dump == dump && s.call.first == first
                    }
                    Source::Own { .. } => false,
                })
            };
            let k = self
                .a
                .stuck
                .iter()
                .filter(|s| s.waiting_for().contains(&m))
                .filter_map(waited)
                .min();
            match k {
                Some(k) => out.push((m, programs.pos[m as usize].1[k])),
                None => self.problems.push(format!(
                    "rank {m} left no dump, and no call its peers wait for it in can be placed \
                     in its program"
                )),
            }
        }
        out
    }

    /// Places the preemptions in time: mid-compute before the call the rank never issued, as
    /// a run without them issues it.
    fn place(&mut self, scenario: &mut Scenario, programs: &mut Programs, at: &[(u32, u32)]) {
        // the compute before the call it never issued lasts at least 100us, to die in
        for &(m, i) in at {
            let op = programs.op_mut(m, i);
            op.compute = Some(Duration(op.compute.map_or(0, |c| c.0).max(100_000)));
        }
        set_programs(scenario, programs);
        let mut rec = VecRecorder::default();
        let _ = crate::run::run_events(scenario, &crate::run::RunOptions::default(), &mut rec);
        for &(m, i) in at {
            let t = rec.events.iter().find_map(|(t, e)| match e {
                Event::Call {
                    rank,
                    iteration: 0,
                    index,
                    ..
                } if *rank == m && *index == i => Some(*t),
                _ => None,
            });
            let before = programs.op_mut(m, i).compute.map_or(0, |c| c.0);
            match t {
                Some(t) => scenario.faults.push(Fault::Preempt {
                    rank: m,
                    // mid-compute, on a whole microsecond
                    at: Trigger::At(Duration(t.saturating_sub(before / 2) / 1000 * 1000)),
                    restart_after: None,
                }),
                None => self.problems.push(format!(
                    "rank {m} left no dump, and the replay never brings it to the call its \
                     peers wait for it in"
                )),
            }
        }
    }

    /// `[expect]`: the import's verdict, as a replay tells it.
    fn expect(&mut self, scenario: &mut Scenario) {
        let causes = self.a.root_causes();
        if causes.contains(&RootCause::Undecided) {
            self.problems.push(format!(
                "the dumps do not decide who is wrong (undecided: {}), and a replay always does",
                self.a
                    .undecided_reason
                    .as_deref()
                    .unwrap_or("no reason given")
            ));
        }
        let mut want_causes: Vec<RootCause> = causes
            .iter()
            .flat_map(|c| match c {
                RootCause::Missing(rs) => rs.iter().map(|&r| RootCause::Preempted(r)).collect(),
                other => vec![other.clone()],
            })
            .collect();
        want_causes.sort();
        want_causes.dedup();
        let mut want_blocked = self.blocked.clone();
        want_blocked.extend(self.victims());
        want_blocked.sort_unstable();
        want_blocked.dedup();
        scenario.expect = Some(Expect {
            outcome: Some(if self.a.outcome == Outcome::Completed {
                Outcome::Completed
            } else {
                Outcome::Stalled
            }),
            blocked: Some(want_blocked),
            root_causes: Some(want_causes),
            correct: None,
            generations: None,
        });
        scenario.description = Some(self.description(scenario));
    }

    fn description(&self, scenario: &Scenario) -> String {
        let causes_text = crate::cause::listed(&self.a.root_causes());
        let victims = self.victims();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let (groups, programs) = (
            scenario.groups.len() + 1,
            scenario.workload.programs.len() + 1,
        );
        let mut text = format!(
            "Imported from {} Flight Recorder dumps: {groups} group{}, {programs} program{}",
            self.dumps.len(),
            plural(groups),
            plural(programs),
        );
        if !causes_text.is_empty() {
            text += &format!("; the import's root causes: {causes_text}");
        }
        if !victims.is_empty() {
            text += &format!(
                "; {} left no dump as a victim and stays alive here",
                crate::diagnose::ranks_phrase(&victims)
            );
        }
        for g in &self.guesses {
            text += &format!("; {g}");
        }
        text
    }
}

/// Writes the programs into the scenario: the declared one as `[[workload.ops]]` (none when
/// no rank runs it), the others as `[[workload.programs]]`.
fn set_programs(scenario: &mut Scenario, programs: &Programs) {
    let mut list = programs.list.clone();
    let mut declared = list.remove(0);
    if declared.1.is_empty() {
        declared.0.clear();
    }
    scenario.workload.ops = declared.0;
    scenario.workload.programs = list
        .into_iter()
        .map(|(ops, ranks)| Program { ranks, ops })
        .collect();
}

/// Plans the replay of the job; `place` places the preemptions of ranks without a dump in time
/// (by a run of the scenario without them), else they are left out.
pub fn plan(name: &str, dumps: &[Dump], a: &Analysis, place: bool) -> Replay {
    plan_with(name, dumps, a, place, 0).0
}

/// As [`plan`], with the `root`-th choice of the roots the dumps do not record; also returns
/// how many choices there are.
fn plan_with(name: &str, dumps: &[Dump], a: &Analysis, place: bool, root: u32) -> (Replay, u32) {
    let mut p = Planner::new(dumps, a);
    p.rank_lists();
    p.same_bytes_where_completed();
    let roots = p.unrecorded(root);
    p.pending_messages();
    let mut programs = p.programs();
    p.compute(&mut programs);
    let index = p.index(&programs);
    let mut scenario = p.skeleton(name, &programs);
    p.hangs(&mut scenario, &programs);
    let preempts = p.preemptions(&programs);
    if place && !preempts.is_empty() && p.problems.is_empty() {
        p.place(&mut scenario, &mut programs, &preempts);
    }
    p.expect(&mut scenario);
    let replay = Replay {
        scenario,
        index,
        problems: p.problems,
    };
    (replay, roots)
}

/// How a run of the replay ended, as its `[expect]` states it.
fn verdict(outcome: Outcome, blocked: &[u32], causes: &[RootCause]) -> String {
    let mut b = blocked.to_vec();
    b.sort_unstable();
    let mut c = causes.to_vec();
    c.sort();
    format!(
        "{}, blocked [{}], root causes [{}]",
        outcome.name(),
        crate::diagnose::fmt_ranks(&b),
        crate::cause::listed(&c)
    )
}

/// Most roots tried for calls whose root the dumps do not record.
const MAX_ROOT_CHOICES: u32 = 24;

/// The scenario as TOML, or why the job cannot be replayed as the import tells it. Where the
/// dumps leave a root unknown, the first choice whose replay tells the import's story is kept:
/// one that blocks each rank in the collective the import finds it in, else the first one with
/// the import's blocked ranks and root causes.
pub fn write(name: &str, dumps: &[Dump], a: &Analysis) -> Result<String, String> {
    let want: Vec<(u32, u64)> = a
        .diagnosis
        .blocked
        .iter()
        .map(|b| (b.rank, b.seq))
        .collect();
    let (replay, choices) = plan_with(name, dumps, a, true, 0);
    let mut replay = Some(replay);
    let (mut told, mut refused) = (None, None);
    for k in 0..choices.clamp(1, MAX_ROOT_CHOICES) {
        let r = match replay.take() {
            Some(r) => r,
            None => plan_with(name, dumps, a, true, k).0,
        };
        match checked(r) {
            Ok((text, blocked)) if want.iter().all(|w| blocked.contains(w)) => return Ok(text),
            Ok((text, _)) => {
                told.get_or_insert(text);
            }
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    told.ok_or_else(|| {
        let e = refused.unwrap_or_default();
        match left_and_idle(dumps, a) {
            Some(why) if e.contains("would end") => format!("{e}: {why}"),
            _ => e,
        }
    })
}

/// Why no run can end as the dumps do, when ranks that blocked ranks wait for left their last
/// call and issued nothing after (gloo retires a failed call as it does a finished one): a
/// scenario's rank either waits in a call, or goes on past it and, its program ended, has
/// skipped what the others wait in.
fn left_and_idle(dumps: &[Dump], a: &Analysis) -> Option<String> {
    let blocked: Vec<u32> = a.diagnosis.blocked.iter().map(|b| b.rank).collect();
    let mut waited: Vec<u32> = a
        .diagnosis
        .blocked
        .iter()
        .flat_map(|b| b.waiting_for.iter().copied())
        .filter(|r| !blocked.contains(r))
        .collect();
    waited.sort_unstable();
    waited.dedup();
    let mut idle = Vec::new();
    let mut first: Option<(Call, u32, bool)> = None;
    for &r in &waited {
        let Some(d) = a.dump_of.get(r as usize).copied().flatten() else {
            continue;
        };
        let l = &a.lanes[d as usize];
        let Some(i) = l.queue.len().checked_sub(1) else {
            continue;
        };
        if !l.queue[i].status.closed() {
            continue;
        }
        idle.push(r);
        first.get_or_insert((l.call(i), l.queue[i].group, l.device));
    }
    let (c, g, device) = first?;
    let mut waiting = blocked;
    waiting.sort_unstable();
    Some(format!(
        "{} {} for {}, which left {} #{} of {} and issued nothing after{}: a rank of a scenario \
         either waits in a call or goes past it, and one whose program ends there skipped the \
         calls the others wait in, so no run ends as these dumps do",
        crate::diagnose::ranks_phrase(&waiting),
        if waiting.len() == 1 { "waits" } else { "wait" },
        crate::diagnose::ranks_phrase(&idle),
        lanes::op_name(dumps, &c),
        c.seq,
        a.groups
            .list
            .get(g as usize)
            .map_or(String::new(), |g| g.label()),
        if device {
            ""
        } else {
            " (gloo retires a failed call as it does a finished one)"
        }
    ))
}

/// The TOML of a planned replay, once a run of it ends as its `[expect]` says, and where its
/// ranks are blocked (rank, seq).
fn checked(r: Replay) -> Result<(String, Vec<(u32, u64)>), String> {
    if !r.problems.is_empty() {
        return Err(format!(
            "this job cannot be replayed as a scenario: {}",
            r.problems.join("; ")
        ));
    }
    let text = toml::to_string(&r.scenario).map_err(|e| e.to_string())?;
    // the file must read back as written, and replay to the import's story
    let sc = crate::scenario::parse(&text, "the written scenario")
        .map_err(|e| format!("the scenario written does not validate: {e}"))?;
    let (result, _, diagnosis) =
        crate::run::run_events(&sc, &crate::run::RunOptions::default(), &mut NullRecorder);
    let want = sc.expect.clone().unwrap_or_default();
    let got_outcome = if result.outcome == Outcome::Completed {
        Outcome::Completed
    } else {
        Outcome::Stalled
    };
    let mut got_blocked = diagnosis.blocked_ranks();
    got_blocked.sort_unstable();
    let mut got_causes = diagnosis.root_causes();
    got_causes.sort();
    let want_outcome = want.outcome.unwrap_or(Outcome::Completed);
    let want_blocked = want.blocked.unwrap_or_default();
    let want_causes = want.root_causes.unwrap_or_default();
    if got_outcome != want_outcome || got_blocked != want_blocked || got_causes != want_causes {
        return Err(format!(
            "this job cannot be replayed as a scenario: its replay would end {} where the import \
             found {}",
            verdict(got_outcome, &got_blocked, &got_causes),
            verdict(want_outcome, &want_blocked, &want_causes)
        ));
    }
    let text = format!(
        "# Written by `ringside import` from Flight Recorder dumps. `ringside run` on it checks\n\
         # [expect]: the import's blocked ranks and root causes (a rank without a dump is\n\
         # replayed as a preemption, so `missing:R` reads `preempted:R`).\n{text}"
    );
    let at = diagnosis.blocked.iter().map(|b| (b.rank, b.seq)).collect();
    Ok((text, at))
}
