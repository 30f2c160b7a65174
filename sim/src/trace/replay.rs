//! Replay: re-run a trace's scenario and seed and compare the event stream line by line.

use super::reader::{TraceError, TraceReader};
use super::writer::{encode_line, Recorder};
use super::Event;
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
    error: Option<TraceError>,
    compared: u64,
}

impl<R: BufRead> Recorder for Compare<'_, R> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        if self.divergence.is_some() || self.error.is_some() {
            return;
        }
        encode_line(&mut self.line, t, ev);
        let actual = String::from_utf8_lossy(&self.line).into_owned();
        match self.reader.next_raw() {
            Err(e) => self.error = Some(e),
            Ok(None) => {
                self.divergence = Some(ReplayOutcome::Diverged {
                    line: self.reader.line_no() + 1,
                    expected: "(end of trace)".into(),
                    actual,
                })
            }
            Ok(Some((_, _, expected))) => {
                if expected != actual {
                    let expected = expected.to_string();
                    self.divergence = Some(ReplayOutcome::Diverged {
                        line: self.reader.line_no(),
                        expected,
                        actual,
                    });
                } else {
                    self.compared += 1;
                }
            }
        }
    }
}

/// Replays the trace at `path`. Malformed traces give a [`TraceError`] naming the line.
pub fn replay(path: &Path) -> Result<ReplayOutcome, TraceError> {
    let mut reader = TraceReader::open(path)?;
    if reader.header.real {
        return Err(TraceError {
            file: path.display().to_string(),
            line: 1,
            message: "this trace comes from a real run and cannot be replayed bit-for-bit".into(),
        });
    }
    let scenario = reader.header.scenario.clone();
    let seed = reader.header.seed;
    let mut cmp = Compare {
        reader: &mut reader,
        line: Vec::new(),
        divergence: None,
        error: None,
        compared: 0,
    };
    let (result, _, _) = crate::run::run_events(&scenario, seed, &mut cmp, None);
    let (compared, divergence, error) = (cmp.compared, cmp.divergence, cmp.error);
    if let Some(e) = error {
        return Err(e);
    }
    if let Some(d) = divergence {
        return Ok(d);
    }
    // the recorded trace must end here too
    match reader.next_raw()? {
        Some((_, _, extra)) => {
            let expected = extra.to_string();
            Ok(ReplayOutcome::Diverged {
                line: reader.line_no(),
                expected,
                actual: "(end of run)".into(),
            })
        }
        None => {
            if let Some(f) = reader.footer() {
                if f.outcome != result.outcome {
                    return Ok(ReplayOutcome::Diverged {
                        line: reader.line_no(),
                        expected: format!("outcome {}", f.outcome),
                        actual: format!("outcome {}", result.outcome),
                    });
                }
            }
            Ok(ReplayOutcome::Identical {
                events: compared,
                digest: reader.digest().hex(),
            })
        }
    }
}
