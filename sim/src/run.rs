//! Running a scenario end to end: engine, trace, diagnosis, report.

use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::engine::{Engine, RunResult};
use crate::proto::mutation::Mutations;
use crate::report::{self, RunReport};
use crate::scenario::Scenario;
use crate::trace::{Event, Recorder, TraceWriter};
use crate::units::Nanos;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Feeds every event to an outer recorder and to the fold the report is built from.
struct Tee<'a> {
    outer: &'a mut dyn Recorder,
    fold: &'a mut Fold,
}

impl Recorder for Tee<'_> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.outer.record(t, ev);
        self.fold.apply(t, ev);
    }
}

/// Options of one run.
#[derive(Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Writes the trace there ([`run`]; [`run_events`] hands its events to its recorder).
    pub trace: Option<&'a Path>,
    /// Stops the run early when set (Ctrl-C); the trace is still flushed, without a footer.
    pub interrupt: Option<&'a AtomicBool>,
    /// Bugs planted on purpose, to show that a property catches them: the checker's and tests'
    /// business (empty, the default: the real code).
    pub mutations: Mutations,
}

impl RunOptions<'_> {
    /// The options of a run of the real code with `seed`.
    pub fn seeded(seed: u64) -> Self {
        RunOptions {
            seed: Some(seed),
            ..RunOptions::default()
        }
    }
}

/// A run's event stream without the footer: what the engine emits, then the final diagnosis.
/// This is exactly the sequence of event lines a trace holds, so `replay` uses it too.
pub fn run_events(
    scenario: &Scenario,
    opts: &RunOptions,
    rec: &mut dyn Recorder,
) -> (RunResult, Fold, Diagnosis) {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut fold = Fold::new(scenario);
    let result = {
        let mut tee = Tee {
            outer: rec,
            fold: &mut fold,
        };
        let mut engine = Engine::new(scenario, seed, opts.mutations, &mut tee);
        engine.run_until_interrupted(opts.interrupt)
    };
    fold.t = result.end_ns;
    // as a trace's footer tells `explain`
    fold.outcome = Some(result.outcome);
    let diagnosis = diagnose(&fold);
    let ev = Event::Diagnosis {
        blocked: diagnosis.blocked_ranks(),
        root_causes: diagnosis.root_causes(),
        stragglers: diagnosis.straggler_names(),
    };
    rec.record(result.end_ns, &ev);
    fold.apply(result.end_ns, &ev);
    (result, fold, diagnosis)
}

/// A finished run.
pub struct RunOutput {
    pub report: RunReport,
    pub result: RunResult,
    pub fold: Fold,
    pub diagnosis: Diagnosis,
}

/// Runs `scenario` and builds its report; writes the trace when asked.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> io::Result<RunOutput> {
    match opts.trace {
        Some(path) => {
            let f = File::create(path).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
            })?;
            run_to(scenario, opts, f)
        }
        None => run_to(scenario, opts, io::sink()),
    }
}

/// Like [`run`], writing the trace into `out` (the checker keeps it in memory).
#[doc(hidden)]
pub fn run_to<W: io::Write>(
    scenario: &Scenario,
    opts: &RunOptions,
    out: W,
) -> io::Result<RunOutput> {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut writer = TraceWriter::new(out, scenario, seed)?;
    let (result, fold, diagnosis) = run_events(scenario, opts, &mut writer);
    let interrupted = opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed));
    let digest = if interrupted {
        writer.flush()?;
        writer.digest().hex()
    } else {
        writer.finish(result.outcome)?.hex()
    };
    let report = report::build(
        &scenario.name,
        seed,
        result.outcome,
        result.end_ns,
        &fold,
        &diagnosis,
        digest,
        scenario.expect.as_ref(),
    );
    Ok(RunOutput {
        report,
        result,
        fold,
        diagnosis,
    })
}

/// The digest of a run without writing a trace.
pub fn digest_of(scenario: &Scenario, seed: u64) -> String {
    let mut writer = TraceWriter::new(io::sink(), scenario, seed).expect("a sink never fails");
    run_events(scenario, &RunOptions::seeded(seed), &mut writer);
    writer.digest().hex()
}
