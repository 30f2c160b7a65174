//! The engine's side of elastic membership and the registry: the store node, the generations
//! formed, trace events, and when an elastic run is over.
//!
//! Heartbeats never stop, so an elastic run cannot end by running out of events. It ends when
//! - every live member of the latest generation (that installed it) has finished the workload
//!   (`AllFinished`: outcome `rebuilt` after a rebuild, else `completed`); or
//! - nothing can change any more (`Quiescent`, outcome `stalled`): no fault will begin or end
//!   and no restart is due, no rank is working, and every rank still in a rendezvous cannot
//!   succeed — from where it stands it can reach neither a strict majority of its generation's
//!   members (quorum rendezvous; or, for the store, a live store and `min_size` ranks), nor any
//!   rank of a later generation to learn from. Ranks outside the group only wait to be let in.
//!   This is decided from the engine's own knowledge of deaths and links, which the protocol
//!   never sees; it only ends runs the protocol could not finish anyway;
//! - or the time limit passes.

use super::{Engine, Slot};
use crate::proto::collective::Members;
use crate::proto::elastic::{self, StoreServer};
use crate::proto::mutation::Mutation;
use crate::proto::{Generation, ProcConfig, Rank, RankProcess, RankStatus};
use crate::scenario::RendezvousKind;
use crate::trace::{Event, Recorder};
use crate::units::{later, Nanos};
use std::collections::BTreeMap;

/// Where a rank stands, for deciding when an elastic run is over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Dead (or the store's slot).
    #[default]
    Off,
    /// A member of the generation, running its workload.
    Working(Generation),
    /// A member of the generation, finished.
    Done(Generation),
    /// A member of the generation, agreeing on the next one.
    Rendezvous(Generation),
    /// Outside the group.
    Outside,
}

/// How many ranks stand where.
#[derive(Clone, Debug, Default)]
pub(super) struct Tally {
    working: u32,
    /// Ranks that installed each generation and are still in it (working, done or in a
    /// rendezvous), and how many of them are done.
    installed: BTreeMap<Generation, u32>,
    done: BTreeMap<Generation, u32>,
}

impl Tally {
    fn add(&mut self, s: Standing, by: i64) {
        let bump = |m: &mut BTreeMap<Generation, u32>, g: Generation| {
            let v = m.entry(g).or_insert(0);
            *v = (i64::from(*v) + by) as u32;
        };
        match s {
            Standing::Working(g) => {
                self.working = (i64::from(self.working) + by) as u32;
                bump(&mut self.installed, g);
            }
            Standing::Done(g) => {
                bump(&mut self.installed, g);
                bump(&mut self.done, g);
            }
            Standing::Rendezvous(g) => bump(&mut self.installed, g),
            Standing::Off | Standing::Outside => {}
        }
    }
}

/// Where a rank's process (None: dead) stands in an elastic group.
pub(crate) fn standing(proc: Option<&RankProcess>) -> Standing {
    let Some(p) = proc else {
        return Standing::Off;
    };
    match p.membership() {
        None => Standing::Off,
        Some(m) => match m.phase {
            elastic::Phase::Joining => Standing::Outside,
            elastic::Phase::Rendezvous => Standing::Rendezvous(m.generation),
            elastic::Phase::Member if p.status() == RankStatus::Done => {
                Standing::Done(m.generation)
            }
            elastic::Phase::Member => Standing::Working(m.generation),
        },
    }
}

/// The store's node id, when the group uses a store rendezvous.
pub(crate) fn store_node(cfg: &ProcConfig) -> Option<Rank> {
    cfg.elastic
        .as_ref()
        .filter(|e| e.rendezvous == RendezvousKind::Store)
        .map(|e| e.store)
}

impl Slot {
    pub(super) fn alive(&self) -> bool {
        self.proc.is_some() || self.store.is_some()
    }
}

impl<R: Recorder + ?Sized> Engine<'_, R> {
    pub(super) fn start_store(&mut self, r: u32) {
        if !self.slots[r as usize].alive() {
            return; // preempted before it could start
        }
        if self.record {
            let incarnation = self.incarnations[r as usize];
            self.emit(Event::ProcessStart {
                rank: r,
                incarnation,
            });
        }
    }

    pub(super) fn restart_store(&mut self, r: u32) {
        self.incarnations[r as usize] += 1;
        let incarnation = self.incarnations[r as usize];
        let slot = &mut self.slots[r as usize];
        slot.restart_pending = false;
        slot.paused = false;
        slot.store = Some(StoreServer::new(
            self.cfg.world_members.clone(),
            incarnation,
        ));
        self.net.reset_rank(r, self.now);
        self.start_store(r);
    }

    /// Every generation formed after the first, as first reported: (generation, members in
    /// group-rank order, when).
    pub fn generations(&self) -> impl Iterator<Item = (Generation, &[Rank], Nanos)> + '_ {
        self.observer
            .generations()
            .iter()
            .map(|g| (g.generation, g.members.ranks.as_slice(), g.formed_ns))
    }

    /// The latest generation formed (0 before any rebuild).
    pub fn latest_generation(&self) -> Generation {
        self.observer.latest_generation()
    }

    /// Counts `rank` where it stands now (after each input it handles, and when it dies).
    pub(super) fn recount(&mut self, rank: u32) {
        let slot = &self.slots[rank as usize];
        let now = standing(slot.proc.as_ref());
        let before = slot.standing;
        if before != now {
            self.tally.add(before, -1);
            self.tally.add(now, 1);
            self.slots[rank as usize].standing = now;
        }
    }

    /// Every live process that installed the latest generation (and is still in it) has
    /// finished the workload: a restarted process is a newcomer, not one of them.
    /// Members of the latest generation still on their way into it (an older generation's
    /// member that has not heard of it yet) are waited for.
    pub(super) fn elastic_finished(&self) -> bool {
        let latest = self.latest_generation();
        let installed = self.tally.installed.get(&latest).copied().unwrap_or(0);
        if installed == 0 || self.tally.done.get(&latest).copied().unwrap_or(0) != installed {
            return false;
        }
        let Some(g) = self
            .observer
            .generations()
            .iter()
            .find(|g| g.generation == latest)
        else {
            return true;
        };
        g.members
            .ranks
            .iter()
            .all(|r| match self.slots.get(r.0 as usize).map(|s| s.standing) {
                Some(Standing::Working(x) | Standing::Done(x) | Standing::Rendezvous(x)) => {
                    x >= latest
                }
                _ => true,
            })
    }

    /// After each event of an elastic run: stop when finished; when no rank works and no
    /// fault is due, look again a rendezvous timeout later whether anything can still happen.
    pub(super) fn settle(&mut self) {
        if self.stop.is_some() {
            return;
        }
        if self.elastic_finished() {
            self.stop = Some(super::StopReason::AllFinished);
            return;
        }
        if self.pending_faults == 0 {
            if let Some(cfg) = self.elastic.as_ref() {
                let round = later(
                    later(self.cfg.timeout, cfg.rendezvous_timeout()),
                    self.cfg.compute,
                );
                // a rebuilt group redoes at most one iteration's calls before it gets further
                let redo = later(
                    self.cfg.compute,
                    (self.cfg.max_calls() as u64).saturating_mul(self.cfg.timeout),
                );
                let window = later(round.saturating_mul(super::NO_PROGRESS_ROUNDS), redo);
                let idle = self.now - self.progress_ns;
                // stop at the next abort, while every rank still shows the call it is stuck
                // in (see `proto_event`); without one for another window, stop anyway
                self.no_progress = idle > window;
                if idle > window.saturating_mul(2) {
                    self.stop = Some(super::StopReason::NoProgress);
                    return;
                }
            }
        }
        if self.tally.working == 0 && self.pending_faults == 0 && !self.settling {
            if let Some(cfg) = self.elastic.as_ref() {
                let at = later(self.now, cfg.rendezvous_timeout());
                self.settling = true;
                self.push(at, super::Ev::Settle);
            }
        }
    }

    /// Nothing can change any more (see the module doc).
    pub(super) fn stuck(&self) -> bool {
        if self.pending_faults > 0 {
            return false;
        }
        for r in 0..self.ranks {
            let slot = &self.slots[r as usize];
            let Some(p) = slot.proc.as_ref() else {
                continue;
            };
            if slot.paused || p.registry().is_some_and(|reg| !reg.finished()) {
                return false;
            }
            if matches!(p.status(), RankStatus::Done | RankStatus::Refused) {
                continue;
            }
            let Some(m) = p.membership() else {
                return false;
            };
            match m.phase {
                elastic::Phase::Member => return false,
                elastic::Phase::Joining => {}
                elastic::Phase::Rendezvous => {
                    if self.can_progress(r, m.generation, m.members) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Messages get through both ways between `a` and `b` now.
    fn linked(&self, a: u32, b: u32) -> bool {
        a == b || (!self.faults.cut(a, b) && !self.faults.cut(b, a))
    }

    /// Whether rank `r`, agreeing on the generation after `generation`, can still succeed or
    /// learn of a later generation.
    fn can_progress(&self, r: u32, generation: Generation, members: &Members) -> bool {
        let Some(cfg) = self.elastic.as_ref() else {
            return false;
        };
        let view = |x: u32| {
            self.slots[x as usize]
                .proc
                .as_ref()
                .and_then(|p| p.membership())
        };
        let reach: Vec<u32> = (0..self.ranks)
            .filter(|&x| self.slots[x as usize].proc.is_some() && self.linked(r, x))
            .collect();
        if reach
            .iter()
            .any(|&x| view(x).is_some_and(|m| m.generation > generation))
        {
            return true;
        }
        let min = cfg.min_size as usize;
        match cfg.rendezvous {
            RendezvousKind::Quorum => {
                let voters = reach
                    .iter()
                    .filter(|&&x| members.index(Rank(x)).is_some())
                    .filter(|&&x| {
                        view(x).is_some_and(|m| {
                            m.generation == generation && m.phase != elastic::Phase::Joining
                        })
                    })
                    .count();
                // `Mutation::NoQuorum` plants a rendezvous that needs no majority
                let no_quorum = self.cfg.mutations.contains(Mutation::NoQuorum);
                (voters * 2 > members.len() || no_quorum) && reach.len() >= min
            }
            RendezvousKind::Store => {
                let store = self.ranks;
                let usable = self.slots[store as usize]
                    .store
                    .as_ref()
                    .is_some_and(|s| !s.lost());
                if !usable || !self.linked(r, store) {
                    return false;
                }
                let with_store = (0..self.ranks)
                    .filter(|&x| self.slots[x as usize].proc.is_some() && self.linked(x, store))
                    .count();
                with_store >= min
            }
        }
    }
}
