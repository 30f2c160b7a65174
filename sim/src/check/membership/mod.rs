//! Properties of elastic membership and of the registry (DESIGN §5), and the proptest fault
//! schedules they are checked under.
//!
//! Checkers live outside the protocol: each is a function of a run's trace events (and its
//! scenario) returning `Err(Violation)` when the property breaks, so a deliberately broken
//! variant of the protocol (a [`Mutation`](crate::proto::mutation::Mutation)) can be planted to
//! show that it fails.
//!
//! | property | kind | what |
//! |---|---|---|
//! | [`one_world_per_generation`] | always | a generation has one member list (and resume point), the same on every member; each rank's generations increase; sizes within `min_size..=max_size` |
//! | [`rebuilt_collectives_valid`] | always | every collective of a later generation reduces exactly its members' inputs, and its ranks agree |
//! | [`registry_converged`] | eventually | after the faults healed, every live node's view of every group is the set of live nodes with a member in it |
//! | [`finished`] | eventually | once every fault has healed, the run finishes within its bound |
//!
//! [`cases`] generates the schedules: a safety phase with faults, then a liveness phase in
//! which every fault has ended and every preempted process has restarted.

pub mod cases;

use crate::diagnose::Fold;
use crate::engine::RunResult;
use crate::proto::mutation::Mutations;
use crate::run::{run_events, RunOptions};
use crate::scenario::{OpKind, Outcome, Scenario};
use crate::trace::{Event, VecRecorder};
use crate::units::{fmt_ms, Nanos};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A broken property, with what broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub property: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

fn violation<T>(property: &'static str, detail: String) -> Result<T, Violation> {
    Err(Violation { property, detail })
}

/// A run with every event kept.
pub struct Recorded {
    pub result: RunResult,
    pub fold: Fold,
    pub events: Vec<(Nanos, Event)>,
}

/// Runs `scenario` with its seed and `mutations` planted, keeping every event.
pub fn record(scenario: &Scenario, mutations: Mutations) -> Recorded {
    let mut rec = VecRecorder::default();
    let opts = RunOptions {
        mutations,
        ..RunOptions::default()
    };
    let (result, fold, _) = run_events(scenario, &opts, &mut rec);
    Recorded {
        result,
        fold,
        events: rec.events,
    }
}

/// Always: no two different member lists (or resume points) share a generation; every rank
/// that installs a generation is a member of it at the place it says; each rank's generations
/// strictly increase, across restarts too; and, with `sizes`, every generation after the first
/// has between `min_size` and `max_size` members.
pub fn one_world_per_generation(
    events: &[(Nanos, Event)],
    sizes: Option<(u32, u32)>,
) -> Result<(), Violation> {
    const P: &str = "one world per generation";
    let mut first: BTreeMap<u32, (u32, Vec<u32>, u32)> = BTreeMap::new();
    let mut last_of: BTreeMap<u32, u32> = BTreeMap::new();
    for (t, ev) in events {
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
            return violation(
                P,
                format!("at {at} rank {rank} installs generation {g} as group rank {group_rank} of {members:?}"),
            );
        }
        if members.windows(2).any(|w| w[0] >= w[1]) {
            return violation(
                P,
                format!("generation {g} lists its members out of order: {members:?}"),
            );
        }
        if let Some((min, max)) = sizes {
            let n = members.len() as u32;
            if n < min || n > max {
                return violation(
                    P,
                    format!("generation {g} has {n} members {members:?}, outside {min}..={max}"),
                );
            }
        }
        match first.get(&g) {
            Some((by, m, resume)) if m != members || resume != resume_iteration => {
                return violation(
                    P,
                    format!(
                        "split brain: rank {by} installed generation {g} as {m:?} resuming at {resume}, \
                         rank {rank} at {at} as {members:?} resuming at {resume_iteration}"
                    ),
                );
            }
            Some(_) => {}
            None => {
                first.insert(g, (*rank, members.clone(), *resume_iteration));
            }
        }
        if let Some(&prev) = last_of.get(rank) {
            if g <= prev {
                return violation(
                    P,
                    format!("at {at} rank {rank} installs generation {g} after generation {prev}"),
                );
            }
        }
        last_of.insert(*rank, g);
    }
    Ok(())
}

/// Always: every collective completed in a generation after the first holds the exact result
/// computed from the inputs of that generation's members (the engine's `correct` flag), was
/// called with that generation's size, and all its ranks hold the same bits (but a
/// reduce-scatter's ranks, which hold different blocks).
pub fn rebuilt_collectives_valid(events: &[(Nanos, Event)]) -> Result<(), Violation> {
    const P: &str = "validity of rebuilt collectives";
    let mut size_of: BTreeMap<u32, usize> = BTreeMap::new();
    let mut op_of: BTreeMap<(u32, u32, u64), OpKind> = BTreeMap::new();
    let mut results: BTreeMap<(u32, u32, u64), BTreeSet<String>> = BTreeMap::new();
    for (t, ev) in events {
        match ev {
            Event::GenerationFormed {
                generation,
                members,
                ..
            } => {
                size_of.entry(generation.0).or_insert(members.len());
            }
            Event::Call {
                rank,
                group,
                generation,
                seq,
                op,
                members,
                ..
            } if generation.0 > 0 => {
                op_of.insert((group.0, generation.0, seq.0), *op);
                if let Some(&n) = size_of.get(&generation.0) {
                    if n != *members as usize {
                        return violation(
                            P,
                            format!(
                                "at {} rank {rank} calls {op} #{seq} of generation {} on {members} ranks, the generation has {n}",
                                fmt_ms(*t),
                                generation.0
                            ),
                        );
                    }
                }
            }
            Event::Complete {
                rank,
                group,
                generation,
                seq,
                result,
                correct,
                ..
            } if generation.0 > 0 => {
                if *correct != Some(true) {
                    return violation(
                        P,
                        format!(
                            "at {} rank {rank} completes #{seq} of generation {} with a result that is not the reduction of its members' inputs",
                            fmt_ms(*t),
                            generation.0
                        ),
                    );
                }
                let key = (group.0, generation.0, seq.0);
                let set = results.entry(key).or_default();
                if !result.is_empty() {
                    set.insert(result.clone());
                }
                let agrees = op_of.get(&key) == Some(&OpKind::ReduceScatter) || set.len() <= 1;
                if !agrees {
                    return violation(
                        P,
                        format!(
                            "ranks disagree on #{seq} of generation {}: results {set:?}",
                            generation.0
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Eventually: every registry query made at or after `settled_ns` sees exactly the live nodes
/// whose current process has a member in the group (what joined and did not leave since it
/// started).
pub fn registry_converged(events: &[(Nanos, Event)], settled_ns: Nanos) -> Result<(), Violation> {
    const P: &str = "registry convergence";
    let mut alive: BTreeSet<u32> = BTreeSet::new();
    let mut local: BTreeMap<u32, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut checked = 0;
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
                checked += 1;
                let key = (scope.clone(), group.clone());
                let truth: Vec<u32> = alive
                    .iter()
                    .copied()
                    .filter(|n| local.get(n).is_some_and(|l| l.contains(&key)))
                    .collect();
                if *members != truth {
                    return violation(
                        P,
                        format!(
                            "at {} node {rank} sees {group} in {scope} as {members:?}, but its members are {truth:?}",
                            fmt_ms(*t)
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    if checked == 0 {
        return violation(P, format!("no query after {} to check", fmt_ms(settled_ns)));
    }
    Ok(())
}

/// Eventually: the run finished (`completed` or `rebuilt`) rather than hitting its time limit,
/// which [`cases`] sets to the heal time plus the liveness bound — or it stalled because the
/// quorum is truly gone: fewer than a strict majority of the latest generation's members are
/// still the processes that installed it (the others died, and a restarted process has lost
/// its promises), so no rendezvous may ever form the next one. That is the one permanent
/// fault a healed schedule can leave behind (DESIGN §5: "or a diagnosed, permanent-fault
/// stall").
pub fn finished(
    scenario: &Scenario,
    r: &RunResult,
    events: &[(Nanos, Event)],
) -> Result<(), Violation> {
    let quorum_rendezvous = scenario
        .group
        .elastic
        .as_ref()
        .is_some_and(|e| e.rendezvous == crate::scenario::RendezvousKind::Quorum);
    match r.outcome {
        Outcome::Completed | Outcome::Rebuilt => Ok(()),
        Outcome::Stalled if quorum_rendezvous && quorum_gone(scenario.world.size, events) => Ok(()),
        o => violation(
            "liveness",
            format!(
                "the run ended {o} at {} after every fault had healed",
                fmt_ms(r.end_ns)
            ),
        ),
    }
}

/// Whether at most half of the latest generation's members are still the processes that
/// installed it.
fn quorum_gone(world: u32, events: &[(Nanos, Event)]) -> bool {
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

/// Every elastic property of one run of `scenario` with `mutations` planted (liveness only
/// when `heals`).
pub fn check_elastic(
    scenario: &Scenario,
    mutations: Mutations,
    heals: bool,
) -> Result<Recorded, Violation> {
    let rec = record(scenario, mutations);
    let sizes = scenario
        .group
        .elastic
        .as_ref()
        .map(|e| (e.min_size, e.max_size));
    one_world_per_generation(&rec.events, sizes)?;
    rebuilt_collectives_valid(&rec.events)?;
    if heals {
        finished(scenario, &rec.result, &rec.events)?;
    }
    Ok(rec)
}

/// The registry property of one run of `scenario` with `mutations` planted, whose queries from
/// `settled_ns` on are checked.
pub fn check_registry(
    scenario: &Scenario,
    mutations: Mutations,
    settled_ns: Nanos,
) -> Result<Recorded, Violation> {
    let rec = record(scenario, mutations);
    registry_converged(&rec.events, settled_ns)?;
    Ok(rec)
}
