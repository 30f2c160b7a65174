//! A fast path for reading the commonest event lines — `send`, `deliver`, `step`, `call`,
//! `complete`, `compute`, `compute_done`, `iteration`: nearly every line of a collective-heavy
//! trace — exactly as [`encode_line`](super::encode_line) spells them: fixed key order, no
//! spaces, plain numbers, strings without escapes.
//!
//! serde reads an internally tagged enum by buffering every field first; this reads those
//! lines directly, several times faster. Anything that does not match the spelling exactly —
//! another key order, whitespace, an escape, a new field — returns `None` and takes the
//! general path, so the fast path can only ever agree with serde (a property test holds it to
//! that).

use super::Event;
use crate::proto::{Generation, GroupId, SeqNo};
use crate::units::Nanos;
use serde::de::value::{Error as ValueError, StrDeserializer};
use serde::de::DeserializeOwned;

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn lit(&mut self, s: &str) -> Option<()> {
        let s = s.as_bytes();
        if self.b.get(self.i..self.i + s.len())? == s {
            self.i += s.len();
            Some(())
        } else {
            None
        }
    }

    /// Consumes `s` if it comes next.
    fn has(&mut self, s: &str) -> bool {
        self.lit(s).is_some()
    }

    /// A JSON number that is a plain unsigned integer (no sign, fraction, exponent or
    /// leading zero, as serde_json requires).
    fn u64(&mut self) -> Option<u64> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(d) = self.b.get(self.i).filter(|c| c.is_ascii_digit()) {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let n = self.i - start;
        let leading_zero = n > 1 && self.b[start] == b'0';
        let not_plain = matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'));
        (n > 0 && !leading_zero && !not_plain).then_some(v)
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }

    /// The rest of a string whose opening quote was consumed, when it has no escape.
    fn plain_str(&mut self) -> Option<&'a str> {
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' => return None,
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
        let s = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        self.i += 1;
        Some(s)
    }

    /// A unit enum (op, algorithm, dtype, reduction) by its name.
    fn name<T: DeserializeOwned>(&mut self, key: &str) -> Option<T> {
        self.lit(key)?;
        self.lit("\"")?;
        let s = self.plain_str()?;
        T::deserialize(StrDeserializer::<ValueError>::new(s)).ok()
    }

    fn u32_list(&mut self) -> Option<Vec<u32>> {
        self.lit("[")?;
        let mut v = Vec::new();
        if self.has("]") {
            return Some(v);
        }
        loop {
            v.push(self.u32()?);
            if self.has("]") {
                return Some(v);
            }
            self.lit(",")?;
        }
    }

    fn field_u64(&mut self, key: &str) -> Option<u64> {
        self.lit(key)?;
        self.u64()
    }

    fn field_u32(&mut self, key: &str) -> Option<u32> {
        self.lit(key)?;
        self.u32()
    }

    fn close(&mut self) -> Option<()> {
        self.lit("}")?;
        (self.i == self.b.len()).then_some(())
    }
}

/// The event on `text`, when it is one of the kinds read here, spelled as the writer spells it.
pub(super) fn parse(text: &str) -> Option<(Nanos, Event)> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.lit("{\"t\":")?;
    let t = c.u64()?;
    c.lit(",\"kind\":\"")?;
    let ev = if c.has("deliver\"") {
        let id = c.field_u64(",\"id\":")?;
        let from = c.field_u32(",\"from\":")?;
        let to = c.field_u32(",\"to\":")?;
        Event::Deliver { id, from, to }
    } else if c.has("send\"") {
        c.send()?
    } else if c.has("step\"") {
        c.step()?
    } else if c.has("call\"") {
        c.call()?
    } else if c.has("complete\"") {
        c.complete()?
    } else if c.has("compute\"") {
        Event::Compute {
            rank: c.field_u32(",\"rank\":")?,
            iteration: c.field_u32(",\"iteration\":")?,
            duration_ns: c.field_u64(",\"duration_ns\":")?,
        }
    } else if c.has("compute_done\"") {
        Event::ComputeDone {
            rank: c.field_u32(",\"rank\":")?,
        }
    } else if c.has("iteration\"") {
        Event::Iteration {
            rank: c.field_u32(",\"rank\":")?,
            iteration: c.field_u32(",\"iteration\":")?,
        }
    } else {
        return None;
    };
    c.close()?;
    Some((t, ev))
}

/// The kinds with more than a few fields, each read by a function of its own.
impl Cursor<'_> {
    /// The fields of a `send` event, after its kind.
    #[inline]
    fn send(&mut self) -> Option<Event> {
        let id = self.field_u64(",\"id\":")?;
        let from = self.field_u32(",\"from\":")?;
        let to = self.field_u32(",\"to\":")?;
        let bytes = self.field_u64(",\"bytes\":")?;
        self.lit(",\"msg\":\"")?;
        let msg = match self.plain_str()? {
            // the commonest kind, without an allocation
            "coll" => std::borrow::Cow::Borrowed("coll"),
            other => other.to_string().into(),
        };
        let seq = if self.has(",\"seq\":") {
            Some(self.u64()?)
        } else {
            None
        };
        let step = if self.has(",\"step\":") {
            Some(self.u32()?)
        } else {
            None
        };
        let arrive_ns = self.field_u64(",\"arrive_ns\":")?;
        Some(Event::Send {
            id,
            from,
            to,
            bytes,
            msg,
            seq,
            step,
            arrive_ns,
        })
    }

    /// The fields of a `step` event, after its kind.
    #[inline]
    fn step(&mut self) -> Option<Event> {
        let rank = self.field_u32(",\"rank\":")?;
        let group = GroupId(self.field_u32(",\"group\":")?);
        let generation = Generation(self.field_u32(",\"generation\":")?);
        let seq = SeqNo(self.field_u64(",\"seq\":")?);
        let step = self.field_u32(",\"step\":")?;
        let steps = self.field_u32(",\"steps\":")?;
        self.lit(",\"waiting_for\":")?;
        let waiting_for = self.u32_list()?.into();
        Some(Event::Step {
            rank,
            group,
            generation,
            seq,
            step,
            steps,
            waiting_for,
        })
    }

    /// The fields of a `call` event, after its kind.
    #[inline]
    fn call(&mut self) -> Option<Event> {
        Some(Event::Call {
            rank: self.field_u32(",\"rank\":")?,
            iteration: self.field_u32(",\"iteration\":")?,
            index: self.field_u32(",\"index\":")?,
            group: GroupId(self.field_u32(",\"group\":")?),
            generation: Generation(self.field_u32(",\"generation\":")?),
            seq: SeqNo(self.field_u64(",\"seq\":")?),
            op: self.name(",\"op\":")?,
            algorithm: self.name(",\"algorithm\":")?,
            bytes: self.field_u64(",\"bytes\":")?,
            dtype: self.name(",\"dtype\":")?,
            root: self.field_u32(",\"root\":")?,
            reduce: self.name(",\"reduce\":")?,
            elements: self.field_u32(",\"elements\":")?,
            members: self.field_u32(",\"members\":")?,
            peer: if self.has(",\"peer\":") {
                Some(self.u32()?)
            } else {
                None
            },
        })
    }

    /// The fields of a `complete` event, after its kind.
    #[inline]
    fn complete(&mut self) -> Option<Event> {
        let rank = self.field_u32(",\"rank\":")?;
        let group = GroupId(self.field_u32(",\"group\":")?);
        let generation = Generation(self.field_u32(",\"generation\":")?);
        let seq = SeqNo(self.field_u64(",\"seq\":")?);
        let iteration = self.field_u32(",\"iteration\":")?;
        let index = self.field_u32(",\"index\":")?;
        self.lit(",\"result\":\"")?;
        let result = self.plain_str()?.to_string();
        let correct = if self.has(",\"correct\":true") {
            Some(true)
        } else if self.has(",\"correct\":false") {
            Some(false)
        } else {
            None
        };
        Some(Event::Complete {
            rank,
            group,
            generation,
            seq,
            iteration,
            index,
            result,
            correct,
        })
    }
}

#[cfg(test)]
mod tests;
