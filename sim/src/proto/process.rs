//! One rank's process: the workload loop driving its process group.

use super::data::Buffer;
use super::event::{Outbox, ProtoEvent};
use super::group::{CallOutcome, CallRequest, ProcessGroup};
use super::msg::Msg;
use super::types::{Generation, GroupId, Rank, TimerKey};
use super::wait::WaitState;
use super::workload::WorkloadConfig;
use crate::units::Nanos;
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NotStarted,
    Computing,
    InOp(u32),
    Hung,
    Done,
    Refused,
}

pub struct RankProcess {
    cfg: Arc<WorkloadConfig>,
    me: Rank,
    incarnation: u32,
    world: ProcessGroup,
    iteration: u32,
    phase: Phase,
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
        RankProcess {
            cfg,
            me,
            incarnation,
            world,
            iteration: 0,
            phase: Phase::NotStarted,
        }
    }

    pub fn rank(&self) -> Rank {
        self.me
    }

    pub fn status(&self) -> RankStatus {
        match self.phase {
            Phase::NotStarted => RankStatus::Idle,
            Phase::Computing => RankStatus::Computing {
                iteration: self.iteration,
            },
            Phase::InOp(_) => RankStatus::InCollective,
            Phase::Hung => RankStatus::Hung {
                iteration: self.iteration,
            },
            Phase::Done => RankStatus::Done,
            Phase::Refused => RankStatus::Refused,
        }
    }

    /// What the rank is blocked on, if it is inside a collective.
    pub fn wait_state(&self) -> Option<WaitState> {
        self.world.wait_state()
    }

    pub fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Start => {
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
                    self.next_op(now, 0, out);
                }
            }
            Input::Message { from, msg } => match msg {
                Msg::Coll(m) => {
                    if m.fp.group == self.world.id {
                        let o = self.world.on_message(now, from, m, out);
                        self.on_outcome(now, o, out);
                    }
                }
            },
            Input::Timer(key) => {
                if let TimerKey::Watchdog { group, seq } = key {
                    if group == self.world.id {
                        let o = self.world.on_watchdog(now, seq, out);
                        self.on_outcome(now, o, out);
                    }
                }
            }
        }
    }

    fn begin_iteration(&mut self, now: Nanos, iteration: u32, out: &mut Outbox) {
        self.iteration = iteration;
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
            self.next_op(now, 0, out);
        }
    }

    /// Issues call `index` of the current iteration, or moves to the next iteration.
    fn next_op(&mut self, now: Nanos, mut index: u32, out: &mut Outbox) {
        loop {
            if index as usize >= self.cfg.ops.len() {
                return self.begin_iteration(now, self.iteration + 1, out);
            }
            if self.cfg.skips(self.me.0, self.iteration, index) {
                index += 1;
                continue;
            }
            let call = self.cfg.call_for(self.me.0, self.iteration, index);
            let input = Buffer::input(
                call.dtype,
                call.reduce,
                self.cfg.elements as usize,
                self.cfg.seed,
                self.me.0,
                self.iteration,
                index,
            );
            self.phase = Phase::InOp(index);
            let req = CallRequest {
                iteration: self.iteration,
                index,
                op: call.op,
                algorithm: call.algorithm,
                bytes: call.bytes,
                dtype: call.dtype,
                root: call.root,
                reduce: call.reduce,
                elements: self.cfg.elements,
                input,
            };
            match self.world.call(now, req, out) {
                CallOutcome::Completed { .. } => index += 1,
                CallOutcome::Pending => return,
                CallOutcome::Aborted => {
                    self.phase = Phase::InOp(index);
                    return;
                }
            }
        }
    }

    fn on_outcome(&mut self, now: Nanos, o: CallOutcome, out: &mut Outbox) {
        match o {
            CallOutcome::Pending => {}
            CallOutcome::Completed { index, .. } => self.next_op(now, index + 1, out),
            CallOutcome::Aborted => {
                // a real job's watchdog tears the process down; the driver decides what follows
            }
        }
    }
}
