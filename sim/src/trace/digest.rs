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

use super::encode;
use super::event::{Event, Sent};
use crate::proto::data::{mix, Fnv};
use crate::proto::StepEvent;
use crate::units::Nanos;
use serde::ser::{self, Serialize};
use std::fmt;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

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
        if !encode::digest_common(&mut w, ev) {
            serialize(&mut w, ev);
        }
        self.finish_event(w);
    }

    /// Adds a `send` event (as [`Digest::update`] of [`Sent::event`]).
    #[inline(always)]
    pub fn update_send(&mut self, t: Nanos, s: &Sent) {
        let mut w = self.lanes;
        w.word(t);
        encode::digest_send(&mut w, s);
        self.finish_event(w);
    }

    /// Adds a `deliver` event.
    #[inline(always)]
    pub fn update_deliver(&mut self, t: Nanos, id: u64, from: u32, to: u32) {
        let mut w = self.lanes;
        w.word(t);
        encode::digest_deliver(&mut w, id, from, to);
        self.finish_event(w);
    }

    /// Adds the `step` event of `rank`'s step `s`.
    #[inline(always)]
    pub fn update_step(&mut self, t: Nanos, rank: u32, s: &StepEvent) {
        let mut w = self.lanes;
        w.word(t);
        encode::digest_step(
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

/// The last 1 to 7 bytes of a string as a little-endian word, zero-padded: read as two
/// overlapping loads rather than copied byte by byte into a zeroed word, which the load of the
/// whole word would have to wait for (`"coll"`, the kind of most messages, is all tail).
#[inline(always)]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    let (lo, hi, k) = if n >= 4 {
        let lo = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let hi = u32::from_le_bytes([rest[n - 4], rest[n - 3], rest[n - 2], rest[n - 1]]);
        (u64::from(lo), u64::from(hi), n - 4)
    } else if n >= 2 {
        let lo = u16::from_le_bytes([rest[0], rest[1]]);
        let hi = u16::from_le_bytes([rest[n - 2], rest[n - 1]]);
        (u64::from(lo), u64::from(hi), n - 2)
    } else {
        (u64::from(rest[0]), 0, 0)
    };
    // the two loads overlap on equal bytes, so or-ing them is exact
    lo | (hi << (8 * k))
}

/// Every other kind, through serde.
#[inline(never)]
fn serialize(w: &mut Words, ev: &Event) {
    // every event serializes: the data model has no failure for it
    let _ = ev.serialize(w);
}

/// The words of one event being folded into four lanes; also a serde serializer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Words {
    /// The lane the next word goes to is `a`; the lanes rotate after each word, so that each
    /// stays in a register.
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

/// What each lane starts from, besides the state.
const LANES: [u64; 4] = [
    0,
    0x243F_6A88_85A3_08D3,
    0x1319_8A2E_0370_7344,
    0xA409_3822_299F_31D0,
];

impl Words {
    #[inline(always)]
    fn new(state: u64) -> Words {
        Words {
            a: state ^ LANES[0],
            b: state ^ LANES[1],
            c: state ^ LANES[2],
            d: state ^ LANES[3],
        }
    }

    #[inline(always)]
    pub fn word(&mut self, w: u64) {
        let h = (self.a.rotate_left(23) ^ w).wrapping_mul(K);
        self.a = self.b;
        self.b = self.c;
        self.c = self.d;
        self.d = h;
    }

    /// The four lanes as one word. Which lane holds which words depends on the word count
    /// modulo 4; the count of words is part of the encoding (lengths), so that is fixed.
    #[inline(always)]
    fn combined(&self) -> u64 {
        self.a ^ self.b.rotate_left(16) ^ self.c.rotate_left(32) ^ self.d.rotate_left(48)
    }

    /// A string's words; inlined, so that a kind's name folds into constants and the short
    /// name of a message's kind takes two words without a loop.
    #[inline(always)]
    pub fn str(&mut self, s: &str) {
        let b = s.as_bytes();
        self.word(b.len() as u64);
        match b.len() {
            0 => {}
            1..=7 => self.word(tail_word(b)),
            _ => self.long_str(b),
        }
    }

    #[inline]
    fn long_str(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.word(tail_word(rest));
        }
    }

    #[inline]
    pub fn opt(&mut self, v: Option<u64>) {
        match v {
            Some(v) => {
                self.word(1);
                self.word(v);
            }
            None => self.word(0),
        }
    }
}

/// The encoding never fails; serde wants an error type anyway.
#[derive(Debug)]
pub struct Never;

impl fmt::Display for Never {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unencodable")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Never
    }
}

type R = Result<(), Never>;

impl ser::Serializer for &mut Words {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> R {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> R {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> R {
        self.word(v as u64);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> R {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> R {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> R {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> R {
        self.word(v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> R {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> R {
        self.word(v.to_bits());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.word(u64::from(v));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> R {
        self.str(v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.word(v.len() as u64);
        v.iter().for_each(|&b| self.word(u64::from(b)));
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.word(0);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> R {
        self.word(1);
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        self.str(variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> R {
        self.str(variant);
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, Never> {
        self.word(len.unwrap_or(0) as u64);
        Ok(self)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self, Never> {
        self.word(len as u64);
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Self, Never> {
        self.word(len as u64);
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self, Never> {
        self.str(variant);
        self.word(len as u64);
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self, Never> {
        self.word(len.unwrap_or(0) as u64);
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self, Never> {
        self.str(variant);
        Ok(self)
    }
}

/// The compound serializers: each element or field is encoded in turn (a map's keys too).
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut Words {
            type Ok = ();
            type Error = Never;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
                value.serialize(&mut **self)
            }
            fn end(self) -> R {
                Ok(())
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Words {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> R {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> R {
        value.serialize(&mut **self)
    }
    fn end(self) -> R {
        Ok(())
    }
}

/// The fields of a struct, or of an enum's struct variant: a field left out encodes as 0.
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for &mut Words {
            type Ok = ();
            type Error = Never;
            fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, value: &T) -> R {
                value.serialize(&mut **self)
            }
            fn skip_field(&mut self, _: &'static str) -> R {
                self.word(0);
                Ok(())
            }
            fn end(self) -> R {
                Ok(())
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::tail_word;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_tail_is_its_bytes_zero_padded(rest in proptest::collection::vec(any::<u8>(), 1..8)) {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(&rest);
            prop_assert_eq!(tail_word(&rest), u64::from_le_bytes(last));
        }
    }
}
