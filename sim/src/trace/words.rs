//! The words of one event, as the run digest ([`super::Digest`]) hashes them: the encoding the
//! digest's module doc defines, written as a serde serializer ([`Words`]) for every kind, and
//! spelled out by hand for the commonest kinds (`send`, `deliver`, `step`, `compute`,
//! `compute_done`, `iteration`), which a test holds to the same words.

use super::event::{Event, Sent};
use crate::proto::{Generation, GroupId, SeqNo};
use serde::ser::{self, Serialize};
use std::fmt;

/// The multiplier of each fold of a word into a lane.
pub(super) const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The last 1 to 7 bytes of a string as a little-endian word, zero-padded: read as two
/// overlapping loads rather than copied byte by byte into a zeroed word, which the load of the
/// whole word would have to wait for (`"coll"`, the kind of most messages, is all tail).
#[inline(always)]
pub(super) fn tail_word(rest: &[u8]) -> u64 {
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
pub(super) fn serialize(w: &mut Words, ev: &Event) {
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
    pub(super) fn new(state: u64) -> Words {
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
    pub(super) fn combined(&self) -> u64 {
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

/// Feeds the commonest kinds into a digest word by word, exactly as their serde encoding does
/// (`digest.rs`); false for every other kind. A test holds the two to the same words.
#[inline(always)]
pub(super) fn common(w: &mut Words, ev: &Event) -> bool {
    match ev {
        Event::Send { .. } => {
            if let Some(sent) = ev.as_sent() {
                send(w, &sent);
            }
        }
        Event::Deliver { id, from, to } => deliver(w, *id, *from, *to),
        Event::Step {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
        } => self::step(
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
pub(super) fn send(w: &mut Words, s: &Sent) {
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
pub(super) fn deliver(w: &mut Words, id: u64, from: u32, to: u32) {
    w.str("deliver");
    w.word(id);
    w.word(u64::from(from));
    w.word(u64::from(to));
}

/// The words of a `step` event of `rank`'s call `(group, generation, seq)` entering `step` of
/// `steps`, after its time.
#[inline(always)]
pub(super) fn step(
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

#[cfg(test)]
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
