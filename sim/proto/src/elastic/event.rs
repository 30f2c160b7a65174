//! What elastic membership reports about itself (the driver turns these into trace events).

use super::msg::Proposal;
use crate::time::Nanos;
use crate::types::{Generation, Rank};
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum MemberEvent {
    /// This rank installed `generation`: its members in group-rank order, this rank's place
    /// among them, and the iteration the workload resumes from.
    GenerationFormed {
        generation: Generation,
        proposal: Arc<Proposal>,
        group_rank: u32,
    },
    /// This rank stopped working to agree on `target` with the others.
    RendezvousStart { target: Generation, reason: String },
    /// A rendezvous round could not form `target`: who could be reached, and what is needed
    /// (a strict majority `quorum` of the previous generation, and `min_size` ranks).
    RendezvousWait {
        target: Generation,
        reachable: Vec<Rank>,
        quorum: u32,
        min_size: u32,
        reason: String,
    },
    /// The failure detector suspects `peer`, silent for `silent_ns`.
    Suspect { peer: Rank, silent_ns: Nanos },
    /// This process is outside the group and asks to be admitted.
    Joining { known: Generation, reason: String },
    /// The store accepted a compare-and-set (emitted by the store).
    StoreUpdate {
        version: u64,
        generation: Generation,
        members: Vec<Rank>,
        round: Option<Generation>,
        participants: Vec<Rank>,
    },
}
