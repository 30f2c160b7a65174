//! One rank's process: the workload loop running the rank's program on its process groups (the
//! world, and its sub-group of every group layout it is in), with elastic membership and the
//! registry when the scenario asks for them (see `process/membership.rs`).

mod app;
mod membership;

pub use app::{AppCall, AppDone, AppGroup, AppOutcome};
pub use membership::MemberView;

use super::collective::{self, hierarchical::local_size};
use super::data::Buffer;
use super::elastic::Elastic;
use super::event::{AbortReason, Outbox, ProtoEvent};
use super::group::{CallOutcome, CallRequest, ProcessGroup};
use super::msg::Msg;
use super::registry::Registry;
use super::types::SendToken;
use super::types::{Generation, GroupId, Rank, SeqNo, TimerKey};
use super::wait::WaitState;
use super::workload::{Along, Step, WorkloadConfig};
use crate::time::Nanos;
use std::sync::Arc;

pub use super::workload::WorkloadConfig as ProcConfig;

/// Something for a rank's process to handle.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// The process starts (first start, or a restart after a preemption).
    Start,
    Message {
        from: Rank,
        msg: Msg,
    },
    Timer(TimerKey),
    /// The compute phase asked for with `Output::Compute` is over.
    ComputeDone,
    /// The bytes of the send that `Output::NotifySent` named have left this rank.
    SendDone(SendToken),
    /// An application-driven rank (see `process/app.rs`) built a group.
    Group(AppGroup),
    /// An application-driven rank issues a call.
    Call(Box<AppCall>),
    /// The application ended.
    Exit,
}

/// What a rank is doing, as far as its own code knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RankStatus {
    Idle,
    Computing {
        iteration: u32,
    },
    InCollective,
    /// Stuck outside collectives (an application hang).
    Hung {
        iteration: u32,
    },
    /// Finished every iteration.
    Done,
    /// A restarted process that could not rejoin.
    Refused,
    /// Elastic: out of the workload while the group is rebuilt, or outside the group.
    Rebuilding,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NotStarted,
    /// Computing before step `pc` of the program.
    Computing,
    /// In the call of step `pc` of the program.
    InOp,
    Hung,
    Done,
    Refused,
    /// Elastic: stopped for a rendezvous, or outside the group.
    Suspended,
}

/// Laid out in declaration order: what a collective chunk touches first (see
/// [`super::collective::Collective`]).
#[repr(C)]
pub struct RankProcess {
    /// Boxed, like the registry: rarely used, and kept out of the way of the state every
    /// collective message touches.
    elastic: Option<Box<Elastic>>,
    world: ProcessGroup,
    phase: Phase,
    iteration: u32,
    me: Rank,
    incarnation: u32,
    /// The step of the program the rank is at (computing before it, or in its call).
    pc: u32,
    cfg: Arc<WorkloadConfig>,
    /// This rank's sub-group of each group layout (mesh dimensions, named groups), in layout
    /// order; None for a layout it is in no sub-group of.
    layouts: Vec<Option<ProcessGroup>>,
    registry: Option<Box<Registry>>,
    /// Elastic: collective messages of a later generation than this rank's, kept until it
    /// installs that generation (its peers may get there first).
    later: Vec<(Rank, Box<super::msg::CollMsg>)>,
    /// The application's calls, when a real application drives the rank.
    app: Option<Box<app::App>>,
    /// The node of the program's own that runs instead of the workload
    /// ([`crate::node`]), when the scenario names one.
    node: Option<Box<crate::node::Hosted>>,
}

impl RankProcess {
    /// A fresh process of `me`; `incarnation` counts restarts (0 = first start).
    pub fn new(cfg: Arc<WorkloadConfig>, me: Rank, incarnation: u32) -> RankProcess {
        let mut world = ProcessGroup::shared(
            GroupId(0),
            Generation(0),
            cfg.world_members.clone(),
            me,
            cfg.timeout,
        );
        world.set_step_events(cfg.step_events);
        world.set_per_host(cfg.world_per_host);
        world.set_seed(cfg.seed);
        let layouts = layout_groups(&cfg, me);
        world.plant(cfg.mutations);
        let elastic = cfg.elastic.as_ref().map(|e| {
            Box::new(Elastic::new(
                e.clone(),
                me,
                incarnation,
                cfg.world_members.clone(),
                cfg.mutations,
            ))
        });
        let registry = cfg
            .registry
            .as_ref()
            .map(|r| Box::new(Registry::new(r.clone(), me, incarnation, cfg.mutations)));
        let node = cfg.node.map(|kind| {
            let ctx = crate::node::NodeCtx {
                me,
                world: cfg.world_size,
                incarnation,
                seed: cfg.seed,
            };
            Box::new(crate::node::Hosted {
                node: kind.factory().build(&ctx),
                reported: None,
                done: false,
            })
        });
        RankProcess {
            cfg,
            me,
            incarnation,
            world,
            layouts,
            iteration: 0,
            pc: 0,
            phase: Phase::NotStarted,
            elastic,
            registry,
            later: Vec::new(),
            app: None,
            node,
        }
    }

    /// Whether a real application drives this rank (its calls arrive as [`Input::Call`]).
    pub fn app_driven(&self) -> bool {
        self.cfg.app_driven
    }

    /// The next call of the application that ended, if any.
    pub fn poll_app(&mut self) -> Option<AppDone> {
        self.app.as_mut()?.poll()
    }

    pub fn rank(&self) -> Rank {
        self.me
    }

    pub fn status(&self) -> RankStatus {
        let status = match self.phase {
            Phase::NotStarted => RankStatus::Idle,
            Phase::Computing => RankStatus::Computing {
                iteration: self.iteration,
            },
            Phase::InOp => RankStatus::InCollective,
            Phase::Hung => RankStatus::Hung {
                iteration: self.iteration,
            },
            Phase::Done => RankStatus::Done,
            Phase::Refused => RankStatus::Refused,
            Phase::Suspended => RankStatus::Rebuilding,
        };
        let registry_busy = self.registry.as_ref().is_some_and(|r| !r.finished());
        match status {
            // registry steps still to run keep the process going
            RankStatus::Done | RankStatus::Refused if registry_busy => RankStatus::Idle,
            s => s,
        }
    }

    /// The flight recorder of the rank's world group, oldest first.
    pub fn flight_record(&self) -> Vec<super::event::FlightEntry> {
        self.world.flight_record()
    }

    /// Hands `input` to the node this process hosts, and reports what changed of its wait
    /// and whether it finished.
    #[cold]
    fn on_node_input(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let Some(h) = self.node.as_mut() else {
            return;
        };
        if matches!(input, Input::Start) {
            self.phase = Phase::Computing;
        }
        if h.done {
            return;
        }
        h.node.handle(now, input, out);
        let waiting = h.node.wait_state();
        if waiting != h.reported {
            let (on, waiting_for) = waiting
                .clone()
                .map_or((String::new(), Vec::new()), |w| (w.on, w.waiting_for));
            out.event(ProtoEvent::NodeWait { on, waiting_for });
            h.reported = waiting;
        }
        if h.node.finished() {
            h.done = true;
            self.phase = Phase::Done;
            out.event(ProtoEvent::WorkloadDone);
        }
    }

    /// What the rank waits for, as any node says it ([`crate::node::Node::wait_state`]): its
    /// call's step, its elastic group's rendezvous, or the wait of the node it hosts.
    pub(crate) fn waiting(&self) -> Option<crate::node::Waiting> {
        if let Some(h) = &self.node {
            return h.node.wait_state();
        }
        if let Some(w) = self.call_wait_state() {
            let on = match w.peer {
                Some(peer) => format!("{} #{} with {peer}", w.op, w.seq),
                None => format!(
                    "{} #{} ({}), step {}/{}",
                    w.op,
                    w.seq,
                    w.algorithm,
                    w.step + 1,
                    w.steps
                ),
            };
            return Some(crate::node::Waiting {
                on,
                waiting_for: w.waiting_for,
            });
        }
        let (target, waiting_for) = self.elastic.as_ref()?.waiting()?;
        Some(crate::node::Waiting {
            on: format!("rendezvous for generation {}", target.0),
            waiting_for,
        })
    }

    /// What the rank is blocked on, if it is inside a call (its wait as a node,
    /// [`crate::node::Node::wait_state`], also says what it waits for outside calls).
    pub fn call_wait_state(&self) -> Option<WaitState> {
        let app = self.app.iter().flat_map(|a| a.groups.iter());
        self.world.wait_state().or_else(|| {
            self.layouts
                .iter()
                .flatten()
                .chain(app)
                .find_map(|g| g.wait_state())
        })
    }

    /// Where the chunk `m`, on its way to this rank, will be reduced or copied into when it
    /// arrives, if the running call's step receives one run of elements: the address of the
    /// first. A driver that sees the chunk coming asks for that memory early (a cache hint);
    /// nothing is read or written through it, and asking changes no state.
    #[inline(always)]
    pub fn landing(&self, m: &super::msg::CollMsg) -> Option<*const u8> {
        self.group(m.fp.group)?.landing(m)
    }

    /// The group `id` of this rank, as [`RankProcess::group_mut`].
    #[inline]
    fn group(&self, id: GroupId) -> Option<&ProcessGroup> {
        if id == self.world.id {
            return Some(&self.world);
        }
        match &self.app {
            Some(app) => app.group(id),
            None => self.layouts.iter().flatten().find(|g| g.id == id),
        }
    }

    /// The group `id` of this rank: the world or its sub-group of a layout.
    #[inline]
    fn group_mut(&mut self, id: GroupId) -> Option<&mut ProcessGroup> {
        if id == self.world.id {
            return Some(&mut self.world);
        }
        match &mut self.app {
            Some(app) => app.group_mut(id),
            None => self.layouts.iter_mut().flatten().find(|g| g.id == id),
        }
    }

    #[inline(always)]
    pub fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            // a collective chunk, most of what a rank is handed: kept apart from the rest so
            // that a driver can inline it
            Input::Message {
                from,
                msg: Msg::Coll(m),
            } => self.on_chunk(now, from, m, out),
            input => self.handle_other(now, input, out),
        }
    }

    #[inline(always)]
    fn on_chunk(&mut self, now: Nanos, from: Rank, m: Box<super::msg::CollMsg>, out: &mut Outbox) {
        let m_group = m.fp.group;
        if self.elastic.is_some() && m.fp.generation > self.world.generation {
            self.later.push((from, m));
        } else if let Some(g) = self.group_mut(m.fp.group) {
            let o = g.on_message(now, from, m, out);
            let group = m_group;
            self.on_outcome(now, group, o, out);
        }
    }

    #[inline(never)]
    fn handle_other(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        if self.node.is_some() {
            return self.on_node_input(now, input, out);
        }
        match input {
            Input::Start if self.cfg.app_driven => {
                self.app = Some(Box::default());
                self.phase = Phase::Computing;
            }
            Input::Group(g) => {
                let (me, events, seed) = (self.me, self.cfg.step_events, self.cfg.seed);
                if let Some(app) = self.app.as_mut() {
                    app.add_group(g, me, events, seed);
                }
            }
            Input::Call(call) => {
                let group = call.group;
                if let Some(app) = self.app.as_mut() {
                    app.enqueue(*call);
                    self.app_run(now, group, out);
                }
            }
            Input::Exit => {
                if let Some(app) = self.app.as_mut() {
                    app.exited = true;
                    self.phase = Phase::Done;
                    out.event(ProtoEvent::WorkloadDone);
                }
            }
            Input::Start => {
                if let Some(r) = self.registry.as_mut() {
                    r.start(now, out);
                }
                if self.elastic.is_some() {
                    return self.start_elastic(now, out);
                }
                if self.incarnation > 0 {
                    self.phase = Phase::Refused;
                    out.event(ProtoEvent::RejoinRefused {
                        reason: "the group is not elastic: a restarted process cannot rejoin \
                                 generation 0 (set [group] elastic to rebuild around it)"
                            .into(),
                    });
                    return;
                }
                self.begin_iteration(now, 0, out);
            }
            Input::ComputeDone => {
                if self.phase == Phase::Computing {
                    self.run(now, self.pc, out);
                }
            }
            Input::SendDone(token) => {
                if let Some(g) = self.group_mut(token.group) {
                    let o = g.on_sent(token, out);
                    self.on_outcome(now, token.group, o, out);
                }
            }
            Input::Message { from, msg } => match msg {
                Msg::Coll(m) => self.on_chunk(now, from, m, out),
                Msg::P2p(m) => {
                    let group = m.group;
                    if let Some(g) = self.group_mut(group) {
                        let o = g.on_p2p(from, m, out);
                        self.on_outcome(now, group, o, out);
                    }
                }
                Msg::Elastic(m) => self.on_elastic_message(now, from, *m, out),
                Msg::Registry(m) => {
                    if let Some(r) = self.registry.as_mut() {
                        r.on_message(now, from, *m, out);
                    }
                }
                // a node's message reaching a rank that hosts none (a mixed-up sender)
                Msg::Node(_) => {}
            },
            Input::Timer(key) => match key {
                TimerKey::Watchdog { group, seq } if self.app.is_some() => {
                    self.app_watchdog(now, group, |g, out| g.on_watchdog(now, seq, out), out)
                }
                TimerKey::PeerWatchdog { group, peer, order } if self.app.is_some() => self
                    .app_watchdog(
                        now,
                        group,
                        |g, out| g.on_p2p_watchdog(now, peer, order, out),
                        out,
                    ),
                TimerKey::Watchdog { group, seq } => {
                    if group == self.world.id {
                        let waited = self.world.wait_state();
                        let o = self.world.on_watchdog(now, seq, out);
                        if o == CallOutcome::Aborted && self.elastic.is_some() {
                            self.on_elastic_watchdog(now, waited, out);
                        } else {
                            self.on_outcome(now, group, o, out);
                        }
                    } else if let Some(g) = self.group_mut(group) {
                        let o = g.on_watchdog(now, seq, out);
                        self.on_outcome(now, group, o, out);
                    }
                }
                TimerKey::PeerWatchdog { group, peer, order } => {
                    if let Some(g) = self.group_mut(group) {
                        let o = g.on_p2p_watchdog(now, peer, order, out);
                        self.on_outcome(now, group, o, out);
                    }
                }
                TimerKey::Heartbeat | TimerKey::Rendezvous { .. } => {
                    self.on_elastic_timer(now, key, out)
                }
                TimerKey::Registry { .. } | TimerKey::RegistryHeartbeat => {
                    if let Some(r) = self.registry.as_mut() {
                        r.on_timer(now, key, out);
                    }
                }
                // set only by a hosted node, whose inputs go to it
                TimerKey::Node { .. } => {}
            },
        }
    }

    fn begin_iteration(&mut self, now: Nanos, iteration: u32, out: &mut Outbox) {
        self.iteration = iteration;
        self.pc = 0;
        if iteration >= self.cfg.iterations {
            self.phase = Phase::Done;
            out.event(ProtoEvent::WorkloadDone);
            return;
        }
        if self.cfg.hangs(self.me.0, iteration) {
            self.phase = Phase::Hung;
            return;
        }
        out.event(ProtoEvent::Iteration { iteration });
        if self.cfg.compute > 0 {
            self.phase = Phase::Computing;
            out.compute(self.cfg.compute);
        } else {
            self.run(now, 0, out);
        }
    }

    /// Runs the program from step `pc` of the current iteration until a step has to wait (a
    /// compute phase, a call in progress), or moves to the next iteration.
    fn run(&mut self, now: Nanos, mut pc: u32, out: &mut Outbox) {
        let cfg = self.cfg.clone();
        let steps = &cfg.program(self.me.0).steps;
        loop {
            self.pc = pc;
            let Some(step) = steps.get(pc as usize) else {
                return self.begin_iteration(now, self.iteration + 1, out);
            };
            pc += 1;
            let (index, declared) = match step {
                Step::Compute(d) => {
                    self.phase = Phase::Computing;
                    self.pc = pc;
                    out.compute(*d);
                    return;
                }
                Step::Call { index, call } => (*index, call),
            };
            if cfg.skips(self.me.0, self.iteration, index) {
                continue;
            }
            let call = cfg.with_bugs(self.me.0, self.iteration, index, declared);
            let group = match call.along {
                Along::World => &mut self.world,
                Along::Layout(l) => match self.layouts.get_mut(l as usize) {
                    Some(Some(g)) => g,
                    // not in any sub-group of that group: the op is not for this rank
                    Some(None) => continue,
                    None => {
                        // validated scenarios never get here
                        out.event(ProtoEvent::Abort {
                            group: GroupId(0),
                            generation: Generation(0),
                            seq: SeqNo(0),
                            step: 0,
                            steps: 0,
                            waiting_for: Vec::new(),
                            reason: AbortReason::NoGroup(l),
                        });
                        return;
                    }
                },
            };
            let ctx = group.ctx(call.root);
            let peer = match call.peer {
                Some(peer) if call.op.point_to_point() => match peer.resolve(ctx.me, ctx.p) {
                    Some(r) => Some(r),
                    // no such neighbour (the first or last stage): nothing to send or receive
                    None => continue,
                },
                _ => None,
            };
            self.phase = Phase::InOp;
            let len = collective::input_len(call.op, ctx, cfg.elements);
            let input = if call.op.point_to_point() {
                Buffer::empty(call.dtype)
            } else {
                let (seed, iteration, at) = cfg.input_key(
                    self.iteration,
                    index,
                    group.id,
                    group.generation,
                    group.next_seq(),
                );
                Buffer::input(call.dtype, call.reduce, len, seed, self.me.0, iteration, at)
            };
            let req = CallRequest {
                iteration: self.iteration,
                index,
                op: call.op,
                algorithm: call.algorithm,
                bytes: call.bytes,
                dtype: call.dtype,
                root: call.root,
                reduce: call.reduce,
                elements: cfg.elements,
                input,
                peer,
            };
            match group.call(now, req, out) {
                CallOutcome::Completed { .. } => {}
                CallOutcome::Pending | CallOutcome::Aborted => return,
            }
        }
    }

    #[inline]
    fn on_outcome(&mut self, now: Nanos, group: GroupId, o: CallOutcome, out: &mut Outbox) {
        if self.app.is_some() {
            return self.app_outcome(now, group, o, out);
        }
        match o {
            CallOutcome::Pending => {}
            CallOutcome::Completed { .. } => self.run(now, self.pc + 1, out),
            CallOutcome::Aborted => {
                // a real job's watchdog tears the process down; the driver decides what follows
            }
        }
    }
}

impl RankProcess {
    /// Starts the calls of group `id` that can start, in order, until one has to wait.
    fn app_run(&mut self, now: Nanos, id: GroupId, out: &mut Outbox) {
        loop {
            let member = self.group(id).is_some();
            let Some(call) = self.app.as_mut().and_then(|a| a.next(id, member)) else {
                break;
            };
            let Some(g) = self.group_mut(id) else {
                break;
            };
            let req = CallRequest {
                iteration: 0,
                index: call.index,
                op: call.op,
                algorithm: call.algorithm,
                bytes: call.bytes,
                dtype: call.dtype,
                root: call.root,
                reduce: call.reduce,
                elements: call.elements,
                input: call.input,
                peer: call.peer,
            };
            let o = g.call(now, req, out);
            // a call that runs on leaves the lane to the next, if it can start beside it
            self.app_settle(id, o);
        }
        self.app_status();
    }

    /// Takes the end of a call of group `id` in; true when the group's lane is free again.
    fn app_settle(&mut self, id: GroupId, o: CallOutcome) -> bool {
        let Some(app) = self.app.as_mut() else {
            return false;
        };
        match o {
            CallOutcome::Pending => false,
            CallOutcome::Completed { index, result, .. } => {
                app.completed(id, index, result);
                true
            }
            CallOutcome::Aborted => {
                app.aborted(id, AbortReason::OutsideGroup("the call was refused".into()));
                true
            }
        }
    }

    fn app_outcome(&mut self, now: Nanos, id: GroupId, o: CallOutcome, out: &mut Outbox) {
        if self.app_settle(id, o) {
            self.app_run(now, id, out);
        }
    }

    /// A watchdog of group `id` fired: `fire` hands it to the group; the running call fails.
    fn app_watchdog(
        &mut self,
        now: Nanos,
        id: GroupId,
        fire: impl FnOnce(&mut ProcessGroup, &mut Outbox) -> CallOutcome,
        out: &mut Outbox,
    ) {
        let Some(g) = self.group_mut(id) else {
            return;
        };
        let waited = g.wait_state();
        if fire(g, out) != CallOutcome::Aborted {
            return;
        }
        let reason = match waited {
            Some(ws) => AbortReason::Watchdog {
                op: ws.op,
                seq: ws.seq,
                waited: now.saturating_sub(ws.since_ns),
                step: ws.step,
                steps: ws.steps,
                waiting_for: ws.waiting_for,
            },
            None => AbortReason::OutsideGroup("the call was aborted".into()),
        };
        if let Some(app) = self.app.as_mut() {
            app.aborted(id, reason);
        }
        for g in self.app.as_ref().map(|a| a.ready()).unwrap_or_default() {
            self.app_run(now, g, out);
        }
        self.app_status();
    }

    /// In a call while any is running or queued; else running the application's own code.
    fn app_status(&mut self) {
        if let Some(app) = &self.app {
            if !app.exited {
                self.phase = if app.busy() {
                    Phase::InOp
                } else {
                    Phase::Computing
                };
            }
        }
    }
}

/// This rank's sub-group of each group layout of the configuration (None where it is in none).
fn layout_groups(cfg: &WorkloadConfig, me: Rank) -> Vec<Option<ProcessGroup>> {
    cfg.layouts
        .iter()
        .map(|l| {
            let sub = l.group_of(me)?;
            let per_host = local_size(&sub.members.ranks, cfg.ranks_per_host);
            let mut g =
                ProcessGroup::shared(sub.id, Generation(0), sub.members.clone(), me, cfg.timeout);
            g.set_step_events(cfg.step_events);
            g.set_per_host(per_host);
            g.set_seed(cfg.seed);
            g.plant(cfg.mutations);
            Some(g)
        })
        .collect()
}
