//! From a scenario to the configurations the protocol code is built from. The protocol crate
//! knows nothing of the scenario file; this is the one place that translates it.

use super::{Algorithm, Dtype, Fault, OpKind, OpSpec, Scenario};
use ringside_proto::collective::hierarchical::local_size;
use ringside_proto::collective::Members;
use ringside_proto::elastic::ElasticConfig;
use ringside_proto::mutation::Mutations;
use ringside_proto::registry::{RegistryConfig, Step, DEFAULT_SCOPE};
use ringside_proto::workload::{AppBug, OpCall, WorkloadConfig};
use ringside_proto::Rank;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The configuration every rank's protocol code is built from, for `s` run with `seed`, with
/// `mutations` planted (the checker's and tests' business: a scenario has none of its own).
pub fn workload(s: &Scenario, seed: u64, mutations: Mutations) -> WorkloadConfig {
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
    let world_members = Members::new((0..s.world.size).map(Rank).collect());
    let world_per_host = local_size(&world_members.ranks, s.world.ranks_per_host);
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
            .map(|o| op_call(o, s.group.algorithm, w.dtype))
            .collect(),
        bugs,
        step_events: true,
        ranks_per_host: s.world.ranks_per_host.max(1),
        world_members,
        world_per_host,
        mesh: s.group.mesh.clone(),
        mutations,
        elastic: s.group.elastic.as_ref().map(|e| {
            Arc::new(ElasticConfig {
                min_size: e.min_size,
                max_size: e.max_size,
                heartbeat_interval: e.heartbeat_interval.0,
                heartbeat_misses: e.heartbeat_misses,
                rendezvous: e.rendezvous,
                store: Rank(s.world.size),
            })
        }),
        registry: registry(s),
    }
}

/// One call of `[[workload.ops]]` with every default filled in: the algorithm from the op, then
/// `[group] algorithm` (allreduce only), then the op's own default.
pub fn op_call(spec: &OpSpec, default_allreduce: Option<Algorithm>, dtype: Dtype) -> OpCall {
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

/// The registry of `s`, if it has registry steps. Heartbeats follow `[group] elastic` when
/// given, else its defaults (100ms, 3 misses).
pub fn registry(s: &Scenario) -> Option<Arc<RegistryConfig>> {
    let steps = &s.workload.registry;
    if steps.is_empty() {
        return None;
    }
    let scope_of = |sc: &Option<String>| sc.clone().unwrap_or_else(|| DEFAULT_SCOPE.into());
    let scopes: Vec<String> = steps
        .iter()
        .map(|st| scope_of(&st.scope))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (interval, misses) = match &s.group.elastic {
        Some(e) => (e.heartbeat_interval.0, e.heartbeat_misses),
        None => (100_000_000, 3),
    };
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, st)| Step {
            index: i as u32,
            at: st.at.0,
            rank: Rank(st.rank),
            action: st.action,
            scope: scopes
                .iter()
                .position(|x| *x == scope_of(&st.scope))
                .unwrap_or(0) as u32,
            group: st.group.clone(),
            message: st.message.clone(),
            expect: st.expect_members.as_ref().map(|m| {
                let mut v: Vec<Rank> = m.iter().copied().map(Rank).collect();
                v.sort_unstable();
                v.dedup();
                v
            }),
        })
        .collect();
    Some(Arc::new(RegistryConfig {
        nodes: s.world.size,
        scopes,
        steps,
        heartbeat_interval: interval,
        heartbeat_misses: misses,
    }))
}
