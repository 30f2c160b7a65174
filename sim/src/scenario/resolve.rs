//! From a scenario to the configurations the protocol code is built from. The protocol crate
//! knows nothing of the scenario file; this is the one place that translates it.

use super::program::{self, Step};
use super::{groups, Algorithm, Dtype, Fault, OpKind, OpSpec, Scenario};
use ringside_proto::collective::hierarchical::local_size;
use ringside_proto::collective::Members;
use ringside_proto::elastic::ElasticConfig;
use ringside_proto::mesh::MeshLayout;
use ringside_proto::mutation::Mutations;
use ringside_proto::registry::{self, RegistryConfig, DEFAULT_SCOPE};
use ringside_proto::workload::{
    self as wl, Along, AppBug, Inputs, Layout, OpCall, Program, WorkloadConfig,
};
use ringside_proto::{GroupId, Rank};
use std::collections::{BTreeMap, BTreeSet};
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
    let layouts = layouts(s);
    let (programs, program_of) = programs(s, &layouts);
    let inputs = match programs.len() {
        1 => Inputs::BySite,
        _ => Inputs::BySlot,
    };
    WorkloadConfig {
        world_size: s.world.size,
        seed,
        timeout: s.group.timeout.0,
        iterations: s.workload.iterations,
        compute: w.compute.0,
        dtype: w.dtype,
        elements: w.elements,
        programs,
        program_of,
        inputs,
        bugs,
        step_events: true,
        ranks_per_host: s.world.ranks_per_host.max(1),
        world_members,
        world_per_host,
        layouts,
        mutations,
        node: s.workload.node,
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
        app_driven: s.torch.is_some(),
    }
}

/// One call with every default filled in: the algorithm from the op (a send's `rendezvous`),
/// then `[group] algorithm` (allreduce only), then the op's own default; the group it names
/// as one of `layouts`.
pub fn op_call(
    spec: &OpSpec,
    default_allreduce: Option<Algorithm>,
    dtype: Dtype,
    layouts: &[Layout],
) -> OpCall {
    let algorithm = match spec.op {
        OpKind::Send if spec.rendezvous => Algorithm::Rendezvous,
        op => spec.algorithm.unwrap_or(match op {
            OpKind::Allreduce => default_allreduce.unwrap_or(Algorithm::Ring),
            op => op.default_algorithm(),
        }),
    };
    let along = match &spec.group {
        None => Along::World,
        Some(name) => layouts
            .iter()
            .position(|l| l.name == *name)
            .map_or(Along::Layout(u32::MAX), |i| Along::Layout(i as u32)),
    };
    OpCall {
        op: spec.op,
        algorithm,
        bytes: spec.bytes.0,
        reduce: spec.reduce,
        root: spec.root.unwrap_or(0),
        dtype,
        along,
        peer: spec.peer,
    }
}

/// The group layouts of `s`: the mesh's dimensions, then the `[[groups]]` entries, their
/// sub-groups numbered as `groups` says.
pub fn layouts(s: &Scenario) -> Vec<Layout> {
    let world = s.world.size;
    let mut out = Vec::new();
    let mut next = 1u32;
    if let Some(mesh) = &s.group.mesh {
        if let Some(m) = MeshLayout::new(mesh, world) {
            for (d, name) in mesh.dims.iter().enumerate() {
                let count = world / mesh.shape[d];
                let groups = (next..next + count)
                    .map(|id| m.members(GroupId(id)).unwrap_or_default())
                    .collect();
                out.push(Layout::new(name, GroupId(next), groups, world));
                next += count;
            }
        }
    }
    let named = groups::named_subgroups(s);
    for (e, g) in s.groups.iter().enumerate() {
        let mine: Vec<_> = named.iter().filter(|(_, x, _)| *x == e).collect();
        let first = mine.first().map_or(GroupId(next), |(id, _, _)| *id);
        let groups = mine
            .iter()
            .map(|(_, _, m)| m.iter().copied().map(Rank).collect())
            .collect();
        out.push(Layout::new(&g.name, first, groups, world));
    }
    out
}

/// Each rank's program (`program::steps`), the distinct ones once: (programs, index of each
/// rank's).
fn programs(s: &Scenario, layouts: &[Layout]) -> (Vec<Program>, Vec<u32>) {
    let world = s.world.size;
    // each rank's pipeline stage, found once per pipeline
    let mut stage: Vec<Option<(u32, u32)>> = vec![None; world as usize];
    if let Some(pipe) = &s.workload.pipeline {
        let lines = match &pipe.group {
            None => vec![(0..world).collect()],
            Some(name) => groups::subgroups(s, name).unwrap_or_default(),
        };
        for line in lines {
            for (k, &r) in line.iter().enumerate() {
                if let Some(x) = stage.get_mut(r as usize) {
                    *x = Some((k as u32, line.len() as u32));
                }
            }
        }
    }
    let mut owner: Vec<Option<usize>> = vec![None; world as usize];
    for (p, prog) in s.workload.programs.iter().enumerate() {
        for &r in &prog.ranks {
            if let Some(x) = owner.get_mut(r as usize) {
                x.get_or_insert(p);
            }
        }
    }
    let mut programs = Vec::new();
    // (programs entry, or pipeline stage and stages) -> index in `programs`
    type Key = (Option<usize>, Option<(u32, u32)>);
    let mut seen: BTreeMap<Key, u32> = BTreeMap::new();
    let program_of = (0..world as usize)
        .map(|r| {
            let key = match owner[r] {
                Some(p) => (Some(p), None),
                None => (None, stage[r]),
            };
            *seen.entry(key).or_insert_with(|| {
                programs.push(program(s, key.0, key.1, layouts));
                programs.len() as u32 - 1
            })
        })
        .collect();
    (programs, program_of)
}

/// The program of `[[workload.programs]]` entry `entry`, or else of pipeline stage `stage`.
fn program(
    s: &Scenario,
    entry: Option<usize>,
    stage: Option<(u32, u32)>,
    layouts: &[Layout],
) -> Program {
    let mut index = 0;
    let steps = program::steps_of(s, entry, stage)
        .into_iter()
        .map(|st| match st {
            Step::Compute(ns) => wl::Step::Compute(ns),
            Step::Call(spec, _) => {
                let call = op_call(&spec, s.group.algorithm, s.workload.dtype, layouts);
                index += 1;
                wl::Step::Call {
                    index: index - 1,
                    call,
                }
            }
        })
        .collect();
    Program {
        steps,
        declared: entry.is_none(),
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
        .map(|(i, st)| registry::Step {
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
