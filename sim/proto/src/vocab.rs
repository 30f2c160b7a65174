//! The vocabulary the protocols share with the scenario format: ops, algorithms, element types,
//! reduction operators, rendezvous kinds, device meshes, point-to-point peers and registry actions. Their serde names are
//! the scenario file's words (`"reduce_scatter"`, `"recursive_doubling"`, `"f32"`); the same words
//! are their `Display`, their `FromStr` and their `name()`, all derived by strum from one
//! `snake_case` rule (a test holds strum's names to serde's). [`Algorithm`], which a program
//! may extend with algorithms of its own, spells its words by hand, by the same rule.

use crate::collective::custom::{self, CustomAlgorithm};
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

/// A collective's algorithm: one of the stock ones, or one registered by the program
/// ([`crate::collective::custom`]). Its words are the scenario file's (`"recursive_doubling"`,
/// or the registered name), for serde, `Display`, `FromStr` and `name()` alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// A schedule registered under a name of its own.
    Custom(CustomAlgorithm),
}

impl Algorithm {
    /// The stock algorithms, in the order of their declaration.
    pub const STOCK: &'static [Algorithm] = &[
        Algorithm::Ring,
        Algorithm::RecursiveDoubling,
        Algorithm::Rabenseifner,
        Algorithm::Tree,
        Algorithm::Direct,
        Algorithm::Binomial,
        Algorithm::ScatterAllgather,
        Algorithm::RecursiveHalving,
        Algorithm::Dissemination,
        Algorithm::Hierarchical,
        Algorithm::Pairwise,
        Algorithm::Bruck,
        Algorithm::Eager,
        Algorithm::Rendezvous,
    ];

    /// The names of [`Algorithm::STOCK`], in the same order.
    pub const STOCK_NAMES: &'static [&'static str] = &[
        "ring",
        "recursive_doubling",
        "rabenseifner",
        "tree",
        "direct",
        "binomial",
        "scatter_allgather",
        "recursive_halving",
        "dissemination",
        "hierarchical",
        "pairwise",
        "bruck",
        "eager",
        "rendezvous",
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Custom(c) => c.name(),
            stock => Algorithm::STOCK_NAMES[stock.stock_index()],
        }
    }

    /// Whether the program registered it, rather than ringside shipping it.
    pub fn is_custom(self) -> bool {
        matches!(self, Algorithm::Custom(_))
    }

    /// Its place in [`Algorithm::STOCK`]; past the stock ones for a registered algorithm.
    fn stock_index(self) -> usize {
        match self {
            Algorithm::Ring => 0,
            Algorithm::RecursiveDoubling => 1,
            Algorithm::Rabenseifner => 2,
            Algorithm::Tree => 3,
            Algorithm::Direct => 4,
            Algorithm::Binomial => 5,
            Algorithm::ScatterAllgather => 6,
            Algorithm::RecursiveHalving => 7,
            Algorithm::Dissemination => 8,
            Algorithm::Hierarchical => 9,
            Algorithm::Pairwise => 10,
            Algorithm::Bruck => 11,
            Algorithm::Eager => 12,
            Algorithm::Rendezvous => 13,
            Algorithm::Custom(_) => Algorithm::STOCK.len(),
        }
    }

    /// Whether `op` runs with this algorithm: one of [`OpKind::algorithms`], or an op the
    /// registered algorithm implements.
    pub fn implements(self, op: OpKind) -> bool {
        match self {
            Algorithm::Custom(c) => c.factory().ops().contains(&op),
            stock => op.algorithms().contains(&stock),
        }
    }

    /// Every algorithm `op` runs with: the stock ones, then the registered ones.
    pub fn all_for(op: OpKind) -> Vec<Algorithm> {
        let mut all = op.algorithms().to_vec();
        all.extend(
            custom::registered()
                .into_iter()
                .filter(|a| a.implements(op)),
        );
        all
    }
}

/// Stock algorithms in the order of their declaration, then registered ones by name: an
/// order that does not depend on the order of registration.
impl Ord for Algorithm {
    fn cmp(&self, other: &Algorithm) -> std::cmp::Ordering {
        (self.stock_index(), self.name()).cmp(&(other.stock_index(), other.name()))
    }
}

impl PartialOrd for Algorithm {
    fn partial_cmp(&self, other: &Algorithm) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Algorithm> for &'static str {
    fn from(a: Algorithm) -> &'static str {
        a.name()
    }
}

/// A name that is neither a stock algorithm nor a registered one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm `{0}`")]
pub struct UnknownAlgorithm(pub String);

impl std::str::FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Algorithm, UnknownAlgorithm> {
        match Algorithm::STOCK_NAMES.iter().position(|n| *n == s) {
            Some(i) => Ok(Algorithm::STOCK[i]),
            None => custom::find(s).ok_or_else(|| UnknownAlgorithm(s.to_owned())),
        }
    }
}

impl Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Algorithm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Algorithm, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Algorithm;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an algorithm name")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Algorithm, E> {
                s.parse()
                    .map_err(|_| E::unknown_variant(s, Algorithm::STOCK_NAMES))
            }
        }
        d.deserialize_str(Name)
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
        same_names::<Dtype>();
        same_names::<ReduceOp>();
        assert_eq!(OpKind::ALL.as_slice(), OpKind::VARIANTS);
        assert_eq!(OpKind::AllToAll.name(), "all_to_all");
        assert_eq!(Algorithm::RecursiveDoubling.name(), "recursive_doubling");
        assert_eq!(Dtype::F32.name(), "f32");
        assert_eq!(OpKind::ReduceScatter.to_string(), "reduce_scatter");
        assert!("reduce-scatter".parse::<OpKind>().is_err());
    }

    /// The snake_case of `CamelCase`.
    fn snake(camel: &str) -> String {
        let mut s = String::new();
        for c in camel.chars() {
            if c.is_ascii_uppercase() && !s.is_empty() {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        }
        s
    }

    #[test]
    fn stock_algorithms_are_named_by_the_snake_case_rule() {
        assert_eq!(Algorithm::STOCK.len(), Algorithm::STOCK_NAMES.len());
        for (i, &a) in Algorithm::STOCK.iter().enumerate() {
            let name = snake(&format!("{a:?}"));
            assert_eq!(a.name(), name);
            assert_eq!(a.to_string(), name);
            assert_eq!(name.parse::<Algorithm>(), Ok(a));
            let serde = Algorithm::deserialize(StrDeserializer::<Error>::new(&name));
            assert_eq!(serde, Ok(a), "{name}");
            assert_eq!(a.stock_index(), i);
            assert!(!a.is_custom());
        }
        let e = Algorithm::deserialize(StrDeserializer::<Error>::new("bidi")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown variant `bidi`, expected one of `ring`"),
            "{e}"
        );
        assert_eq!(
            "bidi".parse::<Algorithm>(),
            Err(UnknownAlgorithm("bidi".into()))
        );
    }
}
