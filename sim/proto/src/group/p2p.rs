//! Point-to-point calls of a process group: send and recv.
//!
//! Messages between two members are matched by order, apart from the collectives' sequence
//! numbers: the k-th send from a to b in a group meets the k-th recv of b from a. A message
//! that arrives before its recv is posted is kept until then. A recv takes the message of its
//! order only when both ends agree on its parameters ([`P2pSig`]: size, dtype, elements);
//! otherwise it waits until its watchdog fires, as a mismatched collective does.
//!
//! A send completes:
//! - eager (the default): once its bytes have left the sender, which only the driver knows:
//!   the send goes out with `Output::NotifySent` and completes on `Input::SendDone`;
//! - rendezvous: once the receiver has taken it, when its [`P2pBody::Ack`] arrives.
//!
//! A recv completes when the message of its order has arrived and is taken; its result is the
//! message's data, which the sender made with [`Buffer::message`] so that anyone can check it.
//! Each call has one step, waiting for its peer (a recv, a rendezvous send) or for nobody (an
//! eager send waits only for its own bytes to leave).
//!
//! Several sends and recvs may run at once (an application's `isend`/`irecv` outstanding
//! together, `batch_isend_irecv`): each is matched by its own peer and order, and a watchdog
//! that fires aborts them all, as a real backend aborts a communicator that timed out.

use super::{CallOutcome, CallRequest, ProcessGroup};
use crate::data::Buffer;
use crate::event::{AbortReason, Outbox, ProtoEvent, StepEvent, WaitList};
use crate::msg::{Fingerprint, Msg, P2pBody, P2pMsg, P2pSig};
use crate::mutation::Mutation;
use crate::time::Nanos;
use crate::types::{Rank, SendToken, SeqNo, TimerKey};
use crate::vocab::{Algorithm, OpKind, ReduceOp};
use crate::wait::WaitState;

/// The point-to-point state of one member of a group.
pub(super) struct P2p {
    /// Sends issued to each group rank so far, and recvs posted from each.
    sends: Vec<u64>,
    recvs: Vec<u64>,
    /// Messages that arrived before the recv that takes them: (sender's group rank, message).
    early: Vec<(u32, Box<P2pMsg>)>,
    /// The running sends and recvs, in the order they were issued.
    active: Vec<Active>,
}

/// The running send or recv.
struct Active {
    fp: Fingerprint,
    /// The other end: group rank and world rank.
    peer: u32,
    peer_rank: Rank,
    rendezvous: bool,
    iteration: u32,
    index: u32,
    called_ns: Nanos,
}

impl Active {
    fn order(&self) -> u64 {
        self.fp.seq.0
    }

    fn sig(&self) -> P2pSig {
        P2pSig {
            bytes: self.fp.bytes,
            dtype: self.fp.dtype,
            elements: self.fp.elements,
        }
    }

    /// Waits for its peer (a recv, a rendezvous send), not only for its own bytes to leave.
    fn waits_for_peer(&self) -> bool {
        self.fp.op == OpKind::Recv || self.rendezvous
    }

    fn wait_state(&self) -> WaitState {
        WaitState {
            group: self.fp.group,
            generation: self.fp.generation,
            seq: self.fp.seq,
            op: self.fp.op,
            algorithm: self.fp.algorithm,
            step: 0,
            steps: 1,
            waiting_for: if self.waits_for_peer() {
                vec![self.peer_rank]
            } else {
                Vec::new()
            },
            since_ns: self.called_ns,
            peer: Some(self.peer_rank),
        }
    }
}

impl P2p {
    fn new(p: u32) -> P2p {
        P2p {
            sends: vec![0; p as usize],
            recvs: vec![0; p as usize],
            early: Vec::new(),
            active: Vec::new(),
        }
    }
}

impl ProcessGroup {
    /// Whether a send or recv is running.
    pub(super) fn p2p_busy(&self) -> bool {
        self.p2p.as_ref().is_some_and(|p| !p.active.is_empty())
    }

    /// What the rank waits for: the first running call that waits for its peer, else the first.
    pub(super) fn p2p_wait_state(&self) -> Option<WaitState> {
        let active = &self.p2p.as_ref()?.active;
        active
            .iter()
            .find(|a| a.waits_for_peer())
            .or_else(|| active.first())
            .map(Active::wait_state)
    }

    fn p2p_state(&mut self) -> &mut P2p {
        let p = self.size();
        self.p2p.get_or_insert_with(|| Box::new(P2p::new(p)))
    }

    /// Issues a send or recv with group rank `peer`; `seed` makes a send's data.
    pub(super) fn call_p2p(
        &mut self,
        now: Nanos,
        req: CallRequest,
        peer: u32,
        seed: u64,
        out: &mut Outbox,
    ) -> CallOutcome {
        let Some(&peer_rank) = self.members.ranks.get(peer as usize) else {
            // validated scenarios never get here
            out.event(ProtoEvent::Abort {
                group: self.id,
                generation: self.generation,
                seq: SeqNo(0),
                step: 0,
                steps: 0,
                waiting_for: Vec::new(),
                reason: AbortReason::NoPeer(peer),
            });
            return CallOutcome::Aborted;
        };
        let me_rank = self.members.ranks[self.me as usize];
        let (id, generation, members) = (self.id, self.generation, self.size() as usize);
        let state = self.p2p_state();
        let order = match req.op {
            OpKind::Send => &mut state.sends[peer as usize],
            _ => &mut state.recvs[peer as usize],
        };
        *order += 1;
        let order = *order;
        let rendezvous = req.op == OpKind::Send && req.algorithm == Algorithm::Rendezvous;
        let fp = Fingerprint {
            group: id,
            generation,
            seq: SeqNo(order),
            op: req.op,
            algorithm: req.algorithm,
            bytes: req.bytes,
            dtype: req.dtype,
            root: 0,
            reduce: ReduceOp::Sum,
            elements: req.elements,
        };
        out.event(ProtoEvent::Call {
            iteration: req.iteration,
            index: req.index,
            fp,
            members,
            peer: Some(peer_rank),
        });
        let active = Active {
            fp,
            peer,
            peer_rank,
            rendezvous,
            iteration: req.iteration,
            index: req.index,
            called_ns: now,
        };
        out.set_timer(
            TimerKey::PeerWatchdog {
                group: id,
                peer: peer_rank,
                order,
            },
            now + self.timeout,
        );
        if req.op == OpKind::Send {
            self.send_data(&active, me_rank, seed, req.input, req.bytes, out);
        }
        let ws = active.wait_state();
        let state = self.p2p_state();
        state.active.push(active);
        let at = state.active.len() - 1;
        if req.op == OpKind::Send
            && !rendezvous
            && self.mutations.contains(Mutation::EagerSendDoneEarly)
        {
            return self.finish(at, None, out);
        }
        if req.op == OpKind::Recv {
            if let Some(k) = self.p2p_match(at) {
                let (_, msg) = self.p2p_state().early.remove(k);
                return self.take(at, *msg, out);
            }
        }
        if self.step_events {
            out.step(StepEvent {
                group: ws.group,
                generation: ws.generation,
                seq: ws.seq,
                step: 0,
                steps: 1,
                waiting_for: WaitList::from_vec(ws.waiting_for),
            });
        }
        CallOutcome::Pending
    }

    /// The message of the send `active`: an application's own `input`, or, when it has none (a
    /// scenario's send), data anyone can check, made from `seed`; told when its bytes have left
    /// (an eager send), or not (a rendezvous send completes when the receiver takes it).
    fn send_data(
        &self,
        active: &Active,
        me_rank: Rank,
        seed: u64,
        input: Buffer,
        bytes: u64,
        out: &mut Outbox,
    ) {
        let (id, generation, order) = (self.id, self.generation, active.order());
        let (peer_rank, rendezvous) = (active.peer_rank, active.rendezvous);
        let sig = active.sig();
        let seed = if self.mutations.contains(Mutation::P2pCorruptPayload) {
            seed ^ 1
        } else {
            seed
        };
        let data = if input.is_empty() {
            Buffer::message(
                sig.dtype,
                sig.elements as usize,
                seed,
                id.0,
                me_rank.0,
                peer_rank.0,
                order,
            )
        } else {
            input
        };
        let msg = Msg::P2p(Box::new(P2pMsg {
            group: id,
            generation,
            order,
            body: P2pBody::Data {
                sig,
                rendezvous,
                data,
            },
        }));
        if rendezvous {
            out.send(peer_rank, msg, bytes);
        } else {
            let token = SendToken {
                group: id,
                peer: peer_rank,
                order,
            };
            out.send_notify(peer_rank, msg, bytes, token);
        }
    }

    /// The kept message the running recv `at` takes, if it arrived: the one of its order from
    /// its peer, with the recv's parameters.
    fn p2p_match(&mut self, at: usize) -> Option<usize> {
        let latest = self.mutations.contains(Mutation::P2pTakeLatest);
        let state = self.p2p.as_ref()?;
        let recv = state.active.get(at)?;
        let (peer, order, sig) = (recv.peer, recv.order(), recv.sig());
        let fits = |m: &P2pMsg| matches!(&m.body, P2pBody::Data { sig: s, .. } if *s == sig);
        if latest {
            // the planted bug: whatever the peer sent last, of any order
            return state
                .early
                .iter()
                .rposition(|(from, m)| *from == peer && fits(m));
        }
        state
            .early
            .iter()
            .position(|(from, m)| *from == peer && m.order == order && fits(m))
    }

    /// A point-to-point message from world rank `from`.
    pub fn on_p2p(&mut self, from: Rank, msg: Box<P2pMsg>, out: &mut Outbox) -> CallOutcome {
        let Some(from) = self.members.index(from) else {
            return CallOutcome::Pending; // not a member: ignore
        };
        if msg.generation != self.generation {
            return CallOutcome::Pending;
        }
        let state = self.p2p_state();
        match msg.body {
            P2pBody::Ack => {
                let mine = state.active.iter().position(|a| {
                    a.fp.op == OpKind::Send
                        && a.rendezvous
                        && a.peer == from
                        && a.order() == msg.order
                });
                match mine {
                    Some(at) => self.finish(at, None, out),
                    None => CallOutcome::Pending,
                }
            }
            P2pBody::Data { .. } => {
                state.early.push((from, msg));
                // the running recvs from that peer, oldest first: the one whose message it is
                let recvs: Vec<usize> = (0..state.active.len())
                    .filter(|&i| {
                        state.active[i].fp.op == OpKind::Recv && state.active[i].peer == from
                    })
                    .collect();
                for at in recvs {
                    if let Some(k) = self.p2p_match(at) {
                        let (_, msg) = self.p2p_state().early.remove(k);
                        return self.take(at, *msg, out);
                    }
                }
                CallOutcome::Pending
            }
        }
    }

    /// The running recv `at` takes `msg`: its data is the result; a rendezvous sender is told.
    fn take(&mut self, at: usize, msg: P2pMsg, out: &mut Outbox) -> CallOutcome {
        let Some(active) = self.p2p.as_ref().and_then(|p| p.active.get(at)) else {
            return CallOutcome::Pending;
        };
        let peer_rank = active.peer_rank;
        let P2pMsg {
            group,
            generation,
            order,
            body,
        } = msg;
        let P2pBody::Data {
            rendezvous, data, ..
        } = body
        else {
            return CallOutcome::Pending;
        };
        if rendezvous && !self.mutations.contains(Mutation::NoRendezvousAck) {
            let ack = P2pMsg {
                group,
                generation,
                order,
                body: P2pBody::Ack,
            };
            out.send(peer_rank, Msg::P2p(Box::new(ack)), 0);
        }
        self.finish(at, Some(data), out)
    }

    /// The driver reports that the bytes of send `token` have left.
    pub fn on_sent(&mut self, token: SendToken, out: &mut Outbox) -> CallOutcome {
        let mine = self.p2p.as_ref().and_then(|p| {
            p.active.iter().position(|a| {
                a.fp.op == OpKind::Send
                    && !a.rendezvous
                    && a.peer_rank == token.peer
                    && a.order() == token.order
            })
        });
        match mine {
            Some(at) => self.finish(at, None, out),
            None => CallOutcome::Pending,
        }
    }

    /// The running send or recv `at` completed (a recv with the data it took).
    fn finish(&mut self, at: usize, data: Option<Buffer>, out: &mut Outbox) -> CallOutcome {
        let Some(active) = self
            .p2p
            .as_mut()
            .filter(|p| at < p.active.len())
            .map(|p| p.active.remove(at))
        else {
            return CallOutcome::Pending;
        };
        out.cancel_timer(TimerKey::PeerWatchdog {
            group: self.id,
            peer: active.peer_rank,
            order: active.order(),
        });
        out.event(ProtoEvent::Complete {
            group: self.id,
            generation: self.generation,
            seq: active.fp.seq,
            iteration: active.iteration,
            index: active.index,
            result: data.clone().unwrap_or(Buffer::empty(active.fp.dtype)),
        });
        CallOutcome::Completed {
            iteration: active.iteration,
            index: active.index,
            result: data,
        }
    }

    /// The watchdog of the `order`-th send or recv with world rank `peer` fired.
    pub fn on_p2p_watchdog(
        &mut self,
        now: Nanos,
        peer: Rank,
        order: u64,
        out: &mut Outbox,
    ) -> CallOutcome {
        let Some(ws) = self.p2p.as_ref().and_then(|p| {
            p.active
                .iter()
                .find(|a| a.peer_rank == peer && a.order() == order)
                .map(Active::wait_state)
        }) else {
            return CallOutcome::Pending;
        };
        let reason = AbortReason::Watchdog {
            op: ws.op,
            seq: ws.seq,
            waited: now.saturating_sub(ws.since_ns),
            step: ws.step,
            steps: ws.steps,
            waiting_for: ws.waiting_for,
        };
        self.abort_p2p(reason, out);
        out.event(ProtoEvent::FlightRecord {
            entries: self.flight_record(),
        });
        CallOutcome::Aborted
    }

    /// Aborts the running sends and recvs.
    pub(super) fn abort_p2p(&mut self, reason: AbortReason, out: &mut Outbox) {
        let Some(p) = self.p2p.as_mut() else {
            return;
        };
        for active in std::mem::take(&mut p.active) {
            let ws = active.wait_state();
            out.cancel_timer(TimerKey::PeerWatchdog {
                group: self.id,
                peer: active.peer_rank,
                order: active.order(),
            });
            out.event(ProtoEvent::Abort {
                group: self.id,
                generation: self.generation,
                seq: ws.seq,
                step: ws.step,
                steps: ws.steps,
                waiting_for: ws.waiting_for,
                reason: reason.clone(),
            });
        }
    }
}
