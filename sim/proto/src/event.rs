//! What a protocol state machine asks its driver to do, and what it reports.

use super::collective::UnsupportedAlgorithm;
use super::data::Buffer;
use super::elastic::MemberEvent;
use super::msg::{Fingerprint, Msg};
use super::types::{Generation, GroupId, Rank, SendToken, SeqNo, TimerKey};
use crate::time::{fmt_time, Nanos};
use crate::vocab::{Algorithm, OpKind};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use std::fmt;

/// One command for the driver.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Send `msg` to `to`; `bytes` is its modeled size. Reliable messages are retransmitted by
    /// the transport until they arrive; unreliable ones (heartbeats) may simply be lost.
    Send {
        to: Rank,
        msg: Msg,
        bytes: u64,
        reliable: bool,
    },
    /// Deliver `Input::Timer(key)` at virtual time `at`, replacing any timer with the same key.
    SetTimer {
        key: TimerKey,
        at: Nanos,
    },
    CancelTimer {
        key: TimerKey,
    },
    /// Hand back `Input::SendDone(token)` once the bytes of the `Send` just before this output
    /// have left the sender (a send that completes then: an eager send).
    NotifySent {
        token: SendToken,
    },
    /// Compute (the model's forward/backward pass) for `duration`, then `Input::ComputeDone`.
    Compute {
        duration: Nanos,
    },
    /// Local reduction of `bytes` modeled bytes: the driver charges it at the reduce bandwidth
    /// before carrying out the outputs that follow.
    Work {
        bytes: u64,
    },
    /// Boxed: events are few next to sends, and a small `Output` keeps the outbox cheap.
    Event(Box<ProtoEvent>),
    /// A step's event ([`ProtoEvent::Step`]), unboxed: a recording driver is told one per
    /// chunk a rank takes, as often as it is told to send.
    Step(StepEvent),
}

/// Outputs pushed by a state machine during one `handle` call, in order.
///
/// A step reported last waits in a place of its own rather than in `out`: a driver that
/// records steps hands it over as it is, after the outputs before it ([`Outbox::take_step`]).
/// [`Outbox::drain`] yields it in its place.
#[derive(Debug, Default)]
pub struct Outbox {
    /// Every output but a step reported last (pushed here as soon as another output follows).
    pub out: Vec<Output>,
    /// The step reported last, when nothing was pushed after it: it follows `out`.
    step: Option<StepEvent>,
    /// The driver does not charge local reduction work: `work` pushes nothing.
    ignore_work: bool,
}

impl Outbox {
    pub fn new() -> Outbox {
        Outbox::default()
    }
    /// An outbox whose `Output::Work` items the driver would ignore anyway (it has no reduce
    /// bandwidth to charge them at), so they are never pushed: a chunk is reduced for every
    /// message of a reduction.
    pub fn ignoring_work() -> Outbox {
        Outbox {
            out: Vec::new(),
            step: None,
            ignore_work: true,
        }
    }
    /// Pushes `o` after everything pushed so far (a step waiting in its place first).
    #[inline(always)]
    fn push(&mut self, o: Output) {
        if self.step.is_some() {
            self.flush_step();
        }
        self.out.push(o);
    }
    /// Moves the step reported last into `out`, as outputs follow it.
    #[cold]
    #[inline(never)]
    fn flush_step(&mut self) {
        if let Some(s) = self.step.take() {
            self.out.push(Output::Step(s));
        }
    }
    #[inline]
    pub fn send(&mut self, to: Rank, msg: Msg, bytes: u64) {
        self.push(Output::Send {
            to,
            msg,
            bytes,
            reliable: true,
        });
    }
    pub fn send_datagram(&mut self, to: Rank, msg: Msg, bytes: u64) {
        self.push(Output::Send {
            to,
            msg,
            bytes,
            reliable: false,
        });
    }
    /// Sends `msg` to `to` and asks to be told when its bytes have left.
    pub fn send_notify(&mut self, to: Rank, msg: Msg, bytes: u64, token: SendToken) {
        self.send(to, msg, bytes);
        self.push(Output::NotifySent { token });
    }
    pub fn set_timer(&mut self, key: TimerKey, at: Nanos) {
        self.push(Output::SetTimer { key, at });
    }
    pub fn cancel_timer(&mut self, key: TimerKey) {
        self.push(Output::CancelTimer { key });
    }
    pub fn compute(&mut self, duration: Nanos) {
        self.push(Output::Compute { duration });
    }
    #[inline]
    pub fn work(&mut self, bytes: u64) {
        if self.ignore_work {
            return;
        }
        self.push(Output::Work { bytes });
    }
    pub fn event(&mut self, ev: ProtoEvent) {
        self.push(Output::Event(Box::new(ev)));
    }
    /// Reports a step ([`Output::Step`]); it waits in its own place until another output
    /// follows it.
    #[inline(always)]
    pub fn step(&mut self, ev: StepEvent) {
        // a step reported before this one, and no output since, goes first
        if let Some(before) = self.step.replace(ev) {
            self.out.push(Output::Step(before));
        }
    }
    /// The step reported last, when no output followed it: it comes after every output left
    /// in `out`.
    #[inline(always)]
    pub fn take_step(&mut self) -> Option<StepEvent> {
        self.step.take()
    }
    /// The step reported last, when no output followed it, left in its place.
    #[inline(always)]
    pub fn last_step(&self) -> Option<&StepEvent> {
        self.step.as_ref()
    }
    /// Drops the step reported last (once it was handed over through [`Outbox::last_step`]).
    #[inline(always)]
    pub fn clear_step(&mut self) {
        if let Some(s) = self.step.take() {
            if s.waiting_for.spilled() {
                drop(s);
            } else {
                // a wait list that fits in place owns nothing to free: no drop to call
                std::mem::forget(s);
            }
        }
    }
    /// Every output, in order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Output> {
        self.flush_step();
        self.out.drain(..)
    }
    pub fn is_empty(&self) -> bool {
        self.out.is_empty() && self.step.is_none()
    }
}

/// State of a collective in the flight recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlightState {
    /// Issued, but no chunk of a peer has been taken yet (as a NCCL kernel enqueued but not
    /// started: a rank stuck here never heard from a matching peer).
    Scheduled,
    /// A matching chunk from a peer arrived: the collective runs.
    Started,
    Completed,
    Aborted,
}

/// One entry of a rank's flight recorder: a recent collective and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlightEntry {
    pub fp: Fingerprint,
    pub iteration: u32,
    pub index: u32,
    pub state: FlightState,
    /// When the call was issued.
    pub start_ns: Nanos,
    /// When the first matching chunk from a peer arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ns: Option<Nanos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_ns: Option<Nanos>,
    /// Step reached (for started or aborted collectives).
    pub step: u32,
    pub steps: u32,
}

/// The peers a step waits for (world ranks): most steps wait for one or two, kept inline.
pub type WaitList = SmallVec<[Rank; 4]>;

/// A collective moved to `step` of `steps` and now waits for `waiting_for`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepEvent {
    pub group: GroupId,
    pub generation: Generation,
    pub seq: SeqNo,
    pub step: u32,
    pub steps: u32,
    pub waiting_for: WaitList,
}

/// Why a chunk of a running collective is not one its schedule expects
/// ([`ProtoEvent::Unexpected`]). Its name (`Display`, `FromStr`) is the snake_case of the
/// variant, as a trace writes it.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Unexpected {
    /// The step it names receives nothing from its sender.
    NotFromPeer,
    /// The step it names received its sender's chunk already.
    Twice,
    /// Its length or dtype is not that of the blocks the step expects from its sender.
    DoesNotFit,
    /// It names a step the receiver has already left.
    StepOver,
    /// It names a step the call does not have.
    NoSuchStep,
}

impl Unexpected {
    /// What it means, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Unexpected::NotFromPeer => "that step receives nothing from it",
            Unexpected::Twice => "that step had received its chunk already",
            Unexpected::DoesNotFit => "it does not fit the blocks that step expects from it",
            Unexpected::StepOver => "the receiver had left that step",
            Unexpected::NoSuchStep => "the call has no such step",
        }
    }
}

/// Something that happened inside a rank's protocol code.
#[derive(Clone, Debug, PartialEq)]
pub enum ProtoEvent {
    /// The workload begins iteration `iteration`.
    Iteration { iteration: u32 },
    /// The rank issues call `index` of `iteration`. A send or recv names its `peer` (a world
    /// rank); its fingerprint's `seq` is the message's order between the two in that direction.
    Call {
        iteration: u32,
        index: u32,
        fp: Fingerprint,
        members: usize,
        peer: Option<Rank>,
    },
    /// The collective moved to a step (an outbox carries it as [`Output::Step`]).
    Step(StepEvent),
    /// The collective completed on this rank with `result`.
    Complete {
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        iteration: u32,
        index: u32,
        result: Buffer,
    },
    /// The collective was aborted (watchdog timeout, or a membership change).
    Abort {
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        step: u32,
        steps: u32,
        waiting_for: Vec<Rank>,
        reason: AbortReason,
    },
    /// A chunk of the running collective arrived that its schedule does not expect: the one
    /// world rank `from` sent for `step` (from 0) of `steps`, with `elements` values. It is
    /// dropped; the call goes on waiting for what it expects.
    Unexpected {
        group: GroupId,
        generation: Generation,
        seq: SeqNo,
        op: OpKind,
        algorithm: Algorithm,
        step: u32,
        steps: u32,
        from: Rank,
        elements: u64,
        why: Unexpected,
    },
    /// The flight recorder's contents, dumped when a watchdog fires.
    FlightRecord { entries: Vec<FlightEntry> },
    /// The rank finished every iteration of its workload (or the node it hosts finished).
    WorkloadDone,
    /// The node of the program's own that the rank hosts waits `on` something for
    /// `waiting_for` (world ranks), or, with both empty, no longer waits.
    NodeWait { on: String, waiting_for: Vec<Rank> },
    /// A restarted process could not rejoin its group.
    RejoinRefused { reason: String },
    /// Elastic membership: generations, rendezvous, failure detection, the store.
    Membership(MemberEvent),
    /// The registry: joins, leaves, views, broadcasts, queries.
    Registry(super::registry::RegistryEvent),
}

/// Why a rank's collective was aborted. Traces and reports print it (`Display`), e.g.
/// `watchdog: allreduce #3 did not complete within 30.000s (step 2/6, waiting for rank 2)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// The call's watchdog fired: it did not complete within the group's timeout. `step` is
    /// the step it waited in (from 0) of `steps`, for `waiting_for`.
    Watchdog {
        op: OpKind,
        seq: SeqNo,
        waited: Nanos,
        step: u32,
        steps: u32,
        waiting_for: Vec<Rank>,
    },
    /// Elastic membership stops the group to rebuild it; the text says what started it.
    MembershipChange(String),
    /// Elastic membership: this rank is outside the group (left out of a generation, or a
    /// restarted process); the text says why.
    OutsideGroup(String),
    /// The call asks for an algorithm its op does not have.
    Unsupported(UnsupportedAlgorithm),
    /// The call runs along a group layout the configuration does not have.
    NoGroup(u32),
    /// A send or recv names a group rank the group does not have.
    NoPeer(u32),
}

impl AbortReason {
    /// Whether the watchdog fired (without elastic membership, that tears the job down).
    pub fn is_watchdog(&self) -> bool {
        matches!(self, AbortReason::Watchdog { .. })
    }

    /// Whether `text`, a reason as a trace carries it (this type's `Display`), is the
    /// watchdog's: the one place that knows how a trace spells it.
    pub fn text_is_watchdog(text: &str) -> bool {
        text.starts_with("watchdog")
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbortReason::Watchdog {
                op,
                seq,
                waited,
                step,
                steps,
                waiting_for,
            } => {
                write!(
                    f,
                    "watchdog: {op} #{seq} did not complete within {} (step {}/{steps}, waiting for rank{} ",
                    fmt_time(*waited),
                    step + 1,
                    if waiting_for.len() == 1 { "" } else { "s" },
                )?;
                for (i, r) in waiting_for.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{r}")?;
                }
                f.write_str(")")
            }
            AbortReason::MembershipChange(cause) => write!(f, "membership change: {cause}"),
            AbortReason::OutsideGroup(why) => f.write_str(why),
            AbortReason::Unsupported(e) => write!(f, "{e}"),
            AbortReason::NoGroup(layout) => {
                write!(f, "no group layout {layout} to run the call on")
            }
            AbortReason::NoPeer(peer) => {
                write!(f, "no group rank {peer} to send to or receive from")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_as_a_trace_spells_it_is_the_watchdogs_only_for_the_watchdog() {
        let watchdog = AbortReason::Watchdog {
            op: OpKind::Allreduce,
            seq: SeqNo(3),
            waited: 1_000_000_000,
            step: 1,
            steps: 4,
            waiting_for: vec![Rank(2)],
        };
        assert!(AbortReason::text_is_watchdog(&watchdog.to_string()));
        for other in [
            AbortReason::MembershipChange("rank 2 left".into()),
            AbortReason::OutsideGroup("left out of generation 2".into()),
            AbortReason::NoGroup(3),
            AbortReason::NoPeer(9),
        ] {
            assert!(
                !AbortReason::text_is_watchdog(&other.to_string()),
                "{other}"
            );
        }
    }
}
