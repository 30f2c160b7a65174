//! Running a scenario end to end: engine, trace, diagnosis, report.

use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::engine::{Engine, RunResult, Variant};
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

/// A run's event stream without the footer: what the engine emits, then the final diagnosis.
/// This is exactly the sequence of event lines a trace holds, so `replay` uses it too.
pub fn run_events(
    scenario: &Scenario,
    seed: u64,
    rec: &mut dyn Recorder,
    interrupt: Option<&AtomicBool>,
) -> (RunResult, Fold, Diagnosis) {
    run_events_with(scenario, seed, rec, interrupt, Variant::default())
}

/// Like [`run_events`], running a deliberately broken `variant` (tests only).
#[doc(hidden)]
pub fn run_events_with(
    scenario: &Scenario,
    seed: u64,
    rec: &mut dyn Recorder,
    interrupt: Option<&AtomicBool>,
    variant: Variant,
) -> (RunResult, Fold, Diagnosis) {
    let mut fold = Fold::new(scenario);
    let result = {
        let mut tee = Tee {
            outer: rec,
            fold: &mut fold,
        };
        let mut engine = Engine::with_variant(scenario, seed, &mut tee, variant);
        engine.run_until_interrupted(interrupt)
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

/// Options of one run.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Writes the trace there.
    pub trace: Option<&'a Path>,
    /// Stops the run early when set (Ctrl-C); the trace is still flushed, without a footer.
    pub interrupt: Option<&'a AtomicBool>,
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
    run_with(scenario, opts, Variant::default())
}

/// Like [`run`], running a deliberately broken `variant` (tests only).
#[doc(hidden)]
pub fn run_with(scenario: &Scenario, opts: &RunOptions, variant: Variant) -> io::Result<RunOutput> {
    match opts.trace {
        Some(path) => {
            let f = File::create(path).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
            })?;
            run_to(scenario, opts, f, variant)
        }
        None => run_to(scenario, opts, io::sink(), variant),
    }
}

/// Like [`run_with`], writing the trace into `out` (the checker keeps it in memory).
#[doc(hidden)]
pub fn run_to<W: io::Write>(
    scenario: &Scenario,
    opts: &RunOptions,
    out: W,
    variant: Variant,
) -> io::Result<RunOutput> {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut writer = TraceWriter::new(out, scenario, seed)?;
    let (result, fold, diagnosis) =
        run_events_with(scenario, seed, &mut writer, opts.interrupt, variant);
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
    let (result, _, _) = run_events(scenario, seed, &mut writer, None);
    let _ = result;
    writer.digest().hex()
}
