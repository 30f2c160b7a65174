//! Root causes: why ranks are blocked, in the words that the diagnosis, `[expect] root_causes`,
//! `run --json`, `explain`, traces and the UI share (listed in scenarios/README.md, "Root
//! causes").
//!
//! Each cause is written as a short string: `preempted:R`, `paused:R`, `partitioned:A,B|C,D`,
//! `mismatch:R`, `skipped:R`, `hung:R`, `deadlock:R,S,...`, `quorum_lost`, `slow:R`,
//! `watchdog_timeout` (the watchdog fires before a call can finish without any fault), and for
//! Flight Recorder imports `missing:R` (a member rank left no dump; `missing:1-4998,5000` or
//! `missing:7-4095/8` for many ranks at once, as an import names more than a screen of them, in
//! the notation of [`crate::ranklist`]) and `undecided` (the
//! dumps cannot tell who is wrong). [`RootCause`] is the one type for them: `FromStr` parses exactly
//! these strings, `Display` prints a cause back as it was written, and serde reads and writes
//! the same strings. Nothing else parses or prints the vocabulary.
//!
//! # Equality: what a cause names
//!
//! Two causes are equal when they name the same thing, whatever order their ranks are written
//! in (as two `Path`s are equal when their components are, however they are spelled):
//! - a partition is a set of sides, each a set of ranks: `partitioned:3,2|1,0` is
//!   `partitioned:0,1|2,3`;
//! - a deadlock is the set of ranks of one strongly connected component of the wait-for graph.
//!   The diagnosis names no order among them (a component can hold more than one cycle), so a
//!   deadlock's ranks compare as a set: a cycle written from any of its ranks (`deadlock:2,0,1`),
//!   or in any other order, is the deadlock `deadlock:0,1,2`.
//!
//! The canonical form ([`RootCause::canonical`]) has each side's ranks sorted and the sides
//! sorted, and a deadlock's ranks sorted; the diagnosis always builds causes in that form, so it
//! prints them that way. `Eq`, `Ord` and `Hash` all go by the canonical form, so a `BTreeSet` of
//! causes is the set of what they name. Causes are ordered as the diagnosis lists them: by kind,
//! in the order of [`RootCause`]'s variants, then by their ranks.

use crate::proto::types::Rank;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// Why ranks are blocked, as named by the diagnosis and by `[expect] root_causes`.
///
/// Build partitions and deadlocks with [`RootCause::partitioned`] and [`RootCause::deadlock`]
/// to have them in canonical form; any other order compares the same, but prints as built.
#[derive(Clone, Debug)]
pub enum RootCause {
    /// `preempted:R`: the process of rank R died.
    Preempted(Rank),
    /// `paused:R`: rank R is frozen.
    Paused(Rank),
    /// `partitioned:A,B|C,D`: the network is split into these sides.
    Partitioned(Vec<Vec<Rank>>),
    /// `mismatch:R`: rank R issued a call with other parameters than its peers.
    Mismatch(Rank),
    /// `skipped:R`: rank R never issued a call its peers issued.
    Skipped(Rank),
    /// `hung:R`: rank R stopped issuing calls (stuck outside collectives).
    Hung(Rank),
    /// `deadlock:R,S,...`: these ranks wait for one another in a cycle.
    Deadlock(Vec<Rank>),
    /// `slow:R`: rank R is a straggler.
    Slow(Rank),
    /// `quorum_lost`: too few ranks survive to rebuild the group.
    QuorumLost,
    /// `watchdog_timeout`: the watchdog fired while a rank no fault touched was still
    /// working or its chunk still on its way: the timeout is shorter than the call takes on
    /// this network and workload without any fault.
    WatchdogTimeout,
    /// `missing:R`: member rank R of a recorded job left no dump; `missing:1-4998`: these
    /// ranks did (a set, written as ranges).
    Missing(Vec<Rank>),
    /// `undecided`: the evidence cannot tell which rank is wrong.
    Undecided,
}

/// Why a root-cause string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RootCauseError(pub String);

const VOCABULARY: &str = "preempted:R, paused:R, partitioned:A,B|C,D, mismatch:R, skipped:R, \
                          hung:R, deadlock:R,S,..., quorum_lost, slow:R, watchdog_timeout, missing:R \
                          or undecided";

impl RootCause {
    /// A partition in canonical form.
    pub fn partitioned(sides: Vec<Vec<Rank>>) -> RootCause {
        RootCause::Partitioned(canonical_sides(&sides).into_owned())
    }

    /// A deadlock in canonical form.
    pub fn deadlock(ranks: Vec<Rank>) -> RootCause {
        RootCause::Deadlock(rank_set(&ranks).into_owned())
    }

    /// Ranks without a dump, in canonical form.
    pub fn missing(ranks: Vec<Rank>) -> RootCause {
        RootCause::Missing(rank_set(&ranks).into_owned())
    }

    /// The same cause in canonical form (see the module doc): how the diagnosis writes it.
    pub fn canonical(&self) -> RootCause {
        match self {
            RootCause::Partitioned(sides) => RootCause::partitioned(sides.clone()),
            RootCause::Deadlock(ranks) => RootCause::deadlock(ranks.clone()),
            RootCause::Missing(ranks) => RootCause::missing(ranks.clone()),
            other => other.clone(),
        }
    }

    /// The word before the colon, e.g. `preempted`.
    pub fn tag(&self) -> &'static str {
        match self {
            RootCause::Preempted(_) => "preempted",
            RootCause::Paused(_) => "paused",
            RootCause::Partitioned(_) => "partitioned",
            RootCause::Mismatch(_) => "mismatch",
            RootCause::Skipped(_) => "skipped",
            RootCause::Hung(_) => "hung",
            RootCause::Deadlock(_) => "deadlock",
            RootCause::Slow(_) => "slow",
            RootCause::QuorumLost => "quorum_lost",
            RootCause::WatchdogTimeout => "watchdog_timeout",
            RootCause::Missing(_) => "missing",
            RootCause::Undecided => "undecided",
        }
    }

    /// Every rank the cause names, in the order written.
    pub fn ranks(&self) -> Vec<Rank> {
        match self {
            RootCause::Partitioned(sides) => sides.iter().flatten().copied().collect(),
            RootCause::Deadlock(ranks) | RootCause::Missing(ranks) => ranks.clone(),
            other => other.rank().into_iter().collect(),
        }
    }

    /// The rank of a cause that names one rank (`preempted:R`, `slow:R`...), else `None`.
    pub fn rank(&self) -> Option<Rank> {
        match self {
            RootCause::Preempted(r)
            | RootCause::Paused(r)
            | RootCause::Mismatch(r)
            | RootCause::Skipped(r)
            | RootCause::Hung(r)
            | RootCause::Slow(r) => Some(*r),
            RootCause::Missing(ranks) => match ranks[..] {
                [r] => Some(r),
                _ => None,
            },
            RootCause::Partitioned(_)
            | RootCause::Deadlock(_)
            | RootCause::QuorumLost
            | RootCause::WatchdogTimeout
            | RootCause::Undecided => None,
        }
    }

    /// The place of the cause's kind in the order of the variants.
    fn kind_index(&self) -> u8 {
        match self {
            RootCause::Preempted(_) => 0,
            RootCause::Paused(_) => 1,
            RootCause::Partitioned(_) => 2,
            RootCause::Mismatch(_) => 3,
            RootCause::Skipped(_) => 4,
            RootCause::Hung(_) => 5,
            RootCause::Deadlock(_) => 6,
            RootCause::Slow(_) => 7,
            RootCause::QuorumLost => 8,
            RootCause::WatchdogTimeout => 9,
            RootCause::Missing(_) => 10,
            RootCause::Undecided => 11,
        }
    }
}

/// `ranks` as a set: sorted, each rank once (borrowed when it already is).
fn rank_set(ranks: &[Rank]) -> Cow<'_, [Rank]> {
    if ranks.windows(2).all(|w| w[0] < w[1]) {
        return Cow::Borrowed(ranks);
    }
    let mut v = ranks.to_vec();
    v.sort_unstable();
    v.dedup();
    Cow::Owned(v)
}

/// A partition's sides as a set of sets: each side sorted, the sides sorted (borrowed when
/// they already are).
fn canonical_sides(sides: &[Vec<Rank>]) -> Cow<'_, [Vec<Rank>]> {
    let sorted = |s: &Vec<Rank>| s.windows(2).all(|w| w[0] < w[1]);
    if sides.iter().all(sorted) && sides.windows(2).all(|w| w[0] < w[1]) {
        return Cow::Borrowed(sides);
    }
    let mut v: Vec<Vec<Rank>> = sides.iter().map(|s| rank_set(s).into_owned()).collect();
    v.sort_unstable();
    v.dedup();
    Cow::Owned(v)
}

impl Ord for RootCause {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (RootCause::Partitioned(a), RootCause::Partitioned(b)) => {
                canonical_sides(a).cmp(&canonical_sides(b))
            }
            // an import names each of many ranks without a dump: one rank each, compared at once
            (RootCause::Missing(a), RootCause::Missing(b)) if a.len() == 1 && b.len() == 1 => {
                a[0].cmp(&b[0])
            }
            (RootCause::Deadlock(a), RootCause::Deadlock(b))
            | (RootCause::Missing(a), RootCause::Missing(b)) => rank_set(a).cmp(&rank_set(b)),
            _ => (self.kind_index(), self.rank()).cmp(&(other.kind_index(), other.rank())),
        }
    }
}

impl PartialOrd for RootCause {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for RootCause {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for RootCause {}

impl Hash for RootCause {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind_index().hash(state);
        match self {
            RootCause::Partitioned(sides) => canonical_sides(sides).hash(state),
            RootCause::Deadlock(ranks) | RootCause::Missing(ranks) => rank_set(ranks).hash(state),
            other => other.rank().hash(state),
        }
    }
}

fn parse_rank(s: &str, whole: &str) -> Result<Rank, RootCauseError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RootCauseError(format!(
            "`{whole}`: `{s}` is not a rank number"
        )));
    }
    s.parse()
        .map(Rank)
        .map_err(|_| RootCauseError(format!("`{whole}`: rank `{s}` is too large")))
}

/// `ranks` when no rank is named twice.
fn each_once(ranks: Vec<Rank>, whole: &str) -> Result<Vec<Rank>, RootCauseError> {
    let mut sorted = ranks.clone();
    sorted.sort();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(RootCauseError(format!(
            "`{whole}`: rank {} is named twice",
            w[0]
        )));
    }
    Ok(ranks)
}

fn parse_ranks(s: &str, whole: &str) -> Result<Vec<Rank>, RootCauseError> {
    let ranks = s
        .split(',')
        .map(|r| parse_rank(r, whole))
        .collect::<Result<Vec<_>, _>>()?;
    each_once(ranks, whole)
}

/// `1-4998,5000` or `7-4095/8`: ranks, ranges and stepped ranges of them
/// ([`crate::ranklist`]), each rank once, at most a world's worth.
fn parse_range_list(s: &str, whole: &str) -> Result<Vec<Rank>, RootCauseError> {
    crate::ranklist::parse(s, u64::from(crate::scenario::MAX_WORLD_SIZE))
        .map(|v| v.into_iter().map(Rank).collect())
        .map_err(|e| RootCauseError(format!("`{whole}`: {e}")))
}

impl FromStr for RootCause {
    type Err = RootCauseError;

    /// Parses one cause of the vocabulary, keeping its ranks in the order written.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "quorum_lost" => return Ok(RootCause::QuorumLost),
            "watchdog_timeout" => return Ok(RootCause::WatchdogTimeout),
            "undecided" => return Ok(RootCause::Undecided),
            _ => {}
        }
        let Some((tag, arg)) = s.split_once(':') else {
            return Err(RootCauseError(format!(
                "`{s}` is not a root cause: use one of {VOCABULARY}"
            )));
        };
        let one = |make: fn(Rank) -> RootCause| parse_rank(arg, s).map(make);
        match tag {
            "preempted" => one(RootCause::Preempted),
            "paused" => one(RootCause::Paused),
            "mismatch" => one(RootCause::Mismatch),
            "skipped" => one(RootCause::Skipped),
            "hung" => one(RootCause::Hung),
            "slow" => one(RootCause::Slow),
            "missing" => parse_range_list(arg, s).map(RootCause::Missing),
            "deadlock" => parse_ranks(arg, s).map(RootCause::Deadlock),
            "partitioned" => {
                let sides = arg
                    .split('|')
                    .map(|side| parse_ranks(side, s))
                    .collect::<Result<Vec<_>, _>>()?;
                if sides.len() < 2 {
                    return Err(RootCauseError(format!(
                        "`{s}`: a partition has at least two sides separated by `|`"
                    )));
                }
                let all = parse_ranks(&arg.replace('|', ","), s);
                all.map_err(|_| RootCauseError(format!("`{s}`: a rank is on more than one side")))?;
                Ok(RootCause::Partitioned(sides))
            }
            _ => Err(RootCauseError(format!(
                "`{s}`: unknown root cause `{tag}`: use one of {VOCABULARY}"
            ))),
        }
    }
}

fn write_ranks(f: &mut fmt::Formatter<'_>, ranks: &[Rank]) -> fmt::Result {
    for (i, r) in ranks.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{r}")?;
    }
    Ok(())
}

impl fmt::Display for RootCause {
    /// The cause in the vocabulary, its ranks in the order they are held.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())?;
        match self {
            RootCause::Deadlock(ranks) => {
                f.write_str(":")?;
                write_ranks(f, ranks)
            }
            RootCause::Missing(ranks) => {
                let r: Vec<u32> = ranks.iter().map(|r| r.0).collect();
                write!(f, ":{}", crate::diagnose::fmt_ranks(&r))
            }
            RootCause::Partitioned(sides) => {
                f.write_str(":")?;
                for (i, side) in sides.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    write_ranks(f, side)?;
                }
                Ok(())
            }
            // `quorum_lost`, `watchdog_timeout` and `undecided` name no rank
            other => match other.rank() {
                Some(r) => write!(f, ":{r}"),
                None => Ok(()),
            },
        }
    }
}

impl Serialize for RootCause {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RootCause {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // parsed inside the visitor, so that a format that knows where each value is written
        // (toml) places the error on the string itself, not on the array that holds it
        struct Cause;
        impl serde::de::Visitor<'_> for Cause {
            type Value = RootCause;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RootCause, E> {
                s.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Cause)
    }
}

/// Causes as a list for sentences, e.g. `preempted:2, paused:1`.
pub fn listed<'a>(causes: impl IntoIterator<Item = &'a RootCause>) -> String {
    causes
        .into_iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
