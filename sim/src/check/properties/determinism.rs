//! **determinism**: the one property that runs a case again, since that is what it is about.

use super::{Property, Violation};
use crate::check::{Case, Run};
use crate::replay::{replay_reader, ReplayOutcome};
use crate::run::run_events;
use crate::trace::{DigestRecorder, TraceReader};

/// A second run of the case gives the same digest as the first, and replaying the first run's
/// trace reproduces it line for line.
pub(super) fn determinism(case: &Case, run: &Run) -> Result<(), Violation> {
    let v = |message: String| Violation::new(Property::Determinism, message);
    let digest = {
        // the digest is taken from the events, as the trace's is: no line needs writing
        let mut rec = DigestRecorder::default();
        run_events(&case.scenario, &case.options(), &mut rec);
        rec.digest.hex()
    };
    if digest != run.report.digest {
        return Err(v(format!(
            "two runs of the same scenario and seed {} gave different digests: {} and {digest}",
            case.seed, run.report.digest
        )));
    }
    let reader = TraceReader::new(run.trace.as_slice(), "(in memory)")
        .map_err(|e| v(format!("the trace just written cannot be read: {e}")))?;
    match replay_reader(reader, case.mutations) {
        // a case its wall-clock budget cut is compared as far as it went
        Ok(ReplayOutcome::Identical { .. } | ReplayOutcome::WallClockCut { .. }) => Ok(()),
        Ok(ReplayOutcome::Diverged {
            line,
            expected,
            actual,
        }) => Err(v(format!(
            "replaying the trace diverged at line {line}:\n  recorded: {expected}\n  replayed: {actual}"
        ))),
        Err(e) => Err(v(format!("the trace just written cannot be replayed: {e}"))),
    }
}
