//! Elastic membership and the registry, from a run's events: **one_world_per_generation**, and
//! what the liveness property asks of a rebuilt group and of registry views.

use super::{Property, Violation};
use crate::check::{Case, Run};
use crate::trace::Event;
use crate::units::{fmt_ms, Nanos};
use std::collections::{BTreeMap, BTreeSet};

/// No two different member lists (or resume points) share a generation; every rank that
/// installs a generation is a member of it at the place it says; each rank's generations
/// strictly increase, across restarts too; and every generation after the first has between
/// `min_size` and `max_size` members. Runs of a fixed group form no generation after the
/// first, and pass at once.
pub(super) fn one_world_per_generation(case: &Case, run: &Run) -> Result<(), Violation> {
    let Some(elastic) = case.scenario.group.elastic.as_ref() else {
        return Ok(());
    };
    let (min, max) = (elastic.min_size, elastic.max_size);
    let v = |message: String| Violation::new(Property::OneWorldPerGeneration, message);
    let mut first: BTreeMap<u32, (u32, Vec<u32>, u32)> = BTreeMap::new();
    let mut last_of: BTreeMap<u32, u32> = BTreeMap::new();
    for (t, ev) in run.events() {
        let Event::GenerationFormed {
            rank,
            generation,
            members,
            group_rank,
            resume_iteration,
            ..
        } = ev
        else {
            continue;
        };
        let g = generation.0;
        let at = fmt_ms(*t);
        if members.get(*group_rank as usize) != Some(rank) {
            return Err(v(format!(
                "at {at} rank {rank} installs generation {g} as group rank {group_rank} of \
                 {members:?}"
            ))
            .ranks([*rank]));
        }
        if members.windows(2).any(|w| w[0] >= w[1]) {
            return Err(v(format!(
                "generation {g} lists its members out of order: {members:?}"
            ))
            .ranks([*rank]));
        }
        let n = members.len() as u32;
        if n < min || n > max {
            return Err(v(format!(
                "generation {g} has {n} members {members:?}, outside {min}..={max}"
            ))
            .ranks([*rank]));
        }
        match first.get(&g) {
            Some((by, m, resume)) if m != members || resume != resume_iteration => {
                return Err(v(format!(
                    "split brain: rank {by} installed generation {g} as {m:?} resuming at \
                     {resume}, rank {rank} at {at} as {members:?} resuming at {resume_iteration}"
                ))
                .ranks([*by, *rank]));
            }
            Some(_) => {}
            None => {
                first.insert(g, (*rank, members.clone(), *resume_iteration));
            }
        }
        if let Some(&prev) = last_of.get(rank) {
            if g <= prev {
                return Err(v(format!(
                    "at {at} rank {rank} installs generation {g} after generation {prev}"
                ))
                .ranks([*rank]));
            }
        }
        last_of.insert(*rank, g);
    }
    Ok(())
}

/// Whether at most half of the latest generation's members are still the processes that
/// installed it.
pub(super) fn quorum_gone(world: u32, events: &[(Nanos, Event)]) -> bool {
    let mut latest: (u32, Vec<u32>) = (0, (0..world).collect());
    // ranks whose process installed the latest generation and has not died since
    let mut holders: BTreeSet<u32> = (0..world).collect();
    for (_, ev) in events {
        match ev {
            Event::GenerationFormed {
                rank,
                generation,
                members,
                ..
            } => {
                if generation.0 > latest.0 {
                    latest = (generation.0, members.clone());
                    holders.clear();
                }
                if generation.0 == latest.0 {
                    holders.insert(*rank);
                }
            }
            Event::ProcessDeath { rank, .. } => {
                holders.remove(rank);
            }
            _ => {}
        }
    }
    holders.len() * 2 <= latest.1.len()
}

/// Every registry query made at or after `settled_ns` sees exactly the live nodes whose
/// current process has a member in the group (what joined and did not leave since it
/// started). Otherwise what a node saw, with that node and the nodes it saw wrongly.
pub(super) fn registry_converged(
    events: &[(Nanos, Event)],
    settled_ns: Nanos,
) -> Result<(), (String, Vec<u32>)> {
    let mut alive: BTreeSet<u32> = BTreeSet::new();
    let mut local: BTreeMap<u32, BTreeSet<(String, String)>> = BTreeMap::new();
    for (t, ev) in events {
        match ev {
            Event::ProcessStart { rank, .. } => {
                alive.insert(*rank);
                local.remove(rank);
            }
            Event::ProcessDeath { rank, .. } => {
                alive.remove(rank);
                local.remove(rank);
            }
            Event::RegistryJoin { rank, scope, group } => {
                local
                    .entry(*rank)
                    .or_default()
                    .insert((scope.clone(), group.clone()));
            }
            Event::RegistryLeave { rank, scope, group } => {
                if let Some(l) = local.get_mut(rank) {
                    l.remove(&(scope.clone(), group.clone()));
                }
            }
            Event::RegistryQuery {
                rank,
                scope,
                group,
                members,
                ..
            } if *t >= settled_ns => {
                let key = (scope.clone(), group.clone());
                let truth: Vec<u32> = alive
                    .iter()
                    .copied()
                    .filter(|n| local.get(n).is_some_and(|l| l.contains(&key)))
                    .collect();
                if *members != truth {
                    // the node, and the nodes it sees wrongly
                    let seen: BTreeSet<u32> = members.iter().copied().collect();
                    let real: BTreeSet<u32> = truth.iter().copied().collect();
                    let mut ranks: BTreeSet<u32> =
                        seen.symmetric_difference(&real).copied().collect();
                    ranks.insert(*rank);
                    return Err((
                        format!(
                            "at {} node {rank} sees {group} in {scope} as {members:?}, but its \
                             members are {truth:?}",
                            fmt_ms(*t)
                        ),
                        ranks.into_iter().collect(),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
