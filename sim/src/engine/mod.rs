//! The discrete-event engine.
//!
//! One thread, one queue ordered by `(time_ns, insertion seq)` — or a seeded shuffle of equal
//! times when the scenario asks for it. Time is exact integer nanoseconds and advances only by
//! events. All randomness (jitter, loss) comes from one seeded [`Rng`]. No hash-map iteration,
//! wall clock or thread influences a run: the same scenario and seed give the same event stream.
//!
//! The engine drives each rank's sans-IO [`RankProcess`]: it hands it inputs, carries out its
//! outputs (sends through the network model, timers, compute, local reduction work), and applies
//! the scenario's faults to processes and links. By concern:
//! - this module: the event loop, and handing a rank its inputs and carrying out its outputs;
//! - `transport`: messages on their way — sends, losses, resends, deliveries ([`DropReason`]);
//! - `lifecycle`: processes starting, dying, restarting, pausing, and the faults that do it;
//! - `stop`: what the ranks' protocol events mean for the run (through the
//!   [`Observer`](crate::observe::Observer) every driver shares), and when it is over
//!   ([`StopReason`], [`RunResult`]);
//! - `membership`: elastic membership and the registry's side of the end of a run;
//! - `net`, `faults`, `queue`, `rng`: the network model, the active faults, the event queue
//!   and the seeded random numbers.

mod app;
pub(crate) mod faults;
mod lifecycle;
pub(crate) mod membership;
pub(crate) mod net;
mod queue;
mod rng;
mod stop;
mod transport;

pub use app::Application;
pub use faults::{describe_fault, touched_ranks};
pub use rng::Rng;
pub use stop::{RunResult, StopReason, NO_PROGRESS_ROUNDS};
pub use transport::DropReason;

use crate::budget::{Budget, Limits};
use crate::hint::{prefetch, prefetch_addr};
use crate::observe::Observer;
use crate::proto::elastic::{ElasticConfig, StoreServer};
use crate::proto::mutation::{Mutation, Mutations};
use crate::proto::{
    Input, Outbox, Output, ProcConfig, Rank, RankProcess, RankStatus, SendToken, StepEvent,
    TimerKey, WaitState,
};
use crate::scenario::{Scenario, TieBreak};
use crate::trace::{timer_fields, Event, FaultPhase, Recorder, TICK_EVERY};
use crate::units::{later, Bandwidth, Nanos, NEVER};
use faults::FaultSet;
use net::Net;
use queue::Queue;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use transport::Flight;

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
    /// The bytes of a send the rank asked about (`Output::NotifySent`) have left it.
    SendDone {
        rank: u32,
        inc: u32,
        token: SendToken,
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
    /// An input from the application that drives the rank (`app`).
    App {
        rank: u32,
        input: Box<Input>,
    },
}

/// How many events ahead the engine asks for the memory a delivery will touch
/// ([`crate::hint`]): far enough for a load from the last-level cache to arrive, near enough
/// for what it brings to be still in the first-level cache when it is read. The 4,096-rank
/// ring ran 3.2 s without hints, 2.4 s at (12, 6) and (16, 8), 2.4-2.5 s at (24, 12), 2.6 s
/// at (8, 4); the 1,024-rank ring 15.8 M messages/s without, 17.2 M at (12, 6) (`ring_bench`,
/// engine alone).
const PREFETCH_AHEAD: usize = 12;
/// The second, nearer hint: what the state fetched by the first points to (the receiver's
/// buffer where the chunk lands, and the chunk's data), read only once that state is cached.
const LAND_AHEAD: usize = 6;

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
    /// The store node of a store rendezvous (this slot has no rank process).
    store: Option<StoreServer>,
    /// Elastic: where the rank stands, as last counted in `Engine::tally`.
    standing: membership::Standing,
}

/// Counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub events: u64,
    pub messages_sent: u64,
    pub messages_delivered: u64,
    pub messages_dropped: u64,
}

/// Generic over its recorder so that a run's own recorder (the digest and the diagnosis, with
/// no trace) is called directly where each event is made, and the event's fields go straight
/// into it; `dyn Recorder` by default.
pub struct Engine<'r, R: Recorder + ?Sized = dyn Recorder> {
    cfg: Arc<ProcConfig>,
    now: Nanos,
    time_limit: Option<Nanos>,
    queue: Queue<Ev>,
    shuffle: bool,
    /// [`Mutation::NondeterministicTies`]: ties break by a process-wide counter.
    unstable_ties: bool,
    rng: Rng,
    slots: Vec<Slot>,
    /// Each slot's incarnation (restarts so far), kept apart from the slots: every message
    /// checks its sender's and its receiver's, and a dense vector keeps that in cache.
    incarnations: Vec<u32>,
    net: Net,
    faults: FaultSet,
    reduce_bw: Option<Bandwidth>,
    rec: &'r mut R,
    record: bool,
    out: Outbox,
    next_token: u64,
    next_msg: u64,
    stats: Stats,
    stop: Option<StopReason>,
    /// What the ranks' protocol events mean: trace events, result checks, stop hints, and
    /// the generations formed.
    observer: Observer,
    /// Set when a rank may have finished (done, refused, died), so the end is checked then.
    maybe_finished: bool,
    /// Every rank below this one was finished when [`Engine::all_finished`] last looked.
    finished_below: u32,
    /// Ranks in the world (the store, when there is one, is node `ranks`).
    ranks: u32,
    /// Elastic membership, when the group is elastic.
    elastic: Option<Arc<ElasticConfig>>,
    /// Fault begins, ends and restarts still in the queue.
    pending_faults: u32,
    /// Faults triggered at a call (`at_call`), as (rank, K, fault index), and how many
    /// communication calls each rank has issued so far (over all its incarnations).
    call_faults: Vec<(u32, u32, usize)>,
    calls: Vec<u32>,
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
    /// Events processed so far, and how many may be ([`Limits::events`]).
    processed: u64,
    max_events: u64,
    /// Events the queue may hold at once ([`crate::budget::queue_room`]).
    max_queued: usize,
    /// The event budget and the memory estimate of the scenario, for [`Engine::run_within`].
    default_events: u64,
    estimate: crate::budget::MemoryEstimate,
    /// Resends in the queue that can never arrive: lost to a partition when no fault is left
    /// to begin or end. When they are all the queue holds, nothing else can happen (the
    /// messages would be sent again forever) and the run is quiescent.
    doomed: usize,
    /// The application that drives the ranks, when a real one does.
    app: Option<app::AppLink<'r>>,
    /// A watchdog failed one of the application's calls.
    app_failed: bool,
}

impl<'r, R: Recorder + ?Sized> Engine<'r, R> {
    /// An engine for `scenario` with `seed` (the scenario's own seed unless overridden),
    /// recording into `rec`. `mutations` plants bugs on purpose (the checker's and tests'
    /// business; [`Mutations::NONE`] runs the real code).
    pub fn new(
        scenario: &Scenario,
        seed: u64,
        mutations: Mutations,
        rec: &'r mut R,
    ) -> Engine<'r, R> {
        let record = rec.enabled();
        let mut cfg = crate::scenario::resolve::workload(scenario, seed, mutations);
        cfg.step_events = record;
        let cfg = Arc::new(cfg);
        let p = scenario.world.size;
        let store = membership::store_node(&cfg);
        let mut net = Net::new(scenario);
        if store.is_some() {
            net.add_node();
        }
        let nodes = p + u32::from(store.is_some());
        let mut e = Engine {
            cfg: cfg.clone(),
            now: 0,
            time_limit: scenario.time_limit.map(|d| d.0),
            queue: Queue::default(),
            shuffle: scenario.engine.tie_break == TieBreak::Shuffle,
            unstable_ties: mutations.contains(Mutation::NondeterministicTies),
            rng: Rng::new(seed),
            slots: (0..nodes)
                .map(|r| Slot {
                    proc: (r < p).then(|| RankProcess::new(cfg.clone(), Rank(r), 0)),
                    paused: false,
                    parked: Vec::new(),
                    timers: Vec::new(),
                    compute_token: None,
                    cpu_free: 0,
                    held: 0,
                    restart_pending: false,
                    store: (r == p).then(|| StoreServer::new(cfg.world_members.clone(), 0)),
                    standing: membership::Standing::Off,
                })
                .collect(),
            incarnations: vec![0; nodes as usize],
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
            observer: Observer::new(cfg.clone(), seed, nodes as usize),
            maybe_finished: false,
            finished_below: 0,
            ranks: p,
            elastic: cfg.elastic.clone(),
            pending_faults: 0,
            call_faults: scenario
                .faults
                .iter()
                .enumerate()
                .filter_map(|(i, f)| f.at_call().map(|(rank, k)| (rank, k, i)))
                .collect(),
            calls: vec![0; p as usize],
            tally: membership::Tally::default(),
            settling: false,
            progress_ns: 0,
            frontier: None,
            no_progress: false,
            processed: 0,
            max_events: u64::MAX,
            max_queued: usize::MAX,
            default_events: crate::budget::default_events(scenario),
            estimate: crate::budget::estimate(scenario),
            doomed: 0,
            app: None,
            app_failed: false,
            registry_only: !cfg.has_calls() && cfg.registry.is_some() && cfg.elastic.is_none(),
        };
        for (i, f) in scenario.faults.iter().enumerate() {
            if let Some(at) = f.at() {
                e.schedule_fault(i, at.0);
            }
        }
        for r in 0..nodes {
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

    /// Events waiting in the queue: what grows when a run outpaces itself.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// What `rank`'s process reports it is doing (None: dead).
    pub fn status(&self, rank: u32) -> Option<RankStatus> {
        self.slots[rank as usize].proc.as_ref().map(|p| p.status())
    }

    pub fn wait_state(&self, rank: u32) -> Option<WaitState> {
        self.slots[rank as usize]
            .proc
            .as_ref()
            .and_then(|p| p.call_wait_state())
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
            Some(queue::unstable_key() >> 24)
        } else {
            None
        };
        self.queue.push_with(t, key, ev);
    }

    #[inline(always)]
    fn emit(&mut self, ev: Event) {
        self.stats.events += 1;
        self.rec.record(self.now, &ev);
    }

    /// Records the step `s` of `rank`.
    #[inline(always)]
    fn emit_step(&mut self, rank: u32, s: StepEvent) {
        self.stats.events += 1;
        self.rec.step(self.now, rank, &s);
    }

    /// Runs to the end.
    pub fn run(&mut self) -> RunResult {
        self.run_until_interrupted(None)
    }

    /// Runs to the end, or until `interrupt` is set (checked before every event).
    pub fn run_until_interrupted(&mut self, interrupt: Option<&AtomicBool>) -> RunResult {
        self.run_within(&Limits::NONE, interrupt)
    }

    /// Runs to the end, until `interrupt` is set, or until a budget of `limits` runs out.
    /// The flags are checked before every event: an event that reduces millions of elements
    /// can take milliseconds, so a few thousand of them would overrun the wall-clock budget.
    pub fn run_within(&mut self, limits: &Limits, interrupt: Option<&AtomicBool>) -> RunResult {
        self.max_events = limits.events.unwrap_or(self.default_events);
        self.max_queued = limits.memory.map_or(usize::MAX, |m| {
            usize::try_from(crate::budget::queue_room(m, &self.estimate)).unwrap_or(usize::MAX)
        });
        while self.stop.is_none() {
            if interrupt.is_some_and(|f| f.load(Ordering::Relaxed)) {
                self.stop = Some(StopReason::Interrupted);
                break;
            }
            if limits.wall_clock.is_some_and(|f| f.load(Ordering::Relaxed)) {
                self.stop = Some(StopReason::OutOfBudget(Budget::WallClock));
                break;
            }
            self.step();
            if self.processed.is_multiple_of(TICK_EVERY) {
                self.rec.tick(self.now);
            }
        }
        self.result()
    }

    /// Processes one event; false when the run has stopped.
    pub fn step(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        if self.app.is_some() {
            self.sync_app();
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
        if t == NEVER {
            // a sum of times saturated: whatever comes next cannot be represented
            self.stop = Some(StopReason::OutOfBudget(Budget::VirtualTime));
            return false;
        }
        if self.processed >= self.max_events {
            self.stop = Some(StopReason::OutOfBudget(Budget::Events));
            return false;
        }
        if self.queue.len() > self.max_queued {
            self.stop = Some(StopReason::OutOfBudget(Budget::Memory));
            return false;
        }
        self.processed += 1;
        let (t, ev) = self.queue.pop_peeked().expect("peeked");
        self.prefetch_ahead();
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

    /// Asks for the memory of the deliveries [`PREFETCH_AHEAD`] and [`LAND_AHEAD`] events on,
    /// when those are due at the current time (a round of a collective: the queue holds them
    /// in order): the receiver's slot, the recorder's state of that rank and the chunk first,
    /// then where the chunk lands in the receiver's buffer and the chunk's own data.
    #[inline(always)]
    fn prefetch_ahead(&self) {
        if let Some(Ev::Deliver(f)) = self.queue.ahead(PREFETCH_AHEAD) {
            if let Some(slot) = self.slots.get(f.to as usize) {
                prefetch(slot);
            }
            if let crate::proto::Msg::Coll(m) = &f.msg {
                prefetch(&**m);
            }
            self.rec.prefetch(f.to);
        }
        if let Some(Ev::Deliver(f)) = self.queue.ahead(LAND_AHEAD) {
            if let crate::proto::Msg::Coll(m) = &f.msg {
                prefetch_addr(m.data.element_addr(0));
                let proc = self.slots.get(f.to as usize).and_then(|s| s.proc.as_ref());
                if let Some(at) = proc.and_then(|p| p.landing(m)) {
                    prefetch_addr(at);
                }
            }
        }
    }

    #[inline(always)]
    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Start(r) => self.start(r),
            Ev::Deliver(f) => self.deliver(f),
            Ev::Resend(f) => self.resend(f),
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
            Ev::SendDone { rank, inc, token } => {
                let live = self.incarnations[rank as usize] == inc;
                let slot = &self.slots[rank as usize];
                if !live || slot.proc.is_none() {
                    return;
                }
                if slot.paused || self.now < slot.cpu_free || slot.held > 0 {
                    self.defer(rank, Ev::SendDone { rank, inc, token });
                    return;
                }
                self.input(rank, Input::SendDone(token));
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
            Ev::Restart(r) => self.restart(r),
            Ev::App { rank, input } => self.app_input(rank, input),
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
        // a step reported last is handed over after the outputs before it
        if out.out.len() == 1 && matches!(out.out[0], Output::Send { .. }) {
            // the usual answer to a chunk: the next chunk to send (then, while recording, the
            // step it belongs to), its fields taken one by one (a copy of the whole output
            // would read back, as one word, two fields that were just written apart, and stall)
            if let Some(Output::Send {
                to,
                msg,
                bytes,
                reliable,
            }) = out.out.pop()
            {
                // a send only queues its delivery: the outbox is untouched
                self.send(rank, to, msg, bytes, reliable);
            }
            // the step is read where it lies, not moved out first
            if self.record {
                if let Some(s) = self.out.last_step() {
                    self.stats.events += 1;
                    self.rec.step(self.now, rank, s);
                }
            }
            self.out.clear_step();
        } else {
            // carrying out outputs may hand another rank an input: it gets an empty outbox
            let step = out.take_step();
            let mut outs = std::mem::take(&mut self.out.out);
            self.apply(rank, outs.drain(..).chain(step.map(Output::Step)));
            self.out.out = outs;
        }
        if self.elastic.is_some() {
            self.recount(rank);
        }
        if self.app.is_some() {
            self.poll_app(rank);
        }
    }

    #[inline]
    fn apply(&mut self, rank: u32, mut outs: impl Iterator<Item = Output>) {
        // the last send carried out: (to, bytes, when it departed), for `NotifySent`
        let mut last = (0, 0, 0);
        while let Some(o) = outs.next() {
            match o {
                Output::Send {
                    to,
                    msg,
                    bytes,
                    reliable,
                } => last = (to.0, bytes, self.send(rank, to, msg, bytes, reliable)),
                Output::NotifySent { token } => {
                    let (to, bytes, depart) = last;
                    let at = self.net.sent_at(depart, rank, to, bytes);
                    let inc = self.incarnations[rank as usize];
                    self.push(at.max(self.now), Ev::SendDone { rank, inc, token });
                }
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
                    self.push(later(self.now, d), Ev::ComputeDone { rank, token });
                }
                Output::Work { bytes } => {
                    if let Some(bw) = self.reduce_bw {
                        let d = bw.transfer_ns(bytes);
                        if d > 0 {
                            let rest: Vec<Output> = outs.collect();
                            let slot = &mut self.slots[rank as usize];
                            let at = later(self.now.max(slot.cpu_free), d);
                            slot.cpu_free = at;
                            slot.held += 1;
                            self.unfinish(rank);
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
                // nothing for the observer to follow: only its trace event
                Output::Step(s) => {
                    if self.record {
                        self.emit_step(rank, s);
                    }
                }
            }
        }
    }
}

/// What this engine implements; scenarios asking for more are rejected with
/// "not supported yet: <key>" instead of being silently ignored.
pub const SUPPORT: crate::scenario::Support = crate::scenario::Support {
    algorithm: crate::proto::collective::supported,
    ..crate::scenario::Support::ALL
};
