//! What a rank is blocked on right now.

use super::types::{Generation, GroupId, Rank, SeqNo};
use crate::time::Nanos;
use crate::vocab::{Algorithm, OpKind};
use serde::{Deserialize, Serialize};

/// A rank inside a call, waiting for messages of its current step. A send or recv has one
/// step: `op` says the direction, `peer` the other end, and `seq` is the message's order
/// between the two (from 1) in that direction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitState {
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub op: OpKind,
    pub algorithm: Algorithm,
    /// 0-based step of the schedule, and the number of steps.
    pub step: u32,
    pub steps: u32,
    /// The peers whose messages of this step have not arrived (world ranks).
    pub waiting_for: Vec<Rank>,
    /// When the rank started waiting in this step.
    pub since_ns: Nanos,
    /// Send and recv: the other end (a world rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Rank>,
}
