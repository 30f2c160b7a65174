//! What a driver makes of its ranks' protocol events: one [`Observer`] for the engine, the TCP
//! worker and the madsim driver.
//!
//! The protocol code reports what happens inside it as [`ProtoEvent`]s. Every driver needs the
//! same three things from them:
//! - the trace event (`from_proto`), so that every driver's trace reads alike;
//! - the check of each completed call's result against the reference computed from the
//!   members' inputs ([`crate::verify`]): for that the observer follows, per rank, the call it is
//!   in and the members of the generation it installed last;
//! - a [`Hint`] for the driver's own stop rules: a call completed further into the workload, a
//!   watchdog fired (without elastic membership that tears the job down), a rank's standing
//!   changed so that the run may be over.
//!
//! It also keeps every generation formed, as first reported.

use crate::proto::collective::Members;
use crate::proto::elastic::MemberEvent;
use crate::proto::{Fingerprint, Generation, GroupId, ProcConfig, ProtoEvent, Rank};
use crate::scenario::OpKind;
use crate::trace::{from_proto, Event};
use crate::units::Nanos;
use crate::verify::{self, CallKey, References};
use std::sync::Arc;

/// What a protocol event means for a driver's rules of when a run is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// A step, a flight record: nothing for the stop rules.
    None,
    /// The rank began an iteration or entered a call.
    Working,
    /// The rank completed call `index` of `iteration`.
    Completed { iteration: u32, index: u32 },
    /// The rank's running call was aborted; `watchdog` when its watchdog fired.
    Aborted { watchdog: bool },
    /// The rank finished its workload, or a restarted process was refused re-admission.
    Finished,
    /// The rank installed a new generation.
    Generation,
    /// Another membership event: a rendezvous, a suspicion, the store.
    Membership,
    /// A registry step ran, or a view changed.
    Registry,
}

impl Hint {
    /// The workload got somewhere: for a driver that tells a stuck run by how long nothing
    /// progressed.
    pub fn progress(self) -> bool {
        matches!(
            self,
            Hint::Working
                | Hint::Completed { .. }
                | Hint::Finished
                | Hint::Generation
                | Hint::Registry
        )
    }

    /// A rank's standing may have changed so that the run is over.
    pub fn may_end(self) -> bool {
        matches!(
            self,
            Hint::Finished | Hint::Generation | Hint::Membership | Hint::Registry
        )
    }

    /// The watchdog fired.
    pub fn watchdog(self) -> bool {
        self == Hint::Aborted { watchdog: true }
    }
}

/// What the observer made of one protocol event.
#[derive(Debug)]
pub struct Observed {
    pub hint: Hint,
    /// The trace event, when asked for (a completion's carries its result check).
    pub event: Option<Event>,
}

/// A generation as first reported by one of its members.
#[derive(Clone, Debug)]
pub struct GenerationRecord {
    pub generation: Generation,
    pub members: Arc<Members>,
    pub formed_ns: Nanos,
}

/// What the observer follows of one rank.
#[derive(Clone, Debug, Default)]
struct Follow {
    /// The calls the rank is in (one, but for a program's calls running at once): (fingerprint,
    /// iteration, index, peer of a send or recv).
    calls: Vec<(Fingerprint, u32, u32, Option<Rank>)>,
    /// The members of the generation the rank installed last (None: the world).
    members: Option<Arc<Members>>,
}

/// Turns the protocol events of a group's ranks into trace events, result checks and stop
/// hints (see the module doc).
pub struct Observer {
    cfg: Arc<ProcConfig>,
    /// The run's seed, which the ranks' inputs derive from.
    seed: u64,
    ranks: Vec<Follow>,
    refs: References,
    /// Every generation formed after the first, in the order first reported.
    generations: Vec<GenerationRecord>,
    hashes: from_proto::ResultHashes,
    /// The real inputs of an application-driven run, which results are checked against.
    real: Option<Box<verify::RealInputs>>,
}

impl Observer {
    /// An observer of `nodes` nodes (the world's ranks, then a store when there is one) running
    /// `cfg` seeded with `seed`.
    pub fn new(cfg: Arc<ProcConfig>, seed: u64, nodes: usize) -> Observer {
        Observer {
            cfg,
            seed,
            ranks: vec![Follow::default(); nodes],
            refs: References::default(),
            generations: Vec::new(),
            hashes: from_proto::ResultHashes::default(),
            real: None,
        }
    }

    /// The application built group `id` (an application-driven run).
    pub fn add_group(&mut self, id: GroupId, members: Arc<Members>) {
        self.real.get_or_insert_default().add_group(id, members);
    }

    /// `rank` issues the application's call `call`, with its real input.
    pub fn app_input(&mut self, rank: u32, call: &crate::proto::AppCall) {
        self.real
            .get_or_insert_default()
            .issued(rank, call.index, call.input.clone());
    }

    /// Forgets what `rank`'s process was doing: it died, or starts afresh (in no call, knowing
    /// only the world).
    pub fn forget(&mut self, rank: u32) {
        self.ranks[rank as usize] = Follow::default();
    }

    /// Every generation formed after the first, as first reported.
    pub fn generations(&self) -> &[GenerationRecord] {
        &self.generations
    }

    /// The latest generation formed (0 before any rebuild).
    pub fn latest_generation(&self) -> Generation {
        self.generations
            .iter()
            .map(|g| g.generation)
            .max()
            .unwrap_or_default()
    }

    /// Takes in `pe`, reported by `rank` at `now`. With `record`, builds its trace event and
    /// checks a completed call's result; without, only follows the rank and hints.
    pub fn observe(&mut self, rank: u32, now: Nanos, pe: ProtoEvent, record: bool) -> Observed {
        let mut correct = None;
        let follow = &mut self.ranks[rank as usize];
        let hint = match &pe {
            ProtoEvent::Iteration { .. } => Hint::Working,
            ProtoEvent::Call {
                iteration,
                index,
                fp,
                peer,
                ..
            } => {
                follow.calls.push((*fp, *iteration, *index, *peer));
                if let Some(real) = self.real.as_mut() {
                    real.called(rank, *index, fp, *peer);
                }
                Hint::Working
            }
            ProtoEvent::Complete {
                iteration,
                index,
                result,
                ..
            } => {
                let at = (follow.calls.iter())
                    .position(|&(_, it, ix, _)| (it, ix) == (*iteration, *index));
                let call = at.map(|k| follow.calls.swap_remove(k));
                if record {
                    correct = call.map(|(fp, it, ix, peer)| match peer {
                        Some(peer) => self.check_message(rank, fp, peer, result),
                        None => self.check(rank, fp, it, ix, result),
                    });
                }
                Hint::Completed {
                    iteration: *iteration,
                    index: *index,
                }
            }
            ProtoEvent::Abort {
                group, seq, reason, ..
            } => {
                let at =
                    (follow.calls.iter()).position(|(fp, ..)| fp.group == *group && fp.seq == *seq);
                if let Some(k) = at {
                    follow.calls.swap_remove(k);
                }
                Hint::Aborted {
                    watchdog: reason.is_watchdog(),
                }
            }
            ProtoEvent::WorkloadDone | ProtoEvent::RejoinRefused { .. } => Hint::Finished,
            ProtoEvent::Membership(MemberEvent::GenerationFormed {
                generation,
                proposal,
                ..
            }) => {
                follow.members = Some(proposal.members.clone());
                if !self.generations.iter().any(|g| g.generation == *generation) {
                    self.generations.push(GenerationRecord {
                        generation: *generation,
                        members: proposal.members.clone(),
                        formed_ns: now,
                    });
                }
                Hint::Generation
            }
            ProtoEvent::Membership(_) => Hint::Membership,
            ProtoEvent::Registry(_) => Hint::Registry,
            ProtoEvent::Step { .. }
            | ProtoEvent::NodeWait { .. }
            | ProtoEvent::FlightRecord { .. }
            | ProtoEvent::Unexpected { .. } => Hint::None,
        };
        Observed {
            hint,
            event: record.then(|| from_proto::proto_event(rank, pe, correct, &mut self.hashes)),
        }
    }

    /// Whether `rank`'s `result` of send or recv `fp` with `peer` is right: a send holds
    /// nothing; a recv holds the data its sender sent as that message (by its order).
    fn check_message(
        &self,
        rank: u32,
        fp: Fingerprint,
        peer: Rank,
        result: &crate::proto::Buffer,
    ) -> bool {
        if let Some(real) = self.real.as_ref() {
            return real.check_message(&fp, peer, Rank(rank), result);
        }
        match fp.op {
            OpKind::Recv => result.approx_eq(&verify::message(&fp, self.seed, peer, Rank(rank))),
            _ => result.is_empty(),
        }
    }

    /// Whether `rank`'s `result` of call `fp` is right. The call reduces over the members of
    /// the generation the rank called in (they, and only they, contribute), or over the mesh
    /// sub-group the fingerprint names.
    fn check(
        &mut self,
        rank: u32,
        fp: Fingerprint,
        iteration: u32,
        index: u32,
        result: &crate::proto::Buffer,
    ) -> bool {
        if let Some(real) = self.real.as_mut() {
            let world = self.cfg.world_members.clone();
            return real.check(&fp, &world, Rank(rank), result);
        }
        let members = if fp.group == GroupId(0) {
            match &self.ranks[rank as usize].members {
                Some(m) if fp.generation.0 > 0 => m.clone(),
                _ => self.cfg.world_members.clone(),
            }
        } else {
            match self.cfg.group_members(fp.group) {
                Some(m) => m,
                None => return false,
            }
        };
        let (seed, iteration, index) =
            self.cfg
                .input_key(iteration, index, fp.group, fp.generation, fp.seq);
        let key = CallKey {
            fp,
            iteration,
            index,
            seed,
        };
        self.refs.check(key, &members, Rank(rank), result)
    }
}
