//! Writing event lines: the commonest kinds — `send`, `deliver`, `step`, `compute`,
//! `compute_done`, `iteration` — are spelled out by hand, byte for byte as serde_json spells
//! them (fixed key order, no spaces, `itoa` numbers, options skipped when `None`); every other
//! kind, and any string that would need an escape, goes through serde_json. A property test
//! (in `fast.rs`) holds the two to the same bytes, so the digest cannot tell them apart.

use super::digest::Words;
use super::{Event, Sent};
use crate::proto::{Generation, GroupId, SeqNo};
use crate::units::Nanos;

/// Serializes one event line (without newline) into `buf`: `{"t":N,"kind":...}`.
pub fn encode_line(buf: &mut Vec<u8>, t: Nanos, ev: &Event) {
    buf.clear();
    if !encode_common(buf, t, ev) {
        buf.clear();
        encode_line_serde(buf, t, ev);
    }
}

/// [`encode_line`] through serde_json only.
pub(crate) fn encode_line_serde(buf: &mut Vec<u8>, t: Nanos, ev: &Event) {
    buf.clear();
    // the event serializes as `{"kind":...}`: write it after a placeholder, then put
    // `{"t":N,` over the placeholder and its opening brace
    let mut num = itoa::Buffer::new();
    let t = num.format(t);
    let prefix_len = 6 + t.len(); // {"t": N ,
    buf.resize(prefix_len - 1, b' ');
    if serde_json::to_writer(&mut *buf, ev).is_err() {
        buf.truncate(prefix_len - 1);
        buf.extend_from_slice(b"{}");
    }
    buf[..5].copy_from_slice(b"{\"t\":");
    buf[5..5 + t.len()].copy_from_slice(t.as_bytes());
    buf[prefix_len - 1] = b',';
}

struct Line<'a> {
    buf: &'a mut Vec<u8>,
    num: itoa::Buffer,
}

impl Line<'_> {
    #[inline]
    fn raw(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    #[inline]
    fn num<I: itoa::Integer>(&mut self, v: I) {
        self.buf.extend_from_slice(self.num.format(v).as_bytes());
    }

    /// `key` is the literal `,"name":` that precedes the value.
    #[inline]
    fn field<I: itoa::Integer>(&mut self, key: &str, v: I) {
        self.raw(key);
        self.num(v);
    }

    /// A string field, when the string needs no escape (false otherwise: take serde's path).
    #[inline]
    fn plain_str(&mut self, key: &str, s: &str) -> bool {
        if s.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) {
            return false;
        }
        self.raw(key);
        self.buf.push(b'"');
        self.raw(s);
        self.buf.push(b'"');
        true
    }

    fn list(&mut self, key: &str, v: &[u32]) {
        self.raw(key);
        self.buf.push(b'[');
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            self.num(*x);
        }
        self.buf.push(b']');
    }
}

/// Writes the line of a common kind; false for every other kind.
fn encode_common(buf: &mut Vec<u8>, t: Nanos, ev: &Event) -> bool {
    let mut l = Line {
        buf,
        num: itoa::Buffer::new(),
    };
    l.field("{\"t\":", t);
    match ev {
        Event::Send {
            id,
            from,
            to,
            bytes,
            msg,
            seq,
            step,
            arrive_ns,
        } => {
            l.field(",\"kind\":\"send\",\"id\":", *id);
            l.field(",\"from\":", *from);
            l.field(",\"to\":", *to);
            l.field(",\"bytes\":", *bytes);
            if !l.plain_str(",\"msg\":", msg) {
                return false;
            }
            if let Some(seq) = seq {
                l.field(",\"seq\":", *seq);
            }
            if let Some(step) = step {
                l.field(",\"step\":", *step);
            }
            l.field(",\"arrive_ns\":", *arrive_ns);
        }
        Event::Deliver { id, from, to } => {
            l.field(",\"kind\":\"deliver\",\"id\":", *id);
            l.field(",\"from\":", *from);
            l.field(",\"to\":", *to);
        }
        Event::Step {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
        } => {
            l.field(",\"kind\":\"step\",\"rank\":", *rank);
            l.field(",\"group\":", group.0);
            l.field(",\"generation\":", generation.0);
            l.field(",\"seq\":", seq.0);
            l.field(",\"step\":", *step);
            l.field(",\"steps\":", *steps);
            l.list(",\"waiting_for\":", waiting_for);
        }
        Event::Compute {
            rank,
            iteration,
            duration_ns,
        } => {
            l.field(",\"kind\":\"compute\",\"rank\":", *rank);
            l.field(",\"iteration\":", *iteration);
            l.field(",\"duration_ns\":", *duration_ns);
        }
        Event::ComputeDone { rank } => l.field(",\"kind\":\"compute_done\",\"rank\":", *rank),
        Event::Iteration { rank, iteration } => {
            l.field(",\"kind\":\"iteration\",\"rank\":", *rank);
            l.field(",\"iteration\":", *iteration);
        }
        _ => return false,
    }
    l.buf.push(b'}');
    true
}

/// Feeds the commonest kinds into a digest word by word, exactly as their serde encoding does
/// (`digest.rs`); false for every other kind. A test holds the two to the same words.
#[inline(always)]
pub(super) fn digest_common(w: &mut Words, ev: &Event) -> bool {
    match ev {
        Event::Send { .. } => {
            if let Some(sent) = ev.as_sent() {
                digest_send(w, &sent);
            }
        }
        Event::Deliver { id, from, to } => digest_deliver(w, *id, *from, *to),
        Event::Step {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
        } => digest_step(
            w,
            *rank,
            (*group, *generation, *seq),
            (*step, *steps),
            waiting_for.iter().copied(),
        ),
        Event::Compute {
            rank,
            iteration,
            duration_ns,
        } => {
            w.str("compute");
            w.word(u64::from(*rank));
            w.word(u64::from(*iteration));
            w.word(*duration_ns);
        }
        Event::ComputeDone { rank } => {
            w.str("compute_done");
            w.word(u64::from(*rank));
        }
        Event::Iteration { rank, iteration } => {
            w.str("iteration");
            w.word(u64::from(*rank));
            w.word(u64::from(*iteration));
        }
        _ => return false,
    }
    true
}

/// The words of a `send` event, after its time.
#[inline(always)]
pub(super) fn digest_send(w: &mut Words, s: &Sent) {
    w.str("send");
    w.word(s.id);
    w.word(u64::from(s.from));
    w.word(u64::from(s.to));
    w.word(s.bytes);
    w.str(s.msg);
    w.opt(s.seq);
    w.opt(s.step.map(u64::from));
    w.word(s.arrive_ns);
}

/// The words of a `deliver` event, after its time.
#[inline(always)]
pub(super) fn digest_deliver(w: &mut Words, id: u64, from: u32, to: u32) {
    w.str("deliver");
    w.word(id);
    w.word(u64::from(from));
    w.word(u64::from(to));
}

/// The words of a `step` event of `rank`'s call `(group, generation, seq)` entering `step` of
/// `steps`, after its time.
#[inline(always)]
pub(super) fn digest_step(
    w: &mut Words,
    rank: u32,
    (group, generation, seq): (GroupId, Generation, SeqNo),
    (step, steps): (u32, u32),
    waiting_for: impl ExactSizeIterator<Item = u32>,
) {
    w.str("step");
    w.word(u64::from(rank));
    w.word(u64::from(group.0));
    w.word(u64::from(generation.0));
    w.word(seq.0);
    w.word(u64::from(step));
    w.word(u64::from(steps));
    let n = waiting_for.len();
    w.word(n as u64);
    let mut rest = waiting_for;
    if n == 1 {
        // the usual step waits for one rank: its words without a loop
        if let Some(x) = rest.next() {
            w.word(u64::from(x));
        }
        return;
    }
    for x in rest {
        w.word(u64::from(x));
    }
}
