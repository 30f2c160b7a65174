//! Property testing: proptest strategies for scenarios and fault schedules, the registry of
//! properties (docs/properties.md states them), and the swarm behind `ringside check`.
//!
//! - [`strategy`]: worlds, networks, workloads and fault schedules of every kind, as proptest
//!   strategies whose values always pass validation and the engine's support gate; small jobs
//!   with application bugs on a minority of ranks, for the diagnosis; elastic jobs and
//!   registries whose faults heal;
//! - [`properties`]: the registry — every [`Property`] has a name, a kind (safety or
//!   liveness) and a check of a [`Case`] and its [`Run`] that returns a [`Violation`];
//! - [`bound`]: the cost-model bounds the liveness property uses;
//! - [`shrink`]: structural shrinking of a failing scenario, after proptest's;
//! - [`swarm`]: many seeded cases, sharded, under a wall-clock budget; a failure is shrunk to
//!   a minimal scenario and written with its trace, ready to replay;
//!
//! A case runs once, and its [`Run`] keeps what the properties look at: the folded state, the
//! diagnosis, the report and the trace (whose events are read back when a property needs
//! them). Only the determinism property runs a case again, which is its point.
//!
//! Other crates use the same pieces in their own tests. A property test of the protocol under
//! random fault schedules:
//!
//! ```
//! use proptest::prelude::*;
//! use ringside_sim::check::{strategy, Gen, Property};
//!
//! proptest! {
//!     #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]
//!
//!     // in a test crate, put `#[test]` on this function
//!     fn collectives_survive_faults(case in strategy::cases(&Gen::ranks(4))) {
//!         let run = case.run();
//!         for p in Property::all() {
//!             if let Err(v) = p.check(&case, &run) {
//!                 prop_assert!(false, "{v}\n{:#?}", case.scenario);
//!             }
//!         }
//!     }
//! }
//! # collectives_survive_faults();
//! ```
//!
//! Deliberately broken variants ([`Mutations`]: planted bugs in the protocol code, or a
//! nondeterministic engine) exist so that tests can prove each property fails when it should;
//! a [`Case`] carries the ones it runs.

pub mod bound;
pub mod properties;
pub mod shrink;
pub mod strategy;
pub mod swarm;

pub use crate::proto::mutation::{Mutation, Mutations};
pub use properties::{Kind, Property, UserProperty, Violation};
pub use strategy::Gen;

use crate::budget::Limits;
use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::engine::{RunResult, Stats, StopReason};
use crate::report::RunReport;
use crate::run::{run_to, RunOptions, RunOutput};
use crate::scenario::{Outcome, Scenario};
use crate::trace::{Event, TraceError, TraceReader};
use crate::units::Nanos;
use std::sync::OnceLock;

/// One input of a property: a scenario, the seed it runs with, and the code it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub scenario: Scenario,
    pub seed: u64,
    /// The real code unless a test plants a bug.
    #[doc(hidden)]
    pub mutations: Mutations,
}

/// How big a case is, as shrinking measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub ranks: u32,
    pub iterations: u32,
    pub ops: usize,
    pub faults: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} rank{}, {} iteration{}, {} op{}, {} fault{}",
            self.ranks,
            s(self.ranks as usize),
            self.iterations,
            s(self.iterations as usize),
            self.ops,
            s(self.ops),
            self.faults,
            s(self.faults)
        )
    }
}

impl Case {
    /// The case of `scenario` with its own seed, on the real code.
    pub fn new(scenario: Scenario) -> Case {
        Case {
            seed: scenario.seed,
            scenario,
            mutations: Mutations::NONE,
        }
    }

    /// The same case with `mutations` planted.
    #[doc(hidden)]
    pub fn with_mutations(mut self, mutations: impl Into<Mutations>) -> Case {
        self.mutations = mutations.into();
        self
    }

    /// The options of a run of the case: its seed and its mutations.
    pub fn options(&self) -> RunOptions<'static> {
        RunOptions {
            mutations: self.mutations,
            ..RunOptions::seeded(self.seed)
        }
    }

    /// Runs the case, once, keeping what the properties look at.
    pub fn run(&self) -> Run {
        let mut trace = Vec::new();
        let output = self.run_into(&mut trace);
        Run::new(output, trace)
    }

    /// Runs the case, writing its trace into `trace`. A run that panics leaves there the trace
    /// up to the panic.
    pub(crate) fn run_into(&self, trace: &mut Vec<u8>) -> RunOutput {
        self.run_within(trace, Limits::default())
    }

    /// [`Case::run_into`] within `limits`.
    pub(crate) fn run_within(&self, trace: &mut Vec<u8>, limits: Limits<'static>) -> RunOutput {
        let opts = RunOptions {
            limits,
            ..self.options()
        };
        run_to(&self.scenario, &opts, trace).expect("a run that writes into memory cannot fail")
    }

    pub fn size(&self) -> Size {
        Size {
            ranks: self.scenario.world.size,
            iterations: self.scenario.workload.iterations,
            ops: self.scenario.workload.ops.len(),
            faults: self.scenario.faults.len(),
        }
    }
}

/// The one run of a case, with everything the properties look at.
pub struct Run {
    pub report: RunReport,
    pub result: RunResult,
    /// The state folded from every event.
    pub fold: Fold,
    pub diagnosis: Diagnosis,
    /// The trace, as a trace file holds it: header, event lines, footer.
    pub trace: Vec<u8>,
    /// Every event, read back from the trace the first time a property asks.
    events: OnceLock<Vec<(Nanos, Event)>>,
}

impl Run {
    fn new(output: RunOutput, trace: Vec<u8>) -> Run {
        let RunOutput {
            report,
            result,
            fold,
            diagnosis,
        } = output;
        Run {
            report,
            result,
            fold,
            diagnosis,
            trace,
            events: OnceLock::new(),
        }
    }

    /// The run a trace tells, written by any driver (`ringside run`, `launch`, `torchrun`, or
    /// a program's own), with the case its header describes: the state folded from its events,
    /// the diagnosis of where it ended, and the report. The properties that judge a run from
    /// what it recorded hold it as they hold the engine's runs; `determinism` and
    /// `fault_free_completes` run the case again, in the engine. A trace without its footer is
    /// refused, naming where it stops: how its run ended is not known.
    pub fn from_trace(trace: Vec<u8>, file: &str) -> Result<(Case, Run), TraceError> {
        let mut reader = TraceReader::new(trace.as_slice(), file)?;
        let scenario = reader.header.scenario.clone();
        let seed = reader.header.seed;
        let mut fold = Fold::new(&scenario);
        let mut events = Vec::new();
        while let Some((t, ev)) = reader.next_event()? {
            fold.apply(t, &ev);
            events.push((t, ev));
        }
        let Some(footer) = reader.footer().cloned() else {
            let why = reader.incomplete().unwrap_or_default();
            return Err(TraceError {
                file: file.to_string(),
                line: reader.line_no(),
                message: format!("cannot judge the run of a trace without its footer ({why})"),
            });
        };
        fold.outcome = Some(footer.outcome);
        let diagnosis = diagnose(&fold);
        let stop = match (footer.budget, footer.outcome) {
            (Some(b), _) => StopReason::OutOfBudget(b),
            (None, Outcome::Completed | Outcome::Rebuilt) => StopReason::AllFinished,
            (None, Outcome::TimedOut) => StopReason::TimeLimit,
            (None, Outcome::Stalled) => fold
                .first_abort
                .map_or(StopReason::Quiescent, |(_, rank)| StopReason::Watchdog {
                    rank,
                }),
        };
        let result = RunResult {
            outcome: footer.outcome,
            end_ns: fold.t,
            stop,
            stats: Stats {
                events: footer.events,
                messages_sent: fold.messages_sent,
                messages_delivered: fold.messages_delivered,
                messages_dropped: fold.messages_dropped,
            },
        };
        let mut report = crate::report::build(
            &scenario.name,
            seed,
            footer.outcome,
            fold.t,
            &fold,
            &diagnosis,
            footer.digest.clone(),
            scenario.expect.as_ref(),
        );
        report.budget = footer.budget;
        let run = Run {
            report,
            result,
            fold,
            diagnosis,
            trace,
            events: OnceLock::from(events),
        };
        let case = Case {
            scenario,
            seed,
            mutations: Mutations::NONE,
        };
        Ok((case, run))
    }

    /// Writes the run's trace to `path`, as `ringside run --trace` would: `replay`, `explain`,
    /// `tui` and [`Run::from_trace`] read it (zstd-compressed when the name ends in `.zst`).
    pub fn write_trace(&self, path: &std::path::Path) -> std::io::Result<()> {
        let named = |e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        };
        if !crate::trace::is_zstd_path(path) {
            return std::fs::write(path, &self.trace).map_err(named);
        }
        #[cfg(feature = "zstd")]
        {
            let f = std::fs::File::create(path).map_err(named)?;
            zstd::stream::copy_encode(self.trace.as_slice(), f, crate::run::ZSTD_LEVEL)
                .map_err(named)
        }
        #[cfg(not(feature = "zstd"))]
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("cannot write {}: {}", path.display(), crate::trace::NO_ZSTD),
        ))
    }

    /// Every event of the run, in order (the final diagnosis included, as in a trace).
    pub fn events(&self) -> &[(Nanos, Event)] {
        self.events.get_or_init(|| {
            let mut reader = TraceReader::new(self.trace.as_slice(), "(in memory)")
                .expect("a trace just written has a header");
            let mut events = Vec::new();
            while let Some(e) = reader
                .next_event()
                .unwrap_or_else(|e| panic!("a trace just written reads back: {e}"))
            {
                events.push(e);
            }
            events
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::VecRecorder;

    #[test]
    fn the_events_read_back_from_a_run_are_those_the_engine_emitted() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios")
            .join("elastic-restart-rejoins.toml");
        let case = Case::new(crate::scenario::load(&path).expect("a shipped scenario"));
        let run = case.run();
        let mut rec = VecRecorder::default();
        crate::run::run_events(&case.scenario, &case.options(), &mut rec);
        assert!(rec.events.len() > 100, "{}", rec.events.len());
        assert!(run.events() == rec.events.as_slice());
    }
}
