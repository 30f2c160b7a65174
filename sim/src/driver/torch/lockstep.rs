//! The lockstep between real PyTorch processes and the engine (docs/torchrun.md, "Lockstep"):
//! the [`Application`] that hands the engine the programs' calls.
//!
//! Each rank is running (its own Python code), waiting (in a `wait`) or gone. A sync blocks
//! until no rank runs, then hands the engine every call received since the last one, ordered
//! by (the rank's clock, rank, arrival on that rank's connection): the order frames arrived in
//! across connections plays no part.

use super::procs::{Event, Exit, Jobs};
use super::wire::{Call, Reply, Request};
use crate::engine::Application;
use crate::proto::collective::Members;
use crate::proto::{AppCall, AppDone, AppGroup, AppOutcome, GroupId, Input, Rank};
use crate::scenario::{Algorithm, ComputeModel, OpKind};
use crate::trace::from_proto::ResultHashes;
use crate::units::{later, Nanos};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as WallDuration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Running,
    Waiting(u32),
    Gone,
}

struct RankState {
    mode: Mode,
    /// The rank's virtual clock: when it was last released, plus its compute since.
    clock: Nanos,
    /// Calls issued so far (the next one is `calls + 1`).
    calls: u32,
    /// Calls that ended and were not waited for yet: (when, how).
    ended: BTreeMap<u32, (Nanos, AppOutcome)>,
    /// Call sites of the calls issued, by number.
    sites: BTreeMap<u32, String>,
    /// The wall-clock CPU time at its last release (the `measured` compute model).
    cpu_mark: Option<std::time::Duration>,
}

/// A frame of the program, stamped for the engine.
struct Pending {
    at: Nanos,
    rank: u32,
    seq: u64,
    what: PendingKind,
}

enum PendingKind {
    Group {
        name: String,
        ranks: Vec<u32>,
        timeout: Nanos,
    },
    Call(Call),
    Exit,
}

/// The [`Application`] of `ringside torchrun`.
pub struct Lockstep<'a, 's> {
    ranks: Vec<RankState>,
    jobs: &'a mut Jobs<'s>,
    pending: Vec<Pending>,
    seq: u64,
    groups: BTreeMap<String, GroupId>,
    next_group: u32,
    compute: ComputeModel,
    /// `[group] timeout`: a group's timeout when the program gives none.
    timeout: Nanos,
    algorithm: Option<Algorithm>,
    interrupt: Option<&'a AtomicBool>,
    wall: Option<&'a AtomicBool>,
    /// A program that broke the protocol: (rank, what).
    pub errors: Vec<(u32, String)>,
    /// Each rank's first call that failed (the one it was blocked in when its watchdog fired).
    first_failed: BTreeMap<u32, u32>,
    /// Each rank's completed calls, in the order they were waited for: (call, hash of the
    /// result's bits; 0 for none).
    pub results: Vec<Vec<(u32, u64)>>,
    /// The results' hashes: the members of a collective mostly get the very same bits.
    hashes: ResultHashes,
    /// Ranks whose process ringside killed (a fault, or a broken protocol).
    pub killed: Vec<bool>,
    /// How each process ended, once every rank is gone (see [`Lockstep::failed`]).
    exits: Option<Vec<Option<Exit>>>,
    /// How long the processes have to end once every rank left the job.
    grace: WallDuration,
}

impl<'a, 's> Lockstep<'a, 's> {
    pub fn new(
        jobs: &'a mut Jobs<'s>,
        compute: ComputeModel,
        timeout: Nanos,
        algorithm: Option<Algorithm>,
        interrupt: Option<&'a AtomicBool>,
        wall: Option<&'a AtomicBool>,
        grace: WallDuration,
    ) -> Lockstep<'a, 's> {
        let n = jobs.ranks();
        Lockstep {
            ranks: (0..n)
                .map(|_| RankState {
                    mode: Mode::Running,
                    clock: 0,
                    calls: 0,
                    ended: BTreeMap::new(),
                    sites: BTreeMap::new(),
                    cpu_mark: None,
                })
                .collect(),
            jobs,
            pending: Vec::new(),
            seq: 0,
            groups: BTreeMap::new(),
            next_group: 1,
            compute,
            timeout,
            algorithm,
            interrupt,
            wall,
            errors: Vec::new(),
            first_failed: BTreeMap::new(),
            results: vec![Vec::new(); n],
            hashes: ResultHashes::default(),
            killed: vec![false; n],
            exits: None,
            grace,
        }
    }

    /// Where each rank was blocked: the call site of its first call that failed, else of the
    /// call it waits for at the end.
    pub fn blocked_sites(&self) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        for (r, st) in self.ranks.iter().enumerate() {
            let r = r as u32;
            let work = match (self.first_failed.get(&r), st.mode) {
                (Some(w), _) => *w,
                (None, Mode::Waiting(w)) => w,
                _ => continue,
            };
            if let Some(site) = st.sites.get(&work) {
                out.push((r, site.clone()));
            }
        }
        out
    }

    /// The call site of every call issued: ((rank, call number), site).
    pub fn sites(&self) -> Vec<((u32, u32), String)> {
        let mut out = Vec::new();
        for (r, st) in self.ranks.iter().enumerate() {
            for (i, s) in &st.sites {
                out.push(((r as u32, *i), s.clone()));
            }
        }
        out
    }

    fn stopping(&self) -> bool {
        self.interrupt.is_some_and(|f| f.load(Ordering::Relaxed))
            || self.wall.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Tells `rank` that its call `work` ended.
    fn release(&mut self, rank: u32, work: u32, at: Nanos, outcome: AppOutcome) {
        let st = &mut self.ranks[rank as usize];
        st.clock = st.clock.max(at);
        st.mode = Mode::Running;
        if matches!(self.compute, ComputeModel::Measured(_)) {
            st.cpu_mark = self.jobs.cpu_time(rank);
        }
        let reply = match outcome {
            AppOutcome::Completed(result) => {
                let hash = result.as_ref().map_or(0, |b| self.hashes.hash(b));
                self.results[rank as usize].push((work, hash));
                Reply::Done { work, result }
            }
            AppOutcome::Failed(reason) => {
                self.first_failed.entry(rank).or_insert(work);
                Reply::Failed {
                    work,
                    message: super::watchdog_message(
                        &reason,
                        self.ranks[rank as usize].sites.get(&work),
                    ),
                }
            }
        };
        self.jobs.reply(rank, &reply);
    }

    /// The rank's compute since its last call, by the model.
    fn compute(&mut self, rank: u32) -> Nanos {
        match self.compute {
            ComputeModel::Zero => 0,
            ComputeModel::Fixed(d) => d.0,
            ComputeModel::Measured(factor) => {
                let now = self.jobs.cpu_time(rank);
                let st = &mut self.ranks[rank as usize];
                let spent = match (now, st.cpu_mark) {
                    (Some(n), Some(m)) => n.saturating_sub(m),
                    _ => std::time::Duration::ZERO,
                };
                st.cpu_mark = now;
                (spent.as_nanos() as f64 * factor).round() as Nanos
            }
        }
    }

    fn push(&mut self, rank: u32, what: PendingKind) {
        self.seq += 1;
        let at = self.ranks[rank as usize].clock;
        self.pending.push(Pending {
            at,
            rank,
            seq: self.seq,
            what,
        });
    }

    /// Takes in one frame (or the end) of `rank`.
    fn on_event(&mut self, rank: u32, ev: Event) {
        if self.ranks[rank as usize].mode == Mode::Gone {
            return;
        }
        match ev {
            Event::Frame(Request::Group {
                name,
                ranks,
                timeout_ms,
            }) => {
                let timeout = timeout_ms.map_or(self.timeout, |ms| ms.saturating_mul(1_000_000));
                self.push(
                    rank,
                    PendingKind::Group {
                        name,
                        ranks,
                        timeout,
                    },
                );
            }
            Event::Frame(Request::Call(call)) => {
                let st = &mut self.ranks[rank as usize];
                st.calls += 1;
                if call.work != st.calls {
                    return self.broke(rank, format!("call {} out of order", call.work));
                }
                st.sites.insert(call.work, call.site.clone());
                let d = self.compute(rank);
                let st = &mut self.ranks[rank as usize];
                st.clock = later(st.clock, d);
                self.push(rank, PendingKind::Call(call));
            }
            Event::Frame(Request::Wait { work }) => {
                let st = &mut self.ranks[rank as usize];
                if work == 0 || work > st.calls {
                    return self.broke(rank, format!("waits for call {work}, never issued"));
                }
                match st.ended.remove(&work) {
                    Some((at, outcome)) => self.release(rank, work, at, outcome),
                    None => st.mode = Mode::Waiting(work),
                }
            }
            Event::Frame(Request::Exit { .. }) | Event::Closed => self.gone(rank),
            Event::Broken(what) => self.broke(rank, what),
        }
    }

    /// `rank` spoke nonsense: it is no member of the job any more.
    fn broke(&mut self, rank: u32, what: String) {
        self.errors.push((rank, what));
        self.killed[rank as usize] = true;
        self.jobs.kill(rank);
        self.gone(rank);
    }

    fn gone(&mut self, rank: u32) {
        let st = &mut self.ranks[rank as usize];
        if st.mode != Mode::Gone {
            st.mode = Mode::Gone;
            self.push(rank, PendingKind::Exit);
        }
    }

    /// The pending frames as engine inputs, in (clock, rank, arrival) order.
    fn inputs(&mut self) -> Vec<(u32, Nanos, Input)> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|p| (p.at, p.rank, p.seq));
        let mut out = Vec::with_capacity(pending.len());
        for p in pending {
            let input = match p.what {
                PendingKind::Group {
                    name,
                    ranks,
                    timeout,
                } => {
                    let id = self.group_id(&name, &ranks);
                    Input::Group(AppGroup {
                        id,
                        members: Members::new(ranks.into_iter().map(Rank).collect()),
                        timeout,
                    })
                }
                PendingKind::Call(c) => Input::Call(Box::new(self.app_call(c))),
                PendingKind::Exit => Input::Exit,
            };
            out.push((p.rank, p.at, input));
        }
        out
    }

    /// The id of torch's group `name`: the world's first group is the world (0), the others
    /// numbered in the order they are first used.
    fn group_id(&mut self, name: &str, ranks: &[u32]) -> GroupId {
        if let Some(id) = self.groups.get(name) {
            return *id;
        }
        let world = ranks.len() == self.ranks.len()
            && ranks.iter().enumerate().all(|(i, r)| *r as usize == i);
        let id = if world && self.groups.is_empty() {
            GroupId(0)
        } else {
            self.next_group += 1;
            GroupId(self.next_group - 1)
        };
        self.groups.insert(name.to_string(), id);
        id
    }

    fn app_call(&self, c: Call) -> AppCall {
        let group = self
            .groups
            .get(&c.group)
            .copied()
            .unwrap_or(GroupId(u32::MAX));
        let p2p = c.op.point_to_point();
        let algorithm = match c.op {
            OpKind::Allreduce => self
                .algorithm
                .filter(|a| c.op.algorithms().contains(a))
                .unwrap_or(c.op.default_algorithm()),
            op => op.default_algorithm(),
        };
        AppCall {
            index: c.work,
            group,
            op: c.op,
            algorithm,
            bytes: c.bytes,
            dtype: c.input.dtype(),
            reduce: c.reduce,
            root: if p2p { 0 } else { c.root },
            elements: c.elements,
            peer: p2p.then_some(c.root),
            input: c.input,
        }
    }
}

/// Whether a process that ended `exit` (ringside having killed it or not) failed by itself.
pub fn exit_failed(exit: Option<Exit>, killed: bool) -> bool {
    match exit {
        Some(Exit::Code(0)) => false,
        // a kill of ringside's (a fault) is the fault's story, not the program's
        Some(Exit::Signal(_)) if killed => false,
        Some(_) => true,
        None => false,
    }
}

impl Application for Lockstep<'_, '_> {
    fn sync(&mut self, _now: Nanos, done: Vec<(u32, Nanos, AppDone)>) -> Vec<(u32, Nanos, Input)> {
        for (rank, at, d) in done {
            let st = &mut self.ranks[rank as usize];
            match st.mode {
                Mode::Waiting(w) if w == d.index => self.release(rank, w, at, d.outcome),
                Mode::Gone => {}
                _ => {
                    st.ended.insert(d.index, (at, d.outcome));
                }
            }
        }
        while self.ranks.iter().any(|r| r.mode == Mode::Running) {
            if self.stopping() {
                return Vec::new();
            }
            if let Some((rank, ev)) = self.jobs.next_event(WallDuration::from_millis(100)) {
                self.on_event(rank, ev);
            }
        }
        let inputs = self.inputs();
        let over = self.ranks.iter().all(|r| r.mode == Mode::Gone);
        if over && self.exits.is_none() {
            // nothing more can come (the engine may stop as soon as it has taken these last
            // inputs in): how the processes ended is part of the run's outcome
            self.exits = Some(self.jobs.finish(self.grace));
        }
        inputs
    }

    fn failed(&self) -> bool {
        let exited_badly = self.exits.as_ref().is_some_and(|exits| {
            exits
                .iter()
                .zip(&self.killed)
                .any(|(e, k)| exit_failed(*e, *k))
        });
        exited_badly || !self.errors.is_empty()
    }

    fn killed(&mut self, rank: u32, _now: Nanos) {
        self.killed[rank as usize] = true;
        self.jobs.kill(rank);
        let st = &mut self.ranks[rank as usize];
        st.mode = Mode::Gone;
    }
}
