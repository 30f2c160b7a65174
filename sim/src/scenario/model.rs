//! The typed scenario model. Field names are the contract: they are the TOML keys
//! (scenarios/README.md). The vocabulary the protocols share (ops, algorithms, dtypes, reduce
//! ops, rendezvous kinds, meshes) lives in `ringside-proto` and is re-exported here.

use crate::cause::RootCause;
use crate::fault::{FaultKind, Trigger};
use crate::units::{Bandwidth, Duration, PerByte, Size};
pub use ringside_proto::node::NodeKind;
pub use ringside_proto::vocab::{
    Algorithm, Dtype, Mesh, OpKind, Peer, PeerStep, ReduceOp, RegistryAction, RendezvousKind,
};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A whole scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<Duration>,
    pub world: World,
    #[serde(default)]
    pub network: Network,
    #[serde(default)]
    pub engine: EngineConfig,
    #[serde(default)]
    pub group: GroupConfig,
    /// Named groups (`[[groups]]`), like `torch.distributed.new_group` or a DeviceMesh slice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<NamedGroup>,
    /// Omitted when a real program is the workload (`[torch]`).
    #[serde(default)]
    pub workload: Workload,
    /// A real PyTorch program is the workload (`ringside torchrun`, docs/torchrun.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<Torch>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// How `export --fr` writes the run's Flight Recorder dumps (`[flight_recorder]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight_recorder: Option<FlightRecorder>,
}

/// What an imported job's dumps said that a simulation does not model, so that `export --fr`
/// writes the run's dumps as the job wrote them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlightRecorder {
    /// The backend that prefixes each record's profiling name (`nccl`, `gloo`...); default
    /// `nccl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Ranks that leave no dump, as in the job (a rank the backend aborted stays alive in the
    /// simulation, blocked where the job left it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_dump: Vec<u32>,
}

impl Scenario {
    /// How many nodes a run of the scenario has: its ranks, and the store of a store
    /// rendezvous (node `world.size`).
    pub fn nodes(&self) -> u32 {
        let store = self
            .group
            .elastic
            .as_ref()
            .is_some_and(|e| e.rendezvous == RendezvousKind::Store);
        self.world.size.saturating_add(u32::from(store))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct World {
    /// Number of ranks.
    pub size: u32,
    /// Ranks per host for the two-level topology (1 = every rank on its own host).
    #[serde(default = "one")]
    pub ranks_per_host: u32,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetModel {
    #[default]
    AlphaBeta,
    Loggp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    #[serde(default)]
    pub model: NetModel,
    /// alpha: per-message latency (alpha-beta).
    #[serde(default = "default_latency")]
    pub latency: Duration,
    /// 1/beta (alpha-beta).
    #[serde(default = "default_bandwidth")]
    pub bandwidth: Bandwidth,
    /// 1/gamma: local reduction speed; absent = reductions are free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_bandwidth: Option<Bandwidth>,
    /// Uniform random extra delay in [0, jitter] per message, seeded.
    #[serde(default)]
    pub jitter: Duration,
    /// How long a lost or blocked reliable message waits before it is sent again.
    #[serde(default = "default_retransmit")]
    pub retransmit_timeout: Duration,
    /// Links between ranks on the same host (used when ranks_per_host > 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_host: Option<Link>,
    /// Send ports and receive ports of each rank (alpha-beta): a message takes the port that
    /// is free first, so up to this many of a rank's messages travel at once.
    #[serde(default = "one_port", skip_serializing_if = "is_one_port")]
    pub ports: u32,
    /// LogGP wire latency.
    #[serde(default, rename = "L", skip_serializing_if = "Option::is_none")]
    pub loggp_l: Option<Duration>,
    /// LogGP per-message CPU overhead, paid by the sender and by the receiver.
    #[serde(default, rename = "o", skip_serializing_if = "Option::is_none")]
    pub loggp_o: Option<Duration>,
    /// LogGP gap between consecutive message injections of one rank.
    #[serde(default, rename = "g", skip_serializing_if = "Option::is_none")]
    pub loggp_g: Option<Duration>,
    /// LogGP gap per byte.
    #[serde(default, rename = "G", skip_serializing_if = "Option::is_none")]
    pub loggp_gb: Option<PerByte>,
}

fn default_latency() -> Duration {
    Duration(5_000)
}
fn default_bandwidth() -> Bandwidth {
    Bandwidth(25_000_000_000)
}
fn default_retransmit() -> Duration {
    Duration(200_000_000)
}
fn one_port() -> u32 {
    1
}
fn is_one_port(ports: &u32) -> bool {
    *ports == 1
}

impl Default for Network {
    fn default() -> Self {
        Network {
            model: NetModel::AlphaBeta,
            latency: default_latency(),
            bandwidth: default_bandwidth(),
            reduce_bandwidth: None,
            jitter: Duration::ZERO,
            retransmit_timeout: default_retransmit(),
            intra_host: None,
            ports: 1,
            loggp_l: None,
            loggp_o: None,
            loggp_g: None,
            loggp_gb: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub latency: Duration,
    pub bandwidth: Bandwidth,
}

/// How the engine breaks ties between events at the same virtual time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TieBreak {
    /// Insertion order (the default).
    #[default]
    Insertion,
    /// A seeded shuffle, to explore other orderings.
    Shuffle,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    #[serde(default)]
    pub tie_break: TieBreak,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Collective watchdog timeout.
    #[serde(default = "default_timeout")]
    pub timeout: Duration,
    /// Default allreduce algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elastic: Option<Elastic>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<Mesh>,
}

fn default_timeout() -> Duration {
    Duration(30_000_000_000)
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            timeout: default_timeout(),
            algorithm: None,
            elastic: None,
            mesh: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Elastic {
    pub min_size: u32,
    pub max_size: u32,
    #[serde(default = "default_hb_interval")]
    pub heartbeat_interval: Duration,
    #[serde(default = "default_hb_misses")]
    pub heartbeat_misses: u32,
    #[serde(default)]
    pub rendezvous: RendezvousKind,
}

fn default_hb_interval() -> Duration {
    Duration(100_000_000)
}
fn default_hb_misses() -> u32 {
    3
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    #[serde(default = "one")]
    pub iterations: u32,
    #[serde(default)]
    pub compute: Duration,
    #[serde(default = "default_dtype")]
    pub dtype: Dtype,
    #[serde(default = "default_elements")]
    pub elements: u32,
    #[serde(default)]
    pub ops: Vec<OpSpec>,
    /// Ranks that run their own ops instead of `ops` (divergent control flow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<Program>,
    /// A generated pipeline-parallel schedule of send/recv and compute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Pipeline>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registry: Vec<RegistryStep>,
    /// A node of the program's own, registered under this name, runs on every rank instead
    /// of ops (`ringside_sim::proto::node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeKind>,
}

impl Default for Workload {
    fn default() -> Workload {
        Workload {
            iterations: one(),
            compute: Duration::default(),
            dtype: default_dtype(),
            elements: default_elements(),
            ops: Vec::new(),
            programs: Vec::new(),
            pipeline: None,
            registry: Vec::new(),
            node: None,
        }
    }
}

/// `[torch]`: the workload is a real PyTorch program that `ringside torchrun` starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Torch {
    /// How the program's own work between two calls advances its rank's clock.
    #[serde(default)]
    pub compute: ComputeModel,
}

/// `[torch] compute`: `"zero"`, `"fixed:<duration>"` per call, or `"measured:<factor>"` (the
/// process's CPU time since its previous call, times the factor: not deterministic).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ComputeModel {
    #[default]
    Zero,
    Fixed(Duration),
    Measured(f64),
}

impl ComputeModel {
    pub fn parse(s: &str) -> Result<ComputeModel, String> {
        let bad = || {
            format!(
                "`{s}` is not a compute model: \"zero\", \"fixed:<duration>\" or \
                 \"measured:<factor>\""
            )
        };
        match s.split_once(':') {
            None if s == "zero" => Ok(ComputeModel::Zero),
            Some(("fixed", d)) => Duration::parse(d)
                .map(ComputeModel::Fixed)
                .map_err(|e| format!("{}: {e}", bad())),
            Some(("measured", f)) => match f.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => Ok(ComputeModel::Measured(f)),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for ComputeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComputeModel::Zero => f.write_str("zero"),
            ComputeModel::Fixed(d) => write!(f, "fixed:{d}"),
            ComputeModel::Measured(x) => write!(f, "measured:{x}"),
        }
    }
}

impl Serialize for ComputeModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ComputeModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ComputeModel::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// `[[groups]]`: a named group, as one list of ranks or as disjoint sub-groups (one per list).
/// A member's rank in its (sub-)group is its position in the list as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedGroup {
    pub name: String,
    pub ranks: GroupRanks,
}

/// The ranks of a named group: one list, or a list of disjoint lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum GroupRanks {
    One(Vec<u32>),
    Many(Vec<Vec<u32>>),
}

impl<'de> Deserialize<'de> for GroupRanks {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = GroupRanks;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a list of ranks, e.g. [0, 1, 2], or a list of lists, e.g. [[0, 2], [1, 3]]",
                )
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<GroupRanks, A::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Item {
                    Rank(u32),
                    List(Vec<u32>),
                }
                let mut one = Vec::new();
                let mut many = Vec::new();
                while let Some(item) = seq.next_element::<Item>().map_err(|_| {
                    serde::de::Error::custom(
                        "expected ranks (integers), or lists of ranks; not both in one list",
                    )
                })? {
                    match item {
                        Item::Rank(r) => one.push(r),
                        Item::List(l) => many.push(l),
                    }
                }
                match (one.is_empty(), many.is_empty()) {
                    (_, true) => Ok(GroupRanks::One(one)),
                    (true, false) => Ok(GroupRanks::Many(many)),
                    (false, false) => Err(serde::de::Error::custom(
                        "mixes ranks and lists of ranks: write one list, or a list of lists",
                    )),
                }
            }
        }
        d.deserialize_seq(V)
    }
}

impl GroupRanks {
    /// The sub-groups, each in group-rank order.
    pub fn subgroups(&self) -> Vec<&[u32]> {
        match self {
            GroupRanks::One(r) => vec![r.as_slice()],
            GroupRanks::Many(rs) => rs.iter().map(Vec::as_slice).collect(),
        }
    }
}

/// `[[workload.programs]]`: these ranks run these ops instead of `[[workload.ops]]` (and
/// instead of the pipeline's steps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    pub ranks: Vec<u32>,
    #[serde(default)]
    pub ops: Vec<OpSpec>,
}

/// `[workload.pipeline]`: each sub-group of `group` is one pipeline, its stages in list order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    /// A named group or mesh dimension (default: the world, one pipeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub microbatches: u32,
    #[serde(default)]
    pub schedule: PipeSchedule,
    /// Compute per microbatch per stage, forward and backward.
    pub forward: Duration,
    pub backward: Duration,
    /// Activations sent forward, gradients backward, per microbatch.
    pub bytes: Size,
}

/// The order in which a stage runs its microbatches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipeSchedule {
    /// All forwards, then all backwards (GPipe).
    Gpipe,
    /// One forward, one backward in the steady state (PipeDream-flush / Megatron's 1F1B).
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
}

fn default_dtype() -> Dtype {
    Dtype::F32
}
fn default_elements() -> u32 {
    64
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSpec {
    pub op: OpKind,
    /// Modeled size n (allgather: the gathered output; reduce_scatter: the input).
    #[serde(default)]
    pub bytes: Size,
    #[serde(default)]
    pub reduce: ReduceOp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<u32>,
    /// A mesh dimension or a `[[groups]]` name: the op runs on every sub-group of it (a rank in
    /// none of them does not issue it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// send / recv: the other member (a group rank, or "next" / "prev").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
    /// send: done only once received, not once its bytes have left.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rendezvous: bool,
    /// Time spent computing before the call is issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<Duration>,
    /// Where the program makes the call (`train.py:86`): an imported job's call site, written
    /// into the stack frames of `export --fr`. Calls from different sites are different calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
}

impl OpSpec {
    /// A call of `op` with every optional key left out.
    pub fn of(op: OpKind) -> OpSpec {
        OpSpec {
            op,
            bytes: Size(0),
            reduce: ReduceOp::Sum,
            algorithm: None,
            root: None,
            group: None,
            peer: None,
            rendezvous: false,
            compute: None,
            site: None,
        }
    }
}

/// One step of a `:pg`-style registry workload (see scenarios/README.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryStep {
    pub at: Duration,
    pub rank: u32,
    pub action: RegistryAction,
    pub group: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `query`: the members this step expects to see (checked by `[expect]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_members: Option<Vec<u32>>,
}

/// One injected fault. `delay` and `loss` apply to either all links of one `rank` or
/// to one `link`. Deserialization is written by hand (see `fault_de.rs`) so that errors inside a
/// fault keep their position and name their key.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    Preempt {
        rank: u32,
        #[serde(flatten)]
        at: Trigger,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restart_after: Option<Duration>,
    },
    Pause {
        rank: u32,
        #[serde(flatten)]
        at: Trigger,
        duration: Duration,
    },
    Partition {
        sides: Vec<Vec<u32>>,
        #[serde(flatten)]
        at: Trigger,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        #[serde(default, skip_serializing_if = "is_false")]
        oneway: bool,
    },
    Delay {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rank: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<[u32; 2]>,
        #[serde(flatten)]
        at: Trigger,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        extra: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        jitter: Option<Duration>,
    },
    Loss {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rank: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<[u32; 2]>,
        #[serde(flatten)]
        at: Trigger,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        rate: f64,
    },
    Slow {
        rank: u32,
        #[serde(flatten)]
        at: Trigger,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Duration>,
        factor: f64,
    },
    Mismatch {
        rank: u32,
        iteration: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op_index: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op: Option<OpKind>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<Size>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        root: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dtype: Option<Dtype>,
    },
    Skip {
        rank: u32,
        iteration: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        op_index: Option<u32>,
    },
    Hang {
        rank: u32,
        iteration: u32,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Fault {
    /// What the fault does, as written in `kind = "..."`.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Preempt { .. } => FaultKind::Preempt,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Delay { .. } => FaultKind::Delay,
            Fault::Loss { .. } => FaultKind::Loss,
            Fault::Slow { .. } => FaultKind::Slow,
            Fault::Mismatch { .. } => FaultKind::Mismatch,
            Fault::Skip { .. } => FaultKind::Skip,
            Fault::Hang { .. } => FaultKind::Hang,
        }
    }

    /// Whether this fault is a partition that drops traffic from `from` to `to` while it acts
    /// (see [`crate::fault::cuts`]).
    pub fn cuts(&self, from: u32, to: u32) -> bool {
        match self {
            Fault::Partition { sides, oneway, .. } => crate::fault::cuts(sides, *oneway, from, to),
            _ => false,
        }
    }

    /// When a timed kind begins: at a time or at a call of its rank.
    pub fn trigger(&self) -> Option<Trigger> {
        match self {
            Fault::Preempt { at, .. }
            | Fault::Pause { at, .. }
            | Fault::Partition { at, .. }
            | Fault::Delay { at, .. }
            | Fault::Loss { at, .. }
            | Fault::Slow { at, .. } => Some(*at),
            Fault::Mismatch { .. } | Fault::Skip { .. } | Fault::Hang { .. } => None,
        }
    }

    /// Virtual time the fault starts, for the timed kinds triggered at a time (`at`).
    pub fn at(&self) -> Option<Duration> {
        self.trigger().and_then(Trigger::time)
    }

    /// The rank whose K-th call starts the fault, for the kinds triggered at a call
    /// (`at_call`): (rank, K).
    pub fn at_call(&self) -> Option<(u32, u32)> {
        let k = self.trigger()?.call()?;
        match self {
            Fault::Preempt { rank, .. } | Fault::Pause { rank, .. } | Fault::Slow { rank, .. } => {
                Some((*rank, k))
            }
            Fault::Delay { rank, .. } | Fault::Loss { rank, .. } => Some(((*rank)?, k)),
            _ => None,
        }
    }

    /// How long a timed fault lasts; `None` = permanent (or not timed).
    pub fn duration(&self) -> Option<Duration> {
        match self {
            Fault::Pause { duration, .. } => Some(*duration),
            Fault::Partition { duration, .. }
            | Fault::Delay { duration, .. }
            | Fault::Loss { duration, .. }
            | Fault::Slow { duration, .. } => *duration,
            Fault::Preempt { .. }
            | Fault::Mismatch { .. }
            | Fault::Skip { .. }
            | Fault::Hang { .. } => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every rank finished the workload in the first generation.
    Completed,
    /// Some ranks are blocked: a watchdog fired, or nothing is left to happen.
    Stalled,
    /// The workload finished in a later generation, after the group was rebuilt.
    Rebuilt,
    /// The virtual time limit passed while the run was still making progress.
    TimedOut,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Stalled => "stalled",
            Outcome::Rebuilt => "rebuilt",
            Outcome::TimedOut => "timed_out",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Vec<u32>>,
    /// Exactly these root causes, in any order: compared as a set of what they name (see
    /// [`RootCause`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_causes: Option<Vec<RootCause>>,
    /// Every completed collective's result is correct (default: checked when present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// Number of generations formed (including the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generations: Option<u32>,
}
