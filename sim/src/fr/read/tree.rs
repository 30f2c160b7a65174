//! The plain data a dump holds, decoded from either format into one arena.
//!
//! A pickle may refer to one object from many places (its memo); the arena keeps such an
//! object once and lets every place point to it, so a file that repeats a reference a million
//! times still decodes in memory proportional to its size. Readers of the tree walk only the
//! shapes they expect, so cycles and deep nesting never make them recurse without bound.

use std::borrow::Cow;

/// Index of a node in the arena.
pub type NodeId = u32;

/// The items of a list, tuple or set: `len` of them from `start` of the tree's item pool, in
/// room for `cap` there. Every record of a dump makes a few lists (its stack frames, its
/// tensors' sizes), kept in one pool rather than in an allocation each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Items {
    start: u32,
    len: u32,
    cap: u32,
}

impl Items {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Why items could not be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendError {
    /// The target is not of the kind the opcode adds to; what it is.
    NotA(&'static str),
    /// The pool would pass 2^32 items.
    Full,
}

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
    /// The items of every list, tuple and set (see [`Items`]).
    pool: Vec<NodeId>,
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
    pool: Vec<NodeId>,
}

/// Dicts larger than this are not kept for reuse.
const SPARE_DICT: usize = 64;

impl<'a> Tree<'a> {
    /// An empty tree that builds in `arena`.
    pub fn with_arena(arena: Arena) -> Tree<'a> {
        let mut pool = arena.pool;
        pool.clear();
        Tree {
            nodes: recycle(arena.nodes),
            root: 0,
            pool,
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
            pool: self.pool,
        }
    }

    /// The items of a list, tuple or set.
    #[inline]
    pub fn items(&self, it: &Items) -> &[NodeId] {
        &self.pool[it.start as usize..][..it.len as usize]
    }

    /// New items holding `ids`; None when the pool would pass 2^32 items.
    pub fn new_items(&mut self, ids: &[NodeId]) -> Option<Items> {
        let start = u32::try_from(self.pool.len()).ok()?;
        let len = u32::try_from(ids.len()).ok()?;
        start.checked_add(len)?;
        self.pool.extend_from_slice(ids);
        Some(Items {
            start,
            len,
            cap: len,
        })
    }

    /// Adds `ids` to the items of node `id`, a list (`set` false) or a set. Items past their
    /// room move to the pool's end with room for as many again, so that appending to lists
    /// in turn costs no more than building them whole; the first items added take no more room
    /// than they need.
    pub fn append(&mut self, id: NodeId, ids: &[NodeId], set: bool) -> Result<(), AppendError> {
        let it = match &mut self.nodes[id as usize] {
            Node::List(it) if !set => it,
            Node::Set(it) if set => it,
            other => return Err(AppendError::NotA(other.kind())),
        };
        let n = u32::try_from(ids.len()).map_err(|_| AppendError::Full)?;
        let len = it.len.checked_add(n).ok_or(AppendError::Full)?;
        if len <= it.cap {
            let at = (it.start + it.len) as usize;
            self.pool[at..at + ids.len()].copy_from_slice(ids);
            it.len = len;
            return Ok(());
        }
        // the first items of a list get just their room (a pickler appends a list's items in
        // one APPENDS up to a thousand); a list appended to again gets room for as many again
        let cap = match it.len {
            0 => len,
            _ => len.checked_mul(2).ok_or(AppendError::Full)?.max(4),
        };
        let start = u32::try_from(self.pool.len()).map_err(|_| AppendError::Full)?;
        start.checked_add(cap).ok_or(AppendError::Full)?;
        let old = it.start as usize..(it.start + it.len) as usize;
        *it = Items { start, len, cap };
        self.pool.extend_from_within(old);
        self.pool.extend_from_slice(ids);
        self.pool.resize(start as usize + cap as usize, 0);
        Ok(())
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
