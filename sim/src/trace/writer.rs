//! Streaming trace output and the chained digest.

use super::digest::Digest;
use super::encode::{common_line, deliver_line, encode_line_serde, send_line, step_line, Line};
use super::event::{Event, Sent};
use super::{from_proto, Level};
use crate::budget::Budget;
use crate::proto::StepEvent;
use crate::scenario::{Outcome, Scenario};
use crate::units::Nanos;
use std::io::{self, Write};

/// How many engine events pass between two [`Recorder::tick`]s.
pub const TICK_EVERY: u64 = 1 << 15;

/// Where the engine sends its events.
pub trait Recorder {
    /// Whether events are wanted at all (the engine skips building them otherwise).
    fn enabled(&self) -> bool {
        true
    }
    fn record(&mut self, t: Nanos, ev: &Event);

    /// Told the virtual time reached every [`TICK_EVERY`] events the engine processes (a
    /// progress display); nothing by default.
    #[inline(always)]
    fn tick(&mut self, _t: Nanos) {}

    /// Told that an event touching `rank` comes soon, so that what the recorder keeps of
    /// that rank can be brought into the cache (a hint: it changes nothing the recorder
    /// computes); nothing by default.
    #[inline(always)]
    fn prefetch(&self, _rank: u32) {}

    /// A message sent: the [`Event::Send`] of `s`. The three commonest events of a run come
    /// this way, their fields as the engine has them, so that a recorder that takes the
    /// fields directly (the digest and the diagnosis of a run without a trace) overrides
    /// these and no event is built for them.
    #[inline(always)]
    fn send(&mut self, t: Nanos, s: &Sent<'static>) {
        self.record(t, &s.event());
    }

    /// A message delivered: [`Event::Deliver`].
    #[inline(always)]
    fn deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        self.record(t, &Event::Deliver { id, from, to });
    }

    /// A step of `rank`'s call: the [`Event::Step`] of `s`.
    #[inline(always)]
    fn step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        self.record(t, &from_proto::step_event(rank, s));
    }
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

/// Digests the events without writing them: a run without a trace formats no text.
#[derive(Default)]
pub struct DigestRecorder {
    pub digest: Digest,
}

impl Recorder for DigestRecorder {
    #[inline(always)]
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.digest.update(t, ev);
    }

    #[inline(always)]
    fn send(&mut self, t: Nanos, s: &Sent<'static>) {
        self.digest.update_send(t, s);
    }

    #[inline(always)]
    fn deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        self.digest.update_deliver(t, id, from, to);
    }

    #[inline(always)]
    fn step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        self.digest.update_step(t, rank, s);
    }
}

/// Writes a trace as the run goes: the header first, then each event line, then the footer.
/// Output is buffered; call [`TraceWriter::flush`] to push it out (the CLI does so on Ctrl-C).
pub struct TraceWriter<W: Write> {
    out: io::BufWriter<W>,
    /// The line being written by hand.
    line: Box<Line>,
    /// A line serde writes.
    general: Vec<u8>,
    digest: Digest,
    level: Level,
    /// Event lines written.
    lines: u64,
    error: Option<io::Error>,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace of `scenario` run with `seed`.
    pub fn new(out: W, scenario: &Scenario, seed: u64) -> io::Result<Self> {
        Self::with_header(out, scenario, seed, Level::Full, serde_json::Map::new())
    }

    /// Starts a trace that holds the events of `level`.
    pub fn with_level(out: W, scenario: &Scenario, seed: u64, level: Level) -> io::Result<Self> {
        Self::with_header(out, scenario, seed, level, serde_json::Map::new())
    }

    /// Starts a trace whose header also holds `extra` fields (a real run's `"real": true`
    /// and `"driver"`).
    pub fn with_header(
        out: W,
        scenario: &Scenario,
        seed: u64,
        level: Level,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> io::Result<Self> {
        let mut out = io::BufWriter::with_capacity(1 << 20, out);
        let mut header = serde_json::json!({
            "format": super::FORMAT,
            "version": super::VERSION,
            "ringside": env!("CARGO_PKG_VERSION"),
            "seed": seed,
            "level": level,
            "scenario": scenario,
        });
        if let Some(h) = header.as_object_mut() {
            h.extend(extra);
        }
        serde_json::to_writer(&mut out, &header)?;
        out.write_all(b"\n")?;
        Ok(TraceWriter {
            out,
            line: Box::new(Line::new()),
            general: Vec::with_capacity(256),
            digest: Digest::new(),
            level,
            lines: 0,
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
    pub fn finish(self, outcome: Outcome) -> io::Result<Digest> {
        self.finish_into(outcome, None).map(|(digest, _)| digest)
    }

    /// Writes the footer, with the budget that ended the run when one did, and flushes;
    /// returns the digest and the output (to finish a compressed stream).
    pub fn finish_into(
        mut self,
        outcome: Outcome,
        budget: Option<Budget>,
    ) -> io::Result<(Digest, W)> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let footer = Event::End {
            outcome,
            events: self.digest.events(),
            digest: self.digest.hex(),
            lines: (self.level != Level::Full).then_some(self.lines),
            budget,
        };
        serde_json::to_writer(&mut self.out, &footer)?;
        self.out.write_all(b"\n")?;
        let digest = self.digest;
        Ok((digest, self.into_inner()?))
    }

    /// Flushes and gives back the output, without a footer (an interrupted run).
    pub fn into_inner(self) -> io::Result<W> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.out.into_inner().map_err(|e| e.into_error())
    }

    /// Writes the line in `self.line` when `written` (it was written by hand), else the line
    /// `general` writes through serde.
    #[inline(always)]
    fn write_line(&mut self, written: bool, general: impl FnOnce(&mut Vec<u8>)) {
        self.lines += 1;
        if self.error.is_some() {
            return;
        }
        let r = if written {
            let b = self.line.bytes();
            self.out
                .write_all(b)
                .and_then(|()| self.out.write_all(b"\n"))
        } else {
            general(&mut self.general);
            self.general.push(b'\n');
            self.out.write_all(&self.general)
        };
        if let Err(e) = r {
            self.error = Some(e);
        }
    }
}

impl<W: Write> Recorder for TraceWriter<W> {
    fn record(&mut self, t: Nanos, ev: &Event) {
        self.digest.update(t, ev);
        if !self.level.holds(ev) {
            return;
        }
        let written = common_line(&mut self.line, t, ev);
        self.write_line(written, |buf| encode_line_serde(buf, t, ev));
    }

    #[inline(always)]
    fn send(&mut self, t: Nanos, s: &Sent<'static>) {
        self.digest.update_send(t, s);
        // a message's lines are in full traces only
        if self.level != Level::Full {
            return;
        }
        let written = send_line(&mut self.line, t, s);
        self.write_line(written, |buf| encode_line_serde(buf, t, &s.event()));
    }

    #[inline(always)]
    fn deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        self.digest.update_deliver(t, id, from, to);
        if self.level != Level::Full {
            return;
        }
        let written = deliver_line(&mut self.line, t, id, from, to);
        self.write_line(written, |buf| {
            encode_line_serde(buf, t, &Event::Deliver { id, from, to })
        });
    }

    #[inline(always)]
    fn step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        self.digest.update_step(t, rank, s);
        let written = step_line(
            &mut self.line,
            t,
            rank,
            (s.group, s.generation, s.seq),
            (s.step, s.steps),
            s.waiting_for.iter().map(|r| r.0),
        );
        self.write_line(written, |buf| {
            encode_line_serde(buf, t, &from_proto::step_event(rank, s))
        });
    }
}
