//! Named properties of DESIGN §5, as functions a test or `check` can call.

use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::engine::{touched_ranks, RunResult};
use crate::report::normalize_cause;
use crate::run::{run_events, RunOptions};
use crate::scenario::{Fault, Outcome, Scenario};
use crate::trace::NullRecorder;

/// A diagnosis procedure: the real one is [`diagnose`]; tests plug in broken ones.
pub type Diagnoser = fn(&Fold) -> Diagnosis;

/// Runs `scenario` with its own seed (no trace written) and diagnoses the end state with
/// `diagnoser`.
pub fn run_diagnosed(scenario: &Scenario, diagnoser: Diagnoser) -> (RunResult, Diagnosis) {
    let (result, fold, _) = run_events(scenario, &RunOptions::default(), &mut NullRecorder);
    let d = diagnoser(&fold);
    (result, d)
}

/// The real diagnosis, as a [`Diagnoser`].
pub fn real_diagnoser(fold: &Fold) -> Diagnosis {
    diagnose(fold)
}

/// **diagnosis soundness**: every root cause names ranks (or a partition) that a fault of the
/// scenario really touched, with a fault of a kind that can cause it; every blocked rank has a
/// root cause; a completed run blocks nobody; and a stall in which some rank still waits in a
/// collective is explained by at least one root cause.
///
/// Which fault kinds justify which cause:
/// `preempted:R` a preempt of R; `paused:R` a pause of R; `partitioned:S` a partition with
/// exactly the sides S; `mismatch:R` and `skipped:R` a mismatch or skip of R (a skipped call
/// shows as a mismatched one, and back); `hung:R` a hang of R; `slow:R` a slow, delay or loss
/// fault touching R; `deadlock:R,..` every named rank touched by some fault; `quorum_lost` a
/// preempt, pause or partition.
pub fn diagnosis_sound(scenario: &Scenario, outcome: Outcome, d: &Diagnosis) -> Result<(), String> {
    let causes = d.root_causes();
    if outcome == Outcome::Completed && (!causes.is_empty() || !d.blocked.is_empty()) {
        return Err(format!(
            "the run completed, yet the diagnosis reports blocked ranks [{}] and root causes [{}]",
            join(&d.blocked_ranks()),
            causes.join(", ")
        ));
    }
    if outcome == Outcome::Stalled
        && causes.is_empty()
        && (!d.blocked.is_empty() || !d.in_progress.is_empty())
    {
        return Err(format!(
            "the run stalled with ranks [{}] waiting in collectives, but no root cause was found",
            join(
                &d.blocked_ranks()
                    .into_iter()
                    .chain(d.in_progress.iter().copied())
                    .collect::<Vec<_>>()
            )
        ));
    }
    for b in &d.blocked {
        if b.causes.is_empty() {
            return Err(format!("rank {} is blocked on no root cause", b.rank));
        }
    }
    for c in &causes {
        cause_sound(scenario, c)?;
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

/// Whether one root cause is justified by a fault of `scenario`.
fn cause_sound(scenario: &Scenario, cause: &str) -> Result<(), String> {
    let faults = &scenario.faults;
    let unsound = |why: &str| Err(format!("root cause `{cause}` is unsound: {why}"));
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
    let ranks = ranks_of(rest).map_err(|e| format!("root cause `{cause}` is unsound: {e}"))?;
    if kind == "deadlock" {
        for r in &ranks {
            if !faults.iter().any(|f| touched_ranks(f).contains(r)) {
                return unsound(&format!("no fault touched rank {r}"));
            }
        }
        return Ok(());
    }
    let [r] = ranks.as_slice() else {
        return unsound("names more than one rank");
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
        unsound(&format!("no fault that could cause it touched rank {r}"))
    }
}
