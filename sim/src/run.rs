//! Running a scenario end to end: engine, trace, diagnosis, report.

use crate::budget::{Limits, DEFAULT_MAX_MEMORY};
use crate::diagnose::deferred::Deferred;
use crate::diagnose::{diagnose, Diagnosis, Fold};
use crate::engine::{Engine, RunResult};
use crate::proto::event::AbortReason;
use crate::proto::mutation::Mutations;
use crate::proto::StepEvent;
use crate::report::{self, RunReport};
use crate::scenario::Scenario;
use crate::trace::{is_zstd_path, DigestRecorder, Event, Level, Recorder, Sent, TraceWriter};
use crate::units::Nanos;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Feeds every event to an outer recorder and to the fold the report is built from (the
/// outer recorder's type is known here, so that the digest a run without a trace takes is
/// called directly). Steps and sends reach the fold through [`Deferred`], which writes them
/// back before any other event is folded.
struct Tee<'a, R: Recorder + ?Sized> {
    outer: &'a mut R,
    fold: &'a mut Fold,
    deferred: Deferred,
    progress: Option<Progress<'a>>,
    /// An application-driven run goes on after a watchdog fails a call (the program's error
    /// handling runs): the state when the first one fired, which is the stall to diagnose.
    first_stall: Option<Option<(Nanos, Fold)>>,
}

/// Told the virtual time reached and the events so far, every
/// [`TICK_EVERY`](crate::trace::TICK_EVERY) events the engine processes.
pub type Progress<'a> = &'a (dyn Fn(Nanos, u64) + Sync);

impl<R: Recorder + ?Sized> Recorder for Tee<'_, R> {
    #[inline(always)]
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.outer.record(t, ev);
        self.deferred.write_back(self.fold);
        self.fold.apply(t, ev);
        if let (Some(first @ None), Event::Abort { reason, .. }) = (&mut self.first_stall, ev) {
            if AbortReason::text_is_watchdog(reason) {
                *first = Some((t, self.fold.clone()));
            }
        }
    }

    #[inline(always)]
    fn tick(&mut self, t: Nanos) {
        if let Some(p) = self.progress {
            p(t, self.fold.events);
        }
        self.outer.tick(t);
    }

    #[inline(always)]
    fn prefetch(&self, rank: u32) {
        self.deferred.prefetch(rank);
        self.outer.prefetch(rank);
    }

    #[inline(always)]
    fn send(&mut self, t: Nanos, s: &Sent<'static>) {
        self.outer.send(t, s);
        self.deferred.sent(self.fold, t, s);
    }

    #[inline(always)]
    fn deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        self.outer.deliver(t, id, from, to);
        self.fold.delivered(t);
    }

    #[inline(always)]
    fn step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        self.deferred.stepped(self.fold, t, rank, s);
        self.outer.step(t, rank, s);
    }
}

/// Options of one run.
#[derive(Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// Writes the trace there ([`run`]; [`run_events`] hands its events to its recorder),
    /// zstd-compressed when the name ends in `.zst`.
    pub trace: Option<&'a Path>,
    /// What the trace holds.
    pub trace_level: Level,
    /// Called as the run goes (a progress display).
    pub progress: Option<Progress<'a>>,
    /// Stops the run early when set (Ctrl-C); the trace is still flushed, without a footer.
    pub interrupt: Option<&'a AtomicBool>,
    /// Bugs planted on purpose, to show that a property catches them: the checker's and tests'
    /// business (empty, the default: the real code).
    pub mutations: Mutations,
    /// The budgets that end a run early (by default, an event budget only).
    pub limits: Limits<'a>,
    /// A real application drives the ranks (`ringside torchrun`; the scenario has `[torch]`).
    pub app: Option<&'a std::cell::RefCell<dyn crate::engine::Application + 'a>>,
    /// More fields of the trace's header (`ringside torchrun`'s `program` and `cwd`).
    pub header: Option<&'a serde_json::Map<String, serde_json::Value>>,
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
pub fn run_events<R: Recorder + ?Sized>(
    scenario: &Scenario,
    opts: &RunOptions,
    rec: &mut R,
) -> (RunResult, Fold, Diagnosis) {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut fold = Fold::new(scenario);
    if opts.mutations != Mutations::NONE {
        // a bug planted in the diagnosis reads them there
        fold.workload = Some(std::sync::Arc::new(crate::scenario::resolve::workload(
            scenario,
            scenario.seed,
            opts.mutations,
        )));
    }
    let result = {
        let mut tee = Tee {
            outer: rec,
            fold: &mut fold,
            deferred: Deferred::new(scenario.world.size),
            progress: opts.progress,
            first_stall: opts.app.map(|_| None),
        };
        let mut app = opts.app.map(|a| a.borrow_mut());
        let mut engine = Engine::new(scenario, seed, opts.mutations, &mut tee);
        if let Some(app) = app.as_mut() {
            engine.drive_by(&mut **app);
        }
        let result = engine.run_within(&opts.limits, opts.interrupt);
        drop(engine);
        tee.deferred.write_back(tee.fold);
        (result, tee.first_stall.flatten())
    };
    let (result, first_stall) = result;
    fold.t = result.end_ns;
    // as a trace's footer tells `explain`
    fold.outcome = Some(result.outcome);
    let diagnosis = match first_stall {
        // the program went on after its call failed: the stall is where the first one did
        Some((t, mut at)) if result.outcome != crate::scenario::Outcome::Completed => {
            at.t = t;
            at.outcome = Some(result.outcome);
            diagnose(&at)
        }
        _ => diagnose(&fold),
    };
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
        Some(path) if is_zstd_path(path) => run_compressed(scenario, opts, path),
        Some(path) => run_into(scenario, opts, create(path)?).map(|(out, _)| out),
        None => {
            // no trace: the digest is taken from the events themselves, and no line is formatted
            let mut rec = DigestRecorder::default();
            let (result, fold, diagnosis) = run_events(scenario, opts, &mut rec);
            let seed = opts.seed.unwrap_or(scenario.seed);
            Ok(output(
                scenario,
                seed,
                result,
                fold,
                diagnosis,
                rec.digest.hex(),
            ))
        }
    }
}

fn output(
    scenario: &Scenario,
    seed: u64,
    result: RunResult,
    fold: Fold,
    diagnosis: Diagnosis,
    digest: String,
) -> RunOutput {
    let mut report = report::build(
        &scenario.name,
        seed,
        result.outcome,
        result.end_ns,
        &fold,
        &diagnosis,
        digest,
        scenario.expect.as_ref(),
    );
    report.budget = result.stop.budget();
    RunOutput {
        report,
        result,
        fold,
        diagnosis,
    }
}

fn create(path: &Path) -> io::Result<File> {
    File::create(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display())))
}

/// The zstd level of compressed traces: fast, and about 10x smaller than the text.
#[cfg(feature = "zstd")]
pub(crate) const ZSTD_LEVEL: i32 = 3;

/// [`run`], writing a zstd-compressed trace to `path`.
#[cfg(feature = "zstd")]
fn run_compressed(scenario: &Scenario, opts: &RunOptions, path: &Path) -> io::Result<RunOutput> {
    let mut z = zstd::Encoder::new(create(path)?, ZSTD_LEVEL)?;
    if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
        // compressing beside the run, on a thread of zstd's own, rather than after every
        // block of lines the run writes
        z.multithread(1)?;
    }
    let (out, z) = run_into(scenario, opts, z)?;
    // an interrupted run's trace is a whole zstd stream too, without the footer
    z.finish()?;
    Ok(out)
}

/// Without the `zstd` feature, a compressed trace is refused before its file is created.
#[cfg(not(feature = "zstd"))]
fn run_compressed(_: &Scenario, _: &RunOptions, path: &Path) -> io::Result<RunOutput> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("cannot write {}: {}", path.display(), crate::trace::NO_ZSTD),
    ))
}

/// Like [`run`], writing the trace into `out` (the checker keeps it in memory).
#[doc(hidden)]
pub fn run_to<W: io::Write>(
    scenario: &Scenario,
    opts: &RunOptions,
    out: W,
) -> io::Result<RunOutput> {
    run_into(scenario, opts, out).map(|(out, _)| out)
}

/// [`run_to`], giving the output back, flushed.
fn run_into<W: io::Write>(
    scenario: &Scenario,
    opts: &RunOptions,
    out: W,
) -> io::Result<(RunOutput, W)> {
    let seed = opts.seed.unwrap_or(scenario.seed);
    let mut header = serde_json::Map::new();
    if let Some(n) = max_events_field(&opts.limits) {
        // a replay must stop where the run's own event budget stopped it
        header.insert("max_events".into(), n.into());
    }
    if let Some(n) = max_memory_field(&opts.limits) {
        // and where its memory budget did
        header.insert("max_memory".into(), n.into());
    }
    if let Some(extra) = opts.header {
        header.extend(extra.clone());
    }
    let mut writer = TraceWriter::with_header(out, scenario, seed, opts.trace_level, header)?;
    let (result, fold, diagnosis) = run_events(scenario, opts, &mut writer);
    let interrupted = opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed));
    let (digest, out) = if interrupted {
        let digest = writer.digest().hex();
        (digest, writer.into_inner()?)
    } else {
        let (digest, out) = writer.finish_into(result.outcome, result.stop.budget())?;
        (digest.hex(), out)
    };
    Ok((output(scenario, seed, result, fold, diagnosis, digest), out))
}

/// The header's `max_events` of a run under `limits`: none for the default budget, derived
/// from the scenario, which a replay derives again (no limit at all is written as the largest
/// count).
fn max_events_field(limits: &Limits) -> Option<u64> {
    limits.events
}

/// The header's `max_memory` of a run under `limits`: none for the default limit, which a
/// replay applies anyway (no limit at all is written as the largest size).
fn max_memory_field(limits: &Limits) -> Option<u64> {
    match limits.memory {
        Some(DEFAULT_MAX_MEMORY) => None,
        Some(n) => Some(n),
        None => Some(u64::MAX),
    }
}

/// The digest of a run without writing a trace.
pub fn digest_of(scenario: &Scenario, seed: u64) -> String {
    let mut rec = DigestRecorder::default();
    run_events(scenario, &RunOptions::seeded(seed), &mut rec);
    rec.digest.hex()
}
