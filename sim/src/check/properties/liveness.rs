//! **liveness**, in two phases as TigerBeetle's VOPR: faults (the safety phase), then a phase
//! in which every fault has healed and the run must converge.

use super::membership::{quorum_gone, registry_converged};
use super::{Property, Violation};
use crate::check::bound::{healing, own_timing_too_tight};
use crate::check::{Case, Run};
use crate::diagnose::RankState;
use crate::scenario::{resolve, Fault, Outcome, RegistryAction, RendezvousKind, Scenario};
use crate::units::{fmt_ms, Nanos};

fn violation(message: String) -> Violation {
    Violation::new(Property::Liveness, message)
}

/// The workload finishes (or stops at a diagnosed stall, see [`workload_finishes`]); and once
/// every fault is over, an elastic group rebuilds and registry views converge.
pub(super) fn liveness(case: &Case, run: &Run) -> Result<(), Violation> {
    workload_finishes(case, run)?;
    let Some(healed) = healed_at(&case.scenario) else {
        return Ok(());
    };
    elastic_group_finishes(case, run)?;
    registry_views_converge(case, run, healed)
}

/// - When every fault is transient and together they cannot hold a call back past the
///   collective timeout ([`healing`]), the run must complete, and by the deadline computed
///   from the timeouts and the cost model.
/// - Otherwise (a preemption, a fault that never ends, an application bug, or transient faults
///   long enough to trip the watchdog) the run must complete, or stop at a diagnosed stall:
///   outcome `stalled`, the blocked ranks named, and a root cause whenever the final state
///   shows one (a dead, paused or partitioned-away peer). A run that neither completes nor
///   stalls before its time limit fails, unless the workload without its faults does not
///   finish within that limit either, or the scenario's own timeouts are too tight for its
///   network ([`timeout_too_short`](crate::check::bound::timeout_too_short),
///   [`rebuild_impossible`](crate::check::bound::rebuild_impossible)).
fn workload_finishes(case: &Case, run: &Run) -> Result<(), Violation> {
    let h = healing(&case.scenario);
    let r = &run.report;
    let end = run.result.end_ns;
    let finished = matches!(r.outcome, Outcome::Completed | Outcome::Rebuilt);
    // a workload that stalls by itself, without any fault (a program's extra call, groups
    // called in opposite orders), is held to the rule for bugs: a diagnosed stall
    let alone_stalls = || !finished && super::workload_alone(case).0 != Outcome::Completed;
    if h.heals && !alone_stalls() {
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
            return Err(violation(format!(
                "{faults}, yet the run {} at {}{}",
                r.outcome,
                fmt_ms(end),
                if r.explanation.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.explanation.join("; "))
                }
            ))
            .ranks(r.blocked.iter().map(|b| b.rank)));
        }
        if end > h.deadline {
            return Err(violation(format!(
                "every fault heals in time, yet the run completed only at {}, after the \
                 deadline {} (last fault end + hold-back + twice the workload's cost bound)",
                fmt_ms(end),
                fmt_ms(h.deadline)
            )));
        }
        return Ok(());
    }
    match r.outcome {
        _ if finished => Ok(()),
        Outcome::Stalled => stall_diagnosed(run),
        // the scenario's time limit is shorter than its workload, faults or not; or an
        // elastic group, too quick to suspect or to time out for its network, keeps trying to
        // rebuild
        Outcome::TimedOut
            if own_timing_too_tight(&case.scenario)
                || super::workload_alone(case).0 == Outcome::TimedOut =>
        {
            Ok(())
        }
        _ => Err(violation(format!(
            "the run neither completed nor stalled by its time limit ({}): it was still \
             making progress, or livelocked ({})",
            fmt_ms(end),
            h.why_not.unwrap_or_default()
        ))),
    }
}

/// A stall is diagnosed when the diagnosis names the blocked ranks, and names a root cause
/// whenever one is evident in the final state: a live rank waits for a rank that is dead
/// (preempted, or restarted and refused), paused, or on the other side of an active partition.
/// (Causes outside that core — application bugs, stragglers, a fault that ended before the
/// watchdog fired — are demanded by diagnosis soundness.)
fn stall_diagnosed(run: &Run) -> Result<(), Violation> {
    let fold = &run.fold;
    let r = &run.report;
    let end = fmt_ms(run.result.end_ns);
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
        return Err(violation(format!(
            "the run stalled at {end} with ranks waiting in collectives, but the diagnosis \
             names neither a root cause nor a blocked rank"
        ))
        .ranks(waiting.iter().map(|(rank, _)| *rank)));
    }
    let separated = |a: u32, b: u32| fold.active_faults().any(|f| f.separates(a, b));
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
            return Err(violation(format!(
                "the run stalled at {end} with rank {rank} waiting for rank {w}, which {why}, \
                 yet the diagnosis names no root cause"
            ))
            .ranks([rank, w]));
        }
    }
    Ok(())
}

/// When every fault of `s` is over — every timed fault ended, every preempted rank restarted
/// — or None when one never is (a permanent fault, an application bug) or when that time is
/// not known before the run (a fault triggered at a call).
fn healed_at(s: &Scenario) -> Option<Nanos> {
    s.faults.iter().try_fold(0, |last: Nanos, f| {
        let end = match f {
            Fault::Preempt { restart_after, .. } => f.at()?.0 + restart_after.as_ref()?.0,
            _ => f.at()?.0 + f.duration()?.0,
        };
        Some(last.max(end))
    })
}

/// Once every fault is over, an elastic group finishes (`completed` or `rebuilt`) rather than
/// stall or hit its time limit — unless the quorum is truly gone: fewer than a strict majority
/// of the latest generation's members are still the processes that installed it (the others
/// died, and a restarted process has lost its promises), so no rendezvous may ever form the
/// next one. That is the one permanent fault a healed schedule can leave behind, and a
/// diagnosed stall. A workload that does not finish even without its faults, a group whose
/// failure detector is too quick for its network to ever rebuild
/// ([`rebuild_impossible`](crate::check::bound::rebuild_impossible)), or one whose collective
/// timeout leaves a call no slack ([`timeout_too_short`](crate::check::bound::timeout_too_short))
/// is held only to a diagnosed stall.
fn elastic_group_finishes(case: &Case, run: &Run) -> Result<(), Violation> {
    let Some(elastic) = &case.scenario.group.elastic else {
        return Ok(());
    };
    match run.result.outcome {
        Outcome::Completed | Outcome::Rebuilt => Ok(()),
        // a workload that cannot finish without any fault (a timeout shorter than its calls),
        // or a group that cannot rebuild on this network, is held to what `workload_finishes`
        // demands of a run that does not heal
        Outcome::Stalled | Outcome::TimedOut
            if own_timing_too_tight(&case.scenario)
                || !matches!(
                    super::workload_alone(case).0,
                    Outcome::Completed | Outcome::Rebuilt
                ) =>
        {
            Ok(())
        }
        Outcome::Stalled
            if elastic.rendezvous == RendezvousKind::Quorum
                && quorum_gone(case.scenario.world.size, run.events()) =>
        {
            Ok(())
        }
        o => Err(violation(format!(
            "the run ended {o} at {} after every fault had healed",
            fmt_ms(run.result.end_ns)
        ))),
    }
}

/// Once every fault is over and the last node joined or left, every registry query made after
/// the views had time to settle — a silent peer detected, then a state exchange,
/// retransmitted if lost — sees exactly the live nodes with a member in the group.
fn registry_views_converge(case: &Case, run: &Run, healed: Nanos) -> Result<(), Violation> {
    let Some(registry) = resolve::registry(&case.scenario) else {
        return Ok(());
    };
    let last_change = registry
        .steps
        .iter()
        .filter(|st| matches!(st.action, RegistryAction::Join | RegistryAction::Leave))
        .map(|st| st.at)
        .max()
        .unwrap_or(0);
    let detection = Nanos::from(registry.heartbeat_misses + 1) * registry.heartbeat_interval;
    let exchange = 3 * case.scenario.network.retransmit_timeout.0;
    let settled = healed.max(last_change) + detection + exchange;
    registry_converged(run.events(), settled)
        .map_err(|(message, ranks)| violation(message).ranks(ranks))
}
