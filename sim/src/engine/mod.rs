//! The discrete-event engine (DESIGN §1.2).
//!
//! One thread, one queue ordered by `(time_ns, insertion seq)` — or a seeded shuffle of equal
//! times when the scenario asks for it. Time is exact integer nanoseconds and advances only by
//! events. All randomness (jitter, loss) comes from one seeded [`Rng`]. No hash-map iteration,
//! wall clock or thread influences a run: the same scenario and seed give the same event stream.
//!
//! The engine drives each rank's sans-IO [`RankProcess`]: it hands it inputs, carries out its
//! outputs (sends through the network model, timers, compute, local reduction work), and applies
//! the scenario's faults to processes and links.

pub(crate) mod faults;
pub(crate) mod membership;
pub(crate) mod net;
mod queue;
mod rng;
mod variant;

pub use faults::touched_ranks;
pub use rng::Rng;
#[doc(hidden)]
pub use variant::Variant;

use crate::check::reference::{full_reference, matches_reference, CallKey};
use crate::proto::collective::Members;
use crate::proto::elastic::{ElasticConfig, StoreServer};
use crate::proto::{
    Buffer, Fingerprint, GroupId, Input, Msg, Outbox, Output, ProcConfig, ProtoEvent, Rank,
    RankProcess, RankStatus, TimerKey, WaitState,
};
use crate::scenario::{Fault, Outcome, Scenario, TieBreak};
use crate::trace::{timer_fields, Event, FaultPhase, Recorder};
use crate::units::{Bandwidth, Nanos};
use faults::FaultSet;
use net::Net;
use queue::Queue;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A message on its way.
#[derive(Debug)]
struct Flight {
    id: u64,
    from: u32,
    to: u32,
    msg: Msg,
    bytes: u64,
    reliable: bool,
    from_inc: u32,
    to_inc: u32,
    /// Already through the receive port.
    received: bool,
    /// A resend that can never arrive (see [`Engine::doomed`]), counted there.
    doomed: bool,
}

/// An 8-byte tag keeps every variant's fields 8-byte aligned, so that the copies an event goes
/// through as it leaves the queue are read back whole (a 4-byte tag puts them off by 4, and
/// reading a field that straddles two copied chunks stalls the processor).
#[derive(Debug)]
#[repr(u64)]
enum Ev {
    Start(u32),
    Deliver(Flight),
    /// A lost or blocked reliable message is sent again.
    Resend(Flight),
    Timer {
        rank: u32,
        key: TimerKey,
        token: u64,
    },
    ComputeDone {
        rank: u32,
        token: u64,
    },
    /// Outputs held back until the local reduction work before them is done.
    Outputs {
        rank: u32,
        inc: u32,
        outs: Vec<Output>,
    },
    FaultBegin(usize),
    FaultEnd(usize),
    Restart(u32),
    /// Elastic: no rank is working and no fault is due; see whether anything can still happen.
    Settle,
}

/// Laid out in declaration order: what a delivered message touches first.
#[repr(C)]
struct Slot {
    paused: bool,
    /// Batches of outputs held back behind reduction work (`Ev::Outputs` not yet carried out):
    /// a rank whose code says it is done is not finished while its last outputs wait here.
    held: u32,
    /// Busy with local reduction work until then.
    cpu_free: Nanos,
    proc: Option<RankProcess>,
    /// Events that reached the rank while it was paused, in order.
    parked: Vec<Ev>,
    timers: Vec<(TimerKey, u64)>,
    compute_token: Option<u64>,
    restart_pending: bool,
    /// The call the rank is in (for result checking).
    call: Option<(Fingerprint, u32, u32)>,
    /// Elastic: the members of the generation the rank installed last (None: the world).
    members: Option<Arc<Members>>,
    /// The store node of a store rendezvous (this slot has no rank process).
    store: Option<StoreServer>,
    /// Elastic: where the rank stands, as last counted in `Engine::tally`.
    standing: membership::Standing,
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every rank finished (or is dead for good, or refused).
    AllFinished,
    /// A watchdog fired without elastic membership: the job crashes.
    Watchdog {
        rank: u32,
    },
    /// Nothing left to happen.
    Quiescent,
    /// Elastic: after the last fault, no rank got further into the workload for
    /// [`NO_PROGRESS_ROUNDS`] recovery rounds (watchdog timeout, detection, compute) plus the
    /// time to redo one iteration's calls: the group keeps rebuilding around a rank that never
    /// progresses (a hang, or a mismatched call it repeats in every generation), so the run
    /// would go on forever. It stops at the first abort after that window, when the ranks
    /// still show the calls they are stuck in (or after a second window without one).
    NoProgress,
    TimeLimit,
    Interrupted,
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub events: u64,
    pub messages_sent: u64,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    pub outcome: Outcome,
    pub end_ns: Nanos,
    pub stop: StopReason,
    pub stats: Stats,
}

pub struct Engine<'r> {
    cfg: Arc<ProcConfig>,
    seed: u64,
    now: Nanos,
    time_limit: Option<Nanos>,
    queue: Queue<Ev>,
    shuffle: bool,
    /// A broken variant's tie-break (see [`Variant`]).
    unstable_ties: bool,
    rng: Rng,
    slots: Vec<Slot>,
    /// Each slot's incarnation (restarts so far), kept apart from the slots: every message
    /// checks its sender's and its receiver's, and a dense vector keeps that in cache.
    incarnations: Vec<u32>,
    net: Net,
    faults: FaultSet,
    reduce_bw: Option<Bandwidth>,
    rec: &'r mut dyn Recorder,
    record: bool,
    out: Outbox,
    next_token: u64,
    next_msg: u64,
    stats: Stats,
    stop: Option<StopReason>,
    /// Reference results by call and members, most recent last (few calls are in flight at once).
    refs: Vec<(CallKey, Arc<Members>, Option<Buffer>)>,
    /// Set when a rank may have finished (done, refused, died), so the end is checked then.
    maybe_finished: bool,
    /// Ranks in the world (the store, when there is one, is node `ranks`).
    ranks: u32,
    /// Elastic membership, when the group is elastic.
    elastic: Option<Arc<ElasticConfig>>,
    /// Fault begins, ends and restarts still in the queue.
    pending_faults: u32,
    /// Every generation formed: (generation, members, when), in the order first reported.
    generations: Vec<membership::GenerationRecord>,
    /// Elastic: how many ranks stand where, so that the end of a run is noticed in O(1).
    tally: membership::Tally,
    /// Elastic: an `Ev::Settle` is in the queue.
    settling: bool,
    /// When the workload last progressed ([`Engine::frontier`] moved), or the latest fault
    /// transition if later.
    progress_ns: Nanos,
    /// The furthest call any rank completed: (iteration, op index).
    frontier: Option<(u32, u32)>,
    /// The workload is registry steps only: no collective, so no watchdog ends a hang.
    registry_only: bool,
    /// Elastic: the workload got no further for a whole [`StopReason::NoProgress`] window;
    /// the run stops at the next abort.
    no_progress: bool,
    /// Resends in the queue that can never arrive: lost to a partition when no fault is left
    /// to begin or end. When they are all the queue holds, nothing else can happen (the
    /// messages would be sent again forever) and the run is quiescent.
    doomed: usize,
}

/// See [`StopReason::NoProgress`].
pub const NO_PROGRESS_ROUNDS: u64 = 4;

impl<'r> Engine<'r> {
    /// An engine for `scenario` with `seed` (the scenario's own seed unless overridden).
    pub fn new(scenario: &Scenario, seed: u64, rec: &'r mut dyn Recorder) -> Engine<'r> {
        Engine::with_variant(scenario, seed, rec, Variant::default())
    }

    /// Like [`Engine::new`], running a deliberately broken `variant` (tests only).
    #[doc(hidden)]
    pub fn with_variant(
        scenario: &Scenario,
        seed: u64,
        rec: &'r mut dyn Recorder,
        variant: Variant,
    ) -> Engine<'r> {
        let record = rec.enabled();
        let mut cfg = crate::scenario::resolve::workload(scenario, seed);
        cfg.step_events = record;
        cfg.mutation = variant.mutation;
        let cfg = Arc::new(cfg);
        let p = scenario.world.size;
        let store = membership::store_node(&cfg);
        let mut net = Net::new(scenario);
        if store.is_some() {
            net.add_node();
        }
        let mut e = Engine {
            cfg: cfg.clone(),
            seed,
            now: 0,
            time_limit: scenario.time_limit.map(|d| d.0),
            queue: Queue::default(),
            shuffle: scenario.engine.tie_break == TieBreak::Shuffle,
            unstable_ties: variant.nondeterministic_ties,
            rng: Rng::new(seed),
            slots: (0..p + u32::from(store.is_some()))
                .map(|r| Slot {
                    proc: (r < p).then(|| RankProcess::new(cfg.clone(), Rank(r), 0)),
                    paused: false,
                    parked: Vec::new(),
                    timers: Vec::new(),
                    compute_token: None,
                    cpu_free: 0,
                    held: 0,
                    restart_pending: false,
                    call: None,
                    members: None,
                    store: (r == p).then(|| StoreServer::new(cfg.world_members.clone(), 0)),
                    standing: membership::Standing::Off,
                })
                .collect(),
            incarnations: vec![0; (p + u32::from(store.is_some())) as usize],
            net,
            faults: FaultSet::new(&scenario.faults),
            reduce_bw: scenario.network.reduce_bandwidth,
            rec,
            record,
            out: match scenario.network.reduce_bandwidth {
                Some(_) => Outbox::new(),
                None => Outbox::ignoring_work(),
            },
            next_token: 0,
            next_msg: 0,
            stats: Stats::default(),
            stop: None,
            refs: Vec::new(),
            maybe_finished: false,
            ranks: p,
            elastic: cfg.elastic.clone(),
            pending_faults: 0,
            generations: Vec::new(),
            tally: membership::Tally::default(),
            settling: false,
            progress_ns: 0,
            frontier: None,
            no_progress: false,
            doomed: 0,
            registry_only: cfg.ops.is_empty() && cfg.registry.is_some() && cfg.elastic.is_none(),
        };
        for (i, f) in scenario.faults.iter().enumerate() {
            if let Some(at) = f.at() {
                e.pending_faults += 1;
                e.push(at.0, Ev::FaultBegin(i));
                if let Some(d) = f.duration() {
                    e.pending_faults += 1;
                    e.push(at.0 + d.0, Ev::FaultEnd(i));
                }
            }
        }
        for r in 0..p + u32::from(store.is_some()) {
            e.push(0, Ev::Start(r));
        }
        e
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    pub fn world_size(&self) -> u32 {
        self.ranks
    }

    /// What `rank`'s process reports it is doing (None: dead).
    pub fn status(&self, rank: u32) -> Option<RankStatus> {
        self.slots[rank as usize].proc.as_ref().map(|p| p.status())
    }

    pub fn wait_state(&self, rank: u32) -> Option<WaitState> {
        self.slots[rank as usize]
            .proc
            .as_ref()
            .and_then(|p| p.wait_state())
    }

    pub fn is_paused(&self, rank: u32) -> bool {
        self.slots[rank as usize].paused
    }

    #[inline(always)]
    fn push(&mut self, t: Nanos, ev: Ev) {
        self.push_with(t, || ev);
    }

    /// [`Engine::push`] of the event `ev` builds, built in the queue (see `Queue::push_with`).
    #[inline(always)]
    fn push_with(&mut self, t: Nanos, ev: impl FnOnce() -> Ev) {
        let key = if self.shuffle {
            Some(self.rng.next_u64() >> 24)
        } else if self.unstable_ties {
            Some(variant::unstable_key() >> 24)
        } else {
            None
        };
        self.queue.push_with(t, key, ev);
    }

    fn emit(&mut self, ev: Event) {
        self.stats.events += 1;
        self.rec.record(self.now, &ev);
    }

    /// Runs to the end.
    pub fn run(&mut self) -> RunResult {
        self.run_until_interrupted(None)
    }

    /// Runs to the end, or until `interrupt` is set (checked every few thousand events).
    pub fn run_until_interrupted(&mut self, interrupt: Option<&AtomicBool>) -> RunResult {
        let mut n: u32 = 0;
        while self.stop.is_none() {
            n = n.wrapping_add(1);
            if n.is_multiple_of(4096) {
                if let Some(flag) = interrupt {
                    if flag.load(Ordering::Relaxed) {
                        self.stop = Some(StopReason::Interrupted);
                        break;
                    }
                }
            }
            self.step();
        }
        self.result()
    }

    /// Processes one event; false when the run has stopped.
    pub fn step(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        let Some(t) = self.queue.peek_time() else {
            self.stop = Some(StopReason::Quiescent);
            return false;
        };
        if let Some(limit) = self.time_limit {
            if t > limit {
                self.now = limit;
                self.stop = Some(StopReason::TimeLimit);
                return false;
            }
        }
        let (t, ev) = self.queue.pop().expect("peeked");
        debug_assert!(t >= self.now, "time never goes back");
        self.now = t;
        self.dispatch(ev);
        if let Some(StopReason::Watchdog { rank }) = self.stop {
            self.dump_flight_records(rank);
        }
        if self.doomed > 0
            && self.queue.len() == self.doomed
            && self.time_limit.is_none()
            && self.stop.is_none()
        {
            // only messages lost for good are left, each sent again and again: without a
            // time limit to run out, stop
            self.stop = Some(StopReason::Quiescent);
        }
        if self.elastic.is_some() {
            self.maybe_finished = false;
            self.settle();
        } else if self.maybe_finished {
            self.maybe_finished = false;
            if self.stop.is_none() && self.all_finished() {
                self.stop = Some(StopReason::AllFinished);
            } else if self.registry_only && self.stop.is_none() && self.registry_stuck() {
                // heartbeats would go on forever: stop once nothing else can happen (a step
                // running and a fault ending both set `maybe_finished`)
                self.stop = Some(StopReason::Quiescent);
            }
        }
        self.stop.is_none()
    }

    /// The job is torn down after `fired`'s watchdog: as PyTorch's dump-on-timeout, every
    /// other live rank dumps its flight recorder too (a frozen or dead one cannot).
    fn dump_flight_records(&mut self, fired: u32) {
        if !self.record {
            return;
        }
        for r in 0..self.slots.len() as u32 {
            let slot = &self.slots[r as usize];
            if r == fired || slot.paused {
                continue;
            }
            let Some(p) = slot.proc.as_ref() else {
                continue;
            };
            let entries = p.flight_record();
            if !entries.is_empty() {
                self.emit(Event::FlightRecord { rank: r, entries });
            }
        }
    }

    /// A registry workload (no collectives, so no watchdog) that cannot go on: every live
    /// node ran all its registry steps, and some node hangs, so it will never be done.
    fn registry_stuck(&self) -> bool {
        if self.pending_faults > 0 {
            return false;
        }
        let mut hung = false;
        for s in &self.slots[..self.ranks as usize] {
            match &s.proc {
                None if s.restart_pending => return false,
                None => {}
                Some(p) if p.registry().is_some_and(|r| !r.finished()) => return false,
                Some(p) => match p.status() {
                    RankStatus::Hung { .. } => hung = true,
                    RankStatus::Done | RankStatus::Refused => {}
                    _ => return false,
                },
            }
        }
        hung
    }

    fn all_finished(&self) -> bool {
        if self.elastic.is_some() {
            return self.elastic_finished();
        }
        self.slots[..self.ranks as usize]
            .iter()
            .all(|s| match &s.proc {
                None => !s.restart_pending,
                Some(p) => {
                    s.held == 0 && matches!(p.status(), RankStatus::Done | RankStatus::Refused)
                }
            })
    }

    /// The outcome so far (final once the run has stopped).
    pub fn result(&self) -> RunResult {
        let stop = self.stop.clone().unwrap_or(StopReason::Quiescent);
        // without collectives (a registry workload), a dead node's workload just stops
        let dead_ok = self.cfg.ops.is_empty();
        let all_done = if self.elastic.is_some() {
            self.elastic_finished()
        } else {
            self.slots[..self.ranks as usize].iter().all(|s| {
                s.proc.as_ref().map_or(dead_ok && !s.restart_pending, |p| {
                    p.status() == RankStatus::Done
                })
            })
        };
        let outcome = match stop {
            StopReason::TimeLimit | StopReason::Interrupted if !all_done => Outcome::TimedOut,
            _ if all_done && self.latest_generation().0 > 0 => Outcome::Rebuilt,
            _ if all_done => Outcome::Completed,
            _ => Outcome::Stalled,
        };
        RunResult {
            outcome,
            end_ns: self.now,
            stop,
            stats: self.stats,
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start(r) => {
                if r >= self.ranks {
                    return self.start_store(r);
                }
                if self.slots[r as usize].proc.is_none() {
                    return; // preempted before it could start
                }
                if self.record {
                    self.emit(Event::ProcessStart {
                        rank: r,
                        incarnation: self.incarnations[r as usize],
                    });
                }
                self.input(r, Input::Start);
            }
            Ev::Deliver(f) => self.deliver(f),
            Ev::Resend(f) => {
                self.doomed -= usize::from(f.doomed);
                let Flight {
                    id,
                    from,
                    to,
                    msg,
                    bytes,
                    reliable,
                    from_inc,
                    to_inc,
                    ..
                } = f;
                if self.incarnations[from as usize] != from_inc {
                    return; // the sender died: nobody resends
                }
                self.transmit(id, from, to, msg, bytes, reliable, from_inc, to_inc);
            }
            Ev::Timer { rank, key, token } => {
                let slot = &mut self.slots[rank as usize];
                let Some(pos) = slot
                    .timers
                    .iter()
                    .position(|&(k, tk)| k == key && tk == token)
                else {
                    return; // cancelled or replaced
                };
                // a rank's outputs are carried out in the order its code produced them: nothing
                // new is handed to it while earlier outputs wait behind reduction work
                if slot.paused || self.now < slot.cpu_free || slot.held > 0 {
                    self.defer(rank, Ev::Timer { rank, key, token });
                    return;
                }
                slot.timers.remove(pos);
                if self.record {
                    let (timer, group, seq) = timer_fields(&key);
                    self.emit(Event::Timer {
                        rank,
                        timer: timer.into(),
                        group,
                        seq,
                    });
                }
                self.input(rank, Input::Timer(key));
            }
            Ev::ComputeDone { rank, token } => {
                let slot = &mut self.slots[rank as usize];
                if slot.compute_token != Some(token) {
                    return;
                }
                if slot.paused {
                    self.defer(rank, Ev::ComputeDone { rank, token });
                    return;
                }
                slot.compute_token = None;
                if self.record {
                    self.emit(Event::ComputeDone { rank });
                }
                self.input(rank, Input::ComputeDone);
            }
            Ev::Outputs { rank, inc, outs } => {
                let live = self.incarnations[rank as usize] == inc;
                let slot = &mut self.slots[rank as usize];
                if !live || slot.proc.is_none() {
                    return;
                }
                if slot.paused {
                    self.defer(rank, Ev::Outputs { rank, inc, outs });
                    return;
                }
                slot.held -= 1;
                self.maybe_finished = true;
                self.apply(rank, outs.into_iter());
            }
            Ev::FaultBegin(i) => self.fault(i, FaultPhase::Begin),
            Ev::FaultEnd(i) => self.fault(i, FaultPhase::End),
            Ev::Settle => {
                self.settling = false;
                if self.stop.is_none() && self.stuck() {
                    // heartbeats would go on forever: stop once nothing else can happen
                    self.stop = Some(StopReason::Quiescent);
                }
            }
            Ev::Restart(r) => {
                self.pending_faults -= 1;
                self.maybe_finished = true;
                if self.slots[r as usize].alive() {
                    return; // an earlier restart (of an overlapping preemption) brought it back
                }
                if r >= self.ranks {
                    return self.restart_store(r);
                }
                self.incarnations[r as usize] += 1;
                let incarnation = self.incarnations[r as usize];
                let slot = &mut self.slots[r as usize];
                slot.restart_pending = false;
                slot.proc = Some(RankProcess::new(self.cfg.clone(), Rank(r), incarnation));
                slot.paused = false;
                self.net.reset_rank(r, self.now);
                if self.record {
                    self.emit(Event::ProcessStart {
                        rank: r,
                        incarnation,
                    });
                }
                self.input(r, Input::Start);
            }
        }
    }

    /// Parks an event of a paused (or busy) rank.
    fn defer(&mut self, rank: u32, ev: Ev) {
        let slot = &mut self.slots[rank as usize];
        if slot.paused {
            slot.parked.push(ev);
        } else {
            let at = slot.cpu_free.max(self.now);
            self.push(at, ev);
        }
    }

    /// Hands `input` to `rank`'s process and carries out what it asks for.
    #[inline]
    fn input(&mut self, rank: u32, input: Input) {
        let now = self.now;
        let slot = &mut self.slots[rank as usize];
        let out = &mut self.out;
        if let Some(p) = slot.proc.as_mut() {
            p.handle(now, input, out);
        } else if let (Some(store), Input::Message { from, msg }) = (slot.store.as_mut(), input) {
            store.handle(from, msg, out);
        } else {
            return;
        }
        if out.out.len() == 1 {
            // the usual answer to a chunk: the next chunk to send, its fields taken one by one
            // (a copy of the whole output would read back, as one word, two fields that were
            // just written apart, and stall)
            match out.out.pop() {
                Some(Output::Send {
                    to,
                    msg,
                    bytes,
                    reliable,
                }) => self.send(rank, to, msg, bytes, reliable),
                o => self.apply(rank, o.into_iter()),
            }
        } else {
            // carrying out outputs may hand another rank an input: it gets an empty outbox
            let mut outs = std::mem::take(&mut self.out.out);
            self.apply(rank, outs.drain(..));
            self.out.out = outs;
        }
        if self.elastic.is_some() {
            self.recount(rank);
        }
    }

    #[inline]
    fn apply(&mut self, rank: u32, mut outs: impl Iterator<Item = Output>) {
        while let Some(o) = outs.next() {
            match o {
                Output::Send {
                    to,
                    msg,
                    bytes,
                    reliable,
                } => self.send(rank, to, msg, bytes, reliable),
                Output::SetTimer { key, at } => {
                    let token = self.next_token;
                    self.next_token += 1;
                    let slot = &mut self.slots[rank as usize];
                    slot.timers.retain(|(k, _)| *k != key);
                    slot.timers.push((key, token));
                    self.push(at.max(self.now), Ev::Timer { rank, key, token });
                }
                Output::CancelTimer { key } => {
                    self.slots[rank as usize].timers.retain(|(k, _)| *k != key);
                }
                Output::Compute { duration } => {
                    let factor = self.faults.slow_factor(rank);
                    let d = if factor == 1.0 {
                        duration
                    } else {
                        (duration as f64 * factor).round() as Nanos
                    };
                    let token = self.next_token;
                    self.next_token += 1;
                    self.slots[rank as usize].compute_token = Some(token);
                    if self.record {
                        let iteration = match self.status(rank) {
                            Some(RankStatus::Computing { iteration }) => iteration,
                            _ => 0,
                        };
                        self.emit(Event::Compute {
                            rank,
                            iteration,
                            duration_ns: d,
                        });
                    }
                    self.push(self.now + d, Ev::ComputeDone { rank, token });
                }
                Output::Work { bytes } => {
                    if let Some(bw) = self.reduce_bw {
                        let d = bw.transfer_ns(bytes);
                        if d > 0 {
                            let rest: Vec<Output> = outs.collect();
                            let slot = &mut self.slots[rank as usize];
                            let at = self.now.max(slot.cpu_free) + d;
                            slot.cpu_free = at;
                            slot.held += 1;
                            let inc = self.incarnations[rank as usize];
                            self.push(
                                at,
                                Ev::Outputs {
                                    rank,
                                    inc,
                                    outs: rest,
                                },
                            );
                            return;
                        }
                    }
                }
                Output::Event(pe) => self.proto_event(rank, *pe),
            }
        }
    }

    /// Carries out `rank`'s `Output::Send`.
    #[inline(always)]
    fn send(&mut self, rank: u32, to: Rank, msg: Msg, bytes: u64, reliable: bool) {
        let id = self.next_msg;
        self.next_msg += 1;
        let from_inc = self.incarnations[rank as usize];
        let to_inc = self.incarnations.get(to.idx()).copied().unwrap_or(0);
        self.stats.messages_sent += 1;
        self.transmit(id, rank, to.0, msg, bytes, reliable, from_inc, to_inc);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn transmit(
        &mut self,
        id: u64,
        from: u32,
        to: u32,
        msg: Msg,
        bytes: u64,
        reliable: bool,
        from_inc: u32,
        to_inc: u32,
    ) {
        let mut extra = 0;
        let mut lost = None;
        if self.faults.has_active_net() {
            if self.faults.partitioned(from, to) {
                lost = Some("partition");
            } else {
                let rate = self.faults.loss_rate(from, to);
                if rate > 0.0 && self.rng.unit() < rate {
                    lost = Some("loss");
                }
            }
            extra += self.faults.extra_delay(from, to, &mut self.rng);
        }
        if self.net.jitter > 0 {
            extra += self.rng.up_to(self.net.jitter);
        }
        let timing = self.net.send(self.now, from, to, bytes, extra);
        if self.record {
            let (seq, step) = match &msg {
                Msg::Coll(m) => (Some(m.fp.seq.0), Some(m.step)),
                Msg::Elastic(_) | Msg::Registry(_) => (None, None),
            };
            self.emit(Event::Send {
                id,
                from,
                to,
                bytes,
                msg: msg.kind().into(),
                seq,
                step,
                arrive_ns: timing.arrive,
            });
        }
        let flight = move || Flight {
            id,
            from,
            to,
            msg,
            bytes,
            reliable,
            from_inc,
            to_inc,
            received: false,
            doomed: false,
        };
        match lost {
            None => self.push_with(timing.arrive, || Ev::Deliver(flight())),
            Some(reason) => self.lose(flight(), reason, timing.depart),
        }
    }

    /// A message is lost on the wire: resent after the retransmit timeout if reliable.
    fn lose(&mut self, mut f: Flight, reason: &str, at: Nanos) {
        self.stats.messages_dropped += 1;
        if self.record {
            self.emit(Event::Drop {
                id: f.id,
                from: f.from,
                to: f.to,
                reason: reason.into(),
                retransmit: f.reliable,
            });
        }
        if f.reliable {
            let when = at.max(self.now) + self.net.retransmit;
            f.doomed = reason == "partition" && self.pending_faults == 0;
            self.doomed += usize::from(f.doomed);
            self.push(when, Ev::Resend(f));
        }
    }

    #[inline(always)]
    fn deliver(&mut self, mut f: Flight) {
        let from_alive = self.incarnations[f.from as usize] == f.from_inc;
        let to_slot = &self.slots[f.to as usize];
        let drop_reason = if !from_alive {
            Some("sender died")
        } else if self.incarnations[f.to as usize] != f.to_inc || !to_slot.alive() {
            Some("receiver died")
        } else {
            None
        };
        if let Some(reason) = drop_reason {
            self.stats.messages_dropped += 1;
            if self.record {
                self.emit(Event::Drop {
                    id: f.id,
                    from: f.from,
                    to: f.to,
                    reason: reason.into(),
                    retransmit: false,
                });
            }
            return;
        }
        if !f.received {
            if self.faults.has_active_net() && self.faults.partitioned(f.from, f.to) {
                let now = self.now;
                return self.lose(f, "partition", now);
            }
            let done = self.net.receive(f.from, f.to, self.now, f.bytes);
            f.received = true;
            if done > self.now {
                self.push(done, Ev::Deliver(f));
                return;
            }
        }
        let slot = &self.slots[f.to as usize];
        if slot.paused || self.now < slot.cpu_free || slot.held > 0 {
            let to = f.to;
            self.defer(to, Ev::Deliver(f));
            return;
        }
        self.stats.messages_delivered += 1;
        if self.record {
            self.emit(Event::Deliver {
                id: f.id,
                from: f.from,
                to: f.to,
            });
        }
        self.input(
            f.to,
            Input::Message {
                from: Rank(f.from),
                msg: f.msg,
            },
        );
    }

    fn fault(&mut self, i: usize, phase: FaultPhase) {
        self.pending_faults -= 1;
        self.progress_ns = self.now;
        self.maybe_finished = true;
        let f = self.faults.fault(i).clone();
        if self.record {
            let (sides, oneway) = match &f {
                Fault::Partition { sides, oneway, .. } => (Some(sides.clone()), *oneway),
                _ => (None, false),
            };
            self.emit(Event::Fault {
                index: i as u32,
                fault: f.kind().into(),
                phase,
                ranks: touched_ranks(&f),
                sides,
                oneway,
                detail: describe_fault(&f),
            });
        }
        let begin = phase == FaultPhase::Begin;
        match f {
            Fault::Preempt {
                rank,
                restart_after,
                ..
            } => {
                if begin {
                    self.kill(rank);
                    if let Some(d) = restart_after {
                        self.slots[rank as usize].restart_pending = true;
                        self.pending_faults += 1;
                        self.push(self.now + d.0, Ev::Restart(rank));
                    }
                }
            }
            Fault::Pause { rank, .. } => {
                if !self.slots[rank as usize].alive() {
                    return;
                }
                if begin {
                    self.slots[rank as usize].paused = true;
                    if self.record {
                        self.emit(Event::ProcessPause { rank });
                    }
                } else {
                    self.slots[rank as usize].paused = false;
                    if self.record {
                        self.emit(Event::ProcessResume { rank });
                    }
                    let parked = std::mem::take(&mut self.slots[rank as usize].parked);
                    for ev in parked {
                        self.push(self.now, ev);
                    }
                }
            }
            Fault::Partition { .. }
            | Fault::Delay { .. }
            | Fault::Loss { .. }
            | Fault::Slow { .. } => self.faults.set_active(i, begin),
            Fault::Mismatch { .. } | Fault::Skip { .. } | Fault::Hang { .. } => {}
        }
    }

    fn kill(&mut self, rank: u32) {
        let slot = &mut self.slots[rank as usize];
        if !slot.alive() {
            return;
        }
        slot.proc = None;
        slot.store = None;
        slot.members = None;
        slot.paused = false;
        slot.parked.clear();
        slot.timers.clear();
        slot.compute_token = None;
        slot.call = None;
        slot.held = 0;
        let inc = self.incarnations[rank as usize];
        self.maybe_finished = true;
        // bump the incarnation so the dead process's messages and timers are dropped
        self.incarnations[rank as usize] += 1;
        if self.elastic.is_some() {
            self.recount(rank);
        }
        self.net.reset_rank(rank, self.now);
        if self.record {
            self.emit(Event::ProcessDeath {
                rank,
                incarnation: inc,
            });
        }
    }

    fn proto_event(&mut self, rank: u32, pe: ProtoEvent) {
        let mut correct = None;
        let mut watchdog = false;
        let mut aborted = false;
        match &pe {
            ProtoEvent::Abort { reason, .. } => {
                self.slots[rank as usize].call = None;
                watchdog = reason.starts_with("watchdog");
                aborted = true;
            }
            ProtoEvent::Call {
                iteration,
                index,
                fp,
                ..
            } => self.slots[rank as usize].call = Some((*fp, *iteration, *index)),
            ProtoEvent::Complete {
                result,
                iteration,
                index,
                ..
            } => {
                // progress is a call completed further into the workload than any before: a
                // group that rebuilds and fails at the same call again does not progress
                if self.frontier.is_none_or(|f| (*iteration, *index) > f) {
                    self.frontier = Some((*iteration, *index));
                    self.progress_ns = self.now;
                }
                let call = self.slots[rank as usize].call.take();
                if self.record {
                    correct = call.map(|(fp, it, ix)| self.check_result(rank, fp, it, ix, result));
                }
            }
            ProtoEvent::WorkloadDone | ProtoEvent::RejoinRefused { .. } => {
                self.maybe_finished = true;
            }
            _ => {}
        }
        match pe {
            ProtoEvent::Membership(ev) => return self.member_event(rank, ev),
            ProtoEvent::Registry(ev) => return self.registry_event(rank, ev),
            pe => {
                if self.record {
                    self.emit(crate::trace::from_proto::proto_event(rank, pe, correct));
                }
            }
        }
        if watchdog && self.stop.is_none() && self.elastic.is_none() {
            // without elastic membership the watchdog tears the job down
            self.stop = Some(StopReason::Watchdog { rank });
        }
        if aborted && self.no_progress && self.stop.is_none() {
            self.stop = Some(StopReason::NoProgress);
        }
    }

    /// Compares a rank's result with the reference computed from the members' inputs.
    fn check_result(
        &mut self,
        rank: u32,
        fp: Fingerprint,
        iteration: u32,
        index: u32,
        result: &Buffer,
    ) -> bool {
        let key = CallKey {
            fp,
            iteration,
            index,
            seed: self.seed,
        };
        // the call's group: the members of the generation the rank called in (they, and only
        // they, contribute), or the mesh sub-group the fingerprint names
        let members = if fp.group == GroupId(0) {
            self.call_members(rank, &fp)
        } else {
            match self.cfg.group_members(fp.group) {
                Some(m) => m,
                None => return false,
            }
        };
        if members.index(Rank(rank)).is_none() {
            return false;
        }
        let found = self
            .refs
            .iter()
            .find(|(k, m, _)| *k == key && (Arc::ptr_eq(m, &members) || **m == *members));
        let full = match found {
            Some((_, _, b)) => b.clone(),
            None => {
                let b = full_reference(&key, &members.ranks);
                if self.refs.len() >= 8 {
                    self.refs.remove(0);
                }
                self.refs.push((key, members.clone(), b.clone()));
                b
            }
        };
        matches_reference(&fp, full, &members, Rank(rank), result)
    }
}

/// One line describing a fault, for traces and reports.
pub fn describe_fault(f: &Fault) -> String {
    let span = |d: Option<crate::units::Duration>| match d {
        Some(d) => format!(" for {d}"),
        None => String::new(),
    };
    let target = |rank: &Option<u32>, link: &Option<[u32; 2]>| match (rank, link) {
        (Some(r), _) => format!("rank {r}'s links"),
        (None, Some([a, b])) => format!("link {a}-{b}"),
        _ => "no link".into(),
    };
    match f {
        Fault::Preempt {
            rank,
            restart_after,
            ..
        } => match restart_after {
            Some(d) => format!("rank {rank} preempted, restarted after {d}"),
            None => format!("rank {rank} preempted"),
        },
        Fault::Pause { rank, duration, .. } => format!("rank {rank} paused for {duration}"),
        Fault::Partition {
            sides,
            duration,
            oneway,
            ..
        } => {
            let s: Vec<String> = sides
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            format!(
                "{}partition {}{}",
                if *oneway { "one-way " } else { "" },
                s.join(" | "),
                span(*duration)
            )
        }
        Fault::Delay {
            rank,
            link,
            duration,
            extra,
            jitter,
            ..
        } => format!(
            "{} delayed by {extra}{}{}",
            target(rank, link),
            jitter
                .map(|j| format!(" (+ up to {j} jitter)"))
                .unwrap_or_default(),
            span(*duration)
        ),
        Fault::Loss {
            rank,
            link,
            duration,
            rate,
            ..
        } => format!(
            "{} lose {:.1}% of messages{}",
            target(rank, link),
            rate * 100.0,
            span(*duration)
        ),
        Fault::Slow {
            rank,
            duration,
            factor,
            ..
        } => format!("rank {rank} computes {factor}x slower{}", span(*duration)),
        Fault::Mismatch {
            rank,
            iteration,
            op_index,
            ..
        } => format!(
            "rank {rank} issues mismatched call {} of iteration {iteration}",
            op_index.unwrap_or(0)
        ),
        Fault::Skip {
            rank,
            iteration,
            op_index,
        } => format!(
            "rank {rank} skips call {} of iteration {iteration}",
            op_index.unwrap_or(0)
        ),
        Fault::Hang { rank, iteration } => {
            format!("rank {rank} stops issuing calls at iteration {iteration}")
        }
    }
}

/// What this engine implements; scenarios asking for more are rejected with
/// "not supported yet: <key>" instead of being silently ignored.
pub const SUPPORT: crate::scenario::Support = crate::scenario::Support {
    algorithm: crate::proto::collective::supported,
    ..crate::scenario::Support::ALL
};
