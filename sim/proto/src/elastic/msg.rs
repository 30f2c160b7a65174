//! What elastic members, joiners and the store say to one another.

use crate::collective::Members;
use crate::time::Nanos;
use crate::types::{Generation, Rank};
use std::sync::Arc;

/// A proposer's ballot: rounds are ordered first, the proposer's rank breaks ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ballot {
    pub round: u32,
    pub rank: Rank,
}

/// The value a rendezvous agrees on: the members of the next generation, in group-rank order
/// (ascending world ranks), each with the incarnation of its process, and the iteration the
/// workload resumes from. Members are processes, not ranks: a restarted process is not the
/// member its previous incarnation was.
#[derive(Debug, PartialEq, Eq)]
pub struct Proposal {
    pub members: Arc<Members>,
    /// The incarnation of each member, in the order of `members`.
    pub incarnations: Vec<u32>,
    pub resume: u32,
}

impl Proposal {
    pub fn new(mut members: Vec<(Rank, u32)>, resume: u32) -> Arc<Proposal> {
        members.sort_unstable();
        members.dedup_by_key(|m| m.0);
        Arc::new(Proposal {
            incarnations: members.iter().map(|m| m.1).collect(),
            members: Members::new(members.into_iter().map(|m| m.0).collect()),
            resume,
        })
    }

    /// Generation 0: every rank's first process.
    pub fn world(members: Arc<Members>) -> Arc<Proposal> {
        Arc::new(Proposal {
            incarnations: vec![0; members.len()],
            members,
            resume: 0,
        })
    }

    /// Whether rank `r` (some process of it) is a member.
    pub fn contains(&self, r: Rank) -> bool {
        self.members.index(r).is_some()
    }

    /// Whether the process `incarnation` of rank `r` is a member.
    pub fn has_process(&self, r: Rank, incarnation: u32) -> bool {
        self.members
            .index(r)
            .is_some_and(|i| self.incarnations[i as usize] == incarnation)
    }

    pub fn ranks(&self) -> &[Rank] {
        &self.members.ranks
    }
}

/// A store rendezvous round being filled: who joined it, with the iteration each has completed
/// (`None`: a process without progress of its own, which takes over the others' state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreRound {
    pub target: Generation,
    /// (rank, incarnation, iterations completed).
    pub participants: Vec<(Rank, u32, Option<u32>)>,
    /// Set once `min_size` participants are in: the round closes then (or when it is full).
    pub last_call: Option<Nanos>,
}

impl StoreRound {
    /// Whether the process `incarnation` of rank `r` joined the round.
    pub fn has(&self, r: Rank, incarnation: u32) -> bool {
        self.participants
            .iter()
            .any(|(p, i, _)| *p == r && *i == incarnation)
    }
}

/// The rendezvous state the store holds: the last generation formed, and the open round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreState {
    pub generation: Generation,
    pub proposal: Arc<Proposal>,
    pub round: Option<StoreRound>,
}

/// Every message of elastic membership.
#[derive(Clone, Debug, PartialEq)]
pub enum ElasticMsg {
    /// Failure detection (an unreliable datagram): "I am alive, in `generation`".
    Heartbeat {
        generation: Generation,
    },
    /// Phase 1 of a quorum rendezvous: promise not to accept lower ballots for `target`.
    Prepare {
        target: Generation,
        ballot: Ballot,
    },
    /// The answer to a prepare. Only members of the generation before `target` vote; others
    /// (restarted or excluded processes) answer to be counted in, with no progress.
    Promise {
        target: Generation,
        ballot: Ballot,
        /// The answering process.
        incarnation: u32,
        voter: bool,
        accepted: Option<(Ballot, Arc<Proposal>)>,
        completed: Option<u32>,
    },
    /// A prepare or accept refused: a higher ballot was promised.
    Reject {
        target: Generation,
        ballot: Ballot,
        promised: Ballot,
    },
    /// Phase 2: accept this proposal for `target`.
    Accept {
        target: Generation,
        ballot: Ballot,
        proposal: Arc<Proposal>,
    },
    Accepted {
        target: Generation,
        ballot: Ballot,
    },
    /// A decided generation: sent to its members and to the previous one's, and in answer to
    /// anyone who is behind.
    Commit {
        generation: Generation,
        proposal: Arc<Proposal>,
    },
    /// "Which generation are you in?" (a datagram; the answer is a `Commit`).
    Query,
    /// A process outside the group asks to be admitted (a datagram, repeated).
    Join {
        known: Generation,
    },
    /// Store rendezvous: read the state.
    StoreGet,
    /// Store rendezvous: replace the state if it is still at `expected`.
    StoreCas {
        expected: u64,
        state: Arc<StoreState>,
    },
    /// The store's answer to either: the state after the operation. `lost`: the store was
    /// restarted and has none.
    StoreReply {
        ok: bool,
        version: u64,
        state: Arc<StoreState>,
        lost: bool,
    },
}

impl ElasticMsg {
    pub fn kind(&self) -> &'static str {
        match self {
            ElasticMsg::Heartbeat { .. } => "heartbeat",
            ElasticMsg::Prepare { .. } => "prepare",
            ElasticMsg::Promise { .. } => "promise",
            ElasticMsg::Reject { .. } => "reject",
            ElasticMsg::Accept { .. } => "accept",
            ElasticMsg::Accepted { .. } => "accepted",
            ElasticMsg::Commit { .. } => "commit",
            ElasticMsg::Query => "query",
            ElasticMsg::Join { .. } => "join",
            ElasticMsg::StoreGet => "store_get",
            ElasticMsg::StoreCas { .. } => "store_cas",
            ElasticMsg::StoreReply { .. } => "store_reply",
        }
    }

    /// Modeled size on the wire: a small header, plus four bytes per listed rank.
    pub fn bytes(&self) -> u64 {
        let ranks = match self {
            ElasticMsg::Accept { proposal, .. } | ElasticMsg::Commit { proposal, .. } => {
                proposal.members.len()
            }
            ElasticMsg::Promise {
                accepted: Some((_, p)),
                ..
            } => p.members.len(),
            ElasticMsg::StoreCas { state, .. } | ElasticMsg::StoreReply { state, .. } => {
                state.proposal.members.len()
                    + state.round.as_ref().map_or(0, |r| 2 * r.participants.len())
            }
            _ => 0,
        };
        64 + 4 * ranks as u64
    }
}
