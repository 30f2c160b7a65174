//! The process group as madsim nodes (built only with `RUSTFLAGS="--cfg madsim"`).
//!
//! Every rank of a scenario (and the store of a store rendezvous) runs as a madsim node with
//! the same sans-IO protocol code the engine drives, over `madsim::net::Endpoint`. The
//! scenario's faults map onto madsim's own: `preempt` kills the node (and `restart_after`
//! restarts it, a fresh process with the next incarnation), `pause` pauses and resumes it,
//! `partition` clogs the links between its sides for its duration. `delay`, `loss` and `slow`
//! are applied by the nodes themselves, with the engine's network model (which also sets when
//! each message arrives); application bugs (`mismatch`, `skip`, `hang`) live in the workload.
//!
//! Why madsim is not the engine: its executor adds a little random virtual time to every poll
//! (and sleeps at least 1 ms), so a microsecond-scale link model drifts, and times here differ
//! from the engine's. Outcomes, generations and
//! collective results must not; `sim/tests/madsim.rs` checks that over the shipped scenarios.
//!
//! Where this driver knows less than the engine, it says so here:
//! - a message is handed to madsim at the time the engine's model says it arrives; the
//!   receive port's contention is not modelled (each node models only its own sends);
//! - the engine drops every message of a process that dies; here only those not yet handed
//!   to madsim are (a message reaching the receiver as the sender dies still arrives);
//! - the engine ends an elastic run as soon as nothing can change (it sees every process and
//!   link); here a run ends when nothing progressed for [`GroupHandle::quiet_bound`] after the
//!   last fault, so a stalled run ends later, with the same outcome;
//! - a fault triggered at a call (`at_call`) is not applied: only the engine counts calls.
//!
//! Two ways in:
//! - [`run_scenario`] builds a madsim runtime, runs one scenario in it and returns its
//!   [`MadsimOutcome`];
//! - [`spawn_group`] adds a process group to a simulation you already run under madsim:
//!   the group's nodes live beside yours, [`GroupHandle::run`] applies the scenario's faults
//!   and waits for the end, and [`GroupHandle::preempt`], [`GroupHandle::pause`],
//!   [`GroupHandle::partition`]... let your own test inject more.
//!
//! ```
//! use madsim::runtime::Runtime;
//! use ringside_sim::driver::madsim::{spawn_group, GroupOptions};
//! use ringside_sim::scenario::{parse, Outcome};
//!
//! let scenario = parse(
//!     r#"
//!     name = "two"
//!     [world]
//!     size = 2
//!     [workload]
//!     iterations = 2
//!     compute = "1ms"
//!     [[workload.ops]]
//!     op = "allreduce"
//!     bytes = "1MiB"
//!     "#,
//!     "two.toml",
//! )
//! .unwrap();
//! let rt = Runtime::with_seed_and_config(1, ringside_sim::driver::madsim::config());
//! let outcome = rt.block_on(async move {
//!     // ... your own nodes here ...
//!     let group = spawn_group(madsim::runtime::Handle::current(), &scenario, GroupOptions::default());
//!     group.run().await
//! });
//! assert_eq!(outcome.outcome, Outcome::Completed);
//! assert!(outcome.ops.iter().all(|op| op.correct));
//! ```

mod judge;
mod node;

pub use judge::{MadsimCall, MadsimGeneration, MadsimOp, MadsimOutcome, MadsimStop};

use crate::fault::cuts;
use crate::scenario::{Fault, Scenario};
use crate::units::Nanos;
use ::madsim::net::NetSim;
use ::madsim::runtime::{Handle, Runtime};
use ::madsim::task::NodeId;
use ::madsim::time::{sleep_until, Duration, Instant};
use judge::Judge;
use node::Shared;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Where the group's nodes live in your simulation.
#[derive(Clone, Debug)]
pub struct GroupOptions {
    /// Overrides the scenario's seed (the inputs of collectives and every random choice).
    pub seed: Option<u64>,
    /// Node `i` (rank `i`; the store is the node after the last rank) gets address
    /// `base + i + 1`: pick a range your own nodes do not use.
    pub base: Ipv4Addr,
    pub port: u16,
    /// How long after [`spawn_group`] the processes start (the nodes bind their sockets first).
    pub start_after: Duration,
    /// Madsim nanoseconds per nanosecond of the protocol's clock. Madsim sleeps at least 1 ms
    /// and delivers a message no sooner than 1 ms after it is sent, which would make every
    /// microsecond-scale message of a scenario cost milliseconds and move each fault to another
    /// point of the collectives than the engine hits. A scale of 1000 puts that floor at 1 us
    /// of protocol time. Keep 1 when the group must share your own nodes' timeline.
    pub time_scale: u64,
}

impl Default for GroupOptions {
    fn default() -> GroupOptions {
        GroupOptions {
            seed: None,
            base: Ipv4Addr::new(10, 77, 0, 0),
            port: 7000,
            start_after: Duration::from_millis(1),
            time_scale: 1,
        }
    }
}

/// A madsim configuration close to the engine's network: madsim's own latency is 1 ns, since
/// the nodes hold each message until the engine's network model says it arrives.
pub fn config() -> ::madsim::Config {
    let mut c = ::madsim::Config::default();
    c.net.send_latency = Duration::from_nanos(1)..Duration::from_nanos(2);
    c
}

/// The time scale of [`run_scenario`] (see [`GroupOptions::time_scale`]).
pub const SCENARIO_TIME_SCALE: u64 = 1000;

/// Runs `scenario` (with `seed`, or the scenario's own) as madsim nodes in a fresh runtime
/// seeded with the same seed.
pub fn run_scenario(scenario: &Scenario, seed: Option<u64>) -> MadsimOutcome {
    let seed = seed.unwrap_or(scenario.seed);
    run_scenario_seeded(scenario, seed, seed)
}

/// Like [`run_scenario`], with madsim's own seed (its task scheduling and the randomness of
/// its network) apart from the scenario's `seed`: the outcome and results must not depend on
/// it, only times may.
pub fn run_scenario_seeded(scenario: &Scenario, seed: u64, madsim_seed: u64) -> MadsimOutcome {
    let rt = Runtime::with_seed_and_config(madsim_seed, config());
    let scenario = scenario.clone();
    rt.block_on(async move {
        let opts = GroupOptions {
            seed: Some(seed),
            time_scale: SCENARIO_TIME_SCALE,
            ..GroupOptions::default()
        };
        spawn_group(Handle::current(), &scenario, opts).run().await
    })
}

/// One scheduled fault action.
#[derive(Clone, Copy, Debug)]
enum Action {
    Begin(usize),
    End(usize),
    Restart(usize),
}

/// A running process group: its nodes, and the fault verbs.
pub struct GroupHandle {
    shared: Arc<Shared>,
    handle: Handle,
    nodes: Vec<NodeId>,
    /// How many active partitions clog each link (from, to).
    clogs: Mutex<BTreeMap<(usize, usize), u32>>,
}

/// Creates the nodes of `scenario`'s process group in the running simulation of `handle`.
/// The processes start `opts.start_after` later; call [`GroupHandle::run`] to apply the
/// scenario's faults and wait for the outcome.
pub fn spawn_group(handle: Handle, scenario: &Scenario, opts: GroupOptions) -> GroupHandle {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let cfg = Arc::new(crate::scenario::resolve::workload(
        scenario,
        seed,
        crate::proto::mutation::Mutations::NONE,
    ));
    let world = scenario.world.size as usize;
    let store = crate::engine::membership::store_node(&cfg).is_some();
    let nodes = world + usize::from(store);
    #[allow(clippy::disallowed_methods)] // madsim's clock is virtual
    let epoch = Instant::now() + opts.start_after;
    let shared = Arc::new(Shared {
        scenario: scenario.clone(),
        cfg: cfg.clone(),
        seed,
        epoch,
        base: opts.base,
        port: opts.port,
        scale: opts.time_scale.max(1),
        world,
        nodes,
        judge: Mutex::new(Judge::new(cfg, seed, world, nodes)),
    });
    let ids = (0..nodes)
        .map(|i| {
            let starts = Arc::new(AtomicU32::new(0));
            let sh = shared.clone();
            let name = if i < world {
                format!("rank-{i}")
            } else {
                "store".into()
            };
            handle
                .create_node()
                .name(name)
                .ip(shared.ip(i).into())
                .init(move || node::run(sh.clone(), i, starts.fetch_add(1, Ordering::Relaxed)))
                .build()
                .id()
        })
        .collect();
    GroupHandle {
        shared,
        handle,
        nodes: ids,
        clogs: Mutex::new(BTreeMap::new()),
    }
}

impl GroupHandle {
    /// The madsim node of rank `rank` (the store is node `world.size`). Inject faults with
    /// the methods below rather than with `Handle::kill` and the like on this id: the group
    /// must know which of its processes are dead or frozen to tell how the run ends.
    pub fn node_id(&self, rank: u32) -> NodeId {
        self.nodes[rank as usize]
    }

    /// Nanoseconds of the protocol's clock since the group started (madsim's virtual time
    /// divided by [`GroupOptions::time_scale`]).
    pub fn now(&self) -> Nanos {
        self.shared.now()
    }

    /// Kills `rank`'s process; `restart` says whether a fresh one will be started later with
    /// [`GroupHandle::restart`] (the group counts a dead rank as gone for good otherwise).
    pub fn preempt(&self, rank: u32, restart: bool) {
        let r = rank as usize;
        let now = self.now();
        self.handle.kill(self.nodes[r]);
        self.shared.judge().died(r, restart, now);
    }

    /// Starts a fresh process of a preempted `rank`, with the next incarnation.
    pub fn restart(&self, rank: u32) {
        self.handle.restart(self.nodes[rank as usize]);
    }

    /// Freezes `rank`'s process (SIGSTOP): it handles nothing, messages queue for it.
    pub fn pause(&self, rank: u32) {
        self.handle.pause(self.nodes[rank as usize]);
        self.shared.judge().paused(rank as usize, true);
    }

    /// Lets a paused `rank` go on.
    pub fn resume(&self, rank: u32) {
        self.handle.resume(self.nodes[rank as usize]);
        self.shared.judge().paused(rank as usize, false);
    }

    /// Cuts the links between `sides` (`oneway`: only from the first side to the others).
    pub fn partition(&self, sides: &[Vec<u32>], oneway: bool) {
        self.clog(sides, oneway, true);
    }

    /// Undoes [`GroupHandle::partition`] with the same arguments.
    pub fn heal(&self, sides: &[Vec<u32>], oneway: bool) {
        self.clog(sides, oneway, false);
    }

    fn clog(&self, sides: &[Vec<u32>], oneway: bool, on: bool) {
        let net = NetSim::current();
        let mut clogs = self.clogs.lock().unwrap_or_else(|e| e.into_inner());
        let ranks: Vec<u32> = sides.iter().flatten().copied().collect();
        for &a in &ranks {
            for &b in ranks.iter().filter(|&&b| cuts(sides, oneway, a, b)) {
                let (a, b) = (a as usize, b as usize);
                let n = clogs.entry((a, b)).or_insert(0);
                let (src, dst) = (self.nodes[a], self.nodes[b]);
                if on {
                    *n += 1;
                    if *n == 1 {
                        net.clog_link(src, dst);
                    }
                } else if *n > 0 {
                    *n -= 1;
                    if *n == 0 {
                        net.unclog_link(src, dst);
                    }
                }
            }
        }
    }

    /// The outcome so far.
    pub fn outcome(&self) -> MadsimOutcome {
        let now = self.now();
        self.shared.judge().outcome(now)
    }

    /// Applies the scenario's faults at their times and waits until the run is over: every
    /// rank finished, a watchdog tore the job down (without elastic membership), nothing
    /// progressed for [`GroupHandle::quiet_bound`] after the last fault, or the scenario's time
    /// limit passed.
    pub async fn run(&self) -> MadsimOutcome {
        let s = &self.shared.scenario;
        let mut due: BTreeMap<(Nanos, u64), Action> = BTreeMap::new();
        let mut n = 0;
        let mut push = |due: &mut BTreeMap<(Nanos, u64), Action>, t: Nanos, a: Action| {
            n += 1;
            due.insert((t, n), a);
        };
        for (i, f) in s.faults.iter().enumerate() {
            if let Some(at) = f.at() {
                push(&mut due, at.0, Action::Begin(i));
                if let Some(d) = f.duration() {
                    push(&mut due, at.0 + d.0, Action::End(i));
                }
            }
        }
        let limit = s.time_limit.map(|d| d.0);
        let quiet = self.quiet_bound();
        let steps_end = s.workload.registry.iter().map(|r| r.at.0).max();
        let mut calm_since = steps_end.unwrap_or(0);
        let tick: Nanos = 5_000_000;
        loop {
            let now = self.now();
            while let Some((&(t, k), &a)) = due.first_key_value() {
                if t > now {
                    break;
                }
                due.remove(&(t, k));
                calm_since = calm_since.max(t);
                if let Some((later, r)) = self.act(a) {
                    push(&mut due, now + later, Action::Restart(r));
                }
            }
            {
                let mut judge = self.shared.judge();
                if judge.stopped() {
                    break;
                }
                if limit.is_some_and(|l| now >= l) {
                    judge.stop_at(MadsimStop::TimeLimit, now);
                    break;
                }
                if due.is_empty() && now >= judge.last_progress().max(calm_since) + quiet {
                    judge.stop_at(MadsimStop::Quiet, now);
                    break;
                }
            }
            let mut next = now + tick;
            if let Some((&(t, _), _)) = due.first_key_value() {
                next = next.min(t);
            }
            if let Some(l) = limit {
                next = next.min(l);
            }
            sleep_until(self.shared.at(next)).await;
        }
        self.outcome()
    }

    /// How long the group may go without progress (a call, a completion, an iteration, a
    /// generation, a registry step) before it counts as stuck: longer than a watchdog timeout
    /// and a failed rendezvous after it, and than a compute phase.
    pub fn quiet_bound(&self) -> Nanos {
        let s = &self.shared.scenario;
        let rendezvous = self
            .shared
            .cfg
            .elastic
            .as_ref()
            .map_or(0, |e| e.rendezvous_timeout());
        let slowest = s
            .faults
            .iter()
            .map(|f| match f {
                Fault::Slow { factor, .. } => *factor,
                _ => 1.0,
            })
            .fold(1.0, f64::max);
        let compute = (s.workload.compute.0 as f64 * slowest) as Nanos;
        2 * s.group.timeout.0 + 4 * rendezvous + 2 * compute + 1_000_000_000
    }

    /// Carries out one fault action; returns a restart to schedule (after, rank).
    fn act(&self, a: Action) -> Option<(Nanos, usize)> {
        let (i, begin) = match a {
            Action::Restart(r) => {
                if !self.shared.judge().alive(r) {
                    self.restart(r as u32);
                }
                return None;
            }
            Action::Begin(i) => (i, true),
            Action::End(i) => (i, false),
        };
        match &self.shared.scenario.faults[i] {
            Fault::Preempt {
                rank,
                restart_after,
                ..
            } => {
                let r = *rank as usize;
                if begin && self.shared.judge().alive(r) {
                    self.preempt(*rank, restart_after.is_some());
                    return restart_after.map(|d| (d.0, r));
                }
            }
            Fault::Pause { rank, .. } => {
                if self.shared.judge().alive(*rank as usize) {
                    if begin {
                        self.pause(*rank);
                    } else {
                        self.resume(*rank);
                    }
                }
            }
            Fault::Partition { sides, oneway, .. } => self.clog(sides, *oneway, begin),
            // delay, loss and slow are applied by the nodes; application bugs by the workload
            Fault::Delay { .. }
            | Fault::Loss { .. }
            | Fault::Slow { .. }
            | Fault::Mismatch { .. }
            | Fault::Skip { .. }
            | Fault::Hang { .. } => {}
        }
        None
    }
}
