//! The training loop that drives the process groups: each iteration computes, then runs the
//! rank's program: its steps in order, each a compute phase or a call (a collective, or a send
//! or recv to one peer). Every rank may have a program of its own (per-rank programs, the
//! stages of a pipeline); a rank outside the group an op runs on, or without the peer a send or
//! recv names, does not issue it. Application bugs (`mismatch`, `skip`, `hang`) are part of the
//! application, so they live here, as the configuration of the rank's workload, and index the
//! calls of the rank's own program.

use super::collective::Members;
use super::elastic::ElasticConfig;
use super::mutation::Mutations;
use super::registry::RegistryConfig;
use super::types::{Generation, GroupId, Rank, SeqNo};
use crate::time::Nanos;
use crate::vocab::{Algorithm, Dtype, OpKind, Peer, ReduceOp};
use std::sync::Arc;

/// The group an op runs along: the world, or one of [`WorkloadConfig::layouts`] (every
/// sub-group of it at once, each with its own sequence numbers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Along {
    #[default]
    World,
    /// Layout i: a mesh dimension or a named group.
    Layout(u32),
}

/// One call of the loop, with every parameter resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCall {
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub reduce: ReduceOp,
    pub root: u32,
    pub dtype: Dtype,
    pub along: Along,
    /// Send and recv: the other member (a group rank, or the next or previous one).
    pub peer: Option<Peer>,
}

/// One step of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Compute for this long (a forward or backward pass, the work between two calls).
    Compute(Nanos),
    /// Issue call `index` of the program (calls are numbered apart from computes: what
    /// `op_index` and the reports count).
    Call { index: u32, call: OpCall },
}

/// What a rank runs in every iteration, after the iteration's `compute`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub steps: Vec<Step>,
    /// The scenario declares these calls for the rank (`[[workload.ops]]`, the pipeline):
    /// false for a `[[workload.programs]]` entry, a deviation from what the others expect.
    pub declared: bool,
}

impl Program {
    /// Call `index` of the program.
    pub fn call(&self, index: u32) -> Option<&OpCall> {
        self.steps.iter().find_map(|s| match s {
            Step::Call { index: i, call } if *i == index => Some(call),
            _ => None,
        })
    }

    /// How many calls an iteration of the program issues at most.
    pub fn calls(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Call { .. }))
            .count()
    }
}

/// One sub-group of a layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubGroup {
    pub id: GroupId,
    pub members: Arc<Members>,
}

/// A way of splitting (part of) the world into disjoint sub-groups: a mesh dimension or a named
/// group. Sub-group ids are consecutive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub name: String,
    pub groups: Vec<SubGroup>,
    /// The index in `groups` of each world rank's sub-group (`u32::MAX`: in none).
    of_rank: Vec<u32>,
}

impl Layout {
    /// A layout of `groups` (member lists in group-rank order) numbered from `first`, over a
    /// world of `world` ranks.
    pub fn new(name: &str, first: GroupId, groups: Vec<Vec<Rank>>, world: u32) -> Layout {
        let mut of_rank = vec![u32::MAX; world as usize];
        for (j, g) in groups.iter().enumerate() {
            for r in g {
                if let Some(x) = of_rank.get_mut(r.idx()) {
                    *x = j as u32;
                }
            }
        }
        Layout {
            name: name.to_string(),
            groups: groups
                .into_iter()
                .enumerate()
                .map(|(j, ranks)| SubGroup {
                    id: GroupId(first.0 + j as u32),
                    members: Members::new(ranks),
                })
                .collect(),
            of_rank,
        }
    }

    /// The sub-group `rank` is in, if any.
    pub fn group_of(&self, rank: Rank) -> Option<&SubGroup> {
        let j = *self.of_rank.get(rank.idx())?;
        self.groups.get(j as usize)
    }

    /// Sub-group `id`, if it is one of this layout's.
    pub fn group(&self, id: GroupId) -> Option<&SubGroup> {
        let first = self.groups.first()?.id.0;
        self.groups.get(id.0.checked_sub(first)? as usize)
    }
}

/// What a collective's input data derives from, besides the seed and the rank: the call's place
/// in the program (iteration, call index) when every rank runs the same program; otherwise its
/// place in its group (generation, sequence number), the one thing that ranks whose programs
/// put one collective at different places agree on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Inputs {
    #[default]
    BySite,
    BySlot,
}

/// A bug in one rank's application code. Calls are numbered as in the rank's program.
#[derive(Clone, Debug, PartialEq)]
pub enum AppBug {
    /// Call `op_index` of `iteration` uses other parameters.
    Mismatch {
        iteration: u32,
        op_index: u32,
        op: Option<OpKind>,
        bytes: Option<u64>,
        root: Option<u32>,
        dtype: Option<Dtype>,
    },
    /// Call `op_index` of `iteration` is never issued.
    Skip { iteration: u32, op_index: u32 },
    /// From `iteration` on, no call is issued (stuck outside collectives).
    Hang { iteration: u32 },
}

/// The configuration every rank's protocol code is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadConfig {
    pub world_size: u32,
    /// Seed of the ranks' input data.
    pub seed: u64,
    pub timeout: Nanos,
    pub iterations: u32,
    pub compute: Nanos,
    pub dtype: Dtype,
    pub elements: u32,
    /// The distinct programs; [`WorkloadConfig::program_of`] says which one each rank runs.
    pub programs: Vec<Program>,
    /// The index in `programs` of each world rank's program.
    pub program_of: Vec<u32>,
    pub inputs: Inputs,
    /// Application bugs, by rank.
    pub bugs: Vec<(u32, AppBug)>,
    /// Emit an event at every collective step (drivers that record nothing turn it off).
    pub step_events: bool,
    /// World ranks per host (the two-level topology), for `hierarchical`.
    pub ranks_per_host: u32,
    /// The world group's members, shared by every rank.
    pub world_members: Arc<Members>,
    /// How many consecutive world ranks share a host, as `hierarchical` sees it.
    pub world_per_host: u32,
    /// The groups ops may run along besides the world: the dimensions of the device mesh, then
    /// the named groups, each split into sub-groups. Group ids: 0 is the world, then every
    /// layout's sub-groups in this order.
    pub layouts: Vec<Layout>,
    /// Bugs planted on purpose, to show that a property catches them (empty: the real code).
    /// Only the checker and tests set them; a scenario file never does.
    pub mutations: Mutations,
    /// Elastic membership, when `[group] elastic` is set.
    pub elastic: Option<Arc<ElasticConfig>>,
    /// The registry workload, when the scenario has registry steps.
    pub registry: Option<Arc<RegistryConfig>>,
    /// A real application issues the calls one by one (`process/app.rs`), not `programs`.
    pub app_driven: bool,
    /// A node of the program's own runs on every rank instead of the workload
    /// ([`crate::node`]).
    pub node: Option<crate::node::NodeKind>,
}

impl WorkloadConfig {
    /// The program `rank` runs.
    pub fn program(&self, rank: u32) -> &Program {
        let i = self.program_of.get(rank as usize).copied().unwrap_or(0);
        &self.programs[i as usize]
    }

    /// Whether any rank issues any call (a registry workload has none).
    pub fn has_calls(&self) -> bool {
        self.programs.iter().any(|p| p.calls() > 0)
    }

    /// The most calls any rank's iteration issues.
    pub fn max_calls(&self) -> usize {
        self.programs.iter().map(Program::calls).max().unwrap_or(0)
    }

    /// The members of group `id`: the world (group 0), or a sub-group of a layout.
    pub fn group_members(&self, id: GroupId) -> Option<Arc<Members>> {
        if id == GroupId(0) {
            return Some(self.world_members.clone());
        }
        self.layouts
            .iter()
            .find_map(|l| l.group(id))
            .map(|g| g.members.clone())
    }

    /// The call the scenario declares for `rank` at `index` of its program (None when the
    /// rank runs a program of its own, which is a deviation).
    pub fn declared_call(&self, rank: u32, index: u32) -> Option<&OpCall> {
        let p = self.program(rank);
        if p.declared {
            p.call(index)
        } else {
            None
        }
    }

    /// The (seed, iteration, index) a collective's input derives from (see [`Inputs`]): the
    /// call `index` of `iteration` that is collective `seq` of `generation` in `group`.
    pub fn input_key(
        &self,
        iteration: u32,
        index: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
    ) -> (u64, u32, u32) {
        match self.inputs {
            Inputs::BySite => (self.seed, iteration, index),
            Inputs::BySlot => (
                self.seed ^ crate::data::mix(u64::from(group.0) << 32 | u64::from(generation.0)),
                (seq.0 >> 32) as u32,
                seq.0 as u32,
            ),
        }
    }

    /// Whether `rank` hangs at `iteration`.
    pub fn hangs(&self, rank: u32, iteration: u32) -> bool {
        self.bugs.iter().any(|(r, b)| {
            *r == rank && matches!(b, AppBug::Hang { iteration: i } if *i <= iteration)
        })
    }

    /// Whether `rank` skips call `index` of `iteration`.
    pub fn skips(&self, rank: u32, iteration: u32, index: u32) -> bool {
        self.bugs.iter().any(|(r, b)| {
            *r == rank
                && matches!(b, AppBug::Skip { iteration: i, op_index } if *i == iteration && *op_index == index)
        })
    }

    /// The call `rank` really issues for `call` (its program's call `index` of `iteration`),
    /// with its bugs applied.
    pub fn with_bugs(&self, rank: u32, iteration: u32, index: u32, call: &OpCall) -> OpCall {
        let mut call = call.clone();
        for (r, b) in &self.bugs {
            if let AppBug::Mismatch {
                iteration: i,
                op_index,
                op,
                bytes,
                root,
                dtype,
            } = b
            {
                if *r == rank && *i == iteration && *op_index == index {
                    if let Some(op) = op {
                        if *op != call.op {
                            call.op = *op;
                            if !op.algorithms().contains(&call.algorithm) {
                                call.algorithm = op.default_algorithm();
                            }
                        }
                    }
                    if let Some(b) = bytes {
                        call.bytes = *b;
                    }
                    if let Some(root) = root {
                        call.root = *root;
                    }
                    if let Some(d) = dtype {
                        call.dtype = *d;
                    }
                }
            }
        }
        call
    }
}
