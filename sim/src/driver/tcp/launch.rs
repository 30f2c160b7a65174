//! `launch`: start one worker process per node, let them find each other, apply the scenario's
//! process faults with signals at the scenario's times, notice the end of the run, stop the
//! workers and merge their traces into one.
//!
//! The run ends as an engine run does: every rank finished (elastic: every member of the latest
//! generation); a watchdog fired without elastic membership (the job is torn down and the other
//! ranks dump their flight recorders); elastic ranks all waiting in rendezvous with no fault to
//! come and nothing changing for a while (stalled); or the deadline (`time_limit`, else a bound
//! from the faults, timeouts and workload) passed.

use super::auth::random_bytes;
pub use super::config::LaunchConfig;
use super::control::{self, Standing, ToWorker};
use super::merge::{self, Merged, WorkerTrace};
use super::rendezvous::{accept, Note};
use super::{unix_now_ns, Clock, TimeScale};
use crate::engine::{describe_fault, touched_ranks};
use crate::scenario::{Fault, Outcome, Scenario};
use crate::trace::{Event, FaultPhase};
use crate::units::Nanos;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The most processes a real run starts (one per node): each is a real OS process with its own
/// runtime, sockets and trace file.
pub const MAX_NODES: u32 = 256;

/// The time scales accepted: below, timers of a few nanoseconds of real time; above, a
/// scenario's second takes longer than a quarter of an hour.
pub const TIME_SCALES: std::ops::RangeInclusive<f64> = 0.001..=1000.0;

/// The longest wall-clock time a deadline may stand for (its protocol time times the scale).
pub const MAX_WALL_DEADLINE: Duration = Duration::from_secs(24 * 3600);

/// Checks what a real run is asked to do before any process starts: the number of processes,
/// the time scale and the deadline. The error is a sentence naming the offending value.
pub fn check_limits(s: &Scenario, scale: f64, deadline: Option<Nanos>) -> Result<(), String> {
    let n = super::nodes(s);
    if n > MAX_NODES {
        return Err(format!(
            "{n} processes: a real run starts one OS process per rank (and one for a store), \
             at most {MAX_NODES}"
        ));
    }
    if !TIME_SCALES.contains(&scale) {
        return Err(format!(
            "--time-scale {scale:?}: must be between {} and {} (wall-clock seconds per second of \
             scenario time)",
            TIME_SCALES.start(),
            TIME_SCALES.end()
        ));
    }
    if let Some(d) = deadline {
        let d_text = crate::units::Duration(d);
        if d == 0 {
            return Err("--deadline 0s: the run needs some time; give a positive duration".into());
        }
        if TimeScale(scale).wall(d) > MAX_WALL_DEADLINE {
            return Err(format!(
                "--deadline {d_text}: at time scale {scale:?} that is more than {}h of wall-clock \
                 time",
                MAX_WALL_DEADLINE.as_secs() / 3600
            ));
        }
    }
    Ok(())
}

/// The faults `launch` cannot apply for real: the network's, by kind, and those triggered at a
/// call (`at_call`; the nodes do not report their calls as they issue them).
pub fn unemulated(s: &Scenario) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = s
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Partition { .. } | Fault::Delay { .. } | Fault::Loss { .. } => {
                Some(f.kind().name())
            }
            _ if f.at_call().is_some() => Some("`at_call`"),
            _ => None,
        })
        .collect();
    kinds.dedup();
    kinds
}

/// What happens at a protocol time.
#[derive(Clone, Copy, Debug)]
enum Due {
    Begin(usize),
    End(usize),
    Restart(u32),
}

struct Proc {
    child: Option<Child>,
    incarnation: u32,
    paused: bool,
    restart_pending: bool,
    addr: Option<SocketAddr>,
    ctl: Option<OwnedWriteHalf>,
    /// The control connection the node registered on: only its lines speak for the node.
    conn: Option<u64>,
    standing: Option<Standing>,
}

impl Proc {
    fn alive(&self) -> bool {
        self.child.is_some()
    }
}

/// Runs the scenario for real and writes the merged trace to `trace`. A SIGTERM, SIGINT or
/// SIGHUP ends the run early: the workers are stopped and the error says which signal came.
pub fn launch(cfg: &LaunchConfig, trace: &Path) -> io::Result<Merged> {
    super::gate::raise_open_files();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut l = rt.block_on(Launch::start(cfg))?;
    let result = rt.block_on(l.run());
    let end = result.as_ref().map_or(0, |r| r.1);
    rt.block_on(l.teardown(end));
    let (outcome, end) = result?;
    merge::merge(
        cfg,
        &l.files,
        std::mem::take(&mut l.events),
        outcome,
        end,
        trace,
    )
}

/// The signals that end a run early.
struct Ending {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Ending {
    fn new() -> io::Result<Ending> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Ending {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The name of the next ending signal.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
            _ = self.hup.recv() => "SIGHUP",
        }
    }
}

fn interrupted(signal: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        format!("stopped by {signal}: the workers were stopped"),
    )
}

struct Launch<'a> {
    cfg: &'a LaunchConfig,
    ending: Ending,
    job: u64,
    listen: SocketAddr,
    procs: Vec<Proc>,
    notes: mpsc::UnboundedReceiver<Note>,
    clock: Option<Clock>,
    epoch: u64,
    schedule: Vec<(Nanos, Due)>,
    /// Events of the run seen from outside: faults, deaths, pauses.
    events: Vec<(Nanos, Event)>,
    /// Every per-process trace written.
    files: Vec<WorkerTrace>,
    /// Elastic: the latest generation a member reported, and when anything last changed.
    latest: u32,
    changed: Nanos,
    /// Elastic: how long nothing may change before ranks all in rendezvous count as stuck.
    quiet: Nanos,
}

impl<'a> Launch<'a> {
    async fn start(cfg: &'a LaunchConfig) -> io::Result<Launch<'a>> {
        let ending = Ending::new()?;
        let listener = TcpListener::bind((cfg.bind, 0)).await?;
        let listen = listener.local_addr()?;
        if cfg.verbose {
            eprintln!("launch: rendezvous on {listen}");
        }
        let job = u64::from_be_bytes(random_bytes()?);
        let (tx, notes) = mpsc::unbounded_channel();
        let n = super::nodes(&cfg.scenario);
        tokio::spawn(accept(listener, tx, cfg.key.clone(), job, n));
        let mut l = Launch {
            cfg,
            ending,
            job,
            listen,
            procs: Vec::new(),
            notes,
            clock: None,
            epoch: 0,
            schedule: Vec::new(),
            events: Vec::new(),
            files: Vec::new(),
            latest: 0,
            changed: 0,
            quiet: crate::scenario::resolve::workload(
                &cfg.scenario,
                cfg.seed,
                crate::proto::mutation::Mutations::NONE,
            )
            .elastic
            .map_or(cfg.scenario.group.timeout.0, |e| e.rendezvous_timeout()),
        };
        for r in 0..n {
            let child = l.spawn(r, 0)?;
            l.procs.push(Proc {
                child: Some(child),
                incarnation: 0,
                paused: false,
                restart_pending: false,
                addr: None,
                ctl: None,
                conn: None,
                standing: None,
            });
        }
        for (i, f) in cfg.scenario.faults.iter().enumerate() {
            let Some(at) = f.at() else { continue };
            if !unemulated(&Scenario {
                faults: vec![f.clone()],
                ..cfg.scenario.clone()
            })
            .is_empty()
            {
                continue;
            }
            l.schedule.push((at.0, Due::Begin(i)));
            if let Some(d) = f.duration() {
                l.schedule.push((at.0 + d.0, Due::End(i)));
            }
        }
        Ok(l)
    }

    /// Starts a worker, and hands it the job's key on its standard input.
    fn spawn(&mut self, rank: u32, incarnation: u32) -> io::Result<Child> {
        let dir = &self.cfg.workdir;
        let trace = dir.join(format!("rank-{rank}.{incarnation}.jsonl"));
        let log = std::fs::File::create(dir.join(format!("rank-{rank}.{incarnation}.log")))?;
        self.files.push(WorkerTrace {
            rank,
            incarnation,
            path: trace.clone(),
        });
        let mut child = Command::new(&self.cfg.exe)
            .arg("worker")
            .arg("--scenario-json")
            .arg(dir.join("scenario.json"))
            .args(["--seed", &self.cfg.seed.to_string()])
            .args(["--rank", &rank.to_string()])
            .args(["--incarnation", &incarnation.to_string()])
            .args(["--rendezvous", &self.listen.to_string()])
            .args(["--job", &self.job.to_string()])
            .arg("--trace")
            .arg(&trace)
            .args(["--bind", &self.cfg.bind.to_string()])
            .args(["--time-scale", &self.cfg.scale.0.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot start {}: {e}", self.cfg.exe.display()),
                )
            })?;
        // 65 bytes fit any pipe's buffer: this does not block; the pipe closes when dropped
        let key = format!("{}\n", self.cfg.key.to_hex());
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            if let Err(e) = stdin.write_all(key.as_bytes()) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot hand worker {rank} its key: {e}"),
                ));
            }
        }
        Ok(child)
    }

    fn now(&self) -> Nanos {
        self.clock.map_or(0, |c| c.now())
    }

    fn record(&mut self, t: Nanos, ev: Event) {
        self.events.push((t, ev));
    }

    /// Runs until the end of the run: (outcome, end time).
    async fn run(&mut self) -> io::Result<(Outcome, Nanos)> {
        let n = self.procs.len();
        // everybody registers, then the clock starts a little later
        let setup = tokio::time::Instant::now();
        while self.procs.iter().any(|p| p.addr.is_none()) {
            let left = Duration::from_secs(30).saturating_sub(setup.elapsed());
            let note = tokio::select! {
                n = tokio::time::timeout(left, self.notes.recv()) => n,
                s = self.ending.recv() => return Err(interrupted(s)),
            };
            match note {
                Ok(Some(note)) => self.note(note).await,
                _ => return Err(io::Error::other("the workers did not all register in 30s")),
            }
            if let Some(r) = self.exited_early() {
                return Err(io::Error::other(format!(
                    "worker {r} exited during setup (see its log in {})",
                    self.cfg.workdir.display()
                )));
            }
        }
        self.epoch = unix_now_ns() + 50_000_000;
        self.clock = Some(Clock::from_unix_epoch(self.epoch, self.cfg.scale));
        self.broadcast_table().await;
        for r in 0..n {
            self.send(
                r,
                &ToWorker::Start {
                    epoch_unix_ns: self.epoch,
                },
            )
            .await;
        }
        self.schedule.sort_by_key(|(t, _)| *t);
        self.schedule.reverse();
        let deadline = self
            .cfg
            .deadline
            .unwrap_or_else(|| deadline(&self.cfg.scenario));
        let mut tick = tokio::time::interval(Duration::from_millis(2));
        loop {
            let next = self.schedule.last().map(|(t, _)| *t);
            let clock = self.clock.unwrap_or(Clock::new(setup, self.cfg.scale));
            tokio::select! {
                Some(note) = self.notes.recv() => self.note(note).await,
                s = self.ending.recv() => return Err(interrupted(s)),
                _ = tick.tick() => {}
                _ = tokio::time::sleep_until(clock.instant(next.unwrap_or(0))), if next.is_some() => {}
            }
            while self.schedule.last().is_some_and(|(t, _)| *t <= self.now()) {
                if let Some((_, due)) = self.schedule.pop() {
                    // a fault is recorded when it really happens, which is a little after its
                    // scheduled time: the victim's last events come before its death
                    self.due(self.now(), due).await?;
                }
            }
            // read after the reaping, as a preemption's
            let early = self.exited_early();
            let now = self.now();
            if let Some(r) = early {
                let inc = self.procs[r as usize].incarnation;
                self.procs[r as usize].child = None;
                eprintln!("launch: worker {r} exited on its own (see its log)");
                self.record(
                    now,
                    Event::ProcessDeath {
                        rank: r,
                        incarnation: inc,
                    },
                );
            }
            if let Some(end) = self.over(now, deadline) {
                return Ok(end);
            }
        }
    }

    /// A worker that exited without being told to.
    fn exited_early(&mut self) -> Option<u32> {
        self.procs.iter_mut().enumerate().find_map(|(r, p)| {
            let c = p.child.as_mut()?;
            matches!(c.try_wait(), Ok(Some(_))).then_some(r as u32)
        })
    }

    async fn note(&mut self, note: Note) {
        match note {
            Note::Hello {
                conn,
                rank,
                incarnation,
                addr,
                ctl,
            } => {
                let p = &mut self.procs[rank as usize];
                if p.incarnation != incarnation || !p.alive() {
                    return;
                }
                if p.ctl.is_some() {
                    // the node registered already: nobody may re-point it
                    eprintln!(
                        "launch: refusing a second control hello for node {rank}.{incarnation} \
                         (from {addr})"
                    );
                    return;
                }
                p.addr = Some(addr);
                p.ctl = Some(ctl);
                p.conn = Some(conn);
                if self.clock.is_some() {
                    // a restarted worker joins a running job
                    self.broadcast_table().await;
                    let epoch = self.epoch;
                    self.send(
                        rank as usize,
                        &ToWorker::Start {
                            epoch_unix_ns: epoch,
                        },
                    )
                    .await;
                }
            }
            Note::Status {
                conn,
                rank,
                incarnation,
                standing,
            } => {
                let p = &mut self.procs[rank as usize];
                if p.incarnation == incarnation && p.alive() && p.conn == Some(conn) {
                    if standing.phase.as_deref() == Some("member") {
                        self.latest = self.latest.max(standing.generation);
                    }
                    p.standing = Some(standing);
                    self.changed = self.clock.map_or(0, |c| c.now());
                }
            }
        }
    }

    async fn send(&mut self, r: usize, msg: &ToWorker) {
        if let Some(ctl) = self.procs[r].ctl.as_mut() {
            let _ = ctl.write_all(&control::line(msg)).await;
        }
    }

    async fn broadcast_table(&mut self) {
        let addrs: Vec<Option<String>> = self
            .procs
            .iter()
            .map(|p| p.addr.filter(|_| p.alive()).map(|a| a.to_string()))
            .collect();
        if self.cfg.verbose {
            for (r, a) in addrs.iter().enumerate() {
                if let Some(a) = a {
                    eprintln!("launch: node {r} listening on {a}");
                }
            }
        }
        let msg = ToWorker::Table { addrs };
        for r in 0..self.procs.len() {
            self.send(r, &msg).await;
        }
    }

    fn signal(&self, rank: u32, sig: Signal) {
        if let Some(c) = &self.procs[rank as usize].child {
            let _ = kill(Pid::from_raw(c.id() as i32), sig);
        }
    }

    async fn due(&mut self, t: Nanos, due: Due) -> io::Result<()> {
        let (i, phase) = match due {
            Due::Restart(rank) => return self.restart(t, rank).await,
            Due::Begin(i) => (i, FaultPhase::Begin),
            Due::End(i) => (i, FaultPhase::End),
        };
        let f = self.cfg.scenario.faults[i].clone();
        let begin = phase == FaultPhase::Begin;
        // a preemption happens when its victim is gone: the time is read once the process is
        // reaped, after the last line it could write
        let killed = match f {
            Fault::Preempt { rank, .. } if begin => {
                let p = &mut self.procs[rank as usize];
                p.child.take().map(|mut c| {
                    let _ = c.kill();
                    let _ = c.wait();
                    p.incarnation
                })
            }
            _ => None,
        };
        let t = if killed.is_some() { self.now() } else { t };
        self.record(
            t,
            Event::Fault {
                index: i as u32,
                fault: f.kind(),
                phase,
                ranks: touched_ranks(&f),
                sides: None,
                oneway: false,
                detail: describe_fault(&f),
            },
        );
        self.changed = t;
        match f {
            Fault::Preempt {
                rank,
                restart_after,
                ..
            } if begin => {
                if let Some(incarnation) = killed {
                    let p = &mut self.procs[rank as usize];
                    p.addr = None;
                    p.ctl = None;
                    p.conn = None;
                    p.standing = None;
                    p.paused = false;
                    self.record(t, Event::ProcessDeath { rank, incarnation });
                    self.broadcast_table().await;
                }
                if let Some(d) = restart_after {
                    self.procs[rank as usize].restart_pending = true;
                    self.schedule.push((t + d.0, Due::Restart(rank)));
                    self.schedule.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
                }
            }
            Fault::Pause { rank, .. } if self.procs[rank as usize].alive() => {
                if begin {
                    self.signal(rank, Signal::SIGSTOP);
                    self.procs[rank as usize].paused = true;
                    self.record(t, Event::ProcessPause { rank });
                } else {
                    self.signal(rank, Signal::SIGCONT);
                    self.procs[rank as usize].paused = false;
                    self.record(t, Event::ProcessResume { rank });
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn restart(&mut self, t: Nanos, rank: u32) -> io::Result<()> {
        self.changed = t;
        let p = &self.procs[rank as usize];
        if p.alive() {
            return Ok(());
        }
        let incarnation = p.incarnation + 1;
        let child = self.spawn(rank, incarnation)?;
        let p = &mut self.procs[rank as usize];
        p.child = Some(child);
        p.incarnation = incarnation;
        p.restart_pending = false;
        Ok(())
    }

    /// Whether the run is over now, and how.
    fn over(&self, now: Nanos, deadline: Nanos) -> Option<(Outcome, Nanos)> {
        let ranks = &self.procs[..self.cfg.scenario.world.size as usize];
        let elastic = self.cfg.scenario.group.elastic.is_some();
        let standing = |p: &Proc| p.standing.clone().unwrap_or_default();
        let all_done = if elastic {
            let installed: Vec<Standing> = ranks
                .iter()
                .filter(|p| p.alive())
                .map(standing)
                .filter(|s| {
                    s.generation == self.latest
                        && matches!(s.phase.as_deref(), Some("member" | "rendezvous"))
                })
                .collect();
            !installed.is_empty()
                && installed
                    .iter()
                    .all(|s| s.done && s.phase.as_deref() == Some("member"))
        } else {
            let dead_ok = self.cfg.scenario.workload.ops.is_empty();
            ranks.iter().all(|p| match p.alive() {
                false => dead_ok && !p.restart_pending,
                true => standing(p).done,
            })
        };
        let finished = all_done
            || (!elastic
                && ranks.iter().all(|p| match p.alive() {
                    false => !p.restart_pending,
                    true => standing(p).done || standing(p).refused,
                }));
        let outcome = |done: bool| match done {
            true if self.latest > 0 => Outcome::Rebuilt,
            true => Outcome::Completed,
            false => Outcome::Stalled,
        };
        if finished {
            return Some((outcome(all_done), now));
        }
        if !elastic && ranks.iter().any(|p| p.alive() && standing(p).watchdog) {
            return Some((Outcome::Stalled, now));
        }
        if elastic && self.schedule.is_empty() {
            let working = ranks.iter().any(|p| {
                p.alive() && !p.paused && {
                    let s = standing(p);
                    s.phase.as_deref() == Some("member") && !s.done
                }
            });
            let quiet = (2 * self.quiet).max(500_000_000);
            if !working && now.saturating_sub(self.changed) > quiet {
                return Some((Outcome::Stalled, now));
            }
        }
        if now >= deadline {
            let timed_out = self.cfg.scenario.time_limit.is_some();
            return Some((
                if timed_out {
                    Outcome::TimedOut
                } else {
                    Outcome::Stalled
                },
                now,
            ));
        }
        None
    }

    /// Stops every worker: live ones are told to (dumping their flight recorders after a
    /// watchdog) and killed if they do not exit; frozen ones are killed.
    async fn teardown(&mut self, at: Nanos) {
        let dump = self
            .procs
            .iter()
            .any(|p| p.standing.as_ref().is_some_and(|s| s.watchdog));
        for r in 0..self.procs.len() {
            if self.procs[r].paused {
                self.signal(r as u32, Signal::SIGKILL);
                continue;
            }
            if let Some(ctl) = self.procs[r].ctl.as_mut() {
                let line = control::line(&ToWorker::Stop { dump, at });
                let write = ctl.write_all(&line);
                let _ = tokio::time::timeout(Duration::from_millis(500), write).await;
            }
        }
        let until = tokio::time::Instant::now() + Duration::from_secs(3);
        for p in &mut self.procs {
            let Some(mut c) = p.child.take() else {
                continue;
            };
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if tokio::time::Instant::now() >= until => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
        }
    }
}

/// A bound on how long a run of `s` can take when nothing is wrong for good: the last fault,
/// then a few timeouts, plus the workload's compute.
pub fn deadline(s: &Scenario) -> Nanos {
    if let Some(t) = s.time_limit {
        return t.0;
    }
    let last_fault = s
        .faults
        .iter()
        .filter_map(|f| {
            let at = f.at()?.0;
            let restart = match f {
                Fault::Preempt {
                    restart_after: Some(d),
                    ..
                } => d.0,
                _ => 0,
            };
            Some(at + f.duration().map_or(0, |d| d.0) + restart)
        })
        .max()
        .unwrap_or(0);
    let work = u64::from(s.workload.iterations) * s.workload.compute.0 * 2;
    last_fault + 3 * s.group.timeout.0 + work + 5_000_000_000
}
