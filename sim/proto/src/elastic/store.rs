//! The store rendezvous, as torchelastic's: a store process holds the rendezvous state, and
//! every change to it is a compare-and-set on its version.
//!
//! The store ([`StoreServer`]) is its own node (node id = `world.size`). It holds the last
//! generation formed and at most one open round. Clients (the ranks):
//! - poll it every heartbeat interval with `StoreGet` (members too, so that they notice a round
//!   another rank opened, and a joiner waiting);
//! - to rebuild (a failure detected, a watchdog fired, or a restarted process wanting in), open
//!   the round for the next generation, or add themselves to the open one, by CAS;
//! - once `min_size` participants are in, set the round's last call (now + rendezvous timeout),
//!   and when it has passed, or the round is full (`max_size`), close it by CAS into the next
//!   generation: the participants in rank order (members with progress first when trimming to
//!   `max_size`), resuming from the least progress among them.
//!
//! A CAS that fails returns the current state, and the client acts again on it. Because the store
//! applies one CAS at a time, one generation number never gets two member lists: no quorum is
//! needed. The price is a single point of failure: when the store is dead or unreachable no
//! generation can form (clients report `RendezvousWait`), and a restarted store has lost the
//! state — it answers every request with `lost`, since starting over from generation 0 could hand
//! out a generation number that already exists.

use super::msg::{ElasticMsg, Proposal, StoreRound, StoreState};
use super::{Decision, Elastic, MemberEvent, Phase, Progress};
use crate::collective::Members;
use crate::event::{AbortReason, Outbox, ProtoEvent};
use crate::msg::Msg;
use crate::time::Nanos;
use crate::types::{Generation, Rank};
use std::sync::Arc;

/// A client's view of its conversation with the store.
#[derive(Debug, Default)]
pub(super) struct StoreClient {
    /// When the request awaiting an answer was sent.
    inflight: Option<Nanos>,
    /// Acting on an answer: the state is at hand, no need to ask again.
    acting: bool,
}

impl Elastic {
    /// Asks the store for its state, unless a request is already on its way.
    pub(super) fn store_request(&mut self, now: Nanos, out: &mut Outbox) {
        if self.store.acting {
            return;
        }
        if let Some(sent) = self.store.inflight {
            if now.saturating_sub(sent) < self.cfg.rendezvous_timeout() {
                return;
            }
            if self.phase != Phase::Member {
                let target = self.next();
                self.wait(
                    target,
                    Vec::new(),
                    0,
                    "the store does not answer".into(),
                    out,
                );
            }
        }
        self.store.inflight = Some(now);
        let store = self.cfg.store;
        self.send(out, store, ElasticMsg::StoreGet);
    }

    pub(super) fn on_store_reply(
        &mut self,
        now: Nanos,
        version: u64,
        state: Arc<StoreState>,
        lost: bool,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        self.store.inflight = None;
        if lost {
            if self.phase != Phase::Member {
                let target = self.next();
                let reason = "the store was restarted and lost the rendezvous state".into();
                self.wait(target, Vec::new(), 0, reason, out);
            }
            return Decision::None;
        }
        self.store.acting = true;
        let d = self.store_react(now, version, &state, progress, out);
        self.store.acting = false;
        d
    }

    fn store_react(
        &mut self,
        now: Nanos,
        version: u64,
        state: &StoreState,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        let mut d = Decision::None;
        if state.generation > self.generation {
            d = self.learn(now, state.generation, state.proposal.clone(), out);
            if self.phase == Phase::Member {
                return d;
            }
        }
        if self.phase == Phase::Member {
            let opened = state
                .round
                .as_ref()
                .is_some_and(|r| r.target == self.next() && !r.has(self.me, self.incarnation));
            if !opened {
                return d;
            }
            self.phase = Phase::Rendezvous;
            let target = self.next();
            let reason = "a rendezvous round is open in the store".to_string();
            out.event(ProtoEvent::Membership(MemberEvent::RendezvousStart {
                target,
                reason: reason.clone(),
            }));
            d = d.or(Decision::Suspend {
                reason: AbortReason::MembershipChange(reason),
            });
        }
        self.store_act(now, version, state, progress, out);
        d
    }

    /// One step towards the next generation, by compare-and-set on what the store holds.
    fn store_act(
        &mut self,
        now: Nanos,
        version: u64,
        s: &StoreState,
        progress: Progress,
        out: &mut Outbox,
    ) {
        let (me, inc) = (self.me, self.incarnation);
        let mine = if self.phase == Phase::Joining {
            None
        } else {
            Some(progress.completed)
        };
        let (min, max) = (self.cfg.min_size as usize, self.cfg.max_size as usize);
        let next = match &s.round {
            None => {
                if self.phase == Phase::Joining && s.proposal.members.len() >= max {
                    let target = Generation(s.generation.0 + 1);
                    let reason = format!("the group is full ({max} ranks)");
                    self.wait(target, Vec::new(), 0, reason, out);
                    return;
                }
                StoreRound {
                    target: Generation(s.generation.0 + 1),
                    participants: vec![(me, inc, mine)],
                    last_call: None,
                }
            }
            Some(r) if !r.has(me, inc) => {
                // an earlier process of this rank may have joined: this one replaces it
                let mut r = r.clone();
                r.participants.retain(|(p, _, _)| *p != me);
                r.participants.push((me, inc, mine));
                r
            }
            Some(r) => {
                let n = r.participants.len();
                let last_call_passed = r.last_call.is_some_and(|t| now >= t);
                if n >= max || (n >= min && last_call_passed) {
                    return self.store_close(now, version, s, r, out);
                }
                if n >= min && r.last_call.is_none() {
                    let mut r = r.clone();
                    r.last_call = Some(crate::time::later(now, self.cfg.rendezvous_timeout()));
                    r
                } else {
                    if n < min {
                        let reachable = r.participants.iter().map(|(p, _, _)| *p).collect();
                        let reason =
                            format!("too few ranks: {n} joined the round, min_size is {min}");
                        self.wait(r.target, reachable, min as u32, reason, out);
                    }
                    return;
                }
            }
        };
        let state = StoreState {
            generation: s.generation,
            proposal: s.proposal.clone(),
            round: Some(next),
        };
        self.store_cas(now, version, state, out);
    }

    fn store_close(
        &mut self,
        now: Nanos,
        version: u64,
        s: &StoreState,
        r: &StoreRound,
        out: &mut Outbox,
    ) {
        let mut ps = r.participants.clone();
        // members carried over (with progress) first, when the round is over-full
        ps.sort_by_key(|(rank, _, completed)| (completed.is_none(), *rank));
        ps.truncate(self.cfg.max_size as usize);
        let resume = ps
            .iter()
            .filter_map(|(_, _, c)| *c)
            .min()
            .unwrap_or(s.proposal.resume);
        let members = ps.into_iter().map(|(p, i, _)| (p, i)).collect();
        let state = StoreState {
            generation: r.target,
            proposal: Proposal::new(members, resume),
            round: None,
        };
        self.store_cas(now, version, state, out);
    }

    fn store_cas(&mut self, now: Nanos, expected: u64, state: StoreState, out: &mut Outbox) {
        self.store.inflight = Some(now);
        let store = self.cfg.store;
        let cas = ElasticMsg::StoreCas {
            expected,
            state: Arc::new(state),
        };
        self.send(out, store, cas);
    }
}

/// The store process: a versioned register with compare-and-set.
pub struct StoreServer {
    version: u64,
    state: Arc<StoreState>,
    /// A restarted store: its state is gone.
    lost: bool,
}

impl StoreServer {
    /// The store of a world whose generation 0 is `world`; a restarted one (`incarnation > 0`)
    /// holds nothing.
    pub fn new(world: Arc<Members>, incarnation: u32) -> StoreServer {
        StoreServer {
            version: 0,
            state: Arc::new(StoreState {
                generation: Generation(0),
                proposal: Proposal::world(world),
                round: None,
            }),
            lost: incarnation > 0,
        }
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// A restarted store, which lost the rendezvous state.
    pub fn lost(&self) -> bool {
        self.lost
    }

    pub fn handle(&mut self, from: Rank, msg: Msg, out: &mut Outbox) {
        let Msg::Elastic(m) = msg else {
            return;
        };
        let ok = match *m {
            ElasticMsg::StoreGet => true,
            ElasticMsg::StoreCas { expected, state } => {
                let ok = !self.lost && expected == self.version;
                if ok {
                    self.version += 1;
                    self.state = state;
                    let s = &self.state;
                    out.event(ProtoEvent::Membership(MemberEvent::StoreUpdate {
                        version: self.version,
                        generation: s.generation,
                        members: s.proposal.ranks().to_vec(),
                        round: s.round.as_ref().map(|r| r.target),
                        participants: s
                            .round
                            .as_ref()
                            .map(|r| r.participants.iter().map(|(p, _, _)| *p).collect())
                            .unwrap_or_default(),
                    }));
                }
                ok
            }
            _ => return,
        };
        let reply = ElasticMsg::StoreReply {
            ok,
            version: self.version,
            state: self.state.clone(),
            lost: self.lost,
        };
        let bytes = reply.bytes();
        out.send(from, Msg::Elastic(Box::new(reply)), bytes);
    }
}
