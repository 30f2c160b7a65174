//! The ops of a workload built in code: each constructor is an `op = "..."` of
//! `[[workload.ops]]`, each method one of its keys.
//!
//! ```
//! use ringside_sim::builder::op;
//! use ringside_sim::scenario::{Algorithm, ReduceOp};
//!
//! let sum = op::allreduce("64MiB").algorithm(Algorithm::Ring);
//! let max = op::allreduce(4096).reduce(ReduceOp::Max).group("tp").compute("2ms");
//! let bcast = op::broadcast("1MiB", 0);
//! ```

use super::Quantity;
use crate::scenario::{Algorithm, OpKind, OpSpec, Peer, ReduceOp};
use crate::units::{Duration, Size};

/// One op of the workload (an [`OpSpec`], as `[[workload.ops]]` writes it).
#[derive(Clone, Debug)]
pub struct Op {
    pub(super) spec: OpSpec,
    /// The first quantity that is not one: (method, empty for the constructor; key; why).
    pub(super) error: Option<(&'static str, &'static str, String)>,
}

/// An op of any kind, as written.
pub fn of(spec: OpSpec) -> Op {
    Op { spec, error: None }
}

fn sized(kind: OpKind, bytes: impl Quantity<Size>) -> Op {
    let mut op = of(OpSpec::of(kind));
    match bytes.value() {
        Ok(n) => op.spec.bytes = n,
        Err(e) => op.error = Some(("", "bytes", e)),
    }
    op
}

/// An allreduce of `bytes` modeled bytes.
pub fn allreduce(bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::Allreduce, bytes)
}

/// A broadcast from group rank `root`.
pub fn broadcast(bytes: impl Quantity<Size>, root: u32) -> Op {
    sized(OpKind::Broadcast, bytes).root(root)
}

/// A reduce to group rank `root`.
pub fn reduce(bytes: impl Quantity<Size>, root: u32) -> Op {
    sized(OpKind::Reduce, bytes).root(root)
}

/// An allgather whose gathered output is `bytes`.
pub fn allgather(bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::Allgather, bytes)
}

/// A reduce-scatter whose input is `bytes`.
pub fn reduce_scatter(bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::ReduceScatter, bytes)
}

/// An all-to-all of `bytes` per rank.
pub fn all_to_all(bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::AllToAll, bytes)
}

/// A barrier.
pub fn barrier() -> Op {
    of(OpSpec::of(OpKind::Barrier))
}

/// A send of `bytes` to the group rank `peer`.
pub fn send(peer: u32, bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::Send, bytes).peer(Peer::Rank(peer))
}

/// A receive of `bytes` from the group rank `peer`.
pub fn recv(peer: u32, bytes: impl Quantity<Size>) -> Op {
    sized(OpKind::Recv, bytes).peer(Peer::Rank(peer))
}

impl Op {
    /// The algorithm of this call (`algorithm`): a stock one or a registered one.
    pub fn algorithm(mut self, a: Algorithm) -> Op {
        self.spec.algorithm = Some(a);
        self
    }

    /// The reduction (`reduce`; default sum).
    pub fn reduce(mut self, r: ReduceOp) -> Op {
        self.spec.reduce = r;
        self
    }

    /// The root, a group rank (`root`).
    pub fn root(mut self, root: u32) -> Op {
        self.spec.root = Some(root);
        self
    }

    /// The named group or mesh dimension the op runs on (`group`).
    pub fn group(mut self, name: impl Into<String>) -> Op {
        self.spec.group = Some(name.into());
        self
    }

    /// The other member of a send or recv (`peer`): a group rank, or "next" / "prev".
    pub fn peer(mut self, peer: Peer) -> Op {
        self.spec.peer = Some(peer);
        self
    }

    /// A send done only once received (`rendezvous = true`).
    pub fn rendezvous(mut self) -> Op {
        self.spec.rendezvous = true;
        self
    }

    /// Compute before the call is issued (`compute`).
    pub fn compute(mut self, d: impl Quantity<Duration>) -> Op {
        match d.value() {
            Ok(d) => self.spec.compute = Some(d),
            Err(e) => {
                self.error.get_or_insert(("compute", "compute", e));
            }
        }
        self
    }
}
