//! When a run is over, and how it ended.
//!
//! After every event the engine looks whether the run can stop: every rank finished (or is dead
//! for good, or refused); a watchdog fired without elastic membership (the job is torn down);
//! nothing is left to happen (an empty queue, resends that can never arrive, heartbeats of a
//! registry workload that cannot go on); the time limit passed. Elastic runs have rules of their
//! own (see `membership`). The ranks' protocol events reach these rules as [`Hint`]s of the
//! [`Observer`](crate::observe::Observer).

use super::Engine;
use super::Stats;
use crate::budget::Budget;
use crate::observe::Hint;
use crate::proto::{ProtoEvent, RankStatus};
use crate::scenario::Outcome;
use crate::trace::Recorder;
use crate::units::Nanos;

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
    /// A budget of the run ran out, or virtual time would run past its end.
    OutOfBudget(Budget),
}

impl StopReason {
    /// The budget that ended the run, when one did.
    pub fn budget(&self) -> Option<Budget> {
        match *self {
            StopReason::OutOfBudget(b) => Some(b),
            _ => None,
        }
    }
}

/// See [`StopReason::NoProgress`].
pub const NO_PROGRESS_ROUNDS: u64 = 4;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    pub outcome: Outcome,
    pub end_ns: Nanos,
    pub stop: StopReason,
    pub stats: Stats,
}

impl<R: Recorder + ?Sized> Engine<'_, R> {
    /// What the observer makes of `rank`'s protocol event: its trace event (when recording),
    /// and what it means for the end of the run.
    pub(super) fn proto_event(&mut self, rank: u32, pe: ProtoEvent) {
        // an application's call is counted as it is handed over (see `app_input`): one queued
        // behind another of its group reaches the protocol code later
        let counted = !self.call_faults.is_empty() && !self.cfg.app_driven;
        if counted && matches!(pe, ProtoEvent::Call { .. }) {
            self.count_call(rank);
        }
        let seen = self.observer.observe(rank, self.now, pe, self.record);
        if let Some(ev) = seen.event {
            self.emit(ev);
        }
        let hint = seen.hint;
        if hint.may_end() {
            self.maybe_finished = true;
        }
        match hint {
            // progress is a call completed further into the workload than any before: a group
            // that rebuilds and fails at the same call again does not progress
            Hint::Completed { iteration, index }
                if self.frontier.is_none_or(|f| (iteration, index) > f) =>
            {
                self.frontier = Some((iteration, index));
                self.progress_ns = self.now;
            }
            Hint::Aborted { watchdog } => {
                // an application's call fails instead, and its error handling runs; the run
                // did not go as it should, however it ends
                self.app_failed |= watchdog && self.cfg.app_driven;
                let torn_down = self.elastic.is_none() && !self.cfg.app_driven;
                if watchdog && self.stop.is_none() && torn_down {
                    // without elastic membership the watchdog tears the job down
                    self.stop = Some(StopReason::Watchdog { rank });
                }
                if self.no_progress && self.stop.is_none() {
                    self.stop = Some(StopReason::NoProgress);
                }
            }
            _ => {}
        }
    }

    /// A registry workload (no collectives, so no watchdog) that cannot go on: every live
    /// node ran all its registry steps, and some node hangs, so it will never be done.
    pub(super) fn registry_stuck(&self) -> bool {
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

    /// Whether every rank is finished: done, refused, or dead for good. The ranks below
    /// [`Engine::finished_below`] were finished when last looked at and are not looked at
    /// again: ranks mostly finish in rank order, and a scan from rank 0 at every rank's end
    /// made the end of a run quadratic in the ranks (4,096 ranks: 8 million slots read).
    pub(super) fn all_finished(&mut self) -> bool {
        if self.elastic.is_some() {
            return self.elastic_finished();
        }
        let slots = &self.slots[..self.ranks as usize];
        let from = (self.finished_below as usize).min(slots.len());
        let unfinished = slots[from..].iter().position(|s| match &s.proc {
            None => s.restart_pending,
            Some(p) => s.held > 0 || !matches!(p.status(), RankStatus::Done | RankStatus::Refused),
        });
        match unfinished {
            Some(i) => {
                self.finished_below = (from + i) as u32;
                false
            }
            None => {
                self.finished_below = self.ranks;
                true
            }
        }
    }

    /// `rank` may no longer be finished (it died, restarted, or holds outputs back): the
    /// next [`Engine::all_finished`] looks at it again.
    #[inline]
    pub(super) fn unfinish(&mut self, rank: u32) {
        self.finished_below = self.finished_below.min(rank);
    }

    /// The outcome so far (final once the run has stopped).
    pub fn result(&self) -> RunResult {
        let stop = self.stop.clone().unwrap_or(StopReason::Quiescent);
        // without collectives (a registry workload), a dead node's workload just stops
        let dead_ok = !self.cfg.has_calls() && !self.cfg.app_driven;
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
            StopReason::TimeLimit | StopReason::Interrupted | StopReason::OutOfBudget(_)
                if !all_done =>
            {
                Outcome::TimedOut
            }
            _ if all_done && self.latest_generation().0 > 0 => Outcome::Rebuilt,
            _ if all_done
                && !self.app_failed
                && !self.app.as_ref().is_some_and(|l| l.app.failed()) =>
            {
                Outcome::Completed
            }
            _ => Outcome::Stalled,
        };
        RunResult {
            outcome,
            end_ns: self.now,
            stop,
            stats: self.stats,
        }
    }
}
