//! Elastic membership: failure detection, rendezvous and generations, never split-brain.
//!
//! A group runs in numbered generations. Generation 0 is the whole world. When a member fails
//! (its heartbeats stop, or a collective's watchdog fires), when a restarted process asks to be
//! admitted, or when the group learns of a rendezvous, the members stop working — the running
//! collective is aborted — and agree on generation g+1: one member list in group-rank order
//! (ascending world ranks) and one iteration to resume from, the same on every member. Then each
//! member rebuilds its process group with exactly those members and `Generation(g+1)`, which
//! every message fingerprint carries, so nothing of an older generation is ever consumed.
//!
//! Two ways to agree ([`RendezvousKind`]):
//! - `quorum` (peer to peer, [`quorum`]): single-decree Paxos per generation, whose acceptors are
//!   the members of generation g. A generation forms only with promises and acceptances from a
//!   strict majority of g's members and at least `min_size` ranks: two majorities of one
//!   generation always share a member, so the minority side of a partition can never form a
//!   rival generation — it waits, and says so (`RendezvousWait`, the diagnosis' `quorum_lost`).
//! - `store` ([`store`]): a store process arbitrates by compare-and-set, as torchelastic's
//!   rendezvous does. It is linearizable, so no quorum is needed — and it is a single point of
//!   failure: without the store no generation can form.
//!
//! Invariants (the simulator's `one_world_per_generation` property checks them): generations
//! only increase on every rank; every rank that installs generation g installs the same members
//! and resume point; a generation has at least `min_size` and at most `max_size` members.
//!
//! Failure detection ([`detector`]) is a ring monitor: each member sends heartbeat datagrams to
//! its two ring neighbours in the generation every `heartbeat_interval` and suspects one after
//! `heartbeat_misses` silent intervals. Any silent set of members short of all of them has a live
//! neighbour that notices, and the rendezvous itself then asks every member, so a ring is enough
//! — and it costs two datagrams per member per interval, whatever the group's size.
//!
//! Progress: every member reports the iterations it has completed; the new generation resumes
//! from the smallest among the members carried over. A process that joins from outside (a
//! restarted one, or one left out of an earlier generation) has no progress of its own worth
//! keeping: it takes over the others' state, as a restarted torchelastic worker loads the last
//! checkpoint, so it does not hold the resume point back.

pub mod detector;
pub mod event;
pub mod msg;
pub mod quorum;
pub mod store;

pub use detector::{Detector, Heard};
pub use event::MemberEvent;
pub use msg::{Ballot, ElasticMsg, Proposal, StoreRound, StoreState};
pub use store::StoreServer;

use crate::collective::Members;
use crate::event::{AbortReason, Outbox, ProtoEvent};
use crate::msg::Msg;
use crate::mutation::{Mutation, Mutations};
use crate::time::{fmt_ms, Nanos};
use crate::types::{Generation, Rank, TimerKey};
use crate::vocab::RendezvousKind;
use std::collections::BTreeSet;
use std::sync::Arc;

/// `[group] elastic`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ElasticConfig {
    pub min_size: u32,
    pub max_size: u32,
    pub heartbeat_interval: Nanos,
    pub heartbeat_misses: u32,
    pub rendezvous: RendezvousKind,
    /// The store's node id (store rendezvous): the first id after the world's ranks.
    pub store: Rank,
}

impl ElasticConfig {
    /// How long a rendezvous waits for answers: the detector's own timeout, so a member that
    /// has not answered in that time is taken as gone, as a silent one would be.
    pub fn rendezvous_timeout(&self) -> Nanos {
        self.heartbeat_interval
            .saturating_mul(Nanos::from(self.heartbeat_misses.max(1)))
    }

    /// The strict majority of `n` members.
    pub fn quorum_of(n: usize) -> u32 {
        n as u32 / 2 + 1
    }
}

/// Where this process stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A member of the current generation (working, or done).
    Member,
    /// A member of the current generation, agreeing on the next one.
    Rendezvous,
    /// Outside the group (restarted, or left out of a generation): asking to be admitted.
    Joining,
}

/// The workload's progress, as the rendezvous reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Iterations completed.
    pub completed: u32,
    /// The workload is finished.
    pub done: bool,
}

/// What the process must do about its workload.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum Decision {
    None,
    /// Stop working: abort the running collective with `reason`, and wait.
    Suspend {
        reason: AbortReason,
    },
    /// Rebuild the group as `generation` and resume from the proposal's iteration.
    Install {
        generation: Generation,
        proposal: Arc<Proposal>,
    },
}

impl Decision {
    /// The stronger of two decisions (installing beats suspending beats nothing).
    pub fn or(self, other: Decision) -> Decision {
        match (&self, &other) {
            (Decision::Install { .. }, _) => self,
            (_, Decision::Install { .. }) => other,
            (Decision::Suspend { .. }, _) => self,
            _ => other,
        }
    }
}

/// One rank's elastic membership: its generation, detector and rendezvous state.
pub struct Elastic {
    cfg: Arc<ElasticConfig>,
    me: Rank,
    incarnation: u32,
    world: Arc<Members>,
    generation: Generation,
    current: Arc<Proposal>,
    phase: Phase,
    detector: Detector,
    /// Processes outside the group that asked to be admitted.
    joiners: BTreeSet<Rank>,
    /// The one rendezvous timer: a firing with another round is stale.
    timer: u64,
    quorum: quorum::Quorum,
    store: store::StoreClient,
    /// The last wait reported, so that a repeated failure is reported once.
    waited: Option<(Generation, Vec<Rank>, String)>,
    /// `Mutation::NoQuorum`: generations form without a strict majority.
    no_quorum: bool,
    /// `Mutation::NoRetry`: a failed rendezvous round is never tried again.
    no_retry: bool,
}

impl Elastic {
    /// A process of `me`; a restarted one (`incarnation > 0`) starts outside the group. Of
    /// `mutations`, it plants `NoQuorum` and `NoRetry`.
    pub fn new(
        cfg: Arc<ElasticConfig>,
        me: Rank,
        incarnation: u32,
        world: Arc<Members>,
        mutations: Mutations,
    ) -> Elastic {
        let detector = Detector::new(cfg.heartbeat_interval, cfg.heartbeat_misses);
        Elastic {
            cfg,
            me,
            incarnation,
            generation: Generation(0),
            current: Proposal::world(world.clone()),
            world,
            phase: if incarnation == 0 {
                Phase::Member
            } else {
                Phase::Joining
            },
            detector,
            joiners: BTreeSet::new(),
            timer: 0,
            quorum: quorum::Quorum::default(),
            store: store::StoreClient::default(),
            waited: None,
            no_quorum: mutations.contains(Mutation::NoQuorum),
            no_retry: mutations.contains(Mutation::NoRetry),
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The generation this process is in (or, outside the group, the last it heard of).
    pub fn generation(&self) -> Generation {
        self.generation
    }

    /// The members of [`Elastic::generation`].
    pub fn members(&self) -> &Arc<Members> {
        &self.current.members
    }

    pub fn config(&self) -> &ElasticConfig {
        &self.cfg
    }

    /// Whom this member waits for in a rendezvous, and the generation it would form: the
    /// members of its generation it cannot reach when the rendezvous has said it cannot form
    /// one; else the store (store rendezvous), or those whose answers its round awaits.
    pub fn waiting(&self) -> Option<(Generation, Vec<Rank>)> {
        if self.phase != Phase::Rendezvous {
            return None;
        }
        if let Some((target, reachable, _)) = &self.waited {
            let missing = self
                .current
                .ranks()
                .iter()
                .filter(|r| !reachable.contains(r));
            return Some((*target, missing.copied().collect()));
        }
        let next = Generation(self.generation.0 + 1);
        match self.cfg.rendezvous {
            RendezvousKind::Store => Some((next, vec![self.cfg.store])),
            RendezvousKind::Quorum => self.quorum.awaited(),
        }
    }

    pub fn start(&mut self, now: Nanos, out: &mut Outbox) -> Decision {
        out.set_timer(
            TimerKey::Heartbeat,
            crate::time::later(now, self.cfg.heartbeat_interval),
        );
        match self.phase {
            Phase::Member => {
                self.detector.watch(now, self.neighbours());
                Decision::None
            }
            _ => self.enter_joining(now, "a restarted process starts outside the group", out),
        }
    }

    pub fn on_timer(
        &mut self,
        now: Nanos,
        key: TimerKey,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        match key {
            TimerKey::Heartbeat => self.on_tick(now, progress, out),
            TimerKey::Rendezvous { round } if round == self.timer => match self.phase {
                Phase::Member => Decision::None,
                Phase::Rendezvous => match self.cfg.rendezvous {
                    RendezvousKind::Quorum => self.quorum_deadline(now, progress, out),
                    RendezvousKind::Store => Decision::None,
                },
                Phase::Joining => {
                    if self.cfg.rendezvous == RendezvousKind::Quorum {
                        self.send_join(out);
                        self.set_timer(now, self.cfg.rendezvous_timeout(), out);
                    }
                    Decision::None
                }
            },
            _ => Decision::None,
        }
    }

    /// A collective's watchdog fired: its peers are taken as failed, the group is rebuilt.
    pub fn on_watchdog(
        &mut self,
        now: Nanos,
        reason: &str,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        if self.phase == Phase::Member {
            self.begin_rendezvous(now, reason.to_string(), progress, out)
        } else {
            Decision::None
        }
    }

    pub fn on_message(
        &mut self,
        now: Nanos,
        from: Rank,
        msg: ElasticMsg,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        use ElasticMsg as M;
        match msg {
            M::Heartbeat { generation } => {
                if generation == self.generation && self.phase != Phase::Joining {
                    self.detector.heard(now, from);
                } else if generation > self.generation {
                    self.datagram(out, from, M::Query);
                } else if generation < self.generation {
                    // the sender is behind: tell it what it missed (a process outside the
                    // group too: the generation it heard of was decided all the same)
                    self.send_commit(out, from);
                }
                Decision::None
            }
            M::Query => {
                if self.generation.0 > 0 {
                    self.send_commit(out, from);
                }
                Decision::None
            }
            M::Commit {
                generation,
                proposal,
            } => self.learn(now, generation, proposal, out),
            M::Join { .. } => self.on_join(now, from, progress, out),
            M::Prepare { target, ballot } => {
                self.on_prepare(now, from, target, ballot, progress, out)
            }
            M::Promise {
                target,
                ballot,
                incarnation,
                voter,
                accepted,
                completed,
            } => {
                let answer = quorum::Answer {
                    incarnation,
                    voter,
                    accepted,
                    completed,
                };
                self.on_promise(now, from, target, ballot, answer, out)
            }
            M::Reject {
                target,
                ballot,
                promised,
            } => self.on_reject(now, target, ballot, promised, out),
            M::Accept {
                target,
                ballot,
                proposal,
            } => self.on_accept(now, from, target, ballot, proposal, out),
            M::Accepted { target, ballot } => self.on_accepted(now, from, target, ballot, out),
            M::StoreReply {
                version,
                state,
                lost,
                ..
            } => self.on_store_reply(now, version, state, lost, progress, out),
            M::StoreGet | M::StoreCas { .. } => Decision::None,
        }
    }

    fn on_tick(&mut self, now: Nanos, progress: Progress, out: &mut Outbox) -> Decision {
        out.set_timer(
            TimerKey::Heartbeat,
            crate::time::later(now, self.cfg.heartbeat_interval),
        );
        if self.phase != Phase::Joining {
            let hb = ElasticMsg::Heartbeat {
                generation: self.generation,
            };
            for n in self.neighbours() {
                self.datagram(out, n, hb.clone());
            }
        }
        let newly = self.detector.check(now);
        for &(peer, silent_ns) in &newly {
            out.event(ProtoEvent::Membership(MemberEvent::Suspect {
                peer,
                silent_ns,
            }));
        }
        let mut d = Decision::None;
        if self.phase == Phase::Member && !newly.is_empty() {
            let (peer, silent) = newly[0];
            let reason = format!("rank {peer} silent for {}", fmt_ms(silent));
            d = self.begin_rendezvous(now, reason, progress, out);
        }
        if self.cfg.rendezvous == RendezvousKind::Store {
            self.store_request(now, out);
        }
        d
    }

    /// Stops working and starts agreeing on the next generation.
    fn begin_rendezvous(
        &mut self,
        now: Nanos,
        reason: String,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        self.phase = Phase::Rendezvous;
        out.event(ProtoEvent::Membership(MemberEvent::RendezvousStart {
            target: self.next(),
            reason: reason.clone(),
        }));
        let suspend = Decision::Suspend {
            reason: AbortReason::MembershipChange(reason),
        };
        match self.cfg.rendezvous {
            RendezvousKind::Quorum => suspend.or(self.propose(now, progress, out)),
            RendezvousKind::Store => {
                self.store_request(now, out);
                suspend
            }
        }
    }

    /// A generation was decided: install it if this process is a member, else ask to join.
    fn learn(
        &mut self,
        now: Nanos,
        generation: Generation,
        proposal: Arc<Proposal>,
        out: &mut Outbox,
    ) -> Decision {
        if generation <= self.generation {
            return Decision::None;
        }
        if proposal.has_process(self.me, self.incarnation) {
            return self.install(now, generation, proposal, out);
        }
        self.generation = generation;
        self.current = proposal;
        if self.phase == Phase::Joining {
            return Decision::None;
        }
        let reason = format!("generation {} formed without this rank", generation.0);
        self.enter_joining(now, &reason, out)
    }

    fn install(
        &mut self,
        now: Nanos,
        generation: Generation,
        proposal: Arc<Proposal>,
        out: &mut Outbox,
    ) -> Decision {
        self.generation = generation;
        self.current = proposal.clone();
        self.phase = Phase::Member;
        self.joiners.retain(|j| !proposal.contains(*j));
        self.quorum.installed();
        self.store = store::StoreClient::default();
        self.waited = None;
        self.clear_timer(out);
        self.detector.watch(now, self.neighbours());
        let group_rank = proposal
            .members
            .index(self.me)
            .expect("a rank installs only generations it belongs to");
        out.event(ProtoEvent::Membership(MemberEvent::GenerationFormed {
            generation,
            proposal: proposal.clone(),
            group_rank,
        }));
        Decision::Install {
            generation,
            proposal,
        }
    }

    fn enter_joining(&mut self, now: Nanos, reason: &str, out: &mut Outbox) -> Decision {
        self.phase = Phase::Joining;
        self.quorum.abandon();
        self.detector.watch(now, []);
        out.event(ProtoEvent::Membership(MemberEvent::Joining {
            known: self.generation,
            reason: reason.to_string(),
        }));
        match self.cfg.rendezvous {
            RendezvousKind::Quorum => {
                self.send_join(out);
                self.set_timer(now, self.cfg.rendezvous_timeout(), out);
            }
            RendezvousKind::Store => self.store_request(now, out),
        }
        Decision::Suspend {
            reason: AbortReason::OutsideGroup(reason.to_string()),
        }
    }

    /// A process outside the group asks to be admitted (quorum rendezvous; the store's
    /// joiners open a round in the store instead).
    fn on_join(
        &mut self,
        now: Nanos,
        from: Rank,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        if self.cfg.rendezvous != RendezvousKind::Quorum {
            return Decision::None;
        }
        match self.phase {
            Phase::Joining => Decision::None,
            Phase::Rendezvous => {
                self.joiners.insert(from);
                self.invite(from, out);
                Decision::None
            }
            Phase::Member => {
                if progress.done {
                    return Decision::None; // the job is over
                }
                // a restarted member's old process is gone: rebuild whatever the size
                let rejoining = self.current.contains(from);
                if !rejoining && self.current.members.len() >= self.cfg.max_size as usize {
                    return Decision::None;
                }
                self.joiners.insert(from);
                if self.coordinator() == Some(self.me) {
                    self.begin_rendezvous(now, format!("rank {from} asks to join"), progress, out)
                } else {
                    Decision::None
                }
            }
        }
    }

    /// The member that admits joiners: the lowest-ranked one this rank does not suspect.
    fn coordinator(&self) -> Option<Rank> {
        self.current
            .ranks()
            .iter()
            .copied()
            .find(|&r| r == self.me || !self.detector.suspects(r))
    }

    fn next(&self) -> Generation {
        Generation(self.generation.0 + 1)
    }

    /// This rank's place in the current generation (0 when outside it).
    fn position(&self) -> u32 {
        self.current.members.index(self.me).unwrap_or(0)
    }

    /// Ring neighbours in the current generation.
    fn neighbours(&self) -> Vec<Rank> {
        let ranks = self.current.ranks();
        let Some(i) = self.current.members.index(self.me) else {
            return Vec::new();
        };
        let n = ranks.len();
        let mut v = vec![ranks[(i as usize + 1) % n], ranks[(i as usize + n - 1) % n]];
        v.retain(|&r| r != self.me);
        v.sort_unstable();
        v.dedup();
        v
    }

    fn send_join(&self, out: &mut Outbox) {
        for &r in &self.world.ranks {
            if r != self.me {
                self.datagram(
                    out,
                    r,
                    ElasticMsg::Join {
                        known: self.generation,
                    },
                );
            }
        }
    }

    fn send_commit(&self, out: &mut Outbox, to: Rank) {
        self.send(
            out,
            to,
            ElasticMsg::Commit {
                generation: self.generation,
                proposal: self.current.clone(),
            },
        );
    }

    /// Reports that the rendezvous for `target` cannot form a generation now (once per cause).
    fn wait(
        &mut self,
        target: Generation,
        reachable: Vec<Rank>,
        quorum: u32,
        reason: String,
        out: &mut Outbox,
    ) {
        let key = (target, reachable.clone(), reason.clone());
        if self.waited.as_ref() == Some(&key) {
            return;
        }
        self.waited = Some(key);
        out.event(ProtoEvent::Membership(MemberEvent::RendezvousWait {
            target,
            reachable,
            quorum,
            min_size: self.cfg.min_size,
            reason,
        }));
    }

    fn send(&self, out: &mut Outbox, to: Rank, msg: ElasticMsg) {
        let bytes = msg.bytes();
        out.send(to, Msg::Elastic(Box::new(msg)), bytes);
    }

    fn datagram(&self, out: &mut Outbox, to: Rank, msg: ElasticMsg) {
        let bytes = msg.bytes();
        out.send_datagram(to, Msg::Elastic(Box::new(msg)), bytes);
    }

    fn set_timer(&mut self, now: Nanos, after: Nanos, out: &mut Outbox) {
        self.clear_timer(out);
        out.set_timer(
            TimerKey::Rendezvous { round: self.timer },
            crate::time::later(now, after),
        );
    }

    fn clear_timer(&mut self, out: &mut Outbox) {
        out.cancel_timer(TimerKey::Rendezvous { round: self.timer });
        self.timer += 1;
    }
}

#[cfg(test)]
mod tests;
