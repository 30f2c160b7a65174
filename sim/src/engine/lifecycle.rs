//! Processes starting, dying, restarting and pausing, and the scenario's faults that make them:
//! a fault begins or ends as a queued event, and acts on processes (preempt, pause) or on the
//! links and compute of the fault set (partition, delay, loss, slow). When a watchdog tears the
//! job down, every other live rank dumps its flight recorder.

use super::faults::{describe_fault, touched_ranks};
use super::{Engine, Ev};
use crate::proto::{Input, Rank, RankProcess};
use crate::scenario::Fault;
use crate::trace::{Event, FaultPhase, Recorder};
use crate::units::{later, Nanos};

impl<R: Recorder + ?Sized> Engine<'_, R> {
    /// A process starts (at time 0; a store node too).
    pub(super) fn start(&mut self, r: u32) {
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

    /// A preempted process restarts: a fresh process with the next incarnation.
    pub(super) fn restart(&mut self, r: u32) {
        self.pending_faults -= 1;
        self.maybe_finished = true;
        self.unfinish(r);
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

    /// Queues the begin of fault `i` at `at`, and its end when it has a duration.
    pub(super) fn schedule_fault(&mut self, i: usize, at: Nanos) {
        self.pending_faults += 1;
        self.push(at, Ev::FaultBegin(i));
        if let Some(d) = self.faults.fault(i).duration() {
            self.pending_faults += 1;
            self.push(later(at, d.0), Ev::FaultEnd(i));
        }
    }

    /// `rank` issues a communication call: a fault triggered at that call (`at_call`) begins
    /// now, once the call has reached the protocol code.
    pub(super) fn count_call(&mut self, rank: u32) {
        let Some(n) = self.calls.get_mut(rank as usize) else {
            return;
        };
        *n += 1;
        let n = *n;
        let due: Vec<usize> = self
            .call_faults
            .iter()
            .filter(|&&(r, k, _)| r == rank && k == n)
            .map(|&(_, _, i)| i)
            .collect();
        for i in due {
            self.schedule_fault(i, self.now);
        }
    }

    /// The scenario's fault `i` begins or ends.
    pub(super) fn fault(&mut self, i: usize, phase: FaultPhase) {
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
                fault: f.kind(),
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
                        self.push(later(self.now, d.0), Ev::Restart(rank));
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

    /// `rank`'s process dies: its state is lost, its messages and timers with it.
    fn kill(&mut self, rank: u32) {
        let slot = &mut self.slots[rank as usize];
        if !slot.alive() {
            return;
        }
        slot.proc = None;
        slot.store = None;
        slot.paused = false;
        slot.parked.clear();
        slot.timers.clear();
        slot.compute_token = None;
        slot.held = 0;
        self.observer.forget(rank);
        self.app_killed(rank);
        let inc = self.incarnations[rank as usize];
        self.maybe_finished = true;
        self.unfinish(rank);
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

    /// The job is torn down after `fired`'s watchdog: as PyTorch's dump-on-timeout, every
    /// other live rank dumps its flight recorder too (a frozen or dead one cannot).
    pub(super) fn dump_flight_records(&mut self, fired: u32) {
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
}
