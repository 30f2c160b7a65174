//! How each rank is shown: its state as the diagnosis sees it, the part it plays in a stall,
//! and the order of the rank table.
//!
//! A rank waiting on a root cause is blocked; a rank in a rendezvous after an abort is in a
//! rendezvous, not blocked (it is rebuilding the group, not waiting in a collective); a rank
//! that a root cause names — or that is dead, frozen or left out of the newest generation —
//! is a culprit, drawn with a glyph as well as a colour so that it stands out without colour.

use ringside_sim::diagnose::{Diagnosis, EdgeKind, Fold, RankState, RootCause, WaitEdge};

/// The part a rank plays in a stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Culprit {
    Dead,
    Paused,
    /// Alive, but stopped issuing calls.
    Hung,
    /// Called a collective with other parameters than its peers.
    Mismatching,
    /// Never issued a call its peers issued.
    Skipping,
    /// Alive, but not a member of the newest generation (or refused when it came back).
    LeftBehind,
    /// A member that left no Flight Recorder dump.
    Missing,
}

impl Culprit {
    pub const ALL: [Culprit; 7] = [
        Culprit::Dead,
        Culprit::Paused,
        Culprit::Hung,
        Culprit::Mismatching,
        Culprit::Skipping,
        Culprit::LeftBehind,
        Culprit::Missing,
    ];

    /// One cell wide in every terminal font that draws box lines.
    pub fn glyph(self) -> char {
        match self {
            Culprit::Dead => '✗',
            Culprit::Paused => '‖',
            Culprit::Hung => '∞',
            Culprit::Mismatching => '≠',
            Culprit::Skipping => '∅',
            Culprit::LeftBehind => '↩',
            Culprit::Missing => '?',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Culprit::Dead => "dead",
            Culprit::Paused => "paused",
            Culprit::Hung => "hung",
            Culprit::Mismatching => "mismatch",
            Culprit::Skipping => "skipped",
            Culprit::LeftBehind => "left out",
            Culprit::Missing => "missing",
        }
    }

    /// The culprit a root cause names for one of its ranks.
    fn of_cause(c: &RootCause) -> Option<Culprit> {
        match c {
            RootCause::Preempted(_) => Some(Culprit::Dead),
            RootCause::Paused(_) => Some(Culprit::Paused),
            RootCause::Hung(_) => Some(Culprit::Hung),
            RootCause::Mismatch(_) => Some(Culprit::Mismatching),
            RootCause::Skipped(_) => Some(Culprit::Skipping),
            RootCause::Missing(_) => Some(Culprit::Missing),
            _ => None,
        }
    }
}

/// One rank as the table shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shown {
    /// Blocked when it waits on a root cause, paused while frozen, else as the trace says.
    pub state: RankState,
    /// The generation it is rebuilding the group for, while in a rendezvous.
    pub rendezvous: Option<u32>,
    pub culprit: Option<Culprit>,
    /// It waits on a culprit directly (`101` in `101 → 100`), not through other ranks.
    pub next_to_cause: bool,
    /// A rank of a Flight Recorder import that left no dump: what it did is unknown.
    pub no_dump: bool,
    /// It waits for a rank on the other side of a network partition.
    pub cut: bool,
}

impl Shown {
    /// The word in the state column. A rank without a dump is `missing` unless it is known to
    /// wait in a call its peers' dumps show it in.
    pub fn label(&self) -> &'static str {
        match (self.culprit, self.rendezvous) {
            (Some(c), _) => c.name(),
            (None, Some(_)) => "rendezvous",
            (None, None) if self.no_dump && self.state != RankState::Blocked => {
                Culprit::Missing.name()
            }
            (None, None) => self.state.name(),
        }
    }

    /// Culprits, blocked ranks and ranks rebuilding the group: what a stall is made of.
    pub fn is_stuck(&self) -> bool {
        self.culprit.is_some() || self.state == RankState::Blocked || self.rendezvous.is_some()
    }

    /// Where the state order puts it: culprits, the ranks that wait on them directly, the
    /// other blocked ranks, rendezvous, waiting, then the rest.
    pub fn rank_in_order(&self) -> u8 {
        if self.culprit.is_some() {
            0
        } else if self.state == RankState::Blocked {
            if self.next_to_cause {
                1
            } else {
                2
            }
        } else if self.rendezvous.is_some() {
            3
        } else {
            match self.state {
                RankState::Waiting => 4,
                RankState::Paused => 5,
                RankState::Running | RankState::Computing => 6,
                _ => 7,
            }
        }
    }
}

/// Every rank as shown after the events folded into `fold`, diagnosed as `d`.
pub fn shown(fold: &Fold, d: &Diagnosis) -> Vec<Shown> {
    let n = fold.ranks.len();
    let mut blocked = vec![false; n];
    if !d.causes.is_empty() {
        for b in &d.blocked {
            if let Some(x) = blocked.get_mut(b.rank as usize) {
                *x = true;
            }
        }
    }
    let mut named: Vec<Option<Culprit>> = vec![None; n];
    for c in &d.causes {
        let culprit = Culprit::of_cause(&c.cause);
        for &r in &c.ranks {
            if let Some(slot) = named.get_mut(r as usize) {
                *slot = slot.or(culprit);
            }
        }
    }
    let mut next_to_cause = vec![false; n];
    let mut cut = vec![false; n];
    for w in d.waits.iter().filter(|w| w.kind == EdgeKind::RootCause) {
        if let Some(x) = next_to_cause.get_mut(w.from as usize) {
            *x = true;
        }
        if crosses_partition(w) {
            if let Some(x) = cut.get_mut(w.from as usize) {
                *x = true;
            }
        }
    }
    let m = &fold.membership;
    let newest = m.generations.last();
    fold.ranks
        .iter()
        .map(|v| {
            let r = v.rank as usize;
            let alive = !matches!(v.state, RankState::Dead | RankState::Refused);
            let rendezvous = if alive {
                m.rendezvous
                    .get(&v.rank)
                    .copied()
                    .or_else(|| m.waiting.get(&v.rank).map(|w| w.target))
            } else {
                None
            };
            let state = if v.paused && !matches!(v.state, RankState::Dead | RankState::Done) {
                RankState::Paused
            } else if rendezvous.is_some() {
                // rebuilding the group: its aborted call is behind it
                RankState::Waiting
            } else if v.state == RankState::Waiting && blocked[r] {
                RankState::Blocked
            } else {
                v.state
            };
            let left_out = alive
                && v.state != RankState::Idle
                && newest.is_some_and(|g| !g.members.contains(&v.rank));
            let culprit = named[r].or(match state {
                RankState::Dead if v.no_dump => Some(Culprit::Missing),
                RankState::Dead => Some(Culprit::Dead),
                RankState::Paused => Some(Culprit::Paused),
                RankState::Refused => Some(Culprit::LeftBehind),
                _ if left_out => Some(Culprit::LeftBehind),
                _ => None,
            });
            Shown {
                state,
                rendezvous,
                culprit,
                next_to_cause: next_to_cause[r],
                no_dump: v.no_dump,
                cut: cut[r],
            }
        })
        .collect()
}

/// Whether a wait is across a network partition: a link the partition cuts.
pub fn crosses_partition(w: &WaitEdge) -> bool {
    w.causes
        .iter()
        .any(|c| matches!(c, RootCause::Partitioned(_)))
}

/// How the rank table is ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Rank,
    /// Culprits, then blocked ranks (those next to a culprit first), ranks in a rendezvous,
    /// waiting ranks, the rest; by rank within each.
    State,
}

/// The ranks the table lists, in order: those in `only` (all when None), only stuck ones
/// when `stuck_only`.
pub fn listed(shown: &[Shown], order: Order, only: Option<&[u32]>, stuck_only: bool) -> Vec<u32> {
    let mut v: Vec<u32> = match only {
        Some(list) => list
            .iter()
            .copied()
            .filter(|&r| (r as usize) < shown.len())
            .collect(),
        None => (0..shown.len() as u32).collect(),
    };
    if stuck_only {
        v.retain(|&r| shown[r as usize].is_stuck());
    }
    if order == Order::State {
        v.sort_by_key(|&r| (shown[r as usize].rank_in_order(), r));
    }
    v
}
