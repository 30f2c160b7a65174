//! Semantic checks that serde cannot express.
//!
//! Every check returns the most specific key path it can (`faults[1].sides[0][2]` rather than
//! `faults[1]`), which the parser maps back to a line of the file. Checks run in the order the
//! sections are usually written, so the first error reported is the first one a reader meets.

use super::model::*;
use super::{groups, program};
use crate::fault::{FaultKind, Trigger};
use crate::units::Duration;
use programs::{named_groups, pipeline, point_to_point};

mod programs;
mod support;
pub use support::{unsupported, Support};

/// A failed check: (key path, message).
pub type Invalid = (String, String);

fn fail<T>(key: impl Into<String>, message: impl Into<String>) -> Result<T, Invalid> {
    Err((key.into(), message.into()))
}

/// Largest world the engine is asked to simulate.
pub const MAX_WORLD_SIZE: u32 = 1_000_000;
/// Largest real buffer per rank, in elements.
pub const MAX_ELEMENTS: u32 = 16_777_216;
/// Most iterations of a workload (each one is remembered in the report).
pub const MAX_ITERATIONS: u32 = 10_000_000;
/// Most dimensions of a device mesh.
pub const MAX_MESH_DIMS: usize = 8;
/// Most send (and receive) ports of a rank.
pub const MAX_PORTS: u32 = 64;

/// Checks a parsed scenario; on failure returns (key path, message).
pub fn validate(s: &Scenario) -> Result<(), Invalid> {
    top(s)?;
    world(&s.world)?;
    network(s)?;
    group(s)?;
    named_groups(s)?;
    workload(s)?;
    for (i, f) in s.faults.iter().enumerate() {
        fault(s, &format!("faults[{i}]"), f)?;
    }
    if let Some(e) = &s.expect {
        expect(s, e)?;
    }
    if let Some(f) = &s.flight_recorder {
        flight_recorder(s, f)?;
    }
    Ok(())
}

/// Longest call site (`file:line`) a scenario names.
pub const MAX_SITE_LEN: usize = 4096;

fn flight_recorder(s: &Scenario, f: &FlightRecorder) -> Result<(), Invalid> {
    if let Some(b) = &f.backend {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if b.is_empty() || b.len() > 64 || !b.chars().all(ok) {
            return fail(
                "flight_recorder.backend",
                "a backend is a short name of letters, digits, `_` and `-`, e.g. \"nccl\" or \"gloo\"",
            );
        }
    }
    for (i, &r) in f.no_dump.iter().enumerate() {
        let k = format!("flight_recorder.no_dump[{i}]");
        rank_in_world(s, &k, r)?;
        if f.no_dump[..i].contains(&r) {
            return fail(k, format!("rank {r} is listed twice"));
        }
    }
    Ok(())
}

fn top(s: &Scenario) -> Result<(), Invalid> {
    if s.name.trim().is_empty() {
        return fail("name", "the scenario needs a non-empty name");
    }
    if s.time_limit == Some(Duration::ZERO) {
        return fail("time_limit", "must be > 0 (omit it for no limit)");
    }
    Ok(())
}

fn world(w: &World) -> Result<(), Invalid> {
    if w.size == 0 {
        return fail("world.size", "the world needs at least one rank");
    }
    if w.size > MAX_WORLD_SIZE {
        return fail(
            "world.size",
            format!(
                "{} ranks is more than the {MAX_WORLD_SIZE} supported",
                w.size
            ),
        );
    }
    if w.ranks_per_host == 0 {
        return fail("world.ranks_per_host", "must be at least 1");
    }
    if w.ranks_per_host > w.size {
        return fail(
            "world.ranks_per_host",
            format!(
                "{} ranks per host is more than world.size ({})",
                w.ranks_per_host, w.size
            ),
        );
    }
    Ok(())
}

/// `rank` must name a rank of the world.
fn rank_in_world(s: &Scenario, key: &str, rank: u32) -> Result<(), Invalid> {
    if rank >= s.world.size {
        return fail(
            key,
            format!(
                "rank {rank} is out of range: world.size is {}, so ranks are 0..={}",
                s.world.size,
                s.world.size - 1
            ),
        );
    }
    Ok(())
}

/// `rank` must name a node a fault can act on: a rank, or, with a store rendezvous, the
/// store, which is node `world.size`.
fn node_in_world(s: &Scenario, key: &str, rank: u32) -> Result<(), Invalid> {
    let store = s
        .group
        .elastic
        .as_ref()
        .is_some_and(|e| e.rendezvous == RendezvousKind::Store);
    if store && rank == s.world.size {
        return Ok(());
    }
    rank_in_world(s, key, rank)
}

fn positive(key: &str, d: Duration) -> Result<(), Invalid> {
    if d == Duration::ZERO {
        return fail(key, "must be > 0");
    }
    Ok(())
}

fn network(s: &Scenario) -> Result<(), Invalid> {
    let n = &s.network;
    let loggp = [
        ("L", n.loggp_l.is_some()),
        ("o", n.loggp_o.is_some()),
        ("g", n.loggp_g.is_some()),
        ("G", n.loggp_gb.is_some()),
    ];
    match n.model {
        NetModel::Loggp => {
            if let Some((k, _)) = loggp.iter().find(|(_, set)| !set) {
                return fail(
                    format!("network.{k}"),
                    "the loggp model needs all of `L`, `o`, `g` and `G`",
                );
            }
            // alpha-beta parameters would be silently ignored; defaults cannot be told apart
            // from values written out, so only values other than the default are reported
            let ignored = "is ignored by the loggp model, which uses `L`, `o`, `g` and `G`: \
                           remove it";
            let defaults = Network::default();
            if n.latency != defaults.latency {
                return fail("network.latency", format!("`latency` {ignored}"));
            }
            if n.bandwidth != defaults.bandwidth {
                return fail("network.bandwidth", format!("`bandwidth` {ignored}"));
            }
            if n.intra_host.is_some() {
                return fail(
                    "network.intra_host",
                    format!("[network.intra_host] {ignored}"),
                );
            }
        }
        NetModel::AlphaBeta => {
            if let Some((k, _)) = loggp.iter().find(|(_, set)| *set) {
                return fail(
                    format!("network.{k}"),
                    "a LogGP parameter with model = \"alpha-beta\" would be ignored: \
                     set model = \"loggp\" or remove it",
                );
            }
        }
    }
    positive("network.retransmit_timeout", n.retransmit_timeout)?;
    if !(1..=MAX_PORTS).contains(&n.ports) {
        return fail(
            "network.ports",
            format!("must be between 1 and {MAX_PORTS}"),
        );
    }
    if n.ports != 1 && n.model == NetModel::Loggp {
        return fail(
            "network.ports",
            "the loggp model has one NIC per rank, paced by `g` and `G`: remove `ports`",
        );
    }
    if n.intra_host.is_some() && s.world.ranks_per_host == 1 {
        return fail(
            "network.intra_host",
            "intra-host links are only used when world.ranks_per_host > 1",
        );
    }
    Ok(())
}

fn group(s: &Scenario) -> Result<(), Invalid> {
    let g = &s.group;
    positive("group.timeout", g.timeout)?;
    if let Some(a) = g.algorithm {
        algorithm_of("group.algorithm", OpKind::Allreduce, a)?;
    }
    if let Some(e) = &g.elastic {
        let k = "group.elastic";
        if e.min_size == 0 {
            return fail(format!("{k}.min_size"), "must be at least 1");
        }
        if e.min_size > s.world.size {
            return fail(
                format!("{k}.min_size"),
                format!(
                    "{} is more than world.size ({}): the first generation could never form",
                    e.min_size, s.world.size
                ),
            );
        }
        if e.max_size < e.min_size {
            return fail(
                format!("{k}.max_size"),
                format!("{} is less than min_size ({})", e.max_size, e.min_size),
            );
        }
        positive(&format!("{k}.heartbeat_interval"), e.heartbeat_interval)?;
        if e.heartbeat_misses == 0 {
            return fail(format!("{k}.heartbeat_misses"), "must be at least 1");
        }
    }
    if let Some(m) = &g.mesh {
        mesh(s, m)?;
    }
    Ok(())
}

fn mesh(s: &Scenario, m: &Mesh) -> Result<(), Invalid> {
    if m.shape.is_empty() {
        return fail("group.mesh.shape", "a mesh needs at least one dimension");
    }
    if m.shape.len() > MAX_MESH_DIMS {
        return fail(
            "group.mesh.shape",
            format!(
                "{} dimensions is more than the {MAX_MESH_DIMS} supported",
                m.shape.len()
            ),
        );
    }
    if let Some(i) = m.shape.iter().position(|&n| n == 0) {
        return fail(format!("group.mesh.shape[{i}]"), "must be at least 1");
    }
    if m.dims.len() != m.shape.len() {
        return fail(
            "group.mesh.dims",
            format!(
                "{} names for {} dimensions: name each entry of shape once",
                m.dims.len(),
                m.shape.len()
            ),
        );
    }
    for (i, d) in m.dims.iter().enumerate() {
        if d.is_empty() {
            return fail(format!("group.mesh.dims[{i}]"), "a dimension needs a name");
        }
        if m.dims[..i].contains(d) {
            return fail(
                format!("group.mesh.dims[{i}]"),
                format!("dimension `{d}` is named twice"),
            );
        }
    }
    let product = m
        .shape
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(u64::from(n)));
    if product != Some(u64::from(s.world.size)) {
        let shown = m
            .shape
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" x ");
        return fail(
            "group.mesh.shape",
            format!("{shown} ranks does not equal world.size ({})", s.world.size),
        );
    }
    Ok(())
}

fn algorithm_of(key: &str, op: OpKind, a: Algorithm) -> Result<(), Invalid> {
    if !a.implements(op) {
        let names: Vec<&str> = Algorithm::all_for(op).iter().map(|a| a.name()).collect();
        return fail(
            key,
            format!(
                "`{a}` is not an algorithm for {op}: use one of {}",
                names.join(", ")
            ),
        );
    }
    Ok(())
}

fn workload(s: &Scenario) -> Result<(), Invalid> {
    let w = &s.workload;
    if w.iterations == 0 || w.iterations > MAX_ITERATIONS {
        return fail(
            "workload.iterations",
            format!("must be between 1 and {MAX_ITERATIONS}"),
        );
    }
    if w.elements == 0 || w.elements > MAX_ELEMENTS {
        return fail(
            "workload.elements",
            format!("must be between 1 and {MAX_ELEMENTS}"),
        );
    }
    for (i, op) in w.ops.iter().enumerate() {
        op_spec(s, &format!("workload.ops[{i}]"), op)?;
    }
    programs::programs(s)?;
    if let Some(p) = &w.pipeline {
        pipeline(s, p)?;
    }
    for (i, step) in w.registry.iter().enumerate() {
        registry_step(s, &format!("workload.registry[{i}]"), step)?;
    }
    if let Some(kind) = w.node {
        node(s, kind)?;
    }
    Ok(())
}

/// A node of the program's own runs instead of everything else a rank could run.
fn node(s: &Scenario, kind: NodeKind) -> Result<(), Invalid> {
    let w = &s.workload;
    let other = [
        (!w.ops.is_empty(), "ops"),
        (!w.programs.is_empty(), "programs"),
        (w.pipeline.is_some(), "pipeline"),
        (!w.registry.is_empty(), "registry"),
        (s.group.elastic.is_some(), "elastic"),
        (s.torch.is_some(), "torch"),
    ];
    if let Some((_, what)) = other.iter().find(|(set, _)| *set) {
        return fail(
            "workload.node",
            format!(
                "the node `{kind}` runs on every rank instead of the workload: it cannot go with \
                 `{what}`"
            ),
        );
    }
    let bugs = s.faults.iter().position(|f| {
        matches!(
            f.kind(),
            FaultKind::Mismatch | FaultKind::Skip | FaultKind::Hang
        )
    });
    if let Some(i) = bugs {
        return fail(
            format!("faults[{i}].kind"),
            format!("the node `{kind}` runs no workload calls for this fault to change"),
        );
    }
    Ok(())
}

fn op_spec(s: &Scenario, k: &str, op: &OpSpec) -> Result<(), Invalid> {
    let kind = op.op;
    if op.bytes.0 == 0 && kind != OpKind::Barrier && !kind.point_to_point() {
        return fail(
            format!("{k}.bytes"),
            format!("a {kind} needs a size > 0, e.g. bytes = \"64MiB\""),
        );
    }
    if op.bytes.0 != 0 && kind == OpKind::Barrier {
        return fail(
            format!("{k}.bytes"),
            "a barrier moves no data: remove `bytes`",
        );
    }
    if op.reduce != ReduceOp::Sum && !kind.reduces() {
        return fail(
            format!("{k}.reduce"),
            format!(
                "a {kind} does not reduce: `reduce` only applies to allreduce, reduce and reduce_scatter"
            ),
        );
    }
    if let Some(a) = op.algorithm {
        algorithm_of(&format!("{k}.algorithm"), kind, a)?;
    }
    if let Some(root) = op.root {
        if !kind.rooted() {
            return fail(
                format!("{k}.root"),
                format!("a {kind} has no root: only broadcast, reduce, gather and scatter do"),
            );
        }
        rank_in_world(s, &format!("{k}.root"), root)?;
    }
    if let Some(g) = &op.group {
        if !groups::exists(s, g) {
            let mut names: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
            if let Some(m) = &s.group.mesh {
                names.extend(m.dims.iter().map(String::as_str));
            }
            let hint = if names.is_empty() {
                "there is no [group.mesh] and no [[groups]]".to_string()
            } else {
                format!("use one of {}", names.join(", "))
            };
            return fail(
                format!("{k}.group"),
                format!("`{g}` is not a group: {hint}"),
            );
        }
    }
    if let Some(site) = &op.site {
        if site.trim().is_empty() || site.len() > MAX_SITE_LEN || site.contains(['\n', '\r']) {
            return fail(
                format!("{k}.site"),
                format!(
                    "a call site is one line of at most {MAX_SITE_LEN} bytes, e.g. \"train.py:86\""
                ),
            );
        }
    }
    point_to_point(s, k, op)?;
    Ok(())
}

fn registry_step(s: &Scenario, k: &str, step: &RegistryStep) -> Result<(), Invalid> {
    rank_in_world(s, &format!("{k}.rank"), step.rank)?;
    if step.group.is_empty() {
        return fail(format!("{k}.group"), "a registry group needs a name");
    }
    if step.message.is_some() && step.action != RegistryAction::Broadcast {
        return fail(
            format!("{k}.message"),
            "only a `broadcast` step sends a message",
        );
    }
    if let Some(members) = &step.expect_members {
        if step.action != RegistryAction::Query {
            return fail(
                format!("{k}.expect_members"),
                "only a `query` step has expected members",
            );
        }
        for (j, &r) in members.iter().enumerate() {
            rank_in_world(s, &format!("{k}.expect_members[{j}]"), r)?;
        }
    }
    Ok(())
}

/// `iteration` must be one the workload runs.
fn iteration_in_workload(s: &Scenario, k: &str, iteration: u32) -> Result<(), Invalid> {
    let iterations = s.workload.iterations;
    if iteration >= iterations {
        return fail(
            format!("{k}.iteration"),
            format!(
                "iteration {iteration} never runs: workload.iterations is {iterations}, \
                 so iterations are 0..={}",
                iterations.saturating_sub(1)
            ),
        );
    }
    Ok(())
}

/// `op_index` (default 0) must name one of the calls `rank` makes in an iteration: its
/// program's, or the pipeline's and `workload.ops`.
fn op_in_workload(
    s: &Scenario,
    k: &str,
    rank: u32,
    op_index: Option<u32>,
) -> Result<(usize, OpSpec, program::Source), Invalid> {
    let index = op_index.unwrap_or(0) as usize;
    let (ops, call) = program::call_at(s, rank, index);
    let Some((op, source)) = call else {
        let whose = match program::program_of(s, rank) {
            Some(p) => format!("rank {rank} runs workload.programs[{p}], which"),
            None if s.workload.pipeline.is_some() => format!("rank {rank}'s iteration"),
            None => "the workload".to_string(),
        };
        let which = if ops == 0 {
            format!("{whose} has no ops")
        } else {
            format!("{whose} has {ops} ops, so op_index is 0..={}", ops - 1)
        };
        return fail(
            format!("{k}.op_index"),
            format!("op {index} does not exist: {which}"),
        );
    };
    Ok((index, op, source))
}

/// Where a call was declared, as the scenario file names it.
fn declared(source: program::Source) -> String {
    match source {
        program::Source::Shared(i) => format!("workload.ops[{i}]"),
        program::Source::Program(p, i) => format!("workload.programs[{p}].ops[{i}]"),
        program::Source::Pipeline(i) => format!("call {i} of the pipeline stage"),
    }
}

/// `delay` and `loss` act on exactly one of a rank's links or one link.
fn rank_or_link(
    s: &Scenario,
    k: &str,
    kind: FaultKind,
    rank: Option<u32>,
    link: Option<[u32; 2]>,
) -> Result<(), Invalid> {
    match (rank, link) {
        (None, None) => fail(
            k,
            format!("a `{kind}` fault needs exactly one of `rank` or `link = [a, b]`"),
        ),
        (Some(_), Some(_)) => fail(
            format!("{k}.link"),
            format!("a `{kind}` fault takes `rank` or `link`, not both"),
        ),
        (Some(r), None) => node_in_world(s, &format!("{k}.rank"), r),
        (None, Some([a, b])) => {
            node_in_world(s, &format!("{k}.link[0]"), a)?;
            node_in_world(s, &format!("{k}.link[1]"), b)?;
            if a == b {
                return fail(
                    format!("{k}.link"),
                    format!("a link joins two different ranks, not {a} and {b}"),
                );
            }
            Ok(())
        }
    }
}

fn optional_duration(k: &str, d: Option<Duration>) -> Result<(), Invalid> {
    match d {
        Some(d) => positive(&format!("{k}.duration"), d).map_err(|(key, _)| {
            (
                key,
                "must be > 0 (omit `duration` for a permanent fault)".to_string(),
            )
        }),
        None => Ok(()),
    }
}

/// A fault triggered at a rank's K-th call: K counts from 1 and the fault names its rank.
fn call_trigger(s: &Scenario, k: &str, f: &Fault) -> Result<(), Invalid> {
    if let Some(n) = f.trigger().and_then(Trigger::call) {
        let key = format!("{k}.at_call");
        if n == 0 {
            return fail(
                key,
                "calls count from 1: `at_call = 1` is the rank's first call",
            );
        }
        match f.at_call() {
            Some((rank, _)) => rank_in_world(s, &format!("{k}.rank"), rank)?,
            None => {
                return fail(
                    key,
                    format!(
                        "a `{}` fault begins at a call of its `rank`: give `rank`, not `link`",
                        f.kind()
                    ),
                )
            }
        }
    }
    Ok(())
}

/// Checks fault `k`: its trigger, then one arm per fault kind, the kinds read side by side.
fn fault(s: &Scenario, k: &str, f: &Fault) -> Result<(), Invalid> {
    let rank_key = format!("{k}.rank");
    call_trigger(s, k, f)?;
    match f {
        Fault::Preempt { rank, .. } => node_in_world(s, &rank_key, *rank),
        Fault::Pause { rank, duration, .. } => {
            node_in_world(s, &rank_key, *rank)?;
            positive(&format!("{k}.duration"), *duration)
        }
        Fault::Partition {
            sides, duration, ..
        } => {
            partition(s, k, sides)?;
            optional_duration(k, *duration)
        }
        Fault::Delay {
            rank,
            link,
            duration,
            ..
        } => {
            rank_or_link(s, k, FaultKind::Delay, *rank, *link)?;
            optional_duration(k, *duration)
        }
        Fault::Loss {
            rank,
            link,
            duration,
            rate,
            ..
        } => {
            rank_or_link(s, k, FaultKind::Loss, *rank, *link)?;
            optional_duration(k, *duration)?;
            if !(*rate > 0.0 && *rate <= 1.0) {
                return fail(
                    format!("{k}.rate"),
                    format!("{rate} is not a loss rate: use a fraction in (0, 1], e.g. 0.1"),
                );
            }
            Ok(())
        }
        Fault::Slow {
            rank,
            duration,
            factor,
            ..
        } => {
            rank_in_world(s, &rank_key, *rank)?;
            optional_duration(k, *duration)?;
            if !(factor.is_finite() && *factor > 0.0) {
                return fail(
                    format!("{k}.factor"),
                    format!("{factor} is not a slowdown: use a finite number > 0, e.g. 3.0"),
                );
            }
            Ok(())
        }
        Fault::Mismatch {
            rank,
            iteration,
            op_index,
            op,
            bytes,
            root,
            dtype,
        } => {
            rank_in_world(s, &rank_key, *rank)?;
            iteration_in_workload(s, k, *iteration)?;
            let (_, target, source) = op_in_workload(s, k, *rank, *op_index)?;
            if let Some(r) = root {
                rank_in_world(s, &format!("{k}.root"), *r)?;
            }
            if let Some(o) = op {
                if o.point_to_point() != target.op.point_to_point() {
                    return fail(
                        format!("{k}.op"),
                        format!(
                            "a {} cannot turn into a {o}: a mismatch keeps collectives \
                             collective and point-to-point point-to-point",
                            target.op
                        ),
                    );
                }
            }
            let changes = op.is_some_and(|o| o != target.op)
                || bytes.is_some_and(|b| b != target.bytes)
                || root.is_some_and(|r| r != target.root.unwrap_or(0))
                || dtype.is_some_and(|d| d != s.workload.dtype);
            if !changes {
                return fail(
                    k,
                    format!(
                        "this mismatch changes nothing: give at least one of `op`, `bytes`, \
                         `root` or `dtype` that differs from {}",
                        declared(source)
                    ),
                );
            }
            Ok(())
        }
        Fault::Skip {
            rank,
            iteration,
            op_index,
        } => {
            rank_in_world(s, &rank_key, *rank)?;
            iteration_in_workload(s, k, *iteration)?;
            op_in_workload(s, k, *rank, *op_index).map(drop)
        }
        Fault::Hang { rank, iteration } => {
            rank_in_world(s, &rank_key, *rank)?;
            iteration_in_workload(s, k, *iteration)
        }
    }
}

fn partition(s: &Scenario, k: &str, sides: &[Vec<u32>]) -> Result<(), Invalid> {
    if sides.len() < 2 {
        return fail(
            format!("{k}.sides"),
            "a partition needs at least two sides, e.g. sides = [[0, 1], [2]]",
        );
    }
    // (rank, side) of every rank seen so far
    let mut seen: Vec<(u32, usize)> = Vec::new();
    for (j, side) in sides.iter().enumerate() {
        if side.is_empty() {
            return fail(format!("{k}.sides[{j}]"), "a side needs at least one rank");
        }
        for (m, &r) in side.iter().enumerate() {
            let key = format!("{k}.sides[{j}][{m}]");
            node_in_world(s, &key, r)?;
            if let Some(&(_, other)) = seen.iter().find(|(x, _)| *x == r) {
                let message = if other == j {
                    format!("rank {r} appears twice in this side")
                } else {
                    format!("rank {r} is on side {other} and side {j}: sides must not overlap")
                };
                return fail(key, message);
            }
            seen.push((r, j));
        }
    }
    Ok(())
}

fn expect(s: &Scenario, e: &Expect) -> Result<(), Invalid> {
    if let Some(blocked) = &e.blocked {
        for (i, &r) in blocked.iter().enumerate() {
            rank_in_world(s, &format!("expect.blocked[{i}]"), r)?;
        }
    }
    if let Some(causes) = &e.root_causes {
        for (i, cause) in causes.iter().enumerate() {
            let key = format!("expect.root_causes[{i}]");
            // a dead, frozen or cut-off store is a root cause too
            for r in cause.ranks() {
                node_in_world(s, &key, r.0)?;
            }
        }
    }
    if e.generations == Some(0) {
        return fail(
            "expect.generations",
            "must be at least 1 (the first generation counts)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
