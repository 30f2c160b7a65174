//! The vocabulary the protocols share with the scenario format: ops, algorithms, element types,
//! reduction operators, rendezvous kinds, device meshes and registry actions. Their serde names are
//! the scenario file's words (`"reduce_scatter"`, `"recursive_doubling"`, `"f32"`); the same words
//! are their `Display`, their `FromStr` and their `name()`, all derived by strum from one
//! `snake_case` rule (a test holds strum's names to serde's).

use serde::{Deserialize, Serialize};
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
    pub const ALL: [OpKind; 9] = [
        OpKind::Allreduce,
        OpKind::Broadcast,
        OpKind::Reduce,
        OpKind::Allgather,
        OpKind::ReduceScatter,
        OpKind::Barrier,
        OpKind::AllToAll,
        OpKind::Gather,
        OpKind::Scatter,
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
