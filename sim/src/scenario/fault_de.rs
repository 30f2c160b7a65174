//! Deserializing [`Fault`] by hand.
//!
//! serde's derive for an internally tagged enum buffers the whole table before it looks at
//! `kind`, so every error inside a fault (a bad unit, a negative rank, an unknown key) loses its
//! position and names no key. This visitor reads each key's value with its own type as it comes,
//! so value errors keep their spans, and then checks the keys against the fault's kind, naming
//! the offending key and the keys that kind accepts.

use super::model::{Dtype, Fault, OpKind};
use crate::fault::{FaultKind, Trigger};
use crate::units::{Duration, Size};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fmt;

/// The keys each kind accepts (after `kind`), and how many of the first ones are required.
/// `at` stands for the trigger: `at` or `at_call`, exactly one of them (see [`trigger`]).
fn keys_of(kind: FaultKind) -> (&'static [&'static str], usize) {
    match kind {
        FaultKind::Preempt => (&["rank", "at", "restart_after", "at_call"], 2),
        FaultKind::Pause => (&["rank", "at", "duration", "at_call"], 3),
        FaultKind::Partition => (&["sides", "at", "duration", "oneway"], 2),
        FaultKind::Delay => (
            &[
                "at", "extra", "rank", "link", "duration", "jitter", "at_call",
            ],
            2,
        ),
        FaultKind::Loss => (&["at", "rate", "rank", "link", "duration", "at_call"], 2),
        FaultKind::Slow => (&["rank", "at", "factor", "duration", "at_call"], 3),
        FaultKind::Mismatch => (
            &[
                "rank",
                "iteration",
                "op_index",
                "op",
                "bytes",
                "root",
                "dtype",
            ],
            2,
        ),
        FaultKind::Skip => (&["rank", "iteration", "op_index"], 2),
        FaultKind::Hang => (&["rank", "iteration"], 2),
    }
}

/// Every key some kind accepts.
const ALL_KEYS: &[&str] = &[
    "kind",
    "rank",
    "at",
    "at_call",
    "duration",
    "restart_after",
    "sides",
    "oneway",
    "link",
    "extra",
    "jitter",
    "rate",
    "factor",
    "iteration",
    "op_index",
    "op",
    "bytes",
    "root",
    "dtype",
];

/// Every value a fault table may hold, before its kind is known.
#[derive(Default)]
struct Slots {
    kind: Option<FaultKind>,
    rank: Option<u32>,
    at: Option<Duration>,
    at_call: Option<u32>,
    duration: Option<Duration>,
    restart_after: Option<Duration>,
    sides: Option<Vec<Vec<u32>>>,
    oneway: Option<bool>,
    link: Option<Link>,
    extra: Option<Duration>,
    jitter: Option<Duration>,
    rate: Option<f64>,
    factor: Option<f64>,
    iteration: Option<u32>,
    op_index: Option<u32>,
    op: Option<OpKind>,
    bytes: Option<Size>,
    root: Option<u32>,
    dtype: Option<Dtype>,
}

/// `link = [a, b]`: exactly two ranks (an array of serde's would ignore further entries).
struct Link([u32; 2]);

impl<'de> Deserialize<'de> for Link {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let ranks = Vec::<u32>::deserialize(d)?;
        let n = ranks.len();
        <[u32; 2]>::try_from(ranks)
            .map(Link)
            .map_err(|_| de::Error::invalid_length(n, &"a link of two ranks, `[a, b]`"))
    }
}

fn fill<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    key: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(key));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

fn list<T: fmt::Display>(keys: &[T]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    quoted.join(", ")
}

struct FaultVisitor;

impl<'de> Visitor<'de> for FaultVisitor {
    type Value = Fault;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a fault table with a `kind`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fault, A::Error> {
        let mut s = Slots::default();
        // keys in the order they came, known ones as their static name
        let mut seen: Vec<&'static str> = Vec::new();
        let mut unknown: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            let Some(&name) = ALL_KEYS.iter().find(|k| **k == key) else {
                unknown.get_or_insert(key);
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            seen.push(name);
            match name {
                "kind" => fill(&mut map, &mut s.kind, name)?,
                "rank" => fill(&mut map, &mut s.rank, name)?,
                "at" => fill(&mut map, &mut s.at, name)?,
                "at_call" => fill(&mut map, &mut s.at_call, name)?,
                "duration" => fill(&mut map, &mut s.duration, name)?,
                "restart_after" => fill(&mut map, &mut s.restart_after, name)?,
                "sides" => fill(&mut map, &mut s.sides, name)?,
                "oneway" => fill(&mut map, &mut s.oneway, name)?,
                "link" => fill(&mut map, &mut s.link, name)?,
                "extra" => fill(&mut map, &mut s.extra, name)?,
                "jitter" => fill(&mut map, &mut s.jitter, name)?,
                "rate" => fill(&mut map, &mut s.rate, name)?,
                "factor" => fill(&mut map, &mut s.factor, name)?,
                "iteration" => fill(&mut map, &mut s.iteration, name)?,
                "op_index" => fill(&mut map, &mut s.op_index, name)?,
                "op" => fill(&mut map, &mut s.op, name)?,
                "bytes" => fill(&mut map, &mut s.bytes, name)?,
                "root" => fill(&mut map, &mut s.root, name)?,
                _ => fill(&mut map, &mut s.dtype, name)?,
            }
        }
        let Some(kind) = s.kind else {
            return Err(match unknown {
                Some(k) => de::Error::custom(format!(
                    "unknown field `{k}`, expected one of {}",
                    list(ALL_KEYS)
                )),
                None => de::Error::custom(format!(
                    "missing field `kind`: say which fault this is, one of {}",
                    list(FaultKind::ALL)
                )),
            });
        };
        let (keys, required) = keys_of(kind);
        let bad = unknown.or_else(|| {
            seen.iter()
                .find(|k| **k != "kind" && !keys.contains(k))
                .map(|k| k.to_string())
        });
        if let Some(k) = bad {
            return Err(de::Error::custom(format!(
                "unknown field `{k}` for a `{}` fault, expected one of `kind`, {}",
                kind,
                list(keys)
            )));
        }
        let triggered = |k: &&&str| **k == "at" && seen.contains(&"at_call");
        let missing = keys[..required]
            .iter()
            .find(|k| !seen.contains(k) && !triggered(k));
        if let Some(k) = missing {
            let needs = list(&keys[..required]);
            let needs = match keys.contains(&"at_call") {
                true => needs.replace("`at`", "`at` (or `at_call`)"),
                false => needs,
            };
            return Err(de::Error::custom(format!(
                "missing field `{k}`: a `{kind}` fault needs {needs}"
            )));
        }
        let at = trigger(&s)?;
        build(kind, s, at)
            .ok_or_else(|| de::Error::custom("internal error: fault keys out of sync"))
    }
}

/// The trigger of a timed fault: `at` or `at_call`, not both (a fault without either is
/// refused as missing `at` before this).
fn trigger<E: de::Error>(s: &Slots) -> Result<Option<Trigger>, E> {
    match (s.at, s.at_call) {
        (Some(_), Some(_)) => Err(E::custom(
            "field `at_call`: a fault begins `at` a time or `at_call` a call of its rank, \
             not both",
        )),
        (Some(at), None) => Ok(Some(Trigger::At(at))),
        (None, Some(k)) => Ok(Some(Trigger::AtCall(k))),
        (None, None) => Ok(None),
    }
}

/// Assembles the fault; `None` only if `keys_of` and this function disagree on a required key.
fn build(kind: FaultKind, s: Slots, at: Option<Trigger>) -> Option<Fault> {
    Some(match kind {
        FaultKind::Preempt => Fault::Preempt {
            rank: s.rank?,
            at: at?,
            restart_after: s.restart_after,
        },
        FaultKind::Pause => Fault::Pause {
            rank: s.rank?,
            at: at?,
            duration: s.duration?,
        },
        FaultKind::Partition => Fault::Partition {
            sides: s.sides?,
            at: at?,
            duration: s.duration,
            oneway: s.oneway.unwrap_or(false),
        },
        FaultKind::Delay => Fault::Delay {
            rank: s.rank,
            link: s.link.map(|l| l.0),
            at: at?,
            duration: s.duration,
            extra: s.extra?,
            jitter: s.jitter,
        },
        FaultKind::Loss => Fault::Loss {
            rank: s.rank,
            link: s.link.map(|l| l.0),
            at: at?,
            duration: s.duration,
            rate: s.rate?,
        },
        FaultKind::Slow => Fault::Slow {
            rank: s.rank?,
            at: at?,
            duration: s.duration,
            factor: s.factor?,
        },
        FaultKind::Mismatch => Fault::Mismatch {
            rank: s.rank?,
            iteration: s.iteration?,
            op_index: s.op_index,
            op: s.op,
            bytes: s.bytes,
            root: s.root,
            dtype: s.dtype,
        },
        FaultKind::Skip => Fault::Skip {
            rank: s.rank?,
            iteration: s.iteration?,
            op_index: s.op_index,
        },
        FaultKind::Hang => Fault::Hang {
            rank: s.rank?,
            iteration: s.iteration?,
        },
    })
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FaultVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_lists_its_keys() {
        for &kind in FaultKind::ALL {
            let name = kind.name();
            let (keys, required) = keys_of(kind);
            assert!(required <= keys.len());
            assert!(keys.iter().all(|k| ALL_KEYS.contains(k)), "{name}");
        }
    }

    #[test]
    fn required_keys_are_enough_to_build() {
        for &kind in FaultKind::ALL {
            let (keys, required) = keys_of(kind);
            let mut obj = serde_json::Map::new();
            obj.insert("kind".into(), kind.name().into());
            for k in &keys[..required] {
                let v = match *k {
                    "at" | "duration" | "extra" => serde_json::json!("1ms"),
                    "sides" => serde_json::json!([[0], [1]]),
                    "rate" | "factor" => serde_json::json!(0.5),
                    _ => serde_json::json!(1),
                };
                obj.insert(k.to_string(), v);
            }
            let fault: Fault = serde_json::from_value(obj.into()).unwrap();
            assert_eq!(fault.kind(), kind);
        }
    }

    #[test]
    fn keys_of_another_kind_are_rejected() {
        let v = serde_json::json!({"kind": "pause", "rank": 1, "at": "1ms", "duration": "1ms", "factor": 2.0});
        let e = serde_json::from_value::<Fault>(v).unwrap_err().to_string();
        assert!(
            e.starts_with("unknown field `factor` for a `pause` fault"),
            "{e}"
        );
        assert!(e.contains("`duration`"), "{e}");
    }
}
