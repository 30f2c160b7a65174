//! One node of the group under madsim: a rank's [`RankProcess`] (or the store of a store
//! rendezvous) driven by madsim's clock and network.
//!
//! The node is the engine's dispatch loop in miniature. Inputs (messages, timers firing, the
//! end of a compute phase) arrive on one queue and are handed to the protocol code one at a
//! time; its outputs are carried out in order:
//! - `Send`: the message is held until the time the engine's network model says it arrives
//!   (this rank's send port, latency, bandwidth, `delay` and `loss` faults), then handed to
//!   madsim. Reliable messages travel on a reliable, ordered madsim connection per peer, which
//!   keeps retrying while a link is clogged (as the engine retransmits across a partition);
//!   unreliable ones (heartbeats) are datagrams, lost on a clogged link;
//! - `SetTimer`/`CancelTimer`: a madsim sleep, ignored when cancelled or replaced;
//! - `Compute`: a madsim sleep (longer under a `slow` fault);
//! - `Work`: the node sleeps for the reduction before carrying out the outputs after it, so
//!   nothing new is handed to it meanwhile, as in the engine;
//! - `Event`: reported to the [`Judge`](super::judge::Judge).
//!
//! Kill, restart and pause are madsim's own: a killed node loses every task and socket; a
//! restarted one runs a fresh process with the next incarnation; a paused one is not polled.

use super::judge::Judge;
use crate::engine::faults::FaultSet;
use crate::engine::net::Net;
use crate::engine::Rng;
use crate::proto::elastic::StoreServer;
use crate::proto::{
    Input, Msg, Outbox, Output, ProcConfig, ProtoEvent, Rank, RankProcess, SendToken, TimerKey,
};
use crate::scenario::{Fault, Scenario};
use crate::units::{Bandwidth, Nanos};
use ::madsim::net::{Endpoint, Receiver, Sender};
use ::madsim::task::spawn;
use ::madsim::time::{sleep, sleep_until, Duration, Instant};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// The madsim tag of datagrams between the group's nodes.
const DATAGRAM: u64 = 0x7269_6e67;

/// What every node of one group shares: the configuration, and the judge.
pub(super) struct Shared {
    pub scenario: Scenario,
    pub cfg: Arc<ProcConfig>,
    pub seed: u64,
    /// Virtual time 0 of the group.
    pub epoch: Instant,
    /// Node `i` (rank `i`, or the store after the ranks) has address `base + i + 1`.
    pub base: Ipv4Addr,
    pub port: u16,
    /// Madsim nanoseconds per nanosecond of the protocol's clock (see `GroupOptions::time_scale`).
    pub scale: u64,
    /// Ranks in the world.
    pub world: usize,
    /// The ranks, then the store when there is one.
    pub nodes: usize,
    pub judge: Mutex<Judge>,
}

impl Shared {
    pub fn addr(&self, node: usize) -> SocketAddr {
        SocketAddr::new(self.ip(node).into(), self.port)
    }

    pub fn ip(&self, node: usize) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.base) + node as u32 + 1)
    }

    /// Virtual nanoseconds since the group started.
    pub fn now(&self) -> Nanos {
        // madsim's clock is virtual: this reads simulated time, not the wall clock
        #[allow(clippy::disallowed_methods)]
        let now = Instant::now();
        now.saturating_duration_since(self.epoch).as_nanos() as Nanos / self.scale
    }

    /// The madsim instant of protocol time `t`.
    pub fn at(&self, t: Nanos) -> Instant {
        self.epoch + self.span(t)
    }

    /// The madsim duration of `d` nanoseconds of protocol time.
    pub fn span(&self, d: Nanos) -> Duration {
        Duration::from_nanos(d.saturating_mul(self.scale))
    }

    pub fn judge(&self) -> MutexGuard<'_, Judge> {
        self.judge.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A message as it travels between nodes (madsim carries values, not bytes, in-process).
struct Envelope {
    from: u32,
    msg: Msg,
}

/// A message waiting for the time it is modelled to arrive.
struct Outgoing {
    at: Instant,
    env: Envelope,
    reliable: bool,
}

enum Local {
    Message { from: Rank, msg: Msg },
    Timer { key: TimerKey, token: u64 },
    ComputeDone { token: u64 },
    SendDone { token: SendToken },
}

enum Proc {
    Rank(Box<RankProcess>),
    Store(StoreServer),
}

struct Node {
    shared: Arc<Shared>,
    me: usize,
    proc: Proc,
    ep: Endpoint,
    inbox: UnboundedSender<Local>,
    timers: BTreeMap<TimerKey, u64>,
    compute: Option<u64>,
    next_token: u64,
    /// The engine's network model, for this node's sends.
    net: Net,
    faults: FaultSet,
    rng: Rng,
    reduce_bw: Option<Bandwidth>,
    /// Per peer, the queue of its link task (started on first use).
    links: Vec<Option<UnboundedSender<Outgoing>>>,
}

/// The body of node `me` in its incarnation `incarnation`: binds, waits for the group's
/// start, then runs the process until the node is killed.
pub(super) async fn run(shared: Arc<Shared>, me: usize, incarnation: u32) {
    let addr = shared.addr(me);
    let ep = match Endpoint::bind(addr).await {
        Ok(ep) => ep,
        // another node holds the address: pick another `GroupOptions::base`
        Err(e) => panic!("node {me} of the process group cannot bind {addr}: {e}"),
    };
    let (inbox, mut rx) = unbounded_channel();
    spawn(accept(ep.clone(), inbox.clone()));
    spawn(datagrams(ep.clone(), inbox.clone()));
    hold_until(shared.epoch).await;
    let s = &shared.scenario;
    let proc = if me < shared.world {
        let p = RankProcess::new(shared.cfg.clone(), Rank(me as u32), incarnation);
        Proc::Rank(Box::new(p))
    } else {
        Proc::Store(StoreServer::new(
            shared.cfg.world_members.clone(),
            incarnation,
        ))
    };
    let mut net = Net::new(s);
    if shared.nodes > shared.world {
        net.add_node();
    }
    let mut node = Node {
        me,
        proc,
        ep,
        inbox,
        timers: BTreeMap::new(),
        compute: None,
        next_token: 0,
        net,
        faults: FaultSet::new(&s.faults),
        // one stream per node and incarnation, all derived from the run's seed
        rng: Rng::new(shared.seed ^ ((me as u64 + 1) << 32) ^ u64::from(incarnation)),
        reduce_bw: s.network.reduce_bandwidth,
        links: (0..shared.nodes).map(|_| None).collect(),
        shared,
    };
    node.shared.judge().started(me, incarnation);
    if matches!(node.proc, Proc::Rank(_)) {
        node.input(Input::Start).await;
    }
    while let Some(ev) = rx.recv().await {
        node.on(ev).await;
    }
}

impl Node {
    async fn on(&mut self, ev: Local) {
        let input = match ev {
            Local::Message { from, msg } => Input::Message { from, msg },
            Local::Timer { key, token } => {
                if self.timers.get(&key) != Some(&token) {
                    return; // cancelled or replaced
                }
                self.timers.remove(&key);
                Input::Timer(key)
            }
            Local::ComputeDone { token } => {
                if self.compute != Some(token) {
                    return;
                }
                self.compute = None;
                Input::ComputeDone
            }
            Local::SendDone { token } => Input::SendDone(token),
        };
        self.input(input).await;
    }

    /// Hands `input` to the process and carries out what it asks for.
    async fn input(&mut self, input: Input) {
        if self.shared.judge().stopped() {
            return;
        }
        let now = self.shared.now();
        let mut out = Outbox::new();
        match (&mut self.proc, input) {
            (Proc::Rank(p), input) => p.handle(now, input, &mut out),
            (Proc::Store(s), Input::Message { from, msg }) => s.handle(from, msg, &mut out),
            (Proc::Store(_), _) => return,
        }
        // the last send carried out: (to, bytes, when it departed), for `NotifySent`
        let mut last = (0, 0, 0);
        for o in out.drain() {
            match o {
                Output::Send {
                    to,
                    msg,
                    bytes,
                    reliable,
                } => last = (to.0, bytes, self.send(to, msg, bytes, reliable)),
                Output::NotifySent { token } => {
                    let (to, bytes, depart) = last;
                    let at = self.net.sent_at(depart, self.me as u32, to, bytes);
                    let when = self.shared.at(at);
                    let inbox = self.inbox.clone();
                    spawn(async move {
                        hold_until(when).await;
                        let _ = inbox.send(Local::SendDone { token });
                    });
                }
                o => self.apply(o).await,
            }
        }
        if let Proc::Rank(p) = &self.proc {
            let now = self.shared.now();
            self.shared.judge().after_input(self.me, p, now);
        }
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// Brings the time-dependent faults (delay, loss, slow) up to `now`.
    fn sync_faults(&mut self, now: Nanos) {
        for (i, f) in self.shared.scenario.faults.iter().enumerate() {
            if matches!(
                f,
                Fault::Delay { .. } | Fault::Loss { .. } | Fault::Slow { .. }
            ) {
                let on = f
                    .at()
                    .is_some_and(|at| at.0 <= now && f.duration().is_none_or(|d| now < at.0 + d.0));
                self.faults.set_active(i, on);
            }
        }
    }

    async fn apply(&mut self, o: Output) {
        match o {
            Output::Send {
                to,
                msg,
                bytes,
                reliable,
            } => {
                self.send(to, msg, bytes, reliable);
            }
            // carried out in `input`, which knows the send before it
            Output::NotifySent { .. } => {}
            Output::SetTimer { key, at } => {
                let token = self.token();
                self.timers.insert(key, token);
                let inbox = self.inbox.clone();
                let when = self.shared.at(at);
                spawn(async move {
                    hold_until(when).await;
                    let _ = inbox.send(Local::Timer { key, token });
                });
            }
            Output::CancelTimer { key } => {
                self.timers.remove(&key);
            }
            Output::Compute { duration } => {
                self.sync_faults(self.shared.now());
                let factor = self.faults.slow_factor(self.me as u32);
                let d = if factor == 1.0 {
                    duration
                } else {
                    (duration as f64 * factor).round() as Nanos
                };
                let token = self.token();
                self.compute = Some(token);
                let inbox = self.inbox.clone();
                let d = self.shared.span(d);
                spawn(async move {
                    sleep(d).await;
                    let _ = inbox.send(Local::ComputeDone { token });
                });
            }
            Output::Work { bytes } => {
                if let Some(bw) = self.reduce_bw {
                    let d = bw.transfer_ns(bytes);
                    if d > 0 {
                        sleep(self.shared.span(d)).await;
                    }
                }
            }
            Output::Event(pe) => {
                let now = self.shared.now();
                self.shared.judge().event(self.me, *pe, now);
            }
            Output::Step(s) => {
                let now = self.shared.now();
                self.shared.judge().event(self.me, ProtoEvent::Step(s), now);
            }
        }
    }

    /// Plans a send with the engine's network model and queues it on the peer's link; returns
    /// when it departs.
    fn send(&mut self, to: Rank, msg: Msg, bytes: u64, reliable: bool) -> Nanos {
        let now = self.shared.now();
        let from = self.me as u32;
        self.sync_faults(now);
        let mut extra = self.faults.extra_delay(from, to.0, &mut self.rng);
        if self.net.jitter > 0 {
            extra += self.rng.up_to(self.net.jitter);
        }
        let rate = self.faults.loss_rate(from, to.0);
        if rate > 0.0 {
            if !reliable {
                if self.rng.unit() < rate {
                    return now;
                }
            } else {
                // each loss costs a retransmit timeout (bounded, should every attempt fail)
                for _ in 0..64 {
                    if self.rng.unit() >= rate {
                        break;
                    }
                    extra += self.net.retransmit;
                }
            }
        }
        let Some(link) = self.links.get_mut(to.idx()) else {
            return now;
        };
        let timing = self.net.send(now, from, to.0, bytes, extra);
        let at = self.shared.at(timing.arrive);
        let q = link.get_or_insert_with(|| {
            let (tx, rx) = unbounded_channel();
            spawn(carry(self.shared.clone(), self.ep.clone(), to.idx(), rx));
            tx
        });
        let _ = q.send(Outgoing {
            at,
            env: Envelope { from, msg },
            reliable,
        });
        self.shared.judge().sent(1);
        timing.depart
    }
}

/// The link to node `to`: hands each message to madsim at its modelled arrival time, in order.
async fn carry(shared: Arc<Shared>, ep: Endpoint, to: usize, mut q: UnboundedReceiver<Outgoing>) {
    let dst = shared.addr(to);
    let mut conn: Option<(Sender, Receiver)> = None;
    while let Some(o) = q.recv().await {
        hold_until(o.at).await;
        if !o.reliable {
            let _ = ep.send_to_raw(dst, DATAGRAM, Box::new(o.env)).await;
            continue;
        }
        if conn.as_ref().is_some_and(|(tx, _)| tx.is_closed()) {
            conn = None; // the peer died: its next incarnation needs a new connection
        }
        let mut backoff = shared.span(shared.scenario.network.retransmit_timeout.0);
        while conn.is_none() {
            conn = ep.connect1(dst).await.ok();
            // refused: a dead peer (the message is lost, as a live process's would be when the
            // receiver dies), or a clogged link (try again, as TCP's SYN is retransmitted)
            if conn.is_none() {
                if !shared.judge().alive(to) {
                    break;
                }
                sleep(backoff).await;
                backoff = (backoff * 2).min(shared.span(1_000_000_000));
            }
        }
        if let Some((tx, _)) = &conn {
            let _ = tx.send(Box::new(o.env)).await;
        }
    }
}

/// Sleeps until `t`, unless it has passed (madsim sleeps at least 1 ms even then).
async fn hold_until(t: Instant) {
    #[allow(clippy::disallowed_methods)] // madsim's clock is virtual
    let now = Instant::now();
    if t > now {
        sleep_until(t).await;
    }
}

/// Accepts the connections of peers and reads their messages into the inbox.
async fn accept(ep: Endpoint, inbox: UnboundedSender<Local>) {
    while let Ok((tx, mut rx, _)) = ep.accept1().await {
        let inbox = inbox.clone();
        spawn(async move {
            let _reply = tx;
            while let Ok(p) = rx.recv().await {
                if !deliver(p, &inbox) {
                    return;
                }
            }
        });
    }
}

/// Reads datagrams (heartbeats) into the inbox.
async fn datagrams(ep: Endpoint, inbox: UnboundedSender<Local>) {
    while let Ok((p, _)) = ep.recv_from_raw(DATAGRAM).await {
        if !deliver(p, &inbox) {
            return;
        }
    }
}

/// Puts a received envelope in the inbox; false once the node's loop is gone.
fn deliver(p: Box<dyn std::any::Any + Send + Sync>, inbox: &UnboundedSender<Local>) -> bool {
    match p.downcast::<Envelope>() {
        Ok(env) => {
            let Envelope { from, msg } = *env;
            let from = Rank(from);
            inbox.send(Local::Message { from, msg }).is_ok()
        }
        Err(_) => true,
    }
}
