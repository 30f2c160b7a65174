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
    Dict(Vec<(NodeId, NodeId)>),
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
}

impl<'a> Tree<'a> {
    /// An empty tree that builds in `nodes`' allocation (see [`Tree::recycle`]).
    pub fn with_arena(nodes: Vec<Node<'static>>) -> Tree<'a> {
        Tree {
            nodes: recycle(nodes),
            root: 0,
        }
    }

    /// The tree's arena, emptied, for the next tree to build in: a reader decoding many dumps
    /// keeps one arena, warm in cache, instead of allocating one per dump.
    pub fn recycle(self) -> Vec<Node<'static>> {
        recycle(self.nodes)
    }

    pub fn push(&mut self, n: Node<'a>) -> NodeId {
        self.nodes.push(n);
        (self.nodes.len() - 1) as NodeId
    }

    pub fn get(&self, id: NodeId) -> &Node<'a> {
        &self.nodes[id as usize]
    }

    /// The string at `id`, if it is one.
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
