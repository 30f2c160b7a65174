//! The JSON form of a dump (`_dump_fr_trace_json`), read into the same tree as a pickle.
//! serde_json refuses nesting deeper than 128, so the recursion here is bounded.

use super::tree::{Arena, Node, NodeId, Tree, FALSE, MAX_DOCUMENT, NONE, TRUE};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

struct Seed<'t, 'a> {
    tree: &'t mut Tree<'a>,
}

impl<'de, 't> DeserializeSeed<'de> for Seed<'t, 'de> {
    type Value = NodeId;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<NodeId, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 't> Visitor<'de> for Seed<'t, 'de> {
    type Value = NodeId;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<NodeId, E> {
        Ok(if v { TRUE } else { FALSE })
    }

    fn visit_i64<E>(self, v: i64) -> Result<NodeId, E> {
        Ok(self.tree.int(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<NodeId, E> {
        Ok(match i64::try_from(v) {
            Ok(v) => self.tree.int(v),
            Err(_) => self.tree.push(Node::BigInt),
        })
    }

    fn visit_f64<E>(self, v: f64) -> Result<NodeId, E> {
        Ok(self.tree.push(Node::Float(v)))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<NodeId, E> {
        Ok(self.tree.push_str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<NodeId, E> {
        Ok(self.tree.push_str(Cow::Owned(v.to_string())))
    }

    fn visit_unit<E>(self) -> Result<NodeId, E> {
        Ok(NONE)
    }

    fn visit_none<E>(self) -> Result<NodeId, E> {
        Ok(NONE)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeId, A::Error> {
        let mut items: smallvec::SmallVec<[NodeId; 8]> = smallvec::SmallVec::new();
        while let Some(id) = seq.next_element_seed(Seed {
            tree: &mut *self.tree,
        })? {
            items.push(id);
        }
        // a document is at most 1 GiB, far from 2^32 items
        let items = (self.tree.new_items(&items))
            .ok_or_else(|| de::Error::custom("more than 2^32 items in lists"))?;
        Ok(self.tree.push(Node::List(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeId, A::Error> {
        let mut items = Vec::new();
        while let Some(k) = map.next_key_seed(Seed {
            tree: &mut *self.tree,
        })? {
            let v = map.next_value_seed(Seed {
                tree: &mut *self.tree,
            })?;
            items.push([k, v]);
        }
        (self.tree.new_dict(&items))
            .ok_or_else(|| de::Error::custom("more than 2^32 items in dicts"))
    }
}

/// Decodes a JSON document into a tree.
pub fn decode(buf: &[u8]) -> Result<Tree<'_>, serde_json::Error> {
    decode_in(buf, Arena::default())
}

/// Decodes a JSON document into a tree built in `arena`'s allocation.
pub fn decode_in<'a>(buf: &'a [u8], arena: Arena) -> Result<Tree<'a>, serde_json::Error> {
    if buf.len() > MAX_DOCUMENT {
        return Err(de::Error::custom(format!(
            "larger than {MAX_DOCUMENT} bytes: not a dump"
        )));
    }
    let mut tree = Tree::with_arena(arena);
    tree.reserve(buf.len() / 8);
    let mut de = serde_json::Deserializer::from_slice(buf);
    let root = Seed { tree: &mut tree }.deserialize(&mut de)?;
    de.end()?;
    tree.root = root;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_document() {
        let t = decode(br#"{"a": [1, 18446744073709551615, "x\"y"], "b": null}"#).unwrap();
        let Node::Dict(d) = t.get(t.root) else {
            panic!()
        };
        let Node::List(v) = t.get(t.field(d, "a").unwrap()) else {
            panic!()
        };
        let v = t.items(v);
        assert_eq!(t.get(v[0]), Node::Int(1));
        assert_eq!(t.get(v[1]), Node::BigInt);
        assert_eq!(t.str(v[2]), Some("x\"y"));
        assert_eq!(t.get(t.field(d, "b").unwrap()), Node::None);
        assert!(decode(b"[1, 2").is_err());
        assert!(decode(b"{} x").is_err());
        let deep = "[".repeat(1000);
        assert!(decode(deep.as_bytes()).is_err());
    }
}
