//! The workload under elastic membership: suspending it for a rendezvous, and resuming it in a
//! new generation with a process group of exactly that generation's members.

use super::{Phase, RankProcess};
use crate::collective::Members;
use crate::elastic::{self, Decision, ElasticMsg, Progress};
use crate::event::{AbortReason, Outbox};
use crate::group::ProcessGroup;
use crate::time::{fmt_time, Nanos};
use crate::types::{Generation, GroupId, Rank, TimerKey};
use crate::wait::WaitState;
use std::sync::Arc;

/// Where a rank stands in its elastic group (for drivers that decide when a run is over).
#[derive(Clone, Copy, Debug)]
pub struct MemberView<'a> {
    pub phase: elastic::Phase,
    /// The generation the rank is in (outside the group: the last it heard of).
    pub generation: Generation,
    /// That generation's members.
    pub members: &'a Arc<Members>,
    /// The rank's workload is finished.
    pub done: bool,
}

impl RankProcess {
    /// The rank's elastic membership, if the group is elastic.
    pub fn membership(&self) -> Option<MemberView<'_>> {
        let e = self.elastic.as_ref()?;
        Some(MemberView {
            phase: e.phase(),
            generation: e.generation(),
            members: e.members(),
            done: self.progress().done,
        })
    }

    /// The registry node of this process, if the scenario has a registry workload.
    pub fn registry(&self) -> Option<&crate::registry::Registry> {
        self.registry.as_deref()
    }

    fn progress(&self) -> Progress {
        Progress {
            completed: self.iteration.min(self.cfg.iterations),
            done: self.iteration >= self.cfg.iterations,
        }
    }

    pub(super) fn start_elastic(&mut self, now: Nanos, out: &mut Outbox) {
        let Some(e) = self.elastic.as_mut() else {
            return;
        };
        match e.start(now, out) {
            Decision::None => self.begin_iteration(now, 0, out),
            d => self.decide(now, d, out),
        }
    }

    pub(super) fn on_elastic_message(
        &mut self,
        now: Nanos,
        from: Rank,
        m: ElasticMsg,
        out: &mut Outbox,
    ) {
        let progress = self.progress();
        let Some(e) = self.elastic.as_mut() else {
            return;
        };
        let d = e.on_message(now, from, m, progress, out);
        self.decide(now, d, out);
    }

    pub(super) fn on_elastic_timer(&mut self, now: Nanos, key: TimerKey, out: &mut Outbox) {
        let progress = self.progress();
        let Some(e) = self.elastic.as_mut() else {
            return;
        };
        let d = e.on_timer(now, key, progress, out);
        self.decide(now, d, out);
    }

    /// The watchdog aborted the call that waited in `waited`: rebuild instead of dying.
    pub(super) fn on_elastic_watchdog(
        &mut self,
        now: Nanos,
        waited: Option<WaitState>,
        out: &mut Outbox,
    ) {
        let progress = self.progress();
        let reason = match waited {
            Some(ws) => format!(
                "watchdog: {} #{} did not complete within {}",
                ws.op,
                ws.seq,
                fmt_time(self.cfg.timeout)
            ),
            None => "watchdog fired".to_string(),
        };
        let Some(e) = self.elastic.as_mut() else {
            return;
        };
        let d = e.on_watchdog(now, &reason, progress, out);
        self.phase = Phase::Suspended;
        self.decide(now, d, out);
    }

    fn decide(&mut self, now: Nanos, d: Decision, out: &mut Outbox) {
        match d {
            Decision::None => {}
            Decision::Suspend { reason } => {
                if self.world.is_busy() {
                    self.world.abort(now, reason, out);
                }
                self.phase = Phase::Suspended;
            }
            Decision::Install {
                generation,
                proposal,
            } => {
                if self.world.is_busy() {
                    let why = format!("generation {} formed", generation.0);
                    self.world
                        .abort(now, AbortReason::MembershipChange(why), out);
                }
                let mut g = ProcessGroup::shared(
                    GroupId(0),
                    generation,
                    proposal.members.clone(),
                    self.me,
                    self.cfg.timeout,
                );
                g.set_step_events(self.cfg.step_events);
                g.set_seed(self.cfg.seed);
                g.plant(self.cfg.mutations);
                self.world = g;
                // what peers that got here first already sent
                self.later.retain(|(_, m)| m.fp.generation >= generation);
                let (now_due, still_later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.later)
                    .into_iter()
                    .partition(|(_, m)| m.fp.generation == generation);
                self.later = still_later;
                for (from, m) in now_due {
                    let _ = self.world.on_message(now, from, m, out); // no call yet: kept
                }
                self.begin_iteration(now, proposal.resume, out);
            }
        }
    }
}
