//! The root-cause vocabulary shared by `[expect]`, `run --json` and the UI (DESIGN §2).
//!
//! Each cause is written as a short string: `preempted:R`, `paused:R`, `partitioned:A,B|C,D`,
//! `mismatch:R`, `skipped:R`, `hung:R`, `deadlock:R,S,...`, `quorum_lost`, `slow:R`, and for
//! Flight Recorder imports `missing:R` (a member rank left no dump) and `undecided` (the dumps
//! cannot tell who is wrong).
//! [`RootCause`] parses and prints exactly these strings. A partition is a set of sides, so it is
//! kept canonical: ranks sorted within a side, sides sorted by their first rank. A deadlock keeps
//! its ranks in the order written (the order of the wait-for cycle).

use crate::proto::types::Rank;
use std::fmt;
use std::str::FromStr;

/// Why ranks are blocked, as named by the diagnosis and by `[expect] root_causes`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
    /// `quorum_lost`: too few ranks survive to rebuild the group.
    QuorumLost,
    /// `slow:R`: rank R is a straggler.
    Slow(Rank),
    /// `missing:R`: member rank R of a recorded job left no dump.
    Missing(Rank),
    /// `undecided`: the evidence cannot tell which rank is wrong.
    Undecided,
}

/// Why a root-cause string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RootCauseError(pub String);

const VOCABULARY: &str = "preempted:R, paused:R, partitioned:A,B|C,D, mismatch:R, skipped:R, \
                          hung:R, deadlock:R,S,..., quorum_lost, slow:R, missing:R or undecided";

impl RootCause {
    /// A partition cause in canonical order.
    pub fn partitioned(mut sides: Vec<Vec<Rank>>) -> RootCause {
        for side in &mut sides {
            side.sort();
        }
        sides.sort();
        RootCause::Partitioned(sides)
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
            RootCause::QuorumLost => "quorum_lost",
            RootCause::Slow(_) => "slow",
            RootCause::Missing(_) => "missing",
            RootCause::Undecided => "undecided",
        }
    }

    /// Every rank the cause names, in the order written.
    pub fn ranks(&self) -> Vec<Rank> {
        match self {
            RootCause::Preempted(r)
            | RootCause::Paused(r)
            | RootCause::Mismatch(r)
            | RootCause::Skipped(r)
            | RootCause::Hung(r)
            | RootCause::Slow(r)
            | RootCause::Missing(r) => vec![*r],
            RootCause::Partitioned(sides) => sides.iter().flatten().copied().collect(),
            RootCause::Deadlock(ranks) => ranks.clone(),
            RootCause::QuorumLost | RootCause::Undecided => Vec::new(),
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

fn parse_ranks(s: &str, whole: &str) -> Result<Vec<Rank>, RootCauseError> {
    let ranks = s
        .split(',')
        .map(|r| parse_rank(r, whole))
        .collect::<Result<Vec<_>, _>>()?;
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

impl FromStr for RootCause {
    type Err = RootCauseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "quorum_lost" => return Ok(RootCause::QuorumLost),
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
            "missing" => one(RootCause::Missing),
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
                Ok(RootCause::partitioned(sides))
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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootCause::QuorumLost => f.write_str("quorum_lost"),
            RootCause::Undecided => f.write_str("undecided"),
            RootCause::Deadlock(ranks) => {
                write!(f, "deadlock:")?;
                write_ranks(f, ranks)
            }
            RootCause::Partitioned(sides) => {
                write!(f, "partitioned:")?;
                let mut sides = sides.clone();
                for side in &mut sides {
                    side.sort();
                }
                sides.sort();
                for (i, side) in sides.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    write_ranks(f, side)?;
                }
                Ok(())
            }
            other => {
                let rank = other.ranks()[0];
                write!(f, "{}:{rank}", other.tag())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_round_trips() {
        for s in [
            "preempted:2",
            "paused:0",
            "partitioned:0,1|2,3",
            "partitioned:0|1|2",
            "mismatch:1",
            "skipped:3",
            "hung:4",
            "deadlock:2,0,1",
            "quorum_lost",
            "slow:7",
            "missing:3",
            "undecided",
        ] {
            let c: RootCause = s.parse().unwrap();
            assert_eq!(c.to_string(), s);
        }
    }

    #[test]
    fn partitions_are_canonical() {
        let c: RootCause = "partitioned:3,2|1,0".parse().unwrap();
        assert_eq!(c.to_string(), "partitioned:0,1|2,3");
        assert_eq!(c, "partitioned:0,1|2,3".parse().unwrap());
        let by_hand = RootCause::Partitioned(vec![vec![Rank(5)], vec![Rank(4), Rank(1)]]);
        assert_eq!(by_hand.to_string(), "partitioned:1,4|5");
    }

    #[test]
    fn deadlocks_keep_their_cycle_order() {
        let c: RootCause = "deadlock:2,0,1".parse().unwrap();
        assert_eq!(c.ranks(), vec![Rank(2), Rank(0), Rank(1)]);
    }

    #[test]
    fn malformed_causes_are_rejected() {
        for s in [
            "",
            "preempted",
            "preempted:",
            "preempted:x",
            "preempted:+1",
            "preempted: 1",
            "preempted:1,2",
            "preempted:99999999999",
            "partitioned:0,1",
            "partitioned:0,1|",
            "partitioned:0,1|1,2",
            "partitioned:0,0|1",
            "deadlock:",
            "deadlock:1,1",
            "exploded:1",
            "quorum_lost:1",
            "undecided:1",
            "missing:",
            "Preempted:1",
        ] {
            assert!(s.parse::<RootCause>().is_err(), "{s:?} was accepted");
        }
        let e = "exploded:1".parse::<RootCause>().unwrap_err().to_string();
        assert!(e.contains("preempted:R"), "{e}");
    }
}
