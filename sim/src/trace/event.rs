//! The events of a trace. Each line is `{"t":<ns>,"kind":"<kind>",...fields}`.

use crate::budget::Budget;
use crate::cause::RootCause;
use crate::fault::FaultKind;
use crate::proto::event::FlightEntry;
use crate::proto::{Generation, GroupId, SeqNo, TimerKey};
use crate::scenario::{Algorithm, Dtype, OpKind, Outcome, ReduceOp};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::borrow::Cow;

/// The ranks a `step` waits for: most steps wait for one or two, kept inline (a run records
/// one step per message).
pub type RankList = SmallVec<[u32; 4]>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultPhase {
    Begin,
    End,
}

/// How a fired timer is recorded: (name, group, seq).
pub fn timer_fields(key: &TimerKey) -> (&'static str, Option<GroupId>, Option<SeqNo>) {
    match key {
        TimerKey::Watchdog { group, seq } => ("watchdog", Some(*group), Some(*seq)),
        TimerKey::PeerWatchdog { group, order, .. } => {
            ("watchdog", Some(*group), Some(SeqNo(*order)))
        }
        TimerKey::Heartbeat => ("heartbeat", None, None),
        TimerKey::Rendezvous { .. } => ("rendezvous", None, None),
        TimerKey::Registry { .. } => ("registry", None, None),
        TimerKey::RegistryHeartbeat => ("registry_heartbeat", None, None),
        TimerKey::Node { .. } => ("node", None, None),
    }
}

/// The fields of a `send` event ([`Event::Send`]) as a run has them, its kind borrowed: what a
/// recorder's [`Recorder::send`](super::Recorder::send) is told, so that a recorder taking the
/// fields directly (a run's digest and diagnosis) needs no event built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent<'a> {
    pub id: u64,
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
    pub msg: &'a str,
    pub seq: Option<u64>,
    pub step: Option<u32>,
    pub arrive_ns: u64,
}

impl Event {
    /// A send event's fields, borrowed, as a recorder that takes them directly is told them.
    #[inline(always)]
    pub fn as_sent(&self) -> Option<Sent<'_>> {
        match self {
            Event::Send {
                id,
                from,
                to,
                bytes,
                msg,
                seq,
                step,
                arrive_ns,
            } => Some(Sent {
                id: *id,
                from: *from,
                to: *to,
                bytes: *bytes,
                msg,
                seq: *seq,
                step: *step,
                arrive_ns: *arrive_ns,
            }),
            _ => None,
        }
    }
}

impl Sent<'static> {
    /// As an event.
    pub fn event(&self) -> Event {
        Event::Send {
            id: self.id,
            from: self.from,
            to: self.to,
            bytes: self.bytes,
            msg: Cow::Borrowed(self.msg),
            seq: self.seq,
            step: self.step,
            arrive_ns: self.arrive_ns,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One trace event (without its time, which the line carries as `t`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A scenario fault starts or ends. `ranks` are the ranks it touches; `sides` the
    /// partition's sides.
    Fault {
        index: u32,
        fault: FaultKind,
        phase: FaultPhase,
        ranks: Vec<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sides: Option<Vec<Vec<u32>>>,
        /// A one-way partition: only traffic from the first side to the others is dropped.
        #[serde(default, skip_serializing_if = "is_false")]
        oneway: bool,
        detail: String,
    },
    /// A process starts (incarnation 0) or restarts after a preemption.
    ProcessStart {
        rank: u32,
        incarnation: u32,
    },
    /// A process dies: its state is lost, its in-flight messages are dropped.
    ProcessDeath {
        rank: u32,
        incarnation: u32,
    },
    ProcessPause {
        rank: u32,
    },
    ProcessResume {
        rank: u32,
    },
    /// A message leaves `from` for `to`. `id` pairs it with its deliver or drop.
    Send {
        id: u64,
        from: u32,
        to: u32,
        bytes: u64,
        /// The message's kind (`coll`, `heartbeat`...): a static name while a run records.
        msg: Cow<'static, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<u32>,
        /// When it is expected to arrive.
        arrive_ns: u64,
    },
    Deliver {
        id: u64,
        from: u32,
        to: u32,
    },
    /// A message is lost. A reliable one is sent again after the retransmit timeout.
    Drop {
        id: u64,
        from: u32,
        to: u32,
        reason: Cow<'static, str>,
        retransmit: bool,
    },
    /// A protocol timer fires on `rank`.
    Timer {
        rank: u32,
        /// watchdog | heartbeat | rendezvous | registry
        timer: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<GroupId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<SeqNo>,
    },
    Compute {
        rank: u32,
        iteration: u32,
        duration_ns: u64,
    },
    ComputeDone {
        rank: u32,
    },
    Iteration {
        rank: u32,
        iteration: u32,
    },
    /// A rank issues a call: a collective, or a send or recv to or from `peer` (a world rank),
    /// whose `seq` is the message's order between the two in that direction (from 1).
    Call {
        rank: u32,
        iteration: u32,
        index: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        op: OpKind,
        algorithm: Algorithm,
        bytes: u64,
        dtype: Dtype,
        root: u32,
        reduce: ReduceOp,
        elements: u32,
        members: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peer: Option<u32>,
    },
    /// A rank's call enters `step` and waits for `waiting_for`.
    Step {
        rank: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        step: u32,
        steps: u32,
        waiting_for: RankList,
    },
    Complete {
        rank: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        iteration: u32,
        index: u32,
        /// Hash of the exact result bits (empty when the rank holds no result).
        result: String,
        /// Whether the result equals the reference computed from the inputs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        correct: Option<bool>,
    },
    Abort {
        rank: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        step: u32,
        steps: u32,
        waiting_for: Vec<u32>,
        reason: String,
    },
    /// A chunk of `rank`'s running collective that its schedule does not expect: the one rank
    /// `from` sent for `step` (from 0) of `steps`, with `elements` values; dropped.
    Unexpected {
        rank: u32,
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        op: OpKind,
        algorithm: Algorithm,
        step: u32,
        steps: u32,
        from: u32,
        elements: u64,
        why: crate::proto::event::Unexpected,
    },
    /// A rank's flight recorder, dumped when its watchdog fires.
    FlightRecord {
        rank: u32,
        entries: Vec<FlightEntry>,
    },
    WorkloadDone {
        rank: u32,
    },
    /// The node of the program's own that `rank` runs waits `on` something for
    /// `waiting_for`; with both empty, it no longer waits (docs/custom-algorithms.md).
    NodeWait {
        rank: u32,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        on: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        waiting_for: Vec<u32>,
    },
    RejoinRefused {
        rank: u32,
        reason: String,
    },
    /// The diagnosis at the end of the run (or when the run stops at a stall).
    Diagnosis {
        blocked: Vec<u32>,
        root_causes: Vec<RootCause>,
        /// Ranks others waited for while a straggler fault touched them (`slow:R`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stragglers: Vec<RootCause>,
    },
    /// The footer.
    End {
        outcome: Outcome,
        /// Every event of the run, written or not.
        events: u64,
        digest: String,
        /// The event lines written, in a trace that leaves some out (`calls` level).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lines: Option<u64>,
        /// The budget that ended the run early, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<Budget>,
    },
    /// Elastic: `rank` installed `generation` of `group`: its members in group-rank order
    /// (world ranks), this rank's place among them, and the iteration the workload resumes from.
    GenerationFormed {
        rank: u32,
        group: GroupId,
        generation: Generation,
        members: Vec<u32>,
        group_rank: u32,
        resume_iteration: u32,
    },
    /// Elastic: `rank` stopped working to agree on generation `target`.
    RendezvousStart {
        rank: u32,
        target: Generation,
        reason: String,
    },
    /// Elastic: `rank` could not form `target` and waits. `reachable`: the ranks that answered
    /// it; a generation needs a strict majority `quorum` of the previous generation's members
    /// (quorum rendezvous; 0 when not the obstacle) and `min_size` ranks.
    RendezvousWait {
        rank: u32,
        target: Generation,
        reachable: Vec<u32>,
        quorum: u32,
        min_size: u32,
        reason: String,
    },
    /// Elastic: `rank`'s failure detector suspects `peer`, silent for `silent_ns`.
    Suspect {
        rank: u32,
        peer: u32,
        silent_ns: u64,
    },
    /// Elastic: `rank` is outside the group and asks to be admitted; `known` is the latest
    /// generation it heard of.
    Joining {
        rank: u32,
        known: Generation,
        reason: String,
    },
    /// Store rendezvous: the store (node `rank` = world size) applied a compare-and-set.
    StoreUpdate {
        rank: u32,
        version: u64,
        generation: Generation,
        members: Vec<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<Generation>,
        participants: Vec<u32>,
    },
    /// Registry: `rank`'s member joined `group` of `scope`.
    RegistryJoin {
        rank: u32,
        scope: String,
        group: String,
    },
    /// Registry: `rank`'s member left `group`.
    RegistryLeave {
        rank: u32,
        scope: String,
        group: String,
    },
    /// Registry: `rank`'s view of `group` changed to `members`.
    RegistryView {
        rank: u32,
        scope: String,
        group: String,
        members: Vec<u32>,
    },
    /// Registry: a monitor on `rank` is told who joined and left `group`.
    RegistryNotify {
        rank: u32,
        scope: String,
        group: String,
        joined: Vec<u32>,
        left: Vec<u32>,
    },
    /// Registry: `rank` starts monitoring `group`, whose members are `members`.
    RegistryMonitor {
        rank: u32,
        scope: String,
        group: String,
        members: Vec<u32>,
    },
    /// Registry: `rank` broadcasts `message` to the members `to` of `group`.
    RegistryBroadcast {
        rank: u32,
        scope: String,
        group: String,
        message: String,
        to: Vec<u32>,
    },
    /// Registry: a broadcast from `from` reached `rank`'s member of `group`, which now holds
    /// `items` messages of the group.
    RegistryDeliver {
        rank: u32,
        scope: String,
        group: String,
        from: u32,
        message: String,
        items: u32,
    },
    /// Registry: `rank` reads the members of `group` (and whether it has one itself), with the
    /// members the scenario expected, if it said.
    RegistryQuery {
        rank: u32,
        scope: String,
        group: String,
        members: Vec<u32>,
        local: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expected: Option<Vec<u32>>,
    },
    /// Registry: `rank` lost contact with `node` (silent for `silent_ns`): its members left
    /// `rank`'s views.
    RegistryNodeDown {
        rank: u32,
        node: u32,
        silent_ns: u64,
    },
    /// Registry: `rank` is in contact with `node` (again).
    RegistryNodeUp {
        rank: u32,
        node: u32,
    },
}

impl Event {
    /// The `kind` string of the event.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Fault { .. } => "fault",
            Event::ProcessStart { .. } => "process_start",
            Event::ProcessDeath { .. } => "process_death",
            Event::ProcessPause { .. } => "process_pause",
            Event::ProcessResume { .. } => "process_resume",
            Event::Send { .. } => "send",
            Event::Deliver { .. } => "deliver",
            Event::Drop { .. } => "drop",
            Event::Timer { .. } => "timer",
            Event::Compute { .. } => "compute",
            Event::ComputeDone { .. } => "compute_done",
            Event::Iteration { .. } => "iteration",
            Event::Call { .. } => "call",
            Event::Step { .. } => "step",
            Event::Complete { .. } => "complete",
            Event::Abort { .. } => "abort",
            Event::Unexpected { .. } => "unexpected",
            Event::FlightRecord { .. } => "flight_record",
            Event::WorkloadDone { .. } => "workload_done",
            Event::NodeWait { .. } => "node_wait",
            Event::RejoinRefused { .. } => "rejoin_refused",
            Event::Diagnosis { .. } => "diagnosis",
            Event::End { .. } => "end",
            Event::GenerationFormed { .. } => "generation_formed",
            Event::RendezvousStart { .. } => "rendezvous_start",
            Event::RendezvousWait { .. } => "rendezvous_wait",
            Event::Suspect { .. } => "suspect",
            Event::Joining { .. } => "joining",
            Event::StoreUpdate { .. } => "store_update",
            Event::RegistryJoin { .. } => "registry_join",
            Event::RegistryLeave { .. } => "registry_leave",
            Event::RegistryView { .. } => "registry_view",
            Event::RegistryNotify { .. } => "registry_notify",
            Event::RegistryMonitor { .. } => "registry_monitor",
            Event::RegistryBroadcast { .. } => "registry_broadcast",
            Event::RegistryDeliver { .. } => "registry_deliver",
            Event::RegistryQuery { .. } => "registry_query",
            Event::RegistryNodeDown { .. } => "registry_node_down",
            Event::RegistryNodeUp { .. } => "registry_node_up",
        }
    }

    /// The rank an event belongs to, when it belongs to one (the sender for `send`, the
    /// receiver for `deliver`/`drop`).
    pub fn rank(&self) -> Option<u32> {
        match self {
            Event::ProcessStart { rank, .. }
            | Event::ProcessDeath { rank, .. }
            | Event::ProcessPause { rank }
            | Event::ProcessResume { rank }
            | Event::Timer { rank, .. }
            | Event::Compute { rank, .. }
            | Event::ComputeDone { rank }
            | Event::Iteration { rank, .. }
            | Event::Call { rank, .. }
            | Event::Step { rank, .. }
            | Event::Complete { rank, .. }
            | Event::Abort { rank, .. }
            | Event::Unexpected { rank, .. }
            | Event::FlightRecord { rank, .. }
            | Event::WorkloadDone { rank }
            | Event::NodeWait { rank, .. }
            | Event::RejoinRefused { rank, .. }
            | Event::GenerationFormed { rank, .. }
            | Event::RendezvousStart { rank, .. }
            | Event::RendezvousWait { rank, .. }
            | Event::Suspect { rank, .. }
            | Event::Joining { rank, .. }
            | Event::StoreUpdate { rank, .. }
            | Event::RegistryJoin { rank, .. }
            | Event::RegistryLeave { rank, .. }
            | Event::RegistryView { rank, .. }
            | Event::RegistryNotify { rank, .. }
            | Event::RegistryMonitor { rank, .. }
            | Event::RegistryBroadcast { rank, .. }
            | Event::RegistryDeliver { rank, .. }
            | Event::RegistryQuery { rank, .. }
            | Event::RegistryNodeDown { rank, .. }
            | Event::RegistryNodeUp { rank, .. } => Some(*rank),
            Event::Send { from, .. } => Some(*from),
            Event::Deliver { to, .. } | Event::Drop { to, .. } => Some(*to),
            Event::Fault { .. } | Event::Diagnosis { .. } | Event::End { .. } => None,
        }
    }

    /// The first rank the event names that is not below `nodes` (the world's ranks, and the
    /// store's node when there is one), with the field that names it.
    pub fn rank_beyond(&self, nodes: u32) -> Option<(&'static str, u32)> {
        let one = |field: &'static str, r: u32| (r >= nodes).then_some((field, r));
        let list =
            |field: &'static str, rs: &[u32]| rs.iter().find(|&&r| r >= nodes).map(|&r| (field, r));
        let own = self.rank().and_then(|r| {
            let field = match self {
                Event::Send { .. } => "from",
                Event::Deliver { .. } | Event::Drop { .. } => "to",
                _ => "rank",
            };
            one(field, r)
        });
        own.or_else(|| match self {
            Event::Send { to, .. } => one("to", *to),
            Event::Deliver { from, .. } | Event::Drop { from, .. } => one("from", *from),
            Event::Fault { ranks, sides, .. } => list("ranks", ranks)
                .or_else(|| sides.iter().flatten().find_map(|side| list("sides", side))),
            Event::Step { waiting_for, .. } => list("waiting_for", waiting_for),
            Event::Abort { waiting_for, .. } => list("waiting_for", waiting_for),
            Event::Diagnosis { blocked, .. } => list("blocked", blocked),
            Event::GenerationFormed { members, .. }
            | Event::RegistryView { members, .. }
            | Event::RegistryMonitor { members, .. } => list("members", members),
            Event::RegistryQuery {
                members, expected, ..
            } => list("members", members)
                .or_else(|| expected.as_deref().and_then(|e| list("expected", e))),
            Event::RendezvousWait { reachable, .. } => list("reachable", reachable),
            Event::Suspect { peer, .. } => one("peer", *peer),
            Event::StoreUpdate {
                members,
                participants,
                ..
            } => list("members", members).or_else(|| list("participants", participants)),
            Event::RegistryNotify { joined, left, .. } => {
                list("joined", joined).or_else(|| list("left", left))
            }
            Event::RegistryBroadcast { to, .. } => list("to", to),
            Event::RegistryDeliver { from, .. } => one("from", *from),
            Event::RegistryNodeDown { node, .. } | Event::RegistryNodeUp { node, .. } => {
                one("node", *node)
            }
            _ => None,
        })
    }

    /// An event a `calls`-level trace leaves out: a message's send, delivery or loss, or a
    /// timer other than the watchdog.
    #[inline]
    pub fn is_message_detail(&self) -> bool {
        match self {
            Event::Send { .. } | Event::Deliver { .. } | Event::Drop { .. } => true,
            Event::Timer { timer, .. } => timer != "watchdog",
            _ => false,
        }
    }

    /// Whether `rank` is involved (either end of a message counts).
    pub fn involves(&self, rank: u32) -> bool {
        match self {
            Event::Send { from, to, .. }
            | Event::Deliver { from, to, .. }
            | Event::Drop { from, to, .. } => *from == rank || *to == rank,
            Event::Fault { ranks, .. } => ranks.contains(&rank),
            Event::Suspect {
                rank: r, peer: p, ..
            } => *r == rank || *p == rank,
            Event::RegistryNodeDown { rank: r, node, .. }
            | Event::RegistryNodeUp { rank: r, node } => *r == rank || *node == rank,
            _ => self.rank() == Some(rank),
        }
    }
}
