//! Named groups, point-to-point ops, per-rank programs and pipelines.

use super::{fail, op_spec, rank_in_world, Invalid};
use crate::scenario::groups;
use crate::scenario::model::*;

/// `[[groups]]`: named, disjoint sub-groups of ranks of the world.
pub(super) fn named_groups(s: &Scenario) -> Result<(), Invalid> {
    for (i, g) in s.groups.iter().enumerate() {
        let k = format!("groups[{i}]");
        if s.group.elastic.is_some() {
            return fail(
                format!("{k}.name"),
                "named groups are not rebuilt by [group.elastic]: use them without it",
            );
        }
        if g.name.trim().is_empty() {
            return fail(format!("{k}.name"), "a group needs a non-empty name");
        }
        if s.groups[..i].iter().any(|o| o.name == g.name) {
            return fail(
                format!("{k}.name"),
                format!("group `{}` is named twice", g.name),
            );
        }
        if s.group
            .mesh
            .as_ref()
            .is_some_and(|m| m.dims.contains(&g.name))
        {
            return fail(
                format!("{k}.name"),
                format!("`{}` is already a dimension of [group.mesh]", g.name),
            );
        }
        let subs = g.ranks.subgroups();
        if subs.is_empty() {
            return fail(format!("{k}.ranks"), "a group needs at least one rank");
        }
        let mut seen: std::collections::BTreeMap<u32, usize> = Default::default();
        for (j, sub) in subs.iter().enumerate() {
            let key = match g.ranks {
                GroupRanks::One(_) => format!("{k}.ranks"),
                GroupRanks::Many(_) => format!("{k}.ranks[{j}]"),
            };
            if sub.is_empty() {
                return fail(key, "a sub-group needs at least one rank");
            }
            for &r in sub.iter() {
                rank_in_world(s, &key, r)?;
                if let Some(other) = seen.insert(r, j) {
                    let why = if other == j {
                        format!("rank {r} is listed twice")
                    } else {
                        format!(
                            "rank {r} is in sub-groups {other} and {j}: a rank is in at most one"
                        )
                    };
                    return fail(key, why);
                }
            }
        }
    }
    Ok(())
}

/// send / recv need a peer in range of every sub-group the op runs on; `peer` and
/// `rendezvous` belong to them only.
pub(super) fn point_to_point(s: &Scenario, k: &str, op: &OpSpec) -> Result<(), Invalid> {
    let kind = op.op;
    if !kind.point_to_point() {
        if op.peer.is_some() {
            return fail(
                format!("{k}.peer"),
                format!("a {kind} has no peer: only send and recv do"),
            );
        }
        if op.rendezvous {
            return fail(
                format!("{k}.rendezvous"),
                format!("a {kind} is not a send: `rendezvous` only applies to send"),
            );
        }
        return Ok(());
    }
    if s.group.elastic.is_some() {
        return fail(
            format!("{k}.op"),
            format!("a {kind} cannot run with [group.elastic], which rebuilds collectives only"),
        );
    }
    if op.rendezvous && kind != OpKind::Send {
        return fail(
            format!("{k}.rendezvous"),
            "a recv completes when its message has arrived: `rendezvous` is chosen by the send",
        );
    }
    if op.rendezvous && op.algorithm == Some(Algorithm::Eager) {
        return fail(
            format!("{k}.algorithm"),
            "`rendezvous = true` contradicts algorithm = \"eager\"",
        );
    }
    let Some(peer) = op.peer else {
        return fail(
            k,
            format!("a {kind} needs `peer`: a rank of its group, or \"next\" or \"prev\""),
        );
    };
    if let Peer::Rank(p) = peer {
        let sizes: Vec<usize> = match &op.group {
            Some(g) => groups::subgroups(s, g)
                .unwrap_or_default()
                .iter()
                .map(Vec::len)
                .collect(),
            None => vec![s.world.size as usize],
        };
        if let Some(&small) = sizes.iter().filter(|&&n| p as usize >= n).min() {
            let group = op.group.as_deref().unwrap_or("the world");
            return fail(
                format!("{k}.peer"),
                format!(
                    "peer {p} is out of range: a sub-group of {group} has {small} ranks, so \
                     peers are 0..={}",
                    small.saturating_sub(1)
                ),
            );
        }
    }
    Ok(())
}

/// `[[workload.programs]]`: ranks of the world, each in at most one program, with valid ops.
pub(super) fn programs(s: &Scenario) -> Result<(), Invalid> {
    let mut owner: std::collections::BTreeMap<u32, usize> = Default::default();
    for (i, p) in s.workload.programs.iter().enumerate() {
        let k = format!("workload.programs[{i}]");
        if p.ranks.is_empty() {
            return fail(format!("{k}.ranks"), "a program needs at least one rank");
        }
        for &r in &p.ranks {
            rank_in_world(s, &format!("{k}.ranks"), r)?;
            if let Some(other) = owner.insert(r, i) {
                let why = if other == i {
                    format!("rank {r} is listed twice")
                } else {
                    format!("rank {r} already runs workload.programs[{other}]")
                };
                return fail(format!("{k}.ranks"), why);
            }
        }
        for (j, op) in p.ops.iter().enumerate() {
            op_spec(s, &format!("{k}.ops[{j}]"), op)?;
        }
    }
    Ok(())
}

/// `[workload.pipeline]`: a group whose every sub-group has at least two stages.
pub(super) fn pipeline(s: &Scenario, p: &Pipeline) -> Result<(), Invalid> {
    let k = "workload.pipeline";
    if s.group.elastic.is_some() {
        return fail(
            k,
            "a pipeline's sends and recvs cannot run with [group.elastic], which rebuilds \
             collectives only",
        );
    }
    if p.microbatches == 0 {
        return fail(format!("{k}.microbatches"), "must be at least 1");
    }
    if p.bytes.0 == 0 {
        return fail(
            format!("{k}.bytes"),
            "activations and gradients need a size > 0, e.g. bytes = \"16MiB\"",
        );
    }
    let stages: Vec<usize> = match &p.group {
        None => vec![s.world.size as usize],
        Some(g) => match groups::subgroups(s, g) {
            Some(subs) => subs.iter().map(Vec::len).collect(),
            None => {
                return fail(
                    format!("{k}.group"),
                    format!("`{g}` is not a group: name a [[groups]] entry or a mesh dimension"),
                )
            }
        },
    };
    if let Some(&n) = stages.iter().find(|&&n| n < 2) {
        return fail(
            format!("{k}.group"),
            format!("a pipeline needs at least two stages; a sub-group here has {n}"),
        );
    }
    Ok(())
}
