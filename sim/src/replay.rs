//! Replay: re-run a trace's scenario and seed and compare the event stream line by line.
//!
//! The contract of `ringside replay`:
//! - every event line and the footer's outcome are identical: [`ReplayOutcome::Identical`];
//! - otherwise the first line that differs, with the recorded and the re-run line:
//!   [`ReplayOutcome::Diverged`] (a trace with more or fewer events than the run diverges at
//!   the first line one of them lacks);
//! - a trace that cannot be read — malformed JSON, an unknown event, a bad header, a footer
//!   whose count or digest does not match, a scenario this build cannot run — or that is
//!   *incomplete* is a [`TraceError`] naming the line. Incomplete means it ends without its
//!   `end` footer (the file was cut short, or the run was interrupted) or in the middle of a
//!   line: identity cannot be proven for events that are not there, so a replay whose recorded
//!   prefix matches still reports the line where the trace stops (and says that the prefix
//!   matched); a prefix that differs is reported as a divergence first.
//!
//! The re-run is given the recorded run's event budget (the header's `max_events`), so a run
//! its budget ended replays to the same end, and it stops as soon as the outcome is known (the
//! first divergence, or the end of what the trace holds). A run that its wall-clock budget
//! ended cannot be re-run to the same end, which depended on the machine: its events are
//! compared up to the diagnosis taken there, [`ReplayOutcome::WallClockCut`].
//!
//! Replay sits above both ends of what it compares: it reads traces ([`crate::trace`]) and
//! re-runs scenarios ([`crate::run`], which drives the engine that writes trace events).
//! Nothing below it depends on it, so the trace format never depends on the engine that
//! writes it.

use crate::budget::{Budget, Limits, DEFAULT_MAX_MEMORY};
use crate::proto::mutation::Mutations;
use crate::run::{run_events, RunOptions};
use crate::scenario::{Outcome, Scenario};
use crate::trace::{encode_line, Digest, Event, Level, Recorder, TraceError, TraceReader};
use crate::units::Nanos;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a replay found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// Every event line, and the footer, are identical.
    Identical { events: u64, digest: String },
    /// The first line that differs (1-based line number of the trace file).
    Diverged {
        line: usize,
        expected: String,
        actual: String,
    },
    /// The recorded run was ended by its wall-clock budget: its `events` event lines are
    /// identical, up to the diagnosis at `line` that was taken where the budget ran out.
    WallClockCut { events: u64, line: usize },
}

struct Compare<'a, R: BufRead> {
    reader: &'a mut TraceReader<R>,
    line: Vec<u8>,
    divergence: Option<ReplayOutcome>,
    /// The trace ran out of events before the run did, without a footer.
    truncated: bool,
    error: Option<TraceError>,
    compared: u64,
    /// What the trace holds: the events it leaves out are only digested.
    level: Level,
    /// The digest of every event of the re-run.
    full: Digest,
    /// Raised once the outcome is known: the re-run stops there.
    stop: &'a AtomicBool,
    /// The recorded line the re-run diverged from is the diagnosis.
    at_diagnosis: bool,
}

impl<R: BufRead> Recorder for Compare<'_, R> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.full.update(t, ev);
        if self.divergence.is_some()
            || self.error.is_some()
            || self.truncated
            || !self.level.holds(ev)
        {
            return;
        }
        encode_line(&mut self.line, t, ev);
        match self.reader.next_if_same(&self.line, t, ev) {
            Ok(true) => {
                self.compared += 1;
                return;
            }
            Ok(false) => {}
            Err(e) => {
                self.stop.store(true, Ordering::Relaxed);
                return self.error = Some(e);
            }
        }
        // None: the trace has no more events; Some(None): the same line; Some(Some(l)): l differs
        let next = match self.reader.next_raw() {
            Err(e) => return self.error = Some(e),
            Ok(None) => None,
            Ok(Some((_, recorded, text))) => {
                self.at_diagnosis = matches!(recorded, Event::Diagnosis { .. });
                Some((text.as_bytes() != self.line.as_slice()).then(|| text.to_string()))
            }
        };
        match next {
            None if self.reader.footer().is_none() => self.truncated = true,
            None => {
                self.divergence = Some(ReplayOutcome::Diverged {
                    line: self.reader.line_no(),
                    expected: "(the end of the recorded events)".into(),
                    actual: String::from_utf8_lossy(&self.line).into_owned(),
                })
            }
            Some(None) => self.compared += 1,
            Some(Some(expected)) => {
                self.divergence = Some(ReplayOutcome::Diverged {
                    line: self.reader.line_no(),
                    expected,
                    actual: String::from_utf8_lossy(&self.line).into_owned(),
                });
            }
        }
        if self.divergence.is_some() || self.truncated {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Replays the trace at `path` on the code it was recorded with: the real code, or the one with
/// `mutations` planted (a trace `ringside check --mutation` wrote). Malformed or incomplete
/// traces give a [`TraceError`] naming the line.
pub fn replay(path: &Path, mutations: Mutations) -> Result<ReplayOutcome, TraceError> {
    replay_reader(TraceReader::open(path)?, mutations)
}

/// [`replay`] of a trace read from any reader (e.g. one held in memory): the trace's scenario
/// is checked, re-run against the recorded lines, and what the comparison left is judged.
pub fn replay_reader<R: BufRead>(
    reader: TraceReader<R>,
    mutations: Mutations,
) -> Result<ReplayOutcome, TraceError> {
    let stop = AtomicBool::new(false);
    replay_app(reader, mutations, None, &stop)
}

/// [`replay_reader`] of a run whose ranks a real application drove (`ringside torchrun`):
/// `app` runs the recorded program again; `stop`, false, is raised once the outcome is known
/// (the re-run stops there).
pub fn replay_app<'a, R: BufRead>(
    mut reader: TraceReader<R>,
    mutations: Mutations,
    app: App<'a>,
    stop: &'a AtomicBool,
) -> Result<ReplayOutcome, TraceError> {
    let scenario = replayable(&reader)?;
    if reader.header.program.is_some() && app.is_none() {
        return Err(at_line(
            &reader,
            1,
            "this trace is of a real program (`ringside torchrun`): it replays by running the \
             header's `program` again"
                .into(),
        ));
    }
    let compared = rerun(&mut reader, &scenario, mutations, app, stop);
    judge(&mut reader, compared)
}

/// The application that drives the ranks of a re-run, when one does.
pub type App<'a> = Option<&'a std::cell::RefCell<dyn crate::engine::Application + 'a>>;

/// A [`TraceError`] at `line` of the trace `reader` reads.
fn at_line<R: BufRead>(reader: &TraceReader<R>, line: usize, message: String) -> TraceError {
    TraceError {
        file: reader.file().to_string(),
        line,
        message,
    }
}

/// The scenario the trace was recorded from, if this build can re-run it.
fn replayable<R: BufRead>(reader: &TraceReader<R>) -> Result<Scenario, TraceError> {
    if reader.header.real {
        return Err(at_line(
            reader,
            1,
            "this trace comes from a real run and cannot be replayed bit-for-bit".into(),
        ));
    }
    let scenario = reader.header.scenario.clone();
    if let Err((key, message)) = crate::scenario::unsupported(&scenario, &crate::engine::SUPPORT) {
        return Err(at_line(
            reader,
            1,
            format!("the embedded scenario cannot be run: scenario.{key}: {message}"),
        ));
    }
    Ok(scenario)
}

/// What a re-run compared against the recorded lines left to judge.
struct Compared {
    /// The re-run's outcome.
    outcome: Outcome,
    /// Event lines found identical.
    events: u64,
    divergence: Option<ReplayOutcome>,
    error: Option<TraceError>,
    truncated: bool,
    /// The digest of every event of the re-run.
    full: Digest,
    at_diagnosis: bool,
}

/// Re-runs `scenario` with the trace's seed and event budget, comparing each event with the
/// next recorded line; it stops at the first divergence or where the trace ends.
fn rerun<'a, R: BufRead>(
    reader: &mut TraceReader<R>,
    scenario: &Scenario,
    mutations: Mutations,
    app: App<'a>,
    stop: &'a AtomicBool,
) -> Compared {
    let seed = reader.header.seed;
    let level = reader.header.level;
    let limits = Limits {
        events: reader.header.max_events,
        wall_clock: None,
        memory: Some(reader.header.max_memory.unwrap_or(DEFAULT_MAX_MEMORY)),
    };
    let mut cmp = Compare {
        reader,
        line: Vec::new(),
        divergence: None,
        truncated: false,
        error: None,
        compared: 0,
        level,
        full: Digest::new(),
        stop,
        at_diagnosis: false,
    };
    let opts = RunOptions {
        mutations,
        limits,
        interrupt: Some(stop),
        app,
        ..RunOptions::seeded(seed)
    };
    let (result, _, _) = run_events(scenario, &opts, &mut cmp);
    Compared {
        outcome: result.outcome,
        events: cmp.compared,
        divergence: cmp.divergence,
        error: cmp.error,
        truncated: cmp.truncated,
        full: cmp.full,
        at_diagnosis: cmp.at_diagnosis,
    }
}

/// The replay's verdict from what the re-run `c` compared and what is left of the trace.
fn judge<R: BufRead>(
    reader: &mut TraceReader<R>,
    c: Compared,
) -> Result<ReplayOutcome, TraceError> {
    let compared = c.events;
    if let Some(e) = c.error {
        return Err(e);
    }
    if let Some(d) = c.divergence {
        if let ReplayOutcome::Diverged { line, .. } = d {
            // the diagnosis a wall-clock budget took, followed by nothing but the footer
            if c.at_diagnosis && reader.next_raw()?.is_none() && cut_by_wall_clock(reader) {
                return Ok(ReplayOutcome::WallClockCut {
                    events: compared,
                    line,
                });
            }
        }
        return Ok(d);
    }
    // the recorded trace must end here too
    if !c.truncated {
        if let Some((_, _, extra)) = reader.next_raw()? {
            let expected = extra.to_string();
            return Ok(ReplayOutcome::Diverged {
                line: reader.line_no(),
                expected,
                actual: "(the end of the run)".into(),
            });
        }
    }
    let Some(footer) = reader.footer() else {
        let (line, how) = match reader.torn_line() {
            Some(l) => (l, "is cut off in the middle of this line"),
            None => (
                reader.line_no(),
                "ends after this line without its `end` footer (the file was cut short, or the \
                 run was interrupted)",
            ),
        };
        return Err(at_line(
            reader,
            line,
            format!(
                "incomplete trace: it {how}; its {compared} recorded events match the re-run, \
                 but identity cannot be proven for the rest"
            ),
        ));
    };
    if footer.budget == Some(Budget::WallClock) {
        // it ended where the recorded run would have ended anyway, but its outcome and
        // digest say that the budget ended it
        return Ok(ReplayOutcome::WallClockCut {
            events: compared,
            line: footer.line,
        });
    }
    if footer.outcome != c.outcome {
        return Ok(ReplayOutcome::Diverged {
            line: reader.line_no(),
            expected: format!("outcome {}", footer.outcome),
            actual: format!("outcome {}", c.outcome),
        });
    }
    // the lines match; the digest covers the events a `calls` trace leaves out too
    let full = &c.full;
    if reader.header.version >= 2 && footer.digest != full.hex() {
        return Ok(ReplayOutcome::Diverged {
            line: footer.line,
            expected: format!("digest {} of all {} events", footer.digest, footer.events),
            actual: format!("digest {} of all {} events", full.hex(), full.events()),
        });
    }
    Ok(ReplayOutcome::Identical {
        events: compared,
        digest: footer.digest.clone(),
    })
}

/// Whether the trace's footer says that the wall-clock budget ended the recorded run.
fn cut_by_wall_clock<R: BufRead>(reader: &TraceReader<R>) -> bool {
    reader
        .footer()
        .is_some_and(|f| f.budget == Some(Budget::WallClock))
}
