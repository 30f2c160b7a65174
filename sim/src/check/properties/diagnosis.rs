//! **diagnosis_sound**: every root cause the diagnosis names is justified by a fault of the
//! scenario.

use super::{Property, Violation};
use crate::cause::{listed, RootCause};
use crate::check::{Case, Run};
use crate::diagnose::{Diagnosis, RankState};
use crate::engine::touched_ranks;
use crate::proto::types::Rank;
use crate::scenario::{Fault, Outcome, Scenario, Trigger};
use crate::units::Duration;

/// Every root cause names ranks (or a partition) that a fault of the scenario really touched,
/// with a fault of a kind that can cause it, or is one the workload stalls on by itself (run
/// without its faults: a rank's program with an extra call, two groups called in opposite
/// orders); every blocked rank has a root cause; a completed
/// run blocks nobody; and a stall in which some rank still waits in a collective is explained
/// by at least one root cause. A test checks a broken diagnoser by putting its diagnosis in
/// the run.
///
/// Which fault kinds justify which cause:
/// `preempted:R` a preempt of R; `paused:R` a pause of R; `partitioned:S` a partition with
/// exactly the sides S; `mismatch:R` and `skipped:R` a mismatch or skip of R (a skipped call
/// shows as a mismatched one, and back); `hung:R` a hang of R; `slow:R` a slow, delay or loss
/// fault touching R; `deadlock:R,..` every named rank touched by some fault; `quorum_lost` a
/// preempt, pause or partition; `watchdog_timeout` a collective timeout shorter than the cost
/// bound of a call of the workload (with the compute before it), or an elastic failure
/// detector too quick for the network ([`rebuild_impossible`](crate::check::bound::rebuild_impossible)).
pub(super) fn diagnosis_sound(case: &Case, run: &Run) -> Result<(), Violation> {
    let v = |message: String| Violation::new(Property::DiagnosisSound, message);
    let outcome = run.result.outcome;
    let d: &Diagnosis = &run.diagnosis;
    let causes = d.root_causes();
    if outcome == Outcome::Completed && (!causes.is_empty() || !d.blocked.is_empty()) {
        return Err(v(format!(
            "the run completed, yet the diagnosis reports blocked ranks [{}] and root causes [{}]",
            join(&d.blocked_ranks()),
            listed(&causes)
        ))
        .ranks(d.blocked_ranks()));
    }
    if outcome == Outcome::Stalled
        && causes.is_empty()
        && (!d.blocked.is_empty() || !d.in_progress.is_empty())
    {
        let waiting: Vec<u32> = d
            .blocked_ranks()
            .into_iter()
            .chain(d.in_progress.iter().copied())
            .collect();
        return Err(v(format!(
            "the run stalled with ranks [{}] waiting in collectives, but no root cause was found",
            join(&waiting)
        ))
        .ranks(waiting));
    }
    for b in &d.blocked {
        if b.causes.is_empty() {
            return Err(v(format!("rank {} is blocked on no root cause", b.rank)).ranks([b.rank]));
        }
    }
    // the workload's own bugs (a program with an extra call, two groups called in opposite
    // orders) stall it without any fault: what its fault-free run names is its own doing
    let mut own: Option<Vec<RootCause>> = None;
    for c in &causes {
        if let Err((why, ranks)) = cause_sound(&case.scenario, c) {
            let own = own.get_or_insert_with(|| super::workload_alone(case).1);
            if !own.contains(c) {
                return Err(v(format!("root cause `{c}` is unsound: {why}")).ranks(ranks));
            }
        }
    }
    Ok(())
}

fn join(r: &[u32]) -> String {
    r.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether one root cause is justified by a fault of `scenario`; if not, why, and the ranks
/// it names.
fn cause_sound(scenario: &Scenario, cause: &RootCause) -> Result<(), (String, Vec<u32>)> {
    let faults = &scenario.faults;
    let unsound = |why: &str| Err((why.to_string(), Vec::new()));
    if *cause == RootCause::QuorumLost {
        return if faults.iter().any(|f| {
            matches!(
                f,
                Fault::Preempt { .. } | Fault::Pause { .. } | Fault::Partition { .. }
            )
        }) {
            Ok(())
        } else {
            unsound("no rank died, froze or was cut off")
        };
    }
    if let RootCause::Partitioned(_) = cause {
        let found = faults.iter().any(|f| match f {
            Fault::Partition { sides, .. } => {
                let s = sides.iter().map(|s| s.iter().copied().map(Rank).collect());
                RootCause::Partitioned(s.collect()) == *cause
            }
            _ => false,
        });
        return if found {
            Ok(())
        } else {
            unsound("no partition of the scenario has these sides")
        };
    }
    if let RootCause::Deadlock(ranks) = cause {
        for Rank(r) in ranks {
            if !faults.iter().any(|f| touched_ranks(f).contains(r)) {
                return Err((format!("no fault touched rank {r}"), vec![*r]));
            }
        }
        return Ok(());
    }
    if *cause == RootCause::WatchdogTimeout {
        return if crate::check::bound::own_timing_too_tight(scenario) {
            Ok(())
        } else {
            unsound(
                "the collective timeout is longer than any call of the workload takes, and no \
                 failure detector is too quick for the network",
            )
        };
    }
    let Some(Rank(r)) = cause.rank() else {
        return unsound("no simulated fault causes it");
    };
    let ok = faults.iter().any(|f| match (cause, f) {
        (RootCause::Preempted(_), Fault::Preempt { rank, .. }) => *rank == r,
        (RootCause::Paused(_), Fault::Pause { rank, .. }) => *rank == r,
        (
            RootCause::Mismatch(_) | RootCause::Skipped(_),
            Fault::Mismatch { rank, .. } | Fault::Skip { rank, .. },
        ) => *rank == r,
        (RootCause::Hung(_), Fault::Hang { rank, .. }) => *rank == r,
        (RootCause::Slow(_), Fault::Slow { .. } | Fault::Delay { .. } | Fault::Loss { .. }) => {
            touched_ranks(f).contains(&r)
        }
        _ => false,
    });
    if ok {
        Ok(())
    } else {
        Err((
            format!("no fault that could cause it touched rank {r}"),
            vec![r],
        ))
    }
}

/// **diagnosis_complete**: every injected fault that still holds a rank or a link that a
/// blocked rank transitively waits for is named among the root causes. A stall blamed on one
/// dead rank while a second one, just as dead and just as waited for, goes unnamed tells half
/// the story.
///
/// A rank with a fault is named when any root cause names it (a rank that was paused while it
/// called the wrong collective is blamed for one of the two). The faults held to it are those
/// whose effect lasts to the end of the run and whose cause
/// has one name: a preempted rank that never restarts and is dead at the end (`preempted:R`),
/// a pause that has not ended (`paused:R`), a partition that has not healed and cuts a wait
/// (`partitioned:S`). Who waits for whom comes from the diagnosis' wait-for edges; when a
/// quorum is lost, every member of the generation a rendezvous rebuilds is waited for (it
/// needs them all), not a rank the group had already gone on without.
pub(super) fn diagnosis_complete(case: &Case, run: &Run) -> Result<(), Violation> {
    let d: &Diagnosis = &run.diagnosis;
    if d.blocked.is_empty() {
        return Ok(());
    }
    let fold = &run.fold;
    let causes = d.root_causes();
    let n = fold.ranks.len() as u32;
    // the blocked ranks and everyone they wait for, transitively
    let mut waited: std::collections::BTreeSet<u32> = d.blocked_ranks().into_iter().collect();
    if causes.contains(&RootCause::QuorumLost) {
        // a rendezvous needs every member of the generation it rebuilds (the world, before
        // the first one); a rank the group went on without earlier is no member of it
        let m = &fold.membership;
        let mut rebuilding = m.waiting.keys().chain(m.rendezvous.keys()).peekable();
        if rebuilding.peek().is_none() {
            waited.extend(0..n);
        }
        for a in rebuilding {
            let generation = m
                .generation_of
                .get(a)
                .and_then(|g| m.generations.iter().find(|x| x.generation == *g));
            match generation {
                Some(g) => waited.extend(g.members.iter().copied()),
                None => waited.extend(0..n),
            }
        }
    }
    loop {
        let before = waited.len();
        for (a, b) in d.edges() {
            if waited.contains(&a) {
                waited.insert(b);
            }
        }
        if waited.len() == before {
            break;
        }
    }
    let t = fold.t;
    // a fault triggered at a call began at a time the scenario does not say: the trace's
    // state of the rank (dead, paused) is what tells whether it holds
    let began = |at: Trigger| at.time().is_none_or(|at| at.0 <= t);
    let holds = |at: Trigger, duration: Option<Duration>| match at.time() {
        Some(at) => at.0 <= t && duration.is_none_or(|d| at.0.saturating_add(d.0) > t),
        None => true,
    };
    for (i, f) in case.scenario.faults.iter().enumerate() {
        let (want, ranks) = match f {
            Fault::Preempt {
                rank,
                at,
                restart_after: None,
            } if began(*at)
                && waited.contains(rank)
                && fold
                    .ranks
                    .get(*rank as usize)
                    .is_some_and(|v| v.state == RankState::Dead) =>
            {
                (RootCause::Preempted(Rank(*rank)), vec![*rank])
            }
            Fault::Pause { rank, at, duration }
                if holds(*at, Some(*duration))
                    && waited.contains(rank)
                    && fold.ranks.get(*rank as usize).is_some_and(|v| v.paused) =>
            {
                (RootCause::Paused(Rank(*rank)), vec![*rank])
            }
            Fault::Partition {
                sides,
                at,
                duration,
                oneway,
            } if holds(*at, *duration) => {
                let side = |r: u32| sides.iter().position(|s| s.contains(&r));
                let cuts = |a: u32, b: u32| match (side(a), side(b)) {
                    (Some(x), Some(y)) if x != y => !*oneway || (x == 0) != (y == 0),
                    _ => false,
                };
                let cut: Vec<u32> = d
                    .edges()
                    .filter(|&(a, b)| waited.contains(&a) && (cuts(a, b) || cuts(b, a)))
                    .flat_map(|(a, b)| [a, b])
                    .collect();
                if cut.is_empty() {
                    continue;
                }
                let s = sides.iter().map(|s| s.iter().copied().map(Rank).collect());
                (RootCause::Partitioned(s.collect()), cut)
            }
            _ => continue,
        };
        // a rank with two faults (paused, and calling the wrong collective) is named once,
        // by the cause the diagnosis judged first: naming the rank is enough
        let named = causes.contains(&want)
            || (!matches!(want, RootCause::Partitioned(_))
                && causes
                    .iter()
                    .any(|c| ranks.iter().all(|r| c.ranks().contains(&Rank(*r)))));
        if !named {
            return Err(Violation::new(
                Property::DiagnosisComplete,
                format!(
                    "faults[{i}] ({}) holds a rank or link that blocked ranks [{}] wait for, \
                     but `{want}` is not among the root causes [{}]",
                    f.kind(),
                    join(&d.blocked_ranks()),
                    listed(&causes)
                ),
            )
            .ranks(ranks));
        }
    }
    Ok(())
}
