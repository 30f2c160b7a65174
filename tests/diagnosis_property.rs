//! DESIGN §5 properties under proptest-generated fault schedules, and proof that each
//! property can fail on a deliberately broken variant.
//!
//! Case count: 32 by default (CI-sized), `PROPTEST_CASES=N` for more; the RNG seed is fixed
//! unless `PROPTEST_RNG_SEED=S` is set. A failure prints the scenario file that reproduces it.

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use ringside_sim::check::properties::{diagnosis_sound, real_diagnoser, run_diagnosed};
use ringside_sim::check::strategies::{config, fault_schedule};
use ringside_sim::diagnose::{diagnose, Cause, Diagnosis, Fold, RootCause};
use ringside_sim::proto::Rank;

proptest! {
    #![proptest_config(config())]

    /// Every stall's root causes name ranks or links that a fault really touched.
    #[test]
    fn diagnosis_is_sound(case in fault_schedule()) {
        let s = case.scenario();
        let (result, d) = run_diagnosed(&s, real_diagnoser);
        if let Err(why) = diagnosis_sound(&s, result.outcome, &d) {
            prop_assert!(
                false,
                "{why}\noutcome {}, blocked {:?}, root causes {:?}",
                result.outcome,
                d.blocked_ranks(),
                d.root_causes()
            );
        }
    }
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
    let mut runner = TestRunner::new(config());
    let result = runner.run(&fault_schedule(), |case| {
        let s = case.scenario();
        let (r, d) = run_diagnosed(&s, blame_a_healthy_rank);
        diagnosis_sound(&s, r.outcome, &d).map_err(TestCaseError::fail)
    });
    let err = result.expect_err("the broken diagnoser must be caught");
    assert!(err.to_string().contains("unsound"), "{err}");
}

#[test]
fn soundness_fails_on_a_diagnoser_that_finds_nothing() {
    fn nothing(fold: &Fold) -> Diagnosis {
        let mut d = diagnose(fold);
        d.causes.clear();
        d
    }
    let mut runner = TestRunner::new(config());
    let result = runner.run(&fault_schedule(), |case| {
        let s = case.scenario();
        let (r, d) = run_diagnosed(&s, nothing);
        diagnosis_sound(&s, r.outcome, &d).map_err(TestCaseError::fail)
    });
    assert!(
        result.is_err(),
        "a stall without root causes must be caught"
    );
}
