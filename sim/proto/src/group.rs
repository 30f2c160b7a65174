//! The process group: sequence numbers, matching messages to calls, the watchdog and the
//! flight recorder; point-to-point calls in `p2p`.
//!
//! Each call gets the next sequence number of its (group, generation). A message is consumed
//! only by the call whose [`Fingerprint`] it carries exactly; messages for later calls wait in
//! `pending`, and messages whose (group, generation, seq) matches the running call but whose
//! parameters differ are never consumed — the call then waits until its watchdog fires, as a
//! mismatched NCCL collective hangs. A message of the running call that its schedule does not
//! expect is dropped and told ([`ProtoEvent::Unexpected`]).

use super::collective::{self, Collective, Ctx, Members, Progress};
use super::data::Buffer;
use super::event::{AbortReason, FlightEntry, FlightState, Outbox, ProtoEvent};
use super::msg::{CollMsg, Fingerprint};
use super::mutation::{self, Mutation, Mutations};
use super::types::{Generation, GroupId, Rank, SeqNo, TimerKey};
use super::wait::WaitState;
use crate::time::Nanos;
use crate::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
use std::collections::VecDeque;
use std::sync::Arc;

mod p2p;

/// How many recent collectives the flight recorder keeps.
pub const FLIGHT_RECORDER_CAPACITY: usize = 64;

/// A collective call as the application issues it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRequest {
    pub iteration: u32,
    pub index: u32,
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub dtype: Dtype,
    pub root: u32,
    pub reduce: ReduceOp,
    pub elements: u32,
    pub input: Buffer,
    /// Send and recv: the other end's group rank.
    pub peer: Option<u32>,
}

/// What became of the group's running call.
#[derive(Debug, PartialEq)]
pub enum CallOutcome {
    Pending,
    Completed {
        iteration: u32,
        index: u32,
        result: Option<Buffer>,
    },
    Aborted,
}

/// Laid out in declaration order (see [`Collective`]).
#[repr(C)]
struct Active {
    /// The flight recorder already says `Started` (so chunks need not look at it again).
    started: bool,
    iteration: u32,
    index: u32,
    coll: Collective,
}

/// Laid out in declaration order: what a chunk of the running call touches first.
#[repr(C)]
pub struct ProcessGroup {
    /// A planted bug changes how messages are taken. The real code tests only this flag, at
    /// the two places the bugs act: ring_bench counts 1.4% more instructions when instead a
    /// separate copy of [`ProcessGroup::on_message`] takes the planted bugs' messages.
    tampered: bool,
    step_events: bool,
    pub id: GroupId,
    pub generation: Generation,
    next_seq: u64,
    members: Arc<Members>,
    mutations: Mutations,
    active: Option<Active>,
    me: u32,
    timeout: Nanos,
    pending: Vec<(u32, Box<CollMsg>)>,
    recorder: VecDeque<FlightEntry>,
    /// Consecutive members per host, for `hierarchical` (1: flat).
    per_host: u32,
    /// Sends and recvs, once the group has any.
    p2p: Option<Box<p2p::P2p>>,
    /// The seed a send's data derives from.
    seed: u64,
}

impl ProcessGroup {
    /// Whether to emit a `Step` event at every step (on by default; drivers that record
    /// nothing turn it off to save the work).
    pub fn set_step_events(&mut self, on: bool) {
        self.step_events = on;
    }

    /// Plants the bugs of `mutations` that live in the process group and its schedules (see
    /// [`Mutation`]); the empty set is the real code.
    pub fn plant(&mut self, mutations: Mutations) {
        self.mutations = mutations;
        self.tampered = mutations.contains(Mutation::NoGenerationCheck)
            || mutations.contains(Mutation::DropEarlyChunks);
    }

    /// `me` must be one of `members`.
    pub fn new(
        id: GroupId,
        generation: Generation,
        members: Vec<Rank>,
        me: Rank,
        timeout: Nanos,
    ) -> ProcessGroup {
        ProcessGroup::shared(id, generation, Members::new(members), me, timeout)
    }

    /// Like [`ProcessGroup::new`] with a member list shared among the ranks of one process
    /// (or one driver), so a world of p ranks holds one list, not p.
    pub fn shared(
        id: GroupId,
        generation: Generation,
        members: Arc<Members>,
        me: Rank,
        timeout: Nanos,
    ) -> ProcessGroup {
        let me = members
            .index(me)
            .expect("a rank builds only groups it belongs to");
        ProcessGroup {
            id,
            generation,
            members,
            me,
            next_seq: 1,
            timeout,
            active: None,
            pending: Vec::new(),
            recorder: VecDeque::new(),
            step_events: true,
            per_host: 1,
            mutations: Mutations::NONE,
            tampered: false,
            p2p: None,
            seed: 0,
        }
    }

    /// The seed the data of this member's sends derives from (see `Buffer::message`).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Tells `hierarchical` that `per_host` consecutive members share a host (see
    /// `collective::hierarchical::local_size`).
    pub fn set_per_host(&mut self, per_host: u32) {
        self.per_host = per_host.max(1);
    }

    pub fn members(&self) -> &[Rank] {
        &self.members.ranks
    }

    /// This member's place in a call rooted at group rank `root` (clamped to the group, as
    /// every call is).
    pub fn ctx(&self, root: u32) -> Ctx {
        let p = self.size();
        Ctx {
            me: self.me,
            p,
            root: root.min(p.saturating_sub(1)),
        }
    }

    pub fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// The sequence number the next collective call gets.
    pub fn next_seq(&self) -> SeqNo {
        SeqNo(self.next_seq)
    }

    pub fn is_busy(&self) -> bool {
        self.active.is_some() || self.p2p_busy()
    }

    pub fn wait_state(&self) -> Option<WaitState> {
        match &self.active {
            Some(a) => Some(a.coll.wait_state()),
            None => self.p2p_wait_state(),
        }
    }

    /// Where the chunk `m` will land if it belongs to the running call's step (see
    /// [`crate::process::RankProcess::landing`]).
    #[inline(always)]
    pub fn landing(&self, m: &CollMsg) -> Option<*const u8> {
        let a = self.active.as_ref()?;
        if a.coll.fp.seq != m.fp.seq {
            return None;
        }
        a.coll.landing()
    }

    /// The flight recorder's entries, oldest first.
    pub fn flight_record(&self) -> Vec<FlightEntry> {
        let mut entries: Vec<FlightEntry> = self.recorder.iter().cloned().collect();
        // the running call's step is read when asked for, not written at every step
        if let (Some(a), Some(e)) = (&self.active, entries.last_mut()) {
            if e.fp.seq == a.coll.fp.seq && e.state == FlightState::Started {
                e.step = a.coll.step();
            }
        }
        entries
    }

    /// Issues a call. Only one call per group runs at a time.
    pub fn call(&mut self, now: Nanos, req: CallRequest, out: &mut Outbox) -> CallOutcome {
        debug_assert!(
            self.active.is_none() && (req.op.point_to_point() || !self.p2p_busy()),
            "one collective at a time per group, or sends and recvs"
        );
        if req.op.point_to_point() {
            let peer = req.peer.unwrap_or(u32::MAX);
            let seed = self.seed;
            return self.call_p2p(now, req, peer, seed, out);
        }
        let seq = SeqNo(self.next_seq);
        self.next_seq += 1;
        let p = self.size();
        let fp = Fingerprint {
            group: self.id,
            generation: self.generation,
            seq,
            op: req.op,
            algorithm: req.algorithm,
            bytes: req.bytes,
            dtype: req.dtype,
            root: req.root,
            reduce: req.reduce,
            elements: req.elements,
        };
        let ctx = self.ctx(req.root);
        out.event(ProtoEvent::Call {
            iteration: req.iteration,
            index: req.index,
            fp,
            members: p as usize,
            peer: None,
        });
        let sched =
            match mutation::schedule(self.mutations, req.op, req.algorithm, ctx, self.per_host) {
                Ok(s) => s,
                Err(e) => {
                    // validated scenarios never get here; a driver fed by hand might
                    out.event(ProtoEvent::Abort {
                        group: self.id,
                        generation: self.generation,
                        seq,
                        step: 0,
                        steps: 0,
                        waiting_for: Vec::new(),
                        reason: AbortReason::Unsupported(e),
                    });
                    return CallOutcome::Aborted;
                }
            };
        let buf = collective::prepare(req.op, req.algorithm, ctx, req.elements, req.input);
        let coll = Collective::new(fp, self.members.clone(), ctx, sched, buf, now);
        self.record(FlightEntry {
            fp,
            iteration: req.iteration,
            index: req.index,
            state: FlightState::Scheduled,
            start_ns: now,
            started_ns: None,
            end_ns: None,
            step: 0,
            steps: coll.steps(),
        });
        self.active = Some(Active {
            coll,
            iteration: req.iteration,
            index: req.index,
            started: false,
        });
        out.set_timer(
            TimerKey::Watchdog {
                group: self.id,
                seq,
            },
            crate::time::later(now, self.timeout),
        );
        let progress = self.active.as_mut().map(|a| a.coll.start(now, out));
        let progress = match progress {
            Some(p) => p,
            None => return CallOutcome::Pending,
        };
        self.after(now, progress, true, out)
    }

    /// A collective message from world rank `from`.
    #[inline(always)]
    pub fn on_message(
        &mut self,
        now: Nanos,
        from: Rank,
        mut msg: Box<CollMsg>,
        out: &mut Outbox,
    ) -> CallOutcome {
        if self.tampered && self.mutations.contains(Mutation::NoGenerationCheck) {
            msg.fp.generation = self.generation;
        }
        let Some(from) = self.members.index(from) else {
            return CallOutcome::Pending; // not a member of this generation: ignore
        };
        if msg.fp.generation != self.generation || msg.fp.seq.0 >= self.next_seq {
            // a later call (or a generation this rank has not reached): keep it for then
            if msg.fp.generation >= self.generation {
                self.pending.push((from, msg));
            }
            return CallOutcome::Pending;
        }
        let Some(active) = self.active.as_mut() else {
            return CallOutcome::Pending; // a finished call's straggler
        };
        if msg.fp.seq != active.coll.fp.seq {
            return CallOutcome::Pending;
        }
        if msg.fp != active.coll.fp {
            // same slot, different parameters: a mismatched call is never consumed
            self.pending.push((from, msg));
            return CallOutcome::Pending;
        }
        if !active.started {
            active.started = true;
            let seq = msg.fp.seq;
            self.mark_started(seq, now);
        }
        let Some(active) = self.active.as_mut() else {
            return CallOutcome::Pending;
        };
        if self.tampered
            && self.mutations.contains(Mutation::DropEarlyChunks)
            && msg.step > active.coll.step()
        {
            return CallOutcome::Pending;
        }
        let progress = active.coll.on_chunk(now, from, msg, out);
        self.after(now, progress, false, out)
    }

    /// The watchdog of `seq` fired.
    pub fn on_watchdog(&mut self, now: Nanos, seq: SeqNo, out: &mut Outbox) -> CallOutcome {
        let Some(active) = self.active.as_ref() else {
            return CallOutcome::Pending;
        };
        if active.coll.fp.seq != seq {
            return CallOutcome::Pending;
        }
        let ws = active.coll.wait_state();
        let reason = AbortReason::Watchdog {
            op: ws.op,
            seq: ws.seq,
            waited: now.saturating_sub(active.coll.started_ns),
            step: ws.step,
            steps: ws.steps,
            waiting_for: ws.waiting_for,
        };
        self.abort(now, reason, out);
        out.event(ProtoEvent::FlightRecord {
            entries: self.flight_record(),
        });
        CallOutcome::Aborted
    }

    /// Aborts the running call (watchdog, or a membership change).
    pub fn abort(&mut self, now: Nanos, reason: AbortReason, out: &mut Outbox) {
        if self.p2p_busy() {
            return self.abort_p2p(reason, out);
        }
        if let Some(active) = self.active.take() {
            let ws = active.coll.wait_state();
            out.cancel_timer(TimerKey::Watchdog {
                group: self.id,
                seq: ws.seq,
            });
            self.update_record(ws.seq, FlightState::Aborted, now, ws.step);
            out.event(ProtoEvent::Abort {
                group: self.id,
                generation: self.generation,
                seq: ws.seq,
                step: ws.step,
                steps: ws.steps,
                waiting_for: ws.waiting_for,
                reason,
            });
        }
    }

    #[inline(always)]
    fn after(
        &mut self,
        now: Nanos,
        progress: Progress,
        started: bool,
        out: &mut Outbox,
    ) -> CallOutcome {
        match progress {
            Progress::Done => {
                let active = self.active.take().expect("a call is running");
                let seq = active.coll.fp.seq;
                let steps = active.coll.steps();
                let ctx = active.coll.ctx();
                let (op, algorithm) = (active.coll.fp.op, active.coll.fp.algorithm);
                out.cancel_timer(TimerKey::Watchdog {
                    group: self.id,
                    seq,
                });
                self.update_record(seq, FlightState::Completed, now, steps);
                let result = collective::extract(op, algorithm, ctx, active.coll.into_buffer());
                out.event(ProtoEvent::Complete {
                    group: self.id,
                    generation: self.generation,
                    seq,
                    iteration: active.iteration,
                    index: active.index,
                    result: result
                        .clone()
                        .unwrap_or(Buffer::empty(crate::vocab::Dtype::I64)),
                });
                CallOutcome::Completed {
                    iteration: active.iteration,
                    index: active.index,
                    result,
                }
            }
            Progress::Waiting { stepped } => {
                if started {
                    self.feed_pending(now, out)
                } else {
                    if stepped && self.step_events {
                        self.emit_step(out);
                    }
                    CallOutcome::Pending
                }
            }
            Progress::Rejected => CallOutcome::Pending,
        }
    }

    /// Feeds kept messages to a call that just started.
    fn feed_pending(&mut self, now: Nanos, out: &mut Outbox) -> CallOutcome {
        let fp = match &self.active {
            Some(a) => a.coll.fp,
            None => return CallOutcome::Pending,
        };
        let mut mine = Vec::new();
        let mut k = 0;
        while k < self.pending.len() {
            if self.pending[k].1.fp == fp {
                mine.push(self.pending.remove(k));
            } else {
                k += 1;
            }
        }
        if !mine.is_empty() {
            if let Some(a) = self.active.as_mut() {
                a.started = true;
            }
            self.mark_started(fp.seq, now);
        }
        let mut stepped = true;
        for (from, msg) in mine {
            let Some(active) = self.active.as_mut() else {
                break;
            };
            match active.coll.on_chunk(now, from, msg, out) {
                Progress::Done => return self.after(now, Progress::Done, false, out),
                Progress::Waiting { stepped: s } => stepped |= s,
                Progress::Rejected => {}
            }
        }
        if stepped {
            self.emit_step(out);
        }
        CallOutcome::Pending
    }

    #[inline(always)]
    fn emit_step(&mut self, out: &mut Outbox) {
        if let Some(a) = &self.active {
            if !self.step_events {
                return;
            }
            out.step(a.coll.step_event());
        }
    }

    fn record(&mut self, e: FlightEntry) {
        if self.recorder.len() == FLIGHT_RECORDER_CAPACITY {
            self.recorder.pop_front();
        }
        self.recorder.push_back(e);
    }

    /// A matching chunk arrived for `seq`: a scheduled entry becomes started.
    fn mark_started(&mut self, seq: SeqNo, now: Nanos) {
        if let Some(e) = self.recorder.back_mut() {
            if e.fp.seq == seq && e.state == FlightState::Scheduled {
                e.state = FlightState::Started;
                e.started_ns = Some(now);
            }
        }
    }

    fn update_record(&mut self, seq: SeqNo, state: FlightState, now: Nanos, step: u32) {
        if let Some(e) = self.recorder.iter_mut().rev().find(|e| e.fp.seq == seq) {
            e.state = state;
            e.end_ns = Some(now);
            e.step = step;
        }
    }
}
