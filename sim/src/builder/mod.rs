//! A run described in code: the [`Scenario`] a TOML file would hold, built call by call.
//!
//! [`Builder`] sets what a scenario file sets (ranks, network, groups, the workload's ops,
//! faults, the seed) and builds the one [`Scenario`] type the scenario reader builds, checked
//! by the same validator and the engine's support gate. Quantities are written as in a
//! scenario file (`"5us"`, `"64MiB"`, `"25GB/s"`) or given typed ([`Duration`],
//! [`std::time::Duration`], [`Size`], [`Bandwidth`]). An error names the builder call at fault
//! and the scenario key it sets, as a file's error names its line and key:
//!
//! ```
//! use ringside_sim::builder::{fault, op, Builder};
//! use ringside_sim::scenario::Outcome;
//!
//! let (case, run) = Builder::new("preempted")
//!     .ranks(4)
//!     .latency("5us")
//!     .bandwidth("25GB/s")
//!     .timeout("1s")
//!     .op(op::allreduce("1MiB"))
//!     .fault(fault::preempt(2).at("0s"))
//!     .seed(7)
//!     .run()
//!     .expect("a valid scenario");
//! assert_eq!(run.report.outcome, Outcome::Stalled);
//! assert_eq!(run.diagnosis.root_causes()[0].to_string(), "preempted:2");
//! assert_eq!(case.seed, 7);
//!
//! let e = Builder::new("nobody").ranks(0).build().unwrap_err();
//! assert_eq!(e.to_string(), "ranks(): world.size: the world needs at least one rank");
//! ```
//!
//! [`Builder::run`] runs the scenario once on the engine and gives the
//! [`Case`](crate::check::Case) and its [`Run`](crate::check::Run): the report (outcome, every
//! op's time and whether its result is right), the diagnosis, the trace
//! ([`Run::write_trace`](crate::check::Run::write_trace)), and what every
//! [`Property`](crate::check::Property) and [`UserProperty`](crate::check::UserProperty)
//! judges.

pub mod fault;
pub mod op;

use crate::check::{Case, Run};
use crate::scenario::{
    unsupported, validate, Algorithm, Dtype, Elastic, GroupRanks, Link, NamedGroup, NetModel,
    Program, RendezvousKind, Scenario, TieBreak, World,
};
use crate::units::{Bandwidth, Duration, PerByte, Size};
use std::fmt;

/// A scenario that cannot be built: the builder call at fault, the scenario key it sets
/// (`faults[1].rank`; empty when the error is not about one key), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// The call, as written: `ranks()`, `op(#2 allreduce).algorithm()`, `fault(#1 pause)`.
    pub call: String,
    pub key: String,
    pub message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.call)?;
        if !self.key.is_empty() {
            write!(f, " {}:", self.key)?;
        }
        write!(f, " {}", self.message)
    }
}

impl std::error::Error for BuildError {}

/// A quantity given to a builder: text as a scenario file writes it, or the typed value.
pub trait Quantity<T> {
    /// The value, or why the text is not one.
    fn value(self) -> Result<T, String>;
}

impl Quantity<Duration> for Duration {
    fn value(self) -> Result<Duration, String> {
        Ok(self)
    }
}

impl Quantity<Duration> for std::time::Duration {
    fn value(self) -> Result<Duration, String> {
        u64::try_from(self.as_nanos())
            .ok()
            .map(Duration)
            .filter(|d| *d <= Duration::MAX)
            .ok_or_else(|| format!("{self:?} is longer than the longest duration accepted"))
    }
}

impl Quantity<Size> for Size {
    fn value(self) -> Result<Size, String> {
        Ok(self)
    }
}

/// A number of bytes.
impl Quantity<Size> for u64 {
    fn value(self) -> Result<Size, String> {
        Ok(Size(self))
    }
}

impl Quantity<Bandwidth> for Bandwidth {
    fn value(self) -> Result<Bandwidth, String> {
        Ok(self)
    }
}

impl Quantity<PerByte> for PerByte {
    fn value(self) -> Result<PerByte, String> {
        Ok(self)
    }
}

macro_rules! parsed_from_text {
    ($($t:ty),*) => {$(
        impl Quantity<$t> for &str {
            fn value(self) -> Result<$t, String> {
                <$t>::parse(self).map_err(|e| e.to_string())
            }
        }
        impl Quantity<$t> for String {
            fn value(self) -> Result<$t, String> {
                <$t>::parse(&self).map_err(|e| e.to_string())
            }
        }
    )*};
}
parsed_from_text!(Duration, Size, Bandwidth, PerByte);

/// The scenario being built, and what each call set.
#[derive(Clone, Debug)]
pub struct Builder {
    scenario: Scenario,
    /// (key path, call) for each call made: a validation error on a key is the call's that set
    /// the longest path above it.
    calls: Vec<(String, String)>,
    /// The first error met while calling, reported by [`Builder::build`].
    error: Option<BuildError>,
}

impl Builder {
    /// A scenario named `name`: one rank, the scenario format's defaults everywhere, no ops.
    pub fn new(name: impl Into<String>) -> Builder {
        let mut b = Builder {
            scenario: Scenario {
                name: name.into(),
                description: None,
                seed: 0,
                time_limit: None,
                world: World {
                    size: 1,
                    ranks_per_host: 1,
                },
                network: Default::default(),
                engine: Default::default(),
                group: Default::default(),
                groups: Vec::new(),
                workload: Default::default(),
                torch: None,
                faults: Vec::new(),
                expect: None,
                flight_recorder: None,
            },
            calls: Vec::new(),
            error: None,
        };
        b.set("name", "new()");
        b
    }

    /// The scenario as built so far, checked: the validator's error names the call that set
    /// the key at fault.
    pub fn build(self) -> Result<Scenario, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let at_call = |(key, message): (String, String)| BuildError {
            call: self.call_of(&key),
            key,
            message,
        };
        validate(&self.scenario).map_err(at_call)?;
        unsupported(&self.scenario, &crate::engine::SUPPORT).map_err(at_call)?;
        Ok(self.scenario)
    }

    /// Builds the scenario and runs it once on the engine, with its seed, keeping its trace.
    pub fn run(self) -> Result<(Case, Run), BuildError> {
        let case = Case::new(self.build()?);
        let run = case.run();
        Ok((case, run))
    }

    /// The call that set `key`, or the nearest of its ancestors.
    fn call_of(&self, key: &str) -> String {
        let under = |prefix: &str| {
            key.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        self.calls
            .iter()
            .rev()
            .filter(|(prefix, _)| under(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map_or_else(|| "build()".to_string(), |(_, call)| call.clone())
    }

    fn set(&mut self, key: impl Into<String>, call: impl Into<String>) {
        self.calls.push((key.into(), call.into()));
    }

    fn fail(&mut self, call: impl Into<String>, key: impl Into<String>, message: String) {
        if self.error.is_none() {
            self.error = Some(BuildError {
                call: call.into(),
                key: key.into(),
                message,
            });
        }
    }

    /// Sets the field at `key` to the quantity `q`, or records why `q` is not one.
    fn quantity<T, Q: Quantity<T>>(
        mut self,
        key: &str,
        call: &str,
        q: Q,
        field: impl FnOnce(&mut Scenario) -> &mut T,
    ) -> Self {
        match q.value() {
            Ok(v) => *field(&mut self.scenario) = v,
            Err(e) => self.fail(call, key, e),
        }
        self.set(key, call);
        self
    }

    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.scenario.description = Some(text.into());
        self.set("description", "description()");
        self
    }

    /// The seed of the run (the engine's one RNG: jitter, losses, shuffled ties).
    pub fn seed(mut self, seed: u64) -> Self {
        self.scenario.seed = seed;
        self.set("seed", "seed()");
        self
    }

    /// The virtual time after which the run ends as `timed_out`.
    pub fn time_limit(self, limit: impl Quantity<Duration>) -> Self {
        let mut b = self;
        match limit.value() {
            Ok(d) => b.scenario.time_limit = Some(d),
            Err(e) => b.fail("time_limit()", "time_limit", e),
        }
        b.set("time_limit", "time_limit()");
        b
    }

    /// How many ranks the world has (`[world] size`).
    pub fn ranks(mut self, n: u32) -> Self {
        self.scenario.world.size = n;
        self.set("world.size", "ranks()");
        self
    }

    /// Consecutive ranks per host, for the two-level topology (`[world] ranks_per_host`).
    pub fn ranks_per_host(mut self, n: u32) -> Self {
        self.scenario.world.ranks_per_host = n;
        self.set("world.ranks_per_host", "ranks_per_host()");
        self
    }

    /// alpha, the latency of a message (`[network] latency`).
    pub fn latency(self, d: impl Quantity<Duration>) -> Self {
        self.quantity("network.latency", "latency()", d, |s| {
            &mut s.network.latency
        })
    }

    /// 1/beta (`[network] bandwidth`).
    pub fn bandwidth(self, b: impl Quantity<Bandwidth>) -> Self {
        self.quantity("network.bandwidth", "bandwidth()", b, |s| {
            &mut s.network.bandwidth
        })
    }

    /// 1/gamma, the speed of local reductions (`[network] reduce_bandwidth`).
    pub fn reduce_bandwidth(mut self, b: impl Quantity<Bandwidth>) -> Self {
        let (key, call) = ("network.reduce_bandwidth", "reduce_bandwidth()");
        match b.value() {
            Ok(b) => self.scenario.network.reduce_bandwidth = Some(b),
            Err(e) => self.fail(call, key, e),
        }
        self.set(key, call);
        self
    }

    /// The most extra delay of a message, uniform and seeded (`[network] jitter`).
    pub fn jitter(self, d: impl Quantity<Duration>) -> Self {
        self.quantity("network.jitter", "jitter()", d, |s| &mut s.network.jitter)
    }

    /// How long a lost reliable message waits before it is sent again.
    pub fn retransmit_timeout(self, d: impl Quantity<Duration>) -> Self {
        self.quantity(
            "network.retransmit_timeout",
            "retransmit_timeout()",
            d,
            |s| &mut s.network.retransmit_timeout,
        )
    }

    /// Send ports and receive ports of each rank (`[network] ports`).
    pub fn ports(mut self, n: u32) -> Self {
        self.scenario.network.ports = n;
        self.set("network.ports", "ports()");
        self
    }

    /// The links between ranks of one host (`[network.intra_host]`).
    pub fn intra_host(
        mut self,
        latency: impl Quantity<Duration>,
        bw: impl Quantity<Bandwidth>,
    ) -> Self {
        let (key, call) = ("network.intra_host", "intra_host()");
        match (latency.value(), bw.value()) {
            (Ok(latency), Ok(bandwidth)) => {
                self.scenario.network.intra_host = Some(Link { latency, bandwidth })
            }
            (Err(e), _) => self.fail(call, format!("{key}.latency"), e),
            (_, Err(e)) => self.fail(call, format!("{key}.bandwidth"), e),
        }
        self.set(key, call);
        self
    }

    /// The LogGP model with its parameters L, o, g and G (`model = "loggp"`).
    pub fn loggp(
        mut self,
        l: impl Quantity<Duration>,
        o: impl Quantity<Duration>,
        g: impl Quantity<Duration>,
        gb: impl Quantity<PerByte>,
    ) -> Self {
        let call = "loggp()";
        let n = &mut self.scenario.network;
        n.model = NetModel::Loggp;
        let values = (l.value(), o.value(), g.value(), gb.value());
        match values {
            (Ok(l), Ok(o), Ok(g), Ok(gb)) => {
                n.loggp_l = Some(l);
                n.loggp_o = Some(o);
                n.loggp_g = Some(g);
                n.loggp_gb = Some(gb);
            }
            (Err(e), ..) => self.fail(call, "network.L", e),
            (_, Err(e), ..) => self.fail(call, "network.o", e),
            (_, _, Err(e), _) => self.fail(call, "network.g", e),
            (.., Err(e)) => self.fail(call, "network.G", e),
        }
        self.set("network", call);
        self
    }

    /// How the engine breaks ties between events at one time (`[engine] tie_break`).
    pub fn tie_break(mut self, t: TieBreak) -> Self {
        self.scenario.engine.tie_break = t;
        self.set("engine.tie_break", "tie_break()");
        self
    }

    /// The collective watchdog (`[group] timeout`).
    pub fn timeout(self, d: impl Quantity<Duration>) -> Self {
        self.quantity("group.timeout", "timeout()", d, |s| &mut s.group.timeout)
    }

    /// The default allreduce algorithm (`[group] algorithm`): a stock one or one registered
    /// with [`custom::register`](crate::proto::collective::custom::register).
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.scenario.group.algorithm = Some(a);
        self.set("group.algorithm", "algorithm()");
        self
    }

    /// An elastic group of `min..=max` members that detects failures, rebuilds and resumes
    /// (`[group] elastic`, its heartbeats at their defaults; see [`Builder::heartbeat`]).
    pub fn elastic(mut self, min_size: u32, max_size: u32) -> Self {
        self.scenario.group.elastic = Some(Elastic {
            min_size,
            max_size,
            heartbeat_interval: Duration(100_000_000),
            heartbeat_misses: 3,
            rendezvous: RendezvousKind::default(),
        });
        self.set("group.elastic", "elastic()");
        self
    }

    /// The elastic group's heartbeats: their interval, and how many missed ones declare a
    /// member dead.
    pub fn heartbeat(mut self, interval: impl Quantity<Duration>, misses: u32) -> Self {
        let call = "heartbeat()";
        match (interval.value(), self.scenario.group.elastic.as_mut()) {
            (Ok(d), Some(e)) => {
                e.heartbeat_interval = d;
                e.heartbeat_misses = misses;
            }
            (Err(e), _) => self.fail(call, "group.elastic.heartbeat_interval", e),
            (_, None) => self.fail(call, "group.elastic", "call elastic() first".into()),
        }
        self.set("group.elastic.heartbeat", call);
        self
    }

    /// How the elastic group meets (`rendezvous`): its ranks, or a store node.
    pub fn rendezvous(mut self, kind: RendezvousKind) -> Self {
        let call = "rendezvous()";
        match self.scenario.group.elastic.as_mut() {
            Some(e) => e.rendezvous = kind,
            None => self.fail(call, "group.elastic", "call elastic() first".into()),
        }
        self.set("group.elastic.rendezvous", call);
        self
    }

    /// A named group (`[[groups]]`): one list of ranks, or disjoint lists, each a sub-group.
    pub fn group(mut self, name: impl Into<String>, ranks: impl Into<Ranks>) -> Self {
        let i = self.scenario.groups.len();
        let name = name.into();
        self.set(format!("groups[{i}]"), format!("group({name:?})"));
        self.scenario.groups.push(NamedGroup {
            name,
            ranks: ranks.into().0,
        });
        self
    }

    /// Iterations of the training loop (`[workload] iterations`).
    pub fn iterations(mut self, n: u32) -> Self {
        self.scenario.workload.iterations = n;
        self.set("workload.iterations", "iterations()");
        self
    }

    /// Compute at the start of each iteration (`[workload] compute`).
    pub fn compute(self, d: impl Quantity<Duration>) -> Self {
        self.quantity("workload.compute", "compute()", d, |s| {
            &mut s.workload.compute
        })
    }

    /// The element type of the real buffers.
    pub fn dtype(mut self, d: Dtype) -> Self {
        self.scenario.workload.dtype = d;
        self.set("workload.dtype", "dtype()");
        self
    }

    /// Real elements per rank buffer (`[workload] elements`).
    pub fn elements(mut self, n: u32) -> Self {
        self.scenario.workload.elements = n;
        self.set("workload.elements", "elements()");
        self
    }

    /// A node of the program's own runs on every rank instead of ops (`[workload] node`;
    /// see [`crate::proto::node`]).
    pub fn node(mut self, kind: crate::proto::node::NodeKind) -> Self {
        self.scenario.workload.node = Some(kind);
        self.set("workload.node", "node()");
        self
    }

    /// One more op of every iteration (`[[workload.ops]]`).
    pub fn op(mut self, op: op::Op) -> Self {
        let i = self.scenario.workload.ops.len();
        let call = format!("op(#{} {})", i + 1, op.spec.op);
        self.set(format!("workload.ops[{i}]"), call.clone());
        if let Some((method, key, e)) = op.error {
            self.fail(then(&call, method), format!("workload.ops[{i}].{key}"), e);
        }
        self.scenario.workload.ops.push(op.spec);
        self
    }

    /// These ranks run these ops instead of the workload's (`[[workload.programs]]`).
    pub fn program(
        mut self,
        ranks: impl Into<Vec<u32>>,
        ops: impl IntoIterator<Item = op::Op>,
    ) -> Self {
        let i = self.scenario.workload.programs.len();
        let call = format!("program(#{})", i + 1);
        let key = format!("workload.programs[{i}]");
        self.set(key.clone(), call.clone());
        let mut program = Program {
            ranks: ranks.into(),
            ops: Vec::new(),
        };
        for (j, op) in ops.into_iter().enumerate() {
            if let Some((method, k, e)) = op.error {
                let op_call = format!("{call} op(#{} {})", j + 1, op.spec.op);
                self.fail(then(&op_call, method), format!("{key}.ops[{j}].{k}"), e);
            }
            program.ops.push(op.spec);
        }
        self.scenario.workload.programs.push(program);
        self
    }

    /// One more fault (`[[faults]]`).
    pub fn fault(mut self, f: fault::FaultSpec) -> Self {
        let i = self.scenario.faults.len();
        let call = format!("fault(#{} {})", i + 1, f.fault.kind());
        self.set(format!("faults[{i}]"), call.clone());
        if let Some((method, key, e)) = f.error {
            self.fail(then(&call, method), format!("faults[{i}].{key}"), e);
        }
        self.scenario.faults.push(f.fault);
        self
    }
}

/// `call`, then `method` on what it made (nothing when the constructor itself failed).
fn then(call: &str, method: &str) -> String {
    if method.is_empty() {
        call.to_string()
    } else {
        format!("{call}.{method}()")
    }
}

/// The ranks of a named group: `[0, 1, 2]`, or disjoint lists `&[&[0, 2], &[1, 3]]`.
pub struct Ranks(GroupRanks);

impl From<Vec<u32>> for Ranks {
    fn from(r: Vec<u32>) -> Ranks {
        Ranks(GroupRanks::One(r))
    }
}

impl<const N: usize> From<[u32; N]> for Ranks {
    fn from(r: [u32; N]) -> Ranks {
        Ranks(GroupRanks::One(r.to_vec()))
    }
}

impl From<Vec<Vec<u32>>> for Ranks {
    fn from(r: Vec<Vec<u32>>) -> Ranks {
        Ranks(GroupRanks::Many(r))
    }
}

impl From<&[&[u32]]> for Ranks {
    fn from(r: &[&[u32]]) -> Ranks {
        Ranks(GroupRanks::Many(r.iter().map(|s| s.to_vec()).collect()))
    }
}

#[cfg(test)]
mod tests;
