//! The vocabulary the protocols share with the scenario format: ops, algorithms, element types,
//! reduction operators, rendezvous kinds, device meshes, point-to-point peers and registry actions. Their serde names are
//! the scenario file's words (`"reduce_scatter"`, `"recursive_doubling"`, `"f32"`); the same words
//! are their `Display`, their `FromStr` and their `name()`, all derived by strum from one
//! `snake_case` rule (a test holds strum's names to serde's).

use serde::{Deserialize, Serialize};
use std::fmt;
use strum::{Display, EnumString, IntoStaticStr, VariantArray};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RendezvousKind {
    /// Peer-to-peer agreement among the survivors with a strict-majority quorum.
    #[default]
    Quorum,
    /// A store process arbitrates generations by compare-and-set.
    Store,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mesh {
    pub shape: Vec<u32>,
    pub dims: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(Display, EnumString, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Dtype {
    F32,
    F64,
    I64,
}

impl Dtype {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(Display, EnumString, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum OpKind {
    Allreduce,
    Broadcast,
    Reduce,
    Allgather,
    ReduceScatter,
    Barrier,
    AllToAll,
    Gather,
    Scatter,
    /// Point-to-point: one message to a peer of the group.
    Send,
    /// Point-to-point: one message from a peer of the group.
    Recv,
}

impl OpKind {
    /// The ops of the first scenario language, which `check` draws from.
    pub const CLASSIC: [OpKind; 6] = [
        OpKind::Allreduce,
        OpKind::Broadcast,
        OpKind::Reduce,
        OpKind::Allgather,
        OpKind::ReduceScatter,
        OpKind::Barrier,
    ];

    /// Every op, in declaration order.
    pub const ALL: [OpKind; 11] = [
        OpKind::Allreduce,
        OpKind::Broadcast,
        OpKind::Reduce,
        OpKind::Allgather,
        OpKind::ReduceScatter,
        OpKind::Barrier,
        OpKind::AllToAll,
        OpKind::Gather,
        OpKind::Scatter,
        OpKind::Send,
        OpKind::Recv,
    ];

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Whether the op has a root rank.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            OpKind::Broadcast | OpKind::Reduce | OpKind::Gather | OpKind::Scatter
        )
    }

    /// Whether the op is point-to-point (one message between two members) rather than a
    /// collective of the whole group.
    pub fn point_to_point(self) -> bool {
        matches!(self, OpKind::Send | OpKind::Recv)
    }

    /// Whether every member that holds a result holds the same one (not so when each rank
    /// ends with its own block: reduce_scatter, all_to_all, scatter).
    pub fn same_result_everywhere(self) -> bool {
        !matches!(
            self,
            OpKind::ReduceScatter | OpKind::AllToAll | OpKind::Scatter
        )
    }

    /// Whether the op combines values with a reduction operator.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            OpKind::Allreduce | OpKind::Reduce | OpKind::ReduceScatter
        )
    }

    /// The algorithm used when neither the op nor the group names one.
    pub fn default_algorithm(self) -> Algorithm {
        match self {
            OpKind::Allreduce => Algorithm::Ring,
            OpKind::Broadcast => Algorithm::Binomial,
            OpKind::Reduce => Algorithm::Binomial,
            OpKind::Allgather => Algorithm::Ring,
            OpKind::ReduceScatter => Algorithm::Ring,
            OpKind::Barrier => Algorithm::Dissemination,
            OpKind::AllToAll => Algorithm::Pairwise,
            OpKind::Gather | OpKind::Scatter => Algorithm::Binomial,
            OpKind::Send | OpKind::Recv => Algorithm::Eager,
        }
    }

    /// Every algorithm the op can run with.
    pub fn algorithms(self) -> &'static [Algorithm] {
        use Algorithm::*;
        match self {
            OpKind::Allreduce => &[
                Ring,
                RecursiveDoubling,
                Rabenseifner,
                Tree,
                Direct,
                Hierarchical,
            ],
            OpKind::Broadcast => &[Binomial, ScatterAllgather, Direct],
            OpKind::Reduce => &[Binomial, Direct],
            OpKind::Allgather => &[Ring, RecursiveDoubling, Direct],
            OpKind::ReduceScatter => &[Ring, RecursiveHalving, Direct],
            OpKind::Barrier => &[Dissemination, Tree],
            OpKind::AllToAll => &[Pairwise, Direct, Bruck],
            OpKind::Gather | OpKind::Scatter => &[Binomial, Direct],
            // a send is eager (done once its bytes have left) or rendezvous (done once
            // received); the receiver takes either
            OpKind::Send => &[Eager, Rendezvous],
            OpKind::Recv => &[Eager],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(Display, EnumString, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Algorithm {
    Ring,
    RecursiveDoubling,
    Rabenseifner,
    Tree,
    Direct,
    Binomial,
    ScatterAllgather,
    RecursiveHalving,
    Dissemination,
    Hierarchical,
    Pairwise,
    Bruck,
    Eager,
    Rendezvous,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
#[derive(Display, EnumString, IntoStaticStr, VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum ReduceOp {
    #[default]
    Sum,
    Max,
    Min,
    Prod,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistryAction {
    Join,
    Leave,
    Broadcast,
    Query,
    Monitor,
}

/// `peer` of a send or recv: a rank of the op's group, or the next or previous one (no
/// wrap-around).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Peer {
    Rank(u32),
    Step(PeerStep),
}

impl<'de> Deserialize<'de> for Peer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Peer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rank of the group (an integer), or \"next\" or \"prev\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Peer, E> {
                u32::try_from(v)
                    .map(Peer::Rank)
                    .map_err(|_| E::custom(format!("peer {v} is out of range")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Peer, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("peer {v} is not a rank")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Peer, E> {
                match v {
                    "next" => Ok(Peer::Step(PeerStep::Next)),
                    "prev" => Ok(Peer::Step(PeerStep::Prev)),
                    _ => Err(E::custom(format!(
                        "`{v}` is not a peer: use a rank of the group, \"next\" or \"prev\""
                    ))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerStep {
    Next,
    Prev,
}

impl Peer {
    /// The group rank this peer names for group rank `me` of a group of `p`: None when there is
    /// no such rank (past either end: no wrap-around).
    pub fn resolve(self, me: u32, p: u32) -> Option<u32> {
        let r = match self {
            Peer::Rank(r) => r,
            Peer::Step(PeerStep::Next) => me.checked_add(1)?,
            Peer::Step(PeerStep::Prev) => me.checked_sub(1)?,
        };
        (r < p).then_some(r)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Rank(r) => write!(f, "{r}"),
            Peer::Step(PeerStep::Next) => f.write_str("next"),
            Peer::Step(PeerStep::Prev) => f.write_str("prev"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::value::{Error, StrDeserializer};
    use serde::de::DeserializeOwned;
    use std::fmt::Debug;
    use std::str::FromStr;

    /// strum's name of every variant is the one serde reads as that variant, and parses back.
    fn same_names<T>()
    where
        T: VariantArray + DeserializeOwned + Copy + Debug + PartialEq + std::fmt::Display + FromStr,
        <T as FromStr>::Err: Debug,
    {
        for &v in T::VARIANTS {
            let name = v.to_string();
            let serde = T::deserialize(StrDeserializer::<Error>::new(&name));
            assert_eq!(serde, Ok(v), "{name}");
            assert_eq!(T::from_str(&name).expect("parses"), v);
        }
    }

    #[test]
    fn strum_names_are_serde_names() {
        same_names::<OpKind>();
        same_names::<Algorithm>();
        same_names::<Dtype>();
        same_names::<ReduceOp>();
        assert_eq!(OpKind::ALL.as_slice(), OpKind::VARIANTS);
        assert_eq!(OpKind::AllToAll.name(), "all_to_all");
        assert_eq!(Algorithm::RecursiveDoubling.name(), "recursive_doubling");
        assert_eq!(Dtype::F32.name(), "f32");
        assert_eq!(OpKind::ReduceScatter.to_string(), "reduce_scatter");
        assert!("reduce-scatter".parse::<OpKind>().is_err());
    }
}
