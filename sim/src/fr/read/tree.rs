//! The plain data a dump holds, decoded from either format into one arena.
//!
//! A pickle may refer to one object from many places (its memo); the arena keeps such an
//! object once and lets every place point to it, so a file that repeats a reference a million
//! times still decodes in memory proportional to its size. Readers of the tree walk only the
//! shapes they expect, so cycles and deep nesting never make them recurse without bound.
//!
//! A node is 16 bytes: strings are kept beside the nodes, the items of lists and dicts in two
//! pools, and the integers from 0 to 2^31 are not nodes at all but ids of their own (a dump's
//! sizes, ids and sequence numbers are most of its values).

use std::borrow::Cow;

/// Index of a node in the arena, or, from [`IMMEDIATE`] up, an integer from 0 to 2^31 itself.
pub type NodeId = u32;

/// The first id that is an integer rather than a node: `IMMEDIATE + v` is `Int(v)`.
const IMMEDIATE: NodeId = 1 << 31;

/// The largest document read: every node takes at least a byte of it, so node ids stay below
/// [`IMMEDIATE`].
pub const MAX_DOCUMENT: usize = IMMEDIATE as usize - 1;

/// The items of a list, tuple, set or dict: `len` of them from `start` of the tree's item (or
/// pair) pool, in room for `cap` there. Every record of a dump makes a few lists (its stack
/// frames, its tensors' sizes), kept in one pool rather than in an allocation each.
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond 64 bits (kept only to name it in an error).
    BigInt,
    Float(f64),
    /// The tree's string of this index (see [`Tree::text`]).
    Str(u32),
    Bytes,
    List(Items),
    Tuple(Items),
    /// Its items are key-value pairs (see [`Tree::pairs`]).
    Dict(Items),
    Set(Items),
}

const _: () = assert!(std::mem::size_of::<Node>() == 16);

impl Node {
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
    nodes: Vec<Node>,
    pub root: NodeId,
    strs: Vec<Cow<'a, str>>,
    /// The items of every list, tuple and set (see [`Items`]).
    pool: Vec<NodeId>,
    /// The items of every dict.
    pairs: Vec<[NodeId; 2]>,
}

/// What a decoded tree leaves for the next one to build in: its emptied vectors. A reader
/// decoding many dumps keeps one, warm in cache, instead of allocating (and faulting in) the
/// vectors afresh for every dump.
#[derive(Debug, Default)]
pub struct Arena {
    nodes: Vec<Node>,
    strs: Vec<Cow<'static, str>>,
    pool: Vec<NodeId>,
    pairs: Vec<[NodeId; 2]>,
}

/// The nodes every tree starts with.
pub const NONE: NodeId = 0;
pub const TRUE: NodeId = 1;
pub const FALSE: NodeId = 2;

impl<'a> Tree<'a> {
    /// An empty tree that builds in `arena`, holding only None, True and False.
    pub fn with_arena(arena: Arena) -> Tree<'a> {
        let Arena {
            mut nodes,
            strs,
            mut pool,
            mut pairs,
        } = arena;
        nodes.clear();
        nodes.extend([Node::None, Node::Bool(true), Node::Bool(false)]);
        pool.clear();
        pairs.clear();
        Tree {
            nodes,
            root: NONE,
            strs: emptied(strs),
            pool,
            pairs,
        }
    }

    /// The tree's arena, emptied, for the next tree to build in.
    pub fn recycle(self) -> Arena {
        Arena {
            nodes: self.nodes,
            strs: emptied(self.strs),
            pool: self.pool,
            pairs: self.pairs,
        }
    }

    /// How many nodes the tree holds (ids of nodes are below it).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// How many strings the tree holds (indices of [`Node::Str`] are below it).
    pub fn strings(&self) -> usize {
        self.strs.len()
    }

    /// Room for about `n` more nodes.
    pub fn reserve(&mut self, n: usize) {
        self.nodes.reserve(n);
    }

    /// The value at `id`.
    #[inline]
    pub fn get(&self, id: NodeId) -> Node {
        match id.checked_sub(IMMEDIATE) {
            Some(v) => Node::Int(i64::from(v)),
            None => self.nodes[id as usize],
        }
    }

    /// The text of string `s` (of a [`Node::Str`]).
    #[inline]
    pub fn text(&self, s: u32) -> &str {
        &self.strs[s as usize]
    }

    /// The string at `id`, if it is one.
    #[inline]
    pub fn str(&self, id: NodeId) -> Option<&str> {
        match self.get(id) {
            Node::Str(s) => Some(self.text(s)),
            _ => None,
        }
    }

    /// The items of a list, tuple or set.
    #[inline]
    pub fn items(&self, it: Items) -> &[NodeId] {
        &self.pool[it.start as usize..][..it.len as usize]
    }

    /// The items of a dict.
    #[inline]
    pub fn pairs(&self, it: Items) -> &[[NodeId; 2]] {
        &self.pairs[it.start as usize..][..it.len as usize]
    }

    /// The value of `key` in the dict whose items are `dict` (keys are strings).
    pub fn field(&self, dict: Items, key: &str) -> Option<NodeId> {
        self.pairs(dict)
            .iter()
            .find(|[k, _]| self.str(*k) == Some(key))
            .map(|[_, v]| *v)
    }

    #[inline]
    pub fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        (self.nodes.len() - 1) as NodeId
    }

    /// A new string node.
    #[inline]
    pub fn push_str(&mut self, s: Cow<'a, str>) -> NodeId {
        self.strs.push(s);
        self.push(Node::Str((self.strs.len() - 1) as u32))
    }

    /// The integer `v`: an id of its own from 0 to 2^31, else a new node.
    #[inline]
    pub fn int(&mut self, v: i64) -> NodeId {
        match u32::try_from(v) {
            Ok(v) if v < IMMEDIATE => IMMEDIATE + v,
            _ => self.push(Node::Int(v)),
        }
    }

    /// The integer `v` below 2^16, which is always an id of its own.
    #[inline]
    pub fn small_int(v: u16) -> NodeId {
        IMMEDIATE + NodeId::from(v)
    }

    /// New items holding `ids`; None when the pool would pass 2^32 items.
    pub fn new_items(&mut self, ids: &[NodeId]) -> Option<Items> {
        start(&mut self.pool, ids)
    }

    /// A new dict node holding `pairs`; None when the pool would pass 2^32 pairs.
    pub fn new_dict(&mut self, pairs: &[[NodeId; 2]]) -> Option<NodeId> {
        let it = start(&mut self.pairs, pairs)?;
        Some(self.push(Node::Dict(it)))
    }

    /// Adds `ids` to the items of node `id`, a list (`set` false) or a set.
    #[inline(always)]
    pub fn append(&mut self, id: NodeId, ids: &[NodeId], set: bool) -> Result<(), AppendError> {
        let it = match self.nodes.get_mut(id as usize) {
            Some(Node::List(it)) if !set => it,
            Some(Node::Set(it)) if set => it,
            _ => return Err(AppendError::NotA(self.get(id).kind())),
        };
        grow(&mut self.pool, it, ids)
    }

    /// Adds `pairs` to the dict at `id`.
    pub fn set_items(&mut self, id: NodeId, pairs: &[[NodeId; 2]]) -> Result<(), AppendError> {
        let it = match self.nodes.get_mut(id as usize) {
            Some(Node::Dict(it)) => it,
            _ => return Err(AppendError::NotA(self.get(id).kind())),
        };
        grow(&mut self.pairs, it, pairs)
    }
}

/// `strs`, emptied, with its allocation handed to strings of another lifetime (an empty vector
/// collected in place keeps its buffer).
fn emptied<'b>(mut strs: Vec<Cow<'_, str>>) -> Vec<Cow<'b, str>> {
    strs.clear();
    strs.into_iter().map(|_| Cow::Borrowed("")).collect()
}

/// New items of `pool` holding `xs`; None when the pool would pass 2^32 items.
#[inline]
fn start<T: Copy>(pool: &mut Vec<T>, xs: &[T]) -> Option<Items> {
    let start = u32::try_from(pool.len()).ok()?;
    let len = u32::try_from(xs.len()).ok()?;
    start.checked_add(len)?;
    // most are a value or two (a tensor's sizes, its dtype), copied faster than memcpy's call
    if let [x] = xs {
        pool.push(*x);
    } else {
        pool.extend_from_slice(xs);
    }
    Some(Items {
        start,
        len,
        cap: len,
    })
}

/// Adds `xs` to the items `it` of `pool`. Items past their room move to the pool's end with
/// room for as many again, so that appending to lists in turn costs no more than building them
/// whole; the first items added take no more room than they need (a pickler adds a list's items
/// in one APPENDS of up to a thousand).
#[inline]
fn grow<T: Copy + Default>(pool: &mut Vec<T>, it: &mut Items, xs: &[T]) -> Result<(), AppendError> {
    if it.len == 0 {
        // most lists are filled once: their items go at the pool's end
        *it = start(pool, xs).ok_or(AppendError::Full)?;
        return Ok(());
    }
    let n = u32::try_from(xs.len()).map_err(|_| AppendError::Full)?;
    let len = it.len.checked_add(n).ok_or(AppendError::Full)?;
    if len <= it.cap {
        let at = (it.start + it.len) as usize;
        pool[at..at + xs.len()].copy_from_slice(xs);
        it.len = len;
        return Ok(());
    }
    let cap = len.checked_mul(2).ok_or(AppendError::Full)?.max(4);
    let at = pool.len();
    let start = u32::try_from(at).map_err(|_| AppendError::Full)?;
    start.checked_add(cap).ok_or(AppendError::Full)?;
    let old = it.start as usize..(it.start + it.len) as usize;
    *it = Items { start, len, cap };
    pool.extend_from_within(old);
    pool.extend_from_slice(xs);
    pool.resize(at + cap as usize, T::default());
    Ok(())
}
