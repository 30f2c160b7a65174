//! A rank driven by a real application instead of the scenario's program: the calls arrive one
//! by one as inputs ([`Input::Group`](super::Input::Group), [`Input::Call`](super::Input::Call),
//! [`Input::Exit`](super::Input::Exit)), each with its real data, and their ends are polled
//! ([`RankProcess::poll_app`](super::RankProcess::poll_app)), as quinn-proto's `poll_*`.
//!
//! Within one group the calls start in the order the application issued them, as on a stream:
//! a collective once every earlier call of the group ended, a send or recv once no collective
//! runs, beside the other sends and recvs (several `isend`/`irecv` outstanding at once,
//! `batch_isend_irecv`); calls on different groups run side by side. A call whose watchdog
//! fires fails, and so does every call running or issued later on that group (as a real backend
//! aborts a communicator that timed out).

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

/// One group's calls: those running (one collective, or any number of sends and recvs) and
/// those queued behind them.
struct Lane {
    id: GroupId,
    /// (call index, whether it is a send or recv).
    running: Vec<(u32, bool)>,
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
                    running: Vec::new(),
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

    /// The next call of group `id` to start, if it can start now (see the module doc); a call
    /// on a group that failed, or that this rank is not a member of, ends at once.
    pub fn next(&mut self, id: GroupId, member: bool) -> Option<AppCall> {
        loop {
            let lane = self.lane(id);
            if !lane.can_start() {
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
                    lane.running.push((call.index, call.op.point_to_point()));
                    return Some(call);
                }
            }
        }
    }

    /// The groups with calls waiting to start.
    pub fn ready(&self) -> Vec<GroupId> {
        self.lanes
            .iter()
            .filter(|l| l.can_start())
            .map(|l| l.id)
            .collect()
    }

    /// The running call `index` of group `id` completed with `result`.
    pub fn completed(&mut self, id: GroupId, index: u32, result: Option<Buffer>) {
        let lane = self.lane(id);
        let Some(at) = lane.running.iter().position(|(i, _)| *i == index) else {
            return;
        };
        lane.running.remove(at);
        self.done.push_back(AppDone {
            index,
            outcome: AppOutcome::Completed(result),
        });
    }

    /// A running call of group `id` was aborted: it fails, and so does every other call running
    /// or issued later on the group.
    pub fn aborted(&mut self, id: GroupId, reason: AbortReason) {
        let lane = self.lane(id);
        lane.failed = Some(reason.clone());
        for (index, _) in std::mem::take(&mut lane.running) {
            self.done.push_back(AppDone {
                index,
                outcome: AppOutcome::Failed(reason.clone()),
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
            .any(|l| !l.running.is_empty() || !l.queued.is_empty())
    }
}

impl Lane {
    /// Whether the first queued call can start: a collective when nothing runs, a send or recv
    /// when no collective does.
    fn can_start(&self) -> bool {
        match self.queued.front() {
            None => false,
            Some(c) if c.op.point_to_point() => self.running.iter().all(|(_, p2p)| *p2p),
            Some(_) => self.running.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(index: u32, op: OpKind) -> AppCall {
        AppCall {
            index,
            group: GroupId(0),
            op,
            algorithm: op.default_algorithm(),
            bytes: 4,
            dtype: Dtype::F32,
            reduce: ReduceOp::Sum,
            root: 0,
            elements: 1,
            peer: op.point_to_point().then_some(1),
            input: Buffer::empty(Dtype::F32),
        }
    }

    /// The calls `app` starts now, by index.
    fn started(app: &mut App) -> Vec<u32> {
        std::iter::from_fn(|| app.next(GroupId(0), true))
            .map(|c| c.index)
            .collect()
    }

    #[test]
    fn sends_and_recvs_run_beside_each_other_and_a_collective_alone() {
        let mut app = App::default();
        for (i, op) in [
            OpKind::Recv,
            OpKind::Recv,
            OpKind::Send,
            OpKind::Allreduce,
            OpKind::Send,
        ]
        .into_iter()
        .enumerate()
        {
            app.enqueue(call(i as u32 + 1, op));
        }
        // the recvs and the send start together; the allreduce waits for them, and the send
        // issued after it waits for it
        assert_eq!(started(&mut app), [1, 2, 3]);
        app.completed(GroupId(0), 3, None);
        app.completed(GroupId(0), 1, None);
        assert_eq!(started(&mut app), Vec::<u32>::new());
        app.completed(GroupId(0), 2, None);
        assert_eq!(started(&mut app), [4]);
        app.completed(GroupId(0), 4, None);
        assert_eq!(started(&mut app), [5]);
        let done: Vec<u32> = std::iter::from_fn(|| app.poll()).map(|d| d.index).collect();
        assert_eq!(done, [3, 1, 2, 4]);
    }

    #[test]
    fn an_abort_fails_every_running_call_of_the_group_and_the_later_ones() {
        let mut app = App::default();
        for i in 1..=3 {
            app.enqueue(call(
                i,
                if i == 3 {
                    OpKind::Barrier
                } else {
                    OpKind::Recv
                },
            ));
        }
        assert_eq!(started(&mut app), [1, 2]);
        app.aborted(GroupId(0), AbortReason::NoGroup(0));
        assert_eq!(started(&mut app), Vec::<u32>::new());
        let failed: Vec<u32> = std::iter::from_fn(|| app.poll())
            .filter(|d| matches!(d.outcome, AppOutcome::Failed(_)))
            .map(|d| d.index)
            .collect();
        assert_eq!(failed, [1, 2, 3]);
        assert!(!app.busy());
    }
}
