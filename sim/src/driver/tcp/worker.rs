//! One worker: a rank's (or the store's) protocol code driven by real sockets and timers.
//!
//! The process registers with `launch` on the control channel, learns every peer's address,
//! waits for the job's clock to start, and then runs one loop: whatever comes first of a
//! message from a peer, a due timer or the end of a compute phase is handed to the state
//! machine, whose outputs are carried out at once (sends go to a per-peer writer task, timers
//! into a deadline table). Every step is written to the worker's own trace file, flushed after
//! each input so that a killed process leaves everything it did. A real run knows no modeled
//! arrival time: a `send` event's `arrive_ns` is its own time. Message ids are unique across
//! the job: `rank << 48 | incarnation << 40 | counter`.

use super::ahead::Ahead;
use super::auth::{self, Channel, Claim};
pub use super::config::WorkerConfig;
use super::control::{self, Standing, ToLaunch, ToWorker};
use super::peers::{accept, log, write_peer, Inbound, Opener, Table};
use super::wire::{self, Envelope, Frame};
use super::Clock;
use crate::observe::Observer;
use crate::proto::elastic::{Phase, StoreServer};
use crate::proto::mutation::Mutations;
use crate::proto::{
    Input, Msg, Outbox, Output, ProtoEvent, Rank, RankProcess, RankStatus, SendToken, TimerKey,
};
use crate::scenario::{Fault, Scenario};
use crate::trace::{encode_line, timer_fields, Event};
use crate::units::Nanos;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

enum Node {
    Rank(Box<RankProcess>),
    Store(StoreServer),
}

/// Runs a worker to the end; errors are setup failures (the rendezvous cannot be reached).
pub fn run(cfg: WorkerConfig) -> io::Result<()> {
    super::gate::raise_open_files();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(main(cfg))
}

async fn main(cfg: WorkerConfig) -> io::Result<()> {
    let proc_cfg = Arc::new(crate::scenario::resolve::workload(
        &cfg.scenario,
        cfg.seed,
        Mutations::NONE,
    ));
    let nodes = super::nodes(&cfg.scenario);
    let listener = TcpListener::bind((cfg.bind, 0)).await?;
    let port = listener.local_addr()?.port();
    let mut ctl = TcpStream::connect(cfg.rendezvous).await?;
    let claim = cfg.claim(Channel::Control);
    auth::prove(&mut ctl, &cfg.key, claim)
        .await
        .map_err(|e| io::Error::other(format!("the rendezvous {}: {e}", cfg.rendezvous)))?;
    let (ctl_read, mut ctl_write) = ctl.into_split();
    ctl_write
        .write_all(&control::line(&ToLaunch::Hello {
            job: cfg.job,
            rank: cfg.rank,
            incarnation: cfg.incarnation,
            port,
        }))
        .await?;
    let table: Table = Arc::new(Mutex::new(vec![None; nodes as usize]));
    let (ctl_tx, mut ctl_rx) = mpsc::unbounded_channel();
    tokio::spawn(read_control(ctl_read, ctl_tx));
    // wait for the clock; the table comes first
    let epoch = loop {
        match ctl_rx.recv().await {
            Some(ToWorker::Table { addrs }) => set_table(&table, &addrs),
            Some(ToWorker::Start { epoch_unix_ns }) => break epoch_unix_ns,
            Some(ToWorker::Stop { .. }) | None => return Ok(()),
        }
    };
    let clock = Clock::from_unix_epoch(epoch, cfg.scale);
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let ahead = Ahead::new(nodes);
    tokio::spawn(accept(
        listener,
        in_tx,
        cfg.clone(),
        proc_cfg.clone(),
        ahead.clone(),
        nodes,
    ));
    tokio::time::sleep_until(clock.instant(0)).await;
    let file = File::create(&cfg.trace).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", cfg.trace.display()),
        )
    })?;
    let node = if cfg.rank < cfg.scenario.world.size {
        Node::Rank(Box::new(RankProcess::new(
            proc_cfg.clone(),
            Rank(cfg.rank),
            cfg.incarnation,
        )))
    } else {
        Node::Store(StoreServer::new(
            proc_cfg.world_members.clone(),
            cfg.incarnation,
        ))
    };
    let mut w = Worker {
        writers: (0..nodes).map(|_| None).collect(),
        observer: Observer::new(proc_cfg, cfg.seed, nodes as usize),
        cfg,
        clock,
        table,
        node,
        trace: io::BufWriter::new(file),
        line: Vec::new(),
        timers: BTreeMap::new(),
        compute_until: None,
        sent: Vec::new(),
        next_id: 0,
        watchdog: false,
        standing: None,
        ctl: ctl_write,
        ahead,
        waiting: Vec::new(),
        calls_seen: 0,
    };
    w.run(in_rx, ctl_rx).await
}

impl WorkerConfig {
    /// What this process's connections prove they speak for.
    fn claim(&self, channel: Channel) -> Claim {
        Claim {
            channel,
            job: self.job,
            rank: self.rank,
            incarnation: self.incarnation,
        }
    }
}

fn set_table(table: &Table, addrs: &[Option<String>]) {
    let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
    for (slot, a) in t.iter_mut().zip(addrs) {
        *slot = a.as_deref().and_then(|a| a.parse().ok());
    }
}

async fn read_control(read: tokio::net::tcp::OwnedReadHalf, tx: mpsc::UnboundedSender<ToWorker>) {
    let mut reader = BufReader::new(read);
    let mut buf = String::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(control::MAX_LINE as u64)
            .read_line(&mut buf)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_str::<ToWorker>(buf.trim_end()) else {
            eprintln!("worker: ignoring a malformed control line");
            continue;
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

struct Worker {
    cfg: WorkerConfig,
    clock: Clock,
    table: Table,
    node: Node,
    writers: Vec<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    trace: io::BufWriter<File>,
    line: Vec<u8>,
    timers: BTreeMap<TimerKey, Nanos>,
    compute_until: Option<Nanos>,
    /// Sends whose process asked to be told their bytes left: they have, once their frame is
    /// handed to the connection's writer.
    sent: Vec<SendToken>,
    next_id: u64,
    /// Trace events, result checks and the watchdog, as the engine sees them.
    observer: Observer,
    /// This rank's watchdog fired (it dumped its flight recorder then).
    watchdog: bool,
    standing: Option<Standing>,
    ctl: tokio::net::tcp::OwnedWriteHalf,
    /// This rank's calls, against which chunks from peers count as far ahead.
    ahead: Ahead,
    /// Chunks for calls far ahead, in arrival order, until this rank's calls catch up.
    waiting: Vec<Inbound>,
    /// How many calls this rank had issued when `waiting` was last looked through.
    calls_seen: u64,
}

impl Worker {
    async fn run(
        &mut self,
        mut inbound: mpsc::UnboundedReceiver<Inbound>,
        mut ctl: mpsc::UnboundedReceiver<ToWorker>,
    ) -> io::Result<()> {
        self.record(
            self.clock.now(),
            &Event::ProcessStart {
                rank: self.cfg.rank,
                incarnation: self.cfg.incarnation,
            },
        );
        self.input(Input::Start);
        self.after_input().await;
        loop {
            let next = self
                .timers
                .values()
                .copied()
                .chain(self.compute_until)
                .min();
            let wake = self.clock.instant(next.unwrap_or(0));
            tokio::select! {
                c = ctl.recv() => match c {
                    Some(ToWorker::Table { addrs }) => set_table(&self.table, &addrs),
                    Some(ToWorker::Stop { dump, at }) => return self.stop(dump, at),
                    Some(ToWorker::Start { .. }) => {}
                    None => return self.stop(false, 0),
                },
                Some(m) = inbound.recv() => self.deliver(m),
                _ = tokio::time::sleep_until(wake), if next.is_some() => self.fire(),
            }
            self.after_input().await;
        }
    }

    /// Hands a peer's message to the process, unless it is for a call far ahead of this
    /// rank: then it waits (see [`super::ahead`]). Every input may let waiting chunks in.
    fn deliver(&mut self, m: Inbound) {
        // this rank's calls only move on: what was not ahead when read is not ahead now
        if m.held > 0 && self.ahead.is_ahead(&m.msg) {
            self.waiting.push(m);
            return;
        }
        self.ahead.release(m.from, m.held);
        self.record(
            self.clock.now(),
            &Event::Deliver {
                id: m.id,
                from: m.from,
                to: self.cfg.rank,
            },
        );
        self.input(Input::Message {
            from: Rank(m.from),
            msg: m.msg,
        });
    }

    /// Hands over the waiting chunks whose calls this rank has reached, oldest first.
    fn catch_up(&mut self) {
        if self.waiting.is_empty() || self.calls_seen == self.ahead.calls() {
            return;
        }
        self.calls_seen = self.ahead.calls();
        while let Some(k) = self
            .waiting
            .iter()
            .position(|m| !self.ahead.is_ahead(&m.msg))
        {
            let m = self.waiting.remove(k);
            self.deliver(m);
        }
    }

    /// Hands the earliest due timer (or the end of compute) to the process.
    fn fire(&mut self) {
        let now = self.clock.now();
        let timer = self
            .timers
            .iter()
            .min_by_key(|(_, at)| **at)
            .map(|(k, at)| (*k, *at));
        match (timer, self.compute_until) {
            (_, Some(c)) if c <= now && timer.is_none_or(|(_, at)| c <= at) => {
                self.compute_until = None;
                self.record(
                    now,
                    &Event::ComputeDone {
                        rank: self.cfg.rank,
                    },
                );
                self.input(Input::ComputeDone);
            }
            (Some((key, at)), _) if at <= now => {
                self.timers.remove(&key);
                let (timer, group, seq) = timer_fields(&key);
                let ev = Event::Timer {
                    rank: self.cfg.rank,
                    timer: timer.into(),
                    group,
                    seq,
                };
                self.record(now, &ev);
                self.input(Input::Timer(key));
            }
            _ => {} // woken a little early
        }
    }

    fn stop(&mut self, dump: bool, at: Nanos) -> io::Result<()> {
        // the rank whose watchdog fired has dumped its recorder already
        if let (true, false, Node::Rank(p)) = (dump, self.watchdog, &self.node) {
            let entries = p.flight_record();
            if !entries.is_empty() {
                let ev = Event::FlightRecord {
                    rank: self.cfg.rank,
                    entries,
                };
                self.record(at, &ev);
            }
        }
        self.trace.flush()
    }

    async fn after_input(&mut self) {
        self.catch_up();
        if let Err(e) = self.trace.flush() {
            log(&self.cfg, format!("cannot write the trace: {e}"));
        }
        let now = self.standing();
        if self.standing.as_ref() != Some(&now) {
            let line = control::line(&ToLaunch::Status(now.clone()));
            self.standing = Some(now);
            // launch going away ends the run anyway
            let _ = self.ctl.write_all(&line).await;
        }
    }

    fn standing(&self) -> Standing {
        let Node::Rank(p) = &self.node else {
            return Standing::default();
        };
        let status = p.status();
        let m = p.membership();
        Standing {
            done: status == RankStatus::Done,
            refused: status == RankStatus::Refused,
            phase: m.map(|m| {
                match m.phase {
                    Phase::Member => "member",
                    Phase::Rendezvous => "rendezvous",
                    Phase::Joining => "joining",
                }
                .into()
            }),
            generation: m.map_or(0, |m| m.generation.0),
            watchdog: self.watchdog,
        }
    }

    fn record(&mut self, t: Nanos, ev: &Event) {
        encode_line(&mut self.line, t, ev);
        self.line.push(b'\n');
        let _ = self.trace.write_all(&self.line);
    }

    fn input(&mut self, input: Input) {
        let now = self.clock.now();
        let mut out = Outbox::new();
        match (&mut self.node, input) {
            (Node::Rank(p), input) => p.handle(now, input, &mut out),
            (Node::Store(s), Input::Message { from, msg }) => s.handle(from, msg, &mut out),
            (Node::Store(_), _) => {}
        }
        for o in out.drain() {
            self.output(now, o);
        }
        for token in std::mem::take(&mut self.sent) {
            self.input(Input::SendDone(token));
        }
    }

    fn output(&mut self, now: Nanos, o: Output) {
        let me = self.cfg.rank;
        match o {
            Output::Send {
                to,
                msg,
                bytes,
                reliable,
            } => {
                let id =
                    (u64::from(me) << 48) | (u64::from(self.cfg.incarnation) << 40) | self.next_id;
                self.next_id += 1;
                let (seq, step) = match &msg {
                    Msg::Coll(m) => (Some(m.fp.seq.0), Some(m.step)),
                    Msg::P2p(m) => (Some(m.order), None),
                    Msg::Elastic(_) | Msg::Registry(_) | Msg::Node(_) => (None, None),
                };
                self.record(
                    now,
                    &Event::Send {
                        id,
                        from: me,
                        to: to.0,
                        bytes,
                        msg: msg.kind().into(),
                        seq,
                        step,
                        arrive_ns: now,
                    },
                );
                let frame = wire::encode(&Frame::Message(Envelope {
                    job: self.cfg.job,
                    from: me,
                    incarnation: self.cfg.incarnation,
                    generation: wire::generation_of(&msg),
                    id,
                    bytes,
                    reliable,
                    msg,
                }));
                self.send(to.0, frame);
            }
            Output::NotifySent { token } => self.sent.push(token),
            Output::SetTimer { key, at } => {
                self.timers.insert(key, at);
            }
            Output::CancelTimer { key } => {
                self.timers.remove(&key);
            }
            Output::Compute { duration } => {
                let factor = slow_factor(&self.cfg.scenario, me, now);
                let d = (duration as f64 * factor).round() as Nanos;
                let iteration = match &self.node {
                    Node::Rank(p) => match p.status() {
                        RankStatus::Computing { iteration } => iteration,
                        _ => 0,
                    },
                    Node::Store(_) => 0,
                };
                self.record(
                    now,
                    &Event::Compute {
                        rank: me,
                        iteration,
                        duration_ns: d,
                    },
                );
                self.compute_until = Some(now + d);
            }
            // the reduction really happens on this CPU: nothing to charge
            Output::Work { .. } => {}
            Output::Event(pe) => self.proto_event(now, *pe),
            Output::Step(s) => self.proto_event(now, ProtoEvent::Step(s)),
        }
    }

    fn send(&mut self, to: u32, frame: Vec<u8>) {
        let Some(slot) = self.writers.get_mut(to as usize) else {
            return;
        };
        let tx = slot.get_or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let opener = Opener {
                key: self.cfg.key.clone(),
                claim: self.cfg.claim(Channel::Data),
                hello: wire::encode(&Frame::Hello {
                    job: self.cfg.job,
                    rank: self.cfg.rank,
                    incarnation: self.cfg.incarnation,
                }),
            };
            tokio::spawn(write_peer(to, rx, self.table.clone(), opener));
            tx
        });
        let _ = tx.send(frame);
    }

    fn proto_event(&mut self, now: Nanos, pe: ProtoEvent) {
        if let ProtoEvent::Call { fp, .. } = &pe {
            self.ahead.called(fp);
        }
        let seen = self.observer.observe(self.cfg.rank, now, pe, true);
        self.watchdog |= seen.hint.watchdog();
        if let Some(ev) = seen.event {
            self.record(now, &ev);
        }
    }
}

/// The compute slowdown of `rank` at `now`: the product of the active `slow` faults on it.
fn slow_factor(s: &Scenario, rank: u32, now: Nanos) -> f64 {
    s.faults
        .iter()
        .filter_map(|f| match f {
            Fault::Slow {
                rank: r,
                at,
                duration,
                factor,
            } if *r == rank
                && at
                    .time()
                    .is_some_and(|at| at.0 <= now && duration.is_none_or(|d| now < at.0 + d.0)) =>
            {
                Some(*factor)
            }
            _ => None,
        })
        .product()
}
