//! Elastic membership and the registry as a trace shows them: the generations formed, who
//! waits in a rendezvous and why, who asks to be let in, and the registry's views and queries.

use crate::trace::Event;
use crate::units::Nanos;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A generation, as its first member to install it reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GenerationView {
    pub generation: u32,
    /// World ranks in group-rank order.
    pub members: Vec<u32>,
    pub formed_ns: Nanos,
    pub resume_iteration: u32,
}

/// A rank waiting in a rendezvous that could not form a generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WaitView {
    pub target: u32,
    /// The ranks it could reach.
    pub reachable: Vec<u32>,
    /// The strict majority of the previous generation it needs (0: not the obstacle).
    pub quorum: u32,
    pub min_size: u32,
    pub reason: String,
    pub since_ns: Nanos,
}

/// A registry query and what it saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueryView {
    pub t: Nanos,
    pub rank: u32,
    pub scope: String,
    pub group: String,
    pub members: Vec<u32>,
    pub expected: Option<Vec<u32>>,
}

impl QueryView {
    /// The query saw what the scenario expected (or expected nothing).
    pub fn ok(&self) -> bool {
        self.expected.as_ref().is_none_or(|e| *e == self.members)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MembershipView {
    /// Every generation formed after the first, as first reported, in generation order.
    pub generations: Vec<GenerationView>,
    /// Reports of a generation with other members than its first report: (rank, generation,
    /// members). Never happens unless the rendezvous is broken (split brain).
    pub conflicts: Vec<(u32, u32, Vec<u32>)>,
    /// The generation each rank installed last.
    pub generation_of: BTreeMap<u32, u32>,
    /// Ranks waiting in a rendezvous that could not form a generation.
    pub waiting: BTreeMap<u32, WaitView>,
    /// Ranks outside the group, asking to be admitted.
    pub joining: BTreeSet<u32>,
    /// Ranks in a rendezvous (started, no generation formed since), by the generation they
    /// aim at.
    pub rendezvous: BTreeMap<u32, u32>,
    /// Ranks their peers' failure detectors suspected, with the last time one did.
    pub suspected: BTreeMap<u32, Nanos>,
    /// Registry queries, in order.
    pub queries: Vec<QueryView>,
    /// Registry views by (rank, scope, group).
    pub views: BTreeMap<(u32, String, String), Vec<u32>>,
}

impl MembershipView {
    /// Why `rank`'s rendezvous cannot form a generation: its own report, or else that of a
    /// rank in the same rendezvous that reached it.
    pub fn wait_of(&self, rank: u32) -> Option<&WaitView> {
        self.waiting.get(&rank).or_else(|| {
            let target = self.rendezvous.get(&rank)?;
            self.waiting
                .values()
                .find(|w| w.target == *target && w.reachable.contains(&rank))
        })
    }

    /// Applies one event (every event may be given; the others are ignored).
    #[inline]
    pub fn apply(&mut self, t: Nanos, ev: &Event) {
        // the events of every message and step say nothing of membership
        if !matches!(
            ev,
            Event::Send { .. } | Event::Deliver { .. } | Event::Step { .. } | Event::Drop { .. }
        ) {
            self.apply_membership(t, ev);
        }
    }

    fn apply_membership(&mut self, t: Nanos, ev: &Event) {
        match ev {
            Event::ProcessStart { rank, .. } | Event::ProcessDeath { rank, .. } => {
                self.waiting.remove(rank);
                self.joining.remove(rank);
                self.rendezvous.remove(rank);
                self.generation_of.remove(rank);
                self.views.retain(|(r, _, _), _| r != rank);
            }
            Event::GenerationFormed {
                rank,
                generation,
                members,
                resume_iteration,
                ..
            } => {
                self.waiting.remove(rank);
                self.joining.remove(rank);
                self.rendezvous.remove(rank);
                self.generation_of.insert(*rank, generation.0);
                match self
                    .generations
                    .iter()
                    .find(|g| g.generation == generation.0)
                {
                    Some(g) if g.members != *members => {
                        self.conflicts.push((*rank, generation.0, members.clone()));
                    }
                    Some(_) => {}
                    None => {
                        self.generations.push(GenerationView {
                            generation: generation.0,
                            members: members.clone(),
                            formed_ns: t,
                            resume_iteration: *resume_iteration,
                        });
                        self.generations.sort_by_key(|g| g.generation);
                    }
                }
            }
            Event::RendezvousWait {
                rank,
                target,
                reachable,
                quorum,
                min_size,
                reason,
            } => {
                self.waiting.insert(
                    *rank,
                    WaitView {
                        target: target.0,
                        reachable: reachable.clone(),
                        quorum: *quorum,
                        min_size: *min_size,
                        reason: reason.clone(),
                        since_ns: t,
                    },
                );
            }
            Event::Suspect { peer, .. } => {
                self.suspected.insert(*peer, t);
            }
            Event::RendezvousStart { rank, target, .. } => {
                self.rendezvous.insert(*rank, target.0);
            }
            Event::Joining { rank, .. } => {
                self.waiting.remove(rank);
                self.rendezvous.remove(rank);
                self.joining.insert(*rank);
            }
            Event::RegistryView {
                rank,
                scope,
                group,
                members,
            } => {
                self.views
                    .insert((*rank, scope.clone(), group.clone()), members.clone());
            }
            Event::RegistryQuery {
                rank,
                scope,
                group,
                members,
                expected,
                ..
            } => self.queries.push(QueryView {
                t,
                rank: *rank,
                scope: scope.clone(),
                group: group.clone(),
                members: members.clone(),
                expected: expected.clone(),
            }),
            _ => {}
        }
    }
}
