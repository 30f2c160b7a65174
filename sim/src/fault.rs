//! Fault kinds: what a scenario's `[[faults]]` entry does (`kind = "preempt"`), in the words
//! that the scenario format, the engine, traces (`"fault": "preempt"`), the diagnosis, the
//! checker's strategies and properties, and the UI share (listed in scenarios/README.md,
//! `[[faults]]`).
//!
//! [`FaultKind`] is the one type for them: `FromStr` parses exactly the names written in a
//! scenario, `Display` prints them back, and serde reads and writes the same strings. Nothing
//! else parses, prints or compares the vocabulary, so a misspelt kind is a compile error, not a
//! comparison that never matches.
//!
//! [`Trigger`] is when a fault begins: at a virtual time (`at = "25ms"`) or as its rank issues
//! its K-th communication call (`at_call = K`).
//!
//! [`cuts`] is the one rule for which traffic a partition drops: the engine drops by it, and
//! the diagnosis and the properties explain a wait by it.

use crate::units::Duration;
use serde::{Deserialize, Serialize};

/// What an injected fault does. The names are those of `kind = "..."` in a scenario.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumString,
    strum::Display,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum FaultKind {
    /// `preempt`: a rank's process dies (and starts again after `restart_after`).
    Preempt,
    /// `pause`: a rank is frozen for a while; it handles nothing, its messages wait.
    Pause,
    /// `partition`: the network is split into sides; traffic between them is dropped.
    Partition,
    /// `delay`: messages of a rank or a link take longer.
    Delay,
    /// `loss`: messages of a rank or a link are dropped at a rate.
    Loss,
    /// `slow`: a rank's compute takes longer.
    Slow,
    /// `mismatch`: a rank issues a call with other parameters than its peers.
    Mismatch,
    /// `skip`: a rank leaves out a call its peers issue.
    Skip,
    /// `hang`: a rank stops issuing calls.
    Hang,
}

impl FaultKind {
    /// Every kind, in the order of the variants.
    pub const ALL: &'static [FaultKind] = <FaultKind as strum::VariantArray>::VARIANTS;

    /// The kind as written in a scenario, e.g. `preempt`.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// A straggler fault: it makes a rank or a link late without stopping it (`slow`, `delay`,
    /// `loss`); what others wait for while it acts is lateness, named `slow:R`.
    pub fn is_straggler(self) -> bool {
        matches!(self, FaultKind::Slow | FaultKind::Delay | FaultKind::Loss)
    }

    /// A fault on the messages of a rank or a link (`delay`, `loss`).
    pub fn is_link(self) -> bool {
        matches!(self, FaultKind::Delay | FaultKind::Loss)
    }
}

/// When a timed fault begins. Written in a scenario as one of two keys, `at = TIME` or
/// `at_call = K`; serialized the same way (the fault's field is flattened into its table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// `at`: at this virtual time.
    At(Duration),
    /// `at_call`: as the fault's rank issues its K-th communication call (counting from 1,
    /// every collective, send and recv in any group, over the whole run: a restarted process
    /// counts on from where the dead one stopped). The call reaches the protocol code, then
    /// the fault begins.
    AtCall(u32),
}

impl Trigger {
    /// The virtual time the fault begins at, when it is known before the run.
    pub fn time(self) -> Option<Duration> {
        match self {
            Trigger::At(d) => Some(d),
            Trigger::AtCall(_) => None,
        }
    }

    /// The call the fault begins at, for a call trigger.
    pub fn call(self) -> Option<u32> {
        match self {
            Trigger::At(_) => None,
            Trigger::AtCall(k) => Some(k),
        }
    }
}

impl std::fmt::Display for Trigger {
    /// `at 25ms`, `at call 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::At(d) => write!(f, "at {d}"),
            Trigger::AtCall(k) => write!(f, "at call {k}"),
        }
    }
}

/// Whether a partition into `sides` drops traffic from rank `from` to rank `to`: the two are on
/// different sides, and the partition is two-way or `from` is on its first side (a one-way
/// partition drops only what the first side sends to the others). A rank on no side is cut
/// from nobody.
pub fn cuts(sides: &[Vec<u32>], oneway: bool, from: u32, to: u32) -> bool {
    let side_of = |r: u32| sides.iter().position(|s| s.contains(&r));
    match (side_of(from), side_of(to)) {
        (Some(a), Some(b)) if a != b => !oneway || a == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn names_round_trip_through_every_reader_and_writer() {
        for &k in FaultKind::ALL {
            let name = k.name();
            assert_eq!(k.to_string(), name);
            assert_eq!(FaultKind::from_str(name), Ok(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<FaultKind>(&json).unwrap(), k);
        }
        assert_eq!(
            FaultKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>(),
            [
                "preempt",
                "pause",
                "partition",
                "delay",
                "loss",
                "slow",
                "mismatch",
                "skip",
                "hang"
            ]
        );
    }

    #[test]
    fn an_unknown_kind_is_rejected_naming_the_known_ones() {
        assert!(FaultKind::from_str("Preempt").is_err());
        let e = serde_json::from_str::<FaultKind>("\"crash\"").unwrap_err();
        assert!(
            e.to_string().contains("expected one of `preempt`, `pause`"),
            "{e}"
        );
    }

    #[test]
    fn stragglers_are_slow_delay_and_loss() {
        let s: Vec<FaultKind> = FaultKind::ALL
            .iter()
            .copied()
            .filter(|k| k.is_straggler())
            .collect();
        assert_eq!(s, [FaultKind::Delay, FaultKind::Loss, FaultKind::Slow]);
    }

    #[test]
    fn a_partition_cuts_across_sides_and_a_oneway_one_only_from_its_first() {
        let sides = vec![vec![0, 1], vec![2], vec![3]];
        assert!(cuts(&sides, false, 0, 2) && cuts(&sides, false, 2, 0));
        assert!(cuts(&sides, false, 2, 3));
        assert!(!cuts(&sides, false, 0, 1), "same side");
        assert!(!cuts(&sides, false, 0, 4), "rank 4 is on no side");
        assert!(cuts(&sides, true, 0, 2) && !cuts(&sides, true, 2, 0));
        assert!(!cuts(&sides, true, 2, 3), "neither is on the first side");
    }
}
