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

use super::encode::encode_line;
use super::reader::{TraceError, TraceReader};
use super::writer::Recorder;
use super::{Digest, Event, Level};
use crate::proto::mutation::Mutations;
use crate::run::{run_events, RunOptions};
use crate::units::Nanos;
use std::io::BufRead;
use std::path::Path;

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
            Err(e) => return self.error = Some(e),
        }
        // None: the trace has no more events; Some(None): the same line; Some(Some(l)): l differs
        let next = match self.reader.next_raw() {
            Err(e) => return self.error = Some(e),
            Ok(None) => None,
            Ok(Some((_, _, text))) => {
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
    }
}

/// Replays the trace at `path` on the code it was recorded with: the real code, or the one with
/// `mutations` planted (a trace `ringside check --mutation` wrote). Malformed or incomplete
/// traces give a [`TraceError`] naming the line.
pub fn replay(path: &Path, mutations: Mutations) -> Result<ReplayOutcome, TraceError> {
    replay_reader(TraceReader::open(path)?, mutations)
}

/// [`replay`] of a trace read from any reader (e.g. one held in memory).
pub fn replay_reader<R: BufRead>(
    mut reader: TraceReader<R>,
    mutations: Mutations,
) -> Result<ReplayOutcome, TraceError> {
    let at_line = |reader: &TraceReader<R>, line: usize, message: String| TraceError {
        file: reader.file().to_string(),
        line,
        message,
    };
    if reader.header.real {
        return Err(at_line(
            &reader,
            1,
            "this trace comes from a real run and cannot be replayed bit-for-bit".into(),
        ));
    }
    let scenario = reader.header.scenario.clone();
    if let Err((key, message)) = crate::scenario::unsupported(&scenario, &crate::engine::SUPPORT) {
        return Err(at_line(
            &reader,
            1,
            format!("the embedded scenario cannot be run: scenario.{key}: {message}"),
        ));
    }
    let seed = reader.header.seed;
    let level = reader.header.level;
    let mut cmp = Compare {
        reader: &mut reader,
        line: Vec::new(),
        divergence: None,
        truncated: false,
        error: None,
        compared: 0,
        level,
        full: Digest::new(),
    };
    let opts = RunOptions {
        mutations,
        ..RunOptions::seeded(seed)
    };
    let (result, _, _) = run_events(&scenario, &opts, &mut cmp);
    let (compared, divergence, error, truncated, full) = (
        cmp.compared,
        cmp.divergence,
        cmp.error,
        cmp.truncated,
        cmp.full,
    );
    if let Some(e) = error {
        return Err(e);
    }
    if let Some(d) = divergence {
        return Ok(d);
    }
    // the recorded trace must end here too
    if !truncated {
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
            &reader,
            line,
            format!(
                "incomplete trace: it {how}; its {compared} recorded events match the re-run, \
                 but identity cannot be proven for the rest"
            ),
        ));
    };
    if footer.outcome != result.outcome {
        return Ok(ReplayOutcome::Diverged {
            line: reader.line_no(),
            expected: format!("outcome {}", footer.outcome),
            actual: format!("outcome {}", result.outcome),
        });
    }
    // the lines match; the digest covers the events a `calls` trace leaves out too
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
