//! The plain data a dump holds, decoded from either format into one arena.
//!
//! A pickle may refer to one object from many places (its memo); the arena keeps such an
//! object once and lets every place point to it, so a file that repeats a reference a million
//! times still decodes in memory proportional to its size. Readers of the tree walk only the
//! shapes they expect, so cycles and deep nesting never make them recurse without bound.

use smallvec::SmallVec;
use std::borrow::Cow;

/// Index of a node in the arena.
pub type NodeId = u32;

/// The items of a list, tuple or set: most lists of a dump hold a tensor's few sizes or one
/// dtype, kept without an allocation of their own.
pub type Items = SmallVec<[NodeId; 4]>;

/// One value of the dump.
#[derive(Clone, Debug, PartialEq)]
pub enum Node<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond 64 bits (kept only to name it in an error).
    BigInt,
    Float(f64),
    Str(Cow<'a, str>),
    Bytes,
    List(Items),
    Tuple(Items),
    Dict(Pairs),
    Set(Items),
}

impl Node<'_> {
    /// What the value is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::None => "None/null",
            Node::Bool(_) => "a boolean",
            Node::Int(_) => "an integer",
            Node::BigInt => "an integer beyond 64 bits",
            Node::Float(_) => "a float",
            Node::Str(_) => "a string",
            Node::Bytes => "bytes",
            Node::List(_) => "a list",
            Node::Tuple(_) => "a tuple",
            Node::Dict(_) => "a dict",
            Node::Set(_) => "a set",
        }
    }
}

/// A decoded document: its nodes and the root.
#[derive(Debug, Default)]
pub struct Tree<'a> {
    pub nodes: Vec<Node<'a>>,
    pub root: NodeId,
    /// Emptied dicts of an earlier tree, for new dicts to take (see [`Tree::dict`]).
    spare: Vec<Pairs>,
}

/// The items of a dict.
pub type Pairs = Vec<(NodeId, NodeId)>;

/// What a decoded tree leaves for the next one to build in: its emptied node arena and
/// dicts. A reader decoding many dumps keeps one, warm in cache, instead of allocating (and
/// freeing) an arena and a dict per record for every dump.
#[derive(Debug, Default)]
pub struct Arena {
    nodes: Vec<Node<'static>>,
    dicts: Vec<Pairs>,
}

/// Dicts larger than this are not kept for reuse.
const SPARE_DICT: usize = 64;

impl<'a> Tree<'a> {
    /// An empty tree that builds in `arena`.
    pub fn with_arena(arena: Arena) -> Tree<'a> {
        Tree {
            nodes: recycle(arena.nodes),
            root: 0,
            spare: arena.dicts,
        }
    }

    /// The tree's arena, emptied, for the next tree to build in.
    pub fn recycle(self) -> Arena {
        let mut nodes = self.nodes;
        let mut dicts = self.spare;
        // at most one dict per dict node of a tree is kept: a reader holds no more than its
        // largest dump needed
        for n in nodes.drain(..) {
            if let Node::Dict(mut d) = n {
                if (1..=SPARE_DICT).contains(&d.capacity()) {
                    d.clear();
                    dicts.push(d);
                }
            }
        }
        Arena {
            nodes: recycle(nodes),
            dicts,
        }
    }

    /// A new, empty dict node.
    #[inline]
    pub fn dict(&mut self) -> NodeId {
        let d = self.spare.pop().unwrap_or_default();
        self.push(Node::Dict(d))
    }

    #[inline]
    pub fn push(&mut self, n: Node<'a>) -> NodeId {
        self.nodes.push(n);
        (self.nodes.len() - 1) as NodeId
    }

    #[inline]
    pub fn get(&self, id: NodeId) -> &Node<'a> {
        &self.nodes[id as usize]
    }

    /// The string at `id`, if it is one.
    #[inline]
    pub fn str(&self, id: NodeId) -> Option<&str> {
        match self.get(id) {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of `key` in the dict at `dict` (keys are strings).
    pub fn field(&self, dict: &[(NodeId, NodeId)], key: &str) -> Option<NodeId> {
        dict.iter()
            .find(|(k, _)| self.str(*k) == Some(key))
            .map(|(_, v)| *v)
    }
}

/// Empties `nodes` and hands its allocation to nodes of another lifetime (an empty vector
/// collected in place keeps its buffer).
fn recycle<'b>(mut nodes: Vec<Node<'_>>) -> Vec<Node<'b>> {
    nodes.clear();
    nodes.into_iter().map(|_| Node::None).collect()
}
