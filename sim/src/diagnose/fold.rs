//! Folding a trace's events into the state of every rank at a point in time.
//!
//! The same fold serves the run's own report, `explain` on a recorded trace, and the TUI, so
//! all three see exactly the same state for the same events.

use super::membership::MembershipView;
use crate::cause::RootCause;
use crate::fault::FaultKind;
use crate::proto::event::AbortReason;
use crate::proto::workload::{Along, Step, WorkloadConfig};
use crate::proto::{Generation, GroupId, Rank, SeqNo, StepEvent};
use crate::scenario::{Algorithm, Dtype, OpKind, Outcome, ReduceOp, RendezvousKind, Scenario};
use crate::trace::{Event, FaultPhase, Header, Sent};
use crate::units::Nanos;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// How many recent calls the fold remembers per rank (as the flight recorder does).
pub const CALL_HISTORY: usize = 64;

/// A collective call as one rank issued it: where in the program (iteration, index) and with
/// which parameters. Two ranks in the same (group, generation, seq) must agree on all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CallSig {
    pub iteration: u32,
    pub index: u32,
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub dtype: Dtype,
    pub root: u32,
    pub reduce: ReduceOp,
    pub elements: u32,
}

impl CallSig {
    /// Same parameters (the message fingerprint, without the slot), wherever in the program.
    /// The two ends of a send and recv agree when their messages do: size, dtype, elements.
    pub fn same_params(&self, o: &CallSig) -> bool {
        if self.op.point_to_point() && o.op.point_to_point() {
            return (self.bytes, self.dtype, self.elements) == (o.bytes, o.dtype, o.elements);
        }
        (
            self.op,
            self.algorithm,
            self.bytes,
            self.dtype,
            self.root,
            self.reduce,
            self.elements,
        ) == (
            o.op,
            o.algorithm,
            o.bytes,
            o.dtype,
            o.root,
            o.reduce,
            o.elements,
        )
    }

    /// The call site in the training loop.
    pub fn site(&self) -> (u32, u32) {
        (self.iteration, self.index)
    }
}

/// The identity of a call across ranks: a collective's (group, generation, seq), or a message
/// between two members, `pair` = (sender, receiver) world ranks and `seq` its order between
/// them in that direction (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Slot {
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub pair: Option<(u32, u32)>,
}

impl Slot {
    /// A collective's slot.
    pub fn collective(group: GroupId, generation: Generation, seq: SeqNo) -> Slot {
        Slot {
            group,
            generation,
            seq,
            pair: None,
        }
    }
}

/// The (sender, receiver) of a send or recv that `rank` issued with `peer`.
pub fn pair_of(op: OpKind, rank: u32, peer: Option<u32>) -> Option<(u32, u32)> {
    let peer = peer.filter(|_| op.point_to_point())?;
    Some(if op == OpKind::Send {
        (rank, peer)
    } else {
        (peer, rank)
    })
}

/// One of a rank's recent calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PastCall {
    pub slot: Slot,
    pub sig: CallSig,
    pub called_ns: Nanos,
    /// Completed on this rank.
    pub completed: bool,
}

/// The ranks that issued one collective with the same signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Variant {
    pub sig: CallSig,
    pub count: u32,
    /// The ranks, in call order (dropped once every member completed one agreed call).
    pub ranks: Vec<u32>,
}

/// Time others spent waiting for a rank while a straggler fault (slow, delay, loss) touched it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lateness {
    /// The rank others waited for.
    pub rank: u32,
    /// Index of the fault in the scenario.
    pub fault: u32,
    pub waited_ns: Nanos,
}

/// What a rank is doing, as the trace shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankState {
    /// Not started yet.
    Idle,
    /// Between calls (issuing the next one, or stuck outside collectives).
    Running,
    Computing,
    /// Inside a collective, waiting for a peer.
    Waiting,
    /// Its collective was aborted by the watchdog while it waited.
    Blocked,
    Paused,
    Dead,
    Done,
    /// A restarted process that could not rejoin.
    Refused,
}

impl RankState {
    pub fn name(self) -> &'static str {
        match self {
            RankState::Idle => "idle",
            RankState::Running => "running",
            RankState::Computing => "computing",
            RankState::Waiting => "waiting",
            RankState::Blocked => "blocked",
            RankState::Paused => "paused",
            RankState::Dead => "dead",
            RankState::Done => "done",
            RankState::Refused => "refused",
        }
    }
}

/// The latest chunk a sender sent to one receiver in one group: (generation, seq, step). For
/// point-to-point messages (`p2p`: data, or acknowledgements) the seq is the message's order.
/// Packed, so that a message costs two compares and a store: the sender and the group in one
/// word, and (generation, seq, step) in one number that orders as the tuple does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentMark {
    key: u64,
    p2p: Option<P2pKind>,
    at: u128,
}

impl SentMark {
    #[inline(always)]
    fn key(from: u32, group: GroupId) -> u64 {
        (u64::from(from) << 32) | u64::from(group.0)
    }

    #[inline(always)]
    fn at(generation: Generation, seq: u64, step: u32) -> u128 {
        (u128::from(generation.0) << 96) | (u128::from(seq) << 32) | u128::from(step)
    }
}

/// A message a sender sent one receiver, as its mark sees it: the chunk `step` of the
/// sender's call `(group, generation, seq)`, or (`p2p`) the point-to-point message `seq` of
/// `group`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Marked {
    pub to: u32,
    pub group: GroupId,
    pub p2p: Option<P2pKind>,
    pub generation: Generation,
    pub seq: u64,
    pub step: u32,
}

/// What a send marks as sent: a collective's chunk `(seq, None, step)`, a point-to-point
/// message or acknowledgement `(order, Some(kind), 0)`, or nothing (membership traffic).
#[inline(always)]
pub(super) fn marked_by(s: &Sent) -> Option<(u64, Option<P2pKind>, u32)> {
    // a chunk is told by its step, without reading the message's kind
    match (s.seq, s.step) {
        (Some(seq), Some(step)) => Some((seq, None, step)),
        (Some(seq), None) => match s.msg {
            "p2p" => Some((seq, Some(P2pKind::Data), 0)),
            "p2p_ack" => Some((seq, Some(P2pKind::Ack), 0)),
            _ => None,
        },
        (None, _) => None,
    }
}

/// The group and generation of the running call of `v` that a chunk (`p2p` None) of `seq`, or
/// a point-to-point message of order `seq` to `to`, belongs to ((0, 0) when none does).
#[inline(always)]
fn sender_call(v: &RankView, to: u32, seq: u64, p2p: Option<P2pKind>) -> (GroupId, Generation) {
    let mine = |c: &&CallView| c.seq.0 == seq && (p2p.is_none() || c.peer == Some(to));
    match v.call.as_ref().filter(mine) {
        Some(c) => (c.group, c.generation),
        None => match v.beside.iter().find(mine) {
            Some(c) => (c.group, c.generation),
            None => (GroupId(0), Generation(0)),
        },
    }
}

/// What a point-to-point message carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2pKind {
    Data,
    Ack,
}

/// A rank's current (or watchdog-aborted) collective.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallView {
    pub iteration: u32,
    pub index: u32,
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub dtype: Dtype,
    pub root: u32,
    pub reduce: ReduceOp,
    pub elements: u32,
    pub step: u32,
    pub steps: u32,
    pub waiting_for: Vec<u32>,
    /// Send and recv: the other end.
    pub peer: Option<u32>,
    /// When the rank started waiting in the current step.
    pub since_ns: Nanos,
    pub called_ns: Nanos,
    /// Set when the watchdog aborted the call: the abort's reason.
    pub aborted: Option<String>,
    /// Waiting before this time has been charged to stragglers already.
    #[serde(skip)]
    pub charged_ns: Nanos,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankView {
    pub rank: u32,
    pub state: RankState,
    pub incarnation: u32,
    /// Paused (SIGSTOP) right now; `state` keeps what it was doing.
    pub paused: bool,
    pub paused_since: Option<Nanos>,
    pub dead_since: Option<Nanos>,
    pub iteration: u32,
    /// The call the rank waits in: of its running calls, the first it issued that waits for a
    /// peer, else the first.
    pub call: Option<CallView>,
    /// Its other running calls, in the order issued: a program's sends and recvs outstanding
    /// at once (`isend`/`irecv`, `batch_isend_irecv`), or its calls on other groups. Only a
    /// run a real program drove has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<CallView>,
    /// Calls issued so far, as (iteration, index).
    pub calls: u32,
    /// The last (iteration, index) this rank issued.
    pub last_call: Option<(u32, u32)>,
    pub since_ns: Nanos,
    /// The last calls this rank issued, oldest first (at most [`CALL_HISTORY`]).
    pub history: VecDeque<PastCall>,
    /// In an import of a job's Flight Recorder dumps, a rank that left no dump: the trace
    /// does not know what it called (see [`Fold::of_header`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_dump: bool,
    /// What the node of the program's own that the rank runs waits for, if it waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_wait: Option<NodeWaitView>,
}

/// A node's wait ([`Event::NodeWait`]): in what, for whom, since when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeWaitView {
    pub on: String,
    pub waiting_for: Vec<u32>,
    pub since_ns: Nanos,
}

impl RankView {
    /// What this rank issued in `slot`, if it is still in the history.
    pub fn call_at(&self, slot: Slot) -> Option<&PastCall> {
        // seq numbers of one (group, generation) are consecutive, so look from the newest
        self.history.iter().rev().find(|c| c.slot == slot)
    }

    /// Whether the rank is alive and not frozen.
    pub fn is_live(&self) -> bool {
        !matches!(self.state, RankState::Dead | RankState::Refused) && !self.paused
    }

    /// Every running call of the rank: the one it waits in, then those beside it.
    pub fn running(&self) -> impl Iterator<Item = &CallView> {
        self.call.iter().chain(&self.beside)
    }

    /// The running call `pick` chooses, the newest when several fit (a step or an abort comes
    /// right after its call's own events).
    fn running_mut(&mut self, pick: impl Fn(&CallView) -> bool) -> Option<&mut CallView> {
        self.call
            .iter_mut()
            .chain(self.beside.iter_mut())
            .filter(|c| pick(c))
            .max_by_key(|c| c.issued())
    }

    /// Takes the running call `pick` chooses out of the rank's calls.
    fn take_running(&mut self, pick: impl Fn(&CallView) -> bool) -> Option<CallView> {
        if self.call.as_ref().is_some_and(&pick) {
            return self.call.take();
        }
        let k = self.beside.iter().position(pick)?;
        Some(self.beside.remove(k))
    }

    /// Puts the call the rank waits in first (see `call`) after its calls changed.
    fn settle_calls(&mut self) {
        if self.beside.is_empty() {
            return;
        }
        let mut all: Vec<CallView> = self.call.take().into_iter().collect();
        all.append(&mut self.beside);
        all.sort_by_key(CallView::issued);
        let first = all
            .iter()
            .position(|c| !c.waiting_for.is_empty())
            .unwrap_or(0);
        self.call = Some(all.remove(first));
        self.beside = all;
    }
}

impl CallView {
    /// The order the rank issued its calls in.
    fn issued(&self) -> (Nanos, u32, u32) {
        (self.called_ns, self.iteration, self.index)
    }

    /// Whether this is the call a step of `seq` in `group`, waiting for `waiting_for`, is of:
    /// a send or recv waits for its peer or nobody.
    fn steps_in(&self, group: GroupId, seq: SeqNo, waiting_for: &[u32]) -> bool {
        self.group == group
            && self.seq == seq
            && match (self.peer, waiting_for) {
                (Some(p), [w]) => p == *w,
                (Some(_), []) | (None, _) => true,
                (Some(_), _) => false,
            }
    }

    /// Ends the current wait interval at `t`: how long it waited, when waiting for someone
    /// (the fold charges it to a straggler fault, if one touches them).
    #[inline(always)]
    fn close_wait(&mut self, t: Nanos) -> Option<Nanos> {
        let since = self.charged_ns.max(self.since_ns);
        self.charged_ns = t;
        (self.aborted.is_none() && t > since && !self.waiting_for.is_empty()).then(|| t - since)
    }

    /// Call `seq` entered `step` of `steps` at `t` and waits for `waiting_for` (when this is
    /// the call).
    #[inline(always)]
    fn enter_step<W>(
        &mut self,
        t: Nanos,
        seq: SeqNo,
        step: u32,
        steps: u32,
        waiting_for: &[W],
        id: impl Fn(&W) -> u32,
    ) {
        if self.seq != seq {
            return;
        }
        self.step = step;
        self.steps = steps;
        match (self.waiting_for.as_mut_slice(), waiting_for) {
            // in place, as a step mostly waits for one rank, as the one before
            ([w], [r]) => *w = id(r),
            (ws, rs) if ws.len() == rs.len() => {
                for (w, r) in ws.iter_mut().zip(rs) {
                    *w = id(r);
                }
            }
            _ => {
                self.waiting_for.clear();
                self.waiting_for.extend(waiting_for.iter().map(id));
            }
        }
        self.since_ns = t;
    }

    /// The call's identity across ranks.
    pub fn slot(&self, rank: u32) -> Slot {
        Slot {
            group: self.group,
            generation: self.generation,
            seq: self.seq,
            pair: pair_of(self.op, rank, self.peer),
        }
    }
}

/// Aggregate of one call across ranks, keyed by its [`Slot`]. A message's two ends are one
/// op, named `send` (with the sender's algorithm once the sender called it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpView {
    pub iteration: u32,
    pub index: u32,
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub bytes: u64,
    pub start_ns: Nanos,
    pub end_ns: Option<Nanos>,
    pub ranks_called: u32,
    pub ranks_completed: u32,
    /// Every completion so far was correct.
    pub correct: bool,
    /// Distinct result hashes seen (agreement holds when there is at most one).
    pub results: Vec<String>,
    /// Group size, as the callers saw it.
    pub members: u32,
    /// The distinct signatures the ranks called this collective with, first seen first.
    pub variants: Vec<Variant>,
    /// A message: (sender, receiver).
    pub pair: Option<(u32, u32)>,
}

/// A fault as the trace shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultView {
    pub index: u32,
    pub kind: FaultKind,
    pub ranks: Vec<u32>,
    pub sides: Option<Vec<Vec<u32>>>,
    /// A one-way partition drops only traffic from the first side to the others.
    pub oneway: bool,
    pub detail: String,
    pub begin_ns: Nanos,
    pub end_ns: Option<Nanos>,
}

impl FaultView {
    pub fn active_at(&self, t: Nanos) -> bool {
        self.begin_ns <= t && self.end_ns.is_none_or(|e| e > t)
    }

    /// Whether this fault is a partition that drops traffic from `from` to `to` while it acts,
    /// by the engine's rule ([`crate::fault::cuts`]).
    pub fn cuts(&self, from: u32, to: u32) -> bool {
        match (&self.sides, self.kind) {
            (Some(sides), FaultKind::Partition) => crate::fault::cuts(sides, self.oneway, from, to),
            _ => false,
        }
    }

    /// Whether this fault is a partition that separates `a` and `b`: it drops traffic between
    /// them in at least one direction.
    pub fn separates(&self, a: u32, b: u32) -> bool {
        self.cuts(a, b) || self.cuts(b, a)
    }

    /// Whether this delay or loss fault acts on the link between `a` and `b`: the fault's one
    /// rank is an end of it, or the fault's link is this link.
    pub fn on_link(&self, a: u32, b: u32) -> bool {
        match self.ranks.as_slice() {
            [r] => *r == a || *r == b,
            [x, y] => (*x == a && *y == b) || (*x == b && *y == a),
            _ => false,
        }
    }

    /// The fault slows others down when they wait for `awaited` (a straggler fault).
    pub fn slows(&self, waiter: u32, awaited: u32) -> bool {
        match self.kind {
            FaultKind::Slow => self.ranks == [awaited],
            FaultKind::Delay | FaultKind::Loss => self.on_link(waiter, awaited),
            _ => false,
        }
    }

    /// Which rank to name for lateness on the link `awaited -> waiter`: the fault's rank for a
    /// rank fault, else the rank waited for.
    pub fn straggler(&self, awaited: u32) -> u32 {
        match self.ranks.as_slice() {
            [r] => *r,
            _ => awaited,
        }
    }
}

/// A chunk a rank's running collective did not expect ([`Event::Unexpected`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnexpectedChunk {
    pub t: Nanos,
    /// The rank it arrived at.
    pub rank: u32,
    pub slot: Slot,
    /// The step it was sent for (from 0).
    pub step: u32,
    pub from: u32,
    pub why: crate::proto::event::Unexpected,
}

/// How many unexpected chunks a fold keeps (the first ones): a broken schedule may misroute a
/// chunk in every step of every call.
pub const UNEXPECTED_KEPT: usize = 1024;

/// The state of a run after some prefix of its events.
#[derive(Clone, Debug)]
pub struct Fold {
    pub t: Nanos,
    pub events: u64,
    pub ranks: Vec<RankView>,
    pub ops: BTreeMap<Slot, OpView>,
    pub faults: Vec<FaultView>,
    pub messages_sent: u64,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
    /// First watchdog abort: (time, rank).
    pub first_abort: Option<(Nanos, u32)>,
    /// The diagnosis the trace recorded: (blocked ranks, root causes).
    pub diagnosis: Option<(Vec<u32>, Vec<RootCause>)>,
    pub outcome: Option<Outcome>,
    /// For each receiver, the latest collective chunk each sender sent it, per group:
    /// [`SentMark`]. Schedules send to a peer in increasing steps, and a group's calls and
    /// generations only move forward, so a chunk was sent when the mark is at or past it.
    /// The mark a receiver was sent last is first in its list.
    pub sent: Vec<Vec<SentMark>>,
    /// Accumulated waiting on stragglers, by (rank, fault), in first-seen order.
    pub lateness: Vec<Lateness>,
    /// The program every rank runs, when the fold knows the scenario: it settles a tie between
    /// two equally common signatures of one collective.
    pub workload: Option<Arc<WorkloadConfig>>,
    /// The call site of each call of each program, when the scenario names them.
    pub call_sites: Option<Arc<CallSites>>,
    /// Elastic generations, rendezvous waits and the registry.
    pub membership: MembershipView,
    /// The node of the rendezvous store, when the group rendezvouses through one (the first
    /// node after the ranks).
    pub store: Option<u32>,
    /// The chunks collectives did not expect, in order (the first [`UNEXPECTED_KEPT`]).
    pub unexpected: Vec<UnexpectedChunk>,
}

/// Where each program calls from (`train.py:86`), as the scenario's ops name it (an imported
/// job, a torch program): calls alike from different sites are different calls of the program.
#[derive(Clone, Debug, Default)]
pub struct CallSites {
    /// Per program of the workload, the site of each call (by its index), when named.
    pub of_program: Vec<Vec<Option<Arc<str>>>>,
}

impl CallSites {
    /// The sites of `w`'s programs, or None when the scenario names none.
    fn of(scenario: &Scenario, w: &WorkloadConfig) -> Option<CallSites> {
        let named = |ops: &[crate::scenario::OpSpec]| ops.iter().any(|o| o.site.is_some());
        if !named(&scenario.workload.ops)
            && !scenario.workload.programs.iter().any(|p| named(&p.ops))
        {
            return None;
        }
        let of_program = (0..w.programs.len() as u32)
            .map(|p| {
                let Some(r) = w.program_of.iter().position(|&q| q == p) else {
                    return Vec::new();
                };
                (crate::scenario::program::calls(scenario, r as u32).into_iter())
                    .map(|(op, _)| op.site.map(Arc::from))
                    .collect()
            })
            .collect();
        Some(CallSites { of_program })
    }

    /// The site of call `index` of `rank`'s program.
    pub fn site(&self, w: &WorkloadConfig, rank: u32, index: u32) -> Option<&str> {
        let p = *w.program_of.get(rank as usize)?;
        self.of_program
            .get(p as usize)?
            .get(index as usize)?
            .as_deref()
    }
}

impl Fold {
    pub fn new(scenario: &Scenario) -> Fold {
        let mut f = Fold::with_size(scenario.world.size);
        f.workload = Some(Arc::new(crate::scenario::resolve::workload(
            scenario,
            scenario.seed,
            crate::proto::mutation::Mutations::NONE,
        )));
        f.call_sites = f
            .workload
            .as_deref()
            .and_then(|w| CallSites::of(scenario, w))
            .map(Arc::new);
        f.store = scenario
            .group
            .elastic
            .as_ref()
            .filter(|e| e.rendezvous == RendezvousKind::Store)
            .map(|_| scenario.world.size);
        f
    }

    /// The state before the first event of a trace with this header: [`Fold::new`] of its
    /// scenario, knowing which ranks of an import left no dump.
    pub fn of_header(h: &Header) -> Fold {
        let mut f = Fold::new(&h.scenario);
        for &r in &h.missing {
            if let Some(v) = f.rank(r) {
                v.no_dump = true;
            }
        }
        f
    }

    pub fn with_size(p: u32) -> Fold {
        Fold {
            t: 0,
            events: 0,
            ranks: (0..p)
                .map(|rank| RankView {
                    rank,
                    state: RankState::Idle,
                    incarnation: 0,
                    paused: false,
                    paused_since: None,
                    dead_since: None,
                    iteration: 0,
                    call: None,
                    beside: Vec::new(),
                    calls: 0,
                    last_call: None,
                    since_ns: 0,
                    history: VecDeque::new(),
                    no_dump: false,
                    node_wait: None,
                })
                .collect(),
            ops: BTreeMap::new(),
            faults: Vec::new(),
            messages_sent: 0,
            messages_delivered: 0,
            messages_dropped: 0,
            first_abort: None,
            diagnosis: None,
            outcome: None,
            sent: vec![Vec::new(); p as usize],
            lateness: Vec::new(),
            workload: None,
            call_sites: None,
            membership: MembershipView::default(),
            store: None,
            unexpected: Vec::new(),
        }
    }

    fn rank(&mut self, r: u32) -> Option<&mut RankView> {
        self.ranks.get_mut(r as usize)
    }

    fn set_state(&mut self, r: u32, t: Nanos, state: RankState) {
        if let Some(v) = self.rank(r) {
            if v.state != state {
                v.state = state;
                v.since_ns = t;
            }
        }
    }

    /// Applies one event.
    ///
    /// The events of messages and steps, a run's commonest, are taken here: inlined where a run
    /// makes them, they cost a count, or a mark and a wait list copied in place.
    #[inline(always)]
    pub fn apply(&mut self, t: Nanos, ev: &Event) {
        match ev {
            Event::Deliver { .. } => self.delivered(t),
            Event::Send { .. } => {
                if let Some(sent) = ev.as_sent() {
                    self.sent(t, &sent);
                }
            }
            Event::Step {
                rank,
                group,
                step,
                steps,
                waiting_for,
                seq,
                ..
            } => {
                self.t = t;
                self.events += 1;
                self.step(t, *rank, (*group, *seq), *step, *steps, waiting_for, |&r| r);
            }
            _ => {
                self.t = t;
                self.apply_rest(t, ev)
            }
        }
    }

    /// Applies a `deliver` event.
    #[inline(always)]
    pub fn delivered(&mut self, t: Nanos) {
        self.t = t;
        self.events += 1;
        self.messages_delivered += 1;
    }

    /// Applies the `send` event of `s`.
    #[inline(always)]
    pub fn sent(&mut self, t: Nanos, s: &Sent) {
        self.count_sent(t);
        if let Some((seq, p2p, step)) = marked_by(s) {
            self.mark_sent(s.from, s.to, seq, p2p, step);
        }
    }

    /// Counts a `send` event at `t`, without its mark.
    #[inline(always)]
    pub(super) fn count_sent(&mut self, t: Nanos) {
        self.t = t;
        self.events += 1;
        self.messages_sent += 1;
    }

    /// Applies the `step` event of `rank`'s step `s`.
    #[inline(always)]
    pub fn stepped(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        self.count_step(t);
        self.step(
            t,
            rank,
            (s.group, s.seq),
            s.step,
            s.steps,
            &s.waiting_for,
            |r| r.0,
        );
    }

    /// Counts a `step` event at `t`, without applying it.
    #[inline(always)]
    pub(super) fn count_step(&mut self, t: Nanos) {
        self.t = t;
        self.events += 1;
    }

    /// `rank`'s running call, if it has one.
    #[inline(always)]
    pub(super) fn call_mut(&mut self, rank: u32) -> Option<&mut CallView> {
        self.ranks.get_mut(rank as usize)?.call.as_mut()
    }

    /// A chunk (`p2p` None) or a point-to-point message `from` sent `to`, as the latest it
    /// sent there.
    #[inline(always)]
    fn mark_sent(&mut self, from: u32, to: u32, seq: u64, p2p: Option<P2pKind>, step: u32) {
        // a chunk belongs to the sender's running call: its group and generation (an
        // acknowledgement, to the recv that took the message)
        let (group, generation) = match self.ranks.get(from as usize) {
            Some(v) => sender_call(v, to, seq, p2p),
            None => (GroupId(0), Generation(0)),
        };
        let sent = Marked {
            to,
            group,
            p2p,
            generation,
            seq,
            step,
        };
        self.mark(from, &sent);
    }

    /// A chunk (`p2p` None) or a point-to-point message `from` sent `to`, as the latest it
    /// sent there: folded at once, when the sender runs several calls.
    #[cold]
    pub(super) fn mark_sent_beside(&mut self, s: &Sent) {
        if let Some((seq, p2p, step)) = marked_by(s) {
            self.mark_sent(s.from, s.to, seq, p2p, step);
        }
    }

    /// Marks that `from` sent `m`.
    #[inline(always)]
    pub(super) fn mark(&mut self, from: u32, m: &Marked) {
        let (key, p2p) = (SentMark::key(from, m.group), m.p2p);
        let at = SentMark::at(m.generation, m.seq, m.step);
        let Some(list) = self.sent.get_mut(m.to as usize) else {
            return;
        };
        match list.first_mut() {
            // the same sender and group as the receiver's last message: the usual case
            Some(e) if e.key == key && e.p2p == p2p => e.at = e.at.max(at),
            _ => mark_first(list, SentMark { key, p2p, at }),
        }
    }

    /// `rank`'s call `seq` entered `step` of `steps` and waits for `waiting_for` (as `id` reads
    /// a rank of it).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn step<W>(
        &mut self,
        t: Nanos,
        rank: u32,
        (group, seq): (GroupId, SeqNo),
        step: u32,
        steps: u32,
        waiting_for: &[W],
        id: impl Fn(&W) -> u32,
    ) {
        let faults = !self.faults.is_empty();
        if self.has_beside(rank) {
            let waits: Vec<u32> = waiting_for.iter().map(id).collect();
            return self.step_beside(t, rank, (group, seq), (step, steps), &waits);
        }
        let Some(mut c) = self.call_mut(rank) else {
            return;
        };
        // the wait of the step it leaves ends; without a fault, there is no one to charge it to
        if !faults {
            c.charged_ns = t;
        } else if let Some(waited) = c.close_wait(t) {
            self.charge(rank, waited);
            c = match self.call_mut(rank) {
                Some(c) => c,
                None => return,
            };
        }
        c.enter_step(t, seq, step, steps, waiting_for, id);
    }

    /// Whether `rank` runs several calls at once (see [`RankView::beside`]).
    #[inline(always)]
    pub(super) fn has_beside(&self, rank: u32) -> bool {
        self.ranks
            .get(rank as usize)
            .is_some_and(|v| !v.beside.is_empty())
    }

    /// A step of one of the several calls `rank` runs: the call it is of enters it, and the
    /// rank waits in the call [`RankView::call`] names.
    #[cold]
    fn step_beside(
        &mut self,
        t: Nanos,
        rank: u32,
        (group, seq): (GroupId, SeqNo),
        (step, steps): (u32, u32),
        waiting_for: &[u32],
    ) {
        self.close_wait(rank, t);
        let Some(v) = self.rank(rank) else {
            return;
        };
        if let Some(c) = v.running_mut(|c| c.steps_in(group, seq, waiting_for)) {
            c.enter_step(t, seq, step, steps, waiting_for, |&r| r);
        }
        v.settle_calls();
    }

    /// Every event but those of messages and steps: each kind changes the view of what it
    /// concerns, by the function named after it.
    fn apply_rest(&mut self, t: Nanos, ev: &Event) {
        if !matches!(ev, Event::End { .. }) {
            self.events += 1;
        }
        self.membership.apply(t, ev);
        match ev {
            Event::Fault { .. } => self.fault(t, ev),
            Event::ProcessStart { rank, incarnation } => {
                self.process_started(t, *rank, *incarnation)
            }
            Event::ProcessDeath { rank, .. } => self.process_died(t, *rank),
            Event::ProcessPause { rank } => self.paused(*rank, Some(t)),
            Event::ProcessResume { rank } => self.paused(*rank, None),
            // taken by `apply`
            Event::Send { .. } | Event::Deliver { .. } | Event::Step { .. } => {}
            Event::Drop { .. } => self.messages_dropped += 1,
            Event::Timer { .. } => {}
            Event::Compute {
                rank, iteration, ..
            } => {
                self.iterating(*rank, *iteration);
                self.set_state(*rank, t, RankState::Computing);
            }
            Event::ComputeDone { rank } => self.set_state(*rank, t, RankState::Running),
            Event::Iteration { rank, iteration } => self.iterating(*rank, *iteration),
            Event::Call { .. } => self.called(t, ev),
            Event::Complete {
                rank,
                group,
                generation,
                seq,
                iteration,
                index,
                result,
                correct,
            } => {
                let slot = self.completed_call(
                    t,
                    *rank,
                    Slot::collective(*group, *generation, *seq),
                    (*iteration, *index),
                );
                self.completed_op(t, slot, result, *correct);
            }
            Event::Abort {
                rank,
                group,
                seq,
                step,
                steps,
                waiting_for,
                reason,
                ..
            } => self.aborted(
                t,
                *rank,
                (*group, *seq),
                (*step, *steps),
                waiting_for,
                reason,
            ),
            Event::FlightRecord { .. } => {}
            Event::Unexpected {
                rank,
                group,
                generation,
                seq,
                step,
                from,
                why,
                ..
            } => {
                if self.unexpected.len() < UNEXPECTED_KEPT {
                    self.unexpected.push(UnexpectedChunk {
                        t,
                        rank: *rank,
                        slot: Slot::collective(*group, *generation, *seq),
                        step: *step,
                        from: *from,
                        why: *why,
                    });
                }
            }
            Event::WorkloadDone { rank } => self.set_state(*rank, t, RankState::Done),
            Event::NodeWait {
                rank,
                on,
                waiting_for,
            } => {
                if let Some(v) = self.rank(*rank) {
                    v.node_wait = (!waiting_for.is_empty()).then(|| NodeWaitView {
                        on: on.clone(),
                        waiting_for: waiting_for.clone(),
                        since_ns: t,
                    });
                }
            }
            Event::RejoinRefused { rank, .. } => self.set_state(*rank, t, RankState::Refused),
            Event::Diagnosis {
                blocked,
                root_causes,
                ..
            } => self.diagnosis = Some((blocked.clone(), root_causes.clone())),
            Event::End { outcome, .. } => self.outcome = Some(*outcome),
            Event::GenerationFormed { rank, .. } => {
                // the rank leaves its aborted call behind and resumes in the new generation
                if let Some(v) = self.rank(*rank) {
                    v.call = None;
                    v.beside.clear();
                }
                self.set_state(*rank, t, RankState::Running);
            }
            Event::RendezvousStart { .. }
            | Event::RendezvousWait { .. }
            | Event::Suspect { .. }
            | Event::Joining { .. }
            | Event::StoreUpdate { .. }
            | Event::RegistryJoin { .. }
            | Event::RegistryLeave { .. }
            | Event::RegistryView { .. }
            | Event::RegistryNotify { .. }
            | Event::RegistryMonitor { .. }
            | Event::RegistryBroadcast { .. }
            | Event::RegistryDeliver { .. }
            | Event::RegistryQuery { .. }
            | Event::RegistryNodeDown { .. }
            | Event::RegistryNodeUp { .. } => {}
        }
    }

    /// A `fault` event: the fault begins (a view of it is added) or ends (its view is closed).
    /// A straggler fault's edges close every rank's wait, so that what was waited before is
    /// charged as it was.
    fn fault(&mut self, t: Nanos, ev: &Event) {
        let Event::Fault {
            index,
            fault,
            phase,
            ranks,
            sides,
            oneway,
            detail,
        } = ev
        else {
            return;
        };
        if fault.is_straggler() {
            self.close_all_waits(t);
        }
        match phase {
            FaultPhase::Begin => self.faults.push(FaultView {
                index: *index,
                kind: *fault,
                ranks: ranks.clone(),
                sides: sides.clone(),
                oneway: *oneway,
                detail: detail.clone(),
                begin_ns: t,
                end_ns: None,
            }),
            FaultPhase::End => {
                if let Some(f) = self
                    .faults
                    .iter_mut()
                    .rev()
                    .find(|f| f.index == *index && f.end_ns.is_none())
                {
                    f.end_ns = Some(t);
                }
            }
        }
    }

    /// `rank`'s process starts (or restarts): alive, unpaused, in no call.
    fn process_started(&mut self, t: Nanos, rank: u32, incarnation: u32) {
        self.close_wait(rank, t);
        if let Some(v) = self.rank(rank) {
            v.incarnation = incarnation;
            v.dead_since = None;
            v.paused = false;
            v.call = None;
            v.beside.clear();
            v.node_wait = None;
        }
        self.set_state(rank, t, RankState::Running);
    }

    /// `rank`'s process dies.
    fn process_died(&mut self, t: Nanos, rank: u32) {
        self.close_wait(rank, t);
        if let Some(v) = self.rank(rank) {
            v.dead_since = Some(t);
            v.paused = false;
            v.paused_since = None;
        }
        self.set_state(rank, t, RankState::Dead);
    }

    /// `rank` is frozen since `since`, or resumes (`None`).
    fn paused(&mut self, rank: u32, since: Option<Nanos>) {
        if let Some(v) = self.rank(rank) {
            v.paused = since.is_some();
            v.paused_since = since;
        }
    }

    /// `rank` is in `iteration` of its workload.
    fn iterating(&mut self, rank: u32, iteration: u32) {
        if let Some(v) = self.rank(rank) {
            v.iteration = iteration;
        }
    }

    /// A `call` event: the rank's view enters the call ([`Fold::entered_call`]), and the op's
    /// view counts it with its signature ([`Fold::op_called`]).
    fn called(&mut self, t: Nanos, ev: &Event) {
        let Event::Call {
            rank,
            iteration,
            index,
            group,
            generation,
            seq,
            op,
            algorithm,
            bytes,
            dtype,
            root,
            reduce,
            elements,
            members,
            peer,
        } = ev
        else {
            return;
        };
        let sig = CallSig {
            iteration: *iteration,
            index: *index,
            op: *op,
            algorithm: *algorithm,
            bytes: *bytes,
            dtype: *dtype,
            root: *root,
            reduce: *reduce,
            elements: *elements,
        };
        let slot = Slot {
            group: *group,
            generation: *generation,
            seq: *seq,
            pair: pair_of(*op, *rank, *peer),
        };
        self.close_wait(*rank, t);
        self.entered_call(t, *rank, slot, sig, *peer);
        self.op_called(t, *rank, slot, sig, *members);
    }

    /// `rank` entered the call `sig` of `slot` at `t`: its running call, and its history.
    /// A call issued while others run goes beside them (calls that failed are left behind).
    fn entered_call(&mut self, t: Nanos, rank: u32, slot: Slot, sig: CallSig, peer: Option<u32>) {
        if let Some(v) = self.rank(rank) {
            v.calls += 1;
            v.last_call = Some((sig.iteration, sig.index));
            v.iteration = sig.iteration;
            v.beside.retain(|c| c.aborted.is_none());
            if let Some(c) = v.call.take().filter(|c| c.aborted.is_none()) {
                v.beside.insert(0, c);
            }
            v.call = Some(CallView {
                iteration: sig.iteration,
                index: sig.index,
                group: slot.group,
                generation: slot.generation,
                seq: slot.seq,
                op: sig.op,
                algorithm: sig.algorithm,
                bytes: sig.bytes,
                dtype: sig.dtype,
                root: sig.root,
                reduce: sig.reduce,
                elements: sig.elements,
                step: 0,
                steps: 0,
                waiting_for: Vec::new(),
                peer,
                since_ns: t,
                called_ns: t,
                aborted: None,
                charged_ns: t,
            });
            v.settle_calls();
        }
        self.set_state(rank, t, RankState::Waiting);
        if let Some(v) = self.rank(rank) {
            if v.history.len() == CALL_HISTORY {
                v.history.pop_front();
            }
            v.history.push_back(PastCall {
                slot,
                sig,
                called_ns: t,
                completed: false,
            });
        }
    }

    /// `rank` called `slot` with `sig` at `t`: the op's view (made at its first call) counts the
    /// call among the variants of its signature. A message is named after its send.
    fn op_called(&mut self, t: Nanos, rank: u32, slot: Slot, sig: CallSig, members: u32) {
        let pair = slot.pair;
        let op = self.ops.entry(slot).or_insert_with(|| OpView {
            iteration: sig.iteration,
            index: sig.index,
            op: if pair.is_some() { OpKind::Send } else { sig.op },
            algorithm: sig.algorithm,
            group: slot.group,
            generation: slot.generation,
            seq: slot.seq,
            bytes: sig.bytes,
            start_ns: t,
            end_ns: None,
            ranks_called: 0,
            ranks_completed: 0,
            correct: true,
            results: Vec::new(),
            // a message has two ends
            members: if pair.is_some() { 2 } else { members },
            variants: Vec::new(),
            pair,
        });
        if pair.is_some_and(|(from, _)| from == rank) {
            op.op = sig.op;
            op.algorithm = sig.algorithm;
        }
        op.ranks_called += 1;
        match op.variants.iter_mut().find(|v| v.sig == sig) {
            Some(v) => {
                v.count += 1;
                v.ranks.push(rank);
            }
            None => op.variants.push(Variant {
                sig,
                count: 1,
                ranks: vec![rank],
            }),
        }
    }

    /// `rank` completed its call `(iteration, index)` at `t`: it leaves the call, which its
    /// history marks completed, and waits in its other running calls if it has any. Returns
    /// the call's slot (the running call's, when it is one: a message's slot names its pair;
    /// else `collective`).
    fn completed_call(
        &mut self,
        t: Nanos,
        rank: u32,
        collective: Slot,
        (iteration, index): (u32, u32),
    ) -> Slot {
        self.close_wait(rank, t);
        let mut slot = collective;
        let mut still = None;
        if let Some(v) = self.rank(rank) {
            if v.beside.is_empty() {
                if let Some(c) = v.call.take().filter(|c| c.seq == collective.seq) {
                    slot = c.slot(rank);
                }
            } else if let Some(c) = v.take_running(|c| {
                (c.seq, c.iteration, c.index) == (collective.seq, iteration, index)
            }) {
                slot = c.slot(rank);
                if v.call.is_none() {
                    v.call = Some(v.beside.remove(0));
                }
                v.settle_calls();
                still = v.call.as_ref().map(|c| c.aborted.is_some());
            }
            if let Some(c) = v.history.iter_mut().rev().find(|c| c.slot == slot) {
                c.completed = true;
            }
        }
        let state = match still {
            None => RankState::Running,
            Some(false) => RankState::Waiting,
            Some(true) => RankState::Blocked,
        };
        self.set_state(rank, t, state);
        slot
    }

    /// One more rank completed `slot` at `t` with `result` (its hash) and `correct`.
    fn completed_op(&mut self, t: Nanos, slot: Slot, result: &str, correct: Option<bool>) {
        let Some(op) = self.ops.get_mut(&slot) else {
            return;
        };
        op.ranks_completed += 1;
        if op.ranks_completed >= op.members && op.variants.len() == 1 {
            // everyone agreed and finished: the rank list is no longer needed
            op.variants[0].ranks = Vec::new();
        }
        op.end_ns = Some(op.end_ns.map_or(t, |e| e.max(t)));
        if correct == Some(false) {
            op.correct = false;
        }
        if !result.is_empty() && !op.results.iter().any(|r| r == result) {
            op.results.push(result.to_string());
        }
    }

    /// `rank` aborted its call `seq` at `t` in `step` of `steps`, waiting for `waiting_for`,
    /// for `reason`; the first watchdog abort of the run is kept.
    fn aborted(
        &mut self,
        t: Nanos,
        rank: u32,
        (group, seq): (GroupId, SeqNo),
        (step, steps): (u32, u32),
        waiting_for: &[u32],
        reason: &str,
    ) {
        if self.first_abort.is_none() && AbortReason::text_is_watchdog(reason) {
            self.first_abort = Some((t, rank));
        }
        self.close_wait(rank, t);
        if let Some(v) = self.rank(rank) {
            let c = if v.beside.is_empty() {
                v.call.as_mut().filter(|c| c.seq == seq)
            } else {
                v.running_mut(|c| c.aborted.is_none() && c.steps_in(group, seq, waiting_for))
            };
            if let Some(c) = c {
                c.step = step;
                c.steps = steps;
                c.waiting_for.clear();
                c.waiting_for.extend_from_slice(waiting_for);
                c.aborted = Some(reason.to_string());
            }
            v.settle_calls();
        }
        self.set_state(rank, t, RankState::Blocked);
    }

    /// Ends the current wait interval of `rank` at `t`: the time it waited for a peer that a
    /// straggler fault touched is charged to that peer (or to the fault's rank).
    #[inline(always)]
    fn close_wait(&mut self, rank: u32, t: Nanos) {
        let Some(c) = self.call_mut(rank) else {
            return;
        };
        if let Some(waited) = c.close_wait(t) {
            if !self.faults.is_empty() {
                self.charge(rank, waited);
            }
        }
    }

    /// Charges `waited` ns of `rank`'s wait, as its call's wait list stands, to the straggler
    /// faults active.
    #[inline(never)]
    fn charge(&mut self, rank: u32, waited: Nanos) {
        if !self
            .faults
            .iter()
            .any(|f| f.end_ns.is_none() && f.kind.is_straggler())
        {
            return;
        }
        let Some(c) = self.ranks[rank as usize].call.as_ref() else {
            return;
        };
        for &w in &c.waiting_for {
            for f in self.faults.iter().filter(|f| f.end_ns.is_none()) {
                if f.slows(rank, w) {
                    add_lateness(&mut self.lateness, f.straggler(w), f.index, waited);
                }
            }
        }
    }

    /// Closes every rank's wait interval (a straggler fault begins or ends).
    fn close_all_waits(&mut self, t: Nanos) {
        for r in 0..self.ranks.len() as u32 {
            self.close_wait(r, t);
        }
    }

    /// Lateness charged so far, plus the waits still open at the fold's time.
    pub fn lateness_now(&self) -> Vec<Lateness> {
        let mut acc = self.lateness.clone();
        let active: Vec<&FaultView> = self
            .active_faults()
            .filter(|f| f.kind.is_straggler())
            .collect();
        if active.is_empty() {
            return acc;
        }
        for v in &self.ranks {
            let Some(c) = &v.call else { continue };
            let since = c.charged_ns.max(c.since_ns);
            if c.aborted.is_some() || self.t <= since || v.state == RankState::Dead {
                continue;
            }
            for &w in &c.waiting_for {
                for f in &active {
                    if f.slows(v.rank, w) {
                        add_lateness(&mut acc, f.straggler(w), f.index, self.t - since);
                    }
                }
            }
        }
        acc
    }

    /// Whether `from` has sent `to` its chunk of call `call` at its current step (or a later
    /// chunk of the same group). For a recv, the message of its order; for a rendezvous send,
    /// the acknowledgement of it.
    pub fn has_sent(&self, from: u32, to: u32, call: &CallView) -> bool {
        let key = SentMark::key(from, call.group);
        let want = SentMark::at(call.generation, call.seq.0, call.step);
        let p2p = match call.op {
            OpKind::Recv => Some(P2pKind::Data),
            OpKind::Send => Some(P2pKind::Ack),
            _ => None,
        };
        self.sent.get(to as usize).is_some_and(|list| {
            list.iter()
                .any(|e| e.key == key && e.p2p == p2p && e.at >= want)
        })
    }

    /// The ranks that sent `to` a point-to-point message in `group` (of `generation`), each with
    /// whether `to` ever posted a recv from it there (its first recv from a rank is its order
    /// 1, done or running).
    pub fn p2p_senders(&self, to: u32, group: GroupId, generation: Generation) -> Vec<(u32, bool)> {
        let (Some(list), Some(v)) = (self.sent.get(to as usize), self.ranks.get(to as usize))
        else {
            return Vec::new();
        };
        let mut from: Vec<u32> = list
            .iter()
            .filter(|e| e.p2p == Some(P2pKind::Data) && e.key as u32 == group.0)
            .filter(|e| (e.at >> 96) as u32 == generation.0)
            .map(|e| (e.key >> 32) as u32)
            .collect();
        from.sort_unstable();
        from.dedup();
        from.into_iter()
            .map(|sender| {
                let first = Slot {
                    group,
                    generation,
                    seq: SeqNo(1),
                    pair: Some((sender, to)),
                };
                let running = v.running().any(|c| c.slot(to) == first);
                (sender, running || v.call_at(first).is_some())
            })
            .collect()
    }

    /// Whether ranks `a` and `b` run the same program, so that their call sites compare
    /// (true when the fold does not know the workload).
    pub fn same_program(&self, a: u32, b: u32) -> bool {
        self.workload
            .as_ref()
            .is_none_or(|w| w.program_of.get(a as usize) == w.program_of.get(b as usize))
    }

    /// Whether the scenario declares `rank`'s calls (`[[workload.ops]]`, the pipeline) rather
    /// than give it a program of its own (true when the fold does not know the workload).
    pub fn declared(&self, rank: u32) -> bool {
        self.workload
            .as_ref()
            .is_none_or(|w| (rank as usize) < w.program_of.len() && w.program(rank).declared)
    }

    /// Where `rank`'s program (as written, without application bugs) issues its end of the
    /// message `slot`, as (iteration, call index); None when it never does.
    pub fn message_site(&self, rank: u32, slot: &Slot) -> Option<(u32, u32)> {
        let w = self.workload.as_ref()?;
        let (from, to) = slot.pair?;
        let (op, peer) = if rank == from {
            (OpKind::Send, to)
        } else {
            (OpKind::Recv, from)
        };
        let sites: Vec<u32> = w
            .program(rank)
            .steps
            .iter()
            .filter_map(|st| match st {
                Step::Call { index, call } if call.op == op => {
                    let g = match call.along {
                        Along::World => Some((GroupId(0), w.world_members.clone())),
                        Along::Layout(l) => w
                            .layouts
                            .get(l as usize)?
                            .group_of(Rank(rank))
                            .map(|g| (g.id, g.members.clone())),
                    }?;
                    let me = g.1.index(Rank(rank))?;
                    let other = call.peer?.resolve(me, g.1.len() as u32)?;
                    (g.0 == slot.group && g.1.ranks[other as usize].0 == peer).then_some(*index)
                }
                _ => None,
            })
            .collect();
        let k = slot.seq.0.checked_sub(1)?;
        let n = sites.len() as u64;
        let iteration = k.checked_div(n)?;
        (iteration < u64::from(w.iterations)).then(|| (iteration as u32, sites[(k % n) as usize]))
    }

    /// Faults active at the fold's time.
    pub fn active_faults(&self) -> impl Iterator<Item = &FaultView> {
        self.faults.iter().filter(|f| f.end_ns.is_none())
    }
}

/// Puts `mark` first in `list`: merged into the mark of the same sender, group and kind when
/// there is one (which moves to the front), else added.
#[inline(never)]
fn mark_first(list: &mut Vec<SentMark>, mark: SentMark) {
    match list
        .iter()
        .position(|e| e.key == mark.key && e.p2p == mark.p2p)
    {
        Some(i) => {
            list[i].at = list[i].at.max(mark.at);
            list.swap(0, i);
        }
        None => {
            list.push(mark);
            let last = list.len() - 1;
            list.swap(0, last);
        }
    }
}

fn add_lateness(acc: &mut Vec<Lateness>, rank: u32, fault: u32, waited: Nanos) {
    match acc.iter_mut().find(|l| l.rank == rank && l.fault == fault) {
        Some(l) => l.waited_ns += waited,
        None => acc.push(Lateness {
            rank,
            fault,
            waited_ns: waited,
        }),
    }
}
