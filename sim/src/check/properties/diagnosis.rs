//! **diagnosis_sound**: every root cause the diagnosis names is justified by a fault of the
//! scenario.

use super::{Property, Violation};
use crate::check::{Case, Run};
use crate::diagnose::Diagnosis;
use crate::engine::touched_ranks;
use crate::report::normalize_cause;
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
            causes.join(", ")
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

fn ranks_of(list: &str) -> Result<Vec<u32>, String> {
    list.split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("`{x}` is not a rank"))
        })
        .collect()
}

/// Whether one root cause is justified by a fault of `scenario`; if not, why, and the ranks
/// it names.
fn cause_sound(scenario: &Scenario, cause: &str) -> Result<(), (String, Vec<u32>)> {
    let faults = &scenario.faults;
    let unsound = |why: &str| Err((why.to_string(), Vec::new()));
    if cause == "quorum_lost" {
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
    let Some((kind, rest)) = cause.split_once(':') else {
        return unsound("not in the root-cause vocabulary");
    };
    if kind == "partitioned" {
        let want = normalize_cause(cause);
        let found = faults.iter().any(|f| match f {
            Fault::Partition { sides, .. } => {
                let s: Vec<String> = sides.iter().map(|s| join(s)).collect();
                normalize_cause(&format!("partitioned:{}", s.join("|"))) == want
            }
            _ => false,
        });
        return if found {
            Ok(())
        } else {
            unsound("no partition of the scenario has these sides")
        };
    }
    let ranks = ranks_of(rest).map_err(|e| (e, Vec::new()))?;
    if kind == "deadlock" {
        for r in &ranks {
            if !faults.iter().any(|f| touched_ranks(f).contains(r)) {
                return Err((format!("no fault touched rank {r}"), vec![*r]));
            }
        }
        return Ok(());
    }
    let [r] = ranks.as_slice() else {
        return Err(("names more than one rank".into(), ranks));
    };
    let r = *r;
    let ok = faults.iter().any(|f| match (kind, f) {
        ("preempted", Fault::Preempt { rank, .. }) => *rank == r,
        ("paused", Fault::Pause { rank, .. }) => *rank == r,
        ("mismatch" | "skipped", Fault::Mismatch { rank, .. } | Fault::Skip { rank, .. }) => {
            *rank == r
        }
        ("hung", Fault::Hang { rank, .. }) => *rank == r,
        ("slow", Fault::Slow { .. } | Fault::Delay { .. } | Fault::Loss { .. }) => {
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
