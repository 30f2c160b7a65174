//! What the group's nodes report, and when a run is over.
//!
//! Every node hands the events of its protocol code to one [`Judge`] (madsim runs all nodes in
//! one process, so this is a shared value, as a test harness's checker would be). Through the
//! [`Observer`] every driver shares it checks results, follows the generations formed and hears
//! watchdogs; it keeps what the engine keeps for a report — each collective's callers,
//! completions and correctness — and decides, with the engine's own rules, when the run is over
//! and with which [`Outcome`]:
//! - every rank has finished (elastic: every live member of the latest generation);
//! - without elastic membership, a watchdog fired: the job is torn down;
//! - nothing made progress for a while once every fault is over (madsim has no global view of
//!   who can still do what, so "stuck" is "quiet for longer than any timeout");
//! - the time limit passed.

use crate::diagnose::fold::pair_of;
use crate::diagnose::Slot;
use crate::engine::membership::{standing, Standing};
use crate::observe::Observer;
use crate::proto::{Fingerprint, Generation, ProcConfig, ProtoEvent, RankProcess, RankStatus};
use crate::scenario::{OpKind, Outcome};
use crate::trace::Event;
use crate::units::Nanos;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One collective of a madsim run, as every rank that called it saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadsimOp {
    pub iteration: u32,
    pub index: u32,
    pub op: OpKind,
    pub group: u32,
    pub generation: u32,
    pub seq: u64,
    pub ranks_called: u32,
    pub ranks_completed: u32,
    /// Every completion equals the reference, and the ranks agree (the agreement and validity
    /// properties).
    pub correct: bool,
    /// Distinct non-empty result hashes, as traces print them (`{:016x}` of `Buffer::hash`).
    pub results: Vec<String>,
    /// The distinct calls the ranks made in this slot, first seen first (more than one: the
    /// ranks disagree on the call, an application bug).
    pub calls: Vec<MadsimCall>,
    /// A message: (sender, receiver); `seq` is its order between them.
    pub pair: Option<(u32, u32)>,
}

/// How one rank called a collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MadsimCall {
    pub iteration: u32,
    pub index: u32,
    pub fp: Fingerprint,
}

/// A generation formed during the run (after the first), as first reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadsimGeneration {
    pub generation: u32,
    pub members: Vec<u32>,
    /// Protocol time since the group started.
    pub formed_ns: Nanos,
}

/// Why a madsim run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadsimStop {
    AllFinished,
    Watchdog { rank: u32 },
    Quiet,
    TimeLimit,
}

/// The result of running a process group under madsim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadsimOutcome {
    pub outcome: Outcome,
    pub stop: MadsimStop,
    /// Protocol time since the group started when the run stopped.
    pub end_ns: Nanos,
    pub generations: Vec<MadsimGeneration>,
    /// Every collective called, in (group, generation, seq) order.
    pub ops: Vec<MadsimOp>,
    /// Live, running ranks whose last collective did not complete (it waits, or was aborted)
    /// when the run stopped: the ranks the engine's diagnosis calls blocked.
    pub blocked: Vec<u32>,
    /// Messages handed to the network.
    pub messages: u64,
}

#[derive(Clone, Debug, Default)]
struct RankView {
    alive: bool,
    incarnation: u32,
    status: Option<RankStatus>,
    standing: Standing,
    restart_pending: bool,
    paused: bool,
    /// The rank's last collective has not completed.
    pending: bool,
    /// The slot of the rank's last call.
    slot: Option<Slot>,
}

pub(super) struct Judge {
    cfg: Arc<ProcConfig>,
    /// Result checks, generations, watchdogs.
    observer: Observer,
    /// Ranks of the world, then the store when there is one.
    ranks: Vec<RankView>,
    world: usize,
    ops: BTreeMap<Slot, MadsimOp>,
    stop: Option<(MadsimStop, Nanos)>,
    last_progress: Nanos,
    messages: u64,
}

impl Judge {
    pub(super) fn new(cfg: Arc<ProcConfig>, seed: u64, world: usize, nodes: usize) -> Judge {
        Judge {
            observer: Observer::new(cfg.clone(), seed, nodes),
            cfg,
            ranks: vec![RankView::default(); nodes],
            world,
            ops: BTreeMap::new(),
            stop: None,
            last_progress: 0,
            messages: 0,
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.is_some()
    }

    pub(super) fn last_progress(&self) -> Nanos {
        self.last_progress
    }

    pub(super) fn sent(&mut self, n: u64) {
        self.messages += n;
    }

    /// Node `r` started its incarnation `incarnation`.
    pub(super) fn started(&mut self, r: usize, incarnation: u32) {
        let v = &mut self.ranks[r];
        *v = RankView {
            alive: true,
            incarnation,
            ..RankView::default()
        };
        self.observer.forget(r as u32);
    }

    /// Node `r` was killed; `restart` when a fresh process will start later.
    pub(super) fn died(&mut self, r: usize, restart: bool, now: Nanos) {
        let v = &mut self.ranks[r];
        let incarnation = v.incarnation;
        *v = RankView {
            incarnation,
            restart_pending: restart,
            ..RankView::default()
        };
        self.observer.forget(r as u32);
        self.check_end(now);
    }

    /// Node `r` was paused (or resumed).
    pub(super) fn paused(&mut self, r: usize, paused: bool) {
        self.ranks[r].paused = paused;
    }

    pub(super) fn alive(&self, r: usize) -> bool {
        self.ranks[r].alive
    }

    /// After rank `r` handled an input: where it stands now.
    pub(super) fn after_input(&mut self, r: usize, p: &RankProcess, now: Nanos) {
        let v = &mut self.ranks[r];
        v.status = Some(p.status());
        if self.cfg.elastic.is_some() {
            v.standing = standing(Some(p));
        }
        self.check_end(now);
    }

    pub(super) fn event(&mut self, r: usize, pe: ProtoEvent, now: Nanos) {
        let call = match &pe {
            ProtoEvent::Call {
                iteration,
                index,
                fp,
                peer,
                ..
            } => Some((
                MadsimCall {
                    iteration: *iteration,
                    index: *index,
                    fp: *fp,
                },
                pair_of(fp.op, r as u32, peer.map(|p| p.0)),
            )),
            _ => None,
        };
        let seen = self.observer.observe(r as u32, now, pe, true);
        if seen.hint.progress() {
            self.last_progress = now;
        }
        if let Some((call, pair)) = call {
            let fp = call.fp;
            let slot = Slot {
                pair,
                ..Slot::collective(fp.group, fp.generation, fp.seq)
            };
            self.ranks[r].pending = true;
            self.ranks[r].slot = Some(slot);
            let op = self.ops.entry(slot).or_insert_with(|| MadsimOp {
                iteration: call.iteration,
                index: call.index,
                op: if pair.is_some() { OpKind::Send } else { fp.op },
                group: fp.group.0,
                generation: fp.generation.0,
                seq: fp.seq.0,
                ranks_called: 0,
                ranks_completed: 0,
                correct: true,
                results: Vec::new(),
                calls: Vec::new(),
                pair,
            });
            op.ranks_called += 1;
            if !op.calls.contains(&call) {
                op.calls.push(call);
            }
        }
        if let Some(Event::Complete {
            group,
            generation,
            seq,
            result,
            correct,
            ..
        }) = seen.event
        {
            self.ranks[r].pending = false;
            let slot = self.ranks[r]
                .slot
                .filter(|s| s.seq == seq)
                .unwrap_or(Slot::collective(group, generation, seq));
            if let Some(op) = self.ops.get_mut(&slot) {
                op.ranks_completed += 1;
                op.correct &= correct == Some(true);
                // the trace's hash of the result bits; empty when the rank holds none
                if !result.is_empty() && !op.results.contains(&result) {
                    op.results.push(result);
                }
            }
        }
        if seen.hint.watchdog() && self.cfg.elastic.is_none() {
            // without elastic membership the watchdog tears the job down
            self.stop_at(MadsimStop::Watchdog { rank: r as u32 }, now);
        }
    }

    fn latest_generation(&self) -> Generation {
        self.observer.latest_generation()
    }

    /// Every live member that installed the latest generation has finished (the engine's
    /// rule; a restarted process is a newcomer, not one of them).
    fn elastic_finished(&self) -> bool {
        let latest = self.latest_generation();
        let mut installed = 0;
        let mut done = 0;
        for v in &self.ranks[..self.world] {
            match v.standing {
                Standing::Working(g) | Standing::Rendezvous(g) if g == latest => installed += 1,
                Standing::Done(g) if g == latest => {
                    installed += 1;
                    done += 1;
                }
                _ => {}
            }
        }
        installed > 0 && done == installed
    }

    /// Every rank is done (a dead one counts when the workload has no collectives).
    fn all_done(&self) -> bool {
        if self.cfg.elastic.is_some() {
            return self.elastic_finished();
        }
        let dead_ok = !self.cfg.has_calls();
        self.ranks[..self.world].iter().all(|v| {
            if v.alive {
                v.status == Some(RankStatus::Done)
            } else {
                dead_ok && !v.restart_pending
            }
        })
    }

    fn all_finished(&self) -> bool {
        if self.cfg.elastic.is_some() {
            return self.elastic_finished();
        }
        self.ranks[..self.world].iter().all(|v| {
            if v.alive {
                matches!(v.status, Some(RankStatus::Done | RankStatus::Refused))
            } else {
                !v.restart_pending
            }
        })
    }

    fn check_end(&mut self, now: Nanos) {
        if self.stop.is_none() && self.all_finished() {
            self.stop_at(MadsimStop::AllFinished, now);
        }
    }

    pub(super) fn stop_at(&mut self, why: MadsimStop, now: Nanos) {
        if self.stop.is_none() {
            self.stop = Some((why, now));
        }
    }

    /// The outcome so far (final once stopped), with the engine's rules.
    pub(super) fn outcome(&self, now: Nanos) -> MadsimOutcome {
        let (stop, end_ns) = self.stop.unwrap_or((MadsimStop::Quiet, now));
        let all_done = self.all_done();
        let outcome = match stop {
            MadsimStop::TimeLimit if !all_done => Outcome::TimedOut,
            _ if all_done && self.latest_generation().0 > 0 => Outcome::Rebuilt,
            _ if all_done => Outcome::Completed,
            _ => Outcome::Stalled,
        };
        let mut generations: Vec<MadsimGeneration> = self
            .observer
            .generations()
            .iter()
            .map(|g| MadsimGeneration {
                generation: g.generation.0,
                members: g.members.ranks.iter().map(|r| r.0).collect(),
                formed_ns: g.formed_ns,
            })
            .collect();
        generations.sort_by_key(|g| g.generation);
        MadsimOutcome {
            outcome,
            stop,
            end_ns,
            generations,
            ops: self.ops.values().cloned().map(agreement).collect(),
            blocked: (0..self.world)
                .filter(|&r| {
                    let v = &self.ranks[r];
                    v.alive && !v.paused && v.pending
                })
                .map(|r| r as u32)
                .collect(),
            messages: self.messages,
        }
    }
}

/// Agreement: every rank of an allreduce, broadcast or allgather holds the same bits; a
/// reduce-scatter's ranks hold different blocks (as the engine's report says).
fn agreement(mut op: MadsimOp) -> MadsimOp {
    op.correct &= !op.op.same_result_everywhere() || op.results.len() <= 1;
    op
}
