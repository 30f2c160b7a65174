//! What the members of a group show seq by seq, and how they disagree: the types the scan
//! ([`super::judge`]) and its verdicts ([`super::verdict`]) share.

use super::lanes::{self, Call, Lane, Lanes};
use crate::fr::model::Dump;
use crate::scenario::RootCause;
use serde::Serialize;

/// What a member shows at one seq of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Its call (index into its lane).
    Has(usize),
    /// It left no dump.
    NoDump,
    /// It issued the call, but the record is gone (ring buffer, or `pg_status` says so).
    Overwritten,
    /// Its records cover that time and it has not issued the call.
    NotYet,
    /// Its records do not reach back that far.
    Unknown,
}

/// How the ranks of a group disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// Same seq, other op, sizes or dtypes.
    Parameters,
    /// A rank issued a call its peers did not.
    ExtraCall,
    /// A rank went past a call its peers issued.
    SkippedCall,
    /// A rank stopped issuing calls.
    Stopped,
    /// Same parameters from another call site: a shifted call that happened to match.
    CallSite,
    /// Members have not issued the call because they wait in another one.
    WaitsElsewhere,
    /// A member left no dump.
    MissingDump,
}

/// The earliest point where a group's ranks disagree, and who is wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Divergence {
    pub group: u32,
    pub seq: u64,
    /// Wall-clock time of the first call at that seq, relative to the first record.
    pub at_ns: u64,
    pub kind: DivergenceKind,
    /// The ranks judged wrong.
    pub culprits: Vec<u32>,
    /// The ranks that agree with each other.
    pub agree: Vec<u32>,
    #[serde(skip)]
    pub causes: Vec<RootCause>,
    pub text: String,
    /// Why no rank can be named, when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<String>,
    /// Members without a dump that this divergence explains (gloo aborts the rank that
    /// receives a mismatched message, for one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub victims: Vec<u32>,
}

impl Divergence {
    pub fn decided(&self) -> bool {
        !self.causes.is_empty() && self.undecided.is_none()
    }
}

/// One collective of a group, across ranks (for the report's `ops`).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub seq: u64,
    /// A call of it (for op, sizes).
    pub call: Call,
    pub start_ns: u64,
    pub called: u32,
    pub left: u32,
    pub members: u32,
}

/// The result of scanning one group.
#[derive(Clone, Debug, Default)]
pub struct GroupScan {
    pub rows: Vec<Row>,
    pub divergence: Option<Divergence>,
    /// The highest seq any member issued.
    pub last_seq: Option<u64>,
    /// The highest seq some member left.
    pub max_left: Option<u64>,
    /// Seqs some member completed on the device (sorted).
    pub completed: Vec<u64>,
}

impl GroupScan {
    /// Whether #s is proved complete for every member: a member completed it on the device, or
    /// left a later call.
    pub fn passed(&self, s: u64) -> bool {
        self.max_left.is_some_and(|m| m > s) || self.completed.binary_search(&s).is_ok()
    }
}

/// What the scan needs to know of every rank.
pub struct Ctx<'a> {
    pub dumps: &'a [Dump],
    /// The lanes of each dump.
    pub lanes: &'a [Lanes],
    /// Every group of the job.
    pub groups: &'a [crate::fr::groups::Group],
    /// Dump index of each rank of the world.
    pub dump_of: &'a [Option<u32>],
    /// Each dump's oldest record time (None: no records).
    pub oldest_ns: &'a [Option<u64>],
    /// Each dump's newest record time.
    pub newest_ns: &'a [u64],
    pub t0: u64,
}

impl Ctx<'_> {
    pub(super) fn lane(&self, rank: u32, g: u32) -> Option<&Lane> {
        let d = (*self.dump_of.get(rank as usize)?)?;
        Some(&self.lanes[d as usize].groups[g as usize])
    }

    /// Whether dump `d` has a call it has not left (or one that failed), in any group: a call
    /// retired by a backend that does not tell success from failure (gloo) counts as failed
    /// when it is the rank's last of its group and a member whose records cover that time
    /// never issued it — a collective that not every member issued cannot have completed.
    pub(super) fn busy(&self, d: usize) -> bool {
        let lanes = &self.lanes[d];
        lanes.busy() || (!lanes.device && lanes.queue.iter().any(|q| self.failed_left(d, q)))
    }

    /// Queue entry `q` of dump `d` is a retired collective, its rank's last of its group, that
    /// a member with a dump covering its time has not issued.
    fn failed_left(&self, d: usize, q: &lanes::Queued) -> bool {
        let lanes::QueuedCall::Collective(i) = q.what else {
            return false;
        };
        let lane = &self.lanes[d].groups[q.group as usize];
        if q.status != lanes::Status::Left || i as usize + 1 != lane.calls.len() {
            return false;
        }
        let c = lane.calls[i as usize];
        let Some(g) = self.groups.get(q.group as usize) else {
            return false;
        };
        g.members.iter().any(|&m| {
            let Some(dm) = self.dump(m) else {
                return false;
            };
            let l = &self.lanes[dm].groups[q.group as usize];
            let later = l.calls.partition_point(|x| x.seq < c.seq) < l.calls.len()
                || l.enqueued.is_some_and(|e| e >= c.seq as i64);
            !later && self.oldest_ns[dm].is_some_and(|t| t <= c.time_ns)
        })
    }

    /// The sibling groups of `g`: the same description and size, other members (the other
    /// replicas of a stage). Where a group's members tie, its siblings vote: on a call's
    /// parameters ([`super::verdict`]) and on the order of two calls ([`super::cycles`]).
    pub(super) fn siblings<'g>(
        &'g self,
        g: &'g crate::fr::groups::Group,
    ) -> impl Iterator<Item = &'g crate::fr::groups::Group> + 'g {
        self.groups.iter().filter(move |h| {
            h.id != g.id
                && h.desc == g.desc
                && h.members.len() == g.members.len()
                && h.members != g.members
        })
    }

    pub(super) fn dump(&self, rank: u32) -> Option<usize> {
        self.dump_of
            .get(rank as usize)
            .copied()
            .flatten()
            .map(|d| d as usize)
    }

    /// Same parameters and (when both are known) the same call site.
    pub(super) fn same(&self, a: &Call, b: &Call) -> bool {
        lanes::differs(self.dumps, a, b).is_none()
            && (a.site == 0 || b.site == 0 || a.site == b.site)
    }
}
