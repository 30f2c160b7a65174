//! The training loop that drives the process group: each iteration computes, then issues the
//! scenario's collectives in order. Application bugs (`mismatch`, `skip`, `hang`) are part of
//! the application, so they live here, as the configuration of the rank's workload.

use super::collective::Members;
use super::elastic::ElasticConfig;
use super::mesh::MeshLayout;
use super::mutation::Mutations;
use super::registry::RegistryConfig;
use super::types::GroupId;
use crate::time::Nanos;
use crate::vocab::{Algorithm, Dtype, Mesh, OpKind, ReduceOp};
use std::sync::Arc;

/// One collective of the loop, with every parameter resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCall {
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub reduce: ReduceOp,
    pub root: u32,
    pub dtype: Dtype,
    /// Mesh dimension the op runs along (None = the whole world group).
    pub group: Option<String>,
}

/// A bug in one rank's application code.
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
    pub ops: Vec<OpCall>,
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
    /// The device mesh whose sub-groups ops may run on.
    pub mesh: Option<Mesh>,
    /// Bugs planted on purpose, to show that a property catches them (empty: the real code).
    /// Only the checker and tests set them; a scenario file never does.
    pub mutations: Mutations,
    /// Elastic membership, when `[group] elastic` is set.
    pub elastic: Option<Arc<ElasticConfig>>,
    /// The registry workload, when the scenario has registry steps.
    pub registry: Option<Arc<RegistryConfig>>,
}

impl WorkloadConfig {
    /// The mesh laid over the world, if there is one that fits.
    pub fn mesh_layout(&self) -> Option<MeshLayout> {
        self.mesh
            .as_ref()
            .and_then(|m| MeshLayout::new(m, self.world_size))
    }

    /// The members of group `id`: the world (group 0), or a mesh sub-group.
    pub fn group_members(&self, id: GroupId) -> Option<Arc<Members>> {
        if id == GroupId(0) {
            return Some(self.world_members.clone());
        }
        self.mesh_layout()?.members(id).map(Members::new)
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

    /// The call `rank` really issues for `index` of `iteration` (bugs applied).
    pub fn call_for(&self, rank: u32, iteration: u32, index: u32) -> OpCall {
        let mut call = self.ops[index as usize].clone();
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
