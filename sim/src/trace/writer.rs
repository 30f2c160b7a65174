//! Streaming trace output and the chained digest.

use super::event::Event;
use crate::proto::data::Fnv;
use crate::scenario::{Outcome, Scenario};
use crate::units::Nanos;
use std::io::{self, Write};

/// Where the engine sends its events.
pub trait Recorder {
    /// Whether events are wanted at all (the engine skips building them otherwise).
    fn enabled(&self) -> bool {
        true
    }
    fn record(&mut self, t: Nanos, ev: &Event);
}

/// Discards everything (benchmarks, swarm runs that only need the outcome).
pub struct NullRecorder;

impl Recorder for NullRecorder {
    fn enabled(&self) -> bool {
        false
    }
    fn record(&mut self, _t: Nanos, _ev: &Event) {}
}

/// Keeps every event in memory.
#[derive(Default)]
pub struct VecRecorder {
    pub events: Vec<(Nanos, Event)>,
}

impl Recorder for VecRecorder {
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.events.push((t, ev.clone()));
    }
}

/// A hash chained over event lines: `d_i = FNV-1a(d_{i-1} as 8 LE bytes ++ line_i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    state: u64,
    lines: u64,
}

impl Default for Digest {
    fn default() -> Self {
        Digest::new()
    }
}

impl Digest {
    pub fn new() -> Digest {
        Digest {
            state: Fnv::new().finish(),
            lines: 0,
        }
    }

    /// Adds one event line (without its newline).
    pub fn update(&mut self, line: &[u8]) {
        let mut h = Fnv::new();
        h.write(&self.state.to_le_bytes());
        h.write(line);
        self.state = h.finish();
        self.lines += 1;
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.state)
    }
}

/// Serializes one event line (without newline) into `buf`: `{"t":N,"kind":...}`.
pub fn encode_line(buf: &mut Vec<u8>, t: Nanos, ev: &Event) {
    buf.clear();
    buf.extend_from_slice(b"{\"t\":");
    buf.extend_from_slice(t.to_string().as_bytes());
    buf.push(b',');
    let start = buf.len();
    // an enum with an internal tag always serializes as a non-empty object
    if serde_json::to_writer(&mut *buf, ev).is_ok() && buf.len() > start {
        buf.remove(start);
    }
}

/// Writes a trace as the run goes: the header first, then each event line, then the footer.
/// Output is buffered; call [`TraceWriter::flush`] to push it out (the CLI does so on Ctrl-C).
pub struct TraceWriter<W: Write> {
    out: io::BufWriter<W>,
    line: Vec<u8>,
    digest: Digest,
    error: Option<io::Error>,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace of `scenario` run with `seed`.
    pub fn new(out: W, scenario: &Scenario, seed: u64) -> io::Result<Self> {
        let mut out = io::BufWriter::with_capacity(1 << 20, out);
        let header = serde_json::json!({
            "format": super::FORMAT,
            "version": super::VERSION,
            "ringside": env!("CARGO_PKG_VERSION"),
            "seed": seed,
            "scenario": scenario,
        });
        serde_json::to_writer(&mut out, &header)?;
        out.write_all(b"\n")?;
        Ok(TraceWriter {
            out,
            line: Vec::with_capacity(256),
            digest: Digest::new(),
            error: None,
        })
    }

    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The first write error, if any (writing stops at the first error).
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes the footer and flushes; returns the digest.
    pub fn finish(mut self, outcome: Outcome) -> io::Result<Digest> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let footer = Event::End {
            outcome,
            events: self.digest.lines(),
            digest: self.digest.hex(),
        };
        serde_json::to_writer(&mut self.out, &footer)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(self.digest)
    }
}

impl<W: Write> Recorder for TraceWriter<W> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        encode_line(&mut self.line, t, ev);
        self.digest.update(&self.line);
        if self.error.is_none() {
            self.line.push(b'\n');
            if let Err(e) = self.out.write_all(&self.line) {
                self.error = Some(e);
            }
        }
    }
}
