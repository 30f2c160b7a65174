//! The named properties of DESIGN §5 as plain functions over a finished run.
//!
//! A [`Property`] is a name and a check `fn(&Case, &RunOutput) -> Result<(), String>`. The
//! checks live outside the protocol (TigerBeetle's habit): they see only the case and what the
//! run produced — the folded events, the diagnosis, the report — and re-run the case when they
//! need to (determinism). [`registry`] lists the properties `ringside check` runs by default;
//! other properties plug in by adding a `Property` to that list, or to the list handed to the
//! swarm.

use super::bound::healing;
use super::Case;
use crate::diagnose::RankState;
use crate::run::{run_events, RunOutput};
use crate::scenario::{Fault, OpKind, Outcome};
use crate::trace::{replay_reader, ReplayOutcome, TraceReader, TraceWriter, VecRecorder};
use crate::units::fmt_ms;

/// A named property of a finished run.
#[derive(Clone, Copy)]
pub struct Property {
    /// A short name, used in messages and in the files of a failing case.
    pub name: &'static str,
    /// `Err(why)` when the run breaks the property.
    pub check: fn(&Case, &RunOutput) -> Result<(), String>,
}

impl std::fmt::Debug for Property {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// All ranks that complete collective (group, generation, seq) hold identical results.
pub const AGREEMENT: Property = Property {
    name: "agreement",
    check: agreement,
};

/// Every completed result equals the reduction of exactly the inputs of the call's members.
pub const VALIDITY: Property = Property {
    name: "validity",
    check: validity,
};

/// Once every fault has healed, the workload finishes in time; otherwise the run completes or
/// stops at a stall that the diagnosis locates.
pub const LIVENESS: Property = Property {
    name: "liveness",
    check: liveness,
};

/// The same scenario and seed give the same digest, and replaying the trace agrees.
pub const DETERMINISM: Property = Property {
    name: "determinism",
    check: determinism,
};

/// Every root cause of a stall names ranks or links that a fault really touched, with a fault
/// of a kind that can cause it; every blocked rank has a root cause.
pub const DIAGNOSIS_SOUND: Property = Property {
    name: "diagnosis_sound",
    check: diagnosis_sound,
};

/// Elastic runs: no two member sets share a generation, every rank's generations increase,
/// and every generation's size is within `min_size..=max_size`.
pub const ONE_WORLD_PER_GENERATION: Property = Property {
    name: "one_world_per_generation",
    check: one_world_per_generation,
};

/// The properties `ringside check` runs, in order (cheapest first).
pub fn registry() -> Vec<Property> {
    vec![
        AGREEMENT,
        VALIDITY,
        DIAGNOSIS_SOUND,
        ONE_WORLD_PER_GENERATION,
        LIVENESS,
        DETERMINISM,
    ]
}

/// **one_world_per_generation**: see [`super::membership::one_world_per_generation`]. It
/// needs every generation event, so an elastic case is run again keeping them; other cases
/// form no generation after the first and pass at once.
pub fn one_world_per_generation(case: &Case, _out: &RunOutput) -> Result<(), String> {
    let Some(e) = case.scenario.group.elastic.as_ref() else {
        return Ok(());
    };
    let mut rec = VecRecorder::default();
    run_events(&case.scenario, &case.options(), &mut rec);
    super::membership::one_world_per_generation(&rec.events, Some((e.min_size, e.max_size)))
        .map_err(|v| v.detail)
}

/// **diagnosis_sound**: see [`super::properties::diagnosis_sound`].
pub fn diagnosis_sound(case: &Case, out: &RunOutput) -> Result<(), String> {
    super::properties::diagnosis_sound(&case.scenario, out.result.outcome, &out.diagnosis)
}

/// The property of `registry()` called `name`.
pub fn by_name(name: &str) -> Option<Property> {
    registry().into_iter().find(|p| p.name == name)
}

/// The first call of the workload, (iteration, op index), at which some rank issues a call
/// the workload does not say (a mismatched or skipped call), if any. From there on ranks
/// legitimately disagree: the collective contract requires every member to issue the same
/// call, and a skipped call shifts the skipping rank's later calls onto its peers' sequence
/// numbers. By workload position, not sequence number: a rebuilt generation numbers its
/// calls from 1 again.
fn first_buggy_call(case: &Case) -> Option<(u32, u32)> {
    case.scenario
        .faults
        .iter()
        .filter_map(|f| match f {
            Fault::Mismatch {
                iteration,
                op_index,
                ..
            }
            | Fault::Skip {
                iteration,
                op_index,
                ..
            } => Some((*iteration, op_index.unwrap_or(0))),
            _ => None,
        })
        .min()
}

fn checked_ops<'a>(
    case: &Case,
    out: &'a RunOutput,
) -> impl Iterator<Item = &'a crate::diagnose::OpView> {
    let limit = first_buggy_call(case).unwrap_or((u32::MAX, u32::MAX));
    out.fold
        .ops
        .values()
        .filter(move |o| (o.iteration, o.index) < limit)
}

fn describe(o: &crate::diagnose::OpView) -> String {
    format!(
        "{} #{} ({}, iteration {} op {}, generation {})",
        o.op, o.seq.0, o.algorithm, o.iteration, o.index, o.generation.0
    )
}

/// **agreement**: every rank that completed a collective holds the same result bits
/// (reduce-scatter excepted: there each rank holds its own block, which validity checks).
/// Calls from the first mismatched or skipped call on are not checked: the collective contract
/// requires every member to issue the same call.
pub fn agreement(case: &Case, out: &RunOutput) -> Result<(), String> {
    for o in checked_ops(case, out) {
        if o.op != OpKind::ReduceScatter && o.results.len() > 1 {
            return Err(format!(
                "{}: the {} ranks that completed it hold {} different results ({})",
                describe(o),
                o.ranks_completed,
                o.results.len(),
                o.results.join(", ")
            ));
        }
    }
    Ok(())
}

/// **validity**: every completed result equals the reference computed from the inputs of the
/// call's members. Calls from the first mismatched or skipped call on are not checked.
pub fn validity(case: &Case, out: &RunOutput) -> Result<(), String> {
    for o in checked_ops(case, out) {
        if !o.correct {
            return Err(format!(
                "{}: a rank completed it with a result that differs from the reduction of the \
                 members' inputs",
                describe(o)
            ));
        }
    }
    Ok(())
}

/// **liveness**, in two phases as TigerBeetle's VOPR: faults (the safety phase), then a phase
/// in which every fault has healed and the run must converge.
///
/// - When every fault is transient and together they cannot hold a call back past the
///   collective timeout ([`healing`]), the run must complete, and by
///   the deadline computed from the timeouts and the cost model.
/// - Otherwise (a preemption, a fault that never ends, an application bug, or transient faults
///   long enough to trip the watchdog) the run must complete, or stop at a diagnosed stall:
///   outcome `stalled`, the blocked ranks named, and a root cause whenever the final state
///   shows one (a dead, paused or partitioned-away peer). A run that neither completes nor stalls before its
///   time limit fails.
pub fn liveness(case: &Case, out: &RunOutput) -> Result<(), String> {
    let h = healing(&case.scenario);
    let r = &out.report;
    let end = out.result.end_ns;
    let finished = matches!(r.outcome, Outcome::Completed | Outcome::Rebuilt);
    if h.heals {
        if !finished {
            let faults = if case.scenario.faults.is_empty() {
                "there are no faults".to_string()
            } else {
                format!(
                    "every fault heals in time (the last ends at {}, together they hold a call \
                     back by at most {})",
                    fmt_ms(h.last_end),
                    fmt_ms(h.hold_back)
                )
            };
            return Err(format!(
                "{faults}, yet the run {} at {}{}",
                r.outcome,
                fmt_ms(end),
                if r.explanation.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.explanation.join("; "))
                }
            ));
        }
        if end > h.deadline {
            return Err(format!(
                "every fault heals in time, yet the run completed only at {}, after the \
                 deadline {} (last fault end + hold-back + twice the workload's cost bound)",
                fmt_ms(end),
                fmt_ms(h.deadline)
            ));
        }
        return Ok(());
    }
    match r.outcome {
        _ if finished => Ok(()),
        Outcome::Stalled => stall_diagnosed(out),
        _ => Err(format!(
            "the run neither completed nor stalled by its time limit ({}): it was still \
             making progress, or livelocked ({})",
            fmt_ms(end),
            h.why_not.unwrap_or_default()
        )),
    }
}

/// A stall is diagnosed when the diagnosis names the blocked ranks, and names a root cause
/// whenever one is evident in the final state: a live rank waits for a rank that is dead
/// (preempted, or restarted and refused), paused, or on the other side of an active partition.
/// (Causes outside that core — application bugs, stragglers, a fault that ended before the
/// watchdog fired — are demanded by diagnosis soundness.)
fn stall_diagnosed(out: &RunOutput) -> Result<(), String> {
    let fold = &out.fold;
    let r = &out.report;
    let end = fmt_ms(out.result.end_ns);
    let waiting: Vec<(u32, &[u32])> = fold
        .ranks
        .iter()
        .filter(|v| v.state != RankState::Dead)
        .filter_map(|v| {
            let c = v.call.as_ref()?;
            (!c.waiting_for.is_empty()).then_some((v.rank, c.waiting_for.as_slice()))
        })
        .collect();
    if waiting.is_empty() || !r.root_causes.is_empty() {
        return Ok(());
    }
    if r.blocked.is_empty() {
        return Err(format!(
            "the run stalled at {end} with ranks waiting in collectives, but the diagnosis \
             names neither a root cause nor a blocked rank"
        ));
    }
    let separated = |a: u32, b: u32| {
        fold.active_faults().any(|f| {
            let side = |r: u32| f.sides.as_ref()?.iter().position(|s| s.contains(&r));
            f.kind == "partition" && matches!((side(a), side(b)), (Some(x), Some(y)) if x != y)
        })
    };
    for (rank, awaited) in waiting {
        for &w in awaited {
            let Some(peer) = fold.ranks.get(w as usize) else {
                continue;
            };
            let why = if matches!(peer.state, RankState::Dead | RankState::Refused) {
                "is dead"
            } else if peer.paused {
                "is paused"
            } else if separated(rank, w) {
                "is cut off by a partition"
            } else {
                continue;
            };
            return Err(format!(
                "the run stalled at {end} with rank {rank} waiting for rank {w}, which {why}, \
                 yet the diagnosis names no root cause"
            ));
        }
    }
    Ok(())
}

/// **determinism**: a second run of the case gives the same digest as the first, and
/// replaying the second run's trace reproduces it line for line.
pub fn determinism(case: &Case, out: &RunOutput) -> Result<(), String> {
    let mut trace = Vec::new();
    let digest = {
        let mut w = TraceWriter::new(&mut trace, &case.scenario, case.seed)
            .map_err(|e| format!("cannot write a trace into memory: {e}"))?;
        let (result, _, _) = run_events(&case.scenario, &case.options(), &mut w);
        w.finish(result.outcome)
            .map_err(|e| format!("cannot write a trace into memory: {e}"))?
            .hex()
    };
    if digest != out.report.digest {
        return Err(format!(
            "two runs of the same scenario and seed {} gave different digests: {} and {digest}",
            case.seed, out.report.digest
        ));
    }
    let reader = TraceReader::new(trace.as_slice(), "(in memory)")
        .map_err(|e| format!("the trace just written cannot be read: {e}"))?;
    match replay_reader(reader, case.mutations) {
        Ok(ReplayOutcome::Identical { .. }) => Ok(()),
        Ok(ReplayOutcome::Diverged {
            line,
            expected,
            actual,
        }) => Err(format!(
            "replaying the trace diverged at line {line}:\n  recorded: {expected}\n  replayed: {actual}"
        )),
        Err(e) => Err(format!("the trace just written cannot be replayed: {e}")),
    }
}
