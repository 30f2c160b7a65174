//! The run digest: a hash chained over every event of a run, in order.
//!
//! From trace version 2 on, an event enters the digest in a canonical binary encoding, not as
//! its JSON line, so a run that writes no trace formats no text, and a reader recomputes the
//! digest from the events it parsed, however the line was spelled. The encoding is a sequence
//! of little-endian 64-bit words, defined on serde's data model so that it covers every field
//! of every event, in declaration order:
//!
//! - the event's time `t`, then its kind as a string, then its fields in declaration order;
//! - an integer or a bool: one word (signed integers two's complement, a float its bits);
//! - a string: its length, then its bytes eight to a word (the last word zero-padded);
//! - an optional value: 1 then the value, or 0 when absent (a field left out of the JSON
//!   because it is empty or false counts as absent: 0);
//! - a list: its length, then its items; a unit enum (an op, an algorithm...) its name.
//!
//! The words of every event, each event's followed by the count n of events so far, are folded
//! into four lanes kept in a queue, each lane starting from the FNV basis xor a constant: a word
//! is folded into the lane at the front as `h = (rotl(h, 23) xor w) * K`, and that lane goes to
//! the back. Four independent chains let the processor fold four words at once, and no step
//! waits for a whole event to be hashed. The digest after n events, with the lanes in queue
//! order a, b, c, d, is `mix(a xor rotl(b, 16) xor rotl(c, 32) xor rotl(d, 48) xor n)`. The function is written out here (not taken from a crate) so
//! that digests never change with a dependency or a platform.
//!
//! Version 1 traces chained the event lines' bytes instead ([`Digest::update_line`]); readers
//! of version 1 traces check their footer that way.

use super::event::{Event, Sent};
use super::words::{self, tail_word, Words, K};
use crate::proto::data::{mix, Fnv};
use crate::proto::StepEvent;
use crate::units::Nanos;
#[cfg(test)]
use serde::Serialize;

/// A hash chained over a run's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    /// The four lanes (version 2).
    lanes: Words,
    /// The chained state of version 1.
    state: u64,
    events: u64,
    /// Fed lines (version 1), not events.
    lines: bool,
}

impl Default for Digest {
    fn default() -> Self {
        Digest::new()
    }
}

impl Digest {
    pub fn new() -> Digest {
        let basis = Fnv::new().finish();
        Digest {
            lanes: Words::new(basis),
            state: basis,
            events: 0,
            lines: false,
        }
    }

    /// Adds one event (trace version 2). Inlined where the event is made, the commonest kinds
    /// hash their fields as they are, without looking at the kind.
    #[inline(always)]
    pub fn update(&mut self, t: Nanos, ev: &Event) {
        let mut w = self.lanes;
        w.word(t);
        if !words::common(&mut w, ev) {
            words::serialize(&mut w, ev);
        }
        self.finish_event(w);
    }

    /// Adds a `send` event (as [`Digest::update`] of [`Sent::event`]).
    #[inline(always)]
    pub fn update_send(&mut self, t: Nanos, s: &Sent) {
        let mut w = self.lanes;
        w.word(t);
        words::send(&mut w, s);
        self.finish_event(w);
    }

    /// Adds a `deliver` event.
    #[inline(always)]
    pub fn update_deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        let mut w = self.lanes;
        w.word(t);
        words::deliver(&mut w, id, from, to);
        self.finish_event(w);
    }

    /// Adds the `step` event of `rank`'s step `s`.
    #[inline(always)]
    pub fn update_step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        let mut w = self.lanes;
        w.word(t);
        words::step(
            &mut w,
            rank,
            (s.group, s.generation, s.seq),
            (s.step, s.steps),
            s.waiting_for.iter().map(|r| r.0),
        );
        self.finish_event(w);
    }

    #[inline(always)]
    fn finish_event(&mut self, mut w: Words) {
        self.events += 1;
        // the event count ends each event's words
        w.word(self.events);
        self.lanes = w;
    }

    /// Adds one event through the general serde path only (the fast path is tested against it).
    #[cfg(test)]
    pub(crate) fn update_general(&mut self, t: Nanos, ev: &Event) {
        let mut w = self.lanes;
        w.word(t);
        let _ = ev.serialize(&mut w);
        self.finish_event(w);
    }

    /// Adds one event line, without its newline (trace version 1).
    pub fn update_line(&mut self, line: &[u8]) {
        let mut h = self.state;
        let mut chunks = line.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = (h.rotate_left(23) ^ w).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            h = (h.rotate_left(23) ^ tail_word(rest)).wrapping_mul(K);
        }
        self.state = mix(h ^ line.len() as u64);
        self.events += 1;
        self.lines = true;
    }

    /// How many events it covers.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The digest so far.
    pub fn value(&self) -> u64 {
        if self.lines {
            self.state
        } else {
            mix(self.lanes.combined() ^ self.events)
        }
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.value())
    }
}
