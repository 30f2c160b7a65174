//! What a run may cost: the budgets that end it early, and the memory it is estimated to need.
//!
//! A valid scenario can still ask for more than a machine has: a million ranks, a buffer of
//! sixteen million elements on each of 64 ranks, billions of iterations, heartbeats every
//! nanosecond. Three limits keep every run bounded:
//! - memory, checked before the run starts: [`estimate`] sums what the run holds at once
//!   (every rank's buffers and state, messages in flight, the report's record of every call)
//!   and the command line refuses a scenario above its limit (`--max-memory`). What grows as
//!   the run goes is held to the same limit while it runs: the events waiting in the engine's
//!   queue (messages a rank sends faster than its port carries them, timers set faster than
//!   they fire) may take what the estimate leaves of the limit, [`queue_room`] of them, and
//!   the run ends as `budget: memory` when they would take more;
//! - events: the engine stops after [`Limits::events`] events, by default twice what a
//!   healthy run of the scenario takes ([`default_events`]), so that a large healthy run
//!   completes and a runaway still ends;
//! - wall-clock time: the engine stops when a flag set by a timer outside it is raised.
//!
//! A run stopped by a budget ends as `timed_out`, diagnosed where it stood, and says which
//! budget ran out ([`Budget`]). So does a run whose next event lies past the last instant
//! virtual time can represent. Every budget but the wall clock stops a run at the same event
//! on every machine, so a replay stops where the run did.

use crate::scenario::groups;
use crate::scenario::resolve::op_call;
use crate::scenario::Scenario;
use crate::scenario::{Algorithm, Dtype, OpKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::AtomicBool;

/// Which limit ended a run before it could end on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// The engine processed [`Limits::events`] events.
    Events,
    /// The wall-clock budget ran out.
    WallClock,
    /// The events waiting in the engine's queue grew past what the memory limit leaves them
    /// ([`queue_room`]).
    Memory,
    /// The next event lies past the last instant virtual time can represent (about 5.1
    /// million hours).
    VirtualTime,
}

impl Budget {
    /// What ran out, for a sentence: "the event budget (--max-events) ran out".
    pub fn describe(self) -> &'static str {
        match self {
            Budget::Events => "the event budget (--max-events) ran out",
            Budget::WallClock => "the wall-clock budget (--max-wall) ran out",
            Budget::Memory => "the memory budget (--max-memory) ran out",
            Budget::VirtualTime => {
                "the next event lies past the end of virtual time (about 5124095h)"
            }
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Budget::Events => "events",
            Budget::WallClock => "wall_clock",
            Budget::Memory => "memory",
            Budget::VirtualTime => "virtual_time",
        })
    }
}

/// The least event budget a run gets unless told otherwise ([`default_events`]): seconds to a
/// minute of work.
pub const DEFAULT_MAX_EVENTS: u64 = 20_000_000;

/// The event budget of a run of `s` unless told otherwise: twice the events a healthy run of
/// it takes ([`expected_events`]), and at least [`DEFAULT_MAX_EVENTS`]. Twice, for the
/// retransmissions, timeouts and rebuilds of the faults; a run that goes on past that is a
/// runaway (heartbeats every nanosecond, a group that rebuilds forever) and ends as `budget`.
pub fn default_events(s: &Scenario) -> u64 {
    expected_events(s).saturating_mul(2).max(DEFAULT_MAX_EVENTS)
}

/// Engine events a healthy run of `s` takes, about: three per message (its send, its delivery
/// and the step it completes; 100.6 million for the 4,096-rank ring allreduce, which takes
/// 100.6 million), counted per call from the algorithm's messages per rank on each of the op's
/// groups, plus a few per call and rank (the call, its completion, compute), for every
/// iteration. Calls of `[[workload.programs]]` are counted beside the common ops, as if every
/// rank made both (more than happens, which a budget can afford).
pub fn expected_events(s: &Scenario) -> u64 {
    let sizes = |group: Option<&str>| -> Vec<u64> {
        match group {
            None => vec![u64::from(s.world.size)],
            Some(name) => groups::subgroups(s, name)
                .map(|g| g.iter().map(|m| m.len() as u64).collect())
                .unwrap_or_default(),
        }
    };
    let per_iteration = s
        .workload
        .ops
        .iter()
        .chain(s.workload.programs.iter().flat_map(|p| p.ops.iter()))
        .map(|o| {
            let algorithm = op_call(o, s.group.algorithm, s.workload.dtype, &[]).algorithm;
            sizes(o.group.as_deref())
                .into_iter()
                .map(|g| {
                    let messages = g.saturating_mul(messages_per_rank(o.op, algorithm, g));
                    messages
                        .saturating_mul(3)
                        .saturating_add(g.saturating_mul(4))
                })
                .fold(0u64, u64::saturating_add)
        })
        .fold(0u64, u64::saturating_add);
    // a pipeline's stages send activations forward and gradients back per microbatch
    let pipeline = s.workload.pipeline.as_ref().map_or(0, |p| {
        u64::from(p.microbatches)
            .saturating_mul(u64::from(s.world.size))
            .saturating_mul(4 * 3 + 4)
    });
    u64::from(s.workload.iterations)
        .saturating_mul(per_iteration.saturating_add(pipeline))
        .saturating_add(u64::from(s.world.size).saturating_mul(8))
}

/// Messages one rank sends in one call of `op` with `algorithm` on `g` ranks, at most: the
/// linear algorithms send to every peer (twice for an allreduce), the logarithmic ones a
/// message or two per round.
fn messages_per_rank(op: OpKind, algorithm: Algorithm, g: u64) -> u64 {
    let rounds = u64::from(crate::cost::ceil_log2(u32::try_from(g).unwrap_or(u32::MAX)));
    match (op, algorithm) {
        (OpKind::Send | OpKind::Recv, _) => 1,
        (_, Algorithm::Ring | Algorithm::Direct | Algorithm::Pairwise)
        | (_, Algorithm::Hierarchical) => 2 * g.saturating_sub(1),
        _ => 2 * rounds + 2,
    }
}

/// Events the engine's queue may hold at once under a memory limit of `limit` bytes, for a run
/// estimated to need `estimate`: what the limit leaves beyond the estimate, plus the messages
/// in flight the estimate already counts (so that a run admitted under the limit is never
/// stopped for holding those), at [`PER_QUEUED`] bytes each.
pub fn queue_room(limit: u64, estimate: &MemoryEstimate) -> u64 {
    limit
        .saturating_sub(estimate.total)
        .saturating_add(estimate.messages)
        / PER_QUEUED
}

/// Memory a run may be estimated to need unless told otherwise (2 GiB).
pub const DEFAULT_MAX_MEMORY: u64 = 2 << 30;

/// The budgets of one run.
#[derive(Clone, Copy, Debug)]
pub struct Limits<'a> {
    /// Events the engine may process: None for [`default_events`] of the scenario run,
    /// `Some(u64::MAX)` for no limit.
    pub events: Option<u64>,
    /// Set from outside when the wall-clock budget has run out (checked before every
    /// event).
    pub wall_clock: Option<&'a AtomicBool>,
    /// The memory the run may hold, in bytes: the events waiting in the queue may take what
    /// the scenario's [`estimate`] leaves of it ([`queue_room`]). None: no limit.
    pub memory: Option<u64>,
}

impl Default for Limits<'_> {
    /// The event budget derived from the scenario, the default memory limit, no wall clock.
    fn default() -> Self {
        Limits {
            events: None,
            wall_clock: None,
            memory: Some(DEFAULT_MAX_MEMORY),
        }
    }
}

impl Limits<'_> {
    /// No limit at all (benchmarks, and the engine's own tests).
    pub const NONE: Limits<'static> = Limits {
        events: Some(u64::MAX),
        wall_clock: None,
        memory: None,
    };
}

/// Bytes of engine and protocol state per rank, beyond its buffers (measured: about 4 KB).
const PER_RANK: u64 = 4_096;
/// Bytes per message in flight, beyond its elements (measured: about 360).
const PER_MESSAGE: u64 = 400;
/// Bytes per event waiting in the engine's queue, a message's with it: the queue's slot and
/// heap entry, the message, the sender's and receiver's share of it. Measured: heartbeats every
/// nanosecond grow the process by 172-182 bytes per event they leave queued at 0.5 and 1 GB of
/// queue room, and by about 220 at 100 MB (peak resident memory, the allocator's own overhead
/// included); this keeps a run stopped by it below its limit at each of those.
pub const PER_QUEUED: u64 = 240;
/// Bytes the report keeps per call of the workload (measured: about 1.2 KB).
const PER_CALL: u64 = 1_300;
/// Bytes a rank keeps per member of a group it sends or receives point-to-point in.
const PER_P2P_PEER: u64 = 16;
/// Bytes a rank of an elastic group keeps per member of the group.
const PER_MEMBER: u64 = 4;
/// Bytes of a step of a pipeline stage's program.
const PER_STEP: u64 = 128;
/// The process itself.
const BASE: u64 = 16 << 20;

/// What a run is estimated to hold in memory at once, by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryEstimate {
    pub ranks: u64,
    pub elements: u64,
    pub dtype_bytes: u64,
    /// Every rank's real buffers: ranks x elements x dtype size (twice when every rank sends
    /// its whole buffer at once).
    pub buffers: u64,
    /// Messages in flight at once, beyond their elements.
    pub messages: u64,
    /// Every rank's state.
    pub state: u64,
    /// The report's record of every call (iterations x ops).
    pub calls: u64,
    pub total: u64,
    /// The scenario key that drives the largest part, e.g. `world.size`: where a refusal
    /// points.
    pub key: &'static str,
}

/// Estimates the memory `s` needs, from its world, buffers, algorithms and iterations.
pub fn estimate(s: &Scenario) -> MemoryEstimate {
    let ranks = u64::from(s.world.size);
    let elements = u64::from(s.workload.elements);
    let dtype_bytes = match s.workload.dtype {
        Dtype::F32 => 4,
        Dtype::F64 | Dtype::I64 => 8,
    };
    // algorithms that send to every peer at once hold p - 1 messages per rank, each with its
    // share of the buffer; the others a few per rank
    let all_at_once = s.workload.ops.iter().any(|o| {
        o.op == OpKind::AllToAll
            || op_call(o, s.group.algorithm, s.workload.dtype, &[]).algorithm == Algorithm::Direct
    });
    let fanout = if all_at_once {
        ranks.saturating_sub(1).max(1)
    } else {
        4
    };
    let buffer = ranks.saturating_mul(elements).saturating_mul(dtype_bytes);
    let buffers = if all_at_once {
        buffer.saturating_mul(2)
    } else {
        buffer
    };
    let messages = ranks.saturating_mul(fanout).saturating_mul(PER_MESSAGE);
    // a rank also keeps something per member of its groups: point-to-point counts each way
    // with every member of a group it sends or receives in, an elastic group its view of
    // every member
    let p2p_group = p2p_group_size(s);
    let elastic_members = if s.group.elastic.is_some() { ranks } else { 0 };
    let per_rank = p2p_group
        .saturating_mul(PER_P2P_PEER)
        .saturating_add(elastic_members.saturating_mul(PER_MEMBER))
        .saturating_add(PER_RANK);
    // a pipeline's stages each have a program of microbatches x (forward, backward) steps
    let pipeline_calls = s
        .workload
        .pipeline
        .as_ref()
        .map_or(0, |p| u64::from(p.microbatches).saturating_mul(4));
    let stages = if s.workload.pipeline.is_some() {
        ranks
    } else {
        0
    };
    let programs = stages
        .saturating_mul(pipeline_calls)
        .saturating_mul(PER_STEP);
    let state = ranks.saturating_mul(per_rank).saturating_add(programs);
    let per_iteration = s
        .workload
        .programs
        .iter()
        .map(|p| p.ops.len() as u64)
        .chain([(s.workload.ops.len() as u64).saturating_add(pipeline_calls)])
        .max()
        .unwrap_or(0)
        .max(1);
    let calls = u64::from(s.workload.iterations)
        .saturating_mul(per_iteration)
        .saturating_mul(PER_CALL);
    let total = [buffers, messages, state, calls]
        .into_iter()
        .fold(BASE, u64::saturating_add);
    let microbatches = "workload.pipeline.microbatches";
    let parts = [
        (
            buffers,
            if elements > ranks {
                "workload.elements"
            } else {
                "world.size"
            },
        ),
        (messages, "world.size"),
        (
            state,
            if programs > ranks.saturating_mul(per_rank) {
                microbatches
            } else {
                "world.size"
            },
        ),
        (
            calls,
            if pipeline_calls > s.workload.ops.len() as u64 {
                microbatches
            } else {
                "workload.iterations"
            },
        ),
    ];
    // the first of the largest, in the order the refusal lists equal parts
    let key = parts
        .iter()
        .fold(
            (0, "world.size"),
            |best, &(b, k)| if b > best.0 { (b, k) } else { best },
        )
        .1;
    MemoryEstimate {
        ranks,
        elements,
        dtype_bytes,
        buffers,
        messages,
        state,
        calls,
        total,
        key,
    }
}

/// The largest group any rank sends or receives point-to-point in (0: none does).
fn p2p_group_size(s: &Scenario) -> u64 {
    let size = |group: Option<&str>| -> u64 {
        match group {
            None => u64::from(s.world.size),
            Some(name) => groups::subgroups(s, name)
                .map_or(0, |g| g.iter().map(|m| m.len() as u64).max().unwrap_or(0)),
        }
    };
    let ops = s
        .workload
        .ops
        .iter()
        .chain(s.workload.programs.iter().flat_map(|p| p.ops.iter()))
        .filter(|o| matches!(o.op, OpKind::Send | OpKind::Recv))
        .map(|o| size(o.group.as_deref()));
    let pipeline = s
        .workload
        .pipeline
        .as_ref()
        .map(|p| size(p.group.as_deref()));
    ops.chain(pipeline).max().unwrap_or(0)
}

/// Bytes for humans, in powers of 1000: `4.3 GB`.
pub fn fmt_bytes(b: u64) -> String {
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")];
    for (scale, unit) in units {
        if b as f64 >= scale {
            return format!("{:.1} {unit}", b as f64 / scale);
        }
    }
    format!("{b} B")
}

impl MemoryEstimate {
    /// Why a run is refused at `limit` bytes, naming its largest parts.
    pub fn refusal(&self, limit: u64) -> String {
        let mut parts = vec![
            (
                self.buffers,
                format!(
                    "buffers {} ({} ranks x {} elements x {} bytes)",
                    fmt_bytes(self.buffers),
                    self.ranks,
                    self.elements,
                    self.dtype_bytes
                ),
            ),
            (
                self.messages,
                format!("messages in flight {}", fmt_bytes(self.messages)),
            ),
            (
                self.state,
                format!("per-rank state {}", fmt_bytes(self.state)),
            ),
            (
                self.calls,
                format!("the record of every call {}", fmt_bytes(self.calls)),
            ),
        ];
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let parts: Vec<String> = parts.into_iter().filter(|p| p.0 > 0).map(|p| p.1).collect();
        format!(
            "this run would need about {} of memory ({}), more than the limit of {}; \
             raise it with --max-memory (e.g. --max-memory {}) if the machine has it",
            fmt_bytes(self.total),
            parts.join(", "),
            fmt_bytes(limit),
            suggest(self.total),
        )
    }
}

/// A round `--max-memory` value above `bytes`, e.g. `5GB`.
fn suggest(bytes: u64) -> String {
    let gb = bytes.div_ceil(1_000_000_000);
    if gb >= 1_000_000 {
        format!("{}TB", gb.div_ceil(1000))
    } else {
        format!("{gb}GB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(world: u32, elements: u32, iterations: u32, algorithm: &str) -> Scenario {
        crate::scenario::parse(
            &format!(
                "name = \"m\"\n[world]\nsize = {world}\n[group]\nalgorithm = \"{algorithm}\"\n\
                 [workload]\niterations = {iterations}\nelements = {elements}\n\
                 [[workload.ops]]\nop = \"allreduce\"\nbytes = \"1MiB\"\n"
            ),
            "m.toml",
        )
        .unwrap()
    }

    #[test]
    fn the_estimate_grows_with_every_part() {
        let small = estimate(&scenario(3, 64, 1, "ring"));
        assert!(small.total < DEFAULT_MAX_MEMORY, "{small:?}");
        let big_buffers = estimate(&scenario(64, 16_777_216, 1, "ring"));
        assert_eq!(big_buffers.buffers, 64 * 16_777_216 * 4);
        assert!(big_buffers.total > DEFAULT_MAX_MEMORY);
        let direct = estimate(&scenario(100_000, 64, 1, "direct"));
        assert!(direct.messages > 100_000 * 99_999 * 300, "{direct:?}");
        // beyond what validation accepts, to see the estimate does not wrap
        let mut s = scenario(3, 64, 1, "ring");
        s.workload.iterations = u32::MAX;
        let long = estimate(&s);
        assert!(long.total > DEFAULT_MAX_MEMORY, "{long:?}");
        let wide = estimate(&scenario(1_000_000, 64, 1, "ring"));
        assert!(wide.total > DEFAULT_MAX_MEMORY, "{wide:?}");
    }

    #[test]
    fn the_expected_events_of_a_ring_are_three_per_message() {
        // 2 p (p - 1) messages of 3 events each, 4 per rank for its call, 8 per rank to start
        let ring = scenario(4096, 1, 1, "ring");
        let messages = 2 * 4096 * 4095;
        assert_eq!(expected_events(&ring), 3 * messages + 4 * 4096 + 8 * 4096);
        assert_eq!(default_events(&ring), 2 * expected_events(&ring));
        // a small run gets the floor; logarithmic algorithms a message or two per round
        assert_eq!(
            default_events(&scenario(3, 64, 3, "ring")),
            DEFAULT_MAX_EVENTS
        );
        let tree = scenario(65_536, 16, 1, "recursive_doubling");
        assert!(
            expected_events(&tree) < 3 * 65_536 * 40,
            "{}",
            expected_events(&tree)
        );
    }

    #[test]
    fn queue_room_is_what_the_limit_leaves_and_never_less_than_the_estimate() {
        let e = estimate(&scenario(3, 64, 1, "ring"));
        let room = queue_room(100_000_000, &e);
        assert_eq!(room, (100_000_000 - e.total + e.messages) / PER_QUEUED);
        // a run admitted exactly at its estimate may still hold the messages it expects
        assert_eq!(queue_room(e.total, &e), e.messages / PER_QUEUED);
        assert!(e.messages / PER_QUEUED >= 3 * 4, "{e:?}");
    }

    #[test]
    fn a_refusal_names_its_largest_part_first_and_how_to_raise_the_limit() {
        let e = estimate(&scenario(64, 16_777_216, 1, "ring"));
        let msg = e.refusal(DEFAULT_MAX_MEMORY);
        assert!(
            msg.starts_with("this run would need about 4.3 GB of memory (buffers 4.3 GB (64 ranks x 16777216 elements x 4 bytes)"),
            "{msg}"
        );
        assert!(msg.contains("--max-memory 5GB"), "{msg}");
    }
}
