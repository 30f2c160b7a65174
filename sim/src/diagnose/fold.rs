//! Folding a trace's events into the state of every rank at a point in time.
//!
//! The same fold serves the run's own report, `explain` on a recorded trace, and the TUI, so
//! all three see exactly the same state for the same events.

use super::membership::MembershipView;
use crate::proto::{Generation, GroupId, SeqNo};
use crate::scenario::{Algorithm, Dtype, OpKind, Outcome, ReduceOp, Scenario};
use crate::trace::{Event, FaultPhase};
use crate::units::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// When the rank started waiting in the current step.
    pub since_ns: Nanos,
    pub called_ns: Nanos,
    /// Set when the watchdog aborted the call: the abort's reason.
    pub aborted: Option<String>,
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
    pub call: Option<CallView>,
    /// Calls issued so far, as (iteration, index).
    pub calls: u32,
    /// The last (iteration, index) this rank issued.
    pub last_call: Option<(u32, u32)>,
    pub since_ns: Nanos,
}

/// Aggregate of one collective across ranks, keyed by (group, generation, seq).
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
}

/// A fault as the trace shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FaultView {
    pub index: u32,
    pub kind: String,
    pub ranks: Vec<u32>,
    pub sides: Option<Vec<Vec<u32>>>,
    pub detail: String,
    pub begin_ns: Nanos,
    pub end_ns: Option<Nanos>,
}

/// The state of a run after some prefix of its events.
#[derive(Clone, Debug)]
pub struct Fold {
    pub t: Nanos,
    pub events: u64,
    pub ranks: Vec<RankView>,
    pub ops: BTreeMap<(GroupId, Generation, SeqNo), OpView>,
    pub faults: Vec<FaultView>,
    pub messages_sent: u64,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
    /// First watchdog abort: (time, rank).
    pub first_abort: Option<(Nanos, u32)>,
    pub diagnosis: Option<(Vec<u32>, Vec<String>)>,
    pub outcome: Option<Outcome>,
    /// Elastic generations, rendezvous waits and the registry.
    pub membership: MembershipView,
}

impl Fold {
    pub fn new(scenario: &Scenario) -> Fold {
        Fold::with_size(scenario.world.size)
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
                    calls: 0,
                    last_call: None,
                    since_ns: 0,
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
            membership: MembershipView::default(),
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
    pub fn apply(&mut self, t: Nanos, ev: &Event) {
        self.t = t;
        if !matches!(ev, Event::End { .. }) {
            self.events += 1;
        }
        self.membership.apply(t, ev);
        match ev {
            Event::Fault {
                index,
                fault,
                phase,
                ranks,
                sides,
                detail,
            } => match phase {
                FaultPhase::Begin => self.faults.push(FaultView {
                    index: *index,
                    kind: fault.clone(),
                    ranks: ranks.clone(),
                    sides: sides.clone(),
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
            },
            Event::ProcessStart { rank, incarnation } => {
                if let Some(v) = self.rank(*rank) {
                    v.incarnation = *incarnation;
                    v.dead_since = None;
                    v.paused = false;
                    v.call = None;
                }
                self.set_state(*rank, t, RankState::Running);
            }
            Event::ProcessDeath { rank, .. } => {
                if let Some(v) = self.rank(*rank) {
                    v.dead_since = Some(t);
                    v.paused = false;
                    v.paused_since = None;
                }
                self.set_state(*rank, t, RankState::Dead);
            }
            Event::ProcessPause { rank } => {
                if let Some(v) = self.rank(*rank) {
                    v.paused = true;
                    v.paused_since = Some(t);
                }
            }
            Event::ProcessResume { rank } => {
                if let Some(v) = self.rank(*rank) {
                    v.paused = false;
                    v.paused_since = None;
                }
            }
            Event::Send { .. } => self.messages_sent += 1,
            Event::Deliver { .. } => self.messages_delivered += 1,
            Event::Drop { .. } => self.messages_dropped += 1,
            Event::Timer { .. } => {}
            Event::Compute {
                rank, iteration, ..
            } => {
                if let Some(v) = self.rank(*rank) {
                    v.iteration = *iteration;
                }
                self.set_state(*rank, t, RankState::Computing);
            }
            Event::ComputeDone { rank } => self.set_state(*rank, t, RankState::Running),
            Event::Iteration { rank, iteration } => {
                if let Some(v) = self.rank(*rank) {
                    v.iteration = *iteration;
                }
            }
            Event::Call {
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
                ..
            } => {
                if let Some(v) = self.rank(*rank) {
                    v.calls += 1;
                    v.last_call = Some((*iteration, *index));
                    v.iteration = *iteration;
                    v.call = Some(CallView {
                        iteration: *iteration,
                        index: *index,
                        group: *group,
                        generation: *generation,
                        seq: *seq,
                        op: *op,
                        algorithm: *algorithm,
                        bytes: *bytes,
                        dtype: *dtype,
                        root: *root,
                        reduce: *reduce,
                        elements: *elements,
                        step: 0,
                        steps: 0,
                        waiting_for: Vec::new(),
                        since_ns: t,
                        called_ns: t,
                        aborted: None,
                    });
                }
                self.set_state(*rank, t, RankState::Waiting);
                let op = self
                    .ops
                    .entry((*group, *generation, *seq))
                    .or_insert_with(|| OpView {
                        iteration: *iteration,
                        index: *index,
                        op: *op,
                        algorithm: *algorithm,
                        group: *group,
                        generation: *generation,
                        seq: *seq,
                        bytes: *bytes,
                        start_ns: t,
                        end_ns: None,
                        ranks_called: 0,
                        ranks_completed: 0,
                        correct: true,
                        results: Vec::new(),
                    });
                op.ranks_called += 1;
            }
            Event::Step {
                rank,
                step,
                steps,
                waiting_for,
                seq,
                ..
            } => {
                if let Some(v) = self.rank(*rank) {
                    if let Some(c) = v.call.as_mut().filter(|c| c.seq == *seq) {
                        c.step = *step;
                        c.steps = *steps;
                        c.waiting_for = waiting_for.clone();
                        c.since_ns = t;
                    }
                }
            }
            Event::Complete {
                rank,
                group,
                generation,
                seq,
                result,
                correct,
                ..
            } => {
                if let Some(v) = self.rank(*rank) {
                    v.call = None;
                }
                self.set_state(*rank, t, RankState::Running);
                if let Some(op) = self.ops.get_mut(&(*group, *generation, *seq)) {
                    op.ranks_completed += 1;
                    op.end_ns = Some(op.end_ns.map_or(t, |e| e.max(t)));
                    if *correct == Some(false) {
                        op.correct = false;
                    }
                    if !result.is_empty() && !op.results.contains(result) {
                        op.results.push(result.clone());
                    }
                }
            }
            Event::Abort {
                rank,
                seq,
                step,
                steps,
                waiting_for,
                reason,
                ..
            } => {
                if self.first_abort.is_none() && reason.starts_with("watchdog") {
                    self.first_abort = Some((t, *rank));
                }
                if let Some(v) = self.rank(*rank) {
                    if let Some(c) = v.call.as_mut().filter(|c| c.seq == *seq) {
                        c.step = *step;
                        c.steps = *steps;
                        c.waiting_for = waiting_for.clone();
                        c.aborted = Some(reason.clone());
                    }
                }
                self.set_state(*rank, t, RankState::Blocked);
            }
            Event::FlightRecord { .. } => {}
            Event::WorkloadDone { rank } => self.set_state(*rank, t, RankState::Done),
            Event::RejoinRefused { rank, .. } => self.set_state(*rank, t, RankState::Refused),
            Event::Diagnosis {
                blocked,
                root_causes,
            } => self.diagnosis = Some((blocked.clone(), root_causes.clone())),
            Event::End { outcome, .. } => self.outcome = Some(*outcome),
            Event::GenerationFormed { rank, .. } => {
                // the rank leaves its aborted call behind and resumes in the new generation
                if let Some(v) = self.rank(*rank) {
                    v.call = None;
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

    /// Faults active at the fold's time.
    pub fn active_faults(&self) -> impl Iterator<Item = &FaultView> {
        self.faults.iter().filter(|f| f.end_ns.is_none())
    }
}
