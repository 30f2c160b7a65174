//! Identifiers that must not be confused with one another.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A rank's id in the world (its original id; a restarted process keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rank(pub u32);

impl Rank {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A membership generation of a group; the first is 0.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Generation(pub u32);

/// A collective's sequence number inside its group and generation; the first is 1.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SeqNo(pub u64);

impl fmt::Display for SeqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A communicator: 0 is the world group; sub-groups of a device mesh get their own ids.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct GroupId(pub u32);

/// What a timer is for; the driver hands the key back when the timer fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "timer")]
pub enum TimerKey {
    /// The watchdog of collective `seq` in `group`.
    Watchdog { group: GroupId, seq: SeqNo },
    /// The watchdog of a send or recv in `group`: the `order`-th between this rank and `peer`
    /// in that direction.
    PeerWatchdog {
        group: GroupId,
        peer: Rank,
        order: u64,
    },
    /// Periodic heartbeat of the failure detector.
    Heartbeat,
    /// A rendezvous round's deadline.
    Rendezvous { round: u64 },
    /// A registry workload step.
    Registry { step: u32 },
    /// Periodic heartbeat of a registry node's failure detector.
    RegistryHeartbeat,
    /// A timer of a node of the program's own ([`crate::node`]), which names it by `id`.
    Node { id: u64 },
}

/// Names one send, so that the driver can say when its bytes have left the sender: the
/// `order`-th message (from 1) to `peer` (a world rank) in `group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SendToken {
    pub group: GroupId,
    pub peer: Rank,
    pub order: u64,
}
