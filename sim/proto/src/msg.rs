//! Messages between ranks.

use super::data::Buffer;
use super::elastic::ElasticMsg;
use super::registry::RegistryMsg;
use super::types::{Generation, GroupId, SeqNo};
use crate::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
use serde::{Deserialize, Serialize};

/// Identifies one collective call as every participant must see it: a rank only consumes a
/// message whose fingerprint equals that of the call it is in (as NCCL, a mismatched call waits).
// equality is every field's, as the derived hash and order take them (see `PartialEq` below)
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Copy, Debug, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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

/// Every field equal. Compared without a branch per field: every delivered chunk is checked
/// against its call, and the derived comparison became a call to the C library's `bcmp`.
impl PartialEq for Fingerprint {
    #[inline(always)]
    fn eq(&self, o: &Fingerprint) -> bool {
        // named field by field, so that a new field cannot be left out of the comparison
        let Fingerprint {
            group,
            generation,
            seq,
            op,
            algorithm,
            bytes,
            dtype,
            root,
            reduce,
            elements,
        } = *self;
        let wide = (seq.0 ^ o.seq.0) | (bytes ^ o.bytes);
        let narrow = (group.0 ^ o.group.0)
            | (generation.0 ^ o.generation.0)
            | (root ^ o.root)
            | (elements ^ o.elements);
        let tags = (op as u8 ^ o.op as u8)
            | u8::from(algorithm != o.algorithm)
            | (dtype as u8 ^ o.dtype as u8)
            | (reduce as u8 ^ o.reduce as u8);
        (wide | u64::from(narrow) | u64::from(tags)) == 0
    }
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

/// What both ends of a send and recv must agree on; a recv takes only a message whose
/// parameters equal its own (as a mismatched collective, a mismatched recv waits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct P2pSig {
    /// Modeled size.
    pub bytes: u64,
    pub dtype: Dtype,
    /// Real elements carried.
    pub elements: u32,
}

/// A point-to-point message in `group`: the `order`-th (from 1) from its sender to its
/// receiver, or the receiver's acknowledgement that it took that message.
#[derive(Clone, Debug, PartialEq)]
pub struct P2pMsg {
    pub group: GroupId,
    pub generation: Generation,
    pub order: u64,
    pub body: P2pBody,
}

#[derive(Clone, Debug, PartialEq)]
pub enum P2pBody {
    /// The sender's data; `rendezvous`: the sender waits for an [`P2pBody::Ack`].
    Data {
        sig: P2pSig,
        rendezvous: bool,
        data: Buffer,
    },
    /// The receiver took the message.
    Ack,
}

/// Everything one rank can say to another.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    Coll(Box<CollMsg>),
    /// Point-to-point: a send's data, or a rendezvous send's acknowledgement.
    P2p(Box<P2pMsg>),
    /// Failure detection and rendezvous of an elastic group.
    Elastic(Box<ElasticMsg>),
    /// The `:pg`-style registry.
    Registry(Box<RegistryMsg>),
    /// A message between nodes of a program's own ([`crate::node`]): its bytes, as the
    /// program encodes them. Boxed as every other kind, so that a message stays two words
    /// (a boxed slice is two, and made every message of a run a word longer).
    Node(Box<Vec<u8>>),
}

impl Msg {
    /// Short name of the message kind, for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Coll(_) => "coll",
            Msg::P2p(m) => match m.body {
                P2pBody::Data { .. } => "p2p",
                P2pBody::Ack => "p2p_ack",
            },
            Msg::Elastic(m) => m.kind(),
            Msg::Registry(m) => m.kind(),
            Msg::Node(_) => "node",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of a run is moved through the event queue: it stays two words.
    #[test]
    fn a_message_is_two_words() {
        assert_eq!(std::mem::size_of::<Msg>(), 16);
    }
    use strum::VariantArray;

    /// Two fingerprints are equal exactly when every field is: a change to any one field, to
    /// any value of it, makes them differ.
    #[test]
    fn fingerprints_differ_in_any_field() {
        let a = Fingerprint {
            group: GroupId(1),
            generation: Generation(2),
            seq: SeqNo(3),
            op: OpKind::Allreduce,
            algorithm: Algorithm::Ring,
            bytes: 1 << 20,
            dtype: Dtype::F32,
            root: 0,
            reduce: ReduceOp::Sum,
            elements: 16,
        };
        let same = a;
        assert_eq!(a, same);
        let mut changed: Vec<Fingerprint> = vec![
            Fingerprint {
                group: GroupId(u32::MAX),
                ..a
            },
            Fingerprint {
                generation: Generation(1 << 31),
                ..a
            },
            Fingerprint {
                seq: SeqNo(1 << 63),
                ..a
            },
            Fingerprint {
                bytes: (1 << 20) + 1,
                ..a
            },
            Fingerprint { root: 1, ..a },
            Fingerprint { elements: 17, ..a },
        ];
        changed.extend(OpKind::VARIANTS.iter().map(|&op| Fingerprint { op, ..a }));
        changed.extend(
            Algorithm::STOCK
                .iter()
                .map(|&algorithm| Fingerprint { algorithm, ..a }),
        );
        changed.extend(
            Dtype::VARIANTS
                .iter()
                .map(|&dtype| Fingerprint { dtype, ..a }),
        );
        changed.extend(
            ReduceOp::VARIANTS
                .iter()
                .map(|&reduce| Fingerprint { reduce, ..a }),
        );
        for b in changed {
            let same = format!("{a:?}") == format!("{b:?}");
            assert_eq!(a == b, same, "{a:?} against {b:?}");
            assert_eq!(b == a, same);
            assert_eq!(a.cmp(&b) == std::cmp::Ordering::Equal, same, "Ord agrees");
        }
    }
}
