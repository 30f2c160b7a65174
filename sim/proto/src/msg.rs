//! Messages between ranks.

use super::data::Buffer;
use super::elastic::ElasticMsg;
use super::registry::RegistryMsg;
use super::types::{Generation, GroupId, SeqNo};
use crate::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
use serde::{Deserialize, Serialize};

/// Identifies one collective call as every participant must see it: a rank only consumes a
/// message whose fingerprint equals that of the call it is in (as NCCL, a mismatched call waits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Fingerprint {
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub op: OpKind,
    pub algorithm: Algorithm,
    pub bytes: u64,
    pub dtype: Dtype,
    pub root: u32,
    pub reduce: ReduceOp,
    pub elements: u32,
}

impl Fingerprint {
    /// The call's identity regardless of its parameters: (group, generation, seq).
    pub fn slot(&self) -> (GroupId, Generation, SeqNo) {
        (self.group, self.generation, self.seq)
    }
}

/// A chunk of a collective's buffer, for one step of its schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct CollMsg {
    pub fp: Fingerprint,
    pub step: u32,
    pub data: Buffer,
}

/// Everything one rank can say to another.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    Coll(Box<CollMsg>),
    /// Failure detection and rendezvous of an elastic group.
    Elastic(Box<ElasticMsg>),
    /// The `:pg`-style registry.
    Registry(Box<RegistryMsg>),
}

impl Msg {
    /// Short name of the message kind, for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Coll(_) => "coll",
            Msg::Elastic(m) => m.kind(),
            Msg::Registry(m) => m.kind(),
        }
    }
}
