//! The wait-for graph at one point in time, and who is blocked on what.

use super::causes::CauseBook;
use super::fold::{CallView, Fold, RankState, RankView, Slot, UnexpectedChunk, CALL_HISTORY};
use super::order;
use super::solve::{Solution, WaitGraph};
use super::{Blocked, CallOp, Cause, Diagnosis, EdgeKind, MessageWait, Via, WaitEdge};
use crate::cause::RootCause;
use crate::proto::vocab::OpKind;
use crate::proto::workload::{Along, Program, Step};
use crate::scenario::Outcome;
use std::collections::BTreeMap;

/// What one wait-for edge tells.
enum Class {
    /// The wait is explained at the far end (one or, for a two-sided mismatch, two causes).
    Root(Vec<RootCause>),
    /// The awaited chunk was sent and is on its way.
    InFlight,
    /// The awaited rank has not sent it yet.
    Waits,
}

/// A rank inside a collective that waits for peers (and is neither dead nor frozen).
fn waiting_call(v: &RankView) -> Option<&CallView> {
    if !v.is_live() {
        return None;
    }
    v.call.as_ref().filter(|c| !c.waiting_for.is_empty())
}

fn slot_of(rank: u32, c: &CallView) -> Slot {
    c.slot(rank)
}

/// The chunk `b` sent for the step of collective `ca` that `a` waits in, if it went to
/// another rank, which did not expect it.
fn misrouted<'f>(fold: &'f Fold, a: u32, ca: &CallView, b: u32) -> Option<&'f UnexpectedChunk> {
    if ca.peer.is_some() {
        return None;
    }
    let slot = Slot::collective(ca.group, ca.generation, ca.seq);
    fold.unexpected
        .iter()
        .find(|u| u.slot == slot && u.step == ca.step && u.from == b && u.rank != a)
}

/// Classifies the edge `a -> b` of waiter `a` in call `ca`. A waiter left outside the group
/// by a membership change is also blocked on whatever keeps it out (`out`, from
/// [`CauseBook::left_out`]).
fn classify(
    fold: &Fold,
    book: &mut CauseBook,
    a: u32,
    ca: &CallView,
    b: u32,
    out: &[RootCause],
) -> Class {
    match classify_edge(fold, book, a, ca, b) {
        Class::Root(mut keys) => {
            for k in out {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
            Class::Root(keys)
        }
        _ if !out.is_empty() => Class::Root(out.to_vec()),
        class => class,
    }
}

fn classify_edge(fold: &Fold, book: &mut CauseBook, a: u32, ca: &CallView, b: u32) -> Class {
    let Some(vb) = fold.ranks.get(b as usize) else {
        return Class::Waits;
    };
    if matches!(vb.state, RankState::Dead | RankState::Refused) {
        return Class::Root(vec![book.gone(fold, b)]);
    }
    // a rank that left no Flight Recorder dump: what it called is unknown, so no call it made
    // or did not make explains a wait while it lives
    if vb.no_dump {
        return Class::Waits;
    }
    if let Some(i) = fold.faults.iter().position(|f| {
        f.kind == crate::fault::FaultKind::Partition && f.active_at(fold.t) && f.cuts(b, a)
    }) {
        return Class::Root(vec![book.partitioned(fold, i)]);
    }
    let slot = slot_of(a, ca);
    let issued = vb.call_at(slot);
    if let Some(pc) = issued {
        // only the parameters (the message fingerprint) decide what a rank consumes: a call
        // that is the same op with the same parameters from another call site still matches
        let mine = fold.ranks[a as usize].call_at(slot).map(|c| c.sig);
        if mine.is_some_and(|s| !s.same_params(&pc.sig)) {
            let keys = book.mismatch(fold, slot, &[a, b]);
            if !keys.is_empty() {
                return Class::Root(keys);
            }
        }
    }
    // a restarted process outside the group: its old one died with what it had sent, and the
    // new one knows nothing of this call
    if fold.membership.joining.contains(&b)
        && fold.faults.iter().any(|f| {
            f.kind == crate::fault::FaultKind::Preempt && f.ranks == [b] && f.begin_ns <= fold.t
        })
    {
        return Class::Root(vec![book.preempted(fold, b)]);
    }
    // b sent the chunk of this step to another rank, whose schedule did not expect it
    if let Some(u) = misrouted(fold, a, ca, b) {
        return Class::Root(vec![book.misrouted(a, ca, u)]);
    }
    // the trace shows whether b sent it: then it is on its way (or arrived and is being
    // reduced); a partition or a dead sender were ruled out above
    if fold.has_sent(b, a, ca) {
        return Class::InFlight;
    }
    if vb.paused {
        return Class::Root(vec![book.paused(fold, b)]);
    }
    // a peer that moved on to a later generation left this call behind: it skipped nothing
    let moved_on = fold
        .membership
        .generation_of
        .get(&b)
        .is_some_and(|&g| g > ca.generation.0);
    // a peer outside the group will not issue this call: one left out itself
    if issued.is_none() && fold.membership.joining.contains(&b) {
        return Class::Waits;
    }
    if issued.is_none() && !moved_on {
        if slot.pair.is_some() {
            if let Some(k) = missing_message(fold, book, a, b, slot) {
                return Class::Root(vec![k]);
            }
        }
        match vb.state {
            RankState::Done
                if !fold.declared(a)
                    && fold.declared(b)
                    && !super::causes::same_collectives(fold, a, b, ca.index) =>
            {
                return Class::Root(vec![book.extra(fold, a, slot, b)])
            }
            RankState::Done => return Class::Root(vec![book.skipped(fold, b, slot, a)]),
            // alive, not computing and in no collective for some time (between two events of
            // one instant, a rank that just finished computing has not called yet)
            RankState::Running if vb.call.is_none() && vb.since_ns < fold.t => {
                // one held in a rendezvous that cannot complete is not hung: what holds it is
                let held = book.left_out(fold, b);
                if !held.is_empty() {
                    return Class::Root(held);
                }
                return Class::Root(vec![book.hung(fold, b)]);
            }
            _ => {}
        }
        // in a call further on in its program without ever issuing this collective: it went
        // past it (on a mesh the calls of its other groups carry it on; within one group the
        // shifted call would show as a mismatch instead); a message's two ends sit at
        // different places of the program, which `missing_message` compares
        let site_b = if fold.same_program(a, b) {
            Some(ca.index)
        } else {
            // a program that makes the same collective calls (another stage of a pipeline)
            super::causes::site_in(fold, a, b, ca.index)
        };
        if let Some(ib) = site_b.filter(|_| slot.pair.is_none()) {
            let past = vb.call.as_ref().is_some_and(|cb| {
                (cb.iteration, cb.index) > (ca.iteration, ib) && cb.generation == ca.generation
            });
            if past && history_reaches(vb, (ca.iteration, ib)) {
                return Class::Root(vec![book.skipped(fold, b, slot, a)]);
            }
        }
    }
    Class::Waits
}

/// Rank `a` waits for its end of message `slot` from rank `b`, which has not issued it: when
/// `b`'s program never issues it, the call of whichever of the two deviates from what the
/// scenario declares is at fault (`a`'s extra call, or `b`'s missing one); when `b` went past
/// the place in its program where it should have, `b` skipped it.
fn missing_message(
    fold: &Fold,
    book: &mut CauseBook,
    a: u32,
    b: u32,
    slot: Slot,
) -> Option<RootCause> {
    if fold.workload.as_ref()?.app_driven {
        // a real program declares no calls: only the messages tell who deviated
        return wrong_peer(fold, book, a, b, slot);
    }
    let vb = &fold.ranks[b as usize];
    match fold.message_site(b, &slot) {
        None if !fold.declared(a) && fold.declared(b) => Some(book.extra(fold, a, slot, b)),
        None => Some(book.skipped(fold, b, slot, a)),
        Some(site) => {
            let past = vb.state == RankState::Done
                || vb.call.as_ref().map(|c| (c.iteration, c.index)) > Some(site)
                || vb.last_call > Some(site);
            past.then(|| book.skipped(fold, b, slot, a))
        }
    }
}

/// Rank `a` waits in a recv from `b`, which never sent it anything in the group: when another
/// rank sent `a` messages there and `a` never posted a recv from it, `a`'s recv names the wrong
/// peer. (A receiver that took earlier messages of a sender is only behind it.)
fn wrong_peer(fold: &Fold, book: &mut CauseBook, a: u32, b: u32, slot: Slot) -> Option<RootCause> {
    if slot.pair != Some((b, a)) {
        return None;
    }
    let senders = fold.p2p_senders(a, slot.group, slot.generation);
    if senders.iter().any(|&(s, _)| s == b) {
        return None;
    }
    let (c, _) = senders.into_iter().find(|&(_, took)| !took)?;
    Some(book.wrong_peer(a, b, c))
}

/// Why live rank `r` issues no call in a run that stalled with nobody waiting in a collective:
/// whatever keeps it in a rendezvous or outside the group; else it is `hung`, unless it is in
/// a membership change. (A rank someone waits for is judged in `classify_edge`: a hung rank
/// may sit in a rendezvous too, when the group rebuilds around it.)
fn idle(fold: &Fold, book: &mut CauseBook, r: u32) -> Vec<RootCause> {
    let held = book.left_out(fold, r);
    let m = &fold.membership;
    if !held.is_empty()
        || m.joining.contains(&r)
        || m.rendezvous.contains_key(&r)
        || m.waiting.contains_key(&r)
    {
        return held;
    }
    vec![book.hung(fold, r)]
}

/// Whether `v`'s call history goes back at least to the call site of `c`, so that a call it
/// issued there would still be in it.
fn history_reaches(v: &RankView, site: (u32, u32)) -> bool {
    v.history.len() < CALL_HISTORY || v.history.front().is_some_and(|p| p.sig.site() <= site)
}

/// Builds the wait-for graph of `fold` and finds the blocked ranks and their root causes.
pub(super) fn analyze(fold: &Fold) -> Diagnosis {
    let mut book = CauseBook::default();
    let graph = classify_waits(fold, &mut book);
    let mut s = graph.solve();
    name_cycles(fold, &mut book, &mut s);
    late(fold, &mut book, &mut s);
    churn(fold, &mut book, &mut s);
    hold(fold, &mut book, &mut s);
    let mut d = report(fold, &mut book, s);
    d.merge_missing();
    d
}

/// Every wait of every rank inside a call, classified.
fn classify_waits(fold: &Fold, book: &mut CauseBook) -> WaitGraph {
    let mut g = WaitGraph::new(fold.ranks.len());
    for v in &fold.ranks {
        let Some(c) = waiting_call(v) else { continue };
        g.wait(v.rank);
        let out = book.left_out(fold, v.rank);
        for &b in &c.waiting_for {
            let (kind, causes) = match classify(fold, book, v.rank, c, b, &out) {
                Class::Root(keys) => (EdgeKind::RootCause, keys),
                Class::InFlight => (EdgeKind::InFlight, Vec::new()),
                Class::Waits => (EdgeKind::Waits, Vec::new()),
            };
            g.add(WaitEdge {
                from: v.rank,
                to: b,
                kind,
                causes,
                message: c.peer.map(|_| MessageWait {
                    op: c.op,
                    group: c.group.0,
                    seq: c.seq.0,
                }),
            });
        }
    }
    node_waits(fold, book, &mut g);
    g
}

/// Every wait of a live node of the program's own, classified as a call's: a fault holds it
/// (the awaited node dead, frozen or cut off), or the awaited node was preempted and started
/// afresh (what it knew or was sent died with its predecessor), or it waits itself, or it
/// waits for nobody and so will never answer.
fn node_waits(fold: &Fold, book: &mut CauseBook, g: &mut WaitGraph) {
    for v in fold
        .ranks
        .iter()
        .filter(|v| v.is_live() && v.call.is_none())
    {
        let Some(w) = &v.node_wait else { continue };
        g.wait(v.rank);
        for &b in &w.waiting_for {
            let held = holding(fold, book, v.rank, b);
            let awaited_waits = fold
                .ranks
                .get(b as usize)
                .is_some_and(|vb| vb.node_wait.is_some() || vb.call.is_some());
            let restarted = fold
                .ranks
                .get(b as usize)
                .is_some_and(|vb| vb.incarnation > 0);
            let (kind, causes) = if !held.is_empty() {
                (EdgeKind::RootCause, held)
            } else if restarted {
                (EdgeKind::RootCause, vec![book.preempted(fold, b)])
            } else if awaited_waits || b as usize >= fold.ranks.len() {
                (EdgeKind::Waits, Vec::new())
            } else {
                (EdgeKind::RootCause, vec![book.unanswered(fold, b, v.rank)])
            };
            g.add(WaitEdge {
                from: v.rank,
                to: b,
                kind,
                causes,
                message: None,
            });
        }
    }
}

/// Cycles of waits with nothing on its way: deadlocks.
fn name_cycles(fold: &Fold, book: &mut CauseBook, s: &mut Solution) {
    let mut seeds = Vec::new();
    for ranks in s.cycles() {
        let deviants = inverted(fold, s, &ranks);
        if deviants.is_empty() {
            let key = book.deadlock(fold, s, &ranks);
            seeds.extend(ranks.iter().map(|&r| (key.clone(), r)));
            continue;
        }
        for (r, inv) in deviants {
            let key = book.inverted(fold, r, &inv, &ranks);
            seeds.extend(ranks.iter().map(|&x| (key.clone(), x)));
        }
    }
    s.propagate(&seeds);
}

/// A rank of a cycle whose call order deviates: the ranks of the cycle that wait for it, the
/// ranks whose order it deviates from, and whether its own earlier calls show the deviation
/// (else its program's order is the minority's).
pub(super) struct Inversion {
    pub(super) waiters: Vec<u32>,
    pub(super) order: Vec<u32>,
    pub(super) own: bool,
}

/// The ranks of cycle `ranks` whose calls of two different groups come in another order than
/// the order they follow (see [`order`]): each sits in one call while a peer of the cycle
/// waits for it in a call of another group that it has not made. A rank's verdict is
/// [`order::verdict`] of its own history (its program's calls before the current one) and of
/// how its program orders the two calls against every other rank's program. Empty when no
/// rank's order stands out: the cycle is a deadlock.
fn inverted(fold: &Fold, s: &Solution, ranks: &[u32]) -> Vec<(u32, Inversion)> {
    let Some(w) = fold.workload.as_deref() else {
        return Vec::new();
    };
    // a call as orders compare them: the group dimension it runs along and its op
    let kind = |r: u32| -> Option<(Along, OpKind)> {
        let c = fold.ranks.get(r as usize)?.call.as_ref()?;
        let call = w.program(r).call(c.index)?;
        Some((call.along, call.op))
    };
    let key = |(along, op): (Along, OpKind)| order::CallKey {
        group: match along {
            Along::World => u32::MAX,
            Along::Layout(i) => i,
        },
        like: op as u64,
    };
    // a rank's calls before its current one: the program's, after a whole earlier iteration
    let history = |r: u32| -> Vec<order::CallKey> {
        let Some(c) = fold.ranks.get(r as usize).and_then(|v| v.call.as_ref()) else {
            return Vec::new();
        };
        let calls = || {
            w.program(r).steps.iter().filter_map(|st| match st {
                Step::Call { index, call } => Some((*index, key((call.along, call.op)))),
                _ => None,
            })
        };
        let earlier = calls().filter(|_| c.iteration > 0).map(|(_, k)| k);
        earlier
            .chain(calls().filter(|(i, _)| *i < c.index).map(|(_, k)| k))
            .collect()
    };
    // where a program first makes a call of that kind
    let place = |p: &Program, along: Along, op: OpKind| -> Option<usize> {
        p.steps.iter().position(
            |st| matches!(st, Step::Call { call, .. } if call.along == along && call.op == op),
        )
    };
    let mut votes: Vec<(u32, order::Votes)> = Vec::new();
    let mut found: BTreeMap<u32, Inversion> = BTreeMap::new();
    for &r in ranks {
        let mut v = order::Votes::default();
        if let Some((along, op)) = kind(r) {
            let mine_before = history(r);
            for &p in ranks
                .iter()
                .filter(|&&p| p != r && s.waits_of(p).any(|x| x == r))
            {
                let Some((a_along, a_op)) = kind(p) else {
                    continue;
                };
                if a_along == along {
                    continue;
                }
                let own = order::deviates(&mine_before, key((along, op)), key((a_along, a_op)));
                let order_of = |q: u32| -> Option<bool> {
                    let prog = w.program(q);
                    Some(place(prog, along, op)? < place(prog, a_along, a_op)?)
                };
                // every rank's program votes (ranks sharing a program vote alike); a program
                // without the awaited call (a replay's, cut where its rank stopped) orders the
                // call its rank sits in first
                let (mut same, mut other) = (Vec::new(), Vec::new());
                let mine = order_of(r);
                for q in 0..w.world_size {
                    let o = if q == r {
                        Some(mine.unwrap_or(true))
                    } else {
                        order_of(q)
                    };
                    match o {
                        Some(o) if o == mine.unwrap_or(true) => same.push(q),
                        Some(_) => other.push(q),
                        None => {}
                    }
                }
                let programs = if same.is_empty() {
                    None
                } else {
                    match same.len().cmp(&other.len()) {
                        std::cmp::Ordering::Less => Some(true),
                        std::cmp::Ordering::Greater => Some(false),
                        std::cmp::Ordering::Equal => None,
                    }
                };
                let verdict = order::verdict(own, programs);
                v.add(verdict);
                if verdict == Some(true) {
                    let own = own == Some(true);
                    let e = found.entry(r).or_insert_with(|| Inversion {
                        waiters: Vec::new(),
                        order: if own { Vec::new() } else { other },
                        own,
                    });
                    e.waiters.push(p);
                }
            }
        }
        votes.push((r, v));
    }
    order::deviants(&votes)
        .into_iter()
        .filter_map(|r| {
            let mut inv = found.remove(&r)?;
            if inv.own {
                inv.order = inv.waiters.clone();
            }
            Some((r, inv))
        })
        .collect()
}

/// A watchdog that fired while its rank was merely in progress: the chunks were late. The same
/// lateness holds back other waiters too (a chunk late on the same slow link, a peer still
/// computing): they cannot finish before the job is torn down either.
fn late(fold: &Fold, book: &mut CauseBook, s: &mut Solution) {
    let mut seeds = Vec::new();
    for v in &fold.ranks {
        let aborted = v.call.as_ref().is_some_and(|c| c.aborted.is_some());
        if s.is_waiter(v.rank) && aborted && !s.is_blocked(v.rank) {
            seeds.extend(lateness(fold, book, s, v.rank));
        }
    }
    if seeds.is_empty() {
        return;
    }
    let found: Vec<RootCause> = seeds.iter().map(|(k, _)| k.clone()).collect();
    for v in &fold.ranks {
        let a = v.rank;
        if !s.is_waiter(a) || s.is_blocked(a) {
            continue;
        }
        for &b in s.in_flight_of(a) {
            let k = book.late(fold, a, b);
            if found.contains(&k) {
                seeds.push((k, a));
            }
        }
        for b in s.waits_of(a) {
            if !s.is_waiter(b) {
                let k = book.working(fold, a, b);
                if found.contains(&k) {
                    seeds.push((k, a));
                }
            }
        }
    }
    s.propagate(&seeds);
}

/// An elastic run that stalled with nobody blocked stopped because the group kept rebuilding
/// without getting further: whatever made members suspect one another since the last completed
/// call holds everyone back.
fn churn(fold: &Fold, book: &mut CauseBook, s: &mut Solution) {
    if fold.outcome != Some(Outcome::Stalled) || s.blocked_by.iter().any(|b| !b.is_empty()) {
        return;
    }
    let keys = book.churn(fold);
    let seeds: Vec<(RootCause, u32)> = (0..fold.ranks.len() as u32)
        .filter(|&r| s.is_waiter(r))
        .flat_map(|r| keys.iter().map(move |k| (k.clone(), r)))
        .collect();
    s.propagate(&seeds);
}

/// Every fault that still holds a rank or link along a blocked rank's chains of waits is a
/// root cause of its own, next to the one that explains the wait first: a second dead or frozen
/// rank, a partition that cuts a link the chain crosses.
fn hold(fold: &Fold, book: &mut CauseBook, s: &mut Solution) {
    let mut held = Vec::new();
    for e in s.graph().edges() {
        for k in holding(fold, book, e.from, e.to) {
            held.push((k, e.from));
        }
    }
    s.propagate_along_all(&held);
}

/// The diagnosis of the solved graph.
fn report(fold: &Fold, book: &mut CauseBook, s: Solution) -> Diagnosis {
    let mut blocked = Vec::new();
    let mut in_progress = Vec::new();
    let mut per_cause: BTreeMap<RootCause, Vec<u32>> = BTreeMap::new();
    for v in &fold.ranks {
        if !s.is_waiter(v.rank) {
            continue;
        }
        let mut keys = s.blocked_by[v.rank as usize].clone();
        if keys.is_empty() {
            in_progress.push(v.rank);
            continue;
        }
        keys.sort();
        keys.dedup();
        for k in &keys {
            per_cause.entry(k.clone()).or_default().push(v.rank);
        }
        let Some(c) = v.call.as_ref() else {
            if let Some(w) = &v.node_wait {
                blocked.push(node_blocked(v.rank, w, keys));
            }
            continue;
        };
        blocked.push(Blocked {
            rank: v.rank,
            op: CallOp::Op(c.op),
            algorithm: Via::Algorithm(c.algorithm),
            group: c.group.0,
            generation: c.generation.0,
            seq: c.seq.0,
            iteration: c.iteration,
            index: c.index,
            step: c.step,
            steps: c.steps,
            waiting_for: c.waiting_for.clone(),
            since_ns: c.since_ns,
            causes: keys,
            peer: c.peer,
        });
    }
    // a run that stalled with nobody waiting in a collective: a rank that stopped issuing
    // calls holds it up (the others finished or wait outside collectives), or whatever keeps
    // a rank in a rendezvous or outside the group
    if fold.outcome == Some(Outcome::Stalled) && blocked.is_empty() && in_progress.is_empty() {
        for v in &fold.ranks {
            if !(v.is_live()
                && v.state == RankState::Running
                && v.call.is_none()
                && v.since_ns < fold.t)
            {
                continue;
            }
            for k in idle(fold, book, v.rank) {
                per_cause.entry(k).or_default();
            }
        }
    }
    let causes = per_cause
        .into_iter()
        .map(|(k, blocked)| {
            let (text, ranks) = book.describe(&k);
            Cause {
                cause: k,
                text,
                ranks,
                blocked,
            }
        })
        .collect();
    Diagnosis {
        t: fold.t,
        blocked,
        causes,
        waits: s.into_edges(),
        in_progress,
        stragglers: Vec::new(),
    }
}

/// A node blocked in its wait `w` on `causes`: its wait is its only "call", named by what it
/// waits in, with no group, sequence number or steps.
fn node_blocked(rank: u32, w: &super::fold::NodeWaitView, causes: Vec<RootCause>) -> Blocked {
    Blocked {
        rank,
        op: CallOp::Recorded(w.on.as_str().into()),
        algorithm: Via::Backend("node".into()),
        group: 0,
        generation: 0,
        seq: 0,
        iteration: 0,
        index: 0,
        step: 0,
        steps: 0,
        waiting_for: w.waiting_for.clone(),
        since_ns: w.since_ns,
        causes,
        peer: None,
    }
}

/// The faults that hold the wait of `a` for `b` now, whatever else explains it: `b` dead or
/// frozen, and every partition in force that cuts the link between them, in either direction
/// (the chunks `b` waits for from `a` are as lost as those `a` waits for).
fn holding(fold: &Fold, book: &mut CauseBook, a: u32, b: u32) -> Vec<RootCause> {
    let mut keys = Vec::new();
    let Some(vb) = fold.ranks.get(b as usize) else {
        return keys;
    };
    if matches!(vb.state, RankState::Dead | RankState::Refused) {
        keys.push(book.gone(fold, b));
    } else if vb.paused {
        keys.push(book.paused(fold, b));
    }
    for (i, f) in fold.faults.iter().enumerate() {
        if f.kind == crate::fault::FaultKind::Partition && f.active_at(fold.t) && f.separates(b, a)
        {
            keys.push(book.partitioned(fold, i));
        }
    }
    keys
}

/// Why the watchdog of `start`, which was in progress, fired anyway: follow its waits to the
/// chunks still on their way and the peers still working. Each rank at that frontier — the
/// one whose chunk is late, the one waiting for a peer that has not arrived — is blocked on
/// the lateness (its call cannot finish before the job is torn down), and so is everyone
/// upstream of it, `start` included.
fn lateness(fold: &Fold, book: &mut CauseBook, s: &Solution, start: u32) -> Vec<(RootCause, u32)> {
    let mut seeds = Vec::new();
    let mut seen = vec![false; s.graph().len()];
    let mut stack = vec![start];
    seen[start as usize] = true;
    while let Some(a) = stack.pop() {
        for &b in s.in_flight_of(a) {
            seeds.push((book.late(fold, a, b), a));
        }
        for b in s.waits_of(a) {
            if s.is_waiter(b) {
                if !seen[b as usize] {
                    seen[b as usize] = true;
                    stack.push(b);
                }
            } else {
                seeds.push((book.working(fold, start, b), a));
            }
        }
    }
    seeds
}
