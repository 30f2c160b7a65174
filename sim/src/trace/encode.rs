//! Writing event lines: the commonest kinds — `send`, `deliver`, `step`, `compute`,
//! `compute_done`, `iteration` — are spelled out by hand, byte for byte as serde_json spells
//! them (fixed key order, no spaces, `itoa` numbers, options skipped when `None`); every other
//! kind, and any string that would need an escape, goes through serde_json. A property test
//! (in `fast.rs`) holds the two to the same bytes, so the digest cannot tell them apart.

use super::{Event, Sent};
use crate::proto::{Generation, GroupId, SeqNo};
use crate::units::Nanos;

/// Serializes one event line (without newline) into `buf`: `{"t":N,"kind":...}`.
pub fn encode_line(buf: &mut Vec<u8>, t: Nanos, ev: &Event) {
    buf.clear();
    let mut line = Line::new();
    if common_line(&mut line, t, ev) {
        buf.extend_from_slice(line.bytes());
    } else {
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

/// The longest line written by hand; a longer one (a step waiting for many ranks, a long
/// message kind) takes serde's path.
const LINE_MAX: usize = 512;

/// The most digits a `u64` takes.
const U64_DIGITS: usize = 20;

/// Two decimal digits of every number below 100.
const DIGITS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// One line being written by hand, in place: numbers go straight in as digits, and nothing
/// is checked but that the line still fits.
pub(crate) struct Line {
    bytes: [u8; LINE_MAX],
    len: usize,
    /// A write did not fit: the line is not written by hand.
    overflowed: bool,
    /// Where a number's digits are put together.
    digits: [u8; 2 * U64_DIGITS],
}

impl Line {
    pub(crate) fn new() -> Line {
        Line {
            bytes: [0; LINE_MAX],
            len: 0,
            overflowed: false,
            digits: [0; 2 * U64_DIGITS],
        }
    }

    /// The line written, when it fitted.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Begins a new line, at time `t`: `{"t":N`.
    #[inline(always)]
    fn start(&mut self, t: Nanos) {
        self.len = 0;
        self.overflowed = false;
        self.field(b"{\"t\":", t);
    }

    #[inline(always)]
    fn raw(&mut self, s: &[u8]) {
        match self.bytes.get_mut(self.len..self.len + s.len()) {
            Some(to) => {
                to.copy_from_slice(s);
                self.len += s.len();
            }
            None => self.overflowed = true,
        }
    }

    /// `v` in decimal, as `itoa` (and so serde_json) spells it: four digits at a time into
    /// `digits`, right-aligned, and then copied over as a fixed 20 bytes (the most a
    /// `u64` takes), of which the line keeps the digits; what follows them is written over.
    #[inline(always)]
    fn num(&mut self, v: u64) {
        let digits = &mut self.digits;
        let mut i = U64_DIGITS;
        let mut v = v;
        while v >= 10_000 {
            let r = (v % 10_000) as usize;
            v /= 10_000;
            let (hi, lo) = (r / 100 * 2, r % 100 * 2);
            i -= 4;
            digits[i..i + 2].copy_from_slice(&DIGITS[hi..hi + 2]);
            digits[i + 2..i + 4].copy_from_slice(&DIGITS[lo..lo + 2]);
        }
        let mut v = v as usize;
        if v >= 100 {
            let lo = v % 100 * 2;
            v /= 100;
            i -= 2;
            digits[i..i + 2].copy_from_slice(&DIGITS[lo..lo + 2]);
        }
        if v >= 10 {
            i -= 2;
            digits[i..i + 2].copy_from_slice(&DIGITS[v * 2..v * 2 + 2]);
        } else {
            i -= 1;
            digits[i] = b'0' + v as u8;
        }
        match self.bytes.get_mut(self.len..self.len + U64_DIGITS) {
            Some(to) => {
                to.copy_from_slice(&self.digits[i..i + U64_DIGITS]);
                self.len += U64_DIGITS - i;
            }
            None => self.overflowed = true,
        }
    }

    /// `key` is the literal `,"name":` that precedes the value.
    #[inline(always)]
    fn field(&mut self, key: &[u8], v: impl Into<u64>) {
        self.raw(key);
        self.num(v.into());
    }

    /// A string field, when the string needs no escape (false otherwise: take serde's path).
    #[inline(always)]
    fn plain_str(&mut self, key: &[u8], s: &str) -> bool {
        if s.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20) {
            return false;
        }
        self.raw(key);
        self.raw(b"\"");
        self.raw(s.as_bytes());
        self.raw(b"\"");
        true
    }

    #[inline(always)]
    fn list(&mut self, key: &[u8], v: impl Iterator<Item = u32>) {
        self.raw(key);
        self.raw(b"[");
        for (i, x) in v.enumerate() {
            if i > 0 {
                self.raw(b",");
            }
            self.num(x.into());
        }
        self.raw(b"]");
    }

    /// Ends the line: false when it did not fit.
    #[inline(always)]
    fn end(&mut self) -> bool {
        self.raw(b"}");
        !self.overflowed
    }
}

/// Writes the line of a `send` event into `l`; false when serde's path must write it.
#[inline(always)]
pub(crate) fn send_line(l: &mut Line, t: Nanos, s: &Sent) -> bool {
    l.start(t);
    l.field(b",\"kind\":\"send\",\"id\":", s.id);
    l.field(b",\"from\":", s.from);
    l.field(b",\"to\":", s.to);
    l.field(b",\"bytes\":", s.bytes);
    if !l.plain_str(b",\"msg\":", s.msg) {
        return false;
    }
    if let Some(seq) = s.seq {
        l.field(b",\"seq\":", seq);
    }
    if let Some(step) = s.step {
        l.field(b",\"step\":", step);
    }
    l.field(b",\"arrive_ns\":", s.arrive_ns);
    l.end()
}

/// Writes the line of a `deliver` event into `l`.
#[inline(always)]
pub(crate) fn deliver_line(l: &mut Line, t: Nanos, id: u64, from: u32, to: u32) -> bool {
    l.start(t);
    l.field(b",\"kind\":\"deliver\",\"id\":", id);
    l.field(b",\"from\":", from);
    l.field(b",\"to\":", to);
    l.end()
}

/// Writes the line of `rank`'s `step` event into `l`; false when it waits for too many ranks
/// to fit.
#[inline(always)]
pub(crate) fn step_line(
    l: &mut Line,
    t: Nanos,
    rank: u32,
    (group, generation, seq): (GroupId, Generation, SeqNo),
    (step, steps): (u32, u32),
    waiting_for: impl Iterator<Item = u32>,
) -> bool {
    l.start(t);
    l.field(b",\"kind\":\"step\",\"rank\":", rank);
    l.field(b",\"group\":", group.0);
    l.field(b",\"generation\":", generation.0);
    l.field(b",\"seq\":", seq.0);
    l.field(b",\"step\":", step);
    l.field(b",\"steps\":", steps);
    l.list(b",\"waiting_for\":", waiting_for);
    l.end()
}

/// Writes the line of a common kind into `l`; false for every other kind, or when serde's
/// path must write it.
pub(crate) fn common_line(l: &mut Line, t: Nanos, ev: &Event) -> bool {
    match ev {
        Event::Send { .. } => ev.as_sent().is_some_and(|s| send_line(l, t, &s)),
        Event::Deliver { id, from, to } => deliver_line(l, t, *id, *from, *to),
        Event::Step {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
        } => step_line(
            l,
            t,
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
            l.start(t);
            l.field(b",\"kind\":\"compute\",\"rank\":", *rank);
            l.field(b",\"iteration\":", *iteration);
            l.field(b",\"duration_ns\":", *duration_ns);
            l.end()
        }
        Event::ComputeDone { rank } => {
            l.start(t);
            l.field(b",\"kind\":\"compute_done\",\"rank\":", *rank);
            l.end()
        }
        Event::Iteration { rank, iteration } => {
            l.start(t);
            l.field(b",\"kind\":\"iteration\",\"rank\":", *rank);
            l.field(b",\"iteration\":", *iteration);
            l.end()
        }
        _ => false,
    }
}
