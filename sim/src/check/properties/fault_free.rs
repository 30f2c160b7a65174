//! **fault_free_completes**: the workload of a case, run on the same code with the same seed
//! but without any of its faults, completes with every result right.
//!
//! The other properties judge a run under faults and hold a stall to a diagnosis; a stall the
//! code has by itself would pass them all. This one is never excused by a run: the only
//! scenarios it does not hold to completion are those that say so themselves, before anything
//! runs — timeouts too tight for their own network and workload
//! ([`own_timing_too_tight`]) — and those whose ranks run programs of their own
//! (`[[workload.programs]]`) when the diagnosis of the fault-free run pins its stall on one of
//! those ranks deviating from the others (`mismatch:R`, `skipped:R`, `hung:R`).

use super::{Property, Violation};
use crate::cause::RootCause;
use crate::check::bound::own_timing_too_tight;
use crate::check::{Case, Run};
use crate::run::{run_to, RunOptions, RunOutput};
use crate::scenario::{Outcome, Scenario};
use crate::units::fmt_ms;
use std::collections::BTreeSet;

fn violation(message: String) -> Violation {
    Violation::new(Property::FaultFreeCompletes, message)
}

pub(super) fn fault_free_completes(case: &Case, run: &Run) -> Result<(), Violation> {
    if own_timing_too_tight(&case.scenario) {
        return Ok(());
    }
    let alone;
    let (outcome, report, diagnosis) = if case.scenario.faults.is_empty() {
        (run.result.outcome, &run.report, &run.diagnosis)
    } else {
        let scenario = Scenario {
            faults: Vec::new(),
            ..case.scenario.clone()
        };
        let opts = RunOptions {
            mutations: case.mutations,
            ..RunOptions::seeded(case.seed)
        };
        alone = run_to(&scenario, &opts, std::io::sink())
            .expect("a run that writes nowhere cannot fail");
        let RunOutput {
            report,
            result,
            diagnosis,
            ..
        } = &alone;
        (result.outcome, report, diagnosis)
    };
    let without = if case.scenario.faults.is_empty() {
        "with no faults"
    } else {
        "without its faults"
    };
    if !matches!(outcome, Outcome::Completed | Outcome::Rebuilt) {
        let causes = diagnosis.root_causes();
        if deviating_programs(&case.scenario, &causes) {
            return Ok(());
        }
        let why = if report.explanation.is_empty() {
            String::new()
        } else {
            format!(": {}", report.explanation.join("; "))
        };
        return Err(violation(format!(
            "{without}, the workload {outcome} at {}{why}",
            fmt_ms(report.virtual_time_ns)
        ))
        .ranks(report.blocked.iter().map(|b| b.rank)));
    }
    if let Some(op) = report.ops.iter().find(|o| !o.correct) {
        return Err(violation(format!(
            "{without}, the workload completed, but {} #{} ({}, iteration {} op {}) has a \
             wrong result",
            op.op, op.seq, op.algorithm, op.iteration, op.index
        )));
    }
    Ok(())
}

/// Whether every root cause of a stall is a rank that runs a program of its own
/// (`[[workload.programs]]`) issuing other calls than its peers: the workload's own bug, as
/// the scenario wrote it.
fn deviating_programs(s: &Scenario, causes: &[RootCause]) -> bool {
    let own: BTreeSet<u32> = s
        .workload
        .programs
        .iter()
        .flat_map(|p| p.ranks.iter().copied())
        .collect();
    !causes.is_empty()
        && causes.iter().all(|c| match c {
            RootCause::Mismatch(r) | RootCause::Skipped(r) | RootCause::Hung(r) => {
                own.contains(&r.0)
            }
            _ => false,
        })
}
