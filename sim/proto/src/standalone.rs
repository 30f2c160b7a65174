//! A standalone executor of sans-IO ranks: a few state machines — this crate's
//! [`RankProcess`](crate::process::RankProcess), a [`Registry`](crate::registry::Registry) node, one
//! [`Collective`](crate::collective::Collective), or a protocol of one's own — run against
//! each other on an in-memory network in exact virtual time, without the engine, its traces or
//! its fault model. It is how the protocols' own tests run them, and how a library user tries
//! a state machine before running it under faults on the engine.
//!
//! A state machine takes part by implementing [`Node`]: it is handed `(now, input)` and pushes
//! what it wants done into an [`Outbox`], as every protocol of this crate does. [`Standalone`]
//! carries out the outbox:
//!
//! - **messages** (`Output::Send`) leave the sender's port in the order sent, each holding it
//!   for `bytes / bandwidth`; a message reaches its receiver [`Network::latency`] after it
//!   left, then holds the receiver's port for `bytes / bandwidth` (messages take the port in
//!   the order they arrive) and is handed over as `Input::Message` when that is done. Without
//!   contention a message thus costs `latency + bytes / bandwidth`; with the bandwidth
//!   unbounded (`bytes_per_ns = 0`) it is handed over exactly `latency` after it was sent, and
//!   messages sent at one instant arrive in the order sent. Reliable and unreliable sends are
//!   alike: nothing is lost but what a cut drops.
//! - **timers** (`Output::SetTimer`) fire as `Input::Timer` at their time; setting a key again
//!   replaces its timer, `Output::CancelTimer` cancels it.
//! - **compute** (`Output::Compute`) is answered with `Input::ComputeDone` after its duration,
//!   and `Output::NotifySent` with `Input::SendDone` when the bytes of the send before it have
//!   left. Local reduction work (`Output::Work`) is not charged.
//! - **events** (`Output::Event`, `Output::Step`) are kept in order, with their time and rank
//!   ([`Standalone::events`]).
//!
//! Two disturbances, for the tests of membership protocols: [`Standalone::isolate`] cuts a set
//! of ranks off from the others (messages between the two sides are dropped when sent, until
//! [`Standalone::heal`]), and [`Standalone::stop`] takes a rank out for good (it handles
//! nothing more; what is due to it is dropped).
//!
//! Determinism: a run is a pure function of the nodes and the calls made on the executor.
//! Events due at the same instant are handled in the order they were scheduled; ranks are
//! started in rank order at time 0.

use crate::event::{Outbox, Output, ProtoEvent};
use crate::msg::Msg;
use crate::process::Input;
use crate::time::Nanos;
use crate::types::{Rank, TimerKey};
use std::collections::{BTreeMap, BTreeSet};

/// What [`Standalone`] drives: rank `r` of an executor is its `r`-th node.
pub use crate::node::Node;

/// The network of a standalone run: one latency for every message, one bandwidth for every
/// rank's send port and receive port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    /// From a message leaving its sender to its first byte reaching the receiver, in ns.
    pub latency: Nanos,
    /// Bytes per nanosecond of each port; 0 means unbounded (a message takes no port time).
    pub bytes_per_ns: u64,
}

impl Network {
    /// Everything at once: no latency, unbounded bandwidth; messages arrive in the order sent.
    pub const INSTANT: Network = Network {
        latency: 0,
        bytes_per_ns: 0,
    };

    /// A fixed latency and unbounded bandwidth.
    pub const fn latency(latency: Nanos) -> Network {
        Network {
            latency,
            bytes_per_ns: 0,
        }
    }

    /// How long `bytes` hold a port.
    fn wire(&self, bytes: u64) -> Nanos {
        if self.bytes_per_ns == 0 {
            0
        } else {
            bytes.div_ceil(self.bytes_per_ns)
        }
    }
}

/// Something due at a time.
enum Due {
    /// A message reaches its receiver, which starts taking it in (bounded bandwidth only).
    Arrive {
        from: Rank,
        to: Rank,
        msg: Msg,
        bytes: u64,
    },
    /// An input for `to`: a message taken in, a compute phase or a send done.
    Input { to: Rank, input: Input },
    /// A timer of `rank`; it fires if it is still the live timer of its key.
    Timer { rank: Rank, key: TimerKey },
}

/// Runs [`Node`]s against each other on an in-memory network (see the module doc).
pub struct Standalone<N> {
    nodes: Vec<Option<N>>,
    net: Network,
    now: Nanos,
    /// What is due, by (time, order of scheduling).
    queue: BTreeMap<(Nanos, u64), Due>,
    scheduled: u64,
    /// The live timer of each (rank, key): the order it was scheduled in.
    timers: BTreeMap<(Rank, TimerKey), u64>,
    /// When each rank's send port and receive port are free.
    send_free: Vec<Nanos>,
    recv_free: Vec<Nanos>,
    isolated: BTreeSet<Rank>,
    events: Vec<(Nanos, Rank, ProtoEvent)>,
    sent: u64,
    handled: u64,
    out: Outbox,
}

impl<N: Node> Standalone<N> {
    /// An executor whose rank `r` is `nodes[r]`, each started (`Input::Start`) at time 0 in
    /// rank order.
    pub fn new(nodes: Vec<N>, net: Network) -> Standalone<N> {
        let n = nodes.len();
        let mut s = Standalone {
            nodes: nodes.into_iter().map(Some).collect(),
            net,
            now: 0,
            queue: BTreeMap::new(),
            scheduled: 0,
            timers: BTreeMap::new(),
            send_free: vec![0; n],
            recv_free: vec![0; n],
            isolated: BTreeSet::new(),
            events: Vec::new(),
            sent: 0,
            handled: 0,
            out: Outbox::new(),
        };
        for r in 0..n as u32 {
            s.deliver(Rank(r), Input::Start);
        }
        s
    }

    /// Handles everything due at or before `end`, then sets the time to `end` (if it is
    /// later).
    pub fn run_until(&mut self, end: Nanos) {
        while self
            .queue
            .first_key_value()
            .is_some_and(|(k, _)| k.0 <= end)
        {
            self.step();
        }
        self.now = self.now.max(end);
    }

    /// Handles what is due until nothing is left, or `max_events` more were handled; true
    /// when nothing is left (a node that sets timers forever never lets a run end).
    pub fn run(&mut self, max_events: u64) -> bool {
        let stop = self.handled.saturating_add(max_events);
        while self.handled < stop {
            if !self.step() {
                return true;
            }
        }
        self.queue.is_empty()
    }

    /// Handles the next thing due, if any: false when nothing is.
    pub fn step(&mut self) -> bool {
        let Some(((at, order), due)) = self.queue.pop_first() else {
            return false;
        };
        self.now = at;
        match due {
            Due::Arrive {
                from,
                to,
                msg,
                bytes,
            } => {
                // the receiver's port takes messages in the order they arrive
                let port = &mut self.recv_free[to.idx()];
                *port = at.max(*port) + self.net.wire(bytes);
                let done = *port;
                self.schedule(
                    done,
                    Due::Input {
                        to,
                        input: Input::Message { from, msg },
                    },
                );
            }
            Due::Input { to, input } => self.deliver(to, input),
            Due::Timer { rank, key } => {
                if self.timers.get(&(rank, key)) == Some(&order) {
                    self.timers.remove(&(rank, key));
                    self.deliver(rank, Input::Timer(key));
                }
            }
        }
        true
    }

    /// The current virtual time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Rank `r`'s node, unless it was stopped.
    pub fn node(&self, r: Rank) -> Option<&N> {
        self.nodes.get(r.idx())?.as_ref()
    }

    /// Rank `r`'s node, unless it was stopped.
    pub fn node_mut(&mut self, r: Rank) -> Option<&mut N> {
        self.nodes.get_mut(r.idx())?.as_mut()
    }

    /// Every node, by rank (`None` for a stopped one).
    pub fn nodes(&self) -> &[Option<N>] {
        &self.nodes
    }

    /// The nodes as they stand, by rank (`None` for a stopped one).
    pub fn into_nodes(self) -> Vec<Option<N>> {
        self.nodes
    }

    /// Takes rank `r` out for good, as a crash does: it handles nothing more, and what is
    /// due to it is dropped. Returns its node as it stood.
    pub fn stop(&mut self, r: Rank) -> Option<N> {
        self.nodes.get_mut(r.idx())?.take()
    }

    /// Cuts `ranks` off from the other ranks, both ways: messages sent between the two sides
    /// from now on are dropped (messages already on their way still arrive).
    pub fn isolate(&mut self, ranks: &[Rank]) {
        self.isolated = ranks.iter().copied().collect();
    }

    /// Undoes [`Standalone::isolate`].
    pub fn heal(&mut self) {
        self.isolated.clear();
    }

    /// The events the nodes reported, in order: (time, rank, event).
    pub fn events(&self) -> &[(Nanos, Rank, ProtoEvent)] {
        &self.events
    }

    /// Messages sent so far (those a cut dropped included).
    pub fn messages(&self) -> u64 {
        self.sent
    }

    /// Inputs handed to nodes so far (starts included).
    pub fn handled(&self) -> u64 {
        self.handled
    }

    /// Nothing is left to happen.
    pub fn idle(&self) -> bool {
        self.queue.is_empty()
    }

    fn schedule(&mut self, at: Nanos, due: Due) -> u64 {
        let order = self.scheduled;
        self.scheduled += 1;
        self.queue.insert((at, order), due);
        order
    }

    /// Hands `input` to rank `to` now and carries out what it asks for.
    fn deliver(&mut self, to: Rank, input: Input) {
        let Some(node) = self.nodes.get_mut(to.idx()).and_then(Option::as_mut) else {
            return; // stopped
        };
        self.handled += 1;
        let mut out = std::mem::take(&mut self.out);
        node.handle(self.now, input, &mut out);
        for o in out.drain() {
            self.carry(to, o);
        }
        self.out = out;
    }

    /// Carries out one output of rank `me`.
    fn carry(&mut self, me: Rank, o: Output) {
        let now = self.now;
        match o {
            Output::Send { to, msg, bytes, .. } => {
                self.sent += 1;
                if to.idx() >= self.nodes.len()
                    || self.isolated.contains(&me) != self.isolated.contains(&to)
                {
                    return;
                }
                let port = &mut self.send_free[me.idx()];
                let depart = now.max(*port);
                *port = depart + self.net.wire(bytes);
                let at = depart + self.net.latency;
                let due = if self.net.bytes_per_ns == 0 {
                    Due::Input {
                        to,
                        input: Input::Message { from: me, msg },
                    }
                } else {
                    Due::Arrive {
                        from: me,
                        to,
                        msg,
                        bytes,
                    }
                };
                self.schedule(at, due);
            }
            Output::SetTimer { key, at } => {
                let order = self.schedule(at.max(now), Due::Timer { rank: me, key });
                self.timers.insert((me, key), order);
            }
            Output::CancelTimer { key } => {
                self.timers.remove(&(me, key));
            }
            Output::NotifySent { token } => {
                let left = self.send_free[me.idx()].max(now);
                self.schedule(
                    left,
                    Due::Input {
                        to: me,
                        input: Input::SendDone(token),
                    },
                );
            }
            Output::Compute { duration } => {
                self.schedule(
                    now.saturating_add(duration),
                    Due::Input {
                        to: me,
                        input: Input::ComputeDone,
                    },
                );
            }
            Output::Work { .. } => {}
            Output::Event(e) => self.events.push((now, me, *e)),
            Output::Step(s) => self.events.push((now, me, ProtoEvent::Step(s))),
        }
    }
}

#[cfg(test)]
mod tests;
