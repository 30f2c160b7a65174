//! A rank driven by a real application instead of the scenario's program: the calls arrive one
//! by one as inputs ([`Input::Group`](super::Input::Group), [`Input::Call`](super::Input::Call),
//! [`Input::Exit`](super::Input::Exit)), each with its real data, and their ends are polled
//! ([`RankProcess::poll_app`](super::RankProcess::poll_app)), as quinn-proto's `poll_*`.
//!
//! Within one group the calls run one at a time, in the order the application issued them, as
//! on a stream; calls on different groups run side by side. A call whose watchdog fires fails,
//! and so does every later call on that group (as a real backend aborts a communicator that
//! timed out).

use crate::collective::Members;
use crate::data::Buffer;
use crate::event::AbortReason;
use crate::group::ProcessGroup;
use crate::time::Nanos;
use crate::types::{Generation, GroupId, Rank};
use crate::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
use std::collections::VecDeque;
use std::sync::Arc;

/// A call of the application, with its real input.
#[derive(Clone, Debug, PartialEq)]
pub struct AppCall {
    /// The rank's own number for the call (its k-th call: 1, 2, ...).
    pub index: u32,
    pub group: GroupId,
    pub op: OpKind,
    pub algorithm: Algorithm,
    /// Modeled size (drives timing).
    pub bytes: u64,
    pub dtype: Dtype,
    pub reduce: ReduceOp,
    /// Broadcast, reduce, gather, scatter: the root's group rank.
    pub root: u32,
    /// Real elements per piece (see `collective::input_len`).
    pub elements: u32,
    /// Send and recv: the other end's group rank.
    pub peer: Option<u32>,
    pub input: Buffer,
}

/// How an application's call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AppOutcome {
    /// Completed, with the rank's result (none for a barrier, a send, a non-root's reduce).
    Completed(Option<Buffer>),
    Failed(AbortReason),
}

/// The end of call `index`.
#[derive(Clone, Debug, PartialEq)]
pub struct AppDone {
    pub index: u32,
    pub outcome: AppOutcome,
}

/// A group the application built, with its own timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct AppGroup {
    pub id: GroupId,
    pub members: Arc<Members>,
    pub timeout: Nanos,
}

/// One group's calls: the running one and those queued behind it.
struct Lane {
    id: GroupId,
    running: Option<u32>,
    queued: VecDeque<AppCall>,
    /// The watchdog fired: every later call fails with this.
    failed: Option<AbortReason>,
}

/// What an application-driven rank keeps.
#[derive(Default)]
pub(super) struct App {
    /// Groups other than the world, in the order they were built.
    pub groups: Vec<ProcessGroup>,
    lanes: Vec<Lane>,
    done: VecDeque<AppDone>,
    pub exited: bool,
}

impl App {
    pub fn group(&self, id: GroupId) -> Option<&ProcessGroup> {
        self.groups.iter().find(|g| g.id == id)
    }

    pub fn group_mut(&mut self, id: GroupId) -> Option<&mut ProcessGroup> {
        self.groups.iter_mut().find(|g| g.id == id)
    }

    /// Builds group `g` for rank `me` (a rank outside it builds nothing).
    pub fn add_group(&mut self, g: AppGroup, me: Rank, step_events: bool, seed: u64) {
        if g.id == GroupId(0) || self.group(g.id).is_some() || g.members.index(me).is_none() {
            return;
        }
        let mut pg = ProcessGroup::shared(g.id, Generation(0), g.members, me, g.timeout);
        pg.set_step_events(step_events);
        pg.set_seed(seed);
        self.groups.push(pg);
    }

    fn lane(&mut self, id: GroupId) -> &mut Lane {
        let at = match self.lanes.iter().position(|l| l.id == id) {
            Some(at) => at,
            None => {
                self.lanes.push(Lane {
                    id,
                    running: None,
                    queued: VecDeque::new(),
                    failed: None,
                });
                self.lanes.len() - 1
            }
        };
        &mut self.lanes[at]
    }

    /// Queues `call` behind the calls of its group.
    pub fn enqueue(&mut self, call: AppCall) {
        self.lane(call.group).queued.push_back(call);
    }

    /// The next call of group `id` to start, if its lane is free; a call on a group that
    /// failed, or that this rank is not a member of, ends at once.
    pub fn next(&mut self, id: GroupId, member: bool) -> Option<AppCall> {
        loop {
            let lane = self.lane(id);
            if lane.running.is_some() {
                return None;
            }
            let call = lane.queued.pop_front()?;
            let failed = lane
                .failed
                .clone()
                .or_else(|| (!member).then_some(AbortReason::NoGroup(id.0)));
            match failed {
                Some(reason) => self.done.push_back(AppDone {
                    index: call.index,
                    outcome: AppOutcome::Failed(reason),
                }),
                None => {
                    lane.running = Some(call.index);
                    return Some(call);
                }
            }
        }
    }

    /// The groups with calls waiting to start.
    pub fn ready(&self) -> Vec<GroupId> {
        self.lanes
            .iter()
            .filter(|l| l.running.is_none() && !l.queued.is_empty())
            .map(|l| l.id)
            .collect()
    }

    /// The running call of group `id` completed with `result`.
    pub fn completed(&mut self, id: GroupId, result: Option<Buffer>) {
        if let Some(index) = self.lane(id).running.take() {
            self.done.push_back(AppDone {
                index,
                outcome: AppOutcome::Completed(result),
            });
        }
    }

    /// The running call of group `id` was aborted: it fails, and so does every later call.
    pub fn aborted(&mut self, id: GroupId, reason: AbortReason) {
        let lane = self.lane(id);
        lane.failed = Some(reason.clone());
        if let Some(index) = lane.running.take() {
            self.done.push_back(AppDone {
                index,
                outcome: AppOutcome::Failed(reason),
            });
        }
    }

    pub fn poll(&mut self) -> Option<AppDone> {
        self.done.pop_front()
    }

    /// Whether any call is running or queued.
    pub fn busy(&self) -> bool {
        self.lanes
            .iter()
            .any(|l| l.running.is_some() || !l.queued.is_empty())
    }
}
