//! The training loop that drives the process group: each iteration computes, then issues the
//! scenario's collectives in order. Application bugs (`mismatch`, `skip`, `hang`) are part of
//! the application, so they live here, as the configuration of the rank's workload.

use super::collective::Members;
use super::types::Rank;
use crate::scenario::{Algorithm, Dtype, Fault, OpKind, OpSpec, ReduceOp, Scenario};
use crate::units::Nanos;
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

impl OpCall {
    pub fn resolve(spec: &OpSpec, default_allreduce: Option<Algorithm>, dtype: Dtype) -> OpCall {
        let algorithm = spec.algorithm.unwrap_or(match spec.op {
            OpKind::Allreduce => default_allreduce.unwrap_or(Algorithm::Ring),
            op => op.default_algorithm(),
        });
        OpCall {
            op: spec.op,
            algorithm,
            bytes: spec.bytes.0,
            reduce: spec.reduce,
            root: spec.root.unwrap_or(0),
            dtype,
            group: spec.group.clone(),
        }
    }
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
    /// The world group's members, shared by every rank built from this configuration.
    pub world_members: Arc<Members>,
}

impl WorkloadConfig {
    pub fn from_scenario(s: &Scenario, seed: u64) -> WorkloadConfig {
        let w = &s.workload;
        let bugs = s
            .faults
            .iter()
            .filter_map(|f| match f {
                Fault::Mismatch {
                    rank,
                    iteration,
                    op_index,
                    op,
                    bytes,
                    root,
                    dtype,
                } => Some((
                    *rank,
                    AppBug::Mismatch {
                        iteration: *iteration,
                        op_index: op_index.unwrap_or(0),
                        op: *op,
                        bytes: bytes.map(|b| b.0),
                        root: *root,
                        dtype: *dtype,
                    },
                )),
                Fault::Skip {
                    rank,
                    iteration,
                    op_index,
                } => Some((
                    *rank,
                    AppBug::Skip {
                        iteration: *iteration,
                        op_index: op_index.unwrap_or(0),
                    },
                )),
                Fault::Hang { rank, iteration } => Some((
                    *rank,
                    AppBug::Hang {
                        iteration: *iteration,
                    },
                )),
                _ => None,
            })
            .collect();
        WorkloadConfig {
            world_size: s.world.size,
            seed,
            timeout: s.group.timeout.0,
            iterations: s.workload.iterations,
            compute: w.compute.0,
            dtype: w.dtype,
            elements: w.elements,
            ops: w
                .ops
                .iter()
                .map(|o| OpCall::resolve(o, s.group.algorithm, w.dtype))
                .collect(),
            bugs,
            step_events: true,
            world_members: Members::new((0..s.world.size).map(Rank).collect()),
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
