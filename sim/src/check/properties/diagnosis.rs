//! **diagnosis_sound**: every root cause the diagnosis names is justified by a fault of the
//! scenario.

use super::{Property, Violation};
use crate::cause::{listed, RootCause};
use crate::check::{Case, Run};
use crate::diagnose::Diagnosis;
use crate::engine::touched_ranks;
use crate::proto::types::Rank;
use crate::scenario::{Fault, Outcome, Scenario};

/// Every root cause names ranks (or a partition) that a fault of the scenario really touched,
/// with a fault of a kind that can cause it; every blocked rank has a root cause; a completed
/// run blocks nobody; and a stall in which some rank still waits in a collective is explained
/// by at least one root cause. A test checks a broken diagnoser by putting its diagnosis in
/// the run.
///
/// Which fault kinds justify which cause:
/// `preempted:R` a preempt of R; `paused:R` a pause of R; `partitioned:S` a partition with
/// exactly the sides S; `mismatch:R` and `skipped:R` a mismatch or skip of R (a skipped call
/// shows as a mismatched one, and back); `hung:R` a hang of R; `slow:R` a slow, delay or loss
/// fault touching R; `deadlock:R,..` every named rank touched by some fault; `quorum_lost` a
/// preempt, pause or partition.
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
    for c in &causes {
        cause_sound(&case.scenario, c).map_err(|(why, ranks)| {
            v(format!("root cause `{c}` is unsound: {why}")).ranks(ranks)
        })?;
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
