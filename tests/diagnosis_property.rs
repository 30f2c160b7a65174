//! The diagnosis_sound property (docs/properties.md) under proptest-generated fault schedules
//! with application bugs, and proof that it fails on deliberately broken diagnosers.
//!
//! Case count: 32 by default (CI-sized), `PROPTEST_CASES=N` for more; the RNG seed is fixed
//! unless `PROPTEST_RNG_SEED=S` is set. A failure prints the scenario file that reproduces it.

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use ringside_sim::check::strategy::{bugs, config};
use ringside_sim::check::{Property, Run};
use ringside_sim::diagnose::{diagnose, Cause, Diagnosis, Fold, RootCause};
use ringside_sim::proto::Rank;

proptest! {
    #![proptest_config(config())]

    /// Every stall's root causes name ranks or links that a fault really touched.
    #[test]
    fn diagnosis_is_sound(text in bugs::scenarios()) {
        let case = text.case();
        let run = case.run();
        if let Err(v) = Property::DiagnosisSound.check(&case, &run) {
            prop_assert!(
                false,
                "{v}\noutcome {}, blocked {:?}, root causes {:?}",
                run.result.outcome,
                run.diagnosis.blocked_ranks(),
                run.diagnosis.root_causes()
            );
        }
    }
}

/// Checks diagnosis soundness on every generated case, with the diagnosis of each run
/// replaced by what `diagnoser` makes of the run's final state: the first violation.
fn check_with(diagnoser: fn(&Fold) -> Diagnosis) -> Result<(), String> {
    let mut runner = TestRunner::new(config());
    let result = runner.run(&bugs::scenarios(), |text| {
        let case = text.case();
        let mut run: Run = case.run();
        run.diagnosis = diagnoser(&run.fold);
        Property::DiagnosisSound
            .check(&case, &run)
            .map_err(|v| TestCaseError::fail(v.to_string()))
    });
    result.map_err(|e| e.to_string())
}

/// A broken diagnoser: it blames the lowest rank that no timed fault touched (as the trace
/// shows faults) for every stall, as a preemption.
fn blame_a_healthy_rank(fold: &Fold) -> Diagnosis {
    let mut d = diagnose(fold);
    if d.causes.is_empty() {
        return d;
    }
    let touched: Vec<u32> = fold.faults.iter().flat_map(|f| f.ranks.clone()).collect();
    if let Some(h) = (0..fold.ranks.len() as u32).find(|r| !touched.contains(r)) {
        let blocked = d.blocked_ranks();
        d.causes = vec![Cause {
            cause: RootCause::Preempted(Rank(h)),
            text: format!("rank {h} was preempted"),
            ranks: vec![h],
            blocked,
        }];
        for b in &mut d.blocked {
            b.causes = vec![RootCause::Preempted(Rank(h))];
        }
    }
    d
}

#[test]
fn soundness_fails_on_a_diagnoser_that_blames_a_healthy_rank() {
    let err = check_with(blame_a_healthy_rank).expect_err("the broken diagnoser must be caught");
    assert!(
        err.contains("diagnosis_sound: root cause `preempted:"),
        "{err}"
    );
    assert!(err.contains("unsound"), "{err}");
}

#[test]
fn soundness_fails_on_a_diagnoser_that_finds_nothing() {
    fn nothing(fold: &Fold) -> Diagnosis {
        let mut d = diagnose(fold);
        d.causes.clear();
        d
    }
    let err = check_with(nothing).expect_err("a stall without root causes must be caught");
    assert!(err.contains("diagnosis_sound: "), "{err}");
}

#[test]
fn soundness_fails_on_a_diagnoser_that_blames_the_timeout() {
    /// Blames every stall on the collective timeout, whatever the faults.
    fn timeout(fold: &Fold) -> Diagnosis {
        let mut d = diagnose(fold);
        if d.causes.is_empty() {
            return d;
        }
        let blocked = d.blocked_ranks();
        d.causes = vec![Cause {
            cause: RootCause::WatchdogTimeout,
            text: "the watchdog timeout is too short".into(),
            ranks: Vec::new(),
            blocked,
        }];
        for b in &mut d.blocked {
            b.causes = vec![RootCause::WatchdogTimeout];
        }
        d
    }
    let err = check_with(timeout).expect_err("blaming the timeout must be caught");
    assert!(
        err.contains("root cause `watchdog_timeout` is unsound"),
        "{err}"
    );
}
