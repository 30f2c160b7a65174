//! Messages on their way: a rank's send goes through the network model (and the faults on its
//! link) into the queue; it is delivered, lost and sent again, or dropped because its sender or
//! receiver died.

use super::{Engine, Ev};
use crate::proto::{Input, Msg, Rank};
use crate::trace::{Event, Recorder, Sent};
use crate::units::{later, Nanos};

/// Why a message was lost; the trace's `drop` events name it (`DropReason::as_str`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// A partition cuts the link (a reliable message is sent again).
    Partition,
    /// A `loss` fault took it (a reliable message is sent again).
    Loss,
    /// The sender died before it arrived.
    SenderDied,
    /// The receiver died (or restarted) before it arrived.
    ReceiverDied,
}

impl DropReason {
    /// As traces write it.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Partition => "partition",
            DropReason::Loss => "loss",
            DropReason::SenderDied => "sender died",
            DropReason::ReceiverDied => "receiver died",
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message on its way.
#[derive(Debug)]
pub(super) struct Flight {
    id: u64,
    from: u32,
    pub(super) to: u32,
    pub(super) msg: Msg,
    bytes: u64,
    reliable: bool,
    from_inc: u32,
    to_inc: u32,
    /// Already through the receive port.
    received: bool,
    /// A resend that can never arrive (see [`Engine::doomed`]), counted there.
    doomed: bool,
}

/// Resends of a message that can never arrive simulated one by one before the rest are skipped.
const DOOMED_RESENDS_SIMULATED: u64 = 1_000;
/// Other events in the queue beyond which no skip is looked for (the scan is linear).
const DOOMED_SCAN_MAX: usize = 4_096;

impl<R: Recorder + ?Sized> Engine<'_, R> {
    /// Carries out `rank`'s `Output::Send`; returns when the message departs.
    #[inline(always)]
    pub(super) fn send(
        &mut self,
        rank: u32,
        to: Rank,
        msg: Msg,
        bytes: u64,
        reliable: bool,
    ) -> Nanos {
        let id = self.next_msg;
        self.next_msg += 1;
        let from_inc = self.incarnations[rank as usize];
        let to_inc = self.incarnations.get(to.idx()).copied().unwrap_or(0);
        self.stats.messages_sent += 1;
        self.transmit(id, rank, to.0, msg, bytes, reliable, from_inc, to_inc)
    }

    #[inline(always)]
    fn record_send(&mut self, s: &Sent<'static>) {
        self.stats.events += 1;
        self.rec.send(self.now, s);
    }

    /// [`Engine::record_send`] of every message but a chunk.
    #[inline(never)]
    fn record_other_send(&mut self, s: &Sent<'static>) {
        self.record_send(s);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn transmit(
        &mut self,
        id: u64,
        from: u32,
        to: u32,
        msg: Msg,
        bytes: u64,
        reliable: bool,
        from_inc: u32,
        to_inc: u32,
    ) -> Nanos {
        let mut extra = 0;
        let mut lost = None;
        if self.faults.has_active_net() {
            if self.faults.partitioned(from, to) {
                lost = Some(DropReason::Partition);
            } else {
                let rate = self.faults.loss_rate(from, to);
                if rate > 0.0 && self.rng.unit() < rate {
                    lost = Some(DropReason::Loss);
                }
            }
            extra = later(extra, self.faults.extra_delay(from, to, &mut self.rng));
        }
        if self.net.jitter > 0 {
            extra = later(extra, self.rng.up_to(self.net.jitter));
        }
        let timing = self.net.send(self.now, from, to, bytes, extra);
        if self.record {
            let sent = |msg, seq, step| Sent {
                id,
                from,
                to,
                bytes,
                msg,
                seq,
                step,
                arrive_ns: timing.arrive,
            };
            match &msg {
                // a chunk, the commonest message: its kind and which fields it has are
                // constants here, so what records it takes no branch on them
                Msg::Coll(m) => self.record_send(&sent("coll", Some(m.fp.seq.0), Some(m.step))),
                Msg::P2p(m) => self.record_other_send(&sent(msg.kind(), Some(m.order), None)),
                Msg::Elastic(_) | Msg::Registry(_) | Msg::Node(_) => {
                    self.record_other_send(&sent(msg.kind(), None, None))
                }
            }
        }
        let flight = move || Flight {
            id,
            from,
            to,
            msg,
            bytes,
            reliable,
            from_inc,
            to_inc,
            received: false,
            doomed: false,
        };
        match lost {
            None => self.push_with(timing.arrive, || Ev::Deliver(flight())),
            Some(reason) => self.lose(flight(), reason, timing.depart),
        }
        timing.depart
    }

    /// A lost reliable message is sent again (unless its sender died meanwhile).
    pub(super) fn resend(&mut self, f: Flight) {
        self.doomed -= usize::from(f.doomed);
        let Flight {
            id,
            from,
            to,
            msg,
            bytes,
            reliable,
            from_inc,
            to_inc,
            ..
        } = f;
        if self.incarnations[from as usize] != from_inc {
            return; // the sender died: nobody resends
        }
        self.transmit(id, from, to, msg, bytes, reliable, from_inc, to_inc);
    }

    /// A message is lost on the wire: resent after the retransmit timeout if reliable.
    fn lose(&mut self, mut f: Flight, reason: DropReason, at: Nanos) {
        self.stats.messages_dropped += 1;
        if self.record {
            self.emit(Event::Drop {
                id: f.id,
                from: f.from,
                to: f.to,
                reason: reason.as_str().into(),
                retransmit: f.reliable,
            });
        }
        if f.reliable {
            let when = later(at.max(self.now), self.net.retransmit);
            f.doomed = reason == DropReason::Partition && self.pending_faults == 0;
            self.doomed += usize::from(f.doomed);
            let when = if f.doomed {
                self.skip_doomed(when)
            } else {
                when
            };
            self.push(when, Ev::Resend(f));
        }
    }

    /// When a resend that can never arrive, due at `when`, next needs to happen: each one only
    /// drops again, so when nothing else is due for more than [`DOOMED_RESENDS_SIMULATED`]
    /// retransmit timeouts (a permanent partition under a watchdog of hours), the resends in
    /// between are skipped, and it is sent again just before the next event that can change
    /// anything (or the time limit).
    fn skip_doomed(&self, when: Nanos) -> Nanos {
        let others = self.queue.len() - (self.doomed - 1);
        if others > DOOMED_SCAN_MAX {
            return when;
        }
        let next = self
            .queue
            .earliest_but(|ev| matches!(ev, Ev::Resend(f) if f.doomed));
        let Some(next) = [next, self.time_limit.map(|l| l.saturating_add(1))]
            .into_iter()
            .flatten()
            .min()
        else {
            return when; // only lost messages are left: the run is over (see `Engine::step`)
        };
        let period = self.net.retransmit;
        let periods = next.saturating_sub(when) / period;
        if periods <= DOOMED_RESENDS_SIMULATED {
            return when;
        }
        // the last resend before `next`, on the same schedule
        later(when, (periods - 1).saturating_mul(period))
    }

    #[inline(always)]
    pub(super) fn deliver(&mut self, mut f: Flight) {
        let from_alive = self.incarnations[f.from as usize] == f.from_inc;
        let to_slot = &self.slots[f.to as usize];
        let drop_reason = if !from_alive {
            Some(DropReason::SenderDied)
        } else if self.incarnations[f.to as usize] != f.to_inc || !to_slot.alive() {
            Some(DropReason::ReceiverDied)
        } else {
            None
        };
        if let Some(reason) = drop_reason {
            self.stats.messages_dropped += 1;
            if self.record {
                self.emit(Event::Drop {
                    id: f.id,
                    from: f.from,
                    to: f.to,
                    reason: reason.as_str().into(),
                    retransmit: false,
                });
            }
            return;
        }
        if !f.received {
            if self.faults.has_active_net() && self.faults.partitioned(f.from, f.to) {
                let now = self.now;
                return self.lose(f, DropReason::Partition, now);
            }
            let done = self.net.receive(f.from, f.to, self.now, f.bytes);
            f.received = true;
            if done > self.now {
                self.push(done, Ev::Deliver(f));
                return;
            }
        }
        let slot = &self.slots[f.to as usize];
        if slot.paused || self.now < slot.cpu_free || slot.held > 0 {
            let to = f.to;
            self.defer(to, Ev::Deliver(f));
            return;
        }
        self.stats.messages_delivered += 1;
        if self.record {
            self.stats.events += 1;
            self.rec.deliver(self.now, f.id, f.from, f.to);
        }
        self.input(
            f.to,
            Input::Message {
                from: Rank(f.from),
                msg: f.msg,
            },
        );
    }
}
